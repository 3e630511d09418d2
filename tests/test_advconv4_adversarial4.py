"""``ltrboost convert`` and the CLI's error messages, as a fourth adversarial pass found
them: convert's messages name its flags, interleaved queries are written without a
copy of X, SIGTERM cleans up like Ctrl-C, objectives' parameter errors name the flag."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from ltrboost.cli import main

pytest.importorskip("pyarrow")

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert err, "no message"
    return err[-1]


def _queries(path: Path, n_queries: int = 8, docs: int = 6, features: int = 4) -> None:
    rng = np.random.default_rng(0)
    lines = []
    for q in range(n_queries):
        for _ in range(docs):
            feats = " ".join(f"{j}:{rng.random():.4f}" for j in range(1, features + 1))
            lines.append(f"{rng.integers(0, 3)} qid:{q} {feats}\n")
    path.write_text("".join(lines))


# ------------------------------------------------------------- convert: the flags' names
def test_convert_names_n_features_flag_for_an_index_above_it(tmp_path, capsys):
    """'feature index 2 is larger than n_features=1': convert's user gave --n-features."""
    (tmp_path / "a.txt").write_text("1 qid:1 1:0.5\n0 qid:1 2:0.3\n")
    rc = main(
        ["convert", str(tmp_path / "a.txt"), str(tmp_path / "o.parquet"), "--n-features", "1"]
    )
    assert rc == 2
    msg = _error(capsys)
    assert msg.startswith(f"ltrboost: error: {tmp_path / 'a.txt'}:2: ")
    assert "--n-features=1" in msg
    assert " n_features=" not in msg
    assert not (tmp_path / "o.parquet").exists()


def test_convert_wide_index_suggests_the_flag_not_python(tmp_path, capsys):
    """The typo guard told a convert user to call load_svmlight(path, n_features=N)
    (Python), although convert takes --n-features N."""
    (tmp_path / "a.txt").write_text("1 qid:1 1:0.5\n1 qid:1 100000000:1\n")
    rc = main(["convert", str(tmp_path / "a.txt"), str(tmp_path / "o.parquet")])
    assert rc == 2
    msg = _error(capsys)
    assert msg.startswith(f"ltrboost: error: {tmp_path / 'a.txt'}:2: ")
    assert "--n-features 100000000" in msg
    assert "load_svmlight" not in msg
    assert "(Python)" not in msg
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_convert_bad_line_in_a_later_block_names_file_and_line(tmp_path, capsys, monkeypatch):
    """The line numbers of errors survive blocks and interleaved queries."""
    from ltrboost.io import letor

    monkeypatch.setattr(letor, "_BLOCK_BYTES", 64)
    lines = [f"{k % 3} qid:{k % 4} 1:{k}\n" for k in range(40)] + ["1 qid:2 1:x\n"]
    (tmp_path / "a.txt").write_text("".join(lines))
    rc = main(["convert", str(tmp_path / "a.txt"), str(tmp_path / "o.parquet"), "-q"])
    assert rc == 2
    assert _error(capsys).startswith(f"ltrboost: error: {tmp_path / 'a.txt'}:41: feature value 'x'")


# -------------------------------------------------- convert: interleaved queries, no copy
def test_convert_interleaved_queries_does_not_copy_x(tmp_path, monkeypatch):
    """Non-contiguous qids made X[order], a second X in memory; files are now written
    from X through the permutation, a file's rows at a time (same output)."""
    import pandas as pd

    from ltrboost.io import letor
    from ltrboost.io import parquet as lparquet

    n, m = 4000, 40
    rng = np.random.default_rng(1)
    X = rng.random((n, m))
    y = rng.integers(0, 3, n).astype(np.float64)
    qid = (np.arange(n) % 50).astype(np.int64)  # every query interleaved with the others
    data = letor.LetorData(X, y, qid, None, None)
    monkeypatch.setattr(letor, "load_svmlight", lambda *a, **k: data)
    lparquet.letor_to_parquet("in.txt", tmp_path / "warm.parquet")  # imports: not counted
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        files = lparquet.letor_to_parquet("in.txt", tmp_path / "o.parquet", rows_per_file=200)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes / 4, f"peak {peak} bytes for X of {X.nbytes}"
    df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    order = np.argsort(qid, kind="stable")
    np.testing.assert_array_equal(df["qid"].to_numpy(), qid[order])
    np.testing.assert_array_equal(df["label"].to_numpy(), y[order])
    np.testing.assert_array_equal(df[[f"f{j + 1}" for j in range(m)]].to_numpy(), X[order])
    assert len(files) == 17  # 50 queries of 80 rows, 3 to a file (>= 200 rows)


# ------------------------------------------------------- convert: killed, cleaned up
_KILLED = """
import os, sys, time
sys.path.insert(0, {src!r})
from ltrboost.io import letor
real = letor.load_svmlight
def slow(*a, **k):
    data = real(*a, **k)
    open({ready!r}, "w").close()
    time.sleep(60)
    return data
letor.load_svmlight = slow
from ltrboost.cli import main
sys.exit(main(["convert", {data!r}, {out!r}, "-q"]))
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_convert_killed_leaves_no_temporary_folder(tmp_path, sig):
    """SIGTERM (kill, a job scheduler's timeout) ended the process without Python's
    cleanup: the hidden '.OUT.xxxx.tmp' folder stayed beside the output."""
    work = tmp_path / "w"
    work.mkdir()
    _queries(work / "a.txt")
    ready = tmp_path / "ready"
    code = _KILLED.format(
        src=SRC, ready=str(ready), data=str(work / "a.txt"), out=str(work / "o.parquet")
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert any(p.name.endswith(".tmp") for p in work.iterdir())  # it was there
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, err
    assert sorted(p.name for p in work.iterdir()) == ["a.txt"], err
    assert "ltrboost: interrupted" in err or "ltrboost: terminated" in err


def test_sigterm_handler_is_restored_after_the_cli(tmp_path, capsys):
    """The CLI's SIGTERM handling lasts for the call only (ltrboost_cli from Python)."""
    before = signal.getsignal(signal.SIGTERM)
    _queries(tmp_path / "a.txt")
    assert main(["convert", str(tmp_path / "a.txt"), str(tmp_path / "o.parquet"), "-q"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before


def test_sigterm_handler_installed_by_the_user_is_kept(tmp_path):
    """A program that handles SIGTERM itself keeps its handler during the CLI call."""
    code = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {SRC!r})
        seen = []
        signal.signal(signal.SIGTERM, lambda s, f: seen.append(s))
        from ltrboost.io import letor
        real = letor.load_svmlight
        def load(*a, **k):
            os.kill(os.getpid(), signal.SIGTERM)
            return real(*a, **k)
        letor.load_svmlight = load
        from ltrboost.cli import main
        rc = main(["convert", sys.argv[1], sys.argv[2], "-q"])
        print(rc, seen)
        """
    )
    _queries(tmp_path / "a.txt")
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "a.txt"), str(tmp_path / "o.parquet")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.split() == ["0", f"[{int(signal.SIGTERM)}]"], done.stderr
    assert (tmp_path / "o.parquet").is_dir()


# ------------------------------------------- objectives' parameter errors name the flag
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--objective", "yetirank", "--decay", "2"], "--decay=2.0 should be"),
        (["--objective", "yetirank", "--permutations", "0"], "--permutations=0 should be"),
        (["--sigma", "0"], "--sigma=0.0 should be"),
        (["--lambda-metric", "foo"], "--lambda-metric='foo' is not one of"),
        (["--gain", "foo"], "--gain='foo' is not one of"),
        (["--pair-method", "foo"], "--pair-method='foo' is not one of"),
        (["--pairs-per-sample", "0"], "--pairs-per-sample=0 should be"),
        (["--objective", "gbrank", "--tau", "-1"], "--tau=-1"),
        (["--objective", "qbrank", "--preference-weight", "2"], "--preference-weight=2.0"),
        (["--unbiased", "true", "--max-positions", "0"], "--max-positions=0 should be"),
        (["--unbiased", "true", "--position-bias-norm", "-1"], "--position-bias-norm=-1.0"),
        (["--objective", "logistic_rank", "--label-scale", "x"], "--label-scale='x' must be"),
    ],
)
@pytest.mark.parametrize("command", ["train", "cv"])
def test_objective_parameter_errors_name_the_flag(tmp_path, capsys, command, flags, expected):
    _queries(tmp_path / "a.txt")
    args = [command, str(tmp_path / "a.txt"), "--n-estimators", "1", *flags]
    if command == "train":
        args += ["--output", str(tmp_path / "m.json"), "-q"]
    assert main(args) == 2
    msg = _error(capsys)
    assert msg.startswith("ltrboost: error: " + expected), msg
    assert not (tmp_path / "m.json").exists()


def test_objective_errors_from_python_keep_the_python_name():
    from ltrboost import BoosterParams
    from ltrboost.booster import make_objective

    with pytest.raises(ValueError, match=r"^decay=2\.0 should be"):
        make_objective(BoosterParams(objective="yetirank", decay=2.0))


def test_objective_error_naming_another_parameter_later_in_the_message(tmp_path, capsys):
    """'position_bias_norm=0.5 is used with unbiased=True only': both named as flags."""
    _queries(tmp_path / "a.txt")
    rc = main(
        [
            "train",
            str(tmp_path / "a.txt"),
            "--output",
            str(tmp_path / "m.json"),
            "-q",
            "--position-bias-norm",
            "0.5",
        ]
    )
    assert rc == 2
    msg = _error(capsys)
    assert "--position-bias-norm=0.5" in msg
    assert "--unbiased" in msg
    assert "position_bias_norm" not in msg


# ------------------------------------------------------------------- convert: probes
def test_convert_crlf_file_reads_back_as_lf(tmp_path):
    import pandas as pd

    text = "2 qid:3 1:0.5 2:1\n0 qid:3 2:0.25\n1 qid:1 1:1 # c\n"
    (tmp_path / "lf.txt").write_text(text)
    (tmp_path / "crlf.txt").write_bytes(text.replace("\n", "\r\n").encode())
    for name in ("lf", "crlf"):
        assert (
            main(["convert", str(tmp_path / f"{name}.txt"), str(tmp_path / f"{name}.pq"), "-q"])
            == 0
        )
    a = pd.read_parquet(tmp_path / "lf.pq")
    b = pd.read_parquet(tmp_path / "crlf.pq")
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize(
    "text", ["", "# only a comment\n\n#another\r\n"], ids=["empty", "comments"]
)
def test_convert_file_without_data_lines(tmp_path, capsys, text):
    (tmp_path / "a.txt").write_text(text)
    assert main(["convert", str(tmp_path / "a.txt"), str(tmp_path / "o.parquet")]) == 2
    assert _error(capsys).startswith(f"ltrboost: error: {tmp_path / 'a.txt'}:1: no data lines")
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_convert_output_already_a_file_is_kept(tmp_path, capsys):
    _queries(tmp_path / "a.txt")
    (tmp_path / "o.parquet").write_text("keep me")
    assert main(["convert", str(tmp_path / "a.txt"), str(tmp_path / "o.parquet")]) == 2
    assert "o.parquet exists and is not an empty folder" in _error(capsys)
    assert (tmp_path / "o.parquet").read_text() == "keep me"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_convert_into_unwritable_folder(tmp_path, capsys):  # pragma: no cover - as root
    _queries(tmp_path / "a.txt")
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    try:
        assert main(["convert", str(tmp_path / "a.txt"), str(ro / "o.parquet")]) == 2
        assert "o.parquet" in _error(capsys)
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize("command", ["eval", "predict"])
def test_eval_and_predict_on_convert_output_say_what_it_is(tmp_path, capsys, command):
    """`eval`/`predict` read LETOR text; given convert's Parquet folder (or one of its
    files) they said 'Is a directory' or 'not UTF-8 text (byte 0xf0); binary file?'."""
    _queries(tmp_path / "a.txt")
    model = tmp_path / "m.json"
    assert (
        main(
            [
                "train",
                str(tmp_path / "a.txt"),
                "--output",
                str(model),
                "-q",
                "--n-estimators",
                "1",
                "--min-samples-leaf",
                "1",
            ]
        )
        == 0
    )
    assert main(["convert", str(tmp_path / "a.txt"), str(tmp_path / "o.parquet"), "-q"]) == 0
    capsys.readouterr()
    for data in (tmp_path / "o.parquet", tmp_path / "o.parquet" / "part.00000.parquet"):
        args = [command, str(model), str(data)]
        if command == "predict":
            args += ["--output", str(tmp_path / "p.txt")]
        assert main(args) == 2
        msg = _error(capsys)
        assert msg.startswith(f"ltrboost: error: {data}"), msg
        assert "Parquet" in msg, msg
        assert "LETOR" in msg, msg
    assert not (tmp_path / "p.txt").exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_compile_helper_dies_by_sigterm_as_before():
    """The background-compile helper is a fork of the command: it must not inherit the
    command's SIGTERM handler (terminate() would raise in it instead of ending it)."""
    code = textwrap.dedent(
        f"""
        import os, signal, sys, time
        sys.path.insert(0, {SRC!r})
        from ltrboost import cli, _warmup
        with cli._signals_as_interrupt():
            pid = os.fork()
            if pid == 0:
                try:
                    _warmup._detach_from_command()
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(30)
                finally:
                    os._exit(7)
            _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == str(-int(signal.SIGTERM)), done.stderr


def test_load_svmlight_on_a_parquet_folder_stays_is_a_directory_error(tmp_path):
    from ltrboost.io.letor import load_svmlight

    _queries(tmp_path / "a.txt")
    assert main(["convert", str(tmp_path / "a.txt"), str(tmp_path / "o.parquet"), "-q"]) == 0
    with pytest.raises(IsADirectoryError, match="Parquet"):
        load_svmlight(tmp_path / "o.parquet")
    (tmp_path / "plain").mkdir()
    with pytest.raises(IsADirectoryError):
        load_svmlight(tmp_path / "plain")

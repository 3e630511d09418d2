"""The CLI as a user drives it, a second adversarial pass (stop 33): environment
variables, argument errors, odd output names.  Each problem found is one test here;
every error is one line ``ltrboost: error: ...`` naming the thing, status 2."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest

from test_cli import assert_one_line_error as one_line_error
from test_cli import run


@pytest.fixture
def letor(tmp_path: Path) -> Path:
    """A small LETOR file: 4 queries x 5 documents, 3 features."""
    lines = [
        f"{(q + d) % 3} qid:{q + 1} 1:{d} 2:{(q * d) % 4} 3:{0.5 * d}"
        for q in range(4)
        for d in range(5)
    ]
    path = tmp_path / "small.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("variable", ["LTRBOOST_MAX_HISTOGRAM_BYTES", "LTRBOOST_MAX_QUERY_PAIRS"])
@pytest.mark.parametrize("value", ["abc", "inf", "nan", "-1", "0", "1e400"])
def test_a_bad_limit_variable_is_one_line_naming_it(
    variable, value, letor, tmp_path, capsys, monkeypatch
):
    """README names these variables; a value that is no count (text, inf, NaN, zero,
    negative) was a traceback (OverflowError for inf) or a message that did not name
    the variable ('could not convert string to float'); a negative limit refused every
    training with a 'limit of -0.0 GiB'."""
    monkeypatch.setenv(variable, value)
    flags = ["--objective", "gbrank"] if "PAIRS" in variable else []
    rc, _, err = run(
        ["train", str(letor), "-q", "--n-estimators", "1", "-o", str(tmp_path / "m.json"), *flags],
        capsys,
    )
    one_line_error(rc, err, f"${variable}", repr(value))
    assert not (tmp_path / "m.json").exists()


def test_the_ole_pair_limit_variable_is_checked_too(monkeypatch):
    from ltrboost.objectives.pair_selection import max_ole_pairs

    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", "inf")
    with pytest.raises(ValueError, match=r"\$LTRBOOST_MAX_OLE_PAIRS='inf'"):
        max_ole_pairs()
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", "5e7")
    assert max_ole_pairs() == 50_000_000


def _argv_error(argv: list[str], capsys) -> tuple[int, str]:
    """Exit status and stderr of ``main(argv)`` when argparse refuses ``argv``."""
    from ltrboost.cli import main

    status = main(argv)
    return status, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["train", "x.txt", "--n-estimators", "abc"], ["--n-estimators", "'abc'", "train --help"]),
        (["predict", "m.json"], ["required: data", "predict --help"]),
        (["eval", "m.json", "d.txt", "--gain", "cubic"], ["--gain", "'cubic'"]),
        (["clicks", "mine", "log.txt"], ["--data", "clicks mine --help"]),
        (["bogus"], ["'bogus'", "'ltrboost --help'"]),
        ([], ["required"]),
    ],
)
def test_argument_errors_are_one_line(argv, needles, capsys):
    """A flag argparse refuses printed the usage before the error: 37 lines for
    ``train`` (its usage lists every training flag), the one that matters last."""
    rc, err = _argv_error(argv, capsys)
    one_line_error(rc, err, *needles)


def test_an_output_name_near_the_length_limit_is_written(letor, tmp_path, capsys):
    """A 250-byte file name is valid (the limit is 255), but the temporary file beside
    it, '.NAME.XXXXXXXX.tmp', was not: 'File name too long' for a name that fits."""
    name = "é" * 100 + "s" * 50  # 250 bytes in UTF-8
    model = tmp_path / name
    rc, _, err = run(["train", str(letor), "-q", "--n-estimators", "2", "-o", str(model)], capsys)
    assert rc == 0, err
    scores = tmp_path / ("p" * 250)
    rc, _, err = run(["predict", str(model), str(letor), "-o", str(scores)], capsys)
    assert rc == 0, err
    assert len(scores.read_text().splitlines()) == 20
    folder = tmp_path / ("f" * 250)
    rc, _, err = run(["convert", str(letor), str(folder), "-q"], capsys)
    assert rc == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [letor.name, model.name, scores.name, folder.name]
    )  # no temporary file or folder left beside them


@pytest.mark.parametrize("other", ["folder", "file"])
def test_convert_names_its_output_when_another_run_wrote_it_meanwhile(
    other, letor, tmp_path, capsys, monkeypatch
):
    """Two conversions to one new folder: the later one to finish found OUT made by the
    other; the error named the hidden temporary folder ('.OUT.x1y2.tmp: Not a
    directory').  Now it names OUT, whose content is left as the other run wrote it."""
    import ltrboost.io.letor as letor_module

    out = tmp_path / "out.parquet"
    read = letor_module.load_svmlight

    def racing(*args, **kwargs):  # the other run finishes while this one reads
        if other == "folder":
            out.mkdir()
            (out / "part.00000.parquet").write_text("the other run's")
        else:
            out.write_text("the other run's")
        return read(*args, **kwargs)

    monkeypatch.setattr(letor_module, "load_svmlight", racing)
    rc, _, err = run(["convert", str(letor), str(out), "-q"], capsys)
    line = one_line_error(rc, err, f"{out}: ", "another run")
    assert ".tmp" not in line
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    kept = out / "part.00000.parquet" if other == "folder" else out
    assert kept.read_text() == "the other run's"


@pytest.fixture
def model(letor, tmp_path, capsys) -> Path:
    path = tmp_path / "m.json"
    rc, _, err = run(["train", str(letor), "-q", "--n-estimators", "2", "-o", str(path)], capsys)
    assert rc == 0, err
    return path


def test_a_closed_stdout_is_one_line_naming_it(model, letor, tmp_path, capsys, monkeypatch):
    """``ltrboost eval M D >&-`` (Python's sys.stdout is then None) was an
    AttributeError traceback; a command that prints nothing there still runs."""
    import sys

    monkeypatch.setattr(sys, "stdout", None)
    for argv in (["eval", model, letor], ["predict", model, letor], ["inspect", model]):
        rc, _, err = run(argv, capsys)
        one_line_error(rc, err, "stdout: closed")
    rc, _, err = run(["predict", model, letor, "-o", tmp_path / "s.txt"], capsys)
    assert rc == 0, err
    assert len((tmp_path / "s.txt").read_text().splitlines()) == 20


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_a_full_stdout_names_stdout(model, letor, capsys, monkeypatch):
    """``ltrboost eval M D > /dev/full`` said '[Errno 28] No space left on device',
    naming no output (README: a write error names the output)."""
    import sys

    for argv in (["eval", model, letor], ["predict", model, letor], ["inspect", model]):
        full = open("/dev/full", "w")  # closed below: its close fails too
        monkeypatch.setattr(sys, "stdout", full)
        rc, _, err = run(argv, capsys)
        one_line_error(rc, err, "stdout: No space left on device")
        monkeypatch.undo()
        with contextlib.suppress(OSError):
            full.close()


@pytest.mark.parametrize("flag", ["--docs-per-query", "--n-features"])
def test_generate_names_the_flag_of_a_size_below_one(flag, tmp_path, capsys):
    """'docs_per_query=0 should not be smaller than 1' named the Python argument of
    make_ranking, not the flag (--n-queries was already named)."""
    rc, _, err = run(["generate", str(tmp_path / "g"), flag, "0"], capsys)
    one_line_error(rc, err, f"{flag}=0 must be >= 1")
    assert not (tmp_path / "g").exists()


def test_the_eval_table_has_no_trailing_blanks(model, letor, capsys):
    """Every line of eval's table ended in blanks (the last column padded to its
    width), which diffs and `cut`/`awk` pipelines of the table see."""
    rc, out, err = run(["eval", model, letor, "--metric", "ndcg@10"], capsys)
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].split() == ["data", "ndcg@10", "queries"]
    assert all(line == line.rstrip() for line in lines), lines


def test_generate_writes_its_three_files_all_or_none(tmp_path, capsys, monkeypatch):
    """The three files were written one after the other: Ctrl-C (or a full disk) while
    vali.txt was written left the new train.txt beside the old vali.txt and test.txt,
    a dataset no run generated (README: Ctrl-C writes nothing)."""
    import ltrboost.io._atomic as atomic

    folder = tmp_path / "g"
    rc, _, err = run(["generate", folder, "--n-queries", "3", "--docs-per-query", "4"], capsys)
    assert rc == 0, err
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    stage = atomic._stage

    def interrupted(path, blobs, unchanged_since, *rest):
        if str(path).endswith("vali.txt"):
            raise KeyboardInterrupt
        return stage(path, blobs, unchanged_since, *rest)

    monkeypatch.setattr(atomic, "_stage", interrupted)
    argv = ["generate", folder, "--n-queries", "3", "--docs-per-query", "4", "--random-state", "1"]
    rc, _, err = run(argv, capsys)
    assert rc == 130, err
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # no tmp left


def test_warmup_refuses_an_unknown_profile_beside_all(capsys):
    """`ltrboost warmup all trian:lambdamart` compiled every profile and skipped the
    typo silently (it is refused alone)."""
    rc, _, err = run(["warmup", "all", "trian:lambdamart"], capsys)
    one_line_error(rc, err, "unknown profile 'trian:lambdamart'")


def test_ctrl_c_inside_an_exec_still_exits_130(tmp_path):
    """Ctrl-C that lands while a library runs ``exec("...")`` (SciPy's array API
    shim does at import, which a command's first lines reach) made CPython note an
    unhandled KeyboardInterrupt; the CLI handled it (the 'interrupted' line) but the
    process then died of SIGINT (status -2 to subprocess, not the documented 130)."""
    import os
    import subprocess
    import sys

    script = tmp_path / "run_ltrboost.py"  # run with -m, as `python -m ltrboost`
    script.write_text(
        "import sys\n"
        "from ltrboost import cli\n"
        "from ltrboost.cli import export\n"
        "def interrupted(args):\n"
        "    exec('raise KeyboardInterrupt')\n"
        "export.cmd_inspect = interrupted\n"
        "sys.exit(cli.main(['inspect', 'model.json']))\n"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([src, str(tmp_path)]),
        "LTRBOOST_BACKGROUND_COMPILE": "0",
    }
    proc = subprocess.run(
        [sys.executable, "-m", script.stem], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.startswith("ltrboost: interrupted"), proc.stderr


@pytest.mark.parametrize(
    ("command", "flag", "text"),
    [
        ("eval", "--iteration", "default: best iteration"),
        ("export", "--iteration", "default: best iteration"),
        ("predict", "--n-threads", "all cores"),
    ],
)
def test_help_says_what_the_flag_does(command, flag, text, capsys):
    """`eval --help` and `export --help` listed --iteration with no word of its
    default (the best iteration, as predict's help says), predict's --n-threads none."""
    from ltrboost.cli import main

    assert main([command, "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert re.search(re.escape(flag) + r" [A-Z_]+ [^-]*" + re.escape(text), help_text)


def test_warmup_says_when_numba_cache_dir_was_passed_over(capsys, monkeypatch):
    """README's container recipe points NUMBA_CACHE_DIR at a persisted folder and runs
    `ltrboost warmup`; an unwritable one was passed over for another folder without a
    word (the compile notice, which names it, shows only when something compiles)."""
    from ltrboost import _numba

    monkeypatch.setattr(_numba, "_UNUSABLE_NUMBA_CACHE_DIR", "/persisted/cache")
    rc, _, err = run(["warmup", "predict"], capsys)
    assert rc == 0, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("kernel cache: "), last
    assert "NUMBA_CACHE_DIR=/persisted/cache is not writable" in last


def test_cv_help_lists_no_flag_cv_refuses(letor, capsys):
    """`cv --help` listed --early-stopping-rounds and --unbiased (and the --unbiased
    only flags), which cv always refuses; they stay parsed, for cv's own message."""
    from ltrboost.cli import main

    assert main(["cv", "--help"]) == 0
    help_text = capsys.readouterr().out
    for flag in ("--early-stopping-rounds", "--unbiased", "--max-positions"):
        assert flag not in help_text
    assert "--n-estimators" in help_text
    rc, _, err = run(["cv", letor, "--early-stopping-rounds", "3"], capsys)
    one_line_error(rc, err, "--early-stopping-rounds is not available in cv")

"""``ltrboost predict`` streams: it read the whole data file into one dense float64
matrix before scoring it, so a file larger than memory (50M candidate rows) failed or
swapped, although a score depends on its own row only.  It now reads, scores and writes
a bounded block of rows at a time; its output must stay byte for byte that of the
whole-file read, whatever the block size, in every output mode, and its errors (a bad
line late in the file) must still name FILE:LINE and leave no output half-written."""

from __future__ import annotations

import errno
import os
import tracemalloc

import numpy as np
import pytest

import ltrboost.cli.predict as cli
import ltrboost.io.letor as letor
from ltrboost import Ranker, load_model
from ltrboost.cli import main
from ltrboost.dataset import LTRInputError
from ltrboost.datasets import make_ranking
from ltrboost.io.letor import load_svmlight

FAST = dict(n_estimators=4, max_leaf_nodes=6, min_samples_leaf=3, random_state=0)

# (letor._BLOCK_BYTES: text read at a time, predict._PREDICT_BLOCK_BYTES: dense rows scored
# at a time); None keeps the default.  8 bytes is one row a block at any width.
BLOCKS = [(None, None), (64, 8), (257, 8 * 4 * 7), (1000, 1 << 30), (1 << 30, 100)]


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc, err, *parts):
    assert rc == 2, err
    assert err.startswith("ltrboost: error: "), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err, err
    for part in parts:
        assert part in err, err


def _set_blocks(monkeypatch, text_bytes, dense_bytes):
    if text_bytes is not None:
        monkeypatch.setattr(letor, "_BLOCK_BYTES", text_bytes)
    if dense_bytes is not None:
        monkeypatch.setattr(cli, "_PREDICT_BLOCK_BYTES", dense_bytes)


def _lines(rng, n, *, qid=True, odd=True):
    """``n`` data lines of 4 features, some of them sparse, shuffled, with nan, NA
    tokens, comments, blank lines and CRLF among them (``odd``)."""
    out = []
    for i in range(n):
        x = rng.normal(size=4)
        feats = [f"{j + 1}:{float(x[j])!r}" for j in range(4) if not (odd and rng.random() < 0.2)]
        if odd and i % 7 == 3:
            feats.reverse()
        if odd and i % 11 == 5:
            feats.append("4:nan" if "4:" not in " ".join(feats) else "")
        if odd and i % 13 == 6 and feats:
            feats[0] = feats[0].split(":")[0] + ":NULL"
        head = f"{int(x[0] > 0)} qid:{i // 9}" if qid else f"{int(x[0] > 0)}"
        line = " ".join([head, *[f for f in feats if f]])
        if odd and i % 5 == 0:
            line += f" # docid = d{i}"
        if odd and i % 17 == 0:
            out.append("# a comment line\n")
        if odd and i % 19 == 0:
            out.append("\n")
        out.append(line + ("\r\n" if odd and i % 3 == 0 else "\n"))
    return "".join(out)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("predstream")
    X, y, qid = make_ranking(n_queries=30, docs_per_query=10, n_features=4, random_state=0)[:3]
    rng = np.random.default_rng(0)
    models = {}
    models["lambdamart"] = Ranker(**FAST).fit(X, y, qid=qid)
    grades = rng.integers(0, 5, len(qid)).astype(np.float64)
    models["mcrank"] = Ranker(objective="mcrank", **FAST).fit(X, grades, qid=qid)
    Xn = X.copy()
    Xn[rng.random(X.shape) < 0.3] = np.nan
    models["nan"] = Ranker(**FAST).fit(Xn, y, qid=qid)
    paths = {}
    for name, r in models.items():
        paths[name] = d / f"{name}.json"
        r.booster_.missing = "nan" if name == "nan" else "zero"
        r.booster_.save_model(str(paths[name]))
    # a model claiming more features than letor.WIDE, its trees on the first four
    wide = load_model(str(paths["lambdamart"]))
    wide.n_features = letor.WIDE + 10
    paths["wide"] = d / "wide.json"
    wide.save_model(str(paths["wide"]))
    data = d / "data.txt"
    data.write_text(_lines(np.random.default_rng(1), 700))
    wide_data = d / "wide.txt"  # indices beyond the trees' features, some beyond WIDE
    text = _lines(np.random.default_rng(2), 300, odd=False).splitlines()
    text = [t + (f" {letor.WIDE + 5}:2.5" if k % 4 == 0 else " 9:1") for k, t in enumerate(text)]
    wide_data.write_text("\n".join(text) + "\n")
    return d, paths, data, wide_data


def _whole_file(model, data, *, iteration=None):
    """The scores' text as predict wrote it before: the whole file read at once (the
    reader eval still uses), scored, formatted."""
    booster = load_model(str(model))
    missing = booster.missing or "zero"
    read, fitted = cli._read_for_model(str(data), booster, missing, ["NULL"], model=str(model))
    scores = fitted.predict(read.X, iteration=iteration)
    return "".join(f"{s!r}\n" for s in scores.tolist())


@pytest.mark.parametrize(("text_bytes", "dense_bytes"), BLOCKS)
@pytest.mark.parametrize("name", ["lambdamart", "mcrank", "nan", "wide"])
def test_output_is_byte_identical_to_the_whole_file_read(
    files, name, text_bytes, dense_bytes, monkeypatch, capsys, tmp_path
):
    _, paths, data, wide_data = files
    model = paths[name]
    source = wide_data if name == "wide" else data
    expected = _whole_file(model, source)
    _set_blocks(monkeypatch, text_bytes, dense_bytes)
    base = ["predict", model, source, "--missing-token", "NULL"]
    rc, out, err = run(base, capsys)  # default -o -
    assert rc == 0, err
    assert out == expected
    rc, out, err = run([*base, "-o", "-", "-q"], capsys)
    assert (rc, out, err) == (0, expected, "")
    target = tmp_path / "scores.txt"
    target.write_text("the previous scores\n")
    rc, out, err = run([*base, "-o", target, "--n-threads", "1"], capsys)
    assert (rc, out) == (0, "")
    assert target.read_bytes() == expected.encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.txt"]


@pytest.mark.parametrize(("text_bytes", "dense_bytes"), BLOCKS[1:3])
def test_iteration_and_a_descriptor_output_are_unchanged(
    files, text_bytes, dense_bytes, monkeypatch, capfd
):
    _, paths, data, _ = files
    expected = _whole_file(paths["lambdamart"], data, iteration=2)
    _set_blocks(monkeypatch, text_bytes, dense_bytes)
    argv = ["predict", paths["lambdamart"], data, "--missing-token", "NULL", "--iteration", "2"]
    assert main([str(a) for a in [*argv, "-o", "/dev/stdout"]]) == 0
    out, _ = capfd.readouterr()
    assert out == expected


def _late_bad_line(tmp_path, n=600, bad_at=590, bad="1 qid:70 1:0.5 2:abc 3:1"):
    lines = _lines(np.random.default_rng(3), n, odd=False).splitlines(keepends=True)
    lines[bad_at - 1] = bad + "\n"
    path = tmp_path / "late.txt"
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize(("text_bytes", "dense_bytes"), BLOCKS)
@pytest.mark.parametrize(
    "bad",
    [
        "1 qid:70 1:0.5 2:abc 3:1",  # _parse_letor's error
        "1 qid:70 1:0.5 9:1",  # beyond the model's 4 features (reworded to name it)
        "1 1:0.5",  # qid: on some lines only
        "1 qid:70 1:1e999",  # a value that overflows (float()'s slow path)
    ],
)
def test_a_bad_line_late_in_the_file_names_it_and_writes_nothing(
    files, bad, text_bytes, dense_bytes, monkeypatch, capsys, tmp_path
):
    _, paths, _, _ = files
    model = paths["lambdamart"]
    data = _late_bad_line(tmp_path, bad=bad)
    booster = load_model(str(model))
    with pytest.raises(LTRInputError) as whole:
        cli._read_for_model(str(data), booster, "zero", None, model=str(model))
    assert f"{data}:590:" in str(whole.value)
    _set_blocks(monkeypatch, text_bytes, dense_bytes)
    target = tmp_path / "out" / "scores.txt"
    target.parent.mkdir()
    target.write_text("the previous scores\n")
    rc, out, err = run(["predict", model, data, "-o", target], capsys)
    one_line_error(rc, err)
    assert err == f"ltrboost: error: {whole.value}\n"
    assert out == ""
    assert target.read_text() == "the previous scores\n"
    assert os.listdir(target.parent) == ["scores.txt"]  # no temporary file left
    fresh = tmp_path / "out" / "new.txt"
    rc, out, err = run(["predict", model, data, "-o", fresh], capsys)
    assert err == f"ltrboost: error: {whole.value}\n"
    assert not fresh.exists()
    assert os.listdir(target.parent) == ["scores.txt"]


def test_stdout_gets_the_scores_before_a_late_bad_line(files, monkeypatch, capsys, tmp_path):
    """``-o -`` is a stream: the scores of the blocks before the bad line are already on
    stdout when it is found (the documented behaviour); the status is 2 and the error
    the one line naming FILE:LINE."""
    _, paths, _, _ = files
    model = paths["lambdamart"]
    data = _late_bad_line(tmp_path)
    good = tmp_path / "good.txt"
    good.write_text("".join(data.read_text().splitlines(keepends=True)[:589]))
    expected = _whole_file(model, good)
    _set_blocks(monkeypatch, 300, 8 * 4 * 10)
    rc, out, err = run(["predict", model, data], capsys)
    one_line_error(rc, err, f"{data}:590: feature value 'abc' is not a number")
    assert out
    assert expected.startswith(out)


def test_peak_memory_is_bounded_by_the_block_not_the_file(files, monkeypatch, tmp_path):
    """The whole file's X (here 300,000 x 4 float64, 9.6 MB) was held at once: a peak
    of 19 MB; now 2.5 MB (atomic_write's 1 MiB write buffer, the model, a block)."""
    _, paths, _, _ = files
    data = tmp_path / "many.txt"
    data.write_text("1 qid:1 1:0.5 2:0.25 3:-1 4:2\n" * 300_000)
    out = tmp_path / "scores.txt"
    argv = ["predict", str(paths["lambdamart"]), str(data), "-q", "-o", str(out)]
    _set_blocks(monkeypatch, 1 << 14, 1 << 14)
    assert main(argv) == 0  # compiled, imported
    tracemalloc.start()
    try:
        assert main(argv) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    x_bytes = 300_000 * 4 * 8
    assert peak < x_bytes / 3, (peak, x_bytes)
    assert out.read_text() == _whole_file(paths["lambdamart"], data)


def test_a_late_query_file_mismatch_writes_nothing(files, monkeypatch, capsys, tmp_path):
    """The ``.query`` sidecar's sizes are checked against the rows once the last is read
    (as the whole-file reader did): the error names the .query file's line, and the
    output is left as it was."""
    _, paths, _, _ = files
    data = tmp_path / "noqid.txt"
    data.write_text(_lines(np.random.default_rng(4), 100, qid=False, odd=False))
    (tmp_path / "noqid.txt.query").write_text("60\n30\n")
    with pytest.raises(LTRInputError) as whole:
        load_svmlight(str(data), n_features=4)
    _set_blocks(monkeypatch, 200, 64)
    target = tmp_path / "scores.txt"
    target.write_text("kept\n")
    rc, out, err = run(["predict", paths["lambdamart"], data, "-o", target], capsys)
    one_line_error(rc, err, "noqid.txt.query:2: query sizes add up to 90")
    assert err == f"ltrboost: error: {whole.value}\n"
    assert target.read_text() == "kept\n"
    # sizes that add up: scored as without them
    (tmp_path / "noqid.txt.query").write_text("60\n40\n")
    rc, out, err = run(["predict", paths["lambdamart"], data], capsys)
    assert (rc, err) == (0, "")
    assert out == _whole_file(paths["lambdamart"], data)


def test_an_empty_file_and_a_header_only_file_are_errors(files, monkeypatch, capsys, tmp_path):
    _, paths, _, _ = files
    _set_blocks(monkeypatch, 64, 8)
    for text in ("", "# only a comment\n\n# and another\n"):
        data = tmp_path / "empty.txt"
        data.write_text(text)
        rc, out, err = run(["predict", paths["lambdamart"], data], capsys)
        one_line_error(rc, err, f"{data}:1: no data lines")
        assert out == ""


def test_parquet_is_refused_as_before(files, capsys, tmp_path):
    """predict reads LETOR text only: ``convert``'s Parquet (a file or its folder) is
    named as such, the same error as the whole-file reader's."""
    pytest.importorskip("pyarrow")
    _, paths, data, _ = files
    folder = tmp_path / "data.parquet"
    rc, _, err = run(["convert", data, folder, "--missing-token", "NULL"], capsys)
    assert rc == 0, err
    part = next(folder.glob("*.parquet"))
    with pytest.raises(LTRInputError) as whole:
        load_svmlight(str(part), n_features=4)
    rc, out, err = run(["predict", paths["lambdamart"], part], capsys)
    one_line_error(rc, err, "the file is Parquet")
    assert err == f"ltrboost: error: {whole.value}\n"
    assert out == ""
    rc, out, err = run(["predict", paths["lambdamart"], folder], capsys)
    one_line_error(rc, err, "is a folder of Parquet files")
    assert out == ""


def test_an_output_replaced_during_the_read_still_warns(files, monkeypatch, capsys, tmp_path):
    """Another run writing the output while the data is read: the warning compares the
    output's state when the run started with its state when it is replaced, after the
    last row is read (not when the first score is written)."""
    _, paths, data, _ = files
    target = tmp_path / "scores.txt"
    target.write_text("first\n")
    read_blocks = letor._read_blocks

    def spy(f, n):
        for k, block in enumerate(read_blocks(f, n)):
            if k == 2:
                target.write_text("another run's scores\n")
            yield block

    monkeypatch.setattr(letor, "_read_blocks", spy)
    _set_blocks(monkeypatch, 2000, 8 * 4 * 10)
    argv = ["predict", paths["lambdamart"], data, "-o", target, "-q", "--missing-token", "NULL"]
    rc, _, err = run(argv, capsys)
    assert rc == 0
    assert f"ltrboost: warning: {target} changed since this run started" in err
    assert target.read_text() == _whole_file(paths["lambdamart"], data)


def test_a_read_error_late_in_the_data_is_not_the_output_s(files, monkeypatch, capsys, tmp_path):
    """An I/O error reading the data while the output is being written names the data
    file, not the output ("scores.txt: Input/output error (writing; the previous file is
    intact)"), and leaves the output as it was."""
    _, paths, data, _ = files
    target = tmp_path / "scores.txt"
    target.write_text("first\n")
    read_blocks = letor._read_blocks

    def failing(f, n):
        for k, block in enumerate(read_blocks(f, n)):
            if k == 2:
                raise OSError(errno.EIO, "Input/output error", str(data))
            yield block

    monkeypatch.setattr(letor, "_read_blocks", failing)
    _set_blocks(monkeypatch, 2000, 8 * 4 * 10)
    argv = ["predict", paths["lambdamart"], data, "-o", target, "--missing-token", "NULL"]
    rc, _, err = run(argv, capsys)
    assert err == f"ltrboost: error: {data}: Input/output error\n"
    assert rc == 2
    assert target.read_text() == "first\n"
    assert os.listdir(tmp_path) == ["scores.txt"]


@pytest.mark.skipif(not hasattr(os, "fork") or os.uname().sysname != "Linux", reason="RLIMIT_AS")
def test_a_wide_model_predicts_many_rows_in_a_memory_limit(tmp_path):
    """1000 rows for a model whose trees split on feature 200000: the whole file's X
    was 1.6 GB, out of memory under a 1.5 GiB address-space limit (an error line, no
    scores); the rows now go a block at a time, and the scores are the whole-file's."""
    import subprocess
    import sys
    import textwrap

    train = tmp_path / "high.txt"
    train.write_text(
        "2 qid:1 1:0.5 200000:2\n0 qid:1 1:0.5\n1 qid:1 1:0.5 200000:1\n"
        "0 qid:2 1:0.5\n1 qid:2 1:0.5 200000:1\n"
    )
    model = tmp_path / "m.json"
    argv = ["train", train, "-q", "-o", model, "--min-samples-leaf", "1", "--n-estimators", "2"]
    assert main([str(a) for a in argv]) == 0
    data = tmp_path / "many.txt"
    data.write_text("0 qid:1 1:0.5\n" * 999 + "1 qid:1 1:0.5 200000:2\n")
    out = tmp_path / "p.txt"
    limit = 3 << 29
    code = f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
        from ltrboost.cli import main
        sys.exit(main(["predict", {str(model)!r}, {str(data)!r}, "-q", "-o", {str(out)!r}]))
    """
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env = dict(os.environ, PYTHONPATH=src, NUMBA_NUM_THREADS="2")
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    booster = load_model(str(model))
    assert booster.n_features == 200_000
    X = np.zeros((2, 200_000))
    X[:, 0] = 0.5
    X[1, 199_999] = 2.0
    low, high = booster.predict(X).tolist()
    assert out.read_text() == f"{low!r}\n" * 999 + f"{high!r}\n"

"""``ltrboost eval`` streams: it read the whole data file into one dense float64 matrix
(plus the parser's buffers) before scoring it, so evaluating a test file of tens of
millions of rows needed memory for all of it, although a metric is a mean over queries.
It now reads, scores and evaluates a bounded block of whole queries at a time (a query
that straddles two blocks is carried to the next); its output must stay byte for byte
the whole-file read's, whatever the block size and the options, and a file the blocks
cannot answer for (a qid seen again later, a metric that refuses a label) is read whole
as before, with the same output or the same error."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import ltrboost.cli.predict as cli
import ltrboost.io.letor as letor
from ltrboost import Ranker
from ltrboost.cli import main
from ltrboost.datasets import make_ranking

FAST = dict(n_estimators=4, max_leaf_nodes=6, min_samples_leaf=3, random_state=0)

# (letor._BLOCK_BYTES: text read at a time, predict._EVAL_BLOCK_BYTES: dense rows scored at
# a time); None keeps the default.  8 bytes is one row a block, 8 * 4 * 9 one query of
# the 9-row queries below.
BLOCKS = [
    (None, None),
    (64, 8),
    (257, 8 * 4 * 9),
    (300, 8 * 4 * 7),
    (1000, 1 << 30),
    (1 << 30, 100),
]

METRICS = "ndcg@3,dcg,err@5,err,map,map@2,mrr,p@2,pair_precision,pair_precision@30%"


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _lines(rng, n, *, qid=True, odd=True, labels=5):
    """``n`` data lines of 4 features in queries of 9 rows, some sparse, with nan, NA
    tokens, comments, blank lines and CRLF among them (``odd``)."""
    out = []
    for i in range(n):
        x = rng.normal(size=4)
        feats = [f"{j + 1}:{float(x[j])!r}" for j in range(4) if not (odd and rng.random() < 0.2)]
        if odd and i % 11 == 5:
            feats.append("4:nan" if "4:" not in " ".join(feats) else "")
        if odd and i % 13 == 6 and feats:
            feats[0] = feats[0].split(":")[0] + ":NULL"
        label = int(rng.integers(0, labels))
        head = f"{label} qid:{1000 - i // 9}" if qid else f"{label}"
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
    d = tmp_path_factory.mktemp("evalstream")
    X, y, qid = make_ranking(n_queries=30, docs_per_query=10, n_features=4, random_state=0)[:3]
    rng = np.random.default_rng(0)
    models = {"lambdamart": Ranker(**FAST).fit(X, y, qid=qid)}
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
    data = d / "data.txt"
    data.write_text(_lines(np.random.default_rng(1), 700))
    other = d / "other.txt"
    other.write_text(_lines(np.random.default_rng(2), 200, odd=False))
    return d, paths, data, other


def _set_blocks(monkeypatch, text_bytes, dense_bytes):
    if text_bytes is not None:
        monkeypatch.setattr(letor, "_BLOCK_BYTES", text_bytes)
    if dense_bytes is not None:
        monkeypatch.setattr(cli, "_EVAL_BLOCK_BYTES", dense_bytes)


def _whole_file(argv, capsys):
    """``(rc, stdout, stderr)`` of ``argv`` as eval gave them before: every file read
    whole (the path eval still takes for files the blocks cannot answer for)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli, "_eval_streamed", lambda *a, **k: None)
        return run(argv, capsys)


def _no_whole_file_read(monkeypatch):
    """Make the whole-file read fail: what passes then was streamed."""

    def whole(*a, **k):
        raise AssertionError("the whole file was read")

    monkeypatch.setattr(cli, "_read_for_model", whole)


OPTIONS = [
    [],
    ["--metric", METRICS, "--json"],
    ["--metric", METRICS, "--gain", "linear", "--relevance-threshold", "2", "--iteration", "2"],
    ["--metric", "ndcg@10,map", "--n-threads", "1"],
]


@pytest.mark.parametrize(("text_bytes", "dense_bytes"), BLOCKS)
@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("name", ["lambdamart", "mcrank", "nan"])
def test_output_is_byte_identical_to_the_whole_file_read(
    files, name, options, text_bytes, dense_bytes, monkeypatch, capsys
):
    _, paths, data, other = files
    argv = ["eval", paths[name], data, other, "--missing-token", "NULL", "-q", *options]
    expected = _whole_file(argv, capsys)
    assert expected[0] == 0, expected
    _set_blocks(monkeypatch, text_bytes, dense_bytes)
    _no_whole_file_read(monkeypatch)
    assert run(argv, capsys) == expected


def test_the_values_are_evaluate_s_of_the_whole_file(files, monkeypatch, capsys):
    """Bit for bit: the JSON floats are those of ``evaluate`` on the file read whole."""
    import json

    from ltrboost import load_model
    from ltrboost.io.letor import load_svmlight
    from ltrboost.metrics import evaluate, parse_metric_list

    _, paths, data, _ = files
    _set_blocks(monkeypatch, 257, 8 * 4 * 5)
    rc, out, err = run(["eval", paths["lambdamart"], data, "--metric", METRICS, "--json",
                        "--missing-token", "NULL"], capsys)  # fmt: skip
    assert rc == 0, err
    read = load_svmlight(str(data), n_features=4, na_values=["NULL"])
    scores = load_model(str(paths["lambdamart"])).predict(read.X)
    offsets = np.flatnonzero(np.r_[True, read.qid[1:] != read.qid[:-1], True])
    expected = evaluate(scores, read.y, offsets, metrics=parse_metric_list(METRICS))
    got = json.loads(out)[str(data)]
    assert got.pop("n_queries") == offsets.shape[0] - 1
    assert got == expected  # == on floats: the same bits


def test_peak_memory_is_bounded_by_the_block_not_the_file(files, monkeypatch, tmp_path):
    """The whole file's X (here 300,000 x 4 float64, 9.6 MB), its labels, qids and
    lines were held at once: a peak of several times X; now a block, and one float a
    query for each metric."""
    _, paths, _, _ = files
    data = tmp_path / "many.txt"
    with data.open("w") as f:
        for q in range(3000):
            f.write(f"2 qid:{q} 1:0.5 2:0.25 3:-1 4:2\n" + f"0 qid:{q} 1:0.1 2:0.2 3:1 4:-2\n" * 99)
    argv = ["eval", str(paths["lambdamart"]), str(data), "-q", "--metric", "ndcg@10,map,p@5"]
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
    # the default metrics hold err@10: each row's score and label are kept (16 bytes)
    argv = ["eval", str(paths["lambdamart"]), str(data), "-q"]
    tracemalloc.start()
    try:
        assert main(argv) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < x_bytes * 3 / 4, (peak, x_bytes)


def test_a_qid_seen_again_later_is_grouped_as_before(files, monkeypatch, capsys, tmp_path):
    """The whole-file read groups the rows of a qid that comes back after other queries
    (in order of first appearance); the blocks cannot, so such a file is read whole:
    the same output, whatever the block size."""
    _, paths, data, _ = files
    lines = data.read_text().splitlines(keepends=True)
    moved = tmp_path / "moved.txt"
    moved.write_text("".join(lines[40:] + lines[:40]) + lines[5])  # qid 1000 three times
    for text_bytes, dense_bytes in BLOCKS:
        _set_blocks(monkeypatch, text_bytes, dense_bytes)
        argv = ["eval", paths["lambdamart"], moved, "--metric", METRICS, "--json",
                "--missing-token", "NULL"]  # fmt: skip
        expected = _whole_file(argv, capsys)
        assert expected[0] == 0
        assert run(argv, capsys) == expected


def _with_line(tmp_path, text, at, name="late.txt"):
    lines = _lines(np.random.default_rng(3), 600, odd=False).splitlines(keepends=True)
    lines[at - 1] = text + "\n"
    path = tmp_path / name
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize(("text_bytes", "dense_bytes"), BLOCKS)
@pytest.mark.parametrize(
    "bad",
    [
        "1 qid:70 1:0.5 2:abc 3:1",  # the parser's error
        "1 qid:70 1:0.5 9:1",  # beyond the model's 4 features (reworded to name it)
        "1 1:0.5",  # qid: on some lines only
        "1 qid:70 1:1e999",  # a value that overflows
        "-1 qid:935 1:0.5",  # a negative label (the metrics refuse it)
        "40 qid:935 1:0.5",  # too large for the exponential gain
    ],
)
def test_a_bad_line_late_in_the_file_is_the_same_error_and_nothing_printed(
    files, bad, text_bytes, dense_bytes, monkeypatch, capsys, tmp_path
):
    _, paths, data, _ = files
    late = _with_line(tmp_path, bad, 590)
    early = _with_line(tmp_path, "-2 qid:1000 1:0.5", 2, "early.txt")  # a smaller label first
    for argv in (
        ["eval", paths["lambdamart"], late],
        ["eval", paths["lambdamart"], data, late, "--json", "--missing-token", "NULL"],
        ["eval", paths["lambdamart"], early, late, "--metric", "err,ndcg@3"],
    ):
        expected = _whole_file(argv, capsys)
        assert expected[:2] == (2, ""), expected
        assert expected[2].startswith("ltrboost: error: ")
        assert expected[2].count("\n") == 1
        _set_blocks(monkeypatch, text_bytes, dense_bytes)
        assert run(argv, capsys) == expected


def test_the_negative_label_named_is_the_whole_file_s(files, monkeypatch, capsys, tmp_path):
    """The metrics name the row of the smallest label, not the first negative one: a
    later, smaller label is the one named, as before."""
    _, paths, _, _ = files
    lines = _lines(np.random.default_rng(3), 300, odd=False).splitlines(keepends=True)
    lines[10] = "-1 qid:999 1:0.5\n"
    lines[250] = "-3 qid:973 1:0.5\n"
    data = tmp_path / "neg.txt"
    data.write_text("".join(lines))
    argv = ["eval", paths["lambdamart"], data]
    expected = _whole_file(argv, capsys)
    assert f"{data}:251: label=-3 is negative" in expected[2]
    _set_blocks(monkeypatch, 200, 8 * 4 * 9)
    assert run(argv, capsys) == expected


def test_query_files_beside_the_data(files, monkeypatch, capsys, tmp_path):
    """A ``.query`` sidecar gives the queries of a file without ``qid:`` (streamed, the
    same numbers); sizes that do not add up are the same error; one beside a file with
    ``qid:`` warns once, as before."""
    _, paths, data, _ = files
    noqid = tmp_path / "noqid.txt"
    noqid.write_text(_lines(np.random.default_rng(4), 100, qid=False, odd=False))
    sizes = tmp_path / "noqid.txt.query"
    argv = ["eval", paths["lambdamart"], noqid, "--metric", METRICS]
    for text in ("60\n30\n", "60\n30\n20\n", "x\n", "30\n\n40\n30\n"):
        sizes.write_text(text)
        expected = _whole_file(argv, capsys)
        _set_blocks(monkeypatch, 200, 64)
        assert run(argv, capsys) == expected
    assert expected[0] == 0
    sizes.unlink()
    expected = _whole_file(argv, capsys)  # no queries at all
    assert "no qid: on any line" in expected[2]
    assert run(argv, capsys) == expected
    beside = tmp_path / "qid.txt"
    beside.write_text(data.read_text())
    (tmp_path / "qid.txt.query").write_text("5\n")
    (tmp_path / "qid.txt.weight").write_text("1\n")
    for metrics in ("ndcg@3,map", "ndcg@3,map,err", "map"):
        argv = ["eval", paths["lambdamart"], beside, "--missing-token", "NULL", "--metric",
                metrics, "--relevance-threshold", "9"]  # fmt: skip
        expected = _whole_file(argv, capsys)
        assert expected[2].count("qid.txt.query is not read") == 1, expected
        assert "qid.txt.weight is not read" in expected[2]
        assert "=9 counts no document" in expected[2]
        assert run(argv, capsys) == expected


def test_an_empty_file_and_a_header_only_file_are_errors(files, monkeypatch, capsys, tmp_path):
    _, paths, _, _ = files
    _set_blocks(monkeypatch, 64, 8)
    for text in ("", "# only a comment\n\n# and another\n"):
        data = tmp_path / "empty.txt"
        data.write_text(text)
        argv = ["eval", paths["lambdamart"], data]
        expected = _whole_file(argv, capsys)
        assert f"{data}:1: no data lines" in expected[2]
        assert run(argv, capsys) == expected

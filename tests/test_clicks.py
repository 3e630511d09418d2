"""Click logs (issue 17 item 2): reading with FILE:LINE errors, seeded simulation whose
click-through rates follow the documented formulas, skip-above / skip-next mining, and
mined pairs that the ``--pairs`` reader accepts and QBRank trains on."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost.cli import main
from ltrboost.clicks import (
    ClickLog,
    mine_preferences,
    read_click_log,
    simulate,
    write_click_log,
    write_pairs,
)
from ltrboost.dataset import LTRInputError
from ltrboost.datasets import make_ranking
from ltrboost.io.letor import dump_svmlight
from ltrboost.io.pairs import read_pairs_file


def _write(tmp_path, text, name="log.tsv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _log(rows):
    """rows: (qid, docid, position, clicked, impression)."""
    q, d, p, c, i = zip(*rows, strict=True)
    obj = lambda xs: np.array(list(xs), dtype=object)  # noqa: E731
    return ClickLog(obj(q), obj(d), np.array(p), np.array(c, np.int8), np.array(i))


# ------------------------------------------------------------------ reading
def test_read_with_header_and_impression_column(tmp_path):
    p = _write(
        tmp_path,
        "qid\tdocid\tposition\tclicked\timpression\n"
        "# a comment\n"
        "7\ta\t1\t0\tx\n"
        "9\tb\t1\t1\ty\n"
        "7\tc\t2\t1\tx\n",
    )
    log = read_click_log(p)
    assert log.qid.tolist() == ["7", "9", "7"]
    assert log.docid.tolist() == ["a", "b", "c"]
    assert log.position.tolist() == [1, 1, 2]
    assert log.clicked.tolist() == [0, 1, 1]
    assert log.impression.tolist() == [0, 1, 0]
    assert log.line.tolist() == [3, 4, 5]
    assert log.n_impressions == 2


def test_impressions_without_the_column_are_runs(tmp_path):
    p = _write(tmp_path, "7 a 1 0\n7 b 2 1\n7 a 1 1\n9 a 1 0\n9 b 2 0\n8 a 3 1\n")
    log = read_click_log(p)
    assert log.impression.tolist() == [0, 0, 1, 2, 2, 3]


QID = np.array([7, 7, 7, 9])
DOCIDS = ["a", "b", "c", "a"]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("7 a 1\n", 1, "got 3 fields"),
        ("7 a 1 0 x y\n", 1, "got 6 fields"),
        ("7 a 1 0 x\n7 b 2 0\n", 2, "on all lines or none"),
        ("\n7 a one 0\n", 2, "not an integer"),
        ("7 a 0 0\n", 1, "< 1"),
        ("7 a -2 0\n", 1, "< 1"),
        ("7 a 1 2\n", 1, "0 or 1"),
        ("7 a 1 yes\n", 1, "0 or 1"),
        ("7 a 1 0\n7 b 2 0\n7 c 2 1\n", 3, "position 2 shown twice"),
        ("7 a 1 0 i\n9 a 1 0 j\n7 b 1 0 i\n", 3, "position 1 shown twice"),
        ("7 a 1 0\n7 a 2 0\n", 2, "document 'a' shown twice"),
        ("7 a 1 0 i\n9 a 2 0 i\n", 2, "impression 'i' is for query '7'"),
        ("7 a 1 0\n8 a 1 0\n", 2, "unknown query '8'"),
        ("7 a 1 0\n7 zz 2 1\n", 2, "'zz' is not a document of query '7'"),
    ],
)
def test_errors_name_file_and_line(tmp_path, text, line, fragment):
    p = _write(tmp_path, text)
    with pytest.raises(LTRInputError) as e:
        read_click_log(p, qid=QID, docids=DOCIDS)
    assert e.value.path == str(p)
    assert e.value.line == line
    assert fragment in str(e.value)
    assert str(e.value).startswith(f"{p}:{line}: ")
    assert "\n" not in str(e.value)


def test_unreadable_file(tmp_path):
    with pytest.raises(LTRInputError, match="cannot read click log"):
        read_click_log(tmp_path / "missing.tsv")


def test_write_read_round_trip(tmp_path):
    log = simulate([0, 1, 2, 0, 3], [0, 3, 5], n_sessions=20, random_state=1)
    p = tmp_path / "log.tsv"
    write_click_log(p, log)
    back = read_click_log(p)
    for f in ("qid", "docid", "position", "clicked", "impression"):
        np.testing.assert_array_equal(getattr(back, f), getattr(log, f))


# ------------------------------------------------------------------ simulate
def _same(a, b):
    return all(
        np.array_equal(getattr(a, f), getattr(b, f))
        for f in ("qid", "docid", "position", "clicked", "impression")
    )


@pytest.mark.parametrize("model", ["cascade", "position_based"])
def test_simulate_is_seeded(model):
    y = np.array([0, 1, 2, 3, 0, 2, 1])
    off = [0, 4, 7]
    a = simulate(y, off, model, n_sessions=50, random_state=3)
    assert _same(a, simulate(y, off, model, n_sessions=50, random_state=3))
    assert not _same(a, simulate(y, off, model, n_sessions=50, random_state=4))


def _ctr_by_position(log, n):
    shows = np.bincount(log.position - 1, minlength=n)
    clicks = np.bincount(log.position - 1, weights=log.clicked, minlength=n)
    return clicks / shows, shows


def test_position_based_ctr_matches_formula():
    # One query, shown in a fixed order given by scores: CTR at rank k = (1/k)^eta r(y_k).
    y = np.array([3, 0, 2, 1, 3, 2], dtype=float)
    scores = -np.arange(6.0)  # shown in row order
    eta, noise, n = 0.7, 0.05, 40000
    log = simulate(y, [0, 6], "position_based", n, 0, scores=scores, eta=eta, noise=noise)
    r = noise + (1 - noise) * (2.0**y - 1) / 2.0**3
    expected = (1.0 / np.arange(1, 7)) ** eta * r
    ctr, shows = _ctr_by_position(log, 6)
    assert (shows == n).all()
    se = np.sqrt(expected * (1 - expected) / n)
    np.testing.assert_array_less(np.abs(ctr - expected), 4 * se + 1e-12)


def test_cascade_ctr_matches_formula():
    y = np.array([2, 0, 3, 1, 2], dtype=float)
    scores = -np.arange(5.0)
    sat, n = 0.6, 40000
    log = simulate(y, [0, 5], "cascade", n, 1, scores=scores, satisfaction=sat)
    r = (2.0**y - 1) / 2.0**3
    exam = np.cumprod(np.r_[1.0, 1 - r[:-1] * sat])
    expected = exam * r
    ctr, _ = _ctr_by_position(log, 5)
    se = np.sqrt(expected * (1 - expected) / n)
    np.testing.assert_array_less(np.abs(ctr - expected), 4 * se + 1e-12)
    # A cascade user never clicks below a stop: with satisfaction 1, one click at most.
    one = simulate(y, [0, 5], "cascade", 500, 2, scores=scores, satisfaction=1.0)
    per_imp = np.bincount(one.impression, weights=one.clicked)
    assert per_imp.max() <= 1


def test_simulate_top_k_docids_and_default_ranker():
    y = np.array([0, 1, 2, 3, 4, 0, 1])
    ids = [f"d{i}" for i in range(7)]
    log = simulate(y, [0, 5, 7], n_sessions=30, random_state=0, top_k=3, docids=ids, qids=[11, 12])
    assert log.position.max() == 3
    assert set(log.qid.tolist()) <= {"11", "12"}
    for q, d in zip(log.qid.tolist(), log.docid.tolist(), strict=True):
        assert (q == "11") == (int(d[1:]) < 5)
    # The default ranker is fixed per seed: every impression of a query shows the same list.
    first = {}
    for imp in range(log.n_impressions):
        m = log.impression == imp
        key = log.qid[m][0]
        first.setdefault(key, log.docid[m].tolist())
        assert first[key] == log.docid[m].tolist()


def test_shuffle_fraction_randomises_the_order_of_the_same_documents():
    # 8 documents, top 5 shown: a shuffled impression shows the same five documents in a
    # random order, so each of them reaches every position; a fraction f of impressions
    # is shuffled, so the top document sits at position 1 in 1 - f + f / 5 of them.
    y = np.array([4, 3, 2, 1, 0, 0, 1, 2], dtype=float)
    scores = -np.arange(8.0)
    n, f, k = 20000, 0.4, 5
    kw = dict(scores=scores, top_k=k, noise=0.1)
    log = simulate(y, [0, 8], "position_based", n, 5, shuffle_fraction=f, **kw)
    assert set(log.docid.tolist()) == {"0", "1", "2", "3", "4"}
    top_first = np.mean((log.docid == "0")[log.position == 1])
    expected = 1 - f + f / k
    assert abs(top_first - expected) < 4 * np.sqrt(expected * (1 - expected) / n)
    # Every impression is still a permutation of positions 1..k.
    per_imp = np.bincount(log.impression, weights=log.position)
    assert (per_imp == k * (k + 1) / 2).all()
    # Position-based clicks still follow (1/k)^eta r(y) at each (document, position).
    r = 0.1 + 0.9 * (2.0**y - 1) / 2.0**4
    at = (log.docid == "0") & (log.position == 3)
    assert abs(log.clicked[at].mean() - r[0] / 3) < 4 * np.sqrt(r[0] / 3 / at.sum())
    # All impressions shuffled: every document equally often at position 1.
    full = simulate(y, [0, 8], "position_based", n, 6, shuffle_fraction=1.0, **kw)
    counts = np.bincount(full.docid[full.position == 1].astype(int), minlength=k)
    np.testing.assert_array_less(np.abs(counts / n - 1 / k), 4 * np.sqrt(0.16 / n))
    # 0 is the old simulation, draw for draw; out-of-range fractions are refused.
    assert _same(
        simulate(y, [0, 8], n_sessions=300, random_state=1, **kw),
        simulate(y, [0, 8], n_sessions=300, random_state=1, shuffle_fraction=0.0, **kw),
    )
    with pytest.raises(ValueError, match="shuffle_fraction"):
        simulate(y, [0, 8], shuffle_fraction=1.5)


def test_simulate_rejects_bad_arguments():
    with pytest.raises(ValueError, match="model"):
        simulate([1, 0], [0, 2], "dbn")
    with pytest.raises(ValueError, match="query_offsets"):
        simulate([1, 0], [0, 3])
    with pytest.raises(ValueError, match="labels"):
        simulate([-1, 0], [0, 2])


# ------------------------------------------------------------------ mining
HAND = _log(
    [
        # impression 0: clicks at 2 and 4; 1, 3, 5 skipped
        ("q", "a", 1, 0, 0),
        ("q", "b", 2, 1, 0),
        ("q", "c", 3, 0, 0),
        ("q", "d", 4, 1, 0),
        ("q", "e", 5, 0, 0),
        # impression 1, another order: click at 1 and 3
        ("q", "c", 1, 1, 1),
        ("q", "a", 2, 0, 1),
        ("q", "e", 3, 1, 1),
        # impression 2: rows out of order in the log, click on 2 only
        ("r", "y", 2, 1, 2),
        ("r", "x", 1, 0, 2),
    ]
)


def _as_dict(m):
    return {
        (q, a, b): c
        for q, a, b, c in zip(m.qid, m.preferred, m.other, m.count.tolist(), strict=True)
    }


def test_skip_above_by_definition():
    # imp 0: b>a; d>a, d>c.  imp 1: e>a.  imp 2: y>x.
    got = _as_dict(mine_preferences(HAND, "skip-above"))
    assert got == {
        ("q", "b", "a"): 1,
        ("q", "d", "a"): 1,
        ("q", "d", "c"): 1,
        ("q", "e", "a"): 1,
        ("r", "y", "x"): 1,
    }


def test_skip_next_by_definition():
    # imp 0: b>c, d>e.  imp 1: c>a (e is last).  imp 2: y is last.
    got = _as_dict(mine_preferences(HAND, "skip-next"))
    assert got == {("q", "b", "c"): 1, ("q", "d", "e"): 1, ("q", "c", "a"): 1}


def test_counts_are_netted_and_thresholded():
    rows = []
    for i in range(3):  # b clicked below a: b > a three times
        rows += [("q", "a", 1, 0, i), ("q", "b", 2, 1, i)]
    rows += [("q", "b", 1, 0, 3), ("q", "a", 2, 1, 3)]  # once a > b
    rows += [("q", "c", 1, 0, 4), ("q", "d", 2, 1, 4)]
    rows += [("q", "d", 1, 0, 5), ("q", "c", 2, 1, 5)]  # c, d cancel out
    log = _log(rows)
    m = mine_preferences(log, "skip-above")
    assert _as_dict(m) == {("q", "b", "a"): 2}
    assert m.weight.tolist() == [2.0]
    assert len(mine_preferences(log, "skip-above", min_count=3)) == 0


def test_mined_pairs_read_back_and_train_qbrank(tmp_path):
    X, y, qid = make_ranking(n_queries=6, docs_per_query=8, n_features=4, random_state=0)[:3]
    docids = [f"D{i}" for i in range(len(y))]
    data = tmp_path / "train.txt"
    dump_svmlight(data, X, y, qid, comments=[f"docid = {d}" for d in docids])
    off = np.r_[0, np.flatnonzero(np.diff(qid)) + 1, len(qid)]
    log = simulate(
        y, off, "cascade", 400, 5, qids=[qid[o] for o in off[:-1]], docids=docids, noise=0.05
    )
    log_path = tmp_path / "clicks.tsv"
    write_click_log(log_path, log)
    log = read_click_log(log_path, qid=qid, docids=docids)
    for strategy in ("skip-above", "skip-next"):
        mined = mine_preferences(log, strategy)
        assert len(mined) > 0
        pairs_path = tmp_path / f"{strategy}.pairs"
        write_pairs(pairs_path, mined)
        pref, oth, w = read_pairs_file(pairs_path, qid, docids)
        index = {d: i for i, d in enumerate(docids)}
        np.testing.assert_array_equal(pref, [index[d] for d in mined.preferred])
        np.testing.assert_array_equal(oth, [index[d] for d in mined.other])
        np.testing.assert_array_equal(w, mined.weight)
    rc = main(
        [
            "train",
            str(data),
            "--objective",
            "qbrank",
            "--pairs",
            str(tmp_path / "skip-above.pairs"),
            "-o",
            str(tmp_path / "m.json"),
            "-q",
            "--min-samples-leaf",
            "3",
            "--max-leaf-nodes",
            "6",
            "--n-estimators",
            "5",
        ]
    )
    assert rc == 0
    assert (tmp_path / "m.json").exists()


def test_cli_simulate_mine_train(tmp_path, capsys):
    X, y, qid = make_ranking(n_queries=5, docs_per_query=6, n_features=3, random_state=1)[:3]
    data = tmp_path / "train.txt"
    dump_svmlight(data, X, y, qid, comments=[f"docid = D{i}" for i in range(len(y))])
    log, pairs = tmp_path / "c.tsv", tmp_path / "p.txt"
    assert main(["clicks", "simulate", str(data), "-o", str(log), "--n-sessions", "300"]) == 0
    assert main(["clicks", "mine", str(log), "--data", str(data), "-o", str(pairs)]) == 0
    direct = mine_preferences(read_click_log(log), "skip-above")
    pref, _, w = read_pairs_file(pairs, qid, [f"D{i}" for i in range(len(y))])
    assert len(pref) == len(direct) > 0
    np.testing.assert_array_equal(w, direct.weight)
    # A document the data does not have: one line naming FILE:LINE, exit code 2.
    with open(log, "a") as f:
        f.write(f"{qid[0]}\tNOPE\t11\t1\t0\n")
    capsys.readouterr()
    rc = main(["clicks", "mine", str(log), "--data", str(data), "-o", str(pairs)])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    n_lines = len(log.read_text().splitlines())
    assert f"{log}:{n_lines}:" in err
    assert "'NOPE'" in err
    assert len(err.splitlines()) == 1


def _run_readme_example(marker: str) -> None:
    """Run README.md's python block that follows ``<!-- MARKER: ... -->``."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"<!-- {marker}:[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert match, marker
    exec(compile(match.group(1), "README.md", "exec"), {})


def test_readme_example_runs(capsys):
    import re

    _run_readme_example("clicks-example")
    assert re.fullmatch(r"\d+ shown, \d+ clicks, \d+ pairs\n", capsys.readouterr().out)


def test_earliest_repeat_is_reported(tmp_path):
    # A repeated document (line 3) before a repeated position (line 5), impressions interleaved.
    p = _write(tmp_path, "7 a 1 0 i\n9 a 1 0 j\n7 a 2 0 i\n9 b 2 0 j\n9 c 2 0 j\n")
    with pytest.raises(LTRInputError) as e:
        read_click_log(p)
    assert e.value.line == 3
    assert "document 'a' shown twice in one impression (also on line 1)" in str(e.value)


def test_write_pairs_file_round_trips_and_refuses_bad_input(tmp_path):
    from ltrboost.io.pairs import write_pairs_file

    p = tmp_path / "p.txt"
    w = [0.1, 1 / 3, 2.0]
    write_pairs_file(p, ["7", "7", "7"], ["a", "c", "c"], ["b", "a", "b"], w)
    pref, oth, back = read_pairs_file(p, QID, DOCIDS)
    assert pref.tolist() == [0, 2, 2]
    assert oth.tolist() == [1, 0, 1]
    assert back.tolist() == w  # exact: shortest round-trip repr
    for bad in (["a b"], [""]):
        with pytest.raises(ValueError, match="whitespace"):
            write_pairs_file(p, ["7"], bad, ["c"])
    with pytest.raises(ValueError, match="from 0 to"):  # 0 counts for nothing: written
        write_pairs_file(p, ["7"], ["a"], ["b"], [-1.0])
    assert back.tolist() == read_pairs_file(p, QID, DOCIDS)[2].tolist()  # p untouched


# ------------------------------------------------------------------ weak logger, eps_plus
def test_eps_plus_click_rates_match_formula():
    # Position-based clicks with the field's click noise: grade 0 clicked with
    # probability noise (0.1), the top grade with eps_plus (1), exponential gain between.
    y = np.array([2, 0, 1, 2, 0], dtype=float)
    scores = -np.arange(5.0)
    n = 40000
    log = simulate(
        y, [0, 5], "position_based", n, 5, scores=scores, eta=2.0, noise=0.1, eps_plus=1.0
    )
    r = 0.1 + 0.9 * (2.0**y - 1) / 3.0
    np.testing.assert_allclose(r, [1.0, 0.1, 0.4, 1.0, 0.1])
    expected = (1.0 / np.arange(1, 6)) ** 2.0 * r
    ctr, shows = _ctr_by_position(log, 5)
    assert (shows == n).all()
    se = np.sqrt(expected * (1 - expected) / n)
    np.testing.assert_array_less(np.abs(ctr - expected), 4 * se + 1e-12)
    with pytest.raises(ValueError, match="eps_plus"):
        simulate(y, [0, 5], noise=0.5, eps_plus=0.2)


def test_weak_logger_uses_the_stated_fraction_and_every_grade():
    from ltrboost.clicks import sample_logger_queries, weak_logger_scores
    from ltrboost.sklearn import Ranker

    X, y, qid = make_ranking(n_queries=60, docs_per_query=(5, 15), random_state=2)[:3]
    off = np.r_[0, np.cumsum(np.unique(qid, return_counts=True)[1])]
    pick = sample_logger_queries(y, off, 0.05, random_state=7)
    assert pick.size == 3  # ceil(0.05 * 60)
    assert np.array_equal(pick, np.unique(pick))
    qidx = np.repeat(np.arange(60), np.diff(off))
    assert set(np.unique(y)) == set(np.unique(y[np.isin(qidx, pick)]))
    assert np.array_equal(pick, sample_logger_queries(y, off, 0.05, random_state=7))
    params = dict(n_estimators=5, max_leaf_nodes=4, min_samples_leaf=2, n_threads=1)
    scores, used = weak_logger_scores(X, y, off, 0.05, random_state=7, **params)
    assert np.array_equal(used, pick)
    rows = np.isin(qidx, pick)
    ref = Ranker(**params).fit(X[rows], y[rows], qid=qidx[rows]).predict(X)
    np.testing.assert_array_equal(scores, ref)
    assert sample_logger_queries(y, off, 1.0, 0).size == 60
    with pytest.raises(ValueError, match="every grade"):
        sample_logger_queries(np.r_[np.zeros(59), 2.0], np.arange(61), 0.02, 0, max_draws=3)


# ------------------------------------------------------------------ IPW relevance labels
def _ipw_log():
    return _log(
        [
            ("7", "a", 1, 1, 0),
            ("7", "b", 2, 1, 0),
            ("7", "c", 3, 0, 0),
            ("7", "b", 1, 0, 1),
            ("7", "a", 2, 1, 1),
            ("7", "c", 3, 1, 1),
            ("9", "a", 1, 0, 2),
        ]
    )


def test_relevance_labels_by_hand():
    from ltrboost.clicks import relevance_labels

    log = _ipw_log()
    r = relevance_labels(log, [1.0, 0.5, 0.25])
    assert r.qid.tolist() == ["7", "7", "7", "9"]
    assert r.docid.tolist() == ["a", "b", "c", "a"]
    # 7/a: (1/1 + 1/0.5) / 2; 7/b: (1/0.5 + 0) / 2; 7/c: (0 + 1/0.25) / 2; 9/a: 0
    np.testing.assert_allclose(r.label, [1.5, 1.0, 2.0, 0.0])
    assert r.shown.tolist() == [2, 2, 2, 1]
    assert r.clicks.tolist() == [2, 1, 1, 0]
    assert r.row is None
    np.testing.assert_array_equal(r.grades(10), [15.0, 10.0, 20.0, 0.0])
    ctr = relevance_labels(log)  # no propensities: the click-through rate
    np.testing.assert_allclose(ctr.label, [1.0, 0.5, 0.5, 0.0])
    # with the data's ids: data rows, in row order
    rows = relevance_labels(
        log, [1.0, 0.5, 0.25, 0.1], qid=["9", "7", "7", "7"], docids=["a", "c", "a", "b"]
    )
    assert rows.row.tolist() == [0, 1, 2, 3]
    assert list(zip(rows.qid.tolist(), rows.docid.tolist(), strict=True)) == [
        ("9", "a"), ("7", "c"), ("7", "a"), ("7", "b"),
    ]  # fmt: skip
    np.testing.assert_allclose(rows.label, [0.0, 2.0, 1.5, 1.0])


def test_relevance_labels_errors(tmp_path):
    from ltrboost.clicks import relevance_labels

    log = _ipw_log()
    with pytest.raises(ValueError, match=r"entry 2: position 3 has no propensity .*1 to 2"):
        relevance_labels(log, [1.0, 0.5])
    read = read_click_log(_write(tmp_path, "7 a 1 1\n7 b 2 0\n7 c 3 1\n"))
    with pytest.raises(ValueError, match=r"line 3: position 3 has no propensity"):
        relevance_labels(read, [1.0, 0.5])
    for bad in (0.0, -0.2, np.nan, np.inf):
        with pytest.raises(ValueError, match="propensity of position 2 is"):
            relevance_labels(log, [1.0, bad, 0.5])
    with pytest.raises(ValueError, match="non-empty 1-D"):
        relevance_labels(log, [])
    with pytest.raises(LTRInputError, match=r"document 'c' of query '7' is not in the data"):
        relevance_labels(log, qid=["7", "7", "9"], docids=["a", "b", "a"])
    with pytest.raises(ValueError, match="both qid and docids"):
        relevance_labels(log, qid=["7"])
    with pytest.raises(ValueError, match="scale"):
        relevance_labels(log).grades(0)


@pytest.mark.parametrize("shuffle", [0.0, 1.0])
def test_relevance_labels_are_unbiased_under_position_based_clicks(shuffle):
    # Position-based clicks with known examination (1/k)^eta: the IPW label of every
    # document estimates its click probability when examined, r(y), within a few
    # standard errors -- whether it is always shown at one position (shuffle=0) or
    # at random ones (1) -- and the click-through rate does not.
    from ltrboost.clicks import relevance_labels

    y = np.array([3, 0, 2, 1, 3, 2, 0, 1, 4, 0], dtype=float)
    eta, n = 1.0, 20000
    log = simulate(
        y, [0, 10], "position_based", n, 5, scores=-np.arange(10.0), eta=eta, noise=0.1,
        eps_plus=1.0, shuffle_fraction=shuffle,
    )  # fmt: skip
    theta = (1.0 / np.arange(1, 11)) ** eta
    r = relevance_labels(log, theta, qid=np.zeros(10, int), docids=[str(i) for i in range(10)])
    assert r.row.tolist() == list(range(10))
    assert (r.shown == n).all()
    truth = 0.1 + 0.9 * (2.0**y - 1) / 15.0
    # variance of click/theta when shown at k: truth/theta_k - truth^2; shuffled: mean over k
    inv = 1.0 / theta if shuffle == 0 else np.full(10, np.mean(1.0 / theta))
    se = np.sqrt((truth * inv - truth**2) / n)
    np.testing.assert_array_less(np.abs(r.label - truth), 4 * se)
    ctr = relevance_labels(log).label
    assert np.max(np.abs(ctr - truth) / se) > 10  # the uncorrected rate is far off


def test_relevance_labels_train_lambdamart():
    from ltrboost.clicks import click_rows, relevance_labels
    from ltrboost.sklearn import Ranker

    X, y, qid = make_ranking(n_queries=30, docs_per_query=12, random_state=1)[:3]
    off = np.r_[0, np.cumsum(np.unique(qid, return_counts=True)[1])]
    q = np.repeat(np.arange(len(off) - 1), np.diff(off))
    ids = [str(i - off[k]) for i, k in enumerate(q)]
    log = simulate(y, off, "position_based", n_sessions=600, random_state=0, top_k=5)
    r = relevance_labels(log, (1.0 / np.arange(1, 6)), qid=q, docids=ids)
    shown = np.unique(click_rows(log, q, ids).row)
    np.testing.assert_array_equal(r.row, shown)  # every shown document once, row order
    model = Ranker(n_estimators=3, gain="linear", min_samples_leaf=2, n_threads=1)
    model.fit(X[r.row], r.grades(), qid=q[r.row])
    assert np.isfinite(model.predict(X)).all()


def test_readme_ipw_labels_example_runs(capsys):
    import re

    _run_readme_example("ipw-labels-example")
    assert re.fullmatch(r"\d+ documents, mean label \d+\.\d+\n", capsys.readouterr().out)


def test_simulate_handles_grades_of_1024_and_more():
    """The attractiveness (2^y - 1) / 2^ymax is computed without overflowing: a grade
    of 2000 is clicked (it was NaN, never clicked), and small grades keep their exact
    attractiveness (the same logs as before for grades up to 53)."""
    import warnings

    y = np.array([0.0, 500.0, 1100.0, 0.0, 1024.0, 2000.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow in exp2
        log = simulate(y, [0, 3, 6], "position_based", 500, 0, eta=0.0)
    assert log.clicked.sum() > 0
    small = np.array([0.0, 1.0, 2.0, 3.0])
    a = simulate(small, [0, 4], "cascade", 300, 7)
    b = simulate(small, [0, 4], "cascade", 300, 7)
    np.testing.assert_array_equal(a.clicked, b.clicked)


@pytest.mark.parametrize(
    ("kw", "needle"),
    [(dict(qids=["#q", "q2"]), "qid '#q'"), (dict(docids=["a b", "c", "d", "e"]), "docid 'a b'")],
)
def test_write_click_log_refuses_ids_it_cannot_carry(kw, needle, tmp_path):
    log = simulate(np.array([0.0, 1.0, 2.0, 0.0]), [0, 2, 4], "cascade", 20, 0, **kw)
    with pytest.raises(ValueError, match=needle):
        write_click_log(tmp_path / "c.log", log)
    assert not (tmp_path / "c.log").exists()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("q1 d1 1 1\x0cq1 d2 2 0\nq1 d3 3 7\n", "c.log:1"),  # a form feed ends no line
        ("q1 d1 1 1\nq1 d2 2_0 0\n", "c.log:2: position '2_0' is not an integer"),
        ("q1 d1 \u0661 1\n", "c.log:1: position"),
    ],
)
def test_click_log_lines_and_integers_are_strict(text, needle, tmp_path):
    path = tmp_path / "c.log"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LTRInputError, match=needle):
        read_click_log(path)

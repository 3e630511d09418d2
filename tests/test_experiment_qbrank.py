"""``ltrboost experiment --protocol qbrank``: seed 004's split, pairs, metric and report."""

import csv
import json
import os

import numpy as np
import pytest

from ltrboost.cli import main
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.experiment_qbrank import (
    RUN_NAMES,
    RUNS,
    Settings,
    SplitQBRank,
    _load_fold,
    precision_at_percent,
    preference_pairs,
    run_qbrank_experiment,
    single_grade_queries,
    split_queries,
)
from ltrboost.objectives.qbrank import QBRank

SINGLE_TRAIN = (0, 3, 7)  # training queries forced to one grade (L1)
SINGLE_TEST = (1,)  # a test query forced to one grade (left out of L3)


@pytest.fixture
def folds(tmp_path, write_letor_folds):
    """``folds(n_folds=2)``: tiny LETOR folds under ``tmp_path/data`` with single-grade
    queries (L1 in train, one left out of L3 in test)."""
    single = {"train.txt": SINGLE_TRAIN, "test.txt": SINGLE_TEST}
    return lambda n_folds=2: write_letor_folds(tmp_path / "data", n_folds, 8, 5, single)


def _fold_paths(root, k=1):
    return tuple(str(root / f"Fold{k}" / f) for f in ("train.txt", "vali.txt", "test.txt"))


def test_split_puts_every_query_in_exactly_one_set(folds, tmp_path):
    train, _, test = _load_fold(_fold_paths(folds(1)))
    split = split_queries(train, test)
    # every training query is in L1 or L2, never both
    assert sorted(np.concatenate([split.l1, split.l2])) == list(range(train.n_queries))
    assert not set(split.l1) & set(split.l2)
    assert set(SINGLE_TRAIN) <= set(split.l1)
    single = single_grade_queries(train.y, train.query_offsets)
    assert single[split.l1].all()
    assert not single[split.l2].any()
    # test queries: L3 (two grades or more) or left out (one grade)
    assert sorted(np.concatenate([split.l3, split.test_single])) == list(range(test.n_queries))
    assert set(SINGLE_TEST) <= set(split.test_single)
    off = test.query_offsets
    for q in split.l3:
        assert np.unique(test.y[off[q] : off[q + 1]]).size >= 2


def test_preference_pairs_by_hand():
    y = np.array([2.0, 0.0, 1.0, 1.0, 1.0, 0.0, 2.0, 2.0])
    off = np.array([0, 3, 5, 8])
    p = preference_pairs(y, off)
    got = sorted(zip(p.preferred.tolist(), p.other.tolist(), p.tau.tolist(), strict=True))
    # query 0: 2>0, 2>1, 1>0; query 1: one tie only; query 2: 2>0 twice and a tie
    assert got == [(0, 1, 2.0), (0, 2, 1.0), (2, 1, 1.0), (6, 5, 2.0), (7, 5, 2.0)]
    t = preference_pairs(y, off, ties=True)
    got_ties = sorted(zip(t.preferred.tolist(), t.other.tolist(), t.tau.tolist(), strict=True))
    assert got_ties == [(3, 4, 0.0), (6, 7, 0.0)]


def test_precision_at_percent_by_hand():
    # query 0 (y 2, 1, 0; scores 0, 3, 1): pairs by |h(x)-h(y)|: 3 wrong, 2 right, 1 wrong
    # query 1 (y 1, 0; scores 5, 0): 5 right.  Pooled: 5 R, 3 W, 2 R, 1 W.
    y = np.array([2.0, 1.0, 0.0, 1.0, 0.0])
    s = np.array([0.0, 3.0, 1.0, 5.0, 0.0])
    off = np.array([0, 3, 5])
    got = precision_at_percent(s, y, off, (10, 25, 50, 60, 100))
    # top K% = ceil(K * 4 / 100) pairs: 1, 1, 2, 3, 4
    assert got == pytest.approx({"10": 1.0, "25": 1.0, "50": 0.5, "60": 2 / 3, "100": 0.5})
    # a pair with equal scores contradicts
    tie = precision_at_percent(np.array([1.0, 1.0]), np.array([1.0, 0.0]), np.array([0, 2]))
    assert tie["100"] == 0.0


def _small_data(seed=0):
    X, y, q = make_ranking(
        n_queries=6, docs_per_query=7, n_features=4, max_label=2, random_state=seed
    )
    return make_dataset(X, y, qid=q)


def _grad_hess(obj, data, scores):
    g = np.zeros(data.n_samples, dtype=np.float32)
    h = np.zeros(data.n_samples, dtype=np.float32)
    obj.prepare(data)
    obj.gradient_hessian(scores, data, g, h)
    return g, h


@pytest.mark.parametrize("w", [0.5, 1.0])
def test_split_qbrank_equals_qbrank_when_every_query_is_labelled(w):
    """All queries labelled (w < 1) or none (w = 1): the library's QBRank risk."""
    data = _small_data()
    rng = np.random.default_rng(1)
    s = rng.normal(size=data.n_samples)
    delta = rng.normal(size=data.n_samples)
    labelled = np.full(data.n_queries, w < 1.0)
    ours, ref = SplitQBRank(labelled, preference_weight=w), QBRank(preference_weight=w)
    g1, h1 = _grad_hess(ours, data, s)
    g2, h2 = _grad_hess(ref, make_dataset(data.X, data.y, group=data.query_sizes), s)
    np.testing.assert_allclose(g1, g2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h1, h2, rtol=1e-6)
    assert ours.loss(s, data) == pytest.approx(ref.loss(s, data), rel=1e-10)
    assert ours.line_search(s, delta, data) == pytest.approx(
        ref.line_search(s, delta, data), rel=1e-8
    )


@pytest.mark.parametrize("ties", [False, True])
def test_split_qbrank_gradient_matches_finite_differences(ties):
    data = _small_data(3)
    labelled = np.zeros(data.n_queries, dtype=bool)
    labelled[[0, 2]] = True
    obj = SplitQBRank(labelled, preference_weight=0.5, ties=ties)
    s = np.random.default_rng(4).normal(size=data.n_samples)
    g, h = _grad_hess(obj, data, s)
    # W: w per pair a document is in (2w per tie), plus 1 - w on labelled documents
    n = data.n_samples
    pairs = preference_pairs(data.y, data.query_offsets, ties=False)
    w_expected = 0.5 * np.bincount(np.r_[pairs.preferred, pairs.other], minlength=n)
    if ties:
        t = preference_pairs(data.y, data.query_offsets, ties=True)
        w_expected += 1.0 * np.bincount(np.r_[t.preferred, t.other], minlength=n)
    w_expected += 0.5 * np.repeat(labelled, data.query_sizes)
    np.testing.assert_allclose(h, w_expected, rtol=1e-6)
    eps = 1e-6
    for i in range(0, data.n_samples, 5):
        e = np.zeros(data.n_samples)
        e[i] = eps
        fd = (obj.loss(s + e, data) - obj.loss(s - e, data)) / (2 * eps)
        assert g[i] == pytest.approx(fd, rel=1e-4, abs=1e-5)
    # the regression part acts on the labelled queries only: a shift of an unlabelled
    # query's scores leaves R unchanged; a labelled query's does not
    off = data.query_offsets
    s1 = s.copy()
    s1[off[1] : off[2]] += 3.0
    assert obj.loss(s1, data) == pytest.approx(obj.loss(s, data))
    s0 = s.copy()
    s0[off[0] : off[1]] += 3.0
    assert obj.loss(s0, data) > obj.loss(s, data) + 1.0
    if ties:  # ties add w/2 (h(a) - h(b))^2 for every equal-grade pair
        no_ties = SplitQBRank(labelled, preference_weight=0.5)
        t = preference_pairs(data.y, off, ties=True)
        extra = 0.25 * np.sum((s[t.preferred] - s[t.other]) ** 2)
        assert obj.loss(s, data) == pytest.approx(no_ties.loss(s, data) + extra)


def test_six_runs_write_the_report_and_resume(folds, tmp_path):
    root = folds()
    out = tmp_path / "report"
    settings = Settings(n_estimators=3, min_samples_leaf=2, ranksvm_c_grid=(0.1, 1.0))
    summary = run_qbrank_experiment(
        str(root), str(out), settings=settings, n_threads=1, progress=False
    )
    for name in ("table.md", "dcg5.csv", "results.json", "folds/Fold1.json", "folds/Fold2.json"):
        assert (out / name).stat().st_size > 0
    table = (out / "table.md").read_text()
    for run in RUNS:
        assert RUN_NAMES[run] in table
    for k in range(10, 101, 10):
        assert f"| {k}% |" in table
    with open(out / "dcg5.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * (5 * 3 + 1)  # folds x (tree runs x trees + RankSVM)
    assert {r["run"] for r in rows} == set(RUNS)
    res = json.loads((out / "results.json").read_text())
    assert res["folds"] == ["Fold1", "Fold2"]
    assert isinstance(res["per_fold"]["Fold1"]["runs"]["gbt_l2"]["dcg5"], float)
    fold = json.loads((out / "folds" / "Fold1.json").read_text())
    assert fold["queries"]["L1"] >= len(SINGLE_TRAIN)
    assert fold["queries"]["L1"] + fold["queries"]["L2"] == 12
    for run in RUNS:
        r = fold["runs"][run]
        for key in ("precision_vali", "precision_last"):
            assert list(r[key]) == [str(k) for k in range(10, 101, 10)]
            assert all(0.0 <= v <= 1.0 for v in r[key].values())
        if run != "ranksvm_p2":
            # the iteration chosen on validation is the first best one
            vali = r["precision100_vali"]
            assert r["iteration_vali"] == int(np.argmax(vali)) + 1
            assert len(r["dcg5"]) == len(r["precision100_l3"]) == 3
            # precision at 100% after the last tree, two ways
            assert r["precision_last"]["100"] == pytest.approx(r["precision100_l3"][-1])
    assert fold["runs"]["ranksvm_p2"]["C"] in (0.1, 1.0)
    last = [res["per_fold"][f]["runs"]["qbrank_p2"]["precision_last"]["100"] for f in res["folds"]]
    assert summary["precision_after_last_tree_mean_sd"]["qbrank_p2"]["100"][0] == pytest.approx(
        np.mean(last)
    )
    # a rerun with the same settings keeps the finished folds; other settings redo them
    before = os.stat(out / "folds" / "Fold1.json").st_mtime_ns
    run_qbrank_experiment(str(root), str(out), settings=settings, n_threads=1, progress=False)
    assert os.stat(out / "folds" / "Fold1.json").st_mtime_ns == before
    ties = Settings(n_estimators=2, min_samples_leaf=2, ranksvm_c_grid=(1.0,), ties=True)
    with pytest.warns(UserWarning, match="made with n_estimators 3 .this run: 2.*computing it"):
        run_qbrank_experiment(str(root), str(out), settings=ties, n_threads=1, progress=False)
    res2 = json.loads((out / "results.json").read_text())
    assert res2["settings"]["ties"] is True
    fold2 = json.loads((out / "folds" / "Fold1.json").read_text())
    assert len(fold2["runs"]["qbrank_p2"]["dcg5"]) == 2


def test_cli_protocol_qbrank(folds, tmp_path, capsys):
    root = folds(1)
    out = tmp_path / "r"
    argv = ["experiment", str(root), "--protocol", "qbrank", "-o", str(out)]
    rc = main([*argv, "--max-trees", "2", "--min-samples-leaf", "2", "--n-threads", "1", "-q"])
    assert rc == 0
    assert "QBRank(P2∪L1)" in capsys.readouterr().out  # noqa: RUF001
    assert (out / "results.json").exists()


def test_cli_bad_folder_is_one_line(tmp_path, capsys):
    rc = main(["experiment", str(tmp_path / "nowhere"), "--protocol", "qbrank", "-q"])
    assert rc != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("ltrboost: error:")
    assert "nowhere: No such file or directory" in err  # checked before anything is read
    assert len(err.splitlines()) == 1


def test_cli_ties_needs_qbrank(folds, tmp_path, capsys):
    root = folds(1)
    assert main(["experiment", str(root), "--ties", "-q", "-o", str(tmp_path / "x")]) != 0
    assert "--protocol qbrank" in capsys.readouterr().err

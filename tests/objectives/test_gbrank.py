"""GBRank (seed 002): targets against a transcription of the seed's algorithm, kernel vs
NumPy reference, the averaged update through the booster, training and model files."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import Booster, load_model, make_dataset, train
from ltrboost.dataset import PreferencePairs, RankingDataset
from ltrboost.datasets import make_ranking
from ltrboost.metrics import get_metric
from ltrboost.objectives.gbrank import (
    GBRank,
    _gbrank_reference,
    _preference_pairs_reference,
)
from ltrboost.objectives.registry import get_objective

SEEDS = [0, 1, 2]


def make_data(seed, sizes=(1, 2, 4, 6, 9, 5, 4), max_label=3, ties=True, weights=None, pairs=False):
    """Random labels and scores; the last query has one grade, the first one doc."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    y = rng.integers(0, max_label + 1, n).astype(np.float64)
    y[offsets[-2] : offsets[-1]] = 1.0  # all labels equal
    s = rng.normal(size=n) * 0.3
    if ties:
        s = np.round(s * 10) / 10
    w = None
    if weights == "query":
        w = np.repeat(rng.uniform(0.5, 2.0, len(sizes)), sizes).astype(np.float32)
    elif weights == "doc":
        w = rng.uniform(0.5, 2.0, n).astype(np.float32)
    pp = None
    if pairs:
        pref, other = [], []
        for q in range(len(sizes)):
            lo, hi = offsets[q], offsets[q + 1]
            if hi - lo >= 2:
                for _ in range(3):
                    a, b = rng.choice(np.arange(lo, hi), 2, replace=False)
                    pref.append(a)
                    other.append(b)
        pp = PreferencePairs(
            np.array(pref, dtype=np.int32),
            np.array(other, dtype=np.int32),
            rng.uniform(0.0, 2.0, len(pref)),
        )
    data = RankingDataset(X=np.zeros((n, 1)), y=y, query_offsets=offsets, weights=w)
    data.pairs = pp
    return data, s


def grad_hess(obj, s, data):
    g = np.full(data.n_samples, np.nan, dtype=np.float32)
    h = np.full(data.n_samples, np.nan, dtype=np.float32)
    obj.gradient_hessian(s, data, g, h)
    return g, h


def seed_algorithm_targets(h, data, tau):
    """Seed 002, steps 2-3, transcribed with plain loops; repeated documents averaged.

    S holds <x, y> with x preferred: label pairs of each query, then explicit pairs.
    """
    S = []  # (x, y, pair weight, tau of the pair)
    y = data.y
    off = data.query_offsets
    for q in range(data.n_queries):
        for a in range(off[q], off[q + 1]):
            for b in range(off[q], off[q + 1]):
                if y[a] > y[b]:
                    S.append((a, b, 1.0, y[a] - y[b] if tau == "grade_difference" else tau))
    if data.pairs is not None:
        pw = data.pairs.weight
        for k in range(len(data.pairs)):
            t = 1.0 if tau == "grade_difference" else tau
            w = 1.0 if pw is None else float(pw[k])
            S.append((int(data.pairs.preferred[k]), int(data.pairs.other[k]), w, t))
    S_minus = [(x, yy, w, t) for x, yy, w, t in S if h[x] < h[yy] + t and w > 0]
    training_set = []  # (document, target, weight): step 3
    for x, yy, w, t in S_minus:
        training_set.append((x, h[yy] + t, w))
        training_set.append((yy, h[x] - t, w))
    num = {}
    den = {}
    for d, target, w in training_set:
        num[d] = num.get(d, 0.0) + w * target
        den[d] = den.get(d, 0.0) + w
    targets = np.full(data.n_samples, np.nan)
    for d in num:
        targets[d] = num[d] / den[d]
    return targets


# --- hand example and the seed's algorithm --------------------------------------------


def test_hand_example():
    # query 0: y = (2, 1, 0), h = (0, 0.05, 0.3); query 1: y = (1, 0), h = (0, 0)
    y = np.array([2.0, 1.0, 0.0, 1.0, 0.0])
    data = RankingDataset(X=np.zeros((5, 1)), y=y, query_offsets=np.array([0, 3, 5]))
    h = np.array([0.0, 0.05, 0.3, 0.0, 0.0])
    obj = GBRank()  # tau = 0.1, the seed's value
    # every pair is violated; targets h(y) + 0.1 (preferred) and h(x) - 0.1 (other):
    # doc 0: (0.05 + 0.1, 0.3 + 0.1) -> 0.275; doc 1: (0 - 0.1, 0.3 + 0.1) -> 0.15;
    # doc 2: (0 - 0.1, 0.05 - 0.1) -> -0.075; docs 3, 4: 0.1, -0.1
    expected = np.array([0.275, 0.15, -0.075, 0.1, -0.1])
    targets, weight = obj.regression_targets(h, data)
    np.testing.assert_allclose(targets, expected, rtol=1e-12)
    np.testing.assert_array_equal(weight, [2, 2, 2, 1, 1])
    g, hess = grad_hess(obj, h, data)
    np.testing.assert_allclose(g, -expected, rtol=1e-6)
    np.testing.assert_array_equal(hess, 1.0)
    # margins m = h(y) - h(x) + tau: 0.15, 0.4, 0.35 and 0.1
    assert obj.loss(h, data) == pytest.approx(0.5 * (0.15**2 + 0.4**2 + 0.35**2 + 0.1**2))
    # raise doc 0 to 0.5: its pairs are satisfied, only (1, 2) and query 1 remain
    h2 = np.array([0.5, 0.05, 0.3, 0.0, 0.0])
    targets, weight = obj.regression_targets(h2, data)
    np.testing.assert_allclose(targets, [np.nan, 0.4, -0.05, 0.1, -0.1], rtol=1e-12)
    g, hess = grad_hess(obj, h2, data)
    assert g[0] == 0  # no target: no part in the fit
    assert hess[0] == 0


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tau", [0.1, 0.7, "grade_difference"])
@pytest.mark.parametrize("pairs", [False, True])
def test_targets_match_seed_algorithm(seed, tau, pairs):
    data, h = make_data(seed, pairs=pairs)
    obj = GBRank(tau=tau)
    expected = seed_algorithm_targets(h, data, tau)
    targets, weight = obj.regression_targets(h, data)
    np.testing.assert_allclose(targets, expected, rtol=1e-12, atol=1e-15)
    assert np.array_equal(np.isnan(targets), weight == 0)
    g, hess = grad_hess(obj, h, data)
    has = ~np.isnan(expected)
    np.testing.assert_array_equal(hess, has.astype(np.float32))
    np.testing.assert_allclose(-g[has] / hess[has], expected[has], rtol=1e-6, atol=1e-7)
    assert np.all(g[~has] == 0)
    # one-document and one-label queries have no targets without explicit pairs
    if not pairs:
        off = data.query_offsets
        for q in (0, data.n_queries - 1):
            assert np.all(hess[off[q] : off[q + 1]] == 0)


# --- kernel vs reference --------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tau", [0.1, "grade_difference"])
@pytest.mark.parametrize("weights", [None, "query", "doc"])
@pytest.mark.parametrize(("pairs", "use_label_pairs"), [(False, None), (True, None), (True, False)])
def test_kernel_matches_reference(seed, tau, weights, pairs, use_label_pairs):
    data, s = make_data(seed, weights=weights, pairs=pairs)
    obj = GBRank(tau=tau, use_label_pairs=use_label_pairs)
    pp = data.pairs
    x, y, om, tp = _preference_pairs_reference(
        data.y,
        data.query_offsets,
        use_label_pairs is not False,
        tau,
        *((pp.preferred, pp.other, pp.weight) if pp is not None else ()),
    )
    rg, rh, rt, rw, rloss = _gbrank_reference(s, x, y, om, tp, data.weights)
    g, h = grad_hess(obj, s, data)
    np.testing.assert_allclose(g, rg, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h, rh, rtol=1e-6)
    t, w = obj.regression_targets(s, data)
    np.testing.assert_allclose(t, rt, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(w, rw, rtol=1e-12)
    assert obj.loss(s, data) == pytest.approx(rloss, rel=1e-12, abs=1e-15)


def test_no_violated_pair_gives_nothing():
    y = np.array([2.0, 1.0, 0.0])
    data = RankingDataset(X=np.zeros((3, 1)), y=y, query_offsets=np.array([0, 3]))
    s = np.array([1.0, 0.5, 0.0])  # gaps 0.5 >= tau
    g, h = grad_hess(GBRank(), s, data)
    assert np.all(g == 0)
    assert np.all(h == 0)
    assert GBRank().loss(s, data) == 0.0
    # grade differences 1 and 2 as margins: now (0, 1) and (1, 2) are violated
    assert GBRank(tau="grade_difference").loss(s, data) == pytest.approx(
        0.5 * (0.5**2 + 0.5**2 + 1.0**2)
    )


def test_explicit_pairs_add_and_weight():
    # query 1 (rows 3-5) has one grade: it learns from its explicit pair only
    y = np.array([1.0, 0.0, 0.0, 2.0, 2.0, 2.0])
    off = np.array([0, 3, 6])
    s = np.zeros(6)
    pairs = PreferencePairs(np.array([4, 1]), np.array([3, 2]), np.array([3.0, 1.0]))
    data = RankingDataset(X=np.zeros((6, 1)), y=y, query_offsets=off, pairs=pairs)
    t, w = GBRank(tau=0.2).regression_targets(s, data)
    # doc 1: label pair (0 > 1) target -0.2 (w 1), explicit (1 > 2) target +0.2 (w 1)
    # doc 2: (0 > 2) and (1 > 2), both -0.2; doc 3: explicit (4 > 3) with weight 3,
    # target -0.2; doc 4: +0.2; doc 5: none
    np.testing.assert_allclose(t[:5], [0.2, 0.0, -0.2, -0.2, 0.2], atol=1e-15)
    np.testing.assert_allclose(w, [2.0, 2.0, 2.0, 3.0, 3.0, 0.0])
    assert np.isnan(t[5])
    only_pairs = GBRank(tau=0.2, use_label_pairs=False)
    _, w2 = only_pairs.regression_targets(s, data)
    np.testing.assert_allclose(w2, [0.0, 1.0, 1.0, 3.0, 3.0, 0.0])
    # weighted loss: label pairs 0>1, 0>2 (margin 0.2), explicit 4>3 (w 3), 1>2 (w 1)
    assert GBRank(tau=0.2).loss(s, data) == pytest.approx(0.5 * 0.04 * (1 + 1 + 3 + 1))


# --- parameters -----------------------------------------------------------------------


def test_registry_attributes_and_params():
    obj = get_objective("gbrank", tau="grade_difference")
    assert isinstance(obj, GBRank)
    assert obj.update_rule == "averaged"
    assert obj.leaf_rule == "mean_target"
    assert not obj.is_pairwise
    assert not obj.hessian_is_constant
    assert GBRank().get_params() == {"tau": 0.1, "use_label_pairs": None}
    rebuilt = get_objective("gbrank", **GBRank(tau=0.3).get_params())
    assert rebuilt.get_params() == {"tau": 0.3, "use_label_pairs": None}
    data, s = make_data(0)
    assert obj.pair_terms(s, data) is None
    assert obj.init_score(data).tolist() == [0.0]


@pytest.mark.parametrize("tau", [0, -0.1, float("nan"), float("inf"), "grade", True, None])
def test_bad_tau(tau):
    with pytest.raises(ValueError, match="tau"):
        GBRank(tau=tau)


def test_bad_inputs():
    with pytest.raises(ValueError, match="use_label_pairs"):
        GBRank(use_label_pairs="yes")
    off = np.array([0, 3])
    no_labels = RankingDataset(X=np.zeros((3, 1)), y=None, query_offsets=off)
    with pytest.raises(ValueError, match="neither"):
        GBRank().prepare(no_labels)
    with pytest.raises(ValueError, match="use_label_pairs=True"):
        GBRank(use_label_pairs=True).prepare(no_labels)
    bad_pair = RankingDataset(
        X=np.zeros((3, 1)),
        y=np.zeros(3),
        query_offsets=off,
        pairs=PreferencePairs(np.array([1]), np.array([1])),
    )
    with pytest.raises(ValueError, match="preferred to itself"):
        GBRank().prepare(bad_pair)
    data, s = make_data(0)
    with pytest.raises(ValueError, match="shape"):
        GBRank().gradient_hessian(
            s[:-1], data, np.zeros(s.size, np.float32), np.zeros(s.size, np.float32)
        )


# --- the averaged update through the booster ------------------------------------------


def _tiny_data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(24, 3))
    y = np.clip(np.round(X[:, 0] + 0.5 * rng.normal(size=24) + 1), 0, 3)
    return make_dataset(X, y, group=[6, 5, 7, 6])


def _tree_output(booster, k, X):
    one = Booster(
        objective=booster.objective,
        objective_params=booster.objective_params,
        init_score=np.zeros(1),
        trees=[booster.trees[k]],
        tree_outputs=[0],
        n_features=booster.n_features,
    )
    return one.predict_raw(X)[0]


@pytest.mark.parametrize("learning_rate", [1.0, 0.3])
def test_averaged_update_is_the_seed_recursion(learning_rate):
    data = _tiny_data()
    eta = learning_rate
    booster = train(
        dict(
            objective="gbrank",
            n_estimators=3,
            learning_rate=eta,
            max_leaf_nodes=4,
            min_samples_leaf=1,
        ),
        data,
    )
    X = data.X
    F0 = float(booster.init_score[0])
    assert F0 == 0.0
    F_prev = np.full(data.n_samples, F0)
    total = np.full(data.n_samples, F0)
    obj = GBRank()
    for k in range(1, 4):
        tree_k = _tree_output(booster, k - 1, X)  # eta * g_k
        # each leaf is eta times the mean target (at F_{k-1}) of its targeted documents
        targets = seed_algorithm_targets(F_prev, data, 0.1)
        for value in np.unique(tree_k):
            in_leaf = (tree_k == value) & ~np.isnan(targets)
            assert in_leaf.any()
            assert value == pytest.approx(eta * targets[in_leaf].mean(), rel=1e-6)
        F_k = (k * F_prev + tree_k) / (k + 1)  # h_k = (k h_{k-1} + eta g_k) / (k + 1)
        total += tree_k
        raw = booster.predict_raw(X, iteration=k)[0]
        np.testing.assert_allclose(raw, F_k, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(raw, total / (k + 1), rtol=1e-12, atol=1e-15)
        F_prev = F_k
    # the targets the booster fed the objective at round 3 were computed at F_2
    assert obj.loss(F_prev, data) < obj.loss(np.zeros(data.n_samples), data)


def test_min_samples_leaf_counts_untargeted_documents():
    data = _tiny_data()
    booster = train(
        dict(objective="gbrank", n_estimators=8, learning_rate=2.0, min_samples_leaf=1),
        data,
    )
    partly = 0
    for k in range(booster.n_iterations):
        F = booster.predict_raw(data.X, iteration=k)[0]  # the scores tree k was fit at
        _, weight = GBRank().regression_targets(F, data)
        n_targeted = int(np.sum(weight > 0))
        partly += 0 < n_targeted < data.n_samples
        root = booster.trees[k][0]
        assert root["count"] == data.n_samples  # every document is counted
        assert root["sum_hessians"] == pytest.approx(n_targeted)  # H: targeted ones
    assert partly > 0  # some rounds had documents without a target


def test_small_learning_rate_keeps_every_pair_violated():
    # one pair fitted exactly: the gap follows d_k = ((k - eta) d_{k-1} + 2 eta tau)
    # / (k + 1), whose limit 2 eta tau / (1 + eta) is below tau for eta < 1
    y = np.array([1.0, 0.0])
    data = RankingDataset(X=np.zeros((2, 1)), y=y, query_offsets=np.array([0, 2]))
    obj = GBRank(tau=0.1)
    for eta in (0.1, 0.5):
        h = np.zeros(2)
        for k in range(1, 3000):
            t, _ = obj.regression_targets(h, data)
            h = (k * h + eta * t) / (k + 1)
        assert h[0] - h[1] == pytest.approx(2 * eta * 0.1 / (1 + eta), rel=1e-2)


# --- training, model files ------------------------------------------------------------


def test_train_improves_ndcg_and_round_trips(tmp_path):
    X, y, qid = make_ranking(60, 15, 8, noise=0.5, random_state=11)
    tr = qid < 40
    train_set = make_dataset(X[tr], y[tr], qid=qid[tr])
    valid_set = make_dataset(X[~tr], y[~tr], qid=qid[~tr])
    booster = train(
        dict(
            objective="gbrank",
            n_estimators=15,
            learning_rate=1.0,
            max_leaf_nodes=8,
            min_samples_leaf=5,
            eval_metric="ndcg@10",
        ),
        train_set,
        [("valid", valid_set)],
    )
    assert booster.update_rule == "averaged"
    ndcg = get_metric("ndcg@10")
    at_init = ndcg(booster.predict(valid_set.X, iteration=0), valid_set.y, valid_set.query_offsets)
    final = ndcg(booster.predict(valid_set.X), valid_set.y, valid_set.query_offsets)
    assert final > at_init + 0.02
    assert booster.evals_result["valid"]["ndcg@10"][-1] == pytest.approx(final)
    path = tmp_path / "gbrank.json"
    booster.save_model(str(path))
    loaded = load_model(path)
    assert loaded.update_rule == "averaged"
    for it in (1, 7, 15):
        assert (
            loaded.predict_raw(valid_set.X, iteration=it).tobytes()
            == booster.predict_raw(valid_set.X, iteration=it).tobytes()
        )
    assert loaded.predict(valid_set.X).tobytes() == booster.predict(valid_set.X).tobytes()

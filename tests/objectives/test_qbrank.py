"""QBRank (seed 004, Algorithm 2): finite differences of loss(), Algorithm 2's training
set transcribed, kernel vs NumPy reference, the line search, training."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ltrboost import make_dataset, train
from ltrboost.dataset import PreferencePairs, RankingDataset
from ltrboost.datasets import make_ranking
from ltrboost.metrics import get_metric
from ltrboost.objectives.gbrank import _preference_pairs_reference
from ltrboost.objectives.qbrank import (
    QBRank,
    _minimise_convex_piecewise_quadratic,
    _qbrank_line_search_reference,
    _qbrank_reference,
)
from ltrboost.objectives.registry import get_objective

SEEDS = [0, 1, 2]


def make_data(seed, sizes=(1, 2, 4, 6, 9, 5, 4), ties=True, weights=None, pairs=False):
    """Random grades 0..3 and scores; the last query has one grade, the first 1 doc."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    y = rng.integers(0, 4, n).astype(np.float64)
    y[offsets[-2] : offsets[-1]] = 1.0
    s = rng.normal(size=n) + 1.0
    if ties:
        s = np.round(s * 4) / 4
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


def reference(obj, data, s, use_label_pairs=True):
    p = obj.get_params()
    pp = data.pairs
    x, y, om, tp = _preference_pairs_reference(
        data.y,
        data.query_offsets,
        use_label_pairs,
        p["tau"],
        *((pp.preferred, pp.other, pp.weight) if pp is not None else ()),
    )
    return x, y, om, tp


def away_from_kinks(obj, data, rng, eps=1e-3):
    """Scores whose pair margins are all at least ``eps`` away from 0."""
    x, y, _, tp = reference(obj, data, np.zeros(data.n_samples))
    for _ in range(1000):
        s = rng.normal(size=data.n_samples) + 1.0
        if x.size == 0 or np.min(np.abs(s[y] - s[x] + tp)) > 10 * eps:
            return s
    raise AssertionError("no score vector away from the hinge kinks")


# --- finite differences ---------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("w", [0.0, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("tau", ["grade_difference", 0.5])
@pytest.mark.parametrize("weights", [None, "query", "doc"])
def test_gradients_hessians_numerically(seed, w, tau, weights):
    data, _ = make_data(seed, weights=weights, pairs=seed == 2)
    obj = QBRank(preference_weight=w, tau=tau)
    s = away_from_kinks(obj, data, np.random.default_rng(seed + 10))
    g, h = grad_hess(obj, s, data)
    eps1, eps2 = 1e-5, 1e-4
    num_g = np.empty(s.size)
    num_h = np.empty(s.size)
    f0 = obj.loss(s, data)
    for k in range(s.size):
        e = np.zeros(s.size)
        e[k] = eps1
        num_g[k] = (obj.loss(s + e, data) - obj.loss(s - e, data)) / (2 * eps1)
        e[k] = eps2
        num_h[k] = (obj.loss(s + e, data) - 2 * f0 + obj.loss(s - e, data)) / eps2**2
    scale = max(1.0, np.abs(num_g).max())
    np.testing.assert_allclose(g, num_g, rtol=1e-5, atol=1e-6 * scale)
    assert np.abs(g).max() > 0
    # h is Algorithm 2's W: the exact diagonal plus w * (weight of satisfied pairs), a
    # pair weighing omega (nu_x + nu_y) / 2
    x, y, om, tp = reference(obj, data, s)
    nu = np.ones(s.size) if data.weights is None else data.weights.astype(np.float64)
    satisfied = s[y] - s[x] + tp <= 0
    c = (w * om * 0.5 * (nu[x] + nu[y]))[satisfied]
    extra = np.zeros(s.size)
    np.add.at(extra, x[satisfied], c)
    np.add.at(extra, y[satisfied], c)
    np.testing.assert_allclose(h, num_h + extra, rtol=1e-4, atol=1e-4)
    assert np.all(h >= num_h - 1e-4)


def test_hessian_does_not_depend_on_scores():
    data, s = make_data(0, pairs=True)
    obj = QBRank()
    assert obj.hessian_is_constant
    _, h1 = grad_hess(obj, s, data)
    _, h2 = grad_hess(obj, s[::-1].copy() * 3.0, data)
    np.testing.assert_array_equal(h1, h2)


# --- Algorithm 2 transcribed ----------------------------------------------------------


def algorithm2_training_set(h, data, w, tau):
    """Step 1 of seed 004's Algorithm 2, literally: (document, target, weight) entries.

    Every pair of S adds (x, max{0, h(y) - h(x) + tau}) and (y, -max{...}) with weight
    w; every labelled z adds (z, l - h(z)) with weight 1 - w.
    """
    S = []
    y = data.y
    off = data.query_offsets
    for q in range(data.n_queries):
        for a in range(off[q], off[q + 1]):
            for b in range(off[q], off[q + 1]):
                if y[a] > y[b]:
                    S.append((a, b, 1.0, y[a] - y[b] if tau == "grade_difference" else tau))
    if data.pairs is not None:
        for k in range(len(data.pairs)):
            pw = 1.0 if data.pairs.weight is None else float(data.pairs.weight[k])
            t = 1.0 if tau == "grade_difference" else tau
            S.append((int(data.pairs.preferred[k]), int(data.pairs.other[k]), pw, t))
    entries = []
    for x, yy, pw, t in S:
        v = max(0.0, h[yy] - h[x] + t)
        entries.append((x, v, w * pw))
        entries.append((yy, -v, w * pw))
    for z in range(data.n_samples):
        entries.append((z, y[z] - h[z], 1.0 - w))
    return entries


def test_algorithm2_hand_example():
    # one query, grades (2, 1, 0), h = (0, 0.5, 0.2), w = 0.5, tau = grade difference
    y = np.array([2.0, 1.0, 0.0])
    data = RankingDataset(X=np.zeros((3, 1)), y=y, query_offsets=np.array([0, 3]))
    h = np.array([0.0, 0.5, 0.2])
    obj = QBRank(preference_weight=0.5)
    # pairs: (0>1) m = 0.5 - 0 + 1 = 1.5; (0>2) m = 0.2 + 2 = 2.2; (1>2) m = 0.2 - 0.5
    # + 1 = 0.7.  Entries (target, weight):
    #   doc 0: (1.5, .5) (2.2, .5) (2 - 0, .5)     -> average 5.7 / 3 = 1.9
    #   doc 1: (-1.5, .5) (0.7, .5) (1 - .5, .5)   -> average -0.3 / 3 = -0.1
    #   doc 2: (-2.2, .5) (-0.7, .5) (0 - .2, .5)  -> average -3.1 / 3
    expected = np.array([1.9, -0.1, -3.1 / 3])
    g, hess = grad_hess(obj, h, data)
    np.testing.assert_allclose(hess, 1.5)
    np.testing.assert_allclose(-g / hess, expected, rtol=1e-6)
    R = 0.5 / 2 * (1.5**2 + 2.2**2 + 0.7**2) + 0.5 / 2 * (2**2 + 0.5**2 + 0.2**2)
    assert obj.loss(h, data) == pytest.approx(R)
    # a satisfied pair still adds an entry with target 0 and weight w
    h2 = np.array([3.0, 0.5, 0.2])  # (0>1), (0>2) satisfied
    g2, hess2 = grad_hess(obj, h2, data)
    np.testing.assert_allclose(hess2, 1.5)
    np.testing.assert_allclose(-g2[0] / hess2[0], (0 + 0 + 0.5 * (2 - 3)) / 1.5)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("w", [0.0, 0.5, 0.8, 1.0])
@pytest.mark.parametrize("tau", ["grade_difference", 0.3])
def test_targets_match_algorithm2(seed, w, tau):
    data, h = make_data(seed, pairs=seed > 0)
    obj = QBRank(preference_weight=w, tau=tau)
    entries = algorithm2_training_set(h, data, w, tau)
    num = np.zeros(data.n_samples)
    den = np.zeros(data.n_samples)
    for d, target, weight in entries:
        num[d] += weight * target
        den[d] += weight
    g, hess = grad_hess(obj, h, data)
    np.testing.assert_allclose(hess, den, rtol=1e-6)
    has = den > 0
    # the remark: one target per distinct document, the average of its entries
    np.testing.assert_allclose(-g[has] / hess[has], num[has] / den[has], rtol=1e-5, atol=1e-6)
    # and a leaf's Newton value is the least-squares fit of the literal entries
    rng = np.random.default_rng(seed)
    leaf_of = rng.integers(0, 3, data.n_samples)
    for leaf in range(3):
        in_leaf = leaf_of == leaf
        e = [(t, wt) for d, t, wt in entries if in_leaf[d]]
        wsum = sum(wt for _, wt in e)
        if wsum == 0:
            continue
        fit = sum(t * wt for t, wt in e) / wsum  # argmin_v sum wt (v - t)^2
        newton = -float(np.sum(g[in_leaf], dtype=np.float64)) / float(
            np.sum(hess[in_leaf], dtype=np.float64)
        )
        assert newton == pytest.approx(fit, rel=1e-5, abs=1e-6)


def test_single_grade_queries_learn_from_the_labelled_part():
    y = np.array([2.0, 2.0, 2.0, 0.0, 0.0])  # two queries, one grade each
    data = RankingDataset(X=np.zeros((5, 1)), y=y, query_offsets=np.array([0, 3, 5]))
    s = np.zeros(5)
    g, h = grad_hess(QBRank(preference_weight=0.5), s, data)
    np.testing.assert_allclose(g, [-1.0, -1.0, -1.0, 0.0, 0.0])  # -(1-w)(l - s)
    np.testing.assert_allclose(h, 0.5)
    g1, h1 = grad_hess(QBRank(preference_weight=1.0), s, data)
    assert np.all(g1 == 0)
    assert np.all(h1 == 0)
    # no pair in any query: QBRank is gradient boosting on the labels (seed 004: "When
    # there is no preference data ... QBRank is identical to GBT"); the line search
    # then returns 1 for every tree, the exact step of a quadratic along Newton leaves
    X = np.arange(20, dtype=np.float64).reshape(-1, 1)
    y20 = np.repeat([2.0, 0.0], 10)
    ds = make_dataset(X, y20, group=[10, 10])
    params = dict(n_estimators=5, min_samples_leaf=2)
    pred = train(dict(params, objective="qbrank"), ds).predict(X)
    gbt = train(dict(params, objective="mart"), ds).predict(X)
    np.testing.assert_allclose(pred, gbt, rtol=1e-6)  # float32 g, h differ
    assert pred[:9].min() > pred[10:].max()


def test_explicit_pairs_with_labelled_part():
    # query 1 has one grade; its explicit pair is its only preference
    y = np.array([1.0, 0.0, 2.0, 2.0])
    pairs = PreferencePairs(np.array([3]), np.array([2]), np.array([2.0]))
    data = RankingDataset(X=np.zeros((4, 1)), y=y, query_offsets=np.array([0, 2, 4]), pairs=pairs)
    s = np.array([0.0, 0.0, 2.0, 2.0])
    w = 0.4
    g, h = grad_hess(QBRank(preference_weight=w), s, data)
    # label pair (0>1), tau = 1, m = 1; explicit (3>2), tau = 1 (explicit), omega = 2
    np.testing.assert_allclose(g, [-w * 1 - (1 - w) * 1, w * 1, 2 * w * 1, -2 * w * 1], rtol=1e-6)
    np.testing.assert_allclose(h, [w + 1 - w, w + 1 - w, 2 * w + 1 - w, 2 * w + 1 - w])
    g2, h2 = grad_hess(QBRank(preference_weight=w, use_label_pairs=False), s, data)
    np.testing.assert_allclose(g2, [-(1 - w), 0, 2 * w, -2 * w], rtol=1e-6)
    np.testing.assert_allclose(h2, [1 - w, 1 - w, 2 * w + 1 - w, 2 * w + 1 - w])


# --- kernel vs reference --------------------------------------------------------------


@pytest.mark.seed_per_case(
    SEEDS, w=[0.0, 0.5, 1.0], tau=["grade_difference", 0.5], weights=[None, "doc"]
)
@pytest.mark.parametrize(("pairs", "use_label_pairs"), [(False, None), (True, None), (True, False)])
def test_kernel_matches_reference(seed, w, tau, weights, pairs, use_label_pairs):
    data, s = make_data(seed, weights=weights, pairs=pairs)
    obj = QBRank(preference_weight=w, tau=tau, use_label_pairs=use_label_pairs)
    x, y, om, tp = reference(obj, data, s, use_label_pairs is not False)
    rg, rh, rloss = _qbrank_reference(s, data.y, x, y, om, tp, w, data.weights)
    g, h = grad_hess(obj, s, data)
    np.testing.assert_allclose(g, rg, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h, rh, rtol=1e-6, atol=1e-7)
    assert obj.loss(s, data) == pytest.approx(rloss, rel=1e-12, abs=1e-14)
    # phi and its derivatives along a direction, against loss() and its differences
    delta = np.random.default_rng(seed).normal(size=s.size)
    for a in (0.0, 0.37, 1.5):
        phi, d1, d2 = obj._run(s, delta, a, data)
        assert phi == pytest.approx(obj.loss(s + a * delta, data), rel=1e-12)
        e = 1e-6
        num = obj.loss(s + (a + e) * delta, data) - obj.loss(s + (a - e) * delta, data)
        assert d1 == pytest.approx(num / (2 * e), rel=1e-5, abs=1e-6)
        assert d2 >= 0


# --- line search ----------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("w", [0.0, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("tau", ["grade_difference", 0.5])
@pytest.mark.parametrize("weights", [None, "doc"])
def test_line_search_finds_the_minimiser(seed, w, tau, weights):
    data, s = make_data(seed, ties=False, weights=weights, pairs=seed == 1)
    obj = QBRank(preference_weight=w, tau=tau)
    g, h = grad_hess(obj, s, data)
    rng = np.random.default_rng(seed + 100)
    # a Newton-like direction, deliberately mis-scaled per document
    delta = -g / np.maximum(h, 1e-12) * rng.uniform(0.2, 3.0, s.size)
    alpha = obj.line_search(s, delta, data)
    x, y, om, tp = reference(obj, data, s)
    exact = _qbrank_line_search_reference(s, delta, data.y, x, y, om, tp, w, data.weights)
    assert alpha == pytest.approx(exact, rel=1e-9, abs=1e-12)
    # independently of the reference: R(s + a delta) is convex in a (squared hinges and
    # squares), so no step within `step` of alpha being lower puts the minimiser within
    # `step` of alpha (a 3001-point grid's resolution); a coarse grid checks the rest
    step = 3.0 * max(alpha, 0.1) / 3000
    phi = obj.loss(s + alpha * delta, data)
    grid = np.concatenate([np.linspace(0.0, 3.0 * max(alpha, 0.1), 31), [alpha + step]])
    if alpha >= step:
        grid = np.append(grid, alpha - step)
    values = np.array([obj.loss(s + a * delta, data) for a in grid])
    assert phi <= values.min() + 1e-12 * abs(values.min())
    assert alpha > 0


def test_line_search_no_descent_gives_zero():
    data, s = make_data(0)
    obj = QBRank()
    g, _ = grad_hess(obj, s, data)
    assert obj.line_search(s, g.astype(np.float64), data) == 0.0  # ascent direction
    assert obj.line_search(s, np.zeros(s.size), data) == 0.0
    with pytest.raises(ValueError, match="non-finite"):
        obj.line_search(s, np.full(s.size, np.nan), data)


def test_line_search_pure_regression_is_closed_form():
    data, s = make_data(1)
    obj = QBRank(preference_weight=0.0)
    delta = np.random.default_rng(0).normal(size=s.size)
    r = data.y - s
    assert obj.line_search(s, delta, data) == pytest.approx(
        max(0.0, r @ delta / (delta @ delta)), rel=1e-12
    )


def test_minimiser_crosses_flat_pieces_and_terminates():
    # phi(a) = -a + 1/2 max(0, a - 3)^2: phi'' = 0 on [0, 3), minimum at a = 4
    def phi(a):
        return -a + 0.5 * max(0.0, a - 3.0) ** 2, -1.0 + max(0.0, a - 3.0), float(a > 3)

    assert _minimise_convex_piecewise_quadratic(phi) == pytest.approx(4.0, rel=1e-12)

    # many hinges: phi(a) = sum_k 1/2 max(0, a - k)^2 - 10 a, piecewise quadratic
    knots = np.linspace(0.0, 5.0, 50)

    def many(a):
        v = np.maximum(a - knots, 0.0)
        return 0.5 * v @ v - 10 * a, v.sum() - 10.0, float(np.sum(a > knots))

    alpha = _minimise_convex_piecewise_quadratic(many)
    assert many(alpha)[1] == pytest.approx(0.0, abs=1e-9)

    # unbounded below: stops after the evaluation budget with the best point seen
    evals = []

    def linear(a):
        evals.append(a)
        return -a, -1.0, 0.0

    alpha = _minimise_convex_piecewise_quadratic(linear, max_eval=20)
    assert len(evals) == 20
    assert alpha == max(evals)


def test_booster_steps_by_the_line_search():
    # one round: the tree the booster adds is eta * alpha * delta with alpha the
    # minimiser of R along delta, so R(F0 + c u) with u = tree / eta is least at c = 1
    X, y, qid = make_ranking(20, 10, 5, random_state=4)
    ds = make_dataset(X, y, qid=qid)
    eta = 0.5
    b = train(
        dict(objective="qbrank", n_estimators=1, learning_rate=eta, max_leaf_nodes=6),
        ds,
    )
    obj = QBRank()
    F0 = np.full(ds.n_samples, b.init_score[0])
    assert b.init_score[0] == pytest.approx(y.mean())
    u = (b.predict_raw(X)[0] - F0) / eta
    assert np.abs(u).max() > 0
    assert obj.line_search(F0, u, ds) == pytest.approx(1.0, rel=1e-9)


# --- parameters -----------------------------------------------------------------------


def test_registry_attributes_and_params():
    obj = get_objective("qbrank", preference_weight=0.25, tau=0.5)
    assert isinstance(obj, QBRank)
    assert obj.leaf_rule == "line_search"
    assert obj.update_rule == "additive"
    assert not obj.is_pairwise
    assert QBRank().get_params() == {
        "preference_weight": 0.5,
        "tau": "grade_difference",
        "use_label_pairs": None,
        "init": "mean",
    }
    rebuilt = get_objective("qbrank", **obj.get_params())
    assert rebuilt.get_params() == obj.get_params()
    data, s = make_data(0, weights="doc")
    assert obj.pair_terms(s, data) is None
    wts = data.weights.astype(np.float64)
    assert obj.init_score(data)[0] == pytest.approx(wts @ data.y / wts.sum())
    assert QBRank(init="zero").init_score(data).tolist() == [0.0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(preference_weight=-0.1), "preference_weight"),
        (dict(preference_weight=1.5), "preference_weight"),
        (dict(preference_weight=math.nan), "preference_weight"),
        (dict(preference_weight=True), "preference_weight"),
        (dict(preference_weight="half"), "preference_weight"),
        (dict(tau=0.0), "tau"),
        (dict(tau=-1), "tau"),
        (dict(tau="grades"), "tau"),
        (dict(use_label_pairs=1), "use_label_pairs"),
        (dict(init="median"), "init"),
    ],
)
def test_bad_params(kwargs, match):
    with pytest.raises(ValueError, match=match):
        QBRank(**kwargs)


def test_bad_data():
    off = np.array([0, 3])
    no_labels = RankingDataset(X=np.zeros((3, 1)), y=None, query_offsets=off)
    with pytest.raises(ValueError, match="neither"):
        QBRank().prepare(no_labels)
    with pytest.raises(ValueError, match="use_label_pairs=True"):
        QBRank(use_label_pairs=True).prepare(no_labels)
    # labels alone suffice for the labelled part, unless w = 1
    labelled = RankingDataset(X=np.zeros((3, 1)), y=np.ones(3), query_offsets=off)
    QBRank(use_label_pairs=False).prepare(labelled)
    with pytest.raises(ValueError, match="preference_weight=1 gives the labels no weight"):
        QBRank(use_label_pairs=False, preference_weight=1.0).prepare(
            RankingDataset(X=np.zeros((3, 1)), y=np.ones(3), query_offsets=off)
        )
    nan_label = RankingDataset(
        X=np.zeros((3, 1)), y=np.array([1.0, np.nan, 0.0]), query_offsets=off
    )
    with pytest.raises(ValueError, match="not finite"):
        QBRank().prepare(nan_label)


def test_pairs_only_dataset_without_labels():
    off = np.array([0, 3])
    pairs = PreferencePairs(np.array([2, 1]), np.array([0, 0]))
    data = RankingDataset(X=np.zeros((3, 1)), y=None, query_offsets=off, pairs=pairs)
    obj = QBRank(tau=0.5)
    assert obj.init_score(data).tolist() == [0.0]
    g, h = grad_hess(obj, np.zeros(3), data)
    np.testing.assert_allclose(g, [0.5, -0.25, -0.25])  # w * 0.5 per violated pair
    np.testing.assert_allclose(h, [1.0, 0.5, 0.5])


# --- training -------------------------------------------------------------------------


def test_train_improves_ndcg_and_is_deterministic():
    X, y, qid = make_ranking(60, 15, 8, noise=0.5, random_state=12)
    tr = qid < 40
    train_set = make_dataset(X[tr], y[tr], qid=qid[tr])
    valid_set = make_dataset(X[~tr], y[~tr], qid=qid[~tr])
    params = dict(
        objective="qbrank",
        n_estimators=20,
        max_leaf_nodes=8,
        min_samples_leaf=5,
        eval_metric="ndcg@10",
    )
    boosters = [
        train(dict(params, n_threads=t), train_set, [("valid", valid_set)]) for t in (1, 2, 2)
    ]
    ndcg = get_metric("ndcg@10")
    b = boosters[0]
    at_init = ndcg(b.predict(valid_set.X, iteration=0), valid_set.y, valid_set.query_offsets)
    final = ndcg(b.predict(valid_set.X), valid_set.y, valid_set.query_offsets)
    assert final > at_init + 0.05
    hist = b.evals_result["valid"]["ndcg@10"]
    assert hist[-1] > hist[0]
    for other in boosters[1:]:
        assert other.predict_raw(valid_set.X).tobytes() == b.predict_raw(valid_set.X).tobytes()
        assert other.evals_result == b.evals_result
    # the risk decreases round by round on the training set (line search, eta = 0.1)
    obj = QBRank()
    risks = [obj.loss(b.predict_raw(train_set.X, iteration=k)[0], train_set) for k in range(21)]
    assert all(r1 < r0 for r0, r1 in itertools.pairwise(risks))

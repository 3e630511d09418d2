"""Two objectives whose gradient was not the derivative of the loss they report.

* ``rankboost``: the exponent of ``exp(s_j - s_i)`` was clipped at ``EXP_CLIP = 50`` in
  the loss, the gradient and the hessian alike, so past the clip the loss was the
  constant ``exp(50)`` while the gradient stayed ``exp(50)`` and the hessian ``exp(50)``:
  a finite difference of the loss gave 0 where the gradient said 5e21.  Past the clip the
  loss now continues as the second-order Taylor polynomial of ``exp`` at the clip (a
  "Huberised" exponential), whose first and second derivatives the engine returns.
* ``qbrank`` with per-document weights: the loss and the line search weighed a pair by
  ``(nu_x + nu_y) / 2`` (the package's pair convention) while the gradient weighed each
  document's share of the pair by its own ``nu``; the tree was fitted to a direction
  that is not the gradient of the risk the line search minimised.  The gradient and
  Algorithm 2's ``W`` now use the pair weight too.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

from ltrboost import make_dataset, train
from ltrboost.dataset import PreferencePairs, RankingDataset
from ltrboost.objectives.gbrank import _preference_pairs_reference
from ltrboost.objectives.pair_engine import EXP_CLIP, pair_engine_reference
from ltrboost.objectives.qbrank import QBRank, _qbrank_line_search_reference, _qbrank_reference
from ltrboost.objectives.rankboost import RankBoost


def _grad_hess(obj, s, data):
    g = np.full(data.n_samples, np.nan, dtype=np.float32)
    h = np.full(data.n_samples, np.nan, dtype=np.float32)
    obj.gradient_hessian(s, data, g, h)
    return g.astype(np.float64), h.astype(np.float64)


# --- rankboost past its exponent clip -------------------------------------------------


def _two_docs(weights=None):
    # doc 0 is preferred (grade 1); s_1 - s_0 is the pair's exponent
    return RankingDataset(
        X=np.zeros((2, 1)), y=np.array([1.0, 0.0]), query_offsets=np.array([0, 2]), weights=weights
    )


@pytest.mark.parametrize("x", [30.0, 49.0, 49.9, 50.0, 50.1, 51.0, 55.0, 80.0, 400.0])
def test_rankboost_gradient_and_hessian_are_the_derivatives_of_its_loss_past_the_clip(x):
    data = _two_docs()
    obj = RankBoost()
    s = np.array([0.0, x])
    g, h = _grad_hess(obj, s, data)
    e1, e2 = 1e-4, 1e-3
    # at x = 50 the central differences straddle the clip (the loss is C^2 there)
    num_g = (obj.loss(s + np.array([0, e1]), data) - obj.loss(s - np.array([0, e1]), data)) / (
        2 * e1
    )
    num_h = (
        obj.loss(s + np.array([0, e2]), data)
        - 2 * obj.loss(s, data)
        + obj.loss(s - np.array([0, e2]), data)
    ) / (e2 * e2)
    assert g[1] == pytest.approx(num_g, rel=1e-5)
    assert g[0] == pytest.approx(-num_g, rel=1e-5)
    assert h[1] == pytest.approx(num_h, rel=1e-3)
    assert h[0] == h[1]


def test_rankboost_loss_grows_past_the_clip_like_its_gradient_says():
    # old: loss(50.5) == loss(60) == exp(50) while the gradient was exp(50) > 0 at both
    data = _two_docs()
    obj = RankBoost()
    losses = [obj.loss(np.array([0.0, x]), data) for x in (50.0, 50.5, 60.0, 100.0)]
    assert all(b > a for a, b in itertools.pairwise(losses))
    ec = math.exp(EXP_CLIP)
    for x, loss in zip((50.5, 60.0, 100.0), losses[1:], strict=True):
        u = x - EXP_CLIP
        assert loss == pytest.approx(ec * (1.0 + u + 0.5 * u * u), rel=1e-12)
        g, h = _grad_hess(obj, np.array([0.0, x]), data)
        assert g[1] == pytest.approx(ec * (1.0 + u), rel=1e-6)
        assert h[1] == pytest.approx(ec, rel=1e-6)


def test_rankboost_inside_the_clip_is_the_plain_exponential_bit_for_bit():
    data = _two_docs()
    obj = RankBoost()
    for x in (-3.0, 0.0, 0.7, 12.5, 49.999):
        s = np.array([0.0, x])
        assert obj.loss(s, data) == math.exp(x)
        g, h = _grad_hess(obj, s, data)
        assert g[1] == np.float32(math.exp(x))
        assert g[0] == -np.float32(math.exp(x))
        assert h[0] == h[1] == np.float32(math.exp(x))


def test_rankboost_reference_twin_agrees_with_the_engine_past_the_clip():
    rng = np.random.default_rng(3)
    off = np.array([0, 6, 13], dtype=np.int64)
    y = rng.integers(0, 3, 13).astype(np.float64)
    s = rng.normal(size=13) * 40.0  # many pairs misordered by more than 50
    data = RankingDataset(X=np.zeros((13, 1)), y=y, query_offsets=off)
    obj = RankBoost()
    g, h = _grad_hess(obj, s, data)
    rg, rh, rloss, _ = pair_engine_reference(
        s, y, off, lambda_metric=None, loss="exp", pair_method="all", truncation_level=None,
        lambda_normalization=False,
    )  # fmt: skip
    diffs = [s[j] - s[i] for i in range(13) for j in range(13) if y[i] > y[j]]
    assert max(diffs) > EXP_CLIP + 5  # the test reaches past the clip
    np.testing.assert_allclose(g, rg, rtol=1e-6)
    np.testing.assert_allclose(h, rh, rtol=1e-6)
    assert obj.loss(s, data) == pytest.approx(rloss, rel=1e-12)


def test_rankboost_gradients_numerically_on_queries_past_the_clip():
    rng = np.random.default_rng(5)
    off = np.array([0, 5, 11], dtype=np.int64)
    y = rng.integers(0, 3, 11).astype(np.float64)
    s = rng.normal(size=11) * 35.0
    w = rng.uniform(0.5, 2.0, 11).astype(np.float32)
    w[:5] = w[0]  # one weight per query: the pair engine's gradient is then exact
    w[5:] = w[5]
    data = RankingDataset(X=np.zeros((11, 1)), y=y, query_offsets=off, weights=w)
    obj = RankBoost()
    g, _ = _grad_hess(obj, s, data)
    eps = 1e-4
    num = np.empty(s.size)
    for k in range(s.size):
        e = np.zeros(s.size)
        e[k] = eps
        num[k] = (obj.loss(s + e, data) - obj.loss(s - e, data)) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6 * np.abs(num).max())


# --- qbrank with per-document weights -------------------------------------------------


def _qb_data(seed, pairs=False):
    rng = np.random.default_rng(seed)
    sizes = (2, 5, 7, 4)
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(off[-1])
    y = rng.integers(0, 4, n).astype(np.float64)
    w = rng.uniform(0.2, 3.0, n).astype(np.float32)  # one weight per document
    data = RankingDataset(X=np.zeros((n, 1)), y=y, query_offsets=off, weights=w)
    if pairs:
        pref, other = [], []
        for q in range(len(sizes)):
            a, b = rng.choice(np.arange(off[q], off[q + 1]), 2, replace=False)
            pref.append(a)
            other.append(b)
        data.pairs = PreferencePairs(
            np.array(pref, dtype=np.int32), np.array(other, dtype=np.int32), rng.uniform(0.5, 2, 4)
        )
    return data, rng


def _away_from_kinks(obj, data, rng):
    p = obj.get_params()
    pp = data.pairs
    x, y, _, tp = _preference_pairs_reference(
        data.y,
        data.query_offsets,
        True,
        p["tau"],
        *((pp.preferred, pp.other, pp.weight) if pp is not None else ()),
    )
    for _ in range(1000):
        s = rng.normal(size=data.n_samples) * 2.0
        if np.min(np.abs(s[y] - s[x] + tp)) > 1e-2:
            return s
    raise AssertionError("no scores away from the hinge kinks")


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("w", [0.3, 1.0])
@pytest.mark.parametrize("tau", ["grade_difference", 0.5])
def test_qbrank_gradient_is_the_derivative_of_its_loss_with_document_weights(seed, w, tau):
    data, rng = _qb_data(seed, pairs=seed == 2)
    obj = QBRank(preference_weight=w, tau=tau)
    s = _away_from_kinks(obj, data, rng)
    g, _ = _grad_hess(obj, s, data)
    eps = 1e-6
    num = np.empty(s.size)
    for k in range(s.size):
        e = np.zeros(s.size)
        e[k] = eps
        num[k] = (obj.loss(s + e, data) - obj.loss(s - e, data)) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6 * np.abs(num).max())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_qbrank_line_search_and_gradient_see_one_loss(seed):
    # phi'(0) of the line search is the directional derivative g . delta of the fitted
    # gradient, and the step it returns is where the loss is smallest along delta
    data, rng = _qb_data(seed, pairs=True)
    obj = QBRank(preference_weight=0.5)
    s = _away_from_kinks(obj, data, rng)
    g, h = _grad_hess(obj, s, data)
    delta = -g / h + 0.3 * rng.normal(size=s.size)  # a descent direction, not exact
    _, d1, _ = obj._run(s, delta, 0.0, data)
    assert d1 == pytest.approx(float(np.dot(g, delta)), rel=1e-5)
    alpha = obj.line_search(s, delta, data)
    assert alpha > 0
    best = obj.loss(s + alpha * delta, data)
    for a in (0.0, alpha * 0.99, alpha * 1.01, alpha * 0.5, alpha * 2):
        assert best <= obj.loss(s + a * delta, data) + 1e-12 * abs(best)


def test_qbrank_hessian_is_algorithm_2_weights_with_the_pair_weight():
    # W_d = w sum_{pairs p with d} omega_p (nu_x + nu_y) / 2 + (1 - w) nu_d   (QB-3)
    data, rng = _qb_data(1, pairs=True)
    w = 0.4
    obj = QBRank(preference_weight=w)
    s = rng.normal(size=data.n_samples)
    pp = data.pairs
    x, y, om, tp = _preference_pairs_reference(
        data.y, data.query_offsets, True, "grade_difference", pp.preferred, pp.other, pp.weight
    )
    nu = data.weights.astype(np.float64)
    c = w * om * 0.5 * (nu[x] + nu[y])
    expected = (1.0 - w) * nu
    np.add.at(expected, x, c)
    np.add.at(expected, y, c)
    _, h = _grad_hess(obj, s, data)
    np.testing.assert_allclose(h, expected, rtol=1e-6)
    # and the NumPy twin agrees on g, h and the loss
    rg, rh, rloss = _qbrank_reference(s, data.y, x, y, om, tp, w, data.weights)
    g, _ = _grad_hess(obj, s, data)
    np.testing.assert_allclose(g, rg, rtol=1e-5, atol=1e-6 * np.abs(rg).max())
    np.testing.assert_allclose(h, rh, rtol=1e-6)
    assert obj.loss(s, data) == pytest.approx(rloss, rel=1e-12)
    assert obj.line_search(s, -g / h, data) == pytest.approx(
        _qbrank_line_search_reference(s, -g / h, data.y, x, y, om, tp, w, data.weights),
        rel=1e-8,
    )


def test_qbrank_with_one_weight_per_query_is_unchanged():
    # (nu + nu) / 2 = nu: the pair weight is the document weight; same numbers as before
    data, rng = _qb_data(0, pairs=True)
    nu = np.repeat(np.array([0.5, 1.5, 2.0, 0.8]), np.diff(data.query_offsets))
    data.weights = nu.astype(np.float32)
    unweighted = RankingDataset(X=data.X, y=data.y, query_offsets=data.query_offsets, weights=None)
    unweighted.pairs = data.pairs
    obj = QBRank(preference_weight=0.5)
    s = rng.normal(size=data.n_samples)
    g, h = _grad_hess(obj, s, data)
    g1, h1 = _grad_hess(obj, s, unweighted)
    np.testing.assert_allclose(g, nu.astype(np.float32) * g1, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h, nu.astype(np.float32) * h1, rtol=1e-6)


def test_qbrank_training_with_document_weights_lowers_the_weighted_risk_every_round():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 4))
    y = rng.integers(0, 4, 80).astype(np.float64)
    qid = np.repeat(np.arange(8), 10)
    sw = rng.uniform(0.1, 5.0, 80)
    data = make_dataset(X, y, qid=qid, sample_weight=sw)
    params = dict(objective="qbrank", min_samples_leaf=3, n_threads=1, learning_rate=1.0)
    obj = QBRank()
    losses = []
    for n in (1, 2, 3, 4, 5):
        model = train(dict(params, n_estimators=n), data)
        losses.append(obj.loss(model.predict(X), data))  # identity transform
    assert all(b <= a * (1 + 1e-12) for a, b in itertools.pairwise(losses))


def test_qbrank_learns_from_pairs_with_a_zero_weight_document():
    # documents of weight 1 all have grade 0, those of grades 1 and 2 weight 0: their
    # pairs weigh (0 + 1) / 2 in the risk (and always did in loss() and the line
    # search).  Old: the gradient gave the weight-0 documents nothing, every tree was
    # no descent direction of that risk, the line search stepped 0 and the model was
    # constant (risk 41.25 before and after).  Now the risk falls and the grades rank.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (np.arange(60) % 3).astype(float)
    qid = np.repeat(np.arange(6), 10)
    data = make_dataset(X, y, qid=qid, sample_weight=np.where(y >= 1, 0.0, 1.0))
    params = dict(objective="qbrank", n_estimators=5, min_samples_leaf=1, n_threads=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning of a constant model
        model = train(params, data)
    p = model.predict(X)
    obj = QBRank()
    assert obj.loss(p, data) < 0.5 * obj.loss(np.zeros(60), data)
    assert p[y == 0].mean() < p[y == 1].mean() < p[y == 2].mean()

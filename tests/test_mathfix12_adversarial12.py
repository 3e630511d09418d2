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

import numpy as np
import pytest

from ltrboost.dataset import RankingDataset
from ltrboost.objectives.pair_engine import EXP_CLIP, pair_engine_reference
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

"""Tests for the pointwise objectives: mart, logistic_rank, mcrank.

Kernels against their NumPy references (hand case and random inputs), gradients and
hessians against central finite differences of ``loss()``, and each paper's leaf formula
against the Newton leaf ``-sum g / sum h`` the engine computes.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ltrboost.dataset import RankingDataset, make_dataset
from ltrboost.objectives import pointwise as pw
from ltrboost.objectives.registry import available_objectives, get_objective

# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def _dataset(
    y: np.ndarray, weights: np.ndarray | None = None, n_queries: int = 3
) -> RankingDataset:
    n = y.shape[0]
    bounds = np.linspace(0, n, n_queries + 1).round().astype(int)
    sizes = np.diff(bounds)
    sizes = sizes[sizes > 0]
    X = np.zeros((n, 1))
    return make_dataset(X, y, group=sizes, sample_weight=weights)


def _scores(obj, data: RankingDataset, rng: np.random.Generator, scale: float = 1.0):
    k = obj.n_outputs(data)
    shape = (data.n_samples,) if k == 1 else (k, data.n_samples)
    return rng.normal(0.0, scale, size=shape)


def _grad_hess(obj, scores, data):
    g = np.full(scores.shape, np.nan, dtype=np.float32)
    h = np.full(scores.shape, np.nan, dtype=np.float32)
    obj.gradient_hessian(scores, data, g, h)
    return g.astype(np.float64), h.astype(np.float64)


def _finite_differences(obj, scores, data, eps_g=1e-5, eps_h=1e-3):
    """Central differences of loss() per score entry: (dL/ds, d2L/ds2 diagonal)."""
    flat = scores.astype(np.float64).ravel().copy()
    g = np.empty_like(flat)
    h = np.empty_like(flat)
    base = obj.loss(flat.reshape(scores.shape), data)
    for i in range(flat.size):
        s = flat.copy()
        s[i] = flat[i] + eps_g
        lp = obj.loss(s.reshape(scores.shape), data)
        s[i] = flat[i] - eps_g
        lm = obj.loss(s.reshape(scores.shape), data)
        g[i] = (lp - lm) / (2 * eps_g)
        s[i] = flat[i] + eps_h
        lp = obj.loss(s.reshape(scores.shape), data)
        s[i] = flat[i] - eps_h
        lm = obj.loss(s.reshape(scores.shape), data)
        h[i] = (lp - 2 * base + lm) / eps_h**2
    return g.reshape(scores.shape), h.reshape(scores.shape)


def _labels(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "graded":
        return rng.integers(0, 5, size=n).astype(np.float64)
    if kind == "binary":
        return rng.integers(0, 2, size=n).astype(np.float64)
    if kind == "all_equal":
        return np.full(n, 2.0)
    if kind == "all_zero":
        return np.zeros(n)
    raise AssertionError(kind)


OBJECTIVE_CASES = [
    ("mart", {}),
    ("logistic_rank", {}),
    ("logistic_rank", {"label_scale": {}}),
    (
        "logistic_rank",
        {"positive_threshold": 1, "label_scale": [0.5, 1.0, 2.0, 4.0, 8.0]},
    ),
    ("mcrank", {}),
    ("mcrank", {"friedman_factor": False}),
    ("mcrank", {"max_label": 6, "init": "zero"}),
]


def _case_id(case):
    name, params = case
    return name + ("" if not params else "-" + "-".join(f"{k}" for k in params))


# --------------------------------------------------------------------------------------
# registry and parameters
# --------------------------------------------------------------------------------------


def test_registered_names():
    names = available_objectives()
    for name in ("mart", "logistic_rank", "mcrank"):
        assert name in names
    assert isinstance(get_objective("mcrank"), pw.McRank)
    assert get_objective("mart").hessian_is_constant
    assert get_objective("mcrank").needs_integer_labels
    assert not get_objective("logistic_rank").needs_integer_labels


def test_params_resolved_at_prepare_and_stored():
    y = np.array([0, 1, 4, 2, 0, 3], dtype=np.float64)
    data = _dataset(y)
    mc = get_objective("mcrank")
    assert mc.get_params()["max_label"] is None
    mc.prepare(data)
    assert mc.get_params() == {"max_label": 4, "friedman_factor": True, "init": "prior"}
    assert mc.n_outputs(data) == 5
    lr = get_objective("logistic_rank")
    lr.prepare(data)
    assert lr.get_params()["positive_threshold"] == 2.0  # good+ on the 0..4 scale
    # a second dataset with other grades does not change what was resolved
    lr.prepare(_dataset(np.array([0.0, 1.0])))
    assert lr.get_params()["positive_threshold"] == 2.0
    # parameters rebuild the same objective (the model-file round trip)
    again = get_objective("logistic_rank", **lr.get_params())
    assert again.get_params() == lr.get_params()


def test_logistic_rank_threshold_for_binary_labels():
    lr = get_objective("logistic_rank")
    lr.prepare(_dataset(np.array([0.0, 1.0, 0.0, 1.0])))
    assert lr.get_params()["positive_threshold"] == 1.0


def test_label_scale_json_round_trip_keys():
    # JSON turns mapping keys into strings; they must still parse as grades
    lr = get_objective("logistic_rank", label_scale={"3": 2, "4.0": 3})
    assert lr.get_params()["label_scale"] == {3.0: 2.0, 4.0: 3.0}


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("mart", {"init": "median"}, "init='median'"),
        ("logistic_rank", {"label_scale": {2: -1.0}}, "finite and > 0"),
        ("logistic_rank", {"label_scale": "big"}, "label_scale"),
        ("logistic_rank", {"positive_threshold": float("nan")}, "positive_threshold"),
        ("mcrank", {"max_label": 0}, "max_label=0"),
        ("mcrank", {"max_label": 2.5}, "max_label=2.5"),
        ("mcrank", {"max_label": 40}, "max_label=40"),
    ],
)
def test_bad_parameters(name, params, match):
    with pytest.raises(ValueError, match=match):
        get_objective(name, **params)


@pytest.mark.parametrize(
    ("y", "match"),
    [
        ([0, 1, 2, 1.5, 0], r"y\[3\]=1\.5"),
        ([0, 1, -1, 2], r"y\[2\]=-1"),
    ],
)
def test_mcrank_refuses_non_grades(y, match):
    data = _dataset(np.asarray(y, dtype=np.float64))
    with pytest.raises(ValueError, match=match) as err:
        get_objective("mcrank").prepare(data)
    assert "mcrank" in str(err.value)


def test_mcrank_refuses_huge_grades_and_grades_above_max_label():
    with pytest.raises(ValueError, match=r"y\[1\]=50"):
        get_objective("mcrank").prepare(_dataset(np.array([0.0, 50.0, 1.0])))
    mc = get_objective("mcrank", max_label=2)
    with pytest.raises(ValueError, match=r"y\[2\]=3 is larger than max_label=2"):
        mc.prepare(_dataset(np.array([0.0, 1.0, 3.0])))


@pytest.mark.parametrize("name", ["mart", "logistic_rank", "mcrank"])
def test_refuses_missing_or_nan_labels(name):
    obj = get_objective(name)
    unlabelled = make_dataset(np.zeros((3, 1)), group=[3], require_labels=False)
    with pytest.raises(ValueError, match="needs labels"):
        obj.prepare(unlabelled)
    data = _dataset(np.array([0.0, 1.0, 2.0]))
    data.y[1] = np.nan  # bypasses make_dataset's own check
    with pytest.raises(ValueError, match=r"y\[1\]=nan"):
        obj.prepare(data)


def test_mcrank_all_zero_labels_still_two_classes():
    mc = get_objective("mcrank")
    data = _dataset(np.zeros(5))
    mc.prepare(data)
    assert mc.n_outputs(data) == 2
    assert np.all(np.isfinite(mc.init_score(data)))


# --------------------------------------------------------------------------------------
# kernels vs references
# --------------------------------------------------------------------------------------


def _mart_kernel(scores, y, weights):
    g = np.empty(y.shape, np.float32)
    h = np.empty(y.shape, np.float32)
    w = pw._EMPTY_WEIGHTS if weights is None else weights
    pw._mart_gradient_hessian(scores, y, w, g, h)
    return g, h


def _logistic_kernel(scores, y, threshold, scales, weights):
    g = np.empty(y.shape, np.float32)
    h = np.empty(y.shape, np.float32)
    w = pw._EMPTY_WEIGHTS if weights is None else weights
    pw._logistic_rank_gradient_hessian(scores, y, threshold, scales, w, g, h)
    return g, h


def _mcrank_kernel(scores, y, weights, factor):
    g = np.empty(scores.shape, np.float32)
    h = np.empty(scores.shape, np.float32)
    w = pw._EMPTY_WEIGHTS if weights is None else weights
    pw._mcrank_gradient_hessian(scores, y, w, factor, g, h)
    return g, h


@pytest.mark.parametrize("impl", [pw._mart_gradient_hessian_reference, _mart_kernel])
def test_mart_hand_case(impl):
    g, h = impl(
        np.array([1.0, 0.0, 3.0]),
        np.array([0.0, 2.0, 3.0]),
        np.array([1.0, 0.5, 2.0], dtype=np.float32),
    )
    np.testing.assert_allclose(g, [2.0, -2.0, 0.0])
    np.testing.assert_allclose(h, [2.0, 1.0, 4.0])


@pytest.mark.parametrize("impl", [pw._logistic_rank_gradient_hessian_reference, _logistic_kernel])
def test_logistic_rank_hand_case(impl):
    # at s = 0 every document is a coin flip: |y~| = 1, so g = -c t and h = c
    y = np.array([4.0, 0.0, 2.0])
    scales = pw._label_scales(y, 2.0, None)
    np.testing.assert_allclose(scales, [3.0, 1.0, 1.0])
    g, h = impl(np.zeros(3), y, 2.0, scales, None)
    np.testing.assert_allclose(g, [-3.0, 1.0, -1.0], rtol=1e-7)
    np.testing.assert_allclose(h, [3.0, 1.0, 1.0], rtol=1e-7)
    # s = 1/2 log 3 for a positive: P(wrong) = 1/4, y~ = 2 * 1/4 = 1/2
    g, h = impl(np.array([0.5 * math.log(3.0)]), np.array([2.0]), 2.0, np.ones(1), None)
    np.testing.assert_allclose(g, [-0.5], rtol=1e-6)
    np.testing.assert_allclose(h, [0.5 * 1.5], rtol=1e-6)


@pytest.mark.parametrize("impl", [pw._mcrank_gradient_hessian_reference, _mcrank_kernel])
def test_mcrank_hand_case(impl):
    # three classes, equal scores: p = 1/3 each; Friedman factor C/(C-1) = 3/2
    g, h = impl(np.zeros((3, 1)), np.array([1.0]), None, 1.5)
    np.testing.assert_allclose(np.ravel(g), [1 / 3, -2 / 3, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(np.ravel(h), [1 / 3, 1 / 3, 1 / 3], rtol=1e-6)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n", [0, 1, 7, 257])
def test_kernels_match_references(global_random_seed, weighted, n):
    rng = np.random.default_rng(global_random_seed)
    y = rng.integers(0, 5, size=n).astype(np.float64)
    w = rng.uniform(0, 3, size=n).astype(np.float32) if weighted else None
    s = rng.normal(0, 3, size=n)
    s[: n // 4] = 40.0 * np.sign(rng.normal(size=n // 4))  # saturated sigmoids
    rtol = dict(rtol=2e-6, atol=1e-30)

    g, h = _mart_kernel(s, y, w)
    g_ref, h_ref = pw._mart_gradient_hessian_reference(s, y, w)
    np.testing.assert_allclose(g, g_ref, **rtol)
    np.testing.assert_allclose(h, h_ref, **rtol)

    scales = rng.uniform(0.5, 3.0, size=n)
    g, h = _logistic_kernel(s, y, 2.0, scales, w)
    g_ref, h_ref = pw._logistic_rank_gradient_hessian_reference(s, y, 2.0, scales, w)
    np.testing.assert_allclose(g, g_ref, **rtol)
    np.testing.assert_allclose(h, h_ref, **rtol)

    S = rng.normal(0, 3, size=(5, n))
    S[:, : n // 5] *= 30.0  # near one-hot probabilities
    for factor in (1.0, 5.0 / 4.0):
        g, h = _mcrank_kernel(S, y, w, factor)
        g_ref, h_ref = pw._mcrank_gradient_hessian_reference(S, y, w, factor)
        np.testing.assert_allclose(g, g_ref, rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(h, h_ref, rtol=2e-6, atol=1e-30)


# --------------------------------------------------------------------------------------
# gradients and hessians against finite differences of loss()
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", OBJECTIVE_CASES, ids=_case_id)
@pytest.mark.parametrize("labels", ["graded", "binary", "all_equal", "all_zero"])
@pytest.mark.parametrize("weighted", [False, True])
def test_gradients_hessians_numerically(global_random_seed, case, labels, weighted):
    name, params = case
    rng = np.random.default_rng(global_random_seed)
    n = 24
    y = _labels(labels, n, rng)
    if name == "mcrank" and params.get("max_label") is not None:
        y = np.minimum(y, params["max_label"])
    w = rng.uniform(0.1, 3.0, size=n) if weighted else None
    data = _dataset(y, w)
    obj = get_objective(name, **params)
    obj.prepare(data)
    scores = _scores(obj, data, rng, scale=1.5)
    g, h = _grad_hess(obj, scores, data)
    g_fd, h_fd = _finite_differences(obj, scores, data)

    np.testing.assert_allclose(g, g_fd, rtol=1e-4, atol=1e-5)
    if name == "mcrank" and obj.get_params()["friedman_factor"]:
        C = obj.n_outputs(data)
        h_fd = h_fd * C / (C - 1)  # documented: Friedman's factor on the exact diagonal
    np.testing.assert_allclose(h, h_fd, rtol=1e-4, atol=1e-5)
    assert np.all(h >= 0)


def test_single_output_accepts_row_vector_scores():
    y = np.array([0.0, 3.0, 1.0, 4.0])
    data = _dataset(y)
    obj = get_objective("logistic_rank")
    s = np.array([0.3, -0.2, 1.0, 0.0])
    g1, h1 = _grad_hess(obj, s, data)
    g2, h2 = _grad_hess(obj, s[None, :], data)
    np.testing.assert_array_equal(g1, g2.ravel())
    np.testing.assert_array_equal(h1, h2.ravel())
    with pytest.raises(ValueError, match="C-contiguous float32"):
        obj.gradient_hessian(s, data, np.empty(4), np.empty(4, np.float32))
    with pytest.raises(ValueError, match="shape"):
        obj.gradient_hessian(s[:3], data, np.empty(4, np.float32), np.empty(4, np.float32))


def test_mcrank_shape_checks():
    data = _dataset(np.array([0.0, 1.0, 2.0]))
    mc = get_objective("mcrank")
    mc.prepare(data)
    with pytest.raises(ValueError, match=r"expected \(3, 3\)"):
        mc.gradient_hessian(
            np.zeros(3),
            data,
            np.empty((3, 3), np.float32),
            np.empty((3, 3), np.float32),
        )


# --------------------------------------------------------------------------------------
# the Newton leaf equals each paper's leaf formula
# --------------------------------------------------------------------------------------


def _newton_leaf(g, h):
    return -g.sum() / h.sum()


def test_mart_newton_leaf_is_mean_residual(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    y = rng.integers(0, 5, size=30).astype(np.float64)
    w = rng.uniform(0.2, 2.0, size=30)
    data = _dataset(y, w)
    obj = get_objective("mart")
    s = rng.normal(size=30)
    g, h = _grad_hess(obj, s, data)
    leaf = rng.random(30) < 0.5
    expected = np.sum(w[leaf] * (y[leaf] - s[leaf])) / np.sum(w[leaf])
    assert _newton_leaf(g[leaf], h[leaf]) == pytest.approx(expected, rel=1e-5)


def _seed_pseudo_response(y, threshold, s):
    """Seed 002 step 1 in Friedman's parametrisation: y~ = 2t / (1 + exp(2 t F))."""
    t = np.where(y >= threshold, 1.0, -1.0)
    return 2.0 * t / (1.0 + np.exp(2.0 * t * s))


def test_logistic_rank_leaf_is_seed_gamma_with_unit_scales(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    y = rng.integers(0, 5, size=40).astype(np.float64)
    data = _dataset(y)
    obj = get_objective("logistic_rank", label_scale={})
    obj.prepare(data)
    s = rng.normal(0, 1.5, size=40)
    g, h = _grad_hess(obj, s, data)
    ytil = _seed_pseudo_response(y, 2.0, s)
    np.testing.assert_allclose(-g, ytil, rtol=1e-6)  # pseudo-response
    for leaf in (rng.random(40) < 0.5, np.ones(40, bool), y >= 2):
        gamma = ytil[leaf].sum() / np.sum(np.abs(ytil[leaf] * (2 - np.abs(ytil[leaf]))))
        assert _newton_leaf(g[leaf], h[leaf]) == pytest.approx(gamma, rel=1e-5)


def test_logistic_rank_leaf_with_seed_scales(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    y = rng.integers(0, 5, size=40).astype(np.float64)
    w = rng.uniform(0.5, 2.0, size=40)
    data = _dataset(y, w)
    obj = get_objective("logistic_rank")  # perfect 3, excellent 2, others 1
    obj.prepare(data)
    s = rng.normal(0, 1.5, size=40)
    g, h = _grad_hess(obj, s, data)
    scale = np.select([y == 4, y == 3], [3.0, 2.0], 1.0)
    u = _seed_pseudo_response(y, 2.0, s)
    scaled = u * scale  # seed 002 step 1: pseudo-response x scale(label)
    np.testing.assert_allclose(-g, w * scaled, rtol=1e-6)
    leaf = rng.random(40) < 0.6
    c, ws, us, ys = scale[leaf], w[leaf], u[leaf], scaled[leaf]
    # Newton step of the scale-weighted loss, written with the unscaled y~ ...
    gamma = np.sum(ws * c * us) / np.sum(ws * c * np.abs(us) * (2 - np.abs(us)))
    assert _newton_leaf(g[leaf], h[leaf]) == pytest.approx(gamma, rel=1e-5)
    # ... and with the seed's scaled y~ (the form given in the docstring)
    gamma_s = np.sum(ws * ys) / np.sum(ws * np.abs(ys) * (2 - np.abs(ys) / c))
    assert _newton_leaf(g[leaf], h[leaf]) == pytest.approx(gamma_s, rel=1e-5)


@pytest.mark.parametrize("friedman_factor", [True, False])
def test_mcrank_leaf_is_friedman_multiclass_leaf(global_random_seed, friedman_factor):
    rng = np.random.default_rng(global_random_seed)
    y = rng.integers(0, 4, size=50).astype(np.float64)
    data = _dataset(y)
    obj = get_objective("mcrank", friedman_factor=friedman_factor)
    obj.prepare(data)
    C = obj.n_outputs(data)
    assert C == 4
    S = rng.normal(0, 1.0, size=(C, 50))
    g, h = _grad_hess(obj, S, data)
    p = np.exp(S) / np.exp(S).sum(axis=0)
    leaf = rng.random(50) < 0.5
    for k in range(C):
        r = ((y == k).astype(float) - p[k])[leaf]  # Friedman's pseudo-response
        base = r.sum() / np.sum(np.abs(r) * (1 - np.abs(r)))
        expected = (C - 1) / C * base if friedman_factor else base
        assert _newton_leaf(g[k, leaf], h[k, leaf]) == pytest.approx(expected, rel=1e-5)


# --------------------------------------------------------------------------------------
# McRank outputs, initial scores
# --------------------------------------------------------------------------------------


def test_mcrank_transform_is_expected_grade(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    mc = get_objective("mcrank", max_label=4)
    raw = rng.normal(0, 2, size=(5, 30))
    raw[:, 0] = [800.0, -900.0, 0.0, 1000.0, 5.0]  # overflow-prone, still finite
    proba = mc.predict_proba(raw)
    assert proba.shape == (30, 5)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(proba >= 0)
    np.testing.assert_allclose(proba[0], [0, 0, 0, 1, 0], atol=1e-12)
    shifted = raw[:, 1:] - raw[:, 1:].max(axis=0)
    p_ref = np.exp(shifted) / np.exp(shifted).sum(axis=0)
    np.testing.assert_allclose(proba[1:], p_ref.T, rtol=1e-10)
    expected = (np.arange(5)[:, None] * p_ref).sum(axis=0)
    np.testing.assert_allclose(mc.transform(raw)[1:], expected, rtol=1e-10)
    assert mc.transform(raw)[0] == pytest.approx(3.0)


def test_single_output_transform_is_identity():
    raw = np.array([[0.5, -1.0, 2.0]])
    for name in ("mart", "logistic_rank"):
        np.testing.assert_array_equal(get_objective(name).transform(raw), raw[0])
        np.testing.assert_array_equal(get_objective(name).transform(raw[0]), raw[0])


@pytest.mark.parametrize("name", ["mart", "logistic_rank", "mcrank"])
def test_init_score_is_the_constant_minimiser(global_random_seed, name):
    # at F_0 the summed gradient of every output is 0 (all grades present here)
    rng = np.random.default_rng(global_random_seed)
    y = np.concatenate([np.arange(5.0), rng.integers(0, 5, size=45)])
    w = rng.uniform(0.2, 2.0, size=50)
    data = _dataset(y, w)
    obj = get_objective(name)
    obj.prepare(data)
    f0 = obj.init_score(data)
    assert f0.shape == (obj.n_outputs(data),)
    scores = np.repeat(f0[:, None], 50, axis=1)
    if f0.shape[0] == 1:
        scores = scores[0]
    g, _ = _grad_hess(obj, scores, data)
    np.testing.assert_allclose(np.atleast_2d(g).sum(axis=1), 0.0, atol=1e-4)


def test_init_score_values():
    y = np.array([0.0, 0.0, 1.0, 2.0, 3.0, 4.0])
    data = _dataset(y)
    assert get_objective("mart").init_score(data)[0] == pytest.approx(10 / 6)
    assert get_objective("mart", init="zero").init_score(data)[0] == 0.0
    # positives (y >= 2): scales 1 + 2 + 3 = 6 against negatives 1 + 1 + 1 = 3
    lr = get_objective("logistic_rank")
    assert lr.init_score(data)[0] == pytest.approx(0.5 * math.log(6 / 3))
    lr_mean = get_objective("logistic_rank", init="mean", label_scale={})
    assert lr_mean.init_score(data)[0] == pytest.approx(0.0)  # seed: F0 = mean of +-1
    mc = get_objective("mcrank")
    f0 = mc.init_score(data)
    p = np.exp(f0) / np.exp(f0).sum()
    np.testing.assert_allclose(p, [2 / 6, 1 / 6, 1 / 6, 1 / 6, 1 / 6], rtol=1e-9)
    assert f0.sum() == pytest.approx(0.0, abs=1e-12)
    # one-class data gets a finite start
    assert np.isfinite(get_objective("logistic_rank").init_score(_dataset(np.zeros(4))))


def test_boosting_with_newton_leaves_reduces_loss(global_random_seed):
    """A few constant-per-query 'trees' with Newton leaves lower every loss."""
    rng = np.random.default_rng(global_random_seed)
    y = rng.integers(0, 5, size=60).astype(np.float64)
    data = _dataset(y, n_queries=6)
    for name in ("mart", "logistic_rank", "mcrank"):
        obj = get_objective(name)
        obj.prepare(data)
        k = obj.n_outputs(data)
        scores = np.repeat(obj.init_score(data)[:, None], 60, axis=1)
        scores = scores[0] if k == 1 else scores
        losses = [obj.loss(scores, data)]
        leaves = rng.integers(0, 4, size=60)  # a fixed random partition as the "tree"
        for _ in range(5):
            g, h = _grad_hess(obj, scores, data)
            g2, h2 = np.atleast_2d(g), np.atleast_2d(h)
            step = np.zeros_like(g2)
            for leaf in range(4):
                m = leaves == leaf
                step[:, m] = (-g2[:, m].sum(axis=1) / h2[:, m].sum(axis=1))[:, None]
            scores = scores + 0.5 * (step[0] if k == 1 else step)
            losses.append(obj.loss(scores, data))
        assert all(b < a for a, b in itertools.pairwise(losses)), (
            name,
            losses,
        )

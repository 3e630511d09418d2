"""RankNet and RankBoost: finite differences of loss(), hand examples from the seeds,
kernel vs NumPy reference, explicit preference pairs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ltrboost.dataset import PreferencePairs, RankingDataset
from ltrboost.objectives.lambdamart import EXP_CLIP, LambdaMART, _lambdamart_reference
from ltrboost.objectives.pairwise import RankBoost, RankNet
from ltrboost.objectives.registry import get_objective

SEEDS = [0, 1, 2]


def make_data(seed, sizes=(1, 2, 4, 6, 9, 5, 4), max_label=3, ties=True, weights=None, scale=1.0):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    y = rng.integers(0, max_label + 1, n).astype(np.float64)
    y[offsets[-2] : offsets[-1]] = 1.0  # all labels equal
    s = rng.normal(size=n) * scale
    if ties:
        s = np.round(s * 2) / 2
    w = None
    if weights == "query":
        w = np.repeat(rng.uniform(0.5, 2.0, len(sizes)), sizes).astype(np.float32)
    elif weights == "doc":
        w = rng.uniform(0.5, 2.0, n).astype(np.float32)
    return RankingDataset(X=np.zeros((n, 1)), y=y, query_offsets=offsets, weights=w), s


def grad_hess(obj, s, data, iteration=0):
    g = np.full(data.n_samples, np.nan, dtype=np.float32)
    h = np.full(data.n_samples, np.nan, dtype=np.float32)
    obj.gradient_hessian(s, data, g, h, iteration=iteration)
    return g, h


def check_finite_differences(obj, s, data, eps1=1e-5, eps2=1e-3):
    """Central differences of loss() against gradients and the diagonal hessians."""
    g, h = grad_hess(obj, s, data)
    f0 = obj.loss(s, data)
    num_g = np.empty(s.size)
    num_h = np.empty(s.size)
    for k in range(s.size):
        e = np.zeros(s.size)
        e[k] = eps1
        num_g[k] = (obj.loss(s + e, data) - obj.loss(s - e, data)) / (2 * eps1)
        e[k] = eps2
        num_h[k] = (obj.loss(s + e, data) - 2 * f0 + obj.loss(s - e, data)) / eps2**2
    scale = max(1.0, np.abs(num_g).max())
    np.testing.assert_allclose(g, num_g, rtol=1e-4, atol=1e-6 * scale)
    np.testing.assert_allclose(h, num_h, rtol=1e-3, atol=1e-5 * scale)
    assert np.abs(g).max() > 0
    return g, h


# --- finite differences ---------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("sigma", [1.0, 2.5])
@pytest.mark.parametrize("weights", [None, "query"])
def test_ranknet_gradients_hessians_numerically(seed, sigma, weights):
    data, s = make_data(seed, weights=weights)
    g, h = check_finite_differences(RankNet(sigma=sigma), s, data)
    # one-document and all-equal-label queries contribute nothing
    off = data.query_offsets
    for q in (0, data.n_queries - 1):
        assert np.all(g[off[q] : off[q + 1]] == 0)
        assert np.all(h[off[q] : off[q + 1]] == 0)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("weights", [None, "query"])
def test_rankboost_gradients_hessians_numerically(seed, weights):
    data, s = make_data(seed, weights=weights)
    check_finite_differences(RankBoost(), s, data)


@pytest.mark.parametrize("cls", [RankNet, RankBoost])
@pytest.mark.parametrize("pair_method", ["topk", "sampled"])
def test_frozen_pairs_numerically(cls, pair_method):
    # topk / sampled pair sets move with the ranking: check against the frozen loss
    data, s = make_data(4)
    obj = cls(pair_method=pair_method, truncation_level=2, random_state=5)
    g, _h = grad_hess(obj, s, data, iteration=1)
    eps = 1e-5
    for k in range(s.size):
        e = np.zeros(s.size)
        e[k] = eps
        num = (
            obj.loss_fixed_weights(s + e, data, s, 1) - obj.loss_fixed_weights(s - e, data, s, 1)
        ) / (2 * eps)
        assert g[k] == pytest.approx(num, rel=1e-4, abs=1e-6)


# --- hand examples --------------------------------------------------------------------


def test_rankboost_seed000_example3():
    # y(d1) > y(d2) > y(d3); s1 = e^{f2-f1}, s2 = e^{f3-f1}, s3 = e^{f3-f2}
    f = np.array([0.3, -0.2, 0.1])
    y = np.array([2.0, 1.0, 0.0])
    data = RankingDataset(X=np.zeros((3, 1)), y=y, query_offsets=np.array([0, 3]))
    s1, s2, s3 = math.exp(f[1] - f[0]), math.exp(f[2] - f[0]), math.exp(f[2] - f[1])
    g, h = grad_hess(RankBoost(), f, data)
    np.testing.assert_allclose(g, [-s1 - s2, s1 - s3, s2 + s3], rtol=1e-6)
    np.testing.assert_allclose(h, [s1 + s2, s1 + s3, s2 + s3], rtol=1e-6)
    assert RankBoost().loss(f, data) == pytest.approx(s1 + s2 + s3)
    # OLE: {d1, d2} in one leaf -> L''(o1=0) = s2 + s3 = h1 + h2 - 2 rho_12
    pt = RankBoost().pair_terms(f, data)
    rho = {(int(i), int(j)): r for i, j, r in zip(pt.doc_i, pt.doc_j, pt.rho, strict=True)}
    assert h[0] + h[1] - 2 * rho[(0, 1)] == pytest.approx(s2 + s3, rel=1e-6)


def test_ranknet_two_documents_by_hand():
    y = np.array([0.0, 1.0])
    s = np.array([0.4, -0.1])
    data = RankingDataset(X=np.zeros((2, 1)), y=y, query_offsets=np.array([0, 2]))
    sigma = 2.0
    # i = doc 1 (preferred), j = doc 0
    rho = 1.0 / (1.0 + math.exp(sigma * (s[1] - s[0])))
    g, h = grad_hess(RankNet(sigma=sigma), s, data)
    np.testing.assert_allclose(g, [sigma * rho, -sigma * rho], rtol=1e-6)
    np.testing.assert_allclose(h, [sigma**2 * rho * (1 - rho)] * 2, rtol=1e-6)
    loss = math.log1p(math.exp(-sigma * (s[1] - s[0])))
    assert RankNet(sigma=sigma).loss(s, data) == pytest.approx(loss)


def test_rankboost_exponent_is_clipped():
    y = np.array([1.0, 0.0])
    s = np.array([-400.0, 400.0])  # misordered by 800: exp(800) would overflow
    data = RankingDataset(X=np.zeros((2, 1)), y=y, query_offsets=np.array([0, 2]))
    g, h = grad_hess(RankBoost(), s, data)
    assert np.all(np.isfinite(g))
    assert np.all(np.isfinite(h))
    # past the clip the loss is e^C (1 + u + u^2 / 2), u = 800 - C: gradient e^C (1 + u)
    u = 800.0 - EXP_CLIP
    np.testing.assert_allclose(
        g, [-math.exp(EXP_CLIP) * (1 + u), math.exp(EXP_CLIP) * (1 + u)], rtol=1e-6
    )
    np.testing.assert_allclose(h, [math.exp(EXP_CLIP)] * 2, rtol=1e-6)
    assert RankBoost().loss(s, data) == pytest.approx(math.exp(EXP_CLIP) * (1 + u + u * u / 2))


def test_ranknet_extreme_scores_are_finite():
    y = np.array([1.0, 0.0])
    data = RankingDataset(X=np.zeros((2, 1)), y=y, query_offsets=np.array([0, 2]))
    for s in (np.array([-1e4, 1e4]), np.array([1e4, -1e4])):
        g, h = grad_hess(RankNet(), s, data)
        assert np.all(np.isfinite(g))
        assert np.all(np.isfinite(h))
        assert np.isfinite(RankNet().loss(s, data))


# --- kernel vs reference --------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("cls", "loss"), [(RankNet, "logistic"), (RankBoost, "exp")])
@pytest.mark.parametrize(
    "config",
    [
        dict(pair_method="all", truncation_level=None),
        dict(pair_method="topk", truncation_level=2),
        dict(pair_method="sampled", pairs_per_sample=3),
    ],
)
@pytest.mark.parametrize("weights", [None, "doc"])
def test_kernel_matches_reference(seed, cls, loss, config, weights):
    data, s = make_data(seed, weights=weights)
    obj = cls(random_state=4, **config)
    g, h = grad_hess(obj, s, data, iteration=3)
    sigma = 1.0
    rg, rh, rloss, rpairs = _lambdamart_reference(
        s,
        data.y,
        data.query_offsets,
        weights=data.weights,
        lambda_metric=None,
        loss=loss,
        sigma=sigma,
        lambda_normalization=False,
        random_state=4,
        iteration=3,
        **config,
    )
    np.testing.assert_allclose(g, rg, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, rh, rtol=1e-5, atol=1e-6)
    assert obj.loss(s, data, iteration=3) == pytest.approx(rloss, rel=1e-10)
    pt = obj.pair_terms(s, data, iteration=3)
    assert [(int(i), int(j)) for i, j in zip(pt.doc_i, pt.doc_j, strict=True)] == [
        (i, j) for i, j, _ in rpairs
    ]


def test_ranknet_is_lambdamart_without_delta_z():
    # with a single relevant level and no normalisation, |dNDCG| differs from 1, so the
    # two must differ; RankNet equals the reference with |dZ| = 1 (checked above), and
    # LambdaMART's lambdas are RankNet's times |dZ| pair by pair
    data, s = make_data(0, ties=False)
    rn = RankNet(pair_method="all").pair_terms(s, data)
    lm = LambdaMART(
        pair_method="all", lambda_normalization=False, truncation_level=None
    ).pair_terms(s, data)
    np.testing.assert_array_equal(rn.doc_i, lm.doc_i)
    np.testing.assert_array_equal(rn.doc_j, lm.doc_j)
    ratio = lm.rho / rn.rho  # = |dNDCG| per pair
    assert np.all(ratio > 0)
    assert np.all(ratio <= 1.0 + 1e-12)


# --- explicit preference pairs --------------------------------------------------------


def _pairs_data(with_labels=True, weight=None):
    # two queries: rows 0-3 and 4-6
    y = np.array([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0]) if with_labels else None
    pairs = PreferencePairs(
        preferred=np.array([5, 1, 2], dtype=np.int32),
        other=np.array([4, 2, 3], dtype=np.int32),
        weight=weight,
    )
    off = np.array([0, 4, 7])
    return RankingDataset(X=np.zeros((7, 1)), y=y, query_offsets=off, pairs=pairs)


@pytest.mark.parametrize("cls", [RankNet, RankBoost])
def test_explicit_pairs_only(cls):
    data = _pairs_data(with_labels=False, weight=np.array([2.0, 1.0, 0.5]))
    s = np.array([0.1, -0.3, 0.2, 0.5, 0.0, -0.4, 0.3])
    obj = cls()

    def pair_loss(x):
        return math.log1p(math.exp(-x)) if cls is RankNet else math.exp(-x)

    expected = 2.0 * pair_loss(s[5] - s[4]) + pair_loss(s[1] - s[2]) + 0.5 * pair_loss(s[2] - s[3])
    assert obj.loss(s, data) == pytest.approx(expected, rel=1e-12)
    check_finite_differences(obj, s, data)
    pt = obj.pair_terms(s, data)
    assert pt.pair_offsets.tolist() == [0, 2, 3]  # CSR by query, stable within a query
    assert pt.doc_i.tolist() == [1, 2, 5]
    assert pt.doc_j.tolist() == [2, 3, 4]
    _, h = grad_hess(obj, s, data)
    per_doc = np.zeros(7)
    np.add.at(per_doc, pt.doc_i, pt.rho)
    np.add.at(per_doc, pt.doc_j, pt.rho)
    np.testing.assert_allclose(per_doc, h, rtol=1e-6)


@pytest.mark.parametrize("cls", [RankNet, RankBoost])
def test_explicit_pairs_add_to_label_pairs(cls):
    s = np.array([0.1, -0.3, 0.2, 0.5, 0.0, -0.4, 0.3])
    both = _pairs_data(with_labels=True)
    labels_only = RankingDataset(X=both.X, y=both.y, query_offsets=both.query_offsets)
    pairs_only = cls(use_label_pairs=False)
    total = cls().loss(s, both)
    assert total == pytest.approx(cls().loss(s, labels_only) + pairs_only.loss(s, both))
    g_both, _ = grad_hess(cls(), s, both)
    g_lab, _ = grad_hess(cls(), s, labels_only)
    g_pairs, _ = grad_hess(pairs_only, s, both)
    np.testing.assert_allclose(g_both, g_lab + g_pairs, rtol=1e-6, atol=1e-7)
    # query 1 has equal labels: it learns from its explicit pair only
    assert g_lab[4:7].tolist() == [0, 0, 0]
    assert np.any(g_both[4:7] != 0)
    check_finite_differences(cls(), s, both)


def test_explicit_pair_errors():
    off = np.array([0, 4, 7])
    X = np.zeros((7, 1))

    def data(pref, other, weight=None, y=None):
        pp = PreferencePairs(np.array(pref), np.array(other), weight)
        return RankingDataset(X=X, y=y, query_offsets=off, pairs=pp)

    with pytest.raises(ValueError, match="different queries"):
        RankNet().prepare(data([1], [5]))
    with pytest.raises(ValueError, match="preferred to itself"):
        RankNet().prepare(data([2], [2]))
    with pytest.raises(ValueError, match="out of range"):
        RankNet().prepare(data([2], [9]))
    with pytest.raises(ValueError, match="weight"):
        RankNet().prepare(data([1], [2], weight=np.array([-1.0])))
    with pytest.raises(ValueError, match="use_label_pairs=True"):
        RankNet(use_label_pairs=True).prepare(data([1], [2]))
    with pytest.raises(ValueError, match="neither"):
        RankBoost().prepare(RankingDataset(X=X, y=None, query_offsets=off))


# --- registry, params -----------------------------------------------------------------


def test_registry_and_params():
    rn = get_objective("ranknet", sigma=2.0)
    rb = get_objective("rankboost", pair_method="topk", truncation_level=5)
    assert isinstance(rn, RankNet)
    assert isinstance(rb, RankBoost)
    assert rn.get_params()["pair_method"] == "all"
    assert rn.get_params()["sigma"] == 2.0
    assert rb.get_params()["truncation_level"] == 5
    assert rn.is_pairwise
    assert rb.is_pairwise
    with pytest.raises(ValueError, match="sigma"):
        RankNet(sigma=0)
    with pytest.raises(ValueError, match="use_label_pairs"):
        RankNet(use_label_pairs="yes")


# --- agreement with XGBoost rank:pairwise ---------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_ranknet_agrees_with_xgboost_rank_pairwise(seed):
    # XGBoost does not expose gradients: one round with eta = 1, no regularisation and a
    # split candidate per document; each leaf stores cover = sum(h) and
    # value = -sum(g)/sum(h).  XGBoost's hessian is 2 rho (1 - rho) (ours with
    # sigma = 1, times 2); its two normalisations are switched off (RankNet has none).
    xgb = pytest.importorskip("xgboost")
    import json

    rng = np.random.default_rng(seed)
    group = [6, 5, 7, 3]
    n = sum(group)
    y = rng.integers(0, 4, n).astype(np.float64)
    s = rng.normal(size=n)
    X = np.arange(n, dtype=np.float64).reshape(-1, 1)
    d = xgb.DMatrix(X, label=y, base_margin=s)
    d.set_group(group)
    params = dict(
        objective="rank:pairwise",
        eta=1.0,
        reg_lambda=0.0,
        min_child_weight=0.0,
        max_depth=12,
        tree_method="exact",
        base_score=0.0,
        nthread=1,
        lambdarank_pair_method="topk",
        lambdarank_num_pair_per_sample=n,
        lambdarank_normalization=False,
        lambdarank_score_normalization=False,
    )
    booster = xgb.train(params, d, num_boost_round=1)
    leaves = booster.predict(d, pred_leaf=True).astype(int).ravel()
    sums = {}

    def walk(node):
        if "leaf" in node:
            sums[node["nodeid"]] = (-node["leaf"] * node["cover"], node["cover"])
        else:
            for child in node["children"]:
                walk(child)

    walk(json.loads(booster.get_dump(with_stats=True, dump_format="json")[0]))
    off = np.concatenate([[0], np.cumsum(group)]).astype(np.int64)
    data = RankingDataset(X=np.zeros((n, 1)), y=y, query_offsets=off)
    g, h = grad_hess(RankNet(), s, data)
    for k, (G, H) in sums.items():
        m = leaves == k
        assert float(g[m].sum()) == pytest.approx(G, rel=1e-4, abs=1e-5)
        assert 2.0 * float(h[m].sum()) == pytest.approx(H, rel=1e-4, abs=1e-5)

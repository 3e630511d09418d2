"""LambdaMART: |dZ| kernels, gradients against a NumPy reference and against finite
differences of the frozen-weight surrogate, PairTerms, determinism, hand examples."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from ltrboost._numba import threads
from ltrboost.dataset import RankingDataset
from ltrboost.objectives.lambdamart import (
    LambdaMART,
    _ap_prefix,
    _ap_reference,
    _delta_ap,
    _delta_err,
    _delta_ndcg,
    _err_prefix,
    _err_reference,
    _lambdamart_reference,
)
from ltrboost.objectives.registry import get_objective

SEEDS = [0, 1, 2]
METRICS = ["ndcg", "err", "map"]


def make_data(seed, sizes=(1, 2, 4, 6, 9, 13, 5), max_label=4, ties=True, weights=None):
    """Random queries including a 1-document query, an all-equal-labels query, an
    all-zero-labels query (zero IDCG) and tied scores."""
    rng = np.random.default_rng(seed)
    sizes = [*list(sizes), 4, 3]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    y = rng.integers(0, max_label + 1, n).astype(np.float64)
    y[offsets[-3] : offsets[-2]] = 2.0  # all labels equal
    y[offsets[-2] : offsets[-1]] = 0.0  # zero ideal DCG, no relevant document
    s = rng.normal(size=n)
    if ties:
        s = np.round(s * 2) / 2  # many tied scores
    w = None
    if weights == "query":
        wq = rng.uniform(0.5, 2.0, len(sizes))
        w = np.repeat(wq, sizes).astype(np.float32)
    elif weights == "doc":
        w = rng.uniform(0.5, 2.0, n).astype(np.float32)
    data = RankingDataset(X=np.zeros((n, 1)), y=y, query_offsets=offsets, weights=w)
    return data, s


def grad_hess(obj, s, data, iteration=0):
    g = np.full(data.n_samples, np.nan, dtype=np.float32)
    h = np.full(data.n_samples, np.nan, dtype=np.float32)
    obj.gradient_hessian(s, data, g, h, iteration=iteration)
    return g, h


# --- |dZ| kernels --------------------------------------------------------------------


def delta_err(r, p, s, x, y):
    a, b = min(x, y), max(x, y)
    return _delta_err(r[a], r[b], p[a], p[b], s[b] - s[a + 1], a, b)


def delta_ap(rel, c, t, x, y):
    a, b = min(x, y), max(x, y)
    return _delta_ap(rel[a], rel[b], c[a], c[b], t[b] - t[a + 1], a, b)


def test_delta_ndcg_seed003_example():
    # seed 003: r = [0, 1, 0, 1, 1], linear gain, 3 relevant -> NDCG@5 = 0.68;
    # swapping ranks 1 and 2 gives 0.85 (dNDCG = 0.17), ranks 3 and 4 gives 0.71 (0.03)
    r = np.array([0.0, 1.0, 0.0, 1.0, 1.0])
    disc = 1.0 / np.log2(np.arange(5) + 2.0)
    idcg = disc[:3].sum()
    assert np.sum(r * disc) / idcg == pytest.approx(0.68, abs=0.005)
    d01 = _delta_ndcg(r[0], r[1], disc[0], disc[1], 1.0 / idcg)
    d23 = _delta_ndcg(r[2], r[3], disc[2], disc[3], 1.0 / idcg)
    assert d01 == pytest.approx(0.17, abs=0.005)
    assert d23 == pytest.approx(0.03, abs=0.005)


@pytest.mark.parametrize("seed", SEEDS)
def test_delta_err_matches_bruteforce_swap(seed):
    rng = np.random.default_rng(seed)
    for n in [2, 3, 7, 20]:
        y = rng.integers(0, 5, n).astype(np.float64)
        r = (np.exp2(y) - 1.0) / 16.0
        p = np.empty(n + 1)
        s = np.empty(n + 1)
        _err_prefix(r, p, s)
        assert s[n] == pytest.approx(_err_reference(r), rel=1e-12)
        base = _err_reference(r)
        for a in range(n):
            for b in range(n):
                if a == b:
                    continue
                swapped = r.copy()
                swapped[[a, b]] = r[[b, a]]
                expected = _err_reference(swapped) - base
                got = delta_err(r, p, s, a, b)
                assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_delta_ap_matches_bruteforce_swap(seed):
    rng = np.random.default_rng(seed)
    for n in [2, 3, 7, 20]:
        rel = (rng.random(n) < 0.4).astype(np.float64)
        if rel.sum() == 0:
            rel[n - 1] = 1.0
        c = np.empty(n + 1)
        t = np.empty(n + 1)
        _ap_prefix(rel, c, t)
        base = _ap_reference(rel)
        for a in range(n):
            for b in range(n):
                if a == b:
                    continue
                swapped = rel.copy()
                swapped[[a, b]] = rel[[b, a]]
                expected = _ap_reference(swapped) - base
                got = delta_ap(rel, c, t, a, b) / rel.sum()
                assert got == pytest.approx(expected, abs=1e-12)


def test_delta_ap_hand_example():
    # [rel, irr]: AP = 1; swapped [irr, rel]: AP = 1/2
    rel = np.array([1.0, 0.0])
    c = np.empty(3)
    t = np.empty(3)
    _ap_prefix(rel, c, t)
    assert delta_ap(rel, c, t, 0, 1) == pytest.approx(-0.5)
    assert delta_ap(
        np.array([0.0, 1.0]), np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, 0.5]), 0, 1
    ) == pytest.approx(0.5)


# --- hand-computed 3-document example ---------------------------------------------


def _three_doc_data():
    y = np.array([2.0, 0.0, 1.0])
    s = np.array([0.0, 1.0, 0.5])  # ranking: doc1 (r0), doc2 (r1), doc0 (r2)
    data = RankingDataset(X=np.zeros((3, 1)), y=y, query_offsets=np.array([0, 3]))
    return data, s


def _three_doc_expected(normalize):
    # gains 2^y - 1 = [3, 0, 1]; ranks r(doc0)=2, r(doc1)=0, r(doc2)=1
    d = [1.0 / math.log2(2 + k) for k in range(3)]  # discounts of ranks 0, 1, 2
    idcg = 3 * d[0] + 1 * d[1] + 0 * d[2]
    s = [0.0, 1.0, 0.5]
    # pairs (i preferred, j): (0,1), (0,2), (2,1)
    pairs = [
        (0, 1, abs(3 - 0) * abs(d[2] - d[0]) / idcg),
        (0, 2, abs(3 - 1) * abs(d[2] - d[1]) / idcg),
        (2, 1, abs(1 - 0) * abs(d[1] - d[0]) / idcg),
    ]
    g = [0.0, 0.0, 0.0]
    h = [0.0, 0.0, 0.0]
    sum_lambdas = 0.0
    for i, j, dz in pairs:
        if normalize:  # best score 1.0 != worst score 0.0
            dz /= 0.01 + abs(s[i] - s[j])
        rho = 1.0 / (1.0 + math.exp(s[i] - s[j]))
        g[i] -= dz * rho
        g[j] += dz * rho
        h[i] += dz * rho * (1 - rho)
        h[j] += dz * rho * (1 - rho)
        sum_lambdas += 2 * dz * rho
    if normalize:
        f = math.log2(1 + sum_lambdas) / sum_lambdas
        g = [x * f for x in g]
        h = [x * f for x in h]
    return np.array(g), np.array(h)


@pytest.mark.parametrize("normalize", [False, True])
def test_three_documents_by_hand(normalize):
    data, s = _three_doc_data()
    obj = LambdaMART(lambda_normalization=normalize, pair_method="all")
    g, h = grad_hess(obj, s, data)
    eg, eh = _three_doc_expected(normalize)
    np.testing.assert_allclose(g, eg, rtol=1e-6)
    np.testing.assert_allclose(h, eh, rtol=1e-6)
    # spelled out for the unnormalised case: g_0 = -(dZ01 rho01 + dZ02 rho02)
    if not normalize:
        d = [1.0, 1.0 / math.log2(3), 0.5]
        idcg = 3 + d[1]
        dz01 = 3 * (1.0 - 0.5) / idcg
        dz02 = 2 * (d[1] - 0.5) / idcg
        rho01 = 1 / (1 + math.exp(-1.0))
        rho02 = 1 / (1 + math.exp(-0.5))
        assert g[0] == pytest.approx(-(dz01 * rho01 + dz02 * rho02), rel=1e-6)
    assert g.sum() == pytest.approx(0.0, abs=1e-7)  # forces cancel within a query


# --- kernel vs reference -------------------------------------------------------------

CONFIGS = [
    dict(pair_method="topk", truncation_level=3),
    dict(pair_method="topk", truncation_level=30),
    dict(pair_method="all", truncation_level=None),
    dict(pair_method="all", truncation_level=2),
    dict(pair_method="sampled", truncation_level=5, pairs_per_sample=2),
]


@pytest.mark.seed_per_case(
    SEEDS, metric=METRICS, normalize=[False, True], config=CONFIGS, weights=[None, "doc"]
)
def test_kernel_matches_reference(seed, metric, normalize, config, weights):
    data, s = make_data(seed, weights=weights)
    params = dict(
        lambda_metric=metric,
        lambda_normalization=normalize,
        sigma=1.3,
        random_state=11,
        **config,
    )
    obj = LambdaMART(**params)
    g, h = grad_hess(obj, s, data, iteration=2)
    rg, rh, rloss, rpairs = _lambdamart_reference(
        s, data.y, data.query_offsets, weights=data.weights, iteration=2, **params
    )
    scale = max(1.0, np.abs(rg).max())
    np.testing.assert_allclose(g, rg, atol=1e-6 * scale, rtol=1e-5)
    np.testing.assert_allclose(h, rh, atol=1e-6 * scale, rtol=1e-5)
    assert obj.loss(s, data, iteration=2) == pytest.approx(rloss, rel=1e-10)
    pt = obj.pair_terms(s, data, iteration=2)
    assert [(int(i), int(j)) for i, j in zip(pt.doc_i, pt.doc_j, strict=True)] == [
        (i, j) for i, j, _ in rpairs
    ]
    np.testing.assert_allclose(pt.rho, [r for _, _, r in rpairs], rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("metric", METRICS)
def test_gain_linear_and_relevance_threshold(metric):
    data, s = make_data(5, max_label=6)
    params = dict(lambda_metric=metric, gain="linear", relevance_threshold=3, pair_method="all")
    g, h = grad_hess(LambdaMART(**params), s, data)
    rg, rh, _, _ = _lambdamart_reference(s, data.y, data.query_offsets, **params)
    np.testing.assert_allclose(g, rg, atol=1e-6, rtol=1e-5)
    np.testing.assert_allclose(h, rh, atol=1e-6, rtol=1e-5)


# --- finite differences of the frozen surrogate -----------------------------------


def _check_finite_differences(obj, s, data, eps1=1e-5, eps2=1e-3, iteration=0):
    g, h = grad_hess(obj, s, data, iteration=iteration)

    def f(x):
        return obj.loss_fixed_weights(x, data, s, iteration=iteration)

    f0 = f(s)
    assert f0 == pytest.approx(obj.loss(s, data, iteration=iteration), rel=1e-12)
    num_g = np.empty(s.size)
    num_h = np.empty(s.size)
    for k in range(s.size):
        e = np.zeros(s.size)
        e[k] = eps1
        num_g[k] = (f(s + e) - f(s - e)) / (2 * eps1)
        e[k] = eps2
        num_h[k] = (f(s + e) - 2 * f0 + f(s - e)) / eps2**2
    scale = max(1.0, np.abs(num_g).max())
    np.testing.assert_allclose(g, num_g, rtol=1e-4, atol=1e-6 * scale)
    np.testing.assert_allclose(h, num_h, rtol=1e-3, atol=1e-5 * scale)
    return g, h


@pytest.mark.seed_per_case(
    SEEDS, metric=METRICS, normalize=[False, True], pair_method=["topk", "all", "sampled"]
)
def test_gradients_hessians_numerically(seed, metric, normalize, pair_method):
    data, s = make_data(seed)
    obj = LambdaMART(
        lambda_metric=metric,
        lambda_normalization=normalize,
        pair_method=pair_method,
        truncation_level=3,
        sigma=0.7,
    )
    g, h = _check_finite_differences(obj, s, data, iteration=1)
    assert np.abs(g).max() > 0  # the test is not vacuous
    # documents of queries that contribute nothing
    off = data.query_offsets
    for q in (0, data.n_queries - 2, data.n_queries - 1):
        assert np.all(g[off[q] : off[q + 1]] == 0)
        assert np.all(h[off[q] : off[q + 1]] == 0)


def test_gradients_numerically_with_query_weights():
    data, s = make_data(4, weights="query")
    obj = LambdaMART(pair_method="all", truncation_level=None)
    _check_finite_differences(obj, s, data)


def test_frozen_loss_is_not_the_moving_loss():
    # |dZ| depends on the ranks: away from the reference the two losses differ
    data, s = make_data(0, ties=False)
    obj = LambdaMART(pair_method="all")
    s2 = s + np.random.default_rng(1).normal(size=s.size)
    assert obj.loss_fixed_weights(s2, data, s) != pytest.approx(obj.loss(s2, data))


# --- PairTerms -----------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("pair_method", ["topk", "all", "sampled"])
@pytest.mark.parametrize("weights", [None, "query"])
def test_pair_terms_sum_to_hessians(seed, metric, pair_method, weights):
    data, s = make_data(seed, weights=weights)
    obj = LambdaMART(lambda_metric=metric, pair_method=pair_method, truncation_level=3)
    _, h = grad_hess(obj, s, data)
    pt = obj.pair_terms(s, data)
    assert pt.doc_i.dtype == np.int32
    assert pt.doc_j.dtype == np.int32
    assert pt.rho.dtype == np.float64
    assert pt.pair_offsets.dtype == np.int64
    assert pt.pair_offsets[0] == 0
    assert pt.pair_offsets[-1] == pt.rho.size
    per_doc = np.zeros(data.n_samples)
    np.add.at(per_doc, pt.doc_i, pt.rho)
    np.add.at(per_doc, pt.doc_j, pt.rho)
    np.testing.assert_allclose(per_doc, h, rtol=1e-5, atol=1e-7)
    # CSR by query, preferred document first
    off = data.query_offsets
    for q in range(data.n_queries):
        sl = slice(pt.pair_offsets[q], pt.pair_offsets[q + 1])
        for d in (pt.doc_i[sl], pt.doc_j[sl]):
            assert np.all((d >= off[q]) & (d < off[q + 1]))
        assert np.all(data.y[pt.doc_i[sl]] > data.y[pt.doc_j[sl]])


def test_pair_terms_are_exactly_the_enumerated_pairs():
    from ltrboost.objectives._pairs import _enumerate_pairs_one_query_reference

    data, s = make_data(3)
    k = 4
    obj = LambdaMART(pair_method="topk", truncation_level=k)
    pt = obj.pair_terms(s, data)
    off = data.query_offsets
    for q in range(data.n_queries):
        lo, hi = off[q], off[q + 1]
        order = np.argsort(-s[lo:hi], kind="stable")
        rank = np.empty(hi - lo, dtype=np.int64)
        rank[order] = np.arange(hi - lo)
        a, b = _enumerate_pairs_one_query_reference(data.y[lo:hi][order], "topk", k, 1, 0)
        expected = set(zip(a.tolist(), b.tolist(), strict=True))
        sl = slice(pt.pair_offsets[q], pt.pair_offsets[q + 1])
        ri, rj = rank[pt.doc_i[sl] - lo], rank[pt.doc_j[sl] - lo]
        got = list(zip(np.minimum(ri, rj).tolist(), np.maximum(ri, rj).tolist(), strict=True))
        assert len(got) == len(set(got))
        assert set(got) == expected


def test_pair_terms_conserve_total_hessian_with_document_weights():
    # per-document weights: each pair carries (w_i + w_j)/2 rho, so per query
    # sum(2 rho) == sum(h) although per document the two differ
    data, s = make_data(2, weights="doc")
    obj = LambdaMART(pair_method="all")
    _, h = grad_hess(obj, s, data)
    pt = obj.pair_terms(s, data)
    off = data.query_offsets
    for q in range(data.n_queries):
        sl = slice(pt.pair_offsets[q], pt.pair_offsets[q + 1])
        assert 2 * pt.rho[sl].sum() == pytest.approx(h[off[q] : off[q + 1]].sum(), rel=1e-5)


# --- determinism ---------------------------------------------------------------------


@pytest.mark.parametrize("pair_method", ["topk", "sampled"])
def test_same_result_for_any_thread_count(pair_method):
    data, s = make_data(0, sizes=[7] * 40 + [1, 30])
    obj = LambdaMART(pair_method=pair_method, lambda_metric="err", random_state=3)
    results = []
    for n_threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
        with threads(n_threads):
            g, h = grad_hess(obj, s, data, iteration=5)
            pt = obj.pair_terms(s, data, iteration=5)
            results.append((g, h, pt, obj.loss(s, data, iteration=5)))
    for g, h, pt, loss in results[1:]:
        np.testing.assert_array_equal(g, results[0][0])
        np.testing.assert_array_equal(h, results[0][1])
        for a, b in zip(pt, results[0][2], strict=True):
            np.testing.assert_array_equal(a, b)
        assert loss == results[0][3]


def test_sampled_pairs_reproducible_by_seed_and_iteration():
    data, s = make_data(1, sizes=[12] * 10)
    a = grad_hess(LambdaMART(pair_method="sampled", random_state=1), s, data, 3)
    b = grad_hess(LambdaMART(pair_method="sampled", random_state=1), s, data, 3)
    c = grad_hess(LambdaMART(pair_method="sampled", random_state=2), s, data, 3)
    d = grad_hess(LambdaMART(pair_method="sampled", random_state=1), s, data, 4)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])
    assert not np.array_equal(a[0], d[0])
    # the per-query seed is random_state + iteration * n_queries + q
    e = grad_hess(LambdaMART(pair_method="sampled", random_state=1 + data.n_queries), s, data, 2)
    np.testing.assert_array_equal(a[0], e[0])


# --- ties, validation, registry ------------------------------------------------------


def test_ties_keep_input_order():
    # equal scores: the first document in input order is ranked first
    y = np.array([0.0, 1.0])
    data = RankingDataset(X=np.zeros((2, 1)), y=y, query_offsets=np.array([0, 2]))
    obj = LambdaMART(pair_method="topk", truncation_level=1, lambda_normalization=False)
    g, _ = grad_hess(obj, np.zeros(2), data)
    # rank 0 = doc 0 (label 0), rank 1 = doc 1: the pair (0, 1) is in the top-1
    dz = 1.0 * (1.0 - 1.0 / math.log2(3)) / 1.0
    np.testing.assert_allclose(g, [0.5 * dz, -0.5 * dz], rtol=1e-6)


def test_label_validation():
    off = np.array([0, 3])
    X = np.zeros((3, 1))
    obj = LambdaMART()
    with pytest.raises(ValueError, match="non-negative integer"):
        obj.prepare(RankingDataset(X=X, y=np.array([0.0, -1.0, 2.0]), query_offsets=off))
    with pytest.raises(ValueError, match="non-negative integer"):
        obj.prepare(RankingDataset(X=X, y=np.array([0.0, 0.5, 2.0]), query_offsets=off))
    with pytest.raises(ValueError, match="gain='linear'"):
        obj.prepare(RankingDataset(X=X, y=np.array([0.0, 40.0, 2.0]), query_offsets=off))
    LambdaMART(gain="linear").prepare(
        RankingDataset(X=X, y=np.array([0.0, 40.0, 2.0]), query_offsets=off)
    )
    # |delta ERR| takes grades up to 31 (its error grows like 2^y_max eps above); the
    # ERR metric accepts larger ones (tests/metrics/test_err.py)
    LambdaMART(lambda_metric="err").prepare(
        RankingDataset(X=X, y=np.array([0.0, 31.0, 2.0]), query_offsets=off)
    )
    with pytest.raises(ValueError, match="ERR"):
        LambdaMART(lambda_metric="err").prepare(
            RankingDataset(X=X, y=np.array([0.0, 32.0, 2.0]), query_offsets=off)
        )
    with pytest.raises(ValueError, match="ranknet"):
        obj.prepare(RankingDataset(X=X, y=None, query_offsets=off))


def test_err_lambdas_use_the_metrics_stop_probabilities():
    """One ERR: every pair's |dZ| is the change of ``get_metric("err")`` itself when the
    two documents swap ranks, up to the largest grade the lambdas accept (31)."""
    from ltrboost.metrics import get_metric

    rng = np.random.default_rng(5)
    n = 8
    y = rng.choice([0.0, 3.0, 17.0, 31.0], n)
    y[0], y[1] = 31.0, 0.0
    s = rng.normal(size=n)
    off = np.array([0, n])
    data = RankingDataset(X=np.zeros((n, 1)), y=y, query_offsets=off)
    obj = LambdaMART(lambda_metric="err", pair_method="all", lambda_normalization=False)
    terms = obj.pair_terms(s, data)
    err = get_metric("err")
    base = err(s, y, off)
    for i, j, rho in zip(terms.doc_i, terms.doc_j, terms.rho, strict=True):
        swapped = s.copy()
        swapped[[i, j]] = s[[j, i]]
        dz = abs(err(swapped, y, off) - base)
        r = 1 / (1 + np.exp(s[i] - s[j]))
        assert rho == pytest.approx(dz * r * (1 - r), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        (dict(lambda_metric="mrr"), "lambda_metric"),
        (dict(sigma=0.0), "sigma=0.0"),
        (dict(sigma=-1), "sigma"),
        (dict(pair_method="pairs"), "pair_method"),
        (dict(truncation_level=0), "truncation_level"),
        (dict(pairs_per_sample=0), "pairs_per_sample"),
        (dict(gain="log"), "gain"),
        (dict(random_state=-1), "random_state"),
    ],
)
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        LambdaMART(**params)


def test_registry_and_params():
    obj = get_objective("lambdamart", lambda_metric="map", truncation_level=None)
    assert isinstance(obj, LambdaMART)
    assert obj.is_pairwise
    assert obj.name == "lambdamart"
    p = obj.get_params()
    assert p["lambda_metric"] == "map"
    assert p["truncation_level"] is None
    assert p["sigma"] == 1.0
    assert p["pair_method"] == "topk"
    assert obj.default_metric == "map"


def test_constants_are_cached_per_dataset():
    data, s = make_data(0)
    obj = LambdaMART()
    obj.prepare(data)
    n_keys = len(data.cache)
    grad_hess(obj, s, data)
    assert len(data.cache) == n_keys


# --- agreement with LightGBM and XGBoost ------------------------------------------
#
# Neither library exposes its gradients, so one boosting round with learning rate 1, no
# regularisation and one split candidate per document is trained, starting from our
# scores (init_score / base_margin).  Each leaf then stores sum(h) ("leaf_weight" /
# "cover") and -sum(g)/sum(h) (the leaf value), which must equal the sums of our
# gradients and hessians over the leaf's documents.


def _leaf_sums_lightgbm(y, group, scores, weight=None, **params):
    lgb = pytest.importorskip("lightgbm")
    n = y.size
    X = np.arange(n, dtype=np.float64).reshape(-1, 1)
    p = dict(
        objective="lambdarank",
        num_leaves=n,
        min_data_in_leaf=1,
        min_data_in_bin=1,
        min_sum_hessian_in_leaf=0.0,
        min_gain_to_split=0.0,
        lambda_l2=0.0,
        learning_rate=1.0,
        max_bin=n + 1,
        verbose=-1,
        num_threads=1,
        deterministic=True,
    )
    p.update(params)
    ds = lgb.Dataset(X, y, group=group, init_score=scores, weight=weight, params=p)
    booster = lgb.train(p, ds, num_boost_round=1)
    leaves = booster.predict(X, pred_leaf=True).ravel().astype(int)

    def walk(node):
        if "leaf_index" in node:
            yield node
        else:
            yield from walk(node["left_child"])
            yield from walk(node["right_child"])

    tree = booster.dump_model()["tree_info"][0]["tree_structure"]
    sums = {
        nd["leaf_index"]: (-nd["leaf_value"] * nd["leaf_weight"], nd["leaf_weight"])
        for nd in walk(tree)
    }
    return leaves, sums


def _leaf_sums_xgboost(y, group, scores, objective, **params):
    xgb = pytest.importorskip("xgboost")
    import json

    n = y.size
    X = np.arange(n, dtype=np.float64).reshape(-1, 1)
    d = xgb.DMatrix(X, label=y, base_margin=scores)
    d.set_group(group)
    p = dict(
        objective=objective,
        eta=1.0,
        reg_lambda=0.0,
        min_child_weight=0.0,
        max_depth=12,
        tree_method="exact",
        base_score=0.0,
        lambdarank_pair_method="topk",
        lambdarank_num_pair_per_sample=n,
        nthread=1,
    )
    p.update(params)
    booster = xgb.train(p, d, num_boost_round=1)
    leaves = booster.predict(d, pred_leaf=True).astype(int).ravel()
    sums = {}

    def walk(node):
        if "leaf" in node:
            sums[node["nodeid"]] = (-node["leaf"] * node["cover"], node["cover"])
        else:
            for child in node["children"]:
                walk(child)

    walk(json.loads(booster.get_dump(with_stats=True, dump_format="json")[0]))
    return leaves, sums


def _assert_leaf_sums(leaves, sums, g, h, h_factor=1.0, rtol=1e-5):
    G = np.array([g[leaves == k].sum() for k in sums], dtype=np.float64)
    H = np.array([h[leaves == k].sum() for k in sums], dtype=np.float64) * h_factor
    eG = np.array([v[0] for v in sums.values()])
    eH = np.array([v[1] for v in sums.values()])
    np.testing.assert_allclose(G, eG, rtol=rtol, atol=rtol * np.abs(eG).max())
    np.testing.assert_allclose(H, eH, rtol=rtol, atol=rtol * np.abs(eH).max())


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("sigma", [1.0, 2.0])
@pytest.mark.parametrize("truncation_level", [3, 30])
@pytest.mark.parametrize("ties", [False, True])
def test_agrees_with_lightgbm_lambdarank(normalize, sigma, truncation_level, ties):
    rng = np.random.default_rng(0)
    group = [6, 5, 7, 1, 4]
    n = sum(group)
    y = rng.integers(0, 4, n).astype(np.float64)
    s = rng.normal(size=n)
    if ties:
        s = np.round(s)
    w = rng.uniform(0.5, 2.0, n).astype(np.float32)  # per-document, LightGBM's convention
    leaves, sums = _leaf_sums_lightgbm(
        y,
        group,
        s,
        weight=w,
        lambdarank_norm=normalize,
        sigmoid=sigma,
        lambdarank_truncation_level=truncation_level,
    )
    off = np.concatenate([[0], np.cumsum(group)]).astype(np.int64)
    data = RankingDataset(X=np.zeros((n, 1)), y=y, query_offsets=off, weights=w)
    obj = LambdaMART(lambda_normalization=normalize, sigma=sigma, truncation_level=truncation_level)
    g, h = grad_hess(obj, s, data)
    # LightGBM tabulates the sigmoid (2^20 bins): agreement to ~1e-4
    _assert_leaf_sums(leaves, sums, g, h, rtol=2e-3)


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize(("metric", "objective"), [("ndcg", "rank:ndcg"), ("map", "rank:map")])
def test_agrees_with_xgboost(normalize, metric, objective):
    # XGBoost's hessian is 2 rho (1 - rho) |dZ| (no sigma): ours times 2 with sigma = 1.
    # lambdarank_normalization + lambdarank_score_normalization: lambda_normalization
    rng = np.random.default_rng(1)
    group = [6, 5, 7, 4]
    n = sum(group)
    max_label = 3 if metric == "ndcg" else 1
    y = rng.integers(0, max_label + 1, n).astype(np.float64)
    s = rng.normal(size=n)  # no ties: XGBoost ranks float32 predictions
    leaves, sums = _leaf_sums_xgboost(
        y,
        group,
        s,
        objective,
        lambdarank_normalization=normalize,
        lambdarank_score_normalization=normalize,
    )
    off = np.concatenate([[0], np.cumsum(group)]).astype(np.int64)
    data = RankingDataset(X=np.zeros((n, 1)), y=y, query_offsets=off)
    obj = LambdaMART(
        lambda_metric=metric,
        lambda_normalization=normalize,
        pair_method="all",
        truncation_level=None,
    )
    g, h = grad_hess(obj, s, data)
    _assert_leaf_sums(leaves, sums, g, h, h_factor=2.0, rtol=1e-4)


def test_pair_terms_fixed_weights_at_reference_equal_pair_terms():
    data, s = make_data(1)
    obj = LambdaMART(lambda_metric="err")
    a = obj.pair_terms(s, data)
    b = obj.pair_terms_fixed_weights(s, data, s.copy())
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12)
    # away from the reference the pair set stays the reference's
    c = obj.pair_terms_fixed_weights(s[::-1].copy(), data, s)
    np.testing.assert_array_equal(a.doc_i, c.doc_i)
    np.testing.assert_array_equal(a.doc_j, c.doc_j)


# --- fused NDCG fast path ------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("truncation", [0, 3, 30])
@pytest.mark.parametrize("weighted", [False, True])
def test_ndcg_driver_is_bit_identical_to_general_engine(seed, normalize, truncation, weighted):
    """LambdaMART's fused NDCG driver (what a plain run calls) gives the general
    engine's gradients, hessians and pair counts bit for bit, over queries that use the
    fused loop and queries that have nothing to rank (one document, one label, no
    positive gain)."""
    from ltrboost.objectives.lambdamart import _lambdamart_ndcg_all_queries
    from ltrboost.objectives.pair_engine import METRIC_NDCG, _gradients_all_queries
    from ltrboost.objectives.pair_selection import PAIR_ALL, PAIR_TOPK

    rng = np.random.default_rng(seed)
    sizes = [1, 6, 0, 9, 4, 12, 2, 25]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n, nq = int(offsets[-1]), len(sizes)
    labels = rng.integers(0, 5, n).astype(np.float64)
    labels[offsets[4] : offsets[5]] = 2.0  # one label only
    scores = np.round(rng.normal(size=n) * 2) / 2
    values = 2.0**labels - 1.0
    inv_norm = rng.uniform(0.01, 0.1, nq)
    inv_norm[3] = 0.0  # no positive gain
    weights = rng.uniform(0.5, 2, n).astype(np.float32) if weighted else np.zeros(0, np.float32)
    method = PAIR_TOPK if truncation else PAIR_ALL
    zeros_q = np.zeros(nq + 1, np.int64)
    g1, h1 = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
    c1 = np.full(nq, -1, np.int64)
    _lambdamart_ndcg_all_queries(
        scores, labels, values, inv_norm, weights, offsets, method, truncation, 1.3,
        normalize, g1, h1, c1,
    )  # fmt: skip
    for chunk in (1 << 20, 2):  # the engine streams label pairs in chunks
        g2, h2 = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
        c2 = np.full(nq, -1, np.int64)
        _gradients_all_queries(
            scores, labels, values, inv_norm, weights, offsets, zeros_q,
            np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0), method,
            truncation, 1, 0, METRIC_NDCG, 0, 1.3, normalize, chunk, g2, h2, c2,
        )  # fmt: skip
        np.testing.assert_array_equal(c1, c2)
        np.testing.assert_array_equal(g1, g2)
        np.testing.assert_array_equal(h1, h2)
    assert c1.sum() > 0


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("truncation_level", [None, 3, 30])
@pytest.mark.parametrize("weights", [None, "doc"])
@pytest.mark.parametrize("spread", [1.0, 2000.0])
def test_ndcg_pair_terms_are_the_general_engines_bit_for_bit(
    seed, normalize, truncation_level, weights, spread
):
    """LambdaMART's NDCG pair terms are the general engine's (an OLE run's own pair
    kernels are checked against them in test_ole_pairs): the same pairs in the same
    order, the same rho bit for bit, the same offsets, over queries with nothing to
    rank, tied scores and labels, document weights, the lambdarank_norm factor, and
    scores spread so far that some exponentials are tiny (``spread``: the direct
    sigmoid form); and they sum to the gradient's hessians."""
    from ltrboost.objectives.pair_engine import PairwiseObjective

    data, s = make_data(seed, sizes=(1, 2, 4, 6, 9, 13, 5, 40), weights=weights)
    s = s * spread
    kw = dict(lambda_normalization=normalize)
    if truncation_level is None:
        obj = LambdaMART(pair_method="all", **kw)
    else:
        obj = LambdaMART(truncation_level=truncation_level, **kw)
    fast = obj.pair_terms(s, data)
    general = PairwiseObjective._pair_terms(obj, obj._scores(s, data, "scores"), None, data, 0)
    for a, b in zip(fast, general, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert fast.rho.shape[0] > 0
    if weights is not None:
        return  # a pair weighs (w_i + w_j) / 2, a document's hessian w_d
    # and they still sum to the hessians the gradient gives
    _, h = grad_hess(obj, s, data)
    per_doc = np.zeros(data.n_samples)
    np.add.at(per_doc, fast.doc_i, fast.rho)
    np.add.at(per_doc, fast.doc_j, fast.rho)
    np.testing.assert_allclose(per_doc, h, rtol=1e-5, atol=1e-12)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0])
def test_sigmoid_from_exp_matches_direct_form(sigma):
    """The ratio form e_j / (e_i + e_j) equals 1 / (1 + exp(x)), also where it falls
    back to the direct form (scores far below the query's best).  Its relative error
    is that of rounding ``s - s_max`` (~ulp(|s_max|) * sigma: 1e-13 for scores of
    300); gradients are float32 anyway."""
    from ltrboost.objectives.lambdamart import _sigmoid_from_exp, _sigmoid_pair

    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.normal(0, 5, 200), [-400.0, -800.0, 300.0]])
    s_max = scores.max()
    e = np.exp(sigma * (scores - s_max))
    for i in range(0, scores.size, 7):
        for j in range(scores.size):
            x = sigma * (scores[i] - scores[j])
            rho, omr = _sigmoid_from_exp(e[i], e[j], x)
            r_ref, o_ref = _sigmoid_pair(x)
            assert rho == pytest.approx(r_ref, rel=1e-11, abs=1e-300)
            assert omr == pytest.approx(o_ref, rel=1e-11, abs=1e-300)
            assert math.isfinite(rho)
            assert math.isfinite(omr)


def _ndcg_fused_reference(s, lab, v, inv_norm, weights, n_outer, sigma, normalize):
    """LightGBM's double loop of the fused kernel in plain Python, one pair at a time
    (the kernel's loop before it was vectorized); inputs in rank order.  Returns the
    float64 gradients and hessians by rank and the pair count."""
    from ltrboost.metrics._dcg import discount
    from ltrboost.objectives.lambdamart import _exp_below_max, _sigmoid_from_exp

    n = s.shape[0]
    disc = [discount(r) for r in range(n)]  # the kernel's own discount and exp
    ex = np.empty(n)
    _exp_below_max(s, s[0], sigma, ex)
    g, h = [0.0] * n, [0.0] * n
    scale_by_diff = normalize and s[0] != s[n - 1]
    sum_lambdas, n_pairs = 0.0, 0
    for a in range(n_outer):
        g_a, h_a = g[a], h[a]
        for b in range(a + 1, n):
            if lab[a] == lab[b]:
                continue
            t = 1.0 if lab[a] > lab[b] else -1.0
            dz = abs(v[a] - v[b]) * abs(disc[a] - disc[b]) * inv_norm
            diff = t * (s[a] - s[b])
            if scale_by_diff:
                dz /= 0.01 + abs(diff)
            e_i, e_j = (ex[a], ex[b]) if t > 0.0 else (ex[b], ex[a])
            rho, omr = _sigmoid_from_exp(e_i, e_j, sigma * diff)
            grad = sigma * dz * rho
            hess = sigma * sigma * dz * rho * omr
            sum_lambdas += 2.0 * grad
            g_a -= t * grad
            g[b] += t * grad
            h_a += hess
            h[b] += hess
            n_pairs += 1
        g[a], h[a] = g_a, h_a
    factor = math.log2(1.0 + sum_lambdas) / sum_lambdas if normalize and sum_lambdas > 0 else 1.0
    w = weights if weights.size else np.ones(n)
    g = np.array([g[r] * factor * w[r] for r in range(n)])
    h = np.array([h[r] * factor * w[r] for r in range(n)])
    return g, h, n_pairs


@pytest.mark.parametrize(
    "labels",
    ["graded", "continuous", "many_integers", "gains_not_by_label", "one_label", "tiny_exp"],
)
@pytest.mark.parametrize("score_ties", [False, True])
@pytest.mark.parametrize("normalize", [False, True])
def test_ndcg_fused_kernel_is_bit_identical_to_plain_loop(labels, score_ties, normalize):
    """The fused driver (pairs computed in SIMD, ties masked, the per-rank sums in a
    second pass; the pair-by-pair kernel for queries with tiny exponentials) gives the
    float64 gradients, hessians and pair counts of the plain pair-by-pair loop bit for
    bit (also the sign of zeros): few label values, many distinct float labels, gains
    that differ inside a label, tied scores, a query with one label, scores so spread
    that the direct sigmoid is needed, truncation below and above the query's size,
    weights, queries shorter than the block's longest (a workspace longer than
    needed)."""
    from ltrboost.objectives.lambdamart import (
        _lambdamart_ndcg_all_queries,
        _lambdamart_ndcg_fused,
        _ndcg_fused_workspace,
    )
    from ltrboost.objectives.pair_selection import PAIR_ALL, PAIR_TOPK, n_outer_ranks

    rng = np.random.default_rng(7)
    sizes = [2, 3, 7, 31, 64]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n_all = int(offsets[-1])
    if labels in ("graded", "gains_not_by_label"):
        lab = rng.choice(5, n_all, p=[0.52, 0.32, 0.13, 0.02, 0.01]).astype(np.float64)
    elif labels == "many_integers":
        lab = rng.integers(0, 40, n_all).astype(np.float64)
    elif labels == "one_label":
        lab = np.full(n_all, 3.0)
    else:
        lab = rng.uniform(0, 4, n_all)  # distinct floats
    v = rng.uniform(0, 9, n_all) if labels == "gains_not_by_label" else 2.0**lab - 1.0
    s = rng.normal(size=n_all) * 2
    if score_ties:
        s = np.round(s)
    if labels == "tiny_exp":  # exp(sigma (s - s_max)) < 1e-280 in queries 2 and 4 only
        for q in (2, 4):
            s[offsets[q] + rng.integers(0, sizes[q])] = -2000.0
        disc, work = _ndcg_fused_workspace(7)
        qs = slice(offsets[2], offsets[3])
        g = np.zeros(7)
        order = np.argsort(-s[qs], kind="stable").astype(np.int32)
        args = (s[qs], lab[qs], v[qs], 0.37, np.zeros(0), order, 6, 1.0, normalize)
        assert _lambdamart_ndcg_fused(*args, disc, work, g, g.copy()) == -1  # left
    inv_norm = np.full(len(sizes), 0.37)
    weights = rng.uniform(0.5, 2, n_all)
    pair_sets = ((PAIR_ALL, 0), (PAIR_TOPK, 1), (PAIR_TOPK, 5), (PAIR_TOPK, 100))
    for sigma in (0.7, 1.0, 2.0):
        for method, truncation in pair_sets:
            for w in (np.zeros(0), weights):
                g, h = np.full(n_all, np.nan), np.full(n_all, np.nan)
                counts = np.full(len(sizes), -7, np.int64)
                _lambdamart_ndcg_all_queries(
                    s, lab, v, inv_norm, w, offsets, method, truncation, sigma,
                    normalize, g, h, counts,
                )  # fmt: skip
                for q, n in enumerate(sizes):
                    lo = offsets[q]
                    order = lo + np.argsort(-s[lo : lo + n], kind="stable")
                    g_ref, h_ref, count_ref = _ndcg_fused_reference(
                        s[order], lab[order], v[order], 0.37, w[order] if w.size else w,
                        n_outer_ranks(n, method, truncation), sigma, normalize,
                    )  # fmt: skip
                    assert counts[q] == count_ref
                    np.testing.assert_array_equal(g[order].view(np.uint64), g_ref.view(np.uint64))
                    np.testing.assert_array_equal(h[order].view(np.uint64), h_ref.view(np.uint64))
                if labels == "one_label":
                    assert (counts == 0).all()


@pytest.mark.parametrize("pair_method", ["all", "topk"])
def test_rounds_reuse_the_ranking_and_give_a_fresh_objectives_gradients(pair_method):
    """From its second gradient on a dataset the fused path re-sorts the previous
    round's ranking (insertion, ``rerank_all_queries``) instead of sorting anew: the
    gradients must be those of an objective that never saw the earlier scores, bit for
    bit -- after a small step, a large one (the re-sort gives up and sorts), tied
    scores, and a second dataset in between (the held ranking is another dataset's)."""
    data, s = make_data(11, sizes=(1, 2, 4, 6, 9, 13, 5, 40, 120))
    other, s_other = make_data(12)
    rng = np.random.default_rng(0)
    obj = LambdaMART(pair_method=pair_method, truncation_level=10)
    steps = [
        s,
        s + 0.01 * rng.normal(size=s.size),
        np.round(s),  # ties
        s + 5.0 * rng.normal(size=s.size),  # far: falls back to the full sort
        s[::-1].copy(),
    ]
    for k, scores in enumerate(steps):
        if k == 3:
            grad_hess(obj, s_other, other)  # another dataset in between
        got = grad_hess(obj, scores, data)
        fresh = grad_hess(LambdaMART(pair_method=pair_method, truncation_level=10), scores, data)
        assert obj._ranking is not None
        assert obj._ranking.query_offsets is data.query_offsets
        for a, b in zip(got, fresh, strict=True):
            np.testing.assert_array_equal(a.view(np.int32), b.view(np.int32))

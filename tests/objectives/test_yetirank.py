"""YetiRank: kernel vs a plain NumPy transcription (same draws), finite differences of
the pairwise loss with the permutation weights frozen, determinism, training."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ltrboost._numba as nb
from ltrboost.dataset import RankingDataset
from ltrboost.datasets import make_ranking
from ltrboost.model import load_model
from ltrboost.objectives.registry import get_objective
from ltrboost.objectives.yetirank import YetiRank, yetirank_reference
from ltrboost.sklearn import Ranker


def make_data(seed, sizes=(1, 2, 4, 6, 9, 5, 4, 17), max_label=4, weights=None):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(offsets[-1])
    y = rng.integers(0, max_label + 1, n).astype(np.float64)
    y[offsets[-3] : offsets[-2]] = 2.0  # one query with all labels equal
    s = rng.normal(size=n)
    s[:6] = np.round(s[:6])  # some ties
    w = None
    if weights == "doc":
        w = rng.uniform(0.5, 2.0, n).astype(np.float32)
    return RankingDataset(X=np.zeros((n, 1)), y=y, query_offsets=offsets, weights=w), s


def grad_hess(obj, s, data, iteration=0):
    g = np.full(data.n_samples, np.nan, dtype=np.float32)
    h = np.full(data.n_samples, np.nan, dtype=np.float32)
    obj.gradient_hessian(s, data, g, h, iteration=iteration)
    return g, h


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "params",
    [{}, {"permutations": 3, "decay": 0.5}, {"permutations": 1, "decay": 1.0}],
)
@pytest.mark.parametrize("weights", [None, "doc"])
def test_matches_numpy_reference(seed, params, weights):
    data, s = make_data(seed, weights=weights)
    obj = YetiRank(random_state=7, **params)
    it = seed + 3
    g, h = grad_hess(obj, s, data, iteration=it)
    kw = {k: v for k, v in params.items()}
    g_ref, h_ref, loss_ref, pairs_ref = yetirank_reference(
        s, data.y, data.query_offsets, weights=data.weights, random_state=7, iteration=it, **kw
    )
    assert pairs_ref, "the data must produce pairs"
    np.testing.assert_allclose(g, g_ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h, h_ref, rtol=1e-5, atol=1e-7)
    assert obj.loss(s, data, iteration=it) == pytest.approx(loss_ref, rel=1e-12)
    # the pairs themselves, and what OLE sees
    off, pi, pj, pw = obj.yetirank_pairs(s, data, iteration=it)
    qo = data.query_offsets
    rows = np.repeat(qo[:-1], np.diff(off))
    got = list(zip((rows + pi).tolist(), (rows + pj).tolist(), pw.tolist(), strict=True))
    assert [(a, b) for a, b, _ in got] == [(a, b) for a, b, _ in pairs_ref]
    np.testing.assert_allclose([w for *_, w in got], [w for *_, w in pairs_ref], rtol=1e-15)
    terms = obj.pair_terms(s, data, iteration=it)
    np.testing.assert_array_equal(terms.pair_offsets, off)
    np.testing.assert_array_equal(terms.doc_i, rows + pi)
    rho = 1.0 / (1.0 + np.exp(s[terms.doc_i] - s[terms.doc_j]))
    wd = np.ones(data.n_samples) if data.weights is None else data.weights.astype(np.float64)
    expect = pw * rho * (1 - rho) * 0.5 * (wd[terms.doc_i] + wd[terms.doc_j])
    np.testing.assert_allclose(terms.rho, expect, rtol=1e-12)


def catboost_yetirank_transcription(scores, y, query_offsets, uniforms, permutations, decay):
    """CatBoost's classic YetiRank, written out as its CPU code does it
    (``catboost/private/libs/algo/yetirank_helpers.cpp``, ``GenerateYetiRankPairsForQuery``;
    the pairwise-logit derivatives of ``TPairLogitError``), independent of ltrboost's
    kernel and of ``yetirank_reference``: noisy score ``exp(s) * U / (1.000001 - U)``,
    sort descending, a dense ``n x n`` competitor-weight matrix over adjacent pairs,
    ``/ permutations``; then ``p = e^{s_l} / (e^{s_w} + e^{s_l})`` and CatBoost's
    derivatives of the log-likelihood ``der_w += c p``, ``der_l -= c p``,
    ``der2 -= c p (1 - p)`` on both.  ``uniforms(q, p, d)`` supplies the draws.
    Returns ``(der, der2)``; ltrboost's gradients and hessians are ``-der`` and ``-der2``.
    """
    der = np.zeros(len(scores))
    der2 = np.zeros(len(scores))
    for q in range(len(query_offsets) - 1):
        lo, hi = query_offsets[q], query_offsets[q + 1]
        n = hi - lo
        rel = y[lo:hi]
        exp_approx = np.exp(scores[lo:hi])
        weights = np.zeros((n, n))
        for p in range(permutations):
            boot = exp_approx.copy()
            for d in range(n):
                u = uniforms(q, p, d)
                boot[d] *= u / (1.000001 - u)
            idx = sorted(range(n), key=lambda i: -boot[i])
            c = 1.0
            for k in range(1, n):
                a, b = idx[k - 1], idx[k]
                w = 0.15 * c * abs(rel[a] - rel[b])
                if rel[a] > rel[b]:
                    weights[a, b] += w
                elif rel[a] < rel[b]:
                    weights[b, a] += w
                c *= decay
        for win in range(n):
            for lose in range(n):
                c = weights[win, lose] / permutations
                if c == 0:
                    continue
                sw, sl = scores[lo + win], scores[lo + lose]
                pr = math.exp(sl) / (math.exp(sw) + math.exp(sl))
                der[lo + win] += c * pr
                der[lo + lose] -= c * pr
                der2[lo + win] -= c * pr * (1 - pr)
                der2[lo + lose] -= c * pr * (1 - pr)
    return der, der2


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("params", [{}, {"permutations": 3, "decay": 0.5}])
def test_matches_catboost_transcription(seed, params):
    """Gradients and hessians equal CatBoost's algorithm fed the same uniform draws
    (draw ``p * n + d`` of stream ``random_state + iteration * n_queries + q``).  The
    scores are distinct and away from ties, so the 1e-6 in CatBoost's ``1.000001 - U``
    cannot reorder a permutation."""
    from ltrboost.objectives.pair_selection import random_uniform_reference

    data, _ = make_data(seed)
    s = np.random.default_rng(100 + seed).normal(scale=2.0, size=data.n_samples)
    perm = params.get("permutations", 10)
    decay = params.get("decay", 0.85)
    it, rs = 2, 11
    qo = data.query_offsets
    nq = len(qo) - 1

    def uniforms(q, p, d):
        n = int(qo[q + 1] - qo[q])
        return random_uniform_reference(rs + it * nq + q, p * n + d)

    der, der2 = catboost_yetirank_transcription(s, data.y, qo, uniforms, perm, decay)
    assert np.count_nonzero(der) > data.n_samples // 2
    g, h = grad_hess(YetiRank(random_state=rs, **params), s, data, iteration=it)
    np.testing.assert_allclose(g, -der, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h, -der2, rtol=1e-5, atol=1e-7)


def test_pair_weights_by_hand():
    """One query, two documents: every permutation holds the single adjacent pair at
    position 1, so its weight is 0.15 |y_a - y_b| whatever the noise."""
    data = RankingDataset(
        X=np.zeros((2, 1)), y=np.array([0.0, 3.0]), query_offsets=np.array([0, 2])
    )
    off, pi, pj, pw = YetiRank().yetirank_pairs(np.array([0.3, -0.2]), data)
    assert off.tolist() == [0, 1]
    assert pi.tolist() == [1]
    assert pj.tolist() == [0]
    assert pw[0] == pytest.approx(0.15 * 3)


def test_noise_is_logistic():
    """The noise draws U are uniform on the open interval (0, 1) (so log(U / (1 - U))
    is finite logistic noise)."""
    from ltrboost.objectives.pair_selection import random_uniform, random_uniform_reference

    u = np.array([random_uniform(123, c) for c in range(20000)])
    assert [random_uniform_reference(123, c) for c in range(50)] == u[:50].tolist()
    assert u.min() > 0.0
    assert u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01
    assert abs(np.mean(u < 0.25) - 0.25) < 0.01


@pytest.mark.parametrize("seed", [0, 1])
def test_finite_differences_fixed_weights(seed):
    data, s0 = make_data(seed)
    obj = YetiRank(random_state=seed)
    g, h = grad_hess(obj, s0, data, iteration=2)
    eps = 1e-5
    for d in range(data.n_samples):
        e = np.zeros_like(s0)
        e[d] = eps
        lp = obj.loss_fixed_weights(s0 + e, data, s0, iteration=2)
        lm = obj.loss_fixed_weights(s0 - e, data, s0, iteration=2)
        l0 = obj.loss_fixed_weights(s0, data, s0, iteration=2)
        assert (lp - lm) / (2 * eps) == pytest.approx(g[d], rel=1e-4, abs=1e-6)
        assert (lp - 2 * l0 + lm) / eps**2 == pytest.approx(h[d], rel=1e-3, abs=1e-4)


def test_seeded_and_changes_with_iteration_and_seed():
    data, s = make_data(0)
    a = grad_hess(YetiRank(random_state=1), s, data, 0)
    b = grad_hess(YetiRank(random_state=1), s, data, 0)
    c = grad_hess(YetiRank(random_state=1), s, data, 1)
    d = grad_hess(YetiRank(random_state=2), s, data, 0)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])
    assert not np.array_equal(a[0], d[0])


def test_one_and_two_threads_bit_for_bit(monkeypatch):
    data, s = make_data(3)
    out = []
    for min_docs in (10**9, 1):
        monkeypatch.setattr(nb, "MIN_DOCS_PER_THREAD", min_docs)
        obj = YetiRank(random_state=5)
        with nb.threads(2):
            g, h = grad_hess(obj, s, data, 4)
            t = obj.pair_terms(s, data, iteration=4)
            out.append((g, h, obj.loss(s, data, iteration=4), t))
    (g0, h0, l0, t0), (g1, h1, l1, t1) = out
    np.testing.assert_array_equal(g0, g1)
    np.testing.assert_array_equal(h0, h1)
    assert l0 == l1
    for x, y in zip(t0, t1, strict=True):
        np.testing.assert_array_equal(x, y)


def test_parameter_checks():
    for bad in ({"permutations": 0}, {"permutations": 1.5}, {"decay": 0.0}, {"decay": 1.5}):
        with pytest.raises(ValueError, match="should be"):
            YetiRank(**bad)
    obj = get_objective("yetirank")
    assert obj.get_params() == {"permutations": 10, "decay": 0.85, "random_state": 0}


def _split(X, y, qid, frac=0.7):
    cut_q = np.unique(qid)[int(len(np.unique(qid)) * frac)]
    tr = qid < cut_q
    return (X[tr], y[tr], qid[tr]), (X[~tr], y[~tr], qid[~tr])


@pytest.fixture(scope="module")
def synthetic():
    X, y, qid = make_ranking(n_queries=120, docs_per_query=20, n_features=10, random_state=3)
    return _split(X, y, qid)


SMALL = dict(n_estimators=40, max_leaf_nodes=8, min_samples_leaf=5, n_threads=2)


@pytest.mark.parametrize("criterion", ["newton", "ole"])
def test_trains_newton_and_ole(synthetic, criterion, tmp_path):
    (Xt, yt, qt), (Xv, yv, qv) = synthetic
    m = Ranker(objective="yetirank", split_criterion=criterion, permutations=4, **SMALL)
    m.fit(Xt, yt, qid=qt)
    base = Ranker(objective="yetirank", n_estimators=1, max_leaf_nodes=2, n_threads=2)
    base.fit(Xt, yt, qid=qt)
    assert m.score(Xv, yv, qid=qv) > base.score(Xv, yv, qid=qv) + 0.02
    # the model file round-trips, parameters included
    path = tmp_path / "m.json"
    m.booster_.save_model(path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.predict(Xv), m.predict(Xv))


def test_quality_close_to_lambdamart(synthetic):
    (Xt, yt, qt), (Xv, yv, qv) = synthetic
    scores = {}
    for obj in ("yetirank", "lambdamart"):
        m = Ranker(objective=obj, **SMALL).fit(Xt, yt, qid=qt)
        scores[obj] = m.score(Xv, yv, qid=qv, metric="ndcg@10")
    # 36 validation queries: per-query NDCG SD ~0.1 gives a mean's SE ~0.02
    assert scores["yetirank"] > scores["lambdamart"] - 0.04, scores


def test_queries_beyond_the_exact_pair_keys_are_refused(monkeypatch):
    """Pair keys ``a * n + b`` are ordered as float64: a query longer than
    ``MAX_QUERY_DOCS`` is refused instead of mis-sorting its pairs."""
    from ltrboost.objectives import yetirank

    data, _ = make_data(0)
    obj = YetiRank()
    longest = int(np.diff(data.query_offsets).max())
    monkeypatch.setattr(yetirank, "MAX_QUERY_DOCS", longest)
    obj.yetirank_pairs(np.zeros(data.n_samples), data, 0)  # at the limit: fine
    monkeypatch.setattr(yetirank, "MAX_QUERY_DOCS", longest - 1)
    with pytest.raises(ValueError, match="more than the"):
        obj.yetirank_pairs(np.zeros(data.n_samples), data, 0)

"""NDCG@k / DCG@k: seed 003's worked example, hand cases, reference, ranx."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ltrboost.metrics import get_metric, rank_order
from ltrboost.metrics._dcg import (
    _rank_order_reference,
    _top_k_order_one_query,
    inverse_max_dcg,
    label_gains,
    rank_order_one_query,
    rerank_all_queries,
)
from ltrboost.metrics.ndcg import NDCGEvaluator, _ndcg_reference


def _kernel(scores, y, query_offsets, **params):
    return NDCGEvaluator(y, query_offsets, **params).per_query(scores)


def _reference(scores, y, query_offsets, **params):
    return _ndcg_reference(
        np.asarray(scores, float),
        np.asarray(y, float),
        np.asarray(query_offsets),
        **params,
    )


IMPLS = pytest.mark.parametrize("impl", [_reference, _kernel], ids=["reference", "kernel"])


# --- seed 003 and hand-computed cases ---


@IMPLS
@pytest.mark.parametrize(
    ("ranked_labels", "expected_dcg", "expected_ndcg"),
    [
        # Seed 003, "Normalized DCG (NDCG)": DCG 1.45, IDCG 2.13, NDCG 0.68 ...
        ([0, 1, 0, 1, 1], 1.45, 0.68),
        # ... and the two swaps of "delta NDCG ketika dua dokumen di-swap".
        ([1, 0, 0, 1, 1], 1.82, 0.85),
        ([0, 1, 1, 0, 1], 1.52, 0.71),
    ],
)
def test_seed_003_worked_example(impl, ranked_labels, expected_dcg, expected_ndcg):
    y = np.array(ranked_labels, dtype=float)
    scores = np.arange(5, 0, -1, dtype=float)  # already in ranked order
    qo = np.array([0, 5])
    ndcg = impl(scores, y, qo, k=5, gain="linear")
    dcg = impl(scores, y, qo, k=5, gain="linear", normalize=False)
    assert dcg[0] == pytest.approx(expected_dcg, abs=0.005)
    assert ndcg[0] == pytest.approx(expected_ndcg, abs=0.005)
    # the exact values behind the slide's rounding
    d = 1.0 / np.log2(np.arange(2, 7))
    assert ndcg[0] == pytest.approx(np.dot(y, d) / (d[0] + d[1] + d[2]), rel=1e-12)


def test_seed_003_delta_ndcg_of_swaps():
    qo = np.array([0, 5])
    scores = np.arange(5, 0, -1, dtype=float)
    metric = get_metric("ndcg@5", gain="linear")
    base = metric(scores, np.array([0, 1, 0, 1, 1.0]), qo)
    assert metric(scores, np.array([1, 0, 0, 1, 1.0]), qo) - base == pytest.approx(0.17, abs=0.005)
    assert metric(scores, np.array([0, 1, 1, 0, 1.0]), qo) - base == pytest.approx(0.03, abs=0.005)


@IMPLS
def test_exp_gain_by_hand(impl):
    # scores rank the documents (1, 2, 0): labels in ranked order 0, 1, 2
    y = np.array([2.0, 0.0, 1.0])
    scores = np.array([0.1, 0.9, 0.5])
    qo = np.array([0, 3])
    l3, l4 = np.log2(3.0), np.log2(4.0)
    dcg = 0 / 1 + (2**1 - 1) / l3 + (2**2 - 1) / l4
    idcg = (2**2 - 1) / 1 + (2**1 - 1) / l3
    assert impl(scores, y, qo)[0] == pytest.approx(dcg / idcg, rel=1e-12)
    assert impl(scores, y, qo, k=2)[0] == pytest.approx((1 / l3) / idcg, rel=1e-12)
    assert impl(scores, y, qo, k=1)[0] == 0.0
    assert impl(scores, y, qo, normalize=False)[0] == pytest.approx(dcg, rel=1e-12)
    lin = impl(scores, y, qo, gain="linear")[0]
    assert lin == pytest.approx((1 / l3 + 2 / l4) / (2 + 1 / l3), rel=1e-12)


@IMPLS
def test_ties_keep_input_order(impl):
    qo = np.array([0, 3])
    scores = np.ones(3)
    # All tied: the ranking is the input order, so the relevant document is third ...
    assert impl(scores, np.array([0.0, 0.0, 1.0]), qo)[0] == pytest.approx(0.5)
    # ... or first.
    assert impl(scores, np.array([1.0, 0.0, 0.0]), qo)[0] == 1.0
    # A tie below a strictly better document: doc 2 (score 5) first, then 0, then 1.
    ranked = impl(np.array([3.0, 3.0, 5.0]), np.array([0.0, 1.0, 0.0]), qo)[0]
    assert ranked == pytest.approx(1 / np.log2(4) / 1.0)


@IMPLS
@pytest.mark.parametrize("empty", [1.0, 0.0])
def test_query_without_gain_scores_empty_query_score(impl, empty):
    y = np.array([0.0, 0.0, 1.0, 0.0])
    scores = np.array([1.0, 2.0, 3.0, 4.0])
    qo = np.array([0, 2, 4])  # query 0 has no relevant document
    out = impl(scores, y, qo, empty_query_score=empty)
    assert out[0] == empty
    assert out[1] == pytest.approx(1 / np.log2(3))
    assert impl(scores, y, qo, normalize=False, empty_query_score=empty)[0] == 0.0


@IMPLS
def test_k_larger_than_query_is_whole_query(impl):
    rng = np.random.default_rng(3)
    y = rng.integers(0, 4, 7).astype(float)
    scores = rng.normal(size=7)
    qo = np.array([0, 7])
    assert impl(scores, y, qo, k=50)[0] == impl(scores, y, qo, k=0)[0]
    assert impl(scores, y, qo, k=7)[0] == impl(scores, y, qo, k=0)[0]


@IMPLS
def test_one_document_and_empty_queries(impl):
    y = np.array([3.0, 0.0])
    scores = np.array([0.2, -1.0])
    qo = np.array([0, 1, 1, 2])  # a one-document query, an empty query, another one
    np.testing.assert_allclose(impl(scores, y, qo, empty_query_score=0.5), [1, 0.5, 0.5])


# --- kernel against reference ---


@pytest.mark.seed_per_case(
    range(4), score_levels=[None, 3, 20], k=[0, 1, 3, 10, 32, 33, 1000], gain=["exp", "linear"]
)
def test_kernel_matches_reference(random_ranking, seed, score_levels, k, gain):
    scores, y, qo = random_ranking(seed, score_levels=score_levels)
    for normalize in (True, False):
        params = dict(k=k, gain=gain, normalize=normalize, empty_query_score=0.25)
        np.testing.assert_allclose(
            _kernel(scores, y, qo, **params),
            _reference(scores, y, qo, **params),
            rtol=1e-12,
            atol=1e-12,
        )


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("score_levels", [None, 2, 7])
def test_rank_order_matches_stable_reference(random_ranking, seed, score_levels):
    scores, _, qo = random_ranking(seed, score_levels=score_levels)
    np.testing.assert_array_equal(rank_order(scores, qo), _rank_order_reference(scores, qo))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("start", ["random", "previous", "reversed"])
def test_rerank_from_any_permutation_is_the_ranking(random_ranking, seed, start):
    # rerank_all_queries re-sorts a permutation per query; whatever it starts from
    # (close to the answer, as between boosting rounds, or far: the move budget's fall
    # back to the full sort) it must end at the stable ranking, ties by position.
    scores, _, qo = random_ranking(seed, score_levels=[None, 2, 7][seed % 3])
    rng = np.random.default_rng(seed)
    # the reference gives positions in the whole array; rerank's are per query
    expected = _rank_order_reference(scores, qo) - np.repeat(qo[:-1], np.diff(qo))
    order = np.empty(scores.shape[0], dtype=np.int32)
    for lo, hi in itertools.pairwise(qo):
        n = hi - lo
        if start == "random":
            order[lo:hi] = rng.permutation(n)
        elif start == "previous":  # the ranking of slightly different scores
            jitter = scores[lo:hi] + rng.normal(0, 0.05, n) * (rng.random(n) < 0.2)
            order[lo:hi] = np.argsort(-jitter, kind="stable")
        else:
            order[lo:hi] = np.argsort(scores[lo:hi], kind="stable")
    n_ranked = np.empty(qo.shape[0] - 1, dtype=np.int64)
    rerank_all_queries(scores, qo, order, np.empty_like(order), n_ranked)
    np.testing.assert_array_equal(order, expected)
    np.testing.assert_array_equal(n_ranked, np.diff(qo))


def test_rerank_signed_zeros_and_ties_keep_position_order():
    scores = np.array([0.0, -0.0, 1.0, 0.0, -0.0, 1.0])
    qo = np.array([0, 6])
    order = np.array([5, 4, 3, 2, 1, 0], dtype=np.int32)
    rerank_all_queries(scores, qo, order, np.empty_like(order), np.empty(1, dtype=np.int64))
    np.testing.assert_array_equal(order, [2, 5, 0, 1, 3, 4])


@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 17, 31, 32, 33, 64, 65, 200, 1000])
@pytest.mark.parametrize("levels", [1, 3, 1_000_000])
def test_rank_order_one_query_sizes(n, levels):
    # sizes around the insertion-run length and the merge passes; levels=1: all tied
    rng = np.random.default_rng(n + levels)
    scores = rng.integers(0, levels, n).astype(float)
    expected = np.argsort(-scores, kind="stable")
    order = np.empty(n, dtype=np.int32)
    rank_order_one_query(scores, order, np.empty(n, dtype=np.int32))
    np.testing.assert_array_equal(order, expected)
    for k in (1, 5, 10, 32):
        top = np.empty(n, dtype=np.int32)
        kk = _top_k_order_one_query(scores, k, top)
        assert kk == min(k, n)
        np.testing.assert_array_equal(top[:kk], expected[:kk])


def test_existing_dcg_helpers_unchanged():
    # lambdamart imports these; their contract must not move
    np.testing.assert_allclose(label_gains([0, 1, 3]), [0, 1, 7])
    np.testing.assert_allclose(label_gains([0, 1, 3], "linear"), [0, 1, 3])
    g = np.array([0.0, 1.0, 3.0, 0.0, 0.0])
    inv = inverse_max_dcg(g, np.array([0, 3, 5], dtype=np.int64), 2)
    np.testing.assert_allclose(inv, [1 / (3 + 1 / np.log2(3)), 0.0])


# --- agreement with ranx ---


def _ranx_inputs(scores, y, qo):
    """ranx Qrels (only relevant documents) and Run, for queries with a relevant doc."""
    qrels, run = {}, {}
    for q in range(len(qo) - 1):
        lo, hi = qo[q], qo[q + 1]
        if not (y[lo:hi] >= 1).any():
            continue
        qrels[f"q{q}"] = {f"d{i}": int(y[i]) for i in range(lo, hi) if y[i] >= 1}
        run[f"q{q}"] = {f"d{i}": float(scores[i]) for i in range(lo, hi)}
    return qrels, run


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("k", [1, 3, 5, 10])
@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")
def test_matches_ranx(random_ranking, seed, k):
    ranx = pytest.importorskip("ranx")
    scores, y, qo = random_ranking(seed + 10, score_levels=None)  # no score ties
    qrels, run = _ranx_inputs(scores, y, qo)
    expected = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), [f"ndcg_burges@{k}", f"ndcg@{k}"])
    has_relevant = np.array([(y[qo[q] : qo[q + 1]] >= 1).any() for q in range(len(qo) - 1)])
    for name, gain in ((f"ndcg_burges@{k}", "exp"), (f"ndcg@{k}", "linear")):
        per_query = get_metric(f"ndcg@{k}", gain=gain, empty_query_score=0.0).per_query(
            scores, y, qo
        )
        assert per_query[has_relevant].mean() == pytest.approx(expected[name], rel=1e-9)
        # ranx scores queries without relevant documents 0; so does empty_query_score=0
        assert per_query[~has_relevant].tolist() == [0.0] * int((~has_relevant).sum())


# --- invariants ---


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", ["ndcg@5", "ndcg", "dcg@3"])
def test_permutation_invariance(random_ranking, seed, name):
    scores, y, qo = random_ranking(seed, score_levels=None)  # distinct scores
    rng = np.random.default_rng(seed)
    perm = np.concatenate([qo[q] + rng.permutation(qo[q + 1] - qo[q]) for q in range(len(qo) - 1)])
    metric = get_metric(name)
    np.testing.assert_allclose(
        metric.per_query(scores[perm], y[perm], qo), metric.per_query(scores, y, qo)
    )


def test_linear_and_exp_gain(random_ranking):
    scores, y, qo = random_ranking(5)
    binary = (y >= 2).astype(float)
    exp, lin = get_metric("ndcg@10"), get_metric("ndcg@10", gain="linear")
    # 2^1 - 1 = 1: the two gains agree on binary labels ...
    assert exp(scores, binary, qo) == pytest.approx(lin(scores, binary, qo), rel=1e-12)
    # ... and not on graded ones
    assert exp(scores, y, qo) != pytest.approx(lin(scores, y, qo), rel=1e-6)
    # linear gain accepts labels the exponential one refuses
    big = y * 10
    assert 0 < lin(scores, big, qo) <= 1
    with pytest.raises(ValueError, match="gain='linear'"):
        exp(scores, big, qo)


def test_perfect_ranking_scores_one(random_ranking):
    _, y, qo = random_ranking(7)
    metric = get_metric("ndcg@10")
    # rank by label: NDCG is 1 for every query whatever the gain
    assert metric(y + 0.0, y, qo) == pytest.approx(1.0)
    assert metric(-y, y, qo) < 1.0


@pytest.mark.parametrize("name", ["ndcg@10", "ndcg", "dcg@5"])
def test_bind_equals_unbound(random_ranking, name):
    scores, y, qo = random_ranking(11, score_levels=5)
    metric = get_metric(name)
    bound = metric.bind(y, qo)
    rng = np.random.default_rng(0)
    for _ in range(3):  # reused buffers must not leak between calls
        s = scores + rng.normal(size=scores.shape)
        assert bound(s) == metric(s, y, qo)
        np.testing.assert_array_equal(bound.per_query(s), metric.per_query(s, y, qo))

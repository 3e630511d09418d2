"""P@k and seed 004's pair precision at K%: hand cases, references, ranx, invariants."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost.metrics import get_metric
from ltrboost.metrics.precision import (
    PairPrecisionEvaluator,
    PrecisionEvaluator,
    _pair_precision_per_query_reference,
    _pair_precision_reference,
    _precision_reference,
)


def _p_kernel(scores, y, query_offsets, **params):
    return PrecisionEvaluator(y, query_offsets, **params).per_query(scores)


def _pair_kernel(scores, y, query_offsets, query_weights=None, **params):
    return PairPrecisionEvaluator(y, query_offsets, **params).pooled_value(
        scores, None if query_weights is None else np.asarray(query_weights, float)
    )


def _pair_per_query_kernel(scores, y, query_offsets, **params):
    return PairPrecisionEvaluator(y, query_offsets, **params).per_query(scores)


P_IMPLS = pytest.mark.parametrize(
    "impl", [_precision_reference, _p_kernel], ids=["reference", "kernel"]
)
PAIR_IMPLS = pytest.mark.parametrize(
    "impl", [_pair_precision_reference, _pair_kernel], ids=["reference", "kernel"]
)
PAIR_PER_QUERY_IMPLS = pytest.mark.parametrize(
    "impl",
    [_pair_precision_per_query_reference, _pair_per_query_kernel],
    ids=["reference", "kernel"],
)


# --- P@k by hand ---


@P_IMPLS
def test_precision_at_k_by_hand(impl):
    y = np.array([1.0, 0.0, 2.0])
    scores = np.array([3.0, 2.0, 1.0])
    qo = np.array([0, 3])
    assert impl(scores, y, qo, k=1)[0] == 1.0
    assert impl(scores, y, qo, k=2)[0] == pytest.approx(1 / 2)
    assert impl(scores, y, qo, k=3)[0] == pytest.approx(2 / 3)
    # fewer documents than k: still divided by k (trec_eval)
    assert impl(scores, y, qo, k=5)[0] == pytest.approx(2 / 5)
    assert impl(scores, y, qo, k=3, relevance_threshold=2)[0] == pytest.approx(1 / 3)
    # no relevant document: P@k is defined, 0
    assert impl(scores, np.zeros(3), qo, k=2)[0] == 0.0


@P_IMPLS
def test_precision_ties_keep_input_order(impl):
    qo = np.array([0, 3])
    assert impl(np.ones(3), np.array([0.0, 1.0, 1.0]), qo, k=1)[0] == 0.0
    assert impl(np.ones(3), np.array([1.0, 0.0, 0.0]), qo, k=1)[0] == 1.0


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("score_levels", [None, 3])
@pytest.mark.parametrize("k", [1, 3, 10, 33, 500])
def test_precision_kernel_matches_reference(random_ranking, seed, score_levels, k):
    scores, y, qo = random_ranking(seed, score_levels=score_levels)
    np.testing.assert_allclose(
        _p_kernel(scores, y, qo, k=k, relevance_threshold=2),
        _precision_reference(scores, y, qo, k=k, relevance_threshold=2),
    )


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")
def test_precision_matches_ranx(random_ranking, seed, k):
    ranx = pytest.importorskip("ranx")
    scores, y, qo = random_ranking(seed + 10)
    # ranx divides by the query length when it is shorter than k: compare on long ones
    keep = [
        q
        for q in range(len(qo) - 1)
        if qo[q + 1] - qo[q] >= k and (y[qo[q] : qo[q + 1]] >= 1).any()
    ]
    qrels = {
        f"q{q}": {f"d{i}": int(y[i]) for i in range(qo[q], qo[q + 1]) if y[i] >= 1} for q in keep
    }
    run = {f"q{q}": {f"d{i}": float(scores[i]) for i in range(qo[q], qo[q + 1])} for q in keep}
    expected = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), f"precision@{k}")
    got = get_metric(f"p@{k}").per_query(scores, y, qo)[keep].mean()
    assert got == pytest.approx(expected, rel=1e-9)


# --- pair precision at K% by hand ---


def _one_query():
    # labels 2, 1, 0; pairs (higher, lower) and margins s_hi - s_lo:
    #   (0, 1): 0.5 - 0.9 = -0.4  wrong
    #   (0, 2): 0.5 - 0.0 =  0.5  right
    #   (1, 2): 0.9 - 0.0 =  0.9  right
    # by |margin|: 0.9 (right), 0.5 (right), 0.4 (wrong)
    return np.array([0.5, 0.9, 0.0]), np.array([2.0, 1.0, 0.0]), np.array([0, 3])


@PAIR_IMPLS
@pytest.mark.parametrize(
    ("percent", "expected"),
    [(100, 2 / 3), (10, 1.0), (33, 1.0), (34, 1.0), (50, 1.0), (66, 1.0), (67, 2 / 3)],
)
def test_pair_precision_by_hand(impl, percent, expected):
    # top K% = ceil(K * 3 / 100) pairs: 1 for K <= 33.3.., 2 up to 66.6.., then 3
    scores, y, qo = _one_query()
    assert impl(scores, y, qo, percent=percent) == pytest.approx(expected)


@PAIR_IMPLS
def test_pair_precision_equal_scores_count_as_wrong(impl):
    qo = np.array([0, 3])
    y = np.array([1.0, 0.0, 0.0])
    # pairs (0,1) margin 0 (tied scores: wrong), (0,2) margin 1 (right)
    scores = np.array([0.3, 0.3, -0.7])
    assert impl(scores, y, qo, percent=100) == pytest.approx(1 / 2)
    assert impl(scores, y, qo, percent=50) == pytest.approx(1.0)
    # pairs with equal labels are not pairs at all
    assert impl(scores, np.array([1.0, 1.0, 0.0]), qo, percent=100) == pytest.approx(1.0)


@PAIR_IMPLS
def test_pair_precision_boundary_tie_group_is_shared(impl):
    # two pairs with |margin| 1, one right, one wrong; the top 50% takes one of them:
    # neither input order decides, each counts half
    qo = np.array([0, 3])
    y = np.array([1.0, 0.0, 0.0])
    scores = np.array([0.0, 1.0, -1.0])
    assert impl(scores, y, qo, percent=50) == pytest.approx(0.5)
    assert impl(scores[[0, 2, 1]], y[[0, 2, 1]], qo, percent=50) == pytest.approx(0.5)


@PAIR_IMPLS
def test_pair_precision_pools_pairs_over_queries(impl):
    # query 0: 1 pair, right, |margin| 10; query 1: 3 pairs, all wrong, |margin| 1, 2, 1
    y = np.array([1.0, 0.0, 2.0, 1.0, 0.0])
    scores = np.array([10.0, 0.0, 0.0, 1.0, 2.0])
    qo = np.array([0, 2, 5])
    assert impl(scores, y, qo, percent=100) == pytest.approx(1 / 4)  # not (1 + 0) / 2
    assert impl(scores, y, qo, percent=25) == pytest.approx(1.0)
    assert impl(scores, y, qo, percent=50) == pytest.approx(1 / 2)
    # query weights weight each pair: (1 * 1) / (1 * 1 + 3 * 3)
    w = np.array([1.0, 3.0])
    assert impl(scores, y, qo, percent=100, query_weights=w) == pytest.approx(0.1)


@PAIR_PER_QUERY_IMPLS
def test_pair_precision_per_query(impl):
    y = np.array([1.0, 0.0, 2.0, 1.0, 0.0, 3.0, 3.0, 4.0])
    scores = np.array([10.0, 0.0, 0.0, 1.0, 2.0, 5.0, 6.0, 7.0])
    qo = np.array([0, 2, 5, 7, 8])  # query 2: equal labels, query 3: one document
    np.testing.assert_allclose(impl(scores, y, qo, empty_query_score=0.25), [1, 0, 0.25, 0.25])


@PAIR_IMPLS
@pytest.mark.parametrize("empty", [1.0, 0.0])
def test_pair_precision_without_pairs(impl, empty):
    y = np.array([1.0, 1.0, 0.0])
    qo = np.array([0, 2, 3])
    assert impl(np.array([1.0, 2.0, 3.0]), y, qo, empty_query_score=empty) == empty


# --- pair precision: kernels against references ---


@pytest.mark.seed_per_case(
    range(4), score_levels=[None, 2, 5], percent=[100, 50, 10, 2.5, 0.1, 99.9]
)
def test_pair_precision_kernel_matches_reference(random_ranking, seed, score_levels, percent):
    scores, y, qo = random_ranking(seed, score_levels=score_levels)
    assert _pair_kernel(scores, y, qo, percent=percent) == pytest.approx(
        _pair_precision_reference(scores, y, qo, percent=percent), rel=1e-12
    )
    np.testing.assert_allclose(
        _pair_per_query_kernel(scores, y, qo, percent=percent, empty_query_score=0.5),
        _pair_precision_per_query_reference(scores, y, qo, percent=percent, empty_query_score=0.5),
        rtol=1e-12,
    )
    w = np.random.default_rng(seed).random(len(qo) - 1)
    assert _pair_kernel(scores, y, qo, query_weights=w, percent=percent) == pytest.approx(
        _pair_precision_reference(scores, y, qo, percent=percent, query_weights=w),
        rel=1e-12,
    )


def test_pair_precision_at_100_is_pairwise_accuracy(random_ranking):
    # an independent count over all same-query pairs with different labels
    scores, y, qo = random_ranking(13, score_levels=4)
    right = total = 0
    for q in range(len(qo) - 1):
        for i in range(qo[q], qo[q + 1]):
            for j in range(i + 1, qo[q + 1]):
                if y[i] != y[j]:
                    total += 1
                    hi, lo = (i, j) if y[i] > y[j] else (j, i)
                    right += scores[hi] > scores[lo]
    assert get_metric("pair_precision")(scores, y, qo) == pytest.approx(right / total)


# --- invariants ---


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("score_levels", [None, 3])
@pytest.mark.parametrize("name", ["pair_precision", "pair_precision@10%"])
def test_pair_precision_permutation_invariance_even_with_ties(
    random_ranking, seed, score_levels, name
):
    scores, y, qo = random_ranking(seed, score_levels=score_levels)
    rng = np.random.default_rng(seed)
    perm = np.concatenate([qo[q] + rng.permutation(qo[q + 1] - qo[q]) for q in range(len(qo) - 1)])
    metric = get_metric(name)
    assert metric(scores[perm], y[perm], qo) == pytest.approx(metric(scores, y, qo))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("k", [1, 5])
def test_precision_at_k_permutation_invariance(random_ranking, seed, k):
    scores, y, qo = random_ranking(seed)
    rng = np.random.default_rng(seed)
    perm = np.concatenate([qo[q] + rng.permutation(qo[q + 1] - qo[q]) for q in range(len(qo) - 1)])
    metric = get_metric(f"p@{k}")
    np.testing.assert_allclose(
        metric.per_query(scores[perm], y[perm], qo), metric.per_query(scores, y, qo)
    )


def test_pair_precision_decreases_with_k_for_a_good_ranker(random_ranking):
    # scores = label + noise: confident (large-margin) pairs are more often right
    rng = np.random.default_rng(0)
    _, y, qo = random_ranking(0)
    scores = y + rng.normal(scale=1.0, size=y.shape)
    values = [get_metric(f"pair_precision@{k}%")(scores, y, qo) for k in (10, 50, 100)]
    assert values[0] > values[1] > values[2] > 0.5


@pytest.mark.parametrize("name", ["p@3", "pair_precision", "pair_precision@20%"])
def test_bind_equals_unbound(random_ranking, name):
    scores, y, qo = random_ranking(5, score_levels=6)
    metric = get_metric(name)
    bound = metric.bind(y, qo)
    rng = np.random.default_rng(2)
    for _ in range(3):
        s = scores + rng.integers(0, 3, size=scores.shape)
        assert bound(s) == metric(s, y, qo)
        np.testing.assert_array_equal(bound.per_query(s), metric.per_query(s, y, qo))

"""AP@k (MAP) and RR@k (MRR): hand cases, reference, ranx, invariants."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from ltrboost.metrics import get_metric
from ltrboost.metrics.ap import APEvaluator, _ap_reference
from ltrboost.metrics.rr import RREvaluator, _rr_reference


def _ap_kernel(scores, y, query_offsets, **params):
    return APEvaluator(y, query_offsets, **params).per_query(scores)


def _rr_kernel(scores, y, query_offsets, **params):
    return RREvaluator(y, query_offsets, **params).per_query(scores)


AP_IMPLS = pytest.mark.parametrize("impl", [_ap_reference, _ap_kernel], ids=["reference", "kernel"])
RR_IMPLS = pytest.mark.parametrize("impl", [_rr_reference, _rr_kernel], ids=["reference", "kernel"])


@pytest.fixture
def random_ranking(random_ranking):
    """conftest's ``random_ranking`` with mostly irrelevant documents (grades 0..2), so
    the first relevant one is often deep."""
    return functools.partial(random_ranking, n_grades=3, relevant_fraction=0.2)


def _ranked(rel):
    """Labels already in ranked order: descending scores."""
    y = np.asarray(rel, dtype=float)
    return -np.arange(y.size, dtype=float), y, np.array([0, y.size])


# --- AP by hand ---


@AP_IMPLS
def test_ap_by_hand(impl):
    scores, y, qo = _ranked([1, 0, 1, 0, 1])
    # relevant at ranks 1, 3, 5: precisions 1/1, 2/3, 3/5 over 3 relevant documents
    assert impl(scores, y, qo)[0] == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)
    assert impl(scores, y, qo, k=3)[0] == pytest.approx((1 + 2 / 3) / 3)
    assert impl(scores, y, qo, k=2)[0] == pytest.approx(1 / 2)  # min(k=2, 3) = 2
    assert impl(scores, y, qo, k=10)[0] == impl(scores, y, qo)[0]


@AP_IMPLS
def test_ap_at_k_divides_by_min_k_and_relevant(impl):
    # 3 relevant documents, the top 2 both relevant: AP@2 = (1 + 1) / min(2, 3) = 1
    # (ranx / trec_eval divide by 3 and would give 2/3)
    scores, y, qo = _ranked([1, 1, 0, 1])
    assert impl(scores, y, qo, k=2)[0] == pytest.approx(1.0)
    assert impl(scores, y, qo)[0] == pytest.approx((1 + 1 + 3 / 4) / 3)


@AP_IMPLS
def test_ap_relevance_threshold(impl):
    scores, y, qo = _ranked([1, 2, 0, 2])
    assert impl(scores, y, qo, relevance_threshold=2)[0] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert impl(scores, y, qo, relevance_threshold=1)[0] == pytest.approx((1 + 1 + 3 / 4) / 3)


@AP_IMPLS
@pytest.mark.parametrize("empty", [1.0, 0.0])
def test_ap_empty_query_score(impl, empty):
    y = np.array([0.0, 0.0, 1.0])
    qo = np.array([0, 2, 3])
    out = impl(np.array([1.0, 2.0, 3.0]), y, qo, empty_query_score=empty)
    np.testing.assert_allclose(out, [empty, 1.0])


@AP_IMPLS
def test_ap_ties_keep_input_order(impl):
    qo = np.array([0, 3])
    assert impl(np.zeros(3), np.array([0.0, 1.0, 1.0]), qo)[0] == pytest.approx((1 / 2 + 2 / 3) / 2)


# --- RR by hand ---


@RR_IMPLS
def test_rr_by_hand(impl):
    scores, y, qo = _ranked([0, 0, 1, 1])
    assert impl(scores, y, qo)[0] == pytest.approx(1 / 3)
    assert impl(scores, y, qo, k=3)[0] == pytest.approx(1 / 3)
    assert impl(scores, y, qo, k=2)[0] == 0.0  # first relevant below the cut-off
    assert impl(scores, y, qo, relevance_threshold=2)[0] == 1.0  # no relevant: empty


@RR_IMPLS
def test_rr_ties_keep_input_order(impl):
    qo = np.array([0, 4])
    y = np.array([0.0, 1.0, 0.0, 1.0])
    # doc 2 first (score 9), then the tie 0, 1, 3 in input order: doc 1 at rank 3
    assert impl(np.array([5.0, 5.0, 9.0, 5.0]), y, qo)[0] == pytest.approx(1 / 3)
    # the relevant doc 3 has the top score, tied with irrelevant doc 0 before it
    assert impl(np.array([9.0, 1.0, 0.0, 9.0]), y, qo)[0] == pytest.approx(1 / 2)


@RR_IMPLS
@pytest.mark.parametrize("empty", [1.0, 0.0])
def test_rr_empty_query_score(impl, empty):
    y = np.array([0.0, 0.0, 0.0, 2.0])
    qo = np.array([0, 2, 2, 4])  # no relevant; empty query; relevant second
    out = impl(np.array([1.0, 2.0, 3.0, 1.0]), y, qo, empty_query_score=empty)
    np.testing.assert_allclose(out, [empty, empty, 0.5])


# --- kernel against reference ---


@pytest.mark.seed_per_case(
    range(4), score_levels=[None, 2, 10], k=[0, 1, 3, 10, 33, 1000], threshold=[1.0, 2.0]
)
def test_kernels_match_references(random_ranking, seed, score_levels, k, threshold):
    scores, y, qo = random_ranking(seed, score_levels=score_levels)
    params = dict(k=k, relevance_threshold=threshold, empty_query_score=0.5)
    np.testing.assert_allclose(
        _ap_kernel(scores, y, qo, **params),
        _ap_reference(scores, y, qo, **params),
        rtol=1e-12,
    )
    np.testing.assert_array_equal(
        _rr_kernel(scores, y, qo, **params), _rr_reference(scores, y, qo, **params)
    )


# --- agreement with ranx ---


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")
def test_matches_ranx(random_ranking, seed):
    ranx = pytest.importorskip("ranx")
    scores, y, qo = random_ranking(seed + 10)  # distinct scores
    keep = [q for q in range(len(qo) - 1) if (y[qo[q] : qo[q + 1]] >= 1).any()]
    qrels = {
        f"q{q}": {f"d{i}": int(y[i]) for i in range(qo[q], qo[q + 1]) if y[i] >= 1} for q in keep
    }
    run = {f"q{q}": {f"d{i}": float(scores[i]) for i in range(qo[q], qo[q + 1])} for q in keep}
    names = ["map", "mrr", "mrr@1", "mrr@3", "mrr@10"]
    expected = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), names)
    for name in names:
        per_query = get_metric(name, empty_query_score=0.0).per_query(scores, y, qo)
        assert per_query[keep].mean() == pytest.approx(expected[name], rel=1e-9), name


# --- invariants and the dataset value ---


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", ["map", "map@5", "mrr", "mrr@3"])
def test_permutation_invariance(random_ranking, seed, name):
    scores, y, qo = random_ranking(seed)
    rng = np.random.default_rng(seed)
    perm = np.concatenate([qo[q] + rng.permutation(qo[q + 1] - qo[q]) for q in range(len(qo) - 1)])
    metric = get_metric(name)
    np.testing.assert_allclose(
        metric.per_query(scores[perm], y[perm], qo), metric.per_query(scores, y, qo)
    )


@pytest.mark.parametrize("name", ["map", "mrr@5"])
def test_empty_query_score_moves_the_mean(random_ranking, name):
    scores, y, qo = random_ranking(2)
    n_empty = sum(not (y[qo[q] : qo[q + 1]] >= 1).any() for q in range(len(qo) - 1))
    assert n_empty >= 1
    one = get_metric(name, empty_query_score=1.0)(scores, y, qo)
    zero = get_metric(name, empty_query_score=0.0)(scores, y, qo)
    assert one - zero == pytest.approx(n_empty / (len(qo) - 1))


@pytest.mark.parametrize("name", ["map", "map@10", "mrr", "mrr@10"])
def test_bind_equals_unbound(random_ranking, name):
    scores, y, qo = random_ranking(8, score_levels=6)
    metric = get_metric(name)
    bound = metric.bind(y, qo)
    rng = np.random.default_rng(3)
    for _ in range(3):
        s = scores + rng.normal(size=scores.shape)
        assert bound(s) == metric(s, y, qo)

"""ERR@k (Chapelle et al. 2009): hand cases, reference, a plain-Python model."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost.metrics import get_metric
from ltrboost.metrics.err import ERREvaluator, _err_reference


def _kernel(scores, y, query_offsets, **params):
    return ERREvaluator(y, query_offsets, **params).per_query(scores)


def _reference(scores, y, query_offsets, **params):
    return _err_reference(
        np.asarray(scores, float),
        np.asarray(y, float),
        np.asarray(query_offsets),
        **params,
    )


IMPLS = pytest.mark.parametrize("impl", [_reference, _kernel], ids=["reference", "kernel"])


def err_by_loops(scores, y, query_offsets, k=0, max_grade=None):
    """ERR straight from Chapelle et al. (2009), Algorithm 2, with Python lists.

    Independent of the package: Python's ``sorted`` (stable) for the ranking.
    """
    y_max = max(y) if max_grade is None else max_grade
    out = []
    for q in range(len(query_offsets) - 1):
        docs = list(range(query_offsets[q], query_offsets[q + 1]))
        ranked = sorted(docs, key=lambda i: -scores[i])
        if k:
            ranked = ranked[:k]
        p, err = 1.0, 0.0
        for r, doc in enumerate(ranked, start=1):
            R = (2.0 ** y[doc] - 1.0) / 2.0**y_max
            err += p * R / r
            p *= 1.0 - R
        out.append(err)
    return np.array(out)


# --- hand-computed ---


@IMPLS
def test_err_by_hand(impl):
    # ranked labels 2, 0, 1 with y_max = 2: R = 3/4, 0, 1/4
    y = np.array([0.0, 1.0, 2.0])
    scores = np.array([0.5, 0.1, 0.9])
    qo = np.array([0, 3])
    expected = 3 / 4 + (1 / 2) * 0 * (1 / 4) + (1 / 3) * (1 / 4) * (1 - 0) * (1 / 4)
    assert impl(scores, y, qo)[0] == pytest.approx(expected, rel=1e-12)  # 37/48
    assert impl(scores, y, qo, k=1)[0] == pytest.approx(3 / 4, rel=1e-12)
    assert impl(scores, y, qo, k=2)[0] == pytest.approx(3 / 4, rel=1e-12)
    assert impl(scores, y, qo, k=10)[0] == pytest.approx(37 / 48, rel=1e-12)
    # max_grade = 4 (e.g. the MSLR scale): R = 3/16, 0, 1/16
    got = impl(scores, y, qo, max_grade=4)[0]
    assert got == pytest.approx(3 / 16 + (1 / 3) * (13 / 16) * (1 / 16), rel=1e-12)


@IMPLS
def test_max_grade_defaults_to_dataset_maximum(impl):
    # query 0 tops out at 1 but the dataset at 3: R of label 1 is 1/8, not 1/2
    y = np.array([1.0, 0.0, 3.0])
    scores = np.array([1.0, 0.0, 0.0])
    qo = np.array([0, 2, 3])
    out = impl(scores, y, qo)
    assert out[0] == pytest.approx(1 / 8)
    assert out[1] == pytest.approx(7 / 8)


@IMPLS
def test_ties_keep_input_order(impl):
    qo = np.array([0, 2])
    scores = np.zeros(2)
    # tied: label 1 second -> R = 1/2 at rank 2 behind R = 0
    assert impl(scores, np.array([0.0, 1.0]), qo)[0] == pytest.approx(1 / 4)
    assert impl(scores, np.array([1.0, 0.0]), qo)[0] == pytest.approx(1 / 2)


@IMPLS
def test_query_without_relevant_documents_scores_zero(impl):
    y = np.array([0.0, 0.0, 2.0])
    qo = np.array([0, 2, 3])
    np.testing.assert_allclose(impl(np.array([1.0, 2.0, 3.0]), y, qo), [0.0, 0.75])


# --- against the reference and the plain-Python model ---


@pytest.mark.seed_per_case(
    range(4), score_levels=[None, 3], k=[0, 1, 3, 10, 33, 1000], max_grade=[None, 6.0]
)
def test_kernel_matches_reference_and_loops(random_ranking, seed, score_levels, k, max_grade):
    scores, y, qo = random_ranking(seed, score_levels=score_levels)
    got = _kernel(scores, y, qo, k=k, max_grade=max_grade)
    np.testing.assert_allclose(
        got, _reference(scores, y, qo, k=k, max_grade=max_grade), rtol=1e-12, atol=1e-15
    )
    np.testing.assert_allclose(
        got,
        err_by_loops(scores, y, qo, k=k, max_grade=max_grade),
        rtol=1e-12,
        atol=1e-15,
    )


@pytest.mark.parametrize("seed", range(3))
def test_metric_mean_matches_loops(random_ranking, seed):
    scores, y, qo = random_ranking(seed + 20)
    assert get_metric("err@10")(scores, y, qo) == pytest.approx(
        err_by_loops(scores, y, qo, k=10).mean(), rel=1e-12
    )
    assert get_metric("err", max_grade=4)(scores, y, qo) == pytest.approx(
        err_by_loops(scores, y, qo, max_grade=4).mean(), rel=1e-12
    )


# --- invariants and options ---


@pytest.mark.parametrize("seed", range(3))
def test_permutation_invariance(random_ranking, seed):
    scores, y, qo = random_ranking(seed)
    rng = np.random.default_rng(seed)
    perm = np.concatenate([qo[q] + rng.permutation(qo[q + 1] - qo[q]) for q in range(len(qo) - 1)])
    metric = get_metric("err@5")
    np.testing.assert_allclose(
        metric.per_query(scores[perm], y[perm], qo), metric.per_query(scores, y, qo)
    )


def test_err_bounds_and_perfect_ranking(random_ranking):
    scores, y, qo = random_ranking(4)
    metric = get_metric("err")
    best = metric.per_query(y.copy(), y, qo)
    worst = metric.per_query(-y, y, qo)
    other = metric.per_query(scores, y, qo)
    assert np.all((other >= 0) & (other <= 1))
    assert np.all(best >= other - 1e-15)
    assert np.all(worst <= other + 1e-15)


def test_max_grade_smaller_than_labels_is_refused():
    y = np.array([0.0, 3.0])
    qo = np.array([0, 2])
    with pytest.raises(ValueError, match=r"max_grade=2.* largest label 3"):
        get_metric("err", max_grade=2)(np.zeros(2), y, qo)
    with pytest.raises(ValueError, match="max_grade"):
        get_metric("err", max_grade=-1.0)


def test_large_grades_do_not_overflow():
    y = np.array([2000.0, 1999.0, 0.0])
    qo = np.array([0, 3])
    value = get_metric("err")(np.array([3.0, 2.0, 1.0]), y, qo)
    # R = 1 - 2^-2000 ~ 1 for the top document
    assert value == pytest.approx(1.0)


def test_bind_fixes_max_grade_and_equals_unbound(random_ranking):
    scores, y, qo = random_ranking(9, score_levels=4)
    metric = get_metric("err@10")
    bound = metric.bind(y, qo)
    rng = np.random.default_rng(1)
    for _ in range(3):
        s = scores + rng.normal(size=scores.shape)
        assert bound(s) == metric(s, y, qo)
    assert bound._evaluator.max_grade == y.max()


def _exact_err(ranked_labels, y_max):
    """ERR in exact rational arithmetic (independent of float rounding)."""
    from fractions import Fraction

    total, reach = Fraction(0), Fraction(1)
    for r, y in enumerate(ranked_labels):
        stop = Fraction(2 ** int(y) - 1, 2 ** int(y_max))
        total += reach * stop / (r + 1)
        reach *= 1 - stop
    return total


@pytest.mark.parametrize("y_max", [31, 32, 40, 60])
def test_grades_above_31_match_exact_arithmetic(y_max):
    """The metric accepts grades above 31 (the exponential gain's bound) and stays
    accurate there: R = 2^(y - y_max) - 2^-y_max is exact for integer grades."""
    rng = np.random.default_rng(y_max)
    y = rng.integers(0, y_max + 1, 12).astype(np.float64)
    y[3] = y_max
    s = rng.normal(size=12)
    qo = np.array([0, 12])
    got = get_metric("err")(s, y, qo)
    ranked = y[np.argsort(-s, kind="stable")]
    assert got == pytest.approx(float(_exact_err(ranked, y_max)), rel=1e-14)


def test_stop_probabilities_equal_the_textbook_formula():
    """For integer grades up to 53 the overflow-free form is bit for bit
    (2^y - 1) / 2^y_max, the form LambdaMART used before sharing it."""
    from ltrboost.metrics.err import stop_probabilities

    for y_max in range(54):
        y = np.arange(y_max + 1, dtype=np.float64)
        np.testing.assert_array_equal(
            stop_probabilities(y, float(y_max)), (np.exp2(y) - 1.0) / np.exp2(y_max)
        )

"""Pair enumeration (``all`` / ``topk`` / ``sampled``): kernels vs NumPy references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ltrboost.objectives._pairs import (
    PAIR_METHODS,
    _count_pairs_one_query,
    _enumerate_pairs_one_query,
    _enumerate_pairs_one_query_reference,
    _label_buckets,
    _random_index,
    _random_index_reference,
    _rank_order,
    pair_method_code,
)

SEEDS = [0, 1, 2, 3, 4]


def _enumerate(labels_ranked, method, truncation_level, pps, seed):
    code, trunc = pair_method_code(method, truncation_level, pps)
    labels_ranked = np.asarray(labels_ranked, dtype=np.float64)
    cnt = _count_pairs_one_query(labels_ranked, code, trunc, pps)
    hi = np.full(cnt, -1, dtype=np.int64)
    lo = np.full(cnt, -1, dtype=np.int64)
    k = _enumerate_pairs_one_query(labels_ranked, code, trunc, pps, seed, hi, lo)
    assert k == cnt
    return hi, lo


@pytest.mark.parametrize("impl", [_random_index_reference, _random_index])
def test_random_index_hand_values(impl):
    # Values of the stream, pinned so that a change of the generator (which would change
    # every sampled model) is noticed.
    got = [int(impl(123456789, c, 1000)) for c in range(5)]
    assert got == [669, 805, 306, 600, 977]
    assert [int(impl(2**62 + 5, 2**40 + c, 97)) for c in range(3)] == [84, 50, 66]


@pytest.mark.parametrize("vary", ["seed", "counter"])
def test_random_index_is_uniform(vary):
    m = 37
    counts = np.zeros(m)
    for k in range(37 * 200):
        seed, counter = (k, 3) if vary == "seed" else (3, k)
        counts[_random_index(seed, counter, m)] += 1
    expected = 200.0
    chi2 = np.sum((counts - expected) ** 2 / expected)
    assert chi2 < 36 + 6 * np.sqrt(72)  # 36 dof: mean 36, sd 8.5


@pytest.mark.parametrize("seed", SEEDS)
def test_random_index_matches_reference(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        s = int(rng.integers(0, 2**62))
        c = int(rng.integers(0, 2**40))
        m = int(rng.integers(1, 10_000))
        r = _random_index(s, c, m)
        assert r == _random_index_reference(s, c, m)
        assert 0 <= r < m


def test_rank_order_is_stable_descending():
    s = np.array([1.0, 3.0, 1.0, 3.0, -2.0, 1.0])
    assert _rank_order(s).tolist() == [1, 3, 0, 2, 5, 4]


def test_label_buckets_hand_example():
    labels_ranked = np.array([1.0, 3.0, 0.0, 1.0, 3.0, 2.0, 1.0])
    order = np.empty(7, dtype=np.int64)
    lo = np.empty(7, dtype=np.int64)
    hi = np.empty(7, dtype=np.int64)
    _label_buckets(labels_ranked, order, lo, hi)
    # label-sorted: 3 3 | 2 | 1 1 1 | 0, ties in rank order
    assert order.tolist() == [1, 4, 5, 0, 3, 6, 2]
    assert lo.tolist() == [0, 0, 2, 3, 3, 3, 6]
    assert hi.tolist() == [2, 2, 3, 6, 6, 6, 7]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("method", "trunc", "pps"),
    [
        ("all", None, 1),
        ("topk", 1, 1),
        ("topk", 3, 1),
        ("topk", None, 1),
        ("topk", 100, 1),
        ("sampled", None, 1),
        ("sampled", None, 3),
    ],
)
def test_enumerate_matches_reference(seed, method, trunc, pps):
    rng = np.random.default_rng(seed)
    for n in [0, 1, 2, 3, 5, 9, 17]:
        for max_label in [0, 1, 4]:
            labels = rng.integers(0, max_label + 1, n).astype(np.float64)
            qseed = int(rng.integers(0, 2**31))
            hi, lo = _enumerate(labels, method, trunc, pps, qseed)
            rhi, rlo = _enumerate_pairs_one_query_reference(labels, method, trunc, pps, qseed)
            np.testing.assert_array_equal(hi, rhi)
            np.testing.assert_array_equal(lo, rlo)
            # invariants: rank_hi < rank_lo, labels differ, top-k constraint
            assert np.all(hi < lo)
            assert np.all(labels[hi] != labels[lo])
            if method == "topk" and trunc is not None:
                assert np.all(hi < trunc)
            if n < 2 or np.unique(labels).size < 2:
                assert hi.size == 0


@pytest.mark.parametrize("seed", SEEDS)
def test_all_and_topk_are_exactly_the_defined_sets(seed):
    rng = np.random.default_rng(seed)
    n = 11
    labels = rng.integers(0, 3, n).astype(np.float64)
    expected_all = {
        (a, b) for a, b in itertools.combinations(range(n), 2) if labels[a] != labels[b]
    }
    hi, lo = _enumerate(labels, "all", None, 1, 0)
    assert set(zip(hi.tolist(), lo.tolist(), strict=True)) == expected_all
    assert len(hi) == len(expected_all)  # no duplicates
    for k in [1, 2, 4, 10, 11, 30]:
        hi, lo = _enumerate(labels, "topk", k, 1, 0)
        expected = {(a, b) for a, b in expected_all if a < k}
        assert set(zip(hi.tolist(), lo.tolist(), strict=True)) == expected
        assert len(hi) == len(expected)


def test_sampled_reproducible_and_seed_dependent():
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 5, 40).astype(np.float64)
    a = _enumerate(labels, "sampled", None, 2, 99)
    b = _enumerate(labels, "sampled", None, 2, 99)
    c = _enumerate(labels, "sampled", None, 2, 100)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not (np.array_equal(a[0], c[0]) and np.array_equal(a[1], c[1]))


def test_sampled_every_document_gets_its_partners():
    labels = np.array([2.0, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0])
    n, pps = labels.size, 3
    hi, lo = _enumerate(labels, "sampled", None, pps, 5)
    assert hi.size == pps * n
    # pair t*n + p belongs to the document at label-sorted position p
    label_order = np.argsort(-labels, kind="stable")
    for t in range(pps):
        for p in range(n):
            k = t * n + p
            assert label_order[p] in (hi[k], lo[k])


def test_sampled_partners_are_uniform():
    # one document of label 1 among 50 of label 0: its partners are uniform over the 50
    labels = np.zeros(51)
    labels[17] = 1.0
    counts = np.zeros(51)
    for seed in range(400):
        hi, lo = _enumerate(labels, "sampled", None, 1, seed)
        # label-sorted position 0 is the only label-1 document
        partner = lo[0] if hi[0] == 17 else hi[0]
        counts[partner] += 1
    assert counts[17] == 0
    expected = 400 / 50
    chi2 = np.sum((counts[np.arange(51) != 17] - expected) ** 2 / expected)
    assert chi2 < 100  # 49 dof: mean 49, sd ~10


def test_pair_method_code_validation():
    assert pair_method_code("all", None, 1) == (PAIR_METHODS["all"], -1)
    assert pair_method_code("topk", 30, 1) == (PAIR_METHODS["topk"], 30)
    with pytest.raises(ValueError, match="pair_method='best'"):
        pair_method_code("best", 30, 1)
    with pytest.raises(ValueError, match="truncation_level=0"):
        pair_method_code("topk", 0, 1)
    with pytest.raises(ValueError, match="truncation_level"):
        pair_method_code("topk", 2.5, 1)
    with pytest.raises(ValueError, match="pairs_per_sample=0"):
        pair_method_code("sampled", None, 0)

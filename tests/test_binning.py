"""Tests for ltrboost.binning: thresholds, the bin kernel and its reference.

The property everything downstream relies on is ``bin <= b  <=>  x <= thresholds[b]``:
it makes a tree trained on binned data predict identically on raw data.
"""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost._config import X_BINNED_DTYPE
from ltrboost.binning import (
    BinMapper,
    _find_thresholds,
    _map_to_bins,
    _map_to_bins_reference,
)

SEEDS = [0, 1, 2, 3]
FMAX = np.finfo(np.float64).max
TINY = np.finfo(np.float64).smallest_subnormal


def _kernel_bins(X, binner):
    """Run the jitted kernel directly (not through transform) on ``X``."""
    out = np.empty(X.shape, dtype=X_BINNED_DTYPE, order="F")
    _map_to_bins(
        X,
        binner.thresholds_matrix(),
        binner.n_bins_non_missing_,
        binner.missing_bin_,
        out,
    )
    return out


def _reference_bins(X, binner):
    return _map_to_bins_reference(X, binner.bin_thresholds_, binner.missing_bin_)


def _adjacent_floats(start: float, k: int) -> np.ndarray:
    vals = [start]
    for _ in range(k - 1):
        vals.append(np.nextafter(vals[-1], np.inf))
    return np.array(vals, dtype=np.float64)


def _assert_threshold_equivalence(X, binned, binner):
    """``bin <= b`` iff ``x <= thresholds[b]`` for every b, NaN iff missing bin."""
    for f, thr in enumerate(binner.bin_thresholds_):
        col = np.asarray(X[:, f], dtype=np.float64)
        bins = binned[:, f]
        nan = np.isnan(col)
        np.testing.assert_array_equal(bins == binner.missing_bin_, nan)
        x = col[~nan]
        b_x = bins[~nan].astype(np.int64)
        assert np.all(b_x <= thr.shape[0])
        for b in range(thr.shape[0]):
            np.testing.assert_array_equal(b_x <= b, x <= thr[b], err_msg=f"f={f} b={b}")
        # the last value bin has no threshold: trees store +inf (thresholds_matrix pad)
        padded = binner.thresholds_matrix()[f]
        if thr.shape[0] < padded.shape[0]:
            assert np.isposinf(padded[thr.shape[0]])


# ---------------------------------------------------------------- hand-computed cases


@pytest.mark.parametrize("impl", ["reference", "kernel"])
def test_hand_case(impl):
    X = np.array([[1.0, 5.0], [3.0, np.nan], [2.0, 5.0], [1.0, 7.0], [np.nan, 5.0]])
    binner = BinMapper(max_bins=4).fit(X)
    # three distinct values -> midpoints; two distinct values -> one midpoint
    np.testing.assert_array_equal(binner.bin_thresholds_[0], [1.5, 2.5])
    np.testing.assert_array_equal(binner.bin_thresholds_[1], [6.0])
    np.testing.assert_array_equal(binner.n_bins_non_missing_, [3, 2])
    np.testing.assert_array_equal(binner.has_missing_, [True, True])
    assert binner.missing_bin_ == 4
    expected = np.array([[0, 0], [2, 4], [1, 0], [0, 1], [4, 0]], dtype=np.uint8)
    got = _kernel_bins(X, binner) if impl == "kernel" else _reference_bins(X, binner)
    np.testing.assert_array_equal(got, expected)


def test_transform_is_uint8_fortran_and_matches_kernel():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    binner = BinMapper(max_bins=16)
    binned = binner.fit_transform(X)
    assert binned.dtype == np.uint8
    assert binned.flags.f_contiguous
    np.testing.assert_array_equal(binned, _reference_bins(X, binner))


@pytest.mark.parametrize("max_bins", [1, 256, 0])
def test_max_bins_out_of_range(max_bins):
    with pytest.raises(ValueError, match="max_bins"):
        BinMapper(max_bins=max_bins)


def test_transform_feature_count_mismatch():
    binner = BinMapper(max_bins=8).fit(np.zeros((5, 3)))
    with pytest.raises(ValueError, match="3"):
        binner.transform(np.zeros((5, 2)))


# ---------------------------------------------------------------- thresholds


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("max_bins", [2, 3, 17, 255])
def test_thresholds_strictly_increasing_and_bounded(seed, max_bins):
    rng = np.random.default_rng(seed)
    cols = [
        rng.normal(size=5000),
        rng.integers(0, 40, size=5000).astype(float),  # heavy ties
        np.round(rng.exponential(size=5000), 2),
        np.concatenate([np.zeros(4000), rng.normal(size=1000)]),  # a dominant value
    ]
    for col in cols:
        thr = _find_thresholds(col, max_bins)
        assert thr.dtype == np.float64
        assert thr.shape[0] <= max_bins - 1
        assert np.all(np.isfinite(thr))
        assert np.all(np.diff(thr) > 0)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_distinct", [1, 2, 5, 254, 255])
def test_few_distinct_values_get_one_bin_each(seed, n_distinct):
    rng = np.random.default_rng(seed)
    values = np.sort(rng.choice(np.linspace(-50, 50, 1000), n_distinct, replace=False))
    col = rng.choice(values, size=3000)
    col[:n_distinct] = values  # every value present
    col[rng.random(col.shape[0]) < 0.05] = np.nan
    X = col[:, None]
    binner = BinMapper(max_bins=255).fit(X)
    thr = binner.bin_thresholds_[0]
    assert thr.shape[0] == n_distinct - 1
    binned = binner.transform(X)[:, 0]
    nan = np.isnan(col)
    # value k (in sorted order) -> bin k, exactly
    expected = np.searchsorted(values, col[~nan])
    np.testing.assert_array_equal(binned[~nan], expected)
    assert np.all(binned[nan] == binner.missing_bin_)


def test_more_distinct_values_than_bins_uses_quantiles():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 1))
    binner = BinMapper(max_bins=10).fit(X)
    thr = binner.bin_thresholds_[0]
    assert thr.shape[0] == 9
    binned = binner.transform(X)[:, 0]
    counts = np.bincount(binned, minlength=10)
    # quantile bins of continuous data hold about 10% each
    assert counts.min() > 0.08 * 20000
    assert counts.max() < 0.12 * 20000
    np.testing.assert_allclose(thr, np.quantile(X[:, 0], np.arange(1, 10) / 10), atol=0.05)


@pytest.mark.parametrize(
    "values",
    [
        _adjacent_floats(1.0, 6),
        _adjacent_floats(-1e300, 4),
        _adjacent_floats(1e300, 4),
        np.array([-1e300, -1.0, 0.0, 1.0, 1e300]),
        np.array([-FMAX, np.nextafter(-FMAX, 0), 0.0, np.nextafter(FMAX, 0), FMAX]),
        np.array([0.0, TINY, 2 * TINY, 3 * TINY, 4 * TINY, 5 * TINY]),
        np.array([-3 * TINY, -TINY, 0.0, TINY, 3 * TINY]),
        _adjacent_floats(np.float64(np.finfo(np.float32).max), 3),
    ],
    ids=[
        "adjacent-1",
        "adjacent-neg1e300",
        "adjacent-1e300",
        "pm1e300",
        "pm-float-max",
        "subnormals",
        "signed-subnormals",
        "adjacent-f32max",
    ],
)
def test_extreme_and_adjacent_values_stay_in_separate_bins(values):
    assert np.all(np.diff(values) > 0)
    rng = np.random.default_rng(0)
    col = np.concatenate([values, rng.choice(values, 50), [np.nan]])
    X = col[:, None]
    binner = BinMapper(max_bins=255).fit(X)
    thr = binner.bin_thresholds_[0]
    assert np.all(np.diff(thr) > 0)
    assert np.all(np.isfinite(thr))
    kernel = _kernel_bins(X, binner)
    np.testing.assert_array_equal(kernel, _reference_bins(X, binner))
    # one bin per distinct value, in order
    np.testing.assert_array_equal(kernel[: values.shape[0], 0], np.arange(values.shape[0]))
    _assert_threshold_equivalence(X, kernel, binner)


# ---------------------------------------------------------------- NaN / missing


def test_nan_goes_to_missing_bin_and_all_nan_column():
    X = np.array([[np.nan, 1.0], [np.nan, np.nan], [np.nan, 2.0]])
    binner = BinMapper(max_bins=7).fit(X)
    assert binner.bin_thresholds_[0].shape[0] == 0
    assert binner.n_bins_non_missing_[0] == 1
    binned = binner.transform(X)
    np.testing.assert_array_equal(binned[:, 0], [7, 7, 7])
    np.testing.assert_array_equal(binned[:, 1], [0, 7, 1])
    np.testing.assert_array_equal(binned, _reference_bins(X, binner))


def test_nan_unseen_at_fit_time_maps_to_missing_bin():
    rng = np.random.default_rng(0)
    binner = BinMapper(max_bins=20).fit(rng.normal(size=(200, 2)))
    assert not binner.has_missing_.any()
    X_new = np.array([[np.nan, 0.0], [1e300, np.nan], [-1e300, 0.0]])
    binned = binner.transform(X_new)
    assert binned[0, 0] == 20
    assert binned[1, 1] == 20
    assert binned[1, 0] == binner.n_bins_non_missing_[0] - 1  # above every threshold
    assert binned[2, 0] == 0
    np.testing.assert_array_equal(binned, _reference_bins(X_new, binner))


# ---------------------------------------------------------------- kernel vs reference


def _random_matrix(rng, n, dtype):
    huge = 1e300 if dtype == np.float64 else 1e37  # stays finite in either dtype
    cols = [
        rng.normal(size=n),  # continuous
        rng.integers(0, 5, size=n).astype(float),  # ties
        np.full(n, 3.25),  # constant
        rng.normal(size=n) * huge,  # huge magnitudes
        np.where(rng.random(n) < 0.5, 1.0, np.nextafter(1.0, 2.0)),  # adjacent floats
        rng.normal(size=n),
        np.full(n, np.nan),  # all missing
    ]
    X = np.column_stack(cols).astype(dtype)
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("max_bins", [2, 16, 255])
@pytest.mark.parametrize("n", [1, 500, 3000])
def test_kernel_matches_reference_random(seed, dtype, max_bins, n):
    rng = np.random.default_rng(seed)
    X = _random_matrix(rng, n, dtype)
    binner = BinMapper(max_bins=max_bins).fit(X)
    kernel = _kernel_bins(X, binner)
    np.testing.assert_array_equal(kernel, _reference_bins(X, binner))
    np.testing.assert_array_equal(binner.transform(X), kernel)
    _assert_threshold_equivalence(X, kernel, binner)
    # new data, including values outside the fitted range
    X_new = _random_matrix(rng, 200, dtype) * dtype(1.5)
    kernel_new = _kernel_bins(X_new, binner)
    np.testing.assert_array_equal(kernel_new, _reference_bins(X_new, binner))
    _assert_threshold_equivalence(X_new, kernel_new, binner)


@pytest.mark.parametrize("seed", SEEDS)
def test_bins_monotone_in_x(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(2, size=(4000, 1))
    binner = BinMapper(max_bins=31).fit(X)
    order = np.argsort(X[:, 0], kind="stable")
    binned = binner.transform(X)[order, 0]
    assert np.all(np.diff(binned.astype(int)) >= 0)


def test_subsample_is_reproducible_by_random_state():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 2))
    a = BinMapper(max_bins=64, subsample=1000, random_state=3).fit(X)
    b = BinMapper(max_bins=64, subsample=1000, random_state=3).fit(X)
    for ta, tb in zip(a.bin_thresholds_, b.bin_thresholds_, strict=True):
        np.testing.assert_array_equal(ta, tb)
    binned = a.transform(X)
    np.testing.assert_array_equal(binned, _reference_bins(X, a))
    _assert_threshold_equivalence(X, binned, a)


@pytest.mark.parametrize("layout", ["C", "F", "strided"])
@pytest.mark.parametrize("n", [255, 256, 257, 1000])  # around the kernel's row blocks
def test_kernel_any_memory_layout(layout, n):
    rng = np.random.default_rng(n)
    base = _random_matrix(rng, 2 * n, np.float64)
    binner = BinMapper(max_bins=40).fit(base)
    if layout == "C":
        X = np.ascontiguousarray(base[:n])
    elif layout == "F":
        X = np.asfortranarray(base[:n])
    else:
        X = base[::2]  # a non-contiguous view
    expected = _reference_bins(np.ascontiguousarray(X), binner)
    np.testing.assert_array_equal(_kernel_bins(X, binner), expected)
    np.testing.assert_array_equal(binner.transform(X), expected)


# ------------------------------------------- many distinct values: LightGBM's bin finder


def _greedy_find_bin_reference(distinct, counts, max_bin, min_data_in_bin):
    """LightGBM's ``GreedyFindBin`` (src/io/bin.cpp), written out in plain Python: the
    upper bounds of the bins as (upper value, next lower value) index pairs -> cut
    indices into ``distinct``."""
    n = len(distinct)
    total = int(sum(counts))
    cuts = []
    if n <= max_bin:
        cur = 0
        for i in range(n - 1):
            cur += counts[i]
            if cur >= min_data_in_bin:
                cuts.append(i)
                cur = 0
        return cuts
    if min_data_in_bin > 0:
        max_bin = max(min(max_bin, total // min_data_in_bin), 1)
    mean_bin_size = total / max_bin
    is_big = [c >= mean_bin_size for c in counts]
    rest_bin_cnt = max_bin - sum(is_big)
    rest_sample_cnt = total - sum(c for c, b in zip(counts, is_big, strict=True) if b)
    mean_bin_size = rest_sample_cnt / rest_bin_cnt if rest_bin_cnt > 0 else float("inf")
    bin_cnt = 0
    cur = 0
    for i in range(n - 1):
        if not is_big[i]:
            rest_sample_cnt -= counts[i]
        cur += counts[i]
        if (
            is_big[i]
            or cur >= mean_bin_size
            or (is_big[i + 1] and cur >= max(1.0, mean_bin_size * 0.5))
        ):
            cuts.append(i)
            bin_cnt += 1
            if bin_cnt >= max_bin - 1:
                break
            cur = 0
            if not is_big[i]:
                rest_bin_cnt -= 1
                mean_bin_size = rest_sample_cnt / rest_bin_cnt if rest_bin_cnt > 0 else float("inf")
    return cuts


def _lightgbm_cuts_reference(distinct, counts, max_bins, min_data_in_bin):
    """``FindBinWithZeroAsOneBin`` over the reference above (columns holding zeros)."""
    distinct = list(distinct)
    counts = [int(c) for c in counts]
    neg_end = sum(v < 0 for v in distinct)
    pos_start = neg_end + sum(v == 0 for v in distinct)
    total = sum(counts)
    n_zero = sum(counts[neg_end:pos_start])
    cuts, left_bins = [], 0
    if neg_end > 0:
        left_max = max(1, int(sum(counts[:neg_end]) / (total - n_zero) * (max_bins - 1)))
        cuts = _greedy_find_bin_reference(
            distinct[:neg_end], counts[:neg_end], left_max, min_data_in_bin
        )
        left_bins = len(cuts) + 1
        cuts.append(neg_end - 1)
    right_max = max_bins - 1 - left_bins
    if pos_start < len(distinct) and right_max > 0:
        if not cuts or cuts[-1] != pos_start - 1:
            cuts.append(pos_start - 1)
        r = _greedy_find_bin_reference(
            distinct[pos_start:], counts[pos_start:], right_max, min_data_in_bin
        )
        cuts += [pos_start + c for c in r]
    return cuts


def _skewed_column(rng, n, zero_share=0.5, neg_share=0.2, spikes=3):
    kind = rng.choice(3, size=n, p=[zero_share, neg_share, 1 - zero_share - neg_share])
    x = np.where(
        kind == 0, 0.0, np.where(kind == 1, -rng.exponential(size=n), rng.exponential(size=n))
    )
    for s in range(spikes):  # a few frequent values, each worth several bins of quantiles
        x[rng.random(n) < 0.03] = 0.5 + s
    return np.round(x, 4)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("max_bins", [7, 32, 255])
@pytest.mark.parametrize("min_samples_bin", [1, 3, 20])
@pytest.mark.parametrize("zero_share", [0.0, 0.05, 0.6])
def test_many_values_match_lightgbm_bin_finder_reference(
    seed, max_bins, min_samples_bin, zero_share
):
    from ltrboost.binning import _distinct_counts, _many_value_cuts

    rng = np.random.default_rng(seed)
    col = _skewed_column(rng, 5000, zero_share=zero_share, neg_share=0.2 if seed % 2 else 0.0)
    distinct, counts = _distinct_counts(np.sort(col))
    assert distinct.size > max_bins
    got = _many_value_cuts(distinct, counts, max_bins, min_samples_bin).tolist()
    if (distinct == 0).any():
        want = _lightgbm_cuts_reference(distinct, counts, max_bins, min_samples_bin)
    else:  # no zero: one side with all the bins
        want = _greedy_find_bin_reference(list(distinct), list(counts), max_bins, min_samples_bin)
    assert got == want
    thr = _find_thresholds(col, max_bins, min_samples_bin)
    assert thr.size == len(want) <= max_bins - 1
    assert np.all(np.diff(thr) > 0)


def test_repeated_values_do_not_collapse_bins():
    """60% zeros and three frequent values: quantile thresholds collapsed to ~40% of the
    bins; the greedy finder uses every bin, zero and each spike nearly a bin of its own."""
    rng = np.random.default_rng(5)
    col = _skewed_column(rng, 20000, zero_share=0.6, neg_share=0.0)
    thr = _find_thresholds(col, 255, 3)
    assert thr.size >= 250
    binned = BinMapper(255, min_samples_bin=3).fit(col[:, None]).transform(col[:, None])[:, 0]
    assert np.all(binned[col != 0] != binned[col == 0][0])  # zero: a bin of its own
    for v in (0.5, 1.5, 2.5):  # a spike's bin may take < half a bin of smaller values
        assert np.unique(binned[col == v]).size == 1
        in_bin = binned == binned[col == v][0]
        assert np.sum(in_bin & (col != v)) < 0.5 * col.size / 255


def test_bin_counts_equal_lightgbm():
    """Same number of bins per feature as LightGBM's Dataset (max_bin 255,
    min_data_in_bin 3) on skewed non-negative columns with zeros, few and many values."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(11)
    cols = [_skewed_column(rng, 3000, zero_share=z, neg_share=0.0) for z in (0.05, 0.3, 0.8)]
    cols.append(rng.integers(0, 40, 3000).astype(np.float64))  # few distinct values
    X = np.column_stack(cols)
    ours = BinMapper(255, min_samples_bin=3).fit(X).n_bins_non_missing_
    ds = lgb.Dataset(X, params={"max_bin": 255, "min_data_in_bin": 3, "verbose": -1}).construct()
    theirs = [ds.feature_num_bin(f) for f in range(X.shape[1])]
    assert ours.tolist() == theirs

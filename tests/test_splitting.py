"""Tests for ltrboost.splitting: split search on histograms and the row partition."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import ltrboost.splitting as splitting
from ltrboost._numba import threads
from ltrboost.criteria import CRITERION_CODES
from ltrboost.histogram import _build_histogram_reference
from ltrboost.splitting import (
    SplitParams,
    _find_best_split_reference,
    find_node_split,
    split_indices,
)

SEEDS = [0, 1, 2, 3, 4]


@pytest.fixture(params=["serial", "parallel"])
def split_path(request, monkeypatch):
    """Force the serial bodies or the parallel drivers (normally chosen by size)."""
    threshold = 2**62 if request.param == "serial" else 0
    monkeypatch.setattr(splitting, "SERIAL_SPLIT_WORK", threshold)
    monkeypatch.setattr(splitting, "SERIAL_PARTITION_ROWS", threshold)
    return request.param


def _params(criterion="newton", min_samples_leaf=1, min_sum_hessian=0.0, l2=0.0, min_gain=0.0):
    return SplitParams(
        min_samples_leaf=min_samples_leaf,
        min_sum_hessian_in_leaf=min_sum_hessian,
        l2_regularization=l2,
        min_gain_to_split=min_gain,
        criterion_code=CRITERION_CODES[criterion],
    )


def _hist_from_bins(bin_stats, n_bins):
    """One-feature histogram from {bin: (G, H, n)}."""
    hist = np.zeros((1, n_bins, 3))
    for b, stats in bin_stats.items():
        hist[0, b] = stats
    return hist


def _brute_gain(hist, f, b, ml, missing_bin, sum_g, sum_h, count, params):
    """Gain of one candidate, recomputed from scratch (no pairs)."""
    left = hist[f, : b + 1].sum(axis=0) + (hist[f, missing_bin] if ml else 0.0)
    gl, hl, nl = left
    gr, hr, nr = sum_g - gl, sum_h - hl, count - nl
    l2 = params.l2_regularization

    def s(g, d):
        return g * g / (d + l2) if d + l2 > 0 else 0.0

    if params.criterion_code == CRITERION_CODES["se"]:
        return s(gl, nl) + s(gr, nr) - s(sum_g, count)
    return s(gl, hl) + s(gr, hr) - s(sum_g, sum_h)


# ---------------------------------------------------------------- hand cases

# bins 0..2 hold (G, H, n) = (-4, 2, 2), (-2, 2, 2), (6, 4, 2);
# the missing bin 3 holds (-5, 1, 1)
HAND_BINS = {0: (-4.0, 2.0, 2), 1: (-2.0, 2.0, 2), 2: (6.0, 4.0, 2), 3: (-5.0, 1.0, 1)}


def _split_via(impl, hist, n_bins_nm, sum_g, sum_h, count, params):
    """(gain, feature, bin, missing_left) from the kernel or the reference."""
    if impl == "reference":
        return _find_best_split_reference(hist, n_bins_nm, 3, sum_g, sum_h, count, params)
    info = find_node_split(
        hist, np.array([0], dtype=np.int32), n_bins_nm, 3, sum_g, sum_h, count, params
    )
    return info.gain, info.feature_idx, info.bin_idx, info.missing_go_to_left


@pytest.mark.parametrize("impl", ["reference", "kernel"])
@pytest.mark.usefixtures("split_path")
def test_hand_case_newton_missing_left_wins(impl):
    # Candidates (G^2/H per side, parent 25/9):
    #  missing right: b0 8+1/7, b1 9+0.2, b2 0+25
    #  missing left : b0 27+16/6, b1 24.2+9 = 33.2  <- best
    hist = _hist_from_bins(HAND_BINS, 4)
    nb = np.array([3], dtype=np.int32)
    gain, f, b, ml = _split_via(impl, hist, nb, -5.0, 9.0, 7, _params())
    assert (f, b, bool(ml)) == (0, 1, True)
    assert gain == pytest.approx(33.2 - 25 / 9, rel=1e-12)


def test_hand_case_split_info_fields():
    hist = _hist_from_bins(HAND_BINS, 4)
    nb = np.array([3], dtype=np.int32)
    info = find_node_split(hist, np.array([0], dtype=np.int32), nb, 3, -5.0, 9.0, 7, _params())
    assert info.sum_gradient_left == pytest.approx(-11.0)
    assert info.sum_hessian_left == pytest.approx(5.0)
    assert info.count_left == 5
    assert info.sum_gradient_right == pytest.approx(6.0)
    assert info.sum_hessian_right == pytest.approx(4.0)
    assert info.count_right == 2
    assert info.value_left == pytest.approx(11.0 / 5.0)  # -G/(H+lam)
    assert info.value_right == pytest.approx(-6.0 / 4.0)
    info_l2 = find_node_split(
        hist, np.array([0], dtype=np.int32), nb, 3, -5.0, 9.0, 7, _params(l2=1.0)
    )
    assert info_l2.value_left == pytest.approx(11.0 / 6.0)


@pytest.mark.parametrize("impl", ["reference", "kernel"])
@pytest.mark.usefixtures("split_path")
def test_hand_case_min_samples_leaf(impl):
    # min_samples_leaf=3 leaves missing left b0 (3|4) 27+16/6, missing right b1 (4|3)
    hist = _hist_from_bins(HAND_BINS, 4)
    nb = np.array([3], dtype=np.int32)
    gain, f, b, ml = _split_via(impl, hist, nb, -5.0, 9.0, 7, _params(min_samples_leaf=3))
    assert (f, b, bool(ml)) == (0, 0, True)
    assert gain == pytest.approx(27 + 16 / 6 - 25 / 9, rel=1e-12)


@pytest.mark.parametrize("impl", ["reference", "kernel"])
@pytest.mark.usefixtures("split_path")
def test_hand_case_se(impl):
    # SE uses counts: missing right b1 (n 4|3): 36/4 + 1/3 ; missing left b1 (5|2):
    # 121/5 + 36/2 = 42.2 <- best ; parent 25/7
    hist = _hist_from_bins(HAND_BINS, 4)
    nb = np.array([3], dtype=np.int32)
    gain, f, b, ml = _split_via(impl, hist, nb, -5.0, 9.0, 7, _params("se"))
    assert (f, b, bool(ml)) == (0, 1, True)
    assert gain == pytest.approx(121 / 5 + 36 / 2 - 25 / 7, rel=1e-12)


def test_hand_case_min_sum_hessian_and_no_split():
    hist = _hist_from_bins(HAND_BINS, 4)
    nb = np.array([3], dtype=np.int32)
    feats = np.array([0], dtype=np.int32)
    # the best split (missing left, b1) has H = 5 | 4: allowed at exactly 4 (inclusive),
    # and every split has one side with H < 4 + eps
    info = find_node_split(hist, feats, nb, 3, -5.0, 9.0, 7, _params(min_sum_hessian=4.0))
    assert (info.bin_idx, info.missing_go_to_left) == (1, True)
    assert (
        find_node_split(hist, feats, nb, 3, -5.0, 9.0, 7, _params(min_sum_hessian=4.0 + 1e-9))
        is None
    )
    assert find_node_split(hist, feats, nb, 3, -5.0, 9.0, 7, _params(min_sum_hessian=5.0)) is None
    assert find_node_split(hist, feats, nb, 3, -5.0, 9.0, 7, _params(min_gain=31.0)) is None
    assert find_node_split(hist, feats, nb, 3, -5.0, 9.0, 7, _params(min_samples_leaf=4)) is None


def test_no_missing_values_send_unseen_missing_to_larger_child():
    # no rows in the missing bin: missing_go_to_left says where NaN goes at prediction
    for bins, larger_left in (
        ({0: (-6.0, 3.0, 3), 1: (6.0, 1.0, 1)}, True),
        ({0: (-6.0, 1.0, 1), 1: (6.0, 3.0, 3)}, False),
    ):
        hist = _hist_from_bins(bins, 4)
        info = find_node_split(
            hist,
            np.array([0], dtype=np.int32),
            np.array([2], dtype=np.int32),
            3,
            0.0,
            4.0,
            4,
            _params(),
        )
        assert info.bin_idx == 0
        assert info.missing_go_to_left == larger_left


def test_constant_feature_cannot_split():
    hist = _hist_from_bins({0: (3.0, 2.0, 5)}, 4)
    assert (
        find_node_split(
            hist,
            np.array([0], dtype=np.int32),
            np.array([1], dtype=np.int32),
            3,
            3.0,
            2.0,
            5,
            _params(),
        )
        is None
    )
    # ... unless it has missing values: then "value vs missing" is a split
    hist = _hist_from_bins({0: (3.0, 2.0, 5), 3: (-3.0, 2.0, 5)}, 4)
    info = find_node_split(
        hist,
        np.array([0], dtype=np.int32),
        np.array([1], dtype=np.int32),
        3,
        0.0,
        4.0,
        10,
        _params(),
    )
    assert info is not None
    assert (info.count_left, info.count_right) == (5, 5)


# ---------------------------------------------------------------- random vs reference


def _random_node(seed, n=400, n_features=6, max_bins=15, integer_g=False):
    rng = np.random.default_rng(seed)
    missing_bin = max_bins
    n_bins_nm = rng.integers(1, max_bins + 1, size=n_features).astype(np.int32)
    n_bins_nm[0] = max_bins
    X = np.empty((n, n_features), dtype=np.uint8, order="F")
    for f in range(n_features):
        X[:, f] = rng.integers(0, n_bins_nm[f], size=n)
        if f % 2 == 0:  # half of the features have missing values
            X[rng.random(n) < 0.15, f] = missing_bin
    if integer_g:  # many exact ties between candidate gains
        g = rng.integers(-2, 3, size=n).astype(np.float32)
        h = np.ones(n, dtype=np.float32)
    else:
        g = rng.normal(size=n).astype(np.float32) + np.float32(0.3)
        h = rng.uniform(0.0, 2.0, size=n).astype(np.float32)
    hist = _build_histogram_reference(X, np.arange(n), g, h, max_bins + 1)
    sum_g = float(np.sum(g, dtype=np.float64))
    sum_h = float(np.sum(h, dtype=np.float64))
    return hist, n_bins_nm, missing_bin, sum_g, sum_h, n


PARAM_GRID = [
    dict(criterion="newton"),
    dict(criterion="se"),
    dict(criterion="newton", l2=1.5),
    dict(criterion="se", l2=1.5),
    dict(criterion="newton", min_samples_leaf=40),
    dict(criterion="se", min_samples_leaf=40),
    dict(criterion="newton", min_sum_hessian=60.0),
    dict(criterion="newton", min_samples_leaf=150, min_sum_hessian=100.0),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "kw", PARAM_GRID, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items())
)
@pytest.mark.usefixtures("split_path")
def test_kernel_matches_reference(seed, kw):
    hist, nb, missing_bin, sum_g, sum_h, count = _random_node(seed)
    params = _params(**kw)
    feats = np.arange(hist.shape[0], dtype=np.int32)
    ref_gain, ref_f, ref_b, ref_ml = _find_best_split_reference(
        hist, nb, missing_bin, sum_g, sum_h, count, params
    )
    info = find_node_split(hist, feats, nb, missing_bin, sum_g, sum_h, count, params)
    if not ref_gain > 0:
        assert info is None
        return
    assert info is not None
    assert info.gain == pytest.approx(ref_gain, rel=1e-9)
    assert (info.feature_idx, info.bin_idx) == (ref_f, ref_b)
    if hist[ref_f, missing_bin, 2] > 0:
        assert info.missing_go_to_left == ref_ml
    # constraints hold for the chosen split
    assert min(info.count_left, info.count_right) >= params.min_samples_leaf
    assert min(info.sum_hessian_left, info.sum_hessian_right) >= params.min_sum_hessian_in_leaf
    assert info.count_left + info.count_right == count
    # reported sums are those of the chosen candidate
    f, b = info.feature_idx, info.bin_idx
    left = hist[f, : b + 1].sum(axis=0)
    if info.missing_go_to_left and hist[f, missing_bin, 2] > 0:
        left = left + hist[f, missing_bin]
    np.testing.assert_allclose(
        [info.sum_gradient_left, info.sum_hessian_left, info.count_left],
        left,
        rtol=1e-9,
        atol=1e-9,
    )
    np.testing.assert_allclose(
        [info.sum_gradient_right, info.sum_hessian_right],
        [sum_g - left[0], sum_h - left[1]],
        rtol=1e-9,
        atol=1e-9,
    )
    l2 = params.l2_regularization
    assert info.value_left == pytest.approx(-left[0] / (left[1] + l2), rel=1e-9)
    assert info.value_right == pytest.approx(-(sum_g - left[0]) / (sum_h - left[1] + l2), rel=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("criterion", ["newton", "se"])
@pytest.mark.usefixtures("split_path")
def test_kernel_matches_reference_with_ties(seed, criterion):
    hist, nb, missing_bin, sum_g, sum_h, count = _random_node(seed, integer_g=True)
    params = _params(criterion, min_samples_leaf=5)
    feats = np.arange(hist.shape[0], dtype=np.int32)
    ref_gain, *_ = _find_best_split_reference(hist, nb, missing_bin, sum_g, sum_h, count, params)
    info = find_node_split(hist, feats, nb, missing_bin, sum_g, sum_h, count, params)
    if not ref_gain > 0:
        assert info is None
        return
    assert info.gain == pytest.approx(ref_gain, rel=1e-9)
    # whichever of the tied candidates was chosen, it really has the best gain
    recomputed = _brute_gain(
        hist,
        info.feature_idx,
        info.bin_idx,
        info.missing_go_to_left and hist[info.feature_idx, missing_bin, 2] > 0,
        missing_bin,
        sum_g,
        sum_h,
        count,
        params,
    )
    assert recomputed == pytest.approx(ref_gain, rel=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.usefixtures("split_path")
def test_feature_subset(seed):
    hist, nb, missing_bin, sum_g, sum_h, count = _random_node(seed)
    params = _params()
    feats = np.array([1, 2, 4], dtype=np.int32)
    ref_gain, ref_f, ref_b, _ = _find_best_split_reference(
        hist[feats], nb[feats], missing_bin, sum_g, sum_h, count, params
    )
    # garbage in the unselected features must be ignored
    poisoned = hist.copy()
    poisoned[[0, 3, 5]] = np.nan
    info = find_node_split(poisoned, feats, nb, missing_bin, sum_g, sum_h, count, params)
    if not ref_gain > 0:
        assert info is None
        return
    assert info.feature_idx == feats[ref_f]
    assert info.bin_idx == ref_b
    assert info.gain == pytest.approx(ref_gain, rel=1e-9)


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_split_search_independent_of_thread_count(seed):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs NUMBA_NUM_THREADS >= 2")
    hist, nb, missing_bin, sum_g, sum_h, count = _random_node(seed, n_features=11)
    feats = np.arange(hist.shape[0], dtype=np.int32)
    results = []
    for n_threads in (1, 2):
        with threads(n_threads):
            results.append(
                find_node_split(hist, feats, nb, missing_bin, sum_g, sum_h, count, _params())
            )
    assert results[0] == results[1]


# ---------------------------------------------------------------- split_indices


def _check_split_indices(rng, n_samples, start, stop, bin_idx, missing_left, n_threads):
    missing_bin = 31
    X_binned = np.asfortranarray(rng.integers(0, 20, size=(n_samples, 3)).astype(np.uint8))
    X_binned[rng.random(n_samples) < 0.1, 1] = missing_bin
    partition = rng.permutation(n_samples).astype(np.int32)
    original = partition.copy()
    buffer = np.empty(n_samples, dtype=np.int32)

    n_left = split_indices(
        partition,
        start,
        stop,
        X_binned,
        1,
        bin_idx,
        missing_left,
        missing_bin,
        buffer,
        n_threads,
    )
    rows = original[start:stop]
    b = X_binned[rows, 1]
    go_left = np.where(b == missing_bin, missing_left, b <= bin_idx)
    assert n_left == int(go_left.sum())
    # stable: the order inside each child is the parent's (a boolean-mask partition)
    np.testing.assert_array_equal(
        partition[start:stop], np.concatenate([rows[go_left], rows[~go_left]])
    )
    # outside the node nothing moved
    np.testing.assert_array_equal(partition[:start], original[:start])
    np.testing.assert_array_equal(partition[stop:], original[stop:])


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize("missing_left", [False, True])
@pytest.mark.parametrize(
    ("n_samples", "start", "stop", "n_threads"),
    [
        (10, 0, 10, 1),
        (50, 7, 31, 2),
        (100, 40, 40, 2),  # empty node
        (1000, 3, 997, 2),
        (40_000, 0, 40_000, 2),  # > 2 * 16384: two parallel chunks
        (40_000, 1234, 39_001, 2),
        (70_000, 5, 69_999, 4),  # four chunks (more chunks than threads is fine)
        (70_000, 0, 70_000, 1),
    ],
)
@pytest.mark.usefixtures("split_path")
def test_split_indices_is_stable_mask_partition(
    seed, missing_left, n_samples, start, stop, n_threads
):
    rng = np.random.default_rng(seed)
    for bin_idx in (0, 9, 19, 30):  # 19 and 30: every non-missing row goes left
        _check_split_indices(rng, n_samples, start, stop, bin_idx, missing_left, n_threads)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_split_indices_chunk_counts_agree(n_threads):
    rng = np.random.default_rng(7)
    n = 50_000
    X_binned = np.asfortranarray(rng.integers(0, 5, size=(n, 1)).astype(np.uint8))
    part = rng.permutation(n).astype(np.int32)
    results = []
    for nt in (1, n_threads, 3):
        p = part.copy()
        k = split_indices(p, 0, n, X_binned, 0, 2, True, 255, np.empty(n, np.int32), nt)
        results.append((k, p))
    for k, p in results[1:]:
        assert k == results[0][0]
        np.testing.assert_array_equal(p, results[0][1])


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("criterion", ["newton", "se"])
def test_wide_histogram_uses_parallel_path_and_matches_reference(seed, criterion, monkeypatch):
    """40 features x 256 bins, above the serial threshold (SERIAL_SPLIT_WORK; set to
    its former 8192 here: the real one, 262144, would need ~1000 features for the
    brute-force reference)."""
    monkeypatch.setattr(splitting, "SERIAL_SPLIT_WORK", 8_192)
    hist, nb, missing_bin, sum_g, sum_h, count = _random_node(
        seed, n=3000, n_features=40, max_bins=255
    )
    assert hist.shape[0] * hist.shape[1] >= splitting.SERIAL_SPLIT_WORK
    params = _params(criterion, min_samples_leaf=10)
    feats = np.arange(hist.shape[0], dtype=np.int32)
    ref_gain, ref_f, ref_b, ref_ml = _find_best_split_reference(
        hist, nb, missing_bin, sum_g, sum_h, count, params
    )
    info = find_node_split(hist, feats, nb, missing_bin, sum_g, sum_h, count, params)
    assert info.gain == pytest.approx(ref_gain, rel=1e-9)
    assert (info.feature_idx, info.bin_idx) == (ref_f, ref_b)
    if hist[ref_f, missing_bin, 2] > 0:
        assert info.missing_go_to_left == ref_ml


def test_serial_and_parallel_split_search_identical(monkeypatch):
    hist, nb, missing_bin, sum_g, sum_h, count = _random_node(0, n_features=9)
    feats = np.array([0, 2, 3, 5, 8], dtype=np.int32)
    res = []
    for threshold in (2**62, 0):
        monkeypatch.setattr(splitting, "SERIAL_SPLIT_WORK", threshold)
        for crit in ("newton", "se", "ole"):
            res.append(
                find_node_split(hist, feats, nb, missing_bin, sum_g, sum_h, count, _params(crit))
            )
    assert res[:3] == res[3:]

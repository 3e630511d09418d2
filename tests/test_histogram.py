"""Tests for ltrboost.histogram: root, brute and subtraction kernels vs reference."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ltrboost.histogram as histogram
from ltrboost._config import N_HIST_STATS
from ltrboost._numba import _resolve_n_threads as threads_for
from ltrboost._numba import num_threads, threads
from ltrboost.histogram import (
    HistogramPool,
    _build_histogram_reference,
    _gather,
    build_histogram,
    build_histogram_root,
    reduce_histograms,
    subtract_histograms,
)

HIST_GRAD, HIST_HESS, HIST_COUNT = 0, 1, 2  # the last axis of a histogram

SEEDS = [0, 1, 2, 3]


@pytest.fixture(params=["serial", "parallel"])
def kernel_path(request, monkeypatch):
    """Run a test through the serial bodies and through the parallel drivers (the
    wrappers pick one by size; the threshold is forced here)."""
    threshold = 2**62 if request.param == "serial" else 0
    monkeypatch.setattr(histogram, "PARALLEL_MIN_WORK", threshold)
    monkeypatch.setattr(histogram, "SERIAL_SUBTRACT_WORK", threshold)
    return request.param


@pytest.fixture(params=["columns", "rows"])
def layout(request, monkeypatch):
    """Build node histograms from the column-major bins and from the row-major copy
    (the grower's path for sparse nodes, which builds unselected features too)."""
    monkeypatch.setattr(sys.modules[__name__], "_LAYOUT", request.param)
    return request.param


_LAYOUT = "columns"

# Tests of the kernels run on both paths and, where they build node histograms with
# _kernel_brute, from both layouts; tests of code neither fixture affects run once.
BOTH_PATHS = pytest.mark.usefixtures("kernel_path")
BOTH_PATHS_AND_LAYOUTS = pytest.mark.usefixtures("kernel_path", "layout")


def _subtract_histograms(parent_inout, sibling, feature_indices):
    subtract_histograms(parent_inout, sibling, feature_indices)


def _kernel_root(X_binned, g, h, n_bins, features=None):
    if features is None:
        features = np.arange(X_binned.shape[1], dtype=np.int32)
    out = np.full((X_binned.shape[1], n_bins, N_HIST_STATS), np.nan)
    build_histogram_root(X_binned, g, h, features, out)
    return out


def _kernel_brute(X_binned, rows, g, h, n_bins, features=None):
    if features is None:
        features = np.arange(X_binned.shape[1], dtype=np.int32)
    # scratch buffers longer than the node, as the grower passes them
    og = np.full(rows.shape[0] + 5, np.nan, dtype=np.float32)
    oh = np.full(rows.shape[0] + 5, np.nan, dtype=np.float32)
    out = np.full((X_binned.shape[1], n_bins, N_HIST_STATS), np.nan)
    X_rows = np.ascontiguousarray(X_binned) if _LAYOUT == "rows" else None
    og_used, oh_used = build_histogram(X_binned, rows, g, h, features, og, oh, out, X_rows=X_rows)
    np.testing.assert_array_equal(og_used, g[rows])
    np.testing.assert_array_equal(oh_used, h[rows])
    return out


def _random_problem(seed, n_samples=2000, n_features=5, n_bins=17):
    rng = np.random.default_rng(seed)
    X_binned = np.asfortranarray(
        rng.integers(0, n_bins, size=(n_samples, n_features)).astype(np.uint8)
    )
    X_binned[:, 1] = 3  # constant column: every row in one bin
    X_binned[: n_samples // 3, 2] = n_bins - 1  # many rows in the (missing) last bin
    g = rng.normal(size=n_samples).astype(np.float32)
    h = rng.uniform(0.1, 2.0, size=n_samples).astype(np.float32)
    h[rng.random(n_samples) < 0.1] = 0.0
    return rng, X_binned, g, h


# ---------------------------------------------------------------- hand case


def _hand_case():
    X_binned = np.asfortranarray(np.array([[0, 2], [1, 2], [0, 0], [2, 1], [0, 2]], dtype=np.uint8))
    g = np.array([1.0, -2.0, 0.5, 3.0, -1.0], dtype=np.float32)
    h = np.array([1.0, 2.0, 0.5, 1.5, 3.0], dtype=np.float32)
    rows = np.array([0, 1, 4], dtype=np.int32)
    # feature 0 over rows {0,1,4}: bin0 <- rows 0,4 ; bin1 <- row 1 ; bin2 empty
    # feature 1 over rows {0,1,4}: all in bin 2
    expected = np.zeros((2, 3, 3))
    expected[0, 0] = [0.0, 4.0, 2]
    expected[0, 1] = [-2.0, 2.0, 1]
    expected[1, 2] = [-2.0, 6.0, 3]
    return X_binned, g, h, rows, expected


@BOTH_PATHS_AND_LAYOUTS
@pytest.mark.parametrize("impl", ["reference", "kernel"])
def test_hand_case(impl):
    X_binned, g, h, rows, expected = _hand_case()
    if impl == "reference":
        got = _build_histogram_reference(X_binned, rows, g, h, 3)
    else:
        got = _kernel_brute(X_binned, rows, g, h, 3)
    np.testing.assert_array_equal(got, expected)


@BOTH_PATHS
@pytest.mark.parametrize("impl", ["reference", "kernel"])
def test_hand_case_root(impl):
    X_binned, g, h, _, _ = _hand_case()
    expected = np.zeros((2, 3, 3))
    expected[0, 0] = [0.5, 4.5, 3]
    expected[0, 1] = [-2.0, 2.0, 1]
    expected[0, 2] = [3.0, 1.5, 1]
    expected[1, 0] = [0.5, 0.5, 1]
    expected[1, 1] = [3.0, 1.5, 1]
    expected[1, 2] = [-2.0, 6.0, 3]
    if impl == "reference":
        got = _build_histogram_reference(X_binned, np.arange(5), g, h, 3)
    else:
        got = _kernel_root(X_binned, g, h, 3)
    np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------- kernel vs reference


@BOTH_PATHS
@pytest.mark.parametrize("seed", SEEDS)
def test_root_matches_reference(seed):
    _, X_binned, g, h = _random_problem(seed)
    n_bins = 17
    ref = _build_histogram_reference(X_binned, np.arange(X_binned.shape[0]), g, h, n_bins)
    got = _kernel_root(X_binned, g, h, n_bins)
    # same float64 additions in the same row order -> exact
    np.testing.assert_array_equal(got, ref)


@BOTH_PATHS_AND_LAYOUTS
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_rows", [0, 1, 7, 1000])
def test_brute_matches_reference(seed, n_rows):
    rng, X_binned, g, h = _random_problem(seed)
    n_bins = 17
    rows = rng.choice(X_binned.shape[0], n_rows, replace=False).astype(np.int32)
    ref = _build_histogram_reference(X_binned, rows, g, h, n_bins)
    got = _kernel_brute(X_binned, rows, g, h, n_bins)
    np.testing.assert_array_equal(got, ref)
    if n_rows == 0:  # an empty node: every bin zero, not stale
        assert not got.any()


@BOTH_PATHS_AND_LAYOUTS
@pytest.mark.parametrize("seed", SEEDS)
def test_brute_is_permutation_invariant(seed):
    rng, X_binned, g, h = _random_problem(seed)
    rows = rng.choice(X_binned.shape[0], 600, replace=False).astype(np.int32)
    a = _kernel_brute(X_binned, rows, g, h, 17)
    b = _kernel_brute(X_binned, rng.permutation(rows), g, h, 17)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(a[..., HIST_COUNT], b[..., HIST_COUNT])


def test_gather():
    rng = np.random.default_rng(0)
    g = rng.normal(size=100).astype(np.float32)
    h = rng.normal(size=100).astype(np.float32)
    rows = rng.choice(100, 40, replace=False).astype(np.int32)
    og = np.empty(40, dtype=np.float32)
    oh = np.empty(40, dtype=np.float32)
    _gather(rows, g, h, og, oh)
    np.testing.assert_array_equal(og, g[rows])
    np.testing.assert_array_equal(oh, h[rows])


# ---------------------------------------------------------------- invariants


@BOTH_PATHS_AND_LAYOUTS
@pytest.mark.parametrize("seed", SEEDS)
def test_subtraction_equals_brute_force_of_sibling(seed):
    rng, X_binned, g, h = _random_problem(seed)
    n_bins = 17
    n = X_binned.shape[0]
    parent_rows = rng.choice(n, 1500, replace=False).astype(np.int32)
    go_left = rng.random(parent_rows.shape[0]) < 0.3
    left, right = parent_rows[go_left], parent_rows[~go_left]
    feats = np.arange(X_binned.shape[1], dtype=np.int32)

    parent = _kernel_brute(X_binned, parent_rows, g, h, n_bins)
    small = _kernel_brute(X_binned, left, g, h, n_bins)
    _subtract_histograms(parent, small, feats)  # parent buffer now holds the sibling
    brute_right = _build_histogram_reference(X_binned, right, g, h, n_bins)
    np.testing.assert_allclose(parent, brute_right, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(parent[..., HIST_COUNT], brute_right[..., HIST_COUNT])


@BOTH_PATHS_AND_LAYOUTS
@pytest.mark.parametrize("seed", SEEDS)
def test_subtraction_from_root_histogram(seed):
    _, X_binned, g, h = _random_problem(seed)
    n = X_binned.shape[0]
    mask = X_binned[:, 0] <= 5
    feats = np.arange(X_binned.shape[1], dtype=np.int32)
    root = _kernel_root(X_binned, g, h, 17)
    left = _kernel_brute(X_binned, np.flatnonzero(mask).astype(np.int32), g, h, 17)
    _subtract_histograms(root, left, feats)
    brute = _build_histogram_reference(X_binned, np.flatnonzero(~mask), g, h, 17)
    np.testing.assert_allclose(root, brute, rtol=1e-9, atol=1e-9)
    # the sibling of an empty child is the parent itself
    empty = _kernel_brute(X_binned, np.zeros(0, dtype=np.int32), g, h, 17)
    full = _kernel_root(X_binned, g, h, 17)
    expected = full.copy()
    _subtract_histograms(full, empty, feats)
    np.testing.assert_array_equal(full, expected)
    assert n == X_binned.shape[0]


@BOTH_PATHS_AND_LAYOUTS
@pytest.mark.parametrize("seed", SEEDS)
def test_sum_over_bins_equals_node_totals(seed):
    rng, X_binned, g, h = _random_problem(seed)
    rows = rng.choice(X_binned.shape[0], 777, replace=False).astype(np.int32)
    hist = _kernel_brute(X_binned, rows, g, h, 17)
    G = np.sum(g[rows], dtype=np.float64)
    H = np.sum(h[rows], dtype=np.float64)
    for f in range(X_binned.shape[1]):
        np.testing.assert_allclose(hist[f, :, HIST_GRAD].sum(), G, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(hist[f, :, HIST_HESS].sum(), H, rtol=1e-10)
        assert hist[f, :, HIST_COUNT].sum() == rows.shape[0]


@BOTH_PATHS_AND_LAYOUTS
@pytest.mark.parametrize("seed", SEEDS)
def test_selected_features_only(seed):
    rng, X_binned, g, h = _random_problem(seed)
    n_bins = 17
    feats = np.array([1, 3], dtype=np.int32)
    others = [0, 2, 4]
    rows = rng.choice(X_binned.shape[0], 500, replace=False).astype(np.int32)
    ref = _build_histogram_reference(X_binned, rows, g, h, n_bins)

    brute = _kernel_brute(X_binned, rows, g, h, n_bins, feats)
    np.testing.assert_allclose(brute[feats], ref[feats], rtol=1e-12)
    if _LAYOUT == "rows":  # the row-wise pass builds every feature
        np.testing.assert_allclose(brute[others], ref[others], rtol=1e-12)
    else:
        assert np.isnan(brute[others]).all()  # untouched

    root = _kernel_root(X_binned, g, h, n_bins, feats)
    ref_root = _build_histogram_reference(X_binned, np.arange(X_binned.shape[0]), g, h, n_bins)
    np.testing.assert_array_equal(root[feats], ref_root[feats])
    assert np.isnan(root[others]).all()

    sentinel = np.full_like(ref_root, 7.0)
    sentinel[feats] = ref_root[feats]
    _subtract_histograms(sentinel, ref, feats)
    assert (sentinel[others] == 7.0).all()
    np.testing.assert_allclose(sentinel[feats], ref_root[feats] - ref[feats])


def _n_threads_options():
    max_threads = threads_for(None)  # the CPUs this process may use
    return [1, 2] if max_threads >= 2 else [1]


@BOTH_PATHS_AND_LAYOUTS
@pytest.mark.parametrize("seed", SEEDS[:2])
def test_independent_of_thread_count(seed):
    if len(_n_threads_options()) < 2:
        pytest.skip("needs NUMBA_NUM_THREADS >= 2")
    rng, X_binned, g, h = _random_problem(seed, n_samples=5000, n_features=9)
    rows = rng.choice(X_binned.shape[0], 3000, replace=False).astype(np.int32)
    feats = np.arange(9, dtype=np.int32)
    results = []
    for n_threads in _n_threads_options():
        with threads(n_threads):
            assert num_threads() == n_threads
            root = _kernel_root(X_binned, g, h, 17)
            brute = _kernel_brute(X_binned, rows, g, h, 17)
            sub = root.copy()
            _subtract_histograms(sub, brute, feats)
            results.append((root, brute, sub))
    for a, b in zip(results[0], results[1], strict=True):
        np.testing.assert_array_equal(a, b)


@BOTH_PATHS
@pytest.mark.parametrize("n_node", [0, 1, 9, 40, 3000])
@pytest.mark.parametrize("n_features", [3, 4, 13])
def test_row_major_equals_column_major(n_node, n_features):
    """The row-wise kernel (any feature blocking, with prefetching) gives the column
    kernel's histogram up to summation order."""
    rng, X_binned, g, h = _random_problem(5, n_samples=4000, n_features=n_features)
    rows = np.sort(rng.choice(4000, n_node, replace=False)).astype(np.int32)
    ref = _build_histogram_reference(X_binned, rows, g, h, 17)
    feats = np.arange(n_features, dtype=np.int32)
    og = np.empty(4000, dtype=np.float32)
    oh = np.empty(4000, dtype=np.float32)
    out = np.full_like(ref, np.nan)
    X_rows = np.ascontiguousarray(X_binned)
    build_histogram(X_binned, rows, g, h, feats, og, oh, out, X_rows=X_rows)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-9)
    og_, oh_ = og[:n_node], oh[:n_node]
    for block in (1, 2, 5, 64):
        out2 = np.full_like(ref, np.nan)
        histogram._build_histogram_rows(np.ascontiguousarray(X_binned), rows, og_, oh_, block, out2)
        np.testing.assert_array_equal(out2, out)


def test_use_row_major_density_rule():
    d = histogram.ROW_MAJOR_MAX_DENSITY
    assert histogram.use_row_major(1000, 1000 * d)
    assert not histogram.use_row_major(1001, 1000 * d)


def test_prefetch_is_a_no_op_on_results():
    from ltrboost._numba import kernel, prefetch

    @kernel
    def total(a, idx):
        s = 0.0
        for i in range(idx.shape[0]):
            prefetch(a, idx[(i + 3) % idx.shape[0]])
            s += a[idx[i]]
        return s

    a = np.arange(100, dtype=np.float64)
    idx = np.array([5, 99, 0, 42], dtype=np.int64)
    assert total(a, idx) == 146.0
    assert total(a[::3], idx[:2].astype(np.int32) // 3) == a[::3][[1, 33]].sum()


def test_add_gh1_is_three_scalar_adds_bit_for_bit():
    """The vector add of the histogram kernels gives the scalar sums exactly (every
    lane its own IEEE add, float32 inputs widened as the scalar code does), writes
    only its own four lanes and adds 0.0 to the padding lane."""
    from ltrboost._numba import add_gh1, kernel

    @kernel
    def vector(sub, t, b, g, h):
        for i in range(g.shape[0]):
            add_gh1(sub, t[i], b[i], g[i], h[i])

    @kernel
    def scalar(sub, t, b, g, h):
        for i in range(g.shape[0]):
            sub[t[i], b[i], 0] += g[i]
            sub[t[i], b[i], 1] += h[i]
            sub[t[i], b[i], 2] += 1.0
            sub[t[i], b[i], 3] += 0.0

    rng = np.random.default_rng(7)
    n = 5000
    t = rng.integers(0, 4, n).astype(np.int64)
    b = rng.integers(0, 6, n).astype(np.uint8)
    for dtype in (np.float32, np.float64):
        g = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(dtype)
        h = rng.random(n).astype(dtype)
        g[:3] = [np.inf, -np.inf, 0.0]
        g[3] = np.nan
        for init in (0.0, -0.0):
            a1 = np.full((4, 8, 4), init)
            a2 = a1.copy()
            vector(a1, t, b, g, h)
            scalar(a2, t, b, g, h)
            np.testing.assert_array_equal(a1, a2)
            assert (np.signbit(a1) == np.signbit(a2)).all()
            untouched = np.ones((4, 8), dtype=bool)
            untouched[t, b] = False
            assert (a1[untouched] == init).all()


def test_over_rows_blocks_taken_in_turn_cover_every_row_once():
    from ltrboost._numba import over_rows

    for n_rows, per_thread, align in ((1, 4, 1), (7, 4, 1), (136, 4, 1), (1000, 3, 8)):
        seen = np.zeros(n_rows, dtype=np.int64)
        starts = []

        def visit(r0, r1, seen=seen, starts=starts):
            seen[r0:r1] += 1
            starts.append(r0)

        with threads(2):
            over_rows(visit, n_rows, min_rows_per_thread=1, align=align,
                      blocks_per_thread=per_thread)  # fmt: skip
        assert (seen == 1).all()
        assert all(s % align == 0 for s in starts)


def test_root_histogram_same_with_balanced_blocks(monkeypatch):
    """Feature blocks taken in turn by the threads (large histograms) give the
    histogram of one block per thread and of the serial kernel, bit for bit."""
    rng = np.random.default_rng(3)
    n, f = 40_000, 150
    X_binned = np.asfortranarray(rng.integers(0, 40, (n, f)).astype(np.uint8))
    g = rng.standard_normal(n).astype(np.float32)
    h = rng.random(n).astype(np.float32)
    feats = np.arange(f, dtype=np.int32)
    out = {}
    for per_thread, min_work in ((1, 0), (4, 0), (4, 10**12)):
        monkeypatch.setattr(histogram, "HISTOGRAM_BLOCKS_PER_THREAD", per_thread)
        monkeypatch.setattr(histogram, "HISTOGRAM_BALANCE_MIN_WORK", min_work)
        hist = np.zeros((f, 41, 3))
        with threads(2):
            histogram.build_histogram_root(X_binned, g, h, feats, hist)
        out[(per_thread, min_work)] = hist
    serial = np.zeros((f, 41, 3))
    histogram._histogram_body(
        X_binned, histogram._NO_ROWS, g, h, feats, 0, f, serial, n, False,
        histogram.feature_bins(serial, None),
    )  # fmt: skip
    for hist in out.values():
        np.testing.assert_array_equal(hist, serial)


def test_column_kernel_equals_one_feature_at_a_time_scalar_sums():
    """Two features a pass with vector adds (``_histogram_body``) gives, bit for bit,
    the sums of the plain per-feature loop with four round-robin sub-histograms and
    scalar adds (the kernel's definition), for odd and even feature counts, feature
    subsets in any order, the root and indexed rows, and leaves other bins alone."""
    from ltrboost._numba import kernel

    @kernel
    def scalar(X, rows, og, oh, feats, out, n, indexed, nbins):
        last = out.shape[1] - 1
        for k in range(feats.shape[0]):
            f = feats[k]
            nb = min(nbins[f], last)
            sub = np.zeros((4, out.shape[1], 3))
            m = n - (n % 4)
            for i in range(n):
                t = i % 4 if i < m else 0
                b = X[rows[i], f] if indexed else X[i, f]
                sub[t, b, 0] += og[i]
                sub[t, b, 1] += oh[i]
                sub[t, b, 2] += 1.0
            for j in range(nb + 1):
                b = j if j < nb else last
                for s in range(3):
                    out[f, b, s] = (sub[0, b, s] + sub[1, b, s]) + (sub[2, b, s] + sub[3, b, s])

    rng = np.random.default_rng(11)
    n_rows, n_feat, n_bins = 3001, 9, 17
    X = np.asfortranarray(rng.integers(0, n_bins - 1, (n_rows, n_feat)).astype(np.uint8))
    X[rng.random((n_rows, n_feat)) < 0.1] = n_bins - 1  # missing bin
    nbins = rng.integers(3, n_bins, n_feat).astype(np.int32)
    X = np.asfortranarray(np.where(X < nbins, X, n_bins - 1).astype(np.uint8))
    # magnitudes 1e-8..1e8: float64 sums of these float32 values are inexact, so a
    # change of summation order shows
    g = (rng.standard_normal(n_rows) * 10.0 ** rng.uniform(-8, 8, n_rows)).astype(np.float32)
    h = (rng.random(n_rows) * 10.0 ** rng.uniform(-8, 8, n_rows)).astype(np.float32)
    for feats in ([0, 1, 2, 3, 4, 5, 6, 7, 8], [8, 3, 5], [4], [7, 2], [1, 0, 6, 2]):
        fi = np.asarray(feats, dtype=np.int32)
        for indexed in (False, True):
            if indexed:
                rows = np.sort(rng.choice(n_rows, 1234, replace=False)).astype(np.int32)
                og, oh, n = g[rows], h[rows], rows.size
            else:
                rows, og, oh, n = histogram._NO_ROWS, g, h, n_rows
            got = np.full((n_feat, n_bins, 3), 7.0)
            want = got.copy()
            histogram._histogram_body(X, rows, og, oh, fi, 0, fi.size, got, n, indexed, nbins)
            scalar(X, rows, og, oh, fi, want, n, indexed, nbins)
            np.testing.assert_array_equal(got, want)


def test_threads_context_manager_restores():
    before = num_threads()
    with threads(1):
        assert num_threads() == 1
    assert num_threads() == before


# ---------------------------------------------------------------- pool / reduce


def test_pool_reuses_buffers():
    pool = HistogramPool(4, 9)
    a = pool.get()
    assert a.shape == (4, 9, N_HIST_STATS)
    assert a.dtype == np.float64
    pool.release(a)
    pool.release(None)
    assert pool.get() is a
    assert pool.get() is not a


@pytest.mark.parametrize("seed", SEEDS)
def test_reduce_shards_equals_whole(seed):
    rng, X_binned, g, h = _random_problem(seed)
    rows = rng.permutation(X_binned.shape[0]).astype(np.int32)
    shards = np.array_split(rows, 3)
    parts = [_kernel_brute(X_binned, s, g, h, 17) for s in shards]
    before = [p.copy() for p in parts]
    total = reduce_histograms(parts)
    for p, b in zip(parts, before, strict=True):  # inputs are not modified
        np.testing.assert_array_equal(p, b)
    whole = _build_histogram_reference(X_binned, rows, g, h, 17)
    np.testing.assert_allclose(total, whole, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(total[..., HIST_COUNT], whole[..., HIST_COUNT])


@BOTH_PATHS_AND_LAYOUTS
def test_large_node_paths_agree_with_reference():
    """A node above the real size threshold (PARALLEL_MIN_WORK rows), and many features
    x bins for the subtraction, under both forced paths."""
    rng = np.random.default_rng(5)
    n, n_features, n_bins = 100_000 + 4321, 3, 256
    X_binned = np.asfortranarray(rng.integers(0, n_bins, size=(n, n_features)).astype(np.uint8))
    g = rng.normal(size=n).astype(np.float32)
    h = rng.uniform(size=n).astype(np.float32)
    rows = np.sort(rng.choice(n, n - 17, replace=False)).astype(np.int32)
    ref = _build_histogram_reference(X_binned, rows, g, h, n_bins)
    np.testing.assert_array_equal(_kernel_brute(X_binned, rows, g, h, n_bins), ref)
    root_ref = _build_histogram_reference(X_binned, np.arange(n), g, h, n_bins)
    np.testing.assert_array_equal(_kernel_root(X_binned, g, h, n_bins), root_ref)
    wide = rng.normal(size=(120, n_bins, 3))
    small = rng.normal(size=(120, n_bins, 3))
    feats = np.arange(0, 120, 2, dtype=np.int32)
    expected = wide.copy()
    expected[feats] -= small[feats]
    subtract_histograms(wide, small, feats)
    np.testing.assert_array_equal(wide, expected)


# ---------------------------------------------------------------- per-feature bins


@BOTH_PATHS_AND_LAYOUTS
@pytest.mark.parametrize("seed", SEEDS)
def test_feature_bins_touch_only_each_features_bins(seed):
    """With ``n_bins_non_missing``, root, node and subtraction kernels write each
    feature's value bins and the missing (last) bin, equal to the reference there, and
    leave every other bin as it was (the split search never reads those)."""
    rng = np.random.default_rng(seed)
    n, n_bins = 3000, 40
    nbins = np.array([2, 7, 1, 39, 12], dtype=np.int32)
    missing = n_bins - 1
    X_binned = np.empty((n, nbins.shape[0]), dtype=np.uint8, order="F")
    for f, nb in enumerate(nbins):
        X_binned[:, f] = rng.integers(0, nb, size=n)
        X_binned[rng.random(n) < 0.1, f] = missing
    g = rng.normal(size=n).astype(np.float32)
    h = rng.uniform(0.1, 2.0, size=n).astype(np.float32)
    feats = np.arange(nbins.shape[0], dtype=np.int32)
    own = np.zeros((nbins.shape[0], n_bins), dtype=bool)
    for f, nb in enumerate(nbins):
        own[f, :nb] = True
        own[f, missing] = True

    def check(out, ref):
        np.testing.assert_allclose(out[own], ref[own], rtol=1e-12, atol=1e-9)
        assert np.isnan(out[~own]).all()

    root = np.full((nbins.shape[0], n_bins, N_HIST_STATS), np.nan)
    build_histogram_root(X_binned, g, h, feats, root, nbins)
    check(root, _build_histogram_reference(X_binned, np.arange(n), g, h, n_bins))
    rows = np.sort(rng.choice(n, 80, replace=False)).astype(np.int32)
    node = np.full_like(root, np.nan)
    og = np.empty(n, dtype=np.float32)
    oh = np.empty(n, dtype=np.float32)
    X_rows = np.ascontiguousarray(X_binned) if _LAYOUT == "rows" else None
    build_histogram(
        X_binned, rows, g, h, feats, og, oh, node, X_rows=X_rows, n_bins_non_missing=nbins
    )
    check(node, _build_histogram_reference(X_binned, rows, g, h, n_bins))
    subtract_histograms(root, node, feats, nbins)
    rest = np.setdiff1d(np.arange(n), rows).astype(np.int32)
    check(root, _build_histogram_reference(X_binned, rest, g, h, n_bins))

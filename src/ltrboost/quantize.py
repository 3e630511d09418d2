"""Quantised gradients: integer histograms (LightGBM's ``use_quantized_grad``).

With ``quantized_gradients=k`` every tree's gradients and hessians are rounded to a few
integer levels before its histograms are built (Shi et al., "Quantized Training of
Gradient Boosting Decision Trees", NeurIPS 2022, the method behind LightGBM 4's
``use_quantized_grad`` / ``num_grad_quant_bins``):

* scales ``s_g = max |g| / (k/2)`` and ``s_h = max h / k`` over the tree's rows
  (a hessian that can be negative is scaled as the gradient is);
* each row's ``g / s_g`` and ``h / s_h`` are rounded *stochastically* (down, or up with
  probability the fractional part: unbiased, ``E[q] = g / s_g``), by a counter-based
  hash of ``(seed, row)``: the same whatever the thread count or the shards;
* a row adds ``(g_q + o_g, h_q + o_h, 1)`` (offsets ``o`` make every lane
  non-negative) packed into one 64-bit integer, 21 bits a lane, to its bin: one integer
  add per (row, feature) instead of three floating-point lanes, and the sub-histograms
  of two features fit in L1.  A lane holds a sum of at most ``2**21 - 1``, so rows are
  taken in chunks of ``(2**21 - 1) // top`` rows, ``top`` the largest value a row puts
  in a lane (524,287 rows at ``k = 4``), whose sums are added to 64-bit totals;
* a histogram's bins are then the float sums ``(sum g_q) s_g``, ``(sum h_q) s_h`` and
  the exact count, which the split search reads as it reads an exact histogram.

The splits are chosen from the quantised sums; the leaves' values come from the exact
gradients of their rows (LightGBM's ``quant_train_renew_leaf=True``), as do the stored
hessian sums (:meth:`ltrboost.grower.TreeGrower.grow`).  A leaf whose *exact* hessian
sum is under ``min_sum_hessian_in_leaf`` (a hessian rounded up a level lets one through
the split search) has its parent's split undone, so no leaf is under the limit, as in
exact training (LightGBM checks the rounded sums only).  The exact path is untouched:
with ``quantized_gradients=0`` (the default) models are byte-identical to before.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import (
    inline_kernel,
    kernel,
    over_rows,
    prefetch,
    vector_kernel,
)
from ltrboost._prefetch import COLUMN_PREFETCH_DISTANCE, prefetch_bins

# bits of each lane of a packed row: count (bits 0-20), hessian (21-41), gradient (42-62)
LANE_BITS = 21
LANE_MASK = (1 << LANE_BITS) - 1
# Rows below which quantising runs serially (a thread launch costs more).
_SERIAL_ROWS = 65_536


class QuantSpec(NamedTuple):
    """One tree's quantisation: ``x_q = floor(x * inv + u)``, stored as ``x_q + off``;
    a sum of ``m`` stored values ``S`` is the float sum ``(S - off * m) * scale``."""

    seed: int  # of the stochastic rounding (hash of (seed, global row))
    g_inv: float
    g_scale: float
    g_off: int
    h_inv: float
    h_scale: float
    h_off: int
    h_hi: int  # the largest hessian level (levels -h_off .. h_hi)
    chunk: int  # rows a lane can sum without overflow


def quant_spec(bins: int, seed: int, gradients, hessians) -> QuantSpec:
    """The scales of :func:`quantize` for ``bins`` levels over these rows."""
    return spec_from_stats(bins, seed, *quant_stats(gradients, hessians))


def quant_stats(gradients, hessians) -> tuple[float, float, float]:
    """``(max |g|, min h, max |h|)`` over the finite values of some rows: what the
    scales need, combined over shards by max, min, max (a shard without rows gives
    ``(0, inf, 0)``).  Reductions without temporaries where every value is finite (the
    usual case: 0.1 ms at 500k rows, where masks and copies took 1.9 ms a tree)."""
    g = np.asarray(gradients)
    h = np.asarray(hessians)
    if h.shape[0] == 0:
        return _finite_max_abs(g), math.inf, 0.0
    h_lo, h_hi = float(np.min(h)), float(np.max(h))
    if not (math.isfinite(h_lo) and math.isfinite(h_hi)):
        finite = h[np.isfinite(h)]
        if finite.shape[0] == 0:
            return _finite_max_abs(g), math.inf, 0.0
        h_lo, h_hi = float(np.min(finite)), float(np.max(finite))
    return _finite_max_abs(g), h_lo, max(abs(h_lo), abs(h_hi))


def spec_from_stats(bins: int, seed: int, g_max: float, h_min: float, h_max: float) -> QuantSpec:
    """The :class:`QuantSpec` of ``bins`` levels for rows of these extremes."""
    half = bins / 2.0
    g_scale = g_max / half if g_max > 0.0 else 1.0
    if h_min >= 0.0:  # the usual case: levels 0..bins
        h_scale, h_off = (h_max / bins if h_max > 0.0 else 1.0), 0
    else:  # a hessian can be negative (a custom objective): as the gradient
        h_scale, h_off = (h_max / half if h_max > 0.0 else 1.0), math.ceil(half)
    g_off = math.ceil(half)
    h_hi = bins if h_off == 0 else h_off
    top = max(2 * g_off, h_hi + h_off)  # the largest value a lane gets from a row
    return QuantSpec(
        seed=int(seed),
        g_inv=1.0 / g_scale,
        g_scale=g_scale,
        g_off=g_off,
        h_inv=1.0 / h_scale,
        h_scale=h_scale,
        h_off=h_off,
        h_hi=h_hi,
        chunk=LANE_MASK // top,
    )


# The last word of the rounding seeds (random_state, round, output, this): their streams
# are not random_strength's.
_QUANT_STREAM = 0x5155414E54  # "QUANT"


def quant_seed(random_state: int, iteration: int, output: int) -> int:
    """The rounding seed of the tree of ``output`` in round ``iteration``."""
    from ltrboost.splitting import _splitmix_chain

    return _splitmix_chain((int(random_state), int(iteration), int(output), _QUANT_STREAM))


def _finite_max_abs(x) -> float:
    """``max |x|`` over the finite values (0.0 when none): a NaN or inf gradient stops
    training after the tree, naming the round; the scale stays finite meanwhile."""
    if x.shape[0] == 0:
        return 0.0
    m = max(float(np.max(x)), -float(np.min(x)))
    if math.isfinite(m):
        return m
    a = np.abs(x[np.isfinite(x)])
    return float(np.max(a)) if a.shape[0] else 0.0


def quantize(gradients, hessians, spec: QuantSpec, row_start: int, out: NDArray[np.int64]):
    """``out[i]``: row ``i``'s packed ``(g_q + o_g, h_q + o_h, 1)`` (global row
    ``row_start + i`` seeds its rounding), on Python threads over blocks of rows."""
    n = out.shape[0]
    args = (gradients, hessians, out, row_start, *_spec_args(spec))
    if n < _SERIAL_ROWS:
        _quantize_body(*args, 0, n)
    else:
        over_rows(lambda r0, r1: _quantize_body(*args, r0, r1), n, min_rows_per_thread=_SERIAL_ROWS)


def _spec_args(spec: QuantSpec) -> tuple:
    seed = np.uint64(spec.seed % (1 << 64))
    return (seed, spec.g_inv, spec.g_off, spec.h_inv, spec.h_off, spec.h_hi)


# error_model="numpy": no division here; it lets LLVM keep the loop branch-free (with
# the clamps as selects: measured 4.0 -> 1.5 ms for 500k rows, one thread).
@vector_kernel
def _quantize_body(
    gradients, hessians, out, row_start, seed, g_inv, g_off, h_inv, h_off, h_hi, lo, hi
):
    # gradients, hessians: IN float32 (n,); out: OUT int64 (n,) packed rows: levels
    # -g_off .. g_off and -h_off .. h_hi, stored plus their offsets (never negative).
    # Row r's two uniforms are 24-bit slices of SplitMix64(r * golden ^ seed).  A NaN
    # (or a value past the top) is clamped to the bottom (top) level: the tree is refused
    # afterwards anyway, naming the round.
    scale24 = 1.0 / 16777216.0
    g_lo = float(-g_off)
    g_hi = float(g_off)
    h_lo = float(-h_off)
    h_top = float(h_hi)
    for i in range(lo, hi):
        x = (np.uint64(row_start + i) * np.uint64(0x9E3779B97F4A7C15)) ^ seed
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        w = x ^ (x >> np.uint64(31))
        u_g = np.float64(np.int64(w >> np.uint64(40))) * scale24
        u_h = np.float64(np.int64((w >> np.uint64(16)) & np.uint64(0xFFFFFF))) * scale24
        a = np.float64(gradients[i]) * g_inv + u_g
        b = np.float64(hessians[i]) * h_inv + u_h
        a = g_lo if not a >= g_lo else (g_hi if a > g_hi else a)
        b = h_lo if not b >= h_lo else (h_top if b > h_top else b)
        gq = np.int64(math.floor(a)) + g_off
        hq = np.int64(math.floor(b)) + h_off
        out[i] = (gq << 42) | (hq << 21) | 1


@kernel
def packed_sums(packed, rows, n, indexed):
    """``(S_g, S_h, count)``: the lane sums of rows ``0..n-1`` (or ``rows[:n]``) of
    ``packed`` as int64 (exact)."""
    sg = np.int64(0)
    sh = np.int64(0)
    for i in range(n):
        p = packed[rows[i]] if indexed else packed[i]
        sg += p >> 42
        sh += (p >> 21) & LANE_MASK
    return sg, sh, n


@kernel
def exact_row_sums(gradients, hessians, rows):
    """The float64 sums of ``gradients[rows]`` and ``hessians[rows]``, in row order."""
    g = 0.0
    h = 0.0
    for i in range(rows.shape[0]):
        r = rows[i]
        g += gradients[r]
        h += hessians[r]
    return g, h


def float_sums(spec: QuantSpec, sg: int, sh: int, count: int) -> tuple[float, float]:
    """The gradient and hessian sums of lane sums ``sg``, ``sh`` over ``count`` rows."""
    return (
        float(sg - spec.g_off * count) * spec.g_scale,
        float(sh - spec.h_off * count) * spec.h_scale,
    )


# --------------------------------------------------------------------- histograms
@inline_kernel
def _flush(sub, tot, nb):
    """Add the sub-histograms ``sub`` (shape ``(T, n_bins)``, packed) of bins
    ``0 .. nb-1`` and the last to the lane totals ``tot`` (``(n_bins, 3)`` int64), and
    zero them."""
    last = sub.shape[1] - 1
    for b in range(last + 1):
        if b >= nb and b != last:
            continue
        s = sub[0, b]
        sub[0, b] = 0
        for t in range(1, sub.shape[0]):
            s += sub[t, b]
            sub[t, b] = 0
        tot[b, 0] += s >> 42
        tot[b, 1] += (s >> 21) & LANE_MASK
        tot[b, 2] += s & LANE_MASK


@inline_kernel
def _write_feature(tot, h, nb, g_scale, g_off, h_scale, h_off):
    """``h``'s own bins (value bins ``0 .. nb-1`` and the missing, last, bin) from the
    lane totals ``tot``: ``((S_g - o_g m) s_g, (S_h - o_h m) s_h, m)``."""
    last = h.shape[0] - 1
    for b in range(last + 1):
        if b >= nb and b != last:
            continue
        m = tot[b, 2]
        h[b, 0] = np.float64(tot[b, 0] - g_off * m) * g_scale
        h[b, 1] = np.float64(tot[b, 1] - h_off * m) * h_scale
        h[b, 2] = np.float64(m)


@inline_kernel
def _accumulate_packed2(col_a, col_b, rows, packed, n, indexed, sub_a, sub_b):
    """Add rows ``0..n-1`` (or ``rows[:n]``) of ``packed`` to two features'
    sub-histograms, four rows in turn (as :func:`ltrboost.histogram._accumulate2`).
    The caller passes slices, so every index here counts from 0: a loop from a variable
    start keeps Numba's negative-index wrap-around on each load (measured 1.7x slower)."""
    m = n - (n % 4)
    for i in range(0, m, 4):
        if indexed and i + COLUMN_PREFETCH_DISTANCE + 4 < n:
            prefetch_bins(col_a, col_b, rows, i + COLUMN_PREFETCH_DISTANCE)
        for t in range(4):
            r = rows[i + t] if indexed else i + t
            p = packed[i + t]
            sub_a[t, col_a[r]] += p
            sub_b[t, col_b[r]] += p
    for i in range(m, n):
        r = rows[i] if indexed else i
        sub_a[0, col_a[r]] += packed[i]
        sub_b[0, col_b[r]] += packed[i]


@kernel
def quantized_histogram_body(
    X_binned, rows, packed, feature_indices, k_lo, k_hi, hist_out, n, indexed,
    n_bins_non_missing, chunk, g_scale, g_off, h_scale, h_off,
):  # fmt: skip
    """Column-wise histograms of features ``feature_indices[k_lo:k_hi]`` from packed
    rows: rows ``0..n-1`` (``indexed`` False, ``packed`` per row) or ``rows[:n]``
    (``packed`` gathered in that order).  Two features a pass, four interleaved
    sub-histograms each (as :func:`ltrboost.histogram._accumulate2`), ``chunk`` rows
    at a time into int64 lane totals; only each feature's own bins are written."""
    last = hist_out.shape[1] - 1
    sub_a = np.zeros((4, last + 1), dtype=np.int64)
    sub_b = np.zeros((4, last + 1), dtype=np.int64)
    tot_a = np.empty((last + 1, 3), dtype=np.int64)
    tot_b = np.empty((last + 1, 3), dtype=np.int64)
    for k in range(k_lo, k_hi, 2):
        fa = feature_indices[k]
        fb = feature_indices[k + 1] if k + 1 < k_hi else fa
        nb_a = min(n_bins_non_missing[fa], last)
        nb_b = min(n_bins_non_missing[fb], last)
        tot_a[:] = 0
        tot_b[:] = 0
        col_a = X_binned[:, fa]
        col_b = X_binned[:, fb]
        for c0 in range(0, n, chunk):
            c1 = min(n, c0 + chunk)
            if indexed:
                _accumulate_packed2(
                    col_a, col_b, rows[c0:c1], packed[c0:c1], c1 - c0, True, sub_a, sub_b
                )
            else:
                _accumulate_packed2(
                    col_a[c0:c1], col_b[c0:c1], rows, packed[c0:c1], c1 - c0, False, sub_a, sub_b
                )
            _flush(sub_a, tot_a, nb_a)
            _flush(sub_b, tot_b, nb_b)
        _write_feature(tot_a, hist_out[fa], nb_a, g_scale, g_off, h_scale, h_off)
        _write_feature(tot_b, hist_out[fb], nb_b, g_scale, g_off, h_scale, h_off)


@inline_kernel
def _accumulate_rows(X_rows, rows, packed, f_lo, acc, prefetch_distance):
    """Add ``packed[i]`` to the bin of every feature ``f_lo + j`` of row ``rows[i]``
    (``acc``: ``(features, n_bins)`` packed), prefetching the bins of the row
    ``prefetch_distance`` ahead.  Indices count from 0 (see
    :func:`_accumulate_packed2`)."""
    n = rows.shape[0]
    nf = acc.shape[0]
    for i in range(n):
        if i + prefetch_distance < n:
            ahead = X_rows[rows[i + prefetch_distance]]
            prefetch(ahead, f_lo)
            prefetch(ahead, f_lo + nf - 1)
        r = rows[i]
        p = packed[i]
        for j in range(nf):
            acc[j, X_rows[r, f_lo + j]] += p


@kernel
def quantized_histogram_rows_body(
    X_rows, rows, packed, f_lo, f_hi, hist_out, n_bins_non_missing, chunk,
    g_scale, g_off, h_scale, h_off, prefetch_distance,
):  # fmt: skip
    """Row-wise histograms of features ``f_lo .. f_hi-1`` over rows ``rows`` (packed
    gathered in that order) from the row-major bins ``X_rows``: one pass over the rows
    a chunk, every feature of a row at once (as
    :func:`ltrboost.histogram._histogram_rows_body`)."""
    n = rows.shape[0]
    last = hist_out.shape[1] - 1
    nf = f_hi - f_lo
    acc = np.zeros((nf, last + 1), dtype=np.int64)
    tot = np.zeros((nf, last + 1, 3), dtype=np.int64)
    for c0 in range(0, n, chunk):
        c1 = min(n, c0 + chunk)
        _accumulate_rows(X_rows, rows[c0:c1], packed[c0:c1], f_lo, acc, prefetch_distance)
        for j in range(nf):
            _flush(acc[j : j + 1], tot[j], min(n_bins_non_missing[f_lo + j], last))
    for j in range(nf):
        nb = min(n_bins_non_missing[f_lo + j], last)
        _write_feature(tot[j], hist_out[f_lo + j], nb, g_scale, g_off, h_scale, h_off)

"""Gradient/hessian histograms per feature: the histogram seam of the tree layer.

A histogram is a float64 array of shape ``(n_features, n_bins, 3)`` holding, per bin,
the sum of gradients (index 0), the sum of hessians (1) and the document count (2).
Feature ``f`` owns its value bins ``0 .. n_bins_non_missing[f]-1`` and the missing bin
(the last, ``n_bins - 1``); the kernels build, zero and subtract only those (the split
search reads no others), so a feature with a few values costs a few bins, not
``n_bins`` (issue 12: 2-10 valued features were paying for 256).  The bins between are
never written: zeros in the builder's pooled buffers.

The grower talks to a :class:`HistogramBuilder`, never to the kernels: it asks for the
root's histogram with its sums and count, for a node's histogram, for the larger
sibling by subtraction, for the split of a node's rows and (``"ole"``) for the node's
pair histograms.  A builder holds one or more *shards* of rows
(:class:`LocalHistograms`, the rows of this process); every statistic the grower sees
is the shards' partial results summed by :func:`reduce_histograms`, so counts and sums
are global whatever the sharding.  A distributed backend (Dask: one shard per worker)
and a single-machine one are two sets of shards behind the same builder; a test grows
the same tree from one shard and from two.

Named tricks (sklearn/LightGBM):

* **root**: all rows, no gather.
* **brute**: gradients of the node's rows are first gathered into ``ordered_gradients``
  (contiguous, so each feature's pass reads them sequentially), then every selected feature
  is scanned in parallel.
* **subtraction**: only the smaller child is built; the larger is ``parent - smaller``,
  computed in place in the parent's buffer.
* **rows**: a node holding at most 1/32 of the data is built from a row-major copy
  of the bins, all features of a row in one pass, prefetching rows ahead (its rows
  are far apart in every column: the column pass would miss the cache on each read).

:func:`reduce_histograms` is the single point where per-shard histograms are combined
(element-wise sum in a fixed shard order; one shard is returned as it is).

Pairs (``"ole"`` criterion, seed 000 eq. 13): a round's pairs are a
:class:`~ltrboost.pair_csr.PairCSR` (grouped by preferred document, 6 bytes a pair).  A
node's pairs are, for each of its rows, the first ``live`` pairs of the row's slice: a
split reorders each slice in place into [partner on the row's side | partner across]
and the crossing pairs drop out (8 bytes a row for the two counts; no per-pair
partition).  Its pair histograms bin each pair's ``rho`` by the larger and
the smaller bin of its two documents (see :func:`build_pair_histogram`).  They are built
exactly, in the order of the node's rows and their pairs (the models do not depend on
how the work is cut): a chunk of the node's pairs at a time, four features interleaved,
parallel over blocks of features.  A split counts the pairs that stay left, stay right
and cross (:meth:`LocalHistograms.split_rows`) and keeps the crossing ones until the
next split of a child, so the grower can use a subtraction
trick for pairs (``TreeGrower._split_pair_histograms``): the child with fewer pairs is
built, the other is parent - that child - the crossing pairs' histograms
(:meth:`LocalHistograms.crossing_pair_histogram`), when the crossing pairs are fewer
than the larger child's.  At large nodes a node's *pair-mass* histogram (per bin, the
``rho`` of the node's pairs by their preferred and by their other document,
:func:`build_pair_mass_histogram`: one pass over the rows, not over pairs x features)
bounds every feature's OLE gain, and the grower builds pair histograms only for the
features whose bound can beat the best exact gain (``TreeGrower._ole_split``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import INDEX_DTYPE, N_HIST_STATS, SUM_DTYPE
from ltrboost._numba import (
    add_gh1,
    inline_kernel,
    kernel,
    num_threads,
    over_rows,
    prefetch,
)
from ltrboost._prefetch import COLUMN_PREFETCH_DISTANCE, prefetch_bins
from ltrboost.pair_csr import PairCSR, pairs_to_csr
from ltrboost.quantize import (
    QuantSpec,
    exact_row_sums,
    float_sums,
    packed_sums,
    quantize,
    quantized_histogram_body,
    quantized_histogram_rows_body,
)
from ltrboost.splitting import SplitInfo, split_indices
from ltrboost.tree import add_leaf_values, predict_binned_tree


class HistogramPool:
    """Reusable histogram buffers (allocated once per training, not per node).

    New buffers are zeros: kernels given ``n_bins_non_missing`` write only each
    feature's own bins, so the bins beyond a feature's values stay zero in every buffer
    and a whole-array reduction (:func:`reduce_histograms`) sums zeros there.
    """

    def __init__(self, n_features: int, n_bins: int) -> None:
        self.shape = (n_features, n_bins, N_HIST_STATS)
        self._free: list[NDArray[np.float64]] = []

    def get(self) -> NDArray[np.float64]:
        if self._free:
            return self._free.pop()
        return np.zeros(self.shape, dtype=SUM_DTYPE)

    def release(self, hist: NDArray[np.float64] | None) -> None:
        if hist is not None:
            self._free.append(hist)


# Below this many (rows x features) element updates a kernel runs serially: a parallel
# launch costs more than the work.
PARALLEL_MIN_WORK = 100_000
# A subtraction is ~1 ns per feature x bin: below ~0.3 ms of it (thousands of
# features) handing blocks to Python threads costs more than it saves.
SERIAL_SUBTRACT_WORK = 262_144  # selected features x bins


def feature_bins(
    hist: NDArray[np.float64], n_bins_non_missing: NDArray[np.int32] | None
) -> NDArray[np.int32]:
    """Each feature's number of value bins for the kernels: ``n_bins_non_missing``
    itself, or (None) every bin but the last (the missing bin) for every feature."""
    if n_bins_non_missing is None:
        return np.full(hist.shape[0], hist.shape[1] - 1, dtype=np.int32)
    return n_bins_non_missing


def _column_histograms(X_binned, rows, og, oh, feature_indices, hist_out, n, indexed, nbins):
    """Histograms of ``feature_indices`` from the column-major bins (one body and one
    driver serve the root and nodes)."""
    _over_features(
        lambda k0, k1: _histogram_body(
            X_binned, rows, og, oh, feature_indices, k0, k1, hist_out, n, indexed, nbins
        ),
        feature_indices.shape[0],
        n,
    )


def _over_features(body, n_features: int, n: int) -> None:
    """``body(k0, k1)`` over the selected features ``0 .. n_features-1`` of a
    column-wise histogram of ``n`` rows: serial when small, else on Python threads over
    blocks of whole pairs of features (each feature's histogram is its own: the result
    does not depend on the split).  The exact and the quantised kernels' driver."""
    if n * n_features < PARALLEL_MIN_WORK:
        body(0, n_features)
        return
    over_rows(
        body,
        n_features,
        min_rows_per_thread=1,
        align=2,  # whole pairs of features (see _histogram_body)
        blocks_per_thread=(
            HISTOGRAM_BLOCKS_PER_THREAD if n * n_features >= HISTOGRAM_BALANCE_MIN_WORK else 1
        ),
    )


def _over_rows_features(body, n: int, n_features: int) -> None:
    """``body(f0, f1)`` over every feature of a row-wise histogram of ``n`` rows:
    serial when small, else on Python threads over blocks of features
    (:func:`_over_feature_blocks`).  The exact and the quantised kernels' driver."""
    if n * n_features < PARALLEL_MIN_WORK:
        body(0, n_features)
        return
    n_blocks = min(n_features, ROW_BLOCKS_PER_THREAD * num_threads())
    _over_feature_blocks(body, n_features, -(-n_features // n_blocks))


def _over_feature_blocks(body, n_features: int, block: int) -> None:
    """``body(f0, f1)`` on Python threads over blocks of features (starts multiples of
    ``block``), ``ROW_BLOCKS_PER_THREAD`` a thread taken in turn."""
    over_rows(
        body,
        n_features,
        min_rows_per_thread=1,
        align=block,
        blocks_per_thread=ROW_BLOCKS_PER_THREAD,  # the blocks of `block` features, in turn
    )


def _over_gathered_rows(body, n: int) -> None:
    """``body(r0, r1)`` over the rows ``0 .. n-1`` of a gather: serial when small, else
    on Python threads over blocks of rows."""
    if n < PARALLEL_MIN_WORK:
        body(0, n)
    else:
        over_rows(body, n, min_rows_per_thread=65536)


# Blocks of features per thread of a large column-wise histogram, taken in turn as the
# threads finish: features cost unequal time (how their rows spread over the bins), so
# halves of the features leave one thread waiting for the other.  Only above
# HISTOGRAM_BALANCE_MIN_WORK row x feature updates (~5 ms), where a block's Python
# call (~10-20 us) is noise.
HISTOGRAM_BLOCKS_PER_THREAD = 4
HISTOGRAM_BALANCE_MIN_WORK = 4_000_000


def build_histogram_root(
    X_binned, gradients, hessians, feature_indices, hist_out, n_bins_non_missing=None
):
    """Root histogram of all rows (no gather) for the selected features.

    ``n_bins_non_missing`` (int32 per feature, optional): the value bins of each
    feature; only those and the missing (last) bin are written, the others of
    ``hist_out`` are left as they are.  Default: every bin."""
    n = X_binned.shape[0]
    nbins = feature_bins(hist_out, n_bins_non_missing)
    _column_histograms(
        X_binned, _NO_ROWS, gradients, hessians, feature_indices, hist_out, n, False, nbins
    )


def build_histogram(
    X_binned,
    sample_indices,
    gradients,
    hessians,
    feature_indices,
    ordered_gradients,
    ordered_hessians,
    hist_out,
    X_rows=None,
    n_bins_non_missing=None,
):
    """Gather the node's gradients, then build its histogram (serial when small).

    ``n_bins_non_missing``: as in :func:`build_histogram_root`.

    ``X_rows``: a row-major (C-order) copy of ``X_binned``.  When given, every feature
    (not only ``feature_indices``) is built in one pass over the node's rows: worth it
    for nodes whose rows are sparse in the data (see :func:`use_row_major`), where each
    column read would fetch its own cache line.
    """
    n = sample_indices.shape[0]
    nbins = feature_bins(hist_out, n_bins_non_missing)
    og = ordered_gradients[:n]
    oh = ordered_hessians[:n]
    _gather(sample_indices, gradients, hessians, og, oh)
    if X_rows is not None:
        _over_rows_features(
            lambda f0, f1: _histogram_rows_body(
                X_rows, sample_indices, og, oh, f0, f1, hist_out, nbins
            ),
            n,
            X_rows.shape[1],
        )
    else:
        _column_histograms(
            X_binned, sample_indices, og, oh, feature_indices, hist_out, n, True, nbins
        )
    return og, oh


def build_quantized_histogram(
    X_binned, rows, packed, feature_indices, hist_out, n, indexed, spec: QuantSpec,
    X_rows=None, n_bins_non_missing=None,
):  # fmt: skip
    """Histogram from quantised rows (:mod:`ltrboost.quantize`): rows ``0..n-1`` with
    ``packed`` per row (``indexed`` False: the root), or ``rows[:n]`` with ``packed``
    gathered in their order.  ``X_rows`` as in :func:`build_histogram` (indexed only)."""
    nbins = feature_bins(hist_out, n_bins_non_missing)
    scales = (spec.g_scale, spec.g_off, spec.h_scale, spec.h_off)
    if X_rows is not None:
        node_rows = rows[:n]
        _over_rows_features(
            lambda f0, f1: quantized_histogram_rows_body(
                X_rows, node_rows, packed, f0, f1, hist_out, nbins, spec.chunk, *scales,
                ROW_PREFETCH_DISTANCE,
            ),
            n,
            X_rows.shape[1],
        )  # fmt: skip
    else:
        _over_features(
            lambda k0, k1: quantized_histogram_body(
                X_binned, rows, packed, feature_indices, k0, k1, hist_out, n, indexed, nbins,
                spec.chunk, *scales,
            ),
            feature_indices.shape[0],
            n,
        )  # fmt: skip


@kernel
def _gather_packed(sample_indices, packed, out):
    # A block's rows as slices, counted from 0 (as the histogram kernels'): a loop from
    # a variable start (``range(lo, hi)``) left Numba's negative-index wrap-around, a
    # compare and two selects, on both of its row accesses.
    for i in range(sample_indices.shape[0]):
        out[i] = packed[sample_indices[i]]


def gather_packed(sample_indices, packed, out) -> None:
    """``out[:n] = packed[sample_indices]`` (on threads over blocks of rows when large)."""
    _over_gathered_rows(
        lambda r0, r1: _gather_packed(sample_indices[r0:r1], packed, out[r0:r1]),
        sample_indices.shape[0],
    )


# A node is built from the row-major copy when at most one in this many rows of the
# data belongs to it: then its rows are far apart in a column (two rows rarely share a
# 64-byte line), so the column-wise pass pays about one cache miss per row and
# feature, while the row-wise pass fetches a row's bins for all its features in one or
# two lines.  Measured at 500k rows x 136 features (bench/README.md): row-wise is ~3x
# faster at 0.5-1% density, equal at ~5%, 1.3x slower at 20%.
ROW_MAJOR_MAX_DENSITY = 32
# Rows ahead whose bins the row-wise kernel prefetches.
ROW_PREFETCH_DISTANCE = 8
# Blocks of features per thread of a row-wise node histogram, taken in turn as the
# threads finish.  Each block passes over the node's rows again (a few more cache
# misses), but with 2 the first thread regularly waited for the second's last block:
# measured at 500k x 136, nodes of 2k-15k rows, 2 threads: 4 blocks a thread 0-8%
# faster than 2, 8 slower again; in training the wait fell from ~6-9 to ~3 ms a tree.
ROW_BLOCKS_PER_THREAD = 4


def use_row_major(n_node: int, n_samples: int) -> bool:
    """Whether a node of ``n_node`` rows out of ``n_samples`` is built row-wise."""
    return n_node * ROW_MAJOR_MAX_DENSITY <= n_samples


def subtract_histograms(parent_inout, sibling, feature_indices, n_bins_non_missing=None):
    """``parent_inout -= sibling`` on the selected features (serial when small); only
    each feature's value bins and missing bin when ``n_bins_non_missing`` is given
    (see :func:`build_histogram_root`)."""
    nbins = feature_bins(parent_inout, n_bins_non_missing)
    if feature_indices.shape[0] * parent_inout.shape[1] < SERIAL_SUBTRACT_WORK:
        _subtract_body(parent_inout, sibling, feature_indices, 0, feature_indices.shape[0], nbins)
    else:
        _subtract_histograms(parent_inout, sibling, feature_indices, nbins)


# Pairs a block of features passes over at a time in the pair-histogram kernel (whole
# rows: a chunk ends at the first row that reaches it): the chunk's pairs (6 bytes each)
# and its rows' bins stay in the core's cache while every feature of the thread's block
# passes over them.
PAIR_CHUNK = 4096


def build_pair_histogram(
    X_binned, rows, pairs, live, cross, feature_indices, missing_bin, out, n_pairs,
    crossing=False, X_rows=None, walked=None,
):  # fmt: skip
    """Pair histograms ``(P_max, P_min, Q)`` of a node's pairs (seed 000, eq. 13: the
    rho mass of the pairs wholly on one side of each threshold).

    The node's pairs are, for each of its rows ``d`` (``rows``, in order), the first
    ``live[d]`` pairs of ``d``'s slice of the :class:`~ltrboost.pair_csr.PairCSR`
    ``pairs`` (see :meth:`LocalHistograms.split_rows`); with ``crossing`` (``rows``: a
    split node's rows) they are the ``cross[d]`` pairs after those, the pairs the split
    sent across.  ``n_pairs``: how many there are.

    For every selected feature ``f`` and bin ``b``: ``out[f, b, 0]`` sums ``rho`` over
    the pairs whose larger bin is ``b``, ``out[f, b, 1]`` over those whose smaller bin is
    ``b``, ``out[f, b, 2]`` over those with exactly one document in the missing bin, by
    the other document's bin.  Each bin adds its pairs in the order of the rows and of
    each row's pairs, so the result is the same bit for bit whatever the threads
    (:func:`_pair_histogram_reference` is the plain NumPy definition).  The features walk
    the pairs where they lie, in the CSR (no gathered copy): a chunk of whole rows
    (:data:`PAIR_CHUNK` pairs) at a time, four features interleaved, each row's own bins
    read once.  Serial when small, else parallel over blocks of features (each block
    walks all the node's pairs; gathering them first cost as much as the passes of a
    branch-and-bound node's 8-feature calls).

    ``X_rows``: a row-major copy of the bins, given for nodes whose rows are sparse in
    the data (:func:`use_row_major`): there the column walk reads a cache line of every
    feature for each row, and the row-major walk (:func:`_pair_walk_rows`: a pair's
    two rows once for :data:`PAIR_ROW_FEATURES` features) was 2-3x faster on such
    nodes of 200k synthetic documents.  The same sums in the same order either way.

    ``walked``: the node's walked rows, starts and counts (:func:`walked_rows`) when the
    caller kept them from a previous call on the same node (its pairs unchanged).
    """
    n_sel = feature_indices.shape[0]
    if n_sel == 0:
        return
    if walked is None:
        walked = walked_rows(rows, pairs, live, cross, crossing)
    walk = (*walked, pairs.offset, pairs.rho)
    kernel = _pair_walk if X_rows is None else _pair_walk_rows
    X = X_binned if X_rows is None else X_rows
    if n_pairs * n_sel < PARALLEL_MIN_WORK or num_threads() == 1:
        kernel(X, *walk, feature_indices, 0, n_sel, missing_bin, PAIR_CHUNK, out)
        return
    if n_sel < 4:
        # fewer features than a walk of four: one or two a thread (at the 500k root,
        # one thread: a walk of one 24 ms, of four 57, two walks of one 44)
        block = 1
    else:
        n_blocks = min(-(-n_sel // 4), 2 * num_threads())
        block = 4 * -(-n_sel // (4 * n_blocks))  # multiples of 4: _pair_walk4
    over_rows(
        lambda k0, k1: kernel(X, *walk, feature_indices, k0, k1, missing_bin, PAIR_CHUNK, out),
        n_sel,
        min_rows_per_thread=1,
        align=block,
    )


def walked_rows(rows, pairs, live, cross, crossing=False):
    """The rows of ``rows`` with pairs to walk (see :func:`build_pair_histogram`), in
    order, with where their walked pairs start in the PairCSR ``pairs`` and how many
    there are."""
    return _walked_rows(rows, pairs.ptr, live, cross, bool(crossing))


# Features the row-major pair walk (_pair_walk_rows) adds per pass over a chunk's pairs:
# their histograms (6 kB a feature) stay in the core's cache.
PAIR_ROW_FEATURES = 32


def split_node_pairs(
    rows, mid, pairs, live, cross, col, bin_idx, missing_left, missing_bin, longest, n_pairs
):  # fmt: skip
    """A split of a node's rows ``rows`` (left child ``rows[:mid]``, right
    ``rows[mid:]``; a row goes left when its bin in ``col`` is ``<= bin_idx``, or missing
    and ``missing_left``): each row's node pairs (the first ``live[d]`` of its slice, the
    partner in the node) are reordered in place into [partner on the row's side |
    across], each part in its previous order; ``live[d]`` and ``cross[d]`` become their
    numbers.  Returns ``(n_left, n_right, n_crossing, sum_left, sum_right)``: the
    children's rho summed per row, then over rows (the same whatever the threads: NumPy's
    sum of the per-row sums).  ``longest``: the longest slice; ``n_pairs``: the node's
    pairs (parallel over blocks of rows from :data:`PAIR_SPLIT_PARALLEL`)."""
    n = rows.shape[0]
    row_sums = np.empty(n, dtype=np.float64)
    args = (mid, pairs.ptr, pairs.offset, pairs.rho, live, cross, col, bin_idx)
    tail = (missing_left, missing_bin, longest, row_sums)
    if n_pairs < PAIR_SPLIT_PARALLEL or num_threads() == 1:
        n_l, n_r, n_x = _split_node_pairs_body(rows, 0, n, *args, *tail)
    else:
        parts: list[tuple[int, int, int]] = []
        over_rows(
            lambda t0, t1: parts.append(_split_node_pairs_body(rows, t0, t1, *args, *tail)),
            n,
            min_rows_per_thread=1024,
        )
        n_l, n_r, n_x = (sum(p[k] for p in parts) for k in range(3))
    return (
        int(n_l),
        int(n_r),
        int(n_x),
        float(np.sum(row_sums[:mid])),
        float(np.sum(row_sums[mid:])),
    )


# A split reorders its node's pairs on several threads from this many pairs.
PAIR_SPLIT_PARALLEL = 1 << 16
# Rows ahead whose pair slices the split's reordering prefetches.
PAIR_SPLIT_PREFETCH = 16
# Rows ahead whose bins and pairs a walk of four features prefetches.
PAIR_WALK_PREFETCH = 16


def build_pair_mass_histogram(
    X_binned, rows, pairs, live, feature_indices, mass, ordered, out, X_rows=None
):
    """Per feature and bin, over the node's rows ``rows``: the sum of ``out_d``
    (channel 0) and of ``in_d`` (1), where ``out_d`` (``in_d``) is the ``rho`` of the
    node's pairs (``live``, see :func:`build_pair_histogram`) whose preferred (other)
    document is ``d``.  What the OLE gain bound needs (seed 000 eq. 13; see
    :func:`ltrboost.splitting.ole_gain_bounds`): the node's pairs wholly in a side weigh
    at most ``min(sum out_d, sum in_d)`` over the side's documents.

    ``mass``: float64 (n_rows_shard, 2) scratch, zero on entry and on return.
    ``ordered``: float64 (>= len(rows), 2) scratch (OUT: ``out_d, in_d`` of the rows
    with some mass, in the order of ``rows``; the others add nothing).  ``out``: OUT
    (n_features, n_bins, 2) float64, only the selected features written.  Serial when
    small, else parallel over features.  ``X_rows``: a row-major copy of the bins,
    given for nodes whose rows are sparse in the data (see :func:`use_row_major`):
    every feature is then built in one pass over the rows.
    """
    # only the rows with some mass (out_d or in_d not zero; 3-8% of a node's rows have
    # none at 200k synthetic documents, more where queries have one grade)
    massive = np.empty(rows.shape[0], dtype=rows.dtype)
    n = _pair_masses(rows, pairs.ptr, pairs.offset, pairs.rho, live, mass, ordered, massive)
    rows = massive[:n]
    o = ordered[:n]
    n_sel = feature_indices.shape[0]
    if X_rows is not None:
        n_features = X_rows.shape[1]
        if n * n_features < PARALLEL_MIN_WORK:
            _pair_mass_rows_body(X_rows, rows, o, 0, n_features, out)
        else:
            n_blocks = min(n_features, 2 * num_threads())
            over_rows(
                lambda f0, f1: _pair_mass_rows_body(X_rows, rows, o, f0, f1, out),
                n_features,
                min_rows_per_thread=1,
                align=-(-n_features // n_blocks),
            )
    elif n * n_sel < PARALLEL_MIN_WORK:
        _pair_mass_histogram_body(X_binned, rows, o, feature_indices, 0, n_sel, out)
    else:
        over_rows(
            lambda k0, k1: _pair_mass_histogram_body(
                X_binned, rows, o, feature_indices, k0, k1, out
            ),
            n_sel,
            min_rows_per_thread=1,
        )


def reduce_histograms(
    histograms: list[NDArray[np.float64]],
    out: NDArray[np.float64] | None = None,
    feature_indices: NDArray[np.int32] | None = None,
) -> NDArray[np.float64]:
    """Sum histograms computed on disjoint shards of a node's rows (fixed order).

    One histogram is its own sum and is returned as it is (the single-shard path pays
    nothing).  Otherwise the sum is written to ``out`` (a new array when None), only for
    ``feature_indices`` when given (the other features of shard buffers are not built);
    the inputs are not modified.
    """
    if len(histograms) == 1:
        return histograms[0]
    if out is None:
        out = np.zeros_like(histograms[0])
    if feature_indices is None:
        np.copyto(out, histograms[0])
        for h in histograms[1:]:
            out += h
    else:
        out[feature_indices] = histograms[0][feature_indices]
        for h in histograms[1:]:
            out[feature_indices] += h[feature_indices]
    return out


class NodeHistogram(NamedTuple):
    """A node's histogram with its totals: what the splitter needs from the data."""

    hist: NDArray[np.float64]
    sum_gradients: float
    sum_hessians: float
    count: int


class RowRange(NamedTuple):
    """A node's rows in one shard: ``partition[start:stop]``, and how many OLE pairs
    have both documents among them (the node's pairs)."""

    start: int
    stop: int
    n_pairs: int = 0


class LocalHistograms:
    """One shard of rows held in this process: rows -> partial node histograms.

    Owns the binned rows of the shard, the row partition (every node is the view
    ``partition[start:stop]``, see :mod:`ltrboost.splitting`), the gathered-gradient
    buffers and, under ``"ole"``, the round's pairs with each row's live and crossing
    counts.  Its results are *partial*: the :class:`HistogramBuilder` sums them over
    shards.

    Parameters
    ----------
    X_binned : ndarray (n_rows, n_features), uint8, Fortran order: the shard's rows.
    missing_bin : int
    n_threads : int
    row_start : int
        Global index of the shard's first row: the shard holds rows
        ``row_start .. row_start + n_rows - 1`` of the training set (whole queries).
    pool : HistogramPool, optional
        Buffers shared with the builder (a shard's histogram may become a node's).
    n_bins_non_missing : ndarray (n_features,), int32, optional
        Each feature's value bins (the binner's): histograms are built and subtracted
        on those and the missing bin only, so a feature with few values costs few bins
        (the split search reads no others).  Default: every bin of every feature.
    """

    def __init__(
        self,
        X_binned: NDArray[np.uint8],
        missing_bin: int,
        n_threads: int = 1,
        row_start: int = 0,
        pool: HistogramPool | None = None,
        n_bins_non_missing: NDArray[np.int32] | None = None,
    ) -> None:
        self.X_binned = X_binned
        self.missing_bin = int(missing_bin)
        self.n_threads = n_threads
        self.row_start = int(row_start)
        self.n_samples, self.n_features = X_binned.shape
        self.pool = pool or HistogramPool(self.n_features, self.missing_bin + 1)
        if n_bins_non_missing is None:
            n_bins_non_missing = np.full(self.n_features, self.missing_bin, dtype=np.int32)
        self.n_bins_non_missing = np.ascontiguousarray(n_bins_non_missing, dtype=np.int32)
        n = self.n_samples
        self._partition_buffer = np.empty(n, dtype=INDEX_DTYPE)
        # the current tree's rows (the bag): node rows are views partition[start:stop]
        self.partition = self._partition_buffer
        self._buffer = np.empty(n, dtype=INDEX_DTYPE)
        self._ordered_g = np.empty(n, dtype=np.float32)
        self._ordered_h = np.empty(n, dtype=np.float32)
        self._X_rows: NDArray[np.uint8] | None = None
        self._pairs: tuple[NDArray, NDArray, NDArray] | None = None
        # quantised gradients (quantized_gradients > 0): the tree's spec, packed rows and
        # their gathered copy (allocated at the first quantised tree)
        self._quant: QuantSpec | None = None
        self._packed: NDArray[np.int64] | None = None
        self._ordered_p: NDArray[np.int64] | None = None

    # --- one tree ---
    def start_tree(self, gradients, hessians, sample_indices, feature_indices, pairs, quant=None):
        """Bind the tree's inputs (shard-local rows); return the root's rows.

        ``quant``: a :class:`~ltrboost.quantize.QuantSpec` (scales over every shard's
        rows) to build this tree's histograms from quantised gradients; None: exact."""
        self._quant = quant
        if quant is not None:
            if self._packed is None:
                self._packed = np.empty(self.n_samples, dtype=np.int64)
                self._ordered_p = np.empty(self.n_samples, dtype=np.int64)
            quantize(gradients, hessians, quant, self.row_start, self._packed)
        self._gradients = gradients
        self._hessians = hessians
        self._features = feature_indices
        self._bagged = sample_indices is not None
        if sample_indices is None:
            n = self.n_samples
            self._part = self._partition_buffer
            self._part[:] = np.arange(n, dtype=INDEX_DTYPE)
        else:
            n = sample_indices.shape[0]
            self._part = self._partition_buffer[:n]
            self._part[:] = sample_indices
        self.partition = self._part
        self._pairs = None
        self._pair_sums: dict[tuple[int, int], float] = {}
        self._crossing: dict[tuple[int, int], int] = {}
        self._walk: tuple | None = None  # the last node's walked rows (see _walked)
        n_pairs = 0
        if pairs is not None:
            if not isinstance(pairs, PairCSR):
                pairs = pairs_to_csr(*pairs, self.n_samples)
            self._pairs = pairs
            n_pairs = pairs.n_pairs
            # per row, how many of its pairs (from the start of its slice) are its
            # node's, and how many after those the node's split sent across
            # (split_rows); the pairs were filtered to the bag, so every row's pairs
            # are the root's
            counts = np.diff(pairs.ptr)
            self._live = counts.astype(np.int32)
            self._cross = np.zeros(self.n_samples, dtype=np.int32)
            self._longest_slice = int(counts.max()) if counts.shape[0] else 0
            # the root's pairs are all of them
            self._pair_sums[(0, n)] = float(np.sum(pairs.rho, dtype=np.float64))
            self._pair_hist = np.empty((self.n_features, self.missing_bin + 1, 3), dtype=np.float64)
            self._bound_ready = False  # the OLE bound's scratch and checks: at first use
        return RowRange(0, n, n_pairs)

    def _prepare_bound(self) -> None:
        """The tree's checks and scratch for :meth:`pair_mass_histogram`: whether
        every pair's ``rho`` is ``>= 0`` (the bound holds only then; NaN fails) and the
        tree's scale ``sum |h| + 2 sum rho`` of the rounding tolerance."""
        rho = self._pairs.rho
        self._bound_ok = rho.shape[0] == 0 or bool(np.min(rho) >= 0.0)  # NaN: False
        h = self._hessians if not self._bagged else self._hessians[self._part]
        self._bound_scale = float(np.sum(np.abs(h), dtype=np.float64)) + 2.0 * abs(
            float(np.sum(rho, dtype=np.float64))
        )
        self._bound_terms = self._part.shape[0] + rho.shape[0]
        if getattr(self, "_mass", None) is None:
            self._mass = np.zeros((self.n_samples, 2), dtype=np.float64)
            self._mass_ordered = np.empty((self.n_samples, 2), dtype=np.float64)
            self._mass_hist = np.empty((self.n_features, self.missing_bin + 1, 2), np.float64)
        self._bound_ready = True

    def end_pairs(self) -> None:
        """Drop the tree's pairs once it is grown: the next round's pairs are computed
        before the next tree starts, and must not coexist with these."""
        self._pairs = None
        self._live = self._cross = None
        self._pair_sums = {}
        self._crossing = {}
        self._walk = None

    def root_histogram(self, rows: RowRange) -> NodeHistogram:
        """The root's partial histogram, with the shard's sums and row count."""
        hist = self.pool.get()
        q = self._quant
        if q is not None:  # the sums of the quantised values the histogram holds
            n = rows.stop - rows.start
            if self._bagged:
                gather_packed(self._part, self._packed, self._ordered_p)
                src = self._ordered_p
            else:
                src = self._packed
            build_quantized_histogram(
                self.X_binned, self._part, src, self._features, hist, n, self._bagged, q,
                n_bins_non_missing=self.n_bins_non_missing,
            )  # fmt: skip
            sg, sh, _ = packed_sums(src, _NO_ROWS, n, False)
            sum_g, sum_h = float_sums(q, int(sg), int(sh), n)
            return NodeHistogram(hist, sum_g, sum_h, n)
        if not self._bagged:
            build_histogram_root(
                self.X_binned,
                self._gradients,
                self._hessians,
                self._features,
                hist,
                self.n_bins_non_missing,
            )
            sum_g = float(np.sum(self._gradients, dtype=np.float64))
            sum_h = float(np.sum(self._hessians, dtype=np.float64))
        else:
            og, oh = build_histogram(
                self.X_binned,
                self._part,
                self._gradients,
                self._hessians,
                self._features,
                self._ordered_g,
                self._ordered_h,
                hist,
                n_bins_non_missing=self.n_bins_non_missing,
            )
            sum_g = float(np.sum(og, dtype=np.float64))
            sum_h = float(np.sum(oh, dtype=np.float64))
        return NodeHistogram(hist, sum_g, sum_h, rows.stop - rows.start)

    def node_histogram(self, rows: RowRange) -> NDArray[np.float64]:
        """A node's partial histogram (brute force over its rows of this shard)."""
        hist = self.pool.get()
        node_rows = self._part[rows.start : rows.stop]
        if self._quant is not None:
            n = node_rows.shape[0]
            gather_packed(node_rows, self._packed, self._ordered_p)
            build_quantized_histogram(
                self.X_binned, node_rows, self._ordered_p, self._features, hist, n, True,
                self._quant, X_rows=self._row_major(n), n_bins_non_missing=self.n_bins_non_missing,
            )  # fmt: skip
            return hist
        build_histogram(
            self.X_binned,
            node_rows,
            self._gradients,
            self._hessians,
            self._features,
            self._ordered_g,
            self._ordered_h,
            hist,
            X_rows=self._row_major(node_rows.shape[0]),
            n_bins_non_missing=self.n_bins_non_missing,
        )
        return hist

    def _row_major(self, n_node: int) -> NDArray[np.uint8] | None:
        """The row-major copy of the bins if a node of ``n_node`` rows is built from it.

        The row-wise kernel builds every feature, selected or not (with
        ``colsample_bytree`` the extra ones are never read and still cost less than the
        column pass over the selected ones); the copy (``n_samples x n_features``
        bytes) is made at the first such node.
        """
        if not use_row_major(n_node, self.n_samples):
            return None
        if self._X_rows is None:
            self._X_rows = np.ascontiguousarray(self.X_binned)
        return self._X_rows

    def split_rows(self, rows: RowRange, info: SplitInfo) -> tuple[RowRange, RowRange]:
        """Partition the node's rows (and pairs) by the split; the children's rows.

        Pairs whose documents go to different children drop out: their loss moves with
        both leaves, so they never enter a one-leaf hessian correction again.  Each row's
        pairs are reordered in place in the round's PairCSR (the set is unchanged):
        a PairCSR serves one tree.
        """
        n_left = split_indices(
            self._part,
            rows.start,
            rows.stop,
            self.X_binned,
            info.feature_idx,
            info.bin_idx,
            info.missing_go_to_left,
            self.missing_bin,
            self._buffer,
            self.n_threads,
        )
        mid = rows.start + n_left
        n_l = n_r = 0
        if self._pairs is not None:
            self._walk = None  # the split changes which of the rows' pairs are walked
            n_l, n_r, n_x, s_l, s_r = split_node_pairs(
                self._part[rows.start : rows.stop],
                n_left,
                self._pairs,
                self._live,
                self._cross,
                self.X_binned[:, info.feature_idx],
                info.bin_idx,
                info.missing_go_to_left,
                self.missing_bin,
                self._longest_slice,
                rows.n_pairs,
            )
            # the children's pair sums, from the same pass
            self._pair_sums[(rows.start, mid)] = s_l
            self._pair_sums[(mid, rows.stop)] = s_r
            self._crossing[(rows.start, rows.stop)] = n_x
        return RowRange(rows.start, mid, n_l), RowRange(mid, rows.stop, n_r)

    def pair_sum(self, rows: RowRange) -> float:
        """Total ``rho`` of the node's pairs in this shard (0 without pairs).

        Recorded per node for the tree, so a node's leaf value and its split search read
        the same sum: the root's (NumPy's sum) by :meth:`start_tree`, the children's by
        :meth:`split_rows` as it counts their pairs.
        """
        if self._pairs is None or rows.n_pairs <= 0:
            return 0.0
        return self._pair_sums[(rows.start, rows.stop)]

    def pair_histogram(
        self,
        rows: RowRange,
        feature_indices: NDArray[np.int32] | None = None,
        out: NDArray[np.float64] | None = None,
    ) -> tuple[NDArray[np.float64], float]:
        """The node's partial pair histograms ``(P_max, P_min, Q)`` and pair sum.

        Built for ``feature_indices`` (default: the tree's features) into ``out``
        (default: the shard's buffer, overwritten by the next call); the other
        features' entries are left as they were.
        """
        feats = self._features if feature_indices is None else feature_indices
        out = self._pair_hist if out is None else out
        build_pair_histogram(
            self.X_binned,
            self._part[rows.start : rows.stop],
            self._pairs,
            self._live,
            self._cross,
            feats,
            self.missing_bin,
            out,
            rows.n_pairs,
            X_rows=self._row_major(rows.stop - rows.start),
            walked=self._walked(rows, False),
        )
        return out, self.pair_sum(rows)

    def _walked(self, rows: RowRange, crossing: bool) -> tuple:
        """The node's walked rows (:func:`walked_rows`), kept for the node's next
        call: a branch-and-bound node builds its pair histograms in several calls."""
        key = (rows.start, rows.stop, crossing)
        if self._walk is None or self._walk[0] != key:
            part = self._part[rows.start : rows.stop]
            self._walk = (key, walked_rows(part, self._pairs, self._live, self._cross, crossing))
        return self._walk[1]

    def crossing_pair_histogram(
        self,
        parent: RowRange,
        right: RowRange,
        feature_indices: NDArray[np.int32],
        out: NDArray[np.float64],
    ) -> None:
        """The partial pair histograms, into ``out``, of the pairs that the split of
        ``parent`` (whose right child is ``right``) sent across: one document on each
        side."""
        build_pair_histogram(
            self.X_binned,
            self._part[parent.start : parent.stop],
            self._pairs,
            self._live,
            self._cross,
            feature_indices,
            self.missing_bin,
            out,
            self.crossing_pair_count(parent, right),
            crossing=True,
            X_rows=self._row_major(parent.stop - parent.start),
            walked=self._walked(parent, True),
        )

    def crossing_pair_count(self, parent: RowRange, right: RowRange) -> int:
        """The number of pairs the split of ``parent`` sent across (this shard)."""
        return self._crossing.get((parent.start, parent.stop), 0)

    def pair_mass_histogram(
        self, rows: RowRange, feature_indices: NDArray[np.int32]
    ) -> tuple[NDArray[np.float64], float, int] | None:
        """The node's partial pair-mass histogram (see :func:`build_pair_mass_histogram`)
        for ``feature_indices``, with the tree's tolerance scale and number of summed
        terms; None when the OLE gain bound does not hold for this tree's pairs (some
        ``rho < 0`` or NaN).  The returned array is the shard's buffer, overwritten by
        the next call."""
        if not self._bound_ready:
            self._prepare_bound()
        if not self._bound_ok:
            return None
        build_pair_mass_histogram(
            self.X_binned,
            self._part[rows.start : rows.stop],
            self._pairs,
            self._live,
            feature_indices,
            self._mass,
            self._mass_ordered,
            self._mass_hist,
            X_rows=self._row_major(rows.stop - rows.start),
        )
        return self._mass_hist, self._bound_scale, self._bound_terms

    def pair_count(self, rows: RowRange) -> int:
        """The number of the node's pairs in this shard."""
        return max(0, rows.n_pairs)

    def exact_sums(self, rows: RowRange) -> tuple[float, float]:
        """The exact (float64) gradient and hessian sums of the node's rows in this
        shard, in their partition order (the leaves of a quantised tree)."""
        g, h = exact_row_sums(self._gradients, self._hessians, self._part[rows.start : rows.stop])
        return float(g), float(h)

    def add_tree(self, nodes, leaves, out) -> None:
        """Add a grown tree's leaf values (``nodes["value"]``) to the shard's scores.

        ``leaves``: (rows, node index) per leaf.  Out-of-bag rows are in no leaf's rows:
        a bagged tree is predicted on the shard's binned rows instead.
        """
        if self._bagged:
            predict_binned_tree(nodes, self.X_binned, self.missing_bin, out)
            return
        starts = np.array([r.start for r, _ in leaves], dtype=np.int64)
        stops = np.array([r.stop for r, _ in leaves], dtype=np.int64)
        vals = np.array([nodes["value"][k] for _, k in leaves], dtype=np.float64)
        add_leaf_values(self.partition, starts, stops, vals, out)


class HistogramBuilder:
    """The grower's view of the data: global node histograms, sums and counts.

    Sums the partial results of its shards with :func:`reduce_histograms`; with one
    shard (local training) every reduction returns the shard's own result.  Row handles
    (``rows``) are opaque to the grower: one :class:`RowRange` per shard.

    Parameters
    ----------
    shards : sequence of LocalHistograms
        Disjoint, in row order, together every training row (each holding whole
        queries, so that every pair lies in one shard).
    """

    def __init__(self, shards) -> None:
        self.shards = list(shards)
        first = self.shards[0]
        self.n_features = first.n_features
        self.missing_bin = first.missing_bin
        self.pool = first.pool
        self.n_bins_non_missing = first.n_bins_non_missing
        self._bounds = [(s.row_start, s.row_start + s.n_samples) for s in self.shards]

    @classmethod
    def local(cls, X_binned, missing_bin, n_threads=1, n_bins_non_missing=None) -> HistogramBuilder:
        """A builder over one shard: all rows of ``X_binned`` in this process."""
        shard = LocalHistograms(
            X_binned, missing_bin, n_threads, n_bins_non_missing=n_bins_non_missing
        )
        return cls([shard])

    @property
    def partition(self) -> NDArray[np.int32] | None:
        """The row partition of a single-shard builder (None when sharded)."""
        return self.shards[0].partition if len(self.shards) == 1 else None

    def start_tree(
        self, gradients, hessians, sample_indices, feature_indices, pairs, quant=None
    ) -> Any:
        """Hand each shard its rows' inputs; return the root's rows (one per shard).

        ``quant``: the tree's :class:`~ltrboost.quantize.QuantSpec` (every shard
        quantises its rows with it), or None."""
        if len(self.shards) == 1 and self._bounds[0][0] == 0:
            return (
                self.shards[0].start_tree(
                    gradients, hessians, sample_indices, feature_indices, pairs, quant
                ),
            )
        roots = []
        for shard, (lo, hi) in zip(self.shards, self._bounds, strict=True):
            si = None
            if sample_indices is not None:
                si = sample_indices[(sample_indices >= lo) & (sample_indices < hi)]
                si = (si - lo).astype(INDEX_DTYPE)
            sp = None
            if pairs is not None:
                if not isinstance(pairs, PairCSR):
                    pairs = pairs_to_csr(*pairs, self._bounds[-1][1])
                sp = pairs.slice_rows(lo, hi)
            roots.append(
                shard.start_tree(gradients[lo:hi], hessians[lo:hi], si, feature_indices, sp, quant)
            )
        return tuple(roots)

    def exact_leaf_sums(self, leaves) -> list[tuple[float, float]]:
        """The exact gradient and hessian sums of each of a quantised tree's leaves'
        rows, over the shards in order."""
        out = []
        for rows in leaves:
            g = h = 0.0
            for shard, r in zip(self.shards, rows, strict=True):
                sg, sh = shard.exact_sums(r)
                g += sg
                h += sh
            out.append((g, h))
        return out

    def end_pairs(self) -> None:
        """Every shard drops the grown tree's pairs (see :meth:`LocalHistograms.end_pairs`)."""
        for shard in self.shards:
            shard.end_pairs()

    def _reduce(self, parts, features) -> NDArray[np.float64]:
        out = None if len(parts) == 1 else self.pool.get()
        total = reduce_histograms(parts, out, features)
        if len(parts) > 1:
            for p in parts:
                self.pool.release(p)
        return total

    def root(self, rows, feature_indices) -> NodeHistogram:
        """The root's histogram with its gradient and hessian sums and its count."""
        parts = [s.root_histogram(r) for s, r in zip(self.shards, rows, strict=True)]
        sum_g, sum_h, count = parts[0][1:]
        for p in parts[1:]:
            sum_g += p.sum_gradients
            sum_h += p.sum_hessians
            count += p.count
        hist = self._reduce([p.hist for p in parts], feature_indices)
        return NodeHistogram(hist, sum_g, sum_h, count)

    def build(self, rows, feature_indices) -> NDArray[np.float64]:
        """A node's histogram, built from its rows (the smaller child's)."""
        if len(self.shards) == 1:  # local training: the shard's histogram is the node's
            return self.shards[0].node_histogram(rows[0])
        parts = [s.node_histogram(r) for s, r in zip(self.shards, rows, strict=True)]
        return self._reduce(parts, feature_indices)

    def subtract(self, parent, child, feature_indices) -> NDArray[np.float64]:
        """The sibling's histogram ``parent - child``, in the parent's buffer."""
        subtract_histograms(parent, child, feature_indices, self.n_bins_non_missing)
        return parent

    def release(self, hist) -> None:
        self.pool.release(hist)

    def split(self, rows, info: SplitInfo):
        """The children's rows after the split (every shard partitions its own)."""
        if len(self.shards) == 1:
            left, right = self.shards[0].split_rows(rows[0], info)
            return (left,), (right,)
        pairs = [s.split_rows(r, info) for s, r in zip(self.shards, rows, strict=True)]
        return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)

    def pair_sum(self, rows) -> float:
        """Total ``rho`` of the node's pairs."""
        if len(self.shards) == 1:
            return self.shards[0].pair_sum(rows[0])
        total = 0.0
        for s, r in zip(self.shards, rows, strict=True):
            total += s.pair_sum(r)
        return total

    def pair_histogram(self, rows, feature_indices, out=None) -> tuple[NDArray, float]:
        """The node's pair histograms ``(P_max, P_min, Q)`` and its pair sum; into
        ``out`` (only ``feature_indices`` written) when given, else a buffer that the
        next call may overwrite."""
        if len(self.shards) == 1:
            return self.shards[0].pair_histogram(rows[0], feature_indices, out)
        parts = [
            s.pair_histogram(r, feature_indices) for s, r in zip(self.shards, rows, strict=True)
        ]
        total = reduce_histograms([p[0] for p in parts], None, feature_indices)
        psum = parts[0][1]
        for p in parts[1:]:
            psum += p[1]
        if out is not None:
            out[feature_indices] = total[feature_indices]
            total = out
        return total, psum

    def crossing_pair_histogram(self, parent, right, feature_indices, out) -> None:
        """The pair histograms, into ``out`` (only ``feature_indices`` written), of the
        pairs that the split of ``parent`` sent across (its right child: ``right``)."""
        if len(self.shards) == 1:
            self.shards[0].crossing_pair_histogram(parent[0], right[0], feature_indices, out)
            return
        parts = []
        for s, p, r in zip(self.shards, parent, right, strict=True):
            part = np.zeros_like(out)
            s.crossing_pair_histogram(p, r, feature_indices, part)
            parts.append(part)
        total = reduce_histograms(parts, None, feature_indices)
        out[feature_indices] = total[feature_indices]

    def crossing_pair_count(self, parent, right) -> int:
        """The number of pairs that the split of ``parent`` sent across (all shards)."""
        return sum(
            s.crossing_pair_count(p, r) for s, p, r in zip(self.shards, parent, right, strict=True)
        )

    def pair_mass_histogram(
        self, rows, feature_indices
    ) -> tuple[NDArray[np.float64], float] | None:
        """The node's pair-mass histogram (per feature and bin the sums of ``out_d`` and
        ``in_d``, see :func:`build_pair_mass_histogram`) and the tolerance the OLE gain
        bound subtracts from every side's hessian
        (:func:`ltrboost.splitting.ole_gain_bounds`); None when the bound does not hold
        for the tree's pairs.

        The tolerance bounds the rounding of the float64 sums that the exact split
        search (its pair sums) and this histogram make, and of the two subtractions
        from the side's hessian sum: recursive summation of ``N`` terms errs by at most
        ``(N - 1) u sum |x|`` (``u = 2**-53``), with the tree's rows and pairs as terms
        and ``sum |h| + 2 sum rho`` as their scale.  It is ~1e-8 of the root's hessian
        at 10 million rows and pairs: negligible for the bound, and it makes the bound
        hold in floats, not only in exact arithmetic.
        """
        parts = [
            s.pair_mass_histogram(r, feature_indices)
            for s, r in zip(self.shards, rows, strict=True)
        ]
        if any(p is None for p in parts):
            return None
        out = parts[0][0]
        scale = sum(p[1] for p in parts)
        terms = sum(p[2] for p in parts) + 2 * out.shape[1]
        if len(parts) > 1:
            out = np.zeros_like(out)
            for p in parts:
                out[feature_indices] += p[0][feature_indices]
        tolerance = 8.0 * terms * 2.0**-53 * scale
        return out, tolerance

    def pair_count(self, rows) -> int:
        """The number of the node's pairs (all shards)."""
        return sum(s.pair_count(r) for s, r in zip(self.shards, rows, strict=True))

    def add_tree(self, nodes, leaves, out) -> None:
        """Add the tree's leaf values to every shard's rows of the scores ``out``."""
        for k, (shard, (lo, hi)) in enumerate(zip(self.shards, self._bounds, strict=True)):
            shard.add_tree(nodes, [(r[k], i) for r, i in leaves], out[lo:hi])


# --- kernels ---
#
# Each histogram kernel is a serial, nogil body over a range of selected features (or
# rows); the Python drivers above run blocks of that range on Python threads
# (_numba.over_rows) when the work is large, and call the body once when it is small.
# No parfor: a parallel=True driver costs ~0.5-1 s of compilation on top of its body,
# and blocks of independent features give the same sums whatever the split.  Root and
# node histograms share one body and one _accumulate2.

_NO_ROWS = np.empty(0, dtype=INDEX_DTYPE)  # ``rows`` of _accumulate2 when indexed=False


@inline_kernel
def _zero_feature_bins(h, nb):
    """Zero one feature's own bins of ``h`` (shape ``(n_bins, lanes)``), every lane:
    the value bins ``0 .. nb-1`` and the missing bin (the last); the bins between are
    left as they are."""
    last = h.shape[0] - 1
    for s in range(h.shape[1]):
        for b in range(nb):
            h[b, s] = 0.0
        h[last, s] = 0.0


@inline_kernel
def _zero_sub_bins(sub, nb):
    """:func:`_zero_feature_bins` on each of the four sub-histograms ``sub`` (shape
    ``(4, n_bins, 4)``), padding lane included (left as garbage it could hold a denormal
    and slow every add)."""
    for t in range(4):
        _zero_feature_bins(sub[t], nb)


@inline_kernel
def _finish_feature(sub, h, nb):
    """``h``'s own bins (value bins ``0 .. nb-1`` and the missing, last, bin) = the sum
    of the four sub-histograms ``sub``, in a fixed order."""
    last = h.shape[0] - 1
    for b in range(nb):
        for s in range(3):
            h[b, s] = (sub[0, b, s] + sub[1, b, s]) + (sub[2, b, s] + sub[3, b, s])
    for s in range(3):
        h[last, s] = (sub[0, last, s] + sub[1, last, s]) + (sub[2, last, s] + sub[3, last, s])


@inline_kernel
def _accumulate2(col_a, col_b, rows, gradients, hessians, n, indexed, sub_a, sub_b):
    """Add rows' gradients/hessians/counts to the (zeroed) sub-histograms ``sub_a``,
    ``sub_b`` of two features (columns ``col_a``, ``col_b``) in one pass over the rows.

    ``indexed`` False: rows 0..n-1 (the root, ``rows`` unused); True: rows
    ``rows[0..n-1]``.  One specialisation serves both (a flag, not ``rows=None``, which
    would compile a second one).  Two features a pass: each row's gradient and hessian
    are read once for both (at 500k-2M rows those reads come from memory: the root
    ~0.65x the time of one feature a pass, deeper nodes up to 0.9x).  An odd feature
    out is passed as both (``col_b is col_a``, the same sums twice).

    Per feature, four sub-histograms (``sub_a``/``sub_b``, scratch of shape
    ``(4, n_bins, 4)``) take consecutive rows in turn and are summed at the end: when
    neighbouring rows fall in the same bin (common for sparse, count-like features) a
    single histogram serialises on the store-to-load latency of that bin; four
    independent chains run in parallel in the CPU (measured ~25-30% faster).  The
    summation order is fixed, so results do not depend on threads or on which feature
    a feature is paired with.  A row adds ``(g, h, 1, 0)`` to its bin's four lanes in
    one vector add (:func:`add_gh1`: the same sums as three scalar adds, one store
    instead of three).

    The caller zeroes and sums only each feature's own bins (value bins and the missing
    bin, :func:`_zero_sub_bins`, :func:`_finish_feature`); the other bins of the
    histogram are left as they are (see :class:`HistogramPool`): a feature with a few
    values costs a few bins, not ``n_bins``.
    """
    m = n - (n % 4)
    # One loop for both cases: only the loads of the bins depend on ``indexed`` (a
    # loop-invariant branch, which LLVM unswitches), so the accumulation is typed and
    # lowered once, not twice.
    for i in range(0, m, 4):
        if indexed and i + COLUMN_PREFETCH_DISTANCE + 4 < n:
            prefetch_bins(col_a, col_b, rows, i + COLUMN_PREFETCH_DISTANCE)
        for t in range(4):
            r = rows[i + t] if indexed else i + t
            g = gradients[i + t]
            h = hessians[i + t]
            add_gh1(sub_a, t, col_a[r], g, h)
            add_gh1(sub_b, t, col_b[r], g, h)
    for i in range(m, n):
        r = rows[i] if indexed else i
        add_gh1(sub_a, 0, col_a[r], gradients[i], hessians[i])
        add_gh1(sub_b, 0, col_b[r], gradients[i], hessians[i])


@kernel
def _histogram_body(
    X_binned,
    sample_indices,
    ordered_gradients,
    ordered_hessians,
    feature_indices,
    k_lo,
    k_hi,
    hist_out,
    n,
    indexed,
    n_bins_non_missing,
):
    # X_binned: IN uint8 (n_samples, n_features) F-order; indexed: rows
    # sample_indices[:n] (INDEX_DTYPE) with ordered_* IN float32 gathered in the same
    # order; not indexed (the root): rows 0..n-1, ordered_* the gradients themselves.
    # hist_out: OUT (n_features, n_bins, 3) for features feature_indices[k_lo:k_hi]:
    # bins 0 .. n_bins_non_missing[f]-1 and the missing (last) bin of each.  Features
    # two at a time (an odd one out as both of a pair).
    last = hist_out.shape[1] - 1
    sub_a = np.empty((4, last + 1, 4))  # lane 3: padding (see add_gh1)
    sub_b = np.empty((4, last + 1, 4))  # (two allocations: 32 kB apart they collide in L1)
    for k in range(k_lo, k_hi, 2):
        fa = feature_indices[k]
        fb = feature_indices[k + 1] if k + 1 < k_hi else fa
        for j in range(2):
            sub = sub_a if j == 0 else sub_b
            _zero_sub_bins(sub, min(n_bins_non_missing[(fa, fb)[j]], last))
        _accumulate2(
            X_binned[:, fa],
            X_binned[:, fb],
            sample_indices,
            ordered_gradients,
            ordered_hessians,
            n,
            indexed,
            sub_a,
            sub_b,
        )
        for j in range(2):
            f = (fa, fb)[j]
            sub = sub_a if j == 0 else sub_b
            _finish_feature(sub, hist_out[f], min(n_bins_non_missing[f], last))


@kernel
def _gather_body(sample_indices, gradients, hessians, ordered_gradients, ordered_hessians):
    # A block's rows as slices, counted from 0 (as _gather_packed's): a loop from a
    # variable start (``range(lo, hi)``) left Numba's negative-index wrap-around, a
    # compare and a select, on each of its three row accesses.
    for i in range(sample_indices.shape[0]):
        idx = sample_indices[i]
        ordered_gradients[i] = gradients[idx]
        ordered_hessians[i] = hessians[idx]


def _gather(sample_indices, gradients, hessians, ordered_gradients, ordered_hessians):
    """ordered_*: OUT float32 (n_node,) = gradients[sample_indices] (on Python threads
    over blocks of rows when large)."""
    _over_gathered_rows(
        lambda r0, r1: _gather_body(
            sample_indices[r0:r1],
            gradients,
            hessians,
            ordered_gradients[r0:r1],
            ordered_hessians[r0:r1],
        ),
        sample_indices.shape[0],
    )


@kernel
def _histogram_rows_body(
    X_rows, sample_indices, ordered_gradients, ordered_hessians, f_lo, f_hi, hist_out,
    n_bins_non_missing,
):  # fmt: skip
    # X_rows: IN uint8 (n_samples, n_features) C-order (a row's bins are contiguous);
    # features f_lo..f_hi-1 are built in one pass over the node's rows.  Each feature's
    # bins are summed in row order whatever the block, so the result does not depend on
    # how features are split between threads.  Only each feature's own bins (values
    # 0 .. n_bins_non_missing[f]-1 and the missing, last, bin) are zeroed and filled.
    # The node's rows are scattered over the
    # data, so the block of a row a few iterations ahead is prefetched: without it
    # every row waits for a memory fetch (measured ~1.6x slower at 1-2% density).
    n = sample_indices.shape[0]
    last = hist_out.shape[1] - 1
    for f in range(f_lo, f_hi):
        _zero_feature_bins(hist_out[f], min(n_bins_non_missing[f], last))
    for i in range(n):
        if i + ROW_PREFETCH_DISTANCE < n:
            ahead = X_rows[sample_indices[i + ROW_PREFETCH_DISTANCE]]
            prefetch(ahead, f_lo)
            prefetch(ahead, f_hi - 1)
        r = sample_indices[i]
        g = ordered_gradients[i]
        h = ordered_hessians[i]
        for f in range(f_lo, f_hi):
            b = X_rows[r, f]
            hist_out[f, b, 0] += g
            hist_out[f, b, 1] += h
            hist_out[f, b, 2] += 1.0


def _build_histogram_rows(
    X_rows, sample_indices, ordered_gradients, ordered_hessians, block, hist_out,
    n_bins_non_missing=None,
):  # fmt: skip
    """Row-major node histogram of every feature, on Python threads over blocks of
    features (starts multiples of ``block``)."""
    nbins = feature_bins(hist_out, n_bins_non_missing)
    _over_feature_blocks(
        lambda f0, f1: _histogram_rows_body(
            X_rows, sample_indices, ordered_gradients, ordered_hessians, f0, f1, hist_out, nbins
        ),
        X_rows.shape[1],
        block,
    )


@kernel
def _subtract_body(parent_inout, sibling, feature_indices, k_lo, k_hi, n_bins_non_missing):
    # Each feature's own bins only: values 0 .. n_bins_non_missing[f]-1 and the
    # missing (last) bin.
    last = parent_inout.shape[1] - 1
    for k in range(k_lo, k_hi):
        f = feature_indices[k]
        for b in range(min(n_bins_non_missing[f], last)):
            parent_inout[f, b, 0] -= sibling[f, b, 0]
            parent_inout[f, b, 1] -= sibling[f, b, 1]
            parent_inout[f, b, 2] -= sibling[f, b, 2]
        parent_inout[f, last, 0] -= sibling[f, last, 0]
        parent_inout[f, last, 1] -= sibling[f, last, 1]
        parent_inout[f, last, 2] -= sibling[f, last, 2]


def _subtract_histograms(parent_inout, sibling, feature_indices, n_bins_non_missing):
    """parent_inout: IN parent histogram, OUT parent - sibling (the larger child's);
    on Python threads over blocks of the selected features."""
    over_rows(
        lambda k0, k1: _subtract_body(
            parent_inout, sibling, feature_indices, k0, k1, n_bins_non_missing
        ),
        feature_indices.shape[0],
        min_rows_per_thread=1,
    )


@kernel
def _walked_rows(rows, ptr, live, cross, crossing):
    # The rows with pairs to walk (see build_pair_histogram), in order, with where their
    # walked pairs start in the CSR and how many there are: a node's own pairs (the
    # first live[d] of the row's slice) or, with ``crossing``, the cross[d] after them.
    # A small node's rows mostly have none (their pairs crossed earlier splits), and no
    # feature then reads their bins.
    active = np.empty(rows.shape[0], dtype=rows.dtype)
    starts = np.empty(rows.shape[0], dtype=ptr.dtype)
    counts = np.empty(rows.shape[0], dtype=live.dtype)
    n = 0
    for i in range(rows.shape[0]):
        d = rows[i]
        c = cross[d] if crossing else live[d]
        if c > 0:
            active[n] = d
            starts[n] = ptr[d] + live[d] if crossing else ptr[d]
            counts[n] = c
            n += 1
    return active[:n], starts[:n], counts[:n]


@inline_kernel
def _zero_pair_features(out, feature_indices, k_lo, k_hi):
    # Zero the pair histograms of features feature_indices[k_lo:k_hi].
    for k in range(k_lo, k_hi):
        f = feature_indices[k]
        for bb in range(out.shape[1]):
            out[f, bb, 0] = 0.0
            out[f, bb, 1] = 0.0
            out[f, bb, 2] = 0.0


@inline_kernel
def _chunk_end(counts, i0, chunk):
    # The end of the chunk of whole rows from i0: the first row at which ``chunk``
    # pairs are reached, or the last row.
    i1 = i0
    m = 0
    while i1 < counts.shape[0] and m < chunk:
        m += counts[i1]
        i1 += 1
    return i1


@kernel
def _add_pair(h, x, y, rt, missing_bin):
    # One pair of bins x, y (of its two documents) with weight rt into one feature's
    # pair histogram h (n_bins, 3): by its larger bin, by its smaller bin, and, when
    # exactly one document is missing, by the other's bin.
    hi = x if x > y else y
    lo = y if x > y else x
    h[hi, 0] += rt
    h[lo, 1] += rt
    if hi == missing_bin and lo != missing_bin:
        h[lo, 2] += rt


@kernel
def _pair_walk(
    X_binned, active, starts, counts, offset, rho, feature_indices, k_lo, k_hi,
    missing_bin, chunk, out,
):  # fmt: skip
    # Pair histograms of features feature_indices[k_lo:k_hi] (zeroed first) over the
    # walked pairs of the rows ``active`` (see _walked_rows): a chunk of whole rows of
    # about ``chunk`` pairs at a time, every feature of the block passing over it (four
    # interleaved) while it is in the core's cache; each bin receives the pairs in the
    # order of the rows and of each row's pairs.
    _zero_pair_features(out, feature_indices, k_lo, k_hi)
    spare = np.empty((out.shape[1], 3))  # an unused lane's sums (see below)
    i0 = 0
    while i0 < active.shape[0]:
        i1 = _chunk_end(counts, i0, chunk)
        k = k_lo
        while k + 4 <= k_hi:
            f0 = feature_indices[k]
            f1 = feature_indices[k + 1]
            f2 = feature_indices[k + 2]
            f3 = feature_indices[k + 3]
            _pair_walk4(
                active, starts, counts, i0, i1, offset, rho, X_binned[:, f0],
                X_binned[:, f1], X_binned[:, f2], X_binned[:, f3], out[f0], out[f1],
                out[f2], out[f3], missing_bin,
            )  # fmt: skip
            k += 4
        if k_hi - k == 3:
            # the last three features in one more walk of four, its fourth lane
            # walking the first one's column again into a spare histogram (one walk
            # of four took 0.85x the time of three walks of one, at 500k documents;
            # two walks of one, 0.75x one of four)
            f0 = feature_indices[k]
            f1 = feature_indices[k + 1]
            f2 = feature_indices[k + 2]
            _pair_walk4(
                active, starts, counts, i0, i1, offset, rho, X_binned[:, f0],
                X_binned[:, f1], X_binned[:, f2], X_binned[:, f0], out[f0], out[f1],
                out[f2], spare, missing_bin,
            )  # fmt: skip
            k += 3
        while k < k_hi:
            f = feature_indices[k]
            col = X_binned[:, f]
            h = out[f]
            for i in range(i0, i1):
                d = active[i]
                x = col[d]
                for p in range(starts[i], starts[i] + counts[i]):
                    _add_pair(h, x, col[d + offset[p]], np.float64(rho[p]), missing_bin)
            k += 1
        i0 = i1


@kernel
def _pair_walk_rows(
    X_rows, active, starts, counts, offset, rho, feature_indices, k_lo, k_hi,
    missing_bin, chunk, out,
):  # fmt: skip
    # _pair_walk over the row-major bins X_rows: for each chunk of whole rows, blocks of
    # PAIR_ROW_FEATURES features in turn walk its pairs, each pair's two rows read once
    # for the block.  Each bin receives the pairs in the same order as _pair_walk.
    _zero_pair_features(out, feature_indices, k_lo, k_hi)
    i0 = 0
    while i0 < active.shape[0]:
        i1 = _chunk_end(counts, i0, chunk)
        for kb in range(k_lo, k_hi, PAIR_ROW_FEATURES):
            ke = min(k_hi, kb + PAIR_ROW_FEATURES)
            for i in range(i0, i1):
                d = active[i]
                xa = X_rows[d]
                for p in range(starts[i], starts[i] + counts[i]):
                    xb = X_rows[d + offset[p]]
                    rt = np.float64(rho[p])
                    for k in range(kb, ke):
                        f = feature_indices[k]
                        _add_pair(out[f], xa[f], xb[f], rt, missing_bin)
        i0 = i1


@kernel
def _pair_walk4(
    active, starts, counts, i0, i1, offset, rho, c0, c1, c2, c3, h0, h1, h2, h3, missing_bin,
):  # fmt: skip
    # Four features' walks (columns c0..c3 of the bins, pair histograms h0..h3) of
    # rows active[i0:i1] interleaved pair by pair: four independent chains of
    # additions (a single feature waits on the previous addition to a bin whenever
    # neighbouring pairs share it).  Each feature's bins still see the pairs in order.
    for i in range(i0, i1):
        if i + PAIR_WALK_PREFETCH < i1:  # a later row's bins and pairs (rows lie apart)
            a = active[i + PAIR_WALK_PREFETCH]
            prefetch(c0, a)
            prefetch(c1, a)
            prefetch(c2, a)
            prefetch(c3, a)
            prefetch(offset, starts[i + PAIR_WALK_PREFETCH])
            prefetch(rho, starts[i + PAIR_WALK_PREFETCH])
        d = active[i]
        x0 = c0[d]
        x1 = c1[d]
        x2 = c2[d]
        x3 = c3[d]
        for p in range(starts[i], starts[i] + counts[i]):
            b = d + offset[p]
            rt = np.float64(rho[p])
            _add_pair(h0, x0, c0[b], rt, missing_bin)
            _add_pair(h1, x1, c1[b], rt, missing_bin)
            _add_pair(h2, x2, c2[b], rt, missing_bin)
            _add_pair(h3, x3, c3[b], rt, missing_bin)


@kernel
def _pair_masses(rows, ptr, offset, rho, live, mass, ordered, massive):
    # mass: IN/OUT float64 (n_rows_shard, 2) scratch, zero on entry and on return (the
    # node's pairs have both documents among ``rows``, whose entries are reset);
    # ordered: OUT float64 (>= len(rows), 2), massive: OUT (>= len(rows),): out_d, in_d
    # and d of the rows whose out_d or in_d is not zero, in the order of rows.  Returns
    # their number.
    for i in range(rows.shape[0]):
        d = rows[i]
        out_d = 0.0
        for p in range(ptr[d], ptr[d] + live[d]):
            r = np.float64(rho[p])
            out_d += r
            mass[d + offset[p], 1] += r
        mass[d, 0] = out_d
    m = 0
    for i in range(rows.shape[0]):
        d = rows[i]
        a = mass[d, 0]
        b = mass[d, 1]
        if a != 0.0 or b != 0.0:
            ordered[m, 0] = a
            ordered[m, 1] = b
            massive[m] = d
            m += 1
        mass[d, 0] = 0.0
        mass[d, 1] = 0.0
    return m


@kernel
def _split_node_pairs_body(
    rows, t0, t1, mid, ptr, offset, rho, live, cross, col, bin_idx, missing_left, missing_bin,
    longest, row_sums,
):  # fmt: skip
    # Rows rows[t0:t1] of split_node_pairs: each row's node pairs reordered in place
    # into [partner on the row's side | across] (each part in its previous order; a
    # scratch of the longest slice), live/cross set to their numbers, row_sums[t] the
    # rho of the first part (in order).  Returns the rows' (n_left, n_right, n_crossing).
    scratch_o = np.empty(longest, dtype=offset.dtype)
    scratch_r = np.empty(longest, dtype=rho.dtype)
    n_l = 0
    n_r = 0
    n_x = 0
    for t in range(t0, t1):
        if t + 2 * PAIR_SPLIT_PREFETCH < t1:  # later rows' entries (rows lie apart)
            far = rows[t + 2 * PAIR_SPLIT_PREFETCH]
            prefetch(ptr, far)
            prefetch(live, far)
            near = rows[t + PAIR_SPLIT_PREFETCH]
            prefetch(offset, ptr[near])
            prefetch(rho, ptr[near])
            prefetch(col, near)
        d = rows[t]
        left = t < mid
        start = ptr[d]
        n_live = live[d]
        # the row's slice as views counted from 0: an index LLVM knows is >= 0 carries
        # no negative-index wrap-around
        off_d = offset[start : start + n_live]
        rho_d = rho[start : start + n_live]
        w = 0
        k = 0
        total = 0.0
        for p in range(n_live):
            # no data-dependent branch (which side a partner lies on is a coin toss
            # near the root): each pair is written to both places, and only the one
            # of its side advances (the kept place w <= p was read already); adding
            # -0.0 leaves every sum as it is, -0.0 included
            o = off_d[p]
            rp = rho_d[p]
            b = col[d + o]
            j_left = missing_left if b == missing_bin else b <= bin_idx
            same = j_left == left
            off_d[w] = o
            rho_d[w] = rp
            scratch_o[k] = o
            scratch_r[k] = rp
            total += np.float64(rp) if same else -0.0
            w += same
            k += not same
        for u in range(k):
            off_d[w + u] = scratch_o[u]
            rho_d[w + u] = scratch_r[u]
        live[d] = w
        cross[d] = k
        row_sums[t] = total
        if left:
            n_l += w
        else:
            n_r += w
        n_x += k
    return n_l, n_r, n_x


@kernel
def _pair_mass_histogram_body(X_binned, rows, ordered, feature_indices, k_lo, k_hi, out):
    # out: OUT (n_features, n_bins, 2) float64: per bin of feature feature_indices[k],
    # the sums of ordered[i, :] over the rows i (rows[i]) in that bin, k in k_lo..k_hi-1.
    # Four sub-histograms take consecutive rows in turn (as _accumulate2: independent
    # chains of additions when neighbouring rows share a bin), summed at the end.
    n_bins = out.shape[1]
    n = rows.shape[0]
    m4 = n - (n % 4)
    sub = np.empty((4, n_bins, 2))
    for k in range(k_lo, k_hi):
        f = feature_indices[k]
        col = X_binned[:, f]
        sub[:] = 0.0
        for i in range(0, m4, 4):
            b0 = col[rows[i]]
            b1 = col[rows[i + 1]]
            b2 = col[rows[i + 2]]
            b3 = col[rows[i + 3]]
            sub[0, b0, 0] += ordered[i, 0]
            sub[0, b0, 1] += ordered[i, 1]
            sub[1, b1, 0] += ordered[i + 1, 0]
            sub[1, b1, 1] += ordered[i + 1, 1]
            sub[2, b2, 0] += ordered[i + 2, 0]
            sub[2, b2, 1] += ordered[i + 2, 1]
            sub[3, b3, 0] += ordered[i + 3, 0]
            sub[3, b3, 1] += ordered[i + 3, 1]
        for i in range(m4, n):
            b0 = col[rows[i]]
            sub[0, b0, 0] += ordered[i, 0]
            sub[0, b0, 1] += ordered[i, 1]
        o = out[f]
        for b in range(n_bins):
            o[b, 0] = (sub[0, b, 0] + sub[1, b, 0]) + (sub[2, b, 0] + sub[3, b, 0])
            o[b, 1] = (sub[0, b, 1] + sub[1, b, 1]) + (sub[2, b, 1] + sub[3, b, 1])


@kernel
def _pair_mass_rows_body(X_rows, rows, ordered, f_lo, f_hi, out):
    # The row-major pair-mass histogram of features f_lo..f_hi-1 (as
    # _histogram_rows_body): OUT out[f_lo:f_hi] (n_bins, 2) sums of ordered[i, :].
    n = rows.shape[0]
    out[f_lo:f_hi] = 0.0
    for i in range(n):
        if i + ROW_PREFETCH_DISTANCE < n:
            ahead = X_rows[rows[i + ROW_PREFETCH_DISTANCE]]
            prefetch(ahead, f_lo)
            prefetch(ahead, f_hi - 1)
        r = rows[i]
        a = ordered[i, 0]
        b = ordered[i, 1]
        for f in range(f_lo, f_hi):
            k = X_rows[r, f]
            out[f, k, 0] += a
            out[f, k, 1] += b


# --- references ---


def _build_histogram_reference(
    X_binned, sample_indices, gradients, hessians, n_bins
) -> NDArray[np.float64]:
    """Plain NumPy histogram of the rows ``sample_indices`` for every feature."""
    n_features = X_binned.shape[1]
    out = np.zeros((n_features, n_bins, N_HIST_STATS), dtype=np.float64)
    g = gradients[sample_indices].astype(np.float64)
    h = hessians[sample_indices].astype(np.float64)
    for f in range(n_features):
        bins = X_binned[sample_indices, f].astype(np.intp)
        out[f, :, 0] = np.bincount(bins, weights=g, minlength=n_bins)
        out[f, :, 1] = np.bincount(bins, weights=h, minlength=n_bins)
        out[f, :, 2] = np.bincount(bins, minlength=n_bins)
    return out


def _node_pairs_reference(rows, pairs, live, cross, crossing=False):
    """Plain NumPy: the node's pairs ``(doc_i, doc_j, rho)`` that
    :func:`build_pair_histogram` walks, in its order (float64 ``rho``)."""
    rows = np.asarray(rows, dtype=np.intp)
    start = pairs.ptr[rows] + (live[rows] if crossing else 0)
    count = cross[rows] if crossing else live[rows]
    pos = np.concatenate(
        [np.arange(s0, s0 + c, dtype=np.intp) for s0, c in zip(start, count, strict=True)]
        or [np.zeros(0, np.intp)]
    )
    doc_i = np.repeat(rows, count)
    doc_j = doc_i + pairs.offset[pos].astype(np.intp)
    return doc_i, doc_j, pairs.rho[pos].astype(np.float64)


def _pair_histogram_reference(
    X_binned, doc_i, doc_j, rho, pair_indices, feature_indices, missing_bin, n_bins
) -> NDArray[np.float64]:
    """Plain NumPy pair histograms (see :func:`build_pair_histogram`); zeros for the
    features not selected."""
    out = np.zeros((X_binned.shape[1], n_bins, N_HIST_STATS), dtype=np.float64)
    p = np.asarray(pair_indices, dtype=np.intp)
    r = rho[p]
    for f in feature_indices:
        bi = X_binned[doc_i[p], f].astype(np.intp)
        bj = X_binned[doc_j[p], f].astype(np.intp)
        hi = np.maximum(bi, bj)
        lo = np.minimum(bi, bj)
        one_missing = (hi == missing_bin) & (lo != missing_bin)
        out[f, :, 0] = np.bincount(hi, weights=r, minlength=n_bins)
        out[f, :, 1] = np.bincount(lo, weights=r, minlength=n_bins)
        out[f, :, 2] = np.bincount(lo[one_missing], weights=r[one_missing], minlength=n_bins)
    return out

"""Gradient/hessian histograms per feature, built by Numba kernels.

A histogram is a float64 array of shape ``(n_features, n_bins, 3)`` holding, per bin, the
sum of gradients, the sum of hessians and the document count (``_config.HIST_*``).

Named tricks (sklearn/LightGBM):

* **root**: all rows, no gather.
* **brute**: gradients of the node's rows are first gathered into ``ordered_gradients``
  (contiguous, so each feature's pass reads them sequentially), then every selected feature
  is scanned in parallel.
* **subtraction**: only the smaller child is built; the larger is ``parent - smaller``,
  computed in place in the parent's buffer.

:func:`reduce_histograms` is the single point where per-shard histograms are combined; a
distributed backend sums shard histograms there (element-wise sum is exact in the sense
that it is order-independent up to float64 rounding of a fixed-order sum).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import N_HIST_STATS, SUM_DTYPE
from ltrboost._numba import kernel, parallel_kernel, prange


class HistogramPool:
    """Reusable histogram buffers (allocated once per training, not per node)."""

    def __init__(self, n_features: int, n_bins: int) -> None:
        self.shape = (n_features, n_bins, N_HIST_STATS)
        self._free: list[NDArray[np.float64]] = []

    def get(self) -> NDArray[np.float64]:
        if self._free:
            return self._free.pop()
        return np.empty(self.shape, dtype=SUM_DTYPE)

    def release(self, hist: NDArray[np.float64] | None) -> None:
        if hist is not None:
            self._free.append(hist)


def reduce_histograms(histograms: list[NDArray[np.float64]]) -> NDArray[np.float64]:
    """Sum histograms computed on disjoint shards of a node's rows (fixed order)."""
    out = histograms[0].copy()
    for h in histograms[1:]:
        out += h
    return out


# --- kernels ---


@parallel_kernel
def _build_histogram_root(X_binned, gradients, hessians, feature_indices, hist_out):
    # X_binned: IN uint8 (n_samples, n_features) F-order; gradients/hessians: IN float32
    # (n_samples,); feature_indices: IN int32 selected features; hist_out: OUT float64
    # (n_features, n_bins, 3) -- only rows of selected features are written.
    n_samples = X_binned.shape[0]
    n_bins = hist_out.shape[1]
    for k in prange(feature_indices.shape[0]):
        f = feature_indices[k]
        h = hist_out[f]
        for b in range(n_bins):
            h[b, 0] = 0.0
            h[b, 1] = 0.0
            h[b, 2] = 0.0
        col = X_binned[:, f]
        for i in range(n_samples):
            b = col[i]
            h[b, 0] += gradients[i]
            h[b, 1] += hessians[i]
            h[b, 2] += 1.0


@parallel_kernel
def _gather(sample_indices, gradients, hessians, ordered_gradients, ordered_hessians):
    # ordered_*: OUT float32 (n_node,) = gradients[sample_indices]
    for i in prange(sample_indices.shape[0]):
        idx = sample_indices[i]
        ordered_gradients[i] = gradients[idx]
        ordered_hessians[i] = hessians[idx]


@parallel_kernel
def _build_histogram(
    X_binned, sample_indices, ordered_gradients, ordered_hessians, feature_indices,
    hist_out,
):
    # sample_indices: IN int32 rows of the node; ordered_*: IN float32, gathered in the
    # same order; hist_out: OUT (n_features, n_bins, 3), selected features only.
    n = sample_indices.shape[0]
    n_bins = hist_out.shape[1]
    for k in prange(feature_indices.shape[0]):
        f = feature_indices[k]
        h = hist_out[f]
        for b in range(n_bins):
            h[b, 0] = 0.0
            h[b, 1] = 0.0
            h[b, 2] = 0.0
        col = X_binned[:, f]
        for i in range(n):
            b = col[sample_indices[i]]
            h[b, 0] += ordered_gradients[i]
            h[b, 1] += ordered_hessians[i]
            h[b, 2] += 1.0


@parallel_kernel
def _subtract_histograms(parent_inout, sibling, feature_indices):
    # parent_inout: IN parent histogram, OUT parent - sibling (the larger child's).
    n_bins = parent_inout.shape[1]
    for k in prange(feature_indices.shape[0]):
        f = feature_indices[k]
        for b in range(n_bins):
            parent_inout[f, b, 0] -= sibling[f, b, 0]
            parent_inout[f, b, 1] -= sibling[f, b, 1]
            parent_inout[f, b, 2] -= sibling[f, b, 2]


@kernel
def _sum_node(ordered_gradients, ordered_hessians):
    g = 0.0
    h = 0.0
    for i in range(ordered_gradients.shape[0]):
        g += ordered_gradients[i]
        h += ordered_hessians[i]
    return g, h


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

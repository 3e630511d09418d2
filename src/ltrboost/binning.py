"""Quantile binning of raw features into a uint8 matrix (one extra bin for missing values).

For each feature, up to ``max_bins`` bins are made from midpoints between distinct values
(when a feature has at most ``max_bins`` distinct values) or from quantiles of a subsample.
A value ``x`` maps to bin ``#{thresholds < x}``: bin ``b`` holds ``thresholds[b-1] < x <=
thresholds[b]``, so the split "bin <= b" is exactly the split "x <= thresholds[b]" on raw
data and a model trained on binned data predicts identically on raw data.
NaN maps to the missing bin ``max_bins`` (the last one).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import MAX_BINS, X_BINNED_DTYPE
from ltrboost._numba import kernel, over_rows

# Thresholds are computed on at most this many rows (sklearn's subsample=2e5): quantiles
# of 200k values are accurate to far below a bin width and binning stays O(n).
DEFAULT_SUBSAMPLE = 200_000


class BinMapper:
    """Learn per-feature bin thresholds and map features to bins.

    Parameters
    ----------
    max_bins : int, default=255
        Bins for non-missing values, 2..255.  Missing values use one extra bin, index
        ``max_bins``.
    subsample : int or None, default=200_000
        Rows used to compute quantiles (None: all rows).
    random_state : int or None
        Seeds the subsample.
    min_samples_bin : int, default=1
        A bin of a feature with few distinct values is closed only once it holds this
        many documents (LightGBM's ``min_data_in_bin``; the booster uses 3 like it).

    Attributes
    ----------
    bin_thresholds_ : list of ndarray of float64
        ``bin_thresholds_[f]`` is sorted and strictly increasing; feature f has
        ``len(bin_thresholds_[f]) + 1`` value bins.
    n_bins_non_missing_ : ndarray of shape (n_features,), dtype=int32
    missing_bin_ : int (= max_bins)
    has_missing_ : ndarray of shape (n_features,), dtype=bool
    """

    def __init__(
        self,
        max_bins: int = MAX_BINS,
        subsample: int | None = DEFAULT_SUBSAMPLE,
        random_state: int | None = None,
        min_samples_bin: int = 1,
    ) -> None:
        if not 2 <= int(max_bins) <= MAX_BINS:
            raise ValueError(f"max_bins={max_bins} must be between 2 and {MAX_BINS}")
        if int(min_samples_bin) < 1:
            raise ValueError(f"min_samples_bin={min_samples_bin} must be >= 1")
        self.min_samples_bin = int(min_samples_bin)
        self.max_bins = int(max_bins)
        self.subsample = subsample
        self.random_state = random_state

    @property
    def missing_bin_(self) -> int:
        return self.max_bins

    @property
    def n_bins_total(self) -> int:
        """Bins per feature in histograms: value bins plus the missing bin."""
        return self.max_bins + 1

    def fit(self, X: NDArray[np.floating]) -> BinMapper:
        n_samples, n_features = X.shape
        if self.subsample is not None and n_samples > self.subsample:
            rng = np.random.default_rng(self.random_state)
            rows = np.sort(rng.choice(n_samples, self.subsample, replace=False))
            Xs = X[rows]
        else:
            Xs = X
        self.bin_thresholds_ = [
            _find_thresholds(Xs[:, f], self.max_bins, self.min_samples_bin)
            for f in range(n_features)
        ]
        self.n_bins_non_missing_ = np.array(
            [t.shape[0] + 1 for t in self.bin_thresholds_], dtype=np.int32
        )
        self.has_missing_ = (
            np.isnan(Xs).any(axis=0) if Xs.size else np.zeros(n_features, dtype=bool)
        )
        self.n_features_ = n_features
        return self

    def thresholds_matrix(self) -> NDArray[np.float64]:
        """Thresholds padded with +inf into one (n_features, max_bins) array for kernels."""
        out = np.full((self.n_features_, self.max_bins), np.inf, dtype=np.float64)
        for f, t in enumerate(self.bin_thresholds_):
            out[f, : t.shape[0]] = t
        return out

    def transform(self, X: NDArray[np.floating]) -> NDArray[np.uint8]:
        """Binned matrix, shape (n_samples, n_features), dtype uint8, Fortran order."""
        if X.shape[1] != self.n_features_:
            raise ValueError(
                f"X has {X.shape[1]} features but the binner was fitted with "
                f"{self.n_features_}"
            )
        out = np.empty(X.shape, dtype=X_BINNED_DTYPE, order="F")
        _map_to_bins(
            X,
            self.thresholds_matrix(),
            self.n_bins_non_missing_,
            self.missing_bin_,
            out,
        )
        # Features that had no NaN at fit time may still have NaN later: they go to the
        # missing bin, and the split stored for such a feature decides their side.
        return out

    def fit_transform(self, X: NDArray[np.floating]) -> NDArray[np.uint8]:
        return self.fit(X).transform(X)

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_bins": self.max_bins,
            "thresholds": [t.tolist() for t in self.bin_thresholds_],
        }


def _find_thresholds(
    col: NDArray[np.floating], max_bins: int, min_samples_bin: int = 1
) -> NDArray[np.float64]:
    """Bin thresholds of one feature (NaN ignored): midpoints or quantiles.

    With few distinct values, each gets its own bin, except that a bin is only closed
    once it holds ``min_samples_bin`` documents (LightGBM's ``min_data_in_bin``): rare
    values are merged into their upper neighbour, so splits cannot isolate a handful of
    documents by a value seen once (a regulariser that matters on small sparse data).
    """
    col = np.asarray(col, dtype=np.float64)
    col = col[~np.isnan(col)]
    if col.size == 0:
        return np.zeros(0, dtype=np.float64)
    col = np.sort(col)
    new_value = np.empty(col.shape[0], dtype=bool)
    new_value[0] = True
    np.not_equal(col[1:], col[:-1], out=new_value[1:])
    distinct = col[new_value]
    if distinct.shape[0] <= max_bins:
        if min_samples_bin > 1 and distinct.shape[0] > 1:
            starts = np.flatnonzero(new_value)
            counts = np.diff(np.r_[starts, col.shape[0]])
            keep = _greedy_bin_ends(counts, min_samples_bin)
            lower = distinct[:-1][keep]
            upper = distinct[1:][keep]
        else:
            lower = distinct[:-1]
            upper = distinct[1:]
        mids = lower * 0.5 + upper * 0.5  # no overflow near +-max
        # The midpoint of two adjacent floats can round onto the upper one; then use the
        # lower one, so both values stay in different bins (the rule is x <= t).
        mids = np.where(mids >= upper, lower, mids)
    else:
        # Quantiles of the sorted column; "midpoint"-like interpolation keeps the
        # thresholds between observed values, so no bin is empty by construction.
        # (col is sorted, so the percentiles are direct index look-ups)
        percentiles = np.linspace(0, 100, num=max_bins + 1)[1:-1]
        pos = percentiles / 100.0 * (col.shape[0] - 1)
        lo = np.floor(pos).astype(np.intp)
        hi = np.ceil(pos).astype(np.intp)
        mids = col[lo] * 0.5 + col[hi] * 0.5
        mids = np.unique(mids)
    mids = mids[np.isfinite(mids)]
    return np.ascontiguousarray(mids, dtype=np.float64)


def _greedy_bin_ends(counts: NDArray[np.int64], min_count: int) -> NDArray[np.bool_]:
    """For each gap between consecutive distinct values: close a bin there?

    Bins are closed greedily from the smallest value once they hold ``min_count``
    documents; the last bin takes what is left, and is merged into the previous one
    when it is too small.
    """
    n_gaps = counts.shape[0] - 1
    keep = np.zeros(n_gaps, dtype=bool)
    acc = 0
    last_cut = -1
    for k in range(n_gaps):
        acc += counts[k]
        if acc >= min_count:
            keep[k] = True
            acc = 0
            last_cut = k
    tail = counts[last_cut + 1 :].sum()
    if last_cut >= 0 and tail < min_count:
        keep[last_cut] = False
    return keep


# --- kernels ---


def _map_to_bins(X, thresholds, n_bins_non_missing, missing_bin, out):
    # X: IN float (n_samples, n_features), any order; thresholds: IN float64
    # (n_features, max_bins) padded with +inf; out: OUT uint8 (n_samples, n_features).
    # Rows are independent: blocks of rows on threads (no parfor to compile).
    over_rows(
        _map_to_bins_rows, X.shape[0], X, thresholds, n_bins_non_missing, missing_bin,
        out, min_rows_per_thread=_MAP_ROWS_PER_THREAD, align=_MAP_BLOCK,
    )  # fmt: skip


_MAP_BLOCK = 256
_MAP_ROWS_PER_THREAD = 4096


@kernel
def _map_to_bins_rows(r0, r1, X, thresholds, n_bins_non_missing, missing_bin, out):
    # rows r0..r1-1 of _map_to_bins.  Rows are processed in blocks so that a block of a
    # C-ordered X stays in cache while every feature of it is binned (a plain
    # per-feature pass strides through all of X).
    n_features = X.shape[1]
    block = 256
    for lo_row in range(r0, r1, block):
        hi_row = min(r1, lo_row + block)
        for f in range(n_features):
            n_thr = n_bins_non_missing[f] - 1
            thr = thresholds[f]
            for i in range(lo_row, hi_row):
                x = X[i, f]
                if np.isnan(x):
                    out[i, f] = missing_bin
                else:
                    # binary search: number of thresholds strictly below x
                    lo = 0
                    hi = n_thr
                    while lo < hi:
                        mid = (lo + hi) >> 1
                        if thr[mid] < x:
                            lo = mid + 1
                        else:
                            hi = mid
                    out[i, f] = lo


# --- references ---


def _map_to_bins_reference(X, thresholds_list, missing_bin):
    out = np.empty(X.shape, dtype=np.uint8)
    for f, thr in enumerate(thresholds_list):
        col = np.asarray(X[:, f], dtype=np.float64)
        b = np.searchsorted(thr, col, side="left")
        b[np.isnan(col)] = missing_bin
        out[:, f] = b
    return out

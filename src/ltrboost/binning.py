"""Quantile binning of raw features into a uint8 matrix (one extra bin for missing values).

For each feature, up to ``max_bins`` bins are made from midpoints between distinct values
(when a feature has at most ``max_bins`` distinct values) or, on a subsample, by
LightGBM's bin finder (zero a bin of its own, frequent values bins of their own, the rest
in bins of equal counts; :func:`_many_value_cuts`), thresholds again at midpoints.
A value ``x`` maps to bin ``#{thresholds < x}``: bin ``b`` holds ``thresholds[b-1] < x <=
thresholds[b]``, so the split "bin <= b" is exactly the split "x <= thresholds[b]" on raw
data and a model trained on binned data predicts identically on raw data.
NaN maps to the missing bin ``max_bins`` (the last one).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltrboost._callsite import external_stacklevel
from ltrboost._checks import _is_int
from ltrboost._config import MAX_BINS, X_BINNED_DTYPE, env_count, memory_budget
from ltrboost._numba import kernel, over_rows
from ltrboost.params import ParameterError

# Thresholds are computed on at most this many rows (sklearn's subsample=2e5, LightGBM's
# bin_construct_sample_cnt): bin edges from 200k values are accurate to far below a bin
# width and binning stays O(n).
DEFAULT_SUBSAMPLE = 200_000


class BinMapper:
    """Learn per-feature bin thresholds and map features to bins.

    Parameters
    ----------
    max_bins : int, default=255
        Bins for non-missing values, 2..255.  Missing values use one extra bin, index
        ``max_bins``.
    subsample : int or None, default=200_000
        Rows used to find the thresholds, an integer >= 1 (None: all rows).
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
        # integers only (as BoosterParams checks them): 2.7 was truncated to 2 bins, "8"
        # read as 8, subsample=0 fitted every column on no rows (one bin each)
        if not _is_int(max_bins):
            raise ValueError(f"max_bins={max_bins!r} must be an integer")
        if not 2 <= int(max_bins) <= MAX_BINS:
            raise ValueError(f"max_bins={max_bins} must be between 2 and {MAX_BINS}")
        if not _is_int(min_samples_bin):
            raise ValueError(f"min_samples_bin={min_samples_bin!r} must be an integer")
        if int(min_samples_bin) < 1:
            raise ValueError(f"min_samples_bin={min_samples_bin} must be >= 1")
        if subsample is not None and not (_is_int(subsample) and int(subsample) >= 1):
            raise ValueError(
                f"subsample={subsample!r} must be an integer >= 1 or None (None: all rows)"
            )
        # the kernels take an int64; no bin holds more documents, so a larger count
        # bins exactly as this one does
        self.min_samples_bin = min(int(min_samples_bin), int(np.iinfo(np.int64).max))
        self.max_bins = int(max_bins)
        self.subsample = None if subsample is None else int(subsample)
        self.random_state = random_state

    @property
    def missing_bin_(self) -> int:
        return self.max_bins

    def fit(self, X: Any) -> BinMapper:
        """Learn the thresholds of every column of ``X`` (dense, or SciPy sparse: the
        thresholds are those of the densified matrix, computed without densifying)."""
        n_samples, n_features = X.shape
        if self.subsample is not None and n_samples > self.subsample:
            rng = np.random.default_rng(self.random_state)
            rows = np.sort(rng.choice(n_samples, self.subsample, replace=False))
            Xs = as_csc(X.tocsr()[rows]) if is_sparse(X) else X[rows]
        else:
            Xs = X
        if is_sparse(Xs):
            Xs = as_csc(Xs)
            self.bin_thresholds_ = _sparse_thresholds(Xs, self.max_bins, self.min_samples_bin)
            col_of = np.repeat(np.arange(n_features), np.diff(Xs.indptr))
            self.has_missing_ = np.zeros(n_features, dtype=bool)
            self.has_missing_[col_of[np.isnan(Xs.data)]] = True
        else:
            self.bin_thresholds_ = [
                _find_thresholds(Xs[:, f], self.max_bins, self.min_samples_bin)
                for f in range(n_features)
            ]
            self.has_missing_ = (
                np.isnan(Xs).any(axis=0) if Xs.size else np.zeros(n_features, dtype=bool)
            )
        self.n_bins_non_missing_ = np.array(
            [t.shape[0] + 1 for t in self.bin_thresholds_], dtype=np.int32
        )
        self.n_features_ = n_features
        return self

    def thresholds_matrix(self) -> NDArray[np.float64]:
        """Thresholds padded with +inf into one (n_features, max_bins) array for kernels."""
        out = np.full((self.n_features_, self.max_bins), np.inf, dtype=np.float64)
        for f, t in enumerate(self.bin_thresholds_):
            out[f, : t.shape[0]] = t
        return out

    def transform(self, X: Any) -> NDArray[np.uint8]:
        """Binned matrix, shape (n_samples, n_features), dtype uint8, Fortran order.

        ``X`` may be SciPy sparse: it is binned column by column from CSC (an absent
        entry is a zero), never densified as floats."""
        if X.shape[1] != self.n_features_:
            raise ValueError(
                f"X has {X.shape[1]} features but the binner was fitted with {self.n_features_}"
            )
        out = np.empty(X.shape, dtype=X_BINNED_DTYPE, order="F")
        if is_sparse(X):
            Xc = as_csc(X)
            if Xc.shape[0] > 0:
                _map_to_bins_csc(
                    Xc.indptr,
                    Xc.indices,
                    Xc.data,
                    self.thresholds_matrix(),
                    self.n_bins_non_missing_,
                    self.missing_bin_,
                    out,
                )
            return out
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

    def fit_transform(self, X: Any) -> NDArray[np.uint8]:
        return self.fit(X).transform(X)

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_bins": self.max_bins,
            "thresholds": [t.tolist() for t in self.bin_thresholds_],
        }


def _find_thresholds(
    col: NDArray[np.floating], max_bins: int, min_samples_bin: int = 1
) -> NDArray[np.float64]:
    """Bin thresholds of one feature (NaN ignored): midpoints or greedy bins.

    With few distinct values, each gets its own bin, except that a bin is only closed
    once it holds ``min_samples_bin`` documents (LightGBM's ``min_data_in_bin``): rare
    values are merged into their upper neighbour, so splits cannot isolate a handful of
    documents by a value seen once (a regulariser that matters on small sparse data).
    """
    col = np.asarray(col, dtype=np.float64)
    col = col[~np.isnan(col)]
    if col.size == 0:
        return np.zeros(0, dtype=np.float64)
    distinct, counts = _distinct_counts(np.sort(col))
    return _thresholds_from_counts(distinct, counts, max_bins, min_samples_bin)


def _find_thresholds_sparse(
    stored: NDArray[np.floating], n_rows: int, max_bins: int, min_samples_bin: int = 1
) -> NDArray[np.float64]:
    """:func:`_find_thresholds` of a sparse column of ``n_rows`` rows whose stored
    entries are ``stored`` (explicit zeros and NaN allowed): every absent entry is a
    zero, counted like any other value, so the thresholds equal the dense column's."""
    vals = np.asarray(stored, dtype=np.float64)
    vals = vals[~np.isnan(vals)]
    nonzero = vals[vals != 0.0]
    n_zero = n_rows - stored.shape[0] + (vals.shape[0] - nonzero.shape[0])
    if nonzero.size:
        distinct, counts = _distinct_counts(np.sort(nonzero))
    else:
        distinct = np.zeros(0, dtype=np.float64)
        counts = np.zeros(0, dtype=np.int64)
    if n_zero > 0:
        at = int(np.searchsorted(distinct, 0.0))
        distinct = np.insert(distinct, at, 0.0)
        counts = np.insert(counts, at, n_zero)
    if distinct.size == 0:
        return np.zeros(0, dtype=np.float64)
    return _thresholds_from_counts(distinct, counts, max_bins, min_samples_bin)


def _sparse_thresholds(Xc: Any, max_bins: int, min_samples_bin: int) -> list[NDArray[np.float64]]:
    """:func:`_find_thresholds_sparse` of every column of a canonical CSC matrix: columns
    of at most ``max_bins`` distinct values (the usual sparse column) in one kernel, the
    others (greedy thresholds) in Python."""
    n_rows, n_features = Xc.shape
    thr = np.empty((n_features, max_bins), dtype=np.float64)
    n_thr = np.zeros(n_features, dtype=np.int64)
    done = np.zeros(n_features, dtype=np.bool_)
    if n_features:
        _sparse_few_value_thresholds(
            Xc.indptr, Xc.data, n_rows, max_bins, min_samples_bin, thr, n_thr, done
        )
    out = []
    for f in range(n_features):
        if done[f]:
            out.append(thr[f, : n_thr[f]].copy())
        else:
            stored = Xc.data[Xc.indptr[f] : Xc.indptr[f + 1]]
            out.append(_find_thresholds_sparse(stored, n_rows, max_bins, min_samples_bin))
    return out


@kernel
def _sparse_few_value_thresholds(indptr, data, n_rows, max_bins, min_samples_bin, thr, n_thr, done):
    # Per CSC column f: when the column (stored values plus its implicit zeros, NaN
    # ignored) has at most max_bins distinct values, its midpoint thresholds, computed
    # exactly as _thresholds_from_counts does, go to thr[f, :n_thr[f]] and done[f] is
    # set; otherwise done[f] stays False (many-value path, left to Python).
    n_features = n_thr.shape[0]
    buf = np.empty(n_rows + 1, dtype=np.float64)
    distinct = np.empty(max_bins + 1, dtype=np.float64)
    counts = np.empty(max_bins + 1, dtype=np.int64)
    keep = np.empty(max_bins + 1, dtype=np.bool_)
    for f in range(n_features):
        m = 0
        n_zero = n_rows - (indptr[f + 1] - indptr[f])
        for k in range(indptr[f], indptr[f + 1]):
            x = np.float64(data[k])
            if np.isnan(x):
                continue
            if x == 0.0:
                n_zero += 1
            else:
                buf[m] = x
                m += 1
        vals = np.sort(buf[:m])
        nd = 0
        too_many = False
        zero_placed = n_zero == 0
        for i in range(m + 1):
            if not zero_placed and (i == m or vals[i] > 0.0):
                if nd == max_bins:
                    too_many = True
                    break
                distinct[nd] = 0.0
                counts[nd] = n_zero
                nd += 1
                zero_placed = True
            if i == m:
                break
            x = vals[i]
            if nd > 0 and distinct[nd - 1] == x:
                counts[nd - 1] += 1
            else:
                if nd == max_bins:
                    too_many = True
                    break
                distinct[nd] = x
                counts[nd] = 1
                nd += 1
        if too_many:
            continue
        done[f] = True
        if nd <= 1:
            continue
        for k in range(nd - 1):
            keep[k] = True
        if min_samples_bin > 1:
            acc = 0
            last_cut = -1
            for k in range(nd - 1):
                acc += counts[k]
                if acc >= min_samples_bin:
                    acc = 0
                    last_cut = k
                else:
                    keep[k] = False
            tail = 0
            for k in range(last_cut + 1, nd):
                tail += counts[k]
            if last_cut >= 0 and tail < min_samples_bin:
                keep[last_cut] = False
        n = 0
        for k in range(nd - 1):
            if keep[k]:
                lower = distinct[k]
                upper = distinct[k + 1]
                mid = lower * 0.5 + upper * 0.5
                if mid >= upper:
                    mid = lower
                if np.isfinite(mid):
                    thr[f, n] = mid
                    n += 1
        n_thr[f] = n


def _distinct_counts(col: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Distinct values of a sorted, non-empty, NaN-free column and their counts."""
    new_value = np.empty(col.shape[0], dtype=bool)
    new_value[0] = True
    np.not_equal(col[1:], col[:-1], out=new_value[1:])
    starts = np.flatnonzero(new_value)
    return col[starts], np.diff(np.r_[starts, col.shape[0]])


def _thresholds_from_counts(
    distinct: NDArray[np.float64],
    counts: NDArray[np.int64],
    max_bins: int,
    min_samples_bin: int,
) -> NDArray[np.float64]:
    """Thresholds of a column given as its sorted distinct values and their counts."""
    if distinct.shape[0] <= max_bins:
        if min_samples_bin > 1 and distinct.shape[0] > 1:
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
        cuts = _many_value_cuts(distinct, counts, max_bins, min_samples_bin)
        lower = distinct[cuts]
        upper = distinct[cuts + 1]
        mids = lower * 0.5 + upper * 0.5
        mids = np.where(mids >= upper, lower, mids)
    mids = mids[np.isfinite(mids)]
    return np.ascontiguousarray(mids, dtype=np.float64)


def _many_value_cuts(
    distinct: NDArray[np.float64],
    counts: NDArray[np.int64],
    max_bins: int,
    min_samples_bin: int,
) -> NDArray[np.int64]:
    """Bin boundaries of a column with more than ``max_bins`` distinct values, as
    indices ``i`` (a threshold between ``distinct[i]`` and ``distinct[i + 1]``).

    LightGBM's bin finder (``FindBinWithZeroAsOneBin`` + ``GreedyFindBin``): when the
    column holds zeros, zero is a bin of its own, the negative values get
    ``(max_bins - 1)`` times their share of the non-zero documents and the positive values
    what is left (a column without zeros is cut as one side with ``max_bins`` bins, where
    LightGBM keeps an empty zero bin); inside each side a value
    holding at least ``1 / max_bins`` of the side's documents is a bin of its own and the
    other values are cut greedily into bins of equal document counts (the target is
    recomputed after each bin from what is left).  Unlike plain quantiles, repeated
    values (many zeros, a few frequent values) do not collapse bins: every one of the
    ``max_bins`` bins is used (MQ2008: 9,233 bins over 46 features against 5,326 from
    quantiles), and the training documents fall into the same bins as in LightGBM.
    """
    n = distinct.shape[0]
    cuts = np.empty(max_bins + 2, dtype=np.int64)
    neg_end = int(np.searchsorted(distinct, 0.0, side="left"))
    pos_start = int(np.searchsorted(distinct, 0.0, side="right"))
    total = int(counts.sum())
    n_zero = int(counts[neg_end:pos_start].sum())
    m = 0
    if n_zero == 0:
        m = _greedy_cuts(distinct, counts, 0, n, max_bins, min_samples_bin, cuts, 0)
        return cuts[:m].copy()
    left_bins = 0  # LightGBM's bins on the negative side
    if neg_end > 0 and max_bins > 1:
        share = int(counts[:neg_end].sum()) / (total - n_zero)
        left_max = max(1, int(share * (max_bins - 1)))
        m = _greedy_cuts(distinct, counts, 0, neg_end, left_max, min_samples_bin, cuts, 0)
        left_bins = m + 1
        if neg_end < n:  # the last negative bin ends below zero
            cuts[m] = neg_end - 1
            m += 1
    right_max = max_bins - 1 - left_bins
    if pos_start < n and right_max > 0:
        if pos_start > 0 and (m == 0 or cuts[m - 1] != pos_start - 1):
            cuts[m] = pos_start - 1  # zero (or the negatives) | positives
            m += 1
        m = _greedy_cuts(distinct, counts, pos_start, n, right_max, min_samples_bin, cuts, m)
    return cuts[:m].copy()


@kernel
def _greedy_cuts(distinct, counts, lo, hi, max_bin, min_count, cuts, m):
    """Append to ``cuts[m:]`` the greedy boundaries of ``distinct[lo:hi]`` in at most
    ``max_bin`` bins (LightGBM's ``GreedyFindBin``); returns the new ``m``."""
    nd = hi - lo
    if nd <= 1:
        return m
    total = 0
    for i in range(lo, hi):
        total += counts[i]
    if nd <= max_bin:  # few values: close a bin once it holds min_count documents
        cur = 0
        for i in range(lo, hi - 1):
            cur += counts[i]
            if cur >= min_count:
                cuts[m] = i
                m += 1
                cur = 0
        return m
    if min_count > 0:
        max_bin = max(min(max_bin, total // min_count), 1)
    big = total / max_bin  # a value this frequent is a bin of its own
    rest_bins = max_bin
    rest_count = total
    for i in range(lo, hi):
        if counts[i] >= big:
            rest_bins -= 1
            rest_count -= counts[i]
    mean = rest_count / rest_bins if rest_bins > 0 else np.inf
    n_bins = 0
    cur = 0
    for i in range(lo, hi - 1):
        is_big = counts[i] >= big
        if not is_big:
            rest_count -= counts[i]
        cur += counts[i]
        if is_big or cur >= mean or (counts[i + 1] >= big and cur >= max(1.0, mean * 0.5)):
            cuts[m] = i
            m += 1
            n_bins += 1
            if n_bins >= max_bin - 1:
                break
            cur = 0
            if not is_big:
                rest_bins -= 1
                mean = rest_count / rest_bins if rest_bins > 0 else np.inf
    return m


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


@kernel
def _map_to_bins_csc(indptr, indices, data, thresholds, n_bins_non_missing, missing_bin, out):
    # A CSC matrix (indptr, indices, data) of n_samples = out.shape[0] rows: every row of
    # column f starts in the bin of 0.0, then each stored entry overwrites its row's bin.
    # out: OUT uint8 (n_samples, n_features), Fortran order (a column is contiguous).
    n_samples, n_features = out.shape
    for f in range(n_features):
        n_thr = n_bins_non_missing[f] - 1
        thr = thresholds[f]
        zero_bin = 0
        while zero_bin < n_thr and thr[zero_bin] < 0.0:
            zero_bin += 1
        for i in range(n_samples):
            out[i, f] = zero_bin
        for k in range(indptr[f], indptr[f + 1]):
            x = data[k]
            if np.isnan(x):
                out[indices[k], f] = missing_bin
            else:
                lo = 0
                hi = n_thr
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if thr[mid] < x:
                        lo = mid + 1
                    else:
                        hi = mid
                out[indices[k], f] = lo


# --- sparse input ---


def is_sparse(X: Any) -> bool:
    """A SciPy sparse matrix or array (checked without importing SciPy)."""
    return hasattr(X, "tocsc") and hasattr(X, "nnz")


def as_csc(X: Any) -> Any:
    """``X`` as a canonical CSC matrix (sorted indices, duplicates summed as
    ``toarray`` would); ``X`` itself when it already is one."""
    import scipy.sparse as sp

    Xc = X if sp.isspmatrix_csc(X) else sp.csc_matrix(X)
    if Xc.dtype not in (np.float32, np.float64):
        Xc = Xc.astype(np.float64)
    if not Xc.has_canonical_format:
        Xc = Xc.copy() if Xc is X else Xc
        Xc.sum_duplicates()
    return Xc


# --- references ---


def _map_to_bins_reference(X, thresholds_list, missing_bin):
    out = np.empty(X.shape, dtype=np.uint8)
    for f, thr in enumerate(thresholds_list):
        col = np.asarray(X[:, f], dtype=np.float64)
        b = np.searchsorted(thr, col, side="left")
        b[np.isnan(col)] = missing_bin
        out[:, f] = b
    return out


# --- features that cannot split ---


class UsedFeatures:
    """The columns of a training matrix that can split, and the maps to and from them.

    A column is *used* when it holds at least two distinct values, NaN counting as one
    value (a column of one value and NaNs can still split "missing" from the rest).  A
    column that never occurs in a sparse file (all zero, or all NaN under
    ``--missing nan``) or is constant cannot be chosen by any split, so training bins,
    histograms and searches only the used columns (LightGBM drops such "trivial"
    features the same way) and the trees are written with the original column ids: the
    model, its predictions and its random draws are the same as if every column had
    been kept, while memory and time no longer depend on the unused ones.

    Attributes
    ----------
    n_features : int
        Columns of the full matrix.
    ids : ndarray of int32, sorted
        Original ids of the used columns; a compact feature ``k`` is column ``ids[k]``.
    all_used : bool
        True when nothing is dropped (then every method is the identity).
    """

    def __init__(self, X: NDArray[np.floating]) -> None:
        self.n_features = int(X.shape[1])
        varies = np.zeros(self.n_features, dtype=np.bool_)
        if X.shape[0] > 0 and X.shape[1] > 0:
            if is_sparse(X):
                Xc = as_csc(X)
                _sparse_columns_vary(Xc.indptr, Xc.data, Xc.shape[0], varies)
            else:
                _columns_vary(X, varies)
        self.ids = np.flatnonzero(varies).astype(np.int32)
        self.all_used = self.ids.shape[0] == self.n_features
        if self.n_used == 0:
            warnings.warn(
                f"all {self.n_features} feature columns are constant (or absent): "
                "no tree can split, the model predicts one constant score",
                UserWarning,
                stacklevel=external_stacklevel(),
            )

    @property
    def n_used(self) -> int:
        return int(self.ids.shape[0])

    def take(self, X: Any) -> Any:
        """The used columns of ``X`` (``X`` itself when all are used; a SciPy sparse
        ``X`` gives a CSC matrix)."""
        if self.all_used:
            return X
        if is_sparse(X):
            return as_csc(X)[:, self.ids]
        return np.ascontiguousarray(X[:, self.ids])

    def to_compact(self, feature_ids: NDArray[np.int32] | None):
        """Original ids (e.g. a ``colsample_bytree`` draw) -> compact ids of the used
        ones among them (None stays None: all features)."""
        if feature_ids is None or self.all_used:
            return feature_ids
        pos = np.searchsorted(self.ids, feature_ids)
        pos = np.minimum(pos, max(self.n_used - 1, 0))
        keep = self.ids[pos] == feature_ids if self.n_used else np.zeros(feature_ids.shape, bool)
        return pos[keep].astype(np.int32)

    def to_original(self, nodes: NDArray) -> NDArray:
        """A copy of a tree's nodes whose ``feature_idx`` are original column ids."""
        if self.all_used:
            return nodes
        out = nodes.copy()
        inner = out["is_leaf"] == 0
        out["feature_idx"][inner] = self.ids[out["feature_idx"][inner]]
        return out


# Histograms of one node are n_features x (max_bins + 1) x 3 float64; a training run
# may hold one per open leaf (best-first growth keeps every splittable leaf's) plus the
# OLE pair histogram.  Refuse up front rather than fail in the middle of a tree.
_HISTOGRAM_LIMIT_ENV = "LTRBOOST_MAX_HISTOGRAM_BYTES"


def histogram_memory_limit() -> int:
    """Bytes the histograms of a training run may take.

    ``$LTRBOOST_MAX_HISTOGRAM_BYTES`` when set, else half of what this process may
    allocate (:func:`ltrboost._config.memory_budget`: physical memory, a cgroup memory
    limit, ``ulimit -v``)."""
    return _histogram_limit()[0]


def _histogram_limit() -> tuple[int, str]:
    """:func:`histogram_memory_limit` and where it comes from, for the message."""
    if os.environ.get(_HISTOGRAM_LIMIT_ENV):
        return env_count(_HISTOGRAM_LIMIT_ENV, 0), f"${_HISTOGRAM_LIMIT_ENV}"
    budget, what = memory_budget()
    return max(1, budget // 2), f"half of {what}"


def check_histogram_memory(
    used: UsedFeatures, params: Any, n_samples: int, with_pairs: bool
) -> None:
    """Raise ValueError when the histograms of training would not fit.

    One histogram is ``n_used_features * (max_bins + 1) * 3 * 8`` bytes.  A grower
    holds one per splittable leaf plus the one being built: at most ``min(
    max_leaf_nodes, 2 ** max_depth, n_samples // (2 * min_samples_leaf)) + 1`` (the
    splittable leaves are disjoint and hold ``2 * min_samples_leaf`` rows each).  OLE
    (``with_pairs``) keeps a pair histogram per splittable leaf too (for its children's
    subtraction), plus the split's two scratch ones (the smaller child's, the crossing
    pairs'), the builder's own and its pair-mass histogram: ``leaves + 4`` more; 4 more
    only when ``ole_top_features`` is below the features of every tree (the grower
    subtracts only when k is at least a tree's features: :func:`_keeps_pair_histograms`).
    ``params``: a :class:`~ltrboost.booster.BoosterParams`.
    """
    max_bins = int(params.max_bins)
    leaves = int(params.max_leaf_nodes)
    if params.max_depth is not None:
        leaves = min(leaves, 2 ** min(int(params.max_depth), 62))
    leaves = min(leaves, max(1, int(n_samples) // (2 * int(params.min_samples_leaf))))
    per_hist = used.n_used * (max_bins + 1) * 3 * 8
    if not with_pairs:
        n_pair_hist = 0
    elif _keeps_pair_histograms(used, params):
        n_pair_hist = leaves + 4
    else:
        n_pair_hist = 4
    n_hist = leaves + 1 + n_pair_hist
    need = per_hist * n_hist
    limit, source = _histogram_limit()
    if need > limit:
        kinds = " (gradient and OLE pair histograms)" if with_pairs else ""
        raise ParameterError(
            f"training needs {need / 2**30:.1f} GiB ({need} bytes) of histograms "
            f"({used.n_used} used features x {max_bins + 1} bins x 3 x 8 bytes x "
            f"{n_hist} nodes in flight{kinds}; {used.n_features - used.n_used} of "
            f"{used.n_features} columns are constant or absent and cost nothing), "
            f"over the limit of {limit / 2**30:.1f} GiB ({limit} bytes, {source}): "
            f"lower max_bins or max_leaf_nodes, select features, or raise "
            f"${_HISTOGRAM_LIMIT_ENV}"
        )


def _keeps_pair_histograms(used: Any, params: Any) -> bool:
    """Whether some tree of OLE may keep a pair histogram per splittable leaf: exact
    OLE, or ``ole_top_features=k`` at least the fewest features a tree can hold (its
    ``colsample_bytree`` draw of all columns less the constant ones; the grower
    subtracts when k is at least the tree's features).  True when ``used`` only bounds
    the columns used (``n_used_is_bound``: any of them may be constant)."""
    k = params.ole_top_features
    if k is None or getattr(used, "n_used_is_bound", False):
        return True
    fewest = used.n_used
    if params.colsample_bytree < 1.0:  # booster._draw_features' count
        drawn = max(1, int(round(params.colsample_bytree * used.n_features)))
        fewest = max(0, drawn - (used.n_features - used.n_used))
    return int(k) >= fewest


def _columns_vary(X: NDArray[np.floating], out: NDArray[np.bool_]) -> None:
    """``out[f]`` (OUT bool, n_features): column ``f`` of ``X`` (IN, n_samples >= 1)
    holds two distinct values, NaN counting as one value (and 0.0 == -0.0).

    NumPy, not a kernel (one fewer first-run compilation, ~0.35 s): rows are compared
    with the first one a block at a time, and only the columns not yet seen to vary;
    usually every column varies within the first block.  Each block costs a few
    temporaries of at most ``_VARY_BLOCK_VALUES`` elements.
    """
    n_samples, n_features = X.shape
    out[:] = False
    first = X[0]
    first_nan = np.isnan(first)
    left = np.arange(n_features)  # columns not yet seen to vary
    lo = 1
    while lo < n_samples and left.size:
        step = max(1, _VARY_BLOCK_VALUES // left.size)
        block = X[lo : lo + step][:, left] if left.size < n_features else X[lo : lo + step]
        # first value NaN: varies at a non-NaN; else at a different value or a NaN
        # (x != NaN holds), as the plain comparison says
        differs = np.where(first_nan[left], ~np.isnan(block), block != first[left])
        varies = differs.any(axis=0)
        out[left[varies]] = True
        left = left[~varies]
        lo += step


_VARY_BLOCK_VALUES = 1 << 20


@kernel
def _sparse_columns_vary(indptr, data, n_samples, out):
    # The CSC form of _columns_vary: column f holds its stored entries plus
    # n_samples - nnz(f) zeros; it varies when some value differs from the first one.
    n_features = out.shape[0]
    for f in range(n_features):
        k0 = indptr[f]
        k1 = indptr[f + 1]
        out[f] = False
        if k1 - k0 < n_samples:
            a = 0.0
        elif k1 > k0:
            a = data[k0]
        else:
            continue
        for k in range(k0, k1):
            b = data[k]
            if np.isnan(a):
                if not np.isnan(b):
                    out[f] = True
                    break
            elif np.isnan(b) or a != b:
                out[f] = True
                break

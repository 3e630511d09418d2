"""RankingDataset: features, labels and query structure, with all array-level validation.

Queries are described once, by ``query_offsets`` (int64, length ``n_queries + 1``):
documents ``query_offsets[q]:query_offsets[q + 1]`` belong to query ``q``.  Users may give
either query ids (``qid=``, one per document, LETOR/XGBoost style) or group sizes
(``group=``, LightGBM style).  Documents of one query need *not* be contiguous when given by
``qid``: they are grouped stably, in order of first appearance, and the permutation is kept
so that per-document outputs can be returned in input order.
"""

from __future__ import annotations

import decimal
import numbers
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost._checks import _short_repr, lone_surrogate, without_surrogates
from ltrboost._config import QUERY_OFFSET_DTYPE
from ltrboost.params import ParameterError


class LTRInputError(ValueError):
    """Bad input data, located where possible.

    Attributes
    ----------
    path : str or None
        The file the problem is in.
    line : int or None
        **1-based** line number in ``path`` (text files).
    row : int or None
        **0-based** row index into an array (labels, features, weights: a document).
    pair : int or None
        **0-based** index of a preference pair given as arrays (``pairs=``): not a
        document's row, so never rewritten as one (a file's pairs are named by
        ``path`` and ``line``).
    problem : str
        The message without the location.

    The message reads ``path:line: problem``, ``path: problem``, ``row N: problem`` or
    ``pair K: problem`` (for arrays), so a CLI can print ``str(err)`` as its one-line
    diagnostic.
    """

    def __init__(
        self,
        msg: str,
        path: str | None = None,
        line: int | None = None,
        *,
        row: int | None = None,
        pair: int | None = None,
    ):
        self.path = path
        self.line = line
        self.row = row
        self.pair = pair
        self.problem = msg
        where = ""
        if path is not None and line is not None:
            where = f"{path}:{line}: "
        elif path is not None:
            where = f"{path}: "
        elif line is not None:
            where = f"line {line}: "
        elif row is not None:
            where = f"row {row}: "
        elif pair is not None:
            where = f"pair {pair}: "
        super().__init__(where + msg)


class ParameterInputError(LTRInputError, ParameterError):
    """Bad input data whose remedy names training parameters by their Python names
    (:class:`~ltrboost.params.ParameterError`'s convention): the CLI prints them as
    its flags and keeps the location."""


@dataclass
class PreferencePairs:
    """Explicit preferences: document ``preferred[k]`` should rank above ``other[k]``.

    Row indices are positions in the dataset (after grouping by query); both documents of a
    pair must belong to the same query.  ``weight`` defaults to 1.
    """

    preferred: NDArray[np.int32]
    other: NDArray[np.int32]
    weight: NDArray[np.float64] | None = None

    def __len__(self) -> int:
        return int(self.preferred.shape[0])


@dataclass
class RankingDataset:
    """Features ``X`` (n_samples, n_features), labels ``y`` (float64), queries, weights.

    ``order`` is the permutation applied to the user's rows (``X = X_user[order]``), or None
    when the input was already grouped.  ``weights`` are per document (LightGBM's
    convention); None means all ones.
    """

    X: Any
    y: NDArray[np.float64] | None
    query_offsets: NDArray[np.int64]
    weights: NDArray[np.float32] | None = None
    pairs: PreferencePairs | None = None
    order: NDArray[np.int64] | None = None
    query_ids: NDArray[Any] | None = None
    feature_names: list[str] | None = None
    source: str | None = None
    # 1-based line of each (grouped) row in ``source``, when the data came from a file
    row_lines: NDArray[np.int64] | None = None
    cache: dict[str, Any] = field(default_factory=dict, repr=False)
    # 1-based position each document was shown at (click data, for ``unbiased=True``);
    # used by training only, never by prediction
    position: NDArray[np.int64] | None = None

    @property
    def n_samples(self) -> int:
        """Rows (documents)."""
        return int(self.query_offsets[-1])

    @property
    def n_queries(self) -> int:
        """Queries."""
        return int(self.query_offsets.shape[0] - 1)

    @property
    def query_sizes(self) -> NDArray[np.int64]:
        """Documents per query, in the dataset's (grouped) query order."""
        return np.diff(self.query_offsets)


def check_dataset_structure(ds: RankingDataset, what: str) -> None:
    """Refuse a :class:`RankingDataset` built by hand (not by :func:`make_dataset`)
    whose parts do not fit together: ``X`` not a 2-D numeric array or SciPy sparse
    matrix (a list failed as "'list' object has no attribute 'shape'"),
    ``query_offsets`` not rising from 0 to the rows of ``X`` (offsets out of order
    trained silently on queries of negative size).  O(queries)."""
    X = ds.X
    dtype = getattr(X, "dtype", None)
    if getattr(X, "ndim", None) != 2 or getattr(dtype, "kind", "") not in "biuf":
        raise LTRInputError(
            f"{what}.X must be a 2-D numeric array or sparse matrix, not "
            f"{type(X).__name__}{'' if dtype is None else f' of {dtype}'}"
            f"{'' if getattr(X, 'ndim', 2) == 2 else f' of shape {X.shape}'}: build "
            "datasets with ltrboost.make_dataset(X, y, qid=...), which converts and checks"
        )
    offsets = ds.query_offsets
    if not (
        isinstance(offsets, np.ndarray)
        and offsets.ndim == 1
        and offsets.dtype.kind in "iu"
        and offsets.shape[0] >= 1
    ):
        raise LTRInputError(
            f"{what}.query_offsets must be a 1-D integer ndarray (n_queries + 1 row "
            "offsets), as ltrboost.make_dataset builds it"
        )
    sizes = np.diff(offsets)
    if offsets[0] != 0 or offsets[-1] != X.shape[0] or np.any(sizes <= 0):
        bad = np.flatnonzero(sizes <= 0)
        detail = (
            f"query {int(bad[0])} has {int(sizes[bad[0]])} rows"
            if bad.size
            else f"they run from {int(offsets[0])} to {int(offsets[-1])}"
        )
        raise LTRInputError(
            f"{what}.query_offsets must rise from 0 to the {X.shape[0]} rows of X, every "
            f"query at least one row; {detail}"
        )


def query_offsets_from_group(group: ArrayLike, n_samples: int) -> NDArray[np.int64]:
    """Offsets from LightGBM-style group sizes; sizes must be positive and sum to n_samples."""
    sizes = _as_vector(group, "group")
    if sizes.ndim != 1:
        raise LTRInputError(f"group must be 1-D (query sizes), got shape {sizes.shape}")
    if sizes.dtype.kind == "b":  # True read as 1: every document its own query, silently
        raise LTRInputError(
            "group holds booleans, not sizes: group= takes the number of documents of "
            "each query, in row order (a mask or a per-row flag is no grouping)"
        )
    if sizes.dtype.kind not in "biuf":  # object (Python ints beyond int64), strings
        values = sizes.tolist()
        for k, v in enumerate(values):
            if not isinstance(v, numbers.Real) or isinstance(v, bool):
                raise LTRInputError(
                    f"group[{k}]={v!r} is not a number (group holds documents per query)"
                )
        try:
            sizes = np.asarray(values, dtype=np.float64)
        except OverflowError as e:  # a Python int beyond float64 (10**400)
            raise _not_numeric(sizes, "group", e, rows=False) from None
    if sizes.size and not np.issubdtype(sizes.dtype, np.integer):
        try:  # e.g. strings or an object array
            sizes = np.asarray(sizes, dtype=np.float64)
        except (TypeError, ValueError, OverflowError) as e:
            raise _not_numeric(sizes, "group", e, rows=False) from None
        whole = np.isfinite(sizes) & (sizes == np.round(sizes))
        if not np.all(whole):  # name the entry (a <NA> of an Int64 array reads as NaN)
            bad = int(np.flatnonzero(~whole)[0])
            raise LTRInputError(
                f"group[{bad}]={sizes[bad].item()!r} is not a whole number (group holds "
                "documents per query)"
            )
    # before the int64 cast and sum, which wrap: sizes near 2**62 could sum to the rows
    big = sizes > n_samples
    if np.any(big):
        bad = int(np.flatnonzero(big)[0])
        value = sizes[bad].item()
        raise LTRInputError(
            f"group[{bad}]={value:g}: more documents than the {n_samples} rows"
            if isinstance(value, float)
            else f"group[{bad}]={value}: more documents than the {n_samples} rows"
        )
    sizes = sizes.astype(np.int64)
    if np.any(sizes <= 0):
        bad = int(np.flatnonzero(sizes <= 0)[0])
        raise LTRInputError(f"group[{bad}]={sizes[bad]}: every query needs at least one document")
    total = int(sizes.sum())
    if total != n_samples:
        raise LTRInputError(
            f"group sizes sum to {total} but there are {n_samples} rows; "
            "group= takes the number of documents of each query, in row order"
        )
    offsets = np.zeros(sizes.shape[0] + 1, dtype=QUERY_OFFSET_DTYPE)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def _has_missing_object(qid: NDArray[Any]) -> bool:
    """Whether object qids hold None or a value unequal to itself (NaN, which sorts
    nowhere and split one query's rows apart) or not comparable (pandas' NA);
    vectorised, so only a positive answer costs :func:`_check_object_qids`' loop."""
    try:
        return bool(np.equal(qid, None).any() or np.not_equal(qid, qid).any())
    except (TypeError, ValueError):  # e.g. pd.NA != pd.NA is NA, not a bool
        return True


def qid_value_kind(v: Any) -> str:
    """The kind of one query id as grouping tells them apart: ``"str"`` or ``"bytes"``
    (``np.str_`` / ``np.bytes_`` too), ``"number"`` (any number Python compares with
    ints: Decimal and bool too, not complex, which does not sort), else the type's
    name.  Query ids must be all strings or all numbers."""
    if isinstance(v, str | bytes):
        return "str" if isinstance(v, str) else "bytes"
    if isinstance(v, numbers.Number | np.bool_) and not isinstance(v, complex | np.complexfloating):
        return "number"
    return type(v).__name__


def qid_array_kind(qids: NDArray[Any]) -> str:
    """What a set's (or a Dask partition's) query ids are, as :func:`group_by_qid` tells
    them apart: ``"number"`` (a numeric dtype, or Python/NumPy numbers in an object
    array), ``"str"``, ``"bytes"``, else the dtype or the type's name.  One set's
    ids are one kind (grouping refused a mix); an object array is judged by its first."""
    k = qids.dtype.kind
    if k in "biuf":
        return "number"
    if k in "US":
        return "str" if k == "U" else "bytes"
    if k in "mM":
        return "timedelta64" if k == "m" else "datetime64"
    if k != "O" or qids.shape[0] == 0:
        return str(qids.dtype)
    return qid_value_kind(qids[0])


def _check_object_qids(qid: NDArray[Any]) -> None:
    """Object qids must be one comparable kind (all strings or all numbers; grouping
    sorts them): None, NaN or a mix is an error naming the first odd row.  Run only
    when grouping failed or a None is present (a loop over the rows)."""
    kinds = []
    for v in qid.tolist():
        if v is None or (isinstance(v, float) and v != v) or _is_pandas_missing(v):
            kinds.append("missing")
        else:
            kinds.append(qid_value_kind(v))
    first = kinds[0] if kinds[0] != "missing" else None
    for row, k in enumerate(kinds):
        if k == "missing":
            raise LTRInputError(f"qid is {qid[row]!r}: every row needs a query id", row=row)
        if first is None:
            first = k
        if k != first or k not in ("str", "bytes", "number"):
            raise LTRInputError(
                f"qid {qid[row]!r} ({k}) is not of the first rows' kind ({first}): query "
                "ids must be all strings or all numbers",
                row=row,
            )


def _is_pandas_missing(v: Any) -> bool:
    """pandas' NA and NaT (checked by type name: pandas is optional)."""
    return type(v).__name__ in ("NAType", "NaTType")


def group_by_qid(
    qid: ArrayLike,
) -> tuple[NDArray[np.int64], NDArray[np.int64] | None, NDArray[Any]]:
    """Group documents by query id, stably, in order of first appearance.

    Returns
    -------
    query_offsets : ndarray of shape (n_queries + 1,), dtype=int64
    order : ndarray of shape (n_samples,), dtype=int64, or None
        Row permutation that makes queries contiguous; None when they already are.
    query_ids : ndarray of shape (n_queries,)
        The id of each query, in the grouped order.
    """
    qid = _as_array(qid, "qid")
    if qid.ndim != 1:
        raise LTRInputError(f"qid must be 1-D, got shape {qid.shape}")
    n = qid.shape[0]
    if n == 0:
        return np.zeros(1, dtype=QUERY_OFFSET_DTYPE), None, qid[:0]
    if qid.dtype.kind == "f" and not np.all(np.isfinite(qid)):
        bad = int(np.flatnonzero(~np.isfinite(qid))[0])
        raise LTRInputError(f"qid is {qid[bad]}", row=bad)
    if qid.dtype.kind in "mM" and np.isnat(qid).any():  # NaT would group as one query
        bad = int(np.flatnonzero(np.isnat(qid))[0])
        raise LTRInputError("qid is NaT: every row needs a query id", row=bad)
    if qid.dtype.kind == "O" and _has_missing_object(qid):
        _check_object_qids(qid)  # names the row of the None, NaN, NA or NaT
    try:
        return _group_runs(qid, n)
    except TypeError:  # object qids that do not sort together: name the first odd row
        if qid.dtype.kind == "O":
            _check_object_qids(qid)
        raise


def _group_runs(qid: NDArray[Any], n: int):
    """:func:`group_by_qid` on checked ids (sorting object ids may raise TypeError)."""
    starts = np.flatnonzero(np.concatenate(([True], qid[1:] != qid[:-1])))
    run_ids = qid[starts]
    uniq = np.unique(run_ids)
    if uniq.shape[0] == run_ids.shape[0]:
        # Already contiguous: every run is a distinct query.
        offsets = np.empty(starts.shape[0] + 1, dtype=QUERY_OFFSET_DTYPE)
        offsets[:-1] = starts
        offsets[-1] = n
        return offsets, None, run_ids
    # Not contiguous: group stably in order of first appearance.
    _, inverse = np.unique(qid, return_inverse=True)
    uniq_all, first_idx = np.unique(qid, return_index=True)
    rank_of_uniq = np.empty(uniq_all.shape[0], dtype=np.int64)
    rank_of_uniq[np.argsort(first_idx, kind="stable")] = np.arange(uniq_all.shape[0])
    key = rank_of_uniq[inverse.ravel()]
    order = np.argsort(key, kind="stable").astype(np.int64)
    sizes = np.bincount(key, minlength=uniq_all.shape[0])
    offsets = np.zeros(uniq_all.shape[0] + 1, dtype=QUERY_OFFSET_DTYPE)
    np.cumsum(sizes, out=offsets[1:])
    query_ids = uniq_all[np.argsort(first_idx, kind="stable")]
    return offsets, order, query_ids


def check_labels(
    y: ArrayLike,
    n_samples: int | None = None,
    *,
    name: str = "y",
    nonnegative: bool = False,
    integer: bool = False,
    context: str = "",
) -> NDArray[np.float64]:
    """The one label check: labels as C-contiguous float64 of shape (n_samples,).

    Used by :func:`make_dataset`, by every objective and by every metric, so a label is
    refused with the same message wherever it enters.  Always refuses NaN and +-inf;
    ``nonnegative`` refuses labels < 0 (metrics: relevance grades); ``integer`` refuses
    anything but the grades 0, 1, 2, ... (objectives that need integer grades).  The
    first offending row is named (``LTRInputError.row``, 0-based).  ``n_samples=None``
    skips the length check and refuses anything but 1-D input; otherwise a (1, n) or
    (n, 1) array is flattened.  ``context`` is appended to the messages (e.g. which
    objective needs the property).
    """
    arr = _as_array(y, name)
    if n_samples is not None and arr.ndim == 2 and 1 in arr.shape:
        arr = np.ravel(arr)
    if arr.ndim != 1:
        raise LTRInputError(f"{name} must be 1-D of shape (n_samples,), got shape {arr.shape}")
    if n_samples is not None and arr.shape[0] != n_samples:
        raise LTRInputError(f"{name} has {arr.shape[0]} rows but X has {n_samples}")
    _refuse_complex(arr, name)
    try:
        arr = np.ascontiguousarray(arr, dtype=np.float64)
        if not arr.flags.writeable:  # pandas' copy-on-write Series give read-only
            arr = arr.copy()  # arrays; the kernels are compiled for writeable ones
    except (TypeError, ValueError, OverflowError) as e:
        raise _not_numeric(arr, name, e) from None
    suffix = f"; {context}" if context else ""
    bad = ~np.isfinite(arr)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise LTRInputError(f"label {name}[{row}]={arr[row]} is not finite{suffix}", row=row)
    if integer:
        bad = (arr < 0) | (arr != np.floor(arr))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise LTRInputError(
                f"label {name}[{row}]={arr[row]:g} is not a non-negative integer grade{suffix}",
                row=row,
            )
    elif nonnegative and arr.size and float(arr.min()) < 0.0:
        row = int(np.argmin(arr))
        raise LTRInputError(
            f"label {name}[{row}]={arr[row]:g} is negative; relevance grades must be >= 0{suffix}",
            row=row,
        )
    return arr


def check_preference_pairs(
    preferred: ArrayLike,
    other: ArrayLike,
    weight: ArrayLike | None,
    query_offsets: NDArray[np.int64],
    *,
    order: NDArray[np.int64] | None = None,
    query_ids: NDArray[Any] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    """The one check of explicit preference pairs given as arrays of dataset rows.

    Returns ``(preferred, other, weight, query)`` as int64 / int64 / float64 / int64
    (``weight`` all ones when None; ``query`` the query of each pair).  Refuses, naming
    the first offending pair (``LTRInputError.pair`` = its index): non-integer or
    out-of-range rows, a document preferred to itself, a pair spanning two queries, a
    negative or non-finite weight, or one float32 gradients cannot hold (above float32's
    maximum, or positive below its smallest positive value: as sample weights).  (Pairs
    read from a file are checked line by line by :mod:`ltrboost.io.pairs`, which knows
    the file's lines; its output passes here too.)
    ``order`` (:attr:`RankingDataset.order`) names rows in the caller's numbering, the
    one the pairs were given in, instead of the grouped one; ``query_ids``
    (:attr:`RankingDataset.query_ids`) names a pair's queries by the caller's ids (without
    them, by their position: groups 0, 1, ...).
    """
    pref = np.asarray(preferred)
    oth = np.asarray(other)
    if pref.ndim != 1 or oth.shape != pref.shape:
        raise LTRInputError(
            f"pairs.preferred and pairs.other must be 1-D of equal length, got shapes "
            f"{pref.shape} and {oth.shape}"
        )
    if not (np.issubdtype(pref.dtype, np.integer) and np.issubdtype(oth.dtype, np.integer)):
        raise LTRInputError("pairs.preferred and pairs.other must hold integer row ids")
    pref = pref.astype(np.int64)
    oth = oth.astype(np.int64)
    n = int(query_offsets[-1])
    bad = (pref < 0) | (pref >= n) | (oth < 0) | (oth >= n)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise LTRInputError(f"rows ({pref[k]}, {oth[k]}) out of range for {n} documents", pair=k)

    def shown(r: int) -> int:  # a dataset row as the caller numbered it
        return int(r) if order is None else int(order[r])

    same = pref == oth
    if same.any():
        k = int(np.flatnonzero(same)[0])
        raise LTRInputError(f"document {shown(pref[k])} is preferred to itself", pair=k)
    q_pref = np.searchsorted(query_offsets, pref, side="right") - 1
    q_other = np.searchsorted(query_offsets, oth, side="right") - 1
    cross = q_pref != q_other
    if cross.any():
        k = int(np.flatnonzero(cross)[0])
        if query_ids is not None:  # the caller's ids, not the grouped query numbers
            queries = f"{query_ids[q_pref[k]]} and {query_ids[q_other[k]]}"
        else:
            queries = f"groups {q_pref[k]} and {q_other[k]}, counting from 0"
        raise LTRInputError(
            f"rows {shown(pref[k])} and {shown(oth[k])} belong to different queries "
            f"({queries}); a preference compares documents of one query",
            pair=k,
        )
    if weight is None:
        w = np.ones(pref.shape[0], dtype=np.float64)
    else:
        w = np.asarray(weight, dtype=np.float64)
        if w.shape != pref.shape:
            raise LTRInputError(
                f"pairs.weight has shape {w.shape}; expected {pref.shape}, one per pair"
            )
        # as sample weights (check_sample_weight): they scale float32 gradients, so a
        # weight beyond float32's maximum made them inf, one below its smallest 0
        _as_float32_weights(
            w, "pairs.weight", "pair weights scale float32 gradients",
            "in float32 gradients (the smallest positive float32 is 1.4e-45)", "pair",
        )  # fmt: skip
    return pref, oth, w, q_pref.astype(np.int64)


ALL_ZERO_WEIGHTS = (
    "sample_weight is zero for every row: nothing to learn or measure "
    "(give at least one positive weight)"
)


def check_sample_weight(sample_weight: ArrayLike, n: int) -> NDArray[np.float32]:
    """Per-document weights as float32, refusing (naming the row) complex, non-finite,
    negative, above float32's maximum (they would become inf) or positive below its
    smallest positive value (they would become 0) and a length other than
    ``n``.  Whether any weight is positive is the caller's check (on Dask it is global,
    over every partition: :data:`ALL_ZERO_WEIGHTS`)."""
    w = _as_array(sample_weight, "sample_weight")
    _refuse_complex(w, "sample_weight")
    if w.ndim == 2 and 1 in w.shape:  # a column or row vector, as labels
        w = np.ravel(w)
    if w.ndim != 1:
        raise LTRInputError(f"sample_weight must be 1-D (one weight per row), got shape {w.shape}")
    try:
        w = np.asarray(w, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as e:
        raise _not_numeric(w, "sample_weight", e) from None
    if w.shape[0] != n:
        raise LTRInputError(f"sample_weight has {w.shape[0]} rows but X has {n}")
    # weights are kept as float32: larger ones would become inf
    return _as_float32_weights(
        w, "sample_weight", "weights are float32",
        "as float32 (weights are float32, the smallest positive is 1.4e-45)", "row",
    )  # fmt: skip


def _as_float32_weights(
    w: NDArray[np.float64], name: str, why: str, lost_as: str, index: str
) -> NDArray[np.float32]:
    """``w`` (float64, 1-D) as float32, refusing the first weight that is not finite,
    negative or above float32's maximum (it would become inf), then the first positive
    one below float32's smallest subnormal (it would become 0).

    The error reads ``{name}[k]=... must be finite, >= 0 and at most ... ({why})`` or
    ``{name}[k]=... is positive but would become 0 {lost_as}: scale the weights up``
    and carries ``k`` as its ``index`` attribute (``"row"`` or ``"pair"``).
    """
    bad = ~np.isfinite(w) | (w < 0) | (w > _FLOAT32_MAX)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise LTRInputError(
            f"{name}[{k}]={w[k]} must be finite, >= 0 and at most {_FLOAT32_MAX:.4g} ({why})",
            **{index: k},
        )
    w32 = w.astype(np.float32)
    lost = (w > 0) & (w32 == 0)  # positive, but below float32's smallest subnormal
    if lost.any():
        k = int(np.flatnonzero(lost)[0])
        raise LTRInputError(
            f"{name}[{k}]={w[k]:g} is positive but would become 0 {lost_as}: scale the weights up",
            **{index: k},
        )
    return w32


def one_grade_queries(y: ArrayLike, query_offsets: ArrayLike) -> NDArray[np.bool_]:
    """Per query of ``y`` (grouped by ``query_offsets``): whether it holds no two
    documents of different grades (an empty query included).  No ranking changes a
    metric of such a query (NDCG 1.0): ``ltrboost eval`` and ``cv`` warn of a file or
    fold of them, ``ltrboost experiment`` refuses one."""
    offsets = np.asarray(query_offsets)
    n_queries = max(offsets.shape[0] - 1, 0)
    out = np.ones(n_queries, dtype=np.bool_)
    y = np.asarray(y, dtype=np.float64)
    full = np.diff(offsets) > 0
    if y.size and full.any():
        starts = offsets[:-1][full]
        out[full] = np.maximum.reduceat(y, starts) == np.minimum.reduceat(y, starts)
    return out


# Sample weights more than this factor apart are warned about (README, "sample_weight"):
# float64 holds ~16 significant digits, so in a sum (gradients, hessians) that holds the
# heaviest row, a row lighter by more than this factor changes the last digit or none,
# and the split gains (differences of such sums) of the lighter rows are rounding.
WEIGHT_RATIO_LIMIT = 1e15


def warn_if_weights_too_far_apart(ds: RankingDataset) -> None:
    """Warn (:class:`~ltrboost.params.ParameterWarning`, at the caller's line) when the
    largest sample weight of ``ds`` is more than :data:`WEIGHT_RATIO_LIMIT` times the
    smallest positive one, naming both rows (the caller's numbering).

    One weight of 1e30 among 1s: the gradient sums hold the other rows' part below
    float64's last digit, so every split gain is rounding and training found no split
    ("no split meets min_samples_leaf=..."), saying nothing of the weights.  Weights
    are not rescaled (a model of ordinary weights must not change), nor refused (a few
    rows weighted 1e-20 do what such weights say: next to nothing)."""
    if ds.weights is None:
        return
    w = np.asarray(ds.weights, dtype=np.float64)
    positive = np.flatnonzero(w > 0)
    if positive.size == 0:
        return
    top = int(np.argmax(w))
    low = int(positive[np.argmin(w[positive])])
    if not w[top] > WEIGHT_RATIO_LIMIT * w[low]:
        return
    i, j = (int(r) if ds.order is None else int(ds.order[r]) for r in (top, low))
    import warnings

    from ltrboost._callsite import external_stacklevel
    from ltrboost.params import ParameterWarning

    warnings.warn(
        ParameterWarning(
            f"sample_weight[{i}]={w[top]:.6g} is {w[top] / w[low]:.3g} times "
            f"sample_weight[{j}]={w[low]:.6g}, the smallest positive weight: more than "
            f"{WEIGHT_RATIO_LIMIT:g} apart, beyond float64's 16 digits, in which the "
            "gradient and hessian sums of a node add up its rows, so rows that much "
            "lighter than the heaviest change no split gain (training may find no "
            "split, or splits of rounding); rescale or clip the weights to within "
            f"{WEIGHT_RATIO_LIMIT:g} of each other"
        ),
        stacklevel=external_stacklevel(),
    )


def make_dataset(
    X: Any,
    y: ArrayLike | None = None,
    *,
    qid: ArrayLike | None = None,
    group: ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
    feature_names: list[str] | None = None,
    require_labels: bool = True,
    position: ArrayLike | None = None,
) -> RankingDataset:
    """Validate user arrays and build a :class:`RankingDataset`.

    Exactly one of ``qid`` (query id per row) or ``group`` (documents per query: whole
    numbers >= 1 summing to the rows; booleans are refused) must be given.  ``X`` may
    be a NumPy array, a pandas DataFrame or a SciPy sparse matrix; it is converted to a
    dense float array (float32 kept, anything else float64), except a sparse matrix,
    which stays sparse (CSR of float32 or float64; an absent entry is a zero, a stored
    NaN is missing) and is binned without densifying.  NaN marks a missing value;
    +/-inf is refused (clip it or replace it by NaN).  ``position`` (click data, see
    :func:`check_positions`) is the 1-based position each row was shown at.
    ``feature_names`` names an array's columns; for a DataFrame they must be its column
    names, whose columns are then taken by name in that order.  ``y``: one label per row,
    required unless ``require_labels=False`` (data to predict).  ``sample_weight``: one
    finite, non-negative weight per row, not all zero (LightGBM's convention).
    """
    X = arrow_as_frame(X)
    if (
        feature_names is not None
        and not isinstance(feature_names, str)
        and hasattr(X, "columns")
        and hasattr(X, "to_numpy")
    ):
        # a model takes a DataFrame's columns by name: names given for a frame must be
        # its columns' (in any order, taken by name), never relabel them by position
        feature_names = [str(c) for c in feature_names]
        have = [str(c) for c in X.columns]
        if have != feature_names:
            X = _columns_by_name(X, have, feature_names, against="the feature_names given")
    X, names = as_feature_matrix(X, keep_sparse=True)
    if feature_names is None:
        feature_names = names
    elif isinstance(feature_names, str) or len(feature_names) != X.shape[1]:
        n = 1 if isinstance(feature_names, str) else len(feature_names)
        raise LTRInputError(
            f"feature_names has {n} names but X has {X.shape[1]} features; give one name per column"
        )
    else:  # names as a DataFrame's columns are taken (a model file holds strings)
        feature_names = [str(c) for c in feature_names]
    if feature_names is not None:
        _refuse_duplicate_names(feature_names, columns=feature_names is names)
    n = X.shape[0]
    if (qid is None) == (group is None):
        raise LTRInputError(
            "give exactly one of qid= (a query id per row) or group= (documents per query)"
            + (", not both" if qid is not None else "")
        )
    order = None
    query_ids = None
    if isinstance(qid, str | bytes):  # it said "qid has shape () but X has 40 rows"
        raise LTRInputError(
            f"qid={qid!r} is a string: give a query id per row (a DataFrame's query ids "
            "are taken from its column named 'qid' when neither qid= nor group= is given)"
        )
    if qid is not None:
        qid_arr = _as_vector(qid, "qid")
        if qid_arr.ndim != 1:
            raise LTRInputError(f"qid must be 1-D (a query id per row), got shape {qid_arr.shape}")
        if qid_arr.shape[0] != n:
            raise LTRInputError(f"qid has shape {qid_arr.shape} but X has {n} rows")
        offsets, order, query_ids = group_by_qid(qid_arr)
    else:
        offsets = query_offsets_from_group(group, n)
    y_arr = None
    if y is not None:
        y_arr = check_labels(y, n)
    elif require_labels:
        raise LTRInputError("labels y are required")
    w = None
    if sample_weight is not None:
        w = check_sample_weight(sample_weight, n)
        if n > 0 and not w.any():
            raise LTRInputError(ALL_ZERO_WEIGHTS)
    pos = None if position is None else check_positions(position, n)
    if order is not None:
        if pos is not None:
            pos = pos[order]
        X = X[order]
        if y_arr is not None:
            y_arr = y_arr[order]
        if w is not None:
            w = w[order]
    return RankingDataset(
        X=X,
        y=y_arr,
        query_offsets=offsets,
        weights=w,
        order=order,
        query_ids=query_ids,
        feature_names=feature_names,
        position=pos,
    )


MAX_POSITION = 2**62  # the deepest position (as in position files)


def check_positions(position: ArrayLike, n_samples: int) -> NDArray[np.int64]:
    """The one check of display positions: 1-D, one per row, whole numbers >= 1.

    Returns int64.  The first offending row is named (``LTRInputError.row``, 0-based).
    """
    arr = _as_vector(position, "position")
    if arr.ndim != 1:
        raise LTRInputError(
            f"position must be 1-D (the position of each row), got shape {arr.shape}"
        )
    if arr.shape[0] != n_samples:
        raise LTRInputError(
            f"position has shape {arr.shape} but X has {n_samples} rows; give the 1-based "
            "position each row was shown at"
        )
    _refuse_complex(arr, "position")
    if arr.dtype.kind not in "iu":
        try:
            f = np.asarray(arr, dtype=np.float64)
        except (TypeError, ValueError, OverflowError) as e:
            raise _not_numeric(arr, "position", e, "not an integer") from None
        bad = ~np.isfinite(f) | (f != np.round(f))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            value = arr[row].item() if hasattr(arr[row], "item") else arr[row]
            raise LTRInputError(f"position[{row}]={value!r} is not an integer", row=row)
        arr = f
    # as the position files' reader: above 2**62 is refused (the int64 cast would wrap
    # 1e20 or a uint64 2**63 to a negative position)
    if arr.dtype.kind == "f" or arr.dtype == np.uint64:
        big = arr > np.asarray(MAX_POSITION, dtype=arr.dtype)
        if big.any():
            row = int(np.flatnonzero(big)[0])
            raise LTRInputError(
                f"position[{row}]={arr[row].item()!r} is too large (at most {MAX_POSITION})",
                row=row,
            )
    arr = arr.astype(np.int64)
    bad = arr < 1
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise LTRInputError(f"position[{row}]={arr[row]} is < 1 (positions are 1-based)", row=row)
    return np.ascontiguousarray(arr)


def as_feature_matrix(
    X: Any,
    feature_names: list[str] | None = None,
    *,
    keep_sparse: bool = False,
    copy: bool = True,
) -> tuple[Any, list[str] | None]:
    """Dense 2-D float matrix from NumPy / pandas / SciPy sparse input; refuses inf.

    A DataFrame's columns must be numeric or boolean (a string, categorical, datetime or
    timedelta column is an error naming it and a row); a column of dtype object is taken
    when its values are numbers or missing (:func:`_object_columns_as_floats`).  With
    ``feature_names`` (the names stored at fit time) a DataFrame's columns are taken by
    name, in the stored order; a missing or unknown name raises.
    With ``keep_sparse`` a SciPy sparse ``X`` is returned as a canonical CSR matrix
    (float32 kept, anything else float64; duplicates summed) instead of densified.
    ``copy=False`` (prediction, which only reads it): a C-ordered, writeable float64
    ``X`` is returned as it is, not copied (as a C-ordered, writeable float32 one
    always is).
    """
    names = None
    X = arrow_as_frame(X)
    if keep_sparse and hasattr(X, "tocsr") and hasattr(X, "nnz"):
        return _sparse_feature_matrix(X), names
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):  # pandas DataFrame
        names = [str(c) for c in X.columns]
        for c, dt in zip(names, X.dtypes, strict=True):
            if getattr(dt, "kind", "") == "c":
                raise LTRInputError(
                    f"X column {c!r} is complex. Complex data not supported: features must be real"
                )
        if feature_names is not None and names != list(feature_names):
            # a column named with a lone surrogate matches the name a model file
            # holds for it (its escape: see ltrboost.io.model_json)
            X = _columns_by_name(X, [without_surrogates(c) for c in names], list(feature_names))
            names = list(feature_names)
        _check_numeric_columns(X)
        X = _object_columns_as_floats(X)
        X = X.to_numpy(dtype=np.float64, na_value=np.nan)
    elif hasattr(X, "toarray") and hasattr(X, "tocsr"):  # scipy.sparse
        _refuse_complex(X, "X")
        X = X.toarray()
    try:
        X = np.asarray(X)
    except ValueError as e:  # rows of different lengths
        raise _ragged(X, e) from None
    _refuse_complex(X, "X")
    if X.ndim != 2:
        raise LTRInputError(_not_2d(X.shape))
    if X.dtype.kind in "mM":  # as a DataFrame's datetime column; NaT became -9.2e18
        raise LTRInputError(
            f"X has dtype {X.dtype}; features must be numeric (convert dates and "
            "durations to numbers first, NaT to NaN)"
        )
    _refuse_strings(X)
    # The kernels are compiled (and warmed up, and cached) for C-ordered writeable
    # arrays: a Fortran-ordered, strided or read-only X (a DataFrame's to_numpy() is
    # Fortran-ordered) would compile a variant of each on its first fit or predict.
    ready = X.dtype == np.float64 and X.flags.c_contiguous and X.flags.writeable and X.flags.aligned
    if X.dtype != np.float32 and not (ready and not copy):
        try:
            X = X.astype(np.float64, order="C")  # a copy, unless copy=False allows none
        except (TypeError, ValueError, OverflowError) as e:
            X = _pandas_na_as_nan(X)  # <NA> is missing, as None is
            try:
                X = X.astype(np.float64, order="C")
            except (TypeError, ValueError, OverflowError):
                raise _not_numeric(X, "X", e) from None
    elif not (X.flags.c_contiguous and X.flags.writeable):
        X = np.array(X, order="C")  # float32 kept
    found = _first_inf(X)
    if found is not None:
        row, col = found
        column = "" if names is None else f" (column {names[col]!r})"
        raise LTRInputError(
            f"feature {col}{column} is {X[row, col]}: infinite values are not allowed "
            "(use NaN for a missing value, or clip)",
            row=row,
        )
    return X, names


def _first_inf(X: NDArray[np.floating]) -> tuple[int, int] | None:
    """(row, column) of the first infinite value of a 2-D ``X``, or None; looked for a
    block of rows at a time (``np.isinf(X)`` whole held a byte per value)."""
    step = max(1, (1 << 18) // max(1, X.shape[1]))
    for r0 in range(0, X.shape[0], step):
        inf = np.isinf(X[r0 : r0 + step])
        if inf.any():
            row, col = np.argwhere(inf)[0]
            return r0 + int(row), int(col)
    return None


def _pandas_na_as_nan(X: NDArray[Any]) -> NDArray[Any]:
    """An object ``X`` with pandas' ``<NA>`` (``to_numpy()`` of a frame with a nullable
    column holds it) replaced by NaN, as ``None`` converts and as the DataFrame's own
    ``<NA>`` reads; any other ``X`` as it is (only on the error path of the float
    conversion, so the error names a value that is not ``<NA>``)."""
    if X.dtype.kind != "O" or not X.size:
        return X
    is_na = np.frompyfunc(lambda v: type(v).__name__ == "NAType", 1, 1)(X).astype(bool)
    return np.where(is_na, np.nan, X) if is_na.any() else X


_TEXT_ADVICE = (
    "features must be numbers, not text (as a DataFrame's string column is refused): "
    "convert numbers written as text with X.astype(float), encode categories as numbers"
)


def _refuse_strings(X: NDArray[Any]) -> None:
    """Refuse a string or bytes array, or an object array holding a string: NumPy parsed
    ``"1.5"`` silently (and ``" 1e3"``, ``"nan"``, ``b"inf"``), whereas a DataFrame's
    string column is refused; an object array of numbers (``to_numpy()`` of mixed
    bool/float columns) is converted as before.  An object array holding a NumPy date
    or duration is refused too: it converted to a number that depends on its unit,
    whereas a datetime64 array is refused."""
    if X.dtype.kind in "US":
        raise LTRInputError(f"X has dtype {X.dtype} (strings); {_TEXT_ADVICE}")
    # the types present first (at C speed; np.str_ and np.bytes_ subclass str, bytes):
    # a Python-level test of every element took ~30x the conversion of an object X
    if X.dtype.kind != "O" or not X.size:
        return
    types = set(map(type, X.flat))
    for odd, what in (
        (str | bytes, f"not a number (X holds strings; {_TEXT_ADVICE})"),
        (np.datetime64 | np.timedelta64, "not a number (convert dates and durations to numbers)"),
    ):
        if any(issubclass(t, odd) for t in types):
            is_odd = np.frompyfunc(lambda v, odd=odd: isinstance(v, odd), 1, 1)
            row, col = (int(v) for v in np.argwhere(is_odd(X).astype(bool))[0])
            raise LTRInputError(f"feature {col} is {X[row, col]!r}: {what}", row=row)


def _sparse_feature_matrix(X: Any) -> Any:
    """Canonical CSR copy-free where possible; refuses complex values and inf."""
    import scipy.sparse as sp

    _refuse_complex(X, "X")
    if X.ndim != 2:
        raise LTRInputError(_not_2d(X.shape))
    X = X if sp.isspmatrix_csr(X) else sp.csr_matrix(X)
    if X.dtype != np.float32 and X.dtype != np.float64:
        try:
            X = X.astype(np.float64)
        except (TypeError, ValueError) as e:
            raise LTRInputError(f"X must be numeric: {e}") from None
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    inf = np.isinf(X.data)
    if inf.any():
        k = int(np.flatnonzero(inf)[0])
        row = int(np.searchsorted(X.indptr, k, side="right") - 1)
        raise LTRInputError(
            f"feature {int(X.indices[k])} is {X.data[k]}: infinite values are not allowed "
            "(use NaN for a missing value, or clip)",
            row=row,
        )
    return X


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _not_numeric(
    arr: Any, name: str, error: Exception, problem: str = "not a number", *, rows: bool = True
) -> LTRInputError:
    """The error for an array that does not convert to floats, naming its first value
    that does not (its row, and its feature for a 2-D ``X``; ``rows=False``: its index
    only, for arrays not indexed by row); only on the error path."""
    a = np.asarray(arr)
    for index, value in np.ndenumerate(a):
        try:
            float(value)
            continue
        except OverflowError:  # a Python int beyond float64 (10**400)
            shown = _short_repr(value)
            problem = "too large for a float64 (beyond ±1.8e308)"
        except (TypeError, ValueError):
            shown = repr(value.item() if isinstance(value, np.generic) else value)
        if not rows:
            return LTRInputError(f"{name}[{int(index[0])}]={shown} is {problem}")
        row = int(index[0])
        if a.ndim == 2:  # as the message for an infinite feature
            return LTRInputError(f"feature {int(index[1])} is {shown}: {problem}", row=row)
        return LTRInputError(f"{name}[{row}]={shown} is {problem}", row=row)
    return LTRInputError(f"{name} must be numeric: {error}")


def _as_array(values: Any, name: str) -> NDArray[Any]:
    """``np.asarray(values)``; a nested list of different lengths (NumPy's "inhomogeneous
    shape" ValueError, which named no parameter) is an LTRInputError naming ``name``."""
    try:
        return np.asarray(values)
    except ValueError as e:
        error = e
    try:  # name the first entry whose shape differs from the first one's
        shapes = [np.shape(v) for v in values]
    except (TypeError, ValueError):
        shapes = []
    for k, shape in enumerate(shapes):
        if shape != shapes[0]:
            raise LTRInputError(
                f"{name}[{k}] has shape {shape} but {name}[0] has shape {shapes[0]}: "
                f"{name} must be a flat array, one value per entry"
            )
    raise LTRInputError(f"{name} must be a flat array, one value per entry: {error}")


def _as_vector(values: Any, name: str) -> NDArray[Any]:
    """:func:`_as_array`, with a column or row vector (``qid[:, None]``, a one-column
    DataFrame ``df[["qid"]]``) flattened, as labels and sample weights are; any other
    shape as it is, for the caller to refuse."""
    arr = _as_array(values, name)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = np.ravel(arr)
    return arr


def _ragged(X: Any, error: Exception) -> LTRInputError:
    """The error for rows of different lengths (a list of lists), naming the first row
    whose length differs from row 0's."""
    try:
        lengths = [len(r) for r in X]
    except TypeError:
        return LTRInputError(f"X must be a 2-D array of numbers: {error}")
    for row, n in enumerate(lengths):
        if n != lengths[0]:
            return LTRInputError(
                f"X has {n} values in this row but {lengths[0]} in row 0: every row "
                "needs one value per feature",
                row=row,
            )
    return LTRInputError(f"X must be a 2-D array of numbers: {error}")


def _not_2d(shape: tuple) -> str:
    """The error for an ``X`` that is not 2-D; for a 1-D one, how to reshape it (with
    scikit-learn's "Reshape your data", which its check_fit2d_predict1d looks for)."""
    msg = f"X must be 2-D (n_samples, n_features), got shape {shape}"
    if len(shape) == 1:
        msg += (
            ". Reshape your data: X.reshape(1, -1) if it is one document, "
            "X.reshape(-1, 1) if it is one feature"
        )
    return msg


def _refuse_complex(a: Any, name: str) -> None:
    """Complex input would silently lose its imaginary part in a float conversion."""
    dtype = getattr(a, "dtype", None)
    if dtype is not None and dtype.kind == "c":
        # "Complex data not supported": scikit-learn's words (check_complex_data)
        raise LTRInputError(
            f"{name} is complex ({dtype}). Complex data not supported: it must hold real numbers"
        )
    if dtype is not None and dtype.kind == "O":
        for v in np.asarray(a).ravel()[:1000]:  # a cheap look at object arrays
            if isinstance(v, complex):
                raise LTRInputError(
                    f"{name} holds complex numbers. Complex data not supported: it must be real"
                )


def arrow_as_frame(X: Any) -> Any:
    """A pyarrow ``Table`` or ``RecordBatch``, or a polars ``DataFrame``, as a pandas
    DataFrame (Arrow-backed columns, nulls kept as missing values), so that its column
    names are kept and checked as a DataFrame's; anything else as it is.

    A polars frame was refused as "column 'a' has dtype Float64; features must be
    numeric" (its dtypes are no NumPy dtypes); a polars ``LazyFrame`` is refused
    naming ``collect()``."""
    module = type(X).__module__
    what = f"{module.partition('.')[0]} {type(X).__name__}"  # e.g. "polars DataFrame"
    if module.startswith("polars") and hasattr(X, "columns"):
        if not hasattr(X, "to_arrow"):
            raise LTRInputError(
                f"X is a polars {type(X).__name__}: collect() it into a DataFrame first"
            )
        X, module = X.to_arrow(), "pyarrow"
    if module.startswith("pyarrow") and hasattr(X, "column_names") and hasattr(X, "to_pandas"):
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError(
                f"X is a {what}, read through pandas: pip install 'ltrboost[pandas]' ({e})",
                name=e.name,
            ) from None

        return X.to_pandas(types_mapper=pd.ArrowDtype)
    return X


def select_columns(X: Any, feature_names: Sequence[str] | None) -> Any:
    """A pandas DataFrame ``X`` with its columns taken by name in the order of
    ``feature_names`` (the names stored at fit time), still a DataFrame; anything else,
    or no names, as it is.  LTRInputError names missing, unknown or duplicate columns
    (the rule :func:`as_feature_matrix` applies when it converts)."""
    X = arrow_as_frame(X)
    if feature_names is None or not (hasattr(X, "columns") and hasattr(X, "iloc")):
        return X
    have = [str(c) for c in X.columns]
    if have == list(feature_names):
        return X
    return _columns_by_name(X, [without_surrogates(c) for c in have], list(feature_names))


def _columns_by_name(
    X: Any,
    names: list[str],
    expected: list[str],
    *,
    against: str = "the feature names seen at fit time",
) -> Any:
    """``X``'s columns reordered to ``expected``; LTRInputError if the sets differ
    (``against`` says whose names ``expected`` are)."""
    missing = [c for c in expected if c not in names]
    unknown = [c for c in names if c not in expected]
    seen: set[str] = set()
    twice = sorted({c for c in names if c in seen or seen.add(c)})
    if missing or unknown or twice:
        parts = []
        if missing:
            parts.append(f"missing columns {missing}")
        if unknown:
            parts.append(f"unknown columns {unknown}")
        if twice:  # also beside a missing one: ['a', 'a'] for ['a', 'b'] said only 'b'
            parts.append(f"duplicate column names {twice}")
        # names are matched exactly (a model may have both 'a' and 'A'): point at an
        # unknown column that is a missing one but for case or surrounding spaces, or
        # spelled close to it (a typo)
        near: dict[bool, list[str]] = {True: [], False: []}
        for m in missing:
            found, case_only = close_names(m, unknown, n=1)
            if found:
                near[case_only].append(f"{found[0]!r} for {m!r}")
        if near[True]:
            parts.append(
                "names are matched exactly, and these differ only in case or in spaces "
                "around them: " + ", ".join(near[True])
            )
        if near[False]:
            parts.append("these are spelled close to a missing one: " + ", ".join(near[False]))
        raise LTRInputError(f"the DataFrame's columns do not match {against}: " + "; ".join(parts))
    position = {c: k for k, c in enumerate(names)}
    return X.iloc[:, [position[c] for c in expected]]


def close_names(name: str, names: Iterable[Any], n: int = 3) -> tuple[list[str], bool]:
    """The string names among ``names`` a user who typed ``name`` may have meant, for
    the hint of a column not found, and whether they differ from it only in case or in
    surrounding spaces: those first (``(found, True)``), else up to ``n`` that
    :func:`difflib.get_close_matches` finds close, compared casefolded (``lable`` for
    ``label``, ``qdi`` for ``qid``: ``(found, False)``); ``([], False)`` when none is.
    One helper for local fit, predict and Dask, so their hints agree."""
    import difflib

    strings = [c for c in names if isinstance(c, str) and c != name]
    key = name.strip().casefold()
    same = [c for c in strings if c.strip().casefold() == key]
    if same:
        return same, True
    folded: dict[str, list[str]] = {}
    for c in strings:
        folded.setdefault(c.strip().casefold(), []).append(c)
    close = difflib.get_close_matches(key, list(folded), n=n)
    return [c for k in close for c in folded[k]][:n], False


def has_qid_column(X: Any) -> bool:
    """X is a DataFrame with a ``qid`` column (call on :func:`arrow_as_frame`'s output)."""
    return hasattr(X, "columns") and hasattr(X, "drop") and "qid" in list(X.columns)


def split_prediction_qid(X: Any, feature_names: Sequence[str] | None) -> tuple[Any, Any]:
    """``(X, qid)``: a DataFrame ``X`` (or Arrow table, polars frame) without its ``qid``
    column, and that column's ids, when the model has no feature named ``qid``;
    otherwise ``(X, None)``.  The one rule of ``Ranker.predict`` and ``Booster.predict``
    (README: a ``qid`` column is not a feature): a frame holding its query ids predicts
    as the frame without them.  Two ``qid`` columns are refused (:func:`qid_column`)."""
    X = arrow_as_frame(X)
    if has_qid_column(X) and (feature_names is None or "qid" not in feature_names):
        return X.drop(columns="qid"), qid_column(X)
    return X, None


def qid_column(X: Any) -> Any:
    """The ids of the ``qid`` column of a DataFrame ``X``; LTRInputError when several
    columns are named ``qid`` (``X["qid"]`` is then a frame: its (n, 2) ids were
    refused as "qid has shape (120, 2) but X has 120 rows")."""
    n = list(X.columns).count("qid")
    if n > 1:
        raise LTRInputError(
            f"X has {n} columns named 'qid': the query ids are read from the one "
            "column of that name; drop or rename the others"
        )
    return X["qid"].to_numpy()


def check_feature_names_text(names: Sequence[Any] | None, what: str | None) -> None:
    """Refuse a feature name holding a lone surrogate (``"\\ud800"``: no Unicode
    text; a model file is UTF-8 JSON, and the exporters write UTF-8), naming it
    ``what[k]`` (``X column k`` for a DataFrame's columns, ``what`` None).  Before any
    training: a dataset whose ``feature_names`` were set by hand trained every round,
    then failed to save."""
    for k, name in enumerate(names or ()):
        bad = lone_surrogate(str(name))
        if bad is not None:
            where = f"X column {k} ({str(name)!r})" if what is None else f"{what}[{k}]={name!r}"
            raise LTRInputError(
                f"{where} holds a lone surrogate ({bad}), which is no Unicode text: a "
                "model file and its exports are UTF-8, so feature names must be valid "
                "text; rename the feature"
            )


def _refuse_duplicate_names(names: Sequence[str], *, columns: bool = False) -> None:
    """A model takes a DataFrame's columns by name (``predict``, ``score``, warm
    starts), so two features of one name would be ambiguous: refuse them, naming them.
    A name holding a lone surrogate (``"\\ud800"``: no Unicode text) is refused too,
    naming its index (``X column k`` for a DataFrame's ``columns``, else
    ``feature_names[k]``): a model file is UTF-8 JSON, and the exporters write UTF-8."""
    check_feature_names_text(names, None if columns else "feature_names")
    seen: set[str] = set()
    dup = [str(c) for c in names if str(c) in seen or seen.add(str(c))]
    if dup:
        raise LTRInputError(
            f"duplicate feature names {sorted(set(dup))}: columns are taken by name, so "
            "each must be distinct (names are compared as strings: 0 and '0' are both "
            "'0'); rename the columns"
        )


def _check_numeric_columns(X: Any) -> None:
    """Refuse a DataFrame column that is not numeric or boolean, naming it and the row
    of its first value (the first that is no number, for text).  An Arrow column of
    type null (all values null: pyarrow and polars infer it for a column of Nones) is a
    column of missing values; a NumPy object column is checked value by value
    (:func:`_object_columns_as_floats`)."""
    for k, dtype in enumerate(X.dtypes):
        kind = getattr(dtype, "kind", "O")
        if str(getattr(dtype, "pyarrow_dtype", "")) == "null" or _holds_numbers(dtype):
            continue
        # an Arrow dictionary column is a categorical one (a pandas category column
        # written to Parquet, read back with dtype_backend="pyarrow")
        categorical = str(dtype) == "category" or str(
            getattr(dtype, "pyarrow_dtype", "")
        ).startswith("dictionary")
        if str(dtype) == "category" or kind not in "biuf":
            if kind in "mM":
                advice = "convert dates and durations to numbers first, NaT to NaN"
            elif categorical:
                advice = (
                    "encode categories as numbers first, e.g. with .cat.codes or an OrdinalEncoder"
                )
            elif _is_string_dtype(dtype):
                advice = (
                    "encode strings as numbers first, e.g. with an OrdinalEncoder; convert "
                    "numbers written as text with .astype(float)"
                )
            else:  # periods, intervals, lists, ...
                advice = "convert the column to numbers first"
            row, value = _first_shown_value(X.iloc[:, k], text=_is_string_dtype(dtype))
            here = "" if row is None else f" ({value} in this row)"
            raise LTRInputError(
                f"column {str(X.columns[k])!r} has dtype {dtype}{here}; features must be "
                f"numeric ({advice})",
                row=row,
            )


def _is_object_dtype(dtype: Any) -> bool:
    """NumPy's object dtype itself (not pandas' string or categorical dtypes, whose
    ``kind`` is "O" too)."""
    return isinstance(dtype, np.dtype) and dtype.kind == "O"


def _holds_numbers(dtype: Any) -> bool:
    """A DataFrame column dtype whose values are converted one by one
    (:func:`_object_columns_as_floats`): NumPy's object dtype, and Arrow's decimals (a
    database's NUMERIC column, read through pyarrow: ``Decimal`` values)."""
    arrow = str(getattr(dtype, "pyarrow_dtype", ""))
    return _is_object_dtype(dtype) or arrow.startswith("decimal")


def _is_string_dtype(dtype: Any) -> bool:
    """pandas' string dtypes (``str``, ``string``, Arrow strings)."""
    arrow = str(getattr(dtype, "pyarrow_dtype", ""))
    return str(dtype) in ("str", "string") or arrow in ("string", "large_string", "string_view")


def _first_shown_value(column: Any, *, text: bool) -> tuple[int | None, str]:
    """The 0-based row and repr of a refused column's first non-missing value (with
    ``text``, of its first value that ``float()`` does not read, if any: the cell that
    made ``read_csv`` give a text column); (None, "") when every value is missing.
    Only on the error path."""
    values = column.to_numpy(dtype=object)
    present = np.flatnonzero(~column.isna().to_numpy(dtype=bool)).tolist()
    if not present:
        return None, ""
    row = present[0]
    if text:
        for r in present:
            try:
                float(values[r])
            except (TypeError, ValueError, OverflowError):
                row = r
                break
    value = values[row]
    return row, repr(value.item() if isinstance(value, np.generic) else value)


def _is_number_type(t: type) -> bool:
    """Whether values of type ``t`` in an object column are numbers (or missing): any
    real number (Python's, NumPy's, Fraction, Decimal, bool as 0 and 1), None and
    pandas' ``<NA>``; not text, complex, dates or durations (``np.timedelta64`` is a
    NumPy integer) or NaT."""
    if t is type(None) or t.__name__ == "NAType":
        return True
    if issubclass(t, np.timedelta64 | np.datetime64):
        return False
    return issubclass(t, numbers.Real | np.bool_ | decimal.Decimal)


def _object_columns_as_floats(X: Any) -> Any:
    """A DataFrame's NumPy object columns (``.astype(object)``, a bool column with a
    None, numbers of several Python types) as float64 columns, when every value is a
    number or missing (:func:`_is_number_type`; None, NaN and ``<NA>`` become NaN);
    else an LTRInputError naming the row and column of the first value that is not, or
    that no float64 holds.  ``X`` itself is not modified; without object columns it is
    returned as it is."""
    objects = [k for k, dtype in enumerate(X.dtypes) if _holds_numbers(dtype)]
    if not objects:
        return X
    X = X.copy(deep=False)
    for k in objects:
        values = X.iloc[:, k].to_numpy(dtype=object)
        odd = {t for t in set(map(type, values)) if not _is_number_type(t)}
        if odd:  # the types first, at C speed; a loop over the rows only to name one
            row = next(r for r, v in enumerate(values) if type(v) in odd)
            raise _object_value_error(X, k, row, values[row], "not a number")
        values = _pandas_na_as_nan(values)
        try:
            X.isetitem(k, values.astype(np.float64))
        except (TypeError, ValueError, OverflowError):  # 10**400, Decimal("sNaN")
            for row, v in enumerate(values):
                try:
                    float(v)
                except OverflowError:
                    raise _object_value_error(
                        X, k, row, v, "too large for a float64 (beyond ±1.8e308)"
                    ) from None
                except (TypeError, ValueError):
                    raise _object_value_error(X, k, row, v, "not a number") from None
            raise
    return X


def _object_value_error(X: Any, k: int, row: int, value: Any, problem: str) -> LTRInputError:
    """The error for value ``value`` of row ``row`` in object column ``k`` of ``X``."""
    name = str(X.columns[k])
    shown = _short_repr(value.item() if isinstance(value, np.generic | np.ndarray) else value)
    if isinstance(value, str | bytes):
        problem += f" (column {name!r} of dtype object holds text; {_TEXT_ADVICE})"
    elif problem == "not a number":
        problem += (
            f" (a {type(value).__name__}; features must be numbers: convert dates and "
            "durations to numbers, encode other values as numbers)"
        )
    return LTRInputError(f"feature {k} (column {name!r}) is {shown}: {problem}", row=row)


_ROW_IN_MESSAGE = re.compile(r"\by\[(\d+)\]")


@contextmanager
def rows_located(ds: RankingDataset) -> Iterator[None]:
    """Rewrite an error naming a row of ``ds`` as ``FILE:LINE: problem``, or, for
    arrays regrouped by query (``ds.order``), as the caller's row.

    The row is ``i`` of ``y[i]`` in the message, else the 0-based ``row`` of an
    :class:`LTRInputError` without a path.  For datasets read from a file
    (``ds.source`` and ``ds.row_lines`` set) the line is 1-based, as in every other
    input error.  For arrays whose rows were regrouped, the grouped row (what the
    objectives and metrics see) becomes the row the caller gave, ``ds.order[row]``
    (errors about explicit pairs name a ``pair``, not a row: they are left alone).
    An error naming a query by its position (``query_words``, see
    :func:`ltrboost.metrics.base.query_words`: a metric knows no ids) names it
    ``query <qid>`` when ``ds`` has the ids (:attr:`RankingDataset.query_ids`).
    Other errors pass unchanged.
    """
    try:
        yield
    except ValueError as e:
        _raise_naming_query(e, ds)
        if ds.source is None or ds.row_lines is None:
            _raise_in_callers_rows(e, ds)
            raise
        problem = getattr(e, "problem", None) or str(e)
        match = _ROW_IN_MESSAGE.search(problem)
        if match is not None:
            row = int(match.group(1))
            problem = problem.replace(f"y[{row}]", "label", 1)
            problem = problem.replace("label label", "label")
        elif isinstance(e, LTRInputError) and e.path is None and e.row is not None:
            row = int(e.row)  # ``row N: problem``, N a 0-based row of ``ds``
        else:
            raise
        if not 0 <= row < ds.row_lines.shape[0]:
            raise
        cls = ParameterInputError if isinstance(e, ParameterError) else LTRInputError
        raise cls(problem, path=ds.source, line=int(ds.row_lines[row])) from e


def _raise_naming_query(e: ValueError, ds: RankingDataset) -> None:
    """Re-raise ``e``, which names a query by its position (``e.query_words``), naming
    it by its id instead (as the objectives' errors do: ``query 7``); return when it
    names none or ``ds`` has no ids."""
    words, q = getattr(e, "query_words", None), getattr(e, "query", None)
    if words is None or q is None or ds.query_ids is None:
        return
    if not 0 <= q < len(ds.query_ids) or words not in str(e):
        return
    named = f"query {ds.query_ids[q]}"
    error = ValueError(str(e).replace(words, named, 1))
    error.query, error.query_words = q, named  # type: ignore[attr-defined]
    raise error from e


def _raise_in_callers_rows(e: ValueError, ds: RankingDataset) -> None:
    """Re-raise ``e`` with the grouped row it names as the caller's row
    (``ds.order[row]``); return when there is nothing to rewrite."""
    if ds.order is None or not isinstance(e, LTRInputError) or e.path is not None:
        return
    problem = e.problem
    match = _ROW_IN_MESSAGE.search(problem)
    row = int(match.group(1)) if match is not None else e.row
    if row is None or not 0 <= row < ds.order.shape[0]:
        return
    user_row = int(ds.order[row])
    if match is not None:
        problem = problem.replace(f"y[{row}]", f"y[{user_row}]", 1)
    cls = ParameterInputError if isinstance(e, ParameterError) else LTRInputError
    raise cls(problem, row=user_row) from e

"""Read and write svmlight / LETOR text: ``label [qid:Q] idx:val ... [# comment]``.

:func:`load_svmlight` parses a file into dense NumPy arrays in blocks of whole lines
(8 MiB): each block's line feeds and colons are counted (NumPy), then a Numba kernel
parses it into a row/column/value list that is scattered into ``X``, with the outputs
grown in place, so memory peaks near the size of the arrays returned.  The kernel is
``_scan_letor`` (the common case, little code to compile), or ``_parse_letor`` (all of
the grammar and every error) for a block that ``_scan_letor`` leaves to it.  Every
problem is reported as :class:`~ltrboost.dataset.LTRInputError` naming ``path:line``.
:func:`dense_blocks` gives the same rows a bounded block at a time (``ltrboost predict``).
:func:`dump_svmlight` writes the same format atomically and exactly (every value is
written in its shortest round-trip form).

Grammar accepted by the reader (one data line)::

    line    := ws* label (ws+ "qid:" integer)? (ws+ index ":" value)* ws* ("#" comment)?
    label   := number (finite)
    index   := [0-9]+ (1 .. 2**31 - 1, 1-based)
    value   := number | nan (missing) | na_token (missing) ; inf is rejected
    number  := [+-]? (digits ["." digits?] | "." digits) ([eE] [+-]? digits)?
               | [+-]? (nan | inf | infinity)          (case-insensitive)
    ws      := space, tab, CR, VT, FF                  (lines end at LF)

Numbers are converted exactly as Python's ``float()`` converts the same text: Clinger's
fast path, then the Eisel-Lemire algorithm (Lemire, "Number parsing at a gigabyte per
second", Software: Practice and Experience 51(8), 2021; its fallback-free form is
proved in Mushtak & Lemire, 2023), and ``float()`` itself for the rare token outside
both (more than 19 significant digits, absurd exponents).

Conventions, documented once here:

* Blank lines and comment-only lines are skipped; line numbers still count them.
* Features absent from a line are 0.0 (the svmlight convention) or NaN with
  ``missing="nan"``.  A value written as ``nan`` is always NaN (a missing value);
  ``inf`` is an error, as is a number that overflows to infinity.  Tokens passed as
  ``na_values`` (e.g. ``NULL``, LETOR 3.0 "Feature-null") are NaN as feature values.
* Feature indices need not be sorted on a line, but may not repeat.
* ``qid:`` is all-or-nothing: on every data line or on none.  Query ids need *not* be
  contiguous; :func:`ltrboost.dataset.group_by_qid` groups them later.
* Zero-based files (feature index 0) are rejected: LETOR and svmlight files are
  1-based (LightGBM and XGBoost read index ``k`` as column ``k``, so a 1-based file
  gives them an empty column 0 there, and a file written for them from 0 must be
  written again from 1).  So is a file whose header says ``# Column indices are
  zero-based`` (scikit-learn's ``dump_svmlight_file`` with a comment), even where
  index 0 never occurs.
"""

from __future__ import annotations

import errno
import io
import math
import os
import re
import stat
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost import _config
from ltrboost._callsite import external_stacklevel
from ltrboost._numba import inline_kernel, kernel
from ltrboost.dataset import LTRInputError, as_feature_matrix, check_labels, qid_array_kind
from ltrboost.io._atomic import atomic_write
from ltrboost.io.queryfile import read_query_file

__all__ = [
    "LetorData",
    "ReadMemoryError",
    "dump_svmlight",
    "letor_feature_names",
    "load_svmlight",
    "parse_docids",
]

MISSING_OPTIONS = ("zero", "nan")

# A typo such as ``100000000:0.5`` would otherwise ask for a dense matrix of ~1e8
# columns per row and end the process with an out-of-memory kill.  Refuse a dense X
# larger than both of these unless the caller confirms the width with ``n_features=``.
_DENSE_GUARD_BYTES = 1 << 30
_DENSE_GUARD_RATIO = 64

# Blocks are parsed by the small kernel _scan_letor first and only by _parse_letor when
# they hold something it leaves out (errors, nan/inf, very long numbers, NA tokens);
# False sends every block to _parse_letor (for tests comparing the two).
_FAST_SCAN = True

# The reader parses the file this many bytes at a time (whole lines), so its memory
# is the output arrays plus a few blocks.
_BLOCK_BYTES = 1 << 23

_MAX_INDEX = 2**31 - 1  # LightGBM and XGBoost store feature indices in int32
_MAX_QID = 2**63 - 1  # qids are int64; the reader takes +-(2**63 - 1)
_BOM = b"\xef\xbb\xbf"


class LetorData(NamedTuple):
    """What :func:`load_svmlight` returns.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features), dtype=float64, C order
    y : ndarray of shape (n_samples,), dtype=float64
    qid : ndarray of shape (n_samples,), dtype=int64, or None
        None when the file has no ``qid:`` and no ``.query`` sizes were found.
    comments : list of str, or None
        Text after ``#`` on each data line, stripped (``""`` when there is none);
        only with ``return_comments=True``.
    lines : ndarray of shape (n_samples,), dtype=int64
        The 1-based line of each row in the file (for error messages).
    feature_names : list of str
        (A property, not a field: the tuple still unpacks to five values.)  The LETOR
        feature id of each column of ``X``: ``["f1", ..., "fN"]`` for ``X[:, 0 .. N-1]``,
        the names ``ltrboost train`` stores in a model trained from a LETOR file and
        ``ltrboost convert`` gives its Parquet columns.  Pass them to name an array's
        columns as the CLI does, e.g.
        ``make_dataset(data.X, data.y, qid=data.qid, feature_names=data.feature_names)``
        (an array without names gives a model whose features show as ``f0, f1, ...``,
        the 0-based column).
    """

    X: NDArray[np.float64]
    y: NDArray[np.float64]
    qid: NDArray[np.int64] | None
    comments: list[str] | None
    lines: NDArray[np.int64] | None = None

    @property
    def feature_names(self) -> list[str]:
        return letor_feature_names(self.X.shape[1])


class ReadMemoryError(MemoryError):
    """A data file whose arrays do not fit in memory.

    Raised by :func:`load_svmlight` as soon as the rows read so far make ``X`` and a
    label, query id and line number a row more than this process may use
    (:func:`ltrboost._config.memory_budget`: physical memory, a cgroup memory limit,
    ``ulimit -v``); and by it and the block readers (:func:`dense_blocks`,
    :func:`labelled_blocks`) for a ``MemoryError`` while reading, instead of NumPy's
    "Unable to allocate ..." that names no file; by
    :func:`~ltrboost.io.parquet.letor_to_parquet` for a Parquet file's table (named by
    the output folder).  The message is one line,
    ``FILE: ...``, naming the shape, the bytes and what to do; ``cli_message`` says
    the same in the words of ltrboost's commands (their flags), which the CLI prints.
    A ``MemoryError``, as before, for callers that catch one.

    Attributes: ``path``, ``shape`` ``(rows, features)`` (rows read or asked
    for; None where a block of lines failed to parse) and ``nbytes``."""

    def __init__(
        self,
        message: str,
        *,
        cli: str,
        path: str,
        shape: tuple[int, int] | None,
        nbytes: int,
    ) -> None:
        super().__init__(message)
        self.cli_message = cli
        self.path = path
        self.shape = shape
        self.nbytes = nbytes


# A row's label, query id and line number, held beside X while reading (float64,
# int64, int64): the bytes a row costs besides its features.
_ROW_EXTRA_BYTES = 24


def _reading_bytes(rows: int, width: int) -> int:
    """Bytes of :func:`load_svmlight`'s arrays for ``rows`` rows ``width`` wide."""
    return rows * (8 * width + _ROW_EXTRA_BYTES)


def _bytes_text(nbytes: float) -> str:
    from ltrboost.explain import _bytes_text as text

    return text(nbytes)


def _memory_advice(n_features: int | None, max_idx: int) -> tuple[str, str]:
    """What to do about a file that does not fit, in Python's words and the CLI's."""
    py = cli = ""
    if n_features is not None and max_idx < n_features:
        py = (
            f"n_features={n_features} but the highest feature index read is {max_idx}: "
            "a smaller n_features (or none) reads narrower rows; "
        )
        cli = (
            f"its rows are read {n_features} features wide (--n-features, or the model's "
            f"or the training data's width) but the highest feature index read is "
            f"{max_idx}; "
        )
    py += (
        "read it a block of rows at a time (ltrboost.io.letor.dense_blocks) or a part of "
        "it at a time, or let this process use more memory"
    )
    cli += (
        "`ltrboost predict` reads its data a block of rows at a time, and `ltrboost eval` "
        "a file whose queries' lines are contiguous; otherwise split the file (whole "
        "queries) or let this process use more memory"
    )
    return py, cli


def _read_memory_error(
    path: str, problem: str, rows: int, width: int, n_features: int | None, max_idx: int
) -> ReadMemoryError:
    """``FILE: problem; advice`` for ``rows`` rows ``width`` wide, in Python's words and
    the CLI's (:func:`_memory_advice`)."""
    py, cli = _memory_advice(n_features, max_idx)
    return ReadMemoryError(
        f"{path}: {problem}; {py}",
        cli=f"{path}: {problem}; {cli}",
        path=path,
        shape=(rows, width),
        nbytes=_reading_bytes(rows, width),
    )


def _read_refused(
    path: str,
    rows: int,
    width: int,
    budget: tuple[int, str],
    n_features: int | None,
    max_idx: int,
) -> ReadMemoryError:
    """The refusal of a file whose ``rows`` rows read so far, ``width`` wide, are over
    ``budget``."""
    nbytes = _reading_bytes(rows, width)
    limit, what = budget
    need = (
        f"reading it needs about {_bytes_text(nbytes)} ({nbytes} bytes): {rows} rows"
        f" x {width} features of float64, with a label, query id and line "
        f"number a row, over {what} ({_bytes_text(limit)}, {limit} bytes)"
    )
    return _read_memory_error(path, need, rows, width, n_features, max_idx)


def _read_failed(
    path: str, line: int, rows: int, width: int, n_features: int | None, max_idx: int
) -> ReadMemoryError:
    """A ``MemoryError`` at ``line`` (the first line of the block being read) while
    the arrays held or asked for are ``rows`` rows ``width`` wide."""
    nbytes = _reading_bytes(rows, width)
    problem = (
        f"out of memory at line {line}: {rows} rows x {width} features of float64, with "
        f"a label, query id and line number a row, take {_bytes_text(nbytes)} "
        f"({nbytes} bytes), more than could be allocated"
    )
    return _read_memory_error(path, problem, rows, width, n_features, max_idx)


def _block_failed(path: str, line: int, block_len: int | None) -> ReadMemoryError:
    """A ``MemoryError`` reading or parsing the ``block_len`` bytes of lines from
    ``line`` (None: while reading them) in the block readers, whose arrays are a
    block's, never the file's."""
    what = "reading the lines" if block_len is None else (
        f"parsing the {_bytes_text(block_len)} ({block_len} bytes) of lines read"
    )  # fmt: skip
    problem = f"out of memory at line {line}: {what} from there needs more than could be allocated"
    if block_len is not None and block_len > 2 * _BLOCK_BYTES:
        problem += f" (a line in them is over {_BLOCK_BYTES} bytes long: is the file LETOR text?)"
    problem += "; let this process use more memory"
    return ReadMemoryError(
        f"{path}: {problem}", cli=f"{path}: {problem}", path=path, shape=None, nbytes=block_len or 0
    )


def _padded(X: NDArray[np.float64], width: int, fill: float, path: str, why: str):
    """``X`` with columns of ``fill`` up to ``width`` (``ltrboost eval`` of a model whose
    trees use a feature beyond the data's, ``why``), refused up front as
    :class:`ReadMemoryError` when the padded matrix is over what this process may use,
    and named so when it cannot be allocated (NumPy's message names no file)."""
    rows = X.shape[0]
    nbytes = rows * width * 8
    limit, what = _config.memory_budget()
    shape = (
        f"{rows} rows x {width} features of float64 take {_bytes_text(nbytes)} "
        f"({nbytes} bytes) ({why}, the file's highest feature index is {X.shape[1]})"
    )
    way = "split the file (whole queries) or let this process use more memory"
    if nbytes > limit:
        problem = f"{shape}, over {what} ({_bytes_text(limit)}, {limit} bytes)"
    else:
        try:
            out = np.empty((rows, width), dtype=X.dtype)
            out[:, : X.shape[1]] = X
            out[:, X.shape[1] :] = fill
            return out
        except MemoryError:
            problem = f"out of memory: {shape}, more than could be allocated"
    raise ReadMemoryError(
        f"{path}: {problem}; {way}", cli=f"{path}: {problem}; {way}", path=path,
        shape=(rows, width), nbytes=nbytes,
    )  # fmt: skip


def sidecar_problem(path: str | os.PathLike[str]) -> str:
    """Why a file found beside the data by its name (``TRAIN.query``,
    ``TRAIN.position``) that is not a regular file cannot be read: a folder, a link to
    a missing file, or anything else (a FIFO would block the read)."""
    if os.path.isdir(path):
        return "it is a folder"
    if not os.path.exists(path):
        return "it is a link to a missing file"
    return "it is not a regular file"


def letor_feature_names(n_features: int) -> list[str]:
    """``["f1", ..., "fN"]``: the LETOR feature id (1-based) of each of ``n_features``
    columns, as a model trained from a LETOR file and ``convert``'s Parquet name them
    (column ``j`` is the file's feature ``j + 1:``; RankLib's id of feature ``j`` is
    ``j + 1`` too)."""
    return [f"f{j + 1}" for j in range(int(n_features))]


def load_svmlight(
    path: str | os.PathLike[str],
    *,
    n_features: int | None = None,
    query_file: str | os.PathLike[str] | None = None,
    missing: str = "zero",
    return_comments: bool = False,
    na_values: str | Sequence[str] | None = None,
) -> LetorData:
    """Load an svmlight / LETOR text file into dense arrays.

    Parameters
    ----------
    path : str or path-like
        The data file (UTF-8; a BOM and CRLF line ends are accepted).
    n_features : int, optional
        Width of ``X``.  Narrower files are padded with absent features; a feature
        index above ``n_features`` is an error naming its line.  Default: the largest
        index in the file.
    query_file : str or path-like, optional
        LightGBM ``.query`` file of query sizes, for a data file without ``qid:``.
        Default: ``path + ".query"`` when that file exists and ``path`` has no ``qid:``.
        Queries read this way get ids ``0 .. n_queries - 1``.
    missing : {"zero", "nan"}, default="zero"
        Value of a feature absent from a line.
    return_comments : bool, default=False
        Also return the text after ``#`` of each data line.
    na_values : str or sequence of str, optional
        Feature values that mean "missing" and read as NaN, compared as exact,
        case-sensitive tokens; e.g. ``"NULL"`` for the LETOR 3.0 "Feature-null" files
        (``5:NULL``).  Labels and qids cannot be missing.  Without it such a value is
        an error naming its line.  Numbers cannot be NA tokens (``nan`` always is one).

    Returns
    -------
    LetorData
        ``(X, y, qid, comments, lines)``; see :class:`LetorData`.

    Raises
    ------
    LTRInputError
        For any malformed input, as ``path:line: problem`` (1-based line): no data
        lines, a missing or non-numeric or non-finite label, ``qid:`` on some lines
        only, a non-integer ``qid``, a malformed ``index:value`` token, a feature index
        that is not positive, repeats on its line or exceeds ``n_features``, an
        infinite value, text that is not UTF-8 (a compressed file is named as one),
        ``.query`` sizes that do not add up to the number of rows (the error names the
        ``.query`` file).
    ValueError
        For a bad ``n_features``, ``missing`` or ``na_values`` argument.
    ReadMemoryError
        A ``MemoryError`` naming the file, the shape and the bytes: as soon as the
        rows read so far make the arrays more than this process may use
        (:func:`ltrboost._config.memory_budget`), not after the file is read (the rows
        the first block projects for the whole file, from its size, only warn: a
        guess); or when an allocation fails while reading (the line reached named).
        A width from ``n_features`` above the file's highest index is named as a
        likely cause.

    Notes
    -----
    The file is parsed in blocks of lines into output arrays that grow in place, so
    the peak memory is close to the size of the returned arrays (plus about three
    8 MiB blocks: the text of one, its tokens and a temporary).
    """
    spath = os.fsdecode(path)  # bytes paths too: the sidecar name is built from it
    if missing not in MISSING_OPTIONS:
        raise ValueError(f"missing={missing!r} is not one of {MISSING_OPTIONS}")
    n_features = _check_n_features(n_features)
    na = _check_na_values(na_values)
    _refuse_parquet_folder(spath)
    with open(spath, "rb") as f:
        st = os.fstat(f.fileno())
        if stat.S_ISREG(st.st_mode):
            X, y, qid, comments, lines = _parse_stream(
                _read_blocks(f, _BLOCK_BYTES), st.st_size, spath, n_features, missing,
                return_comments, na,
            )  # fmt: skip
        else:  # a pipe or a device: parsed as read, its size known only at its end
            X, y, qid, comments, lines = _parse_stream(
                _read_blocks(f, _BLOCK_BYTES), None, spath, n_features, missing,
                return_comments, na,
            )  # fmt: skip
    qid = _attach_queries(spath, query_file, qid, lines)
    return LetorData(X, y, qid, comments, lines)


def dense_blocks(
    path: str | os.PathLike[str],
    n_features: int,
    *,
    width: int | None = None,
    missing: str = "zero",
    na_values: str | Sequence[str] | None = None,
    block_bytes: int,
) -> Iterator[NDArray[np.float64]]:
    """The rows of the LETOR file ``path``, in file order, as dense blocks: what
    ``load_svmlight(path, n_features=n_features, missing=missing, na_values=na_values).X``
    holds, a block at a time (``ltrboost predict``'s reader: its memory is a block's,
    never the file's).

    Each block is a C-ordered float64 array of shape (n_rows, ``width``), at most
    ``block_bytes`` bytes (one row at least); ``width`` (default ``n_features``) may be
    narrower than ``n_features``: the features beyond it are dropped (a model's trees
    that use only the first ``width``).  The blocks are views of one buffer, each
    overwritten by the next: use one before asking for the next.

    Every error of :func:`load_svmlight` is raised as it is, when the reading reaches
    it (the ``.query`` sidecar's once the last row is read): the blocks before it have
    been yielded.  The file is opened (and the arguments checked) at the call, before
    the first block is asked for."""
    return _open_blocks(path, n_features, width, missing, na_values, block_bytes, False)


class LabelledBlock(NamedTuple):
    """One block of :func:`labelled_blocks`: ``X`` (a view overwritten by the next
    block, as :func:`dense_blocks`' are) and, for its rows, the label ``y``, the query
    id ``qid`` (None when the file gives no queries) and the 1-based ``lines``."""

    X: NDArray[np.float64]
    y: NDArray[np.float64]
    qid: NDArray[np.int64] | None
    lines: NDArray[np.int64]


def labelled_blocks(
    path: str | os.PathLike[str],
    n_features: int,
    *,
    width: int | None = None,
    missing: str = "zero",
    na_values: str | Sequence[str] | None = None,
    block_bytes: int,
) -> Iterator[LabelledBlock]:
    """:func:`dense_blocks` with each row's label, query id and line: what
    ``load_svmlight(path, n_features=n_features, ...)`` returns, a block at a time
    (``ltrboost eval``'s reader).  The query ids are the file's ``qid:``, else those
    its ``.query`` sidecar gives (``0 .. n_queries - 1``, numbered as
    :func:`load_svmlight` numbers them), else None.  The errors are
    :func:`load_svmlight`'s, raised when the reading reaches them (the ``.query``
    sidecar's once the last row is read, as :func:`dense_blocks` does)."""
    return _open_blocks(path, n_features, width, missing, na_values, block_bytes, True)


def _open_blocks(
    path: str | os.PathLike[str],
    n_features: int,
    width: int | None,
    missing: str,
    na_values: str | Sequence[str] | None,
    block_bytes: int,
    labelled: bool,
) -> Iterator[Any]:
    """The arguments of :func:`dense_blocks` checked and the file opened, then its
    generator (of :class:`LabelledBlock` when ``labelled``)."""
    spath = os.fsdecode(path)
    if missing not in MISSING_OPTIONS:
        raise ValueError(f"missing={missing!r} is not one of {MISSING_OPTIONS}")
    n_features = _check_n_features(n_features)
    if n_features is None:
        raise ValueError("n_features=None: dense_blocks needs the width")
    width = n_features if width is None else min(int(width), n_features)
    na = _check_na_values(na_values)
    _refuse_parquet_folder(spath)
    f = open(spath, "rb")  # the generator closes it
    return _dense_blocks_of(f, spath, n_features, width, missing, na, block_bytes, labelled)


def _sidecar_bounds(path: str) -> NDArray[np.int64] | None:
    """The cumulative ``.query`` sizes beside ``path`` (a file without ``qid:``); None
    when there is none that reads (its error, if any, is :func:`_query_sizes`' once the
    rows are counted, where :func:`load_svmlight` raises it)."""
    sidecar = path + ".query"
    if not os.path.isfile(sidecar):
        return None
    try:
        return np.cumsum(read_query_file(sidecar))
    except (LTRInputError, OSError):
        return None


def _dense_blocks_of(
    f: Any,
    path: str,
    n_features: int,
    width: int,
    missing: str,
    na_values: tuple[str, ...],
    block_bytes: int,
    labelled: bool = False,
) -> Iterator[Any]:
    """:func:`dense_blocks`' generator, reading the open binary file ``f``; of
    :class:`LabelledBlock` when ``labelled``."""
    fill = 0.0 if missing == "zero" else np.nan
    na_buf, na_off = _na_arrays(na_values) if na_values else (None, None)
    info = np.zeros(_N_INFO, dtype=np.int64)
    info[_I_HAS_QID] = -1
    max_rows = max(1, block_bytes // (8 * max(width, 1)))
    X = np.empty((0, width), dtype=np.float64)
    n_rows = 0
    first_line = 0
    bounds = y = qid = row_line = None
    with f:
        blocks = iter(_read_blocks(f, _BLOCK_BYTES))
        first = True
        while True:
            block = b = None  # gone before the next block is read (peak memory)
            at_line = int(info[_I_LINES]) + 1
            try:  # NumPy's "Unable to allocate ..." names no file
                block = _next_block(blocks, path, info)
                if block is None:
                    break
                b = _checked_block(block, first, path, n_features, info, na_buf, na_off)
            except MemoryError:
                size = None if block is None else len(block)
                block = None
                raise _block_failed(path, at_line, size) from None
            first = False
            nb = b.n_rows
            if nb == 0:
                continue
            if n_rows == 0:
                first_line = int(b.row_line[0])
                if labelled and info[_I_HAS_QID] != 1:  # queries from a .query file?
                    bounds = _sidecar_bounds(path)
            row0 = n_rows
            n_rows += nb
            # only the features are kept while the rows are scored (labels, qids and
            # line numbers were ~5 int64 a row: most of the memory of short lines)
            row_ptr, cols, vals = b.row_ptr, b.cols, b.vals
            if labelled:
                y, row_line = b.y, b.row_line
                if info[_I_HAS_QID] == 1:
                    qid = b.qid
                elif bounds is not None:  # rows beyond the sizes: an error at the end
                    rows = np.arange(row0, row0 + nb, dtype=np.int64)
                    qid = np.searchsorted(bounds, rows, side="right").astype(np.int64)
                else:
                    qid = None
            block = b = None
            if width < n_features:  # drop the features beyond the width
                keep = cols <= width
                if not keep.all():
                    kept = np.zeros(keep.shape[0] + 1, dtype=np.int64)
                    np.cumsum(keep, out=kept[1:])
                    row_ptr, cols, vals = kept[row_ptr], cols[keep], vals[keep]
            for r0 in range(0, nb, max_rows):
                r1 = min(r0 + max_rows, nb)
                if X.shape[0] < r1 - r0:
                    X = np.empty((min(max_rows, nb), width), dtype=np.float64)
                lo, hi = int(row_ptr[r0]), int(row_ptr[r1])
                _fill_csr(row_ptr[r0 : r1 + 1] - lo, cols[lo:hi], vals[lo:hi], r1 - r0, X, 0, fill)
                if not labelled:
                    yield X[: r1 - r0]
                    continue
                yield LabelledBlock(
                    X[: r1 - r0],
                    y[r0:r1].copy(),
                    None if qid is None else qid[r0:r1].copy(),
                    row_line[r0:r1].copy(),
                )
            row_ptr = cols = vals = y = qid = row_line = None
    if n_rows == 0:
        raise _empty_file_error(path)
    _query_sizes(path, None, bool(info[_I_HAS_QID] == 1), n_rows, first_line)


def require_qid(data: LetorData, path: str | os.PathLike[str]) -> NDArray[np.int64]:
    """``data.qid``, or :class:`LTRInputError` naming ``path`` when the file gave no
    queries (no ``qid:`` and no ``.query`` file), for callers that rank it."""
    if data.qid is None:
        spath = os.fsdecode(path)
        stem = os.path.splitext(spath)[0] + ".query"
        hint = ""
        if stem != spath + ".query" and os.path.isfile(stem):
            # LightGBM's name is the data file's whole name plus .query
            hint = f" ({stem} is there: name it {spath}.query to have it read)"
        raise LTRInputError(
            f"no qid: on any line and no .query file beside it{hint}; queries are required",
            path=spath,
        )
    return data.qid


def first_line_has_qid(path: str, limit: int = 1 << 20) -> bool | None:
    """Whether the first data line of the LETOR file ``path`` has ``qid:`` (the reader
    refuses a file where some lines have it and others not, so the first one tells);
    None when ``path`` is no regular file or its first ``limit`` bytes hold no data line."""
    try:
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            head = f.read(limit)
    except OSError:
        return None
    lines = head.split(b"\n")
    if len(head) == limit:
        lines = lines[:-1]  # the last one may be cut
    for k, raw in enumerate(lines):
        line = raw.split(b"#", 1)[0]
        if k == 0:
            line = line.removeprefix(_BOM)
        tokens = line.split()
        if tokens:
            return len(tokens) > 1 and tokens[1].startswith(b"qid:")
    return None


class SharedQueriesWarning(UserWarning):
    """A validation (or test) set shares query ids with the training set: its metrics,
    and the best iteration and early stopping chosen on them, are those of queries the
    model trains on (:func:`shared_query_ids`).  Filter this class where the sets number
    their queries apart (equal ids, other queries)."""


def shared_query_ids(
    train: Any,
    other: Any,
    consequence: str,
    *,
    other_name: str | None = None,
    train_name: str = "the training set",
) -> str:
    """What the dataset ``other`` (a validation or test set) shares with the training
    set ``train`` ('' when nothing): the count of query ids in both, naming the sets,
    then ``consequence`` (what the shared queries make of ``other``'s numbers).  Sets
    cut from one by rows rather than by queries put a query in both.

    A set read from a file (:attr:`~ltrboost.dataset.RankingDataset.source`) is named
    by its path, else by ``other_name`` / ``train_name``.  Files get a caveat: in some
    LETOR sets the ids are numbered per file, so equal ids are other queries (MQ2008's
    folds share none); ids that a ``.query`` file gave (``0, 1, ...`` in every file,
    the line having no ``qid:``) are never compared.  Ids given in Python are the
    caller's: equal ids are one query; ids of two kinds (numbers in one set, strings in
    the other) are other queries, as grouping takes them.  The callers warn
    (:class:`SharedQueriesWarning`), not refuse."""
    if train.query_ids is None or other.query_ids is None:
        return ""
    ids, other_ids = np.asarray(train.query_ids), np.asarray(other.query_ids)
    # numbers in one set, strings in the other: other queries, as grouping takes 5 and
    # "5" (NumPy compared them as text, "0" == 0, or raised on an object array's str < int)
    if qid_array_kind(ids) != qid_array_kind(other_ids):
        return ""
    both = np.intersect1d(*_exactly_comparable(ids, other_ids))
    if both.size == 0:
        return ""
    for ds in (train, other):  # sizes from FILE.query: numbered per file
        if ds.source is not None and first_line_has_qid(ds.source) is False:
            return ""
    files = train.source is not None and other.source is not None
    named = other.source if other.source is not None else other_name
    with_ = train.source if train.source is not None else train_name
    return (
        f"{named} shares {both.size} query ids with {with_} (of its "
        f"{len(other.query_ids)}; e.g. qid {both[0]}): "
        f"{'unless its ids are numbered per file, ' if files else ''}{consequence}"
    )


def _exactly_comparable(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` in one integer dtype when one holds uint64 ids and the other
    signed ones (NumPy compares that pair as float64, where 64-bit ids, hashes say,
    beyond 2**53 collapse into each other): the negative ids, which no uint64 id
    equals, are left out and the rest taken as uint64."""
    kinds = {a.dtype.kind, b.dtype.kind}
    if kinds != {"u", "i"}:
        return a, b
    signed, unsigned = (a, b) if a.dtype.kind == "i" else (b, a)
    signed = signed[signed >= 0].astype(np.uint64)
    unsigned = unsigned.astype(np.uint64)
    return (signed, unsigned) if a.dtype.kind == "i" else (unsigned, signed)


def parse_docids(comments: Iterable[str | None]) -> list[str | None]:
    """Extract the LETOR document id (``docid = GX000-00-0000000``) from each comment.

    Parameters
    ----------
    comments : iterable of str or None
        For instance ``load_svmlight(path, return_comments=True).comments``.

    Returns
    -------
    list of str or None
        The id after ``docid =`` (spaces around ``=`` optional), or None where a
        comment has none.
    """
    out: list[str | None] = []
    for comment in comments:
        match = _DOCID_RE.search(comment) if comment else None
        out.append(match.group(1) if match else None)
    return out


def dump_svmlight(
    path: str | os.PathLike[str],
    X: ArrayLike,
    y: ArrayLike,
    qid: ArrayLike | None = None,
    comments: Sequence[str] | None = None,
    *,
    zero_based: bool = False,
) -> None:
    """Write arrays as svmlight / LETOR text, atomically and exactly.

    Each line is ``label [qid:Q] idx:val ... [# comment]``.  Values are written in
    Python's shortest round-trip form (``repr``, with a trailing ``.0`` dropped), so
    :func:`load_svmlight` returns bit-identical numbers.  Zeros are written (LETOR
    files are dense); NaN features are *skipped*, i.e. written as absent, which is the
    svmlight way to say "missing" and what other readers understand.  Load with
    ``missing="nan"`` to get the NaNs back.

    Parameters
    ----------
    path : str or path-like
        Destination.  The text goes to a temporary file in the same directory, is
        flushed and ``fsync``-ed, then replaces ``path`` with ``os.replace``.
    X : array-like of shape (n_samples, n_features)
        Finite numbers or NaN, read as :class:`ltrboost.Ranker` reads it: a NumPy
        array, a pandas DataFrame (``<NA>`` of a nullable or Arrow-backed column is
        missing), a pyarrow Table or a SciPy sparse matrix (written densely, its zeros
        included).
    y : array-like of shape (n_samples,)
        Finite labels.
    qid : array-like of shape (n_samples,), optional
        Integer query ids, written as ``qid:Q``.
    comments : sequence of str, optional
        Written after ``#``, one per row; may not contain a line break.
    zero_based : bool, default=False
        Write feature indices from 0 (for tools that expect it).  :func:`load_svmlight`
        reads only 1-based files.

    Raises
    ------
    ValueError
        On shape mismatches, non-finite labels, infinite features, non-integer qids,
        qids outside +-(2**63 - 1) (the reader's range) or comments with line breaks.
    """
    atomic_write(path, svmlight_lines(X, y, qid, comments, zero_based=zero_based))


def _check_svmlight_arrays(
    X: ArrayLike, y: ArrayLike, qid: ArrayLike | None, comments: Sequence[str] | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[int] | None, list[str] | None]:
    """:func:`dump_svmlight`'s checks; ``(X, y, qid as ints or None, comments)``."""
    # X read as fit reads it: a DataFrame's <NA> (nullable, Arrow-backed) is NaN, a
    # sparse matrix is densified, text, dates and inf are refused naming row and
    # column; np.asarray(X, dtype=float64) raised a bare TypeError for <NA> and
    # "setting an array element with a sequence" for a sparse matrix
    X, _ = as_feature_matrix(X, copy=False)
    X = np.asarray(X, dtype=np.float64)  # float32 written as the float64 it is
    n_samples = X.shape[0]
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (n_samples,):
        raise ValueError(f"y has shape {y.shape}, expected ({n_samples},)")
    y = check_labels(y, n_samples)  # the package's one label check (finite)
    qid_list: list[int] | None = None
    if qid is not None:
        q = np.asarray(qid)
        if q.shape != (n_samples,):
            raise ValueError(f"qid has shape {q.shape}, expected ({n_samples},)")
        if q.size and q.dtype.kind not in "iu":
            if q.dtype.kind != "f" or not np.all(np.isfinite(q) & (q == np.round(q))):
                raise ValueError("qid must hold integers")
        if q.size:
            # The reader takes qids in +-(2**63 - 1); astype(np.int64) would wrap
            # larger ones silently into other (or unreadable) qids.
            if q.dtype.kind == "f":
                out = np.abs(q) >= 2.0**63
            elif q.dtype.kind == "u":
                out = q > np.uint64(_MAX_QID)
            else:
                out = q.astype(np.int64) < -_MAX_QID
            if out.any():
                k = int(np.flatnonzero(out)[0])
                raise ValueError(
                    f"qid[{k}]={q[k].item()!r} is outside +-(2**63 - 1), the qids "
                    "load_svmlight reads"
                )
        qid_list = q.astype(np.int64).tolist()
    if comments is not None:
        comments = list(comments)
        if len(comments) != n_samples:
            raise ValueError(f"comments has {len(comments)} entries, expected {n_samples}")
        for k, text in enumerate(comments):
            if "\n" in text or "\r" in text:
                raise ValueError(f"comments[{k}] contains a line break")
    return X, y, qid_list, comments


def svmlight_lines(
    X: ArrayLike,
    y: ArrayLike,
    qid: ArrayLike | None = None,
    comments: Sequence[str] | None = None,
    *,
    zero_based: bool = False,
) -> Iterable[str]:
    """:func:`dump_svmlight`'s lines, for a caller that writes them with other files
    (:func:`ltrboost.io._atomic.atomic_write_files`); the arguments are checked at the
    call, as :func:`dump_svmlight` checks them."""
    X, y, qid_list, comments = _check_svmlight_arrays(X, y, qid, comments)
    n_samples = X.shape[0]
    offset = 0 if zero_based else 1
    names = [f" {j + offset}:" for j in range(X.shape[1])]

    def lines() -> Iterable[str]:
        for i in range(n_samples):
            parts = [_format_number(float(y[i]))]
            if qid_list is not None:
                parts.append(f" qid:{qid_list[i]}")
            for name, v in zip(names, X[i].tolist(), strict=True):
                if v == v:  # NaN != NaN: skipped, i.e. missing
                    parts.append(name)
                    parts.append(_format_number(v))
            if comments is not None:
                parts.append(" # " + comments[i] if comments[i] else " #")
            parts.append("\n")
            yield "".join(parts)

    return lines()


# --- helpers (Python) ---

_DOCID_RE = re.compile(r"\bdocid\s*=\s*(\S+)")

# Error codes written by ``_parse_letor`` into ``info[_I_ERR]``.
_E_NONE = 0
_E_NO_LABEL = 1
_E_BAD_LABEL = 2
_E_NONFINITE_LABEL = 3
_E_QID_MISSING = 4
_E_QID_UNEXPECTED = 5
_E_BAD_QID = 6
_E_BAD_TOKEN = 7
_E_QID_POSITION = 8
_E_BAD_INDEX = 9
_E_INDEX_NONPOS = 10
_E_INDEX_OVERFLOW = 11
_E_INDEX_TOO_BIG = 12
_E_BAD_VALUE = 13
_E_INF_VALUE = 14
_E_DUP_INDEX = 15
# A bad index:value token at info[_I_ERR_START], still to be classified by
# _feature_error (called by _parse_block, so that a well-formed file never compiles it).
_E_FEATURE = 16

# Layout of the kernel's ``info`` output.
_I_ROWS = 0
_I_TOKENS = 1
_I_SLOW = 2
_I_MAX_IDX = 3
_I_MAX_IDX_LINE = 4
_I_HAS_QID = 5
_I_FIRST_LINE = 6
_I_ERR = 7
_I_ERR_LINE = 8
_I_ERR_START = 9
_I_ERR_END = 10
_I_ERR_AUX = 11
_I_LINES = 12
_I_UNSORTED = 13  # rows of this block whose indices are not increasing (see unsorted)
# Set (by _parse_block, not the kernels) once a block needed _parse_letor: the later
# blocks of the file go to it directly instead of trying _scan_letor first.
_I_FULL = 14
_N_INFO = 15


def _check_n_features(n_features: Any) -> int | None:
    """Validate ``n_features`` (None or a non-negative int)."""
    if n_features is None:
        return None
    if isinstance(n_features, bool) or not isinstance(n_features, int | np.integer):
        raise ValueError(f"n_features={n_features!r} must be an int or None")
    if not 0 <= int(n_features) <= _MAX_INDEX:
        raise ValueError(f"n_features={n_features} must be between 0 and {_MAX_INDEX}")
    return int(n_features)


def _format_number(v: float) -> str:
    """Shortest text that ``float()`` maps back to exactly ``v`` ("2" for 2.0)."""
    text = repr(v)
    return text[:-2] if text.endswith(".0") else text


def _token_text(data: bytes, start: int, end: int) -> str:
    """Bytes ``data[start:end]`` as a short printable string for a message."""
    text = data[start:end].decode("utf-8", errors="replace")
    return text if len(text) <= 40 else text[:37] + "..."


def _check_utf8(data: bytes, path: str, line0: int = 0) -> None:
    """Raise ``LTRInputError`` at the first byte that is not UTF-8.

    ``data`` starts after line ``line0`` of the file.
    """
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = line0 + data.count(b"\n", 0, err.start) + 1
        byte = f"byte 0x{data[err.start]:02x}"
        # a comment in another encoding (a Latin-1 "# café") was asked "is this a
        # binary file?": the file is text, its comment is not UTF-8
        if b"#" in data[data.rfind(b"\n", 0, err.start) + 1 : err.start]:
            why = (
                f"not UTF-8 text ({byte}) in the comment after '#' (comments are read as "
                "UTF-8 too); re-encode the file, e.g. iconv -f latin1 -t utf-8"
            )
        else:
            why = f"not UTF-8 text ({byte}); is this a binary file?"
        raise LTRInputError(why, path=path, line=line) from None


_ZERO_BASED_HINT = " (scikit-learn's dump_svmlight_file writes them from 0 unless zero_based=False)"
# The header scikit-learn's dump_svmlight_file writes (with comment=...) in a zero-based
# file: such a file whose column 0 is never written reads without an index 0, every
# feature one column to the left, unless the header is believed.
_ZERO_BASED_HEADER = b"# Column indices are zero-based"


def _check_header(block: bytes, start: int, path: str) -> None:
    """Refuse a file whose leading comment lines (the first 64 lines at most, before
    the first data line) say that its column indices are zero-based."""
    pos = start
    for line in range(1, 65):
        if pos >= len(block):
            return
        end = block.find(b"\n", pos)
        end = len(block) if end < 0 else end
        text = block[pos:end].strip(b" \t\r\v\f")
        if text and not text.startswith(b"#"):
            return  # a data line: the header is over
        if text == _ZERO_BASED_HEADER:
            raise LTRInputError(
                "the file's header says its column indices are zero-based; feature indices "
                "are 1-based" + _ZERO_BASED_HINT + ": write it again with zero_based=False",
                path=path,
                line=line,
            )
        pos = end + 1


# The leading bytes of compressed files, to name one that fails to parse.
_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"PK\x03\x04", "zip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


# ``ltrboost convert``'s output (a Parquet file, or its folder) given as LETOR text.
_PARQUET_MAGIC = b"PAR1"
_PARQUET_HINT = (
    "ltrboost convert's output?); this reads LETOR/svmlight text: give the text file "
    "(Parquet is for ltrboost.dask, README: Training on Dask)"
)


def _refuse_parquet_folder(path: str) -> None:
    """A folder of Parquet files as the data file: say what it is (open() said only
    'Is a directory').  Parquet is found by name (``.parquet``, ``.pq``, ``.parq``, any
    case) or by the ``PAR1`` magic number (Spark's ``part-00000``), and in the
    ``key=value`` subfolders of a Hive-partitioned dataset (pyarrow's and Spark's
    ``qid=3/``); a few entries are looked at, never the whole tree."""
    try:
        if not os.path.isdir(path):
            return
        parquet = _holds_parquet(path, depth=2)
    except OSError:
        return  # open() names the problem
    if parquet:
        raise IsADirectoryError(
            errno.EISDIR, f"is a folder of Parquet files ({_PARQUET_HINT}", path
        )


_PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")


def _holds_parquet(folder: str, depth: int, budget: int = 64) -> bool:
    """Whether one of the first ``budget`` entries of ``folder`` is a Parquet file, or
    (``depth`` > 1) a ``key=value`` folder holding one."""
    with os.scandir(folder) as entries:
        for _, e in zip(range(budget), entries, strict=False):
            if e.name.casefold().endswith(_PARQUET_SUFFIXES):
                return True
            try:
                if e.is_file():
                    with open(e.path, "rb") as f:
                        if f.read(4) == _PARQUET_MAGIC:
                            return True
                elif depth > 1 and "=" in e.name and e.is_dir():
                    if _holds_parquet(e.path, depth - 1, budget):
                        return True
            except OSError:
                continue  # an unreadable entry says nothing
    return False


def _compression(block: bytes) -> str | None:
    """The compression format whose magic number ``block`` (a file's start) begins
    with, or None."""
    return next((kind for magic, kind in _MAGIC if block.startswith(magic)), None)


def compressed_problem(head: bytes, problem: str) -> str | None:
    """The ``problem`` a text file's reader met, said of a compressed file for what it
    is, when its first bytes ``head`` are a compression format's magic number (LETOR
    sets, click logs and pairs files ship compressed); None for any other file."""
    kind = _compression(head)
    if kind is None:
        return None
    return (
        f"the file is {kind}-compressed ({problem}): decompress it first; ltrboost reads plain text"
    )


def dense_limit(n_bytes: int) -> int:
    """The most bytes a dense ``X`` read from an ``n_bytes`` file may take unless its
    width is confirmed (``n_features=``): a typo'd index, or a model's claim, must not
    ask for a matrix far larger than the file."""
    return max(_DENSE_GUARD_BYTES, _DENSE_GUARD_RATIO * n_bytes)


# A width above this that a model or other data imposes on a file is checked against
# the file (:func:`imposed_width`); up to it a dense row costs at most 512 KiB.
WIDE = 1 << 16


def width_error_as(e: LTRInputError, n_features: int, instead: str) -> LTRInputError | None:
    """The reader's "feature index K is larger than n_features=N" (``e``), its words after
    the index replaced by ``instead`` (e.g. "is above the 3 features of the training data
    (train.txt)"), FILE:LINE kept: commands that have no ``n_features`` keyword name what
    set the width.  None for any other error."""
    too_big = f" is larger than n_features={n_features}"
    if not (e.problem.startswith("feature index ") and too_big in e.problem):
        return None
    return LTRInputError(e.problem.replace(too_big, " " + instead), path=e.path, line=e.line)


def imposed_width(
    path: str,
    width: int | None,
    owner: str,
    owner_path: str,
    *,
    missing: str = "zero",
    na_values: str | Sequence[str] | None = None,
) -> int | None:
    """``width``, the ``n_features`` that ``owner`` (a model resumed, or the training
    data) fixes for the data file ``path`` (None: the file's own), once a wide one is
    found not to make ``X`` far larger than :func:`dense_limit` allows: a model may
    claim 2**24 unused features, and a small training file one huge index, so that a
    larger file read at that width would not fit.  Raises ``LTRInputError`` naming
    ``owner_path``.  A file above :data:`WIDE` is read once more to check it (a pipe,
    which cannot be, is not checked)."""
    if width is None or width <= WIDE or not os.path.isfile(path):
        return width
    try:
        data = load_svmlight(path, missing=missing, na_values=na_values)
    except LTRInputError as e:
        if getattr(e, "width_guard", None) is None:
            raise
        return width  # the data itself is that wide
    rows, own = data.X.shape
    if own < width and rows * width * 8 > dense_limit(os.path.getsize(path)):
        raise LTRInputError(
            f"{owner} has {width} features but the highest feature index of {path} is "
            f"{own}: read at that width, it is {rows} x {width} float64 "
            f"({rows * width * 8 / 2**30:.1f} GiB), far more than the file; is {owner}'s "
            "width right?",
            path=owner_path,
        )
    return width


def _empty_file_error(path: str) -> LTRInputError:
    return LTRInputError(
        "no data lines (the file is empty or holds only blank and comment lines)",
        path=path,
        line=1,
    )


class _BinaryLine(Exception):
    """A line longer than a block holds a NUL byte (see :func:`_read_blocks`)."""


def _read_blocks(f: Any, block_bytes: int) -> Iterable[bytes]:
    """Whole lines of the binary file ``f``, about ``block_bytes`` at a time.

    Every block but the last ends with LF; a line longer than ``block_bytes`` is joined
    from its pieces once its end is read (no quadratic re-copying).  The last read's
    bytes stay in one block.  A piece of such a line that holds a NUL byte (no text
    does) raises :class:`_BinaryLine` at once: binary data, or an endless device such
    as ``/dev/zero``, whose one line would otherwise be gathered until memory runs out.
    """
    parts: list[bytes] = []
    while True:
        chunk = f.read(block_bytes)
        if not chunk:
            break
        if len(chunk) < block_bytes:
            # A short read is the end of the file: keep its last line (no LF) in the
            # same block as the lines before it, so a block's checks (UTF-8 first)
            # do not depend on whether the file ends with LF.
            parts.append(chunk)
            continue
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:
            if b"\0" in chunk:
                raise _BinaryLine
            parts.append(chunk)
            continue
        tail = chunk[cut:]
        if parts:
            parts.append(chunk[:cut])
            lines = b"".join(parts)
        else:
            lines = chunk if cut == len(chunk) else chunk[:cut]
        # Hold no block while the caller parses this one or the next is read: a chunk
        # kept across the yield, or these lines kept across the next read, would add
        # a block's bytes to the peak (bench/bench_reader_memory.py).
        chunk = None
        parts = [tail] if tail else []
        yield lines
        lines = None
    if parts:
        lines = b"".join(parts)
        parts = []
        yield lines


def _na_arrays(na_values: Sequence[str]) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """The NA tokens for the kernel: concatenated UTF-8 bytes and their offsets."""
    encoded = [t.encode("utf-8") for t in na_values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(t) for t in encoded], dtype=np.int64)
    joined = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    return joined, offsets


def _check_na_values(na_values: Any) -> tuple[str, ...]:
    """Validate ``na_values`` (None, a str, or strings): non-numeric tokens."""
    if na_values is None:
        return ()
    if isinstance(na_values, str):
        tokens: tuple[Any, ...] = (na_values,)
    elif isinstance(na_values, Iterable):
        tokens = tuple(na_values)
    else:
        raise ValueError(f"na_values={na_values!r} must be a string or a list of strings")
    for tok in tokens:
        if not isinstance(tok, str):
            raise ValueError(f"na_values entries must be strings, got {tok!r}")
        if not tok or any(c.isspace() or c in ":#" for c in tok):
            raise ValueError(
                f"na_values entry {tok!r} must be a non-empty token without whitespace, ':' or '#'"
            )
        if _NUMBER_RE.fullmatch(tok):
            raise ValueError(
                f"na_values entry {tok!r} is a number; only non-numeric tokens can "
                "mark missing values (nan is always missing)"
            )
    return tokens


_CR_ONLY = (
    "the file has no LF line ends, only CRs (classic Mac OS line ends?): it would read as "
    "one line, every record after its first '#' part of a comment; convert them, e.g. "
    "tr '\\r' '\\n' < IN > OUT"
)
# a CR, blanks, then what begins a record (its label)
_CR_RECORD_RE = re.compile(rb"\r[ \t\v\f\r]*[-+.0-9]")


def _cr_hides_records(block: bytes, start: int) -> bool:
    """Whether ``block`` (a file's first block, from byte ``start``: after a BOM) has no
    LF and, after its first '#', a CR followed by what begins a record: classic Mac OS
    line ends, where the file parses as one line whose comment holds every later record
    (one row read, or none, without an error).  A CR with no comment before it, or with
    no record after it (``0 #c\\r``), is only whitespace inside the line, as elsewhere."""
    if b"\n" in block:
        return False
    comment = block.find(b"#", start)
    return comment >= 0 and _CR_RECORD_RE.search(block, comment) is not None


def _parse_bytes(
    data: bytes,
    path: str,
    n_features: int | None,
    missing: str,
    return_comments: bool,
    *,
    na_values: Sequence[str] = (),
    block_bytes: int | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | None, Any, Any]:
    """Parse file contents held in memory (see :func:`_parse_stream`)."""
    blocks = _read_blocks(io.BytesIO(data), block_bytes or _BLOCK_BYTES)
    return _parse_stream(
        blocks, len(data), path, n_features, missing, return_comments, tuple(na_values)
    )


def _parse_stream(
    blocks: Iterable[bytes],
    n_bytes: int | None,
    path: str,
    n_features: int | None,
    missing: str,
    return_comments: bool,
    na_values: tuple[str, ...],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | None, Any, Any]:
    """Parse a file given as blocks of whole lines, ``n_bytes`` long in all.

    Each block is parsed by the kernel into its own small row and token arrays, then
    copied into the outputs, which grow in place (``ndarray.resize`` is a ``realloc``)
    and are sized from the share of the file read so far; so the peak memory is the
    output plus a few blocks.  Returns ``(X, y, qid_or_None, comments_or_None,
    row_lines)`` where ``row_lines`` (int64, one per data row) holds the 1-based line of
    each row.  ``n_bytes`` None: a pipe or device, whose size is known only at its end;
    the dense-size guard then counts the bytes read so far.
    """
    fill = 0.0 if missing == "zero" else np.nan
    # No NA tokens: None, so that the kernel's NA branch is pruned (never compiled).
    na_buf, na_off = _na_arrays(na_values) if na_values else (None, None)
    guard = dense_limit(n_bytes or 0)
    info = np.zeros(_N_INFO, dtype=np.int64)
    info[_I_HAS_QID] = -1
    n_rows = 0
    max_idx = 0
    max_idx_line = 0
    width = 0 if n_features is None else n_features
    X: NDArray[np.float64] | None = np.empty((0, width), dtype=np.float64)
    y = np.empty(0, dtype=np.float64)
    qid = np.empty(0, dtype=np.int64)
    row_line = np.empty(0, dtype=np.int64)
    comments: list[str] | None = [] if return_comments else None
    consumed = 0
    budget: tuple[int, str] | None = None  # _config.memory_budget(), at the first rows
    warned = False  # whether a projection over the budget was warned about
    at_line, asked = 1, 0  # where a MemoryError happens, and the rows then asked for
    blocks = iter(blocks)
    try:
        while True:
            # The last block and its tokens go before the next block is read (peak memory).
            block = b = None
            at_line, asked = int(info[_I_LINES]) + 1, y.shape[0]
            block = _next_block(blocks, path, info)
            if block is None:
                break
            first = consumed == 0
            consumed += len(block)
            if n_bytes is None:
                guard = dense_limit(consumed)
            b = _checked_block(block, first, path, n_features, info, na_buf, na_off)
            nb = b.n_rows
            if b.max_idx > max_idx:
                max_idx, max_idx_line = b.max_idx, b.max_idx_line
            need = n_rows + nb
            if n_features is None and need * max_idx * 8 > guard:
                X = None  # too wide: keep reading only to report the file's first error
            if nb == 0:
                continue
            # Checked at every block, not after minutes of reading or midway by
            # NumPy's bare MemoryError naming no file.
            if budget is None:
                budget = _config.memory_budget()
            w = 0 if X is None else n_features if n_features is not None else max(width, max_idx)
            rows = need
            if n_bytes is not None and consumed < n_bytes:
                rows = max(need, int(need * (n_bytes / consumed)))
            # (a width the file's own index sets, past the dense-size guard: that
            # guard's error, a likely typo, once the file is read; X is capped by it)
            typo = n_features is None and rows * w * 8 > guard
            # Refused once the rows read so far are over the limit (certain); a
            # projection over it only warns, once: the first lines may be shorter than
            # the rest (more rows projected than there are), and a file that fits must
            # not be refused on a guess.
            if not typo and _reading_bytes(need, w) > budget[0]:
                raise _read_refused(path, need, w, budget, n_features, max_idx)
            if not typo and not warned and _reading_bytes(rows, w) > budget[0]:
                warned = True
                projected = _reading_bytes(rows, w)
                warnings.warn(
                    f"{path}: reading it may need about {_bytes_text(projected)}: {rows} "
                    f"rows (estimated from the {need} in its first {consumed} of {n_bytes} "
                    f"bytes) x {w} features of float64, over {budget[1]} "
                    f"({_bytes_text(budget[0])}); it is read on, and refused if the rows "
                    "read pass that",
                    UserWarning,
                    stacklevel=external_stacklevel(),  # the user's call of the reader
                )
            at_line = int(b.row_line[0])
            cap = y.shape[0]
            if need > cap:
                # Rows expected in the whole file, from the bytes per row so far, but
                # at most twice the rows read (lines may get longer): what is reserved
                # and not yet written costs address space only, and growth is a realloc.
                if n_bytes is None:
                    cap = 2 * need  # a stream: amortised growth, shrunk at the end
                elif consumed < n_bytes:
                    cap = min(int(need * (n_bytes / consumed) * 1.02) + 16, 2 * need)
                    cap = max(need, cap)
                else:
                    cap = need
                if X is not None and n_features is None and max_idx:
                    cap = max(need, min(cap, guard // (8 * max_idx)))
                asked = cap
                _grow(y, (cap,))
                _grow(qid, (cap,))
                _grow(row_line, (cap,))
            y[n_rows:need] = b.y
            qid[n_rows:need] = b.qid
            row_line[n_rows:need] = b.row_line
            if comments is not None:
                comments.extend(
                    block[s:e].decode("utf-8").strip() if s >= 0 else ""
                    for s, e in zip(b.com_start.tolist(), b.com_end.tolist(), strict=True)
                )
            if X is not None:
                if X.shape[0] == 0:
                    width = max(width, max_idx)
                    X = np.empty((cap, width), dtype=np.float64)
                elif n_features is None and max_idx > width:
                    # Rare after the first block: wider rows.  Widen in place (realloc,
                    # then move the rows read so far to their new stride), so the peak
                    # stays one matrix, not two.
                    _grow(X, (cap, max_idx))
                    _widen_rows(X.reshape(-1), n_rows, width, max_idx, fill)
                    width = max_idx
                elif X.shape[0] < cap:
                    _grow(X, (cap, width))
                _fill_block(b, X, n_rows, fill)
            n_rows = need
    except ReadMemoryError:
        raise
    except MemoryError:  # NumPy's "Unable to allocate ...", which names no file
        block = b = None
        w = 0 if X is None else max(width, max_idx) if n_features is None else n_features
        raise _read_failed(path, at_line, max(asked, n_rows), w, n_features, max_idx) from None
    if n_rows == 0:
        raise _empty_file_error(path)
    if X is None:
        nbytes = n_rows * max_idx * 8
        err = LTRInputError(
            f"the highest feature index, {max_idx}, makes X {n_rows} x {max_idx} float64 "
            f"({nbytes / 2**30:.1f} GiB), far more than the file's size "
            f"({consumed if n_bytes is None else n_bytes} bytes): is the index a typo? "
            f"If it is intended, read the file with load_svmlight(path, "
            f"n_features={max_idx}) (Python)",
            path=path,
            line=max_idx_line,
        )
        err.width_guard = max_idx  # the CLI's predict reads such data at the model's width
        raise err
    # Shrink to the rows read, in place (realloc) rather than by a copy.
    X.resize((n_rows, width), refcheck=False)
    y.resize(n_rows, refcheck=False)
    row_line.resize(n_rows, refcheck=False)
    if info[_I_HAS_QID] == 1:
        qid.resize(n_rows, refcheck=False)
        qid_out: NDArray[np.int64] | None = qid
    else:
        qid_out = None
    return X, y, qid_out, comments, row_line


def _next_block(blocks: Iterator[bytes], path: str, info: NDArray[np.int64]) -> bytes | None:
    """The next block of whole lines, None at the end; a line of NUL bytes too long to
    end (:class:`_BinaryLine`) as the error naming its line (``info``: lines so far)."""
    try:
        return next(blocks, None)
    except _BinaryLine:
        raise LTRInputError(
            "a line of NUL bytes with no end in sight: binary data or a device, not LETOR text",
            path=path,
            line=int(info[_I_LINES]) + 1,
        ) from None


def _checked_block(
    block: bytes,
    first: bool,
    path: str,
    n_features: int | None,
    info: NDArray[np.int64],
    na_buf: NDArray[np.uint8] | None,
    na_off: NDArray[np.int64] | None,
) -> _Block:
    """:func:`_parse_block` of ``block``, a file's ``first`` block or a later one
    (``info`` IN/OUT from block to block), with the checks only the file's start gets:
    a BOM skipped, a zero-based header refused, and a first block that does not parse
    named for what it is (Parquet, compressed, classic Mac OS line ends)."""
    start = len(_BOM) if first and block.startswith(_BOM) else 0
    if first:
        _check_header(block, start, path)
    try:
        b = _parse_block(block, start, path, n_features, info, na_buf, na_off)
    except LTRInputError as e:
        if first and block.startswith(_PARQUET_MAGIC):
            raise LTRInputError(  # no line: a line number in a binary file points nowhere
                f"the file is Parquet ({_PARQUET_HINT}", path=e.path
            ) from None
        packed = compressed_problem(block, e.problem) if first else None
        if packed is not None:  # LETOR data sets ship compressed (MSLR .zip, Yahoo .bz2)
            raise LTRInputError(packed, path=e.path, line=e.line) from None
        # CR alone is whitespace inside a line; a file of classic Mac OS line ends
        # (no LF at all, CRs between records) reads as one long line: say why
        if first and b"\n" not in block and block.count(b"\r", 0, 1 << 20) > 1:
            raise LTRInputError(
                f"{e.problem} (the file has no LF line ends, only CRs: classic Mac OS "
                "line ends? convert them, e.g. tr '\\r' '\\n' < IN > OUT)",
                path=e.path,
                line=e.line,
            ) from None
        raise
    if first and _cr_hides_records(block, start):
        raise LTRInputError(_CR_ONLY, path=path, line=1)
    return b


def _grow(a: NDArray[Any], shape: tuple[int, ...]) -> None:
    """Resize ``a`` (which owns its data, no views) in place: a ``realloc``, which
    for large arrays remaps pages instead of copying them.  Out of memory raises
    NumPy's own ``MemoryError`` message."""
    try:
        a.resize(shape, refcheck=False)
    except MemoryError:
        gib = math.prod(shape) * a.itemsize / 2**30
        raise MemoryError(
            f"Unable to allocate {gib:.2f} GiB for an array with shape {shape} "
            f"and data type {a.dtype}"
        ) from None


class _Block(NamedTuple):
    """One block's rows and ``index:value`` tokens (CSR), as parsed by the kernel."""

    n_rows: int
    y: NDArray[np.float64]
    qid: NDArray[np.int64]
    row_line: NDArray[np.int64]
    row_ptr: NDArray[np.int64]
    cols: NDArray[np.int32]
    vals: NDArray[np.float64]
    com_start: NDArray[np.int64]
    com_end: NDArray[np.int64]
    max_idx: int
    max_idx_line: int


def _fill_block(b: _Block, X: NDArray[np.float64], r0: int, fill: float) -> None:
    """Write block ``b``'s rows into ``X[r0 : r0 + b.n_rows]`` (absent features:
    ``fill``).  A dense block -- every row holds features ``1..m`` in order, the usual
    LETOR layout -- is one NumPy copy, with no kernel to compile on a first run (~0.3 s);
    any other goes through ``_fill_rows``.  Either way X holds the same values."""
    _fill_csr(b.row_ptr, b.cols, b.vals, b.n_rows, X, r0, fill)


def _fill_csr(
    row_ptr: NDArray[np.int64],
    cols: NDArray[np.int32],
    vals: NDArray[np.float64],
    nb: int,
    X: NDArray[np.float64],
    r0: int,
    fill: float,
) -> None:
    """:func:`_fill_block` of the ``nb`` CSR rows ``row_ptr`` (from 0), ``cols``
    (1-based, each at most ``X.shape[1]``), ``vals``."""
    n_tok = cols.shape[0]
    m = n_tok // nb if nb else 0
    if (
        0 < m <= X.shape[1]
        and m * nb == n_tok
        and np.array_equal(row_ptr, np.arange(0, (nb + 1) * m, m))
        and (cols.reshape(nb, m) == np.arange(1, m + 1, dtype=cols.dtype)).all()
    ):
        X[r0 : r0 + nb, :m] = vals.reshape(nb, m)
        X[r0 : r0 + nb, m:] = fill
        return
    _fill_rows(row_ptr, cols, vals, nb, X, r0, fill)


def _parse_block(
    data: bytes,
    start: int,
    path: str,
    n_features: int | None,
    info: NDArray[np.int64],
    na_buf: NDArray[np.uint8] | None,
    na_off: NDArray[np.int64] | None,
) -> _Block:
    """Parse whole lines ``data[start:]`` with the kernels; raise the first error.

    ``_scan_letor`` first (unless the file has NA tokens or an earlier block needed
    the full kernel), ``_parse_letor`` for a block it leaves.  ``info`` (IN/OUT)
    carries the line count, the ``qid:`` convention and that choice from block to
    block.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    # Line feeds and colons bound the rows and index:value tokens.  NumPy, not a
    # kernel: as fast (faster, measured on MQ2008: 1.1 vs 1.8 ms for 5.9 MB) and
    # nothing to compile.
    n_newlines = int(np.count_nonzero(buf == 10))
    n_colons = int(np.count_nonzero(buf == 58))
    if buf.size and buf.max() >= 128:
        _check_utf8(data, path, int(info[_I_LINES]))
    cap_rows = n_newlines + 1
    y = np.empty(cap_rows, dtype=np.float64)
    qid = np.empty(cap_rows, dtype=np.int64)
    row_line = np.empty(cap_rows, dtype=np.int64)
    row_ptr = np.empty(cap_rows + 1, dtype=np.int64)
    com_start = np.empty(cap_rows, dtype=np.int64)
    com_end = np.empty(cap_rows, dtype=np.int64)
    cols = np.empty(n_colons, dtype=np.int32)
    vals = np.empty(n_colons, dtype=np.float64)
    unsorted = np.empty(cap_rows, dtype=np.int64)
    limit = -1 if n_features is None else n_features
    state = info.copy()  # the kernel is re-run from this state if slow_* overflow
    done = False
    if _FAST_SCAN and na_buf is None and not state[_I_FULL]:
        done = bool(
            _scan_letor(
                buf, start, limit, y, qid, row_line, row_ptr, cols, vals,
                com_start, com_end, info, unsorted,
            )
        )  # fmt: skip
        state[_I_FULL] = not done  # from now on, _parse_letor only
    slow_start = slow_end = slow_slot = np.empty(0, dtype=np.int64)
    cap_slow = 256
    while not done:
        slow_start = np.empty(cap_slow, dtype=np.int64)
        slow_end = np.empty(cap_slow, dtype=np.int64)
        slow_slot = np.empty(cap_slow, dtype=np.int64)
        info[:] = state
        _parse_letor(
            buf, start, limit, y, qid, row_line, row_ptr, cols, vals,
            com_start, com_end, slow_start, slow_end, slow_slot, info, na_buf, na_off,
            unsorted,
        )  # fmt: skip
        if info[_I_SLOW] <= cap_slow:
            break
        cap_slow = int(info[_I_SLOW])  # rare: many tokens beyond the fast paths
    if info[_I_ERR] == _E_FEATURE:
        code, err_start, err_end, err_aux = _feature_error(buf, int(info[_I_ERR_START]), limit)
        info[_I_ERR] = code
        info[_I_ERR_START] = err_start
        info[_I_ERR_END] = err_end
        info[_I_ERR_AUX] = err_aux
    # Rows whose indices are not increasing (rare) may repeat an index: the first such
    # row is the error, unless the kernel stopped on an earlier line (it never does:
    # these rows are complete, so they precede the kernel's error line).
    for k in range(int(info[_I_UNSORTED])):
        r = int(unsorted[k])
        dup = int(_first_repeat(cols[row_ptr[r] : row_ptr[r + 1]].copy()))
        if dup > 0:
            info[_I_ERR] = _E_DUP_INDEX
            info[_I_ERR_LINE] = row_line[r]
            info[_I_ERR_START] = info[_I_ERR_END] = 0
            info[_I_ERR_AUX] = dup
            break

    n_rows = int(info[_I_ROWS])
    # Tokens outside the kernel's exact paths: convert with float(), as promised.
    slow_err: LTRInputError | None = None
    for k in range(int(info[_I_SLOW])):
        s, e, slot = int(slow_start[k]), int(slow_end[k]), int(slow_slot[k])
        v = float(data[s:e])
        if slot < 0:
            row = -slot - 1
            y[row] = v
            if not math.isfinite(v):
                # The row being parsed when the kernel stopped has no row_line yet.
                line = int(row_line[row]) if row < n_rows else int(info[_I_ERR_LINE])
                slow_err = LTRInputError(
                    f"label {_token_text(data, s, e)!r} is not a finite number",
                    path=path,
                    line=line,
                )
                break
        else:
            vals[slot] = v
            if not math.isfinite(v):
                row = int(np.searchsorted(row_ptr[: n_rows + 1], slot, "right")) - 1
                # A token of the row being parsed when the kernel stopped is not yet
                # in row_ptr; its line is the error line.
                line = int(row_line[row]) if row < n_rows else int(info[_I_ERR_LINE])
                slow_err = LTRInputError(
                    f"feature value {_token_text(data, s, e)!r} overflows to infinity; "
                    "use nan for a missing value (features must be finite)",
                    path=path,
                    line=line,
                )
                break
    code = int(info[_I_ERR])
    if slow_err is not None and (code == _E_NONE or slow_err.line <= info[_I_ERR_LINE]):
        raise slow_err
    if code != _E_NONE:
        raise _kernel_error(data, path, info, n_features)
    lo = int(row_ptr[0])
    hi = int(row_ptr[n_rows])
    return _Block(
        n_rows, y[:n_rows], qid[:n_rows], row_line[:n_rows], row_ptr[: n_rows + 1],
        cols[lo:hi], vals[lo:hi], com_start[:n_rows], com_end[:n_rows],
        int(info[_I_MAX_IDX]), int(info[_I_MAX_IDX_LINE]),
    )  # fmt: skip


def _kernel_error(
    data: bytes, path: str, info: NDArray[np.int64], n_features: int | None
) -> LTRInputError:
    """Turn the kernel's error code into an ``LTRInputError`` with a message."""
    code = int(info[_I_ERR])
    line = int(info[_I_ERR_LINE])
    aux = int(info[_I_ERR_AUX])
    tok = _token_text(data, int(info[_I_ERR_START]), int(info[_I_ERR_END]))
    messages = {
        _E_NO_LABEL: f"no label: a data line starts with its label, found {tok!r}",
        _E_BAD_LABEL: f"label {tok!r} is not a number"
        + (_INNER_BOM_HINT if tok.startswith("\ufeff") else ""),
        _E_NONFINITE_LABEL: f"label {tok!r} is not a finite number",
        _E_QID_MISSING: (
            f"this line has no qid: but line {aux} has one; "
            "either every data line has qid: or none does"
        ),
        _E_QID_UNEXPECTED: (
            f"this line has qid: but line {aux} has none; "
            "either every data line has qid: or none does"
        ),
        _E_BAD_QID: (
            f"qid {tok!r} is not an integer in +-(2**63 - 1), the query ids the reader takes"
            if _INT_RE.fullmatch(tok.removeprefix("qid:"))
            else f"qid {tok!r} is not an integer (int64)"
        ),
        _E_BAD_TOKEN: f"malformed feature {tok!r}: expected index:value",
        _E_QID_POSITION: f"{tok!r}: qid: must come right after the label",
        _E_BAD_INDEX: f"feature index {tok!r} is not an integer"
        + (" without a sign" if _INT_RE.fullmatch(tok) else ""),
        _E_INDEX_NONPOS: (
            f"feature index {tok!r} is not positive; feature indices are 1-based"
            + (_ZERO_BASED_HINT if tok.strip("0") == "" else "")
        ),
        _E_INDEX_OVERFLOW: f"feature index {tok!r} is too large (at most {_MAX_INDEX})",
        _E_INDEX_TOO_BIG: (f"feature index {aux} is larger than n_features={n_features}"),
        _E_BAD_VALUE: f"feature value {tok!r} is not a number" + _na_hint(tok),
        _E_INF_VALUE: (
            f"feature value {tok!r} is infinite; use nan for a missing value "
            "(features must be finite)"
        ),
        _E_DUP_INDEX: f"feature index {aux} appears more than once on this line",
    }
    return LTRInputError(messages[code], path=path, line=line)


# A BOM is skipped at the start of the file only; one inside it is a line's first bytes.
_INNER_BOM_HINT = (
    " (U+FEFF is a UTF-8 byte order mark inside the file: files joined with cat, each "
    "with its own? remove it, e.g. sed 's/^\\xEF\\xBB\\xBF//')"
)


def _na_hint(tok: str) -> str:
    """For a non-numeric value such as ``NULL``: how to read it as missing."""
    if any(c.isdigit() for c in tok):
        return ""
    return (
        f"; if {tok!r} marks a missing value, pass na_values=[{tok!r}] (CLI: --missing-token {tok})"
    )


def _attach_queries(
    path: str,
    query_file: str | os.PathLike[str] | None,
    qid: NDArray[np.int64] | None,
    row_lines: NDArray[np.int64],
) -> NDArray[np.int64] | None:
    """Apply the ``.query`` convention to a file without ``qid:``."""
    first_line = int(row_lines[0]) if row_lines.shape[0] else 1
    sizes = _query_sizes(path, query_file, qid is not None, row_lines.shape[0], first_line)
    if qid is not None or sizes is None:
        return qid
    return np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)


def _query_sizes(
    path: str,
    query_file: str | os.PathLike[str] | None,
    has_qid: bool,
    n_rows: int,
    first_line: int,
) -> NDArray[np.int64] | None:
    """The ``.query`` sizes of the ``n_rows`` rows of ``path`` (``query_file``, else the
    sidecar ``path + ".query"`` when it exists and the file has no ``qid:``), checked to
    add up to them; None when there are none.  ``first_line``: the first data line's,
    which an error for a ``query_file`` given beside ``qid:`` names."""
    sidecar = path + ".query"
    if has_qid:
        if query_file is not None:
            raise LTRInputError(
                "the file has qid: on every line, so "
                f"query_file={os.fspath(query_file)!r} would define the queries twice; "
                "pass one or the other",
                path=path,
                line=first_line,
            )
        if os.path.lexists(sidecar):
            # LightGBM reads the sidecar (not qid:); a user who brought both must know
            # which one defined the queries
            warnings.warn(
                f"{sidecar} is not read: {path} has qid: on its lines, which define the queries",
                stacklevel=4,
            )
        return None
    if query_file is None:
        if not os.path.isfile(sidecar):
            if not os.path.lexists(sidecar):
                return None
            # a folder, a dangling link, a FIFO: an error naming it (not "no .query
            # file beside it", and not a read that blocks on a FIFO)
            why = sidecar_problem(sidecar)
            raise LTRInputError(f"cannot read the query file: {why}", path=sidecar)
        query_file = sidecar
    qpath = os.fspath(query_file)
    sizes = read_query_file(qpath)
    cumulative = np.cumsum(sizes)
    over = np.flatnonzero(cumulative > n_rows)
    if over.size or cumulative[-1] != n_rows:
        # Line numbers of the .query file: skip blank lines as read_query_file does.
        size_lines = [
            k + 1
            for k, raw in enumerate(Path(qpath).read_bytes().split(b"\n"))
            if raw.strip(b" \t\r\v\f").strip(_BOM)
        ]
        k = int(over[0]) if over.size else sizes.shape[0] - 1
        raise LTRInputError(
            f"query sizes add up to {int(cumulative[k])} by this line but {path} has "
            f"{n_rows} data rows; the sizes must add up to the number of rows",
            path=qpath,
            line=size_lines[k],
        )
    return sizes


def _power_of_five_table() -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
    """128-bit truncated approximations of 5**q, q in [-342, 308], as (high, low) words.

    Normalised so the top bit is set; negative powers are reciprocals rounded up.  This
    is the table of Lemire's fast_float (``script/table_generation.py``), computed
    exactly with Python integers rather than pasted.
    """
    hi: list[int] = []
    lo: list[int] = []
    mask = (1 << 64) - 1
    for q in range(_SMALLEST_POW10, _LARGEST_POW10 + 1):
        if q < 0:
            power5 = 5**-q
            # smallest z with 2**z >= power5 (5**k is no power of 2)
            z = power5.bit_length()
            if q >= -27:
                c = 2 ** (z + 127) // power5 + 1
            else:
                c = 2 ** (2 * z + 128) // power5 + 1
                while c >= 1 << 128:
                    c //= 2
        else:
            c = 5**q
            while c < 1 << 127:
                c *= 2
            while c >= 1 << 128:
                c //= 2
        hi.append(c >> 64)
        lo.append(c & mask)
    return np.array(hi, dtype=np.uint64), np.array(lo, dtype=np.uint64)


_SMALLEST_POW10 = -342  # below: every 19-digit mantissa rounds to 0.0
_LARGEST_POW10 = 308  # above: every non-zero mantissa overflows to inf
_POW5_HI, _POW5_LO = _power_of_five_table()
_POW10 = np.array([10.0**k for k in range(23)])  # exact in float64 up to 1e22
# _POW2[k] = 2**(k - 1075) for a biased exponent k (index 0 underflows and is unused).
_POW2 = np.ldexp(1.0, np.arange(2047) - 1075)

# Constants for the uint64 arithmetic of the kernels: mixing uint64 with Python ints
# makes Numba promote to float64, so every operand is a typed uint64.
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U3 = np.uint64(3)
_U10 = np.uint64(10)
_U32 = np.uint64(32)
_U63 = np.uint64(63)
_M32 = np.uint64(0xFFFFFFFF)
_MAX64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_PRECISION_MASK = np.uint64(0xFFFFFFFFFFFFFFFF >> 55)  # 52 explicit bits + 3
_HIDDEN_BIT = np.uint64(1 << 52)
_TWO53 = np.uint64(1 << 53)

# Status of ``_parse_number``.
_NUM_OK = 0
_NUM_SLOW = 1
_NUM_BAD = 2
_NUM_NAN = 3
_NUM_INF = 4


# --- kernels ---


@kernel
def _mul_64x64(a, b):
    """Full 128-bit product of two uint64, as (high, low) uint64 words."""
    a_lo = a & _M32
    a_hi = a >> _U32
    b_lo = b & _M32
    b_hi = b >> _U32
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    mid = (p0 >> _U32) + (p1 & _M32) + (p2 & _M32)  # < 3 * 2**32: no overflow
    low = (p0 & _M32) | (mid << _U32)
    high = p3 + (p1 >> _U32) + (p2 >> _U32) + (mid >> _U32)
    return high, low


@kernel
def _leading_zeros(w):
    """Number of leading zero bits of a non-zero uint64."""
    n = 0
    for shift in (32, 16, 8, 4, 2, 1):
        if (w >> np.uint64(64 - shift)) == _U0:
            n += shift
            w = w << np.uint64(shift)
    return n


@kernel
def _eisel_lemire(w, q):
    """Correctly rounded ``w * 10**q`` for a non-zero uint64 ``w``, as float64.

    Lemire (2021), Algorithm 1, in the fallback-free form of fast_float's
    ``compute_float`` (Mushtak & Lemire 2023 prove the two-word product always
    suffices).  ``q`` must lie in [-342, 308]; the caller handles the rest.
    """
    lz = _leading_zeros(w)
    w = w << np.uint64(lz)
    index = q - _SMALLEST_POW10
    high, low = _mul_64x64(w, _POW5_HI[index])
    if (high & _PRECISION_MASK) == _PRECISION_MASK:
        # The first word may be off by one in its low bits: add the second word.
        high2, _ = _mul_64x64(w, _POW5_LO[index])
        # low + high2 modulo 2**64, with the carry into high, written without
        # overflowing (so it also runs, warning-free, with NUMBA_DISABLE_JIT=1).
        if high2 > _MAX64 - low:
            low = high2 - (_MAX64 - low) - _U1
            high = high + _U1
        else:
            low = low + high2
    upperbit = np.int64(high >> _U63)
    shift = upperbit + 9
    mantissa = high >> np.uint64(shift)
    # power(q) = floor(q * log2(10)) + 63, via the 16-bit fixed-point constant.
    power2 = (((152170 + 65536) * q) >> 16) + 63 + upperbit - lz + 1023
    if power2 <= 0:  # subnormal (or zero)
        if -power2 + 1 >= 64:
            return 0.0
        mantissa = mantissa >> np.uint64(-power2 + 1)
        mantissa = mantissa + (mantissa & _U1)
        mantissa = mantissa >> _U1
        # mantissa == 2**52 here means rounding reached the smallest normal number.
        return float(mantissa) * _POW2[1]  # 2**-1074
    # Exactly halfway between two doubles: round to even (only possible for small q).
    if low <= _U1 and q >= -4 and q <= 23 and (mantissa & _U3) == _U1:
        if (mantissa << np.uint64(shift)) == high:
            mantissa = mantissa & ~_U1
    mantissa = mantissa + (mantissa & _U1)
    mantissa = mantissa >> _U1
    if mantissa >= _TWO53:
        mantissa = _HIDDEN_BIT
        power2 += 1
    if power2 >= 2047:
        return math.inf
    mantissa = mantissa | _HIDDEN_BIT
    # An exact product: the result is a normal double (ldexp is a libm call).
    return float(mantissa) * _POW2[power2]


@kernel
def _parse_number(buf, s, e):
    """Parse the number starting at ``buf[s]`` (uint8), reading no further than ``e``.

    Reads the longest run of bytes that can continue the grammar's ``number``, and
    returns ``(status, value, end)`` with ``end`` the first byte not read; the caller
    decides whether ``buf[end]`` may follow a number.  ``status``: ``_NUM_OK`` (finite
    ``value``, equal to Python's ``float()`` of the text), ``_NUM_NAN``, ``_NUM_INF``
    (``value`` +-inf, spelled out or overflowed), ``_NUM_BAD`` (the run is no complete
    number) or ``_NUM_SLOW`` (valid, but outside the exact paths here: the caller
    converts the text with ``float()``).
    """
    if s >= e:
        return _NUM_BAD, 0.0, s
    i = s
    negative = False
    c = buf[i]
    if c == 43 or c == 45:  # + -
        negative = c == 45
        i += 1
        if i >= e:
            return _NUM_BAD, 0.0, i
        c = buf[i]
    if c >= 65:  # a letter: nan, inf or infinity, case-insensitive
        if i + 3 <= e:
            c0 = c | 32
            c1 = buf[i + 1] | 32
            c2 = buf[i + 2] | 32
            if c0 == 110 and c1 == 97 and c2 == 110:  # nan
                # float("-nan") sets the sign bit; copysign does (negation may not).
                nan = math.copysign(math.nan, -1.0 if negative else 1.0)
                return _NUM_NAN, nan, i + 3
            if c0 == 105 and c1 == 110 and c2 == 102:  # inf
                v = -math.inf if negative else math.inf
                if (
                    i + 8 <= e
                    and (buf[i + 3] | 32) == 105
                    and (buf[i + 4] | 32) == 110
                    and (buf[i + 5] | 32) == 105
                    and (buf[i + 6] | 32) == 116
                    and (buf[i + 7] | 32) == 121
                ):  # inity
                    return _NUM_INF, v, i + 8
                return _NUM_INF, v, i + 3
        return _NUM_BAD, 0.0, i
    # Decimal: mantissa w of at most 19 significant digits, value w * 10**dexp.
    w = _U0
    n_digits = 0
    dexp = 0
    any_digit = False
    inexact = False  # a non-zero digit was dropped after the 19th
    while i < e:
        d = np.int64(buf[i]) - 48
        if d < 0 or d > 9:
            break
        any_digit = True
        if n_digits == 0 and d == 0:
            pass  # leading zero
        elif n_digits < 19:
            w = w * _U10 + np.uint64(d)
            n_digits += 1
        else:
            inexact |= d != 0
            dexp += 1
        i += 1
    if i < e and buf[i] == 46:  # .
        i += 1
        while i < e:
            d = np.int64(buf[i]) - 48
            if d < 0 or d > 9:
                break
            any_digit = True
            if n_digits == 0 and d == 0:
                dexp -= 1
            elif n_digits < 19:
                w = w * _U10 + np.uint64(d)
                n_digits += 1
                dexp -= 1
            else:
                inexact |= d != 0
            i += 1
    if not any_digit:
        return _NUM_BAD, 0.0, i
    if i < e and (buf[i] | 32) == 101:  # e E
        i += 1
        exp_negative = False
        if i < e and (buf[i] == 43 or buf[i] == 45):
            exp_negative = buf[i] == 45
            i += 1
        exponent = 0
        exp_digits = False
        while i < e:
            d = np.int64(buf[i]) - 48
            if d < 0 or d > 9:
                break
            exp_digits = True
            if exponent < 100_000_000:
                exponent = exponent * 10 + d
            else:
                inexact = True  # absurd exponent: let float() decide
            i += 1
        if not exp_digits:
            return _NUM_BAD, 0.0, i
        dexp += -exponent if exp_negative else exponent
    if w == _U0:
        return _NUM_OK, -0.0 if negative else 0.0, i
    if inexact:
        return _NUM_SLOW, 0.0, i
    # Clinger's fast path: w and 10**|dexp| are exact doubles, so one rounding.
    if w <= _TWO53 and dexp >= -22 and dexp <= 22:
        if dexp >= 0:
            v = float(w) * _POW10[dexp]
        else:
            v = float(w) / _POW10[-dexp]
        return _NUM_OK, -v if negative else v, i
    if dexp < _SMALLEST_POW10:
        return _NUM_OK, -0.0 if negative else 0.0, i
    if dexp > _LARGEST_POW10:
        return _NUM_INF, -math.inf if negative else math.inf, i
    v = _eisel_lemire(w, dexp)
    if v == math.inf:
        return _NUM_INF, -math.inf if negative else math.inf, i
    return _NUM_OK, -v if negative else v, i


@kernel
def _is_space(c):
    """Whitespace inside a line: space, tab, CR, VT, FF (LF ends the line)."""
    return c == 32 or (c >= 9 and c <= 13 and c != 10)


@kernel
def _ends_token(buf, i):
    """Whether a token ends before ``buf[i]``: end of data, whitespace, LF or ``#``."""
    if i >= buf.shape[0]:
        return True
    c = buf[i]
    return c == 32 or (c >= 9 and c <= 13) or c == 35


@kernel
def _token_end(buf, i):
    """Index of the first byte at or after ``i`` that ends a token."""
    while not _ends_token(buf, i):
        i += 1
    return i


@kernel
def _feature_error(buf, ts, n_features_limit):
    """Classify the bad ``index:value`` token at ``ts``: ``(code, start, end, aux)``.

    Only called once the fast path of ``_parse_letor`` refused the token's shape or
    index, so it runs on error paths only; checks go left to right (shape, then index),
    as the reference does.  Value errors are named by the caller, which has just parsed
    the value.
    """
    te = _token_end(buf, ts)
    colon = -1
    n_colons = 0
    for k in range(ts, te):
        if buf[k] == 58:
            n_colons += 1
            if colon < 0:
                colon = k
    # "qid:" after a feature, or twice: a misplaced qid, not a malformed feature.
    if colon - ts == 3 and buf[ts] == 113 and buf[ts + 1] == 105 and buf[ts + 2] == 100:
        return _E_QID_POSITION, ts, te, 0
    if n_colons != 1 or colon == ts or colon == te - 1:
        return _E_BAD_TOKEN, ts, te, 0
    k = ts
    if buf[k] == 45:  # a '-' gets its own message
        k += 1
    if k == colon:
        return _E_BAD_INDEX, ts, colon, 0
    idx = 0
    for j in range(k, colon):
        d = np.int64(buf[j]) - 48
        if d < 0 or d > 9:
            return _E_BAD_INDEX, ts, colon, 0
        if idx <= _MAX_INDEX:
            idx = idx * 10 + d
    if buf[ts] == 45 or idx == 0:
        return _E_INDEX_NONPOS, ts, colon, 0
    if idx > _MAX_INDEX:
        return _E_INDEX_OVERFLOW, ts, colon, 0
    return _E_INDEX_TOO_BIG, ts, te, idx  # the only error left for a valid index


@inline_kernel
def _row_comment(buf, i, n, com_start, com_end, row):
    """Record the span of row ``row``'s ``#`` comment when ``buf[i]`` starts one (-1, -1
    otherwise); returns the position of the line's end (its LF, or ``n``)."""
    if i < n and buf[i] == 35:
        com_start[row] = i + 1
        while i < n and buf[i] != 10:
            i += 1
        com_end[row] = i
    else:
        com_start[row] = -1
        com_end[row] = -1
    return i


@kernel
def _parse_letor(
    buf, pos, n_features_limit, y, qid, row_line, row_ptr, cols, vals,
    com_start, com_end, slow_start, slow_end, slow_slot, info, na_buf, na_off, unsorted,
):  # fmt: skip
    """Parse LETOR lines from ``buf[pos:]`` into row and token arrays, in one pass.

    ``buf`` uint8[:] (IN); ``pos`` first byte after a BOM; ``n_features_limit`` largest
    allowed index, or -1 for none.  Per data row (OUT): ``y``, ``qid``, ``row_line``
    (1-based line), ``row_ptr`` (CSR offsets into the token arrays, length
    ``n_rows + 1``), ``com_start``/``com_end`` (byte span of the comment, -1 if none).
    Per feature token (OUT): ``cols`` (1-based index, int32), ``vals``.  Tokens beyond
    the exact float paths (OUT): ``slow_start``/``slow_end`` byte spans and
    ``slow_slot`` (token index, or ``-(row + 1)`` for a label); only the first
    ``len(slow_start)`` are stored, all are counted.  ``info`` (IN/OUT): counts and
    the first error (``_I_*`` layout); on entry ``info[_I_LINES]`` is the number of lines
    before ``buf`` and ``info[_I_HAS_QID]``/``info[_I_FIRST_LINE]`` the ``qid:``
    convention seen so far (-1: none yet), so a file can be parsed in blocks of whole
    lines.  ``na_buf``/``na_off`` (IN): tokens that read as a missing value (NaN),
    concatenated, and their offsets (length ``n_na + 1``), or both None (no NA tokens:
    the NA branch is pruned at compile time).  ``unsorted`` (OUT): the rows (of this
    call) whose indices are not increasing, ``info[_I_UNSORTED]`` of them; the caller
    checks them for a repeated index (``_first_repeat``, compiled only when needed).
    The kernel stops at the first error, never raises.

    Every byte is read once on the happy path: numbers are parsed where they start and
    must be followed by a token end; anything else falls to ``_feature_error`` (or the
    label checks), which re-reads the bad token to name the problem.
    """
    n = buf.shape[0]
    cap_slow = slow_start.shape[0]
    n_unsorted = 0
    line = info[_I_LINES]
    n_rows = 0
    n_tok = 0
    n_slow = 0
    max_idx = 0
    max_idx_line = 0
    has_qid = info[_I_HAS_QID]
    first_line = info[_I_FIRST_LINE]
    err = _E_NONE
    err_start = 0
    err_end = 0
    err_aux = 0
    row_ptr[0] = 0
    while pos < n:
        line += 1
        i = pos
        while i < n and _is_space(buf[i]):
            i += 1
        if i >= n or buf[i] == 10 or buf[i] == 35:  # blank or comment-only line
            while i < n and buf[i] != 10:
                i += 1
            pos = i + 1
            continue

        # Label: the first token.
        ts = i
        status, v, i = _parse_number(buf, ts, n)
        if status == _NUM_BAD or not _ends_token(buf, i):
            te = _token_end(buf, ts)
            err = _E_BAD_LABEL
            for k in range(ts, te):
                if buf[k] == 58:  # a colon: this is a feature, the label is missing
                    err = _E_NO_LABEL
            err_start, err_end = ts, te
            break
        if status == _NUM_NAN or status == _NUM_INF:
            err, err_start, err_end = _E_NONFINITE_LABEL, ts, i
            break
        if status == _NUM_SLOW:
            if n_slow < cap_slow:
                slow_start[n_slow] = ts
                slow_end[n_slow] = i
                slow_slot[n_slow] = -(n_rows + 1)
            n_slow += 1
        y[n_rows] = v

        # Optional qid:Q right after the label.
        while i < n and _is_space(buf[i]):
            i += 1
        line_has_qid = 0
        if (
            i + 4 <= n
            and buf[i] == 113
            and buf[i + 1] == 105
            and buf[i + 2] == 100
            and buf[i + 3] == 58
        ):  # "qid:"
            line_has_qid = 1
            ts = i
            te = _token_end(buf, i + 4)
            q, ok = _parse_int64(buf, i + 4, te)
            if not ok:
                err, err_start, err_end = _E_BAD_QID, ts, te
                break
            qid[n_rows] = q
            i = te
        if has_qid < 0:
            has_qid = line_has_qid
            first_line = line
        elif line_has_qid != has_qid:
            err = _E_QID_UNEXPECTED if line_has_qid else _E_QID_MISSING
            err_start, err_end, err_aux = ts, i, first_line
            break

        # Features: index:value tokens until LF or '#'.
        increasing = True
        prev = 0
        while True:
            while i < n and _is_space(buf[i]):
                i += 1
            if i >= n or buf[i] == 10 or buf[i] == 35:
                break
            ts = i
            idx = 0
            while i < n:
                d = np.int64(buf[i]) - 48
                if d < 0 or d > 9:
                    break
                if idx <= _MAX_INDEX:
                    idx = idx * 10 + d
                i += 1
            if not (
                i > ts
                and i < n
                and buf[i] == 58
                and idx >= 1
                and idx <= _MAX_INDEX
                and (n_features_limit < 0 or idx <= n_features_limit)
            ):
                # Named by _feature_error, outside this kernel (error paths only).
                err, err_start = _E_FEATURE, ts
                break
            vs = i + 1
            status, v, i = _parse_number(buf, vs, n)
            if na_buf is not None and (status == _NUM_BAD or not _ends_token(buf, i)):
                te = _token_end(buf, vs)
                if _is_na_token(buf, vs, te, na_buf, na_off):
                    status, v, i = _NUM_NAN, math.nan, te
            if status == _NUM_BAD or status == _NUM_INF or not _ends_token(buf, i):
                te = _token_end(buf, i)
                err, err_start, err_end = _E_BAD_VALUE, vs, te
                if status == _NUM_INF and i == te:
                    err = _E_INF_VALUE
                if te == vs:  # "5:" with nothing after the colon
                    err, err_start = _E_BAD_TOKEN, ts
                for k in range(vs, te):
                    if buf[k] == 58:  # a second colon
                        err, err_start = _E_BAD_TOKEN, ts
                break
            if status == _NUM_SLOW:
                if n_slow < cap_slow:
                    slow_start[n_slow] = vs
                    slow_end[n_slow] = i
                    slow_slot[n_slow] = n_tok
                n_slow += 1
            cols[n_tok] = idx
            vals[n_tok] = v
            n_tok += 1
            if idx <= prev:
                increasing = False
            prev = idx
            if idx > max_idx:
                max_idx = idx
                max_idx_line = line
        if err != _E_NONE:
            break
        if not increasing:
            # Rare: indices out of order; the caller looks for a repeat in this row.
            unsorted[n_unsorted] = n_rows
            n_unsorted += 1
        i = _row_comment(buf, i, n, com_start, com_end, n_rows)
        pos = i + 1  # buf[i] is LF (or i == n)
        row_line[n_rows] = line
        n_rows += 1
        row_ptr[n_rows] = n_tok
    info[_I_ROWS] = n_rows
    info[_I_TOKENS] = n_tok
    info[_I_SLOW] = n_slow
    info[_I_MAX_IDX] = max_idx
    info[_I_MAX_IDX_LINE] = max_idx_line
    info[_I_HAS_QID] = has_qid
    info[_I_FIRST_LINE] = first_line
    info[_I_ERR] = err
    info[_I_ERR_LINE] = line if err != _E_NONE else 0
    info[_I_ERR_START] = err_start
    info[_I_ERR_END] = err_end
    info[_I_ERR_AUX] = err_aux
    info[_I_LINES] = line
    info[_I_UNSORTED] = n_unsorted


# Byte classes for ``_scan_letor``: 1 whitespace inside a line (space, tab, CR, VT,
# FF), 2 LF, 3 '#', 0 any other byte.  A token ends before a byte of class > 0 (as
# ``_ends_token`` says), a line's data before a byte of class >= 2.
_BYTE_CLASS = np.zeros(256, dtype=np.int64)
_BYTE_CLASS[[9, 11, 12, 13, 32]] = 1
_BYTE_CLASS[10] = 2
_BYTE_CLASS[35] = 3
# What _scan_letor's next number is.
_F_LABEL = 0
_F_QID = 1  # a qid:Q may come (the token after the label)
_F_INDEX = 2
_F_VALUE = 3
_MAX_INDEX_U = np.uint64(_MAX_INDEX)


@kernel
def _scan_letor(
    buf, pos, n_features_limit, y, qid, row_line, row_ptr, cols, vals,
    com_start, com_end, info, unsorted,
):  # fmt: skip
    """The common case of ``_parse_letor``, in less code: True if it parsed all of
    ``buf[pos:]``, False (outputs undefined) at the first thing it does not handle.

    Same arguments and outputs as ``_parse_letor`` without the slow-token and NA ones.
    Handled: well-formed lines whose numbers have at most 19 significant digits, an
    exponent of at most 8 digits, and a finite value inside the exact paths (Clinger,
    Eisel-Lemire), and qids of at most 18 digits.  Anything else -- every error, ``nan``
    and ``inf``, longer numbers, a ``qid:`` convention that changes -- returns False and
    the caller parses the block again with ``_parse_letor``, which names errors and
    hands the rare tokens to ``float()``.  On the lines it accepts the two kernels
    write the same outputs (the number paths are ``_parse_number``'s), so results do
    not depend on which one ran; ``_parse_letor`` compiles only when a file needs it
    (issue 12: the parser was the largest kernel of a first run).
    """
    n = buf.shape[0]
    line = info[_I_LINES]
    has_qid = info[_I_HAS_QID]
    first_line = info[_I_FIRST_LINE]
    n_rows = 0
    n_tok = 0
    n_unsorted = 0
    max_idx = 0
    max_idx_line = 0
    row_ptr[0] = 0
    while pos < n:
        line += 1
        i = pos
        while i < n and _BYTE_CLASS[buf[i]] == 1:
            i += 1
        if i >= n or _BYTE_CLASS[buf[i]] >= 2:  # blank or comment-only line
            while i < n and buf[i] != 10:
                i += 1
            pos = i + 1
            continue
        # Numbers, each read by the one piece of code below: the label, an optional
        # qid:Q, then index ':' value pairs.  field: what the next number is.
        field = _F_LABEL
        line_has_qid = 0
        increasing = True
        prev = 0
        idx = 0
        while True:
            if field != _F_VALUE:  # a new token: skip to it
                while i < n and _BYTE_CLASS[buf[i]] == 1:
                    i += 1
                if i >= n or _BYTE_CLASS[buf[i]] >= 2:
                    break
                if field == _F_QID:
                    if buf[i] == 113:  # "qid:" right after the label
                        if not (i + 4 <= n and buf[i + 1] == 105 and buf[i + 2] == 100
                                and buf[i + 3] == 58):  # fmt: skip
                            return False
                        i += 4
                    else:
                        field = _F_INDEX
            # [+-] digits [. digits] [eE [+-] digits]: mantissa w of at most 19
            # significant digits, value w * 10**dexp, as _parse_number reads it.
            negative = i < n and buf[i] == 45
            signed = i < n and (buf[i] == 43 or buf[i] == 45)
            if signed:
                i += 1
            w = _U0
            n_digits = 0
            dexp = 0
            any_digit = False
            point = False
            while i < n:
                c = buf[i]
                if c == 46 and not point:
                    point = True
                    i += 1
                    continue
                d = np.int64(c) - 48
                if d < 0 or d > 9:
                    break
                any_digit = True
                if n_digits > 0 or d > 0:  # not a leading zero
                    if n_digits == 19:
                        return False
                    w = w * _U10 + np.uint64(d)
                    n_digits += 1
                if point:
                    dexp -= 1
                i += 1
            if not any_digit:
                return False
            exp_digits = 0
            if i < n and (buf[i] | 32) == 101:  # e E
                i += 1
                exp_negative = i < n and buf[i] == 45
                if i < n and (buf[i] == 43 or buf[i] == 45):
                    i += 1
                exponent = 0
                while i < n:
                    d = np.int64(buf[i]) - 48
                    if d < 0 or d > 9:
                        break
                    if exp_digits < 8:
                        exponent = exponent * 10 + d
                    exp_digits += 1
                    i += 1
                if exp_digits == 0 or exp_digits > 8:
                    return False
                dexp += -exponent if exp_negative else exponent
            if field == _F_INDEX:  # digits, then ':'
                if signed or point or exp_digits or i >= n or buf[i] != 58:
                    return False
                if (
                    w == _U0
                    or w > _MAX_INDEX_U
                    or (n_features_limit >= 0 and w > np.uint64(n_features_limit))
                ):
                    return False
                idx = np.int64(w)
                i += 1
                field = _F_VALUE
                continue
            if i < n and _BYTE_CLASS[buf[i]] == 0:  # the token goes on
                return False
            if field == _F_QID:  # an integer of at most 18 digits
                if point or exp_digits or n_digits > 18:
                    return False
                q = np.int64(w)
                qid[n_rows] = -q if negative else q
                line_has_qid = 1
                field = _F_INDEX
                continue
            if w == _U0:
                v = 0.0
            elif w <= _TWO53 and dexp >= -22 and dexp <= 22:  # Clinger
                v = float(w) * _POW10[dexp] if dexp >= 0 else float(w) / _POW10[-dexp]
            elif dexp < _SMALLEST_POW10 or dexp > _LARGEST_POW10:
                return False
            else:
                v = _eisel_lemire(w, dexp)
                if v == math.inf:
                    return False
            if negative:
                v = -v
            if field == _F_LABEL:
                y[n_rows] = v
                field = _F_QID
                continue
            cols[n_tok] = idx
            vals[n_tok] = v
            n_tok += 1
            if idx <= prev:
                increasing = False
            prev = idx
            if idx > max_idx:
                max_idx = idx
                max_idx_line = line
            field = _F_INDEX
        if has_qid < 0:
            has_qid = line_has_qid
            first_line = line
        elif line_has_qid != has_qid:
            return False
        if not increasing:
            unsorted[n_unsorted] = n_rows
            n_unsorted += 1
        i = _row_comment(buf, i, n, com_start, com_end, n_rows)
        pos = i + 1
        row_line[n_rows] = line
        n_rows += 1
        row_ptr[n_rows] = n_tok
    info[_I_ROWS] = n_rows
    info[_I_TOKENS] = n_tok
    info[_I_SLOW] = 0
    info[_I_MAX_IDX] = max_idx
    info[_I_MAX_IDX_LINE] = max_idx_line
    info[_I_HAS_QID] = has_qid
    info[_I_FIRST_LINE] = first_line
    info[_I_ERR] = _E_NONE
    info[_I_ERR_LINE] = 0
    info[_I_ERR_START] = 0
    info[_I_ERR_END] = 0
    info[_I_ERR_AUX] = 0
    info[_I_LINES] = line
    info[_I_UNSORTED] = n_unsorted
    return True


@kernel
def _is_na_token(buf, s, e, na_buf, na_off):
    """Whether ``buf[s:e]`` equals one of the NA tokens (``na_buf``, ``na_off``)."""
    for k in range(na_off.shape[0] - 1):
        a = na_off[k]
        if na_off[k + 1] - a != e - s:
            continue
        same = True
        for j in range(e - s):
            if buf[s + j] != na_buf[a + j]:
                same = False
                break
        if same:
            return True
    return False


@kernel
def _first_repeat(a):
    """Sort ``a`` (int32[:], IN/OUT) in place; return a value found twice, or 0.

    Heapsort, O(k log k) for any order, in its one-loop form (heap construction while
    ``start > 0``, then extraction).  ``np.sort`` would do, but compiling it adds
    seconds to the first call, for a path taken only by lines with unsorted indices.
    """
    n = a.shape[0]
    start = n // 2
    end = n
    while end > 1:
        if start > 0:
            start -= 1
        else:
            end -= 1
            a[0], a[end] = a[end], a[0]
        # Sift a[start] down within the max-heap a[:end].
        root = start
        while True:
            child = 2 * root + 1
            if child >= end:
                break
            if child + 1 < end and a[child + 1] > a[child]:
                child += 1
            if a[root] >= a[child]:
                break
            a[root], a[child] = a[child], a[root]
            root = child
    for k in range(1, n):
        if a[k] == a[k - 1]:
            return a[k]
    return 0


@kernel
def _parse_int64(buf, s, e):
    """``[+-]?[0-9]+`` in ``buf[s:e]`` as int64; returns ``(value, ok)``.

    Values beyond +-(2**63 - 1) are not ok.
    """
    if s >= e:
        return 0, False
    i = s
    negative = buf[i] == 45
    if buf[i] == 43 or buf[i] == 45:
        i += 1
    if i >= e:
        return 0, False
    q = 0
    while i < e:
        d = np.int64(buf[i]) - 48
        if d < 0 or d > 9:
            return 0, False
        if q > (9223372036854775807 - d) // 10:
            return 0, False
        q = q * 10 + d
        i += 1
    return (-q if negative else q), True


@kernel
def _widen_rows(flat, n_rows, w_old, w_new, fill):
    """Move rows stored with stride ``w_old`` to stride ``w_new > w_old`` in place.

    ``flat`` (IN/OUT) is the C-order buffer of the matrix, at least ``n_rows * w_new``
    long; the new columns get ``fill``.  Rows move last first, each from its end, so
    no value is overwritten before it is moved (destinations never precede sources).
    """
    for r in range(n_rows - 1, -1, -1):
        src = r * w_old
        dst = r * w_new
        for j in range(w_new - 1, w_old - 1, -1):
            flat[dst + j] = fill
        for j in range(w_old - 1, -1, -1):
            flat[dst + j] = flat[src + j]


@kernel
def _fill_rows(row_ptr, cols, vals, n_rows, X, r0, fill):
    """Write ``n_rows`` CSR rows into rows ``r0 ..`` of dense ``X`` (OUT).

    Each row is first set to ``fill`` (the value of an absent feature), then its tokens
    are scattered: ``row_ptr`` int64[n_rows + 1], ``cols`` int32 (1-based), ``vals``
    float64 (IN).
    """
    width = X.shape[1]
    for r in range(n_rows):
        for j in range(width):
            X[r0 + r, j] = fill
        for k in range(row_ptr[r], row_ptr[r + 1]):
            X[r0 + r, cols[k] - 1] = vals[k]


# --- references ---

_WS_RE = re.compile(r"[ \t\r\v\f]+")
_NUMBER_RE = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:nan|inf|infinity))",
    re.ASCII,  # in Unicode mode (?i) would let U+0131 (dotless i) match 'i'
)
_INT_RE = re.compile(r"[+-]?[0-9]+")


def _parse_bytes_reference(
    data: bytes,
    path: str,
    n_features: int | None,
    missing: str,
    na_values: Sequence[str] = (),
) -> tuple[Any, Any, Any, list[str]]:
    """Plain-Python twin of :func:`_parse_bytes`, for tests: ``(X, y, qid, comments)``.

    Written from the grammar in the module docstring with regular expressions and
    ``float()``; it raises ``LTRInputError`` at the same line as the kernel.  ``.query``
    handling is not part of it.
    """
    _check_header(data, len(_BOM) if data.startswith(_BOM) else 0, path)
    _check_utf8(data, path)
    if _cr_hides_records(data, len(_BOM) if data.startswith(_BOM) else 0):
        raise LTRInputError(_CR_ONLY, path=path, line=1)
    n_bytes = len(data)
    text = data.removeprefix(_BOM).decode("utf-8")
    rows: list[dict[int, float]] = []
    labels: list[float] = []
    qids: list[int] = []
    comments: list[str] = []
    row_lines: list[int] = []
    has_qid: bool | None = None
    first_line = 0

    def fail(msg: str, line: int) -> LTRInputError:
        return LTRInputError(msg, path=path, line=line)

    for lineno, raw in enumerate(text.split("\n"), start=1):
        body, hash_, comment = raw.partition("#")
        tokens = [t for t in _WS_RE.split(body) if t]
        if not tokens:
            continue
        label_tok = tokens.pop(0)
        if ":" in label_tok:
            raise fail("no label", lineno)
        if not _NUMBER_RE.fullmatch(label_tok):
            raise fail("label is not a number", lineno)
        label = float(label_tok)
        if not math.isfinite(label):
            raise fail("label is not a finite number", lineno)
        line_has_qid = bool(tokens) and tokens[0].startswith("qid:")
        if line_has_qid:
            q_tok = tokens.pop(0)[4:]
            if not _INT_RE.fullmatch(q_tok) or abs(int(q_tok)) > 2**63 - 1:
                raise fail("qid is not an integer", lineno)
            qids.append(int(q_tok))
        if has_qid is None:
            has_qid, first_line = line_has_qid, lineno
        elif has_qid != line_has_qid:
            raise fail(f"qid: on some lines only (line {first_line})", lineno)
        features: dict[int, float] = {}
        duplicate = 0
        for tok in tokens:
            if tok.count(":") != 1 or tok.startswith(":") or tok.endswith(":"):
                raise fail("malformed feature", lineno)
            idx_tok, val_tok = tok.split(":")
            if not re.fullmatch(r"-?[0-9]+", idx_tok):
                raise fail("feature index is not an integer", lineno)
            idx = int(idx_tok)
            if idx <= 0 or idx_tok.startswith("-"):
                raise fail("feature index is not positive", lineno)
            if idx > _MAX_INDEX:
                raise fail("feature index is too large", lineno)
            if n_features is not None and idx > n_features:
                raise fail("feature index is larger than n_features", lineno)
            if val_tok in na_values:
                value = math.nan
            elif not _NUMBER_RE.fullmatch(val_tok):
                raise fail("feature value is not a number", lineno)
            else:
                value = float(val_tok)
            if math.isinf(value):
                raise fail("feature value is infinite", lineno)
            if idx in features and not duplicate:
                duplicate = idx
            features[idx] = value
        if duplicate:
            # Reported once the whole line is read, as the kernel does.
            raise fail(f"feature index {duplicate} appears more than once", lineno)
        rows.append(features)
        row_lines.append(lineno)
        labels.append(label)
        comments.append(comment.strip() if hash_ else "")
    if not rows:
        raise _empty_file_error(path)
    width = n_features
    if width is None:
        width = max((max(r) for r in rows if r), default=0)
        limit = dense_limit(n_bytes)
        if len(rows) * width * 8 > limit:
            line = next(row_lines[i] for i, r in enumerate(rows) if width in r)
            raise fail("feature index makes X too large; pass n_features", line)
    fill = 0.0 if missing == "zero" else np.nan
    X = np.full((len(rows), width), fill)
    for i, features in enumerate(rows):
        for idx, value in features.items():
            X[i, idx - 1] = value
    qid_arr = np.asarray(qids, dtype=np.int64) if has_qid else None
    return X, np.asarray(labels, dtype=np.float64), qid_arr, comments

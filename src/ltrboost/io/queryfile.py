"""LightGBM ``.query`` files: the number of documents of each query, one per line;
and ``.position`` files: the 1-based position each data row was shown at, one per line.

A ``.query`` file sits next to a data file without ``qid:`` (``rank.train`` ->
``rank.train.query``) and lists, in row order, how many consecutive rows belong to each
query.  This module reads and writes such files; :mod:`ltrboost.io.letor` uses the
reader for the sidecar convention.  Writing is atomic (temporary file in the same
directory, ``fsync``, ``os.replace``), a helper :mod:`ltrboost.io.letor` shares.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost.dataset import LTRInputError
from ltrboost.io._atomic import atomic_write

__all__ = [
    "query_lines",
    "read_position_file",
    "read_query_file",
    "write_position_file",
    "write_query_file",
]

# Whitespace that may surround a size; the same ASCII set the LETOR reader accepts.
_WS = " \t\r\v\f"
# The largest query size or position a file may give (int64 arrays hold them, and no
# data file has more rows): a larger number is an error naming its line, not an
# OverflowError.
MAX_COUNT = 2**62
_BOM = b"\xef\xbb\xbf"


def read_query_file(path: str | os.PathLike[str]) -> NDArray[np.int64]:
    """Read query sizes from a LightGBM ``.query`` file.

    Parameters
    ----------
    path : str or path-like
        Text file with one positive integer per line.  Surrounding whitespace, blank
        lines (still counted for line numbers), CRLF line ends and a UTF-8 BOM are
        accepted.

    Returns
    -------
    sizes : ndarray of shape (n_queries,), dtype=int64
        Documents per query, in row order.

    Raises
    ------
    LTRInputError
        ``path:line: problem`` for a line that is not a positive integer, for a file
        that is not UTF-8 text, and for a file with no sizes at all; ``path: cannot
        read ...`` for a file that is missing, a folder or unreadable.
    """
    spath = os.fsdecode(path)
    sizes: list[int] = []
    for lineno, token in _numbered_tokens(spath, "the query file", ".query"):
        # int() would also take "1_000", "+3" or non-ASCII digits: plain digits only.
        if not (token.isascii() and token.isdigit()):
            raise LTRInputError(
                f"query size {_shorten(token)!r} is not a positive integer "
                "(one number of documents per line)",
                path=spath,
                line=lineno,
            )
        size = _count(token)
        if size > MAX_COUNT:
            raise LTRInputError(
                f"query size {_shorten(token)} is larger than any data file (at most {MAX_COUNT})",
                path=spath,
                line=lineno,
            )
        if size <= 0:
            raise LTRInputError(
                f"query size {size}: every query needs at least one document",
                path=spath,
                line=lineno,
            )
        sizes.append(size)
    if not sizes:
        raise LTRInputError("no query sizes (the file is empty or blank)", path=spath, line=1)
    return np.asarray(sizes, dtype=np.int64)


def write_query_file(path: str | os.PathLike[str], sizes: ArrayLike) -> None:
    """Write query sizes, one per line, atomically.

    Parameters
    ----------
    path : str or path-like
        Destination; replaced atomically, so readers never see a half-written file.
    sizes : array-like of shape (n_queries,)
        Positive whole numbers.

    Raises
    ------
    ValueError
        When ``sizes`` is not 1-D or holds a value that is not a positive whole number.
    """
    atomic_write(path, query_lines(sizes))


def query_lines(sizes: ArrayLike) -> Iterable[str]:
    """The lines of :func:`write_query_file` (checked at the call), for a caller that
    writes them with other files (``ltrboost generate``)."""
    arr = np.asarray(sizes)
    if arr.ndim != 1:
        raise ValueError(f"sizes must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        if arr.dtype.kind != "f" or not np.all(np.isfinite(arr)):
            raise ValueError("sizes must hold whole numbers of documents")
        if np.any(arr != np.round(arr)):
            raise ValueError("sizes must hold whole numbers of documents")
    if arr.size and np.any(arr > MAX_COUNT):  # astype(np.int64) would wrap it
        big = int(np.flatnonzero(arr > MAX_COUNT)[0])
        raise ValueError(
            f"sizes[{big}]={arr[big].item()!r} is larger than any data file (at most "
            f"{MAX_COUNT}, what read_query_file reads)"
        )
    ints = arr.astype(np.int64)
    if np.any(ints <= 0):
        bad = int(np.flatnonzero(ints <= 0)[0])
        raise ValueError(f"sizes[{bad}]={ints[bad]}: every query needs a document")
    return (f"{int(s)}\n" for s in ints.tolist())


def read_position_file(
    path: str | os.PathLike[str], n_rows: int | None = None
) -> NDArray[np.int64]:
    """Read display positions (LightGBM's ``.position`` file): one integer >= 1 per
    line, one line per row of the data file, in the data file's row order.

    Used by ``ltrboost train --unbiased`` (Unbiased LambdaMART).  Blank lines are
    skipped (still counted for line numbers); CRLF and a UTF-8 BOM are accepted.
    ``n_rows``: the data's row count, which the file must match (an error names the
    line of the first extra position, or the last position of a short file).  Raises
    :class:`LTRInputError` ``path:line: problem``.
    """
    spath = os.fsdecode(path)
    positions: list[int] = []
    last_line = 1  # of the last position read (1 when none)
    for lineno, token in _numbered_tokens(spath, "position file", ".position"):
        if n_rows is not None and len(positions) == n_rows:
            raise LTRInputError(
                f"more positions than the {n_rows} data rows (one per row, in order)",
                path=spath,
                line=lineno,
            )
        if not (token.isascii() and token.isdigit()) or _count(token) < 1:
            raise LTRInputError(
                f"position {_shorten(token)!r} is not an integer >= 1 (the 1-based "
                "position each data row was shown at, one per line)",
                path=spath,
                line=lineno,
            )
        position = _count(token)
        if position > MAX_COUNT:
            raise LTRInputError(
                f"position {_shorten(token)} is too large (at most {MAX_COUNT})",
                path=spath,
                line=lineno,
            )
        positions.append(position)
        last_line = lineno
    if n_rows is not None and len(positions) != n_rows:
        raise LTRInputError(
            f"{len(positions)} positions for {n_rows} data rows, the last at this line "
            "(one per row, in order)",
            path=spath,
            line=last_line,
        )
    return np.asarray(positions, dtype=np.int64)


def write_position_file(path: str | os.PathLike[str], positions: ArrayLike) -> None:
    """Write display positions (integers >= 1), one per line, atomically."""
    atomic_write(path, position_lines(positions))


def position_lines(positions: ArrayLike) -> Iterable[str]:
    """The lines of :func:`write_position_file` (checked at the call), for a caller that
    writes them with other files."""
    arr = np.asarray(positions)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError("positions must be a 1-D array of integers")
    if arr.size and int(arr.min()) < 1:
        raise ValueError("positions must be >= 1 (1-based)")
    return (f"{int(p)}\n" for p in arr.tolist())


def _numbered_tokens(spath: str, what: str, suffix: str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each non-blank line of the one-integer-per-line file
    ``spath`` (a ``.query`` or ``.position`` file, ``suffix``), whitespace stripped; a
    UTF-8 BOM and CRLF line ends are accepted, blank lines skipped (still counted).

    The whole file is read and decoded before the first line is given, so an
    :class:`LTRInputError` for a file that cannot be read (``cannot read WHAT: ...``)
    or is not UTF-8 text comes before any about its lines.
    """
    try:
        data = Path(spath).read_bytes()
    except OSError as e:  # missing, a directory, unreadable: one line naming the file
        raise LTRInputError(f"cannot read {what}: {e.strerror}", path=spath) from None
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        from ltrboost.io.letor import compressed_problem

        line = data.count(b"\n", 0, err.start) + 1
        problem = f"not UTF-8 text (byte 0x{data[err.start]:02x})"
        problem = compressed_problem(data, problem) or (
            f"{problem}; a {suffix} file holds one integer per line"
        )
        raise LTRInputError(problem, path=spath, line=line) from None
    return _non_blank(text)


def _non_blank(text: str) -> Iterator[tuple[int, str]]:
    for lineno, raw in enumerate(text.split("\n"), start=1):
        token = raw.strip(_WS)
        if token:
            yield lineno, token


def _count(digits: str) -> int:
    """The ASCII digits ``digits`` as an int, or ``MAX_COUNT + 1`` when larger than
    ``MAX_COUNT``: int() refuses more than 4300 digits (a ValueError naming no file)."""
    significant = digits.lstrip("0")
    if len(significant) > len(str(MAX_COUNT)):
        return MAX_COUNT + 1
    return int(significant or "0")


def _shorten(text: str, limit: int = 40) -> str:
    """``text`` cut to ``limit`` characters for an error message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."

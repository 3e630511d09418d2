"""LETOR/svmlight -> query-partitioned Parquet (``ltrboost convert``), for Dask.

Layout (a folder, e.g. ``train.parquet/``):

* ``part.00000.parquet``, ``part.00001.parquet``, ...: whole queries, in the order of
  their first line in the text file, about ``rows_per_file`` rows each (a file is
  closed at the first query boundary at or after ``rows_per_file`` rows; a larger
  query fills a file on its own; a file is also closed before it would pass
  :data:`MAX_ROWS_PER_FILE` rows, pyarrow's largest row group).  Each file is one row
  group (a single query of more rows than that excepted), so that
  ``dask.dataframe.read_parquet(folder)`` reads one partition per file: every query
  lies in one partition and :mod:`ltrboost.dask` uses them as they are.  The part
  numbers are zero-padded to at least 5 digits, wider beyond 100,000 files, so that the
  names sort in file order for readers that sort them as text (pandas, pyarrow).
* Columns: ``qid`` (int64), ``label`` (float64), then ``f1 .. fN`` (float64: the
  LETOR feature indices, 1-based), absent features as 0 or NaN (``missing``).

Rows of one query keep their order in the text file.  The text file is parsed once in
memory (:func:`~ltrboost.io.letor.load_svmlight`); the files are then written from that
``X``, a file's rows at a time (queries whose lines are interleaved are gathered
through the grouping permutation, with no second copy of ``X``); needs ``pyarrow``.
"""

from __future__ import annotations

import errno
import numbers
import os
import shutil
import stat
from collections.abc import Sequence
from typing import Any

import numpy as np

from ltrboost.dataset import LTRInputError, group_by_qid
from ltrboost.io._atomic import check_folder, current_umask, new_temp_dir, signals_held

# pyarrow writes at most 64 Mi rows in one row group (pyarrow._parquet._MAX_ROW_GROUP_SIZE,
# whatever row_group_size asks): a longer file would be several row groups, which
# dask.dataframe.read_parquet may read as several partitions, cutting a query.
MAX_ROWS_PER_FILE = 64 * 1024 * 1024


def query_file_bounds(
    offsets: np.ndarray, rows_per_file: int, max_rows: int = MAX_ROWS_PER_FILE
) -> list[tuple[int, int]]:
    """Row ranges ``[start, stop)`` of the files: whole queries, a file closed at the
    first query boundary at or after ``rows_per_file`` rows, or at the last one at or
    before ``max_rows`` rows when that comes first (a longer query fills a file alone)."""
    bounds = []
    start = 0
    n = int(offsets[-1])
    while start < n:
        q = int(np.searchsorted(offsets, start + rows_per_file, side="left"))
        stop = int(offsets[min(q, offsets.shape[0] - 1)])
        if stop - start > max_rows:
            last = int(np.searchsorted(offsets, start + max_rows, side="right")) - 1
            first = int(np.searchsorted(offsets, start, side="right"))  # its first query's end
            stop = int(offsets[max(last, first)])
        if stop <= start:  # pragma: no cover - offsets strictly increase
            stop = n
        bounds.append((start, stop))
        start = stop
    return bounds


def part_names(n_files: int) -> list[str]:
    """``part.00000.parquet``, ...: zero-padded to the width of the last number, so
    that sorting the names as text (pandas, pyarrow) keeps the files' order."""
    width = max(5, len(str(n_files - 1)))
    return [f"part.{k:0{width}d}.parquet" for k in range(n_files)]


def require_pyarrow() -> tuple[Any, Any]:
    """``(pyarrow, pyarrow.parquet)``; an :class:`ImportError` naming the extra that
    brings pyarrow when it is not installed."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        raise ImportError(
            f"writing Parquet needs pyarrow: pip install 'ltrboost[dask]' ({e})"
        ) from None
    return pa, pq


def letor_to_parquet(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    rows_per_file: int = 1_000_000,
    missing: str = "zero",
    na_values: str | Sequence[str] | None = None,
    n_features: int | None = None,
) -> list[str]:
    """Write the LETOR/svmlight file ``path`` as query-partitioned Parquet in ``out``.

    Returns the files written.  ``out`` must not exist or be an empty folder (files of
    an earlier conversion would be read back as partitions), not a mount point.  Raises
    :class:`~ltrboost.dataset.LTRInputError` for a file without ``qid:`` (and without
    a ``.query`` sidecar) and for the parser's own errors (``path:line: problem``).
    """
    pa, pq = require_pyarrow()
    from ltrboost.io.letor import letor_feature_names, load_svmlight

    if (
        isinstance(rows_per_file, bool)
        or not isinstance(rows_per_file, numbers.Integral)
        or rows_per_file < 1
    ):  # int() took 2.5 as 2 silently
        raise ValueError(f"rows_per_file={rows_per_file!r} must be an integer >= 1")
    out = os.fspath(out)
    if not out:
        raise ValueError("convert: the output folder is an empty path")
    try:
        os.stat(out)
    except (FileNotFoundError, NotADirectoryError):
        pass  # nothing there yet (a folder on the way that is a file: named below)
    except OSError as e:  # a symlink loop: found now, not by the rename at the end
        raise type(e)(e.errno, e.strerror, out) from None
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise FileExistsError(f"{out} exists and is not an empty folder; choose a new path")
    # A symlink (to an empty folder, or dangling) is followed, as for the other
    # outputs: the folder is made at its target and the link kept.
    target = os.path.realpath(out)
    if os.path.isdir(target) and os.path.ismount(target):  # a volume given as OUT
        raise OSError(
            errno.EBUSY,
            "is a mount point, which the finished folder cannot be renamed onto; "
            "give a new folder inside it",
            out,
        )
    parent = os.path.dirname(target)
    check_folder(parent, out)  # before the (long) parse of the text file
    # Written into a hidden folder beside ``out`` and renamed to it at the end (as a
    # model file goes through a temporary file): an interrupted or failed conversion
    # leaves no partial dataset that would read back as a smaller one.  Made before
    # the (long) parse, so that a folder that takes no files fails first.
    created: list[str] = []  # the folder's name, known before the folder exists
    try:
        try:
            tmp = new_temp_dir(parent, os.path.basename(target), created)
        except OSError as e:  # name OUT, not the temporary folder
            raise type(e)(e.errno, f"{e.strerror} (creating a folder beside it)", out) from None
        data = load_svmlight(path, n_features=n_features, missing=missing, na_values=na_values)
        if data.qid is None:
            raise LTRInputError(
                "no qid: on the lines and no .query file: the queries are unknown", path=str(path)
            )
        offsets, order, _ = group_by_qid(data.qid)
        X, y, qid = data.X, data.y, data.qid
        names = ["qid", "label", *letor_feature_names(X.shape[1])]  # as train's model
        bounds = query_file_bounds(offsets, int(rows_per_file), MAX_ROWS_PER_FILE)
        files = part_names(len(bounds))
        for (a, b), name in zip(bounds, files, strict=True):
            # Interleaved queries: a file's rows are gathered through the permutation,
            # one column at a time, never X[order] (a second X in memory).
            rows = slice(a, b) if order is None else order[a:b]
            try:
                cols = [pa.array(qid[rows].astype(np.int64)), pa.array(y[rows])]
                cols += [pa.array(np.ascontiguousarray(X[rows, j])) for j in range(X.shape[1])]
                table = pa.Table.from_arrays(cols, names=names)
                pq.write_table(table, os.path.join(tmp, name), row_group_size=max(1, b - a))
            except MemoryError:  # NumPy's or pyarrow's words name no file, no flag
                cols = table = None
                one_query = int(np.searchsorted(offsets, b)) - int(np.searchsorted(offsets, a)) == 1
                raise _part_memory_error(
                    out, name, b - a, len(names), int(rows_per_file), one_query
                ) from None
            cols = table = None
        try:
            # the folder mkdir would make (the temporary one's is 0o700), or the replaced one's mode
            if os.path.isdir(target):
                os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
                if os.name == "posix":
                    # rename(2) replaces an empty folder in one step; removing it first
                    # and renaming after, a signal between the two left neither
                    os.rename(tmp, target)
                else:  # the rename refuses an existing folder: nothing in between
                    with signals_held():
                        os.rmdir(target)  # empty (checked above)
                        os.rename(tmp, target)
            else:
                os.chmod(tmp, 0o777 & ~current_umask())
                os.rename(tmp, target)
        except OSError as e:  # another run wrote OUT meanwhile: name OUT, never the tmp
            raise type(e)(
                e.errno,
                f"{e.strerror}; it changed during the conversion (another run?), left as it is",
                out,
            ) from None
    except BaseException:  # Ctrl-C included: nothing half-written stays behind
        for folder in created:  # gone if it was renamed to OUT
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return [os.path.join(out, name) for name in files]


def _part_memory_error(
    out: str, name: str, rows: int, columns: int, rows_per_file: int, one_query: bool
):
    """The :class:`~ltrboost.io.letor.ReadMemoryError` of a Parquet file of ``rows``
    rows x ``columns`` whose table could not be allocated: its size, and
    ``rows_per_file`` as the way out, unless the file is ``one_query``: no
    ``rows_per_file`` splits a query (the last file, or a data set of one query, is one
    under ``rows_per_file``), so a smaller one writes that file again."""
    from ltrboost.io.letor import ReadMemoryError, _bytes_text

    nbytes = rows * columns * 8
    problem = (
        f"out of memory writing {name}: its {rows} rows x {columns} columns (qid, label, "
        f"features) take {_bytes_text(nbytes)} ({nbytes} bytes) as a table, besides the "
        "data read, more than could be allocated"
    )
    if one_query:  # a file holds whole queries
        py = cli = (
            f"the file is one query of {rows} rows, which no smaller rows per file splits; "
            "let this process use more memory"
        )
    else:
        way = "fewer rows a file (whole queries each), or let this process use more memory"
        py = f"a smaller rows_per_file= (now {rows_per_file}) writes {way}"
        cli = f"a smaller --rows-per-file (now {rows_per_file}) writes {way}"
    return ReadMemoryError(
        f"{out}: {problem}; {py}",
        cli=f"{out}: {problem}; {cli}",
        path=out,
        shape=(rows, columns),
        nbytes=nbytes,
    )

"""``ltrboost generate``: a synthetic LETOR dataset (train/vali/test.txt) in a folder."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterable

from ltrboost.cli._common import _flag

# ltrboost generate holds X in memory as float64: 2**31 values are 16 GiB.
_GENERATE_MAX_VALUES = 2**31


def cmd_generate(args: argparse.Namespace) -> int:
    """Synthetic train/vali/test files (60/20/20 split of queries) from one generator."""
    for flag in ("n_queries", "docs_per_query", "n_features"):  # by their flags' names
        if getattr(args, flag) < 1:
            raise ValueError(f"{_flag(flag)}={getattr(args, flag)} must be >= 1")
    if args.random_state < 0:
        raise ValueError(f"--random-state={args.random_state} must be >= 0")
    if not args.folder:  # "[Errno 2] No such file or directory: ''"
        raise ValueError("the folder name is empty")
    if args.folder == "-":  # made a folder named '-': elsewhere '-' is standard output
        raise ValueError(
            "generate writes several files into a FOLDER; '-' (standard output) cannot hold "
            "them: name a folder (./- for one named '-')"
        )
    if os.path.lexists(args.folder) and not os.path.isdir(args.folder):  # 'File exists'
        raise ValueError(f"{args.folder} exists and is not a folder")
    n_total = args.n_queries + 2 * max(1, args.n_queries // 3)
    values = n_total * max(args.docs_per_query, 1) * max(args.n_features, 1)
    if values > _GENERATE_MAX_VALUES:  # an OverflowError or MemoryError traceback before
        raise ValueError(
            f"--n-queries {args.n_queries} (+ vali and test queries) x --docs-per-query "
            f"{args.docs_per_query} x --n-features {args.n_features} is {values} feature "
            f"values, more than the {_GENERATE_MAX_VALUES} a generated dataset may hold"
        )
    # the folder first: one that cannot be made (under a file, read-only) was found
    # only once the data had been generated; the folders made here go again when the
    # run fails or is interrupted (nothing new is left, not even an empty folder)
    made = _missing_folders(args.folder)
    try:
        os.makedirs(args.folder, exist_ok=True)
        _generate_files(args, n_total)
    except BaseException:
        for folder in made:  # deepest first; one that is not empty is not ours alone
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        raise
    copies = " (+ LightGBM's NAME.lightgbm.txt and .query)" if args.lightgbm else ""
    print(f"wrote {', '.join(_GENERATED_SPLITS)}{copies} to {args.folder}", file=sys.stderr)
    return 0


# generate's three splits, each written as a LETOR file (and with --lightgbm a copy)
_GENERATED_SPLITS = ("train.txt", "vali.txt", "test.txt")


def _missing_folders(folder: str) -> list[str]:
    """The folders ``os.makedirs(folder)`` would create, deepest first (the path is
    not normalised: makedirs makes ``new`` of ``new/../x`` too)."""
    path = os.path.join(os.getcwd(), folder)
    missing = []
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        missing.append(path)
        path = os.path.dirname(path)
    return missing


def _generate_files(args: argparse.Namespace, n_total: int) -> None:
    """The data of ``generate``, split 60/20/20 by query, written all or none."""
    import numpy as np

    from ltrboost.datasets import make_ranking
    from ltrboost.io._atomic import atomic_write_files

    X, y, qid = make_ranking(
        n_queries=n_total,
        docs_per_query=args.docs_per_query,
        n_features=args.n_features,
        random_state=args.random_state,
    )
    n_valid = max(1, args.n_queries // 3)
    cut1 = args.n_queries
    cut2 = args.n_queries + n_valid
    uq = np.unique(qid)
    masks = (np.isin(qid, uq[:cut1]), np.isin(qid, uq[cut1:cut2]), np.isin(qid, uq[cut2:]))
    parts = dict(zip(_GENERATED_SPLITS, masks, strict=True))
    # all or none: an interrupted or failed run leaves no train.txt of this run beside
    # a vali.txt of an earlier one
    atomic_write_files(
        (os.path.join(args.folder, file_name), lines)
        for split, mask in parts.items()
        for file_name, lines in _generated_files(
            split, X[mask], y[mask], qid[mask], lightgbm=args.lightgbm
        )
    )


def _generated_files(
    name: str, X, y, qid, *, lightgbm: bool
) -> Iterable[tuple[str, Iterable[str]]]:
    """The files ``generate`` writes for one split ``NAME.txt``: the LETOR file
    (``qid:`` on each line, RankLib's and XGBoost's format), and (``--lightgbm``) for
    LightGBM, which
    reads no ``qid:`` token ('Input format error when parsing as LibSVM'), the same
    lines without it in ``NAME.lightgbm.txt`` with the query sizes in the sidecar
    ``NAME.lightgbm.txt.query`` LightGBM (and ltrboost) load beside it.  A ``.query``
    beside ``NAME.txt`` itself would be ignored by LightGBM and warned about by
    ltrboost (the file has qids)."""
    import numpy as np

    from ltrboost.io.letor import svmlight_lines
    from ltrboost.io.queryfile import query_lines

    stem = name.removesuffix(".txt")
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])  # contiguous queries
    sizes = np.diff(np.r_[starts, qid.size])
    yield name, svmlight_lines(X, y, qid)
    if not lightgbm:
        return
    yield f"{stem}.lightgbm.txt", svmlight_lines(X, y)
    yield f"{stem}.lightgbm.txt.query", query_lines(sizes)

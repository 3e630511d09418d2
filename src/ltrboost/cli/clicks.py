"""``ltrboost clicks simulate | mine | dataset``: click logs from graded data, and
preference pairs or ``--unbiased`` training data from click logs."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any

from ltrboost.cli._common import _check_inputs


def _letor_docids(path: str, na_values: list[str] | None = None):
    from ltrboost.dataset import LTRInputError
    from ltrboost.io.letor import load_svmlight, parse_docids

    raw = load_svmlight(path, return_comments=True, na_values=na_values)
    if raw.qid is None:
        raise LTRInputError("the data has no qid: (queries are needed)", path=path)
    return raw, parse_docids(raw.comments)


def _read_click_log(args: argparse.Namespace, raw: Any, docids: list) -> Any:
    """``args.log`` checked against the ``--data`` file's queries and docids; an entry
    the data lacks names that file (the log's reader says "the data file")."""
    from ltrboost.clicks import read_click_log
    from ltrboost.dataset import LTRInputError

    try:
        return read_click_log(args.log, qid=raw.qid, docids=docids)
    except LTRInputError as e:
        if " in the data file" not in e.problem:
            raise
        problem = e.problem.replace(" in the data file", f" in --data {args.data}")
        raise LTRInputError(problem, path=e.path, line=e.line) from None


def _no_click_warning(log: Any, what: str) -> bool:
    """Warn that ``log`` holds no click (``what``: what that makes of the output)."""
    if log.clicked.any():
        return False
    warnings.warn(f"the click log holds no click: {what}", stacklevel=1)
    return True


def _check_outputs(*paths: str) -> None:
    """The outputs can be written (not a folder, not in a missing or read-only one),
    checked before the data is read, as ``train``, ``predict`` and ``convert`` do: a
    folder as ``--output`` was found only after the log was read and mined, and after a
    warning about what the file it then did not write would hold."""
    from ltrboost.io._atomic import check_output

    for path in paths:
        check_output(path)


def cmd_clicks_mine(args: argparse.Namespace) -> int:
    from ltrboost.clicks import mine_preferences, write_pairs

    _check_outputs(args.output)
    _check_inputs(args)
    raw, docids = _letor_docids(args.data, args.missing_token)
    log = _read_click_log(args, raw, docids)
    mined = mine_preferences(log, args.strategy, min_count=args.min_count)
    # a file without pairs is still a pairs file (written), but training on it uses the
    # labels alone: say so now, with the reason, not only when it is trained on
    none = f"{args.output} holds no pair (training on it uses the labels alone)"
    if not len(mined) and not _no_click_warning(log, none):
        every = mine_preferences(log, args.strategy) if args.min_count > 1 else mined
        if len(every):
            why = (
                f"the highest net count is {int(every.count.max())}, below --min-count "
                f"{args.min_count}"
            )
        else:
            below = "above it" if args.strategy == "skip-above" else "right below it"
            why = (
                f"no clicked result has an unclicked one {below} ({args.strategy}), or "
                "the pairs of the two directions cancel out"
            )
        warnings.warn(f"{why}: {none}", stacklevel=1)
    write_pairs(args.output, mined)
    print(
        f"{len(log)} results in {log.n_impressions} impressions -> {len(mined)} pairs "
        f"({args.strategy}) written to {args.output}",
        file=sys.stderr,
    )
    return 0


def cmd_clicks_dataset(args: argparse.Namespace) -> int:
    from ltrboost.clicks import click_rows
    from ltrboost.io._atomic import atomic_write_files
    from ltrboost.io.letor import svmlight_lines
    from ltrboost.io.queryfile import position_lines

    position_path = args.output + ".position"
    if os.path.isdir(position_path):  # found before OUTPUT is written: never one alone
        raise ValueError(
            f"{position_path}: is a directory; clicks dataset writes OUTPUT.position there"
        )
    _check_outputs(args.output, position_path)
    _check_inputs(args)
    raw, docids = _letor_docids(args.data, args.missing_token)
    log = _read_click_log(args, raw, docids)
    _no_click_warning(log, f"every label of {args.output} is 0 (nothing to learn from)")
    rows = click_rows(log, raw.qid, docids)
    comments = [f"docid = {docids[r]} query = {raw.qid[r]}" for r in rows.row.tolist()]
    X = raw.X[rows.row]
    # the two files all or none: a full disk between them left a LETOR file whose
    # .position belonged to another run (or none)
    atomic_write_files(
        [
            (args.output, svmlight_lines(X, rows.clicked, rows.impression + 1, comments)),
            (position_path, position_lines(rows.position)),
        ]
    )
    print(
        f"{len(rows)} results in {log.n_impressions} impressions written to "
        f"{args.output} (+ .position); train with: ltrboost train {args.output} "
        "--unbiased true",
        file=sys.stderr,
    )
    return 0


def cmd_clicks_simulate(args: argparse.Namespace) -> int:
    import numpy as np

    from ltrboost.clicks import simulate, write_click_log
    from ltrboost.dataset import LTRInputError

    if args.random_state < 0:
        raise ValueError(f"--random-state {args.random_state} must be >= 0")
    if args.n_sessions < 1:  # the log would hold no entry, and be read back by nothing
        raise ValueError(
            f"--n-sessions {args.n_sessions} must be >= 1 (a click log without entries is "
            "refused by clicks mine / dataset)"
        )
    # simulate()'s checks, named by flag and made before the data is read ("top_k=0
    # must be >= 1" named a Python keyword)
    if args.n_sessions > 2**62:
        raise ValueError(f"--n-sessions {args.n_sessions} is too large (at most 2**62)")
    if args.top_k < 1:
        raise ValueError(f"--top-k {args.top_k} must be >= 1")
    for flag, value in (("--noise", args.noise), ("--satisfaction", args.satisfaction)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError(f"{flag} {value:g} must be in [0, 1]")
    if args.eta is not None and not args.eta >= 0:
        raise ValueError(f"--eta {args.eta:g} must be >= 0")
    for flag, value, model in (
        ("--eta", args.eta, "position_based"),
        ("--satisfaction", args.satisfaction, "cascade"),
    ):
        if value is not None and args.model != model:  # a warning: scripts that spell
            warnings.warn(  # out every default keep working
                f"{flag} {value:g} is not used: it is a parameter of --model {model}, "
                f"and this log is simulated with --model {args.model}",
                stacklevel=1,
            )
    _check_outputs(args.output)
    _check_inputs(args)
    raw, docids = _letor_docids(args.data, args.missing_token)

    def line(row: int) -> int | None:
        return int(raw.lines[row]) if raw.lines is not None else None

    missing = [i for i, d in enumerate(docids) if d is None]
    if missing:
        raise LTRInputError(
            "no '#docid = ...' comment (click logs name documents by docid)",
            path=args.data,
            line=line(missing[0]),
        )
    negative = np.flatnonzero(raw.y < 0)
    if negative.size:
        r = int(negative[0])
        raise LTRInputError(
            f"label {raw.y[r]:g} is negative: clicks are simulated from grades >= 0",
            path=args.data,
            line=line(r),
        )
    first: dict[tuple, int] = {}
    for r, key in enumerate(zip(raw.qid.tolist(), docids, strict=True)):
        if first.setdefault(key, r) != r:
            at = line(first[key])
            raise LTRInputError(
                f"docid {key[1]!r} of query {key[0]!r} is also on line {at}: a click log "
                "names a query's documents by docid, so they must differ",
                path=args.data,
                line=line(r),
            )
    order = np.argsort(raw.qid, kind="stable")
    q_sorted = raw.qid[order]
    starts = np.r_[0, np.flatnonzero(np.diff(q_sorted)) + 1]
    log = simulate(
        raw.y[order],
        np.r_[starts, len(order)],
        args.model,
        args.n_sessions,
        args.random_state,
        qids=q_sorted[starts].tolist(),
        docids=[docids[i] for i in order.tolist()],
        top_k=args.top_k,
        eta=1.0 if args.eta is None else args.eta,
        satisfaction=0.5 if args.satisfaction is None else args.satisfaction,
        noise=args.noise,
    )
    write_click_log(args.output, log)
    print(
        f"{log.n_impressions} impressions, {int(log.clicked.sum())} clicks written to "
        f"{args.output}",
        file=sys.stderr,
    )
    return 0

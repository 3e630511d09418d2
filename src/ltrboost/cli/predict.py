"""``ltrboost predict`` and ``ltrboost eval``: score data with a model a block of rows
at a time (:data:`_PREDICT_BLOCK_BYTES`, :data:`_EVAL_BLOCK_BYTES`), memory bounded by
a block, never by the file or the model's ``n_features`` claim."""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from ltrboost.cli._common import (
    _load_for_iteration,
    _metric_as_flag,
    _print_columns,
    _show_warning,
    _warn_unread_sidecars,
    _with_dataset,
    one_grade_queries,
    one_grade_warning,
    resolve_missing,
)


def cmd_predict(args: argparse.Namespace) -> int:
    """Score DATA a block of rows at a time: read, scored and written before the next
    is read, so that the memory is a block's, never the file's (a score depends on its
    own row only, and one score a line names no query)."""
    from ltrboost.io._atomic import atomic_write, check_output, file_state

    if args.output != "-":
        check_output(args.output)  # before the model and the data are read
    output_state = file_state(args.output) if args.output != "-" else None
    booster = _load_for_iteration(args)
    missing = resolve_missing(args.missing, booster, args.model)
    lines = _predicted_lines(args, booster, missing)  # the data file is open: found, readable
    if args.output == "-":
        for text in lines:  # a stream: an error late in DATA comes after the scores before it
            sys.stdout.write(text)
        return 0
    try:
        atomic_write(args.output, _reading(lines), unchanged_since=output_state)
    except _ReadError as e:
        raise e.error from None
    return 0


# The dense rows scored at a time (bytes of float64 X): a file larger than memory is
# read, scored and written a block at a time (tests patch it small).
_PREDICT_BLOCK_BYTES = 1 << 25


def _predicted_lines(args: argparse.Namespace, booster, missing: str) -> Iterator[str]:
    """The score lines of ``args.data`` (:func:`_score_lines`), a block of rows at a
    time (:data:`_PREDICT_BLOCK_BYTES`).  The rows are read at the model's width; a
    model wider than :data:`~ltrboost.io.letor.WIDE` features only at the width of the
    features its trees use (a dense row at its claimed width could be megabytes), as
    :func:`_read_for_model` pads: the same scores.  The file is opened here, the rows
    read as the lines are asked for."""
    import copy

    from ltrboost.io.letor import WIDE, dense_blocks

    n_model = booster.n_features
    if getattr(args, "contrib", False) and n_model > WIDE:
        raise ValueError(
            f"--contrib: the model has {n_model} features (more than {WIDE}), so each line "
            f"would hold {n_model + 1} numbers; use Booster.predict(X, pred_contrib=True) "
            "in Python on the rows you need"
        )
    width = n_model if n_model <= WIDE else _features_used(booster)
    if width != n_model:
        booster = copy.copy(booster)  # a view of the trees for rows of that width
        booster.n_features = width
    blocks = dense_blocks(
        args.data,
        n_model,  # a feature beyond it is an error naming its line
        width=width,
        missing=missing,
        na_values=args.missing_token,
        block_bytes=_PREDICT_BLOCK_BYTES,
    )
    return _scored(blocks, booster, args, n_model)


def _scored(blocks, booster, args: argparse.Namespace, n_model: int) -> Iterator[str]:
    """The score lines of each block of rows, as it is read (the reader's errors as
    :func:`_reworded` names them)."""
    for X in _reworded(blocks, n_model, args.model):
        if getattr(args, "contrib", False):
            contrib = booster.predict(
                X, iteration=args.iteration, n_threads=args.n_threads, pred_contrib=True
            )
            yield from _contrib_lines(contrib)
            continue
        scores = booster.predict(X, iteration=args.iteration, n_threads=args.n_threads)
        yield from _score_lines(scores)


def _beyond_the_model(e, n_model: int, model: str):
    """The reader's "feature index K is larger than n_features=N" as "... larger than
    the model's N features (MODEL)": a keyword neither predict nor eval takes; None for
    any other error."""
    from ltrboost.io.letor import width_error_as

    return width_error_as(e, n_model, f"is larger than the model's {n_model} features ({model})")


def _features_used(booster) -> int:
    """One more than the highest feature the trees split on (0: none)."""
    used = -1
    for nodes in booster.trees:
        inner = nodes["feature_idx"][nodes["is_leaf"] == 0]
        if inner.size:
            used = max(used, int(inner.max()))
    return used + 1


class _ReadError(Exception):
    """An ``OSError`` of the data file raised while the output is written, carried past
    :func:`~ltrboost.io._atomic.atomic_write`, which would name the output in it
    (``scores.txt: Input/output error (writing; the previous file is intact)``)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def _reading(lines: Iterator[str]) -> Iterator[str]:
    """``lines``, their reading's ``OSError`` as a :class:`_ReadError`."""
    try:
        yield from lines
    except OSError as e:
        raise _ReadError(e) from e


# scores formatted per block: the text of every score at once (a Python float and a
# string object per score, ~110 bytes a row) held several times the memory of the
# scores and of a narrow data matrix
_SCORE_LINES_BLOCK = 65536


def _score_lines(scores) -> Iterator[str]:
    """``predict``'s output, one score a line (shortest round-trip repr), in blocks."""
    for i in range(0, len(scores), _SCORE_LINES_BLOCK):
        yield "".join(f"{s!r}\n" for s in scores[i : i + _SCORE_LINES_BLOCK].tolist())


def _contrib_lines(contrib) -> Iterator[str]:
    """``predict --contrib``'s output: a row's contributions a line, tab-separated
    (shortest round-trip repr), in blocks of rows."""
    step = max(1, _SCORE_LINES_BLOCK // max(1, contrib.shape[1]))
    for i in range(0, contrib.shape[0], step):
        rows = contrib[i : i + step].tolist()
        yield "".join("\t".join(map(repr, row)) + "\n" for row in rows)


def cmd_eval(args: argparse.Namespace) -> int:
    from ltrboost._evaluation import threshold_separates_nothing
    from ltrboost.cli._parser import EVAL_METRICS
    from ltrboost.dataset import rows_located
    from ltrboost.metrics import evaluate, parse_metric_list
    from ltrboost.params import ParameterWarning

    twice = sorted({p for p in args.data if args.data.count(p) > 1})
    if twice:
        raise ValueError(f"{twice[0]}: given twice (one row, and one JSON entry, per file)")
    _check_relevance_threshold(args)
    booster = _load_for_iteration(args)
    missing = resolve_missing(args.missing, booster, args.model)
    try:  # --metric none: the default list, as without the flag
        metrics = parse_metric_list(EVAL_METRICS if args.metric is None else args.metric)
    except ValueError as e:
        raise ValueError(_metric_as_flag(e) or str(e)) from None
    options = _metric_options(args, booster.params)
    results = {}
    for path in args.data:
        streamed = _eval_streamed(path, booster, missing, args, metrics, options)
        if streamed is not None:
            results[path], flat, n_one = streamed
        else:  # the whole file at once: its queries regrouped, or its first error named
            data, fitted = _read_for_model(
                path, booster, missing, args.missing_token, model=args.model
            )
            _, ds = _with_dataset(data, path)
            scores = fitted.predict(ds.X, iteration=args.iteration, n_threads=args.n_threads)
            with rows_located(ds):
                results[path] = evaluate(scores, ds.y, ds.query_offsets, metrics=metrics, **options)
            results[path]["n_queries"] = ds.n_queries
            flat = threshold_separates_nothing(metrics, options, ds.y, path)
            n_one = one_grade_queries(ds.y, ds.query_offsets)
        if flat is not None:  # MAP / MRR / P@k that no ranking changes
            _show_warning(flat, ParameterWarning, __file__, 0)
        # every query of one grade: every metric 1.0 (or constant) whatever the model
        said = one_grade_warning(n_one, results[path]["n_queries"], path, "query")
        if said is not None:
            _show_warning(said, UserWarning, __file__, 0)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    header = ["data", *metrics, "queries"]
    rows = [[p, *(f"{r[m]:.4f}" for m in metrics), str(r["n_queries"])] for p, r in results.items()]
    _print_columns(header, rows)
    return 0


def _check_relevance_threshold(args: argparse.Namespace) -> None:
    """``--relevance-threshold`` is a finite number: a flag's check, before any file
    (the model or the data) is opened."""
    threshold = args.relevance_threshold
    if threshold is not None and not math.isfinite(threshold):
        raise ValueError(f"--relevance-threshold {threshold} must be a finite number")


def _metric_options(args: argparse.Namespace, model_params: dict) -> dict[str, Any]:
    """``--gain`` / ``--relevance-threshold``, else the values the model was trained
    with (so ``ltrboost eval`` judges a model as its validation did)."""
    from ltrboost.booster import metric_options

    options = metric_options(model_params)
    _check_relevance_threshold(args)
    if args.gain is not None:
        options["gain"] = args.gain
    if args.relevance_threshold is not None:
        options["relevance_threshold"] = args.relevance_threshold
    return options


# The dense rows eval scores at a time (bytes of float64 X), cut at query boundaries
# (tests patch it small: 8 bytes is one row a block).
_EVAL_BLOCK_BYTES = 1 << 25


class _WholeFile(Exception):
    """:func:`_eval_streamed` cannot give the whole-file read's answer: read it so."""


def _eval_streamed(path: str, booster, missing: str, args, metrics: list[str], options: dict):
    """``(results, flat, n_one)`` of ``path`` for ``cmd_eval``, read, scored and evaluated a
    block of whole queries at a time (:data:`_EVAL_BLOCK_BYTES`), so that the memory is
    a block's and a float a query, not the file's dense matrix
    (:class:`~ltrboost._evaluation.QueryBlocksEvaluation`); the numbers are the
    whole-file read's bit for bit.  ``flat``: the warning of
    :func:`~ltrboost._evaluation.threshold_separates_nothing`, or None; ``n_one``: the
    queries of one grade (:func:`~ltrboost.cli._common.one_grade_queries`).

    None when only the whole file gives the answer, which ``cmd_eval`` then reads as
    before: a qid seen again after other queries (the whole-file read groups such
    queries, in order of first appearance), a model wider than
    :data:`~ltrboost.io.letor.WIDE` features (read at the data's width, see
    :func:`_read_for_model`), or a metric that refuses the labels (the first offending
    row of the whole file named, as before).  An error of the file itself is raised when
    the reading reaches it: the whole-file read's."""
    import numpy as np

    from ltrboost._evaluation import QueryBlocksEvaluation, threshold_separates_nothing
    from ltrboost.io.letor import WIDE, LetorData, labelled_blocks, require_qid

    n_model = booster.n_features
    if n_model > WIDE:
        return None
    acc = QueryBlocksEvaluation(metrics, options)
    blocks = labelled_blocks(
        path, n_model, missing=missing, na_values=args.missing_token,
        block_bytes=_EVAL_BLOCK_BYTES,
    )  # fmt: skip
    # the ids of the queries evaluated (a set: a sorted array merged at every block
    # cost O(queries so far) a block, quadratic over a file of many blocks)
    seen: set[int] = set()
    one_grade = [0]  # queries of one grade evaluated so far
    carry = None  # (scores, y, qid) of the last query read: it may go on in the next block

    def evaluate_queries(scores, y, qid, starts) -> None:
        ids = qid[starts].tolist()
        before = len(seen)
        seen.update(ids)
        if len(seen) - before < len(ids):
            raise _WholeFile  # not contiguous: the whole-file read regroups them
        offsets = np.append(starts, y.shape[0]).astype(np.int64)
        try:
            acc.add(scores, y, offsets)
        except ValueError:
            raise _WholeFile from None
        one_grade[0] += one_grade_queries(y, offsets)

    no_queries = False
    stream = _reworded(blocks, n_model, args.model)  # the file's errors, raised as read
    # the reader's warnings (a .query file beside qid:) are shown once the file is
    # evaluated, not twice when the whole file is read after all
    with warnings.catch_warnings(record=True) as caught:
        try:
            for b in stream:
                if b.qid is None:  # no queries: read on, the file's errors come first
                    no_queries = True
                    continue
                scores = booster.predict(b.X, iteration=args.iteration, n_threads=args.n_threads)
                y, qid = b.y, b.qid
                if carry is not None:
                    scores, y, qid = (
                        np.concatenate(pair) for pair in zip(carry, (scores, y, qid), strict=True)
                    )
                starts = np.flatnonzero(np.concatenate(([True], qid[1:] != qid[:-1])))
                last = int(starts[-1])
                if last > 0:
                    evaluate_queries(scores[:last], y[:last], qid[:last], starts[:-1])
                carry = (scores[last:].copy(), y[last:].copy(), qid[last:].copy())
            results: dict[str, Any] = {}
            if not no_queries:
                evaluate_queries(*carry, np.zeros(1, dtype=np.int64))
                try:
                    results = acc.values()
                except ValueError:
                    raise _WholeFile from None
        except _WholeFile:
            stream.close()
            return None
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    _warn_unread_sidecars(path)
    if no_queries:
        require_qid(LetorData(np.empty((0, 0)), np.empty(0), None, None), path)
    results["n_queries"] = acc.n_queries
    flat = threshold_separates_nothing(metrics, options, acc.grades, path)
    return results, flat, one_grade[0]


def _reworded(blocks, n_model: int, model: str):
    """``blocks``, an index beyond the model's features named as
    :func:`_read_for_model` names it."""
    from ltrboost.dataset import LTRInputError

    try:
        yield from blocks
    except LTRInputError as e:
        reworded = _beyond_the_model(e, n_model, model)
        if reworded is None:
            raise
        raise reworded from None


def _read_for_model(
    path: str, booster, missing: str, na_values: list[str] | None = None, *, model: str
):
    """``(LetorData, booster)`` for prediction, memory bounded by the data and the
    trees, never by the model's ``n_features`` claim.  For a wide model the booster
    returned is a view with the matrix's width: the same predictions (no tree uses
    another feature).  ``model``: the model file, named when a feature index is
    beyond its features."""
    import copy

    import numpy as np

    from ltrboost.dataset import LTRInputError
    from ltrboost.io.letor import WIDE, _padded
    from ltrboost.io.letor import load_svmlight as _load_svmlight

    def load_svmlight(path, **kw):
        try:
            return _load_svmlight(path, na_values=na_values, **kw)
        except LTRInputError as e:
            reworded = _beyond_the_model(e, booster.n_features, model)
            if reworded is None:
                raise
            raise reworded from None

    # a model claiming more features than WIDE does not set the width of the matrix: the
    # data is read at its own width (the reader bounds it by the file's size) and padded
    # only up to the features the trees use
    n_model = booster.n_features
    if n_model <= WIDE:
        return load_svmlight(path, n_features=n_model, missing=missing), booster
    try:
        data = load_svmlight(path, missing=missing)
    except LTRInputError as e:
        if getattr(e, "width_guard", None) is None:  # see letor._parse_stream
            raise
        # the data itself uses so high an index that the reader's size guard trips:
        # read it at the model's width, as any prediction of such data must
        return load_svmlight(path, n_features=n_model, missing=missing), booster
    width = data.X.shape[1]
    if width > n_model:  # read again with the model's width: the error names the line
        load_svmlight(path, n_features=n_model, missing=missing)
    used = _features_used(booster)
    X = data.X
    if width < used:  # refused up front when over the memory this process may use
        fill = 0.0 if missing == "zero" else np.nan
        why = f"the model's trees use feature {used} of its {n_model}"
        X = _padded(X, used, fill, path, why)
    view = copy.copy(booster)
    view.n_features = X.shape[1]
    return data._replace(X=X), view

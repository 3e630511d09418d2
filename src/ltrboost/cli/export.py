"""``ltrboost export`` (a model for a search engine or serving stack) and ``ltrboost
inspect`` (a model's summary, its trees as text)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

from ltrboost.cli._common import _count, _load_for_iteration, _print_columns, _write_all

# The formats whose file is not text (export_bytes: UTF-8 text for every other one).
_BINARY_FORMATS = ("onnx",)


def _stdout_bytes():
    """The binary layer of ``sys.stdout``, where the bytes of ``-o -`` go; None for a
    text stream that has none (``io.StringIO``: a notebook's, pytest's ``capsys``,
    ``contextlib.redirect_stdout``), which takes a text format as text (it raised
    AttributeError).  A closed stdout raises the CLI's ``stdout: closed`` error."""
    return getattr(sys.stdout, "buffer", None)


def cmd_export(args: argparse.Namespace) -> int:
    from ltrboost.export import createmodel_body, export_model

    if args.createmodel is not None and args.format != "xgboost-dump":
        raise ValueError("--createmodel is only for --format xgboost-dump")
    if args.name is not None and args.format != "solr" and args.createmodel is None:
        raise ValueError(
            "--name is the model name of --format solr files and of the --createmodel "
            f"body; --format {args.format} writes no name"
        )
    if args.assume_no_missing and args.format != "ranklib":
        raise ValueError(
            "--assume-no-missing is only for --format ranklib (the other formats carry "
            "each split's missing-value direction)"
        )

    booster = _load_for_iteration(args)
    to_stdout = args.createmodel == "-"
    model_to_stdout = args.output == "-"  # as predict's -o -
    if to_stdout and model_to_stdout:
        raise ValueError("--output - and --createmodel -: only one of them can be stdout")
    if model_to_stdout and args.format in _BINARY_FORMATS and _stdout_bytes() is None:
        raise ValueError(
            "stdout: a text stream with no binary layer (an io.StringIO, as a notebook or "
            f"contextlib.redirect_stdout gives); --format {args.format} is binary: give "
            "-o FILE"
        )

    def print_bytes(data: bytes):
        def write() -> None:
            try:
                sys.stdout.flush()
                out = _stdout_bytes()
                if out is None:  # a text stream (io.StringIO): the format's text (UTF-8)
                    sys.stdout.write(data.decode("utf-8"))
                    sys.stdout.flush()
                    return
                # under python -u the buffer is the raw file, which takes part of a
                # write when the reader of a pipe leaves (or a signal interrupts it):
                # continue until all is written or the error shows (it exited 0)
                _write_all(out, data)
                out.flush()
            except BrokenPipeError:
                raise
            except OSError as e:  # a full disk behind a redirection: say where
                raise OSError(e.errno, e.strerror, "stdout") from None

        return write

    # an output on stdout is printed once the file is complete, before it is renamed
    # into place: a failure on either side leaves no file behind
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if model_to_stdout:
            from ltrboost.export import export_bytes
            from ltrboost.io._atomic import atomic_write_files

            name = args.name or "ltrboost"
            data = export_bytes(
                booster,
                args.format,
                args.feature_names,
                iteration=args.iteration,
                name=name,
                assume_no_missing=args.assume_no_missing,
            )
            files = []
            if args.createmodel is not None:
                body = createmodel_body(
                    booster, args.feature_names, name=name, iteration=args.iteration
                )
                files.append((args.createmodel, body.encode()))
            atomic_write_files(files, before_commit=print_bytes(data))
        else:
            body_out = None
            if to_stdout:
                name = args.name or os.path.splitext(os.path.basename(args.output))[0]
                body = createmodel_body(
                    booster, args.feature_names, name=name, iteration=args.iteration
                )
                body_out = print_bytes(body.encode())
            export_model(
                booster,
                args.output,
                args.format,
                args.feature_names,
                iteration=args.iteration,
                name=None if to_stdout else args.name,  # the printed body took it
                assume_no_missing=args.assume_no_missing,
                createmodel=None if to_stdout else args.createmodel,
                before_commit=body_out,
            )
    # once each: the createmodel body repeats the dump's warnings
    for message in dict.fromkeys(str(w.message) for w in caught):
        print(f"ltrboost: warning: {message}", file=sys.stderr)
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from ltrboost.inspection import dump_text, model_summary, shown_name

    if args.top < 0:  # listed nothing, silently
        raise ValueError(f"--top {args.top} must be >= 0")
    booster = _load_for_iteration(args)
    info = model_summary(
        booster, top=args.top, importance_type=args.importance_type, iteration=args.iteration
    )
    # the dump: the first --iteration rounds, else every round (a line marks where the
    # rounds past the best iteration begin, which the importances do not count)
    dump = dump_text(booster, iteration=args.iteration) if args.dump else ""
    if args.json:
        if args.dump:
            info["dump"] = dump
        print(json.dumps(info, indent=2))
        return 0
    lp = info["leaves_per_tree"]
    best = info["best_iteration"]
    print(f"model       {args.model}")
    print(f"objective   {info['objective']} {json.dumps(info['objective_params'])}")
    print(
        f"trees       {info['n_trees']} ({_count(info['n_iterations'], 'round')} x "
        f"{_count(info['n_outputs'], 'output')}), best iteration "
        f"{best if best is not None else '-'}"
    )
    print(
        f"leaves      {lp['min']}..{lp['max']} per tree (mean {lp['mean']:.1f}), "
        f"max depth {info['max_depth']}"
    )
    counted = info["importance_iterations"]
    rounds = ""
    if counted != info["n_iterations"]:
        rounds = " (first round)" if counted == 1 else f" (first {counted} rounds)"
    print(f"features    {info['n_features_used']} of {info['n_features']} used{rounds}")
    rows = [
        (
            # a name with a newline or tab (a model file may hold one) would break the
            # table, an empty one or one with blanks at its ends would not show
            shown_name(f["feature"]),
            str(f["split"]),
            f"{f['gain']:.6g}",
            f"{f['gain_share']:.1%}",
        )
        for f in info["top_features"]
    ]
    if rows:
        header = ("feature", "splits", "gain", "gain %")
        print(f"\ntop {len(rows)} features by {info['importance_type']}{rounds}:")
        _print_columns(header, rows)
    if args.dump:
        print()
        past = counted * booster.n_outputs  # the first tree the importances leave out
        if args.iteration is None and past < len(booster.trees):
            lines = dump.splitlines(keepends=True)  # a node line never starts "tree "
            at = next(i for i, x in enumerate(lines) if x.startswith(f"tree {past} ("))
            lines.insert(
                at,
                f"# rounds after the best iteration {best} (from tree {past} on): predict "
                "does not use them, the importances above do not count them\n",
            )
            dump = "".join(lines)
        print(dump, end="")
    return 0

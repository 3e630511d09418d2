"""``ltrboost experiment``: seed 000's grid (``--protocol xia``) or seed 004's six
runs (``--protocol qbrank``), with a report folder and its table on stdout."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys

from ltrboost.cli._common import _check_inputs
from ltrboost.cli._parser import FloatTextError, parse_float


def _print_report(output: str) -> None:
    """The report's ``table.md`` (UTF-8) on stdout, then where the report is on stderr.
    Each character the stdout's encoding lacks is written as ``\\uXXXX``: seed 004's
    union and plus-minus signs on a cp1252 stdout (a Windows console, or a redirect
    there) failed the finished run with "'charmap' codec can't encode character"."""
    with open(os.path.join(output, "table.md"), encoding="utf-8") as f:
        text = f.read()
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        text = text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:  # an encoding Python does not know: the stream's own to report
        pass
    print(text)
    # the table out before the line after it (in order under 2>&1), and a stdout that
    # cannot take it (> /dev/full) is the error alone, not after "report written"
    sys.stdout.flush()
    print(f"report written to {output}", file=sys.stderr)


# the default protocol's grid: what --systems, --criteria, --leaves and
# --learning-rates give when left out (None in the parser, so that --protocol qbrank
# can tell a flag given from its default)
GRID_DEFAULTS = {
    "--systems": "mcrank,lambdamart",
    "--criteria": "se,ole",
    "--leaves": "10,20",
    "--learning-rates": "0.06,0.10,0.12",
}


def _split(text: str, typ) -> list:
    typ = parse_float if typ is float else typ  # 1e400: not read as inf
    return [typ(v.strip()) for v in text.split(",") if v.strip()]


def _grid(args: argparse.Namespace, flag: str, typ, example: str) -> list:
    """The comma-separated values of ``flag`` (its default when not given), each a
    ``typ``; an error naming the flag for a value that is not one, or for no value."""
    text = _flag_text(args, flag)
    try:
        values = _split(text, typ)
    except FloatTextError as e:
        raise ValueError(f"{flag} {text!r}: {e}") from None
    except ValueError:
        what = "integers" if typ is int else "numbers"
        raise ValueError(
            f"{flag} {text!r} must be {what}, comma-separated, e.g. {flag} {example}"
        ) from None
    if not values:
        raise ValueError(f"{flag} {text!r} gives no value: the grid would have no cell")
    return values


def _flag_text(args: argparse.Namespace, flag: str) -> str:
    given = getattr(args, flag[2:].replace("-", "_"))
    return GRID_DEFAULTS[flag] if given is None else given


def _qbrank_tree_settings(args: argparse.Namespace) -> dict:
    """``--leaves`` and ``--learning-rates`` under ``--protocol qbrank``: one value
    each, the trees of its GBT and QBRank runs (seed 004's 20 leaves and 0.05 when
    left out); a list is refused (the protocol has no grid)."""
    out = {}
    for flag, typ, key, paper in (
        ("--leaves", int, "max_leaf_nodes", "20"),
        ("--learning-rates", float, "learning_rate", "0.05"),
    ):
        if getattr(args, flag[2:].replace("-", "_")) is None:
            continue
        values = _grid(args, flag, typ, paper)
        if len(set(values)) > 1:
            raise ValueError(
                f"{flag} {_flag_text(args, flag)!r}: --protocol qbrank trains one "
                f"{'tree size' if typ is int else 'learning rate'} for its GBT and QBRank "
                f"runs, not a grid; give one value (default {paper}, seed 004's)"
            )
        out[key] = values[0]
    return out


def cmd_experiment_qbrank(args: argparse.Namespace) -> int:
    from ltrboost.experiment_qbrank import (
        DEFAULT_TREES,
        Settings,
        _check_settings,
        run_qbrank_experiment,
    )

    with _experiment_flags(args):  # the flags' errors, before any file is looked at
        settings = Settings(
            n_estimators=args.max_trees or DEFAULT_TREES,
            min_samples_leaf=args.min_samples_leaf,
            ties=args.ties,
            **_qbrank_tree_settings(args),
        )
        _check_settings(settings)
    _check_inputs(args)
    with _experiment_flags(args):
        run_qbrank_experiment(
            args.folder,
            args.output,
            settings=settings,
            n_threads=args.n_threads,
            progress=not args.quiet,
            na_values=args.missing_token,
            n_features=args.n_features,
            setting_names={**_EXPERIMENT_FLAGS, "ties": "--ties"},
        )
    _print_report(args.output)
    return 0


# run_experiment's arguments and each cell's parameters, as the flags that set them
_EXPERIMENT_FLAGS = {
    "patience": "--patience",
    "max_trees": "--max-trees",
    "n_estimators": "--max-trees",
    "systems": "--systems",
    "objective": "--systems",
    "criteria": "--criteria",
    "split_criterion": "--criteria",
    "leaves": "--leaves",
    "max_leaf_nodes": "--leaves",
    "learning_rates": "--learning-rates",
    "learning_rate": "--learning-rates",
    "growth": "--growth",
    "min_samples_leaf": "--min-samples-leaf",
    "n_threads": "--n-threads",
    "pair_method": "--ranknet-pair-method",
    "output": "--output",
}


@contextlib.contextmanager
def _experiment_flags(args: argparse.Namespace):
    """A settings error of the experiment (``max_leaf_nodes=1 should not be smaller
    than 2``) naming the flag that set it (``--leaves=1 ...``); an error that begins
    with anything else (a data file's ``FILE:LINE``) is left as it is."""

    from ltrboost.dataset import LTRInputError
    from ltrboost.experiment import SettingsChanged

    try:
        yield
    except LTRInputError as e:  # a file read at n_features=N: the flag that set N
        flagged = re.sub(r"(?<![\w-])n_features=(\d+)", r"--n-features \1", e.problem)
        if flagged == e.problem:
            raise
        raise LTRInputError(flagged, path=e.path, line=e.line) from None
    except SettingsChanged as e:  # a resume with another value: the flag that set it
        raise ValueError(e.text({**_EXPERIMENT_FLAGS, "na_values": "--missing-token"})) from None
    except ValueError as e:
        names = "|".join(sorted(_EXPERIMENT_FLAGS, key=len, reverse=True))
        match = re.match(rf"({names})(?=[=\[ ])", str(e))
        if match is None or type(e) is not ValueError:
            raise
        flag = _EXPERIMENT_FLAGS[match.group(1)]
        hint = ""
        if flag in ("--leaves", "--learning-rates") and args.system_grid:
            hint = f" (a value of {flag} or --system-grid)"
        raise ValueError(flag + str(e)[match.end() :] + hint) from e


def cmd_experiment(args: argparse.Namespace) -> int:
    if args.max_trees is not None and args.max_trees < 1:
        raise ValueError(f"--max-trees {args.max_trees} must be >= 1 (leave it out: the default)")
    if args.n_features is not None and args.n_features < 1:  # as train's
        raise ValueError(f"--n-features={args.n_features} must be >= 1")
    if args.patience is not None and args.patience < 1:
        raise ValueError(
            f"--patience {args.patience} must be >= 1 (leave it out: train every tree)"
        )
    if args.protocol == "qbrank":
        for flag, given in (
            ("--patience", args.patience is not None),
            ("--growth", args.growth != "breadth_first"),
            ("--ranknet-pair-method", args.ranknet_pair_method is not None),
            ("--systems", args.systems is not None),  # its six runs are fixed
            ("--criteria", args.criteria is not None),
            ("--system-grid", bool(args.system_grid)),
        ):
            if given:
                raise ValueError(
                    f"{flag} is a flag of the default protocol (xia); --protocol qbrank "
                    "does not read it"
                )
        return cmd_experiment_qbrank(args)
    if args.ties:
        raise ValueError("--ties is a flag of --protocol qbrank")
    from ltrboost.experiment import run_experiment

    def grid(flag: str, typ, example: str) -> list:
        return _grid(args, flag, typ, example)

    systems_text = _flag_text(args, "--systems")
    systems = grid("--systems", str, "mcrank,lambdamart")
    system_grids = _system_grids(args.system_grid, _split)
    not_run = sorted(set(system_grids) - set(systems))
    if not_run:
        raise ValueError(
            f"--system-grid names {', '.join(not_run)}, which is not among --systems "
            f"{systems_text!r}: that grid would never run"
        )
    if args.ranknet_pair_method and "ranknet" not in systems:
        raise ValueError(
            f"--ranknet-pair-method sets RankNet's pairs, and ranknet is not among --systems "
            f"{systems_text!r}"
        )
    from ltrboost.experiment import SYSTEMS

    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ValueError(
            f"--systems {systems_text!r}: {', '.join(map(repr, unknown))} is not one of "
            f"{', '.join(SYSTEMS)}"
        )
    _check_inputs(args)
    with _experiment_flags(args):
        summary = run_experiment(
            args.folder,
            args.output,
            systems=systems,
            criteria=grid("--criteria", str, "se,ole"),
            leaves=grid("--leaves", int, "10,20"),
            learning_rates=grid("--learning-rates", float, "0.06,0.10,0.12"),
            max_trees=args.max_trees,
            growth=args.growth,
            min_samples_leaf=args.min_samples_leaf,
            n_threads=args.n_threads,
            progress=not args.quiet,
            patience=args.patience,
            system_params=(
                {"ranknet": {"pair_method": args.ranknet_pair_method}}
                if args.ranknet_pair_method
                else None
            ),
            system_grids=system_grids,
            na_values=args.missing_token,
            n_features=args.n_features,
        )
    _print_report(args.output)
    if not summary["n_cells"]:
        print(
            "ltrboost: the table is empty: it compares each 'ole' cell with its 'se' "
            "cell, and no cell of this run has both (--criteria se,ole); the finished "
            f"cells are in {os.path.join(args.output, 'cells')}",
            file=sys.stderr,
        )
        return 1
    return 0


def _system_grids(specs: list[str], split) -> dict:
    """``["ranknet=20:0.1"]`` -> ``{"ranknet": ([20], [0.1])}``."""
    grids: dict = {}
    given: dict[str, str] = {}
    for spec in specs:
        system, eq, grid = spec.partition("=")
        leaves, colon, rates = grid.partition(":")
        system = system.strip()
        if not eq or not colon or not system:
            raise ValueError(f"--system-grid {spec!r} must look like SYSTEM=LEAVES:RATES")
        if system in given:  # the first was dropped unsaid
            raise ValueError(
                f"--system-grid {given[system]!r} and {spec!r} both give {system}'s grid; "
                f"give it once, with comma lists (e.g. {system}=10,20:0.05,0.1)"
            )
        given[system] = spec
        try:
            grids[system] = (split(leaves, int), split(rates, float))
        except FloatTextError as e:
            raise ValueError(f"--system-grid {spec!r}: {e}") from None
        except ValueError:
            raise ValueError(
                f"--system-grid {spec!r}: LEAVES must be integers and RATES numbers, "
                "comma-separated, e.g. ranknet=10,20:0.05,0.1"
            ) from None
        for part, values in zip(("LEAVES", "RATES"), grids[system], strict=True):
            if not values:
                raise ValueError(
                    f"--system-grid {spec!r} gives no {part}: the grid would have no cell"
                )
    return grids

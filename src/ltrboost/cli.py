"""Command-line interface: ``ltrboost train | predict | eval | export | cv |
inspect``.

The CLI has no logic of its own: each subcommand calls one public function.  Every
training parameter of :data:`ltrboost.params.PARAMS` is a flag spelled in kebab-case
(``--min-samples-leaf``), so the CLI and the Python API cannot drift apart.
Bad input exits with status 2 and one line ``ltrboost: error: FILE:LINE: problem`` on
stderr, never a traceback.  Ctrl-C exits with status 130 and writes nothing (SIGTERM:
143, SIGHUP: 129).

Start-up is kept short: importing this module loads neither Numba, the kernels,
scikit-learn nor tqdm.  Each command imports what it needs when it runs, and ``main``
adds the training flags (built from the plain parameter list :mod:`ltrboost.params`)
only to a subcommand that is actually parsed or whose help is printed, so
``ltrboost --help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import math
import os
import re
import sys
import warnings
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any, NoReturn

from ltrboost._version import __version__

# the parameter list is plain Python (no engine import): flags cost nothing to build
from ltrboost.params import PARAM_NAMES, PARAMS, BoosterParams

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_HANGUP = 129  # 128 + SIGHUP (the terminal closed)
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a program the pipe's signal ended


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _parse_bool(s: str) -> bool:
    v = s.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {s!r}")


def _parse_any(s: str) -> Any:
    """Numbers as numbers, JSON lists/objects as such, anything else as a string."""
    try:
        return json.loads(s)
    except ValueError:
        return s


def _none_or(typ):
    def conv(s: str):
        if s.strip().lower() in ("none", "null", ""):
            return None
        return typ(s)

    conv.__name__ = getattr(typ, "__name__", "value")
    return conv


def _arg_type(annotation: str):
    ann = annotation.replace(" ", "")
    base = ann.split("|")[0]
    nullable = "None" in ann.split("|")
    typ: Any
    if base == "int":
        typ = int
    elif base == "float":
        typ = float
    elif base == "bool":
        typ = _parse_bool
    elif base == "str" and "list" not in ann:
        typ = str
    elif base == "str":
        typ = str  # comma-separated lists are split by the booster
    else:
        typ = _parse_any
    return _none_or(typ) if nullable else typ


class _MetricFlag(argparse.Action):
    """``--metric`` and its deprecated alias ``--eval-metric``: one value, not two.

    Both set ``eval_metric``; two different values (the flag repeated, or both flags)
    are an error instead of the later one silently winning.  Several metrics are one
    comma-separated list, which the message says when the same flag is repeated.
    """

    def __call__(self, parser, namespace, values, option_string=None):
        before = getattr(namespace, self.dest, None)
        first = getattr(namespace, "_metric_flag", None)  # the flag given first, if any
        if first is not None and before != values and not hasattr(namespace, "_metric_error"):
            # reported by main as one line (parser.error would print the usage too)
            if first == option_string:
                namespace._metric_error = (
                    f"{option_string} given twice ({before!r}, then {values!r}); several "
                    f"metrics are one comma-separated list, e.g. {option_string} "
                    f"{before},{values}"
                )
            else:
                namespace._metric_error = (
                    f"--metric and --eval-metric (a deprecated alias) disagree: "
                    f"{before!r} vs {values!r}; give --metric once"
                )
        namespace._metric_flag = first or option_string
        setattr(namespace, self.dest, values)


def add_training_flags(parser: argparse.ArgumentParser, unlisted: tuple[str, ...] = ()) -> None:
    """One flag per training parameter, defaulting to 'not given'.

    ``eval_metric`` is spelled ``--metric`` (added by the subcommand); ``--eval-metric``
    stays accepted as a hidden, deprecated alias.  The parameters in ``unlisted`` are
    left out of the help (a command that refuses them with its own message, as ``cv``
    does ``--early-stopping-rounds``), not out of the parser.
    """
    group = parser.add_argument_group("training parameters (see README for each)")
    for p in PARAMS:
        if p.name in unlisted:
            group.add_argument(
                _flag(p.name),
                dest=p.name,
                type=_arg_type(p.annotation),
                default=argparse.SUPPRESS,
                help=argparse.SUPPRESS,
            )
            continue
        if p.name == "eval_metric":
            group.add_argument(
                "--eval-metric",
                dest="eval_metric",
                type=_arg_type(p.annotation),
                action=_MetricFlag,
                default=argparse.SUPPRESS,
                help=argparse.SUPPRESS,
            )
            continue
        group.add_argument(
            _flag(p.name),
            dest=p.name,
            type=_arg_type(p.annotation),
            default=argparse.SUPPRESS,
            metavar=p.name.upper(),
            help=f"{p.doc} (default: {p.default!r})".replace("%", "%%"),
        )


def _add_metric_option_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--gain",
        choices=("exp", "linear"),
        default=None,
        help="NDCG/DCG gain 2^y-1 or y (default: the model's gain, else exp)",
    )
    p.add_argument(
        "--relevance-threshold",
        type=float,
        default=None,
        metavar="T",
        help="MAP/MRR/P@k count labels >= T as relevant (default: the model's, else 1)",
    )


class _StoreNoting(argparse._StoreAction):
    """argparse's ``store`` (the last value wins, as everywhere), noting each use of the
    flag, so that a flag given twice with two values is warned about (see
    :func:`_repeated_flags`): ``--learning-rate 0.1 ... --learning-rate 0.3`` kept 0.3
    without a word.  Flags meant to be repeated use ``append``; ``--metric`` has its own
    action (two values are an error)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(namespace, "_flags_given", None)
        if given is None:
            given = {}
            namespace._flags_given = given
        given.setdefault(self.dest, []).append((option_string, values))
        super().__call__(parser, namespace, values, option_string)


def _repeated_flags(given: dict[str, list]) -> list[str]:
    """The warnings for :class:`_StoreNoting`'s notes: one per flag given more than
    once with different values, naming the flag and its values in order (the spelling
    too where it differs: ``-o a, then --output b``)."""
    warnings_ = []
    for uses in given.values():
        if len({repr(v) for _, v in uses}) < 2:
            continue  # once, or the same value again: nothing is lost
        flags = [o for o, _ in uses]
        name = max(flags, key=len)  # the long spelling
        if len(set(flags)) > 1:
            shown = [f"{o} {v}" for o, v in uses]
        else:
            shown = [str(v) for _, v in uses]
        times = "twice" if len(uses) == 2 else f"{len(uses)} times"
        warnings_.append(
            f"{name} given {times} ({', then '.join(shown)}); the last one, {uses[-1][1]}, is used"
        )
    return warnings_


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line ``ltrboost: error: ...`` (status 2),
    as every other error of the CLI, pointing at ``--help``: argparse printed the usage
    first (37 lines for ``train``, whose usage lists every training flag), which pushed
    the one line that matters to the bottom of the screen.

    A mistyped command, choice or flag gets the close one (``did you mean 'train'?``),
    and an unknown flag points at its command's ``--help``, not the top-level one.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A value that starts with '-' and a digit is a number, not a flag: before Python
        # 3.13 only -1 and -1.5 were, so `--min-gain-to-split -1e-3` (or -1e-05, as
        # Python writes 0.00001) failed with "expected one argument".  3.13's own test.
        self._negative_number_matcher = re.compile(r"-\.?\d")
        self.register("action", None, _StoreNoting)  # a flag given twice is noted
        self.register("action", "store", _StoreNoting)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"ltrboost: error: {message} (see '{self.prog} --help')\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and isinstance(value, str) and value not in choices:
            import difflib

            close = difflib.get_close_matches(value, [c for c in choices if isinstance(c, str)], 1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            listed = ", ".join(map(repr, choices))
            raise argparse.ArgumentError(
                action, f"invalid choice: {value!r}{hint} (choose from {listed})"
            )
        super()._check_value(action, value)

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = self
            while True:  # the (sub)command the unknown arguments were given to
                sub = next(
                    (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
                    None,
                )
                name = getattr(namespace, sub.dest, None) if sub else None
                if name not in getattr(sub, "choices", {}):
                    break
                parser = sub.choices[name]
            parser.error(f"unrecognized arguments: {' '.join(extras)}{_close_flag(parser, extras)}")
        return namespace


# Other libraries' names of a flag, which no spelling distance finds: `train --seed 3`
# was asked "did you mean --unbiased?", `cv --seed 3` nothing
_FLAG_SYNONYMS = {"--seed": "--random-state"}


def _close_flag(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """``; did you mean --n-estimators?`` for the first unknown flag of ``extras`` that
    is another library's name of a flag of ``parser`` (``--seed``: ``--random-state``),
    a prefix of one (flags are never abbreviated; two or three such flags are all
    named) or close to one; hidden flags (a deprecated alias, cv's refused ones) are
    never offered."""
    flags = [
        o
        for a in parser._actions
        if a.help != argparse.SUPPRESS
        for o in a.option_strings
        if o.startswith("--") and o != "--help"
    ]
    # a hidden flag the command refuses with a reason (cv's --output): named with it,
    # where it is the closest (`cv --out` was offered --quiet)
    refused = {
        o: a.refused
        for a in parser._actions
        if getattr(a, "refused", None)
        for o in a.option_strings
        if o.startswith("--")
    }
    import difflib

    def offer(flag: str) -> str:
        if flag in refused:
            return f"; {flag} is not available in {parser.prog.split()[-1]}: {refused[flag]}"
        return f"; did you mean {flag}?"

    for word in extras:
        if not word.startswith("--"):
            continue
        given = word.split("=", 1)[0]
        if _FLAG_SYNONYMS.get(given) in flags:
            return f"; did you mean {_FLAG_SYNONYMS[given]}?"
        longer = [f for f in flags if f.startswith(given)]
        if 1 < len(longer) <= 3:  # `--n`: --n-estimators or --n-threads
            return f"; did you mean {', '.join(longer[:-1])} or {longer[-1]}?"
        if not longer:  # a refused flag it begins (--out for --output) before a guess
            longer = [f for f in refused if f.startswith(given)][:1]
        pool = longer or flags + list(refused)
        close = difflib.get_close_matches(given, pool, 1, 0.6 if not longer else 0)
        if close:
            return offer(close[0])
    return ""


class _LazyParser(_Parser):
    """A subcommand parser whose slow-to-build flags are added on first real use.

    ``defer(fn)`` registers ``fn(parser)``; it runs once, before this parser parses
    arguments or formats its help/usage, so the result is the same parser as an eager
    build.  The top-level ``--help`` lists subcommands without building them.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # no prefix matching: `cv --pairs 3` set --pairs-per-sample silently (cv has no
        # --pairs), and a flag added later could change what an abbreviation means
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._deferred: list[Any] = []

    def defer(self, fn: Any, *, lazy: bool = True) -> None:
        if lazy:
            self._deferred.append(fn)
        else:
            fn(self)

    def _build(self) -> None:
        while self._deferred:
            self._deferred.pop(0)(self)

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        self._build()
        return super().parse_known_args(*args, **kwargs)

    def format_help(self) -> str:
        self._build()
        return super().format_help()

    def format_usage(self) -> str:
        self._build()
        return super().format_usage()


# Training parameters cv's help leaves out: the two it refuses (no validation set, no
# --position file in a fold) and those used by --unbiased only.
# train's file flags that cv has no use for, each refused saying why (unknown, they got
# argparse's "did you mean --pairs-per-sample?")
_CV_REFUSED_FILES = {
    "--pairs": "its folds learn from the data file's labels alone (train --pairs trains "
    "on a pairs file)",
    "--position": "it has no --unbiased (cross-validate a click model with "
    "ltrboost.Ranker and GroupKFold instead)",
    "--resume": "each fold trains from scratch (train --resume continues a model)",
    "--checkpoint-every": "cv writes no model (train --checkpoint-every checkpoints one)",
}
# cv's other refused flags (dests of their own): why, as cmd_cv and a close misspelling
# (`cv --out`, offered --quiet while --output was hidden) say it
_CV_REFUSED_OUTPUTS = {
    "--valid": "each fold is scored on its own held-out queries; give a validation file "
    "to train --valid",
    "--output": "it writes no model (one line per fold on stdout, --json for "
    "machine-readable output); train --output writes one",
}
_CV_UNLISTED = ("early_stopping_rounds", "unbiased", "position_bias_norm", "max_positions")


def build_parser(*, lazy: bool = False) -> argparse.ArgumentParser:
    """The CLI's parser.  ``lazy=True`` (what :func:`main` uses) defers the training
    flags, which import the engine, until the ``train`` subcommand is parsed."""
    parser = _Parser(
        prog="ltrboost",
        description="Learning to rank with gradient-boosted regression trees.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"ltrboost {__version__}")
    # metavar: errors say "COMMAND" (argparse named the dest, `command`, `clicks_command`)
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_LazyParser
    )

    p = sub.add_parser("train", help="train a ranker on a LETOR/svmlight file")
    p.add_argument("train", help="training data (LETOR/svmlight with qid:, or a .query sidecar)")
    p.add_argument("--valid", action="append", default=[], help="validation file (repeatable)")
    p.add_argument(
        "--output", "-o", default="model.json", help="model file (JSON; default model.json)"
    )
    p.add_argument(
        "--metric",
        dest="eval_metric",
        type=_none_or(str),
        action=_MetricFlag,
        default=None,
        metavar="METRICS",
        help="comma-separated validation metrics, the first drives early stopping "
        "(default: the objective's, ndcg@10; map or err@10 under --lambda-metric map "
        "or err)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument(
        "--missing",
        choices=("zero", "nan"),
        default=None,
        help="value of features absent from a sparse line (default zero, or the "
        "resumed model's); recorded in the model, and used by predict and eval",
    )
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=None,
        metavar="N",
        help="also write the model every N rounds to OUTPUT.checkpoint (atomically); "
        "the output itself is written only at the end, then the checkpoint is removed",
    )
    p.add_argument(
        "--resume",
        default=None,
        metavar="MODEL",
        help="continue training from this model file",
    )
    p.add_argument(
        "--pairs",
        default=None,
        metavar="FILE",
        help="explicit preferences, one 'qid preferred_docid other_docid "
        "[weight]' per line (docids from '#docid = ...' comments); for "
        "ranknet, rankboost, gbrank, qbrank",
    )
    p.add_argument(
        "--position",
        default=None,
        metavar="FILE",
        help="--unbiased: the 1-based position each training line was shown at, one "
        "per line (LightGBM's .position file; default TRAIN.position when it exists)",
    )
    p.add_argument(
        "--n-features",
        type=int,
        default=None,
        metavar="N",
        help="read the training data as N features wide (default: its highest feature "
        "index, or the resumed model's width), for validation files that use higher "
        "feature indices; the features absent from the training data are never split on",
    )
    _add_missing_token_flag(p)
    p.defer(add_training_flags, lazy=lazy)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("predict", help="write one score per data line, in input order")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("--output", "-o", default="-", help="score file (default -: stdout)")
    p.add_argument(
        "--missing",
        choices=("zero", "nan"),
        default=None,
        help="absent sparse features (default: the model's convention; a different "
        "one is an error)",
    )
    p.add_argument(
        "--iteration",
        type=int,
        default=None,
        help="use the first N rounds (default: best iteration, else all)",
    )
    p.add_argument(
        "--n-threads",
        type=int,
        default=None,
        help=(
            "threads (default, 0 or negative: OMP_NUM_THREADS, else all cores under the CPU "
            "quota; more than the cores: capped)"
        ),
    )
    p.add_argument(
        "--contrib",
        action="store_true",
        help="write each row's TreeSHAP feature contributions instead of its score: "
        "N + 1 tab-separated numbers a line (feature 1..N, then the expected score; "
        "they add up to the score)",
    )
    _add_quiet_flag(p, "no 'compiling kernels' notice on a terminal")
    _add_missing_token_flag(p)
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("eval", help="evaluate a model on labelled data")
    p.add_argument("model")
    p.add_argument("data", nargs="+")
    p.add_argument(
        "--metric",
        action=_MetricFlag,
        default="ndcg@1,ndcg@3,ndcg@5,ndcg@10,err@10,map",
        metavar="METRICS",
        help="comma-separated metrics (default: %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--missing",
        choices=("zero", "nan"),
        default=None,
        help="absent sparse features (default: the model's convention; a different "
        "one is an error)",
    )
    p.add_argument(
        "--iteration",
        type=int,
        default=None,
        help="use the first N rounds (default: best iteration, else all)",
    )
    p.add_argument(
        "--n-threads",
        type=int,
        default=None,
        help=(
            "threads (default, 0 or negative: OMP_NUM_THREADS, else all cores under the CPU "
            "quota; more than the cores: capped)"
        ),
    )
    _add_metric_option_flags(p)
    _add_quiet_flag(p, "no 'compiling kernels' notice on a terminal")
    _add_missing_token_flag(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("cv", help="cross-validate over query folds: mean and std of each metric")
    p.add_argument("data", help="LETOR/svmlight file with qid: (or a .query sidecar)")
    p.add_argument("--folds", type=int, default=5, help="query folds (default 5)")
    p.add_argument(
        "--metric",
        dest="eval_metric",
        type=_none_or(str),
        action=_MetricFlag,
        default=None,
        metavar="METRICS",
        help="comma-separated metrics reported per fold (default: the objective's, "
        "ndcg@10; map or err@10 under --lambda-metric map or err, as train)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--missing",
        choices=("zero", "nan"),
        default="zero",
        help="value of features absent from a sparse line (default zero)",
    )
    _add_quiet_flag(p, "no progress bar (one per fold, on stderr)")
    _add_missing_token_flag(p)
    # train's flags that cv has no use for: refused saying why (unknown, they got
    # argparse's "did you mean --gain?" / "--tau?")
    # (dests of their own: the checks of inputs and outputs run before the command)
    hidden = dict(default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    p.add_argument(
        "--valid", dest="cv_valid", action="append", **hidden
    ).refused = _CV_REFUSED_OUTPUTS["--valid"]
    p.add_argument("-o", "--output", dest="cv_output", **hidden).refused = _CV_REFUSED_OUTPUTS[
        "--output"
    ]
    for flag, why in _CV_REFUSED_FILES.items():
        p.add_argument(flag, dest="cv_" + flag[2:].replace("-", "_"), **hidden).refused = why
    # listed by `cv --help` they read as available; cv refuses them, saying why
    p.defer(partial(add_training_flags, unlisted=_CV_UNLISTED), lazy=lazy)
    p.set_defaults(func=cmd_cv)

    p = sub.add_parser(
        "warmup",
        help="compile the kernels of commands into the kernel cache now (e.g. in a "
        "container build), so that their first run loads them",
    )
    p.add_argument(
        "profiles",
        nargs="*",
        default=[],  # [] either way for a '*' positional: the default is set below
        help="train:OBJECTIVE, train:OBJECTIVE+ole, eval, predict or all (default: "
        "train:lambdamart eval predict)",
    )
    p.add_argument(
        "--clear",
        action="store_true",
        help="compile nothing: remove this install's compiled kernels from every cache "
        "folder (run it before `pip uninstall ltrboost`; other files are left alone)",
    )
    p.set_defaults(func=cmd_warmup)

    p = sub.add_parser(
        "inspect",
        help="summarise a model: objective, trees, features used, top importances",
    )
    p.add_argument("model")
    p.add_argument("--top", type=int, default=10, help="features listed (default 10)")
    p.add_argument(
        "--importance-type",
        choices=("gain", "split"),
        default="gain",
        help="rank features by total split gain (default) or number of splits",
    )
    p.add_argument(
        "--iteration",
        type=int,
        default=None,
        help="count and dump the first N rounds (default: importances of the best "
        "iteration, else all; the dump holds every round)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--dump", action="store_true", help="also print every tree as indented text")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser(
        "export",
        help="write a model for a search engine or serving stack (see docs/deploy.md)",
    )
    p.add_argument("model")
    p.add_argument(
        "--format",
        "-f",
        required=True,
        help="lightgbm | xgboost | xgboost-dump | solr | ranklib | onnx",
    )
    p.add_argument("--output", "-o", required=True, help="file to write ('-': stdout)")
    p.add_argument(
        "--feature-names",
        default=None,
        metavar="FILE",
        help="the engine's feature names, one per line, in ltrboost's feature order",
    )
    p.add_argument(
        "--iteration",
        type=int,
        default=None,
        help="use the first N rounds (default: best iteration, else all)",
    )
    p.add_argument(
        "--name",
        default=None,
        help="model name (solr, _createmodel); default: the output file's stem, 'ltrboost' "
        "with --output -",
    )
    p.add_argument(
        "--createmodel",
        default=None,
        metavar="FILE",
        help="xgboost-dump: also write the OpenSearch/ES LTR _createmodel body ('-': print)",
    )
    p.add_argument(
        "--assume-no-missing",
        action="store_true",
        help="ranklib: features are never missing in the engine (RankLib reads them as 0); "
        "implied for a model trained with --missing zero",
    )
    p.set_defaults(func=cmd_export)

    p = sub.add_parser(
        "generate",
        help="write a synthetic LETOR dataset (train/vali/test.txt) to a folder",
    )
    p.add_argument("folder")
    p.add_argument(
        "--n-queries",
        type=int,
        default=300,
        help="queries in train.txt (default 300); vali.txt and test.txt get a third as many "
        "each (at least 1)",
    )
    p.add_argument("--docs-per-query", type=int, default=40, help="(default 40)")
    p.add_argument("--n-features", type=int, default=30, help="(default 30)")
    p.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    p.add_argument(
        "--lightgbm",
        action="store_true",
        help="also write LightGBM's copies NAME.lightgbm.txt (no qid: tokens) with their "
        ".query sidecars (LightGBM cannot read qid:)",
    )
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser(
        "convert",
        help="LETOR/svmlight -> query-partitioned Parquet (qid, label, f1..fN) for Dask",
    )
    p.add_argument("data", help="LETOR/svmlight file with qid: (or a .query sidecar)")
    p.add_argument("output", help="folder to create, e.g. train.parquet")
    p.add_argument(
        "--rows-per-file",
        type=int,
        default=1_000_000,
        metavar="N",
        help="close a file at the first query boundary after N rows (default 1000000); "
        "each file is one partition of dask.dataframe.read_parquet, queries whole",
    )
    p.add_argument(
        "--missing",
        choices=("zero", "nan"),
        default="zero",
        help="value of features absent from a sparse line (default zero)",
    )
    p.add_argument(
        "--n-features",
        type=int,
        default=None,
        metavar="N",
        help="columns f1..fN (default: the file's highest feature index); give the "
        "training file's to convert a validation or test file to the same columns",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    _add_missing_token_flag(p)
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser(
        "clicks", help="click logs: simulate them from graded data, mine preference pairs"
    )
    csub = p.add_subparsers(dest="clicks_command", metavar="COMMAND", required=True)
    c = csub.add_parser("mine", help="mine skip-above / skip-next pairs into a --pairs file")
    c.add_argument("log", help="click log (qid docid position clicked [impression])")
    c.add_argument("--data", required=True, help="the LETOR file the docids belong to")
    c.add_argument("--output", "-o", required=True, help="pairs file to write")
    c.add_argument(
        "--strategy",
        choices=("skip-above", "skip-next"),
        default="skip-above",
        help="(default skip-above)",
    )
    c.add_argument(
        "--min-count", type=int, default=1, help="keep pairs with net count >= N (default 1)"
    )
    _add_missing_token_flag(c)
    c.set_defaults(func=cmd_clicks_mine)
    c = csub.add_parser(
        "dataset",
        help="click log -> training data for --unbiased true: a LETOR file (one query per "
        "impression, clicks as labels) and OUTPUT.position",
    )
    c.add_argument("log", help="click log (qid docid position clicked [impression])")
    c.add_argument("--data", required=True, help="the LETOR file the docids belong to")
    c.add_argument("--output", "-o", required=True, help="LETOR file to write")
    _add_missing_token_flag(c)
    c.set_defaults(func=cmd_clicks_dataset)
    c = csub.add_parser("simulate", help="simulate a click log from a graded LETOR file")
    c.add_argument("data", help="LETOR file with qid: and '#docid = ...' comments")
    c.add_argument("--output", "-o", required=True, help="click log to write")
    c.add_argument(
        "--model",
        choices=("cascade", "position_based"),
        default="cascade",
        help="click model (default cascade)",
    )
    c.add_argument("--n-sessions", type=int, default=10000, help="(default 10000)")
    c.add_argument("--random-state", type=int, default=0, help="seed (default 0)")
    c.add_argument("--top-k", type=int, default=10, help="results shown (default 10)")
    c.add_argument(
        "--eta", type=float, default=None, help="position_based: (1/rank)^eta (default 1)"
    )
    c.add_argument(
        "--satisfaction",
        type=float,
        default=None,
        help="cascade: probability of stopping after a click (default 0.5)",
    )
    c.add_argument("--noise", type=float, default=0.0, help="click probability floor (default 0.0)")
    _add_missing_token_flag(c)
    c.set_defaults(func=cmd_clicks_simulate)

    p = sub.add_parser(
        "experiment",
        help="seed 000's protocol: {mcrank, lambdamart} x {se, ole} x leaves x learning rates",
    )
    p.add_argument(
        "folder",
        help="folder with Fold*/train.txt, vali.txt, test.txt "
        "(LETOR 3.0: trainingset.txt, validationset.txt, testset.txt)",
    )
    p.add_argument(
        "--output", "-o", default="experiment-report", help="report folder (default %(default)s)"
    )
    p.add_argument(
        "--systems", default="mcrank,lambdamart", help="comma-separated (default %(default)s)"
    )
    p.add_argument("--criteria", default="se,ole", help="comma-separated (default %(default)s)")
    p.add_argument(
        "--leaves", default="10,20", help="leaves per tree, comma-separated (default %(default)s)"
    )
    p.add_argument(
        "--learning-rates",
        default="0.06,0.10,0.12",
        help="comma-separated (default %(default)s)",
    )
    p.add_argument(
        "--max-trees",
        type=int,
        default=None,
        help="cap on trees (default: 1000 LambdaMART, 2500 McRank as the paper, 1000 "
        "RankNet as LambdaMART; --protocol qbrank: 500)",
    )
    p.add_argument(
        "--growth",
        default="breadth_first",
        help="node order (default breadth_first: the paper grew trees width-first)",
    )
    p.add_argument(
        "--min-samples-leaf", type=int, default=20, help="documents per leaf (default 20)"
    )
    p.add_argument(
        "--n-threads",
        type=int,
        default=None,
        help="threads (default: OMP_NUM_THREADS, else all cores under the CPU quota)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    p.add_argument(
        "--patience",
        type=int,
        default=None,
        metavar="N",
        help="stop a cell N rounds after its best validation NDCG@10 (default: train "
        "every tree); the reported iteration is the full run's unless validation "
        "NDCG@10 improves again after N flat rounds",
    )
    p.add_argument(
        "--ranknet-pair-method",
        choices=("all", "topk", "sampled"),
        default=None,
        help="RankNet's pairs (default all; topk keeps pairs touching the top 30)",
    )
    p.add_argument(
        "--system-grid",
        action="append",
        default=[],
        metavar="SYSTEM=LEAVES:RATES",
        help="replace one system's grid, e.g. ranknet=20:0.1 (comma lists allowed); repeatable",
    )

    _add_protocol_arguments(p)
    _add_missing_token_flag(p)
    p.set_defaults(func=cmd_experiment)
    return parser


def _background_compile(args: argparse.Namespace) -> Any:
    """A second process compiling the command's kernels on a first run (see
    :mod:`ltrboost._warmup`)."""
    from ltrboost._warmup import BackgroundCompile, command_profile

    objective = getattr(args, "objective", None)
    criterion = getattr(args, "split_criterion", None)
    return BackgroundCompile(
        command_profile(
            args.command,
            objective if isinstance(objective, str) else None,
            criterion if isinstance(criterion, str) else None,
        )
    )


class _Stdout:
    """``sys.stdout`` while a command runs: its write errors name ``stdout`` (``ltrboost:
    error: stdout: No space left on device`` behind ``> /dev/full``, not a bare
    ``[Errno 28] ...``), and a closed stdout (``>&-``, where Python's is None) is such an
    error too instead of an AttributeError traceback.  Anything else is the stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _call(self, name: str, *args: Any, on: Any = None) -> Any:
        if self._stream is None:
            raise OSError(errno.EBADF, "closed (nowhere to write the output)", "stdout")
        try:
            return getattr(self._stream if on is None else on, name)(*args)
        except BrokenPipeError:
            raise  # the reader left: main's own case
        except OSError as e:
            raise OSError(e.errno, e.strerror or str(e), "stdout") from None

    def write(self, text: str) -> int:
        raw = getattr(self._stream, "buffer", None)
        if not isinstance(raw, io.RawIOBase) or os.name != "posix":  # no "\r\n" to add
            return self._call("write", text)
        # PYTHONUNBUFFERED / python -u: the text layer writes straight to the file and
        # takes a short write (the kernel's, when the reader of a pipe leaves mid-text,
        # or a disk that fills) for the whole text, dropping the rest silently (predict
        # | head exited 0).  Write the bytes until all are written or the error shows.
        self._call("flush")
        data = memoryview(text.encode(self._stream.encoding, self._stream.errors or "strict"))
        while data:
            n = self._call("write", data, on=raw)
            if n is None:  # a non-blocking stdout that is full: wait, do not spin
                import select

                select.select([], [raw], [])
            data = data[n or 0 :]
        return len(text)

    def flush(self) -> None:
        if self._stream is not None:  # nothing written to a closed stdout: no error
            self._call("flush")

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


class _Stderr:
    """``sys.stderr`` while a command runs: messages, warnings and the progress bar only,
    so a stderr that cannot take them (closed, ``2>&-``, where Python's is None; full,
    ``2>/dev/full``; a reader gone) loses them, not the command's work: tqdm's first
    write raised and ``train`` exited with status 1 and no model, and ``print(...,
    file=None)`` wrote the messages to stdout."""

    def __init__(self, stream: Any) -> None:
        self._devnull = open(os.devnull, "w", encoding="utf-8") if stream is None else None
        self._stream = stream if stream is not None else self._devnull

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except (OSError, ValueError):  # ValueError: a closed file object
            return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def close_devnull(self) -> None:
        if self._devnull is not None:
            self._devnull.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    stderr = sys.stderr
    sys.stderr = messages = _Stderr(stderr)
    try:
        # from the first line on: Ctrl-C right after the command was typed lands in
        # the parser's or the command's first imports, outside _run's handlers
        with _signals_as_interrupt():
            try:
                return _main(argv)
            except KeyboardInterrupt as e:
                return _interrupted(e)
            except Exception as e:
                interrupt = _interrupt_behind(e)
                if interrupt is None:
                    raise
                return _interrupted(interrupt)
    finally:
        sys.stderr = stderr
        messages.close_devnull()


def _main(argv: list[str] | None) -> int:
    parser = build_parser(lazy=True)
    args = parser.parse_args(argv)
    vars(args).pop("_metric_flag", None)  # _MetricFlag's note of the first flag used
    metric_error = vars(args).pop("_metric_error", None)
    for text in _repeated_flags(vars(args).pop("_flags_given", {})):
        print(f"ltrboost: warning: {text}", file=sys.stderr)
    stdout = sys.stdout
    sys.stdout = _Stdout(stdout)
    try:
        return _run(args, metric_error)
    finally:
        sys.stdout = stdout


class _Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a command, raised where the signal arrives, as Ctrl-C
    is; ``signum`` is the signal's number."""

    def __init__(self, signum: int = 15) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: Any) -> NoReturn:
    raise _Terminated(signum)


# Signals whose default action ends the process at once, without Python's cleanup:
# handled as Ctrl-C is.  SIGHUP: the terminal closed (an ssh session dropped).
_TERMINATING_SIGNALS = ("SIGTERM", "SIGHUP")


@contextlib.contextmanager
def _signals_as_interrupt():
    """SIGTERM (``kill``, a scheduler's time limit) and SIGHUP (the terminal closed)
    end a command as Ctrl-C does: the cleanup of every ``finally`` runs (convert's
    hidden folder, temporary files beside an output are removed) and the exit status
    is 128 + the signal (143, 129).  Their default action ended the process at once
    and left them behind.  Only while the command runs, only in the main thread, and
    only in place of the default action: a handler the calling program installed
    (``ltrboost_cli`` from Python), or an ignored SIGHUP (``nohup``), is kept."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    replaced = {}
    try:
        for name in _TERMINATING_SIGNALS:
            signum = getattr(signal, name, None)
            if signum is not None and signal.getsignal(signum) is signal.SIG_DFL:
                replaced[signum] = signal.SIG_DFL
                signal.signal(signum, _raise_terminated)
        yield
    finally:
        for signum, previous in replaced.items():
            signal.signal(signum, previous)


def _interrupt_behind(e: BaseException) -> KeyboardInterrupt | None:
    """The interrupt (Ctrl-C, SIGTERM, SIGHUP) during whose handling ``e`` was raised,
    if any: a cleanup that fails after an interrupt (an import the interrupt left
    half-done, imported again) is the interrupt's end, not an error to report."""
    seen = set()
    context = e.__context__
    while context is not None and id(context) not in seen:
        if isinstance(context, KeyboardInterrupt):
            return context
        seen.add(id(context))
        context = context.__context__
    return None


def _interrupted(e: KeyboardInterrupt) -> int:
    """The one line and the exit status of an interrupted command: 130 for Ctrl-C,
    128 + the signal for SIGTERM (143) and SIGHUP (129)."""
    import signal

    signum = e.signum if isinstance(e, _Terminated) else int(signal.SIGINT)
    if isinstance(e, _Terminated):
        what = f"terminated ({signal.Signals(signum).name})"
    else:
        what = "interrupted"
    print(
        f"ltrboost: {what}; files already written (e.g. checkpoints) are complete, none "
        "was left half-written",
        file=sys.stderr,
    )
    # A KeyboardInterrupt that left an exec() of a string (SciPy's array API shim
    # runs one at import) stays noted by CPython as unhandled, and `python -m`
    # then ends the process by SIGINT instead of this status; an exec() of a
    # string that completes clears the note.
    exec("pass")
    return 128 + signum


def _run(args: argparse.Namespace, metric_error: str | None = None) -> int:
    """Run the parsed command; errors as one line and an exit status (see main).
    ``metric_error``: :class:`_MetricFlag`'s, reported here as one line."""
    from ltrboost.dataset import LTRInputError
    from ltrboost.io.model_json import ModelFormatError

    try:
        if metric_error:
            raise ValueError(metric_error)
        _check_missing_tokens(args)
        _refuse_stdout_output(args)
        _refuse_stdin_input(args)
        _refuse_output_over_input(args)
        with warnings.catch_warnings(), _background_compile(args):
            warnings.showwarning = _show_warning
            if getattr(args, "quiet", False):
                rc = int(args.func(args) or 0)
            else:
                from ltrboost._compile_notice import CompileNotice

                with CompileNotice() as args.compile_notice:
                    rc = int(args.func(args) or 0)
            sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
            return rc
    except BrokenPipeError:
        # the reader of stdout left (`ltrboost inspect M --dump | head`): not an error
        # to report; stdout goes to /dev/null so that the exit's flush does not fail too
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_BROKEN_PIPE
    except (LTRInputError, ModelFormatError, ValueError, OSError) as e:
        if (interrupt := _interrupt_behind(e)) is not None:  # a cleanup's error
            return _interrupted(interrupt)
        msg = _error_as_flags(e)
        if isinstance(e, OSError) and e.filename:  # FILE: problem, like data errors
            msg = f"{e.filename}: {e.strerror}"
        if getattr(args, "command", None) in _GAIN_COMMANDS:  # the remedy as their flag
            msg = msg.replace("use gain='linear'", "use --gain linear")
        print(f"ltrboost: error: {msg}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError as e:  # e.g. NumPy: "Unable to allocate 2.4 GiB for an array …"
        detail = f": {e}" if str(e) else ""
        print(
            f"ltrboost: error: out of memory{detail}; the data or the settings need more "
            "memory than this process may use (README: Errors and guarantees)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as e:
        return _interrupted(e)


def _error_as_flags(e: Exception) -> str:
    """The message of ``e``; a :class:`~ltrboost.params.ParameterError` names the
    training parameters by their flags (an input error's location kept as it is), as
    does a :class:`~ltrboost._checks.NonFiniteTrainingError`'s list of likely causes
    (``learning_rate=1e+300`` was the Python keyword), and an
    :class:`~ltrboost.export.ExportError` by its ``cli_message`` (``--assume-no-missing``
    where Python reads ``assume_no_missing=True``)."""
    from ltrboost._checks import NonFiniteTrainingError
    from ltrboost.dataset import LTRInputError
    from ltrboost.export._trees import ExportError
    from ltrboost.params import ParameterError

    if isinstance(e, NonFiniteTrainingError):
        return _params_as_flags(str(e), bare=True)
    if isinstance(e, ExportError):
        return e.cli_message
    if not isinstance(e, ParameterError):
        return str(e)
    if isinstance(e, LTRInputError):  # the path is the user's, not a parameter
        problem = _params_as_flags(e.problem, bare=True)
        return str(LTRInputError(problem, e.path, e.line, row=e.row, pair=getattr(e, "pair", None)))
    return _params_as_flags(str(e), bare=True)


# Arguments that name files a command writes; and inputs a command may rewrite on
# purpose (train --resume M --output M extends the model M).
_OUTPUT_ARGS = ("output", "createmodel")
_REWRITABLE_INPUTS = ("resume",)


# The commands that take --gain (a label above 31 names it as the remedy).
_GAIN_COMMANDS = ("train", "cv", "eval")

# The commands whose --output may be '-' (stdout): the others write files or folders.
_STDOUT_COMMANDS = ("predict", "export")


def _refuse_stdout_output(args: argparse.Namespace) -> None:
    """Refuse the output ``-`` where it is no stdout: it wrote a file named ``-``."""
    if getattr(args, "output", None) != "-" or args.command in _STDOUT_COMMANDS:
        return
    command = " ".join(
        c for c in (args.command, getattr(args, "clicks_command", None)) if isinstance(c, str)
    )
    raise ValueError(
        f"output '-': '{command}' writes files, not stdout ('-' is stdout for predict "
        "and export only); give a file name"
    )


# The arguments that name a file (or a folder) a command reads, as the messages name them.
_INPUT_ARGS = {
    "train": "TRAIN",
    "valid": "--valid",
    "resume": "--resume",
    "pairs": "--pairs",
    "position": "--position",
    "model": "MODEL",
    "data": "DATA",
    "log": "LOG",
    "feature_names": "--feature-names",
    "folder": "FOLDER",
}


def _input_paths(args: argparse.Namespace):
    """``(name, label, path)`` for every file (or folder) the command reads, in the
    order of :data:`_INPUT_ARGS`; ``label`` as the messages name the argument."""
    clicks = getattr(args, "clicks_command", None)
    for name, label in _INPUT_ARGS.items():
        if (name, args.command) in (("folder", "generate"), ("model", "clicks")):
            continue  # generate's output folder; clicks simulate's click model (a choice)
        if name == "data" and clicks in ("mine", "dataset"):
            label = "--data"
        value = getattr(args, name, None)
        for path in value if isinstance(value, list) else [value]:
            if isinstance(path, str):
                yield name, label, path


def _refuse_stdin_input(args: argparse.Namespace) -> None:
    """Refuse the input ``-``: it read a file named ``-`` ("-: No such file or
    directory").  Standard input is not read: inputs are files, read by name (a
    ``.query``/``.position`` sidecar is looked up beside them); a pipe can be given as
    ``/dev/stdin``, which the readers take as a file read once."""
    for _name, label, path in _input_paths(args):
        if path != "-":
            continue
        raise ValueError(
            f"{label} '-': standard input is not read (inputs are files, read by name); "
            "give a file name (a pipe can be given as /dev/stdin)"
        )


# What the readers of these inputs say they could not read ("cannot read pairs file").
_INPUT_READ_AS = {
    "resume": "cannot read",
    "pairs": "cannot read pairs file",
    "position": "cannot read position file",
    "model": "cannot read",
    "log": "cannot read click log",
    "feature_names": "cannot read feature names",
}


def _folder_problem(name: str, path: str) -> str:
    """Why the folder ``path`` cannot be the input ``name``: 'Is a directory', or for a
    data file, what the reader says of convert's Parquet folder."""
    if name in ("train", "valid", "data"):
        from ltrboost.io.letor import _refuse_parquet_folder

        try:
            _refuse_parquet_folder(path)
        except IsADirectoryError as e:
            return e.strerror
    return os.strerror(errno.EISDIR)


def _check_inputs(args: argparse.Namespace, only: tuple[str, ...] | None = None) -> None:
    """Every input named on the command line exists and can be read, before any data
    is: a missing ``--valid``, ``--pairs`` or ``--position`` file (or the second file
    of ``eval``) was reported only once the training file (gigabytes, minutes) had
    been read and parsed.  Each command calls it after the checks of its flags alone
    (those come first, whatever the files) and before it reads its first input.  Only
    ``stat`` and ``access``: nothing is opened, so a FIFO or ``/dev/stdin`` (a pipe
    given by name) is taken as it is, not blocked on or consumed.  A flag's file is
    named with its flag (``--valid FILE: No such file or directory``), a positional
    one by its path, as the readers name it.  ``only``: these arguments alone."""
    import stat

    for name, label, path in _input_paths(args):
        if only is not None and name not in only:
            continue
        folder = name == "folder"  # experiment's folder of folds
        try:
            mode = os.stat(path).st_mode
        except (OSError, ValueError) as e:  # ValueError: a NUL in the path
            problem = getattr(e, "strerror", None) or str(e)
        else:
            if folder and not stat.S_ISDIR(mode):
                problem = os.strerror(errno.ENOTDIR)
            elif not folder and stat.S_ISDIR(mode):
                problem = _folder_problem(name, path)
            elif not os.access(path, os.R_OK | (os.X_OK if folder else 0)):
                problem = os.strerror(errno.EACCES)
            else:
                continue
        shown = f"{label} {path or repr(path)}" if label.startswith("--") else path or "''"
        what = _INPUT_READ_AS.get(name)  # as the reader's own error says it
        raise ValueError(f"{shown}: {what}: {problem}" if what else f"{shown}: {problem}")


def _refuse_output_over_input(args: argparse.Namespace) -> None:
    """Refuse an output file that is also one of the command's input files (the same
    file by device and inode: a link or another spelling included), or a data file's
    ``.query`` / ``.position`` sidecar: the atomic write would replace the input with
    the output (a typo away from losing the training data or the model)."""
    outputs = []
    for name in _OUTPUT_ARGS:
        value = getattr(args, name, None)
        if isinstance(value, str) and value not in ("", "-") and os.path.isfile(value):
            outputs.append((name, value))
    out = getattr(args, "output", None)
    if getattr(args, "checkpoint_every", None) is not None and isinstance(out, str):
        ck = checkpoint_path(out)  # written during training (a link is followed)
        _refuse_checkpoint_over_output(out, ck)
        if os.path.isfile(ck):
            outputs.append(("checkpoint", ck))
    if getattr(args, "clicks_command", None) == "dataset" and isinstance(out, str):
        if os.path.isfile(out + ".position"):  # written beside the LETOR output
            outputs.append(("position", out + ".position"))
    if not outputs:
        return
    inputs = []
    for name, value in vars(args).items():
        if name in _OUTPUT_ARGS:
            continue
        for v in value if isinstance(value, list | tuple) else [value]:
            if isinstance(v, str) and v:
                inputs += [(name, v), (name, v + ".query"), (name, v + ".position")]
    for out_name, out in outputs:
        for in_name, path in inputs:
            if in_name in _REWRITABLE_INPUTS and _may_rewrite(out_name, out, path):
                continue
            try:
                same = os.path.isfile(path) and os.path.samefile(out, path)
            except OSError:
                same = False
            if same:
                flag = {
                    "checkpoint": "--checkpoint-every's OUTPUT.checkpoint",
                    "position": "--output's OUTPUT.position",
                }.get(out_name, "--" + out_name.replace("_", "-"))
                if out_name == "output" and args.command == "convert":
                    flag = "OUT"  # convert's output is a positional argument
                raise ValueError(
                    f"{out}: {flag} names an input of this command ({in_name}: {path}); "
                    "writing it would replace that input; give another output path"
                )


def _may_rewrite(out_name: str, out: str, path: str) -> bool:
    """Whether the output ``out`` may replace the input ``path`` of a rewritable kind
    (``--resume``): ``--output`` may (it extends the model), and so may the checkpoint
    when ``--resume`` names the checkpoint (continuing a killed run); a checkpoint that
    is a link to another resumed model would replace a file the user did not name."""
    if out_name != "checkpoint" or not os.path.islink(out):
        return True
    return os.path.abspath(out) == os.path.abspath(path)


def _refuse_checkpoint_over_output(output: str, ck: str) -> None:
    """``OUTPUT.checkpoint`` that leads to the output itself (a link, or a dangling
    link to where the output will be): every checkpoint would replace the previous
    complete model at the output with a partial one, the one thing checkpoints to
    their own file exist to prevent."""
    if os.path.realpath(ck) == os.path.realpath(output):
        raise ValueError(
            f"{ck}: --checkpoint-every's OUTPUT.checkpoint is the same file as --output "
            f"{output} (a link to it); checkpoints would replace the output's previous "
            "model; remove the link or give another --output"
        )


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one ``ltrboost: warning: ...`` line, like errors; the parameters a
    :class:`~ltrboost.params.ParameterWarning` names are spelled as their flags."""
    from ltrboost.params import ParameterWarning

    if isinstance(category, type) and issubclass(category, ParameterWarning):
        message = _params_as_flags(str(message), bare=True)
    message = str(message).removeprefix("ltrboost: ")  # the library's own prefix
    print(f"ltrboost: warning: {message}", file=sys.stderr)


def _check_missing_tokens(args: argparse.Namespace) -> None:
    """``--missing-token`` values, checked as ``na_values`` are; the error names the
    flag, not the Python keyword."""
    tokens = getattr(args, "missing_token", None)
    if tokens:
        from ltrboost.io.letor import _check_na_values

        try:
            _check_na_values(tokens)
        except ValueError as e:
            raise ValueError(f"--missing-token {str(e).removeprefix('na_values entry ')}") from None


def _add_quiet_flag(p: argparse.ArgumentParser, what: str = "no progress bar") -> None:
    """``--quiet``/``-q``, the same switch on every command that has something to be
    quiet about (a progress bar, the first run's compile notice)."""
    p.add_argument("--quiet", "-q", action="store_true", help=what)


def _add_missing_token_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--missing-token",
        dest="missing_token",
        action="append",
        default=None,
        metavar="TOKEN",
        help="a feature value such as NULL (LETOR 3.0 'Feature-null' files) that means "
        "missing and reads as NaN (repeatable; default: such a value is an error)",
    )


def resolve_missing(flag: str | None, model, model_path: str) -> str:
    """Missing-value convention: the model's, unless a flag contradicts it (error)."""
    recorded = getattr(model, "missing", None) if model is not None else None
    if flag is not None and recorded is not None and flag != recorded:
        raise ValueError(
            f"{model_path}: the model was trained with --missing {recorded}; "
            f"--missing {flag} would score its features differently (drop the flag)"
        )
    return flag or recorded or "zero"


# ---------------------------------------------------------------------------- train
def _load(
    path: str,
    *,
    missing: str = "zero",
    n_features: int | None = None,
    require_qid: bool = True,
    return_comments: bool = False,
    na_values: list[str] | None = None,
    letor_names: bool = False,
):
    from ltrboost.io.letor import load_svmlight

    data = load_svmlight(
        path,
        n_features=n_features,
        missing=missing,
        return_comments=return_comments,
        na_values=na_values,
    )
    return _with_dataset(data, path, require_qid, letor_names=letor_names)


def _with_dataset(data, path: str, require_queries: bool = True, *, letor_names: bool = False):
    """``(data, RankingDataset)`` of a LETOR file's ``data``.  ``letor_names``: name the
    columns by their LETOR ids (``f1 .. fN``, :attr:`LetorData.feature_names`), as
    ``train`` stores them in the model and ``convert`` names its Parquet columns."""
    from ltrboost.dataset import make_dataset
    from ltrboost.io.letor import require_qid

    _warn_unread_sidecars(path)
    if data.qid is None and not require_queries:
        return data, None
    require_qid(data, path)
    names = data.feature_names if letor_names else None
    ds = make_dataset(data.X, data.y, qid=data.qid, feature_names=names)
    ds.source = str(path)
    if data.lines is not None:  # label errors then name FILE:LINE
        ds.row_lines = data.lines if ds.order is None else data.lines[ds.order]
    return data, ds


def _warn_unread_sidecars(path: str) -> None:
    """Warn about a ``.weight`` or ``.init`` file beside the data ``path``: LightGBM
    reads these sidecars as it reads FILE.query; ltrboost reads only the .query one,
    and must not train or score without the others silently.  The warning says where
    the queries came from: ``qid:`` on the lines, FILE.query, or neither (it said
    "only query sizes from FILE.query" where the file has ``qid:`` and none was read)."""
    sidecars = [(".weight", "per-row weights"), (".init", "initial scores")]
    sidecars = [(s, what) for s, what in sidecars if os.path.isfile(f"{path}{s}")]
    if not sidecars:
        return
    has_qid = _first_line_has_qid(path)
    if has_qid:
        queries = f"the queries come from the qid: fields of {path}"
    elif has_qid is False and os.path.isfile(f"{path}.query"):
        queries = f"only query sizes from {path}.query"
    elif has_qid is False:
        queries = f"of LightGBM's sidecars ltrboost reads only {path}.query (query sizes)"
    else:  # not a regular file, or no data line near its start: say the rule
        queries = (
            f"of LightGBM's sidecars ltrboost reads only {path}.query (query sizes, for a "
            "file without qid:)"
        )
    for suffix, what in sidecars:
        sep = ", " if queries.startswith("only") else "; "
        warnings.warn(
            f"{path}{suffix} is not read: ltrboost takes no {what} from LightGBM's "
            f"{suffix} files{sep}{queries}"
            + (" (Python: Ranker.fit(..., sample_weight=...))" if suffix == ".weight" else ""),
            stacklevel=3,
        )


def _first_line_has_qid(path: str, limit: int = 1 << 20) -> bool | None:
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
            line = line.removeprefix(b"\xef\xbb\xbf")
        tokens = line.split()
        if tokens:
            return len(tokens) > 1 and tokens[1].startswith(b"qid:")
    return None


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
    from ltrboost.io.letor import WIDE
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
    if width < used:
        fill = 0.0 if missing == "zero" else np.nan
        pad = np.full((X.shape[0], used - width), fill, dtype=X.dtype)
        X = np.ascontiguousarray(np.concatenate([X, pad], axis=1))
    view = copy.copy(booster)
    view.n_features = X.shape[1]
    return data._replace(X=X), view


def _as_flags(msg: str) -> str | None:
    """``msg`` with the training parameters it names (``decay=2.0``,
    ``label_scale[1]=...``) spelled as their flags (``--decay=2.0``); None when it does
    not begin with one (not a parameter's error)."""
    import re

    names = "|".join(sorted(PARAM_NAMES, key=len, reverse=True))
    first = re.match(rf"({names})(?=[=\[]| entry | gives )", msg)  # label_scale's too
    if first is None:
        return None
    return _params_as_flags(_param_flag(first.group(1)) + msg[first.end() :])


def _param_flag(name: str) -> str:
    """The flag of training parameter ``name``: ``eval_metric`` is ``--metric``
    (``--eval-metric`` is a hidden, deprecated alias)."""
    return "--metric" if name == "eval_metric" else _flag(name)


def _params_as_flags(msg: str, bare: bool = False) -> str:
    """``msg`` with every ``name=`` / ``name[`` of a training parameter spelled as its
    flag (``decay=2.0`` -> ``--decay=2.0``).  ``bare``: the message follows
    :class:`~ltrboost.params.ParameterWarning`'s convention (a
    :class:`~ltrboost.params.ParameterError`'s), so a bare name with an underscore is
    the parameter too (``raise colsample_bytree`` -> ``raise --colsample-bytree``);
    one-word names stay (``objective``, ``gain`` are English words too).  A name that
    is part of a path, an identifier or a call (``/max_depth/``, ``max_bins.txt``,
    ``$LTRBOOST_MAX_BINS``, ``get_metric(``) is left as it is."""
    import re

    def flag(m: re.Match) -> str:
        return _param_flag(m.group(1) or m.group(2))

    names = "|".join(sorted(PARAM_NAMES, key=len, reverse=True))
    pattern = rf"(?<![\w.$/-])({names})(?=[=\[])"
    if bare:
        joined = sorted((n for n in PARAM_NAMES if "_" in n), key=len, reverse=True)
        pattern += rf"|(?<![\w.$/'\"-])({'|'.join(joined)})(?![\w/(-]|\.\w)"
    return re.sub(pattern, flag, msg)


def _validate_as_flags(params: BoosterParams) -> None:
    """``params.validate()``, then the objective's own checks of its parameters
    (:func:`~ltrboost.booster.make_objective`) and the metrics' (``--metric``, and
    ``--gain`` / ``--relevance-threshold`` as the metrics read them, whatever the
    objective), the error naming the flag: ``--n-estimators=0 must be >= 1`` or
    ``--decay=2.0 should be a number in (0, 1]`` where the Python API says
    ``n_estimators=0`` / ``decay=2.0`` (a CLI user has no ``n_estimators``).  All
    before any data is read: cv met a bad ``--gain`` of an objective that ignores it
    only at its metrics' first use, after reading the data.  ``--objective custom:NAME``
    (what the file of a model trained with a Python function records) is refused as
    such: a function cannot be given here."""
    if isinstance(params.objective, str) and params.objective.startswith("custom:"):
        fn = params.objective[len("custom:") :] or "fn"
        raise ValueError(
            f"--objective {params.objective}: 'custom:NAME' is how a model file records "
            "a custom objective, a Python function, which the command line cannot take; "
            f"train it from Python: Ranker(objective={fn}).fit(...) (docs/custom.md)"
        )
    try:
        params.validate()
        if isinstance(params.objective, str):  # the CLI's: a registered name
            from ltrboost.booster import check_metrics, make_objective

            check_metrics(params, make_objective(params))
    except ValueError as e:
        from ltrboost.params import ParameterError

        msg = _params_as_flags(str(e), bare=True) if isinstance(e, ParameterError) else None
        msg = msg or _as_flags(str(e)) or _metric_as_flag(e)
        if msg is None:
            raise
        raise ValueError(msg) from None


def _metric_as_flag(error: ValueError) -> str | None:
    """A metric name's error (``unknown metric 'ndcg@0' ...``, which names no
    parameter) as ``--metric: ...``; None for any other error."""
    text = str(error)
    return f"--metric: {text}" if text.startswith("unknown metric ") else None


def cmd_train(args: argparse.Namespace) -> int:
    from ltrboost.booster import make_objective, train
    from ltrboost.callbacks import recorded_value
    from ltrboost.dataset import LTRInputError
    from ltrboost.io._atomic import check_output, file_state
    from ltrboost.io.letor import imposed_width, width_error_as
    from ltrboost.model import load_model

    params = BoosterParams(**{k: v for k, v in vars(args).items() if k in PARAM_NAMES})
    _validate_as_flags(params)
    if args.n_features is not None and args.n_features < 1:
        raise ValueError(f"--n-features={args.n_features} must be >= 1")
    # An output that cannot be written fails now, not after the last round.
    check_output(args.output)
    if args.checkpoint_every is not None:
        _check_checkpointable(args.output)
        check_output(checkpoint_path(args.output))
    objective = make_objective(params)
    if args.pairs is not None and not objective.uses_preference_pairs:
        raise ValueError(
            f"--pairs: objective {params.objective!r} ignores explicit preference "
            "pairs (they are used by ranknet, rankboost, gbrank and qbrank)"
        )
    pairs_ignored = objective.explicit_pairs_ignored()
    if args.pairs is not None and pairs_ignored is not None:  # the model is the same
        raise ValueError(f"--pairs: {_params_as_flags(pairs_ignored)}")
    _check_train_flags(args, params)
    # What is at the output now: at the end, warn if another run replaced it meanwhile.
    output_state = file_state(args.output)
    # A resumed model fixes the feature count: a sparse file may not mention the
    # last features at all.
    _check_inputs(args, only=("resume",))  # named as the flag, before it is read
    init_model = load_model(args.resume) if args.resume else None
    if init_model is not None and init_model.objective.startswith("custom:"):
        fn = init_model.objective[len("custom:") :]
        raise ValueError(
            f"--resume {args.resume}: the model was trained with objective "
            f"{init_model.objective!r}, a Python function; only Python can continue it: "
            f"Ranker(objective={fn}).fit(..., init_model={args.resume!r})"
        )
    if init_model is not None and args.n_features not in (None, init_model.n_features):
        raise ValueError(
            f"--n-features {args.n_features}: the resumed model {args.resume} has "
            f"{init_model.n_features} features, the width its data is read at (leave "
            "--n-features out)"
        )
    if init_model is not None:
        _check_resumable(params, init_model, args.resume)
        _warn_resume_differs(params, init_model, args.resume)
    # after the flags and the resumed model (a small file, whose refusal comes first as
    # the flags' do), before the data
    _check_inputs(args)
    missing = resolve_missing(args.missing, init_model, args.resume)
    # The model names its features by their LETOR ids (f1 .. fN), as convert's Parquet
    # columns: the same names from the text file and from its Parquet, in inspect and
    # in the exports.  A resumed model with names of its own (a DataFrame's) keeps
    # them: the text's columns continue it by position, as they always did.
    letor_names = init_model is None or init_model.feature_names is None
    if init_model is not None:
        width = imposed_width(
            args.train,
            init_model.n_features,
            "the model",
            args.resume,
            missing=missing,
            na_values=args.missing_token,
        )
    else:
        width = imposed_width(
            args.train,
            args.n_features,
            f"--n-features {args.n_features}",
            args.train,
            missing=missing,
            na_values=args.missing_token,
        )
    try:
        raw_train, train_set = _load(
            args.train,
            missing=missing,
            return_comments=args.pairs is not None,
            n_features=width,
            na_values=args.missing_token,
            letor_names=letor_names,
        )
    except LTRInputError as e:  # "larger than n_features=3" named no flag of train's
        reworded = None
        if args.n_features is not None and init_model is None:
            reworded = width_error_as(e, width, f"is above --n-features {args.n_features}")
        wide = getattr(e, "width_guard", None)
        if reworded is None and wide is not None and "If it is intended" in e.problem:
            # the reader's size guard advises Python's n_features=: train's is a flag
            problem = e.problem[: e.problem.index("If it is intended")]
            problem += f"If it is intended, give --n-features {wide}"
            reworded = LTRInputError(problem, path=e.path, line=e.line)
        if reworded is None:
            raise
        raise reworded from None
    if args.pairs is not None:
        from ltrboost.io.letor import parse_docids
        from ltrboost.io.pairs import pairs_for_dataset, read_pairs_file

        pref, oth, w = read_pairs_file(args.pairs, raw_train.qid, parse_docids(raw_train.comments))
        train_set.pairs = pairs_for_dataset(pref, oth, w, train_set.order)
        # without pairs the objective learns from the labels (its label pairs, or
        # qbrank's labelled part); otherwise it refuses the data, and that error says it
        if not (w > 0).any() and _labels_teach(params, objective):
            what = (
                "the file holds no pair (only blank and comment lines)"
                if pref.size == 0
                else "every pair has weight 0 (a pair of weight 0 counts for nothing)"
            )
            warnings.warn(
                f"--pairs {args.pairs}: {what}; the model is trained on the labels alone",
                UserWarning,
                stacklevel=1,
            )
    _attach_positions(args, params, train_set)
    inputs = _training_inputs(args, params, init_model)
    n_features = train_set.X.shape[1]
    # NaN read under the "zero" convention (nan or NA tokens): the trees learn NaN
    # directions, which the model file records for the exporters (RankLib has no NaN)
    import numpy as np

    with_nan = bool(np.isnan(raw_train.X).any()) or bool(
        getattr(init_model, "trained_with_nan", False)
    )
    valid_sets = []
    for vpath, name in zip(args.valid, _valid_names(args.valid), strict=True):
        width = imposed_width(
            vpath,
            n_features,
            "the training data",
            args.train,
            missing=missing,
            na_values=args.missing_token,
        )
        try:
            _, vs = _load(
                vpath,
                missing=missing,
                n_features=width,
                na_values=args.missing_token,
                letor_names=letor_names,
            )
        except LTRInputError as e:  # "larger than n_features=3" named no flag of train's
            instead = f"is above the {width} features of the training data ({args.train})"
            reworded = width_error_as(e, width, instead)
            if reworded is None:
                raise
            if init_model is None:  # the way to read the training data that wide
                index = e.problem.split()[2]
                reworded = LTRInputError(
                    f"{reworded.problem}; give --n-features {index} (or more) to read the "
                    "training data that wide",
                    path=reworded.path,
                    line=reworded.line,
                )
            raise reworded from None
        valid_sets.append((name, vs))
    if valid_sets and train_set.X.shape[1] < max(v.X.shape[1] for _, v in valid_sets):
        raise ValueError("validation data has more features than the training data")
    callbacks = []
    checkpoint = None
    if args.checkpoint_every is not None:
        checkpoint = _Checkpoint(checkpoint_path(args.output), args.checkpoint_every)
        checkpoint.new_mode = _mode_of(args.output)
        checkpoint.missing = missing
        checkpoint.trained_with_nan = with_nan
        checkpoint.training_inputs = inputs
        callbacks.append(checkpoint)
    bar = None
    if not args.quiet:
        bar = _progress_bar(
            params,
            getattr(args, "compile_notice", None),
            initial=0 if init_model is None else init_model.n_iterations,
        )
        if bar is not None:  # None: tqdm could not be imported (warned)
            callbacks.append(bar)
    try:
        booster = train(params, train_set, valid_sets, callbacks=callbacks, init_model=init_model)
    finally:
        if bar is not None:
            bar.close()
    from ltrboost.io.model_json import save_model

    booster.missing = missing
    booster.trained_with_nan = with_nan
    # the training file is a checkpoint's only: continuing a finished model on new data
    # is fine-tuning, and every other model file stays as it was
    booster.training_inputs = {k: v for k, v in inputs.items() if k != "train"} or None
    save_model(
        booster,
        args.output,
        tree_cache=None if checkpoint is None else checkpoint.cache,
        unchanged_since=output_state,
    )
    resumed_from_checkpoint = args.resume is not None and os.path.abspath(
        args.resume
    ) == os.path.abspath(checkpoint_path(args.output))
    if checkpoint is not None or resumed_from_checkpoint:
        # the output now holds everything the checkpoint had
        _remove_checkpoint(checkpoint_path(args.output), args.output)
    best = booster.best_iteration
    summary = f"wrote {args.output}: {booster.n_iterations} rounds"
    if best is not None:
        summary += f", best iteration {best}"
        if best == 0:  # a valid model value: no round is best, predict uses no tree
            summary += " (predict uses the initial score alone)"
    if valid_sets and booster.evals_result:
        first = next(iter(booster.evals_result.values()))
        at = booster.n_iterations if best is None else best  # 0 is a round, not None
        for m, vals in first.items():
            v = recorded_value(vals, at, booster.n_iterations)
            if v is not None:
                summary += f", {m}={v:.4f}"
    print(summary, file=sys.stderr)
    return 0


def _labels_teach(params: BoosterParams, objective: Any) -> bool:
    """Whether a pair objective learns from the labels when no explicit pair is given:
    its label pairs, or QBRank's labelled part (a ``preference_weight`` below 1)."""
    return params.use_label_pairs is not False or (
        objective.name == "qbrank" and objective.params["preference_weight"] < 1
    )


def _check_train_flags(args: argparse.Namespace, params: BoosterParams) -> None:
    """The errors a flag alone makes, before any data is read: they came after the
    training and validation files were parsed (minutes for a large file)."""
    # the metrics (--metric, --gain) were checked with the parameters (_validate_as_flags)
    if params.early_stopping_rounds is not None and not args.valid:
        raise ValueError(
            f"--early-stopping-rounds={params.early_stopping_rounds} needs a "
            "validation file (--valid FILE)"
        )
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        raise ValueError(f"--checkpoint-every={args.checkpoint_every} must be >= 1")
    _valid_names(args.valid)  # the same file given twice
    _position_path(args, params)  # --position without --unbiased, or none with it
    if args.pairs is None and isinstance(params.objective, str):
        from ltrboost.booster import make_objective

        objective = make_objective(params)
        if objective.uses_preference_pairs and not _labels_teach(params, objective):
            raise ValueError(
                f"--use-label-pairs false: {objective.name} then learns from explicit "
                "preference pairs alone; give them (--pairs FILE) or drop "
                "--use-label-pairs"
            )


def _valid_names(paths: list[str]) -> list[str]:
    """Distinct names for validation files: "valid" for one file, else the basename,
    or the path as given where two basenames coincide (d1/vali.txt, d2/vali.txt)."""
    if len(paths) == 1:
        return ["valid"]
    base = [os.path.basename(p) for p in paths]
    names = [b if base.count(b) == 1 else p for b, p in zip(base, paths, strict=True)]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"the same validation file is given twice: {dup}")
    return names


# Parameters a resumed run may change without changing what the model's trees mean.
_RESUME_FREE = ("n_estimators", "n_threads", "early_stopping_rounds", "eval_metric")


def _check_resumable(params: BoosterParams, model: Any, path: str) -> None:
    """What the training run would refuse once the data is read and binned: another
    objective, or fewer rounds in total than the model already has."""
    from ltrboost.booster import make_objective

    made = make_objective(params)
    objective = made.name
    if model.objective != objective:
        raise ValueError(
            f"--resume {path}: the model was trained with objective {model.objective!r}, "
            f"not {objective!r}; give --objective {model.objective}"
        )
    done = model.n_iterations
    if done > int(params.n_estimators):
        raise ValueError(
            f"--n-estimators {params.n_estimators} is below the {done} rounds of --resume "
            f"{path}: resuming, --n-estimators counts the rounds in total (at least {done})"
        )
    if getattr(made, "unbiased", False) and done > 0:
        _check_resumable_bias(params, model, path)


def _check_resumable_bias(params: BoosterParams, model: Any, path: str) -> None:
    """The position biases ``--unbiased true`` continues from: the training refused a
    model without them, or with another ``--max-positions``, only once the data was read
    (after a warning that the flags differ, and naming Python's ``unbiased=True``)."""
    from ltrboost.objectives.unbiased import DEFAULT_MAX_POSITIONS

    bias = getattr(model, "position_bias", None)
    if bias is None:
        raise ValueError(
            f"--resume {path}: the model was trained without --unbiased true: it holds no "
            "position bias estimates for --unbiased true to continue from (drop "
            "--unbiased, or train a new model)"
        )
    held = len(bias["t_plus"])
    k = DEFAULT_MAX_POSITIONS if params.max_positions is None else int(params.max_positions)
    if held != k:
        raise ValueError(
            f"--resume {path}: the model's position biases cover --max-positions {held}, "
            f"this run's {k}; give --max-positions {held} to continue it"
        )


def _warn_resume_differs(params: BoosterParams, model: Any, path: str) -> None:
    """Warn when this run's parameters (its flags, else the defaults) differ from those
    the resumed model was trained with: its rounds would continue with others (the
    uninterrupted model needs the same flags), and the file records this run's."""
    from dataclasses import asdict

    from ltrboost._evaluation import WRITTEN_ONLY_WHEN_SET

    recorded = getattr(model, "params", None) or {}
    if recorded:  # left out of the file at their default (None): compared as that
        recorded = {**dict.fromkeys(WRITTEN_ONLY_WHEN_SET), **recorded}
    now = asdict(params)
    if now.get("objective") != recorded.get("objective", now.get("objective")):
        return  # refused by the resume itself, in one error line
    # a parameter the model left to its default (None) is compared as the value it
    # trained with: a flag giving that value (--learning-rate 0.1) changes nothing
    used = dict(getattr(model, "objective_params", None) or {})
    if recorded.get("learning_rate", 0) is None:
        from ltrboost.inspection import _learning_rate

        used["learning_rate"] = _learning_rate(model)
    recorded = {
        k: used[k] if v is None and now.get(k) is not None and used.get(k) is not None else v
        for k, v in recorded.items()
    }
    diff = [
        f"{_param_flag(k)} {now[k]!r} (model: {recorded[k]!r})"
        for k in sorted(recorded)
        if k in now and k not in _RESUME_FREE and now[k] != recorded[k] and not callable(now[k])
    ]
    if diff:
        shown = ", ".join(diff[:4]) + (f" and {len(diff) - 4} more" if len(diff) > 4 else "")
        warnings.warn(
            f"--resume {path}: {shown} differ from the model's; the new rounds use this "
            "run's values and the model file records them (repeat the original flags to "
            "continue the same training)",
            UserWarning,
            stacklevel=2,
        )


# The training files a model file does not hold, by their key in its
# ``training_inputs``, and the flag that names each.
_INPUT_FLAGS = {"pairs": "--pairs", "position": "--position", "train": "TRAIN"}


def _file_fingerprint(path: str) -> dict[str, str] | None:
    """``{"file": path, "sha256": hex digest of its bytes}`` of the regular file at
    ``path`` (a link followed); None for anything else: a pipe (``/dev/stdin``) was read
    once by the training, and a second read would block or find nothing."""
    import hashlib
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return {"file": os.fspath(path), "sha256": digest.hexdigest()}


def _training_inputs(
    args: argparse.Namespace, params: BoosterParams, init_model: Any
) -> dict[str, dict[str, str]]:
    """The content fingerprints of this run's ``--pairs`` and ``--position`` files, and
    of TRAIN where a checkpoint records it (``--checkpoint-every``, or ``--resume`` of a
    checkpoint that did); a resumed run first compares them with the model's record and
    warns of each file that differs (:func:`_warn_resume_inputs_differ`).

    A file whose content the resumed model records keeps the model's entry, its name
    as first given included: the same training continued from another folder, or
    through a copy, writes the file the uninterrupted run would have written."""
    recorded = dict(getattr(init_model, "training_inputs", None) or {})
    paths = {"pairs": args.pairs, "position": _position_path(args, params)}
    if args.checkpoint_every is not None or "train" in recorded:
        paths["train"] = args.train
    given = {k for k, p in paths.items() if p is not None}
    inputs = {}
    for k in sorted(given):
        now = _file_fingerprint(paths[k])
        if now is not None:
            rec = recorded.get(k)
            inputs[k] = rec if rec is not None and rec["sha256"] == now["sha256"] else now
    if init_model is not None:
        _warn_resume_inputs_differ(recorded, inputs, given, args.resume)
    return inputs


def _warn_resume_inputs_differ(recorded: dict, inputs: dict, given: set[str], path: str) -> None:
    """Warn, naming the flag and both files, when a resumed run trains on another
    ``--pairs`` or ``--position`` file than the model recorded (or on none, or on pairs
    the model had none of), or continues a checkpoint on another training file: its new
    rounds would learn from other data than the model's, which the file did not say.
    A file that could not be fingerprinted (a pipe) is not compared."""
    for key, flag in _INPUT_FLAGS.items():
        rec, now = recorded.get(key), inputs.get(key)
        if key not in given:
            if key == "pairs" and rec is not None:
                msg = (
                    f"the model was trained with --pairs {rec['file']}; this run gives no "
                    "--pairs, so the new rounds learn from the labels alone (give --pairs "
                    f"{rec['file']} to continue the same training)"
                )
            else:  # TRAIN is always given; --position is needed by --unbiased alone
                continue
        elif now is None or (rec is None and key != "pairs"):
            continue  # a pipe; an unbiased model of a version that recorded nothing
        elif rec is None:
            msg = (
                f"--pairs {now['file']}: the model records no --pairs file (it was trained "
                "without one, or by an ltrboost that did not record it); the new rounds "
                "learn from preferences its rounds did not"
            )
        elif rec["sha256"] == now["sha256"]:
            continue
        elif key == "train":
            msg = (
                f"TRAIN {now['file']} is not the training file of the run that wrote this "
                f"checkpoint ({rec['file']}: other content); continuing it does not give "
                "that run's model"
            )
        else:
            msg = (
                f"{flag} {now['file']} is not the file the model was trained with "
                f"({flag} {rec['file']}: other content); the new rounds learn from this "
                f"run's file and the model file records it (give {flag} {rec['file']} to "
                "continue the same training)"
            )
        warnings.warn(f"--resume {path}: {msg}", UserWarning, stacklevel=3)


def _check_checkpointable(output: str) -> None:
    """``OUTPUT.checkpoint`` only makes sense beside a regular file (or a new one)."""
    import stat

    try:
        st = os.stat(output)
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(
            f"--checkpoint-every: --output {output} is not a regular file; checkpoints "
            "are written beside the output as OUTPUT.checkpoint, so give a file name"
        )


def _remove_checkpoint(ck: str, output: str) -> None:
    """Remove the checkpoint once the output holds it.  A link is followed, as when the
    checkpoints were written: the file they went to is removed and the link kept (it
    was removed and the last checkpoint, a full copy of the model, left behind); a
    link to the output itself (``--resume`` through it) is removed, never the output."""
    target = os.path.realpath(ck)
    if os.path.islink(ck) and target != os.path.realpath(output):
        ck = target
    try:
        os.unlink(ck)
    except FileNotFoundError:
        pass


def _mode_of(path: str) -> int | None:
    """The permission bits of the regular file at ``path`` (links followed), or None."""
    import stat

    try:
        st = os.stat(path)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def checkpoint_path(output: str) -> str:
    """Where ``--checkpoint-every`` writes: ``OUTPUT.checkpoint``, never the output."""
    return output + ".checkpoint"


class _Checkpoint:
    """Write the model every N rounds (atomically) to its own file, so a killed run
    loses little and never replaces a previous complete model at the output.

    Finished trees are serialized once (:class:`TreeJSONCache`): a checkpoint costs the
    new trees plus a copy of the cached text, not a re-serialization of every tree.
    """

    def __init__(self, path: str, every: int) -> None:
        from ltrboost.io.model_json import TreeJSONCache

        if every < 1:
            raise ValueError(f"--checkpoint-every={every} must be >= 1")
        self.path = path
        self.every = every
        self.cache = TreeJSONCache()
        self.missing: str | None = None
        self.trained_with_nan = False
        # the fingerprints of the training files, TRAIN's included (see _training_inputs)
        self.training_inputs: dict[str, dict[str, str]] | None = None
        # a new checkpoint's mode: the output's, when it exists (a private model got a
        # world-readable copy beside it); None: the umask's, as the output will get
        self.new_mode: int | None = None

    def __call__(self, env) -> None:
        from ltrboost.io.model_json import save_model

        if (env.iteration + 1) % self.every == 0 and env.snapshot is not None:
            booster = env.snapshot()
            booster.missing = self.missing
            booster.trained_with_nan = self.trained_with_nan
            booster.training_inputs = self.training_inputs
            save_model(booster, self.path, tree_cache=self.cache, new_mode=self.new_mode)


def _progress_bar(
    params: BoosterParams, notice=None, file=None, mininterval: float = 0.1, initial: int = 0
):
    """A tqdm bar as a training callback (``callback.bar``); ``callback.close()`` ends
    it.  None, after a warning, when tqdm cannot be imported (:mod:`ltrboost._progress`).

    The metric is set before the bar advances, so every redraw shows the tree just
    finished.  When training stops early the bar is closed at 100% of the rounds
    actually run, with "early stop" in its text.  ``initial``: the rounds of a resumed
    model, done before the bar starts (it started at 0 and jumped to them at the first
    new round, counting them in its rate and ETA; a resumed model that had already
    stopped early, which gets no round, left it at 0%).
    """
    from ltrboost._progress import progress_bar

    bar = progress_bar(
        total=int(params.n_estimators),
        initial=initial,
        unit="tree",
        dynamic_ncols=True,
        file=sys.stderr if file is None else file,
        mininterval=mininterval,
    )
    if bar is None:
        return None
    if notice is not None:
        notice.attach_bar(bar)

    def callback(env) -> None:
        if notice is not None:
            # Compilation is reported by the notice: keep it out of the rate and ETA.
            compiling = notice.take_compile_seconds()
            bar.start_t += compiling
            bar.last_print_t += compiling
        if env.evaluation:
            name, res = next(iter(env.evaluation.items()))
            m, v = next(iter(res.items()))
            best = (
                f"{env.best_score:.4f}@{env.best_iteration}" if env.best_score is not None else "-"
            )
            bar.set_postfix_str(f"{name} {m}={v:.4f} best={best}", refresh=False)
        bar.update(env.iteration + 1 - bar.n)

    def close() -> None:
        if notice is not None:
            notice.attach_bar(None)
        # Stopped early (not by an error or Ctrl-C): end the bar at the rounds run.
        if 0 < bar.n < bar.total and sys.exc_info()[0] is None:
            bar.total = bar.n
            note = f"{bar.postfix or ''} early stop".strip()
            bar.set_postfix_str(note, refresh=False)
            bar.refresh()
        bar.close()

    callback.close = close  # type: ignore[attr-defined]
    callback.bar = bar  # type: ignore[attr-defined]
    return callback


# -------------------------------------------------------------------------- predict
def _load_for_iteration(args: argparse.Namespace):
    """``args.model`` loaded, and ``--iteration`` checked against its rounds: the
    model's range check named neither the flag nor the file ("iteration=9 must be
    between 0 and 3")."""
    from ltrboost.model import load_model

    _check_inputs(args)  # the data files too (eval's second one), before the model
    booster = load_model(args.model)
    it = args.iteration
    if it is not None and not 0 <= it <= booster.n_iterations:
        raise ValueError(
            f"--iteration {it}: {args.model} has {booster.n_iterations} rounds "
            f"(give 0..{booster.n_iterations})"
        )
    return booster


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


# ----------------------------------------------------------------------------- eval
def cmd_eval(args: argparse.Namespace) -> int:
    from ltrboost._evaluation import threshold_separates_nothing
    from ltrboost.dataset import rows_located
    from ltrboost.metrics import evaluate, parse_metric_list
    from ltrboost.params import ParameterWarning

    twice = sorted({p for p in args.data if args.data.count(p) > 1})
    if twice:
        raise ValueError(f"{twice[0]}: given twice (one row, and one JSON entry, per file)")
    _check_relevance_threshold(args)
    booster = _load_for_iteration(args)
    missing = resolve_missing(args.missing, booster, args.model)
    try:
        metrics = parse_metric_list(args.metric)
    except ValueError as e:
        raise ValueError(_metric_as_flag(e) or str(e)) from None
    options = _metric_options(args, booster.params)
    results = {}
    for path in args.data:
        streamed = _eval_streamed(path, booster, missing, args, metrics, options)
        if streamed is not None:
            results[path], flat = streamed
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
        if flat is not None:  # MAP / MRR / P@k that no ranking changes
            _show_warning(flat, ParameterWarning, __file__, 0)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    header = ["data", *metrics, "queries"]
    rows = [[p, *(f"{r[m]:.4f}" for m in metrics), str(r["n_queries"])] for p, r in results.items()]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    for line in (header, *rows):  # no trailing blanks after the last column (as inspect)
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    return 0


# The dense rows eval scores at a time (bytes of float64 X), cut at query boundaries
# (tests patch it small: 8 bytes is one row a block).
_EVAL_BLOCK_BYTES = 1 << 25


class _WholeFile(Exception):
    """:func:`_eval_streamed` cannot give the whole-file read's answer: read it so."""


def _eval_streamed(path: str, booster, missing: str, args, metrics: list[str], options: dict):
    """``(results, flat)`` of ``path`` for ``cmd_eval``, read, scored and evaluated a
    block of whole queries at a time (:data:`_EVAL_BLOCK_BYTES`), so that the memory is
    a block's and a float a query, not the file's dense matrix
    (:class:`~ltrboost._evaluation.QueryBlocksEvaluation`); the numbers are the
    whole-file read's bit for bit.  ``flat``: the warning of
    :func:`~ltrboost._evaluation.threshold_separates_nothing`, or None.

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
    return results, threshold_separates_nothing(metrics, options, acc.grades, path)


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


# --------------------------------------------------------------------------- export
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
    import warnings

    booster = _load_for_iteration(args)
    to_stdout = args.createmodel == "-"
    model_to_stdout = args.output == "-"  # as predict's -o -
    if to_stdout and model_to_stdout:
        raise ValueError("--output - and --createmodel -: only one of them can be stdout")

    def print_bytes(data: bytes):
        def write() -> None:
            try:
                sys.stdout.flush()
                out = sys.stdout.buffer
                # under python -u the buffer is the raw file, which takes part of a
                # write when the reader of a pipe leaves (or a signal interrupts it):
                # continue until all is written or the error shows (it exited 0)
                view = memoryview(data)
                while view:
                    n = out.write(view)
                    if n is None:  # a non-blocking stdout that is full: wait
                        import select

                        select.select([], [out], [])
                    view = view[n or 0 :]
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
    for w in caught:
        print(f"ltrboost: warning: {w.message}", file=sys.stderr)
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


# ------------------------------------------------------------------------------- cv
def cmd_cv(args: argparse.Namespace) -> int:
    """Train on all query folds but one, score the held-out fold; mean and std."""
    import numpy as np

    from ltrboost._evaluation import check_training_setup, threshold_separates_nothing
    from ltrboost.booster import check_training_data, make_objective, metric_options, train
    from ltrboost.dataset import make_dataset, rows_located
    from ltrboost.metrics import evaluate, parse_metric_list
    from ltrboost.params import ParameterWarning

    params = BoosterParams(**{k: v for k, v in vars(args).items() if k in PARAM_NAMES})
    if hasattr(args, "cv_valid"):
        raise ValueError(f"--valid is not available in cv: {_CV_REFUSED_OUTPUTS['--valid']}")
    for flag, why in _CV_REFUSED_FILES.items():
        if hasattr(args, "cv_" + flag[2:].replace("-", "_")):
            raise ValueError(f"{flag} is not available in cv: {why}")
    if hasattr(args, "cv_output"):
        raise ValueError(f"--output is not available in cv: {_CV_REFUSED_OUTPUTS['--output']}")
    _validate_as_flags(params)
    if params.early_stopping_rounds is not None:
        raise ValueError(
            "--early-stopping-rounds is not available in cv (there is no "
            "validation set inside a fold); set --n-estimators instead"
        )
    if params.unbiased:  # the error of the objective suggested a --position cv lacks
        raise ValueError(
            "--unbiased true is not available in cv (it takes no --position file); "
            "cross-validate the click model with ltrboost.Ranker and GroupKFold instead"
        )
    if args.folds < 2:  # the flag alone: before the data is read
        raise ValueError(f"--folds={args.folds} must be at least 2")
    objective = make_objective(params)
    if objective.uses_preference_pairs and not _labels_teach(params, objective):
        raise ValueError(
            f"--use-label-pairs false: {objective.name} then learns from explicit "
            "preference pairs alone, and cv takes no --pairs file; drop "
            "--use-label-pairs, or cross-validate with ltrboost.Ranker and GroupKFold"
        )
    # without --metric: what train validates on, the objective's metric (map under
    # --lambda-metric map, err@10 under err, else ndcg@10)
    metrics = parse_metric_list(params.eval_metric or objective.default_metric)
    params.eval_metric = None
    # a parameter's warning (one the objective ignores) is the same in every fold: once,
    # now; a fold's own (its training set has every label 0) names the fold below
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_training_setup(params, objective, [])
    said = {str(w.message) for w in caught}
    for w in caught:
        warnings.warn(w.message, stacklevel=1)
    _check_inputs(args)
    data, ds = _load(args.data, missing=args.missing, na_values=args.missing_token)
    folds = query_folds(data.qid, args.folds, params.random_state, source=args.data)
    options = metric_options(params)
    with rows_located(ds):  # a label the metrics refuse: now, not after a fold's training
        evaluate(np.zeros(ds.n_samples), ds.y, ds.query_offsets, metrics, **options)
    # MAP / MRR / P@k that no ranking changes (eval warns of its files): once for the
    # file, before any training; else for a fold whose test queries alone are flattened
    flat = threshold_separates_nothing(metrics, options, ds.y, args.data)
    if flat is not None:
        warnings.warn(flat, ParameterWarning, stacklevel=1)

    def fold_part(rows):
        part = make_dataset(data.X[rows], data.y[rows], qid=data.qid[rows])
        part.source = ds.source  # label errors name FILE:LINE
        lines = data.lines[rows]
        part.row_lines = lines if part.order is None else lines[part.order]
        return part

    # every fold's training data checked as its training would check it, before the
    # first fold trains: a fold whose training queries lack the grade a threshold
    # needs failed after the folds before it had trained and printed their results
    for k in range(args.folds):
        with _fold_errors(k, args.folds):
            check_training_data(params, fold_part(folds != k))
    per_fold = []
    for k in range(args.folds):
        # an error of one fold's data (its training queries lack the grade a threshold
        # needs) says which fold, as its warnings and its result line do
        with _fold_errors(k, args.folds):
            test = folds == k
            tr, te = fold_part(~test), fold_part(test)
            if flat is None:
                where = f"the fold's test queries of {args.data}"
                fold_flat = threshold_separates_nothing(metrics, options, te.y, where)
                if fold_flat is not None:
                    msg = f"fold {k + 1}/{args.folds}: {fold_flat}"
                    warnings.warn(msg, ParameterWarning, stacklevel=1)
            bar = None
            if not args.quiet:  # as train's, the fold in its text (the notice takes the left)
                bar = _progress_bar(params, getattr(args, "compile_notice", None))
                if bar is not None:
                    bar.bar.set_postfix_str(f"fold {k + 1}/{args.folds}", refresh=False)
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    booster = train(params, tr, callbacks=[] if bar is None else [bar])
            finally:
                if bar is not None:
                    bar.close()
            for text in dict.fromkeys(str(w.message) for w in caught if str(w.message) not in said):
                category = next(w.category for w in caught if str(w.message) == text)
                warnings.warn(f"fold {k + 1}/{args.folds}: {text}", category, stacklevel=1)
            with rows_located(te):
                res = evaluate(booster.predict(te.X), te.y, te.query_offsets, metrics, **options)
            res["n_queries"] = te.n_queries
            per_fold.append(res)
            if not args.json:
                cells = "  ".join(f"{m}={res[m]:.4f}" for m in metrics)
                n_q = f"{te.n_queries} {'query' if te.n_queries == 1 else 'queries'}"
                print(f"fold {k + 1}/{args.folds}: {cells}  ({n_q})")
    summary = {
        m: {
            "mean": float(np.mean([r[m] for r in per_fold])),
            "std": float(np.std([r[m] for r in per_fold])),
        }
        for m in metrics
    }
    if args.json:
        print(json.dumps({"folds": per_fold, "summary": summary}, indent=2))
        return 0
    for m, v in summary.items():
        print(f"{m}: {v['mean']:.4f} +- {v['std']:.4f} over {args.folds} query folds")
    return 0


@contextlib.contextmanager
def _fold_errors(k: int, n_folds: int):
    """An error inside cv's fold ``k`` (0-based) as ``fold 2/5: ...``, the parameters
    it names spelled as their flags: the fold whose training queries lack grade 3 said
    only "--relevance-threshold=3 counts no training document relevant"."""
    try:
        yield
    except ValueError as e:
        raise ValueError(f"fold {k + 1}/{n_folds}: {_error_as_flags(e)}") from None


def query_folds(qid, n_folds: int, random_state: int, source: str = "the data"):
    """Fold number (0 .. n_folds - 1) of every row; whole queries stay together.

    Queries are shuffled with ``random_state`` and dealt round-robin, so fold sizes
    differ by at most one query.  ``source`` names the data in errors.
    """
    import numpy as np

    if qid is None:
        raise ValueError("cv needs query ids (qid: on the lines or a .query file)")
    uniq, inverse = np.unique(qid, return_inverse=True)
    n_queries = uniq.shape[0]
    if n_folds < 2:
        raise ValueError(f"--folds={n_folds} must be at least 2")
    if n_queries < 2:
        raise ValueError(
            f"{source} holds 1 query; cv needs at least 2 (each fold holds whole queries)"
        )
    if n_folds > n_queries:
        raise ValueError(
            f"--folds={n_folds} is more than the {n_queries} queries of {source}: each fold "
            f"holds whole queries (give --folds {n_queries} or fewer)"
        )
    perm = np.random.default_rng(random_state).permutation(n_queries)
    fold_of_query = np.empty(n_queries, dtype=np.int64)
    fold_of_query[perm] = np.arange(n_queries) % n_folds
    return fold_of_query[inverse.ravel()]


# -------------------------------------------------------------------------- inspect
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
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        print(f"\ntop {len(rows)} features by {info['importance_type']}{rounds}:")
        for line in (header, *rows):
            cells = (c.ljust(w) for c, w in zip(line, widths, strict=True))
            print("  ".join(cells).rstrip())
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


def _count(n: int, noun: str) -> str:
    """``1 round``, ``2 rounds``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


# ------------------------------------------------------------------------- generate
def cmd_convert(args: argparse.Namespace) -> int:
    """LETOR -> query-partitioned Parquet (format: :mod:`ltrboost.io.parquet`)."""
    from ltrboost.io.letor import width_error_as
    from ltrboost.io.parquet import letor_to_parquet, require_pyarrow

    if args.n_features is not None and args.n_features < 0:  # named as the flag
        raise ValueError(f"--n-features={args.n_features} must be >= 0")
    if args.rows_per_file < 1:
        raise ValueError(f"--rows-per-file={args.rows_per_file} must be >= 1")
    try:  # a plain install has no pyarrow: the one-line error, not a traceback
        require_pyarrow()
    except ImportError as e:
        raise ValueError(str(e)) from None
    from ltrboost.dataset import LTRInputError

    _check_inputs(args)
    try:
        files = letor_to_parquet(
            args.data,
            args.output,
            rows_per_file=args.rows_per_file,
            missing=args.missing,
            na_values=args.missing_token,
            n_features=args.n_features,
        )
    except LTRInputError as e:  # the reader's remedies in convert's flags, not Python's
        wide = getattr(e, "width_guard", None)
        if wide is not None and "If it is intended" in e.problem:
            problem = e.problem[: e.problem.index("If it is intended")]
            problem += f"If it is intended, give --n-features {wide}"
            raise LTRInputError(problem, path=e.path, line=e.line) from None
        n = args.n_features
        reworded = None if n is None else width_error_as(e, n, f"is larger than --n-features={n}")
        if reworded is None:
            raise
        raise reworded from None
    print(f"wrote {_count(len(files), 'Parquet file')} to {args.output}", file=sys.stderr)
    return 0


# warmup's profiles when none is given: README's first commands.
_WARMUP_DEFAULT = ("train:lambdamart", "eval", "predict")


def cmd_warmup(args: argparse.Namespace) -> int:
    """Compile (or load) the kernels of each profile of :mod:`ltrboost._warmup`; with
    ``--clear``, remove the compiled kernels instead."""
    import time

    if args.clear:
        return _clear_kernel_cache(args)
    from ltrboost._numba import cache_location
    from ltrboost._warmup import compile_profile, profile_names

    known = profile_names()
    args.profiles = args.profiles or list(_WARMUP_DEFAULT)
    for name in args.profiles:  # beside 'all' too: a typo is never skipped silently
        if name != "all" and name not in known:
            raise ValueError(f"unknown profile {name!r}; known: all, {', '.join(known)}")
    profiles = known if "all" in args.profiles else args.profiles
    for name in profiles:
        t = time.perf_counter()
        counts = compile_profile(name)
        print(
            f"{name}: {counts['compiled']} compiled, {counts['loaded']} already cached, "
            f"{counts['skipped']} skipped ({time.perf_counter() - t:.1f} s)",
            file=sys.stderr,
        )
    from ltrboost import _numba

    problem = _numba.cache_problem()
    if problem is not None:  # compiled for nothing: a container image built cold
        raise OSError(
            f"the kernels were compiled but {problem}; point NUMBA_CACHE_DIR "
            "(or XDG_CACHE_HOME) at a writable folder"
        )
    where = cache_location()
    if _numba._UNCACHED_REASON is not None:  # every kernel was loaded (else: problem)
        where = "no writable folder"
    passed_over = _numba._UNUSABLE_NUMBA_CACHE_DIR
    prewarmed = _numba._PREWARMED_USED
    if passed_over is not None and passed_over not in prewarmed:
        where += f" (NUMBA_CACHE_DIR={passed_over} is not writable: passed over)"
    if prewarmed:  # a read-only image prewarmed when it was built
        where = f"{', '.join(prewarmed)} (read-only, prewarmed); new kernels: {where}"
    print(f"kernel cache: {where}", file=sys.stderr)
    return 0


def _clear_kernel_cache(args: argparse.Namespace) -> int:
    """``ltrboost warmup --clear``: :func:`ltrboost._numba.clear_kernel_cache`, and one
    line saying what was removed from where."""
    if args.profiles:  # "--clear all" read as "clear all" compiled nothing
        raise ValueError(
            f"--clear removes compiled kernels and compiles nothing: give no profile "
            f"({' '.join(args.profiles)}); run `ltrboost warmup PROFILE` afterwards"
        )
    from ltrboost._numba import clear_kernel_cache

    removed, n_bytes, failed = clear_kernel_cache()
    if failed:
        path, why = failed[0]
        raise OSError(
            f"could not remove {_count(len(failed), 'kernel cache file')} "
            f"(e.g. {path}: {why}); {_count(len(removed), 'file')} removed"
        )
    if not removed:
        print("no kernel cache files of this install to remove", file=sys.stderr)
        return 0
    folders = sorted({os.path.dirname(p) for p in removed})
    print(
        f"removed {_count(len(removed), 'kernel cache file')} ({n_bytes / 2**20:.1f} MiB) "
        f"from {', '.join(folders)}",
        file=sys.stderr,
    )
    return 0


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


def _position_path(args: argparse.Namespace, params: BoosterParams) -> str | None:
    """The positions file of --unbiased: ``--position FILE``, else ``TRAIN.position``
    when it exists; None without --unbiased.  Flag errors (checked before the data)."""
    path = args.position
    sidecar = args.train + ".position"
    if path is None and params.unbiased and os.path.lexists(sidecar):
        _check_position_sidecar(sidecar)
        path = sidecar
    if path is None:
        if params.unbiased:
            raise ValueError(
                "--unbiased true needs the position of every training line: --position FILE "
                f"(or {args.train}.position)"
            )
        return None
    if not params.unbiased:
        raise ValueError("--position is used by --unbiased only")
    return path


def _check_position_sidecar(sidecar: str) -> None:
    """Refuse a ``TRAIN.position`` that is not a regular file, before the data is read
    (as the ``.query`` sidecar): a folder was found only once the training file had
    been read, a link to a missing file was "needs --position FILE (or TRAIN.position)",
    and a FIFO blocked the run forever.  A pipe is given by name: ``--position``."""
    from ltrboost.dataset import LTRInputError
    from ltrboost.io.letor import sidecar_problem

    if os.path.isfile(sidecar):
        return
    why = sidecar_problem(sidecar)
    if why == "it is not a regular file":
        why += " (give a pipe as --position FILE)"
    raise LTRInputError(f"cannot read position file: {why}", path=sidecar)


def _attach_positions(args: argparse.Namespace, params: BoosterParams, train_set) -> None:
    """``--position FILE`` (or ``TRAIN.position`` beside the data under --unbiased)
    into ``train_set.position``, in the grouped row order."""
    path = _position_path(args, params)
    sidecar = args.train + ".position"
    if path is None and os.path.isfile(sidecar):
        # as a LightGBM .weight / .init sidecar that is not read: LightGBM reads this
        # one too, and `clicks dataset` writes it for --unbiased (forgotten, the model
        # was plain LambdaMART on the raw clicks, without a word)
        warnings.warn(
            f"{sidecar} is not read: display positions are used by --unbiased true "
            "(Unbiased LambdaMART) only; the model is the same as without them",
            stacklevel=2,
        )
    if path is None:
        return
    from ltrboost.io.queryfile import read_position_file

    pos = read_position_file(path, train_set.n_samples)
    train_set.position = pos if train_set.order is None else pos[train_set.order]


# ----------------------------------------------------------------------- clicks
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


def cmd_clicks_mine(args: argparse.Namespace) -> int:
    from ltrboost.clicks import mine_preferences, write_pairs

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


# ----------------------------------------------------------------------- experiment
def _add_protocol_arguments(p: argparse.ArgumentParser) -> None:
    """``--protocol`` and the flags only seed 004's protocol reads."""
    p.add_argument(
        "--protocol",
        choices=("xia", "qbrank"),
        default="xia",
        help="xia: seed 000's grid (Xia et al., the default); qbrank: seed 004's six runs "
        "(L1/L2/L3 split, precision at K%%, DCG-5; reads --max-trees (default 500), "
        "--min-samples-leaf, --n-threads, --output, --quiet, --missing-token; ignores "
        "the grid flags)",
    )
    p.add_argument(
        "--ties",
        action="store_true",
        help="qbrank: add L2's equal-grade pairs to QBRank as tau = 0 pairs",
    )


def _print_table(output: str) -> None:
    """The report's ``table.md`` (UTF-8) on stdout, with each character the stdout's
    encoding lacks as ``\\uXXXX``: seed 004's union and plus-minus signs on a cp1252 stdout (a
    Windows console, or a redirect there) failed the finished run with "'charmap' codec
    can't encode character"."""
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


def cmd_experiment_qbrank(args: argparse.Namespace) -> int:
    from ltrboost.experiment_qbrank import DEFAULT_TREES, Settings, run_qbrank_experiment

    settings = Settings(
        n_estimators=args.max_trees or DEFAULT_TREES,
        min_samples_leaf=args.min_samples_leaf,
        ties=args.ties,
    )
    _check_inputs(args)
    with _experiment_flags(args):
        run_qbrank_experiment(
            args.folder,
            args.output,
            settings=settings,
            n_threads=args.n_threads,
            progress=not args.quiet,
            na_values=args.missing_token,
        )
    _print_table(args.output)
    print(f"report written to {args.output}", file=sys.stderr)
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
    import re

    from ltrboost.experiment import SettingsChanged

    try:
        yield
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
    if args.patience is not None and args.patience < 1:
        raise ValueError(
            f"--patience {args.patience} must be >= 1 (leave it out: train every tree)"
        )
    if args.protocol == "qbrank":
        for flag, given in (
            ("--patience", args.patience is not None),
            ("--growth", args.growth != "breadth_first"),
            ("--ranknet-pair-method", args.ranknet_pair_method is not None),
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

    def split(s: str, typ):
        return [typ(v.strip()) for v in s.split(",") if v.strip()]

    def grid(flag: str, typ, example: str) -> list:
        text = getattr(args, flag[2:].replace("-", "_"))
        try:
            values = split(text, typ)
        except ValueError:
            what = "integers" if typ is int else "numbers"
            raise ValueError(
                f"{flag} {text!r} must be {what}, comma-separated, e.g. {flag} {example}"
            ) from None
        if not values:
            raise ValueError(f"{flag} {text!r} gives no value: the grid would have no cell")
        return values

    systems = grid("--systems", str, "mcrank,lambdamart")
    system_grids = _system_grids(args.system_grid, split)
    not_run = sorted(set(system_grids) - set(systems))
    if not_run:
        raise ValueError(
            f"--system-grid names {', '.join(not_run)}, which is not among --systems "
            f"{args.systems!r}: that grid would never run"
        )
    if args.ranknet_pair_method and "ranknet" not in systems:
        raise ValueError(
            f"--ranknet-pair-method sets RankNet's pairs, and ranknet is not among --systems "
            f"{args.systems!r}"
        )
    from ltrboost.experiment import SYSTEMS

    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ValueError(
            f"--systems {args.systems!r}: {', '.join(map(repr, unknown))} is not one of "
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
        )
    _print_table(args.output)
    print(f"report written to {args.output}", file=sys.stderr)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

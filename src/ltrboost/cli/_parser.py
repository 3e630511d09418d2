"""The CLI's argument parser: one subparser per command, its flags and help texts.

Every training parameter of :data:`ltrboost.params.PARAMS` is a flag spelled in
kebab-case (:func:`add_training_flags`); those flags are added to ``train`` and ``cv``
only when that command is parsed or its help printed (:class:`_LazyParser`), and each
command's function is imported only when it runs (:class:`_Command`), so that
``ltrboost --help`` imports no command module and none of the engine.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from functools import partial
from typing import Any, NoReturn

from ltrboost._version import __version__
from ltrboost.cli._common import EXIT_BAD_INPUT, _flag, _print_help_text
from ltrboost.params import PARAMS


def _parse_bool(s: str) -> bool:
    v = s.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {s!r}")


class FloatTextError(ValueError):
    """A number that :func:`parse_float` refuses: ``float()`` reads it as another."""


# the infinities as float() reads them spelled out: typed on purpose (the parameter's own
# check names them); any other text float() reads as infinite overflowed
_INF_WORD = re.compile(r"\s*[+-]?(inf|infinity)\s*", re.IGNORECASE)


def parse_float(text: str) -> float:
    """``float(text)`` (ValueError: not a number), refusing with :class:`FloatTextError`
    a number that ``float()`` reads as another, its message quoting ``text`` as typed:
    one beyond a float's range (``1e400`` read as inf: ``--random-strength 1e400`` was
    reported as ``--random-strength=inf must be ...``) and a nonzero one too small for a
    float (``1e-400`` read as 0: "--learning-rate=0.0 must be > 0", or a parameter that 0
    switches off, switched off unsaid).  ``inf``, ``-Infinity`` and ``nan`` pass, for the
    parameter's check to name.  ``-0`` is 0: no parameter means anything by a negative
    zero, and a model file recorded ``-0.0`` (a file other than ``0``'s)."""
    value = float(text)
    if math.isinf(value) and not _INF_WORD.fullmatch(text):
        raise FloatTextError(f"{text!r} is out of a float's range (magnitudes up to about 1.8e308)")
    if value == 0 and re.search("[1-9]", re.split("[eE]", text)[0]):
        raise FloatTextError(
            f"{text!r} is too small for a float: it would be zero (the smallest "
            "positive float is about 4.9e-324)"
        )
    return value + 0.0  # -0.0 + 0.0 is 0.0


def _float_flag(s: str) -> float:
    """A float flag's value (:func:`parse_float`); argparse reports ``argument --FLAG:
    MESSAGE`` for a refused number, ``invalid float value: 'abc'`` for a non-number."""
    try:
        return parse_float(s)
    except FloatTextError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


_float_flag.__name__ = "float"  # argparse's "invalid float value: ..."


def _parse_any(s: str) -> Any:
    """Numbers as numbers, JSON lists/objects as such, anything else as a string.  A
    JSON number ``float()`` would misread (``1e400``) is refused (:func:`parse_float`)."""
    try:
        return json.loads(s, parse_float=parse_float)
    except FloatTextError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
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
        typ = _float_flag
    elif base == "bool":
        typ = _parse_bool
    elif base == "str" and "list" not in ann:
        typ = str
    elif base == "str":
        typ = str  # comma-separated lists are split by the booster
    else:
        typ = _parse_any
    return _none_or(typ) if nullable else typ


EVAL_METRICS = "ndcg@1,ndcg@3,ndcg@5,ndcg@10,err@10,map"  # `eval`'s default --metric


def _metric_list_flag(text: str) -> str | None:
    """``--metric``'s value in every command: ``none`` / ``null`` (any case) is the
    command's default, as without the flag (every training flag's ``none``); anything
    else is a metric list, read by :func:`~ltrboost.metrics.parse_metric_list` where
    it is used -- so ``""`` is "no metric given", not the default (an unset shell
    variable must not pass for a choice)."""
    return None if text.strip().lower() in ("none", "null") else text


def _metric_names(value: str | None) -> list[str] | None:
    """A ``--metric`` value's canonical metric names (``"NDCG@03, map"`` is ``["ndcg@3",
    "map"]``); None for ``none`` (the default) or a list the command will refuse."""
    if value is None:
        return None
    from ltrboost.metrics import parse_metric_list

    try:
        return parse_metric_list(value)
    except ValueError:
        return None


class _MetricFlag(argparse.Action):
    """``--metric`` and its deprecated alias ``--eval-metric``: one value, not two.

    Both set ``eval_metric``; two different metric lists (the flag repeated, or both
    flags) are an error instead of the later one silently winning.  The same metrics
    again (``ndcg@3``, then ``NDCG@03``) are one value, as any flag given twice with
    one value (``--learning-rate 0.1 --learning-rate 0.10``) and as ``--metric
    ndcg@3,ndcg@03``.  Several metrics are one comma-separated list, which the message
    says, with an example the command takes, when the same flag is repeated.
    """

    def __call__(self, parser, namespace, values, option_string=None):
        before = getattr(namespace, self.dest, None)
        first = getattr(namespace, "_metric_flag", None)  # the flag given first, if any
        if (
            first is not None
            and before != values
            and not hasattr(namespace, "_metric_error")
            and (_metric_names(before) is None or _metric_names(before) != _metric_names(values))
        ):
            # reported by main as one line (parser.error would print the usage too)
            namespace._metric_error = self._conflict(first, option_string, before, values)
        namespace._metric_flag = first or option_string
        setattr(namespace, self.dest, values)

    def _conflict(self, first: str, flag: str, before: str | None, values: str | None) -> str:
        old, new = ("'none'" if v is None else repr(v) for v in (before, values))
        if first != flag:
            return (
                f"--metric and --eval-metric (a deprecated alias) disagree: "
                f"{old} vs {new}; give --metric once"
            )
        shown = f"({old}, then {new})"
        a, b = _metric_names(before), _metric_names(values)
        if before is None or values is None:  # no list to join with the default
            return f"{flag} given twice {shown}; give it once (none: the default metrics)"
        if a is not None and b is not None and sorted(a) == sorted(b):
            order = (
                "the first drives early stopping"
                if self.dest == "eval_metric"
                else "the order of the output"
            )
            return (
                f"{flag} given twice {shown}: the same metrics in another order ({order}); "
                "give it once"
            )
        # the union, each metric once, as the command reads a list (ndcg@3 and ndcg@03
        # are one metric: "ndcg@3,ndcg@03" was the example)
        joined = ",".join(a + [m for m in b if m not in a]) if a and b else f"{before},{values}"
        return (
            f"{flag} given twice {shown}; several metrics are one comma-separated list, "
            f"e.g. {flag} {joined}"
        )


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
                type=_metric_list_flag,
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
        type=_float_flag,
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
        # `--random-strength -inf` (-nan, -Infinity) too: "expected one argument"
        self._negative_number_matcher = re.compile(r"-\.?\d|-(inf|infinity|nan)$", re.I)
        self.register("action", None, _StoreNoting)  # a flag given twice is noted
        self.register("action", "store", _StoreNoting)

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse's one writer (help, usage, version, errors): its text on stdout with
        # the write errors of any other output on stdout (argparse dropped them).  A
        # closed stdout (>&-, pythonw) is None here, and argparse then wrote the help on
        # stderr, status 0; main's stderr is never None, so a None that is not stderr
        # is stdout
        if message and file is sys.stdout and file is not sys.stderr:
            _print_help_text(self, message)
        else:
            super()._print_message(message, file)

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


class _Command:
    """A command's function, ``ltrboost.cli.MODULE.NAME``, imported when the command
    runs: the parser names every command, and ``ltrboost --help`` (or any one
    command) imports none of the others' modules.  The function is looked up at each
    call, so that a test replacing it in its module replaces what runs."""

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def __call__(self, args: argparse.Namespace) -> Any:
        import importlib

        return getattr(importlib.import_module(f"ltrboost.cli.{self.module}"), self.name)(args)

    def __eq__(self, other: object) -> bool:  # two parsers' namespaces compare equal
        if not isinstance(other, _Command):
            return NotImplemented
        return (self.module, self.name) == (other.module, other.name)

    def __hash__(self) -> int:
        return hash((self.module, self.name))

    def __repr__(self) -> str:
        return f"<command ltrboost.cli.{self.module}.{self.name}>"


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
# Training parameters cv's help leaves out: the two it refuses (no validation set, no
# --position file in a fold) and those used by --unbiased only.
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
    _add_training_metric_flag(
        p,
        "comma-separated validation metrics, the first drives early stopping (default: "
        "the objective's, ndcg@10; map or err@10 under --lambda-metric map or err)",
    )
    _add_quiet_flag(p)
    _add_missing_flag(
        p,
        "value of features absent from a sparse line (default zero, or the resumed "
        "model's); recorded in the model, and used by predict and eval",
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
    p.set_defaults(func=_Command("train", "cmd_train"))

    p = sub.add_parser("predict", help="write one score per data line, in input order")
    p.add_argument("model")
    p.add_argument("data")
    p.add_argument("--output", "-o", default="-", help="score file (default -: stdout)")
    _add_scoring_flags(p)
    p.add_argument(
        "--contrib",
        action="store_true",
        help="write each row's TreeSHAP feature contributions instead of its score: "
        "N + 1 tab-separated numbers a line (feature 1..N, then the expected score; "
        "they add up to the score)",
    )
    _add_quiet_flag(p, "no 'compiling kernels' notice on a terminal")
    _add_missing_token_flag(p)
    p.set_defaults(func=_Command("predict", "cmd_predict"))

    p = sub.add_parser("eval", help="evaluate a model on labelled data")
    p.add_argument("model")
    p.add_argument("data", nargs="+")
    p.add_argument(
        "--metric",
        type=_metric_list_flag,
        action=_MetricFlag,
        default=EVAL_METRICS,
        metavar="METRICS",
        help="comma-separated metrics (default: %(default)s; none: the default)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _add_scoring_flags(p)
    _add_metric_option_flags(p)
    _add_quiet_flag(p, "no 'compiling kernels' notice on a terminal")
    _add_missing_token_flag(p)
    p.set_defaults(func=_Command("predict", "cmd_eval"))

    p = sub.add_parser("cv", help="cross-validate over query folds: mean and std of each metric")
    p.add_argument("data", help="LETOR/svmlight file with qid: (or a .query sidecar)")
    p.add_argument(
        "--folds",
        type=int,
        default=5,
        help="query folds, from 2 to the number of queries (default 5): whole queries, "
        "shuffled with --random-state (the same folds for the same seed) and dealt in turn",
    )
    _add_training_metric_flag(
        p,
        "comma-separated metrics reported per fold (default: the objective's, ndcg@10; "
        "map or err@10 under --lambda-metric map or err, as train)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _add_missing_flag(p, "value of features absent from a sparse line (default zero)", "zero")
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
    p.set_defaults(func=_Command("cv", "cmd_cv"))

    p = sub.add_parser(
        "warmup",
        help="compile the kernels of commands into the kernel cache now (e.g. in a "
        "container build), so that their first run loads them",
    )
    p.add_argument(
        "profiles",
        nargs="*",
        default=[],  # [] either way for a '*' positional: the default is set below
        help="train:OBJECTIVE, train:OBJECTIVE+ole (lambdamart, ranknet, rankboost, "
        "yetirank), either with +quantized (not after +ole) and/or +noise, in that order "
        "(train:ranknet+quantized+noise); eval, predict or all (default: "
        "train:lambdamart eval predict)",
    )
    p.add_argument(
        "--clear",
        action="store_true",
        help="compile nothing: remove this install's compiled kernels from every cache "
        "folder (run it before `pip uninstall ltrboost`; other files are left alone)",
    )
    p.set_defaults(func=_Command("warmup", "cmd_warmup"))

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
    _add_iteration_flag(
        p,
        "count and dump the first N rounds (default: importances of the best iteration, "
        "else all; the dump holds every round)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--dump", action="store_true", help="also print every tree as indented text")
    p.set_defaults(func=_Command("export", "cmd_inspect"))

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
    _add_iteration_flag(p)
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
    p.set_defaults(func=_Command("export", "cmd_export"))

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
    p.set_defaults(func=_Command("generate", "cmd_generate"))

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
    _add_missing_flag(p, "value of features absent from a sparse line (default zero)", "zero")
    p.add_argument(
        "--n-features",
        type=int,
        default=None,
        metavar="N",
        help="columns f1..fN (default: the file's highest feature index); give the "
        "training file's to convert a validation or test file to the same columns",
    )
    _add_quiet_flag(p)
    _add_missing_token_flag(p)
    p.set_defaults(func=_Command("convert", "cmd_convert"))

    p = sub.add_parser(
        "clicks", help="click logs: simulate them from graded data, mine preference pairs"
    )
    csub = p.add_subparsers(dest="clicks_command", metavar="COMMAND", required=True)
    c = csub.add_parser("mine", help="mine skip-above / skip-next pairs into a --pairs file")
    _add_click_log_arguments(c, "pairs file to write")
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
    c.set_defaults(func=_Command("clicks", "cmd_clicks_mine"))
    c = csub.add_parser(
        "dataset",
        help="click log -> training data for --unbiased true: a LETOR file (one query per "
        "impression, clicks as labels) and OUTPUT.position",
    )
    _add_click_log_arguments(c, "LETOR file to write")
    _add_missing_token_flag(c)
    c.set_defaults(func=_Command("clicks", "cmd_clicks_dataset"))
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
        "--eta", type=_float_flag, default=None, help="position_based: (1/rank)^eta (default 1)"
    )
    c.add_argument(
        "--satisfaction",
        type=_float_flag,
        default=None,
        help="cascade: probability of stopping after a click (default 0.5)",
    )
    c.add_argument(
        "--noise", type=_float_flag, default=0.0, help="click probability floor (default 0.0)"
    )
    _add_missing_token_flag(c)
    c.set_defaults(func=_Command("clicks", "cmd_clicks_simulate"))

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
    # default None: --protocol qbrank tells a flag given from one left out (it honours
    # --leaves and --learning-rates, one value each, and refuses --systems/--criteria)
    p.add_argument("--systems", default=None, help="comma-separated (default mcrank,lambdamart)")
    p.add_argument("--criteria", default=None, help="comma-separated (default se,ole)")
    p.add_argument(
        "--leaves",
        default=None,
        help="leaves per tree, comma-separated (default 10,20; --protocol qbrank: one "
        "value, default 20)",
    )
    p.add_argument(
        "--learning-rates",
        default=None,
        help="comma-separated (default 0.06,0.10,0.12; --protocol qbrank: one value, default 0.05)",
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
    _add_quiet_flag(p, "no progress bars")
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

    p.add_argument(
        "--n-features",
        type=int,
        default=None,
        metavar="N",
        help="read each fold's training file as N features wide (default: its highest "
        "feature index), for validation and test files that use higher feature indices; "
        "the features absent from the training file are never split on",
    )
    _add_protocol_arguments(p)
    _add_missing_token_flag(p)
    p.set_defaults(func=_Command("experiment", "cmd_experiment"))
    return parser


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


def _add_training_metric_flag(p: argparse.ArgumentParser, text: str) -> None:
    """``--metric`` of the commands that train (``train``, ``cv``): the training
    parameter ``eval_metric`` (its deprecated flag ``--eval-metric`` is
    :func:`add_training_flags`'s), one value, not two (:class:`_MetricFlag`)."""
    p.add_argument(
        "--metric",
        dest="eval_metric",
        type=_metric_list_flag,
        action=_MetricFlag,
        default=None,
        metavar="METRICS",
        help=text,
    )


def _add_missing_flag(p: argparse.ArgumentParser, text: str, default: str | None = None) -> None:
    """``--missing zero|nan``: the value of a feature absent from a sparse line."""
    p.add_argument("--missing", choices=("zero", "nan"), default=default, help=text)


def _add_iteration_flag(
    p: argparse.ArgumentParser,
    text: str = "use the first N rounds (default: best iteration, else all)",
) -> None:
    p.add_argument("--iteration", type=int, default=None, help=text)


def _add_scoring_flags(p: argparse.ArgumentParser) -> None:
    """The flags of the commands that score data with a model (``predict``, ``eval``):
    ``--missing`` (the model's convention unless given), ``--iteration``,
    ``--n-threads``."""
    _add_missing_flag(
        p,
        "absent sparse features (default: the model's convention; a different one is an error)",
    )
    _add_iteration_flag(p)
    p.add_argument(
        "--n-threads",
        type=int,
        default=None,
        help=(
            "threads (default, 0 or negative: OMP_NUM_THREADS, else all cores under the CPU "
            "quota; more than the cores: capped)"
        ),
    )


def _add_click_log_arguments(p: argparse.ArgumentParser, output: str) -> None:
    """LOG, ``--data`` and ``--output`` of ``clicks mine`` and ``clicks dataset``:
    a click log, the LETOR file its docids belong to, the file to write."""
    p.add_argument("log", help="click log (qid docid position clicked [impression])")
    p.add_argument("--data", required=True, help="the LETOR file the docids belong to")
    p.add_argument("--output", "-o", required=True, help=output)


def _add_protocol_arguments(p: argparse.ArgumentParser) -> None:
    """``--protocol`` and the flags only seed 004's protocol reads."""
    p.add_argument(
        "--protocol",
        choices=("xia", "qbrank"),
        default="xia",
        help="xia: seed 000's grid (Xia et al., the default); qbrank: seed 004's six runs "
        "(L1/L2/L3 split, precision at K%%, DCG-5; reads --max-trees (default 500), "
        "--leaves (one value, default 20), --learning-rates (one value, default 0.05), "
        "--min-samples-leaf, --n-threads, --output, --quiet, --missing-token, "
        "--n-features; refuses --systems, --criteria, --system-grid, --patience, "
        "--growth, --ranknet-pair-method)",
    )
    p.add_argument(
        "--ties",
        action="store_true",
        help="qbrank: add L2's equal-grade pairs to QBRank as tau = 0 pairs",
    )

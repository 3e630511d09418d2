"""The CLI surface against README's "Command line" section, a fourth adversarial pass:
every flag argparse knows is documented, every documented exit status is the code's,
typos get a suggestion, and values that argparse mistook for flags are values.  Each
problem found is one test here; the parity tests catch future drift."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from ltrboost.cli import build_parser, main
from ltrboost.params import PARAMS
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PARAM_FLAGS = {"--" + p.name.replace("_", "-"): p.name for p in PARAMS}


def _commands(parser=None, words=()):
    """(words, parser) for the top level and every subcommand, nested ones included."""
    parser = parser or build_parser()
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*words, name))


# Flags README documents outside the synopsis line of their command, with where.


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["trian", "x"], ["'trian'", "did you mean 'train'?"]),
        (["clicks", "mien", "x"], ["'mien'", "did you mean 'mine'?"]),
        (["eval", "m", "d", "--gain", "exps"], ["--gain", "did you mean 'exp'?"]),
    ],
)
def test_an_invalid_choice_suggests_the_close_one(argv, needles, capsys):
    """`ltrboost trian` listed the eleven commands, no suggestion; and the message named
    the choice by Python's dest (`argument clicks_command:`) rather than as the user
    knows it."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    one_line_error(exc.value.code, err, *needles)
    assert "clicks_command" not in err
    assert "argument command" not in err


def test_no_command_names_the_commands(capsys):
    """`ltrboost` alone said "the following arguments are required: command"."""
    with pytest.raises(SystemExit) as exc:
        main([])
    err = capsys.readouterr().err
    one_line_error(exc.value.code, err, "COMMAND", "ltrboost --help")
    with pytest.raises(SystemExit) as exc:
        main(["clicks"])
    one_line_error(exc.value.code, capsys.readouterr().err, "COMMAND", "ltrboost clicks --help")


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        # an abbreviation (refused on purpose: no prefix matching) names the full flag
        (["train", "x", "--n-est", "5"], ["--n-est", "did you mean --n-estimators?"]),
        (["train", "x", "--n-est=5"], ["--n-est=5", "did you mean --n-estimators?"]),
        (["train", "x", "--n", "5"], ["did you mean --n-estimators or --n-threads?"]),
        # a typo
        (["predict", "m", "d", "--n-thread", "2"], ["--n-thread", "did you mean --n-threads?"]),
        (
            ["clicks", "mine", "l", "--data", "d", "-o", "p", "--stategy", "skip-next"],
            ["--stategy", "did you mean --strategy?"],
        ),
    ],
)
def test_an_unknown_flag_suggests_the_close_one_and_its_commands_help(argv, needles, capsys):
    """`ltrboost train x --n-est 5` said "unrecognized arguments: --n-est 5 (see
    'ltrboost --help')": no hint that --n-estimators was meant (argparse's prefix
    matching is off on purpose), and the top-level help, which lists no flag of
    `train`, instead of `ltrboost train --help`."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    prog = "ltrboost " + " ".join(argv[: 2 if argv[0] == "clicks" else 1])
    one_line_error(exc.value.code, err, "unrecognized arguments", *needles, f"'{prog} --help'")


def test_an_unknown_flag_never_suggests_a_hidden_one(capsys):
    """cv's unlisted flags (--early-stopping-rounds) and the deprecated --eval-metric
    are not offered."""
    with pytest.raises(SystemExit) as exc:
        main(["cv", "x", "--eval-metrics", "map"])
    err = capsys.readouterr().err
    one_line_error(exc.value.code, err, "did you mean --metric?")
    assert "--eval-metric?" not in err


@pytest.mark.parametrize("value", ["-1e-3", "-1E-3", "-2.", "-1e2", "-.5", "-1"])
def test_a_negative_number_in_any_float_spelling_is_a_value(value):
    """`--min-gain-to-split -1e-3` failed with "expected one argument": argparse (before
    Python 3.13) took a negative number for a flag unless it looked like -1 or -1.5,
    so `--relevance-threshold -1e-05`, which Python's repr writes, was refused while
    `-0.00001` was read.  `--flag=-1e-3` worked."""
    parser = build_parser()
    args = parser.parse_args(["train", "x", "--min-gain-to-split", value])
    assert args.min_gain_to_split == float(value)
    args = parser.parse_args(["eval", "m", "d", "--relevance-threshold", value])
    assert args.relevance_threshold == float(value)


def test_a_flag_is_still_a_flag_after_a_negative_number_fix(capsys):
    """A real flag after one taking a value is still refused as a missing value, and a
    dash-word is not taken as a number."""
    with pytest.raises(SystemExit) as exc:
        main(["train", "x", "--tau", "--quiet"])
    one_line_error(exc.value.code, capsys.readouterr().err, "--tau", "expected one argument")
    with pytest.raises(SystemExit) as exc:
        main(["train", "x", "--tau", "-e1"])
    one_line_error(exc.value.code, capsys.readouterr().err, "--tau")


@pytest.mark.parametrize("spelling", ["true", "True", "1", "yes", "on"])
def test_boolean_parameter_spellings(spelling, capsys):
    """Every boolean training parameter takes the spellings the environment switch
    takes (README: true/false, 1/0, yes/no, on/off)."""
    parser = build_parser()
    bools = [p.name for p in PARAMS if p.annotation.replace(" ", "").split("|")[0] == "bool"]
    assert {"unbiased", "lambda_normalization", "use_label_pairs"} <= set(bools)
    for name in bools:
        flag = "--" + name.replace("_", "-")
        args = parser.parse_args(["train", "x", flag, spelling])
        assert getattr(args, name) is True
        negated = {"true": "false", "True": "False", "1": "0", "yes": "no", "on": "off"}
        args = parser.parse_args(["train", "x", flag, negated[spelling]])
        assert getattr(args, name) is False


def test_repeated_flag_then_equals_form_is_the_same(capsys, tmp_path):
    """`--flag=value` and `--flag value` are one flag: both forms of `--metric` given
    with different values are refused as the flag given twice."""
    rc, _, err = run(["eval", "m", "d", "--metric", "map", "--metric=ndcg@10"], capsys)
    one_line_error(rc, err, "--metric given twice")

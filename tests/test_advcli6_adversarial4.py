"""The CLI surface against README's "Command line" section, a fourth adversarial pass:
every flag argparse knows is documented, every documented exit status is the code's,
typos get a suggestion, and values that argparse mistook for flags are values.  Each
problem found is one test here; the parity tests catch future drift."""

from __future__ import annotations

import argparse
import ast
import re
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


def _synopsis() -> dict[str, str]:
    """README's "Command line" block, one joined text per command."""
    block = re.search(r"## Command line\n\n```\n(.*?)```", README, re.S).group(1)
    commands: dict[str, list[str]] = {}
    current = None
    for line in block.splitlines():
        match = re.match(r"ltrboost ((?:clicks )?\w+)", line)
        if match:
            current = match.group(1)
        commands.setdefault(current, []).append(line)
    return {command: " ".join(lines) for command, lines in commands.items()}


def _mentions(text: str, flag: str) -> bool:
    return re.search(re.escape(flag) + r"(?![\w-])", text) is not None


# Flags README documents outside the synopsis line of their command, with where.
_DOCUMENTED_ELSEWHERE = {
    # the short spellings, listed once under the synopsis
    "-o": "short flags sentence",
    "-q": "short flags sentence",
    "-f": "short flags sentence",
    "-h": "short flags sentence",
    "--help": "short flags sentence",
    "--version": "short flags sentence",
}


def test_every_flag_of_every_command_is_in_its_readme_synopsis():
    """Every option argparse has, on every subcommand, is in that command's line of
    README's synopsis (a training parameter: its name in README's parameter text, as
    "every parameter as --kebab-case" says), or in the allow-list above with where
    README gives it.  `train --pairs`, `convert --quiet`, `experiment --quiet` and the
    `--missing-token` of `clicks mine|dataset|simulate` and `experiment` were missing."""
    synopsis = _synopsis()
    missing = []
    for words, parser in _commands():
        command = " ".join(words)
        if command == "clicks":  # a group: its subcommands have the flags
            continue
        text = synopsis.get(command, "")
        for action in parser._actions:
            for flag in action.option_strings:
                if flag in _DOCUMENTED_ELSEWHERE:
                    assert _mentions(README, flag), flag
                    continue
                if flag in PARAM_FLAGS and words in (("train",), ("cv",)):
                    assert f"`{PARAM_FLAGS[flag]}`" in README, flag
                    continue
                if words == ("cv",) and flag in ("--valid", "--output"):  # refused
                    assert action.help == argparse.SUPPRESS
                    assert "`cv` refuses `train`'s `--valid` and `--output`" in README
                    continue
                refused = ("--pairs", "--position", "--resume", "--checkpoint-every")
                if words == ("cv",) and flag in refused:
                    assert action.help == argparse.SUPPRESS
                    assert f"`{flag}`" in README.split("`cv` refuses")[1][:400], flag
                    continue
                if flag == "--eval-metric":  # hidden, deprecated alias of --metric
                    assert action.help == argparse.SUPPRESS
                    assert "`--eval-metric` is a deprecated, hidden alias" in README
                    continue
                if not _mentions(text, flag):
                    missing.append(f"{command or 'ltrboost'} {flag}")
    assert not missing, missing


def test_every_documented_command_exists():
    """Each command of README's synopsis is a subcommand (and back: each subcommand
    has its line)."""
    documented = {c for c in _synopsis() if c}
    actual = {" ".join(w) for w, _ in _commands() if w and w != ("clicks",)}
    assert documented == actual


def test_every_non_switch_default_is_in_the_help():
    """`ltrboost CMD --help` gives the default of each flag that has one (README's
    synopsis quotes them): `train --output model.json`, `cv`/`convert --missing`,
    `clicks simulate --n-sessions`, `experiment --systems` ... showed none."""
    silent = []
    for words, parser in _commands():
        for action in parser._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS:
                continue
            default = action.default
            if default in (None, False, [], argparse.SUPPRESS) or action.required:
                continue
            flag = action.option_strings[0]
            if flag in PARAM_FLAGS:
                continue  # "(default: ...)" is appended to every parameter's help
            shown = str(default)
            help_text = " ".join((action.help or "").split()) % {"default": default}
            if shown not in help_text or "default" not in help_text:
                silent.append(f"{' '.join(words)} {flag} (default {shown})")
    assert not silent, silent


def test_exit_statuses_are_documented():
    """README lists every exit status of the CLI: 0, 1 (experiment's empty table), 2,
    130, 141 (a closed stdout pipe) and 143; 141 and 1 were undocumented."""
    from ltrboost import cli

    section = README[README.index("## Command line") : README.index("## Click logs")]
    statuses = {0, 1, cli.EXIT_BAD_INPUT, cli.EXIT_INTERRUPTED}
    statuses |= {cli.EXIT_BROKEN_PIPE, cli.EXIT_TERMINATED}
    for status in statuses:
        assert re.search(rf"`{status}`", section), status
    sources = sorted((ROOT / "src" / "ltrboost" / "cli").glob("*.py"))  # one per command
    assert len(sources) > 1, sources
    source = "".join(path.read_text(encoding="utf-8") for path in sources)
    literal = {int(n) for n in re.findall(r"^\s+return (\d+)$", source, re.M)}
    assert literal <= statuses, literal - statuses


_ENV_PREFIXES = ("LTRBOOST_", "NUMBA_", "OMP_", "GOMP_", "KMP_", "XDG_")


def _env_names_read() -> set[str]:
    """Every environment variable name the package's code holds as a string constant
    (a docstring or comment is not read): os.environ[...], .get, env_count(...) and
    the module constants those are given."""
    names = set()
    for path in (ROOT / "src" / "ltrboost").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                value = node.value
                if value == "LOCALAPPDATA" or (
                    value.startswith(_ENV_PREFIXES) and re.fullmatch(r"[A-Z][A-Z0-9_]+", value)
                ):
                    names.add(value)
            if isinstance(node, ast.Call):  # os.environ.get(X) / os.getenv(X)
                func = ast.unparse(node.func)
                if func in ("os.environ.get", "os.getenv", "environ.get") and node.args:
                    arg = node.args[0]
                    if isinstance(arg, ast.Constant):
                        names.add(arg.value)
    return names


def test_every_environment_variable_the_code_reads_is_in_readme():
    names = _env_names_read()
    assert {"LTRBOOST_BACKGROUND_COMPILE", "LTRBOOST_MAX_QUERY_PAIRS"} <= names
    undocumented = sorted(n for n in names if n not in README)
    assert not undocumented, undocumented


def test_background_compile_switch_spellings_are_documented():
    """LTRBOOST_BACKGROUND_COMPILE reads 0/false/no/off and 1/true/yes/on (the
    spellings of the boolean flags); README gave only `=0` and `1`."""
    from ltrboost import _warmup

    text = " ".join(README.split())
    for word in ("0", "false", "no", "off", "1", "true", "yes", "on"):
        assert re.search(rf"LTRBOOST_BACKGROUND_COMPILE[^.]*[`=]{word}`", text), word
    assert _warmup.ENV_SWITCH == "LTRBOOST_BACKGROUND_COMPILE"


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
    status = main(argv)
    err = capsys.readouterr().err
    one_line_error(status, err, *needles)
    assert "clicks_command" not in err
    assert "argument command" not in err


def test_no_command_names_the_commands(capsys):
    """`ltrboost` alone said "the following arguments are required: command"."""
    status = main([])
    err = capsys.readouterr().err
    one_line_error(status, err, "COMMAND", "ltrboost --help")
    status = main(["clicks"])
    one_line_error(status, capsys.readouterr().err, "COMMAND", "ltrboost clicks --help")


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        # an abbreviation (refused on purpose: no prefix matching) names the full flag
        (["train", "x", "--n-est", "5"], ["--n-est", "did you mean --n-estimators?"]),
        (["train", "x", "--n-est=5"], ["--n-est=5", "did you mean --n-estimators?"]),
        (["train", "x", "--n", "5"], ["did you mean --n-features, --n-estimators or --n-threads?"]),
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
    status = main(argv)
    err = capsys.readouterr().err
    prog = "ltrboost " + " ".join(argv[: 2 if argv[0] == "clicks" else 1])
    one_line_error(status, err, "unrecognized arguments", *needles, f"'{prog} --help'")


def test_an_unknown_flag_never_suggests_a_hidden_one(capsys):
    """cv's unlisted flags (--early-stopping-rounds) and the deprecated --eval-metric
    are not offered."""
    status = main(["cv", "x", "--eval-metrics", "map"])
    err = capsys.readouterr().err
    one_line_error(status, err, "did you mean --metric?")
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
    status = main(["train", "x", "--tau", "--quiet"])
    one_line_error(status, capsys.readouterr().err, "--tau", "expected one argument")
    status = main(["train", "x", "--tau", "-e1"])
    one_line_error(status, capsys.readouterr().err, "--tau")


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


def test_readme_gives_the_boolean_spellings():
    text = " ".join(README[README.index("## Command line") :].split())
    assert re.search(r"`true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`", text)


def test_repeated_flag_then_equals_form_is_the_same(capsys, tmp_path):
    """`--flag=value` and `--flag value` are one flag: both forms of `--metric` given
    with different values are refused as the flag given twice."""
    rc, _, err = run(["eval", "m", "d", "--metric", "map", "--metric=ndcg@10"], capsys)
    one_line_error(rc, err, "--metric given twice")


@pytest.mark.parametrize(
    ("flags", "needles"),
    [
        (["--patience", "0"], ["--patience 0", ">= 1"]),
        (["--min-samples-leaf", "0"], ["--min-samples-leaf=0"]),
        (["--growth", "widest"], ["--growth='widest'"]),
        (["--leaves", "1"], ["--leaves=1"]),
        (["--learning-rates", "-1"], ["--learning-rates=-1.0"]),
        (["--criteria", "foo"], ["--criteria='foo'"]),
        (["--systems", "foo"], ["--systems", "'foo'", "mcrank"]),
        (["--system-grid", "lambdamart=1:0.1"], ["--leaves=1", "--system-grid"]),
        (["--protocol", "qbrank", "--min-samples-leaf", "0"], ["--min-samples-leaf=0"]),
    ],
)
def test_experiment_errors_name_its_flags(flags, needles, write_letor_folds, tmp_path, capsys):
    """`ltrboost experiment` named its settings as Python does: `patience=0 must be >= 1
    or None`, `max_leaf_nodes=1 ...` for `--leaves 1`, `learning_rate=-1.0` for
    `--learning-rates -1`, `split_criterion='foo'` for `--criteria foo`,
    `min_samples_leaf=0` for `--min-samples-leaf 0`.  Nothing is written."""
    folds = write_letor_folds(tmp_path / "folds", 1, 6, 3)
    out = tmp_path / "report"
    rc, _, err = run(["experiment", folds, "-o", out, "-q", *flags], capsys)
    line = one_line_error(rc, err, *needles)
    for python in ("max_leaf_nodes", "learning_rate", "split_criterion", "min_samples_leaf"):
        assert python not in line
    assert "patience=" not in line
    assert "or None" not in line
    assert not out.exists()


@pytest.mark.parametrize("command", ["train", "cv", "eval"])
def test_metric_flag_shows_no_python_name(command, capsys):
    """`train --help` showed `--metric EVAL_METRIC`, the Python name of the parameter
    README says is `--metric` on the command line."""
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "EVAL_METRIC" not in out
    assert "--metric METRICS" in out


def test_warmup_help_gives_every_profile_form(capsys):
    """README's `train:OBJECTIVE+ole` profiles were missing from `warmup --help`."""
    assert main(["warmup", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "train:OBJECTIVE+ole" in out
    assert "train:OBJECTIVE+ole" in README

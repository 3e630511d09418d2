"""Claims of README.md and docs/*.md that a documentation pass found untrue, checked
against the code so that they stay true."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ltrboost.cli import main


def _help(capsys, command: str) -> str:
    assert main([command, "--help"]) == 0
    return capsys.readouterr().out


def test_generate_help_gives_every_default(capsys):
    """`ltrboost generate --help` gives every default (README's synopsis quotes them);
    --random-state showed none."""
    text = " ".join(_help(capsys, "generate").split())
    for flag in ("--n-queries", "--docs-per-query", "--n-features", "--random-state"):
        assert re.search(re.escape(flag) + r" [A-Z_]+ [^-]*\(default \d+\)", text), flag


def test_errors_and_warnings_named_by_readme_are_public():
    """README tells users to expect NonFiniteTrainingError, PairsIgnoredWarning and
    PositionIgnoredWarning; they could be imported only from private or internal modules
    (ltrboost._checks, ltrboost.objectives.base, ltrboost.booster)."""
    import ltrboost

    assert issubclass(ltrboost.NonFiniteTrainingError, ValueError)
    assert issubclass(ltrboost.PairsIgnoredWarning, UserWarning)
    assert issubclass(ltrboost.PositionIgnoredWarning, UserWarning)
    for name in ("NonFiniteTrainingError", "PairsIgnoredWarning", "PositionIgnoredWarning"):
        assert name in ltrboost.__all__
        assert name in dir(ltrboost)


ROOT = Path(__file__).resolve().parent.parent
DOCS = (
    "README.md",
    "docs/deploy.md",
    "docs/python-stack.md",
    "docs/custom.md",
    "docs/scaling.md",
    "docs/theory.md",
    "bench/README.md",
)


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_parameter_table_defaults_are_the_code_defaults():
    """Every "(default X)" of README's parameter table is the default of `ltrboost.params`,
    of `Ranker` and, for `learning_rate`, of the objectives (0.1; 1.0 for gbrank)."""
    import inspect

    from ltrboost.objectives.registry import objective_class
    from ltrboost.params import PARAMS
    from ltrboost.sklearn import Ranker

    defaults = {p.name: p.default for p in PARAMS}
    signature = inspect.signature(Ranker).parameters
    rows = re.findall(r"^\| `(\w+)` \| ([^|]*\(default ([^;)]+)[^|]*)\|", _readme(), re.M)
    assert len(rows) >= 8, rows
    for name, _, documented in rows:
        documented = documented.strip()
        if name == "learning_rate":
            assert defaults[name] is None
            assert signature[name].default is None
            assert objective_class("lambdamart").default_learning_rate == float(documented)
            assert objective_class("gbrank").default_learning_rate == 1.0
            continue
        code = defaults[name]
        assert signature[name].default == code, name
        if isinstance(code, str):
            assert documented.strip("`") == code, name
        else:
            assert float(documented) == code, name


def _subparser(parser, words):
    import argparse

    for word in words:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


def test_readme_command_synopsis_flags_exist_with_their_defaults():
    """Every flag of README's "Command line" synopsis exists on its command, and a value
    shown as `[--flag VALUE]` is the flag's default (predict's `[--output scores.txt]`
    read as a default; the default is stdout)."""
    import argparse

    from ltrboost.cli import build_parser
    from ltrboost.params import PARAMS

    block = re.search(r"## Command line\n\n```\n(.*?)```", _readme(), re.S).group(1)
    commands: dict[str, list[str]] = {}
    current = None
    for line in block.splitlines():
        match = re.match(r"ltrboost ((?:clicks )?\w+)", line)
        if match:
            current = match.group(1)
        commands.setdefault(current, []).append(line)
    docs = {"--" + p.name.replace("_", "-"): p.doc for p in PARAMS}
    parser = build_parser()
    checked = 0
    for command, lines in commands.items():
        options = {
            o: a for a in _subparser(parser, command.split())._actions for o in a.option_strings
        }
        synopsis = " ".join(lines)
        for flag in re.findall(r"\[(--[\w-]+)", synopsis):
            assert flag in options, (command, flag)
        for flag, value in re.findall(r"\[(--[\w-]+) ([\w.@,|-]+)\]", synopsis):
            default = options[flag].default
            if value.isupper() or "|" in value or value == "...":
                continue  # a placeholder or the choices
            checked += 1
            if default in (None, argparse.SUPPRESS):  # resolved later: the help says it
                said = docs.get(flag) or " ".join(options[flag].help.split())
                assert re.search(rf"(None: |default:? (the \w+'s, )?){re.escape(value)}\b", said), (
                    command,
                    flag,
                    said,
                )
            elif isinstance(default, str):
                assert value == default, (command, flag, default)
            else:
                assert float(value) == default, (command, flag, default)
    assert checked >= 15


def _anchors(path: Path) -> set[str]:
    headings = re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("doc", DOCS)
def test_doc_links_and_paths_exist(doc):
    """Relative links (with their #section), and the repository paths the docs name in
    backquotes, exist. (`bench/results/...` files are written by a benchmark run.)"""
    path = ROOT / doc
    text = path.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://")):
            continue
        file, _, anchor = target.partition("#")
        linked = path.parent / file if file else path
        assert linked.exists(), target
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked), target
    for ref in set(re.findall(r"`((?:src/|tests/|bench/|docs/|ltrboost/)[\w./-]+)`", text)):
        if ref.startswith("bench/results/"):
            continue
        assert any(p.exists() for p in (ROOT / ref, path.parent / ref, ROOT / "src" / ref)), ref


def test_readme_trees_to_dataframe_columns():
    """README lists `Booster.trees_to_dataframe()`'s columns in order (16, as
    docs/python-stack.md counts)."""
    import numpy as np

    from ltrboost import Ranker

    listed = re.search(r"with columns `([^`]*)` \(the name\), `([^`]*)`", _readme(), re.S)
    names = [c.strip() for part in listed.groups() for c in part.split(",")]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = rng.integers(0, 3, size=60)
    model = Ranker(n_estimators=2, min_samples_leaf=5).fit(X, y, qid=np.repeat(np.arange(6), 10))
    assert list(model.booster_.trees_to_dataframe().columns) == names
    assert len(names) == 16


def test_choosing_a_ranker_table_is_bench_readmes():
    """Every NDCG@10 of README's "Choosing a ranker" table is the one in bench/README.md's
    "Every objective on every shared dataset" tables (the numbers' source and command)."""
    bench = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    section = bench[bench.index("## Every objective on every shared dataset") :]
    source = {}
    for data, system, ndcg10 in re.findall(
        r"^\| ([^|]+?) \| ([^|]+?) \| [\d.]+ \| [\d.]+ \| ([\d.]+) \|", section, re.M
    ):
        source[(data, system)] = ndcg10
    datasets = (
        "MQ2008 (5 folds)",
        "MQ2008 binary (5 folds)",
        "synthetic, 150 docs/query",
        "lightgbm_example",
        "mslr_tiny",
        "trec_news",
    )
    readme = _readme()
    table = readme[readme.index("| objective | MQ2008 (0\u20132) |") :].split("\n\n")[0]
    rows = [r for r in table.splitlines()[2:] if r.startswith("|")]
    assert len(rows) == 18  # + xendcg and LightGBM rank_xendcg (stop 37)
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        system = cells[0].replace("`", "")
        system = re.sub(r"^(\w+) \+ OLE$", r"\1, OLE", system)
        system = re.sub(r"^lambdamart (err|map)$", r"lambdamart (\1)", system)
        for data, value in zip(datasets, cells[1:], strict=True):
            assert source.get((data, system)) == value, (system, data, value)


@pytest.mark.parametrize("command", ["train", "cv"])
def test_every_parameter_is_a_kebab_case_flag(command):
    """README: every parameter is a CLI flag in kebab-case, except `eval_metric`, which is
    `--metric`; the synopsis gives `train` and `cv` "every parameter as --kebab-case"."""
    from ltrboost.cli import build_parser
    from ltrboost.params import PARAMS

    parser = _subparser(build_parser(), [command])
    options = {o for a in parser._actions for o in a.option_strings}
    for p in PARAMS:
        flag = "--metric" if p.name == "eval_metric" else "--" + p.name.replace("_", "-")
        assert flag in options, flag

"""README.md followed from top to bottom by a newcomer (fifth documentation pass): each
test is a sentence or a command of README that did not do what it says."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from ltrboost.cli import build_parser, main
from ltrboost.datasets import make_ranking
from ltrboost.io import dump_svmlight

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {p: (ROOT / p).read_text(encoding="utf-8") for p in ("README.md", "docs/deploy.md")}


@pytest.fixture(scope="module")
def train_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("data")
    X, y, qid = make_ranking(n_queries=12, docs_per_query=10, n_features=4, random_state=0)[:3]
    path = folder / "train.txt"
    dump_svmlight(str(path), X, y, qid)
    return path


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("ltrboost: error:")]
    assert len(lines) == 1, err
    return lines[0]


# --- the CLI names flags in training's own errors -------------------------------------


def test_non_finite_training_error_names_the_flags(train_file, tmp_path, capsys):
    """README: the CLI names the flag in "the warnings and errors of training itself";
    the non-finite error said `learning_rate=1e+308` and `lower learning_rate/sigma`,
    Python's names, which `ltrboost train` does not take."""
    out = tmp_path / "m.json"
    rc = main(["train", str(train_file), "--learning-rate", "1e308", "-q", "-o", str(out)])
    assert rc == 2
    line = _one_error_line(capsys)
    assert "round 1: the leaf values are not finite" in line
    assert "--learning-rate=1e+308" in line
    assert "--l2-regularization=0" in line
    assert "lower --learning-rate (or another parameter listed)" in line
    assert not re.search(r"(?<!-)\b(learning_rate|l2_regularization)\b", line), line
    assert not out.exists()  # no model written


def test_non_finite_error_names_label_scale_by_its_flag(tmp_path, capsys):
    """`label_scale up to ...` of logistic_rank's non-finite error is `--label-scale`."""
    X, y, qid = make_ranking(n_queries=12, docs_per_query=10, n_features=4, random_state=0)[:3]
    path = tmp_path / "train.txt"
    dump_svmlight(str(path), X, y, qid)
    rc = main(
        [
            "train",
            str(path),
            "--objective",
            "logistic_rank",
            "--label-scale",
            '{"4": 1e308, "3": 1e308}',
            "--learning-rate",
            "1e308",
            "-q",
            "-o",
            str(tmp_path / "m.json"),
        ]
    )
    assert rc == 2
    line = _one_error_line(capsys)
    assert "not finite" in line
    assert "--label-scale up to 1e+308" in line, line
    assert "label_scale" not in line


def test_cv_non_finite_error_names_the_flags(train_file, capsys):
    rc = main(["cv", str(train_file), "--folds", "2", "--learning-rate", "1e308"])
    assert rc == 2
    line = _one_error_line(capsys)
    assert "--learning-rate=1e+308" in line
    assert "learning_rate" not in line


def test_python_non_finite_error_keeps_python_names():
    """The Python API's message is unchanged: it names the keyword arguments."""
    from ltrboost import NonFiniteTrainingError, Ranker

    X, y, qid = make_ranking(n_queries=12, docs_per_query=10, n_features=4, random_state=0)[:3]
    with pytest.raises(NonFiniteTrainingError, match=r"learning_rate=1e\+308.*lower learning_rate"):
        Ranker(n_estimators=2, learning_rate=1e308).fit(X, y, qid=qid)


# --- README's commands and examples as a newcomer runs them --------------------------------


def _negative_examples() -> list[list[str]]:
    text = " ".join(README.split())
    sentence = re.search(r"a value may be a negative number in any spelling \(([^)]*)\)", text)
    assert sentence, "README's sentence on negative values moved"
    examples = [shlex.split(e) for e in re.findall(r"`(--[^`]+)`", sentence.group(1))]
    assert examples
    return examples


def test_readme_negative_value_examples_are_accepted(train_file, tmp_path, capsys):
    """README's example of a negative value, `--min-gain-to-split -1e-3`, was an error
    (`--min-gain-to-split=-0.001 must be finite and >= 0`): the example must train."""
    for example in _negative_examples():
        out = tmp_path / "m.json"
        argv = ["train", str(train_file), *example, "--n-estimators", "1", "-q", "-o", str(out)]
        assert main(argv) == 0, (example, capsys.readouterr().err)
        assert out.exists()


def _ltrboost_commands(text: str) -> list[str]:
    """Every complete `ltrboost ...` command of the doc's ```bash blocks and its inline
    `ltrboost train DATA ...` examples: none with a placeholder (`FORMAT`, `[--flag]`,
    `...`) or a flag alone (`ltrboost train --resume`); the synopsis block is checked
    by tests/test_docs_claims.py."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        block = block.replace("\\\n", " ")
        found += [part.strip() for part in re.split(r"&&|\n", block)]
    found += re.findall(r"`(ltrboost train [^-`][^`]*)`", " ".join(text.split()))
    return [
        c
        for c in found
        if c.startswith("ltrboost ") and not re.search(r"\[|\.\.\.|\b[A-Z]{2,}\b", c)
    ]


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_documented_commands_parse_and_their_parameters_validate(doc):
    """The commands a newcomer copies from README and docs/deploy.md exist with their
    flags, and the training parameters they give pass the CLI's checks."""
    from ltrboost.cli._common import _validate_as_flags
    from ltrboost.params import PARAM_NAMES, BoosterParams

    commands = _ltrboost_commands(DOCS[doc])
    assert commands, doc
    parser = build_parser()
    for command in commands:
        args = parser.parse_args(shlex.split(command)[1:])
        if args.command in ("train", "cv"):
            params = {k: v for k, v in vars(args).items() if k in PARAM_NAMES}
            _validate_as_flags(BoosterParams(**params))


def test_quickstart_then_python_api_example_in_one_folder(tmp_path, monkeypatch):
    """README's first command writes `data/train.txt` and `data/vali.txt`; the Python API
    example read `train.txt` and `vali.txt`, which a newcomer following README does not
    have (FileNotFoundError)."""
    from ltrboost.cli import main

    quickstart = re.search(r"\*\*Install and train\*\*.*?```bash\n(.*?)```", README, re.S)
    generate = next(shlex.split(c)[1:] for c in quickstart.group(1).split("&&") if "generate" in c)
    monkeypatch.chdir(tmp_path)
    assert main([*generate, "--n-queries", "30", "--docs-per-query", "10"]) in (0, None)
    example = re.search(r"<!-- api-example:[^>]*-->\s*```python\n(.*?)```", README, re.S)
    namespace: dict = {}
    exec(compile(example.group(1), "README.md", "exec"), namespace)
    assert (tmp_path / "model.json").exists()
    assert np.array_equal(namespace["same"].predict(namespace["valid"].X), namespace["scores"])

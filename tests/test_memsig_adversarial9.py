"""Memory budgets and signals, a ninth adversarial pass: the README's promises about
memory refusals (one line naming the file, the shape and the bytes; nothing
half-written) and about Ctrl-C / SIGTERM during the commands that write files (status
130 / 143, no partial output, temporary files removed, an existing output intact),
checked with hostile timings; and a resumed Unbiased LambdaMART model's warning.

Signals are sent by the process to itself from a hook at the exact moment (as in
``test_advsig5_adversarial5``), so that no test depends on timing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ltrboost.cli import main
from ltrboost.io.letor import dump_svmlight

SRC = str(Path(__file__).resolve().parents[1] / "src")
FAST = ["-q", "--n-estimators", "3", "--min-samples-leaf", "5", "--max-leaf-nodes", "4"]
SENTINEL = "previous output\n"


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    _out, err = capsys.readouterr()
    return rc, err


# ------------------------------------- 1. resuming an unbiased model without --unbiased


@pytest.fixture(scope="module")
def clicks(tmp_path_factory) -> Path:
    """Binary clicks with each query's display positions 1..5 shuffled."""
    folder = tmp_path_factory.mktemp("memsig_clicks")
    rng = np.random.default_rng(3)
    n_queries, n_docs = 40, 5
    X = rng.normal(size=(n_queries * n_docs, 3))
    y = (rng.random(n_queries * n_docs) < 0.3).astype(int)
    qid = np.repeat(np.arange(n_queries), n_docs)
    pos = np.concatenate([rng.permutation(n_docs) + 1 for _ in range(n_queries)])
    train = folder / "clicks.txt"
    dump_svmlight(str(train), X, y, qid=qid)
    (folder / "clicks.txt.position").write_text("".join(f"{p}\n" for p in pos))
    return train


@pytest.mark.parametrize(
    "flags",
    [
        ["--max-positions", "10"],
        ["--position-bias-norm", "1"],
        ["--max-positions", "10", "--position-bias-norm", "1"],
    ],
)
@pytest.mark.parametrize("unbiased", [[], ["--unbiased", "false"]])
def test_resume_unbiased_model_without_unbiased_names_only_unbiased(
    clicks, tmp_path, capsys, flags, unbiased
):
    """A model trained with ``--unbiased true --max-positions 10`` resumed without
    ``--unbiased`` warned ``--max-positions None (model: 10)``: the new rounds do not
    use that parameter at all (giving it without ``--unbiased true`` is an error), so
    the warning named a value no new round uses.  Only ``--unbiased`` differs."""
    first = tmp_path / "m.json"
    base = ["train", clicks, "--min-samples-leaf", "5", "-q"]
    rc, err = run([*base, "-o", first, "--n-estimators", "2", "--unbiased", "true", *flags], capsys)
    assert rc == 0, err
    rc, err = run(
        [*base, "-o", tmp_path / "m2.json", "--n-estimators", "3", "--resume", first, *unbiased],
        capsys,
    )
    assert rc == 0, err
    resume = [line for line in err.splitlines() if "--resume" in line]
    assert len(resume) == 1, err
    assert "--unbiased False (model: True)" in resume[0]
    assert "--max-positions" not in resume[0]
    assert "--position-bias-norm" not in resume[0]

"""Adversarial pass 12 over the OLE split criterion (seed 000) from a user's side:
``split_criterion="ole"`` and the approximate ``ole_top_features=k``, end to end
(objectives, Python API, scikit-learn, the CLI, Dask, resume).  Tests marked "failed
before" failed on the old code; the others pin down behaviour the pass checked and
found right, where no test held it yet."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

import ltrboost
from ltrboost.params import ParameterWarning
from test_cli import run


def _letor(path: Path, seed: int = 0, n_queries: int = 20, per: int = 8) -> Path:
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(1, n_queries + 1):
        for _ in range(per):
            x = " ".join(f"{i + 1}:{v:.3f}" for i, v in enumerate(rng.random(4)))
            lines.append(f"{rng.integers(0, 3)} qid:{q} {x} 5:1")  # feature 5 constant
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def letor(tmp_path_factory) -> Path:
    return _letor(tmp_path_factory.mktemp("advole12") / "train.txt")


FLAGS = ["-q", "--min-samples-leaf", "3", "--max-leaf-nodes", "4"]


def _train(letor, out, *flags, n, capsys):
    argv = ["train", letor, *FLAGS, "-o", out, "--n-estimators", str(n), *flags]
    return run(argv, capsys)


# ------------------------------------------------- resume: a k that no round uses


@pytest.mark.parametrize(
    "first, again",
    [
        # a Newton model given --ole-top-features (ignored, with a warning), resumed
        # without it: its rounds and the new ones are the same Newton rounds
        (["--ole-top-features", "3"], []),
        # an OLE model of k=2 resumed with Newton: only --split-criterion differs
        (["--split-criterion", "ole", "--ole-top-features", "2"], ["--split-criterion", "newton"]),
        # gbrank is not pairwise: OLE is its Newton criterion and k is ignored
        (
            ["--objective", "gbrank", "--split-criterion", "ole", "--ole-top-features", "3"],
            ["--objective", "gbrank", "--split-criterion", "ole"],
        ),
    ],
)
def test_resume_does_not_name_an_ole_top_features_no_round_uses(
    letor, tmp_path, capsys, first, again
):
    """README: a flag "the new rounds do not use" is no difference on ``--resume``.
    ``--ole-top-features`` only approximates OLE's pair criterion: with Newton (or an
    objective without pairs, gbrank) it is ignored, yet a resumed run warned
    ``--ole-top-features None (model: 3) differ from the model's``.  Failed before."""
    first_model = tmp_path / "m1.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        rc, _, _ = _train(letor, first_model, *first, n=2, capsys=capsys)
    assert rc == 0
    rc, _, err = _train(
        letor, tmp_path / "m2.json", *again, "--resume", first_model, n=4, capsys=capsys
    )
    assert rc == 0, err
    assert "--ole-top-features" not in err, err


def test_resume_still_names_another_k_of_an_ole_model(letor, tmp_path, capsys):
    """Both runs OLE on a pairwise objective: another k (or exact OLE) continues with
    other trees and is named; the same k is no difference."""
    first = tmp_path / "m1.json"
    ole = ["--split-criterion", "ole"]
    assert _train(letor, first, *ole, "--ole-top-features", "2", n=2, capsys=capsys)[0] == 0
    rc, _, err = _train(letor, tmp_path / "m2.json", *ole, "--resume", first, n=4, capsys=capsys)
    assert rc == 0
    assert "--ole-top-features None (model: 2)" in err
    rc, _, err = _train(
        letor, tmp_path / "m3.json", *ole, "--ole-top-features", "2", "--resume", first,
        n=4, capsys=capsys,
    )  # fmt: skip
    assert rc == 0
    assert "differ" not in err
    # and the continued model is the uninterrupted one, byte for byte
    rc, _, _ = _train(
        letor, tmp_path / "full.json", *ole, "--ole-top-features", "2", n=4, capsys=capsys
    )
    assert rc == 0
    assert (tmp_path / "m3.json").read_bytes() == (tmp_path / "full.json").read_bytes()

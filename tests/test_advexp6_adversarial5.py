"""``ltrboost experiment`` / :func:`run_experiment`: inputs a fifth adversarial pass found
mishandled -- each now does what its flag says, or fails up front with one line naming
the flag."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

import ltrboost.experiment as experiment
from ltrboost.experiment import Cell, run_experiment, write_report
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

KW = dict(max_trees=2, min_samples_leaf=2, n_threads=1, progress=False)
ARGS = ["--max-trees", "2", "--min-samples-leaf", "2", "--n-threads", "1", "--quiet"]


@pytest.fixture
def folds(tmp_path, write_letor_folds):
    return write_letor_folds(tmp_path / "data", 1, 8, 5)


def test_numpy_system_params_are_recorded_not_an_error_after_training(folds, tmp_path, monkeypatch):
    """``system_params={"lambdamart": {"sigma": np.float32(1)}}``: the cell trained, then
    its record failed with "Object of type float32 is not JSON serializable" -- the
    cell's training (hours, on real data) lost.  The value is recorded as the number it
    is, and a resume with the plain float reuses the cell."""
    trained = []
    real = experiment._train_cell
    monkeypatch.setattr(experiment, "_train_cell", lambda *a: trained.append(1) or real(*a))
    grid = dict(systems=("lambdamart",), leaves=(4,), learning_rates=(0.1,), **KW)
    out = tmp_path / "r"
    sp = {"lambdamart": {"sigma": np.float32(1.0), "random_state": np.int64(3)}}
    run_experiment(str(folds), str(out), system_params=sp, **grid)
    assert len(trained) == 2
    cell = json.loads(next((out / "cells").glob("*.json")).read_text())
    assert cell["settings"]["sigma"] == 1.0
    assert cell["settings"]["random_state"] == 3
    run_experiment(
        str(folds), str(out), system_params={"lambdamart": {"sigma": 1.0, "random_state": 3}},
        **grid,
    )  # fmt: skip
    assert len(trained) == 2  # both reused


def test_system_params_that_cannot_be_recorded_fail_before_any_cell(folds, tmp_path, monkeypatch):
    """A value the cell files cannot hold (``Fraction(1, 2)`` passes as a real number)
    failed after the first cell's training; it fails before any."""
    trained = []
    monkeypatch.setattr(experiment, "_train_cell", lambda *a: trained.append(1))
    match = r"system_params of lambdamart: sigma=Fraction\(1, 2\) .*JSON"
    with pytest.raises(ValueError, match=match):
        run_experiment(
            str(folds), str(tmp_path / "r"), systems=("lambdamart",), leaves=(4,),
            learning_rates=(0.1,), system_params={"lambdamart": {"sigma": Fraction(1, 2)}}, **KW,
        )  # fmt: skip
    assert not trained
    assert not (tmp_path / "r").exists()


def _record(ndcg: float) -> dict:
    curve = {m: [ndcg] for m in experiment.METRICS}
    return {
        "curves": {"vali": curve, "test": curve},
        "test_at_best": {m: ndcg for m in experiment.METRICS},
        "final_train_loss": 0.0,
        "seconds": 0.0,
        "best_iteration": 1,
    }


def test_table_marks_only_differences_above_a_tenth_of_a_point(tmp_path):
    """``*`` marks OLE better by *more than* 0.1 point: of two differences of exactly
    0.001, 0.401 - 0.400 (0.0010000000000000009 in floats) was marked and 0.344 - 0.343
    (0.0009999999999999454) was not -- the table showed ``40.00 / 40.10*`` beside
    ``34.30 / 34.40``."""
    cells = []
    pairs = ((0.4, 0.401), (0.343, 0.344), (0.5, 0.5011))
    for lr, (se, ole) in zip((0.1, 0.2, 0.3), pairs, strict=True):
        for crit, v in (("se", se), ("ole", ole)):
            c = Cell("mcrank", crit, 4, lr, "Fold1")
            (tmp_path / "cells").mkdir(exist_ok=True)
            (tmp_path / "cells" / f"{c.key}.json").write_text(json.dumps(_record(v)))
            cells.append(c)
    summary = write_report(str(tmp_path), cells)
    rows = [r for r in (tmp_path / "table.md").read_text().splitlines() if r.startswith("| mcr")]
    assert "40.00 / 40.10 |" in rows[0], rows
    assert "34.30 / 34.40 |" in rows[1], rows
    assert "50.00 / 50.11* |" in rows[2], rows
    assert (summary["wins"], summary["losses"]) == (4, 0)

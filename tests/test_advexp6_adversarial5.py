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


def test_system_grid_given_twice_for_one_system_is_an_error(folds, tmp_path, capsys):
    """``--system-grid lambdamart=4:0.1 --system-grid lambdamart=5:0.1`` trained the
    5-leaf cells only: the first grid was dropped without a word."""
    rc, _, err = run(
        ["experiment", folds, "-o", tmp_path / "r", "--systems", "lambdamart", *ARGS,
         "--system-grid", "lambdamart=4:0.1", "--system-grid", "lambdamart=5:0.1"],
        capsys,
    )  # fmt: skip
    one_line_error(rc, err, "--system-grid", "lambdamart=4:0.1", "lambdamart=5:0.1")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("spec", "part"), [("mcrank=:0.1", "LEAVES"), ("mcrank=4:", "RATES")])
def test_system_grid_without_values_names_the_system_grid_flag(folds, tmp_path, capsys, spec, part):
    """``--system-grid mcrank=:0.1`` said "--leaves of mcrank is empty": the flag given
    was --system-grid, and --leaves was not given at all."""
    rc, _, err = run(
        ["experiment", folds, "-o", tmp_path / "r", *ARGS, "--system-grid", spec], capsys
    )
    line = one_line_error(rc, err, f"--system-grid '{spec}'", part)
    assert "--leaves" not in line
    assert "--learning-rates" not in line


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


@pytest.mark.parametrize(
    ("first", "then", "flag"),
    [
        ([], ["--max-trees", "3"], "--max-trees 2 (this run: 3)"),
        ([], ["--patience", "2"], "--patience None (this run: 2)"),
        ([], ["--growth", "depth_first"], "--growth 'breadth_first' (this run: 'depth_first')"),
        ([], ["--min-samples-leaf", "3"], "--min-samples-leaf 2 (this run: 3)"),
        ([], ["--missing-token", "NULL"], "--missing-token None (this run: ['NULL'])"),
        (
            ["--ranknet-pair-method", "all"],
            ["--ranknet-pair-method", "topk"],
            "--ranknet-pair-method 'all' (this run: 'topk')",
        ),
    ],
)
def test_resume_with_another_flag_names_the_flag(folds, tmp_path, capsys, first, then, flag):
    """A resume with another value refused naming the Python keyword (``max_trees 2
    (this run: 3)``, ``na_values`` for --missing-token, ``pair_method`` for
    --ranknet-pair-method): the command's error names its flag."""
    base = ["experiment", folds, "-o", tmp_path / "r", "--systems", "ranknet", "--leaves", "4"]
    base += ["--learning-rates", "0.1"]
    rc, _, err = run([*base, *ARGS, *first], capsys)
    assert rc == 0, err
    rc, _, err = run([*base, *ARGS, *then], capsys)
    # "--max-trees given twice" warnings aside
    err = "".join(x for x in err.splitlines(True) if not x.startswith("ltrboost: warning:"))
    line = one_line_error(rc, err, flag)
    assert "resume with the same" in line

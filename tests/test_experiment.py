"""``ltrboost experiment``: the grid runs, the report is complete, and it resumes."""

import csv
import json
import os

import numpy as np
import pytest

from ltrboost.cli import main
from ltrboost.datasets import make_ranking
from ltrboost.experiment import find_folds, run_experiment
from ltrboost.io.letor import dump_svmlight


def _folds(tmp_path, n_folds=2):
    root = tmp_path / "data"
    for k in range(1, n_folds + 1):
        d = root / f"Fold{k}"
        d.mkdir(parents=True)
        for name, seed in (("train.txt", k), ("vali.txt", 10 + k), ("test.txt", 20 + k)):
            X, y, q = make_ranking(
                n_queries=12, docs_per_query=10, n_features=6, max_label=2, random_state=seed
            )
            dump_svmlight(d / name, X, y, q)
    return root


def test_find_folds_requires_the_three_files(tmp_path):
    root = _folds(tmp_path, 1)
    assert [f[0] for f in find_folds(str(root))] == ["Fold1"]
    os.remove(root / "Fold1" / "vali.txt")
    with pytest.raises(ValueError, match=r"Fold\*"):
        find_folds(str(root))


def test_experiment_report_and_resume(tmp_path):
    root = _folds(tmp_path)
    out = tmp_path / "report"
    kw = dict(
        leaves=(4,),
        learning_rates=(0.1,),
        max_trees=4,
        min_samples_leaf=2,
        n_threads=1,
        progress=False,
    )
    summary = run_experiment(str(root), str(out), **kw)
    assert summary["n_cells"] == 2 * 4  # systems x metrics
    cells = sorted(os.listdir(out / "cells"))
    assert len(cells) == 2 * 2 * 2  # systems x criteria x folds
    for name in ("table.md", "iterations.csv", "final_loss.csv"):
        assert (out / name).stat().st_size > 0
    with open(out / "iterations.csv") as f:
        rows = list(csv.DictReader(f))
    # every metric at every iteration, for vali and test, of every cell
    assert len(rows) == len(cells) * 2 * 4
    table = (out / "table.md").read_text()
    assert "lambdamart" in table
    assert "mcrank" in table
    assert " / " in table
    # resume: finished cells are not recomputed
    before = {c: (out / "cells" / c).stat().st_mtime_ns for c in cells}
    run_experiment(str(root), str(out), **kw)
    assert {c: (out / "cells" / c).stat().st_mtime_ns for c in cells} == before
    rec = json.loads((out / "cells" / cells[0]).read_text())
    assert np.isfinite(rec["final_train_loss"])
    assert 1 <= rec["best_iteration"] <= 4


def test_experiment_cli(tmp_path, capsys):
    root = _folds(tmp_path, 1)
    rc = main(
        [
            "experiment",
            str(root),
            "-o",
            str(tmp_path / "r"),
            "--max-trees",
            "3",
            "--leaves",
            "4",
            "--learning-rates",
            "0.1",
            "--systems",
            "lambdamart",
            "--min-samples-leaf",
            "2",
            "--quiet",
        ]
    )
    assert rc == 0
    assert "lambdamart" in capsys.readouterr().out

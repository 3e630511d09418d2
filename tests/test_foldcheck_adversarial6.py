"""``ltrboost cv`` and ``ltrboost experiment``: a data or label problem of one fold
(here always the fourth) fails before the first fold trains, with the message its
training would have given, and nothing is printed or written for the folds before it.
Before, folds 1-3 trained (minutes to hours in a real experiment), printed or wrote
their results, and then fold 4 failed."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ltrboost import experiment as experiment_module
from ltrboost.cli import query_folds
from ltrboost.io.letor import load_svmlight
from test_cli import run

FAST = ["--n-estimators", "2", "--min-samples-leaf", "2", "--n-threads", "1", "-q"]
N_FOLDS = 5


def _cv_data(tmp_path, top_grade_in_fold: int, top: int):
    """Grades 0..2, and grade ``top`` only in the queries of cv fold
    ``top_grade_in_fold`` (0-based): that fold's *training* queries lack it."""
    rng = np.random.default_rng(7)
    qids = np.repeat(np.arange(1, 16), 6)
    fold = query_folds(qids, N_FOLDS, 0)
    rows = []
    for i, q in enumerate(qids):
        y = i % 3
        if fold[i] == top_grade_in_fold and i % 6 == 0:
            y = top
        rows.append(f"{y} qid:{q} 1:{rng.random():.3f} 2:{rng.random():.3f}")
    path = tmp_path / "d.txt"
    path.write_text("".join(f"{r}\n" for r in rows))
    # the file is built so: only fold 4's queries hold the top grade
    data = load_svmlight(path)
    assert set(data.y[fold != top_grade_in_fold]) == {0, 1, 2}
    return path


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (
            ["--lambda-metric", "map", "--relevance-threshold", "3"],
            "--relevance-threshold=3 counts no training document relevant",
        ),
        (
            ["--objective", "logistic_rank", "--positive-threshold", "3"],
            "--positive-threshold=3 makes every training document negative",
        ),
    ],
)
def test_cv_a_fold4_threshold_problem_fails_before_fold_1_trains(tmp_path, capsys, flags, says):
    data = _cv_data(tmp_path, 3, 3)
    rc, out, err = run(["cv", data, "--folds", str(N_FOLDS), *flags, *FAST], capsys)
    assert rc != 0
    assert out == "", out  # no fold trained: no "fold 1/5: ..." line
    assert f"fold 4/{N_FOLDS}: " in err, err
    assert says in err, err


def _folds(tmp_path, write_letor_folds, n=4):
    return write_letor_folds(tmp_path / "data", n, 6, 4)


EXP = [
    "--systems", "mcrank", "--criteria", "se", "--leaves", "4", "--learning-rates", "0.1",
    "--max-trees", "2", "--min-samples-leaf", "2", "--n-threads", "1", "-q",
]  # fmt: skip


def _experiment(root, out, capsys, *extra):
    return run(["experiment", root, "--output", out, *EXP, *extra], capsys)


@pytest.mark.parametrize(
    ("file", "line", "says"),
    [
        ("train.txt", "1 qid:99 1:0.5 2:abc", "train.txt:73: feature value 'abc' is not a number"),
        ("vali.txt", "1 qid:99 9:0.5", "vali.txt:73: feature index 9 is above the 4 features"),
        ("test.txt", "1 qid:99 1:0.5 2:", "test.txt:73: "),
        ("train.txt", "40 qid:99 1:0.5", "train.txt:73: label=40 is larger than 31"),
        ("train.txt", "1.5 qid:99 1:0.5", "train.txt:73: label=1.5 is not a non-negative"),
    ],
)
def test_experiment_a_fold4_problem_fails_before_any_cell_trains(
    tmp_path, write_letor_folds, capsys, file, line, says
):
    root = _folds(tmp_path, write_letor_folds)
    with open(root / "Fold4" / file, "a") as f:
        f.write(line + "\n")
    out = tmp_path / "report"
    rc, _, err = _experiment(root, out, capsys)
    assert rc != 0
    assert not out.exists(), sorted(os.listdir(out))  # no cell, no report, no folder
    assert str(root / "Fold4") in err, err
    assert says in err, err


def test_experiment_an_empty_fold4_file_fails_before_any_cell_trains(
    tmp_path, write_letor_folds, capsys
):
    root = _folds(tmp_path, write_letor_folds)
    (root / "Fold4" / "test.txt").write_text("")
    out = tmp_path / "report"
    rc, _, err = _experiment(root, out, capsys)
    assert rc != 0
    assert not out.exists()
    assert f"{root / 'Fold4' / 'test.txt'}:1: no data lines" in err, err


def test_experiment_reads_the_first_fold_once_and_checks_only_folds_still_to_train(
    tmp_path, write_letor_folds, capsys, monkeypatch
):
    """The check reads every other fold once more (then drops it: one fold in memory at
    a time, as before) and keeps the first fold it trains; a rerun whose cells are all
    finished reads no fold."""
    root = _folds(tmp_path, write_letor_folds, 3)
    read = []
    real = experiment_module._fold_datasets

    def counting(paths, na_values, n_features=None):
        read.append(os.path.basename(os.path.dirname(paths[0])))
        return real(paths, na_values, n_features)

    monkeypatch.setattr(experiment_module, "_fold_datasets", counting)
    out = tmp_path / "report"
    rc, _, err = _experiment(root, out, capsys)
    assert rc == 1, err  # one criterion: the table is empty, the cells are there
    assert len(os.listdir(out / "cells")) == 3
    assert sorted(read) == ["Fold1", "Fold2", "Fold2", "Fold3", "Fold3"], read
    read.clear()
    rc, _, err = _experiment(root, out, capsys)
    assert rc == 1, err
    assert read == []


def test_experiment_qbrank_a_fold4_problem_fails_before_any_fold_trains(
    tmp_path, write_letor_folds, capsys
):
    root = write_letor_folds(tmp_path / "data", 4, 6, 4, single_grade={"train.txt": (1, 2)})
    with open(root / "Fold4" / "train.txt", "a") as f:
        f.write("1 qid:99 1:0.5 2:abc\n")
    out = tmp_path / "report"
    argv = ["experiment", root, "--output", out, "--protocol", "qbrank", "--max-trees", "2"]
    rc, _, err = run([*argv, "--min-samples-leaf", "2", "--n-threads", "1", "-q"], capsys)
    assert rc != 0
    assert not out.exists(), sorted(os.listdir(out))
    assert f"{root / 'Fold4' / 'train.txt'}:73: feature value 'abc'" in err, err


def test_experiment_qbrank_a_fold4_without_single_grade_queries_fails_first(
    tmp_path, write_letor_folds, capsys
):
    """GBT(L1) needs the single-grade training queries: fold 4 without any failed after
    folds 1-3 ran all six runs."""
    root = write_letor_folds(tmp_path / "data", 4, 6, 4, single_grade={"train.txt": (1, 2)})
    from ltrboost.io.letor import dump_svmlight

    d = load_svmlight(root / "Fold4" / "train.txt")
    y = d.y.copy()
    y[d.qid == 1] = np.arange((d.qid == 1).sum()) % 3  # every query two grades or more
    y[d.qid == 2] = np.arange((d.qid == 2).sum()) % 3
    dump_svmlight(root / "Fold4" / "train.txt", d.X, y, d.qid)
    out = tmp_path / "report"
    argv = ["experiment", root, "--output", out, "--protocol", "qbrank", "--max-trees", "2"]
    rc, _, err = run([*argv, "--min-samples-leaf", "2", "--n-threads", "1", "-q"], capsys)
    assert rc != 0
    assert not out.exists(), sorted(os.listdir(out))
    assert "L1 is empty" in err, err
    assert str(root / "Fold4") in err, err


def test_experiment_a_fold4_threshold_refusal_names_the_fold(tmp_path, write_letor_folds):
    """An objective's refusal that names no file (``relevance_threshold`` under
    ``lambda_metric='map'``, Python's ``system_params``) fails before any cell trains,
    naming the fold and its training file."""
    from ltrboost.experiment import run_experiment

    root = _folds(tmp_path, write_letor_folds)
    for k in (1, 2, 3):  # grade 3 in every training file but fold 4's
        with open(root / f"Fold{k}" / "train.txt", "a") as f:
            f.write("3 qid:99 1:0.5\n0 qid:99 1:0.1\n")
    out = tmp_path / "report"
    with pytest.raises(ValueError, match=r"^fold 4/4 ") as e:
        run_experiment(
            str(root),
            str(out),
            systems=("lambdamart",),
            criteria=("se",),
            leaves=(4,),
            learning_rates=(0.1,),
            max_trees=2,
            min_samples_leaf=2,
            n_threads=1,
            progress=False,
            system_params={"lambdamart": {"lambda_metric": "map", "relevance_threshold": 3}},
        )
    msg = str(e.value)
    assert msg.startswith(f"fold 4/4 ({root / 'Fold4' / 'train.txt'}): lambdamart: "), msg
    assert "relevance_threshold=3 counts no training document relevant" in msg, msg
    assert not out.exists()

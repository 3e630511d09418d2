"""Small ``ltrboost cv`` / ``ltrboost experiment`` / RankLib export defects of a sixth
adversarial pass: folds ordered as numbers (``Fold2`` before ``Fold10``), cv's errors
inside a fold naming the fold, each message naming the option as its reader spells it
(``--flag`` on the command line, ``parameter=`` in Python), and the report folder's
problems naming ``--output``."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from ltrboost.cli import main
from ltrboost.experiment import find_folds, run_experiment
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

ARGS = ["--max-trees", "2", "--min-samples-leaf", "2", "--n-threads", "1", "--quiet"]
FAST = ["--n-estimators", "2", "--min-samples-leaf", "2", "--n-threads", "1", "-q"]


@pytest.fixture
def fold_2_and_10(tmp_path, write_letor_folds):
    """``Fold2`` and ``Fold10`` (``Fold1`` renamed): as text, Fold10 sorts first."""
    root = write_letor_folds(tmp_path / "data", 2, 6, 4)
    (root / "Fold1").rename(root / "Fold10")
    return root


# ---------------------------------------------------------------- 1. fold order
def test_fold_sort_key_orders_numbers_as_numbers():
    from ltrboost.experiment import fold_sort_key

    names = ["Fold10", "Fold2", "Fold1", "Fold1b", "Fold01", "Seed3", "Fold²"]
    assert sorted(names, key=fold_sort_key) == [
        "Fold01",
        "Fold1",
        "Fold1b",
        "Fold2",
        "Fold10",
        "Fold²",
        "Seed3",
    ]


def test_find_folds_puts_fold2_before_fold10(fold_2_and_10):
    """``find_folds`` sorted the folder names as text: Fold1, Fold10, Fold2, ... on a
    10-fold set; the cells trained, and the records listed them, in that order."""
    assert [f[0] for f in find_folds(str(fold_2_and_10))] == ["Fold2", "Fold10"]


def test_experiment_records_list_fold2_before_fold10(fold_2_and_10, tmp_path, capsys):
    out = tmp_path / "r"
    rc, _, err = run(
        ["experiment", fold_2_and_10, "-o", out, "--systems", "lambdamart", "--leaves", "4",
         "--learning-rates", "0.1", "--criteria", "se", *ARGS],
        capsys,
    )  # fmt: skip
    assert rc == 1, err  # no 'ole' cell: the table is empty, the records are written
    for name in ("final_loss.csv", "iterations.csv"):
        with open(out / name) as f:
            folds = list(dict.fromkeys(r["fold"] for r in csv.DictReader(f)))
        assert folds == ["Fold2", "Fold10"], name


def test_experiment_paired_folds_and_training_order_are_numeric(
    fold_2_and_10, tmp_path, monkeypatch
):
    import ltrboost.experiment as experiment

    seen = []
    real = experiment._fold_datasets
    monkeypatch.setattr(
        experiment,
        "_fold_datasets",
        lambda paths, na, nf=None: seen.append(paths[0]) or real(paths, na, nf),
    )
    run_experiment(
        str(fold_2_and_10), str(tmp_path / "r"), systems=("lambdamart",), leaves=(4,),
        learning_rates=(0.1,), max_trees=2, min_samples_leaf=2, n_threads=1, progress=False,
    )  # fmt: skip
    # the check before training reads Fold10, then Fold2, which it keeps for the first
    # cells to train; Fold10 is read again for its own cells, after Fold2's
    assert ["Fold2" in p for p in seen] == [False, True, False]


def test_qbrank_report_lists_fold2_before_fold10(tmp_path, write_letor_folds, capsys):
    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    root = write_letor_folds(tmp_path / "data", 2, 8, 5, single)
    (root / "Fold1").rename(root / "Fold10")
    out = tmp_path / "r"
    rc, _, err = run(["experiment", root, "--protocol", "qbrank", "-o", out, *ARGS], capsys)
    assert rc == 0, err
    assert "(Fold2, Fold10)" in (out / "table.md").read_text()
    assert json.loads((out / "results.json").read_text())["folds"] == ["Fold2", "Fold10"]
    with open(out / "dcg5.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["run"] == "ranksvm_p2"]
    assert [r["fold"] for r in rows] == ["Fold2", "Fold10"]


# ------------------------------------------------------- 2. cv: the fold in errors
def _graded(path, n_queries=6):
    """Grades 0-2, and 0-3 in query 1 alone: a fold without query 1 in training has
    no grade 3."""
    rng = np.random.default_rng(3)
    path.write_text(
        "".join(
            f"{(d % 4) if q == 1 else (d % 3)} qid:{q} 1:{rng.random():.3f} 2:{rng.random():.3f}\n"
            for q in range(1, n_queries + 1)
            for d in range(5)
        )
    )
    return path


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--lambda-metric", "map", "--relevance-threshold", "3"],
         "--relevance-threshold=3 counts no training document relevant"),
        (["--objective", "logistic_rank", "--positive-threshold", "3"],
         "--positive-threshold=3 makes every training document negative"),
    ],
)  # fmt: skip
def test_cv_error_inside_a_fold_names_the_fold(tmp_path, capsys, flags, says):
    """The fold whose training queries lack grade 3 failed with the parameter's error
    alone: which fold, of how many, was not said (its warnings say ``fold 2/3: ``)."""
    from ltrboost.cli import query_folds
    from ltrboost.io.letor import load_svmlight

    data = _graded(tmp_path / "g.txt")
    rc, _, err = run(["cv", data, "--folds", "3", *flags, *FAST], capsys)
    qid = load_svmlight(str(data)).qid
    k = int(query_folds(qid, 3, 0)[qid == 1][0])
    line = one_line_error(rc, err.replace(_warnings(err), ""), says)
    assert line.startswith(f"ltrboost: error: fold {k + 1}/3: --"), line
    assert "_threshold" not in line, line


def _warnings(err: str) -> str:
    return "".join(s + "\n" for s in err.splitlines() if s.startswith("ltrboost: warning:"))


# --------------------------------------------- 3. one spelling per reader (RankLib)
def _nan_model():
    from ltrboost.booster import train
    from ltrboost.dataset import make_dataset
    from ltrboost.params import BoosterParams

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    X[rng.random(200) < 0.3, 0] = np.nan
    y = (np.nan_to_num(X[:, 0], nan=3.0) > 0.5).astype(float) + (X[:, 1] > 0)
    qid = np.repeat(np.arange(20), 10)
    params = BoosterParams(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=5, n_threads=1)
    return train(params, make_dataset(X, y, qid=qid))


def test_ranklib_refusal_in_python_names_the_parameter_only():
    """The refusal said "pass assume_no_missing=True / --assume-no-missing": a Python
    caller has no flag."""
    from ltrboost.export import ExportError, export_bytes

    with pytest.raises(ExportError) as e:
        export_bytes(_nan_model(), "ranklib")
    msg = str(e.value)
    assert "assume_no_missing=True" in msg
    assert "--" not in msg, msg
    assert "\n" not in msg


def test_ranklib_refusal_on_the_cli_names_the_flag_only(tmp_path, capsys):
    """... and ``ltrboost export`` printed the same, a Python keyword its user cannot
    give; now ``--assume-no-missing`` and ``--format xgboost-dump`` alone."""
    model = tmp_path / "m.json"
    _nan_model().save_model(str(model))
    out = tmp_path / "m.xml"
    rc, _, err = run(["export", model, "-f", "ranklib", "-o", out], capsys)
    line = one_line_error(rc, err, "--assume-no-missing", "--format xgboost-dump")
    assert "assume_no_missing" not in line, line
    assert "format 'xgboost-dump'" not in line, line
    assert not out.exists()


def test_feature_name_refusal_names_one_spelling(tmp_path, capsys):
    """A feature name the format's consumer rejects: "pass other names (feature_names=,
    or --feature-names FILE)" to both readers."""
    from ltrboost.export import ExportError, export_bytes

    booster = _nan_model()
    with pytest.raises(ExportError) as e:
        export_bytes(booster, "lightgbm", ["a", "b:{", "c"])
    assert "feature_names=" in str(e.value)
    assert "--feature-names" not in str(e.value)
    model, names = tmp_path / "m.json", tmp_path / "names.txt"
    booster.save_model(str(model))
    names.write_text("a\nb:{\nc\n")
    out = tmp_path / "m.txt"
    rc, _, err = run(
        ["export", model, "-f", "lightgbm", "-o", out, "--feature-names", names], capsys
    )
    line = one_line_error(rc, err, "--feature-names")
    assert "feature_names=" not in line, line
    assert not out.exists()


def test_feature_name_with_a_space_names_one_spelling(tmp_path, capsys):
    """A feature name with a space (which LightGBM's file cannot hold): the same
    "(feature_names=, or --feature-names FILE)" to both readers."""
    from ltrboost.export import ExportError, export_bytes

    booster = _nan_model()
    with pytest.raises(ExportError) as e:
        export_bytes(booster, "lightgbm", ["a", "b c", "d"])
    assert "feature_names=" in str(e.value)
    assert "--feature-names" not in str(e.value)
    model, names = tmp_path / "m.json", tmp_path / "names.txt"
    booster.save_model(str(model))
    names.write_text("a\nb c\nd\n")
    out = tmp_path / "m.txt"
    rc, _, err = run(
        ["export", model, "-f", "lightgbm", "-o", out, "--feature-names", names], capsys
    )
    line = one_line_error(rc, err, "--feature-names FILE", "'b c'")
    assert "feature_names=" not in line, line
    assert not out.exists()


# ------------------------------------------- 4. cv / experiment flags, adversarially
@pytest.mark.parametrize("below", ["", "sub"])
@pytest.mark.parametrize("protocol", ["xia", "qbrank"])
def test_experiment_output_that_is_a_file_names_output(tmp_path, capsys, protocol, below):
    """``-o FILE`` said "FILE/cells: Not a directory" (``-o FILE/sub``: "FILE/sub: Not a
    directory"), naming neither --output nor the file in the way; the file is kept."""
    root = tmp_path / "data"
    (root / "Fold1").mkdir(parents=True)
    for name in ("train.txt", "vali.txt", "test.txt"):
        (root / "Fold1" / name).write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    taken = tmp_path / "report"
    taken.write_text("mine\n")
    out = taken / below if below else taken
    rc, _, err = run(["experiment", root, "-o", out, "--protocol", protocol, *ARGS], capsys)
    line = one_line_error(rc, err, "--output", "a file, not a folder")
    if below:
        assert f"({taken} is a file)" in line, line
    assert taken.read_text() == "mine\n"


def test_run_experiment_output_that_is_a_file_names_the_parameter(tmp_path):
    taken = tmp_path / "report"
    taken.write_text("mine\n")
    with pytest.raises(ValueError, match=r"^output='.*report' names a file, not a folder"):
        run_experiment(str(tmp_path / "nowhere"), str(taken))


@pytest.mark.parametrize("command", ["cv", "train"])
def test_seed_points_at_random_state(tmp_path, capsys, command):
    """``cv --seed 3`` offered nothing and ``train --seed 3`` "did you mean --unbiased?";
    the seed flag is --random-state."""
    status = main([command, str(tmp_path / "absent.txt"), "--seed", "3"])
    err = capsys.readouterr().err
    line = one_line_error(status, err, "unrecognized arguments: --seed 3")
    assert "did you mean --random-state?" in line, line


def test_seed_on_experiment_offers_no_flag_it_lacks(tmp_path, capsys):
    """experiment has no seed flag: nothing is offered."""
    status = main(["experiment", str(tmp_path), "--seed", "3"])
    err = capsys.readouterr().err
    line = one_line_error(status, err, "unrecognized arguments: --seed 3")
    assert "did you mean" not in line, line

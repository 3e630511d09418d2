"""``ltrboost experiment`` (both protocols): inputs an eleventh adversarial pass found
mishandled -- folds whose validation or test file no ranking changes, warnings that
named no cell, a one-fold standard deviation of 0, rounding in the paired test's
"every value the same" case, a fold named ``.``, and compressed fold files skipped."""

from __future__ import annotations

import gzip
import json
import warnings

import numpy as np
import pytest

import ltrboost.experiment as experiment
from ltrboost.experiment import run_experiment, t_interval
from ltrboost.experiment_qbrank import Settings, run_qbrank_experiment
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

KW = dict(max_trees=2, min_samples_leaf=2, n_threads=1, progress=False)
GRID = dict(systems=("lambdamart",), leaves=(4,), learning_rates=(0.1,))
ARGS = ["--max-trees", "2", "--min-samples-leaf", "2", "--n-threads", "1", "--quiet"]
ARGS += ["--systems", "lambdamart", "--leaves", "4", "--learning-rates", "0.1"]
EVERY_QUERY = tuple(range(12))  # write_letor_folds' query ids
# write_letor_folds numbers every file's queries 0..11, as some LETOR sets do
pytestmark = pytest.mark.filterwarnings("ignore::ltrboost.io.letor.SharedQueriesWarning")


@pytest.mark.parametrize(("name", "what"), [("vali.txt", "validation"), ("test.txt", "test")])
def test_fold_file_without_a_query_of_two_grades_is_an_error(
    tmp_path, write_letor_folds, monkeypatch, capsys, name, what
):
    """A fold's validation (or test) file whose every query has one grade (no judged
    query: all 0) gives the same NDCG@10 and ERR whatever the scores: every cell's
    best iteration was its first tree, unsaid, and the test metrics of such a fold
    were 100.00 / 100.00.  ``--protocol qbrank`` refused it; the default protocol
    does too now, naming the file, before any cell trains."""
    folds = write_letor_folds(tmp_path / "data", 2, 8, 5, {name: EVERY_QUERY})
    trained = []
    monkeypatch.setattr(experiment, "_train_cell", lambda *a: trained.append(1))
    out = tmp_path / "r"
    with pytest.raises(ValueError, match=f"{name}: no {what} query with two grades"):
        run_experiment(str(folds), str(out), **GRID, **KW)
    assert not trained
    assert not out.exists()
    rc, _, err = run(["experiment", folds, "-o", out, *ARGS], capsys)
    one_line_error(rc, err, f"/{name}: no {what} query with two grades")
    assert not out.exists()


def test_training_warnings_name_the_cell(tmp_path, write_letor_folds):
    """A warning of a cell's training ("every tree is one leaf ...") named neither the
    fold nor the cell: on a grid of 60 cells nobody could tell which.  It is said
    with the cell's name (the name of its file in ``cells/``)."""
    folds = write_letor_folds(tmp_path / "data", 2, 8, 5)
    kw = {**KW, "min_samples_leaf": 1000}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_experiment(str(folds), str(tmp_path / "r"), **GRID, **kw)
    texts = [str(w.message) for w in caught if "every tree is one leaf" in str(w.message)]
    for fold in ("Fold1", "Fold2"):
        for c in ("se", "ole"):
            key = f"lambdamart_{c}_L4_lr0.1_{fold}"
            assert any(t.startswith(f"cell {key}: ") for t in texts), texts
    assert all(t.startswith("cell lambdamart_") for t in texts), texts


def test_qbrank_run_warnings_name_the_fold_and_run(tmp_path, write_letor_folds):
    """The same for ``--protocol qbrank``: the fold and the run (``GBT(L1)``) lead."""
    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    folds = write_letor_folds(tmp_path / "data", 2, 8, 5, single)
    settings = Settings(n_estimators=2, min_samples_leaf=1000, ranksvm_c_grid=(1.0,))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_qbrank_experiment(str(folds), str(tmp_path / "r"), settings=settings, progress=False)
    texts = [str(w.message) for w in caught if "every tree is one leaf" in str(w.message)]
    assert any(t.startswith("Fold1: GBT(L1): ") for t in texts), texts
    assert any(t.startswith("Fold2: GBT(L2): ") for t in texts), texts
    assert all(t.startswith(("Fold1: ", "Fold2: ")) for t in texts), texts


def test_qbrank_sd_of_one_fold_is_not_zero(tmp_path, write_letor_folds):
    """With one fold, ``table.md`` gave DCG-5 as ``3.7560 ± 0.0000`` and results.json an
    sd of 0.0: the spread of one value is not known, not nil.  It is ``nan`` in the
    table and ``null`` in results.json, as the default protocol's paired test gives
    the interval of one fold."""
    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    folds = write_letor_folds(tmp_path / "data", 1, 8, 5, single)
    out = tmp_path / "r"
    settings = Settings(n_estimators=2, min_samples_leaf=2, ranksvm_c_grid=(1.0,))
    run_qbrank_experiment(str(folds), str(out), settings=settings, progress=False)
    table = (out / "table.md").read_text(encoding="utf-8")
    assert "± 0.0000" not in table
    assert "± nan" in table
    text = (out / "results.json").read_text()
    assert "NaN" not in text  # strict JSON
    res = json.loads(text)
    for run_ in ("gbt_l1", "ranksvm_p2"):
        assert res["dcg5_at_vali_iteration_mean_sd"][run_][1] is None
        assert res["precision_after_last_tree_mean_sd"][run_]["100"][1] is None


@pytest.mark.parametrize(("value", "n"), [(0.1, 3), (0.1, 7), (0.3, 10)])
def test_t_interval_of_equal_values_is_the_value(value, n):
    """``t_interval`` promises ``(mean, mean)`` and p 0 or 1 when every value is the same;
    three OLE - SE differences of 0.1 gave a mean of 0.10000000000000002, an interval
    around it 4e-17 wide and p = 1e-32 (the mean's rounding made a spread)."""
    mean, lo, hi, p = t_interval(np.full(n, value))
    assert mean == lo == hi == value
    assert p == 0.0


def test_folder_given_as_dot_names_the_fold_by_its_folder(tmp_path, write_letor_folds, monkeypatch):
    """``ltrboost experiment .`` inside a fold's folder named the fold ``.``: cell files
    ``lambdamart_se_L4_lr0.1_..json``, ``.`` in the report's fold column, and the same
    fold given by its path trained again."""
    folds = write_letor_folds(tmp_path / "data", 1, 8, 5)
    out = tmp_path / "r"
    monkeypatch.chdir(folds / "Fold1")
    run_experiment(".", str(out), **GRID, **KW)
    names = sorted(p.name for p in (out / "cells").iterdir())
    assert names == ["lambdamart_ole_L4_lr0.1_Fold1.json", "lambdamart_se_L4_lr0.1_Fold1.json"]
    assert ",Fold1," in (out / "iterations.csv").read_text()


def _gzip_fold(d):
    for name in ("train.txt", "vali.txt", "test.txt"):
        p = d / name
        (d / (name + ".gz")).write_bytes(gzip.compress(p.read_bytes()))
        p.unlink()


def test_a_compressed_fold_is_not_skipped(tmp_path, write_letor_folds, monkeypatch, capsys):
    """A fold whose files are still compressed (``Fold2/train.txt.gz ...``: the others
    decompressed, this one not yet) held none of the three names and was skipped: the
    report averaged Fold1 alone, unsaid.  It is an error naming the fold and the file."""
    folds = write_letor_folds(tmp_path / "data", 2, 8, 5)
    _gzip_fold(folds / "Fold2")
    trained = []
    monkeypatch.setattr(experiment, "_train_cell", lambda *a: trained.append(1))
    out = tmp_path / "r"
    with pytest.raises(ValueError, match=r"Fold2: holds train\.txt\.gz.*decompress"):
        run_experiment(str(folds), str(out), **GRID, **KW)
    assert not trained
    rc, _, err = run(["experiment", folds, "-o", out, "--protocol", "qbrank", "-q"], capsys)
    one_line_error(rc, err, "Fold2: holds train.txt.gz", "decompress")
    assert not out.exists()

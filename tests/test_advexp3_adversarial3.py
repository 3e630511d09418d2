"""``ltrboost experiment`` (both protocols) and ``ltrboost cv``: inputs a third adversarial
pass found mishandled -- each now does what its flag says, or fails up front with one
line naming the flag or file."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from ltrboost.experiment import find_folds, run_experiment
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

KW = dict(max_trees=2, min_samples_leaf=2, n_threads=1, progress=False)
GRID = dict(systems=("mcrank",), leaves=(4,), learning_rates=(0.1,))
QB = ["--protocol", "qbrank", "--max-trees", "2", "--min-samples-leaf", "2", "--quiet"]


@pytest.fixture
def folds(tmp_path, write_letor_folds):
    return lambda n_folds=1: write_letor_folds(tmp_path / "data", n_folds, 10, 6)


@pytest.fixture
def qb_folds(tmp_path, write_letor_folds):
    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    return write_letor_folds(tmp_path / "qb", 1, 8, 5, single)


def test_a_folder_named_like_a_glob_pattern_finds_its_folds(folds, tmp_path):
    """``experiment 'runs[1]'`` said "no Fold*/ or Seed*/ ... found": the folder name was
    read as a glob pattern ([1] = the character 1)."""
    root = tmp_path / "runs[1]"
    shutil.copytree(folds(2), root)
    assert [f[0] for f in find_folds(str(root))] == ["Fold1", "Fold2"]


@pytest.mark.parametrize("protocol", [[], QB])
def test_an_empty_output_is_refused_not_the_working_directory(
    folds, tmp_path, capsys, monkeypatch, protocol
):
    """``-o ''`` wrote cells/, table.md, ... into the working directory and ended with
    "report written to " (train and convert refuse an empty output)."""
    monkeypatch.chdir(tmp_path)
    root = folds()
    flags = protocol or ["--max-trees", "2", "--min-samples-leaf", "2", "--quiet"]
    rc, _, err = run(["experiment", root, "-o", "", *flags], capsys)
    one_line_error(rc, err, "--output", "empty")
    assert not (tmp_path / "cells").exists()
    assert not (tmp_path / "folds").exists()
    assert not (tmp_path / "table.md").exists()


def test_cv_negative_random_state_names_the_flag(folds, capsys):
    """``cv --objective mart --random-state -1`` failed with NumPy's "expected
    non-negative integer", naming neither the flag nor the value."""
    data = folds() / "Fold1" / "train.txt"
    argv = ["cv", data, "--folds", "3", "--n-estimators", "2", "--objective", "mart"]
    rc, _, err = run([*argv, "--random-state", "-1"], capsys)
    one_line_error(rc, err, "--random-state", "-1")


def test_paired_json_is_strict_json_with_one_fold(folds, tmp_path):
    """With one fold (or the folder itself) the intervals over folds are undefined and
    paired.json held ``NaN``, which is not JSON (JavaScript's JSON.parse, jq < 1.7 and
    every strict reader refuse it)."""
    out = tmp_path / "r"
    summary = run_experiment(str(folds()), str(out), **GRID, **KW)

    def strict(token):
        raise ValueError(f"not JSON: {token}")

    paired = json.loads((out / "paired.json").read_text(), parse_constant=strict)
    r = paired["mcrank"]["ndcg@10"]["folds"]
    assert r["n"] == 1
    assert r["ci95"] == [None, None]
    assert r["p"] is None
    # the Python summary keeps its NaN floats; the table still shows nan
    assert math.isnan(summary["paired"]["mcrank"]["ndcg@10"]["folds"]["p"])
    assert "nan" in (out / "paired.md").read_text()


def _with_null_token(root):
    """A copy of every file of ``root`` whose first feature value is ``NULL``."""
    for p in root.rglob("*.txt"):
        lines = p.read_text().splitlines()
        first = lines[0].split(" ")
        first[2] = first[2].split(":")[0] + ":NULL"
        p.write_text("\n".join([" ".join(first), *lines[1:]]) + "\n")
    return root


def test_resume_with_another_missing_token_is_refused(folds, tmp_path):
    """The missing-value tokens change the data read, yet a run with ``na_values=["NULL",
    "NA"]`` resumed the cells of ``["NULL"]`` silently (the files have the same sizes)."""
    root = _with_null_token(folds())
    out = tmp_path / "r"
    run_experiment(str(root), str(out), **GRID, **KW, na_values=["NULL"])
    # the same tokens, in another order or repeated, are the same data
    run_experiment(str(root), str(out), **GRID, **KW, na_values=("NULL", "NULL"))
    with pytest.raises(ValueError, match=r"na_values \['NULL'\] \(this run: \['NA', 'NULL'\]\)"):
        run_experiment(str(root), str(out), **GRID, **KW, na_values=["NULL", "NA"])


def test_bad_missing_token_fails_before_any_cell(folds, tmp_path):
    out = tmp_path / "r"
    with pytest.raises(ValueError, match=r"na_values entry '1\.5' is a number"):
        run_experiment(str(folds(2)), str(out), **GRID, **KW, na_values=["1.5"])
    assert not (out / "cells").exists() or not list((out / "cells").iterdir())


def test_system_params_for_a_system_not_run_is_an_error(folds, tmp_path):
    """``system_params={"ranknet": ...}`` without ranknet among the systems was ignored
    silently (``system_grids`` is refused the same way)."""
    with pytest.raises(ValueError, match=r"system_params names \['ranknet'\]"):
        run_experiment(
            str(folds()),
            str(tmp_path / "r"),
            **GRID,
            **KW,
            system_params={"ranknet": {"pair_method": "topk"}},
        )


def test_qbrank_rerun_with_other_settings_names_what_it_replaces(qb_folds, tmp_path, capsys):
    """A finished fold made with other settings was recomputed and replaced silently
    (README: experiment names the difference); now a warning names it."""
    out = tmp_path / "q"
    rc, _, err = run(["experiment", qb_folds, "-o", out, *QB], capsys)
    assert rc == 0, err
    rc, _, err = run(["experiment", qb_folds, "-o", out, *QB, "--ties"], capsys)
    assert rc == 0, err
    assert "Fold1.json: this finished fold was made with --ties False (this run: True)" in err
    assert "computing it again" in err
    # the same settings again: kept, no warning
    rc, _, err = run(["experiment", qb_folds, "-o", out, *QB, "--ties"], capsys)
    assert rc == 0, err
    assert "warning" not in err


@pytest.mark.parametrize(("key", "value"), [("settings", [1]), ("data", "x")])
def test_finished_cell_with_settings_or_data_not_an_object_is_a_named_error(
    folds, tmp_path, capsys, key, value
):
    """A hand-edited cell whose ``settings`` or ``data`` was not an object passed the
    shape check and failed with AttributeError: 'list' object has no attribute 'get'."""
    root = folds()
    out = tmp_path / "r"
    flags = ["--systems", "mcrank", "--leaves", "4", "--learning-rates", "0.1"]
    flags += ["--max-trees", "2", "--min-samples-leaf", "2", "--quiet"]
    rc, _, err = run(["experiment", root, "-o", out, *flags], capsys)
    assert rc == 0, err
    path = out / "cells" / "mcrank_se_L4_lr0.1_Fold1.json"
    record = json.loads(path.read_text())
    record[key] = value
    path.write_text(json.dumps(record))
    rc, _, err = run(["experiment", root, "-o", out, *flags], capsys)
    one_line_error(rc, err, "mcrank_se_L4_lr0.1_Fold1.json", f"{key} ", "delete it")


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda f: f["runs"]["gbt_l1"].pop("dcg5"), "runs.gbt_l1.dcg5"),
        (lambda f: f["runs"]["qbrank_p2"]["precision_vali"].pop("50"), "precision_vali"),
        (lambda f: f["runs"]["gbt_l2"].update(iteration_vali=99), "iteration_vali 99"),
        (lambda f: f["runs"].update(ranksvm_p2=[]), "runs.ranksvm_p2"),
        (lambda f: f.pop("queries"), "queries"),
    ],
)
def test_qbrank_finished_fold_of_the_wrong_shape_is_a_named_error(
    qb_folds, tmp_path, capsys, edit, needle
):
    """A hand-edited folds/FoldK.json holding every run but not what the report reads
    passed the resume check and the report failed with KeyError: 'dcg5' (or an
    IndexError for an iteration its curves do not have)."""
    out = tmp_path / "q"
    rc, _, err = run(["experiment", qb_folds, "-o", out, *QB], capsys)
    assert rc == 0, err
    path = out / "folds" / "Fold1.json"
    fold = json.loads(path.read_text())
    edit(fold)
    path.write_text(json.dumps(fold))
    rc, _, err = run(["experiment", qb_folds, "-o", out, *QB], capsys)
    one_line_error(rc, err, "Fold1.json", needle, "delete it")


@pytest.mark.parametrize("grid", ["leaves", "system_grids"])
def test_fractional_leaves_are_refused_not_truncated(folds, tmp_path, grid):
    """``leaves=(4.7,)`` trained (and reported) 4-leaf cells: int() truncated it."""
    kw = {**GRID, **KW}
    if grid == "leaves":
        kw["leaves"] = (4.7,)
    else:
        kw["system_grids"] = {"mcrank": ((4.7,), (0.1,))}
    with pytest.raises(ValueError, match=r"leaves value 4\.7 is not a whole number"):
        run_experiment(str(folds()), str(tmp_path / "r"), **kw)
    assert not (tmp_path / "r" / "cells").exists()


def test_a_cell_replaced_by_a_concurrent_run_is_not_reported(folds, tmp_path, monkeypatch):
    """Two runs into one output folder (the default ``experiment-report``) with other
    settings: a cell the other run wrote after this run's check was put in this run's
    table silently, a report mixing tree caps."""
    import ltrboost.experiment as experiment

    root = folds()
    out = tmp_path / "r"
    written = []
    real_write = experiment.atomic_write_text

    def write(path, text):
        real_write(path, text)
        written.append(path)
        if len(written) == 2:  # the other run replaces this run's first cell
            other = json.loads(text)
            other["settings"]["max_trees"] = 99
            real_write(written[0], json.dumps(other))

    monkeypatch.setattr(experiment, "atomic_write_text", write)
    with pytest.raises(ValueError, match=r"max_trees 99 \(this run: 2\).*another run writes"):
        run_experiment(str(root), str(out), **GRID, **KW)
    assert not (out / "table.md").exists()

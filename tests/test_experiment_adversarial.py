"""``ltrboost experiment`` (both protocols) on inputs an adversarial pass found
mishandled: each now fails up front with a one-line error naming the flag or file, or
does what its flag says, and no report file is ever half-written."""

from __future__ import annotations

import os

import pytest

from ltrboost.experiment import run_experiment
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

KW = dict(max_trees=2, min_samples_leaf=2, n_threads=1, progress=False)


@pytest.fixture
def folds(tmp_path, write_letor_folds):
    return lambda n_folds=1: write_letor_folds(tmp_path / "data", n_folds, 10, 6)


def test_bad_grid_value_fails_before_any_cell_is_trained(folds, tmp_path):
    """``--leaves 4,1`` used to train every 4-leaf cell (hours on real data) and only
    then fail on the first 1-leaf cell."""
    root = folds()
    out = tmp_path / "r"
    with pytest.raises(ValueError, match="max_leaf_nodes=1"):
        run_experiment(str(root), str(out), leaves=(4, 1), learning_rates=(0.1,), **KW)
    assert not (out / "cells").exists() or not os.listdir(out / "cells")
    with pytest.raises(ValueError, match="split_criterion='sse'"):
        run_experiment(str(root), str(out), criteria=("se", "sse"), **KW)
    assert not (out / "cells").exists() or not os.listdir(out / "cells")


@pytest.mark.parametrize(
    ("flag", "value", "needle"),
    [
        ("--leaves", "", "--leaves"),
        ("--learning-rates", ",", "--learning-rates"),
        ("--criteria", "", "--criteria"),
        ("--systems", "", "--systems"),
        ("--leaves", "ten", "--leaves"),
        ("--learning-rates", "0.1,fast", "--learning-rates"),
    ],
)
def test_empty_or_malformed_grid_flag_is_a_one_line_error(
    folds, tmp_path, capsys, flag, value, needle
):
    """An empty list ran nothing and reported 'the table is empty'; a word in a list
    said only "invalid literal for int() with base 10: 'ten'"."""
    root = folds()
    rc, _, err = run(["experiment", root, "-o", tmp_path / "r", flag, value], capsys)
    one_line_error(rc, err, needle)


def test_system_grid_for_a_system_not_run_is_an_error(folds, tmp_path, capsys):
    """``--system-grid rankent=...`` (a typo) or a grid for a system not in --systems
    was silently ignored."""
    root = folds()
    for spec in ("rankent=4:0.1", "ranknet=4:0.1"):
        rc, _, err = run(
            ["experiment", root, "-o", tmp_path / "r", "--systems", "lambdamart",
             "--system-grid", spec],
            capsys,
        )  # fmt: skip
        one_line_error(rc, err, "--system-grid", spec.split("=")[0])


def test_ranknet_pair_method_without_ranknet_is_an_error(folds, tmp_path, capsys):
    """--ranknet-pair-method topk with the default --systems (no ranknet) did nothing."""
    rc, _, err = run(
        ["experiment", folds(), "-o", tmp_path / "r", "--ranknet-pair-method", "topk"], capsys
    )
    one_line_error(rc, err, "--ranknet-pair-method", "--systems")


def test_repeated_grid_values_train_each_cell_once(folds, tmp_path, monkeypatch):
    import ltrboost.booster

    root = folds()
    calls = []
    real = ltrboost.booster._train  # the protocol's training (train() less its leak check)

    def counting_train(params, *a, **k):
        calls.append((params.split_criterion, params.max_leaf_nodes, params.learning_rate))
        return real(params, *a, **k)

    monkeypatch.setattr(ltrboost.booster, "_train", counting_train)
    summary = run_experiment(
        str(root), str(tmp_path / "r"), systems=("lambdamart", "lambdamart"),
        leaves=(4, 4), learning_rates=(0.1, 0.10), **KW,
    )  # fmt: skip
    assert sorted(calls) == [("ole", 4, 0.1), ("se", 4, 0.1)]
    assert summary["n_cells"] == 4  # one row of 4 metrics


def test_spaces_in_grid_lists_are_ignored(folds, tmp_path, capsys):
    root = folds()
    rc, out, err = run(
        ["experiment", root, "-o", tmp_path / "r", "--systems", "lambdamart, ranknet",
         "--criteria", "se, ole", "--leaves", "4", "--learning-rates", "0.1",
         "--max-trees", "2", "--min-samples-leaf", "2", "--n-threads", "1", "--quiet"],
        capsys,
    )  # fmt: skip
    assert rc == 0, err
    assert "ranknet" in out


def test_learning_rates_equal_to_6_digits_are_different_cells(folds, tmp_path):
    """Cell files were named with ``{lr:g}``: 0.1 and 0.1000001 shared one file, the
    second cell overwrote the first and the table showed two identical rows."""
    root = folds()
    out = tmp_path / "r"
    run_experiment(
        str(root), str(out), systems=("lambdamart",), criteria=("se",), leaves=(4,),
        learning_rates=(0.1, 0.1000001), **KW,
    )  # fmt: skip
    assert sorted(os.listdir(out / "cells")) == [
        "lambdamart_se_L4_lr0.1000001_Fold1.json",
        "lambdamart_se_L4_lr0.1_Fold1.json",
    ]


def test_report_files_are_written_atomically(folds, tmp_path, monkeypatch):
    """iterations.csv, final_loss.csv and ole_minus_se.csv were written in place with
    open(..., 'w'): an interrupted or failed report left them half-written (and the
    previous complete ones lost)."""
    root = folds()
    out = tmp_path / "r"
    kw = dict(systems=("lambdamart",), leaves=(4,), learning_rates=(0.1,), **KW)
    run_experiment(str(root), str(out), **kw)
    before = {n: (out / n).read_bytes() for n in ("iterations.csv", "final_loss.csv")}
    import csv

    def broken_writerow(self, row):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(csv, "writer", lambda *a, **k: type("W", (), {
        "writerow": broken_writerow, "writerows": lambda self, rows: None})())  # fmt: skip
    with pytest.raises(OSError, match="No space left"):
        run_experiment(str(root), str(out), **kw)
    for name, data in before.items():
        assert (out / name).read_bytes() == data


# --- --protocol qbrank ---


@pytest.fixture
def qb_folds(tmp_path, write_letor_folds):
    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    return write_letor_folds(tmp_path / "qdata", 1, 8, 5, single)


QB = ["--protocol", "qbrank", "--max-trees", "2", "--min-samples-leaf", "2", "--quiet"]


@pytest.mark.parametrize(
    ("content", "needle"),
    [('{"trunc', "Fold1.json"), ("[1, 2]", "Fold1.json"), ("", "Fold1.json")],
)
def test_qbrank_unreadable_finished_fold_is_a_one_line_error(
    qb_folds, tmp_path, capsys, content, needle
):
    """A damaged folds/FoldK.json said only "Invalid control character at: line 1
    column 8" (no file), and a JSON list raised AttributeError with a traceback."""
    out = tmp_path / "q"
    (out / "folds").mkdir(parents=True)
    (out / "folds" / "Fold1.json").write_text(content)
    rc, _, err = run(["experiment", qb_folds, "-o", out, *QB], capsys)
    one_line_error(rc, err, needle, "delete it")


def test_qbrank_finished_fold_missing_a_run_is_recomputed(qb_folds, tmp_path, capsys):
    """A finished fold with the same settings but without one of the six runs (an older
    or edited file) crashed the report with KeyError: 'gbt_l1'."""
    import json

    out = tmp_path / "q"
    rc, _, err = run(["experiment", qb_folds, "-o", out, *QB], capsys)
    assert rc == 0, err
    path = out / "folds" / "Fold1.json"
    saved = json.loads(path.read_text())
    del saved["runs"]["gbt_l1"]
    path.write_text(json.dumps(saved))
    rc, _, err = run(["experiment", qb_folds, "-o", out, *QB], capsys)
    assert rc == 0, err
    assert "gbt_l1" in json.loads(path.read_text())["runs"]


@pytest.mark.parametrize(
    "flags",
    [["--patience", "3"], ["--growth", "depth_first"], ["--ranknet-pair-method", "topk"]],
)
def test_qbrank_refuses_flags_it_does_not_read(qb_folds, tmp_path, capsys, flags):
    """--patience, --growth and --ranknet-pair-method were silently ignored under
    --protocol qbrank (as --ties is refused under the default protocol)."""
    rc, _, err = run(["experiment", qb_folds, "-o", tmp_path / "q", *QB, *flags], capsys)
    one_line_error(rc, err, flags[0], "qbrank")


def test_qbrank_missing_value_is_named_before_any_run(qb_folds, tmp_path, capsys):
    """A ``nan`` feature value (always missing, README) let the three GBT runs train
    and then failed in RankSVM with scikit-learn's multi-line 'Input X contains NaN'."""
    path = qb_folds / "Fold1" / "vali.txt"
    lines = path.read_text().splitlines()
    label, qid, first, *rest = lines[4].split()
    lines[4] = " ".join([label, qid, first.split(":")[0] + ":nan", *rest])
    path.write_text("\n".join(lines) + "\n")
    rc, _, err = run(["experiment", qb_folds, "-o", tmp_path / "q", *QB], capsys)
    one_line_error(rc, err, "vali.txt:5:", "missing", "RankSVM")


def test_ranksvm_on_a_single_pair():
    """One training pair gave LinearSVC one class: 'This solver needs samples of at
    least 2 classes'.  The pair and its flipped copy at half weight are the same loss."""
    import numpy as np

    from ltrboost.dataset import make_dataset
    from ltrboost.experiment_qbrank import fit_ranksvm

    X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.5], [1.0, 1.0]])
    y = np.array([1.0, 0.0, 1.0, 0.0])
    train = make_dataset(X[:2], y[:2], qid=np.array([1, 1]))
    vali = make_dataset(X[2:], y[2:], qid=np.array([2, 2]))
    coef, _, _ = fit_ranksvm(train, vali, (1.0,))
    assert coef @ (X[0] - X[1]) > 0  # the preferred document scores higher


def test_a_fold_missing_a_file_is_an_error_not_left_out(folds, tmp_path):
    """With Fold1 and Fold2 present and Fold2/test.txt missing (an interrupted copy),
    the report silently averaged over Fold1 alone."""
    from ltrboost.experiment import find_folds

    root = folds(2)
    os.remove(root / "Fold2" / "test.txt")
    with pytest.raises(ValueError, match=r"Fold2.*test\.txt"):
        find_folds(str(root))
    os.remove(root / "Fold2" / "train.txt")
    os.remove(root / "Fold2" / "vali.txt")
    (root / "Fold2" / "notes.md").write_text("not a fold")
    (root / "Folds.md").write_text("a file, not a fold")
    assert [f[0] for f in find_folds(str(root))] == ["Fold1"]  # no fold file at all: not a fold


def test_resume_on_other_data_refuses_the_finished_cells(tmp_path, write_letor_folds):
    """Cells are named by fold ('Fold1'): a rerun into the same output on another data
    set with the same fold names silently reused every finished cell, and reported
    the first data set's numbers for the second."""
    a = write_letor_folds(tmp_path / "a", 1, 10, 6)
    b = write_letor_folds(tmp_path / "b", 1, 12, 6)
    out = tmp_path / "r"
    kw = dict(systems=("lambdamart",), criteria=("se",), leaves=(4,), learning_rates=(0.1,))
    run_experiment(str(a), str(out), **kw, **KW)
    run_experiment(str(a), str(out), **kw, **KW)  # same data: resumes
    with pytest.raises(ValueError, match=r"other data files \(test\.txt .* bytes"):
        run_experiment(str(b), str(out), **kw, **KW)


def test_finished_cell_without_its_results_is_a_named_error(folds, tmp_path):
    """A cell file '{}' (or one from a foreign tool) was taken as finished and the
    report then failed with KeyError: 'curves' and a traceback."""
    root = folds()
    out = tmp_path / "r"
    (out / "cells").mkdir(parents=True)
    (out / "cells" / "lambdamart_se_L4_lr0.1_Fold1.json").write_text("{}")
    with pytest.raises(ValueError, match=r"lambdamart_se_L4_lr0\.1_Fold1\.json.*no curves"):
        run_experiment(
            str(root), str(out), systems=("lambdamart",), criteria=("se",), leaves=(4,),
            learning_rates=(0.1,), **KW,
        )  # fmt: skip


def test_qbrank_rerun_on_other_data_recomputes(tmp_path, write_letor_folds, capsys):
    """As for settings: a finished fold of other data is not kept (it was, silently)."""
    import json

    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    a = write_letor_folds(tmp_path / "a", 1, 8, 5, single)
    b = write_letor_folds(tmp_path / "b", 1, 9, 5, single)
    out = tmp_path / "q"
    rc, _, err = run(["experiment", a, "-o", out, *QB], capsys)
    assert rc == 0, err
    first = json.loads((out / "folds" / "Fold1.json").read_text())
    rc, _, err = run(["experiment", b, "-o", out, *QB[:-1]], capsys)
    assert rc == 0, err
    assert "kept from" not in err
    second = json.loads((out / "folds" / "Fold1.json").read_text())
    assert second["data"] != first["data"]
    assert second["documents"] != first["documents"]


def test_experiment_takes_missing_token(folds, tmp_path, capsys):
    """'NULL' values failed with "... (CLI: --missing-token NULL)", a flag that
    'ltrboost experiment' then refused ('unrecognized arguments')."""
    root = folds()
    path = root / "Fold1" / "train.txt"
    lines = path.read_text().splitlines()
    label, qid, first, *rest = lines[2].split()
    lines[2] = " ".join([label, qid, first.split(":")[0] + ":NULL", *rest])
    path.write_text("\n".join(lines) + "\n")
    argv = ["experiment", root, "-o", tmp_path / "r", "--systems", "lambdamart",
            "--leaves", "4", "--learning-rates", "0.1", "--max-trees", "2",
            "--min-samples-leaf", "2", "--n-threads", "1", "--quiet"]  # fmt: skip
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, "train.txt:3:", "--missing-token NULL")
    rc, _, err = run([*argv, "--missing-token", "NULL"], capsys)
    assert rc == 0, err


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("curves", [], "curves must map vali and test"),
        ("best_iteration", 10_000, "best_iteration 10000 is not a round"),
        ("test_at_best", {"ndcg@1": "high"}, "test_at_best must hold numbers"),
        ("seconds", None, "seconds None is not a number"),
    ],
)
def test_finished_cell_of_the_wrong_shape_is_a_named_error(
    tmp_path, write_letor_folds, field, value, problem
):
    """A finished cell with its keys but wrong values (hand-edited, another version)
    passed the resume check and the report then failed with a traceback."""
    import json

    root = write_letor_folds(tmp_path / "a", 1, 10, 6)
    out = tmp_path / "r"
    kw = dict(systems=("lambdamart",), criteria=("se",), leaves=(4,), learning_rates=(0.1,))
    run_experiment(str(root), str(out), **kw, **KW)
    cell = out / "cells" / "lambdamart_se_L4_lr0.1_Fold1.json"
    record = json.loads(cell.read_text())
    run_experiment(str(root), str(out), **kw, **KW)  # untouched: resumes
    record[field] = value
    cell.write_text(json.dumps(record))
    with pytest.raises(ValueError, match=rf"Fold1\.json: cannot read .*{problem}"):
        run_experiment(str(root), str(out), **kw, **KW)


def test_an_error_after_the_progress_bar_starts_gets_its_own_line(
    tmp_path, write_letor_folds, capsys
):
    """The cell bar was closed only at exit: the error was written onto the bar's
    line and the bar drawn again after it."""
    root = write_letor_folds(tmp_path / "a", 2, 10, 6)
    with open(root / "Fold2" / "vali.txt", "a") as f:
        f.write("x qid:1 1:0\n")
    argv = ["experiment", root, "-o", tmp_path / "r", "--systems", "lambdamart"]
    argv += ["--criteria", "se", "--leaves", "4", "--learning-rates", "0.1"]
    rc, _, err = run([*argv, "--max-trees", "2", "--min-samples-leaf", "2"], capsys)
    assert rc == 2
    lines = err.rstrip("\n").split("\n")
    assert lines[-1].startswith("ltrboost: error: "), lines
    assert "vali.txt" in lines[-1], lines
    assert all("ltrboost: error" not in line for line in lines[:-1]), lines

"""One grammar for metric lists (``train``, ``cv``, ``eval`` and the Python API), and
``ltrboost experiment``'s feature width and train/test query leakage: inputs a ninth
adversarial pass found handled differently by each command."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from ltrboost import Ranker, load_model
from ltrboost.cli import main
from ltrboost.experiment import run_experiment
from ltrboost.io.letor import dump_svmlight
from ltrboost.metrics import evaluate, parse_metric_list
from test_cli import assert_one_line_error as one_line_error
from test_cli import run


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("grammar")
    argv = ["generate", folder / "d", "--n-queries", "12", "--docs-per-query", "8"]
    assert main([str(a) for a in [*argv, "--n-features", "5"]]) == 0
    model = folder / "m.json"
    argv = ["train", folder / "d" / "train.txt", "--n-estimators", "2", "-q", "-o", model]
    assert main([str(a) for a in argv]) == 0
    return {
        "train": folder / "d" / "train.txt",
        "vali": folder / "d" / "vali.txt",
        "test": folder / "d" / "test.txt",
        "model": model,
    }


def _metric_run(command: str, data: dict, tmp_path: Path, metric: str, capsys) -> tuple:
    """``command`` (train / cv / eval) with ``--metric metric``: (status, stdout, stderr)."""
    if command == "train":
        argv = ["train", data["train"], "--valid", data["vali"], "--n-estimators", "2"]
        argv += ["-q", "-o", tmp_path / "out.json"]
    elif command == "cv":
        argv = ["cv", data["train"], "--folds", "2", "--n-estimators", "2", "-q", "--json"]
    else:
        argv = ["eval", data["model"], data["test"], "--json"]
    return run([*argv, "--metric", metric], capsys)


COMMANDS = ("train", "cv", "eval")


# --- 1. one grammar for --metric --------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("metric", ["", "  "])
def test_empty_metric_list_is_an_error_in_every_command(data, tmp_path, capsys, command, metric):
    """``--metric ""`` trained on the default metric in ``train`` and ``cv`` (an unset
    shell variable, ``--metric "$METRICS"``, went unnoticed) and was an error in
    ``eval``; it is the one error everywhere, naming the flag, as Python's
    ``eval_metric=""``."""
    rc, _, err = _metric_run(command, data, tmp_path, metric, capsys)
    one_line_error(rc, err, "--metric: no metric given in")
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_metric_none_is_the_default_in_every_command(data, tmp_path, capsys, command):
    """``--metric none`` meant the default in ``train`` and ``cv`` (as every training
    flag's ``none``) but was "unknown metric 'none'" in ``eval``."""
    rc, out, err = _metric_run(command, data, tmp_path, "None", capsys)
    assert rc == 0, err
    if command == "eval":
        assert list(json.loads(out)[str(data["test"])])[:-1] == parse_metric_list(
            "ndcg@1,ndcg@3,ndcg@5,ndcg@10,err@10,map"
        )
    elif command == "cv":
        assert list(json.loads(out)["summary"]) == ["ndcg@10"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("metric", ["ndcg@5,", ",ndcg@5", "ndcg@5,,map", "ndcg@5, ,map"])
def test_empty_entry_is_an_error_in_every_command(data, tmp_path, capsys, command, metric):
    """``train --metric ndcg@5,`` trained (the empty entry dropped) where ``cv`` and
    ``eval`` refused it, without naming ``--metric``; all refuse it naming the flag."""
    rc, _, err = _metric_run(command, data, tmp_path, metric, capsys)
    one_line_error(rc, err, "--metric: empty metric name", repr(metric))
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_spaces_case_and_repeats_read_alike_in_every_command(data, tmp_path, capsys, command):
    """Spaces around a name, any case and a name given twice (after canonicalisation)
    are the documented grammar of every command: ndcg@5 and map, once each."""
    rc, out, err = _metric_run(command, data, tmp_path, " NDCG@05, map ,ndcg@5", capsys)
    assert rc == 0, err
    if command == "eval":
        assert list(json.loads(out)[str(data["test"])]) == ["ndcg@5", "map", "n_queries"]
    elif command == "cv":
        assert list(json.loads(out)["summary"]) == ["ndcg@5", "map"]
    else:
        (recorded,) = load_model(tmp_path / "out.json").evals_result.values()
        assert list(recorded) == ["ndcg@5", "map"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("metric", "why"),
    [
        ("ndcg@", "unknown metric 'ndcg@'"),
        ("ndcg@0", "K must be >= 1"),
        ("ndcg@-1", "unknown metric 'ndcg@-1'"),
        ("ndcg@1.5", "unknown metric 'ndcg@1.5'"),
        ("ndcg@5,bleu", "unknown metric 'bleu'"),
    ],
)
def test_bad_names_are_one_error_in_every_command(data, tmp_path, capsys, command, metric, why):
    rc, _, err = _metric_run(command, data, tmp_path, metric, capsys)
    one_line_error(rc, err, "--metric: ", why)


def _fit(eval_metric):
    rng = np.random.default_rng(0)
    X, y, q = rng.normal(size=(80, 3)), rng.integers(0, 3, 80), np.repeat(np.arange(8), 10)
    return Ranker(n_estimators=2, eval_metric=eval_metric).fit(X, y, qid=q, eval_set=[(X, y, q)])


@pytest.mark.parametrize("value", ["ndcg@5,", ",ndcg@5", "ndcg@5,,map", ["ndcg@5", ""], ["  "]])
def test_python_eval_metric_refuses_an_empty_entry(value):
    """``Ranker(eval_metric="ndcg@5,")`` trained (``evaluate`` refused the same string),
    and ``["ndcg@5", ""]`` saved a model file that ``load_model`` refuses."""
    with pytest.raises(ValueError, match=r"empty metric name|no metric given"):
        _fit(value)


def test_python_grammar_is_the_clis():
    scores, y, offsets = np.arange(6.0), np.array([0, 1, 2, 0, 1, 2]), np.array([0, 3, 6])
    assert list(evaluate(scores, y, offsets, " NDCG@05, map ,ndcg@5")) == ["ndcg@5", "map"]
    assert list(_fit(" NDCG@05, map ,ndcg@5").evals_result_["valid_0"]) == ["ndcg@5", "map"]
    for bad in ("ndcg@5,", ""):
        with pytest.raises(ValueError, match=r"empty metric name|no metric given"):
            evaluate(scores, y, offsets, bad)


def test_a_model_recording_a_trailing_comma_still_refits(tmp_path):
    """Files written before the grammar was one recorded ``eval_metric`` as given
    (``"ndcg@10,"``): such a model loads, scores and refits (``Ranker.from_booster``
    reads the names it holds), though training now refuses the string itself."""
    path = tmp_path / "m.json"
    _fit("ndcg@10").save_model(path)
    d = json.loads(path.read_text())
    d["params"]["eval_metric"] = "NDCG@10,"
    path.write_text(json.dumps(d))
    est = Ranker.from_booster(load_model(path))
    assert est.get_params()["eval_metric"] == "NDCG@10"
    rng = np.random.default_rng(1)
    X, y, q = rng.normal(size=(80, 3)), rng.integers(0, 3, 80), np.repeat(np.arange(8), 10)
    est.fit(X, y, qid=q, eval_set=[(X, y, q)])
    assert list(est.evals_result_["valid_0"]) == ["ndcg@10"]


def test_resume_repeating_the_metric_flag_does_not_warn(data, tmp_path, capsys):
    """The original flags repeated (any spelling of the same list) resume silently."""
    first = tmp_path / "a.json"
    base = ["train", data["train"], "--valid", data["vali"], "-q"]
    rc, _, err = run([*base, "--n-estimators", "2", "--metric", "NDCG@5, map", "-o", first], capsys)
    assert rc == 0, err
    argv = [*base, "--n-estimators", "3", "--metric", "NDCG@5, map", "--resume", first]
    rc, _, err = run([*argv, "-o", tmp_path / "b.json"], capsys)
    assert rc == 0, err
    assert "warning" not in err


# --- 2. experiment --n-features -----------------------------------------------------------


KW = dict(max_trees=2, min_samples_leaf=2, n_threads=1, progress=False)
ARGS = ["--max-trees", "2", "--min-samples-leaf", "2", "--n-threads", "1", "--quiet"]
GRID = ["--systems", "lambdamart", "--criteria", "se", "--leaves", "4", "--learning-rates", "0.1"]


def _fold(root: Path, name: str, qids: dict[str, range], width: dict[str, int]) -> Path:
    """``root/name/{train,vali,test}.txt``: 8 documents a query, grades 0-2, file
    ``f`` with the query ids ``qids[f]`` and its highest feature index ``width[f]``."""
    d = root / name
    d.mkdir(parents=True)
    for k, f in enumerate(("train", "vali", "test")):
        rng = np.random.default_rng(k)
        q = np.repeat(np.asarray(qids[f]), 8)
        X = rng.normal(size=(q.size, width[f]))
        X[:, -1] = 1.0  # every line names its file's highest index
        y = rng.integers(0, 3, q.size)
        dump_svmlight(d / f"{f}.txt", X, y, q)
    return root


DISJOINT = {"train": range(0, 10), "vali": range(10, 15), "test": range(15, 20)}


def test_experiment_n_features_reads_a_wider_test_file(tmp_path, capsys):
    """A fold whose test file has a higher feature index than its training file was
    refused, with no flag to read it: ``--n-features`` reads the training data that
    wide, as ``train --n-features`` does."""
    root = _fold(tmp_path / "data", "Fold1", DISJOINT, {"train": 5, "vali": 5, "test": 7})
    out = tmp_path / "r"
    rc, _, err = run(["experiment", root, "-o", out, *GRID, *ARGS, "--n-features", "7"], capsys)
    assert rc in (0, 1), err  # 1: one criterion, so the se-vs-ole table is empty
    assert "error" not in err
    assert len(list((out / "cells").glob("*.json"))) == 1


def test_experiment_n_features_in_python(tmp_path):
    root = _fold(tmp_path / "data", "Fold1", DISJOINT, {"train": 5, "vali": 6, "test": 5})
    grid = dict(systems=("lambdamart",), criteria=("se",), leaves=(4,), learning_rates=(0.1,))
    run_experiment(str(root), str(tmp_path / "r"), n_features=6, **grid, **KW)
    assert len(list((tmp_path / "r" / "cells").glob("*.json"))) == 1


def test_experiment_wider_test_file_error_says_n_features(tmp_path, capsys):
    root = _fold(tmp_path / "data", "Fold1", DISJOINT, {"train": 5, "vali": 5, "test": 7})
    rc, _, err = run(["experiment", root, "-o", tmp_path / "r", *GRID, *ARGS], capsys)
    one_line_error(rc, err, "test.txt:1", "give --n-features 6 (or more)")  # as train says
    assert not (tmp_path / "r").exists()


def test_experiment_n_features_below_the_training_file_names_the_flag(tmp_path, capsys):
    root = _fold(tmp_path / "data", "Fold1", DISJOINT, {"train": 5, "vali": 5, "test": 5})
    argv = ["experiment", root, "-o", tmp_path / "r", *GRID, *ARGS, "--n-features", "3"]
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, "train.txt:1", "is above --n-features 3")
    for bad in ("0", "-2"):
        argv = ["experiment", root, "-o", tmp_path / "r", *GRID, *ARGS, "--n-features", bad]
        rc, _, err = run(argv, capsys)
        one_line_error(rc, err, f"--n-features={bad} must be >= 1")
    assert not (tmp_path / "r").exists()


# --- 3. experiment: a fold's train and test files sharing query ids -----------------------


def test_experiment_warns_once_per_fold_of_shared_query_ids(tmp_path, capsys):
    """A fold whose test queries are training queries too (folds built by hand) gave
    optimistic test metrics without a word: one warning per fold naming both files and
    the count; a fold of disjoint queries says nothing."""
    w = {"train": 4, "vali": 4, "test": 4}
    root = tmp_path / "data"
    _fold(root, "Fold1", {"train": range(10), "vali": range(10, 15), "test": range(7, 13)}, w)
    _fold(root, "Fold2", DISJOINT, w)
    rc, _, err = run(["experiment", root, "-o", tmp_path / "r", *GRID, *ARGS], capsys)
    assert rc in (0, 1), err  # 1: one criterion, so the se-vs-ole table is empty
    lines = [line for line in err.splitlines() if "warning" in line]
    assert len(lines) == 1, err
    fold1 = root / "Fold1"
    assert f"{fold1 / 'test.txt'} shares 3 query ids with {fold1 / 'train.txt'}" in lines[0]
    assert "Fold2" not in err


def test_experiment_shared_query_ids_warning_in_python(tmp_path):
    w = {"train": 4, "vali": 4, "test": 4}
    root = _fold(tmp_path / "data", "Fold1", {**DISJOINT, "test": range(10)}, w)
    grid = dict(systems=("lambdamart",), criteria=("se", "ole"), leaves=(4,), learning_rates=(0.1,))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_experiment(str(root), str(tmp_path / "r"), **grid, **KW)
    shared = [str(c.message) for c in caught if "query ids" in str(c.message)]
    assert len(shared) == 1, shared  # once per fold, not once per cell
    assert "shares 10 query ids" in shared[0]

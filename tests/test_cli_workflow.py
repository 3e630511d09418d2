"""Command line, issue 14: gains in evaluation, validation names, early stopping
without validation, one metric flag, FILE:LINE label errors, the progress bar,
``ltrboost cv`` and ``ltrboost inspect``."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from ltrboost import load_model, load_svmlight
from ltrboost.booster import BoosterParams, train
from ltrboost.cli import main, query_folds
from ltrboost.cli._common import _progress_bar
from ltrboost.dataset import make_dataset
from ltrboost.io.letor import dump_svmlight
from ltrboost.metrics import evaluate

FLAGS = [
    "-q",
    "--min-samples-leaf",
    "4",
    "--max-leaf-nodes",
    "6",
    "--n-estimators",
    "4",
]


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc, err, *needles):
    assert rc == 2, err
    lines = err.strip().split("\n")
    assert len(lines) == 1, lines
    assert lines[0].startswith("ltrboost: error: "), lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("wf")
    assert (
        main(
            [
                "generate",
                str(d),
                "--n-queries",
                "24",
                "--docs-per-query",
                "10",
                "--n-features",
                "6",
                "--random-state",
                "1",
            ]
        )
        == 0
    )
    return d


@pytest.fixture(scope="module")
def big_labels(folder) -> tuple[Path, Path]:
    """train/vali with labels x13 (up to 39 > 31): the exponential gain refuses them."""
    out = []
    for name in ("train.txt", "vali.txt"):
        d = load_svmlight(folder / name)
        path = folder / f"big_{name}"
        dump_svmlight(path, d.X, d.y * 13, d.qid)
        out.append(path)
    return out[0], out[1]


# ------------------------------------------------------------------------ bug 1
def test_linear_gain_reaches_valid_and_eval(big_labels, tmp_path, capsys) -> None:
    tr, va = big_labels
    model = tmp_path / "m.json"
    rc, _, err = run(["train", tr, "--gain", "linear", "--valid", va, "-o", model, *FLAGS], capsys)
    assert rc == 0, err
    booster = load_model(model)
    d = load_svmlight(va)
    ds = make_dataset(d.X, d.y, qid=d.qid)
    expected = evaluate(booster.predict(ds.X), ds.y, ds.query_offsets, ["ndcg@10"], gain="linear")[
        "ndcg@10"
    ]
    assert booster.evals_result["valid"]["ndcg@10"][-1] == pytest.approx(expected)
    # eval reads the gain from the model, or takes --gain
    rc, out, err = run(["eval", model, va, "--metric", "ndcg@10", "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)[str(va)]["ndcg@10"] == pytest.approx(expected)
    rc, _, err = run(["eval", model, va, "--metric", "ndcg@10", "--gain", "exp"], capsys)
    one_line_error(rc, err, "too large for the exponential gain")


def test_eval_relevance_threshold_flag(folder, tmp_path, capsys) -> None:
    model = tmp_path / "m.json"
    assert run(["train", folder / "train.txt", "-o", model, *FLAGS], capsys)[0] == 0
    va = folder / "vali.txt"
    d = load_svmlight(va)
    ds = make_dataset(d.X, d.y, qid=d.qid)
    s = load_model(model).predict(ds.X)
    for t in ("1", "3"):
        rc, out, _ = run(
            [
                "eval",
                model,
                va,
                "--metric",
                "map",
                "--json",
                "--relevance-threshold",
                t,
            ],
            capsys,
        )
        assert rc == 0
        want = evaluate(s, ds.y, ds.query_offsets, ["map"], relevance_threshold=float(t))
        assert json.loads(out)[str(va)]["map"] == pytest.approx(want["map"])


# ------------------------------------------------------------------------ bug 4
def test_two_valid_files_with_the_same_basename(folder, tmp_path, capsys) -> None:
    for sub in ("d1", "d2"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "vali.txt").write_bytes((folder / "vali.txt").read_bytes())
    v1, v2 = tmp_path / "d1" / "vali.txt", tmp_path / "d2" / "vali.txt"
    model = tmp_path / "m.json"
    rc, _, err = run(
        [
            "train",
            folder / "train.txt",
            "--valid",
            v1,
            "--valid",
            v2,
            "-o",
            model,
            *FLAGS,
        ],
        capsys,
    )
    assert rc == 0, err
    res = load_model(model).evals_result
    assert set(res) == {str(v1), str(v2)}
    assert all(len(r["ndcg@10"]) == 4 for r in res.values())
    rc, _, err = run(
        [
            "train",
            folder / "train.txt",
            "--valid",
            v1,
            "--valid",
            v1,
            "-o",
            model,
            *FLAGS,
        ],
        capsys,
    )
    one_line_error(rc, err, "given twice")


# ------------------------------------------------------------------------ bug 6
def test_early_stopping_needs_valid(folder, tmp_path, capsys) -> None:
    rc, _, err = run(
        [
            "train",
            folder / "train.txt",
            "--early-stopping-rounds",
            "2",
            "-o",
            tmp_path / "m.json",
            *FLAGS,
        ],
        capsys,
    )
    one_line_error(rc, err, "--valid")
    assert not (tmp_path / "m.json").exists()


# ------------------------------------------------------------------------ bug 7
def test_unused_parameter_warning(folder, tmp_path, capsys) -> None:
    rc, _, err = run(
        [
            "train",
            folder / "train.txt",
            "--objective",
            "mart",
            "--sigma",
            "5",
            "-o",
            tmp_path / "m.json",
            *FLAGS,
        ],
        capsys,
    )
    assert rc == 0
    assert "ltrboost: warning: objective 'mart' does not use --sigma=5.0" in err


# ------------------------------------------------------------------------ bug 9
def test_one_metric_flag(folder, tmp_path, capsys) -> None:
    tr, va, m = folder / "train.txt", folder / "vali.txt", tmp_path / "m.json"
    argv = ["train", tr, "--valid", va, "--metric", "err", "--eval-metric", "map", "-o", m]
    rc, _, err = run([*argv, *FLAGS], capsys)
    one_line_error(rc, err, "disagree")  # one line: no usage block before it
    # the same flag twice: several metrics are one list, and the message says so
    rc, _, err = run(["train", tr, "--valid", va, "--metric", "map", "--metric", "err"], capsys)
    line = one_line_error(rc, err, "--metric given twice ('map', then 'err')", "--metric map,err")
    assert "--eval-metric" not in line
    # eval took the last of two --metric flags silently
    assert run(["train", tr, "-o", m, *FLAGS], capsys)[0] == 0
    rc, _, err = run(["eval", m, va, "--metric", "ndcg", "--metric", "err"], capsys)
    one_line_error(rc, err, "--metric given twice ('ndcg', then 'err')")
    rc, out, err = run(["eval", m, va, "--metric", "ndcg,err"], capsys)
    assert rc == 0, err
    assert "ndcg" in out
    assert "err" in out
    for flags in (
        ["--eval-metric", "map"],
        ["--metric", "map", "--eval-metric", "map"],
    ):
        rc, _, err = run(["train", tr, "--valid", va, *flags, "-o", m, *FLAGS], capsys)
        assert rc == 0, err
        assert list(load_model(m).evals_result["valid"]) == ["map"]


# ----------------------------------------------------------------------- bug 10
def test_label_error_names_file_and_line(tmp_path, capsys) -> None:
    path = tmp_path / "frac.txt"
    lines = ["# a comment line"]
    for k in range(12):
        q = 1 if k % 2 == 0 else 2  # queries interleaved: rows get regrouped
        label = "1.5" if k == 7 else str(k % 3)
        lines.append(f"{label} qid:{q} 1:{k} 2:{k % 4}")
    path.write_text("\n".join(lines) + "\n")
    rc, _, err = run(["train", path, "-o", tmp_path / "m.json", *FLAGS], capsys)
    one_line_error(rc, err, f"{path}:9:", "1.5")  # row 7 is on line 9 (1-based)
    rc, _, err = run(
        ["train", path, "--objective", "mcrank", "-o", tmp_path / "m.json", *FLAGS],
        capsys,
    )
    one_line_error(rc, err, f"{path}:9:", "1.5")


def test_rows_located_maps_grouped_rows_to_lines() -> None:
    from ltrboost import LTRInputError
    from ltrboost.dataset import rows_located

    ds = make_dataset(np.zeros((4, 1)), [0, 1, 2, 3], qid=[1, 2, 1, 2])
    ds.source, ds.row_lines = "f.txt", np.array([2, 4, 3, 5])  # grouped order
    for err in (ValueError("label y[2]=2 is bad"), LTRInputError("bad", row=2)):
        with pytest.raises(LTRInputError, match=r"^f\.txt:3: ") as info:
            with rows_located(ds):
                raise err
        assert "y[" not in str(info.value)
    with pytest.raises(ValueError, match=r"^other$"):  # no row named: unchanged
        with rows_located(ds):
            raise ValueError("other")


# ----------------------------------------------------------------------- bug 11
def test_progress_bar_shows_current_tree_and_ends_at_100(folder) -> None:
    stream = io.StringIO()
    bar = _progress_bar(BoosterParams(n_estimators=20), file=stream, mininterval=0)
    for it, value in enumerate([0.11, 0.22, 0.33]):
        bar(
            SimpleNamespace(
                iteration=it,
                evaluation={"valid": {"ndcg@10": value}},
                best_score=value,
                best_iteration=it + 1,
            )
        )
        last = stream.getvalue().split("\r")[-1]
        assert f"ndcg@10={value:.4f}" in last, last
        assert f"{it + 1}/20" in last, last
    bar.close()  # stopped early after 3 of 20 rounds
    final = stream.getvalue().strip().split("\r")[-1]
    for needle in ("100%", "3/3", "early stop"):
        assert needle in final, final


# --------------------------------------------------------------------------- cv
def test_query_folds_keep_queries_together() -> None:
    qid = np.repeat([5, 3, 9, 1, 7, 2, 8], 4)
    folds = query_folds(qid, 3, random_state=0)
    for q in np.unique(qid):
        assert len(set(folds[qid == q])) == 1
    counts = np.bincount(folds) // 4
    assert sorted(counts) == [2, 2, 3]
    with pytest.raises(ValueError, match="--folds"):
        query_folds(qid, 8, 0)


def test_cv_reports_mean_and_std(folder, capsys) -> None:
    data_path = folder / "train.txt"
    rc, out, err = run(
        [
            "cv",
            data_path,
            "--folds",
            "3",
            "--metric",
            "ndcg@5,err",
            "--json",
            *[f for f in FLAGS if f != "-q"],
        ],
        capsys,
    )
    assert rc == 0, err
    res = json.loads(out)
    d = load_svmlight(data_path)
    folds = query_folds(d.qid, 3, 0)
    params = dict(min_samples_leaf=4, max_leaf_nodes=6, n_estimators=4)
    for k, fold in enumerate(res["folds"]):
        tr, te = folds != k, folds == k
        b = train(params, make_dataset(d.X[tr], d.y[tr], qid=d.qid[tr]))
        ds = make_dataset(d.X[te], d.y[te], qid=d.qid[te])
        want = evaluate(b.predict(ds.X), ds.y, ds.query_offsets, ["ndcg@5", "err"])
        assert fold["ndcg@5"] == pytest.approx(want["ndcg@5"])
        assert fold["err"] == pytest.approx(want["err"])
    vals = [f["ndcg@5"] for f in res["folds"]]
    assert res["summary"]["ndcg@5"]["mean"] == pytest.approx(np.mean(vals))
    assert res["summary"]["ndcg@5"]["std"] == pytest.approx(np.std(vals))
    rc, out, _ = run(["cv", data_path, "--folds", "3", *FLAGS[1:]], capsys)
    assert rc == 0
    for needle in ("ndcg@10:", "+-", "fold 3/3"):
        assert needle in out


# ---------------------------------------------------------------------- inspect
def test_inspect_summary(folder, tmp_path, capsys) -> None:
    model = tmp_path / "m.json"
    assert run(["train", folder / "train.txt", "-o", model, *FLAGS], capsys)[0] == 0
    booster = load_model(model)
    rc, out, _ = run(["inspect", model, "--json", "--top", "3"], capsys)
    assert rc == 0
    info = json.loads(out)
    gain = booster.feature_importance("gain")
    assert info["objective"] == "lambdamart"
    assert info["n_trees"] == len(booster.trees) == 4
    assert info["n_features_used"] == int(np.count_nonzero(gain))
    top = [f["feature_idx"] for f in info["top_features"]]
    assert top == list(np.argsort(-gain, kind="stable")[: len(top)])
    rc, out, _ = run(["inspect", model, "--dump"], capsys)
    assert rc == 0
    for needle in ("objective   lambdamart", "top ", "tree 3"):
        assert needle in out
    assert "rounds)" not in out  # every round counted: nothing to say


def test_inspect_says_the_importances_stop_at_the_best_iteration(folder, tmp_path, capsys):
    """The tree counts cover every round, the importances only up to the best one (as
    predict): the output did not say so (found by the sklearn pass)."""
    model = tmp_path / "m.json"
    assert run(["train", folder / "train.txt", "-o", model, *FLAGS], capsys)[0] == 0
    d = json.loads(model.read_text())
    d["best_iteration"] = 2  # of 4 rounds, as early stopping would have chosen
    model.write_text(json.dumps(d))
    rc, out, _ = run(["inspect", model, "--json"], capsys)
    info = json.loads(out)
    assert (info["n_iterations"], info["importance_iterations"]) == (4, 2)
    rc, out, _ = run(["inspect", model], capsys)
    assert rc == 0
    assert "used (first 2 rounds)" in out
    assert "features by gain (first 2 rounds):" in out


def test_flags_are_not_abbreviated(folder, tmp_path, capsys) -> None:
    """argparse matched prefixes: `cv --pairs 3` (cv has no --pairs) set
    --pairs-per-sample=3 silently, and `cv --pairs FILE` failed as an invalid int.
    (cv now refuses --pairs by name, saying why: tests/test_cli_file_flags.py.)"""
    tr = folder / "train.txt"
    for argv in (
        ["cv", tr, "--folds", "2", "--pairs-per", "3"],
        ["train", tr, "-o", tmp_path / "m.json", "--n-est", "3"],
    ):
        status = main([str(a) for a in argv])
        assert status == 2
        assert "unrecognized arguments" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--docs-per-query", "--n-features", "--n-queries"])
def test_generate_refuses_a_dataset_too_large_to_hold(flag, tmp_path, capsys) -> None:
    """A huge size was an OverflowError or MemoryError traceback."""
    rc, _, err = run(["generate", tmp_path / "g", flag, str(10**20)], capsys)
    assert rc == 2
    assert err.startswith("ltrboost: error: --n-queries")
    assert "a generated dataset may hold" in err
    assert not (tmp_path / "g").exists()


def test_inspect_table_escapes_feature_names_with_newlines(folder, tmp_path, capsys) -> None:
    """A model file may name a feature "a\\nb" (any JSON string): the table printed it
    raw, breaking its rows (found at stop 33)."""
    model = tmp_path / "m.json"
    assert run(["train", folder / "train.txt", "-o", model, *FLAGS], capsys)[0] == 0
    d = json.loads(model.read_text())
    d["feature_names"] = [f"f\n{k}\t" for k in range(d["n_features"])]
    model.write_text(json.dumps(d))
    rc, out, _ = run(["inspect", model], capsys)
    assert rc == 0
    rows = out.split("features by gain:")[1].strip().splitlines()
    assert rows[0].split() == ["feature", "splits", "gain", "gain", "%"]
    assert all(len(r.split()) == 4 for r in rows[1:]), rows  # one line per feature
    assert "'f\\n" in rows[1]

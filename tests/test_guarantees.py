"""Issue 18, "outputs never destroy data" and "silent wrong results", end to end.

Each test states one promise of README "Errors and guarantees" and fails on the code
before the fix: checkpoints in their own file, the missing-value convention recorded
in the model, ``--pairs`` / ``pairs=`` with an objective that ignores them,
contradicting pairs in the Python API, errors that name their file (disk full, a label
of 32 at FILE:LINE), byte-identical files for any ``n_threads``, concurrent writers.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import ltrboost.cli.train as cli
from ltrboost import Ranker, load_model, train
from ltrboost.cli import main
from ltrboost.dataset import PreferencePairs, make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.objectives.base import PairsIgnoredWarning

FLAGS = ["-q", "--min-samples-leaf", "3", "--max-leaf-nodes", "6"]


def run(argv, capsys) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_error(rc: int, err: str, *needles: str) -> str:
    assert rc == 2, err
    lines = err.strip().split("\n")
    assert len(lines) == 1, lines
    assert lines[0].startswith("ltrboost: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def sparse_file(tmp_path_factory) -> Path:
    """A LETOR file where many features are absent (so --missing matters), labels
    that depend on whether a feature is present."""
    rng = np.random.default_rng(5)
    lines = []
    for q in range(20):
        for _ in range(10):
            feats = []
            present = rng.random(4) < 0.5
            vals = rng.normal(size=4)
            for j in range(4):
                if present[j]:
                    feats.append(f"{j + 1}:{vals[j]:.4f}")
            label = int(present[0]) + int(present[1] and vals[1] > 0) + int(vals[2] > 1)
            lines.append(f"{label} qid:{q} {' '.join(feats)}")
    path = tmp_path_factory.mktemp("sparse") / "train.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


# ------------------------------------------------------------ missing values
def test_missing_convention_is_recorded_and_used(sparse_file, tmp_path, capsys):
    nan_model = tmp_path / "nan.json"
    rc, _, err = run(["train", sparse_file, "--missing", "nan", "-o", nan_model, *FLAGS], capsys)
    assert rc == 0, err
    assert json.loads(nan_model.read_text())["missing"] == "nan"
    # predict without the flag uses the model's convention ...
    rc, default_out, _ = run(["predict", nan_model, sparse_file], capsys)
    assert rc == 0
    rc, explicit_out, _ = run(["predict", nan_model, sparse_file, "--missing", "nan"], capsys)
    assert default_out == explicit_out
    # ... which differs from reading absent features as zeros (the old silent default)
    booster = load_model(nan_model)
    from ltrboost.io.letor import load_svmlight

    X0 = load_svmlight(sparse_file, n_features=booster.n_features, missing="zero").X
    zero_scores = "".join(f"{s!r}\n" for s in booster.predict(X0).tolist())
    assert zero_scores != default_out
    # an explicit conflicting flag is an error, for predict, eval and --resume
    for argv in (
        ["predict", nan_model, sparse_file, "--missing", "zero"],
        ["eval", nan_model, sparse_file, "--missing", "zero"],
        [
            "train",
            sparse_file,
            "--resume",
            nan_model,
            "--missing",
            "zero",
            "-o",
            tmp_path / "r.json",
            *FLAGS,
        ],
    ):
        rc, _, err = run(argv, capsys)
        one_line_error(rc, err, str(nan_model), "--missing nan")
    # a resumed run without the flag continues with the model's convention
    rc, _, err = run(
        [
            "train",
            sparse_file,
            "--resume",
            nan_model,
            "--n-estimators",
            "101",
            "-o",
            tmp_path / "r.json",
            *FLAGS,
        ],
        capsys,
    )
    assert rc == 0, err
    assert load_model(tmp_path / "r.json").missing == "nan"


def test_default_convention_is_zero_and_python_models_record_none(sparse_file, tmp_path, capsys):
    path = tmp_path / "m.json"
    rc, _, _ = run(["train", sparse_file, "--n-estimators", "3", "-o", path, *FLAGS], capsys)
    assert rc == 0
    assert load_model(path).missing == "zero"
    X, y, qid = make_ranking(n_queries=5, docs_per_query=6, n_features=3)[:3]
    b = train(dict(n_estimators=2, min_samples_leaf=2), make_dataset(X, y, qid=qid))
    b.save_model(str(tmp_path / "py.json"))
    assert json.loads((tmp_path / "py.json").read_text())["missing"] is None


# -------------------------------------------------------------------- pairs
def test_cli_pairs_with_an_objective_that_ignores_them(sparse_file, tmp_path, capsys):
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("0 a b\n")
    for objective in ("lambdamart", "mart", "mcrank", "logistic_rank"):
        rc, _, err = run(
            ["train", sparse_file, "--objective", objective, "--pairs", pairs, *FLAGS],
            capsys,
        )
        one_line_error(rc, err, "--pairs", objective, "ignores")
    assert not (tmp_path / "model.json").exists()


def _small_pair_data():
    X, y, qid = make_ranking(n_queries=4, docs_per_query=5, n_features=3)[:3]
    return X, y, qid


@pytest.mark.parametrize("objective", ["lambdamart", "mart", "mcrank", "logistic_rank"])
def test_python_pairs_with_an_objective_that_ignores_them_warn(objective):
    X, y, qid = _small_pair_data()
    ds = make_dataset(X, y, qid=qid)
    ds.pairs = PreferencePairs(np.array([0], np.int32), np.array([1], np.int32))
    with pytest.warns(PairsIgnoredWarning, match=objective):
        train(dict(objective=objective, n_estimators=1, min_samples_leaf=1), ds)
    with pytest.warns(PairsIgnoredWarning):
        Ranker(objective=objective, n_estimators=1, min_samples_leaf=1).fit(
            X, y, qid=qid, pairs=[[0, 1]]
        )


@pytest.mark.parametrize("objective", ["ranknet", "rankboost", "gbrank", "qbrank"])
def test_pairs_used_no_warning_and_contradictions_refused(objective):
    X, y, qid = _small_pair_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PairsIgnoredWarning)
        Ranker(objective=objective, n_estimators=1, min_samples_leaf=1).fit(
            X, y, qid=qid, pairs=[[0, 1], [2, 3]]
        )
    # a > b and b > a: refused like the CLI refuses them in a pairs file
    with pytest.raises(ValueError, match="contradicts"):
        Ranker(objective=objective, n_estimators=1, min_samples_leaf=1).fit(
            X, y, qid=qid, pairs=[[0, 1], [2, 3], [1, 0]]
        )


# ----------------------------------------------------------- errors name files
def test_label_32_under_exponential_gain_names_file_and_line(tmp_path, capsys):
    path = tmp_path / "big.txt"
    # queries interleaved (the dataset regroups rows), a comment and a blank line
    path.write_text(
        "# header\n1 qid:1 1:0.5\n2 qid:2 1:0.1\n\n0 qid:1 1:0.2\n32 qid:2 1:0.3\n0 qid:2 1:0.9\n"
    )
    rc, _, err = run(["train", path, "-o", tmp_path / "m.json", *FLAGS], capsys)
    one_line_error(rc, err, f"{path}:6:", "label 32", "exponential gain")
    rc, _, err = run(
        ["train", path, "--objective", "mcrank", "-o", tmp_path / "m.json", *FLAGS],
        capsys,
    )
    one_line_error(rc, err, f"{path}:6:", "32")
    # eval with the exponential-gain NDCG on such a file
    good = tmp_path / "good.txt"
    good.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.2\n2 qid:2 1:0.1\n0 qid:2 1:0.9\n")
    rc, _, err = run(
        ["train", good, "-o", tmp_path / "g.json", "--n-estimators", "2", *FLAGS],
        capsys,
    )
    assert rc == 0, err
    rc, _, err = run(["eval", tmp_path / "g.json", path], capsys)
    one_line_error(rc, err, f"{path}:6:", "label 32")
    # in a validation file (its own queries: one sharing the training file's ids is
    # warned of first), and a non-integer grade
    other = tmp_path / "other.txt"
    other.write_text(path.read_text().replace("qid:", "qid:1"))
    argv = ["train", good, "--valid", other, "-o", tmp_path / "v.json", *FLAGS]
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, f"{other}:6:", "label 32")
    argv = ["train", good, "--valid", path, "-o", tmp_path / "v.json", *FLAGS]
    rc, _, err = run(argv, capsys)
    # refused with the other checks of the data, before training (and its warning that
    # the validation file shares the training file's query ids)
    one_line_error(rc, err, f"{path}:6:", "label 32")
    half = tmp_path / "half.txt"
    half.write_text("1 qid:1 1:0.5\n0 qid:2 1:0.2\n0.5 qid:1 1:0.1\n")
    rc, _, err = run(["train", half, "-o", tmp_path / "h.json", *FLAGS], capsys)
    one_line_error(rc, err, f"{half}:3:", "integer")


def test_disk_full_names_the_output(sparse_file, tmp_path, capsys, monkeypatch):
    out = tmp_path / "m.json"
    out.write_text("previous")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    rc, _, err = run(["train", sparse_file, "--n-estimators", "2", "-o", out, *FLAGS], capsys)
    monkeypatch.undo()
    one_line_error(rc, err, f"{out}: No space left on device")
    assert out.read_text() == "previous"


def test_resume_from_a_model_with_an_out_of_range_parameter(sparse_file, tmp_path, capsys):
    path = tmp_path / "m.json"
    rc, _, _ = run(["train", sparse_file, "--n-estimators", "2", "-o", path, *FLAGS], capsys)
    assert rc == 0
    d = json.loads(path.read_text())
    d["objective_params"]["sigma"] = -5
    path.write_text(json.dumps(d))
    rc, _, err = run(
        ["train", sparse_file, "--resume", path, "-o", tmp_path / "n.json", *FLAGS],
        capsys,
    )
    one_line_error(rc, err, f"{path}: objective_params: sigma=-5")


# ------------------------------------------------------- files and checkpoints
def test_files_are_byte_identical_for_any_thread_count(sparse_file, tmp_path, capsys):
    files = []
    for n in (1, 2):
        out = tmp_path / f"m{n}.json"
        argv = ["train", sparse_file, "--n-estimators", "4", "--subsample", "0.7"]
        rc, _, _ = run([*argv, "--n-threads", n, "-o", out, *FLAGS], capsys)
        assert rc == 0
        files.append(out.read_bytes())
    assert files[0] == files[1]
    assert b"n_threads" not in files[0]


def test_interrupted_checkpointing_run_keeps_the_previous_output(
    sparse_file, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "m.json"
    rc, _, _ = run(["train", sparse_file, "--n-estimators", "2", "-o", out, *FLAGS], capsys)
    assert rc == 0
    previous = out.read_bytes()
    original = cli._Checkpoint.__call__

    def interrupt_after_3(self, env):
        original(self, env)
        if env.iteration + 1 == 3:
            raise KeyboardInterrupt  # stands for kill -9 in the middle of training

    monkeypatch.setattr(cli._Checkpoint, "__call__", interrupt_after_3)
    argv = ["train", sparse_file, "--n-estimators", "50", "--checkpoint-every", "1"]
    rc, _, _ = run([*argv, "-o", out, *FLAGS], capsys)
    assert rc == 130
    assert out.read_bytes() == previous  # the complete model is still there
    assert load_model(tmp_path / "m.json.checkpoint").n_iterations == 3


def test_concurrent_writer_is_warned_about(sparse_file, tmp_path, capsys, monkeypatch):
    out = tmp_path / "m.json"
    original = cli._Checkpoint.__call__

    def other_run_writes(self, env):
        original(self, env)
        if env.iteration == 0:
            out.write_text("another run's model")

    monkeypatch.setattr(cli._Checkpoint, "__call__", other_run_writes)
    argv = ["train", sparse_file, "--n-estimators", "3", "--checkpoint-every", "1"]
    rc, _, err = run([*argv, "-o", out, *FLAGS], capsys)
    assert rc == 0
    assert f"ltrboost: warning: {out} changed since this run started" in err
    assert load_model(out).n_iterations == 3


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs are POSIX")
def test_checkpoints_need_a_regular_output(sparse_file, tmp_path, capsys):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    argv = ["train", sparse_file, "--checkpoint-every", "1", "-o", fifo, *FLAGS]
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, "--checkpoint-every", "not a regular file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.fifo"]


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs are POSIX")
def test_predict_into_a_fifo_and_through_a_symlink(sparse_file, tmp_path, capsys):
    model = tmp_path / "m.json"
    rc, _, _ = run(["train", sparse_file, "--n-estimators", "2", "-o", model, *FLAGS], capsys)
    assert rc == 0
    rc, expected, _ = run(["predict", model, sparse_file], capsys)
    fifo = tmp_path / "scores.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    rc, _, err = run(["predict", model, sparse_file, "-o", fifo], capsys)
    reader.join(timeout=60)
    assert rc == 0, err
    assert got == [expected.encode()]
    assert fifo.is_fifo()
    target = tmp_path / "real.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    rc, _, _ = run(["predict", model, sparse_file, "-o", link], capsys)
    assert rc == 0
    assert link.is_symlink()
    assert target.read_text() == expected


def test_predict_with_a_huge_feature_claim_fails_before_reading_data(sparse_file, tmp_path, capsys):
    import tracemalloc

    model = tmp_path / "m.json"
    rc, _, _ = run(["train", sparse_file, "--n-estimators", "2", "-o", model, *FLAGS], capsys)
    assert rc == 0
    d = json.loads(model.read_text())
    d["n_features"] = 50_000_000
    d["feature_names"] = None  # (train's LETOR names, f1..f4, would no longer fit)
    model.write_text(json.dumps(d))
    tracemalloc.start()
    try:
        rc, out, err = run(["predict", model, sparse_file], capsys)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    one_line_error(rc, err, f"{model}: n_features 50000000")
    assert out == ""
    assert peak < 50 * 2**20, peak  # 200 rows x 5e7 features would be 80 GB


def test_checkpoints_serialize_each_tree_once(sparse_file, tmp_path, capsys, monkeypatch):
    """A checkpoint writes cached tree text: over 12 rounds checkpointed every round,
    each tree is converted to JSON once (not 1 + 2 + ... + 12 times), and the final
    model reuses the cache too."""
    import ltrboost.io.model_json as model_json

    calls = []
    original = model_json.tree_to_dict

    def counting(nodes, output=0):
        calls.append(1)
        return original(nodes, output)

    monkeypatch.setattr(model_json, "tree_to_dict", counting)
    out = tmp_path / "m.json"
    argv = ["train", sparse_file, "--n-estimators", "12", "--checkpoint-every", "1"]
    rc, _, _ = run([*argv, "-o", out, *FLAGS], capsys)
    assert rc == 0
    n_trees = len(load_model(out).trees)
    assert n_trees == 12
    assert len(calls) == n_trees


def test_wide_model_predicts_with_memory_bounded_by_the_data(sparse_file, tmp_path, capsys):
    """A model claiming 5,000,000 features (within the schema's limit) predicts the same
    scores as before the edit without a dense 4 x 5e6 matrix (160 MB; kept small so
    that a regression cannot exhaust the machine's memory)."""
    import tracemalloc

    model = tmp_path / "m.json"
    rc, _, _ = run(["train", sparse_file, "--n-estimators", "3", "-o", model, *FLAGS], capsys)
    assert rc == 0
    small = tmp_path / "small.txt"
    small.write_text("".join(sparse_file.read_text().splitlines(keepends=True)[:4]))
    rc, expected, _ = run(["predict", model, small], capsys)
    d = json.loads(model.read_text())
    d["n_features"] = 5_000_000
    d["feature_names"] = None  # (train's LETOR names, f1..f4, would no longer fit)
    wide = tmp_path / "wide.json"
    wide.write_text(json.dumps(d))
    tracemalloc.start()
    try:
        rc, out, err = run(["predict", wide, small], capsys)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rc == 0, err
    assert out == expected
    assert peak < 50 * 2**20, peak
    rc, out, err = run(["eval", wide, small, "--json"], capsys)
    assert rc == 0, err
    rc, ref, _ = run(["eval", model, small, "--json"], capsys)
    assert json.loads(out)[str(small)] == json.loads(ref)[str(small)]
    # a feature index beyond the model's width is still an error naming its line
    beyond = tmp_path / "beyond.txt"
    beyond.write_text("1 qid:1 1:0.5\n0 qid:1 5000001:1\n")
    rc, _, err = run(["predict", wide, beyond], capsys)
    one_line_error(rc, err, f"{beyond}:2:")


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "d.txt", "-o", "-"],
        ["convert", "d.txt", "-"],
        ["clicks", "mine", "log.txt", "--data", "d.txt", "-o", "-"],
        ["clicks", "dataset", "log.txt", "--data", "d.txt", "-o", "-"],
        ["clicks", "simulate", "d.txt", "-o", "-"],
        ["experiment", "folds", "-o", "-"],
    ],
)
def test_output_dash_is_stdout_only_for_predict_and_export(argv, tmp_path, monkeypatch, capsys):
    """``-o -`` wrote a file (or folder) named ``-`` for the commands that write files."""
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, "output '-'", "give a file name")
    assert not os.path.exists(tmp_path / "-")

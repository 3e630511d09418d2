"""Prediction and evaluation for a user who scores new data (a fourth adversarial pass):
``Ranker.predict``/``score``, ``Booster.predict`` and ``ltrboost predict``/``eval``, their
messages and their output."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.cli import main
from ltrboost.dataset import LTRInputError
from ltrboost.datasets import make_ranking
from ltrboost.io.letor import dump_svmlight

FAST = dict(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=3, random_state=0)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A model file, a small LETOR file and one of 20,000 lines (> 64 KiB of scores)."""
    folder = tmp_path_factory.mktemp("advpred4")
    X, y, qid = make_ranking(n_queries=30, docs_per_query=10, n_features=4, random_state=0)
    model = folder / "m.json"
    Ranker(**FAST).fit(X, y, qid=qid).save_model(str(model))
    small = folder / "d.txt"
    dump_svmlight(str(small), X, y, qid=qid)
    reps = 20_000 // len(y)
    big = folder / "big.txt"
    qids = np.repeat(np.arange(reps * 30), 10)
    dump_svmlight(str(big), np.tile(X, (reps, 1)), np.tile(y, reps), qid=qids)
    return {"model": str(model), "small": str(small), "big": str(big), "folder": folder}


def run(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


# --- 1. stdout under PYTHONUNBUFFERED ---------------------------------------------------


@pytest.mark.parametrize("unbuffered", ["1", None])
def test_predict_to_a_reader_that_leaves_exits_141_also_unbuffered(files, unbuffered):
    """Under ``PYTHONUNBUFFERED=1`` (``python -u``, common in containers) stdout's text
    layer sits on a raw file: the kernel's short write when ``head`` left was taken for
    the whole text, the rest dropped silently, and ``ltrboost predict M D | head``
    exited 0 as if every score had been written (141 without the variable)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = unbuffered
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltrboost", "predict", files["model"], files["big"]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader leaves; 20,000 scores (> 64 KiB) are being written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141
    assert float(first) == float(first)
    assert err == ""


def test_unbuffered_stdout_writes_every_score(files):
    """A whole read of ``predict``'s stdout under ``PYTHONUNBUFFERED=1`` holds every
    score (the short-write loop writes the rest)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    proc = subprocess.run(
        [sys.executable, "-m", "ltrboost", "predict", files["model"], files["big"]],
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = sum(1 for _ in open(files["big"]))
    assert len(proc.stdout.decode().splitlines()) == lines > 19_000


# --- 2. the CLI's messages name its flags ------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_eval_relevance_threshold_not_finite_names_the_flag(files, capsys, value):
    """``ltrboost eval --relevance-threshold nan`` said
    ``relevance_threshold=nan must be finite`` (Python's keyword), after reading the data."""
    absent = str(files["folder"] / "absent.txt")
    rc, out, err = run(["eval", files["model"], absent, f"--relevance-threshold={value}"], capsys)
    assert rc == 2
    assert out == ""
    assert err.startswith(f"ltrboost: error: --relevance-threshold {value}")
    assert "relevance_threshold" not in err
    assert "absent.txt" not in err  # checked before any data is read


def test_eval_label_above_31_suggests_the_gain_flag(files, capsys, tmp_path):
    """A label above 31 under the exponential gain told the CLI user to
    ``use gain='linear'``; the CLI's remedy is ``--gain linear`` (FILE:LINE kept)."""
    lines = open(files["small"]).read().splitlines()
    lines[2] = "40" + lines[2][lines[2].index(" ") :]
    data = tmp_path / "big_label.txt"
    data.write_text("\n".join(lines) + "\n")
    rc, out, err = run(["eval", files["model"], str(data)], capsys)
    assert rc == 2
    assert out == ""
    assert err.startswith(f"ltrboost: error: {data}:3: label 40 is too large")
    assert "--gain linear" in err
    assert "gain='linear'" not in err
    rc, out, err = run(["eval", files["model"], str(data), "--gain", "linear"], capsys)
    assert rc == 0, err


def test_train_label_above_31_suggests_the_gain_flag(capsys, tmp_path):
    """``ltrboost train`` (LambdaMART's exponential gain) gave the same Python remedy."""
    data = tmp_path / "t.txt"
    data.write_text("".join(f"{40 if i == 1 else i % 3} qid:{i // 5} 1:{i}\n" for i in range(20)))
    rc, _out, err = run(["train", str(data), "-o", str(tmp_path / "m.json"), "--quiet"], capsys)
    assert rc == 2
    assert err.startswith(f"ltrboost: error: {data}:2: label 40 is too large")
    assert "--gain linear" in err
    assert "gain='linear'" not in err


@pytest.mark.parametrize("command", ["predict", "eval"])
def test_a_feature_beyond_the_model_names_the_model(files, capsys, tmp_path, command):
    """Data with a feature index above the model's features said ``feature index 7 is
    larger than n_features=4``: a Python keyword that neither command takes."""
    lines = open(files["small"]).read().splitlines()
    lines[1] += " 7:1.5"
    data = tmp_path / "wide.txt"
    data.write_text("\n".join(lines) + "\n")
    rc, out, err = run([command, files["model"], str(data)], capsys)
    assert rc == 2
    assert out == ""
    assert err.strip() == (
        f"ltrboost: error: {data}:2: feature index 7 is larger than the model's 4 "
        f"features ({files['model']})"
    )


# --- 3. Python: score on no rows, duplicate columns ---------------------------------------


def test_score_on_no_rows_says_so():
    """``Ranker.score`` on 0 rows said ``query_offsets must be 1-D with n_queries + 1 >=
    2 entries, got shape (1,)``: an internal array the caller never gave."""
    X, y, qid = make_ranking(n_queries=10, docs_per_query=8, n_features=3, random_state=0)
    model = Ranker(**FAST).fit(X, y, qid=qid)
    with pytest.raises(LTRInputError, match=r"^score's X has no rows"):
        model.score(X[:0], y[:0], qid=qid[:0])
    assert model.predict(X[:0]).shape == (0,)  # predicting no rows is fine


def test_a_duplicated_column_that_hides_a_missing_one_is_named():
    """Columns ``c0 c1 c1 c3`` for a model of ``c0 c1 c2 c3`` were refused as only
    ``missing columns ['c2']``, the duplicate unsaid."""
    pd = pytest.importorskip("pandas")
    X, y, qid = make_ranking(n_queries=10, docs_per_query=8, n_features=4, random_state=0)
    frame = pd.DataFrame(X, columns=["c0", "c1", "c2", "c3"])
    model = Ranker(**FAST).fit(frame, y, qid=qid)
    frame.columns = ["c0", "c1", "c1", "c3"]
    with pytest.raises(LTRInputError) as info:
        model.predict(frame)
    assert "missing columns ['c2']" in str(info.value)
    assert "duplicate column names ['c1']" in str(info.value)


# --- 4. a --missing nan model scored from Python -------------------------------------------


def test_sparse_x_for_a_missing_nan_model_warns(tmp_path, capsys):
    """A model trained by ``ltrboost train --missing nan`` reads an absent LETOR feature
    as missing; a SciPy sparse ``X`` (an absent entry is 0) gave other scores than
    ``ltrboost predict`` on the same file, silently.  Dense data read with
    ``load_svmlight(path, missing=booster.missing)`` gives the CLI's scores."""
    import warnings

    import scipy.sparse as sp

    from ltrboost import load_model, load_svmlight

    rng = np.random.default_rng(0)
    data = tmp_path / "sparse.txt"
    lines = []
    for i in range(120):
        feats = " ".join(f"{j}:{rng.random():.3f}" for j in range(1, 5) if rng.random() < 0.6)
        lines.append(f"{rng.integers(0, 3)} qid:{i // 10} {feats}\n")
    data.write_text("".join(lines))
    model = tmp_path / "m.json"
    flags = ["--n-estimators", "3", "--min-samples-leaf", "3", "--quiet", "--missing", "nan"]
    assert main(["train", str(data), "-o", str(model), *flags]) == 0
    assert main(["predict", str(model), str(data)]) == 0
    cli = np.array([float(v) for v in capsys.readouterr().out.split()])
    booster = load_model(str(model))
    assert booster.missing == "nan"
    X = load_svmlight(str(data), missing=booster.missing).X
    assert np.array_equal(booster.predict(X), cli)
    zero_filled = load_svmlight(str(data)).X
    with pytest.warns(UserWarning, match=r"--missing nan.*absent entries of a sparse X are 0"):
        booster.predict(sp.csr_matrix(zero_filled))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        booster.predict(X)  # dense: nothing to warn about

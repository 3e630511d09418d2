"""``ltrboost cv``, a fifth adversarial pass: cv warns, as ``eval`` does, when
``--relevance-threshold`` makes MAP / MRR / P@k the same whatever the scores; a fold of
one query says "1 query"."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ltrboost.cli import query_folds
from ltrboost.io.letor import load_svmlight
from test_cli import run

FAST = ["--n-estimators", "2", "--min-samples-leaf", "2", "--n-threads", "1", "-q"]


def _write(path, rows):
    path.write_text("".join(f"{line}\n" for line in rows))
    return path


def _data(tmp_path, name, label, n_queries=6, n_docs=5):
    rng = np.random.default_rng(3)
    rows = [
        f"{label(q, d)} qid:{q} 1:{rng.random():.3f} 2:{rng.random():.3f}"
        for q in range(1, n_queries + 1)
        for d in range(n_docs)
    ]
    return _write(tmp_path / name, rows)


def test_cv_warns_once_when_the_threshold_counts_no_document_relevant(tmp_path, capsys):
    """Labels scaled to [0, 1) under the default --relevance-threshold 1: every fold's
    MAP is 1 and P@3 0 whatever the model. ``eval`` of the same lines warns; cv said
    nothing. Now one warning, before any fold trains, naming the file and the flag."""
    data = _data(tmp_path, "scaled.txt", lambda q, d: (d % 3) / 10)
    argv = ["cv", data, "--folds", "3", "--objective", "mart", "--metric", "map,p@3,ndcg@5"]
    rc, out, err = run([*argv, *FAST, "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)["summary"]["map"] == {"mean": 1.0, "std": 0.0}
    flat = [s for s in err.splitlines() if "counts no document" in s]
    assert len(flat) == 1, err
    assert str(data) in flat[0], flat
    assert "--relevance-threshold" in flat[0], flat
    assert "map, p@3 are the same whatever the scores" in flat[0], flat
    # ndcg alone is not binarised: no warning
    rc, _, err = run([*argv[:-1], "ndcg@5", *FAST], capsys)
    assert rc == 0, err
    assert "counts no document" not in err, err


def test_cv_warns_for_the_one_fold_whose_test_queries_the_threshold_flattens(tmp_path, capsys):
    """Grades 0..3 and --relevance-threshold 3 (two queries hold the only 3s): over the
    file the threshold separates, but a test fold without a 3 has MAP the same whatever
    the scores. That fold's warning names the fold; the others warn nothing."""
    data = _data(tmp_path, "g.txt", lambda q, d: (d % 4) if q <= 2 else (d % 3), n_queries=6)
    n_folds = 3
    argv = ["cv", data, "--folds", str(n_folds), "--metric", "map,ndcg@5"]
    rc, _, err = run([*argv, *FAST, "--relevance-threshold", "3"], capsys)
    assert rc == 0, err
    fold = query_folds(load_svmlight(data).qid, n_folds, 0)
    qid = load_svmlight(data).qid
    with_three = {int(fold[qid == q][0]) for q in (1, 2)}
    flattened = [k for k in range(n_folds) if k not in with_three]
    assert flattened  # the data is chosen so
    flat = [s for s in err.splitlines() if "counts no document" in s]
    assert len(flat) == len(flattened), err
    for k, line in zip(flattened, flat, strict=True):
        assert line.startswith(f"ltrboost: warning: fold {k + 1}/{n_folds}: "), line
        assert "test queries" in line, line


def test_cv_a_fold_of_one_query_says_1_query(tmp_path, capsys):
    """Leave-one-query-out printed "(1 queries)" on every fold line."""
    data = _data(tmp_path, "q.txt", lambda q, d: d % 3, n_queries=3)
    rc, out, err = run(["cv", data, "--folds", "3", *FAST], capsys)
    assert rc == 0, err
    lines = out.splitlines()
    assert all(s.endswith("(1 query)") for s in lines[:3]), out
    assert "queries)" not in out, out


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--valid", "v.txt"], "--valid is not available in cv: each fold is scored"),
        (["-o", "m.json"], "--output is not available in cv: it writes no model"),
        (["--output", "m.json"], "--output is not available in cv: it writes no model"),
    ],
)
def test_cv_refuses_train_only_flags_saying_why(tmp_path, capsys, flags, says):
    """``cv --valid`` said "did you mean --gain?" and ``cv --output`` "did you mean
    --tau?" (argparse's guess among cv's flags); they are train's flags, refused with the
    reason before anything is read (the data file need not exist)."""
    from ltrboost.cli import main

    rc = main(["cv", str(tmp_path / "absent.txt"), *flags])
    err = capsys.readouterr().err
    assert rc == 2
    assert says in err
    assert "did you mean" not in err
    assert len(err.strip().splitlines()) == 1

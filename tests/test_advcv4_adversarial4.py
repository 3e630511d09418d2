"""``ltrboost cv``, a fourth adversarial pass: a fold's score is what training on the
other folds and evaluating on it by hand gives; flags that make cv fail whatever the
data fail before the data is read; a fold's warnings say which fold."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ltrboost.cli import query_folds
from ltrboost.io.letor import load_svmlight
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

COLSAMPLE = ["--colsample-bytree", "0.5"]
FAST = ["--n-estimators", "3", "--min-samples-leaf", "2", "--n-threads", "1"]


def _write(path, rows):
    path.write_text("".join(f"{line}\n" for line in rows))
    return path


@pytest.fixture(scope="module")
def interleaved(tmp_path_factory):
    """Sparse lines; every query's documents come in two separate runs of the file (qid
    ids neither sorted nor contiguous), and the highest feature is on every line."""
    rng = np.random.default_rng(7)
    rows = []
    for _ in range(2):
        for q in (500, 30, 900, 10, 700, 20, 800, 40, 600):
            for _ in range(int(rng.integers(2, 7))):
                feats = [f"{j}:{rng.normal():.4f}" for j in range(1, 6) if rng.random() < 0.6]
                rows.append(f"{rng.integers(0, 4)} qid:{q} {' '.join(feats)} 6:{rng.random():.3f}")
    return _write(tmp_path_factory.mktemp("cv4") / "inter.txt", rows)


@pytest.mark.parametrize(
    "flags",
    [
        ["--missing", "zero"],
        ["--missing", "nan", "--random-state", "5", "--subsample", "0.7"],
        ["--missing", "nan", "--objective", "mart", "--gain", "linear", *COLSAMPLE],
    ],
)
def test_cv_fold_scores_are_train_on_the_other_folds_then_eval(
    interleaved, tmp_path, capsys, flags
):
    """The score of fold k is ``ltrboost train`` on the lines of the other folds (in
    file order) then ``ltrboost eval`` on fold k's lines, exactly, metric by metric."""
    n_folds, metrics = 3, "ndcg@5,err,map,pair_precision"
    argv = ["cv", interleaved, "--folds", n_folds, "--metric", metrics, "--json"]
    rc, out, err = run([*argv, *FAST, *flags], capsys)
    assert rc == 0, err
    res = json.loads(out)
    seed = int(flags[flags.index("--random-state") + 1]) if "--random-state" in flags else 0
    fold = query_folds(load_svmlight(interleaved).qid, n_folds, seed)
    lines = interleaved.read_text().splitlines()
    for k in range(n_folds):
        pairs = list(zip(lines, fold, strict=True))
        train = _write(tmp_path / f"train{k}.txt", [s for s, f in pairs if f != k])
        test = _write(tmp_path / f"test{k}.txt", [s for s, f in pairs if f == k])
        model = tmp_path / f"m{k}.json"
        rc, _, err = run(["train", train, "-o", model, "-q", *FAST, *flags], capsys)
        assert rc == 0, err
        rc, out, err = run(["eval", model, test, "--metric", metrics, "--json"], capsys)
        assert rc == 0, err
        by_hand = json.loads(out)
        by_hand = by_hand.get(str(test), by_hand)
        for m in metrics.split(","):
            assert res["folds"][k][m] == by_hand[m], (k, m)
        assert res["folds"][k]["n_queries"] == len(np.unique(load_svmlight(test).qid))
    for m in metrics.split(","):
        scores = [f[m] for f in res["folds"]]
        assert res["summary"][m] == {"mean": np.mean(scores), "std": np.std(scores)}


@pytest.mark.parametrize("folds", ["1", "0", "-2"])
def test_cv_folds_below_two_is_refused_before_the_data_is_read(tmp_path, capsys, folds):
    """``--folds 1`` was refused only once the whole file had been read (minutes for a
    large one): a missing file hid the flag's error."""
    rc, _, err = run(["cv", tmp_path / "absent.txt", "--folds", folds], capsys)
    one_line_error(rc, err, f"--folds={folds}", "at least 2")


def test_cv_fewer_queries_than_folds_names_the_file(tmp_path, capsys):
    """One query: "--folds=2 must be between 2 and the number of queries (1)", a range
    that does not exist, naming no file."""
    one = _write(tmp_path / "one.txt", ["1 qid:3 1:0.5", "0 qid:3 1:0.1"])
    rc, _, err = run(["cv", one, "--folds", "2"], capsys)
    one_line_error(rc, err, str(one), "1 query", "at least 2")
    three = _write(tmp_path / "three.txt", [f"{q % 2} qid:{q} 1:{q}" for q in (1, 2, 3)])
    rc, _, err = run(["cv", three, "--folds", "5"], capsys)
    one_line_error(rc, err, "--folds=5", str(three), "3 queries")


@pytest.mark.parametrize(
    "objective", [["ranknet"], ["gbrank"], ["qbrank", "--preference-weight", "1"]]
)
def test_cv_pairs_only_training_is_refused_up_front(tmp_path, capsys, objective):
    """``--use-label-pairs false`` learns from explicit pairs alone, which cv cannot be
    given: the error came after the data was read and the first fold prepared, and said
    "give pairs" (cv has no --pairs)."""
    argv = ["cv", tmp_path / "absent.txt", "--objective", *objective]
    rc, _, err = run([*argv, "--use-label-pairs", "false"], capsys)
    one_line_error(rc, err, "--use-label-pairs", "cv takes no --pairs")


def test_cv_qbrank_without_label_pairs_still_learns_from_the_labels(interleaved, capsys):
    """QBRank's labelled part needs no pair: that run is not refused."""
    argv = ["cv", interleaved, "--folds", "2", "--objective", "qbrank", *FAST]
    rc, out, err = run([*argv, "--use-label-pairs", "false"], capsys)
    assert rc == 0, err
    assert "fold 2/2" in out


def test_cv_a_folds_warning_names_the_fold(tmp_path, capsys):
    """Only query 1 has judgements: the training set of the fold that holds it out has
    every label 0. The warning said "every training label is 0" of a file with labels 1
    and 2, naming no fold; a parameter's warning is the same for every fold: once, bare."""
    rng = np.random.default_rng(0)
    rows = [
        f"{(d % 3) if q == 1 else 0} qid:{q} 1:{rng.random():.3f} 2:{rng.random():.3f}"
        for q in range(1, 7)
        for d in range(5)
    ]
    data = _write(tmp_path / "flat.txt", rows)
    argv = ["cv", data, "--folds", "2", *FAST, "--tau", "0.5"]
    rc, _, err = run(argv, capsys)
    assert rc == 0, err
    k = int(query_folds(load_svmlight(data).qid, 2, 0)[0]) + 1  # the fold of query 1
    lines = err.strip().splitlines()
    flat = [s for s in lines if "every training label is 0" in s]
    assert flat, lines
    assert all(s.startswith(f"ltrboost: warning: fold {k}/2: ") for s in flat), lines
    tau = [s for s in lines if "--tau" in s]
    assert len(tau) == 1, lines
    assert tau[0].startswith("ltrboost: warning: objective"), lines


def test_train_pairs_only_without_pairs_is_refused_before_reading(tmp_path, capsys):
    """`ltrboost train --use-label-pairs false` without `--pairs` cannot train whatever
    the data, yet failed only after the training file was read (cv's fix, for train)."""
    from ltrboost.cli import main

    missing = tmp_path / "does-not-exist.txt"  # never read: the flags alone decide
    out = tmp_path / "m.json"
    args = ["train", str(missing), "--objective", "ranknet", "--use-label-pairs", "false"]
    assert main([*args, "-q", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--use-label-pairs false: ranknet then learns from explicit preference pairs" in err
    assert "--pairs FILE" in err
    assert not out.exists()

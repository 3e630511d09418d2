"""``ltrboost cv`` and ``ltrboost experiment`` on hostile data, a ninth adversarial pass:
a held-out fold holding the file's highest feature (cv trains at the file's width, which
``train`` on the other folds' lines matches only with ``--n-features``), a ``Fold*`` link
whose target is gone (it was skipped: the mean over folds shrank unseen), a comment
that is not UTF-8 (it was "is this a binary file?"), and what already held: one-grade
test folds score as ``eval`` scores them, a fractional label in one fold's training
data fails before any fold, a qid in two runs of the file is one query."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from ltrboost.cli import query_folds
from ltrboost.experiment import find_folds
from ltrboost.io.letor import load_svmlight
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

FAST = ["--n-estimators", "3", "--min-samples-leaf", "2", "--n-threads", "1", "-q"]
README = Path(__file__).resolve().parents[1] / "README.md"


def _write(path, rows):
    path.write_text("".join(f"{line}\n" for line in rows))
    return path


def _lines(qids, n_docs, n_feat, rng, label=None, extra=""):
    rows = []
    for q in qids:
        for _ in range(n_docs):
            y = rng.integers(0, 3) if label is None else label
            feats = " ".join(f"{j}:{rng.normal():.4f}" for j in range(1, n_feat + 1))
            rows.append(f"{y} qid:{q} {feats}{extra}")
    return rows


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """Nine queries of features 1-5; only query 9 has feature 7, the file's highest."""
    rng = np.random.default_rng(1)
    rows = _lines(range(1, 9), 5, 5, rng)
    rows += [f"{line} 7:{rng.normal():.3f}" for line in _lines([9], 5, 5, rng)]
    return _write(tmp_path_factory.mktemp("cvexp") / "wide.txt", rows)


def test_cv_trains_each_fold_at_the_files_width(wide, tmp_path, capsys):
    """The fold that holds query 9 out trains on lines whose highest index is 5: cv's
    model is 7 features wide (the file's), so with --colsample-bytree (which draws over
    every column) ``train`` on those lines alone gave another model, and ``eval`` of it
    on the held-out lines was refused (index 7 beyond its 5 features).  ``train
    --n-features 7`` on the other folds' lines, then ``eval``, is cv's fold, exactly."""
    flags = [*FAST, "--colsample-bytree", "0.5"]
    rc, out, err = run(
        ["cv", wide, "--folds", "3", "--metric", "ndcg@5,map", "--json", *flags], capsys
    )
    assert rc == 0, err
    res = json.loads(out)
    fold = query_folds(load_svmlight(wide).qid, 3, 0)
    lines = wide.read_text().splitlines()
    held = int(fold[-1])  # the fold of query 9 (its lines are the file's last)
    for k in range(3):
        train = _write(
            tmp_path / f"tr{k}.txt", [s for s, f in zip(lines, fold, strict=True) if f != k]
        )
        test = _write(
            tmp_path / f"te{k}.txt", [s for s, f in zip(lines, fold, strict=True) if f == k]
        )
        model = tmp_path / f"m{k}.json"
        rc, _, err = run(["train", train, "-o", model, "--n-features", "7", *flags], capsys)
        assert rc == 0, err
        rc, out, err = run(["eval", model, test, "--metric", "ndcg@5,map", "--json"], capsys)
        assert rc == 0, err
        by_hand = json.loads(out)[str(test)]
        assert {m: res["folds"][k][m] for m in ("ndcg@5", "map")} == {
            m: by_hand[m] for m in ("ndcg@5", "map")
        }, k
    # without the width: the held-out fold's eval is refused, as cv's README now says
    narrow = tmp_path / "narrow.json"
    rc, _, err = run(["train", tmp_path / f"tr{held}.txt", "-o", narrow, *flags], capsys)
    assert rc == 0, err
    rc, _, err = run(["eval", narrow, tmp_path / f"te{held}.txt"], capsys)
    one_line_error(rc, err, "feature index 7")


def test_readme_says_cv_trains_at_the_files_width():
    """README: "Fold k's scores are those of `ltrboost train` on the other folds' lines
    and `ltrboost eval` on fold k's" held only while the other folds' lines reach the
    file's highest feature index (see the test above)."""
    text = " ".join(README.read_text().split())
    claim = text[text.index("Fold k's scores are those of") :][:400]
    assert "--n-features" in claim, claim


def test_cv_help_says_how_queries_are_dealt(capsys):
    """``cv --help`` said "query folds (default 5)": nothing of whole queries, the
    shuffle by --random-state (the same folds for the same seed) or the range."""
    rc, out, _ = run(["cv", "--help"], capsys)
    assert rc == 0
    out = " ".join(out.split())
    folds = out[out.index("--folds FOLDS ") :][:300]
    for needle in ("whole queries", "--random-state", "number of queries"):
        assert needle in folds, folds
    # holds (README): the folds depend on the seed and the query ids, not the line order
    qid = np.repeat([40, 7, 13, 99, 5, 21, 8], 3)
    perm = np.random.default_rng(0).permutation(qid.size)
    by_query = dict(zip(qid.tolist(), query_folds(qid, 3, 11).tolist(), strict=True))
    again = dict(zip(qid[perm].tolist(), query_folds(qid[perm], 3, 11).tolist(), strict=True))
    assert by_query == again
    assert by_query != dict(zip(qid.tolist(), query_folds(qid, 3, 12).tolist(), strict=True))


# --- experiment: a fold link whose target is gone -----------------------------------


def _fold(root, name, rng, n_feat=4):
    d = root / name
    d.mkdir(parents=True)
    _write(d / "train.txt", _lines(range(1, 9), 5, n_feat, rng))
    _write(d / "vali.txt", _lines(range(9, 12), 5, n_feat, rng))
    _write(d / "test.txt", _lines(range(12, 15), 5, n_feat, rng))
    return d


def test_experiment_refuses_a_fold_link_whose_target_is_gone(tmp_path, capsys):
    """Fold3 -> a moved folder: find_folds skipped it as "not a fold", and the report
    averaged Fold1 and Fold2 only, unseen (a fold missing one file is an error for the
    same reason)."""
    rng = np.random.default_rng(0)
    root = tmp_path / "folds"
    _fold(root, "Fold1", rng)
    real = _fold(tmp_path, "elsewhere", rng)
    os.symlink(real, root / "Fold2")  # a link to a fold is a fold
    os.symlink(tmp_path / "moved", root / "Fold3")
    with pytest.raises(ValueError, match=r"Fold3.*does not exist"):
        find_folds(str(root))
    out = tmp_path / "report"
    argv = ["experiment", root, "-o", out, "--systems", "lambdamart", "--leaves", "4"]
    rc, _, err = run([*argv, "--learning-rates", "0.1", "--max-trees", "2", "-q"], capsys)
    one_line_error(rc, err, "Fold3", str(tmp_path / "moved"), "does not exist")
    assert not out.exists()
    os.remove(root / "Fold3")
    assert [f[0] for f in find_folds(str(root))] == ["Fold1", "Fold2"]


def test_experiment_fold_order_is_numeric_and_links_are_named_by_the_link(tmp_path):
    """Holds: Fold10 after Fold2; a linked fold keeps its link's name."""
    rng = np.random.default_rng(1)
    root = tmp_path / "folds"
    for k in (10, 2, 1):
        _fold(root, f"Fold{k}", rng)
    real = _fold(tmp_path, "data3", rng)
    os.symlink(real, root / "Fold3")
    assert [f[0] for f in find_folds(str(root))] == ["Fold1", "Fold2", "Fold3", "Fold10"]


def test_experiment_fractional_label_in_one_folds_training_fails_first(tmp_path, capsys):
    """Holds: 1.5 in Fold2's train.txt (mcrank and lambdamart need grades) names its
    FILE:LINE before any cell trains and writes no report; in a validation or test
    file it is a graded label, as for ``train --valid`` and ``eval``."""
    rng = np.random.default_rng(2)
    root = tmp_path / "folds"
    _fold(root, "Fold1", rng)
    d = _fold(root, "Fold2", rng)
    rows = d.joinpath("train.txt").read_text().splitlines()
    rows[2] = "1.5" + rows[2][1:]
    _write(d / "train.txt", rows)
    out = tmp_path / "report"
    argv = ["experiment", root, "-o", out, "--systems", "lambdamart", "--leaves", "4"]
    argv += ["--learning-rates", "0.1", "--max-trees", "2", "--min-samples-leaf", "2", "-q"]
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, f"{d / 'train.txt'}:3", "label=1.5")
    assert not out.exists()


# --- hostile data that already held ---------------------------------------------------


def test_cv_one_grade_test_fold_scores_as_eval(tmp_path, capsys):
    """A fold whose test queries each have one grade: NDCG and MAP are
    empty_query_score (1), the value ``eval`` gives the same lines; one-document
    queries and a qid whose lines come in two separate runs of the file (one query,
    as train groups it) are kept."""
    rng = np.random.default_rng(3)
    rows = _lines([1, 2], 4, 3, rng, label=0) + _lines([3, 4], 4, 3, rng)
    rows += _lines([5], 1, 3, rng) + _lines([3], 2, 3, rng) + _lines([6], 4, 3, rng, label=2)
    data = _write(tmp_path / "d.txt", rows)
    qid = load_svmlight(data).qid
    assert len(np.unique(qid)) == 6
    fold = query_folds(qid, 3, 0)
    rc, out, err = run(
        ["cv", data, "--folds", "3", "--metric", "ndcg@5,map", "--json", *FAST], capsys
    )
    assert rc == 0, err
    res = json.loads(out)
    assert [f["n_queries"] for f in res["folds"]] == [2, 2, 2]
    one_grade = {1, 2, 6}
    for k in range(3):
        held = set(qid[fold == k].tolist())
        if held <= one_grade:
            assert res["folds"][k]["ndcg@5"] == res["folds"][k]["map"] == 1.0


def test_cv_fractional_label_in_one_fold_fails_before_any_fold(tmp_path, capsys):
    """Holds: label 1.5 on one line is refused naming FILE:LINE and the first fold
    whose training data holds it, before any fold's line is printed."""
    rng = np.random.default_rng(4)
    rows = _lines(range(1, 7), 4, 3, rng)
    rows[9] = "1.5" + rows[9][1:]
    data = _write(tmp_path / "f.txt", rows)
    rc, out, err = run(["cv", data, "--folds", "3", *FAST], capsys)
    line = one_line_error(rc, err, f"{data}:10", "label=1.5")
    assert re.match(r"ltrboost: error: fold [123]/3: ", line)
    assert out == ""


def test_a_comment_that_is_not_utf8_is_named_as_a_comment(tmp_path, capsys):
    """A Latin-1 comment (``# café``) on a data line: refused (the reader reads UTF-8
    text, README) but as "not UTF-8 text (byte 0xe9); is this a binary file?", which
    sends one looking for binary data in a text file.  The error now says the byte is
    in the comment and how to re-encode the file."""
    rng = np.random.default_rng(5)
    rows = _lines(range(1, 5), 3, 3, rng)
    data = tmp_path / "latin1.txt"
    data.write_bytes(
        ("\n".join(rows[:4]) + "\n").encode()
        + (rows[4] + " # docid = caf\xe9\n").encode("latin-1")
        + ("\n".join(rows[5:]) + "\n").encode()
    )
    rc, _, err = run(["cv", data, "--folds", "2", *FAST], capsys)
    one_line_error(rc, err, f"{data}:5", "byte 0xe9", "in the comment after", "UTF-8")
    assert "binary" not in err
    # a byte outside a comment is still the binary-file question
    data.write_bytes(b"1 qid:1 1:0.5\n0 qid:1 1:\xff\n")
    rc, _, err = run(["cv", data, "--folds", "2", *FAST], capsys)
    one_line_error(rc, err, f"{data}:2", "byte 0xff", "binary file")

"""`ltrboost train --n-features N`: a validation file may use higher feature indices than
the training file (a sparse subsample of Yahoo!'s 700 features, say); the training data
is then read that wide (the extra features are absent in it, so no tree splits on them).
And cv's refusals of train's file flags, saying why."""

from __future__ import annotations

import json

from ltrboost.cli import main

TRAIN = "1 qid:1 1:0.5 2:0.1\n0 qid:1 1:0.2 2:0.3\n2 qid:2 1:0.9\n0 qid:2 2:0.4\n"
VALID = "1 qid:3 1:0.5 5:0.1\n0 qid:3 1:0.2 2:0.3\n"


def _files(tmp_path):
    (tmp_path / "tr.txt").write_text(TRAIN)
    (tmp_path / "va.txt").write_text(VALID)
    return str(tmp_path / "tr.txt"), str(tmp_path / "va.txt"), str(tmp_path / "m.json")


def _train(*argv):
    return main(["train", *argv, "--n-estimators", "2", "--min-samples-leaf", "1", "--quiet"])


def test_a_wider_validation_file_names_the_flag_that_reads_the_training_data_wider(
    tmp_path, capsys
):
    tr, va, m = _files(tmp_path)
    assert _train(tr, "--valid", va, "-o", m) == 2
    err = capsys.readouterr().err
    assert "va.txt:1: feature index 5 is above the 2 features of the training data" in err
    assert "--n-features 5" in err


def test_n_features_reads_the_training_data_that_wide(tmp_path, capsys):
    tr, va, m = _files(tmp_path)
    assert _train(tr, "--valid", va, "-o", m, "--n-features", "5") == 0
    doc = json.loads(open(m).read())
    assert doc["n_features"] == 5
    assert doc["feature_names"] == ["f1", "f2", "f3", "f4", "f5"]
    # predict and eval take files up to that width
    (tmp_path / "te.txt").write_text(VALID)
    assert main(["eval", m, str(tmp_path / "te.txt")]) == 0


def test_n_features_below_the_training_files_highest_index_names_the_flag(tmp_path, capsys):
    tr, _, m = _files(tmp_path)
    assert _train(tr, "-o", m, "--n-features", "1") == 2
    err = capsys.readouterr().err
    assert "tr.txt:1: feature index 2 is above --n-features 1" in err, err


def test_n_features_must_be_positive_and_agree_with_a_resumed_model(tmp_path, capsys):
    tr, _, m = _files(tmp_path)
    assert _train(tr, "-o", m, "--n-features", "0") == 2
    assert "--n-features=0 must be >= 1" in capsys.readouterr().err
    assert _train(tr, "-o", m) == 0
    capsys.readouterr()
    m2 = str(tmp_path / "m2.json")
    assert _train(tr, "-o", m2, "--resume", m, "--n-features", "5") == 2
    err = capsys.readouterr().err
    assert "--n-features 5" in err, err
    assert "has 2 features" in err, err


def test_cv_names_why_it_refuses_trains_file_flags(tmp_path, capsys):
    # they got argparse's "did you mean --pairs-per-sample?" (for --pairs) or similar
    tr, _, _ = _files(tmp_path)
    for flag, value, why in [
        ("--pairs", "p.txt", "labels alone"),
        ("--position", "p.pos", "no --unbiased"),
        ("--resume", "m.json", "from scratch"),
        ("--checkpoint-every", "3", "writes no model"),
    ]:
        assert main(["cv", tr, flag, value]) == 2
        err = capsys.readouterr().err
        assert f"{flag} is not available in cv: " in err, err
        assert why in err, err
        assert "did you mean" not in err, err

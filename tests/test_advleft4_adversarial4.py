"""Usability leftovers of the earlier adversarial passes: convert's labels and summary
line, ``-`` as an input file, ``verbose=-1`` and ``np.bool_`` verbose, continuing a model
that had already stopped early, best_iteration 0 in the CLI summary, and the
ignored-parameter warning naming the CLI's flags."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.datasets import make_ranking
from ltrboost.io.letor import dump_svmlight
from test_cli import assert_one_line_error, run

SMALL = dict(min_samples_leaf=5, n_threads=1)
ONE_ROUND = ["--n-estimators", "1", "-q", "--min-samples-leaf", "5"]


@pytest.fixture(scope="module")
def letor(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("advleft4")
    X, y, qid = make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=0)
    path = folder / "train.txt"
    dump_svmlight(path, X, y, qid)
    return path


# --- 1. convert's labels (no change: a regression lock) -------------------------------
@pytest.mark.parametrize("label", ["nan", "-inf", "1e400"])
def test_convert_refuses_non_finite_labels_at_their_line(tmp_path, capsys, label):
    """Non-finite labels, the one label check every objective makes, are refused by the
    reader at FILE:LINE; negative labels (mart, ranknet, logistic_rank train on them)
    are converted."""
    pytest.importorskip("pyarrow")
    src = tmp_path / "t.txt"
    src.write_text(f"1 qid:1 1:0.5\n{label} qid:1 1:0.2\n")
    rc, _, err = run(["convert", src, tmp_path / "o"], capsys)
    assert_one_line_error(rc, err, f"{src}:2: label '{label}' is not a finite number")
    assert not (tmp_path / "o").exists()
    src.write_text("1 qid:1 1:0.5\n-1 qid:1 1:0.2\n")
    rc, _, err = run(["convert", src, tmp_path / "o"], capsys)
    assert rc == 0, err


# --- 2. convert's summary line ---------------------------------------------------------
def test_convert_says_one_file_in_the_singular(letor, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    rc, _, err = run(["convert", letor, tmp_path / "o"], capsys)
    assert rc == 0, err
    assert f"wrote 1 Parquet file to {tmp_path / 'o'}" in err
    rc, _, err = run(["convert", letor, tmp_path / "p", "--rows-per-file", "40"], capsys)
    assert rc == 0, err
    assert "wrote 4 Parquet files to" in err


# --- 3. '-' as an input file -----------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["train", "-"], "TRAIN"),
        (["train", "{data}", "--valid", "-"], "--valid"),
        (["train", "{data}", "--resume", "-"], "--resume"),
        (["train", "{data}", "--objective", "ranknet", "--pairs", "-"], "--pairs"),
        (["predict", "-", "{data}"], "MODEL"),
        (["predict", "{model}", "-"], "DATA"),
        (["eval", "{model}", "{data}", "-"], "DATA"),
        (["cv", "-"], "DATA"),
        (["convert", "-", "{out}"], "DATA"),
        (["inspect", "-"], "MODEL"),
        (["clicks", "simulate", "-", "-o", "{out}"], "DATA"),
        (["clicks", "mine", "-", "--data", "{data}", "-o", "{out}"], "LOG"),
        (["clicks", "mine", "{data}", "--data", "-", "-o", "{out}"], "--data"),
    ],
)
def test_dash_input_is_refused_as_stdin(letor, tmp_path, capsys, argv, name):
    """'-' read a file named '-' ("-: No such file or directory"): stdin is not read,
    and the message says so (and how to read a pipe)."""
    model = tmp_path / "m.json"
    model.write_text("{}")
    values = {"data": letor, "model": model, "out": tmp_path / "out"}
    argv = [a.format(**values) for a in argv]
    rc, _, err = run(argv, capsys)
    assert_one_line_error(rc, err, f"{name} '-':", "standard input is not read", "/dev/stdin")
    assert not (tmp_path / "out").exists()


def test_dash_as_a_missing_token_is_not_a_file(letor, tmp_path, capsys):
    """Only file arguments are checked: '-' is a valid --missing-token."""
    rc, _, err = run(
        ["train", letor, "--missing-token", "-", *ONE_ROUND, "-o", tmp_path / "m.json"],
        capsys,
    )
    assert rc == 0, err


# --- 4. verbose=-1 and np.bool_ --------------------------------------------------------
def _data():
    X, y, qid = make_ranking(n_queries=12, docs_per_query=6, n_features=4, random_state=0)
    return X, y, qid


def _round_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("[")]


@pytest.mark.parametrize("verbose", [-1, -5, np.int64(-1)])
def test_negative_verbose_is_silent(caplog, verbose):
    """LightGBM's way to silence a model, ``verbose=-1``, was refused."""
    caplog.set_level(logging.INFO, logger="ltrboost")
    X, y, qid = _data()
    Ranker(n_estimators=2, verbose=verbose, **SMALL).fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    Ranker(n_estimators=2, **SMALL).fit(X, y, qid=qid, eval_set=[(X, y, qid)], verbose=verbose)
    assert _round_lines(caplog) == []


def test_numpy_bool_verbose_is_a_bool(caplog):
    """The message says "(or a bool)", but ``np.True_`` was refused."""
    caplog.set_level(logging.INFO, logger="ltrboost")
    X, y, qid = _data()
    Ranker(n_estimators=2, verbose=np.True_, **SMALL).fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    assert len(_round_lines(caplog)) == 2
    caplog.clear()
    Ranker(n_estimators=2, verbose=np.False_, **SMALL).fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    assert _round_lines(caplog) == []


@pytest.mark.parametrize("bad", [1.5, "2", None])
def test_other_verbose_values_are_still_refused(bad):
    X, y, qid = _data()
    with pytest.raises(ValueError, match="verbose"):
        Ranker(n_estimators=1, verbose=bad, **SMALL).fit(X, y, qid=qid)


# --- 5. continuing a model that had already stopped early ----------------------------
def test_continuing_a_model_that_stopped_early_warns():
    """``fit(init_model=)`` of a model whose early stop was already met trained no round
    and said nothing: the model came back as it was."""
    X, y, qid = make_ranking(n_queries=30, docs_per_query=8, n_features=5, random_state=0)
    Xv, yv, qv = make_ranking(n_queries=10, docs_per_query=8, n_features=5, random_state=1)
    qv = qv + 1000  # queries of their own (equal ids would be warned of as shared)
    kw = dict(early_stopping_rounds=2, **SMALL)
    first = Ranker(n_estimators=100, **kw).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    done = first.booster_.n_iterations
    assert done < 100  # it stopped early
    with pytest.warns(UserWarning, match=r"already stopped early.*no round was added") as rec:
        again = Ranker(n_estimators=10, **kw).fit(
            X, y, qid=qid, eval_set=[(Xv, yv, qv)], init_model=first
        )
    assert again.booster_.n_iterations == done
    msg = str(rec[0].message)
    assert "early_stopping_rounds=2" in msg
    assert f"round {first.best_iteration_} of" in msg
    with warnings.catch_warnings():  # a larger early_stopping_rounds trains on, silently
        warnings.simplefilter("error")
        more = Ranker(n_estimators=3, **dict(kw, early_stopping_rounds=50)).fit(
            X, y, qid=qid, eval_set=[(Xv, yv, qv)], init_model=first
        )
    assert more.booster_.n_iterations == done + 3


def test_cli_resume_of_a_model_that_stopped_early_warns_with_flags(tmp_path, capsys):
    X, y, qid = make_ranking(n_queries=30, docs_per_query=8, n_features=5, random_state=0)
    Xv, yv, qv = make_ranking(
        n_queries=10, docs_per_query=8, n_features=5, first_qid=30, random_state=1
    )
    dump_svmlight(tmp_path / "t.txt", X, y, qid)
    dump_svmlight(tmp_path / "v.txt", Xv, yv, qv)
    common = ["--valid", tmp_path / "v.txt", "--early-stopping-rounds", "2", "-q"]
    common += ["--min-samples-leaf", "5", "--n-threads", "1"]
    rc, _, err = run(["train", tmp_path / "t.txt", "-o", tmp_path / "m.json", *common], capsys)
    assert rc == 0, err
    rc, _, err = run(
        [
            "train",
            tmp_path / "t.txt",
            "--resume",
            tmp_path / "m.json",
            "-o",
            tmp_path / "m2.json",
            *common,
            "--n-estimators",
            "200",
        ],
        capsys,
    )
    assert rc == 0, err
    assert "ltrboost: warning: the model to continue had already stopped early" in err
    assert "--early-stopping-rounds=2" in err
    assert "early_stopping_rounds" not in err


# --- 6. best_iteration 0 in the CLI summary ---------------------------------------------
def test_cli_summary_of_best_iteration_zero(letor, tmp_path, capsys, monkeypatch):
    """best_iteration 0 (a valid model file value: predict uses the initial score alone)
    was read as "no best iteration" and the last round's metric was printed beside it."""
    import ltrboost.booster

    real = ltrboost.booster.train

    def train_best_zero(*args, **kwargs):
        booster = real(*args, **kwargs)
        booster.best_iteration = 0
        return booster

    monkeypatch.setattr(ltrboost.booster, "train", train_best_zero)
    rc, _, err = run(
        [
            "train",
            letor,
            "--valid",
            letor,
            *ONE_ROUND,
            "--n-estimators",
            "3",
            "-o",
            tmp_path / "m.json",
        ],
        capsys,
    )
    assert rc == 0, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"wrote {tmp_path / 'm.json'}: 3 rounds, best iteration 0"), line
    assert "ndcg@10=" not in line  # round 0 (no tree) has no recorded metric
    assert "initial score alone" in line


# --- 7. the ignored-parameter warning names the CLI's flags ------------------------------
def test_cli_ignored_parameter_warning_names_flags(letor, tmp_path, capsys):
    rc, _, err = run(
        [
            "train",
            letor,
            "--objective",
            "mart",
            "--decay",
            "0.5",
            "--pair-method",
            "topk",
            *ONE_ROUND,
            "-o",
            tmp_path / "m.json",
        ],
        capsys,
    )
    assert rc == 0, err
    assert (
        "ltrboost: warning: objective 'mart' does not use --pair-method='topk', "
        "--decay=0.5; these parameters are ignored"
    ) in err
    rc, _, err = run(
        [
            "train",
            letor,
            "--objective",
            "ranknet",
            "--pairs-per-sample",
            "3",
            *ONE_ROUND,
            "-o",
            tmp_path / "m.json",
        ],
        capsys,
    )
    assert rc == 0, err
    assert "does not use --pairs-per-sample=3;" in err


def test_python_ignored_parameter_warning_keeps_keywords():
    X, y, qid = _data()
    with pytest.warns(UserWarning, match=r"objective 'mart' does not use decay=0\.5;"):
        Ranker(objective="mart", decay=0.5, n_estimators=1, **SMALL).fit(X, y, qid=qid)

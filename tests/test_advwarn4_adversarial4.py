"""Warnings and errors of training that name its parameters (a fourth adversarial
pass): the CLI user reads ``--min-samples-leaf``, never ``min_samples_leaf`` -- neither
``name=value`` nor the bare name -- and the Python API keeps the keyword names."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ltrboost
from ltrboost.cli import main
from ltrboost.cli._common import _params_as_flags
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.io.letor import dump_svmlight
from ltrboost.params import PARAM_NAMES, ParameterError, ParameterWarning

FAST = ["-q", "--n-estimators", "2"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """LETOR files of 60 rows in 6 queries: grades 0-2, 0-1, 0-4; one with a single
    varying column; one with a label of 40; and position files from 1 and from 2."""
    folder = tmp_path_factory.mktemp("advwarn4")
    X, y, qid = make_ranking(n_queries=6, docs_per_query=10, n_features=4, random_state=0)
    rng = np.random.default_rng(0)
    files = {"folder": folder}

    def write(name, X=X, y=y):
        files[name] = str(folder / f"{name}.txt")
        dump_svmlight(files[name], X, y, qid=qid)

    write("train", y=rng.integers(0, 3, 60))
    write("binary", y=rng.integers(0, 2, 60))
    write("five", y=rng.integers(0, 5, 60))
    one = X.copy()
    one[:, 1:] = 0
    write("one_column", X=one)
    big = rng.integers(0, 3, 60)
    big[0] = 40
    write("label40", y=big)
    for name, first in (("pos1", 1), ("pos2", 2)):
        files[name] = str(folder / name)
        (folder / name).write_text("".join(f"{first + i % 10}\n" for i in range(60)))
    return files


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    _out, err = capsys.readouterr()
    return rc, err


_UNDERSCORED = [n for n in PARAM_NAMES if "_" in n]


def python_names(err: str) -> list[str]:
    """The training parameters ``err`` names by their Python names: ``name=`` of any,
    or the bare name of one with an underscore (flags and env variables removed)."""
    rest = re.sub(r"--[\w-]+|\$\w+", " ", err)
    found = [n for n in PARAM_NAMES if re.search(rf"(?<![\w-]){n}=", rest)]
    return found + [n for n in _UNDERSCORED if re.search(rf"(?<![\w-]){n}(?![\w-])", rest)]


def train(data, capsys, tmp_path, *flags, file="train", rc=0):
    got, err = run(["train", data[file], "-o", tmp_path / "m.json", *FAST, *flags], capsys)
    assert got == rc, err
    assert python_names(err) == [], err
    return err


# --- warnings of training ----------------------------------------------------------------


def test_cli_no_split_possible_names_the_flag(data, capsys, tmp_path):
    err = train(data, capsys, tmp_path, "--min-samples-leaf", "40")
    assert "warning: --min-samples-leaf=40 needs 80 documents to split a node" in err


def test_cli_one_bin_names_the_flag_twice(data, capsys, tmp_path):
    """The cause said ``min_samples_bin=50 ... lower min_samples_bin`` (the bare name
    stayed Python's after ``name=`` became the flag)."""
    err = train(data, capsys, tmp_path, "--min-samples-bin", "50")
    assert "--min-samples-bin=50 leaves every feature column one bin" in err
    assert "lower --min-samples-bin)" in err


def test_cli_no_split_meets_names_the_flags(data, capsys, tmp_path):
    err = train(data, capsys, tmp_path, "--min-gain-to-split", "1e9")
    assert (
        "no split meets --min-samples-leaf=20, --min-sum-hessian-in-leaf=0.001 and "
        "--min-gain-to-split=1000000000.0" in err
    )


def test_cli_colsample_names_the_flag_twice(data, capsys, tmp_path):
    err = train(data, capsys, tmp_path, "--colsample-bytree", "0.25", file="one_column")
    assert "--colsample-bytree=0.25 draws 1 of all 4 feature columns" in err
    assert "raise --colsample-bytree)" in err


def test_cli_objective_causes_name_the_flags(data, capsys, tmp_path):
    # thresholds outside the grades are refused before training since advlabel5
    flags = ("--lambda-metric", "map", "--relevance-threshold", "5")
    err = train(data, capsys, tmp_path, *flags, rc=2)
    assert "--relevance-threshold=5 counts no training document relevant" in err
    flags = ("--objective", "logistic_rank", "--positive-threshold", "9")
    err = train(data, capsys, tmp_path, *flags, rc=2)
    assert "--positive-threshold=9 makes every training document negative" in err


def test_cli_positions_from_2_name_the_flag(data, capsys, tmp_path):
    err = train(data, capsys, tmp_path, "--unbiased", "true", "--position", data["pos2"])
    assert "warning: --unbiased=True: no training row was shown at position 1" in err


def test_cli_logistic_threshold_on_resume_names_the_flag(data, capsys, tmp_path):
    """The warning said ``positive_threshold resolves to ...`` and ``the model continued
    (init_model)``: Python's names of ``--positive-threshold`` and ``--resume``."""
    first = tmp_path / "lr.json"
    rc, err = run(
        ["train", data["binary"], "-o", first, *FAST, "--objective", "logistic_rank"], capsys
    )
    assert rc == 0, err
    err = train(
        data, capsys, tmp_path, "--objective", "logistic_rank", "--resume", first, file="five"
    )
    assert "logistic_rank: --positive-threshold resolves to 2 on these labels" in err
    assert "pass --positive-threshold=1 to keep the model's" in err
    assert "init_model" not in err


def test_cli_resume_differences_name_the_flags(data, capsys, tmp_path):
    """``--resume M: max_positions None (model: 5) differ from the model's`` named the
    flag by its Python name (the CLI's own warning)."""
    first = tmp_path / "u.json"
    flags = ["--unbiased", "true", "--position", data["pos1"]]
    rc, err = run(
        ["train", data["train"], "-o", first, *FAST, *flags, "--max-positions", "5"], capsys
    )
    assert rc == 0, err
    rc, err = run(
        ["train", data["train"], "-o", tmp_path / "m.json", *FAST, *flags, "--resume", first],
        capsys,
    )
    assert rc == 2
    # refused from the model file, before the data (and the warning that the flags
    # differ): advclicks6
    assert "the model's position biases cover --max-positions 5, this run's 32" in err
    assert "give --max-positions 5 to continue it" in err
    assert python_names(err) == [], err


# --- errors of training ------------------------------------------------------------------


def test_cli_unbiased_errors_name_the_flags(data, capsys, tmp_path):
    pos = ["--unbiased", "true", "--position", data["pos1"]]
    err = train(data, capsys, tmp_path, *pos, "--split-criterion", "ole", rc=2)
    assert "error: --unbiased=True does not support --split-criterion='ole'" in err
    err = train(data, capsys, tmp_path, *pos, "--objective", "ranknet", rc=2)
    assert "error: --unbiased=True is Unbiased LambdaMART (--objective='lambdamart')" in err
    err = train(data, capsys, tmp_path, *pos, "--lambda-metric", "err", rc=2)
    assert "--lambda-metric='ndcg' with --pair-method 'topk' or 'all'" in err


def test_cli_resume_unbiased_from_a_plain_model_names_the_flag(data, capsys, tmp_path):
    plain = tmp_path / "plain.json"
    rc, err = run(["train", data["train"], "-o", plain, *FAST], capsys)
    assert rc == 0, err
    err = train(
        data, capsys, tmp_path, "--unbiased", "true", "--position", data["pos1"],
        "--resume", plain, rc=2,
    )  # fmt: skip
    # refused from the model file, before the data: advclicks6
    assert "the model was trained without --unbiased true: it holds no position bias" in err
    assert python_names(err) == [], err


def test_cli_label_pairs_off_names_the_flag(data, capsys, tmp_path):
    err = train(data, capsys, tmp_path, "--objective", "ranknet", "--use-label-pairs", "0", rc=2)
    # refused from the flags alone now, before the data is read (names the flag too)
    assert "--use-label-pairs false: ranknet then learns from explicit preference" in err
    assert "or drop --use-label-pairs" in err
    assert "use_label_pairs" not in err


def test_cli_memory_limits_name_the_flags(data, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("LTRBOOST_MAX_HISTOGRAM_BYTES", "100")
    err = train(data, capsys, tmp_path, rc=2)
    assert "lower --max-bins or --max-leaf-nodes, select features" in err
    monkeypatch.delenv("LTRBOOST_MAX_HISTOGRAM_BYTES")
    monkeypatch.setenv("LTRBOOST_MAX_QUERY_PAIRS", "5")
    err = train(data, capsys, tmp_path, "--objective", "gbrank", rc=2)
    assert "(and offer --pair-method='topk' with a --truncation-level, or 'sampled')" in err
    err = train(data, capsys, tmp_path, "--objective", "yetirank", rc=2)
    assert "yetirank with --permutations=10 holds 90 pairs" in err
    assert "lower --permutations=10" in err
    monkeypatch.delenv("LTRBOOST_MAX_QUERY_PAIRS")
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", "5")
    err = train(data, capsys, tmp_path, "--objective", "ranknet", "--split-criterion", "ole", rc=2)
    assert "error: --split-criterion='ole' holds every pair of a round in memory" in err
    assert (
        "Use --pair-method='topk' with a --truncation-level, --pair-method='sampled', "
        "or --split-criterion='newton' (ranknet)" in err
    )
    err = train(data, capsys, tmp_path, "--objective", "yetirank", "--split-criterion", "ole", rc=2)
    assert "Lower --permutations=10, or --split-criterion='newton' (yetirank)" in err


def test_cli_err_label_names_the_flags_and_keeps_the_line(data, capsys, tmp_path):
    err = train(data, capsys, tmp_path, "--lambda-metric", "err", file="label40", rc=2)
    assert err.startswith(f"ltrboost: error: {data['label40']}:1: label 40 is too large")
    assert "use --lambda-metric='ndcg' with --gain='linear'" in err


def test_cli_empty_metric_names_the_flag(data, capsys, tmp_path):
    """``--metric ,`` said ``eval_metric: no metric given``; the flag is ``--metric``."""
    err = train(data, capsys, tmp_path, "--metric", ",", rc=2)
    assert "error: --metric: no metric given in ','" in err


def test_cli_cv_warnings_name_the_flags(data, capsys, tmp_path):
    argv = ["cv", data["train"], "--folds", "2", "--n-estimators", "2"]
    rc, err = run([*argv, "--min-samples-leaf", "40"], capsys)
    assert rc == 0, err
    assert "--min-samples-leaf=40 needs" in err
    assert python_names(err) == [], err


# --- the Python API keeps the keyword names ----------------------------------------------


def _ds(y=None, **kw):
    X, y0, qid = make_ranking(n_queries=6, docs_per_query=10, n_features=4, random_state=0)
    return make_dataset(X, y0 if y is None else y, qid=qid, **kw)


def test_python_warnings_keep_the_keyword_names():
    with pytest.warns(UserWarning, match="one bin") as rec:
        ltrboost.train(dict(n_estimators=2, min_samples_bin=50), _ds())
    text = " ".join(str(r.message) for r in rec)
    assert "min_samples_bin=50 leaves every feature column one bin" in text
    assert "lower min_samples_bin)" in text
    assert any(issubclass(r.category, ParameterWarning) for r in rec)
    with pytest.warns(UserWarning, match=re.escape("min_samples_leaf=40 needs 80")):
        ltrboost.train(dict(n_estimators=2, min_samples_leaf=40), _ds())
    assert issubclass(ltrboost.PositionIgnoredWarning, ParameterWarning)
    assert issubclass(ParameterWarning, UserWarning)


def test_python_errors_keep_the_keyword_names():
    pos = np.tile(np.arange(1, 11), 6)
    with pytest.raises(ValueError, match="unbiased=True does not support split_criterion='ole'"):
        ltrboost.train(dict(unbiased=True, split_criterion="ole"), _ds(position=pos))
    with pytest.raises(ParameterError, match=re.escape("or drop use_label_pairs=False to learn")):
        ltrboost.train(dict(objective="ranknet", use_label_pairs=False), _ds())
    y = _ds().y.copy()
    y[0] = 40
    with pytest.raises(ltrboost.LTRInputError, match="use lambda_metric='ndcg' with gain="):
        ltrboost.train(dict(lambda_metric="err"), _ds(y=y))


def test_marked_messages_leave_paths_and_identifiers_alone():
    """Only a parameter's own name becomes a flag: not a folder, a file, an environment
    variable, a call, another library's name quoted, nor a one-word English name."""
    msg = (
        "/data/max_depth/x.txt: max_bins.txt, $LTRBOOST_MAX_BINS, get_metric(..), "
        "'max_depth', a pairwise objective, the exponential gain; max_depth=3, "
        "lower max_bins. raise colsample_bytree) eval_metric: decay=0.5"
    )
    assert _params_as_flags(msg, bare=True) == (
        "/data/max_depth/x.txt: max_bins.txt, $LTRBOOST_MAX_BINS, get_metric(..), "
        "'max_depth', a pairwise objective, the exponential gain; --max-depth=3, "
        "lower --max-bins. raise --colsample-bytree) --metric: --decay=0.5"
    )
    # unmarked messages (``BoosterParams.validate``'s): name= only, as before
    assert _params_as_flags("lower max_bins; max_bins=3") == "lower max_bins; --max-bins=3"

"""An outside review of today's training-side changes (a seventh adversarial pass):
the zero value of a root alone under ``min_sum_hessian_in_leaf`` and its warning,
unbiased LambdaMART's bias bound on resume, and the CLI under warnings as errors.

* ``python -W error -m ltrboost.cli train ...`` (or ``PYTHONWARNINGS=error``): a warning
  such as the root-alone one is raised as an exception, which the CLI let out as a
  traceback (status 1) instead of its one ``ltrboost: error:`` line naming the flags.
* ``min_sum_hessian_in_leaf`` set above what the data's hessians can reach (a root's
  hessian sum of 14.6 under a limit of 1e9): the root-alone warning said that the
  hessians had all but vanished (saturated scores, a class without documents), which
  is not the cause; it now names the limit as the cause.
* Resuming unbiased LambdaMART from a model file whose position biases lie outside the
  bound: they are clipped, and the warning said the bias "is 1e-06 after round 2 ...
  check the clicks and sample weights at position 2", blaming the click log for a value
  that came from the file; it now names the file's value and the clipping.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import ltrboost
from ltrboost import train
from ltrboost.cli import main
from ltrboost.dataset import make_dataset
from ltrboost.objectives import unbiased as U
from ltrboost.params import ParameterWarning


def _data(seed=0, n_queries=20, docs=10, max_label=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * docs, 5))
    y = rng.integers(0, max_label + 1, size=n_queries * docs).astype(np.float64)
    return X, y, np.repeat(np.arange(n_queries), docs)


X, Y, QID = _data()


def _flat_root_messages(params, **kw) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(dict(dict(min_samples_leaf=5), **params), make_dataset(X, Y, qid=QID), **kw)
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, ParameterWarning) and "hessian sum" in str(w.message)
    ]


# --- the CLI under warnings as errors ---------------------------------------------------


def _train_file(tmp_path: Path) -> Path:
    from ltrboost.io.letor import dump_svmlight

    data = tmp_path / "train.txt"
    dump_svmlight(data, X, Y, qid=QID)
    return data


SATURATING = ["--objective", "logistic_rank", "--learning-rate", "1000", "--n-estimators", "3"]


def test_cli_warning_raised_as_error_is_one_error_line(tmp_path: Path, capsys) -> None:
    # -W error: round 2's root-alone ParameterWarning is an exception; it left main as
    # a traceback (Python's ParameterWarning: ... min_sum_hessian_in_leaf=0.001 ...)
    data = _train_file(tmp_path)
    out = tmp_path / "m.json"
    args = ["train", str(data), "-q", "-o", str(out), "--min-samples-leaf", "5", *SATURATING]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ltrboost: error: round 2: the tree is one leaf")
    assert "--min-sum-hessian-in-leaf" in lines[0]  # the flags, as the warning line has
    assert "min_sum_hessian_in_leaf" not in lines[0]
    assert not out.exists()


def test_cli_warnings_as_errors_from_the_interpreter_flag(tmp_path: Path) -> None:
    # the same through `python -W error -m ltrboost.cli` (a user's PYTHONWARNINGS=error)
    import subprocess

    data = _train_file(tmp_path)
    out = tmp_path / "m.json"
    cmd = [sys.executable, "-W", "error", "-m", "ltrboost.cli", "train", str(data), "-q"]
    cmd += ["-o", str(out), "--min-samples-leaf", "5", *SATURATING]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert run.stderr.startswith("ltrboost: error: round 2: "), run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert not out.exists()


# --- the root-alone warning names the cause it has --------------------------------------


@pytest.mark.parametrize("objective", ["lambdamart", "mart"])
def test_limit_above_the_data_hessians_is_named_as_the_cause(objective) -> None:
    # a root whose hessian sum (14.6 for lambdamart, 200 for mart) is far from vanished:
    # the warning blamed saturated scores or a class almost no document is in
    msgs = _flat_root_messages(
        dict(objective=objective, min_sum_hessian_in_leaf=1e9, n_estimators=2)
    )
    assert len(msgs) == 1, msgs
    assert msgs[0].startswith("round 1: ")
    assert "vanished" not in msgs[0]
    assert "saturated" not in msgs[0]
    assert "min_sum_hessian_in_leaf=1e+09 is above" in msgs[0]
    assert "lower it" in msgs[0]


def test_vanished_hessians_keep_their_cause() -> None:
    msgs = _flat_root_messages(dict(objective="logistic_rank", learning_rate=1e3, n_estimators=3))
    assert len(msgs) == 1, msgs
    assert "the hessians all but vanished" in msgs[0]
    assert "is above" not in msgs[0]


# --- resuming unbiased LambdaMART from biases outside the bound -------------------------


def _pbm(n_queries=100, n_docs=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * n_docs, 3))
    pos = np.tile(np.arange(1, n_docs + 1), n_queries)
    y = (rng.random(pos.size) < 0.5 / pos).astype(float)
    return X, y, np.repeat(np.arange(n_queries), n_docs), pos


UNBIASED = dict(
    unbiased=True, n_estimators=2, max_positions=4, lambda_normalization=False, n_threads=1
)


def _resume_with_bias(bias) -> list[str]:
    Xp, yp, qp, pos = _pbm()
    first = ltrboost.train(UNBIASED, make_dataset(Xp, yp, qid=qp, position=pos))
    d = json.loads(json.dumps(first.to_dict()))
    d["position_bias"] = bias
    model = ltrboost.model.booster_from_dict(d)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ltrboost.train(
            dict(UNBIASED, n_estimators=4),
            make_dataset(Xp, yp, qid=qp, position=pos),
            init_model=model,
        )
    return [str(w.message) for w in caught if issubclass(w.category, ParameterWarning)]


def test_resume_from_biases_outside_the_bound_names_the_file_value() -> None:
    # t_plus_2 = 1e-25 in the file: it warned "the position bias t_plus of position 2 is
    # 1e-06 after round 2 ...: no click log supports an estimate that far from position
    # 1's; check the clicks and sample weights at position 2" -- the clicks were not it
    msgs = _resume_with_bias({"t_plus": [1, 1e-25, 1, 1], "t_minus": [1, 1, 1, 1e30]})
    bound = [m for m in msgs if "bound" in m]
    assert len(bound) == 1, msgs
    m = bound[0]
    assert "t_plus of position 2 is 1e-25 in the model" in m
    assert "clipped to 1e-06" in m
    assert "check the clicks" not in m
    assert "\n" not in m


def test_resume_from_biases_inside_the_bound_says_nothing() -> None:
    msgs = _resume_with_bias({"t_plus": [1, 0.5, 0.3, 0.2], "t_minus": [1, 0.9, 0.8, 0.7]})
    assert [m for m in msgs if "bound" in m] == []


def test_bound_kept_after_clipping_resume() -> None:
    # the clipped values are what training continues from (fca7085), unchanged here
    Xp, yp, qp, pos = _pbm()
    first = ltrboost.train(UNBIASED, make_dataset(Xp, yp, qid=qp, position=pos))
    d = json.loads(json.dumps(first.to_dict()))
    d["position_bias"] = {"t_plus": [1, 1e-25, 1, 1], "t_minus": [1, 1, 1, 1e30]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        resumed = ltrboost.train(
            dict(UNBIASED, n_estimators=4),
            make_dataset(Xp, yp, qid=qp, position=pos),
            init_model=ltrboost.model.booster_from_dict(d),
        )
    for t in resumed.position_bias.values():
        assert 1.0 / U.BIAS_BOUND <= min(t) <= max(t) <= U.BIAS_BOUND

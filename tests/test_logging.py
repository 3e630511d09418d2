"""Logging of training (``Ranker(verbose=N)``, ``log_evaluation``) and the porting aids
``eval_qid=`` / ``eval_group=`` of ``Ranker.fit``."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ltrboost
from ltrboost import Ranker
from ltrboost.callbacks import log_evaluation
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking

SMALL = dict(n_estimators=5, max_leaf_nodes=7, min_samples_leaf=5, n_threads=2)
SRC = Path(__file__).resolve().parent.parent / "src"


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=24, docs_per_query=(4, 10), n_features=5, random_state=0)
    Xv, yv, qv = make_ranking(
        n_queries=10, docs_per_query=(4, 10), n_features=5, first_qid=24, random_state=1
    )
    return X, y, qid, Xv, yv, qv


def _round_lines(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "ltrboost" and r.getMessage().startswith("[")
    ]


def test_silent_by_default(data, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="ltrboost")
    X, y, qid, Xv, yv, qv = data
    Ranker(**SMALL).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    assert _round_lines(caplog) == []


@pytest.mark.parametrize(
    ("verbose", "rounds"), [(1, [1, 2, 3, 4, 5]), (2, [2, 4, 5]), (True, [1, 2, 3, 4, 5])]
)
def test_verbose_logs_every_period_and_the_last_round(data, caplog, verbose, rounds) -> None:
    caplog.set_level(logging.INFO, logger="ltrboost")
    X, y, qid, Xv, yv, qv = data
    model = Ranker(verbose=verbose, eval_metric="ndcg@5,map", **SMALL)
    model.fit(X, y, qid=qid, eval_set=[(Xv, yv, qv), (X, y, qid)], eval_names=["v", "t"])
    lines = _round_lines(caplog)
    res = model.evals_result_
    expected = [
        f"[{r}]\t"
        + "\t".join(
            f"{name}'s {m}: {res[name][m][r - 1]:.6g}"
            for name in ("v", "t")
            for m in ("ndcg@5", "map")
        )
        for r in rounds
    ]
    assert lines == expected
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name == "ltrboost")


def test_fit_verbose_overrides_constructor(data, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ltrboost")
    X, y, qid, Xv, yv, qv = data
    Ranker(verbose=1, **SMALL).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)], verbose=0)
    assert _round_lines(caplog) == []
    Ranker(**SMALL).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)], verbose=5)
    assert [line.split("\t")[0] for line in _round_lines(caplog)] == ["[5]"]


def test_without_validation_set_logs_the_round(data, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ltrboost")
    X, y, qid, *_ = data
    Ranker(verbose=2, **SMALL).fit(X, y, qid=qid)
    lines = _round_lines(caplog)
    assert [line.split("\t")[0] for line in lines] == ["[2]", "[4]", "[5]"]
    assert all(line.endswith(" s") for line in lines)


def test_early_stopping_is_logged(data, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ltrboost")
    X, y, qid, Xv, yv, qv = data
    model = Ranker(verbose=1, early_stopping_rounds=1, **dict(SMALL, n_estimators=200))
    model.fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    booster = model.booster_
    assert booster.n_iterations < 200  # stopped early, so the message must say so
    best = booster.best_iteration
    value = booster.evals_result["valid_0"]["ndcg@10"][best - 1]
    last = [r.getMessage() for r in caplog.records if r.name == "ltrboost"][-1]
    assert last == (
        f"early stopping after {booster.n_iterations} rounds; best round [{best}]"
        f"\tvalid_0's ndcg@10: {value:.6g}"
    )


def test_log_evaluation_callback_with_train(data, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ltrboost")
    X, y, qid, Xv, yv, qv = data
    params = dict(SMALL, n_estimators=4)
    booster = ltrboost.train(
        params,
        make_dataset(X, y, qid=qid),
        [("valid", make_dataset(Xv, yv, qid=qv))],
        callbacks=[ltrboost.log_evaluation(3)],
    )
    values = booster.evals_result["valid"]["ndcg@10"]
    assert _round_lines(caplog) == [
        f"[3]\tvalid's ndcg@10: {values[2]:.6g}",
        f"[4]\tvalid's ndcg@10: {values[3]:.6g}",
    ]


@pytest.mark.parametrize("bad", [-1, 1.5, "2"])
def test_bad_period_is_refused(bad, data) -> None:
    with pytest.raises(ValueError, match="non-negative integer"):
        log_evaluation(bad)
    if bad == -1:  # verbose=-1 is silent (LightGBM's); log_evaluation(-1) is refused
        return
    X, y, qid, *_ = data
    with pytest.raises(ValueError, match="verbose"):
        Ranker(verbose=bad, **SMALL).fit(X, y, qid=qid)


def test_lines_reach_stderr_when_logging_is_not_configured(tmp_path) -> None:
    """No logging configuration at all: verbose output is still seen (on stderr)."""
    script = textwrap.dedent(
        """
        from ltrboost import Ranker
        from ltrboost.datasets import make_ranking
        X, y, qid = make_ranking(n_queries=12, docs_per_query=6, n_features=4, random_state=0)
        Ranker(n_estimators=2, min_samples_leaf=3, n_threads=1).fit(
            X, y, qid=qid, eval_set=[(X, y, qid)], verbose=1)
        Ranker(n_estimators=2, min_samples_leaf=3, n_threads=1).fit(X, y, qid=qid)
        print("done")
        """
    )
    env = {"PYTHONPATH": str(SRC), "NUMBA_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    lines = [line for line in proc.stderr.splitlines() if line.startswith("[")]
    assert [line.split("\t")[0] for line in lines] == ["[1]", "[2]"]
    assert "valid_0's ndcg@10: " in lines[0]


# --- eval_qid / eval_group (XGBoost / LightGBM style) ---


def _sizes(qid):
    return np.unique(qid, return_counts=True)[1]


def test_eval_qid_and_eval_group_match_tuples(data) -> None:
    X, y, qid, Xv, yv, qv = data
    ref = Ranker(**SMALL).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv), (X, y, qid)])
    by_qid = Ranker(**SMALL).fit(X, y, qid=qid, eval_set=[(Xv, yv), (X, y)], eval_qid=[qv, qid])
    by_group = Ranker(**SMALL).fit(
        X, y, qid=qid, eval_set=[(Xv, yv), (X, y)], eval_group=[_sizes(qv), _sizes(qid)]
    )
    assert by_qid.evals_result_ == ref.evals_result_
    assert by_group.evals_result_ == ref.evals_result_
    # qv sorted: the group sizes describe the same queries
    assert np.all(np.diff(qv) >= 0)


def test_eval_group_differs_when_groups_differ(data) -> None:
    """The groups are used (the comparison above can fail)."""
    X, y, qid, Xv, yv, qv = data
    ref = Ranker(**SMALL).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_group=[_sizes(qv)])
    one = Ranker(**SMALL).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_group=[[len(yv)]])
    assert one.evals_result_ != ref.evals_result_


def test_eval_qid_errors(data) -> None:
    X, y, qid, Xv, yv, qv = data
    with pytest.raises(ValueError, match="not both"):
        Ranker(**SMALL).fit(
            X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv], eval_group=[_sizes(qv)]
        )
    with pytest.raises(ValueError, match="eval_qid has 1 entries but eval_set has 2"):
        Ranker(**SMALL).fit(X, y, qid=qid, eval_set=[(Xv, yv), (X, y)], eval_qid=[qv])
    with pytest.raises(ValueError, match="eval_group has 2 entries but eval_set has 0"):
        Ranker(**SMALL).fit(X, y, qid=qid, eval_group=[[3], [4]])
    with pytest.raises(ValueError, match=r"eval_set\[0\] has 3 elements; with eval_qid"):
        Ranker(**SMALL).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)], eval_qid=[qv])
    with pytest.raises(ValueError, match=r"eval_set\[0\] with eval_group\[0\]: "):
        Ranker(**SMALL).fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_group=[[3, 4]])

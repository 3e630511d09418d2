"""Every objective against degenerate but legal data: what its warnings say.

* ``xendcg`` on queries of one document each has no gradient at all (the softmax of one
  score is 1 whatever the score), so its trees are one leaf; the warning of a constant
  model named the split limits and then said the model "fits noise and ranks at random",
  which is what ``xendcg`` does on queries of one grade, not on queries of one document.
* A model whose trees split but give every document the same value (a Newton leaf equal
  on both sides of a split whose gain is rounding noise, 1e-16; QBRank's line search
  returning 0 for a tree that is no descent direction) predicts one constant score like
  a model of one-leaf trees, but trained without the warning of a constant model.
* ``sigma=1e-6`` (RankNet, LambdaMART) scales every pair's hessian by sigma^2: the root
  of each tree is under ``min_sum_hessian_in_leaf`` and the warning blamed saturated
  scores or a class almost no document is in, neither of which happened.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from ltrboost import make_dataset, train
from ltrboost.objectives.registry import available_objectives

SMALL = {"n_estimators": 5, "min_samples_leaf": 1, "n_threads": 1, "random_state": 7}


def _messages(params, X, y, qid, **data):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = train({**SMALL, **params}, make_dataset(X, y, qid=qid, **data))
    return model, [str(w.message) for w in caught]


# --- xendcg on queries of one document ----------------------------------------------


def test_xendcg_on_one_document_queries_names_the_queries_not_noise() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = rng.integers(0, 5, 60).astype(float)
    model, msgs = _messages({"objective": "xendcg"}, X, y, np.arange(60))
    assert np.ptp(model.predict(X)) == 0.0
    constant = [m for m in msgs if "predicts one constant score" in m]
    assert len(constant) == 1, msgs
    assert "every query holds one document" in constant[0]
    assert "noise" not in constant[0]
    assert "at random" not in constant[0]


def test_xendcg_on_one_grade_queries_still_warns_of_noise() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    qid = np.repeat(np.arange(6), 10)
    _, msgs = _messages({"objective": "xendcg"}, X, qid % 3, qid)
    assert any("ranks at random" in m for m in msgs), msgs
    assert not any("one document" in m for m in msgs), msgs


# --- trees that split into one value ----------------------------------------------------


def _positive_weight_of_one_grade():
    """Every document of positive weight has grade 0; the others (weight 0) grades 1, 2."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (np.arange(60) % 3).astype(float)
    return X, y, np.repeat(np.arange(6), 10), np.where(y >= 1, 0.0, 1.0)


@pytest.mark.parametrize(
    "params",
    [
        {"objective": "lambdamart", "lambda_metric": "err"},
        {"objective": "yetirank"},
        # qbrank left this case: its risk weighs a pair by the mean weight of its two
        # documents, so pairs with a zero-weight document count half and the (now
        # consistent) gradient learns from them (tests/test_mathfix12_adversarial12.py)
    ],
    ids=lambda p: "-".join(str(v) for v in p.values()),
)
def test_trees_of_one_value_warn_that_the_model_is_constant(params) -> None:
    X, y, qid, w = _positive_weight_of_one_grade()
    model, msgs = _messages(params, X, y, qid, sample_weight=w)
    assert np.ptp(model.predict(X)) == 0.0
    assert any(t.shape[0] > 1 for t in model.trees)  # the trees did split
    constant = [m for m in msgs if "predicts one constant score" in m]
    assert len(constant) == 1, msgs
    assert "every training label of positive weight is 0" in constant[0]
    assert "leaves of one value" in constant[0]


def test_one_leaf_trees_keep_their_message() -> None:
    X, y, qid, w = _positive_weight_of_one_grade()
    _, msgs = _messages({"objective": "lambdamart"}, X, y, qid, sample_weight=w)
    constant = [m for m in msgs if "predicts one constant score" in m]
    assert len(constant) == 1, msgs
    assert constant[0].startswith("every tree is one leaf, the model predicts")


def test_trees_that_change_the_scores_do_not_warn() -> None:
    X, y, qid, _ = _positive_weight_of_one_grade()
    _, msgs = _messages({"objective": "yetirank"}, X, y, qid)
    assert not any("constant score" in m for m in msgs), msgs


# --- a tiny sigma -------------------------------------------------------------------------


@pytest.mark.parametrize("objective", ["ranknet", "lambdamart"])
def test_a_tiny_sigma_is_named_when_the_hessians_vanish(objective) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = rng.integers(0, 5, 60).astype(float)
    model, msgs = _messages(
        {"objective": objective, "sigma": 1e-6}, X, y, np.repeat(np.arange(6), 10)
    )
    assert np.isfinite(model.predict(X)).all()
    flat = [m for m in msgs if "is under min_sum_hessian_in_leaf" in m]
    assert len(flat) == 1, msgs
    assert "sigma=1e-06" in flat[0]
    assert "sigma^2" in flat[0]


# --- what held: every objective on one set of every degeneracy at once ------------------


def _custom(scores, labels, query_offsets):
    return scores - labels, np.ones_like(scores)


def _degenerate():
    """Queries of one document, a query of zero weight, duplicate rows of different
    labels, a constant column, a column of NaN only, and grades 0 and 31."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(48, 4))
    X[:, 1] = 5.0
    X[:, 2] = np.nan
    X[24:36] = X[12:24]  # query 2 repeats query 1's rows
    y = rng.integers(0, 4, 48).astype(float)
    y[24:36] = 3 - y[12:24]
    y[40] = 31.0
    qid = np.repeat([0, 1, 2, 3], 12)
    qid[44:] = [4, 5, 6, 7]  # four queries of one document
    w = np.ones(48)
    w[:12] = 0.0  # query 0: zero weight
    return X, y, qid, w


@pytest.mark.parametrize("objective", [*available_objectives(), "custom"])
def test_every_objective_on_every_degeneracy_is_finite_and_thread_independent(objective):
    X, y, qid, w = _degenerate()
    params = {"objective": _custom if objective == "custom" else objective, "n_estimators": 4}
    params.update(min_samples_leaf=1, random_state=3)
    data = {} if objective == "custom" else {"sample_weight": w}
    files = []
    for threads in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = train({**params, "n_threads": threads}, make_dataset(X, y, qid=qid, **data))
        assert np.isfinite(model.predict(X)).all()
        files.append(json.dumps(model.to_dict(), sort_keys=True))
    assert files[0] == files[1]

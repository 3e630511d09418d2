"""A one-leaf tree whose hessian sum is under ``min_sum_hessian_in_leaf`` gets no step.

``logistic_rank`` or ``mcrank`` at ``learning_rate=1e3``: after round 1 the scores are
saturated, the float32 hessians underflow to 0 while the gradients stay finite, no split
can give both children ``min_sum_hessian_in_leaf`` (default 1e-3), and the tree is its
root alone, whose Newton value ``-G/(H + l2)`` divided by ~1e-22 was ~5e26: it made every
training score one number and training stopped (``NonFiniteTrainingError``), or a custom
objective's model became one huge constant.  A leaf under ``min_sum_hessian_in_leaf``
cannot exist as a split's child; now the root cannot be such a leaf either (as in
LightGBM, where a one-leaf tree is never added): its value is 0, training goes on as
for any root that cannot be split, and one :class:`ParameterWarning` names the round
and the parameter.  The same on Dask, with a custom objective, and in the CLI (a
warning line, a model file).  A root with enough hessian keeps its Newton step, and
``min_sum_hessian_in_leaf=0`` keeps the old step.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from ltrboost import train
from ltrboost.cli import main
from ltrboost.dataset import make_dataset
from ltrboost.params import ParameterWarning


def _data(seed=0, n_queries=20, docs=10, max_label=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * docs, 5))
    y = rng.integers(0, max_label + 1, size=n_queries * docs).astype(np.float64)
    return X, y, np.repeat(np.arange(n_queries), docs)


X, Y, QID = _data()
BASE = dict(min_samples_leaf=5)
RULE = "min_sum_hessian_in_leaf"


def _train(params, X=X, y=Y, qid=QID):
    return train(dict(BASE, **params), make_dataset(X, y, qid=qid))


def _ours(caught) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, ParameterWarning) and "hessian sum" in str(w.message)
    ]


def _train_recording(params, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b = _train(params, **kw)
    return b, _ours(caught)


def _flat_roots(b):
    """The trees that are a root alone with a hessian sum under the default limit."""
    return [t for t in b.trees if t.shape[0] == 1 and t["sum_hessians"][0] < 1e-3]


@pytest.mark.parametrize("objective", ["logistic_rank", "mcrank"])
def test_vanished_hessians_give_a_zero_tree_not_a_collapse(objective) -> None:
    b, msgs = _train_recording(dict(objective=objective, learning_rate=1e3, n_estimators=5))
    p = b.predict(X)
    assert np.isfinite(p).all()
    assert np.unique(p).size > 10  # it still ranks (round 1's trees)
    flat = _flat_roots(b)
    assert flat, "the data no longer reach the case"
    assert all(t["value"][0] == 0.0 for t in flat)
    assert len(msgs) == 1, msgs  # once, however many such trees
    assert msgs[0].startswith("round 2: ")
    assert f"{RULE}=0.001" in msgs[0]
    assert "\n" not in msgs[0]


def test_logistic_rank_zero_trees_leave_round_one_model() -> None:
    b = _train_recording(dict(objective="logistic_rank", learning_rate=1e3, n_estimators=5))[0]
    one = _train(dict(objective="logistic_rank", learning_rate=1e3, n_estimators=1))
    assert len(b.trees) == 5  # training went on, as for any root without a split
    assert all(t.shape[0] == 1 for t in b.trees[1:])
    np.testing.assert_array_equal(b.predict(X), one.predict(X))


def test_mcrank_names_the_output() -> None:
    msgs = _train_recording(dict(objective="mcrank", learning_rate=1e3, n_estimators=5))[1]
    assert "of output " in msgs[0]


def test_min_sum_hessian_zero_keeps_the_newton_step() -> None:
    # the rule is the parameter's: at 0 the round-2 tree has the old huge leaves
    params = dict(objective="logistic_rank", learning_rate=1e3, n_estimators=2, **{RULE: 0.0})
    b, msgs = _train_recording(params)
    assert msgs == []
    assert np.abs(b.trees[1]["value"]).max() > 1e20


def _constant_hessian(scores, labels, query_offsets):
    """Squared error with a hessian of 1e-4 per document: the root's is 0.02."""
    return scores - labels, np.full_like(scores, 1e-4)


@pytest.mark.parametrize(("limit", "zero"), [(0.03, True), (0.01, False)])
def test_custom_objective_root_under_the_limit_is_zero(limit, zero) -> None:
    # min_samples_leaf=150 of 200 documents: no root can be split, whatever its hessian
    params = dict(objective=_constant_hessian, min_samples_leaf=150, n_estimators=3)
    b, msgs = _train_recording({**params, RULE: limit})
    values = np.array([t["value"][0] for t in b.trees])
    assert all(t.shape[0] == 1 for t in b.trees)
    if zero:
        assert (values == 0.0).all()
        assert len(msgs) == 1
        assert msgs[0].startswith("round 1: ")
        assert f"{RULE}=0.03" in msgs[0]
    else:  # H = 0.02 >= 0.01: the Newton step -G/H, as before
        G = float(np.sum(0.0 - Y))  # round 1: scores 0
        np.testing.assert_allclose(values[0], -G / (200 * np.float32(1e-4)) * 0.1, rtol=1e-6)
        assert msgs == []


def test_mcrank_grade_no_document_holds_is_not_trained() -> None:
    # grade 3 absent: its prior is PRIOR_EPS, so its hessians sum to ~2.5e-4 over 200
    # documents and no split can be made; its Newton step pushed its score further
    # down every round (-0.8 before shrinkage).  Now its trees are 0 (LightGBM's
    # multiclass does not train a class without documents either).
    y = np.where(Y == 3, 4.0, Y)
    b, msgs = _train_recording(dict(objective="mcrank", n_estimators=3), y=y)
    trees3 = [t for t, k in zip(b.trees, b.tree_outputs, strict=True) if k == 3]
    assert len(trees3) == 3
    assert all(t.shape[0] == 1 and t["value"][0] == 0.0 for t in trees3)
    assert len(msgs) == 1
    assert msgs[0].startswith("round 1: the tree of output 3 (of 5)")
    assert "a class almost no document is in" in msgs[0]


def test_no_gradient_no_warning() -> None:
    # equal labels: gradients and hessians 0 for a pairwise loss, the step was 0 already
    b, msgs = _train_recording(dict(objective="lambdamart", n_estimators=2), y=np.ones_like(Y))
    assert all(t.shape[0] == 1 and t["value"][0] == 0.0 for t in b.trees)
    assert msgs == []


@pytest.mark.parametrize("objective", ["lambdamart", "logistic_rank", "mcrank", "mart"])
def test_normal_training_has_no_flat_root(objective) -> None:
    b, msgs = _train_recording(dict(objective=objective, n_estimators=10))
    assert msgs == []
    assert _flat_roots(b) == []


def test_cli_warns_in_one_line_and_saves_the_model(tmp_path: Path, capsys) -> None:
    from ltrboost.io.letor import dump_svmlight

    data = tmp_path / "train.txt"
    dump_svmlight(data, X, Y, qid=QID)
    out = tmp_path / "m.json"
    args = ["train", data, "-q", "-o", out, "--objective", "logistic_rank"]
    args += ["--n-estimators", "5", "--learning-rate", "1000", "--min-samples-leaf", "5"]
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert code == 0, err
    ours = [line for line in err.splitlines() if "hessian sum" in line]
    assert len(ours) == 1, err
    assert ours[0].startswith("ltrboost: warning: round 2: ")
    assert "--min-sum-hessian-in-leaf=0.001" in ours[0]
    assert out.exists()


def _saturating_logistic(scores, labels, query_offsets):
    """Binary logistic loss on y >= 2 (a custom objective, so that Dask takes it): its
    hessian vanishes at saturated scores while the gradient stays +-1 (kept at 1e-30,
    not 0, on grade 0: a hessian of 0 everywhere is an error of its own)."""
    t = np.where(labels >= 2, 1.0, -1.0)
    q = np.exp(-np.logaddexp(0.0, t * scores))  # sigmoid(-t s), the wrong-class mass
    return -t * q, q * (1.0 - q) + np.where(labels == 0, 1e-30, 0.0)


def test_dask_gives_the_local_model_and_warning(client) -> None:
    da = pytest.importorskip("dask.array")
    from ltrboost import dask as ldask

    params = dict(BASE, objective=_saturating_logistic, learning_rate=100.0, n_estimators=6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        local = train(params, make_dataset(X, Y, qid=QID))
    local_msgs = _ours(caught)
    assert _flat_roots(local), "the data no longer reach the case"
    assert len(local_msgs) == 1
    chunks = (100, 100)  # two partitions of 10 whole queries each
    data = ldask.DaskData(
        da.from_array(X, chunks=(chunks, X.shape[1])),
        da.from_array(Y, chunks=(chunks,)),
        da.from_array(QID, chunks=(chunks,)),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = ldask.train(client, params, data)
    assert _ours(caught) == local_msgs
    assert len(dist.trees) == len(local.trees)
    for a, b in zip(local.trees, dist.trees, strict=True):
        np.testing.assert_array_equal(a["feature_idx"], b["feature_idx"])
        np.testing.assert_array_equal(a["num_threshold"], b["num_threshold"])
        leaf = a["is_leaf"] == 1
        np.testing.assert_allclose(b["value"][leaf], a["value"][leaf], rtol=1e-9)
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)

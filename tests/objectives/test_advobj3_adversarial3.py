"""Adversarial pass over the objectives (third round): reusing a dataset, warm starts,
explicit pairs and custom objectives at their edges."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import ltrboost
from ltrboost import Ranker
from ltrboost.dataset import PreferencePairs

OBJECTIVES = [
    "lambdamart",
    "ranknet",
    "rankboost",
    "yetirank",
    "gbrank",
    "qbrank",
    "mart",
    "logistic_rank",
    "mcrank",
]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    qid = np.repeat(np.arange(10), 20)
    y = rng.integers(0, 3, 200).astype(float)
    return X, y, qid


def _predict(objective, ds, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        params = {"objective": objective, "n_estimators": 2, "min_samples_leaf": 2}
        return ltrboost.train(params, ds).predict(X)


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("change", ["y", "weights", "pairs"])
def test_a_dataset_trained_again_after_a_change_uses_the_new_values(data, objective, change):
    # the objectives cached their per-dataset arrays under their parameters alone, so a
    # second training on a dataset given new labels, weights or pairs used the old ones
    X, y, qid = data
    rng = np.random.default_rng(1)
    new = {
        "y": rng.integers(0, 3, 200).astype(float),
        "weights": rng.uniform(0.1, 2.0, 200).astype(np.float32),
        "pairs": PreferencePairs(
            np.array([0, 25, 47], np.int32), np.array([3, 21, 44], np.int32), np.array([5.0, 1, 3])
        ),
    }[change]
    reused = ltrboost.make_dataset(X, y, qid=qid)
    _predict(objective, reused, X)
    setattr(reused, change, new)
    fresh = ltrboost.make_dataset(X, y, qid=qid)
    setattr(fresh, change, new)
    np.testing.assert_array_equal(_predict(objective, reused, X), _predict(objective, fresh, X))


def test_mcrank_continues_on_data_without_its_top_grade(data):
    # the objective resolved max_label from the new data (2), so the model's 4 classes
    # were refused as "a different number of outputs"
    X, y, qid = data
    top = y.copy()
    top[5] = 3
    model = Ranker(objective="mcrank", n_estimators=2, min_samples_leaf=2).fit(X, top, qid=qid)
    more = Ranker(objective="mcrank", n_estimators=2, min_samples_leaf=2)
    more.fit(X, y, qid=qid, init_model=model)
    assert more.booster_.n_outputs == 4
    assert more.booster_.objective_params["max_label"] == 3
    assert more.booster_.n_iterations == 4
    booster = ltrboost.train(
        {"objective": "mcrank", "n_estimators": 3, "min_samples_leaf": 2},
        ltrboost.make_dataset(X, y, qid=qid),
        init_model=model.booster_,
    )
    assert booster.n_outputs == 4


def test_mcrank_continued_on_a_new_grade_names_it(data):
    X, y, qid = data
    model = Ranker(objective="mcrank", n_estimators=2, min_samples_leaf=2).fit(X, y, qid=qid)
    top = y.copy()
    top[5] = 3
    with pytest.raises(ValueError, match=r"y\[5\]=3 is larger than max_label=2.*cannot gain"):
        Ranker(objective="mcrank", n_estimators=2).fit(X, top, qid=qid, init_model=model)


def test_mcrank_resumed_on_the_same_data_is_the_uninterrupted_model(data):
    X, y, qid = data
    ds = ltrboost.make_dataset(X, y, qid=qid)
    params = {"objective": "mcrank", "n_estimators": 4, "min_samples_leaf": 2}
    whole = ltrboost.train(params, ds)
    half = ltrboost.train({**params, "n_estimators": 2}, ltrboost.make_dataset(X, y, qid=qid))
    resumed = ltrboost.train(params, ltrboost.make_dataset(X, y, qid=qid), init_model=half)
    assert resumed.to_dict() == whole.to_dict()


@pytest.mark.parametrize(
    ("objective", "params", "pairs", "cause"),
    [
        # (pair weights beyond float32 are refused with the data now:
        # tests/test_objcols_adversarial6.py)
        ("gbrank", {"tau": 1e300}, None, "tau=1e+300"),
        ("qbrank", {"tau": 1e300}, None, "tau=1e+300"),
        ("logistic_rank", {"label_scale": {2: 1e300}}, None, "label_scale up to 1e+300"),
        ("logistic_rank", {"label_scale": np.array([1.0, 1.0, 1e300])}, None, "up to 1e+300"),
    ],
)
def test_a_non_finite_round_names_the_objectives_own_large_inputs(
    data, objective, params, pairs, cause
):
    # the likely causes listed learning_rate, sigma, l2, labels and document weights,
    # never the pair weights, tau or label_scale that actually overflowed
    X, y, qid = data
    model = Ranker(objective=objective, n_estimators=2, min_samples_leaf=2, **params)
    with pytest.raises(ltrboost.NonFiniteTrainingError, match=re.escape(cause)):
        model.fit(X, y, qid=qid, pairs=pairs)


@pytest.mark.parametrize(
    ("pair", "shown"),
    [([0, 200], r"\(0, 200\)"), ([-1, 2], r"\(-1, 2\)"), ([3, 2**40], r"\(3, 1099511627776\)")],
)
def test_a_pair_row_out_of_range_is_named(data, pair, shown):
    # "pair 0: row index outside 0..199" did not say which row
    X, y, qid = data
    with pytest.raises(ValueError, match=rf"pair 0: rows {shown}: a row index outside 0\.\.199"):
        Ranker(objective="ranknet", n_estimators=1).fit(X, y, qid=qid, pairs=[pair])


def _returns(value):
    def fn(scores, labels, query_offsets):
        n = scores.shape[0]
        grad, hess = 2.0 * (scores - labels), np.full(n, 2.0)
        return {"triple": (grad, hess, None), "stacked": np.stack([grad, hess])}[value]

    return fn


@pytest.mark.parametrize(
    ("value", "got"),
    [("triple", "got a tuple of 3 items"), ("stacked", r"got one array of shape \(2, 200\)")],
)
def test_a_custom_objective_returning_no_pair_says_what_it_returned(data, value, got):
    # "must return a pair (grad, hess) of arrays, got tuple" for a tuple of three
    X, y, qid = data
    with pytest.raises(ValueError, match=rf"must return a pair \(grad, hess\) of arrays, {got}"):
        Ranker(objective=_returns(value), n_estimators=1).fit(X, y, qid=qid)


@pytest.mark.parametrize("unbiased", [False, True])
def test_lambdamart_refuses_linear_gains_whose_idcg_overflows_as_the_metric_does(data, unbiased):
    # labels near float64's maximum under gain="linear": the query's IDCG was inf, its
    # 1/IDCG 0, so its pairs silently weighed nothing (a constant model warned that no
    # split met the limits) while NDCG refused the same labels
    X, y, qid = data
    big = y * 8.5e307
    model = Ranker(n_estimators=2, gain="linear", unbiased=unbiased)
    position = np.tile(np.arange(1, 21), 10) if unbiased else None
    with pytest.raises(ValueError, match="the ideal DCG of its query overflows float64"):
        model.fit(X, big, qid=qid, position=position)
    assert Ranker(n_estimators=1, gain="linear").fit(X, y * 1e307, qid=qid).n_features_in_ == 5


def test_logistic_rank_continued_on_labels_resolving_another_threshold_warns(data):
    # positive_threshold=None resolves from the largest grade: continuing a model trained
    # on grades 0..4 (threshold 2) on grades 0..2 silently moved it to 1, so the new
    # trees separated other classes than the model's (and the file recorded only 1)
    X, y, qid = data
    model = Ranker(objective="logistic_rank", n_estimators=2, min_samples_leaf=2)
    model.fit(X, y * 2, qid=qid)
    assert model.booster_.objective_params["positive_threshold"] == 2
    more = Ranker(objective="logistic_rank", n_estimators=2, min_samples_leaf=2)
    with pytest.warns(UserWarning, match=r"resolves to 1 .* trained with 2: .*threshold=2"):
        more.fit(X, y, qid=qid, init_model=model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Ranker(objective="logistic_rank", n_estimators=2, min_samples_leaf=2).fit(
            X, y * 2, qid=qid, init_model=model
        )
        Ranker(
            objective="logistic_rank", n_estimators=2, min_samples_leaf=2, positive_threshold=2
        ).fit(X, y, qid=qid, init_model=model)

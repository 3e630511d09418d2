"""Adversarial pass over the objectives (third round): reusing a dataset, warm starts,
explicit pairs and custom objectives at their edges."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ltrboost
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

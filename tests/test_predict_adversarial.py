"""Prediction paths under odd arguments (an adversarial pass): ``iteration=``, ..."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import Booster
from ltrboost._config import NODE_DTYPE


def _stump(value: float) -> np.ndarray:
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes[0] = (0.0, 0, 0.5, 0, 1, 0, 1, 2, 1.0, 10, 1.0, 0)
    nodes[1] = (-value, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 5, 1.0, 1)
    nodes[2] = (value, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 5, 1.0, 1)
    return nodes


@pytest.fixture
def booster() -> Booster:
    return Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.0]),
        trees=[_stump(1.0), _stump(2.0), _stump(4.0)],
        tree_outputs=[0, 0, 0],
        n_features=1,
    )


@pytest.mark.parametrize("bad", [2.7, 2.0, "2", True, [2]])
def test_iteration_must_be_an_integer(booster, bad):
    """``iteration=2.7`` predicted with 2 rounds and ``"2"`` / ``True`` were taken as
    numbers, silently."""
    X = np.array([[0.0], [1.0]])
    with pytest.raises(ValueError, match="must be an integer between 0 and 3"):
        booster.predict(X, iteration=bad)
    with pytest.raises(ValueError, match="must be an integer between 0 and 3"):
        booster.feature_importance(iteration=bad)


def test_iteration_accepts_numpy_integers(booster):
    X = np.array([[0.0], [1.0]])
    np.testing.assert_array_equal(booster.predict(X, iteration=np.int64(2)), [-3.0, 3.0])
    np.testing.assert_array_equal(booster.predict(X, iteration=0), [0.0, 0.0])
    with pytest.raises(ValueError, match="between 0 and 3"):
        booster.predict(X, iteration=4)

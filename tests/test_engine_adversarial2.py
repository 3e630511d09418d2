"""Adversarial checks of the objectives and the tree engine on degenerate data (second
pass): data that leaves nothing to learn must say so instead of silently training a
constant model."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ltrboost import make_dataset, train

OBJECTIVES = [
    "mart",
    "mcrank",
    "logistic_rank",
    "ranknet",
    "lambdamart",
    "rankboost",
    "gbrank",
    "qbrank",
    "yetirank",
]
RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 3))
GRADES = RNG.integers(0, 3, 40).astype(float)


def _fit(objective, y, group, **params):
    params = dict(objective=objective, n_estimators=3, min_samples_leaf=1, **params)
    return train(params, make_dataset(X, y, group=group))


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("criterion", ["newton", "ole"])
def test_one_label_everywhere_warns_that_the_model_is_constant(objective, criterion):
    """Every label equal (all queries one grade) trained a constant model silently
    under every objective (the constant-features case warns, as LightGBM does)."""
    with pytest.warns(UserWarning, match=r"every tree is one leaf.*every training label is 1"):
        model = _fit(objective, np.ones(40), [10] * 4, split_criterion=criterion)
    assert np.ptp(model.predict(X)) == 0


@pytest.mark.parametrize("objective", ["ranknet", "lambdamart", "rankboost", "gbrank", "yetirank"])
@pytest.mark.parametrize("group", [[1] * 40, [10] * 4], ids=["one-document", "one-grade"])
def test_queries_without_two_grades_warn_under_a_pairwise_objective(objective, group):
    """One-document queries, or queries whose documents share one grade (different
    grades across queries), give a pairwise or listwise loss no pair: a constant model,
    silently."""
    y = GRADES if len(group) == 40 else np.repeat([0.0, 1.0, 2.0, 3.0], 10)
    with pytest.warns(UserWarning, match=r"every tree is one leaf.*no query holds two"):
        _fit(objective, y, group)


def test_a_split_too_costly_for_min_gain_to_split_names_the_limits():
    with pytest.warns(UserWarning, match=r"every tree is one leaf.*min_gain_to_split=1e\+30"):
        _fit("lambdamart", GRADES, [10] * 4, min_gain_to_split=1e30)


@pytest.mark.parametrize("objective", ["mart", "qbrank"])
def test_one_grade_per_query_still_learns_pointwise_without_warning(objective):
    """Pointwise parts learn differences between queries: no warning there."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = _fit(objective, np.repeat([0.0, 1.0, 2.0, 3.0], 10), [10] * 4)
    assert np.ptp(model.predict(X)) > 0


def test_the_constant_features_warning_is_not_repeated():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        train(dict(n_estimators=2), make_dataset(np.ones((40, 2)), GRADES, group=[10] * 4))
    assert [str(w.message)[:28] for w in record] == ["all 2 feature columns are co"]

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


@pytest.mark.parametrize("objective", ["mart", "mcrank", "logistic_rank", "gbrank", "qbrank"])
def test_non_pairwise_objectives_are_the_same_under_newton_and_ole_with_weights(objective):
    """Seed 000 Theorem 1 end to end, with NaN features and per-query weights of very
    different sizes: ``ole`` and ``newton`` give bit-identical models."""
    rng = np.random.default_rng(1)
    Xn = rng.normal(size=(200, 4))
    Xn[rng.random(Xn.shape) < 0.2] = np.nan
    y = rng.integers(0, 4, 200).astype(float)
    w = np.repeat(10.0 ** rng.uniform(-6, 6, 10), 20)
    ds = make_dataset(Xn, y, group=[20] * 10, sample_weight=w)
    p = dict(objective=objective, n_estimators=4, min_samples_leaf=1)
    a, b = (train(dict(p, split_criterion=c), ds) for c in ("newton", "ole"))
    assert a.predict(Xn).tobytes() == b.predict(Xn).tobytes()


def test_weighted_mart_under_se_is_not_newton_as_documented():
    """README: MART's three criteria agree only for unweighted documents (``se`` divides
    by counts, the weighted hessian is ``2 w``)."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 200).astype(float)
    Xw = rng.normal(size=(200, 4))
    w = np.repeat(rng.uniform(0.1, 10, 10), 20)
    for weights, same in ((None, True), (w, False)):
        ds = make_dataset(Xw, y, group=[20] * 10, sample_weight=weights)
        p = dict(objective="mart", n_estimators=3, min_samples_leaf=1)
        se, nt = (train(dict(p, split_criterion=c), ds) for c in ("se", "newton"))
        splits = [(t["feature_idx"].tolist(), t["bin_threshold"].tolist()) for t in se.trees]
        assert (
            splits == [(t["feature_idx"].tolist(), t["bin_threshold"].tolist()) for t in nt.trees]
        ) is same


@pytest.mark.parametrize(
    ("labels", "params", "side"),
    [([1.0, 2.0], {}, "positive"), ([0.0, 1.0], {"positive_threshold": 5}, "negative")],
)
def test_logistic_rank_with_one_class_names_the_threshold(labels, params, side):
    """Every grade on one side of ``positive_threshold`` (grades 1-2 under the default
    threshold 1): one class, a constant model; the warning blamed the split limits.
    Since advlabel5 it is refused before training, naming the grades."""
    y = np.random.default_rng(3).choice(labels, 40)
    with pytest.raises(ValueError, match=rf"every training document {side}.*grades"):
        _fit("logistic_rank", y, [10] * 4, **params)


@pytest.mark.parametrize("threshold", [3, 0])
def test_lambdamart_map_without_relevant_and_irrelevant_names_the_threshold(threshold):
    """``lambda_metric="map"`` on binary relevance ``y >= relevance_threshold``: no
    document relevant (or every one) gives every pair a zero change of AP, a constant
    model; the warning blamed the split limits.  Since advlabel5 a threshold outside
    the grades is refused before training."""
    with pytest.raises(ValueError, match=rf"relevance_threshold={threshold}\b.*grades 0, 1, 2"):
        _fit("lambdamart", GRADES, [10] * 4, lambda_metric="map", relevance_threshold=threshold)


def test_lambdamart_map_without_a_mixed_query_warns_naming_the_threshold():
    """Relevant documents (grades 1, 2) in some queries, irrelevant ones (0) in the
    others: no query mixes them, the model is constant, the warning names the
    threshold."""
    y = np.repeat([1.0, 0.0, 2.0, 0.0], 10)
    y[:5] = 2.0
    with pytest.warns(UserWarning, match=r"relevance_threshold=1\b"):
        _fit("lambdamart", y, [10] * 4, lambda_metric="map", relevance_threshold=1)


def test_labels_of_zero_weight_documents_do_not_count_as_signal():
    """Grade 3 on zero-weight documents only: the weighted data holds one grade, the
    model is constant, and the warning named the split limits instead."""
    y = np.where(GRADES > 1, 3.0, 0.0)
    w = np.where(y == 3, 0.0, 1.0)
    with pytest.warns(UserWarning, match="every training label of positive weight is 0"):
        train(
            dict(objective="mcrank", n_estimators=3, min_samples_leaf=1),
            make_dataset(X, y, group=[10] * 4, sample_weight=w),
        )


def test_rare_values_merged_by_min_samples_bin_are_named():
    """Columns that vary only in values rarer than ``min_samples_bin`` bin into one bin
    each: no tree can split, and the warning named the leaf limits instead."""
    Xr = np.zeros((40, 2))
    Xr[[0, 10], 0] = 1.0
    Xr[20, 1] = 1.0
    y = Xr.sum(axis=1)
    with pytest.warns(UserWarning, match=r"min_samples_bin=3 leaves every feature column one bin"):
        train(
            dict(objective="lambdamart", n_estimators=2, min_samples_leaf=1),
            make_dataset(Xr, y, group=[10] * 4),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train(
            dict(objective="lambdamart", n_estimators=2, min_samples_leaf=1, min_samples_bin=1),
            make_dataset(Xr, y, group=[10] * 4),
        )

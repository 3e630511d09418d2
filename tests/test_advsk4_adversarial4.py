"""Adversarial pass 4 over ``Ranker`` in the scikit-learn ecosystem (tags, feature-name
warnings, queries given twice to ``score``): each test failed before its fix."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.datasets import make_ranking

FAST = dict(n_estimators=3, min_samples_leaf=3, max_leaf_nodes=4)


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=0)


@pytest.fixture(scope="module")
def frame(data):
    pd = pytest.importorskip("pandas")
    X, _, qid = data
    return pd.DataFrame(X, columns=[f"f{k}" for k in range(X.shape[1])]).assign(qid=qid)


def test_the_tags_say_y_is_required(data):
    """fit refuses y=None ('labels y are required'), but the tags said a target was
    optional (target_tags.required False, as for a transformer): meta-estimators and
    scikit-learn's checks read that tag."""
    assert Ranker().__sklearn_tags__().target_tags.required is True
    X, _, qid = data
    with pytest.raises(ValueError, match="labels y are required"):
        Ranker(**FAST).fit(X, None, qid=qid)
    # the check that tag enables: fit(X, None), no queries either, names the labels in
    # scikit-learn's words (it spoke of the missing queries first)
    from sklearn.utils.estimator_checks import check_requires_y_none

    check_requires_y_none("Ranker", Ranker(**FAST))


def test_an_array_given_to_a_model_fitted_with_names_warns(data, frame):
    """The mirror of the warning for a frame given to a model fitted on an array:
    scikit-learn warns when a model fitted with feature names gets an array (its
    columns are taken by position, so an array built in another column order scores
    silently wrong). predict, predict_proba and score said nothing."""
    X, y, qid = data
    named = Ranker(**FAST).fit(frame, y)
    for call in (
        lambda: named.predict(X),
        lambda: named.score(X, y, qid=qid),
        lambda: Ranker(**FAST, objective="mcrank").fit(frame, y).predict_proba(X),
    ):
        with pytest.warns(UserWarning, match="X does not have valid feature names, but Ranker"):
            call()
    plain = Ranker(**FAST).fit(X, y, qid=qid)
    np.testing.assert_array_equal(named.predict(frame), plain.predict(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        named.predict(frame)  # names both times: no warning
        named.score(frame, y)
        Ranker(**FAST).fit(X, y, qid=qid).predict(X)  # no names either time


def test_score_warns_when_qid_differs_from_the_qid_column(data, frame):
    """fit warns when a DataFrame's qid column differs from the qid= given; score used
    qid= silently (here one query of all rows: 0.29 instead of 1.0, unexplained)."""
    _, y, qid = data
    model = Ranker(**FAST).fit(frame, y)
    with pytest.warns(UserWarning, match="X has a column named 'qid' that differs from the qid="):
        wrong = model.score(frame, y, qid=np.zeros_like(qid))
    assert wrong == model.score(frame.drop(columns="qid"), y, qid=np.zeros_like(qid))
    with pytest.warns(UserWarning, match="differs from the group= given"):
        model.score(frame, y, group=[len(y)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = model.score(frame, y, qid=qid)  # the same ids twice: fine
        assert same == model.score(frame, y)
        sizes = np.unique(qid, return_counts=True)[1]  # qid is sorted: its run lengths
        assert model.score(frame, y, group=sizes) == same


def test_a_dask_array_given_to_a_dask_model_fitted_with_names_warns(data, frame):
    """DaskRanker.predict warned for a frame given to a model fitted on arrays, as
    Ranker.predict does, but not for the mirror case (a Dask array, a model with names)."""
    da = pytest.importorskip("dask.array")
    from ltrboost.dask import DaskRanker

    X, y, _ = data
    model = DaskRanker(**FAST)
    model.booster_ = Ranker(**FAST).fit(frame, y).booster_  # fitted with names
    with pytest.warns(UserWarning, match="X does not have valid feature names, but DaskRanker"):
        scores = model.predict(da.from_array(X, chunks=(40, -1)))
    np.testing.assert_array_equal(scores.compute(scheduler="sync"), model.booster_.predict(X))

"""Where the training warnings point (``warnings``' ``filename:lineno``).

A warning names the user's line, so that its location says which call it is about and a
module filter (``-W error::ParameterWarning:mymodule``) reaches it.  The training
warnings were given at fixed ``stacklevel``\\ s counted for one route: ``Ranker.fit`` and
``DaskRanker.fit`` call ``train`` one frame deeper, so the shared-queries warning named
sklearn.py's call of ``train``; and most of the others (a constant model, a split no
node can make, ignored pairs or positions, a flat validation metric...) were counted
one frame short even for ``ltrboost.train`` and named booster.py.  They now name the
first frame outside the ltrboost package (:func:`ltrboost._callsite.external_stacklevel`),
whatever the route.
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

import ltrboost
from ltrboost import Ranker, make_dataset, train
from ltrboost._callsite import external_stacklevel
from ltrboost.datasets import make_ranking

PACKAGE = os.path.dirname(os.path.abspath(ltrboost.__file__)) + os.sep
SMALL = {"n_estimators": 2, "max_leaf_nodes": 4, "n_threads": 1}


def _data(first_qid=0, seed=0, n_queries=12):
    return make_ranking(
        n_queries=n_queries,
        docs_per_query=6,
        n_features=4,
        max_label=2,
        random_state=seed,
        first_qid=first_qid,
    )


def _located(caught) -> list[tuple[str, str, int]]:
    """``(category, filename, lineno)`` of every warning recorded."""
    return [(w.category.__name__, w.filename, w.lineno) for w in caught]


def _record(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return caught


# One case per training warning: (Ranker's parameters, fit's overrides of the data,
# a fragment of the message).  Each is given by ltrboost.train and Ranker.fit alike.
def _case(name):
    X, y, q = _data()
    Xv, yv, qv = _data(first_qid=100, seed=1, n_queries=5)
    fit = {"X": X, "y": y, "qid": q}
    params: dict = {}
    if name == "shared_queries":
        fit["eval_set"] = [(Xv, yv, qv - 100)]
        words = "query ids"
    elif name == "no_split_possible":
        params["min_samples_leaf"] = 10_000
        words = "min_samples_leaf=10000 needs"
    elif name == "constant_model":
        fit["y"] = np.ones_like(y)
        words = "every tree is one leaf"
    elif name == "colsample_misses":
        Xc = X.copy()
        Xc[:, 1:] = 0.0
        fit["X"] = Xc
        params["colsample_bytree"] = 0.2
        words = "colsample_bytree=0.2 draws"
    elif name == "all_columns_constant":
        fit["X"] = np.zeros_like(X)
        words = "feature columns are constant"
    elif name == "pairs_ignored":
        fit["pairs"] = np.array([[0, 1]])
        words = "ignores explicit preference pairs"
    elif name == "positions_ignored":
        fit["position"] = np.ones(y.shape[0], dtype=np.int64)
        words = "positions are used by unbiased=True only"
    elif name == "threshold_flat":
        params.update(eval_metric="mrr", relevance_threshold=10)
        fit["eval_set"] = [(Xv, yv, qv)]
        words = "relevance_threshold=10 counts"
    elif name == "early_stopping_blind":
        params["early_stopping_rounds"] = 1
        fit["eval_set"] = [(Xv, np.zeros_like(yv), qv)]
        words = "drives early stopping"
    elif name == "ole_top_features_ignored":
        params["ole_top_features"] = 2
        words = "ole_top_features=2"
    else:  # pragma: no cover
        raise AssertionError(name)
    return params, fit, words


CASES = [
    "shared_queries",
    "no_split_possible",
    "constant_model",
    "colsample_misses",
    "all_columns_constant",
    "pairs_ignored",
    "positions_ignored",
    "threshold_flat",
    "early_stopping_blind",
    "ole_top_features_ignored",
]


def _ours(caught, words):
    found = [w for w in caught if words in str(w.message)]
    assert found, [str(w.message) for w in caught]
    return found


@pytest.mark.parametrize("name", CASES)
def test_ranker_fit_warning_points_at_the_callers_fit(name):
    params, fit, words = _case(name)
    model = Ranker(**SMALL, **params)
    X, y = fit.pop("X"), fit.pop("y")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        model.fit(X, y, **fit)
    for w in _ours(caught, words):
        assert (w.filename, w.lineno) == (__file__, line), _located(caught)


@pytest.mark.parametrize("name", CASES)
def test_train_warning_points_at_the_callers_train(name):
    params, fit, words = _case(name)
    ds = make_dataset(
        fit["X"], fit["y"], qid=fit["qid"], position=fit.get("position"), sample_weight=None
    )
    if "pairs" in fit:
        ds.pairs = ltrboost.sklearn._pairs_from_array(fit["pairs"], ds)
    valid = [
        (f"v{k}", make_dataset(Xv, yv, qid=qv))
        for k, (Xv, yv, qv) in enumerate(fit.get("eval_set", ()))
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        train({**SMALL, **params}, ds, valid)
    for w in _ours(caught, words):
        assert (w.filename, w.lineno) == (__file__, line), _located(caught)


def test_a_module_filter_on_the_callers_module_makes_fit_raise():
    """``-W error::ltrboost.SharedQueriesWarning:<module>``: the location's module is the
    caller's, so the filter reaches the warning (it named ltrboost.sklearn)."""
    _, fit, words = _case("shared_queries")
    X, y = fit.pop("X"), fit.pop("y")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.filterwarnings("error", category=ltrboost.SharedQueriesWarning, module=__name__)
        with pytest.raises(ltrboost.SharedQueriesWarning, match=words):
            Ranker(**SMALL).fit(X, y, **fit)


def test_fit_through_scikit_learn_names_no_line_of_ltrboost():
    """Fitted by scikit-learn (cross_validate): the warning names scikit-learn's call of
    fit, the first frame outside ltrboost, never a line of ltrboost."""
    model_selection = pytest.importorskip("sklearn.model_selection")
    X, y, q = _data(n_queries=12)
    caught = _record(
        lambda: model_selection.cross_validate(
            Ranker(**SMALL, min_samples_leaf=10_000),
            X,
            y,
            params={"qid": q},
            cv=model_selection.GroupKFold(n_splits=2),
            groups=q,
            scoring=lambda model, X, y: 0.0,  # Ranker.score would need the queries
            error_score="raise",
        )
    )
    ours = _ours(caught, "min_samples_leaf=10000 needs")
    for w in ours:
        assert not os.path.abspath(w.filename).startswith(PACKAGE), _located(caught)


def test_external_stacklevel_counts_from_the_warning_function():
    """Called from the function that warns: 2 when that function's caller is not
    ltrboost's (this test), more for each ltrboost frame between."""

    def warns():
        return external_stacklevel()

    assert warns() == 2


def _dask(a):
    """Two partitions cut between queries (6 documents each, an even number of them)."""
    import dask.array as da

    half = a.shape[0] // 2 if a.shape[0] % 12 == 0 else a.shape[0]
    return da.from_array(a, chunks=(half, *a.shape[1:]))


def test_dask_ranker_fit_shared_queries_warning_points_at_the_callers_fit(client):
    from ltrboost.dask import DaskRanker

    X, y, q = _data()
    Xv, yv, qv = _data(seed=1, n_queries=5)  # ids 0..4: the training queries'
    model = DaskRanker(client=client, **SMALL)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        model.fit(_dask(X), _dask(y), qid=_dask(q), eval_set=[(_dask(Xv), _dask(yv), _dask(qv))])
    shared = _ours(caught, "query ids")
    for w in shared:
        assert w.category is ltrboost.SharedQueriesWarning
        assert (w.filename, w.lineno) == (__file__, line), _located(caught)


def test_dask_ranker_fit_constant_model_warning_points_at_the_callers_fit(client):
    from ltrboost.dask import DaskRanker

    X, y, q = _data()
    model = DaskRanker(client=client, **SMALL)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        model.fit(_dask(X), _dask(np.ones_like(y)), qid=_dask(q))
    for w in _ours(caught, "every tree is one leaf"):
        assert (w.filename, w.lineno) == (__file__, line), _located(caught)

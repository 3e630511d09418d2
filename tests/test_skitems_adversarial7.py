"""Adversarial pass 7 over ``Ranker`` with scikit-learn's tools: permutation importance
over a ``qid`` column and a ``qid`` column transformed by a ColumnTransformer.  Each
test failed before its fix.  (``Ranker(random_state=None)`` stays the fixed seed 0, as
LightGBM's and XGBoost's estimators: the same data and parameters give the same model.)"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn

from ltrboost import LTRInputError, Ranker
from ltrboost.datasets import make_ranking
from ltrboost.metrics import make_scorer

FAST = dict(n_estimators=4, min_samples_leaf=3, max_leaf_nodes=6)
RAND = dict(FAST, subsample=0.5, colsample_bytree=0.5)
COLS = ["f0", "f1", "f2", "f3"]


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=0)


@pytest.fixture(scope="module")
def frame(data):
    pd = pytest.importorskip("pandas")
    X, _, qid = data
    return pd.DataFrame(X, columns=COLS).assign(qid=qid)


def _permuting_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if "permutation" in str(w.message)]


# ------------------------------------------------------------ 1. permutation importance
@pytest.mark.parametrize("scoring", [None, "scorer"])
def test_permutation_importance_of_a_qid_column_is_named_meaningless(data, frame, scoring):
    """permutation_importance(ranker, X, y) permutes X's 'qid' column like a feature:
    the queries are scrambled and 'qid' got an importance (0.11 here) with no word
    said.  Scoring that reads the queries from that column now warns, naming the
    column and the way out (bind the queries with make_scorer(..., qid=qid))."""
    from sklearn.inspection import permutation_importance

    _, y, _ = data
    model = Ranker(**FAST).fit(frame, y)
    scorer = None if scoring is None else make_scorer("ndcg@10")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = permutation_importance(model, frame, y, scoring=scorer, n_repeats=2)
    messages = _permuting_warnings(caught)
    assert messages, "no warning about the permuted qid column"
    shown = [w for w in caught if "permutation" in str(w.message)]
    assert {w.filename for w in shown} == {__file__}  # at the call of permutation_importance
    assert "'qid'" in messages[0]
    assert "make_scorer(" in messages[0]
    assert "qid=qid" in messages[0]
    assert result.importances.shape == (5, 2)  # the results still come back


def test_permutation_importance_with_bound_queries_does_not_warn(data, frame):
    """The way out: queries bound to the scorer; the qid column is ignored (importance
    0) and nothing is said."""
    from sklearn.inspection import permutation_importance

    _, y, qid = data
    model = Ranker(**FAST).fit(frame, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = permutation_importance(
            model, frame, y, scoring=make_scorer("ndcg@10", qid=qid), n_repeats=2
        )
        permutation_importance(
            model, frame[COLS], y, scoring=make_scorer("ndcg@10", qid=qid), n_repeats=2
        )
    assert _permuting_warnings(caught) == []
    assert np.all(result.importances[-1] == 0.0)


def test_score_with_a_qid_column_outside_permutation_importance_does_not_warn(data, frame):
    _, y, _ = data
    model = Ranker(**FAST).fit(frame, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.score(frame, y)
        make_scorer("ndcg@10")(model, frame, y)
    assert _permuting_warnings(caught) == []


# ------------------------------------------------------------ 2. ColumnTransformer
def _scaling_everything(ranker):
    """A ColumnTransformer that scales every numeric column: the qid column too, which
    comes out as 'num__qid' holding scaled ids."""
    from sklearn.compose import ColumnTransformer, make_column_selector
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    selector = make_column_selector(dtype_include="number")
    ct = ColumnTransformer([("num", StandardScaler(), selector)])
    return make_pipeline(ct, ranker).set_output(transform="pandas")


def test_a_transformed_qid_column_is_not_taken_as_a_feature(data, frame):
    """With qid routed, a 'qid' column scaled by the ColumnTransformer ('num__qid', a
    value per query, one query per value) was silently a feature: the query ids, in
    another coding, leaked into the model (the exact ids were refused already)."""
    _, y, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        ranker = Ranker(**FAST).set_fit_request(qid=True)
        with pytest.raises(LTRInputError, match=r"'num__qid'.*query ids.*Leave 'qid' out"):
            _scaling_everything(ranker).fit(frame, y, qid=qid)
        # ids of the same queries in another coding (0..n-1 by first appearance)
        recoded = np.unique(qid, return_inverse=True)[1] + 1000
        with pytest.raises(LTRInputError, match=r"'num__qid'"):
            _scaling_everything(ranker).fit(frame, y, qid=recoded)


def test_the_way_out_named_for_a_transformed_qid_column_works(data, frame):
    """The error's way out: leave 'qid' out of what the transformers select."""
    from sklearn.compose import ColumnTransformer, make_column_selector
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    _, y, qid = data
    selector = make_column_selector(pattern="^(?!qid$)", dtype_include="number")
    with sklearn.config_context(enable_metadata_routing=True):
        ranker = Ranker(**FAST).set_fit_request(qid=True)
        ct = ColumnTransformer([("num", StandardScaler(), selector)])
        pipe = make_pipeline(ct, ranker).set_output(transform="pandas")
        pipe.fit(frame, y, qid=qid)
    assert list(pipe[-1].feature_names_in_) == [f"num__{c}" for c in COLS]


def test_a_feature_named_qid_that_splits_otherwise_stays_a_feature(data, frame):
    """A '<name>__qid' column constant over several queries is no query-id column."""
    _, y, qid = data
    other = frame[COLS].assign(doc__qid=qid // 2)
    model = Ranker(**FAST).fit(other, y, qid=qid)
    assert list(model.feature_names_in_) == [*COLS, "doc__qid"]

"""Adversarial pass 5 over ``Ranker`` with scikit-learn's tools (permutation importance,
ColumnTransformer in a Pipeline, ``random_state`` as scikit-learn takes it): each test
failed before its fix."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold

from ltrboost import LTRInputError, Ranker
from ltrboost.datasets import make_ranking
from ltrboost.metrics import make_scorer

FAST = dict(n_estimators=4, min_samples_leaf=3, max_leaf_nodes=6)
COLS = ["f0", "f1", "f2", "f3"]


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=0)


@pytest.fixture(scope="module")
def frame(data):
    pd = pytest.importorskip("pandas")
    X, _, qid = data
    return pd.DataFrame(X, columns=COLS).assign(qid=qid)


# ------------------------------------------------------------ permutation importance
def test_permutation_importance_with_queries_bound_to_the_scorer(data, frame):
    """permutation_importance permutes every column of X, the qid column too, which
    scrambled the queries: 'qid' came out as an important "feature", and it routes no
    qid= to a scorer.  make_scorer(..., qid=) binds the queries to the rows of X: the
    qid column's importance is then exactly 0 and the features' are those computed on
    X without the column."""
    from sklearn.inspection import permutation_importance

    _, y, qid = data
    model = Ranker(**FAST).fit(frame, y)
    scorer = make_scorer("ndcg@10", qid=qid)
    with_column = permutation_importance(model, frame, y, scoring=scorer, random_state=0)
    assert np.all(with_column.importances[-1] == 0.0)  # the qid column
    without = permutation_importance(
        model, frame[COLS], y, scoring=scorer, n_repeats=5, random_state=0
    )
    np.testing.assert_array_equal(with_column.importances[:-1], without.importances)
    assert np.any(without.importances_mean != 0)
    # the bound scorer scores as the model's own score with qid=
    assert scorer(model, frame[COLS], y) == model.score(frame[COLS], y, qid=qid, metric="ndcg@10")
    grouped = make_scorer("ndcg@10", group=np.full(20, 8))
    assert grouped(model, frame[COLS], y) == scorer(model, frame[COLS], y)


def test_a_bound_scorer_refuses_other_rows_and_queries_given_twice(data, frame):
    """The bound ids belong to the rows of one X: fewer rows (max_samples < 1, a
    cross-validation fold) would pair rows with other rows' queries; refused, naming
    the count. qid= and group= together, or routed queries as well, are refused."""
    from sklearn.inspection import permutation_importance

    _, y, qid = data
    model = Ranker(**FAST).fit(frame, y)
    scorer = make_scorer("ndcg@10", qid=qid)
    with pytest.raises(ValueError, match=r"qid= bound by make_scorer has 160 ids but X has 80"):
        permutation_importance(model, frame, y, scoring=scorer, max_samples=0.5)
    with pytest.raises(ValueError, match=r"group= bound by make_scorer counts 8 rows"):
        make_scorer("ndcg@10", group=[8])(model, frame, y)
    with pytest.raises(ValueError, match="qid= or group=, not both"):
        make_scorer("ndcg@10", qid=qid, group=np.full(20, 8))
    with pytest.raises(ValueError, match="bound by make_scorer and was given qid= again"):
        scorer._score(None, model, frame, y, qid=qid)
    assert "qid=<160 ids>" in repr(scorer)


# ------------------------------------------------------------ ColumnTransformer
def _pipeline(ranker, **ct_options):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    ct = ColumnTransformer(
        [("scale", StandardScaler(), COLS)], remainder="passthrough", **ct_options
    )
    return make_pipeline(ct, ranker).set_output(transform="pandas")


def test_a_qid_column_renamed_by_column_transformer_is_named(data, frame):
    """ColumnTransformer(remainder='passthrough') renames 'qid' to 'remainder__qid':
    fit's error listed the ways to give queries but not that the column was there
    under another name, nor verbose_feature_names_out=False."""
    _, y, _ = data
    with pytest.raises(LTRInputError, match=r"'remainder__qid'.*verbose_feature_names_out=False"):
        _pipeline(Ranker(**FAST)).fit(frame, y)


def test_a_renamed_qid_column_is_not_taken_as_a_feature(data, frame):
    """With qid routed as well, 'remainder__qid' was silently a feature: the query ids
    leaked into the model (a 'qid' column holding the same ids is dropped)."""
    _, y, qid = data
    with sklearn.config_context(enable_metadata_routing=True):
        ranker = Ranker(**FAST).set_fit_request(qid=True)
        with pytest.raises(LTRInputError, match=r"'remainder__qid' holds the query ids"):
            _pipeline(ranker).fit(frame, y, qid=qid)
        # group= (sizes) that split the rows into the same queries: the same
        ranker = Ranker(**FAST).set_fit_request(group=True)
        with pytest.raises(LTRInputError, match=r"'remainder__qid' holds the query ids"):
            _pipeline(ranker).fit(frame, y, group=np.full(20, 8))
        # the documented way: the column keeps its name, and is read (or dropped)
        pipe = _pipeline(Ranker(**FAST).set_fit_request(qid=True), verbose_feature_names_out=False)
        pipe.fit(frame, y, qid=qid)
    assert list(pipe[-1].feature_names_in_) == COLS
    pipe = _pipeline(Ranker(**FAST), verbose_feature_names_out=False).fit(frame, y)
    assert list(pipe[-1].feature_names_in_) == COLS
    assert 0 < pipe.score(frame, y) <= 1


def test_a_feature_that_merely_ends_in_qid_stays_a_feature(data, frame):
    """A column named '..__qid' that does not hold the query ids is an ordinary feature."""
    X, y, qid = data
    other = frame[COLS].assign(doc__qid=X[:, 0] * 3)
    model = Ranker(**FAST).fit(other, y, qid=qid)
    assert list(model.feature_names_in_) == [*COLS, "doc__qid"]


# ------------------------------------------------------------ random_state
def test_random_state_none_is_the_default_seed(data):
    """random_state=None was refused ('not allowed (default 0)'); scikit-learn
    estimators take it.  It is the default seed 0: reproducible, as LightGBM's and
    XGBoost's None; get_params and clone keep None."""
    X, y, qid = data
    rand = dict(FAST, subsample=0.5, colsample_bytree=0.5)
    est = Ranker(random_state=None, **rand)
    assert clone(est).get_params()["random_state"] is None
    est.fit(X, y, qid=qid)
    assert est.get_params()["random_state"] is None
    ref = Ranker(random_state=0, **rand).fit(X, y, qid=qid)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))
    assert est.booster_.params["random_state"] == 0


@pytest.mark.parametrize("kind", ["RandomState", "Generator"])
def test_random_state_instance_draws_a_seed_at_each_fit(data, kind):
    """A numpy RandomState (or Generator) was refused ('must be an integer'); as in
    scikit-learn, LightGBM and XGBoost a seed is drawn from it at fit: the same state
    gives the same model, successive fits advance it. The model records the seed."""
    X, y, qid = data
    rand = dict(FAST, subsample=0.5, colsample_bytree=0.5)

    def rng():
        return np.random.RandomState(7) if kind == "RandomState" else np.random.default_rng(7)

    r = rng()
    seed = int(r.randint(2**31 - 1) if kind == "RandomState" else r.integers(2**31 - 1))
    source = rng()
    est = Ranker(random_state=source, **rand).fit(X, y, qid=qid)
    assert est.get_params()["random_state"] is source
    assert est.booster_.params["random_state"] == seed
    ref = Ranker(random_state=seed, **rand).fit(X, y, qid=qid)
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))
    est.fit(X, y, qid=qid)  # the instance moved on: another seed
    assert est.booster_.params["random_state"] != seed
    # clone copies the instance in its state (scikit-learn's deepcopy): same model
    fresh = Ranker(random_state=rng(), **rand)
    np.testing.assert_array_equal(clone(fresh).fit(X, y, qid=qid).predict(X), ref.predict(X))


def test_grid_search_over_random_states(data, frame):
    _, y, qid = data
    grid = {"random_state": [None, 3, np.random.RandomState(0)]}
    search = GridSearchCV(
        Ranker(subsample=0.5, **FAST), grid, cv=GroupKFold(2), scoring=make_scorer("ndcg@5")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        search.fit(frame, y, groups=qid)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


@pytest.mark.parametrize("bad", [True, "7", 1.5, -1, np.random.SeedSequence(0)])
def test_other_random_states_are_still_refused(data, bad):
    X, y, qid = data
    with pytest.raises(ValueError, match="random_state="):
        Ranker(random_state=bad, **FAST).fit(X, y, qid=qid)

"""Tests of :class:`ltrboost.Ranker`, the scikit-learn style estimator.

About ``sklearn.utils.estimator_checks``: most checks call ``fit(X, y)`` with no query
structure, which a ranker must refuse (``qid=`` or ``group=`` is required), and they
expect classifier / regressor semantics of ``predict`` and ``score``.  So only the
checks that never fit are run here: construction, ``get_params`` / ``set_params``,
cloning, ``repr``, tags and the not-fitted error.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import estimator_checks
from sklearn.utils.validation import check_is_fitted

from ltrboost import LTRInputError, Ranker, load_model
from ltrboost.booster import BoosterParams
from ltrboost.datasets import make_ranking
from ltrboost.metrics import get_metric

FAST = dict(n_estimators=6, min_samples_leaf=3, max_leaf_nodes=8)


@pytest.fixture(scope="module")
def data():
    """40 queries x 12 documents; train = first 30 queries, valid = last 10."""
    X, y, qid = make_ranking(40, 12, 6, random_state=0)
    train = qid < 30
    return X[train], y[train], qid[train], X[~train], y[~train], qid[~train]


def model_text(est: Ranker) -> str:
    return json.dumps(est.booster_.to_dict(), sort_keys=True)


# --------------------------------------------------------------- sklearn protocol
@pytest.mark.parametrize(
    "check",
    [
        "check_no_attributes_set_in_init",
        "check_parameters_default_constructible",
        "check_get_params_invariance",
        "check_set_params",
        "check_estimator_cloneable",
        "check_estimator_repr",
        "check_do_not_raise_errors_in_init_or_set_params",
        "check_estimators_unfitted",
        "check_mixin_order",
    ],
)
def test_selected_estimator_checks(check: str) -> None:
    getattr(estimator_checks, check)("Ranker", Ranker())


def test_params_are_the_booster_params() -> None:
    params = Ranker().get_params()
    assert params.pop("importance_type") == "gain"  # inspection, not training
    assert params.pop("verbose") == 0  # logging, not training
    defaults = {f: getattr(BoosterParams(), f) for f in BoosterParams.__dataclass_fields__}
    assert params == defaults


def test_get_set_params_round_trip() -> None:
    est = Ranker(objective="mcrank", n_estimators=7, sigma=2.0, eval_metric="err@5")
    params = est.get_params()
    other = Ranker().set_params(**params)
    assert other.get_params() == params
    assert other.set_params(learning_rate=0.3) is other
    assert other.learning_rate == 0.3
    with pytest.raises(ValueError, match="not_a_param"):
        Ranker().set_params(not_a_param=1)


def test_clone(data) -> None:
    X, y, qid, *_ = data
    est = Ranker(objective="ranknet", random_state=3, **FAST).fit(X, y, qid=qid)
    copy = clone(est)
    assert copy.get_params() == est.get_params()
    assert not hasattr(copy, "booster_")
    copy.fit(X, y, qid=qid)
    assert model_text(copy) == model_text(est)


def test_not_fitted(data) -> None:
    X, y, qid, *_ = data
    est = Ranker()
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    with pytest.raises(NotFittedError, match="fit"):
        est.predict(X)
    assert not hasattr(est, "predict_proba")  # lambdamart: no probabilities
    with pytest.raises(NotFittedError):
        Ranker(objective="mcrank").predict_proba(X)
    with pytest.raises(NotFittedError):
        est.score(X, y, qid=qid)
    with pytest.raises(NotFittedError):
        est.save_model("never.json")
    est.set_params(**FAST).fit(X, y, qid=qid)
    check_is_fitted(est)


# ------------------------------------------------------------------ query structure
def test_qid_and_group_give_the_same_model(data) -> None:
    X, y, qid, *_ = data
    by_qid = Ranker(**FAST).fit(X, y, qid=qid)
    _, sizes = np.unique(qid, return_counts=True)  # contiguous, ascending qids
    by_group = Ranker(**FAST).fit(X, y, group=sizes)
    assert model_text(by_qid) == model_text(by_group)
    np.testing.assert_array_equal(by_qid.predict(X), by_group.predict(X))


def test_non_contiguous_qids_are_grouped(data) -> None:
    X, y, qid, *_ = data
    rng = np.random.default_rng(1)
    perm = rng.permutation(len(y))
    w = rng.uniform(0.5, 2.0, len(y))
    Xs, ys, qs, ws = X[perm], y[perm], qid[perm], w[perm]
    # the same rows grouped stably by first appearance, as make_dataset does
    first = {q: i for i, q in reversed(list(enumerate(qs)))}
    order = np.argsort([first[q] for q in qs], kind="stable")

    shuffled = Ranker(**FAST).fit(Xs, ys, qid=qs, sample_weight=ws)
    grouped = Ranker(**FAST).fit(Xs[order], ys[order], qid=qs[order], sample_weight=ws[order])
    assert model_text(shuffled) == model_text(grouped)
    # predictions come back in the caller's row order
    np.testing.assert_array_equal(shuffled.predict(Xs)[order], grouped.predict(Xs[order]))
    # and the score does not depend on the row order either
    assert shuffled.score(Xs, ys, qid=qs) == pytest.approx(
        grouped.score(Xs[order], ys[order], qid=qs[order]), abs=1e-12
    )


def test_non_contiguous_eval_set(data) -> None:
    X, y, qid, Xv, yv, qv = data
    # interleave the queries round-robin, keeping each query's own row order (metrics
    # break score ties by row order, so only the query interleaving may change)
    within = np.concatenate([np.arange(c) for c in np.unique(qv, return_counts=True)[1]])
    perm = np.lexsort((qv, within))
    assert np.any(np.diff(qv[perm]) < 0)  # really non-contiguous
    a = Ranker(eval_metric="ndcg@10", **FAST).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    b = Ranker(eval_metric="ndcg@10", **FAST).fit(
        X, y, qid=qid, eval_set=[(Xv[perm], yv[perm], qv[perm])]
    )
    assert a.evals_result_ == b.evals_result_


def test_pandas_dataframe(data) -> None:
    pd = pytest.importorskip("pandas")
    X, y, qid, Xv, *_ = data
    cols = [f"f{i}" for i in range(X.shape[1])]
    df = pd.DataFrame(X, columns=cols)
    est = Ranker(**FAST).fit(df, pd.Series(y), qid=pd.Series(qid))
    assert list(est.feature_names_in_) == cols
    assert est.booster_.feature_names == cols
    assert est.n_features_in_ == X.shape[1]
    ref = Ranker(**FAST).fit(X, y, qid=qid)
    np.testing.assert_array_equal(est.predict(pd.DataFrame(Xv, columns=cols)), ref.predict(Xv))
    np.testing.assert_array_equal(est.predict(Xv), ref.predict(Xv))


# --------------------------------------------------------------- early stopping
def test_eval_set_and_early_stopping(data) -> None:
    X, y, qid, Xv, yv, qv = data
    est = Ranker(n_estimators=60, learning_rate=0.5, max_leaf_nodes=16, min_samples_leaf=2)
    est.fit(
        X,
        y,
        qid=qid,
        eval_set=[(Xv, yv, qv), (X, y, qid)],
        eval_names=["valid", "train"],
        eval_metric="ndcg@10,map",
        early_stopping_rounds=4,
    )
    best = est.best_iteration_
    n_iter = est.booster_.n_iterations
    history = est.evals_result_["valid"]["ndcg@10"]
    assert set(est.evals_result_) == {"valid", "train"}
    assert set(est.evals_result_["valid"]) == {"ndcg@10", "map"}
    assert len(history) == n_iter
    assert best == int(np.argmax(history)) + 1
    assert n_iter == best + 4 < 60, "early stopping should have stopped this run"
    # predict uses the best iteration
    np.testing.assert_array_equal(est.predict(Xv), est.predict(Xv, iteration=best))
    assert not np.array_equal(est.predict(Xv), est.predict(Xv, iteration=n_iter))
    # the recorded metric is the metric of those predictions
    ndcg = get_metric("ndcg@10")
    from ltrboost import make_dataset

    vs = make_dataset(Xv, yv, qid=qv)
    assert ndcg(est.predict(vs.X), vs.y, vs.query_offsets) == pytest.approx(
        history[best - 1], abs=1e-12
    )
    # the constructor's early_stopping_rounds was not modified by fit()
    assert est.early_stopping_rounds is None


def test_eval_set_with_group_sizes(data) -> None:
    X, y, qid, Xv, yv, qv = data
    _, sizes = np.unique(qv, return_counts=True)
    a = Ranker(**FAST).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    b = Ranker(**FAST).fit(X, y, qid=qid, eval_set=[(Xv, yv, None, sizes)])
    assert a.evals_result_ == b.evals_result_
    with pytest.raises(ValueError, match="eval_set"):
        Ranker(**FAST).fit(X, y, qid=qid, eval_set=[(Xv, yv)])


# ------------------------------------------------------------------ predictions
def test_score(data) -> None:
    X, y, qid, Xv, yv, qv = data
    est = Ranker(**FAST).fit(X, y, qid=qid)
    from ltrboost import make_dataset

    vs = make_dataset(Xv, yv, qid=qv)
    scores = est.predict(Xv)
    for metric in ("ndcg@10", "map", "err@5"):
        expected = get_metric(metric)(scores, vs.y, vs.query_offsets)
        assert est.score(Xv, yv, qid=qv, metric=metric) == pytest.approx(expected)
    assert est.score(Xv, yv, qid=qv) == pytest.approx(
        get_metric("ndcg@10")(scores, vs.y, vs.query_offsets)
    )
    _, sizes = np.unique(qv, return_counts=True)
    assert est.score(Xv, yv, group=sizes) == est.score(Xv, yv, qid=qv)
    # default metric: the first eval_metric
    est.set_params(eval_metric="err@5,ndcg@3")
    assert est.score(Xv, yv, qid=qv) == pytest.approx(
        get_metric("err@5")(scores, vs.y, vs.query_offsets)
    )
    # training NDCG beats a random ranking
    rng = np.random.default_rng(0)
    random_ndcg = np.mean(
        [get_metric("ndcg@10")(rng.random(len(yv)), vs.y, vs.query_offsets) for _ in range(5)]
    )
    assert est.score(Xv, yv, qid=qv, metric="ndcg@10") > random_ndcg


def test_predict_proba_only_for_mcrank(data) -> None:
    X, y, qid, Xv, *_ = data
    mc = Ranker(objective="mcrank", **FAST).fit(X, y, qid=qid)
    proba = mc.predict_proba(Xv)
    n_grades = int(y.max()) + 1
    assert proba.shape == (len(Xv), n_grades)
    assert np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    # McRank's ranking score is the expected grade
    np.testing.assert_allclose(mc.predict(Xv), proba @ np.arange(n_grades), rtol=1e-9)
    for obj in ("lambdamart", "ranknet", "mart"):
        est = Ranker(objective=obj, **FAST).fit(X, y, qid=qid)
        with pytest.raises(AttributeError, match="mcrank"):
            est.predict_proba(Xv)


def test_feature_importances_sum_to_one(data) -> None:
    X, y, qid, *_ = data
    est = Ranker(**FAST).fit(X, y, qid=qid)
    imp = est.feature_importances_
    assert imp.shape == (X.shape[1],)
    assert np.all(imp >= 0)
    assert imp.sum() == pytest.approx(1.0)
    # a constant column is never split on, so it gets no importance
    Xc = np.column_stack([X, np.full(len(y), 3.0)])
    est = Ranker(**FAST).fit(Xc, y, qid=qid)
    assert est.feature_importances_[-1] == 0.0
    assert est.feature_importances_.sum() == pytest.approx(1.0)


def test_sample_weight(data) -> None:
    X, y, qid, Xv, *_ = data
    plain = Ranker(**FAST).fit(X, y, qid=qid)
    ones = Ranker(**FAST).fit(X, y, qid=qid, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(plain.predict(Xv), ones.predict(Xv))
    # a common factor of 2 is exact in floating point: same leaves, same scores
    twos = Ranker(**FAST).fit(X, y, qid=qid, sample_weight=np.full(len(y), 2.0))
    np.testing.assert_array_equal(plain.predict(Xv), twos.predict(Xv))
    # uneven weights change the model
    w = np.random.default_rng(0).uniform(0.0, 3.0, len(y))
    weighted = Ranker(**FAST).fit(X, y, qid=qid, sample_weight=w)
    assert not np.array_equal(plain.predict(Xv), weighted.predict(Xv))
    # and they are accepted as a list too
    listed = Ranker(**FAST).fit(X, y, qid=qid, sample_weight=list(w))
    np.testing.assert_array_equal(weighted.predict(Xv), listed.predict(Xv))


def test_save_load_and_pickle(data, tmp_path) -> None:
    X, y, qid, Xv, *_ = data
    est = Ranker(objective="mcrank", **FAST).fit(X, y, qid=qid)
    path = tmp_path / "r.json"
    est.save_model(str(path))
    again = Ranker.from_booster(load_model(path))
    assert again.get_params() == est.get_params()
    np.testing.assert_array_equal(again.predict(Xv), est.predict(Xv))
    np.testing.assert_array_equal(again.predict_proba(Xv), est.predict_proba(Xv))
    unpickled = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(unpickled.predict(Xv), est.predict(Xv))


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "case",
    [
        "neither",
        "both",
        "y_short",
        "qid_short",
        "weight_short",
        "group_sum",
        "group_zero",
        "negative_weight",
        "nan_label",
        "inf_feature",
        "one_d_X",
    ],
)
def test_bad_input_raises_ltr_input_error(case: str, data) -> None:
    X, y, qid, *_ = data
    _, sizes = np.unique(qid, return_counts=True)
    kwargs: dict = {"qid": qid}
    Xa, ya = X, y
    if case == "neither":
        kwargs = {}
    elif case == "both":
        kwargs = {"qid": qid, "group": sizes}
    elif case == "y_short":
        ya = y[:-1]
    elif case == "qid_short":
        kwargs = {"qid": qid[:-1]}
    elif case == "weight_short":
        kwargs["sample_weight"] = np.ones(len(y) - 1)
    elif case == "group_sum":
        kwargs = {"group": np.r_[sizes[:-1], sizes[-1] + 1]}
    elif case == "group_zero":
        kwargs = {"group": np.r_[sizes, 0]}
    elif case == "negative_weight":
        kwargs["sample_weight"] = np.r_[-1.0, np.ones(len(y) - 1)]
    elif case == "nan_label":
        ya = y.copy()
        ya[3] = np.nan
    elif case == "inf_feature":
        Xa = X.copy()
        Xa[2, 1] = np.inf
    elif case == "one_d_X":
        Xa = X[:, 0]
    with pytest.raises(LTRInputError):
        Ranker(**FAST).fit(Xa, ya, **kwargs)


def test_bad_params_raise_at_fit(data) -> None:
    X, y, qid, *_ = data
    with pytest.raises(ValueError, match="max_leaf_nodes"):
        Ranker(max_leaf_nodes=1).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="objective"):
        Ranker(objective="nope").fit(X, y, qid=qid)


def test_predict_wrong_width(data) -> None:
    X, y, qid, *_ = data
    est = Ranker(**FAST).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :-1])

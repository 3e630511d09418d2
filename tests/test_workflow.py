"""The Python data stack around training (issue 14): pandas, scikit-learn model
selection by query, custom metrics, warm starts, inspection, and a new user's bugs.

Metric values are checked against the NumPy references below, written from the
definitions (not from :mod:`ltrboost.metrics`).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from ltrboost import LTRInputError, Ranker, load_model
from ltrboost.booster import train
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking

pd = pytest.importorskip("pandas")

FAST = dict(n_estimators=5, min_samples_leaf=3, max_leaf_nodes=6)


@pytest.fixture(scope="module")
def data():
    """36 queries x 10 documents, 5 features; train = 24 queries, valid = 12."""
    X, y, qid = make_ranking(36, 10, 5, random_state=3)
    tr = qid < 24
    return X[tr], y[tr], qid[tr], X[~tr], y[~tr], qid[~tr]


# ----------------------------------------------------------- NumPy references
def _groups(qid):
    return [np.flatnonzero(qid == q) for q in dict.fromkeys(qid.tolist())]


def ndcg_ref(scores, y, qid, k, gain="exp"):
    vals = []
    for rows in _groups(qid):
        s, g = scores[rows], y[rows]
        gains = np.exp2(g) - 1 if gain == "exp" else g.astype(float)
        order = np.argsort(-s, kind="stable")[:k]
        disc = 1 / np.log2(np.arange(2, len(rows) + 2))
        dcg = float(np.sum(gains[order] * disc[: len(order)]))
        ideal = float(np.sum(np.sort(gains)[::-1][:k] * disc[: min(k, len(rows))]))
        vals.append(dcg / ideal if ideal > 0 else 1.0)
    return float(np.mean(vals))


def map_ref(scores, y, qid, threshold):
    vals = []
    for rows in _groups(qid):
        rel = y[rows][np.argsort(-scores[rows], kind="stable")] >= threshold
        if not rel.any():
            vals.append(1.0)
            continue
        hits = np.cumsum(rel)
        vals.append(float(np.sum(rel * hits / np.arange(1, len(rel) + 1)) / rel.sum()))
    return float(np.mean(vals))


# ------------------------------------------ bug 1: gain / threshold reach metrics
def test_linear_gain_reaches_eval_set_and_score(data) -> None:
    X, y, qid, Xv, yv, qv = data
    y40, yv40 = y * 10, yv * 10  # labels up to 40: 2^y - 1 is refused
    est = Ranker(**FAST, gain="linear", eval_metric="ndcg@5")
    est.fit(X, y40, qid=qid, eval_set=[(Xv, yv40, qv)])
    sv = est.predict(Xv)
    expected = ndcg_ref(sv, yv40, qv, 5, gain="linear")
    assert est.evals_result_["valid_0"]["ndcg@5"][-1] == pytest.approx(expected)
    assert est.score(Xv, yv40, qid=qv) == pytest.approx(expected)


def test_relevance_threshold_reaches_map(data) -> None:
    X, y, qid, Xv, yv, qv = data
    est = Ranker(**FAST, relevance_threshold=3, lambda_metric="map", eval_metric="map")
    est.fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)])
    sv = est.predict(Xv)
    at3, at1 = map_ref(sv, yv, qv, 3), map_ref(sv, yv, qv, 1)
    assert at3 != pytest.approx(at1)  # the data tells the thresholds apart
    assert est.evals_result_["valid_0"]["map"][-1] == pytest.approx(at3)
    assert est.score(Xv, yv, qid=qv) == pytest.approx(at3)


# ------------------------------------------------- bug 2: DataFrame column names
def test_dataframe_columns_are_matched_by_name(data) -> None:
    X, y, qid, Xv, *_ = data
    cols = [f"f{k}" for k in range(X.shape[1])]
    est = Ranker(**FAST).fit(pd.DataFrame(X, columns=cols), y, qid=qid)
    df = pd.DataFrame(Xv, columns=cols)
    expected = est.predict(Xv)
    shuffled = df[cols[::-1]]
    np.testing.assert_array_equal(est.predict(shuffled), expected)
    np.testing.assert_array_equal(est.booster_.predict(shuffled), expected)
    with pytest.raises(LTRInputError, match=r"unknown columns \['zzz'\]"):
        est.predict(df.rename(columns={"f2": "zzz"}))
    with pytest.raises(LTRInputError, match=r"missing columns \['f4'\]"):
        est.predict(df.drop(columns="f4"))


# -------------------------------------------- bug 3: pipelines and metadata routing
def test_score_accepts_sample_weight(data) -> None:
    X, y, qid, Xv, yv, qv = data
    est = Ranker(**FAST).fit(X, y, qid=qid)
    sv = est.predict(Xv)
    w = np.where(qv % 2 == 0, 3.0, 1.0)  # constant within a query
    per_query = [ndcg_ref(sv[r], yv[r], qv[r], 10) for r in _groups(qv)]
    qw = [w[r][0] for r in _groups(qv)]
    expected = float(np.average(per_query, weights=qw))
    assert est.score(Xv, yv, qid=qv, sample_weight=w) == pytest.approx(expected)
    assert est.score(Xv, yv, qid=qv, sample_weight=None) == pytest.approx(ndcg_ref(sv, yv, qv, 10))


def test_gridsearch_over_pipeline_with_metadata_routing(data) -> None:
    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, qid, *_ = data
    with sklearn.config_context(enable_metadata_routing=True):
        ranker = Ranker(**FAST).set_fit_request(qid=True).set_score_request(qid=True)
        pipe = make_pipeline(StandardScaler(), ranker)
        assert np.isfinite(pipe.fit(X, y, qid=qid).score(X, y, qid=qid))
        search = GridSearchCV(
            pipe,
            {"ranker__max_leaf_nodes": [3, 6]},
            cv=GroupKFold(3),
            error_score="raise",
        )
        search.fit(X, y, qid=qid, groups=qid)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores))
    assert np.all((scores > 0) & (scores <= 1))


# ----------------------------------------------------------- bug 4: eval names
def test_eval_names_must_be_distinct_and_complete(data) -> None:
    X, y, qid, Xv, yv, qv = data
    es = [(Xv, yv, qv), (Xv[:30], yv[:30], qv[:30])]
    with pytest.raises(ValueError, match="distinct"):
        Ranker(**FAST).fit(X, y, qid=qid, eval_set=es, eval_names=["a", "a"])
    with pytest.raises(ValueError, match="one name per validation set"):
        Ranker(**FAST).fit(X, y, qid=qid, eval_set=es, eval_names=["a"])
    est = Ranker(**FAST).fit(X, y, qid=qid, eval_set=es, eval_names=["a", "b"])
    assert {k: len(v["ndcg@10"]) for k, v in est.evals_result_.items()} == {
        "a": 5,
        "b": 5,
    }
    with pytest.raises(ValueError, match="distinct names"):
        train(FAST, make_dataset(X, y, qid=qid), [("v", make_dataset(Xv, yv, qid=qv))] * 2)


# ------------------------------------------------------------ bug 5: init_model
@pytest.mark.parametrize("kind", ["booster", "ranker", "path"])
def test_init_model_adds_n_estimators_rounds(kind, data, tmp_path) -> None:
    X, y, qid, Xv, *_ = data
    first = Ranker(**dict(FAST, n_estimators=3)).fit(X, y, qid=qid)
    init = {"booster": first.booster_, "ranker": first, "path": tmp_path / "m.json"}
    first.save_model(str(tmp_path / "m.json"))
    more = Ranker(**dict(FAST, n_estimators=2)).fit(X, y, qid=qid, init_model=init[kind])
    assert more.booster_.n_iterations == 5
    whole = Ranker(**dict(FAST, n_estimators=5)).fit(X, y, qid=qid)
    np.testing.assert_array_equal(more.predict(Xv), whole.predict(Xv))
    with pytest.raises(TypeError, match="init_model"):
        Ranker(**FAST).fit(X, y, qid=qid, init_model=42)


# ------------------------------------------- bug 6: early stopping needs validation
def test_early_stopping_without_validation_raises(data) -> None:
    X, y, qid, *_ = data
    with pytest.raises(ValueError, match="needs a validation set"):
        Ranker(**FAST, early_stopping_rounds=2).fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="needs a validation set"):
        Ranker(**FAST).fit(X, y, qid=qid, early_stopping_rounds=2)


# ------------------------------------------------ bug 7: unused objective params
def test_parameters_the_objective_ignores_are_named(data) -> None:
    X, y, qid, *_ = data
    with pytest.warns(UserWarning, match=r"'mart' does not use sigma=5, tau=0.3"):
        Ranker(**FAST, objective="mart", sigma=5, tau=0.3).fit(X, y, qid=qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Ranker(**FAST, sigma=2.0, gain="linear").fit(X, y, qid=qid)  # all used
        Ranker(**FAST, objective="mart", gain="linear").fit(X, y, qid=qid)  # metric


# ------------------------------------ bug 8: string columns, callable eval_metric
@pytest.mark.parametrize("dtype", ["object", "category"])
def test_non_numeric_column_is_named(dtype, data) -> None:
    X, y, qid, *_ = data
    df = pd.DataFrame(X, columns=[f"f{k}" for k in range(X.shape[1])])
    df["brand"] = pd.Series(np.where(y > 1, "acme", "other")).astype(dtype)
    with pytest.raises(LTRInputError, match="column 'brand'"):
        Ranker(**FAST).fit(df, y, qid=qid)


def test_callable_eval_metric(data, tmp_path) -> None:
    X, y, qid, Xv, yv, qv = data
    calls = []

    def top1(scores, labels, query_offsets):
        calls.append(len(query_offsets) - 1)
        best = [labels[a:b][np.argmax(scores[a:b])] for a, b in itertools.pairwise(query_offsets)]
        return float(np.mean(best))

    est = Ranker(**dict(FAST, n_estimators=8), eval_metric=[top1, "ndcg@3"])
    est.fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)], early_stopping_rounds=3)
    res = est.evals_result_["valid_0"]
    assert set(res) == {"top1", "ndcg@3"}
    assert calls
    assert set(calls) == {12}
    sv = est.predict(Xv, iteration=len(res["top1"]))
    expected = np.mean([yv[r][np.argmax(sv[r])] for r in _groups(qv)])
    assert res["top1"][-1] == pytest.approx(expected)
    assert est.booster_.best_iteration == int(np.argmax(res["top1"])) + 1
    est.save_model(str(tmp_path / "m.json"))  # the callable is stored by name
    assert load_model(tmp_path / "m.json").params["eval_metric"] == ["top1", "ndcg@3"]
    assert est.score(Xv, yv, qid=qv, metric=top1) == pytest.approx(
        top1(*_grouped(est.predict(Xv), yv, qv))
    )


def _grouped(scores, y, qid):
    ds = make_dataset(scores[:, None], y, qid=qid)
    return ds.X[:, 0], ds.y, ds.query_offsets


# ---------------------------------------------------------- capability: qid column
def _frame(X, qid=None):
    df = pd.DataFrame(X, columns=[f"f{k}" for k in range(X.shape[1])])
    if qid is not None:
        df["qid"] = qid
    return df


def test_qid_column_is_the_query_id(data) -> None:
    X, y, qid, Xv, yv, qv = data
    a = Ranker(**FAST).fit(_frame(X, qid), y, eval_set=[(_frame(Xv, qv), yv)])
    b = Ranker(**FAST).fit(_frame(X), y, qid=qid, eval_set=[(_frame(Xv), yv, qv)])
    assert a.n_features_in_ == X.shape[1]
    assert list(a.feature_names_in_) == [f"f{k}" for k in range(X.shape[1])]
    np.testing.assert_array_equal(a.predict(_frame(Xv, qv)), b.predict(Xv))
    assert a.evals_result_ == b.evals_result_
    assert a.score(_frame(Xv, qv), yv) == pytest.approx(b.score(Xv, yv, qid=qv))


def test_cross_val_score_with_group_kfold_and_scorer(data) -> None:
    from sklearn.model_selection import GroupKFold, cross_val_score

    from ltrboost.metrics import make_scorer

    X, y, qid, *_ = data
    df = _frame(X, qid)
    scorer = make_scorer("ndcg@5")
    cv = GroupKFold(3)
    got = cross_val_score(Ranker(**FAST), df, y, groups=qid, cv=cv, scoring=scorer)
    expected = []
    for tr, te in cv.split(df, y, groups=qid):
        est = Ranker(**FAST).fit(X[tr], y[tr], qid=qid[tr])
        expected.append(ndcg_ref(est.predict(X[te]), y[te], qid[te], 5))
    np.testing.assert_allclose(got, expected)
    # default scoring: Ranker.score reads the qid column too
    assert np.all(np.isfinite(cross_val_score(Ranker(**FAST), df, y, groups=qid, cv=cv)))
    with pytest.raises(ValueError, match="qid"):
        scorer(Ranker(**FAST).fit(X, y, qid=qid), X, y)


def test_scorer_with_metadata_routing(data) -> None:
    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold

    from ltrboost.metrics import make_scorer

    X, y, qid, *_ = data
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            Ranker(**FAST).set_fit_request(qid=True),
            {"learning_rate": [0.05, 0.2]},
            cv=GroupKFold(3),
            scoring=make_scorer("ndcg@5").set_score_request(qid=True),
            error_score="raise",
        ).fit(X, y, qid=qid, groups=qid)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


# ------------------------------------------------------------ capability: inspection
def _walk(df_tree, x):
    node = df_tree.set_index("node")
    k = 0
    while not node.loc[k, "is_leaf"]:
        v = x[node.loc[k, "feature_idx"]]
        go_left = (
            node.loc[k, "missing_go_to_left"] if np.isnan(v) else (v <= node.loc[k, "threshold"])
        )
        k = node.loc[k, "left"] if go_left else node.loc[k, "right"]
    return node.loc[k, "value"]


def test_trees_to_dataframe_reproduces_predictions_and_importances(data) -> None:
    X, y, qid, Xv, *_ = data
    est = Ranker(**FAST).fit(_frame(X), y, qid=qid)
    booster = est.booster_
    df = booster.trees_to_dataframe()
    assert df["tree"].nunique() == len(booster.trees)
    assert set(df.loc[~df["is_leaf"], "feature"]) <= {f"f{k}" for k in range(5)}
    # an independent walk of the table gives the model's scores
    for row in Xv[:4]:
        walked = booster.init_score[0] + sum(_walk(t, row) for _, t in df.groupby("tree"))
        assert walked == pytest.approx(booster.predict(row[None, :])[0])
    inner = df[~df["is_leaf"]]
    split = inner.groupby("feature_idx").size().reindex(range(5), fill_value=0)
    gain = inner.groupby("feature_idx")["gain"].sum().reindex(range(5), fill_value=0)
    np.testing.assert_array_equal(booster.feature_importance("split"), split.to_numpy())
    np.testing.assert_allclose(booster.feature_importance("gain"), gain.to_numpy())
    np.testing.assert_allclose(est.feature_importances_, gain.to_numpy() / gain.sum())
    est.set_params(importance_type="split")
    np.testing.assert_allclose(est.feature_importances_, split.to_numpy() / split.sum())
    with pytest.raises(ValueError, match="importance_type"):
        booster.feature_importance("cover")


def test_text_dump_lists_every_node(data) -> None:
    X, y, qid, *_ = data
    booster = Ranker(**FAST).fit(_frame(X), y, qid=qid).booster_
    text = booster.dump_text()
    assert text.count("tree ") == len(booster.trees)
    assert text.count("leaf=") == sum(int(t["is_leaf"].sum()) for t in booster.trees)
    n_splits = text.count("<=")
    assert n_splits == int(booster.feature_importance("split").sum())
    assert "[f" in text
    assert "yes=" in text

"""Model metadata and fitted attributes (a fourth adversarial pass): what a model file
says about its metrics and position biases, what load accepts, and which ``X`` dtypes
are features."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ltrboost
from ltrboost import Ranker, load_model, make_dataset
from ltrboost.dataset import LTRInputError
from ltrboost.datasets import make_ranking
from ltrboost.io.model_schema import ModelFormatError
from ltrboost.metrics import get_metric

FAST = dict(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=3, random_state=0)


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=30, docs_per_query=(4, 12), n_features=5, random_state=3)
    return X, y, qid


# --- 1. a custom metric named as a built-in one -------------------------------------


def test_a_callable_metric_named_as_a_built_in_metric_is_refused(data):
    """A callable whose ``__name__`` is a built-in metric's (``ndcg@10``, ``NDCG@10``,
    ``map``) was recorded under that name in ``evals_result_`` and in the model file's
    ``eval_metric``: after loading, ``Ranker.from_booster(...).score`` evaluated the
    built-in (0.99 where the callable had said 0.25) and the history passed for the
    built-in's."""
    X, y, qid = data

    for name in ("ndcg@10", "NDCG@10", "map"):

        def fn(scores, labels, query_offsets):
            return 0.25

        fn.__name__ = name
        with pytest.raises(ValueError, match=rf"eval_metric: the callable {name!r} .*built-in"):
            Ranker(**FAST, eval_metric=fn).fit(X, y, qid=qid, eval_set=[(X, y, qid)])
        with pytest.raises(ValueError, match="built-in"):
            ltrboost.train(
                dict(n_estimators=2, eval_metric=["err", fn]),
                make_dataset(X, y, qid=qid),
                valid_sets=[("v", make_dataset(X, y, qid=qid))],
            )


def test_a_metric_object_with_other_options_than_the_models_is_refused(data, tmp_path):
    """``get_metric("ndcg@5", empty_query_score=0)`` was recorded as ``"ndcg@5"``: the
    loaded model's ``"ndcg@5"`` (the model's options) scored 0.9985 where the history
    said 0.8657.  A Metric equal to the model's own is the built-in, and is kept."""
    X, y, qid = data
    for metric in (
        get_metric("ndcg@5", gain="linear"),
        get_metric("ndcg@5", empty_query_score=0.0),
        get_metric("err", max_grade=4),
    ):
        with pytest.raises(ValueError, match=rf"eval_metric: get_metric\({metric.name!r}"):
            Ranker(**FAST, eval_metric=[metric]).fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    # the model's own options: the built-in, honest after loading
    model = Ranker(**FAST, gain="linear", eval_metric=get_metric("ndcg@5", gain="linear"))
    model.fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    model.save_model(tmp_path / "m.json")
    loaded = Ranker.from_booster(load_model(tmp_path / "m.json"))
    assert loaded.score(X, y, qid=qid) == model.evals_result_["valid_0"]["ndcg@5"][-1]
    # a metric that reads none of the differing options is the same metric
    Ranker(**FAST, gain="linear", eval_metric=get_metric("map")).fit(
        X, y, qid=qid, eval_set=[(X, y, qid)]
    )


def test_a_callable_with_its_own_name_is_still_saved_by_name(data, tmp_path):
    X, y, qid = data

    def my_ndcg(scores, labels, query_offsets):
        return 0.25

    model = Ranker(**FAST, eval_metric=[my_ndcg, "ndcg@3"]).fit(
        X, y, qid=qid, eval_set=[(X, y, qid)]
    )
    model.save_model(tmp_path / "m.json")
    booster = load_model(tmp_path / "m.json")
    assert booster.params["eval_metric"] == ["my_ndcg", "ndcg@3"]
    assert Ranker.from_booster(booster).eval_metric == ["ndcg@3"]


# --- 2. params.eval_metric on load --------------------------------------------------


def _model_dict(data, **params):
    X, y, qid = data
    return ltrboost.train(dict(n_estimators=2, **params), make_dataset(X, y, qid=qid)).to_dict()


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("garbage", "eval_metric 'garbage'"),
        ("ndcg@10,ndgc@5", "eval_metric 'ndgc@5'"),
        ("", "eval_metric"),
        (" , ", "eval_metric ' , ' names no metric"),
        (True, "eval_metric"),
        (5, "eval_metric"),
        ([], "eval_metric"),
        ([1, 2], "eval_metric"),
        (["ndcg@10", ""], "eval_metric"),
        ({"a": 1}, "eval_metric"),
    ],
)
def test_load_refuses_a_bad_eval_metric_naming_the_file_and_field(data, tmp_path, value, match):
    """A hand-edited ``params.eval_metric`` loaded: a string of unknown names failed
    only at ``score`` (not naming the file), ``true`` or ``5`` crashed
    ``Ranker.from_booster`` with a TypeError."""
    d = _model_dict(data)
    d["params"]["eval_metric"] = value
    path = tmp_path / "m.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ModelFormatError, match=rf"m\.json: params: {match}"):
        load_model(path)


def test_load_keeps_eval_metrics_training_writes(data, tmp_path):
    for value in ("NDCG@05, err", "ndcg@10,", ["ndcg@10", "my_metric"], None):
        d = _model_dict(data)
        d["params"]["eval_metric"] = value
        path = tmp_path / "m.json"
        path.write_text(json.dumps(d))
        assert load_model(path).params["eval_metric"] == value


# --- 3. position_bias_ after early stopping -----------------------------------------


def _pbm_clicks(seed, n_queries=200, n_docs=10):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * n_docs, 5))
    rel = (X[:, 0] + 0.5 * X[:, 1] > 0.8).astype(np.float64)
    pos = np.concatenate([rng.permutation(n_docs) + 1 for _ in range(n_queries)])
    clicks = (rng.random(rel.size) < (1.0 / pos) * rel).astype(np.float64)
    return X, clicks, np.repeat(np.arange(n_queries), n_docs), pos


def test_position_bias_after_early_stopping_is_the_kept_iterations(tmp_path):
    """With early stopping the model predicts with ``best_iteration`` rounds, but
    ``position_bias_`` held the estimates after the last round trained (rounds that
    were dropped); it is now the estimates of a run of ``best_iteration`` rounds."""
    X, clicks, qid, pos = _pbm_clicks(4)
    Xv, cv, qv, _ = _pbm_clicks(5, n_queries=60)
    qv = qv + qid.max() + 1  # the validation queries are others
    p = dict(max_leaf_nodes=15, min_samples_leaf=5, unbiased=True, max_positions=10)
    model = Ranker(n_estimators=40, early_stopping_rounds=3, **p).fit(
        X, clicks, qid=qid, position=pos, eval_set=[(Xv, cv, qv)]
    )
    best = model.best_iteration_
    n_trained = model.booster_.n_iterations
    assert best is not None
    assert best < n_trained  # the case in question
    short = Ranker(n_estimators=best, **p).fit(X, clicks, qid=qid, position=pos)
    want = short.position_bias_
    got = model.position_bias_
    for k in ("t_plus", "t_minus"):
        np.testing.assert_array_equal(got[k], want[k])
    assert model.booster_.best_position_bias == short.booster_.position_bias
    # the last round's estimates stay the booster's training state (resuming needs them)
    last = Ranker(n_estimators=n_trained, **p).fit(X, clicks, qid=qid, position=pos)
    assert model.booster_.position_bias == last.booster_.position_bias
    assert model.booster_.position_bias != model.booster_.best_position_bias
    # and both survive the model file
    model.save_model(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert loaded.position_bias == model.booster_.position_bias
    assert loaded.best_position_bias == model.booster_.best_position_bias
    again = Ranker.from_booster(loaded).position_bias_
    for k in ("t_plus", "t_minus"):
        np.testing.assert_array_equal(again[k], want[k])
    loaded.save_model(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "m.json").read_bytes()
    # continuing the early-stopped model (it gets no round) keeps its best estimates
    more = Ranker(n_estimators=5, early_stopping_rounds=3, **p).fit(
        X, clicks, qid=qid, position=pos, eval_set=[(Xv, cv, qv)], init_model=model
    )
    assert more.best_iteration_ == best
    assert more.booster_.best_position_bias == model.booster_.best_position_bias


def test_schema_refuses_a_bad_best_position_bias(tmp_path):
    X, clicks, qid, pos = _pbm_clicks(4)
    b = ltrboost.train(
        dict(n_estimators=2, unbiased=True, max_positions=10),
        make_dataset(X, clicks, qid=qid, position=pos),
    )
    good = b.to_dict()
    assert set(good["position_bias"]) == {"t_plus", "t_minus"}  # no early stop: as before
    for bad in (
        {"t_plus": [1.0] * 10},
        {"t_plus": [1.0] * 9, "t_minus": [1.0] * 9},
        {"t_plus": [1.0] * 10, "t_minus": [0.0] * 10},
        [1.0],
    ):
        d = json.loads(json.dumps(good))
        d["position_bias"]["best_iteration"] = bad
        d["best_iteration"] = 1
        with pytest.raises(ModelFormatError, match=r"position_bias\.best_iteration"):
            ltrboost.model.booster_from_dict(d)
    d = json.loads(json.dumps(good))
    d["position_bias"]["best_iteration"] = dict(good["position_bias"])
    with pytest.raises(ModelFormatError, match="best_iteration"):  # no best_iteration
        ltrboost.model.booster_from_dict(d)


# --- 4. NumPy arrays of strings as X ------------------------------------------------


@pytest.mark.parametrize("kind", ["U", "S", "O"])
def test_string_arrays_are_refused_as_features_naming_the_dtype(data, kind):
    """``np.array([["1.0", "2"]])`` (or bytes, or Python strings in an object array)
    was parsed silently by fit, predict and make_dataset, whereas a DataFrame's string
    column is refused: features must be numbers, not text."""
    X, y, qid = data
    Xs = X.astype(str)
    Xs = Xs.astype(object) if kind == "O" else Xs.astype(kind)
    model = Ranker(**FAST).fit(X, y, qid=qid)
    for call in (
        lambda: make_dataset(Xs, y, qid=qid),
        lambda: Ranker(**FAST).fit(Xs, y, qid=qid),
        lambda: model.predict(Xs),
        lambda: model.score(Xs, y, qid=qid),
    ):
        with pytest.raises(LTRInputError, match="strings") as e:
            call()
        if kind != "O":
            assert str(Xs.dtype) in str(e.value)
        else:
            assert "row 0" in str(e.value)
            assert "feature 0" in str(e.value)


def test_object_arrays_of_numbers_are_still_features(data):
    """An object array of numbers (``df.to_numpy()`` of mixed bool and float columns)
    is converted as before."""
    X, y, qid = data
    model = Ranker(**FAST).fit(X, y, qid=qid)
    Xo = X.astype(object)
    Xo[0, 0] = True
    Xo[1, 1] = 3
    want = X.copy()
    want[0, 0] = 1.0
    want[1, 1] = 3.0
    np.testing.assert_array_equal(model.predict(Xo), model.predict(want))
    np.testing.assert_array_equal(make_dataset(Xo, y, qid=qid).X, make_dataset(want, y, qid=qid).X)


# --- nearby: a training parameter of params that the objective refuses --------------


@pytest.mark.parametrize(
    ("name", "value"),
    [("gain", "foo"), ("lambda_metric", "zzz"), ("pair_method", "zzz"), ("sigma", -1)],
)
def test_load_refuses_an_objective_parameter_the_objective_refuses(data, tmp_path, name, value):
    """``params.gain = "foo"`` (or a bad ``lambda_metric``, ``pair_method``, ``sigma``)
    loaded, then ``Ranker.from_booster(...).score`` or a refit failed without naming
    the file (``objective_params`` were checked, ``params`` only for their types)."""
    d = _model_dict(data)
    d["params"][name] = value
    path = tmp_path / "m.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ModelFormatError, match=rf"m\.json: params: {name}="):
        load_model(path)

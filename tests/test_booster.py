"""Tests of the boosting loop (``booster.train``), ``Booster`` and ``BoosterParams``.

Every registered objective is trained for 10 rounds on ``make_ranking`` data (60
training and 30 validation queries drawn from one generator, so both follow the same
relevance function) and must improve validation NDCG@10 over its first round; every
split criterion and growth policy runs; model files predict bit-identically after a
save/load round trip; bad parameters raise ``ValueError`` naming the parameter.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from ltrboost import Booster, load_model, make_dataset, train
from ltrboost.booster import BoosterParams, CallbackEnv
from ltrboost.criteria import CRITERIA
from ltrboost.grower import GROWTH_POLICIES
from ltrboost.io.model_json import model_from_json
from ltrboost.objectives.registry import available_objectives, get_objective

OBJECTIVES = available_objectives()
FAST = dict(n_estimators=10, min_samples_leaf=5, max_leaf_nodes=8)


@pytest.fixture(scope="module")
def split_data():
    from ltrboost.datasets import make_ranking

    X, y, qid = make_ranking(90, 15, 10, noise=0.5, random_state=0)
    tr = qid < 60
    train_set = make_dataset(X[tr], y[tr], qid=qid[tr])
    valid_set = make_dataset(X[~tr], y[~tr], qid=qid[~tr])
    return train_set, valid_set


def test_registry_has_the_core_objectives() -> None:
    assert {"lambdamart", "ranknet", "mcrank", "mart"} <= set(OBJECTIVES)
    for name in OBJECTIVES:
        assert get_objective(name).name == name


def test_registry_register_unregister() -> None:
    from ltrboost.objectives.base import Objective
    from ltrboost.objectives.registry import register, unregister

    class _Temporary(Objective):
        name = "_temporary"

    # test-only objectives (tests/conftest.py) are registered only while a module that
    # asks for them runs, so the parametrizations above do not depend on collection order
    assert not [n for n in available_objectives() if n.startswith("_test")]
    assert "_test_" not in "".join(OBJECTIVES)
    register(_Temporary)
    try:
        assert isinstance(get_objective("_temporary"), _Temporary)
    finally:
        unregister("_temporary")
    assert "_temporary" not in available_objectives()
    unregister("_temporary")  # absent: no error


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_every_objective_improves_validation_ndcg(objective: str, split_data) -> None:
    train_set, valid_set = split_data
    booster = train(
        dict(FAST, objective=objective, eval_metric="ndcg@10"),
        train_set,
        [("valid", valid_set), ("train", train_set)],
    )
    assert booster.objective == objective
    assert booster.n_iterations == 10
    valid = booster.evals_result["valid"]["ndcg@10"]
    on_train = booster.evals_result["train"]["ndcg@10"]
    assert len(valid) == len(on_train) == 10
    assert all(0.0 <= v <= 1.0 for v in valid)
    assert on_train[-1] > on_train[0]
    assert valid[-1] > valid[0], f"{objective}: {valid}"
    scores = booster.predict(valid_set.X)
    assert scores.shape == (valid_set.n_samples,)
    assert np.all(np.isfinite(scores))


@pytest.mark.parametrize("growth", GROWTH_POLICIES)
@pytest.mark.parametrize("criterion", CRITERIA)
def test_lambdamart_every_criterion_and_growth(criterion: str, growth: str, split_data) -> None:
    train_set, valid_set = split_data
    booster = train(
        dict(
            FAST,
            n_estimators=5,
            split_criterion=criterion,
            growth=growth,
            eval_metric="ndcg@10",
        ),
        train_set,
        [("train", train_set)],
    )
    assert booster.params["split_criterion"] == criterion
    assert booster.params["growth"] == growth
    history = booster.evals_result["train"]["ndcg@10"]
    assert history[-1] > history[0]
    for nodes in booster.trees:
        assert int(nodes["is_leaf"].sum()) <= FAST["max_leaf_nodes"]
    assert np.all(np.isfinite(booster.predict(valid_set.X)))


@pytest.mark.parametrize("growth", GROWTH_POLICIES)
def test_growth_respects_max_depth(growth: str, split_data) -> None:
    train_set, _ = split_data
    booster = train(
        dict(FAST, n_estimators=3, growth=growth, max_depth=2, max_leaf_nodes=31),
        train_set,
    )
    for nodes in booster.trees:
        assert int(nodes["depth"].max()) <= 2
        assert int(nodes["is_leaf"].sum()) <= 4


# ------------------------------------------------------------------ model files
def _round_trip(booster: Booster, tmp_path) -> Booster:
    path = tmp_path / "model.json"
    booster.save_model(str(path))
    loaded = load_model(path)
    # saving the loaded model gives the same bytes
    again = tmp_path / "again.json"
    loaded.save_model(str(again))
    assert again.read_bytes() == path.read_bytes()
    return loaded


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_save_load_predicts_bit_identically(objective: str, split_data, tmp_path) -> None:
    train_set, valid_set = split_data
    booster = train(
        dict(FAST, n_estimators=6, objective=objective, early_stopping_rounds=50),
        train_set,
        [("valid", valid_set)],
    )
    loaded = _round_trip(booster, tmp_path)
    assert loaded.objective == objective
    assert loaded.n_outputs == booster.n_outputs
    assert loaded.update_rule == booster.update_rule
    assert loaded.best_iteration == booster.best_iteration
    assert loaded.evals_result == booster.evals_result
    # n_threads is a run-time setting, not stored in the file
    stored = {k: v for k, v in booster.params.items() if k != "n_threads"}
    assert loaded.params == stored
    np.testing.assert_array_equal(loaded.init_score, booster.init_score)
    for X in (valid_set.X, train_set.X):
        for it in (None, 0, 1, 3, 6):
            a = booster.predict_raw(X, iteration=it)
            b = loaded.predict_raw(X, iteration=it)
            assert a.tobytes() == b.tobytes()
            assert booster.predict(X, iteration=it).tobytes() == (
                loaded.predict(X, iteration=it).tobytes()
            )
    if objective == "mcrank":
        assert booster.n_outputs > 1
        assert booster.predict_raw(valid_set.X).shape == (
            booster.n_outputs,
            valid_set.n_samples,
        )
        assert len(booster.trees) == 6 * booster.n_outputs


def test_missing_values_predict_identically_after_load(tmp_path) -> None:
    from ltrboost.datasets import make_ranking

    X, y, qid = make_ranking(30, 10, 6, missing_rate=0.3, random_state=5)
    booster = train(dict(FAST, n_estimators=5), make_dataset(X, y, qid=qid))
    loaded = _round_trip(booster, tmp_path)
    assert booster.predict(X).tobytes() == loaded.predict(X).tobytes()
    X_all_missing = np.full((4, X.shape[1]), np.nan)
    assert booster.predict(X_all_missing).tobytes() == (loaded.predict(X_all_missing).tobytes())


def test_averaged_update_rule_round_trip(split_data, tmp_path) -> None:
    """GBRank's rule F_T = (F_0 + eta sum g_k) / (T + 1), checked on any trained trees.

    The rule is exercised on a LambdaMART booster's trees relabelled as GBRank's
    (a model file must pair the rule with its objective, so the copy is a ``gbrank``).
    """
    train_set, valid_set = split_data
    additive = train(dict(FAST, n_estimators=4), train_set)
    averaged = Booster(
        objective="gbrank",
        objective_params=get_objective("gbrank").get_params(),
        init_score=additive.init_score,
        trees=additive.trees,
        tree_outputs=additive.tree_outputs,
        n_features=additive.n_features,
        update_rule="averaged",
    )
    X = valid_set.X
    for it in (1, 2, 4):
        np.testing.assert_allclose(
            averaged.predict_raw(X, iteration=it),
            additive.predict_raw(X, iteration=it) / (it + 1),
            rtol=1e-15,
        )
    loaded = _round_trip(averaged, tmp_path)
    assert loaded.update_rule == "averaged"
    assert loaded.predict(X).tobytes() == averaged.predict(X).tobytes()
    for name in OBJECTIVES:
        if get_objective(name).update_rule == "averaged":
            booster = train(dict(FAST, n_estimators=4, objective=name), train_set)
            loaded = _round_trip(booster, tmp_path)
            assert loaded.predict(X).tobytes() == booster.predict(X).tobytes()


def test_model_file_is_versioned_json(split_data, tmp_path) -> None:
    train_set, _ = split_data
    booster = train(dict(FAST, n_estimators=2), train_set)
    path = tmp_path / "m.json"
    booster.save_model(str(path))
    d = json.loads(path.read_text())
    assert d["format"] == "ltrboost-model"
    assert d["format_version"] == 1
    assert d["n_features"] == train_set.X.shape[1]
    assert len(d["trees"]) == 2
    assert model_from_json(path.read_text()).n_iterations == 2


# ------------------------------------------------------------------ parameters
INVALID_PARAMS = [
    ("n_estimators", 0),
    ("learning_rate", 0.0),
    ("learning_rate", -0.1),
    ("learning_rate", math.nan),
    ("learning_rate", math.inf),
    ("max_leaf_nodes", 1),
    ("max_depth", 0),
    ("min_samples_leaf", 0),
    ("min_sum_hessian_in_leaf", -1.0),
    ("l2_regularization", -1.0),
    ("l2_regularization", math.nan),
    ("max_bins", 1),
    ("max_bins", 256),
    ("min_samples_bin", 0),
    ("split_criterion", "gini"),
    ("growth", "random"),
    ("subsample", 0.0),
    ("subsample", 1.5),
    ("subsample", math.nan),
    ("colsample_bytree", 0.0),
    ("colsample_bytree", 1.01),
    ("early_stopping_rounds", 0),
    ("objective", "nope"),
    ("random_state", -1),
    ("sigma", 0.0),
    ("sigma", -1.0),
    ("lambda_metric", "bogus"),
    ("truncation_level", -3),
    ("pair_method", "bogus"),
    ("pairs_per_sample", 0),
    ("gain", "cubic"),
]


@pytest.mark.parametrize(("name", "value"), INVALID_PARAMS)
def test_invalid_param_raises_value_error_naming_it(name: str, value, split_data) -> None:
    train_set, _ = split_data
    with pytest.raises(ValueError, match=name):
        train({"n_estimators": 2, name: value}, train_set)


@pytest.mark.parametrize("value", [math.nan, -1.0])
def test_invalid_min_gain_to_split(value: float, split_data) -> None:
    train_set, _ = split_data
    with pytest.raises(ValueError, match="min_gain_to_split"):
        train({"n_estimators": 2, "min_gain_to_split": value}, train_set)


def test_invalid_eval_metric_without_validation(split_data) -> None:
    train_set, _ = split_data
    with pytest.raises(ValueError, match="ndgc@10"):
        train({"n_estimators": 2, "eval_metric": "ndgc@10"}, train_set)


def test_invalid_eval_metric_with_validation(split_data) -> None:
    train_set, valid_set = split_data
    with pytest.raises(ValueError, match="ndgc@10"):
        train(
            {"n_estimators": 2, "eval_metric": "ndgc@10"},
            train_set,
            [("valid", valid_set)],
        )


def test_unknown_parameter_name(split_data) -> None:
    train_set, _ = split_data
    with pytest.raises(ValueError, match="n_trees"):
        train({"n_trees": 5}, train_set)
    with pytest.raises(ValueError, match="unknown parameter"):
        BoosterParams.from_dict({"n_trees": 5})


def test_params_dataclass_defaults_validate() -> None:
    BoosterParams().validate()
    names = [f.name for f in dataclasses.fields(BoosterParams)]
    assert len(names) == len(set(names))


def test_unlabelled_or_empty_training_set(split_data) -> None:
    train_set, _ = split_data
    unlabelled = make_dataset(train_set.X, None, group=train_set.query_sizes, require_labels=False)
    with pytest.raises(ValueError, match="labels"):
        train({"n_estimators": 2}, unlabelled)
    with pytest.raises(ValueError, match="validation set"):
        train({"n_estimators": 2}, train_set, [("v", unlabelled)])


# ----------------------------------------------------------------- predictions
def test_predict_errors(split_data) -> None:
    train_set, valid_set = split_data
    booster = train(dict(FAST, n_estimators=3), train_set)
    with pytest.raises(ValueError, match="features"):
        booster.predict(valid_set.X[:, :-1])
    with pytest.raises(ValueError, match="iteration"):
        booster.predict(valid_set.X, iteration=4)
    with pytest.raises(ValueError, match="iteration"):
        booster.predict(valid_set.X, iteration=-1)
    # iteration 0: the initial score only
    raw0 = booster.predict_raw(valid_set.X, iteration=0)
    np.testing.assert_array_equal(raw0, np.broadcast_to(booster.init_score[:, None], raw0.shape))


def test_incremental_validation_scores_match_prediction(split_data) -> None:
    """Incremental (binned) validation scores in the loop equal a fresh prediction."""
    from ltrboost.metrics import get_metric

    train_set, valid_set = split_data
    booster = train(
        dict(FAST, n_estimators=6, eval_metric="ndcg@10,map"),
        train_set,
        [("v", valid_set)],
    )
    for it in range(1, 7):
        scores = booster.predict(valid_set.X, iteration=it)
        for m in ("ndcg@10", "map"):
            value = get_metric(m)(scores, valid_set.y, valid_set.query_offsets)
            assert booster.evals_result["v"][m][it - 1] == pytest.approx(value, abs=1e-12)


def test_early_stopping(split_data) -> None:
    train_set, valid_set = split_data
    booster = train(
        dict(
            n_estimators=200,
            learning_rate=0.8,
            max_leaf_nodes=31,
            min_samples_leaf=1,
            early_stopping_rounds=3,
        ),
        train_set,
        [("valid", valid_set)],
    )
    history = booster.evals_result["valid"]["ndcg@10"]
    assert booster.n_iterations < 200
    assert booster.n_iterations == booster.best_iteration + 3
    assert booster.best_iteration == int(np.argmax(history)) + 1
    assert max(history[booster.best_iteration :]) <= history[booster.best_iteration - 1]


def test_resuming_a_run_that_had_met_its_early_stop_adds_no_round(split_data) -> None:
    """A run killed after its checkpoint of the round where early stopping fires (or a
    model trained exactly to that round) was resumed into more rounds: the resumed
    model had extra trees, not those of the uninterrupted run (README: resume gives the
    same final model)."""
    train_set, valid_set = split_data
    params = dict(
        n_estimators=200, learning_rate=0.8, max_leaf_nodes=31, min_samples_leaf=1,
        early_stopping_rounds=3,
    )  # fmt: skip
    full = train(params, train_set, [("valid", valid_set)])
    stop = full.n_iterations
    cut = train(dict(params, n_estimators=stop), train_set, [("valid", valid_set)])
    resumed = train(params, train_set, [("valid", valid_set)], init_model=cut)
    assert resumed.n_iterations == stop
    assert resumed.best_iteration == full.best_iteration
    assert resumed.evals_result == full.evals_result
    np.testing.assert_array_equal(resumed.predict(valid_set.X), full.predict(valid_set.X))
    # one round before the stop: training goes on to the same stop
    early = train(dict(params, n_estimators=stop - 1), train_set, [("valid", valid_set)])
    resumed = train(params, train_set, [("valid", valid_set)], init_model=early)
    assert resumed.n_iterations == stop


def test_no_best_iteration_without_early_stopping(split_data) -> None:
    train_set, valid_set = split_data
    booster = train(dict(FAST, n_estimators=3), train_set, [("valid", valid_set)])
    assert booster.best_iteration is None
    assert booster.predict(valid_set.X).tobytes() == (
        booster.predict(valid_set.X, iteration=3).tobytes()
    )


def test_callbacks_see_each_round_and_can_stop(split_data) -> None:
    train_set, valid_set = split_data
    seen: list[CallbackEnv] = []
    snapshots: list[Booster] = []

    def callback(env: CallbackEnv) -> bool:
        seen.append(env)
        snapshots.append(env.snapshot())  # valid only during the callback
        assert snapshots[-1].n_iterations == env.iteration + 1
        return env.iteration == 3

    booster = train(dict(FAST), train_set, [("valid", valid_set)], callbacks=[callback])
    assert booster.n_iterations == 4
    assert [e.iteration for e in seen] == [0, 1, 2, 3]
    assert all(e.n_estimators == 10 for e in seen)
    assert all(set(e.evaluation) == {"valid"} for e in seen)
    # a snapshot taken mid-run predicts like the final model cut at that round
    assert snapshots[1].predict(valid_set.X).tobytes() == (
        booster.predict(valid_set.X, iteration=2).tobytes()
    )


def test_feature_names_reach_the_model(tmp_path) -> None:
    pd = pytest.importorskip("pandas")
    from ltrboost.datasets import make_ranking

    X, y, qid = make_ranking(20, 8, 4, random_state=0)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    booster = train(dict(FAST, n_estimators=2), make_dataset(df, y, qid=qid))
    assert booster.feature_names == ["a", "b", "c", "d"]
    assert _round_trip(booster, tmp_path).feature_names == ["a", "b", "c", "d"]

"""Every field of a model file is validated (ltrboost.io.model_schema), in one place.

Targeted cases from the adversarial report (issue 18) and a hypothesis fuzz test that
deletes, retypes, scales or duplicates any field of real model files and accepts only
two outcomes: ``ModelFormatError`` naming the file, or a model that predicts finite
scores and survives a save/load round trip.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import tracemalloc
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ltrboost.booster import train
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.io.model_json import (
    ModelFormatError,
    booster_to_dict,
    load_model,
    model_from_json,
    save_model,
)
from ltrboost.io.model_schema import FREE_N_FEATURES

N_FEATURES = 6


@functools.cache
def _data():
    X, y, qid = make_ranking(n_queries=12, docs_per_query=8, n_features=N_FEATURES, random_state=1)[
        :3
    ]
    return X, y, qid


@functools.cache
def _model_text(objective: str) -> str:
    X, y, qid = _data()
    ds = make_dataset(X, y, qid=qid)
    booster = train(
        dict(
            objective=objective,
            n_estimators=3,
            max_leaf_nodes=4,
            min_samples_leaf=3,
            eval_metric="ndcg@5",
            early_stopping_rounds=5,
        ),
        ds,
        [("valid", ds)],
    )
    return json.dumps(booster_to_dict(booster))


def _model(objective: str = "lambdamart") -> dict[str, Any]:
    return json.loads(_model_text(objective))


def _fails(d_or_text, match: str | None = None, path: str = "bad.json"):
    text = d_or_text if isinstance(d_or_text, str) else json.dumps(d_or_text)
    with pytest.raises(ModelFormatError) as exc:
        model_from_json(text, path=path)
    msg = str(exc.value)
    assert msg.startswith(f"{path}: "), msg
    if match is not None:
        assert match in msg, msg
    return msg


def test_a_valid_model_loads():
    for objective in ("lambdamart", "mcrank", "gbrank"):
        b = model_from_json(_model_text(objective))
        assert b.objective == objective


# ------------------------------------------------------------- objective_params
@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"colour": 1}, "'colour' is not a parameter of objective 'lambdamart'"),
        ({"sigma": "big"}, "sigma must be"),
        ({"sigma": True}, "sigma must be"),  # a bool is not a number
        ({"sigma": -5}, "sigma=-5"),  # range checked at load, not only at predict
        ({"sigma": 0}, "sigma"),
        ({"truncation_level": 2.5}, "truncation_level"),
        ({"lambda_metric": "auc"}, "lambda_metric"),
        ({"lambda_normalization": 1}, "lambda_normalization"),
        ({"pair_method": None}, "pair_method"),
    ],
)
def test_objective_params_are_checked(params, match):
    d = _model()
    d["objective_params"].update(params)
    _fails(d, match)


def test_objective_changed_to_one_with_other_parameters():
    d = _model()
    d["objective"] = "ranknet"  # does not take lambda_metric, gain, ...
    _fails(d, "is not a parameter of objective 'ranknet'")
    d = _model()
    d["objective"] = "gbrank"  # another update rule, other parameters
    _fails(d, "update_rule 'additive' does not match objective 'gbrank'")


def test_objective_params_not_an_object():
    d = _model()
    d["objective_params"] = [1, 2]
    _fails(d, "objective_params must be an object")


# ------------------------------------------------------------ other top fields
@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("format_version", True, "format_version True must be a positive integer"),
        ("format_version", 1.0, "format_version"),
        ("n_features", True, "n_features"),
        ("n_outputs", 33, "n_outputs"),
        ("params", [1, 2], "params must be an object"),
        ("params", "lr=0.1", "params must be an object"),
        ("params", {"learning_rate": 0.1, "colour": 1}, "unknown training parameter"),
        ("params", {"n_estimators": -3}, "n_estimators"),
        ("params", {"max_bins": {"a": "b"}}, "max_bins"),
        ("evals_result", [0.5], "evals_result must be an object"),
        ("evals_result", {"valid": [0.5]}, "evals_result['valid']"),
        ("evals_result", {"valid": {"ndcg@5": "high"}}, "must be a list of numbers"),
        ("evals_result", {"valid": {"ndcg@5": [0.5] * 99}}, "99 values for 3 rounds"),
        ("best_iteration", True, "best_iteration"),
        ("missing", "maybe", "missing must be one of"),
        ("library_version", 1, "library_version"),
        ("feature_names", [1, 2, 3, 4, 5, 6], "feature_names"),
        ("update_rule", "averaged", "does not match objective"),
        ("colour", "blue", "unknown field(s) ['colour']"),
    ],
)
def test_top_level_fields_are_checked(field, value, match):
    d = _model()
    d[field] = value
    _fails(d, match)


@pytest.mark.parametrize("field", ["format", "format_version", "objective", "n_features", "trees"])
def test_required_fields(field):
    d = _model()
    del d[field]
    _fails(d)


def test_optional_fields_may_be_absent_or_null():
    d = _model()
    for field in ("library_version", "missing", "params", "evals_result"):
        d.pop(field)
    d["objective_params"] = None
    d["best_iteration"] = None
    b = model_from_json(json.dumps(d))
    assert b.missing is None
    assert b.params == {}


def test_old_file_with_n_threads_loads_without_it():
    d = _model()
    d["params"]["n_threads"] = 4
    b = model_from_json(json.dumps(d))
    assert "n_threads" not in b.params


def test_duplicate_keys_are_refused():
    text = _model_text("lambdamart")
    cases = {
        "top": text.replace('"n_features": 6', '"n_features": 6, "n_features": 9', 1),
        "objective_params": text.replace('"sigma": 1.0', '"sigma": 1.0, "sigma": 2.0'),
        "tree": text.replace('"output": 0', '"output": 0, "output": 0', 1),
    }
    for name, dup in cases.items():
        assert dup != text, name
        _fails(dup, "duplicate key")


def test_huge_feature_claim_is_refused_without_allocating():
    d = _model()
    d["n_features"] = 50_000_000
    tracemalloc.start()
    try:
        _fails(d, "n_features 50000000")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20, peak


def test_feature_count_beyond_the_free_limit_needs_names_or_use():
    d = _model()
    d["n_features"] = FREE_N_FEATURES  # still accepted
    assert model_from_json(json.dumps(d)).n_features == FREE_N_FEATURES
    d["n_features"] = FREE_N_FEATURES + 1
    _fails(d, "without feature_names")
    d["n_features"] = 2**31
    _fails(d, "n_features")


def test_leaf_values_that_overflow_the_score_are_refused():
    d = _model()
    for t in d["trees"]:
        t["value"] = [
            1e308 if f == -1 else v for v, f in zip(t["value"], t["feature"], strict=True)
        ]
    _fails(d, "non-finite score")


@pytest.mark.parametrize("objective", ["lambdamart", "gbrank"])
def test_single_output_objective_with_two_outputs(objective):
    d = _model(objective)
    d["n_outputs"] = 2
    d["init_score"] = d["init_score"] * 2
    d["trees"] = d["trees"] * 2
    _fails(d, "has one output")


def test_mcrank_outputs_match_max_label():
    d = _model("mcrank")
    d["objective_params"]["max_label"] = d["n_outputs"]  # one grade too many
    _fails(d, "does not match max_label")
    d["objective_params"]["max_label"] = d["n_outputs"] - 1
    model_from_json(json.dumps(d))


@pytest.mark.parametrize("where", ["sigma", "relevance_threshold", "learning_rate"])
def test_numbers_overflowing_to_infinity(where):
    text = _model_text("lambdamart")
    d = json.loads(text)
    if where == "learning_rate":
        d["params"]["learning_rate"] = 12345.5
    else:
        d["objective_params"][where] = 12345.5
    _fails(json.dumps(d).replace("12345.5", "1e400"), "out of the float range")


def test_errors_name_the_file(tmp_path):
    path = tmp_path / "edited.json"
    d = _model()
    d["objective_params"]["sigma"] = -5
    path.write_text(json.dumps(d))
    with pytest.raises(ModelFormatError) as exc:
        load_model(path)
    assert str(exc.value).startswith(f"{path}: objective_params: sigma=-5")


# ----------------------------------------------------------------------- fuzzing
def _paths(obj, prefix=()):
    """Every (container path, key) in a JSON document, depth first."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((prefix, k))
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:6]):  # a few elements of each list suffice
            out.append((prefix, i))
            out.extend(_paths(v, (*prefix, i)))
    return out


@functools.cache
def _all_paths(objective):
    return tuple(_paths(_model(objective)))


def _get(obj, path):
    for k in path:
        obj = obj[k]
    return obj


RETYPED = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**31,
    2**70,
    0.5,
    -1e308,
    1e-320,
    "",
    "lambdamart",
    "nan",
    [],
    [0],
    [None],
    {},
    {"a": 1},
]
FACTORS = [0, -1, 2, 1000, 50_000_000, 0.5, 1e300, -1e-300, 1e-320]
_DUP = "\u0000duplicate\u0000"


def _scale(v, factor):
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int | float):
        r = v * factor
        return r if math.isfinite(r) else v
    if isinstance(v, str):
        return v * 2
    if isinstance(v, list):
        return v * 2
    return v


def _mutate(objective, path_idx, op, replacement, factor) -> str:
    d = _model(objective)
    paths = _all_paths(objective)
    prefix, key = paths[path_idx % len(paths)]
    container = _get(d, prefix)
    if op == "delete":
        del container[key]
    elif op == "retype":
        container[key] = copy.deepcopy(replacement)
    elif op == "scale":
        container[key] = _scale(container[key], factor)
    elif op == "duplicate":
        if isinstance(container, list):
            container.insert(key, copy.deepcopy(container[key]))
        else:  # the same key twice in one JSON object, the second value changed
            original = container[key]
            container[key] = _DUP
            first = json.dumps(original)
            second = json.dumps(replacement)
            marker = json.dumps(key) + ": " + json.dumps(_DUP)
            text = json.dumps(d)
            assert text.count(marker) == 1
            return text.replace(marker, f"{json.dumps(key)}: {first}, {json.dumps(key)}: {second}")
    return json.dumps(d)


def _check_outcome(text: str) -> None:
    try:
        booster = model_from_json(text, path="fuzz.json")
    except ModelFormatError as e:
        message = str(e)
        booster = None
    if booster is None:
        assert message.startswith("fuzz.json: "), message
        return
    # a valid model: it predicts finite scores and survives a round trip
    X = _data()[0][:3]
    X = np.pad(X, ((0, 0), (0, booster.n_features - X.shape[1])))[:, : booster.n_features]
    scores = booster.predict(X)
    assert scores.shape == (X.shape[0],)
    assert np.all(np.isfinite(scores))
    again = model_from_json(json.dumps(booster_to_dict(booster)), path="again.json")
    assert again.predict(X).tobytes() == scores.tobytes()


@pytest.mark.parametrize("objective", ["lambdamart", "mcrank"])
@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    path_idx=st.integers(min_value=0, max_value=10**6),
    op=st.sampled_from(["delete", "retype", "scale", "duplicate"]),
    replacement=st.sampled_from(RETYPED),
    factor=st.sampled_from(FACTORS),
)
def test_fuzz_model_file_mutations(objective, path_idx, op, replacement, factor):
    _check_outcome(_mutate(objective, path_idx, op, replacement, factor))


def test_fuzz_covers_every_top_level_field():
    tops = {key for prefix, key in _all_paths("lambdamart") if prefix == ()}
    assert tops == set(_model("lambdamart"))


def test_saved_file_round_trips(tmp_path):
    b = model_from_json(_model_text("mcrank"))
    save_model(b, tmp_path / "m.json")
    assert load_model(tmp_path / "m.json").n_outputs == b.n_outputs

"""Tests for ltrboost.io.model_json: bit-identical round trip, atomic writes, and clean
failures (ModelFormatError naming the file) for every kind of corrupt model file."""

from __future__ import annotations

import copy
import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import ltrboost.io.model_json as model_json
from ltrboost._config import NODE_DTYPE
from ltrboost.booster import Booster, train
from ltrboost.dataset import make_dataset
from ltrboost.io.model_json import (
    FORMAT_VERSION,
    ModelFormatError,
    booster_to_dict,
    load_model,
    save_model,
)

# the models here are trained with _test_ls (tests/conftest.py), registered while this
# module runs so that loading them finds it
pytestmark = pytest.mark.usefixtures("test_objectives_registered")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    X[:, 1] *= 1e-300  # thresholds that need all 17 significant digits
    X[:, 2] = np.round(X[:, 2] * 2)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.clip(np.round(np.nan_to_num(X[:, 0]) + rng.normal(size=300) * 0.5 + 1), 0, 3)
    return X, y


@pytest.fixture(scope="module")
def booster(data, test_objectives_registered):
    X, y = data
    b = train(
        dict(
            objective="_test_ls",
            n_estimators=5,
            learning_rate=0.37,
            max_leaf_nodes=7,
            min_samples_leaf=4,
            max_bins=63,
            subsample=0.8,
            colsample_bytree=0.75,
            random_state=3,
            n_threads=2,
        ),
        make_dataset(X, y, group=[30] * 10),
    )
    b.feature_names = ["a", "b", "c", "d"]
    b.evals_result = {"valid": {"ndcg@10": [0.25, 0.5, 0.1 + 0.2, 0.5, 0.75]}}
    b.best_iteration = 4
    return b


def _with_inf_threshold_tree(booster: Booster) -> Booster:
    """A copy with one extra round whose split has num_threshold = +inf (all non-missing
    values left, missing right): written as null, read back as +inf."""
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes[0] = (0.0, 0, np.inf, 62, 0, 0, 1, 2, 0.5, 300, 600.0, 0)
    nodes[1] = (0.125, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 270, 540.0, 1)
    nodes[2] = (-1 / 3, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 30, 60.0, 1)
    b = copy.deepcopy(booster)
    b.trees = [*b.trees, nodes]
    b.tree_outputs = [*b.tree_outputs, 0]
    b._packed = {}
    return b


def _write_dict(path: Path, d) -> Path:
    path.write_text(json.dumps(d), encoding="utf-8")
    return path


def _assert_fails(path: Path, match: str | None = None):
    with pytest.raises(ModelFormatError) as exc:
        load_model(path)
    assert str(path) in str(exc.value)
    assert exc.value.path == str(path)
    if match is not None:
        assert match in str(exc.value), str(exc.value)
    return exc.value


# ====================================================================== round trip


def test_round_trip_predicts_bit_identically(tmp_path, data, booster):
    X, _ = data
    b = _with_inf_threshold_tree(booster)
    path = tmp_path / "model.json"
    save_model(b, path)
    loaded = load_model(path)
    assert isinstance(loaded, Booster)
    X_test = np.vstack([X, np.full((1, 4), np.nan), X * 3.0])
    for it in (None, 0, 2, b.n_iterations):
        np.testing.assert_array_equal(
            loaded.predict_raw(X_test, iteration=it),
            b.predict_raw(X_test, iteration=it),
        )
    assert len(loaded.trees) == len(b.trees)
    for ta, tb in zip(b.trees, loaded.trees, strict=True):
        # every field bit for bit, except the (unused) threshold of leaves, which the
        # file stores as null and which reads back as +inf
        ta, tb = ta.copy(), tb.copy()
        assert np.all(np.isposinf(tb["num_threshold"][tb["is_leaf"] == 1]))
        ta["num_threshold"][ta["is_leaf"] == 1] = 0.0
        tb["num_threshold"][tb["is_leaf"] == 1] = 0.0
        np.testing.assert_array_equal(ta, tb)
    assert loaded.tree_outputs == b.tree_outputs
    assert np.isposinf(loaded.trees[-1]["num_threshold"][0])
    assert loaded.objective == "_test_ls"
    np.testing.assert_array_equal(loaded.init_score, b.init_score)
    assert loaded.best_iteration == 4
    assert loaded.feature_names == ["a", "b", "c", "d"]
    assert loaded.evals_result == b.evals_result
    assert loaded.update_rule == b.update_rule
    assert loaded.n_features == 4
    assert loaded.n_outputs == 1
    assert loaded.params["max_leaf_nodes"] == 7
    assert loaded.params["subsample"] == 0.8
    # saving the loaded model reproduces the file exactly
    path2 = tmp_path / "again.json"
    save_model(loaded, path2)
    assert path2.read_text() == path.read_text()


def test_file_is_plain_versioned_json(tmp_path, booster):
    path = tmp_path / "m.json"
    booster.save_model(str(path))
    d = json.loads(path.read_text(encoding="utf-8"))
    assert d["format"] == "ltrboost-model"
    assert d["format_version"] == FORMAT_VERSION
    assert d["objective"] == "_test_ls"
    assert len(d["trees"]) == 5
    leaf = d["trees"][0]["left"].index(-1)
    assert d["trees"][0]["feature"][leaf] == -1
    assert d["trees"][0]["threshold"][leaf] is None


def test_never_uses_pickle(tmp_path, monkeypatch, booster):
    def boom(*args, **kwargs):
        raise AssertionError("pickle must not be used for model files")

    for name in ("dump", "dumps", "load", "loads", "Pickler", "Unpickler"):
        monkeypatch.setattr(pickle, name, boom)
    path = tmp_path / "m.json"
    save_model(booster, path)
    load_model(path)
    src = Path(model_json.__file__).read_text(encoding="utf-8")
    assert "import pickle" not in src
    assert "from pickle" not in src
    # and a pickle is not a model
    path.write_bytes(b"\x80\x04\x95" + bytes(range(256)))
    _assert_fails(path)


# ====================================================================== atomic write


def test_no_temporary_file_left_behind(tmp_path, booster):
    path = tmp_path / "m.json"
    save_model(booster, path)
    save_model(booster, path)  # overwrite
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]


def _existing(tmp_path) -> tuple[Path, bytes]:
    path = tmp_path / "model.json"
    path.write_bytes(b'{"old": "model"}')
    return path, path.read_bytes()


def test_existing_file_survives_failed_serialisation(tmp_path, monkeypatch, booster):
    path, before = _existing(tmp_path)

    def fail(*args, **kwargs):
        raise RuntimeError("serialisation failed")

    monkeypatch.setattr(json, "dumps", fail)
    with pytest.raises(RuntimeError, match="serialisation failed"):
        save_model(booster, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]


@pytest.mark.parametrize("where", ["fsync", "replace"])
def test_existing_file_survives_failed_write(tmp_path, monkeypatch, booster, where):
    path, before = _existing(tmp_path)

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(model_json.os, where, fail)
    with pytest.raises(OSError, match="No space"):
        save_model(booster, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]


def test_non_finite_leaf_refused_on_save(tmp_path, booster):
    path, before = _existing(tmp_path)
    b = copy.deepcopy(booster)
    b.trees[1] = b.trees[1].copy()
    b.trees[1]["value"][np.flatnonzero(b.trees[1]["is_leaf"])[0]] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        save_model(b, path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("threshold", [np.nan, -np.inf])
def test_nan_or_minus_inf_threshold_refused_on_save(tmp_path, booster, threshold):
    """Only +inf (a missing-vs-present split) is written as null: a NaN or -inf threshold
    (a hand-built tree) became null too and read back as +inf, which sends every value
    left instead of right: the reloaded model predicted differently, silently."""
    path, before = _existing(tmp_path)
    b = copy.deepcopy(booster)
    b.trees[0] = b.trees[0].copy()
    b.trees[0]["num_threshold"][0] = threshold
    with pytest.raises(ValueError, match="threshold"):
        save_model(b, path)
    assert path.read_bytes() == before


def test_save_into_missing_directory_fails_cleanly(tmp_path, booster):
    with pytest.raises(FileNotFoundError):
        save_model(booster, tmp_path / "nope" / "m.json")
    assert not (tmp_path / "nope").exists()


# ====================================================================== corrupt files


@pytest.fixture
def model_dict(booster):
    return booster_to_dict(booster)


def _internal(tree: dict) -> int:
    """Index of an internal node other than the root, else the root."""
    ks = [k for k, lf in enumerate(tree["left"]) if lf != -1]
    return ks[1] if len(ks) > 1 else ks[0]


def _deepest_tree(d) -> dict:
    return max(d["trees"], key=lambda t: len(t["value"]))


def test_truncated_json(tmp_path, booster):
    path = tmp_path / "m.json"
    save_model(booster, path)
    text = path.read_text()
    for cut in (1, len(text) // 3, len(text) - 1):
        path.write_text(text[:cut])
        _assert_fails(path, "not valid JSON")


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "not valid JSON"),
        (b"[1, 2, 3]", "not an ltrboost model"),
        (b'{"format": "xgboost"}', "not an ltrboost model"),
        (b"\xff\xfe\x00garbage", None),
    ],
    ids=["empty", "list", "other-format", "binary"],
)
def test_not_a_model(tmp_path, content, match):
    path = tmp_path / "m.json"
    path.write_bytes(content)
    _assert_fails(path, match)


def test_missing_file(tmp_path):
    _assert_fails(tmp_path / "absent.json", "cannot read")


@pytest.mark.parametrize("version", [2, 0, "1", None, 1.5])
def test_wrong_format_version(tmp_path, model_dict, version):
    model_dict["format_version"] = version
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict), "format_version")


def test_missing_format_version(tmp_path, model_dict):
    del model_dict["format_version"]
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict), "format_version")


def test_unknown_objective(tmp_path, model_dict):
    model_dict["objective"] = "no_such_objective"
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict), "no_such_objective")


@pytest.mark.parametrize("child", ["left", "right"])
@pytest.mark.parametrize("offset", [0, 5, -100])
def test_child_index_outside_the_tree(tmp_path, model_dict, child, offset):
    tree = _deepest_tree(model_dict)
    n = len(tree["value"])
    tree[child][_internal(tree)] = n + offset if offset >= 0 else offset
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict), "outside the tree")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("left", 2**40),
        ("right", -(2**40)),
        ("feature", 2**40),
        ("depth", 2**40),
        ("count", 2**70),
    ],
)
def test_huge_integer_field_is_a_format_error(tmp_path, model_dict, field, value):
    # an int beyond the node dtype must be range-checked, not stored (numpy would
    # raise OverflowError, which is not a ModelFormatError)
    tree = _deepest_tree(model_dict)
    tree[field][_internal(tree)] = value
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict))


def test_stored_depth_must_be_the_nodes_depth(tmp_path, model_dict):
    """A node's ``depth`` is read by inspect's max depth, plot_tree's layout and
    trees_to_dataframe: a hand-edited file whose depths disagree with the tree's
    structure loaded and misreported them."""
    tree = _deepest_tree(model_dict)
    k = _internal(tree)
    tree["depth"][k] += 3
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict), "is not its depth in the tree")


def test_cycle(tmp_path, model_dict):
    tree = _deepest_tree(model_dict)
    k = _internal(tree)
    assert k != 0
    tree["left"][k] = k  # a node that is its own child
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict), "reachable twice")


def test_cycle_back_to_an_ancestor(tmp_path, model_dict):
    tree = _deepest_tree(model_dict)
    # find a grandchild edge k -> c with c internal, and point c back at k
    ks = [k for k, lf in enumerate(tree["left"]) if lf != -1]
    parent = {tree[s][k]: k for k in ks for s in ("left", "right")}
    c = next(k for k in ks if k in parent and parent[k] != 0)
    tree["right"][c] = parent[c]
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict))


def test_shared_child_and_unreachable_node(tmp_path, model_dict):
    tree = _deepest_tree(model_dict)
    tree["right"][0] = tree["left"][0]  # both children the same node
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_leaf_value(tmp_path, model_dict, literal):
    tree = model_dict["trees"][2]
    leaf = tree["left"].index(-1)
    tree["value"][leaf] = 123.456
    text = json.dumps(model_dict).replace("123.456", literal)
    assert literal in text
    path = tmp_path / "m.json"
    path.write_text(text)
    _assert_fails(path)


def test_nan_threshold_and_init_score(tmp_path, model_dict):
    tree = model_dict["trees"][0]
    tree["threshold"][0] = 987.625
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model_dict).replace("987.625", "NaN"))
    _assert_fails(path)
    model_dict["trees"][0]["threshold"][0] = 0.0
    model_dict["init_score"] = ["zero"]
    _assert_fails(_write_dict(path, model_dict), "init_score")


@pytest.mark.parametrize("bad", [1.5, "2", True, None, [1]])
def test_non_integer_feature(tmp_path, model_dict, bad):
    tree = _deepest_tree(model_dict)
    tree["feature"][0] = bad
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict), "feature")


@pytest.mark.parametrize("bad", [4, -1, 99])
def test_feature_out_of_range_or_leaf_marker_on_internal_node(tmp_path, model_dict, bad):
    tree = _deepest_tree(model_dict)
    tree["feature"][0] = bad
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict), "feature")


def test_leaf_with_a_feature(tmp_path, model_dict):
    tree = _deepest_tree(model_dict)
    tree["feature"][tree["left"].index(-1)] = 1
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict), "leaf")


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda d: d.pop("trees"), "trees"),
        (lambda d: d.update(trees={}), "trees"),
        (lambda d: d.update(n_features=0), "n_features"),
        (lambda d: d.update(n_features=True), "n_features"),
        (lambda d: d.update(n_outputs=2), None),
        (lambda d: d.update(init_score=[0.0, 1.0]), "init_score"),
        (lambda d: d.update(update_rule="multiplicative"), "update_rule"),
        (lambda d: d.update(best_iteration=99), "best_iteration"),
        (lambda d: d.update(best_iteration=-1), "best_iteration"),
        (lambda d: d.update(feature_names=["only-one"]), "feature_names"),
        (lambda d: d.update(objective_params=[1, 2]), "objective_params"),
        (lambda d: d["trees"][0].pop("value"), "value"),
        (lambda d: d["trees"][0]["gain"].append(0.0), "gain"),
        (lambda d: d["trees"][0].update(output=3), "output"),
        (lambda d: d["trees"].__setitem__(0, "tree"), "tree 0"),
        (lambda d: d["trees"][0]["bin_threshold"].__setitem__(0, 256), "bin_threshold"),
        (lambda d: d["trees"][0]["missing_left"].__setitem__(0, 2), "missing_left"),
        (lambda d: d["trees"][0]["left"].__setitem__(0, True), "left"),
        (
            lambda d: d["trees"][0].update({k: [] for k in d["trees"][0] if k != "output"}),
            "no nodes",
        ),
    ],
)
def test_structural_errors(tmp_path, model_dict, mutate, match):
    mutate(model_dict)
    _assert_fails(_write_dict(tmp_path / "m.json", model_dict), match)


def test_deeply_nested_json(tmp_path):
    path = tmp_path / "m.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    _assert_fails(path)


def test_model_format_error_is_a_value_error():
    err = ModelFormatError("broken", "x/y.json")
    assert isinstance(err, ValueError)
    assert str(err) == "x/y.json: broken"
    assert os.fspath(err.path) == "x/y.json"


def test_feature_names_that_are_not_strings_are_saved_as_strings(tmp_path, data):
    """``make_dataset(feature_names=[0, 1, ...])`` trained a model whose file held the
    names as JSON integers, which loading refuses: the saved model could not be read
    back ('feature_names must be null or a list of strings')."""
    X, y = data
    b = train(
        dict(objective="_test_ls", n_estimators=2, max_leaf_nodes=4),
        make_dataset(X, y, group=[30] * 10, feature_names=[0, 1, 2, np.int64(3)]),
    )
    assert b.feature_names == ["0", "1", "2", "3"]
    path = tmp_path / "m.json"
    save_model(b, path)
    loaded = load_model(path)
    assert loaded.feature_names == ["0", "1", "2", "3"]
    np.testing.assert_array_equal(loaded.predict(X), b.predict(X))
    fields = dict(b.model_fields(), feature_names=[7, 8, 9, 10])  # the writer alone
    model_json.write_model(fields, tmp_path / "f.json")
    assert load_model(tmp_path / "f.json").feature_names == ["7", "8", "9", "10"]


def test_non_finite_metric_values_round_trip(tmp_path, data):
    """A custom eval_metric that returned NaN (or inf) for a round trained fine, but
    save_model then failed ('Out of range float values are not JSON compliant'): the
    trained model could not be saved.  Such values (training now refuses them; a model
    of an older version, or built by hand, may hold them) are written as null and read
    back as NaN."""
    X, y = data

    def flaky(scores, labels, offsets):
        return 0.5

    ds = make_dataset(X, y, group=[30] * 10)
    b = train(
        dict(objective="_test_ls", n_estimators=3, max_leaf_nodes=4, eval_metric=flaky),
        ds,
        [("v", ds)],
    )
    b.evals_result["v"]["flaky"][1] = float("nan")
    path = tmp_path / "m.json"
    save_model(b, path)
    assert json.loads(path.read_text())["evals_result"] == {"v": {"flaky": [0.5, None, 0.5]}}
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.evals_result["v"]["flaky"], [0.5, np.nan, 0.5])
    np.testing.assert_array_equal(loaded.predict(X), b.predict(X))


def test_model_saved_in_another_encoding_is_named_as_such(tmp_path, model_dict):
    """A model whose feature names were edited in a Latin-1 editor was 'not a text
    file'; the error names the encoding and the first byte that is not UTF-8."""
    d = copy.deepcopy(model_dict)
    d["feature_names"] = ["prix_\u00e9t\u00e9", "b", "c", "d"]
    text = json.dumps(d, ensure_ascii=False)
    path = tmp_path / "m.json"
    path.write_bytes(text.encode("latin-1"))
    offset = text.index("\u00e9")
    with pytest.raises(ModelFormatError, match=f"not UTF-8 text \\(byte 0xe9 at offset {offset};"):
        load_model(path)

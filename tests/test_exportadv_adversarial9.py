"""Exports, ninth adversarial pass: edge models in the real consumers.

Found and fixed or documented here:

* RankLib: a missing-vs-present split (threshold ``+inf``) was written with the
  threshold ``FLT_MAX``, so a value beyond float32's range (a LETOR ``1e300``, which
  RankLib reads with ``Float.parseFloat`` as ``Infinity``) went right there and left in
  ltrboost and every other float32 consumer; it is now ``Infinity``.
* Vespa's ``xgboost()`` compares doubles: at a missing-vs-present split (written with
  its children swapped and the float32 condition ``-FLT_MAX``) a double below
  ``-FLT_MAX`` goes to the other child than in ltrboost.  The dump keeps XGBoost's own
  float32 condition (what OpenSearch parses as a float), so docs/deploy.md says so.
* A Solr model or ``_createmodel`` body with an empty model name, or one holding a
  control character, was written; the engine's query (``{!ltr model=...}``, ``sltr``)
  cannot name it.  Refused now, in one line.

What holds, pinned below with LightGBM, XGBoost, onnxruntime and the independent
evaluators of tests/test_advexport6_adversarial4.py: values that differ past float32's
7th digit, thresholds between float64 values that round to one float32, huge and tiny
magnitudes, NaN at predict on a feature never missing in training, a feature missing
only in training, one feature, 10,001 features, every cut down to 0 rounds (McRank and
GBRank too), resumed models with another learning rate, and feature names with quotes,
``=``, ``:``, unicode and the like in every consumer that reads names.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "export"))
import _consumers as C

from ltrboost import Booster, make_dataset, train
from ltrboost._config import NODE_DTYPE
from ltrboost.export import ExportError, createmodel_body, export_bytes, export_model

F32 = np.float32
FLT_MAX = float(np.finfo(F32).max)
ROOT = Path(__file__).resolve().parents[1]
DEPLOY = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _split_tree(threshold: float, missing_left: int, feature: int = 0) -> np.ndarray:
    """A root split on ``feature`` at ``threshold`` with leaves -1 (left) and +2."""
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes[0] = (0.0, feature, threshold, 0, missing_left, 0, 1, 2, 1.0, 10, 1.0, 0)
    nodes[1] = (-1.0, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 5, 1.0, 1)
    nodes[2] = (2.0, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 5, 1.0, 1)
    return nodes


def _hand_model(*trees: np.ndarray, n_features: int = 2) -> Booster:
    return Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.0]),
        trees=list(trees),
        tree_outputs=[0] * len(trees),
        n_features=n_features,
    )


# --- 1. RankLib: a missing-vs-present split keeps every present value left ------------


def test_ranklib_missing_vs_present_split_sends_values_beyond_float32_left():
    b = _hand_model(_split_tree(np.inf, 1))
    X = np.array([[1e300, 0.0], [-1e300, 0.0], [FLT_MAX, 0.0], [0.0, 0.0], [np.nan, 0.0]])
    ours = b.predict(X)
    np.testing.assert_array_equal(ours[:4], -1.0)  # every present value goes left
    text = export_bytes(b, "ranklib").decode()  # NaN goes left, as 0 does: no flag needed
    # RankLib's LETOR reader and Ensemble both use Float.parseFloat: 1e300 is Infinity
    with np.errstate(over="ignore"):
        got = C.ranklib_score(text, X)
    np.testing.assert_array_equal(got, ours)
    assert "<threshold> Infinity </threshold>" in text


def test_ranklib_finite_thresholds_are_unchanged():
    b = _hand_model(_split_tree(0.5, 1), _split_tree(1e39, 1, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 1e39: beyond float32, warned elsewhere
        text = export_bytes(b, "ranklib").decode()
    assert "<threshold> 0.5 </threshold>" in text
    assert "<threshold> 3.4028235e+38 </threshold>" in text
    assert "Infinity" not in text


# --- 2. Vespa xgboost(): doubles below -FLT_MAX at a missing-vs-present split --------


def test_vespa_xgboost_sends_doubles_below_minus_flt_max_right_at_a_present_split():
    """Pinned as docs/deploy.md says: the dump keeps the float32 condition -FLT_MAX
    (XGBoost's own, which every float32 reader parses), so Vespa, comparing doubles,
    sends -1e300 to ltrboost's right child there; float32 values route as in ltrboost."""
    b = _hand_model(_split_tree(np.inf, 0))
    dump = json.loads(export_bytes(b, "xgboost-dump"))
    assert dump[0]["split_condition"] == -FLT_MAX
    X = np.array([[-1e300, 0.0], [-FLT_MAX, 0.0], [1e300, 0.0], [0.0, 0.0], [np.nan, 0.0]])
    ours = b.predict(X)
    for float_split in (False, True):
        got = C.vespa_xgboost_score(dump, ["f0", "f1"], X, float_split=float_split)
        np.testing.assert_array_equal(got[1:], ours[1:])
        assert got[0] == 2.0
        assert ours[0] == -1.0
    flat = _flat(DEPLOY)
    assert "a double below -3.4e38" in flat
    assert "missing-vs-present split" in flat


# --- 3. model names the engine cannot refer to ----------------------------------------


def _named_export(b, where: str, name: str, tmp_path=None):
    """A Solr file or a _createmodel body named ``name``: as bytes, or with
    export_model into ``tmp_path``."""
    if tmp_path is None:
        if where == "solr":
            return export_bytes(b, "solr", name=name)
        return createmodel_body(b, name=name)
    if where == "solr":
        return export_model(b, tmp_path / "m.json", "solr", name=name)
    c = tmp_path / "c.json"
    return export_model(b, tmp_path / "m.json", "xgboost-dump", createmodel=c, name=name)


@pytest.mark.parametrize("name", ["", "  ", "my\nranker", "a\tb", "x\x00"])
@pytest.mark.parametrize("where", ["solr", "createmodel"])
def test_model_names_the_engine_cannot_name_are_refused(name, where, tmp_path):
    b = _hand_model(_split_tree(0.5, 1))
    with pytest.raises(ExportError, match=r"model name .* (empty|control)") as e:
        _named_export(b, where, name)
    assert "\n" not in str(e.value)
    if not name:  # export_model: an empty name is the file's stem (documented)
        return
    with pytest.raises(ExportError, match="model name"):
        _named_export(b, where, name, tmp_path)
    assert not os.listdir(tmp_path)


def test_a_file_stem_the_engine_cannot_name_is_refused_as_the_model_name(tmp_path):
    b = _hand_model(_split_tree(0.5, 1))
    with pytest.raises(ExportError, match="model name"):
        export_model(b, tmp_path / "a\tb.json", "solr")
    assert not os.listdir(tmp_path)
    export_model(b, tmp_path / "a\tb.json", "solr", name="ranker")  # a name given: fine
    assert json.loads((tmp_path / "a\tb.json").read_text())["name"] == "ranker"


def test_cli_refuses_a_blank_model_name_in_one_line(tmp_path, capsys):
    from ltrboost.cli import main

    b = _hand_model(_split_tree(0.5, 1))
    b.save_model(tmp_path / "model.json")
    out = tmp_path / "m.json"
    rc = main(["export", str(tmp_path / "model.json"), "-f", "solr", "-o", str(out), "--name", " "])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("ltrboost: error: ")
    assert err.count("\n") == 1
    assert "--name" in err
    assert "model name" in err
    assert not out.exists()


@pytest.mark.parametrize("name", ["my ranker", "ранкер", 'a"b', "x/y", "m:1"])
def test_model_names_with_spaces_quotes_and_unicode_are_kept(name):
    b = _hand_model(_split_tree(0.5, 1))
    assert json.loads(export_bytes(b, "solr", name=name))["name"] == name
    assert json.loads(createmodel_body(b, name=name))["model"]["name"] == name


# --- 4. what holds: edge models in every consumer -------------------------------------

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from test_advexport6_adversarial4 import adversarial_rows, check_every_consumer  # noqa: E402


def _train(X, y, qid, valid=(), init_model=None, **params):
    p = {
        "objective": "lambdamart",
        "n_estimators": 4,
        "max_leaf_nodes": 4,
        "min_samples_leaf": 1,
        "learning_rate": 0.3,
        "random_state": 0,
    }
    p.update(params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return train(p, make_dataset(X, y, qid=qid), valid, init_model=init_model)


def _every_consumer(b, X, tmp_path, iterations=(None,)) -> None:
    P = adversarial_rows(b, X, np.random.default_rng(5))
    P = P[~np.isinf(P).any(axis=1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Float32RangeWarning / Solr's: checked inside
        for it in iterations:
            check_every_consumer(b, P, it, tmp_path)


def _splits(b) -> list[float]:
    return [float(n["num_threshold"]) for t in b.trees for n in t if not n["is_leaf"]]


def test_values_that_differ_past_the_7th_digit(tmp_path):
    """1.0000001 and 1.0000002 are float32 neighbours; 1.00000011 and 1.0000001 are
    float64 values that round to one float32, so a threshold lies between them."""
    rng = np.random.default_rng(0)
    vals = np.array([1.0000001, 1.0000002, 1.00000011, 1.00000012, 1.0 + 2.0**-24, 1.0])
    X = vals[rng.integers(0, len(vals), size=(120, 2))]
    y = (X[:, 0] > 1.000000105).astype(float) + (X[:, 1] > 1.0000001)
    b = _train(X, y, np.repeat(np.arange(10), 12))
    t = np.array(_splits(b))
    with np.errstate(over="ignore"):
        assert np.any(t.astype(F32) == F32(1.0000001))  # a threshold float32 cannot hold
    _every_consumer(b, X, tmp_path)


def test_huge_tiny_and_signed_zero_values(tmp_path):
    rng = np.random.default_rng(3)
    vals = np.array(
        [1e38, 3.4e38, FLT_MAX, 1e300, -1e300, -3.4e38, 5e-324, -5e-324, 1e-310, 0.0, -0.0,
         1e-45, 2e-45]
    )  # fmt: skip
    X = vals[rng.integers(0, len(vals), size=(120, 2))]
    y = (X[:, 0] > 2e38).astype(float) + (X[:, 1] > 0)
    b = _train(X, y, np.repeat(np.arange(10), 12), max_leaf_nodes=8)
    t = np.abs(_splits(b))
    assert (t > FLT_MAX).any()
    assert ((t > 0) & (t < 1e-300)).any()
    _every_consumer(b, X, tmp_path)


@pytest.mark.parametrize("missing", ["only_in_training", "never_in_training"])
def test_nan_at_predict_where_training_had_none_and_a_column_all_nan(missing, tmp_path):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(120, 3))
    if missing == "only_in_training":
        X[:, 1] = np.nan  # never present in training; present (and NaN) at predict
        X[rng.random(120) < 0.5, 2] = np.nan
    y = (X[:, 0] > 0).astype(float) + (np.nan_to_num(X[:, 2]) < -0.3)
    b = _train(X, y, np.repeat(np.arange(10), 12))
    _every_consumer(b, X, tmp_path)  # the rows hold NaN in every column


def test_one_feature_and_ten_thousand_and_one_features(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100, 1))
    b = _train(X, (X[:, 0] > 0).astype(float), np.repeat(np.arange(10), 10))
    _every_consumer(b, X, tmp_path)
    X = np.zeros((60, 10_001))
    X[:, 10_000] = rng.normal(size=60)
    X[:, 5_000] = rng.normal(size=60)
    y = (X[:, 10_000] > 0).astype(float) + (X[:, 5_000] > 0.5)
    b = _train(X, y, np.repeat(np.arange(6), 10))
    assert {int(n["feature_idx"]) for t in b.trees for n in t if not n["is_leaf"]} == {
        5_000,
        10_000,
    }
    P = np.zeros((10, 10_001))
    P[:, 10_000] = rng.normal(size=10)
    P[:, 5_000] = np.nan
    check_every_consumer(b, np.vstack([X[:20], P]), None, tmp_path)


def test_resumed_model_with_another_learning_rate_and_an_initial_score(tmp_path):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(120, 3))
    y = (X[:, 0] > 0).astype(float) + (X[:, 1] > 0)
    qid = np.repeat(np.arange(10), 12)
    b0 = _train(X, y, qid, objective="mart", learning_rate=0.7)
    b = _train(X, y, qid, objective="mart", learning_rate=0.05, n_estimators=7, init_model=b0)
    assert b.n_iterations == 7
    assert b.init_score[0] != 0.0
    _every_consumer(b, X, tmp_path, iterations=(None, 2, 5))


@pytest.mark.parametrize("objective", ["gbrank", "mcrank", "qbrank"])
def test_every_cut_down_to_zero_rounds(objective, tmp_path):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(120, 3))
    X[rng.random((120, 3)) < 0.2] = np.nan
    y = rng.integers(0, 3, size=120).astype(float)
    b = _train(X, y, np.repeat(np.arange(10), 12), objective=objective, n_estimators=3)
    _every_consumer(b, X, tmp_path, iterations=(0, 1, 3))


NAMES = ["a=b", "é", "日本", "🙂", "a'b", "a/b", "#x", "a(b)", "nan", "0", "\uff21", "a|b", "a;b"]


@pytest.mark.parametrize("name", NAMES)
def test_feature_names_reach_lightgbm_and_xgboost_as_written(name, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    b = _train(X, (X[:, 0] > 0).astype(float) + (X[:, 1] > 0), np.repeat(np.arange(6), 10))
    names = [name, "other"]
    b.export(tmp_path / "m.txt", format="lightgbm", feature_names=names)
    lb = lgb.Booster(model_file=str(tmp_path / "m.txt"))
    assert lb.feature_name() == names
    assert lb.dump_model()["feature_names"] == names  # what Vespa's lightgbm() reads
    np.testing.assert_array_equal(lb.predict(X), b.predict(X))
    b.export(tmp_path / "m.json", format="xgboost", feature_names=names)
    xb = xgb.Booster(model_file=str(tmp_path / "m.json"))
    assert xb.feature_names == names
    got = xb.predict(xgb.DMatrix(X, feature_names=names))  # names validated
    np.testing.assert_allclose(got, b.predict(X), rtol=0, atol=1e-5)
    dump = json.loads(export_bytes(b, "xgboost-dump", names))
    assert dump[0]["split"] in names
    solr = json.loads(export_bytes(b, "solr", names))
    assert [f["name"] for f in solr["features"]] == names


@pytest.mark.parametrize(
    ("name", "refused_by"),
    [
        ('a"b', {"lightgbm"}),  # LightGBM's loader rejects JSON punctuation
        ("a:b", {"lightgbm"}),
        ("a\\b", {"lightgbm"}),
        ("a<b", {"xgboost", "xgboost-dump"}),  # XGBoost's DMatrix rejects [ ] <
        # LightGBM's line of names is split by spaces; the JSON formats escape the
        # name, RankLib and ONNX are positional (tests/test_expnames_adversarial10.py)
        ("a b", {"lightgbm"}),
        ("", {"lightgbm"}),
        ("a\x01b", {"lightgbm", "xgboost"}),  # XGBoost keeps the \u0001 escape as is
    ],
)
def test_feature_names_a_format_refuses(name, refused_by):
    b = _hand_model(_split_tree(0.5, 1))
    for fmt in ("lightgbm", "xgboost", "xgboost-dump", "solr", "onnx", "ranklib"):
        if fmt in refused_by:
            with pytest.raises(ExportError, match=r"feature_names\[0\]"):
                export_bytes(b, fmt, [name, "other"])
        else:
            export_bytes(b, fmt, [name, "other"])


def test_duplicate_feature_names_are_refused():
    b = _hand_model(_split_tree(0.5, 1))
    with pytest.raises(ExportError, match="more than once"):
        export_bytes(b, "xgboost-dump", ["x", "x"])

"""Exports, sixth adversarial pass: what the files say about the model, and values
that sit exactly on a threshold.

* A model trained with a custom objective (a Python callable, docs/custom.md) was
  written as ``objective=lambdarank`` (LightGBM) and with no trace of its objective in
  the XGBoost JSON (whose ``objective.name`` must be one XGBoost and the OpenSearch
  ``model/xgboost+json+raw`` parser know): a reader took it for LambdaMART.
* GBRank's averaged score in LightGBM (``average_output``), checked at every cut.
* A value exactly on a threshold, per format, against what docs/deploy.md says.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "export"))
import _consumers as C

from ltrboost import Booster, make_dataset, train
from ltrboost._config import NODE_DTYPE
from ltrboost.export import export_bytes

F32 = np.float32
ROOT = Path(__file__).resolve().parents[1]
DEPLOY = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
KZERO = float(F32(1e-35))  # LightGBM: const double kZeroThreshold = 1e-35f;


def _flat(text: str) -> str:
    return " ".join(text.split())


def squared_error(scores, labels, query_offsets):
    return 2.0 * (scores - labels), np.full_like(scores, 2.0)


def _data(n_queries=20, docs=10, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, 3))
    X[rng.random(n) < 0.1, 2] = np.nan
    y = np.clip(np.round(X[:, 0] + rng.normal(size=n) * 0.5), 0, 3)
    return X, y, np.repeat(np.arange(n_queries), docs)


def _custom_model() -> tuple[Booster, np.ndarray]:
    X, y, qid = _data()
    b = train(
        {"objective": squared_error, "n_estimators": 3, "max_leaf_nodes": 4},
        make_dataset(X, y, qid=qid),
    )
    assert b.objective == "custom:squared_error"
    return b, X


# --- 1. a custom objective is labelled custom, and the consumers still load it ------


def _lightgbm_header(text: str) -> dict[str, str]:
    head = text.split("\n\n", 1)[0]
    return dict(ln.split("=", 1) if "=" in ln else (ln, "") for ln in head.splitlines())


def test_custom_objective_lightgbm_file_says_custom_and_loads(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    b, X = _custom_model()
    text = export_bytes(b, "lightgbm").decode()
    assert "lambdarank" not in text
    assert _lightgbm_header(text)["objective"] == "custom"
    assert "[objective: custom]" in text
    path = tmp_path / "m.txt"
    path.write_text(text)
    lb = lgb.Booster(model_file=str(path))
    np.testing.assert_array_equal(lb.predict(X), b.predict(X))
    assert lb.params["objective"] == "custom"
    # LightGBM leaves "objective" out of dump_model() for a custom objective (as for its
    # own custom-objective models); docs/deploy.md's Vespa conversion fills it in
    assert "objective" not in lb.dump_model()


def test_builtin_objectives_stay_lambdarank_in_lightgbm():
    X, y, qid = _data()
    b = train({"objective": "lambdamart", "n_estimators": 2}, make_dataset(X, y, qid=qid))
    text = export_bytes(b, "lightgbm").decode()
    assert _lightgbm_header(text)["objective"] == "lambdarank"
    assert "[objective: lambdarank]" in text


def test_custom_objective_xgboost_json_records_it_and_loads(tmp_path):
    xgb = pytest.importorskip("xgboost")
    b, X = _custom_model()
    model = json.loads(export_bytes(b, "xgboost"))
    learner = model["learner"]
    assert learner["attributes"] == {"ltrboost_objective": "custom:squared_error"}
    path = tmp_path / "m.json"
    path.write_bytes(export_bytes(b, "xgboost"))
    xb = xgb.Booster(model_file=str(path))
    assert xb.attr("ltrboost_objective") == "custom:squared_error"
    got = xb.predict(xgb.DMatrix(X), validate_features=False)
    np.testing.assert_allclose(got, b.predict(X), rtol=0, atol=1e-5)
    # OpenSearch's model/xgboost+json+raw parser accepts the objective name
    np.testing.assert_allclose(C.opensearch_raw_score(model, X), b.predict(X), atol=1e-5)


def test_builtin_objective_xgboost_json_records_it():
    X, y, qid = _data()
    b = train({"objective": "ranknet", "n_estimators": 2}, make_dataset(X, y, qid=qid))
    learner = json.loads(export_bytes(b, "xgboost"))["learner"]
    assert learner["attributes"] == {"ltrboost_objective": "ranknet"}


def test_custom_objective_onnx_and_ranklib_name_it():
    pytest.importorskip("onnx")
    import onnx

    b, _ = _custom_model()
    meta = {p.key: p.value for p in onnx.load_from_string(export_bytes(b, "onnx")).metadata_props}
    assert meta["objective"] == "custom:squared_error"
    text = export_bytes(b, "ranklib", assume_no_missing=True).decode()
    assert "## exported by ltrboost: objective = custom:squared_error" in text.splitlines()


def test_vespa_conversion_in_the_docs_works_for_a_custom_objective(tmp_path):
    """Vespa's LightGBMParser reads ``root.get("objective").asText(...)``: a dump
    without the key ends in a NullPointerException; the documented command adds it."""
    pytest.importorskip("lightgbm")
    b, _ = _custom_model()
    (m := tmp_path / "m.txt").write_bytes(export_bytes(b, "lightgbm"))
    cmd = re.search(r'python -c "(import json, lightgbm;[^"]+)"', DEPLOY)
    assert cmd, "docs/deploy.md has no LightGBM -> Vespa conversion command"
    (tmp_path / "models").mkdir()
    code = (
        cmd.group(1)
        .replace("'m.txt'", repr(str(m)))
        .replace("'models/ltr.json'", repr(str(tmp_path / "models" / "ltr.json")))
    )
    exec(code, {})
    dump = json.loads((tmp_path / "models" / "ltr.json").read_text())
    assert dump["objective"] == "custom"


# --- 2. GBRank's averaged score in LightGBM --------------------------------------------


def test_gbrank_lightgbm_average_output_at_every_cut(tmp_path):
    """``average_output`` divides by the iterations LightGBM predicts with, the bias
    tree included: ``num_iteration=k + 1`` is ltrboost's ``iteration=k`` (deploy.md)."""
    lgb = pytest.importorskip("lightgbm")
    X, y, qid = _data()
    b = train(
        {"objective": "gbrank", "n_estimators": 4, "max_leaf_nodes": 4},
        make_dataset(X, y, qid=qid),
    )
    assert b.update_rule == "averaged"
    text = export_bytes(b, "lightgbm").decode()
    assert "average_output" in _lightgbm_header(text)
    path = tmp_path / "m.txt"
    path.write_text(text)
    lb = lgb.Booster(model_file=str(path))
    assert lb.num_trees() == b.n_iterations + 1
    for k in range(b.n_iterations + 1):
        np.testing.assert_array_equal(lb.predict(X, num_iteration=k + 1), b.predict(X, iteration=k))
    for k in range(b.n_iterations + 1):  # an exported cut scores as ltrboost's cut
        (p := tmp_path / f"m{k}.txt").write_bytes(export_bytes(b, "lightgbm", iteration=k))
        np.testing.assert_array_equal(
            lgb.Booster(model_file=str(p)).predict(X), b.predict(X, iteration=k)
        )


# --- 3. a value exactly on a threshold -----------------------------------------------


def _one_split(threshold: float) -> Booster:
    """``x <= threshold`` -> 1.0, else -1.0 (NaN right), one feature."""
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes[0] = (0.0, 0, threshold, 0, 0, 0, 1, 2, 1.0, 10, 1.0, 0)
    nodes[1] = (1.0, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 5, 1.0, 1)
    nodes[2] = (-1.0, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 5, 1.0, 1)
    return Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.0]),
        trees=[nodes],
        tree_outputs=[0],
        n_features=1,
    )


# thresholds that are float32 values (so a float32 feature can hold them exactly)
F32_THRESHOLDS = [float(F32(v)) for v in (0.5, -2.5, 0.0, -0.0, 1e-30, -1e-30, 0.1, 1.5e-45, 3e38)]


def _at(t: float) -> np.ndarray:
    return np.array([[t]], dtype=np.float32)


@pytest.mark.parametrize("t", F32_THRESHOLDS)
def test_on_threshold_float32_consumers_go_left(t, tmp_path):
    """XGBoost, the dump (OpenSearch), ONNX, RankLib and Solr (where the threshold is
    reachable) send a float32 value equal to the threshold left, as ltrboost does."""
    b = _one_split(t)
    X = _at(t)
    assert float(X[0, 0]) == t
    assert b.predict(X)[0] == 1.0
    xgb = pytest.importorskip("xgboost")
    (p := tmp_path / "m.json").write_bytes(export_bytes(b, "xgboost"))
    xb = xgb.Booster(model_file=str(p))
    assert xb.predict(xgb.DMatrix(X), validate_features=False)[0] == 1.0
    model = json.loads(export_bytes(b, "xgboost"))
    assert C.opensearch_raw_score(model, X)[0] == 1.0
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(export_bytes(b, "onnx"), providers=["CPUExecutionProvider"])
    assert sess.run(None, {"features": X})[0][0] == 1.0
    text = export_bytes(b, "ranklib", assume_no_missing=True).decode()
    assert C.ranklib_score(text, X)[0] == 1.0
    import warnings

    from ltrboost.export.solr import SolrThresholdWarning

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        body = json.loads(export_bytes(b, "solr"))
    gaps = [g for x in w if isinstance(x.message, SolrThresholdWarning) for g in x.message.gaps]
    want = 1.0
    if gaps and gaps[0][2] == float(F32(t)):  # the gap (s, m] below m: documented, right
        want = -1.0
    assert C.solr_score(body, X)[0] == want


@pytest.mark.parametrize("t", [*F32_THRESHOLDS, 0.1, 1.0, -1e-300, 1e300])
def test_on_threshold_vespa_xgboost_goes_left_for_doubles(t):
    """Vespa's xgboost() compares doubles with ``x < c``, ``c`` above the threshold: a
    double equal to the threshold, float32 value or not, goes left as in ltrboost."""
    b = _one_split(t)
    X = np.array([[t]])
    assert b.predict(X)[0] == 1.0
    dump = json.loads(export_bytes(b, "xgboost-dump"))
    for float_split in (False, True):
        assert C.vespa_xgboost_score(dump, ["f0"], X, float_split)[0] == 1.0


def _vespa_lightgbm(dump: dict, X) -> np.ndarray:
    """Vespa's lightgbm(): ``x < t`` (``!(x >= t)`` where default_left), in double."""
    out = np.zeros(len(X))
    for i, row in enumerate(np.asarray(X, dtype=np.float64)):
        for tree in dump["tree_info"]:
            n = tree["tree_structure"]
            while "leaf_value" not in n:
                x, t = row[n["split_feature"]], n["threshold"]
                left = (not x >= t) if n["default_left"] else x < t
                n = n["left_child"] if left else n["right_child"]
            out[i] += n["leaf_value"]
    return out


@pytest.mark.parametrize("t", [0.5, -2.5, 0.1, 1.0, 1e-30, -1e-30, 5e-324, -5e-324, 0.0])
def test_on_threshold_lightgbm_and_vespa(t, tmp_path):
    """LightGBM: left, except a negative threshold within its zero range (|x| <=
    1e-35f reads as 0, which is above it); Vespa's lightgbm(): right (``x < t``)."""
    lgb = pytest.importorskip("lightgbm")
    b = _one_split(t)
    X = np.array([[t]])
    assert b.predict(X)[0] == 1.0
    (p := tmp_path / "m.txt").write_bytes(export_bytes(b, "lightgbm"))
    lb = lgb.Booster(model_file=str(p))
    want = -1.0 if -KZERO <= t < 0 else 1.0
    assert lb.predict(X)[0] == want
    assert _vespa_lightgbm(lb.dump_model(), X)[0] == -1.0


def test_docs_say_one_thing_about_values_on_a_threshold():
    """One list in docs/deploy.md, per format, and the LightGBM zero range in it (the
    Vespa paragraph said "left in ltrboost and LightGBM" without it)."""
    flat = _flat(DEPLOY)
    assert "## A value exactly on a threshold" in DEPLOY
    section = _flat(DEPLOY.split("## A value exactly on a threshold", 1)[1].split("\n## ", 1)[0])
    for fmt in ("LightGBM", "Vespa `lightgbm(...)`", "Vespa `xgboost(...)`", "XGBoost",
                "ONNX", "RankLib", "Solr"):  # fmt: skip
        assert fmt in section, fmt
    assert "1e-35f" in section
    assert "(left in ltrboost and LightGBM)" not in flat
    assert "A value exactly on a threshold" in _flat(README)

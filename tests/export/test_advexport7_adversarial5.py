"""Exports against their consumers, fifth adversarial pass: the documented exceptions
to "same leaves", pinned where they are and checked against what the docs say.

* LightGBM's ``kZeroThreshold`` is ``1e-35f`` (a float literal stored in a double), so
  it reads the float32 value nearest 1e-35 (1.0000000180025095e-35, a hair above the
  double 1e-35) as 0 too; the docs and two tests said ``|x| <= 1e-35``.
* Vespa's ``lightgbm()`` sends a value exactly at a threshold right; the docs said only
  a value the training data never held can sit on one, but where two training values
  are adjacent doubles the threshold is the lower value itself.
* LightGBM applies a GBRank file's ``average_output`` to ``predict()`` only: its
  ``pred_contrib`` (TreeSHAP) sums to the undivided score, ``T + 1`` times ltrboost's.

Random hand-built trees (thresholds from random float32 and float64 bit patterns, and
their neighbours) were also run through every consumer here and the evaluators of
``tests/test_advexport6_adversarial4.py``: no routing difference beyond these.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ltrboost import Booster, make_dataset, train
from ltrboost._config import NODE_DTYPE

F32 = np.float32
ROOT = Path(__file__).resolve().parents[2]
DEPLOY = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
KZERO = float(F32(1e-35))  # LightGBM: const double kZeroThreshold = 1e-35f;


def _flat(text: str) -> str:
    return " ".join(text.split())


def _one_split(threshold: float, feature: int = 0, n_features: int = 1) -> Booster:
    """One tree: ``x <= threshold`` -> leaf 1.0, else leaf -1.0 (NaN right)."""
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes[0] = (0.0, feature, threshold, 0, 0, 0, 1, 2, 1.0, 4, 1.0, 0)
    nodes[1] = (1.0, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 2, 1.0, 1)
    nodes[2] = (-1.0, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 2, 1.0, 1)
    return Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.0]),
        trees=[nodes],
        tree_outputs=[0],
        n_features=n_features,
    )


# --- LightGBM's zero range is float32(1e-35) -----------------------------------------


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_lightgbm_reads_the_float32_nearest_1e35_as_zero(sign, tmp_path):
    """A split at the double 1e-35 (ltrboost: x <= 1e-35 left).  The float32 value
    1e-35f is above it, so ltrboost sends it right (left for -1e-35f); LightGBM reads it
    as 0, which goes left (right for a split at -1e-35).  The next double above
    1e-35f is outside LightGBM's zero range and routes as in ltrboost."""
    lgb = pytest.importorskip("lightgbm")
    b = _one_split(sign * 1e-35)
    path = tmp_path / "m.txt"
    b.export(path, format="lightgbm")
    lb = lgb.Booster(model_file=str(path))
    edge = sign * KZERO
    beyond = float(np.nextafter(edge, sign * np.inf))
    X = np.array([[edge], [beyond], [0.0]])
    ours, theirs = b.predict(X), lb.predict(X)
    assert ours[0] != theirs[0]  # 1e-35f: read as 0 by LightGBM
    assert theirs[0] == theirs[2] == b.predict(np.zeros((1, 1)))[0]
    np.testing.assert_array_equal(theirs[1:], ours[1:])
    # a float32 feature holding 1e-35 is that value
    assert float(np.float32(sign * 1e-35)) == edge


def test_docs_name_lightgbms_zero_range_as_the_float32_1e35():
    """docs/deploy.md and README said |x| <= 1e-35, which leaves out 1e-35f itself."""
    for text in (DEPLOY, README):
        flat = _flat(text)
        assert "1e-35f" in flat
        assert "1.0000000180025095e-35" in flat
        assert "within 1e-35 of 0" not in flat
        assert "`|x| <= 1e-35`" not in flat


# --- Vespa lightgbm(): a threshold can be a training value ---------------------------


def _vespa_lightgbm_scores(dump: dict, X) -> np.ndarray:
    """docs/deploy.md and research/deploy-formats.md: Vespa's lightgbm() reads
    dump_model() JSON and rewrites ``x <= t`` into ``x < t`` (``!(x >= t)`` where
    ``default_left``, so NaN goes left there), in double, trees summed raw."""
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


def test_vespa_lightgbm_threshold_is_a_training_value_for_adjacent_doubles(tmp_path):
    """Training values 1.0 and the next double: no double lies between them, the
    midpoint rounds onto one of them and the threshold is the lower value, 1.0, which
    Vespa's ``x < t`` sends right (ltrboost and LightGBM left) -- for rows exactly like
    half the training data."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    lo, hi = 1.0, float(np.nextafter(1.0, 2.0))
    X = np.where(rng.random((200, 1)) < 0.5, lo, hi)
    X = np.hstack([X, rng.normal(size=(200, 1))])
    y = (X[:, 0] > lo) * 2.0
    b = train(
        {"objective": "lambdamart", "n_estimators": 2, "max_leaf_nodes": 3},
        make_dataset(X, y, qid=np.repeat(np.arange(20), 10)),
    )
    thresholds = [
        float(n["num_threshold"])
        for t in b.trees
        for n in t
        if not n["is_leaf"] and n["feature_idx"] == 0
    ]
    assert thresholds
    assert set(thresholds) == {lo}  # a value the training data held
    path = tmp_path / "m.txt"
    b.export(path, format="lightgbm")
    lb = lgb.Booster(model_file=str(path))
    rows = X[:10]
    np.testing.assert_array_equal(lb.predict(rows), b.predict(rows))
    vespa = _vespa_lightgbm_scores(lb.dump_model(), rows)
    at = rows[:, 0] == lo
    assert at.any()
    assert np.all(vespa[at] != b.predict(rows)[at])
    np.testing.assert_allclose(vespa[~at], b.predict(rows)[~at], rtol=1e-12)


def test_docs_say_a_threshold_can_be_a_training_value_in_vespa():
    flat = _flat(DEPLOY)
    assert "only a value the training data never held can sit on one" not in flat
    assert "adjacent doubles" in flat


# --- GBRank in LightGBM: pred_contrib is not averaged --------------------------------


def test_gbrank_lightgbm_pred_contrib_sums_to_the_undivided_score(tmp_path):
    """LightGBM's ``pred_contrib`` (TreeSHAP, what shap.TreeExplainer reads) ignores
    ``average_output`` like ``raw_score`` does: the contributions of a GBRank file add up
    to ``T + 1`` times ltrboost's score; XGBoost's (leaves divided) to the score."""
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = rng.integers(0, 3, 300).astype(float)
    b = train(
        {"objective": "gbrank", "n_estimators": 5, "max_leaf_nodes": 4},
        make_dataset(X, y, qid=np.repeat(np.arange(30), 10)),
    )
    ours = b.predict(X)
    b.export(tmp_path / "m.txt", format="lightgbm")
    lb = lgb.Booster(model_file=str(tmp_path / "m.txt"))
    np.testing.assert_array_equal(lb.predict(X), ours)
    contrib = lb.predict(X, pred_contrib=True).sum(axis=1)
    np.testing.assert_allclose(contrib, ours * (b.n_iterations + 1), rtol=1e-12, atol=1e-12)
    b.export(tmp_path / "m.json", format="xgboost")
    xb = xgb.Booster(model_file=str(tmp_path / "m.json"))
    xc = xb.predict(xgb.DMatrix(X), pred_contribs=True, validate_features=False).sum(axis=1)
    np.testing.assert_allclose(xc, ours, rtol=0, atol=1e-5)


def test_docs_say_gbrank_pred_contrib_is_undivided():
    flat = _flat(DEPLOY)
    assert "pred_contrib=True" in flat


# --- the public functions take what README's export section names --------------------


def _ranker():
    from ltrboost import Ranker

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = rng.integers(0, 3, 100)
    return Ranker(n_estimators=2, max_leaf_nodes=3).fit(X, y, qid=np.repeat(np.arange(10), 10)), X


def test_export_functions_take_a_fitted_ranker(tmp_path):
    """``export_bytes(ranker, ...)`` (and ``createmodel_body``, ``export_model``) ended
    in "AttributeError: 'Ranker' object has no attribute '_resolve_iterations'"; README
    names ``Ranker.export`` beside ``Booster.export``: the Ranker's booster is exported."""
    from ltrboost.export import createmodel_body, export_bytes, export_model

    r, _ = _ranker()
    for fmt in ("lightgbm", "xgboost-dump", "solr"):
        assert export_bytes(r, fmt) == export_bytes(r.booster_, fmt)
    opts = {"assume_no_missing": True}
    assert export_bytes(r, "ranklib", **opts) == export_bytes(r.booster_, "ranklib", **opts)
    assert createmodel_body(r, name="m") == createmodel_body(r.booster_, name="m")
    export_model(r, tmp_path / "a.txt", "lightgbm")
    r.export(tmp_path / "b.txt", format="lightgbm")
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()


def test_export_functions_name_what_they_were_given_instead_of_a_booster(tmp_path):
    from sklearn.exceptions import NotFittedError

    from ltrboost import Ranker
    from ltrboost.export import ExportError, createmodel_body, export_bytes, export_model

    with pytest.raises(NotFittedError, match="fit"):
        export_bytes(Ranker(), "lightgbm")
    for bad in ("model.json", None):
        with pytest.raises(ExportError, match="Booster") as e:
            export_bytes(bad, "lightgbm")
        assert "load_model" in str(e.value)
        assert type(bad).__name__ in str(e.value)
        with pytest.raises(ExportError, match="Booster"):
            createmodel_body(bad)
        with pytest.raises(ExportError, match="Booster"):
            export_model(bad, tmp_path / "m.txt", "lightgbm")
    assert not (tmp_path / "m.txt").exists()

"""Exports against their consumers, third adversarial pass: models whose float32 sums
overflow although every leaf fits."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import _consumers as C
from test_export import _hand_tree, lgb_scores

from ltrboost import Booster
from ltrboost.export import ExportError, export_bytes


def _big_leaves(scale: float, n_trees: int = 2, init: float = 0.0) -> Booster:
    trees = []
    for _ in range(n_trees):
        t = _hand_tree(0.5, 0)  # leaves -0.75, 0.125, 0.5
        t["value"] *= scale
        trees.append(t)
    return Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([init]),
        trees=trees,
        tree_outputs=[0] * n_trees,
        n_features=2,
    )


FLOAT32_SUMS = ["xgboost", "xgboost-dump", "solr", "onnx"]


@pytest.mark.parametrize("fmt", FLOAT32_SUMS)
@pytest.mark.parametrize("case", ["leaves", "init"])
def test_float32_sums_beyond_float32_are_refused(fmt, case, tmp_path):
    """Every leaf fits in float32, but two of -2.4e38 add up to -4.8e38 (or the initial
    score 3e38 plus a leaf of 1e38): XGBoost, onnxruntime and Solr scored those rows
    -inf / +inf (tied, ranked last or first) without a word; LightGBM (float64) keeps
    the exact scores."""
    b = _big_leaves(3.2e38) if case == "leaves" else _big_leaves(2e38, 1, init=3e38)
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=np.float32)
    assert (np.abs(b.predict(X)) > np.finfo(np.float32).max).any()  # beyond float32
    with pytest.raises(ExportError, match="float32") as e:
        export_bytes(b, fmt)
    msg = str(e.value)
    assert "\n" not in msg
    assert fmt in msg
    assert "lightgbm" in msg
    np.testing.assert_array_equal(lgb_scores(b, X, tmp_path), b.predict(X))


@pytest.mark.parametrize("fmt", FLOAT32_SUMS)
def test_large_leaves_whose_sums_fit_still_export(fmt):
    """Four trees of leaves up to 7.5e37: the sum of the largest ones (3e38) fits."""
    b = _big_leaves(1e38, 4)
    export_bytes(b, fmt)
    if fmt == "solr":
        import json

        X = C.probe_rows(b, np.zeros((4, 2), dtype=np.float32))
        got = C.solr_score(json.loads(export_bytes(b, "solr")), X)
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, b.predict(X), rtol=1e-6)


@pytest.mark.parametrize("threshold", [-1e-40, -5e-14, -1e-300, -1e-13])
def test_solr_routes_zero_as_ltrboost_below_a_tiny_negative_threshold(threshold, tmp_path):
    """A split at a tiny negative threshold (between a value like -1e-13 and 0): the
    smallest threshold Solr's +1e-6f reaches above it was 0, so every document whose
    feature is 0 (the commonest value, and an absent feature in Solr) went left instead
    of right; the warning named that gap only when it was the widest of the model.  The
    other side is taken now: 0 routes as in ltrboost, the sliver (threshold, m] is the
    gap."""
    import json
    import warnings

    from test_export import check_solr

    from ltrboost.export.solr import SolrThresholdWarning

    b = Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.0]),
        trees=[_hand_tree(threshold, 1), _hand_tree(-1.0, 0)],  # -1: a wider gap
        tree_outputs=[0, 0],
        n_features=2,
    )
    X = np.array([[0.0, 0.0], [-0.0, 1.0], [0.0, -3.0], [1e-30, 0.0], [-1.0, 0.0]], np.float32)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        body = json.loads(export_bytes(b, "solr"))
    (warning,) = [x.message for x in w if isinstance(x.message, SolrThresholdWarning)]
    np.testing.assert_allclose(C.solr_score(body, X), b.predict(X), rtol=1e-6)
    gaps = {g[0]: g[1:] for g in warning.gaps}
    lo, hi = gaps["f0"]
    assert lo < hi <= threshold < 0  # the sliver lies below 0
    rng = np.random.default_rng(0)
    check_solr(b, rng.normal(size=(30, 2)).astype(np.float32), np.repeat(np.arange(3), 10))


def test_feature_names_from_an_iterator_reach_both_files(tmp_path):
    """``export_model(..., feature_names=<generator>, createmodel=...)`` read the names
    for the dump, then found the generator empty for the ``_createmodel`` body: '0
    feature names given but the model has 6 features' for six good names."""
    import json

    from test_export import model

    b, _, _ = model("lambdamart", True)
    out, body = tmp_path / "d.json", tmp_path / "c.json"
    b.export(
        out, format="xgboost-dump", feature_names=(f"q{i}" for i in range(6)), createmodel=body
    )
    definition = json.loads(json.loads(body.read_text())["model"]["model"]["definition"])
    assert definition == json.loads(out.read_text())
    assert '"split": "q' in out.read_text()

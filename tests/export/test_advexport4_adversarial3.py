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

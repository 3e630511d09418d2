"""Split thresholds beyond float32's range (Istella-like data holds feature values near
the double's maximum): the float32 consumers read every such value as +-inf, so rows
beyond +-3.4e38 can reach other leaves there than in ltrboost.  The export says so."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ltrboost import Booster
from ltrboost._config import NODE_DTYPE
from ltrboost.export import Float32RangeWarning, export_bytes

FLOAT32_FORMATS = ["xgboost", "xgboost-dump", "solr", "onnx", "ranklib"]


def _export(booster: Booster, fmt: str) -> bytes:
    # the one split sends NaN right and 0 left: RankLib (no missing values) is told so
    extra = {"assume_no_missing": True} if fmt == "ranklib" else {}
    return export_bytes(booster, fmt, feature_names=["f0"], **extra)


def _one_split(threshold: float) -> Booster:
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes[0] = (0.0, 0, threshold, 0, 0, 0, 1, 2, 1.0, 4, 1.0, 0)
    nodes[1] = (1.0, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 2, 1.0, 1)
    nodes[2] = (-1.0, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 2, 1.0, 1)
    return Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.0]),
        trees=[nodes],
        tree_outputs=[0],
        n_features=1,
    )


@pytest.mark.parametrize("fmt", FLOAT32_FORMATS)
@pytest.mark.parametrize("threshold", [1.5e308, -1e300, 3.5e38])
def test_a_threshold_beyond_float32_warns_in_float32_formats(fmt, threshold):
    if fmt == "onnx":
        pytest.importorskip("onnx")
    with pytest.warns(Float32RangeWarning, match=r"beyond float32's range.*f0") as rec:
        _export(_one_split(threshold), fmt)
    assert rec[0].message.thresholds == [("f0", threshold)]


@pytest.mark.parametrize("fmt", [*FLOAT32_FORMATS, "lightgbm"])
@pytest.mark.parametrize(
    "threshold", [3.0e38, -3.0e38, 0.5, float("inf"), -3.40282347e38, 3.4028235e38]
)
def test_thresholds_float32_holds_do_not_warn(fmt, threshold):
    if fmt == "onnx":
        pytest.importorskip("onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("error", Float32RangeWarning)
        _export(_one_split(threshold), fmt)


def test_lightgbm_compares_doubles_and_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", Float32RangeWarning)
        _export(_one_split(1.5e308), "lightgbm")

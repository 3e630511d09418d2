"""Adversarial review of ``quantized_gradients`` (stop 41, qreview).

The quantised splits against the guarantees the exact ones keep, and the packed lanes at
their real chunk with every row at the top level (no overflow into the next lane).
"""

from __future__ import annotations

import numpy as np
import pytest

import ltrboost
from ltrboost.datasets import make_ranking
from ltrboost.histogram import build_quantized_histogram
from ltrboost.quantize import LANE_MASK, packed_sums, quant_spec, quantize


def _tiny_hessian_objective(n):
    """Every document's hessian 2e-4, under ``min_sum_hessian_in_leaf``'s 1e-3 alone,
    but for five at 1: a document's rounded hessian is one level (1/k) or 0."""

    def obj(scores, labels, query_offsets):
        g = np.where(labels > 1, -1.0, 1.0)
        h = np.full(n, 2e-4)
        h[:5] = 1.0
        return g, h

    return obj


@pytest.mark.parametrize("bins", [4, 16, 255])
def test_no_leaf_of_a_quantized_tree_is_under_min_sum_hessian_in_leaf(bins):
    """docs/custom.md: "no split leaves a child under [min_sum_hessian_in_leaf]". The
    quantised split search sees a document of hessian 2e-4 rounded up to 1/16 and let a
    leaf of it alone through; its exact hessian sum 2e-4 (kept by the leaf renewal) was
    under the limit of 1e-3, its value a Newton step on it."""
    X, y, q = make_ranking(n_queries=300, docs_per_query=(5, 40), n_features=8, random_state=0)[:3]
    ds = ltrboost.make_dataset(X, y, qid=q)
    params = {
        "objective": _tiny_hessian_objective(X.shape[0]),
        "n_estimators": 3,
        "min_samples_leaf": 1,
        "quantized_gradients": bins,
    }
    booster = ltrboost.train(params, ds)
    for tree in booster.trees:
        leaves = tree["is_leaf"] == 1
        if leaves.sum() > 1:  # (a root alone is flattened to 0, as in exact training)
            assert tree["sum_hessians"][leaves].min() >= 1e-3


@pytest.mark.parametrize("negative_h", [False, True])
@pytest.mark.parametrize("where", ["root", "node", "rows"])
def test_lanes_hold_a_full_chunk_of_top_levels(negative_h, where):
    """k=255 (the largest chunk product): every row of one bin at the top gradient and
    hessian level, over more than two real chunks; each lane sums exactly (a carry into
    the next lane would show as a wrong count or hessian sum)."""
    bins = 255
    n = 20_000
    g = np.ones(n, dtype=np.float32)
    h = np.ones(n, dtype=np.float32)
    if negative_h:
        h[0] = -1.0  # one negative hessian: the hessian scaled as the gradient
    spec = quant_spec(bins, 5, g, h)
    assert n > 2 * spec.chunk
    packed = np.empty(n, dtype=np.int64)
    quantize(g, h, spec, 0, packed)
    gl = packed >> 42
    hl = (packed >> 21) & LANE_MASK
    top = max(2 * spec.g_off, spec.h_hi + spec.h_off)
    assert spec.chunk * top <= LANE_MASK
    assert gl.max() == top  # the top level is reached (half the rows round up)
    assert hl.max() <= top
    X_binned = np.zeros((n, 3), dtype=np.uint8, order="F")
    X_binned[1::2, 1] = 1  # a second feature in two bins
    nbins = np.array([1, 2, 1], dtype=np.int32)
    features = np.arange(3, dtype=np.int32)
    hist = np.zeros((3, 4, 3))
    rows = np.arange(n, dtype=np.int32)
    if where == "root":
        build_quantized_histogram(
            X_binned, rows[:0], packed, features, hist, n, False, spec, n_bins_non_missing=nbins
        )
    else:
        X_rows = np.ascontiguousarray(X_binned) if where == "rows" else None
        build_quantized_histogram(
            X_binned, rows, packed, features, hist, n, True, spec, X_rows=X_rows,
            n_bins_non_missing=nbins,
        )  # fmt: skip
    G = float(gl.sum() - spec.g_off * n) * spec.g_scale
    H = float(hl.sum() - spec.h_off * n) * spec.h_scale
    assert hist[0, 0].tolist() == [G, H, n]
    assert hist[2, 0].tolist() == [G, H, n]
    assert hist[1, 0, 2] + hist[1, 1, 2] == n
    sg, sh, m = packed_sums(packed, rows[:0], n, False)
    assert (int(sg), int(sh), int(m)) == (int(gl.sum()), int(hl.sum()), n)


@pytest.mark.parametrize("subsample", [1.0, 0.8])
def test_training_does_not_depend_on_the_lane_chunk_or_threads(subsample, monkeypatch):
    """The chunk only bounds the lane sums: a chunk of 5 or 64 rows (every node, root,
    gathered and row-major, over many chunks) grows the same trees as the real one
    (~8,191 rows at k=255), on one thread or two."""
    import ltrboost.grower as grower_module

    X, y, q = make_ranking(n_queries=300, docs_per_query=(10, 60), n_features=9, random_state=3)[:3]
    ds = ltrboost.make_dataset(X, y, qid=q)
    params = {
        "n_estimators": 3,
        "quantized_gradients": 255,
        "subsample": subsample,
        "colsample_bytree": 0.7,
        "max_leaf_nodes": 40,
        "min_samples_leaf": 3,
    }
    real = grower_module.quant_spec

    def trees(chunk, n_threads):
        if chunk is not None:
            monkeypatch.setattr(
                grower_module, "quant_spec", lambda *a: real(*a)._replace(chunk=chunk)
            )
        try:
            b = ltrboost.train({**params, "n_threads": n_threads}, ds)
        finally:
            monkeypatch.setattr(grower_module, "quant_spec", real)
        return [t.tobytes() for t in b.trees]

    reference = trees(None, 1)
    for chunk in (5, 64):
        for n_threads in (1, 2):
            assert trees(chunk, n_threads) == reference

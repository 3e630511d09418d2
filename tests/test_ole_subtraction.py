"""The pair-histogram subtraction trick (issue 16): a split node's pair histograms are
its left child's + its right child's + those of the pairs the split sent across, and
trees grown with the trick have the splits of trees that build every histogram."""

from __future__ import annotations

import numpy as np
import pytest

import ltrboost.grower as grower_mod
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.histogram import (
    HistogramBuilder,
    LocalHistograms,
    _node_pairs_reference,
    _pair_histogram_reference,
)
from ltrboost.splitting import SplitInfo
from test_ole_bound import _fit, _grower, _lambdamart_tree_inputs


def _split(feature, bin_idx, missing_left):
    return SplitInfo(1.0, feature, bin_idx, missing_left, 0.0, 0.0, 0, 0.0, 0.0, 0, 0.0, 0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("missing_left", [False, True])
def test_split_counts_the_crossing_pairs_and_the_parts_add_up(seed, missing_left):
    """After a split the children hold the pairs wholly on their side and the crossing
    pairs are exactly those with one document on each side (counts and sums); the
    three pair histograms add up to the parent's (another order of the sums: close,
    not equal), and each is the reference of its own pairs bit for bit."""
    rng = np.random.default_rng(seed)
    n, n_features, missing_bin = 200, 6, 9
    X = rng.integers(0, 8, size=(n, n_features)).astype(np.uint8)
    X[rng.random((n, n_features)) < 0.15] = missing_bin
    X_binned = np.asfortranarray(X)
    di = rng.integers(0, n, 1500).astype(np.int32)
    dj = ((di + rng.integers(1, n, 1500)) % n).astype(np.int32)
    rho = (rng.uniform(0.0, 1.0, 1500) ** 2).astype(np.float32).astype(np.float64)
    shard = LocalHistograms(X_binned, missing_bin)
    g = rng.normal(size=n).astype(np.float32)
    feats = np.arange(n_features, dtype=np.int32)
    root = shard.start_tree(g, np.abs(g), None, feats, (di, dj, rho))
    left, right = shard.split_rows(root, _split(2, 3, missing_left))
    col = X_binned[:, 2]
    side = np.where(col == missing_bin, missing_left, col <= 3)
    across = side[di] != side[dj]
    assert shard.crossing_pair_count(root, right) == int(across.sum())
    both_left = side[di] & side[dj]
    both_right = ~(side[di] | side[dj])
    assert (left.n_pairs, right.n_pairs) == (both_left.sum(), both_right.sum())
    np.testing.assert_allclose(shard.pair_sum(left), rho[both_left].sum(), rtol=1e-12)
    np.testing.assert_allclose(shard.pair_sum(right), rho[both_right].sum(), rtol=1e-12)

    n_bins = missing_bin + 1
    parent = _pair_histogram_reference(
        X_binned, di, dj, rho, np.arange(1500), feats, missing_bin, n_bins
    )
    parts = np.zeros((3, n_features, n_bins, 3))
    shard.pair_histogram(left, feats, out=parts[0])
    shard.pair_histogram(right, feats, out=parts[1])
    shard.crossing_pair_histogram(root, right, feats, parts[2])
    np.testing.assert_allclose(parts.sum(axis=0), parent, rtol=1e-12, atol=1e-12)
    # each part is the reference of its own pairs (in the walk's order), bit for bit
    rows = shard.partition
    for k, (part_rows, cross) in enumerate(
        [
            (rows[left.start : left.stop], False),
            (rows[right.start : right.stop], False),
            (rows[root.start : root.stop], True),
        ]
    ):
        pi, pj, pr = _node_pairs_reference(
            part_rows, shard._pairs, shard._live, shard._cross, cross
        )
        ref = _pair_histogram_reference(
            X_binned, pi, pj, pr, np.arange(pi.shape[0]), feats, missing_bin, n_bins
        )
        np.testing.assert_array_equal(parts[k], ref)


def _data(n_features=12, seed=3):
    X, y, qid = make_ranking(
        n_queries=40, docs_per_query=(15, 40), n_features=n_features, random_state=seed
    )[:3]
    X[np.random.default_rng(seed).random(X.shape) < 0.05] = np.nan
    return make_dataset(X, y, qid=qid)


CONFIGS = [
    dict(objective="lambdamart"),
    dict(objective="lambdamart", l2_regularization=1.0, min_samples_leaf=20),
    dict(objective="lambdamart", truncation_level=0, growth="breadth_first", max_depth=3),
    dict(objective="lambdamart", subsample=0.7, colsample_bytree=0.6, growth="depth_first"),
    dict(objective="lambdamart", lambda_metric="err"),
    dict(objective="ranknet"),
    dict(objective="ranknet", min_sum_hessian_in_leaf=1.0, max_leaf_nodes=31),
    dict(objective="rankboost"),
    dict(objective="yetirank"),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_subtraction_grows_the_trees_of_the_full_build(config, monkeypatch):
    """The trick on and off: every tree has the same splits, thresholds and counts; leaf
    values and gains agree to rounding (the pair sums come in another order)."""
    ds = _data()
    with_trick = _fit(ds, n_estimators=5, **config)
    monkeypatch.setattr(grower_mod, "OLE_PAIR_SUBTRACTION", False)
    without = _fit(ds, n_estimators=5, **config)
    for a, b in zip(with_trick.trees, without.trees, strict=True):
        for name in ("feature_idx", "bin_threshold", "missing_go_to_left", "count", "is_leaf"):
            np.testing.assert_array_equal(a[name], b[name])
        np.testing.assert_allclose(a["value"], b["value"], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(a["gain"], b["gain"], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(
        with_trick.predict(ds.X), without.predict(ds.X), rtol=1e-9, atol=1e-9
    )


def _tree_inputs(ds):
    return _lambdamart_tree_inputs(ds, truncation_level=0)  # all pairs


def test_subtraction_builds_less_and_grows_the_same_tree(monkeypatch):
    """One tree from LambdaMART's gradients and all its pairs: the trick builds fewer
    pair histograms below the root than the full build, and the tree has the same
    splits; a child made by subtraction holds the pair histograms of its own pairs."""
    ds = _data(n_features=20)
    g, h, pairs = _tree_inputs(ds)
    X_binned, args = _grower(ds)
    made = []
    original = grower_mod.TreeGrower._split_pair_histograms

    def spy(self, node, left, right, last):
        original(self, node, left, right, last)
        for child in (left, right):
            if child.pair_hist is not None:
                made.append((child.rows[0], child.pair_hist.copy(), child.pair_feats.copy()))

    monkeypatch.setattr(grower_mod.TreeGrower, "_split_pair_histograms", spy)
    tree = grower_mod.TreeGrower(X_binned, *args)
    nodes = tree.grow(g, h, pairs=pairs).nodes
    stats = dict(tree.ole_stats)
    assert stats["deep_built"] < stats["deep_work"]
    assert len(made) > 4
    shard = tree.histograms.shards[0]
    missing_bin = args[1]
    di, dj, rho = pairs
    for rows, hist, feats in made:
        # the child's pairs by membership: both documents among the child's rows
        member = np.zeros(X_binned.shape[0], bool)
        member[shard.partition[rows.start : rows.stop]] = True
        own = np.flatnonzero(member[di] & member[dj])
        ref = _pair_histogram_reference(
            X_binned, di, dj, rho, own, feats, missing_bin, missing_bin + 1
        )
        scale = float(rho.sum())
        np.testing.assert_allclose(hist[feats], ref[feats], rtol=0, atol=1e-12 * scale)
    monkeypatch.setattr(grower_mod, "OLE_PAIR_SUBTRACTION", False)
    full = grower_mod.TreeGrower(X_binned, *args)
    full_nodes = full.grow(g, h, pairs=pairs).nodes
    assert full.ole_stats["deep_built"] == full.ole_stats["deep_work"]
    for name in ("feature_idx", "bin_threshold", "count"):
        np.testing.assert_array_equal(nodes[name], full_nodes[name])


def test_two_shards_subtract_to_the_one_shard_tree(monkeypatch):
    """A builder of two shards gives the crossing pairs' histograms as the sum of the
    shards': the tree has the one-shard tree's splits."""
    ds = _data(n_features=20)
    g, h, pairs = _tree_inputs(ds)
    X_binned, args = _grower(ds)
    missing_bin = args[1]
    cut = int(ds.query_offsets[ds.n_queries // 2])
    shards = HistogramBuilder(
        [
            LocalHistograms(np.asfortranarray(X_binned[:cut]), missing_bin),
            LocalHistograms(np.asfortranarray(X_binned[cut:]), missing_bin, row_start=cut),
        ]
    )
    tree = grower_mod.TreeGrower(None, *args, histograms=shards)
    two = tree.grow(g, h, pairs=pairs).nodes
    assert tree.ole_stats["deep_built"] < tree.ole_stats["deep_work"]
    one = grower_mod.TreeGrower(X_binned, *args).grow(g, h, pairs=pairs).nodes
    for name in ("feature_idx", "bin_threshold", "count"):
        np.testing.assert_array_equal(two[name], one[name])


def test_top_features_mode_does_not_subtract():
    """``ole_top_features`` picks other features at every node: no subtraction."""
    ds = _data(n_features=20)
    g, h, pairs = _tree_inputs(ds)
    X_binned, args = _grower(ds, ole_top_features=3)
    tree = grower_mod.TreeGrower(X_binned, *args)
    tree.grow(g, h, pairs=pairs)
    assert tree.ole_stats["deep_built"] == tree.ole_stats["deep_work"]
    assert not tree._subtract_pairs


@pytest.mark.parametrize("all_left", [False, True])
def test_a_split_that_empties_one_side_keeps_the_node_pairs(all_left):
    """A shard's part of a node can go wholly to one side (the node's other rows are in
    another shard).  The side with the rows keeps the node's pairs, sum and histograms,
    nothing crosses, and the empty side's range (which starts where a neighbouring leaf
    starts, or where its parent does) takes no pairs from the neighbour (ids of an
    earlier layout)."""
    rng = np.random.default_rng(7)
    n, n_features, missing_bin = 120, 3, 9
    X = rng.integers(0, 8, size=(n, n_features)).astype(np.uint8)
    X[:, 1] = 5  # a constant feature: every row on one side of any threshold
    X_binned = np.asfortranarray(X)
    di = rng.integers(0, n, 900).astype(np.int32)
    dj = ((di + rng.integers(1, n, 900)) % n).astype(np.int32)
    rho = rng.uniform(0.1, 1.0, 900).astype(np.float32).astype(np.float64)
    shard = LocalHistograms(X_binned, missing_bin)
    g = rng.normal(size=n).astype(np.float32)
    feats = np.arange(n_features, dtype=np.int32)
    root = shard.start_tree(g, np.abs(g), None, feats, (di, dj, rho))
    left, right = shard.split_rows(root, _split(0, 3, False))
    before = (shard.pair_sum(left), shard.pair_sum(right), right.n_pairs)
    hist_before = shard.pair_histogram(left, feats, out=np.zeros((3, 10, 3)))[0].copy()
    a, b = shard.split_rows(left, _split(1, 7 if all_left else 2, False))
    kept, empty = (a, b) if all_left else (b, a)
    assert empty.start == empty.stop
    assert (kept.start, kept.stop, kept.n_pairs) == (left.start, left.stop, left.n_pairs)
    assert empty.n_pairs == 0
    assert shard.crossing_pair_count(left, b) == 0
    assert shard.pair_sum(kept) == before[0]
    assert shard.pair_sum(empty) == 0.0
    out = np.zeros((3, 10, 3))
    shard.pair_histogram(kept, feats, out=out)
    np.testing.assert_array_equal(out, hist_before)
    # the neighbour (the root's right child) is untouched
    assert (shard.pair_sum(right), right.n_pairs) == before[1:]
    out_right = np.zeros((3, 10, 3))
    shard.pair_histogram(right, feats, out=out_right)
    pi, pj, pr = _node_pairs_reference(
        shard.partition[right.start : right.stop], shard._pairs, shard._live, shard._cross
    )
    ref = _pair_histogram_reference(X_binned, pi, pj, pr, np.arange(pi.shape[0]), feats, 9, 10)
    np.testing.assert_array_equal(out_right, ref)

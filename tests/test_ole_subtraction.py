"""The pair-histogram subtraction trick (issue 16): a split node's pair histograms are
its left child's + its right child's + those of the pairs the split sent across, and
trees grown with the trick have the splits of trees that build every histogram."""

from __future__ import annotations

import numpy as np
import pytest

import ltrboost.grower as grower_mod
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.histogram import HistogramBuilder, LocalHistograms, _pair_histogram_reference
from ltrboost.splitting import SplitInfo
from test_ole_bound import _fit, _grower, _lambdamart_tree_inputs


def _split(feature, bin_idx, missing_left):
    return SplitInfo(1.0, feature, bin_idx, missing_left, 0.0, 0.0, 0, 0.0, 0.0, 0, 0.0, 0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("missing_left", [False, True])
def test_split_leaves_crossing_pairs_after_the_children(seed, missing_left):
    """After a split the node's pair range holds [left | right | across]; the three
    pair histograms add up to the parent's (another order of the sums: close, not
    equal), and the crossing pairs are exactly those with one document on each side."""
    rng = np.random.default_rng(seed)
    n, n_features, missing_bin = 200, 6, 9
    X = rng.integers(0, 8, size=(n, n_features)).astype(np.uint8)
    X[rng.random((n, n_features)) < 0.15] = missing_bin
    X_binned = np.asfortranarray(X)
    di = rng.integers(0, n, 1500).astype(np.int32)
    dj = ((di + rng.integers(1, n, 1500)) % n).astype(np.int32)
    rho = rng.uniform(0.0, 1.0, 1500) ** 2
    shard = LocalHistograms(X_binned, missing_bin)
    g = rng.normal(size=n).astype(np.float32)
    feats = np.arange(n_features, dtype=np.int32)
    root = shard.start_tree(g, np.abs(g), None, feats, (di, dj, rho))
    left, right = shard.split_rows(root, _split(2, 3, missing_left))
    col = X_binned[:, 2]
    side = np.where(col == missing_bin, missing_left, col <= 3)
    across = side[di] != side[dj]
    crossing = shard._pair_part[right.pair_stop : root.pair_stop]
    np.testing.assert_array_equal(crossing, np.flatnonzero(across))  # in pair order
    assert shard.crossing_pair_count(root, right) == int(across.sum())

    n_bins = missing_bin + 1
    parent = _pair_histogram_reference(
        X_binned, di, dj, rho, np.arange(1500), feats, missing_bin, n_bins
    )
    parts = np.zeros((3, n_features, n_bins, 3))
    shard.pair_histogram(left, feats, out=parts[0])
    shard.pair_histogram(right, feats, out=parts[1])
    shard.crossing_pair_histogram(root, right, feats, parts[2])
    np.testing.assert_allclose(parts.sum(axis=0), parent, rtol=1e-12, atol=1e-12)
    # each part is the reference of its own pairs, bit for bit
    ref = _pair_histogram_reference(X_binned, di, dj, rho, crossing, feats, missing_bin, n_bins)
    np.testing.assert_array_equal(parts[2], ref)


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

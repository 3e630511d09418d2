"""The exact OLE split by branch-and-bound over features (seed 000, eq. 13).

A side's OLE hessian is at least ``sum h_d - 2 min(sum out_d, sum in_d)`` over its
documents (the pairs wholly in the side have both their documents there), so
``G^2 / (that + lambda)`` bounds a side's score
(:func:`ltrboost.splitting.ole_gain_bounds`).  Checked here: the pair-mass histogram
against NumPy, the bound against the exact per-feature gain on random nodes (pairs
leaving the node, negative pointwise hessians, missing values, limits), and grown trees
and models with and without the pruning, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

import ltrboost.grower as grower_mod
import ltrboost.histogram as histogram
from ltrboost.booster import BoosterParams, make_objective, train
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.grower import GrowerParams, TreeGrower
from ltrboost.histogram import (
    HistogramBuilder,
    LocalHistograms,
    _build_histogram_reference,
    _pair_histogram_reference,
    build_pair_mass_histogram,
)
from ltrboost.pair_csr import pairs_to_csr
from ltrboost.splitting import SplitParams, Splitter


def _node(seed, n=400, n_features=9, n_bins=10, node_frac=0.6, pairs_per_doc=6, root=False):
    """Random binned rows, a node (a subset of them), pairs inside the node and pairs
    with one document outside it, and hessians = pair mass + a pointwise part (which
    may be negative).  ``root``: every row in the node, no pointwise part."""
    rng = np.random.default_rng(seed)
    missing_bin = n_bins
    X = rng.integers(0, n_bins, size=(n, n_features)).astype(np.uint8)
    X[:, 2] = rng.integers(0, 2, n)  # a two-bin feature
    X[rng.random((n, n_features)) < 0.15] = missing_bin
    X[:, 5] = np.where(rng.random(n) < 0.5, missing_bin, 3)  # half missing, one bin
    X_binned = np.asfortranarray(X)
    rows = np.sort(rng.permutation(n)[: n if root else int(n * node_frac)]).astype(np.int32)
    outside = np.setdiff1d(np.arange(n), rows).astype(np.int32)
    m_in = pairs_per_doc * rows.shape[0] // 2
    di = rng.choice(rows, m_in)
    dj = rng.choice(rows, m_in)
    keep = di != dj
    di, dj = di[keep], dj[keep]
    m_out = 0 if root else rows.shape[0]
    oi = rng.choice(rows, m_out)
    oj = rng.choice(outside, m_out)
    doc_i = np.concatenate([di, oi]).astype(np.int32)
    doc_j = np.concatenate([dj, oj]).astype(np.int32)
    rho = rng.uniform(0.0, 1.0, doc_i.shape[0]) ** 2
    rho[rng.random(rho.shape[0]) < 0.1] = 0.0
    rho = rho.astype(np.float32).astype(np.float64)  # as the grower holds it
    point = np.zeros(n) if root else rng.normal(0.0, 0.3, n)
    h = (np.bincount(doc_i, rho, n) + np.bincount(doc_j, rho, n) + point).astype(np.float32)
    g = rng.normal(size=n).astype(np.float32)
    node_pairs = np.arange(di.shape[0])
    return X_binned, missing_bin, rows, g, h, (doc_i, doc_j, rho), node_pairs


def _mass_reference(X_binned, rows, pairs, node_pairs, n_bins):
    """Per feature and bin: sums of out_d (rho of the node pairs with doc_i = d) and
    in_d (doc_j = d) over the node's rows."""
    doc_i, doc_j, rho = pairs
    n = X_binned.shape[0]
    p = node_pairs.astype(np.intp)
    per_doc = np.stack([np.bincount(doc_i[p], rho[p], n), np.bincount(doc_j[p], rho[p], n)], 1)
    out = np.zeros((X_binned.shape[1], n_bins, 2))
    for f in range(X_binned.shape[1]):
        for c in range(2):
            out[f, :, c] = np.bincount(X_binned[rows, f], per_doc[rows, c], n_bins)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("row_major", [False, True])
def test_pair_mass_histogram_is_the_numpy_sum(seed, parallel, row_major, monkeypatch):
    X_binned, missing_bin, rows, _, _, pairs, node_pairs = _node(seed)
    monkeypatch.setattr(histogram, "PARALLEL_MIN_WORK", 0 if parallel else 10**12)
    n, n_features = X_binned.shape
    feats = np.array([0, 2, 3, 5, 8], dtype=np.int32)
    mass = np.zeros((n, 2))
    ordered = np.empty((n, 2))
    out = np.full((n_features, missing_bin + 1, 2), np.nan)
    X_rows = np.ascontiguousarray(X_binned) if row_major else None
    csr = pairs_to_csr(*(a[node_pairs] for a in pairs), n)  # the node's pairs
    live = np.diff(csr.ptr).astype(np.int32)
    build_pair_mass_histogram(X_binned, rows, csr, live, feats, mass, ordered, out, X_rows=X_rows)
    ref = _mass_reference(X_binned, rows, pairs, node_pairs, missing_bin + 1)
    np.testing.assert_allclose(out[feats], ref[feats], rtol=1e-12, atol=1e-12)
    if not row_major:  # (the row-major pass builds every feature)
        assert np.isnan(np.delete(out, feats, axis=0)).all()  # others untouched
    assert not mass.any()  # the scratch is handed back zeroed


def _splitter(X_binned, missing_bin, l2, min_samples_leaf, min_hess):
    nb = np.array(
        [int(X_binned[X_binned[:, f] != missing_bin, f].max(initial=0)) + 1 for f in range(9)],
        dtype=np.int32,
    )
    return Splitter(
        nb, missing_bin, SplitParams(min_samples_leaf, min_hess, l2, 0.0, criterion_code=2)
    )


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("l2", [0.0, 1.0])
@pytest.mark.parametrize("limits", [(1, 0.0), (15, 0.0), (5, 2.0)])
@pytest.mark.parametrize("root", [False, True])
def test_bound_is_at_least_the_exact_gain_of_every_feature(seed, l2, limits, root):
    """On random nodes (missing values, pairs inside and leaving the node, negative
    pointwise hessians; or a root: all pairs inside, pure pairwise hessians), each
    feature's bound is >= its exact eq. 13 gain over every threshold, and -inf exactly
    when the feature has no valid threshold."""
    X_binned, missing_bin, rows, g, h, pairs, node_pairs = _node(
        seed, node_frac=0.3 + 0.05 * (seed % 8), root=root
    )
    sp = _splitter(X_binned, missing_bin, l2, *limits)
    n_bins = missing_bin + 1
    feats = np.arange(X_binned.shape[1], dtype=np.int32)
    hist = _build_histogram_reference(X_binned, rows, g, h, n_bins)
    pair_hist = _pair_histogram_reference(X_binned, *pairs, node_pairs, feats, missing_bin, n_bins)
    pair_sum = float(np.sum(pairs[2][node_pairs]))
    sum_g, sum_h = float(hist[0, :, 0].sum()), float(hist[0, :, 1].sum())
    count = rows.shape[0]
    exact = sp.search(hist, feats, sum_g, sum_h, count, pair_hist=pair_hist, pair_sum=pair_sum)
    masses = _mass_reference(X_binned, rows, pairs, node_pairs, n_bins)
    bounds = sp.ole_bounds(hist, masses, 0.0, feats, sum_g, sum_h, count, pair_sum)
    assert (bounds >= exact).all(), (bounds, exact)
    assert ((bounds == -np.inf) == (exact == -np.inf)).all()
    assert np.isfinite(exact).any()


def test_bound_is_the_exact_gain_when_the_node_has_no_pairs():
    """No pair inside the node: no pair mass to remove from either side, so the bound
    is the exact gain itself (it is not trivially loose)."""
    X_binned, missing_bin, rows, g, h, pairs, _ = _node(3)
    sp = _splitter(X_binned, missing_bin, 0.5, 5, 0.0)
    n_bins = missing_bin + 1
    feats = np.arange(X_binned.shape[1], dtype=np.int32)
    hist = _build_histogram_reference(X_binned, rows, g, h, n_bins)
    no_pairs = np.empty(0, dtype=np.intp)
    pair_hist = np.zeros((X_binned.shape[1], n_bins, 3))
    sum_g, sum_h = float(hist[0, :, 0].sum()), float(hist[0, :, 1].sum())
    exact = sp.search(hist, feats, sum_g, sum_h, rows.shape[0], pair_hist=pair_hist)
    masses = _mass_reference(X_binned, rows, pairs, no_pairs, n_bins)
    bounds = sp.ole_bounds(hist, masses, 0.0, feats, sum_g, sum_h, rows.shape[0], 0.0)
    np.testing.assert_allclose(bounds, exact, rtol=1e-9, atol=1e-9)


def _ole_data(n_features=24, seed=5):
    X, y, qid = make_ranking(
        n_queries=40, docs_per_query=(15, 40), n_features=n_features, random_state=seed
    )[:3]
    return make_dataset(X, y, qid=qid)


def _fit(ds, **kw):
    params = dict(
        split_criterion="ole",
        n_estimators=4,
        max_leaf_nodes=12,
        min_samples_leaf=5,
        n_threads=2,
        random_state=0,
    )
    params.update(kw)
    return train(BoosterParams(**params), ds)


CONFIGS = [
    dict(objective="lambdamart"),
    dict(objective="lambdamart", l2_regularization=1.0, min_samples_leaf=20),
    dict(objective="lambdamart", truncation_level=0, growth="breadth_first", max_depth=3),
    dict(objective="lambdamart", subsample=0.7, colsample_bytree=0.6, growth="depth_first"),
    dict(objective="lambdamart", ole_top_features=12),
    dict(objective="ranknet"),
    dict(objective="ranknet", l2_regularization=0.5, min_sum_hessian_in_leaf=1.0),
    dict(objective="rankboost"),
    dict(objective="yetirank"),
]


@pytest.fixture(autouse=True)
def _no_pair_subtraction(monkeypatch):
    """These tests compare pruned and unpruned trees bit for bit: the pair-histogram
    subtraction (which sums in another order, and only at unpruned nodes) is off."""
    monkeypatch.setattr(grower_mod, "OLE_PAIR_SUBTRACTION", False)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{v}" for v in c.values()))
def test_pruned_and_unpruned_models_are_identical(config, monkeypatch, tmp_path):
    """Branch-and-bound on and off: the same model file and the same predictions, bit
    for bit, over objectives, lambda, leaf limits, depth, growth and sampling."""
    ds = _ole_data()
    monkeypatch.setattr(grower_mod, "OLE_BOUND_MIN_WORK", 0)  # small nodes too
    pruned = _fit(ds, **config)
    monkeypatch.setattr(grower_mod, "OLE_BRANCH_AND_BOUND", False)
    full = _fit(ds, **config)
    a, b = tmp_path / "pruned.json", tmp_path / "full.json"
    pruned.save_model(a)
    full.save_model(b)
    assert a.read_bytes() == b.read_bytes()
    np.testing.assert_array_equal(pruned.predict(ds.X), full.predict(ds.X))


def _lambdamart_tree_inputs(ds, n_rounds=3, **objective_params):
    """Gradients, hessians and OLE pairs of LambdaMART after a few Newton rounds."""
    booster = train(
        BoosterParams(objective="lambdamart", n_estimators=n_rounds, max_leaf_nodes=8), ds
    )
    scores = booster.predict(ds.X).astype(np.float64)
    obj = make_objective(BoosterParams(objective="lambdamart", **objective_params))
    g = np.empty(ds.n_samples, np.float32)
    h = np.empty(ds.n_samples, np.float32)
    obj.gradient_hessian(scores, ds, g, h)
    pt = obj.pair_terms(scores, ds)
    rho = pt.rho.astype(np.float32).astype(np.float64)  # as the grower holds it
    return g, h, (pt.doc_i.astype(np.int32), pt.doc_j.astype(np.int32), rho)


def _grower(ds, **kw):
    from ltrboost.binning import BinMapper

    binner = BinMapper(max_bins=32).fit(ds.X)
    X_binned = binner.transform(ds.X)
    params = GrowerParams(split_criterion="ole", max_leaf_nodes=16, min_samples_leaf=5, **kw)
    args = (binner.n_bins_non_missing_, binner.missing_bin_, binner.thresholds_matrix(), params)
    return X_binned, args


@pytest.mark.parametrize("l2", [0.0, 2.0])
def test_grower_prunes_deep_nodes_and_grows_the_same_tree(l2, monkeypatch):
    """One tree from LambdaMART's gradients and pairs: identical nodes with and without
    the pruning, and the pruning does skip pair histograms below the root (the bound
    is not vacuous), never at the root."""
    ds = _ole_data(n_features=30)
    g, h, pairs = _lambdamart_tree_inputs(ds)
    X_binned, args = _grower(ds, l2_regularization=l2)
    monkeypatch.setattr(grower_mod, "OLE_BOUND_MIN_WORK", 0)
    tree = TreeGrower(X_binned, *args)
    pruned = tree.grow(g, h, pairs=pairs).nodes
    stats = dict(tree.ole_stats)
    monkeypatch.setattr(grower_mod, "OLE_BRANCH_AND_BOUND", False)
    full = TreeGrower(X_binned, *args).grow(g, h, pairs=pairs).nodes
    np.testing.assert_array_equal(pruned, full)
    assert len(pruned) > 15
    assert 0 < stats["features_pruned"] < stats["features"]
    assert 0 < stats["deep_built"] < stats["deep_work"]
    assert stats["root_built"] <= stats["root_work"]


def test_negative_rho_switches_the_pruning_off(monkeypatch):
    """The bound needs every rho >= 0: with one negative pair, every feature's pair
    histogram is built (and the tree is the unpruned one)."""
    ds = _ole_data(n_features=30)
    g, h, (di, dj, rho) = _lambdamart_tree_inputs(ds)
    rho = rho.copy()
    rho[np.argmax(rho)] *= -1.0
    X_binned, args = _grower(ds)
    monkeypatch.setattr(grower_mod, "OLE_BOUND_MIN_WORK", 0)
    tree = TreeGrower(X_binned, *args)
    pruned = tree.grow(g, h, pairs=(di, dj, rho)).nodes
    assert tree.ole_stats["features_pruned"] == 0
    monkeypatch.setattr(grower_mod, "OLE_BRANCH_AND_BOUND", False)
    full = TreeGrower(X_binned, *args).grow(g, h, pairs=(di, dj, rho)).nodes
    np.testing.assert_array_equal(pruned, full)


def test_two_shards_prune_to_the_same_tree(monkeypatch):
    """A builder of two shards (each its own pairs) sums the pair-mass histograms
    and keeps the blocks' pair histograms: the tree is the one-shard, unpruned one."""
    ds = _ole_data(n_features=30)
    g, h, pairs = _lambdamart_tree_inputs(ds)
    X_binned, args = _grower(ds)
    missing_bin = args[1]
    cut = int(ds.query_offsets[ds.n_queries // 2])

    def two_shards():
        return HistogramBuilder(
            [
                LocalHistograms(np.asfortranarray(X_binned[:cut]), missing_bin),
                LocalHistograms(np.asfortranarray(X_binned[cut:]), missing_bin, row_start=cut),
            ]
        )

    monkeypatch.setattr(grower_mod, "OLE_BOUND_MIN_WORK", 0)
    tree = TreeGrower(None, *args, histograms=two_shards())
    pruned = tree.grow(g, h, pairs=pairs).nodes
    assert tree.ole_stats["features_pruned"] > 0
    monkeypatch.setattr(grower_mod, "OLE_BRANCH_AND_BOUND", False)
    full = TreeGrower(None, *args, histograms=two_shards()).grow(g, h, pairs=pairs).nodes
    np.testing.assert_array_equal(pruned, full)
    # the same splits as one shard (sums may differ in the last bit: another order)
    one = TreeGrower(X_binned, *args).grow(g, h, pairs=pairs).nodes
    for name in ("feature_idx", "bin_threshold", "count"):
        np.testing.assert_array_equal(pruned[name], one[name])


def test_small_nodes_build_every_pair_histogram():
    """Below OLE_BOUND_MIN_WORK pairs x features (every node of this small problem) no
    bound is computed and nothing is pruned: small nodes pay more for the bound than
    it saves."""
    ds = _ole_data(n_features=30)
    g, h, pairs = _lambdamart_tree_inputs(ds)
    X_binned, args = _grower(ds)
    tree = TreeGrower(X_binned, *args)
    tree.grow(g, h, pairs=pairs)
    stats = tree.ole_stats
    assert stats["root_work"] < grower_mod.OLE_BOUND_MIN_WORK
    assert stats["features_pruned"] == 0
    assert stats["root_built"] == stats["root_work"] > 0
    assert stats["deep_built"] == stats["deep_work"] > 0

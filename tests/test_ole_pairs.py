"""The OLE pair-histogram path (seed 000, eq. 13): the chunked kernel against a plain
NumPy reference (bit for bit, serial and parallel, across chunk boundaries), the
features an OLE node skips, the approximate ``ole_top_features`` mode, and the memory
the grower holds per pair."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ltrboost.histogram as histogram
from ltrboost.booster import BoosterParams, train
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.grower import GrowerParams, TreeGrower
from ltrboost.histogram import _pair_histogram_reference, build_pair_histogram
from ltrboost.splitting import SplitParams, features_with_split, find_node_split

SEEDS = [0, 1, 2]


def _pair_problem(seed, n=300, n_features=11, n_pairs=3000, missing_bin=12):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(n, n_features)).astype(np.uint8)
    X[:, 3] = 0  # a constant feature: every pair in one bin (the longest chains)
    X[rng.random((n, n_features)) < 0.2] = missing_bin
    X_binned = np.asfortranarray(X)
    di = rng.integers(0, n, n_pairs).astype(np.int32)
    dj = ((di + rng.integers(1, n, n_pairs)) % n).astype(np.int32)
    rho = rng.uniform(0.0, 1.0, n_pairs) ** 3  # magnitudes far apart: order matters
    # a node's pairs: a subset in no particular order (as the partition leaves them)
    idx = rng.permutation(n_pairs)[: n_pairs * 3 // 4].astype(histogram.PAIR_INDEX_DTYPE)
    return rng, X_binned, di, dj, rho, idx, missing_bin


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_pair_histogram_is_the_numpy_reference_bit_for_bit(seed, parallel, chunk, monkeypatch):
    """Every selected feature equals np.bincount in pair order (which adds each bin's
    pairs in the order given, as the kernel must): serial and parallel drivers, chunks
    of 1, 7 (not dividing the pairs) and 4096, features in blocks of 4 plus a tail."""
    _, X_binned, di, dj, rho, idx, missing_bin = _pair_problem(seed)
    monkeypatch.setattr(histogram, "PAIR_CHUNK", chunk)
    monkeypatch.setattr(histogram, "PARALLEL_MIN_WORK", 0 if parallel else 10**12)
    n_features = X_binned.shape[1]
    for feats in (np.arange(n_features), np.array([1, 3, 4, 6, 7, 8, 10])):
        feats = feats.astype(np.int32)
        out = np.full((n_features, missing_bin + 1, 3), np.nan)
        build_pair_histogram(X_binned, di, dj, rho, idx, feats, missing_bin, out)
        ref = _pair_histogram_reference(
            X_binned, di, dj, rho, idx, feats, missing_bin, missing_bin + 1
        )
        np.testing.assert_array_equal(out[feats], ref[feats])
        others = np.setdiff1d(np.arange(n_features), feats)
        assert np.isnan(out[others]).all()  # features not selected are not touched


def test_pair_histogram_of_no_pairs_is_zero():
    _, X_binned, di, dj, rho, _, missing_bin = _pair_problem(0)
    feats = np.arange(X_binned.shape[1], dtype=np.int32)
    out = np.full((feats.shape[0], missing_bin + 1, 3), np.nan)
    empty = np.zeros(0, dtype=histogram.PAIR_INDEX_DTYPE)
    build_pair_histogram(X_binned, di, dj, rho, empty, feats, missing_bin, out)
    assert not out.any()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("min_samples_leaf", [1, 5, 40])
def test_features_with_split_are_those_with_a_valid_split(seed, min_samples_leaf):
    """The features an OLE node skips have no valid split: with no hessian limit, the
    kept ones are exactly those whose best Newton gain is finite."""
    rng = np.random.default_rng(seed)
    n_features, n_bins, missing_bin = 9, 6, 6
    hist = np.zeros((n_features, n_bins + 1, 3))
    counts = rng.integers(0, 12, size=(n_features, n_bins + 1)).astype(float)
    counts[0, 1:] = 0  # one bin holds the node
    counts[1, :] = 0
    counts[1, missing_bin] = 30  # all missing
    counts[2, :-1] = 0
    counts[2, 0], counts[2, missing_bin] = 20, 10  # one value bin + missing
    counts[3, 3:] = 0
    hist[:, :, 2] = counts
    hist[:, :, 1] = counts * rng.uniform(0.5, 1.5, counts.shape)
    hist[:, :, 0] = counts * rng.normal(size=counts.shape)
    n_bins_non_missing = np.full(n_features, n_bins, dtype=np.int32)
    feats = np.arange(n_features, dtype=np.int32)
    params = SplitParams(min_samples_leaf, 0.0, 0.0, -np.inf, 0)
    for f in feats:
        count = int(counts[f].sum())
        one = np.array([f], dtype=np.int32)
        kept = features_with_split(
            hist, one, n_bins_non_missing, missing_bin, count, min_samples_leaf
        )
        info = find_node_split(
            hist, one, n_bins_non_missing, missing_bin, hist[f, :, 0].sum(),
            hist[f, :, 1].sum(), count, params,
        )  # fmt: skip
        assert (kept.shape[0] == 1) == (info is not None), f


def _ole_problem(seed, n_queries=15, docs=20):
    """Binned data, gradients and pairs of a RankNet-like problem: every pair of a
    query's documents with different labels, random rho; h = pair mass + 0.5."""
    from ltrboost.binning import BinMapper

    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, 6))
    X[rng.random(X.shape) < 0.1] = np.nan
    binner = BinMapper(max_bins=12).fit(X)
    X_binned = binner.transform(X)
    y = rng.integers(0, 3, n)
    di, dj = [], []
    for q in range(n_queries):
        for a in range(q * docs, (q + 1) * docs):
            for b in range(q * docs, (q + 1) * docs):
                if y[a] > y[b]:
                    di.append(a)
                    dj.append(b)
    di, dj = np.array(di, np.int32), np.array(dj, np.int32)
    rho = rng.uniform(0.01, 0.25, di.shape[0])
    h = (np.bincount(di, rho, n) + np.bincount(dj, rho, n) + 0.5).astype(np.float32)
    g = rng.normal(size=n).astype(np.float32)
    return binner, X_binned, g, h, (di, dj, rho)


def _lambdamart(n_estimators=4, **kw):
    X, y, qid = make_ranking(n_queries=30, docs_per_query=(10, 30), n_features=8, random_state=3)[
        :3
    ]
    ds = make_dataset(X, y, qid=qid)
    params = dict(
        objective="lambdamart",
        split_criterion="ole",
        n_estimators=n_estimators,
        max_leaf_nodes=8,
        min_samples_leaf=5,
        n_threads=2,
        random_state=0,
    )
    params.update(kw)
    return ds, train(BoosterParams(**params), ds)


def test_top_features_at_least_all_features_is_exact_ole(tmp_path):
    """k >= the number of features keeps every feature with a valid split: the model is
    exact OLE's, bit for bit, and its file does not even name the parameter."""
    ds, exact = _lambdamart()
    _, topk = _lambdamart(ole_top_features=8)
    a, b = tmp_path / "exact.json", tmp_path / "topk.json"
    exact.save_model(a)
    topk.save_model(b)
    assert "ole_top_features" not in a.read_text()
    saved = json.loads(b.read_text())
    assert saved["params"]["ole_top_features"] == 8
    np.testing.assert_array_equal(exact.predict(ds.X), topk.predict(ds.X))
    assert a.read_text() == b.read_text().replace(',"ole_top_features":8', "")


def test_top_features_model_round_trips(tmp_path):
    from ltrboost.model import load_model

    ds, b = _lambdamart(ole_top_features=2)
    path = tmp_path / "m.json"
    b.save_model(path)
    loaded = load_model(path)
    assert loaded.params["ole_top_features"] == 2
    np.testing.assert_array_equal(loaded.predict(ds.X), b.predict(ds.X))


@pytest.mark.parametrize("value", [0, -1, 1.5])
def test_top_features_must_be_a_positive_integer(value):
    with pytest.raises(ValueError, match="ole_top_features"):
        BoosterParams(ole_top_features=value).validate()


@pytest.mark.parametrize("k", [1, 2, 3])
def test_top_features_split_is_exact_ole_over_the_best_newton_features(k):
    """The root split of ole_top_features=k: exact eq. 13 restricted to the k features
    of best Newton gain (ties to the lower index), from the same histograms."""
    binner, X_binned, g, h, pairs = _ole_problem(0)
    common = dict(split_criterion="ole", max_leaf_nodes=2, min_samples_leaf=3)
    grower = TreeGrower(
        X_binned,
        binner.n_bins_non_missing_,
        binner.missing_bin_,
        binner.thresholds_matrix(),
        GrowerParams(ole_top_features=k, **common),
    )
    tree = grower.grow(g, h, pairs=pairs).nodes
    # the reference: Newton gains of every feature at the root, then OLE over the top k
    rows = np.arange(X_binned.shape[0])
    hist = histogram._build_histogram_reference(X_binned, rows, g, h, binner.missing_bin_ + 1)
    feats = np.arange(X_binned.shape[1], dtype=np.int32)
    sp = grower.splitter
    newton = sp.newton_gains(hist, feats, float(g.sum()), float(h.sum()), rows.shape[0])
    top = np.sort(np.argsort(-newton, kind="stable")[:k]).astype(np.int32)
    di, dj, rho = pairs
    all_pairs = np.arange(di.shape[0], dtype=histogram.PAIR_INDEX_DTYPE)
    pair_hist = _pair_histogram_reference(
        X_binned, di, dj, rho, all_pairs, top, binner.missing_bin_, binner.missing_bin_ + 1
    )
    info = sp.find_split(
        hist, top, float(g.sum()), float(h.sum()), rows.shape[0],
        pair_hist=pair_hist, pair_sum=float(np.sum(rho)),
    )  # fmt: skip
    assert info is not None
    assert (tree[0]["feature_idx"], tree[0]["bin_threshold"]) == (info.feature_idx, info.bin_idx)
    assert tree[0]["feature_idx"] in top


def test_grower_holds_eight_bytes_a_pair():
    """The pair partition and its scratch are int32 (8 bytes a pair, less than a row of
    binned data whenever pairs per document < n_features / 8) and no per-node copy of
    the pairs is made: the kernel reads them a chunk at a time."""
    rng = np.random.default_rng(0)
    X_binned = np.asfortranarray(rng.integers(0, 5, size=(100, 8)).astype(np.uint8))
    shard = histogram.LocalHistograms(X_binned, missing_bin=5)
    di = np.arange(0, 99, dtype=np.int32)
    pairs = (di, di + 1, np.ones(99))
    g = np.ones(100, np.float32)
    shard.start_tree(g, g, None, np.arange(8, dtype=np.int32), pairs)
    held = shard._pair_part.nbytes + shard._pair_buf.nbytes
    assert held == 8 * 99
    assert held <= X_binned.nbytes


def test_grown_tree_lets_go_of_its_pairs():
    """The round's pairs (16 bytes each, held by the caller) and the partition (8) are
    dropped once the tree is grown, so the next round's pairs never coexist with them."""
    binner, X_binned, g, h, pairs = _ole_problem(1)
    grower = TreeGrower(
        X_binned,
        binner.n_bins_non_missing_,
        binner.missing_bin_,
        binner.thresholds_matrix(),
        GrowerParams(split_criterion="ole", max_leaf_nodes=4, min_samples_leaf=3),
    )
    first = grower.grow(g, h, pairs=pairs).nodes
    shard = grower.histograms.shards[0]
    assert shard._pairs is None
    assert shard._pair_part is None
    assert shard._pair_buf is None
    again = grower.grow(g, h, pairs=pairs).nodes  # a reused grower starts afresh
    np.testing.assert_array_equal(first, again)

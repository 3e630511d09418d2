"""Tests for ltrboost.tree: raw, binned and reference prediction agree exactly, and a
trained booster predicts on raw features exactly the scores it kept in training."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import ltrboost.booster as booster_mod
from ltrboost._config import NODE_DTYPE
from ltrboost.binning import BinMapper
from ltrboost.booster import BoosterParams, train
from ltrboost.dataset import make_dataset
from ltrboost.grower import GrowerParams, TreeGrower
from ltrboost.tree import (
    _add_leaf_values,
    _predict_raw_reference,
    add_leaf_values,
    pack_trees,
    predict_binned_tree,
    predict_raw,
)

SEEDS = [0, 1, 2]

# _test_ls and _test_ranknet (tests/conftest.py) are registered while this module runs
pytestmark = pytest.mark.usefixtures("test_objectives_registered")


# ====================================================================== helpers


def _data(seed, n=600, n_features=5, nan_frac=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[:, 1] = np.round(X[:, 1] * 3)  # ties
    X[:, 2] *= 1e300  # extreme magnitudes
    X[rng.random(X.shape) < nan_frac] = np.nan
    X[:, 4] = rng.normal(size=n)  # a feature never missing in training
    y = np.clip(np.round(np.nan_to_num(X[:, 0]) + rng.normal(size=n) * 0.5 + 1.5), 0, 4)
    return rng, X, y


def _random_trees(seed, X, n_trees=4, max_bins=20):
    """Trees grown by the grower on random gradients (shapes vary per tree)."""
    rng = np.random.default_rng(seed)
    binner = BinMapper(max_bins=max_bins).fit(X)
    X_binned = binner.transform(X)
    trees = []
    for t in range(n_trees):
        grower = TreeGrower(
            X_binned,
            binner.n_bins_non_missing_,
            binner.missing_bin_,
            binner.thresholds_matrix(),
            GrowerParams(
                max_leaf_nodes=int(rng.integers(2, 24)),
                min_samples_leaf=int(rng.integers(1, 20)),
                growth=("best_first", "breadth_first", "depth_first")[t % 3],
            ),
        )
        g = rng.normal(size=X.shape[0]).astype(np.float32)
        h = rng.uniform(0.5, 1.5, size=X.shape[0]).astype(np.float32)
        nodes = grower.grow(g, h).nodes
        nodes["value"] *= rng.uniform(0.01, 1.0)
        trees.append(nodes)
    return binner, X_binned, trees


def _binned_sum(trees, outputs, X_binned, missing_bin, n_outputs, init=0.0):
    out = np.zeros((n_outputs, X_binned.shape[0]))
    out[:] = init
    for nodes, o in zip(trees, outputs, strict=True):
        predict_binned_tree(nodes, X_binned, missing_bin, out[o])
    return out


# ================================================================== prediction kernels


def test_hand_tree():
    nodes = np.zeros(5, dtype=NODE_DTYPE)
    # 0: x0 <= 1.5 (NaN left) -> 1 else 2 ; 2: x1 <= -3 (NaN right) -> 3 else 4
    nodes[0] = (0.0, 0, 1.5, 3, 1, 0, 1, 2, 1.0, 10, 10.0, 0)
    nodes[1] = (-1.0, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 4, 4.0, 1)
    nodes[2] = (0.0, 1, -3.0, 0, 0, 0, 3, 4, 1.0, 6, 6.0, 1)
    nodes[3] = (2.0, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 3, 3.0, 2)
    nodes[4] = (5.0, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 3, 3.0, 2)
    X = np.array([[1.5, 0.0], [np.nan, 0.0], [2.0, -3.0], [2.0, np.nan], [np.inf, -np.inf]])
    expected = np.array([[-1.0, -1.0, 2.0, 5.0, 2.0]])
    out = np.zeros((1, 5))
    predict_raw(pack_trees([nodes], [0]), X, out)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(_predict_raw_reference([nodes], [0], X, 1), expected)
    # the same tree on bins: x0 bins (<=3 left, 15 missing), x1 bins (<=0 left)
    X_binned = np.array([[3, 1], [15, 1], [4, 0], [4, 15], [9, 0]], dtype=np.uint8)
    out = np.zeros(5)
    predict_binned_tree(nodes, X_binned, 15, out)
    np.testing.assert_array_equal(out, expected[0])


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_raw_reference_and_binned_agree_on_training_data(seed, dtype):
    _, X, _ = _data(seed)
    if dtype == np.float32:
        X = np.where(np.abs(X) > 1e30, np.sign(X) * 1e30, X).astype(np.float32)
    binner, X_binned, trees = _random_trees(seed, X)
    outputs = [0, 1, 1, 0]
    ens = pack_trees(trees, outputs)
    raw = np.zeros((2, X.shape[0]))
    predict_raw(ens, X, raw)
    ref = _predict_raw_reference(trees, outputs, X, 2)
    binned = _binned_sum(trees, outputs, X_binned, binner.missing_bin_, 2)
    np.testing.assert_array_equal(raw, ref)
    np.testing.assert_array_equal(raw, binned)
    assert np.isnan(X).any()


@pytest.mark.parametrize("seed", SEEDS)
def test_raw_and_binned_agree_on_new_data(seed):
    """Any value -- outside the training range, exactly on a threshold, NaN in a
    feature that had none in training -- goes the same way raw and binned."""
    rng, X, _ = _data(seed)
    binner, _, trees = _random_trees(seed, X)
    X_new = _data(seed + 100, n=400)[1] * 1.7
    X_new[:50, 4] = np.nan
    # values exactly on thresholds and their neighbours
    thr = binner.thresholds_matrix()
    for f in range(X.shape[1]):
        t = thr[f][np.isfinite(thr[f])]
        k = rng.integers(0, t.shape[0], 60)
        X_new[50:110, f] = t[k]
        X_new[110:170, f] = np.nextafter(t[k], np.inf)
        X_new[170:230, f] = np.nextafter(t[k], -np.inf)
    X_binned_new = binner.transform(X_new)
    outputs = [0] * len(trees)
    raw = np.zeros((1, X_new.shape[0]))
    predict_raw(pack_trees(trees, outputs), X_new, raw)
    np.testing.assert_array_equal(
        raw, _binned_sum(trees, outputs, X_binned_new, binner.missing_bin_, 1)
    )
    np.testing.assert_array_equal(raw, _predict_raw_reference(trees, outputs, X_new, 1))


def test_empty_ensemble_and_empty_rows():
    out = np.full((1, 3), 2.5)
    predict_raw(pack_trees([], []), np.zeros((3, 2)), out)
    np.testing.assert_array_equal(out, 2.5)
    _, X, _ = _data(0, n=100)
    _, _, trees = _random_trees(0, X, n_trees=1)
    out = np.zeros((1, 0))
    predict_raw(pack_trees(trees, [0]), X[:0], out)


def test_pack_trees_offsets():
    _, X, _ = _data(0, n=200)
    _, _, trees = _random_trees(0, X, n_trees=3)
    ens = pack_trees(trees, [0, 0, 0])
    sizes = [t.shape[0] for t in trees]
    np.testing.assert_array_equal(ens.tree_offsets, np.concatenate([[0], np.cumsum(sizes)]))
    np.testing.assert_array_equal(ens.value, np.concatenate([t["value"] for t in trees]))
    # child indices stay local to their tree
    np.testing.assert_array_equal(ens.left, np.concatenate([t["left"] for t in trees]))


@pytest.mark.parametrize("seed", SEEDS)
def test_prediction_independent_of_thread_count(seed):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs NUMBA_NUM_THREADS >= 2")
    from ltrboost._numba import threads

    _, X, _ = _data(seed, n=3000)
    binner, X_binned, trees = _random_trees(seed, X)
    res = []
    for n in (1, 2):
        with threads(n):
            raw = np.zeros((1, X.shape[0]))
            predict_raw(pack_trees(trees, [0] * 4), X, raw)
            res.append((raw, _binned_sum(trees, [0] * 4, X_binned, binner.missing_bin_, 1)))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_array_equal(res[0][1], res[1][1])


@pytest.mark.parametrize("seed", SEEDS)
def test_add_leaf_values_matches_binned_prediction(seed):
    _, X, _ = _data(seed)
    binner = BinMapper(max_bins=20).fit(X)
    X_binned = binner.transform(X)
    grower = TreeGrower(
        X_binned,
        binner.n_bins_non_missing_,
        binner.missing_bin_,
        binner.thresholds_matrix(),
        GrowerParams(max_leaf_nodes=12, min_samples_leaf=3),
    )
    rng = np.random.default_rng(seed)
    grown = grower.grow(
        rng.normal(size=X.shape[0]).astype(np.float32),
        np.ones(X.shape[0], dtype=np.float32),
    )
    starts = np.array([s for s, _, _ in grown.leaf_ranges], dtype=np.int64)
    stops = np.array([e for _, e, _ in grown.leaf_ranges], dtype=np.int64)
    vals = np.array([grown.nodes["value"][k] for _, _, k in grown.leaf_ranges])
    base = rng.normal(size=X.shape[0])
    via_partition = base.copy()
    _add_leaf_values(grown.partition, starts, stops, vals, via_partition)
    via_tree = base.copy()
    predict_binned_tree(grown.nodes, X_binned, binner.missing_bin_, via_tree)
    np.testing.assert_array_equal(via_partition, via_tree)


# ====================================================================== booster


def _train_recording(monkeypatch, params, ds):
    """Train, and return the booster with the incremental training scores it kept."""
    seen = {}
    original = booster_mod._apply_tree_train

    def spy(grown, values, out, *args, **kwargs):
        original(grown, values, out, *args, **kwargs)
        seen["raw"] = out  # a view of the training raw scores, updated in place

    with monkeypatch.context() as m:
        m.setattr(booster_mod, "_apply_tree_train", spy)
        booster = train(params, ds)
    return booster, seen["raw"].copy()


BOOSTER_GRID = [
    dict(objective="_test_ls"),
    dict(objective="_test_ls", subsample=0.6, colsample_bytree=0.6, growth="depth_first"),
    dict(objective="_test_ls", max_depth=2, l2_regularization=1.0, split_criterion="se"),
    dict(objective="_test_ranknet", split_criterion="ole", subsample=0.7),
    dict(objective="_test_ranknet", split_criterion="newton", max_bins=7),
]


def _ids(kw):
    return "-".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kw", BOOSTER_GRID, ids=_ids)
def test_booster_predicts_its_training_scores_bitwise(monkeypatch, kw, dtype):
    _, X, y = _data(3, n=400)
    if dtype == np.float32:
        X = np.where(np.abs(X) > 1e30, np.sign(X) * 1e30, X)
    X = X.astype(dtype)
    ds = make_dataset(X, y, group=[20] * 20)
    params = (
        dict(
            n_estimators=8,
            learning_rate=0.3,
            max_leaf_nodes=8,
            min_samples_leaf=3,
            max_bins=31,
            random_state=5,
            n_threads=2,
        )
        | kw
    )
    booster, train_scores = _train_recording(monkeypatch, params, ds)
    assert len(booster.trees) == 8

    pred = booster.predict_raw(X)[0]
    np.testing.assert_array_equal(pred, train_scores)  # bitwise

    # the same sum, tree by tree, on the training bins
    binner = BinMapper(
        params["max_bins"],
        random_state=params["random_state"],
        min_samples_bin=BoosterParams().min_samples_bin,
    )
    X_binned = binner.fit_transform(ds.X)
    manual = _binned_sum(
        booster.trees,
        booster.tree_outputs,
        X_binned,
        binner.missing_bin_,
        1,
        init=booster.init_score[0],
    )
    np.testing.assert_array_equal(manual[0], train_scores)
    assert booster.init_score[0] == 0.0  # so the reference (no init) sums the same
    np.testing.assert_array_equal(
        _predict_raw_reference(booster.trees, booster.tree_outputs, X, 1)[0],
        train_scores,
    )
    # prefixes of the ensemble
    part = booster.predict_raw(X, iteration=3)[0]
    np.testing.assert_array_equal(
        part,
        _binned_sum(
            booster.trees[:3],
            booster.tree_outputs[:3],
            X_binned,
            binner.missing_bin_,
            1,
            init=booster.init_score[0],
        )[0],
    )
    np.testing.assert_array_equal(booster.predict_raw(X, iteration=0)[0], booster.init_score[0])
    # and the loss went down: the trees fit something
    assert not np.array_equal(pred, np.full_like(pred, booster.init_score[0]))


@pytest.mark.parametrize("objective", ["_test_ls", "_test_ranknet"])
def test_bagging_and_colsample_reproducible_and_thread_independent(objective):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs NUMBA_NUM_THREADS >= 2")
    _, X, y = _data(4, n=500)
    ds = make_dataset(X, y, group=[25] * 20)
    base = dict(
        objective=objective,
        n_estimators=6,
        max_leaf_nodes=10,
        min_samples_leaf=3,
        max_bins=63,
        subsample=0.5,
        colsample_bytree=0.6,
        split_criterion="ole" if objective == "_test_ranknet" else "newton",
    )

    def fit(**kw):
        return train(base | kw, ds)

    a = fit(random_state=11, n_threads=1)
    b = fit(random_state=11, n_threads=2)
    c = fit(random_state=11, n_threads=2)
    d = fit(random_state=12, n_threads=2)
    for other in (b, c):
        assert len(other.trees) == len(a.trees)
        for ta, tb in zip(a.trees, other.trees, strict=True):
            np.testing.assert_array_equal(ta, tb)
    np.testing.assert_array_equal(a.predict_raw(X), b.predict_raw(X, n_threads=1))
    assert any(
        ta.shape != td.shape or not np.array_equal(ta, td)
        for ta, td in zip(a.trees, d.trees, strict=True)
    )
    # colsample: some tree does not use every feature it could
    used = [set(t["feature_idx"][t["is_leaf"] == 0].tolist()) for t in a.trees]
    assert all(len(u) <= 3 for u in used)


@pytest.mark.parametrize("subsample", [1.0, 0.5])
def test_booster_passes_ole_pairs_of_the_bag_only(monkeypatch, subsample, all_label_pairs):
    """Under "ole" the grower gets exactly the objective's pairs whose two documents are
    both in the round's bag, and the first tree's leaves are -G / (sum h - 2 sum rho)
    over the bag rows and the pairs inside each leaf (learning_rate = 1)."""
    calls = []

    class RecordingGrower(booster_mod.TreeGrower):
        def grow(
            self,
            gradients,
            hessians,
            sample_indices=None,
            feature_indices=None,
            pairs=None,
        ):
            calls.append(
                (
                    gradients.copy(),
                    hessians.copy(),
                    sample_indices,
                    pairs,
                    self.X_binned,
                )
            )
            return super().grow(gradients, hessians, sample_indices, feature_indices, pairs)

    monkeypatch.setattr(booster_mod, "TreeGrower", RecordingGrower)
    _, X, y = _data(6, n=300)
    ds = make_dataset(X, y, group=[15] * 20)
    booster = train(
        dict(
            objective="_test_ranknet",
            split_criterion="ole",
            n_estimators=1,
            learning_rate=1.0,
            max_leaf_nodes=6,
            min_samples_leaf=5,
            max_bins=31,
            subsample=subsample,
            random_state=2,
        ),
        ds,
    )
    ((g, h, bag, csr, X_binned),) = calls
    pairs = csr.to_lists()
    bag = np.arange(ds.n_samples) if bag is None else bag
    if subsample < 1.0:
        assert bag.shape[0] < ds.n_samples
    in_bag = np.zeros(ds.n_samples, dtype=bool)
    in_bag[bag] = True
    di, dj, _ = all_label_pairs(ds)
    keep = in_bag[di] & in_bag[dj]
    expected = sorted(zip(di[keep].tolist(), dj[keep].tolist(), strict=True))
    assert sorted(zip(pairs[0].tolist(), pairs[1].tolist(), strict=True)) == expected

    nodes = booster.trees[0]
    rho = pairs[2]
    leaf_of = np.empty(ds.n_samples, dtype=np.int64)
    for r in range(ds.n_samples):
        k = 0
        while not nodes[k]["is_leaf"]:
            b = X_binned[r, nodes[k]["feature_idx"]]
            left = (
                bool(nodes[k]["missing_go_to_left"]) if b == 31 else b <= nodes[k]["bin_threshold"]
            )
            k = nodes[k]["left"] if left else nodes[k]["right"]
        leaf_of[r] = k
    for k in np.flatnonzero(nodes["is_leaf"]):
        rows = bag[leaf_of[bag] == k]
        inside = (leaf_of[pairs[0]] == k) & (leaf_of[pairs[1]] == k)
        H_c = np.sum(h[rows], dtype=np.float64) - 2.0 * rho[inside].sum()
        G = np.sum(g[rows], dtype=np.float64)
        assert nodes[k]["value"] == pytest.approx(-G / H_c, rel=1e-7, abs=1e-12)


# ====================================================================== kernel paths


def test_serial_and_parallel_prediction_paths_identical(monkeypatch, force_kernel_path):
    _, X, _ = _data(7, n=1000)
    binner, X_binned, trees = _random_trees(7, X)
    grower = TreeGrower(
        X_binned,
        binner.n_bins_non_missing_,
        binner.missing_bin_,
        binner.thresholds_matrix(),
        GrowerParams(max_leaf_nodes=9, min_samples_leaf=3),
    )
    grown = grower.grow(
        np.linspace(-1, 1, X.shape[0]).astype(np.float32),
        np.ones(X.shape[0], dtype=np.float32),
    )
    starts = np.array([s for s, _, _ in grown.leaf_ranges], dtype=np.int64)
    stops = np.array([e for _, e, _ in grown.leaf_ranges], dtype=np.int64)
    vals = np.array([grown.nodes["value"][k] for _, _, k in grown.leaf_ranges])
    out = {}
    for path in ("serial", "parallel"):
        with monkeypatch.context() as m:
            force_kernel_path(m, path)
            binned = _binned_sum(trees, [0] * 4, X_binned, binner.missing_bin_, 1)
            leafwise = np.zeros(X.shape[0])
            add_leaf_values(grown.partition, starts, stops, vals, leafwise)
            out[path] = (binned, leafwise)
    np.testing.assert_array_equal(out["serial"][0], out["parallel"][0])
    np.testing.assert_array_equal(out["serial"][1], out["parallel"][1])
    raw = np.zeros((1, X.shape[0]))
    predict_raw(pack_trees(trees, [0] * 4), X, raw)
    np.testing.assert_array_equal(out["serial"][0], raw)
    via_tree = np.zeros(X.shape[0])
    predict_binned_tree(grown.nodes, X_binned, binner.missing_bin_, via_tree)
    np.testing.assert_array_equal(out["parallel"][1], via_tree)


def test_large_data_binned_prediction_above_serial_threshold():
    """More rows than SERIAL_PREDICT_ROWS: the real parallel path, raw == binned."""
    import ltrboost.tree

    rng = np.random.default_rng(8)
    n = ltrboost.tree.SERIAL_PREDICT_ROWS + 4097
    X = rng.normal(size=(n, 3))
    X[rng.random(X.shape) < 0.05] = np.nan
    binner, X_binned, trees = _random_trees(8, X, n_trees=3)
    raw = np.zeros((1, n))
    predict_raw(pack_trees(trees, [0] * 3), X, raw)
    np.testing.assert_array_equal(
        raw, _binned_sum(trees, [0] * 3, X_binned, binner.missing_bin_, 1)
    )


@pytest.mark.parametrize(
    "kw",
    [
        dict(objective="_test_ls", subsample=0.7, colsample_bytree=0.6),
        dict(objective="_test_ranknet", split_criterion="ole"),
    ],
    ids=_ids,
)
def test_booster_identical_on_serial_and_parallel_paths(monkeypatch, force_kernel_path, kw):
    _, X, y = _data(9, n=300)
    ds = make_dataset(X, y, group=[15] * 20)
    params = (
        dict(
            n_estimators=4,
            max_leaf_nodes=6,
            min_samples_leaf=3,
            max_bins=31,
            random_state=1,
            n_threads=2,
        )
        | kw
    )
    res = {}
    for path in ("serial", "parallel"):
        with monkeypatch.context() as m:
            force_kernel_path(m, path)
            booster, train_scores = _train_recording(m, params, ds)
            res[path] = booster
            np.testing.assert_array_equal(booster.predict_raw(X)[0], train_scores)
    for ta, tb in zip(res["serial"].trees, res["parallel"].trees, strict=True):
        np.testing.assert_array_equal(ta, tb)

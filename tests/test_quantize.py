"""Quantised gradients (``quantized_gradients=k``, :mod:`ltrboost.quantize`).

The kernels against plain NumPy: the rounding (levels, unbiasedness, independence of
threads and shards) and the integer histograms (root, gathered node rows, row-major
nodes, chunked lane sums).  The grower: splits from the quantised sums, leaf values
and hessian sums from the exact gradients.  Training: seeded and thread-independent,
recorded in the model file only when set, refused where it cannot hold.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import ltrboost
from ltrboost._numba import threads
from ltrboost.binning import BinMapper
from ltrboost.datasets import make_ranking
from ltrboost.grower import GrowerParams, TreeGrower
from ltrboost.histogram import HistogramBuilder, LocalHistograms, build_quantized_histogram
from ltrboost.params import ParameterError
from ltrboost.quantize import LANE_MASK, float_sums, packed_sums, quant_spec, quantize


def _unpack(packed, spec):
    g = (packed >> 42) - spec.g_off
    h = ((packed >> 21) & LANE_MASK) - spec.h_off
    return g, h, packed & LANE_MASK


def _gh(n, seed=0, negative_h=False):
    rng = np.random.default_rng(seed)
    g = rng.normal(size=n).astype(np.float32)
    h = rng.random(n).astype(np.float32)
    if negative_h:
        h -= 0.3
    return g, h


@pytest.mark.parametrize("bins", [2, 3, 4, 16, 255])
@pytest.mark.parametrize("negative_h", [False, True])
def test_levels_are_a_floor_or_a_ceiling_and_unbiased(bins, negative_h):
    n = 200_000
    g, h = _gh(n, 1, negative_h)
    spec = quant_spec(bins, 12345, g, h)
    out = np.empty(n, dtype=np.int64)
    quantize(g, h, spec, 0, out)
    gq, hq, cnt = _unpack(out, spec)
    assert (cnt == 1).all()
    for q, x, inv in ((gq, g, spec.g_inv), (hq, h, spec.h_inv)):
        scaled = x.astype(np.float64) * inv
        assert ((q == np.floor(scaled)) | (q == np.floor(scaled) + 1)).all()
        # stochastic rounding is unbiased: E[q] = x * inv (fractional part's sd <= 1/2)
        assert abs(np.mean(q - scaled)) < 5 * 0.5 / np.sqrt(n)
    assert gq.min() >= -spec.g_off
    assert gq.max() <= spec.g_off
    assert hq.min() >= -spec.h_off
    assert hq.max() <= spec.h_hi
    if not negative_h:
        assert hq.min() >= 0


def test_rounding_is_the_same_whatever_the_threads_or_shards():
    n = 300_000
    g, h = _gh(n, 2)
    spec = quant_spec(4, 7, g, h)
    outs = []
    for t in (1, 2):
        with threads(t):
            out = np.empty(n, dtype=np.int64)
            quantize(g, h, spec, 0, out)
            outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    cut = 123_457
    a = np.empty(cut, dtype=np.int64)
    b = np.empty(n - cut, dtype=np.int64)
    quantize(g[:cut], h[:cut], spec, 0, a)
    quantize(g[cut:], h[cut:], spec, cut, b)  # global rows seed the rounding
    np.testing.assert_array_equal(np.concatenate([a, b]), outs[0])
    other = np.empty(n, dtype=np.int64)
    quantize(g, h, spec._replace(seed=8), 0, other)
    assert (other != outs[0]).mean() > 0.3


def test_constant_hessians_are_exact():
    n = 5_000
    g, _ = _gh(n, 3)
    h = np.ones(n, dtype=np.float32)
    spec = quant_spec(4, 0, g, h)
    out = np.empty(n, dtype=np.int64)
    quantize(g, h, spec, 0, out)
    _, hq, _ = _unpack(out, spec)
    assert (hq * spec.h_scale == 1.0).all()


def test_nan_gradients_do_not_break_the_rounding():
    g, h = _gh(1000, 4)
    g[5] = np.nan
    h[7] = np.inf
    spec = quant_spec(4, 0, g, h)
    assert np.isfinite([spec.g_scale, spec.h_scale]).all()
    out = np.empty(1000, dtype=np.int64)
    quantize(g, h, spec, 0, out)
    gq, hq, _ = _unpack(out, spec)
    assert gq.min() >= -spec.g_off
    assert gq.max() <= spec.g_off
    assert hq.min() >= -spec.h_off
    assert hq.max() <= spec.h_hi


def _reference(X_binned, rows, packed_rows, features, n_bins, spec, nbins):
    """Plain NumPy: the float histogram of the unpacked levels of ``rows``."""
    gq, hq, _ = _unpack(packed_rows, spec)
    out = np.zeros((X_binned.shape[1], n_bins, 3))
    for f in features:
        b = X_binned[rows, f].astype(np.int64)
        G = np.zeros(n_bins, dtype=np.int64)
        H = np.zeros(n_bins, dtype=np.int64)
        C = np.zeros(n_bins, dtype=np.int64)
        np.add.at(G, b, gq)
        np.add.at(H, b, hq)
        np.add.at(C, b, 1)
        own = np.zeros(n_bins, dtype=bool)
        own[: nbins[f]] = True
        own[-1] = True
        out[f, own, 0] = G[own] * spec.g_scale
        out[f, own, 1] = H[own] * spec.h_scale
        out[f, own, 2] = C[own]
    return out


@pytest.mark.parametrize("chunk", [None, 7, 1000])
@pytest.mark.parametrize("where", ["root", "node", "rows"])
@pytest.mark.parametrize("negative_h", [False, True])
def test_histograms_match_numpy(chunk, where, negative_h):
    rng = np.random.default_rng(5)
    n, n_features, n_bins = 20_000, 7, 33
    X_binned = np.asfortranarray(rng.integers(0, n_bins, size=(n, n_features), dtype=np.uint8))
    nbins = np.full(n_features, n_bins - 1, dtype=np.int32)
    nbins[2] = 4  # a feature with few values: only its own bins are written
    X_binned[:, 2] = np.where(X_binned[:, 2] < 4, X_binned[:, 2], n_bins - 1)
    g, h = _gh(n, 6, negative_h)
    spec = quant_spec(4, 99, g, h)
    if chunk is not None:
        spec = spec._replace(chunk=chunk)
    packed = np.empty(n, dtype=np.int64)
    quantize(g, h, spec, 0, packed)
    features = np.array([0, 2, 3, 6, 5], dtype=np.int32)  # an odd number, out of order
    hist = np.full((n_features, n_bins, 3), -7.0)  # bins not written stay as they were
    if where == "root":
        rows = np.arange(n, dtype=np.int32)
        build_quantized_histogram(
            X_binned, np.empty(0, np.int32), packed, features, hist, n, False, spec,
            n_bins_non_missing=nbins,
        )  # fmt: skip
    else:
        rows = np.sort(rng.choice(n, size=3_000, replace=False)).astype(np.int32)
        X_rows = np.ascontiguousarray(X_binned) if where == "rows" else None
        build_quantized_histogram(
            X_binned, rows, packed[rows], features, hist, rows.shape[0], True, spec,
            X_rows=X_rows, n_bins_non_missing=nbins,
        )  # fmt: skip
        if where == "rows":  # the row-major pass builds every feature
            features = np.arange(n_features, dtype=np.int32)
    ref = _reference(X_binned, rows, packed[rows], features, n_bins, spec, nbins)
    for f in range(n_features):
        if f in features:
            own = np.r_[np.arange(nbins[f]), n_bins - 1]
            np.testing.assert_array_equal(hist[f, own], ref[f, own])
            others = np.setdiff1d(np.arange(n_bins), own)
            assert (hist[f, others] == -7.0).all()
        else:
            assert (hist[f] == -7.0).all()
    sg, sh, m = packed_sums(packed[rows], np.empty(0, np.int32), rows.shape[0], False)
    G, H = float_sums(spec, int(sg), int(sh), int(m))
    gq, hq, _ = _unpack(packed[rows], spec)
    assert G == float(gq.sum()) * spec.g_scale
    assert H == float(hq.sum()) * spec.h_scale


def _problem(seed, n_queries=60, n_features=6):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 40, size=n_queries)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    n = int(offsets[-1])
    X = rng.normal(size=(n, n_features))
    X[rng.random(size=X.shape) < 0.1] = np.nan
    binner = BinMapper(max_bins=32, random_state=0).fit(X)
    g, h = _gh(n, seed + 10)
    return rng, offsets, binner, binner.transform(X), g, h


def _grower(binner, X_binned, histograms=None, **kw):
    return TreeGrower(
        None if histograms is not None else X_binned,
        binner.n_bins_non_missing_,
        binner.missing_bin_,
        binner.thresholds_matrix(),
        GrowerParams(**kw),
        n_threads=2,
        histograms=histograms,
    )


@pytest.mark.parametrize("bag", [False, True])
def test_leaves_take_the_exact_newton_step_of_their_rows(bag):
    rng, _offsets, binner, X_binned, g, h = _problem(0)
    n = X_binned.shape[0]
    kw = {}
    if bag:
        kw["sample_indices"] = np.sort(rng.choice(n, size=n // 2, replace=False)).astype(np.int32)
    grower = _grower(binner, X_binned, max_leaf_nodes=12, min_samples_leaf=5, l2_regularization=0.5)
    tree = grower.grow(g, h, quantize=(4, 3), **kw)
    nodes = tree.nodes
    assert nodes["is_leaf"].sum() >= 6
    for start, stop, k in tree.leaf_ranges:
        rows = tree.partition[start:stop]
        G = np.sum(g[rows], dtype=np.float64)
        H = np.sum(h[rows], dtype=np.float64)
        assert nodes["value"][k] == pytest.approx(-G / (H + 0.5), rel=1e-12)
        assert nodes["sum_hessians"][k] == pytest.approx(H, rel=1e-12)
        assert nodes["count"][k] == stop - start
    # an inner node's hessian sum is its children's
    for k in np.flatnonzero(nodes["is_leaf"] == 0):
        kids = nodes["sum_hessians"][[nodes["left"][k], nodes["right"][k]]]
        assert nodes["sum_hessians"][k] == pytest.approx(kids.sum(), rel=1e-12)
    # the splits are the quantised sums' (not the exact ones'): another rounding seed
    # grows another tree somewhere, yet every one is a valid tree of the same size
    exact = _grower(binner, X_binned, max_leaf_nodes=12, min_samples_leaf=5).grow(g, h, **kw)
    assert exact.nodes.shape == nodes.shape


def test_two_shards_grow_the_same_quantized_tree():
    _, offsets, binner, X_binned, g, h = _problem(1)
    cut = int(offsets[7])
    one = _grower(binner, X_binned, max_leaf_nodes=10, min_samples_leaf=4).grow(
        g, h, quantize=(4, 11)
    )
    shards = HistogramBuilder(
        [
            LocalHistograms(np.asfortranarray(X_binned[:cut]), binner.missing_bin_, 2, 0),
            LocalHistograms(
                np.asfortranarray(X_binned[cut:]), binner.missing_bin_, 2, row_start=cut
            ),
        ]
    )
    two = _grower(binner, None, histograms=shards, max_leaf_nodes=10, min_samples_leaf=4).grow(
        g, h, quantize=(4, 11)
    )
    for field in ("feature_idx", "bin_threshold", "is_leaf", "count", "left", "right"):
        np.testing.assert_array_equal(one.nodes[field], two.nodes[field])
    np.testing.assert_allclose(one.nodes["value"], two.nodes["value"], rtol=1e-12)


# ----------------------------------------------------------------------- training
def _data(seed=0):
    return make_ranking(n_queries=120, docs_per_query=(5, 40), n_features=12, random_state=seed)[:3]


def _model_text(params, ds, tmp_path, name):
    b = ltrboost.train(params, ds)
    path = tmp_path / name
    b.save_model(str(path))
    return b, path.read_bytes()


def test_training_is_seeded_and_thread_independent(tmp_path):
    X, y, q = _data()
    ds = ltrboost.make_dataset(X, y, qid=q)
    base = {"n_estimators": 15, "quantized_gradients": 4}
    _, a = _model_text({**base, "n_threads": 1}, ds, tmp_path, "a.json")
    _, b = _model_text({**base, "n_threads": 2}, ds, tmp_path, "b.json")
    assert a == b
    _, c = _model_text({**base, "random_state": 1}, ds, tmp_path, "c.json")
    assert a != c
    _, exact = _model_text({"n_estimators": 15}, ds, tmp_path, "e.json")
    assert a != exact


def test_model_file_records_the_setting_only_when_set(tmp_path):
    X, y, q = _data()
    ds = ltrboost.make_dataset(X, y, qid=q)
    b, text = _model_text({"n_estimators": 5, "quantized_gradients": 8}, ds, tmp_path, "q.json")
    assert json.loads(text)["params"]["quantized_gradients"] == 8
    loaded = ltrboost.load_model(str(tmp_path / "q.json"))
    np.testing.assert_array_equal(loaded.predict(X), b.predict(X))
    _, plain = _model_text({"n_estimators": 5}, ds, tmp_path, "p.json")
    assert "quantized_gradients" not in json.loads(plain)["params"]


def test_many_levels_come_close_to_exact_training():
    """With 255 levels the rounding is fine: the model ranks as the exact one does."""
    X, y, q = _data(2)
    ds = ltrboost.make_dataset(X, y, qid=q)
    exact = ltrboost.train({"n_estimators": 20}, ds).predict(X)
    fine = ltrboost.train({"n_estimators": 20, "quantized_gradients": 255}, ds).predict(X)
    assert np.corrcoef(exact, fine)[0, 1] > 0.98


@pytest.mark.parametrize("objective", ["mart", "ranknet", "rankboost", "logistic_rank"])
def test_every_kind_of_objective_trains(objective):
    X, y, q = _data(3)
    ds = ltrboost.make_dataset(X, y, qid=q)
    b = ltrboost.train({"objective": objective, "n_estimators": 5, "quantized_gradients": 4}, ds)
    assert np.isfinite(b.predict(X)).all()


@pytest.mark.parametrize("bad", [1, 256, -1])
def test_bad_level_counts_are_refused(bad):
    X, y, q = _data()
    with pytest.raises(ValueError, match="quantized_gradients"):
        ltrboost.train({"quantized_gradients": bad}, ltrboost.make_dataset(X, y, qid=q))


def test_ole_pairs_are_refused():
    X, y, q = _data()
    with pytest.raises(ParameterError, match="split_criterion='ole'"):
        ltrboost.train(
            {"quantized_gradients": 4, "split_criterion": "ole"},
            ltrboost.make_dataset(X, y, qid=q),
        )


@pytest.mark.parametrize("subsample", [1.0, 0.7])
def test_dask_grows_the_local_model(client, subsample):
    """Scales over every shard's rows, rows rounded by their global number: the same
    trees as one machine (sums differ only in their order)."""
    da = pytest.importorskip("dask.array")
    from ltrboost import dask as ltr_dask

    X, y, q = _data(4)
    params = {"n_estimators": 6, "quantized_gradients": 4, "subsample": subsample}
    local = ltrboost.train(params, ltrboost.make_dataset(X, y, qid=q))
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    cuts = [0, int(starts[len(starts) // 3]), int(starts[2 * len(starts) // 3]), len(q)]
    chunks = tuple(np.diff(cuts))
    data = ltr_dask.DaskData(
        da.from_array(X, chunks=(chunks, X.shape[1])),
        da.from_array(y, chunks=(chunks,)),
        da.from_array(q, chunks=(chunks,)),
    )
    dist = ltr_dask.train(client, params, data)
    assert len(dist.trees) == len(local.trees)
    for a, b in zip(local.trees, dist.trees, strict=True):
        for field in ("feature_idx", "bin_threshold", "count", "is_leaf"):
            np.testing.assert_array_equal(a[field], b[field])
        leaf = a["is_leaf"] == 1
        np.testing.assert_allclose(b["value"][leaf], a["value"][leaf], rtol=1e-9)
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)


def test_ranker_takes_it():
    X, y, q = _data()
    r = ltrboost.Ranker(n_estimators=5, quantized_gradients=4).fit(X, y, qid=q)
    assert r.get_params()["quantized_gradients"] == 4
    assert np.isfinite(r.predict(X)).all()


def test_dask_adds_one_round_trip_a_tree(client):
    """docs/scaling.md: `quantized_gradients` adds one round trip a tree on Dask (the
    leaves' exact sums), none when no leaf is under ``min_sum_hessian_in_leaf``."""
    da = pytest.importorskip("dask.array")
    from ltrboost import dask as ltr_dask

    X, y, q = _data(5)
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    cut = int(starts[len(starts) // 2])
    chunks = (cut, len(q) - cut)
    data = ltr_dask.DaskData(
        da.from_array(X, chunks=(chunks, X.shape[1])),
        da.from_array(y, chunks=(chunks,)),
        da.from_array(q, chunks=(chunks,)),
    )
    trips = []
    for k in (0, 4):
        stats: dict = {}
        booster = ltr_dask.train(
            client, {"n_estimators": 3, "quantized_gradients": k}, data, stats=stats
        )
        leaves = sum(int(t["is_leaf"].sum()) for t in booster.trees)
        trips.append(stats["round_trips"] - leaves)
    assert trips == [3 * 3, 3 * 4]

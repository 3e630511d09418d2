"""The OLE pair-histogram path (seed 000, eq. 13): the gathered, chunked kernels against a plain
NumPy reference (bit for bit, serial and parallel, across chunk boundaries), the
features an OLE node skips, the approximate ``ole_top_features`` mode, and the memory
the grower holds per pair."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ltrboost.histogram as histogram
from ltrboost.booster import BoosterParams, make_objective, train
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.grower import GrowerParams, TreeGrower
from ltrboost.histogram import (
    _node_pairs_reference,
    _pair_histogram_reference,
    build_pair_histogram,
)
from ltrboost.pair_csr import pairs_to_csr
from ltrboost.splitting import SplitParams, features_with_split, find_node_split

SEEDS = [0, 1, 2]


def _pair_problem(seed, n=300, n_features=11, n_pairs=3000, missing_bin=12):
    """Binned rows, random pairs as a PairCSR, and a node: a subset of the rows in no
    particular order (as a partition leaves them), each with a random number of its
    slice's pairs as the node's (``live``) and a random number after them as the ones
    its split sent across (``cross``)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(n, n_features)).astype(np.uint8)
    X[:, 3] = 0  # a constant feature: every pair in one bin (the longest chains)
    X[rng.random((n, n_features)) < 0.2] = missing_bin
    X_binned = np.asfortranarray(X)
    di = rng.integers(0, n, n_pairs).astype(np.int32)
    dj = ((di + rng.integers(1, n, n_pairs)) % n).astype(np.int32)
    rho = rng.uniform(0.0, 1.0, n_pairs) ** 3  # magnitudes far apart: order matters
    pairs = pairs_to_csr(di, dj, rho, n)
    rows = rng.permutation(n)[: n * 3 // 4].astype(np.int32)
    counts = np.diff(pairs.ptr)
    live = (counts * rng.random(n)).astype(np.int32)
    cross = ((counts - live) * rng.random(n)).astype(np.int32)
    return rng, X_binned, pairs, rows, live, cross, missing_bin


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("crossing", [False, True])
def test_row_major_pair_walk_over_several_feature_blocks(parallel, crossing, monkeypatch):
    """More features than the row-major walk adds per pass (PAIR_ROW_FEATURES): every
    block, the last one partial, equals the column walk and the reference bit for
    bit."""
    n_features = 2 * histogram.PAIR_ROW_FEATURES + 6
    _, X_binned, pairs, rows, live, cross, missing_bin = _pair_problem(4, n_features=n_features)
    monkeypatch.setattr(histogram, "PARALLEL_MIN_WORK", 0 if parallel else 10**12)
    di, dj, rho = _node_pairs_reference(rows, pairs, live, cross, crossing)
    feats = np.arange(1, n_features, dtype=np.int32)
    outs = []
    for X_rows in (None, np.ascontiguousarray(X_binned)):
        out = np.full((n_features, missing_bin + 1, 3), np.nan)
        build_pair_histogram(
            X_binned, rows, pairs, live, cross, feats, missing_bin, out, di.shape[0], crossing,
            X_rows=X_rows,
        )  # fmt: skip
        outs.append(out)
    ref = _pair_histogram_reference(
        X_binned, di, dj, rho, np.arange(di.shape[0]), feats, missing_bin, missing_bin + 1
    )
    np.testing.assert_array_equal(outs[1][feats], ref[feats])
    np.testing.assert_array_equal(outs[1], outs[0])


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("chunk", [1, 7, 4096])
@pytest.mark.parametrize("crossing", [False, True])
@pytest.mark.parametrize("row_major", [False, True])
def test_pair_histogram_is_the_numpy_reference_bit_for_bit(
    seed, parallel, chunk, crossing, row_major, monkeypatch
):
    """Every selected feature equals np.bincount over the node's pairs in the order of
    its rows and their pairs (which adds each bin's pairs in that order, as the kernel
    must): serial and parallel drivers, chunks of 1, 7 (not dividing the pairs) and
    4096 pairs, features in blocks of 4 plus a tail; a node's own pairs and a split's
    crossing pairs; the column walk and the row-major one."""
    _, X_binned, pairs, rows, live, cross, missing_bin = _pair_problem(seed)
    monkeypatch.setattr(histogram, "PAIR_CHUNK", chunk)
    monkeypatch.setattr(histogram, "PARALLEL_MIN_WORK", 0 if parallel else 10**12)
    di, dj, rho = _node_pairs_reference(rows, pairs, live, cross, crossing)
    assert 100 < di.shape[0] < pairs.n_pairs
    n_features = X_binned.shape[1]
    idx = np.arange(di.shape[0])
    for feats in (np.arange(n_features), np.array([1, 3, 4, 6, 7, 8, 10])):
        feats = feats.astype(np.int32)
        out = np.full((n_features, missing_bin + 1, 3), np.nan)
        build_pair_histogram(
            X_binned, rows, pairs, live, cross, feats, missing_bin, out, di.shape[0], crossing,
            X_rows=np.ascontiguousarray(X_binned) if row_major else None,
        )  # fmt: skip
        ref = _pair_histogram_reference(
            X_binned, di, dj, rho, idx, feats, missing_bin, missing_bin + 1
        )
        np.testing.assert_array_equal(out[feats], ref[feats])
        others = np.setdiff1d(np.arange(n_features), feats)
        assert np.isnan(out[others]).all()  # features not selected are not touched


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("n_sel", [1, 2, 3, 5, 6, 7])
def test_pair_walk_of_a_tail_of_one_to_three_features(n_sel, parallel, monkeypatch):
    """A selection that is not a multiple of four (walks of four interleaved features,
    the last three in one more walk of four whose spare lane sums into a scratch
    histogram, one or two in walks of one; fewer than four spread over the threads):
    every selected feature equals the reference bit for bit and no other feature is
    touched."""
    monkeypatch.setattr(histogram, "PARALLEL_MIN_WORK", 0 if parallel else 10**12)
    _, X_binned, pairs, rows, live, cross, missing_bin = _pair_problem(5)
    di, dj, rho = _node_pairs_reference(rows, pairs, live, cross, False)
    n_features = X_binned.shape[1]
    feats = np.array([10, 3, 7, 0, 5, 9, 1][:n_sel], dtype=np.int32)
    out = np.full((n_features, missing_bin + 1, 3), np.nan)
    build_pair_histogram(
        X_binned, rows, pairs, live, cross, feats, missing_bin, out, di.shape[0]
    )  # fmt: skip
    ref = _pair_histogram_reference(
        X_binned, di, dj, rho, np.arange(di.shape[0]), feats, missing_bin, missing_bin + 1
    )
    np.testing.assert_array_equal(out[feats], ref[feats])
    others = np.setdiff1d(np.arange(n_features), feats)
    assert np.isnan(out[others]).all()


def test_node_pairs_reference_is_a_plain_loop():
    """The reference's pairs: for each node row in order, the first live[d] pairs of its
    slice (or, crossing, the cross[d] after them), in slice order."""
    _, _, pairs, rows, live, cross, _ = _pair_problem(4, n=40, n_pairs=200)
    for crossing in (False, True):
        want = []
        for d in rows:
            start = pairs.ptr[d] + (live[d] if crossing else 0)
            for p in range(start, start + (cross[d] if crossing else live[d])):
                want.append((d, d + pairs.offset[p], float(pairs.rho[p])))
        got = list(zip(*_node_pairs_reference(rows, pairs, live, cross, crossing), strict=True))
        assert [(int(a), int(b), c) for a, b, c in got] == [(int(a), int(b), c) for a, b, c in want]


def test_pair_histogram_of_no_pairs_is_zero():
    _, X_binned, pairs, rows, live, cross, missing_bin = _pair_problem(0)
    feats = np.arange(X_binned.shape[1], dtype=np.int32)
    out = np.full((feats.shape[0], missing_bin + 1, 3), np.nan)
    for node_rows, node_live in ((np.zeros(0, np.int32), live), (rows, np.zeros_like(live))):
        out[:] = np.nan
        args = (pairs, node_live, cross, feats, missing_bin, out, 0)
        build_pair_histogram(X_binned, node_rows, *args)
        assert not out.any()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("missing_left", [False, True])
@pytest.mark.parametrize("parallel", [False, True])
def test_split_reorders_each_slice_into_kept_then_crossing(
    seed, missing_left, parallel, monkeypatch
):
    """A split leaves each row's node pairs as [partner on the row's side | partner
    across], each part in its previous order; the counts and the children's rho sums
    (per row in order, then NumPy's sum over rows) are those of a plain loop; rows outside the
    node are untouched.  Serial and parallel (many rows) drivers."""
    monkeypatch.setattr(histogram, "PAIR_SPLIT_PARALLEL", 0 if parallel else 10**12)
    _, X_binned, pairs, rows, live, cross, missing_bin = _pair_problem(seed, n=5000, n_pairs=50000)
    col = X_binned[:, 2]
    go_left = np.where(col == missing_bin, missing_left, col <= 3)
    node_rows = np.concatenate([rows[go_left[rows]], rows[~go_left[rows]]]).astype(np.int32)
    mid = int(go_left[rows].sum())
    before = (pairs.offset.copy(), pairs.rho.copy(), live.copy())
    longest = int(np.diff(pairs.ptr).max())
    n_pairs = int(live[node_rows].sum())
    got = histogram.split_node_pairs(
        node_rows, mid, pairs, live, cross, col, 3, missing_left, missing_bin, longest, n_pairs
    )
    n_l = n_r = n_x = 0
    sums_l, sums_r = [], []
    for t, d in enumerate(node_rows):
        p0 = pairs.ptr[d]
        old = range(p0, p0 + before[2][d])
        same = [p for p in old if go_left[d + before[0][p]] == (t < mid)]
        across = [p for p in old if go_left[d + before[0][p]] != (t < mid)]
        want = same + across
        np.testing.assert_array_equal(pairs.offset[p0 : p0 + len(want)], before[0][want])
        np.testing.assert_array_equal(pairs.rho[p0 : p0 + len(want)], before[1][want])
        assert (live[d], cross[d]) == (len(same), len(across))
        n_x += len(across)
        row_sum = 0.0
        for p in same:
            row_sum += float(before[1][p])
        if t < mid:
            n_l += len(same)
            sums_l.append(row_sum)
        else:
            n_r += len(same)
            sums_r.append(row_sum)
    s_l, s_r = float(np.sum(np.array(sums_l))), float(np.sum(np.array(sums_r)))
    assert got == (n_l, n_r, n_x, s_l, s_r)
    untouched = np.setdiff1d(np.arange(X_binned.shape[0]), node_rows)
    for d in untouched:
        sl = slice(pairs.ptr[d], pairs.ptr[d + 1])
        np.testing.assert_array_equal(pairs.offset[sl], before[0][sl])


def test_pairs_to_csr_groups_by_preferred_document_in_order():
    """Each row's slice holds the pairs whose doc_i it is, in input order; the bag keeps
    only pairs with both documents in it; bad rows are refused."""
    di = np.array([2, 0, 2, 1, 0, 2], dtype=np.int32)
    dj = np.array([0, 1, 1, 2, 2, 3], dtype=np.int32)
    rho = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    csr = pairs_to_csr(di, dj, rho, 5)
    assert csr.ptr.tolist() == [0, 2, 3, 6, 6, 6]
    assert csr.offset.tolist() == [1, 2, 1, -2, -1, 1]  # other document - preferred
    np.testing.assert_array_equal(csr.rho, np.float32([0.2, 0.5, 0.4, 0.1, 0.3, 0.6]))
    assert csr.rho.dtype == np.float32
    assert csr.offset.dtype == np.int16
    back = csr.to_lists()
    assert back[0].tolist() == [0, 0, 1, 2, 2, 2]
    assert back[1].tolist() == [1, 2, 2, 0, 1, 3]
    # documents 32768 rows apart or more (a query that long) take int32 offsets
    far = pairs_to_csr(np.array([0, 40000]), np.array([40000, 7]), np.ones(2), 40001)
    assert far.offset.dtype == np.int32
    assert far.to_lists()[1].tolist() == [40000, 7]
    near = pairs_to_csr(np.array([0, 32767]), np.array([32767, 0]), np.ones(2), 40001)
    assert near.offset.tolist() == [32767, -32767]
    bag = np.array([True, True, True, False, True])
    kept = pairs_to_csr(di, dj, rho, 5, bag)
    assert kept.n_pairs == 5
    assert kept.ptr.tolist() == [0, 2, 3, 5, 5, 5]
    half = csr.slice_rows(2, 4)  # rows 2..3 renumbered 0..1 (a shard of whole queries)
    assert half.ptr.tolist() == [0, 3, 3]
    with pytest.raises(ValueError, match="row 5, outside the 5 rows"):
        pairs_to_csr(np.array([5]), np.array([0]), np.array([1.0]), 5)
    with pytest.raises(ValueError, match="row -1"):
        pairs_to_csr(np.array([0]), np.array([-1]), np.array([1.0]), 5)
    with pytest.raises(ValueError, match="one length"):
        pairs_to_csr(np.array([0, 1]), np.array([1]), np.array([1.0]), 5)


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


def _ole_grower(binner, X_binned, **params):
    """A grower over ``X_binned`` with ``binner``'s bins and these GrowerParams."""
    return TreeGrower(
        X_binned,
        binner.n_bins_non_missing_,
        binner.missing_bin_,
        binner.thresholds_matrix(),
        GrowerParams(**params),
    )


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
    # float32 values: the grower holds rho in float32, the references use these
    rho = rng.uniform(0.01, 0.25, di.shape[0]).astype(np.float32).astype(np.float64)
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
    grower = _ole_grower(binner, X_binned, ole_top_features=k, **common)
    tree = grower.grow(g, h, pairs=pairs).nodes
    # the reference: Newton gains of every feature at the root, then OLE over the top k
    rows = np.arange(X_binned.shape[0])
    hist = histogram._build_histogram_reference(X_binned, rows, g, h, binner.missing_bin_ + 1)
    feats = np.arange(X_binned.shape[1], dtype=np.int32)
    sp = grower.splitter
    newton = sp.newton_gains(hist, feats, float(g.sum()), float(h.sum()), rows.shape[0])
    top = np.sort(np.argsort(-newton, kind="stable")[:k]).astype(np.int32)
    di, dj, rho = pairs
    all_pairs = np.arange(di.shape[0])
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


def test_grower_holds_six_bytes_a_pair():
    """A round's pairs are held as given (a PairCSR: int16 offsets and float32 rho, 6
    bytes a pair) with no per-pair partition or copy; per row, the CSR pointers and the
    live and crossing counts (16 bytes).  Below the binned data whenever pairs per
    document are below ``(n_features - 16) / 6``."""
    rng = np.random.default_rng(0)
    X_binned = np.asfortranarray(rng.integers(0, 5, size=(100, 40)).astype(np.uint8))
    shard = histogram.LocalHistograms(X_binned, missing_bin=5)
    di = np.arange(0, 99, dtype=np.int32)
    pairs = pairs_to_csr(di, di + 1, np.ones(99), 100)
    g = np.ones(100, np.float32)
    shard.start_tree(g, g, None, np.arange(40, dtype=np.int32), pairs)
    assert shard._pairs is pairs
    assert pairs.offset.nbytes + pairs.rho.nbytes == 6 * 99
    per_pair = [
        v.nbytes for v in vars(shard).values() if isinstance(v, np.ndarray) and v.size == 99
    ]
    assert per_pair == []  # nothing else the size of the pairs
    held = pairs.nbytes + shard._live.nbytes + shard._cross.nbytes
    assert held == 6 * 99 + 8 * 101 + 8 * 100
    assert held <= X_binned.nbytes


def test_grown_tree_lets_go_of_its_pairs():
    """The round's pairs are dropped once the tree is grown, so the next round's pairs
    never coexist with them."""
    binner, X_binned, g, h, pairs = _ole_problem(1)
    grower = _ole_grower(
        binner, X_binned, split_criterion="ole", max_leaf_nodes=4, min_samples_leaf=3
    )
    first = grower.grow(g, h, pairs=pairs).nodes
    shard = grower.histograms.shards[0]
    assert shard._pairs is None
    again = grower.grow(g, h, pairs=pairs).nodes  # a reused grower starts afresh
    np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    "kw",
    [dict(), dict(truncation_level=0), dict(lambda_normalization=False), dict(truncation_level=3)],
)
@pytest.mark.parametrize("bagged", [False, True])
@pytest.mark.parametrize("spread", [1.0, 2000.0])
def test_lambdamart_writes_the_grower_layout_as_its_pair_terms_give_it(
    weighted, kw, bagged, spread
):
    """LambdaMART's own OLE pairs (straight into a PairCSR, the bag applied) are
    ``pairs_to_csr(pair_terms(...))`` bit for bit: pairs, order and float32 rho; with
    weights, lambdarank normalisation on and off, all/top-k pairs, tied scores, scores
    spread far apart and queries of one label or one document."""
    X, y, qid = make_ranking(n_queries=30, docs_per_query=(1, 60), n_features=5, random_state=1)[:3]
    rng = np.random.default_rng(0)
    w = rng.uniform(0.5, 2.0, y.shape[0]) if weighted else None
    ds = make_dataset(X, y, qid=qid, sample_weight=w)
    s = rng.normal(size=ds.n_samples)
    s[:10] = 0.0  # ties
    s *= spread  # 2000: some exponentials are tiny (the direct sigmoid form)
    obj = make_objective(BoosterParams(objective="lambdamart", **kw))
    bag = rng.random(ds.n_samples) < 0.7 if bagged else None
    pt = obj.pair_terms(s, ds)
    want = pairs_to_csr(pt.doc_i, pt.doc_j, pt.rho, ds.n_samples, bag)
    got = obj.ole_pairs(s, ds, in_bag=bag)
    assert got.n_pairs > 100
    for a, b in zip(want, got, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_int32_offsets_grow_the_int16_tree():
    """Pairs whose documents are 32768 rows apart or more (a query that long) are held
    with int32 offsets: the same pairs grow the same tree either way."""
    binner, X_binned, g, h, pairs = _ole_problem(2)
    trees = []
    for dtype in (np.int16, np.int32):
        csr = pairs_to_csr(*pairs, X_binned.shape[0])
        csr = csr._replace(offset=csr.offset.astype(dtype))
        grower = _ole_grower(
            binner, X_binned, split_criterion="ole", max_leaf_nodes=8, min_samples_leaf=3
        )
        trees.append(grower.grow(g, h, pairs=csr).nodes)
    np.testing.assert_array_equal(trees[0], trees[1])
    assert trees[0].shape[0] >= 7

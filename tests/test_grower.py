"""Tests for ltrboost.grower: tree invariants, growth policies, criteria (Theorems 1-2
of seed 000) and the exact OLE hessian correction with pairs.

Every check recomputes what the grower claims from the rows themselves: a row's node is
found by routing it through the finished tree, so nothing here trusts the partition.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ltrboost.binning import BinMapper
from ltrboost.dataset import make_dataset
from ltrboost.grower import GrowerParams, TreeGrower
from ltrboost.histogram import build_pair_histogram
from ltrboost.pair_csr import pairs_to_csr
from ltrboost.splitting import SplitParams, find_node_split

SEEDS = [0, 1, 2]


NODE_FIELDS_BUT_GAIN = (
    "value",
    "feature_idx",
    "num_threshold",
    "bin_threshold",
    "missing_go_to_left",
    "is_leaf",
    "left",
    "right",
    "count",
    "sum_hessians",
    "depth",
)


# ====================================================================== helpers


def _data(seed, n=600, n_features=4, max_bins=15, nan_frac=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[:, 1] = np.round(X[:, 1] * 2)  # ties
    X[rng.random(X.shape) < nan_frac] = np.nan
    binner = BinMapper(max_bins=max_bins).fit(X)
    X_binned = binner.transform(X)
    y = (X[:, 0] > 0.3).astype(float) * 2 + np.nan_to_num(X[:, 2]) + rng.normal(size=n) * 0.5
    return rng, X, y, binner, X_binned


def _grower(binner, X_binned, **kw):
    kw.setdefault("min_samples_leaf", 5)
    return TreeGrower(
        X_binned,
        binner.n_bins_non_missing_,
        binner.missing_bin_,
        binner.thresholds_matrix(),
        GrowerParams(**kw),
        n_threads=2,
    )


def _ls_grad_hess(scores, y):
    g = (2.0 * (scores - y)).astype(np.float32)
    h = np.full(y.shape[0], 2.0, dtype=np.float32)
    return g, h


def _logistic_grad_hess(scores, y01):
    p = 1.0 / (1.0 + np.exp(-scores))
    return (p - y01).astype(np.float32), (p * (1.0 - p)).astype(np.float32)


def _ranknet_terms(scores, y, query_offsets, sigma=1.0, pointwise_h=0.0):
    """RankNet on all label pairs (y_i > y_j), plainly: g, h and (doc_i, doc_j, rho).

    C_ij = log(1 + exp(-sigma (s_i - s_j))); with p = 1 / (1 + exp(sigma (s_i - s_j))):
    dC/ds_i = -sigma p, dC/ds_j = +sigma p,
    d2C/ds_i2 = d2C/ds_j2 = rho = sigma^2 p (1-p), d2C/ds_i ds_j = -rho.
    ``pointwise_h`` adds a constant to every hessian (keeps leaf denominators away
    from zero).
    """
    n = y.shape[0]
    g = np.zeros(n)
    h = np.full(n, pointwise_h)
    di, dj = [], []
    for q in range(query_offsets.shape[0] - 1):
        lo, hi = query_offsets[q], query_offsets[q + 1]
        for i in range(lo, hi):
            for j in range(lo, hi):
                if y[i] > y[j]:
                    di.append(i)
                    dj.append(j)
    di = np.array(di, dtype=np.int32)
    dj = np.array(dj, dtype=np.int32)
    p = 1.0 / (1.0 + np.exp(sigma * (scores[di] - scores[dj])))
    rho = (sigma * sigma * p * (1.0 - p)).astype(np.float32).astype(np.float64)  # as held
    np.add.at(g, di, -sigma * p)
    np.add.at(g, dj, sigma * p)
    np.add.at(h, di, rho)
    np.add.at(h, dj, rho)
    return g.astype(np.float32), h.astype(np.float32), (di, dj, rho.astype(np.float64))


def _node_members(nodes, X_binned, missing_bin, rows):
    """Boolean (n_nodes, len(rows)): which rows pass through each node."""
    member = np.zeros((nodes.shape[0], rows.shape[0]), dtype=bool)
    member[0] = True
    for k in range(nodes.shape[0]):  # pre-order: parents come before children
        if nodes[k]["is_leaf"]:
            continue
        b = X_binned[rows, nodes[k]["feature_idx"]]
        go_left = np.where(
            b == missing_bin,
            bool(nodes[k]["missing_go_to_left"]),
            b <= nodes[k]["bin_threshold"],
        )
        member[nodes[k]["left"]] = member[k] & go_left
        member[nodes[k]["right"]] = member[k] & ~go_left
    return member


def _side_score(g, h, l2):
    return g * g / (h + l2) if h + l2 > 0 else 0.0


def _candidates(nb, has_missing):
    """(bin, missing_left) in the kernel's enumeration order."""
    out = [(b, False) for b in range(nb if has_missing else nb - 1)]
    if has_missing:
        out += [(b, True) for b in range(nb - 1)]
    return out


def _brute_split(X_binned, rows, g, h, binner, params, pairs=None, features=None):
    """Brute force over every feature/threshold/missing side, from the rows themselves.

    Returns (gain, feature, bin, missing_left) for the first best candidate; ``pairs`` =
    (doc_i, doc_j, rho) of the node (both documents in ``rows``) enables the OLE
    correction H_side - 2 * sum rho over pairs wholly inside the side.
    """
    missing_bin = binner.missing_bin_
    l2 = params.l2_regularization
    se = params.split_criterion == "se"
    ole = params.split_criterion == "ole" and pairs is not None
    g = g[rows].astype(np.float64)
    h = h[rows].astype(np.float64)
    G, H, n = g.sum(), h.sum(), rows.shape[0]
    pos = {int(r): k for k, r in enumerate(rows)}
    if ole:
        pi = np.array([pos[int(d)] for d in pairs[0]], dtype=np.int64)
        pj = np.array([pos[int(d)] for d in pairs[1]], dtype=np.int64)
        rho = pairs[2]
        H_parent = H - 2.0 * rho.sum()
    best = (-np.inf, -1, -1, False)
    feats = range(X_binned.shape[1]) if features is None else features
    for f in feats:
        col = X_binned[rows, f]
        miss = col == missing_bin
        for b, ml in _candidates(int(binner.n_bins_non_missing_[f]), bool(miss.any())):
            left = np.where(miss, ml, col <= b)
            nl = int(left.sum())
            if min(nl, n - nl) < params.min_samples_leaf:
                continue
            gl, hl = g[left].sum(), h[left].sum()
            if min(hl, H - hl) < params.min_sum_hessian_in_leaf:
                continue
            if se:
                gain = (
                    _side_score(gl, nl, l2)
                    + _side_score(G - gl, n - nl, l2)
                    - _side_score(G, n, l2)
                )
            elif ole:
                both_l = left[pi] & left[pj]
                both_r = ~left[pi] & ~left[pj]
                hl_c = hl - 2.0 * rho[both_l].sum()
                hr_c = (H - hl) - 2.0 * rho[both_r].sum()
                cross = rho.sum() - rho[both_l].sum() - rho[both_r].sum()
                gain = (
                    _side_score(gl, hl_c, l2)
                    + _side_score(G - gl, hr_c, l2)
                    - _side_score(G, H_parent, l2)
                )
                if gain > best[0]:
                    ole_reported = _two_leaf_gain_reference(
                        gl, hl_c, G - gl, hr_c, cross, G, H_parent, l2
                    )
            else:
                gain = (
                    _side_score(gl, hl, l2)
                    + _side_score(G - gl, H - hl, l2)
                    - _side_score(G, H, l2)
                )
            if gain > best[0]:
                best = (gain, f, b, ml)
    if ole and best[1] >= 0:
        # the split is chosen by eq. 13; the reported node gain includes the coupling
        # of the two leaves through crossing pairs
        best = (ole_reported, *best[1:])
    return best


def _two_leaf_gain_reference(gl, a, gr, b, cross, G, parent_h, l2):
    """Plain-NumPy two-leaf Newton decrease with the crossing-pair coupling."""
    M = np.array([[a + l2, -cross], [-cross, b + l2]])
    g = np.array([gl, gr])
    parent = G * G / (parent_h + l2) if parent_h + l2 > 0 else 0.0
    if a + l2 > 0 and b + l2 > 0 and np.linalg.det(M) > 0:
        return float(g @ np.linalg.solve(M, g)) - parent
    return _side_score(gl, a, l2) + _side_score(gr, b, l2) - parent


def _assert_tree_invariants(grown, X_binned, binner, g, h, params, rows=None, pairs=None):
    nodes = grown.nodes
    missing_bin = binner.missing_bin_
    n_all = X_binned.shape[0]
    rows = np.arange(n_all) if rows is None else np.asarray(rows)
    member = _node_members(nodes, X_binned, missing_bin, rows)
    leaves = np.flatnonzero(nodes["is_leaf"])
    l2 = params.l2_regularization

    assert nodes[0]["count"] == rows.shape[0]
    assert nodes[0]["depth"] == 0
    assert leaves.shape[0] <= params.max_leaf_nodes
    assert nodes.shape[0] == 2 * leaves.shape[0] - 1
    if params.max_depth is not None:
        assert nodes["depth"].max() <= params.max_depth
    # every row ends in exactly one leaf
    np.testing.assert_array_equal(member[leaves].sum(axis=0), 1)
    # the partition is a permutation of the rows, leaf ranges tile it
    np.testing.assert_array_equal(np.sort(grown.partition), np.sort(rows))
    ranges = sorted(grown.leaf_ranges)
    assert ranges[0][0] == 0
    assert ranges[-1][1] == rows.shape[0]
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    assert sorted(k for _, _, k in grown.leaf_ranges) == leaves.tolist()

    pair_in = None
    if pairs is not None:
        di, dj, rho = pairs
        idx = {int(r): k for k, r in enumerate(rows)}
        pi = np.array([idx[int(d)] for d in di])
        pj = np.array([idx[int(d)] for d in dj])
        pair_in = lambda m: m[pi] & m[pj]  # noqa: E731

    for k in range(nodes.shape[0]):
        nd = nodes[k]
        m = member[k]
        node_rows = rows[m]
        assert nd["count"] == node_rows.shape[0]
        G = np.sum(g[node_rows], dtype=np.float64)
        H = np.sum(h[node_rows], dtype=np.float64)
        np.testing.assert_allclose(nd["sum_hessians"], H, rtol=1e-9, atol=1e-9)
        H_c = H if pair_in is None else H - 2.0 * rho[pair_in(m)].sum()
        expected_value = -G / (H_c + l2) if H_c + l2 > 0 else 0.0
        np.testing.assert_allclose(
            nd["value"], expected_value, rtol=1e-7, atol=1e-9, err_msg=f"node {k}"
        )
        if nd["is_leaf"]:
            assert nd["count"] >= params.min_samples_leaf or k == 0
            assert nd["left"] == nd["right"] == nd["feature_idx"] == -1
            start, stop = next((s, e) for s, e, kk in grown.leaf_ranges if kk == k)
            np.testing.assert_array_equal(np.sort(grown.partition[start:stop]), np.sort(node_rows))
        else:
            left, right = nodes[nd["left"]], nodes[nd["right"]]
            assert k < nd["left"] < nd["right"]  # pre-order numbering
            assert left["count"] + right["count"] == nd["count"]
            assert left["depth"] == right["depth"] == nd["depth"] + 1
            assert nd["gain"] > params.min_gain_to_split
            f, b = nd["feature_idx"], nd["bin_threshold"]
            assert nd["num_threshold"] == binner.thresholds_matrix()[f, b]


# ====================================================================== validation


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(max_leaf_nodes=1), "max_leaf_nodes=1"),
        (dict(growth="random"), "growth"),
        (dict(split_criterion="gini"), "split_criterion"),
    ],
)
def test_invalid_params(kw, match):
    _, _, _, binner, X_binned = _data(0, n=50)
    with pytest.raises(ValueError, match=match):
        _grower(binner, X_binned, **kw)


# ====================================================================== invariants


GROWER_GRID = [
    dict(max_leaf_nodes=2),
    dict(max_leaf_nodes=8),
    dict(max_leaf_nodes=31, min_samples_leaf=1),
    dict(max_leaf_nodes=31, max_depth=2),
    dict(max_leaf_nodes=16, min_samples_leaf=40, l2_regularization=3.0),
    dict(max_leaf_nodes=16, min_sum_hessian_in_leaf=50.0),
    dict(max_leaf_nodes=16, min_gain_to_split=5.0),
    dict(max_leaf_nodes=12, growth="breadth_first"),
    dict(max_leaf_nodes=12, growth="depth_first", max_depth=4),
    dict(max_leaf_nodes=12, split_criterion="se"),
]


def _grid_id(kw):
    return "-".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kw", GROWER_GRID, ids=_grid_id)
def test_tree_invariants(seed, kw):
    rng, _, y, binner, X_binned = _data(seed)
    g, h = _logistic_grad_hess(rng.normal(size=y.shape[0]), (y > 1).astype(float))
    grower = _grower(binner, X_binned, **kw)
    grown = grower.grow(g, h)
    _assert_tree_invariants(grown, X_binned, binner, g, h, grower.params)
    # the best split of every internal node is what brute force finds for its rows
    member = _node_members(grown.nodes, X_binned, binner.missing_bin_, np.arange(y.shape[0]))
    for k in np.flatnonzero(grown.nodes["is_leaf"] == 0):
        rows = np.flatnonzero(member[k])
        gain, f, b, _ = _brute_split(X_binned, rows, g, h, binner, grower.params)
        assert grown.nodes[k]["gain"] == pytest.approx(gain, rel=1e-6)
        assert (grown.nodes[k]["feature_idx"], grown.nodes[k]["bin_threshold"]) == (
            f,
            b,
        )


def test_single_leaf_when_nothing_to_split():
    _, _, y, binner, X_binned = _data(0, n=30)
    g, h = _ls_grad_hess(np.zeros(30), y)
    grown = _grower(binner, X_binned, min_samples_leaf=20).grow(g, h)  # 30 < 2 * 20
    assert grown.nodes.shape[0] == 1
    assert grown.nodes[0]["is_leaf"]
    assert grown.nodes[0]["value"] == pytest.approx(-np.sum(g, dtype=np.float64) / 60.0)
    assert grown.leaf_ranges == [(0, 30, 0)]


@pytest.mark.parametrize("seed", SEEDS)
def test_first_split_matches_brute_force(seed):
    rng, _, y, binner, X_binned = _data(seed, n=800)
    g, h = _logistic_grad_hess(rng.normal(size=y.shape[0]), (y > 1).astype(float))
    for kw in (dict(), dict(min_samples_leaf=100), dict(l2_regularization=10.0)):
        grower = _grower(binner, X_binned, max_leaf_nodes=2, **kw)
        root = grower.grow(g, h).nodes[0]
        gain, f, b, ml = _brute_split(X_binned, np.arange(y.shape[0]), g, h, binner, grower.params)
        assert (root["feature_idx"], root["bin_threshold"]) == (f, b)
        assert root["gain"] == pytest.approx(gain, rel=1e-9)
        if (X_binned[:, f] == binner.missing_bin_).any():
            assert bool(root["missing_go_to_left"]) == ml


@pytest.mark.parametrize("seed", SEEDS)
def test_bag_and_feature_subset(seed):
    rng, _, y, binner, X_binned = _data(seed)
    g, h = _ls_grad_hess(rng.normal(size=y.shape[0]), y)
    bag = np.sort(rng.choice(y.shape[0], 350, replace=False)).astype(np.int32)
    feats = np.array([1, 3], dtype=np.int32)
    grower = _grower(binner, X_binned, max_leaf_nodes=10)
    grown = grower.grow(g, h, sample_indices=bag, feature_indices=feats)
    _assert_tree_invariants(grown, X_binned, binner, g, h, grower.params, rows=bag)
    inner = grown.nodes[grown.nodes["is_leaf"] == 0]
    assert set(inner["feature_idx"].tolist()) <= {1, 3}
    # the root split is the brute-force best over the bag and the selected features
    _, f, b, _ = _brute_split(X_binned, bag, g, h, binner, grower.params, features=feats)
    assert (grown.nodes[0]["feature_idx"], grown.nodes[0]["bin_threshold"]) == (f, b)
    # a reused grower (pooled histogram buffers) then grows the full tree unaffected
    full_again = grower.grow(g, h).nodes
    fresh = _grower(binner, X_binned, max_leaf_nodes=10).grow(g, h).nodes
    np.testing.assert_array_equal(full_again, fresh)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("subset", [False, True])
def test_row_major_histograms_grow_the_same_tree(seed, subset, monkeypatch):
    """Small nodes are built from a row-major copy of the bins; forcing that path for
    every node, or never taking it, grows the same tree (histograms differ only in
    summation order)."""
    import ltrboost.histogram

    rng, _, y, binner, X_binned = _data(seed, n=3000)
    g, h = _logistic_grad_hess(rng.normal(size=y.shape[0]), (y > 1).astype(float))
    trees = {}
    for name, density in (("columns", 2**40), ("rows", 1)):
        monkeypatch.setattr(ltrboost.histogram, "ROW_MAJOR_MAX_DENSITY", density)
        grower = _grower(binner, X_binned, max_leaf_nodes=20)
        feats = np.array([0, 2, 3], dtype=np.int32) if subset else None
        trees[name] = grower.grow(g, h, feature_indices=feats).nodes
        assert (grower.histograms.shards[0]._X_rows is not None) == (name == "rows")
    a, b = trees["columns"], trees["rows"]
    assert a.shape[0] > 20
    for fld in ("feature_idx", "bin_threshold", "missing_go_to_left", "is_leaf"):
        np.testing.assert_array_equal(a[fld], b[fld], err_msg=fld)
    np.testing.assert_array_equal(a["count"], b["count"])
    np.testing.assert_allclose(a["value"], b["value"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a["gain"], b["gain"], rtol=1e-9, atol=1e-12)


# ====================================================================== growth policies


class _SpyGrower(TreeGrower):
    """Records the order in which nodes are split and which nodes were queued."""

    def grow(self, *args, **kwargs):
        self.events = []
        return super().grow(*args, **kwargs)

    def _consider(self, node, heap, order):
        super()._consider(node, heap, order)
        if node.split_info is not None:
            self.events.append(("queued", node))

    def _apply_split(self, node, ids, last=False):
        self.events.append(("split", node))
        return super()._apply_split(node, ids, last)


def _spy(binner, X_binned, **kw):
    kw.setdefault("min_samples_leaf", 5)
    return _SpyGrower(
        X_binned,
        binner.n_bins_non_missing_,
        binner.missing_bin_,
        binner.thresholds_matrix(),
        GrowerParams(**kw),
    )


def _internal_preorder(root):
    out, stack = [], [root]
    while stack:
        nd = stack.pop()
        if nd.left is not None:
            out.append(nd)
            stack.extend([nd.right, nd.left])
    return out


def _internal_levelorder(root):
    out, level = [], [root]
    while level:
        out.extend(nd for nd in level if nd.left is not None)
        level = [c for nd in level if nd.left is not None for c in (nd.left, nd.right)]
    return out


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("max_leaf_nodes", [5, 40])
def test_growth_policy_split_order(seed, max_leaf_nodes):
    rng, _, y, binner, X_binned = _data(seed, n=1500)
    g, h = _logistic_grad_hess(rng.normal(size=y.shape[0]), (y > 1).astype(float))

    # breadth_first: level by level, left to right
    spy = _spy(binner, X_binned, max_leaf_nodes=max_leaf_nodes, growth="breadth_first")
    spy.grow(g, h)
    split = [nd for ev, nd in spy.events if ev == "split"]
    assert split == _internal_levelorder(split[0])
    assert [nd.depth for nd in split] == sorted(nd.depth for nd in split)

    # depth_first: always a child of the latest split, left first -> pre-order
    spy = _spy(binner, X_binned, max_leaf_nodes=max_leaf_nodes, growth="depth_first")
    spy.grow(g, h)
    split = [nd for ev, nd in spy.events if ev == "split"]
    assert split == _internal_preorder(split[0])

    # best_first: every split has the largest gain among the queued nodes at the time
    spy = _spy(binner, X_binned, max_leaf_nodes=max_leaf_nodes, growth="best_first")
    spy.grow(g, h)
    pending: list = []
    for ev, nd in spy.events:
        if ev == "queued":
            pending.append(nd)
        else:
            assert nd in pending
            assert nd.split_info.gain >= max(p.split_info.gain for p in pending)
            pending.remove(nd)


def test_growth_policies_give_different_shapes_under_a_leaf_limit():
    rng, _, y, binner, X_binned = _data(0, n=3000, nan_frac=0.0)
    g, h = _ls_grad_hess(np.zeros(y.shape[0]), y + rng.normal(size=y.shape[0]))
    depths = {}
    for growth in ("best_first", "breadth_first", "depth_first"):
        nodes = _grower(binner, X_binned, max_leaf_nodes=4, growth=growth).grow(g, h).nodes
        depths[growth] = sorted(nodes["depth"][nodes["is_leaf"] == 1].tolist())
    assert depths["breadth_first"] == [2, 2, 2, 2]  # root, then both children
    assert depths["depth_first"] == [1, 2, 3, 3]  # root, left, left-left
    # with no binding leaf limit the policies grow the same tree
    trees = [
        _grower(binner, X_binned, max_leaf_nodes=10_000, max_depth=3, growth=gr).grow(g, h).nodes
        for gr in ("best_first", "breadth_first", "depth_first")
    ]
    np.testing.assert_array_equal(trees[0], trees[1])
    np.testing.assert_array_equal(trees[0], trees[2])


# ================================================================== Theorems 1 and 2


def _compare_structure(a, b, with_gain=True):
    assert a.shape == b.shape
    for fld in NODE_FIELDS_BUT_GAIN + (("gain",) if with_gain else ()):
        np.testing.assert_array_equal(a[fld], b[fld], err_msg=fld)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "kw",
    [
        dict(max_leaf_nodes=16),
        dict(max_leaf_nodes=31, min_samples_leaf=1, growth="depth_first"),
        dict(max_leaf_nodes=8, min_samples_leaf=30, growth="breadth_first"),
    ],
    ids=_grid_id,
)
def test_theorem2_mart_se_newton_ole_identical(seed, kw):
    """Seed 000 Theorem 2: for least squares, SE, RWSE and OLE pick the same splits."""
    rng, _, y, binner, X_binned = _data(seed)
    g, h = _ls_grad_hess(rng.normal(size=y.shape[0]), y)
    trees = {
        c: _grower(binner, X_binned, split_criterion=c, **kw).grow(g, h).nodes
        for c in ("se", "newton", "ole")
    }
    assert trees["newton"].shape[0] > 3
    _compare_structure(trees["newton"], trees["ole"])
    _compare_structure(trees["newton"], trees["se"], with_gain=False)
    # with h = 2 the SE gain is exactly twice the Newton gain (counts vs 2 * counts)
    np.testing.assert_array_equal(trees["se"]["gain"], 2.0 * trees["newton"]["gain"])


@pytest.mark.parametrize("seed", SEEDS)
def test_theorem1_pointwise_newton_equals_ole(seed):
    """Seed 000 Theorem 1: for a pointwise loss (no pairs) OLE is RWSE."""
    rng, _, y, binner, X_binned = _data(seed)
    g, h = _logistic_grad_hess(rng.normal(size=y.shape[0]) * 2, (y > 1).astype(float))
    assert np.ptp(h) > 0.05  # non-constant hessians
    newton = _grower(binner, X_binned, split_criterion="newton", max_leaf_nodes=16).grow(g, h)
    ole = _grower(binner, X_binned, split_criterion="ole", max_leaf_nodes=16)
    _compare_structure(newton.nodes, ole.grow(g, h).nodes)
    # pairs that carry no second-order mass run the OLE code path and change nothing
    n = y.shape[0]
    zero_pairs = (
        rng.integers(0, n, 500).astype(np.int32),
        rng.integers(0, n, 500).astype(np.int32),
        np.zeros(500),
    )
    _compare_structure(newton.nodes, ole.grow(g, h, pairs=zero_pairs).nodes)


def test_se_differs_from_newton_for_non_constant_hessians():
    """The counter-case of Theorem 2: with varying hessians SE is not RWSE (sanity check
    that the comparisons above can fail)."""
    differ = 0
    for seed in range(4):
        rng, _, y, binner, X_binned = _data(seed)
        g, h = _logistic_grad_hess(rng.normal(size=y.shape[0]) * 3, (y > 1).astype(float))
        a = _grower(binner, X_binned, split_criterion="se", max_leaf_nodes=16).grow(g, h).nodes
        b = _grower(binner, X_binned, split_criterion="newton", max_leaf_nodes=16).grow(g, h).nodes
        differ += (
            a.shape != b.shape
            or not np.array_equal(a["feature_idx"], b["feature_idx"])
            or not np.array_equal(a["bin_threshold"], b["bin_threshold"])
        )
    assert differ > 0


# ---------------------------------------------------------------- boosting, Theorem 2


@pytest.mark.usefixtures("test_objectives_registered")  # _test_ls
def test_theorem2_boosted_models_identical():
    from ltrboost.booster import train

    _, X, y, _, _ = _data(0, n=500)
    ds = make_dataset(X, y, group=[50] * 10)
    models = {
        c: train(
            dict(
                objective="_test_ls",
                split_criterion=c,
                n_estimators=6,
                max_leaf_nodes=8,
                min_samples_leaf=5,
                max_bins=31,
                n_threads=2,
            ),
            ds,
        )
        for c in ("se", "newton", "ole")
    }
    for c in ("se", "ole"):
        assert len(models[c].trees) == 6
        for ta, tb in zip(models["newton"].trees, models[c].trees, strict=True):
            _compare_structure(ta, tb, with_gain=(c == "ole"))
        np.testing.assert_array_equal(models["newton"].predict_raw(X), models[c].predict_raw(X))


# ====================================================================== OLE with pairs


def _pair_hist_reference(X_binned, doc_i, doc_j, rho, pair_idx, features, missing_bin, n_bins):
    out = np.zeros((X_binned.shape[1], n_bins, 3))
    p = np.asarray(pair_idx)
    for f in features:
        bi = X_binned[doc_i[p], f].astype(np.intp)
        bj = X_binned[doc_j[p], f].astype(np.intp)
        hi, lo = np.maximum(bi, bj), np.minimum(bi, bj)
        out[f, :, 0] = np.bincount(hi, weights=rho[p], minlength=n_bins)
        out[f, :, 1] = np.bincount(lo, weights=rho[p], minlength=n_bins)
        one_missing = (hi == missing_bin) & (lo != missing_bin)
        out[f, :, 2] = np.bincount(lo[one_missing], weights=rho[p][one_missing], minlength=n_bins)
    return out


def _build_pair_histogram(X_binned, di, dj, rho, pair_idx, feats, missing_bin, out):
    """The pair histograms of the pairs ``pair_idx`` of ``(di, dj, rho)``: one node
    holding every row, the pairs as the grower holds them."""
    n = X_binned.shape[0]
    p = np.asarray(pair_idx, dtype=np.intp)
    csr = pairs_to_csr(di[p], dj[p], rho[p], n)
    rows = np.arange(n, dtype=np.int32)
    live = np.diff(csr.ptr).astype(np.int32)  # every pair is the node's
    cross = np.zeros(n, dtype=np.int32)
    build_pair_histogram(X_binned, rows, csr, live, cross, feats, missing_bin, out, csr.n_pairs)


def _random_pairs(rng, n, n_pairs):
    di = rng.integers(0, n, n_pairs).astype(np.int32)
    dj = (di + rng.integers(1, n, n_pairs)) % n  # never a document paired with itself
    rho = rng.uniform(0.01, 0.3, n_pairs).astype(np.float32).astype(np.float64)
    return di, dj.astype(np.int32), rho


@pytest.mark.parametrize("seed", SEEDS)
def test_pair_histogram_matches_reference(seed):
    rng = np.random.default_rng(seed)
    n, missing_bin = 200, 9
    X_binned = np.asfortranarray(rng.integers(0, 6, size=(n, 4)).astype(np.uint8))
    X_binned[rng.random((n, 4)) < 0.25] = missing_bin  # one or both documents missing
    di, dj, rho = _random_pairs(rng, n, 700)
    # hand-placed pairs: both missing, only doc_i missing, only doc_j missing
    X_binned[0, 2] = X_binned[1, 2] = missing_bin
    X_binned[2, 2], X_binned[3, 2] = missing_bin, 4
    X_binned[4, 2], X_binned[5, 2] = 1, missing_bin
    di = np.concatenate([di, [0, 2, 4]]).astype(np.int32)
    dj = np.concatenate([dj, [1, 3, 5]]).astype(np.int32)
    rho = np.concatenate([rho, [0.5, 0.25, 0.125]])
    pair_idx = rng.choice(di.shape[0], 500, replace=False).astype(np.int64)
    pair_idx = np.concatenate([pair_idx, [di.shape[0] - 3, di.shape[0] - 2, di.shape[0] - 1]])
    feats = np.array([0, 2, 3], dtype=np.int32)
    out = np.full((4, missing_bin + 1, 3), np.nan)
    _build_pair_histogram(X_binned, di, dj, rho, pair_idx, feats, missing_bin, out)
    ref = _pair_hist_reference(X_binned, di, dj, rho, pair_idx, feats, missing_bin, missing_bin + 1)
    np.testing.assert_allclose(out[feats], ref[feats], rtol=1e-12, atol=1e-15)
    assert np.isnan(out[1]).all()  # unselected feature untouched
    # totals: every pair lands once in P_max and once in P_min
    for f in feats:
        assert out[f, :, 0].sum() == pytest.approx(rho[pair_idx].sum())
        assert out[f, :, 1].sum() == pytest.approx(rho[pair_idx].sum())
    # an empty pair set zeroes the selected features
    _build_pair_histogram(X_binned, di, dj, rho, np.zeros(0, np.int64), feats, missing_bin, out)
    assert not out[feats].any()


def _ole_problem(seed, n_queries=12, docs=20, nan_frac=0.15, pointwise_h=0.0):
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < nan_frac] = np.nan
    binner = BinMapper(max_bins=12).fit(X)
    X_binned = binner.transform(X)
    y = np.clip(np.round(np.nan_to_num(X[:, 0]) + rng.normal(size=n) * 0.7 + 1), 0, 3)
    offsets = np.arange(0, n + 1, docs, dtype=np.int64)
    scores = rng.normal(size=n)
    g, h, pairs = _ranknet_terms(scores, y, offsets, pointwise_h=pointwise_h)
    return rng, binner, X_binned, g, h, pairs


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(l2_regularization=0.5, min_samples_leaf=10),
        dict(min_sum_hessian_in_leaf=5.0),
    ],
    ids=_grid_id,
)
def test_ole_node_split_matches_brute_force(seed, kw):
    """find_node_split with the pair histograms == brute force over rows and pairs,
    including pairs with one or both documents missing, for both missing sides."""
    # a pointwise hessian part keeps the root's corrected hessian away from 0 (for pure
    # RankNet it is exactly 0 up to float32 rounding, which makes G^2/H_c meaningless)
    _, binner, X_binned, g, h, pairs = _ole_problem(seed, pointwise_h=0.5)
    n = X_binned.shape[0]
    params = GrowerParams(
        split_criterion="ole",
        min_samples_leaf=kw.get("min_samples_leaf", 1),
        **{k: v for k, v in kw.items() if k != "min_samples_leaf"},
    )
    split_params = SplitParams(
        params.min_samples_leaf,
        params.min_sum_hessian_in_leaf,
        params.l2_regularization,
        params.min_gain_to_split,
        2,
    )
    di, dj, rho = pairs
    feats = np.arange(4, dtype=np.int32)
    rows = np.arange(n)
    hist = np.zeros((4, binner.missing_bin_ + 1, 3))
    for f in range(4):
        b = X_binned[:, f]
        hist[f, :, 0] = np.bincount(b, weights=g.astype(float), minlength=hist.shape[1])
        hist[f, :, 1] = np.bincount(b, weights=h.astype(float), minlength=hist.shape[1])
        hist[f, :, 2] = np.bincount(b, minlength=hist.shape[1])
    pair_hist = np.empty_like(hist)
    _build_pair_histogram(
        X_binned,
        di,
        dj,
        rho,
        np.arange(di.shape[0]),
        feats,
        binner.missing_bin_,
        pair_hist,
    )
    info = find_node_split(
        hist,
        feats,
        binner.n_bins_non_missing_,
        binner.missing_bin_,
        float(np.sum(g, dtype=np.float64)),
        float(np.sum(h, dtype=np.float64)),
        n,
        split_params,
        pair_hist=pair_hist,
        pair_sum=float(rho.sum()),
    )
    gain, f, b, ml = _brute_split(X_binned, rows, g, h, binner, params, pairs=pairs)
    assert info is not None
    assert info.gain == pytest.approx(gain, rel=1e-7, abs=1e-9)
    assert (info.feature_idx, info.bin_idx) == (f, b)
    if (X_binned[:, f] == binner.missing_bin_).any():
        assert info.missing_go_to_left == ml
    # leaf values of the children use the corrected hessians
    col = X_binned[:, f]
    left = np.where(col == binner.missing_bin_, info.missing_go_to_left, col <= b)
    l2 = params.l2_regularization
    for side, value in ((left, info.value_left), (~left, info.value_right)):
        H_c = h[side].sum(dtype=np.float64) - 2 * rho[side[di] & side[dj]].sum()
        assert value == pytest.approx(-g[side].sum(dtype=np.float64) / (H_c + l2), rel=1e-7)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "kw",
    [
        # pure RankNet: a node's corrected hessian is the rho mass of the pairs crossing
        # its boundary, and eq. 13 ignores the cross term between siblings, so OLE gains
        # of deeper splits are often negative and trees stay small
        dict(l2_regularization=0.5),
        dict(l2_regularization=0.5, pointwise_h=0.5),
        dict(growth="depth_first", pointwise_h=1.0),
    ],
    ids=_grid_id,
)
def test_ole_grown_tree_against_brute_force(seed, kw):
    """Every node of an OLE tree: value -G/(H_c + lam) with H_c = sum h - 2 sum rho over
    pairs wholly in the node, and split = brute-force OLE best over the node's rows."""
    kw = dict(kw)
    pointwise_h = kw.pop("pointwise_h", 0.0)
    _, binner, X_binned, g, h, pairs = _ole_problem(seed, pointwise_h=pointwise_h)
    n = X_binned.shape[0]
    grower = _grower(binner, X_binned, split_criterion="ole", max_leaf_nodes=10, **kw)
    grown = grower.grow(g, h, pairs=pairs)
    nodes = grown.nodes
    assert nodes.shape[0] >= (3 if pointwise_h == 0 else 7)
    _assert_tree_invariants(grown, X_binned, binner, g, h, grower.params, pairs=pairs)
    di, dj, rho = pairs
    member = _node_members(nodes, X_binned, binner.missing_bin_, np.arange(n))
    for k in np.flatnonzero(nodes["is_leaf"] == 0):
        m = member[k]
        inside = m[di] & m[dj]
        node_pairs = (di[inside], dj[inside], rho[inside])
        gain, f, b, _ = _brute_split(
            X_binned, np.flatnonzero(m), g, h, binner, grower.params, pairs=node_pairs
        )
        assert nodes[k]["gain"] == pytest.approx(gain, rel=1e-7, abs=1e-9)
        assert (nodes[k]["feature_idx"], nodes[k]["bin_threshold"]) == (f, b)
    # and OLE really is different from Newton here
    newton = _grower(binner, X_binned, split_criterion="newton", max_leaf_nodes=10, **kw).grow(g, h)
    assert not np.array_equal(newton.nodes["value"], nodes["value"])


def test_ole_pairs_crossing_the_split_do_not_change_the_sides():
    """With every pair crossing the only threshold, each side's OLE hessian is its plain
    sum: leaf values equal Newton's, the node gain is the coupled two-leaf decrease.
    Pairs inside one side change everything."""
    n_bins, missing_bin = 3, 2
    X_binned = np.asfortranarray(np.array([[0]] * 4 + [[1]] * 4, dtype=np.uint8))
    h = np.array([1.0, 2.0, 1.5, 1.0, 0.5, 1.0, 2.0, 1.0], dtype=np.float32)
    feats = np.array([0], dtype=np.int32)
    nb = np.array([2], dtype=np.int32)
    crossing = (
        np.array([0, 1, 2, 3, 0], np.int32),
        np.array([4, 5, 6, 7, 7], np.int32),
        np.float32([0.1, 0.2, 0.05, 0.3, 0.15]).astype(np.float64),  # float32, as held
    )
    same_side = (
        np.array([0, 4], np.int32),
        np.array([1, 5], np.int32),
        np.float32([0.3, 0.2]).astype(np.float64),
    )
    for g_list in (
        [-1.0, -2.0, -0.5, -1.0, 1.0, 0.5, 2.0, 0.25],
        [-1, -2, -1, -1, 1, 2, 1, 1],
    ):
        g = np.array(g_list, dtype=np.float32)
        G, H = float(g.sum(dtype=np.float64)), float(h.sum(dtype=np.float64))
        hist = np.zeros((1, n_bins, 3))
        for r in range(8):
            hist[0, X_binned[r, 0]] += [g[r], h[r], 1]

        def split(criterion, pairs, hist=hist, G=G, H=H):
            ph, ps = None, 0.0
            if pairs is not None:
                ph = np.empty_like(hist)
                _build_pair_histogram(
                    X_binned,
                    *pairs,
                    np.arange(pairs[0].shape[0]),
                    feats,
                    missing_bin,
                    ph,
                )
                ps = float(pairs[2].sum())
            return find_node_split(
                hist,
                feats,
                nb,
                missing_bin,
                G,
                H,
                8,
                SplitParams(1, 0.0, 0.0, -np.inf, criterion),
                ph,
                ps,
            )

        newton, ole = split(0, None), split(2, crossing)
        P = crossing[2].sum()
        assert (ole.value_left, ole.value_right) == pytest.approx(
            (newton.value_left, newton.value_right)
        )
        # every pair crosses: the two leaves are coupled by -P, the parent's one-leaf
        # hessian is H - 2P, and the node gain is the exact two-leaf decrease
        gl, gr = float(g[:4].sum()), float(g[4:].sum())
        assert ole.gain == pytest.approx(
            _two_leaf_gain_reference(gl, 5.5, gr, 4.5, P, G, H - 2 * P, 0.0), rel=1e-10
        )
        assert ole.gain >= -1e-12  # restricting both leaves to one value is a special case
        inside = split(2, same_side)
        assert inside.value_left != pytest.approx(newton.value_left)
        assert inside.value_right != pytest.approx(newton.value_right)
        # H_left = 5.5 - 2 * 0.3, H_right = 4.5 - 2 * 0.2
        assert inside.value_left == pytest.approx(-float(g[:4].sum()) / (5.5 - 0.6), rel=1e-6)
        assert inside.value_right == pytest.approx(-float(g[4:].sum()) / (4.5 - 0.4), rel=1e-6)


def test_ole_tree_after_a_root_split_that_separates_every_pair_equals_newton():
    rng = np.random.default_rng(0)
    n = 400
    group_a = np.arange(n) < n // 2
    X = np.column_stack([group_a.astype(float), rng.normal(size=n), rng.normal(size=n)])
    binner = BinMapper(max_bins=16).fit(X)
    X_binned = binner.transform(X)
    g = np.where(group_a, 1.0, -1.0) + rng.normal(size=n) * 0.3
    g, h = (
        g.astype(np.float32),
        np.ones(n, dtype=np.float32) + rng.uniform(0, 1, n).astype(np.float32),
    )
    a, b = np.flatnonzero(group_a), np.flatnonzero(~group_a)
    pairs = (
        rng.choice(a, 300).astype(np.int32),
        rng.choice(b, 300).astype(np.int32),
        rng.uniform(0.01, 0.2, 300),
    )
    newton = _grower(binner, X_binned, split_criterion="newton", max_leaf_nodes=12).grow(g, h).nodes
    ole = (
        _grower(binner, X_binned, split_criterion="ole", max_leaf_nodes=12)
        .grow(g, h, pairs=pairs)
        .nodes
    )
    assert newton[0]["feature_idx"] == ole[0]["feature_idx"] == 0
    # below the root no pair is left: the subtrees are Newton's, field for field
    _compare_structure(newton[1:], ole[1:])
    G, H = float(np.sum(g, dtype=np.float64)), float(np.sum(h, dtype=np.float64))
    P = pairs[2].sum()
    # the root's gain is the coupled two-leaf decrease (every pair crosses its split)
    left = ~group_a  # feature 0 == 0 goes left
    gl = float(np.sum(g[left], dtype=np.float64))
    hl = float(np.sum(h[left], dtype=np.float64))
    assert ole[0]["gain"] == pytest.approx(
        _two_leaf_gain_reference(gl, hl, G - gl, H - hl, P, G, H - 2 * P, 0.0), rel=1e-9
    )
    assert ole[0]["value"] == pytest.approx(-G / (H - 2 * P), rel=1e-9)


# ====================================================================== kernel paths


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_serial_and_parallel_kernel_paths_grow_identical_trees(
    monkeypatch, force_kernel_path, seed
):
    """The engine switches between serial kernel bodies and parallel drivers by size;
    both must grow the same tree, with the same row partition (the serial path is
    the one the brute-force tests above exercise on small data)."""
    rng, _, y, binner, X_binned = _data(seed, n=700)
    g, h = _logistic_grad_hess(rng.normal(size=y.shape[0]), (y > 1).astype(float))
    bag = np.sort(rng.choice(y.shape[0], 500, replace=False)).astype(np.int32)
    _, ob, oXb, og, oh, opairs = _ole_problem(seed, pointwise_h=0.5)
    cases = [
        (binner, X_binned, dict(max_leaf_nodes=12), (g, h), {}),
        (
            binner,
            X_binned,
            dict(max_leaf_nodes=9, growth="depth_first", split_criterion="se"),
            (g, h),
            dict(sample_indices=bag, feature_indices=np.array([0, 2, 3], np.int32)),
        ),
        (
            ob,
            oXb,
            dict(max_leaf_nodes=8, split_criterion="ole"),
            (og, oh),
            dict(pairs=opairs),
        ),
    ]
    for b, Xb, kw, (gg, hh), grow_kw in cases:
        out = {}
        for path in ("serial", "parallel"):
            with monkeypatch.context() as m:
                force_kernel_path(m, path)
                grown = _grower(b, Xb, **kw).grow(gg, hh, **grow_kw)
                out[path] = (grown.nodes, grown.partition.copy(), grown.leaf_ranges)
        np.testing.assert_array_equal(out["serial"][0], out["parallel"][0])
        np.testing.assert_array_equal(out["serial"][1], out["parallel"][1])
        assert out["serial"][2] == out["parallel"][2]
        assert out["serial"][0].shape[0] >= 5


@pytest.mark.parametrize("max_leaf_nodes", [2, 3, 8])
@pytest.mark.parametrize("max_depth", [None, 2])
def test_children_that_stay_leaves_get_no_histogram(max_leaf_nodes, max_depth):
    """The split making the last leaf, and children too small or too deep to split, build
    no histogram (nothing would read it); every child that is searched has one."""
    rng, _, y, binner, X_binned = _data(0, n=600)
    g, h = _logistic_grad_hess(rng.normal(size=y.shape[0]), (y > 1).astype(float))
    spy = _spy(binner, X_binned, max_leaf_nodes=max_leaf_nodes, max_depth=max_depth)
    builds = []
    build = spy.histograms.build
    spy.histograms.build = lambda rows, feats: builds.append(rows) or build(rows, feats)
    searched = []
    find = spy.splitter.find_split
    spy.splitter.find_split = lambda hist, *a, **k: searched.append(hist) or find(hist, *a, **k)
    grown = spy.grow(g, h)
    splits = [nd for ev, nd in spy.events if ev == "split"]
    n_leaves = int(grown.nodes["is_leaf"].sum())
    assert n_leaves == len(splits) + 1
    assert all(hist is not None for hist in searched)
    if max_leaf_nodes == 2:
        assert builds == []  # the root's split is the last one
    # a split builds at most one child's histogram, the last split none
    assert len(builds) <= len(splits) - (1 if n_leaves == max_leaf_nodes else 0)

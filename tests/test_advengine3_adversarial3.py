"""End-to-end brute force of the tree engine on small random data (adversarial pass 3).

The other engine tests check the grower on binned data it is handed.  These train
through :func:`ltrboost.train` on *raw* features (few distinct values, NaN, constant and
NaN-only-but-one-value columns, sample weights, query bagging, feature sampling,
``ole_top_features``, every growth policy and criterion), record what each tree was
grown from (gradients, hessians, bag, drawn features, OLE pairs), and then check every
tree of the saved model with a plain NumPy search over the raw values, written here
from README / DESIGN.md alone:

* each internal node's split is a best one over every drawn feature, every cut between
  two distinct raw values and both sides for NaN, under the documented criterion
  (``newton`` G^2/(H+lam), ``se`` G^2/(n+lam), ``ole`` eq. 13 with the pairs wholly in a
  side removed from its hessian); ties allowed;
* ``min_samples_leaf`` and ``min_sum_hessian_in_leaf`` hold for both children; the
  node's stored gain is above ``min_gain_to_split``; ``max_depth`` and
  ``max_leaf_nodes`` hold; a leaf left unsplit while the limits leave room has no split
  worth ``min_gain_to_split``;
* the stored counts and hessian sums are those of the rows that reach the node on raw
  features (binned and raw thresholds route the training rows alike), only bagged rows
  reach the tree and only drawn features split;
* the leaf values are ``learning_rate * -G / (H + lam)`` (OLE: the corrected ``H``);
* a node without NaN sends NaN to the child with more documents;
* ``predict_raw`` on the raw features equals the training scores bit for bit.
"""

from __future__ import annotations

import itertools
import os
import warnings

import numpy as np
import pytest

import ltrboost.booster as booster_mod
import ltrboost.grower as grower_mod
from ltrboost.booster import BoosterParams, train
from ltrboost.criteria import OLE_HESSIAN_RTOL
from ltrboost.dataset import make_dataset
from ltrboost.pair_csr import PairCSR

REL = 1e-7  # float64 sums of float32 terms in another order


def _score(g, h, l2):
    return g * g / (h + l2) if h + l2 > 0 else 0.0


@pytest.fixture
def recorder(monkeypatch):
    """Every ``TreeGrower.grow`` call's inputs (copied before the grower reorders the
    pairs) and every training run's final scores."""
    calls, scores = [], []
    grow = grower_mod.TreeGrower.grow

    def spy(self, gradients, hessians, sample_indices=None, feature_indices=None, pairs=None):
        if isinstance(pairs, PairCSR):
            triples = pairs.to_lists()
        elif pairs is None:
            triples = None
        else:
            triples = tuple(np.asarray(a).copy() for a in pairs)
        calls.append(
            dict(
                g=np.asarray(gradients, np.float64).copy(),
                h=np.asarray(hessians, np.float64).copy(),
                rows=None if sample_indices is None else np.asarray(sample_indices).copy(),
                feats=None if feature_indices is None else np.asarray(feature_indices).copy(),
                pairs=triples,
                ole=self.params.split_criterion == "ole" and triples is not None,
            )
        )
        return grow(self, gradients, hessians, sample_indices, feature_indices, pairs)

    run = booster_mod.Training.run

    def capture(self, *args, **kwargs):
        out = run(self, *args, **kwargs)
        scores.append(self.raw.copy())
        return out

    monkeypatch.setattr(grower_mod.TreeGrower, "grow", spy)
    monkeypatch.setattr(booster_mod.Training, "run", capture)
    return calls, scores


def _column(rng, n):
    """A column of 1-6 distinct values (some tricky: adjacent floats, huge, tiny,
    signed zeros, integers), NaN in some rows."""
    kind = rng.integers(0, 8)
    k = int(rng.integers(1, 7)) if kind < 7 else 200  # 7: up to 200 values (bins)
    if kind == 0:
        vals = np.arange(k, dtype=float)
    elif kind == 1:  # neighbouring floats: the midpoint rounds onto one of them
        vals = 1.0 + np.arange(k) * np.spacing(1.0)
    elif kind == 2:
        vals = np.sort(rng.normal(size=k)) * 1e300
    elif kind == 3:
        vals = np.sort(rng.normal(size=k)) * 1e-300
    elif kind == 4:
        vals = np.array([-0.0, 0.0, 5e-324, 1.0, 2.0, 3.0])[:k]
    else:
        vals = np.sort(rng.normal(size=k))
    col = vals[rng.integers(0, vals.shape[0], n)]
    col[rng.random(n) < float(rng.choice([0.0, 0.0, 0.1, 0.5, 0.9]))] = np.nan
    return col


def _problem(seed):
    rng = np.random.default_rng(seed)
    nq = int(rng.integers(1, 8))
    sizes = rng.integers(2, 40, nq)
    n = int(sizes.sum())
    nf = int(rng.integers(2, 6))
    X = np.column_stack([_column(rng, n) for _ in range(nf)])
    y = rng.integers(0, 4, n).astype(float)
    w = None
    if rng.random() < 0.4:
        w = rng.uniform(0.1, 3.0, n)
        if rng.random() < 0.3:
            w[rng.random(n) < 0.2] = 0.0
    objective = str(
        rng.choice(
            [
                *("mart", "mart", "lambdamart", "ranknet", "rankboost", "gbrank"),
                *("qbrank", "mcrank", "logistic_rank", "yetirank"),
            ]
        )
    )
    criterion = str(rng.choice(["newton", "se", "ole"]))
    if objective == "mcrank":
        criterion = str(rng.choice(["newton", "se"]))
    distinct = max(len(np.unique(c[~np.isnan(c)])) for c in X.T)
    p = dict(
        objective=objective,
        split_criterion=criterion,
        n_estimators=int(rng.integers(1, 4)),
        learning_rate=float(rng.choice([0.1, 0.5, 1.0, 1.5])),
        max_leaf_nodes=int(rng.integers(2, 10)),
        max_depth=int(rng.integers(1, 4)) if rng.random() < 0.4 else None,
        min_samples_leaf=int(rng.integers(1, 8)),
        min_sum_hessian_in_leaf=float(rng.choice([0.0, 1e-3, 0.5, 3.0])),
        l2_regularization=float(rng.choice([0.0, 0.0, 1.0, 10.0])),
        min_gain_to_split=float(rng.choice([0.0, 0.0, 0.01, 1.0])),
        growth=str(rng.choice(["best_first", "breadth_first", "depth_first"])),
        max_bins=int(rng.integers(max(2, distinct), max(9, distinct + 1))),
        min_samples_bin=1,
        subsample=float(rng.choice([1.0, 1.0, 0.5, 0.7])),
        colsample_bytree=float(rng.choice([1.0, 1.0, 0.5, 0.75])),
        random_state=int(rng.integers(0, 1000)),
        n_threads=1,
    )
    if criterion == "ole" and rng.random() < 0.5:
        p["ole_top_features"] = int(rng.integers(1, nf + 1))
    return X, y, sizes, w, p, rng


def _varying(X):
    """Original ids of the columns that can split (two values, NaN counting as one)."""
    out = []
    for f in range(X.shape[1]):
        col = X[:, f]
        k = len(np.unique(col[~np.isnan(col)])) + bool(np.isnan(col).any())
        if k >= 2:
            out.append(f)
    return np.array(out, dtype=np.int64)


def _rows_of(X, nodes, target, call):
    """The recorded bag's rows that reach node ``target`` on raw features."""
    stack = [(0, np.arange(X.shape[0]) if call["rows"] is None else call["rows"])]
    while stack:
        k, rows = stack.pop()
        if k == target:
            return rows
        nd = nodes[k]
        if nd["is_leaf"]:
            continue
        col = X[rows, int(nd["feature_idx"])]
        left = np.where(np.isnan(col), bool(nd["missing_go_to_left"]), col <= nd["num_threshold"])
        stack += [(int(nd["left"]), rows[left]), (int(nd["right"]), rows[~left])]
    raise AssertionError(target)


class _Node:
    """Sums over rows of one recorded tree's inputs."""

    def __init__(self, X, call, l2, cuts=None):
        self.X, self.c, self.l2 = X, call, l2
        self.n = X.shape[0]
        # per feature, the values ``t`` of the candidate splits ``x <= t``: every
        # distinct value, unless given (the bin thresholds of a merged feature)
        self.cuts = cuts or {f: np.unique(X[:, f][~np.isnan(X[:, f])]) for f in range(X.shape[1])}

    def sums(self, part, ole):
        g = self.c["g"][part].sum()
        h_raw = self.c["h"][part].sum()
        h = h_raw
        if ole:
            di, dj, rho = self.c["pairs"]
            inside = np.zeros(self.n, bool)
            inside[part] = True
            h = h_raw - 2.0 * np.asarray(rho, np.float64)[inside[di] & inside[dj]].sum()
            if abs(h) <= OLE_HESSIAN_RTOL * abs(h_raw):
                h = 0.0
        return g, h, h_raw, part.shape[0]

    def gain(self, rows, left, crit):
        ole = crit == "ole" and self.c["ole"]
        gl, hl, _, nl = self.sums(rows[left], ole)
        gr, hr, _, nr = self.sums(rows[~left], ole)
        g, h, _, n = self.sums(rows, ole)
        if crit == "se":
            hl, hr, h = nl, nr, n
        l2 = self.l2
        return _score(gl, hl, l2) + _score(gr, hr, l2) - _score(g, h, l2)

    def coupled_gain(self, rows, left):
        """OLE's node gain (``_two_leaf_gain``): the two-leaf quadratic model with the
        crossing pairs' coupling; eq. 13 when nothing crosses or it is not definite."""
        di, dj, rho = self.c["pairs"]
        rho = np.asarray(rho, np.float64)
        on_l = np.zeros(self.n, bool)
        on_r = np.zeros(self.n, bool)
        on_l[rows[left]] = True
        on_r[rows[~left]] = True
        cross = rho[(on_l[di] & on_r[dj]) | (on_r[di] & on_l[dj])].sum()
        gl, hl, _, _ = self.sums(rows[left], True)
        gr, hr, _, _ = self.sums(rows[~left], True)
        g, h, _, _ = self.sums(rows, True)
        a, b = hl + self.l2, hr + self.l2
        det = a * b - cross * cross
        if cross == 0.0 or not (a > 0 and b > 0 and det > OLE_HESSIAN_RTOL * a * b):
            return self.gain(rows, left, "ole")
        return (b * gl * gl + 2 * cross * gl * gr + a * gr * gr) / det - _score(g, h, self.l2)

    def splits(self, rows, feats, p):
        """Every valid split of ``rows`` on raw values: (feature, left mask over rows)."""
        msl = max(1, p.min_samples_leaf)
        for f in feats:
            col = self.X[rows, f]
            nan = np.isnan(col)
            vals = np.r_[-np.inf, self.cuts[f], np.inf]
            for miss_left in (False, True):
                for cut in vals:
                    le = col <= cut
                    left = np.where(nan, miss_left, le)
                    nl = int(left.sum())
                    if min(nl, rows.shape[0] - nl) < msl:
                        continue
                    hl = self.c["h"][rows[left]].sum()
                    hr = self.c["h"][rows[~left]].sum()
                    if min(hl, hr) < p.min_sum_hessian_in_leaf:
                        continue
                    yield f, left

    def best(self, rows, feats, p, crit):
        gains = [self.gain(rows, left, crit) for _, left in self.splits(rows, feats, p)]
        return max(gains, default=-np.inf)


def _tol(x):
    return REL * max(1.0, abs(x))


def _check_tree(X, nodes, call, drawn, p, lr, l2, cuts=None):
    """``lr=None``: the leaf values are one common multiple of the Newton steps (QBRank's
    line search times the learning rate)."""
    crit = p.split_criterion
    nd_ = _Node(X, call, l2, cuts)
    if lr is None:
        newton = []
        for k in np.flatnonzero(nodes["is_leaf"]):
            rows = _rows_of(X, nodes, k, call)
            g, h, _, _ = nd_.sums(rows, crit == "ole" and call["ole"])
            newton.append(-g / (h + l2) if h + l2 > 0 else 0.0)
        newton = np.array(newton)
        values = nodes["value"][nodes["is_leaf"] == 1]
        big = np.argmax(np.abs(newton))
        lr = values[big] / newton[big] if newton[big] != 0 else 0.0
    n_leaves = int(nodes["is_leaf"].sum())
    assert n_leaves <= p.max_leaf_nodes
    root_rows = np.arange(X.shape[0]) if call["rows"] is None else call["rows"]
    stack = [(0, root_rows)]
    while stack:
        k, rows = stack.pop()
        nd = nodes[k]
        assert nd["count"] == rows.shape[0], (k, nd["count"], rows.shape[0])
        np.testing.assert_allclose(nd["sum_hessians"], call["h"][rows].sum(), rtol=1e-6, atol=1e-9)
        ole = crit == "ole" and call["ole"]
        if nd["is_leaf"]:
            g, h, _, _ = nd_.sums(rows, ole)
            expected = lr * (-g / (h + l2) if h + l2 > 0 else 0.0)
            if k == 0 and call["h"][rows].sum() < p.min_sum_hessian_in_leaf:
                expected = 0.0  # a root alone under min_sum_hessian_in_leaf: no step
            np.testing.assert_allclose(nd["value"], expected, rtol=1e-6, atol=1e-12)
            room = n_leaves < p.max_leaf_nodes and (
                p.max_depth is None or nd["depth"] < p.max_depth
            )
            if room:
                if not ole:
                    best = nd_.best(rows, drawn, p, crit)
                    assert best <= p.min_gain_to_split + _tol(best), (k, best)
                else:
                    found = [
                        (nd_.gain(rows, left, "ole"), nd_.coupled_gain(rows, left))
                        for _, left in nd_.splits(rows, drawn, p)
                    ]
                    if found and p.ole_top_features is None:
                        eq13, coupled = np.array(found).T
                        top = np.isclose(eq13, eq13.max(), rtol=1e-9, atol=1e-12)
                        assert coupled[top].min() <= p.min_gain_to_split + 1e-6
            continue
        assert p.max_depth is None or nd["depth"] < p.max_depth
        f = int(nd["feature_idx"])
        assert f in drawn, (k, f, drawn)
        col = X[rows, f]
        nan = np.isnan(col)
        left = np.where(nan, bool(nd["missing_go_to_left"]), col <= nd["num_threshold"])
        nl = int(left.sum())
        assert min(nl, rows.shape[0] - nl) >= max(1, p.min_samples_leaf)
        assert min(call["h"][rows[left]].sum(), call["h"][rows[~left]].sum()) >= (
            p.min_sum_hessian_in_leaf - 1e-9
        )
        if not nan.any():  # unseen NaN follow the larger child
            assert bool(nd["missing_go_to_left"]) == (nl >= rows.shape[0] - nl), k
        chosen = nd_.gain(rows, left, crit)
        search = drawn
        if ole and p.ole_top_features is not None:
            newton = np.array([nd_.best(rows, [f2], p, "newton") for f2 in drawn])
            order = np.argsort(-newton, kind="stable")
            kk = min(int(p.ole_top_features), len(drawn))
            if len(drawn) > kk and np.isclose(newton, newton[order[kk - 1]], rtol=1e-9).sum() > 1:
                search = None  # which features are the top k is rounding
            else:
                search = [drawn[i] for i in sorted(order[:kk]) if np.isfinite(newton[i])]
                assert f in search, (k, f, search)
        if search is not None:
            best = nd_.best(rows, search, p, crit)
            assert chosen >= best - _tol(best), (k, chosen, best)
        reported = nd_.coupled_gain(rows, left) if ole else chosen
        np.testing.assert_allclose(nd["gain"], reported, rtol=1e-5, atol=1e-7)
        assert nd["gain"] > p.min_gain_to_split
        stack += [(int(nd["left"]), rows[left]), (int(nd["right"]), rows[~left])]


def _run(seed, recorder, **override):
    calls, scores = recorder
    X, y, sizes, w, p, _ = _problem(seed)
    p.update(override)
    ds = make_dataset(X, y, group=sizes, sample_weight=w)
    params = BoosterParams(**p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = train(params, ds)
    return X, sizes, params, model, calls, scores


# more seeds for a longer search: ADV3_SEEDS=4000 pytest tests/test_advengine3_adversarial3.py
SEEDS = range(int(os.environ.get("ADV3_SEEDS", "120")))


@pytest.mark.parametrize("seed", SEEDS)
def test_every_tree_is_the_raw_brute_force_search(seed, recorder):
    X, sizes, p, model, calls, scores = _run(seed, recorder)
    varying = _varying(X)
    assert len(calls) == len(model.trees)
    lr = p.learning_rate
    if model.objective == "qbrank":
        lr = None  # times the line search's step
    offsets = np.r_[0, np.cumsum(sizes)]
    n_feats = X.shape[1]
    for nodes, call in zip(model.trees, calls, strict=True):
        # the bag: whole queries, max(1, round(subsample * n_queries)) of them
        if call["rows"] is None:
            assert p.subsample >= 1.0
        else:
            in_bag = np.zeros(X.shape[0], bool)
            in_bag[call["rows"]] = True
            spans = list(itertools.pairwise(offsets))
            assert all(in_bag[a:b].all() or not in_bag[a:b].any() for a, b in spans)
            n_q = sum(in_bag[a:b].any() for a, b in spans)
            assert n_q == max(1, round(p.subsample * len(sizes)))
            if call["pairs"] is not None:
                di, dj, _ = call["pairs"]
                assert in_bag[di].all()
                assert in_bag[dj].all()
        # the drawn features (the grower sees the varying ones among them, compact ids)
        if call["feats"] is None:
            drawn = list(varying)
        else:
            drawn = [int(varying[i]) for i in call["feats"]]
            if p.colsample_bytree < 1.0:
                assert len(drawn) <= max(1, round(p.colsample_bytree * n_feats))
        _check_tree(X, nodes, call, drawn, p, lr, p.l2_regularization)
    raw = scores[-1]
    if model.update_rule == "averaged":
        raw = raw / (model.n_iterations + 1)
    np.testing.assert_array_equal(model.predict_raw(X).reshape(-1), raw.reshape(-1))


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("growth", ["best_first", "breadth_first", "depth_first"])
def test_policies_on_the_same_data_respect_the_limits(seed, growth, recorder):
    """The same data under each growth policy (MART, Newton, weights maybe): every tree
    passes the brute force and its limits."""
    X, _, p, model, calls, scores = _run(
        seed, recorder, growth=growth, objective="mart", split_criterion="newton"
    )
    varying = _varying(X)
    for nodes, call in zip(model.trees, calls, strict=True):
        drawn = list(varying) if call["feats"] is None else [int(varying[i]) for i in call["feats"]]
        _check_tree(X, nodes, call, drawn, p, p.learning_rate, p.l2_regularization)
    np.testing.assert_array_equal(model.predict_raw(X).reshape(-1), scores[-1].reshape(-1))


@pytest.mark.parametrize("seed", range(len(SEEDS) // 2))
def test_merged_bins_split_at_the_best_bin_threshold(seed, recorder):
    """More distinct values than ``max_bins`` and ``min_samples_bin=3`` (the booster's
    default): every threshold lies between two training values, each value bin holds
    at least ``min_samples_bin`` documents of a few-value feature, and every split is
    the best over the bin thresholds (the only cuts a tree can make), found on raw
    values; predict on raw features is the training scores."""
    from ltrboost.binning import BinMapper

    rng = np.random.default_rng(10_000 + seed)
    n = int(rng.integers(20, 200))
    nf = int(rng.integers(2, 5))
    X = np.round(rng.normal(size=(n, nf)) * rng.choice([1.0, 3.0, 10.0], nf), 0)
    X[rng.random((n, nf)) < 0.1] = np.nan
    if rng.random() < 0.5:  # a wide-valued feature (quantile bins)
        X[:, 0] = rng.normal(size=n)
    y = rng.integers(0, 3, n).astype(float)
    sizes = np.array([n // 2, n - n // 2])
    w = rng.uniform(0.2, 2.0, n) if rng.random() < 0.5 else None
    max_bins = int(rng.integers(2, 7))
    p = BoosterParams(
        objective=str(rng.choice(["mart", "lambdamart"])),
        split_criterion=str(rng.choice(["newton", "se", "ole"])),
        n_estimators=2,
        learning_rate=0.3,
        max_leaf_nodes=int(rng.integers(2, 12)),
        min_samples_leaf=int(rng.integers(1, 6)),
        max_bins=max_bins,
        growth=str(rng.choice(["best_first", "breadth_first", "depth_first"])),
        l2_regularization=float(rng.choice([0.0, 1.0])),
        random_state=seed,
        n_threads=1,
    )
    calls, scores = recorder
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = train(p, make_dataset(X, y, group=sizes, sample_weight=w))
    binner = BinMapper(max_bins, random_state=seed, min_samples_bin=p.min_samples_bin).fit(X)
    cuts = {}
    for f, t in enumerate(binner.bin_thresholds_):
        col = X[:, f][~np.isnan(X[:, f])]
        vals, counts = np.unique(col, return_counts=True)
        assert t.shape[0] + 1 <= max_bins
        pos = np.searchsorted(vals, t, side="left")  # vals[pos-1] <= t < vals[pos]
        assert (pos >= 1).all()
        assert (pos < vals.shape[0]).all()
        assert (vals[pos - 1] <= t).all()
        assert (t < vals[pos]).all()
        if vals.shape[0] <= max_bins:  # few values: bins closed at min_samples_bin
            per_bin = np.add.reduceat(counts, np.r_[0, pos]) if t.shape[0] else counts.sum()
            assert (np.atleast_1d(per_bin)[:-1] >= p.min_samples_bin).all()
        cuts[f] = t
    varying = _varying(X)
    for nodes, call in zip(model.trees, calls, strict=True):
        drawn = list(varying) if call["feats"] is None else [int(varying[i]) for i in call["feats"]]
        _check_tree(X, nodes, call, drawn, p, p.learning_rate, p.l2_regularization, cuts)
    np.testing.assert_array_equal(model.predict_raw(X).reshape(-1), scores[-1].reshape(-1))


@pytest.mark.parametrize("seed", range(len(SEEDS) // 2))
def test_sparse_input_and_forced_parallel_kernels_grow_the_brute_force_trees(
    seed, recorder, monkeypatch
):
    """The same checks on a SciPy sparse ``X`` (absent entries zeros, NaN stored) with
    two threads and every parallel, row-major and split-partition kernel forced on:
    the model is the dense serial one, byte for byte."""
    import scipy.sparse as sp

    import ltrboost.histogram as histogram_mod
    import ltrboost.splitting as splitting_mod

    X, y, sizes, w, p, rng = _problem(50_000 + seed)
    X[rng.random(X.shape) < 0.4] = 0.0  # zeros to leave out of the sparse matrix
    distinct = max(len(np.unique(c[~np.isnan(c)])) for c in X.T)
    p["max_bins"] = max(p["max_bins"], distinct)  # every value its own bin
    ds = make_dataset(X, y, group=sizes, sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dense = train(BoosterParams(**p), ds)
        calls, scores = recorder
        n_calls = len(calls)
        monkeypatch.setattr(histogram_mod, "PARALLEL_MIN_WORK", 0)
        monkeypatch.setattr(histogram_mod, "HISTOGRAM_BALANCE_MIN_WORK", 0)
        monkeypatch.setattr(histogram_mod, "PAIR_SPLIT_PARALLEL", 0)
        monkeypatch.setattr(histogram_mod, "ROW_MAJOR_MAX_DENSITY", int(rng.choice([0, 10**6])))
        monkeypatch.setattr(histogram_mod, "PAIR_CHUNK", 3)
        monkeypatch.setattr(histogram_mod, "SERIAL_SUBTRACT_WORK", 0)
        monkeypatch.setattr(splitting_mod, "SERIAL_SPLIT_WORK", 0)
        monkeypatch.setattr(splitting_mod, "SERIAL_PARTITION_ROWS", 0)
        monkeypatch.setattr(grower_mod, "OLE_BOUND_MIN_WORK", 0)
        monkeypatch.setattr(grower_mod, "OLE_BOUND_BLOCK", 1)
        Xs = sp.csr_matrix(X)
        Xs.eliminate_zeros()
        sparse = train(
            BoosterParams(**{**p, "n_threads": 2}),
            make_dataset(Xs, y, group=sizes, sample_weight=w),
        )
    assert len(dense.trees) == len(sparse.trees)
    for a, b in zip(dense.trees, sparse.trees, strict=True):
        for field in ("feature_idx", "bin_threshold", "num_threshold", "missing_go_to_left"):
            np.testing.assert_array_equal(a[field], b[field])
        np.testing.assert_allclose(a["value"], b["value"], rtol=1e-9, atol=1e-15)
    varying = _varying(X)
    lr = None if sparse.objective == "qbrank" else p["learning_rate"]
    for nodes, call in zip(sparse.trees, calls[n_calls:], strict=True):
        drawn = list(varying) if call["feats"] is None else [int(varying[i]) for i in call["feats"]]
        _check_tree(X, nodes, call, drawn, BoosterParams(**p), lr, p["l2_regularization"])
    raw = scores[-1]
    if sparse.update_rule == "averaged":
        raw = raw / (sparse.n_iterations + 1)
    np.testing.assert_array_equal(sparse.predict_raw(Xs).reshape(-1), raw.reshape(-1))
    np.testing.assert_array_equal(sparse.predict_raw(X).reshape(-1), raw.reshape(-1))


@pytest.mark.parametrize("seed", range(len(SEEDS) // 3))
def test_duplicated_columns_tie_to_the_first_one(seed, recorder, monkeypatch):
    """Two identical columns have the same gains at every node: the split goes to the
    first of them in column order (splitting.pick_split's "ties go to the feature that
    comes first"), under every criterion, with the OLE branch-and-bound forced (its
    docstring: the same split, ties to the first feature, as building every feature)."""
    monkeypatch.setattr(grower_mod, "OLE_BOUND_MIN_WORK", 0)
    monkeypatch.setattr(grower_mod, "OLE_BOUND_BLOCK", 1)
    X, y, sizes, w, p, rng = _problem(90_000 + seed)
    nf = X.shape[1]
    perm = rng.permutation(2 * nf)
    wide = np.hstack([X, X])[:, perm]  # column perm[j] of [X, X] at position j
    first = {}
    for j, c in enumerate(perm):
        first.setdefault(c % nf, j)
    p["colsample_bytree"] = 1.0
    p.pop("ole_top_features", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = train(BoosterParams(**p), make_dataset(wide, y, group=sizes, sample_weight=w))
    for nodes in model.trees:
        for f in nodes["feature_idx"][nodes["is_leaf"] == 0]:
            assert f == first[perm[f] % nf], (f, perm)


@pytest.mark.parametrize("criterion", ["newton", "se", "ole"])
def test_full_255_bins_and_the_missing_bin(criterion, recorder):
    """``max_bins=255`` with a column of exactly 255 values and NaN (bin 254 and the
    missing bin 255 of a uint8), one of 400 values (quantile bins) and one of two values:
    every split is the brute-force best over the bin thresholds, and predict equals the
    training scores."""
    from ltrboost.binning import BinMapper

    rng = np.random.default_rng(7)
    n = 700
    first = np.r_[np.arange(255.0), rng.integers(0, 255, n - 255)]
    first[255:][rng.random(n - 255) < 0.2] = np.nan  # every value stays
    X = np.column_stack(
        [
            rng.permutation(first),
            rng.normal(size=n).round(3),
            rng.integers(0, 2, n).astype(float),
        ]
    )
    X[rng.random(n) < 0.05, 2] = np.nan
    y = (X[:, 0] % 5 + (X[:, 1] > 0) + rng.integers(0, 2, n)).clip(0, 4)
    y[np.isnan(y)] = 0.0
    sizes = np.full(7, n // 7)
    p = BoosterParams(
        objective="lambdamart",
        split_criterion=criterion,
        n_estimators=3,
        learning_rate=0.3,
        max_leaf_nodes=12,
        min_samples_leaf=3,
        max_bins=255,
        min_samples_bin=1,
        n_threads=1,
    )
    calls, scores = recorder
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = train(p, make_dataset(X, y, group=sizes))
    binner = BinMapper(255, random_state=p.random_state, min_samples_bin=1).fit(X)
    assert binner.n_bins_non_missing_[0] == 255
    cuts = dict(enumerate(binner.bin_thresholds_))
    used = set()
    for nodes, call in zip(model.trees, calls, strict=True):
        _check_tree(X, nodes, call, [0, 1, 2], p, 0.3, 0.0, cuts)
        used |= set(nodes["feature_idx"][nodes["is_leaf"] == 0].tolist())
    assert 0 in used
    np.testing.assert_array_equal(model.predict_raw(X).reshape(-1), scores[-1].reshape(-1))

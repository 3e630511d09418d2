"""Adversarial property checks of the engine's exact shortcuts, on random small data
that the other tests do not use: NaN-heavy and constant features, one-bin and two-bin
features, ties, tiny and single queries, bagging, feature sampling, per-query weights,
small ``max_bins``, large ``min_samples_leaf``.

Each property compares an optimised path with a plain reference:

* a grown tree (every criterion, every growth policy, with the OLE branch-and-bound
  forced at every node and the pair-histogram subtraction on) against a brute-force
  search of eq. 9 / eq. 13 (seed 000) over every feature, threshold and missing side
  at every node, its leaf values against ``-G / (H_ole + lambda)``, and its unsplit
  leaves against the limits (``max_leaf_nodes``, ``max_depth``, ``min_gain_to_split``);
* trees with the branch-and-bound and the subtraction on vs off (same splits);
* MART under ``se`` / ``newton`` / ``ole`` (seed 000 Theorem 2: the same trees);
* the training scores vs ``Booster.predict_raw`` on the raw features (bit for bit),
  over odd float values (signed zeros, subnormals, float32 extremes, neighbours);
* ``n_threads=1`` vs 2 with every parallel / row-wise kernel forced on (bit for bit);
* continued training vs one uninterrupted run (bit for bit);
* each objective's gradient and hessian against finite differences of its loss.

Hypothesis draws only a seed (and a few switches); the data come from NumPy's
generator, so a failure prints a seed that reproduces it.
"""

from __future__ import annotations

import heapq
import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import ltrboost.booster as booster_mod  # noqa: E402
import ltrboost.grower as grower_mod  # noqa: E402
import ltrboost.histogram as histogram_mod  # noqa: E402
from ltrboost.binning import BinMapper  # noqa: E402
from ltrboost.booster import BoosterParams, make_objective, train  # noqa: E402
from ltrboost.criteria import OLE_HESSIAN_RTOL  # noqa: E402
from ltrboost.dataset import make_dataset  # noqa: E402
from ltrboost.grower import GrowerParams, TreeGrower  # noqa: E402
from ltrboost.histogram import HistogramBuilder, LocalHistograms  # noqa: E402

SETTINGS = dict(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SEEDS = st.integers(0, 2**32 - 1)


# --------------------------------------------------------------------------- helpers
def _score(g, h, l2):
    return g * g / (h + l2) if h + l2 > 0 else 0.0


class _Problem:
    """A random binned node problem: bins (NaN-heavy, few bins), gradients, hessians,
    pairs (rho >= 0, some zero) whose masses make the hessians (+ a pointwise part),
    a bag and a feature sample."""

    def __init__(self, seed: int):
        rng = np.random.default_rng(seed)
        self.n = n = int(rng.integers(6, 60))
        self.nf = nf = int(rng.integers(1, 6))
        nbins = int(rng.integers(1, 6))
        self.missing_bin = mb = nbins
        Xb = rng.integers(0, nbins, (n, nf)).astype(np.uint8)
        Xb[rng.random((n, nf)) < rng.uniform(0, 0.8)] = mb
        self.X_binned = np.asfortranarray(Xb)
        self.n_bins_non_missing = np.full(nf, nbins, np.int32)
        thr = np.tile(np.arange(mb + 1, dtype=float), (nf, 1))
        thr[:, nbins - 1 :] = np.inf
        self.thresholds = thr
        m = int(rng.integers(1, 4 * n))
        di = rng.integers(0, n, m)
        dj = rng.integers(0, n, m)
        keep = di != dj
        di, dj = di[keep].astype(np.int32), dj[keep].astype(np.int32)
        rho = (rng.uniform(0, 1, di.shape[0]) ** 2).astype(np.float32).astype(np.float64)
        rho[rng.random(rho.shape[0]) < 0.2] = 0.0
        point = rng.uniform(0, 0.3, n) * (rng.random() < 0.5)
        self.h = (np.bincount(di, rho, n) + np.bincount(dj, rho, n) + point).astype(np.float32)
        g = rng.normal(size=n).astype(np.float32)
        self.g = np.round(g).astype(np.float32) if rng.random() < 0.3 else g  # ties
        self.sample = None
        if rng.random() < 0.4:
            self.sample = np.sort(rng.choice(n, max(2, n * 2 // 3), replace=False)).astype(np.int32)
            bag = np.zeros(n, bool)
            bag[self.sample] = True
            keep = bag[di] & bag[dj]
            di, dj, rho = di[keep], dj[keep], rho[keep]
        self.pairs = (di, dj, rho)
        self.feats = None
        if nf > 1 and rng.random() < 0.3:
            self.feats = np.sort(rng.choice(nf, nf - 1, replace=False)).astype(np.int32)
        self.rng = rng

    def grow(self, params, use_pairs):
        tree = TreeGrower(
            self.X_binned,
            self.n_bins_non_missing,
            self.missing_bin,
            self.thresholds,
            params,
            n_threads=1,
        )
        pairs = self.pairs if use_pairs and self.pairs[0].shape[0] else None
        return tree.grow(self.g, self.h.copy(), self.sample, self.feats, pairs).nodes

    def side_sums(self, rows, left, ole):
        """(G, H, n) of the rows of ``rows`` in ``left`` (a mask over all rows), H less
        twice the rho of the pairs wholly inside them when ``ole``."""
        part = rows[left[rows]]
        g = self.g[part].astype(np.float64).sum()
        h = self.h[part].astype(np.float64).sum()
        if ole:
            di, dj, rho = self.pairs
            inside = np.zeros(self.n, bool)
            inside[part] = True
            h_all = h
            h -= 2.0 * rho[inside[di] & inside[dj]].sum()
            if abs(h) <= OLE_HESSIAN_RTOL * abs(h_all):  # float32 rounding, not curvature
                h = 0.0
        return g, h, part.shape[0]

    def gain(self, rows, left, criterion, l2):
        everything = np.ones(self.n, bool)
        ole = criterion == "ole"
        g, h, n = self.side_sums(rows, everything, ole)
        gl, hl, nl = self.side_sums(rows, left, ole)
        gr, hr, nr = self.side_sums(rows, ~left, ole)
        if criterion == "se":
            hl, hr, h = nl, nr, n
        return _score(gl, hl, l2) + _score(gr, hr, l2) - _score(g, h, l2)

    def coupled_gain(self, rows, left, l2):
        """The OLE gain that orders nodes and decides a split (``_two_leaf_gain``): the
        decrease of the two-leaf quadratic model with the crossing pairs' coupling
        ``-cross`` off the diagonal; eq. 13 when nothing crosses or the model is not
        positive definite."""
        di, dj, rho = self.pairs
        node = np.zeros(self.n, bool)
        node[rows] = True
        on_left = np.zeros(self.n, bool)
        on_left[rows[left[rows]]] = True
        on_right = node & ~on_left
        inside = node[di] & node[dj]
        crossing = inside & ((on_left[di] & on_right[dj]) | (on_right[di] & on_left[dj]))
        cross = rho[crossing].sum()
        gl, hl, _ = self.side_sums(rows, left, True)
        gr, hr, _ = self.side_sums(rows, ~left, True)
        g, h, _ = self.side_sums(rows, np.ones(self.n, bool), True)
        a, b = hl + l2, hr + l2
        det = a * b - cross * cross
        if cross == 0.0 or not (a > 0 and b > 0 and det > OLE_HESSIAN_RTOL * a * b):
            return _score(gl, hl, l2) + _score(gr, hr, l2) - _score(g, h, l2)
        return (b * gl * gl + 2 * cross * gl * gr + a * gr * gr) / det - _score(g, h, l2)

    def splits(self, rows, params):
        """Every valid split of the node: (eq. 9/13 or SE gain as asked, left mask)."""
        feats = range(self.nf) if self.feats is None else self.feats
        for f in feats:
            col = self.X_binned[:, f]
            for miss_left in (False, True):
                for b in range(int(self.n_bins_non_missing[f])):
                    left = np.where(col == self.missing_bin, miss_left, col <= b)
                    nl = int(left[rows].sum())
                    if min(nl, rows.shape[0] - nl) < max(1, params.min_samples_leaf):
                        continue
                    hl = self.h[rows[left[rows]]].astype(np.float64).sum()
                    hr = self.h[rows[~left[rows]]].astype(np.float64).sum()
                    if min(hl, hr) < params.min_sum_hessian_in_leaf:
                        continue
                    yield left

    def brute_force(self, rows, criterion, params):
        """The best gain over every feature, threshold and missing side (eq. 9 / 13
        over the side sums, the limits on the raw hessian sums and counts)."""
        l2 = params.l2_regularization
        gains = [self.gain(rows, left, criterion, l2) for left in self.splits(rows, params)]
        return max(gains, default=-np.inf)


def _check_tree_against_brute_force(pb: _Problem, nodes, params) -> None:
    crit = params.split_criterion
    l2 = params.l2_regularization
    n_leaves = int(nodes["is_leaf"].sum())
    assert n_leaves <= params.max_leaf_nodes
    everything = np.ones(pb.n, bool)
    stack = [(0, np.arange(pb.n) if pb.sample is None else pb.sample)]
    while stack:
        k, rows = stack.pop()
        nd = nodes[k]
        assert nd["count"] == rows.shape[0]
        if nd["is_leaf"]:
            g, h, _ = pb.side_sums(rows, everything, crit == "ole")
            expected = -g / (h + l2) if h + l2 > 0 else 0.0
            if k == 0 and nd["sum_hessians"] < params.min_sum_hessian_in_leaf:
                expected = 0.0  # a root alone under min_sum_hessian_in_leaf: no step
            np.testing.assert_allclose(nd["value"], expected, rtol=1e-6, atol=1e-9)
            if n_leaves < params.max_leaf_nodes and (
                params.max_depth is None or nd["depth"] < params.max_depth
            ):
                # a leaf left unsplit while leaves remain: no split is worth it (OLE:
                # the coupled gain of eq. 13's best splits)
                if crit != "ole":
                    assert pb.brute_force(rows, crit, params) <= params.min_gain_to_split + 1e-9
                else:
                    found = [
                        (pb.gain(rows, left, crit, l2), pb.coupled_gain(rows, left, l2))
                        for left in pb.splits(rows, params)
                    ]
                    if found:
                        eq13, coupled = np.array(found).T
                        best = np.isclose(eq13, eq13.max(), rtol=1e-9, atol=1e-12)
                        assert coupled[best].min() <= params.min_gain_to_split + 1e-6
            continue
        assert params.max_depth is None or nd["depth"] < params.max_depth
        f, b = int(nd["feature_idx"]), int(nd["bin_threshold"])
        col = pb.X_binned[:, f]
        left = np.where(col == pb.missing_bin, bool(nd["missing_go_to_left"]), col <= b)
        chosen = pb.gain(rows, left, crit, l2)
        best = pb.brute_force(rows, crit, params)
        assert chosen >= best - 1e-6 * max(1.0, abs(best)), (k, chosen, best)
        if crit == "ole":  # the node's reported gain is the coupled one
            np.testing.assert_allclose(
                nd["gain"], pb.coupled_gain(rows, left, l2), rtol=1e-5, atol=1e-7
            )
        assert min(left[rows].sum(), (~left[rows]).sum()) >= max(1, params.min_samples_leaf)
        stack += [(int(nd["left"]), rows[left[rows]]), (int(nd["right"]), rows[~left[rows]])]


def _random_grower_params(pb: _Problem, criterion: str) -> GrowerParams:
    rng = pb.rng
    return GrowerParams(
        split_criterion=criterion,
        max_leaf_nodes=int(rng.integers(2, 8)),
        max_depth=int(rng.integers(1, 4)) if rng.random() < 0.4 else None,
        min_samples_leaf=int(rng.integers(1, 6)),
        min_sum_hessian_in_leaf=float(rng.choice([0.0, 0.0, 0.5])),
        l2_regularization=float(rng.choice([0.0, 1.0])),
        min_gain_to_split=float(rng.choice([0.0, 0.0, 0.05, 0.5])),
        growth=str(rng.choice(["best_first", "breadth_first", "depth_first"])),
    )


# ------------------------------------------------------------------ grown trees
@settings(max_examples=60, **SETTINGS)
@given(seed=SEEDS, criterion=st.sampled_from(["ole", "ole", "newton", "se"]))
@example(seed=32044, criterion="ole")  # a root alone under min_sum_hessian_in_leaf
def test_grown_tree_is_the_brute_force_search_at_every_node(seed, criterion, monkeypatch):
    """Every split is a best one of eq. 9 / eq. 13 / SE over all features, thresholds
    and missing sides of its node (OLE: branch-and-bound at every node, one feature a
    step, and the pair-histogram subtraction on), leaf values are Newton's with the
    OLE hessian, and a leaf left unsplit while leaves remain has no split above
    ``min_gain_to_split``."""
    monkeypatch.setattr(grower_mod, "OLE_BOUND_MIN_WORK", 0)
    monkeypatch.setattr(grower_mod, "OLE_BOUND_BLOCK", 1)
    pb = _Problem(seed)
    params = _random_grower_params(pb, criterion)
    nodes = pb.grow(params, use_pairs=criterion == "ole")
    _check_tree_against_brute_force(pb, nodes, params)


@settings(max_examples=40, **SETTINGS)
@given(seed=SEEDS)
def test_ole_shortcuts_on_and_off_grow_the_same_splits(seed, monkeypatch):
    """Branch-and-bound (at every node, one feature a step) with the pair-histogram
    subtraction vs neither: the same splits (values may differ in the last bits: the
    subtraction sums in another order)."""
    pb = _Problem(seed)
    params = _random_grower_params(pb, "ole")
    monkeypatch.setattr(grower_mod, "OLE_BOUND_MIN_WORK", 0)
    monkeypatch.setattr(grower_mod, "OLE_BOUND_BLOCK", 1)
    fast = pb.grow(params, use_pairs=True)
    monkeypatch.setattr(grower_mod, "OLE_BRANCH_AND_BOUND", False)
    monkeypatch.setattr(grower_mod, "OLE_PAIR_SUBTRACTION", False)
    plain = pb.grow(params, use_pairs=True)
    for field in ("feature_idx", "bin_threshold", "missing_go_to_left", "is_leaf", "count"):
        np.testing.assert_array_equal(fast[field], plain[field])
    np.testing.assert_allclose(fast["value"], plain["value"], rtol=1e-9, atol=1e-12)


@settings(max_examples=30, **SETTINGS)
@given(seed=SEEDS)
def test_ole_top_features_is_exact_ole_over_the_top_newton_features(seed):
    """``ole_top_features=k`` (approximate OLE): at every node, the split is the best
    eq. 13 split over the ``k`` features of largest brute-force Newton gain (under the
    feature sample, the bag and the limits); nodes where the k-th place is a tie are
    only walked through."""
    pb = _Problem(seed)
    if pb.nf < 2:
        return
    params = _random_grower_params(pb, "ole")
    k = int(pb.rng.integers(1, pb.nf))
    params = params._replace(ole_top_features=k)
    nodes = pb.grow(params, use_pairs=True)
    sampled = np.arange(pb.nf) if pb.feats is None else pb.feats
    stack = [(0, np.arange(pb.n) if pb.sample is None else pb.sample)]
    while stack:
        i, rows = stack.pop()
        nd = nodes[i]
        if nd["is_leaf"]:
            continue
        f = int(nd["feature_idx"])
        col = pb.X_binned[:, f]
        left = np.where(
            col == pb.missing_bin, bool(nd["missing_go_to_left"]), col <= nd["bin_threshold"]
        )
        stack += [(int(nd["left"]), rows[left[rows]]), (int(nd["right"]), rows[~left[rows]])]
        newton = []
        for feature in sampled:
            pb.feats = np.array([feature], np.int32)
            newton.append(pb.brute_force(rows, "newton", params))
        newton = np.array(newton)
        kth = np.sort(newton)[::-1][min(k, newton.shape[0]) - 1]
        if newton.shape[0] > k and np.isclose(newton, kth, rtol=1e-9, atol=1e-12).sum() > 1:
            continue  # which features are the top k is a matter of rounding
        top = np.argsort(-newton, kind="stable")[:k]
        top = np.sort(top[np.isfinite(newton[top])])
        assert f in sampled[top]
        pb.feats = sampled[top].astype(np.int32)
        best = pb.brute_force(rows, "ole", params)
        chosen = pb.gain(rows, left, "ole", params.l2_regularization)
        assert abs(chosen - best) <= 1e-6 * max(1.0, abs(best)), (i, chosen, best)


def _leaf_partition(pb: _Problem, nodes) -> list[tuple[int, ...]]:
    """The rows of each leaf of a grown tree (sorted), walked over the bins."""
    leaves = []
    stack = [(0, np.arange(pb.n) if pb.sample is None else pb.sample)]
    while stack:
        i, rows = stack.pop()
        nd = nodes[i]
        if nd["is_leaf"]:
            leaves.append(tuple(sorted(rows.tolist())))
            continue
        col = pb.X_binned[:, int(nd["feature_idx"])]
        left = np.where(
            col == pb.missing_bin, bool(nd["missing_go_to_left"]), col <= nd["bin_threshold"]
        )
        stack += [(int(nd["left"]), rows[left[rows]]), (int(nd["right"]), rows[~left[rows]])]
    return sorted(leaves)


@settings(max_examples=40, **SETTINGS)
@given(seed=SEEDS)
def test_growth_policies_follow_a_plain_heap_reference(seed):
    """best-first (largest gain first), breadth-first (shallower first, left to right)
    and depth-first (children of the latest split first, left first), stopped at
    ``max_leaf_nodes``: the grown tree's leaves are those of a plain heapq grower over
    brute-force Newton splits (continuous gradients and hessians: no ties)."""
    pb = _Problem(seed)
    pb.g = pb.rng.normal(size=pb.n).astype(np.float32)
    pb.h = pb.rng.uniform(0.5, 2.0, pb.n).astype(np.float32)
    params = _random_grower_params(pb, "newton")
    params = params._replace(max_leaf_nodes=int(pb.rng.integers(2, 12)))
    grown = _leaf_partition(pb, pb.grow(params, use_pairs=False))

    def best_split(rows):
        best = None
        for left in pb.splits(rows, params):
            gain = pb.gain(rows, left, "newton", params.l2_regularization)
            if best is None or gain > best[0] + 1e-12:
                best = (gain, left)
        return best if best is not None and best[0] > params.min_gain_to_split else None

    heap, leaves, order = [], [], itertools.count()

    def consider(rows, depth, seq, side):
        splittable = rows.shape[0] >= max(2, 2 * params.min_samples_leaf) and (
            params.max_depth is None or depth < params.max_depth
        )
        split = best_split(rows) if splittable else None
        if split is None:
            leaves.append(tuple(sorted(rows.tolist())))
            return
        c = next(order)
        key = {
            "best_first": (-split[0], c),
            "breadth_first": (depth, c),
            "depth_first": (-seq, side),
        }[params.growth]
        heapq.heappush(heap, (key, c, rows, depth, split[1]))

    consider(np.arange(pb.n) if pb.sample is None else pb.sample, 0, 0, 0)
    n_leaves, n_splits = 1, 0
    while heap and n_leaves < params.max_leaf_nodes:
        _, _, rows, depth, left = heapq.heappop(heap)
        n_leaves += 1
        n_splits += 1
        parts = rows[left[rows]], rows[~left[rows]]
        for side, part in enumerate(parts):
            if n_leaves >= params.max_leaf_nodes:
                leaves.append(tuple(sorted(part.tolist())))
            else:
                consider(part, depth + 1, n_splits, side)
    leaves += [tuple(sorted(item[2].tolist())) for item in heap]
    assert grown == sorted(leaves)


# ------------------------------------------------------------------ training runs
class _Captured(list):
    """Training scores of the runs so far (a short repr: hypothesis prints it)."""

    def __repr__(self) -> str:
        return f"<training scores of {len(self)} runs>"


@pytest.fixture
def training_scores(monkeypatch):
    """The training scores of every ``train()`` call (appended, one array a run)."""
    captured = _Captured()
    run = booster_mod.Training.run

    def capture(self, *args, **kwargs):
        out = run(self, *args, **kwargs)
        captured.append(self.raw.copy())
        return out

    monkeypatch.setattr(booster_mod.Training, "run", capture)
    return captured


def _ranking_data(rng, max_queries=6, max_docs=25, max_features=5, weights=False):
    nq = int(rng.integers(1, max_queries + 1))
    sizes = rng.integers(1, max_docs + 1, nq)
    n = int(sizes.sum())
    f = int(rng.integers(1, max_features + 1))
    X = rng.integers(0, int(rng.integers(1, 6)), (n, f)).astype(float)
    X += rng.normal(size=(n, f)) * (rng.random(f) < 0.5)
    X[rng.random((n, f)) < rng.uniform(0, 0.7)] = np.nan
    if f > 2:
        X[:, 1] = np.where(np.isnan(X[:, 1]), np.nan, 3.0)  # constant but for NaN
    y = rng.integers(0, 4, n).astype(float)
    w = np.repeat(rng.uniform(0.2, 3.0, nq), sizes) if weights else None
    return X, y, sizes, w


def _same_models(a, b) -> bool:
    return len(a.trees) == len(b.trees) and all(
        np.array_equal(s, t) for s, t in zip(a.trees, b.trees, strict=True)
    )


OBJECTIVES = ["lambdamart", "ranknet", "rankboost", "mart", "mcrank", "gbrank", "qbrank"]
OBJECTIVES += ["logistic_rank", "yetirank"]


@settings(max_examples=25, **SETTINGS)
@given(seed=SEEDS, objective=st.sampled_from(OBJECTIVES))
def test_training_scores_threads_and_predict_agree(seed, objective, training_scores):
    """One random run: the training scores are ``predict_raw`` on the raw features bit
    for bit (the averaged rule: after its divisor), and ``n_threads=2`` with every
    parallel and row-wise kernel forced gives the same model and scores bit for bit."""
    rng = np.random.default_rng(seed)
    X, y, sizes, w = _ranking_data(rng, weights=rng.random() < 0.5)
    ds = make_dataset(X, y, group=sizes, sample_weight=w)
    criterion = str(rng.choice(["ole", "ole", "newton", "se"]))
    p = dict(
        objective=objective,
        n_estimators=3,
        max_leaf_nodes=int(rng.integers(2, 9)),
        min_samples_leaf=int(rng.integers(1, 6)),
        max_bins=int(rng.integers(2, 12)),
        split_criterion="newton" if objective == "mcrank" else criterion,
        subsample=float(rng.choice([1.0, 0.6])),
        colsample_bytree=float(rng.choice([1.0, 0.5])),
        growth=str(rng.choice(["best_first", "breadth_first", "depth_first"])),
        random_state=seed % 1000,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        serial = train(BoosterParams(**p, n_threads=1), ds)
        raw = training_scores[-1]
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(histogram_mod, "PARALLEL_MIN_WORK", 0)
            mp.setattr(histogram_mod, "HISTOGRAM_BALANCE_MIN_WORK", 0)
            mp.setattr(histogram_mod, "PAIR_SPLIT_PARALLEL", 0)
            mp.setattr(histogram_mod, "ROW_MAJOR_MAX_DENSITY", int(rng.choice([0, 10**6])))
            mp.setattr(histogram_mod, "PAIR_CHUNK", 3)
            mp.setattr(histogram_mod, "SERIAL_SUBTRACT_WORK", 0)
            threaded = train(BoosterParams(**p, n_threads=2), ds)
    assert _same_models(serial, threaded)
    np.testing.assert_array_equal(training_scores[-1], raw)
    predicted = np.asarray(serial.predict_raw(X))
    if serial.update_rule == "averaged":
        raw = raw / (serial.n_iterations + 1)
    if serial.n_outputs > 1:
        assert predicted.shape == (serial.n_outputs, X.shape[0])
    np.testing.assert_array_equal(predicted.reshape(-1), raw.reshape(-1))


@settings(max_examples=20, **SETTINGS)
@given(seed=SEEDS)
def test_mart_trees_are_the_same_under_se_newton_and_ole(seed):
    """Seed 000 Theorem 2: for MART (constant hessian, no weights) the three criteria
    are one; also with bagging, feature sampling, NaN-heavy and tied features."""
    rng = np.random.default_rng(seed)
    X, y, sizes, _ = _ranking_data(rng)
    ds = make_dataset(X, y, group=sizes)
    p = dict(
        objective="mart",
        n_estimators=3,
        max_leaf_nodes=int(rng.integers(2, 7)),
        min_samples_leaf=int(rng.integers(1, 4)),
        max_bins=int(rng.integers(2, 9)),
        subsample=float(rng.choice([1.0, 0.7])),
        colsample_bytree=float(rng.choice([1.0, 0.6])),
        random_state=seed % 1000,
    )
    models = [train(BoosterParams(**p, split_criterion=c), ds) for c in ("se", "newton", "ole")]
    for m in models[1:]:
        for a, b in zip(models[0].trees, m.trees, strict=True):
            for field in ("feature_idx", "bin_threshold", "missing_go_to_left", "is_leaf"):
                np.testing.assert_array_equal(a[field], b[field])
            np.testing.assert_allclose(a["value"], b["value"], rtol=1e-12, atol=1e-15)


@settings(max_examples=16, **SETTINGS)
@given(seed=SEEDS, objective=st.sampled_from(OBJECTIVES))
def test_continued_training_is_one_uninterrupted_run(seed, objective, training_scores):
    """1 round, then ``init_model`` to 3 rounds == 3 rounds at once (trees and training
    scores bit for bit), with bagging and feature sampling; ``predict(iteration=1)``
    of the long model is the 1-round model's prediction."""
    rng = np.random.default_rng(seed)
    X, y, sizes, _ = _ranking_data(rng, max_features=4)
    ds = make_dataset(X, y, group=sizes)
    p = dict(
        objective=objective,
        n_estimators=3,
        max_leaf_nodes=int(rng.integers(2, 7)),
        min_samples_leaf=int(rng.integers(1, 4)),
        max_bins=int(rng.integers(2, 9)),
        subsample=float(rng.choice([1.0, 0.7])),
        colsample_bytree=float(rng.choice([1.0, 0.6])),
        split_criterion="ole" if objective in ("lambdamart", "ranknet", "rankboost") else "newton",
        random_state=seed % 1000,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = train(BoosterParams(**p), ds)
        raw_full = training_scores[-1]
        part = train(BoosterParams(**{**p, "n_estimators": 1}), ds)
        cont = train(BoosterParams(**p), ds, init_model=part)
    assert _same_models(full, cont)
    np.testing.assert_array_equal(training_scores[-1], raw_full)
    np.testing.assert_array_equal(full.predict(X, iteration=1), part.predict(X))


ODD_VALUES = np.array(
    [
        *(0.0, -0.0, 1.0, np.nextafter(1.0, 2), np.nextafter(1.0, 0), 1e-310, -1e-310),
        *(5e-324, 1e38, 3.4028235e38, -3.4028235e38, 1e300, -1e300, 0.1, 0.2),
        *(0.30000000000000004, 0.3, np.nan, 16777216.0, 16777217.0),
    ]
)


@settings(max_examples=30, **SETTINGS)
@given(seed=SEEDS, dtype=st.sampled_from([np.float32, np.float64]), sparse=st.booleans())
def test_raw_prediction_routes_odd_values_as_their_bins(seed, dtype, sparse, training_scores):
    """Training scores (from bins) == ``predict_raw`` on the raw features, dense and
    sparse, float32 and float64, on values at float edges (signed zeros, subnormals,
    float32 extremes and neighbours, 2**24 and 2**24 + 1)."""
    rng = np.random.default_rng(seed)
    n, f = int(rng.integers(4, 80)), int(rng.integers(1, 4))
    with np.errstate(over="ignore"):
        X = rng.choice(ODD_VALUES, (n, f)).astype(dtype)
    X[np.isinf(X)] = 0.0
    y = rng.integers(0, 3, n).astype(float)
    ds = make_dataset(sp.csr_matrix(X) if sparse else X, y, group=[n])
    p = BoosterParams(
        objective="mart",
        n_estimators=3,
        max_leaf_nodes=8,
        min_samples_leaf=1,
        max_bins=int(rng.integers(2, 30)),
        learning_rate=1.0,
    )
    model = train(p, ds)
    raw = training_scores[-1].reshape(-1)
    for data in (X, sp.csr_matrix(X), X.astype(np.float64)):
        np.testing.assert_array_equal(np.asarray(model.predict_raw(data)).reshape(-1), raw)


@settings(max_examples=60, **SETTINGS)
@given(seed=SEEDS)
def test_bins_follow_the_thresholds_and_keep_few_distinct_values_apart(seed):
    """On one column of odd values (with or without many normal ones, float32-rounded
    or not, NaN): NaN is the missing bin, bins grow with the value, ``bin <= b`` iff
    ``x <= threshold[b]``, with ``min_samples_bin=1`` and at most ``max_bins`` distinct
    values each value has its own bin (-0.0 is 0.0), and a CSR copy bins the same."""
    rng = np.random.default_rng(seed)
    pool = ODD_VALUES
    if rng.random() < 0.5:
        pool = np.concatenate([pool, rng.normal(size=int(rng.integers(1, 400)))])
    col = rng.choice(pool, int(rng.integers(1, 300)))
    if rng.random() < 0.3:
        with np.errstate(over="ignore"):
            col = col.astype(np.float32).astype(np.float64)
    col[np.isinf(col)] = 0.0
    max_bins, min_samples_bin = int(rng.integers(2, 256)), int(rng.choice([1, 1, 3, 10]))
    binner = BinMapper(max_bins=max_bins, min_samples_bin=min_samples_bin).fit(col[:, None])
    bins = binner.transform(col[:, None])[:, 0].astype(int)
    thresholds = binner.thresholds_matrix()[0]
    present = ~np.isnan(col)
    assert (bins[~present] == binner.missing_bin_).all()
    v, b = col[present], bins[present]
    assert (b < binner.n_bins_non_missing_[0]).all()
    assert (np.diff(b[np.argsort(v, kind="stable")]) >= 0).all()
    assert (v <= thresholds[b]).all()
    assert not ((b > 0) & (v <= thresholds[np.maximum(b - 1, 0)])).any()
    distinct = np.unique(v).shape[0]
    if min_samples_bin == 1 and distinct <= max_bins:
        assert np.unique(b).shape[0] == distinct
    sparse = BinMapper(max_bins=max_bins, min_samples_bin=min_samples_bin)
    sparse.fit(sp.csr_matrix(col[:, None]))
    np.testing.assert_array_equal(sparse.thresholds_matrix(), binner.thresholds_matrix())
    np.testing.assert_array_equal(
        np.asarray(sparse.transform(sp.csr_matrix(col[:, None])))[:, 0], bins
    )


# ------------------------------------------------------------------- objectives
FD_OBJECTIVES = ["mart", "ranknet", "rankboost", "qbrank", "mcrank", "logistic_rank"]
FD_OBJECTIVES += ["lambdamart"]


@settings(max_examples=40, **SETTINGS)
@given(seed=SEEDS, objective=st.sampled_from(FD_OBJECTIVES), weighted=st.booleans())
def test_gradient_is_the_derivative_of_the_loss(seed, objective, weighted):
    """Central differences of each objective's loss (LambdaMART: with its pairs and
    |dZ| frozen, ``loss_fixed_weights``) are its gradient up to one positive factor,
    on tiny queries with tied scores and tied labels and one weight per query; its
    hessian is the loss's second difference (QBRank's is Algorithm 2's constant
    diagonal, not checked); a pairwise objective's OLE ``rho`` add up to the hessian."""
    rng = np.random.default_rng(seed)
    nq = int(rng.integers(1, 4))
    sizes = rng.integers(2, 7, nq)
    n = int(sizes.sum())
    y = rng.integers(0, 3, n).astype(float)
    w = np.repeat(rng.uniform(0.2, 3.0, nq), sizes) if weighted else None
    ds = make_dataset(rng.normal(size=(n, 2)), y, group=sizes, sample_weight=w)
    obj = make_objective(BoosterParams(objective=objective))
    obj.prepare(ds)
    n_out = obj.n_outputs(ds)
    s = rng.normal(size=(n_out, n)) if n_out > 1 else rng.normal(size=n)
    if rng.random() < 0.4:
        s = np.round(s)  # tied scores
    ref = s.copy()
    if hasattr(obj, "loss_fixed_weights"):

        def loss(t):
            return obj.loss_fixed_weights(t, ds, ref)
    else:

        def loss(t):
            return obj.loss(t, ds)

    g = np.zeros(s.shape, np.float32)
    h = np.zeros(s.shape, np.float32)
    obj.gradient_hessian(s, ds, g, h)
    eps = 1e-5
    d1 = np.zeros(s.shape)
    d2 = np.zeros(s.shape)
    for idx in np.ndindex(s.shape):
        up, down = s.copy(), s.copy()
        up[idx] += eps
        down[idx] -= eps
        d1[idx] = (loss(up) - loss(down)) / (2 * eps)
        d2[idx] = (loss(up) + loss(down) - 2 * loss(s)) / eps**2
    if not np.any(d1):
        assert not np.any(g)
        return
    factor = float(np.dot(g.ravel(), d1.ravel()) / np.dot(d1.ravel(), d1.ravel()))
    assert factor > 0
    np.testing.assert_allclose(g, factor * d1, rtol=1e-3, atol=1e-4)
    if objective not in ("qbrank", "mcrank"):
        np.testing.assert_allclose(h, factor * d2, rtol=2e-2, atol=2e-2)
    if getattr(obj, "is_pairwise", False) and objective != "qbrank":
        pt = obj.pair_terms(s, ds)
        per_doc = np.bincount(pt.doc_i, pt.rho, n) + np.bincount(pt.doc_j, pt.rho, n)
        np.testing.assert_allclose(per_doc, h, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------- the seams
@settings(max_examples=40, **SETTINGS)
@given(seed=SEEDS, criterion=st.sampled_from(["ole", "newton", "se"]))
def test_sharded_builder_grows_the_local_tree(seed, criterion, monkeypatch):
    """Rows cut into 2-3 shards at random places (pairs inside a shard, as whole
    queries give): the same splits and counts as one local shard, the values close
    (sums reduced in another order), and every split still the brute-force best
    (global counts for ``min_samples_leaf``, global sums for the gains)."""
    monkeypatch.setattr(grower_mod, "OLE_BOUND_MIN_WORK", 0)
    monkeypatch.setattr(grower_mod, "OLE_BOUND_BLOCK", 1)
    pb = _Problem(seed)
    params = _random_grower_params(pb, criterion)
    n = pb.n
    n_cuts = min(int(pb.rng.integers(1, 3)), n - 1)
    cuts = np.sort(pb.rng.choice(np.arange(1, n), n_cuts, replace=False))
    shard_of = np.searchsorted(cuts, np.arange(n), side="right")
    di, dj, rho = pb.pairs
    keep = shard_of[di] == shard_of[dj]
    pb.pairs = (di[keep], dj[keep], rho[keep])
    mass = np.bincount(pb.pairs[0], pb.pairs[2], n) + np.bincount(pb.pairs[1], pb.pairs[2], n)
    pb.h = (mass + 0.1).astype(np.float32)
    local = pb.grow(params, use_pairs=criterion == "ole")
    bounds = np.concatenate([[0], cuts, [n]])
    shards = [
        LocalHistograms(
            np.asfortranarray(pb.X_binned[lo:hi]),
            pb.missing_bin,
            1,
            row_start=int(lo),
            n_bins_non_missing=pb.n_bins_non_missing,
        )
        for lo, hi in itertools.pairwise(bounds)
    ]
    grower = TreeGrower(
        None,
        pb.n_bins_non_missing,
        pb.missing_bin,
        pb.thresholds,
        params,
        histograms=HistogramBuilder(shards),
    )
    pairs = pb.pairs if criterion == "ole" and pb.pairs[0].shape[0] else None
    sharded = grower.grow(pb.g, pb.h.copy(), pb.sample, pb.feats, pairs).nodes
    for field in ("feature_idx", "bin_threshold", "missing_go_to_left", "is_leaf", "count"):
        np.testing.assert_array_equal(sharded[field], local[field])
    np.testing.assert_allclose(sharded["value"], local["value"], rtol=1e-9, atol=1e-12)
    _check_tree_against_brute_force(pb, sharded, params)


@settings(max_examples=25, **SETTINGS)
@given(seed=SEEDS, objective=st.sampled_from(["lambdamart", "ranknet", "mart", "mcrank", "gbrank"]))
def test_validation_scores_from_bins_are_predict_raw_and_sparse_is_dense(
    seed, objective, monkeypatch
):
    """A validation set with NaN where training had none, values beyond the training
    range, and a column constant in training that varies: its scores (grown from its
    bins, round by round) are ``predict_raw`` on its raw features bit for bit; and the
    training set given as a SciPy CSR matrix (absent entries: zeros) trains the model
    of its dense copy, bit for bit."""
    captured = []
    run = booster_mod.Training.run

    def capture(self, *args, **kwargs):
        out = run(self, *args, **kwargs)
        captured.append([v.raw.copy() for v in self.valid])
        return out

    monkeypatch.setattr(booster_mod.Training, "run", capture)
    rng = np.random.default_rng(seed)
    nq = int(rng.integers(1, 6))
    sizes = rng.integers(2, 25, nq)
    n, f = int(sizes.sum()), int(rng.integers(1, 5))
    X = rng.integers(0, 4, (n, f)).astype(float) * (rng.random((n, f)) < 0.6)
    X += rng.normal(size=(n, f)) * (rng.random(f) < 0.3)
    if f > 1:
        X[:, -1] = 2.0  # constant in training
    y = rng.integers(0, 4, n).astype(float)
    nv = int(rng.integers(2, 30))
    Xv = rng.integers(-2, 7, (nv, f)).astype(float)
    Xv[rng.random((nv, f)) < 0.3] = np.nan
    valid = make_dataset(Xv, rng.integers(0, 4, nv).astype(float), group=[nv])
    p = BoosterParams(
        objective=objective,
        n_estimators=3,
        max_leaf_nodes=int(rng.integers(2, 8)),
        min_samples_leaf=int(rng.integers(1, 4)),
        max_bins=int(rng.integers(2, 12)),
        split_criterion="ole" if objective in ("lambdamart", "ranknet") else "newton",
        random_state=seed % 1000,
    )
    dense = train(p, make_dataset(X, y, group=sizes), valid_sets=[("v", valid)])
    scores = captured[-1][0]
    if dense.update_rule == "averaged":
        scores = scores / (dense.n_iterations + 1)
    np.testing.assert_array_equal(np.asarray(dense.predict_raw(Xv)).reshape(-1), scores.ravel())
    sparse = train(p, make_dataset(sp.csr_matrix(X), y, group=sizes))
    assert _same_models(dense, sparse)


# ------------------------------------------------------------------ found bugs
def test_ole_leaf_of_whole_queries_has_no_step():
    """A node that holds every document of its queries has no pairwise curvature and no
    gradient (shifting whole queries moves no pair's loss): eq. 13 gives H_ole = 0 and
    G = 0, so no split between whole queries gains anything and its leaf value is 0.
    Here the only feature is the query index, so every split separates whole queries."""
    rng = np.random.default_rng(8)
    sizes = rng.integers(5, 40, 3)
    n = int(sizes.sum())
    X = np.repeat(np.arange(3.0), sizes)[:, None]
    y = rng.integers(0, 4, n).astype(float)
    p = BoosterParams(
        objective="lambdamart",
        split_criterion="ole",
        n_estimators=1,
        max_leaf_nodes=3,
        min_samples_leaf=1,
        learning_rate=1.0,
    )
    model = train(p, make_dataset(X, y, group=sizes))
    values = model.trees[0]["value"]
    assert np.abs(values).max() <= 1e-6, values  # was a leaf of 89.6


def test_ole_single_leaf_tree_of_a_pairwise_loss_is_zero():
    """``min_samples_leaf`` = every document: each tree is its root alone, which holds
    every pair and every whole query, so under eq. 13 its value is 0 (newton gives
    ~1e-9: G is rounding noise over a large H)."""
    rng = np.random.default_rng(10)
    sizes = rng.integers(5, 40, 3)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 2))
    y = rng.integers(0, 4, n).astype(float)
    ds = make_dataset(X, y, group=sizes)
    p = dict(objective="lambdamart", n_estimators=1, min_samples_leaf=n)
    newton = train(BoosterParams(**p, split_criterion="newton"), ds)
    assert abs(newton.trees[0]["value"][0]) <= 1e-6
    ole = train(BoosterParams(**p, split_criterion="ole"), ds)
    assert abs(ole.trees[0]["value"][0]) <= 1e-6, ole.trees[0]["value"]  # was 0.777

"""How much pair-histogram work a tighter OLE gain bound would prune (issue 16 item 1).

Exact OLE's branch-and-bound (``TreeGrower._ole_split``) builds pair histograms only for
the features whose upper bound of the OLE gain (eq. 13 of seed 000) reaches the best exact
gain found so far.  A side's one-leaf hessian is ``H_side = sum h_d - 2 W_side``, ``W_side``
the ``rho`` of the node's pairs wholly in the side, and with ``O``, ``I`` the ``rho`` of the
pairs whose preferred / other document is in the side and ``X`` the ``rho`` of the pairs the
threshold cuts, ``W_side = (O + I - X) / 2`` (every ``rho >= 0``).  The bound must replace
``X`` by something below it that needs no pair histogram:

* ``global`` (today's, :func:`ltrboost.splitting.ole_gain_bounds`): ``|O - I|`` over the
  side, i.e. ``W_side <= min(O, I)``;
* ``per-query``: ``sum_q |O_q - I_q|`` (a cut pair lies in one query, so each query's
  cut mass is at least its own imbalance): as tight or tighter, but it needs each
  query's documents in bin order for every feature;
* ``buckets``: the same over ``--buckets`` random groups of queries (one more
  histogram channel per group; between the two).

For every node of a few OLE LambdaMART trees (31 leaves, top-30 pairs, the subtraction
trick off so that every node is analysed from its own pairs), this script computes every
feature's exact best gain and its three bounds in NumPy, and counts the pair work
(node pairs x features) that an *oracle* branch-and-bound would still build: the
features whose bound reaches the node's best exact gain.  It counts work, not time: the
bounds' own passes cost extra (``global``: one histogram pass over the node's rows;
``per-query``: a pass over the rows in (query, bin) order per feature).

    python -m bench.ole_bound_tightness                       # MQ2008 Fold1 (../shared)
    python -m bench.ole_bound_tightness --docs 20000 --trees 3  # synthetic, long queries
"""

from __future__ import annotations

import argparse

import numpy as np

import ltrboost.grower as grower_mod
from bench.bench_criteria import _data
from ltrboost.booster import BoosterParams, train

BOUNDS = ("global", "per-query", "buckets")


def _exact_score(g, h, lam):
    """eq. 13's side score: G^2 / (H + lam), 0 where the denominator is not positive."""
    den = h + lam
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, g * g / den, 0.0)


def _bound_score(g, a, lam):
    """A side's score bound from a hessian lower bound ``a``: +inf where ``a + lam <= 0``."""
    den = a + lam
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, g * g / den, np.where(g != 0, np.inf, 0.0))


class Tally:
    def __init__(self, query_of_row: np.ndarray, n_buckets: int, seed: int = 0) -> None:
        self.query_of_row = query_of_row
        n_queries = int(query_of_row.max()) + 1
        self.bucket_of_query = np.random.default_rng(seed).integers(0, n_buckets, n_queries)
        self.n_queries, self.n_buckets = n_queries, n_buckets
        self.work = {"all": 0, "root": 0}
        self.needed = {(b, w): 0 for b in BOUNDS for w in ("all", "root")}
        self.nodes = 0

    def node(self, grower, node, feats) -> None:
        shard = grower.histograms.shards[0]
        rows_handle = node.rows if hasattr(node.rows, "start") else node.rows[0]
        rows = shard._part[rows_handle.start : rows_handle.stop].astype(np.int64)
        pairs, live = shard._pairs, shard._live
        cnt = live[rows].astype(np.int64)
        if len(feats) == 0 or cnt.sum() == 0:
            return
        di = np.repeat(rows, cnt)
        first = np.repeat(pairs.ptr[rows].astype(np.int64) - np.cumsum(cnt) + cnt, cnt)
        p = first + np.arange(di.shape[0])
        dj = di + pairs.offset[p].astype(np.int64)
        rho = pairs.rho[p].astype(np.float64)
        if (rho < 0).any():
            return
        n_all = shard.X_binned.shape[0]
        out_d = np.bincount(di, rho, minlength=n_all)[rows]
        in_d = np.bincount(dj, rho, minlength=n_all)[rows]
        delta = out_d - in_d
        qr = self.query_of_row[rows]
        br_bucket = self.bucket_of_query[qr]
        lam = grower.splitter.params.l2_regularization
        msl = grower.splitter.params.min_samples_leaf
        g_tot, h_tot, n_tot = node.sum_gradients, node.sum_hessians, node.count
        pair_sum = rho.sum()
        parent = _exact_score(np.array(g_tot), np.array(h_tot - 2 * pair_sum), lam)
        m = node.hist.shape[1]
        exact, bounds = [], {b: [] for b in BOUNDS}
        for f in feats:
            hf = node.hist[f]
            gl, hl, nl = (np.cumsum(hf[:-1, c]) for c in range(3))
            gr, hr, nr = g_tot - gl, h_tot - hl, n_tot - nl
            valid = (nl >= msl) & (nr >= msl)
            if not valid.any():
                exact.append(-np.inf)
                for b in BOUNDS:
                    bounds[b].append(-np.inf)
                continue
            col = shard.X_binned[:, f]
            bi, bj, br = (col[r].astype(np.int64) for r in (di, dj, rows))
            wl = np.cumsum(np.bincount(np.maximum(bi, bj), rho, minlength=m))[:-1]
            wr = pair_sum - np.cumsum(np.bincount(np.minimum(bi, bj), rho, minlength=m))[:-1]
            ex = _exact_score(gl, hl - 2 * wl, lam) + _exact_score(gr, hr - 2 * wr, lam) - parent
            exact.append(ex[valid].max())
            ol = np.cumsum(np.bincount(br, out_d, minlength=m))[:-1]
            il = np.cumsum(np.bincount(br, in_d, minlength=m))[:-1]
            o_r, i_r = out_d.sum() - ol, in_d.sum() - il
            cuts = {"global": np.abs(ol - il)}
            for name, group, k in (
                ("per-query", qr, self.n_queries),
                ("buckets", br_bucket, self.n_buckets),
            ):
                per = np.bincount(group * m + br, delta, minlength=k * m).reshape(k, m)
                cuts[name] = np.abs(np.cumsum(per, axis=1)[:, :-1]).sum(0)
            for b in BOUNDS:
                x = cuts[b]
                s = (
                    _bound_score(gl, hl - (ol + il - x), lam)
                    + _bound_score(gr, hr - (o_r + i_r - x), lam)
                    - parent
                )
                bounds[b].append(s[valid].max())
        exact = np.array(exact)
        best = exact.max()
        if not np.isfinite(best):
            return
        threshold = best - (1e-9 * abs(best) + 1e-12)
        n_pairs = rho.shape[0]
        self.nodes += 1
        for where in ("all", "root") if node.depth == 0 else ("all",):
            self.work[where] += n_pairs * len(feats)
            for b in BOUNDS:
                bound = np.array(bounds[b])
                assert (bound >= exact - 1e-6 * abs(best)).all(), f"{b} bound below the exact gain"
                self.needed[(b, where)] += n_pairs * int(np.sum(bound >= threshold))


def measure(ds, trees: int, n_buckets: int) -> Tally:
    offsets = np.asarray(ds.query_offsets)
    tally = Tally(np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets)), n_buckets)
    original_split = grower_mod.TreeGrower._ole_split
    original_subtraction = grower_mod.OLE_PAIR_SUBTRACTION

    def spy(self, node, feats):
        info = original_split(self, node, feats)
        tally.node(self, node, feats)
        return info

    grower_mod.TreeGrower._ole_split = spy
    grower_mod.OLE_PAIR_SUBTRACTION = False  # each node from its own pairs
    try:
        params = dict(
            objective="lambdamart", split_criterion="ole", learning_rate=0.1,
            max_leaf_nodes=31, min_samples_leaf=20, max_bins=255, n_threads=2,
            truncation_level=30, n_estimators=trees,
        )  # fmt: skip
        train(BoosterParams(**params), ds)
    finally:
        grower_mod.TreeGrower._ole_split = original_split
        grower_mod.OLE_PAIR_SUBTRACTION = original_subtraction
    return tally


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=0, help="synthetic documents (0: MQ2008 Fold1)")
    ap.add_argument("--trees", type=int, default=10)
    ap.add_argument("--buckets", type=int, default=16)
    args = ap.parse_args(argv)
    if args.trees < 1 or args.buckets < 1 or args.docs < 0:
        ap.error("--trees and --buckets must be >= 1, --docs >= 0")
    ds = _data({"data": "mq2008" if args.docs == 0 else str(args.docs)})
    tally = measure(ds, args.trees, args.buckets)
    name = "MQ2008 Fold1" if args.docs == 0 else f"synthetic {args.docs:,}"
    print(f"{name}, {args.trees} trees, {tally.nodes} nodes; pair work (pairs x features):")
    print(f"all nodes {tally.work['all']:,}, roots {tally.work['root']:,}")
    print("| bound | oracle builds, all nodes | roots |")
    print("|---|---|---|")
    for b in BOUNDS:
        label = f"{b} ({args.buckets})" if b == "buckets" else b
        share = tally.needed[(b, "all")] / tally.work["all"]
        root = tally.needed[(b, "root")] / max(tally.work["root"], 1)
        print(f"| {label} | {share:.3f} | {root:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

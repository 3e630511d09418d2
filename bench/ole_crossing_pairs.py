"""How much pair-histogram work the subtraction trick would save OLE (issue 16).

Exact OLE builds the pair histograms of both children of every split from the pairs
wholly inside each child.  The subtraction trick would build the smaller child's only and
get the larger one's as parent - smaller child - crossing pairs (one document on each
side), so its work is ``P_small + P_crossing`` pairs against ``P_left + P_right``.
Pairs lie inside queries, so how many cross a split is an empirical question: this
script trains LambdaMART with OLE splits, replays each tree on the pairs of its round
(``pair_terms`` at the scores before it) and counts, per split, the pairs that go left,
right and across.

    python -m bench.ole_crossing_pairs                 # MQ2008 Fold1 (../shared)
    python -m bench.ole_crossing_pairs --docs 100000   # synthetic, long queries

Counts pairs, not time: the kernels' cost per pair is the same either way, but the
trick adds a three-way pair partition, the parent's histogram kept until both children
are done and one subtraction per feature and bin.
"""

from __future__ import annotations

import argparse

import numpy as np

from bench.bench_criteria import _data
from ltrboost.booster import BoosterParams, train
from ltrboost.objectives.registry import get_objective


def _leaf_values(tree: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Each row's leaf value (``x <= num_threshold`` goes left; no missing values)."""
    node = np.zeros(X.shape[0], dtype=np.int64)
    rows = np.arange(X.shape[0])
    while True:
        nd = tree[node]
        inner = nd["is_leaf"] == 0
        if not inner.any():
            return nd["value"]
        left = X[rows, nd["feature_idx"]] <= nd["num_threshold"]
        node = np.where(inner, np.where(left, nd["left"], nd["right"]), node)


def count(X: np.ndarray, ds, trees: int = 20) -> dict:
    params = dict(
        objective="lambdamart", split_criterion="ole", learning_rate=0.1, max_leaf_nodes=31,
        min_samples_leaf=20, max_bins=255, n_threads=2, truncation_level=30,
        n_estimators=trees,
    )  # fmt: skip
    booster = train(BoosterParams(**params), ds)
    objective = get_objective("lambdamart", truncation_level=30)
    raw = np.full(X.shape[0], float(np.ravel(booster.init_score)[0]))
    both = trick = 0
    crossing_share = []
    for t, tree in enumerate(booster.trees):
        pt = objective.pair_terms(raw, ds, iteration=t)
        di = pt.doc_i.astype(np.int64)
        dj = pt.doc_j.astype(np.int64)
        stack = [(0, np.arange(di.shape[0]))]
        while stack:
            node, pairs = stack.pop()
            nd = tree[node]
            if nd["is_leaf"]:
                continue
            f, thr = nd["feature_idx"], nd["num_threshold"]
            li = X[di[pairs], f] <= thr
            lj = X[dj[pairs], f] <= thr
            left, right = pairs[li & lj], pairs[~li & ~lj]
            n_cross = int(np.count_nonzero(li != lj))
            both += left.shape[0] + right.shape[0]
            trick += min(left.shape[0], right.shape[0]) + n_cross
            if pairs.shape[0]:
                crossing_share.append(n_cross / pairs.shape[0])
            stack += [(nd["left"], left), (nd["right"], right)]
        raw = raw + _leaf_values(tree, X)
    assert np.array_equal(raw, booster.predict(X)), "the replay is not the model"
    return {
        "splits": len(crossing_share),
        "both_children": both,
        "subtraction": trick,
        "crossing_median": float(np.median(crossing_share)),
        "crossing_mean": float(np.mean(crossing_share)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=0, help="synthetic documents (0: MQ2008)")
    ap.add_argument("--trees", type=int, default=20)
    args = ap.parse_args(argv)
    spec = {"data": str(args.docs) if args.docs else "mq2008"}
    ds = _data(spec)
    r = count(np.asarray(ds.X, dtype=np.float64), ds, args.trees)
    print(
        f"{spec['data']}: {args.trees} trees, {r['splits']} splits; pairs histogrammed "
        f"today (both children) {r['both_children']}, with the subtraction trick (smaller "
        f"child + crossing) {r['subtraction']}: {r['subtraction'] / r['both_children']:.2f}x; "
        f"crossing share of a split's pairs: median {r['crossing_median']:.2f}, mean "
        f"{r['crossing_mean']:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

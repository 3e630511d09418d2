"""Approximate OLE (``ole_top_features=k``) against exact OLE: split agreement, NDCG, time.

Usage::

    python -m bench.bench_ole_topk [--trees 50] [--synthetic 100000] [--synthetic-trees 20]
                                   [--k 5 10 20] [--threads 2]

``ole_top_features=k`` builds the pair histograms (seed 000, eq. 13) of only the ``k``
features of best Newton gain at each node.  For each data set this script

1. grows exact-OLE LambdaMART trees and, at every node the grower considers, also
   computes the split each ``k`` would choose from the same histograms: the share of
   nodes where feature, threshold or missing side differ ("split differs");
2. trains each variant end to end (exact OLE, each ``k``, and Newton) with the same
   settings and reports test NDCG@10 after the last tree and the training time (a
   second, warm run; compilation excluded).

Settings as ``bench_criteria``: LambdaMART truncated at 30, 31 leaves best-first,
learning rate 0.1, >= 20 documents per leaf, 255 bins.  Data: MQ2008 Fold1 train/test
from ``../shared/data`` and ``make_ranking_mslr_like`` (train: first 80% of the queries
of ``--synthetic`` documents, test: the rest).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from bench._common import SHARED_DATA, machine_description, markdown_table


def _datasets(n_synthetic: int):
    from ltrboost.dataset import make_dataset

    out = []
    fold = SHARED_DATA / "MQ2008" / "Fold1"
    if fold.exists():
        from ltrboost.io.letor import load_svmlight

        tr = load_svmlight(str(fold / "train.txt"))
        te = load_svmlight(str(fold / "test.txt"), n_features=tr.X.shape[1])
        train_set = make_dataset(tr.X, tr.y, qid=tr.qid)
        out.append(("MQ2008 Fold1", train_set, make_dataset(te.X, te.y, qid=te.qid)))
    if n_synthetic > 0:
        from ltrboost.datasets import make_ranking_mslr_like

        X, y, q = make_ranking_mslr_like(n_synthetic, random_state=0)
        cut = int(np.searchsorted(q, np.unique(q)[int(0.8 * len(np.unique(q)))]))
        out.append(
            (
                f"synthetic {n_synthetic:,}",
                make_dataset(X[:cut], y[:cut], qid=q[:cut]),
                make_dataset(X[cut:], y[cut:], qid=q[cut:]),
            )
        )
    return out


def _params(threads: int, **kw) -> dict:
    p = dict(
        objective="lambdamart",
        learning_rate=0.1,
        max_leaf_nodes=31,
        min_samples_leaf=20,
        max_bins=255,
        n_threads=threads,
        truncation_level=30,
        eval_metric="ndcg@10",
    )
    p.update(kw)
    return p


def split_agreement(train_set, trees: int, ks: list[int], threads: int) -> tuple[dict, int]:
    """Share of the nodes of exact-OLE trees where top-k OLE picks a different split."""
    from ltrboost.booster import BoosterParams, train
    from ltrboost.grower import TreeGrower

    differ = {k: 0 for k in ks}
    seen = [0]
    orig = TreeGrower._consider

    def consider(self, node, heap, order):
        if self._use_pairs and node.hist is not None:
            feats = self._ole_features(node)  # exact: every feature with a valid split
            if feats.shape[0] > 0:
                pair_hist, pair_sum = self.histograms.pair_histogram(node.rows, feats)
                args = (node.hist,)
                tail = (node.sum_gradients, node.sum_hessians, node.count)
                exact = self.splitter.find_split(
                    *args, feats, *tail, pair_hist=pair_hist, pair_sum=pair_sum
                )
                gains = self.splitter.newton_gains(node.hist, feats, *tail)
                order_k = np.argsort(-gains, kind="stable")
                seen[0] += 1
                for k in ks:
                    top = order_k[:k]
                    top = np.sort(top[np.isfinite(gains[top])])
                    approx = self.splitter.find_split(
                        *args, feats[top], *tail, pair_hist=pair_hist, pair_sum=pair_sum
                    )
                    key_e = None if exact is None else exact[1:4]
                    key_a = None if approx is None else approx[1:4]
                    differ[k] += key_e != key_a
        return orig(self, node, heap, order)

    TreeGrower._consider = consider
    try:
        train(
            BoosterParams(**_params(threads, split_criterion="ole", n_estimators=trees)), train_set
        )
    finally:
        TreeGrower._consider = orig
    return {k: differ[k] / max(seen[0], 1) for k in ks}, seen[0]


def run_variant(train_set, test_set, trees: int, threads: int, **kw) -> tuple[float, float]:
    from ltrboost.booster import BoosterParams, train

    params = BoosterParams(**_params(threads, n_estimators=trees, **kw))
    train(BoosterParams(**_params(threads, n_estimators=2, **kw)), train_set)  # compile
    t0 = time.perf_counter()
    b = train(params, train_set, [("test", test_set)])
    seconds = time.perf_counter() - t0
    return float(b.evals_result["test"]["ndcg@10"][-1]), seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", type=int, default=50, help="trees on MQ2008 Fold1")
    ap.add_argument("--synthetic", type=int, default=100_000, help="documents (0: skip)")
    ap.add_argument("--synthetic-trees", type=int, default=20)
    ap.add_argument("--k", type=int, nargs="+", default=[5, 10, 20])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    rows = []
    for label, tr, te in _datasets(args.synthetic):
        trees = args.trees if label.startswith("MQ2008") else args.synthetic_trees
        share, nodes = split_agreement(tr, trees, args.k, args.threads)
        variants = [("newton", dict(split_criterion="newton"), None)]
        variants.append(("ole exact", dict(split_criterion="ole"), 0.0))
        for k in args.k:
            variants.append(
                (f"ole k={k}", dict(split_criterion="ole", ole_top_features=k), share[k])
            )
        for name, kw, diff in variants:
            ndcg, secs = run_variant(tr, te, trees, args.threads, **kw)
            d = "" if diff is None else f"{100 * diff:.1f}% of {nodes}"
            rows.append([label, str(trees), name, d, f"{ndcg:.4f}", f"{secs:.2f}"])
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    header = ["data", "trees", "criterion", "split differs from exact", "test NDCG@10", "train s"]
    print(f"Machine: {machine_description()}\n")
    print(
        f"Command: `python -m bench.bench_ole_topk --trees {args.trees} --synthetic "
        f"{args.synthetic} --synthetic-trees {args.synthetic_trees} --k "
        f"{' '.join(map(str, args.k))} --threads {args.threads}`\n"
    )
    print(markdown_table(header, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

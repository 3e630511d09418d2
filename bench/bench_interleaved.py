"""Time per tree, ltrboost vs LightGBM, alternated in one process (for drifting machines).

Usage::

    python -m bench.bench_interleaved [--docs 500000] [--pairs 5] [--trees 21] [--threads 2]

``bench_speed`` runs each library's repeats one after the other, so a machine whose speed
drifts (a shared virtual machine: ±20% within minutes) puts the drift on one side of the
ratio.  Here both libraries train on the same arrays in the same process, one after the
other, ``--pairs`` times; each time per tree is taken from the clock at the end of
each round (a per-round callback in both libraries): ``(end of round --trees - end of
round 1) / (--trees - 1)``, so binning, set-up and the first round stay out, and the
ratio is taken per pair.  (It used to be ``(fit of --trees trees - fit of 1 tree) /
(--trees - 1)``; ltrboost's set-up, which bins the data again in every fit (~2.5 s at
500k, ±0.25 s), then added ±12 ms to each tree.)  The median is reported with a
bootstrap 90% interval over the pairs.
Data and settings are ``bench_speed``'s (its cached ``make_ranking_mslr_like`` arrays;
LambdaMART / ``lambdarank``, 31 leaves, 255 bins, learning rate 0.1, at least 20
documents per leaf, pairs truncated at 30).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from bench._common import group_sizes
from bench.bench_speed import data_paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=500_000)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--trees", type=int, default=21)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    if args.trees < 2 or args.pairs < 1:  # a tree is (end of round --trees - end of round 1)
        ap.error("--trees must be at least 2 and --pairs at least 1")
    import lightgbm as lgb

    import ltrboost

    paths = data_paths(args.docs)
    X, y, q = (np.load(paths[k]) for k in ("Xtr", "ytr", "qtr"))
    ds = ltrboost.make_dataset(X, y, qid=q)
    ours = dict(
        objective="lambdamart", max_leaf_nodes=31, learning_rate=0.1, min_samples_leaf=20,
        max_bins=255, truncation_level=30, n_threads=args.threads,
    )  # fmt: skip
    dtrain = lgb.Dataset(
        X, y, group=group_sizes(q),
        params={"max_bin": 255, "verbose": -1, "num_threads": args.threads},
    )  # fmt: skip
    dtrain.construct()
    theirs = {
        "objective": "lambdarank", "num_leaves": 31, "learning_rate": 0.1,
        "min_data_in_leaf": 20, "max_bin": 255, "lambdarank_truncation_level": 30,
        "num_threads": args.threads, "verbose": -1,
    }  # fmt: skip

    def fit(lib: str, n: int) -> list[float]:
        """Train ``n`` trees; the clock at the end of each round."""
        ends: list[float] = []

        def tick(env: object) -> None:
            ends.append(time.perf_counter())

        if lib == "ltrboost":
            ltrboost.train(dict(ours, n_estimators=n), ds, callbacks=[tick])
        else:
            lgb.train(theirs, dtrain, num_boost_round=n, callbacks=[tick])
        return ends

    def per_tree(lib: str) -> float:
        ends = fit(lib, args.trees)
        return (ends[-1] - ends[0]) / (len(ends) - 1) * 1e3

    fit("ltrboost", 1)  # compile / warm up both
    fit("lightgbm", 1)
    print(f"{args.docs} documents, {args.threads} threads, {args.trees} trees a fit")
    print("| pair | ltrboost ms/tree | LightGBM ms/tree | ratio |")
    print("|---|---|---|---|")
    ratios = []
    for k in range(args.pairs):
        a = per_tree("ltrboost")
        b = per_tree("lightgbm")
        ratios.append(a / b)
        print(f"| {k + 1} | {a:.1f} | {b:.1f} | {a / b:.3f} |", flush=True)
    med = statistics.median(ratios)
    rng = np.random.default_rng(0)
    boot = np.median(rng.choice(ratios, size=(10_000, len(ratios))), axis=1)
    lo, hi = np.quantile(boot, [0.05, 0.95])
    print(
        f"median ratio {med:.3f} (bootstrap 90% interval {lo:.3f}-{hi:.3f}; "
        f"min {min(ratios):.3f}, max {max(ratios):.3f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Time per tree, ltrboost vs LightGBM, alternated in one process (for drifting machines).

Usage::

    python -m bench.bench_interleaved [--docs 500000] [--pairs 5] [--trees 21] [--threads 2]
                                      [--quantized K]

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

``--quantized K`` adds two runs to every round of the comparison: ltrboost with
``quantized_gradients=K`` and LightGBM with ``use_quantized_grad=True,
num_grad_quant_bins=K, quant_train_renew_leaf=True`` (the same method: stochastic
rounding, leaves renewed from the exact gradients); each is timed against LightGBM's
default (exact) run of the same round, and the quantised pair against each other.
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
    ap.add_argument(
        "--quantized", type=int, default=0, metavar="K",
        help="also time ltrboost quantized_gradients=K and LightGBM use_quantized_grad "
        "(num_grad_quant_bins=K)",
    )  # fmt: skip
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

    k = args.quantized
    theirs_q = dict(
        theirs, use_quantized_grad=True, num_grad_quant_bins=k, quant_train_renew_leaf=True
    )

    def fit(lib: str, n: int) -> list[float]:
        """Train ``n`` trees; the clock at the end of each round."""
        ends: list[float] = []

        def tick(env: object) -> None:
            ends.append(time.perf_counter())

        if lib == "ltrboost":
            ltrboost.train(dict(ours, n_estimators=n), ds, callbacks=[tick])
        elif lib == "ltrboost-q":
            ltrboost.train(dict(ours, n_estimators=n, quantized_gradients=k), ds, callbacks=[tick])
        elif lib == "lightgbm-q":
            lgb.train(theirs_q, dtrain, num_boost_round=n, callbacks=[tick])
        else:
            lgb.train(theirs, dtrain, num_boost_round=n, callbacks=[tick])
        return ends

    def per_tree(lib: str) -> float:
        ends = fit(lib, args.trees)
        return (ends[-1] - ends[0]) / (len(ends) - 1) * 1e3

    libs = ["ltrboost", "lightgbm"] + (["ltrboost-q", "lightgbm-q"] if k else [])
    for lib in libs:  # compile / warm up each
        fit(lib, 1)
    print(f"{args.docs} documents, {args.threads} threads, {args.trees} trees a fit")
    # ratios: (numerator, denominator) of the runs of one round
    pairs = [("ltrboost", "lightgbm")]
    if k:
        pairs += [("ltrboost-q", "lightgbm"), ("ltrboost-q", "lightgbm-q")]
    heads = [f"{lib} ms/tree" for lib in libs] + [f"{a} / {b}" for a, b in pairs]
    print("| round | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(heads))
    ratios: dict[tuple[str, str], list[float]] = {p: [] for p in pairs}
    for r in range(args.pairs):
        t = {lib: per_tree(lib) for lib in libs}
        for a, b in pairs:
            ratios[(a, b)].append(t[a] / t[b])
        cells = [f"{t[lib]:.1f}" for lib in libs] + [f"{t[a] / t[b]:.3f}" for a, b in pairs]
        print(f"| {r + 1} | " + " | ".join(cells) + " |", flush=True)
    rng = np.random.default_rng(0)
    for (a, b), rs in ratios.items():
        med = statistics.median(rs)
        boot = np.median(rng.choice(rs, size=(10_000, len(rs))), axis=1)
        lo, hi = np.quantile(boot, [0.05, 0.95])
        print(
            f"{a} / {b}: median ratio {med:.3f} (bootstrap 90% interval {lo:.3f}-{hi:.3f}; "
            f"min {min(rs):.3f}, max {max(rs):.3f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

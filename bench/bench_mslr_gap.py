"""LambdaMART vs LightGBM ``lambdarank`` at a fixed number of trees on MSLR-like data,
several data seeds, test NDCG@10 paired by query (a lead for issue 15's parity item).

Usage::

    python -m bench.bench_mslr_gap [--docs 100000] [--seeds 0,1,2,3] [--trees 200]
                                   [--quantized 4]

Per seed ``s``: ``make_ranking_mslr_like(docs, random_state=100 + s)`` for training and
``(docs // 5, random_state=200 + s)`` for testing; ``bench_speed``'s settings (31
leaves, learning rate 0.1, 255 bins, at least 20 documents a leaf, pairs truncated at
30, 2 threads, no early stopping); ltrboost exact and (``--quantized K``, 0: off)
``quantized_gradients=K`` against LightGBM's default.  Prints each seed's mean paired
difference with its 95% interval over queries, then over all seeds: the queries pooled
and the seed-level mean and standard deviation (the seeds are the replicates that carry
the model-to-model noise a single set's interval leaves out).
"""

from __future__ import annotations

import argparse

import numpy as np

from bench._common import group_sizes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--seeds", default="0,1,2,3")
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--quantized", type=int, default=4, metavar="K")
    args = ap.parse_args(argv)
    import lightgbm as lgb

    import ltrboost
    from ltrboost.datasets import make_ranking_mslr_like
    from ltrboost.metrics import get_metric

    metric = get_metric("ndcg@10")
    runs = {"exact": {}} | ({f"q{args.quantized}": {"quantized_gradients": args.quantized}}
                            if args.quantized else {})  # fmt: skip
    diffs: dict[str, list[np.ndarray]] = {name: [] for name in runs}
    ours = dict(
        objective="lambdamart", n_estimators=args.trees, learning_rate=0.1, max_leaf_nodes=31,
        min_samples_leaf=20, max_bins=255, truncation_level=30, n_threads=2,
    )  # fmt: skip
    theirs = {
        "objective": "lambdarank", "num_leaves": 31, "learning_rate": 0.1,
        "min_data_in_leaf": 20, "max_bin": 255, "lambdarank_truncation_level": 30,
        "num_threads": 2, "verbose": -1, "seed": 0,
    }  # fmt: skip
    for s in (int(x) for x in args.seeds.split(",")):
        X, y, q = make_ranking_mslr_like(args.docs, random_state=100 + s)
        Xt, yt, qt = make_ranking_mslr_like(args.docs // 5, random_state=200 + s)
        offsets = np.r_[0, np.cumsum(group_sizes(qt))].astype(np.int64)
        ds = ltrboost.make_dataset(X, y, qid=q)
        train = lgb.Dataset(
            X, y, group=group_sizes(q), params={"max_bin": 255, "verbose": -1, "num_threads": 2}
        )
        model = lgb.train(theirs, train, num_boost_round=args.trees)
        base = metric.per_query(model.predict(Xt), yt.astype(np.float64), offsets)
        for name, extra in runs.items():
            booster = ltrboost.train(dict(ours, **extra), ds)
            d = metric.per_query(booster.predict(Xt), yt.astype(np.float64), offsets) - base
            diffs[name].append(d)
            half = 1.96 * d.std(ddof=1) / np.sqrt(d.shape[0])
            print(f"seed {s} {name} - LightGBM: {d.mean():+.4f} ± {half:.4f}", flush=True)
    for name, per_seed in diffs.items():
        means = np.array([d.mean() for d in per_seed])
        pooled = np.concatenate(per_seed)
        half = 1.96 * pooled.std(ddof=1) / np.sqrt(pooled.shape[0])
        sd = means.std(ddof=1) if means.shape[0] > 1 else float("nan")
        print(
            f"{name} - LightGBM: per seed {np.round(means, 4).tolist()}; queries pooled "
            f"{pooled.mean():+.4f} ± {half:.4f}; seed-level mean {means.mean():+.4f} (sd {sd:.4f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

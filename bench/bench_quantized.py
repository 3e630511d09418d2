"""Quantised gradients: ltrboost ``quantized_gradients=k`` against exact training and
LightGBM, default and ``use_quantized_grad`` (issue 12, goal 4).

Usage::

    python -m bench.bench_quantized [--sizes 500000,2000000] [--bins 4] [--trees 200]
                                    [--repeats 1]

Each library trains in its own process (``bench_speed``'s worker: its data, settings
and timing — LambdaMART/``lambdarank``, 31 leaves, 255 bins, learning rate 0.1, at
least 20 documents per leaf, pairs truncated at 30, 2 threads; time per tree is the
fit's time over its trees, binning excluded; peak RSS of the process), in the order
ltrboost, ltrboost-qK, LightGBM, LightGBM-qK, ``--repeats`` times (medians).  LightGBM's
quantised run uses the same method as ours: ``use_quantized_grad=True,
num_grad_quant_bins=K, quant_train_renew_leaf=True``.

NDCG@10 on the test set is compared *paired by query*: for two models, the mean of the
per-query differences and its 95% interval (1.96 standard errors over queries), so
"equal within noise" means an interval that holds 0.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

import numpy as np

from bench._common import group_sizes, markdown_table, run_worker
from bench.bench_speed import data_paths


def per_query_ndcg(scores, y, q) -> np.ndarray:
    from ltrboost.metrics import get_metric

    offsets = np.r_[0, np.cumsum(group_sizes(q))].astype(np.int64)
    return np.asarray(get_metric("ndcg@10").per_query(scores, y.astype(np.float64), offsets))


def paired(a: np.ndarray, b: np.ndarray) -> str:
    d = a - b
    se = d.std(ddof=1) / np.sqrt(d.shape[0])
    return f"{d.mean():+.4f} ± {1.96 * se:.4f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="500000,2000000")
    ap.add_argument("--bins", type=int, default=4)
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args(argv)
    k = args.bins
    libs = ["ltrboost", f"ltrboost-q{k}", "lightgbm", f"lightgbm-q{k}"]
    tmp = tempfile.mkdtemp(prefix="bench_quantized_")
    for n in (int(s) for s in args.sizes.split(",")):
        paths = data_paths(n)
        runs: dict[str, list[dict]] = {lib: [] for lib in libs}
        for r in range(args.repeats):
            for lib in libs:
                out = os.path.join(tmp, f"{n}_{lib}_{r}.npy")
                spec = {"lib": lib, "paths": paths, "trees": args.trees, "scores_out": out}
                res = run_worker("bench_speed", spec, timeout=7200)
                res["scores"] = out
                runs[lib].append(res)
                print(f"n={n} {lib} run {r + 1}: {res['per_tree_ms']:.1f} ms/tree", file=sys.stderr)
        med = {
            lib: {
                key: statistics.median(x[key] for x in rs)
                for key in ("per_tree_ms", "peak_rss_mb", "test_ndcg@10")
            }
            for lib, rs in runs.items()
        }
        yte, qte = np.load(paths["yte"]), np.load(paths["qte"])
        ndcg = {lib: per_query_ndcg(np.load(rs[0]["scores"]), yte, qte) for lib, rs in runs.items()}
        print(f"\n{n:,} documents, {args.trees} trees, quantised runs with {k} levels\n")
        rows = [
            [lib, f"{m['per_tree_ms']:.1f}", f"{m['peak_rss_mb']:.0f}", f"{m['test_ndcg@10']:.4f}"]
            for lib, m in med.items()
        ]
        print(markdown_table(["run", "ms/tree", "peak RSS MB", "test NDCG@10"], rows))
        exact, quant, lgb, lgb_q = libs
        print()
        comparisons = [(quant, lgb), (quant, lgb_q), (quant, exact), (exact, lgb), (lgb_q, lgb)]
        print(
            markdown_table(
                ["a / b", "time per tree a/b", "peak RSS a/b", "NDCG@10 a - b (paired, 95%)"],
                [
                    [
                        f"{a} / {b}",
                        f"{med[a]['per_tree_ms'] / med[b]['per_tree_ms']:.3f}",
                        f"{med[a]['peak_rss_mb'] / med[b]['peak_rss_mb']:.2f}",
                        paired(ndcg[a], ndcg[b]),
                    ]
                    for a, b in comparisons
                ],
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

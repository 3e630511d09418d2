"""Column-wise histogram kernel: one vector add per row (``add_gh1``) vs three scalar adds.

Usage::

    python -m bench.bench_histogram_kernel [--docs 500000] [--repeats 5]

Builds the histograms of all 136 features of ``make_ranking_mslr_like`` data (255 bins)
for the root and for nodes holding 25% and 6% of the rows (sorted random subsets),
single-threaded, with ``ltrboost.histogram._histogram_body`` and with a bench-only copy
of its previous inner loop (three scalar read-modify-writes a row).  Reports the
fastest thread-CPU time of ``--repeats`` calls (after one untimed warm-up call, which
compiles or loads each kernel) and nanoseconds per (row, feature) update,
and checks that both give the same histogram bit for bit.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ltrboost._numba import kernel
from ltrboost.binning import BinMapper
from ltrboost.datasets import make_ranking_mslr_like
from ltrboost.histogram import _histogram_body, _zero_feature_bins, feature_bins


@kernel
def _scalar_body(X, rows, og, oh, fi, hist_out, n, indexed, nbnm):
    # the kernel before stop 25: one feature a pass, three scalar adds a row
    last = hist_out.shape[1] - 1
    sub = np.empty((4, hist_out.shape[1], 3))
    for k in range(fi.shape[0]):
        f = fi[k]
        nb = min(nbnm[f], last)
        for t in range(4):
            _zero_feature_bins(sub[t], nb)
        col = X[:, f]
        m = n - (n % 4)
        for i in range(0, m, 4):
            for t in range(4):
                b = col[rows[i + t]] if indexed else col[i + t]
                sub[t, b, 0] += og[i + t]
                sub[t, b, 1] += oh[i + t]
                sub[t, b, 2] += 1.0
        for i in range(m, n):
            b = col[rows[i]] if indexed else col[i]
            sub[0, b, 0] += og[i]
            sub[0, b, 1] += oh[i]
            sub[0, b, 2] += 1.0
        h = hist_out[f]
        for b in range(nb):
            for s in range(3):
                h[b, s] = (sub[0, b, s] + sub[1, b, s]) + (sub[2, b, s] + sub[3, b, s])
        for s in range(3):
            h[last, s] = (sub[0, last, s] + sub[1, last, s]) + (sub[2, last, s] + sub[3, last, s])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=500_000)
    ap.add_argument("--repeats", type=int, default=5, help="timed calls (after a warm-up)")
    args = ap.parse_args(argv)
    if args.docs < 1 or args.repeats < 1:
        ap.error("--docs and --repeats must be at least 1")
    X, _, _ = make_ranking_mslr_like(args.docs, random_state=0)
    Xb = np.asfortranarray(BinMapper(255, random_state=0, min_samples_bin=3).fit_transform(X))
    n_rows, n_features = Xb.shape
    rng = np.random.default_rng(0)
    g = rng.standard_normal(n_rows).astype(np.float32)
    h = rng.random(n_rows).astype(np.float32)
    feats = np.arange(n_features, dtype=np.int32)
    print(f"{n_rows} rows x {n_features} features, 1 thread, fastest of {args.repeats}")
    print("| node | scalar ms | vector ms | scalar ns/update | vector ns/update | ratio | same |")
    print("|---|---|---|---|---|---|---|")
    for frac in (1.0, 0.25, 0.06):
        if frac == 1.0:
            rows, n, og, oh, indexed = np.zeros(1, np.int32), n_rows, g, h, False
        else:
            rows = np.sort(rng.choice(n_rows, int(frac * n_rows), replace=False)).astype(np.int32)
            n, og, oh, indexed = rows.size, g[rows], h[rows], True
        hist = {k: np.zeros((n_features, 256, 3)) for k in ("scalar", "vector")}
        nbins = feature_bins(hist["vector"], None)
        best = {"scalar": np.inf, "vector": np.inf}
        # a warm-up call each (not timed): the first one compiles the kernel (or loads it)
        for timed in (False, *(True,) * args.repeats):
            for key in ("scalar", "vector"):
                t = time.thread_time()
                if key == "scalar":
                    _scalar_body(Xb, rows, og, oh, feats, hist[key], n, indexed, nbins)
                else:
                    _histogram_body(
                        Xb, rows, og, oh, feats, 0, n_features, hist[key], n, indexed, nbins
                    )
                if timed:
                    best[key] = min(best[key], time.thread_time() - t)
        per = {k: best[k] / (n * n_features) * 1e9 for k in best}
        same = np.array_equal(hist["scalar"], hist["vector"])
        print(
            f"| {frac:.0%} of rows | {best['scalar'] * 1e3:.1f} | {best['vector'] * 1e3:.1f} | "
            f"{per['scalar']:.2f} | {per['vector']:.2f} | {best['vector'] / best['scalar']:.2f} "
            f"| {same} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""LambdaMART's NDCG gradient (the fused driver) on the 500k benchmark queries.

Usage::

    python -m bench.bench_lambdamart_gradient [--threads 2] [--repeats 15] [--docs 500000]

``LambdaMART(truncation_level=30).gradient_hessian`` on ``bench_speed``'s training
arrays (``make_ranking_mslr_like``, ~120 documents a query, labels 0..4) at fixed
scores, for four label/score sets:

* ``graded``: the benchmark's labels (~39% of the candidate pairs tied);
* ``int0-30``: labels drawn uniformly from 0..30 (``gain="linear"``), few ties;
* ``continuous``: distinct float labels, straight into the driver (the objective
  refuses non-integer labels; the kernel takes any floats);
* ``spread``: the graded set with scores x1000, so that every query has exponentials
  below ``TINY_EXP`` and goes to the pair-by-pair kernel.

Prints the median and fastest wall time of ``--repeats`` calls (after one warm-up) and a
sha1 of the float32 gradients and hessians: compare a checkout with another by running
both, alternately, several times (the machine's speed drifts).
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np

import ltrboost
from bench.bench_speed import data_paths
from ltrboost._numba import threads
from ltrboost.objectives.lambdamart import _lambdamart_ndcg_all_queries
from ltrboost.objectives.registry import get_objective


def _time(fn, g, h, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    digest = hashlib.sha1(g.tobytes() + h.tobytes()).hexdigest()[:12]
    return 1000 * float(np.median(times)), 1000 * min(times), digest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--docs", type=int, default=500_000)
    args = ap.parse_args()
    p = data_paths(args.docs)
    X, y, q = (np.load(p[k]) for k in ("Xtr", "ytr", "qtr"))
    n = len(y)
    rng = np.random.default_rng(0)
    scores = X[:, :5].sum(1) * 0.1 + rng.normal(0, 0.3, n)
    g = np.empty(n, np.float32)
    h = np.empty(n, np.float32)
    rows = []

    def run(name, fn):
        rows.append((name, _time(fn, g, h, args.repeats)))

    with threads(args.threads):
        ds = ltrboost.make_dataset(X, y, qid=q)
        obj = get_objective("lambdamart", truncation_level=30)
        obj.prepare(ds)
        run("graded", lambda: obj.gradient_hessian(scores, ds, g, h))
        spread = scores * 1000
        run("spread", lambda: obj.gradient_hessian(spread, ds, g, h))
        ds31 = ltrboost.make_dataset(X, rng.integers(0, 31, n).astype(np.float64), qid=q)
        obj31 = get_objective("lambdamart", truncation_level=30, gain="linear")
        obj31.prepare(ds31)
        run("int0-30", lambda: obj31.gradient_hessian(scores, ds31, g, h))
        c = obj._constants(ds)
        yc = rng.uniform(0, 4, n)
        vc = 2.0**yc - 1.0
        counts = np.empty(ds.n_queries, np.int64)

        def continuous():
            _lambdamart_ndcg_all_queries(
                scores, yc, vc, c.inv_norm, c.weights, ds.query_offsets, obj._method, 30,
                1.0, True, g, h, counts,
            )  # fmt: skip

        run("continuous", continuous)
    for name, (med, best, digest) in rows:
        print(f"{name:<11} threads {args.threads}  median {med:6.1f}  min {best:6.1f} ms  {digest}")


if __name__ == "__main__":
    main()

"""Dask: time of regrouping cut queries, by the number of input partitions.

When a query's rows lie in several partitions, :func:`ltrboost.dask.train` regroups the
rows once by a stable hash of the qid into as many partitions as there were: each input
partition is split into P pieces and each output partition gathers one piece of each,
P² small tasks.  This times a one-tree fit on ``--docs`` rows whose queries are cut
across every partition (rows dealt round-robin), on a ``LocalCluster`` of 2 workers
(1 thread each, in-process), for each ``--partitions`` count, against the same fit on
query-whole partitions.

Usage::

    python -m bench.bench_dask_regroup [--docs 4000] [--partitions 10,40,80]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--partitions", default="10,40,80")
    args = ap.parse_args(argv)
    import dask.array as da
    import distributed

    from ltrboost import dask as ldask
    from ltrboost.datasets import make_ranking

    X, y, qid = make_ranking(
        n_queries=max(args.docs // 20, 1), docs_per_query=20, n_features=10, random_state=0
    )[:3]
    params = dict(objective="lambdamart", n_estimators=1, n_threads=1)
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    try:
        ldask.train(client, params, _data(da, X, y, qid, 2, whole=True))  # warm up
        print("| partitions | queries whole (s) | queries cut, regrouped (s) |")
        print("|---|---|---|")
        for p in (int(v) for v in args.partitions.split(",")):
            times = []
            for cut in (False, True):
                order = np.arange(len(qid))
                if cut:  # deal the rows round-robin: every query in every partition
                    order = np.argsort(np.arange(len(qid)) % p, kind="stable")
                t = time.perf_counter()
                data = _data(da, X[order], y[order], qid[order], p, whole=not cut)
                ldask.train(client, params, data)
                times.append(time.perf_counter() - t)
            print(f"| {p} | {times[0]:.1f} | {times[1]:.1f} |", flush=True)
    finally:
        client.close()
        cluster.close()
    return 0


def _data(da, X, y, qid, n_parts, whole):
    """``n_parts`` partitions of about equal rows; ``whole``: cut at query starts (the
    rows are grouped by query)."""
    n = len(qid)
    bounds = [n * k // n_parts for k in range(n_parts + 1)]
    if whole:
        starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
        bounds = [0, *(int(starts[np.searchsorted(starts, b)]) for b in bounds[1:-1]), n]
    chunks = tuple(np.diff(bounds))
    from ltrboost.dask import DaskData

    return DaskData(
        da.from_array(X, chunks=(chunks, X.shape[1])),
        da.from_array(y, chunks=(chunks,)),
        da.from_array(qid, chunks=(chunks,)),
    )


if __name__ == "__main__":
    raise SystemExit(main())

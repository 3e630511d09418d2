"""Dask: time and tasks of making cut queries whole, by the number of input partitions.

When a query's rows lie in several partitions, :func:`ltrboost.dask.train` makes every
query whole first.  Cut at partition boundaries only (``boundary``: rows grouped by
query, partitions of equal rows, as ``repartition`` or ``from_pandas`` give), only the
cut queries' rows move, about six tasks per partition; interleaved (``interleaved``:
rows dealt round-robin, every query in every partition) the rows are regrouped by a
hash of the qid, P² + 4P tasks.  This times a one-tree fit on ``--docs`` rows
(queries of 10-30 documents) on a ``LocalCluster`` of 2 workers (1 thread each,
in-process) for each ``--partitions`` count and layout, against the same fit on
query-whole partitions (``whole``), and counts the tasks the scheduler was given while
the queries were made whole (the partitions' summaries included).

Usage::

    python -m bench.bench_dask_regroup [--docs 4000] [--partitions 10,40,80]
        [--layouts whole,boundary,interleaved]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

LAYOUTS = ("whole", "boundary", "interleaved")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--partitions", default="10,40,80")
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    args = ap.parse_args(argv)
    layouts = args.layouts.split(",")
    if not set(layouts) <= set(LAYOUTS):
        ap.error(f"--layouts: choose from {', '.join(LAYOUTS)}")
    import dask.array as da
    import distributed
    from distributed.diagnostics.plugin import SchedulerPlugin

    from ltrboost import dask as ldask
    from ltrboost.datasets import make_ranking

    class TaskCounter(SchedulerPlugin):
        """Tasks given to the scheduler (each new one goes from released to waiting)."""

        name = "bench-task-counter"

        def __init__(self):
            self.n = 0

        def transition(self, key, start, finish, *a, **kw):
            if start == "released" and finish == "waiting":
                self.n += 1

    X, y, qid = make_ranking(
        n_queries=max(args.docs // 20, 1), docs_per_query=(10, 30), n_features=10, random_state=0
    )[:3]
    params = dict(objective="lambdamart", n_estimators=1, n_threads=1)
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    counter = TaskCounter()
    cluster.scheduler.add_plugin(counter, name=counter.name)
    tasks: list[int] = []
    queries_whole = ldask._queries_whole

    def counted(client, futures, *a, **kw):
        distributed.wait(futures)  # the input partitions' tasks are not counted
        n0 = counter.n
        out = queries_whole(client, futures, *a, **kw)
        tasks.append(counter.n - n0)
        return out

    ldask._queries_whole = counted
    try:
        ldask.train(client, params, _data(da, X, y, qid, 2, "whole"))  # warm up
        print(f"{len(qid)} rows, {len(np.unique(qid))} queries")
        print("| partitions | layout | fit (s) | tasks to make queries whole |")
        print("|---|---|---|---|")
        for p in (int(v) for v in args.partitions.split(",")):
            for layout in layouts:
                order = np.arange(len(qid))
                if layout == "interleaved":  # deal the rows round-robin
                    order = np.argsort(np.arange(len(qid)) % p, kind="stable")
                t = time.perf_counter()
                data = _data(da, X[order], y[order], qid[order], p, layout)
                ldask.train(client, params, data)
                dt = time.perf_counter() - t
                print(f"| {p} | {layout} | {dt:.1f} | {tasks[-1]} |", flush=True)
    finally:
        ldask._queries_whole = queries_whole
        client.close()
        cluster.close()
    return 0


def _data(da, X, y, qid, n_parts, layout):
    """``n_parts`` partitions of about equal rows; ``whole``: moved to query starts
    (the rows are grouped by query)."""
    n = len(qid)
    bounds = [n * k // n_parts for k in range(n_parts + 1)]
    if layout == "whole":
        starts = np.r_[np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]]), n]
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

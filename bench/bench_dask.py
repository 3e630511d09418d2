"""Training on Dask: local vs LocalCluster vs DaskLGBMRanker / DaskXGBRanker.

Usage::

    python -m bench.bench_dask [--docs 40000] [--trees 30] [--output bench/results/dask.md]
        [--peers lightgbm,xgboost]

Data: ``make_ranking_mslr_like`` (136 features, ~120 documents per query), train of
``--docs`` documents in 4 query-whole partitions and a test set of a quarter of it
(another seed).  Settings as ``bench_speed``: LambdaMART, 255 bins, 31 leaves leaf-wise,
learning rate 0.1, at least 20 documents per leaf, pairs truncated at 30.

Runs, one after the other in this process (the cluster's workers are processes):

* ``local``: :func:`ltrboost.train`, 2 Numba threads;
* ``ltrboost.dask``: :func:`ltrboost.dask.train` on ``LocalCluster(n_workers=2,
  threads_per_worker=1)``, one Numba thread per worker;
* ``DaskLGBMRanker`` / ``DaskXGBRanker`` on the same cluster, when importable.

Reported: fit seconds (including setup), seconds per tree (fit time of ``--trees``
minus that of 1 tree, over ``--trees - 1``: setup and compilation cancel out; every
library's timed fits follow an untimed 1-tree fit on the same cluster), for
ltrboost.dask the round trips and array bytes to/from the driver per tree
(``train(stats=)``), peak RSS per worker (``ru_maxrss`` of the worker processes, which
live through all Dask runs: a running maximum), and NDCG@10 on the test set.  Two cores
cannot show a speed-up: the point is the overhead of the protocol and the bytes it
moves (``docs/scaling.md`` extrapolates from them).
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np

from bench._common import group_sizes, machine_description

PARAMS = dict(
    objective="lambdamart",
    max_bins=255,
    max_leaf_nodes=31,
    learning_rate=0.1,
    min_samples_leaf=20,
    truncation_level=30,
)


class _Skipped(Exception):
    """A peer left out with ``--peers``."""


def _ndcg10(scores, y, qid) -> float:
    from ltrboost.metrics import get_metric

    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    offsets = np.r_[starts, len(qid)]
    return float(get_metric("ndcg@10")(scores, y, offsets))


def _peak_rss_mb(client) -> float:
    import resource

    def rss():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    return max(client.run(rss).values())


def _partitions(X, y, qid, n_parts):
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    cuts = [0] + [int(starts[len(starts) * k // n_parts]) for k in range(1, n_parts)] + [len(y)]
    return cuts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=40_000)
    ap.add_argument("--trees", type=int, default=30)
    ap.add_argument("--output", default=None)
    ap.add_argument(
        "--peers",
        default="lightgbm,xgboost",
        help="comma-separated peers to run on the same cluster (lightgbm, xgboost; '' for none)",
    )
    args = ap.parse_args()
    peers = {p.strip() for p in args.peers.split(",") if p.strip()}
    if peers - {"lightgbm", "xgboost"} or args.trees < 2 or args.docs < 8:
        # s/tree is (fit of --trees - fit of 1 tree) / (--trees - 1)
        ap.error("--peers takes lightgbm,xgboost (or ''); --trees at least 2, --docs at least 8")

    import dask.array as da
    from distributed import Client, LocalCluster

    import ltrboost
    from ltrboost import dask as ldask
    from ltrboost.datasets import make_ranking_mslr_like

    X, y, qid = make_ranking_mslr_like(args.docs, random_state=0)
    Xt, yt, qt = make_ranking_mslr_like(args.docs // 4, random_state=1)
    cuts = _partitions(X, y, qid, 4)
    chunks = (tuple(np.diff(cuts)),)
    rows = []

    def fit_local(n_trees):
        ds = ltrboost.make_dataset(X, y, qid=qid)
        t0 = time.perf_counter()
        b = ltrboost.train(dict(PARAMS, n_estimators=n_trees, n_threads=2), ds)
        return time.perf_counter() - t0, b.predict(Xt)

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    client = Client(cluster)
    dX = da.from_array(X, chunks=(*chunks, X.shape[1]))
    dy = da.from_array(y, chunks=chunks)
    dq = da.from_array(qid, chunks=chunks)

    def fit_dask(n_trees, stats=None):
        t0 = time.perf_counter()
        b = ldask.train(
            client,
            dict(PARAMS, n_estimators=n_trees, n_threads=1),
            ldask.DaskData(dX, dy, dq),
            stats=stats,
        )
        return time.perf_counter() - t0, b.predict(Xt)

    fit_local(1)  # compile
    fit_dask(1)  # compile on the workers
    for name, fit in (("ltrboost local (2 threads)", fit_local), ("ltrboost.dask", fit_dask)):
        t1, _ = fit(1)
        stats = {} if fit is fit_dask else None
        tn, pred = fit(args.trees, stats) if stats is not None else fit(args.trees)
        row = dict(
            name=name,
            fit=tn,
            per_tree=(tn - t1) / (args.trees - 1),
            ndcg=_ndcg10(pred, yt, qt),
        )
        if stats is not None:
            row["trips"] = stats["round_trips"] / stats["trees"]
            row["to_driver"] = stats["bytes_to_driver"] / stats["trees"]
            row["from_driver"] = stats["bytes_from_driver"] / stats["trees"]
            row["rss"] = _peak_rss_mb(client)
        rows.append(row)

    try:
        if "lightgbm" not in peers:
            raise _Skipped
        import lightgbm as lgb

        dgroup = da.from_array(
            group_sizes(qid),
            chunks=(tuple(len(group_sizes(qid[a:b])) for a, b in itertools.pairwise(cuts)),),
        )
        lgb_params = dict(
            objective="lambdarank",
            num_leaves=31,
            learning_rate=0.1,
            min_child_samples=20,
            max_bin=255,
            lambdarank_truncation_level=30,
            verbose=-1,
        )

        def fit_lgb(n_trees):
            m = lgb.DaskLGBMRanker(client=client, n_estimators=n_trees, **lgb_params)
            t0 = time.perf_counter()
            m.fit(dX, dy, group=dgroup)
            return time.perf_counter() - t0, m.to_local().predict(Xt)

        fit_lgb(1)  # warm-up, as ltrboost's: a first fit's one-time setup is not a tree's
        t1, _ = fit_lgb(1)
        tn, pred = fit_lgb(args.trees)
        rows.append(
            dict(name="DaskLGBMRanker", fit=tn, per_tree=(tn - t1) / (args.trees - 1),
                 ndcg=_ndcg10(pred, yt, qt), rss=_peak_rss_mb(client))
        )  # fmt: skip
    except _Skipped:
        pass
    except Exception as e:  # a peer that fails is reported, not fatal
        rows.append(dict(name=f"DaskLGBMRanker: {type(e).__name__}: {str(e)[:80]}"))
    try:
        if "xgboost" not in peers:
            raise _Skipped
        import xgboost.dask as dxgb

        xgb_params = dict(
            objective="rank:ndcg",
            tree_method="hist",
            grow_policy="lossguide",
            max_leaves=31,
            max_depth=0,
            learning_rate=0.1,
            max_bin=255,
            lambdarank_pair_method="topk",
            lambdarank_num_pair_per_sample=30,
            min_child_weight=0,
        )

        import dask.dataframe as dd

        Xdf = dd.from_dask_array(dX, columns=[f"f{j}" for j in range(X.shape[1])])
        qdf = dd.from_dask_array(dq)
        ydf = dd.from_dask_array(dy)

        def fit_xgb(n_trees):
            m = dxgb.DaskXGBRanker(n_estimators=n_trees, **xgb_params)
            m.client = client
            t0 = time.perf_counter()
            m.fit(Xdf, ydf, qid=qdf)
            return time.perf_counter() - t0, m.get_booster().inplace_predict(Xt)

        fit_xgb(1)  # warm-up
        t1, _ = fit_xgb(1)
        tn, pred = fit_xgb(args.trees)
        rows.append(
            dict(name="DaskXGBRanker", fit=tn, per_tree=(tn - t1) / (args.trees - 1),
                 ndcg=_ndcg10(np.asarray(pred, dtype=np.float64), yt, qt),
                 rss=_peak_rss_mb(client))
        )  # fmt: skip
    except _Skipped:
        pass
    except Exception as e:
        rows.append(dict(name=f"DaskXGBRanker: {type(e).__name__}: {str(e)[:80]}"))
    client.close()
    cluster.close()

    lines = [
        f"{args.docs} training documents x 136 features in 4 partitions, {args.trees} trees, "
        f"LocalCluster 2 workers x 1 thread; {machine_description()}",
        "",
        "| run | fit s | s/tree | round trips/tree | KB to driver/tree | KB from driver/tree "
        "| peak RSS/worker MB | test NDCG@10 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "fit" not in r:
            lines.append(f"| {r['name']} | | | | | | | |")
            continue
        lines.append(
            f"| {r['name']} | {r['fit']:.2f} | {r['per_tree']:.3f} | "
            + (f"{r['trips']:.0f} | {r['to_driver'] / 1024:.0f} | {r['from_driver'] / 1024:.1f} | "
               if "trips" in r else "| | | ")
            + (f"{r['rss']:.0f} | " if "rss" in r else "| ")
            + f"{r['ndcg']:.4f} |"
        )  # fmt: skip
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()

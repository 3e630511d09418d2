"""Per-feature contributions (path-dependent TreeSHAP): ltrboost vs LightGBM and XGBoost.

Usage::

    python -m bench.bench_contrib [--trees 100] [--leaves 31] [--threads 1]
                                  [--synthetic 0] [--repeats 3]

Each library trains its LambdaMART (``lambdamart`` / ``lambdarank`` / ``rank:ndcg``) with
the same settings (``--leaves`` leaves leaf-wise, learning rate 0.1, at least 20
documents per leaf, 255 bins, ``--trees`` trees, ``--threads`` threads) on MQ2008 Fold1's
training file (``../shared/data``) or, with ``--synthetic N``, on ``N`` documents of
``make_ranking_mslr_like``; then the contributions of every training row are timed
(``pred_contrib=True`` / ``pred_contribs=True``), fastest of ``--repeats`` calls after a
warm-up call on 100 rows (ltrboost's compilation is not timed).  Reported: rows per
second and the ratio to ltrboost, and each library's largest ``|sum of a row's
contributions - its raw score|`` (local accuracy).  The models differ (each library
grows its own trees), so the ratios compare implementations on models of the same size,
not on the same trees.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench._common import SHARED_DATA, machine_description, markdown_table


def _data(n_synthetic: int):
    if n_synthetic > 0:
        from ltrboost.datasets import make_ranking_mslr_like

        X, y, qid = make_ranking_mslr_like(n_synthetic, random_state=0)[:3]
        return f"synthetic {n_synthetic:,}", np.asarray(X, dtype=np.float64), y, qid
    from ltrboost.io.letor import load_svmlight

    d = load_svmlight(str(SHARED_DATA / "MQ2008" / "Fold1" / "train.txt"))
    return "MQ2008 Fold1 train", np.asarray(d.X, dtype=np.float64), d.y, d.qid


def _fastest(fn, repeats: int) -> tuple[float, np.ndarray]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _ltrboost(X, y, qid, args):
    from ltrboost.booster import train
    from ltrboost.dataset import make_dataset

    params = dict(
        objective="lambdamart", n_estimators=args.trees, max_leaf_nodes=args.leaves,
        learning_rate=0.1, min_samples_leaf=20, n_threads=args.threads,
    )  # fmt: skip
    b = train(params, make_dataset(X, y, qid=qid))
    b.predict(X[:100], pred_contrib=True)
    t, c = _fastest(lambda: b.predict(X, pred_contrib=True), args.repeats)
    return t, float(np.max(np.abs(c.sum(axis=1) - b.predict(X))))


def _lightgbm(X, y, qid, sizes, args):
    import lightgbm as lgb

    params = dict(
        objective="lambdarank", num_leaves=args.leaves, learning_rate=0.1,
        min_data_in_leaf=20, max_bin=255, num_threads=args.threads, verbose=-1,
    )  # fmt: skip
    b = lgb.train(params, lgb.Dataset(X, y, group=sizes), num_boost_round=args.trees)
    b.predict(X[:100], pred_contrib=True)
    t, c = _fastest(lambda: b.predict(X, pred_contrib=True), args.repeats)
    return t, float(np.max(np.abs(c.sum(axis=1) - b.predict(X, raw_score=True))))


def _xgboost(X, y, qid, sizes, args):
    import xgboost as xgb

    params = dict(
        objective="rank:ndcg", tree_method="hist", grow_policy="lossguide",
        max_leaves=args.leaves, max_depth=0, eta=0.1, max_bin=255, nthread=args.threads,
    )  # fmt: skip
    dtrain = xgb.DMatrix(X, y, qid=qid)
    b = xgb.train(params, dtrain, num_boost_round=args.trees)
    b.predict(xgb.DMatrix(X[:100]), pred_contribs=True)
    dm = xgb.DMatrix(X)
    t, c = _fastest(lambda: b.predict(dm, pred_contribs=True), args.repeats)
    return t, float(np.max(np.abs(c.sum(axis=1) - b.predict(dm, output_margin=True))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--leaves", type=int, default=31)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--synthetic", type=int, default=0, help="documents (0: MQ2008 Fold1)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    name, X, y, qid = _data(args.synthetic)
    order = np.argsort(qid, kind="stable")
    X, y, qid = X[order], y[order], qid[order]
    sizes = np.diff(np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True]))
    results = {"ltrboost": _ltrboost(X, y, qid, args)}
    for lib, fn in (("lightgbm", _lightgbm), ("xgboost", _xgboost)):
        try:
            results[lib] = fn(X, y, qid, sizes, args)
        except ImportError:
            print(f"({lib} not installed: skipped)")
    base = results["ltrboost"][0]
    rows = [
        [lib, f"{X.shape[0] / t:,.0f}", f"{t:.3f}", f"{t / base:.2f}", f"{err:.1e}"]
        for lib, (t, err) in results.items()
    ]
    print(f"Machine: {machine_description()}\n")
    print(
        f"{name}: {X.shape[0]:,} rows x {X.shape[1]} features, {args.trees} trees x "
        f"{args.leaves} leaves, {args.threads} thread(s)\n"
    )
    header = ["library", "rows/s", "s", "time / ltrboost", "max |sum - raw score|"]
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()

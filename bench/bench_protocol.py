"""MQ2008 5-fold protocol of issue 15: ltrboost objectives vs CatBoost, LightGBM, XGBoost.

Usage::

    python -m bench.bench_protocol [--systems all] [--jobs 1] [--threads 1]
                                   [--output bench/results/protocol.md]

Protocol (every system): MQ2008 Fold1-5, train on ``train.txt``, early stopping on
``vali.txt`` NDCG@10 with patience 50 and at most 500 trees, 20 leaves, learning rate 0.1,
at least 20 documents per leaf, 255 bins; the score is the mean over the 5 folds of the
test NDCG@10 (ltrboost's metric for every library: queries without a relevant document
score 1, exponential gain).

Early stopping is the same rule for every library: the validation NDCG@10 after every
round, computed by ltrboost's metric module on that library's validation scores, is
scanned; the kept model is the first round with the highest value, and training stops 50
rounds after it (ltrboost: its own ``early_stopping_rounds=50``, same rule and metric;
LightGBM: ``feval``; XGBoost: ``custom_metric``; CatBoost: ``staged_predict`` on the
validation set after 500 rounds).  Test scores are the truncated model at that round.

Per-library settings:

* ltrboost: ``max_leaf_nodes=20``, ``min_samples_leaf=20``, ``max_bins=255``, defaults
  otherwise (lambdamart: NDCG lambdas, top-30 pairs, LightGBM-style normalisation;
  yetirank: 10 permutations, decay 0.85); ``split_criterion`` newton or ole as named.
* CatBoost ``CatBoostRanker(loss_function="YetiRank")``: ``grow_policy="Lossguide"``,
  ``max_leaves=20``, ``min_data_in_leaf=20``, ``border_count=255``, ``learning_rate=0.1``,
  ``random_seed=0`` (YetiRank's own defaults: 10 permutations, decay 0.85); "CatBoost
  YetiRank (default trees)" keeps CatBoost's symmetric depth-6 trees instead.
* LightGBM ``lambdarank``: ``num_leaves=20``, ``min_data_in_leaf=20``, ``max_bin=255``,
  ``lambdarank_truncation_level=30`` (its default).
* XGBoost ``rank:ndcg``: ``tree_method="hist"``, ``grow_policy="lossguide"``,
  ``max_leaves=20``, ``max_depth=0``, ``max_bin=255``, ``lambdarank_pair_method="topk"``,
  ``lambdarank_num_pair_per_sample=30``; XGBoost has no documents-per-leaf limit
  (``min_child_weight`` at its default).

The 95% interval of a difference between two systems (printed for yetirank and
lambdamart against the peers) is a t-interval over MQ2008's 784 test queries of the
per-query NDCG@10 difference (every query is a test query in exactly one fold).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench._common import REPO, SHARED_DATA, group_sizes, machine_description, markdown_table

MAX_TREES = 500
PATIENCE = 50
LEAVES = 20
RATE = 0.1
MIN_LEAF = 20

# name -> (library, options); ``--systems all`` runs DEFAULT_SYSTEMS
SYSTEMS = {
    "ltrboost yetirank": ("ltrboost", {"objective": "yetirank"}),
    "ltrboost yetirank, OLE": ("ltrboost", {"objective": "yetirank", "split_criterion": "ole"}),
    "ltrboost lambdamart": ("ltrboost", {"objective": "lambdamart"}),
    "ltrboost lambdamart, OLE": (
        "ltrboost",
        {"objective": "lambdamart", "split_criterion": "ole"},
    ),
    "ltrboost lambdamart err": ("ltrboost", {"objective": "lambdamart", "lambda_metric": "err"}),
    "ltrboost lambdamart err, OLE": (
        "ltrboost",
        {"objective": "lambdamart", "lambda_metric": "err", "split_criterion": "ole"},
    ),
    "ltrboost ranknet, OLE": ("ltrboost", {"objective": "ranknet", "split_criterion": "ole"}),
    # the approximate OLE of issue 16 item 2 (not in the default run)
    **{
        f"ltrboost lambdamart, OLE k={k}": (
            "ltrboost",
            {"objective": "lambdamart", "split_criterion": "ole", "ole_top_features": k},
        )
        for k in (3, 5, 8, 10)
    },
    # CatBoost's random_strength in ltrboost (not in the default run; off by default)
    "ltrboost yetirank, random_strength=1": (
        "ltrboost",
        {"objective": "yetirank", "random_strength": 1.0},
    ),
    "ltrboost lambdamart, random_strength=1": (
        "ltrboost",
        {"objective": "lambdamart", "random_strength": 1.0},
    ),
    "ltrboost logistic_rank": ("ltrboost", {"objective": "logistic_rank"}),
    "ltrboost mcrank": ("ltrboost", {"objective": "mcrank"}),
    "CatBoost YetiRank": ("catboost", {"grow_policy": "Lossguide"}),
    "CatBoost YetiRank (default trees)": ("catboost", {}),
    # ablations of CatBoost's own regularisers (not in the default run): which of them
    # ltrboost lacks matters for YetiRank's quality
    "CatBoost YetiRank, random_strength=0": (
        "catboost",
        {"grow_policy": "Lossguide", "params": {"random_strength": 0}},
    ),
    "CatBoost YetiRank, no bootstrap": (
        "catboost",
        {"grow_policy": "Lossguide", "params": {"bootstrap_type": "No"}},
    ),
    "CatBoost YetiRank, L2 score": (
        "catboost",
        {"grow_policy": "Lossguide", "params": {"score_function": "L2"}},
    ),
    "CatBoost YetiRank, none of the three": (
        "catboost",
        {
            "grow_policy": "Lossguide",
            "params": {"random_strength": 0, "bootstrap_type": "No", "score_function": "L2"},
        },
    ),
    "LightGBM lambdarank": ("lightgbm", {}),
    "LightGBM rank_xendcg": ("lightgbm", {"objective": "rank_xendcg"}),
    "XGBoost rank:ndcg": ("xgboost", {}),
}


DEFAULT_SYSTEMS = [
    s
    for s in SYSTEMS
    if s not in ("ltrboost lambdamart err, OLE", "ltrboost ranknet, OLE", "LightGBM rank_xendcg")
    and not s.startswith("CatBoost YetiRank, ")
    and "random_strength" not in s
    and "OLE k=" not in s
]


def _load(path, n_features=None):
    from ltrboost.io.letor import load_svmlight

    d = load_svmlight(str(path), n_features=n_features)
    return np.asarray(d.X.toarray() if hasattr(d.X, "toarray") else d.X), d.y, d.qid


def offsets_of(qid):
    return np.r_[0, np.cumsum(group_sizes(qid))].astype(np.int64)


def stop_point(curve, patience=PATIENCE):
    """Rounds kept by early stopping on ``curve`` (value after round 1, 2, ...)."""
    best, best_i = -np.inf, 0
    for i, v in enumerate(curve):
        if v > best:
            best, best_i = v, i + 1
        if i + 1 - best_i >= patience:
            break
    return best_i


def fit_predict(lib, opts, tr, va, te, threads, ndcg, settings=None):
    """Train with the protocol; return (test scores, kept rounds).

    ``settings`` overrides the protocol's ``leaves``, ``rate``, ``min_leaf``,
    ``max_trees``, ``patience``; ``va=None`` trains ``max_trees`` rounds without early
    stopping (used by ``bench_objectives`` on data without a validation file)."""
    cfg = {
        "leaves": LEAVES,
        "rate": RATE,
        "min_leaf": MIN_LEAF,
        "max_trees": MAX_TREES,
        "patience": PATIENCE,
    } | (settings or {})
    leaves, rate, min_leaf = cfg["leaves"], cfg["rate"], cfg["min_leaf"]
    max_trees, patience = cfg["max_trees"], cfg["patience"]
    if va is None:  # no validation: the full run (the curve is not used)
        va, patience = te, None
    va_off = offsets_of(va[2])

    def stop(curve):
        return max_trees if patience is None else stop_point(curve, patience)

    if lib == "ltrboost":
        from ltrboost import Ranker

        m = Ranker(
            n_estimators=max_trees,
            learning_rate=rate,
            max_leaf_nodes=leaves,
            min_samples_leaf=min_leaf,
            max_bins=255,
            n_threads=threads,
            eval_metric="ndcg@10",
            early_stopping_rounds=patience,
            **opts,
        )
        if patience is None:
            m.set_params(eval_metric=None)
            m.fit(tr[0], tr[1], qid=tr[2])
        else:
            m.fit(tr[0], tr[1], qid=tr[2], eval_set=[(va[0], va[1], va[2])])
        return m.predict(te[0]), m.best_iteration_ or max_trees
    if lib == "lightgbm":
        import lightgbm as lgb

        curve = []

        def feval(preds, data):
            curve.append(float(ndcg(np.asarray(preds, np.float64), va[1], va_off)))
            return "ndcg10", curve[-1], True

        dtr = lgb.Dataset(tr[0], tr[1], group=group_sizes(tr[2]), params={"max_bin": 255})
        dva = dtr.create_valid(va[0], va[1], group=group_sizes(va[2]))
        params = {
            "objective": opts.get("objective", "lambdarank"),
            "num_leaves": leaves,
            "learning_rate": rate,
            "min_data_in_leaf": min_leaf,
            "lambdarank_truncation_level": 30,
            "num_threads": threads,
            "deterministic": True,
            "force_col_wise": True,
            "seed": 0,
            "metric": "None",
            "verbose": -1,
        }
        b = lgb.train(
            params,
            dtr,
            max_trees,
            valid_sets=[dva],
            feval=feval,
            callbacks=[lgb.early_stopping(patience, verbose=False)] if patience else [],
        )
        k = stop(curve)
        return b.predict(te[0], num_iteration=k), k
    if lib == "xgboost":
        import xgboost as xgb

        def runs(q):
            return np.cumsum(np.r_[0, q[1:] != q[:-1]])

        curve = []

        def metric(predt, dmat):
            curve.append(float(ndcg(np.asarray(predt, np.float64), va[1], va_off)))
            return "ndcg10", curve[-1]

        dtr = xgb.DMatrix(tr[0], tr[1], qid=runs(tr[2]))
        dva = xgb.DMatrix(va[0], va[1], qid=runs(va[2]))
        params = {
            "objective": "rank:ndcg",
            "tree_method": "hist",
            "grow_policy": "lossguide",
            "max_leaves": leaves,
            "max_depth": 0,
            "max_bin": 255,
            "eta": rate,
            "lambdarank_pair_method": "topk",
            "lambdarank_num_pair_per_sample": 30,
            "nthread": threads,
            "seed": 0,
            "disable_default_eval_metric": 1,
        }
        b = xgb.train(
            params,
            dtr,
            max_trees,
            evals=[(dva, "valid")],
            custom_metric=metric,
            maximize=True,
            early_stopping_rounds=patience,
            verbose_eval=False,
        )
        k = stop(curve)
        return b.predict(xgb.DMatrix(te[0]), iteration_range=(0, k)), k
    if lib == "catboost":
        import catboost as cb

        params = {
            "loss_function": "YetiRank",
            "iterations": max_trees,
            "learning_rate": rate,
            "border_count": 255,
            "thread_count": threads,
            "random_seed": 0,
            "verbose": False,
            "allow_writing_files": False,
        }
        if opts.get("grow_policy") == "Lossguide":
            params |= {
                "grow_policy": "Lossguide",
                "max_leaves": leaves,
                "min_data_in_leaf": min_leaf,
            }
        params |= opts.get("params", {})
        m = cb.CatBoostRanker(**params)
        with tempfile.TemporaryDirectory() as tmp:
            m.set_params(train_dir=tmp)
            m.fit(cb.Pool(tr[0], tr[1], group_id=tr[2]))
        if patience is None:
            k = max_trees
        else:
            curve = [
                float(ndcg(np.asarray(p, np.float64), va[1], va_off))
                for p in m.staged_predict(va[0], thread_count=threads)
            ]
            k = stop(curve)
        return m.predict(te[0], ntree_end=k, thread_count=threads), k
    raise ValueError(lib)


def worker(spec: dict) -> dict:
    from ltrboost.metrics import get_metric

    ndcg = get_metric("ndcg@10")
    lib, opts = SYSTEMS[spec["system"]]
    out = {"per_query": [], "trees": [], "fit_s": []}
    for k in range(1, 6):
        p = SHARED_DATA / "MQ2008" / f"Fold{k}"
        tr = _load(p / "train.txt")
        nf = tr[0].shape[1]
        va, te = _load(p / "vali.txt", nf), _load(p / "test.txt", nf)
        t0 = time.perf_counter()
        s, trees = fit_predict(lib, opts, tr, va, te, spec["threads"], ndcg)
        out["fit_s"].append(time.perf_counter() - t0)
        out["trees"].append(int(trees))
        pq = ndcg.per_query(np.asarray(s, np.float64), te[1], offsets_of(te[2]))
        out["per_query"].append(pq.tolist())
        print(f"{spec['system']} Fold{k}: {np.mean(pq):.4f} trees={trees}", file=sys.stderr)
    return out


def _ci(d):
    from scipy import stats

    h = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    return d.mean(), d.mean() - h, d.mean() + h


def report(raw: dict, command: str) -> str:
    rows = []
    order = sorted(raw, key=lambda s: -np.mean([np.mean(f) for f in raw[s]["per_query"]]))
    for s in order:
        r = raw[s]
        folds = [np.mean(f) for f in r["per_query"]]
        rows.append(
            [
                s,
                f"{np.mean(folds):.4f}",
                " / ".join(f"{v:.4f}" for v in folds),
                f"{np.mean(r['trees']):.0f}",
                f"{np.mean(r['fit_s']):.1f}",
            ]
        )
    table = markdown_table(
        ["system", "NDCG@10 (5-fold mean)", "Fold1..5", "trees kept (mean)", "fit s/fold"],
        rows,
    )
    diffs = []
    pairs = [
        (a, b)
        for a in ("ltrboost yetirank", "ltrboost yetirank, OLE", "ltrboost lambdamart")
        for b in ("CatBoost YetiRank", "CatBoost YetiRank (default trees)", "LightGBM lambdarank")
        if a in raw and b in raw
    ]
    for a, b in pairs:
        d = np.concatenate(raw[a]["per_query"]) - np.concatenate(raw[b]["per_query"])
        m, lo, hi = _ci(d)
        diffs.append([f"{a} - {b}", f"{m:+.4f}", f"[{lo:+.4f}, {hi:+.4f}]"])
    dtable = markdown_table(["difference", "mean", "95% CI (784 queries)"], diffs)
    return f"Machine: {machine_description()}\n\nCommand: `{command}`\n\n{table}\n\n{dtable}\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--systems", default="all", help="names separated by semicolons, or all")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--raw", default=str(REPO / "bench" / "results" / "protocol_raw.json"))
    ap.add_argument("--output", default=str(REPO / "bench" / "results" / "protocol.md"))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        with open(spec["out"], "w") as f:
            json.dump(worker(spec), f)
        return 0
    command = "python -m bench.bench_protocol " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    os.makedirs(os.path.dirname(os.path.abspath(args.raw)), exist_ok=True)
    raw: dict = {}
    if os.path.exists(args.raw):
        with open(args.raw) as f:
            raw = json.load(f)
    if not args.report_only:
        names = DEFAULT_SYSTEMS if args.systems == "all" else args.systems.split(";")
        env = dict(os.environ, PYTHONHASHSEED="0")
        pending, running = list(names), []
        while pending or running:
            while pending and len(running) < args.jobs:
                name = pending.pop(0)
                spec = {"system": name, "threads": args.threads}
                spec["out"] = f"{args.raw}.{len(pending)}.part"
                cmd = [sys.executable, "-m", "bench.bench_protocol", "--worker", json.dumps(spec)]
                running.append((spec, subprocess.Popen(cmd, cwd=REPO, env=env)))
            time.sleep(0.5)
            for spec, p in list(running):
                if p.poll() is None:
                    continue
                running.remove((spec, p))
                if p.returncode != 0:
                    raise RuntimeError(f"worker failed: {spec['system']}")
                with open(spec["out"]) as f:
                    raw[spec["system"]] = json.load(f)
                os.remove(spec["out"])
                with open(args.raw, "w") as f:
                    json.dump(raw, f)
    text = report(raw, command)
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Every objective on every shared dataset, trained through the CLI, plus peer checks.

Usage::

    python -m bench.bench_objectives [--trees 100] [--output bench/results/objectives.md]

Each objective is trained with ``ltrboost train`` (in-process ``cli.main``) with the same
settings: ``--trees`` rounds, learning rate 0.1 (``gbrank``: 1.0, its default, as the
averaged update needs eta >= 1), 31 leaves, at least 10 documents per
leaf, 255 bins; MQ2008 Fold1 early-stops on its validation file (patience 30), the other
sets (no validation file) train the full number of rounds.  Test metrics come from
ltrboost's metric module: NDCG@1/3/10, ERR@10 and seed 004's pair precision at 10%.

Peer rows train XGBoost with the same trees/leaves/learning rate: ``rank:pairwise`` is
the same loss as ``ranknet``, ``rank:map`` as ``lambdamart`` with ``lambda_metric=map``,
``multi:softprob`` scored by expected grade as ``mcrank``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

from bench._common import REPO, SHARED_DATA, machine_description, markdown_table

METRICS = ["ndcg@1", "ndcg@3", "ndcg@10", "err@10", "pair_precision@10%"]
OBJECTIVES = [
    ("lambdamart", []),
    ("lambdamart (err)", ["--lambda-metric", "err"]),
    ("lambdamart (map)", ["--lambda-metric", "map"]),
    ("ranknet", []),
    ("rankboost", []),
    ("mart", []),
    ("logistic_rank", []),
    ("mcrank", []),
    ("gbrank", ["--learning-rate", "1.0"]),  # averaged update: its default, see README
    ("qbrank", []),
]


def datasets():
    d = SHARED_DATA
    return [
        (
            "MQ2008/Fold1",
            d / "MQ2008/Fold1/train.txt",
            d / "MQ2008/Fold1/vali.txt",
            d / "MQ2008/Fold1/test.txt",
        ),
        (
            "lightgbm_example",
            d / "lightgbm_example/rank.train",
            None,
            d / "lightgbm_example/rank.test",
        ),
        (
            "mslr_tiny",
            d / "mslr_tiny/search_tiny_train.txt",
            None,
            d / "mslr_tiny/search_tiny_test.txt",
        ),
        (
            "trec_news",
            d / "trec_news/trec_news_2018.train",
            None,
            d / "trec_news/trec_news_2018.test",
        ),
    ]


def _evaluate(scores, te):
    from ltrboost.dataset import make_dataset
    from ltrboost.metrics import evaluate

    ds = make_dataset(te.X, te.y, qid=te.qid)
    s = np.asarray(scores, np.float64)
    if ds.order is not None:
        s = s[ds.order]
    return evaluate(s, ds.y, ds.query_offsets, metrics=METRICS)


def run_ltrboost(name, extra, train, valid, test, trees, tmp):
    from ltrboost.cli import main
    from ltrboost.io.letor import load_svmlight
    from ltrboost.io.model_json import load_model
    from ltrboost.objectives.registry import available_objectives

    objective = name.split(" ")[0]
    if objective not in available_objectives():
        return None
    model = os.path.join(tmp, "m.json")
    argv = [
        "train",
        str(train),
        "--objective",
        objective,
        "--n-estimators",
        str(trees),
        "--learning-rate",
        "0.1",
        "--max-leaf-nodes",
        "31",
        "--min-samples-leaf",
        "10",
        "--n-threads",
        "2",
        "--quiet",
        "--output",
        model,
        *extra,
    ]
    if valid is not None:
        argv += ["--valid", str(valid), "--early-stopping-rounds", "30"]
    t0 = time.perf_counter()
    rc = main(argv)
    seconds = time.perf_counter() - t0
    if rc != 0:
        return {"error": f"exit {rc}"}
    booster = load_model(model)
    te = load_svmlight(str(test), n_features=booster.n_features)
    res = _evaluate(booster.predict(te.X), te)
    res["seconds"] = seconds
    return res


def run_xgboost(objective, train, test, trees):
    import xgboost as xgb

    from ltrboost.io.letor import load_svmlight

    tr = load_svmlight(str(train))
    te = load_svmlight(str(test), n_features=tr.X.shape[1])

    def runs(q):
        return np.cumsum(np.r_[0, q[1:] != q[:-1]])

    params = {
        "tree_method": "hist",
        "grow_policy": "lossguide",
        "max_leaves": 31,
        "max_depth": 0,
        "eta": 0.1,
        "min_child_weight": 0,
        "nthread": 2,
        "seed": 0,
    }
    t0 = time.perf_counter()
    if objective == "multi:softprob":
        n_class = int(tr.y.max()) + 1
        d = xgb.DMatrix(tr.X, tr.y)
        booster = xgb.train(params | {"objective": objective, "num_class": n_class}, d, trees)
        proba = booster.predict(xgb.DMatrix(te.X))
        scores = proba @ np.arange(n_class)
    else:
        # rank:map takes binary labels only (ltrboost's map lambdas binarise y >= 1)
        y = (tr.y >= 1).astype(np.float64) if objective == "rank:map" else tr.y
        d = xgb.DMatrix(tr.X, y, qid=runs(tr.qid))
        extra = (
            {"lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": 30}
            if objective == "rank:map"
            else {"lambdarank_pair_method": "mean", "lambdarank_num_pair_per_sample": 1}
        )
        if objective == "rank:pairwise":
            extra = {}
        booster = xgb.train(params | {"objective": objective} | extra, d, trees)
        scores = booster.predict(xgb.DMatrix(te.X))
    seconds = time.perf_counter() - t0
    res = _evaluate(scores, te)
    res["seconds"] = seconds
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--output", default=str(REPO / "bench" / "results" / "objectives.md"))
    args = ap.parse_args(argv)
    if not SHARED_DATA.exists():
        print(f"{SHARED_DATA} not found", file=sys.stderr)
        return 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for dname, train, valid, test in datasets():
            for oname, extra in OBJECTIVES:
                r = run_ltrboost(oname, extra, train, valid, test, args.trees, tmp)
                if r is None:
                    continue
                if "error" in r:
                    rows.append([dname, oname, r["error"], *[""] * len(METRICS)])
                    continue
                rows.append(
                    [dname, oname, *(f"{r[m]:.4f}" for m in METRICS), f"{r['seconds']:.1f}"]
                )
                print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
            for peer in ("rank:pairwise", "rank:map", "multi:softprob"):
                r = run_xgboost(peer, train, test, args.trees)
                rows.append(
                    [
                        dname,
                        f"XGBoost {peer}",
                        *(f"{r[m]:.4f}" for m in METRICS),
                        f"{r['seconds']:.1f}",
                    ]
                )
                print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    table = markdown_table(["data", "objective", *METRICS, "seconds"], rows)
    text = (
        f"Machine: {machine_description()}\n\nCommand: `python -m "
        f"bench.bench_objectives --trees {args.trees}`\n\n{table}\n"
    )
    print(text)
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

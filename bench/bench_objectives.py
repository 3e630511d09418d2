"""Every objective on every shared dataset, trained through the CLI, plus peer rows.

Usage::

    python -m bench.bench_objectives [--trees 300] [--fixed-trees 100] [--threads 1]
                                     [--datasets mq2008,synthetic,lightgbm_example,...]
                                     [--output bench/results/objectives.md]

Each objective is trained with ``ltrboost train`` (in-process ``cli.main``) with the same
settings: 20 leaves, at least 20 documents per leaf, learning rate 0.1 (``gbrank``: 1.0,
its default, as the averaged update needs eta >= 1), 255 bins, one thread.  Data with a
validation set (MQ2008 Fold1-5, the long-query synthetic set) early-stops on validation
NDCG@10 with patience 50 and at most ``--trees`` rounds; the small sets without one
(``lightgbm_example``, ``mslr_tiny``, ``trec_news``) train ``--fixed-trees`` rounds.
MQ2008 rows are means over the 5 folds; ``mq2008_binary`` is MQ2008 with labels
``y >= 1`` set to 1 (binary relevance, same folds).  ``synthetic``:
``make_ranking_mslr_like(36000, docs_per_query=150, random_state=2026)`` cut by query
into 5 parts (the parity study's split, its fold 1: test part 1, validation part 2,
training parts 3-5; ~21,600 training documents).  Test metrics come from ltrboost's
metric module: NDCG@1/3/10, ERR@10 and seed 004's pair precision at 10%.

Peer rows use the same leaves, documents per leaf (where the library has the limit),
learning rate, bins and early-stopping rule (see ``bench_protocol``, whose training code
they share): CatBoost ``YetiRank`` (``Lossguide`` trees), LightGBM ``lambdarank``,
XGBoost ``rank:ndcg`` (top-30 pairs), ``rank:pairwise`` (the loss of ``ranknet``),
``rank:map`` (``lambdamart`` with ``lambda_metric=map``; binary labels y >= 1) and
``multi:softprob`` scored by expected grade (``mcrank``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time

import numpy as np

from bench._common import REPO, SHARED_DATA, machine_description, markdown_table

METRICS = ["ndcg@1", "ndcg@3", "ndcg@10", "err@10", "pair_precision@10%"]
LEAVES, RATE, MIN_LEAF, PATIENCE = 20, 0.1, 20, 50
OBJECTIVES = [
    ("lambdamart", []),
    ("lambdamart, OLE", ["--split-criterion", "ole"]),
    ("lambdamart (err)", ["--lambda-metric", "err"]),
    ("lambdamart (map)", ["--lambda-metric", "map"]),
    ("yetirank", []),
    ("yetirank, OLE", ["--split-criterion", "ole"]),
    ("ranknet", []),
    ("rankboost", []),
    ("mart", []),
    ("logistic_rank", []),
    ("mcrank", []),
    ("gbrank", ["--learning-rate", "1.0"]),  # averaged update: its default, see README
    ("qbrank", []),
    ("xendcg", []),
]
PEERS = [
    "CatBoost YetiRank",
    "LightGBM lambdarank",
    "LightGBM rank_xendcg",
    "XGBoost rank:ndcg",
    "XGBoost rank:pairwise",
    "XGBoost rank:map",
    "XGBoost multi:softprob",
]
ALL_DATASETS = "mq2008,mq2008_binary,synthetic,lightgbm_example,mslr_tiny,trec_news"


def datasets(names, tmp):
    """(group, split name, train path, valid path or None, test path)."""
    d = SHARED_DATA
    out = []
    if "mq2008" in names:
        for k in range(1, 6):
            f = d / "MQ2008" / f"Fold{k}"
            out.append(
                ("MQ2008 (5 folds)", f"Fold{k}", f / "train.txt", f / "vali.txt", f / "test.txt")
            )
    if "mq2008_binary" in names:  # the same folds, labels y >= 1 -> 1 (binary relevance)
        from ltrboost.io.letor import dump_svmlight, load_svmlight

        for k in range(1, 6):
            f = d / "MQ2008" / f"Fold{k}"
            paths = []
            for part in ("train", "vali", "test"):
                data = load_svmlight(str(f / f"{part}.txt"))
                path = os.path.join(tmp, f"mq2008b.{k}.{part}")
                dump_svmlight(path, data.X, (data.y >= 1).astype(np.float64), data.qid)
                paths.append(path)
            out.append(("MQ2008 binary (5 folds)", f"Fold{k}", *paths))
    if "synthetic" in names:
        from bench.bench_parity import folds
        from ltrboost.io.letor import dump_svmlight

        _, tr, va, te = next(folds("synthetic"))
        paths = []
        for part, (X, y, q) in zip(("train", "valid", "test"), (tr, va, te), strict=True):
            path = os.path.join(tmp, f"synthetic.{part}")
            dump_svmlight(path, X, y, q)
            paths.append(path)
        out.append(("synthetic, 150 docs/query", "part1", *paths))
    for name, train, test in (
        ("lightgbm_example", "lightgbm_example/rank.train", "lightgbm_example/rank.test"),
        ("mslr_tiny", "mslr_tiny/search_tiny_train.txt", "mslr_tiny/search_tiny_test.txt"),
        ("trec_news", "trec_news/trec_news_2018.train", "trec_news/trec_news_2018.test"),
    ):
        if name in names:
            out.append((name, "test", d / train, None, d / test))
    return out


def _evaluate(scores, te):
    from ltrboost.dataset import make_dataset
    from ltrboost.metrics import evaluate

    ds = make_dataset(te.X, te.y, qid=te.qid)
    s = np.asarray(scores, np.float64)
    if ds.order is not None:
        s = s[ds.order]
    return evaluate(s, ds.y, ds.query_offsets, metrics=METRICS)


def run_ltrboost(name, extra, train, valid, test, trees, threads, tmp):
    from ltrboost.cli import main
    from ltrboost.io.letor import load_svmlight
    from ltrboost.io.model_json import load_model

    objective = name.split(" ")[0].rstrip(",")
    model = os.path.join(tmp, "m.json")
    argv = [
        "train",
        str(train),
        "--objective",
        objective,
        "--n-estimators",
        str(trees),
        "--learning-rate",
        str(RATE),
        "--max-leaf-nodes",
        str(LEAVES),
        "--min-samples-leaf",
        str(MIN_LEAF),
        "--max-bins",
        "255",
        "--n-threads",
        str(threads),
        "--quiet",
        "--output",
        model,
        *extra,
    ]
    if valid is not None:
        argv += ["--valid", str(valid), "--metric", "ndcg@10"]
        argv += ["--early-stopping-rounds", str(PATIENCE)]
    t0 = time.perf_counter()
    rc = main(argv)
    seconds = time.perf_counter() - t0
    if rc != 0:
        return {"error": f"exit {rc}"}
    booster = load_model(model)
    te = load_svmlight(str(test), n_features=booster.n_features)
    res = _evaluate(booster.predict(te.X), te)
    res["seconds"] = seconds
    res["trees"] = booster.best_iteration or booster.n_iterations
    return res


def _dense(path, n_features=None):
    from ltrboost.io.letor import load_svmlight

    d = load_svmlight(str(path), n_features=n_features)
    X = np.asarray(d.X.toarray() if hasattr(d.X, "toarray") else d.X)
    return X, d.y, d.qid


def run_peer(peer, train, valid, test, trees, threads):
    from bench.bench_protocol import SYSTEMS, fit_predict, offsets_of, stop_point
    from ltrboost.io.letor import load_svmlight
    from ltrboost.metrics import get_metric

    ndcg = get_metric("ndcg@10")
    tr = _dense(train)
    nf = tr[0].shape[1]
    va = None if valid is None else _dense(valid, nf)
    te_raw = load_svmlight(str(test), n_features=nf)
    te = _dense(test, nf)
    t0 = time.perf_counter()
    if peer in SYSTEMS:
        lib, opts = SYSTEMS[peer]
        settings = {"leaves": LEAVES, "rate": RATE, "min_leaf": MIN_LEAF}
        settings |= {"max_trees": trees, "patience": PATIENCE}
        scores, k = fit_predict(lib, opts, tr, va, te, threads, ndcg, settings)
    else:
        import xgboost as xgb

        objective = peer.split(" ")[1]
        params = {
            "tree_method": "hist",
            "grow_policy": "lossguide",
            "max_leaves": LEAVES,
            "max_depth": 0,
            "max_bin": 255,
            "eta": RATE,
            "nthread": threads,
            "seed": 0,
            "disable_default_eval_metric": 1,
            "objective": objective,
        }

        def runs(q):
            return np.cumsum(np.r_[0, q[1:] != q[:-1]])

        if objective == "multi:softprob":
            n_class = int(max(tr[1].max(), 0 if va is None else va[1].max())) + 1
            params["num_class"] = n_class
            dtr = xgb.DMatrix(tr[0], tr[1])

            def score(pred):
                return np.asarray(pred).reshape(-1, n_class) @ np.arange(n_class)

        else:
            # rank:map takes binary labels only (ltrboost's map lambdas binarise y >= 1)
            y = (tr[1] >= 1).astype(np.float64) if objective == "rank:map" else tr[1]
            dtr = xgb.DMatrix(tr[0], y, qid=runs(tr[2]))
            if objective == "rank:map":
                params |= {"lambdarank_pair_method": "topk", "lambdarank_num_pair_per_sample": 30}

            def score(pred):
                return np.asarray(pred)

        evals, curve, kw = [], [], {}
        if va is not None:
            va_off = offsets_of(va[2])

            def metric(predt, dmat):
                curve.append(float(ndcg(score(predt), va[1], va_off)))
                return "ndcg10", curve[-1]

            evals = [(xgb.DMatrix(va[0]), "valid")]
            kw = {"custom_metric": metric, "maximize": True, "early_stopping_rounds": PATIENCE}
        b = xgb.train(params, dtr, trees, evals=evals, verbose_eval=False, **kw)
        k = stop_point(curve, PATIENCE) if va is not None else trees
        scores = score(b.predict(xgb.DMatrix(te[0]), iteration_range=(0, k)))
    seconds = time.perf_counter() - t0
    res = _evaluate(scores, te_raw)
    res["seconds"] = seconds
    res["trees"] = k
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trees", type=int, default=300, help="cap with early stopping")
    ap.add_argument("--fixed-trees", type=int, default=100, help="rounds without validation")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--datasets", default=ALL_DATASETS)
    ap.add_argument(
        "--only",
        default=None,
        help="comma-separated rows to run (objective or peer names, e.g. "
        "'xendcg,LightGBM rank_xendcg'); default: every row",
    )
    ap.add_argument("--output", default=str(REPO / "bench" / "results" / "objectives.md"))
    args = ap.parse_args(argv)
    unknown = sorted(set(args.datasets.split(",")) - set(ALL_DATASETS.split(",")))
    if unknown or args.trees < 1 or args.fixed_trees < 1 or args.threads < 1:
        ap.error(
            f"--datasets takes {ALL_DATASETS} (unknown: {','.join(unknown) or '-'}); "
            "--trees, --fixed-trees and --threads at least 1"
        )
    if not SHARED_DATA.exists():
        print(f"{SHARED_DATA} not found", file=sys.stderr)
        return 1
    results: dict[tuple[str, str], list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for group, split, train, valid, test in datasets(args.datasets.split(","), tmp):
            trees = args.trees if valid is not None else args.fixed_trees
            only = None if args.only is None else set(args.only.split(","))
            for name, extra in OBJECTIVES:
                if only is not None and name not in only:
                    continue
                r = run_ltrboost(name, extra, train, valid, test, trees, args.threads, tmp)
                results.setdefault((group, name), []).append(r)
                print(group, split, name, r, file=sys.stderr, flush=True)
            for peer in PEERS:
                if only is not None and peer not in only:
                    continue
                r = run_peer(peer, train, valid, test, trees, args.threads)
                results.setdefault((group, peer), []).append(r)
                print(group, split, peer, r, file=sys.stderr, flush=True)
    rows = []
    for (group, name), rs in results.items():
        if any("error" in r for r in rs):
            error = next(r["error"] for r in rs if "error" in r)
            # one cell a column: the metrics, "trees" and "seconds"
            rows.append([group, name, error, *[""] * (len(METRICS) + 1)])
            continue
        rows.append(
            [
                group,
                name,
                *(f"{np.mean([r[m] for r in rs]):.4f}" for m in METRICS),
                f"{np.mean([r['trees'] for r in rs]):.0f}",
                f"{np.mean([r['seconds'] for r in rs]):.1f}",
            ]
        )
    table = markdown_table(["data", "objective", *METRICS, "trees", "seconds"], rows)
    cmd = "python -m bench.bench_objectives " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    text = f"Machine: {machine_description()}\n\nCommand: `{cmd}`\n\n{table}\n"
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    replaced = os.path.exists(args.output)
    with open(args.output, "w") as f:
        f.write(text)
    print(f"{'replaced' if replaced else 'wrote'} {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Quality side by side: ltrboost ``lambdamart`` vs LightGBM ``lambdarank`` (and XGBoost
``rank:ndcg``) on the shared LETOR data, same settings, early stopping on validation.

Usage::

    python -m bench.bench_quality [--datasets mq2008,lightgbm_example] [--trees 500]
                                  [--libs ltrboost,lightgbm,xgboost] [--threads 2]
                                  [--repeats 1] [--output FILE.md]

``--libs`` also takes ``ltrboost-qK`` and ``lightgbm-qK``: quantised gradients with K
levels (``quantized_gradients=K``; LightGBM's ``use_quantized_grad=True,
num_grad_quant_bins=K, quant_train_renew_leaf=True``).

Settings shared by all libraries: 31 leaves grown leaf-wise, learning rate 0.1, 255 bins,
min 20 documents per leaf, up to ``--trees`` rounds, early stopping after 50 rounds without
improvement of NDCG@10 on the validation file, pairs truncated to the top 30 of each query
(LightGBM ``lambdarank_truncation_level=30``; ltrboost ``truncation_level=30``; XGBoost
``lambdarank_pair_method=topk``, ``lambdarank_num_pair_per_sample=30``), 2 threads.
All test metrics are computed by ltrboost's metric module on each library's scores
(queries without relevant documents score 1, as LightGBM's own NDCG).
Each (library, fold) runs in a fresh subprocess: seconds are training wall time (data
loading excluded; ltrboost's kernels are compiled once by a warm-up process before
timing, see ``bench_speed`` for compile times), "CPU s" the process CPU time of the same
fit (all threads; with ``--threads 1`` it is far less sensitive than wall time to other
jobs on a shared machine), memory is the peak RSS of that process.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from bench._common import (
    SHARED_DATA,
    group_sizes,
    machine_description,
    markdown_table,
    peak_rss_mb,
    run_worker,
)

METRICS = ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "err@10"]
DATASETS = ("mq2008", "lightgbm_example")
LIBS = ("ltrboost", "lightgbm", "xgboost")
SETTINGS = dict(
    leaves=31,
    learning_rate=0.1,
    max_bins=255,
    min_leaf=20,
    early_stopping=50,
    truncation=30,
    threads=2,
)


def datasets(names: list[str]) -> list[tuple[str, str, str, str]]:
    """(dataset, train, valid, test) paths; the LightGBM example has no validation file:
    its test file doubles as validation there (as in LightGBM's own example)."""
    out = []
    if "mq2008" in names:
        for k in range(1, 6):
            d = SHARED_DATA / "MQ2008" / f"Fold{k}"
            out.append(
                (
                    f"MQ2008/Fold{k}",
                    str(d / "train.txt"),
                    str(d / "vali.txt"),
                    str(d / "test.txt"),
                )
            )
    if "lightgbm_example" in names:
        d = SHARED_DATA / "lightgbm_example"
        out.append(
            (
                "lightgbm_example",
                str(d / "rank.train"),
                str(d / "rank.test"),
                str(d / "rank.test"),
            )
        )
    return out


def _load(path: str, n_features: int | None = None):
    from ltrboost.io.letor import load_svmlight

    return load_svmlight(path, n_features=n_features)


def worker(spec: dict) -> dict:
    # "ltrboost-q4" / "lightgbm-q4": quantised gradients, 4 levels (quantized_gradients=4;
    # LightGBM's use_quantized_grad, num_grad_quant_bins=4, quant_train_renew_leaf)
    lib, _, quant = spec["lib"].partition("-q")
    k = int(quant) if quant else 0
    s = dict(SETTINGS, threads=spec.get("threads", SETTINGS["threads"]))
    tr = _load(spec["train"])
    nf = tr.X.shape[1]
    va = _load(spec["valid"], nf)
    te = _load(spec["test"], nf)
    c0 = time.process_time()
    t0 = time.perf_counter()
    if lib == "ltrboost":
        from ltrboost import Ranker

        model = Ranker(
            objective="lambdamart",
            n_estimators=spec["trees"],
            learning_rate=s["learning_rate"],
            max_leaf_nodes=s["leaves"],
            min_samples_leaf=s["min_leaf"],
            max_bins=s["max_bins"],
            truncation_level=s["truncation"],
            n_threads=s["threads"],
            early_stopping_rounds=s["early_stopping"],
            eval_metric="ndcg@10",
            quantized_gradients=k,
        )
        model.fit(tr.X, tr.y, qid=tr.qid, eval_set=[(va.X, va.y, va.qid)])
        fit_s = time.perf_counter() - t0
        cpu_s = time.process_time() - c0
        scores = model.predict(te.X)
        best = model.best_iteration_
        trained = model.booster_.n_iterations
    elif lib == "lightgbm":
        import lightgbm as lgb

        model = lgb.LGBMRanker(
            objective="lambdarank",
            n_estimators=spec["trees"],
            learning_rate=s["learning_rate"],
            num_leaves=s["leaves"],
            min_child_samples=s["min_leaf"],
            max_bin=s["max_bins"],
            lambdarank_truncation_level=s["truncation"],
            **(
                {
                    "use_quantized_grad": True,
                    "num_grad_quant_bins": k,
                    "quant_train_renew_leaf": True,
                }
                if k
                else {}
            ),
            n_jobs=s["threads"],
            verbose=-1,
            random_state=0,
        )
        model.fit(
            tr.X,
            tr.y,
            group=group_sizes(tr.qid),
            eval_set=[(va.X, va.y)],
            eval_group=[group_sizes(va.qid)],
            eval_at=[10],
            callbacks=[lgb.early_stopping(s["early_stopping"], verbose=False)],
        )
        fit_s = time.perf_counter() - t0
        cpu_s = time.process_time() - c0
        scores = model.predict(te.X, num_iteration=model.best_iteration_)
        best = model.best_iteration_
        trained = len(next(iter(model.evals_result_.values()))["ndcg@10"])
    elif lib == "xgboost":
        import xgboost as xgb

        model = xgb.XGBRanker(
            objective="rank:ndcg",
            n_estimators=spec["trees"],
            learning_rate=s["learning_rate"],
            max_leaves=s["leaves"],
            max_depth=0,
            grow_policy="lossguide",
            tree_method="hist",
            max_bin=s["max_bins"],
            lambdarank_pair_method="topk",
            lambdarank_num_pair_per_sample=s["truncation"],
            n_jobs=s["threads"],
            eval_metric="ndcg@10",
            early_stopping_rounds=s["early_stopping"],
            random_state=0,
        )

        # XGBoost needs qid sorted: number the contiguous query runs instead
        def runs(q):
            return np.cumsum(np.r_[0, q[1:] != q[:-1]])

        model.fit(
            tr.X,
            tr.y,
            qid=runs(tr.qid),
            eval_set=[(va.X, va.y)],
            eval_qid=[runs(va.qid)],
            verbose=False,
        )
        fit_s = time.perf_counter() - t0
        cpu_s = time.process_time() - c0
        scores = model.predict(te.X, iteration_range=(0, model.best_iteration + 1))
        best = model.best_iteration + 1
        trained = model.get_booster().num_boosted_rounds()
    else:
        raise ValueError(lib)
    from ltrboost.dataset import make_dataset
    from ltrboost.metrics import evaluate

    ds = make_dataset(te.X, te.y, qid=te.qid)
    order = ds.order if ds.order is not None else slice(None)
    res = evaluate(
        np.asarray(scores, dtype=np.float64)[order],
        ds.y,
        ds.query_offsets,
        metrics=METRICS,
    )
    return {
        "metrics": res,
        "fit_s": fit_s,
        "cpu_s": cpu_s,
        "best_iteration": best,
        "trees_trained": int(trained),
        "peak_rss_mb": peak_rss_mb(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--datasets", default="mq2008,lightgbm_example")
    ap.add_argument("--libs", default="ltrboost,lightgbm,xgboost")
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--output", default=None, help="also write the Markdown here")
    ap.add_argument("--threads", type=int, default=SETTINGS["threads"])
    ap.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="train each (fold, library) R times, the libraries interleaved, and report the "
        "fastest fit (metrics are the same in every repeat: all three are seeded)",
    )
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    libs = args.libs.split(",")
    names = args.datasets.split(",")
    bad_libs = [
        lib
        for lib in libs
        if lib not in LIBS
        and not (
            lib.partition("-q")[0] in ("ltrboost", "lightgbm") and lib.partition("-q")[2].isdigit()
        )
    ]
    if set(names) - set(DATASETS) or bad_libs or args.repeats < 1 or args.trees < 1:
        ap.error(
            f"--datasets takes {','.join(DATASETS)}, --libs {','.join(LIBS)} or ltrboost-qK, "
            f"lightgbm-qK (got "
            f"{args.datasets!r}, {args.libs!r}); --trees and --repeats at least 1"
        )
    if not SHARED_DATA.exists():  # after the usage checks: they hold without the data
        print(f"{SHARED_DATA} not found; nothing to benchmark", file=sys.stderr)
        return 1
    results: dict[tuple[str, str], dict] = {}
    if "ltrboost" in libs:  # fill the Numba cache first: compile time is not fit time
        first = datasets(names)[0]
        run_worker(
            "bench_quality",
            {"lib": "ltrboost", "train": first[2], "valid": first[2], "test": first[2], "trees": 2},
        )
    for name, tr, va, te in datasets(names):
        for _ in range(args.repeats):
            for lib in libs:
                spec = {"lib": lib, "train": tr, "valid": va, "test": te, "trees": args.trees}
                r = run_worker("bench_quality", dict(spec, threads=args.threads))
                if (name, lib) in results:
                    r["fit_s"] = min(r["fit_s"], results[(name, lib)]["fit_s"])
                    r["cpu_s"] = min(r["cpu_s"], results[(name, lib)]["cpu_s"])
                results[(name, lib)] = r
                print(
                    f"{name:18s} {lib:9s} ndcg@10={r['metrics']['ndcg@10']:.4f} "
                    f"fit={r['fit_s']:.2f}s cpu={r['cpu_s']:.2f}s best={r['best_iteration']} "
                    f"rss={r['peak_rss_mb']:.0f}MB",
                    file=sys.stderr,
                )
    # table: per dataset group (MQ2008 mean over folds, lightgbm example)
    groups: dict[str, list[str]] = {}
    for name, _ in results:
        groups.setdefault(name.split("/")[0], [])
        if name not in groups[name.split("/")[0]]:
            groups[name.split("/")[0]].append(name)
    rows = []
    for g, names in groups.items():
        for lib in libs:
            rs = [results[(n, lib)] for n in names]
            m = {k: np.mean([r["metrics"][k] for r in rs]) for k in METRICS}
            rows.append(
                [
                    g + (f" ({len(names)} folds, mean)" if len(names) > 1 else ""),
                    lib,
                    *(f"{m[k]:.4f}" for k in METRICS),
                    f"{np.mean([r['fit_s'] for r in rs]):.2f}",
                    f"{np.mean([r['cpu_s'] for r in rs]):.2f}",
                    f"{np.mean([r['trees_trained'] for r in rs]):.0f}",
                    f"{1e3 * np.mean([r['fit_s'] / r['trees_trained'] for r in rs]):.1f}",
                    f"{np.mean([r['best_iteration'] for r in rs]):.0f}",
                    f"{max(r['peak_rss_mb'] for r in rs):.0f}",
                ]
            )
    header = ["data", "library", *METRICS, "train s", "CPU s", "trees", "ms/tree", "best iter"]
    table = markdown_table([*header, "peak RSS MB"], rows)
    text = (
        f"Machine: {machine_description()}\n\nCommand: `python -m bench.bench_quality "
        f"--trees {args.trees} --datasets {args.datasets} --libs {args.libs} "
        f"--threads {args.threads} --repeats {args.repeats}`\n\n{table}\n"
    )
    print(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

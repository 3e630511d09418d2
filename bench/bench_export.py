"""Export: time and file size per format, and each consumer's prediction throughput.

Usage::

    python -m bench.bench_export [--docs 100000] [--trees 500] [--leaves 31]
                                 [--threads 2] [--repeats 3] [--output FILE.md]

Data: ``ltrboost.datasets.make_ranking_mslr_like`` (136 float32 features), ``--docs``
documents; a LambdaMART model of ``--trees`` trees with ``--leaves`` leaves (at least 20
documents per leaf) is trained on them and exported to every format.  Throughput: each
consumer scores the same ``--docs`` documents (float32) with ``--threads`` threads --
ltrboost ``Booster.predict``, LightGBM ``Booster.predict``, XGBoost ``inplace_predict``
and onnxruntime ``InferenceSession.run`` -- best of ``--repeats`` runs after a warm-up;
the last column is the largest difference from ltrboost's scores.  Solr and RankLib
(Java) and the tree dump have no consumer here: export time and size only.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from bench._common import machine_description

SUFFIX = {"lightgbm": ".txt", "ranklib": ".txt", "onnx": ".onnx"}


def best_of(fn, repeats: int) -> tuple[float, object]:
    out = fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--trees", type=int, default=500)
    ap.add_argument("--leaves", type=int, default=31)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--output", default=None)
    args = ap.parse_args(argv)

    from ltrboost import make_dataset, train
    from ltrboost.datasets import make_ranking_mslr_like
    from ltrboost.export import FORMATS, export_model

    X, y, qid = make_ranking_mslr_like(args.docs, random_state=0)
    X = np.ascontiguousarray(X, dtype=np.float32)
    t0 = time.perf_counter()
    b = train(
        {
            "n_estimators": args.trees,
            "max_leaf_nodes": args.leaves,
            "min_samples_leaf": 20,
            "n_threads": args.threads,
        },
        make_dataset(X, y, qid=qid),
    )
    t_train = time.perf_counter() - t0
    n_leaves = sum(int(t["is_leaf"].sum()) for t in b.trees)

    tmp = Path(tempfile.mkdtemp(prefix="ltrboost_export_bench_"))
    files = {}
    rows = []
    for fmt in FORMATS:
        path = tmp / f"model.{fmt}{SUFFIX.get(fmt, '.json')}"
        opts = {"assume_no_missing": True} if fmt == "ranklib" else {}
        t, _ = best_of(lambda p=path, f=fmt, o=opts: export_model(b, p, f, **o), 1)
        files[fmt] = path
        rows.append((fmt, t, os.path.getsize(path)))
    json_path = tmp / "model.ltrboost.json"
    t_json, _ = best_of(lambda: b.save_model(str(json_path)), 1)

    ours_t, ours = best_of(lambda: b.predict(X, n_threads=args.threads), args.repeats)
    pred = [("ltrboost predict (float64)", ours_t, 0.0)]
    try:
        import lightgbm as lgb

        lb = lgb.Booster(model_file=str(files["lightgbm"]))
        t, s = best_of(lambda: lb.predict(X, num_threads=args.threads), args.repeats)
        pred.append(("LightGBM (float64)", t, float(np.max(np.abs(s - ours)))))
    except ImportError:
        pass
    try:
        import xgboost as xgb

        xb = xgb.Booster(model_file=str(files["xgboost"]))
        xb.set_param({"nthread": args.threads})
        t, s = best_of(lambda: xb.inplace_predict(X, validate_features=False), args.repeats)
        pred.append(("XGBoost (float32)", t, float(np.max(np.abs(s - ours)))))
    except ImportError:
        pass
    try:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(str(files["onnx"]), so, providers=["CPUExecutionProvider"])
        t, s = best_of(lambda: sess.run(None, {"features": X})[0], args.repeats)
        pred.append(("onnxruntime (float32)", t, float(np.max(np.abs(s - ours)))))
    except ImportError:
        pass

    lines = [
        f"Model: LambdaMART, {len(b.trees)} trees, {n_leaves} leaves in all, trained "
        f"in {t_train:.0f} s on {args.docs:,} documents x {X.shape[1]} features; "
        f"{args.threads} threads. Machine: {machine_description()}.",
        "",
        "| format | export time (s) | file size (MB) |",
        "|---|---:|---:|",
    ]
    lines += [f"| {f} | {t:.2f} | {sz / 1e6:.2f} |" for f, t, sz in rows]
    lines.append(
        f"| (ltrboost JSON, for reference) | {t_json:.2f} | "
        f"{os.path.getsize(json_path) / 1e6:.2f} |"
    )
    lines += [
        "",
        f"| consumer | predict {args.docs:,} docs (s) | docs/s | speed vs ltrboost | "
        "max abs diff from ltrboost |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, t, diff in pred:
        lines.append(
            f"| {name} | {t:.3f} | {args.docs / t:,.0f} | {ours_t / t:.2f}x | {diff:.1e} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()

"""Benchmark: training on a SciPy sparse matrix (issue 14), ltrboost vs LightGBM.

The issue's case: a 5,000 x 20,000 CSR matrix with 100k non-zeros (values uniform in
[0, 1), ``random_state`` fixed), 100 queries of 50 documents, labels 0..4, 20 trees,
``LGBMRanker`` / ``ltrboost.Ranker`` with their defaults otherwise.  Each library runs in
its own process under ``/usr/bin/time -v`` (wall time and peak RSS of the whole process:
import, data generation, fit and one predict on the training matrix), niced; the row
``none`` only generates the data (the floor of both columns).  An untimed ltrboost run
first fills the Numba cache, so ltrboost's rows load its kernels instead of compiling.

Usage::

    python -m bench.bench_sparse [--rows 5000] [--cols 20000] [--nnz 100000] [--trees 20]
        [--libs ltrboost,lightgbm] [--pythonpath SRC]

``--pythonpath`` picks the ltrboost source tree (e.g. main's, for a before/after table).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time


def make_data(rows: int, cols: int, nnz: int, seed: int = 0):
    import numpy as np
    import scipy.sparse as sp

    # Distinct random positions without scipy.sparse.random, whose draw without
    # replacement allocates rows * cols integers (0.8 GB here: it would dominate RSS).
    rng = np.random.default_rng(seed)
    flat = np.unique(rng.integers(0, rows * cols, size=nnz + nnz // 10 + 100))
    flat = np.sort(rng.permutation(flat)[:nnz])
    X = sp.csr_matrix((rng.random(flat.shape[0]), (flat // cols, flat % cols)), shape=(rows, cols))
    y = rng.integers(0, 5, size=rows)
    group = np.full(max(rows // 50, 1), 50)
    group[-1] += rows - group.sum()
    return X, y, group


def worker(lib: str, rows: int, cols: int, nnz: int, trees: int, min_leaf: int) -> None:
    X, y, group = make_data(rows, cols, nnz)
    if lib == "none":  # baseline: Python, NumPy, SciPy and the data alone
        print("FIT 0 PREDICT 0 LEAVES 0")
        return
    t0 = time.perf_counter()
    if lib == "ltrboost":
        from ltrboost import Ranker

        model = Ranker(n_estimators=trees, n_threads=2, random_state=0, min_samples_leaf=min_leaf)
        model.fit(X, y, group=group)
    else:
        from lightgbm import LGBMRanker

        model = LGBMRanker(
            n_estimators=trees, n_jobs=2, random_state=0, verbose=-1, min_child_samples=min_leaf
        )
        model.fit(X, y, group=group)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    model.predict(X)
    t_pred = time.perf_counter() - t0
    if lib == "ltrboost":
        leaves = sum(int(t["is_leaf"].sum()) for t in model.booster_.trees)
    else:
        leaves = sum(t["num_leaves"] for t in model.booster_.dump_model()["tree_info"])
    print(f"FIT {t_fit:.3f} PREDICT {t_pred:.3f} LEAVES {leaves}")


def run(lib: str, args) -> dict:
    env = dict(os.environ, NUMBA_NUM_THREADS="2")
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    cmd = ["nice", "-n", "10", "/usr/bin/time", "-v", sys.executable, "-m", "bench.bench_sparse"]
    cmd += ["--worker", lib, "--rows", str(args.rows), "--cols", str(args.cols)]
    cmd += ["--nnz", str(args.nnz), "--trees", str(args.trees), "--min-leaf", str(args.min_leaf)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{lib} failed:\n{p.stderr[-3000:]}")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", p.stderr)
    secs = 0.0
    for part in wall.group(1).split(":"):
        secs = secs * 60 + float(part)
    m = re.search(r"FIT ([\d.]+) PREDICT ([\d.]+) LEAVES (\d+)", p.stdout)
    fit, pred, leaves = float(m.group(1)), float(m.group(2)), int(m.group(3))
    return {
        "lib": lib,
        "wall": secs,
        "fit": fit,
        "predict": pred,
        "leaves": leaves,
        "rss_gb": rss_kb / 2**20,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--cols", type=int, default=20000)
    ap.add_argument("--nnz", type=int, default=100_000)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--min-leaf", type=int, default=20, help="documents per leaf (both)")
    ap.add_argument("--libs", default="none,ltrboost,lightgbm")
    ap.add_argument("--pythonpath", default=None)
    ap.add_argument("--worker", default=None)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.rows, args.cols, args.nnz, args.trees, args.min_leaf)
        return
    libs = args.libs.split(",")
    if set(libs) - {"none", "ltrboost", "lightgbm"} or min(args.rows, args.cols, args.trees) < 1:
        ap.error("--libs takes none,ltrboost,lightgbm; --rows, --cols, --trees at least 1")
    if args.nnz > args.rows * args.cols:
        ap.error(f"--nnz {args.nnz} is more than --rows x --cols ({args.rows * args.cols})")
    if "ltrboost" in libs:  # fill the Numba cache first (README: kernels loaded from it)
        run("ltrboost", args)
    print("| library | process wall (s) | fit (s) | predict (s) | peak RSS (GiB) | leaves |")
    print("|---|---:|---:|---:|---:|---:|")
    for lib in libs:
        r = run(lib, args)
        print(
            f"| {r['lib']} | {r['wall']:.1f} | {r['fit']:.1f} | {r['predict']:.2f} "
            f"| {r['rss_gb']:.2f} | {r['leaves']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()

"""Speed and memory side by side: ltrboost vs LightGBM vs XGBoost, same data and settings.

Usage::

    python -m bench.bench_speed [--sizes 100000,500000,2000000] [--trees 200] [--repeats 3]
                                [--scaling] [--output bench/results/speed.md]
    python -m bench.bench_speed --jit-only    # compilation time only
    python -m bench.bench_speed --cold-start  # cold-start table only

``--scaling`` also writes the plot to ``scaling.png`` beside ``--output``
(``bench/figures/speed_scaling.png`` in bench/README.md is a copy of it).  The full run
always measures compilation and the cold start too (empty Numba caches: minutes).

Data: ``ltrboost.datasets.make_ranking_mslr_like`` (136 features, ~120 documents per
query, MSLR-like grades), generated once per size and saved under
``bench/results/cache``; every library reads the same arrays.  A separate test set of
20% of the size is generated with another seed.

Shared settings: LambdaMART / ``lambdarank`` / ``rank:ndcg``, 255 bins, 31 leaves grown
leaf-wise (XGBoost ``lossguide``), learning rate 0.1, at least 20 documents per leaf,
2 threads, ``--trees`` rounds, pairs truncated to those with one document in the top 30
of the current ranking (LightGBM ``lambdarank_truncation_level=30``, ltrboost
``truncation_level=30``, XGBoost ``lambdarank_pair_method=topk`` with
``lambdarank_num_pair_per_sample=30``), NDCG gain 2^y - 1, no early stopping.

Cold start (``--cold-start``, also part of the full run): README's first command
(``ltrboost generate``, ``ltrboost train`` with early stopping, ``ltrboost eval``) and a
100k-document fit, each in a first process with ``NUMBA_CACHE_DIR`` pointed at an empty
folder and in a second process reusing it.  Inside each process the command runs twice;
"first call" minus "repeat" is what the process spent on compiling (or, in the second
process, loading) kernels and importing.  ``import`` is the median over repeated
``python -c "import numpy, ltrboost"`` minus ``python -c "import numpy"``; ``help``
is the median of ``python -m ltrboost --help``.  Because wall seconds on a shared
machine swing with its load, the CPU seconds the compiling thread spent inside Numba's
``numba:compile`` events (outermost only; cache loads fire none) are reported too.  These
rows run with the first-run helper off (``LTRBOOST_BACKGROUND_COMPILE=0``, see
``ltrboost._warmup``) so that they count every compilation; a last table runs README's
train and eval as a user does, two processes, helper on and off in alternation: wall
seconds, and CPU seconds of every process (helper included).

Each measurement runs in a fresh subprocess (peak RSS = that process's ``ru_maxrss``);
numbers are medians over ``--repeats`` runs.  ltrboost's JIT compilation is measured
separately: a first process with an empty Numba cache vs a second process using it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench._common import (
    REPO,
    group_sizes,
    machine_description,
    markdown_table,
    peak_rss_mb,
    run_worker,
)

CACHE = REPO / "bench" / "results" / "cache"
SETTINGS = dict(leaves=31, learning_rate=0.1, max_bins=255, min_leaf=20, threads=2, truncation=30)


def data_paths(n_samples: int, docs_per_query: int | None = None) -> dict[str, str]:
    """Generate (once) and cache train/test arrays; return their .npy paths."""
    from ltrboost.datasets import make_ranking_mslr_like

    tag = f"n{n_samples}" + (f"_d{docs_per_query}" if docs_per_query else "")
    CACHE.mkdir(parents=True, exist_ok=True)
    paths = {k: str(CACHE / f"{tag}_{k}.npy") for k in ("Xtr", "ytr", "qtr", "Xte", "yte", "qte")}
    if all(os.path.exists(p) for p in paths.values()):
        return paths
    kw = {} if docs_per_query is None else {"docs_per_query": docs_per_query}
    Xtr, ytr, qtr = make_ranking_mslr_like(n_samples, random_state=0, **kw)
    Xte, yte, qte = make_ranking_mslr_like(max(n_samples // 5, 1000), random_state=1, **kw)
    for k, v in zip(paths, (Xtr, ytr, qtr, Xte, yte, qte), strict=True):
        np.save(paths[k], v)
    return paths


def worker(spec: dict) -> dict:
    # "ltrboost-q4" / "lightgbm-q4": quantised gradients with 4 levels (ltrboost's
    # quantized_gradients=4; LightGBM's use_quantized_grad, num_grad_quant_bins=4 and
    # quant_train_renew_leaf, the same method)
    lib, _, quant = spec["lib"].partition("-q")
    k = int(quant) if quant else 0
    s = SETTINGS
    d = {k: np.load(v) for k, v in spec["paths"].items()}
    Xtr, ytr, qtr, Xte, yte, qte = (d[k] for k in ("Xtr", "ytr", "qtr", "Xte", "yte", "qte"))
    n_trees = spec["trees"]
    out: dict = {}
    if lib == "ltrboost":
        from ltrboost.binning import BinMapper
        from ltrboost.booster import BoosterParams, train
        from ltrboost.dataset import make_dataset

        ds = make_dataset(Xtr, ytr, qid=qtr)
        # Load the compiled kernels (Numba cache) before timing: compilation is
        # measured separately (measure_jit).
        small = make_dataset(Xtr[:2000], ytr[:2000], qid=qtr[:2000])
        train(
            BoosterParams(
                objective="lambdamart", n_estimators=1, truncation_level=30,
                n_threads=s["threads"],
            ),
            small,
        )  # fmt: skip
        t0 = time.perf_counter()
        BinMapper(s["max_bins"], random_state=0, min_samples_bin=3).fit_transform(ds.X)
        out["construct_s"] = time.perf_counter() - t0
        params = BoosterParams(
            objective="lambdamart",
            n_estimators=n_trees,
            learning_rate=s["learning_rate"],
            max_leaf_nodes=s["leaves"],
            min_samples_leaf=s["min_leaf"],
            max_bins=s["max_bins"],
            truncation_level=s["truncation"],
            n_threads=s["threads"],
            quantized_gradients=k,
        )
        t0 = time.perf_counter()
        booster = train(params, ds)
        out["train_s"] = time.perf_counter() - t0 - out["construct_s"]

        def predict(X):
            return booster.predict(X, n_threads=s["threads"])
    elif lib == "lightgbm":
        import lightgbm as lgb

        t0 = time.perf_counter()
        dtrain = lgb.Dataset(
            Xtr,
            ytr,
            group=group_sizes(qtr),
            params={
                "max_bin": s["max_bins"],
                "verbose": -1,
                "num_threads": s["threads"],
            },
        )
        dtrain.construct()
        out["construct_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        model = lgb.train(
            {
                "objective": "lambdarank",
                "num_leaves": s["leaves"],
                "learning_rate": s["learning_rate"],
                "min_data_in_leaf": s["min_leaf"],
                "max_bin": s["max_bins"],
                "lambdarank_truncation_level": s["truncation"],
                "num_threads": s["threads"],
                "verbose": -1,
                "seed": 0,
                **(
                    {
                        "use_quantized_grad": True,
                        "num_grad_quant_bins": k,
                        "quant_train_renew_leaf": True,
                    }
                    if k
                    else {}
                ),
            },
            dtrain,
            num_boost_round=n_trees,
        )
        out["train_s"] = time.perf_counter() - t0

        def predict(X):
            return model.predict(X, num_threads=s["threads"])
    elif lib == "xgboost":
        import xgboost as xgb

        t0 = time.perf_counter()
        dtrain = xgb.QuantileDMatrix(Xtr, ytr, qid=qtr, max_bin=s["max_bins"], nthread=s["threads"])
        out["construct_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        model = xgb.train(
            {
                "objective": "rank:ndcg",
                "tree_method": "hist",
                "grow_policy": "lossguide",
                "max_leaves": s["leaves"],
                "max_depth": 0,
                "eta": s["learning_rate"],
                "max_bin": s["max_bins"],
                "lambdarank_pair_method": "topk",
                "lambdarank_num_pair_per_sample": s["truncation"],
                "nthread": s["threads"],
                "seed": 0,
            },
            dtrain,
            num_boost_round=n_trees,
        )
        out["train_s"] = time.perf_counter() - t0

        def predict(X):
            return model.inplace_predict(X)
    else:
        raise ValueError(lib)
    out["per_tree_ms"] = 1000 * out["train_s"] / n_trees
    predict(Xte[:100])  # warm-up
    t0 = time.perf_counter()
    scores = predict(Xte)
    out["predict_docs_per_s"] = Xte.shape[0] / (time.perf_counter() - t0)
    if spec.get("scores_out"):  # the test scores, for paired comparisons (bench_quantized)
        np.save(spec["scores_out"], np.asarray(scores, np.float64))
    # batch of one query, repeated
    q_sizes = group_sizes(qte)
    first = Xte[: q_sizes[0]]
    reps = 200
    t0 = time.perf_counter()
    for _ in range(reps):
        predict(first)
    out["predict_one_query_docs_per_s"] = reps * first.shape[0] / (time.perf_counter() - t0)
    from ltrboost.metrics import evaluate

    offsets = np.r_[0, np.cumsum(q_sizes)]
    out["test_ndcg@10"] = evaluate(
        np.asarray(scores, np.float64),
        yte.astype(np.float64),
        offsets,
        metrics=["ndcg@10"],
    )["ndcg@10"]
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def jit_worker(spec: dict) -> dict:
    """Time an end-to-end training + prediction (compilation dominates in a fresh
    cache): tiny data by default, ``spec["n"]`` MSLR-like documents when given (then
    the parallel kernels, which tiny data never reaches, compile too).  Generating the
    data is not counted."""
    t0 = time.perf_counter()
    from ltrboost import Ranker
    from ltrboost.datasets import make_ranking, make_ranking_mslr_like

    t_gen = time.perf_counter()
    n = spec.get("n")
    if n:
        X, y, q = make_ranking_mslr_like(n, random_state=0)
    else:
        X, y, q = make_ranking(n_queries=20, docs_per_query=20, random_state=0)
    t_gen = time.perf_counter() - t_gen
    model = Ranker(n_estimators=2, n_threads=2, truncation_level=30)
    model.fit(X, y, qid=q, eval_set=[(X, y, q)])
    model.predict(X)
    return {"seconds": time.perf_counter() - t0 - t_gen}


def measure_jit(n: int | None = None) -> dict:
    """First process (empty Numba cache) vs second process (cache of the first)."""
    spec = {"jit": True, "n": n}
    with tempfile.TemporaryDirectory() as cache_dir:
        env_backup = os.environ.get("NUMBA_CACHE_DIR")
        os.environ["NUMBA_CACHE_DIR"] = cache_dir
        try:
            first = run_worker("bench_speed", spec)["seconds"]
            second = run_worker("bench_speed", spec)["seconds"]
        finally:
            if env_backup is None:
                os.environ.pop("NUMBA_CACHE_DIR", None)
            else:
                os.environ["NUMBA_CACHE_DIR"] = env_backup
    return {"first_process_s": first, "cached_process_s": second}


README_TRAIN = (
    "train data/train.txt --valid data/vali.txt --objective lambdamart "
    "--n-estimators 300 --learning-rate 0.1 --max-leaf-nodes 31 "
    "--early-stopping-rounds 30 --metric ndcg@10 --output model.json"
).split()
README_EVAL = "eval model.json data/test.txt".split()


def cold_worker(spec: dict) -> dict:
    """Run README's train and eval commands (or a 100k fit) twice in this process."""
    import contextlib
    import io

    out: dict = {}
    compiled = _compile_recorder()
    t0 = time.perf_counter()
    if spec.get("n"):
        import ltrboost
        from ltrboost.datasets import make_ranking_mslr_like

        X, y, q = make_ranking_mslr_like(spec["n"], random_state=0)
        params = dict(objective="lambdamart", n_estimators=2, n_threads=2, truncation_level=30)
        for key in ("fit", "fit_repeat"):
            t = time.perf_counter()
            ds = ltrboost.make_dataset(X, y, qid=q)
            ltrboost.train(params, ds).predict(X)
            out[key] = time.perf_counter() - t
    else:
        from ltrboost.cli import main

        sink = io.StringIO()
        for cmd, args in (("train", README_TRAIN), ("eval", README_EVAL)):
            for key in (cmd, cmd + "_repeat"):
                t = time.perf_counter()
                with contextlib.redirect_stderr(sink), contextlib.redirect_stdout(sink):
                    rc = main(args + (["--quiet"] if cmd == "train" else []))
                if rc:
                    raise RuntimeError(sink.getvalue())
                out[key] = time.perf_counter() - t
    out["process"] = time.perf_counter() - t0
    out["compile_cpu"], out["compile_wall"], out["n_compiled"] = compiled()
    return out


def _compile_recorder():
    """Sum CPU and wall seconds of Numba's outermost "numba:compile" events of
    ltrboost kernels (cache misses only) from now on; returns a reader."""
    import threading

    from numba.core import event

    state = {"cpu": 0.0, "wall": 0.0, "n": 0}
    local = threading.local()

    class Recorder(event.Listener):
        def on_start(self, ev):
            local.depth = getattr(local, "depth", 0) + 1
            if local.depth == 1:
                local.t = (time.thread_time(), time.perf_counter())

        def on_end(self, ev):
            local.depth -= 1
            if local.depth == 0:
                state["cpu"] += time.thread_time() - local.t[0]
                state["wall"] += time.perf_counter() - local.t[1]
                state["n"] += 1

    event.register("numba:compile", Recorder())
    return lambda: (state["cpu"], state["wall"], state["n"])


def _median_wall(cmd: list[str], repeats: int, env: dict | None = None) -> float:
    import subprocess

    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, cwd=REPO, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _cache_counts(folder: str) -> tuple[int, int]:
    """(functions, compiled specialisations) in a Numba cache folder."""
    nbi = nbc = 0
    for _, _, files in os.walk(folder):
        nbi += sum(f.endswith(".nbi") for f in files)
        nbc += sum(f.endswith(".nbc") for f in files)
    return nbi, nbc


def measure_cold_start(repeats: int = 7, n_large: int = 100_000, pairs: int = 2) -> dict:
    """Cold-start numbers (see the module docstring); runs in temporary folders."""
    res: dict = {}
    env0 = dict(os.environ)
    src = str(REPO / "src")
    env0["PYTHONPATH"] = os.pathsep.join(p for p in (src, str(REPO), env0.get("PYTHONPATH")) if p)
    py = sys.executable
    res["import_numpy_s"] = _median_wall([py, "-c", "import numpy"], repeats, env0)
    res["import_s"] = _median_wall([py, "-c", "import numpy, ltrboost"], repeats, env0)
    res["import_engine_s"] = _median_wall([py, "-c", "from ltrboost import train"], repeats, env0)
    res["help_s"] = _median_wall([py, "-m", "ltrboost", "--help"], repeats, env0)
    with tempfile.TemporaryDirectory() as tmp:
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        cache = os.path.join(tmp, "numba")
        # compile events of one process count only its own compilations: no helper here
        env = dict(env0, NUMBA_CACHE_DIR=cache, LTRBOOST_BACKGROUND_COMPILE="0")
        import subprocess

        subprocess.run(
            [py, "-m", "ltrboost", "generate", os.path.join(work, "data")],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
        res["readme_processes"] = {"0": [], "1": []}
        for _ in range(pairs):
            for background in ("1", "0"):
                shutil_rm(cache)
                res["readme_processes"][background].append(
                    _readme_as_processes(dict(env, LTRBOOST_BACKGROUND_COMPILE=background), work)
                )
        for label, spec in (("readme", {"cwd": work}), ("n100k", {"n": n_large})):
            shutil_rm(cache)
            runs = []
            for _ in range(2):
                cmd = [py, "-m", "bench.bench_speed", "--worker", json.dumps(
                    {"cold": True, **spec})]  # fmt: skip
                t = time.perf_counter()
                proc = subprocess.run(
                    cmd, env=env, cwd=spec.get("cwd", REPO),
                    capture_output=True, text=True,
                )  # fmt: skip
                wall = time.perf_counter() - t
                if proc.returncode:
                    raise RuntimeError(proc.stderr[-3000:])
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                r["wall"] = wall
                runs.append(r)
                if len(runs) == 1:
                    res[label + "_cache"] = _cache_counts(cache)
            res[label] = runs
    return res


def _readme_as_processes(env: dict, work: str) -> dict:
    """README's ``ltrboost train`` and ``ltrboost eval``, each its own process as a user
    runs them: wall seconds each, and CPU seconds of both with every process they
    started (the first-run compile helper of :mod:`ltrboost._warmup` included)."""
    import resource
    import subprocess

    out: dict = {}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for cmd, args in (("train", README_TRAIN), ("eval", README_EVAL)):
        t = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "ltrboost", *args], env=env, cwd=work, check=True,
            capture_output=True, text=True,
        )  # fmt: skip
        out[cmd] = time.perf_counter() - t
        # the compile notice's own line: how long the command waited on compilation
        waits = re.findall(r"compiled \d+ kernels in ([0-9.]+) s", proc.stderr)
        if waits:
            out[cmd + "_wait"] = float(waits[-1])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out["cpu"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return out


def shutil_rm(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def cold_start_lines(cs: dict) -> list[str]:
    """Markdown table of :func:`measure_cold_start`'s result."""
    rows = []
    for label, name, pairs in (
        ("readme", "README: `ltrboost train` (first call / repeat)", ("train",)),
        ("readme", "README: `ltrboost eval` (first call / repeat)", ("eval",)),
        ("n100k", "100k docs: 2-tree fit + predict (first / repeat)", ("fit",)),
    ):
        (key,) = pairs
        first, second = cs[label]
        rows.append(
            [
                name,
                f"{first[key]:.2f} / {first[key + '_repeat']:.2f}",
                f"{first[key] - first[key + '_repeat']:.2f}",
                f"{second[key]:.2f} / {second[key + '_repeat']:.2f}",
                f"{second[key] - second[key + '_repeat']:.2f}",
            ]
        )
    for label, name in (("readme", "README train + eval"), ("n100k", "100k docs")):
        first, second = cs[label]
        rows.append(
            [
                f"{name}: Numba compile events, CPU s / wall s (kernels)",
                f"{first['compile_cpu']:.2f} / {first['compile_wall']:.2f} ({first['n_compiled']})",
                "",
                f"{second['compile_cpu']:.2f} / {second['compile_wall']:.2f} "
                f"({second['n_compiled']})",
                "",
            ]
        )
    for label, name in (("readme", "README train + eval"), ("n100k", "100k docs")):
        first, second = cs[label]
        fn, spec = cs[label + "_cache"]
        rows.append(
            [
                f"{name}: whole process ({fn} functions, {spec} specialisations cached)",
                f"{first['wall']:.2f}",
                "",
                f"{second['wall']:.2f}",
                "",
            ]
        )
    table = markdown_table(
        [
            "cold start",
            "first process s",
            "compile s",
            "second process s",
            "load s",
        ],
        rows,
    )
    return [
        table,
        "",
        f"`import numpy, ltrboost`: {cs['import_s']:.3f} s "
        f"({cs['import_s'] - cs['import_numpy_s']:+.3f} s beyond `import numpy`'s "
        f"{cs['import_numpy_s']:.3f} s); `from ltrboost import train` (loads Numba "
        f"and the engine): {cs['import_engine_s']:.3f} s; `ltrboost --help`: "
        f"{cs['help_s']:.3f} s (medians of fresh processes).",
        "",
        *_readme_processes_lines(cs["readme_processes"]),
    ]


def _readme_processes_lines(runs: dict) -> list[str]:
    """Table of :func:`_readme_as_processes`, first-run helper on and off (alternated)."""
    rows = []
    for background, name in (("1", "on (default)"), ("0", "off")):
        for r in runs[background]:
            rows.append(
                [name, f"{r['train']:.2f}", f"{r['eval']:.2f}", f"{r['train'] + r['eval']:.2f}",
                 f"{r['cpu']:.2f}", f"{r['train_wait']:.1f}" if "train_wait" in r else "-"]
            )  # fmt: skip
    return [
        "README's `ltrboost train` then `ltrboost eval` as two processes, empty kernel "
        "cache, runs alternated (`LTRBOOST_BACKGROUND_COMPILE`; CPU includes the helper; "
        "train's compile wait: its notice line 'compiled N kernels in S s', first "
        "compilation to last; eval, with no progress bar, prints none):",
        "",
        markdown_table(
            [
                "first-run helper",
                "train wall s",
                "eval wall s",
                "total wall s",
                "CPU s",
                "compile wait s",
            ],
            rows,
        ),
    ]


def run_grid(sizes, libs, trees, repeats, docs_per_query=None, single_above=None):
    results = {}
    for n in sizes:
        paths = data_paths(n, docs_per_query)
        n_runs = 1 if single_above is not None and n > single_above else repeats
        for lib in libs:
            runs = [
                run_worker(
                    "bench_speed",
                    {"lib": lib, "paths": paths, "trees": trees},
                    timeout=7200,
                )
                for _ in range(n_runs)
            ]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            results[(n, lib)] = med
            print(
                f"n={n} d={docs_per_query} {lib}: "
                + ", ".join(f"{k}={v:.4g}" for k, v in med.items()),
                file=sys.stderr,
                flush=True,
            )
    return results


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="100000,500000,2000000")
    ap.add_argument("--libs", default="ltrboost,lightgbm,xgboost")
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--single-run-above",
        type=int,
        default=None,
        metavar="DOCS",
        help="sizes above DOCS documents run once instead of --repeats times",
    )
    ap.add_argument(
        "--scaling",
        action="store_true",
        help="also vary documents per query at a fixed total (plot)",
    )
    ap.add_argument(
        "--jit-only",
        action="store_true",
        help="only measure compilation: tiny data and 100k documents, first vs second process",
    )
    ap.add_argument(
        "--cold-start",
        action="store_true",
        help="only the cold-start table (README's command and 100k documents, first "
        "vs second process; import and --help time)",
    )
    ap.add_argument(
        "--cold-pairs",
        type=int,
        default=2,
        help="README train + eval on an empty cache: alternated helper on/off pairs",
    )
    ap.add_argument("--output", default=str(REPO / "bench" / "results" / "speed.md"))
    args = ap.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        if spec.get("cold"):
            print(json.dumps(cold_worker(spec)))
        else:
            print(json.dumps(jit_worker(spec) if spec.get("jit") else worker(spec)))
        return 0
    if args.cold_start:
        print("\n".join(cold_start_lines(measure_cold_start(pairs=args.cold_pairs))))
        return 0
    if args.jit_only:
        for n in (None, 100_000):
            jit = measure_jit(n)
            print(
                f"{'tiny data' if n is None else f'{n:,} documents'}: first process "
                f"{jit['first_process_s']:.1f} s, second process "
                f"{jit['cached_process_s']:.1f} s (2 trees + predict, data "
                "generation excluded)"
            )
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    libs = args.libs.split(",")
    jit = measure_jit()
    print(f"JIT: {jit}", file=sys.stderr)
    cold = cold_start_lines(measure_cold_start())
    results = run_grid(sizes, libs, args.trees, args.repeats, single_above=args.single_run_above)
    rows = []
    fields = [
        ("construct_s", "construct/bin s", False),
        ("per_tree_ms", "ms/tree", False),
        ("predict_docs_per_s", "predict docs/s (test set)", True),
        ("predict_one_query_docs_per_s", "predict docs/s (one query)", True),
        ("peak_rss_mb", "peak RSS MB", False),
        ("test_ndcg@10", "test NDCG@10", True),
    ]
    for n in sizes:
        for key, label, _ in fields:
            vals = {lib: results[(n, lib)][key] for lib in libs}
            row = [f"{n:,}", label, *(f"{vals[lib]:.4g}" for lib in libs)]
            if "ltrboost" in vals:
                for other in ("lightgbm", "xgboost"):
                    if other in vals:
                        row.append(ratio(vals["ltrboost"], vals[other]))
            rows.append(row)
    header = ["docs", "measure", *libs] + [
        f"ltrboost/{o}" for o in ("lightgbm", "xgboost") if o in libs and "ltrboost" in libs
    ]
    lines = [
        f"Machine: {machine_description()}",
        "",
        f"Command: `python -m bench.bench_speed --sizes {args.sizes} --trees {args.trees} "
        f"--repeats {args.repeats}"
        + (f" --single-run-above {args.single_run_above}" if args.single_run_above else "")
        + f"{' --scaling' if args.scaling else ''}`",
        "",
        f"ltrboost JIT compilation: {jit['first_process_s']:.1f} s in a first process "
        f"(empty Numba cache, tiny data end to end), {jit['cached_process_s']:.1f} s in a "
        "second process using the cache.",
        "",
        markdown_table(header, rows),
        "",
        "Cold start (`--cold-start`):",
        "",
        *cold,
    ]
    if args.scaling:
        total = max(sizes[0], 200_000)
        per_q = [20, 50, 120, 300, 1000]
        sc = {}
        for dpq in per_q:
            r = run_grid([total], libs, max(args.trees // 4, 20), 1, docs_per_query=dpq)
            for lib in libs:
                sc[(dpq, lib)] = r[(total, lib)]["per_tree_ms"]
        lines += [
            "",
            f"Scaling with documents per query at {total:,} documents (ms per tree):",
            "",
            markdown_table(
                ["docs/query", *libs],
                [[str(d), *(f"{sc[(d, lib)]:.1f}" for lib in libs)] for d in per_q],
            ),
        ]
        _plot(sizes, per_q, libs, results, sc, Path(args.output).parent)
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(text)
    return 0


def _plot(sizes, per_q, libs, results, sc, folder: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for lib in libs:
        axes[0].plot(sizes, [results[(n, lib)]["per_tree_ms"] for n in sizes], "o-", label=lib)
        axes[1].plot(per_q, [sc[(d, lib)] for d in per_q], "o-", label=lib)
    axes[0].set(
        xscale="log",
        yscale="log",
        xlabel="training documents",
        ylabel="ms per tree",
        title="training time vs size",
    )
    axes[1].set(
        xscale="log",
        yscale="log",
        xlabel="documents per query",
        ylabel="ms per tree",
        title="training time vs query size",
    )
    for ax in axes:
        ax.legend()
    fig.tight_layout()
    fig.savefig(folder / "scaling.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())

"""Parity study: ltrboost ``lambdamart`` vs LightGBM ``lambdarank`` over a grid of settings.

Usage::

    python -m bench.bench_parity [--datasets mq2008,synthetic,lightgbm_example,...]
                                 [--cells all|core] [--trees 300] [--threads 1] [--jobs 2]
                                 [--raw bench/results/parity_raw.json]
                                 [--output bench/results/parity.md]
    python -m bench.bench_parity --report-only   # tables from the raw file of an earlier run

Results accumulate in the ``--raw`` JSON file by dataset and library, so one library can be
re-run alone (``--libs ltrboost``, e.g. after a change) and paired with the other's stored
results; ``--report-only`` rebuilds the tables.

Grid: leaves {10, 20, 31, 63} x learning rate {0.05, 0.1, 0.2} x minimum documents per leaf
{1, 20} (24 cells; ``--cells core`` keeps leaves {20, 31} x lr 0.1 x both minima,
``--cells spread`` the 6 cells of ``SPREAD``, which hold every level of every factor).  Each
cell is trained **once** for ``--trees`` rounds (default 300) per fold and library; its
test scores are taken by truncated prediction at 50, 100 and 300 trees (ltrboost
``predict(iteration=k)``, LightGBM ``num_iteration=k``) and at the early-stopping iteration.

Early stopping is applied after the fact with the same rule for both libraries: the
validation NDCG@10 after every round (ltrboost's metric on both libraries' validation
scores; LightGBM through ``feval``) is scanned, the best round is the first with the
highest value, and the scan stops 50 rounds after the last improvement (cap: ``--trees``).
This is what native early stopping returns (training never reads the validation set), and
it removes the two libraries' metric conventions from the comparison.

Settings matched between the libraries (every other parameter at its default):

=======================  ==========================  ==================================
meaning                  ltrboost                    LightGBM
=======================  ==========================  ==================================
histogram bins           ``max_bins=255``,           ``max_bin=255``,
                         ``min_samples_bin=3``       ``min_data_in_bin=3`` (defaults)
leaves (leaf-wise)       ``max_leaf_nodes``          ``num_leaves``, ``max_depth=-1``
min documents per leaf   ``min_samples_leaf``        ``min_data_in_leaf``
min hessian per leaf     ``min_sum_hessian_in_leaf``  ``min_sum_hessian_in_leaf=1e-3``
                         ``=1e-3``
L2 / min split gain      0 / 0                       ``lambda_l2=0`` / ``min_gain_to_split=0``
pairs                    ``truncation_level=30``     ``lambdarank_truncation_level=30``
                         (top-k pairs; IDCG@30)      (same)
normalisation            ``lambda_normalization=``   ``lambdarank_norm=True``
                         ``True``
sigmoid                  ``sigma=1``                 ``sigmoid=1``
gain                     ``gain="exp"`` (2^y - 1)    ``label_gain`` default 2^i - 1
bagging / colsample      none                        none (``bagging_fraction=1``,
                                                     ``feature_fraction=1``)
threads                  ``n_threads=1``             ``num_threads=1``,
                                                     ``deterministic=True``,
                                                     ``force_col_wise=True``
=======================  ==========================  ==================================

LightGBM's ``feature_pre_filter`` is off so that one ``Dataset`` serves every cell (it
only drops features no split could use).  Test NDCG@10 of both libraries is computed by
ltrboost's metric module (queries without relevant documents score 1, as LightGBM's).

Data (``../shared/data``; read, never copied): MQ2008 Fold1-5 (train/vali/test);
``synthetic``: ``make_ranking_mslr_like(36000, docs_per_query=150, random_state=2026)``
(136 features, 150 documents per query on average, ~240 queries) cut by query into 5
parts; fold k tests on part k, validates on part k+1 and trains on the other 3.
``lightgbm_example``, ``mslr_tiny``, ``trec_news`` have one train/test split and no
validation file: their test file is also the validation file (early-stopping numbers there
are optimistic, for both libraries alike).

Statistics: for every dataset and tree-count mode, each test query's NDCG@10 difference
(ltrboost - LightGBM) is averaged over the grid cells; the mean of these per-query
differences is the reported difference, and its 95% interval is a t-interval over the
test queries (each query is tested in exactly one fold).  Cells are strongly correlated
(same queries, similar models), so they are *not* treated as independent; averaging them
inside a query first makes the query the independent unit.  The fold-level check (mean
difference per fold, t-interval over the 5 folds, df = 4) is printed alongside for the
5-fold datasets.  Neither interval includes training-set randomness beyond what the
folds show.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import subprocess
import sys
import time

import numpy as np

from bench._common import REPO, SHARED_DATA, group_sizes, machine_description, markdown_table

LEAVES = (10, 20, 31, 63)
RATES = (0.05, 0.1, 0.2)
MIN_LEAF = (1, 20)
FIXED = (50, 100, 300)
PATIENCE = 50
TRUNCATION = 30
ALL_DATASETS = ("mq2008", "synthetic", "lightgbm_example", "mslr_tiny", "trec_news")
SYNTH = dict(n_samples=36000, docs_per_query=150, random_state=2026, parts=5)


# every level of every factor at least once, for data where the full grid is too slow
SPREAD = [(10, 0.05, 1), (10, 0.2, 20), (20, 0.1, 20), (31, 0.1, 1), (63, 0.05, 20), (63, 0.2, 1)]


def grid(which: str) -> list[tuple[int, float, int]]:
    if which == "core":
        return list(itertools.product((20, 31), (0.1,), MIN_LEAF))
    if which == "spread":
        return list(SPREAD)
    return list(itertools.product(LEAVES, RATES, MIN_LEAF))


# --- data ----------------------------------------------------------------------------


def _load(path, n_features=None):
    from ltrboost.io.letor import load_svmlight

    d = load_svmlight(str(path), n_features=n_features)
    return np.asarray(d.X.toarray() if hasattr(d.X, "toarray") else d.X), d.y, d.qid


def folds(name: str):
    """Yield (fold name, train, valid, test), each an (X, y, qid) tuple."""
    d = SHARED_DATA
    if name == "mq2008":
        for k in range(1, 6):
            p = d / "MQ2008" / f"Fold{k}"
            tr = _load(p / "train.txt")
            nf = tr[0].shape[1]
            yield f"Fold{k}", tr, _load(p / "vali.txt", nf), _load(p / "test.txt", nf)
    elif name == "synthetic":
        from ltrboost.datasets import make_ranking_mslr_like

        X, y, qid = make_ranking_mslr_like(
            SYNTH["n_samples"], SYNTH["docs_per_query"], random_state=SYNTH["random_state"]
        )
        yield from query_parts(X, y, qid, SYNTH["parts"])
    else:
        train, test = {
            "lightgbm_example": ("lightgbm_example/rank.train", "lightgbm_example/rank.test"),
            "mslr_tiny": ("mslr_tiny/search_tiny_train.txt", "mslr_tiny/search_tiny_test.txt"),
            "trec_news": ("trec_news/trec_news_2018.train", "trec_news/trec_news_2018.test"),
        }[name]
        tr = _load(d / train)
        te = _load(d / test, tr[0].shape[1])
        yield "test", tr, te, te


def query_parts(X, y, qid, n):
    """Yield (fold name, train, valid, test) over ``n`` parts of the queries (sorted
    ids cut into ``n`` runs): fold k tests on part k, validates on part k+1 and trains
    on the others."""
    parts = np.array_split(np.unique(qid), n)
    which = np.empty(qid.max() + 1, dtype=np.int64)
    for k, p in enumerate(parts):
        which[p] = k
    part = which[qid]
    for k in range(n):
        te = part == k
        va = part == (k + 1) % n
        tr = ~(te | va)
        yield (
            f"part{k + 1}",
            (X[tr], y[tr], qid[tr]),
            (X[va], y[va], qid[va]),
            (X[te], y[te], qid[te]),
        )


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


# --- worker ----------------------------------------------------------------------------


def worker(spec: dict) -> list[dict]:
    from ltrboost.metrics import get_metric

    ndcg = get_metric("ndcg@10")
    cells = [tuple(c) for c in spec["cells"]]
    trees, threads, lib = spec["trees"], spec["threads"], spec["lib"]
    out = []
    for fold, tr, va, te in folds(spec["dataset"]):
        va_off, te_off = offsets_of(va[2]), offsets_of(te[2])
        if lib == "lightgbm":
            import lightgbm as lgb

            dparams = {"max_bin": 255, "min_data_in_bin": 3, "feature_pre_filter": False}
            import warnings

            warnings.filterwarnings("ignore", message="Overriding the parameters")
            dtrain = lgb.Dataset(tr[0], tr[1], group=group_sizes(tr[2]), params=dparams)
            dvalid = dtrain.create_valid(va[0], va[1], group=group_sizes(va[2]))
        for leaves, lr, min_leaf in cells:
            t0 = time.perf_counter()
            if lib == "ltrboost":
                from ltrboost import Ranker

                m = Ranker(
                    objective="lambdamart",
                    n_estimators=trees,
                    learning_rate=lr,
                    max_leaf_nodes=leaves,
                    min_samples_leaf=min_leaf,
                    min_sum_hessian_in_leaf=1e-3,
                    max_bins=255,
                    min_samples_bin=3,
                    truncation_level=TRUNCATION,
                    lambda_normalization=True,
                    sigma=1.0,
                    gain="exp",
                    n_threads=threads,
                    eval_metric="ndcg@10",
                )
                m.fit(tr[0], tr[1], qid=tr[2], eval_set=[(va[0], va[1], va[2])])
                curve = list(next(iter(m.evals_result_.values()))["ndcg@10"])

                def pred(k, m=m, x=te[0]):
                    return m.predict(x, iteration=k)

            elif lib == "lightgbm":
                curve = []

                def feval(preds, data, curve=curve, y=va[1], off=va_off):
                    v = float(ndcg(np.asarray(preds, np.float64), y, off))
                    curve.append(v)
                    return "ndcg10", v, True

                params = {
                    "objective": "lambdarank",
                    "num_leaves": leaves,
                    "max_depth": -1,
                    "learning_rate": lr,
                    "min_data_in_leaf": min_leaf,
                    "min_sum_hessian_in_leaf": 1e-3,
                    "lambda_l2": 0.0,
                    "min_gain_to_split": 0.0,
                    "lambdarank_truncation_level": TRUNCATION,
                    "lambdarank_norm": True,
                    "sigmoid": 1.0,
                    "num_threads": threads,
                    "deterministic": True,
                    "force_col_wise": True,
                    "seed": 0,
                    "metric": "None",
                    "verbose": -1,
                }
                b = lgb.train(params, dtrain, trees, valid_sets=[dvalid], feval=feval)

                def pred(k, b=b, x=te[0]):
                    return b.predict(x, num_iteration=k)

            else:
                raise ValueError(lib)
            fit_s = time.perf_counter() - t0
            assert len(curve) == trees, (len(curve), trees)
            es = stop_point(curve)
            rec = {
                "fold": fold,
                "cell": [leaves, lr, min_leaf],
                "trees": trees,
                "fit_s": fit_s,
                "es_trees": es,
                "per_query": {},
            }
            for mode, k in [*((f"{t} trees", t) for t in FIXED if t <= trees), ("early stop", es)]:
                s = np.asarray(pred(k), np.float64)
                rec["per_query"][mode] = ndcg.per_query(s, te[1], te_off).tolist()
            out.append(rec)
            print(
                f"{lib} {spec['dataset']} {fold} {leaves}/{lr}/{min_leaf}: "
                f"{fit_s:.1f}s es={es} "
                + " ".join(f"{k}={np.mean(v):.4f}" for k, v in rec["per_query"].items()),
                file=sys.stderr,
                flush=True,
            )
    return out


# --- statistics and report -------------------------------------------------------------


def _t975(df: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.975, df))


def paired(raw: dict, dataset: str):
    """Per mode: (per-query differences averaged over cells, per-fold means, per-cell means)."""
    a = {(r["fold"], tuple(r["cell"])): r for r in raw[dataset]["ltrboost"]}
    b = {(r["fold"], tuple(r["cell"])): r for r in raw[dataset]["lightgbm"]}
    keys = sorted(set(a) & set(b))
    if not keys:
        return {}
    trees = {
        (lib, r.get("trees")) for lib, d in (("ltrboost", a), ("lightgbm", b)) for r in d.values()
    }
    if len({t for _, t in trees if t is not None}) > 1:  # records of before "trees" was kept
        raise SystemExit(
            f"{dataset}: the stored runs were trained for different --trees "
            f"({', '.join(f'{lib} {t}' for lib, t in sorted(trees, key=str))}); their early "
            "stopping and tree-count modes are not comparable: re-run the libraries with one "
            "--trees"
        )
    fold_names = sorted({k[0] for k in keys})
    cells = sorted({k[1] for k in keys})
    modes = list(a[keys[0]]["per_query"])
    res = {}
    for mode in modes:
        per_query, per_fold, level_a, level_b = [], [], [], []
        per_cell = {c: [] for c in cells}
        for f in fold_names:
            d = np.array(
                [
                    np.subtract(a[(f, c)]["per_query"][mode], b[(f, c)]["per_query"][mode])
                    for c in cells
                ]
            )  # cells x queries
            per_query.append(d.mean(axis=0))
            per_fold.append(d.mean())
            for i, c in enumerate(cells):
                per_cell[c].append(d[i].mean())
            level_a.append(np.mean([np.mean(a[(f, c)]["per_query"][mode]) for c in cells]))
            level_b.append(np.mean([np.mean(b[(f, c)]["per_query"][mode]) for c in cells]))
        res[mode] = {
            "per_query": np.concatenate(per_query),
            "per_fold": np.array(per_fold),
            "per_cell": {c: float(np.mean(v)) for c, v in per_cell.items()},
            "ltrboost": float(np.mean(level_a)),
            "lightgbm": float(np.mean(level_b)),
            "n_cells": len(cells),
        }
    return res


def report(raw: dict, command: str) -> str:
    rows, cell_rows, modes = [], [], []
    for dataset in raw:
        if "ltrboost" not in raw[dataset] or "lightgbm" not in raw[dataset]:
            print(f"{dataset}: results of one library only, not in the tables", file=sys.stderr)
            continue
        res = paired(raw, dataset)
        if not res:
            print(
                f"{dataset}: the libraries share no (fold, cell): not in the tables",
                file=sys.stderr,
            )
            continue
        modes += [m for m in res if m not in modes]
        for mode, r in res.items():
            q = r["per_query"]
            nq = q.size
            half = _t975(nq - 1) * q.std(ddof=1) / np.sqrt(nq) if nq > 1 else float("nan")
            pf = r["per_fold"]
            if pf.size > 1:
                fh = _t975(pf.size - 1) * pf.std(ddof=1) / np.sqrt(pf.size)
                fold_ci = f"[{pf.mean() - fh:+.4f}, {pf.mean() + fh:+.4f}]"
            else:
                fold_ci = "n/a (one split)"
            wins = np.mean([v > 0 for v in r["per_cell"].values()])
            rows.append(
                [
                    dataset,
                    mode,
                    f"{r['ltrboost']:.4f}",
                    f"{r['lightgbm']:.4f}",
                    f"{q.mean():+.4f}",
                    f"[{q.mean() - half:+.4f}, {q.mean() + half:+.4f}]",
                    fold_ci,
                    f"{nq}",
                    f"{pf.size} x {r['n_cells']}",
                    f"{wins:.2f}",
                ]
            )
        cell_rows.append((dataset, res))
    table = markdown_table(
        [
            "data",
            "trees",
            "ltrboost NDCG@10",
            "LightGBM NDCG@10",
            "mean diff",
            "95% CI (queries)",
            "95% CI (folds)",
            "test queries",
            "folds x cells",
            "cells ltrboost ahead",
        ],
        rows,
    )
    # per-cell view (each mode) to spot a pattern over the grid; datasets stored from runs
    # of other --trees have other modes: a blank where a dataset lacks one
    cell_table = markdown_table(
        ["data", "leaves/lr/min leaf", *(f"diff {m}" for m in modes)],
        [
            [
                dataset,
                f"{c[0]}/{c[1]}/{c[2]}",
                *(f"{res[m]['per_cell'][c]:+.4f}" if m in res else "" for m in modes),
            ]
            for dataset, res in cell_rows
            for c in next(iter(res.values()))["per_cell"]
        ],
    )
    return (
        f"Machine: {machine_description()}\n\nCommand: `{command}`\n\n{table}\n\n"
        f"Mean paired difference (ltrboost - LightGBM) per grid cell:\n\n{cell_table}\n"
    )


# --- driver ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--datasets", default=",".join(ALL_DATASETS))
    ap.add_argument("--cells", default="all", choices=["all", "core", "spread"])
    ap.add_argument("--trees", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes at once")
    ap.add_argument("--libs", default="ltrboost,lightgbm", help="re-run only these")
    ap.add_argument("--raw", default=str(REPO / "bench" / "results" / "parity_raw.json"))
    ap.add_argument("--output", default=str(REPO / "bench" / "results" / "parity.md"))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        with open(spec["out"], "w") as f:
            json.dump(worker(spec), f)
        return 0
    command = "python -m bench.bench_parity " + shlex.join(
        argv if argv is not None else sys.argv[1:]
    )
    raw: dict = {}
    if os.path.exists(args.raw):
        with open(args.raw) as f:
            raw = json.load(f)
    elif args.report_only:
        ap.error(f"--report-only: no raw results at --raw {args.raw}")
    os.makedirs(os.path.dirname(os.path.abspath(args.raw)), exist_ok=True)
    if not args.report_only:
        if not SHARED_DATA.exists():
            print(f"{SHARED_DATA} not found; nothing to benchmark", file=sys.stderr)
            return 1
        cells = grid(args.cells)
        specs = [
            {"lib": lib, "dataset": d, "cells": cells, "trees": args.trees, "threads": args.threads}
            for d in args.datasets.split(",")
            for lib in args.libs.split(",")
        ]
        env = dict(os.environ, PYTHONHASHSEED="0")
        running: list = []
        pending = list(specs)
        while pending or running:
            while pending and len(running) < args.jobs:
                s = pending.pop(0)
                s["out"] = f"{args.raw}.{s['dataset']}.{s['lib']}.part"
                cmd = [sys.executable, "-m", "bench.bench_parity", "--worker", json.dumps(s)]
                p = subprocess.Popen(cmd, cwd=REPO, env=env)
                running.append((s, p))
            time.sleep(0.5)
            for s, p in list(running):
                if p.poll() is None:
                    continue
                running.remove((s, p))
                if p.returncode != 0:
                    raise RuntimeError(f"worker failed: {s['lib']} {s['dataset']}")
                with open(s["out"]) as f:
                    raw.setdefault(s["dataset"], {})[s["lib"]] = json.load(f)
                os.remove(s["out"])
                os.makedirs(os.path.dirname(os.path.abspath(args.raw)), exist_ok=True)
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

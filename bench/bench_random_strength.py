"""Does ``random_strength`` (noise on split scores) help beyond MQ2008?

Usage::

    python -m bench.bench_random_strength [--datasets mq2008,mq2008_binary,synthetic,...]
                                          [--seeds 3] [--strength 1.0] [--threads 1]
                                          [--raw bench/results/random_strength_raw.json]
                                          [--output bench/results/random_strength.md]
    python -m bench.bench_random_strength --report-only
    python -m bench.bench_random_strength --timing   # its cost: fit seconds, 0 vs 1

The question behind it (issue 15): ``random_strength=1`` is CatBoost's default and moved
``yetirank`` and ``lambdamart`` up on MQ2008 by about 0.004 NDCG@10; a default must not be
chosen on MQ2008 alone, so this measures the same switch on data it was not chosen on.

Protocol: ``bench_protocol``'s (20 leaves, learning rate 0.1, at least 20 documents per
leaf, 255 bins, early stopping on validation NDCG@10 with patience 50, at most 500 trees;
test NDCG@10 from ltrboost's metric module), one thread.  Systems: ``yetirank`` and
``lambdamart``, each with ``random_strength`` 0 and ``--strength``; every system that
draws random numbers (``yetirank``; anything with the noise) runs ``--seeds`` seeds
(``random_state`` 0, 1, ...), ``lambdamart`` without noise once (it draws nothing).

Data (``../shared/data``, read, never copied; synthetic data generated):

* ``mq2008``: MQ2008 Fold1-5; ``mq2008_binary``: the same with labels y >= 1 set to 1.
* ``synthetic``: the parity study's long-query set (``make_ranking_mslr_like(36000,
  docs_per_query=150, random_state=2026)``, 5 parts by query: test k, validation k+1,
  training the other three).
* ``synthetic_b``: the same generator and split with another seed
  (``make_ranking_mslr_like(36000, docs_per_query=150, random_state=7)``): a replication.
* ``synthetic_short``: ``make_ranking(700, docs_per_query=(5, 40), n_features=30,
  missing_rate=0.05, random_state=7)`` (graded 0-4, mixed feature kinds, short queries),
  5 parts as above.
* ``lightgbm_example``: one train/test split; its test file is also the validation file
  (optimistic for every system alike).

Statistics: per test query, the NDCG@10 of a system is averaged over its seeds; the
difference ``noise - no noise`` per query is averaged, with a 95% t-interval over the test
queries (each query is tested once per dataset).  The last rows pool the per-query
differences of every dataset (and of every dataset but the two MQ2008 variants, the data
the switch was first seen on) into one interval.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time

import numpy as np

from bench._common import REPO, machine_description, markdown_table
from bench.bench_protocol import _ci

ALL_DATASETS = (
    "mq2008",
    "mq2008_binary",
    "synthetic",
    "synthetic_b",
    "synthetic_short",
    "lightgbm_example",
)
OBJECTIVES = ("yetirank", "lambdamart")


def folds(name: str):
    """(fold, train, valid, test) with (X, y, qid) tuples, as ``bench_parity.folds``."""
    from bench import bench_parity

    if name == "mq2008_binary":
        for fold, *parts in bench_parity.folds("mq2008"):
            yield fold, *[(X, (y >= 1).astype(np.float64), q) for X, y, q in parts]
    elif name == "synthetic_b":
        from ltrboost.datasets import make_ranking_mslr_like

        X, y, qid = make_ranking_mslr_like(36000, 150, random_state=7)
        yield from bench_parity.query_parts(X, y, qid, 5)
    elif name == "synthetic_short":
        from ltrboost.datasets import make_ranking

        X, y, qid = make_ranking(
            700, docs_per_query=(5, 40), n_features=30, missing_rate=0.05, random_state=7
        )
        yield from bench_parity.query_parts(X, y, qid, 5)
    else:
        yield from bench_parity.folds(name)


def run(dataset: str, objective: str, strength: float, seed: int, threads: int) -> dict:
    from bench.bench_protocol import fit_predict, offsets_of
    from ltrboost.metrics import get_metric

    ndcg = get_metric("ndcg@10")
    opts = {"objective": objective, "random_state": seed}
    if strength:
        opts["random_strength"] = strength
    out = {"per_query": [], "trees": [], "fit_s": []}
    for fold, tr, va, te in folds(dataset):
        t0 = time.perf_counter()
        s, trees = fit_predict("ltrboost", opts, tr, va, te, threads, ndcg)
        out["fit_s"].append(time.perf_counter() - t0)
        out["trees"].append(int(trees))
        pq = ndcg.per_query(np.asarray(s, np.float64), te[1], offsets_of(te[2]))
        out["per_query"] += pq.tolist()
        print(
            f"{dataset} {objective} rs={strength} seed={seed} {fold}: "
            f"{np.mean(pq):.4f} trees={trees}",
            file=sys.stderr,
            flush=True,
        )
    return out


def timing(repeats: int = 3, trees: int = 60) -> str:
    """Fit seconds with and without the noise (defaults otherwise: 31 leaves, one thread),
    alternated, fastest of ``repeats``: MQ2008 Fold1 and 100k synthetic documents."""
    from bench import bench_parity
    from ltrboost import Ranker
    from ltrboost.datasets import make_ranking_mslr_like

    data = {"MQ2008 Fold1": next(bench_parity.folds("mq2008"))[1]}
    data["synthetic 100k"] = make_ranking_mslr_like(100000, 120, random_state=1)
    rows = []
    for name, (X, y, q) in data.items():
        for objective in OBJECTIVES:
            seconds: dict[float, list[float]] = {0.0: [], 1.0: []}
            for rs in seconds:  # compile first
                Ranker(n_estimators=2, objective=objective, random_strength=rs, n_threads=1).fit(
                    X, y, qid=q
                )
            for _ in range(repeats):
                for rs in seconds:
                    m = Ranker(
                        n_estimators=trees, objective=objective, random_strength=rs, n_threads=1
                    )
                    t0 = time.perf_counter()
                    m.fit(X, y, qid=q)
                    seconds[rs].append(time.perf_counter() - t0)
            a, b = min(seconds[0.0]), min(seconds[1.0])
            rows.append([name, objective, f"{a:.2f}", f"{b:.2f}", f"{b / a:.2f}"])
    head = ["data", "objective", "fit s, 0", "fit s, 1", "ratio"]
    return markdown_table(head, rows)


def report(raw: dict, command: str) -> str:
    rows = []
    pooled = []  # (dataset, objective, per-query differences)
    for dataset, by_key in raw["results"].items():
        for objective in OBJECTIVES:
            runs = {}
            for key, r in by_key.items():
                obj, rs, seed = key.split("|")
                if obj == objective:
                    runs.setdefault(float(rs), {})[int(seed)] = r
            if len(runs) < 2:
                continue
            (_, base), (_, noisy) = sorted(runs.items())
            b = np.mean([base[s]["per_query"] for s in sorted(base)], axis=0)
            n = np.mean([noisy[s]["per_query"] for s in sorted(noisy)], axis=0)
            mean, lo, hi = _ci(n - b)
            pooled.append((dataset, objective, n - b))
            per_seed = " / ".join(f"{np.mean(noisy[s]['per_query']):.4f}" for s in sorted(noisy))
            base_seeds = " / ".join(f"{np.mean(base[s]['per_query']):.4f}" for s in sorted(base))
            rows.append(
                [
                    dataset,
                    objective,
                    f"{b.mean():.4f} ({base_seeds})",
                    f"{n.mean():.4f} ({per_seed})",
                    f"{mean:+.4f} [{lo:+.4f}, {hi:+.4f}]",
                    str(b.size),
                    f"{np.mean([np.mean(base[s]['trees']) for s in base]):.0f} / "
                    f"{np.mean([np.mean(noisy[s]['trees']) for s in noisy]):.0f}",
                ]
            )
    for label, skip in (
        ("all datasets", ()),
        ("all but MQ2008 (both)", ("mq2008", "mq2008_binary")),
    ):
        for objective in OBJECTIVES:
            d = [diff for dataset, obj, diff in pooled if obj == objective and dataset not in skip]
            if d:
                mean, lo, hi = _ci(np.concatenate(d))
                n = sum(x.size for x in d)
                rows.append(
                    [label, objective, "", "", f"{mean:+.4f} [{lo:+.4f}, {hi:+.4f}]", str(n), ""]
                )
    head = [
        "dataset",
        "objective",
        "random_strength=0: mean (per seed)",
        f"random_strength={raw['strength']:g}: mean (per seed)",
        "difference (95% CI over queries)",
        "test queries",
        "trees kept (0 / noise)",
    ]
    return (
        f"# random_strength beyond MQ2008\n\n`{command}`\n\n{machine_description()}\n\n"
        + markdown_table(head, rows)
        + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default=",".join(ALL_DATASETS))
    ap.add_argument("--objectives", default=",".join(OBJECTIVES))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--strength", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--raw", default=str(REPO / "bench/results/random_strength_raw.json"))
    ap.add_argument("--output", default=str(REPO / "bench/results/random_strength.md"))
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--timing", action="store_true", help="only the cost table")
    a = ap.parse_args(argv)
    if a.timing:
        print(timing())
        return 0
    command = "python -m bench.bench_random_strength " + shlex.join(argv or sys.argv[1:])
    raw = {"strength": a.strength, "results": {}}
    if os.path.exists(a.raw):
        with open(a.raw) as f:
            raw = json.load(f)
    if not a.report_only:
        raw["strength"] = a.strength
        for dataset in a.datasets.split(","):
            got = raw["results"].setdefault(dataset, {})
            for objective in a.objectives.split(","):
                for rs in (0.0, a.strength):
                    draws = rs > 0 or objective == "yetirank"
                    for seed in range(a.seeds if draws else 1):
                        key = f"{objective}|{rs}|{seed}"
                        if key not in got:
                            got[key] = run(dataset, objective, rs, seed, a.threads)
                            with open(a.raw + ".tmp", "w") as f:
                                json.dump(raw, f)
                            os.replace(a.raw + ".tmp", a.raw)
    text = report(raw, command)
    with open(a.output, "w") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: peak memory (RSS) of training on one long query, per pairwise objective.

README ("Errors and guarantees", *Pairs*) says the ``all``/``topk`` pairs of a query are
walked through a bounded buffer, so memory is linear in the query's length.  Each row of
the table trains ``--trees`` trees on one query of ``--docs`` documents (10 normal
features, grades 0-4, ``random_state`` 0) in a fresh subprocess and reports the peak RSS
before training (imports and data) and after.  ``--src`` runs another checkout's code
(for a before/after comparison).

Usage::

    python -m bench.bench_pair_memory [--docs 20000] [--trees 3] [--src PATH]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

CHILD = """
import resource, sys
import numpy as np
import ltrboost
objective, n, trees = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
X = rng.normal(size=(n, 10))
y = rng.integers(0, 5, n).astype(np.float64)
ds = ltrboost.make_dataset(X, y, qid=np.zeros(n, np.int64))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux -> MiB
ltrboost.train(dict(objective=objective, n_estimators=trees, n_threads=2), ds)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux -> MiB
print(f"| {objective} | {n} | {n * (n - 1) // 2 / 1e6:.0f} | {base:.0f} | {peak:.0f} |")
"""

OBJECTIVES = ("ranknet", "rankboost", "lambdamart", "yetirank")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--trees", type=int, default=3)
    ap.add_argument("--src", default=None, help="another checkout's src/ folder")
    args = ap.parse_args(argv)
    env = dict(os.environ)
    if args.src:
        env["PYTHONPATH"] = args.src
    print(
        "| objective | documents | pairs (M, at most) | RSS before training (MiB) "
        "| peak RSS (MiB) |"
    )
    print("|---|---|---|---|---|")
    for objective in OBJECTIVES:
        cmd = [sys.executable, "-c", CHILD, objective, str(args.docs), str(args.trees)]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        print(out.stdout.strip(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: peak memory (RSS) and time of ``load_svmlight`` on a large LETOR file.

Writes a synthetic LETOR file (``--rows`` x ``--features``, 6-decimal values, queries of
20 documents, a ``#docid`` comment per line) to a temporary directory, then loads it in a
fresh subprocess: first a one-line file (so Numba's compiled kernels are loaded), then
the big file, and reports the process's peak RSS before and after, the size of the
arrays returned, and the load time.  The file is deleted at the end.  ``--src`` loads
another checkout's code (for a before/after comparison).

Usage::

    python -m bench.bench_reader_memory [--rows 2000000] [--features 50] [--src PATH]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

CHILD = """
import resource, sys, time
from ltrboost.io.letor import load_svmlight
load_svmlight(sys.argv[2])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux -> MiB
t = time.perf_counter()
d = load_svmlight(sys.argv[1])
seconds = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux -> MiB
out = (d.X.nbytes + d.y.nbytes + d.qid.nbytes + d.lines.nbytes) / 2**20
print(f"| {d.X.shape[0]} x {d.X.shape[1]} | {out:.0f} | {base:.0f} | {peak:.0f} | "
      f"{(peak - base) / out:.2f} | {seconds:.2f} |")
"""


def write_file(path: Path, n_rows: int, n_features: int) -> None:
    """Synthetic LETOR text: a 10,000-line pattern repeated with fresh query ids."""
    rng = np.random.default_rng(0)
    chunk = min(10_000, n_rows)
    X = rng.random((chunk, n_features)).round(6)
    y = rng.integers(0, 3, chunk)
    feats = [
        "".join(f" {j + 1}:{v:.6f}" for j, v in enumerate(row)) + f" #docid = D{i}\n"
        for i, row in enumerate(X.tolist())
    ]
    with open(path, "w") as fh:
        written = 0
        while written < n_rows:
            n = min(chunk, n_rows - written)
            base = written // 20
            fh.write("".join(f"{y[i]} qid:{base + i // 20}{feats[i]}" for i in range(n)))
            written += n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--src", default=None, help="PYTHONPATH of the code to measure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.txt"
        tiny = Path(tmp) / "tiny.txt"
        write_file(big, args.rows, args.features)
        tiny.write_text("1 qid:1 1:0.5\n")
        env = dict(os.environ)
        if args.src:
            env["PYTHONPATH"] = args.src
        print(f"file: {big.stat().st_size / 1e6:.0f} MB")
        print(
            "| rows x features | output MiB | RSS before MiB | peak RSS MiB | "
            "(peak - before) / output | load s |"
        )
        print("|---|---|---|---|---|---|")
        subprocess.run([sys.executable, "-c", CHILD, str(big), str(tiny)], env=env, check=True)


if __name__ == "__main__":
    main()

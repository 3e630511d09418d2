"""Compilation cost of the LETOR reader alone (issue 12 goal 1).

Each run is a fresh process with ``NUMBA_CACHE_DIR`` pointed at an empty folder that
reads one LETOR file with :func:`ltrboost.io.load_svmlight` and reports the CPU seconds
of Numba's ``numba:compile`` events (outermost, and per kernel including its callees),
the wall time of that first call, and the number of outermost kernels compiled.

Usage::

    python -m bench.bench_parser_compile [FILE] [--runs 2]

``FILE`` defaults to a file written by ``ltrboost generate`` (README's data: 17-digit
values, so the Eisel-Lemire path is on it).  To compare two checkouts, run each in turn
from its own root (``PYTHONPATH=src``), interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, sys, threading, time
from numba.core import event

records = []
local = threading.local()


class Recorder(event.Listener):
    def on_start(self, ev):
        stack = local.__dict__.setdefault("stack", [])
        stack.append((time.thread_time(), ev.data["dispatcher"].py_func.__qualname__))

    def on_end(self, ev):
        t0, name = local.stack.pop()
        records.append((len(local.stack), name, time.thread_time() - t0))


event.register("numba:compile", Recorder())
from ltrboost.io import load_svmlight

t = time.perf_counter()
load_svmlight(sys.argv[1])
wall = time.perf_counter() - t
per = {}
for depth, name, seconds in records:
    per[name] = per.get(name, 0.0) + seconds
print(json.dumps({
    "compile_cpu": sum(s for d, _, s in records if d == 0),
    "outermost": sum(d == 0 for d, _, _ in records),
    "first_call_wall": wall,
    "per_kernel_cpu": dict(sorted(per.items(), key=lambda kv: -kv[1])),
}))
"""


def measure(path: str) -> dict:
    """One cold process reading ``path``; see the module docstring."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, path], env=env, capture_output=True, text=True
        )
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", help="a LETOR file (default: generated data)")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file
        if path is None:
            subprocess.run(
                [sys.executable, "-m", "ltrboost", "generate", tmp],
                check=True, capture_output=True,
            )  # fmt: skip
            path = os.path.join(tmp, "train.txt")
        for _ in range(args.runs):
            r = measure(path)
            kernels = ", ".join(f"{k} {v:.2f}" for k, v in r["per_kernel_cpu"].items())
            print(
                f"compile CPU {r['compile_cpu']:.2f} s ({r['outermost']} outermost kernels), "
                f"first call {r['first_call_wall']:.2f} s wall; per kernel with callees: "
                f"{kernels}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

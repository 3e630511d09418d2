"""Shared helpers for the benchmarks: data location, fair settings, isolated runs.

Every library runs in its own subprocess so that peak RSS (``ru_maxrss``) is measured per
library and run, and one library's allocations cannot inflate another's numbers.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO / ".." / "shared" / "data").resolve()


def machine_description() -> str:
    import numba

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores visible, Python {platform.python_version()}, "
        f"numba {numba.__version__}, numpy {np.__version__}"
    )


def run_worker(module: str, spec: dict, timeout: float = 3600) -> dict:
    """Run ``python -m bench.<module> --worker JSON`` and return its JSON result."""
    cmd = [sys.executable, "-m", f"bench.{module}", "--worker", json.dumps(spec)]
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"worker failed ({spec}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def group_sizes(qid: np.ndarray) -> np.ndarray:
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    return np.diff(np.r_[starts, qid.shape[0]])


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)

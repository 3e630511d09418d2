"""Benchmark: ``ltrboost.io.load_svmlight`` vs scikit-learn's ``load_svmlight_file``.

Times both readers on the largest LETOR files of ``../shared/data`` (when present) and
on a synthetic file written by :func:`ltrboost.io.dump_svmlight` (shortest round-trip
floats, 16-17 significant digits, so most values take the Eisel-Lemire path rather than
Clinger's), and prints a Markdown table.  Each time is the median of ``--repeat`` calls;
ltrboost's are taken after a warm-up call, so Numba compilation (or loading the compiled
kernels from the on-disk cache) is excluded and reported separately as "first call".
scikit-learn returns a sparse CSR matrix, ltrboost a dense one; the densifying is
ltrboost's cost only.

Usage::

    python bench/bench_io.py [--repeat 5] [--synthetic-rows 20000] [--out FILE]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np
import sklearn
from sklearn.datasets import load_svmlight_file

from ltrboost.io import dump_svmlight, load_svmlight

DATA_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
SHARED_FILES = [
    "MQ2008/Fold1/train.txt",
    "lightgbm_example/rank.train",
    "mslr_tiny/search_tiny_train.txt",
]


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls of ``fn``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def synthetic_file(directory: Path, n_rows: int, n_features: int = 136) -> Path:
    """A LETOR file like MSLR's width, with full-precision random values."""
    rng = np.random.default_rng(0)
    scale = rng.choice([1e-3, 1.0, 1e4], size=(1, n_features))
    X = rng.standard_normal((n_rows, n_features)) * scale
    X[rng.random(X.shape) < 0.2] = 0.0
    y = rng.integers(0, 5, size=n_rows).astype(np.float64)
    qid = np.repeat(np.arange(n_rows // 100 + 1), 100)[:n_rows]
    path = directory / f"synthetic_{n_rows}x{n_features}.txt"
    dump_svmlight(path, X, y, qid)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--synthetic-rows", type=int, default=20_000)
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)

    files: list[tuple[str, Path]] = []
    for name in SHARED_FILES:
        path = DATA_DIR / name
        if path.exists():
            files.append((name, path))
    if not files:
        print(f"({DATA_DIR} is absent: synthetic file only)")

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.synthetic_rows > 0:
            path = synthetic_file(Path(tmp), args.synthetic_rows)
            files.append((f"synthetic ({path.name}, dump_svmlight)", path))
        first_call = None
        for name, path in files:
            start = time.perf_counter()
            data = load_svmlight(path)  # warm-up; the first one loads/compiles kernels
            elapsed = time.perf_counter() - start
            if first_call is None:
                first_call = elapsed
            ours = median_time(lambda p=path: load_svmlight(p), args.repeat)
            theirs = median_time(
                lambda p=path: load_svmlight_file(str(p), query_id=True), args.repeat
            )
            size_mb = path.stat().st_size / 1e6
            rows.append(
                f"| {name} | {size_mb:.1f} | {data.X.shape[0]} x {data.X.shape[1]} "
                f"| {elapsed:.3f} | {ours:.4f} | {theirs:.4f} | {theirs / ours:.1f}x "
                f"| {size_mb / ours:.0f} |"
            )

    lines = [
        f"ltrboost load_svmlight vs sklearn {sklearn.__version__} load_svmlight_file"
        f"(query_id=True); numba {numba.__version__}, "
        f"Python {platform.python_version()}, {platform.machine()}, "
        f"median of {args.repeat}, seconds.",
        "",
        "| file | MB | rows x features | ltrboost warm-up call | ltrboost | sklearn "
        "| speed-up | ltrboost MB/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "warm-up call: the first call for each file.  The process's very first call "
        f"({first_call:.2f} s) includes loading the cached kernels, or compiling them "
        "when no cache exists.",
    ]
    table = "\n".join(lines)
    print(table)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

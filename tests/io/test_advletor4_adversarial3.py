"""Adversarial pass 3 on the LETOR/svmlight reader (advletor4)."""

from __future__ import annotations

import tracemalloc

import numpy as np

from ltrboost.io import letor
from ltrboost.io.letor import load_svmlight


def test_peak_memory_holds_one_block_at_a_time(tmp_path, monkeypatch):
    """The reader held the previous block's text and tokens while reading the next one,
    and its reader kept each raw chunk next to the lines cut from it: about six blocks
    above the output instead of three (55 MiB of RSS over the output at 8 MiB blocks,
    bench/bench_reader_memory.py --rows 200000)."""
    rng = np.random.default_rng(0)
    X = rng.random((20_000, 20)).round(6)
    path = tmp_path / "big.txt"
    path.write_text(
        "".join(
            f"{i % 3} qid:{i // 20} " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(row)) + "\n"
            for i, row in enumerate(X.tolist())
        )
    )
    block = 1 << 20
    monkeypatch.setattr(letor, "_BLOCK_BYTES", block)
    load_svmlight(path)  # compile / load the kernels outside the measurement
    tracemalloc.start()
    try:
        data = load_svmlight(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(data.X, X)
    out = data.X.nbytes + data.y.nbytes + data.qid.nbytes + data.lines.nbytes
    # The block's text, a temporary of its size (np.count_nonzero(buf == 10)) and its
    # tokens (12 bytes per index:value, about a block here).
    assert peak - out <= 4 * block, ((peak - out) / block, out)

"""Adversarial pass 3 on the LETOR/svmlight reader (advletor4)."""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

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


def _letor(path, seed=0):
    from ltrboost.datasets import make_ranking
    from ltrboost.io.letor import dump_svmlight

    X, y, qid = make_ranking(n_queries=8, docs_per_query=6, n_features=3, random_state=seed)
    dump_svmlight(path, X, y, qid)
    return len(y)


@pytest.mark.parametrize("suffix", [".weight", ".init"])
def test_lightgbm_sidecars_that_are_not_read_are_named(tmp_path, capsys, suffix):
    """LightGBM reads FILE.weight and FILE.init beside a data file as it reads
    FILE.query; ltrboost read the .query one and trained without the weights, saying
    nothing."""
    from ltrboost.cli import main

    train = tmp_path / "train.txt"
    n = _letor(train)
    Path(f"{train}{suffix}").write_text("".join("2\n" for _ in range(n)))
    model = tmp_path / "m.json"
    flags = ["--n-estimators", "2", "--min-samples-leaf", "2"]
    assert main(["train", str(train), "--output", str(model), "-q", *flags]) == 0
    err = capsys.readouterr().err
    assert f"{train}{suffix} is not read" in err, err
    assert main(["cv", str(train), "--folds", "2", *flags]) == 0
    assert f"{train}{suffix} is not read" in capsys.readouterr().err
    assert main(["eval", str(model), str(train)]) == 0
    assert f"{train}{suffix} is not read" in capsys.readouterr().err
    # predict needs no weights
    assert main(["predict", str(model), str(train)]) == 0
    assert "is not read" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # -2**63 is an int64; the reader takes +-(2**63 - 1) (what dump_svmlight writes)
        ("1 qid:-9223372036854775808 1:2\n", "is not an integer in +-(2**63 - 1)"),
        ("1 qid:99999999999999999999 1:2\n", "is not an integer in +-(2**63 - 1)"),
        ("1 qid:1.5 1:2\n", "is not an integer (int64)"),
        ("1 qid:1 +1:2\n", "'+1' is not an integer without a sign"),
        ("1 qid:1 x:2\n", "'x' is not an integer"),
    ],
)
def test_error_messages_say_what_is_wrong(tmp_path, text, message):
    """A qid of -2**63 was refused as 'not an integer (int64)', which it is."""
    from ltrboost.dataset import LTRInputError

    path = tmp_path / "d.txt"
    path.write_text(text)
    with pytest.raises(LTRInputError, match=re.escape(message)) as info:
        load_svmlight(path)
    assert info.value.line == 1


@pytest.mark.parametrize("protocol", ["xia", "qbrank"])
def test_experiment_fold_without_queries_names_the_file(tmp_path, capsys, protocol):
    """A fold file without qid: (and no .query) stopped `ltrboost experiment` with
    make_dataset's Python message 'give exactly one of qid= ... or group=', naming no
    file; train, cv and eval name it."""
    from ltrboost.cli import main

    fold = tmp_path / "data" / "Fold1"
    fold.mkdir(parents=True)
    for name in ("train", "vali", "test"):
        _letor(fold / f"{name}.txt")
    text = (fold / "vali.txt").read_text()
    (fold / "vali.txt").write_text(re.sub(r" qid:\S+", "", text))
    argv = ["experiment", str(tmp_path / "data"), "-o", str(tmp_path / "out")]
    assert main([*argv, "--max-trees", "1", "--protocol", protocol]) == 2
    err = capsys.readouterr().err
    assert f"{fold / 'vali.txt'}: no qid: on any line and no .query file" in err, err

"""Reading a data file that runs out of memory (stop 38, task readoom).

The LETOR/svmlight reader (``load_svmlight``, the block readers ``dense_blocks`` /
``labelled_blocks`` of ``ltrboost predict`` and ``eval``) and ``convert``'s Parquet
writer let NumPy's "Unable to allocate 12.3 GiB for an array with shape (...) and data
type float64" through: no file, no advice.  Now:

1. a file whose arrays would not fit in what this process may use
   (:func:`ltrboost._config.memory_budget`) is refused after its first block, from the
   rows it projects (not midway, after minutes of reading), naming the file, the
   shape, the bytes, the limit and what to do;
2. a MemoryError midway (the projection was low, or other memory is in use) names the
   file, the line reached and the arrays' shape and bytes;
3. the CLI prints either as one line ``ltrboost: error: FILE: ...`` (status 2, as other
   memory errors), with its flags' words, and writes nothing.

Memory limits and failures are simulated (``_config.memory_budget`` patched, allocations
made to raise MemoryError): nothing here allocates more than a few MB.
"""

from __future__ import annotations

import numpy as np
import pytest

import ltrboost._config as _config
import ltrboost.binning  # noqa: F401  (imported before any patch: it binds memory_budget by name)
import ltrboost.io.letor as letor
from ltrboost.io.letor import dense_blocks, labelled_blocks, load_svmlight

N_ROWS, N_FEAT = 3000, 20


def _limit_budget(monkeypatch, nbytes):
    monkeypatch.setattr(_config, "memory_budget", lambda: (nbytes, "the cgroup memory limit"))


def _write(path, n_rows=N_ROWS, n_feat=N_FEAT, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n_rows, n_feat))
    y = rng.integers(0, 3, n_rows)
    lines = [
        f"{y[i]} qid:{i // 10} " + " ".join(f"{j + 1}:{X[i, j]:.6f}" for j in range(n_feat))
        for i in range(n_rows)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _counting_blocks(monkeypatch):
    """The number of blocks the reader has read, as a one-element list."""
    count = [0]
    real = letor._read_blocks

    def read_blocks(f, block_bytes):
        for block in real(f, block_bytes):
            count[0] += 1
            yield block

    monkeypatch.setattr(letor, "_read_blocks", read_blocks)
    return count


def _one_line(msg: str) -> str:
    assert "\n" not in msg
    assert "Unable to allocate" not in msg  # NumPy's words, which name no file
    return msg


# ====================================================================== 1. up front


def test_file_too_large_for_the_budget_warns_then_is_refused_midway(tmp_path, monkeypatch):
    """3000 rows x 20 float64 features (480 kB of X) under a 100 kB limit: after the
    first 4 KiB block a warning gives the rows the file's size projects (a guess: not a
    refusal); refused, naming the file, the shape, the bytes, the limit and the ways
    out, once the rows read pass the limit, not after the whole file."""
    data = _write(tmp_path / "big.txt")
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 4096)
    blocks = _counting_blocks(monkeypatch)
    _limit_budget(monkeypatch, 100_000)
    with pytest.warns(UserWarning, match="may need about") as caught:
        with pytest.raises(MemoryError) as info:
            load_svmlight(data)
    warned = [str(w.message) for w in caught if "may need about" in str(w.message)]
    assert len(warned) == 1
    assert warned[0].startswith(f"{data}: ")
    assert "rows (estimated from the " in warned[0]
    rows = int(warned[0].split(" rows (estimated")[0].rsplit(" ", 1)[1])
    assert 2000 < rows < 4500  # the projection from one block is about right
    msg = _one_line(str(info.value))
    assert msg.startswith(f"{data}: ")
    assert "x 20 features of float64" in msg
    assert "estimated" not in msg  # refused on the rows read, not on a guess
    assert "over the cgroup memory limit (97.7 KiB, 100000 bytes)" in msg
    assert "dense_blocks" in msg
    assert "let this process use more memory" in msg
    assert blocks[0] < 50  # the file is about 100 blocks
    err = info.value
    assert err.path == str(data)
    assert err.shape[1] == N_FEAT
    assert err.nbytes > 100_000


def test_file_that_fits_the_budget_reads_as_before(tmp_path, monkeypatch):
    """No false refusal: a limit twice the arrays (X plus labels, qids and lines) reads
    the file as an unlimited run does."""
    data = _write(tmp_path / "d.txt")
    want = load_svmlight(data)
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 4096)
    _limit_budget(monkeypatch, 2 * N_ROWS * (N_FEAT * 8 + 24))
    got = load_svmlight(data)
    np.testing.assert_array_equal(got.X, want.X)
    np.testing.assert_array_equal(got.qid, want.qid)


def test_n_features_wider_than_the_file_is_named(tmp_path, monkeypatch):
    """n_features=200000 for a file whose highest index is 20: 100 rows would be 160 MB
    of X; refused under a 10 MB limit (before anything that size is allocated), naming
    the width as the likely cause."""
    data = _write(tmp_path / "d.txt", n_rows=100)
    _limit_budget(monkeypatch, 10_000_000)
    with pytest.raises(MemoryError) as info:
        load_svmlight(data, n_features=200_000)
    msg = _one_line(str(info.value))
    assert msg.startswith(f"{data}: ")
    assert "100 rows x 200000 features of float64" in msg
    assert "n_features=200000 but the highest feature index read is 20" in msg


def test_stream_of_unknown_size_is_refused_once_its_rows_are_over(monkeypatch):
    """A pipe (no size): refused when the rows read so far are over the limit, not
    after the whole stream."""
    text = _write_text(N_ROWS)
    _limit_budget(monkeypatch, 100_000)
    blocks = list(letor._read_blocks(__import__("io").BytesIO(text), 4096))
    taken = [0]

    def stream():
        for b in blocks:
            taken[0] += 1
            yield b

    with pytest.raises(MemoryError) as info:
        letor._parse_stream(stream(), None, "<pipe>", None, "zero", False, ())
    msg = _one_line(str(info.value))
    assert msg.startswith("<pipe>: ")
    assert "x 20 features of float64" in msg
    assert taken[0] < len(blocks) // 2


def _write_text(n_rows):
    rng = np.random.default_rng(1)
    return "".join(
        f"1 qid:{i // 10} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row)) + "\n"
        for i, row in enumerate(rng.random((n_rows, N_FEAT)))
    ).encode()


# ====================================================================== 2. midway


def _fail_2d_empty(monkeypatch, over_elements):
    """``np.empty`` of a 2-D shape over ``over_elements`` raises NumPy's MemoryError."""
    real = np.empty

    def empty(shape, *a, **k):
        if isinstance(shape, tuple) and len(shape) == 2 and shape[0] * shape[1] > over_elements:
            raise MemoryError(f"Unable to allocate 1.00 GiB for an array with shape {shape}")
        return real(shape, *a, **k)

    monkeypatch.setattr(np, "empty", empty)


def test_memory_error_allocating_X_names_file_line_shape_and_bytes(tmp_path, monkeypatch):
    """X's allocation fails (the budget let it through): the error names the file,
    the line reached, X's shape and bytes and the ways out, not NumPy's words."""
    data = _write(tmp_path / "d.txt")
    _fail_2d_empty(monkeypatch, 1000)
    with pytest.raises(MemoryError) as info:
        load_svmlight(data)
    msg = _one_line(str(info.value))
    assert msg.startswith(f"{data}: out of memory at line 1: ")
    assert "3000 rows x 20 features of float64" in msg
    assert f"{3000 * (20 * 8 + 24)} bytes" in msg
    assert "let this process use more memory" in msg


def test_memory_error_growing_X_midway_names_the_line(tmp_path, monkeypatch):
    """Growing the arrays in place fails after some blocks: the error names the line of
    the block whose rows did not fit."""
    data = _write(tmp_path / "d.txt")
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 4096)
    real = letor._grow

    def grow(a, shape):
        if a.ndim == 2 and shape[0] > 500:
            raise MemoryError("Unable to allocate 1.00 GiB for an array with shape (9, 9)")
        real(a, shape)

    monkeypatch.setattr(letor, "_grow", grow)
    with pytest.raises(MemoryError) as info:
        load_svmlight(data)
    msg = _one_line(str(info.value))
    line = int(msg.split("out of memory at line ")[1].split(":")[0])
    assert 100 < line < N_ROWS
    assert msg.startswith(f"{data}: out of memory at line {line}: ")
    assert "x 20 features of float64" in msg


@pytest.mark.parametrize("reader", [dense_blocks, labelled_blocks])
def test_block_reader_memory_error_names_file_and_line(reader, tmp_path, monkeypatch):
    """predict's and eval's block readers: a MemoryError parsing a block names the file
    and the line of the block."""
    data = _write(tmp_path / "d.txt")
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 4096)
    real = letor._checked_block
    calls = [0]

    def checked_block(*a, **k):
        calls[0] += 1
        if calls[0] == 3:
            raise MemoryError("Unable to allocate 1.00 GiB for an array with shape (9,)")
        return real(*a, **k)

    monkeypatch.setattr(letor, "_checked_block", checked_block)
    with pytest.raises(MemoryError) as info:
        list(reader(data, N_FEAT, block_bytes=1 << 16))
    msg = _one_line(str(info.value))
    assert msg.startswith(f"{data}: out of memory at line ")
    line = int(msg.split("out of memory at line ")[1].split(":")[0])
    assert 1 < line < N_ROWS


# ====================================================================== 3. the CLI


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("ltrboost: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return _one_line(lines[0])


def test_cli_train_refused_up_front_names_the_file_and_flags(tmp_path, monkeypatch, capsys):
    import ltrboost.cli as cli

    data = _write(tmp_path / "train.txt")
    model = tmp_path / "m.json"
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 4096)
    _limit_budget(monkeypatch, 100_000)
    rc = cli.main(["train", str(data), "-o", str(model), "--n-estimators", "2"])
    assert rc == cli.EXIT_BAD_INPUT == 2
    line = _error_line(capsys)
    assert line.startswith(f"ltrboost: error: {data}: ")
    assert "x 20 features of float64" in line
    assert "the cgroup memory limit" in line
    assert "ltrboost predict" in line
    assert "split" in line
    assert "dense_blocks" not in line
    assert "n_features=" not in line
    assert not model.exists()


def test_cli_train_n_features_too_wide_names_the_flag(tmp_path, monkeypatch, capsys):
    import ltrboost.cli as cli

    data = _write(tmp_path / "train.txt", n_rows=100)
    model = tmp_path / "m.json"
    _limit_budget(monkeypatch, 10_000_000)
    rc = cli.main(["train", str(data), "-o", str(model), "--n-features", "200000"])
    assert rc == 2
    line = _error_line(capsys)
    assert line.startswith(f"ltrboost: error: {data}: ")
    assert "read 200000 features wide" in line
    assert "highest feature index read is 20" in line
    assert "--n-features" in line
    assert not model.exists()


def _model(tmp_path):
    import ltrboost.cli as cli

    train = _write(tmp_path / "train.txt", n_rows=60)
    path = tmp_path / "m.json"
    assert cli.main(["train", str(train), "-o", str(path), "-q", "--n-estimators", "2"]) == 0
    return path


@pytest.mark.parametrize("command", ["predict", "eval"])
def test_cli_block_reader_memory_error_is_one_line_naming_the_file(
    command, tmp_path, monkeypatch, capsys
):
    import ltrboost.cli as cli

    model = _model(tmp_path)
    data = _write(tmp_path / "test.txt")
    out = tmp_path / "scores.txt"
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 4096)
    real = letor._checked_block
    calls = [0]

    def checked_block(*a, **k):
        calls[0] += 1
        if calls[0] == 3:
            raise MemoryError("Unable to allocate 1.00 GiB for an array with shape (9,)")
        return real(*a, **k)

    monkeypatch.setattr(letor, "_checked_block", checked_block)
    argv = [command, str(model), str(data)] + (["-o", str(out)] if command == "predict" else [])
    rc = cli.main(argv)
    assert rc == 2
    line = _error_line(capsys)
    assert line.startswith(f"ltrboost: error: {data}: out of memory at line ")
    assert not out.exists()


def test_convert_memory_error_writing_a_file_names_rows_per_file(tmp_path, monkeypatch, capsys):
    """convert: a part's table (rows_per_file rows x every column) that cannot be
    allocated names the part, its rows and bytes and --rows-per-file; nothing is left."""
    pq = pytest.importorskip("pyarrow.parquet")
    import ltrboost.cli as cli
    from ltrboost.io.parquet import letor_to_parquet

    data = _write(tmp_path / "d.txt")
    out = tmp_path / "out.parquet"

    def write_table(*a, **k):
        raise MemoryError("Unable to allocate 1.00 GiB for an array with shape (9,)")

    monkeypatch.setattr(pq, "write_table", write_table)
    with pytest.raises(MemoryError) as info:
        letor_to_parquet(data, out, rows_per_file=1000)
    msg = _one_line(str(info.value))
    assert msg.startswith(f"{out}: out of memory writing part.00000.parquet: ")
    assert "1000 rows x 22 columns" in msg
    assert "rows_per_file=" in msg
    assert not out.exists()

    rc = cli.main(["convert", str(data), str(out), "--rows-per-file", "1000"])
    assert rc == 2
    line = _error_line(capsys)
    assert line.startswith(f"ltrboost: error: {out}: out of memory writing part.00000.parquet")
    assert "--rows-per-file" in line
    assert "rows_per_file=" not in line
    assert not out.exists()


def test_cli_eval_wide_model_padding_refused_up_front(tmp_path, monkeypatch, capsys):
    """eval of a model claiming 100000 features whose tree splits on feature 70000 reads
    a 20-feature file whole and pads it to the 70001 features the trees use: 60 rows are
    33.6 MB of X, refused up front under a 10 MB limit (they were allocated, and a larger
    file failed with NumPy's bare message)."""
    import ltrboost.cli as cli
    from test_contribmem_adversarial7 import _booster, _chain

    b = _booster([_chain(2, lambda d: 70_000 if d == 0 else 3)], 100_000)
    model = tmp_path / "m.json"
    b.save_model(model)
    data = _write(tmp_path / "test.txt", n_rows=60)
    _limit_budget(monkeypatch, 10_000_000)
    rc = cli.main(["eval", str(model), str(data)])
    assert rc == 2
    line = _error_line(capsys)
    assert line.startswith(f"ltrboost: error: {data}: ")
    assert "60 rows x 70001 features of float64" in line
    assert "the model's trees use feature 70001" in line


def test_short_first_lines_do_not_refuse_a_file_that_fits(tmp_path, monkeypatch):
    """The projection counts rows from the bytes a row so far: a file whose first lines
    are much shorter than the rest projects more rows than it has.  Its arrays fit the
    limit, so it must read (a refusal on a guess would lose a file that fits)."""
    rng = np.random.default_rng(0)
    lines = [f"{i % 3} qid:{i // 10} 1:{i}" for i in range(300)]  # ~16 bytes a line
    long_values = " ".join(f"{j}:{rng.random():.15f}" for j in range(1, N_FEAT + 1))
    lines += [f"{i % 3} qid:{30 + i // 10} {long_values}" for i in range(200)]
    data = tmp_path / "mixed.txt"
    data.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 4096)
    need = 500 * (8 * N_FEAT + 24)
    _limit_budget(monkeypatch, int(need * 1.3))  # fits, with the reader's slack
    with pytest.warns(UserWarning, match="may need about"):  # the projection: a guess
        d = load_svmlight(data)
    assert d.X.shape == (500, N_FEAT)

"""Tests for the block-wise LETOR reader (bounded memory) and ``na_values`` tokens.

Every result read in blocks of any size must equal the whole-file plain-Python reference
(``_parse_bytes_reference``), bit for bit, with errors at the same line.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ltrboost.io.letor as letor
from ltrboost.dataset import LTRInputError
from ltrboost.io import load_svmlight
from ltrboost.io.letor import _parse_bytes, _parse_bytes_reference

BLOCK_SIZES = [1, 2, 7, 64, 1 << 20]


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _outcome(fn):
    try:
        return fn(), None
    except LTRInputError as err:
        return None, err


def _assert_same(data: bytes, block: int, n_features=None, missing="zero", na=()):
    got, got_err = _outcome(
        lambda: _parse_bytes(
            data, "mem.txt", n_features, missing, True, na_values=na, block_bytes=block
        )
    )
    ref, ref_err = _outcome(
        lambda: _parse_bytes_reference(data, "mem.txt", n_features, missing, na)
    )
    assert (got_err is None) == (ref_err is None), (block, str(got_err), str(ref_err))
    if got_err is not None and data.startswith(b"PAR1"):  # named as Parquet, no line
        assert str(got_err).startswith("mem.txt: the file is Parquet"), str(got_err)
        return got_err
    if got_err is not None:
        assert got_err.line == ref_err.line, (block, str(got_err), str(ref_err))
        return got_err
    X, y, qid, comments, lines = got
    np.testing.assert_array_equal(_bits(X), _bits(ref[0]))
    assert X.flags.c_contiguous
    assert X.flags.owndata
    np.testing.assert_array_equal(_bits(y), _bits(ref[1]))
    assert (qid is None) == (ref[2] is None)
    if qid is not None:
        np.testing.assert_array_equal(qid, ref[2])
    assert comments == ref[3]
    assert lines.shape == y.shape
    return got


def _random_file(rng: np.random.Generator, n_lines: int, na: str | None = None) -> bytes:
    lines = []
    for i in range(n_lines):
        r = rng.random()
        if r < 0.05:
            lines.append("")
            continue
        if r < 0.1:
            lines.append("# a comment line")
            continue
        parts = [str(int(rng.integers(0, 5))), f"qid:{i // 4}"]
        # Widths grow along the file, so later blocks widen X.
        width = int(rng.integers(0, 3 + i // 3))
        for j in sorted(rng.choice(np.arange(1, 4 + i // 3), size=width, replace=False)):
            v = rng.random() * 10 ** int(rng.integers(-5, 5))
            text = f"{v:.{int(rng.integers(1, 20))}g}"
            if na is not None and rng.random() < 0.2:
                text = na
            elif rng.random() < 0.05:
                text = "nan"
            parts.append(f"{j}:{text}")
        if rng.random() < 0.3:
            parts.append(f"# docid = d{i} é")
        lines.append(" ".join(parts))
    ending = "\r\n" if rng.random() < 0.3 else "\n"
    text = ending.join(lines) + (ending if rng.random() < 0.5 else "")
    prefix = b"\xef\xbb\xbf" if rng.random() < 0.2 else b""
    return prefix + text.encode("utf-8")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("missing", ["zero", "nan"])
def test_any_block_size_equals_the_reference(seed, missing):
    data = _random_file(np.random.default_rng(seed), 60)
    for block in BLOCK_SIZES:
        _assert_same(data, block, missing=missing)
        _assert_same(data, block, n_features=40, missing=missing)


def _dense_file(rng: np.random.Generator, n_lines: int, width: int, sparse_every=0) -> bytes:
    """Rows holding features 1..width in order (LETOR's usual layout); with
    ``sparse_every``, every such row lacks its middle feature."""
    lines = []
    for i in range(n_lines):
        feats = list(range(1, width + 1))
        if sparse_every and i % sparse_every == sparse_every - 1 and width > 1:
            feats.remove(width // 2 + 1)
        vals = " ".join(f"{j}:{rng.random() * 10 ** int(rng.integers(-3, 3)):.17g}" for j in feats)
        lines.append(f"{int(rng.integers(0, 3))} qid:{i // 5} {vals} # d{i}")
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("missing", ["zero", "nan"])
@pytest.mark.parametrize("sparse_every", [0, 7])
def test_dense_blocks_equal_the_reference(missing, sparse_every, monkeypatch):
    """Blocks whose rows all hold features 1..m are copied by NumPy (``_fill_block``),
    the others scattered by ``_fill_rows``: the same X either way, wider X included."""
    from ltrboost.io import letor

    calls = []
    fill_rows = letor._fill_rows
    monkeypatch.setattr(letor, "_fill_rows", lambda *a: calls.append(1) or fill_rows(*a))
    rng = np.random.default_rng(sparse_every)
    for width in (1, 5):
        data = _dense_file(rng, 30, width, sparse_every)
        for block in (40, 300, 1 << 20):
            calls.clear()
            _assert_same(data, block, missing=missing)
            _assert_same(data, block, n_features=width + 3, missing=missing)
            assert bool(calls) == bool(sparse_every and width > 1), (width, block)


@pytest.mark.parametrize(
    "content",
    [
        "1 qid:1 1:1\n" * 5 + "1 1:1\n",  # qid: on some lines only, found blocks later
        "1 1:1\n" * 5 + "1 qid:1 1:1\n",
        "1 qid:1 1:1\n" * 5 + "1 qid:1 1:2 1:3\n",  # duplicate index
        "1 qid:1 1:1\n" * 5 + "1 qid:1 1:1e999\n",  # overflow, via float()
        "1 qid:1 1:1\n" * 5 + "1 qid:1 1:0." + "1" * 30 + " 2:x\n",  # slow token then error
        "1 qid:1 1:1\n" * 5 + "1e999 qid:1 1:1\n",
        "1 qid:1 1:1\n" * 3 + "\n#c\n" + "x qid:1 1:1\n",
        "1 qid:1 1:1\n" * 5 + "1 qid:1 5:NULL\n",
    ],
)
def test_errors_in_later_blocks_name_the_same_line(content):
    for block in BLOCK_SIZES:
        err = _assert_same(content.encode(), block)
        assert isinstance(err, LTRInputError)


def test_utf8_error_in_a_later_block_names_its_line():
    data = b"1 qid:1 1:1\n" * 5 + b"1 qid:1 1:1 # \xff\n"
    for block in BLOCK_SIZES:
        with pytest.raises(LTRInputError) as info:
            _parse_bytes(data, "mem.txt", None, "zero", False, block_bytes=block)
        assert info.value.line == 6


@pytest.mark.parametrize("end", [b"", b"\n"])
def test_last_line_without_lf_is_checked_with_its_block(end):
    # found by the fuzz test: a last line without LF used to be a block of its own,
    # so its non-UTF-8 byte was reported after an earlier line's error, unlike the
    # whole-file reference (and unlike the same file ending with LF)
    data = b"\x00\n\x80" + end
    err = _assert_same(data, 1 << 20)
    assert isinstance(err, LTRInputError)
    assert err.line == 2
    assert "not UTF-8" in str(err)


def test_load_svmlight_in_small_blocks_equals_whole_file(tmp_path, monkeypatch):
    data = _random_file(np.random.default_rng(42), 300)
    path = tmp_path / "d.txt"
    path.write_bytes(data)
    whole = load_svmlight(path, return_comments=True, missing="nan")
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 97)
    blocks = load_svmlight(path, return_comments=True, missing="nan")
    np.testing.assert_array_equal(_bits(blocks.X), _bits(whole.X))
    np.testing.assert_array_equal(_bits(blocks.y), _bits(whole.y))
    np.testing.assert_array_equal(blocks.qid, whole.qid)
    np.testing.assert_array_equal(blocks.lines, whole.lines)
    assert blocks.comments == whole.comments
    ref = _parse_bytes_reference(data, str(path), None, "nan")
    np.testing.assert_array_equal(_bits(blocks.X), _bits(ref[0]))


def test_peak_memory_is_near_the_output_size(tmp_path, monkeypatch):
    """NumPy reports its buffers to tracemalloc: the traced peak of a load is the
    output arrays plus a few blocks, not the file plus a token list plus X."""
    rng = np.random.default_rng(0)
    n_rows, n_cols = 20_000, 20
    X = rng.random((n_rows, n_cols)).round(6)
    lines = [
        f"{i % 3} qid:{i // 20} " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(row)) + "\n"
        for i, row in enumerate(X.tolist())
    ]
    path = tmp_path / "big.txt"
    path.write_text("".join(lines))
    block = 1 << 16
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
    # A block's bytes and tokens (<= 12 bytes per token byte pair) plus its rows.
    allowance = 16 * block
    assert peak <= 1.1 * out + allowance, (peak, out, path.stat().st_size)


def test_width_guard_counts_rows_of_every_block(tmp_path, monkeypatch):
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 64)
    # 20000 rows x 200000 features: far beyond 64x a 0.5 MB file.
    text = "".join(f"{i % 3} qid:{i // 10} 1:0.5 200000:1\n" for i in range(20_000))
    path = tmp_path / "wide.txt"
    path.write_text(text)
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:1: ")
    assert "the highest feature index, 200000, makes X 20000 x 200000" in msg
    assert "load_svmlight(path, n_features=200000)" in msg
    # A parse error after the guard tripped is still the one reported.
    path.write_text(text + "1 qid:1 1:x\n")
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path)
    assert info.value.line == 20_001
    assert "'x' is not a number" in str(info.value)


def test_one_row_with_a_huge_index_is_read(tmp_path):
    path = tmp_path / "one.txt"
    path.write_text("1 qid:1 200000:1\n")
    data = load_svmlight(path)
    assert data.X.shape == (1, 200_000)
    assert data.X[0, -1] == 1.0
    assert not data.X[0, :-1].any()


# --- na_values ---


def test_null_token_reads_as_nan(tmp_path):
    path = tmp_path / "null.txt"
    path.write_text("2 qid:1 1:0.5 2:NULL 3:1\n0 qid:1 1:NULL 2:0.25 3:NULL\n")
    data = load_svmlight(path, na_values="NULL")
    expected = np.array([[0.5, np.nan, 1.0], [np.nan, 0.25, np.nan]])
    np.testing.assert_array_equal(data.X, expected)
    assert load_svmlight(path, na_values=["NA", "NULL"]).X.tobytes() == data.X.tobytes()


def test_null_without_option_is_an_error_that_suggests_it(tmp_path):
    path = tmp_path / "null.txt"
    path.write_text("2 qid:1 1:0.5 2:1\n0 qid:1 1:NULL 2:0.25\n")
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path)
    assert info.value.line == 2
    msg = str(info.value)
    assert msg.startswith(f"{path}:2: feature value 'NULL' is not a number")
    assert "na_values=['NULL']" in msg
    assert "--missing-token NULL" in msg
    # A numeric-looking bad value gets no such hint.
    path.write_text("2 qid:1 1:0.5.5\n")
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path)
    assert "na_values" not in str(info.value)


@pytest.mark.parametrize(
    ("content", "line"),
    [
        ("NULL qid:1 1:1\n", 1),  # labels cannot be missing
        ("1 qid:NULL 1:1\n", 1),
        ("1 qid:1 NULL:1\n", 1),
        ("1 qid:1 1:NULLX\n", 1),  # exact tokens only
        ("1 qid:1 1:null\n", 1),  # case-sensitive
        ("1 qid:1 1:1\n1 qid:1 1:NULL:2\n", 2),
    ],
)
def test_na_tokens_only_replace_whole_feature_values(tmp_path, content, line):
    path = tmp_path / "bad.txt"
    path.write_text(content)
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path, na_values="NULL")
    assert info.value.line == line
    for block in BLOCK_SIZES:
        _assert_same(content.encode(), block, na=("NULL",))


@pytest.mark.parametrize("bad", ["1.5", "nan", "-2", "", "a b", "x:y", "#", 5, [None]])
def test_na_values_is_validated(tmp_path, bad):
    path = tmp_path / "d.txt"
    path.write_text("1 qid:1 1:1\n")
    with pytest.raises(ValueError, match="na_values"):
        load_svmlight(path, na_values=bad)


@pytest.mark.parametrize("seed", range(4))
def test_na_files_match_the_reference(seed):
    data = _random_file(np.random.default_rng(100 + seed), 50, na="NULL")
    for block in BLOCK_SIZES:
        _assert_same(data, block, na=("NULL", "NA"), missing="nan")
    # Without the option: the first NULL's line, as the reference says.
    _assert_same(data, 64)


_chars = st.sampled_from([*"0123456789 .:#eE+-\nNUL\t", "qid:1 ", "NULL", "nan"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_chars, max_size=80).map("".join), st.sampled_from(BLOCK_SIZES))
def test_fuzz_blocks_and_na_match_the_reference(text, block):
    _assert_same(text.encode(), block, na=("NULL",))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_is_read_like_a_file(tmp_path):
    data = _random_file(np.random.default_rng(7), 40, na="NULL")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        got = load_svmlight(fifo, na_values="NULL", return_comments=True)
    finally:
        writer.join()
    ref = _parse_bytes_reference(data, str(fifo), None, "zero", ("NULL",))
    np.testing.assert_array_equal(_bits(got.X), _bits(ref[0]))
    assert got.comments == ref[3]


@pytest.mark.parametrize("missing", ["zero", "nan"])
def test_rows_widened_in_place_keep_peak_and_values(tmp_path, monkeypatch, missing):
    """Later lines with higher indices widen X in place: same values as one read, and
    no second matrix at the peak."""
    rng = np.random.default_rng(1)
    n_rows = 12_000
    # X widens twice, the second time near the end, when a copy would double it.
    widths = np.repeat([10, 18, 20], [n_rows // 2, n_rows // 2 - 100, 100])
    lines = [
        f"{i % 3} qid:{i // 20} " + " ".join(f"{j}:{rng.random():.6f}" for j in range(2, w + 1, 2))
        for i, w in enumerate(widths)
    ]
    # Lines of one length (padded with a comment), so the reader's row estimate from
    # the bytes read is exact and the traced peak counts no unused reserve.
    longest = max(len(line) for line in lines)
    lines = [line + " #" + "x" * (longest - len(line)) + "\n" for line in lines]
    data = "".join(lines).encode()
    path = tmp_path / "widening.txt"
    path.write_bytes(data)
    block = 1 << 13
    monkeypatch.setattr(letor, "_BLOCK_BYTES", block)
    load_svmlight(path)
    tracemalloc.start()
    try:
        got = load_svmlight(path, missing=missing)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    ref = _parse_bytes_reference(data, str(path), None, missing)
    np.testing.assert_array_equal(_bits(got.X), _bits(ref[0]))
    out = got.X.nbytes + got.y.nbytes + got.qid.nbytes + got.lines.nbytes
    assert peak <= 1.1 * out + 16 * block, (peak, out)


# --- endless and binary streams: bounded memory, an error at the first bad block


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_an_endless_device_is_refused_at_its_first_block(device):
    """A pipe or device used to be read whole before parsing: /dev/zero grew the
    process by ~300 MB a second until the machine ran out of memory."""
    code = (
        "from ltrboost import load_svmlight\n"
        "from ltrboost.dataset import LTRInputError\n"
        f"try:\n    load_svmlight({device!r})\n"
        "except LTRInputError as e:\n    print('REFUSED', e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith(f"REFUSED {device}:"), proc.stdout


def test_a_long_line_of_nul_bytes_is_named_with_its_line():
    data = b"1 qid:1 1:0.5\n0 qid:1 1:0.25\n" + b"\0" * (3 * 64)
    with pytest.raises(LTRInputError, match=r":3: .*NUL") as err:
        _parse_bytes(data, "f.txt", None, "zero", False, block_bytes=64)
    assert "binary" in str(err.value)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_is_parsed_as_it_is_read_and_its_width_checked(tmp_path, monkeypatch):
    """A pipe's blocks are parsed as they come (an error does not wait for the end of
    the stream) and the dense-width guard counts the bytes read so far."""
    monkeypatch.setattr(letor, "_DENSE_GUARD_BYTES", 1 << 16)
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 4096)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    lines = b"".join(b"1 qid:%d 1:0.5 2:0.25\n" % (i // 10) for i in range(2000))
    bad = lines + b"0 qid:999 5000000:1\n" + lines

    def feed():
        with open(fifo, "wb") as f, contextlib.suppress(BrokenPipeError):
            f.write(bad)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        with pytest.raises(LTRInputError, match=r"highest feature index, 5000000") as err:
            load_svmlight(fifo)
    finally:
        writer.join()
    assert err.value.line == 2001

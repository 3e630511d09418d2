"""Pairs files and click logs are read a block at a time (``text_lines``), not whole:
the same lines as splitting the decoded file, the first bad line named however the file
falls into blocks, and the pairs kept in arrays (2.8M pairs over 1M documents, a 66 MB
file: ~900 MB on top of the data before, ~320 MB after, measured at stop 34)."""

import random

import numpy as np
import pytest

from ltrboost.dataset import LTRInputError
from ltrboost.io import pairs as pairs_io
from ltrboost.io.pairs import _lines, read_pairs_file, text_lines

QID = np.array([7, 7, 7, 9, 9])
DOCIDS = ["a", "b", "c", "a", "d"]


def _whole(data: bytes):
    """The lines of the whole decoded file, or ("error", line, byte)."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return _lines(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        return ("error", len(_lines(data[: err.start].decode("utf-8"))), data[err.start])


@pytest.mark.parametrize("block", [1, 2, 3, 5, 64])
def test_blocks_give_the_lines_of_the_whole_file(tmp_path, block):
    rng = random.Random(block)
    pieces = [b"ab", b"\n", b"\r", b"\r\n", b"\xc3\xa9", b" ", b"\xef\xbb\xbf", b"\xff", b"\xc3"]
    path = tmp_path / "f.txt"
    for _ in range(400):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
        if rng.random() < 0.3:
            data = b"\xef\xbb\xbf" + data
        path.write_bytes(data)
        try:
            got = list(text_lines(str(path), "test file", block))
        except LTRInputError as e:
            got = ("error", e.line, int(str(e).split("byte 0x")[1][:2], 16))
        assert got == _whole(data), data


def test_a_cr_only_file_is_split_although_it_has_no_line_feed(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"7 a b\r" * 100)
    assert list(text_lines(str(path), "test file", 8)) == ["7 a b"] * 100 + [""]


def test_an_earlier_bad_line_is_named_before_a_later_bad_byte(tmp_path, monkeypatch):
    """The whole file used to be decoded first, so a non-UTF-8 byte on line 5000 was
    reported although line 2 had only two fields."""
    monkeypatch.setattr(pairs_io, "TEXT_BLOCK_BYTES", 64)
    path = tmp_path / "pairs.txt"
    path.write_bytes(b"7 a b\n7 a\n" + b"7 a b\n" * 5000 + b"7 a \xff\n")
    with pytest.raises(LTRInputError) as e:
        read_pairs_file(path, QID, DOCIDS)
    assert e.value.line == 2
    assert "fields" in str(e.value)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        # a contradiction before another error is named first, and the other way round
        ("7 a b\n7 b a\n7 a zz\n", 2, "contradicts line 1"),
        ("7 a b\n7 a zz\n7 b a\n", 2, "'zz' is not a document"),
        ("7 a b\n7 a b\n7 c b\n7 b a\n9 d a\n9 a d\n", 4, "contradicts line 1"),
        ("7 c b\n7 a b\n7 b a\n", 3, "contradicts line 2: 'a' was preferred to 'b' there"),
    ],
)
def test_contradictions_are_named_in_file_order(tmp_path, text, line, fragment):
    path = tmp_path / "pairs.txt"
    path.write_text(text)
    with pytest.raises(LTRInputError) as e:
        read_pairs_file(path, QID, DOCIDS)
    assert e.value.line == line
    assert fragment in str(e.value)


def test_many_pairs_read_as_before(tmp_path):
    """Every pair of a long file, in order, with its weight; repeats allowed."""
    rng = np.random.default_rng(0)
    n_docs = 300
    qid = np.repeat([1, 2, 3], n_docs)
    docids = [f"d{i}" for i in range(3 * n_docs)]
    pairs = set()
    lines = []
    expect = []
    for _ in range(5000):
        q = int(rng.integers(0, 3))
        a, b = rng.integers(0, n_docs, 2) + q * n_docs
        if a == b or (b, a) in pairs:
            continue
        pairs.add((a, b))
        w = float(rng.integers(1, 5))
        lines.append(f"{q + 1} d{a} d{b} {w:g}")
        expect.append((a, b, w))
    path = tmp_path / "pairs.txt"
    path.write_text("\n".join(lines) + "\n")
    p, o, w = read_pairs_file(path, qid, docids)
    assert list(zip(p.tolist(), o.tolist(), w.tolist(), strict=True)) == expect

"""Tests for ltrboost.io.queryfile: LightGBM .query sizes, read and atomic write."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ltrboost.dataset import LTRInputError
from ltrboost.io import read_query_file, write_query_file


def test_read_plain(tmp_path):
    path = tmp_path / "a.query"
    path.write_text("1\n13\n5\n")
    sizes = read_query_file(path)
    np.testing.assert_array_equal(sizes, [1, 13, 5])
    assert sizes.dtype == np.int64


def test_read_tolerates_whitespace_blank_lines_crlf_bom(tmp_path):
    path = tmp_path / "a.query"
    path.write_bytes(b"\xef\xbb\xbf 2 \r\n\r\n\t7\r\n\n")
    np.testing.assert_array_equal(read_query_file(str(path)), [2, 7])


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [
        (b"3\nx\n", 2, "'x' is not a positive integer"),
        (b"3\n\n1.5\n", 3, "'1.5' is not a positive integer"),
        (b"0\n", 1, "query size 0: every query needs at least one document"),
        (b"4\n-2\n", 2, "'-2' is not a positive integer"),
        (b"4 5\n", 1, "'4 5' is not a positive integer"),
        (b"1_000\n", 1, "is not a positive integer"),
        (b"", 1, "no query sizes"),
        (b"\n \n", 1, "no query sizes"),
        (b"1\n\xff\n", 2, "not UTF-8"),
    ],
)
def test_read_errors(tmp_path, content, line, fragment):
    path = tmp_path / "bad.query"
    path.write_bytes(content)
    with pytest.raises(LTRInputError) as info:
        read_query_file(path)
    err = info.value
    assert err.path == str(path)
    assert err.line == line
    assert fragment in str(err)
    assert str(err).startswith(f"{path}:{line}: ")


def test_write_read_round_trip(tmp_path):
    path = tmp_path / "rt.query"
    write_query_file(path, np.array([3, 1, 40]))
    assert path.read_text() == "3\n1\n40\n"
    np.testing.assert_array_equal(read_query_file(path), [3, 1, 40])
    write_query_file(path, [2.0, 5.0])  # whole floats are accepted
    np.testing.assert_array_equal(read_query_file(path), [2, 5])


@pytest.mark.parametrize(
    ("sizes", "match"),
    [
        ([[1, 2]], "1-D"),
        ([1, 0], r"sizes\[1\]=0"),
        ([1, -3], r"sizes\[1\]=-3"),
        ([1.5], "whole numbers"),
        ([np.nan], "whole numbers"),
        (["a"], "whole numbers"),
        # beyond int64 these wrapped: 2**64 - 1 was refused as 'sizes[0]=-1', 1e30 as
        # 'sizes[0]=-9223372036854775808', and 2**63 + 5 ones wrote a negative size
        (np.array([2**64 - 1], dtype=np.uint64), r"sizes\[0\]=18446744073709551615 is larger"),
        ([1, 1e30], r"sizes\[1\]=1e\+30 is larger"),
        (np.array([2**62 + 1], dtype=np.uint64), "is larger than any data file"),
    ],
)
def test_write_validates_and_keeps_old_file(tmp_path, sizes, match):
    path = tmp_path / "v.query"
    path.write_text("9\n")
    with pytest.raises(ValueError, match=match):
        write_query_file(path, sizes)
    assert path.read_text() == "9\n"


def test_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "a.query"
    write_query_file(path, [1])
    assert (path.stat().st_mode & 0o777) == 0o644

    def fail(*args, **kwargs):
        raise OSError("no space left")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="no space left"):
        write_query_file(path, [2, 3])
    assert path.read_text() == "1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.query"]


@pytest.mark.parametrize("digits", [4301, 5000])
def test_sizes_and_positions_beyond_int_conversion_limits_name_their_line(tmp_path, digits):
    """A size or position of more than 4300 digits made int() raise Python's 'Exceeds
    the limit (4300 digits)' ValueError, without the file or its line."""
    from ltrboost.io.queryfile import read_position_file

    p = tmp_path / "d.query"
    p.write_text("3\n" + "1" * digits + "\n")
    with pytest.raises(LTRInputError, match=r"d.query:2: query size 1+\.\.\. is larger"):
        read_query_file(p)
    with pytest.raises(LTRInputError, match=r"d.query:2: position 1+\.\.\. is too large"):
        read_position_file(p)


def test_leading_zeros_do_not_make_a_size_too_large(tmp_path):
    p = tmp_path / "d.query"
    p.write_text("0" * 5000 + "3\n" + "00000000000000000000002\n")
    assert read_query_file(p).tolist() == [3, 2]
    from ltrboost.io.queryfile import read_position_file

    assert read_position_file(p).tolist() == [3, 2]

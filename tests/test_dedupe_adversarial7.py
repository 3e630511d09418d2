"""Pins of behaviour that two copies of the same code used to give, before the copies
became one (a pure refactor must keep every message, value and file)."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost.dataset import LTRInputError
from ltrboost.io.queryfile import read_position_file, read_query_file

READERS = [
    (read_query_file, "the query file", ".query"),
    (read_position_file, "position file", ".position"),
]


@pytest.mark.parametrize(("read", "what", "suffix"), READERS)
def test_sidecar_readers_name_a_missing_file(tmp_path, read, what, suffix):
    path = tmp_path / f"absent{suffix}"
    with pytest.raises(LTRInputError) as err:
        read(path)
    assert str(err.value) == f"{path}: cannot read {what}: No such file or directory"


@pytest.mark.parametrize(("read", "what", "suffix"), READERS)
def test_sidecar_readers_name_the_line_of_a_byte_that_is_not_utf8(tmp_path, read, what, suffix):
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(b"3\n\n2\xe9\n")
    with pytest.raises(LTRInputError) as err:
        read(path)
    assert str(err.value) == (
        f"{path}:3: not UTF-8 text (byte 0xe9); a {suffix} file holds one integer per line"
    )


@pytest.mark.parametrize(("read", "what", "suffix"), READERS)
def test_sidecar_readers_take_a_bom_crlf_and_blank_lines(tmp_path, read, what, suffix):
    path = tmp_path / f"ok{suffix}"
    path.write_bytes(b"\xef\xbb\xbf 3\r\n\r\n\t2 \r\n\n")
    np.testing.assert_array_equal(read(path), [3, 2])
    path.write_bytes(b"\xef\xbb\xbf3\r\n\r\nx\r\n")  # blank lines still count
    with pytest.raises(LTRInputError, match=r":3: "):
        read(path)

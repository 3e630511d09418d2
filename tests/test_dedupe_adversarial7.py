"""Pins of behaviour that two copies of the same code used to give, before the copies
became one (a pure refactor must keep every message, value and file)."""

from __future__ import annotations

import os

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


OFFSETS = np.array([0, 4], dtype=np.int64)
RANGE = "must be finite, >= 0 and at most 3.403e+38"
SAMPLE_LOST = (
    "is positive but would become 0 as float32 (weights are float32, the smallest "
    "positive is 1.4e-45): scale the weights up"
)
PAIR_LOST = (
    "is positive but would become 0 in float32 gradients (the smallest positive float32 "
    "is 1.4e-45): scale the weights up"
)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (np.inf, f"sample_weight[2]=inf {RANGE} (weights are float32)"),
        (-1.0, f"sample_weight[2]=-1.0 {RANGE} (weights are float32)"),
        (1e39, f"sample_weight[2]=1e+39 {RANGE} (weights are float32)"),
        (1e-46, f"sample_weight[2]=1e-46 {SAMPLE_LOST}"),
    ],
)
def test_sample_weight_refusals_name_the_row(value, message):
    from ltrboost.dataset import check_sample_weight

    w = [1.0, 0.5, value, 2.0]
    with pytest.raises(LTRInputError) as err:
        check_sample_weight(w, 4)
    assert err.value.row == 2
    assert str(err.value) == f"row 2: {message}"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (np.nan, f"pairs.weight[1]=nan {RANGE} (pair weights scale float32 gradients)"),
        (-1.0, f"pairs.weight[1]=-1.0 {RANGE} (pair weights scale float32 gradients)"),
        (1e39, f"pairs.weight[1]=1e+39 {RANGE} (pair weights scale float32 gradients)"),
        (1e-46, f"pairs.weight[1]=1e-46 {PAIR_LOST}"),
    ],
)
def test_pair_weight_refusals_name_the_pair(value, message):
    from ltrboost.dataset import check_preference_pairs

    with pytest.raises(LTRInputError) as err:
        check_preference_pairs([0, 1], [2, 3], [1.0, value], OFFSETS)
    assert err.value.pair == 1
    assert str(err.value) == f"pair 1: {message}"


def test_float32_weight_checks_keep_their_values():
    from ltrboost.dataset import check_preference_pairs, check_sample_weight

    w = check_sample_weight([0.0, 1e-45, 3.4e38, 1], 4)
    assert w.dtype == np.float32
    np.testing.assert_array_equal(w, np.array([0.0, 1e-45, 3.4e38, 1], dtype=np.float32))
    _, _, pw, _ = check_preference_pairs([0, 1], [2, 3], [0.0, 1e-45], OFFSETS)
    assert pw.dtype == np.float64
    np.testing.assert_array_equal(pw, [0.0, 1e-45])


@pytest.mark.parametrize("reader", [read_query_file, read_position_file])
def test_readers_take_a_bytes_path(tmp_path, reader) -> None:
    # both readers take what os.fsdecode takes (the .position reader used os.fspath and
    # raised a TypeError traceback on a bytes path)
    p = tmp_path / "f.txt"
    p.write_text("3\n1\n")
    assert list(reader(os.fsencode(p))) == list(reader(p))

"""The LETOR reader's two kernels: ``_scan_letor`` (the common case, compiled on every
first run) and ``_parse_letor`` (everything, compiled only when a file needs it).

Whichever kernel parses a file, the results are the same bit for bit and every error is
the full kernel's (same message, same line); common files never reach the full kernel.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_letor import _assert_same_parse, _fuzz_input, _mutate, _random_letor

import ltrboost.io.letor as letor
from ltrboost.dataset import LTRInputError
from ltrboost.io.letor import _parse_bytes


def _parse(data: bytes, block: int | None = None, n_features=None, missing="zero"):
    try:
        return _parse_bytes(data, "mem.txt", n_features, missing, True, block_bytes=block), None
    except LTRInputError as err:
        return None, str(err)


def _both(monkeypatch, data: bytes, **kw):
    """(scan first, full kernel only) results of parsing ``data``."""
    monkeypatch.setattr(letor, "_FAST_SCAN", True)
    fast = _parse(data, **kw)
    monkeypatch.setattr(letor, "_FAST_SCAN", False)
    full = _parse(data, **kw)
    monkeypatch.setattr(letor, "_FAST_SCAN", True)
    return fast, full


def _assert_same(fast, full) -> None:
    (out1, err1), (out2, err2) = fast, full
    assert err1 == err2
    if err1 is None:
        _assert_same_parse(out1[:4], out2[:4])
        np.testing.assert_array_equal(out1[4], out2[4])


_COMMON = (
    b"\xef\xbb\xbf2 qid:-7 3:0.5 1:-1e-3 2:7 # docid = a\r\n"
    b"0 qid:+12 1:1.25 2:-0.0 3:.5E+2 4:5. # \n"
    b"\n# a comment line\n   \t\n"
    b"1.5 qid:999999999999999999 1:0.30000000000000004 2:123456789012345678.9e-300"
    b" 4:1.7976931348623157e308 3:4.9406564584124654e-324\n"
    b"3\tqid:0\t1:9007199254740993 2:-2.2250738585072011e-308 3:1e-5#x\n"
    b"4 qid:0 2:0000000.000000001234567890123456789 1:00012e0003"
)


def test_common_file_never_compiles_the_full_kernel(monkeypatch):
    """Signs, exponents, leading zeros, 19-digit mantissas, subnormals, CRLF, BOM,
    comments, unsorted indices: all read by ``_scan_letor``; the full kernel is
    never called (so a first run does not compile it)."""

    def refuse(*args):
        raise AssertionError("_parse_letor was called")

    fast = _parse(_COMMON)
    monkeypatch.setattr(letor, "_parse_letor", refuse)
    for block in (None, 1, 7, 64):
        _assert_same(_parse(_COMMON, block=block), fast)
    monkeypatch.undo()
    _assert_same(fast, _both(monkeypatch, _COMMON)[1])
    X = fast[0][0]
    assert X[0].tolist() == [-1e-3, 7.0, 0.5, 0.0]
    assert fast[0][2].tolist() == [-7, 12, 999999999999999999, 0, 0]


@pytest.mark.parametrize(
    "text",
    [
        "1 1:nan 2:0.5\n",  # nan: full kernel
        "1 1:-INF\n",  # error
        "1 1:0.1234567890123456789012\n",  # 20+ significant digits: float()
        "1 1:1e000000001\n",  # 9-digit exponent
        "1 1:1e-400\n",  # below the exact range
        "1 qid:1234567890123456789 1:1\n",  # 19-digit qid
        "1 qid:1 1:1\n2 2:1\n",  # qid: convention changes
        "1 qid:1 1:2\n1 qid:2 3:1 3:2\n",  # repeated index
        "1 2:3 qid:1\n",  # qid after a feature
        "x 1:2\n",  # bad label
        "1 0:2\n",  # zero-based
        "1 1:2:3\n",  # malformed
    ],
)
def test_rare_lines_fall_back_with_the_same_outcome(monkeypatch, text):
    data = ("0 qid:1 1:0.25\n" if "qid" in text else "0 1:0.25\n").encode() * 3 + text.encode()
    data += b"2 qid:1 1:1\n" if "qid" in text else b"2 1:1\n"
    for block in (None, 8):
        fast, full = _both(monkeypatch, data, block=block)
        _assert_same(fast, full)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("n_features", [None, 7])
def test_random_files_scan_equals_full(monkeypatch, seed, n_features):
    rng = np.random.default_rng(seed)
    data = _random_letor(rng, with_qid=seed % 2 == 0)
    for block in (None, 1 + seed * 13):
        _assert_same(*_both(monkeypatch, data, block=block, n_features=n_features))


# Valid text without nan, mutated: most inputs stay within _scan_letor's part.
_COMMON_VALID = (
    "2 qid:1 1:0.5 2:-1e-3 3:7 # docid = a\n"
    "0 qid:1 1:1.25 3:0.30000000000000004\n"
    "\n# comment\n"
    "1 qid:2 2:3.5e10 1:0 3:0.000001\n"
    "1 qid:-3 1:-.5 2:+12345678901234567e-300 3:5.\r\n"
)
_mutated_common = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 10_000), st.integers(0, 100)),
    min_size=1,
    max_size=4,
).map(lambda ops: _mutate(_COMMON_VALID, ops).encode("utf-8"))


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.one_of(_fuzz_input, _mutated_common))
def test_fuzz_scan_equals_full(monkeypatch, data):
    _assert_same(*_both(monkeypatch, data))
    _assert_same(*_both(monkeypatch, data, block=5))

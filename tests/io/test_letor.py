"""Tests for ltrboost.io.letor: hand examples, one test per input error (file:line),
exact round trips, the exact float parser, kernel-vs-reference fuzzing and real data."""

from __future__ import annotations

import math
import os
import re
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from ltrboost.dataset import LTRInputError
from ltrboost.io import (
    LetorData,
    dump_svmlight,
    load_svmlight,
    parse_docids,
    read_query_file,
    write_query_file,
)
from ltrboost.io.letor import (
    _NUM_BAD,
    _NUM_INF,
    _NUM_NAN,
    _NUM_OK,
    _NUM_SLOW,
    _first_repeat,
    _parse_bytes,
    _parse_bytes_reference,
    _parse_number,
)

DATA_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def _write(tmp_path: Path, content: str | bytes, name: str = "data.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def _bits(a: np.ndarray) -> np.ndarray:
    """float64 array as its bit patterns: -0.0 != 0.0, NaN == NaN (same payload)."""
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _kernel_impl(data: bytes, n_features: int | None = None, missing: str = "zero"):
    X, y, qid, comments, _ = _parse_bytes(data, "mem.txt", n_features, missing, True)
    return X, y, qid, comments


def _reference_impl(data: bytes, n_features: int | None = None, missing: str = "zero"):
    return _parse_bytes_reference(data, "mem.txt", n_features, missing)


# --- hand examples ---


def test_letor_line_with_qid_and_comment(tmp_path):
    path = _write(
        tmp_path,
        "0 qid:10002 1:0.007477 2:0.000000 3:1.000000 #docid = GX008-86-4444840 inc = 1"
        "\n"
        "2 qid:10002 1:0.5 2:0.25 3:0 #docid = GX037-06-11625428 inc = 0.5\n"
        "1 qid:10032 1:1 2:2 3:3\n",
    )
    data = load_svmlight(path, return_comments=True)
    assert isinstance(data, LetorData)
    np.testing.assert_array_equal(data.X, [[0.007477, 0.0, 1.0], [0.5, 0.25, 0.0], [1.0, 2.0, 3.0]])
    assert data.X.dtype == np.float64
    assert data.X.flags.c_contiguous
    np.testing.assert_array_equal(data.y, [0.0, 2.0, 1.0])
    assert data.y.dtype == np.float64
    np.testing.assert_array_equal(data.qid, [10002, 10002, 10032])
    assert data.qid.dtype == np.int64
    assert data.comments == [
        "docid = GX008-86-4444840 inc = 1",
        "docid = GX037-06-11625428 inc = 0.5",
        "",
    ]
    assert parse_docids(data.comments) == [
        "GX008-86-4444840",
        "GX037-06-11625428",
        None,
    ]


def test_comments_are_none_unless_asked(tmp_path):
    path = _write(tmp_path, "1 1:2 # hello\n")
    assert load_svmlight(path).comments is None


def test_parse_docids_spacing_and_none():
    assert parse_docids(["docid=abc", "x docid =  D-1 inc", None, "", "nodoc"]) == [
        "abc",
        "D-1",
        None,
        None,
        None,
    ]


def test_sparse_lines_absent_features_are_zero(tmp_path):
    path = _write(tmp_path, "1 2:5\n0 1:1 4:-2\n3\n")
    data = load_svmlight(path)
    np.testing.assert_array_equal(data.X, [[0, 5, 0, 0], [1, 0, 0, -2], [0, 0, 0, 0]])
    assert data.qid is None


def test_missing_nan_makes_absent_features_nan(tmp_path):
    path = _write(tmp_path, "1 2:5 3:nan\n0 1:1 3:0\n")
    data = load_svmlight(path, missing="nan")
    expected = np.array([[np.nan, 5, np.nan], [1, np.nan, 0]])
    np.testing.assert_array_equal(data.X, expected)  # NaNs compare equal here
    # an explicit nan is a missing value with either setting
    assert np.isnan(load_svmlight(path).X[0, 2])
    assert load_svmlight(path).X[0, 0] == 0.0


def test_missing_option_is_validated(tmp_path):
    path = _write(tmp_path, "1 1:1\n")
    with pytest.raises(ValueError, match="missing="):
        load_svmlight(path, missing="mean")


def test_blank_and_comment_lines_are_skipped_but_counted(tmp_path):
    path = _write(tmp_path, "# header\n\n   \n1 1:1\n\t# note\n2 1:2\n\n3 1:x\n")
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path)
    assert info.value.line == 8
    ok = _write(tmp_path, "# header\n\n   \n1 1:1\n\t# note\n2 1:2\n", "ok.txt")
    np.testing.assert_array_equal(load_svmlight(ok).y, [1.0, 2.0])


def test_crlf_and_bom(tmp_path):
    path = _write(tmp_path, b"\xef\xbb\xbf1 qid:3 1:0.5 2:1\r\n0 qid:3 2:2 # c\r\n\r\n")
    data = load_svmlight(path, return_comments=True)
    np.testing.assert_array_equal(data.X, [[0.5, 1.0], [0.0, 2.0]])
    np.testing.assert_array_equal(data.qid, [3, 3])
    assert data.comments == ["", "c"]


def test_whitespace_variants_and_no_final_newline(tmp_path):
    path = _write(tmp_path, "1\tqid:1  1:2\t\t2:3   \n 0 qid:1 1:4\x0b2:5\x0c")
    data = load_svmlight(path)
    np.testing.assert_array_equal(data.X, [[2, 3], [4, 5]])


def test_scientific_notation_signs_and_float_labels(tmp_path):
    path = _write(
        tmp_path,
        "0.5 1:1e-3 2:-2.5E+2 3:+.5 4:7. 5:-0 6:1E5 7:00012 8:6.520804200793011e-08\n"
        "-1.25e1 1:NaN 2:-nan\n",
    )
    data = load_svmlight(path)
    tokens = [
        "1e-3",
        "-2.5E+2",
        "+.5",
        "7.",
        "-0",
        "1E5",
        "00012",
        "6.520804200793011e-08",
    ]
    np.testing.assert_array_equal(_bits(data.X[0]), _bits(np.array([float(t) for t in tokens])))
    assert math.copysign(1.0, data.X[0, 4]) == -1.0  # -0 keeps its sign
    np.testing.assert_array_equal(data.y, [0.5, -12.5])
    assert np.isnan(data.X[1, :2]).all()


def test_unsorted_indices_are_accepted(tmp_path):
    path = _write(tmp_path, "1 3:3 1:1 2:2\n")
    np.testing.assert_array_equal(load_svmlight(path).X, [[1, 2, 3]])


@pytest.mark.parametrize("seed", range(5))
def test_unsorted_long_lines_find_duplicates(tmp_path, seed):
    rng = np.random.default_rng(seed)
    idx = rng.permutation(np.arange(1, 200))
    ok = " ".join(f"{j}:{j}" for j in idx)
    data = load_svmlight(_write(tmp_path, f"1 {ok}\n"))
    np.testing.assert_array_equal(data.X[0], np.arange(1, 200))
    dup = int(rng.integers(1, 200))
    bad = f"1 {ok} {dup}:0\n"
    with pytest.raises(LTRInputError, match=f"feature index {dup} appears more"):
        load_svmlight(_write(tmp_path, "0 1:1\n" + bad, "dup.txt"))


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        # the repeat is found after the kernel (rows it flagged), yet the first error
        # by line wins either way
        ("0 1:1\n1 2:1 1:1 2:3\n1 1:1\n1 1:x\n", 2, "feature index 2 appears more"),
        ("0 1:1\n1 1:x\n1 2:1 1:1 2:3\n", 2, "feature value .x. is not a number"),
        ("0 1:1\n1 3:1 1:1 3:3\n1 2:1 1:1 2:3 1e999:1\n", 2, "feature index 3 appears"),
        ("0 1:1\n1 3:1 1:1 2:1\n1 2:1 1:1 2:3\n", 3, "feature index 2 appears"),
        ("0 1:1.00000000000000000001e400\n1 2:1 1:1 2:3\n", 1, "overflows to infinity"),
        ("0 2:1 1:1 2:1.00000000000000000001e400\n", 1, "overflows to infinity"),
        ("0 1:1\n1 2:1 1:1 2:3\n1 1:1.00000000000000000001e400\n", 2, "index 2 appears"),
    ],
)
def test_repeated_index_and_other_errors_first_line_wins(tmp_path, text, line, message):
    with pytest.raises(LTRInputError, match=message) as info:
        load_svmlight(_write(tmp_path, text))
    assert info.value.line == line


def test_first_repeat_sorts():
    rng = np.random.default_rng(0)
    for n in [0, 1, 2, 3, 10, 101]:
        a = rng.integers(0, 1000, size=n).astype(np.int32)
        out = a.copy()
        found = _first_repeat(out)
        np.testing.assert_array_equal(out, np.sort(a))
        values, counts = np.unique(a, return_counts=True)
        repeated = values[counts > 1]
        assert found == (repeated[0] if repeated.size else 0)


def test_noncontiguous_qids_are_not_an_error(tmp_path):
    path = _write(tmp_path, "1 qid:2 1:1\n0 qid:1 1:2\n1 qid:2 1:3\n")
    np.testing.assert_array_equal(load_svmlight(path).qid, [2, 1, 2])


def test_negative_and_large_qids(tmp_path):
    path = _write(tmp_path, f"1 qid:-5 1:1\n0 qid:{2**63 - 1} 1:2\n")
    np.testing.assert_array_equal(load_svmlight(path).qid, [-5, 2**63 - 1])


def test_n_features_pads(tmp_path):
    path = _write(tmp_path, "1 1:1 2:2\n")
    data = load_svmlight(path, n_features=4)
    np.testing.assert_array_equal(data.X, [[1, 2, 0, 0]])
    assert load_svmlight(path, n_features=4, missing="nan").X.shape == (1, 4)
    assert np.isnan(load_svmlight(path, n_features=4, missing="nan").X[0, 3])


def test_labels_only_gives_zero_features(tmp_path):
    path = _write(tmp_path, "1\n2 # c\n")
    assert load_svmlight(path).X.shape == (2, 0)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_n_features_argument_is_validated(tmp_path, bad):
    path = _write(tmp_path, "1 1:1\n")
    with pytest.raises(ValueError, match="n_features"):
        load_svmlight(path, n_features=bad)


def test_accepts_str_and_pathlib(tmp_path):
    path = _write(tmp_path, "1 1:1\n")
    np.testing.assert_array_equal(load_svmlight(str(path)).X, load_svmlight(path).X)


def test_query_sidecar_defines_queries(tmp_path):
    path = _write(tmp_path, "1 1:1\n0 1:2\n2 1:3\n1 2:4\n", "rank.train")
    _write(tmp_path, "1\n3\n", "rank.train.query")
    np.testing.assert_array_equal(load_svmlight(path).qid, [0, 1, 1, 1])


def test_explicit_query_file(tmp_path):
    path = _write(tmp_path, "1 1:1\n0 1:2\n2 1:3\n")
    sizes = _write(tmp_path, "2\n1\n", "sizes.txt")
    np.testing.assert_array_equal(load_svmlight(path, query_file=sizes).qid, [0, 0, 1])


def test_sidecar_ignored_when_file_has_qid(tmp_path):
    path = _write(tmp_path, "1 qid:7 1:1\n0 qid:8 1:2\n", "rank.train")
    _write(tmp_path, "2\n", "rank.train.query")
    with pytest.warns(UserWarning, match="rank.train.query is not read"):
        np.testing.assert_array_equal(load_svmlight(path).qid, [7, 8])


def test_query_file_with_qid_file_is_an_error(tmp_path):
    path = _write(tmp_path, "# c\n1 qid:7 1:1\n")
    sizes = _write(tmp_path, "1\n", "sizes.txt")
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path, query_file=sizes)
    assert info.value.path == str(path)
    assert info.value.line == 2
    assert "define the queries twice" in str(info.value)


# --- errors: one test each, with path, exact line and a message fragment ---

ERROR_CASES = [
    # id, content, line, fragment
    ("empty", "", 1, "no data lines"),
    ("only-comments", "# a\n\n  # b\n", 1, "no data lines"),
    ("no-label-qid", "1 qid:1 1:0.5\nqid:1 1:0.5\n", 2, "no label"),
    ("no-label-feature", "\n1:0.5 2:1\n", 2, "no label"),
    ("label-not-number", "1 1:1\nabc 1:2\n", 2, "label 'abc' is not a number"),
    ("label-nan", "1 1:2\nnan 1:3\n", 2, "label 'nan' is not a finite number"),
    ("label-inf", "-inf 1:3\n", 1, "label '-inf' is not a finite number"),
    ("label-overflow", "1 1:1\n\n1e999 1:3\n", 3, "label '1e999' is not a finite"),
    ("label-overflow-slow", "1234567890123456789012e400 1:1\n", 1, "not a finite"),
    ("qid-missing", "1 qid:1 1:2\n2 qid:1 1:3\n2 1:3\n", 3, "has no qid: but line 1"),
    ("qid-unexpected", "# x\n1 1:2\n2 qid:1 1:3\n", 3, "has qid: but line 2 has none"),
    ("qid-float", "1 qid:1.5 1:2\n", 1, "qid 'qid:1.5' is not an integer"),
    ("qid-text", "1 qid:1 1:2\n1 qid:abc 1:2\n", 2, "is not an integer"),
    ("qid-empty", "1 qid: 1:2\n", 1, "is not an integer"),
    ("qid-overflow", f"1 qid:{2**63} 1:2\n", 1, "is not an integer"),
    ("qid-late", "1 1:2 qid:3\n", 1, "qid: must come right after the label"),
    ("token-no-colon", "1 qid:1 12\n", 1, "malformed feature '12'"),
    ("token-empty-index", "1 :5\n", 1, "malformed feature ':5'"),
    ("token-empty-value", "1 2:1 5:\n", 1, "malformed feature '5:'"),
    ("token-empty-value-comment", "1 5:# c\n", 1, "malformed feature '5:'"),
    ("token-two-colons", "1 1:2:3\n", 1, "malformed feature '1:2:3'"),
    ("index-not-integer", "1 a:1\n", 1, "feature index 'a' is not an integer"),
    ("index-float", "1 1.5:1\n", 1, "feature index '1.5' is not an integer"),
    ("value-not-number", "1 1:abc\n", 1, "feature value 'abc' is not a number"),
    ("value-trailing", "1 1:1.5x\n", 1, "feature value '1.5x' is not a number"),
    ("value-bad-exponent", "1 1:1e\n", 1, "feature value '1e' is not a number"),
    ("index-zero", "1 1:1\n1 0:5\n", 2, "feature index '0' is not positive"),
    ("index-negative", "1 -3:5\n", 1, "feature index '-3' is not positive"),
    ("index-too-large", "1 99999999999:1\n", 1, "is too large"),
    ("index-duplicate", "1 1:1\n1 1:2 2:3 1:4\n", 2, "feature index 1 appears more"),
    ("index-duplicate-sorted", "1 2:2 2:3\n", 1, "feature index 2 appears more"),
    ("value-inf", "1 1:inf\n", 1, "use nan for a missing value"),
    ("value-minus-infinity", "1 1:2 2:-Infinity\n", 1, "'-Infinity' is infinite"),
    ("value-overflow", "1 1:1e400\n", 1, "use nan for a missing value"),
    (
        "value-overflow-slow",
        "1 1:1\n1 1:1234567890123456789012e400\n",
        2,
        "overflows to infinity; use nan",
    ),
    ("not-utf8", b"1 1:2\n\xff\xfe 1:3\n", 2, "not UTF-8"),
    ("binary", bytes(range(256)) * 4, 2, "not UTF-8"),  # LF is byte 10, 0x80 after it
]


@pytest.mark.parametrize(
    ("content", "line", "fragment"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_input_errors_name_file_and_line(tmp_path, content, line, fragment):
    path = _write(tmp_path, content)
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path)
    err = info.value
    assert err.path == str(path)
    assert err.line == line
    assert fragment in str(err)
    assert str(err).startswith(f"{path}:{line}: ")


@pytest.mark.parametrize(
    ("content", "line"),
    [(case[1], case[2]) for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_reference_reports_the_same_lines(content, line):
    data = content.encode() if isinstance(content, str) else content
    with pytest.raises(LTRInputError) as info:
        _reference_impl(data)
    assert info.value.line == line


def test_index_beyond_n_features(tmp_path):
    path = _write(tmp_path, "1 1:1 2:2\n0 1:1 3:2\n")
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path, n_features=2)
    assert info.value.line == 2
    assert info.value.path == str(path)
    assert "feature index 3 is larger than n_features=2" in str(info.value)


def test_huge_index_guard_names_the_line(tmp_path):
    path = _write(tmp_path, "1 1:1\n1 2000000000:1\n")
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path)
    assert info.value.line == 2
    assert "load_svmlight(path, n_features=2000000000)" in str(info.value)


def test_query_sizes_too_small(tmp_path):
    path = _write(tmp_path, "1 1:1\n0 1:2\n2 1:3\n", "rank.train")
    qpath = _write(tmp_path, "1\n\n1\n", "rank.train.query")
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path)
    err = info.value
    assert err.path == str(qpath)
    assert err.line == 3
    assert "add up to 2" in str(err)
    assert "3 data rows" in str(err)


def test_query_sizes_too_large(tmp_path):
    path = _write(tmp_path, "1 1:1\n0 1:2\n2 1:3\n")
    qpath = _write(tmp_path, "2\n2\n5\n", "sizes.txt")
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path, query_file=qpath)
    assert info.value.path == str(qpath)
    assert info.value.line == 2
    assert "add up to 4" in str(info.value)


def test_bad_query_file_line(tmp_path):
    path = _write(tmp_path, "1 1:1\n", "rank.train")
    qpath = _write(tmp_path, "x\n", "rank.train.query")
    with pytest.raises(LTRInputError) as info:
        load_svmlight(path)
    assert info.value.path == str(qpath)
    assert info.value.line == 1


def test_many_slow_tokens_grow_the_buffer(tmp_path):
    # 21 significant digits: beyond both exact paths, so each goes through float().
    tokens = [f"0.{k:021d}1" for k in range(1, 700)]
    line = "1 " + " ".join(f"{j + 1}:{t}" for j, t in enumerate(tokens)) + "\n"
    data = load_svmlight(_write(tmp_path, line))
    np.testing.assert_array_equal(_bits(data.X[0]), _bits(np.array([float(t) for t in tokens])))


# --- kernel against reference ---


@pytest.mark.parametrize("impl", [_reference_impl, _kernel_impl])
def test_impl_on_hand_case(impl):
    data = b"\xef\xbb\xbf# h\n2 qid:1 1:0.5 3:-1e-2 # d\r\n\n0 qid:1 2:nan\n1 qid:4 3:7 1:1"
    X, y, qid, comments = impl(data, None, "nan")
    expected = np.array([[0.5, np.nan, -0.01], [np.nan, np.nan, np.nan], [1, np.nan, 7]])
    np.testing.assert_array_equal(X, expected)
    np.testing.assert_array_equal(y, [2, 0, 1])
    np.testing.assert_array_equal(qid, [1, 1, 4])
    assert comments == ["d", "", ""]


def _random_letor(rng: np.random.Generator, with_qid: bool) -> bytes:
    lines = []
    for _ in range(rng.integers(1, 30)):
        parts = [repr(float(rng.integers(0, 5)))]
        if with_qid:
            parts.append(f"qid:{rng.integers(-3, 1000)}")
        idx = np.flatnonzero(rng.random(12) < 0.6) + 1
        if rng.random() < 0.2:
            rng.shuffle(idx)
        for j in idx:
            kind = rng.integers(0, 6)
            if kind == 0:
                v = repr(float(rng.standard_normal()))
            elif kind == 1:
                v = f"{rng.random():.6f}"
            elif kind == 2:
                v = f"{rng.standard_normal() * 10.0 ** rng.integers(-320, 300):.17g}"
            elif kind == 3:
                v = str(int(rng.integers(-100, 100)))
            elif kind == 4:
                v = "nan"
            else:
                v = f"{rng.random():.25f}"  # beyond 19 digits: the float() path
            parts.append(f"{j}:{v}")
        if rng.random() < 0.3:
            parts.append("# docid = d" + str(rng.integers(100)))
        sep = " " if rng.random() < 0.8 else "\t"
        lines.append(sep.join(parts))
        if rng.random() < 0.1:
            lines.append("# comment line")
    ending = "\r\n" if rng.random() < 0.2 else "\n"
    return ending.join(lines).encode()


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("missing", ["zero", "nan"])
def test_kernel_matches_reference_on_random_files(seed, missing):
    rng = np.random.default_rng(seed)
    data = _random_letor(rng, with_qid=seed % 2 == 0)
    _assert_same_parse(_kernel_impl(data, None, missing), _reference_impl(data, None, missing))


def _assert_same_parse(a, b) -> None:
    """Two parses ``(X, y, qid, comments)`` are equal bit for bit."""
    X1, y1, q1, c1 = a
    X2, y2, q2, c2 = b
    np.testing.assert_array_equal(_bits(X1), _bits(X2))
    np.testing.assert_array_equal(_bits(y1), _bits(y2))
    assert (q1 is None) == (q2 is None)
    if q1 is not None:
        np.testing.assert_array_equal(q1, q2)
    assert c1 == c2


# --- round trip ---

EXACT_VALUES = [
    0.1,
    1e-300,
    6.520804200793011e-08,
    123456789.123456789,
    -0.0,
    5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    float(2**53 + 2),
    1 / 3,
    -2.5,
    0.0,
    1e22,
    1e23,
]


def test_round_trip_is_exact(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, len(EXACT_VALUES))) * 10.0 ** rng.integers(
        -300, 300, size=(20, len(EXACT_VALUES))
    )
    X[0] = EXACT_VALUES
    y = rng.integers(0, 5, size=20).astype(float)
    y[1] = 0.1
    qid = np.repeat([3, 1, 2, 7], 5)
    comments = [f"docid = D{i}" for i in range(20)]
    path = tmp_path / "rt.txt"
    dump_svmlight(path, X, y, qid, comments)
    data = load_svmlight(path, return_comments=True)
    np.testing.assert_array_equal(_bits(data.X), _bits(X))
    np.testing.assert_array_equal(_bits(data.y), _bits(y))
    np.testing.assert_array_equal(data.qid, qid)
    assert parse_docids(data.comments) == [f"D{i}" for i in range(20)]


def test_round_trip_nan_is_skipped_and_restored_with_missing_nan(tmp_path):
    X = np.array([[1.0, np.nan, 0.0], [np.nan, np.nan, 2.0]])
    path = tmp_path / "nan.txt"
    dump_svmlight(path, X, [1, 0])
    text = path.read_text()
    assert "nan" not in text
    assert text.splitlines() == ["1 1:1 3:0", "0 3:2"]
    np.testing.assert_array_equal(load_svmlight(path, missing="nan").X, X)
    np.testing.assert_array_equal(load_svmlight(path).X, np.nan_to_num(X))


def test_dump_zero_based_and_no_qid(tmp_path):
    path = tmp_path / "z.txt"
    dump_svmlight(path, [[0.5, 2.0]], [1.5], zero_based=True)
    assert path.read_text() == "1.5 0:0.5 1:2\n"
    with pytest.raises(LTRInputError, match="1-based"):
        load_svmlight(path)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"X": [1.0, 2.0]}, "2-D"),
        ({"y": [1.0]}, "y has shape"),
        ({"y": [np.nan, 1.0]}, "finite"),
        ({"X": [[np.inf], [1.0]]}, "infinite"),
        ({"qid": [1.5, 2]}, "integers"),
        ({"qid": [1]}, "qid has shape"),
        ({"comments": ["a"]}, "comments has 1"),
        ({"comments": ["a", "b\nc"]}, "line break"),
    ],
)
def test_dump_validates(tmp_path, kwargs, match):
    args = {"X": [[1.0], [2.0]], "y": [1.0, 0.0], "qid": None, "comments": None}
    args.update(kwargs)
    path = tmp_path / "v.txt"
    path.write_text("old\n")
    with pytest.raises(ValueError, match=match):
        dump_svmlight(path, args["X"], args["y"], args["qid"], args["comments"])
    assert path.read_text() == "old\n"


def test_dump_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "a.txt"
    path.write_text("old\n")
    os.chmod(path, 0o640)
    dump_svmlight(path, [[1.0]], [2.0])
    assert path.read_text() == "2 1:1\n"
    assert (path.stat().st_mode & 0o777) == 0o640  # an existing file keeps its mode

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        dump_svmlight(path, [[3.0]], [4.0])
    assert path.read_text() == "2 1:1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]  # no temp left


def test_dump_then_query_file_round_trip(tmp_path):
    path = tmp_path / "rank.train"
    dump_svmlight(path, np.arange(8.0).reshape(4, 2), [0, 1, 0, 1])
    write_query_file(str(path) + ".query", [3, 1])
    np.testing.assert_array_equal(load_svmlight(path).qid, [0, 0, 0, 1])
    np.testing.assert_array_equal(read_query_file(str(path) + ".query"), [3, 1])


# --- the exact float parser ---

_decimal_text = st.builds(
    lambda sign, whole, frac, exp: sign + whole + frac + exp,
    st.sampled_from(["", "+", "-"]),
    st.text("0123456789", min_size=1, max_size=22),
    st.one_of(st.just(""), st.text("0123456789", max_size=22).map(lambda s: "." + s)),
    st.one_of(
        st.just(""),
        st.builds(
            lambda e, sign, n: e + sign + str(n),
            st.sampled_from(["e", "E"]),
            st.sampled_from(["", "+", "-"]),
            st.integers(0, 420),
        ),
    ),
)
_float_text = st.floats(allow_nan=False, allow_infinity=False).flatmap(
    lambda x: st.sampled_from([repr(x), f"{x:.17g}", f"{x:.19g}", f"{x:.15e}", f"{x:.3g}"])
)


def _parse_token(text: str) -> tuple[int, float, int]:
    buf = np.frombuffer(text.encode(), dtype=np.uint8)
    status, value, end = _parse_number(buf, 0, buf.shape[0])
    return int(status), float(value), int(end)


@settings(max_examples=500, deadline=None)
@given(st.one_of(_decimal_text, _float_text))
def test_parse_number_is_bit_identical_to_float(text):
    status, value, end = _parse_token(text)
    expected = float(text)
    assert end == len(text)
    if status == _NUM_SLOW:
        return  # converted by float() itself
    if math.isinf(expected):
        assert status == _NUM_INF
        assert value == expected
    else:
        assert status == _NUM_OK
        assert struct.pack("<d", value) == struct.pack("<d", expected)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_decimal_text, _float_text), min_size=1, max_size=20))
def test_loader_values_equal_float(texts):
    expected = [float(t) for t in texts]
    assume(all(math.isfinite(v) for v in expected))
    line = "1 " + " ".join(f"{j + 1}:{t}" for j, t in enumerate(texts))
    X, _, _, _ = _kernel_impl(line.encode())
    np.testing.assert_array_equal(_bits(X[0]), _bits(np.array(expected)))


def test_parse_number_statuses():
    assert _parse_token("nan")[0] == _NUM_NAN
    assert _parse_token("-NaN")[0] == _NUM_NAN
    assert _parse_token("+Infinity")[:2] == (_NUM_INF, math.inf)
    assert _parse_token("-inf")[:2] == (_NUM_INF, -math.inf)
    assert _parse_token("1e309")[0] == _NUM_INF
    assert _parse_token("1e-400")[:2] == (_NUM_OK, 0.0)
    assert _parse_token("0.1234567890123456789012")[0] == _NUM_SLOW
    assert _parse_token("0.10000000000000000000000")[0] == _NUM_OK  # only zeros dropped
    assert _parse_token("1" + "0" * 400 + "e-400")[:2] == (
        _NUM_OK,
        1.0,
    )  # zeros dropped
    assert _parse_token("1" * 30 + "e-400")[0] == _NUM_SLOW
    for bad in ["", "+", ".", "e5", "1e", "1e+", "--1", "in", "nana"[:2], "x"]:
        assert _parse_token(bad)[0] == _NUM_BAD, bad
    # the parser stops where the number stops; the caller checks what follows
    assert _parse_token("1.5x") == (_NUM_OK, 1.5, 3)
    assert _parse_token("infx")[2] == 3


def test_halfway_and_boundary_decimals():
    # Exact midpoints between neighbouring doubles, and the classic hard cases.
    cases = [
        "9007199254740993",
        "9007199254740995",
        "2.2250738585072011e-308",
        "2.2250738585072012e-308",
        "2.4703282292062327e-324",
        "2.4703282292062328e-324",
        "4.9406564584124654e-324",
        "1.7976931348623157e308",
        "1.7976931348623158e308",
        "7.2057594037927933e16",
        "1e23",
        "8.98846567431158e307",
        "0.30000000000000004",
    ]
    for text in cases:
        status, value, _ = _parse_token(text)
        assert status in (_NUM_OK, _NUM_SLOW)
        if status == _NUM_OK:
            assert struct.pack("<d", value) == struct.pack("<d", float(text)), text
    assert _parse_token("1.7976931348623159e308")[0] == _NUM_INF


# --- fuzzing: random and mutated text ---

_SNIPPETS = [
    *(":", "#", "qid:", "nan", "inf", " ", "\n", "\r\n", "-", "e", "0", "1:", "\t"),
    *(".", "+", "9" * 12, "\ufeff", "\x00", "\xe9"),
]
_VALID = (
    "2 qid:1 1:0.5 2:-1e-3 3:7 # docid = a\n"
    "0 qid:1 1:1.25 3:nan\n"
    "\n# comment\n"
    "1 qid:2 2:3.5e10 1:0 3:0.000001\n"
)


def _mutate(text: str, ops: list[tuple[int, int, int]]) -> str:
    for kind, pos, choice in ops:
        if not text:
            text = _SNIPPETS[choice % len(_SNIPPETS)]
            continue
        p = pos % (len(text) + 1)
        if kind == 0:  # delete
            text = text[:p] + text[p + 1 :]
        elif kind == 1:  # duplicate a character
            text = text[:p] + text[p : p + 1] * 2 + text[p + 1 :]
        elif kind == 2:  # replace a character
            text = text[:p] + _SNIPPETS[choice % len(_SNIPPETS)][:1] + text[p + 1 :]
        else:  # insert a snippet
            text = text[:p] + _SNIPPETS[choice % len(_SNIPPETS)] + text[p:]
    return text


_mutated = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 10_000), st.integers(0, 100)),
    min_size=1,
    max_size=6,
).map(lambda ops: _mutate(_VALID, ops).encode("utf-8"))
_random_text = st.lists(
    st.sampled_from([*"0123456789 .:#eE+-qid\nnaf\t\r", "qid:", "inf"]), max_size=60
).map(lambda parts: "".join(parts).encode())
_fuzz_input = st.one_of(_mutated, _random_text, st.binary(max_size=60))


def _check_consistent(data: bytes, tmp_dir: Path) -> None:
    """Kernel and reference agree (arrays or error line); the public API behaves."""
    kernel_out = ref_out = kernel_err = ref_err = None
    try:
        kernel_out = _kernel_impl(data)
    except LTRInputError as err:
        kernel_err = err
    try:
        ref_out = _reference_impl(data)
    except LTRInputError as err:
        ref_err = err
    assert (kernel_err is None) == (ref_err is None), (str(kernel_err), str(ref_err))
    parquet = data.startswith(b"PAR1")  # named as Parquet, without a line (binary)
    if kernel_err is not None and parquet:
        assert str(kernel_err).startswith("mem.txt: the file is Parquet"), str(kernel_err)
    elif kernel_err is not None:
        assert kernel_err.line == ref_err.line, (str(kernel_err), str(ref_err))
        assert re.match(r"mem\.txt:\d+: ", str(kernel_err))
    else:
        X, y, qid, comments = kernel_out
        np.testing.assert_array_equal(_bits(X), _bits(ref_out[0]))
        np.testing.assert_array_equal(_bits(y), _bits(ref_out[1]))
        assert (qid is None) == (ref_out[2] is None)
        if qid is not None:
            np.testing.assert_array_equal(qid, ref_out[2])
        assert comments == ref_out[3]
    # The public function, through a real file: consistent arrays or LTRInputError.
    path = tmp_dir / "fuzz.txt"
    path.write_bytes(data)
    out = error = None
    try:
        out = load_svmlight(path, return_comments=True)
    except LTRInputError as err:
        error = err
    if error is not None:
        assert error.path == str(path)
        assert (parquet and error.line is None) or error.line >= 1
    else:
        n = out.X.shape[0]
        assert n >= 1
        assert out.y.shape == (n,)
        assert np.isfinite(out.y).all()
        assert out.qid is None or out.qid.shape == (n,)
        assert len(out.comments) == n
        assert not np.isinf(out.X).any()


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(_fuzz_input)
@example(b"\r0")  # a CR with no '#' before it is whitespace (the CR-only check refused it)
@example(b"0#\r\x00")  # a CR in a comment with no record after it: whitespace too
@example(b"1 qid:1 1:0.5 #a\r0 qid:1 1:0.2\r")  # CRs between records: both refuse
@example(b"PAR1")  # Parquet's magic: the file is named as Parquet, with no line
def test_fuzz_never_crashes_and_matches_reference(tmp_path, data):
    _check_consistent(data, tmp_path)


@pytest.mark.slow
@settings(
    max_examples=5000,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(_fuzz_input)
def test_fuzz_long(tmp_path, data):
    _check_consistent(data, tmp_path)


# --- real data (../shared/data, read only) ---

_LETOR_FIRST_LINE = re.compile(rb"^\s*[-+0-9.eE]+\s+(qid:\S+\s+)?\d+:\S+")


def _letor_files() -> list[Path]:
    """Files under the shared data folder whose first data line looks like LETOR."""
    if not DATA_DIR.is_dir():
        return []
    found = []
    for path in sorted(DATA_DIR.rglob("*")):
        if not path.is_file() or path.suffix in {".md", ".json", ".query"}:
            continue
        with path.open("rb") as handle:
            head = handle.read(4096)
        first = next(
            (ln for ln in head.splitlines() if ln.strip() and not ln.startswith(b"#")),
            b"",
        )
        if _LETOR_FIRST_LINE.match(first):
            found.append(path)
    return found


_REAL_FILES = _letor_files()


@pytest.mark.real_data
def test_real_data_folder_has_letor_files():
    if not DATA_DIR.is_dir():
        pytest.skip(f"{DATA_DIR} is absent")
    names = {p.name for p in _REAL_FILES}
    assert {"train.txt", "rank.train", "trec_news_2018.train"} <= names


@pytest.mark.real_data
@pytest.mark.parametrize(
    "path",
    _REAL_FILES or [pytest.param(None, marks=pytest.mark.skip(reason="no data"))],
    ids=lambda p: str(p.relative_to(DATA_DIR)) if p else "none",
)
def test_real_file_equals_sklearn(path):
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    X_ref, y_ref, qid_ref = sklearn_datasets.load_svmlight_file(str(path), query_id=True)
    data = load_svmlight(path)
    X_dense = X_ref.toarray()
    assert data.X.shape == X_dense.shape
    np.testing.assert_array_equal(_bits(data.X), _bits(X_dense))
    np.testing.assert_array_equal(_bits(data.y), _bits(y_ref))
    sidecar = Path(str(path) + ".query")
    if sidecar.exists():  # LightGBM example: no qid:, queries from the .query file
        sizes = np.loadtxt(sidecar, dtype=np.int64)
        np.testing.assert_array_equal(data.qid, np.repeat(np.arange(sizes.size), sizes))
    else:
        np.testing.assert_array_equal(data.qid, qid_ref)
    if path.stat().st_size < 1_000_000:  # the pure-Python reference is slow
        X2, _, _, _ = _reference_impl(path.read_bytes())
        np.testing.assert_array_equal(_bits(data.X), _bits(X2))


@pytest.mark.real_data
def test_real_docids_and_sparse_missing():
    mq = DATA_DIR / "MQ2008" / "Fold1" / "vali.txt"
    trec = DATA_DIR / "trec_news" / "trec_news_2018.train"
    if not (mq.exists() and trec.exists()):
        pytest.skip(f"{DATA_DIR} is absent")
    data = load_svmlight(mq, return_comments=True)
    docids = parse_docids(data.comments)
    assert all(d is not None and d.startswith("GX") for d in docids)
    zero = load_svmlight(trec)
    nan = load_svmlight(trec, missing="nan")
    absent = np.isnan(nan.X)
    assert absent.any()  # trec_news lines leave out feature 2 now and then
    np.testing.assert_array_equal(zero.X[absent], 0.0)
    np.testing.assert_array_equal(zero.X[~absent], nan.X[~absent])


@pytest.mark.parametrize(
    "qid",
    [
        np.array([2**63 + 5, 1], dtype=np.uint64),
        np.array([2**64 - 1, 1], dtype=np.uint64),
        [1e19, 1.0],
        [2.0**63, 1.0],
        [-(2.0**63), 1.0],
        np.array([np.iinfo(np.int64).min, 1]),
    ],
)
def test_dump_refuses_qids_it_cannot_write_back(tmp_path, qid):
    """qids beyond int64 were cast silently (uint64 2**63 + 5 written as
    qid:-9223372036854775803, floats >= 2**63 as qid:-9223372036854775808, which the
    reader refuses): a file that read back as other queries, or not at all."""
    path = tmp_path / "q.txt"
    with pytest.raises(ValueError, match=r"qid\[0\]=.* is outside"):
        dump_svmlight(path, [[1.0], [2.0]], [1.0, 0.0], qid)
    assert not path.exists()


def test_dump_writes_the_widest_qids_the_reader_reads(tmp_path):
    path = tmp_path / "q.txt"
    top = 2**63 - 1
    for qid in (np.array([top, 1], dtype=np.uint64), [top, -top], [2.0**62, -(2.0**62)]):
        dump_svmlight(path, [[1.0], [2.0]], [1.0, 0.0], qid)
        assert load_svmlight(path).qid.tolist() == [int(q) for q in qid]


_SKLEARN_HEADER = (
    "# Generated by dump_svmlight_file from scikit-learn 1.9.1\n"
    "# Column indices are {}-based\n#\n# hello\n"
)


def test_a_file_that_says_it_is_zero_based_is_refused(tmp_path):
    """scikit-learn's dump_svmlight_file writes indices from 0 unless zero_based=False;
    where column 0 is 0 on every line (not written, sparse) nothing showed it, and every
    feature was read one column too far left. Its header says so: refused there."""
    path = tmp_path / "sk.txt"
    path.write_text(_SKLEARN_HEADER.format("zero") + "1 qid:1 1:1\n0 qid:1 1:2\n")
    with pytest.raises(LTRInputError) as e:
        load_svmlight(path)
    assert e.value.line == 2
    assert "zero-based" in str(e.value)
    assert "zero_based=False" in str(e.value)
    # the same file written one-based reads as before
    path.write_text(_SKLEARN_HEADER.format("one") + "1 qid:1 2:1\n0 qid:1 2:2\n")
    np.testing.assert_array_equal(load_svmlight(path).X, [[0.0, 1.0], [0.0, 2.0]])
    # only the header counts: such a comment after the first data line is a comment
    path.write_text("1 qid:1 1:1\n# Column indices are zero-based\n")
    assert load_svmlight(path).X.tolist() == [[1.0]]


def test_feature_index_zero_names_scikit_learns_option(tmp_path):
    path = tmp_path / "z.txt"
    path.write_text("1 qid:1 0:1 2:3\n")
    with pytest.raises(LTRInputError, match=r"z.txt:1: .*1-based.*zero_based=False"):
        load_svmlight(path)

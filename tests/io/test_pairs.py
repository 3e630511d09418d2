"""Preference-pair files: mapping to rows, and every documented error names file:line."""

import numpy as np
import pytest

from ltrboost.dataset import LTRInputError
from ltrboost.io.pairs import pairs_for_dataset, read_pairs_file

QID = np.array([7, 7, 7, 9, 9])
DOCIDS = ["a", "b", "c", "a", "d"]


def _write(tmp_path, text):
    p = tmp_path / "pairs.txt"
    p.write_text(text)
    return p


def test_pairs_map_to_rows_with_weights(tmp_path):
    p = _write(tmp_path, "# comment\n7 a b\n\n9 d a 2.5\n7 c a\n")
    pref, oth, w = read_pairs_file(p, QID, DOCIDS)
    np.testing.assert_array_equal(pref, [0, 4, 2])
    np.testing.assert_array_equal(oth, [1, 3, 0])
    np.testing.assert_array_equal(w, [1.0, 2.5, 1.0])


def test_pairs_follow_the_dataset_grouping():
    order = np.array([0, 2, 1, 3])  # X = X_file[order]
    pp = pairs_for_dataset(np.array([1]), np.array([2]), None, order)
    assert (pp.preferred[0], pp.other[0]) == (2, 1)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("7 a\n", 1, "fields"),
        ("7 a b c d e\n", 1, "fields"),
        ("7 a b -1\n", 1, "a number >= 0"),
        ("7 a b nan\n", 1, "a number >= 0"),
        ("7 a b x\n", 1, "a number >= 0"),
        ("\n8 a b\n", 2, "unknown query"),
        ("7 a zz\n", 1, "'zz' is not a document of query '7'"),
        ("7 a d\n", 1, "'d' is not a document of query '7'"),
        ("7 a a\n", 1, "itself"),
        ("7 a b\n7 c b\n7 b a\n", 3, "contradicts line 1"),
    ],
)
def test_pair_file_errors_name_file_and_line(tmp_path, text, line, fragment):
    p = _write(tmp_path, text)
    with pytest.raises(LTRInputError) as e:
        read_pairs_file(p, QID, DOCIDS)
    assert e.value.path == str(p)
    assert e.value.line == line
    assert fragment in str(e.value)
    assert str(e.value).startswith(f"{p}:{line}: ")


def test_repeated_pair_is_allowed(tmp_path):
    p = _write(tmp_path, "7 a b\n7 a b 3\n")
    pref, _, w = read_pairs_file(p, QID, DOCIDS)
    assert pref.shape[0] == 2
    assert w.sum() == 4.0


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(LTRInputError, match="cannot read"):
        read_pairs_file(tmp_path / "nope.txt", QID, DOCIDS)


def test_integer_qids_match_however_they_are_written(tmp_path):
    """The LETOR reader reads qid:007 and qid:+7 as 7; a pairs file may write the query
    that way too (it was an 'unknown query'). String qids are compared as written."""
    p = _write(tmp_path, "007 a b\n+9 d a\n")
    pref, oth, _ = read_pairs_file(p, QID, DOCIDS)
    np.testing.assert_array_equal(pref, [0, 4])
    np.testing.assert_array_equal(oth, [1, 3])
    p = _write(tmp_path, "007 a b\n")
    with pytest.raises(LTRInputError, match="unknown query '007'"):
        read_pairs_file(p, np.array(["7", "7", "7", "9", "9"], dtype=object), DOCIDS)


def test_a_docid_that_is_not_unique_in_its_query_is_refused_when_a_pair_names_it(tmp_path):
    """Two rows of query 7 carry docid 'a': a pair naming 'a' was silently mapped to
    the first of them."""
    docids = ["a", "b", "a", "a", "d"]
    p = _write(tmp_path, "9 a d\n7 a b\n")  # 'a' is unique in query 9, not in 7
    with pytest.raises(LTRInputError) as e:
        read_pairs_file(p, QID, docids)
    assert e.value.line == 2
    assert "document 'a' is not unique in query '7' (data rows 1 and 3" in str(e.value)


@pytest.mark.parametrize("sep", ["\f", "\v", "\x1c", "\x85", "\u2028"])
def test_line_numbers_count_line_feeds_only(tmp_path, sep):
    """str.splitlines() also broke lines at a form feed, VT, \\x1c-\\x1e, NEL, U+2028...:
    every later error named a line too far (the LETOR reader counts LF only)."""
    p = _write(tmp_path, f"{sep}\n7 a b\n7 b a\n")
    with pytest.raises(LTRInputError) as e:
        read_pairs_file(p, QID, DOCIDS)
    assert e.value.line == 3
    assert "contradicts line 2" in str(e.value)


def test_cr_line_ends_still_end_lines(tmp_path):
    """CRLF and CR-only line ends (text-mode newlines) end a line, as before."""
    for nl in ("\r\n", "\r"):
        p = tmp_path / "pairs.txt"
        p.write_bytes(f"7 a b{nl}{nl}7 b a{nl}".encode())
        with pytest.raises(LTRInputError) as e:
            read_pairs_file(p, QID, DOCIDS)
        assert (e.value.line, "contradicts line 1" in str(e.value)) == (3, True)


def test_a_qid_beyond_int_conversion_limits_is_an_unknown_query(tmp_path):
    """A 5000-digit qid made int() raise Python's 'Exceeds the limit (4300 digits)'
    ValueError: one line without the file or its line."""
    p = _write(tmp_path, "1" * 5000 + " a b\n")
    with pytest.raises(LTRInputError) as e:
        read_pairs_file(p, QID, DOCIDS)
    assert e.value.line == 1
    assert "unknown query" in str(e.value)


def test_non_utf8_pairs_file_names_the_line(tmp_path):
    """'not a UTF-8 text file' named no line; every other input error names one."""
    p = tmp_path / "pairs.txt"
    p.write_bytes(b"7 a b\n\n9 d \xe9\n")
    with pytest.raises(LTRInputError) as e:
        read_pairs_file(p, QID, DOCIDS)
    assert e.value.line == 3
    assert "not UTF-8" in str(e.value)


def test_bom_is_skipped_and_a_later_bad_byte_is_named(tmp_path):
    p = tmp_path / "pairs.txt"
    p.write_bytes(b"\xef\xbb\xbf7 a b\n9 \xe9 a\n")
    with pytest.raises(LTRInputError, match=r"pairs.txt:2: not UTF-8 text \(byte 0xe9\)"):
        read_pairs_file(p, QID, DOCIDS)
    p.write_bytes(b"\xef\xbb\xbf7 a b\n")
    assert read_pairs_file(p, QID, DOCIDS)[0].tolist() == [0]
    p.write_bytes(b"7 a b\r9 \xe9 a\r")  # CR-only line ends count as they do above
    with pytest.raises(LTRInputError, match=r"pairs.txt:2: not UTF-8"):
        read_pairs_file(p, QID, DOCIDS)

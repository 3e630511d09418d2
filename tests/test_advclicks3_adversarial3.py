"""Click logs and Unbiased LambdaMART, third adversarial pass: what ``write_click_log``
writes is read back (or refused before a byte is written), ``clicks simulate`` refuses a
log without entries, ``min_count`` is an integer, and positions that Unbiased
LambdaMART cannot use are said so."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ltrboost.clicks import ClickLog, mine_preferences, read_click_log, simulate, write_click_log
from test_cli import assert_one_line_error as one_line_error
from test_cli import run


def _log(qid, docid, position, clicked, impression) -> ClickLog:
    obj = np.empty(len(qid), dtype=object)
    obj[:] = qid
    doc = np.empty(len(docid), dtype=object)
    doc[:] = docid
    return ClickLog(obj, doc, np.asarray(position), np.asarray(clicked), np.asarray(impression))


@pytest.mark.parametrize(
    ("log", "needle"),
    [
        (simulate([0, 1], [0, 2], n_sessions=0, random_state=0), "no entries"),
        (_log(["1", "1"], ["a", "b"], [1, 2], [2, 0], [0, 0]), "entry 0: clicked 2 must be 0 or 1"),
        (_log(["1", "1"], ["a", "b"], [1, 0], [1, 0], [0, 0]), "entry 1: position 0 must be"),
        (_log(["1", "1"], ["a", "b"], [1, 2.5], [1, 0], [0, 0]), "entry 1: position 2.5 must be"),
        (
            _log(["1", "1", "1"], ["a", "b", "c"], [1, 2, 1], [1, 0, 0], [0, 0, 0]),
            "entry 2: position 1 shown twice in impression 0 (also entry 0)",
        ),
        (
            _log(["1", "1", "1"], ["a", "b", "a"], [1, 2, 3], [1, 0, 0], [0, 0, 0]),
            "entry 2: document 'a' shown twice in impression 0 (also entry 0)",
        ),
        (
            _log(["1", "1", "2"], ["a", "b", "c"], [1, 2, 3], [1, 0, 0], [0, 0, 0]),
            "entry 2: impression 0 is also for query '1' (entry 1), not '2'",
        ),
        (_log(["1", "1"], ["a"], [1, 2], [1, 0], [0, 0]), "log.docid has shape (1,)"),
    ],
)
def test_write_click_log_refuses_what_its_reader_refuses(tmp_path, log, needle):
    """write_click_log wrote these, atomically and without a word, and read_click_log
    then refused the file (an empty log: 'no entries'; clicked 2, position 0 or a
    repeat: FILE:LINE errors; a docid column too short: zip()'s own message)."""
    path = tmp_path / "log.tsv"
    with pytest.raises(ValueError, match=re.escape(needle)):
        write_click_log(path, log)
    assert not path.exists()


def test_write_click_log_writes_bool_clicks_and_float_positions_as_integers(tmp_path):
    """clicked=True and position=2.0 were written as 'True' and '2.0', which the reader
    refused ('clicked must be 0 or 1', 'position is not an integer')."""
    log = _log(["007", "7"], ["a", "b"], np.array([1.0, 2.0]), np.array([True, False]), [0, 0])
    path = tmp_path / "log.tsv"
    write_click_log(path, log)
    back = read_click_log(path)
    assert back.qid.tolist() == ["7", "7"]  # an integer qid is read as the data's qid:
    assert back.position.tolist() == [1, 2]
    assert back.clicked.tolist() == [1, 0]
    assert back.impression.tolist() == [0, 0]


def test_cli_simulate_refuses_zero_sessions(tmp_path, capsys):
    """--n-sessions 0 wrote a log of only a header, which clicks mine / dataset refused
    ('no entries')."""
    data = tmp_path / "data.txt"
    data.write_text("1 qid:1 1:0.1 #docid = a\n0 qid:1 1:0.2 #docid = b\n")
    log = tmp_path / "log.tsv"
    rc, _, err = run(["clicks", "simulate", data, "-o", log, "--n-sessions", "0"], capsys)
    one_line_error(rc, err, "--n-sessions 0 must be >= 1")
    assert not log.exists()


@pytest.mark.parametrize("bad", [1.5, True, "2"])
def test_mine_min_count_must_be_an_integer(bad):
    """min_count=1.5 silently kept the pairs of count >= 2, True those of count 1, and
    '2' was a TypeError from a comparison deep in the function."""
    log = simulate([0, 1, 2], [0, 3], n_sessions=50, random_state=0)
    with pytest.raises(ValueError, match=r"min_count=.* must be an integer >= 1"):
        mine_preferences(log, min_count=bad)
    assert len(mine_preferences(log, min_count=np.int64(1))) > 0

"""Click logs and Unbiased LambdaMART, third adversarial pass: what ``write_click_log``
writes is read back (or refused before a byte is written), ``clicks simulate`` refuses a
log without entries, ``min_count`` is an integer, and positions that Unbiased
LambdaMART cannot use are said so."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from ltrboost.booster import PositionIgnoredWarning
from ltrboost.clicks import ClickLog, mine_preferences, read_click_log, simulate, write_click_log
from ltrboost.sklearn import Ranker
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


def _clicks(first_position=1, n_queries=20, n_docs=8):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n_queries * n_docs, 3))
    pos = np.tile(np.arange(first_position, first_position + n_docs), n_queries)
    y = (rng.random(pos.size) < 1.0 / (pos - first_position + 1)).astype(float)
    return X, y, np.repeat(np.arange(n_queries), n_docs), pos


def test_unbiased_without_a_row_at_position_one_warns():
    """Positions 11..18 (the second page of results, or positions counted from 10):
    the biases are ratios to position 1's losses, so they stayed 1 and the model was
    plain LambdaMART's, without a word."""
    X, y, qid, pos = _clicks(first_position=11)
    with pytest.warns(PositionIgnoredWarning, match="no training row was shown at position 1"):
        m = Ranker(n_estimators=3, unbiased=True).fit(X, y, qid=qid, position=pos)
    assert np.all(m.position_bias_["t_plus"] == 1.0)
    X, y, qid, pos = _clicks(first_position=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PositionIgnoredWarning)
        Ranker(n_estimators=3, unbiased=True).fit(X, y, qid=qid, position=pos)
        # one tracked position: every row shares position 1's bias, the user's choice
        Ranker(n_estimators=3, unbiased=True, max_positions=1).fit(X, y, qid=qid, position=pos + 1)


def test_unbiased_with_another_objective_is_one_error_not_an_ignored_warning_first():
    """unbiased=True with objective='ranknet' warned 'these parameters are ignored' and
    then raised that the objective does not debias clicks: both cannot be true."""
    X, y, qid, pos = _clicks()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="does not debias clicks"):
            Ranker(n_estimators=2, unbiased=True, objective="ranknet").fit(
                X, y, qid=qid, position=pos
            )
    assert not [r for r in rec if "ignored" in str(r.message)], [str(r.message) for r in rec]


@pytest.mark.parametrize("max_positions", [8, None])
def test_resuming_with_another_max_positions_names_the_models(max_positions):
    """Resuming an unbiased model of max_positions=6 with 8 (or the default 32) said
    'position bias must hold max_positions=8 values each': neither the model's 6 nor
    the flag to give."""
    import ltrboost
    from ltrboost.dataset import make_dataset

    X, y, qid, pos = _clicks()
    p = dict(n_estimators=2, unbiased=True, max_positions=6)
    first = ltrboost.train(p, make_dataset(X, y, qid=qid, position=pos))
    p = dict(p, n_estimators=4, max_positions=max_positions)
    with pytest.raises(ValueError, match=re.escape("resume with the model's max_positions (6")):
        ltrboost.train(p, make_dataset(X, y, qid=qid, position=pos), init_model=first)


@pytest.mark.parametrize(
    ("qids", "needle"), [([1, 1], "qids[1]='1'"), (["7", "007"], "qids[1]='007'")]
)
def test_simulate_refuses_two_queries_with_one_id(qids, needle):
    """qids=[1, 1] (or '7' and '007', which the log's reader reads as one query) gave
    two queries one id: their documents (default ids 0, 1, ...) were mined as one
    query's, netting pairs of different queries."""
    with pytest.raises(ValueError, match=re.escape(needle) + ".*names the same query"):
        simulate([2, 0, 1, 0, 1, 2], [0, 3, 6], n_sessions=10, random_state=0, qids=qids)

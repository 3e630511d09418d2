"""LightGBM-style sidecars (FILE.query, FILE.position) that are there but not usable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ltrboost.dataset import LTRInputError
from ltrboost.io.letor import load_svmlight
from ltrboost.io.queryfile import read_position_file
from test_cli import assert_one_line_error, run

NO_QID = "1 1:0.5\n0 1:0.25\n1 1:0.75\n"
WITH_QID = "1 qid:1 1:0.5\n0 qid:1 1:0.25\n1 qid:2 1:0.75\n"


def test_a_query_sidecar_that_is_a_folder_is_named_not_ignored(tmp_path, capsys):
    data = tmp_path / "d.txt"
    data.write_text(NO_QID)
    (tmp_path / "d.txt.query").mkdir()
    with pytest.raises(LTRInputError, match="cannot read the query file") as err:
        load_svmlight(data)
    assert str(err.value).startswith(f"{data}.query")
    rc, _, err = run(["train", data, "-q", "-o", tmp_path / "m.json"], capsys)
    assert_one_line_error(rc, err, f"{data}.query: cannot read the query file")


def test_a_dangling_query_sidecar_link_is_named(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text(NO_QID)
    os.symlink(tmp_path / "gone", tmp_path / "d.txt.query")
    with pytest.raises(LTRInputError, match="cannot read the query file"):
        load_svmlight(data)


def test_a_query_sidecar_beside_a_file_with_qid_warns_that_qid_wins(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text(WITH_QID)
    (tmp_path / "d.txt.query").write_text("1\n2\n")
    with pytest.warns(UserWarning, match=r"d\.txt\.query is not read: .*qid:"):
        got = load_svmlight(data)
    assert got.qid.tolist() == [1, 1, 2]  # qid: on the lines wins


def test_a_query_sidecar_named_after_the_stem_is_pointed_at(tmp_path, capsys):
    data = tmp_path / "d.txt"
    data.write_text(NO_QID)
    (tmp_path / "d.query").write_text("2\n1\n")
    rc, _, err = run(["train", data, "-q", "-o", tmp_path / "m.json"], capsys)
    assert_one_line_error(rc, err, "no .query file beside it", "d.query", "d.txt.query")


def test_too_many_positions_names_the_first_extra_line(tmp_path):
    path = tmp_path / "c.position"
    path.write_text("1\n2\n\n3\n4\n")
    with pytest.raises(LTRInputError) as err:
        read_position_file(path, n_rows=2)
    assert str(err.value).startswith(f"{path}:4:")


def test_too_few_positions_names_the_last_line(tmp_path):
    path = tmp_path / "c.position"
    path.write_text("1\n\n2\n\n")
    with pytest.raises(LTRInputError) as err:
        read_position_file(path, n_rows=3)
    assert str(err.value).startswith(f"{path}:3:")
    assert "2 positions for 3 data rows" in str(err.value)


def test_an_empty_position_file_names_line_1(tmp_path):
    path = Path(tmp_path / "c.position")
    path.write_text("")
    with pytest.raises(LTRInputError) as err:
        read_position_file(path, n_rows=3)
    assert str(err.value).startswith(f"{path}:1:")

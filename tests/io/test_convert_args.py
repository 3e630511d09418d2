"""``letor_to_parquet(rows_per_file=)`` is checked as given (``int()`` took 2.5 as 2
silently, and the message quoted the CLI flag); the CLI names its own flags, and an
input given as convert's OUT is named ``OUT`` (it said ``--output``, a flag convert does
not have).  Found by the Parquet pass."""

from __future__ import annotations

import pytest

pytest.importorskip("pyarrow")

from ltrboost.cli import main
from ltrboost.io.parquet import letor_to_parquet
from test_cli import assert_one_line_error, run


@pytest.fixture
def letor(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n2 qid:2 1:0.7\n")
    return p


@pytest.mark.parametrize("value", [2.5, True, "3", 0, -1])
def test_rows_per_file_is_checked_as_given(letor, tmp_path, value):
    with pytest.raises(ValueError, match=r"^rows_per_file=.* must be an integer >= 1"):
        letor_to_parquet(letor, tmp_path / "out", rows_per_file=value)
    assert not (tmp_path / "out").exists()


def test_cli_names_its_flag_and_out(letor, tmp_path, capsys):
    rc, _, err = run(["convert", letor, tmp_path / "o", "--rows-per-file", "0"], capsys)
    assert_one_line_error(rc, err, "--rows-per-file=0 must be >= 1")
    rc, _, err = run(["convert", letor, letor], capsys)
    assert_one_line_error(rc, err, "OUT names an input of this command")
    assert main(["convert", str(letor), str(tmp_path / "ok"), "--rows-per-file", "1"]) == 0

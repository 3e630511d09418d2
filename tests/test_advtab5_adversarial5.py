"""Tabular inputs other than LETOR text, a fifth adversarial pass: Parquet written by
other tools (pandas, pyarrow datasets, Spark) given to the CLI, and DataFrames whose
query-id column is spelled differently.  Each problem found is one test here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ltrboost.cli import main
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

FAST = ["-q", "--n-estimators", "2", "--min-samples-leaf", "5", "--max-leaf-nodes", "4"]


def _table():
    rng = np.random.default_rng(0)
    return pa.table(
        {
            "qid": np.repeat(np.arange(4), 5),
            "label": rng.integers(0, 3, 20).astype(float),
            "f1": rng.random(20),
        }
    )


def _hive(root: Path) -> None:
    """pyarrow's (and Spark's, Hive's) partitioned layout: ``qid=0/part-0.parquet``."""
    import pyarrow.dataset as ds

    ds.write_dataset(
        _table(), root, format="parquet", partitioning=["qid"], partitioning_flavor="hive"
    )


def _unsuffixed(root: Path) -> None:
    """Parquet files whose names do not end in ``.parquet`` (``part-0``, ``a.pq``)."""
    root.mkdir()
    pq.write_table(_table(), root / "part-0")
    pq.write_table(_table(), root / "a.pq")


def _upper(root: Path) -> None:
    root.mkdir()
    pq.write_table(_table(), root / "PART-0.PARQUET")


@pytest.mark.parametrize("layout", [_hive, _unsuffixed, _upper])
@pytest.mark.parametrize("command", ["train", "eval", "predict"])
def test_a_foreign_parquet_folder_says_what_it_is(layout, command, tmp_path, capsys):
    """A Parquet folder that is not convert's layout said only 'Is a directory'."""
    folder = tmp_path / "data"
    layout(folder)
    if command == "train":
        argv = ["train", folder, "-o", tmp_path / "m.json", *FAST]
    else:
        model = tmp_path / "m.json"
        text = tmp_path / "t.txt"
        text.write_text("".join(f"{i % 3} qid:{i // 5} 1:{i}\n" for i in range(20)))
        assert main(["train", str(text), "-o", str(model), *FAST]) == 0
        capsys.readouterr()
        argv = [command, model, folder, "-q"]
        if command == "predict":
            argv += ["-o", tmp_path / "p.txt"]
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, f"{folder}: is a folder of Parquet files")


def test_a_plain_folder_is_still_a_directory(tmp_path, capsys):
    folder = tmp_path / "data"
    (folder / "k=1").mkdir(parents=True)
    (folder / "k=1" / "notes.txt").write_text("1 qid:1 1:1\n")
    (folder / "README").write_text("not parquet")
    rc, _, err = run(["train", folder, "-o", tmp_path / "m.json", *FAST], capsys)
    one_line_error(rc, err, f"{folder}: Is a directory")


def test_a_parquet_file_has_no_line_number(tmp_path, capsys):
    """A Parquet file with no rows was 'zero.parquet:10: the file is Parquet': a line
    number in a binary file points nowhere."""
    path = tmp_path / "zero.parquet"
    pq.write_table(_table().slice(0, 0), path)
    rc, _, err = run(["train", path, "-o", tmp_path / "m.json", *FAST], capsys)
    one_line_error(rc, err, f"{path}: the file is Parquet")


@pytest.mark.parametrize("name", ["QID", "Qid", " qid"])
def test_fit_without_queries_points_at_a_qid_column_spelled_otherwise(name):
    """A CSV or Parquet whose header says 'QID' read into a DataFrame: the error named
    only the three ways to give queries, not the column that was almost the 'qid' one."""
    pytest.importorskip("pandas")  # to_pandas
    from ltrboost import Ranker
    from ltrboost.dataset import LTRInputError

    df = _table().to_pandas().rename(columns={"qid": name})
    with pytest.raises(LTRInputError, match=rf"has {name!r}.*names are matched exactly"):
        Ranker(n_estimators=2).fit(df.drop(columns="label"), df["label"])

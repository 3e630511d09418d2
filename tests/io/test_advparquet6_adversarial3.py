"""``ltrboost convert`` (LETOR -> query-partitioned Parquet) on cases a third adversarial
pass found mishandled: the folder must read back, with pandas as with Dask, as the
text file's queries whole and in order."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost.io import parquet as lparquet
from ltrboost.io.letor import load_svmlight

pytest.importorskip("pyarrow")


def test_part_names_sort_as_text_in_file_order_beyond_100000_files():
    """part.{k:05d}: from 100,000 files on, 'part.100000' sorted before 'part.99999', and
    pandas.read_parquet / pyarrow (which sort the names as text) read the queries out of
    the file's order."""
    names = lparquet.part_names(100_001)
    assert sorted(names) == names
    assert names[0] == "part.000000.parquet"
    assert lparquet.part_names(3) == [f"part.0000{k}.parquet" for k in range(3)]


def test_a_file_is_closed_before_pyarrows_largest_row_group():
    """pyarrow writes at most 64 Mi rows per row group whatever row_group_size asks, so a
    larger --rows-per-file gave files of several row groups, which dask's read_parquet
    may split into partitions that cut a query."""
    offsets = np.array([0, 3, 6, 9, 20, 22, 30])
    assert lparquet.query_file_bounds(offsets, 100, max_rows=7) == [
        (0, 6),
        (6, 9),
        (9, 20),  # one query longer than max_rows: a file of its own
        (20, 22),
        (22, 30),
    ]
    assert lparquet.query_file_bounds(offsets, 4, max_rows=7) == [
        (0, 6),
        (6, 9),
        (9, 20),
        (20, 22),
        (22, 30),
    ]
    assert lparquet.query_file_bounds(offsets, 100) == [(0, 30)]
    try:
        from pyarrow import _parquet
    except ImportError:  # pragma: no cover
        return
    cap = getattr(_parquet, "_MAX_ROW_GROUP_SIZE", None)
    if cap is not None:
        assert lparquet.MAX_ROWS_PER_FILE <= cap


def test_convert_keeps_files_within_the_row_group_cap(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    monkeypatch.setattr(lparquet, "MAX_ROWS_PER_FILE", 5)
    text = "".join(f"{k % 3} qid:{k // 3} 1:{k}\n" for k in range(30))  # queries of 3
    (tmp_path / "t.txt").write_text(text)
    files = lparquet.letor_to_parquet(tmp_path / "t.txt", tmp_path / "o", rows_per_file=10**6)
    assert [pq.ParquetFile(f).metadata.num_rows for f in files] == [3] * 10


@pytest.mark.parametrize("missing", ["zero", "nan"])
@pytest.mark.parametrize("rows_per_file", [1, 3, 7, 10**9])
def test_pandas_and_dask_read_back_load_svmlights_arrays_bit_for_bit(
    tmp_path, missing, rows_per_file
):
    import pandas as pd

    dd = pytest.importorskip("dask.dataframe")
    text = (
        "1 qid:30 1:0.1 4:-0.0 # doc a\n"
        "0 qid:7 2:1e-300 3:NULL\n"
        "2 qid:30 3:nan\n"
        "0 qid:-5 4:5e300\n"
        "1 qid:7 1:0.30000000000000004\n"
        "3 qid:30 2:-1\n"
        "0 qid:9223372036854775807\n"
    )
    (tmp_path / "t.txt").write_text(text)
    out = tmp_path / "o"
    lparquet.letor_to_parquet(
        tmp_path / "t.txt", out, rows_per_file=rows_per_file, missing=missing, na_values="NULL"
    )
    d = load_svmlight(tmp_path / "t.txt", missing=missing, na_values="NULL")
    order = np.array([0, 2, 5, 1, 4, 3, 6])  # queries grouped, in order of first line
    for frame in (pd.read_parquet(out), dd.read_parquet(out).compute()):
        assert list(frame.columns) == ["qid", "label", "f1", "f2", "f3", "f4"]
        assert frame["qid"].to_numpy().tolist() == d.qid[order].tolist()
        assert frame["label"].to_numpy().tobytes() == d.y[order].tobytes()
        assert frame.iloc[:, 2:].to_numpy().tobytes() == d.X[order].tobytes()


def test_a_mount_point_as_out_is_refused_before_the_parse(tmp_path, monkeypatch, capsys):
    """An empty volume given as OUT (``docker run -v host:/out ... convert t.txt /out``):
    the whole file was parsed and written beside it, then the rename onto the mount point
    failed with 'Device or resource busy; it changed during the conversion (another
    run?)', a wrong guess, after all the work."""
    from ltrboost.cli import main

    (tmp_path / "t.txt").write_text("1 qid:1 1:1\n0 qid:2 2:1\n")
    out = tmp_path / "vol"
    out.mkdir()
    real = lparquet.os.path.ismount
    monkeypatch.setattr(lparquet.os.path, "ismount", lambda p: p == str(out) or real(p))
    monkeypatch.setattr(lparquet, "query_file_bounds", None)  # never reached
    assert main(["convert", str(tmp_path / "t.txt"), str(out)]) == 2
    err = capsys.readouterr().err
    assert "vol: is a mount point" in err
    assert "give a new folder inside it" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt", "vol"]
    assert not any(out.iterdir())

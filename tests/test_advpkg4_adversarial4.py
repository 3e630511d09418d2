"""Packaging and installation as a newcomer meets them (fourth adversarial pass): what a
plain ``pip install ltrboost`` (no extras) says when a feature needs an extra, and that
the wheel's file selection keeps the data files the code opens and drops kernel caches.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import ltrboost
from ltrboost import _warmup
from test_cli import assert_one_line_error, run

ROOT = Path(ltrboost.__file__).resolve().parents[2]


@pytest.fixture
def no_module(monkeypatch):
    """``no_module("pandas")``: importing it (and its submodules) fails as if it were
    not installed; ``ltrboost.dask`` is imported afresh."""

    def block(*names: str) -> None:
        for name in names:
            for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
                monkeypatch.delitem(sys.modules, key)
            monkeypatch.setitem(sys.modules, name, None)
        if "ltrboost.dask" in sys.modules:
            monkeypatch.delitem(sys.modules, "ltrboost.dask")

    return block


# ------------------------------------------------------------- features behind extras
def test_convert_without_pyarrow_is_a_one_line_error(no_module, tmp_path, capsys):
    """It was a traceback and exit status 1 (README: never a traceback)."""
    data = tmp_path / "d.txt"
    data.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.25\n")
    no_module("pyarrow")
    rc, _, err = run(["convert", data, tmp_path / "out.parquet"], capsys)
    assert_one_line_error(rc, err, "pyarrow", "pip install 'ltrboost[dask]'")
    assert not (tmp_path / "out.parquet").exists()


def test_dask_module_without_its_extra_names_the_extra(no_module):
    """``import ltrboost.dask`` said only "No module named 'pandas'"."""
    no_module("pandas")
    with pytest.raises(ImportError, match=r"pip install 'ltrboost\[dask\]'.*pandas"):
        import ltrboost.dask  # noqa: F401


def test_dask_module_without_dask_names_the_extra(no_module):
    """With pandas but no Dask the import worked and ``DaskRanker.fit`` failed deep
    inside with "No module named 'distributed'"."""
    no_module("dask", "distributed")
    with pytest.raises(ImportError, match=r"pip install 'ltrboost\[dask\]'.*dask"):
        import ltrboost.dask  # noqa: F401


def test_trees_to_dataframe_without_pandas_names_the_extra(no_module):
    from ltrboost import Ranker
    from ltrboost.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=6, docs_per_query=5, n_features=3, random_state=0)
    model = Ranker(n_estimators=1, max_leaf_nodes=3, min_samples_leaf=2).fit(X, y, qid=qid)
    no_module("pandas")
    with pytest.raises(ImportError, match=r"pip install 'ltrboost\[pandas\]'"):
        model.booster_.trees_to_dataframe()


def test_arrow_input_without_pandas_names_the_extra(no_module):
    """A pyarrow Table / polars DataFrame is read through pandas: without it the error
    was "No module named 'pandas'" from inside ``fit``."""
    from ltrboost.dataset import arrow_as_frame

    class Table:  # what arrow_as_frame reads of a pyarrow Table
        __module__ = "pyarrow.lib"
        column_names = ("a",)

        def to_pandas(self, **kwargs):  # pragma: no cover - never reached
            raise AssertionError

    no_module("pandas")
    with pytest.raises(ImportError, match=r"pyarrow Table.*pip install 'ltrboost\[pandas\]'"):
        arrow_as_frame(Table())


# -------------------------------------------------------------- the wheel's files
def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _ignored(paths: list[str]) -> set[str]:
    """The paths .gitignore matches (hatchling leaves them out of the wheel)."""
    proc = subprocess.run(
        ["git", "-C", str(ROOT), "check-ignore", "--no-index", "--stdin"],
        input="\n".join(paths),
        capture_output=True,
        text=True,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return set(proc.stdout.split())


@pytest.fixture
def checkout():
    if shutil.which("git") is None or not (ROOT / ".gitignore").is_file():
        pytest.skip("needs git and the source checkout's .gitignore")
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("not a source checkout")


def test_wheel_selection_keeps_data_files_and_drops_caches(checkout):
    """hatchling ships every file under the wheel's package folder that .gitignore does
    not match: the kernel manifest the warm-up opens must be one, Numba's cache files
    and bytecode must not (a build from a used checkout would ship them)."""
    packages = _pyproject()["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert packages == ["src/ltrboost"]
    package = ROOT / "src" / "ltrboost"
    manifest = Path(_warmup.MANIFEST).resolve()
    assert manifest.is_file()
    assert manifest.parent == package.resolve()
    data = sorted(
        os.path.relpath(os.path.join(d, f), ROOT)
        for d, dirs, files in os.walk(package)
        for f in files
        if not f.endswith((".py", ".pyc", ".nbi", ".nbc")) and "__pycache__" not in d
    )
    assert "src/ltrboost/_kernels.json" in data
    assert not _ignored(data)
    caches = [
        "src/ltrboost/__pycache__/booster.cpython-311.pyc",
        "src/ltrboost/__pycache__/histogram._build-100.py311.nbi",
        "src/ltrboost/metrics/__pycache__/ndcg._ndcg-1.py311.1.nbc",
    ]
    assert _ignored(caches) == set(caches)

"""Adversarial pass over ``ltrboost generate`` (files LightGBM and XGBoost read as
ranking data, flags at their edges, outputs) and ``ltrboost warmup --clear`` (the
kernel cache removed before ``pip uninstall``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from ltrboost.cli import main
from ltrboost.io.letor import load_svmlight

SPLITS = ("train", "vali", "test")


def _generate(folder: Path, *extra: str) -> None:
    argv = ["generate", str(folder), "--n-queries", "6", "--docs-per-query", "5"]
    assert main([*argv, "--n-features", "4", "--lightgbm", *extra]) == 0


def _sizes(qid: np.ndarray) -> list[int]:
    """Documents per query of contiguous ``qid``, in row order."""
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    return np.diff(np.r_[starts, qid.size]).tolist()


# ------------------------------------------------ LightGBM / XGBoost read the output
def test_generated_data_trains_lightgbm_as_a_ranking_dataset(tmp_path):
    """LightGBM refused every generated file ('Input format error when parsing as
    LibSVM': it reads no ``qid:`` token and takes queries from a ``FILE.query``)."""
    lgb = pytest.importorskip("lightgbm")
    folder = tmp_path / "data"
    _generate(folder)
    for split in SPLITS:
        letor = load_svmlight(folder / f"{split}.txt")
        path = folder / f"{split}.lightgbm.txt"
        data = lgb.Dataset(str(path), params={"verbose": -1}).construct()
        assert data.get_group().tolist() == _sizes(letor.qid)
        np.testing.assert_array_equal(data.get_label(), letor.y)
        # ltrboost reads the copy too (its queries from the same .query sidecar)
        copy = load_svmlight(path)
        np.testing.assert_array_equal(copy.X, letor.X)
        assert _sizes(copy.qid) == _sizes(letor.qid)
    train = lgb.Dataset(str(folder / "train.lightgbm.txt"), params={"verbose": -1})
    params = {"objective": "lambdarank", "min_data_in_leaf": 1, "verbose": -1}
    booster = lgb.train(params, train, num_boost_round=3)
    assert booster.num_trees() == 3


def test_generated_data_trains_xgboost_with_its_groups(tmp_path):
    """XGBoost reads the LETOR file's ``qid:`` (README says how: 1-based indices)."""
    xgb = pytest.importorskip("xgboost")
    folder = tmp_path / "data"
    _generate(folder)
    letor = load_svmlight(folder / "train.txt")
    with warnings.catch_warnings():  # 3.1 deprecated its text reader (a warning)
        warnings.simplefilter("ignore", UserWarning)
        dtrain = xgb.DMatrix(f"{folder / 'train.txt'}?format=libsvm&indexing_mode=1")
    ptr = dtrain.get_uint_info("group_ptr").tolist()
    assert np.diff(ptr).tolist() == _sizes(letor.qid)
    assert dtrain.num_col() == letor.X.shape[1]
    np.testing.assert_array_equal(dtrain.get_label(), letor.y)
    booster = xgb.train({"objective": "rank:ndcg"}, dtrain, num_boost_round=3)
    assert booster.num_boosted_rounds() == 3


# --------------------------------------------------- warmup --clear (pip uninstall)
def _subpath(folder: Path) -> str:
    """Numba's cache sub-folder for the sources in ``folder`` (its
    ``get_suitable_cache_subpath``)."""
    import hashlib

    return f"{folder.name}_{hashlib.sha1(str(folder).encode()).hexdigest()}"


def _fake_entry(folder: Path, stem: str, line: int) -> list[Path]:
    """A kernel's cache files as Numba names them: index and one data file."""
    folder.mkdir(parents=True, exist_ok=True)
    base = f"{stem}._kernel-{line}.py311"
    paths = [folder / f"{base}.nbi", folder / f"{base}.1.nbc"]
    for p in paths:
        p.write_bytes(b"x" * 10)
    return paths


def _run_cli(args: list[str], env: dict[str, str], pythonpath: Path):
    import os
    import subprocess
    import sys

    full = {**os.environ, **env, "PYTHONPATH": str(pythonpath)}
    for name in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME"):
        if name not in env:
            full.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "ltrboost", *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=300,
        check=False,
    )


@pytest.fixture
def package_copy(tmp_path) -> Path:
    """A copy of the package's sources (so that clearing its ``__pycache__`` leaves the
    checkout's compiled kernels alone)."""
    import shutil

    import ltrboost

    src = Path(ltrboost.__file__).parent
    root = tmp_path / "site"
    shutil.copytree(src, root / "ltrboost", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_warmup_clear_removes_the_per_user_kernel_cache(tmp_path, package_copy):
    """`pip uninstall ltrboost` left ~/.cache/ltrboost/numba (a read-only install's
    kernel cache) behind, and nothing said how to remove it."""
    xdg = tmp_path / "xdg"
    pkg = package_copy / "ltrboost"
    ours = xdg / "ltrboost" / "numba"
    files = _fake_entry(ours / _subpath(pkg), "binning", 12)
    files += _fake_entry(ours / _subpath(pkg / "io"), "letor", 40)
    # an older install's (another path) is ltrboost's too: the folder is ltrboost's own
    files += _fake_entry(ours / "ltrboost_0123abcd", "tree", 7)
    # compiled kernels in the package folder (a writable install): .nbi/.nbc only
    files += _fake_entry(pkg / "__pycache__", "binning", 12)
    pyc = pkg / "__pycache__" / "binning.cpython-311.pyc"
    pyc.write_bytes(b"pyc")
    proc = _run_cli(["warmup", "--clear"], {"XDG_CACHE_HOME": str(xdg)}, package_copy)
    assert proc.returncode == 0, proc.stderr
    assert not [p for p in files if p.exists()]
    assert not (xdg / "ltrboost").exists()  # the empty folders too
    assert pyc.exists()  # pip's to remove
    assert "removed 8 kernel cache files" in proc.stderr, proc.stderr
    # nothing left: says so, still status 0
    proc = _run_cli(["warmup", "--clear"], {"XDG_CACHE_HOME": str(xdg)}, package_copy)
    assert proc.returncode == 0, proc.stderr
    assert "no kernel cache files" in proc.stderr, proc.stderr
    assert not (xdg / "ltrboost").exists()


def test_warmup_clear_leaves_the_rest_of_a_numba_cache_dir(tmp_path, package_copy):
    """A user's NUMBA_CACHE_DIR holds other projects' kernels (and anything else):
    only this install's entries go, and the folder itself stays."""
    shared = tmp_path / "numba_cache"
    pkg = package_copy / "ltrboost"
    ours = _fake_entry(shared / _subpath(pkg), "histogram", 88)
    theirs = _fake_entry(shared / "mypkg_ffff", "model", 3)
    # a file in our sub-folder whose name is not one of our modules' entries
    stray = shared / _subpath(pkg) / "notes.txt"
    stray.write_text("keep")
    other_module = _fake_entry(shared / _subpath(pkg), "not_a_module", 3)
    proc = _run_cli(["warmup", "--clear"], {"NUMBA_CACHE_DIR": str(shared)}, package_copy)
    assert proc.returncode == 0, proc.stderr
    assert not [p for p in ours if p.exists()]
    assert all(p.exists() for p in [*theirs, *other_module, stray])
    assert shared.is_dir()


def test_warmup_clear_takes_no_profiles(tmp_path, package_copy, capsys):
    """--clear compiles nothing: a profile beside it is refused, not ignored."""
    rc = main(["warmup", "--clear", "eval"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "--clear" in err
    assert len(err.strip().splitlines()) == 1


# ------------------------------------------------------- generate: flags and outputs
def test_generate_refuses_dash_as_the_folder(tmp_path, capsys, monkeypatch):
    """`generate -` made a folder named '-' (every other output reads '-' as standard
    output, which cannot hold nine files)."""
    monkeypatch.chdir(tmp_path)
    assert main(["generate", "-", "--n-queries", "2", "--docs-per-query", "2"]) == 2
    err = capsys.readouterr().err
    assert "standard output" in err, err
    assert "./-" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "-").exists()
    # a folder really named '-' is still possible
    assert main(["generate", "./-", "--n-queries", "2", "--docs-per-query", "2"]) == 0
    assert (tmp_path / "-" / "train.txt").is_file()


def test_generate_checks_its_folder_before_generating(tmp_path, capsys, monkeypatch):
    """A folder that cannot be made (under a file) was found only once all the data had
    been generated (minutes at the largest sizes)."""
    import ltrboost.datasets

    (tmp_path / "afile").write_text("keep\n")

    def never(*args, **kwargs):
        raise AssertionError("data generated for a folder that cannot be made")

    monkeypatch.setattr(ltrboost.datasets, "make_ranking", never)
    assert main(["generate", str(tmp_path / "afile" / "sub"), "--n-queries", "2"]) == 2
    err = capsys.readouterr().err
    assert "afile" in err, err
    assert len(err.strip().splitlines()) == 1
    assert (tmp_path / "afile").read_text() == "keep\n"


@pytest.mark.parametrize("stage", ["train.txt", "vali.lightgbm.txt", "test.lightgbm.txt.query"])
def test_generate_interrupted_leaves_no_new_folder(tmp_path, capsys, monkeypatch, stage):
    """Ctrl-C while the files were written left the folders made for them (`new/a/b`,
    empty) behind: README says an interrupted command writes nothing new."""
    import ltrboost.io._atomic as atomic

    real = atomic._stage

    def interrupted(path, *rest):
        if str(path).endswith("/" + stage):
            raise KeyboardInterrupt
        return real(path, *rest)

    monkeypatch.setattr(atomic, "_stage", interrupted)
    target = tmp_path / "new" / "a" / "b"
    argv = ["generate", str(target), "--n-queries", "2", "--docs-per-query", "2", "--lightgbm"]
    assert main(argv) == 130
    assert list(tmp_path.iterdir()) == []
    # an existing folder stays, with what it held, and no temporary file
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "notes").write_text("x")
    argv = ["generate", str(tmp_path / "keep" / "sub"), "--n-queries", "2", "--lightgbm"]
    assert main([*argv, "--docs-per-query", "2"]) == 130
    assert [p.name for p in (tmp_path / "keep").iterdir()] == ["notes"]


def test_generate_interrupted_keeps_every_previous_file(tmp_path, capsys, monkeypatch):
    """All nine files or none: Ctrl-C at the last one (a LightGBM sidecar) leaves the
    previous run's nine files byte for byte."""
    import ltrboost.io._atomic as atomic

    folder = tmp_path / "g"
    _generate(folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert len(before) == 9
    real = atomic._stage

    def interrupted(path, *rest):
        if str(path).endswith("test.lightgbm.txt.query"):
            raise KeyboardInterrupt
        return real(path, *rest)

    monkeypatch.setattr(atomic, "_stage", interrupted)
    argv = ["generate", str(folder), "--n-queries", "6", "--docs-per-query", "5"]
    assert main([*argv, "--n-features", "4", "--random-state", "9", "--lightgbm"]) == 130
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_generate_same_seed_same_bytes_for_any_thread_count(tmp_path, monkeypatch):
    """Same seed, same nine files byte for byte, whether the blocks of rows are filled
    on one thread or several; another seed gives other data."""
    import ltrboost.datasets as ds

    monkeypatch.setattr(ds, "_BLOCK_ROWS", 16)  # several blocks for a small dataset
    runs = {}
    for name, threads, seed in (("a", 1, "5"), ("b", 3, "5"), ("c", 1, "6")):
        monkeypatch.setattr(ds, "_MAX_THREADS", threads)
        _generate(tmp_path / name, "--random-state", seed)
        runs[name] = {p.name: p.read_bytes() for p in (tmp_path / name).iterdir()}
    assert runs["a"] == runs["b"]
    assert runs["a"]["train.txt"] != runs["c"]["train.txt"]


def test_generate_smallest_sizes_give_valid_files_for_every_reader(tmp_path):
    """One query of one document with one feature: every file still reads (ltrboost,
    and the .query sidecars sum to the copies' lines)."""
    folder = tmp_path / "tiny"
    argv = ["generate", str(folder), "--n-queries", "1", "--docs-per-query", "1"]
    assert main([*argv, "--n-features", "1", "--lightgbm"]) == 0
    for split in SPLITS:
        letor = load_svmlight(folder / f"{split}.txt")
        copy = load_svmlight(folder / f"{split}.lightgbm.txt")
        assert letor.X.shape == copy.X.shape == (1, 1)
        sizes = (folder / f"{split}.lightgbm.txt.query").read_text().split()
        assert sizes == ["1"]


def test_generate_interrupted_removes_folders_of_a_dotdot_path(tmp_path, monkeypatch):
    """`new/../x` makes `new` as well as `x`: both go when the run is interrupted."""
    import ltrboost.io._atomic as atomic

    def interrupted(path, *rest):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic, "_stage", interrupted)
    monkeypatch.chdir(tmp_path)
    assert main(["generate", "new/../x", "--n-queries", "2", "--docs-per-query", "2"]) == 130
    assert list(tmp_path.iterdir()) == []


def test_without_lightgbm_only_the_three_letor_files_are_written(tmp_path):
    # the LightGBM copies double what generate writes: only on request
    argv = ["generate", str(tmp_path / "d"), "--n-queries", "3", "--docs-per-query", "3"]
    assert main(argv) == 0
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [
        "test.txt",
        "train.txt",
        "vali.txt",
    ]

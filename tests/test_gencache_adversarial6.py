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
    assert main([*argv, "--n-features", "4", *extra]) == 0


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

"""Adversarial pass 3 on in-memory inputs: make_dataset, as_feature_matrix, validation sets."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ltrboost import make_dataset, train
from ltrboost.dataset import LTRInputError

pd = pytest.importorskip("pandas")

FAST = {"n_estimators": 3, "objective": "mart", "min_samples_leaf": 2}


def _two_features(n: int = 120):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=n), rng.normal(size=n)
    y = (a > 0).astype(float) * 2  # only column "a" matters
    qid = np.repeat(np.arange(n // 10), 10)
    return a, b, y, qid


def test_feature_names_of_a_dataframe_take_its_columns_by_name():
    """make_dataset(df with columns b, a, feature_names=["a", "b"]) named column "b"
    "a" by position; the model then took df's columns by name at predict time and
    scored feature "b" as "a": silently wrong predictions on the training frame."""
    a, b, y, qid = _two_features()
    df = pd.DataFrame({"b": b, "a": a})
    ds = make_dataset(df, y, qid=qid, feature_names=["a", "b"])
    assert ds.feature_names == ["a", "b"]
    np.testing.assert_array_equal(ds.X[:, 0], a)
    booster = train(dict(FAST), ds)
    by_position = train(dict(FAST), make_dataset(np.c_[a, b], y, qid=qid))
    np.testing.assert_array_equal(booster.predict(df), by_position.predict(np.c_[a, b]))
    with pytest.raises(LTRInputError, match=r"feature_names given: missing columns \['c'\]"):
        make_dataset(df, y, qid=qid, feature_names=["a", "c"])


def test_a_validation_set_named_in_another_order_is_refused():
    """ltrboost.train scored a validation RankingDataset whose DataFrame had the
    training columns in another order by position: its metrics (and early stopping)
    used the wrong features, silently."""
    a, b, y, qid = _two_features()
    tr = make_dataset(pd.DataFrame({"a": a, "b": b}), y, qid=qid)
    swapped = make_dataset(pd.DataFrame({"b": b, "a": a}), y, qid=qid)
    with pytest.raises(LTRInputError, match="validation set 'v' has feature 0 named 'b'"):
        train(dict(FAST), tr, [("v", swapped)])
    # same names, or no names on one side: by position as before
    same = make_dataset(pd.DataFrame({"a": a, "b": b}), y, qid=qid)
    plain = make_dataset(np.c_[a, b], y, qid=qid)
    booster = train(dict(FAST, eval_metric="ndcg@10"), tr, [("s", same), ("p", plain)])
    assert booster.evals_result["s"] == booster.evals_result["p"]


@pytest.mark.parametrize("dtype", ["datetime64[s]", "timedelta64[s]"])
def test_a_datetime_array_is_refused_as_a_datetime_column_is(dtype):
    """A NumPy datetime64/timedelta64 X was cast to numbers, NaT (a missing date)
    becoming the finite -9.2e18 instead of a missing value; a DataFrame column of the
    same dtype is refused."""
    X = np.array([[1, 2], [3, "NaT"]], dtype=dtype)
    with pytest.raises(
        LTRInputError, match=re.escape(f"X has dtype {dtype}; features must be numeric")
    ):
        make_dataset(X, [0, 1], qid=[0, 0])


def test_an_arrow_null_column_is_a_column_of_missing_values():
    """README: "NaN (or a null) is a missing value", but a pyarrow column of type null
    (what pyarrow and polars infer for a column of Nones) was refused as "has dtype
    null[pyarrow]; features must be numeric", at fit and at predict."""
    pa = pytest.importorskip("pyarrow")
    a, b, y, qid = _two_features()
    table = pa.table({"a": a, "b": pa.nulls(a.shape[0])})
    ds = make_dataset(table, y, qid=qid)
    assert ds.feature_names == ["a", "b"]
    assert np.isnan(ds.X[:, 1]).all()
    booster = train(dict(FAST), ds)
    same = train(dict(FAST), make_dataset(np.c_[a, np.full_like(a, np.nan)], y, qid=qid))
    np.testing.assert_array_equal(booster.predict(table), same.predict(np.c_[a, b * np.nan]))

"""Adversarial pass 5 over feature VALUES along the user's path (advvalues5): what
``DaskRanker.predict`` does with a Dask array whose values ``Ranker.predict`` refuses
(text, complex, dates: parsed or cut silently on the workers), the rows its errors
name, and pandas' ``<NA>`` in an object array (``df.to_numpy()`` of a nullable frame).
Each test marked "failed before" failed on the old code."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.dataset import LTRInputError
from ltrboost.datasets import make_ranking

FAST = dict(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=3, n_threads=1)


def _data(seed=0):
    X, y, qid = make_ranking(n_queries=20, docs_per_query=(5, 12), n_features=4, random_state=seed)[
        :3
    ]
    return X, y, qid


# --- DaskRanker.predict on values Ranker.predict refuses ---------------------------


@pytest.fixture(scope="module")
def dask_model(client):
    da = pytest.importorskip("dask.array")
    from ltrboost.dask import DaskRanker

    X, y, qid = _data()
    chunks = (X.shape[0] // 2, X.shape[0] - X.shape[0] // 2)
    m = DaskRanker(client=client, **FAST).fit(
        da.from_array(X, chunks=(chunks, 4)),
        da.from_array(y, chunks=(chunks,)),
        qid=da.from_array(qid, chunks=(chunks,)),
    )
    return m, X


@pytest.mark.parametrize(
    "convert",
    [
        pytest.param(lambda X: X.astype(str), id="strings"),
        pytest.param(lambda X: X.astype("S32"), id="bytes"),
        pytest.param(lambda X: X + 1j, id="complex"),
        pytest.param(lambda X: X.astype("datetime64[s]"), id="datetime"),
    ],
)
def test_dask_predict_refuses_what_local_predict_refuses(dask_model, convert):
    # failed before: each chunk was np.asarray(chunk, dtype=float64) on its worker, so
    # "1.5" was parsed, the imaginary part dropped (a NumPy ComplexWarning on the
    # worker), a date read as seconds: scores where Ranker.predict gives an error
    da = pytest.importorskip("dask.array")
    m, X = dask_model
    bad = convert(X)
    with pytest.raises(LTRInputError) as local:
        m.to_local().predict(bad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning instead of the error
        with pytest.raises(LTRInputError) as remote:
            m.predict(da.from_array(bad, chunks=(50, 4))).compute()
    assert str(remote.value) == str(local.value)


def test_dask_predict_error_names_the_chunk_and_row(dask_model):
    # failed before: "row 20: feature 0 is inf" for the row 120 of the array, with no
    # chunk named (training names "partition N: row R")
    da = pytest.importorskip("dask.array")
    m, X = dask_model
    bad = X.copy()
    bad[120, 2] = np.inf
    with pytest.raises(LTRInputError) as e:
        m.predict(da.from_array(bad, chunks=(50, 4))).compute()
    assert str(e.value).startswith("partition 2: row 20: feature 2 is inf")
    assert e.value.partition == 2


@pytest.mark.filterwarnings("ignore:X has feature names")
def test_dask_predict_frame_error_names_the_partition(dask_model):
    # failed before: "row 20: ..." only, the row of some partition
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    m, X = dask_model
    bad = pd.DataFrame(X.copy())
    bad.iloc[120, 1] = -np.inf
    with pytest.raises(LTRInputError) as e:
        m.predict(dd.from_pandas(bad, npartitions=4, sort=False)).compute()
    n0 = len(bad) // 4 + (len(bad) % 4 > 0)  # from_pandas' equal slices
    assert str(e.value).startswith(f"partition {120 // n0}: row {120 % n0}: feature 1")


def test_dask_predict_float32_chunks_unchanged(dask_model):
    # the chunk is no longer converted to float64 on the worker: float32 data is still
    # its float32 values, scored as Ranker.predict scores them
    da = pytest.importorskip("dask.array")
    m, X = dask_model
    X32 = X.astype(np.float32)
    got = m.predict(da.from_array(X32, chunks=(50, 4))).compute()
    np.testing.assert_array_equal(got, m.to_local().predict(X32))
    np.testing.assert_array_equal(
        m.predict(da.from_array(X, chunks=(50, 4))).compute(), m.to_local().predict(X)
    )


# --- pandas <NA> in an object array ------------------------------------------------


def test_pandas_na_in_object_array_is_missing():
    # failed before: "row 0: feature 0 is <NA>: not a number", while None in the same
    # array, and <NA> in the DataFrame itself, are missing values
    pd = pytest.importorskip("pandas")
    X, y, qid = _data()
    X[::7, 0] = np.nan
    frame = pd.DataFrame(X).astype({0: "Float64", 1: "float64", 2: "float64", 3: "float64"})
    obj = frame.to_numpy()  # object dtype, <NA> where X is NaN
    assert obj.dtype == object
    assert obj[0, 0] is pd.NA
    ref = Ranker(**FAST).fit(X, y, qid=qid)
    got = Ranker(**FAST).fit(obj, y, qid=qid)
    assert got.booster_.to_dict()["trees"] == ref.booster_.to_dict()["trees"]
    np.testing.assert_array_equal(ref.predict(obj), ref.predict(X))
    with_none = np.where(obj == None, None, obj)  # noqa: E711 - elementwise
    np.testing.assert_array_equal(ref.predict(with_none), ref.predict(X))


def test_object_array_with_other_objects_still_refused_beside_na():
    # the error names the value that is no number, not the <NA> before it
    pd = pytest.importorskip("pandas")
    X = np.array([[pd.NA, 1.0], [pd.NaT, 3.0]], dtype=object)
    with pytest.raises(LTRInputError, match=r"^row 1: feature 0 is NaT: not a number"):
        Ranker(**FAST).fit(X, [0, 1], qid=[0, 0])


# --- Python ints beyond float64 ------------------------------------------------------


@pytest.mark.parametrize(
    "X",
    [
        pytest.param([[1.0, 2.0], [3.0, 10**400]], id="list"),
        pytest.param(np.array([[1.0, 2.0], [3.0, 10**400]], dtype=object), id="object"),
    ],
)
def test_feature_int_beyond_float64_is_an_input_error(X):
    # failed before: a bare OverflowError ("int too large to convert to float") from
    # NumPy's conversion, naming neither the row nor the feature
    with pytest.raises(LTRInputError) as e:
        Ranker(**FAST).fit(X, [0, 1], qid=[0, 0])
    assert e.value.row == 1
    msg = str(e.value)
    assert msg.startswith("row 1: feature 1 is 100000000000000000000000...")
    assert "too large for a float64" in msg
    assert len(msg) < 200


def test_feature_int_beyond_float64_at_predict():
    # failed before: the same bare OverflowError from Ranker.predict
    X, y, qid = _data()
    m = Ranker(**FAST).fit(X, y, qid=qid)
    bad = X.astype(object)
    bad[3, 2] = -(10**309)
    with pytest.raises(LTRInputError, match=r"^row 3: feature 2 is -1000.*too large"):
        m.predict(bad)


@pytest.mark.parametrize(
    ("kw", "start"),
    [
        pytest.param(dict(y=[0, 10**400]), "row 1: y[1]=1000", id="y"),
        pytest.param(
            dict(y=[0, 1], sample_weight=[1, 10**400]), "row 1: sample_weight[1]=", id="w"
        ),
        pytest.param(dict(y=[0, 1], group=[10**400]), "group[0]=1000", id="group"),
    ],
)
def test_other_ints_beyond_float64_are_input_errors(kw, start):
    # failed before: bare OverflowErrors for labels, weights and group sizes too
    kw = dict(kw)
    if "group" not in kw:
        kw["qid"] = [0, 0]
    y = kw.pop("y")
    with pytest.raises(LTRInputError) as e:
        Ranker(**FAST).fit(np.zeros((2, 1)), y, **kw)
    assert str(e.value).startswith(start), str(e.value)
    assert "too large for a float64" in str(e.value)
    assert len(str(e.value)) < 200

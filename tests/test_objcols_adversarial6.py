"""Adversarial pass 6 over tabular input (objcols): DataFrame columns of dtype object
holding numbers, the weights of explicit preference pairs, numbers held as object that
``dask.dataframe.from_pandas`` turns into text, and odd DataFrame dtypes and columns.

Small data, few trees.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ltrboost import Ranker, train  # noqa: E402
from ltrboost.dataset import LTRInputError, PreferencePairs, make_dataset  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402

FAST = dict(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=3, n_threads=1)


def _frame(n_queries=8):
    X, y, qid = make_ranking(
        n_queries=n_queries, docs_per_query=(5, 9), n_features=3, random_state=0
    )[:3]
    df = pd.DataFrame(np.round(X, 3), columns=["a", "b", "c"])
    return df, y, qid


# --- 1. object columns holding numbers ----------------------------------------------


def _as_objects(column: np.ndarray) -> pd.Series:
    """``column`` as an object Series of mixed Python and NumPy number types and missing
    markers, each value equal to the float it stands for."""
    out = []
    for k, v in enumerate(column.tolist()):
        if np.isnan(v):
            out.append([None, np.nan, pd.NA][k % 3])
        elif float(v).is_integer():
            out.append([int(v), np.int64(v), Decimal(int(v))][k % 3])
        else:
            out.append([v, np.float64(v), Decimal(repr(v)), Fraction(v)][k % 4])
    return pd.Series(out, dtype=object)


def test_object_column_of_numbers_trains_and_predicts_as_the_float_column():
    df, y, qid = _frame()
    df.loc[::7, "a"] = np.nan
    df.loc[1::5, "b"] = np.round(df.loc[1::5, "b"] * 10)  # whole numbers
    obj = df.assign(a=_as_objects(df["a"].to_numpy()), b=_as_objects(df["b"].to_numpy()))
    assert list(obj.dtypes[["a", "b"]]) == [object, object]
    ref = Ranker(**FAST).fit(df, y, qid=qid)
    got = Ranker(**FAST).fit(obj, y, qid=qid)
    assert got.booster_.to_dict()["trees"] == ref.booster_.to_dict()["trees"]
    np.testing.assert_array_equal(ref.predict(obj), ref.predict(df))
    np.testing.assert_array_equal(ref.predict(obj[["c", "b", "a"]]), ref.predict(df))
    ds = make_dataset(obj, y, qid=qid)
    np.testing.assert_array_equal(ds.X, make_dataset(df, y, qid=qid).X)
    assert ds.feature_names == ["a", "b", "c"]


def test_object_column_after_astype_object_and_bools_as_zero_one():
    df, y, qid = _frame()
    ref = Ranker(**FAST).fit(df, y, qid=qid)
    np.testing.assert_array_equal(ref.predict(df.astype(object)), ref.predict(df))
    # booleans are 0 and 1, as in a bool column (a bool column with a None is object)
    flags = pd.Series([True, None, False, np.bool_(True)] * 2, dtype=object)
    X = pd.DataFrame({"f": flags, "g": np.arange(8.0)})
    np.testing.assert_array_equal(
        make_dataset(X, np.zeros(8), qid=np.zeros(8)).X[:, 0], [1, np.nan, 0, 1] * 2
    )


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param("x", "'x'", id="str"),
        pytest.param("1.5", "'1.5'", id="numeric-text"),
        pytest.param(b"1", "b'1'", id="bytes"),
        pytest.param(np.str_("2"), "'2'", id="np.str_"),
        pytest.param(1 + 2j, "(1+2j)", id="complex"),
        pytest.param(pd.Timestamp("2020-01-01"), "Timestamp", id="Timestamp"),
        pytest.param(np.timedelta64(5, "s"), "timedelta64", id="timedelta64"),
        pytest.param(np.datetime64("2020-01-01"), "datetime64", id="datetime64"),
        pytest.param(pd.NaT, "NaT", id="NaT"),
        pytest.param([1.0], "[1.0]", id="list"),
        pytest.param(Decimal("sNaN"), "sNaN", id="signaling-nan"),
    ],
)
def test_object_column_holding_no_number_is_refused_naming_row_and_column(value, shown):
    df, y, qid = _frame()
    col = df["b"].astype(object)
    col.iloc[4] = value
    bad = df.assign(b=col)
    for call in (
        lambda: Ranker(**FAST).fit(bad, y, qid=qid),
        lambda: make_dataset(bad, y, qid=qid),
    ):
        with pytest.raises(LTRInputError, match=r"^row 4: feature 1 \(column 'b'\) is ") as e:
            call()
        assert shown in str(e.value)
        assert e.value.row == 4
    ref = Ranker(**FAST).fit(df, y, qid=qid)
    with pytest.raises(LTRInputError, match=r"^row 4: feature 1 \(column 'b'\) is "):
        ref.predict(bad)


def test_object_column_value_beyond_float64_or_infinite_is_refused_naming_it():
    df, y, qid = _frame()
    col = df["c"].astype(object)
    col.iloc[3] = 10**400
    with pytest.raises(LTRInputError, match=r"^row 3: feature 2 \(column 'c'\) is 1000.*too large"):
        make_dataset(df.assign(c=col), y, qid=qid)
    col.iloc[3] = Decimal("-Infinity")
    with pytest.raises(LTRInputError, match=r"^row 3: feature 2 \(column 'c'\) is -inf: infinite"):
        make_dataset(df.assign(c=col), y, qid=qid)


def test_text_columns_name_the_row_of_their_first_value_that_is_no_number():
    # pd.read_csv of a column with one text cell: a str column, the cell named
    import io

    text = "a,b\n" + "".join(f"{k},{k * 0.5}\n" for k in range(6)).replace("2,1.0", "2,n/a?")
    frame = pd.read_csv(io.StringIO(text))
    assert frame["b"].dtype != np.float64
    with pytest.raises(LTRInputError, match=r"^row 2: column 'b' has dtype .*'n/a\?'") as e:
        make_dataset(frame, np.zeros(6), qid=np.zeros(6))
    assert e.value.row == 2
    # numbers written as text: the first one named
    with pytest.raises(LTRInputError, match=r"^row 0: column 'a' has dtype str.*'0'"):
        make_dataset(frame.astype(str), np.zeros(6), qid=np.zeros(6))


@pytest.mark.parametrize(
    ("column", "dtype", "advice"),
    [
        pytest.param(pd.Categorical([None, "x", "y", "x"]), "category", "cat.codes", id="cat"),
        pytest.param(
            pd.to_datetime([None, "2020-01-02", "2020-01-03", None]),
            "datetime64",
            "convert dates",
            id="datetime",
        ),
        pytest.param(
            pd.to_timedelta([None, 1, 2, 3], unit="s"), "timedelta64", "durations", id="timedelta"
        ),
    ],
)
def test_other_dtypes_are_refused_naming_column_and_first_row(column, dtype, advice):
    X = pd.DataFrame({"a": np.arange(4.0), "d": column})
    with pytest.raises(LTRInputError, match=rf"^row 1: column 'd' has dtype {dtype}") as e:
        make_dataset(X, np.zeros(4), qid=np.zeros(4))
    assert advice in str(e.value)
    assert e.value.row == 1


# --- 2. weights of explicit preference pairs ----------------------------------------


@pytest.mark.parametrize("weight", [1e300, 1e39, 3.5e38, 1e-300])
def test_pair_weight_that_float32_cannot_hold_is_refused_naming_the_pair(weight):
    df, y, qid = _frame()
    pairs = [[0, 1, 1.0], [2, 3, weight], [11, 12, 1.0]]
    with pytest.raises(LTRInputError, match=r"pairs.weight\[1\]=.*float32"):
        Ranker(objective="gbrank", **FAST).fit(df, y, qid=qid, pairs=pairs)
    ds = make_dataset(df, y, qid=qid)
    ds.pairs = PreferencePairs(
        preferred=np.array([0, 2], dtype=np.int32),
        other=np.array([1, 3], dtype=np.int32),
        weight=np.array([1.0, weight]),
    )
    with pytest.raises(LTRInputError, match=r"pairs.weight\[1\]=") as e:
        train({"objective": "ranknet", **FAST}, ds)
    assert e.value.pair == 1  # the pair's index (not a data row: ``row`` is None)


def test_pair_weights_float32_holds_are_kept():
    df, y, qid = _frame()
    big = float(np.finfo(np.float32).max)
    pairs = [[0, 1, 1.0], [2, 3, big], [11, 12, 0.0], [13, 14, 1e-40]]
    Ranker(objective="gbrank", **FAST).fit(df, y, qid=qid, pairs=pairs)


def test_object_column_refusal_names_the_callers_row_with_interleaved_queries():
    df, y, qid = _frame()
    qid = qid[::-1].copy()  # queries interleaved with rows regrouped: still the given row
    qid[[0, 1]] = qid[[1, 0]]
    col = df["a"].astype(object)
    col.iloc[9] = "oops"
    with pytest.raises(LTRInputError, match=r"^eval_set\[0\]: row 9: feature 0 \(column 'a'\)"):
        Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(df.assign(a=col), y, qid)])


@pytest.mark.parametrize(
    "value",
    [np.timedelta64(5, "s"), np.datetime64("2020-01-01T00:00:00")],
    ids=["timedelta64", "datetime64"],
)
def test_numpy_object_array_holding_a_date_is_refused_as_a_date_array_is(value):
    # it became 5.0 or 1.58e9 (the number depending on the unit); a datetime64 array
    # and a DataFrame's datetime column are refused
    X = np.array([[1.0, 2.0], [3.0, value]], dtype=object)
    with pytest.raises(LTRInputError, match=r"^row 1: feature 1 is .*not a number"):
        make_dataset(X, [0, 1], qid=[0, 0])


# --- 3. numbers held as object, turned into text by dask.dataframe.from_pandas -------


def _dask_frame(df, **kw):
    dd = pytest.importorskip("dask.dataframe")
    return dd.from_pandas(df, npartitions=2, sort=False, **kw)


@pytest.mark.parametrize(
    ("column", "role"),
    [("qid", "qid"), ("y", "y"), ("b", "feature")],
)
def test_dask_object_numbers_made_text_by_from_pandas_are_refused_clearly(client, column, role):
    # 1 and 1.0 became "1" and "1.0": two queries, where local training has one
    dd = pytest.importorskip("dask.dataframe")
    ldask = pytest.importorskip("ltrboost.dask")
    df, y, qid = _frame()
    frame = df.assign(y=y, qid=qid)
    values = frame[column].astype(object)
    values.iloc[3] = float(values.iloc[3])  # a float among ints (or floats)
    frame[column] = values
    X = dd.from_pandas(frame, npartitions=2, sort=False)
    assert frame[column].dtype == object
    assert X[column].dtype != object  # the installed Dask turned them into text
    with pytest.raises(LTRInputError, match=r"convert-string") as e:
        ldask.DaskRanker(client=client, **FAST).fit(X, "y", qid="qid")
    message = str(e.value)
    assert f"column {column!r}" in message
    assert message.startswith("row 0: ")
    assert e.value.row == 0
    assert role in message
    # a separate Series too
    with pytest.raises(LTRInputError, match=r"^row 0: qid column 'q'.*convert-string"):
        ldask.DaskRanker(client=client, **FAST).fit(
            _dask_frame(df),
            _dask_frame(pd.Series(y)),
            qid=_dask_frame(pd.Series(qid, name="q", dtype=object)),
        )


def test_dask_object_numbers_kept_as_object_train_as_local(client):
    dask = pytest.importorskip("dask")
    ldask = pytest.importorskip("ltrboost.dask")
    df, y, qid = _frame()
    qobj = pd.Series([int(q) if k % 2 else float(q) for k, q in enumerate(qid)], dtype=object)
    obj = df.assign(b=_as_objects(df["b"].to_numpy()), qid=qobj)
    with dask.config.set({"dataframe.convert-string": False}):
        X = _dask_frame(obj)
        yd = _dask_frame(pd.Series(y))
    got = ldask.DaskRanker(client=client, **FAST).fit(X, yd, qid="qid").to_local()
    ref = Ranker(**FAST).fit(df, y, qid=qid)
    assert got.booster_.to_dict()["trees"] == ref.booster_.to_dict()["trees"]
    # predict: kept as object, the numbers are scored; made text, refused clearly
    with pytest.raises(LTRInputError, match=r"^row 0: qid Series holds numbers"):
        ldask.DaskRanker(client=client, **FAST).fit(_dask_frame(df), yd, qid=_dask_frame(qobj))
    with dask.config.set({"dataframe.convert-string": False}):
        qd = _dask_frame(qobj)
    r = ldask.DaskRanker(client=client, **FAST).fit(_dask_frame(df), yd, qid=qd)
    np.testing.assert_array_equal(r.predict(X).compute(), r.to_local().predict(obj))
    with pytest.raises(LTRInputError, match=r"^row 0: feature column 'b'.*convert-string"):
        r.predict(_dask_frame(obj))


# --- adversarial pass over DataFrame input -------------------------------------------


def test_arrow_decimal_column_is_numbers_as_an_object_column_of_decimals():
    pa = pytest.importorskip("pyarrow")
    df, y, qid = _frame()
    values = [None if k % 5 == 0 else Decimal(f"{v:.3f}") for k, v in enumerate(df["a"])]
    dec = df.assign(a=pd.array(values, dtype=pd.ArrowDtype(pa.decimal128(9, 3))))
    ref = make_dataset(df.assign(a=pd.Series(values, dtype=object)), y, qid=qid)
    np.testing.assert_array_equal(make_dataset(dec, y, qid=qid).X, ref.X)
    table = pa.Table.from_pandas(dec, preserve_index=False)  # e.g. a database's NUMERIC
    np.testing.assert_array_equal(make_dataset(table, y, qid=qid).X, ref.X)


@pytest.mark.parametrize(
    "column",
    [
        pd.period_range("2020", periods=4, freq="D"),
        pd.arrays.IntervalArray.from_breaks(np.arange(5)),
    ],
    ids=["period", "interval"],
)
def test_other_non_numeric_dtypes_get_advice_for_them_not_for_strings(column):
    X = pd.DataFrame({"a": np.arange(4.0), "d": column})
    with pytest.raises(LTRInputError, match=r"^row 0: column 'd' has dtype ") as e:
        make_dataset(X, np.zeros(4), qid=np.zeros(4))
    assert "strings" not in str(e.value)


def test_qid_given_as_a_column_name_is_refused_saying_so():
    # it said "qid has shape () but X has 56 rows"
    df, y, qid = _frame()
    frame = df.assign(qid=qid)
    with pytest.raises(LTRInputError, match=r"qid='qid' is a string.*column named 'qid'"):
        Ranker(**FAST).fit(frame, y, qid="qid")
    with pytest.raises(LTRInputError, match=r"qid='q' is a string"):
        make_dataset(df, y, qid="q")

"""The Python API with the inputs pandas / pyarrow / NumPy / SciPy users hand over (a
ninth adversarial pass).

* ``qid`` as a column vector (``qid[:, None]``, ``df[["qid"]]``): ``fit`` and ``score``
  said "qid has shape (120, 1) but X has 120 rows" (which it has), where ``y`` and
  ``sample_weight`` of that shape are taken; ``group`` (``(k, 1)``) and ``position``
  were refused alike, and ``make_scorer(qid=)`` took it.
* Two columns named ``qid`` in a DataFrame: "qid has shape (120, 2) but X has 120 rows".
* ``dump_svmlight`` with a nullable or Arrow-backed DataFrame holding ``<NA>``: a bare
  ``TypeError: float() argument must be ... not 'NAType'``; with a SciPy sparse
  matrix: ``ValueError: setting an array element with a sequence``.
* ``eval_qid=`` / ``eval_group=`` for one validation set given unwrapped is taken
  from a NumPy array, but a pandas Series or a pyarrow array of the same ids was
  "eval_qid has 120 entries but eval_set has 1".
* A categorical column read from Parquet (an Arrow dictionary column) was refused with
  the advice for "lists, periods" ("convert the column to numbers first"), not that of
  a pandas categorical column.

What holds (checked in this pass, not repeated here): nullable ``Int64`` / ``Float64`` /
``boolean`` and Arrow-backed columns with ``<NA>`` train and predict as the float frame
with NaN; category, datetime (tz too), timedelta, period, string, Arrow date / time /
binary / list columns are refused naming the column and row; ``y`` / ``qid`` /
``sample_weight`` as Series with another index, lists, pyarrow arrays (chunked too)
are taken by position; float16, int8, uint64, ``>f8``, Fortran, strided, read-only and
memmapped arrays give the float64 model; 0-row predict; every SciPy sparse format,
integer dtypes, unsorted indices, duplicates (summed) and explicit zeros give the
model of ``toarray()``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from ltrboost import LTRInputError, Ranker, dump_svmlight, load_svmlight
from ltrboost.dataset import check_positions, make_dataset
from ltrboost.datasets import make_ranking

pa = pytest.importorskip("pyarrow")

X, Y, QID = make_ranking(n_queries=12, docs_per_query=10, n_features=4, random_state=0)
Y = Y.astype(np.float64)
COLS = ["a", "b", "c", "d"]


def _ranker() -> Ranker:
    return Ranker(n_estimators=3, min_samples_leaf=3)


@pytest.fixture(scope="module")
def fitted() -> tuple[Ranker, np.ndarray]:
    model = _ranker().fit(X, Y, qid=QID)
    return model, model.predict(X)


@pytest.mark.parametrize(
    "qid",
    [QID[:, None], QID[None, :], pd.DataFrame({"qid": QID})],
    ids=["column", "row", "one-column-frame"],
)
def test_qid_as_a_vector_of_one_column_is_taken_as_labels_are(fitted, qid):
    model, scores = fitted
    refit = _ranker().fit(X, Y, qid=qid)
    assert np.array_equal(refit.predict(X), scores)
    assert model.score(X, Y, qid=qid) == model.score(X, Y, qid=QID)


def test_qid_column_vector_beside_a_qid_column_is_the_same_ids():
    """A qid column holding the ids given as qid= is dropped, also for an (n, 1) qid=
    (it was compared by shape: kept as a feature, with a warning)."""
    df = pd.DataFrame(X, columns=COLS).assign(qid=QID)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = _ranker().fit(df, Y, qid=QID[:, None])
    assert list(model.feature_names_in_) == COLS


def test_group_and_position_column_vectors(fitted):
    _, scores = fitted
    sizes = np.full(12, 10)
    assert np.array_equal(_ranker().fit(X, Y, group=sizes[:, None]).predict(X), scores)
    assert np.array_equal(_ranker().fit(X, Y, group=pd.DataFrame({"g": sizes})).predict(X), scores)
    position = np.tile(np.arange(1, 11), 12)
    assert np.array_equal(check_positions(position[:, None], 120), position)


@pytest.mark.parametrize("what", ["qid", "group", "position"])
def test_a_two_column_qid_is_refused_as_not_1d(what):
    """The message said the row counts differ when they did not."""
    bad = np.zeros((120, 2))
    calls = {
        "qid": lambda: make_dataset(X, Y, qid=bad),
        "group": lambda: make_dataset(X, Y, group=bad),
        "position": lambda: check_positions(bad, 120),
    }
    with pytest.raises(LTRInputError, match=rf"{what} must be 1-D.*shape \(120, 2\)") as e:
        calls[what]()
    assert "but X has" not in str(e.value)


def test_two_qid_columns_are_named():
    df = pd.concat([pd.DataFrame(X, columns=COLS), pd.DataFrame({"qid": QID, "q2": QID})], axis=1)
    df.columns = [*COLS, "qid", "qid"]
    with pytest.raises(LTRInputError, match=r"X has 2 columns named 'qid'"):
        _ranker().fit(df, Y)
    model = _ranker().fit(df.iloc[:, :5], Y)
    for call in (model.predict, lambda d: model.score(d, Y)):
        with pytest.raises(LTRInputError, match=r"X has 2 columns named 'qid'"):
            call(df)
    with pytest.raises(LTRInputError, match=r"eval_set\[0\].*2 columns named 'qid'"):
        _ranker().fit(df.iloc[:, :5], Y, eval_set=[(df, Y)])


def _round_trip(tmp_path, X_in) -> np.ndarray:
    path = tmp_path / "d.txt"
    dump_svmlight(path, X_in, Y, QID)
    data = load_svmlight(path, missing="nan")
    assert np.array_equal(data.y, Y)
    assert np.array_equal(data.qid, QID)
    return data.X


@pytest.mark.parametrize("dtype", ["Float64", "float64[pyarrow]"])
def test_dump_svmlight_writes_na_of_a_nullable_frame_as_absent(tmp_path, dtype):
    Xn = X.copy()
    Xn[3, 1] = np.nan
    frame = pd.DataFrame(Xn, columns=COLS).astype(dtype)
    assert frame.isna().to_numpy().sum() == 1
    assert np.array_equal(_round_trip(tmp_path, frame), Xn, equal_nan=True)


@pytest.mark.parametrize("kind", ["csr_matrix", "csc_array", "coo_array"])
def test_dump_svmlight_takes_a_sparse_matrix(tmp_path, kind):
    Xs = np.where(np.abs(X) < 0.7, 0.0, X)
    assert np.array_equal(_round_trip(tmp_path, getattr(sp, kind)(Xs)), Xs)


def test_dump_svmlight_keeps_float32_values_exact(tmp_path):
    """float32 features are written as the float64 values they are (not changed by the
    conversion dump_svmlight now shares with fit)."""
    X32 = X.astype(np.float32)
    assert np.array_equal(_round_trip(tmp_path, X32), X32.astype(np.float64))


def test_dump_svmlight_refusal_leaves_the_file(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("old\n")
    frame = pd.DataFrame(X, columns=COLS).assign(t=pd.Timestamp("2020-01-01"))
    with pytest.raises(LTRInputError, match="column 't'"):
        dump_svmlight(path, frame, Y, QID)
    assert path.read_text() == "old\n"


@pytest.mark.parametrize(
    "ids",
    [pd.Series(QID), pa.array(QID), pa.chunked_array([QID[:50], QID[50:]])],
    ids=["series", "arrow", "chunked"],
)
def test_eval_qid_for_one_set_unwrapped_as_an_ndarray_is(ids):
    ref = _ranker().fit(X, Y, qid=QID, eval_set=[(X, Y)], eval_qid=QID).evals_result_
    got = _ranker().fit(X, Y, qid=QID, eval_set=[(X, Y)], eval_qid=ids).evals_result_
    assert got == ref


def test_eval_group_for_one_set_as_a_series():
    sizes = np.full(12, 10)
    ref = _ranker().fit(X, Y, qid=QID, eval_set=[(X, Y)], eval_group=[sizes]).evals_result_
    got = _ranker().fit(X, Y, qid=QID, eval_set=[(X, Y)], eval_group=pd.Series(sizes))
    assert got.evals_result_ == ref


def test_arrow_dictionary_column_gets_the_categorical_advice():
    table = pa.table({"a": X[:, 0], "t": pa.array(["x", "y"] * 60).dictionary_encode()})
    with pytest.raises(LTRInputError, match=r"column 't' has dtype dictionary.*\.cat\.codes"):
        _ranker().fit(table, Y, qid=QID)

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


def test_sparse_predict_densifies_only_the_columns_the_trees_read(monkeypatch):
    """Sparse prediction densified every column of each row block: on a wide sparse X
    (hashed features) it took O(rows x columns) time however few columns the trees
    split on (20k rows x 300k columns: 12.7 s to predict after a 1.1 s fit)."""
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(0)
    n, n_features = 400, 1_000_000
    rows = np.repeat(np.arange(n), 4)
    cols = rng.integers(0, 6, rows.shape[0])
    cols[::50] = n_features - 1 - rng.integers(0, 3, cols[::50].shape[0])
    X = sp.csr_matrix((rng.normal(size=rows.shape[0]), (rows, cols)), shape=(n, n_features))
    X.data[::7] = np.nan
    y = rng.integers(0, 3, n).astype(float)
    qid = np.repeat(np.arange(n // 20), 20)
    ds = make_dataset(X, y, qid=qid)
    seen = []

    def grab(scores, labels, offsets):  # the training engine's scores of the binned X
        seen.append(np.array(scores))
        return 0.0

    booster = train(dict(FAST, objective="lambdamart", eval_metric=[grab]), ds, [("v", ds)])
    used = {int(f) for t in booster.trees for f in t["feature_idx"][t["is_leaf"] == 0]}
    widths = []
    real = type(X).toarray

    def spy(self, *a, **k):
        widths.append(self.shape[1])
        return real(self, *a, **k)

    monkeypatch.setattr(type(X), "toarray", spy)
    np.testing.assert_array_equal(booster.predict(X), seen[-1])
    assert widths
    assert max(widths) == len(used)


def test_convert_takes_the_training_files_width(tmp_path, capsys):
    """`ltrboost convert` had no --n-features: a validation file whose lines never hold
    the highest feature index became Parquet with fewer columns (f1..f2 against the
    training file's f1..f3), which a Dask eval_set then refused as missing columns,
    with no way to convert it to the training columns from the command line."""
    pq = pytest.importorskip("pyarrow.parquet")
    from ltrboost.cli import main

    vali = tmp_path / "vali.txt"
    vali.write_text("1 qid:1 1:0.5 2:1\n0 qid:1 2:0.25\n")
    out = tmp_path / "vali.parquet"
    assert main(["convert", str(vali), str(out), "--n-features", "3", "-q"]) == 0
    table = pq.read_table(str(out / "part.00000.parquet"))
    assert table.column_names == ["qid", "label", "f1", "f2", "f3"]
    assert table.column("f3").to_pylist() == [0.0, 0.0]
    assert main(["convert", str(vali), str(tmp_path / "narrow"), "--n-features", "1"]) == 2
    assert "vali.txt:1: feature index 2 is larger than --n-features=1" in capsys.readouterr().err
    assert main(["convert", str(vali), str(tmp_path / "neg"), "--n-features", "-1"]) == 2
    assert capsys.readouterr().err == "ltrboost: error: --n-features=-1 must be >= 0\n"


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("y", {"y": [[1], [2, 3], [0], [1]], "qid": [0, 0, 1, 1]}),
        ("qid", {"qid": [[0], [0, 1], [1], [1]]}),
        ("group", {"group": [2, [1, 1]]}),
        ("sample_weight", {"qid": [0, 0, 1, 1], "sample_weight": [1, [1, 2], 1, 1]}),
        ("position", {"qid": [0, 0, 1, 1], "position": [[1], [1, 2], [1], [1]]}),
    ],
)
def test_a_ragged_list_names_its_parameter_and_entry(name, kwargs):
    """A nested list of different lengths as y, qid, group, sample_weight or position
    raised NumPy's "setting an array element with a sequence. The requested array has
    an inhomogeneous shape ..." naming no parameter (a ragged X was already named)."""
    X = np.zeros((4, 2))
    kwargs = {"y": [0, 1, 0, 1], **kwargs}
    with pytest.raises(LTRInputError, match=rf"^{name}\[1\] has shape \(2,\) but {name}\[0\]"):
        make_dataset(X, **kwargs)


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ({"query_offsets": np.array([0, 20, 10, 30, 40])}, "query 1 has -10 rows"),
        ({"query_offsets": np.array([0, 10, 20, 30, 39])}, "they run from 0 to 39"),
        ({"query_offsets": [0, 10, 20, 30, 40]}, "must be a 1-D integer ndarray"),
        ({"X": [[0.0, 1.0]] * 40}, r"train_set.X must be a 2-D numeric array .*, not list"),
    ],
)
def test_a_hand_built_dataset_whose_parts_do_not_fit_is_refused(parts, message):
    """RankingDataset is public and ltrboost.train took one built by hand unchecked:
    query offsets out of order trained on queries of negative size without a word,
    offsets ending before the last row said "y has 40 rows but X has 39", and a list X
    or list offsets failed with "'list' object has no attribute 'shape'"."""
    from ltrboost import RankingDataset

    rng = np.random.default_rng(0)
    fields = {
        "X": rng.normal(size=(40, 2)),
        "y": (np.arange(40) % 3).astype(float),
        "query_offsets": np.arange(0, 41, 10),
    }
    train(dict(FAST), RankingDataset(**fields))  # well formed: trains
    with pytest.raises(LTRInputError, match=message):
        train(dict(FAST), RankingDataset(**{**fields, **parts}))
    with pytest.raises(LTRInputError, match="validation set 'v'"):
        train(dict(FAST), RankingDataset(**fields), [("v", RankingDataset(**{**fields, **parts}))])


def test_numpy_strings_among_python_strings_are_one_kind_of_qid():
    """Object qids mixing str and np.str_ (strings both) with a None were refused as
    "qid np.str_('a') (str_) is not of the first rows' kind (str)" instead of naming
    the row without a query id."""
    qid = np.array(["a", np.str_("a"), "b", None], dtype=object)
    with pytest.raises(LTRInputError, match=r"^row 3: qid is None: every row needs a query id"):
        make_dataset(np.zeros((4, 1)), [0, 1, 0, 1], qid=qid)
    qid = np.array([b"a", np.bytes_(b"a"), b"b", b"b"], dtype=object)
    assert make_dataset(np.zeros((4, 1)), [0, 1, 0, 1], qid=qid).n_queries == 2

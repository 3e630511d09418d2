"""Adversarial pass 9 over ``ltrboost.dask`` (daskclaims): a Dask DataFrame whose
partitions do not hold the columns its meta lists, in that order.

``dd.read_csv`` of files whose headers list the columns in another order gives such
partitions (each keeps its file's order; ``compute()`` aligns them by name), as do
``dd.from_delayed(..., verify_meta=False)`` and files lacking a column.  Training took a
partition's feature columns by position, so a file of another column order trained
its features swapped (a model unlike local training on ``compute()``), and a partition
missing the label or a feature column failed with a bare ``KeyError`` / NumPy
``ValueError``; ``predict`` too (``KeyError``).  Now each partition's columns are taken
by the names of the frame's meta, and a partition missing one or holding another is
the one-line ``partition N:`` error.

One in-process ``LocalCluster`` (conftest's ``client``: 2 workers, 1 thread each);
small data, few trees.
"""

from __future__ import annotations

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
dask = pytest.importorskip("dask")

import ltrboost  # noqa: E402
from ltrboost import dask as ldask  # noqa: E402
from ltrboost.dataset import LTRInputError  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402

FAST = dict(n_estimators=4, max_leaf_nodes=6, min_samples_leaf=3, n_threads=1)
COLS = ["a", "b", "c", "d"]


def _frame(seed=1, n_queries=16):
    X, y, qid = make_ranking(
        n_queries=n_queries, docs_per_query=(5, 10), n_features=4, random_state=seed
    )[:3]
    df = pd.DataFrame(X, columns=COLS)
    df["label"], df["qid"] = y, qid
    return df


def _cut(df) -> int:
    """A row at a query boundary near the middle."""
    q = df["qid"].to_numpy()
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    return int(starts[len(starts) // 2])


def _two_files(tmp_path, df, second):
    """``dd.read_csv`` of two files: the first rows of ``df`` as they are, the others
    as ``second(frame)`` makes them (another column order, a column less or more)."""
    cut = _cut(df)
    df.iloc[:cut].to_csv(tmp_path / "part0.csv", index=False)
    second(df.iloc[cut:]).to_csv(tmp_path / "part1.csv", index=False)
    return dd.read_csv(str(tmp_path / "part*.csv"))


def _reversed(frame):
    return frame[[*COLS[::-1], "qid", "label"]]


def test_a_file_of_another_column_order_trains_the_local_model(client, tmp_path):
    df = _frame()
    d = _two_files(tmp_path, df, _reversed)
    assert d.npartitions == 2  # each file one partition, in its own column order
    local = ltrboost.Ranker(**FAST).fit(d.compute()[COLS], df["label"], qid=df["qid"])
    dist = ldask.DaskRanker(client=client, **FAST).fit(d, "label")
    for a, b in zip(local.booster_.trees, dist.booster_.trees, strict=True):
        np.testing.assert_array_equal(a["feature_idx"], b["feature_idx"])
        np.testing.assert_array_equal(a["num_threshold"], b["num_threshold"])
    np.testing.assert_allclose(
        dist.to_local().predict(df[COLS]), local.predict(df[COLS]), rtol=1e-9, atol=1e-12
    )
    # and as a validation set: the same metric values as the rows in meta order
    ev = ldask.DaskRanker(client=client, **FAST).fit(
        dd.from_pandas(df, npartitions=2), "label", eval_set=[(d, "label")], eval_names=["v"]
    )
    ref = ltrboost.Ranker(**FAST).fit(
        df[COLS], df["label"], qid=df["qid"], eval_set=[(df[COLS], df["label"], df["qid"])]
    )
    np.testing.assert_allclose(
        ev.evals_result_["v"]["ndcg@10"], ref.evals_result_["valid_0"]["ndcg@10"], rtol=1e-12
    )


@pytest.mark.parametrize(
    ("second", "missing"),
    [
        (lambda f: f.drop(columns="label"), "missing columns ['label']"),
        (lambda f: f.drop(columns="c"), "missing columns ['c']"),
        (lambda f: f.assign(zz=1.0), "unknown columns ['zz']"),
    ],
    ids=["label", "feature", "extra"],
)
def test_a_partition_without_a_column_of_the_meta_is_named(client, tmp_path, second, missing):
    d = _two_files(tmp_path, _frame(), second)
    with pytest.raises(LTRInputError, match=r"^partition 1: ") as e:
        ldask.DaskRanker(client=client, **FAST).fit(d, "label")
    assert missing in str(e.value)
    assert "\n" not in str(e.value)
    # a validation set's partition: the same, after the set's name
    train = dd.from_pandas(_frame(), npartitions=2)
    with pytest.raises(LTRInputError, match=r"^validation set 'v': partition 1: ") as e:
        ldask.DaskRanker(client=client, **FAST).fit(
            train, "label", eval_set=[(d, "label")], eval_names=["v"]
        )
    assert missing in str(e.value)


def test_predict_names_a_partition_missing_a_feature(client):
    df = _frame()
    model = ldask.DaskRanker(client=client, **FAST).fit(dd.from_pandas(df, npartitions=2), "label")
    cut = _cut(df)
    parts = [dask.delayed(df.iloc[:cut]), dask.delayed(df.iloc[cut:].drop(columns="c"))]
    d = dd.from_delayed(parts, meta=df.iloc[:0], verify_meta=False)
    with pytest.raises(LTRInputError, match=r"^partition 1: .*missing columns \['c'\]"):
        model.predict(d).compute()
    with pytest.raises(LTRInputError, match=r"^partition 1: .*missing columns \['c'\]"):
        model.predict(d, pred_contrib=True).compute()
    # another column order in a partition: taken by name, as locally
    parts = [dask.delayed(df.iloc[:cut]), dask.delayed(_reversed(df.iloc[cut:]))]
    d = dd.from_delayed(parts, meta=df.iloc[:0], verify_meta=False)
    np.testing.assert_array_equal(
        model.predict(d).compute().to_numpy(), model.to_local().predict(df[COLS])
    )


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (lambda d: (d.drop(columns="qid"), "label"), "give qid="),
        (lambda d: (d, "lable"), "y='lable' is not a column of X"),
        (lambda d: (d, None), "labels y are required"),
        (lambda d: (d, d["label"].repartition(npartitions=1)), "y has 1 partitions but X has 2"),
    ],
    ids=["no qid", "no such column", "no labels", "other partitions"],
)
def test_a_validation_sets_error_found_on_the_driver_names_the_set(client, entry, problem):
    """The README: bad input is the local error prefixed with ``validation set 'NAME': ``
    in a validation set; those found before any partition is read said nothing of the
    set (``give qid=`` read as the training set's)."""
    d = dd.from_pandas(_frame(), npartitions=2)
    with pytest.raises(LTRInputError, match=r"^validation set 'v': ") as e:
        ldask.DaskRanker(client=client, **FAST).fit(
            d, "label", eval_set=[entry(d)], eval_names=["v"]
        )
    assert problem in str(e.value)

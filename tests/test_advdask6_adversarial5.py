"""Adversarial pass 5 over ``ltrboost.dask`` (advdask6): query ids of several Python
types across partitions, the warning of an early-stopping set whose metric cannot move.

One in-process ``LocalCluster`` (conftest's ``client``: 2 workers, 1 thread each);
small data, few trees.
"""

from __future__ import annotations

import warnings
from decimal import Decimal

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

import ltrboost  # noqa: E402
from ltrboost import dask as ldask  # noqa: E402
from ltrboost.dataset import LTRInputError, make_dataset  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402

FAST = dict(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=3, n_threads=1)


def _data(seed=0, n_queries=12):
    X, y, qid = make_ranking(
        n_queries=n_queries, docs_per_query=(4, 9), n_features=3, random_state=seed
    )[:3]
    return X, y, qid


def _darr(a, bounds):
    return da.from_array(a, chunks=(tuple(np.diff(bounds)), *a.shape[1:]))


def _dask(X, y, qid, bounds, w=None):
    return ldask.DaskData(
        _darr(X, bounds),
        _darr(y, bounds),
        _darr(qid, bounds),
        None if w is None else _darr(w, bounds),
    )


def _objects(qid, bounds, kinds):
    """``qid`` as an object array whose partition ``k`` holds ``kinds[k]`` values."""
    out = np.empty(qid.shape[0], dtype=object)
    for k, kind in enumerate(kinds):
        out[bounds[k] : bounds[k + 1]] = [kind(int(v)) for v in qid[bounds[k] : bounds[k + 1]]]
    return out


def _assert_same_model(local, dist, X):
    assert len(local.trees) == len(dist.trees)
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    ("layout", "other"),
    [("boundary cuts", float), ("interleaved", float), ("interleaved", Decimal)],
)
def test_object_qids_int_in_one_partition_float_in_another_are_one_query(client, layout, other):
    """Python ints in one partition, the same ids as floats (3.0) in another: one query
    each, as local training takes them (3 == 3.0).  Interleaved data was refused ("query
    1 is still cut between partitions after regrouping"): the hash regroup hashed object
    ids by their text, "3" and "3.0".  Any number equal to an int is its query
    (``Decimal(3)``), as locally."""
    X, y, qid = _data(seed=1)
    n = len(y)
    if layout == "interleaved":
        order = np.argsort(np.arange(n) % 2, kind="stable")
        X, y, qid = X[order], y[order], qid[order]
    bounds = [0, n // 2 + 1, n]
    q = _objects(qid, bounds, [int, other])
    dist = ldask.train(client, FAST, _dask(X, y, q, bounds))
    if layout == "interleaved":  # the local equivalent: the rows of the regrouped partitions
        order = np.argsort(ldask._hash_buckets(qid, 2), kind="stable")
    else:
        order = np.arange(n)
    local = ltrboost.train(FAST, make_dataset(X[order], y[order], qid=q[order]))
    _assert_same_model(local, dist, X)
    # numbers of either type hash alike, as the numeric dtypes do
    np.testing.assert_array_equal(ldask._hash_buckets(q, 7), ldask._hash_buckets(qid, 7))


def test_numbers_in_one_partition_strings_in_another_are_the_local_error(client):
    """Local training refuses ids that are numbers in some rows and strings in others;
    Dask trained, taking 5 and "5" for two queries."""
    X, y, qid = _data(seed=2)
    n = len(y)
    bounds = [0, n // 2, n]
    q = _objects(qid, bounds, [int, str])
    with pytest.raises(LTRInputError) as local_err:
        ltrboost.train(FAST, make_dataset(X, y, qid=q))
    with pytest.raises(LTRInputError) as dask_err:
        ldask.train(client, FAST, _dask(X, y, q, bounds))
    assert str(dask_err.value) == f"partition 1: row 0: {local_err.value.problem}"
    assert dask_err.value.partition == 1
    # also where every query is whole and regroup is off; in a validation set, named
    starts = np.flatnonzero(np.diff(qid)) + 1
    whole = [0, int(starts[len(starts) // 2]), n]
    q = _objects(qid, whole, [int, str])
    with pytest.raises(LTRInputError, match=r"^validation set 'v': partition 1: row 0: qid"):
        ldask.train(
            client,
            FAST,
            _dask(X, y, qid, whole),
            [("v", _dask(X, y, q, whole))],
            regroup=False,
        )


def _blind_warnings(fn):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in rec if "drives early stopping" in str(w.message)]


def test_early_stopping_on_a_set_without_two_grades_warns_as_locally(client):
    """Local training warns that the metric of such a set cannot move (training stops
    after early_stopping_rounds + 1 rounds, silently); Dask did not."""
    X, y, qid = _data(seed=3)
    Xv, yv, qv = _data(seed=4)
    n, nv = len(y), len(yv)
    bounds, vbounds = [0, n // 2, n], [0, nv // 3, nv]
    params = dict(FAST, early_stopping_rounds=2)
    flat = np.zeros_like(yv)
    local = _blind_warnings(
        lambda: ltrboost.train(
            params, make_dataset(X, y, qid=qid), [("v", make_dataset(Xv, flat, qid=qv))]
        )
    )
    assert len(local) == 1
    dist = _blind_warnings(
        lambda: ldask.train(
            client, params, _dask(X, y, qid, bounds), [("v", _dask(Xv, flat, qv, vbounds))]
        )
    )
    assert dist == local
    # a set with graded queries: no warning, also when its weights (which metrics
    # ignore, as locally) are zero on all but one document of each query
    w = np.zeros(nv)
    w[np.unique(qv, return_index=True)[1]] = 1.0
    assert not _blind_warnings(
        lambda: ldask.train(
            client, params, _dask(X, y, qid, bounds), [("v", _dask(Xv, yv, qv, vbounds, w))]
        )
    )
    assert not _blind_warnings(
        lambda: ltrboost.train(
            params,
            make_dataset(X, y, qid=qid),
            [("v", make_dataset(Xv, yv, qid=qv, sample_weight=w))],
        )
    )

"""Dask does what the local API does.

``ltrboost.dask.train`` warns where ``ltrboost.train`` does: a model whose every tree
is one leaf (naming the cause), a ``min_samples_leaf`` that leaves no node a split, a
``colsample_bytree`` that leaves most trees without a varying column.  These trained
constant models silently on Dask.  ``DaskRanker.fit`` checks ``n_estimators`` of a warm
start and names its validation sets as ``Ranker.fit`` does.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

import ltrboost  # noqa: E402
from ltrboost import dask as ldask  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402

FAST = dict(n_estimators=2, max_leaf_nodes=4, min_samples_leaf=3, n_threads=1)


def _data(n_queries=30):
    return make_ranking(n_queries=n_queries, docs_per_query=(5, 15), n_features=5, random_state=0)


def _dask(X, y, qid, w=None):
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    cut = int(starts[len(starts) // 2])
    c = (cut, len(qid) - cut)
    return ldask.DaskData(
        da.from_array(X, chunks=(c, X.shape[1])),
        da.from_array(y, chunks=(c,)),
        da.from_array(qid, chunks=(c,)),
        None if w is None else da.from_array(w, chunks=(c,)),
    )


def _messages(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def _both(params, X, y, qid, client, w=None):
    """The warnings of a local and of a Dask run on the same data."""
    local = _messages(
        lambda: ltrboost.train(params, ltrboost.make_dataset(X, y, qid=qid, sample_weight=w))
    )
    dist = _messages(lambda: ldask.train(client, params, _dask(X, y, qid, w)))
    return local, dist


def _ours(msgs):
    return sorted(m for m in msgs if "one leaf" in m or "min_samples_leaf" in m or "colsample" in m)


@pytest.mark.parametrize("objective", ["lambdamart", "mart", "ranknet", "yetirank"])
def test_equal_labels_warn_as_locally(client, objective):
    X, y, qid = _data()
    y = np.ones_like(y)
    local, dist = _both(dict(FAST, objective=objective), X, y, qid, client)
    assert any("every training label is 1" in m for m in _ours(local))
    assert _ours(dist) == _ours(local)


def test_one_grade_queries_warn_for_a_pairwise_loss(client):
    X, y, qid = _data()
    y = (qid % 2).astype(np.float64)  # each query one grade, the set two
    local, dist = _both(dict(FAST, objective="lambdamart"), X, y, qid, client)
    assert any("no query holds two documents" in m for m in _ours(local))
    assert _ours(dist) == _ours(local)


def test_zero_weight_documents_count_for_nothing(client):
    X, y, qid = _data()
    w = np.where(y == y.max(), 0.0, 1.0)
    y = np.where(w > 0, 1.0, y)  # the only other grades have weight 0
    local, dist = _both(dict(FAST, objective="mart"), X, y, qid, client, w)
    assert any("of positive weight" in m for m in _ours(local))
    assert _ours(dist) == _ours(local)


def test_min_samples_leaf_above_half_warns(client):
    X, y, qid = _data()
    p = dict(FAST, objective="lambdamart", min_samples_leaf=len(y))
    local, dist = _both(p, X, y, qid, client)
    assert any("min_samples_leaf" in m for m in _ours(local))
    assert _ours(dist) == _ours(local)


def test_colsample_missing_varying_columns_warns(client):
    X, y, qid = _data()
    X = np.hstack([X[:, :1], np.zeros((X.shape[0], 40))])  # 1 varying column of 41
    p = dict(FAST, objective="lambdamart", colsample_bytree=0.05)
    local, dist = _both(p, X, y, qid, client)
    assert any("colsample_bytree" in m for m in _ours(local))
    assert _ours(dist) == _ours(local)


def test_ordinary_data_do_not_warn(client):
    X, y, qid = _data()
    local, dist = _both(dict(FAST, objective="lambdamart"), X, y, qid, client)
    assert _ours(local) == _ours(dist) == []


@pytest.mark.parametrize(
    ("n_estimators", "needle"),
    [
        (2.5, "n_estimators=2.5 must be an integer"),  # was 2 rounds added
        (True, "n_estimators=True must be an integer"),  # was 1
        (0, "n_estimators=0 must be >= 1"),  # was no round, silently
        (None, "n_estimators=None is not allowed"),  # was a TypeError from int()
    ],
)
def test_warm_start_checks_n_estimators_as_given(client, n_estimators, needle):
    X, y, qid = _data()
    first = ltrboost.train(dict(FAST, objective="lambdamart"), ltrboost.make_dataset(X, y, qid=qid))
    d = _dask(X, y, qid)
    r = ldask.DaskRanker(client=client, **dict(FAST, n_estimators=n_estimators))
    with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
        r.fit(d.X, d.y, qid=d.qid, init_model=first)


def test_an_eval_name_0_is_kept(client):
    X, y, qid = _data()
    d = _dask(X, y, qid)
    r = ldask.DaskRanker(client=client, **FAST)
    r.fit(d.X, d.y, qid=d.qid, eval_set=[(d.X, d.y, d.qid)], eval_names=[0])
    assert list(r.evals_result_) == ["0"]  # was valid_0: 0 is falsy

"""objective="xendcg" as an outside user tries it (adversarial pass 6).

A training set where no query holds two documents of different labels (every label 0,
or one grade per query) leaves every other ranking loss nothing to learn: its trees are
one leaf and training warns that the model is constant.  XE-NDCG still has gradients
there (its target ``p ~ 2^y - gamma`` is the random ``gamma`` alone), so its trees fit
that noise and, without a warning, the user got a model that looks trained and ranks
at random.  It warns now, locally and on Dask alike; data with graded queries do not.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ltrboost
from ltrboost import Ranker
from ltrboost.datasets import make_ranking

FAST = dict(objective="xendcg", n_estimators=3, max_leaf_nodes=4, min_samples_leaf=3, n_threads=1)


def _data(n_queries=30):
    return make_ranking(n_queries=n_queries, docs_per_query=(5, 15), n_features=5, random_state=0)[
        :3
    ]


def _messages(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def _noise(msgs) -> list[str]:
    return [m for m in msgs if "random" in m and "xendcg" in m]


@pytest.mark.parametrize("labels", ["all zero", "one grade per query"])
def test_labels_without_a_graded_query_warn_that_the_model_is_noise(labels):
    X, y, qid = _data()
    y = np.zeros_like(y) if labels == "all zero" else (qid % 3).astype(np.float64)
    msgs = _messages(lambda: Ranker(**FAST).fit(X, y, qid=qid))
    noise = _noise(msgs)
    assert len(noise) == 1, msgs
    assert "no query holds two documents of different labels" in noise[0]
    assert "\n" not in noise[0]


def test_graded_queries_of_zero_weight_only_warn_of_positive_weight():
    X, y, qid = _data()
    y = (qid % 3).astype(np.float64)
    w = np.ones_like(y)
    first = np.flatnonzero(qid == qid[0])
    y[first[0]] = 4.0  # the only graded query's other grade ...
    w[first[0]] = 0.0  # ... has weight 0
    noise = _noise(_messages(lambda: Ranker(**FAST).fit(X, y, qid=qid, sample_weight=w)))
    assert len(noise) == 1
    assert "of positive weight" in noise[0]


def test_graded_data_do_not_warn():
    X, y, qid = _data()
    assert _noise(_messages(lambda: Ranker(**FAST).fit(X, y, qid=qid))) == []
    # one graded query is enough: the others' noise averages out against it
    y2 = (qid % 3).astype(np.float64)
    first = np.flatnonzero(qid == qid[0])
    y2[first[0]] = 4.0
    assert _noise(_messages(lambda: Ranker(**FAST).fit(X, y2, qid=qid))) == []


def test_other_objectives_keep_their_constant_model_warning():
    X, y, qid = _data()
    y = (qid % 3).astype(np.float64)
    msgs = _messages(lambda: Ranker(**dict(FAST, objective="lambdamart")).fit(X, y, qid=qid))
    assert _noise(msgs) == []
    assert any("every tree is one leaf" in m for m in msgs)


def test_dask_warns_as_locally(client):
    da = pytest.importorskip("dask.array")
    from ltrboost import dask as ldask

    X, y, qid = _data()
    y = (qid % 3).astype(np.float64)
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    cut = int(starts[len(starts) // 2])
    c = (cut, len(qid) - cut)
    dd = ldask.DaskData(
        da.from_array(X, chunks=(c, X.shape[1])),
        da.from_array(y, chunks=(c,)),
        da.from_array(qid, chunks=(c,)),
    )
    local = _noise(_messages(lambda: ltrboost.train(FAST, ltrboost.make_dataset(X, y, qid=qid))))
    dist = _noise(_messages(lambda: ldask.train(client, FAST, dd)))
    assert len(local) == 1
    assert dist == local


# --- coverage (passed before): every export consumer, as for the other objectives ----


@pytest.mark.parametrize("nan", [True, False], ids=["nan", "dense"])
def test_every_export_consumer_agrees(nan, tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "export"))
    import test_export as T

    b, X, qid = T.model("xendcg", nan)
    assert b.objective == "xendcg"
    T.check_all(b, X, qid, tmp_path)

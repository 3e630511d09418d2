"""Adversarial pass 4 over ``ltrboost.dask`` (advdask5): regrouped data when training
fails, the rows that errors found on a shard name, sparse Dask arrays, a missing client.

One in-process ``LocalCluster`` (conftest's ``client``: 2 workers, 1 thread each);
small data, few trees.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from ltrboost import dask as ldask  # noqa: E402
from ltrboost.dataset import LTRInputError  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402

FAST = dict(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=3, n_threads=1)


def _data(seed=0, n_queries=20):
    X, y, qid = make_ranking(
        n_queries=n_queries, docs_per_query=(5, 12), n_features=4, random_state=seed
    )[:3]
    return X, y, qid


def _darr(a, chunks):
    return da.from_array(a, chunks=(tuple(chunks), *a.shape[1:]))


def _dask(X, y, qid, chunks):
    return ldask.DaskData(_darr(X, chunks), _darr(y, chunks), _darr(qid, chunks))


def _even(n, n_parts):
    """Row counts of ``n_parts`` partitions of about equal rows (queries cut)."""
    return np.diff([n * k // n_parts for k in range(n_parts + 1)])


def _interleaved(X, y, qid, n_parts):
    """Rows dealt round-robin: every query in every partition (the hash regroup)."""
    order = np.argsort(np.arange(len(y)) % n_parts, kind="stable")
    return X[order], y[order], qid[order]


def _left_on_workers(client, mine) -> tuple[int, int]:
    """(actors, tasks) the cluster still holds, once releases have gone through, not
    counting the user's own (``mine``: a prefix of their keys)."""
    cluster = client.cluster
    deadline = time.monotonic() + 5
    while True:
        held = (
            sum(len(w.state.actors) for w in cluster.workers.values()),
            sum(not str(k).startswith(mine) for k in cluster.scheduler.tasks),
        )
        if held == (0, 0) or time.monotonic() > deadline:
            return held
        time.sleep(0.05)


@pytest.mark.parametrize("layout", ["boundary cuts", "interleaved"])
@pytest.mark.parametrize("failure", ["validation width", "label on a shard"])
def test_a_failed_training_after_regrouping_keeps_the_clients_other_futures(
    client, layout, failure
):
    """Cancelling the input partitions at the end of a failed training made the
    scheduler visit the regrouping's pieces, which no client wants any more but which
    live on while the partitions made from them do: distributed's scheduler failed an
    assertion (``assert ts.who_wants`` in ``stimulus_cancel``) and dropped the
    client's connection, cancelling every future the client held (the user's
    persisted data too) and, at times, the next training's."""
    X, y, qid = _data(seed=1)
    if layout == "interleaved":
        X, y, qid = _interleaved(X, y, qid, 3)
    chunks = _even(len(y), 3)
    mine = client.submit(np.arange, 5, pure=False)  # the user's own future
    assert mine.result().sum() == 10
    valid = []
    if failure == "validation width":
        valid = [("v", _dask(X[:, :3], y, qid, chunks))]
    else:
        y = y.copy()
        y[len(y) // 2] = 40  # too large for the exponential gain: found on a shard
    with pytest.raises(LTRInputError) as caught:
        ldask.train(client, dict(FAST, objective="lambdamart"), _dask(X, y, qid, chunks), valid)
    del caught
    time.sleep(0.3)  # the scheduler's answer to the cancellation
    assert mine.status == "finished"
    assert mine.result().sum() == 10
    assert _left_on_workers(client, "arange") == (0, 0)
    X, y, qid = _data(seed=2)
    assert ldask.train(client, FAST, _dask(X, y, qid, _even(len(y), 3))).n_iterations == 3

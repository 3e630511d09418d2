"""Dask training checks the whole training set where local training does.

* A custom objective's "hess is 0 for every document" refusal: on Dask each worker
  checked its own shard, so a shard whose hessians are all 0 stopped training that
  runs locally (the other shard's hessians are not).  Now the shards' flags are
  reduced on the driver: Dask refuses exactly when local training refuses.
* ``split_criterion="ole"`` with ``pair_method="all"``: local training refuses, before
  round 1, more label pairs than ``$LTRBOOST_MAX_OLE_PAIRS``; each Dask shard counted
  only its own (no refusal when every shard is under the limit, or a refusal in round 1
  naming the shard's query number, not the query id).  Now the per-query counts of all
  partitions are summed before the shards are made, with the local message.
* A worker lost while the shards are set up (before round 1): training stopped; the
  set-up is now made again on the remaining workers (a warning says so), giving the
  model of a run on those workers.

In-process ``LocalCluster`` (the module's ``client``: 2 workers, 1 thread each), a
cluster of its own where a worker is closed; small data, few trees.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

import ltrboost  # noqa: E402
from ltrboost import dask as ldask  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402
from ltrboost.params import ParameterError  # noqa: E402

FAST = dict(n_estimators=4, max_leaf_nodes=4, min_samples_leaf=3, n_threads=1)


def _data(seed=0, n_queries=20):
    return make_ranking(
        n_queries=n_queries, docs_per_query=(5, 15), n_features=5, random_state=seed
    )


def _cut(qid) -> int:
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    return int(starts[len(starts) // 2])


def _dask(X, y, qid):
    """Two partitions at a query boundary: one shard each on the 2-worker cluster."""
    cut = _cut(qid)
    c = (cut, len(qid) - cut)
    return ldask.DaskData(
        da.from_array(X, chunks=(c, X.shape[1])),
        da.from_array(y, chunks=(c,)),
        da.from_array(qid, chunks=(c,)),
    )


def _same_model(local, dist, X):
    assert len(local.trees) == len(dist.trees)
    for a, b in zip(local.trees, dist.trees, strict=True):
        np.testing.assert_array_equal(a["feature_idx"], b["feature_idx"])
        np.testing.assert_array_equal(a["bin_threshold"], b["bin_threshold"])
        np.testing.assert_allclose(b["value"], a["value"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)


# ----------------------------------------------------- custom objective's curvature


def shifted_squared(scores, labels, query_offsets):
    """grad everywhere, hess only on the documents of positive label."""
    return scores - labels - 0.5, (labels > 0).astype(np.float64)


def no_curvature(scores, labels, query_offsets):
    return scores - labels - 0.5, np.zeros_like(scores)


def test_a_shard_without_curvature_trains_as_locally(client):
    """The first shard's documents are all of label 0 (hess 0), the second's are not:
    locally the round's hessians are not all 0 and training runs; Dask refused it."""
    X, y, qid = _data(seed=1)
    y = y.copy()
    y[: _cut(qid)] = 0.0
    assert (y[_cut(qid) :] > 0).any()
    params = dict(FAST, objective=shifted_squared)
    local = ltrboost.train(params, ltrboost.make_dataset(X, y, qid=qid))
    dist = ldask.train(client, params, _dask(X, y, qid))
    _same_model(local, dist, X)


def test_no_curvature_anywhere_is_refused_as_locally(client):
    X, y, qid = _data(seed=1)
    params = dict(FAST, objective=no_curvature)
    refused = r"\(round 1\): hess is 0 for every document while grad is not"
    with pytest.raises(ValueError, match=refused) as local:
        ltrboost.train(params, ltrboost.make_dataset(X, y, qid=qid))
    with pytest.raises(ValueError, match=refused) as dist:
        ldask.train(client, params, _dask(X, y, qid))
    assert str(dist.value) == str(local.value)


# ------------------------------------------------------ OLE pair_method="all" limit

OLE_ALL = dict(FAST, objective="ranknet", split_criterion="ole", pair_method="all", n_estimators=2)


def _ole_data():
    """Query ids that are not the query numbers (the message names the id)."""
    X, y, qid = _data(seed=3)
    return X, y, qid * 10 + 1000


def _label_pairs(y, qid):
    total, per_shard = 0, [0, 0]
    cut = _cut(qid)
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        yq = y[rows]
        n = (len(yq) ** 2 - sum(int((yq == g).sum()) ** 2 for g in np.unique(yq))) // 2
        total += n
        per_shard[int(rows[0] >= cut)] += n
    return total, per_shard


@pytest.mark.parametrize("over", ["the whole set only", "a shard too"])
def test_ole_all_pairs_over_the_limit_are_refused_up_front_as_locally(client, monkeypatch, over):
    X, y, qid = _ole_data()
    total, per_shard = _label_pairs(y, qid)
    # every shard under the limit and the set over it, or the first shard over it too
    limit = max(per_shard) if over == "the whole set only" else per_shard[0] - 1
    assert total > limit
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", str(limit))
    with pytest.raises(ParameterError) as local:
        ltrboost.train(OLE_ALL, ltrboost.make_dataset(X, y, qid=qid))
    assert f"{total} pairs" in str(local.value)
    steps = []
    gather = ldask._gather

    def recorded(c, futures, timeout, what, workers=None):
        steps.append(what)
        return gather(c, futures, timeout, what, workers)

    monkeypatch.setattr(ldask, "_gather", recorded)
    with pytest.raises(ParameterError) as dist:
        ldask.train(client, OLE_ALL, _dask(X, y, qid))
    assert str(dist.value) == str(local.value)
    assert "fitting the bin edges" not in steps  # before the bins and the shards


def test_ole_all_pairs_under_the_limit_train_as_locally(client, monkeypatch):
    X, y, qid = _ole_data()
    total, _ = _label_pairs(y, qid)
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", str(total))
    local = ltrboost.train(OLE_ALL, ltrboost.make_dataset(X, y, qid=qid))
    dist = ldask.train(client, OLE_ALL, _dask(X, y, qid))
    _same_model(local, dist, X)


# ------------------------------------------------------- a worker lost at set-up


@contextlib.contextmanager
def _own_cluster():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    try:
        yield cluster, client
    finally:
        client.close()
        cluster.close()


def _close_worker(cluster, client, address) -> None:
    name = next(k for k, w in cluster.workers.items() if w.address == address)
    client.sync(cluster.workers[name].close)


@pytest.mark.parametrize("stage", ["finding the constant features", "binning the shards"])
def test_a_worker_lost_during_set_up_is_replaced_by_the_others(monkeypatch, tmp_path, stage):
    """The second shard's worker closes while the shards are set up: the set-up is made
    again on the remaining worker, with a warning, and the model is that of a run on
    that worker alone (shard-independent up to float summation order: the local one)."""
    X, y, qid = _data(seed=5)
    with _own_cluster() as (cluster, client):
        victim = sorted(cluster.scheduler.workers)[1]
        lost = []
        if stage == "finding the constant features":
            gather = ldask._gather

            def closing_gather(c, futures, timeout, what, workers=None):
                if what == stage and not lost:
                    lost.append(victim)
                    _close_worker(cluster, client, victim)
                return gather(c, futures, timeout, what, workers)

            monkeypatch.setattr(ldask, "_gather", closing_gather)
        else:
            wait = ldask._Cluster._wait

            def closing_wait(self, i, fut):
                if self.stage == stage and not lost:
                    lost.append(victim)
                    _close_worker(cluster, client, victim)
                return wait(self, i, fut)

            monkeypatch.setattr(ldask._Cluster, "_wait", closing_wait)
        with pytest.warns(UserWarning, match=r"was lost while the shards were set up") as rec:
            model = ldask.train(client, FAST, _dask(X, y, qid), timeout=30)
        assert lost
        msg = next(str(w.message) for w in rec if "was lost" in str(w.message))
        assert f"worker {victim} (shard 1, partition 1) was lost" in msg
        assert stage in msg
        assert "1 remaining worker" in msg
        monkeypatch.undo()
        # the model of a run on the remaining worker, byte for byte
        again = ldask.train(client, FAST, _dask(X, y, qid), timeout=30)
        model.save_model(tmp_path / "retried.json")
        again.save_model(tmp_path / "again.json")
        assert (tmp_path / "retried.json").read_bytes() == (tmp_path / "again.json").read_bytes()
    local = ltrboost.train(FAST, ltrboost.make_dataset(X, y, qid=qid))
    _same_model(local, model, X)


def test_a_worker_lost_after_round_1_still_stops_training():
    """After round 1 the shards hold scores of the rounds so far: a lost worker stops
    training with the error saying so (checkpoints: env.snapshot())."""
    X, y, qid = _data(seed=5)
    with _own_cluster() as (cluster, client):
        victim = sorted(cluster.scheduler.workers)[1]

        def close(env):
            if env.iteration == 0:
                _close_worker(cluster, client, victim)

        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # no set-up retry announced
            with pytest.raises(ldask.DistributedTrainingError, match=r"was lost \(round 2\)"):
                ldask.train(client, FAST, _dask(X, y, qid), callbacks=[close], timeout=30)


@pytest.mark.slow
def test_a_worker_process_killed_during_set_up_is_replaced():
    """SIGKILL of the second shard's worker process while the constant features are
    found: the set-up is made again (on the survivor, or on it and the nanny's new
    worker), the partitions the dead worker held recomputed by Dask."""
    import os
    import signal

    X, y, qid = _data(seed=6)
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    try:
        client.wait_for_workers(2, timeout=60)
        pids = client.run(os.getpid)
        victim = sorted(pids)[1]
        gather = ldask._gather
        killed = []

        def killing_gather(c, futures, timeout, what, workers=None):
            if what == "finding the constant features" and not killed:
                killed.append(victim)
                os.kill(pids[victim], signal.SIGKILL)
            return gather(c, futures, timeout, what, workers)

        ldask._gather = killing_gather
        try:
            with pytest.warns(UserWarning, match=rf"worker {victim} \(shard 1, partition 1\)"):
                model = ldask.train(client, FAST, _dask(X, y, qid), timeout=60)
        finally:
            ldask._gather = gather
        assert killed
    finally:
        client.close()
        cluster.close()
    local = ltrboost.train(FAST, ltrboost.make_dataset(X, y, qid=qid))
    _same_model(local, model, X)


# ------------------------------------------------- the scheduler's own list of workers


def test_a_failed_scheduler_info_query_is_not_an_empty_cluster(client, monkeypatch):
    """``Client.scheduler_info()`` answers from its periodic cache, whose ``workers`` is
    empty, when its query fails (an OSError it only logs): training said "the Dask
    cluster has no workers" (or called a live worker lost) now and then, under load.
    The workers are asked of the scheduler itself; the model is the one of a run
    whose query did not fail."""
    X, y, qid = _data(seed=3)
    expected = ldask.train(client, FAST, _dask(X, y, qid))
    monkeypatch.setattr(
        type(client), "scheduler_info", lambda self, *a, **k: {"workers": {}, "type": "Scheduler"}
    )
    again = ldask.train(client, FAST, _dask(X, y, qid))
    _same_model(expected, again, X)

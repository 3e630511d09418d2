"""Adversarial pass 5 over ``ltrboost.dask`` under failure: a cluster without workers,
a partition that failed while another was still running, workers killed (SIGKILL of
their process) during training and prediction.

In-process ``LocalCluster``s where no process must die (2 workers, 1 thread each);
the tests that kill a worker process start a ``processes=True`` cluster of their own
and are marked ``slow`` (worker processes take seconds to start on a busy machine).
Small data, few trees.
"""

from __future__ import annotations

import contextlib
import operator
import os
import signal
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from dask import delayed  # noqa: E402

from ltrboost import dask as ldask  # noqa: E402
from ltrboost.dataset import LTRInputError  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402

FAST = dict(n_estimators=6, max_leaf_nodes=4, min_samples_leaf=3, n_threads=1)


def _data(seed=0, n_queries=30):
    return make_ranking(
        n_queries=n_queries, docs_per_query=(5, 15), n_features=5, random_state=seed
    )


def _chunks(qid, n_parts):
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    inner = [int(starts[len(starts) * k // n_parts]) for k in range(1, n_parts)]
    return tuple(np.diff([0, *inner, len(qid)]))


def _dask(X, y, qid, n_parts=2):
    c = _chunks(qid, n_parts)
    return ldask.DaskData(
        da.from_array(X, chunks=(c, X.shape[1])),
        da.from_array(y, chunks=(c,)),
        da.from_array(qid, chunks=(c,)),
    )


_RELEASE = threading.Event()


def _held(a):
    """``a`` once ``_RELEASE`` is set (in-process workers only)."""
    _RELEASE.wait(60)
    return a


def _with_slow_first_partition(X, y, qid, seconds=None):
    """Two partitions; the first one's features take ``seconds`` to compute (stdlib
    functions only, so that worker processes can unpickle the graph), or (None) until
    ``_RELEASE`` is set."""
    c = _chunks(qid, 2)
    if seconds is None:
        head = delayed(_held)(X[: c[0]])
    else:
        head = delayed(operator.getitem)([X[: c[0]], delayed(time.sleep)(seconds)], 0)
    Xd = da.concatenate(
        [
            da.from_delayed(head, shape=(c[0], X.shape[1]), dtype=X.dtype),
            da.from_array(X[c[0] :], chunks=(c[1], X.shape[1])),
        ]
    )
    return ldask.DaskData(Xd, da.from_array(y, chunks=(c,)), da.from_array(qid, chunks=(c,)))


@contextlib.contextmanager
def _cluster(n_workers=2, processes=False):
    cluster = distributed.LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=processes, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    try:
        yield cluster, client
    finally:
        client.close()
        cluster.close()


# --------------------------------------------------------------- no workers, errors


def test_a_cluster_without_workers_is_named_as_such():
    """With no worker in the cluster, training waited ``timeout`` and then said "the
    workers did not answer": there were none to answer."""
    X, y, qid = _data(seed=1)
    with _cluster(n_workers=0) as (_, client):
        t0 = time.monotonic()
        with pytest.raises(
            ldask.DistributedTrainingError,
            match=r"^the training set: the Dask cluster has no workers \(still none after "
            r"timeout=1\.5 s\); start some",
        ):
            ldask.train(client, FAST, _dask(X, y, qid), timeout=1.5)
        assert time.monotonic() - t0 < 15


def test_workers_joining_late_are_waited_for():
    """A cluster whose workers arrive after ``fit`` starts (an adaptive cluster, a
    batch scheduler): training waits for them, within ``timeout``."""
    X, y, qid = _data(seed=2)
    with _cluster(n_workers=0) as (cluster, client):
        threading.Timer(1.0, cluster.scale, (2,)).start()
        model = ldask.train(client, FAST, _dask(X, y, qid), timeout=60)
    assert model.n_iterations == FAST["n_estimators"]


def test_a_failed_partition_is_reported_when_another_outlasts_the_timeout():
    """Partition 1 had failed with its one-line error, partition 0 was still running:
    training waited for it and reported a timeout, hiding the error already known."""
    X, y, qid = _data(seed=3)
    y = y.astype(float)
    y[-3] = np.nan  # in partition 1
    data = _with_slow_first_partition(X, y, qid)
    _RELEASE.clear()
    with _cluster() as (_, client):
        try:
            with pytest.raises(LTRInputError, match=r"^partition 1: row \d+: label y\[\d+\]=nan"):
                ldask.train(client, FAST, data, timeout=4)
        finally:
            _RELEASE.set()


def _any_erred(dask_scheduler) -> bool:
    return any(ts.state == "erred" for ts in dask_scheduler.tasks.values())


@pytest.mark.slow
def test_a_failed_partition_is_reported_at_once_when_no_worker_is_left():
    """Partition 1 failed, then every worker went away (a task killing each worker that
    ran it ends that way too): nothing could finish partition 0, yet training waited
    the whole ``timeout`` and reported it instead of the error."""
    X, y, qid = _data(seed=4)
    y = y.astype(float)
    y[-3] = np.nan
    data = _with_slow_first_partition(X, y, qid, 60.0)
    with _cluster(processes=True) as (cluster, client):
        client.wait_for_workers(2, timeout=60)

        def scale_down():  # once partition 1 has failed
            deadline = time.monotonic() + 30
            while not client.run_on_scheduler(_any_erred) and time.monotonic() < deadline:
                time.sleep(0.1)
            cluster.scale(0)

        threading.Thread(target=scale_down, daemon=True).start()
        t0 = time.monotonic()
        with pytest.raises(LTRInputError, match=r"^partition 1: row \d+: label"):
            ldask.train(client, FAST, data, timeout=50)
        assert time.monotonic() - t0 < 40


# ------------------------------------------------------------------ killed workers


def test_an_unreachable_shard_before_the_scheduler_notices_is_a_clear_error(monkeypatch):
    """A shard's worker killed during a round: the driver's call can fail ("Unable to
    contact Actor's worker", an OSError) before the scheduler has removed the worker,
    and that bare OSError came out of ``train`` (seen with SIGKILL on worker
    processes).  Here the call fails and the worker closes half a second later."""
    from distributed.actor import ActorFuture

    X, y, qid = _data(seed=6)
    with _cluster() as (cluster, client):
        victim = sorted(cluster.scheduler.workers)[1]
        result = ActorFuture.result
        armed = []

        def failing_result(self, timeout=None):
            if armed and armed.pop():
                worker = next(w for w in cluster.workers.values() if w.address == victim)
                threading.Timer(0.5, client.sync, (worker.close,)).start()
                raise OSError("Unable to contact Actor's worker")
            return result(self, timeout)

        monkeypatch.setattr(ActorFuture, "result", failing_result)

        def arm(env):
            if env.iteration == 1:
                armed.append(True)

        with pytest.raises(
            ldask.DistributedTrainingError,
            match=r"^worker \S+ \(shard 1, partition 1\) was lost \(round 3\); training",
        ):
            ldask.train(client, FAST, _dask(X, y, qid), callbacks=[arm], timeout=30)


def test_an_unreachable_shard_whose_worker_stays_is_a_clear_error(monkeypatch):
    """The call fails and the scheduler still lists the worker: the error names the
    shard that could not be reached, not a bare OSError."""
    from distributed.actor import ActorFuture

    X, y, qid = _data(seed=6)
    with _cluster() as (_, client):
        result = ActorFuture.result
        armed = []

        def failing_result(self, timeout=None):
            if armed and armed.pop():
                raise OSError("Unable to contact Actor's worker")
            return result(self, timeout)

        monkeypatch.setattr(ActorFuture, "result", failing_result)

        def arm(env):
            if env.iteration == 1:
                armed.append(True)

        t0 = time.monotonic()
        with pytest.raises(
            ldask.DistributedTrainingError,
            match=r"^worker \S+ \(shard 0, partition 0\) could not be reached \(round 3\): "
            r"Unable to contact Actor's worker; training stopped",
        ):
            ldask.train(client, FAST, _dask(X, y, qid), callbacks=[arm], timeout=30)
        assert time.monotonic() - t0 < 20
        # the cluster takes the next fit
        ldask.train(client, FAST, _dask(X, y, qid), timeout=30)


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def _n_tasks(dask_scheduler) -> int:
    return len(dask_scheduler.tasks)


@pytest.mark.slow
def test_killed_worker_processes():
    """SIGKILL of a worker process: between rounds, a clear error naming the worker and
    the cluster usable at once for a fit giving the model of a run without failure;
    while the input partitions are computed or during ``predict``, Dask recomputes the
    lost pieces and the result is that of a run without failure."""
    X, y, qid = _data(seed=5)
    with _cluster(processes=True) as (_, client):
        client.wait_for_workers(2, timeout=60)
        d = _dask(X, y, qid, 4)
        ranker = ldask.DaskRanker(client=client, timeout=60, **FAST).fit(d.X, d.y, qid=d.qid)
        ref = ranker.booster_
        ref_scores = ref.predict(X)

        pids = client.run(os.getpid)
        victim = sorted(pids)[1]

        def kill(env):
            if env.iteration == 1:
                _kill(pids[victim])

        t0 = time.monotonic()
        with pytest.raises(
            ldask.DistributedTrainingError,
            match=r"^worker \S+ \(shard 1, partitions 2-3\) was lost \(round \d\); training "
            "stopped",
        ):
            ranker.fit(d.X, d.y, qid=d.qid, callbacks=[kill])
        assert time.monotonic() - t0 < 20
        assert ranker.booster_ is ref  # the model fitted before is kept
        deadline = time.monotonic() + 5  # the fit's tasks and actors, cancelled
        while client.run_on_scheduler(_n_tasks) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert client.run_on_scheduler(_n_tasks) == 0
        again = ldask.train(client, FAST, _dask(X, y, qid, 4), timeout=60)
        np.testing.assert_array_equal(again.predict(X), ref_scores)

        # killed while the input partitions are validated: recomputed elsewhere
        client.wait_for_workers(2, timeout=60)
        pids = client.run(os.getpid)
        gather = ldask._gather
        killed = []

        def killing_gather(c, futures, timeout, what, workers=None):
            if not killed:
                killed.append(1)
                _kill(pids[sorted(pids)[1]])
            return gather(c, futures, timeout, what, workers)

        ldask._gather = killing_gather
        try:
            model = ldask.train(client, FAST, _dask(X, y, qid, 4), timeout=60)
        finally:
            ldask._gather = gather
        assert killed
        np.testing.assert_array_equal(model.predict(X), ref_scores)

        # killed during predict: the lost chunks are recomputed
        client.wait_for_workers(2, timeout=60)
        pids = client.run(os.getpid)
        d = _dask(X, y, qid, 4)
        np.testing.assert_array_equal(ranker.predict(d.X).compute(), ref_scores)
        lazy = ranker.predict(d.X)
        threading.Timer(0.05, _kill, (pids[sorted(pids)[1]],)).start()
        np.testing.assert_array_equal(lazy.compute(), ref_scores)

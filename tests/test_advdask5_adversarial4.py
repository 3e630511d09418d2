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

import ltrboost  # noqa: E402
from ltrboost import dask as ldask  # noqa: E402
from ltrboost.dataset import LTRInputError, make_dataset  # noqa: E402
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


# partition 0 holds queries 1 and 2 interleaved; query 2 goes on in partition 1
_QID = np.array([1, 2, 1, 2, 1, 3, 2, 3, 4, 4, 3])
_CHUNKS = (5, 6)


@pytest.mark.parametrize("bad", [3, 4, 6, 7, 10])
def test_an_error_found_on_a_shard_names_the_row_the_user_gave(client, bad):
    """A label that only a shard refuses (too large for the exponential gain) named
    its row in the partition's rows grouped by qid, and after a cut query moved, in
    the partition it moved to: input row 3 of partition 0 was "partition 0: row 4",
    row 1 of partition 1 (query 2, moved) "partition 0: row 3"."""
    X = np.random.default_rng(0).normal(size=(len(_QID), 3))
    y = np.zeros(len(_QID))
    y[0] = 1.0
    y[bad] = 40.0
    part, row = (0, bad) if bad < _CHUNKS[0] else (1, bad - _CHUNKS[0])
    p = dict(FAST, objective="lambdamart", min_samples_leaf=1)
    with pytest.raises(LTRInputError, match=rf"^partition {part}: row {row}: label 40 is too"):
        ldask.train(client, p, _dask(X, y, _QID, _CHUNKS))
    with pytest.raises(LTRInputError, match=rf"^row {bad}: label 40 is too"):  # the same row
        ltrboost.train(p, make_dataset(X, y, qid=_QID))
    # in a validation set: prefixed with its name
    y[bad] = 0.0
    yv = y.copy()
    yv[bad] = 40.0
    valid = [("v", _dask(X, yv, _QID, _CHUNKS))]
    match = rf"^validation set 'v': partition {part}: row {row}: label 40 is too"
    with pytest.raises(LTRInputError, match=match):
        ldask.train(client, dict(p, eval_metric="ndcg@3"), _dask(X, y, _QID, _CHUNKS), valid)


def test_sparse_dask_arrays_train_and_predict(client):
    """Training took a Dask array of SciPy sparse chunks (each densified on its worker),
    but ``predict`` failed when computed: "setting an array element with a
    sequence" (``np.asarray`` of a sparse chunk)."""
    sp = pytest.importorskip("scipy.sparse")
    X, y, qid = _data(seed=5)
    X[X < 0.3] = 0.0
    chunks = _even(len(y), 3)
    dX = da.from_array(sp.csr_matrix(X), chunks=(tuple(chunks), X.shape[1]), asarray=False)
    model = ldask.DaskRanker(client=client, **FAST).fit(
        dX, _darr(y, chunks), qid=_darr(qid, chunks)
    )
    local = ltrboost.Ranker(**FAST).fit(sp.csr_matrix(X), y, qid=qid)
    pred = model.predict(dX)
    assert pred.chunks == ((*chunks,),)
    np.testing.assert_allclose(pred.compute(), local.predict(X), rtol=1e-9, atol=1e-12)


def test_dask_ranker_without_any_client_says_so_in_one_line(monkeypatch):
    """``client=None`` with no default client raised distributed's four-line
    "No clients found / Start a client and point it to the scheduler address ..."."""
    # none is current, even where another test module's client still is
    monkeypatch.setattr(distributed.client, "_get_global_client", lambda: None)
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, qid = _data(seed=6)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])]).assign(qid=qid, y=y)
    data = dd.from_pandas(frame, npartitions=2, sort=False)
    with pytest.raises(ValueError, match=r"^DaskRanker\.fit needs a Dask client") as caught:
        ldask.DaskRanker(**FAST).fit(data, "y")
    assert "\n" not in str(caught.value)
    assert "client=" in str(caught.value)

"""Adversarial pass 3 over ``ltrboost.dask``: a client closed during setup, what a
failed training leaves on the workers, ``stats=`` of a warm start.

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


def _data(seed=0, n_queries=30):
    return make_ranking(
        n_queries=n_queries, docs_per_query=(5, 15), n_features=5, random_state=seed
    )


def _dask(X, y, qid, n_parts=2):
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    inner = [int(starts[len(starts) * k // n_parts]) for k in range(1, n_parts)]
    c = tuple(np.diff([0, *inner, len(qid)]))
    return ldask.DaskData(
        da.from_array(X, chunks=(c, X.shape[1])),
        da.from_array(y, chunks=(c,)),
        da.from_array(qid, chunks=(c,)),
    )


def _own_client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    return cluster, distributed.Client(cluster)


@pytest.mark.parametrize(
    "stage", ["the training set", "finding the constant features", "fitting the bin edges"]
)
def test_a_client_closed_during_setup_is_a_distributed_training_error(monkeypatch, stage):
    """The rounds said "the Dask client or cluster went away"; a client closed during
    setup cancels its futures, and training failed with distributed's
    ``FuturesCancelledError: ... cancelled for reason: unknown``."""
    cluster, client = _own_client()
    gather = ldask._gather

    def closing_gather(c, futures, timeout, what, workers=None):
        if what == stage:
            client.close()
        return gather(c, futures, timeout, what, workers)

    monkeypatch.setattr(ldask, "_gather", closing_gather)
    try:
        X, y, qid = _data()
        with pytest.raises(
            ldask.DistributedTrainingError, match=rf"went away \({stage}\); training stopped"
        ):
            ldask.train(client, FAST, _dask(X, y, qid), timeout=30)
    finally:
        client.close()
        cluster.close()


def test_a_client_closed_while_the_shards_are_made_is_a_distributed_training_error(
    monkeypatch,
):
    cluster, client = _own_client()
    wait = ldask._Cluster._wait

    def closing_wait(self, i, fut):
        if self.stage == "binning the shards":
            client.close()
        return wait(self, i, fut)

    monkeypatch.setattr(ldask._Cluster, "_wait", closing_wait)
    try:
        X, y, qid = _data()
        with pytest.raises(ldask.DistributedTrainingError, match=r"went away \(binning"):
            ldask.train(client, FAST, _dask(X, y, qid), timeout=30)
    finally:
        client.close()
        cluster.close()


def _left_on_workers(client) -> tuple[int, int]:
    """(actors, tasks) the cluster still holds, once releases have gone through."""
    cluster = client.cluster
    deadline = time.monotonic() + 5
    while True:
        held = (
            sum(len(w.state.actors) for w in cluster.workers.values()),
            len(cluster.scheduler.tasks),
        )
        if held == (0, 0) or time.monotonic() > deadline:
            return held
        time.sleep(0.05)


def test_a_failed_training_leaves_no_shard_on_the_workers(client):
    """A traceback kept alive (an interactive session keeps the last one; here the
    caught error) held the shard actors: every worker kept its binned rows until
    the error was dropped, and a second try needed the memory twice."""
    X, y, qid = _data(seed=1)

    def stop(env):
        if env.iteration == 1:
            raise KeyboardInterrupt  # as a user interrupting a long fit

    with pytest.raises(KeyboardInterrupt) as caught:
        ldask.train(client, FAST, _dask(X, y, qid), callbacks=[stop])
    assert caught.value.__traceback__ is not None
    assert _left_on_workers(client) == (0, 0)


def test_a_bad_validation_set_leaves_no_training_rows_on_the_workers(client):
    X, y, qid = _data(seed=2)
    Xv, yv, qv = _data(seed=3, n_queries=8)
    yv = yv.copy()
    yv[4] = -1.0
    with pytest.raises(LTRInputError, match=r"validation set 'v': partition \d") as caught:
        ldask.train(client, FAST, _dask(X, y, qid), [("v", _dask(Xv, yv, qv))])
    assert caught.value.__traceback__ is not None
    assert _left_on_workers(client) == (0, 0)


def test_a_successful_training_leaves_nothing_on_the_workers(client):
    X, y, qid = _data(seed=4)
    ldask.train(client, FAST, _dask(X, y, qid))
    assert _left_on_workers(client) == (0, 0)


def test_stats_of_a_warm_start_count_the_trees_it_grew(client):
    """``stats`` is the traffic of this run's rounds; ``trees`` counted the init
    model's trees too, so traffic per tree came out too small."""
    X, y, qid = _data(seed=5)
    first = ldask.train(client, dict(FAST, n_estimators=2), _dask(X, y, qid))
    stats: dict = {}
    ldask.train(client, dict(FAST, n_estimators=5), _dask(X, y, qid), init_model=first, stats=stats)
    assert stats["trees"] == 3
    fresh: dict = {}
    ldask.train(client, dict(FAST, n_estimators=3), _dask(X, y, qid), stats=fresh)
    assert stats["round_trips"] == fresh["round_trips"]


def _frame_ranker(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, qid = _data(seed=6)
    df = pd.DataFrame(X, columns=[f"f{k}" for k in range(X.shape[1])])
    df = df.assign(qid=qid, label=y, w=np.linspace(0.5, 2.0, len(y)))
    ddf = dd.from_pandas(df, npartitions=3, sort=False)
    return ldask.DaskRanker(client=client, **FAST).fit(ddf.drop(columns="w"), "label"), ddf


def test_dask_ranker_score_takes_column_names_as_fit(client):
    """``fit(data, "label")`` takes the labels by column name; ``score(data, "label")``
    failed with "y must be 1-D of shape (n_samples,), got shape ()"."""
    model, ddf = _frame_ranker(client)
    X = ddf.drop(columns=["label", "w"])
    assert model.score(ddf.drop(columns="w"), "label") == model.score(X, ddf["label"])
    assert model.score(ddf.drop(columns="w"), "label", qid="qid") == model.score(
        X.drop(columns="qid"), ddf["label"], qid=ddf["qid"]
    )
    weighted = model.score(X, ddf["label"], sample_weight=ddf["w"])
    assert model.score(ddf, "label", sample_weight="w") == weighted
    with pytest.raises(LTRInputError, match=r"^y='grade' is not a column of X$"):
        model.score(ddf, "grade")


def test_dask_ranker_predict_warns_as_ranker_for_a_frame_after_an_array_fit(client):
    """Fitted on arrays, the model takes a frame's columns by position: Ranker.predict
    warns so (scikit-learn's warning); DaskRanker.predict said nothing."""
    X, y, qid = _data(seed=7)
    model = ldask.DaskRanker(client=client, **FAST).fit(
        _dask(X, y, qid).X, _dask(X, y, qid).y, qid=_dask(X, y, qid).qid
    )
    _, ddf = _frame_ranker(client)
    frame = ddf.drop(columns=["label", "w"])
    with pytest.warns(UserWarning, match="fitted without feature names") as local:
        expected = model.to_local().predict(frame.compute())
    with pytest.warns(UserWarning, match="fitted without feature names") as dist:
        got = model.predict(frame).compute()
    assert [str(w.message) for w in dist] == [
        str(w.message).replace("Ranker", "DaskRanker") for w in local
    ]
    np.testing.assert_allclose(got.to_numpy(), expected)

"""Adversarial pass 11 over ``ltrboost.dask`` (advdask7): where ``DaskRanker.score``'s
warnings point, and a fit given a client that is already closed.

One in-process ``LocalCluster`` (conftest's ``client``: 2 workers, 1 thread each);
small data, few trees.
"""

from __future__ import annotations

import warnings

import pytest

distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

from ltrboost import dask as ldask  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402
from ltrboost.metrics import get_metric  # noqa: E402

FAST = dict(n_estimators=2, max_leaf_nodes=4, min_samples_leaf=3, n_threads=1)


def _frame(n_partitions=2):
    X, y, qid = make_ranking(n_queries=12, docs_per_query=(4, 9), n_features=3, random_state=0)[:3]
    df = pd.DataFrame(X, columns=["f0", "f1", "f2"])
    df["label"], df["qid"] = y, qid
    return dd.from_pandas(df, npartitions=n_partitions)


def _caught(fn) -> list:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return caught


def _at_this_file(caught, needle: str) -> None:
    hits = [w for w in caught if needle in str(w.message)]
    assert hits, [str(w.message) for w in caught]
    for w in hits:  # the caller's line, as Ranker.score's warnings give it
        assert w.filename == __file__, (w.filename, w.lineno, str(w.message))


def test_score_feature_name_warnings_point_at_the_caller(client):
    """A frame scored by a model fitted on arrays (and an array by one fitted on a
    frame) warned at ``dask.py`` (DaskRanker.score calls Ranker.score: one frame more
    than the fixed ``stacklevel`` counted), not at the user's ``score`` line."""
    ddf = _frame()
    feats = ddf[["f0", "f1", "f2"]]
    arrays = ldask.DaskRanker(client=client, **FAST).fit(
        feats.to_dask_array(lengths=True),
        ddf["label"].to_dask_array(lengths=True),
        qid=ddf["qid"].to_dask_array(lengths=True),
    )
    caught = _caught(lambda: arrays.score(feats, ddf["label"], qid=ddf["qid"]))
    _at_this_file(caught, "fitted without feature names")
    named = ldask.DaskRanker(client=client, **FAST).fit(feats, ddf["label"], qid=ddf["qid"])
    caught = _caught(
        lambda: named.score(
            feats.to_dask_array(lengths=True),
            ddf["label"].to_dask_array(lengths=True),
            qid=ddf["qid"].to_dask_array(lengths=True),
        )
    )
    _at_this_file(caught, "fitted with feature names")


def test_score_qid_column_and_flat_metric_warnings_point_at_the_caller(client):
    ddf = _frame()
    r = ldask.DaskRanker(client=client, **FAST).fit(
        ddf[["f0", "f1", "f2"]], ddf["label"], qid=ddf["qid"]
    )
    caught = _caught(
        lambda: r.score(ddf[["f0", "f1", "f2", "qid"]], ddf["label"], qid=ddf["qid"] + 1)
    )
    _at_this_file(caught, "X has a column named 'qid' that differs")
    never = get_metric("map", relevance_threshold=10)  # no label reaches it
    caught = _caught(
        lambda: r.score(ddf[["f0", "f1", "f2"]], ddf["label"], qid=ddf["qid"], metric=never)
    )
    _at_this_file(caught, "counts no document of the data given to score relevant")


def test_a_closed_client_is_named_not_a_distributed_error():
    """A fit given a closed client (or one whose cluster was closed, which closes an
    in-process client) failed with distributed's "Client is closed. Can't send
    update-graph message.", a ``ClosedClientError`` the documented
    ``DistributedTrainingError`` does not catch."""
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    c = distributed.Client(cluster)
    ddf = _frame()
    cluster.close()
    c.close()
    with pytest.raises(ldask.DistributedTrainingError, match="client is closed") as e:
        ldask.DaskRanker(client=c, **FAST).fit(
            ddf[["f0", "f1", "f2", "qid"]], ddf["label"], qid="qid"
        )
    assert "\n" not in str(e.value)
    data = ldask.DaskData(ddf[["f0", "f1", "f2"]], ddf["label"], ddf["qid"])
    with pytest.raises(ldask.DistributedTrainingError, match="client is closed"):
        ldask.train(c, FAST, data)

"""Regrouping cut queries on Dask: only the rows of the few cut queries move.

Partitions read from sorted files, made by ``repartition`` or ``from_pandas`` cut only
the queries at their boundaries.  ``_queries_whole`` regrouped every row of such data by
a hash of the qid, P² small tasks for P partitions (a million at P = 1000).  Now each
cut query goes whole to the first partition holding it, the other rows stay where they
are: the rows come out in the order of the partitions concatenated, grouped by qid as
local training groups them, in O(P) tasks; interleaved data still takes the hash
regroup.

One in-process ``LocalCluster`` (conftest's ``client``: 2 workers, 1 thread each);
small data, few trees.
"""

from __future__ import annotations

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

import ltrboost  # noqa: E402
from ltrboost import dask as ldask  # noqa: E402
from ltrboost.dataset import group_by_qid, make_dataset  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402

FAST = dict(n_estimators=3, max_leaf_nodes=6, min_samples_leaf=3, n_threads=1)


def _data(seed=0, n_queries=30):
    X, y, qid = make_ranking(
        n_queries=n_queries, docs_per_query=(5, 15), n_features=5, random_state=seed
    )[:3]
    return X, y, qid


def _even(n, n_parts):
    """Bounds of ``n_parts`` partitions of about equal rows: queries cut at the
    boundaries (what ``repartition`` / ``from_pandas`` do to sorted rows)."""
    return [n * k // n_parts for k in range(n_parts + 1)]


def _darr(a, bounds):
    return da.from_array(a, chunks=(tuple(np.diff(bounds)), *a.shape[1:]))


def _dask(X, y, qid, bounds, w=None):
    return ldask.DaskData(
        _darr(X, bounds),
        _darr(y, bounds),
        _darr(qid, bounds),
        None if w is None else _darr(w, bounds),
    )


class _TaskCounter(distributed.diagnostics.plugin.SchedulerPlugin):
    """The tasks the scheduler was given (each new task goes from released to waiting)."""

    name = "daskregroup4-task-counter"

    def __init__(self):
        self.keys = set()

    def transition(self, key, start, finish, *args, **kwargs):
        if start == "released" and finish == "waiting":
            self.keys.add(key)


def _regroup(client, data, counter=None):
    """``_queries_whole`` on ``data``: the partitions it keeps (gathered) and the number
    of tasks it took (``counter``: a :class:`_TaskCounter`), its first P metas
    included."""
    parts, _ = ldask._input_parts(data)
    futures = client.compute(parts)
    distributed.wait(futures)
    before = None if counter is None else len(counter.keys)
    out, metas = ldask._queries_whole(client, futures, True, "the training set", 60)
    result = client.gather(out)
    n_tasks = None if counter is None else len(counter.keys) - before
    return result, metas, n_tasks


@pytest.fixture
def counter(client):
    plugin = _TaskCounter()
    scheduler = client.cluster.scheduler
    scheduler.add_plugin(plugin, name=plugin.name)
    yield plugin
    scheduler.remove_plugin(name=plugin.name)


def _first_partition(qid, bounds):
    """Each row's cut-query owner: the first partition holding its query."""
    part = np.searchsorted(bounds, np.arange(len(qid)), side="right") - 1
    first = pd.Series(part).groupby(pd.Series(qid)).transform("min").to_numpy()
    return first


def _assert_moved_only_cut_queries(parts, X, y, qid, bounds, w=None):
    """The partitions hold the rows in the order of the input partitions concatenated,
    grouped by qid stably (local training's order), each query in the first
    partition that held it; empty partitions dropped."""
    _, order, _ = group_by_qid(qid)
    order = np.arange(len(qid)) if order is None else order
    owner = _first_partition(qid, bounds)[order]
    kept = [k for k in range(len(bounds) - 1) if (owner == k).any()]
    assert [p["index"] for p in parts] == [(k,) for k in kept]
    for p, k in zip(parts, kept, strict=True):
        rows = order[owner == k]
        np.testing.assert_array_equal(p["X"], X[rows])
        np.testing.assert_array_equal(p["y"], y[rows])
        np.testing.assert_array_equal(p["qid"], qid[rows])
        if w is None:
            assert p["w"] is None
        else:  # weights are kept as float32
            np.testing.assert_array_equal(p["w"], w[rows].astype(p["w"].dtype))


def _assert_same_model(local, dist, X):
    for a, b in zip(local.trees, dist.trees, strict=True):
        np.testing.assert_array_equal(a["feature_idx"], b["feature_idx"])
        np.testing.assert_array_equal(a["bin_threshold"], b["bin_threshold"])
        np.testing.assert_array_equal(a["count"], b["count"])
        leaf = a["is_leaf"] == 1
        np.testing.assert_allclose(b["value"][leaf], a["value"][leaf], rtol=1e-9)
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n_parts", [2, 4, 7])
def test_boundary_cuts_move_only_the_cut_queries(client, n_parts):
    X, y, qid = _data()
    bounds = _even(len(y), n_parts)
    assert len(np.unique(_first_partition(qid, bounds))) == n_parts  # queries are cut
    parts, metas, _ = _regroup(client, _dask(X, y, qid, bounds))
    _assert_moved_only_cut_queries(parts, X, y, qid, bounds)
    assert [m["n"] for m in metas] == [p["y"].shape[0] for p in parts]


def test_boundary_cuts_train_the_local_model_on_the_rows_as_given(client):
    """The regrouped order is local training's on the data as given (no hash order to
    rebuild for the reference)."""
    X, y, qid = _data(seed=3)
    p = dict(FAST, objective="lambdamart")
    dist = ldask.train(client, p, _dask(X, y, qid, _even(len(y), 5)))
    local = ltrboost.train(p, make_dataset(X, y, qid=qid))
    _assert_same_model(local, dist, X)


def test_a_query_over_several_partitions_goes_whole_to_its_first(client):
    """A 60-row query over partitions of 15 rows: the partitions wholly inside it
    become empty and are dropped, the query lands whole in the partition it starts in."""
    X, y, qid = _data(seed=4, n_queries=12)
    big = np.repeat(1000, 60)
    Xb = np.random.default_rng(0).normal(size=(60, X.shape[1]))
    yb = np.random.default_rng(1).integers(0, 3, 60).astype(y.dtype)
    k = int(np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])[6])  # a query start
    X = np.concatenate([X[:k], Xb, X[k:]])
    y = np.concatenate([y[:k], yb, y[k:]])
    qid = np.concatenate([qid[:k], big, qid[k:]])
    bounds = _even(len(y), len(y) // 15)
    spans = np.unique(np.searchsorted(bounds, np.flatnonzero(qid == 1000), side="right") - 1)
    assert len(spans) >= 4
    parts, _, _ = _regroup(client, _dask(X, y, qid, bounds))
    _assert_moved_only_cut_queries(parts, X, y, qid, bounds)
    assert len(parts) <= len(bounds) - 1 - (len(spans) - 2)  # those inside it dropped
    p = dict(FAST, objective="ranknet")
    _assert_same_model(
        ltrboost.train(p, make_dataset(X, y, qid=qid)),
        ldask.train(client, p, _dask(X, y, qid, bounds)),
        X,
    )


def test_interleaved_rows_fall_back_to_the_hash_regroup(client, counter):
    """Rows dealt round-robin: every query in every partition; only the hash regroup
    keeps the partitions balanced (moving would put everything in partition 0)."""
    X, y, qid = _data(seed=5)
    n_parts = 4
    order = np.argsort(np.arange(len(y)) % n_parts, kind="stable")
    X, y, qid = X[order], y[order], qid[order]
    bounds = _even(len(y), n_parts)
    parts, _, n_tasks = _regroup(client, _dask(X, y, qid, bounds), counter)
    buckets = ldask._hash_buckets(qid, n_parts)
    for p in parts:
        (k,) = p["index"]
        rows = np.flatnonzero(buckets == k)
        _, grouped, _ = group_by_qid(qid[rows])
        rows = rows if grouped is None else rows[grouped]
        np.testing.assert_array_equal(p["X"], X[rows])
        np.testing.assert_array_equal(p["qid"], qid[rows])
    # metas, split, P x P picks, concat, metas
    assert n_tasks == n_parts**2 + 4 * n_parts


def test_interleaved_string_qids_take_the_hash_regroup(client):
    """A Dask array of strings as qids: the hash regroup failed on a worker with
    pandas' "Does not understand character buffer dtype format string ('w')"."""
    X, y, qid = _data(seed=10)
    order = np.argsort(np.arange(len(y)) % 3, kind="stable")
    X, y = X[order], y[order]
    qs = np.array([f"q{v:03d}" for v in qid[order]])
    bounds = _even(len(y), 3)
    parts, _, _ = _regroup(client, _dask(X, y, qs, bounds))
    assert sum(p["y"].shape[0] for p in parts) == len(y)
    p = dict(FAST, objective="lambdamart")
    dist = ldask.train(client, p, _dask(X, y, qs, bounds))
    local = ltrboost.train(p, make_dataset(X, y, qid=qs))
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)


def test_the_rule_is_the_number_of_pieces_to_move():
    """At most MOVE_PIECES_PER_PARTITION pieces (a query's rows in a partition other
    than its first) per partition move; more fall back to the hash regroup."""
    P = 3
    limit = ldask.MOVE_PIECES_PER_PARTITION * P
    qids = [np.arange(limit + 1)] * 2 + [np.array([], dtype=np.int64)]
    metas = [dict(qids=q) for q in qids]
    assert ldask._move_plan(metas) is None  # limit + 1 pieces
    metas[1] = dict(qids=np.arange(limit))
    plan = ldask._move_plan(metas)
    assert plan == {1: {0: list(range(limit))}}
    # numbers in one partition, strings in another: not compared here
    assert ldask._move_plan([dict(qids=np.array([1, 2])), dict(qids=np.array(["2"]))]) is None


@pytest.mark.parametrize("kind", ["str", "int64", "uint8", "float-int"])
def test_string_and_integer_qids(client, kind):
    X, y, qid = _data(seed=6, n_queries=20)
    bounds = _even(len(y), 3)
    if kind == "str":
        qid = np.array([f"q{v:03d}" for v in qid])
        frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
        frame = frame.assign(qid=qid, label=y)
        ddf = dd.from_pandas(frame, npartitions=3, sort=False)
        assert ddf.npartitions == 3
        model = ldask.DaskRanker(client=client, **FAST).fit(ddf, "label")
        local = ltrboost.Ranker(**FAST).fit(frame.drop(columns=["qid", "label"]), y, qid=qid)
        feats = frame.drop(columns=["qid", "label"])
        np.testing.assert_allclose(
            model.to_local().predict(feats), local.predict(feats), rtol=1e-9, atol=1e-12
        )
    elif kind == "float-int":
        # a cut query's rows int in one partition, float in the next (one query)
        qf = da.concatenate(
            [
                da.from_array(qid[bounds[k] : bounds[k + 1]].astype(t), chunks=-1)
                for k, t in enumerate([np.int64, np.float64, np.int64])
            ]
        )
        data = ldask.DaskData(_darr(X, bounds), _darr(y, bounds), qf)
        parts, _, _ = _regroup(client, data)
        _assert_moved_only_cut_queries(
            [dict(p, qid=p["qid"].astype(np.int64)) for p in parts], X, y, qid, bounds
        )
        return
    else:
        qid = qid.astype(kind)
    parts, _, _ = _regroup(client, _dask(X, y, qid, bounds))
    _assert_moved_only_cut_queries(parts, X, y, qid, bounds)


def test_sparse_x_and_weights_move_with_their_rows(client):
    sp = pytest.importorskip("scipy.sparse")
    X, y, qid = _data(seed=7)
    X[X < 0.3] = 0.0
    w = np.random.default_rng(7).uniform(0.5, 2.0, len(y))
    bounds = _even(len(y), 4)
    dX = da.from_array(sp.csr_matrix(X), chunks=(tuple(np.diff(bounds)), X.shape[1]), asarray=False)
    data = ldask.DaskData(dX, _darr(y, bounds), _darr(qid, bounds), _darr(w, bounds))
    parts, _, _ = _regroup(client, data)
    _assert_moved_only_cut_queries(parts, X, y, qid, bounds, w)
    p = dict(FAST, objective="lambdamart")
    _assert_same_model(
        ltrboost.train(p, make_dataset(X, y, qid=qid, sample_weight=w)),
        ldask.train(client, p, data),
        X,
    )


def test_the_same_partitions_every_run(client):
    X, y, qid = _data(seed=8)
    bounds = _even(len(y), 6)
    a, _, _ = _regroup(client, _dask(X, y, qid, bounds))
    b, _, _ = _regroup(client, _dask(X, y, qid, bounds))
    assert len(a) == len(b)
    for p, q in zip(a, b, strict=True):
        assert p["index"] == q["index"]
        np.testing.assert_array_equal(p["X"], q["X"])
        np.testing.assert_array_equal(p["qid"], q["qid"])


def test_boundary_regroup_tasks_grow_linearly(client, counter):
    """Regrouping boundary-cut partitions took P² + 4P tasks (P metas, P splits, P²
    picks, P concatenations, P metas again); now at most six per partition (metas,
    a split, two picks, a concatenation, its meta)."""
    X, y, qid = _data(seed=9, n_queries=60)
    counts = {}
    for n_parts in (5, 10, 20, 40):
        _, _, counts[n_parts] = _regroup(client, _dask(X, y, qid, _even(len(y), n_parts)), counter)
    for n_parts, n in counts.items():
        assert n <= 6 * n_parts, counts
    assert counts[40] / 40 <= 1.5 * counts[10] / 10, counts  # no more per partition

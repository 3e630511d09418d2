"""Training on Dask (issue 13): the same model as one machine, queries never cut,
faults reported, not hung.

One in-process ``LocalCluster`` (2 workers, 1 thread each) serves the module; data are
small (a few hundred rows) and trees few, so the module runs in seconds once the
kernels are compiled.  "The same model": the partitions concatenated in order, trained
locally, give the same split features and thresholds; leaf values and predictions
agree to 1e-9 relative (only the order of float sums differs: one shard's sum vs the
sum of two shards' sums).
"""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import sys
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
pd = pytest.importorskip("pandas")

import ltrboost  # noqa: E402
from ltrboost import dask as ldask  # noqa: E402
from ltrboost.dataset import LTRInputError, make_dataset  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402


def _data(seed=0, n_queries=40, missing_rate=0.1):
    return make_ranking(
        n_queries=n_queries,
        docs_per_query=(5, 20),
        n_features=6,
        missing_rate=missing_rate,
        random_state=seed,
    )


def _cuts(qid, n_parts):
    """Row bounds of ``n_parts`` partitions at query boundaries."""
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    inner = [int(starts[len(starts) * k // n_parts]) for k in range(1, n_parts)]
    return [0, *inner, len(qid)]


def _darr(a, cuts):
    return da.from_array(a, chunks=(tuple(np.diff(cuts)), *a.shape[1:]))


def _dask_data(X, y, qid, n_parts):
    c = _cuts(qid, n_parts)
    return ldask.DaskData(_darr(X, c), _darr(y, c), _darr(qid, c))


def _assert_same_model(local, dist, X):
    assert len(local.trees) == len(dist.trees)
    for a, b in zip(local.trees, dist.trees, strict=True):
        np.testing.assert_array_equal(a["feature_idx"], b["feature_idx"])
        np.testing.assert_array_equal(a["bin_threshold"], b["bin_threshold"])
        np.testing.assert_array_equal(a["num_threshold"], b["num_threshold"])
        np.testing.assert_array_equal(a["count"], b["count"])
        leaf = a["is_leaf"] == 1
        np.testing.assert_allclose(b["value"][leaf], a["value"][leaf], rtol=1e-9)
        # Inner nodes' values are not used by predictions.  A pairwise objective's
        # lambdas cancel within each query, so near the root the gradient sum is
        # rounding noise of the order of its terms' sum: another summation order
        # (two shards) moves it by ~1e-16 of sum|g|, which is ~1e-8 of the value.
        scale = np.max(np.abs(a["value"]))
        np.testing.assert_allclose(b["value"], a["value"], rtol=1e-6, atol=1e-9 * scale)
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)


CONFIGS = {
    "lambdamart": dict(objective="lambdamart", max_leaf_nodes=8, min_samples_leaf=5),
    "mart": dict(objective="mart", max_leaf_nodes=8, min_samples_leaf=5),
    "ranknet": dict(objective="ranknet", max_leaf_nodes=8, min_samples_leaf=5),
    # OLE pair histograms, query bagging, feature sampling, level-wise growth
    "ole": dict(
        objective="ranknet",
        split_criterion="ole",
        max_leaf_nodes=6,
        min_samples_leaf=3,
        subsample=0.7,
        colsample_bytree=0.6,
        growth="breadth_first",
    ),
    # per-query seeds of sampled pairs use global query numbers
    "sampled": dict(
        objective="lambdamart", pair_method="sampled", pairs_per_sample=2, subsample=0.5
    ),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_same_model_as_local_on_1_2_4_partitions(client, name):
    X, y, qid = _data()
    Xv, yv, qv = _data(seed=1, n_queries=15, missing_rate=0.0)
    params = dict(CONFIGS[name], n_estimators=4, eval_metric="ndcg@5")
    local = ltrboost.train(
        params, make_dataset(X, y, qid=qid), [("v", make_dataset(Xv, yv, qid=qv))]
    )
    for n_parts in (1, 2, 4):
        dist = ldask.train(
            client, params, _dask_data(X, y, qid, n_parts), [("v", _dask_data(Xv, yv, qv, 3))]
        )
        _assert_same_model(local, dist, X)
        # validation metrics: per-query values from the workers, mean over all queries
        np.testing.assert_allclose(
            dist.evals_result["v"]["ndcg@5"], local.evals_result["v"]["ndcg@5"], rtol=1e-12
        )


def test_early_stopping_and_callbacks_as_local(client):
    X, y, qid = _data(seed=9)
    Xv, yv, qv = _data(seed=10, n_queries=12)
    params = dict(
        max_leaf_nodes=12,
        min_samples_leaf=2,
        learning_rate=0.5,
        n_estimators=40,
        early_stopping_rounds=2,
        eval_metric="ndcg@3",
    )
    local = ltrboost.train(
        params, make_dataset(X, y, qid=qid), [("v", make_dataset(Xv, yv, qid=qv))]
    )
    seen = []
    dist = ldask.train(
        client,
        params,
        _dask_data(X, y, qid, 2),
        [("v", _dask_data(Xv, yv, qv, 2))],
        callbacks=[lambda env: seen.append(env.snapshot().n_iterations)],
    )
    assert local.n_iterations < 40  # it did stop early
    assert dist.best_iteration == local.best_iteration
    assert dist.n_iterations == local.n_iterations
    assert seen == list(range(1, dist.n_iterations + 1))
    _assert_same_model(local, dist, X)


def test_err_uses_the_largest_label_of_the_whole_validation_set(client):
    """ERR's y_max is the largest label of the validation set (README "Metrics"); each
    Dask shard took its own rows' largest label, so a shard whose labels stop at 1
    counted a grade 1 as a perfect answer and the validation ERR (and early stopping on
    it) differed from the same data trained locally."""
    X, y, qid = _data(seed=5)
    Xv, yv, qv = _data(seed=6, n_queries=16, missing_rate=0.0)
    yv = yv.copy()
    first = qv < np.unique(qv)[8]  # the first partition's labels stop at 1
    yv[first] = np.minimum(yv[first], 1)
    assert yv[~first].max() > 1
    params = dict(n_estimators=3, max_leaf_nodes=6, eval_metric="err,err@3")
    local = ltrboost.train(
        params, make_dataset(X, y, qid=qid), [("v", make_dataset(Xv, yv, qid=qv))]
    )
    cut = int(np.flatnonzero(~first)[0])
    dv = ldask.DaskData(_darr(Xv, [0, cut, len(yv)]), _darr(yv, [0, cut, len(yv)]),
                        _darr(qv, [0, cut, len(yv)]))  # fmt: skip
    dist = ldask.train(client, params, _dask_data(X, y, qid, 2), [("v", dv)])
    for name in ("err", "err@3"):
        np.testing.assert_allclose(
            dist.evals_result["v"][name], local.evals_result["v"][name], rtol=1e-12
        )


def test_custom_metric_sees_every_workers_rows_as_local(client):
    """A custom metric callable is one function of all the validation rows: on Dask it
    is evaluated once on the driver with every worker's scores, labels and queries,
    not averaged over workers (wrong for any metric that is no mean over queries)."""
    X, y, qid = _data(seed=3)
    Xv, yv, qv = _data(seed=4, n_queries=16)

    def pooled_corr(scores, labels, offsets):  # over all rows: no mean over queries
        assert offsets[-1] == len(scores) == len(labels)
        return float(np.corrcoef(scores, labels)[0, 1])

    params = dict(n_estimators=6, max_leaf_nodes=6, eval_metric=[pooled_corr, "ndcg@5"])
    local = ltrboost.train(
        params, make_dataset(X, y, qid=qid), [("v", make_dataset(Xv, yv, qid=qv))]
    )
    dist = ldask.train(client, params, _dask_data(X, y, qid, 2), [("v", _dask_data(Xv, yv, qv, 2))])
    for name in ("pooled_corr", "ndcg@5"):
        np.testing.assert_allclose(
            dist.evals_result["v"][name], local.evals_result["v"][name], rtol=1e-12
        )
    assert len(set(local.evals_result["v"]["pooled_corr"])) > 1  # not a constant


@contextlib.contextmanager
def _own_cluster():
    """A cluster of its own (the test breaks it), closed at the end."""
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    try:
        yield cluster, client
    finally:
        client.close()
        cluster.close()


def test_a_closed_client_stops_training_with_a_clear_error():
    """Closing the client under a running fit: DistributedTrainingError, not a
    KeyError from the scheduler's reply."""
    with _own_cluster() as (_, client):
        X, y, qid = _data(seed=7)

        def close(env):
            if env.iteration == 1:
                client.close()

        with pytest.raises(ldask.DistributedTrainingError, match=r"went away|was lost"):
            ldask.train(
                client,
                dict(n_estimators=20, max_leaf_nodes=4),
                _dask_data(X, y, qid, 2),
                callbacks=[close],
                timeout=30,
            )


def test_a_query_whose_qid_dtype_differs_between_files_is_regrouped_whole(client, tmp_path):
    """Every query cut across two Parquet files, its qid int64 in one and float64 in the
    other (one query to pandas): the regrouping hash puts both halves in one bucket, so
    the model is local training's on the files' rows (a query was trained as two)."""
    pytest.importorskip("pyarrow")
    X, y, qid = _data(seed=12)
    frame = pd.DataFrame(X, columns=[f"f{k}" for k in range(X.shape[1])])
    frame["label"] = y
    frame["qid"] = qid.astype(np.int64)
    # the first half of every query in one file (int qids), the rest in the other
    rank = frame.groupby("qid").cumcount().to_numpy()
    size = frame.groupby("qid")["qid"].transform("size").to_numpy()
    a = frame[rank < size // 2]
    b = frame[rank >= size // 2].astype({"qid": np.float64})
    folder = tmp_path / "mixed"
    folder.mkdir()
    a.to_parquet(folder / "part.0.parquet", index=False)
    b.to_parquet(folder / "part.1.parquet", index=False)
    both = pd.concat([a, b.astype({"qid": np.int64})], ignore_index=True)
    local = ltrboost.Ranker(n_estimators=8, random_state=0).fit(
        both.drop(columns=["label", "qid"]), both["label"], qid=both["qid"]
    )
    dist = ldask.DaskRanker(client=client, n_estimators=8, random_state=0).fit(
        dd.read_parquet(folder), "label"
    )
    feats = frame.drop(columns=["label", "qid"])
    np.testing.assert_allclose(dist.to_local().predict(feats), local.predict(feats), rtol=1e-9)


def test_sample_weights_on_the_workers(client):
    X, y, qid = _data(seed=11)
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=len(y))
    for objective in ("mart", "lambdamart"):
        params = dict(objective=objective, n_estimators=3, max_leaf_nodes=8, min_samples_leaf=5)
        local = ltrboost.train(params, make_dataset(X, y, qid=qid, sample_weight=w))
        c = _cuts(qid, 3)
        data = _dask_data(X, y, qid, 3)
        data.sample_weight = _darr(w, c)
        _assert_same_model(local, ldask.train(client, params, data), X)


def test_repeated_runs_write_byte_identical_models(client, tmp_path):
    X, y, qid = _data(seed=2)
    params = dict(CONFIGS["lambdamart"], n_estimators=3)
    paths = []
    for k in range(2):
        stats = {}
        b = ldask.train(client, params, _dask_data(X, y, qid, 4), stats=stats)
        paths.append(tmp_path / f"m{k}.json")
        b.save_model(paths[-1])
    assert paths[0].read_bytes() == paths[1].read_bytes()
    # one round trip per split (the split and the smaller child's histogram), plus
    # gradients, tree start, root and score update per tree
    assert stats["shards"] == 2
    assert stats["trees"] == 3
    n_splits = sum(int((t["is_leaf"] == 0).sum()) for t in b.trees)
    assert stats["round_trips"] == 4 * 3 + n_splits
    assert stats["bytes_to_driver"] > 0


def _frame(X, y, qid, n_parts):
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    df["qid"] = qid
    c = _cuts(qid, n_parts)
    pieces = [df.iloc[a:b] for a, b in itertools.pairwise(c)]
    ys = [pd.Series(y[a:b]) for a, b in itertools.pairwise(c)]
    ddf = dd.concat([dd.from_pandas(p, npartitions=1) for p in pieces])
    dy = dd.concat([dd.from_pandas(s, npartitions=1) for s in ys])
    return ddf, dy


def test_dask_ranker_on_dataframes_predicts_lazily_and_to_local(client, tmp_path):
    from sklearn.base import clone

    X, y, qid = _data(seed=3)
    Xv, yv, qv = _data(seed=4, n_queries=10)
    ddf, dy = _frame(X, y, qid, 3)
    dv, dyv = _frame(Xv, yv, qv, 2)
    model = ldask.DaskRanker(client=client, n_estimators=5, max_leaf_nodes=6)
    params = clone(ldask.DaskRanker(n_estimators=5, regroup=False)).get_params()
    assert params["regroup"] is False
    assert params["n_estimators"] == 5
    assert "client" in params
    model.fit(ddf, dy, eval_set=[(dv, dyv)], eval_metric="ndcg@10")
    assert list(model.feature_names_in_) == [f"f{i}" for i in range(6)]
    assert len(model.evals_result_["valid_0"]["ndcg@10"]) == 5
    lazy = model.predict(ddf)
    assert isinstance(lazy, dd.Series)
    local = model.to_local()
    assert type(local) is ltrboost.Ranker
    np.testing.assert_array_equal(lazy.compute().to_numpy(), local.predict(X))
    arr = model.predict(da.from_array(X, chunks=(50, 3)))
    assert isinstance(arr, da.Array)
    np.testing.assert_array_equal(arr.compute(), local.predict(X))
    # the same as a local Ranker on the same rows
    ref = ltrboost.Ranker(n_estimators=5, max_leaf_nodes=6).fit(X, y, qid=qid)
    np.testing.assert_allclose(local.predict(X), ref.predict(X), rtol=1e-9)
    local.save_model(str(tmp_path / "m.json"))
    again = ltrboost.load_model(str(tmp_path / "m.json"))
    np.testing.assert_array_equal(again.predict(X), local.predict(X))


def _shuffled(seed=5):
    """Rows in random order: every query is spread over several partitions."""
    X, y, qid = _data(seed=seed)
    perm = np.random.default_rng(seed).permutation(len(y))
    return X[perm], y[perm], qid[perm]


def test_cut_queries_are_regrouped_by_one_stable_hash_shuffle(client):
    X, y, qid = _shuffled()
    n_parts = 3
    params = dict(CONFIGS["lambdamart"], n_estimators=3)
    dist = ldask.train(client, params, _dask_data(X, y, qid, n_parts))
    # the local equivalent: rows sorted (stably) by their partition hash(qid) % 3
    order = np.argsort(ldask._hash_buckets(qid, n_parts), kind="stable")
    local = ltrboost.train(params, make_dataset(X[order], y[order], qid=qid[order]))
    _assert_same_model(local, dist, X)


def test_cut_query_without_regroup_names_the_query_and_partitions(client):
    X, y, qid = _shuffled()
    with pytest.raises(LTRInputError, match=r"query \S+ is cut between partitions 0 and [12]"):
        ldask.train(client, dict(n_estimators=1), _dask_data(X, y, qid, 3), regroup=False)


def test_bad_label_on_a_worker_is_the_local_error_naming_the_partition(client):
    X, y, qid = _data(seed=6)
    y = y.astype(float)
    c = _cuts(qid, 2)
    y[c[1] + 3] = np.nan
    with pytest.raises(LTRInputError) as local_err:
        make_dataset(X[c[1] :], y[c[1] :], qid=qid[c[1] :])
    with pytest.raises(LTRInputError) as dist_err:
        ldask.train(client, dict(n_estimators=1), _dask_data(X, y, qid, 2))
    assert str(dist_err.value) == f"partition 1: {local_err.value}"
    assert "\n" not in str(dist_err.value)


def test_objective_label_error_names_partition_and_row(client):
    X, y, qid = _data(seed=6)
    y = y.astype(float)
    c = _cuts(qid, 2)
    y[c[1] + 2] = 0.5  # lambdamart needs integer grades: found on the worker
    with pytest.raises(LTRInputError, match=r"^partition 1: row 2: label y\[2\]=0.5 is not"):
        ldask.train(client, dict(n_estimators=1), _dask_data(X, y, qid, 2))


def test_unsupported_objective_is_refused_clearly(client):
    X, y, qid = _data()
    with pytest.raises(ValueError, match=r"qbrank.*cannot be trained on Dask"):
        ldask.train(client, dict(objective="qbrank"), _dask_data(X, y, qid, 2))
    with pytest.raises(ValueError, match=r"lambdamart.*cannot be trained on Dask.*unbiased"):
        ldask.train(client, dict(unbiased=True), _dask_data(X, y, qid, 2))


def test_a_lost_worker_stops_training_with_a_clear_error_in_bounded_time():
    with _own_cluster() as (cluster, client):
        X, y, qid = _data(seed=7)
        victim = sorted(cluster.scheduler.workers)[1]

        def kill(env):
            if env.iteration == 1:
                name = next(k for k, w in cluster.workers.items() if w.address == victim)
                client.sync(cluster.workers[name].close)

        t0 = time.monotonic()
        with pytest.raises(ldask.DistributedTrainingError, match="was lost"):
            ldask.train(
                client,
                dict(n_estimators=50, max_leaf_nodes=4),
                _dask_data(X, y, qid, 2),
                callbacks=[kill],
                timeout=60,
            )
        assert time.monotonic() - t0 < 60


def test_resume_from_a_checkpoint_gives_the_uninterrupted_model(client, tmp_path):
    """The recovery path after a lost worker: a callback saves ``env.snapshot()``,
    training continues from it with ``init_model`` (on a new cluster in real life)."""
    X, y, qid = _data(seed=12)
    Xv, yv, qv = _data(seed=13, n_queries=10)
    params = dict(
        objective="mart", n_estimators=6, max_leaf_nodes=6, subsample=0.8, colsample_bytree=0.7
    )
    valid = [("v", _dask_data(Xv, yv, qv, 2))]
    full = ldask.train(client, params, _dask_data(X, y, qid, 2), valid)
    ckpt = tmp_path / "ckpt.json"

    def save_and_die(env):
        if env.iteration == 2:
            env.snapshot().save_model(ckpt)
            return True  # stands for the lost worker

    ldask.train(client, params, _dask_data(X, y, qid, 2), valid, callbacks=[save_and_die])
    resumed = ldask.train(
        client, params, _dask_data(X, y, qid, 2), valid, init_model=ltrboost.load_model(ckpt)
    )
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    full.save_model(a)
    resumed.save_model(b)
    assert a.read_bytes() == b.read_bytes()


def test_the_core_package_never_imports_dask():
    code = (
        "import sys, ltrboost, ltrboost.sklearn, ltrboost.cli, ltrboost.booster;"
        "bad = [m for m in sys.modules if m == 'dask' or m.startswith(('dask.', 'distributed'))];"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------ ltrboost convert


def test_convert_writes_query_partitioned_parquet_that_trains_like_the_text(client, tmp_path):
    """The README's end-to-end path: LETOR -> Parquet -> DaskRanker -> to_local()."""
    pytest.importorskip("pyarrow")
    from ltrboost.cli import main
    from ltrboost.io.letor import dump_svmlight, load_svmlight

    X, y, qid = _data(seed=8, missing_rate=0.0)
    perm = np.random.default_rng(0).permutation(len(y))  # queries interleaved in the file
    txt = tmp_path / "train.txt"
    dump_svmlight(txt, X[perm], y[perm], qid[perm])
    out = tmp_path / "train.parquet"
    assert main(["convert", str(txt), str(out), "--rows-per-file", "100", "-q"]) == 0
    files = sorted(out.iterdir())
    ddf = dd.read_parquet(str(out))
    assert ddf.npartitions == len(files) > 1
    assert list(ddf.columns[:2]) == ["qid", "label"]
    sizes = ddf.map_partitions(len).compute().tolist()
    assert all(s >= 100 for s in sizes[:-1])
    seen = [set(ddf.partitions[k]["qid"].compute()) for k in range(ddf.npartitions)]
    assert sum(len(s) for s in seen) == len(set().union(*seen)) == len(np.unique(qid))

    model = ldask.DaskRanker(client=client, n_estimators=4, max_leaf_nodes=6)
    model.fit(ddf, "label")  # qid: the "qid" column
    data = load_svmlight(txt)
    ref = ltrboost.Ranker(n_estimators=4, max_leaf_nodes=6).fit(data.X, data.y, qid=data.qid)
    local = model.to_local()
    np.testing.assert_allclose(local.predict(data.X), ref.predict(data.X), rtol=1e-9)
    local.save_model(str(tmp_path / "model.json"))
    # a second conversion into the same folder is refused (old parts would be read)
    assert main(["convert", str(txt), str(out), "-q"]) != 0


def test_readme_dask_example_runs(tmp_path, monkeypatch):
    import re
    from pathlib import Path

    pytest.importorskip("pyarrow")
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    code = re.search(r"<!-- dask-example:[^>]*-->\s*```python\n(.*?)```", readme, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    assert (tmp_path / "model.json").exists()
    assert len(list((tmp_path / "train.parquet").iterdir())) > 1


def test_duplicate_column_names_are_refused_as_in_fit(client):
    X, y, qid = _data(seed=5, n_queries=10)
    ddf, dy = _frame(X, y, qid, 2)
    dup = ddf.rename(columns={"f1": "f0"})
    with pytest.raises(LTRInputError, match=r"duplicate feature names \['f0'\]"):
        ldask.train(client, {"n_estimators": 2}, ldask.DaskData(dup, y=dy, qid="qid"))


def test_sample_weight_errors_are_the_local_ones(client):
    """Weights above float32's maximum, complex weights and all-zero weights are refused
    as by local training (they trained into inf gradients, dropped the imaginary part or
    learned nothing, silently)."""
    X, y, qid = _data(seed=11)
    c = _cuts(qid, 3)
    data = _dask_data(X, y, qid, 3)
    huge = np.ones(len(y))
    huge[c[1] + 1] = 1e39
    with pytest.raises(LTRInputError) as local_err:
        make_dataset(X[c[1] :], y[c[1] :], qid=qid[c[1] :], sample_weight=huge[c[1] :])
    data.sample_weight = _darr(huge, c)
    with pytest.raises(LTRInputError) as dist_err:
        ldask.train(client, dict(n_estimators=1), data)
    assert str(dist_err.value) == f"partition 1: {local_err.value}"
    data.sample_weight = _darr(np.ones(len(y)) + 1j, c)
    with pytest.raises(LTRInputError, match=r"^partition \d: sample_weight is complex"):
        ldask.train(client, dict(n_estimators=1), data)
    zero = np.zeros(len(y))
    with pytest.raises(LTRInputError) as local_err:
        make_dataset(X, y, qid=qid, sample_weight=zero)
    data.sample_weight = _darr(zero, c)
    for objective in ("mart", "lambdamart"):
        with pytest.raises(LTRInputError) as dist_err:
            ldask.train(client, dict(objective=objective, n_estimators=1), data)
        assert str(dist_err.value) == f"the training set: {local_err.value}"
    zero[c[2] + 1] = 0.5  # one positive weight, in the last partition: trains
    data.sample_weight = _darr(zero, c)
    ldask.train(client, dict(objective="mart", n_estimators=1), data)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(timeout=-1), r"timeout=-1 must be a positive finite number of seconds"),
        (dict(timeout=float("nan")), r"timeout=nan must be a positive"),
        (dict(timeout=float("inf")), r"timeout=inf must be a positive"),
        (dict(timeout="10"), r"timeout='10' must be a positive"),
        (dict(timeout=True), r"timeout=True must be a positive"),
        (dict(regroup="no"), r"regroup='no' must be True or False"),
        (dict(regroup=None), r"regroup=None must be True or False"),
    ],
)
def test_timeout_and_regroup_are_checked(client, kwargs, message):
    """They failed inside distributed ('could not convert string to float: '1-1'',
    "KeyError: 'Invalid time unit: nan'") or, for regroup='no', regrouped silently."""
    X, y, qid = _data()
    with pytest.raises(ValueError, match=message):
        ldask.train(client, dict(n_estimators=1), _dask_data(X, y, qid, 2), **kwargs)


def test_an_init_model_of_another_width_is_refused_before_the_shards_replay_it(client, monkeypatch):
    """The shards replayed the init model's trees on their raw rows (reading feature
    columns the data does not have: past the array, in a kernel without bounds checks)
    before the driver's resume found the mismatch."""
    X, y, qid = _data()
    wide = ltrboost.train(dict(n_estimators=2), make_dataset(np.c_[X, X], y, qid=qid))

    def replay(*args):
        raise AssertionError("a shard replayed the init model")

    monkeypatch.setattr(ldask, "predict_raw", replay)
    with pytest.raises(ValueError, match=r"cannot resume: the model was trained on 12 features"):
        ldask.train(client, dict(n_estimators=3), _dask_data(X, y, qid, 2), init_model=wide)
    mcrank = ltrboost.train(dict(objective="mart", n_estimators=2), make_dataset(X, y, qid=qid))
    with pytest.raises(
        ValueError, match=r"cannot resume: the model was trained with objective='mart'"
    ):
        ldask.train(client, dict(n_estimators=3), _dask_data(X, y, qid, 2), init_model=mcrank)


def test_validation_frames_take_the_training_columns_by_name(client):
    """A validation DataFrame whose feature columns come in another order was read by
    position: silently wrong metrics and early stopping (local training and
    DaskRanker.predict take them by name)."""
    X, y, qid = _data(seed=3)
    frame, dy = _frame(X, y, qid, 2)
    names = [c for c in frame.columns if c != "qid"]
    params = dict(n_estimators=2, min_samples_leaf=5)

    def fit(valid):
        return ldask.DaskRanker(client=client, **params).fit(
            frame, dy, qid="qid", eval_set=[(valid, dy)]
        )

    same = fit(frame)
    assert fit(frame[["qid", *names[::-1]]]).evals_result_ == same.evals_result_
    with pytest.raises(LTRInputError, match=names[0]):
        fit(frame[["qid", *names[1:]]])


def test_resuming_takes_the_training_columns_by_the_init_models_names(client):
    """Local warm starts take a frame's columns by the init model's names; on Dask the
    shards replayed its trees on the columns by position, so a frame with another
    column order continued into a silently wrong model."""
    X, y, qid = _data(seed=3)
    frame, dy = _frame(X, y, qid, 2)
    names = [c for c in frame.columns if c != "qid"]
    local = pd.DataFrame(X, columns=names)
    params = dict(n_estimators=2, min_samples_leaf=5)
    first = ltrboost.Ranker(**params).fit(local, y, qid=qid)
    full = ltrboost.Ranker(**dict(params, n_estimators=4)).fit(local, y, qid=qid)
    resumed = ldask.DaskRanker(client=client, **params).fit(
        frame[["qid", *names[::-1]]], dy, qid="qid", init_model=first
    )
    assert resumed.booster_.feature_names == names
    np.testing.assert_allclose(resumed.to_local().predict(local), full.predict(local), rtol=1e-9)


def test_a_model_without_features_predicts_a_frame(client):
    """Training on a frame of only qid and labels gives a constant model whose
    feature_names are []; predict() took that as 'no names' and used every non-qid
    column (the labels) as features: 'X has 1 features but the model was trained
    with 0'."""
    _, y, qid = _data()
    frame = dd.from_pandas(pd.DataFrame({"qid": qid, "label": y}), npartitions=2)
    with pytest.warns(UserWarning, match="constant"):
        model = ldask.DaskRanker(client=client, n_estimators=1).fit(frame, "label")
    scores = model.predict(frame).compute().to_numpy()
    np.testing.assert_array_equal(scores, np.full(len(y), scores[0]))


def test_a_bad_validation_row_names_the_validation_set(client):
    """'partition 1: row 3: label y[3]=nan is not finite' did not say whether the
    partition is one of the training set's or of a validation set's."""
    X, y, qid = _data(seed=6)
    bad = y.astype(float)
    c = _cuts(qid, 2)
    bad[c[1] + 3] = np.nan
    with pytest.raises(LTRInputError, match=r"^validation set 'v': partition 1: row 3: label"):
        ldask.train(
            client,
            dict(n_estimators=1),
            _dask_data(X, y, qid, 2),
            [("v", _dask_data(X, bad, qid, 2))],
        )
    big = y.astype(float) + 40  # refused by the metric (exponential gain), on the shards
    with pytest.raises(LTRInputError, match=r"^validation set 'v': partition \d: row \d+: label"):
        ldask.train(
            client,
            dict(n_estimators=1),
            _dask_data(X, y, qid, 2),
            [("v", _dask_data(X, big, qid, 2))],
        )


def test_predict_iteration_is_the_local_one(client):
    """DaskRanker.predict(iteration=) sliced the trees: -1 silently dropped the last
    round, 10 (of 4) silently used all, and after early stopping the slice was then
    cut again to the best iteration; Ranker.predict refuses the first two."""
    X, y, qid = _data(seed=3)
    frame, dy = _frame(X, y, qid, 2)
    model = ldask.DaskRanker(
        client=client, n_estimators=30, early_stopping_rounds=3, min_samples_leaf=5
    ).fit(frame, dy, qid="qid", eval_set=[(frame, dy)])
    local = model.to_local()
    n = model.booster_.n_iterations
    assert model.booster_.best_iteration < n  # early stopping chose an earlier round
    feats = pd.DataFrame(X, columns=[c for c in frame.columns if c != "qid"])
    for it in (None, 0, 1, n):
        np.testing.assert_array_equal(
            model.predict(frame, iteration=it).compute().to_numpy(),
            local.predict(feats, iteration=it),
        )
    for bad in (-1, n + 1, 1.5, "2", True):
        with pytest.raises(ValueError, match="iteration="):
            model.predict(frame, iteration=bad)
        with pytest.raises(ValueError, match="iteration="):
            local.predict(feats, iteration=bad)

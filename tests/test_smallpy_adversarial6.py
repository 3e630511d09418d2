"""Adversarial pass 6 over small Python/Dask defects (smallpy): one-sided label
thresholds on Dask and in the scoring helpers, Dask's messages for a label or qid
column named but for case, and ``random_state=None`` in the lower-level API.

Dask tests use conftest's in-process ``client`` (2 workers, 1 thread each); small
data, few trees.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import ltrboost
from ltrboost.dataset import LTRInputError, make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.params import ParameterError, ParameterWarning

FAST = dict(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=3, n_threads=1)


def _data(seed=0, n_queries=12):
    X, y, qid = make_ranking(
        n_queries=n_queries, docs_per_query=(4, 9), n_features=3, random_state=seed
    )[:3]
    return X, y, qid


def _threshold_warnings(caught) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, ParameterWarning) and "relevance_threshold=" in str(w.message)
    ]


# ------------------------------------------------------------------ local (regression)


@pytest.mark.parametrize("threshold", [0.0, 99.0])
def test_local_map_refuses_a_one_sided_relevance_threshold(threshold):
    """The local refusal the Dask check below must match (no change here)."""
    X, y, qid = _data()
    params = dict(FAST, lambda_metric="map", relevance_threshold=threshold)
    with pytest.raises(ParameterError, match="finds no pair of a relevant and an irrelevant"):
        ltrboost.train(params, make_dataset(X, y, qid=qid))


# ---------------------------------------------------------------- 2. score / make_scorer


def _fitted(**params):
    X, y, qid = _data()
    return ltrboost.Ranker(**FAST, **params).fit(X, y, qid=qid), X, y, qid


def test_ranker_score_warns_of_a_threshold_that_flattens_map_as_eval_does():
    """score("map") on labels every one of which is >= relevance_threshold: the value
    is 1 whatever the model; ``ltrboost eval`` warned of it, ``Ranker.score`` said
    nothing."""
    model, X, y, qid = _fitted()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        v = model.score(X, y + 1, qid=qid, metric="map")  # grades 1..: all relevant
    assert v == 1.0
    msgs = _threshold_warnings(caught)
    assert len(msgs) == 1, [str(w.message) for w in caught]
    assert msgs[0].startswith("relevance_threshold=1 counts every document of ")
    assert "map is the same whatever the scores" in msgs[0]


def test_ranker_score_uses_a_metric_objects_own_threshold_for_the_warning():
    model, X, y, qid = _fitted()
    from ltrboost.metrics import get_metric

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.score(X, y, qid=qid, metric=get_metric("p@5", relevance_threshold=50))
    msgs = _threshold_warnings(caught)
    assert len(msgs) == 1
    assert msgs[0].startswith("relevance_threshold=50 counts no document")
    with warnings.catch_warnings(record=True) as caught:  # ndcg reads no threshold
        warnings.simplefilter("always")
        model.score(X, y + 1, qid=qid, metric="ndcg@5")
        model.score(X, y, qid=qid, metric="map")  # grades 0..: a fine threshold
    assert _threshold_warnings(caught) == []


def test_make_scorer_warns_of_a_threshold_that_flattens_mrr():
    pd = pytest.importorskip("pandas")
    from ltrboost.metrics import make_scorer

    model, X, y, qid = _fitted()
    df = pd.DataFrame(X).add_prefix("f").assign(qid=qid)
    model = ltrboost.Ranker(**FAST).fit(df, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make_scorer("mrr", relevance_threshold=0)(model, df, y)
        make_scorer("mrr")(model, df, y + 1)  # the model's threshold (default 1)
    msgs = _threshold_warnings(caught)
    assert len(msgs) == 2, [str(w.message) for w in caught]
    assert msgs[0].startswith("relevance_threshold=0 counts every document")
    assert msgs[1].startswith("relevance_threshold=1 counts every document")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make_scorer("mrr")(model, df, y)
        make_scorer("ndcg@10", relevance_threshold=0)(model, df, y)
    assert _threshold_warnings(caught) == []


# ------------------------------------------------------------ 4. random_state=None


def _file_bytes(booster, path) -> bytes:
    booster.save_model(path)
    return path.read_bytes()


def test_train_takes_random_state_none_as_the_default_seed(tmp_path):
    """Ranker(random_state=None) trains with seed 0; ltrboost.train and BoosterParams
    refused None ("random_state=None is not allowed (default 0)")."""
    X, y, qid = _data()
    ds = make_dataset(X, y, qid=qid)
    rand = dict(FAST, subsample=0.5, colsample_bytree=0.7, n_estimators=4)
    ltrboost.BoosterParams(random_state=None).validate()
    none = ltrboost.train(dict(rand, random_state=None), ds)
    zero = ltrboost.train(dict(rand, random_state=0), ds)
    params = ltrboost.BoosterParams(**rand, random_state=None)
    given = ltrboost.train(params, ds)
    assert params.random_state is None  # the caller's object is left as given
    assert none.params["random_state"] == 0
    zero_file = _file_bytes(zero, tmp_path / "zero.json")  # byte-identical files
    assert _file_bytes(none, tmp_path / "none.json") == zero_file
    assert _file_bytes(given, tmp_path / "given.json") == zero_file
    assert json.loads(zero_file)["params"]["random_state"] == 0
    sk = ltrboost.Ranker(**rand, random_state=None).fit(X, y, qid=qid)
    np.testing.assert_array_equal(sk.predict(X), zero.predict(X))


def test_random_state_none_with_sampled_pairs_objective():
    """The objective's pair draws take the seed too (rankboost refused None)."""
    X, y, qid = _data()
    ds = make_dataset(X, y, qid=qid)
    p = dict(FAST, objective="lambdamart", pair_method="sampled", pairs_per_sample=2)
    none = ltrboost.train(dict(p, random_state=None), ds)
    zero = ltrboost.train(dict(p, random_state=0), ds)
    np.testing.assert_array_equal(none.predict(X), zero.predict(X))


# ---------------------------------------------------------------------------- Dask

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from ltrboost import dask as ldask  # noqa: E402


def _darr(a, bounds):
    return da.from_array(a, chunks=(tuple(np.diff(bounds)), *a.shape[1:]))


def _dask(X, y, qid, bounds, w=None):
    return ldask.DaskData(
        _darr(X, bounds),
        _darr(y, bounds),
        _darr(qid, bounds),
        None if w is None else _darr(w, bounds),
    )


def _bounds(n):
    return [0, n // 3, 2 * n // 3, n]


@pytest.mark.parametrize(
    ("threshold", "weighted"), [(0.0, False), (99.0, False), (2.0, True), (0.0, True)]
)
def test_dask_map_refuses_a_one_sided_relevance_threshold_as_local(client, threshold, weighted):
    """lambda_metric="map" with every training document relevant (or none): local
    training refuses it naming the threshold and the grades; Dask trained every round
    and warned of a constant model.  Same message, from the partitions' summaries."""
    X, y, qid = _data(seed=3)
    w = None
    if weighted:  # the high grades weigh 0: every document of positive weight is below 2
        w = np.where(y >= 2, 0.0, 1.0)
    params = dict(FAST, lambda_metric="map", relevance_threshold=threshold)
    with pytest.raises(ParameterError) as local:
        ltrboost.train(params, make_dataset(X, y, qid=qid, sample_weight=w))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # refused before a constant model
        with pytest.raises(ParameterError) as dist:
            ldask.train(client, params, _dask(X, y, qid, _bounds(len(y)), w))
    assert str(dist.value) == str(local.value)
    if weighted:
        assert "of positive weight" in str(dist.value)


def test_dask_map_threshold_with_many_grades_same_message_as_local(client):
    """More than eight grades: the message's 'grades LO to HI (N distinct)' counts the
    distinct grades of the whole set, as locally."""
    X, y, qid = _data(seed=4)
    y = np.arange(len(y)) % 11.0
    params = dict(FAST, lambda_metric="map", relevance_threshold=20)
    with pytest.raises(ParameterError) as local:
        ltrboost.train(params, make_dataset(X, y, qid=qid))
    with pytest.raises(ParameterError) as dist:
        ldask.train(client, params, _dask(X, y, qid, _bounds(len(y))))
    assert str(dist.value) == str(local.value)
    assert "(11 distinct)" in str(dist.value)


def test_dask_map_with_a_two_sided_threshold_trains(client):
    X, y, qid = _data(seed=3)
    params = dict(FAST, lambda_metric="map", relevance_threshold=2)
    local = ltrboost.train(params, make_dataset(X, y, qid=qid))
    dist = ldask.train(client, params, _dask(X, y, qid, _bounds(len(y))))
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)


def test_dask_refuses_logistic_rank_before_its_threshold(client):
    """logistic_rank's threshold is never reached on Dask: the objective is refused
    first (its initial score depends on all the data); documented here."""
    X, y, qid = _data(seed=3)
    params = dict(FAST, objective="logistic_rank", positive_threshold=0)
    with pytest.raises(ValueError, match="cannot be trained on Dask"):
        ldask.train(client, params, _dask(X, y, qid, _bounds(len(y))))


def test_dask_validation_set_threshold_warns_as_local(client):
    """A validation set whose labels all sit on one side of relevance_threshold: MAP,
    MRR and P@k there are flat; local training warns, Dask said nothing."""
    X, y, qid = _data(seed=3)
    Xv, yv, qv = _data(seed=5)
    yv = yv + 1  # every validation document relevant
    params = dict(FAST, eval_metric="ndcg@5,map,p@3")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ltrboost.train(params, make_dataset(X, y, qid=qid), [("v", make_dataset(Xv, yv, qid=qv))])
    local = _threshold_warnings(caught)
    assert len(local) == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ldask.train(
            client,
            params,
            _dask(X, y, qid, _bounds(len(y))),
            [("v", _dask(Xv, yv, qv, _bounds(len(yv))))],
        )
    assert _threshold_warnings(caught) == local


# ------------------------------------------------------------ 3. column names on Dask


def _frame(seed=6):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, qid = _data(seed=seed)
    df = pd.DataFrame(X, columns=[f"f{k}" for k in range(X.shape[1])])
    return dd, pd, df.assign(qid=qid, label=y)


def test_dask_label_column_named_but_for_case_is_pointed_at(client):
    dd, _, df = _frame()
    ddf = dd.from_pandas(df, npartitions=2, sort=False)
    with pytest.raises(LTRInputError) as e:
        ldask.train(client, FAST, ldask.DaskData(ddf, "Label"))
    assert str(e.value).startswith("y='Label' is not a column of X")
    assert "'label'" in str(e.value)
    assert "names are matched exactly" in str(e.value)
    with pytest.raises(LTRInputError) as e:
        ldask.train(client, FAST, ldask.DaskData(ddf.drop(columns="label"), ddf["label"], " QID"))
    assert str(e.value).startswith("qid=' QID' is not a column of X")
    assert "'qid'" in str(e.value)
    model = ldask.DaskRanker(client=client, **FAST).fit(ddf, "label")
    with pytest.raises(LTRInputError, match=r"^y='LABEL' is not a column of X.*'label'"):
        model.score(ddf, "LABEL")
    with pytest.raises(LTRInputError, match=r"^y='grade' is not a column of X$"):
        model.score(ddf, "grade")  # nothing close: the message as it was


def test_dask_qid_column_spelled_otherwise_is_named_as_local(client):
    """A frame with a 'QID' column and no qid=: local fit names the column ("names are
    matched exactly: rename it 'qid'"); Dask said only "give qid="."""
    dd, _, df = _frame()
    df = df.rename(columns={"qid": "QID"})
    with pytest.raises(LTRInputError) as local:
        ltrboost.Ranker(**FAST).fit(df.drop(columns="label"), df["label"])
    assert "but has 'QID'" in str(local.value)
    ddf = dd.from_pandas(df, npartitions=2, sort=False)
    with pytest.raises(LTRInputError) as dist:
        ldask.train(client, FAST, ldask.DaskData(ddf, "label"))
    assert (
        "X has no 'qid' column but has 'QID' (names are matched exactly: rename it 'qid')"
        in str(dist.value)
    )

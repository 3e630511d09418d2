"""Adversarial pass 3 over continuing training from Python (``ltrboost.train(...,
init_model=)``, ``Ranker.fit(..., init_model=)``): each test failed before its fix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ltrboost import Ranker, make_dataset, train
from ltrboost.datasets import make_ranking
from ltrboost.model import load_model

FAST = dict(n_estimators=3, min_samples_leaf=3, max_leaf_nodes=4, n_threads=1)


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=0)


@pytest.fixture(scope="module")
def other():
    X, y, qid = make_ranking(n_queries=12, docs_per_query=8, n_features=4, random_state=5)
    return X, np.minimum(y + 1, 4), qid  # other labels: another mean, other priors


@pytest.mark.parametrize("objective", ["mart", "mcrank", "logistic_rank", "qbrank"])
def test_continuing_on_other_data_keeps_the_models_initial_score(data, other, objective):
    """The initial score (mean label, class priors, log-odds) was recomputed from the
    data continued on, shifting every prediction of the continued model's trees: with
    zero new rounds the "continued" model predicted differently from the model itself."""
    X, y, qid = data
    params = dict(FAST, objective=objective)
    model = train(params, make_dataset(X, y, qid=qid))
    Xo, yo, qo = other
    same = train(params, make_dataset(Xo, yo, qid=qo), init_model=model)  # no new round
    np.testing.assert_array_equal(same.init_score, model.init_score)
    assert same.predict(Xo).tolist() == model.predict(Xo).tolist()
    more = train(dict(params, n_estimators=5), make_dataset(Xo, yo, qid=qo), init_model=model)
    np.testing.assert_array_equal(more.init_score, model.init_score)
    assert more.predict(Xo, iteration=3).tolist() == model.predict(Xo).tolist()


def test_zero_new_rounds_on_another_validation_set_keeps_every_tree(data, other):
    """``train(n_estimators=<the model's rounds>, early_stopping_rounds=k)`` with a
    validation set the model had not recorded gave best_iteration=0: the model then
    predicted its initial score alone (a constant) by default."""
    X, y, qid = data
    Xo, yo, qo = other
    qo = qo + 100  # validation queries of their own
    model = train(FAST, make_dataset(X, y, qid=qid))
    params = dict(FAST, early_stopping_rounds=2)
    for name in ("valid_0", "elsewhere"):
        same = train(
            params, make_dataset(X, y, qid=qid), [(name, make_dataset(Xo, yo, qid=qo))],
            init_model=model,
        )  # fmt: skip
        assert same.best_iteration == 3
        assert same.predict(Xo).tolist() == model.predict(Xo).tolist()


def test_train_refuses_a_training_set_whose_columns_are_named_otherwise(data):
    """``ltrboost.train(..., init_model=)`` took a DataFrame with the model's feature
    names in another order (or other names) by position, silently: the continued
    trees read other features, and the new model named its columns after the data, so
    ``predict`` by name fed the old trees the wrong columns."""
    X, y, qid = data
    names = ["a", "b", "c", "d"]
    model = train(FAST, make_dataset(pd.DataFrame(X, columns=names), y, qid=qid))
    params = dict(FAST, n_estimators=5)
    swapped = pd.DataFrame(X[:, ::-1], columns=names[::-1])
    with pytest.raises(ValueError, match=r"feature 0 named 'd' but the model's is 'a'"):
        train(params, make_dataset(swapped, y, qid=qid), init_model=model)
    renamed = pd.DataFrame(X, columns=["a", "b", "c", "x"])
    with pytest.raises(ValueError, match=r"feature 3 named 'x' but the model's is 'd'"):
        train(params, make_dataset(renamed, y, qid=qid), init_model=model)
    # the same names in the same order, or no names, continue as before
    kept = train(params, make_dataset(X, y, qid=qid), init_model=model)
    assert kept.feature_names == names
    # Ranker.fit still takes a frame's columns by the model's names
    fit = Ranker(**{**FAST, "n_estimators": 2}).fit(swapped, y, qid=qid, init_model=model)
    assert list(fit.feature_names_in_) == names


def test_continuing_a_model_file_keeps_its_missing_value_convention(data, tmp_path):
    """A model trained by ``ltrboost train --missing nan`` and continued in Python came
    back without ``missing`` (nor ``trained_with_nan``): ``ltrboost predict`` on the
    continued model then read absent features as 0 instead of NaN, silently."""
    X, y, qid = data
    model = train(FAST, make_dataset(X, y, qid=qid))
    model.missing = "nan"
    model.trained_with_nan = True
    path = tmp_path / "cli.json"
    model.save_model(path)
    more = train(dict(FAST, n_estimators=4), make_dataset(X, y, qid=qid), init_model=model)
    assert more.missing == "nan"
    assert more.trained_with_nan
    fit = Ranker(**{**FAST, "n_estimators": 1}).fit(X, y, qid=qid, init_model=str(path))
    fit.save_model(str(tmp_path / "more.json"))
    again = load_model(tmp_path / "more.json")
    assert again.missing == "nan"
    assert again.trained_with_nan


def test_dask_continuing_mart_on_other_data_keeps_the_models_initial_score(data, other):
    """As locally: ``ltrboost.dask.train(..., init_model=)`` took the mean label of the
    data continued on as the model's initial score."""
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    from ltrboost import dask as ldask

    X, y, qid = data
    model = train(dict(FAST, objective="mart"), make_dataset(X, y, qid=qid))
    Xo, yo, qo = other
    half = int(np.searchsorted(qo, qo[len(qo) // 2]))
    c = (half, len(qo) - half)
    parts = ldask.DaskData(
        da.from_array(Xo, chunks=(c, Xo.shape[1])),
        da.from_array(yo, chunks=(c,)),
        da.from_array(qo, chunks=(c,)),
    )
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    with cluster, distributed.Client(cluster) as client:
        more = ldask.train(client, dict(FAST, objective="mart", n_estimators=4), parts,
                           init_model=model)  # fmt: skip
    np.testing.assert_array_equal(more.init_score, model.init_score)
    assert more.predict(Xo, iteration=3).tolist() == model.predict(Xo).tolist()


def test_train_refuses_a_validation_set_named_otherwise_than_the_model(data):
    """Training data without names continuing a named model: a validation DataFrame
    with the model's names in another order was evaluated by position, silently (its
    history and early stopping were of other features)."""
    X, y, qid = data
    names = ["a", "b", "c", "d"]
    model = train(FAST, make_dataset(pd.DataFrame(X, columns=names), y, qid=qid))
    swapped = make_dataset(pd.DataFrame(X[:, ::-1], columns=names[::-1]), y, qid=qid + 100)
    with pytest.raises(ValueError, match=r"validation set 'v' has feature 0 named 'd'"):
        train(
            dict(FAST, n_estimators=5), make_dataset(X, y, qid=qid), [("v", swapped)],
            init_model=model,
        )  # fmt: skip

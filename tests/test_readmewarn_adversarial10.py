"""The validation-leak warning (``SharedQueriesWarning``) against the usual way to make
a validation set, and on Dask.

* Two ``make_ranking`` calls both number their queries from 0, so a validation set made
  by a second call now warns although its queries are others; there was no way to ask
  the generator for ids of their own (``first_qid=``).
* ``ltrboost.dask.train(..., valid_sets)`` and ``DaskRanker.fit(eval_set=...)`` trained
  silently on a validation set of the training queries, where ``ltrboost.train`` and
  ``Ranker.fit`` warn.  The driver holds every partition's query ids already (the
  summaries it regroups by), so the check costs no pass over the rows.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import ltrboost
from ltrboost import Ranker, make_dataset, train
from ltrboost.datasets import make_ranking, make_ranking_mslr_like

PARAMS = {"n_estimators": 2, "min_samples_leaf": 2, "max_leaf_nodes": 4, "n_threads": 1}


def _shared(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, ltrboost.SharedQueriesWarning)]


def _set(first, n_queries=6, seed=0):
    """``(X, y, qid)``: 5 documents a query, grades 0-2, ids ``first, first + 1, ...``."""
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(first, first + n_queries), 5)
    return rng.normal(size=(q.size, 3)), rng.integers(0, 3, q.size).astype(float), q


# --- 1. make_ranking(first_qid=) -------------------------------------------------------


def test_make_ranking_first_qid_shifts_only_the_query_ids():
    kw = dict(n_queries=7, docs_per_query=(2, 6), n_features=5, random_state=3)
    X, y, q = make_ranking(**kw)
    X2, y2, q2 = make_ranking(**kw, first_qid=100)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(q2, q + 100)
    assert q2.dtype == np.int64
    assert (q2.min(), q2.max()) == (100, 106)
    ds = make_ranking(**kw, first_qid=100, return_dataset=True)
    np.testing.assert_array_equal(np.unique(ds.query_ids), np.arange(100, 107))
    *_, signal = make_ranking(**kw, first_qid=5, return_signal=True)
    np.testing.assert_array_equal(signal, make_ranking(**kw, return_signal=True)[3])


def test_make_ranking_mslr_like_first_qid_shifts_only_the_query_ids():
    X, y, q = make_ranking_mslr_like(500, 40, random_state=1)
    X2, y2, q2 = make_ranking_mslr_like(500, 40, random_state=1, first_qid=1000)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(q2, q + 1000)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3", None])
def test_make_ranking_first_qid_must_be_an_integer_ge_0(bad):
    with pytest.raises(ValueError, match=r"^first_qid="):
        make_ranking(n_queries=3, first_qid=bad)
    with pytest.raises(ValueError, match=r"^first_qid="):
        make_ranking_mslr_like(50, 10, first_qid=bad)


def test_make_ranking_first_qid_that_overflows_int64_is_refused_before_any_draw():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match=r"^first_qid=.*int64"):
        make_ranking(n_queries=3, first_qid=2**63 - 2, random_state=rng)
    assert rng.bit_generator.state == state  # a refused call draws nothing
    q = make_ranking(n_queries=3, first_qid=2**63 - 3, random_state=0)[2]
    assert q.max() == 2**63 - 1


def test_two_make_ranking_sets_with_first_qid_train_without_a_leak_warning():
    """README's advice for two generated sets: the second starts its ids after the
    first's queries; without it the same code warns (equal ids, other queries)."""
    tr = make_ranking(
        n_queries=20, docs_per_query=5, n_features=4, random_state=0, return_dataset=True
    )
    kw = dict(n_queries=8, docs_per_query=5, n_features=4, random_state=1, return_dataset=True)
    for vs, n_warned in ((make_ranking(**kw), 1), (make_ranking(**kw, first_qid=20), 0)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            train(PARAMS, tr, [("valid", vs)])
        assert len(_shared(caught)) == n_warned, _shared(caught)


def test_readme_names_first_qid_for_generated_validation_sets():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert "first_qid=" in text


# --- 2. ids of two kinds: numbers for training, strings for validation -----------------


@pytest.mark.parametrize(
    "as_text", [lambda q: q.astype(str), lambda q: q.astype(str).astype(object)]
)
def test_train_numeric_and_text_query_ids_are_other_queries(as_text):
    """The leak check compared the training set's numbers with a validation set's
    strings: ``"0"`` equalled ``0`` (NumPy made both text: a false warning), and an
    object array of strings (a pandas column) stopped training with NumPy's
    ``TypeError: '<' not supported between instances of 'str' and 'int'``.  Grouping
    takes 5 and ``"5"`` for two queries; so does the check now."""
    X, y, q = _set(0, 8)
    Xv, yv, qv = _set(0, 4, seed=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(PARAMS, make_dataset(X, y, qid=q), [("v", make_dataset(Xv, yv, qid=as_text(qv)))])
        Ranker(n_estimators=2, n_threads=1).fit(X, y, qid=q, eval_set=[(Xv, yv, as_text(qv))])
    assert _shared(caught) == []


def test_train_text_query_ids_shared_are_warned_of():
    X, y, q = _set(0, 8)
    Xv, yv, qv = _set(6, 4, seed=1)
    text = np.array([f"q{v}" for v in q], dtype=object)
    vtext = np.array([f"q{v}" for v in qv], dtype=object)
    with pytest.warns(ltrboost.SharedQueriesWarning, match=r"shares 2 query ids .*e\.g\. qid q6"):
        train(PARAMS, make_dataset(X, y, qid=text), [("v", make_dataset(Xv, yv, qid=vtext))])


# --- 3. Dask ---------------------------------------------------------------------------


def _dask_data(X, y, qid, n_parts=2, w=None):
    from ltrboost import dask as ldask

    da = pytest.importorskip("dask.array")
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    cuts = [0, *[int(starts[len(starts) * k // n_parts]) for k in range(1, n_parts)], len(qid)]
    chunks = tuple(np.diff(cuts))

    def arr(a):
        return None if a is None else da.from_array(a, chunks=(chunks, *a.shape[1:]))

    return ldask.DaskData(arr(X), arr(y), arr(qid), arr(w))


def _dask_train(client, tr, valid_sets, **params):
    from ltrboost import dask as ldask

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ldask.train(client, {**PARAMS, **params}, tr, valid_sets)
    return caught


def test_dask_train_warns_of_a_validation_set_sharing_query_ids(client):
    from ltrboost import dask as ldask

    tr = _dask_data(*_set(0, 10))
    clean = _dask_data(*_set(20, 4, seed=2))
    leaked = _dask_data(*_set(7, 6, seed=1))  # qids 7..12: 7, 8, 9 are training queries
    caught = _dask_train(client, tr, [("clean", clean), ("vali", leaked)], early_stopping_rounds=1)
    shared = _shared(caught)
    assert len(shared) == 1, [str(w.message) for w in caught]
    assert shared[0].startswith(
        "validation set 'vali' (index 1) shares 3 query ids with the training set "
        "(of its 6; e.g. qid 7): "
    )
    assert "early stopping" in shared[0]
    # the same words as ltrboost.train on the same data
    local_tr = make_dataset(*_set(0, 10)[:2], qid=_set(0, 10)[2])
    local_vs = make_dataset(*_set(7, 6, seed=1)[:2], qid=_set(7, 6, seed=1)[2])
    with pytest.warns(ltrboost.SharedQueriesWarning) as rec:
        train(PARAMS, local_tr, [("clean", local_tr), ("vali", local_vs)])
    assert [str(w.message) for w in rec if "query ids" in str(w.message)] == shared
    line = sys._getframe().f_lineno + 2
    with pytest.warns(ltrboost.SharedQueriesWarning) as rec:
        ldask.train(client, PARAMS, tr, [("vali", leaked)])
    assert (rec[0].filename, rec[0].lineno) == (__file__, line)  # the caller's train(...)


def test_dask_train_disjoint_validation_set_is_not_warned_of(client):
    caught = _dask_train(client, _dask_data(*_set(0, 10)), [("v", _dask_data(*_set(10, 4, 1)))])
    assert _shared(caught) == []


def test_dask_train_the_training_set_as_a_validation_set_is_not_warned_of(client):
    """Watching the training metrics: the same DaskData, or the same collections."""
    X, y, q = _set(0, 10)
    tr = _dask_data(X, y, q)
    assert _shared(_dask_train(client, tr, [("train", tr)])) == []
    again = ltrboost.dask.DaskData(tr.X, tr.y, tr.qid)
    assert _shared(_dask_train(client, tr, [("train", again)])) == []


def test_dask_train_shared_string_query_ids_are_warned_of(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    from ltrboost import dask as ldask

    def frame(first, n, seed):
        X, y, q = _set(first, n, seed)
        df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=y, qid=[f"q{v}" for v in q])
        return dd.from_pandas(df, npartitions=2, sort=False)

    tr, vs = frame(0, 8, 0), frame(6, 4, 1)
    caught = _dask_train(
        client, ldask.DaskData(tr, "label", "qid"), [("v", ldask.DaskData(vs, "label", "qid"))]
    )
    shared = _shared(caught)
    assert len(shared) == 1, shared
    assert "shares 2 query ids" in shared[0]
    assert "e.g. qid q6" in shared[0]
    # numbers in one set, strings in the other: other queries (5 and "5" are two)
    Xv, yv, qv = _set(0, 4, 1)
    df = pd.DataFrame(Xv, columns=["a", "b", "c"]).assign(label=yv, qid=[str(v) for v in qv])
    num = pd.DataFrame(_set(0, 8)[0], columns=["a", "b", "c"]).assign(
        label=_set(0, 8)[1], qid=_set(0, 8)[2]
    )
    caught = _dask_train(
        client,
        ldask.DaskData(dd.from_pandas(num, npartitions=2, sort=False), "label", "qid"),
        [("v", ldask.DaskData(dd.from_pandas(df, npartitions=2, sort=False), "label", "qid"))],
    )
    assert _shared(caught) == []


def test_dask_ranker_fit_warns_of_an_eval_set_sharing_query_ids(client):
    from ltrboost.dask import DaskRanker

    X, y, q = _set(0, 10)
    Xv, yv, qv = _set(8, 4, seed=1)
    tr = _dask_data(X, y, q)
    vs = _dask_data(Xv, yv, qv)
    model = DaskRanker(client=client, n_estimators=2, min_samples_leaf=2, n_threads=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(tr.X, tr.y, qid=tr.qid, eval_set=[(vs.X, vs.y, vs.qid)])
    shared = _shared(caught)
    assert len(shared) == 1, shared
    assert "validation set 'valid_0' (index 0) shares 2 query ids" in shared[0]
    with warnings.catch_warnings(record=True) as caught:  # its own training data: no leak
        warnings.simplefilter("always")
        model.fit(tr.X, tr.y, qid=tr.qid, eval_set=[(tr.X, tr.y, tr.qid)])
    assert _shared(caught) == []


def test_local_ranker_and_dask_ranker_agree_on_generated_sets(client):
    """``make_ranking`` twice with ``first_qid``: no warning on either route."""
    from ltrboost.dask import DaskRanker

    X, y, q = make_ranking(n_queries=12, docs_per_query=5, n_features=4, random_state=0)
    Xv, yv, qv = make_ranking(
        n_queries=4, docs_per_query=5, n_features=4, random_state=1, first_qid=12
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Ranker(n_estimators=2, n_threads=1).fit(X, y, qid=q, eval_set=[(Xv, yv, qv)])
        tr, vs = _dask_data(X, y, q), _dask_data(Xv, yv, qv)
        DaskRanker(client=client, n_estimators=2, n_threads=1).fit(
            tr.X, tr.y, qid=tr.qid, eval_set=[(vs.X, vs.y, vs.qid)]
        )
    assert _shared(caught) == []


def test_dask_an_equal_copy_of_the_training_set_under_another_graph_is_warned_of(client):
    """README's documented difference: telling an equal copy from the training set would
    take a pass over its rows, so on Dask only the same collections are exempt."""
    X, y, q = _set(0, 6)
    tr = _dask_data(X, y, q)
    copy = ltrboost.dask.DaskData(tr.X + 0.0, tr.y, tr.qid)  # the same values, another graph
    assert len(_shared(_dask_train(client, tr, [("copy", copy)]))) == 1

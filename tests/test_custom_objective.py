"""Custom objectives: ``objective=fn(scores, labels, query_offsets) -> (grad, hess)``.

The two examples of docs/custom.md are run from the document itself, checked against
central finite differences of independent NumPy losses, and trained: the squared-error
callable must give the very model of the built-in ``mart`` objective, the Numba RankNet
callable must improve NDCG.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import ltrboost
from ltrboost import Ranker
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.metrics import get_metric

DOC = Path(__file__).resolve().parent.parent / "docs" / "custom.md"
SMALL = dict(n_estimators=8, max_leaf_nodes=7, min_samples_leaf=5, n_threads=2)


def _doc_example(name: str) -> dict:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"<!-- {name}:[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert match, f"docs/custom.md has no example marked {name!r}"
    # no on-disk Numba cache from a test (it would land in docs/__pycache__)
    source = match.group(1).replace("cache=True", "cache=False")
    namespace: dict = {}
    exec(compile(source, str(DOC), "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def squared_error():
    return _doc_example("custom-se")["squared_error"]


@pytest.fixture(scope="module")
def ranknet():
    pytest.importorskip("numba")
    return _doc_example("custom-ranknet")["ranknet"]


@pytest.fixture(scope="module")
def ranknet_parallel():
    pytest.importorskip("numba")
    return _doc_example("custom-ranknet-parallel")["ranknet_parallel"]


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=30, docs_per_query=(4, 12), n_features=6, random_state=3)
    return X, y.astype(np.float64), qid


# --- independent losses (NumPy, no shared code with the callables) ---


def _se_loss(s, y, offsets):
    return float(np.sum((s - y) ** 2))


def _ranknet_loss(s, y, offsets):
    total = 0.0
    for q in range(len(offsets) - 1):
        a, b = offsets[q], offsets[q + 1]
        ds = s[a:b, None] - s[None, a:b]
        better = y[a:b, None] > y[None, a:b]
        total += float(np.sum(np.logaddexp(0.0, -ds[better])))
    return total


def _finite_difference_check(fn, loss, s, y, offsets, eps=1e-5):
    grad, hess = fn(s, y, offsets)
    grad, hess = np.asarray(grad), np.asarray(hess)
    n = s.shape[0]
    fd_grad = np.empty(n)
    fd_hess = np.empty(n)
    for d in range(n):
        e = np.zeros(n)
        e[d] = eps
        fd_grad[d] = (loss(s + e, y, offsets) - loss(s - e, y, offsets)) / (2 * eps)
        fd_hess[d] = (fn(s + e, y, offsets)[0][d] - fn(s - e, y, offsets)[0][d]) / (2 * eps)
    np.testing.assert_allclose(grad, fd_grad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hess, fd_hess, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("example", ["squared_error", "ranknet", "ranknet_parallel"])
def test_doc_examples_match_finite_differences(example, request, data) -> None:
    fn = request.getfixturevalue(example)
    loss = _se_loss if example == "squared_error" else _ranknet_loss
    X, y, qid = data
    ds = make_dataset(X[:60], y[:60], qid=qid[:60])
    rng = np.random.default_rng(0)
    s = rng.normal(size=ds.n_samples)
    _finite_difference_check(fn, loss, s, np.asarray(ds.y, float), ds.query_offsets)


def test_squared_error_callable_is_mart_to_the_bit(squared_error, data) -> None:
    X, y, qid = data
    # labels of exact mean 0, so mart's initial score (the mean label) is the callable's 0
    y0 = y - y[::-1]
    assert y0.sum() == 0.0
    builtin = Ranker(objective="mart", **SMALL).fit(X, y0, qid=qid)
    custom = Ranker(objective=squared_error, **SMALL).fit(X, y0, qid=qid)
    assert builtin.booster_.init_score[0] == custom.booster_.init_score[0] == 0.0
    np.testing.assert_array_equal(builtin.predict(X), custom.predict(X))
    # a different loss gives a different model (the comparison can fail)
    other = Ranker(objective=lambda s, y, q: (3.0 * (s - y), np.full_like(s, 2.0)), **SMALL)
    assert not np.array_equal(other.fit(X, y0, qid=qid).predict(X), builtin.predict(X))


def test_squared_error_callable_under_se_criterion(squared_error, data) -> None:
    X, y, qid = data
    y0 = y - y[::-1]
    kw = dict(SMALL, split_criterion="se")
    builtin = Ranker(objective="mart", **kw).fit(X, y0, qid=qid)
    custom = Ranker(objective=squared_error, **kw).fit(X, y0, qid=qid)
    np.testing.assert_array_equal(builtin.predict(X), custom.predict(X))


def test_ranknet_callable_trains_and_improves_ndcg(ranknet, data) -> None:
    X, y, qid = data
    ndcg = get_metric("ndcg@10")
    ds = make_dataset(X, y, qid=qid)
    before = ndcg(np.zeros(ds.n_samples), ds.y, ds.query_offsets)
    model = Ranker(objective=ranknet, n_estimators=20, min_samples_leaf=5, n_threads=2)
    model.fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    after = ndcg(model.predict(ds.X), ds.y, ds.query_offsets)
    assert after > before + 0.1
    curve = model.evals_result_["valid_0"]["ndcg@10"]
    assert curve[-1] > curve[0]
    assert model.booster_.objective == "custom:ranknet"


def test_train_function_accepts_a_callable(squared_error, data) -> None:
    X, y, qid = data
    ds = make_dataset(X, y, qid=qid)
    booster = ltrboost.train(dict(SMALL, objective=squared_error), ds)
    assert booster.objective == "custom:squared_error"
    assert booster.params["objective"] == "custom:squared_error"
    assert booster.objective_params == {}


def test_callable_sees_rows_grouped_by_query(data) -> None:
    X, y, qid = data
    perm = np.random.default_rng(1).permutation(len(y))
    Xs, ys, qs = X[perm], y[perm], qid[perm]
    seen = {}

    def spy(scores, labels, query_offsets):
        seen.update(scores=scores.copy(), labels=labels.copy(), offsets=query_offsets.copy())
        assert not scores.flags.writeable
        assert not labels.flags.writeable
        return 2.0 * (scores - labels), np.full_like(scores, 2.0)

    Ranker(objective=spy, n_estimators=1, n_threads=2).fit(Xs, ys, qid=qs)
    ds = make_dataset(Xs, ys, qid=qs)
    np.testing.assert_array_equal(seen["labels"], ds.y)
    np.testing.assert_array_equal(seen["offsets"], ds.query_offsets)
    assert seen["offsets"].dtype == np.int64
    assert seen["scores"].dtype == np.float64
    assert seen["scores"].shape == (len(y),)
    # every group is one query of the caller's data
    grouped_qid = qs[ds.order] if ds.order is not None else qs
    for q in range(len(ds.query_offsets) - 1):
        a, b = ds.query_offsets[q], ds.query_offsets[q + 1]
        assert len(set(grouped_qid[a:b])) == 1


def test_custom_model_saves_loads_predicts_and_resumes(squared_error, data, tmp_path) -> None:
    X, y, qid = data
    model = Ranker(objective=squared_error, **SMALL).fit(X, y, qid=qid)
    path = tmp_path / "m.json"
    model.save_model(str(path))
    loaded = ltrboost.load_model(path)
    assert loaded.objective == "custom:squared_error"
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    # resuming without the callable: a clear error naming the function
    with pytest.raises(ValueError, match="objective=squared_error"):
        Ranker(objective="lambdamart", n_estimators=2).fit(X, y, qid=qid, init_model=path)
    with pytest.raises(ValueError, match="pass the function again"):
        Ranker(objective="custom:squared_error", n_estimators=2).fit(X, y, qid=qid, init_model=path)
    # with the callable: n_estimators more rounds, the same as one uninterrupted run
    resumed = Ranker(objective=squared_error, **SMALL).fit(X, y, qid=qid, init_model=path)
    full = Ranker(objective=squared_error, **dict(SMALL, n_estimators=16)).fit(X, y, qid=qid)
    assert resumed.booster_.n_iterations == 16
    np.testing.assert_array_equal(resumed.predict(X), full.predict(X))
    # from_booster gives a Ranker that predicts
    again = Ranker.from_booster(loaded)
    np.testing.assert_array_equal(again.predict(X), model.predict(X))


def _bad(kind):
    def fn(scores, labels, query_offsets):
        n = scores.shape[0]
        g, h = 2.0 * (scores - labels), np.full(n, 2.0)
        if kind == "shape":
            return g[:-1], h
        if kind == "nan":
            g = g.copy()
            g[3] = np.nan
            return g, h
        if kind == "negative":
            return g, -h
        if kind == "not_pair":
            return g
        if kind == "strings":
            return g, np.array(["a"] * n)
        if kind == "huge":  # finite in float64, inf in the engine's float32
            return g, np.full(n, 1e300)
        raise AssertionError(kind)

    return fn


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("shape", r"grad has shape \(\d+,\), expected \(\d+,\)"),
        ("nan", r"grad is not finite at 1 document\(s\), first grad\[3\]=nan"),
        ("negative", r"hess must be >= 0"),
        ("not_pair", r"must return a pair \(grad, hess\)"),
        ("strings", r"hess must hold real numbers"),
        ("huge", r"hess\[0\]=1e\+300 is beyond float32's range"),
    ],
)
def test_bad_gradients_are_refused_naming_the_round(kind, message, data) -> None:
    X, y, qid = data
    with pytest.raises(ValueError, match=message) as info:
        Ranker(objective=_bad(kind), n_estimators=2, n_threads=2).fit(X, y, qid=qid)
    # rounds count from 1, as in the logs and the engine's own non-finite error
    assert "objective 'custom:fn' (round 1)" in str(info.value)


def test_refusals(squared_error, data) -> None:
    X, y, qid = data
    with pytest.raises(ValueError, match='split_criterion="ole"'):
        Ranker(objective=squared_error, split_criterion="ole").fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="sample weights are not passed"):
        Ranker(objective=squared_error, n_estimators=1).fit(
            X, y, qid=qid, sample_weight=np.ones(len(y))
        )
    with pytest.raises(ValueError, match="pass the function again"):
        Ranker(objective="custom:squared_error", n_estimators=1).fit(X, y, qid=qid)
    with pytest.warns(UserWarning, match="does not use sigma=2"):
        Ranker(objective=squared_error, sigma=2.0, n_estimators=1).fit(X, y, qid=qid)


def test_clone_and_get_params_keep_the_callable(ranknet) -> None:
    from sklearn.base import clone

    model = Ranker(objective=ranknet)
    assert clone(model).get_params()["objective"] is ranknet


def test_parallel_ranknet_gives_the_serial_model(ranknet, ranknet_parallel, data) -> None:
    X, y, qid = data
    serial = Ranker(objective=ranknet, **SMALL).fit(X, y, qid=qid)
    parallel = Ranker(objective=ranknet_parallel, **SMALL).fit(X, y, qid=qid)
    np.testing.assert_array_equal(serial.predict(X), parallel.predict(X))

"""Adversarial review of LambdaMART's OLE pairs reading the round's gradient ranking
(``LambdaMART._ndcg_ole_pairs``, ``_gradient_ranking``) and of its per-rank kernels:
whatever ran before, ``ole_pairs`` must give ``pairs_to_csr(pair_terms(...))`` bit for
bit (pairs, order, float32 rho)."""

from __future__ import annotations

import copy
import dataclasses
import hashlib

import numpy as np
import pytest

import ltrboost
import ltrboost._numba as _numba
import ltrboost.objectives.lambdamart as lambdamart
from ltrboost.booster import BoosterParams, make_objective
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking, make_ranking_mslr_like
from ltrboost.pair_csr import pairs_to_csr


def _engine(obj, s, ds, bag=None):
    pt = obj.pair_terms(s, ds)
    return pairs_to_csr(pt.doc_i, pt.doc_j, pt.rho, ds.n_samples, bag)


def _assert_same(want, got):
    for a, b in zip(want, got, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def _gradient(obj, s, ds):
    g = np.empty(ds.n_samples, dtype=np.float32)
    h = np.empty(ds.n_samples, dtype=np.float32)
    obj.gradient_hessian(s, ds, g, h)
    return g, h


def _data(weighted=False, seed=3, n_queries=40):
    X, y, qid = make_ranking(
        n_queries=n_queries, docs_per_query=(1, 80), n_features=4, random_state=seed
    )[:3]
    rng = np.random.default_rng(seed)
    w = None
    if weighted:
        w = rng.uniform(0.0, 2.0, y.shape[0])
        w[rng.random(y.shape[0]) < 0.2] = 0.0  # zero weights
    return make_dataset(X, y, qid=qid, sample_weight=w), (X, y, qid)


def _lambdamart(**kw):
    return make_objective(BoosterParams(objective="lambdamart", **kw))


def _ole_ready(obj, ds, s):
    """An objective whose last gradient ranked ``s`` and that reuses rankings (OLE ran
    once before, as in a training's second round)."""
    obj.ole_pairs(s, ds)
    _gradient(obj, s, ds)
    s = np.ascontiguousarray(s, dtype=np.float64)
    assert obj._gradient_ranking(obj._ranking, s, ds) is not None


# --- bugs: the reused ranking must be the objective's own, untouched -----------------


def test_shallow_copy_reranking_the_shared_buffer_is_not_reused():
    """A shallow copy of the objective shares the gradient's ranking buffer; its own
    gradient re-sorts that buffer in place for other scores.  The original's OLE pairs
    for the scores it ranked used to read the copy's ranking (other pairs, wrong rho)."""
    ds, _ = _data()
    rng = np.random.default_rng(0)
    s = rng.normal(size=ds.n_samples)
    obj = _lambdamart(truncation_level=0)  # every pair: per-document counts keep
    _ole_ready(obj, ds, s)
    other = copy.copy(obj)
    _gradient(other, rng.normal(size=ds.n_samples), ds)
    _assert_same(_engine(obj, s, ds), obj.ole_pairs(s, ds))


def test_a_gradient_while_the_pairs_are_placed_does_not_resort_their_ranking(monkeypatch):
    """``ole_pairs`` releases the GIL between its two kernels; a gradient of the same
    objective in another thread (here: run in between, deterministically) took the
    ranking the pairs were reading and re-sorted it in place, so the pairs were placed
    by a ranking other than the one they were counted by.  The pairs now hold the
    ranking while they read it (the gradient ranks into a buffer of its own)."""
    ds, _ = _data()
    rng = np.random.default_rng(1)
    s = rng.normal(size=ds.n_samples)
    s_other = rng.normal(size=ds.n_samples)
    obj = _lambdamart(truncation_level=0)  # every pair: per-document counts keep
    want = _engine(obj, s, ds)
    _ole_ready(obj, ds, s)
    real = lambdamart.over_queries
    fired = []

    def interleaved(kernel, *args, **kw):
        real(kernel, *args, **kw)
        if kernel is lambdamart._ndcg_pair_doc_counts_queries and not fired:
            fired.append(True)
            _gradient(obj, s_other, ds)  # "another thread"

    monkeypatch.setattr(lambdamart, "over_queries", interleaved)
    got = obj.ole_pairs(s, ds)
    monkeypatch.setattr(lambdamart, "over_queries", real)
    assert fired
    _assert_same(want, got)
    # and the objective goes on: the other thread's ranking is the one reused now
    _assert_same(_engine(obj, s_other, ds), obj.ole_pairs(s_other, ds))
    _assert_same(want, obj.ole_pairs(s, ds))


def test_a_failed_pairs_call_keeps_the_ranking_for_the_next_gradient(monkeypatch):
    """A refusal inside ``ole_pairs`` (too many pairs) hands the held ranking back:
    the next gradient re-sorts it rather than sorting from scratch (same result)."""
    ds, _ = _data()
    s = np.random.default_rng(2).normal(size=ds.n_samples)
    obj = _lambdamart(truncation_level=0)
    _ole_ready(obj, ds, s)
    held = obj._ranking

    def refuse(*args, **kw):
        raise ValueError("too many pairs")

    monkeypatch.setattr(lambdamart._engine, "_check_ole_pair_count", refuse)
    with pytest.raises(ValueError, match="too many pairs"):
        obj.ole_pairs(s, ds)
    assert obj._ranking is held


# --- guards: whatever ran before, the engine's pairs ------------------------------

KWS = [
    dict(),
    dict(truncation_level=0),
    dict(truncation_level=1),
    dict(pair_method="topk", truncation_level=2),
    dict(truncation_level=500),  # more than any query
    dict(truncation_level=0, lambda_normalization=False, sigma=2.5),
]


@pytest.mark.parametrize("kw", KWS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("spread", [1.0, 2000.0, 1e300])
def test_pairs_after_any_gradient_are_the_engines(kw, weighted, spread):
    """The gradient's ranking is read only for the very scores it ranked: after a
    gradient on the same scores (in another array, float32, strided), on scores changed
    in place since, on another dataset (also one sharing the query offsets object, or
    equal offsets), twice in a row, with a bag that drops everything; scores with ties
    and spread so far that some queries (not all) take the pair-by-pair fallback."""
    ds, (X, y, qid) = _data(weighted)
    n = ds.n_samples
    rng = np.random.default_rng(int(spread) % 97 + len(kw))
    obj = _lambdamart(**kw)
    s = rng.normal(size=n)
    s[:15] = 0.0  # ties
    s[200:260] *= spread  # only some queries spread far
    bag = rng.random(n) < 0.6
    want = _engine(obj, s, ds, bag)
    want_all = _engine(obj, s, ds)

    _assert_same(want, obj.ole_pairs(s, ds, in_bag=bag))  # before any gradient
    _gradient(obj, s, ds)
    _assert_same(want, obj.ole_pairs(s, ds, in_bag=bag))
    _assert_same(want, obj.ole_pairs(s, ds, in_bag=bag))  # twice
    _assert_same(want_all, obj.ole_pairs(s.copy(), ds))
    strided = np.empty(2 * n)
    strided[::2] = s
    _gradient(obj, strided[::2], ds)
    _assert_same(want, obj.ole_pairs(strided[::2], ds, in_bag=bag))
    s32 = (rng.normal(size=n) * min(spread, 1e30)).astype(np.float32)
    _gradient(obj, s32.astype(np.float64), ds)
    _assert_same(_engine(obj, s32, ds, bag), obj.ole_pairs(s32, ds, in_bag=bag))
    empty = obj.ole_pairs(s32, ds, in_bag=np.zeros(n, dtype=bool))
    assert empty.n_pairs == 0
    assert not empty.ptr.any()

    # changed in place after the gradient: ranked again
    t = s.copy()
    _gradient(obj, t, ds)
    t[[5, 300]] = t[[300, 5]] + 3.0
    _assert_same(_engine(obj, t, ds, bag), obj.ole_pairs(t, ds, in_bag=bag))

    # other labels on the same query offsets object, and on equal offsets
    y_other = rng.permutation(y)
    shared = dataclasses.replace(ds, y=y_other, cache={})
    assert shared.query_offsets is ds.query_offsets
    equal = make_dataset(X, y_other, qid=qid)
    for other in (shared, equal):
        _gradient(obj, s, ds)
        _assert_same(_engine(obj, s, other, bag), obj.ole_pairs(s, other, in_bag=bag))
        _assert_same(want, obj.ole_pairs(s, ds, in_bag=bag))

    # alternating with a dataset of another size
    ds_b, _ = _data(seed=5, n_queries=25)
    s_b = rng.normal(size=ds_b.n_samples)
    want_b = _engine(obj, s_b, ds_b)
    for _ in range(2):
        _gradient(obj, s, ds)
        _assert_same(want_b, obj.ole_pairs(s_b, ds_b))
        _assert_same(want, obj.ole_pairs(s, ds, in_bag=bag))
        _gradient(obj, s_b, ds_b)
        _assert_same(want, obj.ole_pairs(s, ds, in_bag=bag))
        _assert_same(want_b, obj.ole_pairs(s_b, ds_b))


def test_degenerate_queries_and_all_tied_scores():
    """Queries of one document, of one grade, all scores tied (also as -0.0 against
    the gradient's +0.0: equal, the same ranking), a bag with one document a query."""
    sizes = [1, 2, 3, 1, 7, 40, 2]
    qid = np.repeat(np.arange(len(sizes)), sizes)
    n = qid.shape[0]
    rng = np.random.default_rng(4)
    y = rng.integers(0, 4, n).astype(np.float64)
    y[1:3] = 2.0  # a query of one grade
    ds = make_dataset(np.zeros((n, 1)), y, qid=qid)
    bag = np.zeros(n, dtype=bool)
    bag[np.r_[0, np.cumsum(sizes)[:-1]]] = True  # one document a query: no pair
    for kw in KWS:
        obj = _lambdamart(**kw)
        zeros = np.zeros(n)
        negative = zeros.copy()
        negative[::3] = -0.0
        _ole_ready(obj, ds, zeros)
        _assert_same(_engine(obj, negative, ds), obj.ole_pairs(negative, ds))
        assert obj.ole_pairs(zeros, ds, in_bag=bag).n_pairs == 0


def test_unbiased_lambdamart_is_not_touched():
    """Unbiased LambdaMART has no OLE pairs (refused as before) and keeps no ranking."""
    ds, _ = _data()
    ds.position = np.tile(np.arange(1, 81), ds.n_samples // 80 + 1)[: ds.n_samples]
    obj = _lambdamart(unbiased=True)
    s = np.random.default_rng(0).normal(size=ds.n_samples)
    obj.prepare(ds)
    with pytest.raises(ValueError, match="ole"):
        obj.ole_pairs(s, ds)
    _gradient(obj, s, ds)
    assert obj._ranking is None


@pytest.mark.parametrize(
    "kw", [dict(truncation_level=1), dict(pair_method="topk", truncation_level=2)]
)
def test_a_query_longer_than_int16_offsets_on_one_and_two_threads(kw, monkeypatch):
    """A query of 40,000 documents (pairs 39,999 rows apart: int32 offsets), small
    queries beside it, some of them spread to tiny exponentials, zero weights and a
    bag; the same pairs on one and two threads, before and after a gradient."""
    sizes = [40000, 1, 3, 50, 2, 700]
    qid = np.repeat(np.arange(len(sizes)), sizes)
    n = qid.shape[0]
    rng = np.random.default_rng(1)
    y = rng.integers(0, 5, n).astype(np.float64)
    w = rng.uniform(0.0, 2.0, n)
    w[::7] = 0.0
    ds = make_dataset(np.zeros((n, 1)), y, qid=qid, sample_weight=w)
    s = rng.normal(size=n)
    s[40000:40060] *= 3000.0
    s[:100] = 0.0
    s[0] = 10.0  # the long query's best document first: offsets up to 39,999
    bag = rng.random(n) < 0.8
    monkeypatch.setattr(_numba, "MIN_DOCS_PER_THREAD", 10)
    obj = _lambdamart(**kw)
    want = _engine(obj, s, ds, bag)
    assert want.offset.dtype == np.int32
    assert np.abs(want.offset).max() == 39999
    for n_threads in (1, 2):
        with _numba.threads(n_threads):
            _assert_same(want, obj.ole_pairs(s, ds, in_bag=bag))
            _gradient(obj, s, ds)
            _assert_same(want, obj.ole_pairs(s, ds, in_bag=bag))


def _model_hash(params, ds, tmp_path):
    path = tmp_path / "m.json"
    ltrboost.train(params, ds).save_model(path)
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "kw",
    [
        dict(truncation_level=0, subsample=0.6),
        dict(pair_method="topk", truncation_level=1, subsample=0.5, n_threads=2),
        dict(truncation_level=5, lambda_normalization=False),
    ],
)
def test_training_reads_the_gradient_ranking_without_changing_the_model(kw, monkeypatch, tmp_path):
    """OLE training with the gradient's ranking reused gives the model of a training
    that ranks the scores again for the pairs (byte for byte), weights with zeros."""
    X, y, qid = make_ranking_mslr_like(6000, docs_per_query=(1, 200), random_state=2)[:3]
    w = np.random.default_rng(3).uniform(0.0, 2.0, y.shape[0])
    w[::11] = 0.0
    ds = make_dataset(X[:, :20], y, qid=qid, sample_weight=w)
    params = dict(
        objective="lambdamart", split_criterion="ole", n_estimators=4, max_leaf_nodes=7,
        min_samples_leaf=20, random_state=1, **kw,
    )  # fmt: skip
    reused = []
    real = lambdamart.LambdaMART._gradient_ranking

    def spy(held, scores, data):
        got = real(held, scores, data)
        reused.append(got is not None)
        return got

    monkeypatch.setattr(lambdamart.LambdaMART, "_gradient_ranking", staticmethod(spy))
    with_reuse = _model_hash(params, ds, tmp_path)
    assert reused == [False, True, True, True]
    monkeypatch.setattr(lambdamart.LambdaMART, "_gradient_ranking", staticmethod(lambda *a: None))
    assert _model_hash(params, ds, tmp_path) == with_reuse


def test_a_long_query_whose_pairs_lie_close_takes_the_engines_int16_offsets():
    """A query of more than 32768 documents whose pairs all lie less than 32768 rows
    apart: the engine's ``pairs_to_csr`` holds them as int16 (6 bytes a pair);
    ``ole_pairs`` chose int32 from the query's length alone (the same values, another
    dtype, 2 bytes more a pair)."""
    n = 40000
    rng = np.random.default_rng(6)
    y = rng.integers(0, 3, n).astype(np.float64)
    ds = make_dataset(np.zeros((n, 1)), y, qid=np.zeros(n, dtype=np.int64))
    s = rng.normal(size=n)
    s[20000] = 10.0  # the best document mid-query: its pairs reach 20,000 rows at most
    obj = _lambdamart(truncation_level=1)
    want = _engine(obj, s, ds)
    assert want.offset.dtype == np.int16
    _assert_same(want, obj.ole_pairs(s, ds))


@pytest.mark.parametrize("length", [10, "rows+1", "2d"])
def test_ole_pairs_refuse_a_bag_of_the_wrong_shape(length):
    """A bag that is not one flag a row used to be read past its end by the pair
    kernels (garbage pairs); LambdaMART's own path and pairs_to_csr refuse it."""
    from ltrboost.booster import BoosterParams, make_objective
    from ltrboost.dataset import make_dataset
    from ltrboost.datasets import make_ranking
    from ltrboost.pair_csr import pairs_to_csr

    X, y, qid = make_ranking(n_queries=5, docs_per_query=(5, 10), n_features=3, random_state=0)[:3]
    ds = make_dataset(X, y, qid=qid)
    n = ds.n_samples
    bag = {
        10: np.ones(10, dtype=bool),
        "rows+1": np.ones(n + 1, dtype=bool),
        "2d": np.ones((n, 1), dtype=bool),
    }[length]
    obj = make_objective(BoosterParams(objective="lambdamart"))
    s = np.random.default_rng(0).normal(size=n)
    with pytest.raises(ValueError, match=r"in_bag must be one flag a row"):
        obj.ole_pairs(s, ds, in_bag=bag)
    with pytest.raises(ValueError, match=r"in_bag must be one flag a row"):
        pairs_to_csr(np.array([0]), np.array([1]), np.array([1.0]), n, bag)

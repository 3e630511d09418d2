"""Adversarial review of LambdaMART's OLE pairs reading the round's gradient ranking
(``LambdaMART._ndcg_ole_pairs``, ``_gradient_ranking``) and of its per-rank kernels:
whatever ran before, ``ole_pairs`` must give ``pairs_to_csr(pair_terms(...))`` bit for
bit (pairs, order, float32 rho)."""

from __future__ import annotations

import copy
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
    assert obj._gradient_ranking(np.ascontiguousarray(s, dtype=np.float64), ds) is not None


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

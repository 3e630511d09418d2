"""Adversarial checks of the memory limits (advlong5): each documented limit counts
every buffer it bounds and refuses before the allocation."""

from __future__ import annotations

import numpy as np
import pytest

import ltrboost.grower as grower
import ltrboost.histogram as histogram
from ltrboost import train
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking


def test_ole_histogram_check_counts_the_pair_histograms(monkeypatch) -> None:
    """OLE keeps a pair histogram per splittable leaf (the subtraction trick) besides
    its gradient histogram: ``check_histogram_memory`` counted one pair histogram in
    all, so a run that allocated ~2x ``$LTRBOOST_MAX_HISTOGRAM_BYTES`` passed it."""
    X, y, qid = make_ranking(n_queries=40, docs_per_query=60, n_features=8, random_state=0)[:3]
    ds = make_dataset(X, y, qid=qid)
    made = {"grad": 0, "pair": 0}
    get, buffer = histogram.HistogramPool.get, grower.TreeGrower._pair_buffer

    def counted_get(self):
        made["grad"] += not self._free
        return get(self)

    def counted_buffer(self):
        made["pair"] += not self._pair_pool
        return buffer(self)

    monkeypatch.setattr(histogram.HistogramPool, "get", counted_get)
    monkeypatch.setattr(grower.TreeGrower, "_pair_buffer", counted_buffer)
    params = dict(
        objective="ranknet",
        split_criterion="ole",
        n_estimators=2,
        max_leaf_nodes=31,
        min_samples_leaf=5,
        min_samples_bin=1,
    )
    train(params, ds)
    per_hist = 8 * 256 * 3 * 8  # 8 used features x (max_bins + 1) x 3 x 8 bytes
    allocated = (made["grad"] + made["pair"]) * per_hist
    # a limit below what that run allocated must refuse it up front
    monkeypatch.setenv("LTRBOOST_MAX_HISTOGRAM_BYTES", str(allocated - 1))
    with pytest.raises(ValueError, match="histograms"):
        train(params, ds)
    # Newton holds no pair histograms: the same limit leaves it alone
    train(dict(params, split_criterion="newton"), ds)


def test_yetirank_pair_buffers_are_bounded_by_the_distinct_pairs() -> None:
    """YetiRank wrote a round's pairs into one buffer of ``permutations * (n - 1)``
    slots per query for all queries at once (16 bytes a slot, plus a 25-byte-a-slot
    mask to compact it): ``permutations=1000`` on 50 queries of 20 documents took ~40 MB
    for at most 50 x 190 distinct pairs, and no limit saw it (each query's 19,000 slots
    are far below ``$LTRBOOST_MAX_QUERY_PAIRS``)."""
    import tracemalloc

    from ltrboost.objectives.yetirank import YetiRank

    X, y, qid = make_ranking(n_queries=50, docs_per_query=20, n_features=3, random_state=1)[:3]
    ds = make_dataset(X, y, qid=qid)
    scores = np.random.default_rng(0).normal(size=ds.n_samples)
    obj = YetiRank(permutations=1000)
    obj.prepare(ds)
    obj.yetirank_pairs(scores, ds, iteration=2)  # kernels loaded: only buffers below
    tracemalloc.start()
    try:
        offsets = obj.yetirank_pairs(scores, ds, iteration=3)[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert offsets[-1] <= 50 * 190
    assert peak < 2 << 20, f"{peak / 2**20:.1f} MiB for {offsets[-1]} pairs"


@pytest.mark.parametrize(
    "params",
    [
        dict(objective="gbrank"),
        dict(objective="qbrank"),
        dict(objective="ranknet", pair_method="sampled", pairs_per_sample=10),
        dict(objective="lambdamart", pair_method="sampled", pairs_per_sample=10),
    ],
)
def test_a_long_query_of_one_grade_is_not_refused_as_a_pair_buffer(params, monkeypatch) -> None:
    """A query whose documents share one grade holds no label pairs (README: such
    queries train), yet the query pair limit refused it by its length: a 15-document
    query of grade 0 was "gbrank holds its 105 document pairs at once" over a limit of
    100.  Long unclicked queries are common in click data."""
    monkeypatch.setenv("LTRBOOST_MAX_QUERY_PAIRS", "100")
    rng = np.random.default_rng(0)
    qid = np.r_[np.full(8, 3), np.full(15, 9)]
    y = np.r_[rng.integers(0, 3, 8), np.zeros(15)].astype(np.float64)
    X = rng.normal(size=(qid.shape[0], 2))
    p = dict(params, n_estimators=1, min_samples_leaf=1)
    train(p, make_dataset(X, y, qid=qid))
    # a long query with two grades is still refused, naming it
    y[-1] = 1.0
    with pytest.raises(ValueError, match="query 9 has 15 documents"):
        train(p, make_dataset(X, y, qid=qid))


@pytest.mark.parametrize("objective", ["lambdamart", "ranknet"])
def test_ole_pair_limit_in_a_later_round_names_it_and_fitting_advice(
    objective, monkeypatch
) -> None:
    """``topk`` pairs follow the scores: round 1 had 36 pairs, a later round 324 over a
    limit of 200.  The error then advised "Use pair_method='topk' with a
    truncation_level" to a run already using topk with truncation_level=3, and did not
    say that the count had grown since the first round."""
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", "200")
    rng = np.random.default_rng(0)
    y = np.tile(np.r_[np.zeros(3), np.ones(3), np.zeros(24)], 4)
    qid = np.repeat(np.arange(4), 30)
    X = np.c_[y + rng.normal(0, 0.1, y.size), rng.normal(size=y.size)]
    p = dict(
        objective=objective,
        split_criterion="ole",
        pair_method="topk",
        truncation_level=3,
        n_estimators=20,
        min_samples_leaf=2,
    )
    with pytest.raises(ValueError, match=r"in round \d+ .*Lower truncation_level \(now 3\)"):
        train(p, make_dataset(X, y, qid=qid))

"""Adversarial pass 3 on the metrics: every metric against a plain-Python definition
(and ranx where it has the metric), overflow and underflow, weights, pair memory."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ltrboost.dataset import LTRInputError
from ltrboost.metrics import evaluate, get_metric
from ltrboost.metrics import precision as precision_module


# --- plain-Python definitions (README "Metrics"), one query at a time ---
def _ranking(s):
    return sorted(range(len(s)), key=lambda i: (-s[i], i))  # ties keep input order


def _plain(family, s, y, k, gain="exp", eqs=1.0, thr=1.0, max_grade=0.0):
    order = _ranking(s)
    kk = len(s) if k == 0 else min(k, len(s))
    if family in ("ndcg", "dcg"):
        g = [(2.0**v - 1) if gain == "exp" else v for v in y]
        dcg = sum(g[order[r]] / math.log2(r + 2) for r in range(kk))
        if family == "dcg":
            return dcg
        idcg = sum(v / math.log2(r + 2) for r, v in enumerate(sorted(g, reverse=True)[:kk]))
        return eqs if idcg == 0 else dcg / idcg
    if family == "err":
        stop = [(2.0**v - 1) / 2.0**max_grade for v in y]
        err, reach = 0.0, 1.0
        for r in range(kk):
            err += reach * stop[order[r]] / (r + 1)
            reach *= 1 - stop[order[r]]
        return err
    rel = [v >= thr for v in y]
    if family == "p":
        return sum(rel[order[r]] for r in range(kk)) / k
    if not any(rel):
        return eqs
    if family == "mrr":
        return next((1 / (r + 1) for r in range(kk) if rel[order[r]]), 0.0)
    hits, total = 0, 0.0
    for r in range(kk):
        if rel[order[r]]:
            hits += 1
            total += hits / (r + 1)
    return total / (sum(rel) if k == 0 else min(k, sum(rel)))


def test_every_rank_metric_matches_its_plain_definition_on_ties_weights_and_edge_queries():
    rng = np.random.default_rng(0)
    for _ in range(400):
        sizes = rng.integers(0, 7, rng.integers(1, 5))
        sizes[0] = max(sizes[0], 1)
        qo = np.concatenate([[0], np.cumsum(sizes)])
        n = int(qo[-1])
        y = rng.integers(0, 4, n).astype(float) if rng.random() < 0.5 else rng.random(n) * 3
        if rng.random() < 0.2:
            y[:] = 0
        s = rng.integers(0, 3, n).astype(float) if rng.random() < 0.6 else rng.normal(size=n)
        if rng.random() < 0.2:
            s[rng.integers(0, n)] = rng.choice([np.inf, -np.inf, 1e308, -1e308, 5e-324])
        family = str(rng.choice(["ndcg", "dcg", "err", "map", "mrr", "p"]))
        k = int(rng.choice([1, 2, 3, 10] if family == "p" else [0, 1, 2, 3, 10]))
        gain = str(rng.choice(["exp", "linear"]))
        eqs, thr = float(rng.choice([0.0, 0.5, 1.0])), float(rng.choice([0.5, 1.0, 2.0]))
        w = rng.random(len(sizes)) + 0.01 if rng.random() < 0.4 else None
        metric = get_metric(
            family if k == 0 else f"{family}@{k}",
            gain=gain,
            empty_query_score=eqs,
            relevance_threshold=thr,
        )
        per = [
            _plain(family, s[lo:hi].tolist(), y[lo:hi].tolist(), k, gain, eqs, thr, y.max())
            for lo, hi in itertools.pairwise(qo)
        ]
        np.testing.assert_allclose(metric.per_query(s, y, qo), per, rtol=1e-9, atol=1e-12)
        assert metric(s, y, qo, w) == pytest.approx(np.average(per, weights=w), rel=1e-9)


def test_rank_metrics_match_ranx_on_distinct_scores():
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(1)
    for _ in range(20):
        sizes = rng.integers(1, 9, rng.integers(1, 5))
        qo = np.concatenate([[0], np.cumsum(sizes)])
        y = rng.integers(0, 4, int(qo[-1])).astype(float)
        for lo, _hi in itertools.pairwise(qo):
            y[lo] = max(y[lo], 1)  # ranx cannot hold a query without relevant documents
        s = rng.permutation(int(qo[-1])).astype(float)
        qrels = ranx.Qrels(
            {f"q{q}": {f"d{i}": int(y[i]) for i in range(lo, hi) if y[i] > 0}
             for q, (lo, hi) in enumerate(itertools.pairwise(qo))}
        )  # fmt: skip
        run = ranx.Run(
            {f"q{q}": {f"d{i}": float(s[i]) for i in range(lo, hi)}
             for q, (lo, hi) in enumerate(itertools.pairwise(qo))}
        )  # fmt: skip
        for ours, theirs, gain in [
            ("ndcg", "ndcg", "linear"),
            ("ndcg", "ndcg_burges", "exp"),
            ("dcg", "dcg_burges", "exp"),
            ("mrr", "mrr", "exp"),
            ("map", "map", "exp"),
        ]:
            for k in (0, 1, 3):
                want = ranx.evaluate(qrels, run, theirs if k == 0 else f"{theirs}@{k}")
                name = ours if k == 0 else f"{ours}@{k}"
                if ours == "map" and k:
                    continue  # map@k divides by min(k, relevant) here (README)
                assert get_metric(name, gain=gain)(s, y, qo) == pytest.approx(want, rel=1e-6)
            want = ranx.evaluate(qrels, run, "precision@3")
            assert get_metric("p@3")(s, y, qo) == pytest.approx(want, rel=1e-6)


def test_ndcg_of_a_subnormal_ideal_dcg_is_refused_not_inf():
    # linear gain 1e-310: 1 / IDCG overflowed and NDCG was inf (a value above 1)
    with pytest.raises(LTRInputError, match="too small for float64") as err:
        get_metric("ndcg", gain="linear")([0.0, 1.0, 2.0], [0.0, 1e-310, 0.0], [0, 1, 3])
    assert err.value.row == 1
    # a small but normal ideal DCG is fine
    value = get_metric("ndcg", gain="linear")([1.0, 0.0], [1e-300, 0.0], [0, 2])
    assert value == pytest.approx(1.0)


@pytest.mark.parametrize("weights", [None, [1.0, 1.0]])
def test_dcg_mean_of_finite_query_values_does_not_overflow_to_inf(weights):
    # each query's DCG is 1.7e308 (finite); the mean summed them to inf
    scores = np.array([1.0, 0.0, 1.0, 0.0])
    y = np.array([1.7e308, 0.0, 1.7e308, 0.0])
    value = get_metric("dcg", gain="linear")(scores, y, [0, 2, 4], weights)
    assert value == pytest.approx(1.7e308, rel=1e-12)
    res = evaluate(scores, y, [0, 2, 4], "dcg", gain="linear", query_weights=weights)
    assert res["dcg"] == value


@pytest.mark.parametrize(
    ("weights", "what"),
    [(["a", "b"], "query_weights must be real numbers"), ([1 + 1j, 1], "complex")],
)
def test_query_weights_that_are_not_real_numbers_are_named(weights, what):
    with pytest.raises(ValueError, match=what) as err:
        get_metric("map")([0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], [0, 2, 4], weights)
    assert "query_weights" in str(err.value)


def test_scores_that_are_not_numbers_are_named():
    # text is refused naming the first value (tests/test_smallmisc_adversarial6.py)
    with pytest.raises(ValueError, match=r"scores\[0\]='a' is not a number"):
        get_metric("ndcg")(np.array(["a", "b"]), [1.0, 0.0], [0, 2])
    with pytest.raises(ValueError, match="scores must be real numbers"):
        get_metric("ndcg")(np.array([{}, 1.0], dtype=object), [1.0, 0.0], [0, 2])


def test_pair_counts_match_the_pairwise_definition():
    rng = np.random.default_rng(2)
    for _ in range(50):
        sizes = rng.integers(0, 9, rng.integers(1, 6))
        qo = np.concatenate([[0], np.cumsum(sizes)])
        y = rng.integers(0, 3, int(qo[-1])).astype(float)
        if rng.random() < 0.3:
            y[y == 0] = -0.0  # equal to 0.0
        want = [
            sum(y[i] != y[j] for i in range(lo, hi) for j in range(i + 1, hi))
            for lo, hi in itertools.pairwise(qo)
        ]
        got = precision_module._count_label_pairs(y, qo)
        assert got.dtype == np.int64
        assert got.tolist() == want


def test_pair_precision_refuses_pair_buffers_over_the_memory_limit(monkeypatch):
    # one query of 70,000 documents: 2.45e9 pairs, 39 GiB of buffers; the pairwise
    # counting loop alone ran for minutes before the allocation (no memory check)
    monkeypatch.setattr(precision_module, "_pair_memory_limit", lambda: 16 * 1000)
    y = np.tile([0.0, 1.0], 50)  # 2500 pairs with different labels
    with pytest.raises(
        ValueError, match=r"pair_precision needs .* 2500 pairs .* the 1st query \(rows 0 to 99\)"
    ):
        get_metric("pair_precision@10%").bind(y, [0, 100])
    get_metric("pair_precision@10%").bind(y[:40], [0, 40])  # 400 pairs fit


def _small_ranking_data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    y = rng.integers(0, 3, 60).astype(float)
    return X, y, np.repeat(np.arange(6), 10)


def test_metric_objects_in_eval_metric_are_recorded_by_their_names():
    # a Metric (get_metric's result) is a callable without __name__: it was recorded
    # as "custom", and two of them failed with "two metrics are named 'custom'"
    from ltrboost import Ranker

    X, y, qid = _small_ranking_data()
    # (the model's own gain: a Metric of other options is refused since the fourth pass,
    # tests/test_advmeta4_adversarial4.py)
    model = Ranker(
        n_estimators=3,
        gain="linear",
        eval_metric=[get_metric("ndcg@5", gain="linear"), get_metric("map")],
    ).fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    record = model.evals_result_["valid_0"]
    assert list(record) == ["ndcg@5", "map"]
    scores = model.predict(X)
    qo = np.arange(0, 61, 10)
    assert record["ndcg@5"][-1] == get_metric("ndcg@5", gain="linear")(scores, y, qo)
    # built-in metrics are recorded as the canonical string however given (tenth pass,
    # tests/test_apispell_adversarial10.py): the same file as eval_metric="ndcg@5,map"
    assert model.booster_.params["eval_metric"] == "ndcg@5,map"


def test_score_weights_a_metric_object_instead_of_refusing_it_as_a_callable():
    from ltrboost import Ranker

    X, y, qid = _small_ranking_data()
    model = Ranker(n_estimators=3).fit(X, y, qid=qid)
    w = np.repeat(np.arange(1.0, 7.0), 10)
    metric = get_metric("ndcg@5", gain="linear")
    want = metric(model.predict(X), y, np.arange(0, 61, 10), np.arange(1.0, 7.0))
    assert model.score(X, y, qid=qid, sample_weight=w, metric=metric) == want


def test_a_model_with_metric_objects_in_eval_metric_can_be_saved(tmp_path):
    # asdict() turned the Metric dataclass into a dict holding a Fraction: save_model
    # failed (not JSON serialisable)
    from ltrboost import Ranker, load_model

    X, y, qid = _small_ranking_data()
    model = Ranker(n_estimators=2, eval_metric=get_metric("pair_precision@10%")).fit(
        X, y, qid=qid, eval_set=[(X, y, qid)]
    )
    model.save_model(str(tmp_path / "m.json"))
    assert load_model(str(tmp_path / "m.json")).params["eval_metric"] == "pair_precision@10%"

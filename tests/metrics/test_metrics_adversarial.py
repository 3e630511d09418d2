"""Metric promises an adversarial pass found broken (stop 29)."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.datasets import make_ranking
from ltrboost.metrics import evaluate, get_metric


@pytest.mark.parametrize(
    "scores", [[5.0, 5.0, 0.0], [np.inf, np.inf, 0.0], [np.inf, np.inf, -np.inf], [-np.inf] * 3]
)
def test_pair_precision_counts_tied_infinite_scores_as_ties(scores):
    """inf - inf is NaN: a pair of equal infinite scores used to drop out of every
    count; it is a tie, which counts as contradicting (the documented rule)."""
    y, qo = np.array([2.0, 1.0, 0.0]), np.array([0, 3])
    s = np.array(scores)
    finite = np.where(np.isinf(s), np.sign(s) * 1e6, s)  # the same order, finite
    for name in ("pair_precision", "pair_precision@10%", "pair_precision@50%"):
        m = get_metric(name)
        assert m(s, y, qo) == m(finite, y, qo)
        np.testing.assert_array_equal(m.per_query(s, y, qo), m.per_query(finite, y, qo))


def test_training_records_canonical_metric_names_once():
    X, y, q = make_ranking(n_queries=10, docs_per_query=8, n_features=4, random_state=0)[:3]
    r = Ranker(n_estimators=2, eval_metric="NDCG@05, ndcg@5 ,ERR@010").fit(
        X, y, qid=q, eval_set=[(X, y, q)]
    )
    assert list(r.evals_result_["valid_0"]) == ["ndcg@5", "err@10"]


def test_evaluate_refuses_two_metrics_of_one_name_with_different_options():
    s, y, qo = np.array([0.3, 0.2, 0.1]), np.array([0.0, 1.0, 2.0]), np.array([0, 3])
    with pytest.raises(ValueError, match="two metrics named 'map'"):
        evaluate(s, y, qo, [get_metric("map", relevance_threshold=2), "map"])
    # the same metric twice is kept once, as parse_metric_list does
    assert list(evaluate(s, y, qo, ["map", get_metric("map")])) == ["map"]


def test_make_scorer_judges_a_model_with_its_gain_and_relevance_threshold():
    """README: a model's ``gain`` and ``relevance_threshold`` set its evaluation
    (``Ranker.score``, ``ltrboost eval``); make_scorer used the metric defaults instead:
    a linear-gain model with grades above 31 failed ('label 40 is too large'), and MAP
    of a model trained with relevance_threshold=3 counted grade 1 as relevant."""
    import pandas as pd
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from ltrboost.metrics import make_scorer

    X, y, q = make_ranking(n_queries=12, docs_per_query=8, n_features=4, random_state=0)[:3]
    df = pd.DataFrame(X).add_prefix("f").assign(qid=q)
    big = y * 20.0
    r = Ranker(n_estimators=2, gain="linear").fit(df, big)
    assert make_scorer("ndcg@10")(r, df, big) == r.score(df, big, metric="ndcg@10")
    r = Ranker(n_estimators=2, relevance_threshold=3).fit(df, y)
    assert make_scorer("map")(r, df, y) == r.score(df, y, metric="map")
    pipe = make_pipeline(FunctionTransformer(), Ranker(n_estimators=2, relevance_threshold=3))
    pipe.fit(df, y, ranker__qid=q)
    assert make_scorer("map")(pipe, df, y) == r.score(df, y, metric="map")
    # options given to make_scorer win over the model's
    explicit = make_scorer("map", relevance_threshold=1)(r, df, y)
    assert explicit == get_metric("map")(r.predict(df), *_grouped(y, q))


def _grouped(y, q):
    from ltrboost.dataset import make_dataset

    ds = make_dataset(np.zeros((len(y), 1)), y, qid=q)
    return ds.y, ds.query_offsets


@pytest.mark.parametrize("eval_metric", [",ndcg@5", ["", "ndcg@5"], " , NDCG@05,err"])
def test_score_uses_the_first_metric_training_recorded(eval_metric):
    """Training skipped empty entries of eval_metric; Ranker.score took the empty first
    entry and failed with "unknown metric ''" on a model that had trained fine.
    Training now refuses an empty entry (one grammar for every metric list); a model
    that recorded one (an earlier version's file) still scores with its first name."""
    X, y, q = make_ranking(n_queries=10, docs_per_query=8, n_features=4, random_state=0)[:3]
    with pytest.raises(ValueError, match="empty metric name"):
        Ranker(n_estimators=2, eval_metric=eval_metric).fit(X, y, qid=q, eval_set=[(X, y, q)])
    booster = Ranker(n_estimators=2, eval_metric="ndcg@5").fit(X, y, qid=q).booster_
    booster.params["eval_metric"] = eval_metric  # as an earlier version recorded it
    r = Ranker.from_booster(booster)
    assert r.score(X, y, qid=q) == r.score(X, y, qid=q, metric="ndcg@5")


def test_evaluate_metrics_argument_one_line_errors():
    """An empty metric list returned {} silently; None or a number was a bare
    "'NoneType' object is not iterable"; one Metric object was refused as not
    iterable (a name string is accepted alone)."""
    s, y, qo = np.array([0.3, 0.2, 0.1]), np.array([0.0, 1.0, 2.0]), np.array([0, 3])
    for bad in ([], (), None, 5):
        with pytest.raises(ValueError, match="metric"):
            evaluate(s, y, qo, bad)
    assert evaluate(s, y, qo, get_metric("ndcg@3")) == evaluate(s, y, qo, "ndcg@3")


@pytest.mark.parametrize(
    "name",
    [
        "pair_precision@0.0000000000001%",
        "pair_precision@12.3456789012345%",
        "pair_precision@99.9999999999999%",
        "pair_precision@33.333333333333333333%",
        "pair_precision@.5%",
        "pair_precision@2.50%",
    ],
)
def test_pair_precision_canonical_name_is_the_same_metric(name):
    """The canonical name of a percentage was its float rounded to 12 decimals: 1e-13%
    was named 'pair_precision@0%' (refused when read back), 99.9999999999999% was
    named 'pair_precision@100%' (another metric), so evals_result_ keys and model
    files named metrics that were not the ones evaluated."""
    m = get_metric(name)
    again = get_metric(m.name)
    assert again.percent == m.percent
    assert again.name == m.name


def test_pair_precision_canonical_name_is_short():
    assert get_metric("pair_precision@2.50%").name == "pair_precision@2.5%"
    assert get_metric("pair_precision@.5%").name == "pair_precision@0.5%"
    assert get_metric("pair_precision@010.0%").name == "pair_precision@10%"


@pytest.mark.parametrize("name", ["ndcg", "ndcg@2", "dcg"])
def test_linear_gain_labels_whose_dcg_overflows_are_refused(name):
    """With gain='linear' a grade near the float64 maximum made the ideal DCG inf, so
    1 / IDCG was 0 and every ranking scored empty_query_score (NDCG 1.0; DCG inf)."""
    y, qo = np.array([1e308, 1e308, 0.0]), np.array([0, 3])
    with pytest.raises(ValueError, match="overflow"):
        get_metric(name, gain="linear")(np.array([0.0, 1.0, 2.0]), y, qo)
    # large but representable grades still evaluate (NDCG is scale-free)
    ok = get_metric(name, gain="linear")(np.array([0.0, 1.0, 2.0]), y / 1e10, qo)
    assert np.isfinite(ok)


def test_evaluate_refuses_two_options_of_one_name_even_when_values_agree():
    """Two 'map' metrics with different thresholds were refused only when their values
    differed on the data at hand: on other data the same call returned one of them
    silently.  Options a family does not read do not make metrics different."""
    s, y, qo = np.array([0.3, 0.2, 0.1]), np.array([2.0, 0.0, 0.0]), np.array([0, 3])
    strict = get_metric("map", relevance_threshold=2)
    assert strict(s, y, qo) == get_metric("map")(s, y, qo)  # equal on these labels
    with pytest.raises(ValueError, match="two metrics named 'map'"):
        evaluate(s, y, qo, [strict, "map"])
    # gain is not an option of MAP: the same metric
    assert list(evaluate(s, y, qo, [get_metric("map", gain="linear"), "map"])) == ["map"]


@pytest.mark.parametrize(
    "options",
    [
        {"relevance_threshold": True},
        {"relevance_threshold": "2"},
        {"max_grade": False},
        {"max_grade": "4"},
        {"empty_query_score": True},
        {"empty_query_score": "0"},
    ],
)
def test_get_metric_options_are_real_numbers(options):
    """relevance_threshold=True was threshold 1.0, max_grade='4' was 4.0: training
    parameters refuse these ('must be a real number'); the metric options took them."""
    with pytest.raises(ValueError, match="must be a"):
        get_metric("map", **options)
    assert get_metric("err", max_grade=np.int64(4)).max_grade == 4.0  # NumPy numbers are fine

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

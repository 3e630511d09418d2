"""Ranking metrics: NDCG, DCG, ERR, MAP, MRR, P@k and seed 004's pair precision at K%.

``get_metric("ndcg@10")`` returns a :class:`Metric`;
``metric(scores, y, query_offsets)`` is its value over a dataset,
``metric.per_query(...)`` the value of every query, and
``metric.bind(y, query_offsets)`` a fast :class:`BoundMetric` for early stopping.
:func:`evaluate` computes several metrics by name, and :func:`make_scorer` makes a
scikit-learn scorer (``scoring=``) of one.  The shared conventions (ranking
with ties in input order, gains, discounts) are documented in
:mod:`ltrboost.metrics._dcg`; each metric's definition is in its module's docstring.
"""

from ltrboost.metrics._dcg import rank_order
from ltrboost.metrics.registry import (
    METRIC_FORMS,
    BoundMetric,
    Metric,
    available_metrics,
    evaluate,
    get_metric,
    parse_metric_list,
)

__all__ = [
    "METRIC_FORMS",
    "BoundMetric",
    "Metric",
    "RankingScorer",
    "available_metrics",
    "evaluate",
    "get_metric",
    "make_scorer",
    "parse_metric_list",
    "rank_order",
]


def __getattr__(name: str):
    # The scorer imports scikit-learn; load it only when asked for.
    if name in ("make_scorer", "RankingScorer"):
        from ltrboost.metrics import scorer

        return getattr(scorer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Custom objectives and metrics, cross-validation by query, importances and plots as a
user meets them (a third adversarial pass): semantics, not argument checks."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.datasets import make_ranking
from ltrboost.metrics import get_metric

FAST = dict(n_estimators=4, max_leaf_nodes=4, min_samples_leaf=3, random_state=0)


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=30, docs_per_query=(4, 12), n_features=5, random_state=3)
    return X, y, qid


def test_a_custom_metric_named_as_a_built_in_one_is_refused_in_either_order(data):
    """``eval_metric=[ndcg, "ndcg"]`` with a callable named ``ndcg`` recorded the
    callable alone: the built-in ``"ndcg"`` was dropped without a word, while the other
    order (``["ndcg", ndcg]``) was refused as two metrics of one name."""
    X, y, qid = data

    def ndcg(scores, labels, query_offsets):
        return 0.5

    for eval_metric in ([ndcg, "ndcg"], ["ndcg", ndcg], [ndcg, "NDCG"]):
        with pytest.raises(ValueError, match="two metrics are named 'ndcg'"):
            Ranker(**FAST, eval_metric=eval_metric).fit(X, y, qid=qid, eval_set=[(X, y, qid)])

    # the same callable twice, or a name twice, is one metric, as before (a callable
    # named as a built-in metric is refused alone too since the fourth pass,
    # tests/test_advmeta4_adversarial4.py: here one of its own name)
    def my_ndcg(scores, labels, query_offsets):
        return 0.5

    r = Ranker(**FAST, eval_metric=[my_ndcg, my_ndcg]).fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    assert list(r.evals_result_["valid_0"]) == ["my_ndcg"]


def test_plot_metric_takes_the_callable_given_as_eval_metric(data):
    """``plot_metric(model, metric=my_metric)`` with the very callable given to
    ``eval_metric`` said "metric <function my_metric ...> was not recorded"; it is
    recorded by its ``__name__``, which is what is drawn."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ltrboost.plot import plot_metric

    X, y, qid = data
    ndcg5 = get_metric("ndcg@5")

    def my_metric(scores, labels, query_offsets):
        return ndcg5(scores, labels, query_offsets)

    r = Ranker(**FAST, eval_metric=["ndcg@10", my_metric]).fit(
        X, y, qid=qid, eval_set=[(X, y, qid)]
    )
    try:
        ax = plot_metric(r, metric=my_metric)
        assert ax.get_ylabel() == "my_metric"
        np.testing.assert_array_equal(
            ax.get_lines()[0].get_ydata(), r.evals_result_["valid_0"]["my_metric"]
        )
        ax = plot_metric(r.evals_result_, metric=my_metric)
        assert ax.get_ylabel() == "my_metric"
    finally:
        plt.close("all")


def test_the_documented_ranknet_callable_is_the_built_in_ranknet(data):
    """docs/custom.md's Numba RankNet (sigma 1, every pair) trains the very model of the
    built-in ``objective="ranknet", pair_method="all"`` (the document says so)."""
    pytest.importorskip("numba")
    from test_custom_objective import _doc_example

    ranknet = _doc_example("custom-ranknet")["ranknet"]
    X, y, qid = data
    kw = dict(n_estimators=6, max_leaf_nodes=7, min_samples_leaf=5, n_threads=2)
    custom = Ranker(objective=ranknet, **kw).fit(X, y, qid=qid)
    builtin = Ranker(objective="ranknet", pair_method="all", sigma=1.0, **kw).fit(X, y, qid=qid)
    np.testing.assert_array_equal(custom.predict(X), builtin.predict(X))


def test_a_custom_objective_sees_the_callers_rows_when_each_querys_rows_are_together():
    """docs/custom.md: the rows are the caller's when each query's rows are together,
    sorted ``qid`` or not (queries in order of first appearance)."""
    qid = np.repeat([7, 2, 9, 0], 5)
    y = np.arange(20, dtype=np.float64) % 3
    X = np.arange(40, dtype=np.float64).reshape(20, 2)
    seen = []

    def spy(scores, labels, query_offsets):
        seen.append((labels.copy(), query_offsets.copy()))
        return scores - labels, np.ones_like(scores)

    Ranker(objective=spy, n_estimators=1, min_samples_leaf=1).fit(X, y, qid=qid)
    np.testing.assert_array_equal(seen[0][0], y)
    np.testing.assert_array_equal(seen[0][1], [0, 5, 10, 15, 20])

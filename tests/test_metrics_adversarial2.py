"""Adversarial pass over evaluation (second round): metric values during training, on
Dask, in ``ltrboost eval`` and ``cv`` agree with the documented conventions."""

from __future__ import annotations

import numpy as np

from ltrboost import Ranker
from ltrboost.datasets import make_ranking


def test_best_iteration_is_1_based_as_readme_says():
    """README: ``best_iteration_`` is 1-based (LightGBM's convention), the number of
    rounds ``predict`` uses, and the first of equal best values wins."""
    X, y, q = make_ranking(n_queries=30, docs_per_query=8, n_features=5, random_state=0)[:3]
    Xv, yv, qv = make_ranking(n_queries=10, docs_per_query=8, n_features=5, random_state=1)[:3]
    r = Ranker(n_estimators=30, eval_metric="ndcg@5", early_stopping_rounds=3).fit(
        X, y, qid=q, eval_set=[(Xv, yv, qv)]
    )
    history = r.evals_result_["valid_0"]["ndcg@5"]
    assert r.best_iteration_ == int(np.argmax(history)) + 1
    assert len(history) == r.best_iteration_ + 3
    np.testing.assert_array_equal(
        r.predict(Xv), r.booster_.predict(Xv, iteration=r.best_iteration_)
    )
    assert r.score(Xv, yv, qid=qv, metric="ndcg@5") == history[r.best_iteration_ - 1]

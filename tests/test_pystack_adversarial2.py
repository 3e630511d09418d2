"""The Python data stack under odd usage (a second adversarial pass, stop 33): custom
metrics, the scikit-learn attributes of an unfitted Ranker, ``eval_set`` given without
its list, and the plots' integer arguments."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import Ranker, make_dataset, train

FAST = dict(n_estimators=4, max_leaf_nodes=4, min_samples_leaf=3, random_state=0)


def test_a_custom_metric_cannot_change_the_scores_or_labels_it_is_given(frames):
    """A metric that normalised its scores in place changed the validation scores that
    training keeps adding trees to (every later round's metrics and early stopping
    moved, silently), and one that clipped its labels changed the caller's data."""
    df, y, qid, dv, yv, qv = frames

    def center(scores, labels, query_offsets):
        scores -= scores.mean()
        return 0.0

    with pytest.raises(ValueError, match="eval_metric 'center' wrote into its arguments"):
        Ranker(**FAST, eval_metric=["ndcg@10", center]).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])

    def clip(scores, labels, query_offsets):
        np.minimum(labels, 1, out=labels)
        return 0.0

    valid = make_dataset(dv, yv, qid=qv)
    before = valid.y.copy()
    with pytest.raises(ValueError, match="read-only"):
        train(dict(FAST, eval_metric=[clip]), make_dataset(df, y, qid=qid), [("v", valid)])
    np.testing.assert_array_equal(valid.y, before)

    def reads(scores, labels, query_offsets):  # reading them is what a metric does
        return float(np.corrcoef(scores, labels)[0, 1]) if scores.std() > 0 else 0.0

    r = Ranker(**FAST, eval_metric=["ndcg@10", reads]).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    plain = Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    assert r.evals_result_["valid_0"]["ndcg@10"] == plain.evals_result_["valid_0"]["ndcg@10"]
    assert r.score(dv, yv, qid=qv, metric=reads) == r.evals_result_["valid_0"]["reads"][-1]


@pytest.mark.parametrize("attribute", ["best_iteration_", "evals_result_", "position_bias_"])
def test_an_unfitted_rankers_fitted_attributes_say_it_is_not_fitted(attribute):
    """``Ranker().evals_result_`` raised "'Ranker' object has no attribute 'booster_'"
    (an attribute the user never named) instead of the NotFittedError that
    ``feature_importances_`` and ``predict`` raise; ``hasattr`` stays False."""
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="not fitted yet"):
        getattr(Ranker(), attribute)
    assert not hasattr(Ranker(), attribute)

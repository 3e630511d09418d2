"""scikit-learn scorers for ranking metrics: ``make_scorer("ndcg@10")``.

A ranking metric needs the query of every row, which scikit-learn's ``scoring=``
protocol (``scorer(estimator, X, y)``) does not carry.  The scorer finds it in one of
two ways:

1. a ``qid`` column of a pandas DataFrame ``X`` (XGBoost's convention; the
   :class:`~ltrboost.Ranker` ignores that column as a feature), so
   ``cross_val_score``/``GridSearchCV`` work with no metadata routing at all;
2. metadata routing: ``make_scorer("ndcg@10").set_score_request(qid=True)`` under
   ``sklearn.set_config(enable_metadata_routing=True)`` and ``fit(..., qid=qid)``;
3. ids bound to the rows of one ``X``: ``make_scorer("ndcg@10", qid=qid)``, for tools
   that route no metadata and must not see the ids as a column, such as
   ``sklearn.inspection.permutation_importance`` (which permutes every column of ``X``,
   a ``qid`` column too: that scrambles the queries, and reading them from that
   column there warns).

Example
-------
>>> import pandas as pd
>>> from sklearn.model_selection import GroupKFold, cross_val_score
>>> from ltrboost import Ranker
>>> from ltrboost.datasets import make_ranking
>>> from ltrboost.metrics import make_scorer
>>> X, y, qid = make_ranking(n_queries=30, random_state=0)
>>> df = pd.DataFrame(X).add_prefix("f").assign(qid=qid)
>>> scores = cross_val_score(Ranker(n_estimators=5), df, y, groups=qid,
...                          cv=GroupKFold(3), scoring=make_scorer("ndcg@10"))
>>> scores.shape
(3,)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltrboost.metrics._dcg import _validate_scores
from ltrboost.metrics.registry import get_metric

try:  # the scorer base class gives set_score_request (metadata routing)
    from sklearn.metrics._scorer import _BaseScorer
except ImportError:  # pragma: no cover - an sklearn without it: plain callable
    _BaseScorer = object  # type: ignore[assignment,misc]


class RankingScorer(_BaseScorer):
    """``scorer(estimator, X, y, *, qid=None, group=None, sample_weight=None)``.

    Made by :func:`make_scorer`; the mean of a ranking metric over the queries of
    ``X``.  Queries come from ``qid=`` / ``group=`` (metadata routing), from a
    ``qid`` column of a DataFrame ``X`` or, bound by ``make_scorer(..., qid=)``, from
    the ids given there (a ``qid`` column is then ignored).  ``sample_weight`` (per
    document) weights each query by the mean weight of its documents.

    ``gain`` and ``relevance_threshold`` not given to :func:`make_scorer` are those the
    fitted model was trained with (as ``Ranker.score`` and ``ltrboost eval``); as they
    do, a ``ParameterWarning`` says when that threshold counts every document of
    ``y_true`` relevant, or none (MAP, MRR and P@k are then the same whatever the scores).
    """

    def __init__(self, metric: str, *, qid: Any = None, group: Any = None, **options: Any):
        self.metric = get_metric(metric, **options)
        self._options = dict(options)
        if qid is not None and group is not None:
            raise ValueError(
                "make_scorer takes qid= or group=, not both (the queries of the rows of X)"
            )
        self._bound = None
        if qid is not None:
            self._bound = ("qid", np.asarray(qid).ravel())
        elif group is not None:
            self._bound = ("group", np.asarray(group).ravel())
        if _BaseScorer is not object:
            super().__init__(score_func=self.metric, sign=1, kwargs={})

    def __repr__(self) -> str:
        if self._bound is None:
            return f"make_scorer({self.metric.name!r})"
        name, ids = self._bound
        what = "ids" if name == "qid" else "sizes"
        return f"make_scorer({self.metric.name!r}, {name}=<{ids.shape[0]} {what}>)"

    def _bound_queries(self, X: Any, qid: Any, group: Any) -> tuple[Any, Any]:
        """The queries bound by make_scorer, checked against the rows of ``X``; refused
        when queries are given to the call as well."""
        name, ids = self._bound
        if qid is not None or group is not None:
            raise ValueError(
                f"the scorer has {name}= bound by make_scorer and was given "
                f"{'qid' if qid is not None else 'group'}= again (metadata routing): "
                "give the queries one way"
            )
        n_rows = X.shape[0]
        if name == "qid" and ids.shape[0] != n_rows:
            raise ValueError(
                f"the scorer's qid= bound by make_scorer has {ids.shape[0]} ids but X has "
                f"{n_rows} rows: bound ids score the rows of that one X (not a subsample "
                "such as permutation_importance's max_samples < 1, nor a cross-validation "
                "fold: use a 'qid' column or metadata routing there)"
            )
        if name == "group":
            try:
                total = int(np.sum(ids.astype(np.int64, casting="same_kind")))
            except (TypeError, ValueError):
                total = n_rows  # make_dataset names what is wrong with the sizes
            if total != n_rows:
                raise ValueError(
                    f"the scorer's group= bound by make_scorer counts {total} rows but X "
                    f"has {n_rows}: bound sizes score the rows of that one X"
                )
        return (ids, None) if name == "qid" else (None, ids)

    def __call__(self, estimator, X, y_true, **kwargs) -> float:
        return self._score(None, estimator, X, y_true, **kwargs)

    def _score(
        self,
        method_caller,
        estimator,
        X,
        y_true,
        *,
        qid=None,
        group=None,
        sample_weight=None,
        **_: Any,
    ) -> float:
        from ltrboost._evaluation import warn_if_metric_flat, warn_if_queries_permuted
        from ltrboost.dataset import arrow_as_frame, make_dataset, qid_column, rows_located

        X = arrow_as_frame(X)
        if self._bound is not None:  # a qid column of X is ignored: not a feature
            qid, group = self._bound_queries(X, qid, group)
        elif qid is None and group is None:
            if hasattr(X, "columns") and "qid" in list(X.columns):
                qid = qid_column(X)  # several columns of that name are refused
                warn_if_queries_permuted(self.metric.name)  # by permutation_importance?
            else:
                raise ValueError(
                    "the scorer needs the query of every row: give X as a DataFrame "
                    "with a 'qid' column, route qid= with metadata routing "
                    "(make_scorer(...).set_score_request(qid=True)), or bind the ids "
                    "of this X's rows with make_scorer(..., qid=qid)"
                )
        predicted = estimator.predict(X)
        try:  # checked in the caller's row order, so a NaN names the row of X
            n = np.shape(predicted)[0] if np.ndim(predicted) else 0
            scores = _validate_scores(predicted, n)
        except ValueError as e:
            raise ValueError(f"the scorer's estimator.predict(X): {e}") from None
        # Only the queries go through make_dataset, not the scores: as a feature column
        # an infinite score was refused ("feature 0 is inf"), though the metrics rank
        # +inf first and -inf last.
        ds = make_dataset(
            np.zeros((scores.shape[0], 1)), y_true, qid=qid, group=group,
            sample_weight=sample_weight,
        )  # fmt: skip
        if ds.order is not None:  # interleaved queries, grouped (stably)
            scores = scores[ds.order]
        qw = None
        if ds.weights is not None:
            sums = np.add.reduceat(ds.weights.astype(np.float64), ds.query_offsets[:-1])
            qw = sums / ds.query_sizes
        metric = self._metric_for(estimator)
        with rows_located(ds):  # a refused label named by the caller's row
            value = float(metric(scores, ds.y, ds.query_offsets, qw))
        # MAP / MRR / P@k that no ranking changes: warned as ltrboost eval warns
        warn_if_metric_flat(metric, ds.y, "the data given to the scorer", stacklevel=4)
        return value

    def _metric_for(self, estimator):
        """The metric with the model's ``gain`` / ``relevance_threshold`` where the
        scorer was not given them (README: a model is judged with the gains it was
        trained for)."""
        from ltrboost._evaluation import metric_options

        booster = _booster_of(estimator)
        if booster is None:
            return self.metric
        options = {**metric_options(booster.params), **self._options}
        return get_metric(self.metric.name, **options)


def _booster_of(estimator: Any) -> Any:
    """The fitted Booster of a Ranker, of a Pipeline's last step or a search's best
    estimator; None for anything else."""
    for _ in range(8):  # nested pipelines / searches, bounded
        booster = getattr(estimator, "booster_", None)
        if booster is not None and hasattr(booster, "params"):
            return booster
        inner = getattr(estimator, "_final_estimator", None)
        if inner is None:
            inner = getattr(estimator, "best_estimator_", None)
        if inner is None or inner is estimator:
            return None
        estimator = inner
    return None


def make_scorer(
    metric: str = "ndcg@10", *, qid: Any = None, group: Any = None, **options: Any
) -> RankingScorer:
    """A scikit-learn scorer (``scoring=``) for the ranking metric ``metric``.

    Parameters
    ----------
    metric : str, default="ndcg@10"
        A metric name of :func:`~ltrboost.metrics.get_metric`.
    qid, group : array-like, optional
        The queries of the rows of the one ``X`` the scorer will score, bound to it
        (a query id per row, or documents per query in row order; not both), for a
        tool that routes no metadata and must not see the ids as a column of ``X``:
        ``permutation_importance(ranker, X, y, scoring=make_scorer("ndcg@10",
        qid=qid))``, where a ``qid`` column of ``X`` would be permuted like a feature
        (with bound ids it is ignored, and its importance comes out 0).  An ``X`` with
        another number of rows is refused (a cross-validation fold, ``max_samples <
        1``: use a ``qid`` column or metadata routing there), as are queries routed
        to the call as well.
    **options
        ``gain``, ``relevance_threshold``, ``empty_query_score``, ``max_grade``, as in
        :func:`~ltrboost.metrics.get_metric`.  ``gain`` and ``relevance_threshold``
        default to those of the model being scored (its training parameters, as
        ``Ranker.score`` and ``ltrboost eval``), else to get_metric's defaults.

    Returns
    -------
    RankingScorer
        Higher is better, as scikit-learn expects.
    """
    return RankingScorer(metric, qid=qid, group=group, **options)

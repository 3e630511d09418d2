"""The skeleton every per-query metric evaluator shares (NDCG, ERR, AP, RR, P@k, pair
precision): labels and queries fixed once, then ``per_query(scores) -> (n_queries,)``.

A metric module subclasses :class:`QueryMetricEvaluator`, calls ``super().__init__``
(which validates labels, query boundaries and the cut-off and allocates the sort
buffers), precomputes what does not depend on the scores, and implements
:meth:`QueryMetricEvaluator._compute`, which calls its parallel kernel.  Evaluators
allocate nothing per call beyond the output, and are not safe to call from two Python
threads at once (the sort buffers are shared).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost._config import INDEX_DTYPE
from ltrboost.metrics._dcg import (
    _binary_relevance,
    _validate_empty_query_score,
    _validate_k,
    _validate_labels,
    _validate_query_offsets,
    _validate_scores,
)


def query_words(q: int) -> str:
    """Query ``q`` (0-based position) in words, ``"the 1st query"``, ``"the 2nd
    query"``, ...: a metric knows no query ids, and "query 0" read as a ``qid``.

    An error naming a query this way carries ``query`` (``q``) and ``query_words`` (the
    words it used, e.g. ``"the 2nd query (rows 4 to 23)"``), so that a caller who knows
    the ids (:func:`ltrboost.dataset.rows_located`) names it ``query <qid>`` instead.
    """
    n = q + 1
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"the {n}{suffix} query"


def query_error(message: str, q: int, words: str) -> ValueError:
    """A ValueError whose ``message`` names query ``q`` as ``words`` (see
    :func:`query_words`), with the attributes that let a caller name it by its id."""
    error = ValueError(message)
    error.query = q  # type: ignore[attr-defined]
    error.query_words = words  # type: ignore[attr-defined]
    return error


class QueryMetricEvaluator:
    """A metric of each query, for labels and queries fixed once.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Graded relevance labels, finite and >= 0.
    query_offsets : array-like of shape (n_queries + 1,), integer
        Query ``q`` owns rows ``query_offsets[q]:query_offsets[q + 1]``.
    k : int or None, default=0
        Cut-off (0 = whole list); None for a metric without one.

    Attributes
    ----------
    y, query_offsets, n_samples, n_queries, k
        The validated inputs.
    pooled : bool (class attribute)
        True when the dataset value is not a mean of the per-query values
        (:meth:`pooled_value` then gives it).
    """

    pooled: ClassVar[bool] = False
    # whether _compute sorts (needs the two int buffers of n_samples)
    sorts: ClassVar[bool] = True

    def __init__(self, y: ArrayLike, query_offsets: ArrayLike, *, k: int | None = 0) -> None:
        self.y = _validate_labels(y)
        self.query_offsets, self.n_samples = _validate_query_offsets(query_offsets, self.y.shape[0])
        self.n_queries = self.query_offsets.shape[0] - 1
        if k is not None:
            self.k = _validate_k(k)
        if self.sorts:
            self._order = np.empty(self.n_samples, dtype=INDEX_DTYPE)
            self._scratch = np.empty(self.n_samples, dtype=INDEX_DTYPE)

    def per_query(
        self, scores: ArrayLike, out: NDArray[np.float64] | None = None
    ) -> NDArray[np.float64]:
        """The metric of every query for ``scores``: shape (n_queries,), in ``out``."""
        scores = _validate_scores(scores, self.n_samples)
        if out is None:
            out = np.empty(self.n_queries, dtype=np.float64)
        self._compute(scores, out)
        return out

    def _compute(self, scores: NDArray[np.float64], out: NDArray[np.float64]) -> None:
        """Write every query's value into ``out`` (scores already validated)."""
        raise NotImplementedError


class BinaryRelevanceEvaluator(QueryMetricEvaluator):
    """The constructor of the metrics on binary relevance with an empty-query score
    (AP, RR): a document is relevant when ``y >= relevance_threshold``, and a query
    without relevant documents scores ``empty_query_score``.

    Parameters
    ----------
    y, query_offsets, k
        As for :class:`QueryMetricEvaluator`.
    relevance_threshold : float, default=1.0
        Labels at or above it are relevant.
    empty_query_score : float, default=1.0
        The value of a query without relevant documents.

    Attributes
    ----------
    empty_query_score : float
    relevant : ndarray of shape (n_samples,), dtype=uint8
        1 where the document is relevant.
    n_relevant : ndarray of shape (n_queries,), dtype=int64
        Relevant documents per query.
    """

    def __init__(
        self,
        y: ArrayLike,
        query_offsets: ArrayLike,
        *,
        k: int = 0,
        relevance_threshold: float = 1.0,
        empty_query_score: float = 1.0,
    ) -> None:
        super().__init__(y, query_offsets, k=k)
        self.empty_query_score = _validate_empty_query_score(empty_query_score)
        self.relevant, self.n_relevant = _binary_relevance(
            self.y, self.query_offsets, relevance_threshold
        )

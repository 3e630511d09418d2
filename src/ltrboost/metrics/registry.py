"""Metrics by name (``"ndcg@10"``, ``"err"``, ``"pair_precision@10%"``), bound or not.

One name grammar is shared by Python, the CLI, early stopping and model files:

==========================  ==========================================================
name                        metric (module that defines it)
==========================  ==========================================================
``ndcg``, ``ndcg@K``        NDCG over the whole list / top K (:mod:`.ndcg`)
``dcg``, ``dcg@K``          DCG (:mod:`.ndcg`)
``err``, ``err@K``          Expected Reciprocal Rank (:mod:`.err`)
``map``, ``map@K``          mean average precision (:mod:`.ap`)
``mrr``, ``mrr@K``          mean reciprocal rank (:mod:`.rr`)
``p@K``                     precision at rank K (:mod:`.precision`)
``pair_precision@K%``       seed 004's precision at K% over label pairs; without
                            ``@K%`` it is K = 100 (:mod:`.precision`)
==========================  ==========================================================

K is a positive integer (for ``pair_precision`` a percentage in (0, 100], decimals
allowed).  Names are case-insensitive and canonicalised to lowercase without leading
zeros (``"NDCG@05"`` -> ``"ndcg@5"``); ``"ndcg@0"`` is refused in favour of ``"ndcg"``.

The value over a dataset is the mean of the per-query values, weighted by optional
non-negative ``query_weights`` (LightGBM's ``NDCGMetric`` with query weights), except
for ``pair_precision``, which pools the pairs of all queries as seed 004 does.  All
these metrics are higher-is-better.

For early stopping, :meth:`Metric.bind` validates the labels and precomputes
everything that does not depend on the scores (gains, ``1 / IDCG``, ERR stop
probabilities, relevant counts, pair lists, sort buffers); the returned
:class:`BoundMetric` is then called once per boosting iteration and allocates nothing
when given float64 contiguous scores.
Per-query work runs in parallel over queries and every query writes its own slot, and
the mean is a serial sum in query order, so results do not depend on the thread count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost._numba import kernel
from ltrboost.metrics._dcg import GAINS, _is_real_number, _validate_empty_query_score
from ltrboost.metrics.ap import APEvaluator
from ltrboost.metrics.err import ERREvaluator
from ltrboost.metrics.ndcg import NDCGEvaluator
from ltrboost.metrics.precision import PairPrecisionEvaluator, PrecisionEvaluator
from ltrboost.metrics.rr import RREvaluator

METRIC_FORMS = (
    "ndcg",
    "ndcg@K",
    "dcg",
    "dcg@K",
    "err",
    "err@K",
    "map",
    "map@K",
    "mrr",
    "mrr@K",
    "p@K",
    "pair_precision",
    "pair_precision@K%",
)

_RANK_CUTOFF_NAME = re.compile(r"(ndcg|dcg|err|map|mrr|p)(?:@(\d+))?")
_PAIR_NAME = re.compile(r"pair_precision(?:@(\d+(?:\.\d+)?|\.\d+)%)?")


def _bad_name(name: object, why: str = "") -> ValueError:
    forms = ", ".join(repr(f) for f in METRIC_FORMS)
    reason = f" ({why})" if why else ""
    return ValueError(
        f"unknown metric {name!r}{reason}; valid forms are {forms}, with K a positive "
        "integer (for pair_precision a percentage in (0, 100]), e.g. 'ndcg@10', 'err', "
        "'pair_precision@10%'"
    )


MAX_CUTOFF = 2**62  # the largest K of 'ndcg@K' and the others (int64 in the kernels)


def _parse_name(name: str) -> tuple[str, str, int, Fraction]:
    """``name`` -> (canonical name, family, k, percent); ValueError if unknown."""
    if not isinstance(name, str):
        raise _bad_name(name, "metric names are strings")
    text = name.strip().lower()
    match = _RANK_CUTOFF_NAME.fullmatch(text)
    if match:
        family, k_text = match.group(1), match.group(2)
        if k_text is None:
            if family == "p":
                raise _bad_name(name, "precision needs a cut-off: 'p@K'")
            return family, family, 0, Fraction(100)
        k = int(k_text)
        if k == 0:
            hint = "use 'p@K' with K >= 1" if family == "p" else f"write {family!r}"
            raise _bad_name(name, f"K must be >= 1; for the whole list {hint}")
        if k > MAX_CUTOFF:  # the kernels take K as an int64
            hint = "" if family == "p" else f"; for the whole list write {family!r}"
            raise _bad_name(name, f"K must be at most {MAX_CUTOFF}{hint}")
        return f"{family}@{k}", family, k, Fraction(100)
    match = _PAIR_NAME.fullmatch(text)
    if match:
        percent = Fraction(match.group(1)) if match.group(1) else Fraction(100)
        if not 0 < percent <= 100:
            raise _bad_name(name, "the percentage must be in (0, 100]")
        if percent == 100:
            return "pair_precision", "pair_precision", 0, percent
        return (
            f"pair_precision@{_format_percent(percent)}%",
            "pair_precision",
            0,
            percent,
        )
    if re.fullmatch(r"pair_precision@\d+(\.\d+)?", text):
        raise _bad_name(name, f"pair precision takes a percentage: '{text}%'")
    hint = _other_library_hint(text)
    raise _bad_name(name, hint) if hint else _bad_name(name)


def _other_library_hint(text: str) -> str:
    """What another library's spelling of a metric is here ('' when none applies):
    XGBoost's ``ndcg@10-`` / ``pre@5``, ranx's ``precision@5`` / ``ndcg_burges@10``."""
    match = re.fullmatch(r"(ndcg|map)(@\d+)?-", text)
    if match:  # XGBoost: a query without relevant documents scores 0
        base = match.group(1) + (match.group(2) or "")
        return (
            f"XGBoost's trailing '-' scores a query without relevant documents 0: that "
            f"is get_metric({base!r}, empty_query_score=0) here; training and eval "
            "score such a query 1, as XGBoost's default and LightGBM"
        )
    match = re.fullmatch(r"(?:pre|precision)@(\d+)", text)
    if match and int(match.group(1)) >= 1:
        return f"precision at K is 'p@{int(match.group(1))}' here"
    match = re.fullmatch(r"ndcg_burges(@\d+)?", text)
    if match:
        base = "ndcg" + (f"@{int(match.group(1)[1:])}" if match.group(1) else "")
        return f"ranx's ndcg_burges is {base!r} with gain='exp' (the default) here"
    return ""


def _format_percent(percent: Fraction) -> str:
    """The exact decimal of a percentage parsed from a decimal string (5/2 -> '2.5').

    Exact, not rounded: the canonical name must parse back to the same percentage
    (a float rounded to 12 decimals named 1e-13% 'pair_precision@0%' and
    99.9999999999999% 'pair_precision@100%').  A decimal string's denominator has no
    prime factor but 2 and 5, so the expansion terminates.
    """
    if percent.denominator == 1:
        return str(percent.numerator)
    digits = 0
    scaled = percent
    while scaled.denominator != 1:
        scaled *= 10
        digits += 1
    text = str(scaled.numerator).rjust(digits + 1, "0")
    return f"{text[:-digits]}.{text[-digits:]}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Metric:
    """A named ranking metric with its options; build it with :func:`get_metric`.

    Attributes
    ----------
    name : str
        Canonical registry name, e.g. ``"ndcg@10"``.
    family : str
        ``"ndcg"``, ``"dcg"``, ``"err"``, ``"map"``, ``"mrr"``, ``"p"`` or
        ``"pair_precision"``.
    k : int
        Cut-off (0 = whole list; unused by pair precision).
    percent : Fraction
        K of pair precision at K% (100 for the other families).
    gain, empty_query_score, relevance_threshold, max_grade
        Options, see :func:`get_metric`; each family reads only its own.
    higher_is_better : bool
        True for every metric here (early stopping maximises them).
    """

    name: str
    family: str
    k: int = 0
    percent: Fraction = Fraction(100)
    gain: str = "exp"
    empty_query_score: float = 1.0
    relevance_threshold: float = 1.0
    max_grade: float | None = None

    higher_is_better: ClassVar[bool] = True

    @property
    def __name__(self) -> str:
        """The canonical name: a Metric given to ``eval_metric`` (or any API that names
        a callable metric by ``__name__``) is recorded as ``"ndcg@10"``, not
        ``"custom"`` (two of them collided under that name)."""
        return self.name

    def _options(self) -> dict[str, Any]:
        """The options this metric's family reads (two metrics of one name and equal
        options are the same metric)."""
        f = self.family
        if f == "ndcg":
            return {"gain": self.gain, "empty_query_score": self.empty_query_score}
        if f == "dcg":
            return {"gain": self.gain}
        if f == "err":
            return {"max_grade": self.max_grade}
        if f in ("map", "mrr"):
            return {
                "relevance_threshold": self.relevance_threshold,
                "empty_query_score": self.empty_query_score,
            }
        if f == "p":
            return {"relevance_threshold": self.relevance_threshold}
        return {"empty_query_score": self.empty_query_score}

    def _evaluator(self, y: ArrayLike, query_offsets: ArrayLike) -> Any:
        """The family's per-query evaluator for these labels (validates them)."""
        f = self.family
        if f in ("ndcg", "dcg"):
            return NDCGEvaluator(
                y,
                query_offsets,
                k=self.k,
                gain=self.gain,
                normalize=f == "ndcg",
                empty_query_score=self.empty_query_score,
            )
        if f == "err":
            return ERREvaluator(y, query_offsets, k=self.k, max_grade=self.max_grade)
        if f in ("map", "mrr"):
            cls = APEvaluator if f == "map" else RREvaluator
            return cls(
                y,
                query_offsets,
                k=self.k,
                relevance_threshold=self.relevance_threshold,
                empty_query_score=self.empty_query_score,
            )
        if f == "p":
            return PrecisionEvaluator(
                y, query_offsets, k=self.k, relevance_threshold=self.relevance_threshold
            )
        return PairPrecisionEvaluator(
            y,
            query_offsets,
            percent=self.percent,
            empty_query_score=self.empty_query_score,
        )

    def bind(
        self,
        y: ArrayLike,
        query_offsets: ArrayLike,
        query_weights: ArrayLike | None = None,
    ) -> BoundMetric:
        """Fix labels, queries and optional query weights; return a fast scorer.

        Parameters
        ----------
        y : array-like of shape (n_samples,)
            Relevance labels, finite and >= 0 (<= 31 with ``gain="exp"``).
        query_offsets : array-like of shape (n_queries + 1,), integer
            Query ``q`` owns rows ``query_offsets[q]:query_offsets[q + 1]``.
        query_weights : array-like of shape (n_queries,), optional
            Non-negative weights of the per-query values (not all zero).

        Returns
        -------
        BoundMetric
            ``bound(scores) -> float``, equal to ``self(scores, y, query_offsets,
            query_weights)``.
        """
        evaluator = self._evaluator(y, query_offsets)
        weights = _validate_query_weights(query_weights, evaluator.n_queries)
        return BoundMetric(self, evaluator, weights)

    def per_query(
        self, scores: ArrayLike, y: ArrayLike, query_offsets: ArrayLike
    ) -> NDArray[np.float64]:
        """The metric of every query, ndarray of shape (n_queries,), dtype=float64.

        For ``pair_precision`` this is each query's own precision at K% (the dataset
        value pools pairs instead of averaging these).
        """
        return self._evaluator(y, query_offsets).per_query(scores)

    def __call__(
        self,
        scores: ArrayLike,
        y: ArrayLike,
        query_offsets: ArrayLike,
        query_weights: ArrayLike | None = None,
    ) -> float:
        """The metric over the dataset: (weighted) mean over queries (pooled pairs for
        ``pair_precision``)."""
        return self.bind(y, query_offsets, query_weights)(scores)


class BoundMetric:
    """A :class:`Metric` bound to fixed labels and queries: ``bound(scores) -> float``.

    Made by :meth:`Metric.bind`.  It owns its work buffers, so one instance must not be
    called from two Python threads at the same time.
    """

    def __init__(
        self,
        metric: Metric,
        evaluator: Any,
        query_weights: NDArray[np.float64] | None,
    ) -> None:
        self.metric = metric
        self.name = metric.name
        self.higher_is_better = metric.higher_is_better
        self.n_samples: int = evaluator.n_samples
        self.n_queries: int = evaluator.n_queries
        self.query_weights = query_weights
        self._evaluator = evaluator
        self._out = np.empty(self.n_queries, dtype=np.float64)

    def per_query(self, scores: ArrayLike) -> NDArray[np.float64]:
        """The metric of every query for ``scores``: a new (n_queries,) array."""
        return self._evaluator.per_query(scores)

    def __call__(self, scores: ArrayLike) -> float:
        """The metric over the bound dataset for ``scores`` of shape (n_samples,)."""
        if self._evaluator.pooled:
            return float(self._evaluator.pooled_value(scores, self.query_weights))
        self._evaluator.per_query(scores, out=self._out)
        return mean_over_queries(self._out, self.query_weights)

    def __repr__(self) -> str:
        return f"BoundMetric({self.name!r}, n_queries={self.n_queries}, n_samples={self.n_samples})"


def get_metric(
    name: str,
    *,
    gain: str = "exp",
    empty_query_score: float = 1.0,
    relevance_threshold: float = 1.0,
    max_grade: float | None = None,
) -> Metric:
    """The metric registered under ``name``, with its options.

    Parameters
    ----------
    name : str
        A registry name (see the module docstring), e.g. ``"ndcg@10"``, ``"err"``,
        ``"map@10"``, ``"p@5"``, ``"pair_precision@10%"``.
    gain : {"exp", "linear"}, default="exp"
        DCG/NDCG gain: ``2^y - 1`` (Burges; labels <= 31) or ``y`` (Jarvelin).
    empty_query_score : float, default=1.0
        Score of a query on which the metric is undefined: NDCG with ideal DCG 0, AP and
        RR without relevant documents, pair precision without pairs.  1.0 as LightGBM
        and XGBoost; 0.0 as ranx and trec_eval.  DCG, ERR and P@k are defined for every
        query (such a query scores 0) and ignore it.
    relevance_threshold : float, default=1.0
        MAP, MRR and P@k count ``y >= relevance_threshold`` as relevant.
    max_grade : float or None, default=None
        ERR's ``y_max``; None uses the largest label of the labels being evaluated
        (fixed once by :meth:`Metric.bind`).

    Returns
    -------
    Metric

    Raises
    ------
    ValueError
        For an unknown name (the message lists the valid forms) or a bad option.
    """
    canonical, family, k, percent = _parse_name(name)
    if gain not in GAINS:
        raise ValueError(f"gain={gain!r} is not one of {GAINS}")
    empty_query_score = _validate_empty_query_score(empty_query_score)
    if not _is_real_number(relevance_threshold):
        raise ValueError(f"relevance_threshold={relevance_threshold!r} must be a number")
    relevance_threshold = float(relevance_threshold)
    if not math.isfinite(relevance_threshold):
        raise ValueError(f"relevance_threshold={relevance_threshold!r} must be finite")
    if max_grade is not None:
        if not _is_real_number(max_grade):
            raise ValueError(f"max_grade={max_grade!r} must be a number or None")
        max_grade = float(max_grade)
        if not math.isfinite(max_grade) or max_grade < 0:
            raise ValueError(f"max_grade={max_grade!r} must be finite and >= 0")
    return Metric(
        name=canonical,
        family=family,
        k=k,
        percent=percent,
        gain=gain,
        empty_query_score=empty_query_score,
        relevance_threshold=relevance_threshold,
        max_grade=max_grade,
    )


def split_metric_list(text: str | Iterable[Any]) -> list[Any]:
    """The entries of a metric list, as given: the one grammar of every metric list
    (``--metric`` of ``train``, ``cv`` and ``eval``, ``eval_metric=``, :func:`evaluate`).

    A string is split at commas and each entry stripped of the spaces around it; an
    iterable is taken entry by entry (a list entry is one name: it is not split).  An
    empty list, an empty entry (``"ndcg@5,"``, ``",ndcg@5"``, ``"ndcg@5,,map"``,
    ``["ndcg@5", ""]``) and a list of blanks are refused: a comma too many is a typo,
    and an empty list (an unset shell variable) must not pass for the default metric.
    Names are not checked here (:func:`parse_metric_list` does); entries that are not
    strings (``eval_metric``'s callables) are returned as they are.

    Raises
    ------
    ValueError
        ``no metric given in ...`` or ``empty metric name in ...``.
    """
    items = text.split(",") if isinstance(text, str) else list(text)
    blank = [isinstance(item, str) and not item.strip() for item in items]
    if all(blank):  # also no item at all
        raise ValueError(f"{NO_METRIC} in {text!r}; e.g. 'ndcg@10,err,map'")
    if any(blank):
        k = blank.index(True)
        if isinstance(text, str):
            where = (
                "a comma at the start"
                if k == 0
                else "a comma at the end"
                if k == len(items) - 1
                else "two commas with no name between them"
            )
        else:
            where = f"entry {k} is {items[k]!r}"
        raise ValueError(
            f"{EMPTY_METRIC} in {text!r} ({where}); separate names by single commas, "
            "e.g. 'ndcg@5,map'"
        )
    return [item.strip() if isinstance(item, str) else item for item in items]


NO_METRIC = "no metric given"
EMPTY_METRIC = "empty metric name"


def parse_metric_list(text: str | Iterable[str]) -> list[str]:
    """Canonical metric names from a metric list (the CLI's ``--metric``).

    ``"NDCG@1, ndcg@3,err"`` -> ``["ndcg@1", "ndcg@3", "err"]``: the entries of
    :func:`split_metric_list`, each canonicalised (case-insensitive, no leading
    zeros); duplicates are dropped (first kept).  An iterable of names is accepted too.

    Raises
    ------
    ValueError
        For an empty list, an empty entry or an unknown name.
    """
    names: list[str] = []
    for item in split_metric_list(text):
        canonical = _parse_name(item)[0]
        if canonical not in names:
            names.append(canonical)
    return names


def available_metrics() -> tuple[str, ...]:
    """The name forms :func:`get_metric` accepts (``K`` stands for the cut-off)."""
    return METRIC_FORMS


def evaluate(
    scores: ArrayLike,
    y: ArrayLike,
    query_offsets: ArrayLike,
    metrics: str | Iterable[str | Metric] = ("ndcg@10",),
    *,
    query_weights: ArrayLike | None = None,
    **metric_kwargs: Any,
) -> dict[str, float]:
    """Several metrics of one ranking, by name.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Model scores, no NaN.
    y : array-like of shape (n_samples,)
        Relevance labels.
    query_offsets : array-like of shape (n_queries + 1,), integer
        Query boundaries.
    metrics : str, Metric or iterable of str or Metric, default=("ndcg@10",)
        Names (a comma-separated string is split by :func:`parse_metric_list`) or
        :class:`Metric` objects, which keep their own options; at least one.
    query_weights : array-like of shape (n_queries,), optional
        Weights of the per-query values.
    **metric_kwargs
        Options passed to :func:`get_metric` for every name (``gain``,
        ``empty_query_score``, ``relevance_threshold``, ``max_grade``).

    Returns
    -------
    dict of str to float
        Canonical metric name -> value, in the order given.
    """
    if isinstance(metrics, str):
        metrics = parse_metric_list(metrics)
    elif isinstance(metrics, Metric):
        metrics = [metrics]
    elif not isinstance(metrics, Iterable):
        raise ValueError(
            f"metrics={metrics!r} must be a metric name, a comma-separated string, a "
            "Metric or a list of them, e.g. 'ndcg@10,err'"
        )
    else:
        metrics = list(metrics)
        if not metrics:
            raise ValueError("no metric given (metrics is empty); e.g. 'ndcg@10,err,map'")
    chosen: dict[str, Metric] = {}
    for m in metrics:
        metric = m if isinstance(m, Metric) else get_metric(m, **metric_kwargs)
        before = chosen.setdefault(metric.name, metric)
        if before._options() != metric._options():  # decided by options, not by data
            raise ValueError(
                f"two metrics named {metric.name!r} with different options "
                f"({before._options()} and {metric._options()}); evaluate them in "
                "separate calls"
            )
    return {
        name: metric(scores, y, query_offsets, query_weights) for name, metric in chosen.items()
    }


def _validate_query_weights(
    query_weights: ArrayLike | None, n_queries: int
) -> NDArray[np.float64] | None:
    """Per-query weights as float64 (n_queries,): finite, >= 0, not all zero; scaled by
    the largest, which leaves the weighted mean as it is (sums of weights near the
    float64 maximum overflowed to a NaN mean, subnormal ones lost their precision)."""
    if query_weights is None:
        return None
    if np.iscomplexobj(query_weights):  # float64 would drop the imaginary part
        raise ValueError(f"query_weights are complex ({np.asarray(query_weights).dtype})")
    try:
        w = np.ascontiguousarray(query_weights, dtype=np.float64)
    except OverflowError:  # a Python int beyond float64
        raise ValueError("query_weights must be real numbers within float64") from None
    except (TypeError, ValueError) as e:
        raise ValueError(f"query_weights must be real numbers ({e})") from None
    if w.ndim != 1 or w.shape[0] != n_queries:
        raise ValueError(
            f"query_weights has shape {w.shape} but there are {n_queries} queries "
            "(len(query_offsets) - 1)"
        )
    bad = ~np.isfinite(w) | (w < 0)
    if bad.any():
        q = int(np.flatnonzero(bad)[0])
        raise ValueError(f"query_weights[{q}]={w[q]} must be finite and >= 0")
    if not w.any():
        raise ValueError("query_weights are all zero; at least one query must count")
    return w / w.max()


def mean_over_queries(
    values: NDArray[np.float64], weights: NDArray[np.float64] | None = None
) -> float:
    """The dataset value of a (non-pooled) metric from its per-query ``values``
    (float64, (n_queries,), in query order): their (weighted) mean, summed serially in
    query order, so that values computed a block of queries at a time
    (``ltrboost eval``) give the whole dataset's bit for bit."""
    with np.errstate(over="ignore"):  # handled below
        value = _dataset_mean(values, weights)
    if not math.isfinite(value):
        # finite per-query values whose sum overflows (DCG of linear gains near the
        # float64 maximum): the mean of the values scaled by the largest, scaled back
        scale = float(np.max(np.abs(values)))
        value = _dataset_mean(values / scale, weights) * scale
    return value


def _dataset_mean(values: NDArray[np.float64], weights: NDArray[np.float64] | None) -> float:
    """The (weighted) mean of the per-query ``values``, summed in query order."""
    if weights is None:
        return float(_mean(values))
    return float(_weighted_mean(values, weights))


# --- kernels ---


def _mean(values):
    """Mean of ``values`` (float64, (n,), n >= 1), summed serially in index order.

    ``np.cumsum`` adds left to right, one rounding per element, so its last element is
    the serial loop's sum bit for bit (``+ 0.0``: a loop started at 0.0 never ends at
    -0.0); no kernel to compile for one pass over the queries.
    """
    return (float(np.cumsum(values)[-1]) + 0.0) / values.shape[0]


@kernel
def _weighted_mean(values, weights):
    """``sum(w * v) / sum(w)`` over float64 (n,) arrays, serially in index order."""
    numerator = 0.0
    denominator = 0.0
    for i in range(values.shape[0]):
        numerator += weights[i] * values[i]
        denominator += weights[i]
    return numerator / denominator


# --- references ---


def _weighted_mean_reference(values, weights=None):
    """``np.average`` of the per-query values."""
    return float(np.average(values, weights=weights))

"""The pairwise gradient engine shared by RankNet, RankBoost and LambdaMART.

For each query the engine takes the pairs of :mod:`.pair_selection` (plus explicit
preference pairs), weighs each by |delta Z| (the change of NDCG, ERR or AP when the two
documents swap ranks, from :mod:`ltrboost.metrics`; 1 for RankNet / RankBoost) and adds
the pair's first and second derivatives to both documents.  Everything per query is
independent, so blocks of queries run on threads (:func:`ltrboost._numba.over_queries`;
LightGBM's ``GetGradients`` -> ``GetGradientsForOneQuery`` skeleton).

One query is computed in stages, each a kernel of its own:

1. :func:`_next_weighted_pairs` -- which pairs, oriented (preferred document first),
   and their |dZ| (with LightGBM's score-distance regularisation), chunk by chunk:
   ``all``/``topk`` label pairs are streamed through a buffer of at most
   ``pair_selection.PAIR_CHUNK`` pairs, so memory is linear in the query length;
2. :func:`_pair_derivatives` -- each pair's gradient and hessian, and the running
   ``sum_lambdas`` for the query normalisation :func:`lambda_norm_factor`.

Four jobs are built on them, each with its own parallel driver: gradients and hessians
(:func:`_gradients_all_queries`), pair counts (:func:`_pair_counts_all_queries`), the
:class:`~ltrboost.objectives.base.PairTerms` of the OLE criterion
(:func:`_pair_terms_all_queries`) and the loss (:func:`_losses_all_queries`).  Pairs,
|dZ| and the normalisation are computed at ``ref_scores``; the pair loss and its
derivatives at ``scores`` (the same array except in the "frozen" loss
:meth:`PairwiseObjective.loss_fixed_weights`).  Which metric and loss are used is
chosen by integer codes (``METRIC_*``, ``LOSS_*``), never by passing jitted functions
around (pynndescent#226: the cache misses).  Per-pair helpers take scalars only: a Numba
call that is not inlined pays reference counting for every array argument.

Sign convention: ``gradients`` are dL/ds (descent is ``-gradients``).  Seed 001's lambda
``lambda_ij = -sigma |dZ| / (1 + exp(sigma (s_i - s_j)))`` is the contribution of pair
(i, j) to ``gradients[i]``, and ``-lambda_ij`` its contribution to ``gradients[j]``.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import numbers
import warnings
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost._callsite import external_stacklevel
from ltrboost._numba import inline_kernel, kernel, over_queries
from ltrboost.dataset import RankingDataset
from ltrboost.metrics._dcg import discount
from ltrboost.metrics.ap import _ap_ranked_reference, ap_prefix, delta_ap
from ltrboost.metrics.err import _err_ranked_reference, delta_err, err_prefix
from ltrboost.metrics.ndcg import delta_ndcg
from ltrboost.objectives import pair_selection as _pair_selection
from ltrboost.objectives.base import (
    Objective,
    PairTerms,
    check_use_label_pairs,
    dataset_cached,
    doc_weights,
)
from ltrboost.objectives.pair_selection import (
    PAIR_ALL,
    PAIR_SAMPLED,
    PAIR_TOPK,
    check_query_pair_count,
    count_pairs_one_query,
    enumerate_pairs_chunk,
    enumerate_pairs_one_query,
    enumerate_pairs_one_query_reference,
    has_two_labels,
    kernel_count,
    max_pairs_one_query,
    pair_method_code,
    query_rank_order,
    query_seed_base,
)
from ltrboost.objectives.preferences import check_pair_sources, explicit_pairs
from ltrboost.params import ParameterError, ParameterWarning, check_random_state_range

METRIC_NONE = 0  # |dZ| = 1: RankNet, RankBoost
METRIC_NDCG = 1
METRIC_ERR = 2
METRIC_MAP = 3
LAMBDA_METRICS = {"ndcg": METRIC_NDCG, "err": METRIC_ERR, "map": METRIC_MAP}

LOSS_LOGISTIC = 0  # log(1 + exp(-sigma (s_i - s_j)))   (RankNet, LambdaMART)
LOSS_EXP = 1  # exp(s_j - s_i)                         (RankBoost)

# Where RankBoost's exp(x) (x = s_j - s_i) turns into its second-order Taylor polynomial
# at the clip (see exp_pair_loss): exp(50) ~ 5e21 keeps float32 gradients finite and
# summable, and the loss, gradient and hessian stay one another's derivatives past it.
EXP_CLIP = 50.0
EXP_CLIP_VALUE = math.exp(EXP_CLIP)


class PairEngineConstants(NamedTuple):
    """Per-dataset arrays the engine needs (cached in ``data.cache``)."""

    labels: NDArray[np.float64]  # (n_samples,) labels that define label pairs
    values: NDArray[np.float64]  # (n_samples,) NDCG gain | ERR R | AP relevance (0/1)
    inv_norm: NDArray[np.float64]  # (n_queries,) 1/IDCG | 1 | 1/#relevant; 0 = no pairs
    weights: NDArray[np.float32]  # (n_samples,) or (0,) for "no weights"
    xpair_offsets: NDArray[np.int64]  # (n_queries + 1,) explicit pairs, CSR by query
    xpair_i: NDArray[np.int32]  # preferred document, row inside its query
    xpair_j: NDArray[np.int32]  # other document, row inside its query
    xpair_w: NDArray[np.float64]  # pair weight (multiplies |dZ| = 1)


def _as_1d(arr: Any, n: int, name: str, dtype: Any = None) -> NDArray[Any]:
    a = np.asarray(arr) if dtype is None else np.asarray(arr, dtype=dtype)
    if a.ndim == 2 and a.shape[0] == 1:
        a = a[0]
    if a.shape != (n,):
        raise ValueError(f"{name} has shape {np.shape(arr)}; expected ({n},)")
    return a


class PairwiseObjective(Objective):
    """Shared Python side of the pairwise objectives: caching, calling the engine.

    Subclasses set ``_metric_code``, ``_loss_code``, ``_normalize``, ``_sigma`` and the
    pair parameters in ``__init__`` and implement :meth:`_build_constants`; they may
    override :meth:`_fast_gradient_hessian` with a specialised kernel (LambdaMART's NDCG
    path).

    Document weights (LightGBM's convention): each document's gradient and hessian are
    multiplied by its weight after the per-query term.  In the loss, in the OLE
    ``PairTerms`` and nowhere else, a pair is weighted by ``(w_i + w_j) / 2``, so that
    ``2 * rho`` is exactly what the pair adds to the hessian sum of a side holding both
    documents.  With one weight per query (the usual case) this is a true loss
    weighting: ``gradients`` are then the exact derivative of :meth:`loss` and, for
    every document, the sum of ``rho`` over its pairs equals its hessian.
    """

    is_pairwise = True
    hessian_is_constant = False
    leaf_rule = "newton"

    _metric_code: int = METRIC_NONE
    _loss_code: int = LOSS_LOGISTIC
    _normalize: bool = False
    _sigma: float = 1.0
    _method: int = 0
    _truncation: int = -1
    _pairs_per_sample: int = 1
    _random_state: int = 0
    # ``(n_queries, first)`` when the data are one shard of a larger training set
    # (ltrboost.dask): its ``n_queries`` queries in all, this shard's first query number
    _seed_shard: tuple[int, int] | None = None

    def _query_seed_base(self, iteration: int, n_queries: int) -> int:
        """The seed of the data's first query in round ``iteration`` (query ``q`` adds
        ``q``): :func:`query_seed_base` of these queries, or for a shard that of the
        whole set plus the shard's first query number, so that every query gets the
        seed local training gives it (also where the base wraps modulo 2**62)."""
        if self._seed_shard is None:
            return query_seed_base(self._random_state, iteration, n_queries)
        n_total, first = self._seed_shard
        return query_seed_base(self._random_state, iteration, n_total) + first

    def _set_pair_params(
        self,
        pair_method: str,
        truncation_level: int | None,
        pairs_per_sample: int,
        random_state: int,
    ) -> None:
        self._method, self._truncation = pair_method_code(
            pair_method, truncation_level, pairs_per_sample
        )
        self._pairs_per_sample = kernel_count(pairs_per_sample)  # more: refused by prepare
        if (
            isinstance(random_state, bool)
            or not isinstance(random_state, int | np.integer)
            or random_state < 0
        ):
            raise ValueError(f"random_state={random_state!r} should be a non-negative integer")
        check_random_state_range(random_state)
        self._random_state = int(random_state)

    @staticmethod
    def _check_sigma(sigma: float) -> float:
        if isinstance(sigma, bool | np.bool_) or not (
            isinstance(sigma, numbers.Real) and math.isfinite(sigma)
        ):
            raise ValueError(f"sigma={sigma!r} should be a positive finite number")
        if sigma <= 0:
            raise ValueError(f"sigma={sigma} should be greater than 0")
        return float(sigma)

    def vanished_hessian_cause(self) -> str | None:
        """``sigma`` below 1 (RankNet, LambdaMART): a pair's hessian is ``sigma^2
        rho (1 - rho)`` (its gradient ``sigma rho``), so ``sigma=1e-6`` leaves every root
        under the default ``min_sum_hessian_in_leaf``."""
        sigma = getattr(self, "_sigma", None)
        if sigma is None or sigma >= 1.0:
            return None
        return f"sigma={sigma:g} scales every pair's hessian by sigma^2 = {sigma * sigma:.3g}"

    # -- per-dataset constants --------------------------------------------------------

    def _cache_key(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def _build_constants(self, data: RankingDataset) -> PairEngineConstants:
        raise NotImplementedError

    def _constants(self, data: RankingDataset) -> PairEngineConstants:
        return dataset_cached(data, self._cache_key(), lambda: self._build_constants(data))

    def prepare(self, data: RankingDataset) -> None:
        """Validate labels (and explicit pairs) and cache the per-dataset constants;
        ``sampled`` pairs: refuse a query whose ``n * pairs_per_sample`` pairs (held at
        once) exceed the query pair limit."""
        if self._method == PAIR_SAMPLED:
            pps = int(self.params.get("pairs_per_sample", self._pairs_per_sample))
            check_query_pair_count(
                data,
                lambda n: n * pps if n >= 2 else 0,
                f"pair_method='sampled' with pairs_per_sample={pps}",
                "lower pairs_per_sample",
            )
        self._constants(data)

    # -- engine calls -----------------------------------------------------------------

    def _scores(self, scores: Any, data: RankingDataset, name: str) -> NDArray[Any]:
        return np.ascontiguousarray(_as_1d(scores, data.n_samples, name, np.float64))

    def _engine_inputs(self, data: RankingDataset, iteration: int) -> tuple[Any, ...]:
        """The per-dataset and per-iteration inputs every driver takes, in order."""
        c = self._constants(data)
        return (
            c.labels, c.values, c.inv_norm, c.weights, data.query_offsets,
            c.xpair_offsets, c.xpair_i, c.xpair_j, c.xpair_w,
            self._method, self._truncation, self._pairs_per_sample,
            # None unless pairs are sampled: the sampler is then never compiled
            self._query_seed_base(iteration, data.n_queries)
            if self._method == PAIR_SAMPLED
            else None,
            # None for |dZ| = 1 (RankNet, RankBoost): the metric code is not compiled
            None if self._metric_code == METRIC_NONE else self._metric_code,
            self._loss_code, self._sigma, self._normalize,
            _pair_selection.PAIR_CHUNK,  # read per call: tests shrink it
        )  # fmt: skip

    def _fast_gradient_hessian(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        gradients: NDArray[np.float32],
        hessians: NDArray[np.float32],
        counts: NDArray[np.int64],
    ) -> bool:
        """A specialised kernel for this configuration; False when there is none."""
        return False

    def _gradients(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        iteration: int,
        gradients: NDArray[np.float32],
        hessians: NDArray[np.float32],
    ) -> NDArray[np.int64]:
        """Gradients and hessians into the outputs; returns the pair count per query."""
        s = self._scores(scores, data, "scores")
        counts = np.zeros(data.n_queries, dtype=np.int64)
        if not self._fast_gradient_hessian(s, data, gradients, hessians, counts):
            _gradients_all_queries(
                s, *self._engine_inputs(data, iteration), gradients, hessians, counts
            )
        return counts

    def gradient_hessian(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        gradients_out: NDArray[np.float32],
        hessians_out: NDArray[np.float32],
        iteration: int = 0,
    ) -> None:
        """Write dL/ds and the diagonal d2L/ds2 of every document (float32).

        Documents of queries that contribute nothing (one document, all labels equal,
        zero ideal DCG, no relevant document for MAP) get ``0`` and ``0``.
        """
        n = data.n_samples
        g = gradients_out.reshape(-1)
        h = hessians_out.reshape(-1)
        if g.shape != (n,) or h.shape != (n,):
            raise ValueError(
                f"gradients_out/hessians_out have shapes {gradients_out.shape}, "
                f"{hessians_out.shape}; expected ({n},)"
            )
        if not (np.shares_memory(g, gradients_out) and np.shares_memory(h, hessians_out)):
            raise ValueError("gradients_out and hessians_out must be contiguous arrays")
        self._gradients(scores, data, iteration, g, h)

    def pair_terms(
        self, scores: NDArray[np.float64], data: RankingDataset, iteration: int = 0
    ) -> PairTerms:
        """The pairs used by :meth:`gradient_hessian` at these scores, for OLE.

        ``doc_i`` is the preferred (higher-label) document, ``doc_j`` the other one,
        both global int32 row ids, grouped by query (CSR ``pair_offsets``).  ``rho`` is
        the pair's hessian contribution ``sigma^2 |dZ| rho_ij (1 - rho_ij)`` (``exp(s_j
        - s_i)`` for RankBoost) after the query's normalisation, times ``(w_i + w_j) /
        2``. Pairs whose |dZ| is 0 (e.g. two relevant documents for MAP) are listed with
        ``rho = 0``.
        """
        return self._pair_terms(scores, None, data, iteration)

    def _pair_terms(
        self,
        scores: NDArray[np.float64],
        ref_scores: NDArray[np.float64] | None,
        data: RankingDataset,
        iteration: int,
    ) -> PairTerms:
        s = self._scores(scores, data, "scores")
        same = ref_scores is None
        ref = s if same else self._scores(ref_scores, data, "reference_scores")
        inputs = self._engine_inputs(data, iteration)
        _refuse_all_pairs_early(data, self, iteration)
        counts = np.zeros(data.n_queries, dtype=np.int64)
        _pair_counts_all_queries(ref, *inputs, counts)
        offsets = np.zeros(data.n_queries + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        total = int(offsets[-1])
        _check_ole_pair_count(counts, data, self, iteration)
        doc_i = np.empty(total, dtype=np.int32)
        doc_j = np.empty(total, dtype=np.int32)
        rho = np.empty(total, dtype=np.float64)
        _pair_terms_all_queries(
            s, ref, *inputs, same, offsets, doc_i, doc_j, rho
        )  # fmt: skip
        return PairTerms(offsets, doc_i, doc_j, rho)

    def _loss(
        self,
        scores: NDArray[np.float64],
        ref_scores: NDArray[np.float64] | None,
        data: RankingDataset,
        iteration: int,
    ) -> float:
        s = self._scores(scores, data, "scores")
        same = ref_scores is None
        ref = s if same else self._scores(ref_scores, data, "reference_scores")
        losses = np.zeros(data.n_queries, dtype=np.float64)
        _losses_all_queries(s, ref, *self._engine_inputs(data, iteration), same, losses)
        return float(np.sum(losses))

    def loss(self, scores: NDArray[np.float64], data: RankingDataset, iteration: int = 0) -> float:
        """The pairwise surrogate at ``scores`` with |dZ| and pairs taken at ``scores``.

        For RankNet / RankBoost with ``pair_method="all"`` this is a smooth function of
        the scores; otherwise the pair set and |dZ| change with the ranking, and the
        finite-difference check uses :meth:`loss_fixed_weights`.
        """
        return self._loss(scores, None, data, iteration)

    def loss_fixed_weights(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        reference_scores: NDArray[np.float64],
        iteration: int = 0,
    ) -> float:
        """The surrogate at ``scores`` with pairs, |dZ| and normalisation frozen.

        Pairs, |dZ|, the score-distance factor ``1 / (0.01 + |s_i - s_j|)`` and the
        query factor ``log2(1 + S) / S`` are computed at ``reference_scores``; only the
        pair losses move with ``scores``.  At ``scores == reference_scores`` its
        gradient and diagonal hessian are exactly :meth:`gradient_hessian`'s.
        """
        return self._loss(scores, reference_scores, data, iteration)

    def pair_terms_fixed_weights(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        reference_scores: NDArray[np.float64],
        iteration: int = 0,
    ) -> PairTerms:
        """:meth:`pair_terms` with pairs and weights frozen at ``reference_scores``."""
        return self._pair_terms(scores, reference_scores, data, iteration)


def _fewer_pairs_advice(objective: Any) -> str:
    """What lowers ``objective``'s OLE pair count, as the start of a sentence."""
    if objective.name == "yetirank":
        advice = f"Lower permutations={objective.params['permutations']}"
    elif objective._method == PAIR_TOPK:
        advice = f"Lower truncation_level (now {objective._truncation}), use pair_method='sampled'"
    elif objective._method == PAIR_SAMPLED:
        advice = (
            f"Lower pairs_per_sample (now {objective._pairs_per_sample}), use "
            "pair_method='topk' with a truncation_level"
        )
    else:
        advice = "Use pair_method='topk' with a truncation_level, pair_method='sampled'"
    return advice


def _check_ole_pair_count(
    counts: NDArray[np.int64], data: RankingDataset, objective: Any, iteration: int = 0
) -> None:
    """Refuse to hold more than ``pair_selection.max_ole_pairs()`` pairs (OLE), naming
    the query with the most pairs, the round (``topk`` pairs, a bag and YetiRank's draws
    change from round to round) and what to change, given ``objective``'s settings; in
    the first round, warn when a later round could go over (:func:`ole_pair_bound`).
    Within :func:`counting_ole_pairs` (a part of the training set) the counts are
    recorded for the whole set's check instead (:func:`check_ole_round_counts`)."""
    counting = _ROUND_COUNT.get()
    if counting is not None:
        counting[0].record(counts, data, objective, iteration, counting[1])
        return
    total = int(counts.sum())
    limit = _pair_selection.max_ole_pairs()
    if total <= limit:
        if iteration == 0:
            _warn_later_rounds_over(total, limit, data, objective)
        return
    q = int(np.argmax(counts))
    name = data.query_ids[q] if data.query_ids is not None else q
    n_q = int(data.query_offsets[q + 1] - data.query_offsets[q])
    raise _ole_pairs_over(total, limit, name, int(counts[q]), n_q, objective, iteration)


def _ole_pairs_over(
    total: int, limit: int, name: Any, most: int, n_q: int, objective: Any, iteration: int
) -> ParameterError:
    """:func:`_check_ole_pair_count`'s refusal: ``total`` pairs of round ``iteration``
    over ``limit``, query ``name`` (``n_q`` documents) the one with the ``most``."""
    when = f" in round {iteration + 1} (the pairs follow the scores and bag)" if iteration else ""
    return ParameterError(
        f"split_criterion='ole' holds every pair of a round in memory: {total} pairs "
        f"(~{total * 22 / 2**30:.1f} GiB){when} are over the limit of {limit} "
        f"($LTRBOOST_MAX_OLE_PAIRS); query {name} alone has {most} pairs "
        f"({n_q} documents). {_fewer_pairs_advice(objective)}, or "
        f"split_criterion='newton' ({objective.name})"
    )


@dataclasses.dataclass
class OleRoundCount:
    """A round's OLE pairs on a part of the training set (a Dask shard's whole
    queries), recorded by :func:`counting_ole_pairs` for the driver's
    :func:`check_ole_round_counts`: a few numbers, not the per-query counts.

    ``total`` the part's pairs; ``most``, ``most_query`` (its id) and ``most_docs`` its
    first query with the most pairs; ``bound`` its :func:`ole_pair_bound` (round 1
    only, else None); ``over`` whether ``total`` alone is over the limit (then the
    pairs were not built); ``recorded`` whether the objective counted at all."""

    limit: int
    total: int = 0
    most: int = 0
    most_query: Any = None
    most_docs: int = 0
    bound: int | None = None
    over: bool = False
    recorded: bool = False

    def record(
        self,
        counts: NDArray[np.int64],
        data: RankingDataset,
        objective: Any,
        iteration: int,
        query_ids: Any = None,
    ) -> None:
        """Keep the round's counts (``query_ids``: the part's, else ``data``'s); stop
        building the part's pairs (raise :class:`OlePairsOverLimit`) when they alone
        are over the limit."""
        self.recorded = True
        self.total = int(counts.sum())
        if counts.shape[0]:
            q = int(np.argmax(counts))
            ids = query_ids if query_ids is not None else data.query_ids
            self.most = int(counts[q])
            self.most_query = ids[q] if ids is not None else q
            self.most_docs = int(data.query_offsets[q + 1] - data.query_offsets[q])
        self.over = self.total > self.limit
        if self.over:
            raise OlePairsOverLimit(self)
        self.bound = ole_pair_bound(data, objective) if iteration == 0 else None


class OlePairsOverLimit(Exception):
    """Raised inside :func:`counting_ole_pairs` when a part's own pairs are over the
    limit: the pairs are not built, the whole set's check refuses the round."""

    def __init__(self, counted: OleRoundCount):
        super().__init__(f"{counted.total} OLE pairs over the limit of {counted.limit}")
        self.counted = counted


# within counting_ole_pairs: (the count, the part's query ids)
_ROUND_COUNT: contextvars.ContextVar[tuple[OleRoundCount, Any] | None] = contextvars.ContextVar(
    "ltrboost_ole_round_count", default=None
)


def _ole_limit() -> int:
    """The OLE pair limit in force: :func:`counting_ole_pairs`' (the driver's) within
    it, else ``pair_selection.max_ole_pairs()``."""
    counting = _ROUND_COUNT.get()
    return _pair_selection.max_ole_pairs() if counting is None else counting[0].limit


@contextlib.contextmanager
def counting_ole_pairs(limit: int, query_ids: Any = None) -> Iterator[OleRoundCount]:
    """Within: a round's OLE pairs (``objective.ole_pairs`` of a part of the training
    set, whole queries) are recorded in the yielded :class:`OleRoundCount`, neither
    refused nor warned about; ``limit`` is the whole set's (the driver's
    ``$LTRBOOST_MAX_OLE_PAIRS``), ``query_ids`` the part's, to name its query with the
    most pairs.  A part over ``limit`` alone raises :class:`OlePairsOverLimit` before
    its pairs are built: the whole round is over it too.  Nothing is recorded for an
    objective that does not count its pairs (a custom one)."""
    counted = OleRoundCount(int(limit))
    token = _ROUND_COUNT.set((counted, query_ids))
    try:
        yield counted
    finally:
        _ROUND_COUNT.reset(token)


def check_ole_round_counts(
    counts: Sequence[OleRoundCount | None], objective: Any, iteration: int, limit: int
) -> None:
    """:func:`_check_ole_pair_count` of round ``iteration`` on the whole training set
    from the :class:`OleRoundCount` of each of its parts in query order (None: a part
    that counted nothing): refused when their total is over ``limit`` (naming the first
    query with the most pairs), in round 1 the warning of a later round over it; the
    local message and warning."""
    parts = [c for c in counts if c is not None]
    if not parts:
        return
    total = sum(c.total for c in parts)
    if total <= limit:
        if iteration == 0:
            bound = sum(c.bound or 0 for c in parts)
            _warn_later_rounds(total, bound, limit, objective)
        return
    top = max(parts, key=lambda c: c.most)  # the first of the largest: argmax's
    raise _ole_pairs_over(
        total, limit, top.most_query, top.most, top.most_docs, objective, iteration
    )


def ole_pair_bound(data: RankingDataset, objective: Any) -> int:
    """An upper bound of the pairs any round of ``objective`` can hold for OLE on
    ``data``: per query the fewer of the pair method's slots and the label pairs (two
    different grades; YetiRank: ``permutations * (n - 1)``), plus the explicit pairs."""
    sizes = np.diff(data.query_offsets)
    differing = _label_pairs_per_query(data, objective)
    if objective.name == "yetirank":
        slots = int(objective.params["permutations"]) * np.maximum(sizes - 1, 0)
    elif objective._method == PAIR_SAMPLED:
        slots = np.where(differing > 0, objective._pairs_per_sample * sizes, 0)
        differing = slots
    else:
        # max_pairs_one_query for every query: k outer ranks, each paired with the later
        k = np.maximum(sizes - 1, 0)
        trunc = int(objective._truncation)
        if objective._method == PAIR_TOPK and trunc > 0:
            k = np.minimum(k, trunc)
        slots = k * (sizes - 1) - k * (k - 1) // 2
    bound = int(np.minimum(slots, differing).sum())
    if data.pairs is not None and getattr(objective, "uses_preference_pairs", False):
        bound += len(data.pairs)
    return bound


def _label_pairs_per_query(data: RankingDataset, objective: Any) -> NDArray[np.int64]:
    """Per query, its pairs of documents with different labels (0 where ``objective``
    uses no label pairs): ``pair_method="all"``'s pairs."""
    sizes = np.diff(data.query_offsets)
    labels = data.y
    if (
        labels is None
        or data.n_queries == 0
        or getattr(objective, "_use_label_pairs", None) is False
    ):
        return np.zeros(data.n_queries, dtype=np.int64)
    # pairs of different grades: (n^2 - sum over grades of count^2) / 2
    q = np.repeat(np.arange(data.n_queries), sizes)
    order = np.lexsort((labels, q))
    ql, yl = q[order], labels[order]
    starts = np.flatnonzero(np.r_[True, (ql[1:] != ql[:-1]) | (yl[1:] != yl[:-1])])
    runs = np.diff(np.r_[starts, ql.shape[0]])
    same = np.bincount(ql[starts], weights=runs.astype(np.float64) ** 2, minlength=data.n_queries)
    return ((sizes.astype(np.float64) ** 2 - same) // 2).astype(np.int64)


def _pairs_are_label_pairs(objective: Any) -> bool:
    """Whether a round's OLE pairs are all the label pairs of two grades
    (``pair_method="all"``, not YetiRank's draws, no position-bias weighting)."""
    return not (
        objective.name == "yetirank"
        or objective._method != PAIR_ALL
        or getattr(objective, "unbiased", False)
    )


def _refuse_all_pairs_early(data: RankingDataset, objective: Any, iteration: int) -> None:
    """With ``pair_method="all"`` a round's OLE pairs are the label pairs of two grades
    (plus explicit ones), known from the labels: refuse as :func:`_check_ole_pair_count`
    would, before the O(sum n_q^2) pass that counts them (15-23 s for one query of
    50 000 documents).  Callers use it only where the count is of every such pair (no
    bag applied while counting)."""
    if not _pairs_are_label_pairs(objective):
        return
    # the labels do not change between rounds: counted once per training set (a
    # lexsort of every row, ~0.1 us a row), not at every round's pair terms
    checked = getattr(objective, "_all_pairs_checked", None)
    if checked is not None and checked[0]() is data.y and checked[1] == data.n_samples:
        return
    per_query = _label_pairs_per_query(data, objective)
    if int(per_query.sum()) > _ole_limit():
        _check_ole_pair_count(per_query, data, objective, iteration)
    if data.y is not None:
        objective._all_pairs_checked = (weakref.ref(data.y), data.n_samples)


def refuse_ole_pairs_up_front(data: RankingDataset, objective: Any, bagged: bool) -> None:
    """At the start of training under OLE: :func:`_refuse_all_pairs_early` before the
    first round's gradients (for ranknet, another O(sum n_q^2) pass).  ``bagged``:
    rounds draw a bag (``subsample < 1``), which LambdaMART's NDCG pairs apply while
    counting (``objective._bag_applied_in_count``): then nothing is refused here."""
    if counts_ole_pairs_up_front(objective, bagged):
        _refuse_all_pairs_early(data, objective, 0)


def counts_ole_pairs_up_front(objective: Any, bagged: bool) -> bool:
    """Whether :func:`refuse_ole_pairs_up_front` counts ``objective``'s pairs: the label
    pairs of each query (:func:`label_pairs_per_query`), refused over the limit."""
    if not hasattr(objective, "_method"):
        return False
    if bagged and getattr(objective, "_bag_applied_in_count", lambda: False)():
        return False
    return _pairs_are_label_pairs(objective)


def label_pairs_per_query(data: RankingDataset, objective: Any) -> NDArray[np.int64]:
    """Per query of ``data``, the pairs :func:`refuse_ole_pairs_up_front` counts (the
    label pairs of two grades), for training that counts them where the rows are
    (Dask: per partition) and refuses with :func:`refuse_ole_pair_counts`."""
    return _label_pairs_per_query(data, objective)


def refuse_ole_pair_counts(per_query: NDArray[np.int64], data: Any, objective: Any) -> None:
    """:func:`refuse_ole_pairs_up_front` from counts made elsewhere: ``per_query`` the
    :func:`label_pairs_per_query` of every query of the training set in order, ``data``
    its ``query_ids`` and ``query_offsets`` (what the message names); the same message."""
    if int(per_query.sum()) > _pair_selection.max_ole_pairs():
        _check_ole_pair_count(per_query, data, objective, 0)


def _warn_later_rounds_over(total: int, limit: int, data: RankingDataset, objective: Any) -> None:
    """Warn, in round 1, when a later round's pairs may go over the OLE limit (``topk``
    pairs follow the scores, bags and YetiRank's draws change): the error would come
    after hours of training."""
    _warn_later_rounds(total, ole_pair_bound(data, objective), limit, objective)


def _warn_later_rounds(total: int, bound: int, limit: int, objective: Any) -> None:
    """:func:`_warn_later_rounds_over` given the bound (:func:`ole_pair_bound`)."""
    if bound <= limit:
        return
    warnings.warn(
        f"split_criterion='ole' holds every pair of a round in memory: round 1 holds "
        f"{total} pairs, but the pairs follow the scores and bag, and a later round may "
        f"hold up to {bound} (~{bound * 22 / 2**30:.1f} GiB), over the limit of {limit} "
        "($LTRBOOST_MAX_OLE_PAIRS); such a round stops training with an error. "
        f"{_fewer_pairs_advice(objective)}, or split_criterion='newton' "
        f"({objective.name})",
        ParameterWarning,
        stacklevel=external_stacklevel(),
    )


class LabelOrPairObjective(PairwiseObjective):
    """RankNet / RankBoost: |dZ| = 1, label and/or explicit pairs, no normalisation.

    Label pairs (chosen by ``pair_method``) and explicit pairs (``data.pairs``, always
    all used, their weight multiplying the pair's loss) add up.
    ``use_label_pairs=None`` uses label pairs whenever the dataset has labels (see
    :mod:`.preferences`).
    """

    uses_preference_pairs = True

    _use_label_pairs: bool | None = None

    def _init_common(
        self,
        pair_method: str,
        truncation_level: int | None,
        pairs_per_sample: int,
        use_label_pairs: bool | None,
        random_state: int,
    ) -> None:
        self._set_pair_params(pair_method, truncation_level, pairs_per_sample, random_state)
        self._use_label_pairs = check_use_label_pairs(use_label_pairs)
        self._metric_code = METRIC_NONE
        self._normalize = False

    def _cache_key(self) -> tuple[Any, ...]:
        return ("pairwise", self._use_label_pairs)

    def _build_constants(self, data: RankingDataset) -> PairEngineConstants:
        n_queries = data.n_queries
        use_labels = check_pair_sources(data, self._use_label_pairs, self.name)
        if data.y is None:
            labels = np.zeros(data.n_samples, dtype=np.float64)
        else:
            labels = np.ascontiguousarray(data.y, dtype=np.float64)
        # inv_norm = 0 switches a query's label pairs off in the engine
        inv_norm = np.full(n_queries, 1.0 if use_labels else 0.0, dtype=np.float64)
        return PairEngineConstants(
            labels, labels, inv_norm, doc_weights(data), *explicit_pairs(data)
        )


# --- kernels: per-pair scalars ---


@kernel
def _logistic(x):
    """``(rho, 1 - rho, log(1 + exp(-x)))``, ``rho = 1 / (1 + exp(x))``, no overflow.

    Returns both rho and 1 - rho so that rho (1 - rho) never cancels.
    """
    if x >= 0.0:
        t = math.exp(-x)
        return t / (1.0 + t), 1.0 / (1.0 + t), math.log1p(t)
    t = math.exp(x)
    return 1.0 / (1.0 + t), t / (1.0 + t), -x + math.log1p(t)


@inline_kernel
def sigmoid_pair(x):
    """``(rho, 1 - rho)``, ``rho = 1 / (1 + exp(x))``: one exp, no log, no overflow."""
    if x >= 0.0:
        t = math.exp(-x)
        inv = 1.0 / (1.0 + t)
        return t * inv, inv
    t = math.exp(x)
    inv = 1.0 / (1.0 + t)
    return inv, t * inv


@inline_kernel
def exp_pair_loss(x):
    """RankBoost's pair loss at ``x = s_j - s_i`` and its derivatives in ``x``:
    ``(loss, d loss / dx, d2 loss / dx2)``.

    ``exp(x)`` for ``x <= EXP_CLIP``; past the clip the second-order Taylor polynomial of
    ``exp`` at the clip, ``e^C (1 + u + u^2 / 2)`` with ``u = x - C`` (a "Huberised"
    exponential: convex, twice differentiable, with gradient ``e^C (1 + u)`` and hessian
    ``e^C``), so that the gradients are the derivative of the loss everywhere and stay
    finite in float32 (the engine's old clip made the loss flat past ``C`` while its
    gradient stayed ``e^C``).  NaN stays NaN.
    """
    if not x > EXP_CLIP:
        e = math.exp(x)
        return e, e, e
    u = x - EXP_CLIP
    return (
        EXP_CLIP_VALUE * (1.0 + u + 0.5 * u * u),
        EXP_CLIP_VALUE * (1.0 + u),
        EXP_CLIP_VALUE,
    )


# Below this, exp(sigma (s - s_max)) is too close to the subnormal range for the ratio
# form of :func:`sigmoid_from_exp` to keep full precision.
TINY_EXP = 1e-280


@inline_kernel
def sigmoid_from_exp(e_i, e_j, x):
    """``(rho, 1 - rho)``, ``rho = 1 / (1 + exp(x))``, from per-document exponentials.

    With ``e_d = exp(sigma (s_d - s_max))`` of the query and ``x = sigma (s_i - s_j)``,
    ``exp(x) = e_i / e_j`` and so ``rho = e_j / (e_i + e_j)``: one division per pair
    instead of an ``exp`` (the exponentials cost one per document, not per pair).
    ``e <= 1`` never overflows; when either is tiny (scores more than ~640/sigma below
    the query's best) the direct form is used.
    """
    if e_i < TINY_EXP or e_j < TINY_EXP:
        return sigmoid_pair(x)
    inv = 1.0 / (e_i + e_j)
    return e_j * inv, e_i * inv


@inline_kernel
def exp_below_max(scores_q, s_max, sigma, out):
    """``out[d] = exp(sigma (scores_q[d] - s_max))`` (<= 1): the e_d of
    :func:`sigmoid_from_exp`."""
    for d in range(scores_q.shape[0]):
        out[d] = math.exp(sigma * (scores_q[d] - s_max))


@inline_kernel
def rank_ordered_query(order, scores_q, values_q, labels_q, sigma):
    """A query's scores, gain values and labels in rank order (``order``), the
    discounts of the ranks and the exponentials ``exp(sigma (s - s_max))`` of
    :func:`sigmoid_from_exp` (``s[0]`` is the query's highest score)."""
    n = order.shape[0]
    s = np.empty(n)
    v = np.empty(n)
    lab = np.empty(n)
    disc = np.empty(n)
    for r in range(n):
        d = order[r]
        s[r] = scores_q[d]
        v[r] = values_q[d]
        lab[r] = labels_q[d]
        disc[r] = discount(r)
    ex = np.empty(n)
    exp_below_max(s, s[0], sigma, ex)
    return s, v, lab, disc, ex


@inline_kernel
def lambda_norm_factor(normalize, sum_lambdas):
    """LightGBM's ``lambdarank_norm`` query factor ``log2(1 + S) / S`` (1 if off)."""
    if normalize and sum_lambdas > 0.0:
        return math.log2(1.0 + sum_lambdas) / sum_lambdas
    return 1.0


# --- kernels: the stages of one query ---


@kernel
def _count_pairs_query(ref_q, labels_q, inv_norm_q, n_x, method, truncation, pps):
    """Number of pairs :func:`_next_weighted_pairs` gives for this query."""
    n = ref_q.shape[0]
    if not (n >= 2 and inv_norm_q > 0.0 and has_two_labels(labels_q)):
        return n_x
    order = query_rank_order(ref_q)
    return n_x + count_pairs_one_query(labels_q[order], method, truncation, pps)


@kernel
def _pair_context(ref_q, labels_q, values_q, inv_norm_q, n_x, metric, normalize):
    """Per-query state of stage 1, at the reference scores ``ref_q``.

    Returns ``(use_labels, order, labels_ranked, values_ranked, pa, pb,
    scale_by_diff)``: whether label pairs are walked, the ranking, labels and metric
    values (NDCG gain | ERR R | AP relevance) in rank order, the metric prefixes over
    the ranking (NDCG discounts | ERR ``(p, s)`` | AP ``(c, t)``) and whether |dZ| is
    divided by the score distance (LightGBM's ``lambdarank_norm``, when the best and
    worst scores differ).
    """
    n = ref_q.shape[0]
    use_labels = n >= 2 and inv_norm_q > 0.0 and has_two_labels(labels_q)
    order = query_rank_order(ref_q)
    labels_ranked = labels_q[order]
    values_ranked = values_q[order]
    # metric: None (|dZ| = 1: no metric code below is compiled) or METRIC_NDCG/ERR/MAP
    m = 1 if metric is None else n + 1
    pa = np.zeros(m)
    pb = np.zeros(m)
    if metric is not None:
        if metric == METRIC_NDCG:
            for r in range(n):
                pa[r] = discount(r)
        elif metric == METRIC_ERR:
            err_prefix(values_ranked, pa, pb)
        elif metric == METRIC_MAP:
            ap_prefix(values_ranked, pa, pb)
    scale_by_diff = normalize and n > 0 and ref_q[order[0]] != ref_q[order[n - 1]]
    return use_labels, order, labels_ranked, values_ranked, pa, pb, scale_by_diff


@kernel
def _label_buffer_size(n, use_labels, method, truncation, pairs_per_sample, chunk):
    """Length of the rank-pair buffer: ``sampled`` holds its ``n * pairs_per_sample``
    pairs at once, ``all``/``topk`` stream through at most ``chunk``."""
    if not use_labels:
        return 0
    cap = max_pairs_one_query(n, method, truncation, pairs_per_sample)
    if method != PAIR_SAMPLED:
        cap = min(cap, max(chunk, 1))
    return cap


@kernel
def _next_weighted_pairs(
    ref_q, order, labels_ranked, values_ranked, pa, pb, inv_norm_q, scale_by_diff,
    use_labels, xp_i, xp_j, xp_w, method, truncation, pairs_per_sample, seed_base, q, metric,
    state, rank_a, rank_b, doc_i_out, doc_j_out, dz_out,
):  # fmt: skip
    """Stage 1: the query's next pairs, oriented, with their |dZ|; returns the count.

    ``sampled`` pairs of query ``q`` are drawn with seed ``seed_base + q``; ``seed_base``
    is None for the other methods, and then the sampler's branch is pruned when this
    kernel compiles (~2.6 s of a first pairwise run that never samples).

    Label pairs come first, in :func:`enumerate_pairs_one_query`'s order (``all`` and
    ``topk`` streamed :func:`enumerate_pairs_chunk` by chunk, so memory stays linear in
    the query length), then the explicit pairs (their weight standing in for |dZ|).
    ``state`` (IN/OUT int64 (4,)): phase (0 label pairs, 1 explicit pairs, 2 done), the
    ``(rank_hi, rank_lo)`` cursor of the label pairs, the next explicit pair; start at
    ``(0, 0, 1, 0)`` and call until the phase is 2.  ``rank_a``, ``rank_b``: scratch of
    :func:`_label_buffer_size`; ``doc_*_out`` / ``dz_out``: OUT, at least as long as
    ``rank_a`` and 1.  ``doc_i`` is the preferred document (row inside the query).
    """
    k = 0
    if state[0] == 0:
        if use_labels:
            if method == PAIR_SAMPLED:
                if seed_base is not None:  # None: not sampled (see above)
                    k = enumerate_pairs_one_query(
                        labels_ranked, method, truncation, pairs_per_sample,
                        seed_base + q, rank_a, rank_b,
                    )  # fmt: skip
                state[0] = 1
            else:
                k = enumerate_pairs_chunk(
                    labels_ranked, method, truncation, state[1:3], rank_a, rank_b
                )
                if k < rank_a.shape[0]:
                    state[0] = 1
        else:
            state[0] = 1
        for t in range(k):
            r_i = rank_a[t]
            r_j = rank_b[t]
            if labels_ranked[r_i] < labels_ranked[r_j]:
                r_i, r_j = r_j, r_i
            lo = min(r_i, r_j)
            hi = max(r_i, r_j)
            if metric is None:  # RankNet, RankBoost: the metric branches are pruned
                dz = 1.0
            elif metric == METRIC_NDCG:  # pa holds the discounts of the ranks
                dz = delta_ndcg(
                    values_ranked[r_i], values_ranked[r_j], pa[r_i], pa[r_j], inv_norm_q
                )
            elif metric == METRIC_ERR:
                dz = abs(
                    delta_err(
                        values_ranked[lo], values_ranked[hi], pa[lo], pa[hi],
                        pb[hi] - pb[lo + 1], lo, hi,
                    )
                )  # fmt: skip
            else:
                dz = inv_norm_q * abs(
                    delta_ap(
                        values_ranked[lo], values_ranked[hi], pa[lo], pa[hi],
                        pb[hi] - pb[lo + 1], lo, hi,
                    )
                )  # fmt: skip
            doc_i_out[t] = order[r_i]
            doc_j_out[t] = order[r_j]
            dz_out[t] = dz
    elif state[0] == 1:  # explicit preference pairs: |dZ| = their weight
        x0 = state[3]
        k = min(xp_i.shape[0] - x0, doc_i_out.shape[0])
        for t in range(k):
            doc_i_out[t] = xp_i[x0 + t]
            doc_j_out[t] = xp_j[x0 + t]
            dz_out[t] = xp_w[x0 + t]
        state[3] = x0 + k
        if state[3] >= xp_i.shape[0]:
            state[0] = 2
    if scale_by_diff:  # LightGBM lambdarank_norm: regularise by the score distance
        for t in range(k):
            dz_out[t] /= 0.01 + abs(ref_q[doc_i_out[t]] - ref_q[doc_j_out[t]])
    return k


@kernel
def _pair_buffers(n, n_x, use_labels, method, truncation, pairs_per_sample, chunk):
    """Scratch of one query: ``state`` and the rank / pair buffers (see
    :func:`_next_weighted_pairs`); per-pair ``grad`` / ``hess`` of the same length."""
    cap = _label_buffer_size(n, use_labels, method, truncation, pairs_per_sample, chunk)
    out = max(cap, min(n_x, max(chunk, 1)), 1)
    state = np.zeros(4, dtype=np.int64)
    state[2] = 1
    return (
        state,
        np.empty(cap, dtype=np.int64),
        np.empty(cap, dtype=np.int64),
        np.empty(out, dtype=np.int64),
        np.empty(out, dtype=np.int64),
        np.empty(out),
        np.empty(out),
        np.empty(out),
    )


@kernel
def _pair_exponentials(scores_q, loss_code, sigma):
    """Per-document ``exp(sigma (s - s_max))`` of the logistic loss (see
    :func:`sigmoid_from_exp`); empty for RankBoost's."""
    n = scores_q.shape[0]
    ex = np.empty(n if (loss_code == LOSS_LOGISTIC and n > 0) else 0)
    if ex.shape[0] > 0:
        # the largest score by hand, NaN winning as in np.max (whose compiled form
        # costs ~0.75 s of a first run): only its value matters, not which zero
        s_max = scores_q[0]
        for d in range(1, n):
            v = scores_q[d]
            if v > s_max or v != v:
                s_max = v
        exp_below_max(scores_q, s_max, sigma, ex)
    return ex


@kernel
def _pair_derivatives(
    scores_q, ref_q, ex, doc_i, doc_j, dz, k, loss_code, sigma, same_scores,
    sum_lambdas, grad_out, hess_out,
):  # fmt: skip
    """Stage 2: the gradient and hessian of the first ``k`` pairs at ``scores_q``;
    returns ``sum_lambdas`` with their shares added (one running sum over the query's
    chunks, so the result does not depend on the chunk size).

    ``grad_out[t]`` is ``sigma |dZ| rho_ij`` (``= -lambda_ij``, seed 001) for the
    logistic loss and ``|dZ| exp(s_j - s_i)`` for RankBoost's (past the clip, the first
    derivative of :func:`exp_pair_loss`); ``hess_out[t]`` its second derivative.
    ``sum_lambdas`` (LightGBM's, for :func:`lambda_norm_factor`) is taken at ``ref_q``
    unless ``same_scores``.  ``ex``: :func:`_pair_exponentials`.
    """
    logistic = loss_code == LOSS_LOGISTIC
    for t in range(k):
        i = doc_i[t]
        j = doc_j[t]
        d = dz[t]
        if logistic:
            x_ij = sigma * (scores_q[i] - scores_q[j])
            rho, one_minus_rho = sigmoid_from_exp(ex[i], ex[j], x_ij)
            grad = sigma * d * rho  # = -lambda_ij (seed 001)
            hess = sigma * sigma * d * rho * one_minus_rho
            if same_scores:
                sum_lambdas += 2.0 * grad
            else:
                rho_ref, _ = sigmoid_pair(sigma * (ref_q[i] - ref_q[j]))
                sum_lambdas += 2.0 * sigma * d * rho_ref
        else:  # RankBoost: exp(s_j - s_i), seed 000 example 3 (Huberised past the clip)
            _, e1, e2 = exp_pair_loss(scores_q[j] - scores_q[i])
            grad = d * e1
            hess = d * e2
            sum_lambdas += 2.0 * grad
        grad_out[t] = grad
        hess_out[t] = hess
    return sum_lambdas


@kernel
def _pair_weight(weights_q, i, j):
    """``(w_i + w_j) / 2`` in float64 (float32 + float32 would round); 1 unweighted."""
    if weights_q.shape[0] == 0:
        return 1.0
    return 0.5 * (np.float64(weights_q[i]) + np.float64(weights_q[j]))


# --- drivers: one per job, each a serial kernel over a block of queries run on threads
# by ltrboost._numba.over_queries (one thread below its MIN_DOCS_PER_THREAD) ---
#
# Shared arguments ("inputs", in this order; see PairwiseObjective._engine_inputs):
# labels, values float64 (n_samples,); inv_norm float64 (n_queries,); weights float32
# (n_samples,) or (0,); query_offsets int64; explicit pairs in CSR (xpair_offsets,
# xpair_i, xpair_j, xpair_w); method, truncation, pairs_per_sample, seed_base (query q
# uses seed_base + q; None unless sampled), metric (None: |dZ| = 1), loss_code, sigma,
# normalize.  Every query writes only its own slices, so results do not depend on the
# thread count.


def _gradients_all_queries(
    scores, labels, values, inv_norm, weights, query_offsets, xpair_offsets, xpair_i, xpair_j,
    xpair_w, method, truncation, pairs_per_sample, seed_base, metric, loss_code, sigma,
    normalize, pair_chunk, gradients, hessians, counts_out,
):  # fmt: skip
    """Gradients and hessians (OUT float32 (n_samples,)) and pair counts per query."""
    over_queries(
        _gradients_queries, query_offsets, scores, labels, values, inv_norm, weights,
        query_offsets, xpair_offsets, xpair_i, xpair_j, xpair_w, method, truncation,
        pairs_per_sample, seed_base, metric, loss_code, sigma, normalize, pair_chunk, gradients,
        hessians, counts_out,
    )  # fmt: skip


@kernel
def _gradients_queries(
    q0, q1, scores, labels, values, inv_norm, weights, query_offsets, xpair_offsets, xpair_i,
    xpair_j, xpair_w, method, truncation, pairs_per_sample, seed_base, metric, loss_code, sigma,
    normalize, pair_chunk, gradients, hessians, counts_out,
):  # fmt: skip
    # queries q0..q1-1 of _gradients_all_queries (see ltrboost._numba.over_queries)
    has_w = weights.shape[0] > 0
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        x0 = xpair_offsets[q]
        x1 = xpair_offsets[q + 1]
        n = hi - lo
        scores_q = scores[lo:hi]
        grad_q = gradients[lo:hi]
        hess_q = hessians[lo:hi]
        for d in range(n):
            grad_q[d] = 0.0
            hess_q[d] = 0.0
        counts_out[q] = 0
        use_labels, order, lab_r, val_r, pa, pb, scale = _pair_context(
            scores_q, labels[lo:hi], values[lo:hi], inv_norm[q], x1 - x0, metric,
            normalize,
        )  # fmt: skip
        if not use_labels and x1 == x0:
            continue
        state, ra, rb, di, dj, dz, grad, hess = _pair_buffers(
            n, x1 - x0, use_labels, method, truncation, pairs_per_sample, pair_chunk
        )
        ex = _pair_exponentials(scores_q, loss_code, sigma)
        g_acc = np.zeros(n)  # unnormalised, unweighted, float64
        h_acc = np.zeros(n)
        sum_lambdas = 0.0
        n_pairs = 0
        while state[0] != 2:
            k = _next_weighted_pairs(
                scores_q, order, lab_r, val_r, pa, pb, inv_norm[q], scale, use_labels,
                xpair_i[x0:x1], xpair_j[x0:x1], xpair_w[x0:x1],
                method, truncation, pairs_per_sample, seed_base, q, metric,
                state, ra, rb, di, dj, dz,
            )  # fmt: skip
            # np.bool_: a literal True would compile a second specialisation
            sum_lambdas = _pair_derivatives(
                scores_q, scores_q, ex, di, dj, dz, k, loss_code, sigma, np.bool_(True),
                sum_lambdas, grad, hess,
            )  # fmt: skip
            for t in range(k):
                g_acc[di[t]] -= grad[t]
                g_acc[dj[t]] += grad[t]
                h_acc[di[t]] += hess[t]
                h_acc[dj[t]] += hess[t]
            n_pairs += k
        counts_out[q] = n_pairs
        factor = lambda_norm_factor(normalize, sum_lambdas)
        for d in range(n):
            w = weights[lo + d] if has_w else 1.0
            grad_q[d] = g_acc[d] * factor * w
            hess_q[d] = h_acc[d] * factor * w


def _pair_counts_all_queries(
    ref_scores, labels, values, inv_norm, weights, query_offsets, xpair_offsets, xpair_i,
    xpair_j, xpair_w, method, truncation, pairs_per_sample, seed_base, metric, loss_code, sigma,
    normalize, pair_chunk, counts_out,
):  # fmt: skip
    """Pairs per query at ``ref_scores`` (OUT int64 (n_queries,)): sizes PairTerms."""
    over_queries(
        _pair_counts_queries, query_offsets, ref_scores, labels, values, inv_norm, weights,
        query_offsets, xpair_offsets, xpair_i, xpair_j, xpair_w, method, truncation,
        pairs_per_sample, seed_base, metric, loss_code, sigma, normalize, pair_chunk,
        counts_out,
    )  # fmt: skip


@kernel
def _pair_counts_queries(
    q0, q1, ref_scores, labels, values, inv_norm, weights, query_offsets, xpair_offsets,
    xpair_i, xpair_j, xpair_w, method, truncation, pairs_per_sample, seed_base, metric,
    loss_code, sigma, normalize, pair_chunk, counts_out,
):  # fmt: skip
    # queries q0..q1-1 of _pair_counts_all_queries (see ltrboost._numba.over_queries)
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        counts_out[q] = _count_pairs_query(
            ref_scores[lo:hi], labels[lo:hi], inv_norm[q],
            xpair_offsets[q + 1] - xpair_offsets[q],
            method, truncation, pairs_per_sample,
        )  # fmt: skip


def _pair_terms_all_queries(
    scores, ref_scores, labels, values, inv_norm, weights, query_offsets, xpair_offsets,
    xpair_i, xpair_j, xpair_w, method, truncation, pairs_per_sample, seed_base, metric,
    loss_code, sigma, normalize, pair_chunk, same_scores, pair_offsets, pair_i, pair_j,
    pair_rho,
):  # fmt: skip
    """The OLE pair terms, OUT at ``pair_offsets`` (:func:`_pair_counts_all_queries`).

    ``pair_i`` / ``pair_j`` int32 global rows (preferred first); ``pair_rho`` float64
    the pair's hessian times ``(w_i + w_j) / 2`` times the query's normalisation.
    """
    over_queries(
        _pair_terms_queries, query_offsets, scores, ref_scores, labels, values, inv_norm,
        weights, query_offsets, xpair_offsets, xpair_i, xpair_j, xpair_w, method, truncation,
        pairs_per_sample, seed_base, metric, loss_code, sigma, normalize, pair_chunk,
        same_scores, pair_offsets, pair_i, pair_j, pair_rho,
    )  # fmt: skip


@kernel
def _pair_terms_queries(
    q0, q1, scores, ref_scores, labels, values, inv_norm, weights, query_offsets, xpair_offsets,
    xpair_i, xpair_j, xpair_w, method, truncation, pairs_per_sample, seed_base, metric,
    loss_code, sigma, normalize, pair_chunk, same_scores, pair_offsets, pair_i, pair_j,
    pair_rho,
):  # fmt: skip
    # queries q0..q1-1 of _pair_terms_all_queries (see ltrboost._numba.over_queries)
    has_w = weights.shape[0] > 0
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        x0 = xpair_offsets[q]
        x1 = xpair_offsets[q + 1]
        n = hi - lo
        scores_q = scores[lo:hi]
        ref_q = ref_scores[lo:hi]
        weights_q = weights[lo:hi] if has_w else weights[0:0]
        use_labels, order, lab_r, val_r, pa, pb, scale = _pair_context(
            ref_q, labels[lo:hi], values[lo:hi], inv_norm[q], x1 - x0, metric,
            normalize,
        )  # fmt: skip
        if not use_labels and x1 == x0:
            continue
        state, ra, rb, di, dj, dz, grad, hess = _pair_buffers(
            n, x1 - x0, use_labels, method, truncation, pairs_per_sample, pair_chunk
        )
        ex = _pair_exponentials(scores_q, loss_code, sigma)
        sum_lambdas = 0.0
        p = pair_offsets[q]
        while state[0] != 2:
            k = _next_weighted_pairs(
                ref_q, order, lab_r, val_r, pa, pb, inv_norm[q], scale, use_labels,
                xpair_i[x0:x1], xpair_j[x0:x1], xpair_w[x0:x1],
                method, truncation, pairs_per_sample, seed_base, q, metric,
                state, ra, rb, di, dj, dz,
            )  # fmt: skip
            sum_lambdas = _pair_derivatives(
                scores_q, ref_q, ex, di, dj, dz, k, loss_code, sigma, same_scores,
                sum_lambdas, grad, hess,
            )  # fmt: skip
            for t in range(k):
                pair_i[p + t] = lo + di[t]
                pair_j[p + t] = lo + dj[t]
                pair_rho[p + t] = hess[t] * _pair_weight(weights_q, di[t], dj[t])
            p += k
        factor = lambda_norm_factor(normalize, sum_lambdas)
        if factor != 1.0:
            for t in range(pair_offsets[q], p):
                pair_rho[t] *= factor


def _losses_all_queries(
    scores, ref_scores, labels, values, inv_norm, weights, query_offsets, xpair_offsets,
    xpair_i, xpair_j, xpair_w, method, truncation, pairs_per_sample, seed_base, metric,
    loss_code, sigma, normalize, pair_chunk, same_scores, loss_out,
):  # fmt: skip
    """The surrogate loss of every query (OUT float64 (n_queries,)).

    Pair ``(i, j)`` adds ``|dZ| log(1 + exp(-sigma (s_i - s_j)))`` (or ``|dZ| exp(s_j -
    s_i)``, continued past the clip as :func:`exp_pair_loss`) times ``(w_i + w_j) / 2``;
    the query's sum is multiplied by its normalisation factor.
    """
    over_queries(
        _losses_queries, query_offsets, scores, ref_scores, labels, values, inv_norm, weights,
        query_offsets, xpair_offsets, xpair_i, xpair_j, xpair_w, method, truncation,
        pairs_per_sample, seed_base, metric, loss_code, sigma, normalize, pair_chunk,
        same_scores, loss_out,
    )  # fmt: skip


@kernel
def _losses_queries(
    q0, q1, scores, ref_scores, labels, values, inv_norm, weights, query_offsets, xpair_offsets,
    xpair_i, xpair_j, xpair_w, method, truncation, pairs_per_sample, seed_base, metric,
    loss_code, sigma, normalize, pair_chunk, same_scores, loss_out,
):  # fmt: skip
    # queries q0..q1-1 of _losses_all_queries (see ltrboost._numba.over_queries)
    has_w = weights.shape[0] > 0
    logistic = loss_code == LOSS_LOGISTIC
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        x0 = xpair_offsets[q]
        x1 = xpair_offsets[q + 1]
        n = hi - lo
        loss_out[q] = 0.0
        scores_q = scores[lo:hi]
        ref_q = ref_scores[lo:hi]
        weights_q = weights[lo:hi] if has_w else weights[0:0]
        use_labels, order, lab_r, val_r, pa, pb, scale = _pair_context(
            ref_q, labels[lo:hi], values[lo:hi], inv_norm[q], x1 - x0, metric,
            normalize,
        )  # fmt: skip
        if not use_labels and x1 == x0:
            continue
        state, ra, rb, di, dj, dz, grad, hess = _pair_buffers(
            n, x1 - x0, use_labels, method, truncation, pairs_per_sample, pair_chunk
        )
        ex = _pair_exponentials(scores_q, loss_code, sigma)
        sum_lambdas = 0.0
        loss = 0.0
        while state[0] != 2:
            k = _next_weighted_pairs(
                ref_q, order, lab_r, val_r, pa, pb, inv_norm[q], scale, use_labels,
                xpair_i[x0:x1], xpair_j[x0:x1], xpair_w[x0:x1],
                method, truncation, pairs_per_sample, seed_base, q, metric,
                state, ra, rb, di, dj, dz,
            )  # fmt: skip
            if normalize:  # only the normalisation needs the derivatives
                sum_lambdas = _pair_derivatives(
                    scores_q, ref_q, ex, di, dj, dz, k, loss_code, sigma,
                    same_scores, sum_lambdas, grad, hess,
                )  # fmt: skip
            for t in range(k):
                i = di[t]
                j = dj[t]
                if logistic:
                    x_ij = sigma * (scores_q[i] - scores_q[j])
                    pair_loss = dz[t] * _logistic(x_ij)[2]
                else:
                    pair_loss = dz[t] * exp_pair_loss(scores_q[j] - scores_q[i])[0]
                loss += pair_loss * _pair_weight(weights_q, i, j)
        loss_out[q] = loss * lambda_norm_factor(normalize, sum_lambdas)


# --- references ---


def _dcg_full_reference(gains_ranked: NDArray[np.float64]) -> float:
    return float(np.sum(gains_ranked / np.log2(np.arange(gains_ranked.size) + 2.0)))


def _swap(x: NDArray[Any], a: int, b: int) -> NDArray[Any]:
    y = x.copy()
    y[a], y[b] = x[b], x[a]
    return y


def pair_engine_reference(
    scores: NDArray[np.float64],
    y: NDArray[np.float64],
    query_offsets: NDArray[np.int64],
    *,
    weights: NDArray[np.floating] | None = None,
    lambda_metric: str | None = "ndcg",
    loss: str = "logistic",
    sigma: float = 1.0,
    pair_method: str = "topk",
    truncation_level: int | None = 30,
    pairs_per_sample: int = 1,
    lambda_normalization: bool = True,
    gain: str = "exp",
    relevance_threshold: float = 1.0,
    random_state: int = 0,
    iteration: int = 0,
    reference_scores: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, list[tuple[int, int, float]]]:
    """NumPy twin of the engine for label pairs: (gradients, hessians, loss, pairs).

    |dZ| is computed by brute force: the metric of the ranked list with the two
    documents swapped minus the metric before (full-list DCG over IDCG@k for NDCG).
    ``lambda_metric=None`` is RankNet / RankBoost (|dZ| = 1).  ``pairs`` lists (doc_i,
    doc_j, rho) with global rows, query by query.
    """
    scores = np.asarray(scores, dtype=np.float64)
    ref_all = scores if reference_scores is None else np.asarray(reference_scores, float)
    n_all = scores.size
    g = np.zeros(n_all)
    h = np.zeros(n_all)
    w_all = np.ones(n_all) if weights is None else np.asarray(weights, dtype=np.float64)
    total_loss = 0.0
    pairs: list[tuple[int, int, float]] = []
    n_queries = len(query_offsets) - 1
    y_max = float(np.max(y)) if y.size else 0.0
    for q in range(n_queries):
        lo, hi = int(query_offsets[q]), int(query_offsets[q + 1])
        s, ref, lab = scores[lo:hi], ref_all[lo:hi], np.asarray(y[lo:hi], float)
        order = np.argsort(-ref, kind="stable")
        lab_r = lab[order]
        seed = random_state + iteration * n_queries + q
        ra, rb = enumerate_pairs_one_query_reference(
            lab_r, pair_method, truncation_level, pairs_per_sample, seed
        )
        if ra.size == 0:
            continue
        if lambda_metric == "ndcg":
            vals = np.exp2(lab_r) - 1.0 if gain == "exp" else lab_r.copy()
            ideal = np.sort(vals)[::-1]
            if truncation_level is not None:
                ideal = ideal[:truncation_level]
            idcg = _dcg_full_reference(ideal)
            if idcg == 0.0:
                continue
            base = _dcg_full_reference(vals)
            dz = np.array(
                [abs(_dcg_full_reference(_swap(vals, a, b)) - base) / idcg for a, b in
                 zip(ra, rb, strict=True)]
            )  # fmt: skip
        elif lambda_metric == "err":
            vals = (np.exp2(lab_r) - 1.0) / np.exp2(y_max)
            base = _err_ranked_reference(vals)
            dz = np.array(
                [abs(_err_ranked_reference(_swap(vals, a, b)) - base) for a, b in
                 zip(ra, rb, strict=True)]
            )  # fmt: skip
        elif lambda_metric == "map":
            vals = (lab_r >= relevance_threshold).astype(float)
            if vals.sum() == 0:
                continue
            base = _ap_ranked_reference(vals)
            dz = np.array(
                [abs(_ap_ranked_reference(_swap(vals, a, b)) - base) for a, b in
                 zip(ra, rb, strict=True)]
            )  # fmt: skip
        else:
            dz = np.ones(ra.size)
        # orient: i = more relevant document
        swap = lab_r[ra] < lab_r[rb]
        ri = np.where(swap, rb, ra)
        rj = np.where(swap, ra, rb)
        di, dj = order[ri], order[rj]
        if lambda_normalization and ref.max() != ref.min():
            dz = dz / (0.01 + np.abs(ref[di] - ref[dj]))
        w_pair = 0.5 * (w_all[lo + di] + w_all[lo + dj])
        if loss == "logistic":
            x = sigma * (s[di] - s[dj])
            rho = 1.0 / (1.0 + np.exp(x))
            gp = sigma * dz * rho
            hp = sigma**2 * dz * rho * (1.0 - rho)
            lp = dz * np.logaddexp(0.0, -x)
            lam = 2.0 * sigma * dz / (1.0 + np.exp(sigma * (ref[di] - ref[dj])))
        else:
            x = s[dj] - s[di]
            u = np.maximum(x - EXP_CLIP, 0.0)
            e = np.exp(np.minimum(x, EXP_CLIP))  # = EXP_CLIP_VALUE where u > 0
            lp = dz * np.where(u > 0, EXP_CLIP_VALUE * (1.0 + u + 0.5 * u * u), e)
            gp = dz * np.where(u > 0, EXP_CLIP_VALUE * (1.0 + u), e)
            hp = dz * e
            lam = 2.0 * gp
        gq = np.zeros(hi - lo)
        hq = np.zeros(hi - lo)
        np.add.at(gq, di, -gp)
        np.add.at(gq, dj, gp)
        np.add.at(hq, di, hp)
        np.add.at(hq, dj, hp)
        factor = 1.0
        if lambda_normalization and lam.sum() > 0:
            factor = np.log2(1.0 + lam.sum()) / lam.sum()
        g[lo:hi] = gq * factor * w_all[lo:hi]
        h[lo:hi] = hq * factor * w_all[lo:hi]
        total_loss += float(np.sum(lp * w_pair)) * factor
        pairs.extend(
            (lo + int(a), lo + int(b), float(r))
            for a, b, r in zip(di, dj, hp * w_pair * factor, strict=True)
        )
    return g, h, total_loss, pairs

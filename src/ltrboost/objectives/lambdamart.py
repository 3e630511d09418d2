"""LambdaMART, and the pairwise gradient engine it shares with RankNet and RankBoost.

The engine walks the pairs of each query (:mod:`ltrboost.objectives._pairs`), weighs
each pair by |delta Z| (the change of NDCG, ERR or AP when the two documents swap ranks;
1 for RankNet / RankBoost) and adds the pair's first and second derivatives to both
documents. Everything per query is independent, so one ``prange`` over queries does the
work (LightGBM's ``GetGradients`` -> ``GetGradientsForOneQuery`` skeleton).

Which quantity is computed is chosen by integer codes (``METRIC_*``, ``LOSS_*``), never
by passing jitted functions around (pynndescent#226: the cache misses).  The same
per-query kernel serves four purposes, selected by flags: gradients/hessians, pair
counting, the :class:`~ltrboost.objectives.base.PairTerms` of the OLE criterion, and the
loss.  The pair set, |delta Z| and the normalisation are computed at ``ref_scores``; the
pair loss and its derivatives at ``scores``.  ``gradient_hessian`` passes the same array
twice; the "frozen" loss :meth:`_PairwiseObjective.loss_fixed_weights` passes two.

Sign convention: ``gradients`` are dL/ds (descent is ``-gradients``).  Seed 001's lambda
``lambda_ij = -sigma |dZ| / (1 + exp(sigma (s_i - s_j)))`` is the contribution of pair
(i, j) to ``gradients[i]``, and ``-lambda_ij`` its contribution to ``gradients[j]``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import MAX_EXP_GAIN_LABEL
from ltrboost._numba import kernel, over_queries, parallel_kernel, prange
from ltrboost.dataset import RankingDataset
from ltrboost.metrics._dcg import _discount, inverse_max_dcg, label_gains
from ltrboost.objectives import _pairs
from ltrboost.objectives._pairs import (
    PAIR_SAMPLED,
    _count_pairs_one_query,
    _enumerate_pairs_chunk,
    _enumerate_pairs_one_query,
    _enumerate_pairs_one_query_reference,
    _has_two_labels,
    _max_pairs_one_query,
    _n_outer_ranks,
    _rank_order,
    pair_method_code,
    query_seed_base,
)
from ltrboost.objectives.base import Objective, PairTerms
from ltrboost.objectives.registry import register

METRIC_NONE = 0  # |dZ| = 1: RankNet, RankBoost
METRIC_NDCG = 1
METRIC_ERR = 2
METRIC_MAP = 3
LAMBDA_METRICS = {"ndcg": METRIC_NDCG, "err": METRIC_ERR, "map": METRIC_MAP}

LOSS_LOGISTIC = 0  # log(1 + exp(-sigma (s_i - s_j)))   (RankNet, LambdaMART)
LOSS_EXP = 1  # exp(s_j - s_i)                         (RankBoost)

# exp() argument cap of the RankBoost loss: exp(50) ~ 5e21 keeps float32 gradients
# finite and summable; a pair misordered by more than 50 has constant gradient beyond.
EXP_CLIP = 50.0


class _Constants(NamedTuple):
    """Per-dataset arrays the engine needs (cached in ``data.cache``)."""

    labels: NDArray[np.float64]  # (n_samples,) labels that define label pairs
    values: NDArray[np.float64]  # (n_samples,) NDCG gain | ERR R | AP relevance (0/1)
    inv_norm: NDArray[np.float64]  # (n_queries,) 1/IDCG | 1 | 1/#relevant; 0 = no pairs
    weights: NDArray[np.float32]  # (n_samples,) or (0,) for "no weights"
    xpair_offsets: NDArray[np.int64]  # (n_queries + 1,) explicit pairs, CSR by query
    xpair_i: NDArray[np.int32]  # preferred document, row inside its query
    xpair_j: NDArray[np.int32]  # other document, row inside its query
    xpair_w: NDArray[np.float64]  # pair weight (multiplies |dZ| = 1)
    zero_offsets: NDArray[np.int64]  # (n_queries + 1,) zeros: "no pair output"


def _no_explicit_pairs(n_queries: int) -> tuple[NDArray[np.int64], ...]:
    return (
        np.zeros(n_queries + 1, dtype=np.int64),
        np.zeros(0, dtype=np.int32),
        np.zeros(0, dtype=np.int32),
        np.zeros(0, dtype=np.float64),
    )


def _doc_weights(data: RankingDataset) -> NDArray[np.float32]:
    if data.weights is None:
        return np.zeros(0, dtype=np.float32)
    w = np.ascontiguousarray(data.weights, dtype=np.float32)
    if w.shape != (data.n_samples,):
        raise ValueError(
            f"weights has shape {w.shape}; expected ({data.n_samples},), "
            "one per document"
        )
    return w


def _as_1d(arr: Any, n: int, name: str, dtype: Any = None) -> NDArray[Any]:
    a = np.asarray(arr) if dtype is None else np.asarray(arr, dtype=dtype)
    if a.ndim == 2 and a.shape[0] == 1:
        a = a[0]
    if a.shape != (n,):
        raise ValueError(f"{name} has shape {np.shape(arr)}; expected ({n},)")
    return a


class _PairwiseObjective(Objective):
    """Shared Python side of the pairwise objectives: caching, calling the engine.

    Subclasses set ``_metric_code``, ``_loss_code``, ``_normalize``, ``_sigma`` and the
    pair parameters in ``__init__`` and implement :meth:`_build_constants`.

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
        self._pairs_per_sample = int(pairs_per_sample)
        if (
            isinstance(random_state, bool)
            or not isinstance(random_state, int | np.integer)
            or random_state < 0
        ):
            raise ValueError(
                f"random_state={random_state!r} should be a non-negative integer"
            )
        self._random_state = int(random_state)

    @staticmethod
    def _check_sigma(sigma: float) -> float:
        if not (isinstance(sigma, int | float | np.floating) and math.isfinite(sigma)):
            raise ValueError(f"sigma={sigma!r} should be a positive finite number")
        if sigma <= 0:
            raise ValueError(f"sigma={sigma} should be greater than 0")
        return float(sigma)

    # -- per-dataset constants --------------------------------------------------------

    def _cache_key(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def _build_constants(self, data: RankingDataset) -> _Constants:
        raise NotImplementedError

    def _constants(self, data: RankingDataset) -> _Constants:
        key = self._cache_key()
        const = data.cache.get(key)
        if const is None:
            const = self._build_constants(data)
            data.cache[key] = const
        return const

    def prepare(self, data: RankingDataset) -> None:
        """Validate labels (and explicit pairs) and cache the per-dataset constants."""
        self._constants(data)

    # -- engine calls -----------------------------------------------------------------

    def _run(
        self,
        scores: NDArray[np.float64],
        ref_scores: NDArray[np.float64],
        data: RankingDataset,
        iteration: int,
        *,
        count_only: bool = False,
        want_loss: bool = False,
        gradients: NDArray[np.floating] | None = None,
        hessians: NDArray[np.floating] | None = None,
        pair_offsets: NDArray[np.int64] | None = None,
        pair_out: tuple[NDArray[Any], NDArray[Any], NDArray[Any]] | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        const = self._constants(data)
        n = data.n_samples
        n_queries = data.n_queries
        scores = np.ascontiguousarray(_as_1d(scores, n, "scores", np.float64))
        same = ref_scores is None
        ref = (
            scores
            if same
            else np.ascontiguousarray(
                _as_1d(ref_scores, n, "reference_scores", np.float64)
            )
        )
        want_gh = gradients is not None
        if not want_gh:
            gradients = hessians = np.zeros(0, dtype=np.float32)
        want_pairs = pair_out is not None
        if not want_pairs:
            pair_offsets = const.zero_offsets
            pair_out = (
                np.zeros(0, dtype=np.int32),
                np.zeros(0, dtype=np.int32),
                np.zeros(0, dtype=np.float64),
            )
        counts = np.zeros(n_queries, dtype=np.int64)
        losses = np.zeros(n_queries, dtype=np.float64)
        if (
            self._metric_code == METRIC_NDCG
            and self._loss_code == LOSS_LOGISTIC
            and self._method != PAIR_SAMPLED
            and const.xpair_i.shape[0] == 0
            and same
            and want_gh
            and not (count_only or want_pairs or want_loss)
        ):
            _lambdamart_ndcg_all_queries(
                scores,
                const.labels,
                const.values,
                const.inv_norm,
                const.weights,
                data.query_offsets,
                self._method,
                self._truncation,
                self._sigma,
                self._normalize,
                gradients,
                hessians,
                counts,
            )
            return counts, losses
        _lambdamart_all_queries(
            scores,
            ref,
            const.labels,
            const.values,
            const.inv_norm,
            const.weights,
            data.query_offsets,
            const.xpair_offsets,
            const.xpair_i,
            const.xpair_j,
            const.xpair_w,
            self._method,
            self._truncation,
            self._pairs_per_sample,
            query_seed_base(self._random_state, iteration, n_queries),
            self._metric_code,
            self._loss_code,
            self._sigma,
            self._normalize,
            same,
            count_only,
            want_gh,
            want_pairs,
            want_loss,
            pair_offsets,
            gradients,
            hessians,
            pair_out[0],
            pair_out[1],
            pair_out[2],
            counts,
            losses,
            _pairs.PAIR_CHUNK,  # read per call: tests shrink it
        )
        return counts, losses

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
        if not (
            np.shares_memory(g, gradients_out) and np.shares_memory(h, hessians_out)
        ):
            raise ValueError("gradients_out and hessians_out must be contiguous arrays")
        self._run(scores, None, data, iteration, gradients=g, hessians=h)

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
        counts, _ = self._run(scores, ref_scores, data, iteration, count_only=True)
        offsets = np.zeros(data.n_queries + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        total = int(offsets[-1])
        _check_ole_pair_count(counts, data, self.name)
        out = (
            np.empty(total, dtype=np.int32),
            np.empty(total, dtype=np.int32),
            np.empty(total, dtype=np.float64),
        )
        self._run(
            scores, ref_scores, data, iteration, pair_offsets=offsets, pair_out=out
        )
        return PairTerms(offsets, out[0], out[1], out[2])

    def loss(
        self, scores: NDArray[np.float64], data: RankingDataset, iteration: int = 0
    ) -> float:
        """The pairwise surrogate at ``scores`` with |dZ| and pairs taken at ``scores``.

        For RankNet / RankBoost with ``pair_method="all"`` this is a smooth function of
        the scores; otherwise the pair set and |dZ| change with the ranking, and the
        finite-difference check uses :meth:`loss_fixed_weights`.
        """
        _, losses = self._run(scores, None, data, iteration, want_loss=True)
        return float(np.sum(losses))

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
        _, losses = self._run(scores, reference_scores, data, iteration, want_loss=True)
        return float(np.sum(losses))

    def pair_terms_fixed_weights(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        reference_scores: NDArray[np.float64],
        iteration: int = 0,
    ) -> PairTerms:
        """:meth:`pair_terms` with pairs and weights frozen at ``reference_scores``."""
        return self._pair_terms(scores, reference_scores, data, iteration)


def _check_ole_pair_count(
    counts: NDArray[np.int64], data: RankingDataset, objective: str
) -> None:
    """Refuse to hold more than ``_pairs.max_ole_pairs()`` pairs (OLE), naming the
    query with the most pairs and what to change."""
    total = int(counts.sum())
    limit = _pairs.max_ole_pairs()
    if total <= limit:
        return
    q = int(np.argmax(counts))
    name = data.query_ids[q] if data.query_ids is not None else q
    n_q = int(data.query_offsets[q + 1] - data.query_offsets[q])
    raise ValueError(
        f"split_criterion='ole' holds every pair of a round in memory: {total} pairs "
        f"(~{total * 40 / 2**30:.1f} GiB) are over the limit of {limit} "
        f"($LTRBOOST_MAX_OLE_PAIRS); query {name} alone has {int(counts[q])} pairs "
        f"({n_q} documents). Use pair_method='topk' with a truncation_level, "
        f"pair_method='sampled', or split_criterion='newton' ({objective})"
    )


@register
class LambdaMART(_PairwiseObjective):
    r"""LambdaMART: RankNet's pair loss weighted by |delta Z| (seed 001, "LambdaMART
    Demystified"; seed 003; seed 000 example 4).

    For a query with pairs (i, j), y_i > y_j, from ``pair_method``, and
    ``rho_ij = 1 / (1 + exp(sigma (s_i - s_j)))``::

        lambda_ij = -sigma |dZ_ij| rho_ij                     (seed 001, lambda_ij)
        gradients[i] += lambda_ij,  gradients[j] -= lambda_ij
        hessians[i] += sigma^2 |dZ_ij| rho_ij (1 - rho_ij),  same for j

    so ``gradients`` are dL/ds and the paper's lambda_i is ``-gradients[i]``.  These are
    the exact first and diagonal second derivatives of the surrogate ``L = sum_pairs
    |dZ_ij| log(1 + exp(-sigma (s_i - s_j)))`` with |dZ| held fixed
    (:meth:`loss_fixed_weights`; the finite-difference tests prove it).

    Hessian constant: ``sigma^2 rho (1 - rho) |dZ|``, as in the seeds and LightGBM's
    ``lambdarank``; XGBoost uses ``2 rho (1 - rho) |dZ|`` without sigma.  No floor is
    applied to the hessian.

    |dZ| is the absolute change of the metric when documents i and j swap ranks, the
    others staying put (ranks: stable sort of ``-score``, ties in input order):

    * ``"ndcg"``: ``|gain_i - gain_j| |D(r_i) - D(r_j)| / IDCG@truncation_level`` with
      ``D(r) = 1 / log2(r + 2)`` at the current ranks *without* cut-off (LightGBM).
    * ``"err"``: exact change of ERR = sum_r R_r / (r + 1) prod_{k<r} (1 - R_k) with ``R
      = (2^y - 1) / 2^y_max`` (``y_max``: the dataset's largest label), O(1) per pair
      from prefix products.
    * ``"map"``: exact change of AP on binary relevance ``y >= relevance_threshold``
      (XGBoost's ``DeltaMAP``), O(1) per pair from prefix sums; AP's denominator is the
      query's number of relevant documents.

    ``lambda_normalization=True`` follows LightGBM's ``lambdarank_norm``: |dZ| is
    divided by ``0.01 + |s_i - s_j|`` when the query's best and worst scores differ, and
    the query's gradients and hessians are multiplied by ``log2(1 + S) / S`` with ``S =
    sum_pairs 2 sigma |dZ| rho_ij`` (LightGBM's ``sum_lambdas``).

    Queries with one document, with all labels equal, with zero ideal DCG (``"ndcg"``)
    or no relevant document (``"map"``) contribute nothing (gradients and hessians 0).
    Explicit preference pairs (``data.pairs``) are not used: |dZ| needs graded labels;
    use ``ranknet`` or ``rankboost`` for them.

    Parameters
    ----------
    lambda_metric : {"ndcg", "err", "map"}, default="ndcg"
    sigma : float, default=1.0
        Sigmoid scale (LightGBM ``sigmoid``).
    pair_method : {"topk", "all", "sampled"}, default="topk"
        See :mod:`ltrboost.objectives._pairs`.
    truncation_level : int or None, default=30
        ``"topk"``: pairs need one document in the current top ``truncation_level``;
        ``"ndcg"``: the ideal DCG is IDCG@truncation_level.  None: no truncation.
        (LightGBM ``lambdarank_truncation_level``, default 30.)
    pairs_per_sample : int, default=1
        Partners per document for ``"sampled"``.
    lambda_normalization : bool, default=True
        LightGBM's ``lambdarank_norm`` (see above).
    gain : {"exp", "linear"}, default="exp"
        NDCG gain ``2^y - 1`` or ``y``.
    relevance_threshold : float, default=1
        ``"map"``: documents with ``y >= relevance_threshold`` are relevant.
    random_state : int, default=0
        Seed of ``"sampled"``; query ``q`` of iteration ``t`` uses
        ``random_state + t * n_queries + q``.
    """

    name = "lambdamart"
    needs_integer_labels = True

    def __init__(
        self,
        lambda_metric: str = "ndcg",
        sigma: float = 1.0,
        pair_method: str = "topk",
        truncation_level: int | None = 30,
        pairs_per_sample: int = 1,
        lambda_normalization: bool = True,
        gain: str = "exp",
        relevance_threshold: float = 1,
        random_state: int = 0,
    ) -> None:
        super().__init__(
            lambda_metric=lambda_metric,
            sigma=sigma,
            pair_method=pair_method,
            truncation_level=truncation_level,
            pairs_per_sample=pairs_per_sample,
            lambda_normalization=lambda_normalization,
            gain=gain,
            relevance_threshold=relevance_threshold,
            random_state=random_state,
        )
        try:
            self._metric_code = LAMBDA_METRICS[lambda_metric]
        except (KeyError, TypeError):
            raise ValueError(
                f"lambda_metric={lambda_metric!r} is not one of "
                f"{sorted(LAMBDA_METRICS)}"
            ) from None
        if gain not in ("exp", "linear"):
            raise ValueError(f"gain={gain!r} is not one of ('exp', 'linear')")
        if not isinstance(lambda_normalization, bool | np.bool_):
            raise ValueError(
                f"lambda_normalization={lambda_normalization!r} should be True or False"
            )
        if not math.isfinite(float(relevance_threshold)):
            raise ValueError(
                f"relevance_threshold={relevance_threshold!r} must be finite"
            )
        self._sigma = self._check_sigma(sigma)
        self._set_pair_params(
            pair_method, truncation_level, pairs_per_sample, random_state
        )
        self._loss_code = LOSS_LOGISTIC
        self._normalize = bool(lambda_normalization)
        self._gain = gain
        self._truncation_level = truncation_level
        self._relevance_threshold = float(relevance_threshold)
        self.default_metric = {
            "ndcg": "ndcg@10",
            "err": "err@10",
            "map": "map",
        }[lambda_metric]

    def _cache_key(self) -> tuple[Any, ...]:
        return (
            "lambdamart",
            self._metric_code,
            self._gain,
            self._truncation_level,
            self._relevance_threshold,
        )

    def _build_constants(self, data: RankingDataset) -> _Constants:
        if data.y is None:
            raise ValueError(
                "lambdamart needs graded labels y; for preference pairs only, use "
                "objective='ranknet' or 'rankboost'"
            )
        y = np.ascontiguousarray(data.y, dtype=np.float64)
        if y.size:
            if np.any(y < 0) or np.any(y != np.floor(y)):
                bad = int(np.flatnonzero((y < 0) | (y != np.floor(y)))[0])
                raise ValueError(
                    f"lambdamart needs non-negative integer labels (relevance grades); "
                    f"y[{bad}]={y[bad]:g}"
                )
        n_queries = data.n_queries
        offsets = data.query_offsets
        if self._metric_code == METRIC_NDCG:
            values = label_gains(y, self._gain)  # raises for y > 31 with gain="exp"
            k = 0 if self._truncation_level is None else int(self._truncation_level)
            inv_norm = inverse_max_dcg(values, offsets, k)
        elif self._metric_code == METRIC_ERR:
            y_max = float(y.max()) if y.size else 0.0
            if y_max > MAX_EXP_GAIN_LABEL:
                raise ValueError(
                    f"label {y_max:g} is too large for ERR's 2^y grades (at most "
                    f"{MAX_EXP_GAIN_LABEL}); rescale the labels or use "
                    "lambda_metric='ndcg' with gain='linear'"
                )
            values = (np.exp2(y) - 1.0) / np.exp2(y_max)
            inv_norm = np.ones(n_queries, dtype=np.float64)
        else:
            values = (y >= self._relevance_threshold).astype(np.float64)
            csum = np.concatenate(([0.0], np.cumsum(values)))
            n_rel = csum[offsets[1:]] - csum[offsets[:-1]]
            inv_norm = np.divide(
                1.0, n_rel, out=np.zeros(n_queries, dtype=np.float64), where=n_rel > 0
            )
        return _Constants(
            y,
            np.ascontiguousarray(values, dtype=np.float64),
            np.ascontiguousarray(inv_norm, dtype=np.float64),
            _doc_weights(data),
            *_no_explicit_pairs(n_queries),
            np.zeros(n_queries + 1, dtype=np.int64),
        )


# --- kernels ---


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


@kernel
def _sigmoid_pair(x):
    """``(rho, 1 - rho)`` with ``rho = 1 / (1 + exp(x))``: one exp, no log, no overflow."""
    if x >= 0.0:
        t = math.exp(-x)
        inv = 1.0 / (1.0 + t)
        return t * inv, inv
    t = math.exp(x)
    inv = 1.0 / (1.0 + t)
    return inv, t * inv


# Below this, exp(sigma (s - s_max)) is too close to the subnormal range for the ratio
# form of :func:`_sigmoid_from_exp` to keep full precision.
_TINY_EXP = 1e-280


@kernel
def _sigmoid_from_exp(e_i, e_j, x):
    """``(rho, 1 - rho)``, ``rho = 1 / (1 + exp(x))``, from per-document exponentials.

    With ``e_d = exp(sigma (s_d - s_max))`` of the query and ``x = sigma (s_i - s_j)``,
    ``exp(x) = e_i / e_j`` and so ``rho = e_j / (e_i + e_j)``: one division per pair
    instead of an ``exp`` (the exponentials cost one per document, not per pair).
    ``e <= 1`` never overflows; when either is tiny (scores more than ~640/sigma below
    the query's best) the direct form is used.
    """
    if e_i < _TINY_EXP or e_j < _TINY_EXP:
        return _sigmoid_pair(x)
    inv = 1.0 / (e_i + e_j)
    return e_j * inv, e_i * inv


@kernel
def _exp_below_max(scores_q, s_max, sigma, out):
    """``out[d] = exp(sigma (scores_q[d] - s_max))`` (<= 1): the e_d of
    :func:`_sigmoid_from_exp`."""
    for d in range(scores_q.shape[0]):
        out[d] = math.exp(sigma * (scores_q[d] - s_max))


@kernel
def _delta_ndcg(gain_i, gain_j, discount_i, discount_j, inv_idcg):
    """|dNDCG| of swapping two documents: |gain_i - gain_j| |D_i - D_j| / IDCG.

    The discounts are those of the two current ranks, without cut-off (LightGBM).
    """
    return abs(gain_i - gain_j) * abs(discount_i - discount_j) * inv_idcg


@kernel
def _err_prefix(r_ranked, p_out, s_out):
    """Prefix products and sums of ERR over a ranked list.

    r_ranked: IN float64 (n,) Chapelle's R in rank order (0 <= R < 1). p_out: OUT
    float64 (n + 1,): p[r] = prod_{k<r} (1 - R_k)  (reach probability of r). s_out: OUT
    float64 (n + 1,): s[r] = sum_{k<r} R_k p[k] / (k + 1)  (ERR of the top r).
    """
    n = r_ranked.shape[0]
    p_out[0] = 1.0
    s_out[0] = 0.0
    for r in range(n):
        s_out[r + 1] = s_out[r] + r_ranked[r] * p_out[r] / (r + 1.0)
        p_out[r + 1] = p_out[r] * (1.0 - r_ranked[r])


@kernel
def _delta_err(r_a, r_b, p_a, p_b, middle, a, b):
    """ERR(after swapping ranks a < b) - ERR(before), O(1) from the prefixes.

    r_a, r_b: R of the documents at ranks a and b; p_a, p_b: ``p[a]``, ``p[b]``;
    middle: ``s[b] - s[a + 1]``, the ERR terms strictly between (see ``_err_prefix``).
    Only ranks a..b change::

        rank a:        p_a R_a/(a+1)         -> p_a R_b/(a+1)
        a < k < b:     term_k                -> term_k (1 - R_b)/(1 - R_a)
        rank b:        p_b R_b/(b+1)         -> p_b (1 - R_b)/(1 - R_a) R_a/(b+1)
        k > b:         unchanged (both factors (1 - R_a)(1 - R_b) still above)

    R < 1 always (R = (2^y - 1) / 2^y_max), so 1 - R_a > 0.  Scalars only (called once
    per pair; array arguments would cost reference counting).
    """
    return (
        (r_b - r_a) * p_a / (a + 1.0)
        + middle * (r_a - r_b) / (1.0 - r_a)
        + p_b * (r_a * (1.0 - r_b) / (1.0 - r_a) - r_b) / (b + 1.0)
    )


@kernel
def _ap_prefix(rel_ranked, c_out, t_out):
    """Prefix counts for AP over a ranked list of binary relevances.

    rel_ranked: IN float64 (n,) 1.0 relevant, 0.0 not, in rank order.
    c_out: OUT float64 (n + 1,): c[r] = number of relevant documents above rank r.
    t_out: OUT float64 (n + 1,): t[r] = sum_{k<r, relevant} 1 / (k + 1).
    """
    n = rel_ranked.shape[0]
    c_out[0] = 0.0
    t_out[0] = 0.0
    for r in range(n):
        c_out[r + 1] = c_out[r] + rel_ranked[r]
        t_out[r + 1] = t_out[r] + rel_ranked[r] / (r + 1.0)


@kernel
def _delta_ap(rel_a, rel_b, c_a, c_b, middle, a, b):
    """(AP(after swapping ranks a < b) - AP(before)) times the number of relevant docs.

    rel_a, rel_b: relevance (0/1) at ranks a and b; c_a, c_b: ``c[a]``, ``c[b]``;
    middle: ``t[b] - t[a + 1]`` (see ``_ap_prefix``).  With exactly one of the two
    relevant (otherwise 0) and AP = (1/N) sum over relevant k of (relevant at or above
    k)/(k + 1)::

        relevant at a moves down to b:  c_b/(b+1) - (c_a+1)/(a+1) - M
        relevant at b moves up to a:    (c_a+1)/(a+1) - (c_b+1)/(b+1) + M
        with M = sum_{a<k<b, relevant} 1/(k+1)

    (the relevant documents strictly between lose, resp. gain, one relevant above them).
    """
    if rel_a == rel_b:
        return 0.0
    if rel_a > 0.0:
        return c_b / (b + 1.0) - (c_a + 1.0) / (a + 1.0) - middle
    return (c_a + 1.0) / (a + 1.0) - (c_b + 1.0) / (b + 1.0) + middle


@kernel
def _lambdamart_ndcg_fused(
    scores_q, labels_q, values_q, inv_norm_q, weights_q, order, n_outer, sigma,
    normalize, grad_q, hess_q,
):  # fmt: skip
    """The common case of :func:`_lambdamart_one_query`, fused; returns the pair count.

    NDCG lambdas, logistic loss, ``all``/``topk`` pairs, no explicit pairs, gradients
    and hessians only.  Walks LightGBM's double loop directly over rank-ordered copies
    of the scores, labels and gains (sequential reads, no pair buffer, no per-pair
    ``order`` lookups).  The pairs, the arithmetic of each pair and the order of every
    floating-point sum are those of the general loop, so the result is bit-identical
    (tested); only the memory traffic differs.
    """
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
        disc[r] = _discount(r)
    ex = np.empty(n)
    _exp_below_max(s, s[0], sigma, ex)  # s[0] is the query's highest score
    g_acc = np.zeros(n)  # by rank
    h_acc = np.zeros(n)
    scale_by_diff = normalize and s[0] != s[n - 1]
    sum_lambdas = 0.0
    n_pairs = 0
    for a in range(n_outer):
        la = lab[a]
        va = v[a]
        da = disc[a]
        sa = s[a]
        ea = ex[a]
        g_a = g_acc[a]  # row a only adds to a's sums (b > a): keep them in registers
        h_a = h_acc[a]
        for b in range(a + 1, n):
            lb = lab[b]
            if la == lb:
                continue
            # t = +1 when a is the preferred document, -1 when b is: every quantity
            # below is the general loop's with (i, j) = (a, b) or (b, a); flipping a
            # sign is exact, so the sums are bit-identical.
            t = 1.0 if la > lb else -1.0
            dz = _delta_ndcg(va, v[b], da, disc[b], inv_norm_q)
            diff = t * (sa - s[b])  # s_i - s_j
            if scale_by_diff:
                dz /= 0.01 + abs(diff)
            eb = ex[b]
            if t > 0.0:
                rho, one_minus_rho = _sigmoid_from_exp(ea, eb, sigma * diff)
            else:
                rho, one_minus_rho = _sigmoid_from_exp(eb, ea, sigma * diff)
            grad = sigma * dz * rho
            hess = sigma * sigma * dz * rho * one_minus_rho
            sum_lambdas += 2.0 * grad
            g_a -= t * grad
            g_acc[b] += t * grad
            h_a += hess
            h_acc[b] += hess
            n_pairs += 1
        g_acc[a] = g_a
        h_acc[a] = h_a
    factor = 1.0
    if normalize and sum_lambdas > 0.0:
        factor = math.log2(1.0 + sum_lambdas) / sum_lambdas
    has_w = weights_q.shape[0] > 0
    for r in range(n):
        d = order[r]
        w = weights_q[d] if has_w else 1.0
        grad_q[d] = g_acc[r] * factor * w
        hess_q[d] = h_acc[r] * factor * w
    return n_pairs


@kernel
def _lambdamart_one_query(
    scores_q,
    ref_q,
    labels_q,
    values_q,
    inv_norm_q,
    weights_q,
    xp_i,
    xp_j,
    xp_w,
    method,
    truncation,
    pairs_per_sample,
    seed,
    metric,
    loss_code,
    sigma,
    normalize,
    same_scores,
    count_only,
    want_gh,
    want_pairs,
    want_loss,
    row_offset,
    grad_q,
    hess_q,
    pair_i_out,
    pair_j_out,
    pair_rho_out,
    pair_chunk=1 << 20,
):
    """One query (LightGBM's ``GetGradientsForOneQuery``); returns (n_pairs, loss).

    scores_q, ref_q: IN float64 (n,) scores for the pair losses / for ranks, pairs,
    |dZ|. labels_q, values_q: IN float64 (n,) labels and per-document metric values.
    weights_q: IN float32 (n,) or (0,).   xp_*: IN explicit pairs (rows in the query).
    grad_q, hess_q: OUT float32 (n,) when ``want_gh``. pair_*_out: OUT this query's
    slice of the PairTerms arrays when ``want_pairs``. ``count_only``: only count the
    pairs (sizes the PairTerms arrays).  ``pair_chunk``: the most label pairs held at
    once (``_pairs.PAIR_CHUNK``).

    The label pairs are enumerated into a buffer of rank pairs, in chunks of at most
    ``pair_chunk`` (``_enumerate_pairs_chunk``), and one loop walks them followed by
    the explicit pairs.  The pair body is written once, inline: a helper function taking
    the arrays would not be inlined by Numba and would pay reference counting on every
    array argument for every pair (measured: several times the cost of the pair).
    """
    n = scores_q.shape[0]
    if want_gh:
        for d in range(n):
            grad_q[d] = 0.0
            hess_q[d] = 0.0
    n_x = xp_i.shape[0]
    use_labels = n >= 2 and inv_norm_q > 0.0 and _has_two_labels(labels_q)
    if not use_labels and n_x == 0:
        return 0, 0.0

    order = _rank_order(ref_q)
    if (
        metric == METRIC_NDCG
        and loss_code == LOSS_LOGISTIC
        and method != PAIR_SAMPLED
        and n_x == 0
        and use_labels
        and same_scores
        and want_gh
        and not (count_only or want_pairs or want_loss)
    ):
        n_fused = _lambdamart_ndcg_fused(
            scores_q, labels_q, values_q, inv_norm_q, weights_q, order,
            _n_outer_ranks(n, method, truncation), sigma, normalize, grad_q, hess_q,
        )  # fmt: skip
        return n_fused, 0.0
    labels_ranked = labels_q[order]
    if count_only:
        count = n_x
        if use_labels:
            count += _count_pairs_one_query(
                labels_ranked, method, truncation, pairs_per_sample
            )
        return count, 0.0

    # Label pairs go through a buffer of at most ``pair_chunk`` pairs: "all"/"topk"
    # resume their double loop where the previous chunk stopped, so memory stays linear
    # in the query length; "sampled" has n * pairs_per_sample pairs, written at once.
    # The pairs are visited in the same order as unchunked, so results are identical.
    cap = 0
    if use_labels:
        cap = _max_pairs_one_query(n, method, truncation, pairs_per_sample)
        if method != PAIR_SAMPLED:
            cap = min(cap, max(pair_chunk, 1))
    rank_a = np.empty(cap, dtype=np.int64)
    rank_b = np.empty(cap, dtype=np.int64)
    cursor = np.zeros(2, dtype=np.int64)  # (rank_hi, rank_lo) to resume from
    cursor[1] = 1
    rank_of = np.empty(n, dtype=np.int64)  # document -> rank (explicit pairs)
    for r in range(n):
        rank_of[order[r]] = r

    values_ranked = values_q[order]
    # metric prefixes over the ranking: NDCG discounts | ERR (p, s) | AP (c, t)
    m = n + 1 if metric != METRIC_NONE else 1
    pa = np.zeros(m)
    pb = np.zeros(m)
    if metric == METRIC_NDCG:
        for r in range(n):
            pa[r] = _discount(r)
    elif metric == METRIC_ERR:
        _err_prefix(values_ranked, pa, pb)
    elif metric == METRIC_MAP:
        _ap_prefix(values_ranked, pa, pb)
    scale_by_diff = normalize and ref_q[order[0]] != ref_q[order[n - 1]]
    has_w = weights_q.shape[0] > 0

    ex = np.empty(n if loss_code == LOSS_LOGISTIC else 0)  # see _sigmoid_from_exp
    if loss_code == LOSS_LOGISTIC:
        _exp_below_max(scores_q, scores_q.max(), sigma, ex)
    g_acc = np.zeros(n)  # unnormalised, unweighted, float64
    h_acc = np.zeros(n)
    sum_lambdas = 0.0
    loss = 0.0
    k = -1  # index of the pair in this query's PairTerms slice
    labels_left = use_labels
    explicit_left = n_x > 0
    while labels_left or explicit_left:
        is_label = labels_left
        if labels_left:
            if method == PAIR_SAMPLED:
                n_in = _enumerate_pairs_one_query(
                    labels_ranked, method, truncation, pairs_per_sample, seed,
                    rank_a, rank_b,
                )  # fmt: skip
                labels_left = False
            else:
                n_in = _enumerate_pairs_chunk(
                    labels_ranked, method, truncation, cursor, rank_a, rank_b
                )
                labels_left = n_in == cap  # a full chunk: maybe more to come
        else:
            n_in = n_x
            explicit_left = False
        for t in range(n_in):
            k += 1
            # --- the pair: doc_i preferred to doc_j, and its |dZ| ---
            if is_label:
                r_i = rank_a[t]
                r_j = rank_b[t]
                if labels_ranked[r_i] < labels_ranked[r_j]:
                    r_i, r_j = r_j, r_i
                doc_i = order[r_i]
                doc_j = order[r_j]
                lo = min(r_i, r_j)
                hi = max(r_i, r_j)
                if metric == METRIC_NONE:
                    dz = 1.0
                elif metric == METRIC_NDCG:  # pa holds the discounts of the ranks
                    dz = _delta_ndcg(
                        values_ranked[r_i], values_ranked[r_j], pa[r_i], pa[r_j], inv_norm_q
                    )
                elif metric == METRIC_ERR:
                    dz = abs(
                        _delta_err(
                            values_ranked[lo], values_ranked[hi], pa[lo], pa[hi],
                            pb[hi] - pb[lo + 1], lo, hi,
                        )
                    )  # fmt: skip
                else:
                    dz = inv_norm_q * abs(
                        _delta_ap(
                            values_ranked[lo], values_ranked[hi], pa[lo], pa[hi],
                            pb[hi] - pb[lo + 1], lo, hi,
                        )
                    )  # fmt: skip
            else:  # explicit preference pair: |dZ| = its weight, whatever the metric
                x = t
                doc_i = xp_i[x]
                doc_j = xp_j[x]
                dz = xp_w[x]
            if scale_by_diff:  # LightGBM lambdarank_norm: regularise by the score distance
                dz /= 0.01 + abs(ref_q[doc_i] - ref_q[doc_j])

            # --- its loss, derivatives and share of sum_lambdas ---
            if loss_code == LOSS_LOGISTIC:
                x_ij = sigma * (scores_q[doc_i] - scores_q[doc_j])
                rho, one_minus_rho = _sigmoid_from_exp(ex[doc_i], ex[doc_j], x_ij)
                grad = sigma * dz * rho  # = -lambda_ij (seed 001)
                hess = sigma * sigma * dz * rho * one_minus_rho
                pair_loss = 0.0
                if want_loss:  # log1p costs as much as the rest of the pair
                    pair_loss = dz * _logistic(x_ij)[2]
                if same_scores:
                    sum_lambdas += 2.0 * grad
                else:
                    rho_ref, _ = _sigmoid_pair(sigma * (ref_q[doc_i] - ref_q[doc_j]))
                    sum_lambdas += 2.0 * sigma * dz * rho_ref
            else:  # RankBoost: exp(s_j - s_i), seed 000 example 3
                e = math.exp(min(scores_q[doc_j] - scores_q[doc_i], EXP_CLIP))
                grad = dz * e
                hess = dz * e
                pair_loss = dz * e
                sum_lambdas += 2.0 * grad

            g_acc[doc_i] -= grad
            g_acc[doc_j] += grad
            h_acc[doc_i] += hess
            h_acc[doc_j] += hess
            w_pair = 1.0
            if has_w:  # float64 before adding: float32 + float32 would round
                w_pair = 0.5 * (np.float64(weights_q[doc_i]) + np.float64(weights_q[doc_j]))
            if want_pairs:
                pair_i_out[k] = row_offset + doc_i
                pair_j_out[k] = row_offset + doc_j
                pair_rho_out[k] = hess * w_pair
            if want_loss:
                loss += pair_loss * w_pair

    factor = 1.0
    if normalize and sum_lambdas > 0.0:  # LightGBM lambdarank_norm
        factor = math.log2(1.0 + sum_lambdas) / sum_lambdas
    if want_gh:
        for d in range(n):
            w = weights_q[d] if has_w else 1.0
            grad_q[d] = g_acc[d] * factor * w
            hess_q[d] = h_acc[d] * factor * w
    n_pairs = k + 1
    if want_pairs and factor != 1.0:
        for k in range(n_pairs):
            pair_rho_out[k] *= factor
    return n_pairs, loss * factor


@parallel_kernel
def _lambdamart_all_queries(
    scores,
    ref_scores,
    labels,
    values,
    inv_norm,
    weights,
    query_offsets,
    xpair_offsets,
    xpair_i,
    xpair_j,
    xpair_w,
    method,
    truncation,
    pairs_per_sample,
    seed_base,
    metric,
    loss_code,
    sigma,
    normalize,
    same_scores,
    count_only,
    want_gh,
    want_pairs,
    want_loss,
    pair_offsets,
    gradients,
    hessians,
    pair_i,
    pair_j,
    pair_rho,
    counts_out,
    loss_out,
    pair_chunk=1 << 20,
):
    """Parallel driver over queries; every query writes only its own slices.

    IN: scores, ref_scores, labels, values (float64, n_samples); inv_norm (n_queries);
    weights float32 (n_samples,) or (0,); query_offsets int64; explicit pairs in CSR.
    OUT: gradients, hessians float32 (n_samples,) or (0,) when not wanted; pair_* at
    ``pair_offsets`` (zeros when not wanted); counts_out int64, loss_out float64
    (n_queries,).  The seed of query q is ``seed_base + q``.
    """
    n_queries = query_offsets.shape[0] - 1
    has_w = weights.shape[0] > 0
    for q in prange(n_queries):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        w_lo = lo if has_w else 0
        w_hi = hi if has_w else 0
        x0 = xpair_offsets[q]
        x1 = xpair_offsets[q + 1]
        p0 = pair_offsets[q]
        p1 = pair_offsets[q + 1]
        count, loss = _lambdamart_one_query(
            scores[lo:hi], ref_scores[lo:hi], labels[lo:hi], values[lo:hi], inv_norm[q],
            weights[w_lo:w_hi], xpair_i[x0:x1], xpair_j[x0:x1], xpair_w[x0:x1],
            method, truncation, pairs_per_sample, seed_base + q,
            metric, loss_code, sigma, normalize, same_scores,
            count_only, want_gh, want_pairs, want_loss, lo,
            gradients[lo:hi], hessians[lo:hi],
            pair_i[p0:p1], pair_j[p0:p1], pair_rho[p0:p1], pair_chunk,
        )  # fmt: skip
        counts_out[q] = count
        loss_out[q] = loss


def _lambdamart_ndcg_all_queries(
    scores, labels, values, inv_norm, weights, query_offsets, method, truncation,
    sigma, normalize, gradients, hessians, counts_out,
):  # fmt: skip
    """Parallel driver of the common case only (:func:`_lambdamart_ndcg_fused`).

    Same inputs and outputs as :func:`_lambdamart_all_queries` restricted to NDCG
    lambdas, logistic loss, ``all``/``topk`` pairs, no explicit pairs, gradients and
    hessians only.  A separate driver so that a plain LambdaMART run never compiles the
    general per-query kernel (most of the package's first-run compilation time).
    Threads run blocks of queries of the serial kernel :func:`_lambdamart_ndcg_queries`
    (:func:`ltrboost._numba.over_queries`; no parfor to compile).
    """
    over_queries(
        _lambdamart_ndcg_queries, query_offsets, scores, labels, values, inv_norm,
        weights, query_offsets, method, truncation, sigma, normalize, gradients,
        hessians, counts_out,
    )  # fmt: skip


@kernel
def _lambdamart_ndcg_queries(
    q0, q1, scores, labels, values, inv_norm, weights, query_offsets, method,
    truncation, sigma, normalize, gradients, hessians, counts_out,
):  # fmt: skip
    # queries q0..q1-1 of _lambdamart_ndcg_all_queries
    has_w = weights.shape[0] > 0
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        for d in range(lo, hi):
            gradients[d] = 0.0
            hessians[d] = 0.0
        counts_out[q] = 0
        labels_q = labels[lo:hi]
        if n < 2 or inv_norm[q] <= 0.0 or not _has_two_labels(labels_q):
            continue
        scores_q = scores[lo:hi]
        counts_out[q] = _lambdamart_ndcg_fused(
            scores_q, labels_q, values[lo:hi], inv_norm[q],
            weights[lo:hi] if has_w else weights[0:0], _rank_order(scores_q),
            _n_outer_ranks(n, method, truncation), sigma, normalize,
            gradients[lo:hi], hessians[lo:hi],
        )  # fmt: skip


# --- references ---


def _dcg_full_reference(gains_ranked: NDArray[np.float64]) -> float:
    return float(np.sum(gains_ranked / np.log2(np.arange(gains_ranked.size) + 2.0)))


def _err_reference(r_ranked: NDArray[np.float64]) -> float:
    """ERR of a ranked list of Chapelle R values, straight from the definition."""
    reach = np.concatenate(([1.0], np.cumprod(1.0 - r_ranked)[:-1]))
    return float(np.sum(r_ranked * reach / np.arange(1, r_ranked.size + 1)))


def _ap_reference(rel_ranked: NDArray[np.float64]) -> float:
    """AP of a ranked list of 0/1 relevances (0 when nothing is relevant)."""
    rel = np.asarray(rel_ranked, dtype=bool)
    if not rel.any():
        return 0.0
    prec = np.cumsum(rel) / np.arange(1, rel.size + 1)
    return float(np.sum(prec[rel]) / rel.sum())


def _swap(x: NDArray[Any], a: int, b: int) -> NDArray[Any]:
    y = x.copy()
    y[a], y[b] = x[b], x[a]
    return y


def _lambdamart_reference(
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
) -> tuple[
    NDArray[np.float64], NDArray[np.float64], float, list[tuple[int, int, float]]
]:
    """NumPy twin of the engine for label pairs: (gradients, hessians, loss, pairs).

    |dZ| is computed by brute force: the metric of the ranked list with the two
    documents swapped minus the metric before (full-list DCG over IDCG@k for NDCG).
    ``lambda_metric=None`` is RankNet / RankBoost (|dZ| = 1).  ``pairs`` lists (doc_i,
    doc_j, rho) with global rows, query by query.
    """
    scores = np.asarray(scores, dtype=np.float64)
    ref_all = (
        scores if reference_scores is None else np.asarray(reference_scores, float)
    )
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
        ra, rb = _enumerate_pairs_one_query_reference(
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
            base = _err_reference(vals)
            dz = np.array(
                [abs(_err_reference(_swap(vals, a, b)) - base) for a, b in
                 zip(ra, rb, strict=True)]
            )  # fmt: skip
        elif lambda_metric == "map":
            vals = (lab_r >= relevance_threshold).astype(float)
            if vals.sum() == 0:
                continue
            base = _ap_reference(vals)
            dz = np.array(
                [abs(_ap_reference(_swap(vals, a, b)) - base) for a, b in
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
            e = np.exp(np.minimum(s[dj] - s[di], EXP_CLIP))
            gp = hp = lp = dz * e
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

"""LambdaMART: RankNet's pair loss weighted by |delta Z| (seed 001, seed 003, seed 000).

The pairwise engine it runs on is :mod:`ltrboost.objectives.pair_engine` (shared with
RankNet and RankBoost); the |delta Z| of each metric lives beside the metric
(:func:`ltrboost.metrics.ndcg.delta_ndcg`, :func:`ltrboost.metrics.err.delta_err`,
:func:`ltrboost.metrics.ap.delta_ap`).  This module holds the objective and its fused
NDCG kernel, the path a default LambdaMART run takes.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltrboost._callsite import external_stacklevel
from ltrboost._config import INDEX_DTYPE
from ltrboost._numba import inline_kernel, kernel, over_queries, vector_kernel
from ltrboost.dataset import LTRInputError, ParameterInputError, RankingDataset
from ltrboost.metrics import ap as _ap
from ltrboost.metrics import err as _err
from ltrboost.metrics._dcg import (
    discount,
    inverse_max_dcg,
    label_gains,
    ranked_prefix_all_queries,
    rerank_all_queries,
)
from ltrboost.metrics.err import MAX_DELTA_ERR_GRADE, stop_probabilities
from ltrboost.metrics.ndcg import delta_ndcg, refuse_query_gains
from ltrboost.objectives import pair_engine as _engine
from ltrboost.objectives import unbiased as _unbiased
from ltrboost.objectives.base import (
    dataset_cached,
    dataset_labels,
    doc_weights,
    finite_real,
    one_sided_threshold,
    threshold_range_text,
)
from ltrboost.objectives.pair_engine import (
    LAMBDA_METRICS,
    LOSS_LOGISTIC,
    METRIC_ERR,
    METRIC_NDCG,
    TINY_EXP,
    PairEngineConstants,
    PairwiseObjective,
    exp_below_max,
    lambda_norm_factor,
    rank_ordered_query,
    sigmoid_from_exp,
)
from ltrboost.objectives.pair_selection import (
    PAIR_SAMPLED,
    has_two_labels,
    kernel_count,
    n_outer_ranks,
)
from ltrboost.objectives.preferences import no_explicit_pairs
from ltrboost.objectives.registry import register
from ltrboost.pair_csr import PAIR_RHO_DTYPE, PairCSR, bag_mask, offset_dtype
from ltrboost.params import ParameterError, ParameterWarning


@register
class LambdaMART(PairwiseObjective):
    r"""LambdaMART: RankNet's pair loss weighted by |delta Z| (seed 001, "LambdaMART
    Demystified"; seed 003; seed 000 example 4).

    For a query with pairs (i, j), y_i > y_j, from ``pair_method``, and
    ``rho_ij = 1 / (1 + exp(sigma (s_i - s_j)))``::

        lambda_ij = -sigma |dZ_ij| rho_ij                     (seed 001, lambda_ij)
        gradients[i] += lambda_ij,  gradients[j] -= lambda_ij
        hessians[i] += sigma^2 |dZ_ij| rho_ij (1 - rho_ij),  same for j

    so ``gradients`` are dL/ds and seed 001's lambda_i is ``gradients[i]`` (its leaf
    step is ``-eta sum lambda / sum omega``).  These are the exact first and diagonal
    second derivatives of the surrogate ``L = sum_pairs |dZ_ij| log(1 + exp(-sigma (s_i
    - s_j)))`` with |dZ| held fixed (:meth:`loss_fixed_weights`; the finite-difference
    tests prove it).

    Hessian constant: ``sigma^2 rho (1 - rho) |dZ|``, as in the seeds and LightGBM's
    ``lambdarank``; XGBoost uses ``2 rho (1 - rho) |dZ|`` without sigma.  No floor is
    applied to the hessian.

    |dZ| is the absolute change of the metric when documents i and j swap ranks, the
    others staying put (ranks: stable sort of ``-score``, ties in input order):

    * ``"ndcg"``: ``|gain_i - gain_j| |D(r_i) - D(r_j)| / IDCG@truncation_level`` with
      ``D(r) = 1 / log2(r + 2)`` at the current ranks *without* cut-off (LightGBM).
    * ``"err"``: exact change of ERR = sum_r R_r / (r + 1) prod_{k<r} (1 - R_k) with ``R
      = (2^y - 1) / 2^y_max`` (``y_max``: the dataset's largest label; the metric's
      :func:`ltrboost.metrics.err.stop_probabilities`), O(1) per pair from prefix
      products (:func:`ltrboost.metrics.err.delta_err`).  Labels above 31 are refused
      (the O(1) formula loses precision there; the ERR *metric* accepts them).
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
        See :mod:`ltrboost.objectives.pair_selection`.
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
        ``"map"``: documents with ``y >= relevance_threshold`` are relevant.  A
        threshold that counts every training document (of positive weight) relevant,
        or none, while they hold two grades or more leaves no pair to learn from:
        training refuses it (:class:`~ltrboost.params.ParameterError` naming the
        grades).
    random_state : int, default=0
        Seed of ``"sampled"``; query ``q`` of iteration ``t`` uses
        ``random_state + t * n_queries + q``.
    unbiased : bool, default=False
        Unbiased LambdaMART (Hu et al., WWW 2019; :mod:`ltrboost.objectives.unbiased`):
        labels are clicks, the training data carries the position each document was
        shown at (``RankingDataset.position``), and the click and non-click position
        biases ``t+``, ``t-`` are estimated jointly with the trees.  NDCG lambdas with
        ``topk`` / ``all`` pairs only.  After training :meth:`position_bias` holds the
        estimates (saved in the model file); prediction never uses positions.
    position_bias_norm : float, default=0.5
        ``unbiased``: the regularisation exponent ``p`` of the bias estimates
        (``t = ratio ** (1 / (1 + p))``; 0: none; XGBoost's ``lambdarank_bias_norm``).
        Each estimate is kept in ``[1e-6, 1e6]``; one at that bound warns: with 0 the
        estimates of some click logs grow every round (no finite solution).
    max_positions : int, default=32
        ``unbiased``: positions tracked; deeper positions share the last one's bias.
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
        unbiased: bool = False,
        position_bias_norm: float | None = None,
        max_positions: int | None = None,
    ) -> None:
        debias = _check_unbiased(unbiased, position_bias_norm, max_positions)
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
            **debias,  # only when unbiased: plain models keep their objective_params
        )
        self.unbiased = bool(debias)
        self._bias_norm = float(debias.get("position_bias_norm", 0.0))
        self._max_positions = int(debias.get("max_positions", 1))
        self._bias: _unbiased.PositionBias | None = None
        self._pending: tuple[int, Any, Any] | None = None  # (iteration, l+, l-)
        try:
            self._metric_code = LAMBDA_METRICS[lambda_metric]
        except (KeyError, TypeError):
            raise ValueError(
                f"lambda_metric={lambda_metric!r} is not one of {sorted(LAMBDA_METRICS)}"
            ) from None
        if gain not in ("exp", "linear"):
            raise ValueError(f"gain={gain!r} is not one of ('exp', 'linear')")
        if not isinstance(lambda_normalization, bool | np.bool_):
            raise ValueError(
                f"lambda_normalization={lambda_normalization!r} should be True or False"
            )
        finite_real("relevance_threshold", relevance_threshold)
        self._sigma = self._check_sigma(sigma)
        self._set_pair_params(pair_method, truncation_level, pairs_per_sample, random_state)
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
        if self.unbiased and (self._metric_code != METRIC_NDCG or self._method == PAIR_SAMPLED):
            raise ParameterError(
                "unbiased=True supports lambda_metric='ndcg' with pair_method 'topk' or "
                f"'all', not lambda_metric={lambda_metric!r}, pair_method={pair_method!r}"
            )

    def check_training_labels(self, data: RankingDataset) -> None:
        """Under ``"map"``: refuse a ``relevance_threshold`` that counts every training
        document relevant, or none, while they hold two grades or more: no pair
        changes AP, every lambda is 0 and the trees learn nothing (it trained every
        round, then warned that the model was constant)."""
        if self._metric_code != METRIC_MAP:
            return
        t = self._relevance_threshold
        one_sided = one_sided_threshold(np.asarray(data.y), t, data.weights)
        if one_sided is None:
            return
        every, weighted, grades = one_sided
        raise ParameterError(
            f"relevance_threshold={t:g} counts {every} training document{weighted} "
            f"relevant (relevant is y >= relevance_threshold; the labels hold {grades}): "
            "lambda_metric='map' finds no pair of a relevant and an irrelevant document "
            "and learns nothing; "
            + threshold_range_text("relevance_threshold", np.asarray(data.y), data.weights)
        )

    def constant_model_cause(self, data: RankingDataset) -> str | None:
        """Under ``"map"``: no query holds both a relevant and an irrelevant document."""
        if self._metric_code != METRIC_MAP:
            return None
        relevant = (np.asarray(data.y) >= self._relevance_threshold).astype(np.int8)
        starts = np.asarray(data.query_offsets)[:-1]
        starts = starts[starts < relevant.shape[0]]
        if (np.maximum.reduceat(relevant, starts) > np.minimum.reduceat(relevant, starts)).any():
            return None
        return (
            "no query holds both a relevant and an irrelevant document under "
            f"lambda_metric='map' with relevance_threshold={self._relevance_threshold:g}"
        )

    # -- Unbiased LambdaMART: the position biases (ltrboost.objectives.unbiased) --------

    def prepare(self, data: RankingDataset) -> None:
        """Validate labels (and positions, when ``unbiased``); start the biases at 1."""
        super().prepare(data)
        if not self.unbiased:
            return
        if data.position is None:
            raise LTRInputError(
                "unbiased=True learns from clicks shown at known positions: give the "
                "1-based position of every training row (Ranker.fit(..., position=...), "
                "make_dataset(..., position=...), CLI --position FILE)"
            )
        k = self._max_positions
        self._bias = _unbiased.PositionBias(np.ones(k), np.ones(k))
        self._pending = None
        self._bound_warned = False
        self._clipped_bias = None

    def set_position_bias(self, t_plus: Any, t_minus: Any) -> None:
        """Continue from saved estimates (resuming training from a model)."""
        k = self._max_positions
        tp = np.asarray(t_plus, dtype=np.float64)
        tm = np.asarray(t_minus, dtype=np.float64)
        if tp.shape != (k,) or tm.shape != (k,):
            # resuming with another (or the default) max_positions said only this, not
            # what the model holds nor which flag to give
            raise ParameterError(
                f"the position bias to continue from holds {tp.size} (t_plus) and {tm.size} "
                f"(t_minus) values, for max_positions={k}: resume with the model's "
                f"max_positions ({tp.size}; give max_positions={tp.size})"
            )
        # within the bound: a file may hold any positive finite values (one written
        # before the bound, or edited); 1e-25 overflowed the float32 gradients
        bound = _unbiased.bound_position_bias
        self._bias = _unbiased.PositionBias(bound(tp), bound(tm))
        self._pending = None
        self._clipped_bias = None
        for name, given, kept in (
            ("t_plus", tp, self._bias.t_plus),
            ("t_minus", tm, self._bias.t_minus),
        ):
            changed = np.flatnonzero(given != kept)
            if changed.size:
                # named as the file's value: the at-bound warning of the first round
                # (which blames the click log) is not given for these estimates
                self._clipped_bias = self._bias
                i = int(changed[0])
                warnings.warn(
                    ParameterWarning(
                        f"unbiased=True: the position bias {name} of position {i + 1} is "
                        f"{float(given[i]):g} in the model continued from, outside the "
                        f"bound of the estimates ({1.0 / _unbiased.BIAS_BOUND:g} to "
                        f"{_unbiased.BIAS_BOUND:g}): clipped to {float(kept[i]):g}, and "
                        "every estimate outside it likewise (a model written before the "
                        "bound, or edited); the new rounds update them from there"
                    ),
                    stacklevel=external_stacklevel(),
                )
                break

    def position_bias(self) -> _unbiased.PositionBias | None:
        """The current estimates ``(t_plus, t_minus)`` (those the next round would use),
        index ``k - 1`` for position ``k``; None unless ``unbiased`` and prepared."""
        if self._bias is None:
            return None
        if self._pending is not None:
            _, lp, lm = self._pending
            return _unbiased.update_position_bias(self._bias, lp, lm, self._bias_norm)
        return self._bias

    def _bias_for_round(self, iteration: int) -> _unbiased.PositionBias:
        """The estimates round ``iteration`` uses: the losses of an earlier round, still
        pending, are folded in first (a repeated call for one round changes nothing)."""
        if self._bias is None:
            raise RuntimeError("unbiased LambdaMART: prepare(data) was not called")
        if self._pending is not None and self._pending[0] < iteration:
            self._bias = self.position_bias()
            self._pending = None
        if not self._bound_warned:
            self._warn_at_bound(self._bias, iteration)
        return self._bias

    def _warn_at_bound(self, bias: _unbiased.PositionBias, iteration: int) -> None:
        """Warn (once a run) when an estimate the gradients use sits at the bound (not
        for those clipped from a model file, warned of by :meth:`set_position_bias`)."""
        if bias is self._clipped_bias:
            return
        at = _unbiased.first_at_bound(bias)
        if at is None:
            return
        self._bound_warned = True
        name, position, value = at
        if self._bias_norm == 0.0:
            why = (
                "without regularisation (position_bias_norm=0) the estimates of Hu et "
                "al.'s eqs. 30, 31 have no finite solution on some click logs and grow "
                "every round; give position_bias_norm > 0 (the default is 0.5)"
            )
        else:
            why = (
                f"no click log supports an estimate that far from position 1's; check "
                f"the clicks and sample weights at position {position}"
            )
        warnings.warn(
            ParameterWarning(
                f"unbiased=True: the position bias {name} of position {position} is "
                f"{value:g} after round {iteration}, the bound of the estimates "
                f"({1.0 / _unbiased.BIAS_BOUND:g} to {_unbiased.BIAS_BOUND:g}): {why}"
            ),
            stacklevel=external_stacklevel(),
        )

    def _cache_key(self) -> tuple[Any, ...]:
        return (
            "lambdamart",
            self._metric_code,
            self._gain,
            self._truncation_level,
            self._relevance_threshold,
        )

    def _build_constants(self, data: RankingDataset) -> PairEngineConstants:
        if data.y is None:
            raise ValueError(
                "lambdamart needs graded labels y; for preference pairs only, use "
                "objective='ranknet' or 'rankboost'"
            )
        y = dataset_labels(data, self.name, integer=True)
        n_queries = data.n_queries
        offsets = data.query_offsets
        if self._metric_code == METRIC_NDCG:
            values = label_gains(y, self._gain)  # raises for y > 31 with gain="exp"
            k = 0 if self._truncation_level is None else kernel_count(self._truncation_level)
            inv_norm = inverse_max_dcg(values, offsets, k)
            _refuse_infinite_idcg(values, offsets, inv_norm)
        elif self._metric_code == METRIC_ERR:
            y_max = float(y.max()) if y.size else 0.0
            if y_max > MAX_DELTA_ERR_GRADE:
                raise ParameterInputError(
                    f"label {y_max:g} is too large for ERR's lambdas (at most "
                    f"{MAX_DELTA_ERR_GRADE}: |delta ERR| loses its precision above, "
                    "see ltrboost.metrics.err); rescale the labels or use "
                    "lambda_metric='ndcg' with gain='linear'",
                    row=int(np.flatnonzero(y > MAX_DELTA_ERR_GRADE)[0]),
                )
            values = stop_probabilities(y, y_max)  # the metric's R (metrics.err)
            inv_norm = np.ones(n_queries, dtype=np.float64)
        else:
            values = (y >= self._relevance_threshold).astype(np.float64)
            csum = np.concatenate(([0.0], np.cumsum(values)))
            n_rel = csum[offsets[1:]] - csum[offsets[:-1]]
            inv_norm = np.divide(
                1.0, n_rel, out=np.zeros(n_queries, dtype=np.float64), where=n_rel > 0
            )
        return PairEngineConstants(
            np.ascontiguousarray(y, dtype=np.float64),
            np.ascontiguousarray(values, dtype=np.float64),
            np.ascontiguousarray(inv_norm, dtype=np.float64),
            doc_weights(data),
            *no_explicit_pairs(n_queries),
        )

    def _fast_gradient_hessian(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        gradients: NDArray[np.float32],
        hessians: NDArray[np.float32],
        counts: NDArray[np.int64],
    ) -> bool:
        """NDCG lambdas with ``topk`` / ``all`` pairs: the fused kernel (see below)."""
        if self._metric_code != METRIC_NDCG or self._method == PAIR_SAMPLED:
            return False
        c = self._constants(data)
        if self.unbiased:
            self._unbiased_gradients(scores, data, c, gradients, hessians, counts)
            return True
        held, ranked = self._ranking_buffer(data)
        _lambdamart_ndcg_all_queries(
            scores, c.labels, c.values, c.inv_norm, c.weights, data.query_offsets,
            self._method, self._truncation, self._sigma, self._normalize,
            gradients, hessians, counts, held.order, ranked,
        )  # fmt: skip
        # now a ranking of data's queries; under OLE (once ole_pairs has run) with the
        # scores it ranks, so that the round's pairs can read it instead of sorting
        # again (_gradient_ranking)
        held.scores = scores.copy() if self._ole_reuse else None
        self._ranking = held
        return True

    @staticmethod
    def _gradient_ranking(held, scores, data) -> NDArray[np.int32] | None:
        """``held``'s ranking (a gradient's, :class:`_HeldRanking`) of ``data``'s
        queries when it ranks these very scores (compared in full: a caller may have
        changed them in place), else None."""
        if held is None or held.scores is None or held.query_offsets is not data.query_offsets:
            return None
        ranked = held.scores
        if ranked.shape != scores.shape or not np.array_equal(ranked, scores):
            return None
        return held.order

    def _ranking_buffer(self, data: RankingDataset) -> tuple[_HeldRanking, bool]:
        """``(held, ranked)``: the ranking of this objective's last gradient on ``data``
        (``ranked``: each round re-sorts the previous round's ranking instead of sorting
        from scratch; the result is the same, see ``rerank_all_queries``), or a new
        buffer the first time.

        Kept on the objective, one dataset at a time, not in ``data.cache``: two
        trainings on one dataset in two threads must not share it.  Handed out once:
        until the gradient that fills it returns, it is no ranking (its ``scores``
        cleared: a shallow copy of the objective that shares it reads no ranking of
        them either).
        """
        held, self._ranking = self._ranking, None
        if held is not None and held.query_offsets is data.query_offsets:
            held.scores = None
            return held, True
        order = np.empty(data.n_samples, dtype=INDEX_DTYPE)
        return _HeldRanking(data.query_offsets, order), False

    def _unbiased_gradients(self, scores, data, c, gradients, hessians, counts) -> None:
        bias = self._bias_for_round(self._round)
        k = self._max_positions
        if data.position is None:
            raise LTRInputError("unbiased=True: this dataset has no positions")
        pos = dataset_cached(
            data, ("position_index", k), lambda: _unbiased.position_index(data.position, k)
        )
        li = np.empty(data.n_samples, dtype=np.float64)
        lj = np.empty(data.n_samples, dtype=np.float64)
        _unbiased.unbiased_ndcg_all_queries(
            scores, c.labels, c.values, c.inv_norm, c.weights, data.query_offsets, pos,
            bias.t_plus, bias.t_minus, self._method, self._truncation, self._sigma,
            self._normalize, gradients, hessians, li, lj, counts,
        )  # fmt: skip
        lp, lm = _unbiased.losses_by_position(li, lj, pos, k)
        self._pending = (self._round, lp, lm)

    def gradient_hessian(self, scores, data, gradients_out, hessians_out, iteration=0):
        self._round = int(iteration)  # the unbiased path's bias bookkeeping needs it
        super().gradient_hessian(scores, data, gradients_out, hessians_out, iteration)

    gradient_hessian.__doc__ = PairwiseObjective.gradient_hessian.__doc__

    def _loss(self, scores, ref_scores, data, iteration):
        if self.unbiased:
            raise NotImplementedError(
                "unbiased LambdaMART's loss depends on the position biases; see "
                "ltrboost.objectives.unbiased.unbiased_reference"
            )
        return super()._loss(scores, ref_scores, data, iteration)

    def _pair_terms(self, scores, ref_scores, data, iteration):
        if self.unbiased:
            raise ValueError("unbiased=True does not support split_criterion='ole'")
        return super()._pair_terms(scores, ref_scores, data, iteration)

    def _bag_applied_in_count(self) -> bool:
        """Whether :meth:`ole_pairs` counts only the bag's pairs (the NDCG layout)."""
        return not (
            self.unbiased or self._metric_code != METRIC_NDCG or self._method == PAIR_SAMPLED
        )

    def ole_pairs(self, scores, data, iteration=0, in_bag=None):
        if self.unbiased or self._metric_code != METRIC_NDCG or self._method == PAIR_SAMPLED:
            return super().ole_pairs(scores, data, iteration=iteration, in_bag=in_bag)
        return self._ndcg_ole_pairs(scores, data, in_bag, iteration)

    ole_pairs.__doc__ = PairwiseObjective.ole_pairs.__doc__

    def _ndcg_ole_pairs(self, scores, data, in_bag, iteration=0) -> PairCSR:
        """The common case's OLE pairs (NDCG lambdas, ``all``/``topk`` pairs) by two
        small kernels, written straight into the grower's layout (a
        :class:`~ltrboost.pair_csr.PairCSR`, 6 bytes a pair) with the bag applied: the
        same pairs, order and ``rho`` (rounded once to float32) as
        ``pairs_to_csr(pair_terms(...))`` from the general engine (tested), without the
        16-byte-a-pair list in between (issue 16 item 4), and a first OLE run compiles
        these instead of the engine's pair-term kernels (~9 s; issue 12)."""
        s = self._scores(scores, data, "scores")
        if in_bag is None:  # a bag drops pairs while counting
            _engine._refuse_all_pairs_early(data, self, iteration)
        # the round's gradient ranked these scores already (the booster asks for the
        # pairs right after it): the same ranking, not sorted again.  Held while the
        # kernels read it (a gradient meanwhile, in another thread, ranks into a buffer
        # of its own instead of re-sorting this one), then handed back.
        held, self._ranking = self._ranking, None
        self._ole_reuse = True
        try:
            return self._ndcg_ole_pairs_ranked(
                s, data, in_bag, iteration, self._gradient_ranking(held, s, data)
            )
        finally:
            if self._ranking is None:
                self._ranking = held

    def _ndcg_ole_pairs_ranked(self, s, data, in_bag, iteration, order) -> PairCSR:
        """:meth:`_ndcg_ole_pairs` given the ranking of ``s`` (None: rank here)."""
        c = self._constants(data)
        offsets_q = data.query_offsets
        n = s.shape[0]
        if order is None:
            order = np.empty(n, dtype=INDEX_DTYPE)
            scratch = np.empty(n, dtype=INDEX_DTYPE)
            n_ranked = np.empty(offsets_q.shape[0] - 1, dtype=np.int64)
            ranked_prefix_all_queries(s, offsets_q, 0, order, scratch, n_ranked)
            del scratch
        bag = bag_mask(in_bag, n)
        ptr = np.zeros(n + 1, dtype=np.int64)
        over_queries(
            _ndcg_pair_doc_counts_queries, offsets_q, c.labels, c.inv_norm, offsets_q,
            self._method, self._truncation, order, bag, ptr,
        )  # fmt: skip
        np.cumsum(ptr, out=ptr)
        per_query = ptr[offsets_q[1:]] - ptr[offsets_q[:-1]]
        _engine._check_ole_pair_count(per_query, data, self, iteration)
        total = int(ptr[-1])
        longest = int(np.max(np.diff(offsets_q), initial=0))
        offset = np.empty(total, dtype=offset_dtype(longest))
        rho = np.empty(total, dtype=PAIR_RHO_DTYPE)
        cursor = ptr[:-1].copy()
        over_queries(
            _ndcg_pair_csr_queries, offsets_q, s, c.labels, c.values, c.inv_norm,
            c.weights, offsets_q, self._method, self._truncation, self._sigma,
            self._normalize, order, bag, ptr, cursor, offset, rho,
        )  # fmt: skip
        if offset.dtype != np.int16:
            # a query longer than int16 reaches: the type of the pairs' own span, as
            # pairs_to_csr picks it (int16 when they all lie close)
            far = int(np.max(np.abs(offset), initial=0))
            if offset_dtype(far + 1) == np.int16:
                offset = offset.astype(np.int16)
        return PairCSR(ptr, offset, rho)

    _round = 0
    _bound_warned = False  # unbiased: warned of an estimate at the bound this run
    # unbiased: the estimates continued from, when clipped from a model file's values
    _clipped_bias: _unbiased.PositionBias | None = None
    # the ranking of the last fused gradient, see _ranking_buffer
    _ranking: _HeldRanking | None = None
    # OLE: the gradient keeps the scores it ranked (_gradient_ranking) once ole_pairs
    # has been asked for
    _ole_reuse = False


class _HeldRanking:
    """The ranking ``order`` (int32 (n_samples,), local positions) of the queries of
    ``query_offsets`` that a LambdaMART gradient made, and ``scores``, a copy of the
    scores it ranks (None: not kept, or being re-sorted).  One per buffer: whoever
    re-sorts ``order`` in place clears ``scores`` first and sets them after, so that
    every objective holding it (a shallow copy shares it) reads the truth."""

    __slots__ = ("order", "query_offsets", "scores")

    def __init__(self, query_offsets, order):
        self.query_offsets = query_offsets
        self.order = order
        self.scores: NDArray[np.float64] | None = None


def _check_unbiased(unbiased: Any, position_bias_norm: Any, max_positions: Any) -> dict[str, Any]:
    """The unbiased parameters as stored (empty when off); refuses bad values."""
    if not isinstance(unbiased, bool | np.bool_):
        raise ValueError(f"unbiased={unbiased!r} should be True or False")
    if not unbiased:
        for name, v in (
            ("position_bias_norm", position_bias_norm),
            ("max_positions", max_positions),
        ):
            if v is not None:
                raise ValueError(f"{name}={v!r} is used with unbiased=True only")
        return {}
    norm = (
        _unbiased.DEFAULT_POSITION_BIAS_NORM if position_bias_norm is None else position_bias_norm
    )
    if (
        isinstance(norm, bool | np.bool_)
        or not isinstance(norm, numbers.Real)
        or not math.isfinite(float(norm))
        or norm < 0
    ):
        raise ValueError(f"position_bias_norm={norm!r} should be a finite number >= 0")
    k = _unbiased.DEFAULT_MAX_POSITIONS if max_positions is None else max_positions
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= 10_000:
        raise ValueError(f"max_positions={k!r} should be an integer in [1, 10000]")
    return {"unbiased": True, "position_bias_norm": float(norm), "max_positions": int(k)}


def _refuse_infinite_idcg(
    gains: NDArray[np.float64], offsets: NDArray[np.int64], inv_norm: NDArray[np.float64]
) -> None:
    """Refuse a query whose ideal DCG overflows float64 (linear gains near its
    maximum): its ``1 / IDCG`` is 0, so its pairs would silently weigh nothing."""
    starts = offsets[:-1]
    nonempty = np.diff(offsets) > 0
    top = np.zeros(inv_norm.shape[0])
    top[nonempty] = np.maximum.reduceat(gains, starts[nonempty])
    bad = (inv_norm == 0) & (top > 0)
    if bad.any():
        q = int(np.flatnonzero(bad)[0])
        refuse_query_gains(
            gains, int(offsets[q]), int(offsets[q + 1]),
            "the ideal DCG of its query overflows float64 (its pairs would weigh nothing)",
        )  # fmt: skip


# --- kernels ---


@vector_kernel
def _lambdamart_ndcg_fused(
    scores_q, labels_q, values_q, inv_norm_q, weights_q, order, n_outer, sigma,
    normalize, disc, work, grad_q, hess_q,
):  # fmt: skip
    """LambdaMART's common case, fused into one loop; returns the pair count (-1:
    left for :func:`_lambdamart_ndcg_scalar`, see below).

    NDCG lambdas, logistic loss, ``all``/``topk`` pairs, gradients and hessians.  Walks
    LightGBM's double loop directly over rank-ordered copies of the scores, labels and
    gains (sequential reads, no pair buffer, no per-pair ``order`` lookups).  The pairs,
    the arithmetic of each pair and the order of every floating-point sum are those of
    the general engine (:mod:`.pair_engine`), so the result is bit-identical (tested);
    only the memory traffic differs.

    The pairs get no data-dependent branch; for each rank ``a`` two passes over the
    ranks ``b > a``:

    1. every pair's gradient and hessian, ties included, into scratch arrays: ``t``,
       the argument order of ``sigmoid_from_exp``'s ratio form and the tie mask are
       selects, so LLVM runs the pass in SIMD (4 pairs per instruction, its two
       divisions included), and neither a tie nor which document is preferred costs a
       mispredicted branch (~39% of the candidate pairs of graded web data are tied,
       in random rank order).  A tied pair's gradient and hessian are +0.0.
    2. in increasing ``b``, the sums that the pair-by-pair loop
       (:func:`_lambdamart_ndcg_scalar`) keeps for rank ``a`` (``sum_lambdas``,
       ``g_a``, ``h_a``) and the terms of ``g_acc[b]``, ``h_acc[b]`` (a tied pair adds
       ``t * 0.0 = +-0.0`` and +0.0 there).  Each ``g_acc[b]``, ``h_acc[b]`` still
       takes its terms in increasing ``a``.  These sums are serial (a chain of
       dependent additions, ~1/3 of the time); pass 1 does not touch ``g_acc``,
       ``h_acc``, which keeps its vectorizer's run-time overlap checks few.

    Adding the zeros of tied pairs, where the scalar loop skips them, changes no bit: a
    running sum starts at +0.0 and, rounding to nearest, a sum is -0.0 only when both
    terms are, so no sum is ever -0.0; and ``x + (+-0.0) = x - (+-0.0) = x`` for every
    ``x`` that is not -0.0.  Every other operation is the pair-by-pair loop's, on the
    same operands in the same order (``e_a + e_b == e_b + e_a`` exactly).

    A query whose scores span so much that :func:`.pair_engine.sigmoid_from_exp` needs
    its direct form for some pair (an exponential below ``TINY_EXP``) is left alone:
    -1 is returned, ``grad_q``, ``hess_q`` are not written, and the caller runs
    :func:`_lambdamart_ndcg_scalar` on it.

    Compiled with :data:`ltrboost._numba.vector_kernel` (no zero-divisor checks, which
    would stop the vectorizer): its divisors, ``0.01 + |diff|``, ``e_i + e_j`` of
    non-tiny exponentials and ``sum_lambdas > 0``, are never zero.

    disc: IN float64 (>= n,), ``discount(r)`` by rank; work: float64 (>= 9 n,),
    clobbered: both from :func:`_ndcg_fused_workspace`, made once per block of queries
    (a query's own arrays and a ``log2`` per document cost ~10% of the kernel).
    """
    n = order.shape[0]
    s = work[0:n]
    v = work[n : 2 * n]
    lab = work[2 * n : 3 * n]
    ex = work[3 * n : 4 * n]
    g_acc = work[4 * n : 5 * n]  # by rank
    h_acc = work[5 * n : 6 * n]
    for r in range(n):
        d = order[r]
        s[r] = scores_q[d]
        v[r] = values_q[d]
        lab[r] = labels_q[d]
        g_acc[r] = 0.0
        h_acc[r] = 0.0
    exp_below_max(s, s[0], sigma, ex)  # s[0] is the query's highest score
    scale_by_diff = normalize and s[0] != s[n - 1]
    tiny = False
    for r in range(n):
        tiny |= ex[r] < TINY_EXP
    if tiny:
        return -1  # left for _lambdamart_ndcg_scalar
    sum_lambdas = 0.0
    n_pairs = 0
    two_grad = work[6 * n : 7 * n]  # pass 1 -> pass 2, by b - a - 1
    t_grad = work[7 * n : 8 * n]
    hess_b = work[8 * n : 9 * n]
    sigma2 = sigma * sigma
    for a in range(n_outer):
        la = lab[a]
        va = v[a]
        da = disc[a]
        sa = s[a]
        ea = ex[a]
        # ranks a+1..n-1 as views indexed from 0: an index LLVM knows is >= 0 carries
        # no negative-index wraparound, which would stop the vectorizer
        lab_b = lab[a + 1 :]
        v_b = v[a + 1 :]
        disc_b = disc[a + 1 : n]
        s_b = s[a + 1 :]
        ex_b = ex[a + 1 :]
        m = n - a - 1
        n_ties = 0
        for k in range(m):  # pass 1
            lb = lab_b[k]
            up = la > lb  # t = +1: (i, j) = (a, b)
            tie = la == lb
            t = 1.0 if up else -1.0
            grad, hess = _fused_pair_terms(
                up, va, v_b[k], da, disc_b[k], sa, s_b[k], ea, ex_b[k], inv_norm_q, sigma,
                sigma2, scale_by_diff,
            )  # fmt: skip
            grad = 0.0 if tie else grad
            hess = 0.0 if tie else hess
            n_ties += tie
            tg = t * grad
            two_grad[k] = 2.0 * grad
            t_grad[k] = tg
            hess_b[k] = hess
        g_a = g_acc[a]
        h_a = h_acc[a]
        for k in range(m):  # pass 2
            tg = t_grad[k]
            hess = hess_b[k]
            sum_lambdas += two_grad[k]
            g_a -= tg
            g_acc[a + 1 + k] += tg
            h_a += hess
            h_acc[a + 1 + k] += hess
        g_acc[a] = g_a
        h_acc[a] = h_a
        n_pairs += m - n_ties
    _scatter_by_rank(order, g_acc, h_acc, normalize, sum_lambdas, weights_q, grad_q, hess_q)
    return n_pairs


@inline_kernel
def _fused_pair_terms(up, va, vb, da, db, sa, sb, ea, eb, inv_norm_q, sigma, sigma2, scale):
    """The pair of ranks a < b's gradient term ``sigma |dZ| rho`` and hessian term
    ``sigma^2 |dZ| rho (1 - rho)`` (``up``: a's document preferred), from the rank-ordered
    gains, discounts, scores and exponentials (:func:`_ndcg_pair`'s arithmetic on the
    same operands; ``sigma2 = sigma * sigma``), with no data-dependent branch: the
    passes of :func:`_lambdamart_ndcg_fused` and :func:`_ndcg_pair_csr_queries` run it
    in SIMD.  ``scale``: ``dZ / (0.01 + |s_i - s_j|)`` (``lambdarank_norm``'s form)."""
    t = 1.0 if up else -1.0
    dz = delta_ndcg(va, vb, da, db, inv_norm_q)
    diff = t * (sa - sb)  # s_i - s_j
    if scale:
        dz /= 0.01 + abs(diff)
    inv = 1.0 / (ea + eb)  # sigmoid_from_exp(e_i, e_j, .) = (e_j, e_i) * inv
    p_a = ea * inv
    p_b = eb * inv
    rho = p_b if up else p_a
    one_minus_rho = p_a if up else p_b
    return sigma * dz * rho, sigma2 * dz * rho * one_minus_rho


@inline_kernel
def _scatter_by_rank(order, g_acc, h_acc, normalize, sum_lambdas, weights_q, grad_q, hess_q):
    """A query's sums by rank (``g_acc``, ``h_acc``) to its documents' gradients and
    hessians: times the ``lambdarank_norm`` factor and the document weights."""
    factor = lambda_norm_factor(normalize, sum_lambdas)
    has_w = weights_q.shape[0] > 0
    for r in range(order.shape[0]):
        d = order[r]
        w = weights_q[d] if has_w else 1.0
        grad_q[d] = g_acc[r] * factor * w
        hess_q[d] = h_acc[r] * factor * w


@kernel
def _lambdamart_ndcg_scalar(
    scores_q, labels_q, values_q, inv_norm_q, weights_q, order, n_outer, sigma,
    normalize, grad_q, hess_q,
):  # fmt: skip
    """:func:`_lambdamart_ndcg_fused` one pair at a time, in LightGBM's order (the
    fused kernel's loop before it was vectorized); returns the pair count.

    For the queries whose scores span so much that
    :func:`.pair_engine.sigmoid_from_exp` needs its direct form for some pair (the
    fused kernel leaves them, see :func:`_lambdamart_ndcg_all_queries`).  Kept apart
    so that it is compiled only when such a query comes: it costs ~0.7 s of
    compilation.
    """
    n = order.shape[0]
    s, v, lab, disc, ex = rank_ordered_query(order, scores_q, values_q, labels_q, sigma)
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
            dz = delta_ndcg(va, v[b], da, disc[b], inv_norm_q)
            diff = t * (sa - s[b])  # s_i - s_j
            if scale_by_diff:
                dz /= 0.01 + abs(diff)
            eb = ex[b]
            if t > 0.0:
                rho, one_minus_rho = sigmoid_from_exp(ea, eb, sigma * diff)
            else:
                rho, one_minus_rho = sigmoid_from_exp(eb, ea, sigma * diff)
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
    _scatter_by_rank(order, g_acc, h_acc, normalize, sum_lambdas, weights_q, grad_q, hess_q)
    return n_pairs


@kernel
def _lambdamart_ndcg_scalar_queries(
    i0, i1, queries, scores, labels, values, inv_norm, weights, query_offsets, method,
    truncation, sigma, normalize, order, gradients, hessians, counts_out,
):  # fmt: skip
    # queries[i0:i1] of _lambdamart_ndcg_all_queries (int64 query numbers), pair by pair
    has_w = weights.shape[0] > 0
    for i in range(i0, i1):
        q = queries[i]
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        counts_out[q] = _lambdamart_ndcg_scalar(
            scores[lo:hi], labels[lo:hi], values[lo:hi], inv_norm[q],
            weights[lo:hi] if has_w else weights[0:0], order[lo:hi],
            n_outer_ranks(hi - lo, method, truncation), sigma, normalize,
            gradients[lo:hi], hessians[lo:hi],
        )  # fmt: skip


def _lambdamart_ndcg_all_queries(
    scores, labels, values, inv_norm, weights, query_offsets, method, truncation, sigma,
    normalize, gradients, hessians, counts_out, order=None, ranked=False,
):  # fmt: skip
    """Parallel driver of the common case only (:func:`_lambdamart_ndcg_fused`).

    The outputs of :func:`.pair_engine._gradients_all_queries` for NDCG lambdas,
    logistic loss, ``all``/``topk`` pairs.  A separate driver so that a plain
    LambdaMART run never compiles the general engine (most of the package's first-run
    compilation time).  Every query is first ranked by
    :func:`ltrboost.metrics._dcg.ranked_prefix_all_queries` (the metrics' ranking
    kernel, the same rule as ``query_rank_order``), so that no sort is compiled into
    this kernel.  The few queries :func:`_lambdamart_ndcg_fused` leaves (count -1)
    are then done by :func:`_lambdamart_ndcg_scalar`, compiled only when one comes.

    ``order`` (OUT int32 (n_samples,), optional): where the ranking goes.  With
    ``ranked`` it holds (IN) an earlier call's ranking of the same queries, which is
    re-sorted in place (``rerank_all_queries``: the same ranking, in less time when the
    scores moved little).
    """
    n = scores.shape[0]
    scratch = np.empty(n, dtype=INDEX_DTYPE)
    n_ranked = np.empty(query_offsets.shape[0] - 1, dtype=np.int64)
    if order is None:
        order = np.empty(n, dtype=INDEX_DTYPE)
    if ranked:
        rerank_all_queries(scores, query_offsets, order, scratch, n_ranked)
    else:
        ranked_prefix_all_queries(scores, query_offsets, 0, order, scratch, n_ranked)
    over_queries(
        _lambdamart_ndcg_queries, query_offsets, scores, labels, values, inv_norm, weights,
        query_offsets, method, truncation, sigma, normalize, order, gradients, hessians,
        counts_out,
    )  # fmt: skip
    left = np.flatnonzero(counts_out < 0)  # scores spread too far for the SIMD loop
    if left.size:
        sizes = query_offsets[left + 1] - query_offsets[left]
        over_queries(
            _lambdamart_ndcg_scalar_queries, np.concatenate(([0], np.cumsum(sizes))),
            left.astype(np.int64), scores, labels, values, inv_norm, weights,
            query_offsets, method, truncation, sigma, normalize, order, gradients,
            hessians, counts_out,
        )  # fmt: skip


@kernel
def _lambdamart_ndcg_queries(
    q0, q1, scores, labels, values, inv_norm, weights, query_offsets, method, truncation, sigma,
    normalize, order, gradients, hessians, counts_out,
):  # fmt: skip
    # queries q0..q1-1 of _lambdamart_ndcg_all_queries (see ltrboost._numba.over_queries);
    # order: IN int32 (n_samples,), each query's ranking (local positions)
    has_w = weights.shape[0] > 0
    max_n = 0
    for q in range(q0, q1):
        max_n = max(max_n, query_offsets[q + 1] - query_offsets[q])
    disc, work = _ndcg_fused_workspace(max_n)
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        for d in range(lo, hi):
            gradients[d] = 0.0
            hessians[d] = 0.0
        counts_out[q] = 0
        labels_q = labels[lo:hi]
        if n < 2 or inv_norm[q] <= 0.0 or not has_two_labels(labels_q):
            continue
        scores_q = scores[lo:hi]
        counts_out[q] = _lambdamart_ndcg_fused(
            scores_q, labels_q, values[lo:hi], inv_norm[q],
            weights[lo:hi] if has_w else weights[0:0], order[lo:hi],
            n_outer_ranks(n, method, truncation), sigma, normalize, disc, work,
            gradients[lo:hi], hessians[lo:hi],
        )  # fmt: skip


@inline_kernel
def _ndcg_pair(a, b, a_preferred, s, v, disc, ex, order_q, inv_norm_q, sigma, scale_by_diff):
    # The pair of ranks a < b (labels differ; a's document preferred when a_preferred)
    # of a query ranked by rank_ordered_query: (i, j) the preferred and the other
    # document (query-local rows), the pair's lambda term 2 sigma |dZ| rho and its
    # hessian sigma^2 |dZ| rho (1 - rho) (|dZ| / (0.01 + |s_i - s_j|) when
    # scale_by_diff), as _lambdamart_ndcg_scalar computes them.
    t = 1.0 if a_preferred else -1.0
    dz = delta_ndcg(v[a], v[b], disc[a], disc[b], inv_norm_q)
    diff = t * (s[a] - s[b])  # s_i - s_j
    if scale_by_diff:
        dz /= 0.01 + abs(diff)
    if a_preferred:
        rho, one_minus_rho = sigmoid_from_exp(ex[a], ex[b], sigma * diff)
        i = order_q[a]
        j = order_q[b]
    else:
        rho, one_minus_rho = sigmoid_from_exp(ex[b], ex[a], sigma * diff)
        i = order_q[b]
        j = order_q[a]
    return i, j, 2.0 * (sigma * dz * rho), sigma * sigma * dz * rho * one_minus_rho


@vector_kernel
def _ndcg_pair_doc_counts_queries(
    q0, q1, labels, inv_norm, query_offsets, method, truncation, order, in_bag, counts_out
):  # fmt: skip
    # queries q0..q1-1: counts_out[d + 1] += the pairs of _ndcg_pair_csr_queries whose
    # preferred document is row d (the candidate pairs of the ranking ``order`` whose
    # labels differ, with both documents in the bag; in_bag empty: no bag).  Counted by
    # rank, the labels and bag flags copied into rank order once per query: the inner
    # loop has no data-dependent branch and no gather (SIMD), and a pair (a, b) adds to
    # rank a's count when a is preferred, else to rank b's (contiguous in b).  Integer
    # sums: the same counts in any order.  (vector_kernel: no division.)
    has_bag = in_bag.shape[0] > 0
    max_n = 0
    for q in range(q0, q1):
        max_n = max(max_n, query_offsets[q + 1] - query_offsets[q])
    lab = np.empty(max_n)
    ok = np.empty(max_n, dtype=np.int64)
    cnt = np.empty(max_n, dtype=np.int64)
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        labels_q = labels[lo:hi]
        if n < 2 or inv_norm[q] <= 0.0 or not has_two_labels(labels_q):
            continue
        order_q = order[lo:hi]
        for r in range(n):
            d = order_q[r]
            lab[r] = labels_q[d]
            ok[r] = 1 if (not has_bag or in_bag[lo + d]) else 0
            cnt[r] = 0
        for a in range(n_outer_ranks(n, method, truncation)):
            if ok[a] == 0:
                continue
            la = lab[a]
            # ranks a+1..n-1 as views indexed from 0 (no negative-index wrap-around)
            lab_b = lab[a + 1 : n]
            ok_b = ok[a + 1 : n]
            cnt_b = cnt[a + 1 : n]
            c = 0
            for k in range(n - a - 1):
                lb = lab_b[k]
                o = ok_b[k]
                c += o if la > lb else 0
                cnt_b[k] += o if la < lb else 0
            cnt[a] += c
        for r in range(n):
            counts_out[lo + order_q[r] + 1] += cnt[r]


@vector_kernel
def _ndcg_pair_csr_queries(
    q0, q1, scores, labels, values, inv_norm, weights, query_offsets, method, truncation,
    sigma, normalize, order, in_bag, ptr, cursor, offset, rho_out,
):  # fmt: skip
    # queries q0..q1-1 of LambdaMART._ndcg_ole_pairs: the OLE pairs of the NDCG
    # lambdas in the engine's order (rank a < n_outer, b > a, labels differ; doc_i the
    # preferred one) with the engine's pair_terms arithmetic, rho = hess * (w_i + w_j)
    # / 2 * the query's lambdarank_norm factor (computed over all of the query's
    # pairs, as pair_terms does before the bag is applied), rounded once to float32.
    # Each kept pair (both documents in the bag) goes to its preferred document's
    # slice, after the ones before it (ptr: the CSR's row pointers; cursor: ptr[:-1],
    # clobbered).
    #
    # As _lambdamart_ndcg_fused: for each rank a, pass 1 computes every pair's lambda
    # and hessian over the ranks b > a without a data-dependent branch (SIMD; a tied
    # pair's lambda is zero); pass 2, in increasing b, sums the lambdas and places the
    # pairs, also without a branch.  Each pair's arithmetic is _ndcg_pair's on the same
    # operands (sigma2 = sigma * sigma is _ndcg_pair's first product; w_a + w_b ==
    # w_b + w_a), so rho and the lambda sum are bit-identical to the pair-by-pair loop
    # (tested against the engine).  The places come from per-rank cursors: rank r's
    # slice takes first its pairs as the lower rank b of earlier rows a (in increasing
    # a), then its own row's (its first in the slice plus a count) -- the pair-by-pair
    # order.  The query's pairs are assembled in scratch (a pair that is not kept goes
    # to a spare slot) and copied to its part of the CSR, which is contiguous.  A query
    # with a tiny exponential (the direct sigmoid form) is left to the pair-by-pair
    # loop (_ndcg_pair_csr_query).  (vector_kernel: the divisors 0.01 + |diff| and
    # e_a + e_b of non-tiny exponentials are never zero.)
    has_w = weights.shape[0] > 0
    has_bag = in_bag.shape[0] > 0
    max_n = 0
    max_kept = 0
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        max_n = max(max_n, hi - lo)
        max_kept = max(max_kept, ptr[hi] - ptr[lo])
    disc, work = _ndcg_fused_workspace(max_n)
    # a query's kept pairs and one spare slot (pass 2 writes every pair somewhere)
    h_loc = np.empty(max_kept + 1, dtype=np.float64)
    off_loc = np.empty(max_kept + 1, dtype=offset.dtype)
    at = np.empty(max_kept + 1, dtype=np.int64)  # the pair-by-pair fallback's
    cur = np.empty(max_n, dtype=np.int64)  # by rank: next place in the query's part
    ok = np.empty(max_n, dtype=np.bool_)  # by rank: in the bag
    sigma2 = sigma * sigma
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        base = ptr[lo]
        n_kept = ptr[hi] - base
        if n_kept == 0:
            continue
        n = hi - lo
        order_q = order[lo:hi]
        weights_q = weights[lo:hi] if has_w else weights[0:0]
        inv_norm_q = inv_norm[q]
        s = work[0:n]
        v = work[n : 2 * n]
        lab = work[2 * n : 3 * n]
        ex = work[3 * n : 4 * n]
        lam_b = work[4 * n : 5 * n]  # pass 1 -> pass 2, by b - a - 1
        hess_b = work[5 * n : 6 * n]
        w_r = work[6 * n : 7 * n]
        for r in range(n):
            d = order_q[r]
            s[r] = scores[lo + d]
            v[r] = values[lo + d]
            lab[r] = labels[lo + d]
            w_r[r] = np.float64(weights_q[d]) if has_w else 1.0
            ok[r] = in_bag[lo + d] if has_bag else True
            cur[r] = ptr[lo + d] - base
        exp_below_max(s, s[0], sigma, ex)  # s[0] is the query's highest score
        tiny = False
        for r in range(n):
            tiny |= ex[r] < TINY_EXP
        if tiny:
            _ndcg_pair_csr_query(
                lo, hi, order_q, scores, labels, values, inv_norm_q, weights_q, method,
                truncation, sigma, normalize, in_bag, cursor, offset, rho_out, h_loc, at,
            )  # fmt: skip
            continue
        scale_by_diff = normalize and s[0] != s[n - 1]
        sum_lambdas = 0.0
        for a in range(n_outer_ranks(n, method, truncation)):
            la = lab[a]
            va = v[a]
            da = disc[a]
            sa = s[a]
            ea = ex[a]
            wa = w_r[a]
            ia = order_q[a]
            oka = ok[a]
            # ranks a+1..n-1 as views indexed from 0 (no negative-index wrap-around)
            lab_r = lab[a + 1 : n]
            v_r = v[a + 1 : n]
            disc_r = disc[a + 1 : n]
            s_r = s[a + 1 : n]
            ex_r = ex[a + 1 : n]
            w_rb = w_r[a + 1 : n]
            ok_r = ok[a + 1 : n]
            cur_r = cur[a + 1 : n]
            order_r = order_q[a + 1 : n]
            m = n - a - 1
            for k in range(m):  # pass 1
                up = la > lab_r[k]
                tie = la == lab_r[k]
                grad, hess = _fused_pair_terms(
                    up, va, v_r[k], da, disc_r[k], sa, s_r[k], ea, ex_r[k], inv_norm_q,
                    sigma, sigma2, scale_by_diff,
                )  # fmt: skip
                lam_b[k] = 0.0 if tie else 2.0 * grad
                if has_w:
                    hess *= 0.5 * (wa + w_rb[k])
                hess_b[k] = hess
            c_a = cur[a]  # rank a's own pairs follow its pairs of earlier rows
            for k in range(m):  # pass 2
                lb = lab_r[k]
                sum_lambdas += lam_b[k]  # a tied pair's +0.0 changes no bit
                up = la > lb
                keep = (la != lb) & oka & ok_r[k]
                c_b = cur_r[k]
                place = c_a if up else c_b
                place = place if keep else n_kept  # the spare slot
                ib = order_r[k]
                off_loc[place] = (ib - ia) if up else (ia - ib)
                h_loc[place] = hess_b[k]
                c_a += keep & up
                cur_r[k] = c_b + (keep & (not up))
        factor = lambda_norm_factor(normalize, sum_lambdas)
        for u in range(n_kept):
            h = h_loc[u]
            if factor != 1.0:
                h *= factor
            offset[base + u] = off_loc[u]
            rho_out[base + u] = h


@inline_kernel
def _ndcg_pair_csr_query(
    lo, hi, order_q, scores, labels, values, inv_norm_q, weights_q, method, truncation,
    sigma, normalize, in_bag, cursor, offset, rho_out, hess_kept, at,
):  # fmt: skip
    # One query of _ndcg_pair_csr_queries pair by pair as _lambdamart_ndcg_scalar
    # (_ndcg_pair, whose sigmoid_from_exp takes the direct form for tiny
    # exponentials): for the queries whose scores span so much that the fused passes
    # cannot run.  hess_kept, at: scratch of at least the query's kept pairs.
    has_w = weights_q.shape[0] > 0
    has_bag = in_bag.shape[0] > 0
    n = hi - lo
    s, v, lab, disc, ex = rank_ordered_query(
        order_q, scores[lo:hi], values[lo:hi], labels[lo:hi], sigma
    )
    scale_by_diff = normalize and s[0] != s[n - 1]
    k = 0
    sum_lambdas = 0.0
    for a in range(n_outer_ranks(n, method, truncation)):
        la = lab[a]
        for b in range(a + 1, n):
            lb = lab[b]
            if la == lb:
                continue
            i, j, lam, hess = _ndcg_pair(
                a, b, la > lb, s, v, disc, ex, order_q, inv_norm_q, sigma, scale_by_diff
            )
            sum_lambdas += lam
            if has_bag and not (in_bag[lo + i] and in_bag[lo + j]):
                continue
            if has_w:
                hess *= 0.5 * (np.float64(weights_q[i]) + np.float64(weights_q[j]))
            c = cursor[lo + i]
            cursor[lo + i] = c + 1
            offset[c] = j - i
            hess_kept[k] = hess
            at[k] = c
            k += 1
    factor = lambda_norm_factor(normalize, sum_lambdas)
    for t in range(k):
        h = hess_kept[t]
        if factor != 1.0:
            h *= factor
        rho_out[at[t]] = h


@inline_kernel
def _ndcg_fused_workspace(max_n):
    """``(disc, work)`` of :func:`_lambdamart_ndcg_fused` for queries of up to
    ``max_n`` documents: the discounts by rank and its clobbered arrays."""
    disc = np.empty(max_n)
    for r in range(max_n):
        disc[r] = discount(r)
    return disc, np.empty(9 * max_n)


# --- old import paths (this module used to hold the engine and the |dZ| kernels) ---

_delta_ndcg = delta_ndcg
_delta_err = _err.delta_err
_err_prefix = _err.err_prefix
_err_reference = _err._err_ranked_reference
_delta_ap = _ap.delta_ap
_ap_prefix = _ap.ap_prefix
_ap_reference = _ap._ap_ranked_reference
EXP_CLIP = _engine.EXP_CLIP
LOSS_EXP = _engine.LOSS_EXP
METRIC_NONE = _engine.METRIC_NONE
METRIC_MAP = _engine.METRIC_MAP
_Constants = PairEngineConstants
_PairwiseObjective = PairwiseObjective
_lambdamart_reference = _engine.pair_engine_reference
_sigmoid_pair = _engine.sigmoid_pair
_sigmoid_from_exp = sigmoid_from_exp
_exp_below_max = exp_below_max
_no_explicit_pairs = no_explicit_pairs
_doc_weights = doc_weights

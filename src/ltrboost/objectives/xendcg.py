"""XE-NDCG (Bruch, "An Alternative Cross Entropy Loss for Learning-to-Rank", WWW 2020,
arXiv:1911.09798; LightGBM's ``rank_xendcg``).

A listwise loss: per query, the scores' softmax ``rho_i = exp(s_i) / sum_j exp(s_j)`` is
compared by cross entropy with a ground-truth distribution built from the grades and a
fresh uniform draw ``gamma_i ~ U(0, 1)`` per document, query and round (the paper's
section 4)::

    phi_i = 2^{y_i} - gamma_i                      (the paper's phi(y) = 2^y - gamma)
    p_i   = phi_i / sum_j phi_j
    l_q   = -sum_i p_i log rho_i                   (XE-NDCG, the cross entropy)

    dl/ds_i       = rho_i - p_i                    (exact)
    d2l/ds_i ds_j = rho_i [i = j] - rho_i rho_j    (H = D - O below)

``phi_i >= 1 - gamma_i > 0``, so ``sum phi`` never vanishes: a query whose documents all
have grade 0 (or one grade) still gets gradients, towards the random target ``p``
(LightGBM's rule: only a query of one document gets zero gradients and hessians).

What each document receives (LightGBM's ``RankXENDCG``, transcribed, not copied)::

    g_i = t0_i + t1_i + t2_i            h_i = rho_i (1 - rho_i)

    t0_i = rho_i - p_i                                    (the exact gradient)
    t1_i = rho_i sum_{j != i} t0_j / (1 - rho_j)
    t2_i = rho_i sum_{j != i} t1_j / (1 - rho_j)

Only ``t0`` is the gradient of ``l_q``.  ``t1`` and ``t2`` are not gradients: with
``D = diag(rho_i (1 - rho_i))`` (the hessian's diagonal, ``h``) and ``O_ij = rho_i
rho_j`` for ``i != j`` (its off-diagonal part, ``H = D - O``), ``t1 = O D^-1 t0`` and ``t2 =
O D^-1 t1``, the second and third terms of the Neumann series ``H^-1 = D^-1 sum_k (O
D^-1)^k``.  So ``-g_i / h_i``, the Newton step of one document alone, is the first three
terms of the full Newton step ``-(H^-1 t0)_i`` of the coupled softmax.  The hessian ``h``
is the exact diagonal.

Numerics: ``1 - rho_i`` is computed as the sum of the other documents' softmax mass (no
cancellation for a document that holds nearly all of it), and the dominant document's
share of ``t1`` / ``t2`` enters its partners as ``t_m e_j / sum_{k != m} e_k``, so a query
whose top score leads by hundreds gets finite gradients (LightGBM's ``1 - rho`` is 0
there and its gradients NaN).  Otherwise equal to LightGBM's to float32 rounding.

Document weights (LightGBM's convention): each document's ``g`` and ``h`` are multiplied
by its weight after the per-query terms; a document of weight 0 still takes part in the
softmax of its query.  :meth:`XENDCG.loss` weighs each query's cross entropy by the mean
weight of its documents (exactly the loss whose gradient ``t0`` is when a query's
documents share one weight, the usual query weight).

Randomness is counter-based (:mod:`.pair_selection`, as ``yetirank``): ``gamma`` of the
``d``-th document of query ``q`` in round ``t`` is draw ``d`` of the stream
``random_state + t * n_queries + q``, so models do not depend on the thread count, and a
Dask shard draws what one machine draws.

The loss couples every document of a query through the softmax; it is not a sum of pair
losses with the hessian LightGBM's terms assume, so ``split_criterion="ole"`` is refused
(``"newton"`` and ``"se"`` work).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import MAX_EXP_GAIN_LABEL
from ltrboost._numba import kernel, over_queries
from ltrboost.dataset import LTRInputError, RankingDataset
from ltrboost.objectives.base import (
    Objective,
    dataset_cached,
    dataset_labels,
    doc_weights,
    single_output_scores,
    single_output_views,
)
from ltrboost.objectives.pair_selection import (
    query_seed_base,
    random_uniform,
    random_uniform_reference,
)
from ltrboost.objectives.registry import register
from ltrboost.params import check_random_state_range

# LightGBM's terms: the exact gradient and two terms of the Neumann series (module doc)
LIGHTGBM_TERMS = 3


@register
class XENDCG(Objective):
    """XE-NDCG: softmax cross entropy against ``p ~ 2^y - gamma`` (LightGBM
    ``rank_xendcg``); see the module docstring for the equations.

    Parameters
    ----------
    random_state : int, default=0
        Seed of the ``gamma`` draws (query q, round t: stream ``random_state + t *
        n_queries + q``); training passes its ``random_state``.
    """

    name: ClassVar[str] = "xendcg"
    needs_integer_labels: ClassVar[bool] = True
    ole_refused: ClassVar[str | None] = (
        "a listwise softmax loss that couples every document of a query, not a "
        "pairwise one; OLE needs pair terms"
    )
    learns_noise_without_grades: ClassVar[str | None] = (
        "its target 2^y - gamma is then the random gamma alone, so the trees fit noise "
        "and the model ranks at random (a pairwise loss learns nothing there)"
    )
    # ``(n_queries, first)`` when the data are one shard of a larger training set
    # (ltrboost.dask): its ``n_queries`` queries in all, this shard's first query number
    _seed_shard: tuple[int, int] | None = None

    def __init__(self, random_state: int = 0) -> None:
        if (
            isinstance(random_state, bool | np.bool_)
            or not isinstance(random_state, int | np.integer)
            or random_state < 0
        ):
            raise ValueError(f"random_state={random_state!r} should be a non-negative integer")
        check_random_state_range(random_state)
        super().__init__(random_state=int(random_state))
        self._random_state = int(random_state)

    def _query_seed_base(self, iteration: int, n_queries: int) -> int:
        """The seed of the data's first query in round ``iteration`` (query ``q`` adds
        ``q``); for a Dask shard that of the whole set plus the shard's first query."""
        if self._seed_shard is None:
            return query_seed_base(self._random_state, iteration, n_queries)
        n_total, first = self._seed_shard
        return query_seed_base(self._random_state, iteration, n_total) + first

    def _pow2(self, data: RankingDataset) -> NDArray[np.float64]:
        """``2^y`` per document: integer grades up to 31 (the exponential gain's bound;
        a larger one is an error naming its row)."""

        def build() -> NDArray[np.float64]:
            y = dataset_labels(data, self.name, integer=True)
            if y.size and float(y.max()) > MAX_EXP_GAIN_LABEL:
                row = int(np.flatnonzero(y > MAX_EXP_GAIN_LABEL)[0])
                raise LTRInputError(
                    f"label {y[row]:g} is too large for objective 'xendcg', whose target "
                    f"weighs a document by 2^y (grades 0 to {MAX_EXP_GAIN_LABEL}); "
                    "rescale the labels",
                    row=row,
                )
            return np.ascontiguousarray(np.exp2(y))

        return dataset_cached(data, ("xendcg_pow2",), build)

    def prepare(self, data: RankingDataset) -> None:
        """Check the labels: integer grades 0..31."""
        self._pow2(data)

    def constant_model_cause(self, data: RankingDataset) -> str | None:
        """Every query holds one document: a query of one document gets no gradient
        (its softmax is 1 whatever the score), so there is neither a grade to learn
        nor the random target's noise.  Read off ``n_samples`` and the number of
        queries only, which Dask's stand-in training set keeps too."""
        n_queries = len(data.query_offsets) - 1
        if n_queries == 0 or data.n_samples != n_queries:
            return None
        return (
            f"every query holds one document, and objective {self.name!r} gives a query "
            "of one document no gradient (the softmax of one score is 1 whatever the score)"
        )

    def gammas(self, data: RankingDataset, iteration: int = 0) -> NDArray[np.float64]:
        """Round ``iteration``'s ``gamma`` per document (what :meth:`gradient_hessian`
        draws)."""
        qo = np.asarray(data.query_offsets, dtype=np.int64)
        out = np.empty(data.n_samples, dtype=np.float64)
        seed = self._query_seed_base(iteration, data.n_queries)
        over_queries(_gammas_queries, qo, qo, seed, out)
        return out

    def gradient_hessian(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        gradients_out: NDArray[np.float32],
        hessians_out: NDArray[np.float32],
        iteration: int = 0,
    ) -> None:
        n = data.n_samples
        s, g, h = single_output_views(scores, gradients_out, hessians_out, n)
        pow2 = self._pow2(data)
        qo = np.asarray(data.query_offsets, dtype=np.int64)
        seed = self._query_seed_base(iteration, data.n_queries)
        over_queries(
            _xendcg_queries, qo, s, pow2, doc_weights(data), qo, seed, LIGHTGBM_TERMS, g, h
        )

    def loss(self, scores: NDArray[np.float64], data: RankingDataset, iteration: int = 0) -> float:
        """``sum_q wbar_q l_q`` at round ``iteration``'s ``gamma`` (``wbar_q``: the mean
        weight of the query's documents, 1 without weights)."""
        s = single_output_scores(scores, data.n_samples)
        pow2 = self._pow2(data)
        gamma = self.gammas(data, iteration)
        w = None if data.weights is None else np.asarray(data.weights, dtype=np.float64)
        qo = np.asarray(data.query_offsets, dtype=np.int64)
        total = 0.0
        for q in range(data.n_queries):
            lo, hi = int(qo[q]), int(qo[q + 1])
            if hi - lo < 2:
                continue
            wq = 1.0 if w is None else float(w[lo:hi].mean())
            total += wq * xendcg_loss_one_query(s[lo:hi], pow2[lo:hi], gamma[lo:hi])
        return total


# --- kernels ---


@kernel
def xendcg_one_query(s_q, pow2_q, gamma_q, n_terms, g_out, h_out):
    """XE-NDCG terms of one query (module docstring), in float64.

    s_q, pow2_q (``2^y``), gamma_q: IN float64 (n,).  n_terms: 1 (the exact gradient
    ``t0``), 2 or 3 (LightGBM's ``t0 + t1 + t2``).  g_out, h_out: OUT float64 (n,).
    A query of fewer than two documents gets zeros.
    """
    n = s_q.shape[0]
    if n < 2:
        for i in range(n):
            g_out[i] = 0.0
            h_out[i] = 0.0
        return
    m = 0
    for i in range(1, n):
        if s_q[i] > s_q[m]:
            m = i
    e = np.empty(n)
    rest = 0.0  # softmax mass of every document but m, times exp(s_m)
    for i in range(n):
        e[i] = math.exp(s_q[i] - s_q[m])
        if i != m:
            rest += e[i]
    z = 1.0 + rest
    rho = np.empty(n)
    comp = np.empty(n)  # 1 - rho, without cancellation
    for i in range(n):
        rho[i] = e[i] / z
        comp[i] = (z - e[i]) / z
    comp[m] = rest / z
    sum_phi = 0.0
    for i in range(n):
        sum_phi += pow2_q[i] - gamma_q[i]
    for i in range(n):
        g_out[i] = rho[i] - (pow2_q[i] - gamma_q[i]) / sum_phi
        h_out[i] = rho[i] * comp[i]
    # t_{k+1, i} = rho_i sum_{j != i} t_{k, j} / (1 - rho_j); m's share as t_m e_j / rest
    t = g_out.copy()
    t_next = np.empty(n)
    for _ in range(n_terms - 1):
        a = 0.0
        for j in range(n):
            if j != m:
                a += t[j] / comp[j]
        for j in range(n):
            if j == m:
                t_next[j] = rho[m] * a
            else:
                share = t[m] * (e[j] / rest) if rest > 0.0 else 0.0
                t_next[j] = rho[j] * (a - t[j] / comp[j]) + share
        for j in range(n):
            g_out[j] += t_next[j]
            t[j] = t_next[j]


@kernel
def _xendcg_queries(q0, q1, scores, pow2, weights, query_offsets, seed_base, n_terms, g, h):
    # queries q0..q1-1 of XENDCG.gradient_hessian (see ltrboost._numba.over_queries);
    # weights: (n,) float32 or empty (all ones)
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        n = hi - lo
        gamma = np.empty(n)
        for d in range(n):
            gamma[d] = random_uniform(seed_base + q, d)
        gq = np.empty(n)
        hq = np.empty(n)
        xendcg_one_query(scores[lo:hi], pow2[lo:hi], gamma, n_terms, gq, hq)
        for d in range(n):
            w = 1.0 if weights.shape[0] == 0 else np.float64(weights[lo + d])
            g[lo + d] = np.float32(gq[d] * w)
            h[lo + d] = np.float32(hq[d] * w)


@kernel
def _gammas_queries(q0, q1, query_offsets, seed_base, out):
    # queries q0..q1-1 of XENDCG.gammas
    for q in range(q0, q1):
        lo = query_offsets[q]
        for d in range(query_offsets[q + 1] - lo):
            out[lo + d] = random_uniform(seed_base + q, d)


# --- reference ---


def xendcg_loss_one_query(
    s_q: NDArray[np.float64], pow2_q: NDArray[np.float64], gamma_q: NDArray[np.float64]
) -> float:
    """``l_q = -sum p_i log rho_i`` of one query (0 for fewer than two documents)."""
    s = np.asarray(s_q, dtype=np.float64)
    if s.size < 2:
        return 0.0
    phi = np.asarray(pow2_q, dtype=np.float64) - np.asarray(gamma_q, dtype=np.float64)
    p = phi / phi.sum()
    top = s.max()
    log_rho = s - top - np.log(np.exp(s - top).sum())
    return float(-(p * log_rho).sum())


def xendcg_reference(
    scores: NDArray[np.float64],
    y: NDArray[np.float64],
    query_offsets: NDArray[np.int64],
    *,
    weights: NDArray[np.floating] | None = None,
    random_state: int = 0,
    iteration: int = 0,
    gammas: NDArray[np.float64] | None = None,
    n_terms: int = LIGHTGBM_TERMS,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Plain NumPy transcription: ``(gradients, hessians)`` in float64.

    The terms are computed as sums over ``j != i`` with dense matrices (no leave-one-out
    shortcut); ``gammas`` (per document) replaces the seeded draws when given.
    """
    s_all = np.asarray(scores, dtype=np.float64)
    y_all = np.asarray(y, dtype=np.float64)
    n_all = s_all.size
    w_all = np.ones(n_all) if weights is None else np.asarray(weights, dtype=np.float64)
    g = np.zeros(n_all)
    h = np.zeros(n_all)
    nq = len(query_offsets) - 1
    base = query_seed_base(random_state, iteration, nq)
    for q in range(nq):
        lo, hi = int(query_offsets[q]), int(query_offsets[q + 1])
        n = hi - lo
        if n < 2:
            continue
        if gammas is None:
            gam = np.array([random_uniform_reference(base + q, d) for d in range(n)])
        else:
            gam = np.asarray(gammas[lo:hi], dtype=np.float64)
        s = s_all[lo:hi]
        e = np.exp(s - s.max())
        rho = e / e.sum()
        # 1 - rho_j as the other documents' share (1.0 - rho_j cancels for a leader)
        others = np.array([np.delete(e, j).sum() for j in range(n)]) / e.sum()
        phi = np.exp2(y_all[lo:hi]) - gam
        t = rho - phi / phi.sum()
        total = t.copy()
        off = np.outer(rho, 1.0 / others)  # rho_i / (1 - rho_j)
        np.fill_diagonal(off, 0.0)
        for _ in range(n_terms - 1):
            t = off @ t
            total += t
        g[lo:hi] = total * w_all[lo:hi]
        h[lo:hi] = rho * others * w_all[lo:hi]
    return g, h

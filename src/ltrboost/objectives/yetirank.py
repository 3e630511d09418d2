"""YetiRank (Gulin, Kuralenok & Pavlov, JMLR W&CP 14, 2011; CatBoost's ``YetiRank``).

Every boosting round, for every query, ``permutations`` noisy rankings are drawn: the
score of document ``d`` becomes ``s_d + log(U / (1 - U))`` (logistic noise, CatBoost's
``exp(s) U / (1 - U)`` on the log scale), ``U`` uniform on (0, 1), and the query is
sorted by it (highest first, ties in input order).  Walking down each permutation with
``c = 1``, every adjacent pair ``(k - 1, k)`` whose grades differ adds
``0.15 c |y_a - y_b|`` to the weight of the pair (better document, worse document);
then ``c *= decay``.  A pair's weight is its sum over the permutations divided by
``permutations``; pairs are drawn again every round.

The loss is the weighted pairwise logit (RankNet) over these pairs,
``sum w_ij log(1 + exp(-(s_i - s_j)))``, fed to the shared pairwise engine
(:mod:`.pair_engine`) as explicit preference pairs: gradients ``-w rho`` / ``+w rho``
and hessians ``w rho (1 - rho)`` with ``rho = 1 / (1 + exp(s_i - s_j))``, so the
Newton leaf (``split_criterion="newton"``, CatBoost's one Newton step) and the exact
pairwise OLE criterion (``split_criterion="ole"``, seed 000, eq. 13) both apply.
Document weights follow the engine's convention (LightGBM's).

Randomness is counter-based (:mod:`.pair_selection`): draw ``p * n + d`` (permutation
``p``, document ``d``) of the stream ``random_state + iteration * n_queries + q``,
so results do not depend on the thread count.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import kernel, over_queries
from ltrboost.dataset import RankingDataset
from ltrboost.objectives.base import dataset_labels, doc_weights
from ltrboost.objectives.pair_engine import (
    LOSS_LOGISTIC,
    METRIC_NONE,
    PairEngineConstants,
    PairwiseObjective,
)
from ltrboost.objectives.pair_selection import (
    check_query_pair_count,
    kernel_count,
    query_rank_order,
    random_uniform,
    random_uniform_reference,
)
from ltrboost.objectives.registry import register

DEFAULT_PERMUTATIONS = 10
DEFAULT_DECAY = 0.85
PAIR_SCALE = 0.15  # CatBoost's constant factor of the classic pair weight
# Pair keys a * n + b are sorted as float64 (exact below 2**53): queries up to 2**26
# documents.
MAX_QUERY_DOCS = 2**26


@register
class YetiRank(PairwiseObjective):
    """YetiRank: pairwise logit over adjacent pairs of noisy permutations.

    Parameters
    ----------
    permutations : int or None, default=None
        Noisy permutations per query and round (None: 10, CatBoost's default).
    decay : float or None, default=None
        Factor in (0, 1] applied to the pair weight at each step down a permutation
        (None: 0.85, CatBoost's current default).
    random_state : int, default=0
        Seed of the noise (query q, round t: ``random_state + t * n_queries + q``).
    """

    name = "yetirank"
    uses_preference_pairs = False

    def __init__(
        self,
        permutations: int | None = None,
        decay: float | None = None,
        random_state: int = 0,
    ) -> None:
        p = DEFAULT_PERMUTATIONS if permutations is None else permutations
        d = DEFAULT_DECAY if decay is None else decay
        if isinstance(p, bool) or not isinstance(p, int | np.integer) or p < 1:
            raise ValueError(f"permutations={permutations!r} should be a positive integer")
        if isinstance(d, bool | np.bool_) or not isinstance(d, numbers.Real):
            raise ValueError(f"decay={decay!r} should be a number in (0, 1]")
        if not (math.isfinite(float(d)) and 0.0 < float(d) <= 1.0):
            raise ValueError(f"decay={decay!r} should be a number in (0, 1]")
        super().__init__(permutations=int(p), decay=float(d), random_state=random_state)
        self._permutations = kernel_count(p)  # more: refused by prepare (if any pair)
        self._decay = float(d)
        self._set_pair_params("all", None, 1, random_state)
        self._metric_code = METRIC_NONE
        self._loss_code = LOSS_LOGISTIC
        self._normalize = False
        self._sigma = 1.0
        self._xpairs: tuple[Any, ...] | None = None

    def _cache_key(self) -> tuple[Any, ...]:
        return ("yetirank",)

    def prepare(self, data: RankingDataset) -> None:
        """As the engine's, and refuse a query whose ``permutations * (n - 1)`` pair
        slots (held at once every round) exceed the query pair limit."""
        perms = int(self.params["permutations"])
        check_query_pair_count(
            data,
            lambda n: perms * (n - 1) if n >= 2 else 0,
            f"yetirank with permutations={perms}",
            f"lower permutations={perms}",
            two_labels=False,  # the draws are buffered for any query of 2 documents
        )
        super().prepare(data)

    def _build_constants(self, data: RankingDataset) -> PairEngineConstants:
        labels = np.ascontiguousarray(dataset_labels(data, self.name), dtype=np.float64)
        nq = data.n_queries
        # inv_norm = 0: the engine walks no label pairs, only this round's YetiRank pairs
        return PairEngineConstants(
            labels,
            labels,
            np.zeros(nq, dtype=np.float64),
            doc_weights(data),
            np.zeros(nq + 1, dtype=np.int64),
            np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.int32),
            np.zeros(0, dtype=np.float64),
        )

    # -- this round's pairs --------------------------------------------------------

    def yetirank_pairs(
        self, ref_scores: NDArray[np.float64], data: RankingDataset, iteration: int = 0
    ) -> tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.int32], NDArray[np.float64]]:
        """This round's pairs at ``ref_scores``: ``(offsets, doc_i, doc_j, weight)``,
        CSR by query, rows inside the query, ``doc_i`` the better document; each query's
        pairs sorted by ``(doc_i, doc_j)``."""
        c = self._constants(data)
        ref = self._scores(ref_scores, data, "scores")
        qo = np.asarray(data.query_offsets, dtype=np.int64)
        sizes = np.diff(qo)
        if sizes.size and int(sizes.max()) > MAX_QUERY_DOCS:
            raise ValueError(
                f"yetirank: a query has {int(sizes.max())} documents, more than the "
                f"{MAX_QUERY_DOCS} its pair keys hold exactly"
            )
        # a query's distinct pairs: at most its n (n - 1) / 2, however many permutations
        # (the kernel's own per-query draw buffer is bounded by prepare's check)
        cap = np.minimum(self._permutations * np.maximum(sizes - 1, 0), sizes * (sizes - 1) // 2)
        cap_off = np.zeros(data.n_queries + 1, dtype=np.int64)
        np.cumsum(cap, out=cap_off[1:])
        total = int(cap_off[-1])
        pi = np.empty(total, dtype=np.int32)
        pj = np.empty(total, dtype=np.int32)
        pw = np.empty(total, dtype=np.float64)
        counts = np.zeros(data.n_queries, dtype=np.int64)
        seed_base = self._query_seed_base(iteration, data.n_queries)
        over_queries(
            _yetirank_queries, qo, ref, c.labels, qo, self._permutations, self._decay,
            seed_base, cap_off, pi, pj, pw, counts,
        )  # fmt: skip
        offsets = np.zeros(data.n_queries + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        # the first counts[q] slots of each query's, indexed by the pairs kept (not a
        # mask over every slot)
        kept = np.repeat(cap_off[:-1] - offsets[:-1], counts)
        kept += np.arange(kept.shape[0])
        return offsets, pi[kept], pj[kept], pw[kept]

    def _engine_inputs(self, data: RankingDataset, iteration: int) -> tuple[Any, ...]:
        if self._xpairs is None:
            raise RuntimeError("yetirank: engine inputs are only valid inside _with_pairs")
        inputs = list(super()._engine_inputs(data, iteration))
        inputs[5:9] = self._xpairs
        return tuple(inputs)

    def _with_pairs(self, ref: Any, data: RankingDataset, iteration: int, call: Any) -> Any:
        self._xpairs = self.yetirank_pairs(ref, data, iteration)
        try:
            return call()
        finally:
            self._xpairs = None

    def _gradients(self, scores, data, iteration, gradients, hessians):  # type: ignore[no-untyped-def]
        parent = super()._gradients
        return self._with_pairs(
            scores, data, iteration, lambda: parent(scores, data, iteration, gradients, hessians)
        )

    def _pair_terms(self, scores, ref_scores, data, iteration):  # type: ignore[no-untyped-def]
        ref = scores if ref_scores is None else ref_scores
        parent = super()._pair_terms
        return self._with_pairs(
            ref, data, iteration, lambda: parent(scores, ref_scores, data, iteration)
        )

    def _loss(self, scores, ref_scores, data, iteration):  # type: ignore[no-untyped-def]
        ref = scores if ref_scores is None else ref_scores
        parent = super()._loss
        return self._with_pairs(
            ref, data, iteration, lambda: parent(scores, ref_scores, data, iteration)
        )


# --- kernels ---


@kernel
def yetirank_pairs_one_query(ref_q, labels_q, n_perm, decay, seed, doc_i, doc_j, weight):
    """The YetiRank pairs of one query; returns their count ``k``.

    ref_q, labels_q: IN float64 (n,).  doc_i, doc_j (int32), weight (float64): OUT, at
    least ``n_perm * (n - 1)`` long; the first ``k`` entries are the distinct pairs
    (better document first, rows inside the query) sorted by ``(doc_i, doc_j)``, each
    with its weight summed over the permutations in draw order, divided by ``n_perm``.
    """
    n = ref_q.shape[0]
    if n < 2:
        return 0
    m = 0
    keys = np.empty(n_perm * (n - 1), dtype=np.int64)
    w_raw = np.empty(n_perm * (n - 1))
    noisy = np.empty(n)
    for p in range(n_perm):
        for d in range(n):
            u = random_uniform(seed, p * n + d)
            noisy[d] = ref_q[d] + math.log(u) - math.log1p(-u)
        order = query_rank_order(noisy)
        c = 1.0
        for k in range(1, n):
            a = order[k - 1]
            b = order[k]
            ya = labels_q[a]
            yb = labels_q[b]
            if ya != yb:
                if ya < yb:
                    a, b = b, a
                keys[m] = np.int64(a) * n + b
                w_raw[m] = PAIR_SCALE * c * abs(ya - yb)
                m += 1
            c *= decay
    if m == 0:
        return 0
    # Stable ascending order of the keys (draw order within a pair), by the ranking
    # routine already compiled above: -key as float64 is exact (key < n**2 < 2**53) and
    # ties keep their positions.  np.argsort(kind="mergesort") would compile Numba's
    # generic merge sort (~2 s of a first run) for the same order.
    neg = np.empty(m)
    for t in range(m):
        neg[t] = -np.float64(keys[t])
    idx = query_rank_order(neg)
    k = -1
    last = np.int64(-1)
    for t in range(m):
        key = keys[idx[t]]
        if key != last:
            k += 1
            doc_i[k] = key // n
            doc_j[k] = key % n
            weight[k] = 0.0
            last = key
        weight[k] += w_raw[idx[t]]
    k += 1
    for t in range(k):
        weight[t] /= n_perm
    return k


@kernel
def _yetirank_queries(
    q0, q1, ref, labels, query_offsets, n_perm, decay, seed_base, cap_off, pi, pj, pw, counts
):
    # queries q0..q1-1 of YetiRank.yetirank_pairs (see ltrboost._numba.over_queries)
    for q in range(q0, q1):
        lo = query_offsets[q]
        hi = query_offsets[q + 1]
        c0 = cap_off[q]
        c1 = cap_off[q + 1]
        counts[q] = yetirank_pairs_one_query(
            ref[lo:hi], labels[lo:hi], n_perm, decay, seed_base + q,
            pi[c0:c1], pj[c0:c1], pw[c0:c1],
        )  # fmt: skip


# --- reference ---


def yetirank_reference(
    scores: NDArray[np.float64],
    y: NDArray[np.float64],
    query_offsets: NDArray[np.int64],
    *,
    permutations: int = DEFAULT_PERMUTATIONS,
    decay: float = DEFAULT_DECAY,
    weights: NDArray[np.floating] | None = None,
    random_state: int = 0,
    iteration: int = 0,
    reference_scores: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, list[tuple[int, int, float]]]:
    """Plain NumPy/Python transcription: ``(gradients, hessians, loss, pairs)``.

    ``pairs`` lists ``(doc_i, doc_j, weight)`` with global rows, query by query.  The
    pairs are drawn at ``reference_scores`` (default ``scores``); the loss and its
    derivatives are taken at ``scores``.
    """
    s_all = np.asarray(scores, dtype=np.float64)
    ref_all = s_all if reference_scores is None else np.asarray(reference_scores, float)
    n_all = s_all.size
    w_all = np.ones(n_all) if weights is None else np.asarray(weights, dtype=np.float64)
    g = np.zeros(n_all)
    h = np.zeros(n_all)
    loss = 0.0
    pairs: list[tuple[int, int, float]] = []
    nq = len(query_offsets) - 1
    for q in range(nq):
        lo, hi = int(query_offsets[q]), int(query_offsets[q + 1])
        n = hi - lo
        seed = random_state + iteration * nq + q
        acc: dict[tuple[int, int], float] = {}
        for p in range(permutations):
            u = np.array([random_uniform_reference(seed, p * n + d) for d in range(n)])
            noisy = ref_all[lo:hi] + np.log(u) - np.log1p(-u)
            order = np.argsort(-noisy, kind="stable")
            c = 1.0
            for k in range(1, n):
                a, b = int(order[k - 1]), int(order[k])
                ya, yb = float(y[lo + a]), float(y[lo + b])
                if ya != yb:
                    win, lose = (a, b) if ya > yb else (b, a)
                    acc[(win, lose)] = acc.get((win, lose), 0.0) + PAIR_SCALE * c * abs(ya - yb)
                c *= decay
        for (i, j), w in sorted(acc.items()):
            w = w / permutations
            gi, gj = lo + i, lo + j
            x = s_all[gi] - s_all[gj]
            rho = 1.0 / (1.0 + math.exp(x))
            g[gi] -= w * rho * w_all[gi]
            g[gj] += w * rho * w_all[gj]
            h[gi] += w * rho * (1.0 - rho) * w_all[gi]
            h[gj] += w * rho * (1.0 - rho) * w_all[gj]
            loss += w * float(np.logaddexp(0.0, -x)) * 0.5 * (w_all[gi] + w_all[gj])
            pairs.append((gi, gj, w))
    return g, h, loss, pairs

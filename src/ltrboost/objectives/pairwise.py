"""RankNet ("RankMART") and RankBoost: pair losses over label pairs and explicit pairs.

Both run on the pairwise engine of :mod:`ltrboost.objectives.lambdamart` with |delta Z|
= 1 and no normalisation (RankNet is LambdaMART without the |delta Z| weight, seed 001),
so pair enumeration, weights, ``PairTerms`` and the loss are shared, not duplicated.

Pairs of a query
----------------
* **Label pairs** (i, j) with y_i > y_j, chosen by ``pair_method`` (``"all"`` by
  default).
* **Explicit preference pairs** from ``data.pairs`` (e.g. click preferences): document
  ``preferred[k]`` should rank above ``other[k]``, with weight ``weight[k]`` (default
  1). They are always all used (``pair_method`` does not apply) and their weight
  multiplies the pair's loss.  Label and explicit pairs add up: a pair present in both
  counts twice.

``use_label_pairs=None`` (default) uses label pairs whenever the dataset has labels, so
explicit pairs *add to* the judged labels (DESIGN.md: preferences "alongside labelled
documents", single-label queries still contributing through the explicit part).  Set
``use_label_pairs=False`` to train on the explicit pairs alone while keeping labels for
evaluation.  A dataset with neither labels nor pairs is refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltrboost.dataset import RankingDataset
from ltrboost.objectives.lambdamart import (
    LOSS_EXP,
    LOSS_LOGISTIC,
    METRIC_NONE,
    _Constants,
    _doc_weights,
    _no_explicit_pairs,
    _PairwiseObjective,
)
from ltrboost.objectives.registry import register


def _explicit_pairs(
    data: RankingDataset,
) -> tuple[
    NDArray[np.int64], NDArray[np.int32], NDArray[np.int32], NDArray[np.float64]
]:
    """``data.pairs`` as CSR by query with rows local to their query (stable order).

    Raises ValueError for out-of-range rows, a document preferred to itself, a pair
    spanning two queries, or a negative / non-finite weight.
    """
    n_queries = data.n_queries
    pp = data.pairs
    if pp is None or len(pp) == 0:
        return _no_explicit_pairs(n_queries)
    pref = np.asarray(pp.preferred)
    other = np.asarray(pp.other)
    if pref.ndim != 1 or other.shape != pref.shape:
        raise ValueError(
            f"pairs.preferred and pairs.other must be 1-D of equal length, got shapes "
            f"{pref.shape} and {other.shape}"
        )
    if not (
        np.issubdtype(pref.dtype, np.integer) and np.issubdtype(other.dtype, np.integer)
    ):
        raise ValueError("pairs.preferred and pairs.other must hold integer row ids")
    pref = pref.astype(np.int64)
    other = other.astype(np.int64)
    n = data.n_samples
    bad = (pref < 0) | (pref >= n) | (other < 0) | (other >= n)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"pair {k}: rows ({pref[k]}, {other[k]}) out of range for {n} documents"
        )
    same = pref == other
    if same.any():
        k = int(np.flatnonzero(same)[0])
        raise ValueError(f"pair {k}: document {pref[k]} is preferred to itself")
    offsets = data.query_offsets
    q_pref = np.searchsorted(offsets, pref, side="right") - 1
    q_other = np.searchsorted(offsets, other, side="right") - 1
    cross = q_pref != q_other
    if cross.any():
        k = int(np.flatnonzero(cross)[0])
        raise ValueError(
            f"pair {k}: rows {pref[k]} and {other[k]} belong to different queries "
            f"({q_pref[k]} and {q_other[k]}); a preference compares documents of one "
            "query"
        )
    if pp.weight is None:
        w = np.ones(pref.shape[0], dtype=np.float64)
    else:
        w = np.asarray(pp.weight, dtype=np.float64)
        if w.shape != pref.shape:
            raise ValueError(
                f"pairs.weight has shape {w.shape}; expected {pref.shape}, one per pair"
            )
        badw = ~np.isfinite(w) | (w < 0)
        if badw.any():
            k = int(np.flatnonzero(badw)[0])
            raise ValueError(f"pairs.weight[{k}]={w[k]} must be finite and >= 0")
    order = np.argsort(q_pref, kind="stable")
    xoff = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(np.bincount(q_pref, minlength=n_queries), out=xoff[1:])
    base = offsets[q_pref]
    return (
        xoff,
        np.ascontiguousarray((pref - base)[order], dtype=np.int32),
        np.ascontiguousarray((other - base)[order], dtype=np.int32),
        np.ascontiguousarray(w[order]),
    )


class _LabelOrPairObjective(_PairwiseObjective):
    """RankNet / RankBoost: |dZ| = 1, label and/or explicit pairs, no normalisation."""

    _use_label_pairs: bool | None = None

    def _init_common(
        self,
        pair_method: str,
        truncation_level: int | None,
        pairs_per_sample: int,
        use_label_pairs: bool | None,
        random_state: int,
    ) -> None:
        self._set_pair_params(
            pair_method, truncation_level, pairs_per_sample, random_state
        )
        if use_label_pairs is not None and not isinstance(
            use_label_pairs, bool | np.bool_
        ):
            raise ValueError(
                f"use_label_pairs={use_label_pairs!r} should be True, False or None"
            )
        self._use_label_pairs = (
            None if use_label_pairs is None else bool(use_label_pairs)
        )
        self._metric_code = METRIC_NONE
        self._normalize = False

    def _cache_key(self) -> tuple[Any, ...]:
        return ("pairwise", self._use_label_pairs)

    def _build_constants(self, data: RankingDataset) -> _Constants:
        n_queries = data.n_queries
        use_labels = self._use_label_pairs
        if use_labels is None:
            use_labels = data.y is not None
        if use_labels and data.y is None:
            raise ValueError(
                f"use_label_pairs=True but the dataset has no labels y; give labels or "
                f"use_label_pairs=False with explicit pairs ({self.name})"
            )
        if not use_labels and data.pairs is None:
            raise ValueError(
                f"{self.name} needs labels y or explicit preference pairs; the dataset "
                "has neither (or use_label_pairs=False without pairs)"
            )
        if data.y is None:
            labels = np.zeros(data.n_samples, dtype=np.float64)
        else:
            labels = np.ascontiguousarray(data.y, dtype=np.float64)
        # inv_norm = 0 switches a query's label pairs off in the engine
        inv_norm = np.full(n_queries, 1.0 if use_labels else 0.0, dtype=np.float64)
        return _Constants(
            labels,
            labels,
            inv_norm,
            _doc_weights(data),
            *_explicit_pairs(data),
            np.zeros(n_queries + 1, dtype=np.int64),
        )


@register
class RankNet(_LabelOrPairObjective):
    r"""RankNet / "RankMART" (seed 001, "RankMART Model Training"; DESIGN ``ranknet``).

    Loss, summed over queries and pairs (i, j) with i preferred to j (y_i > y_j, or an
    explicit pair of weight w_ij, else w_ij = 1)::

        C = sum w_ij log(1 + exp(-sigma (s_i - s_j)))

    With ``rho_ij = 1 / (1 + exp(sigma (s_i - s_j)))``::

        dC/ds_i = -sigma w_ij rho_ij,  dC/ds_j = +sigma w_ij rho_ij
        d2C/ds_i2 = d2C/ds_j2 = sigma^2 w_ij rho_ij (1 - rho_ij)

    ``gradients`` are dC/ds (descent is ``-gradients``); seed 001's lambda_i is
    ``-gradients[i]``.  Leaves take the Newton step -sum(g)/sum(h) (seed 001, "Newton's
    method").  This is LambdaMART with |dZ| = 1 and no normalisation.

    Parameters
    ----------
    sigma : float, default=1.0
        Sigmoid scale (seed 001's alpha).
    pair_method : {"all", "topk", "sampled"}, default="all"
    truncation_level : int or None, default=30
        Top-k of ``"topk"``.
    pairs_per_sample : int, default=1
        Partners per document for ``"sampled"``.
    use_label_pairs : bool or None, default=None
        Use label pairs; None: whenever the dataset has labels (see module docstring).
    random_state : int, default=0
        Seed of ``"sampled"`` (query q, iteration t: ``random_state + t * n_queries +
        q``).
    """

    name = "ranknet"

    def __init__(
        self,
        sigma: float = 1.0,
        pair_method: str = "all",
        truncation_level: int | None = 30,
        pairs_per_sample: int = 1,
        use_label_pairs: bool | None = None,
        random_state: int = 0,
    ) -> None:
        super().__init__(
            sigma=sigma,
            pair_method=pair_method,
            truncation_level=truncation_level,
            pairs_per_sample=pairs_per_sample,
            use_label_pairs=use_label_pairs,
            random_state=random_state,
        )
        self._sigma = self._check_sigma(sigma)
        self._loss_code = LOSS_LOGISTIC
        self._init_common(
            pair_method,
            truncation_level,
            pairs_per_sample,
            use_label_pairs,
            random_state,
        )


@register
class RankBoost(_LabelOrPairObjective):
    r"""RankBoost's exponential pair loss (seed 000, example 3; DESIGN ``rankboost``).

    Loss, summed over queries and pairs (i, j) with i preferred to j (weights as in
    :class:`RankNet`)::

        L = sum w_ij exp(s_j - s_i)

    so, with ``e_ij = exp(s_j - s_i)``::

        dL/ds_i = -w_ij e_ij,  dL/ds_j = +w_ij e_ij,  d2L/ds_i2 = d2L/ds_j2 = w_ij e_ij

    (seed 000's toy example: L'(o=0|d1) = -s1 - s2, L''(o=0|d1) = s1 + s2, ...).
    ``gradients`` are dL/ds; descent is ``-gradients``.  Leaves take the Newton step.

    Overflow guard: the exponent is clipped at ``EXP_CLIP = 50``, i.e.
    ``e_ij = exp(min(s_j - s_i, 50))`` in the loss, gradients and hessians alike; a pair
    misordered by more than 50 contributes the constant ``exp(50)`` (gradients stay
    finite in float32 for up to ~10^16 such pairs per document).

    Parameters
    ----------
    pair_method : {"all", "topk", "sampled"}, default="all"
    truncation_level : int or None, default=30
    pairs_per_sample : int, default=1
    use_label_pairs : bool or None, default=None
    random_state : int, default=0
        As for :class:`RankNet`.
    """

    name = "rankboost"

    def __init__(
        self,
        pair_method: str = "all",
        truncation_level: int | None = 30,
        pairs_per_sample: int = 1,
        use_label_pairs: bool | None = None,
        random_state: int = 0,
    ) -> None:
        super().__init__(
            pair_method=pair_method,
            truncation_level=truncation_level,
            pairs_per_sample=pairs_per_sample,
            use_label_pairs=use_label_pairs,
            random_state=random_state,
        )
        self._loss_code = LOSS_EXP
        self._init_common(
            pair_method,
            truncation_level,
            pairs_per_sample,
            use_label_pairs,
            random_state,
        )

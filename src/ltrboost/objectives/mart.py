"""MART: least-squares regression on the grades (seed 003; seed 000 section 3.4).

A pointwise, derivative-additive loss: RWSE and OLE split the same way (seed 000,
Theorem 1), SE too when unweighted and without ``l2_regularization`` (Theorem 2), and
the Newton leaf ``-G / H`` is the mean residual.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import POINTWISE_ROWS_PER_THREAD, kernel, over_rows
from ltrboost.dataset import RankingDataset
from ltrboost.objectives.base import (
    Objective,
    dataset_labels,
    doc_weights,
    doc_weights_float64,
    identity_transform,
    single_output_scores,
    single_output_views,
)
from ltrboost.objectives.registry import register


@register
class MART(Objective):
    """Least-squares regression on the grades (MART; seed 003, seed 000 section 3.4).

    Loss ``L = sum_d w_d (s_d - y_d)^2`` (no factor 1/2: the design table's convention),
    so ``g = 2 w (s - y)``, ``h = 2 w`` and the Newton leaf ``-G / H`` is the (weighted)
    mean residual ``mean(y - s)`` -- the classic gradient-boosting leaf.  For this loss
    SE, RWSE and OLE choose the same splits (seed 000, Theorem 2) when the hessians are
    one constant and ``l2_regularization`` is 0: SE's ``G^2 / (n + l2)`` and Newton's
    ``G^2 / (2 n + l2)`` are proportional only for ``l2 = 0``, and document weights make
    ``h = 2 w`` vary (RWSE = OLE still holds, Theorem 1).

    ``hessian_is_constant`` is True in the sense of :class:`Objective`: hessians never
    change between iterations.  With per-document weights they are ``2 w``, so they are
    not one constant across documents.

    Parameters
    ----------
    init : {"mean", "zero"}, default="mean"
        Initial raw score: the weighted mean label (``argmin_c L``, seed 003's
        ``F_0 = argmin_gamma sum L(y_i, gamma)``) or 0.
    """

    name: ClassVar[str] = "mart"
    learns_across_queries: ClassVar[bool | None] = True  # pointwise
    hessian_is_constant: ClassVar[bool] = True

    def __init__(self, *, init: str = "mean") -> None:
        if init not in ("mean", "zero"):
            raise ValueError(f"init={init!r} is not one of ('mean', 'zero')")
        super().__init__(init=init)

    def prepare(self, data: RankingDataset) -> None:
        dataset_labels(data, self.name)

    def init_score(self, data: RankingDataset) -> NDArray[np.float64]:
        if self.params["init"] == "zero" or data.n_samples == 0:
            return np.zeros(1, dtype=np.float64)
        y = dataset_labels(data, self.name)
        w = doc_weights_float64(data, y.shape[0])
        total = float(w.sum())
        mean = float(np.dot(w, y) / total) if total > 0 else float(y.mean())
        return np.array([mean], dtype=np.float64)

    def gradient_hessian(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        gradients_out: NDArray[np.float32],
        hessians_out: NDArray[np.float32],
        iteration: int = 0,
    ) -> None:
        y = dataset_labels(data, self.name)
        s, g, h = single_output_views(scores, gradients_out, hessians_out, y.shape[0])
        _mart_gradient_hessian(s, y, doc_weights(data), g, h)

    def loss(self, scores: NDArray[np.float64], data: RankingDataset) -> float:
        y = dataset_labels(data, self.name)
        s = single_output_scores(scores, y.shape[0])
        w = doc_weights_float64(data, y.shape[0])
        return float(np.dot(w, (s - y) ** 2))

    def transform(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Rank by the raw score (identity)."""
        return identity_transform(raw_scores)


# --- kernels ---


def _mart_gradient_hessian(scores, y, weights, gradients, hessians):
    """g = 2 w (s - y), h = 2 w for every document.

    scores : (n,) float64  # IN
    y : (n,) float64  # IN
    weights : (n,) or (0,) float32; empty means all ones  # IN
    gradients, hessians : (n,) float32  # OUT
    """
    # Documents are independent: blocks of rows on threads (no parfor to compile).
    over_rows(
        _mart_gradient_hessian_rows,
        scores.shape[0],
        scores,
        y,
        weights,
        gradients,
        hessians,
        min_rows_per_thread=POINTWISE_ROWS_PER_THREAD,
    )


@kernel
def _mart_gradient_hessian_rows(r0, r1, scores, y, weights, gradients, hessians):
    # rows r0..r1-1 of _mart_gradient_hessian
    weighted = weights.shape[0] > 0
    for i in range(r0, r1):
        w = np.float64(weights[i]) if weighted else 1.0
        gradients[i] = 2.0 * w * (scores[i] - y[i])
        hessians[i] = 2.0 * w


# --- references ---


def _mart_gradient_hessian_reference(
    scores: NDArray[np.float64],
    y: NDArray[np.float64],
    weights: NDArray[np.float32] | None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    w = np.ones_like(y) if weights is None else weights.astype(np.float64)
    return 2.0 * w * (scores - y), 2.0 * w

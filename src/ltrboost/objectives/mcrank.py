"""McRank (Li et al. 2007; seed 000 eq. 4-5): multi-class classification over grades.

One tree per grade per round; the ranking score is the expected grade.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import POINTWISE_ROWS_PER_THREAD, kernel, over_rows
from ltrboost.dataset import LTRInputError, RankingDataset
from ltrboost.objectives.base import (
    PRIOR_EPS,
    Objective,
    dataset_labels,
    doc_weights,
    doc_weights_float64,
    finite_real,
)
from ltrboost.objectives.registry import register

# Largest grade McRank accepts: one tree per class per round, so a label column of, say,
# click counts or real-valued targets would silently make hundreds of classes.  31 is
# the same bound the exponential gain uses (``_config.MAX_EXP_GAIN_LABEL``).
MCRANK_MAX_LABEL = 31


@register
class McRank(Objective):
    """McRank: multi-class classification over the grades (Li et al. 2007; seed 000).

    With ``C = K + 1`` classes (grades ``0..K``) and one additive score ``f^k`` per
    class, ``p_k = exp f^k / sum_c exp f^c`` (seed 000, eq. 4) and the loss is the
    negative multinomial log-likelihood ``L = -sum_d w_d log p_{y_d}(d)`` (eq. 5).
    Each round fits one tree per class on::

        g_k = w (p_k - 1[y = k])                  (dL/df^k, exact)
        h_k = w * C / (C - 1) * p_k (1 - p_k)     (friedman_factor=True, the default)

    ``p_k (1 - p_k)`` is the exact diagonal of the hessian; it also equals
    ``|r| (1 - |r|)`` for the pseudo-response ``r = 1[y = k] - p_k``.  The factor
    ``C / (C - 1)`` makes the Newton leaf ``-G / H`` equal Friedman's multi-class leaf
    (Greedy Function Approximation, Algorithm 6, with his K = our C classes)::

        gamma = (C - 1) / C * sum r / sum |r| (1 - |r|)

    which accounts for the softmax's redundancy (scores are defined up to a common
    shift) -- the same constant LightGBM's ``MulticlassSoftmax`` puts in its hessians.
    With ``friedman_factor=False`` the hessians are the plain diagonal, as in seed
    000's derivative-additive derivation of McRank's loss.

    Ranking score (Li et al.): the expected grade ``sum_k k p_k`` (:meth:`transform`);
    :meth:`predict_proba` returns the class probabilities.  Raw scores have shape
    ``(C, n_samples)``.

    Parameters
    ----------
    max_label : int or None, default=None
        ``K``, the largest grade.  None resolves at :meth:`prepare` (or the first call
        needing it) to ``max(1, max training label)`` and stores it, so the model file
        knows the number of classes; at least two classes are always used.  Given, it
        keeps a grade that is absent from the training data (e.g. 4 on a 0..4 scale).  At
        most 31 (one tree per class per round).  ``max_label``, ``friedman_factor`` and
        ``init`` are parameters of this class only: ``ltrboost.train``, ``Ranker`` and the
        CLI use the defaults (``max_label`` from the training labels, or from
        ``init_model`` when continuing one).
    friedman_factor : bool, default=True
        Scale hessians by ``C / (C - 1)`` (see above).
    init : {"prior", "zero"}, default="prior"
        Initial raw scores: centred log class priors (weighted class frequencies,
        clipped to at least 1e-6 so absent grades stay finite; ``softmax(F_0)`` is then
        the prior, the constant minimiser of ``L``) or zeros (uniform probabilities).
    """

    name: ClassVar[str] = "mcrank"
    learns_across_queries: ClassVar[bool | None] = True  # pointwise
    needs_integer_labels: ClassVar[bool] = True

    def __init__(
        self,
        *,
        max_label: int | None = None,
        friedman_factor: bool = True,
        init: str = "prior",
    ) -> None:
        if max_label is not None:
            if finite_real("max_label", max_label) != int(max_label):
                raise ValueError(f"max_label={max_label!r} must be an integer grade")
            max_label = int(max_label)
            if not 1 <= max_label <= MCRANK_MAX_LABEL:
                raise ValueError(f"max_label={max_label} must be between 1 and {MCRANK_MAX_LABEL}")
        if not isinstance(friedman_factor, bool | np.bool_):
            raise ValueError(f"friedman_factor={friedman_factor!r} must be True or False")
        if init not in ("prior", "zero"):
            raise ValueError(f"init={init!r} is not one of ('prior', 'zero')")
        super().__init__(max_label=max_label, friedman_factor=bool(friedman_factor), init=init)
        self._max_label_from_model = False  # set by continue_model

    def continue_model(self, model_params: dict) -> None:
        """The model's classes: ``max_label`` from the model when not given (its trees
        are one per class; the data it continues on need not hold the top grade)."""
        stored = model_params.get("max_label")
        if self.params["max_label"] is None and stored is not None:
            self.params["max_label"] = int(stored)
            self._max_label_from_model = True

    def _grades(self, data: RankingDataset) -> tuple[NDArray[np.float64], int]:
        """Validated labels and K (resolved from the labels the first time)."""
        y = dataset_labels(data, self.name)
        dataset_labels(data, self.name, integer=True)
        top = int(y.max()) if y.size else 0
        K = self.params["max_label"]
        if K is None:
            if top > MCRANK_MAX_LABEL:
                row = int(np.argmax(y))
                raise LTRInputError(  # :g: a label of 1e300 as 1e+300, not 301 digits
                    f"label y[{row}]={y[row]:g} is larger than {MCRANK_MAX_LABEL}, the "
                    "largest grade 'mcrank' accepts (one tree per grade per round); "
                    "re-map the labels or use 'mart' / 'lambdamart'",
                    row=row,
                )
            K = max(1, top)
            self.params["max_label"] = K
        elif top > K:
            row = int(np.argmax(y))
            remedy = (
                "the model continued (init_model) has these classes and cannot gain one: "
                "train a new model"
                if self._max_label_from_model
                else "pass max_label= explicitly to cover it"
            )
            raise LTRInputError(
                f"label y[{row}]={y[row]:g} is larger than max_label={K} (the classes this "
                f"objective was prepared with); {remedy}",
                row=row,
            )
        return y, int(K)

    def n_outputs(self, data: RankingDataset) -> int:
        K = self.params["max_label"]
        if K is None:
            _, K = self._grades(data)
        return int(K) + 1

    def prepare(self, data: RankingDataset) -> None:
        self._grades(data)

    def init_score(self, data: RankingDataset) -> NDArray[np.float64]:
        y, K = self._grades(data)
        C = K + 1
        if self.params["init"] == "zero" or y.shape[0] == 0:
            return np.zeros(C, dtype=np.float64)
        w = doc_weights_float64(data, y.shape[0])
        counts = np.bincount(y.astype(np.int64), weights=w, minlength=C)
        total = float(counts.sum())
        prior = counts / total if total > 0 else np.full(C, 1.0 / C)
        log_prior = np.log(np.maximum(prior, PRIOR_EPS))
        return log_prior - log_prior.mean()  # softmax is shift-invariant; centre at 0

    def gradient_hessian(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        gradients_out: NDArray[np.float32],
        hessians_out: NDArray[np.float32],
        iteration: int = 0,
    ) -> None:
        y, K = self._grades(data)
        shape = (K + 1, y.shape[0])
        if scores.shape != shape:
            raise ValueError(f"scores has shape {scores.shape}, expected {shape}")
        for name, out in (
            ("gradients_out", gradients_out),
            ("hessians_out", hessians_out),
        ):
            if out.shape != shape:
                raise ValueError(f"{name} has shape {out.shape}, expected {shape}")
            if out.dtype != np.float32 or not out.flags.c_contiguous:
                raise ValueError(f"{name} must be a C-contiguous float32 array")
        C = K + 1
        factor = C / (C - 1.0) if self.params["friedman_factor"] else 1.0
        _mcrank_gradient_hessian(
            np.ascontiguousarray(scores, dtype=np.float64),
            y,
            doc_weights(data),
            factor,
            gradients_out,
            hessians_out,
        )

    def loss(self, scores: NDArray[np.float64], data: RankingDataset) -> float:
        y, K = self._grades(data)
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != (K + 1, y.shape[0]):
            raise ValueError(f"scores has shape {scores.shape}, expected {(K + 1, y.shape[0])}")
        log_p = _log_softmax(scores)
        rows = np.arange(y.shape[0])
        nll = -log_p[y.astype(np.int64), rows]
        return float(np.dot(doc_weights_float64(data, y.shape[0]), nll))

    def predict_proba(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Class probabilities, shape (n_samples, n_outputs); each row sums to 1."""
        raw = np.asarray(raw_scores, dtype=np.float64)
        if raw.ndim != 2 or raw.shape[0] < 2:
            raise ValueError(f"raw_scores has shape {raw.shape}, expected (n_outputs, n_samples)")
        return _softmax_by_document(raw).T

    def transform(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Expected grade ``sum_k k p_k`` (Li et al. 2007), shape (n_samples,).

        Summed in the order of ``k``, document by document, so that a document's score
        does not depend on the rows predicted with it (a matrix-vector product sums in
        an order that depends on the number of rows: a few ulps apart between a
        document predicted alone, in its query and in a whole file).
        ``predict_proba(raw) @ arange(K + 1)`` agrees to rounding."""
        proba = self.predict_proba(raw_scores).T  # (n_outputs, n_samples), C-ordered
        score = np.zeros(proba.shape[1], dtype=np.float64)
        for k in range(1, proba.shape[0]):
            score += k * proba[k]
        return score


def _log_softmax(raw: NDArray[np.float64]) -> NDArray[np.float64]:
    """Log-softmax over axis 0 of (n_classes, n) scores (max-shifted for safety)."""
    shifted = raw - raw.max(axis=0, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=0, keepdims=True))


def _softmax_by_document(raw: NDArray[np.float64]) -> NDArray[np.float64]:
    """Softmax over axis 0 of (n_classes, n) scores, each document's sum taken in the
    order of the classes: ``_log_softmax``'s reduction summed a single document (a
    contiguous column) pairwise for more than 8 classes and many documents row by row,
    so a score depended on the batch.  The same values as ``exp(_log_softmax(raw))``
    for a batch of more than one document (NumPy's row-by-row reduction)."""
    shifted = raw - raw.max(axis=0, keepdims=True)
    e = np.exp(shifted)
    total = e[0].copy()
    for k in range(1, e.shape[0]):
        total += e[k]
    return np.exp(shifted - np.log(total))


# --- kernels ---


def _mcrank_gradient_hessian(scores, y, weights, factor, gradients, hessians):
    """Per document: g_k = w (p_k - 1[y=k]), h_k = w * factor * p_k (1 - p_k).

    scores : (C, n) float64  # IN
    y : (n,) float64 integer grades in 0..C-1  # IN
    weights : (n,) or (0,) float32; empty means all ones  # IN
    factor : float, C / (C - 1) (Friedman) or 1  # IN
    gradients, hessians : (C, n) float32  # OUT
    """
    # Documents are independent: blocks of rows on threads (no parfor to compile).
    over_rows(
        _mcrank_gradient_hessian_rows,
        scores.shape[1],
        scores,
        y,
        weights,
        factor,
        gradients,
        hessians,
        min_rows_per_thread=POINTWISE_ROWS_PER_THREAD,
    )


@kernel
def _mcrank_gradient_hessian_rows(r0, r1, scores, y, weights, factor, gradients, hessians):
    # rows r0..r1-1 of _mcrank_gradient_hessian
    C = scores.shape[0]
    weighted = weights.shape[0] > 0
    for i in range(r0, r1):
        top = scores[0, i]
        for k in range(1, C):
            if scores[k, i] > top:
                top = scores[k, i]
        z = 0.0
        for k in range(C):
            z += math.exp(scores[k, i] - top)
        w = np.float64(weights[i]) if weighted else 1.0
        label = int(y[i])
        for k in range(C):
            p = math.exp(scores[k, i] - top) / z
            gradients[k, i] = w * (p - (1.0 if k == label else 0.0))  # eq. 5 derivative
            hessians[k, i] = w * factor * p * (1.0 - p)


# --- references ---


def _mcrank_gradient_hessian_reference(
    scores: NDArray[np.float64],
    y: NDArray[np.float64],
    weights: NDArray[np.float32] | None,
    factor: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    C, n = scores.shape
    w = np.ones(n) if weights is None else weights.astype(np.float64)
    p = np.exp(_log_softmax(scores))
    onehot = (y.astype(np.int64)[None, :] == np.arange(C)[:, None]).astype(np.float64)
    return w * (p - onehot), w * factor * p * (1.0 - p)

"""Pointwise objectives: ``mart`` (least squares), ``logistic_rank`` and ``mcrank``.

Each document's loss depends on its own score only, so every loss here is *derivative
additive* (seed 000, Theorem 1): SE, RWSE and OLE split the same way, and the Newton
leaf ``-G / H`` built from the per-document gradients and hessians written below is the
leaf formula of each paper.  The hessians are chosen so that this holds exactly:

* ``mart``: ``g = 2 (s - y)``, ``h = 2``, so ``-G / H`` is the mean residual
  (seed 000, section 3.4 / Theorem 2; seed 003).
* ``logistic_rank``: Friedman's two-class loss ``log(1 + exp(-2 t s))`` (t = +-1), whose
  Newton step is exactly the seed's ``gamma = sum y~ / sum |y~| (2 - |y~|)`` (seed 002).
* ``mcrank``: a (K+1)-class softmax (seed 000, eq. 4-5) with Friedman's
  ``(C - 1) / C`` multi-class leaf, obtained by scaling the hessians by ``C / (C - 1)``.

All three work document by document, so their drivers run ``prange`` over rows, not
queries; per-document weights multiply ``g`` and ``h`` (LightGBM's convention, see
:mod:`ltrboost.objectives.base`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import parallel_kernel, prange
from ltrboost.dataset import LTRInputError, RankingDataset
from ltrboost.objectives.base import Objective
from ltrboost.objectives.registry import register

# Largest grade McRank accepts: one tree per class per round, so a label column of, say,
# click counts or real-valued targets would silently make hundreds of classes.  31 is
# the same bound the exponential gain uses (``_config.MAX_EXP_GAIN_LABEL``).
MCRANK_MAX_LABEL = 31

# Constant initial scores are clipped to class frequencies in [eps, 1 - eps] so that a
# training set with one class only (all documents irrelevant, say) gets a finite start.
_PRIOR_EPS = 1e-6

_EMPTY_WEIGHTS = np.empty(0, dtype=np.float32)


# --------------------------------------------------------------------------------------
# shared helpers (Python)
# --------------------------------------------------------------------------------------


def _labels(data: RankingDataset, objective: str) -> NDArray[np.float64]:
    """The dataset's labels as float64, refusing a label-less dataset and NaN/inf."""
    if data.y is None:
        raise ValueError(
            f"objective {objective!r} needs labels, but the dataset has none "
            "(build it with make_dataset(X, y, ...))"
        )
    y = np.asarray(data.y, dtype=np.float64)
    if data.cache.get("pointwise_finite_labels") is data.y:
        return y  # checked before: skip the O(n) scan on every boosting round
    bad = ~np.isfinite(y)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise LTRInputError(
            f"label y[{row}]={y[row]} is not finite; objective {objective!r} needs "
            "finite labels",
            line=row,
        )
    data.cache["pointwise_finite_labels"] = data.y
    return y


def _check_integer_grades(data: RankingDataset, objective: str) -> None:
    """Refuse negative or fractional labels, naming the first offending row."""
    if data.cache.get("pointwise_integer_labels") is data.y:
        return
    y = np.asarray(data.y, dtype=np.float64)
    bad = (y < 0) | (y != np.floor(y))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise LTRInputError(
            f"label y[{row}]={y[row]:g} is not a non-negative integer grade; objective "
            f"{objective!r} needs grades 0, 1, ..., K (round or re-map the labels, or "
            "use 'mart' / 'lambdamart' for real-valued relevance)",
            line=row,
        )
    data.cache["pointwise_integer_labels"] = data.y


def _weights_or_empty(data: RankingDataset) -> NDArray[np.float32]:
    """Per-document weights as contiguous float32, or an empty array meaning 'all ones'.

    One array type for both cases keeps one compiled specialisation per kernel.
    """
    if data.weights is None:
        return _EMPTY_WEIGHTS
    return np.ascontiguousarray(data.weights, dtype=np.float32)


def _weights_float64(data: RankingDataset, n: int) -> NDArray[np.float64]:
    if data.weights is None:
        return np.ones(n, dtype=np.float64)
    return np.asarray(data.weights, dtype=np.float64)


def _single_output_views(
    scores: NDArray[np.float64],
    gradients_out: NDArray[np.float32],
    hessians_out: NDArray[np.float32],
    n: int,
) -> tuple[NDArray[np.float64], NDArray[np.float32], NDArray[np.float32]]:
    """Accept (n,) or (1, n) arrays; return 1-D views writing through to the outputs."""
    if scores.shape not in ((n,), (1, n)):
        raise ValueError(
            f"scores has shape {scores.shape}, expected ({n},) or (1, {n})"
        )
    for name, out in (("gradients_out", gradients_out), ("hessians_out", hessians_out)):
        if out.shape not in ((n,), (1, n)):
            raise ValueError(
                f"{name} has shape {out.shape}, expected ({n},) or (1, {n})"
            )
        if out.dtype != np.float32 or not out.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous float32 array")
    s = np.ascontiguousarray(scores, dtype=np.float64).reshape(n)
    return s, gradients_out.reshape(n), hessians_out.reshape(n)


def _single_output_scores(scores: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape not in ((n,), (1, n)):
        raise ValueError(
            f"scores has shape {scores.shape}, expected ({n},) or (1, {n})"
        )
    return scores.reshape(n)


def _identity_transform(raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
    raw = np.asarray(raw_scores, dtype=np.float64)
    return raw if raw.ndim == 1 else raw[0]


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------


@register
class MART(Objective):
    """Least-squares regression on the grades (MART; seed 003, seed 000 section 3.4).

    Loss ``L = sum_d w_d (s_d - y_d)^2`` (no factor 1/2: the design table's convention),
    so ``g = 2 w (s - y)``, ``h = 2 w`` and the Newton leaf ``-G / H`` is the (weighted)
    mean residual ``mean(y - s)`` -- the classic gradient-boosting leaf.  For this loss
    SE, RWSE and OLE choose the same splits (seed 000, Theorem 2).

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
    hessian_is_constant: ClassVar[bool] = True

    def __init__(self, *, init: str = "mean") -> None:
        if init not in ("mean", "zero"):
            raise ValueError(f"init={init!r} is not one of ('mean', 'zero')")
        super().__init__(init=init)

    def prepare(self, data: RankingDataset) -> None:
        _labels(data, self.name)

    def init_score(self, data: RankingDataset) -> NDArray[np.float64]:
        if self.params["init"] == "zero" or data.n_samples == 0:
            return np.zeros(1, dtype=np.float64)
        y = _labels(data, self.name)
        w = _weights_float64(data, y.shape[0])
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
        y = _labels(data, self.name)
        s, g, h = _single_output_views(scores, gradients_out, hessians_out, y.shape[0])
        _mart_gradient_hessian(s, y, _weights_or_empty(data), g, h)

    def loss(self, scores: NDArray[np.float64], data: RankingDataset) -> float:
        y = _labels(data, self.name)
        s = _single_output_scores(scores, y.shape[0])
        w = _weights_float64(data, y.shape[0])
        return float(np.dot(w, (s - y) ** 2))

    def transform(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Rank by the raw score (identity)."""
        return _identity_transform(raw_scores)


@register
class LogisticRank(Objective):
    """Yahoo's LogisticRank: pointwise logistic loss with per-grade scaling (seed 002).

    Binary targets ``t_d = +1`` if ``y_d >= positive_threshold`` else ``-1``.  The
    loss is Friedman's two-class deviance (the parametrisation his ``gamma`` formula
    belongs to), weighted by a per-grade scale ``c_d`` and the document weight ``w_d``::

        L = sum_d w_d c_d log(1 + exp(-2 t_d s_d))

    Derivation of ``g`` and ``h`` (why the Newton leaf is the seed's formula).  Write
    the unscaled pseudo-response ``u_d = 2 t_d / (1 + exp(2 t_d s_d))`` (Friedman's
    ``y~``; ``|u| = 2 sigmoid(-2 t s)`` lies in (0, 2), ``2 - |u| = 2 sigmoid(2 t s)``).
    Then::

        dL/ds_d   = -w_d c_d u_d                         =: g_d
        d2L/ds_d2 =  4 w_d c_d sigmoid(2 t s) sigmoid(-2 t s)
                  =  w_d c_d |u_d| (2 - |u_d|)           =: h_d

    so, over the documents of a leaf (unit weights)::

        -G / H = sum c u / sum c |u| (2 - |u|)

    With unit scales this is exactly seed 002's step 3,
    ``gamma = sum y~ / sum |y~| (2 - |y~|)``.  With scales, ``c u`` is the seed's
    *scaled* pseudo-response ``y~_s`` (step 1) and the leaf reads
    ``sum y~_s / sum |y~_s| (2 - |y~_s| / c)``: the seed says the scale "is equivalent
    to weighting each label's loss", and this is the Newton step of that weighted loss.
    Plugging the scaled ``y~_s`` into ``(2 - |y~_s|)`` literally (as the blog's formula
    would read) is not the derivative of any loss and divides by ~0 when ``|y~_s|``
    reaches 2, so it is not offered.

    The blog writes ``log(1 + exp(-y F))`` with pseudo-response ``y / (1 + exp(y F))``;
    that loss's Newton leaf is ``sum y~ / sum |y~| (1 - |y~|)``, not the seed's.  We use
    Friedman's factor 2 (raw score = half the log-odds) so that the leaf formula the
    seed prints is exact; ranking by the raw score is unaffected.

    Parameters
    ----------
    positive_threshold : float or None, default=None
        Grades ``>= positive_threshold`` are positive.  None resolves at :meth:`prepare`
        to ``max(1, ceil(K / 2))`` with ``K`` the largest training grade, and stores the
        value in the parameters.  On the 5-grade scale (0 bad .. 4 perfect) this is 2:
        perfect, excellent and good are positive, fair and bad negative (seed 002's
        three scaled grades; Yahoo's choice).  Binary 0/1 labels get 1.
    label_scale : None, mapping or sequence, default=None
        Scale ``c`` of each grade.  None: ``y - positive_threshold + 1`` for positives
        and 1 for negatives (on 0..4: perfect 3, excellent 2, good 1, others 1; seed
        002).  A mapping ``{grade: scale}`` (keys may be strings, as after a JSON round
        trip; grades not listed get 1; ``{}`` turns scaling off), or a sequence whose
        ``k``-th entry is the scale of grade ``k``.  Scales must be finite and > 0.
    init : {"logodds", "mean", "zero"}, default="logodds"
        Initial raw score.  ``"logodds"``: ``F_0 = 1/2 log(W+ / W-)`` with ``W+-`` the
        (weight x scale) mass of positives / negatives, i.e. ``artanh`` of their
        weighted mean of ``t``: the exact constant minimiser of ``L`` (seed 003's
        ``F_0 = argmin_gamma``), and Friedman's
        ``F_0 = 1/2 log((1 + ybar) / (1 - ybar))``.  ``"mean"``: seed 002's literal
        ``F_0 = ybar``, the weighted mean of the +-1 targets (first-order approximation
        of the former).  Class frequencies are clipped to ``[1e-6, 1 - 1e-6]`` so a
        one-class training set gets a finite start.
    """

    name: ClassVar[str] = "logistic_rank"

    def __init__(
        self,
        *,
        positive_threshold: float | None = None,
        label_scale: Mapping[Any, float] | Sequence[float] | None = None,
        init: str = "logodds",
    ) -> None:
        if positive_threshold is not None:
            positive_threshold = float(positive_threshold)
            if not math.isfinite(positive_threshold):
                raise ValueError(
                    f"positive_threshold={positive_threshold} must be a finite grade"
                )
        if init not in ("logodds", "mean", "zero"):
            raise ValueError(f"init={init!r} is not one of ('logodds', 'mean', 'zero')")
        super().__init__(
            positive_threshold=positive_threshold,
            label_scale=_normalise_label_scale(label_scale),
            init=init,
        )

    # -- per-dataset constants ---------------------------------------------------------

    def _threshold(self, y: NDArray[np.float64]) -> float:
        t = self.params["positive_threshold"]
        if t is None:
            top = float(y.max()) if y.size else 0.0
            t = float(max(1.0, math.ceil(top / 2.0)))
            self.params["positive_threshold"] = t
        return float(t)

    def _targets(
        self, data: RankingDataset
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
        """(labels, per-document scales c_d, threshold); scales cached on ``data``."""
        y = _labels(data, self.name)
        t = self._threshold(y)
        scale_spec = self.params["label_scale"]
        key = (
            self.name,
            t,
            None if scale_spec is None else tuple(sorted(scale_spec.items())),
        )
        cached = data.cache.get("logistic_rank_scales")
        if cached is not None and cached[0] == key and cached[1].shape[0] == y.shape[0]:
            return y, cached[1], t
        scales = _label_scales(y, t, scale_spec)
        data.cache["logistic_rank_scales"] = (key, scales)
        return y, scales, t

    def prepare(self, data: RankingDataset) -> None:
        self._targets(data)

    def init_score(self, data: RankingDataset) -> NDArray[np.float64]:
        if self.params["init"] == "zero" or data.n_samples == 0:
            return np.zeros(1, dtype=np.float64)
        y, c, t = self._targets(data)
        mass = _weights_float64(data, y.shape[0]) * c
        total = float(mass.sum())
        p = float(mass[y >= t].sum()) / total if total > 0 else 0.5
        p = min(max(p, _PRIOR_EPS), 1.0 - _PRIOR_EPS)
        if self.params["init"] == "mean":
            return np.array([2.0 * p - 1.0], dtype=np.float64)  # mean of t in {-1, +1}
        return np.array([0.5 * math.log(p / (1.0 - p))], dtype=np.float64)

    def gradient_hessian(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        gradients_out: NDArray[np.float32],
        hessians_out: NDArray[np.float32],
        iteration: int = 0,
    ) -> None:
        y, c, t = self._targets(data)
        s, g, h = _single_output_views(scores, gradients_out, hessians_out, y.shape[0])
        _logistic_rank_gradient_hessian(s, y, t, c, _weights_or_empty(data), g, h)

    def loss(self, scores: NDArray[np.float64], data: RankingDataset) -> float:
        y, c, t = self._targets(data)
        s = _single_output_scores(scores, y.shape[0])
        sign = np.where(y >= t, 1.0, -1.0)
        w = _weights_float64(data, y.shape[0])
        return float(np.dot(w * c, np.logaddexp(0.0, -2.0 * sign * s)))

    def transform(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Rank by the raw score (identity; P(relevant) = sigmoid(2 s) is monotone)."""
        return _identity_transform(raw_scores)


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
        knows the number of classes; at least two classes are always used.  Set it to
        keep a grade that is absent from the training data (e.g. 4 on a 0..4 scale).  At
        most 31 (one tree per class per round).
    friedman_factor : bool, default=True
        Scale hessians by ``C / (C - 1)`` (see above).
    init : {"prior", "zero"}, default="prior"
        Initial raw scores: centred log class priors (weighted class frequencies,
        clipped to at least 1e-6 so absent grades stay finite; ``softmax(F_0)`` is then
        the prior, the constant minimiser of ``L``) or zeros (uniform probabilities).
    """

    name: ClassVar[str] = "mcrank"
    needs_integer_labels: ClassVar[bool] = True

    def __init__(
        self,
        *,
        max_label: int | None = None,
        friedman_factor: bool = True,
        init: str = "prior",
    ) -> None:
        if max_label is not None:
            if isinstance(max_label, bool) or int(max_label) != max_label:
                raise ValueError(f"max_label={max_label!r} must be an integer grade")
            max_label = int(max_label)
            if not 1 <= max_label <= MCRANK_MAX_LABEL:
                raise ValueError(
                    f"max_label={max_label} must be between 1 and {MCRANK_MAX_LABEL}"
                )
        if init not in ("prior", "zero"):
            raise ValueError(f"init={init!r} is not one of ('prior', 'zero')")
        super().__init__(
            max_label=max_label, friedman_factor=bool(friedman_factor), init=init
        )

    def _grades(self, data: RankingDataset) -> tuple[NDArray[np.float64], int]:
        """Validated labels and K (resolved from the labels the first time)."""
        y = _labels(data, self.name)
        _check_integer_grades(data, self.name)
        top = int(y.max()) if y.size else 0
        K = self.params["max_label"]
        if K is None:
            if top > MCRANK_MAX_LABEL:
                row = int(np.argmax(y))
                raise LTRInputError(
                    f"label y[{row}]={top} is larger than {MCRANK_MAX_LABEL}, the "
                    "largest grade 'mcrank' accepts (one tree per grade per round); "
                    "re-map the labels or use 'mart' / 'lambdamart'",
                    line=row,
                )
            K = max(1, top)
            self.params["max_label"] = K
        elif top > K:
            row = int(np.argmax(y))
            raise LTRInputError(
                f"label y[{row}]={top} is larger than max_label={K} (the classes this "
                "objective was prepared with); pass max_label= explicitly to cover it",
                line=row,
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
        w = _weights_float64(data, y.shape[0])
        counts = np.bincount(y.astype(np.int64), weights=w, minlength=C)
        total = float(counts.sum())
        prior = counts / total if total > 0 else np.full(C, 1.0 / C)
        log_prior = np.log(np.maximum(prior, _PRIOR_EPS))
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
            _weights_or_empty(data),
            factor,
            gradients_out,
            hessians_out,
        )

    def loss(self, scores: NDArray[np.float64], data: RankingDataset) -> float:
        y, K = self._grades(data)
        scores = np.asarray(scores, dtype=np.float64)
        if scores.shape != (K + 1, y.shape[0]):
            raise ValueError(
                f"scores has shape {scores.shape}, expected {(K + 1, y.shape[0])}"
            )
        log_p = _log_softmax(scores)
        rows = np.arange(y.shape[0])
        nll = -log_p[y.astype(np.int64), rows]
        return float(np.dot(_weights_float64(data, y.shape[0]), nll))

    def predict_proba(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Class probabilities, shape (n_samples, n_outputs); each row sums to 1."""
        raw = np.asarray(raw_scores, dtype=np.float64)
        if raw.ndim != 2 or raw.shape[0] < 2:
            raise ValueError(
                f"raw_scores has shape {raw.shape}, expected (n_outputs, n_samples)"
            )
        return np.exp(_log_softmax(raw)).T

    def transform(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Expected grade ``sum_k k p_k`` (Li et al. 2007), shape (n_samples,)."""
        proba = self.predict_proba(raw_scores)
        return proba @ np.arange(proba.shape[1], dtype=np.float64)


def _normalise_label_scale(
    spec: Mapping[Any, float] | Sequence[float] | None,
) -> dict[float, float] | None:
    """Canonical ``{grade: scale}`` (float keys) from a mapping or a sequence."""
    if spec is None:
        return None
    if isinstance(spec, Mapping):
        items = list(spec.items())
    elif isinstance(spec, (str, bytes)) or not isinstance(spec, Sequence | np.ndarray):
        raise ValueError(
            f"label_scale={spec!r} must be None, a mapping {{grade: scale}} or a "
            "sequence of scales indexed by grade"
        )
    else:
        items = list(enumerate(spec))
    out: dict[float, float] = {}
    for grade, scale in items:
        try:
            g, c = float(grade), float(scale)
        except (TypeError, ValueError):
            raise ValueError(
                f"label_scale entry {grade!r}: {scale!r} is not a number"
            ) from None
        if not (math.isfinite(c) and c > 0):
            raise ValueError(
                f"label_scale[{grade!r}]={scale!r}: scales must be finite and > 0"
            )
        out[g] = c
    return out


def _label_scales(
    y: NDArray[np.float64], threshold: float, spec: dict[float, float] | None
) -> NDArray[np.float64]:
    """Per-document scale ``c_d`` (float64) from the labels."""
    if spec is None:
        return np.where(y >= threshold, y - threshold + 1.0, 1.0)
    grades, inverse = np.unique(y, return_inverse=True)
    per_grade = np.array([spec.get(float(g), 1.0) for g in grades], dtype=np.float64)
    return per_grade[inverse.ravel()]


def _log_softmax(raw: NDArray[np.float64]) -> NDArray[np.float64]:
    """Log-softmax over axis 0 of (n_classes, n) scores (max-shifted for safety)."""
    shifted = raw - raw.max(axis=0, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=0, keepdims=True))


# --- kernels ---


@parallel_kernel
def _mart_gradient_hessian(scores, y, weights, gradients, hessians):
    """g = 2 w (s - y), h = 2 w for every document.

    scores : (n,) float64  # IN
    y : (n,) float64  # IN
    weights : (n,) or (0,) float32; empty means all ones  # IN
    gradients, hessians : (n,) float32  # OUT
    """
    n = scores.shape[0]
    weighted = weights.shape[0] > 0
    for i in prange(n):
        w = np.float64(weights[i]) if weighted else 1.0
        gradients[i] = 2.0 * w * (scores[i] - y[i])
        hessians[i] = 2.0 * w


@parallel_kernel
def _logistic_rank_gradient_hessian(
    scores, y, threshold, scales, weights, gradients, hessians
):
    """Friedman two-class deviance with per-document scale c (see LogisticRank).

    g = -w c u with u = 2 t sigmoid(-2 t s); h = w c |u| (2 - |u|)
      = 4 w c sigmoid(-2 t s) sigmoid(2 t s).

    scores : (n,) float64  # IN
    y : (n,) float64; t = +1 where y >= threshold else -1  # IN
    scales : (n,) float64, c > 0  # IN
    weights : (n,) or (0,) float32; empty means all ones  # IN
    gradients, hessians : (n,) float32  # OUT
    """
    n = scores.shape[0]
    weighted = weights.shape[0] > 0
    for i in prange(n):
        t = 1.0 if y[i] >= threshold else -1.0
        m = 2.0 * t * scores[i]
        # q = sigmoid(-m) = P(wrong class); 1 - q computed without cancellation
        if m >= 0.0:
            e = math.exp(-m)
            q = e / (1.0 + e)
            one_minus_q = 1.0 / (1.0 + e)
        else:
            e = math.exp(m)
            q = 1.0 / (1.0 + e)
            one_minus_q = e / (1.0 + e)
        wc = scales[i] * (np.float64(weights[i]) if weighted else 1.0)
        gradients[i] = -wc * 2.0 * t * q  # -w c u
        hessians[i] = wc * 4.0 * q * one_minus_q  # w c |u| (2 - |u|)


@parallel_kernel
def _mcrank_gradient_hessian(scores, y, weights, factor, gradients, hessians):
    """Per document: g_k = w (p_k - 1[y=k]), h_k = w * factor * p_k (1 - p_k).

    scores : (C, n) float64  # IN
    y : (n,) float64 integer grades in 0..C-1  # IN
    weights : (n,) or (0,) float32; empty means all ones  # IN
    factor : float, C / (C - 1) (Friedman) or 1  # IN
    gradients, hessians : (C, n) float32  # OUT
    """
    C = scores.shape[0]
    n = scores.shape[1]
    weighted = weights.shape[0] > 0
    for i in prange(n):
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


def _mart_gradient_hessian_reference(
    scores: NDArray[np.float64],
    y: NDArray[np.float64],
    weights: NDArray[np.float32] | None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    w = np.ones_like(y) if weights is None else weights.astype(np.float64)
    return 2.0 * w * (scores - y), 2.0 * w


def _logistic_rank_gradient_hessian_reference(
    scores: NDArray[np.float64],
    y: NDArray[np.float64],
    threshold: float,
    scales: NDArray[np.float64],
    weights: NDArray[np.float32] | None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    w = np.ones_like(y) if weights is None else weights.astype(np.float64)
    t = np.where(y >= threshold, 1.0, -1.0)
    # Friedman's pseudo-response y~ = 2t / (1 + exp(2 t s)), written via logaddexp
    u = 2.0 * t * np.exp(-np.logaddexp(0.0, 2.0 * t * scores))
    abs_u = np.abs(u)
    return -w * scales * u, w * scales * abs_u * (2.0 - abs_u)


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

"""LogisticRank (seed 002): pointwise logistic loss with per-grade scaling.

The derivation of its gradients and hessians, and why the Newton leaf is the seed's
``gamma``, is in ``docs/theory.md`` (section "LogisticRank").
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ltrboost._callsite import external_stacklevel
from ltrboost._numba import POINTWISE_ROWS_PER_THREAD, kernel, over_rows
from ltrboost.dataset import RankingDataset
from ltrboost.objectives.base import (
    PRIOR_EPS,
    Objective,
    dataset_cached,
    dataset_labels,
    doc_weights,
    doc_weights_float64,
    finite_real,
    grades_text,
    identity_transform,
    one_sided_threshold,
    single_output_scores,
    single_output_views,
    threshold_range_text,
)
from ltrboost.objectives.registry import register
from ltrboost.params import ParameterError, ParameterWarning


@register
class LogisticRank(Objective):
    """Yahoo's LogisticRank: pointwise logistic loss with per-grade scaling (seed 002).

    Targets ``t_d = +1`` if ``y_d >= positive_threshold`` else ``-1``; Friedman's
    two-class deviance weighted by a per-grade scale ``c_d`` and the document weight::

        L = sum_d w_d c_d log(1 + exp(-2 t_d s_d))                        (LR-1)
        g_d = -w_d c_d u_d,   h_d = w_d c_d |u_d| (2 - |u_d|)              (LR-2, LR-3)

    with ``u_d = 2 t_d / (1 + exp(2 t_d s_d))`` (Friedman's ``y~``), so the Newton leaf
    ``-G / H`` is exactly seed 002's ``gamma = sum y~ / sum |y~| (2 - |y~|)`` (LR-4).
    Derivation, the scaled case and why Friedman's factor 2: ``docs/theory.md``,
    section "LogisticRank".

    Parameters
    ----------
    positive_threshold : float or None, default=None
        Grades ``>= positive_threshold`` are positive.  None resolves at :meth:`prepare`
        to ``max(1, ceil(K / 2))`` with ``K`` the largest training grade, and stores the
        value in the parameters.  On the 5-grade scale (0 bad .. 4 perfect) this is 2:
        perfect, excellent and good are positive, fair and bad negative (seed 002's
        three scaled grades; Yahoo's choice).  Binary 0/1 labels get 1.  A threshold,
        given or resolved, that makes every training document (of positive weight) one
        class while they hold two grades or more (``10`` on 0..4; None on grades 1, 2
        resolves to 1) leaves nothing to learn: training refuses it
        (:class:`~ltrboost.params.ParameterError` naming the grades).
    label_scale : None, mapping or sequence, default=None
        Scale ``c`` of each grade.  None: ``y - positive_threshold + 1`` for positives
        and 1 for negatives (on 0..4: perfect 3, excellent 2, good 1, others 1; seed
        002).  A mapping ``{grade: scale}`` (keys may be strings, as after a JSON round
        trip: ``{"4": 3}`` scales grade 4; grades not listed get 1, not the default's
        scale; ``{}`` turns scaling off), or a sequence whose ``k``-th entry is the
        scale of grade ``k``.  Scales must be finite and > 0.  A grade that no
        training document has is ignored, with a
        :class:`~ltrboost.params.ParameterWarning` naming it.
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
    learns_across_queries: ClassVar[bool | None] = True  # pointwise

    def __init__(
        self,
        *,
        positive_threshold: float | None = None,
        label_scale: Mapping[Any, float] | Sequence[float] | None = None,
        init: str = "logodds",
    ) -> None:
        if positive_threshold is not None:
            positive_threshold = finite_real("positive_threshold", positive_threshold)
        if init not in ("logodds", "mean", "zero"):
            raise ValueError(f"init={init!r} is not one of ('logodds', 'mean', 'zero')")
        # None resolves at prepare(): the refusal of a one-class threshold says so
        self._threshold_given = positive_threshold is not None
        super().__init__(
            positive_threshold=positive_threshold,
            label_scale=_normalise_label_scale(label_scale),
            init=init,
        )

    # -- per-dataset constants ---------------------------------------------------------

    def continue_model(self, model_params: dict[str, Any]) -> None:
        """Remember the continued model's threshold: :meth:`_threshold` warns when the
        new labels resolve another one (its trees separate other classes)."""
        self._model_threshold = model_params.get("positive_threshold")

    _model_threshold: float | None = None

    def _threshold(self, y: NDArray[np.float64]) -> float:
        t = self.params["positive_threshold"]
        if t is None:
            top = float(y.max()) if y.size else 0.0
            t = default_positive_threshold(y)
            self.params["positive_threshold"] = t
            was = self._model_threshold
            if was is not None and float(was) != t:
                warnings.warn(
                    f"logistic_rank: positive_threshold resolves to {t:g} on these labels "
                    f"(largest grade {top:g}), but the model being continued was "
                    f"trained with {float(was):g}: its trees and the new ones separate "
                    f"different classes; pass positive_threshold={float(was):g} to keep "
                    "the model's",
                    ParameterWarning,
                    stacklevel=external_stacklevel(),
                )
        return float(t)

    def check_training_labels(self, data: RankingDataset) -> None:
        """Refuse a ``positive_threshold`` (given, or resolved from the labels) that
        makes every training document one class while they hold two grades or more:
        the loss then has one class and the trees learn nothing (it trained every
        round, then warned that the model was constant).  Warn about ``label_scale``
        grades the training labels do not hold (ignored)."""
        y, _, t = self._targets(data)
        weights = data.weights
        one_sided = one_sided_threshold(y, t, weights)
        if one_sided is not None:
            every, weighted, grades = one_sided
            side = "positive" if every == "every" else "negative"
            given = (
                f"positive_threshold={t:g}"
                if self._threshold_given
                else f"positive_threshold=None resolves to {t:g} (max(1, ceil(largest "
                "grade / 2))) and"
            )
            raise ParameterError(
                f"{given} makes every training document{weighted} {side} (positives "
                f"are y >= positive_threshold; the labels hold {grades}): logistic_rank "
                "has one class and learns nothing; "
                + threshold_range_text("positive_threshold", y, weights)
            )
        spec = self.params["label_scale"]
        if spec:
            present = set(np.unique(y).tolist())
            unknown = sorted(g for g in spec if g not in present)
            if unknown:
                s = "s" if len(unknown) > 1 else ""
                warnings.warn(
                    f"label_scale names grade{s} "
                    + ", ".join(f"{g:g}" for g in unknown)
                    + f" that no training document has (the labels hold {grades_text(y)}): "
                    "ignored; a grade label_scale does not name gets scale 1",
                    ParameterWarning,
                    stacklevel=external_stacklevel(),
                )

    def constant_model_cause(self, data: RankingDataset) -> str | None:
        """Every grade on one side of ``positive_threshold``: one class only."""
        t = self.params["positive_threshold"]
        positive = np.asarray(data.y) >= t
        if positive.all() or not positive.any():
            side = "positive" if positive.all() else "negative"
            return f"every document is {side} under positive_threshold={t:g}"
        return None

    def _targets(
        self, data: RankingDataset
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
        """(labels, per-document scales c_d, threshold); scales cached on ``data``."""
        y = dataset_labels(data, self.name)
        t = self._threshold(y)
        scale_spec = self.params["label_scale"]
        key = (
            self.name,
            t,
            None if scale_spec is None else tuple(sorted(scale_spec.items())),
        )
        scales = dataset_cached(
            data, ("logistic_rank_scales", *key), lambda: _label_scales(y, t, scale_spec)
        )
        return y, scales, t

    def prepare(self, data: RankingDataset) -> None:
        self._targets(data)

    def init_score(self, data: RankingDataset) -> NDArray[np.float64]:
        if self.params["init"] == "zero" or data.n_samples == 0:
            return np.zeros(1, dtype=np.float64)
        y, c, t = self._targets(data)
        mass = doc_weights_float64(data, y.shape[0]) * c
        total = float(mass.sum())
        p = float(mass[y >= t].sum()) / total if total > 0 else 0.5
        p = min(max(p, PRIOR_EPS), 1.0 - PRIOR_EPS)
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
        s, g, h = single_output_views(scores, gradients_out, hessians_out, y.shape[0])
        _logistic_rank_gradient_hessian(s, y, t, c, doc_weights(data), g, h)

    def loss(self, scores: NDArray[np.float64], data: RankingDataset) -> float:
        y, c, t = self._targets(data)
        s = single_output_scores(scores, y.shape[0])
        sign = np.where(y >= t, 1.0, -1.0)
        w = doc_weights_float64(data, y.shape[0])
        return float(np.dot(w * c, np.logaddexp(0.0, -2.0 * sign * s)))

    def transform(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Rank by the raw score (identity; P(relevant) = sigmoid(2 s) is monotone)."""
        return identity_transform(raw_scores)


def default_positive_threshold(y: NDArray[np.float64]) -> float:
    """The threshold ``positive_threshold=None`` resolves to on the training labels
    ``y``: ``max(1, ceil(K / 2))`` with ``K`` the largest grade (0 for no label)."""
    top = float(np.max(y)) if np.size(y) else 0.0
    return float(max(1.0, math.ceil(top / 2.0)))


def grade_scales(
    grades: NDArray[np.float64],
    threshold: float,
    label_scale: Mapping[Any, float] | Sequence[float] | None,
) -> NDArray[np.float64]:
    """The scale ``c`` each of ``grades`` trains with under ``positive_threshold``
    ``threshold`` (resolved) and ``label_scale`` as given (a mapping, a sequence or
    None: the default's ``y - threshold + 1`` for positives); equal scales train the
    same rounds however ``label_scale`` spells them (``ltrboost train --resume``)."""
    g = np.asarray(grades, dtype=np.float64)
    return _label_scales(g, float(threshold), _normalise_label_scale(label_scale))


def _normalise_label_scale(
    spec: Mapping[Any, float] | Sequence[float] | None,
) -> dict[float, float] | None:
    """Canonical ``{grade: scale}`` (float keys) from a mapping or a sequence; a boolean
    grade or scale, or a grade given twice (``{1: 2.0, "1": 3.0}``), is refused."""
    if spec is None:
        return None
    if isinstance(spec, Mapping):
        items = list(spec.items())
    elif isinstance(spec, str) and spec.lstrip()[:1] in ("{", "["):
        # the CLI passes on, as text, a value that is not JSON (unquoted grades)
        raise ValueError(
            f"label_scale={spec!r} is not valid JSON: write a mapping with the grades "
            "in double quotes, '{\"4\": 3, \"3\": 2}', or a list, '[1, 1, 1, 2, 3]'"
        )
    elif isinstance(spec, (str, bytes)) or not isinstance(spec, Sequence | np.ndarray):
        raise ValueError(
            f"label_scale={spec!r} must be None, a mapping {{grade: scale}} or a "
            "sequence of scales indexed by grade"
        )
    else:
        items = list(enumerate(spec))
    out: dict[float, float] = {}
    typed: dict[float, Any] = {}  # each grade as the caller wrote it
    for grade, scale in items:
        if isinstance(grade, bool | np.bool_) or isinstance(scale, bool | np.bool_):
            raise ValueError(
                f"label_scale entry {grade!r}: {scale!r}: grades and scales are numbers, "
                "not booleans"
            )
        try:
            g, c = float(grade), float(scale)
        except (TypeError, ValueError):
            raise ValueError(f"label_scale entry {grade!r}: {scale!r} is not a number") from None
        if g in out:
            raise ValueError(f"label_scale gives grade {g:g} twice ({typed[g]!r}, {grade!r})")
        typed[g] = grade
        if not (math.isfinite(c) and c > 0):
            raise ValueError(f"label_scale[{grade!r}]={scale!r}: scales must be finite and > 0")
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


# --- kernels ---


def _logistic_rank_gradient_hessian(scores, y, threshold, scales, weights, gradients, hessians):
    """Friedman two-class deviance with per-document scale c (see LogisticRank).

    g = -w c u with u = 2 t sigmoid(-2 t s); h = w c |u| (2 - |u|)
      = 4 w c sigmoid(-2 t s) sigmoid(2 t s).

    scores : (n,) float64  # IN
    y : (n,) float64; t = +1 where y >= threshold else -1  # IN
    scales : (n,) float64, c > 0  # IN
    weights : (n,) or (0,) float32; empty means all ones  # IN
    gradients, hessians : (n,) float32  # OUT
    """
    # Documents are independent: blocks of rows on threads (no parfor to compile).
    over_rows(
        _logistic_rank_gradient_hessian_rows,
        scores.shape[0],
        scores,
        y,
        threshold,
        scales,
        weights,
        gradients,
        hessians,
        min_rows_per_thread=POINTWISE_ROWS_PER_THREAD,
    )


@kernel
def _logistic_rank_gradient_hessian_rows(
    r0, r1, scores, y, threshold, scales, weights, gradients, hessians
):
    # rows r0..r1-1 of _logistic_rank_gradient_hessian
    weighted = weights.shape[0] > 0
    for i in range(r0, r1):
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


# --- references ---


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

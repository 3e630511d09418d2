"""Checks of training parameters and of the numbers a training run produces.

* :func:`check_param_types`: integer parameters are integers (not ``1.5``, not
  ``True``), real parameters are finite real numbers (not complex, not ``inf``),
  booleans are booleans; a parameter whose default is not None may not be None.
  Called by :meth:`ltrboost.booster.BoosterParams.validate`, before any range check.
* :func:`check_round_finite`: after each tree, the gradients, the tree's leaf values
  and the updated scores must be finite; the first non-finite one stops training with
  :class:`NonFiniteTrainingError` naming the round, what went non-finite and the
  magnitudes that usually cause it (a huge ``learning_rate`` or ``sigma``, huge labels
  or weights), instead of training every round and failing only at save time (CLI) or
  returning NaN scores (Python).  So does a tree whose leaf values made every training
  score of an output one number where they held several before (a leaf value
  swamping them, e.g. a Newton step on hessians that vanished at saturated scores):
  the model would rank every document alike from that round on.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import MISSING, fields
from typing import Any

import numpy as np

from ltrboost.params import (
    BOOL_PARAM_NAMES,
    INT_PARAM_NAMES,
    NONE_MEANS_DEFAULT,
    REAL_PARAM_NAMES,
)

# parameter names by type: from the one parameter list (ltrboost.params)
INT_PARAMS = INT_PARAM_NAMES
REAL_PARAMS = REAL_PARAM_NAMES
BOOL_PARAMS = BOOL_PARAM_NAMES


class NonFiniteTrainingError(ValueError):
    """Training produced NaN or inf (gradients, leaf values or scores), or a tree whose
    leaf values collapsed the training scores into one number."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)


def check_param_types(params: Any) -> None:
    """Raise ValueError naming the first parameter of the wrong type or non-finite."""
    defaults = {f.name: (None if f.default is MISSING else f.default) for f in fields(params)}
    for name in INT_PARAMS + REAL_PARAMS + BOOL_PARAMS:
        v = getattr(params, name)
        if v is None:
            if defaults.get(name) is not None and name not in NONE_MEANS_DEFAULT:
                raise ValueError(f"{name}=None is not allowed (default {defaults[name]})")
            continue
        if name in INT_PARAMS and not _is_int(v):
            raise ValueError(f"{name}={v!r} must be an integer")
        if name in REAL_PARAMS:
            if not _is_real(v):
                raise ValueError(f"{name}={v!r} must be a real number")
            if not _finite_number(v):  # an int beyond float64 (10**400) too
                raise ValueError(f"{name}={_short_repr(v)} must be finite (a float64)")
        if name in BOOL_PARAMS and not isinstance(v, bool | np.bool_):
            raise ValueError(f"{name}={v!r} must be True or False")
    for name in ("tau", "label_scale"):  # numbers or names: numbers must be finite
        v = getattr(params, name)
        # a mapping's scales too: {"1": inf} of an objective that ignores it passed,
        # trained, and failed writing the model ("Out of range float values ...")
        if isinstance(v, Mapping):
            values = list(v.values())
        else:
            values = v if isinstance(v, list | tuple) else [v]
        for x in values:
            if isinstance(x, complex | np.complexfloating) or (
                _is_real(x) and not _finite_number(x)
            ):
                raise ValueError(f"{name}={_short_repr(v)} must hold finite real numbers")


def _short_repr(v: Any) -> str:
    """``repr(v)``, its middle left out when longer than 60 characters (10**400).  An
    int of more than 4300 digits, which Python will not write out (``sys.
    get_int_max_str_digits``: the ``repr`` itself raises ValueError), or anything
    holding one, is described instead."""
    try:
        r = repr(v)
    except ValueError:
        if isinstance(v, int):
            digits = int(abs(v).bit_length() * math.log10(2)) + 1
            return f"<{'a negative' if v < 0 else 'an'} int of about {digits} digits>"
        return f"<a {type(v).__name__} too long to write out>"
    return r if len(r) <= 60 else f"{r[:24]}...{r[-8:]} ({len(r)} characters)"


# A code point UTF-8 cannot encode: a surrogate alone (Python strings may hold one, from
# "\ud800", a JSON escape or a file name decoded with surrogateescape)
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate of ``text`` (a code point UTF-8 cannot encode), as
    ``\\udXXX`` text; None when ``text`` is valid Unicode text."""
    m = _SURROGATE.search(text)
    return None if m is None else f"\\u{ord(m.group()):04x}"


def without_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``, six
    characters): UTF-8 text that still tells two such names apart."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _finite_number(x: Any) -> bool:
    """``math.isfinite(x)``, False for an int beyond float64 (it raised OverflowError)."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _all_finite(a: np.ndarray) -> bool:
    return _finite_range(a) is not None


def _finite_range(a: np.ndarray) -> tuple[float, float] | None:
    """``(min, max)`` of ``a`` when every value is finite (``(0, 0)`` when empty); None
    when one is NaN or inf (NaN propagates through both)."""
    if a.size == 0:
        return (0.0, 0.0)
    lo, hi = float(a.min()), float(a.max())
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None


def check_round_finite(
    iteration: int,
    *,
    gradients: np.ndarray | None = None,
    hessians: np.ndarray | None = None,
    leaf_values: np.ndarray | None = None,
    hessian_sums: np.ndarray | None = None,
    scores: np.ndarray | None = None,
    params: Any = None,
    train_set: Any = None,
    learning_rate: float | None = None,
    previous_range: tuple[float, float] | None = None,
    output: tuple[int, int] | None = None,
) -> tuple[float, float] | None:
    """Raise :class:`NonFiniteTrainingError` if the tree or the scores hold NaN/inf, or
    if the tree made the scores one number; return the scores' ``(min, max)`` (None
    without ``scores``), the ``previous_range`` of the next round's check.

    Per tree only the leaf values and the nodes' hessian sums (a few numbers) and the
    scores (two passes) are read; a NaN or inf gradient always reaches a leaf value
    (its leaf's sum), an inf hessian a hessian sum (the root's; its leaf value
    ``-G/inf`` is a finite 0), and only then are the gradients and hessians looked at,
    to name the first non-finite one.

    ``previous_range`` is the scores' ``(min, max)`` before the tree was added (None:
    unknown, the first round a run trains). Scores that held several values and hold
    one after the tree lost every difference to a leaf value that swamped them
    (``5e26 + 676 == 5e26 - 1921``): from then on the model ranks every document
    alike, and later trees cannot undo it. No tree fitted to gradients makes
    different scores equal otherwise, so this stops training too. ``output``:
    ``(k, n_outputs)`` of a multi-output objective's (mcrank's) k-th scores, named so.
    """
    bad = None
    score_range = None
    leaves_bad = leaf_values is not None and not _all_finite(np.asarray(leaf_values))
    if leaves_bad or (hessian_sums is not None and not _all_finite(np.asarray(hessian_sums))):
        bad = "leaf values" if leaves_bad else "hessians"
        for what, arr in (("gradients", gradients), ("hessians", hessians)):
            if arr is not None and not _all_finite(np.asarray(arr)):
                bad = what
                break
    elif scores is not None:
        a = np.asarray(scores)
        score_range = _finite_range(a)
        if score_range is None:
            bad = "training scores"
        elif a.size == 0:
            score_range = None  # a Dask shard without rows: no range to merge
    if bad is not None:
        raise NonFiniteTrainingError(
            f"round {iteration + 1}: the {bad} are not finite (NaN or inf), "
            f"training stopped; {_likely_causes(params, train_set, learning_rate)}"
        )
    check_scores_collapsed(
        iteration, previous_range, score_range, leaf_values, params=params,
        train_set=train_set, learning_rate=learning_rate, output=output,
    )  # fmt: skip
    return score_range


def check_scores_collapsed(
    iteration: int,
    previous_range: tuple[float, float] | None,
    score_range: tuple[float, float] | None,
    leaf_values: np.ndarray | None,
    *,
    params: Any = None,
    train_set: Any = None,
    learning_rate: float | None = None,
    output: tuple[int, int] | None = None,
) -> None:
    """Raise :class:`NonFiniteTrainingError` when the scores' ``(min, max)`` went from
    several values (``previous_range``, before the tree) to one (``score_range``);
    None for either: unknown, nothing checked. Dask's driver calls it with the range
    of every shard's scores, as :func:`check_round_finite` does with one process's."""
    if (
        score_range is None
        or previous_range is None
        or previous_range[0] == previous_range[1]
        or score_range[0] != score_range[1]
    ):
        return
    of_output = "" if output is None else f" of output {output[0]} (of {output[1]})"
    raise NonFiniteTrainingError(
        f"round {iteration + 1}: the tree made every training score{of_output} "
        f"{score_range[0]:g} (they were {previous_range[0]:g} to "
        f"{previous_range[1]:g}): its leaf values, up to {_largest(leaf_values):g}, "
        "swamped their differences, and the model would rank every document alike; "
        "training stopped; "
        + _likely_causes(
            params,
            train_set,
            learning_rate,
            cause="a Newton step -G/H on hessians that vanished where the scores saturated",
            remedy="lower learning_rate or raise l2_regularization",
        )
    )


def _largest(values: Any) -> float:
    """The largest magnitude among ``values`` (0 when there are none)."""
    a = np.abs(np.asarray(values if values is not None else [], dtype=np.float64))
    return float(a.max()) if a.size else 0.0


def _likely_causes(
    params: Any,
    train_set: Any,
    learning_rate: float | None,
    cause: str = "a parameter or data too large for float arithmetic",
    remedy: str = "lower learning_rate (or another parameter listed), or rescale labels/weights",
) -> str:
    parts = []
    if learning_rate is not None:
        parts.append(f"learning_rate={learning_rate:g}")
    if params is not None:
        for name in ("sigma", "l2_regularization", "tau"):
            v = getattr(params, name, None)
            if v is not None and not isinstance(v, str):  # tau="grade_difference"
                parts.append(f"{name}={v:g}")
        scale = getattr(params, "label_scale", None)
        if scale is not None and len(scale):  # logistic_rank's, a mapping or a sequence
            values = scale.values() if isinstance(scale, Mapping) else scale
            parts.append(f"label_scale up to {max(float(c) for c in values):g}")
    if train_set is not None:
        y = getattr(train_set, "y", None)
        if y is not None and y.size:
            parts.append(f"labels up to {float(np.max(np.abs(y))):g}")
        w = getattr(train_set, "weights", None)
        if w is not None and w.size:
            parts.append(f"weights up to {float(np.max(w)):g}")
        pairs = getattr(train_set, "pairs", None)
        pw = None if pairs is None else pairs.weight
        if pw is not None and np.size(pw):
            parts.append(f"pair weights up to {float(np.max(pw)):g}")
    return f"likely cause: {cause} ({', '.join(parts)}); {remedy}"

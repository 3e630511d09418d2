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
  returning NaN scores (Python).
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
    """Training produced NaN or inf (gradients, leaf values or scores)."""


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
        values = v if isinstance(v, list | tuple) else [v]
        for x in values:
            if isinstance(x, complex | np.complexfloating) or (
                _is_real(x) and not _finite_number(x)
            ):
                raise ValueError(f"{name}={_short_repr(v)} must hold finite real numbers")


def _short_repr(v: Any) -> str:
    """``repr(v)``, its middle left out when longer than 60 characters (10**400)."""
    r = repr(v)
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
    if a.size == 0:
        return True
    return bool(np.isfinite(a.min()) and np.isfinite(a.max()))  # NaN propagates


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
) -> None:
    """Raise :class:`NonFiniteTrainingError` if the tree or the scores hold NaN/inf.

    Per tree only the leaf values and the nodes' hessian sums (a few numbers) and the
    scores (two passes) are read; a NaN or inf gradient always reaches a leaf value
    (its leaf's sum), an inf hessian a hessian sum (the root's; its leaf value
    ``-G/inf`` is a finite 0), and only then are the gradients and hessians looked at,
    to name the first non-finite one.
    """
    bad = None
    leaves_bad = leaf_values is not None and not _all_finite(np.asarray(leaf_values))
    if leaves_bad or (hessian_sums is not None and not _all_finite(np.asarray(hessian_sums))):
        bad = "leaf values" if leaves_bad else "hessians"
        for what, arr in (("gradients", gradients), ("hessians", hessians)):
            if arr is not None and not _all_finite(np.asarray(arr)):
                bad = what
                break
    elif scores is not None and not _all_finite(np.asarray(scores)):
        bad = "training scores"
    if bad is not None:
        raise NonFiniteTrainingError(
            f"round {iteration + 1}: the {bad} are not finite (NaN or inf), "
            f"training stopped; {_likely_causes(params, train_set, learning_rate)}"
        )


def _likely_causes(params: Any, train_set: Any, learning_rate: float | None) -> str:
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
    return (
        "likely cause: a parameter or data too large for float arithmetic ("
        + ", ".join(parts)
        + "); lower learning_rate (or another parameter listed), or rescale labels/weights"
    )

"""Custom objectives: a Python (or Numba) callable that returns gradients and hessians.

``objective=fn`` in :class:`ltrboost.Ranker` and :func:`ltrboost.train` trains with a
user loss::

    grad, hess = fn(scores, labels, query_offsets)

* ``scores`` (float64, ``(n_samples,)``): the current raw scores of the training rows;
* ``labels`` (float64, ``(n_samples,)``): their labels;
* ``query_offsets`` (int64, ``(n_queries + 1,)``): rows
  ``query_offsets[q]:query_offsets[q + 1]`` are query ``q``.

Rows are in query order (the training set grouped by query, rows of one query
contiguous), which differs from the caller's row order only when the rows of a query
are not together (queries come in order of first appearance).
The three arrays are read-only.  ``grad`` and ``hess`` are ``dL/ds`` and ``d2L/ds2`` per
document: float arrays of shape ``(n_samples,)``, finite (in float32, the engine's
precision), ``hess >= 0``; anything else stops training with a ``ValueError`` naming the
round (from 1).  The function is called once per round with every query, so a
``numba.njit`` function loops over all queries in compiled code (docs/custom.md); on
Dask once per round on each worker, with that worker's shard of whole queries.

The tree engine is unchanged: leaves are Newton steps ``-G / (H + l2)`` of these
gradients and hessians.  ``split_criterion="se"`` works too (it uses the same gradients);
``"ole"`` needs per-pair hessian terms a callable does not provide and is refused.

The model file stores the objective as the name ``"custom:<fn.__name__>"`` with no
parameters (a callable without ``__name__`` by its type's name, as a callable
``eval_metric`` is named; a ``__name__`` that is no string, empty, blank or holding a
control character is refused): such a model predicts (prediction needs no gradient;
scores are the raw scores), but continuing its training (``init_model=``,
``--resume``) needs the callable again (``objective=fn``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import G_H_DTYPE
from ltrboost.dataset import RankingDataset
from ltrboost.objectives.base import (
    Objective,
    dataset_labels,
    identity_transform,
    single_output_views,
)

CUSTOM_PREFIX = "custom:"
_G_H_MAX = float(np.finfo(G_H_DTYPE).max)


def is_custom(objective: Any) -> bool:
    """True for a callable objective or a ``"custom:<name>"`` model-file name."""
    return callable(objective) or (
        isinstance(objective, str) and objective.startswith(CUSTOM_PREFIX)
    )


def custom_name(function: Callable) -> str:
    """The model-file name of a callable objective: ``"custom:<name>"``, its name by
    the rule of a callable ``eval_metric``
    (:func:`ltrboost._evaluation.callable_name`: ``__name__``, else the type's name), so
    a model file and an eval log name the same callable alike; a name a metric may not
    have (not a string, empty, blank or holding a control character) is refused
    (``ValueError`` naming ``objective``)."""
    from ltrboost._evaluation import recorded_callable_name

    name = recorded_callable_name(
        function,
        "objective",
        'a custom objective is recorded by its name ("custom:<name>" in the model file)',
    )
    return CUSTOM_PREFIX + name


class CustomObjective(Objective):
    """A user loss given as ``fn(scores, labels, query_offsets) -> (grad, hess)``.

    Parameters
    ----------
    function : callable or None
        The gradient function; None for a model loaded from a file (prediction only).
    name : str, optional
        The registry name, ``"custom:<name>"``; default from ``function.__name__``.
    """

    name: ClassVar[str] = "custom"  # the instance's own name is set in __init__
    learns_across_queries: ClassVar[bool | None] = None  # pointwise or pairwise: unknown

    def __init__(self, function: Callable | None = None, *, name: str | None = None) -> None:
        super().__init__()
        if function is not None and not callable(function):
            raise TypeError(f"a custom objective must be callable, not {type(function).__name__}")
        self.function = function
        if name is None:
            name = custom_name(function) if function is not None else CUSTOM_PREFIX + "objective"
        elif not name.startswith(CUSTOM_PREFIX):
            name = CUSTOM_PREFIX + name
        self.name = name  # instance attribute: "custom:<fn name>"
        self._arrays: tuple | None = None
        # hess == 0 everywhere leaves nothing to learn unless l2_regularization > 0 and
        # min_sum_hessian_in_leaf == 0 (then leaves are -G / l2): set from the params
        self.needs_curvature = True
        # a Dask shard defers the check: each round's (any hess, any grad, any float64
        # hess) flags are kept in curvature_flags, and the driver checks those of all
        # shards together (:meth:`check_curvature`), as one machine checks every row's
        self.curvature_deferred = False
        self.curvature_flags: tuple[bool, bool, bool] | None = None

    def get_params(self) -> dict[str, Any]:
        # the callable is not stored; the name carries the objective in the model file
        return {}

    def _require_function(self) -> Callable:
        if self.function is None:
            fname = self.name[len(CUSTOM_PREFIX) :]
            raise ValueError(
                f"objective {self.name!r} is a Python callable that a model file does not "
                f"store: the model predicts, but to train or resume with it pass the "
                f"function again from Python (objective={fname}, a callable (scores, "
                "labels, query_offsets) -> (grad, hess)); see docs/custom.md"
            )
        return self.function

    def prepare(self, data: RankingDataset) -> None:
        self._require_function()
        if data.weights is not None:
            raise ValueError(
                f"objective {self.name!r}: sample weights are not passed to a custom "
                "objective; apply them inside the function (multiply grad and hess)"
            )
        labels = np.array(dataset_labels(data, self.name), dtype=np.float64)
        offsets = np.array(data.query_offsets, dtype=np.int64)
        labels.flags.writeable = False
        offsets.flags.writeable = False
        self._arrays = (data, labels, offsets)

    def _labels_offsets(self, data: RankingDataset):
        if self._arrays is None or self._arrays[0] is not data:
            self.prepare(data)
        return self._arrays[1], self._arrays[2]

    def gradient_hessian(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        gradients_out: NDArray[np.float32],
        hessians_out: NDArray[np.float32],
        iteration: int = 0,
    ) -> None:
        fn = self._require_function()
        labels, offsets = self._labels_offsets(data)
        n = labels.shape[0]
        s, g, h = single_output_views(scores, gradients_out, hessians_out, n)
        s = np.array(s, dtype=np.float64)  # the user gets a copy, never the engine's scores
        s.flags.writeable = False
        try:
            result = fn(s, labels, offsets)
        except ValueError as e:  # numpy's "assignment destination is read-only"
            if "read-only" not in str(e):
                _note(e, self.name, iteration)
                raise
            raise ValueError(
                f"objective {self.name!r} (round {iteration + 1}) wrote into its arguments "
                f"({e}): scores, labels and query_offsets are read-only; write grad and "
                "hess into arrays of your own"
            ) from e
        except Exception as e:  # the traceback of a lambda names neither it nor the round
            _note(e, self.name, iteration)
            raise
        grad, hess = _check_result(result, n, self.name, iteration)
        np.copyto(g, grad, casting="same_kind")
        np.copyto(h, hess, casting="same_kind")
        if self.needs_curvature:
            # on the engine's float32 values: a hess of 1e-50 is 0 there
            flags = (bool(h.any()), bool(g.any()), bool(hess.any()))
            if self.curvature_deferred:
                self.curvature_flags = flags
            else:
                self.check_curvature(iteration, *flags)

    def check_curvature(
        self, iteration: int, any_hess: bool, any_grad: bool, any_hess_64: bool
    ) -> None:
        """Refuse a round whose hessians are 0 for every training document (in float32;
        ``any_hess_64``: some was not in float64) while its gradients are not: such a
        round learns nothing.  Flags of the whole round's documents (on Dask: every
        shard's, combined by the driver)."""
        if any_hess or not any_grad:
            return
        where = " (in float32, the engine's precision)" if any_hess_64 else ""
        raise ValueError(
            f"objective {self.name!r} (round {iteration + 1}): hess is 0 for every "
            f"document{where} while grad is not, so every leaf -G / (H + "
            "l2_regularization) is 0 and no split gains: the model would learn "
            "nothing; return the curvature (a constant such as 1.0 makes each leaf a "
            "gradient step)"
        )

    def loss(self, scores: NDArray[np.float64], data: RankingDataset) -> float:
        raise NotImplementedError(
            f"objective {self.name!r} gives gradients only; its loss value is unknown"
        )

    def transform(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Rank by the raw score (identity)."""
        return identity_transform(raw_scores)


def _note(e: BaseException, name: str, iteration: int) -> None:
    """Note on ``e``, raised by the objective ``name`` in round ``iteration`` (0-based),
    which function raised it and when (as a callback's exception gets); a Numba
    function's compile error about a ``readonly array`` (it wrote into an argument)
    also says that the arguments are read-only."""
    note = f"raised by objective {name!r} in round {iteration + 1}"
    if "readonly array" in str(e):
        note += (
            ": scores, labels and query_offsets are read-only; write grad and hess into "
            "arrays of your own"
        )
    e.add_note(note)


def _check_result(result: Any, n: int, name: str, iteration: int):
    """``(grad, hess)`` as float64 arrays of shape (n,), finite in the engine's
    float32, hess >= 0.  ``iteration`` is 0-based; the message counts rounds from 1,
    as the logs and the engine's non-finite error do."""
    where = f"objective {name!r} (round {iteration + 1})"
    if not isinstance(result, tuple | list) or len(result) != 2:
        got = type(result).__name__
        if isinstance(result, tuple | list):  # "got tuple" read as the right type
            got = f"a {got} of {len(result)} items"
        elif isinstance(result, np.ndarray):
            got = f"one array of shape {result.shape}"
        raise ValueError(f"{where} must return a pair (grad, hess) of arrays, got {got}")
    out = []
    for what, a in zip(("grad", "hess"), result, strict=True):
        try:
            arr = np.asarray(a)
        except Exception as e:  # e.g. ragged sequences
            raise ValueError(f"{where}: {what} is not an array ({e})") from None
        if arr.dtype.kind not in "fiu":
            raise ValueError(f"{where}: {what} must hold real numbers, got dtype {arr.dtype}")
        if arr.shape != (n,):
            raise ValueError(
                f"{where}: {what} has shape {arr.shape}, expected ({n},): one value per "
                "training document, in the order of the scores it was given"
            )
        arr = arr.astype(np.float64, copy=False)
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{where}: {what} is not finite at {int(bad.sum())} document(s), first "
                f"{what}[{i}]={arr[i]}"
            )
        big = np.abs(arr) > _G_H_MAX
        if big.any():
            i = int(np.flatnonzero(big)[0])
            raise ValueError(
                f"{where}: {what}[{i}]={arr[i]:g} is beyond float32's range (largest "
                f"{_G_H_MAX:.4g}), in which the engine keeps gradients and hessians; "
                "rescale the loss"
            )
        out.append(arr)
    neg = out[1] < 0
    if neg.any():
        i = int(np.flatnonzero(neg)[0])
        raise ValueError(
            f"{where}: hess must be >= 0 (Newton leaves -G/H need non-negative curvature); "
            f"hess[{i}]={out[1][i]} (use an upper bound of the curvature, or a constant)"
        )
    return out[0], out[1]


def make_custom_objective(params: Any) -> CustomObjective:
    """The objective of ``params.objective`` (a callable, or a stored ``"custom:..."``
    name, which cannot train); refuses ``split_criterion="ole"``."""
    if params.split_criterion == "ole":
        raise ValueError(
            'split_criterion="ole" needs the per-pair hessian terms of a built-in pairwise '
            "objective; a custom objective gives per-document gradients and hessians "
            'only: use split_criterion="newton" (or "se")'
        )
    obj = params.objective
    if callable(obj):
        objective = CustomObjective(obj)
        objective.needs_curvature = not (
            params.l2_regularization > 0 and params.min_sum_hessian_in_leaf == 0
        )
        return objective
    objective = CustomObjective(name=obj)
    objective._require_function()  # raises: a name alone cannot train
    return objective

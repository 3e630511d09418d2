"""Objectives by registry name (the same names in Python, the CLI and the model file)."""

from __future__ import annotations

from typing import Any

from ltrboost.objectives.base import Objective

_REGISTRY: dict[str, type[Objective]] = {}

# One module per ranker (each registers its class when imported).
_BUILTIN_MODULES = (
    "mart",
    "logistic_rank",
    "mcrank",
    "ranknet",
    "rankboost",
    "lambdamart",
    "gbrank",
    "qbrank",
    "yetirank",
    "xendcg",
)


def register(cls: type[Objective]) -> type[Objective]:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    if not cls.name:
        raise TypeError(f"{cls.__name__} has no registry name")
    _REGISTRY[cls.name] = cls
    return cls


def unregister(name: str) -> None:
    """Remove the objective registered as ``name`` (no-op when absent).

    For objectives registered for a limited time, e.g. the test suite's test-only
    objectives, which must not stay visible to code that lists the registry.
    """
    _REGISTRY.pop(name, None)


def _load_builtin() -> None:
    # Importing the modules registers their classes; done lazily to keep import order
    # simple (objectives import metrics, never the other way round).
    import importlib

    for mod in _BUILTIN_MODULES:
        importlib.import_module(f"ltrboost.objectives.{mod}")


def available_objectives() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def objective_class(name: str) -> type[Objective] | None:
    """The class behind an objective name, None when unknown.

    ``"custom:<fn>"`` names (models trained with a Python callable, see
    :mod:`ltrboost.objectives.custom`) map to :class:`CustomObjective`.
    """
    _load_builtin()
    if name in _REGISTRY:
        return _REGISTRY[name]
    from ltrboost.objectives.custom import CustomObjective, is_custom

    return CustomObjective if isinstance(name, str) and is_custom(name) else None


def get_objective(name: str, **params: Any) -> Objective:
    """Instantiate the objective registered as ``name`` with its parameters.

    A ``"custom:<fn>"`` name gives a :class:`~ltrboost.objectives.custom.CustomObjective`
    without its function: it transforms scores (prediction) but cannot train.
    """
    cls = objective_class(name)
    if cls is None:
        raise ValueError(
            f"objective={name!r} is not one of {sorted(_REGISTRY)} (or a callable "
            "(scores, labels, query_offsets) -> (grad, hess))"
        )
    if cls.name == "custom" and cls is not _REGISTRY.get(name):
        return cls(name=name, **params)
    return cls(**params)

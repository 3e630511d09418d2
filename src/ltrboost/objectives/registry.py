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


def get_objective(name: str, **params: Any) -> Objective:
    """Instantiate the objective registered as ``name`` with its parameters."""
    _load_builtin()
    try:
        cls = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"objective={name!r} is not one of {sorted(_REGISTRY)}") from None
    return cls(**params)

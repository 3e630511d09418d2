"""ltrboost: learning to rank with gradient-boosted regression trees.

Public names: :class:`Ranker` (scikit-learn estimator), :func:`train`,
:class:`BoosterParams` and :class:`Booster` (lower-level API), :class:`RankingDataset` /
:func:`make_dataset`, :func:`load_model`, :func:`load_svmlight`, :func:`dump_svmlight`,
:func:`log_evaluation` (a training callback); the errors :class:`LTRInputError` (bad
input, located), :class:`ModelFormatError` (a bad model file) and
:class:`NonFiniteTrainingError`; the warnings :class:`PairsIgnoredWarning`,
:class:`PositionIgnoredWarning` and :class:`SharedQueriesWarning` (named in README).

Importing the package is cheap: the public names are resolved on first use (module
``__getattr__``, PEP 562), so ``import ltrboost`` does not import Numba, scikit-learn or
the kernels; ``ltrboost.train`` imports the engine, ``ltrboost.Ranker`` scikit-learn.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ltrboost._version import __version__

if TYPE_CHECKING:  # for type checkers and IDEs; at run time see __getattr__
    from ltrboost._checks import NonFiniteTrainingError
    from ltrboost.booster import PositionIgnoredWarning, train
    from ltrboost.callbacks import log_evaluation
    from ltrboost.dataset import LTRInputError, RankingDataset, make_dataset
    from ltrboost.io.letor import SharedQueriesWarning, dump_svmlight, load_svmlight
    from ltrboost.io.model_json import ModelFormatError
    from ltrboost.model import Booster, load_model
    from ltrboost.objectives.base import PairsIgnoredWarning
    from ltrboost.params import BoosterParams
    from ltrboost.sklearn import Ranker

# public name -> module that defines it (imported on first access)
_LAZY = {
    "Booster": "ltrboost.model",
    "BoosterParams": "ltrboost.params",
    "train": "ltrboost.booster",
    "LTRInputError": "ltrboost.dataset",
    "RankingDataset": "ltrboost.dataset",
    "make_dataset": "ltrboost.dataset",
    "ModelFormatError": "ltrboost.io.model_json",
    "load_model": "ltrboost.model",
    "Ranker": "ltrboost.sklearn",
    "log_evaluation": "ltrboost.callbacks",
    "NonFiniteTrainingError": "ltrboost._checks",
    "PairsIgnoredWarning": "ltrboost.objectives.base",
    "PositionIgnoredWarning": "ltrboost.booster",
    "SharedQueriesWarning": "ltrboost.io.letor",
    # the functions themselves, so that help() and signature() show their parameters
    # (they were wrappers f(*args, **kwargs) with a one-line docstring)
    "load_svmlight": "ltrboost.io.letor",
    "dump_svmlight": "ltrboost.io.letor",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ltrboost' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Booster",
    "BoosterParams",
    "LTRInputError",
    "ModelFormatError",
    "NonFiniteTrainingError",
    "PairsIgnoredWarning",
    "PositionIgnoredWarning",
    "Ranker",
    "RankingDataset",
    "SharedQueriesWarning",
    "__version__",
    "dump_svmlight",
    "load_model",
    "load_svmlight",
    "log_evaluation",
    "make_dataset",
    "train",
]

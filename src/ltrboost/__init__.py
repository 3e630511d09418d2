"""ltrboost: learning to rank with gradient-boosted regression trees.

Public names: :class:`Ranker` (scikit-learn estimator), :func:`train` and
:class:`Booster` (lower-level API), :class:`RankingDataset` / :func:`make_dataset`,
:func:`load_model`, :func:`load_svmlight`, :func:`dump_svmlight`.
"""

from ltrboost._version import __version__
from ltrboost.booster import Booster, BoosterParams, train
from ltrboost.dataset import LTRInputError, RankingDataset, make_dataset
from ltrboost.io.model_json import ModelFormatError, load_model
from ltrboost.sklearn import Ranker


def load_svmlight(*args, **kwargs):
    """Read a LETOR/svmlight file; see :func:`ltrboost.io.letor.load_svmlight`."""
    from ltrboost.io.letor import load_svmlight as _load

    return _load(*args, **kwargs)


def dump_svmlight(*args, **kwargs):
    """Write a LETOR/svmlight file; see :func:`ltrboost.io.letor.dump_svmlight`."""
    from ltrboost.io.letor import dump_svmlight as _dump

    return _dump(*args, **kwargs)


__all__ = [
    "Booster",
    "BoosterParams",
    "LTRInputError",
    "ModelFormatError",
    "Ranker",
    "RankingDataset",
    "__version__",
    "dump_svmlight",
    "load_model",
    "load_svmlight",
    "make_dataset",
    "train",
]

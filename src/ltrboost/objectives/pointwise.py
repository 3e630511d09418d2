"""Pointwise objectives: ``mart`` (least squares), ``logistic_rank`` and ``mcrank``.

Each document's loss depends on its own score only, so every loss here is *derivative
additive* (seed 000, Definition 1): RWSE and OLE split the same way (Theorem 1), and the
Newton leaf ``-G / H`` built from the per-document gradients and hessians written below
is the leaf formula of each paper.  SE agrees with them only where the hessians are one
constant, i.e. for unweighted ``mart`` without ``l2_regularization`` (Theorem 2; seed
000, section 3.4: "SE is generally not equivalent to (R)WSE or OLE, even [when] the
objective loss functions used satisfy the condition of Theorem 1").  The hessians are
chosen so that the leaf formulas hold exactly:

* ``mart``: ``g = 2 (s - y)``, ``h = 2``, so ``-G / H`` is the mean residual
  (seed 000, section 3.4 / Theorem 2; seed 003).
* ``logistic_rank``: Friedman's two-class loss ``log(1 + exp(-2 t s))`` (t = +-1), whose
  Newton step is exactly the seed's ``gamma = sum y~ / sum |y~| (2 - |y~|)`` (seed 002).
* ``mcrank``: a (K+1)-class softmax (seed 000, eq. 4-5) with Friedman's
  ``(C - 1) / C`` multi-class leaf, obtained by scaling the hessians by ``C / (C - 1)``.

All three work document by document, so their drivers run blocks of rows on threads, not
queries; per-document weights multiply ``g`` and ``h`` (LightGBM's convention, see
:mod:`ltrboost.objectives.base`).  Each lives in its own module (:mod:`.mart`,
:mod:`.logistic_rank`, :mod:`.mcrank`); this module keeps the old import path.
"""

import numpy as np

from ltrboost.objectives.base import (
    PRIOR_EPS as _PRIOR_EPS,
)
from ltrboost.objectives.base import (
    dataset_labels,
)
from ltrboost.objectives.base import (
    doc_weights as _weights_or_empty,
)
from ltrboost.objectives.base import (
    doc_weights_float64 as _weights_float64,
)
from ltrboost.objectives.base import (
    identity_transform as _identity_transform,
)
from ltrboost.objectives.base import (
    single_output_scores as _single_output_scores,
)
from ltrboost.objectives.base import (
    single_output_views as _single_output_views,
)
from ltrboost.objectives.logistic_rank import (
    LogisticRank,
    _label_scales,
    _logistic_rank_gradient_hessian,
    _logistic_rank_gradient_hessian_reference,
    _normalise_label_scale,
)
from ltrboost.objectives.mart import (
    MART,
    _mart_gradient_hessian,
    _mart_gradient_hessian_reference,
)
from ltrboost.objectives.mcrank import (
    MCRANK_MAX_LABEL,
    McRank,
    _log_softmax,
    _mcrank_gradient_hessian,
    _mcrank_gradient_hessian_reference,
)

_EMPTY_WEIGHTS = np.empty(0, dtype=np.float32)


def _labels(data, objective):  # old helper name
    return dataset_labels(data, objective)


def _check_integer_grades(data, objective):  # old helper name
    dataset_labels(data, objective, integer=True)


__all__ = [
    "MART",
    "MCRANK_MAX_LABEL",
    "_EMPTY_WEIGHTS",
    "_PRIOR_EPS",
    "LogisticRank",
    "McRank",
    "_check_integer_grades",
    "_identity_transform",
    "_label_scales",
    "_labels",
    "_log_softmax",
    "_logistic_rank_gradient_hessian",
    "_logistic_rank_gradient_hessian_reference",
    "_mart_gradient_hessian",
    "_mart_gradient_hessian_reference",
    "_mcrank_gradient_hessian",
    "_mcrank_gradient_hessian_reference",
    "_normalise_label_scale",
    "_single_output_scores",
    "_single_output_views",
    "_weights_float64",
    "_weights_or_empty",
]

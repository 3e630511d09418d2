"""The objective interface every ranker plugs into, and the conventions all of them share.

Conventions
-----------
* ``gradients`` are dL/ds (the derivative of the loss with respect to the score), so the
  descent direction is ``-gradients``.  Seed 001's "lambda" is ``gradients`` itself: its
  ``lambda_ij = dC/df(x_i)`` (negative for the preferred document), ``lambda_i^q =
  sum_j lambda_ij - sum_j lambda_ji`` and the leaf step ``-eta sum lambda / sum omega``;
  seed 003's ``lambda_ij = P^_ij - P_ij`` is the same number, though its LambdaMART
  slide calls ``lambda_i`` the negative gradient.
* ``hessians`` are the diagonal second derivatives d2L/ds2 used by the Newton leaf value
  ``-G / (H + l2_regularization)`` and by the ``newton`` split gain (seed 000, eq. 9).
* Rank vs document (XGBoost's rule): ``rank_hi`` / ``rank_lo`` are positions in the list
  sorted by current score; ``doc_hi`` / ``doc_lo`` are row indices inside the query.
* Per-document ``weights`` multiply each document's gradient and hessian after the
  per-query term is computed (LightGBM's convention).
* Randomness (sampled pairs) is seeded per query as ``seed + iteration * n_queries + q``
  so that results do not depend on the thread count.

An objective is a small class registered by name in :mod:`ltrboost.objectives.registry`.
Each one's docstring states its loss with the seed equation it implements.

Where things live
-----------------
* this module: the interface and the helpers every objective shares (labels, document
  weights, single-output score arrays);
* :mod:`.pair_selection`: which pairs of a query a pairwise objective walks;
* :mod:`.pair_engine`: the pairwise gradient engine (RankNet, RankBoost, LambdaMART);
* :mod:`.preferences`: explicit preference pairs and the margin ``tau`` (GBRank, QBRank);
* one module per ranker: :mod:`.mart`, :mod:`.logistic_rank`, :mod:`.mcrank`,
  :mod:`.ranknet`, :mod:`.rankboost`, :mod:`.lambdamart`, :mod:`.gbrank`, :mod:`.qbrank`
  (:mod:`.pointwise` and :mod:`.pairwise` re-export the old names).
The metric an objective differentiates (|delta Z| of NDCG, ERR, AP) lives beside the
metric in :mod:`ltrboost.metrics`.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, ClassVar, Literal, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost.dataset import RankingDataset, check_labels
from ltrboost.pair_csr import PairCSR, pairs_to_csr

# Constant initial scores are clipped to class frequencies in [PRIOR_EPS, 1 - PRIOR_EPS]
# so that a training set with one class only (all documents irrelevant, say) gets a
# finite start (LogisticRank, McRank).
PRIOR_EPS = 1e-6


class PairsIgnoredWarning(UserWarning):
    """Explicit preference pairs were given to an objective that does not use them
    (every objective but ``ranknet``, ``rankboost``, ``gbrank`` and ``qbrank``; a custom
    callable too): the model is the same as without them.  The CLI refuses ``--pairs``
    with such an objective."""


class PairTerms(NamedTuple):
    """Second-order pair contributions for the exact OLE criterion (seed 000, eq. 13).

    Query-grouped CSR: pairs ``pair_offsets[q]:pair_offsets[q+1]`` belong to query ``q``.
    ``doc_i`` / ``doc_j`` are global row ids (int32); ``rho`` (float64) is the amount the pair
    adds to *both* documents' hessians.  When both documents fall on the same side of a
    split the pair's loss does not change with that side's shift, so ``2 * rho`` must be
    removed from that side's hessian sum.
    """

    pair_offsets: NDArray[np.int64]
    doc_i: NDArray[np.int32]
    doc_j: NDArray[np.int32]
    rho: NDArray[np.float64]


class Objective:
    """Base class: a loss over scores of grouped documents.

    Class attributes
    ----------------
    name : registry name shared by Python, CLI and the model file.
    is_pairwise : True when the loss couples documents of a query (OLE then differs from
        Newton and :meth:`pair_terms` returns data).
    hessian_is_constant : True when hessians never change (lets the engine skip work).
    leaf_rule : ``"newton"`` (-G/(H+l2)), ``"mean_target"`` (GBRank: mean of the
        regression targets) or ``"line_search"`` (QBRank).
    needs_integer_labels : True when labels must be non-negative integer grades.
    update_rule : ``"additive"`` (F_k = F_{k-1} + eta * f_k) or ``"averaged"`` (GBRank,
        F_k = (k F_{k-1} + eta f_k) / (k + 1)).
    ole_refused : why ``split_criterion="ole"`` is refused (a loss that couples documents
        without pair terms, e.g. ``xendcg``'s softmax), or None: accepted (a pointwise
        loss's OLE split is its Newton split, seed 000 Theorem 1).
    learns_noise_without_grades : what the loss fits when no query holds two documents
        of different labels (of positive weight), or None: then it fits the labels'
        differences between queries (``learns_across_queries``) or nothing.  A loss
        with gradients there anyway (``xendcg``'s random target) names them, and
        training warns that the model it grew ranks by noise.
    learns_across_queries : True when the loss learns from labels that differ between
        queries (a pointwise loss), so data where no query holds two labels still
        trains it; False when it learns from pairs of documents of one query only;
        None: unknown (a custom loss).  Read by :meth:`learns_without_query_grades`
        for the cause the warning of a constant model names.
    """

    name: ClassVar[str] = ""
    is_pairwise: ClassVar[bool] = False
    hessian_is_constant: ClassVar[bool] = False
    leaf_rule: ClassVar[Literal["newton", "mean_target", "line_search"]] = "newton"
    needs_integer_labels: ClassVar[bool] = False
    update_rule: ClassVar[Literal["additive", "averaged"]] = "additive"
    ole_refused: ClassVar[str | None] = None
    learns_noise_without_grades: ClassVar[str | None] = None
    learns_across_queries: ClassVar[bool | None] = False
    default_metric: ClassVar[str] = "ndcg@10"
    # Shrinkage used when ``learning_rate`` is left unset (None).
    default_learning_rate: ClassVar[float] = 0.1
    # True when explicit preference pairs (``RankingDataset.pairs``) change the loss;
    # training warns with :class:`PairsIgnoredWarning` when pairs are given otherwise.
    uses_preference_pairs: ClassVar[bool] = False

    def __init__(self, **params: Any) -> None:
        self.params = dict(params)

    # number of score columns (one tree per output per round; McRank has K+1)
    def n_outputs(self, data: RankingDataset) -> int:
        return 1

    def get_params(self) -> dict[str, Any]:
        """Parameters that define the objective (stored in the model file)."""
        return dict(self.params)

    def explicit_pairs_ignored(self) -> str | None:
        """Why this objective's parameters give explicit preference pairs no effect
        (e.g. QBRank's ``preference_weight=0``), or None; training then warns with
        :class:`PairsIgnoredWarning` as for an objective that takes no pairs."""
        return None

    def prepare(self, data: RankingDataset) -> None:
        """Validate labels and cache per-dataset constants (idcg, label order, ...)."""

    def continue_model(self, model_params: dict[str, Any]) -> None:
        """Called before :meth:`prepare` when training continues a model of this
        objective (``init_model``), with the model's stored parameters: an objective
        whose parameters fix the model's shape takes them from the model."""

    def init_score(self, data: RankingDataset) -> NDArray[np.float64]:
        """Initial raw score per output, shape (n_outputs,)."""
        return np.zeros(self.n_outputs(data), dtype=np.float64)

    def gradient_hessian(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        gradients_out: NDArray[np.float32],
        hessians_out: NDArray[np.float32],
        iteration: int = 0,
    ) -> None:
        """Write dL/ds and d2L/ds2 per document into the preallocated outputs.

        ``scores`` has shape (n_samples,) for single-output objectives and
        (n_outputs, n_samples) otherwise; the outputs have the same shape.
        """
        raise NotImplementedError

    def pair_terms(
        self, scores: NDArray[np.float64], data: RankingDataset, iteration: int = 0
    ) -> PairTerms | None:
        """Pair hessian contributions for the OLE criterion; None for pointwise losses."""
        return None

    def ole_pairs(
        self,
        scores: NDArray[np.float64],
        data: RankingDataset,
        iteration: int = 0,
        in_bag: NDArray[np.bool_] | None = None,
    ) -> PairCSR | None:
        """:meth:`pair_terms` as the tree grower holds them (a
        :class:`~ltrboost.pair_csr.PairCSR`: by preferred document, float32 ``rho``),
        only the pairs with both documents ``in_bag`` when given; None for pointwise
        losses.  An objective may override it to write that layout directly."""
        pt = self.pair_terms(scores, data, iteration=iteration)
        if pt is None:
            return None
        return pairs_to_csr(pt.doc_i, pt.doc_j, pt.rho, data.n_samples, in_bag)

    def line_search(
        self,
        scores: NDArray[np.float64],
        delta: NDArray[np.float64],
        data: RankingDataset,
    ) -> float | None:
        """The step ``alpha`` along a new tree's unscaled output ``delta``.

        Called by the booster only when ``leaf_rule == "line_search"`` (QBRank); the
        tree's values are then scaled by ``alpha * learning_rate``.  None here: other
        objectives take no line search.
        """
        return None

    def check_training_labels(self, data: RankingDataset) -> None:
        """Refuse (or warn about) parameters that read the grades, once per training on
        the whole training set (after :meth:`prepare`; a Dask shard's ``prepare`` sees
        only its rows): a threshold that puts every document on one side leaves
        nothing to learn.  Nothing to check here."""

    def learns_without_query_grades(self, data: RankingDataset) -> bool | None:
        """Whether the loss has something to learn from ``data`` although no query holds
        two documents of different labels: labels that differ between queries
        (``learns_across_queries``), a random target (``learns_noise_without_grades``)
        or explicit preference pairs it uses.  None: unknown (a custom loss).  A model
        of one-leaf trees then comes from the split limits, not from a lack of pairs."""
        if self.learns_across_queries is None:
            return None
        if self.learns_across_queries or self.learns_noise_without_grades is not None:
            return True
        pairs = getattr(data, "pairs", None)
        return bool(
            self.uses_preference_pairs
            and pairs is not None
            and len(pairs) > 0
            and self.explicit_pairs_ignored() is None
        )

    def constant_model_cause(self, data: RankingDataset) -> str | None:
        """Why ``data`` (after :meth:`prepare`) leaves this objective nothing to learn,
        for the warning of a model whose every tree is one leaf; None: no reason known
        beyond the generic ones (equal labels, no query with two labels)."""
        return None

    def vanished_hessian_cause(self) -> str | None:
        """A parameter of this objective that shrinks every hessian (RankNet's and
        LambdaMART's ``sigma`` below 1: they scale with ``sigma^2``), for the warning of
        a tree whose root's hessians all but vanished; None: none."""
        return None

    def loss(self, scores: NDArray[np.float64], data: RankingDataset) -> float:
        """The objective value (used by finite-difference tests and line searches)."""
        raise NotImplementedError

    def transform(self, raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
        """Ranking score from raw scores (n_outputs, n) -> (n,); identity by default."""
        return raw_scores[0]


# --------------------------------------------------------------------------------------
# helpers shared by the objectives
# --------------------------------------------------------------------------------------


def dataset_labels(
    data: RankingDataset, objective: str, *, integer: bool = False
) -> NDArray[np.float64]:
    """The dataset's labels as float64, checked once per dataset by
    :func:`ltrboost.dataset.check_labels` (finite; ``integer``: grades 0, 1, ...).

    Refuses a label-less dataset.  The check is remembered in ``data.cache`` (keyed on
    the label array's identity), so calling this every boosting round costs nothing.
    """
    if data.y is None:
        raise ValueError(
            f"objective {objective!r} needs labels, but the dataset has none "
            "(build it with make_dataset(X, y, ...))"
        )
    key = "labels_checked_integer" if integer else "labels_checked_finite"
    if data.cache.get(key) is data.y:
        return np.asarray(data.y, dtype=np.float64)
    context = (
        f"objective {objective!r} needs grades 0, 1, ..., K (round or re-map the "
        "labels, or use 'mart' for real-valued relevance)"
        if integer
        else f"objective {objective!r} needs finite labels"
    )
    y = check_labels(data.y, data.n_samples, integer=integer, context=context)
    data.cache[key] = data.y
    if integer:
        data.cache["labels_checked_finite"] = data.y
    return y


def dataset_cached(data: RankingDataset, key: Any, build: Any) -> Any:
    """``build()``, remembered in ``data.cache[key]`` for as long as the dataset keeps
    the labels, weights, queries, explicit pairs and positions it was built from.

    A dataset is a mutable dataclass: a second training on it after ``data.pairs = ...``
    (or new ``y``, ``weights``, ``position``) must see them; a cache keyed on the
    objective's parameters alone silently trained on the old ones.  Compared by identity
    (an array changed in place is not noticed; replace it).
    """
    sources = (data.y, data.weights, data.query_offsets, data.pairs, data.position)
    hit = data.cache.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], sources, strict=True)):
        return hit[1]
    value = build()
    data.cache[key] = (sources, value)
    return value


def doc_weights(data: RankingDataset) -> NDArray[np.float32]:
    """Per-document weights as contiguous float32, or an empty array meaning "all ones".

    One array type for both cases keeps one compiled specialisation per kernel.
    """
    if data.weights is None:
        return np.zeros(0, dtype=np.float32)
    w = np.ascontiguousarray(data.weights, dtype=np.float32)
    if w.shape != (data.n_samples,):
        raise ValueError(
            f"weights has shape {w.shape}; expected ({data.n_samples},), one per document"
        )
    return w


def grades_text(y: NDArray[np.float64]) -> str:
    """The distinct labels of ``y`` for a message: ``"grades 0, 1, 2"``, or
    ``"grades 0 to 40 (37 distinct)"`` when there are more than eight."""
    g = np.unique(np.asarray(y, dtype=np.float64))
    if g.size <= 8:
        return "grades " + ", ".join(f"{v:g}" for v in g)
    return f"grades {g[0]:g} to {g[-1]:g} ({g.size} distinct)"


def one_sided_threshold(
    y: NDArray[np.float64], threshold: float, weights: Any = None
) -> tuple[str, str, str] | None:
    """Whether ``y >= threshold`` holds for every label of ``y`` or for none while ``y``
    holds two grades or more (a binary relevance that separates nothing):
    ``("every" | "no", " of positive weight" or "", the grades)``, else None.  Only
    documents of positive ``weights`` (per document, None: all) count; with one grade
    the labels, not the threshold, hold one class (warned as a constant model)."""
    y = np.asarray(y, dtype=np.float64)
    weighted = ""
    if weights is not None:
        keep = np.asarray(weights, dtype=np.float64) > 0
        if not keep.all():
            y, weighted = y[keep], " of positive weight"
    if y.size == 0 or y.min() == y.max():
        return None
    above = y >= threshold
    if above.all():
        return "every", weighted, grades_text(y)
    if not above.any():
        return "no", weighted, grades_text(y)
    return None


def threshold_range_text(name: str, y: NDArray[np.float64], weights: Any = None) -> str:
    """``"give NAME above LOW and at most HIGH"``: the thresholds that put the lowest
    grade (of positive weight) below and the highest above."""
    y = np.asarray(y, dtype=np.float64)
    if weights is not None:
        y = y[np.asarray(weights, dtype=np.float64) > 0]
    return f"give {name} above {y.min():g} and at most {y.max():g}"


def doc_weights_float64(data: RankingDataset, n: int) -> NDArray[np.float64]:
    """Per-document weights as float64, ones when the dataset has none."""
    if data.weights is None:
        return np.ones(n, dtype=np.float64)
    return np.asarray(data.weights, dtype=np.float64)


def single_output_views(
    scores: NDArray[np.float64],
    gradients_out: NDArray[np.float32],
    hessians_out: NDArray[np.float32],
    n: int,
) -> tuple[NDArray[np.float64], NDArray[np.float32], NDArray[np.float32]]:
    """Accept (n,) or (1, n) arrays; return 1-D views writing through to the outputs."""
    if scores.shape not in ((n,), (1, n)):
        raise ValueError(f"scores has shape {scores.shape}, expected ({n},) or (1, {n})")
    for name, out in (("gradients_out", gradients_out), ("hessians_out", hessians_out)):
        if out.shape not in ((n,), (1, n)):
            raise ValueError(f"{name} has shape {out.shape}, expected ({n},) or (1, {n})")
        if out.dtype != np.float32 or not out.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous float32 array")
    s = np.ascontiguousarray(scores, dtype=np.float64).reshape(n)
    return s, gradients_out.reshape(n), hessians_out.reshape(n)


def single_output_scores(scores: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    """Scores of shape (n,) or (1, n) as a float64 (n,) array."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape not in ((n,), (1, n)):
        raise ValueError(f"scores has shape {scores.shape}, expected ({n},) or (1, {n})")
    return scores.reshape(n)


def identity_transform(raw_scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """Ranking score of a single-output objective: the raw score itself."""
    raw = np.asarray(raw_scores, dtype=np.float64)
    return raw if raw.ndim == 1 else raw[0]


def check_use_label_pairs(use_label_pairs: Any) -> bool | None:
    """``use_label_pairs`` of the objectives that take explicit pairs: True/False/None."""
    if use_label_pairs is None:
        return None
    if not isinstance(use_label_pairs, bool | np.bool_):
        raise ValueError(f"use_label_pairs={use_label_pairs!r} should be True, False or None")
    return bool(use_label_pairs)


def finite_real(name: str, value: Any) -> float:
    """``value`` as a float; a bool, a string, a complex or a non-finite number is a
    ValueError naming the parameter (``float()`` took ``"2"`` and ``True``, and raised
    TypeError for None or a list)."""
    if (
        isinstance(value, bool | np.bool_)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
    ):
        raise ValueError(f"{name}={value!r} must be a finite real number")
    return float(value)

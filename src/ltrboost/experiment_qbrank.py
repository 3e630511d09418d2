"""The experiment protocol of Zheng et al. (seed 004, QBRank), on LETOR folds.

Seed 004, section 4 ("Experiment results") splits one editorially graded data set into

* ``L1``: every query whose documents all share one grade ("single-labeled data": no
  preference pair can be drawn from it);
* ``L2`` / ``L3``: the other queries, split at random by query into training and test;
* ``P2`` / ``P3``: the preference pairs of ``L2`` / ``L3``: for each query every pair
  of documents with *different* grades, the higher grade preferred ("we consider all
  pairs ... except those with equal grades");

and compares six runs: GBT on ``L1``, on ``L2`` and on ``L1 u L2``, RankSVM on ``P2``,
QBRank on ``P2`` and QBRank on ``P2 u L1``.  It reports precision at K% on ``P3``
(Table 1) and DCG-5 per boosting iteration (Figure 1).

On LETOR folds (``FoldK/{train,vali,test}.txt``) the split is made inside every fold,
so that no test query is ever trained on:

* ``L1`` = the fold's training queries with a single grade; ``L2`` = its other training
  queries; ``L3`` = the test queries with at least two grades (single-grade test
  queries have no pair and a DCG-5 that no ranking changes; they are left out);
* ``vali.txt``'s multi-grade queries tune RankSVM's ``C`` (by pooled precision at 100%
  on their pairs) and, the same way, pick the number of trees of each boosted run: the
  tables give every run both at that iteration and after the last tree.  The paper
  does not say when it stopped boosting; on MQ2008 the last-tree numbers mostly
  measure over-fitting (``docs/experiments/README.md``).

Settings (seed 004, section 4, "Parameters"): a regression tree with 20 leaves as the
base learner of GBT and QBRank, shrinkage ``eta = 0.05``, ``w = 0.5`` and ``tau`` = the
absolute grade difference of the pair.  The number of trees is not given in the text;
:data:`DEFAULT_TREES` is ours.  GBT is :class:`~ltrboost.objectives.mart.MART`
(least-squares regression on the grades, Friedman's gradient boosting, the paper's
reference [8]); QBRank is :class:`SplitQBRank` below, i.e. seed 004's risk (QB-1 in
:mod:`ltrboost.objectives.qbrank`) with the preference part on the pairs and the
regression part on ``L1`` only.

Precision at K% is :mod:`ltrboost.metrics.precision`'s ``pair_precision@K%`` (pairs
pooled over all ``L3`` queries, sorted by ``|h(x) - h(y)|``; a pair with equal scores
counts as contradicting).  DCG-5 is ``sum_{i<=5} (2^l_i - 1) / log2(i + 1)`` averaged
over ``L3`` queries (the paper's "variation of DCG" with ``G_i = 2^l_i - 1``; its own
gain table is not given).

With ``ties=True`` the equal-grade pairs of ``L2`` are added to both QBRank runs as two
``tau = 0`` pairs each (the paper: "including tied data could further improve
performance"), i.e. a penalty ``w/2 (h(a) - h(b))^2``.  RankSVM and GBT are unchanged and
``P3`` never contains ties (an equal-grade pair cannot be contradicted).

The output folder holds ``table.md`` (Table 1 layout: one row per K, one column per
run, mean over folds; at the validation iteration and after the last tree; DCG-5 as
mean ± sd over folds, the sd of a single fold ``nan``, ``null`` in ``results.json``),
``dcg5.csv`` (per iteration, run and fold: DCG-5 on ``L3`` and precision at 100% on
``P3`` and on the validation pairs), ``dcg5.png`` (Figure 1 layout, mean over folds,
with precision at 100% per iteration beside it; when matplotlib is installed),
``results.json`` (settings, split sizes, every number per fold) and ``folds/*.json``
(one finished fold each: a rerun with the same settings skips it).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost.dataset import RankingDataset, make_dataset
from ltrboost.io._atomic import atomic_write_files, atomic_write_text
from ltrboost.objectives.qbrank import QBRank

RUNS = ("gbt_l1", "gbt_l2", "gbt_l1_l2", "ranksvm_p2", "qbrank_p2", "qbrank_p2_l1")
RUN_NAMES = {
    "gbt_l1": "GBT(L1)",
    "gbt_l2": "GBT(L2)",
    "gbt_l1_l2": "GBT(L1∪L2)",  # noqa: RUF001 (the paper's union)
    "ranksvm_p2": "RankSVM(P2)",
    "qbrank_p2": "QBRank(P2)",
    "qbrank_p2_l1": "QBRank(P2∪L1)",  # noqa: RUF001
}
TREE_RUNS = tuple(r for r in RUNS if r != "ranksvm_p2")
PERCENTS = (10, 20, 30, 40, 50, 60, 70, 80, 90, 100)
DEFAULT_TREES = 500
LEARNING_RATE = 0.05  # eta, seed 004 section 4 "Parameters"
LEAVES = 20  # "single regression tree with 20 leaf nodes", seed 004 section 4
PREFERENCE_WEIGHT = 0.5  # w, seed 004 section 4
RANKSVM_C_GRID = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)
DCG_METRIC = "dcg@5"
PAIR_METRIC = "pair_precision"  # precision at 100%, "an overall performance measure"


@dataclass(frozen=True)
class Settings:
    """Everything a fold's result depends on (a cached fold is reused only if equal)."""

    n_estimators: int = DEFAULT_TREES
    learning_rate: float = LEARNING_RATE
    max_leaf_nodes: int = LEAVES
    min_samples_leaf: int = 20
    preference_weight: float = PREFERENCE_WEIGHT
    ties: bool = False
    ranksvm_c_grid: tuple[float, ...] = RANKSVM_C_GRID
    random_state: int = 0


# --------------------------------------------------------------------------------------
# the split and the pairs
# --------------------------------------------------------------------------------------


def single_grade_queries(y: NDArray[np.float64], query_offsets: NDArray[np.int64]) -> NDArray:
    """Boolean per query: all its documents share one grade (seed 004's ``L1`` rule)."""
    n_queries = query_offsets.shape[0] - 1
    out = np.zeros(n_queries, dtype=bool)
    for q in range(n_queries):
        yq = y[query_offsets[q] : query_offsets[q + 1]]
        out[q] = yq.size > 0 and bool(np.all(yq == yq[0]))
    return out


class QuerySplit(NamedTuple):
    """Query indices (into the fold's grouped train / test sets) of L1, L2 and L3."""

    l1: NDArray[np.int64]  # single-grade training queries
    l2: NDArray[np.int64]  # multi-grade training queries
    l3: NDArray[np.int64]  # multi-grade test queries
    test_single: NDArray[np.int64]  # single-grade test queries (left out)


def split_queries(train: RankingDataset, test: RankingDataset) -> QuerySplit:
    """L1 / L2 from the training queries, L3 from the test queries (see module doc)."""
    tr = single_grade_queries(train.y, train.query_offsets)
    te = single_grade_queries(test.y, test.query_offsets)
    return QuerySplit(
        np.flatnonzero(tr), np.flatnonzero(~tr), np.flatnonzero(~te), np.flatnonzero(te)
    )


def subset_queries(data: RankingDataset, *parts: NDArray[np.int64]) -> RankingDataset:
    """A dataset of the given queries of ``data`` (in the order given), labels kept."""
    queries = np.concatenate([np.asarray(p, dtype=np.int64) for p in parts])
    off = data.query_offsets
    if queries.size == 0:
        raise ValueError("no query in this part of the split")
    rows = np.concatenate([np.arange(off[q], off[q + 1]) for q in queries])
    sizes = off[queries + 1] - off[queries]
    return make_dataset(data.X[rows], data.y[rows], group=sizes)


class Pairs(NamedTuple):
    """Preference pairs as dataset rows: ``preferred`` is preferred to ``other``."""

    preferred: NDArray[np.int64]
    other: NDArray[np.int64]
    tau: NDArray[np.float64]  # the grade difference (seed 004's tau), > 0; 0 for ties


def preference_pairs(
    y: NDArray[np.float64], query_offsets: NDArray[np.int64], *, ties: bool = False
) -> Pairs:
    """Every pair of documents of one query with different grades (``P2`` / ``P3``).

    Seed 004, section 4: "If d_x has a higher grade than d_y, we include the preference
    x > y ... we consider all pairs ... except those with equal grades".  ``tau`` is the
    grade difference.  With ``ties=True`` the equal-grade pairs are returned instead
    (each once, ``tau = 0``, ``preferred`` the earlier row).
    """
    pref: list[NDArray[np.int64]] = []
    other: list[NDArray[np.int64]] = []
    for q in range(query_offsets.shape[0] - 1):
        lo, hi = int(query_offsets[q]), int(query_offsets[q + 1])
        i, j = np.triu_indices(hi - lo, k=1)
        yi, yj = y[lo + i], y[lo + j]
        if ties:
            keep = yi == yj
            pref.append(lo + i[keep])
            other.append(lo + j[keep])
        else:
            keep = yi != yj
            hi_first = yi[keep] > yj[keep]
            a, b = lo + i[keep], lo + j[keep]
            pref.append(np.where(hi_first, a, b))
            other.append(np.where(hi_first, b, a))
    p = np.concatenate(pref) if pref else np.zeros(0, np.int64)
    o = np.concatenate(other) if other else np.zeros(0, np.int64)
    return Pairs(p.astype(np.int64), o.astype(np.int64), (y[p] - y[o]).astype(np.float64))


def precision_at_percent(
    scores: NDArray[np.float64],
    y: NDArray[np.float64],
    query_offsets: NDArray[np.int64],
    percents: Sequence[float] = PERCENTS,
) -> dict[str, float]:
    """Seed 004's precision at K% on the pairs with different grades, pooled.

    Section 4, "Evaluation metrics": "we sort all the document pairs <x, y> according to
    |h(x) - h(y)|.  We call precision at K%, the fraction of non-contradicting pairs in
    the top K% of the sorted list."  Implemented by the ``pair_precision@K%`` metric
    (:mod:`ltrboost.metrics.precision`: a pair with equal scores is contradicting; a
    group of equal ``|h(x) - h(y)|`` across the cut counts in proportion).  Keys are
    ``"10"``, ``"20"``, ... (JSON-friendly).
    """
    from ltrboost.metrics import get_metric

    s = np.ascontiguousarray(scores, dtype=np.float64)
    return {
        f"{k:g}": float(get_metric(f"pair_precision@{k:g}%")(s, y, query_offsets)) for k in percents
    }


# --------------------------------------------------------------------------------------
# QBRank with its two parts on different documents
# --------------------------------------------------------------------------------------


def _dot(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """``a . b`` without BLAS: a threaded BLAS dot on a loaded machine took 10 ms for
    50k pairs, 100 times a plain sum of products."""
    return float(np.sum(a * b))


class SplitQBRank(QBRank):
    r"""QBRank whose regression part covers only the documents of chosen queries.

    Seed 004's risk (section 3, "The objective function"; QB-1 of
    :class:`~ltrboost.objectives.qbrank.QBRank`) with the pairs ``S`` and the labelled
    set ``L`` as in the paper's run "QBrank using P2 u L1"::

        R(h) = w/2 sum_{(x, y) in S} (max{0, h(y) - h(x) + tau})^2
             + (1 - w)/2 sum_{z in L} (l_z - h(z))^2

    ``S`` = every pair of a training query with different grades, ``tau`` their grade
    difference (seed 004: "tau is the absolute grade difference"), plus with
    ``ties=True`` every equal-grade pair as two ``tau = 0`` pairs (``w/2 (h(a) -
    h(b))^2``); ``L`` = the documents of the queries flagged in ``labelled_queries``
    (the paper's ``L1``).  :class:`QBRank` puts every labelled document in both parts,
    which is ``P2 u L1 u L2``, not the paper's run.

    Gradients ``dR/dh``, the constant diagonal ``W`` (``w`` per pair a document is in, as
    in :class:`QBRank`; ``2w`` per tie) and the line search along a tree's output
    (Algorithm 2 step 2) follow :class:`QBRank`; only the sums are done here with
    NumPy over explicit pair arrays.  With ``labelled_queries`` all False this is QBRank
    on preferences only (``w`` then only scales ``R``: the same trees for any ``w > 0``).

    Parameters
    ----------
    labelled_queries : ndarray of shape (n_queries,), dtype=bool
        Queries of the training set whose documents enter the regression part.
    preference_weight : float in (0, 1], default=0.5
        ``w``.
    ties : bool, default=False
        Add the equal-grade pairs as ``tau = 0`` pairs.
    """

    uses_preference_pairs: ClassVar[bool] = False  # pairs come from the grades only

    def __init__(
        self,
        labelled_queries: NDArray[np.bool_],
        preference_weight: float = PREFERENCE_WEIGHT,
        ties: bool = False,
    ) -> None:
        if not 0.0 < preference_weight <= 1.0:
            raise ValueError(f"preference_weight={preference_weight} must be in (0, 1]")
        super().__init__(preference_weight=preference_weight, use_label_pairs=True)
        self._labelled_queries = np.asarray(labelled_queries, dtype=bool)
        self._ties = bool(ties)

    def _arrays(self, data: RankingDataset) -> tuple:
        key = ("experiment_qbrank", self._w, self._ties, self._labelled_queries.tobytes())
        cached = data.cache.get(key)
        if cached is not None:
            return cached
        if data.weights is not None:
            raise ValueError("SplitQBRank takes no document weights")
        if data.pairs is not None and len(data.pairs) > 0:
            raise ValueError("SplitQBRank draws its pairs from the grades; explicit pairs given")
        if self._labelled_queries.shape != (data.n_queries,):
            raise ValueError(
                f"labelled_queries has shape {self._labelled_queries.shape} but the "
                f"dataset has {data.n_queries} queries"
            )
        y = np.asarray(data.y, dtype=np.float64)
        off = data.query_offsets
        pairs = preference_pairs(y, off)
        tied = preference_pairs(y, off, ties=True) if self._ties else None
        mask = np.repeat(self._labelled_queries, np.diff(off))
        n = data.n_samples
        # W of Algorithm 2 (constant): w per pair a document is in, 2w per tie, 1-w if
        # labelled (QB-3 of QBRank)
        w = self._w
        hess = w * (
            np.bincount(pairs.preferred, minlength=n) + np.bincount(pairs.other, minlength=n)
        ).astype(np.float64)
        if tied is not None:
            hess += 2 * w * np.bincount(tied.preferred, minlength=n)
            hess += 2 * w * np.bincount(tied.other, minlength=n)
        hess += (1.0 - w) * mask
        cached = (y, pairs, tied, mask, hess)
        data.cache[key] = cached
        return cached

    def prepare(self, data: RankingDataset) -> None:
        """Validate the labels and build the pair arrays once."""
        super().prepare(data)
        self._arrays(data)

    def init_score(self, data: RankingDataset) -> NDArray[np.float64]:
        """``h_0``: the mean label of the labelled documents (0 without any)."""
        y, _, _, mask, _ = self._arrays(data)
        return np.array([float(y[mask].mean()) if mask.any() else 0.0])

    def _run(
        self,
        scores: NDArray[np.float64],
        delta: NDArray[np.float64],
        alpha: float,
        data: RankingDataset,
        gradients: NDArray[np.float32] | None = None,
        hessians: NDArray[np.float32] | None = None,
    ) -> NDArray[np.float64]:
        """``(R, dR/dalpha, d2R/dalpha2)`` at ``scores + alpha * delta``; writes ``dR/dh``
        and ``W`` into ``gradients`` / ``hessians`` when they are non-empty."""
        y, pairs, tied, mask, hess = self._arrays(data)
        w = self._w
        n = scores.shape[0]
        has_d = delta.shape[0] > 0
        want_g = gradients is not None and gradients.shape[0] > 0
        s = scores + alpha * delta if has_d else scores
        g = np.zeros(n) if want_g else None
        phi = d1 = d2 = 0.0
        # preference part: hinge^2 with margin tau (QB-1, first sum)
        x, o = pairs.preferred, pairs.other
        m = s[o] - s[x] + pairs.tau
        v = np.maximum(m, 0.0)
        phi += 0.5 * w * _dot(v, v)
        if has_d:
            e = delta[o] - delta[x]
            d1 += w * _dot(v, e)
            d2 += w * float(np.square(e[m > 0]).sum())
        if g is not None:
            g += w * (np.bincount(o, v, minlength=n) - np.bincount(x, v, minlength=n))
        if tied is not None:  # two tau = 0 pairs: w/2 (h(a) - h(b))^2
            a, b = tied.preferred, tied.other
            diff = s[a] - s[b]
            phi += 0.5 * w * _dot(diff, diff)
            if has_d:
                et = delta[a] - delta[b]
                d1 += w * _dot(diff, et)
                d2 += w * _dot(et, et)
            if g is not None:
                g += w * (np.bincount(a, diff, minlength=n) - np.bincount(b, diff, minlength=n))
        # regression part on the labelled documents (QB-1, second sum)
        wl = 1.0 - w
        if wl > 0 and mask.any():
            r = np.where(mask, y - s, 0.0)
            phi += 0.5 * wl * _dot(r, r)
            if has_d:
                dm = np.where(mask, delta, 0.0)
                d1 -= wl * _dot(r, dm)
                d2 += wl * _dot(dm, dm)
            if g is not None:
                g -= wl * r
        if g is not None:
            gradients[:] = g
            hessians[:] = hess
        return np.array([phi, d1, d2])


# --------------------------------------------------------------------------------------
# the runs
# --------------------------------------------------------------------------------------


def _fit_tree_run(
    settings: Settings,
    objective: str,
    train: RankingDataset,
    labelled_queries: NDArray[np.bool_] | None,
    vali: RankingDataset,
    l3: RankingDataset,
    n_threads: int | None,
) -> dict[str, Any]:
    """One boosted run: GBT (``objective="mart"``: least squares on the grades, the
    paper's reference [8]) or QBRank (Algorithm 2 of seed 004 with
    :class:`SplitQBRank`'s two parts).

    ``vali`` and ``l3`` are evaluated after every tree (DCG-5 and precision at 100%).
    Returns the curves, the iteration with the best precision at 100% on ``vali``
    (the first on ties) and the ``L3`` scores after that iteration and after the last.
    """
    from ltrboost._numba import threads
    from ltrboost.booster import Training
    from ltrboost.booster import _train as train_booster
    from ltrboost.params import BoosterParams

    params = BoosterParams(
        objective=objective,
        n_estimators=settings.n_estimators,
        learning_rate=settings.learning_rate,
        max_leaf_nodes=settings.max_leaf_nodes,
        min_samples_leaf=settings.min_samples_leaf,
        n_threads=n_threads,
        eval_metric=[PAIR_METRIC, DCG_METRIC],
        random_state=settings.random_state,
    )
    valid = [("vali", vali), ("L3", l3)]
    if objective == "mart":  # shared queries: warned of once per fold (FoldLeaks)
        booster = train_booster(params, train, valid, check_leaks=False)
    else:
        params.validate()
        obj = SplitQBRank(labelled_queries, settings.preference_weight, settings.ties)
        with threads(n_threads) as n, np.errstate(over="ignore", invalid="ignore"):
            booster = Training(params, obj, train, valid, n).run()
    ev = booster.evals_result
    vali_curve = [float(v) for v in ev["vali"][PAIR_METRIC]]
    chosen = int(np.argmax(vali_curve)) + 1
    return {
        "scores_last": booster.predict_raw(l3.X, iteration=booster.n_iterations)[0],
        "scores_vali": booster.predict_raw(l3.X, iteration=chosen)[0],
        "iteration_vali": chosen,
        "dcg5": [float(v) for v in ev["L3"][DCG_METRIC]],
        "precision100_l3": [float(v) for v in ev["L3"][PAIR_METRIC]],
        "precision100_vali": vali_curve,
    }


def pair_differences(
    X: NDArray[np.floating], pairs: Pairs
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """RankSVM's training set: ``x - y`` with target +1, every other pair flipped to
    ``y - x`` with target -1 (balanced classes for a model without intercept)."""
    diff = np.asarray(X[pairs.preferred] - X[pairs.other], dtype=np.float64)
    target = np.ones(diff.shape[0], dtype=np.int64)
    target[1::2] = -1
    diff[1::2] *= -1
    return diff, target


def fit_ranksvm(
    train: RankingDataset,
    vali: RankingDataset,
    c_grid: Sequence[float] = RANKSVM_C_GRID,
) -> tuple[NDArray[np.float64], float, dict[str, float]]:
    """RankSVM (seed 004's references [11, 12]): a linear SVM on pair differences.

    ``h(x) = w . x`` minimising ``1/2 |w|^2 + C sum_pairs max(0, 1 - w . (x - y))^2``
    (no intercept): scikit-learn's ``LinearSVC`` with the squared hinge, solved in the
    primal (liblinear's trust-region Newton), the L2-loss RankSVM of Chapelle & Keerthi
    ("Efficient algorithms for ranking with SVMs", 2010).  The hinge of SVMlight's
    RankSVM solved in the dual needed 60 s at ``C = 100`` and 400 s at ``C = 1000`` on
    one MQ2008 fold (primal: 2 s), with validation precision within 0.004 of these.
    ``C`` is the value of ``c_grid`` with the highest pooled precision at 100% on
    ``vali``'s pairs (the first on ties).  Returns ``(w, C, {C: validation
    precision})``.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    pairs = preference_pairs(train.y, train.query_offsets)
    if pairs.preferred.size == 0:
        raise ValueError("RankSVM: the training queries give no preference pair")
    diff, target = pair_differences(train.X, pairs)
    weight = None
    if diff.shape[0] == 1:  # one class only, which LinearSVC refuses: the pair and its
        # flipped copy at half weight each have the very same loss
        diff, target = np.vstack([diff, -diff]), np.array([1, -1], dtype=np.int64)
        weight = np.array([0.5, 0.5])
    best: tuple[float, float, NDArray[np.float64]] | None = None
    by_c: dict[str, float] = {}
    for c in c_grid:
        svm = LinearSVC(C=c, fit_intercept=False, dual=False, max_iter=20000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svm.fit(diff, target, sample_weight=weight)
        coef = svm.coef_.ravel().astype(np.float64)
        vali_scores = np.asarray(vali.X, dtype=np.float64) @ coef
        prec = precision_at_percent(vali_scores, vali.y, vali.query_offsets, (100,))["100"]
        by_c[f"{c:g}"] = prec
        if best is None or prec > best[0]:
            best = (prec, float(c), coef)
    assert best is not None  # c_grid is non-empty (checked by the caller)
    return best[2], best[1], by_c


def _load_fold(
    paths: tuple[str, str, str],
    *,
    no_missing: bool = False,
    na_values: Sequence[str] | None = None,
    n_features: int | None = None,
) -> tuple[RankingDataset, ...]:
    """The fold's train, vali and test sets, read as the default protocol reads them
    (:func:`~ltrboost.experiment._fold_datasets`: the training file ``n_features``
    wide, None: its own width; the others at its width); ``no_missing``: a missing
    value (``nan``) is an error naming its file and line (RankSVM, a linear model,
    cannot take one)."""
    from ltrboost.dataset import LTRInputError
    from ltrboost.experiment import _fold_datasets

    out = _fold_datasets(paths, na_values, n_features)
    for d, p in zip(out, paths, strict=True):
        bad = np.flatnonzero(np.isnan(d.X).any(axis=1)) if no_missing else ()
        if len(bad):
            raise LTRInputError(
                "a missing feature value (nan): seed 004's protocol fits RankSVM, a "
                "linear model that cannot take missing values",
                path=p,
                line=None if d.row_lines is None else int(d.row_lines[bad].min()),
            )
    return out


def _fold_inputs(
    paths: tuple[str, str, str],
    runs: Sequence[str],
    na_values: Sequence[str] | None,
    n_features: int | None = None,
) -> tuple:
    """The fold's ``(train, vali, test, split, vali_multi)``: its files read
    (:func:`_load_fold`) and split (L1 / L2 / L3, the multi-grade validation queries),
    each part ``runs`` needs checked not empty (an error naming its file)."""
    train, vali, test = _load_fold(
        paths, no_missing="ranksvm_p2" in runs, na_values=na_values, n_features=n_features
    )
    split = split_queries(train, test)
    if split.l2.size == 0:
        raise ValueError(f"{paths[0]}: no training query with two grades (L2 is empty)")
    if split.l3.size == 0:
        raise ValueError(f"{paths[2]}: no test query with two grades (L3 is empty)")
    vali_multi = np.flatnonzero(~single_grade_queries(vali.y, vali.query_offsets))
    if vali_multi.size == 0:
        raise ValueError(f"{paths[1]}: no validation query with two grades")
    if "gbt_l1" in runs and split.l1.size == 0:
        raise ValueError(f"{paths[0]}: no single-grade training query (L1 is empty)")
    return train, vali, test, split, vali_multi


def run_fold(
    paths: tuple[str, str, str],
    settings: Settings,
    *,
    n_threads: int | None = None,
    runs: Sequence[str] = RUNS,
    na_values: Sequence[str] | None = None,
    inputs: tuple | None = None,
    n_features: int | None = None,
) -> dict[str, Any]:
    """The six runs on one fold (``train``, ``vali``, ``test`` paths); a JSON-able dict.
    ``na_values``: feature values that mean missing (``load_svmlight``'s); ``inputs``:
    the fold's :func:`_fold_inputs` when already read (for ``RUNS``); ``n_features``:
    :func:`run_qbrank_experiment`'s."""
    if inputs is None:
        inputs = _fold_inputs(paths, runs, na_values, n_features)
    train, vali, test, split, vali_multi = inputs
    l2 = subset_queries(train, split.l2)
    l3 = subset_queries(test, split.l3)
    p2 = preference_pairs(l2.y, l2.query_offsets)
    p3 = preference_pairs(l3.y, l3.query_offsets)
    info: dict[str, Any] = {
        "queries": {
            "L1": int(split.l1.size),
            "L2": int(split.l2.size),
            "L3": int(split.l3.size),
            "test_single_grade_left_out": int(split.test_single.size),
            "vali_multi_grade": int(vali_multi.size),
        },
        "documents": {
            "L1": int(sum(np.diff(train.query_offsets)[split.l1])),
            "L2": l2.n_samples,
            "L3": l3.n_samples,
        },
        "L1_grades": sorted({float(train.y[train.query_offsets[q]]) for q in split.l1}),
        "pairs": {
            "P2": int(p2.preferred.size),
            "P3": int(p3.preferred.size),
            "P2_ties": int(preference_pairs(l2.y, l2.query_offsets, ties=True)[0].size),
        },
        "runs": {},
    }
    from ltrboost.experiment import warnings_named

    vali_m = subset_queries(vali, vali_multi)
    # a run's warnings name the fold (its folder) and the run
    fold = os.path.basename(os.path.dirname(os.path.abspath(paths[0])))
    for run in runs:
        with warnings_named(f"{fold}: {RUN_NAMES[run]}"):
            info["runs"][run] = _one_run(run, settings, train, split, l2, l3, vali_m, n_threads)
    return info


def _one_run(
    run: str,
    settings: Settings,
    train: RankingDataset,
    split: QuerySplit,
    l2: RankingDataset,
    l3: RankingDataset,
    vali_m: RankingDataset,
    n_threads: int | None,
) -> dict[str, Any]:
    """One of :func:`run_fold`'s runs: its JSON-able result."""
    t0 = time.perf_counter()
    if run == "ranksvm_p2":
        coef, c, by_c = fit_ranksvm(l2, vali_m, settings.ranksvm_c_grid)
        scores = np.asarray(l3.X, dtype=np.float64) @ coef
        prec = precision_at_percent(scores, l3.y, l3.query_offsets)
        res: dict[str, Any] = {
            "precision_vali": prec,
            "precision_last": prec,
            "iteration_vali": 1,
            "dcg5": [_dcg5(scores, l3)],
            "C": c,
            "vali_precision_by_C": by_c,
        }
    else:
        with_l1 = run in ("gbt_l1_l2", "qbrank_p2_l1")
        parts = (split.l1,) if run == "gbt_l1" else (split.l1, split.l2) if with_l1 else (split.l2,)
        data = subset_queries(train, *(p for p in parts if p.size))
        labelled = None
        if run.startswith("qbrank"):
            labelled = np.zeros(data.n_queries, dtype=bool)
            if with_l1:
                labelled[: split.l1.size] = True  # L1's queries come first in ``data``
        objective = "qbrank" if run.startswith("qbrank") else "mart"
        fit = _fit_tree_run(settings, objective, data, labelled, vali_m, l3, n_threads)
        res = {
            "precision_vali": precision_at_percent(fit.pop("scores_vali"), l3.y, l3.query_offsets),
            "precision_last": precision_at_percent(fit.pop("scores_last"), l3.y, l3.query_offsets),
            **fit,
        }
    res["seconds"] = time.perf_counter() - t0
    return res


def _dcg5(scores: NDArray[np.float64], data: RankingDataset) -> float:
    from ltrboost.metrics import get_metric

    return float(get_metric(DCG_METRIC)(scores, data.y, data.query_offsets))


def run_qbrank_experiment(
    folder: str,
    output: str,
    *,
    settings: Settings | None = None,
    n_threads: int | None = None,
    progress: bool = True,
    na_values: Sequence[str] | None = None,
    n_features: int | None = None,
    setting_names: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run (or resume) seed 004's protocol on every fold below ``folder``; write the
    report into ``output`` and return the summary (see the module docstring).
    ``na_values``: feature values that mean missing (``load_svmlight``'s).

    A finished fold made with other ``settings`` is computed again, with a warning
    naming each field that differs (``max_leaf_nodes 5 (this run: 6)``);
    ``setting_names`` maps fields to the names the caller gave them (the CLI: its
    flags, ``--leaves 5 (this run: 6)``).

    ``n_features``: read each fold's training file this many features wide (default:
    its highest feature index), for validation and test files that use higher feature
    indices, as :func:`~ltrboost.experiment.run_experiment`'s.  The features absent
    from the training file are all zero there: no tree splits on them and RankSVM's
    weight for them is 0, so every number is that of a narrower read, and finished
    folds are reused whatever the value.

    A fold whose validation or test file shares query ids with its training file gets a
    ``UserWarning`` (:class:`~ltrboost.io.letor.SharedQueriesWarning`) naming both files
    and the count, as in the default protocol (:class:`~ltrboost.experiment.FoldLeaks`).
    """
    from ltrboost.experiment import (
        FoldLeaks,
        check_n_features,
        check_report_folder,
        data_digests,
        data_sizes,
        find_folds,
        report_folder,
    )

    check_n_features(n_features)
    check_report_folder(output, "qbrank")
    settings = settings or Settings()
    _check_settings(settings)
    folds = find_folds(folder)
    fold_dir = os.path.join(output, "folds")
    # a run that cannot complete (an empty L1, a fold it cannot read) leaves no
    # empty folder behind
    with report_folder(fold_dir):
        settings_json = _settings_json(settings)
        results: dict[str, Any] = {}
        t_start = time.perf_counter()
        todo = []
        for name, *paths in folds:
            path = os.path.join(fold_dir, f"{name}.json")
            cached = _finished_fold(
                path, settings_json, data_sizes(paths), data_digests(paths), setting_names
            )
            if cached is not None:
                results[name] = cached
                if progress:
                    print(f"{name}: kept from {path}", file=sys.stderr)
            else:
                todo.append((name, tuple(paths)))
        # every fold still to run read and checked before the first one runs (a
        # malformed line, an empty L1 of the last fold failed after the others ran);
        # one fold in memory at a time, the first to run read last and kept
        inputs = None
        leaks = FoldLeaks(folds)
        for name, paths in [*todo[1:], *todo[:1]]:
            inputs = None
            inputs = _fold_inputs(paths, RUNS, na_values, n_features)
            leaks.check(name, inputs[0], inputs[1], inputs[2])
        leaks.warn(stacklevel=2)
        for k, (name, paths) in enumerate(todo):
            t0 = time.perf_counter()
            res = run_fold(
                paths,  # type: ignore[arg-type]
                settings,
                n_threads=n_threads,
                na_values=na_values,
                inputs=inputs if k == 0 else None,
                n_features=n_features,
            )
            inputs = None
            res["settings"] = settings_json
            res["data"] = data_sizes(paths)
            res["data_sha256"] = data_digests(paths)
            res["seconds"] = time.perf_counter() - t0
            atomic_write_text(os.path.join(fold_dir, f"{name}.json"), json.dumps(res))
            results[name] = res
            if progress:
                print(f"{name}: done in {res['seconds']:.1f} s", file=sys.stderr)
        results = {name: results[name] for name, *_ in folds}  # in the folds' order
        summary = write_report(output, results, settings)
        summary["seconds_this_call"] = time.perf_counter() - t_start
        return summary


def _finished_fold(
    path: str,
    settings_json: dict[str, Any],
    data: dict[str, int] | None = None,
    digests: dict[str, str] | None = None,
    names: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """The fold saved at ``path`` when it was made with these settings from files of
    these sizes and contents (:func:`~ltrboost.experiment.data_sizes`,
    :func:`~ltrboost.experiment.data_digests`; not checked for folds saved before
    they were recorded) and holds every run (else None: it is computed again
    and replaced, with a warning naming the difference, each setting by its ``names``
    entry, else its field); an unreadable file is an error naming it, not a file to
    overwrite unseen."""
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            cached = json.load(f)
        if not isinstance(cached, dict):
            raise ValueError(f"a JSON {type(cached).__name__}, not an object")
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read this finished fold ({e}); delete it") from None
    saved = cached.get("settings")
    from ltrboost.experiment import data_changed

    changed = None
    if data is not None:
        saved_digests = cached.get("data_sha256") if digests is not None else None
        changed = data_changed(cached.get("data"), saved_digests, data, digests or {})
    runs = cached.get("runs")
    why = None
    if not isinstance(saved, dict):
        why = "without its settings"
    elif saved != settings_json:
        why = "with " + ", ".join(
            f"{(names or {}).get(k, k)} {saved.get(k)!r} (this run: {settings_json.get(k)!r})"
            for k in sorted(set(saved) | set(settings_json))
            if saved.get(k) != settings_json.get(k)
        )
    elif changed is not None:
        why = f"from other data files ({changed})"
    elif not isinstance(runs, dict) or any(r not in runs for r in RUNS):
        lacking = [r for r in RUNS if not isinstance(runs, dict) or r not in runs]
        why = f"without the runs {', '.join(lacking)}"
    problem = None if why is not None else _fold_shape_problem(cached)
    if problem:
        raise ValueError(f"{path}: cannot read this finished fold ({problem}); delete it")
    if why is not None:
        # the finished fold is replaced: say so, as the default protocol names the
        # difference (it refuses to resume)
        warnings.warn(
            f"{path}: this finished fold was made {why}; computing it again", stacklevel=3
        )
        return None
    return cached


_TREE_CURVES = ("precision100_l3", "precision100_vali")  # beside dcg5, per tree


def _fold_shape_problem(fold: dict[str, Any]) -> str | None:
    """What in a finished fold (with every run) the report could not read (None:
    nothing): a hand-edited file must fail here, naming it, not in the report."""
    from ltrboost.experiment import _is_number

    for key, names in (("queries", ("L1", "L2", "L3")), ("pairs", ("P2", "P3"))):
        part = fold.get(key)
        if not isinstance(part, dict) or not all(_is_number(part.get(n)) for n in names):
            return f"{key} must hold numbers for {', '.join(names)}"
    if not isinstance(fold.get("L1_grades"), list):
        return "L1_grades must be a list"
    percents = [f"{p:g}" for p in PERCENTS]
    for run in RUNS:
        res = fold["runs"][run]
        if not isinstance(res, dict):
            return f"runs.{run} must be an object"
        for key in ("precision_vali", "precision_last"):
            v = res.get(key)
            if not isinstance(v, dict) or not all(_is_number(v.get(k)) for k in percents):
                return f"runs.{run}.{key} must hold numbers for {', '.join(percents)}"
        curves = ("dcg5",) if run == "ranksvm_p2" else ("dcg5", *_TREE_CURVES)
        n = None
        for key in curves:
            v = res.get(key)
            if not isinstance(v, list) or not v or not all(map(_is_number, v)):
                return f"runs.{run}.{key} must be a non-empty list of numbers"
            if n is not None and len(v) != n:
                return f"runs.{run}: the curves differ in length"
            n = len(v)
        it = res.get("iteration_vali")
        if not isinstance(it, int) or isinstance(it, bool) or not 1 <= it <= (n or 0):
            return f"runs.{run}.iteration_vali {it!r} is not an iteration of its curves"
        if run == "ranksvm_p2" and not _is_number(res.get("C")):
            return "runs.ranksvm_p2.C must be a number"
    return None


def _check_settings(s: Settings) -> None:
    if s.n_estimators < 1:
        raise ValueError(f"n_estimators={s.n_estimators} must be >= 1")
    if not (math.isfinite(s.learning_rate) and s.learning_rate > 0):
        raise ValueError(f"learning_rate={s.learning_rate} must be > 0")
    if s.max_leaf_nodes < 2:
        raise ValueError(f"max_leaf_nodes={s.max_leaf_nodes} should not be smaller than 2")
    if s.min_samples_leaf < 1:
        raise ValueError(f"min_samples_leaf={s.min_samples_leaf} must be >= 1")
    if not 0.0 < s.preference_weight < 1.0:
        raise ValueError(f"preference_weight={s.preference_weight} must be in (0, 1)")
    if not s.ranksvm_c_grid or any(not c > 0 for c in s.ranksvm_c_grid):
        raise ValueError(f"ranksvm_c_grid={s.ranksvm_c_grid} must be positive values")


def _settings_json(s: Settings) -> dict[str, Any]:
    d = asdict(s)
    d["ranksvm_c_grid"] = list(d["ranksvm_c_grid"])
    return d


# --------------------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------------------


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1) over folds; the deviation of one
    fold is nan (``nan`` in ``table.md``, ``null`` in ``results.json``): it was 0,
    a spread of none where none can be measured."""
    a = np.asarray(values, dtype=np.float64)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else float("nan")


def _precision_table(
    results: dict[str, Any], folds: list[str], key: str
) -> dict[str, dict[str, tuple[float, float]]]:
    return {
        run: {
            k: _mean_std([results[f]["runs"][run][key][k] for f in folds])
            for k in (f"{p:g}" for p in PERCENTS)
        }
        for run in RUNS
    }


def _markdown_precision(precision: dict[str, dict[str, tuple[float, float]]]) -> list[str]:
    """Table 1's layout: one row per K, one column per run."""
    lines = [
        "| K | " + " | ".join(RUN_NAMES[r] for r in RUNS) + " |",
        "|---" * (len(RUNS) + 1) + "|",
    ]
    for p in PERCENTS:
        k = f"{p:g}"
        lines.append(f"| {k}% | " + " | ".join(f"{precision[r][k][0]:.4f}" for r in RUNS) + " |")
    return lines


def write_report(output: str, results: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """``table.md``, ``dcg5.csv``, ``dcg5.png`` and ``results.json`` from the folds
    (in the natural order of their names: ``Fold2`` before ``Fold10``), written all or
    none (one after the other, a signal between two left some of them)."""
    from ltrboost.experiment import _finite_or_null, fold_sort_key

    files: list[tuple[str, bytes]] = []  # (path, contents), written together at the end

    folds = sorted(results, key=fold_sort_key)
    precision_vali = _precision_table(results, folds, "precision_vali")
    precision_last = _precision_table(results, folds, "precision_last")
    runs = {f: results[f]["runs"] for f in folds}
    dcg_vali = {
        r: _mean_std([runs[f][r]["dcg5"][runs[f][r]["iteration_vali"] - 1] for f in folds])
        for r in RUNS
    }
    dcg_last = {r: _mean_std([runs[f][r]["dcg5"][-1] for f in folds]) for r in RUNS}
    chosen = {r: [runs[f][r]["iteration_vali"] for f in folds] for r in RUNS}
    s = settings
    lines = [
        f"Seed 004's protocol, mean over {len(folds)} fold(s) ({', '.join(folds)}); "
        f"{s.n_estimators} trees of {s.max_leaf_nodes} leaves, eta = {s.learning_rate:g}, "
        f"min_samples_leaf = {s.min_samples_leaf}, w = {s.preference_weight:g}, "
        f"tau = grade difference, ties "
        f"{'added to QBRank as tau = 0 pairs' if s.ties else 'excluded'}.",
        "",
        "Precision at K% on P3 (Table 1 layout), each boosted run taken at the iteration "
        "with the best precision at 100% on the fold's validation pairs (as RankSVM's C):",
        "",
        *_markdown_precision(precision_vali),
        "",
        "Precision at K% on P3 after the last tree:",
        "",
        *_markdown_precision(precision_last),
        "",
        "DCG-5 on L3 (mean ± sd over folds) and the iterations chosen on validation:",
        "",
        "| run | DCG-5 at the chosen iteration | DCG-5 after the last tree | chosen iterations |",
        "|---|---|---|---|",
    ]
    for r in RUNS:
        its = "-" if r == "ranksvm_p2" else ", ".join(str(i) for i in chosen[r])
        lines.append(
            f"| {RUN_NAMES[r]} | {dcg_vali[r][0]:.4f} ± {dcg_vali[r][1]:.4f} | "
            f"{dcg_last[r][0]:.4f} ± {dcg_last[r][1]:.4f} | {its} |"
        )
    lines += ["", "Split per fold (queries L1 / L2 / L3, pairs P2 / P3):", ""]
    for f in folds:
        q, pr = results[f]["queries"], results[f]["pairs"]
        lines.append(
            f"- {f}: {q['L1']} / {q['L2']} / {q['L3']} queries "
            f"(L1 grades {results[f]['L1_grades']}), {pr['P2']} / {pr['P3']} pairs; "
            f"RankSVM C = {runs[f]['ranksvm_p2']['C']:g}"
        )
    files.append((os.path.join(output, "table.md"), ("\n".join(lines) + "\n").encode()))
    # dcg5.csv: the curves (RankSVM: one row, iteration 0 = not iterative)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["run", "fold", "iteration", "dcg5", "precision100_l3", "precision100_vali"])
    for r in RUNS:
        for f in folds:
            res = runs[f][r]
            if r == "ranksvm_p2":
                w.writerow(
                    [r, f, 0, f"{res['dcg5'][0]:.5f}", f"{res['precision_last']['100']:.5f}", ""]
                )
                continue
            for it, (d, pl, pv) in enumerate(
                zip(res["dcg5"], res["precision100_l3"], res["precision100_vali"], strict=True),
                start=1,
            ):
                w.writerow([r, f, it, f"{d:.5f}", f"{pl:.5f}", f"{pv:.5f}"])
    files.append((os.path.join(output, "dcg5.csv"), buf.getvalue().encode()))
    summary = {
        "settings": _settings_json(settings),
        "folds": folds,
        "precision_at_vali_iteration_mean_sd": precision_vali,
        "precision_after_last_tree_mean_sd": precision_last,
        "dcg5_at_vali_iteration_mean_sd": dcg_vali,
        "dcg5_after_last_tree_mean_sd": dcg_last,
        "iterations_chosen_on_vali": chosen,
        "per_fold": _without_curves(results),  # the curves are in dcg5.csv
        "total_seconds": float(sum(results[f].get("seconds", 0.0) for f in folds)),
    }
    # JSON has no NaN (a strict reader refuses it): the sd of one fold is null
    text = json.dumps(_finite_or_null(summary), indent=1, allow_nan=False)
    files.append((os.path.join(output, "results.json"), text.encode()))
    _plot(files, output, results, folds)
    atomic_write_files(files)
    return summary


def _without_curves(results: dict[str, Any]) -> dict[str, Any]:
    """``results`` without the per-iteration lists of the boosted runs (they are in
    ``dcg5.csv`` and ``folds/*.json``); ``dcg5`` becomes the last value."""
    out = {}
    for f, res in results.items():
        runs = {}
        for r, v in res["runs"].items():
            short = {
                k: x for k, x in v.items() if k not in ("precision100_l3", "precision100_vali")
            }
            short["dcg5"] = v["dcg5"][-1]
            runs[r] = short
        out[f] = {**res, "runs": runs}
    return out


def _plot(
    files: list[tuple[str, bytes]], output: str, results: dict[str, Any], folds: list[str]
) -> bool:
    """Figure 1's layout (mean DCG-5 on L3 per iteration, RankSVM as a flat line), and
    precision at 100% on P3 per iteration beside it: ``dcg5.png``, added to the
    report's ``files``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, svm_key, ylabel in (
        (axes[0], "dcg5", None, "DCG-5 on L3"),
        (axes[1], "precision100_l3", "precision_last", "precision at 100% on P3"),
    ):
        means = {}
        for run in TREE_RUNS:
            curves = [results[f]["runs"][run][key] for f in folds]
            n = min(len(c) for c in curves)
            means[run] = np.mean([c[:n] for c in curves], axis=0)
        svm_runs = [results[f]["runs"]["ranksvm_p2"] for f in folds]
        svm = np.mean([r["dcg5"][0] if svm_key is None else r[svm_key]["100"] for r in svm_runs])
        # a run that learnt nothing (GBT on one grade: a flat line) would squash the
        # others; it stays off the axis with its value in the legend
        moving = [m for m in means.values() if np.ptp(m) > 0]
        lo = min([svm, *(float(m.min()) for m in moving)])
        hi = max([svm, *(float(m.max()) for m in moving)])
        pad = 0.05 * (hi - lo) if hi > lo else 0.01
        for run, mean in means.items():
            label = RUN_NAMES[run]
            if mean.max() < lo - pad or mean.min() > hi + pad:
                label += f" = {float(mean[-1]):.3f} (off the axis)"
            ax.plot(np.arange(1, mean.size + 1), mean, label=label)
        ax.axhline(svm, color="black", linestyle="--", linewidth=1, label=RUN_NAMES["ranksvm_p2"])
        ax.set_ylim(lo - pad, hi + pad)
        ax.set_xlabel("iteration (trees)")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    axes[0].set_title("DCG-5 v. iterations (seed 004, Figure 1 layout)")
    axes[1].set_title(f"precision at 100% v. iterations; mean of {len(folds)} fold(s)")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=100)
    plt.close(fig)
    files.append((os.path.join(output, "dcg5.png"), png.getvalue()))
    return True

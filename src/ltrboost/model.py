"""The trained model: :class:`Booster` (trees, objective, initial scores, update rule).

Knows prediction and conversion to and from the plain fields of a model file; the JSON
layer (:mod:`ltrboost.io.model_json`) reads and writes those fields and knows no model
class.  Training lives in :mod:`ltrboost.booster`.

Update rules
------------
* ``additive`` (every objective but GBRank): ``F_k = F_{k-1} + eta * f_k``.
* ``averaged`` (GBRank, seed 002): ``F_k = (k F_{k-1} + eta g_k) / (k + 1)``, which
  unrolls to ``F_T = (F_0 + eta * sum_k g_k) / (T + 1)``; the booster keeps the sum
  and divides by :func:`averaged_divisor`, so prediction after reloading reproduces
  it exactly.
"""

from __future__ import annotations

import operator
import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import SCORE_DTYPE
from ltrboost._numba import threads
from ltrboost.io import model_json
from ltrboost.objectives.registry import get_objective
from ltrboost.tree import PackedEnsemble, pack_trees, predict_raw


def averaged_divisor(n_rounds: int) -> int:
    """What the kept sum ``F_0 + eta * sum_k g_k`` of ``n_rounds`` finished rounds is
    divided by under the ``averaged`` update rule: ``n_rounds + 1`` (seed 002)."""
    return n_rounds + 1


def as_iteration_count(iteration: Any, n_iterations: int) -> int:
    """``iteration=`` as an int: an integer (NumPy's too), never a bool, a float or a
    string (``int()`` took 2.7 as 2 rounds and ``"3"`` as 3, silently)."""
    if not isinstance(iteration, bool):
        try:
            return operator.index(iteration)
        except TypeError:
            pass
    raise ValueError(
        f"iteration={iteration!r} must be an integer between 0 and {n_iterations} "
        "(the number of rounds to use)"
    )


class Booster:
    """A trained ensemble: trees, objective, initial scores and the update rule.

    Prediction uses numeric thresholds only, so a booster loaded from JSON predicts
    exactly as the one that was trained.  Made by :func:`ltrboost.train` and
    :func:`load_model`; the keyword arguments are the model file's fields
    (:meth:`model_fields`).
    """

    def __init__(
        self,
        *,
        objective: str,
        objective_params: dict[str, Any],
        init_score: NDArray[np.float64],
        trees: list[NDArray],
        tree_outputs: list[int],
        n_features: int,
        update_rule: str = "additive",
        best_iteration: int | None = None,
        params: dict[str, Any] | None = None,
        feature_names: list[str] | None = None,
        evals_result: dict[str, dict[str, list[float]]] | None = None,
        n_outputs: int = 1,
        missing: str | None = None,
        position_bias: dict[str, list[float]] | None = None,
        trained_with_nan: bool = False,
        best_position_bias: dict[str, list[float]] | None = None,
        training_inputs: dict[str, dict[str, str]] | None = None,
    ) -> None:
        self.objective = objective
        self.objective_params = dict(objective_params)
        self.init_score = np.asarray(init_score, dtype=np.float64)
        self.trees = trees
        self.tree_outputs = list(tree_outputs)
        self.n_features = int(n_features)
        self.update_rule = update_rule
        self.best_iteration = best_iteration
        self.params = dict(params or {})
        # strings, as a model file holds them (and as a DataFrame's columns are matched):
        # names given as numbers (make_dataset(feature_names=[0, 1, ...])) made files
        # that loading refused
        self.feature_names = None if feature_names is None else [str(s) for s in feature_names]
        self.evals_result = evals_result or {}
        self.n_outputs = int(n_outputs)
        # the convention for features absent from sparse LETOR lines ("zero" | "nan"),
        # recorded by the CLI; None when trained from arrays
        self.missing = missing
        # the training data held NaN although ``missing`` is "zero" (``nan`` tokens or
        # NA tokens in a LETOR file): learned NaN directions that exporters keep
        self.trained_with_nan = bool(trained_with_nan)
        # Unbiased LambdaMART's estimates {"t_plus": [...], "t_minus": [...]} (index k-1
        # for position k); properties of the training clicks, never used to predict
        # (after the last round trained: what resuming continues from)
        self.position_bias = _bias_lists(position_bias)
        # the estimates after round ``best_iteration`` (the rounds ``predict`` uses) when
        # early stopping trained rounds past it; None otherwise (then ``position_bias``)
        self.best_position_bias = _bias_lists(best_position_bias)
        # the CLI's training files the model does not hold, by content:
        # {"pairs" | "position" | "train": {"file": path, "sha256": hex}}, so that
        # ``train --resume`` can tell another file (None: none recorded)
        self.training_inputs = (
            None if not training_inputs else {k: dict(v) for k, v in training_inputs.items()}
        )
        self._packed: dict[int, PackedEnsemble] = {}
        self._objective = None

    @property
    def n_iterations(self) -> int:
        """Boosting rounds in the model (trees / ``n_outputs``; McRank grows one tree per
        grade a round)."""
        return len(self.trees) // max(self.n_outputs, 1)

    def get_objective(self):
        """The objective instance (``transform``, ``predict_proba`` for McRank, ...)."""
        if self._objective is None:
            self._objective = get_objective(self.objective, **self.objective_params)
        return self._objective

    _objective_instance = get_objective  # old private name, still used by branches

    def _packed_for(self, n_iter: int) -> PackedEnsemble:
        """The first ``n_iter`` rounds: one packed ensemble of every tree, cut to its
        first trees (children are tree-local, so the nodes need no cut).  A packed copy
        per iteration asked for was kept instead: predicting each round of a 300-tree
        model in turn (a staged validation curve) held ~200 MB, quadratic in the trees."""
        n_trees = len(self.trees)
        full = self._packed.get(n_trees)
        if full is None:
            full = pack_trees(self.trees, self.tree_outputs[:n_trees])
            self._packed = {n_trees: full}
        k = n_iter * self.n_outputs
        if k == n_trees:
            return full
        return full._replace(
            tree_offsets=full.tree_offsets[: k + 1], tree_output=full.tree_output[:k]
        )

    def _resolve_iterations(self, iteration: int | None) -> int:
        if iteration is None:
            n = self.best_iteration if self.best_iteration is not None else self.n_iterations
        else:
            n = as_iteration_count(iteration, self.n_iterations)
        if not 0 <= n <= self.n_iterations:
            raise ValueError(f"iteration={iteration} must be between 0 and {self.n_iterations}")
        return n

    def predict_raw(
        self,
        X: NDArray[np.floating],
        iteration: int | None = None,
        n_threads: int | None = None,
    ) -> NDArray[np.float64]:
        """Raw scores of ``X``, shape (n_outputs, n_samples), using the first
        ``iteration`` rounds (default: the best iteration when early stopping chose one,
        else all), on ``n_threads`` threads (None: the default, as in training).

        A C-ordered, writeable float64 or float32 NumPy ``X`` is read in place, never
        copied or changed; any other ``X`` is converted to such a copy first."""
        X = self._feature_matrix(X, stacklevel=4)
        n_iter = self._resolve_iterations(iteration)
        out = np.empty((self.n_outputs, X.shape[0]), dtype=SCORE_DTYPE)
        out[:] = self.init_score[:, None]
        with threads(n_threads):
            predict_raw(self._packed_for(n_iter), X, out)
        if self.update_rule == "averaged":
            out /= averaged_divisor(n_iter)
        return out

    def _feature_matrix(self, X: Any, stacklevel: int) -> Any:
        """``X`` as prediction reads it (a float NumPy array or a SciPy sparse matrix),
        its width checked against the model's; a warning ``stacklevel`` frames up."""
        from ltrboost.dataset import as_feature_matrix, split_prediction_qid

        # a frame's qid column is no feature (unless the model has one of that name), as
        # Ranker.predict reads it: a load_model Booster predicts what the Ranker did
        X, _ = split_prediction_qid(X, self.feature_names)
        # read in place when it can be: a copy doubled the memory of predicting
        X, _ = as_feature_matrix(X, self.feature_names, keep_sparse=True, copy=False)
        from ltrboost.binning import is_sparse

        if self.missing == "nan" and is_sparse(X):
            import warnings

            warnings.warn(
                "the model was trained with --missing nan (a feature absent from a LETOR "
                "line is missing), but the absent entries of a sparse X are 0: they "
                "follow the splits' zero side, not the missing side; give the data as "
                "ltrboost.load_svmlight(path, missing='nan') reads it",
                UserWarning,
                stacklevel=stacklevel,
            )
        if X.shape[1] != self.n_features:
            raise ValueError(
                f"X has {X.shape[1]} features but the model was trained with {self.n_features}"
            )
        return X

    def predict(
        self,
        X: NDArray[np.floating],
        iteration: int | None = None,
        n_threads: int | None = None,
        *,
        pred_contrib: bool = False,
        pred_leaf: bool = False,
    ) -> NDArray[np.float64]:
        """Ranking scores of ``X``, shape (n_samples,): higher means ranked higher.

        ``X`` as in training (array, DataFrame taken by column name, sparse matrix);
        a DataFrame's ``qid`` column is no feature and is ignored, as
        ``Ranker.predict`` ignores it (unless the model has a feature named ``qid``);
        ``iteration`` and ``n_threads`` as in :meth:`predict_raw`.  For a model trained
        with ``ltrboost train --missing nan`` (``missing == "nan"``) read LETOR data
        as ``load_svmlight(path, missing="nan")`` does, as ``ltrboost predict`` reads
        it: a sparse ``X`` (whose absent entries are 0) warns.

        ``pred_contrib=True``: TreeSHAP feature contributions instead (LightGBM's
        ``pred_contrib``, XGBoost's ``pred_contribs``; path-dependent, each branch
        weighted by the training documents that reached it; exact to rounding at any
        depth, see :mod:`ltrboost.explain`), float64 of shape
        (n_samples, n_features + 1): column ``j`` is feature ``j``'s contribution,
        the last column the expected score (initial score plus each tree's
        document-weighted mean leaf value, divided as the scores are under GBRank's
        averaged update), and each row sums to the score ``predict(X)``.  For
        ``mcrank`` (several outputs combined into an expected grade, which is not
        additive) the contributions are those of each output's raw score (the grade
        logits of :meth:`predict_raw`), LightGBM's multiclass layout: shape
        (n_samples, n_outputs * (n_features + 1)), columns ``k * (n_features + 1)``
        onward for output ``k``, each block summing to ``predict_raw(X)[k]``.  An
        output (plus TreeSHAP's per-thread path buffers) over half the memory this
        process may use is refused up front with a ``MemoryError`` naming the most
        rows that fit: predict in row blocks (README, *Inspection*).

        ``pred_leaf=True``: the leaf each row reaches in each tree used, int32 of shape
        (n_samples, n_trees): column ``t`` is tree ``trees[t]`` (McRank: ``n_outputs``
        trees a round) and the value the leaf's node index within that tree, the
        ``node`` column of :meth:`trees_to_dataframe` and the number ``dump_text``
        starts its line with (XGBoost's numbering, not LightGBM's 0..leaves-1).  An
        output over half the memory this process may use is refused up front, as
        ``pred_contrib``'s (:class:`ltrboost.explain.PredictMemoryError`).
        """
        if pred_contrib and pred_leaf:
            raise ValueError("pred_contrib=True and pred_leaf=True: ask for one of them")
        if not (pred_contrib or pred_leaf):
            raw = self.predict_raw(X, iteration=iteration, n_threads=n_threads)
            return np.ascontiguousarray(self.get_objective().transform(raw))
        from ltrboost import explain

        X = self._feature_matrix(X, stacklevel=3)
        n_iter = self._resolve_iterations(iteration)
        ens = self._packed_for(n_iter)
        with threads(n_threads):
            if pred_leaf:
                return explain.predict_leaf(ens, X)
            count = [t["count"] for t in self.trees[: n_iter * self.n_outputs]]
            out = explain.predict_contrib(
                ens,
                np.concatenate(count) if count else np.zeros(0, np.int64),
                X,
                self.n_outputs,
                self.init_score,
                averaged_divisor(n_iter) if self.update_rule == "averaged" else 1,
            )
        return out.reshape(out.shape[0], out.shape[1] * out.shape[2])

    # Inspection: thin wrappers over ltrboost.inspection (documented there).
    def feature_importance(
        self, importance_type: str = "gain", iteration: int | None = None
    ) -> NDArray[np.float64]:
        """Per-feature total split gain (``importance_type="gain"``) or number of
        splits (``"split"``), shape (n_features,); not normalised.  ``iteration``: the
        first rounds counted (default: those ``predict`` uses)."""
        from ltrboost.inspection import feature_importance

        return feature_importance(self, importance_type, iteration)

    def trees_to_dataframe(self):
        """Every node of every tree as a row of a pandas DataFrame."""
        from ltrboost.inspection import trees_to_dataframe

        return trees_to_dataframe(self)

    def dump_text(self, iteration: int | None = None) -> str:
        """The trees as indented text, one node per line; ``iteration``: the first
        rounds dumped (default: every round, also past the best one)."""
        from ltrboost.inspection import dump_text

        return dump_text(self, iteration)

    def export(self, path: str, format: str, feature_names=None, **options) -> None:
        """Write the model to ``path`` as ``format`` (lightgbm, xgboost, xgboost-dump,
        solr, ranklib, onnx) for the engine that serves it, naming feature ``i``
        ``feature_names[i]`` (default: the model's names, else ``f0, f1, ...``); see
        :func:`ltrboost.export.export_model` and docs/deploy.md."""
        from ltrboost.export import export_model

        export_model(self, path, format, feature_names, **options)

    # --- model files ---
    def model_fields(self) -> dict[str, Any]:
        """The model as plain fields (the keyword arguments of this class), as the
        JSON layer :mod:`ltrboost.io.model_json` reads and writes them."""
        return {
            "objective": self.objective,
            "objective_params": self.objective_params,
            "init_score": self.init_score,
            "trees": self.trees,
            "tree_outputs": self.tree_outputs,
            "n_features": self.n_features,
            "update_rule": self.update_rule,
            "best_iteration": self.best_iteration,
            "params": self.params,
            "feature_names": self.feature_names,
            "evals_result": self.evals_result,
            "n_outputs": self.n_outputs,
            "missing": getattr(self, "missing", None),
            "position_bias": getattr(self, "position_bias", None),
            "trained_with_nan": getattr(self, "trained_with_nan", False),
            "best_position_bias": getattr(self, "best_position_bias", None),
            "training_inputs": getattr(self, "training_inputs", None),
        }

    def to_dict(self) -> dict[str, Any]:
        """The model file's JSON document (see :mod:`ltrboost.io.model_json`)."""
        return model_json.model_to_dict(self.model_fields())

    @classmethod
    def from_dict(cls, d: Any, path: str | None = None) -> Booster:
        """A booster from a model document ``d`` (:meth:`to_dict`); ``ModelFormatError``
        (naming ``path`` when given) if it is invalid."""
        return cls(**model_json.model_fields_from_dict(d, path=path))

    def save_model(self, path: str | os.PathLike) -> None:
        """Write the model as JSON to ``path``, atomically."""
        model_json.save_model(self, path)


def _bias_lists(bias: Any) -> dict[str, list[float]] | None:
    """Position-bias estimates as ``{"t_plus": [floats], "t_minus": [floats]}``."""
    if bias is None:
        return None
    return {k: [float(v) for v in bias[k]] for k in ("t_plus", "t_minus")}


def load_model(path: str | os.PathLike) -> Booster:
    """Read and validate the model file ``path`` written by :meth:`Booster.save_model`."""
    return Booster(**model_json.read_model_fields(path))


def model_from_json(text: str, path: str | None = None) -> Booster:
    """A booster from the text of a model file."""
    return Booster(**model_json.model_fields_from_json(text, path=path))


def booster_from_dict(d: Any, path: str | None = None) -> Booster:
    """A booster from a parsed model document (alias of :meth:`Booster.from_dict`)."""
    return Booster.from_dict(d, path=path)


def feature_importance_gain(booster: Booster) -> NDArray[np.float64]:
    """Total split gain per feature (see :meth:`Booster.feature_importance`)."""
    return booster.feature_importance()

"""The boosting loop: binning, gradients, trees, shrinkage, early stopping, callbacks.

``train(params, train_set, valid_sets=...)`` returns a :class:`Booster`.  Train and
validation raw scores are kept incrementally (pygbm's quadratic re-prediction is the
mistake this avoids): after each tree the training scores are updated from the grower's
row partition and the validation scores from a binned prediction of that one tree.

Update rules
------------
* ``additive`` (every objective but GBRank): ``F_k = F_{k-1} + eta * f_k``.
* ``averaged`` (GBRank, seed 002): ``F_k = (k F_{k-1} + eta g_k) / (k + 1)``, which
  unrolls to ``F_T = (F_0 + eta * sum_k g_k) / (T + 1)``; the booster keeps the sum and
  divides, so prediction after reloading reproduces it exactly.

Query bagging (``subsample < 1``) draws whole queries per iteration; feature subsampling
(``colsample_bytree < 1``) draws features per tree.  Both use one
``numpy.random.Generator`` seeded by ``random_state`` and consumed in a fixed order, so a
seed fixes the model for any thread count.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltrboost._checks import check_param_types, check_round_finite
from ltrboost._config import G_H_DTYPE, INDEX_DTYPE, SCORE_DTYPE
from ltrboost._evaluation import (
    _bind_metrics,
    _metrics,
    _params_for_model,
    check_training_setup,
    metric_options,
)
from ltrboost._numba import threads
from ltrboost.binning import BinMapper, UsedFeatures, check_histogram_memory
from ltrboost.criteria import CRITERIA
from ltrboost.dataset import RankingDataset, rows_located
from ltrboost.grower import GROWTH_POLICIES, GrowerParams, TreeGrower
from ltrboost.objectives.registry import get_objective
from ltrboost.tree import (
    PackedEnsemble,
    add_leaf_values,
    pack_trees,
    predict_binned_tree,
    predict_raw,
)

# Parameters that belong to objectives (passed through when the objective takes them).
OBJECTIVE_PARAM_NAMES = (
    "sigma",
    "lambda_metric",
    "truncation_level",
    "pair_method",
    "pairs_per_sample",
    "lambda_normalization",
    "gain",
    "relevance_threshold",
    "positive_threshold",
    "label_scale",
    "tau",
    "preference_weight",
    "use_label_pairs",
)


@dataclass
class BoosterParams:
    """Every training parameter, with its default.  Names follow sklearn HGB.

    Engine: ``n_estimators`` rounds (one tree per output per round), ``learning_rate``
    (shrinkage eta; None = the objective's default, 0.1, or 1.0 for ``gbrank``),
    ``max_leaf_nodes``, ``max_depth`` (None: unlimited),
    ``min_samples_leaf``, ``min_sum_hessian_in_leaf``, ``l2_regularization`` (lambda in
    -G/(H+lambda)), ``min_gain_to_split``, ``max_bins`` (<= 255, plus a missing bin), ``min_samples_bin`` (documents a bin of a
    low-cardinality feature must hold, LightGBM's ``min_data_in_bin``, default 3),
    ``split_criterion`` ("newton" | "se" | "ole"), ``growth`` ("best_first" |
    "breadth_first" | "depth_first"), ``subsample`` (fraction of *queries* per round),
    ``colsample_bytree`` (fraction of features per tree), ``random_state``,
    ``n_threads`` (None, 0 or negative: all cores; more than the cores: capped at
    them; a thread count never changes the model).
    Integer parameters must be integers (``1.5`` and ``True`` are refused) and real
    ones finite real numbers.
    Early stopping: ``early_stopping_rounds`` on the first metric of ``eval_metric`` over
    the first validation set.
    Objective: ``objective`` and the objective parameters in ``OBJECTIVE_PARAM_NAMES``
    (None means the objective's own default; ``truncation_level=0`` means all pairs).
    """

    objective: str = "lambdamart"
    n_estimators: int = 100
    learning_rate: float | None = None
    max_leaf_nodes: int = 31
    max_depth: int | None = None
    min_samples_leaf: int = 20
    min_sum_hessian_in_leaf: float = 1e-3
    l2_regularization: float = 0.0
    min_gain_to_split: float = 0.0
    max_bins: int = 255
    min_samples_bin: int = 3
    split_criterion: str = "newton"
    growth: str = "best_first"
    subsample: float = 1.0
    colsample_bytree: float = 1.0
    random_state: int = 0
    n_threads: int | None = None
    early_stopping_rounds: int | None = None
    eval_metric: str | list[str] | None = None
    # objective parameters
    sigma: float | None = None
    lambda_metric: str | None = None
    truncation_level: int | None = None
    pair_method: str | None = None
    pairs_per_sample: int | None = None
    lambda_normalization: bool | None = None
    gain: str | None = None
    relevance_threshold: float | None = None
    positive_threshold: float | None = None
    label_scale: Any = None
    tau: Any = None
    preference_weight: float | None = None
    use_label_pairs: bool | None = None

    def validate(self) -> None:
        def check(cond: bool, msg: str) -> None:
            if not cond:
                raise ValueError(msg)

        check_param_types(self)  # integers, finite reals, booleans; then the ranges

        check(
            int(self.n_estimators) >= 1,
            f"n_estimators={self.n_estimators} must be >= 1",
        )
        check(
            self.learning_rate is None
            or (math.isfinite(self.learning_rate) and self.learning_rate > 0),
            f"learning_rate={self.learning_rate} must be > 0",
        )
        check(
            int(self.max_leaf_nodes) >= 2,
            f"max_leaf_nodes={self.max_leaf_nodes} should not be smaller than 2",
        )
        check(
            self.max_depth is None or int(self.max_depth) >= 1,
            f"max_depth={self.max_depth} must be >= 1 or None",
        )
        check(
            int(self.min_samples_leaf) >= 1,
            f"min_samples_leaf={self.min_samples_leaf} must be >= 1",
        )
        check(
            self.min_sum_hessian_in_leaf >= 0,
            f"min_sum_hessian_in_leaf={self.min_sum_hessian_in_leaf} must be >= 0",
        )
        check(
            self.l2_regularization >= 0,
            f"l2_regularization={self.l2_regularization} must be >= 0",
        )
        check(
            math.isfinite(self.min_gain_to_split) and self.min_gain_to_split >= 0,
            f"min_gain_to_split={self.min_gain_to_split} must be finite and >= 0",
        )
        check(
            2 <= int(self.max_bins) <= 255,
            f"max_bins={self.max_bins} must be in [2, 255]",
        )
        check(
            int(self.min_samples_bin) >= 1,
            f"min_samples_bin={self.min_samples_bin} must be >= 1",
        )
        check(
            self.split_criterion in CRITERIA,
            f"split_criterion={self.split_criterion!r} is not one of {CRITERIA}",
        )
        check(
            self.growth in GROWTH_POLICIES,
            f"growth={self.growth!r} is not one of {GROWTH_POLICIES}",
        )
        check(0 < self.subsample <= 1, f"subsample={self.subsample} must be in (0, 1]")
        check(
            0 < self.colsample_bytree <= 1,
            f"colsample_bytree={self.colsample_bytree} must be in (0, 1]",
        )
        check(
            self.early_stopping_rounds is None or int(self.early_stopping_rounds) >= 1,
            f"early_stopping_rounds={self.early_stopping_rounds} must be >= 1 or None",
        )

    @classmethod
    def from_dict(cls, params: dict[str, Any]) -> BoosterParams:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(params) - names)
        if unknown:
            raise ValueError(f"unknown parameter(s) {unknown}; valid: {sorted(names)}")
        return cls(**params)

    def objective_kwargs(self) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in OBJECTIVE_PARAM_NAMES
            if getattr(self, k) is not None
        }


def make_objective(params: BoosterParams):
    """Instantiate the objective with the parameters it accepts (others are ignored)."""
    kwargs = params.objective_kwargs()
    obj = get_objective(params.objective)  # validates the name
    sig = inspect.signature(type(obj).__init__)
    accepts_any = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    if not accepts_any:
        kwargs = {k: v for k, v in kwargs.items() if k in sig.parameters}
    if "random_state" in sig.parameters:
        kwargs["random_state"] = params.random_state
    if kwargs.get("truncation_level") == 0:
        kwargs["truncation_level"] = None  # 0 = no truncation: every pair
    return get_objective(params.objective, **kwargs)


@dataclass
class CallbackEnv:
    iteration: int  # 0-based round just finished
    n_estimators: int
    evaluation: dict[str, dict[str, float]]  # {valid_name: {metric: value}}
    best_iteration: int
    best_score: float | None
    elapsed: float
    snapshot: Callable[[], Booster] | None = None  # the model so far (for checkpoints)


class Booster:
    """A trained ensemble: trees, objective, initial scores and the update rule.

    Prediction uses numeric thresholds only, so a booster loaded from JSON predicts
    exactly as the one that was trained.
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
        self.feature_names = feature_names
        self.evals_result = evals_result or {}
        self.n_outputs = int(n_outputs)
        self._packed: dict[int, PackedEnsemble] = {}
        self._objective = None

    @property
    def n_iterations(self) -> int:
        return len(self.trees) // max(self.n_outputs, 1)

    def _objective_instance(self):
        if self._objective is None:
            self._objective = get_objective(self.objective, **self.objective_params)
        return self._objective

    def _packed_for(self, n_iter: int) -> PackedEnsemble:
        if n_iter not in self._packed:
            k = n_iter * self.n_outputs
            self._packed[n_iter] = pack_trees(self.trees[:k], self.tree_outputs[:k])
        return self._packed[n_iter]

    def _resolve_iterations(self, iteration: int | None) -> int:
        if iteration is None:
            n = (
                self.best_iteration
                if self.best_iteration is not None
                else self.n_iterations
            )
        else:
            n = int(iteration)
        if not 0 <= n <= self.n_iterations:
            raise ValueError(
                f"iteration={iteration} must be between 0 and {self.n_iterations}"
            )
        return n

    def predict_raw(
        self,
        X: NDArray[np.floating],
        iteration: int | None = None,
        n_threads: int | None = None,
    ) -> NDArray[np.float64]:
        """Raw scores, shape (n_outputs, n_samples), using the first ``iteration`` rounds
        (default: the best iteration when early stopping chose one, else all)."""
        from ltrboost.dataset import as_feature_matrix

        X, _ = as_feature_matrix(X, self.feature_names)
        if X.shape[1] != self.n_features:
            raise ValueError(
                f"X has {X.shape[1]} features but the model was trained with "
                f"{self.n_features}"
            )
        n_iter = self._resolve_iterations(iteration)
        out = np.empty((self.n_outputs, X.shape[0]), dtype=SCORE_DTYPE)
        out[:] = self.init_score[:, None]
        with threads(n_threads):
            predict_raw(self._packed_for(n_iter), X, out)
        if self.update_rule == "averaged":
            out /= n_iter + 1
        return out

    def predict(
        self,
        X: NDArray[np.floating],
        iteration: int | None = None,
        n_threads: int | None = None,
    ) -> NDArray[np.float64]:
        """Ranking scores, shape (n_samples,): higher means ranked higher."""
        raw = self.predict_raw(X, iteration=iteration, n_threads=n_threads)
        return np.ascontiguousarray(self._objective_instance().transform(raw))

    def save_model(self, path: str) -> None:
        from ltrboost.io.model_json import save_model

        save_model(self, path)

    def to_dict(self) -> dict[str, Any]:
        from ltrboost.io.model_json import booster_to_dict

        return booster_to_dict(self)

    def export(self, path: str, format: str, feature_names=None, **options) -> None:
        """Write the model as ``format`` (lightgbm, xgboost, xgboost-dump, solr, ranklib,
        onnx) for the engine that serves it; see :func:`ltrboost.export.export_model`
        and docs/deploy.md."""
        from ltrboost.export import export_model

        export_model(self, path, format, feature_names, **options)

    # Inspection: thin wrappers over ltrboost.inspection (documented there).
    def feature_importance(
        self, importance_type: str = "gain", iteration: int | None = None
    ) -> NDArray[np.float64]:
        """Per-feature total split gain (or number of splits), shape (n_features,)."""
        from ltrboost.inspection import feature_importance

        return feature_importance(self, importance_type, iteration)

    def trees_to_dataframe(self):
        """Every node of every tree as a row of a pandas DataFrame."""
        from ltrboost.inspection import trees_to_dataframe

        return trees_to_dataframe(self)

    def dump_text(self, iteration: int | None = None) -> str:
        """The trees as indented text, one node per line."""
        from ltrboost.inspection import dump_text

        return dump_text(self, iteration)


def _feature_importance_gain(booster: Booster) -> NDArray[np.float64]:
    imp = np.zeros(booster.n_features, dtype=np.float64)
    for nodes in booster.trees:
        inner = nodes[nodes["is_leaf"] == 0]
        np.add.at(imp, inner["feature_idx"], inner["gain"])
    return imp


def train(
    params: BoosterParams | dict[str, Any],
    train_set: RankingDataset,
    valid_sets: Sequence[tuple[str, RankingDataset]] = (),
    *,
    callbacks: Sequence[Callable[[CallbackEnv], bool | None]] = (),
    init_model: Booster | None = None,
) -> Booster:
    """Train a ranker.

    Parameters
    ----------
    params : BoosterParams or dict
    train_set : RankingDataset
    valid_sets : sequence of (name, RankingDataset)
        Evaluated after every round with ``eval_metric``; the first one drives early
        stopping.
    callbacks : callables receiving a :class:`CallbackEnv` after every round; returning
        True stops training.
    init_model : Booster, optional
        Continue boosting from this model (same data and parameters give the same result
        as an uninterrupted run, because the random generator is fast-forwarded).
    """
    if isinstance(params, dict):
        params = BoosterParams.from_dict(params)
    params.validate()
    if train_set.y is None:
        raise ValueError("the training set has no labels")
    if train_set.n_samples == 0:
        raise ValueError("the training set is empty")
    objective = make_objective(params)
    check_metrics(params, objective)  # a typo fails now, valid set or not
    check_training_setup(params, objective, valid_sets)
    # NaN/inf is detected after each tree (check_round_finite) and reported as one
    # error naming the round; NumPy's overflow warnings before it would only be noise.
    quiet = np.errstate(over="ignore", invalid="ignore")
    with threads(params.n_threads) as n_threads, quiet:
        return _train(
            params,
            objective,
            train_set,
            list(valid_sets),
            callbacks,
            init_model,
            n_threads,
        )


def check_metrics(params: BoosterParams, objective=None) -> None:
    """Raise ValueError naming the first unknown metric of ``params.eval_metric``."""
    from ltrboost.metrics import get_metric

    if objective is None:
        objective = make_objective(params)
    for name, fn in _metrics(params, objective):
        if fn is None:
            get_metric(name, **metric_options(params))


def _metric_names(params: BoosterParams, objective) -> list[str]:
    return [name for name, _ in _metrics(params, objective)]


def _train(params, objective, train_set, valid_sets, callbacks, init_model, n_threads):
    t_start = time.perf_counter()
    rng = np.random.default_rng(params.random_state)
    with rows_located(train_set):
        objective.prepare(train_set)
    n_out = objective.n_outputs(train_set)
    n = train_set.n_samples

    binner = BinMapper(
        params.max_bins,
        random_state=params.random_state,
        min_samples_bin=int(params.min_samples_bin),
    )
    # constant / absent columns cost nothing: trees are grown on the others
    used = UsedFeatures(train_set.X)
    check_histogram_memory(
        used, params, n, params.split_criterion == "ole" and objective.is_pairwise
    )
    X_binned = binner.fit_transform(used.take(train_set.X))
    grower = TreeGrower(
        X_binned,
        binner.n_bins_non_missing_,
        binner.missing_bin_,
        binner.thresholds_matrix(),
        GrowerParams(
            max_leaf_nodes=int(params.max_leaf_nodes),
            max_depth=None if params.max_depth is None else int(params.max_depth),
            min_samples_leaf=int(params.min_samples_leaf),
            min_sum_hessian_in_leaf=float(params.min_sum_hessian_in_leaf),
            l2_regularization=float(params.l2_regularization),
            min_gain_to_split=float(params.min_gain_to_split),
            split_criterion=params.split_criterion,
            growth=params.growth,
        ),
        n_threads=n_threads,
    )
    averaged = objective.update_rule == "averaged"
    init = np.asarray(objective.init_score(train_set), dtype=np.float64).reshape(n_out)
    raw = np.empty((n_out, n), dtype=SCORE_DTYPE)
    raw[:] = init[:, None]

    metric_names = _metric_names(params, objective)
    valid_state = []
    for name, vs in valid_sets:
        if vs.y is None:
            raise ValueError(f"validation set {name!r} has no labels")
        Xb = binner.transform(used.take(vs.X))
        rv = np.empty((n_out, vs.n_samples), dtype=SCORE_DTYPE)
        rv[:] = init[:, None]
        bound = _bind_metrics(params, objective, vs)
        valid_state.append((name, vs, Xb, rv, bound))

    trees: list[NDArray] = []
    outputs: list[int] = []
    evals_result: dict[str, dict[str, list[float]]] = {
        name: {m: [] for m in metric_names} for name, *_ in valid_state
    }
    start_iter = 0
    if init_model is not None:
        start_iter = _resume_from(
            init_model,
            objective,
            params,
            raw,
            valid_state,
            trees,
            outputs,
            evals_result,
            rng,
            train_set,
            binner,
        )

    gradients = np.zeros((n_out, n), dtype=G_H_DTYPE)
    hessians = np.zeros((n_out, n), dtype=G_H_DTYPE)
    best_score: float | None = None
    best_iter = 0
    n_features = train_set.X.shape[1]
    q_offsets = train_set.query_offsets
    # None: the objective's own default (0.1, or 1.0 for GBRank's averaged update).
    lr = float(
        objective.default_learning_rate
        if params.learning_rate is None
        else params.learning_rate
    )
    is_pairwise_ole = params.split_criterion == "ole" and objective.is_pairwise
    if best_score is None and start_iter > 0 and valid_state:
        hist = evals_result[valid_state[0][0]][metric_names[0]]
        if hist:
            best_iter = int(np.argmax(hist)) + 1
            best_score = float(hist[best_iter - 1])

    def make_booster() -> Booster:
        return Booster(
            objective=objective.name,
            objective_params=objective.get_params(),
            init_score=init,
            trees=list(trees),
            tree_outputs=list(outputs),
            n_features=n_features,
            update_rule=objective.update_rule,
            best_iteration=(
                best_iter if (valid_state and params.early_stopping_rounds) else None
            ),
            params=_params_for_model(params),
            feature_names=train_set.feature_names,
            evals_result={
                k: {m: list(v) for m, v in d.items()} for k, d in evals_result.items()
            },
            n_outputs=n_out,
        )

    for it in range(start_iter, int(params.n_estimators)):
        scores = raw / (it + 1) if averaged else raw
        obj_scores = scores[0] if n_out == 1 else scores
        obj_g = gradients[0] if n_out == 1 else gradients
        obj_h = hessians[0] if n_out == 1 else hessians
        objective.gradient_hessian(obj_scores, train_set, obj_g, obj_h, iteration=it)

        sample_indices, in_bag = _draw_bag(rng, params.subsample, q_offsets)
        pairs = None
        if is_pairwise_ole:
            pt = objective.pair_terms(obj_scores, train_set, iteration=it)
            if pt is not None:
                di, dj, rho = pt.doc_i, pt.doc_j, pt.rho
                if in_bag is not None:
                    keep = in_bag[di] & in_bag[dj]
                    di, dj, rho = di[keep], dj[keep], rho[keep]
                pairs = (
                    np.ascontiguousarray(di, dtype=np.int32),
                    np.ascontiguousarray(dj, dtype=np.int32),
                    np.ascontiguousarray(rho, dtype=np.float64),
                )
        for k in range(n_out):
            feats = used.to_compact(
                _draw_features(rng, params.colsample_bytree, n_features)
            )
            grown = grower.grow(gradients[k], hessians[k], sample_indices, feats, pairs)
            nodes = grown.nodes
            if objective.leaf_rule == "line_search":
                delta = np.zeros(n, dtype=np.float64)
                _apply_tree_train(
                    grown,
                    nodes["value"],
                    delta,
                    X_binned,
                    binner.missing_bin_,
                    sample_indices is not None,
                )
                alpha = float(objective.line_search(obj_scores, delta, train_set))
                nodes["value"] *= alpha * lr
            else:
                nodes["value"] *= lr
            _apply_tree_train(
                grown,
                nodes["value"],
                raw[k],
                X_binned,
                binner.missing_bin_,
                sample_indices is not None,
            )
            check_round_finite(  # the first NaN/inf stops training, naming the round
                it, gradients=gradients[k], hessians=hessians[k],
                leaf_values=nodes["value"], scores=raw[k],
                params=params, train_set=train_set, learning_rate=lr,
            )  # fmt: skip
            for _, _, Xb, rv, _ in valid_state:
                predict_binned_tree(nodes, Xb, binner.missing_bin_, rv[k])
            trees.append(used.to_original(nodes))
            outputs.append(k)

        # evaluation
        evaluation: dict[str, dict[str, float]] = {}
        for name, _, _, rv, bound in valid_state:
            vscores = rv / (it + 2) if averaged else rv
            ranked = objective.transform(vscores)
            res = {}
            for mname, bm in zip(metric_names, bound, strict=True):
                val = float(bm(ranked))
                res[mname] = val
                evals_result[name][mname].append(val)
            evaluation[name] = res
        stop = False
        if valid_state:
            first = evaluation[valid_state[0][0]][metric_names[0]]
            if best_score is None or first > best_score:
                best_score = first
                best_iter = it + 1
            elif params.early_stopping_rounds is not None and it + 1 - best_iter >= int(
                params.early_stopping_rounds
            ):
                stop = True
        env = CallbackEnv(
            iteration=it,
            n_estimators=int(params.n_estimators),
            evaluation=evaluation,
            best_iteration=best_iter,
            best_score=best_score,
            elapsed=time.perf_counter() - t_start,
            snapshot=lambda: make_booster(),
        )
        for cb in callbacks:
            if cb(env):
                stop = True
        if stop:
            break

    return make_booster()


def _apply_tree_train(grown, values, out, X_binned, missing_bin, bagged) -> None:
    """Add a grown tree's (already scaled) leaf values to the training scores."""
    if bagged:
        # out-of-bag rows are not in the partition: predict the tree on binned data
        nodes = grown.nodes.copy()
        nodes["value"] = values
        predict_binned_tree(nodes, X_binned, missing_bin, out)
        return
    starts = np.array([s for s, _, _ in grown.leaf_ranges], dtype=np.int64)
    stops = np.array([e for _, e, _ in grown.leaf_ranges], dtype=np.int64)
    vals = np.array([values[k] for _, _, k in grown.leaf_ranges], dtype=np.float64)
    add_leaf_values(grown.partition, starts, stops, vals, out)


def _draw_bag(rng, subsample: float, query_offsets):
    """Rows of a random subset of whole queries (sorted), or (None, None) for all."""
    if subsample >= 1.0:
        return None, None
    n_queries = query_offsets.shape[0] - 1
    k = max(1, int(round(subsample * n_queries)))
    chosen = np.sort(rng.choice(n_queries, size=k, replace=False))
    sizes = query_offsets[chosen + 1] - query_offsets[chosen]
    starts = query_offsets[chosen]
    rows = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
    rows = rows + np.arange(int(sizes.sum()))
    in_bag = np.zeros(int(query_offsets[-1]), dtype=bool)
    in_bag[rows] = True
    return rows.astype(INDEX_DTYPE), in_bag


def _draw_features(rng, fraction: float, n_features: int):
    if fraction >= 1.0:
        return None
    k = max(1, int(round(fraction * n_features)))
    return np.sort(rng.choice(n_features, size=k, replace=False)).astype(np.int32)


def _resume_from(
    init_model,
    objective,
    params,
    raw,
    valid_state,
    trees,
    outputs,
    evals_result,
    rng,
    train_set,
    binner,
) -> int:
    """Load a previous booster's trees, replay its scores and random draws."""
    if init_model.objective != objective.name:
        raise ValueError(
            f"cannot resume: the model was trained with objective="
            f"{init_model.objective!r}, not {objective.name!r}"
        )
    n_out = raw.shape[0]
    if init_model.n_outputs != n_out:
        raise ValueError("cannot resume: the model has a different number of outputs")
    if init_model.n_features != train_set.X.shape[1]:
        raise ValueError(
            f"cannot resume: the model was trained on {init_model.n_features} features, "
            f"the training data has {train_set.X.shape[1]}"
        )
    done = init_model.n_iterations
    trees.extend(t.copy() for t in init_model.trees[: done * n_out])
    outputs.extend(init_model.tree_outputs[: done * n_out])
    packed = pack_trees(trees, outputs)
    predict_raw(packed, train_set.X, raw)
    for _, vs, _, rv, _ in valid_state:
        predict_raw(packed, vs.X, rv)
    for name, res in (init_model.evals_result or {}).items():
        if name in evals_result:
            for m, vals in res.items():
                if m in evals_result[name]:
                    evals_result[name][m].extend(vals[:done])
    # Fast-forward the random generator through the draws of the finished rounds.
    q_offsets = train_set.query_offsets
    n_features = train_set.X.shape[1]
    for _ in range(done):
        _draw_bag(rng, params.subsample, q_offsets)
        for _k in range(n_out):
            _draw_features(rng, params.colsample_bytree, n_features)
    return done

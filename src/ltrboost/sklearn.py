"""``Ranker``: the scikit-learn style estimator, a thin adapter over :func:`booster.train`.

Every training parameter of :data:`ltrboost.params.PARAMS` is a constructor argument
with the same name and default (the CLI exposes each one as a kebab-case flag), followed
by the estimator's own :data:`ESTIMATOR_PARAM_NAMES`.  The constructor spells them out
because scikit-learn reads its signature; a test checks it against the list.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator

from ltrboost._callsite import external_stacklevel
from ltrboost._evaluation import name_problem
from ltrboost.booster import CallbackEnv, check_callbacks, train
from ltrboost.callbacks import check_period, log_best, log_evaluation
from ltrboost.dataset import (
    RankingDataset,
    arrow_as_frame,
    has_qid_column,
    make_dataset,
    qid_column,
    rows_located,
    split_prediction_qid,
)
from ltrboost.model import Booster
from ltrboost.params import PARAM_NAMES, BoosterParams

# Constructor arguments that are not training parameters (after PARAM_NAMES).
ESTIMATOR_PARAM_NAMES: tuple[str, ...] = ("importance_type", "verbose")


class Ranker(BaseEstimator):
    """Gradient-boosted tree ranker (LambdaMART by default).

    Parameters are the training parameters of :data:`ltrboost.params.PARAMS`, with the
    same names and defaults (each one's meaning: ``help(ltrboost.BoosterParams)``); the
    objective's own ones default to None, the objective's default.  ``objective`` may
    also be a callable ``fn(scores, labels, query_offsets) -> (grad, hess)``, a custom
    loss (docs/custom.md).  Two more, not training parameters: ``importance_type``
    ("gain", default, or "split") chooses what ``feature_importances_`` counts;
    ``verbose`` (0, default: silent) logs the validation metrics every ``verbose``
    rounds through :mod:`logging` (logger ``"ltrboost"``, see
    :func:`ltrboost.callbacks.log_evaluation`); True means every round, a negative
    value (LightGBM's ``verbose=-1``) is silent, as 0.

    ``random_state`` also takes scikit-learn's other forms: None is the default seed 0
    (reproducible, as LightGBM's and XGBoost's None), and a ``np.random.RandomState``
    or ``Generator`` gives a seed drawn from it at each fit (recorded in the model as
    ``booster_.params["random_state"]``); ``get_params`` returns it as given.

    Attributes
    ----------
    booster_ : Booster
    best_iteration_ : int or None
        With early stopping, the number of rounds up to and including the best one
        (1-based, LightGBM's convention; XGBoost's is 0-based), used by ``predict``;
        else None.
    evals_result_ : dict
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        The column names, when ``X`` (or ``init_model``) had them.
    position_bias_ : dict or None
        ``unbiased=True``: the estimated position biases.
    feature_importances_ : ndarray of shape (n_features,)
        Total split gain (or number of splits, ``importance_type="split"``) of each
        feature, normalised to sum to 1 (all 0 when no tree splits: a constant model).

    Examples
    --------
    >>> from ltrboost import Ranker
    >>> from ltrboost.datasets import make_ranking
    >>> X, y, qid = make_ranking(n_queries=50, random_state=0)
    >>> model = Ranker(n_estimators=20).fit(X, y, qid=qid)
    >>> scores = model.predict(X)
    """

    def __init__(
        self,
        *,
        objective: str | Callable = "lambdamart",
        n_estimators: int = 100,
        learning_rate: float | None = None,
        max_leaf_nodes: int = 31,
        max_depth: int | None = None,
        min_samples_leaf: int = 20,
        min_sum_hessian_in_leaf: float = 1e-3,
        l2_regularization: float = 0.0,
        min_gain_to_split: float = 0.0,
        max_bins: int = 255,
        min_samples_bin: int = 3,
        split_criterion: str = "newton",
        ole_top_features: int | None = None,
        growth: str = "best_first",
        subsample: float = 1.0,
        colsample_bytree: float = 1.0,
        random_state: int | np.random.RandomState | np.random.Generator | None = 0,
        random_strength: float = 0.0,
        quantized_gradients: int = 0,
        n_threads: int | None = None,
        early_stopping_rounds: int | None = None,
        eval_metric: str | list[str] | None = None,
        sigma: float | None = None,
        lambda_metric: str | None = None,
        truncation_level: int | None = None,
        pair_method: str | None = None,
        pairs_per_sample: int | None = None,
        lambda_normalization: bool | None = None,
        gain: str | None = None,
        relevance_threshold: float | None = None,
        positive_threshold: float | None = None,
        label_scale: Any = None,
        tau: Any = None,
        preference_weight: float | None = None,
        use_label_pairs: bool | None = None,
        permutations: int | None = None,
        decay: float | None = None,
        unbiased: bool | None = None,
        position_bias_norm: float | None = None,
        max_positions: int | None = None,
        importance_type: str = "gain",
        verbose: int | bool = 0,
    ) -> None:
        self.objective = objective
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.min_sum_hessian_in_leaf = min_sum_hessian_in_leaf
        self.l2_regularization = l2_regularization
        self.min_gain_to_split = min_gain_to_split
        self.max_bins = max_bins
        self.min_samples_bin = min_samples_bin
        self.split_criterion = split_criterion
        self.ole_top_features = ole_top_features
        self.growth = growth
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.random_state = random_state
        self.random_strength = random_strength
        self.quantized_gradients = quantized_gradients
        self.n_threads = n_threads
        self.early_stopping_rounds = early_stopping_rounds
        self.eval_metric = eval_metric
        self.sigma = sigma
        self.lambda_metric = lambda_metric
        self.truncation_level = truncation_level
        self.pair_method = pair_method
        self.pairs_per_sample = pairs_per_sample
        self.lambda_normalization = lambda_normalization
        self.gain = gain
        self.relevance_threshold = relevance_threshold
        self.positive_threshold = positive_threshold
        self.label_scale = label_scale
        self.tau = tau
        self.preference_weight = preference_weight
        self.use_label_pairs = use_label_pairs
        self.permutations = permutations
        self.decay = decay
        self.unbiased = unbiased
        self.position_bias_norm = position_bias_norm
        self.max_positions = max_positions
        self.importance_type = importance_type
        self.verbose = verbose

    def _booster_params(self, **overrides: Any) -> BoosterParams:
        p = {name: getattr(self, name) for name in PARAM_NAMES}
        p["random_state"] = _seed(self.random_state)
        p.update({k: v for k, v in overrides.items() if v is not None})
        return BoosterParams(**p)

    def fit(
        self,
        X: Any,
        y: ArrayLike,
        *,
        qid: ArrayLike | None = None,
        group: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
        pairs: Any = None,
        position: ArrayLike | None = None,
        eval_set: Sequence[tuple] | None = None,
        eval_names: Sequence[str] | None = None,
        eval_qid: Sequence[ArrayLike] | None = None,
        eval_group: Sequence[ArrayLike] | None = None,
        eval_metric: str | list[str] | None = None,
        early_stopping_rounds: int | None = None,
        callbacks: Sequence[Callable[[CallbackEnv], bool | None]] = (),
        init_model: Booster | Ranker | str | None = None,
        verbose: int | bool | None = None,
    ) -> Ranker:
        """Fit on documents ``X`` with graded labels ``y`` grouped by ``qid`` or ``group``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features); NaN = missing.
            A DataFrame may carry the query ids as a column named ``qid`` (XGBoost's
            convention), used when neither ``qid=`` nor ``group=`` is given; that
            column is not a feature.
        y : array-like of shape (n_samples,)
        qid : query id per row (rows of a query need not be contiguous), or
        group : documents per query, in row order (LightGBM style): whole numbers
            >= 1 summing to the rows (booleans are refused). Exactly one
            (or a ``qid`` column in ``X``).
        sample_weight : per-document weights (LightGBM's convention).
        pairs : optional explicit preferences, array of shape (n_pairs, 2) or (n_pairs, 3)
            of (preferred_row, other_row[, weight]) in the caller's row numbering
            (``[]``: no pairs).  For ``ranknet``, ``rankboost``, ``gbrank`` and
            ``qbrank``; they add to the label pairs unless ``use_label_pairs=False``.
            Rows are positions in this ``X``: pairs cannot be split by scikit-learn's
            cross-validation (README, "Explicit preferences").
        position : 1-based position each row was shown at (click data), for
            ``unbiased=True`` (Unbiased LambdaMART; ``y`` are then clicks).  Used to
            estimate the position bias during training only (``position_bias_``);
            ``predict`` takes no positions.
        eval_set : list of (X, y, qid) tuples; the first drives early stopping.
            Give sizes as a 4th element ``(X, y, None, sizes)``;
            ``(X, y)`` alone when ``X`` is a DataFrame with a ``qid`` column, or
            with ``eval_qid`` / ``eval_group``.
        eval_names : one distinct name per ``eval_set`` entry (default ``valid_K``;
            a None entry takes its default; an empty or blank name, or one holding a
            control character, is refused).
        eval_qid, eval_group : the queries of ``eval_set`` given apart, as XGBoost
            (``eval_qid``: query id per row) and LightGBM (``eval_group``: documents
            per query) take them: one entry per ``eval_set`` entry, which is then
            ``(X, y)``.  Not both.
        eval_metric, early_stopping_rounds : override the constructor's values.
            ``eval_metric`` may hold callables ``f(scores, labels, query_offsets) ->
            float`` (higher is better) besides metric names.
        init_model : Booster, fitted Ranker or model file path, optional
            Continue boosting from this model: ``n_estimators`` *more* rounds are
            added to it (as LightGBM's and XGBoost's ``init_model``/``xgb_model``).
            Its ``evals_result`` continues for an ``eval_set`` of the same name and
            data, and early stopping counts from its best round (a checkpoint's
            semantics); on other validation data its rounds are evaluated afresh and
            early stopping looks at the new rounds only (as LightGBM and XGBoost).
        callbacks : callables receiving a :class:`~ltrboost.booster.CallbackEnv` after
            every round, as in :func:`ltrboost.train` (True stops training).
        verbose : overrides the constructor's ``verbose`` for this fit (XGBoost's
            ``fit(verbose=)``): log the metrics every ``verbose`` rounds (0 or
            negative: silent).
        """
        params = self._booster_params(
            eval_metric=eval_metric, early_stopping_rounds=early_stopping_rounds
        )
        self._check_estimator_params()
        if y is None:  # before the queries: scikit-learn's words (check_requires_y_none)
            from ltrboost.dataset import LTRInputError

            raise LTRInputError(
                f"{type(self).__name__} requires y to be passed, but the target y is None: "
                "labels y are required (a relevance grade per row)"
            )
        X, qid = _split_qid_column(arrow_as_frame(X), qid, group)
        _require_queries(qid, group, "fit", X)
        init_model = _as_booster(init_model)
        if init_model is not None:  # its trees read features by its names
            X = _by_names(X, init_model.feature_names, "X (the columns of init_model)")
        train_set = make_dataset(
            X, y, qid=qid, group=group, sample_weight=sample_weight, position=position
        )
        _refuse_renamed_qid(X, qid, group)  # after make_dataset checked the queries
        if pairs is not None:
            train_set.pairs = _pairs_from_array(pairs, train_set)
        eval_set, eval_names = check_eval_set(eval_set, eval_names)
        eval_queries = _eval_queries(eval_set, eval_qid, eval_group)
        # the model's names: the data's, or (an array continuing a named model) init's
        names = train_set.feature_names
        if names is None and init_model is not None:
            names = init_model.feature_names
        valid_sets = []
        for k, es in enumerate(eval_set):
            name = eval_names[k] if eval_names else f"valid_{k}"  # a name 0 is "0"
            try:
                vds = _eval_dataset(es, *eval_queries[k], index=k, names=names)
            except ValueError as e:  # say which validation set the bad row is in
                raise _in_eval_set(e, k) from e
            if vds.X.shape[1] != train_set.X.shape[1]:
                raise ValueError(
                    f"eval_set[{k}] has {vds.X.shape[1]} features but X has {train_set.X.shape[1]}"
                )
            valid_sets.append((name, vds))
        if init_model is not None:
            # n_estimators counts the rounds added to init_model (LightGBM, XGBoost); checked
            # as given (int() took 2.5 as 2, True as 1, "3" as 3 and 0 as no round)
            params.validate()
            params.n_estimators = init_model.n_iterations + params.n_estimators
        period, callbacks = self._logging_callbacks(verbose, callbacks)
        self.booster_ = train(
            params, train_set, valid_sets, callbacks=callbacks, init_model=init_model
        )
        self._set_fitted(period, params, eval_metric)
        return self

    def _check_estimator_params(self) -> None:
        """Refuse the estimator's own parameters at fit (scikit-learn validates there,
        not in ``__init__``); the training parameters are checked by ``train``."""
        from ltrboost.inspection import IMPORTANCE_TYPES

        if self.importance_type not in IMPORTANCE_TYPES:  # refused by fit, not later
            raise ValueError(
                f"importance_type={self.importance_type!r} is not one of {IMPORTANCE_TYPES}"
            )

    def _logging_callbacks(self, verbose: Any, callbacks: Any) -> tuple[int, list]:
        """The logging period (fit's ``verbose``, else the constructor's) and the
        callbacks checked, with :func:`log_evaluation` first when logging."""
        period = check_period(
            self.verbose if verbose is None else verbose,
            "verbose" if verbose is None else "fit's verbose",
            negative_is_silent=True,
        )
        callbacks = check_callbacks(callbacks)
        if period:
            callbacks.insert(0, log_evaluation(period))
        return period, callbacks

    def _set_fitted(self, period: int, params: BoosterParams, eval_metric: Any) -> None:
        """After training ``booster_``: the best-round log line, ``n_features_in_``,
        ``feature_names_in_`` and the metric ``score`` defaults to."""
        booster = self.booster_
        if period:
            log_best(booster, int(params.n_estimators))
        self.n_features_in_ = booster.n_features
        if booster.feature_names is not None:  # the data's, or init_model's
            self.feature_names_in_ = np.asarray(booster.feature_names, dtype=object)
        elif hasattr(self, "feature_names_in_"):  # refit on an array: no names now
            del self.feature_names_in_
        # score()'s default metric: fit's eval_metric when given, else the constructor's
        self._fit_eval_metric = eval_metric

    @property
    def position_bias_(self) -> dict[str, NDArray[np.float64]] | None:
        """``unbiased=True``: the estimated position biases ``{"t_plus": ..., "t_minus":
        ...}`` (index ``k - 1`` for position ``k``, position 1 is 1) of the rounds
        ``predict`` uses: after ``best_iteration_`` with early stopping (those of a run
        of that many rounds), else after the last round; None without ``unbiased``.
        ``booster_.position_bias`` is always the last round's (resuming continues from
        it).  A model that does not hold the best iteration's estimates (a file written
        before they were kept, or resumed from one) gives the last round's, with a
        warning."""
        self._check_fitted()
        bias = getattr(self.booster_, "best_position_bias", None)
        if bias is None:
            bias = self.booster_.position_bias
            best, last = self.booster_.best_iteration, self.booster_.n_iterations
            if bias is not None and best is not None and best < last:
                warnings.warn(
                    f"position_bias_: these are the estimates after round {last} (the "
                    f"last one), not after best_iteration_ {best} (the rounds predict "
                    "uses): the model does not hold those (a model file written before "
                    "they were kept as position_bias.best_iteration, or resumed from a "
                    "model that did not keep them)",
                    UserWarning,
                    stacklevel=2,
                )
        return None if bias is None else {k: np.asarray(v) for k, v in bias.items()}

    @property
    def best_iteration_(self) -> int | None:
        """With early stopping, the 1-based number of rounds up to the best one (what
        ``predict`` uses); else None."""
        self._check_fitted()
        return self.booster_.best_iteration

    @property
    def evals_result_(self) -> dict:
        """The validation metrics of every round, ``{set name: {metric: [values]}}``."""
        self._check_fitted()
        return self.booster_.evals_result

    @property
    def feature_importances_(self) -> NDArray[np.float64]:
        """Per-feature ``importance_type`` importance, normalised to sum to 1 (all 0 for
        a model without a split)."""
        self._check_fitted()
        imp = self.booster_.feature_importance(self.importance_type)
        total = imp.sum()
        return imp / total if total > 0 else imp

    def predict(
        self,
        X: Any,
        *,
        iteration: int | None = None,
        pred_contrib: bool = False,
        pred_leaf: bool = False,
    ) -> NDArray[np.float64]:
        """Ranking scores of ``X`` (higher ranks higher); comparable only within a query.

        ``iteration``: the first rounds used (default: ``best_iteration_`` when early
        stopping set one, else every round).  A DataFrame's columns are matched to the
        fit-time names (any order); a ``qid`` column that was not a feature is ignored.
        An array given to a model fitted with names (or a DataFrame to one without) is
        taken by position, with scikit-learn's warning.
        Runs on ``n_threads`` threads, as ``fit`` does.

        ``pred_contrib=True``: TreeSHAP feature contributions, shape (n_samples,
        n_features + 1), the last column the expected score, each row summing to the
        score; ``pred_leaf=True``: the leaf (node index within its tree) each row
        reaches in each tree, int32 of shape (n_samples, n_trees).  As
        :meth:`ltrboost.Booster.predict` (which says what McRank gives).
        """
        self._check_fitted()
        X, _ = self._drop_qid_column(X)
        self._check_n_features(X)
        return self.booster_.predict(
            X,
            iteration=iteration,
            n_threads=self.n_threads,
            pred_contrib=pred_contrib,
            pred_leaf=pred_leaf,
        )

    def _check_n_features(self, X: Any) -> None:
        """Refuse an array (not a DataFrame: its columns are taken by name) with
        another number of columns than the model's, in scikit-learn's words (its
        check_n_features_in_after_fitting looks for them), before anything else: score
        said first that it had no queries."""
        if hasattr(X, "columns"):
            return
        shape = getattr(X, "shape", None)
        if shape is None:
            try:
                shape = np.shape(X)
            except ValueError:  # ragged rows: as_feature_matrix names the row
                return
        n = self.booster_.n_features
        if len(shape) == 2 and shape[1] != n:
            raise ValueError(
                f"X has {shape[1]} features, but {type(self).__name__} is expecting {n} "
                f"features as input (the model was trained with {n})"
            )

    def _warn_unnamed_fit(self) -> None:
        """scikit-learn's warning, in its words, for a frame given to a model fitted
        without feature names: its columns are taken by position.  It points at the
        user's call (``predict``, ``score``; ``DaskRanker.score`` is one frame deeper)."""
        warnings.warn(
            f"X has feature names, but {type(self).__name__} was fitted without "
            "feature names (its columns are taken by position)",
            UserWarning,
            stacklevel=external_stacklevel(),
        )

    def _warn_named_fit(self) -> None:
        """scikit-learn's warning, in its words, for an array (or sparse matrix) given
        to a model fitted with feature names: its columns are taken by position.  It
        points at the user's call, as :meth:`_warn_unnamed_fit`."""
        warnings.warn(
            f"X does not have valid feature names, but {type(self).__name__} was fitted "
            "with feature names (its columns are taken by position, in the order of "
            "feature_names_in_)",
            UserWarning,
            stacklevel=external_stacklevel(),
        )

    def _drop_qid_column(self, X: Any) -> tuple[Any, Any]:
        X = arrow_as_frame(X)
        names = self.booster_.feature_names
        if names is None and hasattr(X, "columns"):
            self._warn_unnamed_fit()
        elif names is not None and not hasattr(X, "columns"):
            self._warn_named_fit()
        return split_prediction_qid(X, names)

    @property
    def predict_proba(self) -> Callable[..., NDArray[np.float64]]:
        """Grade probabilities (objective ``mcrank`` only), shape (n_samples, K + 1):
        ``predict_proba(X, *, iteration=None)``.

        Column ``k`` is grade ``k`` for ``k = 0..K``, ``K`` the largest training grade
        (``booster_.n_outputs == K + 1``), including grades between that are absent from
        the training labels (their probability stays near the 1e-6 prior floor); each
        row sums to 1 and ``predict_proba(X) @ arange(K + 1)`` is ``predict(X)`` to
        rounding (``predict`` sums ``k p_k`` in the order of ``k``, document by
        document, so that a score does not depend on the rows predicted with it).  A
        grade above ``K`` (e.g. only in a validation set) has no column.  ``iteration`` as in
        :meth:`predict` (default: ``best_iteration_``).

        For any other objective the attribute does not exist (``hasattr`` is False, as
        scikit-learn's checks expect) and reading it raises an AttributeError naming
        the objective.
        """
        if hasattr(self, "booster_"):
            name = self.booster_.objective
            ok = hasattr(self.booster_.get_objective(), "predict_proba")
        else:
            name = self.objective
            ok = name == "mcrank"
        if not ok:
            raise AttributeError(
                f"predict_proba is only available for objective='mcrank', not {name!r}"
            )
        return self._predict_proba

    def _predict_proba(self, X: Any, *, iteration: int | None = None) -> NDArray[np.float64]:
        self._check_fitted()
        X, _ = self._drop_qid_column(X)
        self._check_n_features(X)
        obj = self.booster_.get_objective()
        raw = self.booster_.predict_raw(X, iteration=iteration, n_threads=self.n_threads)
        return obj.predict_proba(raw)

    def score(
        self,
        X: Any,
        y: ArrayLike,
        *,
        qid: ArrayLike | None = None,
        group: ArrayLike | None = None,
        sample_weight: ArrayLike | None = None,
        metric: str | Callable | None = None,
    ) -> float:
        """Mean ``metric`` over queries of ``X`` with labels ``y`` (default metric: the
        first eval metric, else the one training validates on without one: the
        objective's, ``map`` / ``err@10`` under ``lambda_metric="map"`` / ``"err"``,
        otherwise ndcg@10).

        Queries come from ``qid=``, ``group=`` or a ``qid`` column of a DataFrame ``X``
        (``qid=`` / ``group=`` when both, with a warning if the column differs).
        A metric name uses the model's ``gain`` and ``relevance_threshold``; a
        :class:`~ltrboost.metrics.Metric` (``get_metric(...)``) keeps its own options.
        ``sample_weight`` (per document, as in ``fit``) weights each query by the mean
        weight of its documents (LightGBM's query weights).  A ``ParameterWarning`` (as
        ``ltrboost eval``) says when MAP, MRR or P@k is the same whatever the scores: its
        ``relevance_threshold`` counts every document of ``y`` relevant, or none.
        """
        from ltrboost._evaluation import warn_if_metric_flat, warn_if_queries_permuted
        from ltrboost.booster import metric_options
        from ltrboost.metrics import Metric, get_metric

        self._check_fitted()
        X, qid_col = self._drop_qid_column(X)
        self._check_n_features(X)
        if qid is None and group is None:
            qid = qid_col
            if qid_col is not None:  # permuted like a feature by permutation_importance?
                name = metric if isinstance(metric, str) else getattr(metric, "name", None)
                warn_if_queries_permuted(name or self._default_metric_name())
        elif qid_col is not None and not _same_queries(qid_col, qid, group):
            given = "qid" if qid is not None else "group"
            warnings.warn(  # fit warns too (there the column becomes a feature)
                f"X has a column named 'qid' that differs from the {given}= given: "
                f"score uses {given}= (drop the column, or give only one of them)",
                UserWarning,
                stacklevel=external_stacklevel(),  # the user's line (DaskRanker.score too)
            )
        _require_queries(qid, group, "score", X, exclude=self.booster_.feature_names)
        X = _by_names(X, self.booster_.feature_names, "score's X")
        ds = make_dataset(X, y, qid=qid, group=group, sample_weight=sample_weight)
        if ds.n_samples == 0:  # the metrics' message named their internal query_offsets
            from ltrboost.dataset import LTRInputError

            raise LTRInputError("score's X has no rows: there is no query to evaluate")
        if metric is None:
            metric = self._default_metric()
        scores = self.booster_.predict(ds.X, n_threads=self.n_threads)
        if callable(metric) and not isinstance(metric, Metric):  # eval_metric's check
            from ltrboost._evaluation import callable_name, custom_metric_value

            if ds.weights is not None:  # f(scores, labels, query_offsets) takes none
                name = callable_name(metric)
                raise ValueError(
                    f"sample_weight cannot weight the metric {name!r}, a callable "
                    "f(scores, labels, query_offsets) (it was ignored); weight inside "
                    "it, or give a built-in metric= name"
                )
            return custom_metric_value(metric, scores, ds.y, ds.query_offsets)
        qw = None
        if ds.weights is not None:
            sums = np.add.reduceat(ds.weights.astype(np.float64), ds.query_offsets[:-1])
            qw = sums / ds.query_sizes
        if not isinstance(metric, Metric):  # a Metric keeps its own options
            metric = get_metric(metric, **metric_options(self.booster_.params))
        with rows_located(ds):  # a refused label named by the caller's row
            value = float(metric(scores, ds.y, ds.query_offsets, qw))
        # MAP / MRR / P@k that no ranking changes: warned as ltrboost eval warns
        # at the user's line (warn_if_metric_flat warns one frame below this one)
        warn_if_metric_flat(
            metric, ds.y, "the data given to score", stacklevel=external_stacklevel() + 1
        )
        return value

    def _default_metric(self) -> str | Callable:
        """``score``'s metric when none is given: fit's ``eval_metric`` when given,
        else the constructor's, first entry; else what training validates on."""
        m = getattr(self, "_fit_eval_metric", None)
        if m is None:
            m = self.eval_metric
        if isinstance(m, str):
            m = m.split(",")
        elif callable(m):
            m = [m]
        # training skips empty entries (",ndcg@5" records ndcg@5 only): so does score
        m = [x for x in (m or []) if not (isinstance(x, str) and not x.strip())]
        if not m:  # what training evaluates without eval_metric: the objective's
            m = [self.booster_.get_objective().default_metric]  # (map, err@10, ndcg@10)
        return m[0].strip() if isinstance(m[0], str) else m[0]

    def _default_metric_name(self) -> str:
        """The name of :meth:`_default_metric` (ndcg@10 for a callable or a Metric)."""
        m = self._default_metric()
        return m if isinstance(m, str) else str(getattr(m, "name", "ndcg@10"))

    def save_model(self, path: str | os.PathLike) -> None:
        """Write the fitted model to ``path`` as JSON, atomically (:meth:`Booster.save_model`)."""
        self._check_fitted()
        self.booster_.save_model(path)

    def export(self, path: str, format: str, feature_names=None, **options) -> None:
        """Write the model to ``path`` as ``format`` for a search engine / serving stack,
        naming the features ``feature_names``; see :meth:`Booster.export`."""
        self._check_fitted()
        self.booster_.export(path, format=format, feature_names=feature_names, **options)

    @classmethod
    def from_booster(cls, booster: Booster) -> Ranker:
        """A fitted Ranker around ``booster`` (e.g. :func:`ltrboost.load_model`'s), with
        the training parameters recorded in it (``get_params``, ``score``'s metric)."""
        if not isinstance(booster, Booster):  # a path failed deep inside, unnamed
            raise TypeError(
                "Ranker.from_booster takes a Booster (ltrboost.load_model(path) reads "
                f"one), not {type(booster).__name__}"
            )
        params = {k: v for k, v in booster.params.items() if k in PARAM_NAMES}
        if "eval_metric" in params:
            params["eval_metric"] = _stored_metric_names(params["eval_metric"])
        est = cls(**params)
        est.booster_ = booster
        est.n_features_in_ = booster.n_features
        if booster.feature_names is not None:  # as fit sets it
            est.feature_names_in_ = np.asarray(booster.feature_names, dtype=object)
        return est

    def _check_fitted(self) -> None:
        if not hasattr(self, "booster_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("this Ranker is not fitted yet; call fit() first")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True  # SciPy sparse X is binned without densifying
        tags.target_tags.required = True  # fit(X, None) is refused: labels are needed
        return tags


def _seed(random_state: Any) -> Any:
    """``random_state`` as the integer seed training takes (scikit-learn's forms).

    None is the default seed 0: reproducible, as LightGBM's and XGBoost's None (not
    scikit-learn's global NumPy generator).  A ``np.random.RandomState`` or
    ``np.random.Generator`` gives a seed drawn from it at each fit, as scikit-learn's
    estimators, LightGBM and XGBoost draw one: the same state gives the same model and
    successive fits with one instance differ.  Anything else is left to the parameter
    check (an integer >= 0)."""
    if random_state is None:
        return 0
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(np.iinfo(np.int32).max))
    return random_state


def check_eval_set(eval_set: Any, eval_names: Any) -> tuple[list, list | None]:
    """``eval_set`` and ``eval_names`` as lists, one distinct name per set (a None
    name is its default ``valid_K``; an empty or blank one, or one holding a control
    character, is refused: :func:`~ltrboost._evaluation.name_problem`).

    A DataFrame, an array or a bare ``(X, y, qid)`` tuple given as ``eval_set`` (not
    wrapped in a list) is refused naming the expected form: it was read as a list of
    sets whose first "set" was ``X`` itself, and the error spoke of its column names.
    """
    if eval_set is None:
        eval_set = []
    elif hasattr(eval_set, "shape"):  # an array, a DataFrame, an Arrow table
        raise ValueError(
            f"eval_set must be a list of (X, y, qid) tuples, not a {type(eval_set).__name__}: "
            "e.g. eval_set=[(X_valid, y_valid, qid_valid)]"
        )
    eval_set = list(eval_set)
    for k, es in enumerate(eval_set):
        if not isinstance(es, list | tuple):
            raise ValueError(
                f"eval_set[{k}] is a {type(es).__name__}, not a tuple (X, y, qid): eval_set "
                "is a list of them, e.g. eval_set=[(X_valid, y_valid, qid_valid)]"
            )
    if eval_names is None:
        return eval_set, None
    if isinstance(eval_names, str):
        raise ValueError(
            f"eval_names={eval_names!r} must be a list of names, one per eval_set entry"
        )
    eval_names = list(eval_names)
    if len(eval_names) != len(eval_set):
        raise ValueError(
            f"eval_names has {len(eval_names)} names but eval_set has "
            f"{len(eval_set)} entries; give one name per validation set"
        )
    for k, name in enumerate(eval_names):
        # it keys evals_result_, the model file and the log lines ("NAME's ndcg@10"):
        # "", "   " or "a\nb" made them unreadable (a number is its text: 0 is "0")
        problem = name_problem(name) if isinstance(name, str) else None
        if problem is not None:
            raise ValueError(
                f"eval_names[{k}] {problem}: a validation set's name keys evals_result_ "
                f"and the log; give a name, or None for the default valid_{k}"
            )
    # a None entry is its default (two Nones are valid_0 and valid_1, not one name twice)
    eval_names = [f"valid_{k}" if n is None else n for k, n in enumerate(eval_names)]
    dup = sorted({n for n in eval_names if eval_names.count(n) > 1})
    if dup:
        raise ValueError(f"eval_names must be distinct; repeated: {dup}")
    return eval_set, eval_names


def _stored_metric_names(stored: Any) -> Any:
    """A model's ``eval_metric`` without the names of callables (a model file keeps a
    callable metric's ``__name__`` only, which is no metric name: ``score`` and a refit
    would refuse it as unknown); None when nothing is left.  A string of files written
    before every metric list had one grammar may hold empty entries (``"ndcg@10,"``,
    which training then skipped and now refuses): they are dropped, the names kept as
    written."""
    if stored is None:
        return stored
    if isinstance(stored, str):
        names = [s.strip() for s in stored.split(",") if s.strip()]
        return ",".join(names) if names else None
    from ltrboost.metrics import parse_metric_list

    names = []
    for name in stored:
        try:
            parse_metric_list([name])
        except ValueError:
            continue  # a callable's __name__
        names.append(name)
    return names or None


def _by_names(X: Any, names: Sequence[str] | None, what: str) -> Any:
    """A DataFrame ``X`` with its columns in the order of ``names`` (taken by name, as
    ``predict`` takes them; missing or unknown ones refused, naming ``what``); anything
    else as it is."""
    from ltrboost.dataset import LTRInputError, select_columns

    try:
        return select_columns(X, names)
    except LTRInputError as e:
        raise LTRInputError(f"{what}: {e}") from None


def _require_queries(
    qid: Any, group: Any, method: str, X: Any = None, exclude: Sequence[str] | None = None
) -> None:
    """Refuse ``fit`` / ``score`` without queries, naming the three ways to give them
    (make_dataset's message named qid= and group= only: behind a Pipeline step that
    turned the DataFrame into an array, its qid column was gone unsaid), and a
    ``qid`` column renamed by a ColumnTransformer (not a feature in ``exclude``)."""
    if qid is None and group is None:
        from ltrboost.dataset import LTRInputError

        renamed = _renamed_qid_columns(X, exclude or ())
        found = ""
        if renamed:
            found = (
                f"X has no 'qid' column but has {', '.join(map(repr, renamed))} (a "
                "ColumnTransformer names the columns it passes through '<name>__<column>'; "
                "ColumnTransformer(..., verbose_feature_names_out=False) keeps the name "
                "'qid'); or "
            )
        found += _qid_spelled_otherwise(X)
        raise LTRInputError(
            f"{method} needs the query of every row: {found}give qid= (a query id per "
            "row), group= (documents per query) or X as a DataFrame with a 'qid' column; "
            f"in a Pipeline, route qid with set_{method}_request(qid=True) under "
            "sklearn.set_config(enable_metadata_routing=True)"
        )


def _renamed_qid_columns(X: Any, exclude: Sequence[str] = ()) -> list[str]:
    """The columns of a DataFrame ``X`` named ``<name>__qid`` (not in ``exclude``): what
    scikit-learn's ColumnTransformer (and FeatureUnion) call a ``qid`` column they pass
    through, with their default ``verbose_feature_names_out=True``."""
    return [c for c in _frame_names(X) if c.endswith("__qid") and c not in exclude]


def _qid_spelled_otherwise(X: Any) -> str:
    """``X has no 'qid' column but has 'QID' (...); or `` for the error of a fit
    without queries, naming the columns of a DataFrame ``X`` that are ``qid`` but for
    case or surrounding spaces (``QID`` from a CSV or Parquet header), else those
    spelled close to it (``qdi``): not read as the queries; ``""`` when none is.
    Local and Dask fit share it (:func:`ltrboost.dataset.close_names`)."""
    from ltrboost.dataset import close_names

    near, case_only = close_names("qid", _frame_names(X))
    if not near:
        return ""
    names = ", ".join(map(repr, near))
    if case_only:
        return (
            f"X has no 'qid' column but has {names} (names are matched exactly: rename "
            "it 'qid'); or "
        )
    return (
        f"X has no 'qid' column but has {names}, spelled close to it (if it holds the "
        "query ids, rename it 'qid'); or "
    )


def _frame_names(X: Any) -> list[str]:
    """The string column names of a DataFrame ``X`` (none for anything else)."""
    if not (hasattr(X, "columns") and hasattr(X, "drop")):
        return []
    return [c for c in X.columns if isinstance(c, str)]


def _refuse_renamed_qid(X: Any, qid: Any, group: Any) -> None:
    """Refuse a ``<name>__qid`` column of ``X`` that splits the rows into the queries
    training uses: a ``qid`` column renamed by a ColumnTransformer in a Pipeline (with
    qid routed as well), which was silently a feature, leaking the query ids into the
    model.  Also one that holds them in another coding, one value per query (a 'qid'
    column a transformer scaled: ``num__qid``).  A column of another content with such
    a name stays a feature."""
    from ltrboost.dataset import LTRInputError

    for name in _renamed_qid_columns(X):
        column = X[name].to_numpy()
        if _same_queries(column, qid, group):
            raise LTRInputError(
                f"X's column {name!r} holds the query ids (a ColumnTransformer names a "
                "'qid' column it passes through '<name>__qid'): as a feature it would "
                "leak them into the model. Keep the name 'qid' with "
                "ColumnTransformer(..., verbose_feature_names_out=False) (a 'qid' column "
                "is read as the queries, no feature), or leave the column out of the "
                "transformed features (remainder='drop') and route qid"
            )
        if qid is not None and _same_partition(column, qid):
            raise LTRInputError(
                f"X's column {name!r} holds the query ids in another coding (one value "
                "per query of qid=: a 'qid' column one of a ColumnTransformer's "
                "transformers selected, e.g. scaled): as a feature it would leak them "
                "into the model. Leave 'qid' out of the columns its transformers select "
                "(e.g. make_column_selector(pattern='^(?!qid$)')) and route qid"
            )


def _split_qid_column(X: Any, qid: Any, group: Any) -> tuple[Any, Any]:
    """A DataFrame's ``qid`` column as the query ids when neither qid= nor group=.

    Given as well, the column is dropped when it holds the same ids as ``qid=`` (the
    query ids twice: a query id is no feature; predict drops it too), and otherwise kept
    as a feature with a warning (it was kept silently: a leak of the query ids)."""
    if not has_qid_column(X):
        return X, qid
    column = qid_column(X)
    if qid is None and group is None:
        return X.drop(columns="qid"), column
    if qid is not None and _same_ids(column, qid):
        return X.drop(columns="qid"), qid
    import warnings

    warnings.warn(
        "X has a column named 'qid' that differs from the "
        f"{'qid' if qid is not None else 'group'}= given: it is used as a feature "
        "(rename it if it is one; drop it if it holds query ids)",
        UserWarning,
        stacklevel=external_stacklevel(),
    )
    return X, qid


def _same_queries(column: Any, qid: Any, group: Any) -> bool:
    """Whether a ``qid`` column splits the rows into the same queries as ``qid=`` (the
    same ids) or ``group=`` (one id per block of sizes, distinct between blocks).
    Sizes that make_dataset will refuse count as the same: its error comes instead."""
    if qid is not None:
        return _same_ids(column, qid)
    try:
        sizes = np.asarray(group)
        if sizes.dtype.kind == "b":  # refused by make_dataset (not sizes)
            return True
        sizes = sizes.astype(np.int64, casting="same_kind").ravel()
    except (TypeError, ValueError):
        return True
    if sizes.size == 0 or np.any(sizes <= 0) or int(sizes.sum()) != column.shape[0]:
        return True
    firsts = column[np.r_[0, np.cumsum(sizes)[:-1]]]
    try:
        blocks_constant = bool(np.all(column == np.repeat(firsts, sizes)))
        return blocks_constant and len(set(firsts.tolist())) == firsts.shape[0]
    except (TypeError, ValueError):
        return True


def _same_partition(column: Any, qid: Any) -> bool:
    """Whether ``column`` holds one value per query of ``qid`` and ``qid`` one id per
    value of ``column``: the same queries in another coding (scaled, renumbered)."""
    try:
        q = np.asarray(qid).ravel()
        if q.shape != column.shape or q.shape[0] == 0:
            return False
        _, a = np.unique(column, return_inverse=True)
        _, b = np.unique(q, return_inverse=True)
        na, nb = int(a.max()) + 1, int(b.max()) + 1
        pairs = np.unique(a.astype(np.int64) * nb + b.astype(np.int64)).shape[0]
        return na == nb == pairs
    except (TypeError, ValueError):
        return False


def _same_ids(column: Any, qid: Any) -> bool:
    """Whether a ``qid`` column holds exactly the ids ``qid`` gives, row by row."""
    try:
        q = np.asarray(qid)
        if q.ndim == 2 and 1 in q.shape:  # qid[:, None], as make_dataset takes it
            q = np.ravel(q)
        return bool(q.shape == column.shape and np.all(column == q))
    except (TypeError, ValueError):
        return False


def _as_booster(model: Any) -> Booster | None:
    """A Booster from a Booster, a fitted Ranker or a model file path."""
    if model is None or isinstance(model, Booster):
        return model
    if isinstance(model, Ranker):
        model._check_fitted()
        return model.booster_
    if isinstance(model, (str, os.PathLike)):
        from ltrboost.model import load_model

        return load_model(model)
    raise TypeError(
        "init_model must be a Booster, a fitted Ranker or a model file path, not "
        f"{type(model).__name__}"
    )


def _eval_queries(eval_set: list, eval_qid, eval_group) -> list[tuple[Any, Any]]:
    """(qid, group) given apart for each ``eval_set`` entry ((None, None) when not)."""
    if eval_qid is not None and eval_group is not None:
        raise ValueError(
            "give eval_qid (query id per row, XGBoost) or eval_group (documents per "
            "query, LightGBM), not both"
        )
    given, name = (eval_qid, "eval_qid") if eval_qid is not None else (eval_group, "eval_group")
    if given is None:
        return [(None, None)] * len(eval_set)
    if (
        len(eval_set) == 1
        and not isinstance(given, list | tuple)
        and hasattr(given, "__array__")
        and np.ndim(given) == 1
    ):  # one set's array (NumPy, a Series, pyarrow), not wrapped in a list
        given = [given]
    given = list(given)
    if len(given) != len(eval_set):
        raise ValueError(
            f"{name} has {len(given)} entries but eval_set has {len(eval_set)}; give one "
            "per validation set, in the same order"
        )
    if name == "eval_qid":
        return [(q, None) for q in given]
    return [(None, g) for g in given]


def _in_eval_set(error: ValueError, index: int) -> ValueError:
    """``error`` (about an ``eval_set`` entry) with ``eval_set[index]: `` in front of
    its message, of the same type (an LTRInputError keeps its row); unchanged when it
    names the entry already."""
    from ltrboost.dataset import LTRInputError

    msg = str(error)
    if msg.startswith(f"eval_set[{index}]"):
        return error
    if isinstance(error, LTRInputError):
        named = LTRInputError(f"eval_set[{index}]: {msg}")
        named.row, named.problem = error.row, error.problem
        return named
    return ValueError(f"eval_set[{index}]: {msg}")


def _eval_dataset(
    es: tuple, qid=None, group=None, index: int = 0, names: Sequence[str] | None = None
) -> RankingDataset:
    """``eval_set[index]`` as a dataset; a DataFrame's columns are taken by the training
    set's ``names`` (any order), as ``predict`` takes them."""
    es = tuple(es)
    if es:
        es = (arrow_as_frame(es[0]), *es[1:])
    if es and has_qid_column(es[0]) and not (names is not None and "qid" in names):
        X0, q0 = es[0].drop(columns="qid"), qid_column(es[0])
        es = (_by_names(X0, names, f"eval_set[{index}]"), *es[1:])
        if len(es) == 2 and qid is None and group is None:
            return make_dataset(es[0], es[1], qid=q0)
    elif es:
        es = (_by_names(es[0], names, f"eval_set[{index}]"), *es[1:])
    if qid is not None or group is not None:
        name = "eval_qid" if qid is not None else "eval_group"
        if len(es) != 2:
            raise ValueError(
                f"eval_set[{index}] has {len(es)} elements; with {name} each eval_set "
                "entry must be (X, y): its queries come from "
                f"{name}[{index}]"
            )
        X = es[0].drop(columns="qid") if has_qid_column(es[0]) else es[0]
        try:
            return make_dataset(X, es[1], qid=qid, group=group)
        except ValueError as e:  # name the entry (LTRInputError keeps its type)
            msg = f"eval_set[{index}] with {name}[{index}]: {e}"
            from ltrboost.dataset import LTRInputError

            raise (LTRInputError(msg) if isinstance(e, LTRInputError) else ValueError(msg)) from e
    if len(es) == 2 and has_qid_column(es[0]):
        X, qid = _split_qid_column(es[0], None, None)
        return make_dataset(X, es[1], qid=qid)
    if len(es) == 3:
        X, y, qid = es
        return make_dataset(X, y, qid=qid)
    if len(es) == 4:
        X, y, qid, group = es
        return make_dataset(X, y, qid=qid, group=group)
    raise ValueError(
        "each eval_set entry must be (X, y, qid), (X, y, qid, group) or (X, y) with "
        "a qid column in the DataFrame X"
    )


def _pairs_from_array(pairs: Any, ds: RankingDataset):
    """Explicit preference pairs in the user's row numbering -> dataset rows."""
    from ltrboost.dataset import LTRInputError, PreferencePairs, check_preference_pairs

    try:
        arr = np.asarray(pairs, dtype=np.float64)
    except (TypeError, ValueError) as e:  # rows of different lengths, text
        raise LTRInputError(
            f"pairs must be numbers of shape (n_pairs, 2) or (n_pairs, 3): {e}"
        ) from None
    if arr.ndim == 1 and arr.shape[0] == 0:  # [] (e.g. nothing mined): no pairs
        arr = arr.reshape(0, 2)
    if arr.ndim != 2 or arr.shape[1] not in (2, 3):
        raise LTRInputError(
            f"pairs must have shape (n_pairs, 2) or (n_pairs, 3), got shape {arr.shape}"
        )
    idx = arr[:, :2]
    fractional = np.any(idx != np.round(idx), axis=1)  # NaN included
    if fractional.any():
        bad = int(np.flatnonzero(fractional)[0])
        raise LTRInputError(f"row indices must be whole numbers, got {idx[bad].tolist()}", pair=bad)
    if np.any(idx < 0) or np.any(idx >= ds.n_samples):
        bad = int(np.flatnonzero(np.any((idx < 0) | (idx >= ds.n_samples), axis=1))[0])
        rows = ", ".join(f"{v:.0f}" for v in idx[bad])
        raise LTRInputError(
            f"rows ({rows}): a row index outside 0..{ds.n_samples - 1} (pairs "
            "name documents by the positions of the rows of the X given to fit; a "
            "scikit-learn cross-validation passes each fold's fit the pairs unchanged, "
            "numbered for the whole data)",
            pair=bad,
        )
    idx = idx.astype(np.int64)
    if ds.order is not None:  # map user rows to grouped rows
        inv = np.empty_like(ds.order)
        inv[ds.order] = np.arange(ds.order.shape[0])
        idx = inv[idx]
    w = arr[:, 2] if arr.shape[1] == 3 else None
    # same-query, self-preference and weight checks: the package's one pair check
    check_preference_pairs(
        idx[:, 0], idx[:, 1], w, ds.query_offsets, order=ds.order, query_ids=ds.query_ids
    )
    return PreferencePairs(
        preferred=idx[:, 0].astype(np.int32),
        other=idx[:, 1].astype(np.int32),
        weight=None if w is None else w.astype(np.float64),
    )

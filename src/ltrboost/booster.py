"""The boosting loop: binning, gradients, trees, shrinkage, early stopping, callbacks.

``train(params, train_set, valid_sets=...)`` returns a :class:`~ltrboost.model.Booster`.
Train and validation raw scores are kept incrementally (pygbm's quadratic re-prediction
is the mistake this avoids): after each tree the training scores are updated by the
grower (from its row partition) and the validation scores from a binned prediction of
that one tree.

One run is a :class:`Training`, whose steps are named methods: binning
(:meth:`Training.bin_data`), the tree grower (:meth:`Training.make_grower`), validation
state (:meth:`Training.bind_validation`), resuming from a model
(:meth:`Training.resume`), the OLE pairs of a round (:meth:`Training.ole_pairs`), the
line search (:meth:`Training.line_search`), evaluation (:meth:`Training.evaluate`) and
early stopping (:meth:`Training.should_stop`).

Update rules: ``additive`` and ``averaged`` (GBRank), see :mod:`ltrboost.model`.

Query bagging (``subsample < 1``) draws whole queries per iteration; feature
subsampling (``colsample_bytree < 1``) draws features per tree.  Both use one
``numpy.random.Generator`` seeded by ``random_state`` and consumed in a fixed order, so
a seed fixes the model for any thread count.

``Booster``, ``BoosterParams`` and ``OBJECTIVE_PARAM_NAMES`` are re-exported from their
homes (:mod:`ltrboost.model`, :mod:`ltrboost.params`) for existing imports.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltrboost._callsite import external_stacklevel
from ltrboost._checks import check_round_finite
from ltrboost._config import G_H_DTYPE, INDEX_DTYPE, SCORE_DTYPE
from ltrboost._evaluation import (
    _bind_metrics,
    _metrics,
    _params_for_model,
    check_training_setup,
    metric_options,
    warn_if_early_stopping_blind,
    warn_if_threshold_separates_nothing,
    written_numbers,
)
from ltrboost._numba import threads
from ltrboost.binning import BinMapper, UsedFeatures, check_histogram_memory, is_sparse
from ltrboost.dataset import (
    LTRInputError,
    RankingDataset,
    check_dataset_structure,
    check_feature_names_text,
    check_positions,
    rows_located,
    warn_if_weights_too_far_apart,
)
from ltrboost.grower import GrowerParams, TreeGrower
from ltrboost.model import Booster, averaged_divisor, feature_importance_gain
from ltrboost.objectives.pair_engine import refuse_ole_pairs_up_front
from ltrboost.objectives.registry import get_objective
from ltrboost.params import (
    DEFAULTS,
    OBJECTIVE_PARAM_NAMES,
    BoosterParams,
    ParameterError,
    ParameterWarning,
)
from ltrboost.quantize import quant_seed
from ltrboost.splitting import SplitNoiseSeeds, split_noise_sigma
from ltrboost.tree import pack_trees, predict_binned_tree, predict_raw

__all__ = [
    "OBJECTIVE_PARAM_NAMES",
    "Booster",
    "BoosterParams",
    "CallbackEnv",
    "Training",
    "check_metrics",
    "make_objective",
    "metric_names",
    "train",
]

# old private name (sklearn used it); Booster.feature_importance() is the public one
_feature_importance_gain = feature_importance_gain


def make_objective(params: BoosterParams):
    """Instantiate the objective with the parameters it accepts (others are ignored).

    A callable ``objective`` is a custom objective (:mod:`ltrboost.objectives.custom`)."""
    from ltrboost.objectives.base import Objective
    from ltrboost.objectives.custom import is_custom, make_custom_objective

    obj = params.objective
    if isinstance(obj, Objective) or isinstance(obj, type):  # a class is callable too
        cls = obj if isinstance(obj, type) else type(obj)
        name = getattr(cls, "name", None) if issubclass(cls, Objective) else None
        raise ValueError(
            f"objective={obj!r} is {'a class' if obj is cls else 'an objective instance'}; "
            + (
                f"give its registry name {name!r} and its parameters as training parameters"
                if name
                else "give a registered objective name or a function (scores, labels, "
                "query_offsets) -> (grad, hess)"
            )
        )
    if is_custom(params.objective):
        return make_custom_objective(params)
    kwargs = params.objective_kwargs()
    obj = get_objective(params.objective)  # validates the name
    sig = inspect.signature(type(obj).__init__)
    accepts_any = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    if not accepts_any:
        kwargs = {k: v for k, v in kwargs.items() if k in sig.parameters}
    if "random_state" in sig.parameters:
        kwargs["random_state"] = 0 if params.random_state is None else params.random_state
    if kwargs.get("truncation_level") == 0:
        kwargs["truncation_level"] = None  # 0 = no truncation: every pair
    return get_objective(params.objective, **kwargs)


def validation_error(name: str, e: LTRInputError) -> LTRInputError:
    """``e`` (a row of validation set ``name``) naming the set; an error that names
    its file and line already is returned as it is."""
    if e.path is not None:
        return e
    where = "" if e.row is None else f"row {e.row}: "
    err = LTRInputError(f"validation set {name!r}: {where}{e.problem}")
    err.row = e.row
    return err


def check_resumable(init_model: Booster, objective, n_out: int, n_features: int) -> None:
    """Raise ValueError when ``init_model`` cannot be continued on this training run
    (another objective, number of outputs or feature count)."""
    if init_model.objective != objective.name:
        hint = ""
        if init_model.objective.startswith("custom:"):
            hint = f" (pass that callable again: objective={init_model.objective[7:]})"
        raise ValueError(
            f"cannot resume: the model was trained with objective="
            f"{init_model.objective!r}, not {objective.name!r}{hint}"
        )
    if init_model.n_outputs != n_out:
        raise ValueError("cannot resume: the model has a different number of outputs")
    if init_model.n_features != n_features:
        raise ValueError(
            f"cannot resume: the model was trained on {init_model.n_features} "
            f"features, the training data has {n_features}"
        )


@dataclass
class CallbackEnv:
    """What a training callback sees after each round.

    Attributes
    ----------
    iteration : int
        The round just finished, 0-based and counted from the first round of the
        model: a run continuing a model of ``k`` rounds (``init_model=``) starts at
        ``k``.
    n_estimators : int
        The rounds in total the run may reach, the continued model's included
        (``Ranker.fit(init_model=)`` adds its ``n_estimators`` to them).
    evaluation : dict
        ``{validation set: {metric: value}}`` of this round (empty without one).
    best_iteration : int
        1-based, as ``Booster.best_iteration``: the rounds up to and including the
        best value so far of the first metric on the first validation set (the first
        of equal values), with or without early stopping.  Without a validation set
        it means nothing (0, or a continued model's rounds).
    best_score : float or None
        That best value; None without a validation set.
    elapsed : float
        Seconds since training started.
    snapshot : callable
        ``env.snapshot()`` is the model so far, a checkpoint (save it and continue
        with ``init_model=``).
    """

    iteration: int  # 0-based round just finished
    n_estimators: int
    evaluation: dict[str, dict[str, float]]  # {valid_name: {metric: value}}
    best_iteration: int
    best_score: float | None
    elapsed: float
    # the model so far (for checkpoints); its trees are read-only views of the ones
    # being trained (``.copy()`` one to edit it)
    snapshot: Callable[[], Booster] | None = None


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
        ``objective`` may be a callable ``fn(scores, labels, query_offsets) -> (grad,
        hess)``: a custom loss (:mod:`ltrboost.objectives.custom`, docs/custom.md).
        ``random_state=None`` is the default seed 0 (the model records 0).
    train_set : RankingDataset
    valid_sets : sequence of (name, RankingDataset)
        Evaluated after every round with ``eval_metric``; the first one drives early
        stopping.
    callbacks : callables receiving a :class:`CallbackEnv` after every round; each
        returns None or a bool, True stops training (anything else is a TypeError).
    init_model : Booster, optional
        Continue boosting from this model (same data and parameters give the same result
        as an uninterrupted run, because the random generator is fast-forwarded).  Its
        initial score is kept (on other data too); column names, when both have them,
        must be the model's in its order.

    Warns
    -----
    SharedQueriesWarning
        (a ``UserWarning``) for each validation set that shares query ids with
        ``train_set``, before the first round: its metrics, best iteration and early
        stopping are those of queries the model trains on.  Not for ``train_set`` itself
        as a validation set (the same object, or a dataset of identical arrays).
    """
    return _train(params, train_set, valid_sets, callbacks, init_model)


def _train(
    params: BoosterParams | dict[str, Any],
    train_set: RankingDataset,
    valid_sets: Sequence[tuple[str, RankingDataset]] = (),
    callbacks: Sequence[Callable[[CallbackEnv], bool | None]] = (),
    init_model: Booster | None = None,
    *,
    check_leaks: bool = True,
) -> Booster:
    """:func:`train`; ``check_leaks=False`` for the experiment protocols, which warn of
    a fold's shared queries once per fold (:class:`~ltrboost.experiment.FoldLeaks`),
    not once per trained cell."""
    params = as_params(params)
    valid_sets = _check_train_inputs(train_set, valid_sets, init_model)
    callbacks = check_callbacks(callbacks)
    objective = _checked_setup(params, train_set, valid_sets, init_model)
    if check_leaks:
        warn_if_validation_shares_queries(train_set, valid_sets)
    # NaN/inf is detected after each tree (check_round_finite) and reported as one
    # error naming the round; NumPy's overflow warnings before it would only be noise.
    quiet = np.errstate(over="ignore", invalid="ignore")
    with threads(params.n_threads) as n_threads, quiet:
        run = Training(params, objective, train_set, list(valid_sets), n_threads)
        if run.used.n_used:  # else: warned that every feature column is constant
            warn_if_no_split_possible(params, train_set)  # once the data is checked
            warn_if_colsample_misses(params, run.used)
        model = run.run(callbacks, init_model)
    if run.used.n_used and 2 * int(params.min_samples_leaf) <= train_set.n_samples:
        binner = run.binner
        one_bin = bool(((binner.n_bins_non_missing_ <= 1) & ~binner.has_missing_).all())
        warn_if_constant_model(params, objective, model, train_set, one_bin)
    return model


VALIDATION_LEAK = (
    "the model trains on those validation queries, so their metrics, the best "
    "iteration and early stopping chosen on them are optimistic"
)


def warn_if_validation_shares_queries(
    train_set: RankingDataset,
    valid_sets: Sequence[tuple[str, RankingDataset]],
    stacklevel: int | None = None,
) -> None:
    """A :class:`~ltrboost.io.letor.SharedQueriesWarning` for each validation set that
    shares query ids with ``train_set`` (:func:`~ltrboost.io.letor.shared_query_ids`),
    naming it by its name and index (by its path when read from a file, as by
    ``ltrboost train --valid``); ``stacklevel`` as :func:`warnings.warn`'s, counted
    from this function (1); None: the first frame outside ltrboost
    (:func:`~ltrboost._callsite.external_stacklevel`), the user's call of ``train`` or
    of ``Ranker.fit``.
    The training set itself given as a validation set, to watch its metrics, is no
    leak (:func:`_same_data`)."""
    from ltrboost.io.letor import SharedQueriesWarning

    for k, (name, vs) in enumerate(valid_sets):
        if train_set.query_ids is None or vs.query_ids is None or _same_data(train_set, vs):
            continue
        said = validation_shares_queries(train_set, name, k, vs)
        if said:
            level = external_stacklevel() if stacklevel is None else stacklevel
            warnings.warn(said, SharedQueriesWarning, stacklevel=level)


def validation_shares_queries(train_set: Any, name: str, k: int, vs: Any) -> str:
    """The words of :func:`warn_if_validation_shares_queries` for validation set ``vs``
    (named ``name``, index ``k``), '' when it shares no query id with ``train_set``.
    Both need only ``query_ids`` and ``source`` (``ltrboost.dask`` passes the query ids
    its driver holds)."""
    from ltrboost.io.letor import shared_query_ids

    files = train_set.source is not None and vs.source is not None
    return shared_query_ids(
        train_set,
        vs,
        VALIDATION_LEAK
        if files
        else VALIDATION_LEAK
        + "; split the data by query (e.g. scikit-learn's GroupShuffleSplit with "
        "groups=qid); sets that number their queries apart need ids of their own "
        "(or filter ltrboost.SharedQueriesWarning)",
        other_name=f"validation set {name!r} (index {k})",
    )


def _same_data(a: RankingDataset, b: RankingDataset) -> bool:
    """Whether ``b`` is the training set ``a`` again: the same object, the same file,
    or the same queries, labels and features (NaN equal to NaN; dense rows compared a
    block at a time, so no copy of ``X``'s size is made).  Weights, positions and pairs
    are not compared: they do not change what a validation set's queries are."""
    if a is b:
        return True
    if a.source is not None and b.source is not None:
        with contextlib.suppress(OSError):
            if os.path.samefile(a.source, b.source):
                return True
    if (
        a.X.shape != b.X.shape
        or not np.array_equal(a.query_offsets, b.query_offsets)
        or not np.array_equal(np.asarray(a.query_ids), np.asarray(b.query_ids))
        or a.y is None
        or b.y is None
        or not np.array_equal(a.y, b.y)
    ):
        return False
    sparse = (is_sparse(a.X), is_sparse(b.X))
    if sparse != (False, False):
        if sparse != (True, True):
            return False
        ca, cb = (m.tocsr().copy() for m in (a.X, b.X))  # canonical: sorted, no zeros
        for m in (ca, cb):
            m.sum_duplicates()
            m.eliminate_zeros()
        return (
            np.array_equal(ca.indptr, cb.indptr)
            and np.array_equal(ca.indices, cb.indices)
            and np.array_equal(ca.data, cb.data, equal_nan=True)
        )
    step = max(1, (1 << 22) // max(1, a.X.shape[1]))
    for r in range(0, a.X.shape[0], step):
        if not np.array_equal(a.X[r : r + step], b.X[r : r + step], equal_nan=True):
            return False
    return True


def _checked_setup(params: BoosterParams, train_set, valid_sets: list, init_model):
    """The objective of a training, after the checks (and warnings) :func:`train` runs
    before it reads the data's labels: labels present, a training set not empty,
    metrics known, positions and explicit pairs usable."""
    if train_set.y is None:
        raise ValueError("the training set has no labels")
    if train_set.n_samples == 0:
        raise ValueError("the training set is empty")
    objective = make_objective(params)
    if init_model is not None and init_model.objective == objective.name:
        objective.continue_model(dict(init_model.objective_params or {}))
    check_metrics(params, objective)  # a typo fails now, valid set or not
    # before the warnings about ignored parameters: unbiased=True with another objective
    # is an error, not a warning that it "is ignored" followed by that error
    check_positions_use(params, objective, train_set)
    check_training_setup(params, objective, valid_sets)
    warn_if_early_stopping_blind(params, objective, valid_sets)
    warn_if_pairs_ignored(objective, train_set)
    warn_if_weights_too_far_apart(train_set)
    if getattr(objective, "uses_preference_pairs", False):
        from ltrboost.objectives.pairwise import refuse_contradicting_pairs

        refuse_contradicting_pairs(train_set)
    return objective


def check_training_data(
    params: BoosterParams | dict[str, Any],
    train_set: RankingDataset,
    valid_sets: Sequence[tuple[str, RankingDataset]] = (),
    *,
    init_model: Booster | None = None,
) -> None:
    """Raise the error :func:`train` would raise on this data before its first round,
    without training: the checks of :func:`train`, the objective's label checks
    (``prepare``: grades, McRank's largest grade; ``check_training_labels``: a
    threshold that puts every training document on one side) and the validation
    sets' (labels, width, column names, the metrics' label checks).

    For runs of many trainings (``ltrboost cv``, ``ltrboost experiment``): a problem
    of the last fold's data then fails before the first fold trains; for ``ltrboost
    train``: before its progress bar is drawn.  Warnings are not given here (the
    training gives them).  The objective is a fresh one, so the training's own is not
    changed by the check.  Checked too: the memory of the histograms and pairwise
    OLE's label pairs over their limit (:func:`check_training_resources`).  Not
    checked: anything found while training (a round's NaN).  ``init_model``: the
    model the training continues, as :func:`train`'s."""
    params = as_params(params)
    valid_sets = _check_train_inputs(train_set, valid_sets, init_model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        objective = _checked_setup(params, train_set, valid_sets, init_model)
        prepare_objective(objective, train_set)
        check_training_resources(params, objective, train_set)
        for name, vs in valid_sets:
            check_validation_set(params, objective, name, vs, train_set)


class _EveryColumn:
    """Stand-in for :class:`~ltrboost.binning.UsedFeatures` that counts every column
    used: the histograms' memory bound without the pass over ``X`` that finds the
    constant ones."""

    n_used_is_bound = True  # any column may be constant: a tree may hold none

    def __init__(self, n_features: int) -> None:
        self.n_features = self.n_used = int(n_features)


def check_training_resources(params: BoosterParams, objective, train_set) -> None:
    """The refusals :class:`Training` makes before its first round from the data's
    size (:func:`~ltrboost.binning.check_histogram_memory`) and, under pairwise OLE,
    its label pairs (``refuse_ole_pairs_up_front``), for ``objective`` prepared on
    ``train_set``.  The memory is first bounded counting every column used; only a
    bound over the limit looks for the constant columns, which cost nothing."""
    with_pairs = params.split_criterion == "ole" and objective.is_pairwise
    n_samples = train_set.n_samples
    try:
        check_histogram_memory(_EveryColumn(train_set.X.shape[1]), params, n_samples, with_pairs)
    except ParameterError:
        check_histogram_memory(UsedFeatures(train_set.X), params, n_samples, with_pairs)
    if with_pairs:
        refuse_ole_pairs_up_front(train_set, objective, params.subsample < 1)


def prepare_objective(objective, train_set: RankingDataset) -> None:
    """``objective.prepare`` (label errors as ``FILE:LINE`` when the set was read from
    a file) and its checks of the whole training set's labels."""
    with rows_located(train_set):
        objective.prepare(train_set)
    objective.check_training_labels(train_set)  # the whole set (a shard's prepare not)


def check_validation_set(
    params: BoosterParams, objective, name: str, vs: RankingDataset, train_set: RankingDataset
) -> list:
    """Validation set ``name`` checked against the training set (labels, rows, width,
    column names); its metrics bound to it (the metrics' label checks)."""
    if vs.y is None:
        raise ValueError(f"validation set {name!r} has no labels")
    if vs.n_samples == 0:
        raise ValueError(f"validation set {name!r} is empty")
    n_features = train_set.X.shape[1]
    if vs.X.shape[1] != n_features:  # take() would pick columns by position
        raise LTRInputError(
            f"validation set {name!r} has {vs.X.shape[1]} features but the training "
            f"set has {n_features}"
        )
    names, have = train_set.feature_names, vs.feature_names
    if names is not None and have is not None and list(have) != list(names):
        # its columns are read by position: named in another order, they were
        # silently scored as the wrong features
        k = next(k for k, (a, b) in enumerate(zip(have, names, strict=True)) if a != b)
        raise LTRInputError(
            f"validation set {name!r} has feature {k} named {have[k]!r} but the "
            f"training set's is {names[k]!r}: columns are read by position; give "
            "its columns in the training set's order (e.g. make_dataset(df[names], ...))"
        )
    try:
        return _bind_metrics(params, objective, vs)
    except LTRInputError as e:
        raise validation_error(name, e) from None


def check_callbacks(callbacks) -> list:
    """``callbacks`` as a list of callables (one callable alone is taken as a list of
    one); a TypeError naming the first entry that is not callable, before any round
    (it failed after the first round, as "'int' object is not callable")."""
    if callable(callbacks):
        return [callbacks]
    try:
        callbacks = list(callbacks)
    except TypeError:
        raise TypeError(
            f"callbacks must be a list of callables f(env), not {type(callbacks).__name__}"
        ) from None
    for k, cb in enumerate(callbacks):
        if not callable(cb):
            raise TypeError(f"callbacks[{k}] is {type(cb).__name__}, not a callable f(env)")
    return callbacks


def as_params(params: Any) -> BoosterParams:
    """``params`` (a dict or a BoosterParams) as a validated BoosterParams; anything
    else is a TypeError naming it (None said "has no attribute 'validate'")."""
    if isinstance(params, dict):
        params = BoosterParams.from_dict(params)
    elif not isinstance(params, BoosterParams):
        raise TypeError(
            f"params must be a dict of training parameters or a BoosterParams, not "
            f"{type(params).__name__} ({{}} for the defaults)"
        )
    params.validate()
    if params.random_state is None:  # the default seed, recorded as such in the model
        params = replace(params, random_state=0)  # the caller's left as given
    return params


def callbacks_stop(callbacks: Sequence[Callable], env: CallbackEnv) -> bool:
    """Call every callback on ``env``; True when one returned True (stop training).

    A callback returns None or a bool; anything else is a TypeError naming it: a
    callback that returned, say, the dict it appended to or a file path stopped
    training after its first round, silently, being truthy.

    An exception a callback raises ends training (the model so far is not returned);
    it gets a note naming the callback and the round (a lambda's traceback named
    neither; a callback saving ``env.snapshot()`` keeps checkpoints)."""
    stop = False
    for k, cb in enumerate(callbacks):
        name = getattr(cb, "__name__", type(cb).__name__)
        try:
            answer = cb(env)
        except Exception as e:
            e.add_note(
                f"raised by callbacks[{k}] ({name}) after round {env.iteration + 1}; "
                "training stopped without returning the model so far"
            )
            raise
        if answer is None:
            continue
        if not isinstance(answer, bool | np.bool_):
            raise TypeError(
                f"callbacks[{k}] ({name}) returned {type(answer).__name__}; a callback "
                "returns None or a bool (True stops training)"
            )
        stop = stop or bool(answer)
    return stop


def _check_train_inputs(train_set, valid_sets, init_model) -> list:
    """TypeErrors naming the expected types (an AttributeError or a failed unpacking
    deep in training said nothing of them); the validation sets as a list of (str
    name, dataset) pairs."""
    if not isinstance(train_set, RankingDataset):
        raise TypeError(
            f"train_set must be a RankingDataset (ltrboost.make_dataset(X, y, qid=...)), "
            f"not {type(train_set).__name__}"
        )
    valid_sets = list(valid_sets)
    for k, entry in enumerate(valid_sets):
        if not (
            isinstance(entry, tuple | list)
            and len(entry) == 2
            and isinstance(entry[1], RankingDataset)
        ):
            raise TypeError(
                f"valid_sets[{k}] must be a pair (name, RankingDataset), not {type(entry).__name__}"
            )
        # the name keys evals_result, in memory and in the model file (JSON: a string)
        valid_sets[k] = (str(entry[0]), entry[1])
    check_dataset_structure(train_set, "train_set")
    check_feature_names_text(train_set.feature_names, "train_set.feature_names")
    for name, vs in valid_sets:
        check_dataset_structure(vs, f"validation set {name!r}")
    if init_model is not None and not isinstance(init_model, Booster):
        raise TypeError(
            f"init_model must be a Booster (ltrboost.load_model(path) reads one; "
            f"Ranker.fit takes a path or a fitted Ranker too), not {type(init_model).__name__}"
        )
    return valid_sets


def warn_if_pairs_ignored(objective, train_set: RankingDataset) -> None:
    """Warn (:class:`PairsIgnoredWarning`) when explicit pairs would change nothing."""
    from ltrboost.objectives.base import PairsIgnoredWarning

    if train_set.pairs is None or len(train_set.pairs) == 0:
        return
    why = getattr(objective, "explicit_pairs_ignored", lambda: None)()
    if why is not None:
        warnings.warn(
            PairsIgnoredWarning(
                f"objective {objective.name!r}: {why}; the model is the same as without "
                "the explicit pairs"
            ),
            stacklevel=external_stacklevel(),
        )
    elif not getattr(objective, "uses_preference_pairs", False):
        warnings.warn(
            PairsIgnoredWarning(
                f"objective {objective.name!r} ignores explicit preference pairs; the "
                "model is the same as without them (pairs are used by ranknet, "
                "rankboost, gbrank and qbrank)"
            ),
            stacklevel=external_stacklevel(),
        )


def warn_if_no_split_possible(params: BoosterParams, train_set: RankingDataset) -> None:
    """Warn when ``min_samples_leaf`` leaves no node a split (two children of that many
    documents need twice as many): every tree is one leaf, the model a constant."""
    need = 2 * int(params.min_samples_leaf)
    if need > train_set.n_samples:
        warnings.warn(
            f"min_samples_leaf={params.min_samples_leaf} needs {need} documents to split a "
            f"node and the training set has {train_set.n_samples} documents: every tree is "
            "one leaf, the model predicts one constant score",
            ParameterWarning,
            stacklevel=external_stacklevel(),
        )


def query_label_range(y, query_offsets, weights=None) -> NDArray[np.float64]:
    """``(n_queries, 2)``: each query's largest and smallest label among its documents
    of positive weight (zero-weight documents carry no signal); ``(-inf, +inf)`` for a
    query with none."""
    y = np.asarray(y, dtype=np.float64)
    starts = np.asarray(query_offsets)[:-1]
    out = np.empty((starts.shape[0], 2))
    out[:, 0], out[:, 1] = -np.inf, np.inf
    full = starts < y.shape[0]  # reduceat needs starts inside the array
    if full.any():
        keep = np.ones(y.shape, bool) if weights is None else np.asarray(weights) > 0
        out[full, 0] = np.maximum.reduceat(np.where(keep, y, -np.inf), starts[full])
        out[full, 1] = np.minimum.reduceat(np.where(keep, y, np.inf), starts[full])
    return out


def warn_if_constant_model(
    params: BoosterParams,
    objective,
    model: Booster,
    train_set,
    one_bin: bool = False,
    zero_weights: bool | None = None,
) -> None:
    """Warn when every tree of ``model`` is one leaf, or leaves of one value: the model
    gives every document the same score (all labels equal, queries without two grades
    for a loss of pairs of one query's documents
    (``Objective.learns_without_query_grades``: not for a pointwise loss, which learns
    from labels that differ between queries), every column one bin (``one_bin``), or
    split limits no split meets), which trained
    silently (LightGBM warns that no leaf meets the split requirements).  The message
    names the likely cause.  A loss that learns noise there instead
    (``learns_noise_without_grades``, xendcg) warns, when its trees grew, that no query
    holds two labels.  ``zero_weights``: whether some document has weight 0 (by
    default read off ``train_set.weights``; Dask passes a summary set without them)."""
    if not model.trees:
        return
    # a tree whose leaves all hold one value adds the same to every score, as one leaf
    # does: a split of rounding-noise gain between two equal Newton leaves, or QBRank's
    # line search stepping 0 along a tree that is no descent direction
    grew = any(_tree_varies(t) for t in model.trees)
    noise = getattr(objective, "learns_noise_without_grades", None)
    if grew and noise is None:
        return
    if zero_weights is None:
        zero_weights = train_set.weights is not None and not (train_set.weights > 0).all()
    weighted = " of positive weight" if zero_weights else ""
    top, bottom = query_label_range(train_set.y, train_set.query_offsets, train_set.weights).T
    if grew:  # a loss with gradients on one-grade queries (xendcg): they are noise
        if (top <= bottom).all():
            warnings.warn(
                f"objective {objective.name!r} trained on data where no query holds two "
                f"documents of different labels{weighted}: {noise}",
                ParameterWarning,
                stacklevel=external_stacklevel(),
            )
        return
    own = (
        objective.constant_model_cause(train_set)
        if hasattr(objective, "constant_model_cause")
        else None
    )
    if top.max() == bottom.min():
        cause = f"every training label{weighted} is {top.max():g}"
    elif own is not None:
        cause = own
    elif one_bin:
        cause = (
            f"min_samples_bin={params.min_samples_bin} leaves every feature column one bin "
            "(its other values are rarer; lower min_samples_bin)"
        )
    else:
        limits = (
            f"no split meets min_samples_leaf={params.min_samples_leaf}, "
            f"min_sum_hessian_in_leaf={params.min_sum_hessian_in_leaf} and "
            f"min_gain_to_split={params.min_gain_to_split}"
        )
        no_pair = "no query holds two documents of different labels"
        learns = getattr(objective, "learns_without_query_grades", lambda data: None)
        # a pointwise loss learns from labels that differ between queries (xendcg from
        # its random target, a pairwise one from explicit pairs): the limits are the cause
        learns_anyway = learns(train_set) if (top <= bottom).all() else True
        if learns_anyway is False:
            cause = f"{no_pair}, so objective {objective.name!r} has no pair to learn from"
        elif learns_anyway is None:  # a custom loss: pointwise or pairwise, unknown
            cause = f"{no_pair} (a pairwise or listwise loss has no pair), or {limits}"
        else:
            cause = limits
            if noise is not None and (top <= bottom).all():
                cause += f" (and {no_pair}{weighted}: {noise})"
    trees = (
        "every tree is one leaf"
        if all(t.shape[0] == 1 for t in model.trees)
        else "every tree is one leaf or leaves of one value"
    )
    warnings.warn(
        f"{trees}, the model predicts one constant score: {cause}",
        ParameterWarning,  # the cause may name parameters
        stacklevel=external_stacklevel(),
    )


def _tree_varies(tree) -> bool:
    """Whether ``tree`` (a NODE_DTYPE array) gives two documents different values:
    it has two leaves of different values."""
    if tree.shape[0] <= 1:
        return False
    values = tree["value"][tree["is_leaf"] != 0]
    return bool(values.size > 1 and (values != values[0]).any())


def warn_if_colsample_misses(params: BoosterParams, used) -> None:
    """Warn when a ``colsample_bytree`` draw holds less than one varying column on
    average: the draw counts the constant and absent columns too (LightGBM's
    ``feature_fraction`` draws among the varying ones), so most trees are one leaf."""
    fraction = params.colsample_bytree
    if fraction >= 1 or used.all_used:
        return
    k = max(1, int(round(fraction * used.n_features)))  # as _draw_features draws
    expected = k * used.n_used / used.n_features
    if expected < 1:
        warnings.warn(
            f"colsample_bytree={fraction} draws {k} of all {used.n_features} feature "
            f"columns and only {used.n_used} of them vary: a tree gets {expected:.2g} "
            "varying columns on average, most trees are one leaf (the draw counts "
            "constant and absent columns; raise colsample_bytree)",
            ParameterWarning,
            stacklevel=external_stacklevel(),
        )


class PositionIgnoredWarning(ParameterWarning):
    """Display positions were given but the run does not debias (``unbiased`` off, or
    no row at position 1, the reference of the biases): the model is the same as
    without them."""


def check_unbiased_use(params: BoosterParams, objective) -> None:
    """``unbiased`` only for LambdaMART, never with OLE (the parameters alone)."""
    unbiased = bool(getattr(objective, "unbiased", False))
    if params.unbiased and not unbiased:
        raise ParameterError(
            f"unbiased=True is Unbiased LambdaMART (objective='lambdamart'); objective "
            f"{getattr(objective, 'name', params.objective)!r} does not debias clicks"
        )
    if unbiased and params.split_criterion == "ole":
        raise ParameterError("unbiased=True does not support split_criterion='ole'")


def check_setup_parameters(params: BoosterParams, objective=None) -> None:
    """The refusals of :func:`train`'s setup that the parameters alone decide, without
    any data: ``unbiased`` with another objective than LambdaMART or with OLE
    (:func:`check_unbiased_use`), ``split_criterion="ole"`` for an objective that
    refuses it, ``quantized_gradients`` with pairwise OLE
    (:func:`~ltrboost._evaluation.check_training_setup`'s).  The command line runs
    them with its flag checks, before it reads a file or draws a progress bar (they
    came after ``ltrboost train``'s bar had started).  Warnings are not given here
    (the training gives them); early stopping's need of a validation set is not
    checked (the caller knows its validation files)."""
    if objective is None:
        objective = make_objective(params)
    check_unbiased_use(params, objective)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_training_setup(replace(params, early_stopping_rounds=None), objective, [])


def check_positions_use(params: BoosterParams, objective, train_set: RankingDataset) -> None:
    """``unbiased`` only for LambdaMART, never with OLE; positions without it warn."""
    check_unbiased_use(params, objective)
    unbiased = bool(getattr(objective, "unbiased", False))
    if train_set.position is not None and not unbiased:
        warnings.warn(
            PositionIgnoredWarning(
                "positions are used by unbiased=True only (objective='lambdamart'); "
                "the model is the same as without them"
            ),
            stacklevel=external_stacklevel(),
        )
    position = train_set.position
    if unbiased and position is not None:
        # make_dataset checked them; positions assigned to the dataset afterwards (as
        # the CLI's position file is) reached the kernels unchecked: too few read past
        # the array (a segmentation fault), a 0 indexed the last bias
        checked = check_positions(position, train_set.n_samples)
        if not (
            isinstance(position, np.ndarray)
            and position.dtype == np.int64
            and position.ndim == 1
            and position.flags.c_contiguous
        ):
            train_set.position = position = checked
    deep = getattr(objective, "_max_positions", 1) > 1
    if unbiased and deep and position is not None and position.size and position.min() > 1:
        # the biases are ratios to position 1's losses (t_1 = 1), never updated without
        # them: training went on as plain LambdaMART, biases all 1, without a word
        warnings.warn(
            PositionIgnoredWarning(
                f"unbiased=True: no training row was shown at position 1 (the highest is "
                f"{int(position.min())}), and the position biases are estimated relative "
                "to position 1: they stay 1 and the model is plain LambdaMART's; give "
                "1-based positions (1 = top of the result list)"
            ),
            stacklevel=external_stacklevel(),
        )


def check_metrics(params: BoosterParams, objective=None) -> None:
    """Raise ValueError naming the first unknown metric of ``params.eval_metric``."""
    from ltrboost.metrics import get_metric

    if objective is None:
        objective = make_objective(params)
    for name, fn in _metrics(params, objective):
        if fn is None:
            get_metric(name, **metric_options(params))


def metric_names(params: BoosterParams, objective) -> list[str]:
    """The metrics evaluated each round (unique, in order; the first one drives early
    stopping): ``params.eval_metric`` or the objective's default."""
    return [name for name, _ in _metrics(params, objective)]


_metric_names = metric_names  # old private name


@dataclass
class _Valid:
    """A validation set's state: binned rows, incremental raw scores, bound metrics."""

    name: str
    data: RankingDataset
    X_binned: NDArray[np.uint8]
    raw: NDArray[np.float64]
    metrics: list


class Training:
    """One training run: the state shared by the steps of the boosting loop.

    ``run()`` calls, per round: gradients, the bag, the OLE pairs, one tree per output
    (grown, line-searched, shrunk, added to the scores), evaluation and the stopping
    rule.  Each step is a method so that a backend (e.g. Dask) can replace one step, the
    grower in particular, without copying the loop.
    """

    # unbiased LambdaMART's position biases after round ``best_iter`` (a class default:
    # a backend's __init__ need not set it)
    best_bias: dict[str, list[float]] | None = None
    # whether a root without curvature was warned about (warn_if_flat_root: once a run)
    flat_root_warned: bool = False
    # random_strength's seeds of the run's trees (noise_of, made on its first call)
    noise_seeds: SplitNoiseSeeds | None = None

    def __init__(self, params, objective, train_set, valid_sets, n_threads) -> None:
        self.t_start = time.perf_counter()
        self.params = params
        self.objective = objective
        self.train_set = train_set
        self.n_threads = n_threads
        self.rng = np.random.default_rng(params.random_state)
        prepare_objective(objective, train_set)
        self.n_out = objective.n_outputs(train_set)
        # each output's training scores (min, max) after the last round (None: unknown,
        # the first round of a run), for check_round_finite's collapse check
        self.score_ranges: list[tuple[float, float] | None] = [None] * self.n_out
        self.n = train_set.n_samples
        self.n_features = train_set.X.shape[1]
        self.averaged = objective.update_rule == "averaged"
        self.bin_data()
        self.grower = self.make_grower()
        init = np.asarray(objective.init_score(train_set), dtype=np.float64)
        self.init = init.reshape(self.n_out)
        self.raw = np.empty((self.n_out, self.n), dtype=SCORE_DTYPE)
        self.raw[:] = self.init[:, None]
        self.metric_names = metric_names(params, objective)
        self.valid = [self.bind_validation(name, vs) for name, vs in valid_sets]
        self.trees: list[NDArray] = []
        self.outputs: list[int] = []
        self.evals_result: dict[str, dict[str, list[float]]] = {
            v.name: {m: [] for m in self.metric_names} for v in self.valid
        }
        self.best_score: float | None = None
        self.best_iter = 0
        # None: the objective's own default (0.1, or 1.0 for GBRank's averaged update).
        self.learning_rate = float(
            objective.default_learning_rate
            if params.learning_rate is None
            else params.learning_rate
        )

    # --- steps run once ---
    def bin_data(self) -> None:
        """Fit the bins on the training features and bin them.

        Constant / absent columns cost nothing: trees are grown on the others
        (``self.used`` maps feature ids between the two numberings)."""
        p = self.params
        self.binner = BinMapper(
            p.max_bins,
            random_state=p.random_state,
            min_samples_bin=int(p.min_samples_bin),
        )
        self.used = UsedFeatures(self.train_set.X)
        check_histogram_memory(
            self.used,
            p,
            self.n,
            p.split_criterion == "ole" and self.objective.is_pairwise,
        )
        if p.split_criterion == "ole" and self.objective.is_pairwise:
            # before the first round's gradients (an O(n^2) pass for ranknet)
            refuse_ole_pairs_up_front(self.train_set, self.objective, p.subsample < 1)
        self.X_binned = self.binner.fit_transform(self.used.take(self.train_set.X))

    def make_grower(self) -> TreeGrower:
        """The tree grower over the binned training rows (local: one shard)."""
        return TreeGrower(
            self.X_binned,
            self.binner.n_bins_non_missing_,
            self.binner.missing_bin_,
            self.binner.thresholds_matrix(),
            GrowerParams(**self.params.tree_kwargs()),
            n_threads=self.n_threads,
        )

    def bind_validation(self, name: str, vs: RankingDataset) -> _Valid:
        """Bin a validation set and bind its metrics; its scores start at init."""
        bound = check_validation_set(self.params, self.objective, name, vs, self.train_set)
        Xb = self.binner.transform(self.used.take(vs.X))
        rv = np.empty((self.n_out, vs.n_samples), dtype=SCORE_DTYPE)
        rv[:] = self.init[:, None]
        warn_if_threshold_separates_nothing(
            self.params, self.objective, vs.y, f"validation set {name!r}"
        )
        return _Valid(name, vs, Xb, rv, bound)

    def resume(self, init_model: Booster) -> int:
        """Load a previous booster's trees, replay its scores and random draws; the
        first round to train: the number of rounds already done, or ``n_estimators``
        when those rounds already met the early stop (no round is added)."""
        objective = self.objective
        n_out = self.n_out
        check_resumable(init_model, objective, n_out, self.n_features)
        self.check_resumed_names(init_model.feature_names)
        done = init_model.n_iterations
        if done > int(self.params.n_estimators):  # the model would come back as is
            raise ValueError(
                f"n_estimators={self.params.n_estimators} is below the {done} rounds of "
                f"the model to continue: resuming, n_estimators counts the rounds in "
                f"total (at least {done})"
            )
        # data without column names (an array, a LETOR file) continues a named model by
        # position: the new model keeps the names, so predict still takes a DataFrame's
        # columns by name instead of silently by position
        self.resumed_feature_names = init_model.feature_names
        saved_bias = getattr(init_model, "position_bias", None)
        if getattr(objective, "unbiased", False) and done > 0:
            if saved_bias is None:
                raise ParameterError(
                    "cannot resume unbiased=True training from a model without position "
                    "bias estimates"
                )
            objective.set_position_bias(saved_bias["t_plus"], saved_bias["t_minus"])
        # the model's own initial scores: recomputed from other data (a mean label, class
        # priors) they shifted every prediction of the continued trees, silently
        init = np.asarray(init_model.init_score, dtype=np.float64).reshape(n_out)
        if not np.array_equal(init, self.init):
            self.init = init
            self.raw[:] = init[:, None]
            for v in self.valid:
                v.raw[:] = init[:, None]
        # the CLI's reading convention of a model file goes on with its trees
        self.resumed_missing = getattr(init_model, "missing", None)
        self.resumed_with_nan = bool(getattr(init_model, "trained_with_nan", False))
        self.trees.extend(t.copy() for t in init_model.trees[: done * n_out])
        self.outputs.extend(init_model.tree_outputs[: done * n_out])
        self.replay_scores()
        continued = self.resume_history(init_model.evals_result or {}, done)
        # every resumed round until a new one is evaluated (0 predicted init_score alone
        # when no round was added on a validation set the model had not recorded)
        self.best_iter = done
        self.best_bias = saved_bias
        # Fast-forward the random generator through the draws of the finished rounds.
        for _ in range(done):
            self.draw_bag()
            for _k in range(n_out):
                self.draw_features()
        if done > 0 and self.valid and continued:
            hist = np.asarray(self.evals_result[self.valid[0].name][self.metric_names[0]])
            if (hist == hist).any():  # a NaN round is never the best (np.argmax picks it)
                # the record covers the last rounds (a warm start records only its own)
                at = int(np.nanargmax(hist))
                self.best_iter = done - hist.shape[0] + at + 1
                self.best_score = float(hist[at])
                if self.best_iter != done:  # the model's estimates of that round, if kept
                    kept = getattr(init_model, "best_position_bias", None)
                    same = init_model.best_iteration == self.best_iter
                    self.best_bias = kept if same else None
            rounds = self.params.early_stopping_rounds
            if (
                rounds is not None
                and self.best_score is not None
                and hist.shape[0] == done  # a metric for every round done
                and done - self.best_iter >= int(rounds)
            ):
                # The uninterrupted run stopped at round ``done`` (this model is, e.g.,
                # the checkpoint of that round of a run killed before its output).
                if int(self.params.n_estimators) > done:  # rounds asked, none added
                    warnings.warn(
                        f"the model to continue had already stopped early: "
                        f"{self.valid[0].name}'s {self.metric_names[0]} last improved at "
                        f"round {self.best_iter} of its {done}, and "
                        f"early_stopping_rounds={rounds} ends training {rounds} rounds "
                        "after that; no round was added (early_stopping_rounds=None, or "
                        "a larger value, trains on)",
                        ParameterWarning,
                        stacklevel=external_stacklevel(),
                    )
                return max(done, int(self.params.n_estimators))
        return done

    def resume_history(self, recorded: dict, done: int) -> bool:
        """The metric history of the ``done`` resumed rounds on each validation set;
        True when the first set's history is the one the model recorded (a resumed run:
        early stopping goes on from it).

        A set whose recorded history ends with the value the replayed scores give (the
        same set, by name and data) keeps it.  Any other set -- another set under the
        same name, or none recorded -- gets its history computed round by round from the
        trees, and early stopping then looks at the new rounds only, as LightGBM and
        XGBoost do when they continue a model: a history recorded on other data used to
        be taken as this set's, and its best round (one of the old model's) then cut the
        continued model to fewer trees than the model it continued.
        """
        if done == 0:
            return True
        kept = []
        for v in self.valid:
            rec = recorded.get(v.name) or {}
            now = self._metric_values(v, v.raw, done - 1)
            same = all(
                len(rec.get(m) or []) >= done and rec[m][done - 1] == now[m]
                for m in self.metric_names
            )
            if same:
                for m in self.metric_names:
                    self.evals_result[v.name][m].extend(rec[m][:done])
            else:
                self._replay_history(v, done)
            kept.append(same)
        return bool(kept) and kept[0]

    def _replay_history(self, v: _Valid, done: int) -> None:
        """Every metric on validation set ``v`` after each of the first ``done``
        rounds, from the resumed trees."""
        raw = np.empty_like(v.raw)
        raw[:] = self.init[:, None]
        n_out = self.n_out
        for it in range(done):
            lo, hi = it * n_out, (it + 1) * n_out
            predict_raw(pack_trees(self.trees[lo:hi], self.outputs[lo:hi]), v.data.X, raw)
            for m, val in self._metric_values(v, raw, it).items():
                self.evals_result[v.name][m].append(val)

    def _metric_values(self, v: _Valid, raw, iteration: int) -> dict[str, float]:
        """Every metric of validation set ``v`` for scores ``raw`` after round
        ``iteration``."""
        vscores = raw / averaged_divisor(iteration + 1) if self.averaged else raw
        ranked = self.objective.transform(vscores)
        return {
            mname: float(bm(ranked)) for mname, bm in zip(self.metric_names, v.metrics, strict=True)
        }

    def replay_scores(self) -> None:
        """Training and validation scores of the trees loaded by :meth:`resume`."""
        packed = pack_trees(self.trees, self.outputs)
        predict_raw(packed, self.train_set.X, self.raw)
        for v in self.valid:
            predict_raw(packed, v.data.X, v.raw)

    # --- steps run every round ---
    def draw_bag(self):
        return _draw_bag(self.rng, self.params.subsample, self.train_set.query_offsets)

    def draw_features(self):
        return _draw_features(self.rng, self.params.colsample_bytree, self.n_features)

    def ole_pairs(self, scores, in_bag, iteration: int):
        """The round's pairs for the exact OLE hessian (a
        :class:`~ltrboost.pair_csr.PairCSR`), only those with both documents in the
        bag; None unless a pairwise objective runs under ``split_criterion="ole"``."""
        if not (self.params.split_criterion == "ole" and self.objective.is_pairwise):
            return None
        return self.objective.ole_pairs(scores, self.train_set, iteration=iteration, in_bag=in_bag)

    def line_search(self, grown, scores) -> float:
        """The objective's step along the new tree's unscaled output (QBRank)."""
        delta = np.zeros(self.n, dtype=np.float64)
        _apply_tree_train(grown, grown.nodes["value"], delta, self.grower)
        return float(self.objective.line_search(scores, delta, self.train_set))

    def evaluate(self, iteration: int) -> dict[str, dict[str, float]]:
        """Every metric on every validation set after round ``iteration``."""
        evaluation: dict[str, dict[str, float]] = {}
        for v in self.valid:
            res = self._metric_values(v, v.raw, iteration)
            for mname, val in res.items():
                self.evals_result[v.name][mname].append(val)
            evaluation[v.name] = res
        return evaluation

    def should_stop(self, iteration: int, evaluation) -> bool:
        """Track the best round of the first metric on the first validation set; True
        after ``early_stopping_rounds`` rounds without improvement."""
        if not self.valid:
            return False
        first = evaluation[self.valid[0].name][self.metric_names[0]]
        rounds = self.params.early_stopping_rounds
        # never NaN: a custom metric must return a finite number (custom_metric_value)
        if self.best_score is None or first > self.best_score:
            self.best_score = first
            self.best_iter = iteration + 1
            # unbiased LambdaMART: the estimates of the model predict will use
            self.best_bias = self.position_bias()
            return False
        return rounds is not None and iteration + 1 - self.best_iter >= int(rounds)

    def boost_round(self, it: int, gradients, hessians) -> None:
        """Round ``it``: gradients, bag, pairs, then one tree per output."""
        n_out = self.n_out
        raw = self.raw
        scores = raw / averaged_divisor(it) if self.averaged else raw
        obj_scores = scores[0] if n_out == 1 else scores
        obj_g = gradients[0] if n_out == 1 else gradients
        obj_h = hessians[0] if n_out == 1 else hessians
        self.objective.gradient_hessian(obj_scores, self.train_set, obj_g, obj_h, iteration=it)
        sample_indices, in_bag = self.draw_bag()
        pairs = self.ole_pairs(obj_scores, in_bag, it)
        for k in range(n_out):
            feats = self.used.to_compact(self.draw_features())
            noise = self.split_noise(it, k, gradients[k], hessians[k])
            # (split_noise only when random_strength > 0: the default call is unchanged)
            extra = {} if noise is None else {"split_noise": noise}
            if self.params.quantized_gradients:
                extra["quantize"] = (
                    int(self.params.quantized_gradients),
                    quant_seed(self.params.random_state, it, k),
                )
            grown = self.grower.grow(
                gradients[k], hessians[k], sample_indices, feats, pairs, **extra
            )
            self.warn_if_flat_root(it, (k, n_out) if n_out > 1 else None)
            nodes = grown.nodes
            if self.objective.leaf_rule == "line_search":
                check_round_finite(  # before the line search walks a non-finite tree
                    it, gradients=gradients[k], hessians=hessians[k],
                    leaf_values=nodes["value"], hessian_sums=nodes["sum_hessians"],
                    params=self.params, train_set=self.train_set,
                    learning_rate=self.learning_rate,
                )  # fmt: skip
                alpha = self.line_search(grown, obj_scores)
                nodes["value"] *= alpha * self.learning_rate
            else:
                nodes["value"] *= self.learning_rate
            _apply_tree_train(grown, nodes["value"], raw[k], self.grower)
            # the first NaN/inf stops training, naming the round; so do scores that the
            # tree made one number (their (min, max) before it: None in a run's first round)
            ranges = self.score_ranges
            ranges[k] = check_round_finite(
                it, gradients=gradients[k], hessians=hessians[k],
                leaf_values=nodes["value"], hessian_sums=nodes["sum_hessians"], scores=raw[k],
                params=self.params, train_set=self.train_set,
                learning_rate=self.learning_rate, previous_range=ranges[k],
                output=(k, n_out) if n_out > 1 else None,
            )  # fmt: skip
            for v in self.valid:
                predict_binned_tree(nodes, v.X_binned, self.binner.missing_bin_, v.raw[k])
            self.trees.append(self.used.to_original(nodes))
            self.outputs.append(k)

    def split_noise(self, it: int, k: int, gradients, hessians) -> tuple[int, float] | None:
        """``random_strength``'s noise of round ``it``'s tree of output ``k``: ``(seed,
        sigma)`` for :meth:`TreeGrower.grow <ltrboost.grower.TreeGrower.grow>`, None when
        off.  The scale is over every training document's gradient and hessian (the
        bag's too: CatBoost's, before its bootstrap), see
        :func:`~ltrboost.splitting.split_noise_sigma`."""
        p = self.params
        if not p.random_strength > 0:
            return None
        g = np.asarray(gradients, dtype=np.float64)
        sum_h = (
            float(self.n)
            if p.split_criterion == "se"
            else float(np.sum(hessians, dtype=np.float64))
        )
        return self.noise_of(it, k, float(np.sum(g * g)), sum_h)

    def noise_of(self, it: int, k: int, sum_g2: float, sum_h: float) -> tuple[int, float]:
        """``(seed, sigma)`` from the round's sums (local or over shards); the seed is
        the tree's own stream (:class:`~ltrboost.splitting.SplitNoiseSeeds`, made on
        the first call: a resumed run recomputes the earlier trees' there)."""
        p = self.params
        sigma = split_noise_sigma(
            float(p.random_strength), sum_g2, sum_h, self.n, it, self.learning_rate
        )
        if self.noise_seeds is None:
            self.noise_seeds = SplitNoiseSeeds(int(p.random_state), self.n_out)
        return self.noise_seeds(it, k), sigma

    def warn_if_flat_root(self, it: int, output: tuple[int, int] | None = None) -> None:
        """Warn, once a run, when the tree just grown is a root whose hessian sum is
        under ``min_sum_hessian_in_leaf`` and so got value 0 instead of a Newton step
        (:meth:`TreeGrower._flatten_root <ltrboost.grower.TreeGrower._flatten_root>`):
        the hessians vanished, where the scores saturated under a large
        ``learning_rate``, or for a class (mcrank's grade) that almost no document is in;
        or, for a hessian sum the default limit would have taken, the limit is above
        the data's curvature, which the warning names instead.
        ``output``: ``(k, n_outputs)`` of a multi-output objective."""
        flat = self.grower.flat_root
        if flat is None or self.flat_root_warned:
            return
        lost, hessian_sum = flat
        self.flat_root_warned = True
        of_output = "" if output is None else f" of output {output[0]} (of {output[1]})"
        limit = self.params.min_sum_hessian_in_leaf
        if hessian_sum >= DEFAULTS["min_sum_hessian_in_leaf"]:
            # not vanished hessians (the default limit would have taken the step): a
            # limit above the curvature of every document the tree was grown on
            why = (
                f"min_sum_hessian_in_leaf={limit:g} is above the hessian sum of all the "
                "documents the tree was grown on: lower it"
            )
        else:
            shrunk = getattr(self.objective, "vanished_hessian_cause", lambda: None)()
            why = (
                "the hessians all but vanished: "
                + ("" if shrunk is None else f"{shrunk} (raise it), or ")
                + "saturated scores, e.g. under a large learning_rate, or a class almost "
                "no document is in; min_sum_hessian_in_leaf=0 takes the step"
            )
        warnings.warn(
            f"round {it + 1}: the tree{of_output} is one leaf whose hessian sum "
            f"{hessian_sum:.3g} is under min_sum_hessian_in_leaf={limit:g}, as no leaf of a "
            f"split may be: its value is 0, not the Newton step -G/(H+l2)={lost:.3g}, and "
            f"so is every such tree after it ({why})",
            ParameterWarning,
            stacklevel=external_stacklevel(),
        )

    def booster(self) -> Booster:
        """The model so far."""
        p = self.params
        best = self.best_iter if (self.valid and p.early_stopping_rounds) else None
        # the position biases after round ``best`` when rounds past it were trained
        # (``position_bias`` is the last round's: resuming continues from it)
        best_bias = None
        if best is not None and best < len(self.trees) // self.n_out:
            best_bias = self.best_bias
        return Booster(
            objective=self.objective.name,
            objective_params=written_numbers(self.objective.get_params()),
            init_score=self.init,
            trees=list(self.trees),
            tree_outputs=list(self.outputs),
            n_features=self.n_features,
            update_rule=self.objective.update_rule,
            best_iteration=best,
            params=_params_for_model(p),
            feature_names=self.feature_names(),
            evals_result={
                k: {m: list(v) for m, v in d.items()} for k, d in self.evals_result.items()
            },
            n_outputs=self.n_out,
            position_bias=self.position_bias(),
            best_position_bias=best_bias,
            missing=getattr(self, "resumed_missing", None),
            trained_with_nan=getattr(self, "resumed_with_nan", False),
        )

    def snapshot(self) -> Booster:
        """The model so far, for a callback (``env.snapshot()``).  Its trees are read-only
        views of the ones being trained (kept from one call to the next, so checkpoints
        serialize each tree once): a callback editing a snapshot's leaf values changed
        the model being trained, silently; now it gets NumPy's "assignment destination
        is read-only"."""
        views = self.__dict__.setdefault("_snapshot_views", [])
        del views[len(self.trees) :]
        for k, t in enumerate(self.trees):
            if k == len(views) or views[k].base is not t:
                v = t.view()
                v.flags.writeable = False
                views[k:] = [v]
        model = self.booster()
        model.trees = list(views)
        return model

    def check_resumed_names(self, model_names) -> None:
        """Refuse training or validation data whose column names differ from the
        continued model's: its trees read the columns by position, so other names (the
        same in another order) were silently other features (``Ranker.fit`` takes them
        by name); a named validation set was unchecked when the training data had none."""
        if model_names is None:
            return
        sets = [("the training data", self.train_set)]
        # (Dask's sets are on the workers, taken by name there)
        sets += [(f"validation set {v.name!r}", getattr(v, "data", None)) for v in self.valid]
        for what, data in sets:
            names = getattr(data, "feature_names", None)
            if names is None or list(names) == list(model_names):
                continue
            k = next(k for k, (a, b) in enumerate(zip(names, model_names, strict=True)) if a != b)
            raise ValueError(
                f"cannot resume: {what} has feature {k} named {names[k]!r} but the model's "
                f"is {model_names[k]!r}: columns are read by position; give them in the "
                "model's order (e.g. make_dataset(df[booster.feature_names], ...))"
            )

    def feature_names(self) -> list[str] | None:
        """The training data's column names, else those of the resumed model."""
        names = self.train_set.feature_names
        if names is None:
            names = getattr(self, "resumed_feature_names", None)
        return None if names is None else list(names)

    def position_bias(self) -> dict[str, list[float]] | None:
        """Unbiased LambdaMART's estimates ``{"t_plus": [...], "t_minus": [...]}``
        after the rounds so far; None for every other run."""
        get = getattr(self.objective, "position_bias", None)
        bias = get() if get is not None and getattr(self.objective, "unbiased", False) else None
        if bias is None:
            return None
        return {"t_plus": bias.t_plus.tolist(), "t_minus": bias.t_minus.tolist()}

    def run(self, callbacks=(), init_model: Booster | None = None) -> Booster:
        """The boosting loop; returns the trained booster."""
        start_iter = 0 if init_model is None else self.resume(init_model)
        gradients = np.zeros((self.n_out, self.n), dtype=G_H_DTYPE)
        hessians = np.zeros((self.n_out, self.n), dtype=G_H_DTYPE)
        n_estimators = int(self.params.n_estimators)
        for it in range(start_iter, n_estimators):
            self.boost_round(it, gradients, hessians)
            evaluation = self.evaluate(it)
            stop = self.should_stop(it, evaluation)
            env = CallbackEnv(
                iteration=it,
                n_estimators=n_estimators,
                evaluation=evaluation,
                best_iteration=self.best_iter,
                best_score=self.best_score,
                elapsed=time.perf_counter() - self.t_start,
                snapshot=self.snapshot,
            )
            if callbacks_stop(callbacks, env):
                stop = True
            if stop:
                break
        return self.booster()


def _apply_tree_train(grown, values, out, grower) -> None:
    """Add a grown tree's (already scaled) leaf ``values`` to the training scores."""
    grower.add_to_scores(grown, values, out)


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

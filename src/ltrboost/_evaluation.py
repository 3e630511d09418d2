"""Evaluation during training: metric options, custom metrics, setup checks.

Kept out of :mod:`ltrboost.booster` so the boosting loop only calls these helpers.

* :func:`metric_options`: ``gain`` and ``relevance_threshold`` are objective parameters
  *and* evaluation options, so validation metrics, early stopping, ``Ranker.score`` and
  ``ltrboost eval`` judge a model with the gains it was trained for.
* ``eval_metric`` may mix metric names and callables ``f(scores, labels,
  query_offsets) -> float`` (higher is better), named by their ``__name__``
  (:func:`callable_name`: a ``functools.partial`` is ``"partial"``).
* :func:`check_training_setup`: early stopping needs a validation set, validation
  sets need distinct names, neither empty nor blank nor holding a control character;
  parameters the objective (or its ``pair_method``) ignores are warned about.
"""

from __future__ import annotations

import inspect
import math
import numbers
import unicodedata
import warnings
from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import Any

import numpy as np

from ltrboost._callsite import external_stacklevel
from ltrboost.dataset import RankingDataset, rows_located
from ltrboost.params import ParameterError, ParameterWarning

# Objective parameters that evaluation reads too: never reported as unused.
_EVALUATION_PARAM_NAMES = ("gain", "relevance_threshold")


def metric_options(params: Any) -> dict[str, Any]:
    """Options of :func:`~ltrboost.metrics.get_metric` implied by training parameters.

    ``gain`` and ``relevance_threshold`` configure the objective *and* the evaluation
    (validation metrics, early stopping, ``Ranker.score``, ``ltrboost eval``), so that a
    model is judged by the gains it was trained for.
    """
    get = params.get if isinstance(params, dict) else lambda k: getattr(params, k)
    return {k: get(k) for k in _EVALUATION_PARAM_NAMES if get(k) is not None}


def check_training_setup(params, objective, valid_sets) -> None:
    """Refuse early stopping without a validation set, duplicate validation names or
    ones :func:`name_problem` refuses (empty, blank, a control character); warn about
    parameters the objective ignores (and ``ole_top_features`` without pairwise OLE)."""
    if params.early_stopping_rounds is not None and not valid_sets:
        raise ValueError(
            f"early_stopping_rounds={params.early_stopping_rounds} needs a validation "
            "set (eval_set= in Python, --valid on the command line)"
        )
    names = [name for name, _ in valid_sets]
    for k, name in enumerate(names):  # the CLI's names (files') are never empty
        problem = name_problem(name)
        if problem is not None:
            what = "has an empty name" if name == "" else f"name {problem}"
            raise ValueError(
                f"valid_sets[{k}] {what}: a validation set's name keys evals_result and "
                "the log lines (NAME's ndcg@10); give it one"
            )
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"validation sets must have distinct names; repeated: {dup}")
    refused = getattr(objective, "ole_refused", None)
    if params.split_criterion == "ole" and refused:
        raise ParameterError(
            f"split_criterion='ole' is not available for objective {objective.name!r}: "
            f"{refused}; use split_criterion='newton' (default) or 'se'"
        )
    if params.quantized_gradients and params.split_criterion == "ole" and objective.is_pairwise:
        raise ParameterError(
            f"quantized_gradients={params.quantized_gradients} does not combine with "
            "split_criterion='ole' (its pair histograms are exact); use "
            "split_criterion='newton' (default) or quantized_gradients=0"
        )
    if params.ole_top_features is not None and not (
        params.split_criterion == "ole" and objective.is_pairwise
    ):
        warnings.warn(
            f"ole_top_features={params.ole_top_features!r} approximates the OLE criterion "
            "of a pairwise objective; with "
            f"split_criterion={params.split_criterion!r} and objective {objective.name!r} "
            "it is ignored",
            ParameterWarning,
            stacklevel=external_stacklevel(),
        )
    from ltrboost.params import OBJECTIVE_PARAM_NAMES

    accepted = inspect.signature(type(objective).__init__).parameters
    unused = [
        k
        for k in OBJECTIVE_PARAM_NAMES
        if getattr(params, k) is not None and k not in _EVALUATION_PARAM_NAMES and k not in accepted
    ]
    if unused:
        warnings.warn(
            f"objective {objective.name!r} does not use "
            + ", ".join(f"{k}={getattr(params, k)!r}" for k in unused)
            + "; these parameters are ignored",
            ParameterWarning,
            stacklevel=external_stacklevel(),
        )
    _warn_pair_params_ignored(params, objective)


def warn_if_early_stopping_blind(params, objective, valid_sets) -> None:
    """Warn when the validation set that drives early stopping has no query with two
    different labels (no judgements: every label 0; single-document queries) under a
    built-in first metric: that metric is the same whatever the scores, so training
    stopped after ``early_stopping_rounds + 1`` rounds and predicted with its first
    tree alone, silently.  A callable metric may score the scores alone: not warned."""
    if params.early_stopping_rounds is None or not valid_sets:
        return
    metric, fn = _metrics(params, objective)[0]
    if fn is not None:
        return
    name, vs = valid_sets[0]
    y, offsets = getattr(vs, "y", None), getattr(vs, "query_offsets", None)
    if y is None or offsets is None or np.asarray(y).shape[0] == 0:
        return  # refused later, naming the set
    from ltrboost.booster import query_label_range

    top, bottom = query_label_range(y, offsets).T  # an empty query: equal, or (-inf, inf)
    if (top > bottom).any():
        return
    warnings.warn(
        f"validation set {name!r} (the first eval_set, or --valid on the command line) "
        "drives early stopping, but none of its queries has "
        f"documents of different labels: its {metric} is the same whatever the scores, "
        f"so training stops after {int(params.early_stopping_rounds) + 1} rounds and the "
        "model predicts with its first tree alone (best_iteration 1); give a validation "
        "set with judged queries first",
        UserWarning,
        stacklevel=external_stacklevel(),
    )


# metric families that binarise the labels at relevance_threshold
_THRESHOLD_FAMILIES = ("map", "mrr", "p")


def warn_if_threshold_separates_nothing(params, objective, y, where: str) -> None:
    """Warn when ``relevance_threshold`` counts every document of ``y`` relevant, or
    none, while ``y`` holds two grades or more: the built-in MAP, MRR and P@k among the
    evaluation metrics are then the same whatever the scores (a flat log; early
    stopping on them ends after its patience).  ``where`` names the data."""
    options = metric_options(params)
    names = [name for name, fn in _metrics(params, objective) if fn is None]
    msg = threshold_separates_nothing(names, options, y, where)
    if msg is not None:
        warnings.warn(msg, ParameterWarning, stacklevel=external_stacklevel())


def warn_if_metric_flat(metric, y, where: str, stacklevel: int = 3) -> None:
    """:func:`warn_if_threshold_separates_nothing` for one
    :class:`~ltrboost.metrics.Metric` (its own ``relevance_threshold``) scored on the
    labels ``y``: ``Ranker.score`` and ``make_scorer``'s scorer warn as ``ltrboost
    eval`` does.  ``where`` names the data; the default ``stacklevel`` points at the
    code that called the caller."""
    options = {"relevance_threshold": metric.relevance_threshold}
    msg = threshold_separates_nothing([metric.name], options, y, where)
    if msg is not None:
        warnings.warn(msg, ParameterWarning, stacklevel=stacklevel)


# where the scoring of a worker of permutation_importance(n_jobs=...) is called from
_WORKER_MODULES = ("joblib", "threading", "concurrent.", "multiprocessing.")


def warn_if_queries_permuted(metric_name: str) -> None:
    """Warn when a ``qid`` column of ``X`` gives the queries of a scoring that
    ``permutation_importance`` asked for (a module named ``[_]permutation_importance``
    on the call stack: scikit-learn's, eli5's): it permutes that column like a
    feature, which scrambles the queries, so the importance it reports for ``qid``
    means nothing.  The way out is
    named: queries bound to the scorer (``make_scorer(..., qid=qid)``), under which
    the column is ignored.  Nothing can tell from inside the scoring whether this call
    scores the permuted column; the warning points at the caller of
    ``permutation_importance``, so it is shown once there (not again from the workers
    of its ``n_jobs``)."""
    import sys

    frames = []  # the caller's frame first, outwards
    frame = sys._getframe(1)
    while frame is not None and len(frames) < 256:
        frames.append(str(frame.f_globals.get("__name__", "")))
        frame = frame.f_back

    def permuting(module: str) -> bool:  # sklearn.inspection._permutation_importance
        return module.rpartition(".")[2].lstrip("_") == "permutation_importance"

    found = [k for k, name in enumerate(frames) if permuting(name)]
    if not found:
        return
    # the code that called permutation_importance: past its module and scikit-learn's
    # wrappers (validate_params), to the first frame outside them
    level = found[-1]
    while level + 1 < len(frames) and (
        permuting(frames[level + 1]) or frames[level + 1].startswith("sklearn.")
    ):
        level += 1
    # a worker of its n_jobs (joblib, threads): no caller of ours there; the baseline
    # score, in the caller's process and thread, has warned at the caller's line
    if level + 1 >= len(frames) or frames[level + 1].startswith(_WORKER_MODULES):
        return
    warnings.warn(
        "permutation_importance permutes X's 'qid' column like a feature, and the "
        "queries are read from it: permuted, it scrambles the queries, so the "
        "importance reported for 'qid' means nothing (the other columns' are sound). "
        "Bind the queries to the scorer instead: permutation_importance(model, X, y, "
        f"scoring=ltrboost.metrics.make_scorer({metric_name!r}, qid=qid)), which "
        "ignores the 'qid' column (its importance comes out 0)",
        UserWarning,
        stacklevel=level + 3,  # 1: this function, 2: frames[0]
    )


def threshold_separates_nothing(names, options: dict, y, where: str) -> str | None:
    """The message of :func:`warn_if_threshold_separates_nothing` for the metric
    ``names`` (the MAP, MRR and P@k among them count) under the metric ``options``,
    or None."""
    from ltrboost.metrics import get_metric
    from ltrboost.objectives.base import one_sided_threshold

    binary = [n for n in names if get_metric(n, **options).family in _THRESHOLD_FAMILIES]
    if not binary or y is None:
        return None
    threshold = float(options.get("relevance_threshold", 1.0))
    one_sided = one_sided_threshold(np.asarray(y, dtype=np.float64), threshold)
    if one_sided is None:
        return None
    every, _, grades = one_sided
    return (
        f"relevance_threshold={threshold:g} counts {every} document of {where} relevant "
        f"(relevant is y >= relevance_threshold; the labels hold {grades}): its "
        + ", ".join(binary)
        + (" is" if len(binary) == 1 else " are")
        + " the same whatever the scores; set relevance_threshold on the labels' scale"
    )


def _warn_pair_params_ignored(params, objective) -> None:
    """Warn about ``pairs_per_sample`` without ``pair_method="sampled"`` and a positive
    ``truncation_level`` without ``"topk"`` (LambdaMART's NDCG excepted: its ideal DCG
    is cut at the level whatever the pair method): the pair method never reads them."""
    op = getattr(objective, "params", None)
    method = op.get("pair_method") if isinstance(op, dict) else None
    if method is None:  # no pair method: the objective ignores both (warned above)
        return
    ignored = []
    if params.pairs_per_sample is not None and method != "sampled":
        ignored.append(f"pairs_per_sample={params.pairs_per_sample!r}")
    ndcg_cut = objective.name == "lambdamart" and op.get("lambda_metric") == "ndcg"
    if params.truncation_level not in (None, 0) and method != "topk" and not ndcg_cut:
        ignored.append(f"truncation_level={params.truncation_level!r}")
    if ignored:
        warnings.warn(
            f"objective {objective.name!r} with pair_method={method!r} does not use "
            + ", ".join(ignored)
            + "; these parameters are ignored",
            ParameterWarning,
            stacklevel=external_stacklevel(),
        )


def _metrics(params, objective) -> list[tuple[str, Any]]:
    """(name, callable or None) per evaluation metric, unique by name, first drives.

    ``eval_metric`` is a name, a comma-separated string, a callable
    ``f(scores, labels, query_offsets) -> float`` (higher is better; named by its
    ``__name__``, a non-empty string) or a list mixing names and callables.
    """
    from ltrboost.metrics.registry import split_metric_list

    m = params.eval_metric
    if m is None:
        return [(objective.default_metric, None)]
    if callable(m):
        items = [m]
    elif not isinstance(m, str | list | tuple):
        raise ValueError(
            f"eval_metric={m!r} must be a metric name, a callable f(scores, labels, "
            "query_offsets) -> float, or a list of them"
        )
    else:
        # the one grammar of metric lists (--metric's too): "", "ndcg@5," or
        # ["ndcg@5", ""] is a mistake, not the default metric or one metric less
        try:
            items = split_metric_list(m)
        except ValueError as e:
            raise ParameterError(f"eval_metric: {e}") from None
    out: dict[str, Any] = {}
    for item in items:
        if callable(item):
            # the name is its key in evals_result_ and the model file, which holds
            # non-empty names only: the saved model could not be loaded
            recorded = "a metric is recorded by its name (evals_result_, the model file)"
            name = recorded_callable_name(item, "eval_metric", recorded)
            if name in out and out[name] is not item:
                raise ValueError(
                    f"eval_metric: two metrics are named {name!r} (results are kept by "
                    "name); give each callable its own __name__"
                )
            out.setdefault(name, item)
        elif not isinstance(item, str):
            raise ValueError(
                f"eval_metric entries must be metric names or callables "
                f"f(scores, labels, query_offsets) -> float, not {item!r}"
            )
        else:
            # one name grammar everywhere: "NDCG@05" is recorded as "ndcg@5", once
            from ltrboost.metrics import parse_metric_list

            try:
                item = parse_metric_list([item])[0]
            except ValueError:
                pass  # unknown: check_metrics names it as typed
            if out.get(item) is not None:  # a callable of that __name__ came first
                raise ValueError(
                    f"eval_metric: two metrics are named {item!r} (results are kept by "
                    "name); give the callable another __name__"
                )
            out.setdefault(item, None)
    for name, fn in out.items():
        if fn is not None:
            _refuse_built_in_name(name, fn, params)
    return list(out.items())


def _refuse_built_in_name(name: str, fn: Any, params: Any) -> None:
    """Refuse a callable metric recorded under a built-in metric's name unless it *is*
    that metric: ``evals_result_`` and the model file's ``eval_metric`` keep metrics by
    name, and a loaded model (``Ranker.from_booster``, its ``score``) evaluates a
    built-in name with the model's options, so another function's values (or the same
    metric's under other options) passed for the built-in's after saving."""
    from ltrboost.metrics import get_metric, parse_metric_list
    from ltrboost.metrics.registry import Metric

    if isinstance(fn, Metric):
        own = get_metric(fn.name, **metric_options(params))
        if fn._options() == own._options():
            return
        differ = [k for k, v in fn._options().items() if own._options()[k] != v]
        theirs = ", ".join(f"{k}={getattr(fn, k)!r}" for k in differ)
        model = ", ".join(f"{k}={getattr(own, k)!r}" for k in differ)
        raise ValueError(
            f"eval_metric: get_metric({fn.name!r}, {theirs}) is not this model's "
            f"{fn.name!r} ({model}): metrics are recorded by name (evals_result_, the "
            f"model file), and a loaded model evaluates {fn.name!r} with its own options; "
            "train with those options (gain=, relevance_threshold=), or wrap the metric "
            "in a function with another __name__"
        )
    try:
        canonical = parse_metric_list([name])[0]
    except ValueError:
        return  # a name of its own
    raise ValueError(
        f"eval_metric: the callable {name!r} has the name of the built-in metric "
        f"{canonical!r}: metrics are recorded by name (evals_result_, the model file), so "
        "its values would pass for the built-in's (a loaded model evaluates the built-in); "
        f"give it another __name__, or pass the string {canonical!r} for the built-in"
    )


def _bind_metrics(params, objective, vs: RankingDataset, max_grade=None) -> list:
    """One scorer ``f(scores) -> float`` per metric of :func:`_metrics`, on ``vs``.

    ``max_grade``: ERR's ``y_max`` when ``vs`` is part of a larger validation set (a
    Dask shard); None takes the largest label of ``vs``.
    """
    from ltrboost.metrics import get_metric

    bound = []
    for name, fn in _metrics(params, objective):
        if fn is None:
            metric = get_metric(name, max_grade=max_grade, **metric_options(params))
            with rows_located(vs):
                bound.append(metric.bind(vs.y, vs.query_offsets))
        else:
            bound.append(_CustomMetric(fn, vs))
    return bound


class _CustomMetric:
    """A user metric ``fn(scores, labels, query_offsets) -> float`` bound to data."""

    def __init__(self, fn, vs: RankingDataset) -> None:
        self.fn, self.y, self.query_offsets = fn, vs.y, vs.query_offsets

    def __call__(self, scores) -> float:
        return custom_metric_value(self.fn, scores, self.y, self.query_offsets)


def callable_name(fn: Any) -> Any:
    """The name a callable metric is recorded by (its key in ``evals_result_`` and the
    model file), and a custom objective (``"custom:<name>"``,
    :func:`ltrboost.objectives.custom.custom_name`): its ``__name__``, else its type's
    name -- ``"partial"`` for a :func:`functools.partial`, the class name for an
    instance with ``__call__``.  A ``__name__`` that is no string is returned as it
    is, for :func:`recorded_callable_name` to refuse."""
    name = getattr(fn, "__name__", None)
    return type(fn).__name__ if name is None else name


def name_problem(name: Any) -> str | None:
    """Why ``name`` cannot name a validation set, a callable metric or a custom
    objective, None when it can: it keys ``evals_result``, the model file and every log
    line (``[5] NAME's ndcg@10: ...``), so it must be a string neither empty, nor blank
    (only whitespace), nor holding a control character (a newline split each log line
    in two; an escape sequence recoloured the terminal).  Names are never stripped:
    ``" a"`` and ``"a"`` are two names."""
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a string"
    if name == "":
        return "is empty"
    if not name.strip():
        return f"is blank ({name!r})"
    bad = next((c for c in name if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        return f"holds a control character ({bad!r})"
    return None


def recorded_callable_name(fn: Any, param: str, recorded: str) -> str:
    """:func:`callable_name` of ``fn``, given as parameter ``param`` (``"eval_metric"``,
    ``"objective"``), refused (one-line ``ValueError``) when :func:`name_problem` finds
    one; ``recorded`` says where the name goes."""
    name = callable_name(fn)
    if name_problem(name) is not None:
        raise ValueError(
            f"{param}: the callable {_one_line(fn)} has __name__={name!r}; {recorded}: "
            "give it a non-empty string __name__ without control characters"
        )
    return name


def _one_line(obj: Any) -> str:
    """``repr(obj)`` shortened as :func:`~ltrboost._checks._short_repr` does, on one
    line (a user class's repr may be anything)."""
    from ltrboost._checks import _short_repr

    text = _short_repr(obj)
    return text if "\n" not in text and "\r" not in text else repr(text)


def custom_metric_value(fn, scores, labels, query_offsets) -> float:
    """``fn(scores, labels, query_offsets)`` as a float; anything but a finite real
    number is refused naming the metric (a NaN would freeze early stopping at its round
    and cannot be written to a model file).

    ``fn`` gets read-only arrays, as a custom objective does: the labels are the
    caller's validation set, so a metric that changed them in place changed every later
    round's metrics and early stopping (and the caller's data), silently.  The scores
    are a copy: training adds the next trees to its own in place, and scores a metric
    kept from a round (to compare rounds) turned into the next round's."""
    name = callable_name(fn)
    scores = np.array(scores, dtype=np.float64)  # never the engine's buffer
    try:
        v = fn(*(_read_only(a) for a in (scores, labels, query_offsets)))
    except ValueError as e:
        if "read-only" not in str(e):
            e.add_note(f"raised by eval_metric {name!r}")
            raise
        raise ValueError(
            f"eval_metric {name!r} wrote into its arguments ({e}): scores, labels and "
            "query_offsets are read-only; work on a copy"
        ) from e
    except Exception as e:  # a lambda's traceback does not name it
        e.add_note(f"raised by eval_metric {name!r}")
        raise
    if getattr(v, "shape", None) == () and hasattr(v, "item"):  # a 0-d NumPy array
        v = v.item()
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        try:
            value = float(v)
        except OverflowError:
            # a Python int or Fraction beyond float64 (10**400): its digits say nothing,
            # and past 4300 of them Python will not write them (the message failed)
            kind = "an int" if isinstance(v, int) else f"a {type(v).__name__}"
            raise ValueError(
                f"eval_metric {name!r} returned {kind} beyond float64's range (magnitude "
                "over 1.8e308); a metric must return a finite real number (higher is better)"
            ) from None
        if math.isfinite(value):
            return value
    from ltrboost._checks import _short_repr

    raise ValueError(
        f"eval_metric {name!r} returned {_short_repr(v)}; a metric must return a finite "
        "real number (higher is better)"
    )


def _read_only(a):
    """A read-only view of the array ``a`` (no copy)."""
    view = np.asarray(a).view()
    view.flags.writeable = False
    return view


# Parameters added after the model format was settled, left out of a model file while
# at their default (None, or random_strength's and quantized_gradients' 0): models
# trained without them keep the same bytes, and reading a file without them gives the default.
WRITTEN_ONLY_WHEN_SET = (
    "ole_top_features",
    "unbiased",
    "position_bias_norm",
    "max_positions",
    "random_strength",
    "quantized_gradients",
)


def left_out_of_file(name: str, value: Any) -> bool:
    """Whether parameter ``name`` of :data:`WRITTEN_ONLY_WHEN_SET` at ``value`` is left
    out of a model file: at its default (``None``; ``0`` for ``random_strength`` and
    ``quantized_gradients``)."""
    from ltrboost.params import DEFAULTS

    default = DEFAULTS[name]
    return value is None if default is None else value == default


def _params_for_model(params) -> dict[str, Any]:
    """``asdict(params)`` with callables replaced by their names (JSON-safe): metrics by
    ``__name__``, a custom objective by ``"custom:<__name__>"``; the parameters of
    :data:`WRITTEN_ONLY_WHEN_SET` only when set."""
    if callable(params.objective):
        from ltrboost.objectives.custom import custom_name

        params = replace(params, objective=custom_name(params.objective))
    if params.eval_metric is not None:
        # named before asdict(), which turned a Metric (a dataclass) into a dict of its
        # fields (a Fraction among them: the model file could not be written)
        params = replace(params, eval_metric=recorded_eval_metric(params))
    p = written_numbers(asdict(params))
    for name in WRITTEN_ONLY_WHEN_SET:
        if left_out_of_file(name, p[name]):
            del p[name]
    return p


def recorded_eval_metric(params) -> str | list[str] | None:
    """``params.eval_metric`` as a model file records it: one spelling per metric list.

    The names :func:`_metrics` evaluates (those of ``evals_result`` and early stopping),
    in its order: canonical (``"NDCG@05"`` is ``"ndcg@5"``), each once.  A list of
    built-in metrics (names, or ``get_metric`` objects, which must be the built-in) is
    the comma-joined string ``"ndcg@10,map"`` however it was given (``"NDCG@10, MAP"``,
    ``["ndcg@10", "map"]``), as files have recorded ``"ndcg@10"``; with a callable
    among them, a list of names (a callable's ``__name__`` is no metric name and may
    hold a comma).  So the same metrics write the same file.  None stays None (the
    objective's default)."""
    from ltrboost.metrics.registry import Metric

    if params.eval_metric is None:
        return None
    items = _metrics(params, None)  # the objective is read only for None
    if all(fn is None or isinstance(fn, Metric) for _, fn in items):
        return ",".join(name for name, _ in items)
    return [name for name, _ in items]


def _real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_)


def written_numbers(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` (training or objective parameters) with every real-valued parameter
    as a float: ``learning_rate=1`` and ``1.0`` (the CLI's ``--learning-rate 1``) train
    the same model, and the file must not say ``1`` for one and ``1.0`` for the other
    (README: the same parameters give a byte-identical file).  ``tau`` when a number,
    and the grades and scales of ``label_scale``, likewise; ``-0.0`` is written as
    ``0.0`` (the same value).  A ``label_scale`` mapping is one value however its
    grades are spelled or ordered (``{"4": 3}``, the CLI's, is ``{4.0: 3.0}``), so its
    grades are written as numbers, in increasing order.  Integer parameters and names
    are left as they are."""
    from ltrboost.params import REAL_PARAM_NAMES

    out = dict(params)
    for name, v in params.items():
        if name in REAL_PARAM_NAMES or name == "tau":
            if _real(v):
                out[name] = _written_float(v)
        elif name == "label_scale" and v is not None:
            if isinstance(v, Mapping):
                out[name] = _written_label_scale(v)
            elif isinstance(v, list | tuple | np.ndarray):
                out[name] = [_written_float(c) if _real(c) else c for c in v]
    return out


def _written_float(v: Any) -> float:
    """``v`` as the float a file records (``-0.0`` as ``0.0``)."""
    return float(v) + 0.0


def _grade(g: Any) -> Any:
    """A ``label_scale`` grade as a number: a real one, or text that reads as one (JSON
    keys, the CLI's ``--label-scale``); anything else as it is (training refused it)."""
    if _real(g):
        return _written_float(g)
    if isinstance(g, str):
        try:
            return _written_float(g)
        except ValueError:
            return g
    return g


def _written_label_scale(v: Mapping) -> dict[Any, Any]:
    """A ``label_scale`` mapping with numeric grades in increasing order (a grade that
    is no number, which training refuses, keeps its place after them)."""
    items = [(_grade(g), _written_float(c) if _real(c) else c) for g, c in v.items()]
    numbers = sorted((gc for gc in items if _real(gc[0])), key=lambda gc: gc[0])
    return dict(numbers + [gc for gc in items if not _real(gc[0])])


class QueryBlocksEvaluation:
    """:func:`~ltrboost.metrics.evaluate` of a dataset given a block of whole queries
    at a time (``ltrboost eval`` of a file too large to hold): :meth:`add` each block's
    scores, labels and query offsets in query order, then :meth:`values` gives what
    ``evaluate`` of the concatenated blocks gives, bit for bit.

    A metric whose query values stand alone (NDCG, DCG, MAP, MRR, P@k) keeps one float
    a query: its dataset value is their mean in query order
    (:func:`~ltrboost.metrics.registry.mean_over_queries`).  ERR without ``max_grade``
    (its ``y_max`` is the largest label of the whole dataset) and pair precision (its
    top K% pools the pairs of every query) keep each row's score and label (16 bytes a
    row): ERR is computed a block at a time once ``y_max`` is known, pair precision
    over all the rows.  The distinct labels are kept for
    :func:`threshold_separates_nothing`.

    Errors are the metrics' own, for the block (rows and queries numbered in it);
    ``ltrboost eval`` reads the whole file again to name the first one as before.
    """

    def __init__(self, names: list[str], options: dict[str, Any]) -> None:
        from ltrboost.metrics import get_metric

        self.metrics = [get_metric(name, **options) for name in names]
        self._err = [m.family == "err" and m.max_grade is None for m in self.metrics]
        self._pooled = [m.family == "pair_precision" for m in self.metrics]
        self._keep_rows = any(self._err) or any(self._pooled)
        self._values: list[list[np.ndarray]] = [[] for _ in self.metrics]
        self._rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.grades = np.empty(0, dtype=np.float64)
        self.n_queries = 0

    def add(self, scores: np.ndarray, y: np.ndarray, query_offsets: np.ndarray) -> None:
        """One block of whole queries: ``scores`` and ``y`` of its rows, float64,
        ``query_offsets`` (from 0) of its queries."""
        values = [
            None if err or pooled else m.per_query(scores, y, query_offsets)
            for m, err, pooled in zip(self.metrics, self._err, self._pooled, strict=True)
        ]
        for kept, v in zip(self._values, values, strict=True):
            if v is not None:
                kept.append(v)
        if self._keep_rows:
            rows = (np.array(scores, dtype=np.float64), np.array(y, dtype=np.float64))
            self._rows.append((*rows, np.asarray(query_offsets, dtype=np.int64)))
        self.grades = np.union1d(self.grades, y)
        self.n_queries += query_offsets.shape[0] - 1

    def values(self) -> dict[str, float]:
        """Metric name -> value over every block added, as ``evaluate`` gives it."""
        from ltrboost.metrics.registry import mean_over_queries

        out = {}
        for k, m in enumerate(self.metrics):
            if self._err[k]:  # evaluate's y_max: the largest label of all the blocks
                top = replace(m, max_grade=float(self.grades[-1]))
                per = [top.per_query(*rows) for rows in self._rows]
                out[m.name] = mean_over_queries(np.concatenate(per))
            elif self._pooled[k]:
                scores, labels, offsets = self._joined_rows()
                out[m.name] = m(scores, labels, offsets)
            else:
                out[m.name] = mean_over_queries(np.concatenate(self._values[k]))
        return out

    def _joined_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The scores, labels and query offsets of all the blocks, as one dataset."""
        sizes = np.concatenate([np.diff(offsets) for _, _, offsets in self._rows])
        offsets = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        scores = np.concatenate([s for s, _, _ in self._rows])
        return scores, np.concatenate([y for _, y, _ in self._rows]), offsets

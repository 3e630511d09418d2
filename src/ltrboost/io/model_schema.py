"""The model file's schema: every field, its type and range, checked in one place.

:func:`validate_model_dict` is called by
:func:`ltrboost.io.model_json.booster_from_dict` on every model read (file, string or
dict) *before* anything is built from it, so a hand-edited or corrupt file fails with
:class:`ModelFormatError` (``FILE: problem``), never with a traceback from deeper code
or with an allocation sized by a claim.

Rules (format_version 1)
------------------------
* The top level is an object with exactly the known fields (``_TOP_LEVEL``); required
  ones must be present; an unknown field is refused (a typo must not pass silently).
* JSON booleans are never integers or numbers (``format_version: true`` is refused).
* ``objective`` is a registered objective or ``"custom:<name>"`` (trained with a Python
  callable, :mod:`ltrboost.objectives.custom`: predicts, cannot resume without it);
  ``objective_params`` names only parameters
  the objective's constructor accepts, each of a JSON type its annotation allows, and
  the objective must accept the values (its own range checks run here, not at predict
  time).
* ``update_rule`` is the objective's own rule (a lambdamart model cannot be "averaged");
  ``n_outputs`` is 1 for single-output objectives (McRank: one per grade).
* No number anywhere in the file may overflow to infinity (``1e400``).
* ``n_features`` is at most :data:`MAX_N_FEATURES` and, beyond
  :data:`FREE_N_FEATURES`, must be backed by the file: named in ``feature_names`` or
  used by a split.  A 50,000,000-feature claim in a small file is refused instead of
  allocating gigabytes at predict time.
* ``feature_names`` (null or strings) names each feature once: ``predict`` takes a
  DataFrame's columns by name, so a repeated name would feed one column to two features.
* ``params`` is a mapping of known training parameters that pass
  :meth:`BoosterParams.validate`; ``n_threads`` (a run-time setting, no longer written)
  is ignored when present.  ``eval_metric`` is null, a string of built-in metric names,
  or a non-empty list of names (built-in ones, or a callable metric's ``__name__``).
  Training writes the canonical form (``ltrboost._evaluation.recorded_eval_metric``:
  ``"ndcg@10,map"``, a list only with a callable); files of other spellings load.
  The model's objective must accept ``params``' objective parameters (``sigma``,
  ``pair_method``, ...) and the metrics their ``gain`` / ``relevance_threshold``:
  ``Ranker.from_booster`` scores and refits with them.  One exception, for files of
  older versions, which recorded parameters the objective does not take unchecked
  (``gain="exp2"`` for rankboost, ``truncation_level=-3`` for mart):
  :func:`legacy_ignored_params` names such a parameter whose value is now refused, and
  :func:`ltrboost.io.model_json.model_fields_from_dict` drops it (read as unset, as
  those versions did) with a warning naming the file, instead of refusing the model.
* ``evals_result`` is ``{set: {metric: [finite numbers, at most one per round]}}``;
  null stands for a non-finite value a custom metric returned (files of versions
  before custom metrics had to return finite numbers).
* ``position_bias`` (optional; unbiased LambdaMART only) is ``{"t_plus": [...],
  "t_minus": [...]}``, ``max_positions`` positive finite numbers each, plus
  ``"best_iteration"``, the same object after round ``best_iteration``, when early
  stopping trained past it; files without it (every older file) read as before.
* ``missing`` is ``"zero"``, ``"nan"`` or null (the data convention the model was
  trained with; null when unknown, e.g. trained from arrays).
* ``trained_with_nan`` (optional, written only as ``true``) says that the training data
  held NaN values although ``missing`` is ``"zero"`` (``nan`` tokens, ``--missing-token``):
  the model then has learned NaN directions, which exporters must not drop.
* ``training_inputs`` (optional; written by ``ltrboost train`` for ``--pairs`` and
  ``--position``, and in checkpoints for the training file) maps ``"pairs"``,
  ``"position"`` or ``"train"`` to ``{"file": <name as given>, "sha256": <64 lowercase
  hex digits>}``: what ``train --resume`` compares with the files it is given.
* Trees: exactly the known per-node columns, equal lengths, integers where integers
  belong, finite numbers, children inside the tree, every node reachable exactly once
  and at its stored ``depth``, features inside ``n_features`` (checked by
  ``model_json._tree_from_dict``), and the leaf values of all trees cannot add up to a
  non-finite score.
"""

from __future__ import annotations

import inspect
import math
import sys
from typing import Any

FORMAT_NAME = "ltrboost-model"
FORMAT_VERSION = 1

# A model may declare up to this many features without naming them or splitting on the
# highest.  (The CLI's predict and eval never allocate by the claim: a wide model's data
# is read at the data's own width.)
FREE_N_FEATURES = 1 << 24
# Feature indices are int32 in LightGBM, XGBoost and the LETOR reader.
MAX_N_FEATURES = 2**31 - 1
# McRank has one output per grade 0..31.
MAX_N_OUTPUTS = 32
MISSING_CONVENTIONS = ("zero", "nan")
# Said of another library's model file (named by its start or its JSON keys).
FOREIGN_HINT = "ltrboost reads only its own JSON model files; ltrboost export writes the others"

# field -> required?
_TOP_LEVEL = {
    "format": True,
    "format_version": True,
    "library_version": False,
    "objective": True,
    "objective_params": False,
    "n_features": True,
    "n_outputs": True,
    "feature_names": False,
    "init_score": True,
    "update_rule": True,
    "missing": False,
    "trained_with_nan": False,
    "best_iteration": False,
    "params": False,
    "evals_result": False,
    "position_bias": False,
    "training_inputs": False,
    "trees": True,
}

TREE_KEYS = frozenset(
    {
        "output",
        "value",
        "feature",
        "threshold",
        "bin_threshold",
        "missing_left",
        "left",
        "right",
        "gain",
        "count",
        "sum_hessians",
        "depth",
    }
)


class ModelFormatError(ValueError):
    """A model file that is not a valid ltrboost model."""

    def __init__(self, msg: str, path: str | None = None):
        self.path = path
        super().__init__(f"{path}: {msg}" if path else msg)


def is_int(v: Any) -> bool:
    """A JSON integer (a bool is not one)."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    """A finite JSON number (a bool is not one); an integer beyond the float range
    (``1`` and 400 zeros) is not one either (``math.isfinite`` raised OverflowError)."""
    if isinstance(v, float):
        return math.isfinite(v)
    return is_int(v) and -sys.float_info.max <= v <= sys.float_info.max


def _type_name(v: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }.get(type(v), type(v).__name__)


def _foreign_model(d: Any) -> str | None:
    """What another library's JSON model ``d`` is (LightGBM's ``dump_model``, XGBoost's
    ``save_model``, a Solr LTR model: what ``ltrboost export`` writes too), or None."""
    if not isinstance(d, dict):
        return None
    if "tree_info" in d:
        return "a LightGBM model"
    if "learner" in d:
        return "an XGBoost model"
    if str(d.get("class", "")).startswith("org.apache.solr.ltr."):
        return "a Solr LTR model"
    return None


def validate_model_dict(d: Any, path: str | None = None) -> None:
    """Raise :class:`ModelFormatError` unless ``d`` is a valid format-1 model dict."""

    def fail(msg: str):
        raise ModelFormatError(msg, path)

    if not isinstance(d, dict) or d.get("format") != FORMAT_NAME:
        foreign = _foreign_model(d)
        if foreign:
            fail(f"not an ltrboost model ({foreign}? {FOREIGN_HINT})")
        fail(f"not an ltrboost model (missing 'format': {FORMAT_NAME!r})")
    ver = d.get("format_version")
    if not is_int(ver) or ver < 1:
        fail(f"format_version {ver!r} must be a positive integer (this file's is damaged)")
    if ver != FORMAT_VERSION:
        from ltrboost._version import __version__

        fail(
            f"format_version {ver!r} is not supported by ltrboost {__version__} "
            f"(supports {FORMAT_VERSION}); upgrade ltrboost"
        )
    unknown = sorted(set(d) - set(_TOP_LEVEL))
    if unknown:
        fail(f"unknown field(s) {unknown}")
    for key, required in _TOP_LEVEL.items():
        if required and key not in d:
            fail(f"required field {key!r} is missing")

    def want(key: str, ok: bool, what: str) -> None:
        if not ok:
            fail(f"field {key!r} must be {what}, got {_type_name(d.get(key))}")

    if "library_version" in d:
        want("library_version", isinstance(d["library_version"], str), "a string")
    want("objective", isinstance(d["objective"], str), "a string")
    want("n_features", is_int(d["n_features"]), "an integer")
    want("n_outputs", is_int(d["n_outputs"]), "an integer")
    want("init_score", isinstance(d["init_score"], list), "a list")
    want("update_rule", isinstance(d["update_rule"], str), "a string")
    want("trees", isinstance(d["trees"], list), "a list")

    from ltrboost.objectives.registry import objective_class

    objective = d["objective"]
    obj_cls = objective_class(objective)  # registered, or "custom:<fn>" (a callable's)
    if obj_cls is None:
        fail(f"unknown objective {objective!r}")
    if d["update_rule"] not in ("additive", "averaged"):
        fail(f"unknown update_rule {d['update_rule']!r}")
    if d["update_rule"] != obj_cls.update_rule:
        fail(
            f"update_rule {d['update_rule']!r} does not match objective {objective!r} "
            f"(which uses {obj_cls.update_rule!r})"
        )

    n_outputs = d["n_outputs"]
    if not 1 <= n_outputs <= MAX_N_OUTPUTS:
        fail(f"n_outputs {n_outputs} is not between 1 and {MAX_N_OUTPUTS}")
    init = d["init_score"]
    if len(init) != n_outputs or not all(is_number(v) for v in init):
        fail("init_score must hold n_outputs finite numbers")
    trees = d["trees"]
    if len(trees) % n_outputs:
        fail("the number of trees is not a multiple of n_outputs")
    n_iterations = len(trees) // n_outputs

    names = d.get("feature_names")
    if names is not None and (
        not isinstance(names, list) or not all(isinstance(s, str) for s in names)
    ):
        fail("feature_names must be null or a list of strings")
    if names is not None and len(set(names)) != len(names):
        # fit refuses them: predict takes a DataFrame's columns by name
        seen: set[str] = set()
        dup = sorted({s for s in names if s in seen or seen.add(s)})
        fail(f"feature_names lists {', '.join(map(repr, dup))} more than once")
    _check_n_features(d["n_features"], names, trees, fail)

    obj_params = d.get("objective_params", {})
    if obj_params is None:
        obj_params = {}
    if not isinstance(obj_params, dict):
        fail(f"objective_params must be an object, got {_type_name(obj_params)}")
    check_objective_params(objective, obj_params, fail)
    _check_n_outputs(obj_cls, obj_params, n_outputs, fail)

    missing = d.get("missing")
    if missing is not None and missing not in MISSING_CONVENTIONS:
        fail(f"missing must be one of {MISSING_CONVENTIONS} or null, got {missing!r}")
    if "trained_with_nan" in d and not isinstance(d["trained_with_nan"], bool):
        fail(f"trained_with_nan must be true or false, got {_type_name(d['trained_with_nan'])}")

    best = d.get("best_iteration")
    if best is not None and (not is_int(best) or not 0 <= best <= n_iterations):
        fail(f"best_iteration {best!r} is out of range 0..{n_iterations}")

    params = d.get("params", {})
    if params is None:
        params = {}
    _check_params(params, objective, fail)
    if params.get("objective") not in (None, objective):
        # Ranker.from_booster (and so `ltrboost cv`-style refits) takes its objective
        # from params: the trees of one objective would pass for another
        fail(f"params: objective {params['objective']!r} is not the model's {objective!r}")
    evals = d.get("evals_result", {})
    if evals is None:
        evals = {}
    _check_evals_result(evals, n_iterations, fail)
    _check_position_bias(d.get("position_bias"), obj_params, best, n_iterations, fail)
    _check_training_inputs(d.get("training_inputs"), fail)


TRAINING_INPUTS = ("pairs", "position", "train")
_HEX = frozenset("0123456789abcdef")


def _check_training_inputs(inputs: Any, fail) -> None:
    """``training_inputs``: null, or ``{name: {"file": str, "sha256": 64 hex}}`` for
    names in :data:`TRAINING_INPUTS`."""
    if inputs is None:
        return
    if not isinstance(inputs, dict) or not set(inputs) <= set(TRAINING_INPUTS):
        fail(f"training_inputs must be an object with keys among {list(TRAINING_INPUTS)}")
    for k, v in inputs.items():
        if (
            not isinstance(v, dict)
            or set(v) != {"file", "sha256"}
            or not isinstance(v["file"], str)
            or not isinstance(v["sha256"], str)
            or len(v["sha256"]) != 64
            or not set(v["sha256"]) <= _HEX
        ):
            fail(
                f"training_inputs.{k} must be an object with exactly 'file' (a string) and "
                "'sha256' (64 lowercase hex digits)"
            )


def _check_position_bias(
    bias: Any, obj_params: dict, best: Any, n_iterations: int, fail, where: str = ""
) -> None:
    """``position_bias``: null, or the two bias lists of an ``unbiased`` objective, one
    finite positive number per tracked position each; optionally ``best_iteration``, the
    same lists after round ``best_iteration`` (only below the rounds trained)."""
    if bias is None and not where:
        return
    name = f"position_bias{where}"
    if obj_params.get("unbiased") is not True:
        fail("position_bias is only stored for objective_params unbiased=true")
    keys = {"t_plus", "t_minus"} | ({"best_iteration"} if not where else set())
    if not isinstance(bias, dict) or not {"t_plus", "t_minus"} <= set(bias) <= keys:
        fail(f"{name} must be an object with exactly 't_plus' and 't_minus'")
    k = obj_params.get("max_positions")
    for t in ("t_plus", "t_minus"):
        v = bias[t]
        if not isinstance(v, list) or not all(is_number(x) and x > 0 for x in v):
            fail(f"{name}.{t} must be a list of positive finite numbers")
        if is_int(k) and len(v) != k:
            fail(f"{name}.{t} has {len(v)} values; max_positions is {k}")
    if "best_iteration" in bias and not where:
        if best is None or best >= n_iterations:
            fail(
                "position_bias.best_iteration is stored only when best_iteration is "
                "below the rounds trained"
            )
        _check_position_bias(
            bias["best_iteration"], obj_params, best, n_iterations, fail, ".best_iteration"
        )


def _check_n_features(n_features: int, names, trees: list, fail) -> None:
    # 0: the constant model of data without feature columns (every node a leaf; a
    # split's feature is refused as outside 0..-1 by the tree checks)
    if not 0 <= n_features <= MAX_N_FEATURES:
        fail(f"n_features {n_features} is not between 0 and {MAX_N_FEATURES}")
    if names is not None and len(names) != n_features:
        fail(f"feature_names lists {len(names)} names but n_features is {n_features}")
    if n_features <= FREE_N_FEATURES or names is not None:
        return
    used = -1
    for t in trees:
        feats = t.get("feature") if isinstance(t, dict) else None
        if isinstance(feats, list):
            for f in feats:
                if is_int(f) and f > used:
                    used = f
    if n_features > used + 1:
        fail(
            f"n_features {n_features} is more than {FREE_N_FEATURES} and more than the "
            f"trees use (highest feature {used}) without feature_names; the claim "
            "would cost a dense column per feature at prediction time"
        )


def _check_n_outputs(obj_cls, obj_params: dict, n_outputs: int, fail) -> None:
    """Single-output objectives have one output; McRank one per grade 0..max_label."""
    from ltrboost.objectives.base import Objective

    if obj_cls.n_outputs is Objective.n_outputs and n_outputs != 1:
        fail(f"objective {obj_cls.name!r} has one output, not n_outputs {n_outputs}")
    if obj_cls.n_outputs is not Objective.n_outputs and n_outputs < 2:
        # grades 0..K with K >= 1: one output loaded, then predict failed on its shape
        fail(f"objective {obj_cls.name!r} has one output per grade 0..K (K >= 1), not 1")
    max_label = obj_params.get("max_label")
    if is_int(max_label) and n_outputs != max_label + 1:
        fail(f"n_outputs {n_outputs} does not match max_label {max_label} (grades 0..K)")


def _accepted_types(annotation: Any) -> set[type] | None:
    """JSON types a constructor annotation allows (None: anything)."""
    if annotation is inspect.Parameter.empty:
        return None
    text = annotation if isinstance(annotation, str) else str(annotation)
    tokens = {t.strip().split("[")[0] for t in text.split("|")}
    allowed: set[type] = set()
    if "Any" in tokens:
        return None
    if "None" in tokens:
        allowed.add(type(None))
    if "bool" in tokens:
        allowed.add(bool)
    if "int" in tokens:
        allowed.add(int)
    if "float" in tokens:
        allowed |= {int, float}
    if "str" in tokens:
        allowed.add(str)
    if tokens & {"Sequence", "list", "tuple"}:
        allowed.add(list)
    if tokens & {"Mapping", "dict"}:
        allowed.add(dict)
    return allowed


def check_objective_params(objective: str, params: dict, fail) -> None:
    """Names, JSON types and ranges of an objective's stored parameters.

    The names and types come from the objective's constructor signature, the ranges
    from the constructor itself (it is called here, on plain JSON values only).
    """
    from ltrboost.objectives.registry import objective_class

    cls = objective_class(objective)
    sig = inspect.signature(cls.__init__)
    accepted = {
        name: p
        for name, p in sig.parameters.items()
        if name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    for name, value in params.items():
        if name not in accepted:
            if var_kw:
                continue
            fail(
                f"objective_params: {name!r} is not a parameter of objective "
                f"{objective!r} (accepted: {sorted(accepted)})"
            )
        types = _accepted_types(accepted[name].annotation)
        if types is not None and type(value) not in types:
            wanted = sorted("null" if t is type(None) else _type_name(t()) for t in types)
            fail(f"objective_params: {name} must be {' or '.join(wanted)}, got {_type_name(value)}")
    try:
        cls(**params)
    except (ValueError, TypeError, OverflowError) as e:
        fail(f"objective_params: {e}")


def _check_params(params: Any, objective: str, fail) -> None:
    from dataclasses import fields

    from ltrboost.params import BoosterParams

    if not isinstance(params, dict):
        fail(f"params must be an object, got {_type_name(params)}")
    known = {f.name for f in fields(BoosterParams)}
    unknown = sorted(set(params) - known)
    if unknown:
        fail(f"params: unknown training parameter(s) {unknown}")
    for name, value in params.items():
        if not _plain_value(value):
            fail(f"params: {name} has an unsupported value {value!r}"[:200])
    if "eval_metric" in params:
        _check_eval_metric(params["eval_metric"], fail)
    # A run-time setting: not part of the model (older files stored it).
    kept = {k: v for k, v in params.items() if k != "n_threads"}
    try:
        bp = BoosterParams(**kept)
        bp.validate()
    except (ValueError, TypeError, OverflowError) as e:
        fail(f"params: {e}")
    _check_params_build(bp, objective, fail)


def _plain_value(value: Any) -> bool:
    """A parameter value as training writes one: null, a boolean, a string, a finite
    number, a list of them or a mapping to numbers (``label_scale``)."""
    if isinstance(value, list):
        return all(isinstance(v, str | int | float) for v in value)
    if isinstance(value, dict):  # label_scale may be a mapping
        return all(is_number(v) for v in value.values())
    return value is None or isinstance(value, bool | str) or is_number(value)


def legacy_ignored_params(params: Any, objective: Any) -> dict[str, Any]:
    """``params``' objective parameters that the model's ``objective`` does not take
    and whose value :func:`_check_params` refuses on its own (``{name: value}``).

    Versions before the checks of this module accepted any value of a parameter the
    objective ignores (it was ignored, and evaluation did not read ``gain`` or
    ``relevance_threshold`` then), so their files may hold one; a value the objective
    does take is never listed (it stays an error).  Anything this cannot judge (not a
    mapping, an unknown or custom objective) gives ``{}``: the checks name it."""
    from ltrboost.objectives.custom import is_custom
    from ltrboost.objectives.registry import objective_class
    from ltrboost.params import OBJECTIVE_PARAM_NAMES

    if not isinstance(params, dict) or not isinstance(objective, str) or is_custom(objective):
        return {}
    cls = objective_class(objective)
    if cls is None:
        return {}
    sig = inspect.signature(cls.__init__)
    if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        return {}

    def fail(msg: str):
        raise ModelFormatError(msg)

    out = {}
    for name in OBJECTIVE_PARAM_NAMES:
        value = params.get(name)
        if value is None or name in sig.parameters or not _plain_value(value):
            continue  # (a damaged value, such as 1e400, was never written: refused)
        try:
            _check_params({"objective": objective, name: value}, objective, fail)
        except ModelFormatError:
            out[name] = value
    return out


def _check_params_build(bp: Any, objective: str, fail) -> None:
    """The objective (the model's) and the evaluation options of ``params`` must be
    accepted: ``Ranker.from_booster`` refits and scores with them, and ``gain="foo"``
    or ``sigma=-1`` failed only there, naming no file."""
    from dataclasses import replace

    from ltrboost._evaluation import metric_options
    from ltrboost.metrics import get_metric
    from ltrboost.objectives.custom import is_custom

    # No warnings.catch_warnings() here (building an objective or a metric warns
    # nothing): its filters are the process's, and two loads in two threads left
    # "ignore" installed for good (and dropped other threads' warnings meanwhile).
    try:
        if not is_custom(objective):
            from ltrboost.booster import make_objective

            make_objective(replace(bp, objective=objective))
        get_metric("ndcg@10", **metric_options(bp))
    except (ValueError, TypeError, OverflowError) as e:
        fail(f"params: {e}"[:300])


def _check_eval_metric(value: Any, fail) -> None:
    """``params.eval_metric`` as training writes it: null; a string of built-in metric
    names (``"ndcg@10,err"``, given as a string); or a non-empty list of non-empty
    strings, each a built-in metric name or a callable metric's ``__name__`` (which
    cannot be told from a misspelt name: ``Ranker.from_booster`` leaves such names out).
    Anything else loaded and failed later (``score``), or crashed ``from_booster``."""
    from ltrboost.metrics import parse_metric_list

    if value is None:
        return
    if isinstance(value, str):
        names = [s.strip() for s in value.split(",") if s.strip()]  # as training reads it
        if not names:
            fail(f"params: eval_metric {value!r} names no metric")
        for name in names:
            try:
                parse_metric_list([name])
            except ValueError as e:
                fail(f"params: eval_metric {name!r} is not a metric ({e})"[:300])
        return
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and v.strip() for v in value)
    ):
        fail(
            "params: eval_metric must be null, a string of metric names or a list of "
            f"non-empty metric names, got {value!r}"[:300]
        )


def _check_evals_result(evals: Any, n_iterations: int, fail) -> None:
    if not isinstance(evals, dict):
        fail(f"evals_result must be an object, got {_type_name(evals)}")
    for name, per_metric in evals.items():
        if not isinstance(per_metric, dict):
            fail(f"evals_result[{name!r}] must be an object of metric lists")
        for metric, values in per_metric.items():
            if not isinstance(values, list) or not all(v is None or is_number(v) for v in values):
                fail(f"evals_result[{name!r}][{metric!r}] must be a list of numbers")
            if len(values) > n_iterations:
                fail(
                    f"evals_result[{name!r}][{metric!r}] has {len(values)} values for "
                    f"{n_iterations} rounds"
                )

"""Model files: versioned JSON, written atomically, validated on load.  Never pickle.

Layout (``format_version`` 1)::

    {
      "format": "ltrboost-model",
      "format_version": 1,
      "library_version": "0.1.0",
      "objective": "lambdamart",
      "objective_params": {...},
      "n_features": 46, "n_outputs": 1, "feature_names": [...] | null,
      "init_score": [0.0],
      "update_rule": "additive" | "averaged",
      "best_iteration": 57 | null,
      "params": {...training parameters...},
      "evals_result": {"valid": {"ndcg@10": [...]}},
      "trees": [ {"output": 0, "value": [...], "feature": [...], "threshold": [...],
                  "missing_left": [...], "left": [...], "right": [...],
                  "bin_threshold": [...], "gain": [...], "count": [...],
                  "sum_hessians": [...], "depth": [...] }, ... ]
    }

Floats are written with Python's shortest round-trip repr, so a loaded model predicts
bit-identically.  Leaves have ``feature = -1`` and ``left = right = -1``.  Non-finite
numbers are refused on write and on load (a NaN leaf would silently poison scores).
Loading checks every structural invariant (children inside the tree, every node reachable
exactly once, no cycles, features inside ``n_features``) and raises
:class:`ModelFormatError` naming the file and the problem; it never executes anything.

This module reads and writes plain dicts and imports no model class: a model is given
as its *fields* (a mapping with the keyword arguments of ``ltrboost.model.Booster``:
``objective``, ``trees`` as ``NODE_DTYPE`` arrays, ...), and the model layer
(:mod:`ltrboost.model`) converts a ``Booster`` to and from them.

* :func:`tree_to_dict` / :func:`tree_from_dict`: one tree <-> its JSON object, each
  usable on its own (e.g. by a checkpoint writer);
* :func:`model_to_dict` / :func:`model_fields_from_dict`: fields <-> the JSON document
  (validated on the way in);
* :func:`write_model` / :func:`read_model_fields` / :func:`model_fields_from_json`:
  fields <-> the file or its text.

The names used before that split (``save_model``, ``booster_to_dict`` taking a
``Booster``; ``load_model``, ``model_from_json``, ``booster_from_dict`` returning one)
still work from here: the writers accept any object with ``model_fields()``, the
readers forward to :mod:`ltrboost.model`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ltrboost._config import NODE_DTYPE
from ltrboost._version import __version__
from ltrboost.io._atomic import atomic_write_text

FORMAT_NAME = "ltrboost-model"
FORMAT_VERSION = 1

_TREE_FIELDS = {
    # json key: (NODE_DTYPE field, python type)
    "value": ("value", float),
    "feature": ("feature_idx", int),
    "threshold": ("num_threshold", float),
    "bin_threshold": ("bin_threshold", int),
    "missing_left": ("missing_go_to_left", int),
    "left": ("left", int),
    "right": ("right", int),
    "gain": ("gain", float),
    "count": ("count", int),
    "sum_hessians": ("sum_hessians", float),
    "depth": ("depth", int),
}


class ModelFormatError(ValueError):
    """A model file that is not a valid ltrboost model."""

    def __init__(self, msg: str, path: str | None = None):
        self.path = path
        super().__init__(f"{path}: {msg}" if path else msg)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def tree_to_dict(nodes: np.ndarray, output: int = 0) -> dict[str, Any]:
    """One tree (``NODE_DTYPE`` array) as its JSON object; refuses non-finite leaves."""
    t: dict[str, Any] = {"output": int(output)}
    for key, (fld, typ) in _TREE_FIELDS.items():
        col = nodes[fld]
        if key == "threshold":
            # leaves carry no threshold; +inf thresholds (last bin) become null
            vals = [
                None if (leaf or not math.isfinite(v)) else float(v)
                for v, leaf in zip(col.tolist(), nodes["is_leaf"].tolist(), strict=True)
            ]
            t[key] = vals
        else:
            t[key] = [typ(v) for v in col.tolist()]
    for v in t["value"]:
        if not math.isfinite(v):
            raise ValueError("model has a non-finite leaf value; refusing to save it")
    return t


def _as_fields(model: Any) -> Mapping[str, Any]:
    """A model's fields: a mapping as it is, else ``model.model_fields()``."""
    return model if isinstance(model, Mapping) else model.model_fields()


def model_to_dict(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON document of a model given its fields (or an object with
    ``model_fields()``)."""
    f = _as_fields(fields)
    tree_dicts = [
        tree_to_dict(nodes, out)
        for nodes, out in zip(f["trees"], f["tree_outputs"], strict=True)
    ]
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "objective": f["objective"],
        "objective_params": _jsonable(f["objective_params"]),
        "n_features": int(f["n_features"]),
        "n_outputs": int(f["n_outputs"]),
        "feature_names": f["feature_names"],
        "init_score": [float(v) for v in f["init_score"]],
        "update_rule": f["update_rule"],
        "best_iteration": f["best_iteration"],
        "params": _jsonable(f["params"]),
        "evals_result": _jsonable(f["evals_result"]),
        "trees": tree_dicts,
    }


booster_to_dict = model_to_dict  # the name used before the model layer moved out


def write_model(model, path: str | os.PathLike) -> None:
    """Write a model (its fields, or an object with ``model_fields()``) as JSON,
    atomically."""
    text = json.dumps(model_to_dict(model), allow_nan=False, separators=(",", ":"))
    atomic_write_text(path, text)


save_model = write_model  # the name used before the model layer moved out


def read_model_fields(path: str | os.PathLike) -> dict[str, Any]:
    """Read a model file; the validated fields (see :func:`model_fields_from_dict`)."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise ModelFormatError(
            "not a text file (is this an ltrboost JSON model?)", path
        ) from None
    except OSError as e:
        raise ModelFormatError(f"cannot read: {e.strerror}", path) from None
    return model_fields_from_json(text, path=path)


def _reject_constant(name: str):
    raise ValueError(f"non-finite number {name}")


def model_fields_from_json(text: str, path: str | None = None) -> dict[str, Any]:
    """Parse and validate model text; the model's fields (see
    :func:`model_fields_from_dict`)."""
    try:
        d = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError) as e:
        raise ModelFormatError(f"not valid JSON ({e})", path) from None
    except RecursionError:
        raise ModelFormatError("JSON nested too deeply", path) from None
    return model_fields_from_dict(d, path=path)


def model_fields_from_dict(d: Any, path: str | None = None) -> dict[str, Any]:
    """Validate a model document; return the model's fields as plain values.

    The keys are the keyword arguments of ``ltrboost.model.Booster``; trees are
    ``NODE_DTYPE`` arrays.  Raises :class:`ModelFormatError` on any invalid input.
    """
    from ltrboost.objectives.registry import available_objectives

    def fail(msg: str):
        raise ModelFormatError(msg, path)

    if not isinstance(d, dict) or d.get("format") != FORMAT_NAME:
        fail("not an ltrboost model (missing 'format': 'ltrboost-model')")
    ver = d.get("format_version")
    if ver != FORMAT_VERSION:
        fail(
            f"format_version {ver!r} is not supported by ltrboost {__version__} "
            f"(supports {FORMAT_VERSION}); upgrade ltrboost"
        )
    for key, typ in (
        ("objective", str),
        ("n_features", int),
        ("n_outputs", int),
        ("init_score", list),
        ("trees", list),
        ("update_rule", str),
    ):
        if not isinstance(d.get(key), typ) or isinstance(d.get(key), bool):
            fail(f"field {key!r} is missing or not a {typ.__name__}")
    if d["objective"] not in available_objectives():
        fail(f"unknown objective {d['objective']!r}")
    if d["update_rule"] not in ("additive", "averaged"):
        fail(f"unknown update_rule {d['update_rule']!r}")
    n_features = d["n_features"]
    n_outputs = d["n_outputs"]
    if n_features < 1 or n_outputs < 1:
        fail("n_features and n_outputs must be >= 1")
    init = d["init_score"]
    if len(init) != n_outputs or not all(_finite_number(v) for v in init):
        fail("init_score must hold n_outputs finite numbers")
    if len(d["trees"]) % n_outputs:
        fail("the number of trees is not a multiple of n_outputs")
    trees = []
    outputs = []
    for t_idx, t in enumerate(d["trees"]):
        nodes, out = tree_from_dict(
            t, n_features=n_features, n_outputs=n_outputs, index=t_idx, path=path
        )
        trees.append(nodes)
        outputs.append(out)
    best = d.get("best_iteration")
    if best is not None and (
        not isinstance(best, int) or not 0 <= best <= len(trees) // n_outputs
    ):
        fail(f"best_iteration {best!r} is out of range")
    obj_params = d.get("objective_params") or {}
    if not isinstance(obj_params, dict):
        fail("objective_params must be an object")
    names = d.get("feature_names")
    if names is not None and (not isinstance(names, list) or len(names) != n_features):
        fail("feature_names must list n_features names")
    return {
        "objective": d["objective"],
        "objective_params": obj_params,
        "init_score": np.asarray(init, dtype=np.float64),
        "trees": trees,
        "tree_outputs": outputs,
        "n_features": n_features,
        "update_rule": d["update_rule"],
        "best_iteration": best,
        "params": d.get("params") or {},
        "feature_names": names,
        "evals_result": d.get("evals_result") or {},
        "n_outputs": n_outputs,
    }


def _finite_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def tree_from_dict(
    t: Any,
    *,
    n_features: int,
    n_outputs: int = 1,
    index: int = 0,
    path: str | None = None,
) -> tuple[np.ndarray, int]:
    """One tree's JSON object -> ``(NODE_DTYPE array, output)``, fully validated.

    Raises :class:`ModelFormatError` naming ``path`` and tree ``index`` on any problem.
    """

    def fail(msg: str):
        raise ModelFormatError(msg, path)

    where = f"tree {index}"
    if not isinstance(t, dict):
        fail(f"{where} is not an object")
    out = t.get("output")
    if not isinstance(out, int) or not 0 <= out < n_outputs:
        fail(f"{where}: output {out!r} is out of range")
    n = None
    for key in _TREE_FIELDS:
        col = t.get(key)
        if not isinstance(col, list):
            fail(f"{where}: field {key!r} is missing or not a list")
        if n is None:
            n = len(col)
        elif len(col) != n:
            fail(f"{where}: field {key!r} has {len(col)} entries, expected {n}")
    if not n:
        fail(f"{where} has no nodes")
    nodes = np.zeros(n, dtype=NODE_DTYPE)
    feat = t["feature"]
    left = t["left"]
    right = t["right"]
    for k in range(n):
        is_leaf = left[k] == -1 and right[k] == -1
        for key, (fld, typ) in _TREE_FIELDS.items():
            v = t[key][k]
            if key == "threshold":
                if v is None:
                    v = math.inf
                elif not _finite_number(v):
                    fail(f"{where} node {k}: threshold {v!r} is not a finite number")
            elif typ is int:
                if not isinstance(v, int) or isinstance(v, bool):
                    fail(f"{where} node {k}: {key} {v!r} is not an integer")
            elif not _finite_number(v):
                fail(f"{where} node {k}: {key} {v!r} is not a finite number")
            if key == "bin_threshold" and not 0 <= v <= 255:
                fail(f"{where} node {k}: bin_threshold {v} is out of range")
            if key == "missing_left" and v not in (0, 1):
                fail(f"{where} node {k}: missing_left must be 0 or 1")
            if typ is int and key not in ("bin_threshold", "missing_left"):
                lo, hi = (-(2**62), 2**62) if key == "count" else (-(2**31), 2**31 - 1)
                if not lo <= v <= hi:
                    fail(f"{where} node {k}: {key} {v} is out of range")
            nodes[k][fld] = v
        nodes[k]["is_leaf"] = 1 if is_leaf else 0
        if is_leaf:
            if feat[k] != -1:
                fail(f"{where} node {k}: a leaf must have feature -1")
        else:
            if not 0 <= feat[k] < n_features:
                fail(
                    f"{where} node {k}: feature {feat[k]} is outside 0..{n_features - 1}"
                )
            for child in (left[k], right[k]):
                if not 0 < child < n:
                    fail(f"{where} node {k}: child {child} points outside the tree")
    # every node reachable exactly once from the root: a tree, no cycles, no sharing
    seen = np.zeros(n, dtype=bool)
    stack = [0]
    while stack:
        k = stack.pop()
        if seen[k]:
            fail(f"{where}: node {k} is reachable twice (not a tree)")
        seen[k] = True
        if not nodes[k]["is_leaf"]:
            stack.append(int(nodes[k]["left"]))
            stack.append(int(nodes[k]["right"]))
    if not seen.all():
        fail(f"{where}: node {int(np.flatnonzero(~seen)[0])} is unreachable")
    return nodes, out


# --- readers used before the model layer moved out: they return a Booster ---


_MODEL_ALIASES = ("load_model", "model_from_json", "booster_from_dict")


def __getattr__(name: str):
    # This module imports no model class; the old names resolve when first asked for.
    if name in _MODEL_ALIASES:
        import ltrboost.model

        return getattr(ltrboost.model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

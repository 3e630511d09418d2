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
"""

from __future__ import annotations

import json
import math
import os
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


def booster_to_dict(booster) -> dict[str, Any]:
    trees = []
    for nodes, out in zip(booster.trees, booster.tree_outputs, strict=True):
        t: dict[str, Any] = {"output": int(out)}
        for key, (fld, typ) in _TREE_FIELDS.items():
            col = nodes[fld]
            if key == "threshold":
                # leaves carry no threshold; +inf thresholds (last bin) become null
                vals = [
                    None if (leaf or not math.isfinite(v)) else float(v)
                    for v, leaf in zip(
                        col.tolist(), nodes["is_leaf"].tolist(), strict=True
                    )
                ]
                t[key] = vals
            else:
                t[key] = [typ(v) for v in col.tolist()]
        trees.append(t)
    for t in trees:
        for v in t["value"]:
            if not math.isfinite(v):
                raise ValueError(
                    "model has a non-finite leaf value; refusing to save it"
                )
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "objective": booster.objective,
        "objective_params": _jsonable(booster.objective_params),
        "n_features": int(booster.n_features),
        "n_outputs": int(booster.n_outputs),
        "feature_names": booster.feature_names,
        "init_score": [float(v) for v in booster.init_score],
        "update_rule": booster.update_rule,
        "best_iteration": booster.best_iteration,
        "params": _jsonable(booster.params),
        "evals_result": _jsonable(booster.evals_result),
        "trees": trees,
    }


def save_model(booster, path: str | os.PathLike) -> None:
    """Write the booster as JSON, atomically."""
    text = json.dumps(booster_to_dict(booster), allow_nan=False, separators=(",", ":"))
    atomic_write_text(path, text)


def load_model(path: str | os.PathLike):
    """Read and validate a model file written by :func:`save_model`."""
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
    return model_from_json(text, path=path)


def _reject_constant(name: str):
    raise ValueError(f"non-finite number {name}")


def model_from_json(text: str, path: str | None = None):
    try:
        d = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError) as e:
        raise ModelFormatError(f"not valid JSON ({e})", path) from None
    except RecursionError:
        raise ModelFormatError("JSON nested too deeply", path) from None
    return booster_from_dict(d, path=path)


def booster_from_dict(d: Any, path: str | None = None):
    from ltrboost.booster import Booster
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
        nodes, out = _tree_from_dict(t, t_idx, n_features, n_outputs, fail)
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
    return Booster(
        objective=d["objective"],
        objective_params=obj_params,
        init_score=np.asarray(init, dtype=np.float64),
        trees=trees,
        tree_outputs=outputs,
        n_features=n_features,
        update_rule=d["update_rule"],
        best_iteration=best,
        params=d.get("params") or {},
        feature_names=names,
        evals_result=d.get("evals_result") or {},
        n_outputs=n_outputs,
    )


def _finite_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _tree_from_dict(t, t_idx, n_features, n_outputs, fail):
    where = f"tree {t_idx}"
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

"""Looking inside a trained model: importances, trees as a table, text dump, summary.

All functions take a :class:`~ltrboost.booster.Booster`; ``Booster`` exposes them as
methods (``feature_importance``, ``trees_to_dataframe``, ``dump_text``) and
:class:`~ltrboost.Ranker` as ``feature_importances_``.  ``ltrboost inspect MODEL``
prints :func:`model_summary`.

Importance types (LightGBM's names):

* ``"split"``: how many internal nodes split on the feature;
* ``"gain"``: the total gain of those splits (the split criterion's loss reduction,
  as stored in each node's ``gain`` field).  The default here, as in earlier
  releases' ``feature_importances_``; LightGBM's default is ``"split"``.

Only the first ``iteration`` rounds count when ``iteration`` is given; by default the
trees ``predict`` uses: the ``best_iteration`` when early stopping set one, else all
(as LightGBM's ``Booster.feature_importance``).  ``dump_text`` dumps every tree unless
given ``iteration``.

A feature name that would not show as written on one line of text (empty, with a
newline, a tab or a blank at either end) is written quoted, as Python's ``repr``, in
the dump and ``ltrboost inspect``'s table; the DataFrame and the JSON keep it as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import NODE_DTYPE

IMPORTANCE_TYPES = ("split", "gain")


def _trees(booster: Any, iteration: int | None) -> list[NDArray]:
    if iteration is None:
        return list(booster.trees)
    from ltrboost.model import as_iteration_count

    n = as_iteration_count(iteration, booster.n_iterations)
    if not 0 <= n <= booster.n_iterations:
        raise ValueError(f"iteration={iteration} must be between 0 and {booster.n_iterations}")
    return list(booster.trees[: n * booster.n_outputs])


def feature_importance(
    booster: Any, importance_type: str = "gain", iteration: int | None = None
) -> NDArray[np.float64]:
    """Total importance of every feature, ndarray of shape (n_features,), float64.

    Parameters
    ----------
    booster : Booster
    importance_type : {"gain", "split"}, default="gain"
        Number of splits on the feature, or the summed gain of those splits.
    iteration : int, optional
        Count only the trees of the first ``iteration`` rounds.  Default: the model's
        ``best_iteration`` when early stopping set one (the trees ``predict`` uses, as
        LightGBM's ``feature_importance``), else every round.
    """
    if importance_type not in IMPORTANCE_TYPES:
        raise ValueError(f"importance_type={importance_type!r} is not one of {IMPORTANCE_TYPES}")
    if iteration is None:
        iteration = getattr(booster, "best_iteration", None)
    imp = np.zeros(booster.n_features, dtype=np.float64)
    for nodes in _trees(booster, iteration):
        inner = nodes[nodes["is_leaf"] == 0]
        weights = 1.0 if importance_type == "split" else inner["gain"]
        np.add.at(imp, inner["feature_idx"], weights)
    return imp


def shown_name(name: str) -> str:
    """``name`` as written in a line of text: quoted (``repr``) when it would not show
    as written (empty, a newline or a tab, a blank at either end)."""
    if name and name.isprintable() and name == name.strip():
        return name
    return repr(name)


def feature_names(booster: Any) -> list[str]:
    """The stored feature names, else ``f0, f1, ...`` (0-based column numbers)."""
    if booster.feature_names is not None:
        return [str(n) for n in booster.feature_names]
    return [f"f{k}" for k in range(booster.n_features)]


def trees_to_dataframe(booster: Any):
    """Every node of every tree as one row of a pandas DataFrame.

    Columns: ``tree`` (0-based tree index), ``iteration`` (0-based round),
    ``output`` (score column the tree adds to; 0 except for McRank), ``node`` (index in
    the tree, root 0), ``depth`` (root 0), ``is_leaf``, ``feature`` (name, pandas'
    ``str`` dtype, missing (NaN) for leaves), ``feature_idx`` (-1 for leaves),
    ``threshold`` (go left when ``x <= threshold``; NaN for leaves),
    ``missing_go_to_left``, ``left`` / ``right`` (child node indices, -1 for leaves),
    ``value`` (leaf value after shrinkage; the node's would-be value for internal
    nodes), ``gain`` (the split criterion's gain, as ``feature_importance`` sums it;
    NaN for leaves), ``count`` (training documents reaching the node) and
    ``sum_hessians``.  The column types are the same for every model, one without
    trees (no rows) or with one-leaf trees only included: int64 for the indices,
    counts and depth, bool for the flags, float64 for the numbers.

    Against LightGBM's ``Booster.trees_to_dataframe``: ``tree`` is its
    ``tree_index``; ``node``, ``left`` and ``right`` are integers within the tree
    (LightGBM: strings such as ``"0-S1"``, ``"0-L2"``, and a ``parent_index``);
    ``depth`` counts from 0 at the root (LightGBM's ``node_depth`` from 1); ``feature``
    and ``gain`` are its ``split_feature`` and ``split_gain``; ``sum_hessians`` its
    ``weight``; ``missing_go_to_left`` replaces ``decision_type`` (always ``<=``),
    ``missing_direction`` and ``missing_type``; ``iteration`` and ``output`` (McRank's
    trees per round) have no LightGBM column.

    A document's raw score is ``init_score[output]`` plus the values of the leaves it
    reaches in the trees of the rounds ``predict`` uses (``iteration < best_iteration``
    when early stopping set one, else every row); for ``gbrank`` (``update_rule ==
    "averaged"``) that sum is divided by the number of those rounds + 1.

    Needs pandas (the ``pandas`` extra: ``pip install 'ltrboost[pandas]'``).
    """
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError(
            f"trees_to_dataframe needs pandas: pip install 'ltrboost[pandas]' ({e})",
            name=e.name,
        ) from None

    names = feature_names(booster)
    n_out = max(booster.n_outputs, 1)
    trees = list(booster.trees)
    sizes = [int(t.shape[0]) for t in trees]
    nodes = np.concatenate(trees) if trees else np.empty(0, dtype=NODE_DTYPE)
    tree = np.repeat(np.arange(len(trees), dtype=np.int64), sizes)
    leaf = nodes["is_leaf"].astype(bool)
    fidx = np.where(leaf, -1, nodes["feature_idx"]).astype(np.int64)
    outputs = np.asarray(booster.tree_outputs[: len(trees)], dtype=np.int64)
    # one dtype per column whatever the trees: pandas gave ``feature`` its ``str``
    # dtype (leaves NaN) when a tree split, ``object`` (leaves None) when every tree was
    # one leaf, and a model without trees ``object`` columns throughout
    columns = {
        "tree": tree,
        "iteration": tree // n_out,
        "output": np.repeat(outputs, sizes),
        "node": np.concatenate([np.arange(n, dtype=np.int64) for n in sizes])
        if trees
        else np.empty(0, dtype=np.int64),
        "depth": nodes["depth"].astype(np.int64),
        "is_leaf": leaf,
        "feature": pd.array([None if f < 0 else names[f] for f in fidx], dtype="str"),
        "feature_idx": fidx,
        "threshold": np.where(leaf, np.nan, nodes["num_threshold"]).astype(np.float64),
        "missing_go_to_left": nodes["missing_go_to_left"].astype(bool),
        "left": np.where(leaf, -1, nodes["left"]).astype(np.int64),
        "right": np.where(leaf, -1, nodes["right"]).astype(np.int64),
        "value": nodes["value"].astype(np.float64),
        "gain": np.where(leaf, np.nan, nodes["gain"]).astype(np.float64),
        "count": nodes["count"].astype(np.int64),
        "sum_hessians": nodes["sum_hessians"].astype(np.float64),
    }
    return pd.DataFrame(columns)


def dump_text(booster: Any, iteration: int | None = None, precision: int = 6) -> str:
    """The trees as indented text, one node per line (like XGBoost's text dump)::

    tree 0 (output 0)
    0:[f3<=0.5] yes=1 no=2 missing=yes gain=12.3 count=400
      1:leaf=0.0123 count=250
      2:leaf=-0.0456 count=150
    """
    if isinstance(precision, bool) or not isinstance(precision, int | np.integer) or precision < 0:
        # failed at format time ("Format specifier missing precision"), naming nothing
        raise ValueError(f"precision={precision!r} must be an integer >= 0 (significant digits)")
    names = [shown_name(n) for n in feature_names(booster)]
    lines: list[str] = []
    for t, nodes in enumerate(_trees(booster, iteration)):
        lines.append(f"tree {t} (output {int(booster.tree_outputs[t])})")
        stack = [(0, 0)]
        while stack:
            k, indent = stack.pop()
            node = nodes[k]
            pad = "  " * indent
            if node["is_leaf"]:
                lines.append(
                    f"{pad}{k}:leaf={float(node['value']):.{precision}g} count={int(node['count'])}"
                )
                continue
            left, right = int(node["left"]), int(node["right"])
            missing = "yes" if node["missing_go_to_left"] else "no"
            lines.append(
                f"{pad}{k}:[{names[int(node['feature_idx'])]}<="
                f"{float(node['num_threshold']):.{precision}g}] yes={left} no={right} "
                f"missing={missing} gain={float(node['gain']):.{precision}g} "
                f"count={int(node['count'])}"
            )
            stack.append((right, indent + 1))
            stack.append((left, indent + 1))
    return "\n".join(lines) + ("\n" if lines else "")


def model_summary(
    booster: Any, top: int = 10, importance_type: str = "gain", iteration: int | None = None
) -> dict[str, Any]:
    """What ``ltrboost inspect`` prints, as a JSON-ready dict.

    ``top``: how many features ``top_features`` lists at most (an integer >= 0).
    ``iteration``: the rounds the importances (and ``n_features_used``) count, as in
    :func:`feature_importance` (default: those ``predict`` uses), recorded as
    ``importance_iterations``; the tree counts cover every round.
    """
    if importance_type not in IMPORTANCE_TYPES:  # any other name ranked by split, silently
        raise ValueError(f"importance_type={importance_type!r} is not one of {IMPORTANCE_TYPES}")
    if isinstance(top, bool) or not isinstance(top, int | np.integer) or top < 0:
        # int() listed 2 features for 2.5 and 1 for True; a negative listed none
        raise ValueError(f"top={top!r} must be an integer >= 0 (features listed)")
    if iteration is None:
        iteration = booster.best_iteration
    counted = len(_trees(booster, iteration)) // max(booster.n_outputs, 1)
    split = feature_importance(booster, "split", counted)
    gain = feature_importance(booster, "gain", counted)
    names = feature_names(booster)
    key = gain if importance_type == "gain" else split
    order = np.argsort(-key, kind="stable")[: int(top)]
    total_gain = float(gain.sum())
    leaves = [int(t["is_leaf"].sum()) for t in booster.trees]
    depths = [int(t["depth"].max()) if t.shape[0] else 0 for t in booster.trees]
    return {
        "objective": booster.objective,
        "objective_params": dict(booster.objective_params),
        "n_iterations": int(booster.n_iterations),
        "n_trees": len(booster.trees),
        "n_outputs": int(booster.n_outputs),
        "best_iteration": booster.best_iteration,
        "n_features": int(booster.n_features),
        "n_features_used": int(np.count_nonzero(split)),
        # the rounds the importances (and n_features_used) count: by default up to the
        # best one, as predict does; the tree counts above cover every round
        "importance_iterations": int(counted),
        "leaves_per_tree": {
            "min": min(leaves, default=0),
            "mean": float(np.mean(leaves)) if leaves else 0.0,
            "max": max(leaves, default=0),
        },
        "max_depth": max(depths, default=0),
        "learning_rate": _learning_rate(booster),
        "importance_type": importance_type,
        "top_features": [
            {
                "feature": names[k],
                "feature_idx": int(k),
                "split": int(split[k]),
                "gain": float(gain[k]),
                "gain_share": float(gain[k] / total_gain) if total_gain > 0 else 0.0,
            }
            for k in order
            if key[k] > 0
        ],
    }


def _learning_rate(booster: Any) -> float | None:
    """The shrinkage the trees were grown with: the recorded ``learning_rate``, or when
    it was left to the default (recorded as None) the objective's default (0.1, 1.0
    for ``gbrank``); None for an objective this library does not know."""
    lr = booster.params.get("learning_rate")
    if lr is not None:
        return float(lr)
    from ltrboost.objectives.registry import objective_class

    cls = objective_class(booster.objective)
    return None if cls is None else float(cls.default_learning_rate)

"""Plots of a trained model: feature importances, learning curves, one tree.

Needs matplotlib, the ``plot`` extra (``pip install 'ltrboost[plot]'``); it is
imported on the first call, so ``import ltrboost.plot`` works without it.  Every
function takes a fitted :class:`~ltrboost.Ranker` or a :class:`~ltrboost.Booster`
(or a model file path), draws on ``ax`` (a new figure when ``ax`` is None) and
returns the ``matplotlib.axes.Axes``.  The trees are drawn with matplotlib alone: no
graphviz.

* :func:`plot_importance`: horizontal bars of
  :func:`ltrboost.inspection.feature_importance` (raw totals, not normalised);
* :func:`plot_metric`: validation metric per round from ``evals_result_``;
* :func:`plot_partial_dependence`: partial dependence and ICE lines of the score
  (returns scikit-learn's ``PartialDependenceDisplay``, not one Axes);
* :func:`plot_tree`: one tree as boxes, ``feature <= threshold`` for splits (yes =
  left) and the leaf values.
"""

from __future__ import annotations

import math
import numbers
import operator
import os
from typing import Any

import numpy as np

from ltrboost.inspection import feature_importance, feature_names, shown_name

__all__ = ["plot_importance", "plot_metric", "plot_partial_dependence", "plot_tree"]

# plot_tree's default figure at most (inches): at 100 dpi a 10000 x 3000 pixel raster
# (120 MB); unbounded it grew 1.6 inches a leaf and 1.4 a level
_MAX_TREE_FIGSIZE = (100.0, 30.0)


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "ltrboost.plot needs matplotlib; install the plot extra: pip install 'ltrboost[plot]'"
        ) from exc
    return plt


def _booster(model: Any) -> Any:
    """The Booster of a fitted Ranker, a Booster, or a model file path."""
    if isinstance(model, (str, os.PathLike)):
        from ltrboost.model import load_model

        return load_model(model)
    if hasattr(model, "trees") and hasattr(model, "evals_result"):
        return model
    if hasattr(model, "booster_"):  # a fitted Ranker
        return model.booster_
    if hasattr(model, "_check_fitted"):  # an unfitted Ranker
        model._check_fitted()
    raise TypeError(
        f"expected a fitted Ranker, a Booster or a model path, not {type(model).__name__}"
    )


def _plain(text: Any) -> str:
    """``text`` drawn as written: a ``$`` is escaped, so that feature, set and metric
    names are never parsed as mathtext (``$\\foo$`` raised at draw time)."""
    return str(text).replace("$", r"\$")


def _name_labels(names: list[str], max_length: Any) -> list[str]:
    """Feature names as drawn: quoted as in the text outputs when they would not show as
    written (a newline drew one name over two lines), and a name longer than
    ``max_length`` characters cut in the middle, its start and end kept around a "…"
    (a 200-character tick label ran off the figure; names alike but for their end stay
    apart); None keeps every name whole."""
    if max_length is not None:
        max_length = _integer(max_length, "max_name_length", "at least 5, or None")
        if max_length < 5:
            raise ValueError(f"max_name_length={max_length} must be at least 5 or None")
    out = []
    for name in names:
        text = shown_name(name)
        if max_length is not None and len(text) > max_length:
            head = (max_length - 1) // 2
            text = text[:head] + "\u2026" + text[len(text) - (max_length - 1 - head) :]
        out.append(_plain(text))
    return out


def _integer(value: Any, name: str, what: str) -> int:
    """``value`` as an int (NumPy's integers too); a bool, a float or a string is
    refused naming ``name`` (``int()`` drew tree 1 for ``tree_index=1.9`` and for
    ``True``, silently)."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise ValueError(f"{name}={value!r} must be an integer ({what})")


def _precision(value: Any) -> int:
    """``precision=`` as an int >= 0 (a negative one, a float or a bool failed at
    format time with "Format specifier missing precision", naming no argument)."""
    n = _integer(value, "precision", "significant digits, at least 0")
    if n < 0:
        raise ValueError(f"precision={value} must be at least 0 (significant digits)")
    return n


def _font_points(size: Any) -> float:
    """``fontsize=`` in points: a positive number or a matplotlib size name ("small";
    ``fontsize - 1`` was a TypeError for a name); anything else refused naming it."""
    from matplotlib.font_manager import FontProperties

    try:  # matplotlib takes a number below 1 as 1 pt: refused here
        points = float(FontProperties(size=size).get_size_in_points())
        ok = not isinstance(size, bool) and not (
            isinstance(size, int | float | np.number) and size <= 0
        )
    except (TypeError, ValueError):
        points, ok = math.nan, False
    if not (ok and math.isfinite(points)):
        raise ValueError(
            f"fontsize={size!r} must be a size in points (> 0) or a matplotlib size name "
            "such as 'small'"
        )
    return points


def _axes(ax: Any, figsize: tuple[float, float] | None) -> Any:
    """``ax``, or the Axes of a new figure of ``figsize`` when ``ax`` is None; anything
    but one Axes is a TypeError (the array ``plt.subplots(2)`` returns failed deep in
    the drawing: "'numpy.ndarray' object has no attribute 'barh'")."""
    if ax is not None:
        if not (hasattr(ax, "plot") and hasattr(ax, "text") and hasattr(ax, "set_title")):
            raise TypeError(
                f"ax must be one matplotlib Axes, not {type(ax).__name__} (of an array of "
                "subplots, pass one: axes[0])"
            )
        return ax
    plt = _pyplot()
    _, ax = plt.subplots(figsize=figsize)
    return ax


def plot_importance(
    model: Any,
    importance_type: str = "gain",
    max_num_features: int | None = 20,
    ax: Any = None,
    *,
    ignore_zero: bool = True,
    iteration: int | None = None,
    title: str | None = "Feature importance",
    xlabel: str | None = None,
    precision: int | None = 3,
    figsize: tuple[float, float] | None = None,
    max_name_length: int | None = 40,
    **bar_kwargs: Any,
) -> Any:
    """Horizontal bars of the features' importance, largest on top.

    Parameters
    ----------
    model : Ranker, Booster or model path
    importance_type : {"gain", "split"}, default="gain"
        Summed split gain or number of splits (:func:`ltrboost.inspection.feature_importance`).
    max_num_features : int or None, default=20
        Draw only the most important ones; None draws all.
    ax : matplotlib Axes, optional
    ignore_zero : bool, default=True
        Leave out features with importance 0 (never used in a split).
    iteration : int, optional
        Count the trees of the first ``iteration`` rounds only; default: those
        ``predict`` uses (the best iteration when early stopping set one, else all).
    title, xlabel : str or None
        ``xlabel`` defaults to ``"gain"`` / ``"split count"``.
    precision : int or None, default=3
        Significant digits of the value written next to each bar; None writes none.
    figsize : (float, float), optional
        For the new figure when ``ax`` is None.
    max_name_length : int or None, default=40
        A longer feature name is drawn cut in the middle (its start, "…", its end);
        None draws whole names.  A name that would not show as written (a newline, a
        tab, blanks at an end, empty) is drawn quoted, as in ``dump_text``.
    **bar_kwargs
        Passed to ``ax.barh``.

    Returns
    -------
    matplotlib.axes.Axes
        Bar ``k`` from the bottom is the ``k``-th least important feature drawn; its
        width is the importance.
    """
    _pyplot()
    booster = _booster(model)
    if precision is not None:
        precision = _precision(precision)
    imp = feature_importance(booster, importance_type, iteration)
    names = _name_labels(feature_names(booster), max_name_length)
    order = np.argsort(-imp, kind="stable")
    if ignore_zero:
        order = order[imp[order] > 0]
    if max_num_features is not None:
        top = _integer(max_num_features, "max_num_features", "at least 1, or None for all")
        if top < 1:
            raise ValueError(f"max_num_features={max_num_features} must be at least 1 or None")
        order = order[:top]
    order = order[::-1]  # barh draws bottom-up: the largest ends on top
    ax = _axes(ax, figsize)
    pos = np.arange(len(order))
    bar_kwargs.setdefault("height", 0.6)
    ax.barh(pos, imp[order], align="center", **bar_kwargs)
    ax.set_yticks(pos, [names[k] for k in order])
    if precision is not None:
        for y, k in zip(pos, order, strict=True):
            big = importance_type == "split" or imp[k] >= 10**precision
            value = f"{imp[k]:.0f}" if big else f"{imp[k]:.{precision}g}"
            ax.text(imp[k], y, " " + value, va="center")
    if len(order) and imp[order].max() > 0:  # all 0 (ignore_zero=False): the default
        ax.set_xlim(0, float(imp[order].max()) * 1.15)  # limits; (0, 0) warns
    ax.set_ylim(-1, len(order))
    if title is not None:
        ax.set_title(title)
    ax.set_xlabel(
        xlabel
        if xlabel is not None
        else {"gain": "gain", "split": "split count"}.get(importance_type, importance_type)
    )
    ax.set_ylabel("feature")
    ax.grid(axis="x", alpha=0.3)
    return ax


def plot_metric(
    model_or_evals_result: Any,
    metric: Any = None,
    ax: Any = None,
    *,
    dataset_names: list[str] | None = None,
    title: str | None = "Metric during training",
    show_best: bool = True,
    figsize: tuple[float, float] | None = None,
) -> Any:
    """Learning curves: one metric per boosting round on each validation set.

    Parameters
    ----------
    model_or_evals_result : Ranker, Booster, model path or dict
        A dict is ``{set name: {metric name: [value per round]}}`` (the shape of
        ``Ranker.evals_result_`` and ``Booster.evals_result``).
    metric : str or callable, optional
        Which metric (a callable given to ``eval_metric``: by its ``__name__``); default
        the first one recorded.
    ax : matplotlib Axes, optional
    dataset_names : list of str, optional
        Which validation sets; default all.
    title : str or None
    show_best : bool, default=True
        Draw a dotted vertical line at the model's ``best_iteration`` (early stopping),
        when there is one.
    figsize : (float, float), optional

    Returns
    -------
    matplotlib.axes.Axes
        One line per set, labelled with its name; x is the round (1-based, counting
        an ``init_model``'s rounds, as ``best_iteration`` does), y the value.
    """
    _pyplot()
    best = None
    total = None  # rounds of the model: after a warm start the record covers the last ones
    if isinstance(model_or_evals_result, dict):
        evals = model_or_evals_result
    else:
        booster = _booster(model_or_evals_result)
        evals = booster.evals_result or {}
        best = booster.best_iteration
        total = booster.n_iterations
    if not evals:
        raise ValueError(
            "no evaluation results: fit with eval_set=[...] (or train with valid_sets) to "
            "record a metric per round"
        )
    if isinstance(dataset_names, str):  # list("valid") named five sets "v", "a", ...
        raise ValueError(f"dataset_names={dataset_names!r} must be a list of set names")
    names = list(evals) if dataset_names is None else list(dataset_names)
    if not names:
        raise ValueError("dataset_names is empty: name at least one validation set")
    for name in names:
        if name not in evals:
            raise ValueError(f"no validation set named {name!r}; recorded: {list(evals)}")
        if not isinstance(evals[name], dict):
            raise ValueError(
                f"evals_result[{name!r}] is a {type(evals[name]).__name__}; an evals_result "
                "is {set name: {metric name: [value per round]}}"
            )
    if callable(metric):  # the callable given to eval_metric: recorded by its __name__
        from ltrboost._evaluation import callable_name

        metric = callable_name(metric)
    if metric is None:
        if not evals[names[0]]:
            raise ValueError(f"no metric recorded on {names[0]!r}")
        metric = next(iter(evals[names[0]]))
    elif metric not in evals[names[0]]:  # "NDCG@05" as given to eval_metric: "ndcg@5"
        metric = _recorded_name(metric)
    ax = _axes(ax, figsize)
    handles = []
    for name in names:
        if metric not in evals[name]:
            raise ValueError(
                f"metric {metric!r} was not recorded on {name!r}; recorded: {list(evals[name])}"
            )
        values = np.asarray(evals[name][metric], dtype=np.float64)
        first = 1 if total is None else max(1, total - len(values) + 1)
        handles += ax.plot(np.arange(first, first + len(values)), values, label=name)
    if show_best and best is not None:
        handles.append(
            ax.axvline(int(best), linestyle=":", color="gray", label=f"best iteration ({best})")
        )
    if title is not None:
        ax.set_title(title)
    ax.set_xlabel("iteration")
    ax.set_ylabel(_plain(metric))
    # the handles given explicitly: legend() alone hides a set named "_valid"; lines
    # already on a given ``ax`` (an earlier call's) stay in the legend, before ours
    earlier = [h for h in ax.get_legend_handles_labels()[0] if h not in handles]
    handles = earlier + handles
    ax.legend(handles, [_plain(h.get_label()) for h in handles], loc="best")
    ax.grid(alpha=0.3)
    return ax


def _recorded_name(metric: Any) -> Any:
    """A metric name as training records it (``"NDCG@05"`` -> ``"ndcg@5"``); a name
    that is no built-in metric (a custom metric's) as it is."""
    from ltrboost.metrics import parse_metric_list

    try:
        (name,) = parse_metric_list([metric])
    except (ValueError, TypeError):
        return metric
    return name


def plot_tree(
    model: Any,
    tree_index: int = 0,
    ax: Any = None,
    *,
    precision: int = 4,
    show_info: tuple[str, ...] = (),
    figsize: tuple[float, float] | None = None,
    fontsize: float | None = None,
    max_name_length: int | None = 40,
    max_nodes: int | None = 4095,
) -> Any:
    """Draw one tree with matplotlib: split boxes, leaf boxes, yes/no edges.

    A split box reads ``feature <= threshold`` (the feature's name when the model
    stores names, else ``f<k>``); its left child ("yes") holds the documents with
    ``x <= threshold``; ``missing`` marks the side absent values take.  A leaf box
    reads ``leaf: value`` (after shrinkage).  Leaves are spread evenly left to right,
    each split sits above the middle of its children, depth goes down.

    Parameters
    ----------
    model : Ranker, Booster or model path
    tree_index : int, default=0
        0-based index into the model's trees (negative counts from the end).
    ax : matplotlib Axes, optional
    precision : int, default=4
        Significant digits of thresholds and values.
    show_info : tuple of {"gain", "count"}, default=()
        Extra lines in each box.
    figsize : (float, float), optional
        Default grows with the number of leaves and the depth (1.6 inches a leaf, 1.4
        a level), up to 100 x 30 inches: a larger tree is drawn crowded unless given a
        figsize (unbounded, a 700-leaf tree made a 112000-pixel-wide PNG of 2 GB).
    fontsize : float or str, optional
        Points, or a matplotlib size name such as ``"small"``.
    max_name_length : int or None, default=40
        As in :func:`plot_importance`: longer names are cut in the middle, names that
        would not show as written are quoted; None draws whole names.
    max_nodes : int or None, default=4095
        A tree of more nodes (a tree of ``max_leaf_nodes`` leaves has ``2 *
        max_leaf_nodes - 1``) is refused with a ValueError before anything is drawn:
        matplotlib takes about 4 ms a box (a chain of 20,001 nodes took 84 s) and
        draws nothing readable at that size.  None draws any tree; ``dump_text`` and
        ``trees_to_dataframe`` show a large tree as text or a table.

    Returns
    -------
    matplotlib.axes.Axes
    """
    if max_nodes is not None:
        max_nodes = _integer(max_nodes, "max_nodes", "at least 1, or None for no limit")
        if max_nodes < 1:
            raise ValueError(f"max_nodes={max_nodes} must be at least 1, or None for no limit")
    _pyplot()
    booster = _booster(model)
    n_trees = len(booster.trees)
    tree_index = _integer(tree_index, "tree_index", "0-based, negative from the end")
    if not -n_trees <= tree_index < n_trees:
        raise IndexError(f"tree_index={tree_index} is out of range for {n_trees} trees")
    precision = _precision(precision)
    if isinstance(show_info, str):  # "gain" was read as its letters: "not 'g'"
        raise ValueError(
            f"show_info={show_info!r} must be a tuple of 'gain' and/or 'count', e.g. "
            f"({show_info!r},)"
        )
    for info in show_info:
        if info not in ("gain", "count"):
            raise ValueError(f"show_info entries must be 'gain' or 'count', not {info!r}")
    tree_index %= n_trees  # the tree drawn, named in the title
    nodes = booster.trees[tree_index]
    if max_nodes is not None and nodes.shape[0] > max_nodes:
        raise ValueError(
            f"tree {tree_index} has {nodes.shape[0]} nodes, more than max_nodes={max_nodes} "
            "draws in reasonable time (about 4 ms a box) or readably; pass "
            "max_nodes=None (or a larger number) to draw it anyway, or read it with "
            "Booster.dump_text() or trees_to_dataframe()"
        )
    names = _name_labels(feature_names(booster), max_name_length)

    # x: leaves at 0, 1, 2, ... in left-to-right order; a split at its children's middle.
    x = np.zeros(nodes.shape[0])
    drawn: list[int] = []  # the nodes under the root, in drawing order
    next_leaf = 0

    # depth-first, left first, with a stack (a recursion would stop at Python's limit
    # on a chain of ~1000 splits); a split is placed once both children are
    stack = [(0, False)]
    while stack:
        k, children_placed = stack.pop()
        if children_placed:
            x[k] = 0.5 * (x[int(nodes[k]["left"])] + x[int(nodes[k]["right"])])
            continue
        drawn.append(k)
        if nodes[k]["is_leaf"]:
            x[k] = next_leaf
            next_leaf += 1
        else:
            stack += [(k, True), (int(nodes[k]["right"]), False), (int(nodes[k]["left"]), False)]
    n_leaves = max(next_leaf, 1)
    max_depth = int(nodes["depth"].max()) if nodes.shape[0] else 0
    if ax is None and figsize is None:
        figsize = (
            min(max(4.0, 1.6 * n_leaves), _MAX_TREE_FIGSIZE[0]),
            min(max(3.0, 1.4 * (max_depth + 1)), _MAX_TREE_FIGSIZE[1]),
        )
    ax = _axes(ax, figsize)
    if fontsize is None:
        fontsize = 9 if n_leaves <= 12 else 7
    else:  # points, or a matplotlib size name ("small"): the edge labels are 1 pt smaller
        fontsize = _font_points(fontsize)

    def label(k: int) -> str:
        node = nodes[k]
        if node["is_leaf"]:
            lines = [f"leaf: {float(node['value']):.{precision}g}"]
        else:
            lines = [
                f"{names[int(node['feature_idx'])]} <= {float(node['num_threshold']):.{precision}g}"
            ]
            if "gain" in show_info:
                lines.append(f"gain: {float(node['gain']):.{precision}g}")
        if "count" in show_info:
            lines.append(f"count: {int(node['count'])}")
        return "\n".join(lines)

    split_box = {"boxstyle": "round,pad=0.3", "fc": "#e8f0fb", "ec": "#3b6ea5"}
    leaf_box = {"boxstyle": "round,pad=0.3", "fc": "#eaf6e6", "ec": "#4a8a3a"}
    for k in drawn:
        node = nodes[k]
        y = -float(node["depth"])
        if not node["is_leaf"]:
            miss_left = bool(node["missing_go_to_left"])
            for child, side in ((int(node["left"]), "yes"), (int(node["right"]), "no")):
                cy = -float(nodes[child]["depth"])
                ax.plot([x[k], x[child]], [y, cy], color="#888888", lw=1, zorder=1)
                text = side + (", missing" if (side == "yes") == miss_left else "")
                ax.text(
                    0.5 * (x[k] + x[child]),
                    0.5 * (y + cy),
                    text,
                    ha="center",
                    va="center",
                    fontsize=fontsize - 1,
                    color="#555555",
                    bbox={"fc": "white", "ec": "none", "pad": 0.5},
                    zorder=2,
                )
        ax.text(
            x[k],
            y,
            label(k),
            ha="center",
            va="center",
            fontsize=fontsize,
            bbox=leaf_box if node["is_leaf"] else split_box,
            zorder=3,
        )
    ax.set_xlim(-0.7, n_leaves - 0.3)
    ax.set_ylim(-max_depth - 0.6, 0.6)
    ax.set_axis_off()
    ax.set_title(f"tree {tree_index} (output {int(booster.tree_outputs[tree_index])})")
    return ax


def plot_partial_dependence(
    model: Any,
    X: Any,
    features: Any,
    *,
    kind: str = "average",
    ax: Any = None,
    iteration: int | None = None,
    n_threads: int | None = None,
    figsize: tuple[float, float] | None = None,
    **display_kwargs: Any,
) -> Any:
    """Partial dependence (and ICE lines) of the ranking score, one panel per feature.

    :class:`sklearn.inspection.PartialDependenceDisplay` refuses a ranker; this draws
    it over the regressor view of :func:`ltrboost.inspection.partial_dependence`, whose
    docstring says what the curve means for a ranker (its level carries nothing: only
    the score's shift, as the documents of a query are ordered by score).

    Parameters
    ----------
    model : Ranker, Booster or model path
    X : array-like, DataFrame or Arrow table of shape (n_samples, n_features)
        As in :func:`ltrboost.inspection.partial_dependence` (a ``qid`` column that is
        not a feature is left out; integer columns are read as float).
    features : list of int, str or pairs of them
        One panel per entry, as scikit-learn's ``from_estimator``: ``[0, "bm25"]``
        draws two one-way panels, ``[(0, 1)]`` one two-way panel.  For an array ``X``,
        names are the model's feature names (``f<k>`` when it stores none).
    kind : {"average", "individual", "both"}, default="average"
        ``"individual"`` / ``"both"`` draw ICE lines, one per row of ``X``
        (``subsample=`` draws fewer; ``centered=True`` starts every line at 0, which
        shows the score's shift alone).
    ax : matplotlib Axes or list of Axes, optional
        One Axes is divided into a grid of panels (scikit-learn's rule); default: a
        new figure of ``figsize``.
    iteration, n_threads
        As in :func:`ltrboost.inspection.partial_dependence`.
    **display_kwargs
        Passed to :meth:`sklearn.inspection.PartialDependenceDisplay.from_estimator`
        (``grid_resolution``, ``percentiles``, ``centered``, ``subsample``,
        ``random_state``, ``n_cols``, ``line_kw``, ...).  ``method`` is always
        ``"brute"``.

    Returns
    -------
    sklearn.inspection.PartialDependenceDisplay
        Its ``axes_`` (one Axes per panel), ``lines_``, ``figure_`` and
        ``pd_results`` (the :func:`~ltrboost.inspection.partial_dependence` results).
    """
    _pyplot()
    from sklearn.inspection import PartialDependenceDisplay

    from ltrboost.inspection import _score_view, grids_without_missing

    if "method" in display_kwargs and display_kwargs["method"] != "brute":
        raise ValueError(
            f"method={display_kwargs['method']!r}: only 'brute' applies to a ranker "
            "(scikit-learn's 'recursion' reads its own tree classes)"
        )
    display_kwargs.pop("method", None)
    view, X, names = _score_view(model, X, features, iteration, n_threads)
    # a feature with missing values: its grid from the values it takes (scikit-learn's
    # percentiles of a column holding NaN are NaN, an empty panel)
    custom_values = grids_without_missing(
        X,
        [features] if isinstance(features, str | numbers.Integral) else features,
        display_kwargs.pop("custom_values", None),
        display_kwargs.get("categorical_features"),
        display_kwargs.get("grid_resolution", 100),
        display_kwargs.get("percentiles", (0.05, 0.95)),
        names,
        by_index=True,
    )
    if custom_values is not None:
        display_kwargs["custom_values"] = custom_values
    if ax is None:
        ax = _axes(None, figsize)
    return PartialDependenceDisplay.from_estimator(
        view,
        X,
        features,
        kind=kind,
        ax=ax,
        method="brute",
        feature_names=names,
        **display_kwargs,
    )

"""Looking inside a trained model: importances, trees as a table, text dump, summary,
partial dependence.

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

:func:`partial_dependence` is scikit-learn's (brute method) over a regressor view of
the model, which scikit-learn's own function refuses: a ranker is no regressor.

A feature name that would not show as written on one line of text (empty, with a
newline, a tab or a blank at either end) is written quoted, as Python's ``repr``, in
the dump and ``ltrboost inspect``'s table; the DataFrame and the JSON keep it as it is.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import NODE_DTYPE

IMPORTANCE_TYPES = ("split", "gain")

# The deepest level ``dump_text`` indents (two blanks a level): a node deeper than this is
# written at this indentation with ``depth=D`` at the end of its line.  Unbounded, a chain
# of 10,000 splits (a 1 MB model file) dumped 100 MB of blanks.
MAX_DUMP_INDENT = 32


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

    A node is indented by two blanks a level down to :data:`MAX_DUMP_INDENT` (32)
    levels; a deeper node is written at that indentation and its line ends with
    ``depth=D`` (its depth, root 0), so that the text of a tree grows with its nodes,
    not with their depth times their number.
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
            pad = "  " * min(indent, MAX_DUMP_INDENT)
            deep = f" depth={indent}" if indent > MAX_DUMP_INDENT else ""
            if node["is_leaf"]:
                lines.append(
                    f"{pad}{k}:leaf={float(node['value']):.{precision}g} "
                    f"count={int(node['count'])}{deep}"
                )
                continue
            left, right = int(node["left"]), int(node["right"])
            missing = "yes" if node["missing_go_to_left"] else "no"
            lines.append(
                f"{pad}{k}:[{names[int(node['feature_idx'])]}<="
                f"{float(node['num_threshold']):.{precision}g}] yes={left} no={right} "
                f"missing={missing} gain={float(node['gain']):.{precision}g} "
                f"count={int(node['count'])}{deep}"
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


# ------------------------------------------------------------------ partial dependence
def partial_dependence(
    model: Any,
    X: Any,
    features: Any,
    *,
    kind: str = "average",
    grid_resolution: int = 100,
    percentiles: tuple[float, float] = (0.05, 0.95),
    custom_values: dict | None = None,
    categorical_features: Any = None,
    sample_weight: Any = None,
    iteration: int | None = None,
    n_threads: int | None = None,
):
    """Partial dependence (and ICE lines) of the ranking score on ``features``.

    scikit-learn's :func:`sklearn.inspection.partial_dependence` refuses a ranker (it
    takes only regressors and classifiers); this runs its ``method="brute"`` over a
    regressor view of the model whose ``predict`` is the model's ``predict``: for each
    grid value, the feature is set to it in every row of ``X`` and the scores are
    averaged (``kind="average"``) or kept per row (``kind="individual"``, ICE lines;
    ``"both"``).

    What the curve means for a ranker: a score is comparable only within its query,
    so the level of the curve carries nothing; its *shape* does.  ``average[b] -
    average[a]`` is how much a document's score moves, on average over the rows of
    ``X``, when its feature goes from ``grid[a]`` to ``grid[b]`` with its other
    features kept: how far it would climb past the other documents of its query,
    which keep their values.  What counts is the ordering within a query, so ICE lines
    (``kind="individual"``; centre them with
    :func:`ltrboost.plot.plot_partial_dependence`'s ``centered=True``) show whether the
    shift is the same for every document or depends on its other features.  Grade
    probabilities are not plotted: for ``mcrank`` the score is the expected grade.

    Parameters
    ----------
    model : fitted Ranker, Booster or model file path
    X : array-like, DataFrame or Arrow table of shape (n_samples, n_features)
        The documents to average over (e.g. the training or a validation set).  A
        DataFrame's columns are taken by name (any order, as ``predict`` takes them);
        a ``qid`` column that is not a feature of the model is left out.  Integer
        (and bool) columns are read as float (scikit-learn refuses them: the grid
        values would be rounded into them); a SciPy sparse ``X`` is densified (its
        absent entries 0, as ``predict`` reads them: pass a sample of rows); ``X``
        itself is not changed.  Missing values (NaN) are left out of a feature's
        grid, which is built from the values it takes (scikit-learn's, from a column
        holding NaN, was NaN throughout); a feature missing in every row is refused.
    features : int, str, or a list of one or two of them
        As scikit-learn's: ``[0]``, ``["bm25"]``, or ``[0, 1]`` for the joint dependence on
        two features.  Integers are column positions in ``X``; names are a DataFrame's
        column names, or for an array the model's feature names (``f<k>``, the 0-based
        column, when it stores none).
    kind : {"average", "individual", "both"}, default="average"
    grid_resolution, percentiles, custom_values, categorical_features, sample_weight
        As in :func:`sklearn.inspection.partial_dependence`.
    iteration : int, optional
        The first rounds used (default: those ``predict`` uses).
    n_threads : int, optional
        Threads for predicting (default: a Ranker's ``n_threads``, else the default).

    Returns
    -------
    sklearn.utils.Bunch
        ``grid_values`` (one array per feature), ``average`` of shape
        (1, n_grid) (or (1, n_grid_0, n_grid_1) for a pair) and/or ``individual`` of
        shape (1, n_samples, n_grid), as scikit-learn returns them.

    Examples
    --------
    >>> from ltrboost import Ranker
    >>> from ltrboost.datasets import make_ranking
    >>> from ltrboost.inspection import partial_dependence
    >>> X, y, qid = make_ranking(n_queries=20, random_state=0)
    >>> model = Ranker(n_estimators=10).fit(X, y, qid=qid)
    >>> pd = partial_dependence(model, X, [0], grid_resolution=20)
    >>> pd["average"].shape
    (1, 20)
    """
    from sklearn.inspection import partial_dependence as sklearn_partial_dependence

    view, X, names = _score_view(model, X, features, iteration, n_threads)
    if names is not None:  # an array: scikit-learn takes names for DataFrames only
        features, custom_values = _by_position(features, custom_values, names)
    keys = [features] if isinstance(features, str | numbers.Integral) else features
    custom_values = grids_without_missing(
        X, keys, custom_values, categorical_features, grid_resolution, percentiles, names
    )
    return sklearn_partial_dependence(
        view,
        X,
        features,
        kind=kind,
        method="brute",
        grid_resolution=grid_resolution,
        percentiles=percentiles,
        custom_values=custom_values,
        categorical_features=categorical_features,
        sample_weight=sample_weight,
        feature_names=names,
    )


def _score_view(
    model: Any, X: Any, features: Any, iteration: int | None, n_threads: int | None
) -> tuple[Any, Any, list[str] | None]:
    """The regressor view of ``model`` for scikit-learn's partial dependence, ``X``
    ready for it (qid column out, integer columns as float, sparse densified, columns
    checked) and the feature names to give scikit-learn for an array ``X`` (the
    model's, ``f<k>`` when it stores none)."""
    booster, default_threads = _model_booster(model)
    if n_threads is None:
        n_threads = default_threads
    from ltrboost.dataset import LTRInputError, arrow_as_frame, select_columns

    X = arrow_as_frame(X)
    names = booster.feature_names
    is_frame = hasattr(X, "columns") and hasattr(X, "drop")
    if is_frame and "qid" in list(X.columns) and (names is None or "qid" not in names):
        if _names_qid(features):
            raise ValueError(
                "features: 'qid' is X's column of query ids, not a feature of the model "
                "(it is left out of X); name one of the model's features"
            )
        X = X.drop(columns="qid")
    if is_frame:
        select_columns(X, names)  # missing or unknown columns: refused here, by name
        ints = [c for c in X.columns if X[c].dtype.kind in "iub"]
        if ints:  # a copy: the caller's frame keeps its types
            X = X.astype(dict.fromkeys(ints, np.float64))
    else:
        from ltrboost.binning import is_sparse

        # scikit-learn's grid and assignment are for dense columns (a sparse X gave a
        # one-value grid): the rows are densified, their absent entries 0 as predict
        # reads them
        X = X.toarray() if is_sparse(X) else np.asarray(X)
        if X.dtype.kind in "iub":
            X = X.astype(np.float64)
    if X.ndim != 2:
        from ltrboost.dataset import _not_2d

        raise LTRInputError(_not_2d(X.shape))
    if X.shape[1] != booster.n_features:
        raise ValueError(
            f"X has {X.shape[1]} features but the model was trained with {booster.n_features}"
        )
    view = _score_regressor_class()(booster=booster, iteration=iteration, n_threads=n_threads)
    return view, X, (None if is_frame else feature_names(booster))


def grids_without_missing(
    X: Any,
    features: Sequence[Any],
    custom_values: dict | None,
    categorical_features: Any,
    grid_resolution: Any,
    percentiles: Any,
    names: Sequence[str] | None,
    *,
    by_index: bool = False,
) -> dict | None:
    """``custom_values`` plus, for each feature of ``features`` (column positions or a
    DataFrame's names) that has a missing value (NaN) in ``X``, the grid scikit-learn
    would build from the values it takes.  scikit-learn builds it from the column with
    its NaN (its percentiles of a column holding one NaN are NaN): every grid value
    NaN, one flat number for the curve and an empty plot, or NaN appended to the grid
    of a feature of few values.  Features in ``custom_values`` or categorical ones are
    left to scikit-learn; a feature missing in every row is refused, naming it.
    ``by_index``: key the grids by column position (``PartialDependenceDisplay``'s
    keys), else as ``features`` names them."""
    if not _valid_grid_settings(grid_resolution, percentiles):
        return custom_values  # scikit-learn's own error says what is wrong
    is_frame = hasattr(X, "columns") and hasattr(X, "iloc")
    columns = list(X.columns) if is_frame else None
    out = dict(custom_values or {})
    for key in _flat_features(features):
        if isinstance(key, str):
            known = columns if columns is not None else list(names or ())
            if key not in known:
                continue  # scikit-learn names what it cannot find
            index = known.index(key)
        elif isinstance(key, numbers.Integral) and not isinstance(key, bool):
            index = int(key)
        else:
            continue
        if not 0 <= index < X.shape[1]:
            continue
        label = columns[index] if is_frame else (names[index] if names else index)
        if key in out or index in out or label in out:
            continue
        if _is_categorical(categorical_features, index, label, X.shape[1]):
            continue
        try:
            column = X.iloc[:, index] if is_frame else X[:, index]
            if is_frame:
                column = column.astype("float64")
            values = np.asarray(column, dtype=np.float64)
        except (TypeError, ValueError):
            continue  # not numbers: scikit-learn's (or predict's) error
        missing = np.isnan(values)
        if not missing.any():
            continue
        if missing.all():
            raise ValueError(
                f"features: {label!r} is missing (NaN) in every row of X: there is no "
                "value to build its grid from; give its grid in custom_values, or X "
                "with rows where it has a value"
            )
        out[index if by_index else key] = _grid_of(values[~missing], grid_resolution, percentiles)
    return out or custom_values


def _flat_features(features: Sequence[Any]) -> list[Any]:
    """Each feature of ``features`` (single ones and pairs), once."""
    flat: list[Any] = []
    for item in features:
        group = [item] if isinstance(item, str) or np.ndim(item) == 0 else list(item)
        flat += [f for f in group if f not in flat]
    return flat


def _valid_grid_settings(grid_resolution: Any, percentiles: Any) -> bool:
    """Whether ``grid_resolution`` and ``percentiles`` are ones scikit-learn takes."""
    try:
        lo, hi = percentiles
        return int(grid_resolution) == grid_resolution > 1 and 0 <= lo < hi <= 1
    except (TypeError, ValueError):
        return False


def _is_categorical(categorical_features: Any, index: int, label: Any, n_features: int) -> bool:
    """Whether column ``index`` (named ``label``) is among ``categorical_features``
    (scikit-learn's forms: a boolean mask, positions or names)."""
    if categorical_features is None:
        return False
    cats = np.asarray(categorical_features)
    if cats.dtype.kind == "b":
        return cats.size == n_features and bool(cats[index])
    return any(c == index or c == label for c in cats.tolist())


def _grid_of(values: NDArray[np.float64], grid_resolution: int, percentiles: Any):
    """scikit-learn's grid of a column (``_grid_from_X``) from its present ``values``:
    its distinct values when fewer than ``grid_resolution``, else ``grid_resolution``
    points from its lower to its upper percentile."""
    from scipy.stats.mstats import mquantiles

    uniques = np.unique(values)
    if uniques.shape[0] < grid_resolution:
        return uniques
    lo, hi = mquantiles(values, prob=percentiles, axis=0)
    if np.allclose(lo, hi):
        raise ValueError(
            "percentiles are too close to each other, unable to build the grid. "
            "Please choose percentiles that are further apart."
        )
    return np.linspace(lo, hi, num=int(grid_resolution), endpoint=True)


def _by_position(
    features: Any, custom_values: dict | None, names: Sequence[str]
) -> tuple[Any, dict | None]:
    """``features`` (and ``custom_values``' keys) with the model's feature names
    replaced by column positions, for an array ``X``; an unknown name refused."""

    def position(f: Any) -> Any:
        if not isinstance(f, str):
            return f
        if f not in names:
            raise ValueError(
                f"features: {f!r} is not a feature of the model (X is an array: a name "
                f"must be one of the model's feature names {list(names)[:10]}"
                f"{' ...' if len(names) > 10 else ''}, or give a column position)"
            )
        return names.index(f)

    if isinstance(features, str):
        features = [features]
    features = [position(f) for f in features]
    if custom_values:
        custom_values = {position(k): v for k, v in custom_values.items()}
    return features, custom_values


def _names_qid(features: Any) -> bool:
    """Whether ``features`` (scikit-learn's forms) names a feature ``"qid"``."""
    items = [features] if isinstance(features, str) else list(features)
    for item in items:
        group = [item] if isinstance(item, str) or np.ndim(item) == 0 else list(item)
        if any(isinstance(f, str) and f == "qid" for f in group):
            return True
    return False


def _model_booster(model: Any) -> tuple[Any, int | None]:
    """The Booster of a fitted Ranker (and its ``n_threads``), a Booster, or the model
    in a file."""
    import os

    from ltrboost.model import Booster

    if isinstance(model, Booster):
        return model, None
    if isinstance(model, (str, os.PathLike)):
        from ltrboost.model import load_model

        return load_model(model), None
    from ltrboost.sklearn import Ranker

    if isinstance(model, Ranker):
        model._check_fitted()
        return model.booster_, model.n_threads
    raise TypeError(
        f"model must be a fitted Ranker, a Booster or a model file path, not {type(model).__name__}"
    )


@functools.cache
def _score_regressor_class() -> type:
    """The regressor view's class, made on first use: scikit-learn is imported then,
    not with this module."""
    from sklearn.base import BaseEstimator, RegressorMixin

    class _ScoreRegressor(RegressorMixin, BaseEstimator):
        """A fitted model seen as a scikit-learn regressor whose ``predict`` is the
        ranking score, for :mod:`sklearn.inspection` only (its ``score``, R², means
        nothing for a ranker: never hand it to model selection)."""

        def __init__(self, booster: Any = None, iteration: Any = None, n_threads: Any = None):
            self.booster = booster
            self.iteration = iteration
            self.n_threads = n_threads

        def __sklearn_is_fitted__(self) -> bool:
            return True

        def fit(self, X: Any, y: Any = None) -> Any:  # scikit-learn looks for one
            raise TypeError(
                "this is a trained model seen as a regressor for partial dependence; "
                "train with ltrboost.Ranker().fit(X, y, qid=qid)"
            )

        def predict(self, X: Any) -> NDArray[np.float64]:
            return self.booster.predict(X, iteration=self.iteration, n_threads=self.n_threads)

    return _ScoreRegressor

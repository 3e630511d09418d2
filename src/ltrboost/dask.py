"""Training on a Dask cluster: query shards on the workers, histograms summed on the driver.

``pip install ltrboost[dask]``.  The core package never imports Dask; only this module does.

* :class:`DaskRanker`: the :class:`~ltrboost.Ranker` parameters plus ``client=``;
  ``fit(X, y, qid=..., eval_set=..., eval_qid=...)`` on ``dask.dataframe`` or
  ``dask.array`` input, ``predict(X)`` a lazy Dask collection, ``to_local()`` a plain
  :class:`~ltrboost.Ranker` predicting exactly the same.
* :func:`train`: the lower level, ``train(client, params, train, valid_sets)`` with
  :class:`DaskData` inputs.

How a model is trained (``docs/scaling.md`` has the communication model):

1. **Queries whole.**  Each input partition is validated on its worker (labels, qids,
   features: the same checks and one-line messages as local training, prefixed with
   ``partition N:``; a DataFrame partition's columns taken by the names its meta lists,
   as ``compute()`` aligns them) and grouped by qid inside the partition.  Only the query
   ids of every partition travel to the driver (O(queries)).  Queries found in several
   partitions (``regroup=False``: refused, naming one and two of its partitions) are
   made whole: when few (:data:`MOVE_PIECES_PER_PARTITION`; partitions cut from sorted
   rows), each goes whole to the first partition holding it and the other rows stay,
   O(P) tasks, the rows then in the order of the partitions concatenated, grouped by qid
   as local training groups them; interleaved data takes one stable hash-of-qid shuffle
   (every row goes to partition ``hash(qid) % P``, rows keep their order), P² + 4P
   tasks.  Empty partitions are dropped.  Never one partition per query.
2. **Shards.**  Partitions ``0..P-1`` are dealt to the sorted workers in contiguous
   blocks; each worker concatenates its block into one shard (an
   :class:`~distributed.Actor`), so the training set is the partitions in order and
   the shards hold consecutive rows.  Rows move between workers at most once, never to
   the driver.
3. **Bins.**  Constant columns are found from two rows per shard; bin edges are fitted
   on one worker from a sample merged across shards: the very rows local training
   samples (``BinMapper``'s seeded draw over the global row numbers), so the edges
   equal the local ones always (all rows when ``n <= 200000``).  Every shard bins its
   rows once.
4. **Trees.**  Each shard computes its queries' gradients (exact: whole queries; the
   per-query seeds of sampled pairs use global query numbers; a custom objective
   callable gets the shard's rows, exact for a loss that is a sum over queries).  The
   driver runs the ordinary :class:`~ltrboost.grower.TreeGrower` over a
   :class:`ShardedHistograms` builder: every request (root, node histogram, split,
   pair histograms) goes to all shards at once and their partial results are summed by
   :func:`ltrboost.histogram.reduce_histograms` in shard order, so counts
   (``min_samples_leaf``) and sums are global; the split is decided once and every
   shard applies it.  A split and the smaller child's histogram are one round trip.
   Under ``split_criterion="ole"`` each shard counts its round's pairs and sends the
   count (and its query with the most pairs): the driver checks the round's total
   against ``$LTRBOOST_MAX_OLE_PAIRS`` and warns in round 1, as one process does
   (:func:`ltrboost.objectives.pair_engine.check_ole_round_counts`).  The per-query
   pair limit (``$LTRBOOST_MAX_QUERY_PAIRS``) the shards' objectives check is the
   driver's too (:func:`ltrboost.objectives.pair_selection.using_query_pair_setting`).
5. **Validation.**  Each shard scores its validation rows and returns per-query metric
   values; the driver takes their mean over all queries (the same value as local).

The model equals the local model trained on the partitions concatenated in order
(after a hash shuffle: the regrouped partitions):
same splits, leaf values and predictions up to float summation order (within 1e-9
relative, tested; often bit-equal); repeated runs with the same partitioning and workers
are byte-identical.

Faults: a worker lost while the shards are made (before round 1) costs a set-up: they
are made again on the remaining workers (a warning; :data:`SETUP_ATTEMPTS`), the model
that of a run started on them.  Lost in a round, it stops training with
:class:`DistributedTrainingError` (its rows lived only there); a callback saving
``env.snapshot()`` gives a checkpoint to continue from with ``init_model=`` on a new
cluster, to the same model as an uninterrupted run.

Not supported on Dask (a clear error): explicit preference pairs, ``line_search``
objectives (qbrank), multi-output (mcrank), objectives with a data-dependent initial
score other than ``mart``, ERR lambdas, pooled metrics.  A Dask array of SciPy sparse
chunks is taken (fit and predict), each chunk densified on its worker.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import threading
import time
import types
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass
from typing import Any

import numpy as np

# A plain install has none of these: name the extra that brings them (importing this
# module said "No module named 'pandas'", and with pandas alone fit() failed deep inside).
try:
    import pandas as pd

    for _name in ("dask", "distributed"):
        if importlib.util.find_spec(_name) is None:
            raise ModuleNotFoundError(f"No module named {_name!r}", name=_name)
except ImportError as e:
    raise ImportError(
        f"ltrboost.dask needs the dask extra: pip install 'ltrboost[dask]' ({e})", name=e.name
    ) from None
from numpy.typing import NDArray

from ltrboost._callsite import external_stacklevel
from ltrboost._checks import check_scores_collapsed
from ltrboost._config import G_H_DTYPE, INDEX_DTYPE, SCORE_DTYPE
from ltrboost._evaluation import (
    _bind_metrics,
    check_training_setup,
    custom_metric_value,
    threshold_separates_nothing,
    warn_if_early_stopping_blind,
)
from ltrboost._numba import threads
from ltrboost.binning import DEFAULT_SUBSAMPLE, BinMapper, UsedFeatures, check_histogram_memory
from ltrboost.booster import (
    CallbackEnv,
    Training,
    as_params,
    callbacks_stop,
    check_callbacks,
    check_metrics,
    check_resumable,
    make_objective,
    query_label_range,
    validation_shares_queries,
    warn_if_colsample_misses,
    warn_if_constant_model,
    warn_if_no_split_possible,
)
from ltrboost.dataset import (
    _ROW_IN_MESSAGE,
    ALL_ZERO_WEIGHTS,
    LTRInputError,
    RankingDataset,
    _columns_by_name,
    _is_object_dtype,
    _refuse_duplicate_names,
    as_feature_matrix,
    check_labels,
    check_sample_weight,
    close_names,
    group_by_qid,
    qid_array_kind,
    select_columns,
)
from ltrboost.grower import GrowerParams, TreeGrower
from ltrboost.histogram import (
    HistogramPool,
    LocalHistograms,
    NodeHistogram,
    reduce_histograms,
    subtract_histograms,
)
from ltrboost.model import Booster, averaged_divisor
from ltrboost.objectives.base import Objective
from ltrboost.objectives.pair_engine import (
    OlePairsOverLimit,
    check_ole_round_counts,
    counting_ole_pairs,
    counts_ole_pairs_up_front,
    label_pairs_per_query,
    refuse_ole_pair_counts,
)
from ltrboost.objectives.pair_selection import (
    max_ole_pairs,
    query_pair_setting,
    using_query_pair_setting,
)
from ltrboost.params import PARAM_NAMES, BoosterParams, ParameterError, ParameterWarning
from ltrboost.quantize import quant_seed, quant_stats, spec_from_stats
from ltrboost.sklearn import (
    ESTIMATOR_PARAM_NAMES,
    Ranker,
    _as_booster,
    _qid_spelled_otherwise,
    _same_ids,
    check_eval_set,
)
from ltrboost.tree import pack_trees, predict_binned_tree, predict_raw

__all__ = ["DaskData", "DaskRanker", "DistributedTrainingError", "ShardedHistograms", "train"]


class DistributedTrainingError(RuntimeError):
    """A worker holding a shard was lost, or did not answer within ``timeout``.

    ``lost``: for a lost worker, who it was (``worker W (shard i, partitions a-b)``),
    else None; ``stage``: what training was doing then (e.g. ``round 3``)."""

    lost: str | None = None
    stage: str | None = None


def _lost_worker(who: str, stage: str, advice: str) -> DistributedTrainingError:
    """The error of a lost worker ``who`` (during ``stage``): its rows lived only there."""
    e = DistributedTrainingError(
        f"{who} was lost ({stage}); training stopped. Its rows lived only there: {advice}"
    )
    e.lost, e.stage = who, stage
    return e


#: Set-ups of the shards (before round 1) that a lost worker may cost: each lost
#: worker's shard is made again from the input partitions on the remaining workers
#: (Dask recomputes the partitions it held), up to this many attempts in all.
SETUP_ATTEMPTS = 3


# --------------------------------------------------------------------------- inputs


@dataclass
class DaskData:
    """A training or validation set on the cluster.

    ``X``: a ``dask.dataframe.DataFrame`` (feature columns; may hold the qid column) or
    a ``dask.array.Array`` (n, n_features).  ``y``: a Dask Series or 1-D array with the
    same partitions/chunks as ``X``.  ``qid``: a column name of ``X``, a Dask Series or
    a 1-D Dask array aligned with ``X`` (None: a column named ``"qid"``).
    ``sample_weight``: optional per-document weights, aligned the same way.
    """

    X: Any
    y: Any
    qid: Any = None
    sample_weight: Any = None


def _is_dask_frame(obj) -> bool:
    import dask.dataframe as dd

    return isinstance(obj, dd.DataFrame | dd.Series)


def _delayed_blocks(obj, n_parts: int | None, name: str) -> list:
    """One delayed object per partition (row chunk) of a Dask collection."""
    import dask.array as da

    if obj is None:
        return [None] * int(n_parts or 0)
    if _is_dask_frame(obj):
        parts = list(obj.to_delayed(optimize_graph=False))
    elif isinstance(obj, da.Array):
        if obj.ndim == 2 and obj.numblocks[1] != 1:
            obj = obj.rechunk({1: -1})
        parts = list(np.ravel(obj.to_delayed()))
    else:
        raise TypeError(f"{name} must be a dask DataFrame/Series or a dask array, not {type(obj)}")
    if n_parts is not None and len(parts) != n_parts:
        raise LTRInputError(
            f"{name} has {len(parts)} partitions but X has {n_parts}; give them with the "
            "same partitions (chunks) as X"
        )
    return parts


def _input_parts(
    data: DaskData, columns: list[str] | None = None, prefix: str | None = None
) -> tuple[list, list[str] | None]:
    """Delayed ``_make_part`` calls, one per partition, and the feature names.

    ``columns``: the training set's feature names, for a validation set (or the init
    model's, for a training set that continues it): its frame's feature columns are
    taken by name, as local training takes an ``eval_set`` or warm-start frame's.
    ``prefix``: what a validation set's input errors start with (its name).

    Labels, qids and weights that are columns of a DataFrame ``X`` come with its
    partitions (the best form: Dask may fuse small Parquet files into one partition
    when reading few columns, always whole files).  Given as separate Dask Series they
    are paired with ``X`` partition by partition as the collections are written
    (unoptimised graphs, so that both keep their partitions), not joined on the index.
    """
    from dask import delayed

    X, qid = data.X, data.qid
    # keys of this call only: train cancels them when it ends (:func:`_cancel`), which
    # must not cancel another training's partitions of the same data
    make = delayed(_make_part, pure=False)
    roles = {"y": data.y, "qid": qid, "w": data.sample_weight}
    for role, value in roles.items():
        if _is_dask_frame(value):
            _refuse_numbers_made_text(value, {}, role, prefix)
    if _is_dask_frame(X):
        cols = list(X.columns)
        if roles["qid"] is None and "qid" in cols:
            roles["qid"] = "qid"
        if roles["y"] is None:
            raise LTRInputError("labels y are required")
        if roles["qid"] is None:
            found = _qid_spelled_otherwise(X)  # a 'QID' header: named, as Ranker.fit
            raise LTRInputError(f"{found}give qid= (a column name, a dask Series or array)")
        named = {}
        for role, value in roles.items():
            if isinstance(value, str):
                if value not in cols:
                    raise _not_a_column(role, value, cols)
                named[role] = value
        separate = [r for r, v in roles.items() if v is not None and r not in named]
        frames = list(X.to_delayed(optimize_graph=not separate))
        blocks = {r: _delayed_blocks(roles[r], len(frames), r) for r in separate}
        feature_names = [str(c) for c in cols if c not in set(named.values())]
        _refuse_duplicate_names(feature_names, columns=True)  # taken by name, as in fit
        _refuse_numbers_made_text(X, {c: r for r, c in named.items()}, "feature", prefix)
        if columns is not None:  # taken by these names (by _make_part)
            feature_names = list(columns)
        parts = [
            make(
                i,
                f,
                *(blocks[r][i] if r in blocks else None for r in ("y", "qid", "w")),
                named,
                columns,
                prefix,
                cols,
            )
            for i, f in enumerate(frames)
        ]
        return parts, feature_names
    if not hasattr(X, "to_delayed"):  # a pandas frame was told to give qid=
        raise TypeError(
            f"X must be a dask DataFrame or a dask array, not {type(X).__name__} "
            "(for data in memory use ltrboost.Ranker)"
        )
    if qid is None:
        raise LTRInputError("give qid= (a dask array aligned with X)")
    xs = _delayed_blocks(X, None, "X")
    ys = _delayed_blocks(roles["y"], len(xs), "y")
    qs = _delayed_blocks(qid, len(xs), "qid")
    ws = _delayed_blocks(roles["w"], len(xs), "sample_weight")
    parts = [
        make(i, x, yy, q, ww, None, None, prefix)
        for i, (x, yy, q, ww) in enumerate(zip(xs, ys, qs, ws, strict=True))
    ]
    return parts, None


def _refuse_numbers_made_text(
    collection: Any, roles: dict[str, str], role: str, prefix: str | None
) -> None:
    """Refuse a column of a Dask collection that ``dask.dataframe.from_pandas`` turned
    from numbers held as dtype object into text (Dask's ``dataframe.convert-string``,
    on by default): ``1`` and ``1.0`` became ``"1"`` and ``"1.0"``, two queries where
    local training has one, and a feature or label became a string.  The error names
    the column, its role (``roles``: column -> "y", "qid" or "w"; else ``role``) and the
    row of the pandas object given to ``from_pandas`` holding the first such number.

    The numbers are seen only in the pandas object that the collection's expression
    holds (``FromPandas``); collections built otherwise (read from files, or on a Dask
    without query-able expressions) are not checked here."""
    try:
        from dask.dataframe.dask_expr.io.io import FromPandas

        nodes = list(collection.expr.find_operations(FromPandas))
    except (ImportError, AttributeError):  # another Dask
        return
    meta = collection._meta
    now = {meta.name: meta.dtype} if meta.ndim == 1 else dict(meta.dtypes.items())
    for node in nodes:
        if not node.operand("pyarrow_strings_enabled"):
            continue
        frame = getattr(node.frame, "_data", node.frame)
        given = [(frame.name, frame)] if frame.ndim == 1 else list(frame.items())
        for name, column in given:
            dtype = now.get(name)
            if column.dtype != object or dtype is None or _is_object_dtype(dtype):
                continue  # not held as object, not in the collection, or kept as object
            values = column.to_numpy()
            if all(issubclass(t, str) or t is type(None) for t in set(map(type, values))):
                continue
            is_text = np.frompyfunc(lambda v: isinstance(v, str | bytes), 1, 1)
            odd = np.flatnonzero(~is_text(values).astype(bool) & ~pd.isna(values))
            if not odd.size:
                continue
            row = int(odd[0])
            what = roles.get(name, role)
            effect = {
                "qid": "1 and 1.0 would be two queries, 1 and '1' one",
                "feature": "features must be numbers, not text",
            }.get(what, "labels and weights must be numbers, not text")
            column_name = f"{what} Series" if name is None else f"{what} column {str(name)!r}"
            e = LTRInputError(
                f"{column_name} holds numbers as dtype object "
                f"({_plain(values[row])!r} in this row of the pandas object given to "
                "from_pandas), which dask.dataframe.from_pandas turned into text (Dask's "
                f"'dataframe.convert-string' setting; now dtype {dtype}): {effect}. Give "
                "the column a numeric dtype before from_pandas (e.g. .astype(float)), or "
                "call from_pandas inside dask.config.set({'dataframe.convert-string': False})",
                row=row,
            )
            if prefix:
                raise LTRInputError(f"{prefix}: {e}") from None
            raise e


def _not_a_column(role: str, name: str, columns) -> LTRInputError:
    """``y='Label' is not a column of X``, pointing at a column that is ``name`` but for
    case or surrounding spaces (names are matched exactly, as Ranker.fit's ``qid``
    column and the feature columns are), else at one spelled close to it (``lable``:
    :func:`~ltrboost.dataset.close_names`, as local fit's hints)."""
    near, case_only = close_names(name, columns) if isinstance(name, str) else ([], False)
    hint = ""
    if near:
        how = "names are matched exactly" if case_only else "spelled close to it"
        hint = f": X has {', '.join(map(repr, near))} ({how}; give {role}={near[0]!r})"
    return LTRInputError(f"{role}={name!r} is not a column of X{hint}")


def _located(i: int, e: Exception, prefix: str | None = None) -> LTRInputError:
    """``partition i: <e>``, after ``prefix: `` (a validation set's name) if given."""
    err = LTRInputError(f"{prefix + ': ' if prefix else ''}partition {i}: {e}")
    err.partition = i
    return err


def _listed_columns(X, listed: list):
    """A partition ``X`` of a Dask DataFrame with the columns its meta lists
    (``listed``), in that order, as ``compute()`` (``pd.concat``) aligns them by name.

    A partition may hold them otherwise: ``dd.read_csv`` of files whose headers order
    the columns differently keeps each file's order, and a file may lack a column or
    hold another (also ``dd.from_delayed(..., verify_meta=False)``).  Taken by
    position, a file of another order trained with its features swapped.  A missing or
    unknown column is an LTRInputError naming it (``pd.concat`` would make a missing
    feature NaN, a missing label a NaN label)."""
    have = list(X.columns)
    if have == list(listed):
        return X
    return _columns_by_name(
        X,
        [str(c) for c in have],
        [str(c) for c in listed],
        against="the columns the dask DataFrame lists (its meta)",
    )


def _partition_listed_columns(df, listed: list, partition_info=None):
    """:func:`_listed_columns` of a partition to predict: an input error is
    ``partition N: ...``, as training names a partition."""
    try:
        return _listed_columns(df, listed)
    except LTRInputError as e:
        if partition_info is None:
            raise
        raise _located(int(partition_info["number"]), e) from None


def _make_part(i, X, y, qid, w, named, columns=None, prefix=None, listed=None):
    """Validate partition ``i`` (on its worker) and group its rows by qid, stably.

    ``origin``: each row's input partition and its row there, so that an error found
    later (on a shard, after grouping and regrouping) names the row the user gave.

    ``named``: for a DataFrame partition, the columns holding ``y``, ``qid``, ``w``;
    ``columns``: the feature names its remaining columns are taken by (validation);
    ``listed``: the frame's columns as its meta lists them, which the partition's are
    taken by first (:func:`_listed_columns`).

    A frame's ``qid`` column beside query ids given apart is compared with them
    (``qid_column``: True when the same, None without rows or such a column); the
    driver drops it from every partition or none (:func:`_qid_column`).  Taken by
    ``columns`` without ``"qid"``, it is no feature of the model and is dropped."""
    qid_column = None
    try:
        if listed is not None:
            X = _listed_columns(X, listed)
        if named:
            y = X[named["y"]].to_numpy() if "y" in named else y
            qid = X[named["qid"]].to_numpy() if "qid" in named else qid
            w = X[named["w"]].to_numpy() if "w" in named else w
            X = X.drop(columns=list(named.values()))
        if named is not None and "qid" in X.columns:
            if columns is not None and "qid" not in columns:
                X = X.drop(columns="qid")
            elif columns is None and X.shape[0] > 0:
                qid_column = _same_ids(X["qid"].to_numpy(), qid)
        Xa, _ = as_feature_matrix(X, columns)
        n = Xa.shape[0]
        if y is None:
            raise LTRInputError("labels y are required")
        y_arr = check_labels(np.asarray(y), n)
        q = np.asarray(qid)
        if q.ndim != 1 or q.shape[0] != n:
            raise LTRInputError(f"qid has shape {q.shape} but X has {n} rows")
        offsets, order, qids = group_by_qid(q)
        wa = None if w is None else check_sample_weight(w, n)
    except LTRInputError as e:
        raise _located(i, e, prefix) from None
    rows = np.arange(n, dtype=np.int64)
    if order is not None:
        Xa, y_arr = Xa[order], y_arr[order]
        q = q[order]
        wa = None if wa is None else wa[order]
        rows = order
    return dict(
        X=Xa, y=y_arr, qid=q, offsets=offsets, qids=qids, w=wa, index=(i,),
        origin=(np.full(n, i, dtype=np.int32), rows), qid_column=qid_column,
    )  # fmt: skip


def _qid_column_same(part):
    return part["qid_column"]


def _drop_column(part, k: int) -> dict:
    return dict(part, X=np.delete(part["X"], k, axis=1))


def _qid_column(client, futures, names: list[str], what: str, timeout: float):
    """A frame's ``qid`` column beside query ids given apart, as ``Ranker.fit`` treats
    it: dropped when it holds the same ids (a query id is no feature), else kept as a
    feature with a warning; refused when that differs between partitions (their
    widths would).  Returns the partitions and the feature names."""
    same = _gather(client, client.map(_qid_column_same, futures, pure=False), timeout, what)
    seen = {s: i for i, s in reversed(list(enumerate(same))) if s is not None}
    if len(seen) == 2:
        raise LTRInputError(
            f"{what}: X's 'qid' column holds the query ids given apart in partition "
            f"{seen[True]} but not in partition {seen[False]}; drop the column (query ids "
            "are no feature) or rename it"
        )
    if True in seen:
        k = names.index("qid")
        futures = client.map(_drop_column, futures, k=k, pure=False)
        return futures, names[:k] + names[k + 1 :]
    if False in seen:
        warnings.warn(
            "X has a column named 'qid' that differs from the qid= given: it is used as a "
            "feature (rename it if it is one; drop it if it holds query ids)",
            UserWarning,
            stacklevel=external_stacklevel(),
        )
    return futures, names


def _part_meta(part) -> dict:
    """What the driver learns about a partition: O(queries), never its rows."""
    y_range = query_label_range(part["y"], part["offsets"], part["w"])
    span = y_range if part["w"] is None else query_label_range(part["y"], part["offsets"])
    return dict(
        n=int(part["offsets"][-1]),
        qids=part["qids"],
        sizes=np.diff(part["offsets"]),
        index=part["index"],
        width=int(part["X"].shape[1]),
        # None without weights, else whether any is positive (checked over all parts)
        weighted=None if part["w"] is None else bool(part["w"].any()),
        zero_weights=part["w"] is not None and not bool((part["w"] > 0).all()),
        # ERR's y_max is the largest label of the whole set, not of one shard
        y_max=float(part["y"].max()) if part["y"].shape[0] else 0.0,
        # with y_max, whether relevance_threshold flattens a validation set's MAP / MRR /
        # P@k (weights ignored, as the metrics ignore them)
        y_min=float(part["y"].min()) if part["y"].shape[0] else 0.0,
        # each query's largest and smallest label of positive weight (+-inf: none),
        # for the warning of a constant model (booster.warn_if_constant_model)
        y_range=y_range,
        # some query has documents of two labels, weights ignored (as metrics ignore
        # them): a validation set's metric can move (warn_if_early_stopping_blind)
        graded=bool(np.any(np.subtract(*span.T) > 0)),
    )


def _label_summary(metas) -> types.SimpleNamespace:
    """A stand-in training set for :func:`~ltrboost.booster.warn_if_constant_model`: one
    query per query of the set, holding two documents, its largest and its smallest
    label of positive weight (the warning's causes depend on nothing else)."""
    r = np.concatenate([m["y_range"] for m in metas]) if metas else np.empty((0, 2))
    return types.SimpleNamespace(
        y=r.reshape(-1),
        query_offsets=np.arange(0, 2 * r.shape[0] + 1, 2, dtype=np.int64),
        weights=None,
        n_samples=sum(m["n"] for m in metas),
    )


def _graded_summary(metas) -> types.SimpleNamespace:
    """A stand-in validation set for :func:`~ltrboost._evaluation.warn_if_early_stopping_blind`:
    one query of two documents, of two labels when some query of the set has two."""
    graded = any(m["graded"] for m in metas)
    return types.SimpleNamespace(
        y=np.array([1.0 if graded else 0.0, 0.0]), query_offsets=np.array([0, 2])
    )


def _grades(part, weighted: bool) -> NDArray[np.float64]:
    """The distinct labels of a partition (of positive weight when ``weighted``)."""
    y = part["y"]
    if weighted and part["w"] is not None:
        y = y[part["w"] > 0]
    return np.unique(y)


def _all_grades(client, futures, weighted: bool, timeout: float, what: str) -> NDArray:
    """The distinct labels of a whole set (one small pass: only to word a refusal or a
    warning that the partitions' summaries already decided)."""
    parts = client.map(_grades, futures, weighted=weighted, pure=False)
    return np.unique(np.concatenate(_gather(client, parts, timeout, what)))


def _grades_set(y, zero_weights: bool = False) -> RankingDataset:
    """A stand-in set of one query holding the labels ``y``, and one more document of
    weight 0 when the set has such documents (a message then says "of positive
    weight"), for the checks that read only which grades a set holds."""
    y = np.asarray(y, dtype=np.float64)
    w = None
    if zero_weights:
        y, w = np.append(y, y[0]), np.append(np.ones(y.shape[0]), 0.0)
    return RankingDataset(X=None, y=y, query_offsets=np.array([0, y.shape[0]]), weights=w)


def _check_training_labels(client, objective, tr, timeout: float) -> None:
    """``objective.check_training_labels`` on the whole training set, as
    :func:`ltrboost.train` runs it (a shard's ``prepare`` sees only its rows): a
    ``relevance_threshold`` (LambdaMART-MAP) that counts every document of positive
    weight relevant, or none, is refused with the local message.  Decided from the
    partitions' summaries (the smallest and largest label of positive weight: the
    threshold's check reads nothing else); only a refusal gathers the distinct grades
    its message lists."""
    futures, metas, _ = tr
    r = np.concatenate([m["y_range"] for m in metas])
    top, bottom = float(r[:, 0].max()), float(r[:, 1].min())  # queries of positive weight
    if not bottom <= top:  # no document of positive weight (refused before)
        return
    zero = any(m["zero_weights"] for m in metas)
    try:
        with warnings.catch_warnings():  # the stand-in holds two grades, not all of them
            warnings.simplefilter("ignore")
            objective.check_training_labels(_grades_set([bottom, top], zero))
    except ParameterError:
        grades = _all_grades(client, futures, True, timeout, "the training set")
        objective.check_training_labels(_grades_set(grades, zero))
        raise


def _warn_if_threshold_flat(client, params, objective, vs, timeout: float) -> None:
    """Warn, as :func:`ltrboost.train` does, of a validation set whose labels all sit on
    one side of ``relevance_threshold`` (its MAP, MRR and P@k never move); decided from
    the partitions' smallest and largest labels."""
    from ltrboost._evaluation import _metrics, metric_options

    names = [name for name, fn in _metrics(params, objective) if fn is None]
    options = metric_options(params)
    for name, (futures, metas, _) in vs:
        where = f"validation set {name!r}"
        span = [min(m["y_min"] for m in metas), max(m["y_max"] for m in metas)]
        if threshold_separates_nothing(names, options, span, where) is None:
            continue
        grades = _all_grades(client, futures, False, timeout, where)
        msg = threshold_separates_nothing(names, options, grades, where)
        if msg is not None:
            warnings.warn(msg, ParameterWarning, stacklevel=external_stacklevel())


def _same_collections(a: DaskData, b: DaskData) -> bool:
    """Whether ``b`` is the training set ``a`` given again: the same :class:`DaskData`,
    or the same ``X``, ``y`` and ``qid`` (the same objects, or Dask collections of the
    same graph key: ``dask.base.tokenize``, which reads a collection's name, not its
    rows; a qid of None is the ``"qid"`` column).  Weights are not compared, as
    locally.  An equal copy under another graph (the rows read again by another
    route) is not recognised: that would need a pass over the rows."""
    if a is b:
        return True
    from dask.base import tokenize

    def qid(d: DaskData) -> Any:
        return "qid" if d.qid is None else d.qid

    for x, y in ((a.X, b.X), (a.y, b.y), (qid(a), qid(b))):
        if x is y:
            continue
        try:
            if tokenize(x) != tokenize(y):
                return False
        except Exception:  # an object tokenize cannot read: not known to be the same
            return False
    return True


def _warn_if_validation_shares_queries(train: DaskData, valid_sets, tr_metas, vs) -> None:
    """:func:`ltrboost.train`'s :class:`~ltrboost.io.letor.SharedQueriesWarning`, with
    its words (:func:`~ltrboost.booster.validation_shares_queries`), for each validation
    set sharing query ids with the training set, decided from the query ids the driver
    already holds (each partition's, :func:`_part_meta`; every query whole by now): no
    pass over the rows.  Not for the training set given again
    (:func:`_same_collections`).  It points at :func:`train`'s caller."""
    from ltrboost.io.letor import SharedQueriesWarning

    def ids(metas) -> types.SimpleNamespace:
        return types.SimpleNamespace(
            query_ids=np.concatenate([m["qids"] for m in metas]), source=None
        )

    tr = ids(tr_metas)
    for k, ((name, data), (_, (_, metas, _))) in enumerate(zip(valid_sets, vs, strict=True)):
        if _same_collections(train, data):
            continue
        said = validation_shares_queries(tr, name, k, ids(metas))
        if said:
            warnings.warn(said, SharedQueriesWarning, stacklevel=external_stacklevel())


def _hash_buckets(qid: NDArray, n_buckets: int) -> NDArray[np.int64]:
    """A stable (seed-free, process-independent) hash of each qid, modulo ``n_buckets``.

    Numeric qids are hashed as float64 values (+0.0 for -0.0): one query whose rows come
    as int 7 from one file and float 7.0 from another (one query to pandas) must land in
    one bucket; ``hash_array`` hashes the two dtypes differently.  Distinct large ints
    that share a float only share a bucket, which is harmless.  Numbers in an object
    array (Python ints in one partition, floats in another) are hashed the same way
    (:func:`_hash_numbers`).  Strings are hashed as Python objects (``hash_array``
    refuses a NumPy ``<U`` array), as pandas gives them."""
    q = np.asarray(qid)
    if q.dtype.kind == "O" and _qid_kind(q) == "number":  # Python ints beside floats
        h = _hash_numbers(q)
    else:
        if q.dtype.kind in "biuf":
            q = q.astype(np.float64) + 0.0
        elif q.dtype.kind in "US":
            q = q.astype(object)
        h = pd.util.hash_array(q, categorize=False)
    return (h % np.uint64(n_buckets)).astype(np.int64)


def _hash_numbers(q: NDArray) -> NDArray[np.uint64]:
    """:func:`_hash_buckets`' hash of object qids that are numbers:
    as float64 values, as the numeric dtypes are hashed (``hash_array`` hashes an object
    array by each value's text: 3 as "3", 3.0 as "3.0", one query locally); an int too
    large for a float keeps the hash of its text."""
    vals = q.tolist()
    out = np.empty(len(vals), dtype=np.uint64)
    floats = np.zeros(len(vals), dtype=np.float64)
    ok = np.ones(len(vals), dtype=bool)
    for k, v in enumerate(vals):
        try:
            floats[k] = float(v)
        except OverflowError:
            ok[k] = False
    out[ok] = pd.util.hash_array(floats[ok] + 0.0, categorize=False)
    out[~ok] = pd.util.hash_array(q[~ok], categorize=False)
    return out


_qid_kind = qid_array_kind  # one partition's ids: numbers, strings, ...


def _refuse_mixed_kinds(metas, prefix: str | None) -> None:
    """Query ids that are numbers in one partition and strings in another: the error of
    local training on the partitions concatenated (which cannot sort them together),
    naming the first partition whose ids differ from the first rows' kind and its first
    row (a partition's first query is its first row's).  Not compared, 5 and "5" were
    two queries."""
    first = None
    for m in metas:
        if not len(m["qids"]):
            continue
        kind = _qid_kind(m["qids"])
        if first is None:
            first = kind
        elif kind != first:
            v = _plain(m["qids"][0])
            e = LTRInputError(
                f"qid {v!r} ({kind}) is not of the first rows' kind ({first}): query "
                "ids must be all strings or all numbers",
                row=0,
            )
            raise _located(int(m["index"][0]), e, prefix)


def _rows(part, rows: NDArray) -> dict:
    """The rows ``rows`` of ``part`` (a piece for :func:`_concat_parts`), in that order."""
    return dict(
        X=part["X"][rows],
        y=part["y"][rows],
        qid=part["qid"][rows],
        w=None if part["w"] is None else part["w"][rows],
        index=part["index"],
        origin=tuple(o[rows] for o in part["origin"]),
    )


def _split_part(part, n_buckets: int) -> list:
    """Rows of ``part`` by ``hash(qid) % n_buckets``, each keeping its row order."""
    b = _hash_buckets(part["qid"], n_buckets)
    return [_rows(part, np.flatnonzero(b == k)) for k in range(n_buckets)]


def _move_out(part, plan: dict[int, list[int]]) -> list:
    """``part`` as the rows it keeps, then one piece per destination of ``plan``
    (destination -> the numbers of its queries that go there, ascending), each piece
    in row order."""
    offsets = part["offsets"]
    keep = np.ones(int(offsets[-1]), dtype=bool)
    out = [None]
    for queries in plan.values():
        rows = np.concatenate([np.arange(offsets[t], offsets[t + 1]) for t in queries])
        keep[rows] = False
        out.append(_rows(part, rows))
    out[0] = _rows(part, np.flatnonzero(keep))
    return out


def _concat_parts(*parts, renumber: int | None = None) -> dict:
    """One partition from pieces in order (rows regrouped by qid, stably).

    ``index``: the input partitions it holds (those of the pieces, or ``renumber``
    alone for a partition made by a regrouping); ``origin``: its rows' (see
    :func:`_make_part`)."""
    X = np.concatenate([p["X"] for p in parts])
    y = np.concatenate([p["y"] for p in parts])
    q = np.concatenate([p["qid"] for p in parts])
    ws = [p["w"] for p in parts]
    w = None if all(v is None for v in ws) else np.concatenate(ws)
    origin = tuple(np.concatenate([p["origin"][k] for p in parts]) for k in range(2))
    offsets, order, qids = group_by_qid(q)
    if order is not None:
        X, y, q = X[order], y[order], q[order]
        w = None if w is None else w[order]
        origin = tuple(o[order] for o in origin)
    if renumber is None:
        index = tuple(i for p in parts for i in p["index"])
    else:
        index = (renumber,)
    return dict(X=X, y=y, qid=q, offsets=offsets, qids=qids, w=w, index=index, origin=origin)


def _gather(client, futures, timeout: float, what: str, workers: dict[str, str] | None = None):
    """``client.gather`` that gives up after ``timeout`` seconds (a task pinned to a
    lost worker would wait for it forever), and within about a second when one of
    ``workers`` (those the tasks are pinned to: address -> name) is lost.  Of several
    failed tasks, the error of the first in order is raised (the same error for the
    same data, not the first to fail): at once when every task before it is done or
    no worker is left to run them, else when ``timeout`` runs out (a known error, not
    a timeout).  No worker in the cluster when ``timeout`` runs out: an error saying so."""
    from distributed import wait

    single = not isinstance(futures, list)
    futs = [futures] if single else futures
    deadline = time.monotonic() + timeout
    while True:
        try:
            wait(futs, timeout=max(0.01, min(1.0, deadline - time.monotonic())))
            break
        except TimeoutError:
            if workers:
                _check_workers(client, workers, what)
            first = _first_failed(futs)
            n_workers = _n_workers(client)
            if first is not None and (n_workers == 0 or all(f.done() for f in futs[:first])):
                futs[first].result()  # raises the task's error: none before it can fail
            if time.monotonic() >= deadline:
                if first is not None:
                    futs[first].result()
                if n_workers == 0:
                    raise DistributedTrainingError(
                        f"{what}: the Dask cluster has no workers (still none after "
                        f"timeout={timeout} s); start some (cluster.scale(n)) or give a "
                        "longer timeout for workers still starting"
                    ) from None
                raise DistributedTrainingError(
                    f"{what}: the workers did not answer within timeout={timeout} s; "
                    "training stopped"
                ) from None
        except Exception:  # a closed client: its futures cancelled ("reason: unknown")
            _check_workers(client, workers or {}, what)  # or "No clients found"
            raise
    first = _first_failed(futs)
    if first is not None:
        futs[first].result()  # raises the task's error
    out = client.gather(futs)
    return out[0] if single else out


def _first_failed(futs) -> int | None:
    """The index of the first future in order whose task failed, or None."""
    return next((k for k, f in enumerate(futs) if f.status == "error"), None)


def _scheduler_workers(client, tries: int = 3) -> dict[str, Any]:
    """The cluster's workers now (address -> the scheduler's record), asked of the
    scheduler itself.

    Not ``Client.scheduler_info()``: when its query fails (an ``OSError`` it only logs,
    e.g. while a connection is re-established) it returns its periodic cache, whose
    ``workers`` is empty, so a live cluster looked empty and every worker lost (an
    intermittent "the Dask cluster has no workers").  A failed query is asked again
    (``tries`` in all, 0.2 s apart); what still fails is raised (a closed client raises
    many kinds)."""
    for k in range(tries):
        try:
            return dict(client.sync(client.scheduler.identity, n_workers=-1)["workers"])
        except OSError:
            if k + 1 == tries:
                raise
            time.sleep(0.2)
    raise AssertionError("unreachable")


def _n_workers(client) -> int | None:
    """Workers in the cluster now (None: the scheduler did not say)."""
    try:
        return len(_scheduler_workers(client))
    except Exception:  # a closed client raises many kinds; the caller finds out
        return None


def _shard_name(worker: str, i: int, parts: Sequence[int]) -> str:
    """``worker W (shard i, partitions a-b)``: who holds shard ``i``, for messages."""
    span = f"partition {parts[0]}" if len(parts) == 1 else f"partitions {parts[0]}-{parts[-1]}"
    return f"worker {worker} (shard {i}, {span})"


def _check_workers(client, workers: dict[str, str], what: str) -> None:
    """DistributedTrainingError when the client or cluster went away or one of
    ``workers`` (address: its name in messages) is no longer in the cluster."""
    try:
        info = {"workers": _scheduler_workers(client)}
    except Exception:  # a closed client raises many kinds
        info = {}
    if "workers" not in info:
        raise DistributedTrainingError(
            f"the Dask client or cluster went away ({what}); training stopped"
        )
    lost = [w for w in workers if w not in info["workers"]]
    if lost:
        raise _lost_worker(workers[lost[0]], what, "train again")


def _pick(pieces, k):
    return pieces[k]


def _cut_query(metas) -> tuple[Any, NDArray] | None:
    """The first query whose rows lie in two partitions (``metas``: the partitions'
    qids) and the partitions it lies in; None when every query is whole."""
    part_of = np.concatenate([np.full(len(m["qids"]), i) for i, m in enumerate(metas)])
    qids = pd.Series(np.concatenate([m["qids"] for m in metas]))
    dup = qids.duplicated(keep=False).to_numpy()
    if not dup.any():
        return None
    q = qids.iloc[int(np.flatnonzero(dup)[0])]
    return q, part_of[dup & (qids == q).to_numpy()]


def _plain(v):
    """A NumPy scalar as the Python value it holds (for messages)."""
    return v.item() if hasattr(v, "item") else v


#: Cut queries move alone (each whole to the first partition holding it) while their
#: pieces outside that partition number at most this many per input partition; more
#: is interleaved data, regrouped by the hash of the qid.  Partitions that are
#: consecutive slices of query-grouped rows (sorted files, ``repartition``,
#: ``from_pandas``) cut at most one query per boundary: fewer than one piece each.
MOVE_PIECES_PER_PARTITION = 2


def _move_plan(metas) -> dict[int, dict[int, list[int]]] | None:
    """Where the rows of cut queries go when only they move: each cut query whole to
    the first partition holding it (in partition order), as ``{source partition:
    {destination: the source's query numbers that go there}}``, in ascending order.

    None when the data is interleaved: more pieces to move than
    :data:`MOVE_PIECES_PER_PARTITION` per partition, or qids of several kinds (numbers
    in one partition, strings in another: their values are compared only by the hash
    regroup's own rule)."""
    held = [m["qids"] for m in metas if len(m["qids"])]
    kinds = {_qid_kind(q) for q in held}
    if len(kinds) > 1:
        return None
    part_of = np.concatenate([np.full(len(m["qids"]), i) for i, m in enumerate(metas)])
    number = np.concatenate([np.arange(len(m["qids"])) for m in metas])
    codes, _ = pd.factorize(pd.Series(np.concatenate(held)))
    first = np.zeros(len(codes), dtype=bool)
    first[np.unique(codes, return_index=True)[1]] = True  # a query's first partition
    moving = np.flatnonzero(~first)
    if moving.shape[0] > MOVE_PIECES_PER_PARTITION * len(metas):
        return None
    owner = np.empty(codes.max() + 1, dtype=np.int64)
    owner[codes[first]] = part_of[first]
    plan: dict[int, dict[int, list[int]]] = {}
    for e in moving:
        dest = plan.setdefault(int(part_of[e]), {})
        dest.setdefault(int(owner[codes[e]]), []).append(int(number[e]))
    return plan


def _move_cut_queries(client, futures, plan) -> tuple[list, list[int]]:
    """The partitions after moving the rows of ``plan`` (:func:`_move_plan`), and the
    numbers of those that changed.  Each destination holds its own rows (those it
    keeps), then the rows it receives in partition order, grouped by qid stably: the
    rows in the order of the partitions concatenated, grouped by qid, as local training
    groups them.  Tasks: a split and a pick per source, a pick per (source,
    destination), a concatenation per partition touched; none for the others."""
    kept, incoming = {}, {}
    for src, dests in plan.items():
        pieces = client.submit(_move_out, futures[src], dests, pure=False)
        kept[src] = client.submit(_pick, pieces, 0, pure=False)
        for j, dest in enumerate(dests, start=1):
            incoming.setdefault(dest, []).append((src, client.submit(_pick, pieces, j, pure=False)))
    changed = sorted(set(kept) | set(incoming))
    out = list(futures)
    for k in changed:
        own = kept.get(k, futures[k])
        got = [f for _, f in sorted(incoming.get(k, []), key=lambda t: t[0])]
        out[k] = client.submit(_concat_parts, own, *got, renumber=k, pure=False)
    return out, changed


def _queries_whole(
    client, futures, regroup: bool, what: str, timeout: float = 600.0, held: list | None = None
):
    """Partitions that keep every query whole: as they are, after moving the rows of
    the few cut queries (:func:`_move_plan`), or after one hash shuffle.

    ``held``: the futures of :func:`train` (for :func:`_cancel`); the regrouped
    partitions are added to it as soon as they are made."""
    metas = _gather(client, client.map(_part_meta, futures, pure=False), timeout, what)
    if not metas:
        raise LTRInputError(f"{what} has no partitions")
    _refuse_mixed_kinds(metas, what if what.startswith("validation set") else None)
    cut = _cut_query(metas)
    if cut is not None:
        q, where = cut
        if not regroup:
            raise LTRInputError(
                f"{what}: query {_plain(q)!r} is cut between partitions {int(where[0])} and "
                f"{int(where[1])}; keep each query in one partition (set_index on the qid, "
                "or query-partitioned Parquet from `ltrboost convert`) or pass regroup=True"
            )
        plan = _move_plan(metas)
        if plan is not None:
            futures, changed = _move_cut_queries(client, futures, plan)
            _hold(held, futures)
            new = client.map(_part_meta, [futures[k] for k in changed], pure=False)
            for k, m in zip(changed, _gather(client, new, timeout, what), strict=True):
                metas[k] = m
        else:
            n_out = len(futures)
            pieces = client.map(_split_part, futures, n_buckets=n_out, pure=False)
            picked = [
                [client.submit(_pick, p, k, pure=False) for p in pieces] for k in range(n_out)
            ]
            futures = [
                client.submit(_concat_parts, *row, renumber=k, pure=False)
                for k, row in enumerate(picked)
            ]
            _hold(held, futures)
            metas = _gather(client, client.map(_part_meta, futures, pure=False), timeout, what)
        cut = _cut_query(metas)  # the regrouping must have made every query whole
        if cut is not None:
            raise LTRInputError(
                f"{what}: query {_plain(cut[0])!r} is still cut between partitions after "
                "regrouping (its qid values differ in type between partitions?); give the "
                "qid one dtype"
            )
    keep = [i for i, m in enumerate(metas) if m["n"] > 0]
    return [futures[i] for i in keep], [metas[i] for i in keep]


# --------------------------------------------------------------------------- shards

# Workers of a LocalCluster(processes=False) share one process: Numba's default
# threading layer must not run two parallel kernels at once, so shard methods of one
# process run one at a time (shards in different processes are unaffected).
_LOCK = threading.Lock()


def _column_summary(part) -> NDArray:
    """Two rows per column: its first value and a different one if it varies (NaN
    counting as one value), so that :class:`UsedFeatures` of the stacked summaries of
    all shards equals that of all rows."""
    X = part["X"]
    first = X[0]
    same = (X == first) | (np.isnan(X) & np.isnan(first))
    other = X[np.argmax(~same, axis=0), np.arange(X.shape[1])]
    return np.vstack([first, other])


def _sample(part, rows, ids):
    X = part["X"] if rows is None else part["X"][rows]
    return X if ids is None else np.ascontiguousarray(X[:, ids])


def _fit_binner(p: BoosterParams, *samples) -> BinMapper:
    binner = BinMapper(
        p.max_bins, random_state=p.random_state, min_samples_bin=int(p.min_samples_bin)
    )
    return binner.fit(np.concatenate(samples))


def _label_pair_counts(part, objective) -> NDArray[np.int64]:
    """A partition's label pairs per query (``pair_method="all"``'s OLE pairs)."""
    ds = RankingDataset(X=None, y=part["y"], query_offsets=part["offsets"], weights=part["w"])
    return label_pairs_per_query(ds, objective)


def _init_partials(part) -> tuple[float, float, float, int]:
    """``(sum w*y, sum w, sum y, n)`` of a shard (mart's mean label)."""
    y = part["y"]
    w = np.ones_like(y) if part["w"] is None else part["w"].astype(np.float64)
    return float(np.dot(w, y)), float(w.sum()), float(y.sum()), int(y.shape[0])


class _Shard:
    """A worker's rows (whole queries): binned once, with its scores, gradients,
    histogram state and validation rows.  Lives on the worker as a Dask Actor."""

    def __init__(
        self,
        index,
        part,
        valid,
        binner,
        used_ids,
        params,
        q_lo,
        n_queries,
        n_out,
        init,
        resume,
        query_pairs=None,
        row_lo=0,
    ):
        """``valid``: ``(name, rows, y_max)`` per validation set with rows on this shard,
        ``y_max`` the largest label of the whole set (ERR's, as one machine's).
        ``query_pairs``: the driver's ``$LTRBOOST_MAX_QUERY_PAIRS`` (its text, None:
        unset), the per-query pair limit the objective checks here, not this worker's.
        ``row_lo``: the global number of the shard's first row (``quantized_gradients``
        rounds each row by its global number, as one machine does)."""
        self.query_pairs = query_pairs
        with _LOCK, using_query_pair_setting(query_pairs):
            self.index = index
            self.origin = part["origin"]  # for the errors of the setup; dropped after
            self.params = params
            self.n_threads = int(params.n_threads or 1)
            self.q_lo = int(q_lo)
            self.n_queries_total = int(n_queries)
            self.binner = binner
            self.ids = used_ids
            ds = RankingDataset(
                X=None, y=part["y"], query_offsets=part["offsets"], weights=part["w"]
            )
            self.ds = ds
            self.query_ids = part["qids"]  # to name a query in the OLE pair refusal
            self.objective = make_objective(params)
            if hasattr(self.objective, "curvature_deferred"):  # checked over all shards
                self.objective.curvature_deferred = True
            if hasattr(self.objective, "_seed_shard"):  # per-query seeds: global numbers
                self.objective._seed_shard = (self.n_queries_total, self.q_lo)
            self._guard(self.objective.prepare, ds)
            self.n = ds.n_samples
            self.X_binned = binner.transform(_sample(part, None, used_ids))
            self.missing_bin = binner.missing_bin_
            self.hist = LocalHistograms(
                self.X_binned, self.missing_bin, self.n_threads, row_start=row_lo
            )
            self.raw = np.empty((n_out, self.n), dtype=SCORE_DTYPE)
            self.raw[:] = np.asarray(init)[:, None]
            # init_model: its trees' scores, from the raw features (as Training.resume)
            packed = None if resume is None else pack_trees(*resume)
            if packed is not None:
                predict_raw(packed, part["X"], self.raw)
            self.g = np.zeros((n_out, self.n), dtype=G_H_DTYPE)
            self.h = np.zeros((n_out, self.n), dtype=G_H_DTYPE)
            self.averaged = self.objective.update_rule == "averaged"
            self.valid = []
            for name, vpart, y_max in valid:
                vds = RankingDataset(X=None, y=vpart["y"], query_offsets=vpart["offsets"])
                vX = binner.transform(_sample(vpart, None, used_ids))
                rv = np.empty((n_out, vds.n_samples), dtype=SCORE_DTYPE)
                rv[:] = np.asarray(init)[:, None]
                if packed is not None:
                    predict_raw(packed, vpart["X"], rv)
                try:
                    bound = self._guard(
                        _bind_metrics,
                        params,
                        self.objective,
                        vds,
                        max_grade=y_max,
                        origin=vpart["origin"],
                    )
                except LTRInputError as e:
                    err = LTRInputError(f"validation set {name!r}: {e}")
                    err.partition = getattr(e, "partition", None)
                    raise err from None
                for bm in bound:
                    if getattr(getattr(bm, "_evaluator", None), "pooled", False):
                        raise ValueError(
                            f"metric {bm.name!r} is pooled over all queries, not a mean "
                            "over queries: not available on Dask"
                        )
                self.valid.append((name, vds, vX, rv, bound))
            self.bag = None
            self.pairs = None
            self.origin = None

    def _guard(self, fn, *args, origin=None, **kwargs):
        """Run ``fn``; an input error names the input partition and the row there that
        it is about (``origin``: the rows', see :func:`_make_part`; default the
        shard's), as the user gave them: not the shard's row, grouped by qid."""
        src, rows = self.origin if origin is None else origin
        try:
            return fn(*args, **kwargs)
        except LTRInputError as e:
            match = _ROW_IN_MESSAGE.search(e.problem)
            r = int(match.group(1)) if match is not None else e.row
            if r is None or not 0 <= r < rows.shape[0]:
                raise _located(int(src[0]), e) from None  # a shard holds rows
            row = int(rows[r])
            problem = e.problem.replace(f"y[{r}]", f"y[{row}]", 1)
            raise _located(int(src[r]), LTRInputError(problem, row=row)) from None

    def gradients(self, it: int, chosen, ole_limit: int | None):
        """Round ``it``: gradients of every output, the bag (``chosen`` global query
        numbers or None) and the OLE pairs (``ole_limit``: the driver's pair limit, None
        without OLE); returns the number of pairs, a custom objective's curvature flags
        (None for others), the round's OLE count (``pair_engine.OleRoundCount``, or
        None), which the driver checks over all shards
        (``CustomObjective.check_curvature``, ``check_ole_round_counts``), and under
        ``random_strength > 0`` the shard's ``(sum g^2, sum h)`` for the noise's scale
        (None otherwise), and under ``quantized_gradients`` its gradients' and hessians'
        extremes (:func:`~ltrboost.quantize.quant_stats`; None otherwise)."""
        with (
            _LOCK,
            threads(self.n_threads),
            np.errstate(over="ignore", invalid="ignore"),
            using_query_pair_setting(self.query_pairs),  # the driver's, as in __init__
        ):
            raw = self.raw
            scores = raw / averaged_divisor(it) if self.averaged else raw
            n_out = raw.shape[0]
            s = scores[0] if n_out == 1 else scores
            g = self.g[0] if n_out == 1 else self.g
            h = self.h[0] if n_out == 1 else self.h
            self.objective.gradient_hessian(s, self.ds, g, h, iteration=it)
            curvature = getattr(self.objective, "curvature_flags", None)
            in_bag = None
            self.bag = None
            if chosen is not None:
                off = self.ds.query_offsets
                local = chosen[(chosen >= self.q_lo) & (chosen < self.q_lo + self.ds.n_queries)]
                local = local - self.q_lo
                sizes = off[local + 1] - off[local]
                rows = np.repeat(off[local] - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
                rows = rows + np.arange(int(sizes.sum()))
                self.bag = rows.astype(INDEX_DTYPE)
                in_bag = np.zeros(self.n, dtype=bool)
                in_bag[rows] = True
            self.pairs = None
            self.hist.end_pairs()  # the last tree's pairs go before this round's come
            counted = None
            if ole_limit is not None:
                # the limit is the whole round's: checked on the driver, over all shards
                with counting_ole_pairs(ole_limit, self.query_ids) as counted:
                    try:
                        self.pairs = self.objective.ole_pairs(
                            s, self.ds, iteration=it, in_bag=in_bag
                        )
                    except OlePairsOverLimit:  # over it alone: the round is refused
                        self.pairs = None
                if not counted.recorded:
                    counted = None  # an objective that does not count its pairs
            noise_sums = None
            if self.params.random_strength > 0:  # random_strength's scale, summed on the driver
                g64 = self.g[0].astype(np.float64)
                sum_h = (
                    float(self.n)
                    if self.params.split_criterion == "se"
                    else float(np.sum(self.h[0], dtype=np.float64))
                )
                noise_sums = (float(np.sum(g64 * g64)), sum_h)
            quant = None
            if self.params.quantized_gradients:  # the scales' extremes, combined on the driver
                quant = quant_stats(self.g[0], self.h[0])
            n_pairs = 0 if self.pairs is None else self.pairs.n_pairs
            return n_pairs, curvature, counted, noise_sums, quant

    def start_tree(self, k: int, feats, use_pairs: bool, quant=None):
        with _LOCK, threads(self.n_threads):
            self.feats = feats
            pairs = self.pairs if use_pairs else None
            return self.hist.start_tree(self.g[k], self.h[k], self.bag, feats, pairs, quant)

    def exact_sums(self, leaves):
        """The exact gradient and hessian sums of each of a quantised tree's leaves'
        rows on this shard (one round trip for the tree)."""
        with _LOCK:
            return [self.hist.exact_sums(r) for r in leaves]

    def root(self, rows):
        with _LOCK, threads(self.n_threads):
            return self.hist.root_histogram(rows)

    def build(self, rows):
        with _LOCK, threads(self.n_threads):
            return self.hist.node_histogram(rows)

    def split(self, rows, info, left_smaller: bool):
        """Split the node's rows; also build the smaller child's histogram and the
        children's OLE pair sums (0 without pairs): one round trip."""
        with _LOCK, threads(self.n_threads):
            left, right = self.hist.split_rows(rows, info)
            hist = self.hist.node_histogram(left if left_smaller else right)
            return left, right, hist, self.hist.pair_sum(left), self.hist.pair_sum(right)

    def pair_sum(self, rows):
        with _LOCK:
            return self.hist.pair_sum(rows)

    def pair_histogram(self, rows, feature_indices=None):
        with _LOCK, threads(self.n_threads):
            hist, psum = self.hist.pair_histogram(rows, feature_indices)
            return hist.copy(), psum  # the shard's buffer is overwritten by the next call

    def add_tree(self, it: int, k: int, nodes, leaves, learning_rate: float):
        """Add the tree to the training and validation scores; check them finite.
        Returns the shard's training scores' ``(min, max)`` (None without rows), which
        the driver merges to check that the tree did not make them one number."""
        from ltrboost._checks import check_round_finite

        with _LOCK, threads(self.n_threads), np.errstate(over="ignore", invalid="ignore"):
            self.hist.add_tree(nodes, leaves, self.raw[k])
            score_range = check_round_finite(
                it, gradients=self.g[k], hessians=self.h[k], leaf_values=nodes["value"],
                hessian_sums=nodes["sum_hessians"], scores=self.raw[k], params=self.params,
                train_set=self.ds,
                learning_rate=learning_rate,
            )  # fmt: skip
            for _, _, vX, rv, _ in self.valid:
                predict_binned_tree(nodes, vX, self.missing_bin, rv[k])
        return score_range

    def evaluate(self, it: int):
        """Per validation set, per metric: per-query values, or for a custom metric
        (any function of all the set's scores) the shard's ``(scores, labels,
        query_offsets)``, evaluated once on the driver."""
        out = {}
        with _LOCK, threads(self.n_threads):
            for name, _, _, rv, bound in self.valid:
                vscores = rv / averaged_divisor(it + 1) if self.averaged else rv
                ranked = self.objective.transform(vscores)
                res = []
                for bm in bound:
                    if hasattr(bm, "per_query"):
                        res.append(np.asarray(bm.per_query(ranked), dtype=np.float64))
                    else:
                        res.append((np.array(ranked), bm.y, bm.query_offsets))
                out[name] = res
        return out


# --------------------------------------------------------------------------- driver


#: seconds a shard's worker that could not be reached is given to leave the
#: scheduler's list (a killed worker's connection fails first), to name it lost
UNREACHABLE_GRACE_S = 5.0


class _Cluster:
    """The driver's handle of the shard actors: parallel calls, bounded waits."""

    def __init__(self, client, actors, creation, workers, partitions, timeout):
        self.client = client
        self.actors = actors
        self.creation = creation
        self.workers = workers
        self.partitions = partitions
        self.timeout = timeout
        self.stage = "setup"
        # traffic of the training steps (array payloads; a few hundred bytes of
        # framing per message come on top): see train(stats=)
        self.round_trips = 0
        self.bytes_to_driver = 0
        self.bytes_from_driver = 0

    def call(self, method: str, args_per_shard: Sequence[tuple]) -> list:
        """``method`` on every shard at once; results in shard order."""
        futs = []
        self.round_trips += 1
        self.bytes_from_driver += _payload_bytes(args_per_shard)
        for i, (a, args) in enumerate(zip(self.actors, args_per_shard, strict=True)):
            try:
                futs.append(getattr(a, method)(*args))
            except RuntimeError as e:  # "Worker holding Actor was lost"
                self._unreachable(i, e)
        out = [self._wait(i, f) for i, f in enumerate(futs)]
        self.bytes_to_driver += _payload_bytes(out)
        return out

    def same(self, method: str, *args) -> list:
        return self.call(method, [args] * len(self.actors))

    def _wait(self, i, fut):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return fut.result(timeout=1.0)
            except TimeoutError:
                pass
            except (OSError, CancelledError) as e:  # "Unable to contact Actor's worker",
                self._unreachable(i, e)  # or a closed client cancelled the shard's creation
            self._check_alive()
            if time.monotonic() > deadline:
                raise DistributedTrainingError(
                    f"{self._who(i)} did not answer within timeout={self.timeout} s "
                    f"({self.stage}); training stopped"
                )

    def _who(self, i) -> str:
        return _shard_name(self.workers[i], i, self.partitions[i])

    def _unreachable(self, i, e: BaseException):
        """Shard ``i``'s worker could not be reached: a killed worker's connection
        fails before the scheduler removes it, so wait a few seconds for the scheduler
        to say it was lost (or the client went away); still listed, say it could not
        be reached.  A DistributedTrainingError either way, never the bare error."""
        deadline = time.monotonic() + min(self.timeout, UNREACHABLE_GRACE_S)
        while True:
            self._check_alive()
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        raise DistributedTrainingError(
            f"{self._who(i)} could not be reached ({self.stage}): {str(e) or type(e).__name__}; "
            "training stopped. Its rows lived only there: train again (a callback saving "
            "env.snapshot() gives checkpoints to continue from with init_model=)"
        ) from e

    def _check_alive(self) -> None:
        try:
            info = {"workers": _scheduler_workers(self.client)}
        except Exception as e:  # a closed client raises many kinds
            info = {"error": e}
        if "workers" not in info:  # the client or the cluster was closed under us
            raise DistributedTrainingError(
                f"the Dask client or cluster went away ({self.stage}); training stopped"
            )
        alive = set(info["workers"])
        for i, w in enumerate(self.workers):
            if w not in alive or self.creation[i].status not in ("finished", "pending"):
                e = _lost_worker(
                    self._who(i),
                    self.stage,
                    "train again (a callback saving env.snapshot() gives checkpoints to "
                    "continue from with init_model=)",
                )
                if w in alive:  # its shard's creation failed or was cancelled
                    e.lost = None
                raise e


def _payload_bytes(obj) -> int:
    """Bytes of the NumPy arrays and numbers in ``obj`` (nested tuples/lists/dicts)."""
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, tuple | list):
        return sum(_payload_bytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(_payload_bytes(o) for o in obj.values())
    if isinstance(obj, int | float | np.generic):
        return 8
    return 0


class _RemotePairs:
    """The grower only asks how many pairs the round has (whether it has OLE pairs):
    the pairs themselves stay on the shards."""

    def __init__(self, n_pairs: int) -> None:
        self.n_pairs = n_pairs


class ShardedHistograms:
    """The grower's :class:`~ltrboost.histogram.HistogramBuilder` over remote shards.

    Same interface: every request goes to all shards at once and their partial results
    are reduced by :func:`~ltrboost.histogram.reduce_histograms` in shard order.  Row
    handles are tuples of one :class:`~ltrboost.histogram.RowRange` per shard.
    """

    partition = None

    def __init__(self, cluster: _Cluster, n_features: int, missing_bin: int) -> None:
        self.cluster = cluster
        self.n_features = n_features
        self.missing_bin = missing_bin
        self.pool = HistogramPool(n_features, missing_bin + 1)
        self.output = 0
        self._pending: dict[int, NDArray] = {}
        self._pair_sums: dict[int, float] = {}
        self._use_pairs = False

    def start_tree(self, gradients, hessians, sample_indices, feature_indices, pairs, quant=None):
        self._features = feature_indices
        self._pending.clear()
        self._pair_sums.clear()
        self._use_pairs = pairs is not None
        return tuple(
            self.cluster.same("start_tree", self.output, feature_indices, pairs is not None, quant)
        )

    def exact_leaf_sums(self, leaves) -> list[tuple[float, float]]:
        """Every leaf's exact sums, over the shards in order: one round trip."""
        parts = self.cluster.call(
            "exact_sums", [([r[s] for r in leaves],) for s in range(len(self.cluster.actors))]
        )
        out = []
        for k in range(len(leaves)):
            g = h = 0.0
            for part in parts:
                g += part[k][0]
                h += part[k][1]
            out.append((g, h))
        return out

    def _reduce(self, parts, features):
        if len(parts) == 1:
            return parts[0]
        return reduce_histograms(parts, self.pool.get(), features)

    def root(self, rows, feature_indices) -> NodeHistogram:
        parts = self.cluster.call("root", [(r,) for r in rows])
        sum_g, sum_h, count = parts[0][1:]
        for p in parts[1:]:
            sum_g += p.sum_gradients
            sum_h += p.sum_hessians
            count += p.count
        return NodeHistogram(
            self._reduce([p.hist for p in parts], feature_indices), sum_g, sum_h, count
        )

    def split(self, rows, info):
        left_smaller = info.count_left <= info.count_right  # the grower's choice
        res = self.cluster.call("split", [(r, info, left_smaller) for r in rows])
        left = tuple(r[0] for r in res)
        right = tuple(r[1] for r in res)
        self._pending[id(left if left_smaller else right)] = self._reduce(
            [r[2] for r in res], self._features
        )
        for child, k in ((left, 3), (right, 4)) if self._use_pairs else ():
            total = 0.0
            for r in res:
                total += r[k]
            self._pair_sums[id(child)] = total
        return left, right

    def build(self, rows, feature_indices):
        hist = self._pending.pop(id(rows), None)
        if hist is not None:
            return hist
        return self._reduce(self.cluster.call("build", [(r,) for r in rows]), feature_indices)

    def subtract(self, parent, child, feature_indices):
        subtract_histograms(parent, child, feature_indices)
        return parent

    def release(self, hist) -> None:
        if hist is not None:
            self.pool.release(hist)

    def pair_sum(self, rows) -> float:
        total = self._pair_sums.pop(id(rows), None)
        if total is not None:  # a child's: came with its split
            return total
        total = 0.0
        for v in self.cluster.call("pair_sum", [(r,) for r in rows]):
            total += v
        return total

    def end_pairs(self) -> None:
        """Nothing to send: each shard drops a tree's pairs when it computes the next
        round's (``_Shard`` round setup), saving a round trip per tree."""

    def pair_histogram(self, rows, feature_indices):
        parts = self.cluster.call("pair_histogram", [(r, feature_indices) for r in rows])
        total = (
            parts[0][0]
            if len(parts) == 1
            else reduce_histograms([p[0] for p in parts], None, feature_indices)
        )
        psum = parts[0][1]
        for p in parts[1:]:
            psum += p[1]
        return total, psum


def _unsupported(objective, params) -> str | None:
    cls = type(objective)
    if objective.leaf_rule == "line_search":
        return "its line search needs every row's scores"
    if cls.n_outputs is not Objective.n_outputs:
        return "it has several outputs"
    if cls.init_score is not Objective.init_score and objective.name != "mart":
        return "its initial score depends on all the data"
    if getattr(objective, "params", {}).get("lambda_metric") == "err":
        return "ERR lambdas normalise by the largest label of all the data"
    if getattr(objective, "unbiased", False):
        return "unbiased=True estimates position biases from all the data's pairs"
    return None


class _DaskTraining(Training):
    """:class:`~ltrboost.booster.Training` whose data steps run on the shards."""

    def __init__(
        self, client, params, objective, train, valid, timeout, init_model=None, made=None
    ):
        """``made``: a list the futures of the set-up are added to (for :func:`_cancel`)."""
        self.t_start = time.perf_counter()
        self.params = params
        self.objective = objective
        self.n_threads = int(params.n_threads or 1)
        self.rng = np.random.default_rng(params.random_state)
        self.n_out = 1
        self.score_range: tuple[float, float] | None = None  # the collapse check's
        self.averaged = objective.update_rule == "averaged"
        futures, metas, feature_names = train
        self.train_set = types.SimpleNamespace(feature_names=feature_names)
        sizes = np.concatenate([m["sizes"] for m in metas])
        self.query_offsets = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.query_offsets[1:])
        self.n = int(self.query_offsets[-1])
        # partitions -> workers in contiguous blocks, in sorted worker order
        workers = sorted(_scheduler_workers(client))
        if not workers:
            raise DistributedTrainingError("the Dask cluster has no workers")
        n_parts = len(futures)
        n_shards = min(len(workers), n_parts)
        blocks = [
            [j for j in range(n_parts) if j * n_shards // n_parts == s] for s in range(n_shards)
        ]
        shard_workers = [workers[s] for s in range(n_shards)]
        data = [
            client.submit(_concat_parts, *[futures[j] for j in b], workers=[w], pure=False)
            for b, w in zip(blocks, shard_workers, strict=True)
        ]
        _hold(made, data)
        row_lo = [0]
        q_lo = [0]
        for b in blocks:
            row_lo.append(row_lo[-1] + sum(metas[j]["n"] for j in b))
            q_lo.append(q_lo[-1] + sum(len(metas[j]["qids"]) for j in b))
        partitions = [[i for j in b for i in metas[j]["index"]] for b in blocks]
        pinned = {w: _shard_name(w, s, partitions[s]) for s, w in enumerate(shard_workers)}
        # features: which vary (two rows per shard), bins (the local sample's rows)
        summaries = _gather(
            client,
            [
                client.submit(_column_summary, d, workers=[w], pure=False)
                for d, w in zip(data, shard_workers, strict=True)
            ],
            timeout,
            "finding the constant features",
            pinned,
        )
        self.used = UsedFeatures(np.vstack(summaries))
        self.n_features = self.used.n_features
        p = params
        ole = p.split_criterion == "ole" and objective.is_pairwise
        check_histogram_memory(self.used, p, self.n, ole)
        if ole and counts_ole_pairs_up_front(objective, p.subsample < 1):
            # before the bins, as locally (a shard saw only its own queries' pairs)
            self._refuse_ole_pairs(client, futures, metas, timeout)
        rows = None  # BinMapper.fit's draw over the global rows, when it subsamples
        if self.n > DEFAULT_SUBSAMPLE:
            rng = np.random.default_rng(p.random_state)
            rows = np.sort(rng.choice(self.n, DEFAULT_SUBSAMPLE, replace=False))
        ids = None if self.used.all_used else self.used.ids
        samples = []
        for s, (d, w) in enumerate(zip(data, shard_workers, strict=True)):
            r = None
            if rows is not None:
                lo, hi = row_lo[s], row_lo[s + 1]
                r = rows[(rows >= lo) & (rows < hi)] - lo
            samples.append(client.submit(_sample, d, r, ids, workers=[w], pure=False))
        _hold(made, samples)
        self.binner = _gather(
            client,
            client.submit(_fit_binner, p, *samples, workers=[shard_workers[0]], pure=False),
            timeout,
            "fitting the bin edges",
            pinned,
        )
        del samples
        # initial score
        init = np.zeros(1, dtype=np.float64)
        if type(objective).init_score is not Objective.init_score:  # mart
            parts = _gather(
                client,
                [
                    client.submit(_init_partials, d, workers=[w], pure=False)
                    for d, w in zip(data, shard_workers, strict=True)
                ],
                timeout,
                "the initial score",
                pinned,
            )
            wy, ws, ys, ns = (sum(v) for v in zip(*parts, strict=True))
            if objective.params.get("init") != "zero" and ns > 0:
                init[0] = wy / ws if ws > 0 else ys / ns
        self.init = init
        resume = None
        if init_model is not None:
            # before the shards replay its trees on their raw rows (a kernel reading
            # feature columns the rows do not have)
            check_resumable(init_model, objective, self.n_out, self.n_features)
            # the model's own initial score (as Training.resume), not this data's mean
            init = self.init = np.asarray(init_model.init_score, dtype=np.float64).reshape(1)
            done = init_model.n_iterations
            resume = (init_model.trees[:done], init_model.tree_outputs[:done])
        # validation partitions go to the same workers, in contiguous blocks
        valid_data = [[] for _ in range(n_shards)]
        self.valid_names = []
        for name, (vfut, _, _) in valid:
            self.valid_names.append(name)
            m = len(vfut)
            for j in range(m):
                valid_data[j * n_shards // m].append((name, j))
        shard_valid = []
        for s in range(n_shards):
            entries = []
            for name, (vfut, vmetas, _) in valid:
                mine = [vfut[j] for (nm, j) in valid_data[s] if nm == name]
                if mine:
                    entries.append(
                        (
                            name,
                            client.submit(
                                _concat_parts, *mine, workers=[shard_workers[s]], pure=False
                            ),
                            max(m["y_max"] for m in vmetas),
                        )
                    )
            shard_valid.append(entries)
        _hold(made, [f for entries in shard_valid for _, f, _ in entries])
        # the per-query pair limit the shards' objectives check: the driver's, as locally
        query_pairs = query_pair_setting()
        creation = [
            client.submit(
                _Shard,
                s,
                data[s],
                shard_valid[s],
                self.binner,
                ids,
                p,
                q_lo[s],
                len(sizes),
                1,
                init,
                resume,
                query_pairs,
                row_lo[s],
                workers=[shard_workers[s]],
                actor=True,
                allow_other_workers=False,
                pure=False,
            )
            for s in range(n_shards)
        ]
        _hold(made, creation)
        self.cluster = _Cluster(
            client, [None] * n_shards, creation, shard_workers, partitions, timeout
        )
        self.cluster.stage = "binning the shards"
        self.cluster.actors = [self.cluster._wait(s, f) for s, f in enumerate(creation)]
        del data, shard_valid
        self.builder = ShardedHistograms(self.cluster, self.used.n_used, self.binner.missing_bin_)
        self.grower = TreeGrower(
            None,
            self.binner.n_bins_non_missing_,
            self.binner.missing_bin_,
            self.binner.thresholds_matrix(),
            GrowerParams(**p.tree_kwargs()),
            n_threads=self.n_threads,
            histograms=self.builder,
        )
        from ltrboost.booster import metric_names

        self.metric_names = metric_names(p, objective)
        from ltrboost._evaluation import _metrics

        self._custom_metrics = {n: fn for n, fn in _metrics(p, objective) if fn is not None}
        self.valid = [types.SimpleNamespace(name=n) for n in self.valid_names]
        self.trees = []
        self.outputs = []
        self.evals_result = {n: {m: [] for m in self.metric_names} for n in self.valid_names}
        self.best_score = None
        self.best_iter = 0
        self.learning_rate = float(
            objective.default_learning_rate if p.learning_rate is None else p.learning_rate
        )

    def _refuse_ole_pairs(self, client, futures, metas, timeout: float) -> None:
        """``refuse_ole_pairs_up_front`` of local training on the whole training set:
        each partition counts its queries' label pairs (O(queries) to the driver),
        refused over ``$LTRBOOST_MAX_OLE_PAIRS`` with the local message."""
        what = "counting the OLE pairs"
        counts = client.map(_label_pair_counts, futures, objective=self.objective, pure=False)
        per_query = np.concatenate(_gather(client, counts, timeout, what))
        ids = types.SimpleNamespace(
            query_ids=np.concatenate([m["qids"] for m in metas]),
            query_offsets=self.query_offsets,
        )
        refuse_ole_pair_counts(per_query, ids, self.objective)

    def draw_bag(self):
        """The bag's query numbers (None: all), drawn as ``booster._draw_bag`` draws."""
        p = self.params
        if p.subsample >= 1.0:
            return None
        n_queries = self.query_offsets.shape[0] - 1
        k = max(1, int(round(p.subsample * n_queries)))
        return np.sort(self.rng.choice(n_queries, size=k, replace=False))

    def resume_history(self, recorded: dict, done: int) -> bool:
        """The recorded history of the resumed rounds, continued as it is: the shards
        hold the validation scores, so it is not checked against them here (local
        training recomputes a history recorded on other data, see
        :meth:`ltrboost.booster.Training.resume_history`)."""
        for name, res in recorded.items():
            if name in self.evals_result:
                for m, vals in res.items():
                    if m in self.evals_result[name]:
                        self.evals_result[name][m].extend(vals[:done])
        return True

    def replay_scores(self) -> None:
        """Nothing to do: each shard replayed the init model's trees when it was made."""

    def boost_round(self, it: int, gradients=None, hessians=None) -> None:
        p = self.params
        c = self.cluster
        c.stage = f"round {it + 1}"
        chosen = self.draw_bag()
        ole = p.split_criterion == "ole" and self.objective.is_pairwise
        limit = max_ole_pairs() if ole else None  # the driver's, as locally
        answers = c.same("gradients", it, chosen, limit)
        n_pairs = sum(a[0] for a in answers)
        flags = [a[1] for a in answers if a[1] is not None]
        if flags:  # a custom objective's "hess is 0 for every document", over all rows
            self.objective.check_curvature(it, *(any(f[k] for f in flags) for k in range(3)))
        if ole:  # the round's pairs over all shards, as one process's
            check_ole_round_counts([a[2] for a in answers], self.objective, it, limit)
        pairs = _RemotePairs(n_pairs) if ole else None
        feats = self.used.to_compact(self.draw_features())
        self.builder.output = 0
        noise = None
        if p.random_strength > 0:  # the scale over every shard's rows, in shard order
            sum_g2 = sum_h = 0.0
            for a in answers:
                sum_g2 += a[3][0]
                sum_h += a[3][1]
            noise = self.noise_of(it, 0, sum_g2, sum_h)
        extra = {} if noise is None else {"split_noise": noise}  # as Training.boost_round
        if p.quantized_gradients:  # the scales over every shard's rows
            stats = [a[4] for a in answers]
            extra["quantize"] = spec_from_stats(
                int(p.quantized_gradients),
                quant_seed(p.random_state, it, 0),
                max(s[0] for s in stats),
                min(s[1] for s in stats),
                max(s[2] for s in stats),
            )
        grown = self.grower.grow(None, None, chosen, feats, pairs, **extra)
        self.warn_if_flat_root(it)
        nodes = grown.nodes
        nodes["value"] *= self.learning_rate
        ranges = c.call(
            "add_tree",
            [
                (it, 0, nodes, [(r[s], i) for r, i in grown.leaves], self.learning_rate)
                for s in range(len(c.actors))
            ],
        )
        # every shard's scores: the check a single process makes (check_round_finite)
        ranges = [r for r in ranges if r is not None]
        merged = (min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges else None
        check_scores_collapsed(
            it, self.score_range, merged, nodes["value"], params=p,
            learning_rate=self.learning_rate,
        )  # fmt: skip
        self.score_range = merged
        self.trees.append(self.used.to_original(nodes))
        self.outputs.append(0)

    def evaluate(self, iteration: int):
        evaluation = {}
        if not self.valid_names:
            return evaluation
        from ltrboost.metrics.registry import _mean

        per_shard = self.cluster.same("evaluate", iteration)
        # a shard answers for the validation sets it holds rows of
        for name in self.valid_names:
            res = {}
            for m, mname in enumerate(self.metric_names):
                arrays, parts = [], []
                for shard in per_shard:
                    if name in shard:
                        item = shard[name][m]
                        (parts if isinstance(item, tuple) else arrays).append(item)
                if arrays:
                    val = float(_mean(np.concatenate(arrays)))
                else:  # a custom metric: once, on every shard's rows in shard order
                    val = self._custom_metric(mname, parts)
                res[mname] = val
                self.evals_result[name][mname].append(val)
            evaluation[name] = res
        return evaluation

    def _custom_metric(self, name: str, parts: list) -> float:
        """A user metric ``f(scores, labels, query_offsets)`` on the validation rows of
        every shard, concatenated in shard order: the value local training computes on
        the same rows (not a mean of per-shard values, which is right only for a metric
        that is itself a mean over queries)."""
        fn = self._custom_metrics[name]
        scores = np.concatenate([p[0] for p in parts])
        labels = np.concatenate([p[1] for p in parts])
        offsets, start = [np.zeros(1, dtype=np.int64)], 0
        for _, _, off in parts:
            offsets.append(np.asarray(off[1:], dtype=np.int64) + start)
            start += int(off[-1])
        return custom_metric_value(fn, scores, labels, np.concatenate(offsets))

    def run(self, callbacks=(), init_model=None) -> Booster:
        start_iter = 0 if init_model is None else self.resume(init_model)
        n_estimators = int(self.params.n_estimators)
        for it in range(start_iter, n_estimators):
            self.boost_round(it)
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


# --------------------------------------------------------------------------- public API


def _set_up(client, params, objective, tr, vs, timeout, init_model) -> _DaskTraining:
    """The shards made on the workers there are.  A worker lost before round 1 (its
    shard, or the rows it was to get, gone): made again on the remaining workers, with
    a warning, up to :data:`SETUP_ATTEMPTS` times.  No round has run: the input
    partitions (recomputed by Dask where the lost worker held them) are all there is,
    so the model is that of a run started on those workers (the same trees; the sums of
    fewer shards may round differently, as on any other number of workers)."""
    for attempt in range(1, SETUP_ATTEMPTS + 1):
        made: list = []
        try:
            return _DaskTraining(client, params, objective, tr, vs, timeout, init_model, made)
        except DistributedTrainingError as e:
            n = _n_workers(client)
            if e.lost is None or not n or attempt == SETUP_ATTEMPTS:
                raise
            _cancel(client, made)  # the shards made so far and the tasks pinned to them
            warnings.warn(
                f"{e.lost} was lost while the shards were set up ({e.stage}); setting "
                f"them up again on the {n} remaining worker{'s' if n > 1 else ''} (no "
                "round had run: the model is that of a run started on them)",
                UserWarning,
                stacklevel=external_stacklevel(),
            )
    raise AssertionError("unreachable")  # pragma: no cover


def _on_cluster(
    client, data: DaskData, regroup: bool, what: str, timeout: float, columns=None, inputs=None
):
    """Validated partitions (futures on the workers) with every query whole;
    ``columns``: the training feature names (a validation frame's, by name);
    ``inputs``: a list the lists of futures it makes (the input partitions, those
    made from them) are added to, in the order they are made (for :func:`_cancel`)."""
    if not isinstance(data, DaskData):
        raise TypeError(f"{what} must be a DaskData(X, y, qid), not {type(data).__name__}")
    prefix = what if what.startswith("validation set") else None
    try:
        parts, feature_names = _input_parts(data, columns, prefix)
    except LTRInputError as e:  # found on the driver: a validation set's is named too
        if prefix is None or str(e).startswith(f"{prefix}: "):
            raise
        raise LTRInputError(f"{prefix}: {e}") from None
    futures = client.compute(parts)
    _hold(inputs, futures)
    if columns is None and feature_names is not None and "qid" in feature_names:
        futures, feature_names = _qid_column(client, futures, feature_names, what, timeout)
        _hold(inputs, futures)
    futures, metas = _queries_whole(client, futures, regroup, what, timeout, inputs)
    if not futures:
        raise LTRInputError(f"{what} is empty")
    if data.sample_weight is not None and not any(m["weighted"] for m in metas):
        raise LTRInputError(f"{what}: {ALL_ZERO_WEIGHTS}")
    return futures, metas, feature_names


def _hold(held: list | None, futures: list) -> None:
    """Add ``futures`` (one step's) to ``held``, the lists :func:`_cancel` cancels."""
    if held is not None:
        held.append(list(futures))


def _cancel(client, held: list) -> None:
    """Cancel the futures of ``held`` (lists, in the order they were made) and every
    task made from them (best effort: the client may be closed).

    The newest first, one list at a time: a regrouping's pieces (:func:`_move_out`,
    :func:`_split_part`, :func:`_pick`), which no future holds, live on in the
    scheduler while the partitions made from them do, and cancelling the input
    partitions first reached them: distributed's scheduler fails an assertion on a
    dependent no client wants and drops the client's connection, which cancels every
    future of the client (the user's own too).  Cancelled first, the regrouped
    partitions take their pieces with them."""
    for futures in reversed(held):
        if futures:
            with contextlib.suppress(Exception):
                client.cancel(futures)


def _check_dask_options(regroup: Any, timeout: Any) -> None:
    """``regroup`` a bool, ``timeout`` a positive finite number of seconds (distributed
    fails on others with messages that name neither)."""
    if not isinstance(regroup, bool | np.bool_):
        raise ValueError(f"regroup={regroup!r} must be True or False")
    if (
        isinstance(timeout, bool | np.bool_)
        or not isinstance(timeout, int | float | np.integer | np.floating)
        or not (math.isfinite(timeout) and timeout > 0)
    ):
        raise ValueError(f"timeout={timeout!r} must be a positive finite number of seconds")


def _check_train_inputs(client, valid_sets, init_model) -> list:
    """``client`` a ``distributed.Client``, the validation sets as a list of ``(str
    name, DaskData)`` pairs (the name keys ``evals_result``, in memory and in the model
    file), ``init_model`` a Booster: a TypeError naming the expected types, as
    :func:`ltrboost.train` raises, before any work on the cluster."""
    from distributed import Client

    if not isinstance(client, Client):
        raise TypeError(f"client must be a distributed.Client, not {type(client).__name__}")
    if client.status in ("closing", "closed"):  # was distributed's ClosedClientError
        raise DistributedTrainingError(
            f"the Dask client is closed (its status is {client.status!r}; closing its "
            "cluster closes it too): nothing was trained; start a new distributed.Client"
        )
    valid_sets = list(valid_sets)
    for k, entry in enumerate(valid_sets):
        if not (isinstance(entry, tuple | list) and len(entry) == 2):
            raise TypeError(
                f"valid_sets[{k}] must be a pair (name, DaskData), not {type(entry).__name__}"
            )
        valid_sets[k] = (str(entry[0]), entry[1])
    if init_model is not None and not isinstance(init_model, Booster):
        raise TypeError(
            "init_model must be a Booster (ltrboost.load_model(path) reads one; "
            f"DaskRanker.fit takes a path or a fitted Ranker too), not {type(init_model).__name__}"
        )
    return valid_sets


def train(
    client,
    params: BoosterParams | dict[str, Any],
    train: DaskData,
    valid_sets: Sequence[tuple[str, DaskData]] = (),
    *,
    callbacks: Sequence[Callable[[CallbackEnv], bool | None]] = (),
    regroup: bool = True,
    timeout: float = 600.0,
    stats: dict[str, Any] | None = None,
    init_model: Booster | None = None,
) -> Booster:
    """Train a ranker on a Dask cluster; returns a plain :class:`~ltrboost.Booster`.

    Parameters
    ----------
    client : distributed.Client
    params : BoosterParams or dict
        As :func:`ltrboost.train`; ``n_threads`` is the Numba threads of each worker
        (default 1 here: give each Dask worker one thread per core it may use).
    train : DaskData
    valid_sets : sequence of (name, DaskData)
        Scored on the workers after every round; the first drives early stopping.
    callbacks : as :func:`ltrboost.train` (``env.snapshot()`` gives the model so far,
        e.g. for checkpoints).
    regroup : bool, default=True
        A query found in two partitions: make it whole (True: move the few cut
        queries each to the first partition holding it, or, for interleaved data,
        shuffle the rows by ``hash(qid)`` once; see the module docstring) or raise
        :class:`~ltrboost.dataset.LTRInputError` naming the query and the two
        partitions (False).
    timeout : float, default=600
        Seconds a step may wait for a worker before :class:`DistributedTrainingError`;
        a lost worker is reported within about a second, a failed task's error as soon
        as the tasks before it are done (README, *Faults*); a cluster without workers
        is waited for (workers joining late) up to ``timeout``, then named as such.
    stats : dict, optional
        Filled with the traffic of the boosting rounds (after setup): ``shards``,
        ``trees`` (grown by this call, not an ``init_model``'s), ``round_trips``,
        ``bytes_to_driver`` and ``bytes_from_driver`` (the NumPy payloads: histograms,
        row ranges, trees, metric values).
    init_model : Booster, optional
        Continue from this model (e.g. a checkpoint saved by a callback from
        ``env.snapshot()``) up to ``n_estimators`` rounds in all, as
        :func:`ltrboost.train`: the shards replay its trees on their rows, and the same
        data and parameters give the same model as an uninterrupted run.

    Warns
    -----
    SharedQueriesWarning
        As :func:`ltrboost.train`, for each validation set that shares query ids with
        ``train``, from the query ids the driver holds (no pass over the rows); not for
        ``train`` given again (the same DaskData, or the same ``X``, ``y``, ``qid``
        collections), but for an equal copy under another Dask graph, which local
        training recognises by its values.
    """
    _check_dask_options(regroup, timeout)
    if stats is not None and not isinstance(stats, dict):  # filled after the last round
        raise TypeError(f"stats must be a dict to fill, not {type(stats).__name__}")
    valid_sets = _check_train_inputs(client, valid_sets, init_model)
    callbacks = check_callbacks(callbacks)
    params = as_params(params)
    objective = make_objective(params)
    why = _unsupported(objective, params)
    if why is not None:
        raise ValueError(
            f"objective {objective.name!r} cannot be trained on Dask: {why}; train it locally"
        )
    check_metrics(params, objective)
    check_training_setup(params, objective, valid_sets)
    callbacks = check_callbacks(callbacks)  # before any data moves, as locally
    # every set's input partitions, then the shards made from them: cancelled at the
    # end, which frees everything made from them on the workers, also when training
    # fails while the traceback (an interactive session keeps the last) holds futures
    inputs: list = []
    try:
        # a warm start takes the frame's columns by the init model's names, as locally
        init_names = None if init_model is None else init_model.feature_names
        tr = _on_cluster(client, train, regroup, "the training set", timeout, init_names, inputs)
        _check_training_labels(client, objective, tr, timeout)  # before more data moves
        vs = [
            (n, _on_cluster(client, d, regroup, f"validation set {n!r}", timeout, tr[2], inputs))
            for n, d in valid_sets
        ]
        for n, (_, metas, _) in vs:  # the shards would take a wider set's columns by position
            if metas[0]["width"] != tr[1][0]["width"]:
                raise LTRInputError(
                    f"validation set {n!r} has {metas[0]['width']} features but the training "
                    f"set has {tr[1][0]['width']}"
                )
        # as ltrboost.train warns, from the partitions' summaries (no pass over the rows)
        _warn_if_validation_shares_queries(train, valid_sets, tr[1], vs)
        warn_if_early_stopping_blind(
            params, objective, [(n, _graded_summary(m)) for n, (_, m, _) in vs[:1]]
        )
        _warn_if_threshold_flat(client, params, objective, vs, timeout)
        metas = tr[1]
        labels = _label_summary(metas)
        with np.errstate(over="ignore", invalid="ignore"):
            run = _set_up(client, params, objective, tr, vs, timeout, init_model)
            del tr, vs  # the shards hold their rows (binned) now: free the input partitions
            inputs[:] = [run.cluster.creation]  # and cancel the shards at the end
            if run.used.n_used:  # as ltrboost.train warns
                warn_if_no_split_possible(params, labels)
                warn_if_colsample_misses(params, run.used)
            c = run.cluster
            c.round_trips = c.bytes_to_driver = c.bytes_from_driver = 0
            try:
                model = run.run(callbacks, init_model)
            finally:
                if stats is not None:
                    stats.update(
                        shards=len(c.actors),
                        trees=len(run.trees) - (init_model.n_iterations if init_model else 0),
                        round_trips=c.round_trips,
                        bytes_to_driver=c.bytes_to_driver,
                        bytes_from_driver=c.bytes_from_driver,
                    )
                c.actors = []
        if run.used.n_used and 2 * int(params.min_samples_leaf) <= labels.n_samples:
            b = run.binner
            one_bin = bool(((b.n_bins_non_missing_ <= 1) & ~b.has_missing_).all())
            zero = any(m["zero_weights"] for m in metas)
            warn_if_constant_model(params, objective, model, labels, one_bin, zero)
    finally:
        _cancel(client, inputs)
    return model


def _predict_frame(df, booster, iteration, explain=None, partition_info=None):
    """One partition's scores (``explain`` None), or its ``pred_contrib`` /
    ``pred_leaf`` rows (``explain`` a dict of those keywords) as a DataFrame with the
    partition's index and columns 0, 1, ...: its columns taken as ``Booster.predict``
    takes a DataFrame's (by name, numeric or nullable, ``<NA>`` missing).  An input
    error is ``partition N: row R: problem``, as training names a partition's row."""
    try:
        if explain:
            return pd.DataFrame(booster.predict(df, iteration=iteration, **explain), index=df.index)
        return pd.Series(booster.predict(df, iteration=iteration), index=df.index)
    except LTRInputError as e:
        if partition_info is None:
            raise
        raise _located(int(partition_info["number"]), e) from None


def _predict_block(block, booster, iteration, explain=None, block_info=None):
    """One chunk's scores (or its ``pred_contrib`` / ``pred_leaf`` rows, ``explain``
    a dict of those keywords), the chunk taken as ``Booster.predict`` takes an array
    (or a SciPy sparse matrix): as it is, so that text, complex numbers or dates are
    refused as locally (a conversion to float64 here parsed "1.5", dropped imaginary
    parts and read dates as numbers).  An input error is ``partition N: row R:
    problem``, N the chunk's index along the rows, R its row there (as training names
    them)."""
    try:
        return booster.predict(block, iteration=iteration, **(explain or {}))
    except LTRInputError as e:
        if not block_info or 0 not in block_info:
            raise
        raise _located(int(block_info[0]["chunk-location"][0]), e) from None


class DaskRanker(Ranker):
    """:class:`~ltrboost.Ranker` trained on a Dask cluster (see the module docstring).

    Parameters: every :class:`~ltrboost.Ranker` parameter, plus

    client : distributed.Client, optional
        Default: the current default client (``distributed.default_client()``).
    regroup : bool, default=True
        See :func:`train`.
    timeout : float, default=600
        See :func:`train`.

    Attributes: those of :class:`~ltrboost.Ranker` (``booster_`` a plain Booster).
    """

    def __init__(self, *, client=None, regroup: bool = True, timeout: float = 600.0, **params):
        super().__init__(**params)
        self.client = client
        self.regroup = regroup
        self.timeout = timeout

    def fit(  # type: ignore[override]
        self,
        X: Any,
        y: Any,
        *,
        qid: Any = None,
        sample_weight: Any = None,
        eval_set: Sequence[tuple] | None = None,
        eval_names: Sequence[str] | None = None,
        eval_qid: Sequence[Any] | None = None,
        eval_metric: str | list[str] | None = None,
        early_stopping_rounds: int | None = None,
        callbacks: Sequence[Callable[[CallbackEnv], bool | None]] = (),
        init_model: Booster | Ranker | str | None = None,
        verbose: int | bool | None = None,
    ) -> DaskRanker:
        """Fit on Dask data: ``X`` a dask DataFrame (may hold a ``qid`` column) or dask
        array; ``y`` a Dask Series/array with the same partitions; ``qid`` a column
        name, Dask Series or array.  ``eval_set``: list of ``(X, y)`` or
        ``(X, y, qid)`` (or ``eval_qid``, one entry per set).  ``init_model``: a
        Booster, fitted Ranker or model file path to continue from (``n_estimators``
        more rounds).  The other arguments and the checks before training are those of
        :meth:`Ranker.fit`."""
        from distributed import default_client

        params = self._booster_params(
            eval_metric=eval_metric, early_stopping_rounds=early_stopping_rounds
        )
        self._check_estimator_params()
        eval_set, eval_names = check_eval_set(eval_set, eval_names)
        if eval_qid is not None and len(eval_qid) != len(eval_set):
            raise ValueError(
                f"eval_qid has {len(eval_qid)} entries but eval_set has {len(eval_set)}"
            )
        valid = []
        for k, es in enumerate(eval_set):
            es = tuple(es)
            if len(es) != 2 and not (len(es) == 3 and eval_qid is None):
                shapes = (
                    "(X, y), its queries from eval_qid"
                    if eval_qid is not None
                    else "(X, y) or (X, y, qid)"
                )
                raise ValueError(f"eval_set[{k}] has {len(es)} elements; each must be {shapes}")
            vq = es[2] if len(es) > 2 else (eval_qid[k] if eval_qid is not None else None)
            name = eval_names[k] if eval_names else f"valid_{k}"  # a name 0 is "0"
            valid.append((name, DaskData(es[0], es[1], vq)))
        client = self.client
        if client is None:
            try:
                client = default_client()
            except ValueError:  # distributed's "No clients found" and three lines of help
                raise ValueError(
                    "DaskRanker.fit needs a Dask client: pass client= or start a "
                    "distributed.Client first (none is running in this process)"
                ) from None
        init_model = _as_booster(init_model)  # a path may be a pathlib.Path too
        if init_model is not None:
            params.validate()  # n_estimators as given, as Ranker.fit checks it
            params.n_estimators = init_model.n_iterations + params.n_estimators
        period, callbacks = self._logging_callbacks(verbose, callbacks)
        self.booster_ = train(
            client,
            params,
            DaskData(X, y, qid, sample_weight),
            valid,
            callbacks=callbacks,
            regroup=self.regroup,
            timeout=self.timeout,
            init_model=init_model,
        )
        self._set_fitted(period, params, eval_metric)
        return self

    def predict(  # type: ignore[override]
        self,
        X: Any,
        *,
        iteration: int | None = None,
        pred_contrib: bool = False,
        pred_leaf: bool = False,
    ):
        """Lazy scores: a Dask Series (DataFrame input: the features taken by name, a
        missing one refused at once; other columns, such as the qid and the labels, are
        ignored) or a 1-D Dask array, partition by partition with the plain booster.

        ``pred_contrib=True`` / ``pred_leaf=True``: :meth:`ltrboost.Ranker.predict`'s
        rows instead, partition by partition: a Dask DataFrame (the input's index,
        columns ``0, 1, ...``, as LightGBM's Dask estimators give them) or a 2-D Dask
        array, float64 contributions or int32 leaf indices."""
        self._check_fitted()
        booster = self.booster_
        # checked here as Ranker.predict checks it (the default: the best iteration)
        n_iter = booster._resolve_iterations(iteration)
        explain = {"pred_contrib": True} if pred_contrib else {}
        if pred_leaf:
            explain["pred_leaf"] = True
        if _is_dask_frame(X) and hasattr(X, "columns"):
            # each partition's columns by the names of the meta (another order in a
            # partition, a read_csv file's: by name, as compute() takes them)
            X = X.map_partitions(_partition_listed_columns, list(X.columns), meta=X._meta)
            names = booster.feature_names
            if names is not None:  # the features by name; others (labels, qid) unused
                label = {str(c): c for c in X.columns}  # names as Ranker.predict reads them
                # a missing feature: Ranker.predict's error, now (not at compute time)
                select_columns(X._meta[[label[n] for n in names if n in label]], names)
                X = X[[label[n] for n in names]]
                if any(not isinstance(c, str) for c in X.columns):  # integer labels
                    X = X.rename(columns={label[n]: n for n in names})
            else:  # scikit-learn's warning, as Ranker.predict gives it
                self._warn_unnamed_fit()
                if "qid" in X.columns:
                    X = X.drop(columns="qid")
            # non-numeric columns and a wrong width are named now, as Ranker.predict
            # names them, not as a KeyError or a float() error when the result is
            # computed (a category was read as its values); so are both flags
            _refuse_numbers_made_text(X, {}, "feature", None)
            empty = booster.predict(X._meta, iteration=n_iter, **explain)
            if not explain:
                return X.map_partitions(
                    _predict_frame, booster, n_iter, meta=pd.Series(dtype=np.float64)
                )
            meta = pd.DataFrame(empty, index=X._meta.index)
            return X.map_partitions(_predict_frame, booster, n_iter, explain, meta=meta)
        if not (hasattr(X, "map_blocks") and hasattr(X, "numblocks")):
            raise TypeError(
                f"X must be a dask DataFrame or dask array, not {type(X).__name__}; for "
                "data in memory use to_local().predict(X)"
            )
        if X.ndim != 2:
            raise LTRInputError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
        # the width and the dtype (text, complex, dates), now
        empty = booster.predict(
            np.empty((0, X.shape[1]), dtype=X.dtype), iteration=n_iter, **explain
        )
        if booster.feature_names is not None:  # scikit-learn's warning, as Ranker.predict
            self._warn_named_fit()
        if X.numblocks[1] != 1:
            X = X.rechunk({1: -1})
        if not explain:
            return X.map_blocks(_predict_block, booster, n_iter, drop_axis=1, dtype=np.float64)
        return X.map_blocks(
            _predict_block,
            booster,
            n_iter,
            explain,
            chunks=(X.chunks[0], (empty.shape[1],)),
            dtype=empty.dtype,
            meta=empty,
        )

    def score(  # type: ignore[override]
        self,
        X: Any,
        y: Any,
        *,
        qid: Any = None,
        group: Any = None,
        sample_weight: Any = None,
        metric: str | Callable | None = None,
    ) -> float:
        """:meth:`Ranker.score`; Dask collections among the arguments are computed first
        (their rows come to the driver: score a sample of a large set).  As in ``fit``,
        ``y``, ``qid`` and ``sample_weight`` may be column names of a DataFrame ``X``."""
        import dask

        if _is_dask_frame(X) and hasattr(X, "columns"):
            roles = {"y": y, "qid": qid, "sample_weight": sample_weight}
            named = {r: v for r, v in roles.items() if isinstance(v, str)}
            for role, col in named.items():
                if col not in X.columns:
                    raise _not_a_column(role, col, list(X.columns))
            if named:  # those columns are no features (as fit takes them)
                y, qid, sample_weight = (X[named[r]] if r in named else v for r, v in roles.items())
                X = X.drop(columns=list(dict.fromkeys(named.values())))
        X, y, qid, group, sample_weight = dask.compute(X, y, qid, group, sample_weight)
        return super().score(X, y, qid=qid, group=group, sample_weight=sample_weight, metric=metric)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["client"] = None  # a Client cannot be pickled; it is not part of the model
        return state

    def __sklearn_clone__(self):
        """An unfitted copy on the same client: ``sklearn.base.clone`` deep-copies every
        parameter, and a Client cannot be copied (GridSearchCV and cross_val_score
        failed with "cannot pickle '_asyncio.Task' object")."""
        from sklearn.base import clone

        params = self.get_params(deep=False)
        client = params.pop("client")  # a handle to the cluster, shared: not the model
        return type(self)(client=client, **{k: clone(v, safe=False) for k, v in params.items()})

    def to_local(self) -> Ranker:
        """A plain :class:`~ltrboost.Ranker` holding the same booster (no Dask needed)."""
        self._check_fitted()
        local = Ranker(**{k: getattr(self, k) for k in PARAM_NAMES + ESTIMATOR_PARAM_NAMES})
        local.booster_ = self.booster_
        local.n_features_in_ = self.booster_.n_features
        if hasattr(self, "feature_names_in_"):
            local.feature_names_in_ = self.feature_names_in_
        local._fit_eval_metric = getattr(self, "_fit_eval_metric", None)  # score's default
        return local


def _dask_ranker_signature():
    import inspect

    sig = inspect.signature(Ranker.__init__)
    extra = [
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d)
        for n, d in (("client", None), ("regroup", True), ("timeout", 600.0))
    ]
    return sig.replace(parameters=[*sig.parameters.values(), *extra])


# scikit-learn reads the parameters from the signature: the Ranker's ones plus ours
DaskRanker.__init__.__signature__ = _dask_ranker_signature()  # type: ignore[attr-defined]

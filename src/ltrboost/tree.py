"""Trees as NODE_DTYPE arrays, and the prediction kernels (binned and raw features).

A node goes left when ``x <= num_threshold`` (raw) or ``bin <= bin_threshold`` (binned);
NaN / the missing bin go where ``missing_go_to_left`` says.  Both rules select the same
child for every value (see :mod:`ltrboost.binning`), so training-time scores computed on
binned data equal predictions on raw data exactly.

An ensemble is packed into flat arrays (:class:`PackedEnsemble`) with per-tree offsets;
child indices stay local to their tree.  Raw prediction runs blocks of rows on threads and, for
each row, over trees in order, so the float64 sum is accumulated in the same order as the
incremental training scores.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import NODE_DTYPE
from ltrboost._numba import kernel, over_queries, over_rows


class PackedEnsemble(NamedTuple):
    value: NDArray[np.float64]
    feature_idx: NDArray[np.int32]
    num_threshold: NDArray[np.float64]
    missing_go_to_left: NDArray[np.uint8]
    is_leaf: NDArray[np.uint8]
    left: NDArray[np.int32]
    right: NDArray[np.int32]
    tree_offsets: NDArray[np.int64]  # (n_trees + 1,)
    tree_output: NDArray[np.int32]  # which score column each tree adds to


def pack_trees(trees: list[NDArray], outputs: list[int]) -> PackedEnsemble:
    """Concatenate node arrays (NODE_DTYPE) into flat per-field arrays."""
    if trees:
        allnodes = np.concatenate(trees)
    else:
        allnodes = np.zeros(0, dtype=NODE_DTYPE)
    offsets = np.zeros(len(trees) + 1, dtype=np.int64)
    np.cumsum([t.shape[0] for t in trees], out=offsets[1:])
    return PackedEnsemble(
        value=np.ascontiguousarray(allnodes["value"]),
        feature_idx=np.ascontiguousarray(allnodes["feature_idx"]),
        num_threshold=np.ascontiguousarray(allnodes["num_threshold"]),
        missing_go_to_left=np.ascontiguousarray(allnodes["missing_go_to_left"]),
        is_leaf=np.ascontiguousarray(allnodes["is_leaf"]),
        left=np.ascontiguousarray(allnodes["left"]),
        right=np.ascontiguousarray(allnodes["right"]),
        tree_offsets=offsets,
        tree_output=np.asarray(outputs, dtype=np.int32),
    )


def predict_raw(ens: PackedEnsemble, X: NDArray[np.floating], out: NDArray[np.float64]) -> None:
    """Add the ensemble's outputs for raw features ``X`` to ``out`` (n_outputs, n).

    A SciPy sparse ``X`` is densified a block of rows at a time (at most
    :data:`SPARSE_PREDICT_CHUNK_BYTES` of floats), never as a whole, and only in the
    columns the trees split on."""
    if ens.tree_offsets.shape[0] <= 1 or X.shape[0] == 0:
        return
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):
        ens, X = split_columns_only(ens, X)
        Xr = X.tocsr()
        itemsize = 4 if Xr.dtype == np.float32 else 8
        step = max(1, SPARSE_PREDICT_CHUNK_BYTES // max(1, Xr.shape[1] * itemsize))
        for r0 in range(0, Xr.shape[0], step):
            r1 = min(Xr.shape[0], r0 + step)
            block = Xr[r0:r1].toarray()
            if block.dtype != np.float32:
                block = block.astype(np.float64, copy=False)
            part = np.ascontiguousarray(out[:, r0:r1])
            predict_raw(ens, block, part)
            out[:, r0:r1] = part
        return
    _predict_raw(
        ens.value,
        ens.feature_idx,
        ens.num_threshold,
        ens.missing_go_to_left,
        ens.is_leaf,
        ens.left,
        ens.right,
        ens.tree_offsets,
        ens.tree_output,
        X,
        out,
    )


def split_columns_only(ens: PackedEnsemble, X):
    """A SciPy sparse ``X`` cut to the columns the trees split on (CSR), and ``ens``
    with its features renumbered to them (both as they are when every column is
    used): a block densified of all 2,000,000 columns held 4 rows (47 s for 20,000
    rows), and one row of a 2**28-feature model took 2 GiB.  The trees reach the same
    leaves.  The entries are selected from ``X``'s own (memory of its stored values),
    not by SciPy's ``X[:, used]``, which allocates 4 bytes for every column of ``X``."""
    inner = ens.is_leaf == 0
    used = np.unique(ens.feature_idx[inner])
    if used.shape[0] < X.shape[1]:
        feature_idx = ens.feature_idx.copy()
        feature_idx[inner] = np.searchsorted(used, ens.feature_idx[inner])
        ens = ens._replace(feature_idx=feature_idx)
        Xr = X.tocsr()
        pos = np.searchsorted(used, Xr.indices)
        if used.shape[0]:
            keep = used[np.minimum(pos, used.shape[0] - 1)] == Xr.indices
        else:  # no split: no column
            keep = np.zeros(Xr.indices.shape[0], dtype=bool)
        kept = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
        X = type(Xr)(
            (Xr.data[keep], pos[keep].astype(Xr.indices.dtype), kept[Xr.indptr]),
            shape=(Xr.shape[0], used.shape[0]),
        )
    return ens, X


# Sparse input is predicted in row blocks of at most this many bytes of dense floats.
SPARSE_PREDICT_CHUNK_BYTES = 64 << 20

# Below this many rows prediction runs serially (a parallel launch costs more).
SERIAL_PREDICT_ROWS = 20_000
# Raw-feature prediction gives a thread a block of rows once it holds this many
# (row, tree) visits: a thread-pool hand-off costs ~30 us, a visit ~20 ns, so a second
# thread pays off from ~1.5k visits.  Measured (100 trees, 31 leaves, 2 threads): one
# 200-row query 752 us serial vs 361-387 us on two threads; 50 rows stay serial.
PREDICT_VISITS_PER_THREAD = 4096
PREDICT_MIN_ROWS_PER_THREAD = 16


def predict_binned_tree(
    nodes: NDArray,
    X_binned: NDArray[np.uint8],
    missing_bin: int,
    out: NDArray[np.float64],
) -> None:
    """Add one tree's output on binned data to ``out`` (n_samples,)."""
    args = (
        np.ascontiguousarray(nodes["value"]),
        np.ascontiguousarray(nodes["feature_idx"]),
        np.ascontiguousarray(nodes["bin_threshold"]),
        np.ascontiguousarray(nodes["missing_go_to_left"]),
        np.ascontiguousarray(nodes["is_leaf"]),
        np.ascontiguousarray(nodes["left"]),
        np.ascontiguousarray(nodes["right"]),
        X_binned,
        missing_bin,
        out,
    )
    if X_binned.shape[0] < SERIAL_PREDICT_ROWS:
        _predict_binned_rows(*args, 0, X_binned.shape[0])
    else:
        _predict_binned_one_tree(*args)


def add_leaf_values(partition, leaf_starts, leaf_stops, leaf_values, out) -> None:
    """Training-score update from the grower's partition (serial when small)."""
    if partition.shape[0] < SERIAL_PREDICT_ROWS:
        _add_leaf_values_serial(partition, leaf_starts, leaf_stops, leaf_values, out)
    else:
        _add_leaf_values(partition, leaf_starts, leaf_stops, leaf_values, out)


# --- kernels ---


def _predict_raw(
    value,
    feature_idx,
    num_threshold,
    missing_left,
    is_leaf,
    left,
    right,
    tree_offsets,
    tree_output,
    X,
    out,
):
    # X: IN float (n_samples, n_features); out: IN/OUT float64 (n_outputs, n_samples)
    # Rows are independent: blocks of rows on threads (no parfor to compile).
    over_rows(
        _predict_raw_rows, X.shape[0], value, feature_idx, num_threshold,
        missing_left, is_leaf, left, right, tree_offsets, tree_output, X, out,
        min_rows_per_thread=max(
            PREDICT_MIN_ROWS_PER_THREAD,
            PREDICT_VISITS_PER_THREAD // max(tree_offsets.shape[0] - 1, 1),
        ),
    )  # fmt: skip


@kernel
def _predict_raw_rows(
    r0, r1, value, feature_idx, num_threshold, missing_left, is_leaf, left, right,
    tree_offsets, tree_output, X, out,
):  # fmt: skip
    # rows r0..r1-1 of _predict_raw
    n_trees = tree_offsets.shape[0] - 1
    for i in range(r0, r1):
        for t in range(n_trees):
            base = tree_offsets[t]
            k = base
            while not is_leaf[k]:
                x = X[i, feature_idx[k]]
                if np.isnan(x):
                    go_left = missing_left[k] != 0
                else:
                    go_left = x <= num_threshold[k]
                k = base + (left[k] if go_left else right[k])
            out[tree_output[t], i] += value[k]


def _predict_binned_one_tree(
    value, feature_idx, bin_threshold, missing_left, is_leaf, left, right, X_binned,
    missing_bin, out,
):  # fmt: skip
    """One tree on binned rows (IN uint8 (n_samples, n_features)), added to ``out``
    (IN/OUT float64 (n_samples,)); blocks of rows on Python threads (rows are
    independent, no parfor to compile)."""
    args = (value, feature_idx, bin_threshold, missing_left, is_leaf, left, right)
    over_rows(
        lambda r0, r1: _predict_binned_rows(*args, X_binned, missing_bin, out, r0, r1),
        X_binned.shape[0],
        min_rows_per_thread=4096,
    )


@kernel
def _predict_binned_rows(
    value,
    feature_idx,
    bin_threshold,
    missing_left,
    is_leaf,
    left,
    right,
    X_binned,
    missing_bin,
    out,
    lo,
    hi,
):
    for i in range(lo, hi):
        k = 0
        while not is_leaf[k]:
            b = X_binned[i, feature_idx[k]]
            if b == missing_bin:
                go_left = missing_left[k] != 0
            else:
                go_left = b <= bin_threshold[k]
            k = left[k] if go_left else right[k]
        out[i] += value[k]


@kernel
def _add_leaf_values_serial(partition, leaf_starts, leaf_stops, leaf_values, out):
    for l in range(leaf_starts.shape[0]):
        v = leaf_values[l]
        for t in range(leaf_starts[l], leaf_stops[l]):
            out[partition[t]] += v


def _add_leaf_values(partition, leaf_starts, leaf_stops, leaf_values, out):
    """Training-score update from the grower's partition: rows of leaf ``l`` get its
    value.  Leaves own disjoint rows, so blocks of leaves (of about equal row counts)
    run on Python threads."""
    sizes = (leaf_stops - leaf_starts).astype(np.int64)
    offsets = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    over_queries(
        lambda l0, l1: _add_leaf_values_serial(
            partition, leaf_starts[l0:l1], leaf_stops[l0:l1], leaf_values[l0:l1], out
        ),
        offsets,
    )


# --- references ---


def _predict_raw_reference(trees: list[NDArray], outputs: list[int], X, n_outputs):
    out = np.zeros((n_outputs, X.shape[0]), dtype=np.float64)
    for nodes, o in zip(trees, outputs, strict=True):
        for i in range(X.shape[0]):
            k = 0
            while not nodes[k]["is_leaf"]:
                x = X[i, nodes[k]["feature_idx"]]
                if np.isnan(x):
                    left = bool(nodes[k]["missing_go_to_left"])
                else:
                    left = x <= nodes[k]["num_threshold"]
                k = nodes[k]["left"] if left else nodes[k]["right"]
            out[o, i] += nodes[k]["value"]
    return out

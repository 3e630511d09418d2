"""Per-row explanations of predictions: the leaf each row reaches in each tree
(``predict(X, pred_leaf=True)``) and TreeSHAP feature contributions
(``predict(X, pred_contrib=True)``).

TreeSHAP gives the exact Shapley values of each tree's output under the
*path-dependent* conditional expectation of Lundberg, Erion & Lee (2018), "Consistent
Individualized Feature Attribution for Tree Ensembles", where ``E[f(x) | x_S]`` follows
``x`` at the splits on features of ``S`` and elsewhere averages both children, each
weighted by the training documents that reached it (the node's ``count``; LightGBM's
``internal_count``/``leaf_count``, XGBoost's ``cover``).  A child's weight is its count
over the sum of both children's counts (1/2 each when both are 0: a hand-made tree).

The tree walk is the paper's Algorithm 2: a path of one element per distinct feature
split on above a node (a feature split again is merged into its element), each element
``j`` holding ``z_j``, the product of the document shares of the branches taken at the
splits on that feature, and ``o_j``, 1 when ``x`` takes them all (else 0).  A leaf of
value ``v`` whose path has ``d`` elements then gives feature ``p``

    phi_p += v (o_p - z_p) sum_{S in P - p} |S|! (d - 1 - |S|)! / d!
                 prod_{j in S} o_j prod_{j in P - p - S} z_j
           = v (o_p - z_p) int_0^1 prod_{j != p} (z_j (1 - t) + o_j t) dt,

the Shapley weight being the Beta integral ``int_0^1 t^k (1 - t)^(d-1-k) dt``.  The
integrand is a polynomial of degree ``d - 1``, so a Gauss-Legendre rule of
``ceil(d / 2)`` nodes integrates it exactly (the leaf's ``d`` products by prefix and
suffix products, O(d^2) per leaf as Algorithm 2's unwinding).  Every factor lies in
[0, 1] and every term is positive: no cancellation.  Algorithm 2's own leaf sum (its
``UNWIND`` of the permutation weights, which the reference implementation and
LightGBM's and XGBoost's use, and :func:`_tree_shap_reference` here) multiplies its
rounding error by about ``z * d / j`` at each step ``j``: past ~100 distinct features
on a path its rows no longer summed to the score (off by 1e18 on 300); this one's error
stays at rounding (shapiq's Quadrature-TreeSHAP takes the same integral form).

The kernel walks a tree depth-first with an explicit stack (Numba and deep trees do not
mix with recursion); each visited node keeps its own copy of the path in one buffer, at
an offset past its parent's, as the reference implementation's ``unique_path`` does.
A path holds the root's element and one per distinct feature split on above the node
(a feature split again is taken out first), so the buffer a thread needs grows with depth
x distinct features on a path (:func:`_path_buffer_lengths`), not with depth^2: a
10,000-deep chain on 136 features takes 33 MB a thread, not 1.2 GB.  The output and
these buffers are checked up front against half of what the process may use
(:func:`ltrboost._config.memory_budget`), as training's histograms are.  A
branch whose path element has both fractions 0 (a second split on a feature the row
went the other way on, into documents that never reached it) contributes exactly 0 and
is skipped.

Kernels here are compiled on their first use only: ordinary prediction and training
never import this module (no warm-up profile names its kernels).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import NDArray

from ltrboost import _config
from ltrboost._numba import kernel, num_threads, over_rows, threads
from ltrboost.tree import SPARSE_PREDICT_CHUNK_BYTES, PackedEnsemble, split_columns_only

# One TreeSHAP row costs O(leaves * depth^2) per tree, far more than a thread hand-off
# (~30 us), so a handful of rows already pays for a thread.
SHAP_MIN_ROWS_PER_THREAD = 8
LEAF_MIN_ROWS_PER_THREAD = 64


def branch_fractions(count: NDArray[np.int64], left, right, is_leaf, tree_offsets):
    """Per node of the packed ensemble: the share of its parent's training documents
    that its left and right child hold (``zl``, ``zr``, 0 at leaves).  Node counts are
    the training documents per node; a negative count (only a hand-edited model file
    holds one) is refused."""
    n = int(tree_offsets[-1])  # the packed trees' nodes (the arrays may hold more)
    count = np.asarray(count, dtype=np.int64)[:n]
    left, right, is_leaf = left[:n], right[:n], is_leaf[:n]
    if (count < 0).any():
        k = int(np.flatnonzero(count < 0)[0])
        t = int(np.searchsorted(tree_offsets, k, side="right") - 1)
        raise ValueError(
            f"tree {t} node {k - int(tree_offsets[t])} has count {int(count[k])}: "
            "pred_contrib weights each branch by its training documents (count >= 0)"
        )
    inner = np.flatnonzero(is_leaf == 0)
    base = np.repeat(tree_offsets[:-1], np.diff(tree_offsets))[inner]
    cl = count[base + left[inner]].astype(np.float64)
    cr = count[base + right[inner]].astype(np.float64)
    total = cl + cr
    zl = np.zeros(n, dtype=np.float64)
    zr = np.zeros(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        zl[inner] = np.where(total > 0, cl / total, 0.5)
        zr[inner] = np.where(total > 0, cr / total, 0.5)
    return zl, zr


def expected_values(ens: PackedEnsemble, zl, zr) -> NDArray[np.float64]:
    """Each tree's expected output: its leaf values weighted by the share of training
    documents reaching them (the TreeSHAP bias of the tree), shape (n_trees,).  Walks
    all trees a level at a time."""
    n_trees = ens.tree_offsets.shape[0] - 1
    out = np.zeros(n_trees, dtype=np.float64)
    if n_trees == 0:
        return out
    nodes = ens.tree_offsets[:-1].astype(np.int64)  # the roots
    base = nodes.copy()
    tree = np.arange(n_trees)
    prob = np.ones(n_trees, dtype=np.float64)
    while nodes.shape[0]:
        leaf = ens.is_leaf[nodes] != 0
        np.add.at(out, tree[leaf], prob[leaf] * ens.value[nodes[leaf]])
        k, b, t, p = nodes[~leaf], base[~leaf], tree[~leaf], prob[~leaf]
        nodes = np.concatenate([b + ens.left[k], b + ens.right[k]])
        prob = np.concatenate([p * zl[k], p * zr[k]])
        base = np.concatenate([b, b])
        tree = np.concatenate([t, t])
    return out


def max_depth(ens: PackedEnsemble) -> int:
    """The largest depth of a leaf (root 0) over the packed trees."""
    nodes = ens.tree_offsets[:-1].astype(np.int64)
    base = nodes.copy()
    depth = -1
    while nodes.shape[0]:
        depth += 1
        inner = ens.is_leaf[nodes] == 0
        k, b = nodes[inner], base[inner]
        nodes = np.concatenate([b + ens.left[k], b + ens.right[k]])
        base = np.concatenate([b, b])
    return max(depth, 0)


def _path_buffer_lengths(ens: PackedEnsemble):
    """Per packed tree: its depth ``D`` (the deepest leaf's, root 0), the distinct
    features ``U`` its splits use, and the path buffer length ``L`` the TreeSHAP
    kernel's walk of it needs (int64 arrays of shape (n_trees,)).

    A node at depth ``d`` has a path of ``ud + 1`` elements, ``ud`` the distinct
    features split on above it (at most ``m(d) = min(d, U)``), kept at
    ``off(d) = off(d - 1) + ud + 1`` (``off(0) = 1``), so the largest index a tree
    touches is below ``L = 2 + D + m(D) + sum_{e=1..D} m(e)``: exactly that on a chain
    whose first ``U`` splits are on distinct features, ``D^2 / 2 + O(D)`` only when
    ``U >= D``."""
    offsets = ens.tree_offsets
    n_trees = offsets.shape[0] - 1
    depth = np.zeros(n_trees, dtype=np.int64)
    nodes = offsets[:-1].astype(np.int64)
    base = nodes.copy()
    tree = np.arange(n_trees)
    level = 0
    while nodes.shape[0]:
        depth[tree] = level  # each level deeper overwrites: the deepest leaf's
        inner = ens.is_leaf[nodes] == 0
        k, b, t = nodes[inner], base[inner], tree[inner]
        nodes = np.concatenate([b + ens.left[k], b + ens.right[k]])
        base = np.concatenate([b, b])
        tree = np.concatenate([t, t])
        level += 1
    n = int(offsets[-1])
    inner = np.flatnonzero(ens.is_leaf[:n] == 0)
    tree_of = np.repeat(np.arange(n_trees, dtype=np.int64), np.diff(offsets))[inner]
    feature = ens.feature_idx[inner].astype(np.int64)
    span = int(feature.max()) + 1 if feature.size else 1
    pairs = np.unique(tree_of * span + feature)
    distinct = np.bincount(pairs // span, minlength=n_trees).astype(np.int64)
    m = np.minimum(depth, distinct)
    length = 2 + depth + m + m * (m + 1) // 2 + (depth - m) * m
    return depth, distinct, length


def _path_buffer_length(ens: PackedEnsemble) -> int:
    """The path buffer length (elements) TreeSHAP's kernel allocates a thread: the
    largest :func:`_path_buffer_lengths` over the packed trees (0: none)."""
    _, _, length = _path_buffer_lengths(ens)
    return int(length.max()) if length.shape[0] else 0


def _thread_bytes(path_length: int, depth: int) -> int:
    """Bytes one thread of :func:`_tree_shap_rows` allocates: three path arrays (int64
    features, float64 zero and one fractions), six stack arrays and three leaf arrays
    (factors, prefix products, integrals) of ``depth + 3``."""
    return 24 * path_length + 72 * (depth + 3)


def _bytes_text(nbytes: float) -> str:
    """``nbytes`` in the largest binary unit under 1024 of it (``8.2 MiB``)."""
    size, unit = float(nbytes), "bytes"
    for u in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024:
            break
        size, unit = size / 1024, u
    return f"{int(size)} bytes" if unit == "bytes" else f"{size:.1f} {unit}"


def _contrib_plan(ens: PackedEnsemble, n: int, width: int, kernel_runs: bool):
    """``(threads, path_length, depth, elements)`` for TreeSHAP on ``n`` rows: the
    threads it may run on, the path buffer length (:func:`_path_buffer_length`), the
    deepest leaf's depth and the most elements a leaf's path holds (min(depth, distinct
    features) over the trees), such that the (n, width) float64 output plus a path
    buffer and stack per thread fit in half of what this process may use (:func:`ltrboost._config.
    memory_budget`: physical memory, a cgroup memory limit, ``ulimit -v``); fewer
    threads than asked when only their buffers are over it (the contributions do not
    depend on the thread count).  ``kernel_runs`` False (no rows, no trees): no
    buffers.  A ``MemoryError`` naming the shape, the bytes and what to do when not
    even one thread fits: an output NumPy maps lazily (over physical memory but not
    over the address space) was otherwise found out midway, by swapping or the OOM
    killer."""
    out_bytes, row_bytes = n * width * 8, width * 8
    path_length, per_thread, asked, depth, elements = 0, 0, 1, 0, 0
    if kernel_runs:
        depths, distinct, lengths = _path_buffer_lengths(ens)
        path_length, depth = int(lengths.max()), int(depths.max())
        elements = int(np.minimum(depths, distinct).max())
        per_thread = _thread_bytes(path_length, depth)
        asked = max(1, min(num_threads(), n // SHAP_MIN_ROWS_PER_THREAD))
    budget, what = _config.memory_budget()
    limit = max(1, budget // 2)
    if out_bytes + per_thread <= limit:
        fit = (limit - out_bytes) // per_thread if per_thread else asked
        return max(1, min(asked, fit)), path_length, depth, elements
    over = _over_words(limit, what)
    if per_thread + row_bytes > limit and per_thread >= row_bytes:  # the tree, not the rows
        t = int(np.argmax(lengths))
        problem = (
            f"tree {t} is {int(depths[t])} splits deep with {int(distinct[t])} distinct "
            "features on its paths: TreeSHAP's path buffer (a path of up to min(depth, "
            f"features) + 1 elements for each level) takes {_bytes_text(per_thread)} "
            f"({per_thread} bytes) for one thread, {over}, whatever the rows; explain a "
            "model of shallower trees"
        )
        more = "or let this process use more memory"
        raise PredictMemoryError(
            f"pred_contrib=True: {problem} (max_depth) {more}",
            cli=f"--contrib: {problem} (train --max-depth) {more}",
        )
    buffers = f" plus {_bytes_text(per_thread)} of TreeSHAP path buffer" if per_thread else ""
    raise _output_refused(
        "pred_contrib=True", n, width, "float64 contributions", 8, per_thread, buffers, limit,
        what, cli="--contrib", cli_rows="one block of the rows `ltrboost predict` scores at a time",
    )  # fmt: skip


class PredictMemoryError(MemoryError):
    """An output of ``predict(X, pred_contrib=True)`` or ``pred_leaf=True`` (or
    TreeSHAP's buffers) refused because it would not fit in memory.

    The message names the keyword as Python spells it (``pred_contrib=True``) and a way
    out there (fewer rows at a time); ``cli_message`` is the same refusal as ``ltrboost
    predict`` words it (``--contrib``, whose blocks of rows are its own), or None where
    the CLI has no such flag.  A ``MemoryError``, as before, for callers that catch it."""

    def __init__(self, message: str, *, cli: str | None = None) -> None:
        super().__init__(message)
        self.cli_message = cli


def _over_words(limit: int, what: str) -> str:
    return f"over half of {what} ({_bytes_text(limit)}, {limit} bytes)"


def _output_refused(
    flag: str,
    n: int,
    width: int,
    words: str,
    itemsize: int,
    per_thread: int,
    buffers: str,
    limit: int,
    what: str,
    *,
    cli: str | None = None,
    cli_rows: str = "",
) -> PredictMemoryError:
    """The refusal of an (n, width) output of ``itemsize``-byte ``words`` (plus
    ``per_thread`` bytes of buffers, described by ``buffers``) over ``limit`` (half of
    ``what``): the most rows that fit, or that not one row does.  ``cli``: the CLI's
    flag for ``flag``, whose rows are ``cli_rows`` (not the user's to make fewer)."""
    out_bytes = n * width * itemsize
    need = (
        f"{n} rows x {width} columns of {words} need {_bytes_text(out_bytes)} "
        f"({out_bytes} bytes){buffers}, {_over_words(limit, what)}"
    )
    most = (limit - per_thread) // (width * itemsize) if width else n
    if most >= 1:
        streams = "; `ltrboost predict --contrib` streams its file in blocks" if cli else ""
        way_out = f"predict fewer rows at a time (at most {most} rows{streams})"
    else:
        way_out = "not one row fits; let this process use more memory"
    cli_text = None
    if cli is not None:
        cli_text = (
            f"{cli}: {n} rows x {width} columns of {words} ({cli_rows}) need "
            f"{_bytes_text(out_bytes)} ({out_bytes} bytes){buffers}, "
            f"{_over_words(limit, what)}; let this process use more memory"
        )
    return PredictMemoryError(f"{flag}: {need}; {way_out}", cli=cli_text)


@functools.cache
def _gauss_legendre(n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The ``n``-node Gauss-Legendre rule on [0, 1]: nodes ``t`` (ascending) and
    weights ``w`` (summing to 1), exact for polynomials of degree below ``2 n``.
    Newton's method on the Legendre recurrence from the usual cosine guesses, O(n^2)
    (numpy's ``leggauss`` solves an n x n eigenproblem, O(n^3)); cached per ``n``."""
    x = np.cos(np.pi * (np.arange(1, n + 1) - 0.25) / (n + 0.5))

    def legendre(x):  # P_n(x), P_{n-1}(x)
        p0, p1 = np.ones_like(x), x.copy()
        for k in range(2, n + 1):
            p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
        return p1, p0

    for _ in range(100):
        p1, p0 = legendre(x)
        dx = p1 / (n * (x * p1 - p0) / ((x - 1) * (x + 1)))
        x = x - dx
        if np.abs(dx).max() <= 1e-15:
            break
    p1, p0 = legendre(x)
    dp = n * (x * p1 - p0) / ((x - 1) * (x + 1))
    w = 2.0 / ((1 - x) * (1 + x) * dp * dp)
    t = (1 + x[::-1]) / 2
    w = w[::-1] / 2
    t.flags.writeable = w.flags.writeable = False
    return t, w


# Gauss-Legendre rules kept: every size up to this many nodes, then sizes 25% apart
# (a leaf of d path elements takes the smallest size of at least ceil(d / 2) nodes,
# exact either way: at most 25% more nodes than it needs)
_EXACT_RULE_SIZES = 64


def _rule_sizes(n_max: int) -> list[int]:
    """The Gauss-Legendre sizes used for up to ``n_max`` nodes (the last >= n_max)."""
    sizes = list(range(1, min(n_max, _EXACT_RULE_SIZES) + 1)) or [1]
    while sizes[-1] < n_max:
        sizes.append(math.ceil(sizes[-1] * 1.25))
    return sizes


def _quadrature_table(max_elements: int):
    """``(t, w, start, length)``: the Gauss-Legendre rules a leaf of ``d <=
    max_elements`` path elements integrates its polynomial of degree ``d - 1`` with
    (nodes ``t[start[d]:start[d] + length[d]]``, weights ``w`` alike, at least
    ``ceil(d / 2)`` nodes: exact)."""
    sizes = _rule_sizes(max(1, (max_elements + 1) // 2))
    rules = [_gauss_legendre(n) for n in sizes]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    t = np.concatenate([r[0] for r in rules])
    w = np.concatenate([r[1] for r in rules])
    need = (np.arange(max_elements + 1, dtype=np.int64) + 1) // 2
    pick = np.searchsorted(np.asarray(sizes, dtype=np.int64), np.maximum(need, 1))
    return t, w, offsets[pick], np.asarray(sizes, dtype=np.int64)[pick]


def _dense_blocks(X, n_features: int):
    """``(r0, r1, block)``: ``X`` itself (dense), or a SciPy sparse ``X`` densified
    :data:`~ltrboost.tree.SPARSE_PREDICT_CHUNK_BYTES` of floats at a time."""
    if not (hasattr(X, "tocsr") and hasattr(X, "nnz")):
        yield 0, X.shape[0], X
        return
    Xr = X.tocsr()
    step = max(1, SPARSE_PREDICT_CHUNK_BYTES // max(1, n_features * 8))
    for r0 in range(0, Xr.shape[0], step):
        r1 = min(Xr.shape[0], r0 + step)
        block = Xr[r0:r1].toarray()
        if block.dtype != np.float32:
            block = block.astype(np.float64, copy=False)
        yield r0, r1, np.ascontiguousarray(block)


def predict_contrib(
    ens: PackedEnsemble,
    count: NDArray[np.int64],
    X,
    n_outputs: int,
    init_score: NDArray[np.float64],
    divisor: float,
) -> NDArray[np.float64]:
    """TreeSHAP contributions of the packed ensemble on ``X``, shape (n_samples,
    n_outputs, n_features + 1): column ``j < n_features`` is feature ``j``'s share of
    the raw score of each output, the last column the expected raw score
    (``init_score`` plus every tree's expected output); everything divided by
    ``divisor`` (GBRank's averaged update), as the raw scores are.  Each row of an
    output sums to its raw score."""
    n, n_features = X.shape
    zl, zr = branch_fractions(count, ens.left, ens.right, ens.is_leaf, ens.tree_offsets)
    runs = bool(n) and ens.tree_offsets.shape[0] > 1
    width = n_outputs * (n_features + 1)
    n_threads, path_length, depth, elements = _contrib_plan(ens, n, width, runs)
    out = _output_array(n, width).reshape(n, n_outputs, n_features + 1)
    bias = np.asarray(init_score, dtype=np.float64).reshape(n_outputs).copy()
    np.add.at(bias, ens.tree_output, expected_values(ens, zl, zr))
    if runs:
        rule_t, rule_w, rule_start, rule_len = _quadrature_table(elements)
        with threads(n_threads):
            for r0, r1, block in _dense_blocks(X, n_features):
                part = out[r0:r1]
                over_rows(
                    _tree_shap_rows, r1 - r0, ens.value, ens.feature_idx, ens.num_threshold,
                    ens.missing_go_to_left, ens.is_leaf, ens.left, ens.right, zl, zr,
                    ens.tree_offsets, ens.tree_output, block, depth, path_length, rule_t,
                    rule_w, rule_start, rule_len, part,
                    min_rows_per_thread=SHAP_MIN_ROWS_PER_THREAD,
                )  # fmt: skip
    out[:, :, n_features] = bias
    if divisor != 1:
        out /= divisor
    return out


def _output_array(n: int, width: int) -> NDArray[np.float64]:
    """The zeroed (n, width) float64 contributions; a ``MemoryError`` naming them (rows,
    columns, size) where they cannot be allocated, not numpy's internal 3-D shape."""
    try:
        return np.zeros((n, width), dtype=np.float64)
    except MemoryError:
        need = (
            f"{n} rows x {width} columns of float64 contributions need "
            f"{_bytes_text(float(n) * width * 8)}, more than can be allocated"
        )
        raise PredictMemoryError(
            f"pred_contrib=True: {need}; predict fewer rows at a time",
            cli=f"--contrib: {need}; let this process use more memory",
        ) from None


def _leaf_array(n: int, n_trees: int) -> NDArray[np.int32]:
    """The zeroed (n, n_trees) int32 leaves of ``predict_leaf``, refused up front (a
    ``MemoryError`` naming the shape, the bytes and the most rows that fit) when over
    half of what this process may use (:func:`ltrboost._config.memory_budget`), as
    the contributions are (:func:`_contrib_plan`)."""
    budget, what = _config.memory_budget()
    limit = max(1, budget // 2)
    if n * n_trees * 4 > limit:
        words = "int32 leaf indices"
        raise _output_refused("pred_leaf=True", n, n_trees, words, 4, 0, "", limit, what)
    try:
        return np.zeros((n, n_trees), dtype=np.int32)
    except MemoryError:
        raise PredictMemoryError(
            f"pred_leaf=True: {n} rows x {n_trees} columns of int32 leaf indices need "
            f"{_bytes_text(float(n) * n_trees * 4)}, more than can be allocated; "
            "predict fewer rows at a time"
        ) from None


def predict_leaf(ens: PackedEnsemble, X) -> NDArray[np.int32]:
    """The node (its index within its tree) of the leaf each row of ``X`` reaches in
    each packed tree, shape (n_samples, n_trees), int32; refused up front when over
    half of the memory this process may use (:func:`_leaf_array`).  A SciPy sparse
    ``X`` is densified in the columns the trees split on only, as ``predict`` does it
    (:func:`ltrboost.tree.split_columns_only`): the guard counts the output alone."""
    n = X.shape[0]
    n_trees = ens.tree_offsets.shape[0] - 1
    out = _leaf_array(n, n_trees)
    if n and n_trees:
        if hasattr(X, "tocsr") and hasattr(X, "nnz"):
            ens, X = split_columns_only(ens, X)
        for r0, r1, block in _dense_blocks(X, X.shape[1]):
            part = out[r0:r1]
            over_rows(
                _predict_leaf_rows, r1 - r0, ens.feature_idx, ens.num_threshold,
                ens.missing_go_to_left, ens.is_leaf, ens.left, ens.right,
                ens.tree_offsets, block, part,
                min_rows_per_thread=LEAF_MIN_ROWS_PER_THREAD,
            )  # fmt: skip
    return out


# --- kernels ---


@kernel
def _predict_leaf_rows(
    r0, r1, feature_idx, num_threshold, missing_left, is_leaf, left, right, tree_offsets,
    X, out,
):  # fmt: skip
    # X: IN float (n_rows, n_features); out: OUT int32 (n_rows, n_trees), rows r0..r1-1
    n_trees = tree_offsets.shape[0] - 1
    for i in range(r0, r1):
        for t in range(n_trees):
            base = tree_offsets[t]
            k = 0
            while not is_leaf[base + k]:
                x = X[i, feature_idx[base + k]]
                if np.isnan(x):
                    go_left = missing_left[base + k] != 0
                else:
                    go_left = x <= num_threshold[base + k]
                k = left[base + k] if go_left else right[base + k]
            out[i, t] = k


@kernel
def _tree_shap_rows(
    r0, r1, value, feature_idx, num_threshold, missing_left, is_leaf, left, right, zl, zr,
    tree_offsets, tree_output, X, depth, path_length, rule_t, rule_w, rule_start, rule_len,
    out,
):  # fmt: skip
    # X: IN float (n_rows, n_features); out: IN/OUT float64 (n_rows, n_outputs,
    # n_features + 1), contributions added for rows r0..r1-1.  zl/zr: the left/right
    # child's share of each node's documents.  depth: the deepest leaf's depth.
    # path_length: the path buffer's length, _path_buffer_length (each node's path
    # at its parent's offset + its own length; unchecked: a shorter one overruns).
    # rule_*: _quadrature_table (a leaf of d path elements: nodes and weights
    # rule_t/rule_w[rule_start[d]:rule_start[d] + rule_len[d]])
    n_trees = tree_offsets.shape[0] - 1
    size = path_length
    feat = np.empty(size, dtype=np.int64)
    zero = np.empty(size, dtype=np.float64)
    one = np.empty(size, dtype=np.float64)
    n_stack = depth + 3
    s_node = np.empty(n_stack, dtype=np.int64)
    s_poff = np.empty(n_stack, dtype=np.int64)
    s_ud = np.empty(n_stack, dtype=np.int64)
    s_z = np.empty(n_stack, dtype=np.float64)
    s_o = np.empty(n_stack, dtype=np.float64)
    s_f = np.empty(n_stack, dtype=np.int64)
    factor = np.empty(n_stack, dtype=np.float64)
    prefix = np.empty(n_stack, dtype=np.float64)
    integral = np.empty(n_stack, dtype=np.float64)
    for i in range(r0, r1):
        for t in range(n_trees):
            base = tree_offsets[t]
            if is_leaf[base]:
                continue  # a one-leaf tree: only its (expected) value, in the bias
            o_col = tree_output[t]
            s_node[0] = 0
            s_poff[0] = 0
            s_ud[0] = 0
            s_z[0] = 1.0
            s_o[0] = 1.0
            s_f[0] = -1
            sp = 1
            while sp > 0:
                sp -= 1
                node = s_node[sp]
                poff = s_poff[sp]
                ud = s_ud[sp]
                # this node's path: a copy of its parent's, then its own element ud
                # (element 0 is the root's, feature -1, fractions 1: no feature)
                off = poff + ud + 1
                for j in range(ud):
                    feat[off + j] = feat[poff + j]
                    zero[off + j] = zero[poff + j]
                    one[off + j] = one[poff + j]
                feat[off + ud] = s_f[sp]
                zero[off + ud] = s_z[sp]
                one[off + ud] = s_o[sp]
                k = base + node
                if is_leaf[k]:
                    # feature j's share: v (o_j - z_j) int_0^1 prod_{i != j} f_i(t) dt,
                    # f_i(t) = z_i (1 - t) + o_i t, by the rule of >= ceil(ud / 2)
                    # nodes (exact), the products left and right of j by prefix and
                    # suffix: all terms >= 0, nothing cancels
                    v = value[k]
                    q0 = rule_start[ud]
                    for j in range(1, ud + 1):
                        integral[j] = 0.0
                    for q in range(q0, q0 + rule_len[ud]):
                        tq = rule_t[q]
                        run = 1.0
                        for j in range(1, ud + 1):
                            prefix[j] = run
                            factor[j] = zero[off + j] * (1.0 - tq) + one[off + j] * tq
                            run *= factor[j]
                        run = rule_w[q]
                        for j in range(ud, 0, -1):
                            integral[j] += run * prefix[j]
                            run *= factor[j]
                    for j in range(1, ud + 1):
                        share = integral[j] * (one[off + j] - zero[off + j]) * v
                        out[i, o_col, feat[off + j]] += share
                    continue
                f = feature_idx[k]
                x = X[i, f]
                if np.isnan(x):
                    go_left = missing_left[k] != 0
                else:
                    go_left = x <= num_threshold[k]
                if go_left:
                    hot, cold, hz, cz = left[k], right[k], zl[k], zr[k]
                else:
                    hot, cold, hz, cz = right[k], left[k], zr[k], zl[k]
                iz = 1.0
                io = 1.0
                p = 0
                while p <= ud and feat[off + p] != f:
                    p += 1
                if p <= ud:  # split on f before: take its element out, its fractions
                    iz = zero[off + p]  # carry over into the children's
                    io = one[off + p]
                    for j in range(p, ud):
                        feat[off + j] = feat[off + j + 1]
                        zero[off + j] = zero[off + j + 1]
                        one[off + j] = one[off + j + 1]
                    ud -= 1
                # cold below hot on the stack: hot is visited first, as in recursion
                if cz * iz != 0.0:
                    s_node[sp] = cold
                    s_poff[sp] = off
                    s_ud[sp] = ud + 1
                    s_z[sp] = cz * iz
                    s_o[sp] = 0.0
                    s_f[sp] = f
                    sp += 1
                if hz * iz != 0.0 or io != 0.0:
                    s_node[sp] = hot
                    s_poff[sp] = off
                    s_ud[sp] = ud + 1
                    s_z[sp] = hz * iz
                    s_o[sp] = io
                    s_f[sp] = f
                    sp += 1


# --- references ---


def _predict_leaf_reference(trees: list[NDArray], X) -> NDArray[np.int32]:
    out = np.zeros((X.shape[0], len(trees)), dtype=np.int32)
    for t, nodes in enumerate(trees):
        for i in range(X.shape[0]):
            k = 0
            while not nodes[k]["is_leaf"]:
                x = X[i, nodes[k]["feature_idx"]]
                if np.isnan(x):
                    go_left = bool(nodes[k]["missing_go_to_left"])
                else:
                    go_left = x <= nodes[k]["num_threshold"]
                k = nodes[k]["left"] if go_left else nodes[k]["right"]
            out[i, t] = k
    return out


def _tree_shap_reference(
    trees: list[NDArray],
    outputs: list[int],
    X,
    n_outputs: int,
    init_score,
    divisor: float = 1.0,
) -> NDArray[np.float64]:
    """Recursive TreeSHAP (the paper's Algorithm 2, its ``UNWIND`` leaf sums: the
    reference implementation's, LightGBM's) on node arrays, the path as Python lists
    copied at every node; the layout of :func:`predict_contrib`.  Independent of the
    kernel's quadrature leaf sums, and as they are to rounding up to ~60 distinct
    features on a path (past ~100 its unwinding loses every digit)."""
    n, n_features = X.shape
    out = np.zeros((n, n_outputs, n_features + 1), dtype=np.float64)

    def share(nodes, k, child):
        a, b = int(nodes[nodes[k]["left"]]["count"]), int(nodes[nodes[k]["right"]]["count"])
        c = a if child == nodes[k]["left"] else b
        return c / (a + b) if a + b else 0.5

    def expected(nodes, k):
        if nodes[k]["is_leaf"]:
            return float(nodes[k]["value"])
        lft, rgt = int(nodes[k]["left"]), int(nodes[k]["right"])
        return share(nodes, k, lft) * expected(nodes, lft) + share(nodes, k, rgt) * expected(
            nodes, rgt
        )

    def extend(path, z, o, f):
        path = [list(e) for e in path]  # [feature, zero, one, weight]
        d = len(path)
        path.append([f, z, o, 1.0 if d == 0 else 0.0])
        for j in range(d - 1, -1, -1):
            path[j + 1][3] += o * path[j][3] * (j + 1) / (d + 1)
            path[j][3] = z * path[j][3] * (d - j) / (d + 1)
        return path

    def unwind(path, p):
        d = len(path) - 1
        _, z, o, _ = path[p]
        w = [e[3] for e in path]
        nxt = w[d]
        for j in range(d - 1, -1, -1):
            if o != 0:
                tmp = w[j]
                w[j] = nxt * (d + 1) / ((j + 1) * o)
                nxt = tmp - w[j] * z * (d - j) / (d + 1)
            else:
                w[j] = w[j] * (d + 1) / (z * (d - j))
        rest = [e[:3] for e in path[:p] + path[p + 1 :]]
        return [[*e, w[j]] for j, e in enumerate(rest)]

    def recurse(nodes, k, x, phi, path, z, o, f):
        if z == 0 and o == 0:
            return  # contributes nothing (and would divide 0 by 0)
        path = extend(path, z, o, f)
        if nodes[k]["is_leaf"]:
            v = float(nodes[k]["value"])
            for p in range(1, len(path)):
                w = sum(e[3] for e in unwind(path, p))
                phi[path[p][0]] += w * (path[p][2] - path[p][1]) * v
            return
        sf = int(nodes[k]["feature_idx"])
        xv = x[sf]
        if np.isnan(xv):
            go_left = bool(nodes[k]["missing_go_to_left"])
        else:
            go_left = xv <= nodes[k]["num_threshold"]
        lft, rgt = int(nodes[k]["left"]), int(nodes[k]["right"])
        hot, cold = (lft, rgt) if go_left else (rgt, lft)
        iz = io = 1.0
        seen = [p for p in range(len(path)) if path[p][0] == sf]
        if seen:
            iz, io = path[seen[0]][1], path[seen[0]][2]
            path = unwind(path, seen[0])
        recurse(nodes, hot, x, phi, path, share(nodes, k, hot) * iz, io, sf)
        recurse(nodes, cold, x, phi, path, share(nodes, k, cold) * iz, 0.0, sf)

    bias = np.array(init_score, dtype=np.float64).reshape(n_outputs)
    for nodes, o in zip(trees, outputs, strict=True):
        bias[o] += expected(nodes, 0)
        for i in range(n):
            phi = np.zeros(n_features)
            recurse(nodes, 0, X[i], phi, [], 1.0, 1.0, -1)
            out[i, o, :n_features] += phi
    out[:, :, n_features] = bias
    return out / divisor

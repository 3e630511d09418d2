"""TreeGrower: grows one regression tree from gradients and hessians.

The grower owns only the node order (sklearn's design): a priority queue of splittable
nodes, popped by the growth policy, until ``max_leaf_nodes`` leaves exist or nothing can
be split.

* ``best_first`` (leaf-wise, LightGBM's default): the node with the largest gain first.
* ``breadth_first`` (level-wise): shallower nodes first, left to right.
* ``depth_first``: the most recently created node first (left child before right).

Seed 000 found depth-first poor and used width-first for its experiments; all three are
offered so users can see it.

It talks to the data through two seams (``../shared/DESIGN.md``, "Layers"):

* a :class:`~ltrboost.histogram.HistogramBuilder` (``histograms=``): rows -> node
  histograms, the root's sums and count, the split of a node's rows, pair histograms;
  all of them reduced over the builder's shards, so ``min_samples_leaf`` and the leaf
  values see global counts and sums however the rows are sharded;
* a :class:`~ltrboost.splitting.Splitter` (``splitter=``): histograms -> best split
  under the criterion, and leaf values.

Histograms: the root's is built over all rows; for each split the smaller child's is
built and the larger child's is ``parent - smaller`` (in the parent's buffer).  Counts
of the children come from the histogram the split was chosen on.

OLE (``split_criterion="ole"`` with pairs): a node's exact eq. 13 split is found by
branch-and-bound over features (:meth:`TreeGrower._ole_split`): pair histograms are
built only for the features whose gain bound reaches the best exact gain found.
"""

from __future__ import annotations

import heapq
import itertools
from collections import namedtuple
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import NODE_DTYPE
from ltrboost.criteria import CRITERION_CODES
from ltrboost.histogram import HistogramBuilder, subtract_histograms
from ltrboost.pair_csr import PairCSR, n_pairs_of
from ltrboost.params import DEFAULTS, TREE_PARAM_NAMES
from ltrboost.quantize import QuantSpec, quant_spec
from ltrboost.splitting import (
    SplitInfo,
    SplitNoise,
    SplitParams,
    Splitter,
    features_with_split,
)

GROWTH_POLICIES = ("best_first", "breadth_first", "depth_first")

# Exact OLE by branch-and-bound over features (see TreeGrower._ole_split): on by
# default; tests switch it off to compare with building every feature's pair histograms.
OLE_BRANCH_AND_BOUND = True
# Features whose pair histograms are built per step of the branch-and-bound: the pair
# kernel takes four features per pass and one block per thread, so 8 keeps 2 threads
# busy while a step still stops soon after the winner is found.
OLE_BOUND_BLOCK = 8
# Below this many (node pairs x candidate features) a node builds every pair histogram:
# there the bound's fixed costs (a pair-mass histogram over the node's rows, a bound
# pass, one kernel launch per block) cost more than the pruning saves.  Measured on
# MQ2008 (~10k documents, 46 features; its roots have ~1.7M, its other nodes < 0.5M):
# pruning at every node was ~20% slower than none, although it builds 62% of the pair
# work; at 500k synthetic documents every node above the smallest is far above it.
OLE_BOUND_MIN_WORK = 4_000_000
# A feature is pruned only when its bound is below the best exact gain by more than
# this relative (plus absolute 1e-12) slack, on top of the bound's own rounding margin.
OLE_BOUND_SLACK = 1e-9
# The pair-histogram subtraction trick (see TreeGrower._split_pair_histograms): a node
# whose pair histograms were built for every candidate feature keeps them, and its
# split gives the child with more pairs ``parent - other child - crossing pairs``.  On
# by default; tests switch it off to compare with building every node's histograms.
OLE_PAIR_SUBTRACTION = True

GrowerParams = namedtuple(
    "GrowerParams",
    TREE_PARAM_NAMES,
    defaults=[DEFAULTS[name] for name in TREE_PARAM_NAMES],
)
GrowerParams.__doc__ = (
    "The parameters of one tree's growth: the ``tree`` group of "
    ":data:`ltrboost.params.PARAMS` (" + ", ".join(TREE_PARAM_NAMES) + ")."
)


@dataclass(eq=False)
class TreeNode:
    node_id: int
    depth: int
    rows: Any  # the histogram builder's handle of the node's rows
    count: int  # documents in the node (global: from the histograms)
    sum_gradients: float
    sum_hessians: float
    value: float
    seq: int = 0  # index of the split that created the node (depth-first order)
    side: int = 0  # 0 left child, 1 right child
    hist: NDArray[np.float64] | None = None
    # OLE: the node's pair histograms, kept for its children's subtraction, and the
    # features they hold
    pair_hist: NDArray[np.float64] | None = None
    pair_feats: NDArray[np.int32] | None = None
    split_info: SplitInfo | None = None
    left: TreeNode | None = None
    right: TreeNode | None = None


class GrownTree(NamedTuple):
    nodes: NDArray  # NODE_DTYPE, values NOT yet shrunk
    # (start, stop, node_index) into ``partition`` per leaf (single-shard builders)
    leaf_ranges: list[tuple[int, int, int]]
    partition: NDArray[np.int32] | None
    leaves: list[tuple[Any, int]]  # (builder rows handle, node_index) per leaf


class TreeGrower:
    """Reusable grower bound to one training set.

    Parameters
    ----------
    X_binned : ndarray of shape (n_samples, n_features), dtype=uint8, Fortran order
        The local rows; may be None when ``histograms`` is given.
    n_bins_non_missing : ndarray of shape (n_features,), dtype=int32
    missing_bin : int
    bin_thresholds : ndarray of shape (n_features, max_bins), dtype=float64
        Numeric thresholds (+inf padded) so nodes carry ``num_threshold``.
    params : GrowerParams
    n_threads : int
    histograms : HistogramBuilder, optional
        Where node histograms come from; default: one local shard over ``X_binned``.
    splitter : Splitter, optional
        Default: the criterion and limits of ``params``.
    """

    def __init__(
        self,
        X_binned: NDArray[np.uint8] | None,
        n_bins_non_missing: NDArray[np.int32],
        missing_bin: int,
        bin_thresholds: NDArray[np.float64],
        params: GrowerParams,
        n_threads: int = 1,
        *,
        histograms: HistogramBuilder | None = None,
        splitter: Splitter | None = None,
    ) -> None:
        if params.max_leaf_nodes < 2:
            raise ValueError(f"max_leaf_nodes={params.max_leaf_nodes} should not be smaller than 2")
        if params.growth not in GROWTH_POLICIES:
            raise ValueError(f"growth={params.growth!r} is not one of {GROWTH_POLICIES}")
        if params.split_criterion not in CRITERION_CODES:
            raise ValueError(
                f"split_criterion={params.split_criterion!r} is not one of {tuple(CRITERION_CODES)}"
            )
        if histograms is None:
            histograms = HistogramBuilder.local(
                X_binned, missing_bin, n_threads, n_bins_non_missing=n_bins_non_missing
            )
        if splitter is None:
            splitter = Splitter(
                n_bins_non_missing,
                missing_bin,
                SplitParams(
                    min_samples_leaf=params.min_samples_leaf,
                    min_sum_hessian_in_leaf=params.min_sum_hessian_in_leaf,
                    l2_regularization=params.l2_regularization,
                    min_gain_to_split=params.min_gain_to_split,
                    criterion_code=CRITERION_CODES[params.split_criterion],
                ),
            )
        self.histograms = histograms
        self.splitter = splitter
        self.X_binned = X_binned  # the local rows (None when only a builder is given)
        self.n_bins_non_missing = n_bins_non_missing
        self.missing_bin = int(missing_bin)
        self.n_threads = n_threads
        self.bin_thresholds = bin_thresholds
        self.params = params
        self.n_features = histograms.n_features
        self.all_features = np.arange(self.n_features, dtype=np.int32)
        # OLE: free pair-histogram buffers (TreeGrower._pair_buffer), kept across trees
        self._pair_pool: list[NDArray[np.float64]] = []
        # (Newton step, hessian sum) of the last tree's root when min_sum_hessian_in_leaf
        # made its value 0 instead (None: it did not; see _flatten_root)
        self.flat_root: tuple[float, float] | None = None
        self._noise: tuple[int, float] | None = None  # random_strength's, per tree (grow)

    # ------------------------------------------------------------------ public
    def grow(
        self,
        gradients: NDArray[np.float32],
        hessians: NDArray[np.float32],
        sample_indices: NDArray[np.int32] | None = None,
        feature_indices: NDArray[np.int32] | None = None,
        pairs: PairCSR | tuple[NDArray, NDArray, NDArray] | None = None,
        split_noise: tuple[int, float] | None = None,
        quantize: tuple[int, int] | None = None,
    ) -> GrownTree:
        """Grow one tree.  ``sample_indices`` restricts it to a bag of rows.

        ``pairs`` (a :class:`~ltrboost.pair_csr.PairCSR`, or ``(doc_i, doc_j, rho)``
        with ``doc_i`` the preferred document; global rows) enables the exact OLE
        hessian correction when ``split_criterion == "ole"``; pairs with a document
        outside the bag must already be removed.

        ``split_noise``: ``(seed, sigma)`` of ``random_strength``
        (:func:`~ltrboost.splitting.split_noise_sigma`); every node's split is then
        chosen by noisy scores drawn from stream ``seed`` by node id (creation order),
        feature and bin.  None or ``sigma == 0``: none.

        ``quantize``: ``(bins, seed)`` of ``quantized_gradients`` (or the tree's
        :class:`~ltrboost.quantize.QuantSpec` itself)
        (:mod:`ltrboost.quantize`): the histograms, hence the splits, are built from the
        gradients rounded to ``bins`` levels (stochastically, from stream ``seed``,
        scales over every row given); then every node's value and hessian sum are
        recomputed from the exact gradients of its rows.  Not with OLE's pairs.
        """
        p = self.params
        self._noise = split_noise if split_noise is not None and split_noise[1] > 0.0 else None
        feats = self.all_features if feature_indices is None else feature_indices
        self._features = feats
        use_pairs = p.split_criterion == "ole" and pairs is not None and n_pairs_of(pairs) > 0
        self._use_pairs = use_pairs
        # the pair-histogram subtraction: exact OLE over every valid feature (the
        # approximate top-k mode picks other features at every node; k at least the
        # number of features is exact OLE), and a builder that can give the pairs a
        # split sends across
        self._subtract_pairs = (
            use_pairs
            and OLE_PAIR_SUBTRACTION
            and (p.ole_top_features is None or p.ole_top_features >= len(feats))
            and hasattr(self.histograms, "crossing_pair_histogram")
        )
        # work counters of the OLE pair histograms (pairs x features built; see
        # _ole_split), reset every tree
        self.ole_stats = dict.fromkeys(
            (
                "root_work",
                "root_built",
                "deep_work",
                "deep_built",
                "needed_work",
                "features",
                "features_pruned",
            ),
            0,
        )
        data = self.histograms
        quant = None
        if quantize is not None:
            if use_pairs:
                raise ValueError("quantized gradients do not combine with OLE's pairs")
            quant = (
                quantize  # scales made elsewhere (Dask: over every shard's rows)
                if isinstance(quantize, QuantSpec)
                else quant_spec(int(quantize[0]), int(quantize[1]), gradients, hessians)
            )
        extra = {} if quant is None else {"quant": quant}  # (other builders: exact only)
        root_rows = data.start_tree(
            gradients, hessians, sample_indices, feats, pairs if use_pairs else None, **extra
        )
        stats = data.root(root_rows, feats)
        ids = itertools.count()
        self._n_splits = 0
        root = TreeNode(
            node_id=next(ids),
            depth=0,
            rows=root_rows,
            count=stats.count,
            sum_gradients=stats.sum_gradients,
            sum_hessians=stats.sum_hessians,
            value=0.0,
            hist=stats.hist,
        )
        root.value = self.splitter.leaf_value(
            root.sum_gradients, root.sum_hessians, self._pair_sum(root)
        )
        heap: list[tuple] = []
        order = itertools.count()
        self._consider(root, heap, order)
        n_leaves = 1
        while heap and n_leaves < p.max_leaf_nodes:
            _, _, node = heapq.heappop(heap)
            n_leaves += 1
            # the split that makes the last leaf: its children stay leaves (no histogram
            # and no split search for them)
            last = n_leaves >= p.max_leaf_nodes
            left, right = self._apply_split(node, ids, last)
            if not last:
                for child in (left, right):
                    self._consider(child, heap, order)
        # release buffers of nodes left unsplit in the heap
        for _, _, node in heap:
            data.release(node.hist)
            node.hist = None
            self._release_pair_hist(node)
        if use_pairs:
            data.end_pairs()
        if quant is not None:
            self._renew_from_exact(root)
        self.flat_root = self._flatten_root(root)
        return self._finalize(root)

    def add_to_scores(
        self, grown: GrownTree, values: NDArray[np.float64], out: NDArray[np.float64]
    ) -> None:
        """Add the tree, with leaf ``values``, to the training scores ``out``."""
        nodes = grown.nodes.copy()
        nodes["value"] = values
        self.histograms.add_tree(nodes, grown.leaves, out)

    # ----------------------------------------------------------------- internals
    def _renew_from_exact(self, root: TreeNode) -> None:
        """A quantised tree's values and hessian sums from the exact gradients: each
        leaf's sums over its rows, each inner node's the sum of its children's (LightGBM's
        ``quant_train_renew_leaf``); the splits stay those the quantised sums chose."""
        order: list[TreeNode] = []
        stack = [root]
        while stack:
            nd = stack.pop()
            order.append(nd)
            if nd.left is not None:
                stack.append(nd.left)
                stack.append(nd.right)
        leaves = [nd for nd in order if nd.left is None]
        sums = dict(
            zip(
                map(id, leaves),
                self.histograms.exact_leaf_sums([nd.rows for nd in leaves]),
                strict=True,
            )
        )
        for nd in reversed(order):  # children before their parent
            if nd.left is None:
                g, h = sums[id(nd)]
            else:
                g = nd.left.sum_gradients + nd.right.sum_gradients
                h = nd.left.sum_hessians + nd.right.sum_hessians
            nd.sum_gradients, nd.sum_hessians = g, h
            nd.value = self.splitter.leaf_value(g, h, 0.0)

    def _flatten_root(self, root: TreeNode) -> tuple[float, float] | None:
        """A root left unsplit whose hessian sum is under ``min_sum_hessian_in_leaf``
        gets value 0, not its Newton step; returns ``(the step it lost, its hessian
        sum)``, None when the rule changed nothing.

        No split makes a child under that limit, so the root is the only leaf that can
        be one; a Newton step ``-G/(H + l2)`` there divides by hessians that vanished
        (saturated scores: ~G/1e-22).  LightGBM adds no one-leaf tree at all; here the
        tree stays, as for any root that cannot be split, and moves no score.  A
        non-finite step is kept, for the round's finiteness check to name.
        """
        if root.left is not None or not root.sum_hessians < self.params.min_sum_hessian_in_leaf:
            return None
        lost = root.value
        if not np.isfinite(lost):
            return None
        root.value = 0.0
        return (lost, root.sum_hessians) if lost != 0.0 else None

    def _pair_sum(self, node: TreeNode) -> float:
        return self.histograms.pair_sum(node.rows) if self._use_pairs else 0.0

    def _pair_buffer(self) -> NDArray[np.float64]:
        """A pair-histogram buffer of the tree's pool (zeros when new)."""
        if self._pair_pool:
            return self._pair_pool.pop()
        return np.zeros((self.n_features, self.missing_bin + 1, 3), dtype=np.float64)

    def _release_pair_hist(self, node: TreeNode) -> None:
        if node.pair_hist is not None:
            self._pair_pool.append(node.pair_hist)
        node.pair_hist = None
        node.pair_feats = None

    def _ole_features(self, node: TreeNode) -> NDArray[np.int32]:
        """The features whose pair histograms an OLE node builds.

        Exact OLE: those with a threshold that leaves ``min_samples_leaf`` documents on
        both sides (the others have no valid split under any criterion, so the chosen
        split is the same).  With ``ole_top_features=k`` (approximate): the ``k`` of
        largest Newton gain (eq. 9, ties to the lower feature index), in feature order.
        A feature without a valid Newton split has none under eq. 13 either (the same
        count and hessian limits), so it is never kept, and ``k`` at least the number
        of valid features is exact OLE.
        """
        k = self.params.ole_top_features
        if k is None:
            return features_with_split(
                node.hist,
                self._features,
                self.splitter.n_bins_non_missing,
                self.missing_bin,
                node.count,
                self.params.min_samples_leaf,
            )
        gains = self.splitter.newton_gains(
            node.hist, self._features, node.sum_gradients, node.sum_hessians, node.count
        )
        top = np.argsort(-gains, kind="stable")[: int(k)]
        top = top[np.isfinite(gains[top])]
        return self._features[np.sort(top)]

    def _node_noise(self, node: TreeNode) -> SplitNoise | None:
        """The node's split-score noise (None: none this tree)."""
        if self._noise is None:
            return None
        return SplitNoise(self._noise[0], self._noise[1], node.node_id)

    def _can_split(self, count: int, depth: int) -> bool:
        """Whether a node of ``count`` documents at ``depth`` may be split at all."""
        p = self.params
        if p.max_depth is not None and depth >= p.max_depth:
            return False
        return count >= 2 * p.min_samples_leaf and count >= 2

    def _consider(self, node: TreeNode, heap: list, order: itertools.count) -> None:
        """Find the node's best split and queue it, or make it a leaf."""
        p = self.params
        if self._can_split(node.count, node.depth):
            if self._use_pairs:
                node.split_info = self._ole_split(node, self._ole_features(node))
            else:
                node.split_info = self.splitter.find_split(
                    node.hist,
                    self._features,
                    node.sum_gradients,
                    node.sum_hessians,
                    node.count,
                    noise=self._node_noise(node),
                )
        if node.split_info is None:
            self.histograms.release(node.hist)
            node.hist = None
            self._release_pair_hist(node)
            return
        c = next(order)
        if p.growth == "best_first":
            key: tuple = (-node.split_info.gain, c)
        elif p.growth == "breadth_first":
            key = (node.depth, c)
        else:  # depth_first: children of the latest split first, left before right
            key = (-node.seq, node.side)
        heapq.heappush(heap, (key, c, node))

    def _ole_split(self, node: TreeNode, feats: NDArray[np.int32]) -> SplitInfo | None:
        """The node's exact OLE split (eq. 13 of seed 000) over ``feats``, building pair
        histograms only for the features that can hold it (branch-and-bound).

        Every feature gets an upper bound of its best OLE gain from the node's histogram
        and its pair-mass histogram, without pair histograms
        (:func:`~ltrboost.splitting.ole_gain_bounds`: the pairs wholly in a side weigh
        at most the ``rho`` of the pairs whose preferred document lies in the side, and
        at most that of the pairs whose other document does).  Pair histograms are then
        built ``OLE_BOUND_BLOCK`` features at a time in decreasing order of bound, each
        block searched exactly, until the next bound is below the best exact gain found
        (less an ``OLE_BOUND_SLACK`` margin).  A pruned feature's gain is at most its
        bound, so strictly below the best: the split (ties: the first feature of
        ``feats``, as :func:`find_node_split`) is the one that building every feature
        gives, bit for bit (a feature's pair histogram and search do not depend on the
        other features built).

        Not at nodes of less than ``OLE_BOUND_MIN_WORK`` pairs x features (the bound
        costs about what it saves there), nor when the builder cannot compute the bound
        (a distributed one) or it does not hold (some ``rho < 0``).  ``ole_stats``
        counts the pair histograms' work (node pairs x features) at the root and below
        it, and how much of it was built.

        A node whose pair histograms its parent's split made by subtraction
        (:meth:`_split_pair_histograms`) builds only the features they lack; a node
        that builds every candidate feature keeps its histograms for its children when
        the subtraction is on (``OLE_PAIR_SUBTRACTION``, exact OLE over every feature).
        """
        data = self.histograms
        sp = self.splitter
        stats = self.ole_stats
        noise = self._node_noise(node)
        g, h, n = node.sum_gradients, node.sum_hessians, node.count
        n_pairs = data.pair_count(node.rows) if hasattr(data, "pair_count") else 0
        where = "root" if node.depth == 0 else "deep"
        stats[where + "_work"] += n_pairs * len(feats)
        stats["features"] += len(feats)
        if node.pair_hist is not None:  # from the parent's split, for its features
            if feats is not node.pair_feats:  # features the parent did not build
                have = np.zeros(self.n_features, dtype=bool)
                have[node.pair_feats] = True
                missing = feats[~have[feats]]
                if missing.shape[0] > 0:
                    data.pair_histogram(node.rows, missing, out=node.pair_hist)
                    have[missing] = True
                    node.pair_feats = np.flatnonzero(have).astype(np.int32)
                    stats[where + "_built"] += n_pairs * missing.shape[0]
            return sp.find_split(
                node.hist, feats, g, h, n, pair_hist=node.pair_hist,
                pair_sum=self._pair_sum(node), noise=noise,
            )  # fmt: skip
        bounds = None
        if (
            noise is None  # the bound prunes by exact gains: noise may pick any feature
            and OLE_BRANCH_AND_BOUND
            and hasattr(data, "pair_mass_histogram")
            and len(feats) > OLE_BOUND_BLOCK
            and n_pairs * len(feats) >= OLE_BOUND_MIN_WORK
        ):
            masses = data.pair_mass_histogram(node.rows, feats)
            if masses is not None:
                bounds = sp.ole_bounds(
                    node.hist, masses[0], masses[1], feats, g, h, n, self._pair_sum(node)
                )
        if bounds is None:
            stats[where + "_built"] += n_pairs * len(feats)
            if not self._subtract_pairs:
                pair_hist, pair_sum = data.pair_histogram(node.rows, feats)
                return sp.find_split(
                    node.hist, feats, g, h, n, pair_hist=pair_hist, pair_sum=pair_sum,
                    noise=noise,
                )  # fmt: skip
            # kept (until the node is split or made a leaf) for the children's subtraction
            node.pair_hist, node.pair_feats = self._pair_buffer(), feats
            pair_hist, pair_sum = data.pair_histogram(node.rows, feats, out=node.pair_hist)
            return sp.find_split(
                node.hist, feats, g, h, n, pair_hist=pair_hist, pair_sum=pair_sum, noise=noise
            )
        order = np.argsort(-bounds, kind="stable")  # NaN bounds are +inf already
        best = -np.inf
        acc = None  # the node's pair histograms of the features built so far
        pair_sum = 0.0
        done = 0
        while done < order.shape[0]:
            threshold = best - (OLE_BOUND_SLACK * abs(best) + 1e-12)
            step = order[done : done + OLE_BOUND_BLOCK]
            step = step[~(bounds[step] < threshold)]  # bounds decrease along ``order``
            if step.shape[0] == 0:
                break
            block = feats[np.sort(step)]
            pair_hist, pair_sum = data.pair_histogram(node.rows, block)
            if acc is None:
                acc = pair_hist
            elif acc is not pair_hist:  # a builder that returns a new array per call
                acc[block] = pair_hist[block]
            gains = sp.search(node.hist, block, g, h, n, pair_hist=acc, pair_sum=pair_sum)
            best = max(best, float(np.max(gains)))
            done += step.shape[0]
        stats[where + "_built"] += n_pairs * done
        stats["features_pruned"] += len(feats) - done
        # what an oracle order would build: the features whose bound reaches the best
        threshold = best - (OLE_BOUND_SLACK * abs(best) + 1e-12)
        stats["needed_work"] += n_pairs * int(np.sum(~(bounds < threshold)))
        return sp.pick(feats[np.sort(order[:done])], g, h, n)

    def _apply_split(self, node: TreeNode, ids: itertools.count, last: bool = False):
        """Split ``node``; build the children's histograms that a split search will read
        (none when ``last``: the children stay leaves)."""
        info = node.split_info
        data = self.histograms
        left_rows, right_rows = data.split(node.rows, info)
        self._n_splits += 1
        left = TreeNode(
            node_id=next(ids),
            depth=node.depth + 1,
            rows=left_rows,
            count=info.count_left,
            sum_gradients=info.sum_gradient_left,
            sum_hessians=info.sum_hessian_left,
            value=info.value_left,
            seq=self._n_splits,
            side=0,
        )
        right = TreeNode(
            node_id=next(ids),
            depth=node.depth + 1,
            rows=right_rows,
            count=info.count_right,
            sum_gradients=info.sum_gradient_right,
            sum_hessians=info.sum_hessian_right,
            value=info.value_right,
            seq=self._n_splits,
            side=1,
        )
        node.left, node.right = left, right
        if self._use_pairs:
            # OLE leaf values use the corrected hessians of each child's own pairs
            for child in (left, right):
                child.value = self.splitter.leaf_value(
                    child.sum_gradients, child.sum_hessians, self._pair_sum(child)
                )
            self._split_pair_histograms(node, left, right, last)
        # histograms: brute force on the smaller child, subtraction for the larger; only
        # for children that can be split (a child that cannot is a leaf whatever its
        # histogram: _consider never searches it), so the same histograms reach the
        # split search as when every child's is built
        small, large = (left, right) if left.count <= right.count else (right, left)
        need_small = not last and self._can_split(small.count, small.depth)
        need_large = not last and self._can_split(large.count, large.depth)
        if need_small or need_large:
            small.hist = data.build(small.rows, self._features)
        if need_large:
            large.hist = data.subtract(node.hist, small.hist, self._features)
        else:
            data.release(node.hist)
        if not need_small:
            data.release(small.hist)
            small.hist = None
        node.hist = None
        return left, right

    def _split_pair_histograms(
        self, node: TreeNode, left: TreeNode, right: TreeNode, last: bool
    ) -> None:
        """The subtraction trick for pair histograms (issue 16): from the split node's
        kept pair histograms, build the child with fewer pairs directly and give the
        other ``parent - that child - the pairs the split sent across`` (every pair of
        the node is wholly left, wholly right or across, and a pair histogram is a sum
        over pairs, so the three add up to the parent's).  Only when it is less work
        than building the children that a split search will read: the node's
        crossing pairs are fewer than the larger child's.

        The sums come out in another order than a direct build, so they may differ in
        the last bits (as the gradient histograms' subtraction does); the split search
        reads them exactly as it reads a built histogram.
        """
        parent_hist, feats = node.pair_hist, node.pair_feats
        node.pair_hist = node.pair_feats = None
        if parent_hist is None:
            return
        data = self.histograms
        n_left, n_right = data.pair_count(left.rows), data.pair_count(right.rows)
        small, large = (left, right) if n_left <= n_right else (right, left)
        n_small, n_large = min(n_left, n_right), max(n_left, n_right)
        need_small = not last and self._can_split(small.count, small.depth)
        need_large = not last and self._can_split(large.count, large.depth)
        n_cross = data.crossing_pair_count(node.rows, right.rows)
        direct = n_small * need_small + n_large * need_large
        if not need_large or n_small + n_cross >= direct:
            self._pair_pool.append(parent_hist)
            return
        small_hist = self._pair_buffer()
        data.pair_histogram(small.rows, feats, out=small_hist)
        cross = self._pair_buffer()
        data.crossing_pair_histogram(node.rows, right.rows, feats, cross)
        nb = self.histograms.n_bins_non_missing
        subtract_histograms(parent_hist, small_hist, feats, nb)
        subtract_histograms(parent_hist, cross, feats, nb)
        self._pair_pool.append(cross)
        self.ole_stats["deep_built"] += (n_small + n_cross) * len(feats)
        large.pair_hist, large.pair_feats = parent_hist, feats
        if need_small:
            small.pair_hist, small.pair_feats = small_hist, feats
        else:
            self._pair_pool.append(small_hist)

    # --- output ---
    def _finalize(self, root: TreeNode) -> GrownTree:
        nodes_list: list[TreeNode] = []
        stack = [root]
        while stack:  # pre-order numbering: root 0, then left subtree, then right
            nd = stack.pop()
            nodes_list.append(nd)
            if nd.left is not None:
                stack.append(nd.right)
                stack.append(nd.left)
        index = {id(nd): k for k, nd in enumerate(nodes_list)}
        # fill the node array by columns (one NumPy assignment per field, not one
        # structured-record write per field and node)
        m = len(nodes_list)
        nodes = np.zeros(m, dtype=NODE_DTYPE)
        nodes["value"] = [nd.value for nd in nodes_list]
        nodes["count"] = [nd.count for nd in nodes_list]
        nodes["sum_hessians"] = [nd.sum_hessians for nd in nodes_list]
        nodes["depth"] = [nd.depth for nd in nodes_list]
        leaves = []
        feature = [-1] * m
        bin_threshold = [0] * m
        num_threshold = [0.0] * m
        missing_left = [0] * m
        gain = [0.0] * m
        left = [-1] * m
        right = [-1] * m
        is_leaf = [0] * m
        for k, nd in enumerate(nodes_list):
            if nd.left is None:
                is_leaf[k] = 1
                leaves.append((nd.rows, k))
            else:
                info = nd.split_info
                feature[k] = info.feature_idx
                bin_threshold[k] = info.bin_idx
                num_threshold[k] = self._num_threshold(info.feature_idx, info.bin_idx)
                missing_left[k] = info.missing_go_to_left
                gain[k] = info.gain
                left[k] = index[id(nd.left)]
                right[k] = index[id(nd.right)]
        nodes["feature_idx"] = feature
        nodes["bin_threshold"] = bin_threshold
        nodes["num_threshold"] = num_threshold
        nodes["missing_go_to_left"] = missing_left
        nodes["gain"] = gain
        nodes["left"] = left
        nodes["right"] = right
        nodes["is_leaf"] = is_leaf
        partition = self.histograms.partition
        leaf_ranges = []
        if partition is not None:
            leaf_ranges = [(r[0].start, r[0].stop, k) for r, k in leaves]
        return GrownTree(nodes=nodes, leaf_ranges=leaf_ranges, partition=partition, leaves=leaves)

    def _num_threshold(self, feature_idx: int, bin_idx: int) -> float:
        # bin <= b  <=>  x <= thresholds[b]; the last value bin has no threshold (+inf).
        return float(self.bin_thresholds[feature_idx, bin_idx])

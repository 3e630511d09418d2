"""Split finding on histograms and the partition of a node's rows.

The grower owns one ``partition`` array (int32 row ids); every node is the view
``partition[start:stop]``.  Splitting a node reorders that view in place so the left
child's rows come first (stable, so row order inside a child is deterministic)::

    partition: [ ... | l l r l r r l | ... ]   ->   [ ... | l l l l r r r | ... ]
                     start         stop                 start  ^mid     stop

Thresholds: feature ``f`` has value bins ``0 .. n_bins_non_missing[f]-1`` and the missing
bin ``missing_bin``.  A split at ``bin_threshold = b`` sends bins ``<= b`` left; missing
values go left or right as ``missing_go_to_left`` says.  Both directions are tried when the
node has missing values; otherwise missing values (seen later at prediction) follow the
child with more documents.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from ltrboost._numba import kernel, over_rows
from ltrboost.criteria import (
    OLE_HESSIAN_RTOL,
    _leaf_value,
    _side_score,
    _split_gain,
    ole_hessian,
)
from ltrboost.objectives.pair_selection import (
    _M32,
    _hash32,
    _hash64_to_32,
    _hash64_to_32_reference,
)

# The scalar criteria called from Python run as the kernels' Python functions: the same
# IEEE float64 operations in the same order (hence the same values) with nothing to
# compile (no standalone specialisation and CPython wrapper to build for a Python caller).
_leaf_value_py = getattr(_leaf_value, "py_func", _leaf_value)  # (NUMBA_DISABLE_JIT: the function)
_ole_hessian_py = getattr(ole_hessian, "py_func", ole_hessian)


class SplitInfo(NamedTuple):
    """The best split of a node (gain <= 0 means: do not split)."""

    gain: float
    feature_idx: int
    bin_idx: int
    missing_go_to_left: bool
    sum_gradient_left: float
    sum_hessian_left: float  # objective hessians (uncorrected)
    count_left: int
    sum_gradient_right: float
    sum_hessian_right: float
    count_right: int
    value_left: float  # Newton leaf values (OLE-corrected under "ole")
    value_right: float


class SplitParams(NamedTuple):
    min_samples_leaf: int
    min_sum_hessian_in_leaf: float
    l2_regularization: float
    min_gain_to_split: float
    criterion_code: int  # 0 newton, 1 se, 2 ole


class SplitNoise(NamedTuple):
    """CatBoost's ``random_strength`` noise for one node's split search (see
    :func:`split_noise_sigma`): the draws of stream ``seed`` (one per tree,
    :class:`SplitNoiseSeeds`) from counter ``node * stride`` on, of scale ``sigma``."""

    seed: int
    sigma: float
    node: int


# The largest noise scale: a standard normal draw of noise_normal is below 6.77 in size
# (Box-Muller from uniforms of at least 2**-33), so sigma * z stays under 2**1023.
SPLIT_NOISE_SIGMA_MAX = 2.0**1020


def split_noise_sigma(
    random_strength: float,
    sum_squared_gradients: float,
    sum_hessians: float,
    n_samples: int,
    iteration: int,
    learning_rate: float,
) -> float:
    """The standard deviation of the split-score noise of round ``iteration`` (0-based).

    CatBoost (``greedy_tensor_search.cpp``, ``CalcScoreStDev`` with its default score
    type ``NormalWithModelSizeDecrease``; ``tensor_search_helpers.cpp``,
    ``SetBestScore``) adds to every candidate split's *score* a draw of
    ``N(0, s^2)``::

        s = random_strength * sqrt(sum_i g_i^2 / N) * N / (N + exp(t * eta))

    with ``g_i`` the weighted derivatives of all ``N`` training documents, ``t`` the
    trees already built and ``eta`` the learning rate (``modelLength = t * eta``;
    ``CalcDerivativesStDevFromZeroMultiplier`` is ``e^(ln N - L) / (1 + e^(ln N -
    L))``): the noise fades out once ``t * eta`` passes ``ln N``.

    Its score is not our gain.  CatBoost's default score function (``Cosine``, the
    one YetiRank trains with; ``score_calcers.h``) of a split into leaves ``L``, ``R``
    is, with its ``l2_leaf_reg`` -> 0, ``sqrt(G_L^2/W_L + G_R^2/W_R)`` (``W`` the
    documents' weights): the square root of the Newton score with unit hessians.  So
    the noise is added to ``sqrt(Q)``, where ``Q = gain + G^2/(H + lam)`` is the
    criterion's children score (eq. 9 of seed 000 for ``"newton"``, with counts for
    ``"se"``, eq. 13's one-leaf hessians for ``"ole"``): the parent's term is the same
    for every candidate of a node, so without noise ``argmax sqrt(Q)`` is the split
    ``argmax gain`` chooses.  ``sqrt(Q)`` is in units of ``g / sqrt(h)``, so the
    gradients' scale ``sqrt(sum g^2 / N)`` becomes ``sqrt(sum g^2 / sum h)`` (the
    criterion's hessians: ``sum h = N`` under ``"se"``, and for unit hessians, where it
    is CatBoost's exactly).  This keeps the noise's effect unchanged when a loss is
    scaled (``g, h -> a g, a h`` scales ``sqrt(Q)`` and ``s`` by ``sqrt(a)``), which
    adding CatBoost's ``s`` to the gain itself (its ``L2`` score function) would not.
    0 when ``random_strength`` is 0 or the hessians do not sum to a positive number.
    At most ``SPLIT_NOISE_SIGMA_MAX`` (``2**1020``; a huge ``random_strength`` such as
    1e308): every noisy score ``sqrt(Q) + s z`` stays finite (``|z| < 8``), and a scale
    that large leaves the choice to the noise alone, as any scale that dwarfs the scores.
    """
    if not random_strength > 0 or not sum_hessians > 0 or not n_samples > 0:
        return 0.0
    scale = math.sqrt(max(float(sum_squared_gradients), 0.0) / float(sum_hessians))
    x = float(iteration) * float(learning_rate) - math.log(float(n_samples))
    multiplier = 1.0 / (1.0 + math.exp(x)) if x < 700.0 else 0.0
    sigma = float(random_strength) * scale * multiplier
    if math.isinf(sigma):  # random_strength * scale overflowed: multiply the small ones first
        sigma = float(random_strength) * (scale * multiplier)
    if not math.isfinite(sigma):  # NaN (sum g^2 was); inf (the scale's overflow) is capped
        return SPLIT_NOISE_SIGMA_MAX if sigma > 0 else 0.0
    return min(sigma, SPLIT_NOISE_SIGMA_MAX)


_NOISE_SEED_MODULUS = 2**62


def _splitmix_chain(values) -> int:
    """SplitMix64 of each of ``values`` in turn, below ``2**62``."""
    x = 0
    for v in values:
        x = (x ^ int(v)) + 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & 0xFFFFFFFFFFFFFFFF
        x = (x ^ (x >> 27)) * 0x94D049BB133111EB & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 31
    return x % _NOISE_SEED_MODULUS


def split_noise_seed(random_state: int, iteration: int, output: int) -> int:
    """The noise seed of the tree of ``output`` in round ``iteration`` before
    :class:`SplitNoiseSeeds` moves it off a stream an earlier tree drew: a function of
    the three alone (SplitMix64 of each in turn), so a model is the same whatever the
    threads, and a resumed run draws what the uninterrupted one drew."""
    return _splitmix_chain((random_state, iteration, output))


class SplitNoiseSeeds:
    """The noise seeds of one run's trees (tree ``t = iteration * n_outputs + output``).

    :func:`noise_normal` draws from a 32-bit stream, a hash of the tree's seed
    (:meth:`stream`): the seeds of :func:`split_noise_seed` give two trees of a run one
    stream (every draw the same) with probability ~ ``trees**2 / 2**33`` (5% at 20,000
    trees; ``random_state=58``: rounds 4105 and 7375).  So tree ``t`` takes
    ``split_noise_seed(random_state, iteration, output)`` unless an earlier tree of the
    run already drew from its stream; then the first of ``_splitmix_chain((random_state,
    iteration, output, attempt))``, ``attempt = 1, 2, ...``, whose stream is new.  Every
    tree of a run (up to ``2**32``) has its own stream, and a tree whose stream no
    earlier tree had (each but with probability ``earlier trees / 2**32``) keeps the
    seed, hence the draws, of earlier versions.  A function of ``(random_state,
    n_outputs, iteration, output)`` alone: the same on Dask and after
    ``init_model``/``--resume`` (which recompute the earlier trees' streams, ~3 us a
    tree); the trees are asked for in order, and memory is ~100 bytes a tree.
    """

    def __init__(self, random_state: int, n_outputs: int) -> None:
        self.random_state = int(random_state)
        self.n_outputs = int(n_outputs)
        self._seeds: list[int] = []
        self._streams: set[int] = set()

    @staticmethod
    def stream(seed: int) -> int:
        """The 32-bit stream :func:`noise_normal` draws from for ``seed`` (its first line)."""
        return _hash64_to_32_reference(int(seed), int(_KEY_NOISE_SEED))

    def __call__(self, iteration: int, output: int) -> int:
        t = int(iteration) * self.n_outputs + int(output)
        seeds, streams, rs, n_out = self._seeds, self._streams, self.random_state, self.n_outputs
        while len(seeds) <= t:
            it, k = divmod(len(seeds), n_out)
            seed = split_noise_seed(rs, it, k)
            attempt = 0
            while (st := self.stream(seed)) in streams:
                attempt += 1
                seed = _splitmix_chain((rs, it, k, attempt))
            streams.add(st)
            seeds.append(seed)
        return seeds[t]


# Below these sizes the serial kernels run: a parallel launch costs more than the work.
# Split search is ~3-5 ns per feature x bin: a node of 136 features x 256 bins takes
# ~0.15 ms serially, about what handing blocks to Python threads costs on a busy
# machine, so it runs in parallel only from ~1 ms of work (thousands of features).
SERIAL_SPLIT_WORK = 262_144  # selected features x bins
SERIAL_PARTITION_ROWS = 32_768


def find_node_split(
    hist: NDArray[np.float64],
    feature_indices: NDArray[np.int32],
    n_bins_non_missing: NDArray[np.int32],
    missing_bin: int,
    sum_gradients: float,
    sum_hessians: float,
    count: int,
    params: SplitParams,
    pair_hist: NDArray[np.float64] | None = None,
    pair_sum: float = 0.0,
    buffers: tuple[NDArray, ...] | None = None,
    noise: SplitNoise | None = None,
) -> SplitInfo | None:
    """Best split over the selected features, or None when no valid split exists.

    ``pair_hist`` (n_features, n_bins, 3) and ``pair_sum`` are the node's pair hessian
    histograms for the ``"ole"`` criterion (see :mod:`ltrboost.histogram`).  ``noise``
    (``random_strength``; None or ``sigma == 0``: none): the split is chosen by noisy
    scores (:func:`_noisy_split_body`); its gain, sums and leaf values are the
    noiseless ones of that split.
    """
    n_features = hist.shape[0]
    if feature_indices.shape[0] == 0:
        return None  # no usable feature (all constant, or none drawn): a leaf
    if buffers is None:
        buffers = alloc_split_buffers(n_features)
    if noise is not None and noise.sigma > 0.0:
        k = _search_features_noisy(
            hist, feature_indices, n_bins_non_missing, missing_bin, sum_gradients,
            sum_hessians, count, params, pair_hist, pair_sum, buffers, noise,
        )  # fmt: skip
        if k < 0:
            return None  # no candidate above min_gain_to_split: a leaf, as without noise
        return pick_split(feature_indices, sum_gradients, sum_hessians, count, params, buffers, k)
    # the first selected feature of largest gain (ties -> lowest selected index)
    k = _search_features(
        hist, feature_indices, n_bins_non_missing, missing_bin, sum_gradients,
        sum_hessians, count, params, pair_hist, pair_sum, buffers,
    )  # fmt: skip
    return pick_split(feature_indices, sum_gradients, sum_hessians, count, params, buffers, k)


def pick_split(
    feature_indices: NDArray[np.int32],
    sum_gradients: float,
    sum_hessians: float,
    count: int,
    params: SplitParams,
    buffers: tuple[NDArray, ...],
    k: int | None = None,
) -> SplitInfo | None:
    """The best of the selected features' splits already searched into ``buffers`` (by
    :func:`_search_features`, possibly in several calls over parts of the features);
    None when none is valid or its gain is not above ``min_gain_to_split``.

    Ties go to the feature that comes first in ``feature_indices``.  ``k``: that
    feature's position when the caller already knows it (one search over all of them).
    """
    if feature_indices.shape[0] == 0:
        return None
    gains, bins, miss_left, stats = buffers
    if k is None:
        k = int(np.argmax(gains[feature_indices]))  # ties -> lowest selected feature index
    f = int(feature_indices[k])
    # the split is *chosen* by gains (eq. 9 / eq. 13); the gain that orders nodes
    # and decides whether to split is stats[f, 5] (differs only under "ole").  Plain
    # Python floats from here (a few numpy scalar calls per node add up on small data);
    # the leaf values keep their float64 scalars (numpy's division semantics).
    gl, hl, nl, _, _, best = stats[f].tolist()
    if not math.isfinite(gains[f]) or not best > params.min_gain_to_split:
        return None
    gr = sum_gradients - gl
    hr = sum_hessians - hl
    nr = count - nl
    l2 = params.l2_regularization
    gl64 = stats[f, 0]
    return SplitInfo(
        gain=best,
        feature_idx=f,
        bin_idx=int(bins[f]),
        missing_go_to_left=bool(miss_left[f]),
        sum_gradient_left=gl,
        sum_hessian_left=hl,
        count_left=int(round(nl)),
        sum_gradient_right=float(gr),
        sum_hessian_right=float(hr),
        count_right=int(round(nr)),
        value_left=float(_leaf_value_py(gl64, stats[f, 3], l2)),
        value_right=float(_leaf_value_py(sum_gradients - gl64, stats[f, 4], l2)),
    )


def _search_features(
    hist, feature_indices, n_bins_non_missing, missing_bin, sum_gradients, sum_hessians,
    count, params, pair_hist, pair_sum, buffers,
) -> int:  # fmt: skip
    """Fill ``buffers`` with every selected feature's best split (see
    :func:`_best_split_body`); serial when small, else parallel over features.
    Returns the position in ``feature_indices`` of the first feature of largest gain
    (``np.argmax`` of the selected gains)."""
    gains, bins, miss_left, stats = buffers
    use_pairs = pair_hist is not None
    n_sel = feature_indices.shape[0]
    serial = n_sel * hist.shape[1] < SERIAL_SPLIT_WORK
    args = (
        hist,
        feature_indices,
        n_bins_non_missing,
        missing_bin,
        float(sum_gradients),
        float(sum_hessians),
        float(count),
        params.min_samples_leaf,
        params.min_sum_hessian_in_leaf,
        params.l2_regularization,
        params.criterion_code,
        # None unless OLE with pairs: Numba prunes the kernel's pair branches for a
        # None argument, so Newton/SE fits never compile the OLE code (an OLE fit
        # compiles its own specialisation, with it).
        pair_hist if use_pairs and params.criterion_code == 2 else None,
        float(pair_sum),
        gains,
        bins,
        miss_left,
        stats,
    )
    if serial:
        return int(_best_split_body(args[0], args[1], 0, n_sel, *args[2:]))
    _find_best_split_per_feature(*args)
    return int(np.argmax(gains[feature_indices]))


def _search_features_noisy(
    hist, feature_indices, n_bins_non_missing, missing_bin, sum_gradients, sum_hessians,
    count, params, pair_hist, pair_sum, buffers, noise,
) -> int:  # fmt: skip
    """:func:`_search_features` with ``random_strength`` noise: fills ``buffers`` with
    each selected feature's split chosen by noisy score (:func:`_noisy_split_body`) and
    returns the position in ``feature_indices`` of the feature of largest noisy score
    (ties: the first), -1 when no feature has a candidate above ``min_gain_to_split``.
    The draws depend only on (stream, node, feature, missing side, bin): the result is
    the same whatever the threads."""
    gains, bins, miss_left, stats = buffers
    n_sel = feature_indices.shape[0]
    keys = np.empty(n_sel, dtype=np.float64)
    use_pairs = pair_hist is not None and params.criterion_code == 2
    n_bins = hist.shape[1]
    stride = 2 * n_bins * hist.shape[0]  # counters of one node: (feature, side, bin)
    args = (
        hist,
        feature_indices,
        n_bins_non_missing,
        missing_bin,
        float(sum_gradients),
        float(sum_hessians),
        float(count),
        params.min_samples_leaf,
        params.min_sum_hessian_in_leaf,
        params.l2_regularization,
        float(params.min_gain_to_split),
        params.criterion_code,
        pair_hist if use_pairs else None,
        float(pair_sum),
        np.int64(noise.seed),
        np.int64(int(noise.node) * stride),
        min(float(noise.sigma), SPLIT_NOISE_SIGMA_MAX),  # finite noisy scores
        gains,
        bins,
        miss_left,
        stats,
        keys,
    )
    if n_sel * n_bins < SERIAL_SPLIT_WORK:
        _noisy_split_body(args[0], args[1], 0, n_sel, *args[2:])
    else:
        over_rows(
            lambda k0, k1: _noisy_split_body(args[0], args[1], k0, k1, *args[2:]),
            n_sel,
            min_rows_per_thread=1,
        )
    k = int(np.argmax(keys))
    return k if keys[k] > -np.inf else -1


def newton_feature_gains(
    hist: NDArray[np.float64],
    feature_indices: NDArray[np.int32],
    n_bins_non_missing: NDArray[np.int32],
    missing_bin: int,
    sum_gradients: float,
    sum_hessians: float,
    count: int,
    params: SplitParams,
    buffers: tuple[NDArray, ...] | None = None,
) -> NDArray[np.float64]:
    """Each selected feature's best Newton gain (eq. 9; -inf: no valid threshold), in
    the order of ``feature_indices``: what ``ole_top_features`` ranks features by."""
    if buffers is None:
        buffers = alloc_split_buffers(hist.shape[0])
    newton = params._replace(criterion_code=0)
    _search_features(
        hist, feature_indices, n_bins_non_missing, missing_bin, sum_gradients,
        sum_hessians, count, newton, None, 0.0, buffers,
    )  # fmt: skip
    return buffers[0][feature_indices].copy()


def ole_gain_bounds(
    hist: NDArray[np.float64],
    mass_hist: NDArray[np.float64],
    tolerance: float,
    feature_indices: NDArray[np.int32],
    n_bins_non_missing: NDArray[np.int32],
    missing_bin: int,
    sum_gradients: float,
    sum_hessians: float,
    count: int,
    pair_sum: float,
    params: SplitParams,
) -> NDArray[np.float64]:
    """An upper bound of each selected feature's best OLE gain (eq. 13 of seed 000),
    from the node's histogram and its *pair-mass* histogram, without pair histograms.

    Under a pairwise loss the one-leaf hessian of a side is (eq. 13)
    ``H_side = sum_{d in side} h_d - 2 P_side``, ``P_side`` the ``rho`` of the node's
    pairs wholly in the side.  Such a pair has its ``doc_i`` and its ``doc_j`` in the
    side, so ``P_side <= O_side = sum_{d in side} out_d`` and
    ``P_side <= I_side = sum_{d in side} in_d``, where ``out_d`` (``in_d``) is the
    ``rho`` of the node's pairs whose ``doc_i`` (``doc_j``) is ``d``, hence, when
    every ``rho >= 0``::

        H_side >= A_side = sum_{d in side} h_d - 2 min(O_side, I_side).

    (Half their sum gives the weaker ``sum_{d in side} a_d``, ``a_d = h_d - inner_d``:
    the hessian of ``d`` from pairs whose partner is outside the node, plus any
    pointwise part.  The minimum is much tighter when a side holds mostly the
    preferred, or mostly the other, documents of its pairs: at the root, where
    ``sum a_d`` is void, and for features that rank well.)  ``G`` does not change,
    and ``G^2 / (H + lam)`` can only grow when ``H`` shrinks (positive denominator),
    so a side's score is at most ``G^2 / (A + lam)`` (``+inf`` when ``A + lam <= 0``
    and ``G != 0``: eq. 13's ``_side_score`` is then 0, or finite); the parent's term
    is the exact search's.  A feature's bound is the largest over the thresholds and
    missing directions the exact search tries (:func:`_best_split_body`, with the same
    count and hessian limits); ``-inf`` when there is none.

    ``mass_hist`` (n_features, n_bins, 2): per bin, the sums of ``out_d`` and ``in_d``
    (:func:`ltrboost.histogram.build_pair_mass_histogram`); ``sum h_d`` comes from the
    node's histogram, as in the exact search.  ``tolerance`` is subtracted from every
    ``A`` before it is used: it covers the rounding of the pair sums on both sides, so
    that the float bound is never below the float gain :func:`_best_split_body`
    computes.  Only valid when every ``rho >= 0``.
    """
    out = np.empty(feature_indices.shape[0], dtype=np.float64)
    n_sel = feature_indices.shape[0]
    args = (
        hist,
        mass_hist,
        feature_indices,
        n_bins_non_missing,
        missing_bin,
        float(sum_gradients),
        float(sum_hessians),
        float(count),
        params.min_samples_leaf,
        params.min_sum_hessian_in_leaf,
        params.l2_regularization,
        float(_ole_hessian_py(sum_hessians, pair_sum)),
        float(tolerance),
        out,
    )
    if n_sel * hist.shape[1] < SERIAL_SPLIT_WORK:
        _ole_bound_body(args[0], args[1], args[2], 0, n_sel, *args[3:])
    else:
        over_rows(
            lambda k0, k1: _ole_bound_body(args[0], args[1], args[2], k0, k1, *args[3:]),
            n_sel,
            min_rows_per_thread=1,
        )
    return out


class Splitter:
    """The split seam of the tree layer: histograms -> best split, sums -> leaf value.

    Knows the bins (``n_bins_non_missing``, ``missing_bin``) and the criterion, nothing
    about rows: it sees only (reduced) histograms and totals, so a local and a
    distributed grower choose the same split from the same histograms.
    """

    def __init__(
        self,
        n_bins_non_missing: NDArray[np.int32],
        missing_bin: int,
        params: SplitParams,
    ) -> None:
        self.n_bins_non_missing = n_bins_non_missing
        self.missing_bin = int(missing_bin)
        self.params = params
        self._buffers = alloc_split_buffers(n_bins_non_missing.shape[0])

    def find_split(
        self,
        hist: NDArray[np.float64],
        feature_indices: NDArray[np.int32],
        sum_gradients: float,
        sum_hessians: float,
        count: int,
        pair_hist: NDArray[np.float64] | None = None,
        pair_sum: float = 0.0,
        noise: SplitNoise | None = None,
    ) -> SplitInfo | None:
        """The node's best split (None: make it a leaf); see :func:`find_node_split`."""
        return find_node_split(
            hist,
            feature_indices,
            self.n_bins_non_missing,
            self.missing_bin,
            sum_gradients,
            sum_hessians,
            count,
            self.params,
            pair_hist=pair_hist,
            pair_sum=pair_sum,
            buffers=self._buffers,
            noise=noise,
        )

    def search(
        self,
        hist: NDArray[np.float64],
        feature_indices: NDArray[np.int32],
        sum_gradients: float,
        sum_hessians: float,
        count: int,
        pair_hist: NDArray[np.float64] | None = None,
        pair_sum: float = 0.0,
    ) -> NDArray[np.float64]:
        """Search the selected features' best splits into the splitter's buffers (the
        other features' entries are kept) and return their criterion gains, in the
        order of ``feature_indices``; :meth:`pick` then chooses among searched ones."""
        _search_features(
            hist, feature_indices, self.n_bins_non_missing, self.missing_bin,
            sum_gradients, sum_hessians, count, self.params, pair_hist, pair_sum,
            self._buffers,
        )  # fmt: skip
        return self._buffers[0][feature_indices].copy()

    def pick(
        self,
        feature_indices: NDArray[np.int32],
        sum_gradients: float,
        sum_hessians: float,
        count: int,
    ) -> SplitInfo | None:
        """The best split among features searched by :meth:`search` (since the last
        search of the same features); see :func:`pick_split`."""
        return pick_split(
            feature_indices, sum_gradients, sum_hessians, count, self.params, self._buffers
        )

    def ole_bounds(
        self,
        hist: NDArray[np.float64],
        mass_hist: NDArray[np.float64],
        tolerance: float,
        feature_indices: NDArray[np.int32],
        sum_gradients: float,
        sum_hessians: float,
        count: int,
        pair_sum: float,
    ) -> NDArray[np.float64]:
        """Upper bounds of the features' OLE gains; see :func:`ole_gain_bounds`."""
        return ole_gain_bounds(
            hist,
            mass_hist,
            tolerance,
            feature_indices,
            self.n_bins_non_missing,
            self.missing_bin,
            sum_gradients,
            sum_hessians,
            count,
            pair_sum,
            self.params,
        )

    def newton_gains(
        self,
        hist: NDArray[np.float64],
        feature_indices: NDArray[np.int32],
        sum_gradients: float,
        sum_hessians: float,
        count: int,
    ) -> NDArray[np.float64]:
        """Each selected feature's best Newton gain; see :func:`newton_feature_gains`."""
        return newton_feature_gains(
            hist,
            feature_indices,
            self.n_bins_non_missing,
            self.missing_bin,
            sum_gradients,
            sum_hessians,
            count,
            self.params,
            buffers=self._buffers,
        )

    def leaf_value(self, sum_gradients: float, sum_hessians: float, pair_sum: float = 0.0) -> float:
        """Newton value ``-G / (H + lam)`` (seed 000, eq. 11) with the OLE-corrected
        one-leaf ``H`` of eq. 13 (``H - 2 * pair_sum``)."""
        return _leaf_value_py(
            sum_gradients,
            _ole_hessian_py(sum_hessians, pair_sum),
            self.params.l2_regularization,
        )


def alloc_split_buffers(n_features: int) -> tuple[NDArray, ...]:
    return (
        np.empty(n_features, dtype=np.float64),
        np.empty(n_features, dtype=np.int32),
        np.empty(n_features, dtype=np.uint8),
        np.empty((n_features, 6), dtype=np.float64),
    )


def split_indices(
    partition: NDArray[np.int32],
    start: int,
    stop: int,
    X_binned: NDArray[np.uint8],
    feature_idx: int,
    bin_idx: int,
    missing_go_to_left: bool,
    missing_bin: int,
    buffer: NDArray[np.int32],
    n_threads: int,
) -> int:
    """Stable in-place partition of ``partition[start:stop]``; returns the left size."""
    n = stop - start
    if n < SERIAL_PARTITION_ROWS or n_threads <= 1:
        return int(
            _split_indices_serial(
                partition[start:stop],
                X_binned[:, feature_idx],
                bin_idx,
                missing_go_to_left,
                missing_bin,
                buffer[:n],
            )
        )
    n_chunks = max(1, min(n_threads, n // 16384))
    return int(
        _split_indices(
            partition[start:stop],
            X_binned[:, feature_idx],
            bin_idx,
            missing_go_to_left,
            missing_bin,
            buffer[:n],
            n_chunks,
        )
    )


# --- kernels ---


def _find_best_split_per_feature(hist, feature_indices, *args):
    """:func:`_best_split_body` over blocks of the selected features on Python threads
    (each feature's best split is its own: the result does not depend on the split)."""
    over_rows(
        lambda k0, k1: _best_split_body(hist, feature_indices, k0, k1, *args),
        feature_indices.shape[0],
        min_rows_per_thread=1,
    )


@kernel
def _best_split_body(
    hist,
    feature_indices,
    k_lo,
    k_hi,
    n_bins_non_missing,
    missing_bin,
    sum_g,
    sum_h,
    count,
    min_samples_leaf,
    min_sum_hessian,
    l2,
    criterion_code,
    pair_hist,
    pair_sum,
    gains_out,
    bins_out,
    miss_left_out,
    stats_out,
):
    # hist: IN (n_features, n_bins, 3); pair_hist: IN (n_features, n_bins, 3) holding per
    # bin the pair-rho sums P_max (by max bin), P_min (by min bin) and Q (pairs with one
    # missing document, by the other's bin), or None (not OLE: every
    # "pair_hist is not None" branch is pruned before typing); pair_sum: IN total rho of
    # the node's pairs.
    # *_out: OUT per feature: best gain (-inf if none), bin, missing side, and
    # stats = (G_left, H_left, n_left, H_left_for_value, H_right_for_value, gain) where
    # gain is the node gain reported for the chosen split (see _two_leaf_gain).
    # Returns the first k in k_lo..k_hi-1 of largest gains_out[feature_indices[k]]
    # (np.argmax over the block; k_lo when every gain is -inf).
    use_counts = criterion_code == 1
    top_k = k_lo
    top_gain = -np.inf
    parent_h_crit = count if use_counts else sum_h
    if pair_hist is not None:
        parent_h_crit = ole_hessian(sum_h, pair_sum)
    for k in range(k_lo, k_hi):
        f = feature_indices[k]
        h = hist[f]
        nb = n_bins_non_missing[f]
        miss_g = h[missing_bin, 0]
        miss_h = h[missing_bin, 1]
        miss_n = h[missing_bin, 2]
        best_gain = -np.inf
        best_bin = 0
        best_ml = 0
        b_gl = 0.0
        b_hl = 0.0
        b_nl = 0.0
        b_hlc = 0.0
        b_hrc = 0.0
        b_cross = 0.0
        # total pair mass of non-missing pairs whose min bin is > b, and Q beyond b
        pmin_total = 0.0
        q_total = 0.0
        if pair_hist is not None:
            for b in range(nb):
                pmin_total += pair_hist[f, b, 1]
                q_total += pair_hist[f, b, 2]
        for direction in range(2):
            # direction 0: missing right; 1: missing left (only if the node has missing)
            if direction == 1 and miss_n == 0.0:
                break
            gl = 0.0
            hl = 0.0
            nl = 0.0
            if direction == 1:
                gl = miss_g
                hl = miss_h
                nl = miss_n
            cum_pmax = 0.0
            cum_pmin = 0.0
            cum_q = 0.0
            last = nb - 1 if direction == 1 else nb
            if direction == 0 and miss_n == 0.0:
                last = nb - 1
            for b in range(last):
                gl += h[b, 0]
                hl += h[b, 1]
                nl += h[b, 2]
                if pair_hist is not None:
                    cum_pmax += pair_hist[f, b, 0]
                    cum_pmin += pair_hist[f, b, 1]
                    cum_q += pair_hist[f, b, 2]
                nr = count - nl
                if nl < min_samples_leaf or nr < min_samples_leaf:
                    continue
                hr = sum_h - hl
                if hl < min_sum_hessian or hr < min_sum_hessian:
                    continue
                gr = sum_g - gl
                if use_counts:
                    hl_crit = nl
                    hr_crit = nr
                else:
                    hl_crit = hl
                    hr_crit = hr
                hl_val = hl
                hr_val = hr
                if pair_hist is not None:
                    # rho mass of the pairs wholly left / wholly right of threshold b
                    if direction == 0:
                        # missing right: left iff max bin <= b; right iff min bin > b
                        left_pairs = cum_pmax
                        right_pairs = pair_sum - cum_pmin
                    else:
                        # missing left: a pair with one missing document is wholly left
                        # iff the other's bin <= b, wholly right never
                        both_missing = pair_hist[f, missing_bin, 1]
                        left_pairs = cum_pmax + cum_q + both_missing
                        right_pairs = (pmin_total - cum_pmin) - (q_total - cum_q)
                    hl_val = ole_hessian(hl, left_pairs)
                    hr_val = ole_hessian(hr, right_pairs)
                    hl_crit = hl_val
                    hr_crit = hr_val
                gain = _split_gain(gl, hl_crit, gr, hr_crit, sum_g, parent_h_crit, l2)
                if gain > best_gain:
                    best_gain = gain
                    best_bin = b
                    best_ml = direction
                    b_gl = gl
                    b_hl = hl
                    b_nl = nl
                    b_hlc = hl_val
                    b_hrc = hr_val
                    if pair_hist is not None:
                        b_cross = pair_sum - left_pairs - right_pairs
        if miss_n == 0.0 and best_gain > -np.inf:
            # no missing values here: unseen missing values follow the larger child
            best_ml = 1 if b_nl >= count - b_nl else 0
        reported = best_gain
        if pair_hist is not None:
            if best_gain > -np.inf:
                reported = _two_leaf_gain(
                    b_gl, b_hlc, sum_g - b_gl, b_hrc, b_cross, sum_g, parent_h_crit, l2
                )
        stats_out[f, 5] = reported
        gains_out[f] = best_gain
        if best_gain > top_gain:
            top_gain = best_gain
            top_k = k
        bins_out[f] = best_bin
        miss_left_out[f] = best_ml
        stats_out[f, 0] = b_gl
        stats_out[f, 1] = b_hl
        stats_out[f, 2] = b_nl
        stats_out[f, 3] = b_hlc
        stats_out[f, 4] = b_hrc
    return top_k


# The split-score noise's own stream keys (pair_selection's are 0x9E3779B9 and
# 0x632BE5AB): its draws are not those of yetirank's or the sampled pairs' streams.
_KEY_NOISE_SEED = np.uint64(0x85EBCA6B)
_KEY_NOISE_COUNTER = np.uint64(0xC2B2AE35)
# Counters from 2**31 on (words 2c, 2c + 1 of 33 bits and more): the low and high
# halves of a word hashed apart under these keys (see noise_normal).
_KEY_NOISE_WORD_LO = np.uint64(0x27D4EB2F)
_KEY_NOISE_WORD_HI = np.uint64(0x165667B1)
NOISE_COUNTER_32 = 2**31  # the counters drawn as in every version (words below 2**32)


@kernel
def _noise_word(v):
    """Hash of the 64-bit word ``v`` (uint64) of a counter past ``NOISE_COUNTER_32``,
    below ``2**32``: the halves are hashed before they are combined, so two words
    agree on one uniform with probability 2**-32 and on both (``2c``, ``2c + 1``) never
    but by chance."""
    lo = _hash32((v & _M32) ^ _KEY_NOISE_WORD_LO)
    hi = _hash32((v >> np.uint64(32)) ^ _KEY_NOISE_WORD_HI)
    return _hash32(lo ^ hi)


@kernel
def noise_normal(seed, counter):
    """Standard normal draw ``counter`` of the noise stream ``seed`` (both >= 0): Box-
    Muller over two uniforms on (0, 1) of the counter-based hash of
    :func:`ltrboost.objectives.pair_selection.random_uniform` (counters ``2c``,
    ``2c + 1``), under the noise's own keys.

    That hash takes a counter's word ``v`` to ``h(v) = H(lo ^ H(hi ^ key))``: for
    ``v >= 2**32`` the XOR inside ``H`` made ``2c`` and ``2c + 1`` land on the words
    of one lower counter (in order or swapped), so from counter ``2**31`` on (a node
    of 700 features x 4095 leaves) each draw repeated a lower one's uniforms.  Counters
    from ``NOISE_COUNTER_32`` on hash their word with :func:`_noise_word`; those below
    draw as in every version.  Distinct trees' streams: :class:`SplitNoiseSeeds`."""
    stream = _hash64_to_32(np.uint64(seed), _KEY_NOISE_SEED)
    c = np.uint64(counter) * np.uint64(2)
    if counter < NOISE_COUNTER_32:
        w1 = _hash64_to_32(c, _KEY_NOISE_COUNTER)
        w2 = _hash64_to_32(c + np.uint64(1), _KEY_NOISE_COUNTER)
    else:
        w1 = _noise_word(c)
        w2 = _noise_word(c + np.uint64(1))
    z1 = _hash32(stream ^ w1)
    z2 = _hash32(stream ^ w2)
    u1 = (np.float64(z1) + 0.5) * 2.3283064365386963e-10  # 2**-32
    u2 = (np.float64(z2) + 0.5) * 2.3283064365386963e-10
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)


@kernel
def _noisy_split_body(
    hist,
    feature_indices,
    k_lo,
    k_hi,
    n_bins_non_missing,
    missing_bin,
    sum_g,
    sum_h,
    count,
    min_samples_leaf,
    min_sum_hessian,
    l2,
    min_gain,
    criterion_code,
    pair_hist,
    pair_sum,
    seed,
    node_base,
    sigma,
    gains_out,
    bins_out,
    miss_left_out,
    stats_out,
    keys_out,
):
    # _best_split_body (same thresholds, limits and sums, in the same order: the same
    # floats) with CatBoost's random_strength (SetBestScore, then SelectBestCandidate):
    # every candidate (feature, missing side, bin) whose criterion gain is above
    # min_gain gets score sqrt(Q) + sigma * z (Q = gain + the parent's term: the
    # children's score, see split_noise_sigma), a feature's split is its candidate of
    # largest noisy score, and the feature gets a fresh draw on its split's sqrt(Q) in
    # keys_out[k] (-inf: no candidate).  Draw counters: node_base + (f * 2 + side) *
    # n_bins + bin; the feature's draw at bin = missing_bin (never a threshold).
    # gains_out, stats_out etc. are the chosen split's noiseless values, as
    # _best_split_body writes them.  sigma > 0 only: sigma == 0 is _best_split_body.
    # The candidate loop repeats _best_split_body's on purpose: one inlined helper for
    # both (stop 40, measured) cost 4% of a Newton tree on MQ2008 (6.45 -> 6.7 ms, the
    # split search) and 0.15-0.3 s more compilation per fit.  A change to the candidate
    # rule goes into both; tests/test_rstrength_adversarial7.py checks they agree
    # (vanishing noise chooses the noiseless split, with its gain and sums).
    use_counts = criterion_code == 1
    parent_h_crit = count if use_counts else sum_h
    if pair_hist is not None:
        parent_h_crit = ole_hessian(sum_h, pair_sum)
    parent_score = _side_score(sum_g, parent_h_crit, l2)
    n_bins = hist.shape[1]
    for k in range(k_lo, k_hi):
        f = feature_indices[k]
        h = hist[f]
        nb = n_bins_non_missing[f]
        miss_g = h[missing_bin, 0]
        miss_h = h[missing_bin, 1]
        miss_n = h[missing_bin, 2]
        best_key = -np.inf
        best_gain = -np.inf
        best_bin = 0
        best_ml = 0
        b_gl = 0.0
        b_hl = 0.0
        b_nl = 0.0
        b_hlc = 0.0
        b_hrc = 0.0
        b_cross = 0.0
        pmin_total = 0.0
        q_total = 0.0
        if pair_hist is not None:
            for b in range(nb):
                pmin_total += pair_hist[f, b, 1]
                q_total += pair_hist[f, b, 2]
        for direction in range(2):
            if direction == 1 and miss_n == 0.0:
                break
            gl = 0.0
            hl = 0.0
            nl = 0.0
            if direction == 1:
                gl = miss_g
                hl = miss_h
                nl = miss_n
            cum_pmax = 0.0
            cum_pmin = 0.0
            cum_q = 0.0
            last = nb - 1 if direction == 1 else nb
            if direction == 0 and miss_n == 0.0:
                last = nb - 1
            for b in range(last):
                gl += h[b, 0]
                hl += h[b, 1]
                nl += h[b, 2]
                if pair_hist is not None:
                    cum_pmax += pair_hist[f, b, 0]
                    cum_pmin += pair_hist[f, b, 1]
                    cum_q += pair_hist[f, b, 2]
                nr = count - nl
                if nl < min_samples_leaf or nr < min_samples_leaf:
                    continue
                hr = sum_h - hl
                if hl < min_sum_hessian or hr < min_sum_hessian:
                    continue
                gr = sum_g - gl
                if use_counts:
                    hl_crit = nl
                    hr_crit = nr
                else:
                    hl_crit = hl
                    hr_crit = hr
                hl_val = hl
                hr_val = hr
                left_pairs = 0.0
                right_pairs = 0.0
                if pair_hist is not None:
                    if direction == 0:
                        left_pairs = cum_pmax
                        right_pairs = pair_sum - cum_pmin
                    else:
                        both_missing = pair_hist[f, missing_bin, 1]
                        left_pairs = cum_pmax + cum_q + both_missing
                        right_pairs = (pmin_total - cum_pmin) - (q_total - cum_q)
                    hl_val = ole_hessian(hl, left_pairs)
                    hr_val = ole_hessian(hr, right_pairs)
                    hl_crit = hl_val
                    hr_crit = hr_val
                gain = _split_gain(gl, hl_crit, gr, hr_crit, sum_g, parent_h_crit, l2)
                if not gain > min_gain:
                    continue
                counter = node_base + (f * 2 + direction) * n_bins + b
                key = math.sqrt(max(gain + parent_score, 0.0)) + sigma * noise_normal(seed, counter)
                if key > best_key:
                    best_key = key
                    best_gain = gain
                    best_bin = b
                    best_ml = direction
                    b_gl = gl
                    b_hl = hl
                    b_nl = nl
                    b_hlc = hl_val
                    b_hrc = hr_val
                    if pair_hist is not None:
                        b_cross = pair_sum - left_pairs - right_pairs
        if miss_n == 0.0 and best_gain > -np.inf:
            best_ml = 1 if b_nl >= count - b_nl else 0
        reported = best_gain
        if pair_hist is not None:
            if best_gain > -np.inf:
                reported = _two_leaf_gain(
                    b_gl, b_hlc, sum_g - b_gl, b_hrc, b_cross, sum_g, parent_h_crit, l2
                )
        keys_out[k] = -np.inf
        if best_gain > -np.inf:
            counter = node_base + (f * 2) * n_bins + missing_bin
            keys_out[k] = math.sqrt(max(best_gain + parent_score, 0.0)) + sigma * noise_normal(
                seed, counter
            )
        stats_out[f, 5] = reported
        gains_out[f] = best_gain
        bins_out[f] = best_bin
        miss_left_out[f] = best_ml
        stats_out[f, 0] = b_gl
        stats_out[f, 1] = b_hl
        stats_out[f, 2] = b_nl
        stats_out[f, 3] = b_hlc
        stats_out[f, 4] = b_hrc


@kernel
def _side_score_bound(g, a, l2):
    """An upper bound of ``_side_score(g, h, l2)`` for every ``h >= a`` (see
    :func:`ole_gain_bounds`): ``G^2 / (A + lam)``, ``+inf`` when that denominator is not
    positive (``_side_score`` is then 0 or any finite value), 0 when ``G`` is 0."""
    if g == 0.0:
        return 0.0
    d = a + l2
    if d <= 0.0:
        return np.inf
    return g * g / d


@kernel
def _ole_bound_body(
    hist,
    mass_hist,
    feature_indices,
    k_lo,
    k_hi,
    n_bins_non_missing,
    missing_bin,
    sum_g,
    sum_h,
    count,
    min_samples_leaf,
    min_sum_hessian,
    l2,
    parent_h_crit,
    tolerance,
    bounds_out,
):
    # hist: IN (n_features, n_bins, 3), the node's histogram; mass_hist: IN
    # (n_features, n_bins, 2), per bin the sums of out_d, in_d (see ole_gain_bounds);
    # bounds_out: OUT (n_selected,), in the order of feature_indices[k_lo:k_hi].  The
    # thresholds, directions, limits and the sums G_left, H_left, n_left, H_right are
    # those of _best_split_body, computed in the same order (the same floats): only
    # the pairs' mass removed from a side's hessian is its upper bound (and the
    # tolerance).
    parent = _side_score(sum_g, parent_h_crit, l2)
    for k in range(k_lo, k_hi):
        f = feature_indices[k]
        h = hist[f]
        m = mass_hist[f]
        nb = n_bins_non_missing[f]
        miss_g = h[missing_bin, 0]
        miss_h = h[missing_bin, 1]
        miss_n = h[missing_bin, 2]
        o_total = 0.0
        i_total = 0.0
        for b in range(m.shape[0]):
            o_total += m[b, 0]
            i_total += m[b, 1]
        best = -np.inf
        for direction in range(2):
            if direction == 1 and miss_n == 0.0:
                break
            gl = 0.0
            hl = 0.0
            nl = 0.0
            ol = 0.0
            il = 0.0
            if direction == 1:
                gl = miss_g
                hl = miss_h
                nl = miss_n
                ol = m[missing_bin, 0]
                il = m[missing_bin, 1]
            last = nb - 1 if direction == 1 else nb
            if direction == 0 and miss_n == 0.0:
                last = nb - 1
            for b in range(last):
                gl += h[b, 0]
                hl += h[b, 1]
                nl += h[b, 2]
                ol += m[b, 0]
                il += m[b, 1]
                nr = count - nl
                if nl < min_samples_leaf or nr < min_samples_leaf:
                    continue
                hr = sum_h - hl
                if hl < min_sum_hessian or hr < min_sum_hessian:
                    continue
                gr = sum_g - gl
                a_left = (hl - 2.0 * min(ol, il)) - tolerance
                a_right = (hr - 2.0 * min(o_total - ol, i_total - il)) - tolerance
                bound = (
                    _side_score_bound(gl, a_left, l2) + _side_score_bound(gr, a_right, l2)
                ) - parent
                if bound > best or bound != bound:  # NaN: no bound (never pruned)
                    best = bound if bound == bound else np.inf
        bounds_out[k] = best


@kernel
def _two_leaf_gain(g_l, a, g_r, b, cross, g, parent_h, l2):
    """Second-order loss decrease (times 2, as every gain here) of a split under a
    pairwise loss (OLE nodes).

    Eq. 13 of seed 000 fits the two leaves separately (diagonal hessians ``a``, ``b``:
    each side's hessian minus twice the pairs wholly inside it).  Pairs crossing the split
    also couple the two leaf values: d2L/do_l do_r = -cross.  Choosing the split by
    eq. 13 is the paper's rule and is kept; but to *compare* nodes (best-first order) and
    to decide whether a node is worth splitting, the gain must be the decrease of the
    same quadratic model that the parent's one-leaf term uses, i.e. with the coupling:
    ``g^T M^-1 g - G^2/(a + b - 2 cross)`` with ``M = [[a, -cross], [-cross, b]]``
    (+ l2 on the diagonal).  It is >= 0 whenever M is positive definite (restricting the
    two leaves to one value is a special case).  Otherwise fall back to eq. 13; also when
    M is singular but for rounding (``det`` within ``OLE_HESSIAN_RTOL`` of ``aa * bb``:
    a node of whole queries, whose leaves may shift together freely, gave gains of 1e8
    from a determinant of float32 noise).
    """
    if cross == 0.0:  # uncoupled leaves: exactly eq. 13 (same arithmetic as Newton)
        return _split_gain(g_l, a, g_r, b, g, parent_h, l2)
    aa = a + l2
    bb = b + l2
    det = aa * bb - cross * cross
    parent = g * g / (parent_h + l2) if parent_h + l2 > 0.0 else 0.0
    if aa > 0.0 and bb > 0.0 and det > OLE_HESSIAN_RTOL * aa * bb:
        return (bb * g_l * g_l + 2.0 * cross * g_l * g_r + aa * g_r * g_r) / det - parent
    return _split_gain(g_l, a, g_r, b, g, parent_h, l2)


def features_with_split(
    hist: NDArray[np.float64],
    feature_indices: NDArray[np.int32],
    n_bins_non_missing: NDArray[np.int32],
    missing_bin: int,
    count: int,
    min_samples_leaf: int,
) -> NDArray[np.int32]:
    """The selected features that have a threshold leaving ``min_samples_leaf``
    documents on both sides (in either missing direction), in their order.

    The others (a node whose documents share one bin of the feature, or too few on one
    side of every threshold) get no valid split from :func:`find_node_split` whatever
    the criterion: the OLE grower builds no pair histogram for them.  Counts are exact
    (integers in float64), so the subset is exact; the hessian limit is not checked here
    (the split search still does), which only keeps a feature that could be dropped.
    """
    keep = np.empty(feature_indices.shape[0], dtype=np.bool_)
    _features_with_split(
        hist, feature_indices, n_bins_non_missing, missing_bin, float(count),
        float(min_samples_leaf), keep,
    )  # fmt: skip
    return feature_indices[keep]


@kernel
def _features_with_split(
    hist, feature_indices, n_bins_non_missing, missing_bin, count, min_samples_leaf, keep
):
    # The count conditions of _best_split_body, thresholds and directions alike.
    for k in range(feature_indices.shape[0]):
        f = feature_indices[k]
        nb = n_bins_non_missing[f]
        miss_n = hist[f, missing_bin, 2]
        ok = False
        for direction in range(2):
            if direction == 1 and miss_n == 0.0:
                break
            nl = miss_n if direction == 1 else 0.0
            last = nb - 1 if (direction == 1 or miss_n == 0.0) else nb
            for b in range(last):
                nl += hist[f, b, 2]
                if nl >= min_samples_leaf and count - nl >= min_samples_leaf:
                    ok = True
                    break
            if ok:
                break
        keep[k] = ok


@kernel
def _split_indices_serial(rows, col, bin_idx, missing_left, missing_bin, buffer):
    # Serial stable partition: lefts compacted in place, rights staged in buffer.
    n = rows.shape[0]
    n_left = 0
    n_right = 0
    for i in range(n):
        r = rows[i]
        b = col[r]
        if b == missing_bin:
            go_left = missing_left
        else:
            go_left = b <= bin_idx
        if go_left:
            rows[n_left] = r
            n_left += 1
        else:
            buffer[n_right] = r
            n_right += 1
    for i in range(n_right):
        rows[n_left + i] = buffer[i]
    return n_left


def _split_indices(rows, col, bin_idx, missing_left, missing_bin, buffer, n_chunks):
    """Stable partition of ``rows`` (IN/OUT int32, the node's rows: left first) by the
    split feature's column ``col`` (IN uint8); ``buffer``: int32 scratch, same length.

    ``n_chunks`` contiguous chunks are partitioned in place by
    :func:`_split_indices_serial` on Python threads, then their left parts and their
    right parts are concatenated in chunk order: the stable partition, whatever the
    chunks (no parfor to compile).
    """
    n = rows.shape[0]
    chunk = max(1, -(-n // max(int(n_chunks), 1)))
    bounds = [(lo, min(n, lo + chunk)) for lo in range(0, n, chunk)]
    n_left = [0] * len(bounds)

    def part(c0: int, c1: int) -> None:
        for c in range(c0, c1):
            lo, hi = bounds[c]
            n_left[c] = int(
                _split_indices_serial(
                    rows[lo:hi], col, bin_idx, missing_left, missing_bin, buffer[lo:hi]
                )
            )

    over_rows(part, len(bounds), min_rows_per_thread=1)
    if len(bounds) > 1:
        lefts = [rows[lo : lo + m] for (lo, _), m in zip(bounds, n_left, strict=True)]
        rights = [rows[lo + m : hi] for (lo, hi), m in zip(bounds, n_left, strict=True)]
        np.concatenate(lefts + rights, out=buffer[:n])
        rows[:] = buffer[:n]
    return sum(n_left)


# --- references ---


def _find_best_split_reference(hist, n_bins_non_missing, missing_bin, sum_g, sum_h, count, params):
    """Brute force over every feature, threshold and missing side (no pairs)."""
    best = (-np.inf, -1, -1, False)
    l2 = params.l2_regularization
    se = params.criterion_code == 1

    def score(g, h):
        return g * g / (h + l2) if h + l2 > 0 else 0.0

    for f in range(hist.shape[0]):
        nb = int(n_bins_non_missing[f])
        miss = hist[f, missing_bin]
        for ml in (False, True):
            if ml and miss[2] == 0:
                continue
            for b in range(nb if (not ml and miss[2] > 0) else nb - 1):
                left = hist[f, : b + 1].sum(axis=0) + (miss if ml else 0.0)
                gl, hl, nl = left
                gr, hr, nr = sum_g - gl, sum_h - hl, count - nl
                if min(nl, nr) < params.min_samples_leaf:
                    continue
                if min(hl, hr) < params.min_sum_hessian_in_leaf:
                    continue
                if se:
                    gain = score(gl, nl) + score(gr, nr) - score(sum_g, count)
                else:
                    gain = score(gl, hl) + score(gr, hr) - score(sum_g, sum_h)
                if gain > best[0]:
                    best = (gain, f, b, ml)
    return best

"""Dtypes and constants shared by every layer, each with the reason it is what it is."""

from __future__ import annotations

import numpy as np

# Binned features: at most 255 value bins plus one bin for missing values fit a uint8,
# which keeps the binned matrix 8x smaller than float64 and histogram loads cache-friendly.
X_BINNED_DTYPE = np.uint8
MAX_BINS = 255

# Per-document gradients and hessians: float32 halves memory traffic in the histogram
# kernels; all *sums* (histograms, gains, leaf values) are float64 because histogram
# subtraction (parent - sibling) suffers catastrophic cancellation in float32.
G_H_DTYPE = np.float32
SUM_DTYPE = np.float64

# Raw scores of the ensemble are float64: they accumulate hundreds of small leaf values.
SCORE_DTYPE = np.float64

# Histograms are float64 arrays of shape (n_features, n_bins, N_HIST_STATS); the last
# axis holds the sum of gradients (0), of hessians (1) and the count (2).  A plain
# 3-column float array (rather than a structured dtype) lets Numba vectorise the
# subtraction trick.
N_HIST_STATS = 3

# Index arrays: int32 row ids are enough for 2^31 documents and halve the memory of the
# partition array compared to int64.
INDEX_DTYPE = np.int32
QUERY_OFFSET_DTYPE = np.int64

# Labels at or above this cannot use the exponential gain 2^y - 1 without losing
# precision (LightGBM and XGBoost both stop at 31 for the same reason).
MAX_EXP_GAIN_LABEL = 31

# One tree is a structured array of nodes (sklearn's PREDICTOR_RECORD_DTYPE idea).
# ``num_threshold``: go left when x <= num_threshold (x NaN -> missing_go_to_left).
# ``bin_threshold``: the same rule on binned data (bin <= bin_threshold); the two are
# exactly equivalent because binning maps x to #{thresholds < x}.
NODE_DTYPE = np.dtype(
    [
        ("value", np.float64),
        ("feature_idx", np.int32),
        ("num_threshold", np.float64),
        ("bin_threshold", np.uint8),
        ("missing_go_to_left", np.uint8),
        ("is_leaf", np.uint8),
        ("left", np.int32),
        ("right", np.int32),
        ("gain", np.float64),
        ("count", np.int64),
        ("sum_hessians", np.float64),
        ("depth", np.int32),
    ]
)


def env_count(name: str, default: int) -> int:
    """The count or size in the environment variable ``name`` (a whole number >= 1;
    ``5e7`` is fine), or ``default`` when it is unset or empty.

    Raises ValueError naming the variable for anything else (text, NaN, inf, zero,
    negative or a fraction: ``2.5`` was taken as 2), instead of a conversion error that
    names nothing or a limit that refuses every run.
    """
    import os

    return count_setting(name, os.environ.get(name), default)


def count_setting(name: str, text: str | None, default: int) -> int:
    """:func:`env_count` of ``text``, the value of the environment variable ``name``
    somewhere else (a Dask driver's, used on its workers; None: unset there)."""
    import math

    if not text:
        return int(default)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1 and value.is_integer()):
        raise ValueError(
            f"${name}={text!r} must be a whole number >= 1 (e.g. 5e7); unset it for the default"
        )
    return int(value)


def memory_budget() -> tuple[int, str]:
    """Bytes this process may still allocate, and what bounds them, for the memory
    guards (histograms, pair buffers): the least of the machine's physical memory (16 GiB
    when unknown), its cgroup's memory limit (a container's ``--memory``) and the address
    space left under ``RLIMIT_AS`` (``ulimit -v``).  Physical memory alone let a run in
    a smaller container or under ``ulimit -v`` pass the guards and then be killed or
    fail with a bare MemoryError."""
    import os

    try:
        budget = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        what = "physical memory"
    except (ValueError, OSError, AttributeError):
        budget, what = 16 << 30, "memory (16 GiB assumed)"
    from ltrboost._warmup import _cgroup_memory_limit

    cgroup = _cgroup_memory_limit()
    if cgroup is not None and cgroup < budget:
        budget, what = cgroup, "the cgroup memory limit"
    left = _address_space_left()
    if left is not None and left < budget:
        budget, what = left, "the address space left under RLIMIT_AS (ulimit -v)"
    return budget, what


def usable_memory() -> int:
    """Bytes of :func:`memory_budget`."""
    return memory_budget()[0]


def _address_space_left() -> int | None:
    """``RLIMIT_AS`` minus the address space in use (None: no limit, or not known)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    used = 0
    try:
        import os

        with open("/proc/self/statm", encoding="ascii") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    return max(0, int(soft) - used)

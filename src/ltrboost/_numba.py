"""The one place Numba is configured: decorator presets and a thread-count context manager.

Every kernel in the package is decorated with :data:`kernel` or :data:`parallel_kernel`;
change compilation flags here, never per function.  ``cache=True`` writes compiled code
next to the modules so a second process starts without recompiling.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import numba

kernel = numba.njit(cache=True, nogil=True)
parallel_kernel = numba.njit(cache=True, nogil=True, parallel=True)
prange = numba.prange


def _resolve_n_threads(n_threads: int | None) -> int:
    """Map the user's ``n_threads`` to a concrete count (None or <=0 -> all cores)."""
    max_threads = numba.config.NUMBA_NUM_THREADS
    if n_threads is None or n_threads <= 0:
        cpu = os.cpu_count() or 1
        return max(1, min(cpu, max_threads))
    return max(1, min(int(n_threads), max_threads))


@contextlib.contextmanager
def threads(n_threads: int | None) -> Iterator[int]:
    """Run the body with ``n_threads`` Numba threads and restore the previous count.

    Results of every kernel in the package do not depend on the thread count: parallel
    loops write disjoint outputs and reductions are done in a fixed order.
    """
    previous = numba.get_num_threads()
    n = _resolve_n_threads(n_threads)
    numba.set_num_threads(n)
    try:
        yield n
    finally:
        numba.set_num_threads(previous)

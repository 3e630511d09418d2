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
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

kernel = numba.njit(cache=True, nogil=True)
parallel_kernel = numba.njit(cache=True, nogil=True, parallel=True)
prange = numba.prange


@intrinsic
def prefetch(typingctx, arr, idx):
    """``prefetch(a, i)``: ask the CPU to bring ``a[i]``'s cache line in (1-D ``a``).

    A hint (LLVM ``llvm.prefetch``, read, high locality): no effect on results, no
    fault on any address.  Used where a kernel's next reads are at data-dependent
    addresses the hardware prefetcher cannot predict (rows of a node, in order).
    """
    if not isinstance(arr, types.Array) or arr.ndim != 1:
        return None
    if not isinstance(idx, types.Integer):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty, idxty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        i = context.cast(builder, args[1], idxty, types.intp)
        ptr = cgutils.get_item_pointer2(
            context,
            builder,
            ary.data,
            cgutils.unpack_tuple(builder, ary.shape),
            cgutils.unpack_tuple(builder, ary.strides),
            aryty.layout,
            [i],
            wraparound=False,
            boundscheck=False,
        )
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # (address, rw=0 read, locality=3 keep in all levels, cache type=1 data)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


def _resolve_n_threads(n_threads: int | None) -> int:
    """Map the user's ``n_threads`` to a concrete count.

    None, 0 or a negative number: all cores (LightGBM's 0, scikit-learn's -1); more
    than the cores (or than ``NUMBA_NUM_THREADS``): capped.  Not an integer (``1.5``,
    ``True``): ValueError.
    """
    if n_threads is not None and (
        isinstance(n_threads, bool) or not isinstance(n_threads, int | np.integer)
    ):
        raise ValueError(f"n_threads={n_threads!r} must be an integer or None")
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

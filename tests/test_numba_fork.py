"""A fork while another thread compiles: the child must be able to compile (issue 12's
warm-up compiles in the background; README promises forked children work)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import ltrboost._numba  # noqa: F401  (registers the fork hooks)

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def test_a_child_forked_during_another_threads_compilation_can_compile():
    # Numba compiles under one process-wide RLock.  A fork copies only the forking
    # thread, so a lock another thread held at that moment stayed held for ever in
    # the child, and its first compilation hung.  The fork now waits for it.
    import numba
    from numba.core.compiler_lock import global_compiler_lock

    held, done = threading.Event(), threading.Event()

    def compile_for_a_while() -> None:
        with global_compiler_lock:  # a compilation in flight
            held.set()
            time.sleep(0.5)
            done.set()  # the last thing before the lock is released

    holder = threading.Thread(target=compile_for_a_while)
    holder.start()
    assert held.wait(10)
    pid = os.fork()
    if pid == 0:  # the child compiles a new function, or SIGALRM ends it
        code = 1
        try:
            signal.alarm(30)
            code = 0 if numba.njit(lambda x: x + 1)(1) == 2 else 3
        finally:
            os._exit(code)
    forked_after = done.is_set()
    _, status = os.waitpid(pid, 0)
    holder.join(10)
    assert os.waitstatus_to_exitcode(status) == 0, "the forked child hung on the compiler lock"
    assert forked_after, "the fork did not wait for the compilation in flight"
    # the parent compiles too (the hook released what it took)
    assert numba.njit(lambda x: x * 2)(2) == 4

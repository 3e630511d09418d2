"""The CLI's "compiling kernels, first run only …" notice.

A first run in a fresh environment compiles the Numba kernels it needs (tens of
seconds); later runs load them from the cache.  Detection: Numba's ``numba:compile``
event, which fires exactly when a kernel is compiled and never when it is loaded from
the cache (see :func:`ltrboost._numba.add_compile_listener`).  This is more robust
than predicting compilation (which kernels a configuration needs, whether their cache
index files exist and are still valid for this CPU and source) or guessing it from a
slow first tree (a large data set is slow too).

While kernels compile, a status line on a terminal shows the notice and its own
elapsed time (erased whenever no kernel is compiling, so that the program's own output
is not mixed into it); when no kernel has compiled for :data:`IDLE_S` seconds, one line
"compiled N kernels in S s" reports the burst.  With a progress bar attached (on a
terminal or not), the notice is the bar's description, and the compile seconds are
taken out of the bar's clock so that its rate and ETA count training only.  Without a
terminal and without a bar (logs, scripts, tests) nothing is written, so an error stays
one line; the ``ltrboost`` logger still says it at INFO.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

TEXT = "compiling kernels, first run only …"
# the same, when this process keeps no compiled kernel (no writable cache folder)
TEXT_UNCACHED = "compiling kernels (not cached: every run compiles) …"
IDLE_S = 1.0  # a compile burst ends after this long without a compilation
TICK_S = 0.5


class CompileNotice:
    """Listens to ltrboost's compilations and reports them on ``stream``."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._lock = threading.Lock()
        self._active = 0  # compilations in progress
        self._burst_start: float | None = None
        self._last_end = 0.0
        self._burst_kernels = 0
        self._unaccounted = 0.0  # compile seconds not yet taken out of the bar clock
        self._bar: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.total_seconds = 0.0
        self.total_kernels = 0

    # -- lifecycle
    def __enter__(self) -> CompileNotice:
        from ltrboost._numba import add_compile_listener

        add_compile_listener(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        from ltrboost._numba import remove_compile_listener

        remove_compile_listener(self)
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._finish_burst()

    def attach_bar(self, bar: Any) -> None:
        """Show the notice on this tqdm bar from now on (None: detach).

        Detaching reports a finished burst that has not reached :data:`IDLE_S` yet on the
        bar it leaves: after it, without a terminal, nothing would be written (a training
        that ended within a second of its last compilation lost its summary line).
        """
        if bar is None:
            with self._lock:
                report = self._bar is not None and self._burst_start is not None
                report = report and self._active == 0
            if report:
                self._finish_burst()
        with self._lock:
            if bar is not None and self._burst_start is not None and self.tty:
                self.stream.write("\n")  # keep the status line, the bar goes below
            self._bar = bar
            self._unaccounted = 0.0
            start = self._burst_start
        if bar is not None and start is not None:
            self._show(time.perf_counter() - start)

    def take_compile_seconds(self) -> float:
        """Compile seconds since the last call while a bar was attached."""
        with self._lock:
            s, self._unaccounted = self._unaccounted, 0.0
        return s

    # -- ltrboost._numba listener protocol (called in the compiling thread)
    def compile_started(self, name: str) -> None:
        with self._lock:
            self._active += 1
            if self._burst_start is None:
                self._burst_start = time.perf_counter()
                self._burst_kernels = 0
            start = self._burst_start
        self._show(time.perf_counter() - start)
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._tick, name="ltrboost-compile-notice", daemon=True
            )
            self._thread.start()

    def compile_finished(self, name: str, seconds: float) -> None:
        with self._lock:
            self._active -= 1
            self._last_end = time.perf_counter()
            self._burst_kernels += 1
            self.total_kernels += 1
            self.total_seconds += seconds
            if self._bar is not None:
                self._unaccounted += seconds
            clear = self._active == 0 and self._bar is None and self.tty
        if clear:  # the program may print before the next kernel: free the line
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    # -- display
    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            with self._lock:
                start = self._burst_start
                idle = self._active == 0 and time.perf_counter() - self._last_end >= IDLE_S
                active = self._active > 0
            if start is None:
                continue
            if idle:
                self._finish_burst()
            elif active:
                self._show(time.perf_counter() - start)

    def _show(self, elapsed: float) -> None:
        from ltrboost._numba import kernels_uncached

        text = f"{TEXT_UNCACHED if kernels_uncached() else TEXT} {elapsed:.0f} s"
        bar = self._bar
        if bar is not None:
            bar.set_description_str(text, refresh=True)
        elif self.tty:
            self.stream.write(f"\r{text}")
            self.stream.flush()

    def _finish_burst(self) -> None:
        from ltrboost._numba import cache_note

        with self._lock:
            start, self._burst_start = self._burst_start, None
            n = self._burst_kernels
            end = self._last_end
        if start is None:
            return
        kernels = "kernel" if n == 1 else "kernels"
        line = f"ltrboost: compiled {n} {kernels} in {max(end - start, 0.0):.1f} s ({cache_note()})"
        bar = self._bar
        if bar is not None:
            bar.set_description_str("", refresh=False)
            bar.write(line, file=self.stream)
        elif self.tty:
            self.stream.write(line + "\n")
            self.stream.flush()

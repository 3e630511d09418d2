"""README/docs audit of stop 38 (readme7): statements checked against the code."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from ltrboost import _numba


def _event(qualname: str = "kernel_k") -> SimpleNamespace:
    def py_func() -> None:  # pragma: no cover - never called
        pass

    py_func.__module__ = "ltrboost.fake"
    py_func.__qualname__ = qualname
    return SimpleNamespace(data={"dispatcher": SimpleNamespace(py_func=py_func)})


def test_python_log_does_not_say_first_run_only_when_nothing_is_cached(monkeypatch, caplog):
    # README ("First run"): where no folder is writable "kernels compile in every
    # process"; the CLI notice stopped promising "first run only" then (343c62e), and
    # the INFO line that Python logs at the first compilation must not promise it either
    monkeypatch.setattr(_numba, "_UNCACHED_REASON", "the folder is read-only")
    monitor = _numba._CompileMonitor()
    with caplog.at_level(logging.INFO, logger="ltrboost"):
        monitor.on_start(_event())
        monitor.on_end(_event())
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "compiling kernels" in text
    assert "first run only" not in text
    assert "not cached" in text


def test_python_log_names_the_cache_folder_when_kernels_are_kept(monkeypatch, caplog):
    # the documented line where kernels are kept: "compiling kernels, first run only:
    # later runs load them from FOLDER"
    for name in ("_UNCACHED_REASON", "_CACHE_WRITE_ERROR"):
        monkeypatch.setattr(_numba, name, None)
    monkeypatch.setattr(_numba, "_warned_uncached", False)
    monitor = _numba._CompileMonitor()
    with caplog.at_level(logging.INFO, logger="ltrboost"):
        monitor.on_start(_event())
        monitor.on_end(_event())
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert (
        f"compiling kernels, first run only: later runs load them from "
        f"{_numba.cache_location()}" in text
    )

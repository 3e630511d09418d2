"""The one place Numba is configured: decorator presets, kernel cache, compile events.

Every kernel in the package is decorated with :data:`kernel`, :data:`parallel_kernel`
or :data:`vector_kernel`; change compilation flags here, never per function.

Cache (``cache=True``): compiled kernels are written to disk so that a second process
loads them instead of compiling again.  Where, in order of precedence:

1. ``NUMBA_CACHE_DIR`` when set (Numba's own setting, it always wins);
2. the package's ``__pycache__`` folders when the package folder is writable (a
   development checkout, a user's virtual environment);
3. otherwise (a read-only or system-wide install) a per-user folder:
   ``$XDG_CACHE_HOME/ltrboost/numba``, default ``~/.cache/ltrboost/numba``
   (``%LOCALAPPDATA%\\ltrboost\\numba`` on Windows);
4. when nothing is writable, kernels are compiled in every process (one warning, at
   the first compilation).

Kernels are also read, never written, from those of the folders above that come before
the one written to and exist: a container image prewarmed by ``ltrboost warmup`` when it
was built and run read-only (or as another user) loads the kernels it holds, and only
the missing ones compile (see ``_prewarmed_caches``).

Where Numba cannot use the chosen folder for some module's kernels (a sub-folder made
by another user, a file in its place) it caches them in a folder of its own choice,
named by :func:`cache_note` and one warning; a write that fails (a full disk) is one
warning too and never stops the command.

The choice is made once, when this module is imported, and applies to ltrboost's
kernels only (Numba's global configuration is left as it was).

Compilation is observable: :func:`compile_stats` counts the kernels this process
compiled (cache loads are not compilations), the ``ltrboost`` logger says at INFO when
compilation starts, and :func:`add_compile_listener` lets a front end (the CLI's
progress bar) show it.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import itertools
import logging
import os
import re
import stat
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core import event as _numba_event
from numba.extending import intrinsic

from ltrboost._warmup import _default_threads, _usable_cpus  # stdlib only: no Numba

logger = logging.getLogger("ltrboost")

# Idle OpenMP threads sleep instead of spinning.  GNU libgomp lets a thread spin for
# ~300k iterations after each parallel region; the grower launches a few small parallel
# kernels per node, and when the machine has other busy processes (parallel CV, a test
# suite, other jobs) every region then waits for a spinning thread to be descheduled:
# measured on 2 cores with two other busy processes, 20k documents x 136 features,
# 31 leaves: 0.4-1.3 s per tree spinning vs 0.05 s passive.  Only a default: a user's
# OMP_WAIT_POLICY (or GOMP_SPINCOUNT / KMP_BLOCKTIME) is left alone.  It must be set
# before Numba loads its OpenMP layer (at the first parallel kernel launch); a process
# that loaded OpenMP earlier through another library keeps that library's setting.
OPENMP_WAIT_DEFAULT = "PASSIVE"
if not any(k in os.environ for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")):
    os.environ["OMP_WAIT_POLICY"] = OPENMP_WAIT_DEFAULT


def user_cache_dir() -> str:
    """The per-user kernel cache used when the package folder is not writable."""
    base = os.environ.get("XDG_CACHE_HOME")
    if base and not os.path.isabs(base):  # the XDG spec: a relative path is ignored
        base = None
    if not base and os.name == "nt":
        base = os.environ.get("LOCALAPPDATA")
    if not base:
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ltrboost", "numba")


def _writable_folder(path: str) -> bool:
    """Numba's own test: the folder can be created and a file written in it."""
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


# --------------------------------------------------------- clearing the cache
# A Numba cache file: "<module>.<qualname>-<line>.py<XY><abiflags>.nbi" (the index) or
# "....<N>.nbc" (one compiled overload), Numba's CacheImpl.get_filename_base.
_CACHE_FILE_RE = re.compile(r"^(?P<module>[^.]+)\..+-\d+\.py\d+[a-z]*\.(?:nbi|\d+\.nbc)$")


def _cache_subpath(source_dir: str) -> str:
    """Numba's sub-folder of a cache folder for the kernels of ``source_dir``'s modules
    (``<folder name>_<sha1 of its path>``, ``_CacheLocator.get_suitable_cache_subpath``)."""
    from numba.core import caching

    locator = getattr(caching, "_CacheLocator", None)
    if locator is not None and hasattr(locator, "get_suitable_cache_subpath"):
        return locator.get_suitable_cache_subpath(os.path.join(source_dir, "x.py"))
    digest = hashlib.sha1(source_dir.encode()).hexdigest()
    return f"{os.path.basename(source_dir)}_{digest}"


def kernel_cache_files(unreadable: list[str] | None = None) -> list[str]:
    """Every kernel cache file of this ltrboost install that exists, wherever Numba may
    have written it: the package's ``__pycache__`` folders, this package's sub-folders
    of ``NUMBA_CACHE_DIR`` and of Numba's own per-user folder (its fallback), and every
    cache file in ltrboost's per-user folder (:func:`user_cache_dir`, ltrboost's alone,
    so other installs' entries too).  Only files named as Numba names the entries of
    one of the package's modules are listed: never a ``.pyc``, never another project's
    kernels, never anything else a shared ``NUMBA_CACHE_DIR`` holds.

    ``unreadable``, when given, gets the folders that exist but could not be looked
    into (another user's private cache folder): their files, if any, are not listed."""
    package = os.path.dirname(os.path.abspath(__file__))
    roots = [user_cache_dir()]
    if numba.config.CACHE_DIR:
        roots.append(os.path.abspath(numba.config.CACHE_DIR))
    try:
        from numba.misc.appdirs import AppDirs

        roots.append(AppDirs(appname="numba", appauthor=False).user_cache_dir)
    except Exception:  # Numba's private module moved: its fallback folder is not searched
        pass
    found: list[str] = []
    for source_dir, dirs, names in os.walk(package):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        modules = {n[:-3] for n in names if n.endswith(".py")}
        if not modules:
            continue
        in_tree = os.path.join(source_dir, "__pycache__")
        folders = {in_tree: in_tree}
        for root in roots:
            folders.setdefault(os.path.join(root, _cache_subpath(source_dir)), root)
        for folder, top in folders.items():
            found += _cache_files_in(folder, modules, unreadable, top)
    ours = user_cache_dir()
    for sub in _listdir(ours, unreadable, ours):  # ltrboost's own folder: any install's
        found += _cache_files_in(os.path.join(ours, sub), None, unreadable, ours)
    if unreadable is not None:
        unreadable[:] = sorted(set(unreadable))
    return sorted(set(found))


def _listdir(folder: str, unreadable: list[str] | None = None, top: str | None = None) -> list[str]:
    """The names in ``folder``; none when it is missing or not a folder, and none when
    it cannot be read, which is noted in ``unreadable`` (when given) as the first
    folder from ``top`` (a cache folder ``folder`` is in) down to ``folder`` that
    exists but cannot be looked into: a private ``NUMBA_CACHE_DIR`` of another user
    (mode 700) hides every sub-folder of it.  Folders above ``top`` are not looked at
    (a ``HOME`` that is not the user's hides a cache that is not theirs either)."""
    try:
        return os.listdir(folder)
    except PermissionError:
        if unreadable is not None:
            blocked = _first_closed_folder(folder, folder if top is None else top)
            if blocked is not None:
                unreadable.append(blocked)
        return []
    except OSError:  # missing, not a folder: nothing listed
        return []


def _first_closed_folder(folder: str, top: str) -> str | None:
    """See :func:`_listdir` (None: none, e.g. ``folder`` or ``top`` is not there, or
    ``top`` itself cannot be reached)."""
    path, top = os.path.abspath(folder), os.path.abspath(top)
    chain = [path]
    while chain[-1] != top and os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    if chain[-1] != top:  # not under top: the folder alone
        chain = [path]
    for p in reversed(chain):
        try:
            st = os.stat(p)
        except OSError:  # missing, or behind a folder above top that is closed
            return None
        if not stat.S_ISDIR(st.st_mode):
            return None
        if not os.access(p, os.R_OK | os.X_OK):
            return p
    return None


def _cache_files_in(
    folder: str,
    modules: set[str] | None,
    unreadable: list[str] | None = None,
    top: str | None = None,
) -> list[str]:
    """The Numba cache files in ``folder`` (of ``modules`` only, unless None); see
    :func:`_listdir` for ``unreadable`` and ``top``."""
    out = []
    for name in _listdir(folder, unreadable, top):
        m = _CACHE_FILE_RE.match(name)
        if m and (modules is None or m.group("module") in modules):
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path):
                out.append(path)
    return out


def clear_kernel_cache() -> tuple[list[str], int, list[tuple[str, str]]]:
    """Remove :func:`kernel_cache_files` (before ``pip uninstall``, or to start cold),
    then the sub-folders of cache folders they leave empty, and ltrboost's per-user
    folder when nothing else is in it; a ``NUMBA_CACHE_DIR`` and the package's
    ``__pycache__`` folders themselves stay.

    Returns
    -------
    removed : list of str
        The files removed.
    n_bytes : int
        Their total size.
    failed : list of (str, str)
        ``(path, why)`` for each file that could not be removed, and for each cache
        folder that could not be looked into (its files, if any, are kept).
    """
    removed: list[str] = []
    failed: list[tuple[str, str]] = []
    n_bytes = 0
    folders: set[str] = set()
    unreadable: list[str] = []
    for path in kernel_cache_files(unreadable):
        try:
            size = os.stat(path).st_size
            os.remove(path)
        except FileNotFoundError:  # another process's clear, or Numba replacing it
            continue
        except OSError as e:
            failed.append((path, e.strerror or str(e)))
            continue
        removed.append(path)
        n_bytes += size
        folders.add(os.path.dirname(path))
    # a cache folder this process cannot look into may hold files: never "none to
    # remove"; named first (the CLI's error gives the first as its example)
    why = "Permission denied (cannot look into this cache folder; its files are kept)"
    failed[:0] = [(f, why) for f in unreadable]
    ours = user_cache_dir()
    for folder in sorted(folders):
        if os.path.basename(folder) != "__pycache__":
            with contextlib.suppress(OSError):  # not empty: something else is there
                os.rmdir(folder)
    for folder in (ours, os.path.dirname(ours)):  # .../ltrboost/numba, .../ltrboost
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    return removed, n_bytes, failed


# NUMBA_CACHE_DIR when it is set but cannot be written (Numba then silently falls back
# to the package folder): named by cache_location() and the compile notice.
_UNUSABLE_NUMBA_CACHE_DIR: str | None = None


def _choose_cache_dir() -> str | None:
    """Folder for ltrboost's kernel cache; None = Numba's own choice (1. or 2.)."""
    global _UNUSABLE_NUMBA_CACHE_DIR
    if numba.config.CACHE_DIR:
        if _writable_folder(numba.config.CACHE_DIR):
            return None  # NUMBA_CACHE_DIR wins
        _UNUSABLE_NUMBA_CACHE_DIR = os.path.abspath(numba.config.CACHE_DIR)
    package = os.path.dirname(os.path.abspath(__file__))
    if _writable_folder(os.path.join(package, "__pycache__")):
        return None
    return user_cache_dir()


_CACHE_DIR = _choose_cache_dir()


def cache_location() -> str:
    """Where this process reads and writes compiled kernels (for messages and docs)."""
    if numba.config.CACHE_DIR and _UNUSABLE_NUMBA_CACHE_DIR is None:
        return os.path.abspath(numba.config.CACHE_DIR)
    if _CACHE_DIR is not None:
        return _CACHE_DIR
    return _package_cache()


def _package_cache() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")


def kernels_uncached() -> bool:
    """Whether this process keeps no kernel it compiles (no writable cache folder, or a
    write failed): its compilations are not "first run only"."""
    return _warned_uncached or _UNCACHED_REASON is not None or _CACHE_WRITE_ERROR is not None


def cache_note() -> str:
    """How this process caches kernels, for the compile notice: ``first run only;
    cached in FOLDER``,
    naming an unwritable ``NUMBA_CACHE_DIR`` that was passed over, a folder Numba
    fell back to and the read-only folders prewarmed kernels were loaded from, or
    ``not cached`` when no folder is writable or a write failed."""
    prewarmed = ""
    if _PREWARMED_USED:
        prewarmed = f"; prewarmed kernels loaded from {', '.join(_PREWARMED_USED)} (read-only)"
    if _warned_uncached or _UNCACHED_REASON is not None:
        return "not cached: no writable folder, every process compiles" + prewarmed
    if _CACHE_WRITE_ERROR is not None:
        return f"not cached: {_CACHE_WRITE_ERROR}" + prewarmed
    note = f"first run only; cached in {cache_location()}"
    if _FALLBACK_CACHE is not None:
        intended, used = _FALLBACK_CACHE
        note += f" and {used} ({intended} is not writable)"
    if _UNUSABLE_NUMBA_CACHE_DIR is not None:
        note += f"; NUMBA_CACHE_DIR={_UNUSABLE_NUMBA_CACHE_DIR} is not writable"
    return note + prewarmed


def cache_problem() -> str | None:
    """Why this process keeps no compiled kernels (no writable folder, a failed write),
    or None (``ltrboost warmup`` fails with it)."""
    if _warned_uncached:
        return "not cached: no writable folder for the kernel cache"
    if _CACHE_WRITE_ERROR is not None:
        return f"not cached: {_CACHE_WRITE_ERROR}"
    return None


def _preset(**options: Any) -> Callable[[Callable], Any]:
    """``numba.njit(cache=True, **options)`` that caches in the folder chosen above."""
    cached = numba.njit(cache=True, **options)
    uncached = numba.njit(cache=False, **options)

    def decorate(fn: Callable) -> Any:
        if numba.config.DISABLE_JIT:  # NUMBA_DISABLE_JIT=1: plain Python, no cache
            return fn
        # The cache locator is chosen when the dispatcher is created, from
        # numba.config.CACHE_DIR: point it at our folder for this one call only.
        saved = numba.config.CACHE_DIR
        if _CACHE_DIR is not None:
            numba.config.CACHE_DIR = _CACHE_DIR
        try:
            dispatcher = cached(fn)
            _check_cache_folder(dispatcher, fn)
        except RuntimeError as e:  # "no locator available": nothing is writable
            if "locator" not in str(e):
                raise
            dispatcher = uncached(fn)
            # warned at the first compilation, if any: prewarmed kernels may all load
            dispatcher._cache = _UnwritableCache(_unwritable_reason(fn) or str(e))
        finally:
            numba.config.CACHE_DIR = saved
        prewarmed = _prewarmed_caches(fn, dispatcher._cache.cache_path)
        return _wait_for_cache_entries(dispatcher, prewarmed)

    return decorate


# ------------------------------------------------ prewarmed, read-only cache folders
# A container image runs ``ltrboost warmup`` when it is built and then runs read-only
# (or as another user): Numba's locators refuse a folder they cannot write, so the
# kernels compiled at build time were never looked at.  Each kernel therefore also
# reads from the folders that come before the one it writes (README's order:
# NUMBA_CACHE_DIR, the package's __pycache__, the user folder) and exist: loaded
# through Numba's own cache (its index checks the Numba version, the source file's
# hash, the CPU), never written.  Where a kernel writes to the first of them (the usual
# case) there is nothing more to read and nothing is looked at.

# the prewarmed folders (the top folder of each kind) that kernels were loaded from
_PREWARMED_USED: list[str] = []


def _in_tree(py_file: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(py_file)), "__pycache__")


def _read_only_cache_class(root: str | None) -> type:
    """Numba's ``FunctionCache`` reading the kernels of ``root`` (Numba's layout for
    ``NUMBA_CACHE_DIR``; None: the module's own ``__pycache__``) without writing:
    a locator that only needs the folder to exist, in place of Numba's, which needs it
    writable (``numba.core.caching``: ``_CacheLocator``, ``CacheImpl._locator_classes``)."""
    cls = _READ_ONLY_CACHES.get(root)
    if cls is not None:
        return cls
    from numba.core import caching

    class ReadOnlyLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
        def __init__(self, py_func: Any, py_file: str) -> None:
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            if root is None:
                self._cache_path = _in_tree(py_file)
            else:
                sub = self.get_suitable_cache_subpath(py_file)
                self._cache_path = os.path.join(root, sub)

        def get_cache_path(self) -> str:
            return self._cache_path

        def ensure_cache_path(self) -> None:  # read only: the folder must exist
            if not os.path.isdir(self._cache_path):
                raise FileNotFoundError(self._cache_path)

    class ReadOnlyImpl(caching.CompileResultCacheImpl):
        _locator_classes: ClassVar[list[type]] = [ReadOnlyLocator]

    class ReadOnlyCache(caching.FunctionCache):
        _impl_class = ReadOnlyImpl
        folder = root if root is not None else _package_cache()

        def save_overload(self, sig: Any, data: Any) -> None:
            pass

        def flush(self) -> None:
            pass

    _READ_ONLY_CACHES[root] = ReadOnlyCache
    return ReadOnlyCache


_READ_ONLY_CACHES: dict[str | None, type] = {}


def _prewarmed_caches(fn: Callable, written: str | None) -> list[Any]:
    """Read-only Numba caches of ``fn`` in the folders before ``written`` (the folder
    its kernels are written to; None: none) that exist, in README's order."""
    if getattr(numba.config, "CACHE_LOCATOR_CLASSES", ""):
        return []  # the user chose Numba's locators (NUMBA_CACHE_LOCATOR_CLASSES)
    try:
        from numba.core.caching import _CacheLocator

        py_file = inspect.getfile(fn)
        sub = _CacheLocator.get_suitable_cache_subpath(py_file)
    except Exception:  # Numba's private API differs: compile as before
        return []
    roots: list[str | None] = []
    if numba.config.CACHE_DIR:
        roots.append(os.path.abspath(numba.config.CACHE_DIR))
    roots += [None, user_cache_dir()]
    written = os.path.abspath(written) if written else None
    caches: list[Any] = []
    seen: set[str] = set()
    for root in roots:
        path = _in_tree(py_file) if root is None else os.path.join(root, sub)
        if path == written:
            break
        if path in seen or not os.path.isdir(path):
            continue
        seen.add(path)
        with contextlib.suppress(Exception):  # gone meanwhile, Numba's private API
            caches.append(_read_only_cache_class(root)(fn))
    return caches


# why ltrboost's kernels have no writable cache folder (set when they are decorated)
_UNCACHED_REASON: str | None = None


class _UnwritableCache:
    """The cache of a kernel with no writable folder: nothing to load (prewarmed
    folders are read first) and a compilation is not kept: one warning per process, at
    the first compilation (a process that loads every kernel says nothing)."""

    cache_path = None

    def __init__(self, reason: str) -> None:
        global _UNCACHED_REASON
        self.reason = reason
        if _UNCACHED_REASON is None:
            _UNCACHED_REASON = reason

    def load_overload(self, sig: Any, target_context: Any) -> None:
        return None

    def save_overload(self, sig: Any, data: Any) -> None:
        _warn_uncached(self.reason)

    def enable(self) -> None:
        pass

    def disable(self) -> None:
        pass

    def flush(self) -> None:
        pass


# ------------------------------------------------ cache entries another process is compiling
# Set by ltrboost._warmup while its helper process compiles kernels into the shared cache:
# ``waiter(name)`` blocks while the helper compiles the kernel ``name`` and returns True
# when the helper has worked on it (so the cache is worth a second look).
_cache_waiter: Callable[[str], bool] | None = None


def _intended_locator(fn: Callable) -> Any:
    """Numba's locator for the folder this module meant ``fn``'s cache to be in
    (``numba.config.CACHE_DIR`` when set, else the module's ``__pycache__``), not
    checked for writability; None where Numba's private API differs or is overridden."""
    from numba.core import caching

    if getattr(numba.config, "CACHE_LOCATOR_CLASSES", ""):
        return None  # the user chose Numba's locators (NUMBA_CACHE_LOCATOR_CLASSES)
    # CACHE_DIR is an unwritable NUMBA_CACHE_DIR passed over for __pycache__ (2.)
    passed_over = _UNUSABLE_NUMBA_CACHE_DIR is not None and _CACHE_DIR is None
    user_provided = numba.config.CACHE_DIR and not passed_over
    name = "UserProvidedCacheLocator" if user_provided else "InTreeCacheLocator"
    cls = getattr(caching, name, None) or getattr(caching, "_" + name, None)
    if cls is None:
        return None
    try:
        return cls(fn, inspect.getfile(fn))
    except Exception:
        return None


def _unwritable_reason(fn: Callable) -> str | None:
    """``FOLDER: why`` for the intended cache folder of ``fn`` that Numba refused."""
    locator = _intended_locator(fn)
    if locator is None:
        return None
    try:
        path = locator.get_cache_path()
        locator.ensure_cache_path()
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    except Exception:
        return None
    return None


# (intended folder, folder Numba used) for the first module whose kernels Numba cached
# elsewhere than this module chose: named by cache_note().
_FALLBACK_CACHE: tuple[str, str] | None = None


def _check_cache_folder(dispatcher: Any, fn: Callable) -> None:
    """Numba tries its cache locators in turn and silently takes the next one that is
    writable (the module's ``__pycache__``, ``~/.cache/numba``) when the intended folder
    is not: note it (once) so that messages name the folder really used."""
    global _FALLBACK_CACHE
    if _FALLBACK_CACHE is not None:
        return
    locator = getattr(getattr(getattr(dispatcher, "_cache", None), "_impl", None), "locator", None)
    intended = _intended_locator(fn)
    if locator is None or intended is None or isinstance(locator, type(intended)):
        return
    try:
        used = locator.get_cache_path()
        why = _unwritable_reason(fn) or f"{intended.get_cache_path()}: not usable"
    except Exception:
        return
    folder, _, reason = why.rpartition(": ")
    _FALLBACK_CACHE = (folder, used)
    warnings.warn(
        f"ltrboost: the kernel cache folder {folder} cannot be written ({reason}); "
        f"kernels of {os.path.basename(inspect.getfile(fn))} are cached in {used} instead",
        RuntimeWarning,
        stacklevel=3,
    )


def set_cache_waiter(waiter: Callable[[str], bool] | None) -> None:
    global _cache_waiter
    _cache_waiter = waiter


def _wait_for_cache_entries(dispatcher: Any, prewarmed: list[Any] | tuple = ()) -> Any:
    """Make ``dispatcher``'s cache lookup read the ``prewarmed`` read-only caches first
    (:func:`_prewarmed_caches`) and, on a miss, wait for the kernel another process
    is compiling right now and look again (instead of compiling it a second time).

    Numba's ``Dispatcher.compile`` asks ``dispatcher._cache.load_overload`` before it
    compiles; the wrapper adds the wait there.  Private Numba API: where it is missing,
    the dispatcher is returned unchanged (a duplicate compilation, nothing worse).
    """
    cache = getattr(dispatcher, "_cache", None)
    load = getattr(cache, "load_overload", None)
    name = getattr(getattr(dispatcher, "py_func", None), "__name__", None)
    if load is None or name is None:
        return dispatcher

    def load_overload(sig: Any, target_context: Any) -> Any:
        for ro in prewarmed:
            result = _load_or_forget(ro, ro.load_overload, sig, target_context, name, False)
            if result is not None:
                if ro.folder not in _PREWARMED_USED:
                    _PREWARMED_USED.append(ro.folder)
                return result
        result = _load_or_forget(cache, load, sig, target_context, name)
        waiter = _cache_waiter
        if result is None and waiter is not None and waiter(name):
            result = _load_or_forget(cache, load, sig, target_context, name)
        return result

    cache.load_overload = load_overload
    cache.prewarmed = list(prewarmed)  # for ltrboost._warmup's look at the index files
    save = getattr(cache, "save_overload", None)
    if save is not None:

        def save_overload(sig: Any, data: Any) -> None:
            _save_or_warn(cache, save, sig, data)

        cache.save_overload = save_overload
    return dispatcher


# "FOLDER: why" of the first cache write that failed (a full disk, a folder made
# read-only or by another user): named by cache_note() and ltrboost warmup.
_CACHE_WRITE_ERROR: str | None = None


def _save_or_warn(cache: Any, save: Callable, sig: Any, data: Any) -> None:
    """Numba's cache write after a compilation; a failed write (``OSError``: no space
    left, permission denied) is one warning per process, never an error: the kernel is
    compiled and the command goes on (Numba raised it out of the kernel's call)."""
    global _CACHE_WRITE_ERROR
    try:
        save(sig, data)
    except OSError as e:
        if _CACHE_WRITE_ERROR is None:
            folder = getattr(cache, "cache_path", None) or e.filename or "?"
            _CACHE_WRITE_ERROR = f"{folder}: {e.strerror or e}"
            warnings.warn(
                f"ltrboost: could not write the kernel cache ({_CACHE_WRITE_ERROR}); "
                "the kernels this process compiles are not kept and compile again "
                "next run",
                RuntimeWarning,
                stacklevel=2,
            )


def _load_or_forget(
    cache: Any, load: Callable, sig: Any, target_context: Any, name: str, forget: bool = True
) -> Any:
    """Numba's cache lookup; a damaged entry (a truncated or empty ``.nbi``/``.nbc``
    file: Numba raises from unpickling it) counts as a miss, and its index file is
    removed (unless not ``forget``: a prewarmed read-only folder) so that the
    compilation that follows writes a fresh one (Numba's save reads the index first and
    would fail on it too).  The cache only saves time: a damaged file must never stop a
    command."""
    try:
        return load(sig, target_context)
    except Exception as e:  # pickle, EOF, zlib, attribute errors from a bad file
        index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
        if index is not None and forget:
            with contextlib.suppress(OSError):
                os.remove(index)
        warnings.warn(
            f"the kernel cache entry of {name} could not be read "
            f"({type(e).__name__}); compiling it again",
            RuntimeWarning,
            stacklevel=2,
        )
        return None


_warned_uncached = False


def _warn_uncached(reason: str) -> None:
    global _warned_uncached
    if not _warned_uncached:
        _warned_uncached = True
        warnings.warn(
            f"ltrboost: no writable folder for the kernel cache ({reason}); kernels "
            "will be compiled in every process.  Set NUMBA_CACHE_DIR or XDG_CACHE_HOME "
            "to a writable folder.",
            RuntimeWarning,
            stacklevel=3,
        )


kernel = _preset(nogil=True)
# Helpers called once or twice per calling kernel (LambdaMART's per-pair scalars, the
# ranking routines of the one ranking kernel, a histogram's accumulation loop): typed
# and lowered into each caller (Numba ``inline="always"``) instead of compiled on
# their own.  A separately compiled helper has a fixed cost of ~0.05-0.1 s (its own
# LLVM module, optimised and turned into machine code, a CPython wrapper, a cache
# file) although LLVM inlines it into every caller anyway.  Inlining at Numba's level
# costs the helper's typing and lowering again at every call site, so helpers with
# many call sites in one kernel (the LETOR parser's byte tests, the split criteria)
# stay kernels: measured, inlining those cost more than it saved.  Called from Python,
# a helper compiles as usual.
inline_kernel = _preset(nogil=True, inline="always")
parallel_kernel = _preset(nogil=True, parallel=True)
# Kernels whose inner loops LLVM must vectorize (SIMD over a loop that divides): with
# Numba's default ``error_model="python"`` every float division checks for a zero
# divisor and can raise, and a loop that may leave early is never vectorized.  With
# ``"numpy"`` a division is IEEE's (x / 0 gives inf or NaN, no raise), so only kernels
# whose divisors are never zero use it (each says why).  The IEEE results of every
# non-zero division are the same under both models.
vector_kernel = _preset(nogil=True, error_model="numpy")
prange = numba.prange


# --------------------------------------------------------------- compile events
class _CompileMonitor(_numba_event.Listener):
    """Counts and times compilations of ltrboost's kernels (Numba "numba:compile"
    events, which fire on a cache miss only; loading from the cache is silent).

    Nested events (a kernel compiling the kernels it calls) are folded into the
    outermost one, per thread.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self.n_compiled = 0  # outermost ltrboost compilations
        self.seconds = 0.0  # wall time inside them
        self.listeners: list[Any] = []

    @staticmethod
    def _ours(event: Any) -> bool:
        disp = event.data.get("dispatcher") if event.data else None
        module = getattr(getattr(disp, "py_func", None), "__module__", "") or ""
        return module.startswith("ltrboost")

    def on_start(self, event: Any) -> None:
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth or not self._ours(event):
            return
        self._local.t0 = time.perf_counter()
        self._local.counting = True
        with self._lock:
            first = self.n_compiled == 0
        if first and kernels_uncached():  # nothing is kept: not "first run only"
            logger.info("compiling kernels (%s)", cache_note())
        elif first:
            logger.info(
                "compiling kernels, first run only: later runs load them from %s",
                cache_location(),
            )
        self.tell_started(event.data["dispatcher"].py_func.__qualname__)

    def on_end(self, event: Any) -> None:
        depth = getattr(self._local, "depth", 1) - 1
        self._local.depth = depth
        if depth or not getattr(self._local, "counting", False):
            return
        self._local.counting = False
        dt = time.perf_counter() - self._local.t0
        with self._lock:
            self.n_compiled += 1
            self.seconds += dt
        name = event.data["dispatcher"].py_func.__qualname__
        logger.debug("compiled %s in %.2f s", name, dt)
        self.tell_finished(name, dt)

    def tell_started(self, name: str) -> None:
        for listener in list(self.listeners):
            listener.compile_started(name)

    def tell_finished(self, name: str, seconds: float) -> None:
        for listener in list(self.listeners):
            listener.compile_finished(name, seconds)


_monitor = _CompileMonitor()
_numba_event.register("numba:compile", _monitor)


def compile_stats() -> dict[str, float]:
    """``{"kernels": n, "seconds": s}``: ltrboost kernels compiled by this process so
    far (not counting kernels loaded from the cache) and the time spent on them."""
    return {"kernels": _monitor.n_compiled, "seconds": _monitor.seconds}


@contextlib.contextmanager
def waiting_for(name: str) -> Iterator[None]:
    """This process waits for another one to compile kernel ``name`` (ltrboost._warmup):
    the compile listeners see it as a compilation, since the user waits on one (the
    notice, the progress bar's clock); :func:`compile_stats` does not count it."""
    _monitor.tell_started(name)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _monitor.tell_finished(name, time.perf_counter() - t0)


def add_compile_listener(listener: Any) -> None:
    """Call ``listener.compile_started(name)`` / ``compile_finished(name, seconds)``
    around each compilation of an ltrboost kernel (any thread)."""
    _monitor.listeners.append(listener)


def remove_compile_listener(listener: Any) -> None:
    with contextlib.suppress(ValueError):
        _monitor.listeners.remove(listener)


def _element_pointer(context, builder, aryty, ary_value, indices):
    """LLVM pointer to the element ``indices`` (intp values) of the array ``ary_value``
    of Numba type ``aryty``, without wraparound or bounds checks (codegen of the
    intrinsics below)."""
    ary = context.make_array(aryty)(context, builder, ary_value)
    return cgutils.get_item_pointer2(
        context,
        builder,
        ary.data,
        cgutils.unpack_tuple(builder, ary.shape),
        cgutils.unpack_tuple(builder, ary.strides),
        aryty.layout,
        indices,
        wraparound=False,
        boundscheck=False,
    )


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
        i = context.cast(builder, args[1], idxty, types.intp)
        ptr = _element_pointer(context, builder, aryty, args[0], [i])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # (address, rw=0 read, locality=3 keep in all levels, cache type=1 data)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def add_gh1(typingctx, sub, t, b, g, h):
    """``add_gh1(sub, t, b, g, h)``: ``sub[t, b, :] += (g, h, 1.0, 0.0)`` as one
    four-lane vector add (LLVM ``<4 x double>``: load, ``fadd``, store).

    ``sub``: C-contiguous float64 of shape ``(T, n_bins, 4)``; ``g``, ``h`` any numbers
    (converted to float64).  Each lane is the same IEEE addition as the scalar
    ``sub[t, b, 0] += g; sub[t, b, 1] += h; sub[t, b, 2] += 1.0`` (lane 3 adds 0.0 to
    padding), so the sums are the scalar ones bit for bit; the histogram kernels issue
    one store per row instead of three (measured 15-30% faster per update).  Where the
    CPU has no 256-bit vectors LLVM splits the add into narrower ones.
    """
    if not (
        isinstance(sub, types.Array)
        and sub.ndim == 3
        and sub.layout == "C"
        and sub.dtype == types.float64
    ):
        return None
    if not all(isinstance(a, types.Integer) for a in (t, b)):
        return None
    if not all(isinstance(a, types.Integer | types.Float) for a in (g, h)):
        return None
    sig = types.void(sub, t, b, g, h)

    def codegen(context, builder, signature, args):
        idx = [context.cast(builder, args[k], signature.args[k], types.intp) for k in (1, 2)]
        zero = context.get_constant(types.intp, 0)
        ptr = _element_pointer(context, builder, signature.args[0], args[0], [*idx, zero])
        dbl = ir.DoubleType()
        v4 = ir.VectorType(dbl, 4)
        i32 = ir.IntType(32)
        inc = ir.Constant(v4, [dbl(0.0), dbl(0.0), dbl(1.0), dbl(0.0)])
        for lane, k in ((0, 3), (1, 4)):
            x = context.cast(builder, args[k], signature.args[k], types.float64)
            inc = builder.insert_element(inc, x, i32(lane))
        vptr = builder.bitcast(ptr, v4.as_pointer())
        builder.store(builder.fadd(builder.load(vptr, align=8), inc), vptr, align=8)
        return context.get_dummy_value()

    return sig, codegen


if numba.config.DISABLE_JIT:  # NUMBA_DISABLE_JIT=1 (debugging): the intrinsics in Python

    def prefetch(arr: Any, idx: Any) -> None:  # type: ignore[no-redef]
        """A hint only: nothing to do in Python."""

    def add_gh1(sub: Any, t: Any, b: Any, g: Any, h: Any) -> None:  # type: ignore[no-redef]
        """``sub[t, b, :3] += (g, h, 1.0)``: the intrinsic's three scalar additions."""
        sub[t, b, 0] += float(g)
        sub[t, b, 1] += float(h)
        sub[t, b, 2] += 1.0


def _resolve_n_threads(n_threads: int | None) -> int:
    """Map the user's ``n_threads`` to a concrete count.

    None, 0 or a negative number (LightGBM's 0, scikit-learn's -1): the default,
    :func:`ltrboost._warmup._default_threads` (``OMP_NUM_THREADS`` when set, otherwise
    the CPUs this process may use under its affinity and cgroup CPU quota).  Any count,
    given or default, is capped at the affinity's CPUs and at ``NUMBA_NUM_THREADS``
    (which joblib's workers set to their share of the cores).  Not an integer (``1.5``,
    ``True``): ValueError.
    """
    if n_threads is not None and (
        isinstance(n_threads, bool) or not isinstance(n_threads, int | np.integer)
    ):
        raise ValueError(f"n_threads={n_threads!r} must be an integer or None")
    limit = max(1, min(_usable_cpus(), numba.config.NUMBA_NUM_THREADS))
    if n_threads is None or n_threads <= 0:
        n_threads = _default_threads()
    return max(1, min(int(n_threads), limit))


# The thread count of the drivers below, per calling thread.  Kept here rather than
# in Numba's ``set_num_threads``: no kernel of the package is a parfor, and setting
# Numba's count starts Numba's OpenMP pool in the user's process, after which a child
# it forks is killed as soon as it runs any Numba parallel function ("fork() called
# from a process already using GNU OpenMP").
_thread_count = threading.local()


def num_threads() -> int:
    """The thread count :func:`threads` set in this thread (default: as for
    ``n_threads=None``, :func:`_resolve_n_threads`)."""
    n = getattr(_thread_count, "n", None)
    return _resolve_n_threads(None) if n is None else n


@contextlib.contextmanager
def threads(n_threads: int | None) -> Iterator[int]:
    """Run the body with ``n_threads`` threads and restore the previous count (of this
    thread; Numba's own thread count is left alone).

    Results of every kernel in the package do not depend on the thread count: parallel
    loops write disjoint outputs and reductions are done in a fixed order.
    """
    previous = getattr(_thread_count, "n", None)
    n = _resolve_n_threads(n_threads)
    _thread_count.n = n
    try:
        yield n
    finally:
        _thread_count.n = previous


# ------------------------------------------------- thread driver over queries
# A query-parallel loop compiled with ``parallel=True`` costs ~1-3 s more to compile
# than the same loop compiled serially (the parfor is lowered into a gufunc of its
# own).  Loops whose iterations are independent queries are therefore compiled once,
# serially and ``nogil``, over a range of queries, and :func:`over_queries` runs
# contiguous blocks of queries on Python threads: same outputs (each query writes
# only its own slots), one compiled function instead of a parfor.
MIN_DOCS_PER_THREAD = 20_000  # below this a second thread costs more than it saves
# Pointwise objectives' per-document gradients (~10-30 ns a document): a block per
# thread from this many documents.
POINTWISE_ROWS_PER_THREAD = 65_536

_pool: Any = None
_pool_pid = -1
_pool_lock = threading.Lock()


def _forget_pool_in_child() -> None:
    """After a fork: a new lock and no pool.  A fork copies only the forking thread,
    so the parent's workers do not exist in the child, and a lock another thread held
    (a training in the background takes it at every parallel step) stayed held for
    ever: the child's first multi-threaded step hung."""
    global _pool, _pool_pid, _pool_lock
    _pool_lock = threading.Lock()
    _pool = None
    _pool_pid = -1


def _compiler_lock() -> Any:
    """Numba's process-wide compiler lock (an ``RLock``), or None where its internals
    moved."""
    from numba.core.compiler_lock import global_compiler_lock

    lock = getattr(global_compiler_lock, "_lock", None)
    return lock if hasattr(lock, "acquire") and hasattr(lock, "release") else None


def _hold_compiler_lock_for_fork() -> None:
    """Before a fork: wait for a compilation running in another thread to end.

    A fork copies only the forking thread; a compiler lock another thread held (a
    background warm-up, or the user's own thread training a new configuration) stays
    held for ever in the child, whose first compilation then hangs.  Holding the lock
    across the fork makes the child start with it free (the fork waits for the
    compilation in flight, seconds at most).
    """
    lock = _compiler_lock()
    if lock is not None:
        lock.acquire()
        _fork_held.append(lock)


def _release_compiler_lock_after_fork() -> None:
    """After a fork, in parent and child: release what the fork's hook acquired (in
    the child the forking thread is the one that holds it)."""
    while _fork_held:
        _fork_held.pop().release()


_fork_held: list = []


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_hold_compiler_lock_for_fork,
        after_in_parent=_release_compiler_lock_after_fork,
        after_in_child=_release_compiler_lock_after_fork,
    )
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _executor(n: int) -> Any:
    """A shared thread pool of at least ``n`` workers (a new one after a fork: the
    parent's worker threads do not exist in the child)."""
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool._max_workers < n or _pool_pid != os.getpid():
            from concurrent.futures import ThreadPoolExecutor

            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="ltrboost")
            _pool_pid = os.getpid()
        return _pool


def query_blocks(query_offsets: Any, n_blocks: int) -> list[tuple[int, int]]:
    """Split queries ``0..n_queries`` into at most ``n_blocks`` contiguous, non-empty
    ``(q0, q1)`` blocks of about equal numbers of documents."""
    import numpy as np

    offsets = np.asarray(query_offsets)
    n_queries = offsets.shape[0] - 1
    n_blocks = max(1, min(int(n_blocks), n_queries))
    if n_blocks == 1:
        return [(0, n_queries)]
    n_docs = float(offsets[-1])
    targets = np.arange(1, n_blocks) * (n_docs / n_blocks)
    cuts = np.searchsorted(offsets, targets, side="left").tolist()
    bounds = sorted({0, n_queries, *(min(max(c, 0), n_queries) for c in cuts)})
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def over_queries(
    kernel_range: Callable[..., Any],
    query_offsets: Any,
    *args: Any,
    min_docs_per_thread: int | None = None,
) -> None:
    """Run ``kernel_range(q0, q1, *args)`` for all queries, on up to
    ``num_threads()`` threads (the count :func:`threads` set).

    ``kernel_range`` must be a ``nogil`` kernel whose queries are independent (each
    writes only its own outputs), so the result does not depend on the split.
    """
    n_queries = len(query_offsets) - 1
    if n_queries <= 0:
        return
    n_docs = int(query_offsets[-1])
    if min_docs_per_thread is None:
        min_docs_per_thread = MIN_DOCS_PER_THREAD
    n_threads = min(num_threads(), n_docs // max(min_docs_per_thread, 1))
    blocks = query_blocks(query_offsets, n_threads)
    if len(blocks) == 1:
        kernel_range(0, n_queries, *args)
        return
    pool = _executor(len(blocks))
    futures = [pool.submit(kernel_range, q0, q1, *args) for q0, q1 in blocks[1:]]
    try:
        kernel_range(blocks[0][0], blocks[0][1], *args)  # this thread does a block too
        for f in futures:
            f.result()
    except BaseException:
        _abandon(futures)
        raise


def _abandon(futures: list[Any], stop: list[bool] | None = None) -> None:
    """A call's parallel step raised instead of waiting for ``futures`` (Ctrl-C's
    KeyboardInterrupt in this thread's own block or while it waits, a block's error):
    the blocks not started are dropped (``stop[0] = True`` for workers taking blocks
    in turn) and the running ones finish before the exception goes on, so no block of
    a call that ended keeps a pool thread busy or writes into the call's arrays.  (A
    ``try`` at each call site, not a context manager: these drivers run a few hundred
    times a tree, and a ``try`` costs nothing until it catches.)"""
    if stop is not None:
        stop[0] = True
    for f in futures:
        f.cancel()
    from concurrent.futures import wait

    wait(futures)


def over_rows(
    kernel_range: Callable[..., Any],
    n_rows: int,
    *args: Any,
    min_rows_per_thread: int,
    align: int = 1,
    blocks_per_thread: int = 1,
) -> None:
    """Run ``kernel_range(r0, r1, *args)`` for rows ``0..n_rows`` in contiguous blocks
    (starts multiples of ``align``) on up to ``num_threads()`` threads; rows
    must be independent, as for :func:`over_queries`.

    ``blocks_per_thread > 1`` cuts the rows into that many blocks per thread, which the
    threads take in turn as they finish (for rows of unequal cost: the features of a
    histogram, whose bins and value distributions differ); the result is the same.
    """
    n_rows = int(n_rows)
    if n_rows <= 0:
        return
    n_threads = min(num_threads(), n_rows // max(min_rows_per_thread, 1))
    if n_threads <= 1:
        kernel_range(0, n_rows, *args)
        return
    n_blocks = min(n_threads * max(int(blocks_per_thread), 1), n_rows)
    step = -(-n_rows // n_blocks)
    step = -(-step // align) * align
    bounds = [*range(0, n_rows, step), n_rows]
    blocks = list(itertools.pairwise(bounds))
    if len(blocks) > n_threads:
        todo = iter(blocks)
        lock = threading.Lock()
        stop = [False]

        def work() -> None:
            while True:
                with lock:
                    block = None if stop[0] else next(todo, None)
                if block is None:
                    return
                kernel_range(block[0], block[1], *args)

        pool = _executor(n_threads - 1)
        futures = [pool.submit(work) for _ in range(n_threads - 1)]
        try:
            work()
            for f in futures:
                f.result()
        except BaseException:
            _abandon(futures, stop)
            raise
        return
    pool = _executor(len(blocks))
    futures = [pool.submit(kernel_range, r0, r1, *args) for r0, r1 in blocks[1:]]
    try:
        kernel_range(blocks[0][0], blocks[0][1], *args)
        for f in futures:
            f.result()
    except BaseException:
        _abandon(futures)
        raise

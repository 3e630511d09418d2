"""A first run's kernels compiled by two processes at once.

A command's first run in a fresh environment spends most of its time compiling Numba
kernels, one after the other, on one core: the reader, then ranking and binning, the
objective, histograms, split search, partition, prediction, metrics.  Numba's compiler
holds a process-wide lock, so a second *thread* gains nothing; a second *process* does.

When the CLI starts on a cold cache (:class:`BackgroundCompile`: the cache has no entry
for the command's first kernel, :func:`_first_kernel_uncached`) or, failing that, at its
first compilation (a compile listener: a cache miss), it starts a helper process that
compiles the kernels the command is known to need (:data:`MANIFEST`, recorded from real
runs by ``--record``) in *reverse* order into the same kernel cache.  At the start, on
Linux, the helper is a fork of the command (:class:`_ForkedHelper`): it has NumPy, Numba
and ltrboost imported already and compiles while the command imports the rest and reads
its data (README's train: the compile notice's wait went from a median 8.75 s to 7.55 s
over 20 and 24 cold runs, bench/README); otherwise it is ``python -m ltrboost._warmup
PROFILE --background``.
The command compiles from the front; when it reaches a kernel the helper already
compiled, Numba loads it from the cache.  The two meet in the middle
(the helper's first cache hit after a compilation, or a kernel the command has started).
Then the helper compiles the kernels of the command that usually comes next (README's
``ltrboost eval`` after ``ltrboost train``: the profile's last :func:`later_count`
entries) while the command runs, and stops.  (Compiled first, as they were until stop
27, they kept the helper from the kernels the command waits for: ~0.9 s of CPU on
README's train.)

Only a hint, never a dependency: the manifest names kernels and argument types; an entry
that no longer exists or whose types the command does not use costs the helper one
compilation and changes nothing else.  Nothing runs when the cache is warm (no compile
event), when the kernel cache is not writable, with ``LTRBOOST_BACKGROUND_COMPILE=0``,
and (unless it is ``1``) with fewer than two usable CPUs or no idle core
(:func:`_core_to_spare`).  The helper exits when its work is done, when the
command exits (it is terminated; Numba writes cache files atomically) or when its parent
process is gone.  A forked helper never returns into the command's code: it writes
nothing to the command's streams and ends with ``os._exit``.

``python -m ltrboost._warmup PROFILE`` (``ltrboost warmup`` on the CLI) also runs in the
foreground, e.g. to compile a container image's kernels at build time.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

WAIT_S = 120.0  # longest wait for a kernel the helper is compiling
MANIFEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_kernels.json")
ENV_SWITCH = "LTRBOOST_BACKGROUND_COMPILE"


def load_manifest() -> dict[str, list[list[str]]]:
    """``{profile: [[module, function, argument types], ...]}`` in compilation order."""
    return _load()["profiles"]


def later_count(profile: str) -> int:
    """How many of ``profile``'s last entries are kernels of the command that usually
    follows it (``eval`` after ``train``), not of the command itself."""
    return _later(_load(), profile)


def _later(manifest: dict[str, Any], profile: str) -> int:
    return int(manifest.get("later", {}).get(profile, 0))


def _load() -> dict[str, Any]:
    """The manifest, with the mode profiles it does not record (:func:`_add_mode_profiles`)."""
    with open(MANIFEST, encoding="utf-8") as f:
        manifest = json.load(f)
    _add_mode_profiles(manifest)
    return manifest


def profile_names() -> list[str]:
    return sorted(load_manifest())


# Objectives whose ``split_criterion="ole"`` runs compile kernels of their own (pair
# terms, pair histograms, the OLE split search): recorded as profiles ``train:NAME+ole``.
# A pointwise objective's OLE is its Newton split (Theorem 1): the plain profile.
OLE_PROFILE_OBJECTIVES = ("lambdamart", "ranknet", "rankboost", "yetirank")


# Opt-in training modes that compile kernels of their own in place of some of a train
# profile's: profile suffixes ``+quantized`` (``quantized_gradients`` > 0: quantize.py's
# histogram and row-sum kernels and the packed gather, for the exact histogram and gather
# kernels) and ``+noise`` (``random_strength`` > 0: the noisy split search for the plain
# one), with the CLI flags that turn them on when a profile is recorded.  Each is
# recorded on :data:`MODE_REFERENCE` alone (:data:`MODE_PROFILES`); the other objectives'
# ``train:OBJECTIVE[+ole]+MODE[+MODE]`` are derived (:func:`_add_mode_profiles`): a
# mode's kernels and argument types do not depend on the objective.  Pairwise OLE
# refuses quantised gradients (and every ``+ole`` profile is a pairwise objective's).
MODE_FLAGS = {"quantized": ("--quantized-gradients", "4"), "noise": ("--random-strength", "1")}
MODE_REFERENCE = "lambdamart"
MODE_PROFILES = (
    f"train:{MODE_REFERENCE}+quantized",
    f"train:{MODE_REFERENCE}+noise",
    f"train:{MODE_REFERENCE}+ole+noise",
)


def command_profile(
    command: str | None,
    objective: str | None = None,
    criterion: str | None = None,
    quantized_gradients: int | None = None,
    random_strength: float | None = None,
) -> str | None:
    """The manifest profile of a CLI command (None: no profile): ``train:OBJECTIVE``,
    with ``+ole``, ``+quantized`` (``quantized_gradients`` > 0, not with ``+ole``) and
    ``+noise`` (``random_strength`` > 0) where the run compiles their kernels."""
    if command in ("train", "cv"):
        name = objective or "lambdamart"
        ole = criterion == "ole" and name in OLE_PROFILE_OBJECTIVES
        profile = f"train:{name}+ole" if ole else f"train:{name}"
        if quantized_gradients and not ole:
            profile += "+quantized"
        if random_strength is not None and random_strength > 0:
            profile += "+noise"
        return profile
    if command in ("eval", "predict"):
        return command
    return None


def _add_mode_profiles(manifest: dict[str, Any]) -> None:
    """Add to ``manifest`` (in place) ``BASE+MODE`` and ``BASE+quantized+noise`` for every
    recorded train profile ``BASE`` (``train:OBJECTIVE[+ole]``) whose family (Newton or
    OLE) has the mode recorded on :data:`MODE_REFERENCE` (:data:`MODE_PROFILES`), unless
    recorded itself.  Each mode, in turn, takes out of the profile's own kernels those the
    reference's run with the mode no longer compiles and puts in the ones it compiles
    instead, each before the first kernel that follows it in that run and in the profile
    (where the command meets it); the next command's kernels (``later``) stay last."""
    profiles = manifest["profiles"]
    later = manifest.setdefault("later", {})
    bases = [
        p for p in profiles
        if p.startswith("train:") and not set(p.split("+")[1:]) & set(MODE_FLAGS)
    ]  # fmt: skip
    for base in bases:
        family = f"train:{MODE_REFERENCE}" + ("+ole" if base.endswith("+ole") else "")
        for modes in (("quantized",), ("noise",), ("quantized", "noise")):
            name = base + "".join(f"+{m}" for m in modes)
            refs = [f"{family}+{m}" for m in modes]
            if name in profiles or family not in profiles or not all(r in profiles for r in refs):
                continue
            own = _own(manifest, base)
            for ref in refs:
                own = _apply_mode(own, _own(manifest, family), _own(manifest, ref))
            n_later = len(profiles[base]) - len(_own(manifest, base))
            profiles[name] = own + profiles[base][len(profiles[base]) - n_later :]
            if n_later:
                later[name] = n_later


def _own(manifest: dict[str, Any], profile: str) -> list[list[str]]:
    """``profile``'s entries without the next command's (``later``)."""
    entries = manifest["profiles"][profile]
    return entries[: len(entries) - min(_later(manifest, profile), len(entries))]


def _apply_mode(
    own: list[list[str]], reference: list[list[str]], with_mode: list[list[str]]
) -> list[list[str]]:
    """A command's kernels ``own`` with a mode: ``reference`` and ``with_mode`` are
    another command's kernels without and with it (see :func:`_add_mode_profiles`)."""
    before = {tuple(e) for e in reference}
    after = {tuple(e) for e in with_mode}
    out = [e for e in own if tuple(e) in after or tuple(e) not in before]
    have = {tuple(e) for e in out}
    for i, entry in enumerate(with_mode):
        if tuple(entry) in before or tuple(entry) in have:
            continue
        at = next(
            (out.index(e) for e in with_mode[i + 1 :] if tuple(e) in before and e in out),
            len(out),
        )
        out.insert(at, entry)
        have.add(tuple(entry))
    return out


def signature(text: str) -> tuple:
    """Numba argument types from their ``repr`` (as recorded in the manifest)."""
    from numba.core import types

    names = {k: getattr(types, k) for k in dir(types) if not k.startswith("_")}
    names["bool"] = types.boolean
    value = eval(text, {"__builtins__": {}}, names)  # our own data file: types only
    return tuple(value)


def compile_profile(
    profile: str,
    *,
    reverse: bool = False,
    stop_when_met: bool = False,
    parent: int = 0,
    taken: set[str] | None = None,
    report: Callable[[str, str], None] | None = None,
) -> dict[str, int]:
    """Compile (or load from the cache) the kernels of ``profile``.

    ``reverse``: the command's own kernels last first, then (in order) those of the
    command that follows it (:func:`later_count`).  ``stop_when_met``: leave the
    command's own kernels at the first one found in the cache after at least one
    compilation, or named in ``taken`` (kernels the command has started compiling: it got
    there first), for the next command's.  ``parent``: stop when this process is no
    longer our parent.  ``report("start" | "end", name)`` is called around each entry.
    Returns counts ``compiled``, ``loaded``, ``skipped`` (entries that no longer resolve).
    """
    manifest = _load()  # one read: the entries and their later count
    entries = manifest["profiles"][profile]
    counts = {"compiled": 0, "loaded": 0, "skipped": 0}
    if not reverse:
        _compile_entries(entries, False, parent, taken, report, counts)
        return counts
    n_own = len(entries) - min(_later(manifest, profile), len(entries))
    _compile_entries(entries[:n_own][::-1], stop_when_met, parent, taken, report, counts)
    _compile_entries(entries[n_own:], False, parent, taken, report, counts)
    return counts


def _compile_entries(
    entries: list[list[str]],
    stop_when_met: bool,
    parent: int,
    taken: set[str] | None,
    report: Callable[[str, str], None] | None,
    counts: dict[str, int],
) -> None:
    """:func:`compile_profile`'s loop over ``entries``, adding to ``counts``; stops early
    (``stop_when_met``) where the command got first, and when the parent is gone."""
    compiled = counts["compiled"]
    for module, name, types_text in entries:
        if parent and os.getppid() != parent:
            break
        if taken is not None and name in taken:
            if stop_when_met:
                break
            continue
        if report is not None:
            report("start", name)
        try:
            dispatcher = getattr(importlib.import_module(module), name)
            sig = signature(types_text)
            if tuple(sig) in getattr(dispatcher, "overloads", {}):  # compiled earlier in this run
                counts["loaded"] += 1
                continue
            hits = sum(dispatcher.stats.cache_hits.values())
            dispatcher.compile(sig)
        except Exception:  # a stale entry: the command compiles what it needs itself
            counts["skipped"] += 1
            continue
        finally:
            if report is not None:
                report("end", name)
        if sum(dispatcher.stats.cache_hits.values()) > hits:
            counts["loaded"] += 1
            if stop_when_met and counts["compiled"] > compiled:
                break
        else:
            counts["compiled"] += 1


def _switch() -> str:
    """``LTRBOOST_BACKGROUND_COMPILE``: "off" (0/false/no/off), "on" (1/true/yes/on: always
    start the helper) or "auto" (unset, anything else: when a core is to spare)."""
    value = os.environ.get(ENV_SWITCH, "auto").strip().lower()
    if value in ("0", "false", "no", "off"):
        return "off"
    if value in ("1", "true", "yes", "on"):
        return "on"
    return "auto"


def _core_to_spare() -> bool:
    """Two usable CPUs at least (:func:`_available_cpus`: affinity and cgroup quota), and
    one of them idle for the helper besides this process.

    On a busy machine a third process only takes time from the command: README's train +
    eval took 19.5-20.4 s without the helper and 21.8-23.1 s with it while another job
    kept one of two cores busy.  "Busy" is the number of runnable tasks other than this
    one right now (Linux ``/proc/loadavg``), not the load average, which trails by a
    minute (README's ``pip install`` just before would switch the helper off).
    """
    cpus = _available_cpus()
    if cpus < 2:
        return False
    busy = _other_runnable_tasks()
    return busy is None or busy <= cpus - 2


def _other_runnable_tasks() -> int | None:
    """Runnable tasks on the machine now, this one excluded (None: not known)."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(running - 1, 0)


def _usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: ``taskset``, a container's
    cpuset), not the machine's cores that ``os.cpu_count()`` counts.  Here, without
    Numba, for the helper's decision; :mod:`ltrboost._numba` caps its threads with it."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


# Where the cgroup CPU quota is read (tests point these at fake trees).
CGROUP_ROOT = "/sys/fs/cgroup"
PROC_SELF_CGROUP = "/proc/self/cgroup"


def _available_cpus() -> int:
    """CPUs' worth of time this process may use: its affinity (:func:`_usable_cpus`),
    limited by a cgroup CPU quota (:func:`_cgroup_cpu_quota`: ``docker --cpus=2`` on a
    64-core host gives 2; a quota of 1.5 CPUs gives 2)."""
    cpus = _usable_cpus()
    quota = _cgroup_cpu_quota()
    return cpus if quota is None else max(1, min(cpus, quota))


def _default_threads() -> int:
    """The thread count ``n_threads`` None, 0 or negative stands for, before the caps
    every count gets (:func:`_usable_cpus`, ``NUMBA_NUM_THREADS``): ``OMP_NUM_THREADS``
    when it is a positive integer (its first level: ``4,2`` is 4), read at each call, as
    LightGBM and XGBoost do; otherwise :func:`_available_cpus` (affinity and cgroup
    quota).  An ``OMP_NUM_THREADS`` that is not a positive integer is ignored, with one
    warning; an empty one is unset."""
    omp = _env_threads("OMP_NUM_THREADS")
    return _available_cpus() if omp is None else omp


_warned_env: set[tuple[str, str]] = set()


def _env_threads(name: str) -> int | None:
    """A positive thread count from the environment variable ``name`` (None: unset,
    empty or not a positive integer, the last with one warning per value)."""
    raw = os.environ.get(name, "")
    if not raw.strip():
        return None
    first = raw.split(",")[0].strip()
    if first.isascii() and first.isdigit() and int(first) > 0:
        return int(first)
    if (name, raw) not in _warned_env:
        _warned_env.add((name, raw))
        import warnings

        warnings.warn(
            f"{name}={raw!r} is not a positive integer; ltrboost ignores it and uses "
            f"{_available_cpus()} threads by default",
            RuntimeWarning,
            stacklevel=2,
        )
    return None


def _cgroup_cpu_quota(root: str | None = None, proc_cgroup: str | None = None) -> int | None:
    """The smallest cgroup CPU quota over this process's cgroup and its ancestors, in
    whole CPUs rounded up (None: no quota, not Linux, or nothing readable).

    cgroup v2: ``cpu.max`` (``QUOTA PERIOD`` or ``max PERIOD``); v1: ``cpu.cfs_quota_us``
    (-1: none) over ``cpu.cfs_period_us`` in the ``cpu`` hierarchy.  The cgroup's path
    comes from ``/proc/self/cgroup``; where that path is not under ``root`` (a container
    that sees the host's path but has its own cgroup mounted at the root, Docker on v1)
    the files at the root are read.  ``root`` and ``proc_cgroup`` default to
    :data:`CGROUP_ROOT` and :data:`PROC_SELF_CGROUP`.  Read again after
    :data:`QUOTA_REREAD_SECONDS` (a container's quota may change while it runs, and
    every ``predict`` resolves its thread count: reading the files, ~75 us, was two
    thirds of a 10-row ``predict``).
    """
    root = CGROUP_ROOT if root is None else root
    proc_cgroup = PROC_SELF_CGROUP if proc_cgroup is None else proc_cgroup
    now = time.monotonic()
    cached = _quota_cache.get((root, proc_cgroup))
    if cached is not None and now - cached[0] < QUOTA_REREAD_SECONDS:
        return cached[1]
    quota = _read_cgroup_cpu_quota(root, proc_cgroup)
    _quota_cache[(root, proc_cgroup)] = (now, quota)
    return quota


# How long a read cgroup quota is used before the files are read again, and the reads
# by (root, /proc/self/cgroup): (when, quota).
QUOTA_REREAD_SECONDS = 1.0
_quota_cache: dict[tuple[str, str], tuple[float, int | None]] = {}


def _read_cgroup_cpu_quota(root: str, proc_cgroup: str) -> int | None:
    """:func:`_cgroup_cpu_quota` read from the files now."""
    quotas = _cgroup_values(
        root,
        proc_cgroup,
        "cpu",
        lambda folder: _read_cpu_max(os.path.join(folder, "cpu.max")),
        _read_cfs_quota,
    )
    if quotas is None:
        return None
    found = [q for q in quotas if q > 0]
    if not found:
        return None
    return max(1, math.ceil(min(found)))


def _cgroup_values(
    root: str,
    proc_cgroup: str,
    controller: str,
    read_v2: Callable[[str], float],
    read_v1: Callable[[str], float],
) -> list[float] | None:
    """``read_v2(folder)`` over this process's unified (v2) cgroup folder and its
    ancestors, and ``read_v1(folder)`` over those of ``controller``'s v1 hierarchy, as
    listed by ``proc_cgroup`` (None: that file is unreadable)."""
    try:
        with open(proc_cgroup, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    values: list[float] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # v2 (unified)
            values += [read_v2(folder) for folder in _cgroup_folders(root, path)]
        elif controller in controllers.split(","):  # v1
            for base in (os.path.join(root, controller), os.path.join(root, controllers)):
                values += [read_v1(folder) for folder in _cgroup_folders(base, path)]
    return values


def _cgroup_folders(base: str, path: str) -> list[str]:
    """``base/path`` and its ancestors up to ``base``; just ``base`` when ``base/path``
    is not a folder (or leaves ``base``)."""
    base = os.path.normpath(base)
    leaf = os.path.normpath(os.path.join(base, path.strip().lstrip("/")))
    if not (leaf == base or leaf.startswith(base + os.sep)) or not os.path.isdir(leaf):
        return [base]
    folders = [leaf]
    while leaf != base:
        leaf = os.path.dirname(leaf)
        folders.append(leaf)
    return folders


def _read_cpu_max(path: str) -> float:
    """CPUs of a v2 ``cpu.max`` file (0: no quota, no file or not understood)."""
    try:
        with open(path, encoding="ascii") as f:
            quota, period = f.read().split()
        return int(quota) / int(period) if int(quota) > 0 and int(period) > 0 else 0.0
    except (OSError, ValueError, UnicodeDecodeError):  # "max", a missing or odd file
        return 0.0


def _read_cfs_quota(folder: str) -> float:
    """CPUs of a v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` pair (0: none)."""
    try:
        with open(os.path.join(folder, "cpu.cfs_quota_us"), encoding="ascii") as f:
            quota = int(f.read())
        with open(os.path.join(folder, "cpu.cfs_period_us"), encoding="ascii") as f:
            period = int(f.read())
    except (OSError, ValueError, UnicodeDecodeError):
        return 0.0
    return quota / period if quota > 0 and period > 0 else 0.0


def _cgroup_memory_limit(root: str | None = None, proc_cgroup: str | None = None) -> int | None:
    """The smallest cgroup memory limit over this process's cgroup and its ancestors, in
    bytes (None: no limit, not Linux, or nothing readable).

    cgroup v2: ``memory.max`` (``max``: none); v1: ``memory.limit_in_bytes`` in the
    ``memory`` hierarchy (a huge value, ~2**63: none).  Folders as for
    :func:`_cgroup_cpu_quota` (``root`` and ``proc_cgroup`` default to
    :data:`CGROUP_ROOT` and :data:`PROC_SELF_CGROUP`).  Read at each call: the memory
    guards ask once per training run or metric.
    """
    root = CGROUP_ROOT if root is None else root
    proc_cgroup = PROC_SELF_CGROUP if proc_cgroup is None else proc_cgroup
    limits = _cgroup_values(
        root,
        proc_cgroup,
        "memory",
        lambda folder: _read_memory_bytes(os.path.join(folder, "memory.max")),
        lambda folder: _read_memory_bytes(os.path.join(folder, "memory.limit_in_bytes")),
    )
    found = [m for m in limits or () if m > 0]
    return int(min(found)) if found else None


# A v1 cgroup without a limit reports about 2**63 (rounded down to a page).
_NO_MEMORY_LIMIT = 1 << 60


def _read_memory_bytes(path: str) -> int:
    """Bytes of a ``memory.max`` / ``memory.limit_in_bytes`` file (0: no limit, no file
    or not understood)."""
    try:
        with open(path, encoding="ascii") as f:
            value = int(f.read().strip())
    except (OSError, ValueError, UnicodeDecodeError):  # "max", a missing or odd file
        return 0
    return value if 0 < value < _NO_MEMORY_LIMIT else 0


def _first_kernel_uncached(profile: str) -> bool:
    """True when the kernel cache (and any prewarmed read-only folder,
    :func:`ltrboost._numba._prewarmed_caches`) holds nothing for the first kernel
    ``profile`` compiles (the reader, for every profile): a cold cache, seen before the command
    compiles anything, so the helper can start while the command imports and reads its
    data.  False when not known (Numba's private cache API changed): the helper then
    starts at the first compilation, as it always may."""
    try:
        module, name, _ = load_manifest()[profile][0]
        dispatcher = getattr(importlib.import_module(module), name)
        caches = [dispatcher._cache, *getattr(dispatcher._cache, "prewarmed", ())]
        indexes = [c._cache_file._index_path for c in caches]
    except Exception:
        return False
    return not any(os.path.exists(index) for index in indexes)


def _can_fork() -> bool:
    """The helper may be a fork of this process: Linux (macOS forbids fork without exec
    in processes that use some system libraries; Windows has no fork) and this process
    has one Python thread (a fork copies only the calling thread, and a lock another one
    holds stays held in the copy).  Called at the command's start, before any parallel
    kernel has started Numba's worker threads; NumPy's BLAS pool, started at import,
    re-creates its threads after a fork (and compiling calls no BLAS)."""
    linux = sys.platform.startswith("linux") and hasattr(os, "fork")
    return linux and threading.active_count() == 1


class _ForkedHelper:
    """The helper as a fork of the command, with the handle of a spawned one
    (``subprocess.Popen``'s ``stdin``, ``stdout``, ``poll``, ``terminate``, ``wait``,
    ``kill``).  A spawned helper starts a new interpreter and imports NumPy, Numba and
    ltrboost again before its first compilation (~1.2 s on bench/README's machine, a
    cold start's most valuable seconds); a fork has all of that already."""

    def __init__(self, pid: int, stdin: Any, stdout: Any) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.returncode: int | None = None

    @classmethod
    def start(cls, profile: str) -> _ForkedHelper | None:
        parent = os.getpid()
        to_child = os.pipe()
        from_child = os.pipe()
        for stream in (sys.stdout, sys.stderr):  # nothing buffered is written twice
            with contextlib.suppress(Exception):
                stream.flush()
        try:
            pid = os.fork()
        except OSError:
            for fd in (*to_child, *from_child):
                os.close(fd)
            return None
        if pid == 0:  # the helper: never returns into the command's code
            code = 1
            try:
                os.close(to_child[1])
                os.close(from_child[0])
                _detach_from_command()
                # never closed here: its reader thread may be blocked on it (a close
                # would wait for that read); os._exit closes both
                inp = os.fdopen(to_child[0], "rb")
                out = os.fdopen(from_child[1], "wb")
                code = _run_background([profile], parent, inp, out)
                out.flush()
            finally:
                os._exit(code)
        os.close(to_child[0])
        os.close(from_child[1])
        return cls(pid, os.fdopen(to_child[1], "wb"), os.fdopen(from_child[0], "rb"))

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere
                self.returncode = -1
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def _signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"ltrboost helper {self.pid}", timeout or 0)
            time.sleep(0.005)
        assert self.returncode is not None
        return self.returncode


def _detach_from_command() -> None:
    """In a forked helper: nothing of the command's output, listeners or waits."""
    from ltrboost import _numba

    # the command's SIGTERM handler (cli._signals_as_interrupt) is not the helper's:
    # terminate() ends it at once, as a spawned helper; so does a closed terminal's
    # SIGHUP (unless it was ignored: nohup)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "SIGHUP") and callable(signal.getsignal(signal.SIGHUP)):
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    os.environ[ENV_SWITCH] = "0"
    _numba._monitor.listeners.clear()
    _numba.set_cache_waiter(None)


class BackgroundCompile:
    """Compile listener of the CLI: start the helper process for ``profile`` when
    entered on a cold cache, else at the first compilation (see the module docstring);
    terminate it when closed."""

    def __init__(self, profile: str | None) -> None:
        self.profile = profile
        self.process: subprocess.Popen | _ForkedHelper | None = None
        self._started = False
        self._changed = threading.Condition()
        self._busy: str | None = None  # the kernel the helper is compiling now
        self._seen: set[str] = set()  # kernels the helper has started
        self._listening = False

    def __enter__(self) -> BackgroundCompile:
        if self.profile is not None and self._enabled():
            from ltrboost._numba import add_compile_listener

            add_compile_listener(self)
            self._listening = True
            if _first_kernel_uncached(self.profile):
                self._start(None)
        return self

    def __exit__(self, *exc: Any) -> None:
        # Nothing is imported here: an interrupt (Ctrl-C, SIGTERM) that landed in the
        # command's import of Numba left it half-imported, and importing it again to
        # clean up failed (an AttributeError traceback in place of the interrupt's line)
        if self._listening:
            from ltrboost._numba import remove_compile_listener

            remove_compile_listener(self)
            self._listening = False
        self.close()

    def _enabled(self) -> bool:
        if _switch() == "off":
            return False
        try:
            return self.profile in load_manifest()
        except (OSError, ValueError):
            return False

    def compile_started(self, name: str) -> None:
        if self._started:
            self._tell(name)
            return
        self._start(name)

    def _start(self, name: str | None) -> None:
        """Start the helper (once): at the command's start when the cache is cold
        (:func:`_first_kernel_uncached`), else at its first compilation, ``name``."""
        self._started = True
        from ltrboost import _numba

        if _numba._warned_uncached or _numba._UNCACHED_REASON is not None:  # nothing to share
            return
        if _switch() == "auto" and not _core_to_spare():
            return
        assert self.profile is not None
        if name is None and _can_fork():
            self.process = _ForkedHelper.start(self.profile)
        else:
            self.process = self._spawn()
        if self.process is None:
            return
        atexit.register(self.close)
        if name is not None:
            self._tell(name)
        threading.Thread(target=self._listen, args=(self.process.stdout,), daemon=True).start()
        _numba.set_cache_waiter(self.wait_for)

    def _spawn(self) -> subprocess.Popen | None:
        """``python -m ltrboost._warmup PROFILE --background`` as a new process."""
        import ltrboost

        env = dict(os.environ)
        env[ENV_SWITCH] = "0"
        # the helper must import this very package (and so share its kernel cache)
        root = os.path.dirname(os.path.dirname(os.path.abspath(ltrboost.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (root, env.get("PYTHONPATH", "")) if p
        )  # fmt: skip
        assert self.profile is not None
        cmd = [sys.executable, "-m", "ltrboost._warmup", self.profile, "--background"]
        cmd += ["--parent", str(os.getpid())]
        try:
            return subprocess.Popen(
                cmd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            return None

    def _listen(self, stream: Any) -> None:
        """Follow the helper's "start NAME" / "end NAME" lines (until it exits); then
        close the pipe (left open, ``python -W always`` reported it at exit)."""
        with stream:
            for line in stream:
                what, _, name = line.decode(errors="replace").strip().partition(" ")
                with self._changed:
                    if what == "start":
                        self._busy = name
                        self._seen.add(name)
                    elif what == "end" and self._busy == name:
                        self._busy = None
                    self._changed.notify_all()
        with self._changed:
            self._busy = None
            self._changed.notify_all()

    def wait_for(self, name: str) -> bool:
        """The cache lookup of kernel ``name`` missed: while the helper compiles it,
        wait; True when the helper has worked on it (look in the cache again)."""
        from ltrboost._numba import waiting_for

        with self._changed:
            busy = self._busy == name
        if busy:
            with waiting_for(name), self._changed:
                self._changed.wait_for(lambda: self._busy != name, timeout=WAIT_S)
        with self._changed:
            return name in self._seen

    def _tell(self, name: str) -> None:
        """Tell the helper which kernel this process compiles (it will not start it)."""
        process = self.process
        if process is None or process.stdin is None:
            return
        try:
            process.stdin.write(name.encode() + b"\n")
            process.stdin.flush()
        except (OSError, ValueError):  # the helper has finished
            pass

    def compile_finished(self, name: str, seconds: float) -> None:
        pass

    def close(self) -> None:
        # registered by _start: a process that runs many commands (ltrboost.cli.main
        # called again and again on a cold cache) gathered one handler per command
        atexit.unregister(self.close)
        _numba = sys.modules.get("ltrboost._numba")  # not imported: no waiter was set
        if _numba is not None and _numba._cache_waiter == self.wait_for:
            _numba.set_cache_waiter(None)
        if self.process is not None and self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(timeout=2.0)


# ------------------------------------------------------------------ recording
_RECORD_ARGS = (
    "--n-estimators 3 --learning-rate 0.1 --max-leaf-nodes 31 --early-stopping-rounds 30 "
    "--metric ndcg@10 --quiet"
)


def _record_one(command: list[str]) -> list[list[str]]:
    """Run one CLI command in this process; the outermost ltrboost kernel compilations,
    in order, as manifest entries."""

    from numba.core import event

    from ltrboost.cli import main

    rows: list[list[str]] = []
    local = threading.local()

    class Recorder(event.Listener):
        def on_start(self, ev: Any) -> None:
            local.depth = getattr(local, "depth", 0) + 1
            fn = ev.data["dispatcher"].py_func
            if local.depth == 1 and fn.__module__.startswith("ltrboost"):
                rows.append([fn.__module__, fn.__name__, repr(tuple(ev.data["args"]))])

        def on_end(self, ev: Any) -> None:
            local.depth -= 1

    recorder = Recorder()
    event.register("numba:compile", recorder)
    try:
        if main(command):
            raise RuntimeError(f"ltrboost {' '.join(command)} failed")
    finally:
        event.unregister("numba:compile", recorder)
    return rows


def _record_child(profile: str, folder: str, out: str) -> None:
    """One profile, recorded in a process whose kernel cache is empty."""
    data = os.path.join(folder, "data")
    test = os.path.join(data, "test.txt")
    if profile.startswith("train:"):
        model = os.path.join(folder, "model-" + profile.replace(":", "-") + ".json")
        objective, *suffixes = profile.split(":", 1)[1].split("+")
        extra = ["--split-criterion", "ole"] if "ole" in suffixes else []
        extra += [flag for mode in suffixes for flag in MODE_FLAGS.get(mode, ())]
        rows = _record_one([
            "train", os.path.join(data, "train.txt"), "--valid", os.path.join(data, "vali.txt"),
            "--output", model, *_RECORD_ARGS.split(), "--objective", objective, *extra,
        ])  # fmt: skip
        later = _record_one(["eval", model, test])  # kernels README's next command needs
        rows += later
    elif profile in ("eval", "predict"):  # the model was trained by another process
        later = []
        model = os.path.join(folder, "model.json")
        if profile == "eval":
            rows = _record_one(["eval", model, test])
        else:
            rows = _record_one(["predict", model, test, "--output", model + ".txt"])
    else:  # record() refuses it first: not recorded as another command under its name
        raise ValueError(f"cannot record profile {profile!r}")
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"rows": rows, "later": len(later)}, f)


def recordable_profiles() -> list[str]:
    """The profiles ``--record`` records, in its order: ``train:OBJECTIVE`` for every
    objective, ``train:OBJECTIVE+ole`` for :data:`OLE_PROFILE_OBJECTIVES`, the modes' on
    :data:`MODE_REFERENCE` (:data:`MODE_PROFILES`; the other objectives' are derived when
    read, :func:`_add_mode_profiles`), ``eval`` and ``predict``."""
    from ltrboost.objectives.registry import available_objectives

    objectives = available_objectives()
    profiles = [f"train:{o}" for o in objectives]
    profiles += [f"train:{o}+ole" for o in objectives if o in OLE_PROFILE_OBJECTIVES]
    return [*profiles, *MODE_PROFILES, "eval", "predict"]


def _unrecordable(profile: str) -> str | None:
    """Why ``--record`` cannot record ``profile`` (None: it can)."""
    known = recordable_profiles()
    if profile in known:
        return None
    objective = profile.removeprefix("train:").partition("+")[0]
    if profile.startswith("train:") and f"train:{objective}" in known:
        modes = [
            command_profile("train", objective, criterion, quantized, noise)
            for criterion in (None, "ole") for quantized in (0, 1) for noise in (0, 1)
        ]  # fmt: skip
        if profile in modes:  # a valid train profile, not recorded: a derived one
            return (
                "derived when the manifest is read from the profiles recorded with "
                f"the mode on {MODE_REFERENCE} ({', '.join(MODE_PROFILES)}): record those"
            )
    return f"unknown profile; recordable: {', '.join(known)}"


def _record_setup(tmp: str) -> None:
    """The data (``ltrboost generate``) and, trained in its own process and cache, the
    model that :func:`_record_child` records ``eval`` and ``predict`` on."""
    from ltrboost.cli import main as cli_main

    data = os.path.join(tmp, "data")
    cli_main(["generate", data, "--n-queries", "30"])
    model = ["train", os.path.join(data, "train.txt"), "--output"]
    model += [os.path.join(tmp, "model.json"), "--n-estimators", "3", "--quiet"]
    _record_run(f"from ltrboost.cli import main; main({model!r})", tmp, "cache-model")


def _record_run(code: str, tmp: str, cache: str) -> None:
    """``python -c code`` with an empty kernel cache of its own and no helper."""
    env = {**os.environ, "NUMBA_CACHE_DIR": os.path.join(tmp, cache), ENV_SWITCH: "0"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True)
    if done.returncode:
        raise RuntimeError(f"recording failed:\n{done.stderr.decode(errors='replace')}")


def _record_profile(profile: str, tmp: str) -> tuple[list[list[str]], int]:
    """One profile recorded in a fresh process (:func:`_record_child`): its entries and
    how many of the last are the next command's (``later``)."""
    out = os.path.join(tmp, "rows.json")
    code = "from ltrboost._warmup import _record_child; "
    code += f"_record_child({profile!r}, {tmp!r}, {out!r})"
    _record_run(code, tmp, "cache-" + profile.replace(":", "-"))
    with open(out, encoding="utf-8") as f:
        recorded = json.load(f)
    return recorded["rows"], int(recorded["later"])


def record(profiles: list[str] | None = None, path: str = MANIFEST) -> dict:
    """Re-record the manifest at ``path``: each profile in a fresh process with an empty
    cache.  ``profiles``: only these (:func:`recordable_profiles`), each put in its place
    in the manifest as it is (a new one last), every other profile kept as it was; None:
    all of them, in a new manifest."""
    import tempfile

    wanted = recordable_profiles() if profiles is None else list(profiles)
    for profile in wanted:
        why = _unrecordable(profile)
        if why is not None:
            raise ValueError(f"cannot record {profile!r}: {why}")
    doc: dict[str, Any] = {"profiles": {}, "later": {}}
    if profiles is not None:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    result: dict[str, list[list[str]]] = doc["profiles"]
    later: dict[str, int] = doc.setdefault("later", {})

    with tempfile.TemporaryDirectory() as tmp:
        _record_setup(tmp)
        for profile in wanted:
            t = time.perf_counter()
            result[profile], n_later = _record_profile(profile, tmp)
            later.pop(profile, None)
            if n_later:
                later[profile] = n_later
            print(
                f"{profile}: {len(result[profile])} kernels, {time.perf_counter() - t:.1f} s",
                file=sys.stderr,
            )
    import numba
    import numpy

    doc = {
        "about": "kernels each CLI command compiles on a first run, in order; written by "
        "`python -m ltrboost._warmup --record` (see ltrboost/_warmup.py); the +quantized "
        "and +noise profiles of objectives other than lambdamart are derived when read",
        "numba": numba.__version__,
        "numpy": numpy.__version__,
        "profiles": result,
        # per train profile: its last entries are README's next command's (eval)
        "later": later,
    }
    tmp_path = path + ".tmp"
    with open(tmp_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp_path, path)
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m ltrboost._warmup",
        description="Compile the kernels of a CLI command into the kernel cache.",
    )
    ap.add_argument("profiles", nargs="*", help="e.g. train:lambdamart, eval, predict")
    ap.add_argument("--background", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--parent", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument(
        "--record",
        action="store_true",
        help="re-record the manifest: the profiles given (the others are kept), else all",
    )
    args = ap.parse_args(argv)
    if args.record:
        for profile in args.profiles:
            why = _unrecordable(profile)
            if why is not None:
                ap.error(f"cannot record {profile!r}: {why}")
        record(args.profiles or None)
        return 0
    if args.background:
        return _run_background(args.profiles, args.parent, sys.stdin.buffer, sys.stdout.buffer)
    known = load_manifest()
    for profile in args.profiles:
        if profile not in known:  # was a KeyError traceback
            ap.error(f"unknown profile {profile!r}; known: {', '.join(sorted(known))}")
    for profile in args.profiles:
        counts = compile_profile(profile)
        print(f"{profile}: {counts}", file=sys.stderr)
    return 0


def _run_background(profiles: list[str], parent: int, inp: Any, out: Any) -> int:
    """The helper's work (spawned or forked): ``inp`` (binary) names each kernel the
    command starts compiling, one a line; "start NAME" / "end NAME" lines go to ``out``."""
    taken: set[str] = set()

    def listen() -> None:
        for line in inp:
            taken.add(line.decode(errors="replace").strip())

    threading.Thread(target=listen, daemon=True).start()

    def report(what: str, name: str) -> None:  # to the command's BackgroundCompile
        with contextlib.suppress(OSError, ValueError):
            out.write(f"{what} {name}\n".encode())
            out.flush()

    for profile in profiles:
        compile_profile(
            profile, reverse=True, stop_when_met=True, parent=parent, taken=taken, report=report
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

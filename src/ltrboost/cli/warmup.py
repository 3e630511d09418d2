"""``ltrboost warmup``: compile the kernels of commands into the kernel cache now, or
(``--clear``) remove this install's compiled kernels."""

from __future__ import annotations

import argparse
import os
import sys

from ltrboost.cli._common import _count

# warmup's profiles when none is given: README's first commands.
_WARMUP_DEFAULT = ("train:lambdamart", "eval", "predict")


def cmd_warmup(args: argparse.Namespace) -> int:
    """Compile (or load) the kernels of each profile of :mod:`ltrboost._warmup`; with
    ``--clear``, remove the compiled kernels instead."""
    import time

    if args.clear:
        return _clear_kernel_cache(args)
    from ltrboost._numba import cache_location
    from ltrboost._warmup import compile_profile, profile_names

    known = profile_names()
    args.profiles = args.profiles or list(_WARMUP_DEFAULT)
    for name in args.profiles:  # beside 'all' too: a typo is never skipped silently
        if name != "all" and name not in known:
            raise ValueError(f"unknown profile {name!r}; known: {_known_profiles(known)}")
    profiles = known if "all" in args.profiles else args.profiles
    for name in profiles:
        t = time.perf_counter()
        counts = compile_profile(name)
        print(
            f"{name}: {counts['compiled']} compiled, {counts['loaded']} already cached, "
            f"{counts['skipped']} skipped ({time.perf_counter() - t:.1f} s)",
            file=sys.stderr,
        )
    from ltrboost import _numba

    problem = _numba.cache_problem()
    if problem is not None:  # compiled for nothing: a container image built cold
        raise OSError(
            f"the kernels were compiled but {problem}; point NUMBA_CACHE_DIR "
            "(or XDG_CACHE_HOME) at a writable folder"
        )
    where = cache_location()
    if _numba._UNCACHED_REASON is not None:  # every kernel was loaded (else: problem)
        where = "no writable folder"
    passed_over = _numba._UNUSABLE_NUMBA_CACHE_DIR
    prewarmed = _numba._PREWARMED_USED
    if passed_over is not None and passed_over not in prewarmed:
        where += f" (NUMBA_CACHE_DIR={passed_over} is not writable: passed over)"
    if prewarmed:  # a read-only image prewarmed when it was built
        where = f"{', '.join(prewarmed)} (read-only, prewarmed); new kernels: {where}"
    print(f"kernel cache: {where}", file=sys.stderr)
    return 0


def _known_profiles(known: list[str]) -> str:
    """The profiles for an error line: the mode profiles (``+quantized``, ``+noise``:
    one for nearly every train profile) as suffixes, not by name."""
    from ltrboost._warmup import MODE_FLAGS

    plain = [p for p in known if not set(p.split("+")[1:]) & set(MODE_FLAGS)]
    return (
        f"all, {', '.join(plain)}; a train profile also with +quantized "
        f"({MODE_FLAGS['quantized'][0]}; not after +ole) and/or +noise "
        f"({MODE_FLAGS['noise'][0]}), in that order"
    )


def _clear_kernel_cache(args: argparse.Namespace) -> int:
    """``ltrboost warmup --clear``: :func:`ltrboost._numba.clear_kernel_cache`, and one
    line saying what was removed from where."""
    if args.profiles:  # "--clear all" read as "clear all" compiled nothing
        raise ValueError(
            f"--clear removes compiled kernels and compiles nothing: give no profile "
            f"({' '.join(args.profiles)}); run `ltrboost warmup PROFILE` afterwards"
        )
    from ltrboost._numba import clear_kernel_cache

    removed, n_bytes, failed = clear_kernel_cache()
    if failed:
        path, why = failed[0]
        raise OSError(
            f"could not remove {_count(len(failed), 'kernel cache file')} "
            f"(e.g. {path}: {why}); {_count(len(removed), 'file')} removed"
        )
    if not removed:
        print("no kernel cache files of this install to remove", file=sys.stderr)
        return 0
    folders = sorted({os.path.dirname(p) for p in removed})
    print(
        f"removed {_count(len(removed), 'kernel cache file')} ({n_bytes / 2**20:.1f} MiB) "
        f"from {', '.join(folders)}",
        file=sys.stderr,
    )
    return 0

"""Adversarial pass on the kernel cache (advcache5): a cache that cannot be written
where Numba meant to write it never stops a command, and what the user is told about
the cache (the compile notice, ``ltrboost warmup``) is true.

Cold starts run in subprocesses with ``NUMBA_CACHE_DIR`` pointed at fresh tmp folders
and one small kernel module, as in test_cache_recovery.py.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

MODULE = """
from ltrboost._numba import kernel

@kernel
def plus_one(x):
    return x + 1

@kernel
def plus_two(x):
    return x + 2
"""

CALL = """
import cached_mod
from ltrboost._numba import cache_note
print(cached_mod.plus_one(41), cached_mod.plus_two(40))
print(cache_note())
"""

# a full disk: Numba's write of a cache data file fails with ENOSPC
FULL_DISK = """
import errno
from numba.core import caching

def _save_data(self, name, data):
    raise OSError(errno.ENOSPC, "No space left on device")

caching.IndexDataCacheFile._save_data = _save_data
"""


def _module(tmp_path: Path) -> Path:
    mod_dir = tmp_path / "mod"
    mod_dir.mkdir()
    (mod_dir / "cached_mod.py").write_text(MODULE)
    return mod_dir


def _run(code: str, cache: Path, mod_dir: Path, **env: str) -> subprocess.CompletedProcess:
    full_env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(cache),
        "PYTHONPATH": os.pathsep.join([str(mod_dir), str(SRC)]),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_full_disk_does_not_stop_the_run(tmp_path):
    """A full disk (or any failed write) under the cache folder raised from inside
    Numba's dispatcher: `ltrboost train` ended with `error: [Errno 28] No space left on
    device` after compiling, no model written, and the folder was not named."""
    mod_dir = _module(tmp_path)
    cache = tmp_path / "cache"
    out = _run(FULL_DISK + CALL, cache, mod_dir)
    assert out.returncode == 0, out.stderr
    result, note = out.stdout.strip().splitlines()
    assert result == "42 42"
    warned = [line for line in out.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warned) == 1, out.stderr  # one warning, not one per kernel
    assert "No space left on device" in warned[0]
    assert str(cache) in warned[0]
    # the compile notice does not claim "cached in" a folder it could not write
    assert note.startswith("not cached"), note
    assert "No space left on device" in note


def test_a_numba_fallback_folder_is_named(tmp_path):
    """Where Numba cannot use the folder ltrboost chose for a module's kernels (a
    sub-folder made by another user, or a file in its place), it silently caches them
    elsewhere (the module's own __pycache__, ~/.cache/numba); the compile notice still
    said "cached in NUMBA_CACHE_DIR"."""
    mod_dir = _module(tmp_path)
    cache = tmp_path / "cache"
    first = _run(CALL, cache, mod_dir)
    assert first.returncode == 0, first.stderr
    (sub,) = cache.iterdir()  # Numba's sub-folder for the module
    for f in sub.iterdir():
        f.unlink()
    sub.rmdir()
    sub.write_text("not a folder")
    out = _run(CALL, cache, mod_dir)
    assert out.returncode == 0, out.stderr
    result, note = out.stdout.strip().splitlines()
    assert result == "42 42"
    fallback = mod_dir / "__pycache__"
    assert list(fallback.glob("*plus_one*.nbi"))  # where Numba put them
    assert str(fallback) in note, note
    assert str(sub) in note, note
    warned = [line for line in out.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warned) == 1, out.stderr
    assert str(sub) in warned[0]
    assert str(fallback) in warned[0]


def test_no_writable_folder_names_the_folder_and_why(tmp_path):
    """The "no writable folder" warning gave Numba's words ("cannot cache function
    '_mul_64x64': no locator available for file '.../letor.py'"), naming no folder.
    Running as root, permissions cannot be tested: each folder is under a file."""
    mod_dir = _module(tmp_path)
    (mod_dir / "__pycache__").write_text("x")  # the module's folder: not writable
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    home = str(blocker / "home")  # ~/.cache/numba, Numba's last resort
    out = _run(CALL, blocker / "cache", mod_dir, HOME=home, XDG_CACHE_HOME=home)
    assert out.returncode == 0, out.stderr
    warned = [line for line in out.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warned) == 1, out.stderr
    assert "no writable folder for the kernel cache" in warned[0]
    assert "no locator available" not in warned[0]
    assert f"{mod_dir / '__pycache__'}: File exists" in warned[0]
    assert out.stdout.strip().splitlines()[-1].startswith("not cached")


def test_a_passed_over_numba_cache_dir_is_no_fallback(tmp_path):
    """An unwritable NUMBA_CACHE_DIR passed over for the module's own folder is the
    documented choice (2.), not a Numba fallback to warn about."""
    mod_dir = _module(tmp_path)
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    out = _run(CALL, blocker / "cache", mod_dir)
    assert out.returncode == 0, out.stderr
    assert "RuntimeWarning" not in out.stderr, out.stderr
    assert "is not writable" in out.stdout  # the passed-over NUMBA_CACHE_DIR, as before


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path):
    """XDG_CACHE_HOME=relcache made the cache follow the working directory (a new
    cold cache in every folder a command ran from); the XDG spec says a relative path
    is invalid and must be ignored."""
    from ltrboost._numba import user_cache_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relcache")
    assert user_cache_dir() == os.path.join(str(tmp_path), ".cache", "ltrboost", "numba")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == os.path.join(str(tmp_path / "xdg"), "ltrboost", "numba")


def _warmup_with(monkeypatch, capsys, **state):
    from ltrboost import _numba, _warmup
    from ltrboost.cli import main

    monkeypatch.setattr(
        _warmup, "compile_profile", lambda name: {"compiled": 2, "loaded": 0, "skipped": 0}
    )
    for name, value in state.items():
        monkeypatch.setattr(_numba, name, value)
    rc = main(["warmup", "predict"])
    return rc, capsys.readouterr().err


def test_warmup_without_a_writable_cache_fails(monkeypatch, capsys):
    """`ltrboost warmup` (README: run it when a container image is built) with no
    writable folder compiled every kernel, kept none, said `kernel cache: FOLDER` (a
    folder it could not write) and exited 0: the image was built with a cold cache."""
    rc, err = _warmup_with(monkeypatch, capsys, _warned_uncached=True)
    assert rc == 2, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("ltrboost: error: "), last
    assert "not cached" in last
    assert "NUMBA_CACHE_DIR" in last


def test_warmup_on_a_full_disk_fails(monkeypatch, capsys):
    rc, err = _warmup_with(
        monkeypatch, capsys, _CACHE_WRITE_ERROR="/c/io_x: No space left on device"
    )
    assert rc == 2, err
    last = err.strip().splitlines()[-1]
    assert "/c/io_x: No space left on device" in last, last


def test_cli_warning_has_one_prefix(capsys):
    """`ltrboost: warning: ltrboost: no writable folder ...`: the CLI's warning prefix
    in front of the library's own."""
    from ltrboost.cli._common import _show_warning

    _show_warning(RuntimeWarning("ltrboost: no writable folder"), RuntimeWarning, "f", 1)
    assert capsys.readouterr().err == "ltrboost: warning: no writable folder\n"


def test_helper_output_pipe_is_closed_when_the_helper_ends():
    """The helper's stdout pipe was never closed: `python -W always -m ltrboost train`
    ended with `ResourceWarning: unclosed file <_io.BufferedReader name=5>`."""
    from ltrboost._warmup import BackgroundCompile

    stream = io.BytesIO(b"start k1\nend k1\n")
    BackgroundCompile("predict")._listen(stream)
    assert stream.closed

"""Adversarial pass on the kernel cache (roncache): a *prewarmed but read-only* cache.

A container image runs ``ltrboost warmup`` when it is built, then runs with a read-only
root file system or as another user.  Numba's cache locators refuse a folder they
cannot write to, so every process compiled again (tens of seconds) although the compiled
kernels were right there.  Now kernels found in a read-only folder that comes before the
folder being written (README's order) are loaded; only what is missing compiles.

Cold starts run in subprocesses.  Root ignores permissions, so as root the folders are
made read-only by read-only bind mounts in a private mount namespace (``unshare -m``);
otherwise by ``chmod a-w``.  Where neither is possible the tests are skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

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

# argv[1]: which kernels to call ("12": both); prints results, then JSON facts
CALL = """
import json, sys
import cached_mod
from ltrboost import _numba
out = []
if "1" in sys.argv[1]:
    out.append(cached_mod.plus_one(41))
if "2" in sys.argv[1]:
    out.append(cached_mod.plus_two(40))
# (compile_stats counts ltrboost's own kernels only: Numba's cache misses here)
misses = sum(sum(f.stats.cache_misses.values()) for f in (cached_mod.plus_one, cached_mod.plus_two))
print(json.dumps({"out": out, "compiled": misses,
                  "note": _numba.cache_note(), "problem": _numba.cache_problem()}))
"""


def _module(tmp_path: Path, source: str = MODULE) -> Path:
    mod_dir = tmp_path / "mod"
    mod_dir.mkdir(exist_ok=True)
    (mod_dir / "cached_mod.py").write_text(source)
    return mod_dir


def _read_only(folders: list[Path]):
    """``run(cmd, **kw)`` running ``cmd`` with ``folders`` read-only, or None."""
    if os.geteuid() != 0:

        def run_chmod(cmd, **kw):
            modes = {}
            for folder in folders:
                for d, _, files in os.walk(folder):
                    for p in [d, *(os.path.join(d, f) for f in files)]:
                        modes[p] = os.stat(p).st_mode
                        os.chmod(p, modes[p] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
            try:
                return subprocess.run(cmd, **kw)
            finally:
                for p, mode in modes.items():
                    os.chmod(p, mode)

        return run_chmod
    if shutil.which("unshare") is None:
        return None
    mounts = " && ".join(f'mount --bind -o ro "${i}" "${i}"' for i in range(len(folders)))
    shift = len(folders) - 1  # sh -c: the first folder is $0

    def run_unshare(cmd, **kw):
        script = f'{mounts} && shift {shift} && exec "$@"'
        args = [str(f) for f in folders]
        return subprocess.run(["unshare", "-m", "sh", "-c", script, args[0], *args[1:], *cmd], **kw)

    probe_dir = folders[0]
    probe = run_unshare(["touch", str(probe_dir / "probe")], capture_output=True)
    if probe.returncode == 0 or (probe_dir / "probe").exists():
        return None
    return run_unshare


def _env(mod_dir: Path, **env: str) -> dict:
    full = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    full.update(PYTHONPATH=os.pathsep.join([str(mod_dir), str(SRC)]), **env)
    return full


def _call(run, which: str, env: dict) -> tuple[dict, str]:
    proc = run(
        [sys.executable, "-W", "always", "-c", CALL, which],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def _nbi(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*.nbi")) if folder.exists() else []


def _runner(folders: list[Path]):
    for f in folders:
        f.mkdir(parents=True, exist_ok=True)
    run = _read_only(folders)
    if run is None:
        pytest.skip("cannot make a read-only folder here (root without unshare)")
    return run


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "Warning" in line]


def test_a_read_only_numba_cache_dir_is_loaded_and_only_the_rest_compiles(tmp_path):
    """NUMBA_CACHE_DIR prewarmed (plus_one only), then read-only: it was passed over
    and both kernels compiled again into the module's __pycache__.  Now plus_one loads
    from it; plus_two compiles once, into the writable folder, and loads next time."""
    mod_dir = _module(tmp_path)
    cache = tmp_path / "cache"
    env = _env(mod_dir, NUMBA_CACHE_DIR=str(cache))
    warm, _ = _call(subprocess.run, "1", env)
    assert warm["compiled"] == 1
    run = _runner([cache])
    first, err = _call(run, "12", env)
    assert first["out"] == [42, 42]
    assert first["compiled"] == 1, first  # plus_two only: plus_one was loaded
    assert _warnings(err) == [], err
    assert str(cache) in first["note"], first["note"]  # the passed-over folder is named
    assert [n for n in _nbi(mod_dir / "__pycache__") if "plus_one" in n] == []
    assert [n for n in _nbi(mod_dir / "__pycache__") if "plus_two" in n]
    again, err = _call(run, "12", env)
    assert again["compiled"] == 0, again
    assert _warnings(err) == [], err


def test_nothing_writable_loads_the_prewarmed_kernels_without_a_warning(tmp_path):
    """The module's __pycache__ prewarmed, then read-only with no other writable
    folder (a read-only root file system): every process compiled every kernel, with a
    "no writable folder" warning at import.  Now the kernels load, nothing is said; a
    kernel that was not prewarmed compiles in memory with the one warning."""
    mod_dir = _module(tmp_path)
    home = tmp_path / "home"  # ~/.cache/numba and XDG_CACHE_HOME: read-only too
    env = _env(mod_dir, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    warm, _ = _call(subprocess.run, "1", env)
    assert warm["compiled"] == 1
    assert _nbi(mod_dir / "__pycache__")
    run = _runner([mod_dir, home])
    loaded, err = _call(run, "1", env)
    assert loaded == {**loaded, "out": [42], "compiled": 0, "problem": None}
    assert _warnings(err) == [], err
    both, err = _call(run, "12", env)
    assert both["out"] == [42, 42]
    assert both["compiled"] == 1, both
    warned = _warnings(err)
    assert len(warned) == 1, err
    assert "no writable folder for the kernel cache" in warned[0], err
    assert both["note"].startswith("not cached"), both
    assert both["problem"] is not None


def test_a_changed_source_is_not_loaded_from_a_read_only_cache(tmp_path):
    """Numba's own check stays: kernels of an older source are not loaded."""
    mod_dir = _module(tmp_path)
    cache = tmp_path / "cache"
    env = _env(mod_dir, NUMBA_CACHE_DIR=str(cache))
    _call(subprocess.run, "12", env)
    _module(tmp_path, MODULE.replace("x + 1", "x + 100"))
    run = _runner([cache])
    changed, _ = _call(run, "12", env)
    assert changed["out"] == [141, 42]
    assert changed["compiled"] == 2, changed


def test_a_prewarmed_read_only_install_compiles_nothing(tmp_path):
    """README's image recipe: `ltrboost warmup` at build time into the package's
    __pycache__, then the install read-only.  Every process compiled again (into the
    user folder, or in memory with a warning when that was read-only too)."""
    site = tmp_path / "site"
    shutil.copytree(
        SRC / "ltrboost",
        site / "ltrboost",
        ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"),
    )
    xdg = tmp_path / "xdg"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=str(site), XDG_CACHE_HOME=str(xdg), HOME=str(xdg), NUMBA_NUM_THREADS="1")
    env["LTRBOOST_BACKGROUND_COMPILE"] = "0"
    build = subprocess.run(
        [sys.executable, "-m", "ltrboost", "warmup", "predict"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    code = (
        "import json, sys, runpy\n"
        "from ltrboost import _numba\n"
        "sys.argv = ['ltrboost', 'warmup', 'predict']\n"
        "try:\n"
        "    runpy.run_module('ltrboost', run_name='__main__')\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print(json.dumps(_numba.compile_stats()['kernels']))\n"
    )
    for read_only in ([site], [site, xdg]):  # a writable user folder, then none
        run = _runner(read_only)
        proc = run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip().splitlines()[-1] == "0", proc.stderr
        assert "predict: 0 compiled, 2 already cached" in proc.stderr, proc.stderr
        assert "warning" not in proc.stderr.lower(), proc.stderr
        assert str(site / "ltrboost") in proc.stderr.strip().splitlines()[-1], proc.stderr
        assert _nbi(xdg) == []

"""The kernel cache only saves time: a damaged entry is compiled again (stop 29), and an
unwritable NUMBA_CACHE_DIR is named, not silently replaced."""

from __future__ import annotations

import os
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
"""


def _run(code: str, cache: Path, mod_dir: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(cache),
        "PYTHONPATH": os.pathsep.join([str(mod_dir), str(SRC)]),
    }
    return subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


CALL = "import cached_mod; print(cached_mod.plus_one(41))"


@pytest.mark.parametrize("damage", ["truncate_data", "empty_index", "garbage_index"])
def test_a_damaged_cache_entry_is_compiled_again(damage, tmp_path):
    mod_dir = tmp_path / "mod"
    mod_dir.mkdir()
    (mod_dir / "cached_mod.py").write_text(MODULE)
    cache = tmp_path / "cache"
    first = _run(CALL, cache, mod_dir)
    assert first.stdout.strip() == "42", first.stderr
    (nbi,) = cache.rglob("*plus_one*.nbi")
    (nbc,) = cache.rglob("*plus_one*.nbc")
    if damage == "truncate_data":
        nbc.write_bytes(nbc.read_bytes()[:20])
    elif damage == "empty_index":
        nbi.write_bytes(b"")
    else:
        nbi.write_bytes(b"\x00garbage" * 10)
    second = _run(CALL, cache, mod_dir)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "42"
    assert "cache entry of plus_one could not be read" in second.stderr
    third = _run(CALL, cache, mod_dir)  # repaired: loads quietly
    assert third.stdout.strip() == "42"
    assert "could not be read" not in third.stderr


def test_an_unwritable_numba_cache_dir_is_named(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    code = "from ltrboost._numba import cache_note; print(cache_note())"
    out = _run(code, blocker / "cache", tmp_path)
    assert out.returncode == 0, out.stderr
    assert f"NUMBA_CACHE_DIR={blocker / 'cache'} is not writable" in out.stdout
    assert "cached in" in out.stdout

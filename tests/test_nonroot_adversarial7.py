"""Adversarial pass as a normal user (nonroot): the promises about unwritable outputs,
unreadable inputs and read-only kernel caches, checked by a process that file
permissions apply to.

Root ignores file permissions, so most of these were never exercised: each test runs
``ltrboost`` in a subprocess that drops privileges to the user ``nobody`` (``setgid`` /
``setuid`` before ``exec``).  That needs a root test process on Linux, a ``nobody``
user, and a Python interpreter that user may run with this checkout and its NumPy /
Numba importable (``sys.executable``, or the system's ``pythonX.Y`` of the same
version with this environment's ``site-packages`` on ``PYTHONPATH``, for a virtual
environment under a private home).  Otherwise the tests that need it are skipped.

Files the user may read live in a folder made under the system's temporary folder
(pytest's ``tmp_path`` is private to root).  No test compiles ltrboost's kernels as the
user: the output checks come before any data is read, and the cache tests use a small
kernel module of their own, as tests/test_roncache_adversarial6.py does.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
MODEL = Path(__file__).resolve().parent / "data" / "compat" / "2b5b036_lambdamart_es.json"
TIMEOUT = 120

# a LETOR file whose first line is an error: an output error must come before it
BAD_DATA = "oops qid:1 1:0.5\n"
GOOD_DATA = "".join(
    f"{(q + d) % 3} qid:{q} 1:{d / 10} 2:{q / 7} 3:{(q * d) % 5} 4:{d}\n"
    for q in range(1, 5)
    for d in range(6)
)


def _site_dirs() -> list[str]:
    return [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]


def _drop_to(uid: int, gid: int, groups: tuple[int, ...] = ()):
    def preexec() -> None:
        os.setgroups(list(groups))
        os.setgid(gid)
        os.setuid(uid)

    return preexec


@functools.cache
def _user() -> tuple[int, int, str] | str:
    """``(uid, gid, python)`` for running ltrboost as ``nobody``, or why not."""
    if not sys.platform.startswith("linux"):
        return "needs Linux"
    if os.geteuid() != 0:
        return "needs a root test process to drop privileges"
    try:
        pw = pwd.getpwnam("nobody")
    except KeyError:
        return "no user 'nobody'"
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    candidates = [sys.executable, f"/usr/bin/python{version}", shutil.which(f"python{version}")]
    env = _base_env(Path(tempfile.gettempdir()))
    for exe in dict.fromkeys(c for c in candidates if c):
        try:
            done = subprocess.run(
                [exe, "-c", "import numba, numpy, ltrboost.cli"],
                env=env,
                cwd="/",
                capture_output=True,
                timeout=TIMEOUT,
                preexec_fn=_drop_to(pw.pw_uid, pw.pw_gid),
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return pw.pw_uid, pw.pw_gid, exe
    return "no Python interpreter that 'nobody' may run imports this checkout"


def _user_or_skip() -> tuple[int, int, str]:
    user = _user()
    if isinstance(user, str):
        pytest.skip(user)
    return user


def _base_env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PYTHONPATH": os.pathsep.join([str(SRC), *_site_dirs()]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "LTRBOOST_BACKGROUND_COMPILE": "0",
        "OMP_WAIT_POLICY": "PASSIVE",
        "LC_ALL": "C.UTF-8",
    }
    env.update(extra)
    return env


@pytest.fixture
def shared(tmp_path):
    """A folder every user may read (mode 755, root's), removed afterwards; ``home``
    in it is the user's own (their HOME and XDG_CACHE_HOME)."""
    folder = Path(tempfile.mkdtemp(prefix="ltrboost-nonroot-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _user_folder(shared: Path, name: str, uid: int, gid: int) -> Path:
    folder = shared / name
    folder.mkdir()
    os.chown(folder, uid, gid)
    return folder


def _as_user(shared: Path, args: list[str], *, groups=(), src=SRC, **extra: str):
    uid, gid, exe = _user_or_skip()
    home = shared / "home"
    if not home.exists():
        home.mkdir()
        os.chown(home, uid, gid)
    env = _base_env(home, **extra)
    env["PYTHONPATH"] = env["PYTHONPATH"].replace(str(SRC), str(src), 1)
    return subprocess.run(
        [exe, "-m", "ltrboost", *args],
        env=env,
        cwd=str(home),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        preexec_fn=_drop_to(uid, gid, tuple(groups)),
    )


def _one_error(proc: subprocess.CompletedProcess, path: str) -> str:
    """The one ``ltrboost: error:`` line (exit status 2) naming ``path``."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("ltrboost: error: "), proc.stderr
    assert path in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def _root_file(path: Path, text: str, mode: int) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


# ------------------------------------------------------------ outputs (regressions)
@pytest.fixture
def files(shared):
    """A model, good data and an unreadable copy, a read-only folder (root's, 755), a
    folder of the user's with a read-only file of root's in it."""
    uid, gid, _ = _user_or_skip()
    model = shared / "model.json"
    shutil.copyfile(MODEL, model)
    model.chmod(0o644)
    data = _root_file(shared / "data.txt", GOOD_DATA, 0o644)
    secret = _root_file(shared / "secret.txt", GOOD_DATA, 0o600)
    ro = shared / "ro"
    ro.mkdir()
    ro.chmod(0o755)
    existing = _root_file(ro / "existing.txt", "keep\n", 0o644)
    mine = _user_folder(shared, "mine", uid, gid)
    theirs = _root_file(mine / "theirs.txt", "keep\n", 0o644)
    return {
        "model": str(model),
        "data": str(data),
        "secret": str(secret),
        "ro": ro,
        "existing": existing,
        "mine": mine,
        "theirs": theirs,
    }


N_CASES = 10


def _cases(f: dict) -> list[tuple[list[str], str]]:
    """(arguments, the path the error must name) for every refused output / input."""
    m, d, ro, mine = f["model"], f["data"], f["ro"], f["mine"]
    ex, th = str(f["existing"]), str(f["theirs"])
    new = str(ro / "new.txt")
    return [
        (["train", d, "-o", new, "--n-estimators", "1", "-q"], new),
        (["train", d, "-o", ex, "--n-estimators", "1", "-q"], ex),
        (["train", d, "-o", th, "--n-estimators", "1", "-q"], th),
        (["train", f["secret"], "-o", str(mine / "m.json"), "-q"], f["secret"]),
        (["train", d, "--valid", f["secret"], "-o", str(mine / "m.json"), "-q"], f["secret"]),
        (["predict", m, d, "-o", new, "-q"], new),
        (["predict", m, d, "-o", ex, "-q"], ex),
        (["predict", m, f["secret"], "-o", str(mine / "p.txt"), "-q"], f["secret"]),
        (["export", m, "--format", "lightgbm", "-o", new], new),
        (["export", m, "--format", "lightgbm", "-o", th], th),
    ]


@pytest.mark.parametrize("case", range(N_CASES))
def test_refused_outputs_and_inputs_are_one_error_line_and_change_nothing(case, files, shared):
    """Each refused output (an unwritable folder, a read-only file of another user) and
    unreadable input: one ``ltrboost: error:`` line naming the path, exit status 2, and
    every existing file as it was (no temporary file left beside it)."""
    before = {p: p.read_bytes() for p in (files["existing"], files["theirs"])}
    args, path = _cases(files)[case]
    proc = _as_user(shared, args)
    _one_error(proc, path)
    for p, data in before.items():
        assert p.read_bytes() == data
    assert sorted(os.listdir(files["ro"])) == ["existing.txt"]
    assert sorted(os.listdir(files["mine"])) == ["theirs.txt"]


def test_a_checkpoint_that_cannot_be_written_is_refused_before_training(files, shared):
    """OUTPUT.checkpoint a link into a folder the user cannot write: refused before any
    data is read (the data here is bad at line 1: its error would come first)."""
    mine = files["mine"]
    bad = _root_file(shared / "bad.txt", BAD_DATA, 0o644)
    link = mine / "m.json.checkpoint"
    os.symlink(files["ro"] / "ck", link)
    proc = _as_user(
        shared,
        ["train", str(bad), "-o", str(mine / "m.json"), "--checkpoint-every", "1", "--quiet"],
    )
    _one_error(proc, str(link))
    assert not (mine / "m.json").exists()


# ------------------------------------------- another user's file in a sticky folder
@pytest.fixture
def sticky(shared):
    """A world-writable folder with the sticky bit (as /tmp) holding a file of root's
    that everyone may write (mode 666): only its owner may rename over it, so the
    atomic replace fails although the file is writable."""
    folder = shared / "sticky"
    folder.mkdir()
    folder.chmod(0o1777)
    theirs = _root_file(folder / "shared.txt", "root's\n", 0o666)
    return folder, theirs


@pytest.mark.parametrize("command", ["train", "predict"])
def test_another_users_file_in_a_sticky_folder_is_refused_before_reading(command, sticky, shared):
    """Old: the output check passed (the file is writable), the data was read (and a
    model trained), and only the final rename failed: ``Operation not permitted``.  Now
    it is refused first, saying why; the file is untouched."""
    _user_or_skip()
    folder, theirs = sticky
    bad = _root_file(shared / "bad.txt", BAD_DATA, 0o644)
    model = shutil.copyfile(MODEL, shared / "model.json")
    args = {"train": ["train", str(bad)], "predict": ["predict", str(model), str(bad)]}[command]
    proc = _as_user(shared, [*args, "-o", str(theirs), "--quiet"])
    line = _one_error(proc, str(theirs))
    assert "another user" in line, line
    assert theirs.read_text() == "root's\n"
    assert sorted(os.listdir(folder)) == ["shared.txt"]


def test_a_checkpoint_of_another_user_in_a_sticky_folder_is_refused_before_training(sticky, shared):
    """Old: the first checkpoint, after a round of training, failed to replace it."""
    _user_or_skip()
    folder, _ = sticky
    bad = _root_file(shared / "bad.txt", BAD_DATA, 0o644)
    ck = _root_file(folder / "m.json.checkpoint", "old\n", 0o666)
    proc = _as_user(
        shared,
        ["train", str(bad), "-o", str(folder / "m.json"), "--checkpoint-every", "1", "--quiet"],
    )
    line = _one_error(proc, str(ck))
    assert "another user" in line, line
    assert ck.read_text() == "old\n"


def test_export_over_another_users_file_in_a_sticky_folder_says_why(sticky, shared):
    """Old: ``Operation not permitted (writing; the previous file is intact)``."""
    _user_or_skip()
    _, theirs = sticky
    model = shutil.copyfile(MODEL, shared / "model.json")
    proc = _as_user(shared, ["export", str(model), "--format", "lightgbm", "-o", str(theirs)])
    line = _one_error(proc, str(theirs))
    assert "another user" in line, line
    assert "sticky" in line, line
    assert theirs.read_text() == "root's\n"


def test_a_read_only_file_of_another_user_is_not_told_to_chmod(files, shared):
    """``chmod u+w`` is only possible for the file's owner: old advice for a file of
    root's was ``(chmod u+w to allow)``, which the user cannot do."""
    th = str(files["theirs"])
    proc = _as_user(shared, ["export", files["model"], "--format", "lightgbm", "-o", th])
    line = _one_error(proc, th)
    assert "chmod" not in line, line
    assert "another user" in line, line


# -------------------------------------------------- owner and group of a replaced file
def test_a_file_replaced_by_root_keeps_its_owner_and_group(tmp_path):
    """``sudo ltrboost train -o ~alice/model.json`` made alice's model root's (the new
    file is renamed over it): alice could no longer update or chmod it.  A replaced file
    now keeps its owner and group, as its mode, where the process may set them."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    from ltrboost.io._atomic import atomic_write_text

    target = tmp_path / "model.json"
    target.write_text("old")
    os.chown(target, 65534, 4242)
    target.chmod(0o640)
    atomic_write_text(target, "new")
    st = target.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 4242, 0o640)
    assert target.read_text() == "new"


def test_a_group_file_replaced_by_a_member_keeps_its_group(files, shared):
    """A group's shared model (root's, group 4242, mode 664, in a group folder) replaced
    by a member of the group: the new file was the member's, in their own primary group,
    and the rest of the group could no longer write it.  Its group is kept now (the
    owner cannot be: only root may give a file away)."""
    _user_or_skip()
    group = shared / "group"
    group.mkdir()
    os.chown(group, 0, 4242)
    group.chmod(0o775)
    shared_model = _root_file(group / "lgb.txt", "old\n", 0o664)
    os.chown(shared_model, 0, 4242)
    proc = _as_user(
        shared,
        ["export", files["model"], "--format", "lightgbm", "-o", str(shared_model)],
        groups=(4242,),
    )
    assert proc.returncode == 0, proc.stderr
    st = shared_model.stat()
    assert st.st_gid == 4242, (st.st_uid, st.st_gid)
    assert stat.S_IMODE(st.st_mode) == 0o664
    assert shared_model.read_text() != "old\n"


# ------------------------------------------------------------------ the kernel cache
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
import json, sys
import cached_mod
from ltrboost import _numba
out = [getattr(cached_mod, n)(40) for n in sys.argv[1].split(",") if n]
misses = sum(sum(f.stats.cache_misses.values()) for f in (cached_mod.plus_one, cached_mod.plus_two))
print(json.dumps({"out": out, "compiled": misses, "location": _numba.cache_location(),
                  "note": _numba.cache_note()}))
"""


def _call_as_user(shared: Path, mod_dir: Path, which: str, **extra: str) -> dict:
    import json

    uid, gid, exe = _user_or_skip()
    home = shared / "home"
    if not home.exists():
        home.mkdir()
        os.chown(home, uid, gid)
    env = _base_env(home, **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(mod_dir), env["PYTHONPATH"]])
    proc = subprocess.run(
        [exe, "-W", "always", "-c", CALL, which],
        env=env,
        cwd=str(home),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        preexec_fn=_drop_to(uid, gid),
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["stderr"] = proc.stderr
    return result


def _module(shared: Path) -> Path:
    mod_dir = shared / "mod"
    mod_dir.mkdir()
    (mod_dir / "cached_mod.py").write_text(MODULE)
    return mod_dir


def _root_call(mod_dir: Path, which: str, **extra: str) -> None:
    env = _base_env(Path(tempfile.gettempdir()), **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(mod_dir), env["PYTHONPATH"]])
    subprocess.run([sys.executable, "-c", CALL, which], env=env, check=True, capture_output=True)


def test_a_user_of_a_read_only_install_caches_in_their_own_folder(shared):
    """The package folder is root's: the user's kernels go to
    ``$XDG_CACHE_HOME/ltrboost/numba`` and load from there in the next process."""
    _user_or_skip()
    mod_dir = _module(shared)
    first = _call_as_user(shared, mod_dir, "plus_one")
    assert first["out"] == [41], first
    assert first["compiled"] == 1, first
    user_cache = shared / "home" / ".cache" / "ltrboost" / "numba"
    assert first["location"] == str(user_cache), first
    assert list(user_cache.rglob("cached_mod.plus_one-*.nbi")), first
    again = _call_as_user(shared, mod_dir, "plus_one")
    assert again["compiled"] == 0, again


def test_numba_cache_dir_wins_for_a_user(shared):
    uid, gid, _ = _user_or_skip()
    mod_dir = _module(shared)
    theirs = _user_folder(shared, "numba", uid, gid)
    first = _call_as_user(shared, mod_dir, "plus_one", NUMBA_CACHE_DIR=str(theirs))
    assert first["location"] == str(theirs), first
    assert list(theirs.rglob("cached_mod.plus_one-*.nbi")), first
    assert not (shared / "home" / ".cache" / "ltrboost").exists()


def test_an_image_prewarmed_by_root_loads_and_only_the_rest_compiles(shared):
    """README's image recipe with a real user: root compiles plus_one into
    NUMBA_CACHE_DIR at "build" time; the user (who cannot write it) loads plus_one,
    compiles only plus_two, into their own folder, and the next process compiles
    nothing; the image's folder is unchanged."""
    _user_or_skip()
    mod_dir = _module(shared)
    image = shared / "image"
    _root_call(mod_dir, "plus_one", NUMBA_CACHE_DIR=str(image))
    image_files = sorted(p for p in image.rglob("*") if p.is_file())
    assert any(p.suffix == ".nbi" for p in image_files)
    first = _call_as_user(shared, mod_dir, "plus_one,plus_two", NUMBA_CACHE_DIR=str(image))
    assert first["out"] == [41, 42]
    assert first["compiled"] == 1, first
    assert f"prewarmed kernels loaded from {image}" in first["note"], first
    again = _call_as_user(shared, mod_dir, "plus_one,plus_two", NUMBA_CACHE_DIR=str(image))
    assert again["compiled"] == 0, again
    assert sorted(p for p in image.rglob("*") if p.is_file()) == image_files


@pytest.fixture
def site(shared):
    """A copy of the package without compiled kernels (root's, read-only to the user):
    ``warmup --clear`` then finds only the files a test puts in the cache."""
    _user_or_skip()
    folder = shared / "site"
    shutil.copytree(SRC / "ltrboost", folder / "ltrboost", ignore=_no_caches)
    return folder


def _no_caches(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n == "__pycache__" or n.endswith((".nbi", ".nbc"))]


def _clear_as_user(shared: Path, site: Path, **extra: str) -> subprocess.CompletedProcess:
    return _as_user(shared, ["warmup", "--clear"], src=site, **extra)


def _fake_cache(folder: Path, site: Path) -> Path:
    """One cache file of the install ``site``'s ``ltrboost/_numba.py``, as Numba names
    it, in ``folder`` (a NUMBA_CACHE_DIR)."""
    from ltrboost._numba import _cache_subpath

    sub = folder / _cache_subpath(str(site / "ltrboost"))
    sub.mkdir(parents=True)
    entry = sub / f"_numba.plus-1.py{sys.version_info[0]}{sys.version_info[1]}.nbi"
    entry.write_bytes(b"x")
    return entry


def test_clear_on_a_cache_the_user_cannot_write_is_an_error(shared, site):
    """A prewarmed NUMBA_CACHE_DIR of root's: ``warmup --clear`` as the user is one
    error naming a file it could not remove; the file is kept."""
    _user_or_skip()
    image = shared / "image"
    image.mkdir()
    entry = _fake_cache(image, site)
    proc = _clear_as_user(shared, site, NUMBA_CACHE_DIR=str(image))
    _one_error(proc, str(entry))
    assert entry.exists()


def test_clear_on_a_cache_the_user_cannot_read_is_an_error(shared, site):
    """NUMBA_CACHE_DIR root's and private (mode 700): old, ``no kernel cache files of
    this install to remove`` and exit status 0, while its files stayed.  Now an error
    naming the folder it could not look into."""
    _user_or_skip()
    image = shared / "image"
    image.mkdir()
    entry = _fake_cache(image, site)
    image.chmod(0o700)
    proc = _clear_as_user(shared, site, NUMBA_CACHE_DIR=str(image))
    line = _one_error(proc, str(image))
    assert "Permission denied" in line, line
    assert entry.exists()


def test_clear_with_an_unreadable_sub_folder_names_it(shared, site):
    """One of the install's sub-folders of NUMBA_CACHE_DIR private (mode 700): its
    files were silently left out of ``warmup --clear``'s count and the command said
    "no kernel cache files" when it held the only ones."""
    _user_or_skip()
    image = shared / "image"
    image.mkdir()
    entry = _fake_cache(image, site)
    entry.parent.chmod(0o700)
    proc = _clear_as_user(shared, site, NUMBA_CACHE_DIR=str(image))
    _one_error(proc, str(entry.parent))
    assert entry.exists()


# ------------------------------------------------------------- the CLI's warnings
def test_a_cache_folder_warning_at_import_is_one_cli_line(shared):
    """A user's NUMBA_CACHE_DIR (a shared /tmp folder) whose sub-folder for
    ``ltrboost/io`` another user made: Numba caches those kernels elsewhere and ltrboost
    warns once, when the module is imported.  With the background compilation on (the
    default) the CLI printed it as ``.../letor.py:N: RuntimeWarning: ltrboost: ...`` and
    a second line ``  @kernel``, not as ``ltrboost: warning: ...``.  (The data file is
    missing: the command stops before it compiles anything.)"""
    uid, gid, _ = _user_or_skip()
    image = shared / "image"
    image.mkdir()
    image.chmod(0o1777)
    (image / _cache_subpath_of("io")).mkdir()  # root's, 755: the user cannot write it
    model = shutil.copyfile(MODEL, shared / "model.json")
    mine = _user_folder(shared, "mine", uid, gid)
    missing = str(shared / "missing.txt")
    proc = _as_user(
        shared,
        ["predict", str(model), missing, "-o", str(mine / "p.txt"), "--quiet"],
        NUMBA_CACHE_DIR=str(image),
        LTRBOOST_BACKGROUND_COMPILE="auto",
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert any("cannot be written" in line for line in lines), proc.stderr
    assert all(line.startswith("ltrboost: ") for line in lines), lines
    assert proc.returncode == 2, proc.stderr
    assert lines[-1].startswith("ltrboost: error: "), lines
    assert missing in lines[-1], lines


def _cache_subpath_of(sub: str) -> str:
    from ltrboost._numba import _cache_subpath

    return _cache_subpath(str(SRC / "ltrboost" / sub))

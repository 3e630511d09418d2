"""ltrboost.io._atomic: outputs never destroy data.

No test touches a real device: FIFOs are made with ``os.mkfifo`` in ``tmp_path``, a
descriptor is an ``os.pipe`` or a file in ``tmp_path``, "disk full" is a monkeypatch.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import sys
import threading
import warnings
from pathlib import Path

import pytest

import ltrboost.io._atomic as atomic
from ltrboost.io._atomic import (
    OutputChangedWarning,
    atomic_write,
    atomic_write_bytes,
    atomic_write_text,
    file_state,
)

POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file types")


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_regular_file_is_replaced_and_keeps_its_mode(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    path.chmod(0o600)
    atomic_write(path, ["new ", "text"])
    assert path.read_text() == "new text"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _names(tmp_path) == ["out.txt"]


@POSIX_ONLY
def test_symlink_is_followed_and_kept(tmp_path):
    target = tmp_path / "real" / "model.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    atomic_write_text(link, "new")
    assert link.is_symlink()  # not replaced by a regular file
    assert target.read_text() == "new"
    assert _names(target.parent) == ["model.json"]  # temp file beside the target


@POSIX_ONLY
def test_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "later.json")
    atomic_write_text(link, "x")
    assert link.is_symlink()
    assert (tmp_path / "later.json").read_text() == "x"


@POSIX_ONLY
def test_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def reader() -> None:
        with open(fifo, "rb") as f:
            received.append(f.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    atomic_write(fifo, ["1.5\n", "2.5\n"])
    thread.join(timeout=30)
    assert received == [b"1.5\n2.5\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still a FIFO, not a regular file
    assert _names(tmp_path) == ["pipe"]


@POSIX_ONLY
def test_character_device_is_opened_in_place_never_renamed(tmp_path, monkeypatch):
    """A character device (``/dev/null``, a terminal) is simulated: ``os.stat`` says
    S_IFCHR for a regular file in tmp_path, and ``os.replace`` must never be called."""
    dev = tmp_path / "fake-device"
    dev.write_text("")
    real_stat = os.stat

    class _Chr:
        def __init__(self, st):
            self._st = st
            self.st_mode = stat.S_IFCHR | 0o666

        def __getattr__(self, name):
            return getattr(self._st, name)

    def fake_stat(p, *a, **k):
        st = real_stat(p, *a, **k)
        return _Chr(st) if os.fspath(p) == str(dev) else st

    def no_replace(*a, **k):
        raise AssertionError("a device must not be replaced")

    monkeypatch.setattr(atomic.os, "stat", fake_stat)
    monkeypatch.setattr(atomic.os, "replace", no_replace)
    atomic_write_text(dev, "scores\n")
    monkeypatch.undo()
    assert dev.read_text() == "scores\n"
    assert _names(tmp_path) == ["fake-device"]


@POSIX_ONLY
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_own_descriptor_is_written_not_replaced(tmp_path):
    r, w = os.pipe()
    try:
        atomic_write_text(f"/proc/self/fd/{w}", "via the pipe\n")
        os.close(w)
        w = -1
        assert os.read(r, 1000) == b"via the pipe\n"
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    # a file the shell opened in append mode (>>): appended to, never truncated
    log = tmp_path / "scores.txt"
    log.write_text("earlier\n")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        atomic_write_text(f"/dev/fd/{fd}", "later\n")
    finally:
        os.close(fd)
    assert log.read_text() == "earlier\nlater\n"
    assert _names(tmp_path) == ["scores.txt"]


def test_directory_is_refused(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "keep").write_text("x")
    with pytest.raises(IsADirectoryError) as exc:
        atomic_write_text(folder, "x")
    assert exc.value.filename == str(folder)
    assert _names(folder) == ["keep"]


@POSIX_ONLY
def test_socket_is_refused(tmp_path):
    path = tmp_path / "s"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        with pytest.raises(OSError, match="not a regular file") as exc:
            atomic_write_text(path, "x")
        assert exc.value.filename == str(path)
        assert stat.S_ISSOCK(os.stat(path).st_mode)
    finally:
        sock.close()


@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_disk_full_names_the_file_and_keeps_the_previous_one(tmp_path, monkeypatch, where):
    path = tmp_path / "model.json"
    path.write_text("previous")

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    chunks = iter(["x" * (1 << 21), "y"])  # the first chunk is written at once
    if where == "write":
        real_fdopen = os.fdopen

        class FullDisk:
            def __init__(self, f):
                self.f = f

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.f.close()

            def fileno(self):
                return self.f.fileno()

            def write(self, text):
                full()

            def flush(self):
                pass

        monkeypatch.setattr(atomic.os, "fdopen", lambda *a, **k: FullDisk(real_fdopen(*a, **k)))
    else:
        monkeypatch.setattr(atomic.os, where, full)
    with pytest.raises(OSError, match="No space left") as exc:
        atomic_write(path, chunks)
    monkeypatch.undo()
    assert exc.value.errno == errno.ENOSPC
    assert exc.value.filename == str(path)  # the user's file, not the temporary one
    assert "No space left on device" in exc.value.strerror
    assert path.read_text() == "previous"
    assert _names(tmp_path) == ["model.json"]


def test_missing_directory_names_the_file(tmp_path):
    path = tmp_path / "nope" / "m.json"
    with pytest.raises(FileNotFoundError) as exc:
        atomic_write_text(path, "x")
    assert exc.value.filename == str(path)


def test_changed_output_warns(tmp_path):
    path = tmp_path / "m.json"
    path.write_text("first run's model")
    state = file_state(path)
    os.utime(path, ns=(0, 0))  # unchanged content, new identity: still "changed"
    with pytest.warns(OutputChangedWarning, match="changed since this run started"):
        atomic_write_text(path, "second", unchanged_since=state)
    assert path.read_text() == "second"
    # absent when the run started, written by another run meanwhile
    new = tmp_path / "new.json"
    new.write_text("the other run's model")
    with pytest.warns(OutputChangedWarning):
        atomic_write_text(new, "x", unchanged_since=None)
    # unchanged: no warning
    state = file_state(new)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        atomic_write_text(new, "y", unchanged_since=state)
        atomic_write_text(tmp_path / "fresh.json", "z", unchanged_since=None)


@POSIX_ONLY
def test_symlink_loop_names_the_file(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OSError, match="symbolic links") as exc:
        atomic_write_text(tmp_path / "a", "x")
    assert exc.value.filename == str(tmp_path / "a")


def test_file_state():
    assert file_state("/nonexistent/dir/x") is None


@POSIX_ONLY
def test_bytes_outputs_have_the_same_guarantees(tmp_path):
    target = tmp_path / "model.onnx"
    target.write_bytes(b"old")
    link = tmp_path / "link.onnx"
    link.symlink_to(target)
    atomic_write_bytes(link, b"\x00\x01new")
    assert link.is_symlink()
    assert target.read_bytes() == b"\x00\x01new"
    with pytest.raises(IsADirectoryError):
        atomic_write_bytes(tmp_path, b"x")


def test_std_stream_names_map_to_descriptors_without_touching_them():
    """Only the name resolution is tested: nothing is written to /dev."""
    if sys.platform != "linux":
        pytest.skip("Linux /dev and /proc layout")
    assert atomic._own_descriptor("/dev/stdout") == 1
    assert atomic._own_descriptor("/dev/stderr") == 2
    assert atomic._own_descriptor("/proc/self/fd/7") == 7
    assert atomic._own_descriptor("/dev/fd/9") == 9
    assert atomic._own_descriptor(f"/proc/{os.getpid()}/fd/5") == 5
    assert atomic._own_descriptor("/proc/1/fd/5") is None or os.getpid() == 1
    assert atomic._own_descriptor("/tmp/some/file") is None


@POSIX_ONLY
def test_block_device_is_refused(tmp_path, monkeypatch):
    """Simulated like the character device: ``os.stat`` reports S_IFBLK."""
    dev = tmp_path / "fake-disk"
    dev.write_text("precious")
    real_stat = os.stat

    class _Blk:
        def __init__(self, st):
            self._st = st
            self.st_mode = stat.S_IFBLK | 0o660

        def __getattr__(self, name):
            return getattr(self._st, name)

    monkeypatch.setattr(
        atomic.os,
        "stat",
        lambda p, *a, **k: (
            _Blk(real_stat(p, *a, **k)) if os.fspath(p) == str(dev) else real_stat(p, *a, **k)
        ),
    )
    with pytest.raises(OSError, match="not a regular file") as exc:
        atomic_write_text(dev, "x")
    monkeypatch.undo()
    assert exc.value.filename == str(dev)
    assert dev.read_text() == "precious"
    assert _names(tmp_path) == ["fake-disk"]


def test_several_files_are_written_all_or_none(tmp_path):
    """atomic_write_files: a second output that cannot be written (a directory) leaves
    the first one as it was, and no temporary file behind."""
    from ltrboost.io._atomic import atomic_write_files

    first, second = tmp_path / "a.txt", tmp_path / "b"
    first.write_text("previous")
    second.mkdir()
    with pytest.raises(IsADirectoryError) as exc:
        atomic_write_files([(first, b"new a"), (second, b"new b")])
    assert exc.value.filename == str(second)
    assert first.read_text() == "previous"
    assert _names(tmp_path) == ["a.txt", "b"]
    second.rmdir()
    atomic_write_files([(first, b"new a"), (second, b"new b")])
    assert (first.read_text(), second.read_text()) == ("new a", "new b")
    assert _names(tmp_path) == ["a.txt", "b"]

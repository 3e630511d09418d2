"""Atomic file writes: readers see the old file or the new one, never half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def atomic_write(path: str | os.PathLike[str], chunks: Iterable[str]) -> None:
    """Write UTF-8 ``chunks`` to ``path`` atomically.

    The text goes to a temporary file in the destination's directory (so ``os.replace``
    is a rename on one file system), is flushed and ``fsync``-ed, then replaces
    ``path``.  On any error the temporary file is removed and ``path`` is untouched.
    A new file gets mode 0o644; an existing file keeps its mode.
    """
    target = Path(os.fspath(path))
    directory = target.parent
    if not directory.is_dir():  # name the user's path, not the temporary file's
        raise FileNotFoundError(
            2, f"cannot write {target}: directory {directory} does not exist", str(target)
        )
    fd, tmp_name = tempfile.mkstemp(
        dir=directory, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            try:
                mode = target.stat().st_mode & 0o7777
            except FileNotFoundError:
                mode = 0o644
            os.fchmod(handle.fileno(), mode)
            buffer: list[str] = []
            size = 0
            for chunk in chunks:
                buffer.append(chunk)
                size += len(chunk)
                if size >= 1 << 20:
                    handle.write("".join(buffer))
                    buffer.clear()
                    size = 0
            handle.write("".join(buffer))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    # Make the rename itself durable; not every platform lets a directory be opened.
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write`)."""
    atomic_write(path, (text,))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (same guarantees as :func:`atomic_write`)."""
    target = Path(os.fspath(path))
    directory = target.parent
    if not directory.is_dir():
        raise FileNotFoundError(
            2, f"cannot write {target}: directory {directory} does not exist", str(target)
        )
    fd, tmp_name = tempfile.mkstemp(
        dir=directory, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            try:
                mode = target.stat().st_mode & 0o7777
            except FileNotFoundError:
                mode = 0o644
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise

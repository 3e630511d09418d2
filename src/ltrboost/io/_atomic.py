"""Output files that never destroy data: atomic replace, through links and devices.

:func:`atomic_write` decides by what the output path *is*:

* a regular file, or nothing yet: the text goes to a temporary file in the target's
  folder, is flushed and ``fsync``-ed, then renamed over the target, so readers (and a
  crash or ``kill -9``) see the old file or the new one, never half of one; a replaced
  file keeps its mode, and its owner and group as far as this process may set them
  (root: both; a member of the file's group: the group), a new one gets the mode
  ``open()`` would give it (the umask's);
* a symbolic link: it is followed, the file it points to is replaced, the link is kept;
  a path through a link of another user in a world-writable folder with the sticky
  bit (``/tmp``) that is not that user's is refused, as Linux's
  ``fs.protected_symlinks`` refuses ``open()`` (:func:`check_output`);
* a descriptor of this process (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``,
  ``/proc/self/fd/N``): written to that descriptor, as the shell opened it (append
  mode is respected), nothing renamed;
* a character device or a FIFO (a terminal, ``/dev/null``, a named pipe): opened and
  written in place, never renamed or replaced;
* a directory, socket or block device: refused (``IsADirectoryError`` / ``OSError``);
  so is a regular file this process may not write (``PermissionError``), as ``open()``
  refuses it, although the rename could replace it, and one of another user in a
  folder with the sticky bit that is not ours (``/tmp``: the rename would fail), both
  refused before anything is written (:func:`check_output`).

:func:`atomic_write_files` writes several outputs all or none (each to its temporary
file first, renamed only when all are complete; a signal that ends the command
arriving during the renames is acted on once the last is done: :func:`signals_held`).

Every error names the user's path (``OSError.filename``), never the temporary file: a
full disk reads ``model.json: No space left on device``.  ``unchanged_since`` (a
:func:`file_state` taken when a run started) warns with :class:`OutputChangedWarning`
when another process replaced the target in the meantime (two runs writing one output:
the earlier model is about to be overwritten).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any


class OutputChangedWarning(UserWarning):
    """The output file changed since this run started (another process wrote it)."""


# ``unchanged_since`` default: no check.
UNKNOWN_STATE: Any = object()

_FD_PATH = re.compile(r"^/(?:dev/fd|proc/(self|thread-self|\d+)/fd)/(\d+)$")
_STD_NAMES = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


# A temporary file is named ".NAME.XXXXXXXX.tmp", 14 bytes more than NAME: of a name
# near the file system's limit (255 bytes) only the first bytes are kept there, so an
# output whose own name fits is never refused for the temporary one's length.
_TEMP_NAME_BYTES = 200


def temp_prefix(name: str) -> str:
    """``mkstemp``/``mkdtemp``'s prefix for a temporary file beside the file ``name``:
    ``.NAME.``, with NAME cut to its first 200 bytes."""
    raw = os.fsencode(name)
    if len(raw) > _TEMP_NAME_BYTES:
        name = os.fsdecode(raw[:_TEMP_NAME_BYTES])
    return f".{name}."


def _new_temp(directory: str | os.PathLike[str], name: str, created: list[str]) -> tuple[int, str]:
    """Create ``.NAME.XXXXXXXX.tmp`` in ``directory`` (as ``mkstemp``: 0o600, never an
    existing file); its name is added to ``created`` *before* the file exists.  An
    interrupt (Ctrl-C, SIGTERM) is raised wherever the interpreter next looks at its
    signals -- after ``os.open`` returned, after a long ``fsync``, between the staging
    and the rename -- and the caller's cleanup then finds every file it may have made
    in ``created`` (``mkstemp`` returned the name only once the file existed, and a
    SIGTERM in that gap, or the next, left the file behind)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL
    for extra in ("O_NOFOLLOW", "O_CLOEXEC", "O_BINARY"):
        flags |= getattr(os, extra, 0)
    return _claim(directory, name, created, lambda path: os.open(path, flags, 0o600), "file")


def new_temp_dir(directory: str | os.PathLike[str], name: str, created: list[str]) -> str:
    """Create the folder ``.NAME.XXXXXXXX.tmp`` in ``directory`` (as ``mkdtemp``:
    0o700, never an existing one) and return its path, added to ``created`` *before*
    the folder exists, as :func:`_new_temp` does for files: ``mkdtemp`` returned the
    name only once the folder existed, and a signal in that gap left it behind."""
    return _claim(directory, name, created, lambda path: os.mkdir(path, 0o700), "folder")[1]


def _claim(
    directory: str | os.PathLike[str],
    name: str,
    created: list[str],
    make: Callable[[str], Any],
    what: str,
) -> tuple[Any, str]:
    """``(make(path), path)`` for a free ``.NAME.XXXXXXXX.tmp`` in ``directory``
    (``make`` fails with FileExistsError when the name is taken), the path added to
    ``created`` before ``make`` runs and removed again when it fails."""
    prefix = temp_prefix(name)
    for _ in range(100):
        path = os.path.join(os.fsdecode(directory), f"{prefix}{secrets.token_hex(4)}.tmp")
        created.append(path)
        try:
            return make(path), path
        except FileExistsError:
            created.remove(path)  # another process's: never removed by us
        except OSError:
            created.remove(path)
            raise
    raise FileExistsError(errno.EEXIST, f"no free temporary {what} name", directory)


# The signals that end a command (Ctrl-C, ``kill``, the terminal closed), held while a
# set of files is renamed into place.
_HELD_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP that arrive in the block until it ends, then act
    on them as they would have been (the same handlers, raised again): for a block
    that must not stop half-way, such as the renames of a set of files that is
    written all or none (a signal after the first rename left the new file beside the
    previous run's others).  Only in the main thread (the only one whose handlers
    Python runs or may change), and only for a signal handled from Python or by
    default: an ignored one stays ignored, one handled by C code is left alone."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    replaced: dict[int, Any] = {}

    def hold(signum: int, frame: Any) -> None:
        held.append(signum)

    try:
        for name in _HELD_SIGNALS:
            signum = getattr(signal, name, None)
            if signum is None:
                continue
            handler = signal.getsignal(signum)
            if handler is None or handler is signal.SIG_IGN:
                continue
            replaced[signum] = handler
            signal.signal(signum, hold)
        yield
    finally:
        for signum, handler in replaced.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(held):  # each once, in the order they came
            signal.raise_signal(signum)


def _remove_temps(created: Iterable[str]) -> None:
    """Remove the temporary files ``created`` lists that are still there (one renamed
    over its target is gone: its name is never the target's)."""
    for path in created:
        try:
            os.unlink(path)
        except OSError:
            pass


def file_state(path: str | os.PathLike[str]) -> tuple[int, int, int, int] | None:
    """Identity of the file at ``path`` (after links): (device, inode, size, mtime_ns),
    or None when nothing is there.  Compare two with ``==``."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _own_descriptor(path: str) -> int | None:
    """The descriptor number when ``path`` (or a link on its way) names one of ours."""
    p = os.path.abspath(path)
    for _ in range(40):
        if p in _STD_NAMES and not os.path.islink(p):
            return _STD_NAMES[p]
        m = _FD_PATH.match(p)
        if m:
            pid = m.group(1)
            if pid in (None, "self", "thread-self") or int(pid) == os.getpid():
                return int(m.group(2))
            return None
        if not os.path.islink(p):
            return None
        p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
    return None


def current_umask() -> int:
    """The process's umask, which a temporary file or folder (made 0o600 / 0o700)
    does not get: an output made from one is given ``0o666`` / ``0o777`` less it."""
    mask = os.umask(0o077)  # read it by setting it; 077 meanwhile widens nothing
    os.umask(mask)
    return mask


def _named(e: OSError, path: str, doing: str) -> OSError:
    """The same error class and errno, naming the user's path."""
    strerror = e.strerror or str(e)
    err = type(e)(e.errno or errno.EIO, f"{strerror} ({doing})", path)
    return err


def _write_fd(fd: int, blobs: Iterable[bytes]) -> None:
    import sys

    for stream in (sys.stdout, sys.stderr):  # keep Python's buffered text in order
        try:
            if stream is not None and stream.fileno() == fd:
                stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    for blob in blobs:
        data = memoryview(blob)
        while data:
            n = os.write(fd, data)
            data = data[n:]


def _utf8(chunks: Iterable[str]) -> Iterable[bytes]:
    for chunk in chunks:
        yield chunk.encode("utf-8")


def atomic_write(
    path: str | os.PathLike[str],
    chunks: Iterable[str],
    *,
    unchanged_since: Any = UNKNOWN_STATE,
    new_mode: int | None = None,
) -> None:
    """Write UTF-8 ``chunks`` to ``path`` without ever leaving a half-written file.

    See the module docstring for links, devices and refused outputs.  For a regular
    file: on any error the temporary file is removed and the target is untouched; a new
    file gets ``new_mode`` if given, else 0o666 less the umask (as with ``open()``), an
    existing file keeps its mode.  ``unchanged_since``: a :func:`file_state` (None =
    "did not exist") taken when the run started; if the target's state differs once
    ``chunks`` are written (they may be produced as they are written: a stream),
    :class:`OutputChangedWarning` is issued before it is replaced.
    """
    _write(path, _utf8(chunks), unchanged_since, new_mode)


def atomic_write_text(
    path: str | os.PathLike[str], text: str, *, unchanged_since: Any = UNKNOWN_STATE
) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write`)."""
    _write(path, (text.encode("utf-8"),), unchanged_since)


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, *, unchanged_since: Any = UNKNOWN_STATE
) -> None:
    """Write ``data`` to ``path`` with the guarantees of :func:`atomic_write`."""
    _write(path, (bytes(data),), unchanged_since)


def atomic_write_files(
    items: Iterable[tuple[str | os.PathLike[str], bytes | Iterable[str]]],
    *,
    before_commit: Callable[[], None] | None = None,
) -> None:
    """Write several files, all or none: each is checked and written to its temporary
    file first, and only when every one is complete are they renamed over their
    targets (a full disk or a directory in the way of the last one leaves every target
    untouched).  Each target's data is bytes or UTF-8 text chunks (as
    :func:`atomic_write` takes them); each has the guarantees of :func:`atomic_write`.
    ``before_commit`` runs once every file is complete, before any is renamed (an
    output that cannot be staged, such as stdout); when it raises, none is written.
    Ctrl-C, SIGTERM or SIGHUP arriving during the renames is acted on once the last
    is done (:func:`signals_held`): all are written, then the signal ends the run."""
    staged: list[_Staged] = []
    created: list[str] = []  # every temporary file, even one whose _stage was interrupted
    try:
        for path, data in items:
            blobs = (bytes(data),) if isinstance(data, bytes | bytearray) else _utf8(data)
            staged.append(_stage(path, blobs, UNKNOWN_STATE, created))
        if before_commit is not None:
            before_commit()
        # a signal between two renames left the first file new and the others old
        # (generate's train.txt beside another run's vali.txt): acted on once all are
        with signals_held() if len(staged) > 1 else contextlib.nullcontext():
            for st in staged:
                st.commit()
    except BaseException:
        _remove_temps(created)  # the committed ones are gone (renamed): untouched
        raise


def _write(path, blobs: Iterable[bytes], unchanged_since: Any, new_mode: int | None = None) -> None:
    created: list[str] = []
    try:
        _stage(path, blobs, unchanged_since, created, new_mode).commit()
    except BaseException:
        _remove_temps(created)
        raise


class _Staged:
    """An output ready to land: a complete temporary file to rename over ``target``,
    or (a descriptor, a device, a FIFO) the data to write there in place."""

    def __init__(
        self,
        user_path: str,
        target: Any,
        *,
        tmp_name: str | None = None,
        fd: int | None = None,
        blobs: Iterable[bytes] = (),
        existed: bool = True,
    ) -> None:
        self.user_path = user_path
        self.existed = existed
        self.target = target
        self.tmp_name = tmp_name
        self.fd = fd
        self.blobs = blobs

    def discard(self) -> None:
        if self.tmp_name is not None:
            try:
                os.unlink(self.tmp_name)
            except FileNotFoundError:
                pass

    def commit(self) -> None:
        user_path = self.user_path
        if self.fd is not None:
            try:
                _write_fd(self.fd, self.blobs)
            except OSError as e:
                raise _named(e, user_path, "writing") from None
            return
        if self.tmp_name is None:  # a character device or a FIFO: written in place
            try:
                with open(self.target, "wb") as handle:
                    for blob in self.blobs:
                        handle.write(blob)
            except OSError as e:
                raise _named(e, user_path, "writing") from None
            return
        try:
            os.replace(self.tmp_name, self.target)
        except BaseException as e:
            self.discard()
            if isinstance(e, OSError) and e.filename != user_path:
                kept = "the previous file is intact" if self.existed else "nothing was written"
                raise _named(e, user_path, f"writing; {kept}") from None
            raise
        # Make the rename itself durable; not every platform lets a directory be opened.
        try:
            dir_fd = os.open(self.target.parent, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(dir_fd)
        except OSError:
            pass
        finally:
            os.close(dir_fd)


def check_output(path: str | os.PathLike[str]) -> None:
    """Raise the error :func:`atomic_write` would raise for ``path`` before writing
    (a directory, a socket, a folder that does not exist or takes no files), leaving
    nothing behind: for a command that works long before it writes."""
    user_path = os.fsdecode(path)  # a bytes path too, as open() takes it
    if _own_descriptor(user_path) is not None:
        return
    target, st = _check_target(user_path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        return  # a FIFO or character device: written in place
    created: list[str] = []
    try:  # a folder that takes no files (read-only, /proc)
        try:
            fd, _ = _new_temp(target.parent, target.name, created)
        except OSError as e:
            raise _named(e, user_path, "creating a temporary file beside it") from None
        os.close(fd)
    finally:
        _remove_temps(created)


def _check_target(user_path: str) -> tuple[Path, os.stat_result | None]:
    """The output's target (links followed) and its ``stat`` (None: nothing there
    yet), after the checks every output gets."""
    if os.path.basename(user_path) in ("", ".", ".."):
        # realpath drops a trailing '/': 'out/' wrote a file 'out', 'model.json/'
        # replaced model.json; open() refuses both
        what = "is empty" if not user_path else "names a directory (ends with '/', '.' or '..')"
        raise IsADirectoryError(errno.EISDIR, f"{what}; give a file name", user_path)
    _check_links(user_path)
    target = Path(os.path.realpath(user_path))
    try:
        st = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as e:  # a symlink loop, a permission problem on the way
        raise _named(e, user_path, "looking at the output") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory; give a file name", user_path)
        if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            return target, st
        if not stat.S_ISREG(st.st_mode):
            raise OSError(
                errno.EINVAL,
                "not a regular file (a socket or block device?); not replacing it",
                user_path,
            )
        # the rename needs only the folder's permission; open() would refuse the file
        if not os.access(target, os.W_OK):
            if _owned_by_another_user(st):
                why = "is read-only to you (a file of another user); not replacing it"
            else:
                why = "is read-only; not replacing it (chmod u+w to allow)"
            raise PermissionError(errno.EACCES, why, user_path)
        _check_sticky_folder(target.parent, st, user_path)
    check_folder(target.parent, user_path)
    return target, st


def _links_followed(path: str, limit: int = 40) -> Iterable[tuple[str, os.stat_result]]:
    """Each symbolic link that resolving ``path`` follows, as ``os.path.realpath``
    does (a folder on the way too), with its ``lstat``; at most ``limit`` (a loop is
    left to the ``stat`` after it)."""
    parts = os.path.join(os.getcwd(), path).split(os.sep)[::-1]  # '..' after links
    resolved = os.sep
    while parts and limit > 0:
        name = parts.pop()
        if name in ("", "."):
            continue
        if name == "..":
            resolved = os.path.dirname(resolved)
            continue
        here = os.path.join(resolved, name)
        try:
            st = os.lstat(here)
        except OSError:
            resolved = here  # nothing there (yet): the rest is not looked at
            continue
        if not stat.S_ISLNK(st.st_mode):
            resolved = here
            continue
        yield here, st
        limit -= 1
        try:
            link = os.readlink(here)
        except OSError:
            return
        if os.path.isabs(link):
            resolved = os.sep
        parts.extend(link.split(os.sep)[::-1])


def _check_links(user_path: str) -> None:
    """Refuse a path through a link of another user in a world-writable folder with
    the sticky bit (``/tmp``), unless the folder is that user's: the rule of Linux's
    ``fs.protected_symlinks``, which ``open()`` obeys but ``realpath`` (how the link is
    followed here, to replace its target) does not.  Such a link, planted in
    ``/tmp`` (``/tmp/model.json -> ~you/.bashrc``), made the output replace the file it
    points to, with this process's rights (root's too)."""
    geteuid = getattr(os, "geteuid", None)  # not on Windows: no owners to compare
    if geteuid is None:
        return
    for link, st in _links_followed(user_path):
        if st.st_uid == geteuid():
            continue
        try:
            folder = os.stat(os.path.dirname(link))
        except OSError:
            continue
        world_sticky = folder.st_mode & stat.S_ISVTX and folder.st_mode & stat.S_IWOTH
        if world_sticky and folder.st_uid != st.st_uid:
            raise PermissionError(
                errno.EACCES,
                f"goes through {link}, a link of another user in a world-writable folder "
                "with the sticky bit (as /tmp), which is not followed (as Linux's "
                "fs.protected_symlinks; it could point anywhere); give the file it "
                "should be, not the link",
                user_path,
            )


def _owned_by_another_user(st: os.stat_result) -> bool:
    geteuid = getattr(os, "geteuid", None)  # not on Windows: no owners to compare
    return geteuid is not None and st.st_uid != geteuid()


def _check_sticky_folder(directory: Path, st: os.stat_result, user_path: str) -> None:
    """Refuse a file of another user in a folder with the sticky bit (``/tmp``, a shared
    drop folder) that is not ours: only the file's or the folder's owner (or root) may
    rename over it, so the write, which replaces the file, would fail at the very end
    (after a training) with ``Operation not permitted``, although the file is writable."""
    if not _owned_by_another_user(st) or os.geteuid() == 0:
        return
    try:
        folder = os.stat(directory)
    except OSError:
        return  # check_folder says what is wrong with it
    if folder.st_mode & stat.S_ISVTX and folder.st_uid != os.geteuid():
        raise PermissionError(
            errno.EPERM,
            "is a file of another user in a folder with the sticky bit (as /tmp): only "
            "its owner may replace it; not replacing it (give another output)",
            user_path,
        )


def check_folder(directory: str | os.PathLike[str], user_path: str) -> None:
    """Raise, naming the output ``user_path`` (not a temporary file beside it), unless
    ``directory``, the folder it goes to, is one: it does not exist, or is a file."""
    if os.path.isdir(directory):
        return
    if os.path.exists(directory):
        raise NotADirectoryError(
            errno.ENOTDIR, f"cannot write: {directory} is not a directory", user_path
        )
    raise FileNotFoundError(
        errno.ENOENT, f"cannot write: directory {directory} does not exist", user_path
    )


def _keep_owner(fd: int, st: os.stat_result) -> None:
    """Give the new file (``fd``) the owner and group of the file it replaces (``st``),
    as far as this process may: root both (``sudo ltrboost train -o ~alice/model.json``
    left alice a model of root's), a member of the file's group that group (a group's
    shared file stays the group's); never the owner of another user's file, which only
    root may give away.  Called before the mode is set (a change of owner clears the
    set-user-ID and set-group-ID bits)."""
    fchown = getattr(os, "fchown", None)  # not on Windows
    if fchown is None:
        return
    current = os.fstat(fd)
    if (current.st_uid, current.st_gid) == (st.st_uid, st.st_gid):
        return
    for uid in (st.st_uid, -1):
        try:
            fchown(fd, uid, st.st_gid)
            return
        except OSError:  # EPERM: not root / not a member of the group
            continue


def _stage(
    path,
    blobs: Iterable[bytes],
    unchanged_since: Any,
    created: list[str] | None = None,
    new_mode: int | None = None,
) -> _Staged:
    """Check the output and, for a regular file, write the data to a complete, synced
    temporary file beside it (removed again on any error); nothing is replaced yet.
    ``created`` gets the temporary file's name before it exists (see :func:`_new_temp`):
    the caller removes it if an interrupt lands after this returns, before the rename."""
    user_path = os.fsdecode(path)  # a bytes path too, as open() takes it
    fd = _own_descriptor(user_path)
    if fd is not None:
        return _Staged(user_path, None, fd=fd, blobs=blobs)
    target, st = _check_target(user_path)
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        return _Staged(user_path, target, blobs=blobs)
    directory = target.parent
    try:
        fd, tmp_name = _new_temp(directory, target.name, [] if created is None else created)
    except OSError as e:
        raise _named(e, user_path, "creating a temporary file beside it") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            if st is not None:
                _keep_owner(handle.fileno(), st)
                mode = st.st_mode & 0o7777
            else:
                mode = 0o666 & ~current_umask() if new_mode is None else new_mode
            os.fchmod(handle.fileno(), mode)
            buffer: list[bytes] = []
            size = 0
            for blob in blobs:
                buffer.append(blob)
                size += len(blob)
                if size >= 1 << 20:
                    handle.write(b"".join(buffer))
                    buffer.clear()
                    size = 0
            handle.write(b"".join(buffer))
            handle.flush()
            os.fsync(handle.fileno())
        # compared once the data is written, just before the rename: ``blobs`` may be
        # produced as they are written (predict's scores, while the data is read)
        if unchanged_since is not UNKNOWN_STATE and file_state(target) != unchanged_since:
            warnings.warn(
                OutputChangedWarning(
                    f"{user_path} changed since this run started (another run wrote "
                    "it?); replacing it with this run's output"
                ),
                stacklevel=4,
            )
    except BaseException as e:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        if isinstance(e, OSError) and e.filename != user_path:
            kept = "nothing was written" if st is None else "the previous file is intact"
            raise _named(e, user_path, f"writing; {kept}") from None
        raise
    return _Staged(user_path, target, tmp_name=tmp_name, existed=st is not None)

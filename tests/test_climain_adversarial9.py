"""``ltrboost.cli.main(argv)`` called as a Python function (a ninth adversarial pass):
from a notebook or a test whose ``sys.stdout`` is a text stream (``io.StringIO``), with
a stdout whose reader left, with ``sys.stdout`` or ``sys.stderr`` None (pythonw, a
closed descriptor), and several times in one process.

* ``main(["export", M, "-f", FMT, "-o", "-"])`` with ``sys.stdout`` a StringIO: an
  ``AttributeError: '_io.StringIO' object has no attribute 'buffer'`` traceback for
  every format (and for ``--createmodel -``).
* A reader of stdout that left (status 141) pointed the stream's file descriptor at
  /dev/null for good, for the rest of the caller's process (its later writes there
  vanished without an error), and leaked the descriptor of /dev/null at every call.
* ``ltrboost --help >&-`` (``--version`` too) printed the help on stderr and exited 0
  where README promises the ``stdout: closed`` line and status 2.
"""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from ltrboost.cli import main

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX pipes and /proc")

SRC = str(Path(__file__).resolve().parents[1] / "src")
FAST = ["-q", "--n-estimators", "3", "--min-samples-leaf", "2", "--max-leaf-nodes", "4"]
TEXT_FORMATS = ("lightgbm", "xgboost", "xgboost-dump", "solr", "ranklib")
CLOSED = "ltrboost: error: stdout: closed (nowhere to write the output)"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A small LETOR file and a model trained on it."""
    root = tmp_path_factory.mktemp("climain")
    data = root / "d"
    argv = ["generate", str(data), "--n-queries", "8", "--docs-per-query", "8"]
    assert main([*argv, "--n-features", "4"]) == 0
    model = root / "m.json"
    assert main(["train", str(data / "train.txt"), "-o", str(model), *FAST]) == 0
    return {"data": data / "train.txt", "model": model, "root": root}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = os.pathsep.join([SRC, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


# ------------------------------------------------ 1. export -o - to a text stream
@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_export_to_a_text_stdout_writes_the_text(files, monkeypatch, capsys, fmt, tmp_path):
    """A StringIO stdout (capsys, a notebook, contextlib.redirect_stdout) has no
    ``buffer``: export raised AttributeError; the exported text now lands in it, the
    same text as ``-o FILE`` writes."""
    out = tmp_path / "ltrboost.txt"  # solr: the model name -o - gives, "ltrboost"
    assert main(["export", str(files["model"]), "-f", fmt, "-o", str(out)]) == 0
    text = io.StringIO()
    monkeypatch.setattr(sys, "stdout", text)
    rc = main(["export", str(files["model"]), "-f", fmt, "-o", "-"])
    monkeypatch.undo()
    assert rc == 0, capsys.readouterr().err
    assert text.getvalue() == out.read_text(encoding="utf-8")
    assert capsys.readouterr().err == ""


def test_export_createmodel_to_a_text_stdout(files, monkeypatch, capsys, tmp_path):
    """``--createmodel -`` (the body printed, the model written to a file) into a
    StringIO: the same AttributeError; now the body is printed and the model written."""
    body, model_out = tmp_path / "body.json", tmp_path / "x.json"
    m = str(files["model"])
    argv = ["export", m, "-f", "xgboost-dump", "-o", str(model_out), "--createmodel"]
    assert main([*argv, str(body)]) == 0
    model_out.unlink()
    text = io.StringIO()
    monkeypatch.setattr(sys, "stdout", text)
    rc = main([*argv, "-"])
    monkeypatch.undo()
    assert rc == 0, capsys.readouterr().err
    assert json.loads(text.getvalue()) == json.loads(body.read_text(encoding="utf-8"))
    assert model_out.exists()


def test_export_onnx_to_a_text_stdout_is_one_error_line(files, monkeypatch, capsys):
    """ONNX is binary: a text stream cannot take it.  One error line that says so and
    status 2, not a traceback."""
    text = io.StringIO()
    monkeypatch.setattr(sys, "stdout", text)
    rc = main(["export", str(files["model"]), "-f", "onnx", "-o", "-"])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert rc == 2, err
    assert text.getvalue() == ""
    (line,) = err.splitlines()
    assert line.startswith("ltrboost: error: stdout: "), line
    for needle in ("binary", "onnx", "-o FILE"):
        assert needle in line, line


# ------------------------------------------------ 2. a reader of stdout that left
def _reader_gone() -> tuple[int, os.stat_result]:
    """The write end of a pipe whose reader has left, and its fstat."""
    read, write = os.pipe()
    os.close(read)
    return write, os.fstat(write)


def test_a_reader_that_left_leaves_the_callers_stream_where_it_was(files, monkeypatch, capsys):
    """``main()`` from Python, its stdout a pipe whose reader left: 141 and nothing on
    stderr, as in the shell; but the stream's descriptor was pointed at /dev/null for
    good (the caller's later writes there vanished without an error) and the
    descriptor of /dev/null opened for it was never closed.  Now the descriptor is the
    pipe again, a write to it fails as it should, and no descriptor is left open."""
    write, before = _reader_gone()
    stream = open(write, "w", encoding="utf-8", closefd=False)
    try:
        fds = sorted(os.listdir("/proc/self/fd"))
        monkeypatch.setattr(sys, "stdout", stream)
        rc = main(["inspect", str(files["model"]), "--dump"])
        monkeypatch.undo()
        assert (rc, capsys.readouterr().err) == (141, "")
        assert sorted(os.listdir("/proc/self/fd")) == fds
        after = os.fstat(write)
        assert stat.S_ISFIFO(after.st_mode)
        assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
        stream.flush()  # nothing left in the buffer to fail on
        with pytest.raises(BrokenPipeError):
            os.write(write, b"x")
    finally:
        stream.close()
        os.close(write)


def test_a_reader_that_left_keeps_fd_1_for_a_python_caller(files, tmp_path):
    """The same with the process's own fd 1 (``sys.stdout`` as Python made it): after
    ``main()`` returns 141, fd 1 is still the pipe (it was /dev/null), so the caller's
    own next print fails as it should instead of vanishing; the caller can put its
    stdout back and print again."""
    code = f"""
    import json, os, sys
    sys.path.insert(0, {SRC!r})
    from ltrboost.cli import main
    saved = os.dup(1)
    read, write = os.pipe()
    os.close(read)
    os.dup2(write, 1)
    fds = len(os.listdir("/proc/self/fd"))
    rc = main(["inspect", {str(files["model"])!r}, "--dump"])
    one, pipe = os.fstat(1), os.fstat(write)
    same = (one.st_dev, one.st_ino) == (pipe.st_dev, pipe.st_ino)
    try:
        os.write(1, b"x")
        broken = False
    except BrokenPipeError:
        broken = True
    leaked = len(os.listdir("/proc/self/fd")) - fds
    os.dup2(saved, 1)
    print(json.dumps(dict(rc=rc, same=same, broken=broken, leaked=leaked)))
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=_env(),
    )
    assert done.stderr == "", done.stderr
    # only the caller's line: the inspect text the failed write kept in the buffer was
    # written after it once fd 1 was put back (the start of the dump, then the line)
    expected = {"rc": 141, "same": True, "broken": True, "leaked": 0}
    assert done.stdout.splitlines() == [json.dumps(expected)]


@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_reader_that_left_is_still_141_and_silent_for_the_process(files, unbuffered):
    """``python -m ltrboost inspect M --dump | head -1``: with the descriptor no longer
    sent to /dev/null for good, the interpreter's last flush still has nothing to write
    (the text the failed write kept was dropped): 141, nothing on stderr."""
    env = _env()
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ltrboost", "inspect", str(files["model"]), "--dump"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=300,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


# ------------------------------------------------ 3. --help / --version on a closed stdout
@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["inspect", "--help"]])
def test_help_on_a_closed_stdout_is_the_closed_error(argv):
    """``ltrboost --help >&-``: argparse, given ``sys.stdout`` None, printed the help
    on stderr and exited 0; README: a closed stdout is ``stdout: closed`` and status 2
    for ``--help`` and ``--version`` too."""
    done = subprocess.run(
        [sys.executable, "-m", "ltrboost.cli", *argv],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        timeout=120,
        preexec_fn=lambda: os.close(1),  # the shell's >&-
    )
    assert (done.returncode, done.stderr.splitlines()) == (2, [CLOSED])


def test_help_with_stdout_none_in_process(monkeypatch, capsys):
    """pythonw (``sys.stdout`` None): the same line, status 2, returned by main() as
    every other status is."""
    monkeypatch.setattr(sys, "stdout", None)
    status = main(["--version"])
    monkeypatch.undo()
    assert status == 2
    assert capsys.readouterr().err.splitlines() == [CLOSED]


# ------------------------------------------------ 4. many calls in one process
def _state() -> dict:
    """What a call of ``main`` must leave as it found it."""
    signals = {
        s: signal.getsignal(s)
        for s in signal.valid_signals()
        if s not in (signal.SIGKILL, signal.SIGSTOP)
    }
    return {
        "signals": signals,
        "filters": list(warnings.filters),
        "showwarning": warnings.showwarning,
        "root handlers": list(logging.getLogger().handlers),
        "ltrboost handlers": list(logging.getLogger("ltrboost").handlers),
        "ltrboost level": logging.getLogger("ltrboost").level,
        "environ": {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"},
        "cwd": os.getcwd(),
        "stdout": sys.stdout,
        "stderr": sys.stderr,
        "stdin": sys.stdin,
        "fds": sorted(os.listdir("/proc/self/fd"), key=int),
        "fd targets": _fd_targets(),
        "excepthook": sys.excepthook,
    }


def _fd_targets() -> dict[str, str]:
    targets = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            targets[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return targets


CAPTURE = object()  # call()'s default stream: a StringIO whose text it returns


def test_many_calls_in_one_process_leave_nothing_behind(files, tmp_path):
    """train, predict, eval, inspect, an error, Ctrl-C, SIGTERM, a reader that left,
    a closed stdout and stderr, one after the other in one process: after each call
    the signal handlers, warning filters, logging handlers, environment, working
    folder, standard streams and open descriptors are those before it, and the same
    command prints the same text (no log line doubled, no warning lost)."""
    import ltrboost.io._atomic as atomic

    # module-level imports done (the first call of a command imports its modules)
    main(["inspect", str(files["model"])])
    m, d = str(files["model"]), str(files["data"])
    trained = str(tmp_path / "t.json")
    stage = atomic._stage

    def interrupt(*args):
        raise KeyboardInterrupt

    def terminate(*args):
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before kill returns
        raise AssertionError("SIGTERM did not end the command")

    def call(argv, stdout=CAPTURE, stderr=CAPTURE, hook=None):
        text, err = io.StringIO(), io.StringIO()
        before = _state()
        if hook is not None:
            atomic._stage = hook
        old = sys.stdout, sys.stderr
        sys.stdout = text if stdout is CAPTURE else stdout
        sys.stderr = err if stderr is CAPTURE else stderr
        try:
            rc = main(argv)
        finally:
            sys.stdout, sys.stderr = old
            atomic._stage = stage
        after = _state()
        changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
        assert changed == {}, (argv, changed)
        return rc, text.getvalue(), err.getvalue()

    logging.getLogger().addHandler(handler := logging.NullHandler())
    try:
        assert call(["train", d, "-o", trained, *FAST])[0] == 0
        first = call(["predict", trained, d, "-o", "-"])
        assert first[0] == 0
        assert call(["eval", trained, d])[0] == 0
        assert call(["inspect", trained])[0] == 0
        assert call(["inspect", str(tmp_path / "absent.json")])[0] == 2
        assert call(["train", d, "-o", trained, *FAST], hook=interrupt)[0] == 130
        assert call(["train", d, "-o", trained, *FAST], hook=terminate)[0] == 143
        write, _ = _reader_gone()
        with open(write, "w", encoding="utf-8") as gone:
            assert call(["inspect", m, "--dump"], stdout=gone)[0] == 141
        rc, _, err = call(["inspect", m], stdout=None)
        assert (rc, err.splitlines()) == (2, [CLOSED])
        assert call(["eval", trained, d], stderr=None)[0] == 0
        assert call(["predict", trained, d, "-o", "-"]) == first
    finally:
        logging.getLogger().removeHandler(handler)

"""Interrupted CLI commands, a fifth adversarial pass: SIGINT, SIGTERM and SIGHUP at
the command's first imports, in the middle of a write and in its cleanup, and a reader
of stdout that leaves.  Each end is one line and its documented exit status (130, 143,
129, 141), with no temporary file beside the output and the previous output intact.

The signals are sent by the process to itself from a hook at the exact moment (an
import, the rename of the output), so that no test depends on timing; ``os.kill`` of
the process itself runs the Python handler before it returns."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ltrboost.cli import main

SRC = str(Path(__file__).resolve().parents[1] / "src")
FAST = ["-q", "--n-estimators", "3", "--min-samples-leaf", "5", "--max-leaf-nodes", "4"]
SENTINEL = "previous output\n"

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("advsig5") / "d"
    argv = ["generate", str(folder), "--n-queries", "12", "--docs-per-query", "8"]
    assert main([*argv, "--n-features", "4"]) == 0
    return folder


@pytest.fixture(scope="module")
def model(data: Path) -> Path:
    path = data.parent / "m.json"
    assert main(["train", str(data / "train.txt"), "-o", str(path), *FAST]) == 0
    return path


def _run_script(code: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )


def _one_line(done: subprocess.CompletedProcess, status: int, words: str) -> str:
    """The process ended with ``status`` and one line of message, naming ``words``."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == status, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert words in lines[0], lines[0]
    return lines[0]


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.startswith("."))


# ------------------------------------ 4. export -o -: a short write is not the end
class _ShortWrites(io.RawIOBase):
    """A pipe under ``python -u`` (PYTHONUNBUFFERED, common in containers) whose
    reader leaves: the kernel takes part of a write, and the next write fails."""

    def __init__(self) -> None:
        self.taken = b""

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        if self.taken:
            raise BrokenPipeError(32, "Broken pipe")
        self.taken = bytes(b[:100])
        return len(self.taken)


@pytest.mark.parametrize("fmt", ["lightgbm", "xgboost"])
def test_export_to_stdout_reader_gone_is_141(model, monkeypatch, capsys, fmt):
    """``export -o -`` wrote the file with one ``buffer.write`` and did not look at its
    count: under ``python -u`` a pipe whose reader left took 64 KiB of it and the
    command exited 0, the rest dropped silently (``predict`` gave 141)."""
    raw = _ShortWrites()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, write_through=True))
    rc = main(["export", str(model), "-f", fmt, "-o", "-"])
    assert rc == 141
    assert len(raw.taken) == 100
    assert capsys.readouterr().err == ""


def test_export_to_stdout_short_writes_are_completed(model, monkeypatch, tmp_path):
    """A short write (a signal during a large write to a pipe) is continued, not
    dropped: stdout gets the whole file."""

    class Short(io.RawIOBase):
        def __init__(self) -> None:
            self.data = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, b) -> int:
            n = min(len(b), 1000)
            self.data += bytes(b[:n])
            return n

    raw = Short()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, write_through=True))
    assert main(["export", str(model), "-f", "lightgbm", "-o", "-"]) == 0
    assert main(["export", str(model), "-f", "lightgbm", "-o", str(tmp_path / "m.txt")]) == 0
    assert bytes(raw.data) == (tmp_path / "m.txt").read_bytes()


def test_cleanup_os_error_after_an_interrupt_is_not_bad_input(model, tmp_path):
    """A cleanup's OSError (a file it could not remove) after Ctrl-C was reported as
    ``ltrboost: error: ...`` with status 2, as if the input were bad."""
    code = f"""
    import errno, sys
    sys.path.insert(0, {SRC!r})
    import ltrboost.cli as cli
    def broken(args):
        try:
            raise KeyboardInterrupt
        finally:
            raise OSError(errno.EACCES, "Permission denied", "x.tmp")
    cli.cmd_inspect = broken
    sys.exit(cli.main(["inspect", {str(model)!r}]))
    """
    done = _run_script(code, tmp_path)
    _one_line(done, 130, "interrupted")


# ------------------------------- 5. convert: the hidden folder, the instant it exists
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_convert_signal_right_after_its_folder_is_made(data, tmp_path, sig):
    """``tempfile.mkdtemp`` returns the hidden folder's name only once the folder
    exists: a signal in that gap (polling for the folder and sending SIGTERM hit it
    every time) left ``.o.parquet.XXXXXXXX.tmp`` beside the output, although the
    status was 143.  Its name is now known before the folder is made, as the
    temporary files' are."""
    pytest.importorskip("pyarrow")
    code = f"""
    import os, signal, sys
    sys.path.insert(0, {SRC!r})
    real = os.mkdir
    def mkdir(path, *a, **k):
        real(path, *a, **k)
        if os.path.basename(os.fsdecode(path)).startswith(".o.parquet."):
            os.kill(os.getpid(), signal.{sig})
    os.mkdir = mkdir
    from ltrboost.cli import main
    sys.exit(main(["convert", {str(data / "train.txt")!r}, "o.parquet", "-q"]))
    """
    done = _run_script(code, tmp_path)
    status = 128 + int(getattr(signal, sig))
    _one_line(done, status, "interrupted" if sig == "SIGINT" else f"terminated ({sig}")
    assert sorted(p.name for p in tmp_path.iterdir()) == []

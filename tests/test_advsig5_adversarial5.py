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


# ------------------------------------------ 1. SIGHUP: cleaned up as SIGTERM, status 129
_SIGNAL_AT_RENAME = """
import os, signal, sys
sys.path.insert(0, {src!r})
target = {target!r}
for name in ("replace", "rename"):
    real = getattr(os, name)
    def hook(src, dst, *a, _real=real, _name=name, **k):
        if os.path.basename(os.fsdecode(dst)) == target:
            setattr(os, _name, _real)
            os.kill(os.getpid(), signal.{sig})  # the handler runs before kill returns
        return _real(src, dst, *a, **k)
    setattr(os, name, hook)
from ltrboost.cli import main
sys.exit(main({argv!r}))
"""


def _commands(data: Path, model: Path, work: Path) -> dict[str, tuple[list[str], str]]:
    """Each command that writes a file or folder: its argv and its output's name."""
    return {
        "predict": (["predict", str(model), str(data / "test.txt"), "-o", "p.txt"], "p.txt"),
        "train": (["train", str(data / "train.txt"), "-o", "m.json", *FAST], "m.json"),
        "checkpoint": (
            ["train", str(data / "train.txt"), "-o", "m.json", *FAST, "--checkpoint-every", "1"],
            "m.json.checkpoint",
        ),
        "export": (["export", str(model), "-f", "lightgbm", "-o", "m.txt"], "m.txt"),
        "convert": (["convert", str(data / "train.txt"), "o.parquet", "-q"], "o.parquet"),
    }


@pytest.mark.parametrize("command", ["predict", "train", "checkpoint", "export", "convert"])
@pytest.mark.parametrize("sig", ["SIGHUP", "SIGTERM", "SIGINT"])
def test_signal_at_the_rename_of_the_output(data, model, tmp_path, command, sig):
    """SIGHUP (the terminal closed, an ssh session dropped) kept its default action,
    which ended the process at once: the hidden ``.OUT.XXXXXXXX.tmp`` file (convert's
    folder) that was about to be renamed over the output stayed beside it, and the
    exit status was the signal's, not a documented one.  It is now SIGTERM's case
    (cleanup, one line) with status 129; SIGTERM and SIGINT keep 143 and 130."""
    if command == "convert":
        pytest.importorskip("pyarrow")
    argv, out = _commands(data, model, tmp_path)[command]
    if command != "convert":
        (tmp_path / out).write_text(SENTINEL)
    code = _SIGNAL_AT_RENAME.format(src=SRC, target=out, sig=sig, argv=argv)
    done = _run_script(code, tmp_path)
    if command == "checkpoint":  # the sentinel is a checkpoint left there: warned of
        lines = done.stderr.splitlines()
        assert "m.json.checkpoint exists" in lines[0], done.stderr
        done.stderr = "\n".join(lines[1:])
    status = 128 + int(getattr(signal, sig))
    line = _one_line(done, status, "interrupted" if sig == "SIGINT" else f"terminated ({sig}")
    assert "none was left half-written" in line
    assert _hidden(tmp_path) == [], done.stderr
    if command == "convert":
        assert not (tmp_path / out).exists()
    else:
        assert (tmp_path / out).read_text() == SENTINEL


def test_sighup_ignored_by_nohup_is_kept(data, model, tmp_path):
    """``nohup ltrboost ...`` ignores SIGHUP: the command must go on and finish."""
    code = f"""
    import os, signal, sys
    sys.path.insert(0, {SRC!r})
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    from ltrboost.io import letor
    real = letor.load_svmlight
    def load(*a, **k):
        os.kill(os.getpid(), signal.SIGHUP)
        return real(*a, **k)
    letor.load_svmlight = load
    from ltrboost.cli import main
    rc = main(["predict", {str(model)!r}, {str(data / "test.txt")!r}, "-o", "p.txt"])
    print(rc, signal.getsignal(signal.SIGHUP) is signal.SIG_IGN)
    """
    done = _run_script(code, tmp_path)
    assert done.stdout.split() == ["0", "True"], done.stderr
    assert (tmp_path / "p.txt").read_text().count("\n") > 0


def test_signal_handlers_are_restored_after_the_cli(data, model, tmp_path):
    """The CLI's handling of SIGTERM and SIGHUP lasts for the call only."""
    before = signal.getsignal(signal.SIGHUP), signal.getsignal(signal.SIGTERM)
    assert main(["predict", str(model), str(data / "test.txt"), "-o", str(tmp_path / "p")]) == 0
    assert (signal.getsignal(signal.SIGHUP), signal.getsignal(signal.SIGTERM)) == before


# ------------------------------------- 2. a signal at the command's first imports
_SIGNAL_AT_IMPORT = """
import os, signal, sys
sys.path.insert(0, {src!r})
class Trigger:
    fired = False
    def find_spec(self, name, path=None, target=None):
        if name == {module!r} and not Trigger.fired:
            Trigger.fired = True
            os.kill(os.getpid(), signal.{sig})
        return None
sys.meta_path.insert(0, Trigger())
from ltrboost.cli import main
sys.exit(main({argv!r}))
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize(
    ("command", "module"),
    [("predict", "ltrboost.dataset"), ("train", "numpy"), ("inspect", "ltrboost.dataset")],
)
def test_signal_during_the_first_imports(data, model, tmp_path, command, module, sig):
    """Ctrl-C (or SIGTERM) right after the command was typed landed in the imports
    that ``_run`` makes before its ``try``: a KeyboardInterrupt traceback ending the
    process by SIGINT (status -2), or ``ltrboost.cli._Terminated`` as a traceback
    with status 1."""
    argv = {
        "predict": ["predict", str(model), str(data / "test.txt"), "-o", "p.txt"],
        "train": ["train", str(data / "train.txt"), "-o", "m.json", *FAST],
        "inspect": ["inspect", str(model)],
    }[command]
    code = _SIGNAL_AT_IMPORT.format(src=SRC, module=module, sig=sig, argv=argv)
    done = _run_script(code, tmp_path)
    status = 128 + int(getattr(signal, sig))
    _one_line(done, status, "interrupted" if sig == "SIGINT" else f"terminated ({sig}")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# ------------------------------------------ 3. a cleanup that fails after the signal
def test_cleanup_error_after_an_interrupt_is_still_the_interrupt(model, tmp_path):
    """An interrupt that lands inside an import can leave a half-imported package, and
    a cleanup importing it again (the background compiler's exit imports Numba) then
    failed with ``AttributeError: module 'coverage' has no attribute 'types'``: a
    traceback and status 1 for a SIGTERM (seen at 0.8 s into ``convert``).  An error
    raised while an interrupt is being handled ends the command as the interrupt."""
    code = f"""
    import sys
    sys.path.insert(0, {SRC!r})
    import ltrboost.cli as cli
    import ltrboost.cli.export as export
    def broken(args):
        try:
            raise KeyboardInterrupt
        finally:
            raise AttributeError("module 'coverage' has no attribute 'types'")
    export.cmd_inspect = broken
    sys.exit(cli.main(["inspect", {str(model)!r}]))
    """
    done = _run_script(code, tmp_path)
    _one_line(done, 130, "interrupted")


def test_background_compile_without_a_profile_imports_nothing(tmp_path):
    """``convert``'s background compiler (no kernels: no profile) imported the Numba
    layer on exit, where an interrupted first import made it fail (above)."""
    code = f"""
    import sys
    sys.path.insert(0, {SRC!r})
    from ltrboost._warmup import BackgroundCompile
    with BackgroundCompile(None):
        pass
    print(sorted(m for m in ("ltrboost._numba", "numba") if m in sys.modules))
    """
    done = _run_script(code, tmp_path)
    assert done.stdout.strip() == "[]", done.stderr


def test_convert_interrupted_while_numba_imports(data, tmp_path):
    """The case above end to end: Ctrl-C while the compile notice imports the Numba
    layer, whose next import fails (a half-imported package)."""
    pytest.importorskip("pyarrow")
    code = f"""
    import os, signal, sys
    sys.path.insert(0, {SRC!r})
    class Broken:
        calls = 0
        def find_spec(self, name, path=None, target=None):
            if name == "ltrboost._numba":
                Broken.calls += 1
                if Broken.calls == 1:
                    os.kill(os.getpid(), signal.SIGINT)
                raise ImportError("half-imported")
            return None
    sys.meta_path.insert(0, Broken())
    from ltrboost.cli import main
    sys.exit(main(["convert", {str(data / "train.txt")!r}, "o.parquet"]))
    """
    done = _run_script(code, tmp_path)
    _one_line(done, 130, "interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


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
    import ltrboost.cli.export as export
    def broken(args):
        try:
            raise KeyboardInterrupt
        finally:
            raise OSError(errno.EACCES, "Permission denied", "x.tmp")
    export.cmd_inspect = broken
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

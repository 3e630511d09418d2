"""Command-line interface: ``ltrboost train | predict | eval | export | cv |
inspect``.

The CLI has no logic of its own: each subcommand calls one public function.  Every
training parameter of :data:`ltrboost.params.PARAMS` is a flag spelled in kebab-case
(``--min-samples-leaf``), so the CLI and the Python API cannot drift apart.
Bad input exits with status 2 and one line ``ltrboost: error: FILE:LINE: problem`` on
stderr, never a traceback.  Ctrl-C exits with status 130 and writes nothing (SIGTERM:
143, SIGHUP: 129).

Start-up is kept short: importing this package loads neither Numba, the kernels,
scikit-learn nor tqdm.  Each command imports what it needs when it runs, and ``main``
adds the training flags (built from the plain parameter list :mod:`ltrboost.params`)
only to a subcommand that is actually parsed or whose help is printed, so
``ltrboost --help`` stays fast.

This module runs a command (:func:`main`): the process-wide part, the same for every
command (stdout and stderr, SIGTERM and SIGHUP, errors as one line and an exit
status).  The parser is :mod:`ltrboost.cli._parser`; what the commands share (the
checks of inputs and outputs, the readers, the rewording of errors) is
:mod:`ltrboost.cli._common`; each command is a module of its own (``train``,
``predict`` with ``eval``, ``export`` with ``inspect``, ``cv``, ``convert``,
``generate``, ``warmup``, ``clicks``, ``experiment``), imported only when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import sys
import warnings
from typing import Any, NoReturn

from ltrboost.cli._common import (
    _GAIN_COMMANDS,
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_HANGUP,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    STDOUT_CLOSED,
    _check_missing_tokens,
    _drop_unwritten,
    _error_as_flags,
    _refuse_output_over_input,
    _refuse_stdin_input,
    _refuse_stdout_output,
    _show_warning,
    _warning_text,
    _write_all,
)
from ltrboost.cli._parser import _repeated_flags, add_training_flags, build_parser

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_HANGUP",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "add_training_flags",
    "build_parser",
    "main",
    "query_folds",
]

# The public functions of the command modules, importable from here as before the
# CLI was a package (``from ltrboost.cli import query_folds``); each imports its
# module on first use.  Private names are not forwarded: a test that replaces one must
# replace it in the module whose code reads it (``ltrboost.cli.predict``).
_FORWARDED = {
    "query_folds": "cv",
    "checkpoint_path": "_common",
    "resolve_missing": "_common",
    "cmd_train": "train",
    "cmd_predict": "predict",
    "cmd_eval": "predict",
    "cmd_export": "export",
    "cmd_inspect": "export",
    "cmd_cv": "cv",
    "cmd_convert": "convert",
    "cmd_warmup": "warmup",
    "cmd_generate": "generate",
    "cmd_clicks_mine": "clicks",
    "cmd_clicks_dataset": "clicks",
    "cmd_clicks_simulate": "clicks",
    "cmd_experiment": "experiment",
}


def __getattr__(name: str) -> Any:
    module = _FORWARDED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def _background_compile(args: argparse.Namespace) -> Any:
    """A second process compiling the command's kernels on a first run (see
    :mod:`ltrboost._warmup`)."""
    from ltrboost._warmup import BackgroundCompile, command_profile

    objective = getattr(args, "objective", None)
    criterion = getattr(args, "split_criterion", None)
    bins = getattr(args, "quantized_gradients", None)
    strength = getattr(args, "random_strength", None)
    return BackgroundCompile(
        command_profile(
            args.command,
            objective if isinstance(objective, str) else None,
            criterion if isinstance(criterion, str) else None,
            bins if isinstance(bins, int) else None,
            float(strength) if isinstance(strength, (int, float)) else None,
        )
    )


class _Stdout:
    """``sys.stdout`` while a command runs: its write errors name ``stdout`` (``ltrboost:
    error: stdout: No space left on device`` behind ``> /dev/full``, not a bare
    ``[Errno 28] ...``), and a closed stdout (``>&-``, where Python's is None) is such an
    error too instead of an AttributeError traceback.  Anything else is the stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _call(self, name: str, *args: Any, on: Any = None) -> Any:
        if self._stream is None:
            raise self._closed()
        try:
            return getattr(self._stream if on is None else on, name)(*args)
        except BrokenPipeError:
            raise  # the reader left: main's own case
        except OSError as e:
            raise OSError(e.errno, e.strerror or str(e), "stdout") from None

    def write(self, text: str) -> int:
        raw = getattr(self._stream, "buffer", None)
        if not isinstance(raw, io.RawIOBase) or os.name != "posix":  # no "\r\n" to add
            return self._call("write", text)
        # PYTHONUNBUFFERED / python -u: the text layer writes straight to the file and
        # takes a short write (the kernel's, when the reader of a pipe leaves mid-text,
        # or a disk that fills) for the whole text, dropping the rest silently (predict
        # | head exited 0).  Write the bytes until all are written or the error shows.
        self._call("flush")
        data = text.encode(self._stream.encoding, self._stream.errors or "strict")
        _write_all(raw, data, write=lambda view: self._call("write", view, on=raw))
        return len(text)

    def flush(self) -> None:
        if self._stream is not None:  # nothing written to a closed stdout: no error
            self._call("flush")

    @property
    def buffer(self) -> Any:
        """The stream's binary layer (export's bytes); on a closed stdout the error every
        write gets, not the AttributeError that left export as a traceback."""
        if self._stream is None:
            raise self._closed()
        return self._stream.buffer

    @staticmethod
    def _closed() -> OSError:
        return OSError(errno.EBADF, STDOUT_CLOSED, "stdout")

    def drop_unwritten(self) -> None:
        """After a write error: :func:`_drop_unwritten` of the stream."""
        if self._stream is not None:
            _drop_unwritten(self._stream)

    def __getattr__(self, name: str) -> Any:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


class _Stderr:
    """``sys.stderr`` while a command runs: messages, warnings and the progress bar only,
    so a stderr that cannot take them (closed, ``2>&-``, where Python's is None; full,
    ``2>/dev/full``; a reader gone) loses them, not the command's work: tqdm's first
    write raised and ``train`` exited with status 1 and no model, and ``print(...,
    file=None)`` wrote the messages to stdout."""

    def __init__(self, stream: Any) -> None:
        self._devnull = open(os.devnull, "w", encoding="utf-8") if stream is None else None
        self._stream = stream if stream is not None else self._devnull

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except (OSError, ValueError):  # ValueError: a closed file object
            return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def close_devnull(self) -> None:
        if self._devnull is not None:
            self._devnull.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` (default ``sys.argv[1:]``) and return its exit status:
    the ``ltrboost`` program, and the same callable from Python (README: *From
    Python*): 2 for a bad command line too (its one line printed on stderr, as for any
    other error), 0 for ``--help`` and ``--version`` (printed on stdout); none of
    them raises ``SystemExit``.  The output goes to the current ``sys.stdout`` (any
    text stream: ``export -o -`` of a text format into an ``io.StringIO`` too), the
    messages to ``sys.stderr``; either may be None (closed, pythonw).  Nothing of the
    process is left changed: the streams, the SIGTERM/SIGHUP handlers, the warning
    filters, and stdout's file descriptor (after a reader that left or a write error
    only the text that could not be written is dropped)."""
    stderr = sys.stderr
    sys.stderr = messages = _Stderr(stderr)
    try:
        # from the first line on: Ctrl-C right after the command was typed lands in
        # the parser's or the command's first imports, outside _run's handlers
        with _signals_as_interrupt():
            try:
                return _main(argv)
            except KeyboardInterrupt as e:
                return _interrupted(e)
            except Exception as e:
                interrupt = _interrupt_behind(e)
                if interrupt is None:
                    raise
                return _interrupted(interrupt)
    finally:
        sys.stderr = stderr
        messages.close_devnull()


def _main(argv: list[str] | None) -> int:
    parser = build_parser(lazy=True)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        # the parser's end: a bad command line (its one line printed, status 2),
        # --help / --version (printed, 0), a stdout that could not take them (2, 141).
        # Returned as every other status is: from Python, main() raised SystemExit
        # for these alone; `python -m ltrboost` and the console script exit with it
        return _exit_status(e)
    vars(args).pop("_metric_flag", None)  # _MetricFlag's note of the first flag used
    metric_error = vars(args).pop("_metric_error", None)
    for text in _repeated_flags(vars(args).pop("_flags_given", {})):
        print(f"ltrboost: warning: {text}", file=sys.stderr)
    stdout = sys.stdout
    sys.stdout = _Stdout(stdout)
    try:
        return _run(args, metric_error)
    finally:
        sys.stdout = stdout


def _exit_status(e: SystemExit) -> int:
    """The exit status ``sys.exit`` would give for ``e``: its code when an int (the
    parser's are), 0 for None, 1 for anything else (after printing it on stderr, as
    Python does)."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    print(e.code, file=sys.stderr)
    return 1


class _Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a command, raised where the signal arrives, as Ctrl-C
    is; ``signum`` is the signal's number."""

    def __init__(self, signum: int = 15) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: Any) -> NoReturn:
    raise _Terminated(signum)


# Signals whose default action ends the process at once, without Python's cleanup:
# handled as Ctrl-C is.  SIGHUP: the terminal closed (an ssh session dropped).
_TERMINATING_SIGNALS = ("SIGTERM", "SIGHUP")


@contextlib.contextmanager
def _signals_as_interrupt():
    """SIGTERM (``kill``, a scheduler's time limit) and SIGHUP (the terminal closed)
    end a command as Ctrl-C does: the cleanup of every ``finally`` runs (convert's
    hidden folder, temporary files beside an output are removed) and the exit status
    is 128 + the signal (143, 129).  Their default action ended the process at once
    and left them behind.  Only while the command runs, only in the main thread, and
    only in place of the default action: a handler the calling program installed
    (``ltrboost_cli`` from Python), or an ignored SIGHUP (``nohup``), is kept."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    replaced = {}
    try:
        for name in _TERMINATING_SIGNALS:
            signum = getattr(signal, name, None)
            if signum is not None and signal.getsignal(signum) is signal.SIG_DFL:
                replaced[signum] = signal.SIG_DFL
                signal.signal(signum, _raise_terminated)
        yield
    finally:
        for signum, previous in replaced.items():
            signal.signal(signum, previous)


def _interrupt_behind(e: BaseException) -> KeyboardInterrupt | None:
    """The interrupt (Ctrl-C, SIGTERM, SIGHUP) during whose handling ``e`` was raised,
    if any: a cleanup that fails after an interrupt (an import the interrupt left
    half-done, imported again) is the interrupt's end, not an error to report."""
    seen = set()
    context = e.__context__
    while context is not None and id(context) not in seen:
        if isinstance(context, KeyboardInterrupt):
            return context
        seen.add(id(context))
        context = context.__context__
    return None


def _interrupted(e: KeyboardInterrupt) -> int:
    """The one line and the exit status of an interrupted command: 130 for Ctrl-C,
    128 + the signal for SIGTERM (143) and SIGHUP (129)."""
    import signal

    signum = e.signum if isinstance(e, _Terminated) else int(signal.SIGINT)
    if isinstance(e, _Terminated):
        what = f"terminated ({signal.Signals(signum).name})"
    else:
        what = "interrupted"
    print(
        f"ltrboost: {what}; files already written (e.g. checkpoints) are complete, none "
        "was left half-written",
        file=sys.stderr,
    )
    # A KeyboardInterrupt that left an exec() of a string (SciPy's array API shim
    # runs one at import) stays noted by CPython as unhandled, and `python -m`
    # then ends the process by SIGINT instead of this status; an exec() of a
    # string that completes clears the note.
    exec("pass")
    return 128 + signum


def _run(args: argparse.Namespace, metric_error: str | None = None) -> int:
    """Run the parsed command; errors as one line and an exit status (see main).
    ``metric_error``: :class:`_MetricFlag`'s, reported here as one line."""
    from ltrboost.dataset import LTRInputError
    from ltrboost.io.model_json import ModelFormatError

    try:
        if metric_error:
            raise ValueError(metric_error)
        _check_missing_tokens(args)
        _refuse_stdout_output(args)
        _refuse_stdin_input(args)
        _refuse_output_over_input(args)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning  # before _background_compile's imports
            with _background_compile(args):
                if getattr(args, "quiet", False):
                    rc = int(args.func(args) or 0)
                else:
                    from ltrboost._compile_notice import CompileNotice

                    with CompileNotice() as args.compile_notice:
                        rc = int(args.func(args) or 0)
                sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
                return rc
    except BrokenPipeError:
        # the reader of stdout left (`ltrboost inspect M --dump | head`): not an error
        # to report.  The text the failed write kept in stdout's buffer is dropped, so
        # that the interpreter's last flush has nothing to write and does not fail too;
        # the descriptor stays where it was.  (It was pointed at /dev/null for good: a
        # Python caller of main() then wrote into nothing for the rest of its process,
        # without an error, and each call left a descriptor of /dev/null open.)
        with contextlib.suppress(AttributeError):  # sys.stdout is _main's _Stdout
            sys.stdout.drop_unwritten()
        return EXIT_BROKEN_PIPE
    except (LTRInputError, ModelFormatError, ValueError, OSError) as e:
        if (interrupt := _interrupt_behind(e)) is not None:  # a cleanup's error
            return _interrupted(interrupt)
        if isinstance(e, OSError) and e.filename == "stdout":
            with contextlib.suppress(AttributeError):  # sys.stdout is main's _Stdout
                sys.stdout.drop_unwritten()
        msg = _error_as_flags(e)
        if isinstance(e, OSError) and e.filename:  # FILE: problem, like data errors
            msg = f"{e.filename}: {e.strerror}"
        if getattr(args, "command", None) in _GAIN_COMMANDS:  # the remedy as their flag
            msg = msg.replace("use gain='linear'", "use --gain linear")
        print(f"ltrboost: error: {msg}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Warning as e:
        # a warning raised as an error (python -W error, PYTHONWARNINGS=error): the
        # warning's line as an error line, the command stopped where it was raised (it
        # left as a traceback)
        if (interrupt := _interrupt_behind(e)) is not None:
            return _interrupted(interrupt)
        print(f"ltrboost: error: {_warning_text(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError as e:  # e.g. NumPy: "Unable to allocate 2.4 GiB for an array …"
        cli_message = getattr(e, "cli_message", None)
        if cli_message:  # a guard's refusal (predict --contrib): it says what and why
            print(f"ltrboost: error: {cli_message}", file=sys.stderr)
            return EXIT_BAD_INPUT
        detail = f": {e}" if str(e) else ""
        print(
            f"ltrboost: error: out of memory{detail}; the data or the settings need more "
            "memory than this process may use (README: Errors and guarantees)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as e:
        return _interrupted(e)

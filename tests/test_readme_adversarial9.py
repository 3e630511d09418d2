"""README promises checked against the code as a new user would (a ninth adversarial
pass, ``readme``): each test here failed on the code it was written against.

* ``ltrboost --version >&-`` (``--help``, ``train --help``): README says a closed
  standard output is ``ltrboost: error: stdout: closed (nowhere to write the output)``
  and status 2 "for every command that prints (and ``--help``, ``--version``)"; the
  text went to stderr instead and the status was 0 (Python's ``sys.stdout`` is None
  there, and argparse then writes to stderr).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
CLOSED = "ltrboost: error: stdout: closed (nowhere to write the output)"


def _cli_closed_stdout(argv: list[str]) -> subprocess.CompletedProcess:
    """``python -m ltrboost.cli ARGV >&-``, stderr captured."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = os.pathsep.join([SRC, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-m", "ltrboost.cli", *argv],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=lambda: os.close(1),  # the shell's >&-
    )


@pytest.mark.skipif(os.name != "posix", reason="closes file descriptor 1 (POSIX)")
@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["train", "--help"]])
def test_help_and_version_on_a_closed_stdout_are_one_error_line(argv):
    """``ltrboost --version >&-`` printed the version on stderr and exited 0; README
    (exit statuses) promises the closed-stdout error line and status 2, as
    ``> /dev/full`` gives."""
    run = _cli_closed_stdout(argv)
    assert (run.returncode, run.stderr.splitlines()) == (2, [CLOSED])

"""Standard output that cannot take the output, as a shell arranges it (a seventh
adversarial pass, from a differential test of the CLI): each command runs in a child
process whose file descriptor 1 is closed (``>&-``) or is ``/dev/full``.

* ``ltrboost export MODEL -f solr -o - >&-``: an ``AttributeError: buffer`` traceback
  and exit status 1 (every format, and ``--createmodel -``), where ``predict -o - >&-``
  says ``ltrboost: error: stdout: closed ...`` and exits 2.
* ``ltrboost predict|eval|inspect|cv|experiment ... > /dev/full``: the one error line,
  then Python's ``Exception ignored in: <_io.TextIOWrapper name='<stdout>' ...>
  OSError`` and exit status 120: the interpreter's last flush of stdout wrote the text
  the error had kept in the buffer and failed again.  (``python -u`` and ``export`` had
  nothing buffered and exited 2.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    os.name != "posix" or not Path("/dev/full").exists(), reason="needs POSIX and /dev/full"
)

SRC = str(Path(__file__).resolve().parents[1] / "src")
EXPORT_FORMATS = ("lightgbm", "xgboost", "xgboost-dump", "solr", "ranklib", "onnx")
CLOSED = "ltrboost: error: stdout: closed (nowhere to write the output)"
FULL = "ltrboost: error: stdout: No space left on device"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A small LETOR file, a model trained on it and a one-fold folder for experiment."""
    from ltrboost import train
    from ltrboost.dataset import make_dataset
    from ltrboost.io.letor import dump_svmlight

    root = tmp_path_factory.mktemp("stdoutfix")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = rng.integers(0, 3, size=60).astype(np.float64)
    qid = np.repeat(np.arange(6), 10)
    data = root / "small.txt"
    dump_svmlight(data, X, y, qid=qid)
    model = root / "m.json"
    params = dict(n_estimators=3, min_samples_leaf=2, max_leaf_nodes=4)
    train(params, make_dataset(X, y, qid=qid)).save_model(model)
    fold = root / "folds" / "Fold1"
    fold.mkdir(parents=True)
    for k, name in enumerate(("train", "vali", "test")):
        # other query ids per file: a test file of training queries is warned of
        dump_svmlight(fold / f"{name}.txt", X, y, qid=qid + 100 * k)
    return {"data": data, "model": model, "folds": root / "folds", "root": root}


def _argv(command: str, files: dict[str, Path], tmp_path: Path) -> list[str]:
    m, d = str(files["model"]), str(files["data"])
    x_json = tmp_path / "x.json"
    small = "-q --systems lambdamart --criteria se,ole --leaves 2 --learning-rates 0.1 "
    small += "--max-trees 2 --min-samples-leaf 2"
    cv = ["cv", d, "-q", "--folds", "2", "--n-estimators", "2", "--min-samples-leaf", "2"]
    return {
        "predict": ["predict", m, d, "-o", "-"],
        "eval": ["eval", m, d],
        "inspect": ["inspect", m],
        "inspect-json": ["inspect", m, "--json"],
        "inspect-dump": ["inspect", m, "--dump"],
        "cv": cv,
        "cv-json": [*cv, "--json"],
        "createmodel": ["export", m, "-f", "xgboost-dump", "-o", str(x_json), "--createmodel", "-"],
        "experiment": [
            "experiment",
            str(files["folds"]),
            "-o",
            str(tmp_path / "report"),
            *small.split(),
        ],
    }.get(command) or ["export", m, "-f", command, "-o", "-"]


STDOUT_COMMANDS = (
    "predict",
    "eval",
    "inspect",
    "inspect-json",
    "inspect-dump",
    "cv",
    "cv-json",
    "createmodel",
    "experiment",
    *EXPORT_FORMATS,
)


def _cli(argv: list[str], stdout: str, unbuffered: bool = False) -> subprocess.CompletedProcess:
    """``python -m ltrboost.cli ARGV`` with stdout closed (``stdout="closed"``) or on
    ``/dev/full``; stderr captured."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = os.pathsep.join([SRC, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    cmd = [sys.executable, "-m", "ltrboost.cli", *argv]
    if stdout == "closed":
        return subprocess.run(
            cmd,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=300,
            preexec_fn=lambda: os.close(1),  # the shell's >&-
        )
    with open("/dev/full", "w") as full:
        return subprocess.run(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=300,
        )


def _assert_one_line(run: subprocess.CompletedProcess, line: str) -> None:
    assert run.returncode == 2, run.stderr
    assert run.stderr.splitlines() == [line], run.stderr


@pytest.mark.parametrize("command", STDOUT_COMMANDS)
def test_a_closed_stdout_is_one_error_line(command, files, tmp_path):
    """``>&-``: export's formats crashed (``AttributeError: buffer``, status 1); each
    command that writes to stdout says ``stdout: closed`` and exits 2, and a file it
    writes beside stdout (``--createmodel -``'s model) is not written."""
    run = _cli(_argv(command, files, tmp_path), "closed")
    _assert_one_line(run, CLOSED)
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("command", STDOUT_COMMANDS)
def test_a_full_stdout_is_one_error_line_and_status_2(command, files, tmp_path):
    """``> /dev/full``: the error line, then Python's "Exception ignored in:
    <_io.TextIOWrapper name='<stdout>'> OSError" and status 120 (predict, eval, inspect,
    cv, experiment); now the line alone and status 2."""
    run = _cli(_argv(command, files, tmp_path), "full")
    _assert_one_line(run, FULL)
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("command", ["eval", "inspect-dump", "solr"])
def test_a_full_stdout_under_python_u_is_unchanged(command, files, tmp_path):
    """``PYTHONUNBUFFERED=1`` (nothing kept in a buffer) already exited 2: still so."""
    run = _cli(_argv(command, files, tmp_path), "full", unbuffered=True)
    _assert_one_line(run, FULL)


def test_a_failed_stdout_is_left_as_it_was_for_a_python_caller(files, capsys, monkeypatch):
    """``main`` called from Python (``ltrboost_cli``) on a full stdout: the text the
    failed write kept is dropped, so that the caller's next flush does not fail on it,
    and the stream's file descriptor still points where it did (not at /dev/null)."""
    from ltrboost.cli import main

    with open("/dev/full", "w") as full:
        monkeypatch.setattr(sys, "stdout", full)
        rc = main(["inspect", str(files["model"])])
        monkeypatch.undo()
        full.flush()  # raised OSError: the inspect text was still in the buffer
        assert os.path.samefile(f"/proc/self/fd/{full.fileno()}", "/dev/full")
    assert rc == 2
    assert capsys.readouterr().err.splitlines() == [FULL]


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["train", "--help"]])
def test_help_on_a_full_stdout_is_one_error_line(argv):
    """``ltrboost --help > /dev/full`` (``--version``, a command's ``--help``): exit
    status 120 after Python's "Exception ignored in: <_io.TextIOWrapper
    name='<stdout>'>"; now the error line of any other output, status 2."""
    _assert_one_line(_cli(argv, "full"), FULL)


def test_help_to_a_reader_that_left_is_141(tmp_path):
    """``ltrboost train --help | head -1`` where head has left before the interpreter's
    last flush: status 120 and "Exception ignored ... BrokenPipeError"; now 141 and
    nothing on stderr, as for a command's output (README: exit statuses)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = os.pathsep.join([SRC, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    read, write = os.pipe()
    os.close(read)  # the reader left before anything was written
    try:
        run = subprocess.run(
            [sys.executable, "-m", "ltrboost.cli", "train", "--help"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        os.close(write)
    assert (run.returncode, run.stderr) == (141, "")

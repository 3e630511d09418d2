"""README promises checked against the code as a new user would (a ninth adversarial
pass, ``readme``): each test here failed on the code it was written against.

* ``ltrboost --version >&-`` (``--help``, ``train --help``): README says a closed
  standard output is ``ltrboost: error: stdout: closed (nowhere to write the output)``
  and status 2 "for every command that prints (and ``--help``, ``--version``)"; the
  text went to stderr instead and the status was 0 (Python's ``sys.stdout`` is None
  there, and argparse then writes to stderr).
* ``ltrboost train --resume M`` with ``--unbiased false`` or ``--use-label-pairs true``
  on a model trained without those flags: README (checkpoint and resume) says "a flag
  ... given the model's default, is no difference"; it warned ``--unbiased False
  (model: None) differ from the model's``.  And resuming without the flag a model
  trained with ``--unbiased true`` (``--use-label-pairs false``) named the new rounds'
  value as ``None`` (``--use-label-pairs None (model: False)``), where README promises
  "naming each with the value its new rounds use": True (False for ``--unbiased``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
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


@pytest.fixture(scope="module")
def pairs_data(tmp_path_factory) -> dict[str, Path]:
    """A LETOR file with docids, a --pairs file over it, and its .position sidecar."""
    root = tmp_path_factory.mktemp("readme9")
    rng = np.random.default_rng(1)
    lines = []
    for q in range(6):
        for d in range(10):
            xs = " ".join(f"{k + 1}:{rng.normal():.3f}" for k in range(3))
            lines.append(f"{rng.integers(0, 2)} qid:{q} {xs} #docid = D{q}_{d}")
    data = root / "train.txt"
    data.write_text("\n".join(lines) + "\n")
    (root / "train.txt.position").write_text("".join(f"{d + 1}\n" for d in range(10)) * 6)
    pairs = root / "pairs.txt"
    pairs.write_text("0 D0_1 D0_2\n1 D1_3 D1_4 2.5\n")
    return {"data": data, "pairs": pairs, "root": root}


def _train(argv: list[str], capsys) -> list[str]:
    """``ltrboost train ARGV`` in this process; its warning lines."""
    from ltrboost.cli import main

    assert main(["train", *argv, "-q", "--min-samples-leaf", "2"]) == 0
    err = capsys.readouterr().err.splitlines()
    return [line for line in err if line.startswith("ltrboost: warning:")]


def _resume_warning(lines: list[str]) -> list[str]:
    return [line for line in lines if "differ from the model's" in line]


@pytest.mark.parametrize(
    ("objective", "flag", "default"),
    [("lambdamart", "--unbiased", "false"), ("ranknet", "--use-label-pairs", "true")],
)
def test_resume_with_a_boolean_flag_given_its_default_is_no_difference(
    objective, flag, default, pairs_data, tmp_path, capsys
):
    """``--unbiased false`` / ``--use-label-pairs true`` are the default (None): resuming
    a model trained without the flag warned ``--unbiased False (model: None) differ``."""
    d = pairs_data
    extra = ["--objective", objective]
    if objective == "ranknet":
        extra += ["--pairs", str(d["pairs"])]
    model = tmp_path / "m.json"
    _train([str(d["data"]), "-o", str(model), "--n-estimators", "2", *extra], capsys)
    out = tmp_path / "m2.json"
    argv = [str(d["data"]), "--resume", str(model), "-o", str(out), "--n-estimators", "3"]
    assert _resume_warning(_train([*argv, *extra, flag, default], capsys)) == []


@pytest.mark.parametrize(
    ("objective", "flag", "given", "now"),
    [
        ("lambdamart", "--unbiased", "true", "--unbiased False (model: True)"),
        ("ranknet", "--use-label-pairs", "false", "--use-label-pairs True (model: False)"),
    ],
)
def test_resume_warning_names_the_value_the_new_rounds_use(
    objective, flag, given, now, pairs_data, tmp_path, capsys
):
    """A model trained with ``--use-label-pairs false`` resumed without the flag: the
    new rounds use the label pairs (True), and the warning said ``None``."""
    d = pairs_data
    extra = ["--objective", objective]
    if objective == "ranknet":
        extra += ["--pairs", str(d["pairs"])]
    model = tmp_path / "m.json"
    _train([str(d["data"]), "-o", str(model), "--n-estimators", "2", *extra, flag, given], capsys)
    out = tmp_path / "m2.json"
    argv = [str(d["data"]), "--resume", str(model), "-o", str(out), "--n-estimators", "3"]
    (warning,) = _resume_warning(_train([*argv, *extra], capsys))
    assert now in warning, warning

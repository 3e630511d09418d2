"""The CLI as a package (``ltrboost.cli``, one module per command): the ways of running
it that ``cli.py`` had, and the laziness the split promises (``--help`` and each
command import no other command's module)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ltrboost
from ltrboost.cli import build_parser

SRC = Path(ltrboost.__file__).resolve().parents[1]
COMMAND_MODULES = (
    "train",
    "predict",
    "export",
    "cv",
    "convert",
    "generate",
    "warmup",
    "clicks",
    "experiment",
)


def _python(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    env["LTRBOOST_BACKGROUND_COMPILE"] = "0"
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_python_m_ltrboost_cli_still_runs_the_cli(tmp_path):
    """``python -m ltrboost.cli`` ran cli.py's ``if __name__ == "__main__"``; a package
    runs only its ``__main__`` module ("'ltrboost.cli' is a package and cannot be
    directly executed", status 1)."""
    done = _python(["-m", "ltrboost.cli", "--version"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"ltrboost {ltrboost.__version__}\n"
    done = _python(["-m", "ltrboost.cli", "generate", "-"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("ltrboost: error: generate writes several files"), done.stderr


def _modules_after(code: str, tmp_path: Path) -> list[str]:
    script = (
        "import contextlib, io, json, sys\n"
        "from ltrboost.cli import main\n"
        "out, err = io.StringIO(), io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
        "    try:\n"
        f"        {code}\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ltrboost.cli.'))))\n"
    )
    done = _python(["-c", script], tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_help_imports_no_command_module(tmp_path):
    loaded = _modules_after("main(['--help'])", tmp_path)
    assert loaded == ["ltrboost.cli._common", "ltrboost.cli._parser"]


@pytest.mark.parametrize(
    ("argv", "module"),
    [
        (["generate", "-"], "generate"),
        (["inspect", "no-such-model.json"], "export"),
        (["eval", "no-such-model.json", "d.txt"], "predict"),
        (["clicks", "simulate", "no-such-data.txt", "-o", "log.tsv"], "clicks"),
    ],
)
def test_a_command_imports_its_own_module_only(argv, module, tmp_path):
    loaded = _modules_after(f"main({argv!r})", tmp_path)
    commands = [m.rsplit(".", 1)[1] for m in loaded if not m.rsplit(".", 1)[1].startswith("_")]
    assert commands == [module]


def _commands(parser) -> list[tuple[str, object]]:
    """``(command words, func)`` of every (sub)command of ``parser``."""
    import argparse

    found = []
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        nested = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if nested:
            found += [(f"{name} {words}", f) for words, f in _commands(p)]
        else:
            found.append((name, p.get_default("func")))
    return found


def test_every_command_runs_a_function_of_its_own_module():
    """The parser names each command's function by module and name (imported when it
    runs): a misspelt name would fail only when that command is run."""
    from ltrboost.cli._parser import _Command

    commands = _commands(build_parser())
    assert len(commands) == 13
    for words, func in commands:
        assert isinstance(func, _Command), words
        assert func.module in COMMAND_MODULES, words
        assert func.name == "cmd_" + words.replace(" ", "_"), words
        fn = getattr(importlib.import_module(f"ltrboost.cli.{func.module}"), func.name)
        assert callable(fn), words
    modules = {f.module for _, f in commands}
    assert modules == set(COMMAND_MODULES)


def test_public_names_are_forwarded_and_private_ones_are_not():
    """``from ltrboost.cli import query_folds`` (and the cmd_* functions) still work;
    a private name is not forwarded, so that a test that replaces one on the package
    (which no command reads) fails instead of silently testing nothing."""
    import ltrboost.cli as cli
    import ltrboost.cli.cv as cv
    import ltrboost.cli.predict as predict

    assert cli.query_folds is cv.query_folds
    assert cli.cmd_eval is predict.cmd_eval
    for name in ("_read_for_model", "_PREDICT_BLOCK_BYTES", "_eval_streamed", "_Checkpoint"):
        with pytest.raises(AttributeError, match=name):
            getattr(cli, name)

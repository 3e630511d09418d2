"""Float flags given numbers a float cannot hold, and the background-compile helper's
exit handler, over many calls of ``ltrboost.cli.main`` (a ninth adversarial pass).

* ``--random-strength 1e400`` (any float flag of any command, a JSON number of
  ``--tau`` / ``--label-scale``, a value of experiment's ``--learning-rates`` or
  ``--system-grid``) was reported as ``--random-strength=inf must be ...``: the user
  typed 1e400 and read "inf".  ``1e-400`` underflowed to 0 and read
  ``--learning-rate=0.0 must be > 0`` (or, where 0 is allowed, silently switched the
  parameter off: ``--random-strength 1e-400`` trained without noise).  ``inf`` / ``nan``
  typed as such keep their messages.
* ``--random-strength -inf`` (``-nan``, ``-Infinity``) read "argument --random-strength:
  expected one argument": a value that begins with ``-`` and no digit was taken for a
  flag.
* ``--l2-regularization -0`` recorded ``"l2_regularization": -0.0`` in the model file, a
  file different from ``0``'s for the same model.
* ``--label-scale '{"1": Infinity}'`` under an objective that ignores it passed every
  check, trained, then failed at the model's write with a bare ``Out of range float
  values are not JSON compliant``.
* Each background-compile helper registered an ``atexit`` handler that was never
  removed: a long-lived process calling ``main`` on a cold cache gathered one per call.
"""

from __future__ import annotations

import argparse
import atexit
import math
from pathlib import Path

import pytest

from ltrboost import _warmup
from ltrboost.cli import main
from ltrboost.cli._parser import build_parser
from ltrboost.params import BoosterParams


def _float_flags() -> list[tuple[tuple[str, ...], str]]:
    """(command path, flag) of every flag of every command whose value is one float."""
    found = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*path, name))
            elif action.option_strings and callable(action.type):
                try:
                    half, two = action.type("0.5"), action.type("2")
                except Exception:
                    continue
                if isinstance(half, float) and half == 0.5 and isinstance(two, float):
                    found.append((path, max(action.option_strings, key=len)))

    walk(build_parser(), ())
    return found


FLOAT_FLAGS = _float_flags()


def test_the_float_flags_are_found() -> None:
    flags = {(" ".join(path), flag) for path, flag in FLOAT_FLAGS}
    for expected in [
        ("train", "--learning-rate"),
        ("train", "--random-strength"),
        ("train", "--l2-regularization"),
        ("cv", "--sigma"),
        ("eval", "--relevance-threshold"),
        ("clicks simulate", "--eta"),
        ("clicks simulate", "--noise"),
    ]:
        assert expected in flags
    assert len(FLOAT_FLAGS) >= 30


def _error(argv: list[str], capsys) -> str:
    status = main(argv)
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("ltrboost: error: "), err
    return err


def _failed(argv: list[str], capsys) -> str:
    """The one-line error of a command that fails (status 2) after parsing."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if not x.startswith("ltrboost: warning: ")]
    assert len(lines) == 1, err
    assert lines[0].startswith("ltrboost: error: "), err
    return lines[0]


@pytest.mark.parametrize("value", ["1e400", "-1e400", "9e308", " 2e308"])
@pytest.mark.parametrize(("path", "flag"), FLOAT_FLAGS, ids=lambda x: str(x))
def test_an_overflowing_value_is_quoted_as_typed(capsys, path, flag, value) -> None:
    err = _error([*path, flag, value], capsys)
    assert flag in err
    assert repr(value) in err
    assert "out of a float's range" in err
    assert "inf" not in err


@pytest.mark.parametrize("value", ["1e-400", "-1e-400", "5e-325", ".1_2e-999"])
@pytest.mark.parametrize(("path", "flag"), FLOAT_FLAGS, ids=lambda x: str(x))
def test_a_value_that_underflows_to_zero_is_quoted_as_typed(capsys, path, flag, value) -> None:
    """``--learning-rate 1e-400`` read "--learning-rate=0.0 must be > 0"."""
    err = _error([*path, flag, value], capsys)
    assert flag in err
    assert repr(value) in err
    assert "too small for a float" in err
    assert "0.0" not in err


def _positionals(path: tuple[str, ...]) -> list[str]:
    return {
        ("train",): ["t.txt"],
        ("cv",): ["t.txt"],
        ("eval",): ["m.json", "t.txt"],
        ("clicks", "simulate"): ["t.txt", "-o", "log.txt"],
    }[path]


def _dest(path: tuple[str, ...], flag: str) -> str:
    parser = build_parser()
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return next(a.dest for a in parser._actions if flag in a.option_strings)


@pytest.mark.parametrize(("path", "flag"), FLOAT_FLAGS, ids=lambda x: str(x))
def test_negative_zero_is_zero(path, flag) -> None:
    """``--l2-regularization -0`` recorded -0.0 in the model file (0's file differed)."""
    namespace = build_parser().parse_args([*path, *_positionals(path), flag, "-0"])
    value = getattr(namespace, _dest(path, flag))
    assert value == 0.0
    assert math.copysign(1.0, value) == 1.0


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0.0000e-999999", 0.0),
        ("0e400", 0.0),
        ("1_000", 1000.0),
        (" 1", 1.0),
        ("+.5e1", 5.0),
        ("5e-324", 5e-324),
    ],
)
def test_what_python_reads_as_a_float_is_still_read(text, value) -> None:
    namespace = build_parser().parse_args(["train", "t.txt", "--random-strength", text])
    assert namespace.random_strength == value


def test_a_hex_float_is_refused_as_before(capsys) -> None:
    err = _error(["train", "t.txt", "--learning-rate", "0x1p3"], capsys)
    assert "argument --learning-rate: invalid float value: '0x1p3'" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "t.txt", "--learning-rate", "inf"], "--learning-rate=inf must be finite"),
        (["train", "t.txt", "--random-strength", "-inf"], "--random-strength=-inf must be"),
        (["cv", "t.txt", "--sigma", "nan"], "--sigma=nan must be finite"),
        (["cv", "t.txt", "--sigma", "-NaN"], "--sigma=nan must be finite"),
        (["train", "t.txt", "--decay", "Infinity"], "--decay=inf must be finite"),
        (["eval", "m", "t", "--relevance-threshold", "inf"], "--relevance-threshold inf must"),
        (["clicks", "simulate", "t", "-o", "l", "--noise", "INF"], "--noise inf must be in"),
        (["train", "t.txt", "--tau", "Infinity"], "--tau=inf must hold finite real numbers"),
        (["train", "t.txt", "--label-scale", "[NaN]"], "--label-scale=[nan] must hold finite"),
    ],
)
def test_inf_and_nan_typed_as_such_keep_their_messages(capsys, argv, message) -> None:
    assert message in _failed(argv, capsys)


@pytest.mark.parametrize(
    ("flag", "text", "number"),
    [
        ("--tau", "1e400", "1e400"),
        ("--tau", "[0.5, -1E+999]", "-1E+999"),
        ("--label-scale", '{"1": 1e400}', "1e400"),
        ("--label-scale", "[1, 1e400]", "1e400"),
    ],
)
def test_an_overflowing_json_number_is_quoted_as_typed(capsys, flag, text, number) -> None:
    for objective in ("lambdamart", "gbrank", "logistic_rank"):
        err = _error(["train", "t.txt", "--objective", objective, flag, text], capsys)
        assert flag in err
        assert repr(number) in err
        assert "out of a float's range" in err
        assert "inf" not in err


def test_an_underflowing_json_number_is_quoted_as_typed(capsys) -> None:
    """``--objective gbrank --tau 1e-400`` read "--tau=0.0 must be a positive finite
    number"."""
    err = _error(["train", "t.txt", "--objective", "gbrank", "--tau", "1e-400"], capsys)
    assert "--tau" in err
    assert "'1e-400'" in err
    assert "0.0" not in err
    namespace = build_parser().parse_args(["train", "t.txt", "--tau", "[-0.0, 0.0e-999]"])
    assert [math.copysign(1.0, v) for v in namespace.tau] == [1.0, 1.0]


def test_an_infinite_scale_of_an_ignored_label_scale_is_refused_before_training(
    capsys, tmp_path
) -> None:
    """Refused by the parameter check, as a list's: it trained, then failed writing the
    model with a bare "Out of range float values are not JSON compliant"."""
    with pytest.raises(ValueError, match=r"label_scale=\{'1': inf\} must hold finite real"):
        BoosterParams(label_scale={"1": math.inf}).validate()
    out = tmp_path / "m.json"
    data = tmp_path / "t.txt"  # never read: the check runs first
    err = _failed(["train", str(data), "-o", str(out), "--label-scale", '{"1": Infinity}'], capsys)
    assert "--label-scale={'1': inf} must hold finite real numbers" in err
    assert not out.exists()


def _experiment_folder(tmp_path: Path) -> Path:
    fold = tmp_path / "letor" / "Fold1"
    fold.mkdir(parents=True)
    for name in ("train.txt", "vali.txt", "test.txt"):
        (fold / name).write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    return tmp_path / "letor"


@pytest.mark.parametrize(
    ("flags", "number", "problem"),
    [
        (["--learning-rates", "0.1,1e400"], "1e400", "out of a float's range"),
        (["--system-grid", "lambdamart=10:0.1,1e400"], "1e400", "out of a float's range"),
        (["--learning-rates", "1e-400"], "1e-400", "too small for a float"),
    ],
)
def test_experiment_grid_numbers_are_quoted_as_typed(
    capsys, tmp_path, flags, number, problem
) -> None:
    folder = _experiment_folder(tmp_path)
    argv = ["experiment", str(folder), "-o", str(tmp_path / "r"), "-q", *flags]
    err = _failed(argv, capsys)
    assert flags[0] in err
    assert repr(number) in err
    assert problem in err
    assert "inf" not in err
    assert "0.0" not in err
    assert not (tmp_path / "r").exists()


# --------------------------------------------------------------- atexit handlers


class _FakeHelper:
    def __init__(self, *args, **kwargs) -> None:
        import io

        self.stdin, self.stdout, self.done = io.BytesIO(), io.BytesIO(b""), False

    def poll(self):
        return 0 if self.done else None

    def terminate(self) -> None:
        self.done = True

    def wait(self, timeout=None) -> int:
        return 0


def test_many_calls_on_a_cold_cache_leave_at_most_one_exit_handler(
    monkeypatch, capsys, tmp_path
) -> None:
    handlers: list = []
    monkeypatch.setattr(atexit, "register", lambda fn, *a, **k: handlers.append(fn) or fn)
    monkeypatch.setattr(atexit, "unregister", lambda fn: _remove(handlers, fn))
    monkeypatch.setenv(_warmup.ENV_SWITCH, "1")
    monkeypatch.setattr(_warmup, "_first_kernel_uncached", lambda profile: True)
    monkeypatch.setattr(_warmup, "_can_fork", lambda: False)
    monkeypatch.setattr(_warmup.subprocess, "Popen", _FakeHelper)
    from ltrboost import _numba

    monkeypatch.setattr(_numba, "_warned_uncached", False)
    monkeypatch.setattr(_numba, "_UNCACHED_REASON", None)
    started = []
    real_start = _warmup.BackgroundCompile._start

    def start(self, name):
        real_start(self, name)
        started.append(self.process)

    monkeypatch.setattr(_warmup.BackgroundCompile, "_start", start)
    for _ in range(5):  # the command fails (no model file) after the helper started
        assert main(["predict", str(tmp_path / "none.json"), str(tmp_path / "x"), "-q"]) == 2
    capsys.readouterr()
    assert len(started) == 5
    assert all(p is not None and p.done for p in started)
    assert len(handlers) <= 1


def _remove(handlers: list, fn) -> None:
    handlers[:] = [h for h in handlers if h != fn]

"""First-run compilation in a second process (ltrboost._warmup, issue 12 goal 1).

No timing assertions: what is checked is that every manifest entry still names a kernel
and parses, that a cache warmed from the manifest leaves a command nothing to compile
(so the manifest matches what the commands compile), that the helper process starts
once, is switched off where it cannot help and is stopped with the command, and that a
model trained while it runs is the model trained without it, byte for byte.
"""

from __future__ import annotations

import inspect
import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import pytest

import ltrboost
from ltrboost import _warmup
from ltrboost.objectives.registry import available_objectives

SRC = Path(ltrboost.__file__).resolve().parents[1]


def _env(tmp_path: Path, cache: str, background: str = "0") -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / cache))
    env[_warmup.ENV_SWITCH] = background
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    return env


def _run(args: list[str], env: dict) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc


# Runs CLI commands in one process and prints how many kernels it compiled.
_COMMANDS = """
import json, sys
from ltrboost._numba import compile_stats
from ltrboost.cli import main
for command in json.loads(sys.argv[1]):
    assert main(command) == 0, command
print(compile_stats()["kernels"])
"""


def _readme_commands(data: Path, model: Path) -> list[list[str]]:
    train = [
        "train", str(data / "train.txt"), "--valid", str(data / "vali.txt"), "--objective",
        "lambdamart", "--n-estimators", "20", "--learning-rate", "0.1", "--max-leaf-nodes",
        "31", "--early-stopping-rounds", "30", "--metric", "ndcg@10", "--output", str(model),
        "--quiet",
    ]  # fmt: skip
    test = str(data / "test.txt")
    return [train, ["eval", str(model), test], ["predict", str(model), test, "-o", "-"]]


def _compiled_by(commands: list[list[str]], env: dict) -> int:
    proc = _run([sys.executable, "-c", _COMMANDS, json.dumps(commands)], env)
    return int(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- the manifest
def test_manifest_names_kernels_with_parsable_signatures() -> None:
    profiles = _warmup.load_manifest()
    expected = {f"train:{o}" for o in available_objectives()}
    expected |= {f"train:{o}+ole" for o in _warmup.OLE_PROFILE_OBJECTIVES}
    assert expected | {"eval", "predict"} <= set(profiles)
    for name, entries in profiles.items():
        assert entries, name
        for module, function, types_text in entries:
            dispatcher = getattr(__import__(module, fromlist=[function]), function)
            assert hasattr(dispatcher, "compile"), (name, module, function)
            sig = _warmup.signature(types_text)
            params = inspect.signature(dispatcher.py_func).parameters
            assert len(sig) == len(params), (name, function)


@pytest.mark.parametrize(
    ("argv", "profile"),
    [
        (["train", "x.txt"], "train:lambdamart"),
        (["train", "x.txt", "--split-criterion", "ole"], "train:lambdamart+ole"),
        (["train", "x.txt", "--objective", "rankboost", "--split-criterion", "ole"],
         "train:rankboost+ole"),
        (["train", "x.txt", "--objective", "mcrank", "--split-criterion", "ole"], "train:mcrank"),
    ],
)  # fmt: skip
def test_cli_picks_the_ole_profile(argv, profile) -> None:
    from ltrboost.cli import _background_compile, build_parser

    args = build_parser(lazy=False).parse_args(argv)
    assert _background_compile(args).profile == profile


def test_command_profiles() -> None:
    assert _warmup.command_profile("train", None) == "train:lambdamart"
    assert _warmup.command_profile("train", "ranknet") == "train:ranknet"
    assert _warmup.command_profile("cv", "mart") == "train:mart"
    assert _warmup.command_profile("train", None, "ole") == "train:lambdamart+ole"
    assert _warmup.command_profile("train", "yetirank", "ole") == "train:yetirank+ole"
    # a pointwise objective's OLE split is its Newton split: the plain profile
    assert _warmup.command_profile("train", "mart", "ole") == "train:mart"
    assert _warmup.command_profile("train", "ranknet", "newton") == "train:ranknet"
    assert set(_warmup.OLE_PROFILE_OBJECTIVES) <= set(available_objectives())
    assert _warmup.command_profile("eval") == "eval"
    assert _warmup.command_profile("predict") == "predict"
    assert _warmup.command_profile("generate") is None


def test_warmup_rejects_an_unknown_profile(capsys) -> None:
    from ltrboost.cli import main

    assert main(["warmup", "train:nonsense"]) != 0
    assert "unknown profile 'train:nonsense'" in capsys.readouterr().err


def test_warmup_has_a_profile_for_every_objective() -> None:
    """README documents ``train:OBJECTIVE``; qbrank's was refused as if misspelt, then
    as needing a --pairs file, which it does not (it trains on label pairs)."""
    known = _warmup.profile_names()
    assert {f"train:{o}" for o in available_objectives()} <= set(known)


def test_helper_stops_where_the_command_got_first() -> None:
    last = _warmup.load_manifest()["predict"][-1][1]
    counts = _warmup.compile_profile("predict", reverse=True, stop_when_met=True, taken={last})
    assert counts == {"compiled": 0, "loaded": 0, "skipped": 0}


def test_helper_meets_the_command_then_compiles_the_next_commands_kernels(monkeypatch) -> None:
    """The helper compiles the command's own kernels last first until it meets the
    command (a kernel the command started, or a cache hit after compiling), then the
    next command's kernels (``later``), which the command itself never waits for."""
    started: list[str] = []
    cached = {"k2"}  # found in the cache: a compilation by the command, say

    class Dispatcher:
        def __init__(self, name: str) -> None:
            self.name = name
            self.stats = SimpleNamespace(cache_hits={})

        def compile(self, sig) -> None:
            if self.name in cached:
                self.stats.cache_hits[sig] = 1

    fake = SimpleNamespace(**{f"k{i}": Dispatcher(f"k{i}") for i in range(8)})
    monkeypatch.setitem(sys.modules, "fake_kernels", fake)
    entries = [["fake_kernels", f"k{i}", "(int64,)"] for i in range(8)]
    manifest = {"profiles": {"train:x": entries}, "later": {"train:x": 2}}
    monkeypatch.setattr(_warmup, "_load", lambda: manifest)

    def report(what: str, name: str) -> None:
        if what == "start":
            started.append(name)

    # own kernels k0..k5 backwards; k2 is a cache hit after compilations: met there
    counts = _warmup.compile_profile(
        "train:x", reverse=True, stop_when_met=True, taken=set(), report=report
    )
    assert started == ["k5", "k4", "k3", "k2", "k6", "k7"]
    assert counts == {"compiled": 5, "loaded": 1, "skipped": 0}
    # the command has started k4: the helper stops before it, and skips what it took
    started.clear()
    _warmup.compile_profile(
        "train:x", reverse=True, stop_when_met=True, taken={"k4", "k7"}, report=report
    )
    assert started == ["k5", "k6"]
    # in the foreground (``ltrboost warmup``) everything, in the command's order
    started.clear()
    _warmup.compile_profile("train:x", report=report)
    assert started == [f"k{i}" for i in range(8)]


def test_train_profiles_say_which_kernels_are_the_next_commands() -> None:
    for name in _warmup.load_manifest():
        n = _warmup.later_count(name)
        if name.startswith("train:"):
            later = [e[1] for e in _warmup.load_manifest()[name][-n:]] if n else []
            assert 0 < n < len(_warmup.load_manifest()[name]), name
            assert "_predict_raw_rows" in later, name  # eval predicts from the model
        else:
            assert n == 0, name


# ---------------------------------------------------------------- the helper process
class _FakeProcess:
    started: ClassVar[list] = []

    def __init__(self, cmd, env, **kwargs) -> None:
        self.cmd, self.env, self.terminated = cmd, env, False
        self.stdin = io.BytesIO()
        self.stdout = io.BytesIO(b"start _ap_queries\nend _ap_queries\n")
        _FakeProcess.started.append(self)

    def poll(self):
        return None if not self.terminated else -15

    def terminate(self) -> None:
        self.terminated = True

    def wait(self, timeout=None) -> int:
        return -15


def test_helper_starts_once_at_the_first_compilation_and_stops_with_the_command(
    monkeypatch,
) -> None:
    monkeypatch.setenv(_warmup.ENV_SWITCH, "1")
    monkeypatch.setattr(_warmup, "_first_kernel_uncached", lambda profile: False)
    monkeypatch.setattr(_warmup, "_cgroup_cpu_quota", lambda: None)  # not the host's quota
    monkeypatch.setattr(_warmup, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(_warmup.subprocess, "Popen", _FakeProcess)
    _FakeProcess.started = []
    with _warmup.BackgroundCompile("train:lambdamart") as bg:
        from ltrboost._numba import _monitor

        assert bg in _monitor.listeners
        bg.compile_started("_scan_letor")
        bg.compile_started("_fill_rows")
        assert len(_FakeProcess.started) == 1
        proc = _FakeProcess.started[0]
        assert proc.cmd[1:4] == ["-m", "ltrboost._warmup", "train:lambdamart"]
        assert proc.cmd[4:] == ["--background", "--parent", str(os.getpid())]
        assert proc.env[_warmup.ENV_SWITCH] == "0"  # the helper starts no helper
        assert str(SRC) in proc.env["PYTHONPATH"].split(os.pathsep)
        # every kernel this process starts is named to the helper, which then skips it
        assert proc.stdin.getvalue() == b"_scan_letor\n_fill_rows\n"
    assert proc.terminated
    assert bg not in _monitor.listeners


@pytest.mark.parametrize(
    ("switch", "cpus", "busy", "profile", "started"),
    [
        ("0", 4, 0, "eval", False),
        ("off", 4, 0, "eval", False),
        ("1", 4, 0, None, False),  # a command without a profile
        ("1", 4, 0, "x", False),  # a profile the manifest lacks
        ("auto", 1, 0, "eval", False),  # one CPU
        ("", 2, 1, "eval", False),  # another job keeps one of two cores busy
        ("auto", 2, 0, "eval", True),
        ("", 8, 6, "eval", True),
        ("", 8, None, "eval", True),  # not known (not Linux)
        ("1", 1, 9, "eval", True),  # forced
    ],
)
def test_helper_starts_only_where_it_can_help(
    monkeypatch, switch, cpus, busy, profile, started
) -> None:
    monkeypatch.setenv(_warmup.ENV_SWITCH, switch)
    monkeypatch.setattr(_warmup, "_first_kernel_uncached", lambda profile: False)
    monkeypatch.setattr(_warmup, "_cgroup_cpu_quota", lambda: None)  # not the host's quota
    monkeypatch.setattr(_warmup, "_usable_cpus", lambda: cpus)
    monkeypatch.setattr(_warmup, "_other_runnable_tasks", lambda: busy)
    monkeypatch.setattr(_warmup.subprocess, "Popen", _FakeProcess)
    _FakeProcess.started = []
    with _warmup.BackgroundCompile(profile) as bg:
        from ltrboost._numba import _monitor

        if bg in _monitor.listeners:
            bg.compile_started("_scan_letor")
    assert bool(_FakeProcess.started) == started


@pytest.mark.parametrize("fork", [False, True])
def test_on_a_cold_cache_the_helper_starts_with_the_command(monkeypatch, fork) -> None:
    """Before anything compiles: forked where it may be (the fork itself is tested
    below), spawned otherwise; the kernels the command then starts are named to it."""
    monkeypatch.setenv(_warmup.ENV_SWITCH, "1")
    monkeypatch.setattr(_warmup, "_first_kernel_uncached", lambda profile: True)
    monkeypatch.setattr(_warmup, "_cgroup_cpu_quota", lambda: None)  # not the host's quota
    monkeypatch.setattr(_warmup, "_usable_cpus", lambda: 2)
    monkeypatch.setattr(_warmup, "_can_fork", lambda: fork)
    monkeypatch.setattr(_warmup.subprocess, "Popen", _FakeProcess)
    forked = []

    def fake_fork(profile):
        forked.append(profile)
        return _FakeProcess(None, None)

    monkeypatch.setattr(_warmup._ForkedHelper, "start", staticmethod(fake_fork))
    _FakeProcess.started = []
    with _warmup.BackgroundCompile("train:lambdamart") as bg:
        assert len(_FakeProcess.started) == 1  # started on entering, nothing compiled yet
        proc = _FakeProcess.started[0]
        assert forked == (["train:lambdamart"] if fork else [])
        assert proc.stdin.getvalue() == b""
        bg.compile_started("_fill_rows")
        assert proc.stdin.getvalue() == b"_fill_rows\n"
    assert len(_FakeProcess.started) == 1
    assert proc.terminated


def test_a_cold_cache_is_the_first_kernels_missing_index(monkeypatch, tmp_path) -> None:
    index = tmp_path / "reader.nbi"
    cache = SimpleNamespace(_cache_file=SimpleNamespace(_index_path=str(index)))
    module = SimpleNamespace(reader=SimpleNamespace(_cache=cache), plain=object())
    monkeypatch.setitem(sys.modules, "fake_kernels", module)
    manifest = {
        "p": [["fake_kernels", "reader", "()"], ["fake_kernels", "plain", "()"]],
        "q": [["fake_kernels", "plain", "()"]],  # no cache to look at (NUMBA_DISABLE_JIT)
        "r": [["no_such_module", "reader", "()"]],
    }
    monkeypatch.setattr(_warmup, "load_manifest", lambda: manifest)
    assert _warmup._first_kernel_uncached("p")
    index.write_bytes(b"")
    assert not _warmup._first_kernel_uncached("p")
    for unknown in ("q", "r", "not a profile"):  # not known: wait for a compilation
        assert not _warmup._first_kernel_uncached(unknown)
    # Numba's private API as used on the real manifest (were it to change, a cold cache
    # would be seen only at the first compilation: this test says so)
    from ltrboost.io import letor

    real = letor._scan_letor._cache._cache_file._index_path
    assert os.path.basename(real).startswith("letor._scan_letor-")
    assert real.endswith(".nbi")
    monkeypatch.undo()
    assert _warmup.load_manifest()["eval"][0][1] == "_scan_letor"
    assert _warmup._first_kernel_uncached("eval") == (not os.path.exists(real))


def _fork_with(monkeypatch, run) -> _warmup._ForkedHelper:
    monkeypatch.setattr(_warmup, "_run_background", run)
    helper = _warmup._ForkedHelper.start("p")
    assert helper is not None
    assert helper.pid != os.getpid()
    return helper


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_forked_helper_speaks_the_helpers_protocol_and_exits(monkeypatch, tmp_path) -> None:
    """A real fork running compile_profile on a manifest of one real entry and two
    that fail (a gone kernel, wrong types): "start"/"end" for each, last entry first,
    then it exits by itself with status 0."""
    manifest = tmp_path / "kernels.json"
    manifest.write_text(json.dumps({"profiles": {"p": [
        ["ltrboost.tree", "_add_leaf_values_serial", _entry_types("_add_leaf_values_serial")],
        ["ltrboost.io.letor", "_no_such_kernel", "()"],
        ["ltrboost.io.letor", "_fill_rows", "()"],
    ]}}))  # fmt: skip
    monkeypatch.setattr(_warmup, "MANIFEST", str(manifest))
    helper = _warmup._ForkedHelper.start("p")
    assert helper is not None
    lines = helper.stdout.read().decode().splitlines()  # until the helper exits
    assert helper.wait(timeout=60) == 0
    assert lines == [
        f"{what} {name}"
        for name in ("_fill_rows", "_no_such_kernel", "_add_leaf_values_serial")
        for what in ("start", "end")
    ]
    helper.stdin.close()
    helper.stdout.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_forked_helper_never_returns_into_the_command(monkeypatch) -> None:
    def fail(*args):
        raise RuntimeError("boom")

    helper = _fork_with(monkeypatch, fail)
    assert helper.stdout.read() == b""
    assert helper.wait(timeout=60) == 1  # os._exit(1): not this test going on twice
    assert helper.poll() == 1

    helper = _fork_with(monkeypatch, lambda *args: time.sleep(120))
    assert helper.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        helper.wait(timeout=0.05)
    helper.terminate()
    assert helper.wait(timeout=60) == -15
    helper.kill()  # already gone: nothing happens


def _entry_types(name: str) -> str:
    manifest = _warmup.load_manifest()
    return next(e[2] for p in manifest.values() for e in p if e[1] == name)


def test_cache_lookup_waits_for_the_helper_and_looks_again(monkeypatch) -> None:
    from ltrboost import _numba

    class Cache:
        def __init__(self) -> None:
            self.calls = 0

        def load_overload(self, sig, target_context):
            self.calls += 1
            return None if self.calls == 1 else "compiled by the helper"

    def kernel():
        pass

    dispatcher = SimpleNamespace(_cache=Cache(), py_func=kernel)
    _numba._wait_for_cache_entries(dispatcher)
    asked = []
    monkeypatch.setattr(_numba, "_cache_waiter", lambda name: asked.append(name) or True)
    assert dispatcher._cache.load_overload(None, None) == "compiled by the helper"
    assert asked == ["kernel"]
    dispatcher._cache.calls = 0
    monkeypatch.setattr(_numba, "_cache_waiter", lambda name: False)  # helper never had it
    assert dispatcher._cache.load_overload(None, None) is None
    assert dispatcher._cache.calls == 1


def test_wait_for_returns_when_the_helper_has_finished_the_kernel() -> None:
    from ltrboost import _numba

    bg = _warmup.BackgroundCompile("eval")
    read, write = os.pipe()
    with os.fdopen(read, "rb") as stream, os.fdopen(write, "wb") as out:
        listener = threading.Thread(target=bg._listen, args=(stream,))
        listener.start()
        out.write(b"start _err_queries\n")
        out.flush()
        with bg._changed:
            bg._changed.wait_for(lambda: bg._busy == "_err_queries", timeout=30)
        seen = []

        def started(name: str) -> None:  # the wait has begun: let the helper finish
            seen.append(("started", name))
            out.write(b"end _err_queries\n")
            out.flush()

        listener_ = SimpleNamespace(
            compile_started=started,
            compile_finished=lambda name, seconds: seen.append(("finished", name)),
        )
        _numba.add_compile_listener(listener_)
        try:
            assert bg.wait_for("_err_queries") is True
        finally:
            _numba.remove_compile_listener(listener_)
        # the wait is shown as a compilation (the notice, the progress bar's clock)
        assert seen == [("started", "_err_queries"), ("finished", "_err_queries")]
        assert bg._busy is None
        assert bg.wait_for("_ap_queries") is False  # not one of the helper's: no wait
    listener.join(timeout=30)
    assert not listener.is_alive()


# ---------------------------------------------------------------- end to end (subprocesses)
def test_warmed_cache_leaves_readme_commands_nothing_to_compile_and_the_helper_changes_no_model(
    tmp_path: Path,
) -> None:
    """``ltrboost warmup`` (the manifest, compiled in the foreground) into an empty cache:
    README's train, eval and predict then compile nothing, i.e. the manifest is what
    these commands compile.  Then a cold cache with the helper on: the same model file;
    train compiled only part of its own kernels (the helper did the others), and eval at
    most the kernels the helper keeps for after its meeting with train (``later_count``;
    how many it finished before train ended depends on the machine: README's train
    leaves it time for all, this tiny one may not)."""
    data = tmp_path / "data"
    env = _env(tmp_path, "warmed")
    _run([sys.executable, "-m", "ltrboost", "generate", str(data), "--n-queries", "30",
          "--docs-per-query", "12", "--n-features", "6"], env)  # fmt: skip
    proc = _run([sys.executable, "-m", "ltrboost", "warmup", "train:lambdamart"], env)
    assert "train:lambdamart: " in proc.stderr
    assert " compiled" in proc.stderr
    assert _compiled_by(_readme_commands(data, tmp_path / "a.json"), env) == 0

    env = _env(tmp_path, "cold", background="1")
    train, evaluate, _ = _readme_commands(data, tmp_path / "b.json")
    n_train = _compiled_by([train], env)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    later = _warmup.later_count("train:lambdamart")
    assert n_train < len(_warmup.load_manifest()["train:lambdamart"]) - later
    assert _compiled_by([evaluate], env) <= later

"""Memory budgets and signals, a ninth adversarial pass: the README's promises about
memory refusals (one line naming the file, the shape and the bytes; nothing
half-written) and about Ctrl-C / SIGTERM during the commands that write files (status
130 / 143, no partial output, temporary files removed, an existing output intact),
checked with hostile timings; and a resumed Unbiased LambdaMART model's warning.

Signals are sent by the process to itself from a hook at the exact moment (as in
``test_advsig5_adversarial5``), so that no test depends on timing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ltrboost.cli import main
from ltrboost.io.letor import dump_svmlight

SRC = str(Path(__file__).resolve().parents[1] / "src")
FAST = ["-q", "--n-estimators", "3", "--min-samples-leaf", "5", "--max-leaf-nodes", "4"]
SENTINEL = "previous output\n"


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    _out, err = capsys.readouterr()
    return rc, err


# ------------------------------------- 1. resuming an unbiased model without --unbiased


@pytest.fixture(scope="module")
def clicks(tmp_path_factory) -> Path:
    """Binary clicks with each query's display positions 1..5 shuffled."""
    folder = tmp_path_factory.mktemp("memsig_clicks")
    rng = np.random.default_rng(3)
    n_queries, n_docs = 40, 5
    X = rng.normal(size=(n_queries * n_docs, 3))
    y = (rng.random(n_queries * n_docs) < 0.3).astype(int)
    qid = np.repeat(np.arange(n_queries), n_docs)
    pos = np.concatenate([rng.permutation(n_docs) + 1 for _ in range(n_queries)])
    train = folder / "clicks.txt"
    dump_svmlight(str(train), X, y, qid=qid)
    (folder / "clicks.txt.position").write_text("".join(f"{p}\n" for p in pos))
    return train


@pytest.mark.parametrize(
    "flags",
    [
        ["--max-positions", "10"],
        ["--position-bias-norm", "1"],
        ["--max-positions", "10", "--position-bias-norm", "1"],
    ],
)
@pytest.mark.parametrize("unbiased", [[], ["--unbiased", "false"]])
def test_resume_unbiased_model_without_unbiased_names_only_unbiased(
    clicks, tmp_path, capsys, flags, unbiased
):
    """A model trained with ``--unbiased true --max-positions 10`` resumed without
    ``--unbiased`` warned ``--max-positions None (model: 10)``: the new rounds do not
    use that parameter at all (giving it without ``--unbiased true`` is an error), so
    the warning named a value no new round uses.  Only ``--unbiased`` differs."""
    first = tmp_path / "m.json"
    base = ["train", clicks, "--min-samples-leaf", "5", "-q"]
    rc, err = run([*base, "-o", first, "--n-estimators", "2", "--unbiased", "true", *flags], capsys)
    assert rc == 0, err
    rc, err = run(
        [*base, "-o", tmp_path / "m2.json", "--n-estimators", "3", "--resume", first, *unbiased],
        capsys,
    )
    assert rc == 0, err
    resume = [line for line in err.splitlines() if "--resume" in line]
    assert len(resume) == 1, err
    assert "--unbiased False (model: True)" in resume[0]
    assert "--max-positions" not in resume[0]
    assert "--position-bias-norm" not in resume[0]


# ------------------------------------------- 2. a signal between the renames of a set
pytestmark_posix = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")


def _run_script(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
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
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*"))


# the signal is sent by the process to itself just before the rename whose target's
# name is ``target`` (the handler runs before os.kill returns)
_SIGNAL_AT_RENAME = """
import os, signal, sys
sys.path.insert(0, {src!r})
target = {target!r}
for name in ("replace", "rename"):
    real = getattr(os, name)
    def hook(src, dst, *a, _real=real, _name=name, **k):
        if os.path.basename(os.fsdecode(dst)) == target:
            setattr(os, _name, _real)
            os.kill(os.getpid(), signal.{sig})
        return _real(src, dst, *a, **k)
    setattr(os, name, hook)
from ltrboost.cli import main
sys.exit(main({argv!r}))
"""


def _at_rename(cwd: Path, target: str, sig: str, argv: list[str]) -> subprocess.CompletedProcess:
    code = _SIGNAL_AT_RENAME.format(src=SRC, target=target, sig=sig, argv=[str(a) for a in argv])
    return _run_script(code, cwd)


def _status(sig: str) -> tuple[int, str]:
    return 128 + int(getattr(signal, sig)), "interrupted" if sig == "SIGINT" else sig


@pytest.fixture(scope="module")
def letor(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("memsig") / "d"
    argv = ["generate", str(folder), "--n-queries", "12", "--docs-per-query", "8"]
    assert main([*argv, "--n-features", "4"]) == 0
    return folder


@pytest.fixture(scope="module")
def model(letor: Path) -> Path:
    path = letor.parent / "m.json"
    assert main(["train", str(letor / "train.txt"), "-o", str(path), *FAST]) == 0
    return path


@pytestmark_posix
@pytest.mark.parametrize("second", ["vali.txt", "test.txt"])
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_generate_interrupted_between_its_renames_is_all_or_none(tmp_path, sig, second):
    """``generate`` writes its three files "all or none": a signal after train.txt was
    renamed into place, before vali.txt was, left the folder with the new train.txt
    beside the previous run's vali.txt and test.txt (a set of splits from two seeds,
    and queries shared between them), with status 143 and "none was left
    half-written".  The set is now renamed into place as one: all new or all old."""
    out = tmp_path / "data"
    out.mkdir()
    names = ("train.txt", "vali.txt", "test.txt")
    for name in names:
        (out / name).write_text(SENTINEL)
    argv = ["generate", out, "--n-queries", "6", "--docs-per-query", "4", "--n-features", "3"]
    done = _at_rename(tmp_path, second, sig, argv)
    status, words = _status(sig)
    _one_line(done, status, words)
    old = [(out / name).read_text() == SENTINEL for name in names]
    assert old in ([True] * 3, [False] * 3), old
    assert _hidden(tmp_path) == []


@pytestmark_posix
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_generate_new_folder_interrupted_between_its_renames(tmp_path, sig):
    """The same into a new folder: train.txt alone stayed in it."""
    out = tmp_path / "data"
    argv = ["generate", out, "--n-queries", "6", "--docs-per-query", "4", "--n-features", "3"]
    done = _at_rename(tmp_path, "vali.txt", sig, argv)
    status, words = _status(sig)
    _one_line(done, status, words)
    held = sorted(p.name for p in out.iterdir()) if out.exists() else []
    assert held in ([], ["test.txt", "train.txt", "vali.txt"]), held
    assert _hidden(tmp_path) == []


@pytestmark_posix
def test_export_with_createmodel_interrupted_between_its_renames(model, tmp_path):
    """``export -f xgboost-dump -o M --createmodel C`` writes two files, all or none."""
    (tmp_path / "m.txt").write_text(SENTINEL)
    (tmp_path / "c.json").write_text(SENTINEL)
    argv = ["export", model, "-f", "xgboost-dump", "-o", "m.txt", "--createmodel", "c.json"]
    done = _at_rename(tmp_path, "c.json", "SIGTERM", argv)
    _one_line(done, 143, "SIGTERM")
    old = [(tmp_path / n).read_text() == SENTINEL for n in ("m.txt", "c.json")]
    assert old in ([True, True], [False, False]), old
    assert _hidden(tmp_path) == []


@pytestmark_posix
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_atomic_write_files_signal_between_renames(tmp_path, sig):
    """:func:`atomic_write_files` itself (``clicks dataset``'s CLICKS and
    CLICKS.position, export, generate): a signal landing after the first rename
    and before the last."""
    code = f"""
    import os, signal, sys
    sys.path.insert(0, {SRC!r})
    from ltrboost.io._atomic import atomic_write_files
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        def term(signum, frame):
            raise SystemExit(143)
        signal.signal(signal.SIGTERM, term)
    real = os.replace
    def hook(src, dst, *a, **k):
        if os.path.basename(os.fsdecode(dst)) == "b":
            os.kill(os.getpid(), signal.{sig})
        return real(src, dst, *a, **k)
    os.replace = hook
    try:
        atomic_write_files([("a", b"new a"), ("b", b"new b"), ("c", b"new c")])
    except (KeyboardInterrupt, SystemExit):
        print("interrupted")
    print([open(n).read() for n in "abc"])
    """
    for name in "abc":
        (tmp_path / name).write_text("old")
    done = _run_script(code, tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.split("\n")
    assert lines[0] == "interrupted", done.stdout
    assert lines[1] in ("['old', 'old', 'old']", "['new a', 'new b', 'new c']"), done.stdout
    assert _hidden(tmp_path) == []


# -------------------------------------------- 3. convert onto an empty output folder
@pytestmark_posix
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_convert_interrupted_at_its_rename_keeps_an_empty_output_folder(letor, tmp_path, sig):
    """``convert`` into an existing empty folder removed that folder and then renamed
    its finished hidden folder to its name: a signal between the two left neither
    (the user's folder, its mode, gone with "none was left half-written")."""
    pytest.importorskip("pyarrow")
    out = tmp_path / "o.parquet"
    out.mkdir()
    out.chmod(0o750)
    done = _at_rename(tmp_path, "o.parquet", sig, ["convert", letor / "train.txt", out, "-q"])
    status, words = _status(sig)
    _one_line(done, status, words)
    assert out.is_dir()
    assert _hidden(tmp_path) == []
    if not any(out.iterdir()):  # the previous, empty folder, as it was
        assert (out.stat().st_mode & 0o777) == 0o750


# ------------------------------------------ 4. experiment: its report, all or none
@pytest.fixture(scope="module")
def folds(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("memsig_folds") / "folds"
    argv = ["generate", str(folder / "Fold1"), "--n-queries", "20", "--docs-per-query", "10"]
    assert main([*argv, "--n-features", "5", "--random-state", "1"]) == 0
    return folder


_XIA_REPORT = ("iterations.csv", "final_loss.csv", "table.md", "paired.json", "paired.md")
_QBRANK_REPORT = ("table.md", "dcg5.csv", "results.json")


@pytestmark_posix
@pytest.mark.parametrize(
    ("protocol", "target"),
    [("xia", "table.md"), ("xia", "paired.md"), ("qbrank", "dcg5.csv"), ("qbrank", "results.json")],
)
def test_experiment_interrupted_while_writing_its_report(folds, tmp_path, protocol, target):
    """A signal while ``experiment`` wrote its report files one after the other left
    some of them (``table.md`` of this run beside a previous run's ``paired.md``, or
    alone in a new folder), with "none was left half-written".  The finished cells
    (the checkpoints) stay; the report is now all new or all as it was."""
    argv = ["experiment", folds, "-o", "rep", "--max-trees", "2", "-q"]
    argv += ["--min-samples-leaf", "2", "--protocol", protocol]
    if protocol == "xia":
        argv += ["--systems", "lambdamart", "--leaves", "4", "--learning-rates", "0.1"]
    done = _at_rename(tmp_path, target, "SIGTERM", argv)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 143, done.stderr
    # (qbrank's GBT(L1) warns that its every label is one grade: the protocol's point)
    assert "terminated (SIGTERM)" in done.stderr.strip().splitlines()[-1], done.stderr
    names = _XIA_REPORT if protocol == "xia" else _QBRANK_REPORT
    held = [(tmp_path / "rep" / n).exists() for n in names]
    assert held in ([False] * len(names), [True] * len(names)), held
    assert any((tmp_path / "rep" / ("cells" if protocol == "xia" else "folds")).iterdir())
    assert _hidden(tmp_path) == []


# ----------------------------------------------- 5. a model file too large to read
def _no_memory(*args, **kwargs):
    raise MemoryError  # as json.loads, bytes + bytes, str.decode raise it: no words


@pytest.mark.parametrize("command", ["predict", "eval", "export", "inspect"])
def test_cli_model_file_out_of_memory_names_the_file(model, tmp_path, monkeypatch, capsys, command):
    """A model file too large to read under the memory this process may use (1.6 GB
    of JSON under ``ulimit -v 2500000``) ended ``ltrboost: error: out of memory; the
    data or the settings need more memory ...``: no file, no size, although the README
    promises memory errors that name what is over what (the data files' do)."""
    from ltrboost.io import model_json

    monkeypatch.setattr(model_json, "model_fields_from_json", _no_memory)
    test = model.parent / "d" / "test.txt"
    argv = {
        "predict": ["predict", model, test, "-o", tmp_path / "p.txt"],
        "eval": ["eval", model, test],
        "export": ["export", model, "-f", "lightgbm", "-o", tmp_path / "m.txt"],
        "inspect": ["inspect", model],
    }[command]
    rc, err = run(argv, capsys)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    size = model.stat().st_size
    assert lines[0].startswith(f"ltrboost: error: {model}: out of memory reading the model"), err
    assert f"{size} bytes" in lines[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_python_model_file_out_of_memory_is_a_memory_error_naming_the_file(model, monkeypatch):
    """``ltrboost.load_model`` too: a ``MemoryError`` (as before) whose words name the
    file and its size (it had none)."""
    from ltrboost.io import model_json
    from ltrboost.model import load_model

    monkeypatch.setattr(model_json, "model_fields_from_json", _no_memory)
    with pytest.raises(MemoryError, match="out of memory reading the model file") as info:
        load_model(model)
    assert str(model) in str(info.value)
    assert info.value.path == str(model)
    assert info.value.nbytes == model.stat().st_size

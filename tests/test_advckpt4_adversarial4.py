"""Files training writes while it runs: ``--checkpoint-every``'s OUTPUT.checkpoint when
it is a link (to the output, to the resumed model, to a file elsewhere), and what a
failed write says about the file that was there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ltrboost.cli import main
from ltrboost.datasets import make_ranking
from ltrboost.io._atomic import atomic_write_text
from ltrboost.model import load_model

POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="symbolic links and modes")


@pytest.fixture(scope="module")
def letor(tmp_path_factory) -> Path:
    X, y, qid = make_ranking(n_queries=20, docs_per_query=(4, 8), n_features=4, random_state=0)
    path = tmp_path_factory.mktemp("d") / "train.txt"
    with open(path, "w") as f:
        for xi, yi, qi in zip(X, y, qid, strict=True):
            feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(xi))
            f.write(f"{int(yi)} qid:{qi} {feats}\n")
    return path


def _train(letor: Path, out: Path, rounds: int, *extra) -> list[str]:
    return ["train", str(letor), "-q", "-o", str(out), "--n-estimators", str(rounds), *extra]


def _one_line_error(rc: int, err: str, needle: str) -> None:
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("ltrboost: error: ")
    assert needle in lines[0], err


@POSIX_ONLY
@pytest.mark.parametrize("output_exists", [True, False])
def test_a_checkpoint_link_to_the_output_is_refused(letor, tmp_path, capsys, output_exists):
    """OUTPUT.checkpoint -> OUTPUT: every checkpoint replaced the previous complete
    model at the output with a partial one (README: a killed run never replaces it)."""
    out = tmp_path / "m.json"
    if output_exists:
        assert main(_train(letor, out, 2)) == 0
        before = out.read_bytes()
    Path(str(out) + ".checkpoint").symlink_to("m.json")
    capsys.readouterr()
    rc = main(_train(letor, out, 4, "--checkpoint-every", "1"))
    _one_line_error(rc, capsys.readouterr().err, "OUTPUT.checkpoint is the same file as --output")
    if output_exists:
        assert out.read_bytes() == before
    else:
        assert not out.exists()


@POSIX_ONLY
def test_a_checkpoint_link_to_the_resumed_model_is_refused(letor, tmp_path, capsys):
    """--resume old.json --output new.json with new.json.checkpoint -> old.json: the
    checkpoints replaced old.json, which the user did not name as an output."""
    old = tmp_path / "old.json"
    assert main(_train(letor, old, 2)) == 0
    before = old.read_bytes()
    new = tmp_path / "new.json"
    Path(str(new) + ".checkpoint").symlink_to("old.json")
    capsys.readouterr()
    rc = main(_train(letor, new, 4, "--resume", str(old), "--checkpoint-every", "1"))
    _one_line_error(rc, capsys.readouterr().err, "names an input of this command (resume")
    assert old.read_bytes() == before
    assert not new.exists()


def test_resuming_the_checkpoint_with_checkpoints_is_still_allowed(letor, tmp_path, capsys):
    """The documented way to continue a killed run: --resume OUTPUT.checkpoint, with
    checkpoints again (they replace the file resumed from, which is the point)."""
    out = tmp_path / "m.json"
    ck = Path(str(out) + ".checkpoint")
    assert main(_train(letor, ck, 2)) == 0
    rc = main(_train(letor, out, 4, "--resume", str(ck), "--checkpoint-every", "1"))
    capsys.readouterr()
    assert rc == 0
    assert load_model(out).n_iterations == 4
    assert not ck.exists()


@POSIX_ONLY
def test_a_checkpoint_link_elsewhere_leaves_no_stale_checkpoint(letor, tmp_path, capsys):
    """OUTPUT.checkpoint -> a file on another disk: the checkpoints go there (the link is
    followed) and, once the output is written, that file is removed and the link kept;
    the link was removed and the last checkpoint left behind, a full copy of the model."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    out = tmp_path / "m.json"
    link = Path(str(out) + ".checkpoint")
    link.symlink_to(scratch / "ck.json")
    assert main(_train(letor, out, 4, "--checkpoint-every", "1")) == 0
    capsys.readouterr()
    assert load_model(out).n_iterations == 4
    assert list(scratch.iterdir()) == []
    assert link.is_symlink()
    # and a second run writes through the link again
    assert main(_train(letor, out, 3, "--checkpoint-every", "1")) == 0
    capsys.readouterr()
    assert list(scratch.iterdir()) == []
    assert link.is_symlink()


@POSIX_ONLY
def test_resuming_through_a_link_to_the_output_keeps_the_output(letor, tmp_path, capsys):
    """--resume OUTPUT.checkpoint where that is a link to OUTPUT (resume M --output M):
    removing the checkpoint after the run must not remove the model just written."""
    out = tmp_path / "m.json"
    assert main(_train(letor, out, 2)) == 0
    link = Path(str(out) + ".checkpoint")
    link.symlink_to("m.json")
    assert main(_train(letor, out, 3, "--resume", str(link))) == 0
    capsys.readouterr()
    assert load_model(out).n_iterations == 3


def test_a_failed_new_file_does_not_claim_a_previous_file(tmp_path, monkeypatch):
    """A write error for an output that did not exist said "the previous file is
    intact"; there was none."""

    def full(fd, *a, **k):
        raise OSError(28, "No space left on device")

    path = tmp_path / "new.txt"
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="nothing was written") as info:
        atomic_write_text(path, "x")
    assert "previous file" not in str(info.value)
    assert "new.txt" in str(info.value)
    assert list(tmp_path.iterdir()) == []
    old = tmp_path / "old.txt"
    monkeypatch.undo()
    old.write_text("keep")
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="the previous file is intact"):
        atomic_write_text(old, "x")
    assert old.read_text() == "keep"
    assert list(tmp_path.iterdir()) == [old]


# --------------------------------------- an interrupt between two steps of a write
# SIGTERM and Ctrl-C raise where the interpreter next looks at its signals: after a
# long fsync that is the next Python call, which was outside every cleanup (observed:
# one SIGTERM in six into a checkpoint-every-round run left .m.json.checkpoint.*.tmp,
# although README promises SIGTERM removes temporary files).


def _interrupt_when(monkeypatch, obj, name, when):
    real = getattr(obj, name)

    def wrapper(*args, **kwargs):
        result = real(*args, **kwargs)
        if when(*args):
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(obj, name, wrapper)


def _is_temp(path, *rest) -> bool:
    return str(path).endswith(".tmp")


@pytest.mark.parametrize("moment", ["after_create", "after_fsync"])
@pytest.mark.parametrize("existing", [True, False])
def test_an_interrupt_anywhere_in_a_write_leaves_no_temporary_file(
    tmp_path, monkeypatch, moment, existing
):
    import ltrboost.io._atomic as atomic

    path = tmp_path / "m.json"
    if existing:
        path.write_text("previous")
    if moment == "after_create":  # the file exists, its name not yet returned
        _interrupt_when(monkeypatch, os, "open", _is_temp)
    else:  # the temporary file is complete, the rename not begun
        _interrupt_when(monkeypatch, atomic._Staged, "__init__", lambda self, *a: True)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(path, "new")
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["m.json"] if existing else [])
    if existing:
        assert path.read_text() == "previous"


def test_an_interrupt_in_a_several_file_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    import ltrboost.io._atomic as atomic

    calls = []

    def second(self, *a, **k):
        calls.append(1)
        return len(calls) == 2

    _interrupt_when(monkeypatch, atomic._Staged, "__init__", second)
    with pytest.raises(KeyboardInterrupt):
        atomic.atomic_write_files([(tmp_path / "a", b"a"), (tmp_path / "b", b"b")])
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_while_checking_the_output_leaves_no_temporary_file(tmp_path, monkeypatch):
    from ltrboost.io._atomic import check_output

    _interrupt_when(monkeypatch, os, "open", _is_temp)
    with pytest.raises(KeyboardInterrupt):
        check_output(tmp_path / "m.json")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_sigterm_at_a_checkpoint_leaves_the_last_checkpoint_and_no_temporary_file(
    letor, tmp_path, capsys, monkeypatch
):
    import ltrboost.io._atomic as atomic
    from ltrboost.cli import _Terminated

    out = tmp_path / "m.json"
    real = atomic._Staged.__init__
    calls = []

    def third_write(self, *args, **kwargs):
        real(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == 3:
            raise _Terminated

    monkeypatch.setattr(atomic._Staged, "__init__", third_write)
    rc = main(_train(letor, out, 6, "--checkpoint-every", "1"))
    monkeypatch.undo()
    assert rc == 143, capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json.checkpoint"]
    assert load_model(str(out) + ".checkpoint").n_iterations == 2


@POSIX_ONLY
def test_a_checkpoint_is_no_more_readable_than_the_output_it_stands_for(
    letor, tmp_path, capsys, monkeypatch
):
    """A private model (chmod 600) got a world-readable OUTPUT.checkpoint (0o644 under
    the usual umask) beside it for the whole run, a full copy of the model."""
    import stat

    import ltrboost.cli.train as cli

    out = tmp_path / "m.json"
    assert main(_train(letor, out, 2)) == 0
    out.chmod(0o600)
    modes = []
    real = cli._Checkpoint.__call__

    def recording(self, env):
        real(self, env)
        modes.append(stat.S_IMODE(os.stat(self.path).st_mode))

    monkeypatch.setattr(cli._Checkpoint, "__call__", recording)
    old_mask = os.umask(0o022)
    try:
        assert main(_train(letor, out, 3, "--checkpoint-every", "1")) == 0
        capsys.readouterr()
        assert modes == [0o600] * 3
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
        # a new output: the checkpoint gets the umask's mode, as the output will
        new = tmp_path / "new.json"
        modes.clear()
        assert main(_train(letor, new, 2, "--checkpoint-every", "1")) == 0
        capsys.readouterr()
        assert modes == [0o644] * 2
    finally:
        os.umask(old_mask)

"""Adversarial pass 5 over ``ltrboost train --resume``: the training inputs a model
file does not hold (the ``--pairs`` file, the ``--position`` file, and for a
checkpoint the training file).  Each change used to continue the model silently on
other data; the model (or checkpoint) now records a content fingerprint of them
(``training_inputs``) and a resumed run that gives other files warns, naming the flag
and both files.  Each test marked "failed before" failed on the old code."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

import ltrboost.cli.train as cli
from ltrboost.io.model_schema import ModelFormatError
from ltrboost.model import load_model, model_from_json
from test_cli import run

QB = ["--objective", "qbrank", "-q", "--min-samples-leaf", "3", "--max-leaf-nodes", "4"]


def _letor(path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(1, 21):
        for d in range(8):
            x = " ".join(f"{i + 1}:{v:.3f}" for i, v in enumerate(rng.random(4)))
            lines.append(f"{rng.integers(0, 3)} qid:{q} {x} # docid = d{q}_{d}")
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("advresume6")
    _letor(folder / "train.txt", 0)
    _letor(folder / "other.txt", 1)  # the same queries, documents and shape
    a = "".join(f"{q} d{q}_0 d{q}_1\n{q} d{q}_2 d{q}_3\n" for q in range(1, 21))
    b = "".join(f"{q} d{q}_1 d{q}_0\n{q} d{q}_4 d{q}_5\n" for q in range(1, 21))
    (folder / "pairs_a.txt").write_text(a)
    (folder / "pairs_b.txt").write_text(b)
    (folder / "copy").mkdir()
    (folder / "copy" / "pairs.txt").write_text(a)  # the same pairs elsewhere
    return {p.name: p for p in folder.iterdir()} | {"copy": folder / "copy" / "pairs.txt"}


def _train(files, out, *flags, n=3, capsys):
    argv = ["train", files["train.txt"], *QB, "-o", out, "--n-estimators", str(n), *flags]
    return run(argv, capsys)


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("ltrboost: warning:")]


def test_resume_with_another_pairs_file_warns_naming_both(files, tmp_path, capsys):
    """Failed before: the continued rounds learnt other preferences without a word."""
    first = tmp_path / "m1.json"
    assert _train(files, first, "--pairs", files["pairs_a.txt"], capsys=capsys)[0] == 0
    rc, _, err = _train(
        files, tmp_path / "m2.json", "--pairs", files["pairs_b.txt"], "--resume", first,
        n=5, capsys=capsys,
    )  # fmt: skip
    assert rc == 0, err
    (line,) = _warnings(err)
    assert f"--resume {first}: --pairs {files['pairs_b.txt']}" in line
    assert f"--pairs {files['pairs_a.txt']}" in line
    # the file records this run's pairs (as it records this run's parameters)
    rec = json.loads((tmp_path / "m2.json").read_text())["training_inputs"]
    assert rec["pairs"]["file"] == str(files["pairs_b.txt"])


def test_resume_without_the_models_pairs_warns(files, tmp_path, capsys):
    """Failed before: a forgotten --pairs continued on the labels alone, silently."""
    first = tmp_path / "m1.json"
    assert _train(files, first, "--pairs", files["pairs_a.txt"], capsys=capsys)[0] == 0
    rc, _, err = _train(files, tmp_path / "m2.json", "--resume", first, n=5, capsys=capsys)
    assert rc == 0, err
    (line,) = _warnings(err)
    assert f"the model was trained with --pairs {files['pairs_a.txt']}" in line
    assert "this run gives no --pairs" in line
    assert "training_inputs" not in json.loads((tmp_path / "m2.json").read_text())


def test_resume_with_pairs_of_a_model_trained_without_warns(files, tmp_path, capsys):
    """Failed before: preferences added to a model trained on labels, silently."""
    first = tmp_path / "m1.json"
    assert _train(files, first, capsys=capsys)[0] == 0
    rc, _, err = _train(
        files, tmp_path / "m2.json", "--pairs", files["pairs_a.txt"], "--resume", first,
        n=5, capsys=capsys,
    )  # fmt: skip
    assert rc == 0, err
    (line,) = _warnings(err)
    assert f"--pairs {files['pairs_a.txt']}: the model records no --pairs file" in line


def test_the_same_pairs_elsewhere_are_silent_and_keep_the_recorded_name(files, tmp_path, capsys):
    """The fingerprint is the content: a copy at another path is the same training."""
    first = tmp_path / "m1.json"
    assert _train(files, first, "--pairs", files["pairs_a.txt"], capsys=capsys)[0] == 0
    rc, _, err = _train(
        files, tmp_path / "m2.json", "--pairs", files["copy"], "--resume", first, n=5,
        capsys=capsys,
    )  # fmt: skip
    assert rc == 0, err
    assert _warnings(err) == []
    rec = json.loads((tmp_path / "m2.json").read_text())["training_inputs"]
    assert rec == json.loads(first.read_text())["training_inputs"]
    assert rec["pairs"]["file"] == str(files["pairs_a.txt"])


def test_models_trained_without_pairs_or_positions_are_unchanged(files, tmp_path, capsys):
    """Nothing is added to the file of a model that had no such input: its bytes are
    those of before (a fingerprint of the training file is a checkpoint's only)."""
    out = tmp_path / "m.json"
    assert _train(files, out, "--checkpoint-every", "1", capsys=capsys)[0] == 0
    assert "training_inputs" not in json.loads(out.read_text())


def _interrupted(files, tmp_path, monkeypatch, capsys, *flags) -> Path:
    """Train to 5 rounds with a checkpoint every round, interrupted after round 3."""
    original = cli._Checkpoint.__call__

    def interrupting(self, env):
        original(self, env)
        if env.iteration + 1 == 3:
            raise KeyboardInterrupt

    out = tmp_path / "run.json"
    with monkeypatch.context() as m:
        m.setattr(cli._Checkpoint, "__call__", interrupting)
        rc, _, _ = _train(files, out, "--checkpoint-every", "1", *flags, n=5, capsys=capsys)
    assert rc == 130
    return Path(str(out) + ".checkpoint")


def test_checkpoint_with_pairs_resumes_to_the_uninterrupted_model(
    files, tmp_path, monkeypatch, capsys
):
    """The checkpoint records the training file too; the final model does not, so the
    resumed run's output is byte for byte the uninterrupted one's."""
    flags = ["--pairs", files["pairs_a.txt"]]
    full = tmp_path / "full.json"
    assert _train(files, full, "--checkpoint-every", "1", *flags, n=5, capsys=capsys)[0] == 0
    ck = _interrupted(files, tmp_path, monkeypatch, capsys, *flags)
    rec = json.loads(ck.read_text())["training_inputs"]
    assert sorted(rec) == ["pairs", "train"]
    assert rec["train"]["file"] == str(files["train.txt"])
    out = tmp_path / "run.json"
    rc, _, err = _train(
        files, out, "--checkpoint-every", "1", *flags, "--resume", ck, n=5, capsys=capsys
    )
    assert rc == 0, err
    assert _warnings(err) == []
    assert out.read_bytes() == full.read_bytes()
    assert sorted(json.loads(full.read_text())["training_inputs"]) == ["pairs"]


def test_checkpoint_resumed_on_another_training_file_warns(files, tmp_path, monkeypatch, capsys):
    """Failed before: a killed run continued on another file of the same shape, silently
    (its model is not the one the killed run would have written)."""
    ck = _interrupted(files, tmp_path, monkeypatch, capsys)
    argv = ["train", files["other.txt"], *QB, "-o", tmp_path / "run.json"]
    rc, _, err = run([*argv, "--n-estimators", "5", "--resume", ck], capsys)
    assert rc == 0, err
    (line,) = _warnings(err)
    assert f"--resume {ck}: TRAIN {files['other.txt']}" in line
    assert f"{files['train.txt']}" in line
    # the final model of a resumed checkpoint does not keep the training file's record
    assert "training_inputs" not in json.loads((tmp_path / "run.json").read_text())


def test_a_final_model_continued_on_another_training_file_is_silent(files, tmp_path, capsys):
    """Continuing a finished model on new data is fine-tuning (LightGBM's and XGBoost's
    init_model): not warned, and the model records no training file."""
    first = tmp_path / "m1.json"
    assert _train(files, first, capsys=capsys)[0] == 0
    argv = ["train", files["other.txt"], *QB, "-o", tmp_path / "m2.json"]
    rc, _, err = run([*argv, "--n-estimators", "5", "--resume", first], capsys)
    assert rc == 0, err
    assert _warnings(err) == []


def test_resume_with_another_position_file_warns(tmp_path, capsys):
    """Failed before: unbiased LambdaMART continued with other display positions."""
    from ltrboost.io.letor import dump_svmlight

    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3))
    y = (rng.random(200) < 0.3).astype(int)
    train = tmp_path / "clicks.txt"
    dump_svmlight(str(train), X, y, qid=np.repeat(np.arange(40), 5))
    for name in ("pos_a", "pos_b"):
        pos = np.concatenate([rng.permutation(5) + 1 for _ in range(40)])
        (tmp_path / name).write_text("".join(f"{p}\n" for p in pos))
    flags = ["train", train, "-q", "--unbiased", "true", "--max-positions", "5"]
    first = tmp_path / "u.json"
    rc, _, err = run([*flags, "--position", tmp_path / "pos_a", "-o", first, "--n-estimators", "2"],
                     capsys)  # fmt: skip
    assert rc == 0, err
    argv = [*flags, "--position", tmp_path / "pos_b", "-o", tmp_path / "u2.json"]
    rc, _, err = run([*argv, "--n-estimators", "3", "--resume", first], capsys)
    assert rc == 0, err
    (line,) = _warnings(err)
    assert f"--position {tmp_path / 'pos_b'}" in line
    assert f"--position {tmp_path / 'pos_a'}" in line


def test_a_fifo_pairs_file_is_read_once_and_not_fingerprinted(files, tmp_path, capsys):
    """A pipe is read by the training, never a second time for its fingerprint."""
    fifo = tmp_path / "pairs.fifo"
    os.mkfifo(fifo)
    text = files["pairs_a.txt"].read_text()

    def feed():
        with open(fifo, "w") as f:
            f.write(text)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    out = tmp_path / "m.json"
    rc, _, err = _train(files, out, "--pairs", fifo, capsys=capsys)
    t.join(timeout=30)
    assert rc == 0, err
    same = tmp_path / "same.json"
    assert _train(files, same, "--pairs", files["pairs_a.txt"], capsys=capsys)[0] == 0
    assert "training_inputs" not in json.loads(out.read_text())
    assert load_model(out).trees[0].tolist() == load_model(same).trees[0].tolist()


def test_training_inputs_field_is_validated(files, tmp_path, capsys):
    """Failed before (an unknown field): a file with the record loads; a malformed
    record is a ModelFormatError naming it; a file without it loads as before."""
    out = tmp_path / "m.json"
    assert _train(files, out, "--pairs", files["pairs_a.txt"], capsys=capsys)[0] == 0
    d = json.loads(out.read_text())
    model = model_from_json(json.dumps(d))
    assert model.training_inputs == d["training_inputs"]
    del d["training_inputs"]
    assert model_from_json(json.dumps(d)).training_inputs is None
    for bad in (
        {"weights": {"file": "w", "sha256": "0" * 64}},
        {"pairs": {"file": 3, "sha256": "0" * 64}},
        {"pairs": {"file": "p", "sha256": "xyz"}},
        {"pairs": {"file": "p"}},
        [],
    ):
        with pytest.raises(ModelFormatError, match="training_inputs"):
            model_from_json(json.dumps({**d, "training_inputs": bad}), path="m.json")


def test_a_model_moved_with_its_pairs_resumes_silently(files, tmp_path, capsys):
    """A recorded relative name that no longer resolves is fine when the content is the
    same: only the content is compared."""
    work = tmp_path / "w"
    work.mkdir()
    shutil.copy(files["pairs_a.txt"], work / "p.txt")
    first = tmp_path / "m1.json"
    cwd = os.getcwd()
    try:
        os.chdir(work)
        assert _train(files, first, "--pairs", "p.txt", capsys=capsys)[0] == 0
    finally:
        os.chdir(cwd)
    rc, _, err = _train(
        files, tmp_path / "m2.json", "--pairs", files["pairs_a.txt"], "--resume", first,
        n=5, capsys=capsys,
    )  # fmt: skip
    assert rc == 0, err
    assert _warnings(err) == []

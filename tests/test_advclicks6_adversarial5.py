"""Click logs and Unbiased LambdaMART, fifth adversarial pass: inverse-propensity labels
of a log with positions that are not 1-based, the ``TRAIN.position`` sidecar that is
not a file, and resuming a model without position biases under ``--unbiased true``."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from ltrboost.clicks import ClickLog, relevance_labels
from test_cli import assert_one_line_error as one_line_error
from test_cli import run


def _log(position, clicked) -> ClickLog:
    n = len(position)
    qid = np.empty(n, dtype=object)
    qid[:] = ["1"] * n
    doc = np.empty(n, dtype=object)
    doc[:] = [f"d{k}" for k in range(n)]
    return ClickLog(
        qid, doc, np.asarray(position), np.asarray(clicked, np.int8), np.zeros(n, np.int64)
    )


@pytest.mark.parametrize(
    ("position", "needle"),
    [
        ([0, 1, 2], "entry 0: position 0 is not an integer >= 1"),
        ([1, -2, 2], "entry 1: position -2 is not an integer >= 1"),
        ([1.0, 2.5, 3.0], "entry 1: position 2.5 is not an integer >= 1"),
    ],
)
def test_relevance_labels_refuses_positions_that_are_not_one_based(position, needle):
    """A log counted from 0 (a ClickLog built in Python: the reader refuses 0) divided
    the top result's click by propensities[-1], the deepest position's: label 4 for a
    click at the top, silently; 2.5 was truncated to position 2."""
    log = _log(position, [1, 1, 0])
    with pytest.raises(ValueError, match=re.escape(needle)):
        relevance_labels(log, [1.0, 0.5, 0.25])
    # without propensities the position is not used: the click-through rate
    assert relevance_labels(log).label.tolist() == [1.0, 1.0, 0.0]


def _click_data(tmp_path):
    """A tiny --unbiased training file (two impressions) and its positions."""
    train = tmp_path / "clicks.txt"
    train.write_text(
        "".join(
            f"{int(p == 1)} qid:{q} 1:{0.1 * p + q:.2f} 2:{0.3 * p:.2f}\n"
            for q in (1, 2)
            for p in (1, 2, 3)
        )
    )
    return train, "1\n2\n3\n1\n2\n3\n"


def test_dangling_position_sidecar_is_named_as_such(tmp_path, capsys):
    """A TRAIN.position link to a missing file: the error said to give --position FILE
    '(or TRAIN.position)', the very file the user has (as the .query sidecar does: a
    link to a missing file is said so)."""
    train, _ = _click_data(tmp_path)
    os.symlink(tmp_path / "gone.position", f"{train}.position")
    rc, _, err = run(["train", train, "-o", tmp_path / "m.json", "--unbiased", "true"], capsys)
    one_line_error(rc, err, f"{train}.position", "link to a missing file")
    assert not (tmp_path / "m.json").exists()


def test_folder_position_sidecar_is_refused_before_the_data_is_read(tmp_path, capsys):
    """A folder named TRAIN.position was found only once the training file had been
    read (minutes for a large one): here the training file's bad line came first."""
    train, _ = _click_data(tmp_path)
    with open(train, "a") as f:
        f.write("1 qid:3 1:oops\n")
    os.mkdir(f"{train}.position")
    rc, _, err = run(["train", train, "-o", tmp_path / "m.json", "--unbiased", "true"], capsys)
    one_line_error(rc, err, f"{train}.position", "folder")


def test_fifo_position_sidecar_is_refused_not_read_forever(tmp_path):
    """A FIFO named TRAIN.position (no writer) blocked `train --unbiased true` forever;
    the .query sidecar refuses one, and a pipe can still be given as --position."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    train, _ = _click_data(tmp_path)
    os.mkfifo(f"{train}.position")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    cmd = [sys.executable, "-m", "ltrboost", "train", str(train), "-o", str(tmp_path / "m.json")]
    try:
        done = subprocess.run(
            [*cmd, "--unbiased", "true", "-q"],
            capture_output=True,
            text=True,
            timeout=90,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("train --unbiased true blocked on the FIFO TRAIN.position")
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr, done.stderr
    assert "--position" in done.stderr, done.stderr


def test_regular_and_linked_position_sidecars_still_read(tmp_path, capsys):
    """The sidecar itself, or a link to one, is read as before."""
    train, positions = _click_data(tmp_path)
    (tmp_path / "real.position").write_text(positions)
    os.symlink(tmp_path / "real.position", f"{train}.position")
    flags = ["-q", "--n-estimators", "2", "--unbiased", "true", "--max-positions", "3"]
    rc, _, err = run(["train", train, "-o", tmp_path / "m.json", *flags], capsys)
    assert rc == 0, err


def test_resuming_a_plain_model_under_unbiased_is_refused_before_the_data(tmp_path, capsys):
    """--resume of a model trained without --unbiased under --unbiased true printed a
    warning that the flags differ, read the training file, and only then refused (a
    Python name, 'unbiased=True', in the error): one error line now, before the data."""
    train, positions = _click_data(tmp_path)
    (tmp_path / "clicks.txt.position").write_text(positions)
    plain = tmp_path / "plain.json"
    rc, _, err = run(["train", train, "-o", plain, "-q", "--n-estimators", "2"], capsys)
    assert rc == 0, err
    with open(train, "a") as f:
        f.write("1 qid:3 1:oops\n")  # the data is not read: its error would come first
    argv = ["train", train, "-o", tmp_path / "m.json", "--resume", plain, "--unbiased", "true"]
    rc, _, err = run([*argv, "--n-estimators", "4"], capsys)
    one_line_error(rc, err, f"--resume {plain}", "--unbiased true", "no position bias")


def test_resuming_with_another_max_positions_is_refused_before_the_data(tmp_path, capsys):
    """An unbiased model of --max-positions 3 resumed with the default (32): the error
    came once the training file had been read."""
    train, positions = _click_data(tmp_path)
    (tmp_path / "clicks.txt.position").write_text(positions)
    model = tmp_path / "u.json"
    flags = ["-q", "--unbiased", "true"]
    rc, _, err = run(
        ["train", train, "-o", model, "--n-estimators", "2", "--max-positions", "3", *flags],
        capsys,
    )
    assert rc == 0, err
    with open(train, "a") as f:
        f.write("1 qid:3 1:oops\n")
    argv = ["train", train, "-o", tmp_path / "m.json", "--resume", model, *flags]
    rc, _, err = run([*argv, "--n-estimators", "4"], capsys)
    one_line_error(rc, err, f"--resume {model}", "--max-positions 3")

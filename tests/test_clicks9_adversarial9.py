"""Click logs, ninth adversarial pass: skip-above mining of a long impression with
many clicks (quadratic in the impression's length whatever the pairs it found), and
the ``clicks`` commands' output checked before the data is read (a folder or a
missing folder as ``--output`` was reported only after the log was parsed and mined,
after a warning about a file it then did not write)."""

from __future__ import annotations

import signal
import time
from itertools import product
from pathlib import Path

import numpy as np
import pytest

from ltrboost.clicks import ClickLog, mine_preferences
from test_cli import assert_one_line_error as one_line_error
from test_cli import run


def _objects(items) -> np.ndarray:
    items = list(items)
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _one_impression(clicked) -> ClickLog:
    n = len(clicked)
    return ClickLog(
        _objects(["1"] * n),
        _objects(f"d{k}" for k in range(n)),
        np.arange(1, n + 1, dtype=np.int64),
        np.asarray(clicked, dtype=np.int8),
        np.zeros(n, dtype=np.int64),
    )


def _skip_above_by_hand(log: ClickLog) -> dict[tuple[str, str, str], int]:
    """The README's definition, impression by impression, then netted."""
    n: dict[tuple[str, str, str], int] = {}
    for imp in np.unique(log.impression):
        idx = np.flatnonzero(log.impression == imp)
        for a, b in product(idx, idx):
            if log.clicked[a] and not log.clicked[b] and log.position[b] < log.position[a]:
                key = (log.qid[a], log.docid[a], log.docid[b])
                n[key] = n.get(key, 0) + 1
    return {
        k: v - n.get((k[0], k[2], k[1]), 0)
        for k, v in n.items()
        if v > n.get((k[0], k[2], k[1]), 0)
    }


def test_skip_above_is_not_quadratic_in_a_long_impression_with_clicks():
    """An impression of 100,000 results, every one clicked (a crawler, an 'open all'
    tab), has no skip-above pair, yet each click scanned every result above it:
    5e9 steps, about four minutes (30,000 results: 23 s) to find nothing.  Now each
    click pairs with the unclicked results above it, kept as they are met."""
    log = _one_impression(np.ones(100_000, dtype=np.int8))

    def too_slow(signum, frame):
        raise TimeoutError("skip-above took more than 20 s on 100,000 clicked results")

    old = signal.signal(signal.SIGALRM, too_slow)
    signal.setitimer(signal.ITIMER_REAL, 20.0)
    try:
        start = time.monotonic()
        mined = mine_preferences(log, "skip-above")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert len(mined) == 0
    assert time.monotonic() - start < 20


def test_skip_above_still_follows_its_definition():
    """The faster loop mines the same pairs as the definition, on random logs with
    gaps in the positions and impressions whose lines are not in position order."""
    rng = np.random.default_rng(9)
    n_imp, shown = 300, 6
    rows = []
    for imp in range(n_imp):
        q = str(imp % 3)
        docs = rng.choice(10, size=shown, replace=False)
        positions = np.sort(rng.choice(np.arange(1, 15), size=shown, replace=False))
        order = rng.permutation(shown)  # lines of an impression in any order
        for k in order:
            rows.append((q, f"d{docs[k]}", positions[k], rng.random() < 0.4, imp))
    q, d, p, c, i = zip(*rows, strict=True)
    log = ClickLog(
        _objects(q),
        _objects(d),
        np.asarray(p, np.int64),
        np.asarray(c, np.int8),
        np.asarray(i, np.int64),
    )
    expected = _skip_above_by_hand(log)
    mined = mine_preferences(log, "skip-above")
    got = {
        (a, b, o): int(n)
        for a, b, o, n in zip(mined.qid, mined.preferred, mined.other, mined.count, strict=True)
    }
    assert got == expected
    assert len(got) > 50


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "data.txt"
    path.write_text(
        "".join(
            f"{y} qid:{q} 1:{k / 10:.1f} #docid = {d}\n"
            for q in (1, 2)
            for k, (y, d) in enumerate(zip((2, 1, 0), "abc", strict=True))
        )
    )
    return path


@pytest.mark.parametrize("command", ["mine", "dataset", "simulate"])
@pytest.mark.parametrize("where", ["missing folder", "folder"])
def test_clicks_output_that_cannot_be_written_is_one_error_before_the_data(
    tmp_path, capsys, command, where
):
    """``clicks mine LOG -o FOLDER`` read and mined the whole log, warned that
    'FOLDER holds no pair (training on it uses the labels alone)', and only then said
    'FOLDER: is a directory': two lines, the first about a file it never wrote.  A
    missing folder was found as late (after gigabytes of log).  As `train`, `predict`
    and `convert` do, the output is now checked first: one error line, naming it."""
    data = _data(tmp_path)
    log = tmp_path / "log.tsv"
    # a log holding no click (mining it warns), or with a bad last line
    log.write_text("1 a 1 0\n1 b 2 0\n" + ("1 c 3\n" if where == "missing folder" else ""))
    out = tmp_path / "out" / "o.txt" if where == "missing folder" else tmp_path
    argv = {
        "mine": ["clicks", "mine", log, "--data", data, "-o", out],
        "dataset": ["clicks", "dataset", log, "--data", data, "-o", out],
        "simulate": ["clicks", "simulate", data, "-o", out, "--n-sessions", "5"],
    }[command]
    if command == "simulate":  # a data line simulate refuses, after reading the file
        data.write_text(data.read_text() + "1 qid:3 1:0.5\n")
    rc, _, err = run(argv, capsys)
    line = one_line_error(rc, err, str(out))
    assert "log.tsv" not in line, line
    assert "data.txt" not in line, line
    assert not (tmp_path / "out").exists()
    if command == "dataset":
        assert not list(tmp_path.glob("*.position"))


def test_clicks_dataset_position_output_is_checked_before_the_data(tmp_path, capsys):
    """``OUTPUT.position``, the second output, is checked before the log is read too: a
    link to a missing folder was found after the log (here: its bad last line)."""
    data = _data(tmp_path)
    log = tmp_path / "log.tsv"
    log.write_text("1 a 1 1\n1 b 2 0\n1 c 3\n")  # a bad last line
    out = tmp_path / "clicks.txt"
    out.write_text("previous\n")
    (tmp_path / "clicks.txt.position").symlink_to(tmp_path / "nowhere" / "p")
    rc, _, err = run(["clicks", "dataset", log, "--data", data, "-o", out], capsys)
    line = one_line_error(rc, err, "clicks.txt.position")
    assert "log.tsv" not in line, line
    assert out.read_text() == "previous\n"

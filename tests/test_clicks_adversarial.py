"""``ltrboost clicks`` and ``ltrboost.clicks`` on inputs an adversarial pass found
mishandled: each now gets a one-line error naming the file, line or flag, and what
``simulate`` writes its own reader reads back."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from ltrboost.clicks import read_click_log, simulate
from test_cli import assert_one_line_error as one_line_error
from test_cli import run


def _letor(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "data.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _rows(labels=(2, 1, 0, 1), docids=("a", "b", "c", "d"), qid=1):
    return [
        f"{y} qid:{qid} 1:{k / 10:.1f} 2:{k % 3} #docid = {d}"
        for k, (y, d) in enumerate(zip(labels, docids, strict=True))
    ]


def test_simulate_negative_label_names_file_and_line(tmp_path, capsys):
    """LETOR files with grade -1 (some data sets' 'unjudged') said only "labels must be
    finite and >= 0", naming neither file nor line."""
    data = _letor(tmp_path, _rows() + _rows(labels=(0, -1, 1, 0), qid=2))
    rc, _, err = run(["clicks", "simulate", data, "-o", tmp_path / "log.tsv"], capsys)
    one_line_error(rc, err, f"{data}:6:", "-1")
    assert not (tmp_path / "log.tsv").exists()


def test_simulate_negative_random_state_names_the_flag(tmp_path, capsys):
    """--random-state -1 said only "expected non-negative integer"."""
    data = _letor(tmp_path, _rows())
    rc, _, err = run(
        ["clicks", "simulate", data, "-o", tmp_path / "l.tsv", "--random-state", "-1"], capsys
    )
    one_line_error(rc, err, "--random-state")


def test_simulate_refuses_a_docid_repeated_in_a_query(tmp_path, capsys):
    """Two rows of one query with the same '#docid' made a log that read_click_log
    (and so 'clicks mine' / 'clicks dataset') rejects: 'document shown twice in one
    impression'."""
    data = _letor(tmp_path, _rows(docids=("a", "b", "a", "d")) + _rows(qid=2))
    rc, _, err = run(["clicks", "simulate", data, "-o", tmp_path / "log.tsv"], capsys)
    one_line_error(rc, err, f"{data}:3:", "'a'", "line 1")
    # the same id in two queries is fine (documents are named per query)
    data = _letor(tmp_path, _rows() + _rows(qid=2))
    rc, _, err = run(
        ["clicks", "simulate", data, "-o", tmp_path / "log.tsv", "--n-sessions", "50"], capsys
    )
    assert rc == 0, err
    assert len(read_click_log(tmp_path / "log.tsv")) > 0


def test_simulate_api_refuses_repeated_docids():
    y = np.array([1.0, 0.0, 2.0, 1.0])
    with pytest.raises(ValueError, match=r"row 2.*'x'.*row 0"):
        simulate(y, [0, 4], docids=["x", "y", "x", "z"], random_state=0)
    log = simulate(y, [0, 2, 4], docids=["x", "y", "x", "z"], n_sessions=20, random_state=0)
    assert len(log) > 0


def test_clicks_commands_take_missing_token(tmp_path, capsys):
    """A LETOR 3.0 'Feature-null' file (5:NULL) failed with "... (CLI: --missing-token
    NULL)", and the clicks commands then refused that very flag: 'unrecognized
    arguments'."""
    rows = _rows() + _rows(qid=2)
    rows[1] = rows[1].replace(" 2:", " 2:NULL 3:")
    data = _letor(tmp_path, rows)
    log, pairs, out = tmp_path / "log.tsv", tmp_path / "pairs.txt", tmp_path / "clicks.txt"
    rc, _, err = run(["clicks", "simulate", data, "-o", log], capsys)
    one_line_error(rc, err, f"{data}:2:", "--missing-token NULL")
    token = ["--missing-token", "NULL"]
    for argv in (
        ["clicks", "simulate", data, "-o", log, "--n-sessions", "40", *token],
        ["clicks", "mine", log, "--data", data, "-o", pairs, *token],
        ["clicks", "dataset", log, "--data", data, "-o", out, *token],
    ):
        rc, _, err = run(argv, capsys)
        assert rc == 0, err
    assert "NULL" not in out.read_text()  # written as absent (dump_svmlight's NaN)


def test_log_qids_with_leading_zeros_match_the_data(tmp_path, capsys):
    """Data 'qid:007' is query 7 (qids are integers); a log naming it '007', as the
    data file writes it, was refused: "unknown query '007': not in the data file"."""
    data = _letor(tmp_path, [r.replace("qid:1 ", "qid:007 ") for r in _rows()])
    log = tmp_path / "log.tsv"
    log.write_text("007 c 1 0\n007 a 2 1\n")
    rc, _, err = run(["clicks", "mine", log, "--data", data, "-o", tmp_path / "p.txt"], capsys)
    assert rc == 0, err
    assert (tmp_path / "p.txt").read_text().splitlines()[1:] == ["7 a c 1.0"]
    assert read_click_log(log).qid.tolist() == ["7", "7"]


def test_dataset_position_file_never_replaces_an_input(tmp_path, capsys):
    """'clicks dataset' also writes OUTPUT.position, which was not checked against the
    inputs: with the log named OUT.position and -o OUT, the log was replaced by the
    positions."""
    data = _letor(tmp_path, _rows() + _rows(qid=2))
    log = tmp_path / "out.position"
    log.write_text("1 a 1 1\n1 b 2 0\n")
    before = log.read_bytes()
    rc, _, err = run(["clicks", "dataset", log, "--data", data, "-o", tmp_path / "out"], capsys)
    one_line_error(rc, err, "OUTPUT.position", "log")
    assert log.read_bytes() == before
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"ranking_noise": float("nan")}, "ranking_noise=nan"),
        ({"ranking_noise": -1.0}, "ranking_noise=-1.0"),
        ({"scores": [1.0, float("nan"), 0.0, 2.0]}, "row 1 is nan"),
        ({"top_k": 2.5}, "top_k=2.5 must be an integer"),
        ({"n_sessions": 3.5}, "n_sessions=3.5 must be an integer"),
    ],
)
def test_simulate_refuses_non_finite_rankings_and_fractional_counts(kw, needle):
    """ranking_noise=nan (every score NaN) and a NaN score were accepted and shown in
    an arbitrary order; ranking_noise=-1 said NumPy's 'scale < 0'; top_k=2.5 and
    n_sessions=3.5 raised TypeErrors from slicing and rng.choice."""
    with pytest.raises(ValueError, match=needle):
        simulate(np.array([1.0, 0.0, 2.0, 1.0]), [0, 4], random_state=0, **kw)


def test_string_qids_with_leading_zeros_match_in_the_api(tmp_path):
    """The same rule when the data's qids are given as text (API): '007' in the data
    and '007' or '7' in the log are one query."""
    from ltrboost.clicks import click_rows, relevance_labels

    log_path = tmp_path / "log.tsv"
    log_path.write_text("007 a 1 1\n007 b 2 0\n")
    qid, docids = np.array(["007", "007"]), ["a", "b"]
    log = read_click_log(log_path, qid=qid, docids=docids)
    assert click_rows(log, qid, docids).row.tolist() == [0, 1]
    sim = simulate([1.0, 0.0], [0, 2], qids=["007"], docids=docids, n_sessions=3, random_state=0)
    assert click_rows(sim, qid, docids).row.size == 6
    assert relevance_labels(sim, qid=qid, docids=docids).row.tolist() == [0, 1]


def test_dataset_does_not_write_output_when_its_position_file_cannot_be(tmp_path, capsys):
    """With OUT.position a directory, OUT was written and the command then failed on
    OUT.position: a LETOR file without its positions (or beside stale ones)."""
    data = _letor(tmp_path, _rows())
    log = tmp_path / "log.tsv"
    log.write_text("1 a 1 1\n1 b 2 0\n")
    (tmp_path / "out.position").mkdir()
    rc, _, err = run(["clicks", "dataset", log, "--data", data, "-o", tmp_path / "out"], capsys)
    one_line_error(rc, err, "out.position", "directory")
    assert not (tmp_path / "out").exists()


def test_dataset_writes_its_two_files_all_or_none(tmp_path, capsys, monkeypatch):
    """A write of OUT.position that fails (a full disk) after OUT was written left a
    LETOR file beside no positions, or beside an earlier run's."""
    import errno

    from ltrboost.io import _atomic

    data = _letor(tmp_path, _rows())
    log = tmp_path / "log.tsv"
    log.write_text("1 a 1 1\n1 b 2 0\n")
    out = tmp_path / "out"
    assert run(["clicks", "dataset", log, "--data", data, "-o", out], capsys)[0] == 0
    before = (out.read_bytes(), (tmp_path / "out.position").read_bytes())
    log.write_text("1 b 1 1\n1 a 2 0\n")  # another log: both files would change
    stage = _atomic._stage

    def full_disk(path, blobs, state, *rest):
        if str(path).endswith(".position"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return stage(path, blobs, state, *rest)

    monkeypatch.setattr(_atomic, "_stage", full_disk)
    rc, _, err = run(["clicks", "dataset", log, "--data", data, "-o", out], capsys)
    assert rc != 0
    assert "No space left" in err
    assert (out.read_bytes(), (tmp_path / "out.position").read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out")) == [
        "out",
        "out.position",
    ]  # no temporary file left behind


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--eta", "2"], "--eta 2 is not used"),
        (["--model", "position_based", "--satisfaction", "0.9"], "--satisfaction 0.9 is not used"),
    ],
)
def test_simulate_warns_about_a_parameter_of_the_other_model(tmp_path, capsys, flags, needle):
    """--eta with the default cascade model (or --satisfaction with position_based)
    changed nothing, silently."""
    data = _letor(tmp_path, _rows())
    log = tmp_path / "log.tsv"
    rc, _, err = run(["clicks", "simulate", data, "-o", log, "--n-sessions", "5", *flags], capsys)
    assert rc == 0
    assert err.startswith(f"ltrboost: warning: {needle}")
    # the flags of the model used are taken without a word
    rc, _, err = run(
        ["clicks", "simulate", data, "-o", log, "--n-sessions", "5", "--model",
         "position_based", "--eta", "2"],
        capsys,
    )  # fmt: skip
    assert rc == 0
    assert "warning" not in err


def test_simulate_refuses_a_session_count_beyond_int64(tmp_path, capsys):
    """--n-sessions 1e20 was an OverflowError traceback (1e10 is a clean out-of-memory
    error already)."""
    data = _letor(tmp_path, _rows())
    log = tmp_path / "log.tsv"
    rc, _, err = run(["clicks", "simulate", data, "-o", log, "--n-sessions", str(10**20)], capsys)
    one_line_error(rc, err, "--n-sessions 100000000000000000000 is too large")
    assert not log.exists()


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        (dict(noise=2.0), "noise=2.0 must be in [0, 1]"),
        (dict(satisfaction=-0.5), "satisfaction=-0.5 must be in [0, 1]"),
        (dict(model="position_based", eta=-1.0), "eta=-1.0 must be >= 0"),
        (dict(top_k=0), "top_k=0 must be >= 1"),
    ],
)
def test_simulate_names_the_parameter_out_of_range(kw, needle):
    """One message covered satisfaction, noise and eta, naming neither which nor its
    value ('satisfaction and noise must be in [0, 1], eta >= 0' for --noise 2)."""
    from ltrboost.clicks import simulate

    y = np.array([2.0, 1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=re.escape(needle)):
        simulate(y, query_offsets=np.array([0, 4]), n_sessions=2, **kw)

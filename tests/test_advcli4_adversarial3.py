"""``ltrboost train`` with combinations of flags, a third adversarial pass: what is
refused, warned or silently ignored when flags meet (--resume, --checkpoint-every,
--valid, --metric, --pairs, --position).  Each problem found is one test here."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_cli import assert_one_line_error as one_line_error
from test_cli import run


@pytest.fixture
def letor(tmp_path: Path) -> Path:
    """A small LETOR file with docids: 4 queries x 5 documents, 3 features."""
    lines = [
        f"{(q + d) % 3} qid:{q + 1} 1:{d} 2:{(q * d) % 4} 3:{0.5 * d} # docid = d{q}-{d}"
        for q in range(4)
        for d in range(5)
    ]
    path = tmp_path / "small.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


# A training file that does not exist: a flag error found before the data is read
# names the flag; one found after it says "No such file or directory" instead.
_NO_DATA = "no-such-training-file.txt"


@pytest.mark.parametrize(
    ("flags", "needles"),
    [
        (["--metric", "ndcg@x"], ["ndcg@x"]),
        (["--early-stopping-rounds", "5"], ["--early-stopping-rounds", "--valid"]),
        (["--checkpoint-every", "0"], ["--checkpoint-every=0", ">= 1"]),
        (["--valid", "v.txt", "--valid", "v.txt"], ["given twice", "v.txt"]),
        (["--position", "p.txt"], ["--position", "--unbiased"]),
        (["--unbiased", "true"], ["--unbiased true", "--position FILE"]),
    ],
)
def test_flag_errors_come_before_the_data_is_read(flags, needles, tmp_path, capsys):
    """A typo'd --metric, --early-stopping-rounds without --valid, --checkpoint-every
    0, a repeated --valid, --position without --unbiased (--unbiased without a
    positions file) were found only after the
    training data (and every --valid file) had been read and parsed: minutes on a large
    file, then the error.  An output that cannot be written already failed first."""
    rc, _, err = run(
        ["train", tmp_path / _NO_DATA, "-q", "-o", tmp_path / "m.json", *flags], capsys
    )
    line = one_line_error(rc, err, *needles)
    assert "No such file" not in line


def test_an_empty_pairs_file_warns_that_no_pair_is_used(letor, tmp_path, capsys):
    """--pairs FILE with no pair in it (only comments: e.g. `clicks mine` that kept
    none at its --min-count) trained on the labels alone without a word, as if the
    flag had not been given."""
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("# qid preferred_docid other_docid weight\n")
    out = tmp_path / "m.json"
    argv = ["train", letor, "-q", "--objective", "ranknet", "--n-estimators", "2", "-o", out]
    argv += ["--min-samples-leaf", "1"]
    rc, _, err = run([*argv, "--pairs", pairs], capsys)
    assert rc == 0, err
    assert "ltrboost: warning:" in err
    assert f"--pairs {pairs}" in err
    assert "no pair" in err
    # pairs given: no such warning
    pairs.write_text("1 d0-1 d0-0\n")
    rc, _, err = run([*argv, "--pairs", pairs], capsys)
    assert rc == 0, err
    assert "no pair" not in err


def test_cv_refuses_a_label_its_metrics_cannot_score_before_training_a_fold(tmp_path, capsys):
    """A label above 31 (the exponential gain's limit) in a query of the second fold:
    cv trained and printed the first fold, then failed at the second; the whole file's
    labels are now checked against the metrics before any fold is trained."""
    import numpy as np

    from ltrboost.cli import query_folds

    qids = np.repeat(np.arange(1, 7), 4)
    later = int(qids[query_folds(qids, 2, 0) == 1][0])  # a query of the second fold
    lines = []
    for k, q in enumerate(qids.tolist()):
        label = 40 if q == later and k % 4 == 0 else k % 3
        lines.append(f"{label} qid:{q} 1:{k % 5} 2:{k % 3}")
    data = tmp_path / "d.txt"
    data.write_text("\n".join(lines) + "\n")
    bad_line = lines.index(next(s for s in lines if s.startswith("40 "))) + 1
    argv = ["cv", data, "--folds", "2", "--n-estimators", "1", "--objective", "mart"]
    argv += ["--min-samples-leaf", "1"]
    rc, out, err = run(argv, capsys)
    one_line_error(rc, err, f"{data}:{bad_line}", "label 40")
    assert out == ""


@pytest.mark.parametrize(
    ("flags", "needles"),
    [
        (["--objective", "ranknet"], ["--resume", "'lambdamart'", "'ranknet'"]),
        (["--n-estimators", "2"], ["--n-estimators 2", "3 rounds", "--resume"]),
    ],
)
def test_a_model_resume_cannot_continue_is_refused_before_the_data_is_read(
    flags, needles, letor, tmp_path, capsys
):
    """--resume with another --objective, or an --n-estimators below the model's
    rounds, was refused by the training run, after the data had been read and binned."""
    model = tmp_path / "m.json"
    rc, _, err = run(["train", letor, "-q", "--n-estimators", "3", "-o", model], capsys)
    assert rc == 0, err
    argv = ["train", tmp_path / _NO_DATA, "-q", "--resume", model, "-o", tmp_path / "o.json"]
    rc, _, err = run([*argv, *flags], capsys)
    line = one_line_error(rc, err, *needles)
    assert "No such file" not in line


@pytest.mark.parametrize("command", ["predict", "eval", "train"])
def test_a_file_of_classic_mac_line_ends_with_comments_is_refused(command, letor, tmp_path, capsys):
    """CR-only line ends (no LF): the whole file is one line, and the first '#' made
    the rest of it that line's comment: predict wrote one score for 20 documents,
    eval scored one, train fitted one (a constant model), without an error."""
    model = tmp_path / "m.json"
    rc, _, err = run(["train", letor, "-q", "--n-estimators", "2", "-o", model], capsys)
    assert rc == 0, err
    mac = tmp_path / "mac.txt"
    mac.write_bytes(letor.read_bytes().replace(b"\n", b"\r"))
    argv = {
        "predict": ["predict", model, mac],
        "eval": ["eval", model, mac],
        "train": ["train", mac, "-q", "--n-estimators", "1", "-o", tmp_path / "o.json"],
    }[command]
    rc, out, err = run(argv, capsys)
    one_line_error(rc, err, f"{mac}:1", "only CRs")
    assert out == ""

"""Three CLI gaps a tenth adversarial pass found left open: ``main()`` called from
Python raised ``SystemExit`` for a bad command line instead of returning its status;
``train --valid`` with the training file's queries was not warned of (early stopping
on leaked queries); ``experiment --protocol qbrank`` had neither ``--n-features`` nor
the per-fold warning of a test file that shares query ids with its training file."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from ltrboost.experiment_qbrank import Settings, run_qbrank_experiment
from ltrboost.io.letor import dump_svmlight
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

# --- 1. a bad command line: main() returns 2 -------------------------------------------


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["train", "x.txt", "--bogus"], "unrecognized arguments: --bogus"),
        (["train"], "the following arguments are required"),
        (["inspect", "m.json", "--importance-type", "gian"], "invalid choice: 'gian'"),
        (["nosuch"], "invalid choice: 'nosuch'"),
        ([], "the following arguments are required: COMMAND"),
        (["train", "x.txt", "--n-estimators", "abc"], "invalid int value"),
    ],
)
def test_bad_command_line_returns_2_from_python(argv, needle, capsys):
    """README: ``status = ltrboost_cli([...])`` returns the exit status; a bad command
    line raised ``SystemExit(2)`` instead (a notebook or a calling script saw an
    exception where every other bad input gave 2)."""
    rc, out, err = run(argv, capsys)
    assert out == ""
    one_line_error(rc, err, needle)


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"], ["cv", "-h"]])
def test_help_returns_0_and_prints_the_help(argv, capsys):
    rc, out, err = run(argv, capsys)
    assert rc == 0
    assert out.startswith("usage: ltrboost")
    assert err == ""


def test_version_returns_0_and_prints_the_version(capsys):
    from ltrboost import __version__

    rc, out, err = run(["--version"], capsys)
    assert (rc, out, err) == (0, f"ltrboost {__version__}\n", "")


@pytest.mark.parametrize(
    ("entry", "argv", "status"),
    [
        (["-m", "ltrboost"], ["train", "x.txt", "--bogus"], 2),
        (["-m", "ltrboost"], ["--version"], 0),
        # the console script: sys.exit(ltrboost.cli.main())
        (["-c", "import sys; from ltrboost.cli import main; sys.exit(main())"], ["nosuch"], 2),
        (["-c", "import sys; from ltrboost.cli import main; sys.exit(main())"], ["-h"], 0),
    ],
)
def test_entry_points_still_exit_with_the_status(entry, argv, status):
    proc = subprocess.run(
        [sys.executable, *entry, *argv], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == status, proc.stderr
    if status:
        one_line_error(proc.returncode, proc.stderr)
        assert proc.stdout == ""
    else:
        assert proc.stdout.startswith(("usage: ltrboost", "ltrboost "))
        assert proc.stderr == ""


# --- 2. train --valid sharing query ids with the training file ------------------------


def _letor(path: Path, qids, seed: int = 0, *, sidecar: bool = False) -> Path:
    """A LETOR file of 6 documents per query (grades 0-2, 4 features) with the query
    ids ``qids``; ``sidecar``: no ``qid:`` on the lines, the sizes in ``PATH.query``."""
    rng = np.random.default_rng(seed)
    q = np.repeat(np.asarray(list(qids)), 6)
    X = rng.normal(size=(q.size, 4))
    y = rng.integers(0, 3, q.size)
    dump_svmlight(path, X, y, q)
    if sidecar:
        lines = path.read_text().splitlines()
        path.write_text(
            "".join(
                " ".join(w for w in li.split() if not w.startswith("qid:")) + "\n" for li in lines
            )
        )
        path.with_name(path.name + ".query").write_text("6\n" * len(list(qids)))
    return path


def _train(tmp_path: Path, train: Path, *valid: Path, capsys, extra=()) -> tuple[int, str]:
    argv = ["train", train, "--n-estimators", "2", "-q", "-o", tmp_path / "m.json"]
    for v in valid:
        argv += ["--valid", v]
    rc, _, err = run([*argv, *extra], capsys)
    return rc, err


def test_train_warns_of_a_validation_file_sharing_query_ids(tmp_path, capsys):
    """Early stopping (and the reported metrics) on queries the model trains on: a
    validation file cut from the training file by rows, not by queries, said nothing."""
    train = _letor(tmp_path / "train.txt", range(10))
    vali = _letor(tmp_path / "vali.txt", range(7, 15), seed=1)
    rc, err = _train(tmp_path, train, vali, capsys=capsys, extra=["--early-stopping-rounds", "1"])
    assert rc == 0, err
    lines = [li for li in err.splitlines() if li.startswith("ltrboost: warning:")]
    assert len(lines) == 1, err
    assert f"{vali} shares 3 query ids with {train} (of its 8; e.g. qid 7)" in lines[0]
    assert "validation" in lines[0]
    assert (tmp_path / "m.json").exists()  # a warning: the model is written


def test_train_warns_once_per_validation_file_that_shares(tmp_path, capsys):
    train = _letor(tmp_path / "train.txt", range(10))
    leaked = _letor(tmp_path / "a.txt", range(5), seed=1)
    clean = _letor(tmp_path / "b.txt", range(20, 25), seed=2)
    rc, err = _train(tmp_path, train, clean, leaked, capsys=capsys)
    assert rc == 0, err
    lines = [li for li in err.splitlines() if "query ids" in li]
    assert len(lines) == 1, err
    assert f"{leaked} shares 5 query ids" in lines[0]


def test_train_disjoint_validation_file_is_not_warned_of(tmp_path, capsys):
    train = _letor(tmp_path / "train.txt", range(10))
    vali = _letor(tmp_path / "vali.txt", range(10, 15), seed=1)
    rc, err = _train(tmp_path, train, vali, capsys=capsys)
    assert rc == 0, err
    assert "warning" not in err


def test_train_training_file_as_its_own_validation_file_is_not_warned_of(tmp_path, capsys):
    """``--valid TRAIN`` (to watch the training metric) is no leak by mistake."""
    train = _letor(tmp_path / "train.txt", range(10))
    rc, err = _train(tmp_path, train, train, capsys=capsys)
    assert rc == 0, err
    assert "warning" not in err


def test_train_query_files_numbered_per_file_are_not_warned_of(tmp_path, capsys):
    """Queries from ``.query`` sidecars (LightGBM's files, ``generate --lightgbm``) are
    numbered 0, 1, ... in every file: equal numbers are other queries."""
    train = _letor(tmp_path / "train.txt", range(10), sidecar=True)
    vali = _letor(tmp_path / "vali.txt", range(5), seed=1, sidecar=True)
    rc, err = _train(tmp_path, train, vali, capsys=capsys)
    assert rc == 0, err
    assert "warning" not in err


def test_experiment_folds_with_query_files_are_not_warned_of(tmp_path, capsys):
    """The same for ``experiment``'s folds: every fold of ``.query`` files warned."""
    fold = tmp_path / "data" / "Fold1"
    fold.mkdir(parents=True)
    for k, name in enumerate(("train", "vali", "test")):
        _letor(fold / f"{name}.txt", range(8), seed=k, sidecar=True)
    argv = ["experiment", tmp_path / "data", "-o", tmp_path / "r", "--systems", "lambdamart"]
    argv += ["--criteria", "se", "--leaves", "4", "--learning-rates", "0.1", "--max-trees", "2"]
    rc, _, err = run([*argv, "--min-samples-leaf", "2", "--n-threads", "1", "-q"], capsys)
    assert rc in (0, 1), err  # 1: one criterion, so the se-vs-ole table is empty
    assert "warning" not in err


# --- 3. experiment --protocol qbrank: --n-features and shared query ids ------------------


QB = ["--protocol", "qbrank", "--max-trees", "2", "--min-samples-leaf", "2", "-q"]
QB += ["--n-threads", "1"]
SETTINGS = Settings(n_estimators=2, min_samples_leaf=2, ranksvm_c_grid=(1.0,))


def _rewrite(path: Path, qid_offset: int = 0, extra: str = "") -> None:
    """Shift ``path``'s query ids by ``qid_offset``; append ``extra`` to every line."""
    out = []
    for line in path.read_text().splitlines():
        words = line.split()
        words[1] = f"qid:{int(words[1][4:]) + qid_offset}"
        out.append(" ".join(words) + extra + "\n")
    path.write_text("".join(out))


@pytest.fixture
def qb_folds(tmp_path, write_letor_folds):
    """Two folds whose validation and test queries are their own (ids shifted by 200
    and 100: a shared validation query is warned of too)."""
    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    root = write_letor_folds(tmp_path / "qdata", 2, 8, 5, single)
    for k in (1, 2):
        _rewrite(root / f"Fold{k}" / "vali.txt", qid_offset=200)
        _rewrite(root / f"Fold{k}" / "test.txt", qid_offset=100)
    return root


def _results(out: Path) -> dict:
    """Every fold's runs without their timings."""
    folds = {}
    for f in sorted((out / "folds").glob("*.json")):
        runs = json.loads(f.read_text())["runs"]
        folds[f.name] = {r: {k: v for k, v in d.items() if k != "seconds"} for r, d in runs.items()}
    return folds


def test_qbrank_n_features_reads_a_wider_test_file(qb_folds, tmp_path, capsys):
    """A test file with a higher feature index than its training file was an error
    pointing at ``--n-features``, which ``--protocol qbrank`` then refused."""
    _rewrite(qb_folds / "Fold2" / "test.txt", extra=" 7:0.5")
    rc, _, err = run(["experiment", qb_folds, "-o", tmp_path / "r", *QB], capsys)
    one_line_error(rc, err, "Fold2", "test.txt:1", "give --n-features 7 (or more)")
    assert not (tmp_path / "r").exists()
    rc, _, err = run(
        ["experiment", qb_folds, "-o", tmp_path / "r", *QB, "--n-features", "7"], capsys
    )
    assert rc == 0, err
    assert "error" not in err
    assert sorted(p.name for p in (tmp_path / "r" / "folds").iterdir()) == [
        "Fold1.json",
        "Fold2.json",
    ]


def test_qbrank_n_features_changes_no_result(qb_folds, tmp_path, capsys):
    """The features absent from the training files are never used (RankSVM's weight
    for an all-zero column is 0, a tree never splits a constant one): every number is
    that of the narrower read, so finished folds are kept whatever N."""
    rc, _, err = run(["experiment", qb_folds, "-o", tmp_path / "a", *QB], capsys)
    assert rc == 0, err
    rc, _, err = run(
        ["experiment", qb_folds, "-o", tmp_path / "b", *QB, "--n-features", "9"], capsys
    )
    assert rc == 0, err
    assert _results(tmp_path / "a") == _results(tmp_path / "b")


def test_qbrank_n_features_in_python(qb_folds, tmp_path):
    _rewrite(qb_folds / "Fold1" / "vali.txt", extra=" 6:1")
    out = tmp_path / "r"
    run_qbrank_experiment(
        str(qb_folds), str(out), settings=SETTINGS, n_threads=1, progress=False, n_features=6
    )
    assert (out / "folds" / "Fold1.json").exists()
    with pytest.raises(ValueError, match="n_features=0 must be an integer >= 1"):
        run_qbrank_experiment(str(qb_folds), str(out), settings=SETTINGS, n_features=0)


def test_qbrank_n_features_below_the_training_file_names_the_flag(qb_folds, tmp_path, capsys):
    rc, _, err = run(
        ["experiment", qb_folds, "-o", tmp_path / "r", *QB, "--n-features", "3"], capsys
    )
    one_line_error(rc, err, "train.txt:1", "is above --n-features 3")
    assert not (tmp_path / "r").exists()


def test_qbrank_warns_once_per_fold_of_shared_query_ids(qb_folds, tmp_path, capsys):
    """A fold whose test queries are training queries too: L3's numbers are those of
    queries the runs were trained on (L2 is the training file's)."""
    _rewrite(qb_folds / "Fold2" / "test.txt", qid_offset=-100)  # back to 0..11: shared
    rc, _, err = run(["experiment", qb_folds, "-o", tmp_path / "r", *QB], capsys)
    assert rc == 0, err
    lines = [li for li in err.splitlines() if "warning" in li]
    assert len(lines) == 1, err
    fold2 = qb_folds / "Fold2"
    assert lines[0].startswith("ltrboost: warning: fold 2/2: ")
    assert f"{fold2 / 'test.txt'} shares 12 query ids with {fold2 / 'train.txt'}" in lines[0]


def test_qbrank_shared_query_ids_warning_in_python(qb_folds, tmp_path):
    _rewrite(qb_folds / "Fold1" / "test.txt", qid_offset=-95)  # 5..16: 7 shared
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_qbrank_experiment(
            str(qb_folds), str(tmp_path / "r"), settings=SETTINGS, n_threads=1, progress=False
        )
    shared = [str(c.message) for c in caught if "query ids" in str(c.message)]
    assert len(shared) == 1, shared
    assert shared[0].startswith("fold 1/2: ")
    assert "shares 7 query ids" in shared[0]

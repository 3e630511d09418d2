"""The CLI, a twelfth adversarial pass: setup refusals of ``train`` that came after its
progress bar was drawn, ``experiment --protocol qbrank`` ignoring the grid flags it
was given, resumed experiments that noticed a data file changed in place only when
its size changed, and ``cv`` / ``eval`` scoring one-grade queries 1.0 silently.
Each problem found is one test (or one parametrised test) here."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

import ltrboost.experiment_qbrank as experiment_qbrank
from ltrboost.cli import main
from ltrboost.experiment import run_experiment
from ltrboost.experiment_qbrank import Settings, run_qbrank_experiment
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

FAST = ["--n-estimators", "2", "--min-samples-leaf", "5", "--max-leaf-nodes", "4"]
# write_letor_folds numbers every file's queries 0..11, as some LETOR sets do
pytestmark = pytest.mark.filterwarnings("ignore::ltrboost.io.letor.SharedQueriesWarning")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("advcli12") / "d"
    argv = ["generate", str(folder), "--n-queries", "12", "--docs-per-query", "8"]
    assert main([*argv, "--n-features", "4"]) == 0
    n = len((folder / "train.txt").read_text().splitlines())
    (folder / "positions.txt").write_text("".join(f"{i % 8 + 1}\n" for i in range(n)))
    return folder


def _one_grade_file(path: Path, n_queries: int = 12, docs: int = 6) -> Path:
    """A LETOR file whose every query holds documents of one grade (0, 1, 2 in turn)."""
    lines = [
        f"{q % 3} qid:{q} 1:{(q * 7 + d * 3) % 11} 2:{(q + d) % 5} 3:{d}"
        for q in range(1, n_queries + 1)
        for d in range(docs)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


# ------------------------------------------- 1. setup refusals before the progress bar
POSITION = ["--position", "{positions}"]


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (
            ["--objective", "lambdamart", "--split-criterion", "ole", "--quantized-gradients", "4"],
            "--quantized-gradients=4 does not combine with --split-criterion='ole'",
        ),
        (
            ["--objective", "xendcg", "--split-criterion", "ole"],
            "--split-criterion='ole' is not available for objective 'xendcg'",
        ),
        (
            ["--objective", "ranknet", "--unbiased", "true", *POSITION],
            "objective 'ranknet' does not debias clicks",
        ),
        (
            ["--unbiased", "true", "--split-criterion", "ole", *POSITION],
            "does not support --split-criterion='ole'",
        ),
        # decided by the data, not by the flags alone: before the bar all the same
        (
            ["--objective", "lambdamart", "--lambda-metric", "map", "--relevance-threshold", "10"],
            "--relevance-threshold=10 counts no training document relevant",
        ),
    ],
)
def test_train_setup_refusal_comes_before_the_progress_bar(data, tmp_path, capsys, flags, needle):
    """A combination train refuses was refused only once training had begun: the
    progress bar (``0/2 [00:00<?, ?tree/s]``, twice) stood on stderr before the error
    line.  The refusal is now the only output, and the output (and checkpoint) files
    are left as they were."""
    out = tmp_path / "m.json"
    out.write_text("before")
    flags = [f.format(positions=data / "positions.txt") for f in flags]
    argv = ["train", data / "train.txt", "-o", out, "--checkpoint-every", "1", *FAST, *flags]
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, needle)
    assert "tree/s" not in err
    assert out.read_text() == "before"
    assert sorted(os.listdir(tmp_path)) == ["m.json"]


def test_parameter_combination_refused_before_any_data_is_read(data, tmp_path, capsys):
    """A combination the flags alone decide is refused before TRAIN is read (as a bad
    single flag is): a missing file is not what the user hears about."""
    argv = ["train", tmp_path / "absent.txt", "-o", tmp_path / "m.json", *FAST]
    argv += ["--split-criterion", "ole", "--quantized-gradients", "4"]
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, "--quantized-gradients=4 does not combine")


def test_histogram_memory_refusal_comes_before_the_progress_bar(
    data, tmp_path, capsys, monkeypatch
):
    """Training over the histogram memory limit was refused after the bar was drawn."""
    monkeypatch.setenv("LTRBOOST_MAX_HISTOGRAM_BYTES", "1000")
    out = tmp_path / "m.json"
    rc, _, err = run(["train", data / "train.txt", "-o", out, *FAST], capsys)
    one_line_error(rc, err, "of histograms", "over the limit")
    assert not out.exists()


# ------------------------------------------- 2. experiment --protocol qbrank's flags
@pytest.fixture
def qbrank_settings(monkeypatch):
    """The settings ``experiment --protocol qbrank`` runs with (the run itself faked)."""
    got = {}

    def fake(folder, output, *, settings, **kw):
        got["settings"] = settings
        os.makedirs(output, exist_ok=True)
        Path(output, "table.md").write_text("table\n", encoding="utf-8")
        return {}

    monkeypatch.setattr(experiment_qbrank, "run_qbrank_experiment", fake)
    return got


def test_qbrank_protocol_honours_leaves_and_learning_rate(
    tmp_path, write_letor_folds, capsys, qbrank_settings
):
    """``--leaves 7 --learning-rates 0.2`` under ``--protocol qbrank`` ran with seed
    004's 20 leaves and eta 0.05, unsaid; one value of each now sets the trees of
    GBT and QBRank."""
    folds = write_letor_folds(tmp_path / "data", 1, 8, 5)
    argv = ["experiment", folds, "-o", tmp_path / "r", "--protocol", "qbrank", "-q"]
    rc, _, err = run([*argv, "--leaves", "7", "--learning-rates", "0.2"], capsys)
    assert rc == 0, err
    s = qbrank_settings["settings"]
    assert (s.max_leaf_nodes, s.learning_rate) == (7, 0.2)
    rc, _, err = run(argv, capsys)  # without them: the paper's
    assert rc == 0, err
    s = qbrank_settings["settings"]
    assert (s.max_leaf_nodes, s.learning_rate) == (20, 0.05)


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--systems", "lambdamart"], "--systems is a flag of the default protocol (xia)"),
        (["--criteria", "se"], "--criteria is a flag of the default protocol (xia)"),
        (["--system-grid", "mcrank=10:0.1"], "--system-grid is a flag of the default protocol"),
        (["--leaves", "10,20"], "--leaves '10,20': --protocol qbrank trains one tree size"),
        (["--learning-rates", "0.1,0.2"], "--learning-rates '0.1,0.2': --protocol qbrank"),
        (["--leaves", "1"], "--leaves=1"),
    ],
)
def test_qbrank_protocol_refuses_the_grid_flags_it_cannot_use(
    tmp_path, write_letor_folds, capsys, qbrank_settings, flags, needle
):
    """``--systems`` / ``--criteria`` / ``--system-grid`` (and a list of leaves or
    rates) were silently ignored by ``--protocol qbrank`` while ``--patience`` was
    refused: they are refused too, naming the flag."""
    folds = write_letor_folds(tmp_path / "data", 1, 8, 5)
    argv = ["experiment", folds, "-o", tmp_path / "r", "--protocol", "qbrank", "-q", *flags]
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, needle)
    assert "settings" not in qbrank_settings
    assert not (tmp_path / "r").exists()


# ------------------------------------------- 3. resume notices same-size changes
def _same_size_change(path: Path) -> None:
    """Change the last line's label (one digit for another), keeping size and mtime."""
    st = os.stat(path)
    text = path.read_text()
    head, last = text[:-1].rsplit("\n", 1)
    last = ("1" if last[0] != "1" else "0") + last[1:]
    path.write_text(f"{head}\n{last}\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.path.getsize(path) == st.st_size


KW = dict(max_trees=2, min_samples_leaf=2, n_threads=1, progress=False)
GRID = dict(systems=("lambdamart",), criteria=("se",), leaves=(4,), learning_rates=(0.1,))


def test_experiment_resume_notices_a_same_size_change(tmp_path, write_letor_folds):
    """A fold file changed in place with the same size (a label edited) was not
    noticed: the finished cells, made from the old file, were reused.  The cells record
    each file's SHA-256 and a resume compares it."""
    folds = write_letor_folds(tmp_path / "data", 1, 8, 5)
    out = tmp_path / "r"
    run_experiment(str(folds), str(out), **GRID, **KW)
    cell = next((out / "cells").iterdir())
    record = json.loads(cell.read_text())
    assert set(record["data_sha256"]) == {"train.txt", "vali.txt", "test.txt"}
    run_experiment(str(folds), str(out), **GRID, **KW)  # unchanged: resumed
    _same_size_change(folds / "Fold1" / "train.txt")
    with pytest.raises(ValueError, match=r"made from other data files .*train\.txt"):
        run_experiment(str(folds), str(out), **GRID, **KW)


def test_qbrank_resume_notices_a_same_size_change(tmp_path, write_letor_folds):
    """The same for ``--protocol qbrank``'s finished folds: a same-size change is
    computed again, with the warning a size change gets."""
    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    folds = write_letor_folds(tmp_path / "data", 1, 8, 5, single)
    out = tmp_path / "r"
    settings = Settings(n_estimators=2, min_samples_leaf=2, ranksvm_c_grid=(1.0,))
    run_qbrank_experiment(str(folds), str(out), settings=settings, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # unchanged: kept, no warning
        run_qbrank_experiment(str(folds), str(out), settings=settings, progress=False)
    _same_size_change(folds / "Fold1" / "vali.txt")
    with pytest.warns(UserWarning, match=r"from other data files .*vali\.txt"):
        run_qbrank_experiment(str(folds), str(out), settings=settings, progress=False)


# ------------------------------------------- 4. one-grade queries warned of
def test_cv_warns_of_a_fold_of_one_grade_queries(tmp_path, capsys):
    """A fold whose test queries all hold one grade scored NDCG 1.0 silently (no
    ranking changes it).  cv warns, naming the fold and the count; the scores are
    the same."""
    path = _one_grade_file(tmp_path / "flat.txt")
    argv = ["cv", path, "--folds", "2", "-q", *FAST, "--min-samples-leaf", "2"]
    rc, out, err = run(argv, capsys)
    assert rc == 0, err
    assert "fold 1/2: ndcg@10=1.0000  (6 queries)" in out
    for k in (1, 2):
        assert (
            f"ltrboost: warning: fold {k}/2: all 6 of its test queries hold documents of "
            "one grade" in err
        ), err


def test_cv_does_not_warn_of_judged_folds(data, capsys):
    rc, _, err = run(["cv", data / "train.txt", "--folds", "2", "-q", *FAST], capsys)
    assert rc == 0, err
    assert "one grade" not in err


@pytest.mark.parametrize("streamed", [True, False])
def test_eval_warns_of_a_file_of_one_grade_queries(data, tmp_path, capsys, monkeypatch, streamed):
    """``ltrboost eval`` of a file whose every query holds one grade printed NDCG 1.0
    without a word; it warns as cv does (streamed a block at a time or read whole)."""
    import ltrboost.cli.predict as predict

    model = tmp_path / "m.json"
    assert main(["train", str(data / "train.txt"), "-o", str(model), "-q", *FAST]) == 0
    capsys.readouterr()
    if not streamed:
        monkeypatch.setattr(predict, "_eval_streamed", lambda *a: None)
    else:
        monkeypatch.setattr(predict, "_EVAL_BLOCK_BYTES", 8)  # one row a block
    path = _one_grade_file(tmp_path / "flat.txt")
    rc, out, err = run(["eval", model, path, "--metric", "ndcg@10"], capsys)
    assert rc == 0, err
    assert "1.0000" in out
    assert f"{path}: all 12 of its queries hold documents of one grade" in err, err
    rc, _, err = run(["eval", model, data / "test.txt"], capsys)
    assert rc == 0, err
    assert "one grade" not in err

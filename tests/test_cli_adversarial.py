"""Inputs an adversarial pass found breaking the CLI's promises (stop 29): each one now
gets a one-line error naming the file, line or flag, and nothing the user had is lost."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ltrboost.booster import BoosterParams, train
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.experiment import run_experiment
from ltrboost.objectives.pair_selection import query_seed_base
from test_cli import assert_one_line_error as one_line_error
from test_cli import run


@pytest.fixture
def letor(tmp_path: Path) -> Path:
    """A small LETOR file with '#docid = ...' comments (3 queries x 6 documents)."""
    rng = np.random.default_rng(0)
    lines = []
    for q in range(3):
        for d in range(6):
            feats = " ".join(f"{k + 1}:{v:.3f}" for k, v in enumerate(rng.random(3)))
            lines.append(f"{d % 3} qid:{q + 1} {feats} #docid = D{q}_{d}")
    path = tmp_path / "small.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_seeds_beyond_int64_train():
    """random_state at or above 2**63 (a valid Python int) used to overflow the
    per-query seeds; seeds below 2**62 keep their streams.  Larger ones were then taken
    modulo 2**62 (2**64 was seed 0 in disguise): now refused, naming the range
    (test_smallend_adversarial6)."""
    X, y, q = make_ranking(n_queries=8, docs_per_query=(5, 10), n_features=4, random_state=0)[:3]
    ds = make_dataset(X, y, qid=q)
    for obj, kw in (("yetirank", {}), ("ranknet", {"pair_method": "sampled"})):
        train(BoosterParams(objective=obj, n_estimators=2, random_state=2**62 - 1, **kw), ds)
        for rs in (2**63 - 1, 2**64 + 5, 2**100):
            with pytest.raises(ValueError, match=r"must be at most 2\*\*62 - 1"):
                train(BoosterParams(objective=obj, n_estimators=2, random_state=rs, **kw), ds)
    assert query_seed_base(5, 2, 10) == 25
    assert query_seed_base(2**62 + 7, 0, 10) == 7


@pytest.mark.parametrize("metric", [",", " , "])
def test_metric_list_without_a_name(metric, letor, tmp_path, capsys):
    rc, _, err = run(
        ["train", letor, "--valid", letor, "--metric", metric, "-q", "-o", tmp_path / "m.json"],
        capsys,
    )
    one_line_error(rc, err, "no metric given")
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize(
    ("sidecar", "flags", "needle"),
    [
        (".query", [], "query size 9223372036854775808 is larger than any data file"),
        (".position", ["--unbiased", "true"], "position 99999999999999999999999 is too large"),
    ],
)
def test_huge_numbers_in_sidecar_files(sidecar, flags, needle, letor, tmp_path, capsys):
    text = "9223372036854775808\n" if sidecar == ".query" else "1\n" * 4 + "9" * 23 + "\n"
    if sidecar == ".query":
        data = tmp_path / "noqid.txt"
        data.write_text("".join(f"{i % 3} 1:{i / 10}\n" for i in range(6)))
    else:
        data = letor
        text += "1\n" * 13
    Path(str(data) + sidecar).write_text(text)
    rc, _, err = run(["train", data, "-q", "-o", tmp_path / "m.json", *flags], capsys)
    one_line_error(rc, err, f"{sidecar}:", needle)


def test_huge_position_in_a_click_log(letor, tmp_path, capsys):
    log = tmp_path / "log.txt"
    log.write_text("1 D0_0 1 1\n1 D0_1 99999999999999999999999 0\n")
    rc, _, err = run(
        ["clicks", "mine", log, "--data", letor, "--output", tmp_path / "p.txt"], capsys
    )
    one_line_error(rc, err, "log.txt:2", "is above")


def test_pair_weight_above_float32(letor, tmp_path, capsys):
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("1 D0_0 D0_1 1e39\n")
    rc, _, err = run(
        ["train", letor, "--objective", "ranknet", "--pairs", pairs, "-q", "-o", tmp_path / "m"],
        capsys,
    )
    one_line_error(rc, err, "pairs.txt:1", "above 3.403e+38")


def test_cr_only_line_ends(tmp_path, capsys):
    data = tmp_path / "mac.txt"
    data.write_bytes(b"1 qid:1 1:0.5\r0 qid:1 1:0.2\r")
    rc, _, err = run(["train", data, "-q", "-o", tmp_path / "m.json"], capsys)
    one_line_error(rc, err, "mac.txt:1", "only CRs: classic Mac OS line ends?")


def test_outputs_never_replace_inputs(letor, tmp_path, capsys):
    """An output that is one of the command's inputs (by name, by a link, or the data
    file's sidecar) is refused before anything runs; resuming into the same model
    file (train --resume M --output M) is still allowed."""
    model = tmp_path / "m.json"
    assert run(["train", letor, "-q", "--n-estimators", "2", "-o", model], capsys)[0] == 0
    data_before, model_before = letor.read_bytes(), model.read_bytes()
    link = tmp_path / "link.txt"
    link.symlink_to(letor)
    Path(str(letor) + ".query").write_text("6\n6\n6\n")
    cases = [
        ["train", letor, "-q", "-o", letor],
        ["train", letor, "-q", "-o", str(letor) + ".query"],
        ["predict", model, letor, "-o", model],
        ["predict", model, letor, "-o", link],
        ["export", model, "-f", "lightgbm", "-o", model],
    ]
    Path(str(letor) + ".query").unlink()
    for argv in cases:
        if ".query" in str(argv[-1]):
            Path(argv[-1]).write_text("6\n6\n6\n")
        rc, _, err = run(argv, capsys)
        one_line_error(rc, err, "names an input of this command")
        if ".query" in str(argv[-1]):
            assert Path(argv[-1]).read_text() == "6\n6\n6\n"
            Path(argv[-1]).unlink()
    assert letor.read_bytes() == data_before
    assert model.read_bytes() == model_before
    rc, _, err = run(
        ["train", letor, "-q", "--n-estimators", "3", "--resume", model, "-o", model], capsys
    )
    assert rc == 0, err


def test_eval_refuses_a_file_given_twice(letor, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert run(["train", letor, "-q", "--n-estimators", "2", "-o", model], capsys)[0] == 0
    rc, _, err = run(["eval", model, letor, letor], capsys)
    one_line_error(rc, err, "given twice")


def test_small_flag_messages(tmp_path, capsys):
    rc, _, err = run(["generate", tmp_path / "g", "--random-state", "-1"], capsys)
    one_line_error(rc, err, "--random-state=-1")
    rc, _, err = run(["experiment", tmp_path, "--max-trees", "0"], capsys)
    one_line_error(rc, err, "--max-trees 0 must be >= 1")
    rc, _, err = run(["experiment", tmp_path, "--system-grid", "lambdamart=x:y"], capsys)
    one_line_error(rc, err, "--system-grid 'lambdamart=x:y'", "LEAVES must be integers")


def test_experiment_refuses_to_reuse_cells_made_with_other_settings(
    write_letor_folds, tmp_path, capsys
):
    """A finished cell is reused only with the settings it was made with: a second run
    with another tree cap used to report the old cells as if they were new."""
    root = write_letor_folds(tmp_path / "data", 1, 10, 6)
    out = tmp_path / "r"
    kw = dict(
        systems=("mcrank",),
        criteria=("se",),
        leaves=(4,),
        learning_rates=(0.1,),
        min_samples_leaf=2,
        n_threads=1,
        progress=False,
    )
    run_experiment(str(root), str(out), max_trees=2, **kw)
    run_experiment(str(root), str(out), max_trees=2, **kw)  # same settings: resumes
    with pytest.raises(ValueError, match=r"max_trees 2 \(this run: 5\)"):
        run_experiment(str(root), str(out), max_trees=5, **kw)
    with pytest.raises(ValueError, match=r"patience None \(this run: 3\)"):
        run_experiment(str(root), str(out), max_trees=2, patience=3, **kw)
    (cell,) = (out / "cells").iterdir()
    assert json.loads(cell.read_text())["settings"]["max_trees"] == 2
    # the CLI: an se-only run has no table, and says so
    rc, _, err = run(
        ["experiment", root, "-o", out, "--max-trees", "2", "--systems", "mcrank",
         "--criteria", "se", "--leaves", "4", "--learning-rates", "0.1",
         "--min-samples-leaf", "2", "--quiet"],
        capsys,
    )  # fmt: skip
    assert rc == 1
    assert "the table is empty" in err


def test_a_checkpoint_link_to_an_input_is_refused(letor, tmp_path, capsys):
    """OUTPUT.checkpoint is an output too: a link there to the training data used to
    have the data overwritten by the checkpoint."""
    data = tmp_path / "data.txt"
    data.write_bytes(letor.read_bytes())
    before = data.read_bytes()
    out = tmp_path / "o.json"
    Path(str(out) + ".checkpoint").symlink_to(data)
    argv = ["train", data, "-q", "-o", out, "--n-estimators", "4", "--checkpoint-every", "2"]
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, "--checkpoint-every's OUTPUT.checkpoint names an input")
    assert data.read_bytes() == before


def test_resuming_from_the_checkpoint_removes_it(letor, tmp_path, capsys):
    out = tmp_path / "o.json"
    ck = Path(str(out) + ".checkpoint")
    assert run(["train", letor, "-q", "-o", ck, "--n-estimators", "2"], capsys)[0] == 0
    assert (
        run(["train", letor, "-q", "-o", out, "--n-estimators", "3", "--resume", ck], capsys)[0]
        == 0
    )
    assert out.exists()
    assert not ck.exists()


def test_an_interrupted_convert_leaves_nothing(letor, tmp_path, monkeypatch):
    """convert writes into a hidden folder renamed at the end: a conversion stopped
    half-way (here: the third file fails) leaves neither the output nor the folder."""
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from ltrboost.io.parquet import letor_to_parquet

    real, calls = pq.write_table, []

    def failing(*args, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(pq, "write_table", failing)
    with pytest.raises(KeyboardInterrupt):
        letor_to_parquet(letor, tmp_path / "out", rows_per_file=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.txt"]
    monkeypatch.setattr(pq, "write_table", real)
    (tmp_path / "out").mkdir()  # an existing empty folder is fine
    files = letor_to_parquet(letor, tmp_path / "out", rows_per_file=6)
    assert [Path(f).name for f in files] == ["part.00000.parquet", "part.00001.parquet",
                                             "part.00002.parquet"]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "small.txt"]


def test_resume_with_other_parameters_warns(letor, tmp_path, capsys):
    """A resumed run whose flags (or defaults) differ from the model's continues with
    them; it now says so, naming each, instead of recording them silently."""
    first = tmp_path / "r1.json"
    flags = ["-q", "--learning-rate", "0.2", "--subsample", "0.8"]
    assert run(["train", letor, *flags, "-o", first, "--n-estimators", "3"], capsys)[0] == 0
    rc, _, err = run(
        [
            "train",
            letor,
            "-q",
            "-o",
            tmp_path / "r2.json",
            "--n-estimators",
            "5",
            "--resume",
            first,
        ],
        capsys,
    )
    assert rc == 0
    # the value the new rounds use (the default), not None
    assert "--learning-rate 0.1 (model: 0.2), --subsample 1.0 (model: 0.8) differ" in err
    rc, _, err = run(
        ["train", letor, *flags, "-o", tmp_path / "r3.json", "--n-estimators", "5",
         "--resume", first],
        capsys,
    )  # fmt: skip
    assert rc == 0
    assert "differ" not in err


def test_convert_into_a_symlinked_empty_folder_follows_the_link(letor, tmp_path, capsys):
    """OUT a symlink to an empty folder failed with 'OUT: Not a directory' (os.rmdir on
    the link); outputs elsewhere follow a link and keep it (README: Errors and
    guarantees)."""
    pytest.importorskip("pyarrow")
    (tmp_path / "target").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "target")
    for out in (link, f"{link}/"):
        rc, _, err = run(["convert", letor, out, "-q"], capsys)
        assert rc == 0, err
        assert link.is_symlink()
        assert sorted(p.name for p in (tmp_path / "target").iterdir()) == ["part.00000.parquet"]
        for p in (tmp_path / "target").iterdir():
            p.unlink()
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "new")
    rc, _, err = run(["convert", letor, dangling, "-q"], capsys)
    assert rc == 0, err
    assert dangling.is_symlink()
    assert (tmp_path / "new" / "part.00000.parquet").is_file()


def test_convert_to_an_empty_path_is_refused(letor, tmp_path, capsys, monkeypatch):
    """OUT '' made a temporary folder in the parent of the working directory and failed
    naming it ('/tmp/..x.tmp: No such file or directory')."""
    pytest.importorskip("pyarrow")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    rc, _, err = run(["convert", letor, ""], capsys)
    assert rc == 2
    assert err == "ltrboost: error: convert: the output folder is an empty path\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.txt", "work"]


def test_resuming_the_checkpoint_of_the_early_stop_round_writes_the_uninterrupted_model(
    tmp_path, capsys
):
    """A run killed after writing its checkpoint of the round where early stopping fires
    (before its output) was resumed into more rounds: a model with extra trees."""
    from ltrboost.io.letor import dump_svmlight

    X, y, q = make_ranking(n_queries=40, docs_per_query=(5, 10), n_features=4, random_state=0)[:3]
    train_txt, valid_txt = tmp_path / "t.txt", tmp_path / "v.txt"
    dump_svmlight(train_txt, X[q < 30], y[q < 30], q[q < 30])
    dump_svmlight(valid_txt, X[q >= 30], y[q >= 30], q[q >= 30])
    flags = ["-q", "--valid", valid_txt, "--early-stopping-rounds", "1", "--learning-rate", "1"]
    full = tmp_path / "full.json"
    assert run(["train", train_txt, "-o", full, "--n-estimators", "50", *flags], capsys)[0] == 0
    stop = len(json.loads(full.read_text())["trees"])
    assert stop < 50
    out = tmp_path / "out.json"
    ck = Path(f"{out}.checkpoint")  # what the killed run left: its checkpoint of round stop
    argv = ["train", train_txt, "-o", ck, "--n-estimators", str(stop), *flags]
    assert run(argv, capsys)[0] == 0
    argv = ["train", train_txt, "-o", out, "--n-estimators", "50", "--resume", ck, *flags]
    assert run([*argv, "--checkpoint-every", "1"], capsys)[0] == 0
    assert out.read_bytes() == full.read_bytes()
    assert not ck.exists()


def test_a_model_trained_on_data_without_features_loads(tmp_path, capsys):
    """A LETOR file of labels and qids only trains a constant model (README: data with
    no feature columns trains, with a warning), but the file written had n_features 0,
    which loading refused: 'n_features 0 is not between 1 and 2147483647'."""
    data = tmp_path / "nofeat.txt"
    data.write_text("1 qid:1 # a\n0 qid:1\n2 qid:2\n0 qid:2\n")
    model = tmp_path / "m.json"
    rc, _, err = run(["train", data, "-q", "-o", model, "--n-estimators", "2"], capsys)
    assert rc == 0, err
    rc, out, err = run(["predict", model, data], capsys)
    assert rc == 0, err
    assert len(set(out.split())) == 1
    assert len(out.split()) == 4
    assert run(["eval", model, data], capsys)[0] == 0
    wider = tmp_path / "f3.txt"
    wider.write_text("1 qid:1 3:1\n")
    rc_err = run(["predict", model, wider], capsys)[:3:2]
    one_line_error(*rc_err, "larger than the model's 0 features")


def test_an_output_that_cannot_be_written_fails_before_training(
    letor, tmp_path, capsys, monkeypatch
):
    """train --output in a missing folder (or naming a directory) trained every round
    and only then failed: hours of a large run lost to a typo. Now it fails before the
    data is read; so do predict and convert."""
    import ltrboost.cli.predict as cli

    def no_reading(*a, **k):
        raise AssertionError("the data was read before the output was checked")

    monkeypatch.setattr("ltrboost.io.letor.load_svmlight", no_reading)
    monkeypatch.setattr(cli, "_read_for_model", no_reading)
    missing = tmp_path / "nofolder" / "m.json"
    for argv in (
        ["train", letor, "-q", "-o", missing],
        ["train", letor, "-q", "-o", tmp_path],
        ["predict", letor, letor, "-o", missing],
        ["convert", letor, tmp_path / "nofolder" / "out.parquet"],
    ):
        rc, _, err = run(argv, capsys)
        one_line_error(rc, err)
        assert "does not exist" in err or "is a directory" in err, err


def test_an_output_folder_that_refuses_files_fails_before_training(
    letor, tmp_path, capsys, monkeypatch
):
    """A folder where no file can be created (read-only, /proc) failed only at the
    end, after training; convert named its temporary folder instead of OUT."""
    import os
    import tempfile

    real_mkstemp, real_mkdtemp = tempfile.mkstemp, tempfile.mkdtemp
    ro = tmp_path / "ro"
    ro.mkdir()

    def refuse(real):
        def f(*a, dir=None, **k):
            if dir is not None and os.path.samefile(dir, ro):
                raise PermissionError(13, "Permission denied", os.path.join(dir, ".x.tmp"))
            return real(*a, dir=dir, **k)

        return f

    real_open = os.open

    def refusing_open(path, flags, *a, **k):  # the atomic writer's own temporary files
        if flags & os.O_CREAT and os.path.samefile(os.path.dirname(path) or ".", ro):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, flags, *a, **k)

    real_mkdir = os.mkdir

    def refusing_mkdir(path, *a, **k):  # convert's temporary folder
        parent = os.path.dirname(os.fsdecode(path)) or "."
        if os.path.isdir(parent) and os.path.samefile(parent, ro):
            raise PermissionError(13, "Permission denied", path)
        return real_mkdir(path, *a, **k)

    monkeypatch.setattr(os, "mkdir", refusing_mkdir)
    monkeypatch.setattr(tempfile, "mkstemp", refuse(real_mkstemp))
    monkeypatch.setattr(tempfile, "mkdtemp", refuse(real_mkdtemp))
    monkeypatch.setattr(os, "open", refusing_open)
    monkeypatch.setattr(
        "ltrboost.io.letor.load_svmlight",
        lambda *a, **k: (_ for _ in ()).throw(AssertionError("data read first")),
    )
    for argv, out in (
        (["train", letor, "-q", "-o", ro / "m.json"], ro / "m.json"),
        (["convert", letor, ro / "out.parquet"], ro / "out.parquet"),
    ):
        rc, _, err = run(argv, capsys)
        one_line_error(rc, err, f"{out}: Permission denied")
        assert ".tmp" not in err

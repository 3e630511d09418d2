"""The CLI, a fifth adversarial pass: every message names the flag the user typed (not
the Python parameter), every input path is checked before any data is read, a flag
given twice with two values says so, and the commands share their common flags
(``cv``, ``eval`` and ``predict`` take ``--quiet``; ``eval`` takes ``--n-threads`` as
``predict`` does).  Each problem found is one test here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ltrboost.io.letor
from ltrboost.cli import build_parser, main
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

FAST = ["-q", "--n-estimators", "2", "--min-samples-leaf", "5", "--max-leaf-nodes", "4"]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("advcli7") / "d"
    argv = ["generate", str(folder), "--n-queries", "12", "--docs-per-query", "8"]
    assert main([*argv, "--n-features", "4"]) == 0
    return folder


@pytest.fixture(scope="module")
def model(data: Path) -> Path:
    path = data.parent / "m.json"
    assert main(["train", str(data / "train.txt"), "-o", str(path), *FAST]) == 0
    return path


@pytest.fixture
def no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a data file is an error saying which file: a check that must come
    before any data is read shows as its own message, not as this one."""

    def refuse(path, *args, **kwargs):
        raise ValueError(f"READ {path}")

    monkeypatch.setattr(ltrboost.io.letor, "load_svmlight", refuse)


# ------------------------------------------------------------ 1. messages name flags
@pytest.mark.parametrize("objective", ["ranknet", "mart", "gbrank"])
def test_train_bad_gain_names_the_flag(data, tmp_path, capsys, objective):
    """A --gain the objective does not read was refused by the metrics' check as
    ``gain='abc' is not one of ...`` (the Python keyword; lambdamart's said --gain)."""
    argv = ["train", data / "train.txt", "-o", tmp_path / "m.json", *FAST]
    rc, _, err = run([*argv, "--objective", objective, "--gain", "abc"], capsys)
    line = one_line_error(rc, err, "--gain='abc' is not one of")
    assert " gain=" not in line


def test_cv_bad_gain_named_before_the_data_is_read(data, capsys, no_reading):
    """cv found a bad --gain only once the data was read (its metrics' first use), and
    named it ``gain=``."""
    argv = ["cv", data / "train.txt", "--folds", "2", "--objective", "ranknet"]
    rc, _, err = run([*argv, "--gain", "abc"], capsys)
    line = one_line_error(rc, err, "--gain='abc' is not one of")
    assert "READ" not in line


def test_non_finite_training_names_the_flags(data, tmp_path, capsys):
    """Training that overflows listed its likely causes as Python keywords
    (``learning_rate=1e+300``, ``lower learning_rate``)."""
    argv = ["train", data / "train.txt", "-o", tmp_path / "m.json", *FAST]
    rc, _, err = run([*argv, "--objective", "mart", "--learning-rate", "1e300"], capsys)
    line = one_line_error(rc, err, "--learning-rate=1e+300", "--l2-regularization=0")
    assert "lower --learning-rate (or another parameter listed)" in line
    assert "learning_rate" not in line
    assert "l2_regularization" not in line
    assert not (tmp_path / "m.json").exists()


# --------------------------------------------------- 2. inputs checked before reading
@pytest.mark.parametrize(
    ("flag", "extra"),
    [
        ("--valid", []),
        ("--pairs", ["--objective", "ranknet"]),
        ("--position", ["--unbiased", "true"]),
        ("--resume", []),
    ],
)
def test_train_missing_input_named_before_the_data_is_read(
    data, tmp_path, capsys, no_reading, flag, extra
):
    """A missing --valid / --pairs / --position file was reported once the (possibly
    huge) training file had been read, and did not name the flag."""
    missing = tmp_path / "nope.txt"
    argv = ["train", data / "train.txt", "-o", tmp_path / "m.json", *FAST, *extra]
    rc, _, err = run([*argv, flag, missing], capsys)
    line = one_line_error(rc, err, f"{flag} {missing}: ", "No such file or directory")
    assert "READ" not in line
    assert not (tmp_path / "m.json").exists()


def test_train_input_folder_named_before_the_data_is_read(data, tmp_path, capsys, no_reading):
    argv = ["train", data / "train.txt", "-o", tmp_path / "m.json", *FAST]
    rc, _, err = run([*argv, "--valid", data / "vali.txt", "--valid", tmp_path], capsys)
    one_line_error(rc, err, f"--valid {tmp_path}: Is a directory")


def test_eval_every_data_file_checked_before_the_first_is_read(
    model, data, tmp_path, capsys, no_reading
):
    missing = tmp_path / "nope.txt"
    rc, _, err = run(["eval", model, data / "test.txt", missing], capsys)
    line = one_line_error(rc, err, f"{missing}: No such file or directory")
    assert "READ" not in line


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["clicks", "mine", "{log}", "--data", "{nope}", "-o", "{out}"], "--data {nope}:"),
        (["clicks", "mine", "{nope}", "--data", "{train}", "-o", "{out}"], "{nope}:"),
        (["experiment", "{nope}", "-o", "{out}"], "{nope}: No such file or directory"),
        (["experiment", "{train}", "-o", "{out}"], "{train}: Not a directory"),
        (
            ["export", "{model}", "-f", "solr", "-o", "{out}", "--feature-names", "{nope}"],
            "--feature-names {nope}: cannot read feature names: No such file or directory",
        ),
    ],
)
def test_other_commands_name_a_missing_input(data, model, tmp_path, capsys, argv, needle):
    (tmp_path / "log.txt").write_text("1 d1 1 1\n")
    names = {
        "log": tmp_path / "log.txt",
        "nope": tmp_path / "nope",
        "out": tmp_path / "out",
        "train": data / "train.txt",
        "model": model,
    }
    rc, _, err = run([a.format(**names) for a in argv], capsys)
    one_line_error(rc, err, needle.format(**names))
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_and_dev_stdin_inputs_are_not_refused_nor_opened(data, tmp_path, capsys, no_reading):
    """A pipe given by name (a FIFO, /dev/stdin) is a valid input: the check looks at
    it without opening it (opening a FIFO blocks until a writer comes, and reading
    one consumes it)."""
    fifo = tmp_path / "valid.fifo"
    os.mkfifo(fifo)
    argv = ["train", data / "train.txt", "-o", tmp_path / "m.json", *FAST, "--valid", fifo]
    rc, _, err = run(argv, capsys)
    one_line_error(rc, err, f"READ {data / 'train.txt'}")  # got as far as reading
    if os.path.exists("/dev/stdin"):
        rc, _, err = run(["predict", tmp_path / "no-model.json", "/dev/stdin"], capsys)
        one_line_error(rc, err, f"{tmp_path / 'no-model.json'}: cannot read: No such file")


@pytest.mark.skipif(
    os.name != "posix" or os.geteuid() == 0, reason="root reads any file; needs POSIX modes"
)
def test_unreadable_input_named_before_the_data_is_read(data, tmp_path, capsys, no_reading):
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("1 a b\n")
    pairs.chmod(0)
    argv = ["train", data / "train.txt", "-o", tmp_path / "m.json", *FAST]
    rc, _, err = run([*argv, "--objective", "ranknet", "--pairs", pairs], capsys)
    one_line_error(rc, err, f"--pairs {pairs}: cannot read pairs file: Permission denied")


# ------------------------------------------------------------ 3. repeated flags warn
def test_repeated_flag_warns_naming_both_values(data, tmp_path, capsys, no_reading):
    """``--learning-rate 0.1 --learning-rate 0.3`` kept 0.3 without a word."""
    argv = ["train", data / "train.txt", "-o", tmp_path / "m.json", *FAST]
    rc, _, err = run([*argv, "--learning-rate", "0.1", "--learning-rate=0.3"], capsys)
    assert rc == 2
    lines = err.strip().splitlines()
    assert lines[0] == (
        "ltrboost: warning: --learning-rate given twice (0.1, then 0.3); the last one, 0.3, is used"
    )
    assert lines[1].startswith("ltrboost: error: READ")


def test_repeated_flag_through_its_short_spelling(model, data, tmp_path, capsys):
    out1, out2 = tmp_path / "a.txt", tmp_path / "b.txt"
    rc, _, err = run(["predict", model, data / "test.txt", "-o", out1, "--output", out2], capsys)
    assert rc == 0, err
    assert f"--output given twice (-o {out1}, then --output {out2})" in err
    assert out2.exists()
    assert not out1.exists()


@pytest.mark.parametrize(
    "repeat",
    [
        ["--n-threads", "1", "--n-threads", "1"],  # the same value: nothing is lost
        ["--missing-token", "NULL", "--missing-token", "NA"],  # meant to be repeated
        ["-q", "-q"],
    ],
)
def test_no_warning_for_a_harmless_or_repeatable_repeat(model, data, capsys, repeat):
    if repeat[0] == "-q":
        argv = ["eval", model, data / "test.txt", *repeat]
    else:
        argv = ["predict", model, data / "test.txt", *repeat]
    rc, _, err = run(argv, capsys)
    assert rc == 0, err
    assert "warning" not in err


def test_repeated_valid_is_still_a_list(data, tmp_path, capsys, no_reading):
    argv = ["train", data / "train.txt", "-o", tmp_path / "m.json", *FAST]
    _rc, _, err = run([*argv, "--valid", data / "vali.txt", "--valid", data / "test.txt"], capsys)
    assert "warning" not in err


# ------------------------------------------------------ 4. common flags, consistently
def test_cv_takes_quiet_and_shows_a_bar_without_it(data, capsys):
    argv = ["cv", data / "train.txt", "--folds", "2", *FAST[1:]]
    rc, out, err = run([*argv, "--quiet"], capsys)
    assert rc == 0, err
    assert err == ""
    assert out.count("fold ") == 2
    rc, out2, err = run(argv, capsys)
    assert rc == 0, err
    assert out2 == out  # the bar is on stderr only
    assert "fold 1/2" in err
    assert "fold 2/2" in err
    assert "tree" in err


@pytest.mark.parametrize("command", ["train", "cv", "eval", "predict", "convert", "experiment"])
def test_quiet_everywhere_it_makes_sense(command):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    flags = {o for a in sub._actions for o in a.option_strings}
    assert {"-q", "--quiet"} <= flags


def test_eval_takes_n_threads_as_predict_does(model, data, capsys):
    rc, out1, err = run(["eval", model, data / "test.txt", "--n-threads", "1"], capsys)
    assert rc == 0, err
    rc, out2, err = run(["eval", model, data / "test.txt"], capsys)
    assert rc == 0
    assert out1 == out2


def test_readme_documents_the_new_flags():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    block = readme.split("## Command line", 1)[1].split("```", 2)[1]
    cv = block[block.index("ltrboost cv") : block.index("ltrboost inspect")]
    ev = block[block.index("ltrboost eval") : block.index("ltrboost cv")]
    pr = block[block.index("ltrboost predict") : block.index("ltrboost eval")]
    assert "[--quiet]" in cv
    assert "[--quiet]" in ev
    assert "[--quiet]" in pr
    assert "[--n-threads N]" in ev
    assert "given twice with two values warns" in readme


def test_a_parquet_folder_as_valid_says_what_it_is(data, tmp_path, capsys, no_reading):
    """The early check keeps the reader's word for convert's output folder."""
    folder = tmp_path / "v.parquet"
    folder.mkdir()
    (folder / "part.00000.parquet").write_bytes(b"PAR1")
    argv = ["train", data / "train.txt", "-o", tmp_path / "m.json", *FAST]
    rc, _, err = run([*argv, "--valid", folder], capsys)
    one_line_error(rc, err, f"--valid {folder}: is a folder of Parquet files")

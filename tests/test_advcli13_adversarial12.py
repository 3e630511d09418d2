"""The CLI's file handling, a thirteenth adversarial pass: ``experiment``'s fold files
that are there but cannot be read (a broken link, a folder, a FIFO), which skipped the
fold silently or called it "without" the file, and the readers of the other text
inputs (``--pairs``, click logs, ``.position`` / ``.query`` files, ``--feature-names``)
naming a compressed file as one, as the data and model readers do.
Each problem found is one test (or one parametrised test) here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ltrboost.experiment import find_folds
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

# write_letor_folds numbers every file's queries 0..11, as some LETOR sets do
pytestmark = pytest.mark.filterwarnings("ignore::ltrboost.io.letor.SharedQueriesWarning")

FOLD_FILES = ("train.txt", "vali.txt", "test.txt")


# ------------------------------------ 1. a fold whose files are there but not readable
def _broken(fold: Path, name: str, kind: str) -> str:
    """Put at ``fold/name`` something that is no data file; the words the error uses."""
    path = fold / name
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "broken link":
        path.symlink_to(fold.parent / "moved" / name)
        return "does not exist"
    if kind == "folder":
        path.mkdir()
        return "is a folder"
    os.mkfifo(path)
    return "not a regular file"


@pytest.mark.parametrize("kind", ["broken link", "folder", "fifo"])
def test_a_fold_of_unreadable_files_is_not_skipped(tmp_path, write_letor_folds, kind):
    """Fold2's three files links to a disk that is gone (or folders, or FIFOs): the
    fold was "not a fold", skipped, and the report averaged Fold1 alone, unsaid (as
    the comment of _fold_files says a fold missing one file must not)."""
    root = write_letor_folds(tmp_path / "folds", 2, 6, 3)
    for name in FOLD_FILES:
        words = _broken(root / "Fold2", name, kind)
    with pytest.raises(ValueError, match=r"train\.txt") as e:
        find_folds(str(root))
    msg = str(e.value)
    assert str(root / "Fold2" / "train.txt") in msg, msg
    assert words in msg, msg


@pytest.mark.parametrize("kind", ["broken link", "folder"])
def test_a_fold_file_that_is_there_is_not_called_missing(tmp_path, write_letor_folds, kind):
    """One file of the fold a broken link (or a folder): the error said "fold without
    vali.txt", of a vali.txt that is there; it names the file and what it is."""
    root = write_letor_folds(tmp_path / "folds", 1, 6, 3)
    words = _broken(root / "Fold1", "vali.txt", kind)
    with pytest.raises(ValueError, match=r"vali\.txt") as e:
        find_folds(str(root))
    msg = str(e.value)
    assert "without" not in msg, msg
    assert str(root / "Fold1" / "vali.txt") in msg, msg
    assert words in msg, msg


def test_experiment_names_the_broken_fold_file_in_one_line(tmp_path, write_letor_folds, capsys):
    root = write_letor_folds(tmp_path / "folds", 2, 6, 3)
    for name in FOLD_FILES:
        _broken(root / "Fold2", name, "broken link")
    out = tmp_path / "report"
    rc, _, err = run(["experiment", root, "-o", out, "--max-trees", "2", "-q"], capsys)
    one_line_error(rc, err, "Fold2", "train.txt", "does not exist")
    assert not out.exists()


# ------------------------------- 2. compressed text inputs other than the data and model
COMPRESSORS = {"gzip": "gzip", "bzip2": "bz2", "xz": "lzma"}

PAIRS_TEXT = "# qid preferred_docid other_docid weight\n1 a b 1\n1 b c 2\n"
LOG_TEXT = "qid\tdocid\tposition\tclicked\n1\ta\t1\t0\n1\tb\t2\t1\n1\tc\t3\t0\n"


def _packed(path: Path, text: str, kind: str) -> Path:
    import importlib

    module = importlib.import_module(COMPRESSORS[kind])
    path.write_bytes(module.compress(text.encode()))
    return path


def _assert_named_compressed(e: BaseException, path: Path, kind: str) -> None:
    msg = str(e)
    assert msg.startswith(f"{path}:"), msg
    assert f"{kind}-compressed" in msg, msg
    assert "decompress it first" in msg, msg


@pytest.mark.parametrize("kind", list(COMPRESSORS))
def test_a_compressed_pairs_file_says_so(tmp_path, kind):
    """A LETOR file or a model gzip-compressed says so; a --pairs file read "not UTF-8
    text (byte 0x8b)", which does not say what to do."""
    import numpy as np

    from ltrboost.dataset import LTRInputError
    from ltrboost.io.pairs import read_pairs_file

    path = _packed(tmp_path / f"pairs.{kind}", PAIRS_TEXT, kind)
    with pytest.raises(LTRInputError) as e:
        read_pairs_file(path, np.array([1, 1, 1]), ["a", "b", "c"])
    _assert_named_compressed(e.value, path, kind)


@pytest.mark.parametrize("kind", list(COMPRESSORS))
def test_a_compressed_click_log_says_so(tmp_path, kind):
    from ltrboost.clicks import read_click_log
    from ltrboost.dataset import LTRInputError

    path = _packed(tmp_path / f"log.{kind}", LOG_TEXT, kind)
    with pytest.raises(LTRInputError) as e:
        read_click_log(path)
    _assert_named_compressed(e.value, path, kind)


@pytest.mark.parametrize("kind", list(COMPRESSORS))
@pytest.mark.parametrize("sidecar", ["query", "position"])
def test_a_compressed_query_or_position_file_says_so(tmp_path, kind, sidecar):
    from ltrboost.dataset import LTRInputError
    from ltrboost.io.queryfile import read_position_file, read_query_file

    path = _packed(tmp_path / f"data.txt.{sidecar}", "1\n2\n3\n" * 20, kind)
    read = read_query_file if sidecar == "query" else lambda p: read_position_file(p, 60)
    with pytest.raises(LTRInputError) as e:
        read(path)
    _assert_named_compressed(e.value, path, kind)


SMALL = ["--min-samples-leaf", "2", "--max-leaf-nodes", "4"]  # trees of 30 documents


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from ltrboost.cli import main

    folder = tmp_path_factory.mktemp("advcli13")
    argv = ["generate", folder / "d", "--n-queries", "6", "--docs-per-query", "5"]
    assert main([str(a) for a in [*argv, "--n-features", "3"]]) == 0
    out = folder / "m.json"
    argv = ["train", folder / "d" / "train.txt", "-o", out, "-q", *SMALL, "--n-estimators", "2"]
    assert main([str(a) for a in argv]) == 0
    return out


@pytest.mark.parametrize("kind", list(COMPRESSORS))
def test_compressed_feature_names_say_so(model, tmp_path, capsys, kind):
    """``export --feature-names names.txt.gz``: "cannot read feature names FILE: not
    UTF-8 text (byte 0x8b at offset 1)", the file not first and no line, as no other
    input's error; now ``FILE:1: the file is gzip-compressed ...``."""
    names = _packed(tmp_path / f"names.{kind}", "a\nb\nc\n", kind)
    out = tmp_path / "e.txt"
    argv = ["export", model, "-f", "ranklib", "-o", out, "--feature-names", names]
    rc, _, err = run(argv, capsys)
    line = one_line_error(rc, err, f"{kind}-compressed", "decompress it first")
    assert line.startswith(f"ltrboost: error: {names}:1: "), line
    assert not out.exists()


def test_feature_names_not_utf8_name_the_line(model, tmp_path, capsys):
    names = tmp_path / "names.txt"
    names.write_bytes(b"a\nb\ncaf\xe9\n")
    argv = ["export", model, "-f", "ranklib", "-o", tmp_path / "e.txt", "--feature-names", names]
    rc, _, err = run(argv, capsys)
    line = one_line_error(rc, err, "not UTF-8 text (byte 0xe9)")
    assert line.startswith(f"ltrboost: error: {names}:3: "), line


def test_clicks_mine_names_a_compressed_log_in_one_line(tmp_path, capsys):
    data = tmp_path / "data.txt"
    data.write_text(
        "".join(f"{g} qid:1 1:{g} # docid = {d}\n" for g, d in zip("012", "abc", strict=True))
    )
    log = _packed(tmp_path / "log.txt.gz", LOG_TEXT, "gzip")
    out = tmp_path / "pairs.txt"
    rc, _, err = run(["clicks", "mine", log, "--data", data, "--output", out], capsys)
    one_line_error(rc, err, f"{log}:1: ", "gzip-compressed", "decompress it first")
    assert not out.exists()


# ------------------------------------- 3. a checkpoint left by a run that did not finish
def _train(data: Path, out: Path, *extra) -> list:
    return ["train", data, "-o", out, "--n-estimators", "3", "-q", *SMALL, *extra]


def test_a_left_checkpoint_is_not_replaced_unsaid(model, tmp_path, capsys):
    """``OUT.checkpoint`` of a killed run (hours of rounds) and the same command run
    again, ``--resume`` forgotten: the new run's first checkpoint replaced it and its
    end removed it, without a word; now a warning names it and how to continue it."""
    data = model.parent / "d" / "train.txt"
    out = tmp_path / "z.json"
    ck = tmp_path / "z.json.checkpoint"
    ck.write_bytes(model.read_bytes())
    rc, _, err = run(_train(data, out, "--checkpoint-every", "1"), capsys)
    assert rc == 0, err
    warned = [x for x in err.splitlines() if x.startswith("ltrboost: warning:")]
    assert len(warned) == 1, err
    assert str(ck) in warned[0], warned
    assert f"--resume {ck}" in warned[0], warned


def test_no_checkpoint_warning_when_resuming_it_or_without_checkpoints(model, tmp_path, capsys):
    data = model.parent / "d" / "train.txt"
    out = tmp_path / "z.json"
    ck = tmp_path / "z.json.checkpoint"
    ck.write_bytes(model.read_bytes())
    rc, _, err = run(_train(data, out, "--checkpoint-every", "1", "--resume", ck), capsys)
    assert rc == 0, err
    assert "ltrboost: warning" not in err, err
    ck.write_bytes(model.read_bytes())
    rc, _, err = run(_train(data, out), capsys)  # no checkpoints: it is left as it is
    assert rc == 0, err
    assert "ltrboost: warning" not in err, err
    assert ck.read_bytes() == model.read_bytes()

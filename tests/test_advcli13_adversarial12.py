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
    with pytest.raises(ValueError) as e:
        find_folds(str(root))
    msg = str(e.value)
    assert str(root / "Fold2" / "train.txt") in msg and words in msg, msg


@pytest.mark.parametrize("kind", ["broken link", "folder"])
def test_a_fold_file_that_is_there_is_not_called_missing(tmp_path, write_letor_folds, kind):
    """One file of the fold a broken link (or a folder): the error said "fold without
    vali.txt", of a vali.txt that is there; it names the file and what it is."""
    root = write_letor_folds(tmp_path / "folds", 1, 6, 3)
    words = _broken(root / "Fold1", "vali.txt", kind)
    with pytest.raises(ValueError) as e:
        find_folds(str(root))
    msg = str(e.value)
    assert "without" not in msg, msg
    assert str(root / "Fold1" / "vali.txt") in msg and words in msg, msg


def test_experiment_names_the_broken_fold_file_in_one_line(tmp_path, write_letor_folds, capsys):
    root = write_letor_folds(tmp_path / "folds", 2, 6, 3)
    for name in FOLD_FILES:
        _broken(root / "Fold2", name, "broken link")
    out = tmp_path / "report"
    rc, _, err = run(["experiment", root, "-o", out, "--max-trees", "2", "-q"], capsys)
    one_line_error(rc, err, "Fold2", "train.txt", "does not exist")
    assert not out.exists()

"""File inputs and outputs on cases a second adversarial pass over the readers found
mishandled (pairs files, click logs, model files, atomic outputs): each now gets a
one-line error naming the file and line, or the behaviour a user of ``open()`` expects."""

from __future__ import annotations

import json
import os
import stat
import sys

import numpy as np
import pytest

from ltrboost.clicks import read_click_log
from ltrboost.dataset import LTRInputError
from ltrboost.io._atomic import atomic_write_text
from ltrboost.io.letor import load_svmlight
from ltrboost.io.model_schema import ModelFormatError
from ltrboost.io.pairs import read_pairs_file
from ltrboost.model import load_model


@pytest.mark.parametrize("weight", ["1_0", "\u0663", "\uff12"])
def test_pair_weight_is_plain_decimal_text(tmp_path, weight):
    """float() reads '1_0' as 10 and Arabic-Indic or full-width digits as numbers: a
    weight the LETOR reader (and every other tool) would refuse was taken silently."""
    path = tmp_path / "pairs.txt"
    path.write_text(f"1 a b 2\n1 b c {weight}\n", encoding="utf-8")
    with pytest.raises(LTRInputError, match=r"pairs\.txt:2: weight .* is not a number >= 0"):
        read_pairs_file(path, np.array([1, 1, 1]), ["a", "b", "c"])


def test_pair_weights_in_every_decimal_form_still_read(tmp_path):
    path = tmp_path / "pairs.txt"
    path.write_text("1 a b +2.5e0\n1 b c .5\n1 a c 3.\n")
    _, _, w = read_pairs_file(path, np.array([1, 1, 1]), ["a", "b", "c"])
    assert w.tolist() == [2.5, 0.5, 3.0]


def test_click_log_that_is_not_utf8_names_the_line(tmp_path):
    """The error said only "not a UTF-8 text file", unlike the pairs, .query and data
    readers, which name the line of the first bad byte."""
    path = tmp_path / "log.tsv"
    path.write_bytes(b"qid docid position clicked\n1 a 1 0\n1 b\xe9 2 1\n")
    with pytest.raises(LTRInputError, match=r"log\.tsv:3: not UTF-8 text \(byte 0xe9\)"):
        read_click_log(path)


def test_click_log_bad_byte_after_a_bom_names_its_line(tmp_path):
    path = tmp_path / "log.tsv"
    path.write_bytes(b"\xef\xbb\xbf1 a 1 0\n\xff\n")
    with pytest.raises(LTRInputError, match=r"log\.tsv:2: not UTF-8 text \(byte 0xff\)"):
        read_click_log(path)


def _model_with_names(tmp_path, names):
    d = {
        "format": "ltrboost-model",
        "format_version": 1,
        "objective": "mart",
        "n_features": len(names),
        "n_outputs": 1,
        "feature_names": names,
        "init_score": [0.5],
        "update_rule": "additive",
        "trees": [],
    }
    path = tmp_path / "model.json"
    path.write_text(json.dumps(d))
    return path


def test_model_file_with_duplicate_feature_names_is_refused(tmp_path):
    """fit refuses duplicate names (columns are taken by name), but a model file holding
    them loaded, and predict then fed one DataFrame column to both features silently."""
    path = _model_with_names(tmp_path, ["a", "b", "a"])
    with pytest.raises(ModelFormatError, match=r"model\.json: feature_names .*more than once"):
        load_model(path)
    assert load_model(_model_with_names(tmp_path, ["a", "b", "c"])).feature_names == ["a", "b", "c"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_a_new_output_file_gets_the_mode_open_gives_it(tmp_path):
    """A new output was always made 0o644, world-readable even under umask 077 (the
    temporary file's 0o600 was widened without looking at the umask)."""
    old = os.umask(0o077)
    try:
        atomic_write_text(tmp_path / "private.json", "{}")
        with open(tmp_path / "plain.json", "w") as f:
            f.write("{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "plain.json").stat().st_mode) == 0o600
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "shared.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "shared.json").stat().st_mode) == 0o644


@pytest.mark.parametrize("text", ["", "qid docid position clicked\n", "# log\n\n"])
def test_click_log_without_entries_is_refused(tmp_path, capsys, text):
    """An empty log (or one of only a header and comments) read as zero results:
    ``clicks dataset`` then wrote an empty LETOR file that ``train`` refuses, and
    ``clicks mine`` an empty pairs file, both with status 0."""
    from test_cli import assert_one_line_error, run

    log = tmp_path / "log.tsv"
    log.write_text(text)
    with pytest.raises(LTRInputError, match=r"log\.tsv:1: no entries"):
        read_click_log(log)
    data = tmp_path / "data.txt"
    data.write_text("1 qid:1 1:0.5 #docid = a\n0 qid:1 1:0.2 #docid = b\n")
    for argv in (["clicks", "dataset"], ["clicks", "mine"]):
        out = tmp_path / "out.txt"
        rc, _, err = run([*argv, log, "--data", data, "-o", out], capsys)
        assert_one_line_error(rc, err, "log.tsv:1: no entries")
        assert not out.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_convert_makes_its_folder_with_the_mode_mkdir_gives_it(tmp_path):
    """The Parquet folder is built in a temporary folder (mkdtemp: 0o700) renamed at the
    end, so it was private to its owner whatever the umask (unreadable by Dask workers
    running as another user), and an empty folder given as OUT lost its own mode."""
    pytest.importorskip("pyarrow")
    from ltrboost.io.parquet import letor_to_parquet

    data = tmp_path / "data.txt"
    data.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.2\n")
    old = os.umask(0o022)
    try:
        letor_to_parquet(data, tmp_path / "new")
        os.mkdir(tmp_path / "given", 0o750)
        letor_to_parquet(data, tmp_path / "given")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "given").stat().st_mode) == 0o750


def test_a_huge_grade_for_mcrank_is_named_in_short(tmp_path, capsys):
    """A label of 1e300 was printed as int(1e300), 301 digits, in McRank's message."""
    from test_cli import assert_one_line_error, run

    data = tmp_path / "data.txt"
    data.write_text("1e300 qid:1 1:0.5\n0 qid:1 1:0.2\n1 qid:2 1:0.1\n0 qid:2 1:0.3\n")
    argv = ["train", data, "--objective", "mcrank", "-q", "-o", tmp_path / "m.json"]
    rc, _, err = run(argv, capsys)
    assert_one_line_error(rc, err, "data.txt:1: label=1e+300 is larger than 31")
    assert len(err) < 300


@pytest.mark.parametrize(
    ("kind", "head"),
    [
        ("gzip", b"\x1f\x8b\x08\x00\x00\x00\x00\x00"),
        ("bzip2", b"BZh91AY&SY\x00\x01"),
        ("zip", b"PK\x03\x04\x14\x00\x00\x00"),
        ("xz", b"\xfd7zXZ\x00\x00\x04"),
        ("zstd", b"\x28\xb5\x2f\xfd\x00\x58"),
    ],
)
def test_a_compressed_data_file_is_named_as_such(tmp_path, kind, head):
    """LETOR data sets ship compressed (MSLR as .zip, Yahoo as .bz2, Istella as .gz); a
    bzip2 or zip file read as "label 'BZh91AY&SY' is not a number"."""
    path = tmp_path / f"train.{kind}"
    path.write_bytes(head + b"\x00" * 64)
    with pytest.raises(LTRInputError, match=rf"train\.{kind}:1: .*{kind}-compressed.*decompress"):
        load_svmlight(path)


def test_a_text_file_starting_like_a_magic_number_is_still_text(tmp_path):
    path = tmp_path / "data.txt"
    path.write_bytes(b"PK 1:0.5\n")  # an ordinary bad label: the usual message
    with pytest.raises(LTRInputError, match=r"data\.txt:1: label 'PK' is not a number"):
        load_svmlight(path)


def test_an_output_inside_a_file_says_that_the_folder_is_a_file(tmp_path, capsys):
    """``-o data.txt/scores.txt`` said "directory data.txt does not exist" of a file
    that exists."""
    from test_cli import assert_one_line_error, run

    data = tmp_path / "data.txt"
    data.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.2\n")
    argv = ["train", data, "-q", "-o", data / "m.json"]
    rc, _, err = run(argv, capsys)
    assert_one_line_error(rc, err, "is not a directory")
    assert "does not exist" not in err
    pytest.importorskip("pyarrow")
    rc, _, err = run(["convert", data, data / "pq"], capsys)
    assert_one_line_error(rc, err, "is not a directory")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX links")
def test_convert_to_a_symlink_loop_names_the_output(tmp_path, capsys):
    """The error named the hidden temporary folder (".out.x1y2.tmp: Not a directory"),
    found only after the whole file was converted."""
    pytest.importorskip("pyarrow")
    from test_cli import assert_one_line_error, run

    data = tmp_path / "data.txt"
    data.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.2\n")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    rc, _, err = run(["convert", data, tmp_path / "a"], capsys)
    assert_one_line_error(rc, err, f"{tmp_path / 'a'}:", "symbolic links")
    assert ".tmp" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "data.txt"]


def test_a_data_file_given_as_the_model_is_named_as_such(tmp_path, capsys):
    """``ltrboost predict DATA MODEL`` (arguments swapped) read the whole data file as
    JSON and said "not valid JSON (Extra data: line 1 column 3 (char 2))"."""
    from test_cli import assert_one_line_error, run

    data = tmp_path / "data.txt"
    data.write_text("2 qid:1 1:0.5\n0 qid:1 1:0.2\n" * 1000)
    with pytest.raises(ModelFormatError, match=r"data\.txt: not an ltrboost model .*'2 qid:1"):
        load_model(data)
    # the swapped arguments: the model file is given as the data (every input exists, so
    # the first problem is the model)
    model = tmp_path / "m.json"
    model.write_text("{}")
    rc, _, err = run(["predict", data, model], capsys)
    assert_one_line_error(rc, err, "data.txt: not an ltrboost model", "data file")


def test_a_model_with_leading_whitespace_and_a_bom_still_loads(tmp_path):
    path = _model_with_names(tmp_path, ["a"])
    path.write_text("\ufeff \r\n\t" + path.read_text(), encoding="utf-8")
    assert load_model(path).feature_names == ["a"]


def test_a_byte_order_mark_inside_the_file_is_named(tmp_path):
    """Files joined with ``cat``, each with its BOM: the one inside read as "label
    '\\ufeff0' is not a number", which does not say what U+FEFF is."""
    path = tmp_path / "joined.txt"
    path.write_bytes(b"\xef\xbb\xbf1 qid:1 1:0.5\n\xef\xbb\xbf0 qid:1 1:0.2\n")
    with pytest.raises(LTRInputError, match=r"joined\.txt:2: .*byte order mark.*joined"):
        load_svmlight(path)


def test_a_click_log_naming_a_docid_two_rows_carry_is_refused(tmp_path, capsys):
    """A docid on two rows of one query: ``clicks simulate`` and the pairs reader refuse
    it, but a log naming it was mapped to the first row silently (``clicks dataset``
    wrote that row's features for the result)."""
    from test_cli import assert_one_line_error, run

    data = tmp_path / "data.txt"
    data.write_text("2 qid:1 1:1 #docid = a\n1 qid:1 1:0 #docid = a\n0 qid:1 1:0.5 #docid = c\n")
    log = tmp_path / "log.tsv"
    log.write_text("1 c 1 1\n1 a 2 0\n")
    with pytest.raises(LTRInputError, match=r"log\.tsv:2: document 'a' is not unique in query"):
        read_click_log(log, qid=np.array([1, 1, 1]), docids=["a", "a", "c"])
    out = tmp_path / "out.txt"
    rc, _, err = run(["clicks", "dataset", log, "--data", data, "-o", out], capsys)
    assert_one_line_error(rc, err, "log.tsv:2: document 'a' is not unique", "rows 1 and 2")
    assert not out.exists()
    log.write_text("1 c 1 1\n")  # the log names only unambiguous documents: fine
    assert len(read_click_log(log, qid=np.array([1, 1, 1]), docids=["a", "a", "c"])) == 1


def test_click_rows_and_relevance_labels_refuse_an_ambiguous_docid(tmp_path):
    """The same rule for a log given in memory (read without the data, or simulated):
    both mapped the docid to its first row silently."""
    from ltrboost.clicks import click_rows, relevance_labels

    log_path = tmp_path / "log.tsv"
    log_path.write_text("1 c 1 1\n1 a 2 0\n")
    log = read_click_log(log_path)  # without the data: nothing to check yet
    qid, docids = np.array([1, 1, 1]), ["a", "a", "c"]
    for fn in (click_rows, relevance_labels):
        with pytest.raises(LTRInputError, match=r"line 2: document 'a' is not unique"):
            fn(log, qid=qid, docids=docids)
    assert click_rows(log, qid=qid, docids=["a", "b", "c"]).row.tolist() == [2, 0]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_a_read_only_output_is_not_replaced(tmp_path, monkeypatch, capsys):
    """A model made read-only (chmod a-w) to keep it was replaced anyway: the rename
    of the temporary file needs only the folder's permission.  ``open()`` (and ``cp``)
    refuse to write it; so do the outputs now, before any work."""
    from test_cli import assert_one_line_error, run

    out = tmp_path / "keep.json"
    out.write_text("precious")
    out.chmod(0o444)
    real_access = os.access
    # root may write anything; the test plays a user who may not write this file
    monkeypatch.setattr(
        os, "access", lambda p, mode, **kw: False if str(p) == str(out) else real_access(p, mode)
    )
    with pytest.raises(PermissionError, match="read-only"):
        atomic_write_text(out, "new")
    data = tmp_path / "data.txt"
    data.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.2\n")
    rc, _, err = run(["train", data, "-q", "-o", out], capsys)
    assert_one_line_error(rc, err, "keep.json", "read-only")
    assert out.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.txt", "keep.json"]


def _wide_model(tmp_path, n_features):
    """A one-leaf model claiming ``n_features`` features (allowed without names up to
    2**24: the schema's free width)."""
    d = json.loads(_model_with_names(tmp_path, ["a"]).read_text())
    d.update(n_features=n_features, feature_names=None)
    d["trees"] = [
        {
            "output": 0, "value": [0.25], "feature": [-1], "threshold": [None],
            "bin_threshold": [0], "missing_left": [0], "left": [-1], "right": [-1],
            "gain": [0.0], "count": [4], "sum_hessians": [4.0], "depth": [0],
        }
    ]  # fmt: skip
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(d))
    return path


def test_resuming_a_model_that_claims_millions_of_features_is_refused(tmp_path, capsys):
    """``train --resume`` read the data at the model's width: a (hand-edited) model
    claiming 2**24 features made a 200-row file a 25 GiB matrix (out of memory, or an
    OOM kill), where predict and eval read such data at its own width."""
    from test_cli import assert_one_line_error, run

    data = tmp_path / "data.txt"
    data.write_text("".join(f"{k % 3} qid:{k // 10} 1:{k / 200} 2:0.5\n" for k in range(200)))
    model = _wide_model(tmp_path, 2**24)
    out = tmp_path / "o.json"
    argv = ["train", data, "--resume", model, "--objective", "mart", "-q", "-o", out]
    rc, _, err = run(argv, capsys)
    assert_one_line_error(rc, err, "wide.json: ", "16777216 features", "highest feature index")
    assert not out.exists()


def test_resuming_a_wide_model_whose_matrix_fits_keeps_its_width(tmp_path, capsys):
    from test_cli import run

    data = tmp_path / "data.txt"
    data.write_text("".join(f"{k % 3} qid:{k // 10} 1:{k / 40} 2:0.5\n" for k in range(40)))
    model = _wide_model(tmp_path, 70_000)
    out = tmp_path / "o.json"
    argv = ["train", data, "--resume", model, "--objective", "mart", "--n-estimators", "3"]
    rc, _, err = run([*argv, "-q", "-o", out], capsys)
    assert rc == 0, err
    assert json.loads(out.read_text())["n_features"] == 70_000


def test_a_validation_file_read_at_a_huge_training_width_is_refused(tmp_path, capsys):
    """A 10-row training file with a typo'd index 5,000,000 passes the reader's size
    limit (0.4 GiB); the validation file was then read at that width, 2000 rows: 75 GiB
    asked for (out of memory, or an OOM kill), naming neither file."""
    from test_cli import assert_one_line_error, run

    rows = "".join(f"{k % 3} qid:{k // 10} 1:{k / 2000} 2:0.5\n" for k in range(2000))
    train = tmp_path / "train.txt"
    train.write_text("1 qid:0 5000000:1\n" + rows[: rows.index("qid:1 ")].rsplit("\n", 1)[0])
    valid = tmp_path / "vali.txt"
    valid.write_text(rows)
    out = tmp_path / "o.json"
    rc, _, err = run(["train", train, "--valid", valid, "-q", "-o", out], capsys)
    assert_one_line_error(rc, err, "train.txt: the training data has 5000000 features", "vali.txt")
    assert not out.exists()


@pytest.mark.parametrize("protocol", ["xia", "qbrank"])
def test_experiment_folds_read_at_a_huge_training_width_are_refused(tmp_path, capsys, protocol):
    """The experiments read a fold's vali and test files at its train file's width,
    without the size check: the same 75 GiB allocation as ``train --valid``."""
    from test_cli import run

    rows = "".join(f"{k % 3} qid:{k // 10} 1:{k / 2000} 2:0.5\n" for k in range(2000))
    fold = tmp_path / "Fold1"
    fold.mkdir()
    (fold / "train.txt").write_text("1 qid:0 5000000:1\n0 qid:0 1:0.5\n2 qid:1 2:0.5\n")
    (fold / "vali.txt").write_text(rows)
    (fold / "test.txt").write_text(rows)
    argv = ["experiment", tmp_path, "-o", tmp_path / "report", "--protocol", protocol]
    rc, _, err = run([*argv, "--max-trees", "1"], capsys)
    assert rc == 2  # the folds are read once the progress bar is drawn: not one line
    assert "train.txt: the training data has 5000000 features" in err
    assert "vali.txt is 2:" in err


def test_an_explicit_query_file_that_cannot_be_read_is_named(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("1 1:0.5\n0 1:0.25\n")
    for bad in (tmp_path / "missing.query", tmp_path):
        with pytest.raises(LTRInputError, match="cannot read the query file") as err:
            load_svmlight(data, query_file=bad)
        assert str(err.value).startswith(str(bad))


def test_a_bytes_path_reads_with_its_query_sidecar(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("1 1:0.5\n0 1:0.25\n1 1:0.75\n")
    (tmp_path / "d.txt.query").write_text("2\n1\n")
    got = load_svmlight(os.fsencode(data))
    assert got.qid.tolist() == [0, 0, 1]

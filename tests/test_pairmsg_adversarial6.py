"""Preference-pair messages and weights, and feature names, adversarially.

1. A bad pair given as arrays is named ``pair k`` (its index), never ``row k`` (a
   data row), and never moved to a data file's line.
2. A pair of weight 0 is accepted by ``pairs=`` and by ``--pairs`` files alike (it
   counts for nothing); pairs that are all of weight 0 give nothing to learn.
3. Feature names holding a lone surrogate cannot be written as UTF-8: refused at fit
   and at save; an older file holding one (escaped ``\\ud800``) loads with a warning.
4. Feature names of every kind a DataFrame allows go through fit, save, load,
   predict, inspect and export, or are refused naming the column.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ltrboost
from ltrboost import Ranker, load_model, make_dataset
from ltrboost.dataset import LTRInputError, PreferencePairs
from ltrboost.io.pairs import read_pairs_file, write_pairs_file
from ltrboost.params import ParameterError
from test_cli import assert_one_line_error, run

ONE_ROUND = ["--n-estimators", "2", "-q", "--min-samples-leaf", "1"]

DATA = """\
2 qid:1 1:0.1 2:0.5 #docid = a
1 qid:1 1:0.2 2:0.4 #docid = b
0 qid:1 1:0.3 2:0.3 #docid = c
2 qid:2 1:0.4 2:0.2 #docid = d
0 qid:2 1:0.5 2:0.1 #docid = e
1 qid:2 1:0.6 2:0.0 #docid = f
"""


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "train.txt"
    path.write_text(DATA, encoding="utf-8")
    return path


def _arrays(n_queries: int = 4, per_query: int = 10, n_features: int = 3):
    rng = np.random.default_rng(0)
    n = n_queries * per_query
    X = rng.normal(size=(n, n_features))
    y = rng.integers(0, 3, n)
    qid = np.repeat(np.arange(n_queries), per_query)
    return X, y, qid


# --- 1. pair k, not row k -------------------------------------------------------------
BAD_PAIRS = {
    "self": [[0, 1], [2, 2]],
    "cross_query": [[0, 1], [0, 15]],
    "negative_weight": [[0, 1, 1.0], [2, 3, -1.0]],
    "nan_weight": [[0, 1, 1.0], [2, 3, np.nan]],
    "tiny_weight": [[0, 1, 1.0], [2, 3, 1e-50]],
    "huge_weight": [[0, 1, 1.0], [2, 3, 1e300]],
    "fractional": [[0, 1], [2.5, 3]],
    "out_of_range": [[0, 1], [2, 99]],
}


@pytest.mark.parametrize("case", sorted(BAD_PAIRS))
def test_python_pair_errors_name_the_pair_not_a_row(case):
    """Every refusal of ``pairs=`` said ``row 1: pair 1: ...``: the ``row`` of the
    message was the pair's index, read as a data row."""
    X, y, qid = _arrays()
    with pytest.raises(LTRInputError) as e:
        Ranker(objective="ranknet", n_estimators=1).fit(X, y, qid=qid, pairs=BAD_PAIRS[case])
    msg = str(e.value)
    assert msg.startswith("pair 1: "), msg
    assert "row 1:" not in msg
    assert e.value.pair == 1
    assert e.value.row is None  # not a data row


def test_pair_error_of_unsorted_queries_names_the_pair():
    X, y, qid = _arrays()
    perm = np.random.default_rng(1).permutation(len(y))  # the dataset regroups the rows
    with pytest.raises(LTRInputError) as e:
        Ranker(objective="gbrank", n_estimators=1).fit(
            X[perm], y[perm], qid=qid[perm], pairs=[[0, 0]]
        )
    assert str(e.value).startswith("pair 0: document 0 is preferred to itself")


def test_pair_error_of_a_file_dataset_is_not_moved_to_a_data_line(tmp_path):
    """A dataset read from a file (``source``/``row_lines`` set) rewrote an error's
    ``row`` as ``FILE:LINE``: pair 1's error became line 2 of the data file."""
    X, y, qid = _arrays()
    ds = make_dataset(X, y, qid=qid)
    ds.source = str(tmp_path / "train.txt")
    ds.row_lines = np.arange(1, len(y) + 1, dtype=np.int64)
    ds.pairs = PreferencePairs(
        preferred=np.array([0, 2], dtype=np.int32),
        other=np.array([1, 2], dtype=np.int32),
        weight=None,
    )
    with pytest.raises(LTRInputError) as e:
        ltrboost.train({"objective": "ranknet", "n_estimators": 1}, ds)
    assert str(e.value).startswith("pair 1: document 2 is preferred to itself"), str(e.value)
    assert e.value.path is None
    assert e.value.line is None


def test_pairs_file_weight_float32_cannot_hold_names_the_pairs_file(data, tmp_path, capsys):
    """A pairs file's weight below float32's smallest positive value passed the reader,
    then the array check refused it as ``train.txt:2: pairs.weight[1]=...``: the data
    file's line of row 1, not the pairs file's line."""
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("1 a b\n1 b c 1e-50\n", encoding="utf-8")
    rc, _, err = run(
        [
            "train",
            data,
            "--objective",
            "ranknet",
            "--pairs",
            pairs,
            "-o",
            tmp_path / "m.json",
            *ONE_ROUND,
        ],
        capsys,
    )
    line = assert_one_line_error(rc, err, f"{pairs}:2: weight '1e-50'", "float32")
    assert "train.txt" not in line
    assert not (tmp_path / "m.json").exists()


# --- 2. weight 0 ----------------------------------------------------------------------
def test_pairs_file_takes_weight_zero_as_python_pairs_do(tmp_path):
    path = tmp_path / "pairs.txt"
    path.write_text("1 a b 2\n1 b c 0\n1 a c 0.0\n", encoding="utf-8")
    _, _, w = read_pairs_file(path, np.array([1, 1, 1]), ["a", "b", "c"])
    assert w.tolist() == [2.0, 0.0, 0.0]
    for bad in ("-1", "-0.5", "nan", "x"):
        path.write_text(f"1 a b {bad}\n", encoding="utf-8")
        with pytest.raises(LTRInputError, match=r"pairs\.txt:1: weight .* is not a number >= 0"):
            read_pairs_file(path, np.array([1, 1, 1]), ["a", "b", "c"])


def test_write_pairs_file_round_trips_weight_zero(tmp_path):
    path = tmp_path / "pairs.txt"
    write_pairs_file(path, [1, 1], ["a", "b"], ["b", "c"], [0.0, 1.5])
    _, _, w = read_pairs_file(path, np.array([1, 1, 1]), ["a", "b", "c"])
    assert w.tolist() == [0.0, 1.5]
    with pytest.raises(ValueError, match=r"weight -1\.0"):
        write_pairs_file(path, [1], ["a"], ["b"], [-1.0])


def test_zero_weight_pair_in_a_file_changes_nothing(data, tmp_path, capsys):
    with_zero = tmp_path / "p0.txt"
    with_zero.write_text("1 a b\n1 c b 0\n2 d e 2\n", encoding="utf-8")
    without = tmp_path / "p1.txt"
    without.write_text("1 a b\n2 d e 2\n", encoding="utf-8")
    trees = []
    for pairs, out in ((with_zero, "m0.json"), (without, "m1.json")):
        rc, _, err = run(
            [
                "train",
                data,
                "--objective",
                "gbrank",
                "--pairs",
                pairs,
                "-o",
                tmp_path / out,
                *ONE_ROUND,
            ],
            capsys,
        )
        assert rc == 0, err
        trees.append(json.loads((tmp_path / out).read_text())["trees"])
    assert trees[0] == trees[1]


@pytest.mark.parametrize("objective", ["ranknet", "rankboost", "gbrank"])
def test_all_zero_weight_pairs_alone_are_refused(objective):
    """Explicit pairs all of weight 0 with ``use_label_pairs=False`` trained a constant
    model with a generic warning; they leave nothing to learn, as no pair at all."""
    X, y, qid = _arrays()
    with pytest.raises(ParameterError, match="weight 0"):
        Ranker(objective=objective, use_label_pairs=False, n_estimators=1).fit(
            X, y, qid=qid, pairs=[[0, 1, 0.0], [12, 13, 0.0]]
        )
    # with the label pairs the zero-weight pairs are simply nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Ranker(objective=objective, n_estimators=1, min_samples_leaf=2).fit(
            X, y, qid=qid, pairs=[[0, 1, 0.0]]
        )


def test_all_zero_weight_pairs_file_alone_is_refused(data, tmp_path, capsys):
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("1 a b 0\n", encoding="utf-8")
    rc, _, err = run(
        [
            "train",
            data,
            "--objective",
            "ranknet",
            "--use-label-pairs",
            "false",
            "--pairs",
            pairs,
            "-o",
            tmp_path / "m.json",
            *ONE_ROUND,
        ],
        capsys,
    )
    assert_one_line_error(rc, err, "weight 0")


# --- 3. lone surrogates -----------------------------------------------------------------
def test_lone_surrogate_feature_name_is_refused_at_fit():
    X, y, qid = _arrays()
    with pytest.raises(LTRInputError, match=r"feature_names\[1\]='\\ud800' .*surrogate"):
        make_dataset(X, y, qid=qid, feature_names=["b", "\ud800", "c"])
    df = pd.DataFrame(X, columns=pd.Index(["a", "b", "x\udcff"], dtype=object))
    with pytest.raises(LTRInputError, match=r"X column 2 \('x\\udcff'\) .*surrogate"):
        Ranker(n_estimators=1).fit(df, y, qid=qid)


def test_lone_surrogate_feature_name_is_refused_at_save(tmp_path):
    X, y, qid = _arrays()
    ds = make_dataset(X, y, qid=qid, feature_names=["a", "b", "c"])
    booster = ltrboost.train({"n_estimators": 1, "min_samples_leaf": 2}, ds)
    # past make_dataset's and train's checks (a dataset's names set by hand are refused
    # by train: tests/test_leaks_adversarial10.py)
    booster.feature_names = ["a", "\ud800", "c"]
    path = tmp_path / "m.json"
    path.write_text("old", encoding="utf-8")
    with pytest.raises(ValueError, match=r"feature_names\[1\]='\\ud800' .*surrogate"):
        booster.save_model(path)
    assert path.read_text(encoding="utf-8") == "old"


def _old_model_with_surrogate(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """A model file as ltrboost wrote it before: json.dumps escapes the surrogate."""
    X, y, qid = _arrays()
    booster = ltrboost.train(
        {"n_estimators": 2, "min_samples_leaf": 2},
        make_dataset(X, y, qid=qid, feature_names=["SURR", "b", "c"]),
    )
    path = tmp_path / "old.json"
    booster.save_model(path)
    text = path.read_text(encoding="utf-8").replace('"SURR"', '"\\ud800"')
    path.write_text(text, encoding="ascii")
    return path, X, booster.predict(X)


def test_old_model_with_lone_surrogate_loads_with_a_warning(tmp_path):
    path, X, expected = _old_model_with_surrogate(tmp_path)
    with pytest.warns(UserWarning, match=r"old\.json: feature_names\[0\]='\\ud800'"):
        booster = load_model(path)
    assert booster.feature_names == ["\\ud800", "b", "c"]
    np.testing.assert_array_equal(booster.predict(X), expected)
    df = pd.DataFrame(X, columns=["\\ud800", "b", "c"])
    np.testing.assert_array_equal(booster.predict(df), expected)
    # the DataFrame the model was trained on (its column holds the surrogate) matches too
    df = pd.DataFrame(X, columns=pd.Index(["\ud800", "b", "c"], dtype=object))
    np.testing.assert_array_equal(booster.predict(df), expected)
    booster.save_model(tmp_path / "new.json")  # the repaired names save (and load quietly)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_model(tmp_path / "new.json")


@pytest.mark.parametrize("fmt", ["lightgbm", "xgboost", "xgboost-dump", "solr"])
def test_old_model_with_lone_surrogate_exports(tmp_path, capsys, fmt):
    """``ltrboost export -f lightgbm`` ended in a bare "'utf-8' codec can't encode"."""
    path, _, _ = _old_model_with_surrogate(tmp_path)
    out = tmp_path / f"out.{fmt}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc, _, err = run(["export", path, "-f", fmt, "-o", out], capsys)
    if rc == 0:
        out.read_bytes().decode("utf-8")
    else:  # the exporters' own rule for names: one line, naming the name
        assert_one_line_error(rc, err, "feature_names[0]=")
        assert "codec" not in err


def test_old_model_whose_repaired_name_collides_is_refused(tmp_path):
    path, _, _ = _old_model_with_surrogate(tmp_path)
    text = path.read_text(encoding="ascii").replace('"b"', '"\\\\ud800"', 1)
    path.write_text(text, encoding="ascii")
    with (
        pytest.warns(UserWarning, match="feature_names"),
        pytest.raises(ltrboost.io.model_json.ModelFormatError, match="more than once"),
    ):
        load_model(path)


# --- 4. names of every kind, end to end -------------------------------------------------
NAME_CASES = {
    "ints": [0, 1, 2],
    "floats": [0.5, 1.5, 2.5],
    "none": [None, "b", "c"],
    "tuple": [("a", 1), ("b", 2), "c"],
    "empty": ["", "b", "c"],
    "long": ["x" * 10_000, "b", "c"],
    "newline_tab": ["a\nb", "c\td", "e"],
    "nul_cr": ["a\x00b", "c\rd", "e"],
}


@pytest.mark.parametrize("case", sorted(NAME_CASES))
def test_feature_names_of_every_kind_end_to_end(tmp_path, capsys, case):
    X, y, qid = _arrays(per_query=20)
    cols = NAME_CASES[case]
    df = pd.DataFrame(X, columns=pd.Index(cols, dtype=object, tupleize_cols=False))
    model = Ranker(n_estimators=2, min_samples_leaf=3).fit(df, y, qid=qid)
    expected = model.predict(df)
    path = tmp_path / "m.json"
    model.booster_.save_model(path)
    booster = load_model(path)
    assert booster.feature_names == [str(c) for c in cols]
    np.testing.assert_array_equal(booster.predict(df), expected)
    np.testing.assert_array_equal(booster.predict(df.iloc[:, ::-1]), expected)  # by name
    rc, out, err = run(["inspect", path], capsys)
    assert rc == 0, err
    plain_path = tmp_path / "plain.json"
    df.columns = ["a", "b", "c"]
    Ranker(n_estimators=2, min_samples_leaf=3).fit(df, y, qid=qid).booster_.save_model(plain_path)
    rc, plain, _ = run(["inspect", plain_path], capsys)
    # a name never breaks a line of inspect's table (shown as repr when it would)
    assert all(line.count("\t") == 0 for line in out.splitlines())
    assert len(out.splitlines()) == len(plain.splitlines())
    rc, out, err = run(["inspect", "--json", path], capsys)
    assert rc == 0, err
    json.loads(out)
    for fmt in ("lightgbm", "xgboost-dump", "ranklib"):
        rc, _, err = run(
            ["export", path, "-f", fmt, "-o", tmp_path / f"m.{fmt}", "--assume-no-missing"]
            if fmt == "ranklib"
            else ["export", path, "-f", fmt, "-o", tmp_path / f"m.{fmt}"],
            capsys,
        )
        if rc:  # names an engine cannot take: refused naming the feature
            assert_one_line_error(rc, err, "feature_names[", "--feature-names")
            assert not (tmp_path / f"m.{fmt}").exists()


def test_names_equal_as_text_are_refused_naming_them():
    X, y, qid = _arrays()
    df = pd.DataFrame(X, columns=pd.Index([1, "1", "c"], dtype=object))
    with pytest.raises(LTRInputError, match=r"duplicate feature names \['1'\]"):
        Ranker(n_estimators=1).fit(df, y, qid=qid)


def test_all_zero_weight_pairs_file_with_labels_warns(data, tmp_path, capsys):
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("1 a b 0\n2 d e 0\n", encoding="utf-8")
    rc, _, err = run(
        [
            "train",
            data,
            "--objective",
            "ranknet",
            "--pairs",
            pairs,
            "-o",
            tmp_path / "m.json",
            *ONE_ROUND,
        ],
        capsys,
    )
    assert rc == 0, err
    assert "every pair has weight 0" in err
    assert "labels alone" in err


@pytest.mark.parametrize("fmt", ["lightgbm", "xgboost", "solr", "ranklib"])
def test_export_refuses_a_lone_surrogate_name_naming_it(tmp_path, fmt):
    """Names given to export (or held by a model in memory) that UTF-8 cannot encode
    ended in a bare "'utf-8' codec can't encode character"."""
    from ltrboost.export import ExportError, export_model

    X, y, qid = _arrays()
    booster = ltrboost.train(
        {"n_estimators": 1, "min_samples_leaf": 2}, make_dataset(X, y, qid=qid)
    )
    out = tmp_path / "out"
    with pytest.raises(ExportError, match=r"feature_names\[1\]='\\udcff'.*surrogate"):
        export_model(booster, out, fmt, feature_names=["a", "\udcff", "c"])
    booster.feature_names = ["\ud800", "b", "c"]
    with pytest.raises(ExportError, match=r"feature_names\[0\]='\\ud800'.*surrogate"):
        export_model(booster, out, fmt)
    assert not out.exists()


@pytest.mark.parametrize("weight", [np.nan, -1.0])
def test_bad_weights_alone_are_named_as_bad_not_as_zero(weight):
    X, y, qid = _arrays()
    ds = make_dataset(X, y, qid=qid)
    ds.pairs = PreferencePairs(
        preferred=np.array([0], dtype=np.int32),
        other=np.array([1], dtype=np.int32),
        weight=np.array([weight]),
    )
    with pytest.raises(LTRInputError, match=r"^pair 0: pairs\.weight\[0\]="):
        ltrboost.train({"objective": "ranknet", "use_label_pairs": False}, ds)

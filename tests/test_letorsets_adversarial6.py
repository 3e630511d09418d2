"""The public LETOR data sets as users download them, in small synthetic look-alikes
written here (no real data): each reproduces its release's format quirks and layout.

* MSLR-WEB10K/30K: 136 dense features (every ``k:v`` written, trailing space), grades
  0-4, ``Fold1..Fold5/{train,vali,test}.txt``;
* Yahoo! LTR challenge (C14): 700 sparse features (absent ones left out), grades 0-4,
  qids not starting at 1, ``set1.train.txt``, ``set1.valid.txt``, ``set1.test.txt``
  (and ``set2.*``) side by side in one folder;
* Istella / Istella-S: 220 features, values near +-float max, qids large integers;
  Istella (full) ships ``train.txt`` and ``test.txt`` only, Istella-S ``sample/`` with
  ``train.txt``, ``vali.txt``, ``test.txt``;
* LETOR 3.0 (OHSUMED 45 features, TD2003 64): grades 0-2, ``#docid = ... inc = ...
  prob = ...`` comments, ``QueryLevelNorm/Fold1..5/{trainingset,validationset,testset}.txt``;
* LETOR 4.0 MQ2007: 46 features, ``#docid = GX... inc = 1 prob = ...``, ``FoldK/``.

Defects found: ``ltrboost experiment`` refused LETOR 3.0's fold files (it knew only
``train.txt``/``vali.txt``/``test.txt``), and on a Yahoo folder, on the folder above a
fold (``istella-s/`` for ``istella-s/sample/``) or on Istella's train/test-only release
its error did not say what it found or what to do.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ltrboost.cli import main
from ltrboost.experiment import find_folds
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

FAST = ["--n-estimators", "2", "--min-samples-leaf", "2", "--n-threads", "1", "-q"]
EXP = [
    "--systems", "lambdamart", "--criteria", "se,ole", "--leaves", "4",
    "--learning-rates", "0.1", "--max-trees", "2", "--min-samples-leaf", "2",
    "--n-threads", "1", "--quiet",
]  # fmt: skip
LETOR3_NAMES = ("trainingset.txt", "validationset.txt", "testset.txt")
LETOR4_NAMES = ("train.txt", "vali.txt", "test.txt")


# ------------------------------------------------------------------- look-alikes
def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _mslr(rng, qids):
    """Dense: every ``k:v`` of 136, integer-valued counts among them, a trailing space."""
    out = []
    for q in qids:
        for _ in range(int(rng.integers(3, 8))):
            v = rng.integers(0, 40, 136) * (rng.random(136) < 0.7)
            feats = " ".join(f"{k}:{x}" for k, x in enumerate(v, 1))
            out.append(f"{rng.integers(0, 5)} qid:{q} {feats} ")
    return out


def _yahoo(rng, qids, defined):
    """Sparse: only some of the set's defined features on each line, values in [0, 1]."""
    out = []
    for q in qids:
        for _ in range(int(rng.integers(3, 8))):
            keep = defined[rng.random(len(defined)) < 0.6]
            feats = " ".join(f"{k}:{rng.random():.6f}" for k in keep)
            out.append(f"{rng.integers(0, 5)} qid:{q} {feats}")
    return out


def _istella(rng, qids):
    """220 features, some at +-float max, others large negatives; large qids."""
    out = []
    for q in qids:
        for _ in range(int(rng.integers(3, 8))):
            parts = []
            for k in range(1, 221):
                r = rng.random()
                if r < 0.05:
                    parts.append(f"{k}:1.79769313486231570e+308")
                elif r < 0.08:
                    parts.append(f"{k}:-1.7976931348623e+308")
                elif r > 0.4:
                    parts.append(f"{k}:{rng.normal() * 1e4:.6g}")
            out.append(f"{rng.integers(0, 5)} qid:{q} " + " ".join(parts))
    return out


def _letor3(rng, qids, n_features, gov):
    """Grades 0-2; Gov comments ``#docid = G.. inc = .. prob = ..``, OHSUMED's a number."""
    out = []
    for q in qids:
        for d in range(int(rng.integers(3, 8))):
            feats = " ".join(f"{k}:{rng.random():.6f}" for k in range(1, n_features + 1))
            if gov:
                c = f"#docid = G{q:02d}-{d:02d}-{rng.integers(10**6)} inc = {rng.random():.6g} prob = {rng.random():.6g}"  # noqa: E501
            else:
                c = f"#docid = {rng.integers(10**5)}"
            out.append(f"{rng.integers(0, 3)} qid:{q} {feats} {c}")
    return out


def _mq2007(rng, qids):
    out = []
    for q in qids:
        for d in range(int(rng.integers(3, 8))):
            feats = " ".join(f"{k}:{rng.random():.6f}" for k in range(1, 47))
            c = f"#docid = GX{rng.integers(1000):03d}-{d:02d}-{rng.integers(10**7)} inc = 1 prob = {rng.random():.6g}"  # noqa: E501
            out.append(f"{rng.integers(0, 3)} qid:{q} {feats} {c}")
    return out


SPLITS = (range(0, 12), range(12, 16), range(16, 20))  # queries of train, vali, test


def _folds(root: Path, make, names, n_folds=2, base=1) -> Path:
    for k in range(1, n_folds + 1):
        for name, qs in zip(names, SPLITS, strict=True):
            _write(root / f"Fold{k}" / name, make([base + 100 * k + q for q in qs]))
    return root


@pytest.fixture
def sets(tmp_path):
    """``name -> (train, vali or None, test)`` of each look-alike, and their folders."""
    rng = np.random.default_rng(7)
    d = tmp_path / "data"
    defined = np.sort(rng.choice(np.arange(1, 701), 40, replace=False))
    out = {}
    _folds(d / "MSLR-WEB10K", lambda q: _mslr(rng, q), LETOR4_NAMES)
    out["mslr"] = [d / "MSLR-WEB10K" / "Fold1" / n for n in LETOR4_NAMES]
    for s, base in (("set1", 1000), ("set2", 29_000)):
        for name, qs in zip(("train", "valid", "test"), SPLITS, strict=True):
            _write(
                d / "ltrc_yahoo" / f"{s}.{name}.txt", _yahoo(rng, [base + q for q in qs], defined)
            )
    out["yahoo"] = [d / "ltrc_yahoo" / f"set1.{n}.txt" for n in ("train", "valid", "test")]
    for name, qs in (("train.txt", SPLITS[0]), ("test.txt", SPLITS[2])):
        _write(d / "istella" / "full" / name, _istella(rng, [7_000_000_000 + 13 * q for q in qs]))
    full = d / "istella" / "full"
    out["istella"] = [full / "train.txt", None, full / "test.txt"]
    for name, qs in zip(LETOR4_NAMES, SPLITS, strict=True):
        _write(d / "istella-s" / "sample" / name, _istella(rng, [2**40 + 7 * q for q in qs]))
    out["istella-s"] = [d / "istella-s" / "sample" / n for n in LETOR4_NAMES]
    for ds, nf, gov in (("OHSUMED", 45, False), ("TD2003", 64, True)):
        _folds(
            d / ds / "QueryLevelNorm",
            lambda q, nf=nf, gov=gov: _letor3(rng, q, nf, gov),
            LETOR3_NAMES,
        )
        out[ds.lower()] = [d / ds / "QueryLevelNorm" / "Fold1" / n for n in LETOR3_NAMES]
    _folds(d / "MQ2007", lambda q: _mq2007(rng, q), LETOR4_NAMES, base=10_000)
    out["mq2007"] = [d / "MQ2007" / "Fold1" / n for n in LETOR4_NAMES]
    return d, out


# --------------------------------------------- every command on every look-alike
@pytest.mark.parametrize(
    "name", ["mslr", "yahoo", "istella", "istella-s", "ohsumed", "td2003", "mq2007"]
)
def test_every_command_reads_each_public_set(sets, name, tmp_path, capsys):
    """train, eval, predict, cv, convert and the Python reader + Ranker on each look-alike."""
    pytest.importorskip("pyarrow")
    from ltrboost import Ranker
    from ltrboost.io.letor import load_svmlight, parse_docids

    _, files = sets
    tr, va, te = files[name]
    model = tmp_path / "m.json"
    valid = [] if va is None else ["--valid", va]
    rc, _, err = run(["train", tr, *valid, "-o", model, *FAST], capsys)
    assert rc == 0, err
    rc, _, err = run(["eval", model, te, "--json", "-q"], capsys)
    assert rc == 0, err
    rc, _, err = run(["predict", model, te, "-o", tmp_path / "p.txt", "-q"], capsys)
    assert rc == 0, err
    scores = np.loadtxt(tmp_path / "p.txt")
    n_lines = len(te.read_text().splitlines())
    assert scores.shape == (n_lines,)
    assert np.isfinite(scores).all()
    rc, _, err = run(["cv", tr, "--folds", "3", *FAST], capsys)
    assert rc == 0, err
    rc, _, err = run(["convert", te, tmp_path / "t.parquet", "-q"], capsys)
    assert rc == 0, err

    a = load_svmlight(tr, return_comments=True)
    b = load_svmlight(te, n_features=a.X.shape[1])
    assert a.qid is not None
    assert (np.diff(a.qid) >= 0).all()
    ranker = Ranker(n_estimators=2, min_samples_leaf=2).fit(a.X, a.y, qid=a.qid)
    assert np.isfinite(ranker.predict(b.X)).all()
    if name in ("td2003", "mq2007", "ohsumed"):
        assert all(parse_docids(a.comments))  # every line's docid found
    if name == "istella":
        assert np.abs(a.X).max() == np.finfo(np.float64).max  # read, not overflowed


def test_yahoo_absent_features_are_zero_or_nan_as_documented(sets, tmp_path, capsys):
    """A sparse line's absent feature is 0 (svmlight), NaN under ``--missing nan``, and
    ``predict`` scores with the model's convention."""
    from ltrboost import load_model
    from ltrboost.io.letor import load_svmlight

    _, files = sets
    tr, va, te = files["yahoo"]
    model = tmp_path / "m.json"
    rc, _, err = run(["train", tr, "--valid", va, "--missing", "nan", "-o", model, *FAST], capsys)
    assert rc == 0, err
    rc, _, err = run(["predict", model, te, "-o", tmp_path / "p.txt", "-q"], capsys)
    assert rc == 0, err
    booster = load_model(model)
    assert booster.missing == "nan"
    as_nan = load_svmlight(te, missing="nan", n_features=booster.n_features)
    as_zero = load_svmlight(te, n_features=booster.n_features)
    assert np.isnan(as_nan.X).any()
    assert not np.isnan(as_zero.X).any()
    np.testing.assert_array_equal(np.isnan(as_nan.X), as_zero.X == 0)  # values are never 0
    np.testing.assert_array_equal(booster.predict(as_nan.X), np.loadtxt(tmp_path / "p.txt"))


# ------------------------------------------------------ experiment: fold layouts
@pytest.mark.parametrize("ds", ["OHSUMED", "TD2003"])
def test_experiment_reads_letor3_fold_files(sets, ds, tmp_path, capsys):
    """LETOR 3.0 names its fold files trainingset.txt, validationset.txt, testset.txt:
    ``experiment`` said "no Fold*/ or Seed*/ train.txt, vali.txt, test.txt found"."""
    d, _ = sets
    root = d / ds / "QueryLevelNorm"
    folds = find_folds(str(root))
    assert [f[0] for f in folds] == ["Fold1", "Fold2"]
    assert [os.path.basename(p) for p in folds[0][1:]] == list(LETOR3_NAMES)
    rc, _, err = run(["experiment", root, "-o", tmp_path / "r", *EXP], capsys)
    assert rc == 0, err
    assert (tmp_path / "r" / "table.md").is_file()


def test_a_letor3_fold_missing_a_file_names_it(sets):
    d, _ = sets
    os.remove(d / "OHSUMED" / "QueryLevelNorm" / "Fold2" / "validationset.txt")
    with pytest.raises(ValueError, match=r"Fold2.*without validationset\.txt"):
        find_folds(str(d / "OHSUMED" / "QueryLevelNorm"))


def test_a_fold_with_both_namings_is_refused(sets):
    """Which three files would be the fold is not for the reader to guess."""
    d, _ = sets
    fold = d / "MQ2007" / "Fold1"
    for name in LETOR3_NAMES:
        (fold / name).write_text((fold / "train.txt").read_text())
    with pytest.raises(ValueError, match=r"Fold1.*both.*train\.txt.*trainingset\.txt"):
        find_folds(str(d / "MQ2007"))


def test_experiment_on_a_yahoo_folder_says_how_to_lay_it_out(sets, tmp_path, capsys):
    d, _ = sets
    rc, _, err = run(["experiment", d / "ltrc_yahoo", "-o", tmp_path / "r", *EXP], capsys)
    line = one_line_error(rc, err, "set1.train.txt", "set1.valid.txt", "set1.test.txt")
    assert "vali.txt" in line
    assert "folder of its own" in line
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("given", "holder"),
    [("istella-s", "sample"), ("OHSUMED", "QueryLevelNorm")],
)
def test_experiment_on_the_folder_above_the_folds_names_the_one_to_give(
    sets, given, holder, tmp_path, capsys
):
    d, _ = sets
    rc, _, err = run(["experiment", d / given, "-o", tmp_path / "r", *EXP], capsys)
    one_line_error(rc, err, f"{d / given / holder}", "give it as FOLDS_DIR")


def test_experiment_on_istella_full_says_why_vali_is_needed(sets, tmp_path, capsys):
    """Istella's full release has train.txt and test.txt only."""
    d, _ = sets
    rc, _, err = run(["experiment", d / "istella" / "full", "-o", tmp_path / "r", *EXP], capsys)
    one_line_error(rc, err, "without vali.txt", "best iteration")


def test_experiment_names_the_layouts_it_reads(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    rc, _, err = run(["experiment", tmp_path / "empty", "-o", tmp_path / "r", *EXP], capsys)
    one_line_error(rc, err, "train.txt, vali.txt, test.txt", "trainingset.txt")


def test_experiment_help_names_letor3_files(capsys):
    assert main(["experiment", "--help"]) == 0
    assert "trainingset.txt" in capsys.readouterr().out


def test_the_yahoo_recipe_of_the_error_works(sets, tmp_path, capsys):
    """What the error says to do: set1's files linked into a folder as the three names."""
    d, _ = sets
    fold = tmp_path / "yahoo_set1"
    fold.mkdir()
    for src, dst in zip(("train", "valid", "test"), LETOR4_NAMES, strict=True):
        os.symlink(d / "ltrc_yahoo" / f"set1.{src}.txt", fold / dst)
    assert [f[0] for f in find_folds(str(fold))] == ["yahoo_set1"]
    rc, _, err = run(["experiment", fold, "-o", tmp_path / "r", *EXP], capsys)
    assert rc == 0, err


def test_experiment_above_several_data_sets_names_them_all(sets, tmp_path, capsys):
    """LETOR 3.0's ``Gov/QueryLevelNorm/`` holds one folder of folds per data set
    (``2003_td_dataset/``, ``2003_hp_dataset/``, ...): the first one alone was named."""
    d, _ = sets
    gov = tmp_path / "Gov" / "QueryLevelNorm"
    gov.mkdir(parents=True)
    for name in ("2003_hp_dataset", "2003_td_dataset"):
        os.symlink(d / "TD2003" / "QueryLevelNorm", gov / name)
    rc, _, err = run(["experiment", gov, "-o", tmp_path / "r", *EXP], capsys)
    one_line_error(
        rc, err, f"{gov / '2003_hp_dataset'}, {gov / '2003_td_dataset'}", "give one of them"
    )

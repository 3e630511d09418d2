"""Validation queries leaked from the training set, outside the CLI: ``ltrboost.train``
and ``Ranker.fit`` early-stopped silently on validation queries the model trains on
(``ltrboost train --valid`` warned), and both experiment protocols checked each fold's
test file against its training file but not its validation file.  And feature names
no model file can hold (a lone surrogate) set on a dataset by hand: the whole training
ran, then saving refused the name."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ltrboost
from ltrboost import LTRInputError, Ranker, make_dataset, train
from ltrboost.experiment import run_experiment
from ltrboost.experiment_qbrank import Settings, run_qbrank_experiment
from ltrboost.io.letor import dump_svmlight
from test_cli import run

PARAMS = {"n_estimators": 3, "min_samples_leaf": 2, "max_leaf_nodes": 4, "n_threads": 1}


def _set(qids, seed: int = 0, docs: int = 5, n_features: int = 3):
    """``(X, y, qid)``: ``docs`` documents a query, grades 0-2, the query ids ``qids``."""
    rng = np.random.default_rng(seed)
    q = np.repeat(np.asarray(list(qids)), docs)
    return rng.normal(size=(q.size, n_features)), rng.integers(0, 3, q.size), q


def _shared(caught) -> list[str]:
    return [str(w.message) for w in caught if "query ids" in str(w.message)]


def _train(train_set, valid_sets, **params):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        booster = train({**PARAMS, **params}, train_set, valid_sets)
    return booster, caught


# --- 1. ltrboost.train ---------------------------------------------------------------


def test_train_warns_of_a_validation_set_sharing_query_ids():
    """A validation set cut from the training data by rows chose the best iteration
    and stopped early on queries the model trains on, without a word."""
    tr = make_dataset(*_set(range(10))[:2], qid=_set(range(10))[2])
    vs = make_dataset(*_set(range(7, 15), seed=1)[:2], qid=_set(range(7, 15), seed=1)[2])
    _, caught = _train(tr, [("vali", vs)], early_stopping_rounds=1)
    shared = [w for w in caught if "query ids" in str(w.message)]
    assert len(shared) == 1, [str(w.message) for w in caught]
    assert issubclass(shared[0].category, UserWarning)
    assert shared[0].category is ltrboost.SharedQueriesWarning
    msg = str(shared[0].message)
    assert "validation set 'vali' (index 0) shares 3 query ids with the training set" in msg
    assert "(of its 8; e.g. qid 7)" in msg
    assert "early stopping" in msg
    line = sys._getframe().f_lineno + 2
    with pytest.warns(ltrboost.SharedQueriesWarning) as rec:
        train(PARAMS, tr, [("vali", vs)])
    assert (rec[0].filename, rec[0].lineno) == (__file__, line)  # the caller's train(...)


def test_train_names_each_leaking_validation_set_once():
    tr = make_dataset(*_set(range(10))[:2], qid=_set(range(10))[2])
    clean = make_dataset(*_set(range(20, 25), seed=2)[:2], qid=_set(range(20, 25), seed=2)[2])
    X, y, q = _set(range(5), seed=1)
    leaked = make_dataset(X, y, qid=q)
    _, caught = _train(tr, [("clean", clean), ("leaked", leaked)])
    shared = _shared(caught)
    assert len(shared) == 1, shared
    assert "validation set 'leaked' (index 1) shares 5 query ids" in shared[0]


def test_train_disjoint_or_sized_validation_sets_are_not_warned_of():
    """Disjoint ids say nothing; nor do queries given by sizes (``group=``): no ids."""
    X, y, q = _set(range(10))
    tr = make_dataset(X, y, qid=q)
    Xv, yv, qv = _set(range(10, 15), seed=1)
    _, caught = _train(tr, [("v", make_dataset(Xv, yv, qid=qv))])
    assert _shared(caught) == []
    Xs, ys, _ = _set(range(10), seed=3)
    _, caught = _train(tr, [("v", make_dataset(Xs, ys, group=[5] * 10))])
    assert _shared(caught) == []


def test_train_the_training_set_as_a_validation_set_is_not_warned_of():
    """Users watch the training metrics that way: the same object, or a dataset made
    again from identical arrays (``eval_set=[(X, y, qid)]`` builds a new one)."""
    X, y, q = _set(range(10))
    tr = make_dataset(X, y, qid=q)
    _, caught = _train(tr, [("train", tr)])
    assert _shared(caught) == []
    again = make_dataset(X.copy(), y.copy(), qid=q.copy())
    _, caught = _train(tr, [("train", again)])
    assert _shared(caught) == []
    X[0, 0] = np.nan  # NaN equal to NaN: still the training data
    tr = make_dataset(X, y, qid=q)
    _, caught = _train(tr, [("train", make_dataset(X.copy(), y, qid=q))])
    assert _shared(caught) == []


def test_train_a_slightly_different_copy_of_the_training_set_is_warned_of():
    X, y, q = _set(range(10))
    tr = make_dataset(X, y, qid=q)
    y2 = y.copy()
    y2[3] = (y2[3] + 1) % 3
    _, caught = _train(tr, [("v", make_dataset(X, y2, qid=q))])
    assert len(_shared(caught)) == 1
    assert "shares 10 query ids" in _shared(caught)[0]


def test_train_sparse_training_set_as_validation_set_is_not_warned_of():
    import scipy.sparse as sp

    X, y, q = _set(range(10))
    X[X < 0] = 0.0
    tr = make_dataset(sp.csr_matrix(X), y, qid=q)
    _, caught = _train(tr, [("train", make_dataset(sp.csr_matrix(X), y, qid=q))])
    assert _shared(caught) == []


def test_check_training_data_does_not_warn():
    """The protocols' up-front check gives no warning (the training gives them)."""
    from ltrboost.booster import check_training_data

    X, y, q = _set(range(10))
    Xv, yv, qv = _set(range(5), seed=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_training_data(
            PARAMS, make_dataset(X, y, qid=q), [("v", make_dataset(Xv, yv, qid=qv))]
        )
    assert _shared(caught) == []


# --- 2. Ranker.fit -------------------------------------------------------------------


def test_fit_warns_of_an_eval_set_sharing_query_ids():
    X, y, q = _set(range(10))
    Xv, yv, qv = _set(range(8, 12), seed=1)
    Xc, yc, qc = _set(range(30, 33), seed=2)
    r = Ranker(n_estimators=3, min_samples_leaf=2, n_threads=1, early_stopping_rounds=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r.fit(X, y, qid=q, eval_set=[(Xc, yc, qc), (Xv, yv, qv)])
    shared = _shared(caught)
    assert len(shared) == 1, shared
    assert "validation set 'valid_1' (index 1) shares 2 query ids" in shared[0]
    assert "(of its 4; e.g. qid 8)" in shared[0]


def test_fit_training_data_as_its_eval_set_is_not_warned_of():
    X, y, q = _set(range(10))
    r = Ranker(n_estimators=3, min_samples_leaf=2, n_threads=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r.fit(X, y, qid=q, sample_weight=np.ones(len(y)), eval_set=[(X, y, q)])
        df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(qid=q)
        r.fit(df, y, eval_set=[(df, y)])
    assert _shared(caught) == []


# --- 3. the experiment protocols: a fold's validation file ------------------------------


def _fold(root: Path, name: str, qids: dict[str, range]) -> Path:
    d = root / name
    d.mkdir(parents=True)
    for k, f in enumerate(("train", "vali", "test")):
        X, y, q = _set(qids[f], seed=k, docs=8, n_features=4)
        dump_svmlight(d / f"{f}.txt", X, y, q)
    return root


KW = dict(max_trees=2, min_samples_leaf=2, n_threads=1, progress=False)
GRID = dict(systems=("lambdamart",), criteria=("se",), leaves=(4,), learning_rates=(0.1,))


def test_experiment_warns_of_a_fold_whose_validation_file_shares_query_ids(tmp_path):
    """The best iteration of every cell is chosen on the fold's validation file: one
    warning per leaking file, none from the cells' trainings themselves."""
    root = tmp_path / "data"
    _fold(root, "Fold1", {"train": range(10), "vali": range(6, 12), "test": range(20, 25)})
    _fold(root, "Fold2", {"train": range(10), "vali": range(10, 15), "test": range(15, 20)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_experiment(str(root), str(tmp_path / "r"), **GRID, **KW)
    shared = _shared(caught)
    assert len(shared) == 1, shared
    fold1 = root / "Fold1"
    assert shared[0].startswith("fold 1/2: ")
    assert f"{fold1 / 'vali.txt'} shares 4 query ids with {fold1 / 'train.txt'}" in shared[0]
    assert "best iteration" in shared[0]


def test_experiment_cli_warns_of_validation_and_test_leaks_in_fold_order(tmp_path, capsys):
    root = tmp_path / "data"
    _fold(root, "Fold1", {"train": range(10), "vali": range(9, 12), "test": range(8, 12)})
    argv = ["experiment", root, "-o", tmp_path / "r", "--systems", "lambdamart"]
    argv += ["--criteria", "se", "--leaves", "4", "--learning-rates", "0.1", "--max-trees", "2"]
    argv += ["--min-samples-leaf", "2", "--n-threads", "1", "--quiet"]
    rc, _, err = run(argv, capsys)
    assert rc in (0, 1), err  # 1: one criterion, so the se-vs-ole table is empty
    lines = [li for li in err.splitlines() if "query ids" in li]
    assert len(lines) == 2, err
    assert f"{root / 'Fold1' / 'vali.txt'} shares 1 query ids" in lines[0]
    assert f"{root / 'Fold1' / 'test.txt'} shares 2 query ids" in lines[1]


@pytest.fixture
def qb_folds(tmp_path, write_letor_folds):
    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    return write_letor_folds(tmp_path / "qdata", 2, 8, 5, single)


def _shift(path: Path, offset: int) -> None:
    out = []
    for line in path.read_text().splitlines():
        words = line.split()
        words[1] = f"qid:{int(words[1][4:]) + offset}"
        out.append(" ".join(words) + "\n")
    path.write_text("".join(out))


def test_qbrank_warns_of_a_fold_whose_validation_file_shares_query_ids(qb_folds, tmp_path):
    """Seed 004's protocol chooses the iteration and RankSVM's C on the validation
    queries; its MART run trains through ``ltrboost.train`` (not warned per run)."""
    for k in (1, 2):
        _shift(qb_folds / f"Fold{k}" / "test.txt", 100)
    _shift(qb_folds / "Fold1" / "vali.txt", 200)  # its own ids; Fold2's vali shares
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_qbrank_experiment(
            str(qb_folds),
            str(tmp_path / "r"),
            settings=Settings(n_estimators=2, min_samples_leaf=2, ranksvm_c_grid=(1.0,)),
            n_threads=1,
            progress=False,
        )
    shared = _shared(caught)
    assert len(shared) == 1, shared
    fold2 = qb_folds / "Fold2"
    assert shared[0].startswith("fold 2/2: ")
    assert f"{fold2 / 'vali.txt'} shares 12 query ids with {fold2 / 'train.txt'}" in shared[0]


# --- 4. feature names no model file can hold ---------------------------------------------


def test_train_refuses_surrogate_names_set_by_hand_before_any_round(tmp_path):
    """``ds.feature_names = [...]`` after make_dataset skipped its check: every round
    trained, then save_model refused the name (the CLI's checkpoints, an export, too)."""
    X, y, q = _set(range(10))
    ds = make_dataset(X, y, qid=q, feature_names=["a", "b", "c"])
    ds.feature_names = ["a", "\ud800", "c"]
    rounds = []
    with pytest.raises(LTRInputError) as e:
        train(PARAMS, ds, callbacks=[lambda env: rounds.append(env.iteration)])
    assert rounds == []
    msg = str(e.value)
    assert "train_set.feature_names[1]='\\ud800' holds a lone surrogate (\\ud800)" in msg
    assert "rename the feature" in msg


def test_fit_dataframe_with_a_surrogate_column_name_fails_before_training(tmp_path):
    """Pinned (fixed with the model file's check): one error naming the column, before
    any round, and no model file, half-written or not."""
    X, y, q = _set(range(10))
    df = pd.DataFrame(X, columns=pd.Index(["a", "\ud800", "c"], dtype=object))
    rounds = []
    r = Ranker(n_estimators=3, min_samples_leaf=2, n_threads=1)
    with pytest.raises(LTRInputError, match=r"X column 1 \('\\ud800'\).*rename the feature"):
        r.fit(df, y, qid=q, callbacks=[lambda env: rounds.append(env.iteration)])
    assert rounds == []
    assert not hasattr(r, "booster_")
    assert os.listdir(tmp_path) == []

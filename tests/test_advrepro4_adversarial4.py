"""Adversarial pass 4 over reproducibility ("the same data, parameters and
``random_state`` give a byte-identical model file", README): each test failed before
its fix."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from ltrboost import Ranker
from ltrboost.cli import main
from ltrboost.datasets import make_ranking
from ltrboost.io.letor import dump_svmlight

FAST = dict(n_estimators=2, min_samples_leaf=3, max_leaf_nodes=4, n_threads=1)


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=12, docs_per_query=8, n_features=4, random_state=0)


def _file(model, path) -> bytes:
    model.save_model(path)
    return path.read_bytes()


@pytest.mark.parametrize(
    ("objective", "as_int", "as_float"),
    [
        (
            "lambdamart",
            dict(learning_rate=1, subsample=1, l2_regularization=0, sigma=2, relevance_threshold=1),
            dict(
                learning_rate=1.0,
                subsample=1.0,
                l2_regularization=0.0,
                sigma=2.0,
                relevance_threshold=1.0,
            ),
        ),
        (
            "gbrank",
            dict(tau=1, min_sum_hessian_in_leaf=0),
            dict(tau=1.0, min_sum_hessian_in_leaf=0.0),
        ),
        ("qbrank", dict(tau=1, preference_weight=1), dict(tau=1.0, preference_weight=1.0)),
        (
            "logistic_rank",
            dict(positive_threshold=1, label_scale=[1, 2, 3]),
            dict(positive_threshold=1.0, label_scale=[1.0, 2.0, 3.0]),
        ),
        ("logistic_rank", dict(label_scale={0: 1, 1: 2}), dict(label_scale={0.0: 1.0, 1.0: 2.0})),
        ("yetirank", dict(decay=1, colsample_bytree=1), dict(decay=1.0, colsample_bytree=1.0)),
    ],
)
def test_a_real_parameter_given_as_an_int_writes_the_same_file(
    data, tmp_path, objective, as_int, as_float
):
    """``learning_rate=1`` and ``learning_rate=1.0`` are one parameter value (the same
    trees), but the file said ``"learning_rate":1`` for one and ``1.0`` for the other
    (in ``params``, and ``sigma``/``relevance_threshold`` in ``objective_params`` too),
    so the two model files differed."""
    X, y, qid = data
    a = _file(Ranker(objective=objective, **FAST, **as_int).fit(X, y, qid=qid), tmp_path / "a")
    b = _file(Ranker(objective=objective, **FAST, **as_float).fit(X, y, qid=qid), tmp_path / "b")
    assert a == b


def test_python_and_cli_write_the_same_real_parameters(data, tmp_path):
    """The CLI parses ``--learning-rate 1`` as the float 1.0; the same run from Python
    with ``learning_rate=1`` wrote ``1`` (the files differed by more than the CLI's
    recorded ``missing`` convention)."""
    X, y, qid = data
    train = tmp_path / "train.txt"
    dump_svmlight(train, X, y, qid)
    cli_model = tmp_path / "cli.json"
    argv = ["train", train, "--output", cli_model, "--quiet", "--learning-rate", "1"]
    argv += ["--sigma", "2", "--n-estimators", "2", "--min-samples-leaf", "3"]
    argv += ["--max-leaf-nodes", "4", "--n-threads", "1"]
    assert main([str(a) for a in argv]) == 0
    py = Ranker(**FAST, learning_rate=1, sigma=2).fit(X, y, qid=qid)
    py_doc = json.loads(_file(py, tmp_path / "py.json"))
    cli_doc = json.loads(cli_model.read_bytes())
    assert cli_doc.pop("missing") == "zero"  # documented: the CLI records its convention
    assert py_doc.pop("missing") is None
    # documented: the CLI names a LETOR file's features by their ids (an array: no names)
    assert cli_doc.pop("feature_names") == [f"f{k + 1}" for k in range(X.shape[1])]
    assert py_doc.pop("feature_names") is None
    assert json.dumps(py_doc) == json.dumps(cli_doc)  # the same text, number types included


def _readme_determinism() -> str:
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    return " ".join(text.split("**Determinism**", 1)[1].split("\n\n", 1)[0].split())


def test_a_querys_document_order_changes_the_model_and_readme_says_so(data, tmp_path):
    """README's determinism promise named only the queries' order; with no random draw
    at all (``lambdamart``, no bagging), reversing each query's documents trains another
    model, because the first round's rankings (every score equal) break ties in input
    order. Interleaving queries' rows, each query's documents in order, does not."""
    X, y, qid = data
    rows = np.arange(len(y))
    backwards = np.concatenate([rows[qid == q][::-1] for q in pd.unique(qid)])
    interleaved = np.argsort(np.tile(np.arange(8), 12), kind="stable")  # round-robin
    assert not np.array_equal(qid[interleaved], qid)
    first = Ranker(**FAST).fit(X, y, qid=qid)
    same = Ranker(**FAST).fit(X[interleaved], y[interleaved], qid=qid[interleaved])
    other = Ranker(**FAST).fit(X[backwards], y[backwards], qid=qid[backwards])
    assert _file(same, tmp_path / "a") == _file(first, tmp_path / "b")
    assert not np.array_equal(other.predict(X), first.predict(X))
    assert "each query's documents in the same order" in _readme_determinism()


def test_the_container_does_not_change_the_trees(data, tmp_path):
    """README: the same numbers in any container train the same trees (a DataFrame adds
    its names); float32 data trains on its float32 values."""
    X, y, qid = data
    X = np.round(X, 2)
    X[::5, 1] = np.nan
    params = dict(FAST, objective="yetirank", subsample=0.7, colsample_bytree=0.5)

    def trees(Xc):
        doc = json.loads(_file(Ranker(**params).fit(Xc, y, qid=qid), tmp_path / "m.json"))
        return json.dumps({k: v for k, v in doc.items() if k != "feature_names"})

    ref = trees(X)
    for Xc in (np.asfortranarray(X), X.tolist(), sp.csr_matrix(X), pd.DataFrame(X)):
        assert trees(Xc) == ref
    X32 = X.astype(np.float32)
    assert trees(X32) == trees(X32.astype(np.float64)) == trees(sp.csc_matrix(X32))
    assert "The container does not matter" in _readme_determinism()

"""Adversarial pass 4 over reproducibility ("the same data, parameters and
``random_state`` give a byte-identical model file", README): each test failed before
its fix."""

from __future__ import annotations

import json

import pytest

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
    assert json.dumps(py_doc) == json.dumps(cli_doc)  # the same text, number types included

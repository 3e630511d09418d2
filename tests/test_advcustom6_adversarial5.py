"""Custom objectives and metrics, a fifth adversarial pass: what a user-defined callable
can return or be named, and how the command line meets a model of one.  Each problem
found is one test here."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ltrboost
from ltrboost import Ranker
from ltrboost.cli import main
from ltrboost.datasets import make_ranking
from test_cli import assert_one_line_error

FAST = dict(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=3, random_state=0)


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=20, docs_per_query=(4, 8), n_features=5, random_state=3)
    return X, y.astype(np.float64), qid


def _squared_error(scores, labels, query_offsets):
    return 2.0 * (scores - labels), np.full_like(scores, 2.0)


class _NumberNamed:
    """A callable metric whose ``__name__`` is not a string."""

    __name__ = 5

    def __call__(self, scores, labels, query_offsets):
        return 0.5


def _named(name):
    def metric(scores, labels, query_offsets):
        return 0.5

    metric.__name__ = name
    return metric


@pytest.mark.parametrize("metric", [_named(""), _named("   "), _NumberNamed()])
def test_a_callable_metric_without_a_usable_name_is_refused_before_training(metric, data, tmp_path):
    """A callable metric is recorded by its ``__name__`` (evals_result_, the model
    file).  One named ``""``, blanks or a number trained, and ``save_model`` wrote a
    file that ``load_model`` refused ("eval_metric must be ... a list of non-empty
    metric names"): the model was lost.  It is refused before the first round."""
    X, y, qid = data
    with pytest.raises(ValueError, match=r"eval_metric: .*__name__"):
        Ranker(**FAST, eval_metric=[metric, "map"]).fit(X, y, qid=qid, eval_set=[(X, y, qid)])
    # a callable metric of a usable name still trains, saves and loads
    path = tmp_path / "ok.json"
    Ranker(**FAST, eval_metric=[_named("my metric"), "map"]).fit(
        X, y, qid=qid, eval_set=[(X, y, qid)]
    ).save_model(path)
    assert ltrboost.load_model(path).params["eval_metric"] == ["my metric", "map"]
    assert list(json.loads(path.read_text())["evals_result"]["valid_0"]) == ["my metric", "map"]


def test_a_custom_metric_name_check_covers_ltrboost_train(data):
    """The same check on the lower-level ``ltrboost.train``."""
    X, y, qid = data
    ds = ltrboost.make_dataset(X, y, qid=qid)
    with pytest.raises(ValueError, match=r"eval_metric: .*__name__"):
        ltrboost.train({"n_estimators": 2, "eval_metric": _named("")}, ds, [("v", ds)])


@pytest.mark.parametrize("command", ["train", "cv"])
def test_cli_objective_custom_name_names_the_flag(command, data, tmp_path, capsys):
    """``--objective custom:fn`` (the name a custom model's file records) said
    "objective 'custom:fn' is a Python callable that a model file does not store ...
    pass the function again from Python (objective=fn, ...)": neither the flag nor that
    the command line cannot take a function."""
    X, y, qid = data
    train = tmp_path / "train.txt"
    ltrboost.dump_svmlight(str(train), X, y, qid)
    args = [command, str(train), "--objective", "custom:squared_error"]
    if command == "train":
        args += ["-o", str(tmp_path / "m.json"), "-q"]
    rc = main(args)
    line = assert_one_line_error(
        rc, capsys.readouterr().err, "--objective custom:squared_error", "Python"
    )
    assert "a model file does not store" not in line


def test_hessians_that_are_zero_in_float32_are_refused_as_zero(data):
    """The engine keeps hessians in float32; ``hess`` of 1e-50 everywhere is 0 there, so
    every leaf is 0 and no split gains, the case refused for ``hess`` of zeros.  It
    passed the check (made on float64) and trained a constant model with a warning
    about min_sum_hessian_in_leaf."""
    X, y, qid = data

    def tiny_hessian(scores, labels, query_offsets):
        return 2.0 * (scores - labels), np.full_like(scores, 1e-50)

    with pytest.raises(ValueError, match=r"round 1\): hess is 0 .*float32"):
        Ranker(**FAST, objective=tiny_hessian).fit(X, y, qid=qid)

    # usable hessians among the tiny ones train, as a partly zero hess does
    def some_hessian(scores, labels, query_offsets):
        return 2.0 * (scores - labels), np.where(labels > 0, 2.0, 1e-50)

    model = Ranker(**FAST, objective=some_hessian, min_sum_hessian_in_leaf=0).fit(X, y, qid=qid)
    assert np.ptp(model.predict(X)) > 0


@pytest.mark.parametrize("objective", ["lambdamart", _squared_error])
def test_the_scores_a_custom_metric_keeps_do_not_change_under_it(objective, data):
    """A custom metric got a read-only *view* of the validation scores that training
    updates in place: scores kept from a round (to compare rounds, to plot later)
    turned into the next round's, silently (under mcrank, whose transform makes a new
    array, they did not).  A custom objective gets a copy; so does a metric now."""
    X, y, qid = data
    kept, copies = [], []

    def keep_scores(scores, labels, query_offsets):
        kept.append(scores)
        copies.append(np.array(scores))
        return float(scores.mean())

    Ranker(**FAST, objective=objective, eval_metric=keep_scores).fit(
        X, y, qid=qid, eval_set=[(X, y, qid)]
    )
    assert len(kept) == FAST["n_estimators"]
    for round_, (k, c) in enumerate(zip(kept, copies, strict=True), start=1):
        np.testing.assert_array_equal(k, c, err_msg=f"round {round_}")
        assert not k.flags.writeable


def test_an_exception_a_custom_objective_raises_names_it_and_the_round(data):
    """An exception from the objective callable came out bare (a lambda's traceback
    names neither it nor the round); a callback's gets a note, so does it now.  A Numba
    function that writes into its read-only arguments fails to compile with a
    TypingError about a 'readonly array': the note says what the arguments are."""
    X, y, qid = data
    calls = []

    def breaks_later(scores, labels, query_offsets):
        calls.append(1)
        if len(calls) == 2:
            raise ZeroDivisionError("division by zero")
        return _squared_error(scores, labels, query_offsets)

    with pytest.raises(ZeroDivisionError) as info:
        Ranker(**FAST, objective=breaks_later).fit(X, y, qid=qid)
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert "objective 'custom:breaks_later'" in notes
    assert "round 2" in notes

    numba = pytest.importorskip("numba")

    @numba.njit(cache=False)
    def writes_scores(scores, labels, query_offsets):
        scores[0] = 0.0
        return 2.0 * (scores - labels), np.full(scores.shape[0], 2.0)

    with pytest.raises(numba.core.errors.TypingError) as info:
        Ranker(**FAST, objective=writes_scores).fit(X, y, qid=qid)
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert "round 1" in notes
    assert "read-only" in notes


def test_an_exception_a_custom_metric_raises_names_it(data):
    """Likewise for a custom metric (a lambda among several metrics)."""
    X, y, qid = data
    with pytest.raises(KeyError) as info:
        Ranker(**FAST, eval_metric=["map", lambda s, l, o: {}["x"]]).fit(
            X, y, qid=qid, eval_set=[(X, y, qid)]
        )
    assert "raised by eval_metric '<lambda>'" in " ".join(getattr(info.value, "__notes__", []))

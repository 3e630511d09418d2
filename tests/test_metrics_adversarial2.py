"""Adversarial pass over evaluation (second round): metric values during training, on
Dask, in ``ltrboost eval`` and ``cv`` agree with the documented conventions."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.datasets import make_ranking
from ltrboost.io.letor import dump_svmlight
from ltrboost.metrics import evaluate
from ltrboost.model import load_model
from test_cli import run


def test_best_iteration_is_1_based_as_readme_says():
    """README: ``best_iteration_`` is 1-based (LightGBM's convention), the number of
    rounds ``predict`` uses, and the first of equal best values wins."""
    X, y, q = make_ranking(n_queries=30, docs_per_query=8, n_features=5, random_state=0)[:3]
    Xv, yv, qv = make_ranking(
        n_queries=10, docs_per_query=8, n_features=5, first_qid=30, random_state=1
    )[:3]
    r = Ranker(n_estimators=30, eval_metric="ndcg@5", early_stopping_rounds=3).fit(
        X, y, qid=q, eval_set=[(Xv, yv, qv)]
    )
    history = r.evals_result_["valid_0"]["ndcg@5"]
    assert r.best_iteration_ == int(np.argmax(history)) + 1
    assert len(history) == r.best_iteration_ + 3
    np.testing.assert_array_equal(
        r.predict(Xv), r.booster_.predict(Xv, iteration=r.best_iteration_)
    )
    assert r.score(Xv, yv, qid=qv, metric="ndcg@5") == history[r.best_iteration_ - 1]


def test_a_warm_start_on_another_eval_set_does_not_compare_with_the_old_history():
    """The init model's history was measured on its own eval_set (here the training
    data, NDCG near 0.97) and was kept under the same name ``valid_0``: the new set's
    first values (about 0.67) never beat it, so training stopped after
    early_stopping_rounds new rounds out of the 30 asked and predicted with a round
    chosen on the other data, dropping trees of the init model."""
    X, y, q = make_ranking(n_queries=30, docs_per_query=8, n_features=5, random_state=0)[:3]
    Xv, yv, qv = make_ranking(
        n_queries=10, docs_per_query=8, n_features=5, first_qid=30, random_state=1
    )[:3]
    init = Ranker(n_estimators=10, eval_metric="ndcg@5").fit(X, y, qid=q, eval_set=[(X, y, q)])
    more = Ranker(n_estimators=30, eval_metric="ndcg@5", early_stopping_rounds=5).fit(
        X, y, qid=q, eval_set=[(Xv, yv, qv)], init_model=init
    )
    history = more.evals_result_["valid_0"]["ndcg@5"]
    assert more.best_iteration_ > 10  # one of the new rounds, measured on Xv
    # every round is measured on Xv (the init model's again), the best among the new
    assert len(history) == more.booster_.n_iterations
    best = more.best_iteration_
    assert history[best - 1] == max(history[10:])
    assert more.score(Xv, yv, qid=qv, metric="ndcg@5") == history[best - 1]


def test_resuming_on_the_same_eval_set_keeps_the_history():
    """The same data under the same name: the history is that of the data, and a
    resumed run stops where the uninterrupted one does."""
    X, y, q = make_ranking(n_queries=30, docs_per_query=8, n_features=5, random_state=0)[:3]
    Xv, yv, qv = make_ranking(
        n_queries=10, docs_per_query=8, n_features=5, first_qid=30, random_state=1
    )[:3]
    kw = dict(eval_metric="ndcg@5,err", early_stopping_rounds=3, learning_rate=0.3)
    whole = Ranker(n_estimators=40, **kw).fit(X, y, qid=q, eval_set=[(Xv, yv, qv)])
    init = Ranker(n_estimators=2, **kw).fit(X, y, qid=q, eval_set=[(Xv, yv, qv)])
    more = Ranker(n_estimators=38, **kw).fit(X, y, qid=q, eval_set=[(Xv, yv, qv)], init_model=init)
    assert more.evals_result_ == whole.evals_result_
    assert more.best_iteration_ == whole.best_iteration_


@pytest.mark.parametrize("scores", [np.arange(5.0) + 1j, np.arange(5.0) + 0j, [0, 1, 2j, 3, 4]])
def test_complex_scores_are_refused_not_cut_to_their_real_part(scores):
    """Labels refuse complex numbers (README: "the imaginary part is never dropped");
    scores were cast to float64 with a ComplexWarning and ranked by the real part."""
    y = np.array([1, 0, 2, 0, 1.0])
    with pytest.raises(ValueError, match="scores are complex"):
        evaluate(scores, y, [0, 3, 5], "ndcg@2")


def test_train_summary_after_a_resume_without_a_record_names_the_best_rounds_value(
    tmp_path, capsys
):
    """A model trained without --valid, resumed with --valid and early stopping: the
    record covered the added rounds only, and the summary line indexed it from round 1
    (an IndexError traceback after the model was written, or another round's value).
    The init model's rounds are now measured on the set too."""

    X, y, q = make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=0)[:3]
    Xv, yv, qv = make_ranking(
        n_queries=8, docs_per_query=8, n_features=4, first_qid=20, random_state=1
    )[:3]
    train, valid = tmp_path / "train.txt", tmp_path / "valid.txt"
    dump_svmlight(train, X, y, q)
    dump_svmlight(valid, Xv, yv, qv)
    init, more = tmp_path / "init.json", tmp_path / "more.json"
    assert run(["train", train, "-o", init, "--n-estimators", 10, "-q"], capsys)[0] == 0
    rc, _, err = run(
        ["train", train, "--valid", valid, "--resume", init, "--n-estimators", 40,
         "--early-stopping-rounds", 3, "--metric", "ndcg@5", "-o", more, "-q"],
        capsys,
    )  # fmt: skip
    assert rc == 0, err
    model = load_model(str(more))
    values = model.evals_result["valid"]["ndcg@5"]
    assert len(values) == model.n_iterations
    best = model.best_iteration
    assert best > 10
    assert f"best iteration {best}, ndcg@5={values[best - 1]:.4f}" in err


def test_logged_best_round_value_after_a_warm_start_without_a_record(caplog):
    """Ranker(verbose=...) logs the best round's value from the record, which covers
    only the rounds added to an init_model trained without that eval_set."""
    X, y, q = make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=0)[:3]
    Xv, yv, qv = make_ranking(
        n_queries=8, docs_per_query=8, n_features=4, first_qid=20, random_state=1
    )[:3]
    init = Ranker(n_estimators=5).fit(X, y, qid=q)
    with caplog.at_level(logging.INFO, logger="ltrboost"):
        more = Ranker(n_estimators=40, eval_metric="ndcg@5", early_stopping_rounds=3).fit(
            X, y, qid=q, eval_set=[(Xv, yv, qv)], init_model=init, verbose=100
        )
    values = more.evals_result_["valid_0"]["ndcg@5"]
    best = more.best_iteration_
    line = [r.getMessage() for r in caplog.records if "best round" in r.getMessage()]
    assert line
    assert line[0].endswith(f"best round [{best}]\tvalid_0's ndcg@5: {values[best - 6]:.6g}")


def test_resuming_a_record_of_the_last_rounds_takes_the_best_round_by_its_number():
    """A record of the last rounds only (a model file from before the init model's
    rounds were measured again): resumed, its best round was taken as the index into
    that record (round 5 of 13 instead of round 10), so the model predicted with the
    first, unvalidated trees.  Such a record is now measured again from the trees, and
    early stopping looks at the new rounds."""
    X, y, q = make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=0)[:3]
    Xv, yv, qv = make_ranking(
        n_queries=8, docs_per_query=8, n_features=4, first_qid=20, random_state=1
    )[:3]
    first = Ranker(n_estimators=5).fit(X, y, qid=q)
    kw = dict(eval_metric="ndcg@5")
    second = Ranker(n_estimators=8, **kw).fit(
        X, y, qid=q, eval_set=[(Xv, yv, qv)], init_model=first
    )
    full = list(second.evals_result_["valid_0"]["ndcg@5"])
    assert len(full) == 13
    second.booster_.evals_result["valid_0"]["ndcg@5"] = full[5:]  # the old record
    third = Ranker(n_estimators=10, early_stopping_rounds=3, **kw).fit(
        X, y, qid=q, eval_set=[(Xv, yv, qv)], init_model=second
    )
    history = third.evals_result_["valid_0"]["ndcg@5"]
    assert history[:13] == full
    assert third.best_iteration_ > 13
    assert history[third.best_iteration_ - 1] == max(history[13:])


@pytest.mark.parametrize("weight", [1e308, 1e-320, 5e-324])
def test_equal_query_weights_of_any_size_give_the_unweighted_mean(weight):
    """Only the ratios of query weights matter: weights near the float64 maximum
    summed to inf (a NaN NDCG and MAP, a pair precision of 1.0) and subnormal ones
    lost their precision."""
    s, y, offsets = np.arange(7.0), np.array([1, 0, 2, 0, 1, 3, 0.0]), [0, 3, 5, 7]
    names = "ndcg@2,map,err,p@2,pair_precision"
    got = evaluate(s, y, offsets, names, query_weights=[weight] * 3)
    assert got == evaluate(s, y, offsets, names)


def test_cv_refuses_unbiased_training_it_cannot_give_positions_to(tmp_path, capsys):
    """cv has no --position flag, but --unbiased true failed inside the first fold with
    the objective's advice to pass "CLI --position FILE"."""
    from test_cli import assert_one_line_error

    X, y, q = make_ranking(n_queries=6, docs_per_query=5, n_features=3, random_state=0)[:3]
    data = tmp_path / "data.txt"
    dump_svmlight(data, X, y, q)
    rc, _, err = run(["cv", data, "--folds", 2, "--unbiased", "true"], capsys)
    assert_one_line_error(rc, err, "--unbiased true is not available in cv")


def test_positive_sample_weights_that_float32_cannot_hold_are_named():
    """Weights of 1e-50 became 0 as float32, and the error said that every weight was
    zero, although none was."""
    from ltrboost.dataset import LTRInputError, make_dataset

    X, y, q = make_ranking(n_queries=4, docs_per_query=5, n_features=3, random_state=0)[:3]
    with pytest.raises(LTRInputError, match=r"sample_weight\[0\]=1e-50 is positive but"):
        make_dataset(X, y, qid=q, sample_weight=np.full(len(y), 1e-50))

"""Adversarial pass 5 on the metrics: scores at the edge of float64 (near its maximum,
infinite, Python integers beyond it) through the metrics and the scikit-learn scorer,
checked against the README's ranking rule (score descending, ties in input order;
infinite scores rank first or last)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from ltrboost.metrics import evaluate, get_metric, make_scorer


def _ndcg_plain(s, y):
    """NDCG over the whole list of one query, exponential gain, ties in input order."""
    order = sorted(range(len(s)), key=lambda i: (-s[i], i))
    dcg = sum((2.0 ** y[i] - 1) / math.log2(r + 2) for r, i in enumerate(order))
    ideal = sorted(y, reverse=True)
    idcg = sum((2.0**v - 1) / math.log2(r + 2) for r, v in enumerate(ideal))
    return dcg / idcg


@pytest.mark.parametrize(
    "name", ["ndcg", "dcg@2", "err", "map", "mrr", "p@1", "pair_precision", "pair_precision@50%"]
)
def test_finite_scores_near_the_float64_maximum_give_no_overflow_warning(name):
    # The NaN check summed the scores: two scores of 1e308 overflowed that sum and
    # every metric warned "overflow encountered in reduce" (an error under -W error or
    # a pytest filterwarnings=error) on valid, finite scores.
    s = np.array([1e308, 1e308, -1e308, 0.0])
    y = np.array([1.0, 0.0, 2.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = get_metric(name)(s, y, [0, 4])
        get_metric(name).bind(y, [0, 4])(s)  # the early-stopping path
    assert math.isfinite(value)
    if name == "ndcg":
        assert value == pytest.approx(_ndcg_plain(list(s), list(y)), rel=1e-12)


def test_nan_check_still_names_the_row_when_inf_and_minus_inf_cancel():
    s = np.array([np.inf, -np.inf, 1e308, 1e308, np.nan])
    with pytest.raises(ValueError, match=r"scores\[4\] is NaN"):
        get_metric("ndcg")(s, np.zeros(5), [0, 5])
    # +inf and -inf alone are scores, not NaN
    assert get_metric("mrr")(s[:4], np.array([0.0, 1.0, 0.0, 0.0]), [0, 4]) == 0.25


@pytest.mark.parametrize("where", ["scores", "query_weights"])
def test_python_integers_beyond_float64_are_named_not_a_bare_overflow_error(where):
    # The labels said "y[0]=... is too large for a float64"; the scores and the query
    # weights let Python's OverflowError ("int too large to convert to float") out,
    # naming neither the argument nor the row.
    s, y, w = [1.0, 0.0], [1.0, 0.0], [1.0]
    if where == "scores":
        s = [10**400, 0]
    else:
        w = [10**400]
    with pytest.raises(ValueError, match=where):
        evaluate(s, y, [0, 2], "ndcg", query_weights=w)


class _Fixed:
    """An estimator whose predictions are given (a pipeline's last step, say)."""

    def __init__(self, scores):
        self.scores = np.asarray(scores, dtype=np.float64)

    def predict(self, X):
        return self.scores


def test_scorer_ranks_infinite_predictions_as_the_metrics_do():
    # The metrics rank +inf first and -inf last (README); the scorer passed the
    # predictions through make_dataset as a feature column and refused them with
    # "feature 0 is inf: infinite values are not allowed (use NaN for a missing
    # value...)", advice about features, for the estimator's own output.
    s = [np.inf, 1.0, -np.inf, 2.0, 0.5]
    y = np.array([0.0, 1.0, 2.0, 0.0, 1.0])
    qid = np.array([7, 7, 3, 3, 7])
    expected = evaluate(
        np.array([np.inf, 1.0, 0.5, -np.inf, 2.0]),  # grouped: q7 rows 0,1,4; q3 rows 2,3
        y[[0, 1, 4, 2, 3]],
        [0, 3, 5],
        "ndcg",
    )["ndcg"]
    got = make_scorer("ndcg", qid=qid)(_Fixed(s), np.zeros((5, 1)), y)
    assert got == expected
    q7 = _ndcg_plain([np.inf, 1.0, 0.5], [0.0, 1.0, 1.0])
    q3 = _ndcg_plain([-np.inf, 2.0], [2.0, 0.0])
    assert got == pytest.approx((q7 + q3) / 2)


def test_scorer_names_the_callers_row_of_a_nan_prediction():
    # Interleaved queries are regrouped before scoring: the NaN check named the row of
    # the regrouped array (scores[2] here), not the row of X that predicted NaN.
    s = [0.0, np.nan, 1.0, 2.0]
    qid = [2, 1, 2, 1]
    with pytest.raises(ValueError, match=r"\[1\] is NaN"):
        make_scorer("ndcg", qid=qid)(_Fixed(s), np.zeros((4, 1)), np.array([1.0, 0.0, 0.0, 1.0]))


@pytest.mark.parametrize("command", ["train", "cv", "eval"])
@pytest.mark.parametrize("value", ["ndcg@0", "ndcg@10.0", "NDCG@10,p"])
def test_cli_names_the_metric_flag_of_an_unknown_metric(tmp_path, capsys, command, value):
    # "ltrboost: error: unknown metric 'ndcg@0' (...)" named no flag; a CLI error names
    # the flag (--metric) as the other flags' errors do.
    from ltrboost.cli import main
    from ltrboost.datasets import make_ranking
    from ltrboost.io import dump_svmlight

    X, y, qid = make_ranking(n_queries=4, docs_per_query=5, n_features=3, random_state=0)[:3]
    data = tmp_path / "d.txt"
    dump_svmlight(data, X, y, qid)
    model = tmp_path / "m.json"
    if command == "eval":
        assert main(["train", str(data), "--n-estimators", "1", "-q", "-o", str(model)]) == 0
        capsys.readouterr()
        argv = ["eval", str(model), str(data)]
    elif command == "train":
        argv = ["train", str(data), "--valid", str(data), "--n-estimators", "1", "-q"]
        argv += ["-o", str(model)]
    else:
        argv = ["cv", str(data), "--folds", "2", "--n-estimators", "1", "-q"]
    rc = main([*argv, "--metric", value])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("ltrboost: error: --metric"), err
    assert "unknown metric" in err
    assert len(err.strip().splitlines()) == 1
    assert not model.exists() or command == "eval"


def test_rank_order_names_query_offsets_not_a_y_it_does_not_take():
    # rank_order(scores, query_offsets) said "scores has length 4 but y has length 3".
    from ltrboost.metrics import rank_order

    with pytest.raises(ValueError, match=r"query_offsets\[-1\]=3") as e:
        rank_order(np.zeros(4), [0, 3])
    assert "y has" not in str(e.value)
    # ties keep input order, -0.0 ties with 0.0, inf ranks first
    order = rank_order(np.array([1.0, 2.0, 2.0, np.inf, -0.0, 0.0]), [0, 3, 6])
    assert order.tolist() == [1, 2, 0, 3, 4, 5]

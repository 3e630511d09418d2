"""Metric names, get_metric / evaluate / parse_metric_list, bind, weights, checks."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltrboost._numba import threads
from ltrboost.metrics import (
    METRIC_FORMS,
    BoundMetric,
    Metric,
    evaluate,
    get_metric,
    parse_metric_list,
)
from ltrboost.metrics.ap import _ap_reference
from ltrboost.metrics.err import _err_reference
from ltrboost.metrics.ndcg import _ndcg_reference
from ltrboost.metrics.precision import _pair_precision_reference, _precision_reference
from ltrboost.metrics.rr import _rr_reference

ALL_NAMES = [
    "ndcg@10",
    "ndcg",
    "dcg@5",
    "dcg",
    "err@10",
    "err",
    "map",
    "map@10",
    "mrr",
    "mrr@10",
    "p@10",
    "pair_precision",
    "pair_precision@10%",
]


def reference_value(name, scores, y, qo, empty=1.0, weights=None):
    """The dataset value of ``name`` from the plain-NumPy references only."""
    m = get_metric(name)
    f, k = m.family, m.k
    if f == "pair_precision":
        return _pair_precision_reference(
            scores,
            y,
            qo,
            percent=m.percent,
            empty_query_score=empty,
            query_weights=weights,
        )
    if f in ("ndcg", "dcg"):
        per_query = _ndcg_reference(
            scores, y, qo, k=k, normalize=f == "ndcg", empty_query_score=empty
        )
    elif f == "err":
        per_query = _err_reference(scores, y, qo, k=k)
    elif f == "map":
        per_query = _ap_reference(scores, y, qo, k=k, empty_query_score=empty)
    elif f == "mrr":
        per_query = _rr_reference(scores, y, qo, k=k, empty_query_score=empty)
    else:
        per_query = _precision_reference(scores, y, qo, k=k)
    return float(np.average(per_query, weights=weights))


# --- names ---


@pytest.mark.parametrize(
    ("name", "canonical", "family", "k"),
    [
        ("ndcg@10", "ndcg@10", "ndcg", 10),
        ("NDCG@05", "ndcg@5", "ndcg", 5),
        (" ndcg ", "ndcg", "ndcg", 0),
        ("dcg@5", "dcg@5", "dcg", 5),
        ("err", "err", "err", 0),
        ("err@10", "err@10", "err", 10),
        ("map", "map", "map", 0),
        ("map@10", "map@10", "map", 10),
        ("mrr", "mrr", "mrr", 0),
        ("mrr@3", "mrr@3", "mrr", 3),
        ("p@10", "p@10", "p", 10),
        ("pair_precision", "pair_precision", "pair_precision", 0),
        ("pair_precision@100%", "pair_precision", "pair_precision", 0),
        ("pair_precision@10%", "pair_precision@10%", "pair_precision", 0),
        ("pair_precision@2.50%", "pair_precision@2.5%", "pair_precision", 0),
    ],
)
def test_names_parse_to_canonical_form(name, canonical, family, k):
    metric = get_metric(name)
    assert isinstance(metric, Metric)
    assert (metric.name, metric.family, metric.k) == (canonical, family, k)
    assert metric.higher_is_better is True


def test_pair_precision_percent_is_exact():
    assert get_metric("pair_precision@2.5%").percent == Fraction(5, 2)
    assert get_metric("pair_precision").percent == 100


@pytest.mark.parametrize(
    "name",
    [
        "foo",
        "ndcg@",
        "ndcg@0",
        "ndcg@-1",
        "ndcg@1.5",
        "ndcg10",
        "p",
        "p@0",
        "pair_precision@10",
        "pair_precision@0%",
        "pair_precision@101%",
        "precision@10",
        "",
        "map@k",
    ],
)
def test_bad_names_list_the_valid_forms(name):
    with pytest.raises(ValueError, match="valid forms are") as info:
        get_metric(name)
    for form in (
        "'ndcg@K'",
        "'err'",
        "'map@K'",
        "'mrr'",
        "'p@K'",
        "'pair_precision@K%'",
    ):
        assert form in str(info.value)


def test_non_string_name():
    with pytest.raises(ValueError, match="valid forms"):
        get_metric(10)  # type: ignore[arg-type]


def test_bad_options():
    with pytest.raises(ValueError, match="gain='cubic'"):
        get_metric("ndcg", gain="cubic")
    with pytest.raises(ValueError, match="empty_query_score"):
        get_metric("ndcg", empty_query_score=float("nan"))
    with pytest.raises(ValueError, match="relevance_threshold"):
        get_metric("map", relevance_threshold="high")
    with pytest.raises(ValueError, match="max_grade"):
        get_metric("err", max_grade=float("inf"))


def test_parse_metric_list():
    assert parse_metric_list("ndcg@1,ndcg@3,err") == ["ndcg@1", "ndcg@3", "err"]
    assert parse_metric_list(" NDCG@1 , map,ndcg@1 ") == ["ndcg@1", "map"]
    assert parse_metric_list(["p@5", "pair_precision@10%"]) == [
        "p@5",
        "pair_precision@10%",
    ]
    with pytest.raises(ValueError, match="empty metric name"):
        parse_metric_list("ndcg@1,,err")
    with pytest.raises(ValueError, match="no metric"):
        parse_metric_list("  ")
    with pytest.raises(ValueError, match="valid forms"):
        parse_metric_list("ndcg@1,bleu")


def test_metric_forms_are_all_accepted():
    for form in METRIC_FORMS:
        get_metric(form.replace("K", "7"))


# --- values: every metric against the references ---


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("score_levels", [None, 4])
def test_every_metric_matches_reference(random_ranking, name, seed, score_levels):
    scores, y, qo = random_ranking(seed, score_levels=score_levels)
    weights = np.random.default_rng(seed).random(len(qo) - 1)
    metric = get_metric(name)
    assert metric(scores, y, qo) == pytest.approx(reference_value(name, scores, y, qo), rel=1e-12)
    assert metric(scores, y, qo, query_weights=weights) == pytest.approx(
        reference_value(name, scores, y, qo, weights=weights), rel=1e-12
    )


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=8),
    data=st.data(),
    name=st.sampled_from([*ALL_NAMES, "ndcg@1", "err@2", "map@3", "p@1", "mrr@1"]),
)
def test_kernels_match_references_on_arbitrary_inputs(sizes, data, name):
    n = sum(sizes)
    qo = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    y = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), float)
    scores = np.array(
        data.draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), float
    )  # few values: many ties
    got = get_metric(name, empty_query_score=0.5)(scores, y, qo)
    assert got == pytest.approx(reference_value(name, scores, y, qo, empty=0.5), rel=1e-12)


# --- evaluate ---


def test_evaluate_returns_canonical_names_in_order(random_ranking):
    scores, y, qo = random_ranking(1)
    result = evaluate(scores, y, qo, ["NDCG@10", "err", "map@5", "pair_precision@100%"])
    assert list(result) == ["ndcg@10", "err", "map@5", "pair_precision"]
    assert result["ndcg@10"] == get_metric("ndcg@10")(scores, y, qo)
    assert evaluate(scores, y, qo) == {"ndcg@10": result["ndcg@10"]}
    as_text = evaluate(scores, y, qo, "ndcg@10,err")
    assert as_text == {"ndcg@10": result["ndcg@10"], "err": result["err"]}


def test_evaluate_passes_options_and_weights(random_ranking):
    scores, y, qo = random_ranking(2)
    w = np.random.default_rng(0).random(len(qo) - 1)
    result = evaluate(
        scores,
        y,
        qo,
        ["ndcg@5", "mrr"],
        query_weights=w,
        gain="linear",
        empty_query_score=0,
    )
    assert result["ndcg@5"] == get_metric("ndcg@5", gain="linear", empty_query_score=0)(
        scores, y, qo, w
    )
    per_query = get_metric("mrr", empty_query_score=0).per_query(scores, y, qo)
    assert result["mrr"] == pytest.approx(np.average(per_query, weights=w))
    # Metric objects keep their own options
    linear = get_metric("dcg@3", gain="linear")
    assert evaluate(scores, y, qo, [linear])["dcg@3"] == linear(scores, y, qo)


def test_empty_query_score_changes_only_normalised_metrics(random_ranking):
    scores, y, qo = random_ranking(3)
    for name in ("ndcg@10", "map", "mrr"):
        one = get_metric(name, empty_query_score=1)(scores, y, qo)
        zero = get_metric(name, empty_query_score=0)(scores, y, qo)
        assert one > zero
    for name in ("dcg@10", "err", "p@10"):
        assert get_metric(name, empty_query_score=1)(scores, y, qo) == get_metric(
            name, empty_query_score=0
        )(scores, y, qo)


# --- bind ---


@pytest.mark.parametrize("name", ALL_NAMES)
def test_bind_equals_unbound(random_ranking, name):
    scores, y, qo = random_ranking(4, score_levels=8)
    w = np.random.default_rng(4).random(len(qo) - 1)
    metric = get_metric(name)
    bound = metric.bind(y, qo)
    weighted = metric.bind(y, qo, query_weights=w)
    assert isinstance(bound, BoundMetric)
    assert bound.name == metric.name
    assert bound.higher_is_better
    rng = np.random.default_rng(0)
    for _ in range(3):
        s = scores + rng.integers(0, 4, size=scores.shape)
        assert bound(s) == metric(s, y, qo)
        assert weighted(s) == metric(s, y, qo, w)
        np.testing.assert_array_equal(bound.per_query(s), metric.per_query(s, y, qo))


def test_bound_metric_accepts_float32_and_lists(random_ranking):
    scores, y, qo = random_ranking(6)
    bound = get_metric("ndcg@5").bind(list(y), list(qo))
    expected = get_metric("ndcg@5")(scores.astype(np.float32).astype(float), y, qo)
    assert bound(scores.astype(np.float32)) == expected
    assert bound(list(scores)) == get_metric("ndcg@5")(scores, y, qo)


@pytest.mark.parametrize("name", ["ndcg@10", "err", "map", "pair_precision@10%"])
def test_results_do_not_depend_on_thread_count(random_ranking, name):
    scores, y, qo = random_ranking(12, n_queries=300, score_levels=5)
    w = np.random.default_rng(1).random(len(qo) - 1)
    bound = get_metric(name).bind(y, qo, query_weights=w)
    with threads(1):
        one = bound(scores)
    with threads(2):
        two = bound(scores)
    assert one == two


# --- validation ---


def test_label_validation():
    qo = np.array([0, 3])
    s = np.zeros(3)
    with pytest.raises(ValueError, match=r"y\[1\]=-1 is negative"):
        get_metric("ndcg")(s, np.array([0.0, -1.0, 2.0]), qo)
    with pytest.raises(ValueError, match="not finite"):
        get_metric("map")(s, np.array([0.0, np.nan, 2.0]), qo)
    with pytest.raises(ValueError, match="gain='linear'"):
        get_metric("ndcg@10")(s, np.array([0.0, 32.0, 2.0]), qo)
    assert get_metric("ndcg@10")(s, np.array([0.0, 31.0, 2.0]), qo) > 0
    assert get_metric("ndcg@10", gain="linear")(s, np.array([0.0, 32.0, 2.0]), qo) > 0
    with pytest.raises(ValueError, match="gain='linear'"):
        get_metric("dcg@10").bind(np.array([40.0]), np.array([0, 1]))


def test_score_validation():
    y = np.array([0.0, 1.0, 2.0])
    qo = np.array([0, 3])
    bound = get_metric("ndcg@10").bind(y, qo)
    with pytest.raises(ValueError, match=r"scores\[1\] is NaN"):
        bound(np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match="scores has length 2 but y has length 3"):
        bound(np.zeros(2))
    with pytest.raises(ValueError, match="scores has length 4 but y has length 3"):
        get_metric("err")(np.zeros(4), y, qo)
    # infinities are ordinary (extreme) scores; +inf and -inf together are not NaN
    assert bound(np.array([-np.inf, 0.0, np.inf])) == 1.0


def test_query_offsets_validation():
    y = np.zeros(4)
    s = np.zeros(4)
    metric = get_metric("ndcg")
    with pytest.raises(ValueError, match=r"query_offsets.* y has length 4"):
        metric(s, y, np.array([0, 3]))
    with pytest.raises(ValueError, match=r"query_offsets\[0\]=1 must be 0"):
        metric(s, y, np.array([1, 4]))
    with pytest.raises(ValueError, match="non-decreasing"):
        metric(s, y, np.array([0, 3, 2, 4]))
    with pytest.raises(ValueError, match="n_queries"):
        metric(s, y, np.array([4]))
    with pytest.raises(ValueError, match="integers"):
        metric(s, y, np.array([0.0, 2.5, 4.0]))
    assert metric(s, y, np.array([0.0, 2.0, 4.0])) == 1.0  # whole floats are fine


def test_query_weights_validation(random_ranking):
    scores, y, qo = random_ranking(0, n_queries=5)
    metric = get_metric("ndcg@10")
    with pytest.raises(ValueError, match="there are 5 queries"):
        metric(scores, y, qo, np.ones(4))
    with pytest.raises(ValueError, match=r"query_weights\[2\]=-1.0"):
        metric(scores, y, qo, np.array([1.0, 1.0, -1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="all zero"):
        metric(scores, y, qo, np.zeros(5))
    # a weight of zero removes a query from the mean
    w = np.array([0.0, 1.0, 1.0, 1.0, 1.0])
    per_query = metric.per_query(scores, y, qo)
    assert metric(scores, y, qo, w) == pytest.approx(per_query[1:].mean())


@pytest.mark.parametrize(
    "name", ["ndcg@100000000000000000000", "err@9223372036854775808", "p@4611686018427387905"]
)
def test_a_cutoff_beyond_int64_is_refused_by_name(name) -> None:
    """K beyond int64 reached the kernels: a Numba typing error or 'OverflowError: int
    too big to convert' (a traceback in `ltrboost train --metric` and `eval`)."""
    with pytest.raises(ValueError, match=r"K must be at most 4611686018427387904"):
        get_metric(name)


def test_cli_metric_cutoff_beyond_int64_is_one_line(tmp_path, capsys) -> None:
    from ltrboost.cli import main
    from ltrboost.datasets import make_ranking
    from ltrboost.io import dump_svmlight

    X, y, qid = make_ranking(n_queries=4, random_state=0)[:3]
    data = tmp_path / "d.txt"
    dump_svmlight(data, X, y, qid)
    argv = ["train", str(data), "--valid", str(data), "--n-estimators", "1", "-q"]
    rc = main([*argv, "-o", str(tmp_path / "m.json"), "--metric", "ndcg@100000000000000000000"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("ltrboost: error:")
    assert len(err.strip().splitlines()) == 1

"""Objectives on adversarial parameters and data: a clear error naming the problem, or
a sensible model; never a Numba typing error, an integer overflow or a traceback.

* ``truncation_level`` above every query's length means every pair, however large
  (a value beyond int64 crashed in the kernels).
* ``pairs_per_sample`` (``pair_method="sampled"``) and ``permutations`` (``yetirank``)
  size a query's pair buffer: a value whose buffer exceeds the query pair limit
  (``$LTRBOOST_MAX_QUERY_PAIRS``) is refused naming the parameter and the query,
  instead of an overflow, a negative array size or a 576 GiB allocation.
"""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import train
from ltrboost.cli import main
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.io import dump_svmlight

X, Y, QID = make_ranking(n_queries=6, docs_per_query=(4, 10), n_features=4, random_state=1)[:3]
BASE = dict(n_estimators=2, min_samples_leaf=2, max_leaf_nodes=4)


def _ds(qid=QID):
    return make_dataset(X, Y, qid=qid)


def _scores(params, data=None):
    return train(dict(BASE, **params), data or _ds()).predict(X)


@pytest.mark.parametrize("objective", ["lambdamart", "ranknet", "rankboost"])
@pytest.mark.parametrize("level", [2**31, 2**63, 10**20])
def test_a_huge_truncation_level_means_every_pair(objective, level) -> None:
    topk = dict(objective=objective, pair_method="topk")  # ranknet's and rankboost's: "all"
    every = _scores(dict(topk, truncation_level=0))
    np.testing.assert_array_equal(_scores(dict(topk, truncation_level=level)), every)


SAMPLED = dict(pair_method="sampled")


@pytest.mark.parametrize(
    ("params", "name"),
    [
        (dict(SAMPLED, objective="lambdamart", pairs_per_sample=2**31), "pairs_per_sample"),
        (dict(SAMPLED, objective="ranknet", pairs_per_sample=2**62), "pairs_per_sample"),
        (dict(SAMPLED, objective="lambdamart", pairs_per_sample=10**20), "pairs_per_sample"),
        (dict(objective="yetirank", permutations=2**31), "permutations"),
        (dict(objective="yetirank", permutations=2**63 - 1), "permutations"),
        (dict(objective="yetirank", permutations=10**20), "permutations"),
    ],
)
def test_a_pair_count_parameter_too_large_for_memory_is_refused_naming_it(params, name) -> None:
    with pytest.raises(ValueError, match=rf"{name}=\d+.*LTRBOOST_MAX_QUERY_PAIRS"):
        train(dict(BASE, **params), _ds())


def test_one_document_queries_take_any_pair_count() -> None:
    """No query has a pair: nothing to hold, nothing refused (and nothing overflows)."""
    single = make_dataset(X, Y, qid=np.arange(len(Y)))
    for params in (
        dict(objective="yetirank", permutations=10**20),
        dict(objective="lambdamart", pair_method="sampled", pairs_per_sample=10**20),
    ):
        assert np.isfinite(train(dict(BASE, **params), single).predict(X)).all()


def test_pair_count_limits_follow_the_query_pair_limit(monkeypatch) -> None:
    """The limit is ``$LTRBOOST_MAX_QUERY_PAIRS``: the longest query (10 documents)
    holds 10 sampled pairs per partner, 9 YetiRank pairs per permutation."""
    longest = int(np.max(np.unique(QID, return_counts=True)[1]))
    monkeypatch.setenv("LTRBOOST_MAX_QUERY_PAIRS", str(3 * longest))
    sampled = dict(objective="lambdamart", pair_method="sampled")
    train(dict(BASE, **sampled, pairs_per_sample=3), _ds())
    with pytest.raises(ValueError, match=r"pairs_per_sample=4 .* over the limit of"):
        train(dict(BASE, **sampled, pairs_per_sample=4), _ds())
    monkeypatch.setenv("LTRBOOST_MAX_QUERY_PAIRS", str(3 * (longest - 1)))
    train(dict(BASE, objective="yetirank", permutations=3), _ds())
    with pytest.raises(ValueError, match=r"permutations=4 .* over the limit of"):
        train(dict(BASE, objective="yetirank", permutations=4), _ds())


@pytest.mark.parametrize(
    "flags",
    [
        ["--truncation-level", "100000000000000000000"],
        ["--pair-method", "sampled", "--pairs-per-sample", "100000000000000000000"],
        ["--objective", "yetirank", "--permutations", "100000000000000000000"],
    ],
)
def test_cli_huge_pair_parameters_are_one_line(tmp_path, capsys, flags) -> None:
    data = tmp_path / "train.txt"
    dump_svmlight(data, X, Y, QID)
    out = tmp_path / "m.json"
    argv = ["train", str(data), "--n-estimators", "1", "-o", str(out), "--quiet", *flags]
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    if flags[0] == "--truncation-level":
        assert rc in (0, None), err
        assert out.exists()
        return
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ltrboost: error:")
    assert flags[-2] in lines[0]  # the flag, not the Python name
    assert not out.exists()


def test_a_negative_truncation_level_names_the_parameters_own_meaning() -> None:
    """Through ``train``/``Ranker``/the CLI, None is the objective's default (30) and 0
    is every pair; the objective's own "None for no truncation" misled there."""
    with pytest.raises(ValueError, match=r"truncation_level=-1 must be >= 0 \(0: every pair\)"):
        train(dict(BASE, truncation_level=-1), _ds())


@pytest.mark.parametrize(
    "params",
    [
        dict(objective="lambdamart", split_criterion="newton"),
        dict(objective="ranknet", split_criterion="se"),
        dict(objective="mart", split_criterion="ole"),  # pointwise: OLE is Newton
    ],
)
def test_ole_top_features_without_pairwise_ole_warns_that_it_is_ignored(params) -> None:
    with pytest.warns(UserWarning, match=r"ole_top_features=2 .* ignored"):
        train(dict(BASE, ole_top_features=2, **params), _ds())


def test_ole_top_features_with_pairwise_ole_does_not_warn(recwarn) -> None:
    train(dict(BASE, objective="ranknet", split_criterion="ole", ole_top_features=2), _ds())
    assert not [w for w in recwarn if "ole_top_features" in str(w.message)]


def test_positions_name_the_value_as_given_and_huge_ones_are_too_large() -> None:
    """A position beyond int64 (1e20, or a uint64 2**63) wrapped to a negative int64
    and was refused as '< 1' with the wrapped value; it is now 'too large', as in a
    position file.  NaN was shown as np.float64(nan)."""
    from ltrboost.dataset import LTRInputError, check_positions

    with pytest.raises(LTRInputError, match=r"^row 1: position\[1\]=nan is not an integer$"):
        check_positions(np.array([1.0, np.nan]), 2)
    with pytest.raises(LTRInputError, match=r"^row 1: position\[1\]=1.5 is not an integer$"):
        check_positions(np.array([1.0, 1.5]), 2)
    for huge, shown in (
        (np.array([1.0, 1e20]), "1e\\+20"),
        (np.array([1, 2**63], dtype=np.uint64), "9223372036854775808"),
    ):
        with pytest.raises(LTRInputError, match=rf"^row 1: position\[1\]={shown} is too large"):
            check_positions(huge, 2)
    deepest = check_positions(np.array([1.0, 2.0**62]), 2)
    assert deepest[1] == 2**62
    for dtype in (np.int8, np.uint8, np.uint64, np.float16, object):
        np.testing.assert_array_equal(check_positions(np.array([1, 2], dtype=dtype), 2), [1, 2])


@pytest.mark.parametrize("iteration", [1.5, "1", True])
def test_iteration_arguments_must_be_integers(iteration) -> None:
    """int() read 1.5 as 1, "1" as 1 and True as 1 in predict, feature_importance and
    dump_text."""
    booster = train(BASE, _ds())
    with pytest.raises(ValueError, match="iteration="):
        booster.predict(X, iteration=iteration)
    with pytest.raises(ValueError, match="iteration="):
        booster.feature_importance(iteration=iteration)
    with pytest.raises(ValueError, match="iteration="):
        booster.dump_text(iteration=iteration)
    np.testing.assert_array_equal(
        booster.predict(X, iteration=np.int64(1)), booster.predict(X, iteration=1)
    )


@pytest.mark.parametrize(
    ("objective", "name", "value"),
    [
        ("lambdamart", "relevance_threshold", None),
        ("lambdamart", "relevance_threshold", [1]),
        ("lambdamart", "relevance_threshold", 1j),
        ("lambdamart", "relevance_threshold", True),
        ("logistic_rank", "positive_threshold", [1]),
        ("logistic_rank", "positive_threshold", 1j),
        ("logistic_rank", "positive_threshold", "2"),
        ("mcrank", "max_label", float("inf")),
        ("mcrank", "max_label", [1]),
        ("mcrank", "max_label", 1j),
        ("mcrank", "max_label", "2"),
    ],
)
def test_objective_constructors_refuse_wrong_types_naming_the_parameter(
    objective, name, value
) -> None:
    """The objectives' own constructors (the lower-level API, and what a model file's
    objective_params are checked with) raised TypeError/OverflowError from float() or
    int(), or took a string or bool as a number."""
    from ltrboost.objectives.registry import get_objective

    with pytest.raises(ValueError, match=name):
        get_objective(objective, **{name: value})


@pytest.mark.parametrize(
    ("objective", "name", "value"),
    [
        ("ranknet", "sigma", True),
        ("lambdamart", "sigma", np.True_),
        ("mcrank", "friedman_factor", "1"),
        ("mcrank", "friedman_factor", float("nan")),
        ("mcrank", "friedman_factor", [1]),
    ],
)
def test_objective_constructors_refuse_bools_for_numbers_and_numbers_for_bools(
    objective, name, value
) -> None:
    """sigma=True was taken as 1.0; friedman_factor went through bool(), so "1", NaN
    and [1] all meant True."""
    from ltrboost.objectives.registry import get_objective

    with pytest.raises(ValueError, match=name):
        get_objective(objective, **{name: value})


def test_a_numpy_integer_sigma_is_a_number() -> None:
    """README: NumPy integers are fine; sigma=np.int64(2) was refused by the pairwise
    objectives ('should be a positive finite number')."""
    a = _scores(dict(objective="ranknet", sigma=np.int64(2)))
    np.testing.assert_array_equal(a, _scores(dict(objective="ranknet", sigma=2.0)))


def test_a_numpy_integer_decay_is_a_number() -> None:
    """yetirank refused decay=np.int64(1) ('should be a number in (0, 1]')."""
    a = _scores(dict(objective="yetirank", decay=np.int64(1)))
    np.testing.assert_array_equal(a, _scores(dict(objective="yetirank", decay=1.0)))

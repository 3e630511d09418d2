"""Parameters and data are checked up front; training stops at the first NaN/inf (#18).

* Integer parameters must be integers (``1.5``, ``True``, ``2.0`` refused), real ones
  finite real numbers (``inf``, NaN, complex refused).
* ``n_threads``: None, 0 or negative = all cores, above the cores = capped; the trees
  do not depend on it.
* Complex ``X``, ``y`` or weights are refused (a float conversion would drop the
  imaginary part); weights beyond float32 are refused.
* Settings that overflow (``learning_rate=1e308``, ``sigma=1e308``, labels ~1e300,
  weights ~1e38) stop in round 1 with ``NonFiniteTrainingError`` naming the round and
  the magnitudes involved, in Python and in the CLI (one line, status 2, no file).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ltrboost import train
from ltrboost._checks import NonFiniteTrainingError
from ltrboost.cli import main
from ltrboost.dataset import LTRInputError, make_dataset
from ltrboost.datasets import make_ranking

X, Y, QID = make_ranking(n_queries=8, docs_per_query=(4, 10), n_features=4, random_state=1)[:3]
BASE = dict(n_estimators=3, min_samples_leaf=2, max_leaf_nodes=4)


def _ds(X=X, y=Y, w=None):
    return make_dataset(X, y, qid=QID, sample_weight=w)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("n_estimators", 1.5),
        ("n_estimators", True),
        ("n_estimators", 2.0),
        ("n_estimators", "3"),
        ("max_leaf_nodes", np.float64(4)),
        ("max_depth", 2.5),
        ("min_samples_leaf", False),
        ("n_threads", 1.0),
        ("n_threads", True),
        ("random_state", 1.5),  # None is the default seed 0 (as Ranker)
        ("truncation_level", 3.0),
        ("learning_rate", 1j),
        ("learning_rate", "0.1"),
        ("lambda_normalization", "yes"),
        ("n_estimators", None),
    ],
)
def test_wrong_parameter_types_are_refused(name, value) -> None:
    with pytest.raises(ValueError, match=name):
        train(dict(BASE, **{name: value}), _ds())


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("learning_rate", float("inf")),
        ("learning_rate", float("nan")),
        ("l2_regularization", float("inf")),
        ("min_sum_hessian_in_leaf", float("inf")),
        ("subsample", float("nan")),
        ("sigma", float("inf")),
        ("tau", float("inf")),
        ("preference_weight", float("nan")),
    ],
)
def test_non_finite_parameters_are_refused_up_front(name, value) -> None:
    obj = {"sigma": "ranknet", "tau": "gbrank", "preference_weight": "qbrank"}
    params = dict(BASE, objective=obj.get(name, "lambdamart"), **{name: value})
    with pytest.raises(ValueError, match=f"{name}=.*(finite|must be)"):
        train(params, _ds())


def test_integer_like_numpy_parameters_are_accepted() -> None:
    train(dict(BASE, n_estimators=np.int64(2), learning_rate=np.float32(0.1)), _ds())


@pytest.mark.parametrize("n_threads", [0, -1, 1000])
def test_n_threads_zero_negative_and_huge_mean_all_cores(n_threads) -> None:
    ref = train(dict(BASE, n_threads=1), _ds())
    got = train(dict(BASE, n_threads=n_threads), _ds())
    for a, b in zip(ref.trees, got.trees, strict=True):
        assert a.tobytes() == b.tobytes()
    assert ref.predict(X).tobytes() == got.predict(X, n_threads=n_threads).tobytes()


def test_complex_arrays_are_refused() -> None:
    with pytest.raises(LTRInputError, match="X is complex"):
        _ds(X=X + 0j)
    with pytest.raises(LTRInputError, match="y is complex"):
        _ds(y=Y + 1j)
    with pytest.raises(LTRInputError, match="sample_weight is complex"):
        _ds(w=np.ones(len(Y), dtype=np.complex64))
    with pytest.raises(LTRInputError, match="complex"):
        _ds(X=X.astype(object) + 1j)
    booster = train(BASE, _ds())
    with pytest.raises(LTRInputError, match="X is complex"):
        booster.predict(X + 0j)


def test_complex_sparse_and_pandas_are_refused() -> None:
    sparse = pytest.importorskip("scipy.sparse")
    pd = pytest.importorskip("pandas")
    with pytest.raises(LTRInputError, match="X is complex"):
        _ds(X=sparse.csr_matrix(X + 1j))
    df = pd.DataFrame(X, columns=list("abcd"))
    df["c"] = df["c"] + 1j
    with pytest.raises(LTRInputError, match="column 'c' is complex"):
        _ds(X=df)


def test_weights_beyond_float32_are_refused() -> None:
    w = np.ones(len(Y))
    w[3] = 1e39
    with pytest.raises(LTRInputError, match=r"sample_weight\[3\]=1e\+39.*float32"):
        _ds(w=w)
    w[3] = 3e38  # representable: accepted by the dataset (training may overflow)
    assert np.isfinite(_ds(w=w).weights).all()


@pytest.mark.parametrize(
    ("params", "data", "cause"),
    [
        (dict(learning_rate=1e308), {}, "learning_rate=1e\\+308"),
        (dict(objective="ranknet", sigma=1e308), {}, "sigma=1e\\+308"),
        (dict(objective="mart"), dict(y=Y * 1e300 + 1e300), "labels up to"),
        (
            dict(objective="mart"),
            dict(w=np.full(len(Y), 3e38)),
            "weights up to 3e\\+38",
        ),
        (dict(objective="mcrank", learning_rate=1e308), {}, "learning_rate=1e\\+308"),
    ],
)
def test_non_finite_training_stops_at_the_first_round(params, data, cause) -> None:
    rounds = []
    with pytest.raises(NonFiniteTrainingError, match=f"round 1: .*{cause}"):
        train(
            dict(BASE, **params),
            _ds(**data),
            callbacks=[lambda env: rounds.append(env.iteration)],
        )
    assert rounds == []


@pytest.mark.parametrize("criterion", ["newton", "se", "ole"])
def test_overflowing_hessians_stop_training_though_the_leaves_are_finite(criterion) -> None:
    """RankNet with sigma=1e20: the gradients (~sigma) fit float32, the hessians
    (~sigma^2) overflow to inf, and a Newton leaf -G/inf is 0: every tree was a stump
    of value 0, a constant model, silently (the check looked at the hessians only
    when a leaf value was not finite)."""
    with pytest.raises(NonFiniteTrainingError, match=r"round 1: the hessians .*sigma=1e\+20"):
        train(dict(BASE, objective="ranknet", sigma=1e20, split_criterion=criterion), _ds())


def test_non_finite_training_cli_one_line_no_file(tmp_path: Path, capsys) -> None:
    from ltrboost.io.letor import dump_svmlight

    data = tmp_path / "train.txt"
    dump_svmlight(data, X, Y, qid=QID)
    out = tmp_path / "m.json"
    code = main(
        [
            "train",
            str(data),
            "-q",
            "-o",
            str(out),
            "--n-estimators",
            "3",
            "--learning-rate",
            "1e308",
            "--min-samples-leaf",
            "2",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("ltrboost: error: round 1: the leaf values are not finite")
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_overflow_in_a_later_round_stops_there() -> None:
    """RankBoost with learning_rate=1e308: round 1's leaves are finite (|value| < 1),
    round 2 overflows; the error names round 2 and one round was completed.  (Round 2's
    gradients at pair margins ~1e307 already overflow float32 since RankBoost's loss
    grows quadratically past its exponent clip, tests/test_mathfix12_adversarial12.py;
    with the old flat clip the scores overflowed first.)"""
    rounds = []
    with pytest.raises(NonFiniteTrainingError, match="round 2: the gradients are not finite"):
        train(
            dict(BASE, objective="rankboost", learning_rate=1e308),
            _ds(),
            callbacks=[lambda env: rounds.append(env.iteration)],
        )
    assert rounds == [0]


def test_predict_n_threads_type_is_checked() -> None:
    booster = train(BASE, _ds())
    for bad in (1.5, True, "2"):
        with pytest.raises(ValueError, match="n_threads"):
            booster.predict(X, n_threads=bad)
    ref = booster.predict(X, n_threads=1)
    for ok in (None, 0, -1, 1000, np.int64(2)):
        assert booster.predict(X, n_threads=ok).tobytes() == ref.tobytes()


def test_an_empty_validation_set_is_named() -> None:
    """An empty eval set failed inside the metric with 'query_offsets must be 1-D with
    n_queries + 1 >= 2 entries, got shape (1,)', naming neither the set nor the problem."""
    empty = make_dataset(X[:0], Y[:0], qid=QID[:0])
    with pytest.raises(ValueError, match=r"^validation set 'v' is empty$"):
        train(BASE, _ds(), [("v", empty)])


@pytest.mark.parametrize(
    ("value", "shown"),
    [(float("nan"), "nan"), (float("inf"), "inf"), ("abc", "'abc'"), (None, "None")],
)
def test_a_custom_metric_must_return_a_finite_number(tmp_path: Path, value, shown) -> None:
    """A NaN metric value silently froze early stopping at its round and made
    ``save_model`` fail after training ('Out of range float values are not JSON
    compliant'); a string or None failed in ``float()`` naming neither the metric."""

    def my_metric(scores, labels, query_offsets):
        return value

    with pytest.raises(ValueError, match=rf"eval_metric 'my_metric' returned {shown}"):
        train(dict(BASE, eval_metric=my_metric), _ds(), [("v", _ds())])


def test_a_custom_metric_may_return_numpy_scalars() -> None:
    def half(scores, labels, query_offsets):
        return np.float32(0.5)

    booster = train(dict(BASE, eval_metric=half), _ds(), [("v", _ds())])
    assert booster.evals_result["v"]["half"] == [0.5] * BASE["n_estimators"]


def test_a_custom_metric_may_return_a_0d_array() -> None:
    def mean_score(scores, labels, query_offsets):
        return np.asarray(0.25)

    booster = train(dict(BASE, eval_metric=mean_score), _ds(), [("v", _ds())])
    assert booster.evals_result["v"]["mean_score"] == [0.25] * BASE["n_estimators"]


def test_group_sizes_that_overflow_int64_are_refused() -> None:
    """Four sizes near 2**62 summed to 2**64 + 10, which int64 wrapped to the 10 rows:
    accepted, with negative query offsets, and training crashed the process (a
    segmentation fault in the kernels).  A uint64 2**63 was shown wrapped, negative."""
    X10, y10 = X[:10], Y[:10]
    with pytest.raises(LTRInputError, match=r"^group\[0\]=4611686018427387904: more documents"):
        make_dataset(X10, y10, group=[2**62, 2**62, 2**62, 2**62 + 10])
    with pytest.raises(LTRInputError, match=r"^group\[0\]=9223372036854775808: more documents"):
        make_dataset(X10, y10, group=np.array([2**63, 5], dtype=np.uint64))
    with pytest.raises(LTRInputError, match=r"^group\[1\]=1e\+20: more documents"):
        make_dataset(X10, y10, group=[5.0, 1e20])


@pytest.mark.parametrize("group", [[2**64, 5], [5, "5"], [5, None], np.array(["5", "5"])])
def test_group_sizes_that_are_not_numbers_or_beyond_int64_are_input_errors(group) -> None:
    """Object or string sizes failed in np.isfinite with a TypeError."""
    with pytest.raises(LTRInputError, match=r"^group"):
        make_dataset(X[:10], Y[:10], group=group)


def test_qbrank_overflowing_pair_weight_is_refused_before_training() -> None:
    """QBRank's line search ran before the check and failed with 'delta holds
    non-finite values', naming neither the round nor the likely cause; then the
    gradients' check said 'round 1: the gradients are not finite'.  A pair weight
    that float32 gradients cannot hold is now refused with the data, naming it."""
    from ltrboost.sklearn import Ranker

    with pytest.raises(LTRInputError, match=r"pairs\.weight\[0\]=1e\+300 must be finite"):
        Ranker(objective="qbrank", **BASE).fit(X, Y, qid=QID, pairs=[[0, 1, 1e300]])


def test_a_validation_label_error_names_the_validation_set() -> None:
    """'row 0: label 40 is too large ...' did not say that the row is one of the
    validation set's, not of the training set."""
    bad = make_dataset(X, Y + 40, qid=QID + 100)  # queries of its own
    with pytest.raises(
        LTRInputError, match=r"^validation set 'v': row 0: label \d+ is too large"
    ) as e:
        train(BASE, _ds(), [("v", bad)])
    assert e.value.row == 0

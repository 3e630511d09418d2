"""Training at extreme settings: finite scores and a model that still ranks, or one error.

* A Newton step on hessians that vanished (saturated logistic / softmax scores under a
  huge ``learning_rate``) gives leaf values so large that adding them makes every
  training score of an output one number: the model then ranks every document alike.
  Training now stops there with :class:`NonFiniteTrainingError` naming the round and
  the likely cause, in Python and in the CLI (one line, the flags, no model file);
  before, it returned (and the CLI saved) the constant model without a word.  Since
  such a tree (a root alone, its hessian sum under ``min_sum_hessian_in_leaf``) gets
  value 0 (tests/test_vanish_adversarial7.py), the check is reached with
  ``min_sum_hessian_in_leaf=0`` and a round whose feature draw leaves no split.
* The pairwise objectives' gradients and hessians agree with finite differences of
  their loss at saturated scores (margins of hundreds to thousands, ``sigma=1e4``);
  RankBoost's past its exponent clip too (tests/test_mathfix12_adversarial12.py).
* The other adversarial settings of this pass end with finite scores (or one of the
  errors above): ``learning_rate`` 1e-12, ``sigma`` 1e-6 and 1e4, ``l2_regularization``
  0 and 1e12, ``min_sum_hessian_in_leaf`` 0 and 1e300, features mixing 1e300 and
  1e-300, duplicated rows with opposite labels, weights 1e30 and 1e-30.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from ltrboost import train
from ltrboost._checks import NonFiniteTrainingError
from ltrboost.cli import main
from ltrboost.dataset import make_dataset

sys.path.insert(0, str(Path(__file__).parent / "objectives"))
from test_lambdamart import _check_finite_differences
from test_lambdamart import make_data as make_lambdamart_data

OBJECTIVES = [
    "lambdamart",
    "ranknet",
    "rankboost",
    "mart",
    "logistic_rank",
    "mcrank",
    "gbrank",
    "qbrank",
    "yetirank",
]


def _data(seed=0, n_queries=20, docs=10, max_label=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * docs, 5))
    y = rng.integers(0, max_label + 1, size=n_queries * docs).astype(np.float64)
    return X, y, np.repeat(np.arange(n_queries), docs)


X, Y, QID = _data()
BASE = dict(min_samples_leaf=5)


def _train(params, X=X, y=Y, qid=QID, w=None):
    return train(dict(BASE, **params), make_dataset(X, y, qid=qid, sample_weight=w))


# --- a leaf value that wipes out the scores' differences ------------------------------


# one varying column and a constant one: colsample_bytree=0.5 draws one of them per
# round, and a round that draws the constant one grows a root alone
X_ONE = np.c_[X[:, 0], np.ones(X.shape[0])]
COLLAPSE = dict(min_sum_hessian_in_leaf=0.0, colsample_bytree=0.5)


def test_huge_learning_rate_that_collapses_the_scores_stops_training() -> None:
    # round 1 ranks; round 2's tree is a root alone whose Newton step divides by
    # hessians that underflowed at those saturated scores: a leaf of ~-7e43 (mcrank's
    # grade 4) makes every training score of that output one number. It returned a model predicting
    # one constant for every document, silently. (With min_sum_hessian_in_leaf at its
    # default such a root gets value 0: tests/test_vanish_adversarial7.py.)
    params = dict(objective="mcrank", learning_rate=1e3, n_estimators=5, random_state=1)
    with pytest.raises(NonFiniteTrainingError) as info:
        _train(dict(params, **COLLAPSE), X=X_ONE)
    msg = str(info.value)
    assert msg.startswith("round 2: ")
    assert "every training score of output 4 (of 5)" in msg
    assert "learning_rate=1000" in msg
    assert "l2_regularization" in msg


def test_collapse_check_leaves_sane_training_alone() -> None:
    # the same objectives at their defaults and with lr 1 train as before
    for objective in ("logistic_rank", "mcrank"):
        for lr in (0.1, 1.0):
            b = _train(dict(objective=objective, learning_rate=lr, n_estimators=20))
            p = b.predict(X)
            assert np.isfinite(p).all()
            assert np.unique(p).size > 10


def test_huge_learning_rate_collapse_cli_one_line_no_file(tmp_path: Path, capsys) -> None:
    from ltrboost.io.letor import dump_svmlight

    data = tmp_path / "train.txt"
    dump_svmlight(data, X_ONE, Y, qid=QID)
    out = tmp_path / "m.json"
    args = ["train", data, "-q", "-o", out, "--objective", "mcrank", "--random-state", "1"]
    args += ["--n-estimators", "5", "--learning-rate", "1000", "--min-samples-leaf", "5"]
    args += ["--min-sum-hessian-in-leaf", "0", "--colsample-bytree", "0.5"]
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    # after the colsample_bytree warning line: the error, one line
    errors = [
        line for line in err.strip().splitlines() if not line.startswith("ltrboost: warning:")
    ]
    assert len(errors) == 1, err
    assert errors[0].startswith("ltrboost: error: round 2: ")
    assert "--learning-rate=1000" in errors[0]
    assert "--l2-regularization" in errors[0]
    assert "learning_rate" not in err
    assert not out.exists()


@pytest.mark.parametrize("objective", ["logistic_rank", "mcrank"])
def test_huge_learning_rate_logistic_rank_still_ranks(objective) -> None:
    # was xfail: the Newton leaf -G/(H+l2) on vanished hessians (logistic_rank's
    # h = 4wc q(1-q) underflows to 0 in float32 once |2s| exceeds ~100 while
    # g = -2wc t q stays finite) made the root leaf ~G/1e-22 and collapsed the scores;
    # a root alone under min_sum_hessian_in_leaf now gets value 0, as in LightGBM
    with pytest.warns(UserWarning, match=r"^round 2: .*min_sum_hessian_in_leaf=0\.001"):
        b = _train(dict(objective=objective, learning_rate=1e3, n_estimators=5))
    assert np.unique(b.predict(X)).size > 10


# --- finite differences at saturated scores (extends tests/objectives' helpers) -------


@pytest.mark.parametrize("scale", [300.0, 1000.0])
@pytest.mark.parametrize(
    "params",
    [
        dict(objective="lambdamart", pair_method="all"),
        dict(objective="lambdamart", truncation_level=3),
        dict(objective="lambdamart", pair_method="all", lambda_metric="err"),
        dict(objective="lambdamart", pair_method="all", lambda_metric="map"),
        dict(objective="lambdamart", pair_method="all", sigma=1e4),
        dict(objective="ranknet"),
        dict(objective="ranknet", sigma=1e4),
        dict(objective="yetirank", random_state=1),
    ],
    ids=lambda p: "-".join(str(v) for v in p.values()),
)
def test_pairwise_gradients_numerically_at_saturated_scores(params, scale) -> None:
    # margins of hundreds to thousands: the sigmoid is saturated (rho(1-rho) underflows)
    from ltrboost.objectives.registry import get_objective

    data, s = make_lambdamart_data(1, ties=False)
    kwargs = {k: v for k, v in params.items() if k != "objective"}
    obj = get_objective(params["objective"], **kwargs)
    with np.errstate(all="raise"):  # no overflow / invalid on the way
        g, h = _check_finite_differences(obj, s * scale, data, iteration=1)
    assert np.isfinite(g).all()
    assert np.isfinite(h).all()
    assert np.abs(g).max() > 0


def test_rankboost_gradients_numerically_up_to_its_exponent_clip() -> None:
    # below EXP_CLIP = 50 the gradient is the loss's derivative even at e^45; above it
    # the loss is Huberised (tests/test_mathfix12_adversarial12.py checks that side)
    from ltrboost.objectives.pairwise import RankBoost

    data, s = make_lambdamart_data(1, ties=False)
    s = s / np.abs(s).max() * 22.0  # every pair's margin at most 44 < 50
    g, _h = _check_finite_differences(RankBoost(), s, data)
    assert np.abs(g).max() > 1e10  # e^22 and more: far from small


# --- the other settings of the pass: finite scores, no NumPy warning ------------------


def _ends_finite(objective, params, X=X, y=Y, qid=QID, w=None, rounds=20):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no bare NumPy warning
        try:
            b = _train(dict(objective=objective, n_estimators=rounds, **params), X, y, qid, w)
        except NonFiniteTrainingError as e:
            message = str(e)
        else:
            p = b.predict(X)
            assert np.isfinite(p).all()
            return p
    assert message.startswith("round ")
    return None


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize(
    "params",
    [
        dict(learning_rate=1e-12),
        dict(learning_rate=1e3),
        dict(learning_rate=1e6),
        dict(l2_regularization=0.0, min_sum_hessian_in_leaf=0.0),
        dict(l2_regularization=1e12),
        dict(min_sum_hessian_in_leaf=1e300),
    ],
    ids=lambda p: "-".join(f"{k}={v:g}" for k, v in p.items()),
)
def test_extreme_parameters_end_finite(objective, params) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # one-leaf / constant model notes
        _ends_finite(objective, params)


@pytest.mark.parametrize("objective", ["lambdamart", "ranknet"])
@pytest.mark.parametrize("sigma", [1e-6, 1e4])
def test_extreme_sigma_end_finite(objective, sigma) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        p = _ends_finite(objective, dict(sigma=sigma, learning_rate=1.0), rounds=30)
    assert p is not None


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_saturating_scores_500_rounds(objective) -> None:
    # a feature that separates the grades: pairwise sigmoids saturate within rounds
    X2 = X.copy()
    X2[:, 0] = Y + 0.1 * np.random.default_rng(1).normal(size=Y.size)
    p = _ends_finite(objective, dict(learning_rate=1.0), X=X2, rounds=500)
    assert p is not None
    # the model ranks by the separating feature (logistic_rank's two classes: 0.86)
    assert np.corrcoef(p, Y)[0, 1] > 0.8


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_huge_and_tiny_values_in_one_column(objective) -> None:
    X2 = X.copy()
    X2[::2, 0], X2[1::2, 0], X2[::3, 0], X2[::5, 0] = 1e300, 1e-300, -1e300, -1e-300
    X2[:, 1] = np.where(Y >= 2, 1e300, 1e-300)  # 1e300 vs 1e-300 separates the grades
    p = _ends_finite(objective, {}, X=X2)
    assert p is not None


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_duplicated_rows_with_opposite_labels(objective) -> None:
    X2 = np.repeat(X, 2, axis=0)
    y2 = np.repeat(Y, 2)
    y2[1::2] = 4 - y2[1::2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        p = _ends_finite(objective, dict(learning_rate=1.0), X=X2, y=y2, qid=np.repeat(QID, 2))
    assert p is not None


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("weight", [1e30, 1e-30])
def test_extreme_query_weights(objective, weight) -> None:
    w = np.where(QID % 2 == 0, weight, 1.0)
    p = _ends_finite(objective, {}, w=w)
    assert p is not None


def _saturating_logistic(scores, labels, query_offsets):
    """Binary logistic loss on y >= 2 (a custom objective, so that Dask takes it): its
    hessian vanishes at saturated scores while the gradient stays +-1 (kept at 1e-30,
    not 0, on grade 0: a hessian of 0 everywhere is an error of its own)."""
    t = np.where(labels >= 2, 1.0, -1.0)
    q = np.exp(-np.logaddexp(0.0, t * scores))  # sigmoid(-t s), the wrong-class mass
    return -t * q, q * (1.0 - q) + np.where(labels == 0, 1e-30, 0.0)


def test_huge_learning_rate_collapse_stops_dask_training_as_local() -> None:
    # the shards' score ranges are merged on the driver: the same round, the same error
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    from ltrboost import dask as ldask

    params = dict(BASE, objective=_saturating_logistic, learning_rate=100.0, n_estimators=5)
    params.update(COLLAPSE, random_state=1)
    with pytest.raises(NonFiniteTrainingError, match=r"^round 3: the tree made every") as local:
        _train(params, X=X_ONE)
    chunks = (100, 100)  # two partitions of 10 whole queries each
    data = ldask.DaskData(
        da.from_array(X_ONE, chunks=(chunks, X_ONE.shape[1])),
        da.from_array(Y, chunks=(chunks,)),
        da.from_array(QID, chunks=(chunks,)),
    )
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    try:
        with pytest.raises(NonFiniteTrainingError) as dist:
            ldask.train(client, params, data)
    finally:
        client.close()
        cluster.close()
    # the same message but the labels (the driver holds none)
    assert str(dist.value).split("(learning_rate")[0] == str(local.value).split("(learning_rate")[0]

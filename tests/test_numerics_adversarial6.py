"""Training at extreme settings: finite scores and a model that still ranks, or one error.

* A Newton step on hessians that vanished (saturated logistic / softmax scores under a
  huge ``learning_rate``) gives leaf values so large that adding them makes every
  training score of an output one number: the model then ranks every document alike.
  Training now stops there with :class:`NonFiniteTrainingError` naming the round and
  the likely cause, in Python and in the CLI (one line, the flags, no model file);
  before, it returned (and the CLI saved) the constant model without a word.
* The pairwise objectives' gradients and hessians agree with finite differences of
  their loss at saturated scores (margins of hundreds to thousands, ``sigma=1e4``);
  RankBoost's clipped exponent is the documented exception.
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


@pytest.mark.parametrize("objective", ["logistic_rank", "mcrank"])
def test_huge_learning_rate_that_collapses_the_scores_stops_training(objective) -> None:
    # round 1 ranks (scores -1921..676); round 2's Newton step divides by hessians that
    # underflowed at those saturated scores: a leaf of ~5e26 (logistic_rank) or ~-2e33
    # (mcrank's grade 0) makes every training score one number. It returned a model
    # predicting one constant for every document, silently.
    with pytest.raises(NonFiniteTrainingError) as info:
        _train(dict(objective=objective, learning_rate=1e3, n_estimators=5))
    msg = str(info.value)
    assert msg.startswith("round 2: ")
    assert "every training score" in msg
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
    dump_svmlight(data, X, Y, qid=QID)
    out = tmp_path / "m.json"
    args = ["train", data, "-q", "-o", out, "--objective", "logistic_rank"]
    args += ["--n-estimators", "5", "--learning-rate", "1000", "--min-samples-leaf", "5"]
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("ltrboost: error: round 2: ")
    assert "--learning-rate=1000" in err
    assert "--l2-regularization" in err
    assert "learning_rate" not in err
    assert not out.exists()


@pytest.mark.xfail(
    strict=True,
    reason="Newton leaf -G/(H+l2) on vanished hessians: logistic_rank's h = 4wc q(1-q) "
    "underflows to 0 in float32 (the hessians' dtype) once |2s| exceeds ~100 while "
    "g = -2wc t q stays finite, so the root leaf is ~G/1e-40; needs a bounded step "
    "(max_delta_step, or no one-leaf tree whose hessian sum is under "
    "min_sum_hessian_in_leaf, as LightGBM) -- a maths change",
)
def test_huge_learning_rate_logistic_rank_still_ranks() -> None:
    b = _train(dict(objective="logistic_rank", learning_rate=1e3, n_estimators=5))
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
    # below EXP_CLIP = 50 the gradient is the loss's derivative even at e^45; above
    # it the loss is constant and the gradient stays exp(50) (documented overflow guard)
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
    with pytest.raises(NonFiniteTrainingError, match=r"^round 4: the tree made every") as local:
        _train(params)
    chunks = (100, 100)  # two partitions of 10 whole queries each
    data = ldask.DaskData(
        da.from_array(X, chunks=(chunks, X.shape[1])),
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

"""Exports evaluated by their real consumers, twelfth pass: models the earlier passes
did not build.

Trained with this stop's options (``quantized_gradients=4``, ``random_strength=1``,
``split_criterion="ole"`` with ``ole_top_features=3``), one-leaf trees between trees
that split (continued training with ``init_model`` from one-leaf rounds), a column
that is missing everywhere in training but present when predicting (the last
column, so no split names it and the model's feature count must still carry it),
training values at float32 rounding boundaries (0.1 and 0.1 + 1e-9, 16777216 to
16777218, which float32 cannot tell apart), +-0.0 and float64 subnormals, and a
learning rate of 1e-12 (leaf values of about 1e-12 after an initial score near 1).

Each model goes through ``check_every_consumer`` of ``test_advexport6_adversarial4``:
LightGBM, XGBoost and onnxruntime themselves, and the evaluators of the OpenSearch /
ES LTR plugin, Vespa, Solr and RankLib, tree by tree, on rows at, just below and just
above every threshold (float64 and float32 neighbours), NaN, +-0.0 and the other
special values.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from ltrboost import make_dataset, train
from ltrboost.export import export_bytes

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import test_advexport6_adversarial4 as adv6  # noqa: E402

F32 = np.float32
N_Q, DOCS = 14, 12
BOUNDARY = [0.1, 0.1 + 1e-9, 0.1 - 1e-9, 16777216.0, 16777217.0, 16777218.0, 16777219.0]
SIGNED_ZERO = [0.0, -0.0, 5e-324, -5e-324, 1e-320, -1e-320, 1.0]


def data(seed: int, nan: bool, dtype=np.float64):
    """adv6's adversarial columns, then: values at float32 rounding boundaries, +-0.0
    and float64 subnormals, and a last column that is NaN everywhere."""
    rng = np.random.default_rng(seed)
    n = N_Q * DOCS
    base = adv6.adversarial_X(rng, n, nan, dtype).astype(np.float64)
    extra = np.empty((n, 3))
    extra[:, 0] = np.asarray(BOUNDARY)[rng.integers(0, len(BOUNDARY), size=n)]
    extra[:, 1] = np.asarray(SIGNED_ZERO)[rng.integers(0, len(SIGNED_ZERO), size=n)]
    extra[:, 2] = np.nan
    X = np.hstack([base, extra])
    y = adv6.labels(rng, base)
    y += (extra[:, 0] > 0.1) + (extra[:, 0] > 16777216.5) + (extra[:, 1] > 0) * 1.0
    y = np.clip(y, 0, 4)
    if dtype == np.float32:
        X = X.astype(np.float32)
    return X, y, np.repeat(np.arange(N_Q), DOCS)


BASE = {
    "n_estimators": 5,
    "max_leaf_nodes": 7,
    "min_samples_leaf": 3,
    "learning_rate": 0.3,
}

CASES = {
    "quantized4": ("lambdamart", True, np.float64, {"quantized_gradients": 4}),
    "quantized4-mart-f32": ("mart", False, np.float32, {"quantized_gradients": 4}),
    "random_strength1": ("lambdamart", True, np.float64, {"random_strength": 1.0}),
    "random_strength1-gbrank": ("gbrank", False, np.float64, {"random_strength": 1.0}),
    "ole": ("lambdamart", True, np.float64, {"split_criterion": "ole"}),
    "ole-top3": (
        "lambdamart",
        False,
        np.float32,
        {"split_criterion": "ole", "ole_top_features": 3},
    ),
    # quantized_gradients does not combine with "ole" (refused), so not here
    "ole-top3-random_strength1": (
        "lambdamart",
        True,
        np.float64,
        {
            "split_criterion": "ole",
            "ole_top_features": 3,
            "random_strength": 1.0,
        },
    ),
    "quantized4-mcrank": ("mcrank", True, np.float64, {"quantized_gradients": 4}),
    "quantized4-yetirank-f32": ("yetirank", False, np.float32, {"quantized_gradients": 4}),
    "random_strength1-xendcg": ("xendcg", True, np.float64, {"random_strength": 1.0}),
    "ole-ranknet": ("ranknet", True, np.float64, {"split_criterion": "ole"}),
    "lr1e-12": ("lambdamart", True, np.float64, {"learning_rate": 1e-12}),
    "lr1e-12-mart": ("mart", False, np.float64, {"learning_rate": 1e-12}),
}


def fit(objective, nan, dtype, extra, seed=0, init_model=None):
    X, y, qid = data(seed, nan, dtype)
    params = {**BASE, "objective": objective, "random_state": seed, **extra}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one-leaf trees, an all-NaN column
        b = train(params, make_dataset(X, y, qid=qid), init_model=init_model)
    return b, np.asarray(X, dtype=np.float64)


def rows(b, X, seed):
    P = adv6.adversarial_rows(b, X, np.random.default_rng(50 + seed))
    return P[~np.isinf(P).any(axis=1)]


@pytest.mark.parametrize("key", sorted(CASES))
def test_models_of_this_stops_options_score_alike_in_every_consumer(key, tmp_path):
    b, X = fit(*CASES[key])
    assert b.n_features == X.shape[1]
    assert any((t["is_leaf"] == 0).any() for t in b.trees), "no split: nothing probed"
    P = rows(b, X, 0)
    for it in (None, 2):
        adv6.check_every_consumer(b, P, it, tmp_path)


@pytest.mark.parametrize("objective", ["lambdamart", "mart", "gbrank"])
def test_one_leaf_rounds_then_continued_training(objective, tmp_path):
    """init_model: two rounds of one-leaf trees (min_samples_leaf beyond the data),
    then three rounds that split, then a one-leaf round again."""
    first, X = fit(objective, True, np.float64, {"n_estimators": 2, "min_samples_leaf": 10_000})
    assert all(len(t) == 1 for t in first.trees)
    mid, _ = fit(objective, True, np.float64, {"n_estimators": 5}, init_model=first)
    b, _ = fit(
        objective,
        True,
        np.float64,
        {"n_estimators": 6, "min_samples_leaf": 10_000},
        init_model=mid,
    )
    sizes = [len(t) for t in b.trees]
    assert sizes[:2] == [1, 1], sizes
    assert sizes[-1] == 1, sizes
    assert max(sizes) > 1, sizes
    P = rows(b, X, 1)
    for it in (None, 1, 4):
        adv6.check_every_consumer(b, P, it, tmp_path)


def test_a_feature_missing_everywhere_in_training_is_read_when_present(tmp_path):
    """The last column is NaN in every training row: no split uses it, yet every
    consumer must accept (and ignore) a row holding any value there."""
    b, X = fit("lambdamart", True, np.float32, {})  # float32: XGBoost reads every row
    last = X.shape[1] - 1
    assert not any((t["feature_idx"][t["is_leaf"] == 0] == last).any() for t in b.trees)
    rng = np.random.default_rng(3)
    P = X[rng.integers(0, X.shape[0], size=40)].copy()
    P[:, last] = rng.choice([0.0, -0.0, 1e30, -1.0, 0.5, np.nan], size=40)
    ours = b.predict(P)
    Q = P.copy()
    Q[:, last] = 0.0
    np.testing.assert_array_equal(ours, b.predict(Q))
    path = tmp_path / "m.txt"
    b.export(path, format="lightgbm")
    lb = lgb.Booster(model_file=str(path))
    assert lb.num_feature() == X.shape[1]
    zeroed = np.where(np.abs(P) <= adv6.LGB_ZERO, 0.0, P)  # LightGBM's zero range
    np.testing.assert_array_equal(lb.predict(P), b.predict(zeroed))
    path = tmp_path / "m.json"
    b.export(path, format="xgboost")
    bx = xgb.Booster(model_file=str(path))
    assert bx.num_features() == X.shape[1]
    got = bx.predict(xgb.DMatrix(P, missing=np.nan), validate_features=False)
    np.testing.assert_allclose(got, ours, rtol=0, atol=1e-5)
    sess = ort.InferenceSession(export_bytes(b, "onnx"))
    assert sess.get_inputs()[0].shape[1] == X.shape[1]
    (got,) = sess.run(None, {"features": P.astype(F32)})
    np.testing.assert_allclose(got.ravel(), ours, rtol=0, atol=1e-5)
    solr = json.loads(export_bytes(b, "solr"))
    assert len(solr["features"]) == X.shape[1]


def test_learning_rate_1e_12_keeps_every_leaf_value_in_every_format():
    """Leaf values of ~1e-12 beside an initial score: each text format must write them
    so that the consumer reads back ltrboost's value (17 digits for doubles, the
    float32 nearest for float32 formats), not 0 or a rounded 1e-12."""
    b, _ = fit("mart", False, np.float64, {"learning_rate": 1e-12})
    leaves = np.concatenate([t["value"][t["is_leaf"] == 1] for t in b.trees])
    assert 0 < np.abs(leaves).max() < 1e-10
    text = export_bytes(b, "lightgbm").decode()
    lb = lgb.Booster(model_str=text)
    dumped = []

    def walk(n):
        if "leaf_value" in n:
            dumped.append(n["leaf_value"])
        else:
            walk(n["left_child"])
            walk(n["right_child"])

    for t in lb.dump_model()["tree_info"][1:]:  # the first is the initial score
        walk(t["tree_structure"])
    assert sorted(dumped) == sorted(leaves.tolist())


def test_float32_sums_lose_tiny_trees_beside_the_initial_score_as_documented(tmp_path):
    """A consumer's limitation, not an export bug: a ``mart`` model (initial score the
    mean label, ~2.8) with learning rate 1e-12 scores every row the same in float32
    (XGBoost, onnxruntime), while LightGBM keeps ltrboost's scores; deploy.md says so."""
    b, X = fit("mart", False, np.float32, {"learning_rate": 1e-12})
    ours = b.predict(X)
    assert np.unique(ours).size > 1
    (got,) = ort.InferenceSession(export_bytes(b, "onnx")).run(None, {"features": X.astype(F32)})
    assert np.unique(got).size == 1
    path = tmp_path / "m.json"
    b.export(path, format="xgboost")
    got = xgb.Booster(model_file=str(path)).predict(xgb.DMatrix(X), validate_features=False)
    assert np.unique(got).size == 1
    path = tmp_path / "m.txt"
    b.export(path, format="lightgbm")
    zeroed = np.where(np.abs(X) <= adv6.LGB_ZERO, 0.0, X)
    np.testing.assert_array_equal(lgb.Booster(model_file=str(path)).predict(X), b.predict(zeroed))
    deploy = Path(__file__).resolve().parents[1] / "docs" / "deploy.md"
    text = " ".join(deploy.read_text(encoding="utf-8").split())
    assert "learning rate of 1e-12" in text
    assert "all documents of a query tie there" in text

"""predict(X, pred_contrib=True) (TreeSHAP) and predict(X, pred_leaf=True): the kernels
against their references, TreeSHAP against Shapley values brute-forced from their
definition, local accuracy, LightGBM's own pred_contrib on the exported model, and the
leaves against a plain traversal."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from _tree_specs import REPEATED_FEATURE_TREE
from _tree_specs import nodes_from_spec as _nodes
from ltrboost import Ranker, make_dataset, train
from ltrboost.explain import (
    _predict_leaf_reference,
    _tree_shap_reference,
)
from ltrboost.model import Booster

SEEDS = [0, 1, 2]


# ====================================================================== helpers


def _data(seed, n=300, n_features=4, nan_frac=0.1, zero_frac=0.2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[:, 1] = np.round(X[:, 1] * 2)  # ties
    X[rng.random(X.shape) < nan_frac] = np.nan
    X[:, -1] = np.where(rng.random(n) < zero_frac, 0.0, X[:, -1])  # a zero-heavy feature
    y = np.clip(np.round(np.nan_to_num(X[:, 0]) + rng.normal(size=n) * 0.5 + 1.5), 0, 3)
    qid = np.repeat(np.arange(n // 10), 10)
    return X, y, qid


def _model(seed, objective="lambdamart", n_estimators=6, max_leaf_nodes=8, **params):
    X, y, qid = _data(seed)
    b = train(
        {
            "objective": objective,
            "n_estimators": n_estimators,
            "max_leaf_nodes": max_leaf_nodes,
            "min_samples_leaf": 3,
            "random_state": seed,
            **params,
        },
        make_dataset(X, y, qid=qid),
    )
    return b, X


def _divisor(b, n_iter):
    return n_iter + 1 if b.update_rule == "averaged" else 1


def _booster(trees, n_features, init=0.25, outputs=None, **kw):
    return Booster(
        objective=kw.pop("objective", "lambdamart"),
        objective_params={},
        init_score=np.array([init] if np.ndim(init) == 0 else init, dtype=np.float64),
        trees=trees,
        tree_outputs=outputs or [0] * len(trees),
        n_features=n_features,
        **kw,
    )


# Hand-made trees: a feature split twice on one path (the unwinding case), NaN routing
# both ways, a leaf no training document reached (count 0) and a node whose children
# both hold 0 documents (hand-made: weighted 1/2 each).
TINY_TREES = [
    _nodes(REPEATED_FEATURE_TREE),
    _nodes([(2, 0.0, 0, 1, 2, 5), (1.5, 5), (2, 1.0, 1, 3, 4, 0), (-2.0, 0), (7.0, 0)]),
    _nodes([(4.0, 9)]),  # one leaf: only its value, in the bias
]


def _brute_force_shap(nodes, x, n_features):
    """Shapley values from their definition: every subset S of the other features,
    v(S) = E[f(x) | x_S] by the document-weighted traversal (follow x at splits on S,
    else average the children by their counts)."""

    def share(k, child):
        a = int(nodes[nodes[k]["left"]]["count"])
        b = int(nodes[nodes[k]["right"]]["count"])
        c = a if child == nodes[k]["left"] else b
        return c / (a + b) if a + b else 0.5

    def v(k, S):
        if nodes[k]["is_leaf"]:
            return float(nodes[k]["value"])
        lft, rgt = int(nodes[k]["left"]), int(nodes[k]["right"])
        f = int(nodes[k]["feature_idx"])
        if f in S:
            xv = x[f]
            left = (
                bool(nodes[k]["missing_go_to_left"])
                if np.isnan(xv)
                else xv <= nodes[k]["num_threshold"]
            )
            return v(lft if left else rgt, S)
        return share(k, lft) * v(lft, S) + share(k, rgt) * v(rgt, S)

    M = n_features
    phi = np.zeros(M + 1)
    for j in range(M):
        others = [i for i in range(M) if i != j]
        for r in range(M):
            for S in itertools.combinations(others, r):
                w = math.factorial(r) * math.factorial(M - r - 1) / math.factorial(M)
                phi[j] += w * (v(0, set(S) | {j}) - v(0, set(S)))
    phi[M] = v(0, set())
    return phi


# ====================================================================== kernel == reference


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("objective", "iteration"),
    [("lambdamart", None), ("lambdamart", 2), ("gbrank", None), ("gbrank", 3), ("mcrank", 2)],
)
def test_kernel_equals_reference(seed, objective, iteration):
    b, X = _model(seed, objective)
    n_iter = b.n_iterations if iteration is None else iteration
    k = n_iter * b.n_outputs
    ref = _tree_shap_reference(
        b.trees[:k], b.tree_outputs[:k], X[:40], b.n_outputs, b.init_score, _divisor(b, n_iter)
    )
    got = b.predict(X[:40], pred_contrib=True, iteration=iteration)
    assert got.shape == (40, b.n_outputs * (X.shape[1] + 1))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, ref.reshape(40, -1), rtol=1e-12, atol=1e-14)


def test_tiny_trees_kernel_reference_and_brute_force_agree():
    F = 5
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, F)) * 1.5
    X[rng.random(X.shape) < 0.25] = np.nan
    X[:5, 0] = [-1.0, 0.0, 1.0, -2.0, 0.5]  # on the thresholds
    b = _booster(TINY_TREES, F)
    got = b.predict(X, pred_contrib=True)
    ref = _tree_shap_reference(TINY_TREES, [0, 0, 0], X, 1, b.init_score)[:, 0]
    brute = np.zeros_like(ref)
    for i in range(X.shape[0]):
        for nodes in TINY_TREES:
            brute[i] += _brute_force_shap(nodes, X[i], F)
    brute[:, F] += 0.25
    assert np.isfinite(got).all()
    np.testing.assert_allclose(ref, brute, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, brute, rtol=1e-12, atol=1e-12)
    # features no tree splits on get exactly 0
    assert (got[:, [3, 4]] == 0).all()
    np.testing.assert_allclose(got.sum(1), b.predict(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_trained_trees_equal_brute_force(seed):
    b, X = _model(seed, n_estimators=3, max_leaf_nodes=6)
    F = X.shape[1]
    got = b.predict(X[:25], pred_contrib=True)
    brute = np.zeros_like(got)
    for i in range(25):
        for nodes in b.trees:
            brute[i] += _brute_force_shap(nodes, X[i], F)
    brute[:, F] += b.init_score[0]
    np.testing.assert_allclose(got, brute, rtol=1e-10, atol=1e-12)


def test_deep_chain_tree():
    """A chain 60 deep re-splitting 3 features: the path buffers hold it."""
    depth, spec = 60, []
    for d in range(depth):  # inner node 2d: leaf 2d + 1 on the left, the chain right
        spec.append((d % 3, (d % 7) / 7 - 0.5, d % 2, 2 * d + 1, 2 * d + 2, 1000 - 10 * d))
        spec.append((d / 10, 10))
    spec.append((-1.0, 1000 - 10 * depth))
    nodes = _nodes(spec)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(30, 3))
    b = _booster([nodes], 3)
    got = b.predict(X, pred_contrib=True)
    ref = _tree_shap_reference([nodes], [0], X, 1, b.init_score)[:, 0]
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
    brute = np.array([_brute_force_shap(nodes, x, 3) for x in X])
    brute[:, 3] += 0.25
    np.testing.assert_allclose(got, brute, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.sum(1), b.predict(X), rtol=1e-9)


# ====================================================================== local accuracy


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("objective", ["lambdamart", "gbrank", "mart", "rankboost"])
@pytest.mark.parametrize("iteration", [None, 0, 1, 4])
def test_rows_sum_to_predict(seed, objective, iteration):
    b, X = _model(seed, objective)
    c = b.predict(X, pred_contrib=True, iteration=iteration)
    assert c.shape == (X.shape[0], X.shape[1] + 1)
    p = b.predict(X, iteration=iteration)
    np.testing.assert_allclose(c.sum(1), p, rtol=1e-9, atol=1e-12 * np.abs(p).max())
    if iteration == 0:
        assert (c[:, :-1] == 0).all()
        assert (c[:, -1] == b.init_score[0]).all()


def test_mcrank_gives_each_outputs_raw_contributions():
    b, X = _model(0, "mcrank")
    F, K = X.shape[1], b.n_outputs
    c = b.predict(X, pred_contrib=True)
    assert c.shape == (X.shape[0], K * (F + 1))
    raw = b.predict_raw(X)
    np.testing.assert_allclose(c.reshape(-1, K, F + 1).sum(2), raw.T, rtol=1e-9, atol=1e-12)


def test_input_forms_give_the_same_contributions():
    b, X = _model(1)
    c = b.predict(X, pred_contrib=True)
    X0 = np.nan_to_num(X)  # sparse: absent entries are 0
    np.testing.assert_array_equal(
        b.predict(sp.csr_matrix(X0), pred_contrib=True), b.predict(X0, pred_contrib=True)
    )
    np.testing.assert_array_equal(b.predict(X.tolist(), pred_contrib=True), c)
    X32 = X.astype(np.float32)
    c32 = b.predict(X32, pred_contrib=True)
    np.testing.assert_allclose(c32.sum(1), b.predict(X32), rtol=1e-9, atol=1e-12)
    # several threads (blocks of rows) equal one
    big = np.tile(X, (4, 1))
    np.testing.assert_array_equal(
        b.predict(big, pred_contrib=True, n_threads=2),
        b.predict(big, pred_contrib=True, n_threads=1),
    )
    np.testing.assert_array_equal(
        b.predict(big, pred_leaf=True, n_threads=2), b.predict(big, pred_leaf=True, n_threads=1)
    )
    assert b.predict(X[:0], pred_contrib=True).shape == (0, X.shape[1] + 1)
    assert b.predict(X[:0], pred_leaf=True).shape == (0, len(b.trees))


def test_ranker_predict_passes_them_on():
    X, y, qid = _data(0)
    r = Ranker(n_estimators=4, max_leaf_nodes=6, min_samples_leaf=3).fit(X, y, qid=qid)
    c = r.predict(X, pred_contrib=True)
    np.testing.assert_array_equal(c, r.booster_.predict(X, pred_contrib=True))
    np.testing.assert_allclose(c.sum(1), r.predict(X), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(
        r.predict(X, pred_leaf=True), r.booster_.predict(X, pred_leaf=True)
    )
    np.testing.assert_array_equal(
        r.predict(X, pred_contrib=True, iteration=2),
        r.booster_.predict(X, pred_contrib=True, iteration=2),
    )


# ====================================================================== refusals


def test_both_flags_are_refused():
    b, X = _model(0, n_estimators=2)
    with pytest.raises(ValueError, match="pred_contrib=True and pred_leaf=True"):
        b.predict(X, pred_contrib=True, pred_leaf=True)


def test_negative_count_is_named():
    bad = TINY_TREES[0].copy()
    bad[4]["count"] = -2
    b = _booster([TINY_TREES[1], bad], 5)
    with pytest.raises(ValueError, match=r"tree 1 node 4 has count -2"):
        b.predict(np.zeros((2, 5)), pred_contrib=True)
    b.predict(np.zeros((2, 5)), pred_leaf=True)  # leaves need no counts


def test_wrong_width_and_iteration_are_refused_as_by_predict():
    b, X = _model(0, n_estimators=2)
    with pytest.raises(ValueError, match="features but the model was trained with"):
        b.predict(X[:, :2], pred_contrib=True)
    with pytest.raises(ValueError, match="iteration=9"):
        b.predict(X, pred_leaf=True, iteration=9)


# ====================================================================== pred_leaf


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("objective", "iteration"), [("lambdamart", None), ("mcrank", 2), ("gbrank", 3)]
)
def test_pred_leaf_equals_a_plain_traversal(seed, objective, iteration):
    b, X = _model(seed, objective)
    n_iter = b.n_iterations if iteration is None else iteration
    k = n_iter * b.n_outputs
    leaves = b.predict(X, pred_leaf=True, iteration=iteration)
    assert leaves.dtype == np.int32
    assert leaves.shape == (X.shape[0], k)
    np.testing.assert_array_equal(leaves, _predict_leaf_reference(b.trees[:k], X))
    # the indices are leaves, and their values add up to the raw scores
    raw = np.tile(b.init_score[:, None], (1, X.shape[0]))
    for t in range(k):
        nodes = b.trees[t]
        assert nodes["is_leaf"][leaves[:, t]].all()
        raw[b.tree_outputs[t]] += nodes["value"][leaves[:, t]]
    np.testing.assert_allclose(raw / _divisor(b, n_iter), b.predict_raw(X, iteration=iteration))


def test_pred_leaf_of_hand_made_trees():
    b = _booster(TINY_TREES, 5)
    X = np.array(
        [
            [np.nan, 0.0, np.nan, 0, 0],
            [0.5, 9.0, 0.5, 0, 0],
            [-2.0, 1.0, 2.0, 0, 0],
            [-0.5, 1.0, -1.0, 0, 0],
            [1.5, np.nan, 0.0, 0, 0],
        ]
    )
    np.testing.assert_array_equal(
        b.predict(X, pred_leaf=True), [[3, 3, 0], [5, 3, 0], [7, 4, 0], [8, 1, 0], [6, 1, 0]]
    )


# ====================================================================== LightGBM oracle


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("objective", ["lambdamart", "gbrank"])
@pytest.mark.parametrize("iteration", [None, 2])
def test_lightgbm_pred_contrib_on_the_export(tmp_path, seed, objective, iteration):
    """NaN-missing features (both directions learned) and a zero-heavy feature; GBRank's
    averaged model; iteration= cuts.  LightGBM's PredictContrib ignores
    ``average_output``: its contributions of the averaged model are T + 1 times its
    own scores' (ours sum to the score)."""
    lgb = pytest.importorskip("lightgbm")
    from ltrboost.export import export_model

    b, X = _model(seed, objective, subsample=0.8)
    path = tmp_path / "m.txt"
    export_model(b, path, "lightgbm", iteration=iteration)
    theirs = lgb.Booster(model_file=str(path)).predict(X, pred_contrib=True)
    ours = b.predict(X, pred_contrib=True, iteration=iteration)
    n_iter = b.n_iterations if iteration is None else iteration
    np.testing.assert_allclose(ours * _divisor(b, n_iter), theirs, rtol=1e-9, atol=1e-12)


def test_lightgbm_pred_contrib_on_a_letor_model_trained_zero_missing(tmp_path):
    """A CLI model of a LETOR file (absent features 0, ``missing="zero"``) on its own
    data as the CLI reads it."""
    lgb = pytest.importorskip("lightgbm")
    from ltrboost.cli import main
    from ltrboost.io.letor import load_svmlight
    from ltrboost.model import load_model

    rng = np.random.default_rng(5)
    lines = []
    for i in range(200):
        feats = " ".join(f"{j + 1}:{rng.normal():.4f}" for j in range(6) if rng.random() < 0.6)
        lines.append(f"{rng.integers(0, 3)} qid:{i // 10} {feats}")
    data = tmp_path / "train.txt"
    data.write_text("\n".join(lines) + "\n")
    model = tmp_path / "m.json"
    assert main(["train", str(data), "-o", str(model), "--n-estimators", "5", "--quiet"]) in (
        0,
        None,
    )
    b = load_model(model)
    assert b.missing == "zero"
    X = load_svmlight(str(data), n_features=b.n_features).X
    out = tmp_path / "m.txt"
    b.export(str(out), "lightgbm")
    theirs = lgb.Booster(model_file=str(out)).predict(X, pred_contrib=True)
    np.testing.assert_allclose(b.predict(X, pred_contrib=True), theirs, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(
        b.predict(sp.csr_matrix(X), pred_contrib=True), b.predict(X, pred_contrib=True)
    )


# ====================================================================== compile cost


def test_ordinary_train_and_predict_do_not_touch_the_shap_kernels():
    from ltrboost import _warmup

    named = {m for entries in _warmup.load_manifest().values() for m, _, _ in entries}
    assert "ltrboost.explain" not in named
    code = (
        "import sys, numpy as np\n"
        "from ltrboost import train, make_dataset\n"
        "X = np.random.default_rng(0).normal(size=(60, 3)); y = (X[:, 0] > 0) * 1.0\n"
        "b = train({'n_estimators': 2}, make_dataset(X, y, qid=np.repeat(np.arange(6), 10)))\n"
        "b.predict(X); b.predict_raw(X)\n"
        "print('ltrboost.explain' in sys.modules)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "False"


@pytest.mark.parametrize("kind", ["pred_contrib", "pred_leaf", None])
def test_missing_nan_sparse_warning_points_at_the_caller(kind):
    b, X = _model(0, n_estimators=2)
    b.missing = "nan"
    kw = {kind: True} if kind else {}
    with pytest.warns(UserWarning, match="absent entries of a sparse X are 0") as rec:
        b.predict(sp.csr_matrix(np.nan_to_num(X)), **kw)
    assert rec[0].filename == __file__


# ====================================================================== ltrboost predict --contrib


def _letor(tmp_path, seed=5, n=200, n_features=6):
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        feats = " ".join(
            f"{j + 1}:{rng.normal():.4f}" for j in range(n_features) if rng.random() < 0.7
        )
        lines.append(f"{rng.integers(0, 3)} qid:{i // 10} {feats}")
    data = tmp_path / "train.txt"
    data.write_text("\n".join(lines) + "\n")
    return data


@pytest.mark.parametrize("objective", ["lambdamart", "mcrank"])
def test_cli_predict_contrib(tmp_path, objective):
    from ltrboost.cli import main
    from ltrboost.io.letor import load_svmlight
    from ltrboost.model import load_model

    data = _letor(tmp_path)
    model = tmp_path / "m.json"
    argv = ["train", str(data), "-o", str(model), "--n-estimators", "4", "--quiet"]
    assert main([*argv, "--objective", objective]) in (0, None)
    out, scores = tmp_path / "contrib.tsv", tmp_path / "scores.txt"
    assert main(["predict", str(model), str(data), "-o", str(out), "--contrib"]) in (0, None)
    assert main(["predict", str(model), str(data), "-o", str(scores), "--iteration", "2"]) in (
        0,
        None,
    )
    b = load_model(model)
    X = load_svmlight(str(data), n_features=b.n_features).X
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    got = np.array(rows, dtype=np.float64)
    np.testing.assert_array_equal(got, b.predict(X, pred_contrib=True))
    if objective == "lambdamart":
        assert got.shape == (200, b.n_features + 1)
        out2 = tmp_path / "c2.tsv"
        argv = ["predict", str(model), str(data), "-o", str(out2), "--contrib"]
        assert main([*argv, "--iteration", "2"]) in (0, None)
        c2 = np.loadtxt(out2, delimiter="\t")
        s2 = np.loadtxt(scores)
        np.testing.assert_allclose(c2.sum(1), s2, rtol=1e-9, atol=1e-12)


def test_cli_predict_contrib_refuses_a_very_wide_model(tmp_path, capsys):
    from ltrboost.cli import main

    b = _booster(TINY_TREES, 70_000)
    model = tmp_path / "wide.json"
    b.save_model(model)
    data = _letor(tmp_path, n=20)
    out = tmp_path / "c.tsv"
    rc = main(["predict", str(model), str(data), "-o", str(out), "--contrib"])
    assert rc not in (0, None)
    err = capsys.readouterr().err
    assert "--contrib: the model has 70000 features" in err
    assert not out.exists()

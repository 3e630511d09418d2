"""predict(X, pred_contrib=True) checked as an outside reviewer would: the claim (exact
path-dependent TreeSHAP, Lundberg, Erion & Lee 2018) against Shapley values computed
exactly (rational arithmetic) on trees whose paths hold more than 100 distinct
features, where Algorithm 2's unwinding lost every digit; local accuracy on resumed,
bagged, early-stopped and shallow/deep models; XGBoost's and LightGBM's own TreeSHAP
on the exported models; and the edge inputs (layouts, dtypes, inf, sparse NaN, old
model files, the CLI's empty file)."""

from __future__ import annotations

import json
import math
import sys
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from _tree_specs import REPEATED_FEATURE_TREE
from _tree_specs import nodes_from_spec as _nodes
from ltrboost import Ranker, make_dataset, train
from ltrboost.model import Booster, load_model

sys.path.insert(0, str(Path(__file__).parent))
from test_shap_adversarial6 import _brute_force_shap

COMPAT = Path(__file__).parent / "data" / "compat"


# ====================================================================== helpers


def _booster(trees, n_features, init=0.25):
    return Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([init], dtype=np.float64),
        trees=trees,
        tree_outputs=[0] * len(trees),
        n_features=n_features,
    )


def _chain(depth, n_docs, feature, value, seed=0):
    """A chain ``depth`` splits deep: inner node ``2d`` splits on ``feature(d)``, its
    left child a leaf of one document (value ``value(d)``), its right child the rest
    of the chain (``n_docs - d - 1`` documents); NaN goes either way."""
    rng = np.random.default_rng(seed)
    spec = []
    for d in range(depth):
        t = float(rng.normal() * 0.3)
        spec.append((feature(d), t, int(rng.integers(2)), 2 * d + 1, 2 * d + 2, n_docs - d))
        spec.append((value(d), 1))
    spec.append((1.0, n_docs - depth))
    return _nodes(spec)


def _exact_shap(nodes, x, n_features):
    """Path-dependent Shapley values of one tree at ``x`` in rational arithmetic, from
    the definition: for a leaf of value ``v`` whose path splits on the distinct
    features ``P`` (``z_j``: the product of the document shares of the branches taken
    at the splits on ``j``, ``o_j``: 1 when ``x`` takes them all, else 0),
    ``v(S) = v * prod_{S} o_j * prod_{P - S} z_j``, and feature ``p`` gets
    ``sum_{S in P - p} |S|! (d - 1 - |S|)! / d! * (v(S + p) - v(S))``: the polynomial
    ``prod_{j != p} (z_j + o_j s)`` holds in its ``s^k`` coefficient the sum over the
    subsets of size ``k``.  Exact: no cancellation can lose digits."""
    phi = [Fraction(0)] * n_features

    def share(k, child):
        a, b = int(nodes[nodes[k]["left"]]["count"]), int(nodes[nodes[k]["right"]]["count"])
        c = a if child == nodes[k]["left"] else b
        return Fraction(c, a + b) if a + b else Fraction(1, 2)

    todo = [(0, {})]  # node, {feature: (z, o)}
    while todo:
        k, path = todo.pop()
        if nodes[k]["is_leaf"]:
            v = Fraction(float(nodes[k]["value"]))
            feats = list(path)
            d = len(feats)
            if v == 0 or d == 0:
                continue
            poly = [Fraction(1)]  # prod_j (z_j + o_j s), low degree first
            for f in feats:
                z, o = path[f]
                grown = [Fraction(0)] * (len(poly) + 1)
                for i, a in enumerate(poly):
                    grown[i] += z * a
                    grown[i + 1] += o * a
                poly = grown
            weight = [Fraction(math.factorial(i) * math.factorial(d - 1 - i), math.factorial(d))
                      for i in range(d)]  # fmt: skip
            for f in feats:
                z, o = path[f]
                if o == 0 and z == 0:
                    continue  # every v(S) of this leaf is 0 (v(S + p) too)
                if o == 0:
                    rest = [a / z for a in poly[:d]]
                else:  # divide by (s + z): synthetic division, exact
                    rest = [Fraction(0)] * d
                    rest[d - 1] = poly[d]
                    for i in range(d - 1, 0, -1):
                        rest[i - 1] = poly[i] - z * rest[i]
                phi[f] += v * (o - z) * sum(w * c for w, c in zip(weight, rest, strict=True))
            continue
        f = int(nodes[k]["feature_idx"])
        lft, rgt = int(nodes[k]["left"]), int(nodes[k]["right"])
        xv = x[f]
        go_left = (
            bool(nodes[k]["missing_go_to_left"])
            if np.isnan(xv)
            else xv <= nodes[k]["num_threshold"]
        )
        z0, o0 = path.get(f, (Fraction(1), 1))
        for child, took in ((lft, go_left), (rgt, not go_left)):
            below = dict(path)
            below[f] = (z0 * share(k, child), o0 if took else 0)
            todo.append((child, below))
    return np.array([float(p) for p in phi])


def _data(seed, n=300, n_features=5, nan_frac=0.15):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[:, 2] = np.round(X[:, 2])  # ties
    X[rng.random(X.shape) < nan_frac] = np.nan
    y = np.clip(np.round(np.nan_to_num(X[:, 0]) + rng.normal(size=n) * 0.5 + 1.5), 0, 3)
    return X, y, np.repeat(np.arange(n // 10), 10)


BASE = {"n_estimators": 5, "max_leaf_nodes": 6, "min_samples_leaf": 3, "random_state": 0}


def _brute(b, X, n_trees):
    F = X.shape[1]
    out = np.zeros((X.shape[0], F + 1))
    for i in range(X.shape[0]):
        for nodes in b.trees[:n_trees]:
            out[i] += _brute_force_shap(nodes, X[i], F)
    out[:, F] += b.init_score[0]
    return out


# ====================================================================== deep paths


@pytest.mark.parametrize(("depth", "n_docs"), [(130, 400), (160, 10**6), (300, 10**15)])
def test_paths_of_many_distinct_features_sum_to_the_score(depth, n_docs):
    """A chain splitting a new feature at every level: Algorithm 2's unwinding
    (``pw[j] = next * (d + 1) / (j + 1)``, ``next = tmp - pw[j] * z * (d - j) / (d + 1)``)
    multiplies its rounding error by about ``z * d / j`` a step, so past ~100 distinct
    features on a path the rows were off the score (leaf values +-2) by 164 (130
    deep), 1.7e3 (160) and 1.6e18 (300)."""
    nodes = _chain(depth, n_docs, lambda d: d, lambda d: float(np.sin(d)) * 2)
    b = _booster([nodes], depth)
    X = np.random.default_rng(1).normal(size=(20, depth)) * 0.3
    X[3, ::7] = np.nan
    c = b.predict(X, pred_contrib=True)
    assert np.isfinite(c).all()
    np.testing.assert_allclose(c.sum(1), b.predict(X), rtol=1e-9, atol=1e-9)


def test_deep_path_equals_the_exact_shapley_values():
    """130 distinct features on a path, checked against rational arithmetic (the
    definition, no rounding) to 1e-9: Algorithm 2 was off by up to 0.062."""
    nodes = _chain(130, 400, lambda d: d, lambda d: 0.0 if d % 40 else 1.0 - d / 100)
    b = _booster([nodes], 130)
    X = np.random.default_rng(0).normal(size=(3, 130)) * 0.3
    X[1, 5::9] = np.nan
    got = b.predict(X, pred_contrib=True)
    for i in range(X.shape[0]):
        want = _exact_shap(nodes, X[i], 130)
        np.testing.assert_allclose(got[i, :130], want, rtol=1e-9, atol=1e-12)


def test_exact_oracle_agrees_with_the_brute_force_on_small_trees():
    """The rational oracle above is the brute-force Shapley sum over all subsets on
    trees of <= 5 features (repeated features on a path, NaN both ways, a zero-count
    branch)."""
    trees = [
        _nodes(REPEATED_FEATURE_TREE),
        _chain(5, 50, lambda d: d % 3, lambda d: d - 2.0),
    ]
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 5))
    X[rng.random(X.shape) < 0.25] = np.nan
    for nodes in trees:
        for x in X:
            np.testing.assert_allclose(
                _exact_shap(nodes, x, 5), _brute_force_shap(nodes, x, 5)[:5], atol=1e-12
            )


def test_gauss_legendre_rule_matches_numpy_and_integrates_exactly():
    from ltrboost.explain import _gauss_legendre

    for n in (1, 2, 5, 33, 64):
        t, w = _gauss_legendre(n)
        x, v = np.polynomial.legendre.leggauss(n)
        np.testing.assert_allclose(t, (x + 1) / 2, atol=1e-14)
        np.testing.assert_allclose(w, v / 2, atol=1e-14)
    for n in (100, 700):  # beyond numpy's comfort: x^k integrated exactly, k < 2n
        t, w = _gauss_legendre(n)
        assert (w > 0).all()
        assert ((t > 0) & (t < 1)).all()
        for k in (0, 1, 7, 2 * n - 1):
            assert abs(w @ t**k - 1 / (k + 1)) < 1e-13


# ====================================================================== local accuracy


@pytest.mark.parametrize(
    "extra",
    [
        {"subsample": 0.5},
        {"max_depth": 1},
        {"max_depth": 12, "max_leaf_nodes": 64, "min_samples_leaf": 1},
        {"learning_rate": 3.0},
        {"objective": "ranknet"},
    ],
)
def test_trained_models_equal_the_brute_force(extra):
    X, y, qid = _data(0)
    b = train({**BASE, **extra}, make_dataset(X, y, qid=qid))
    c = b.predict(X[:15], pred_contrib=True)
    np.testing.assert_allclose(c, _brute(b, X[:15], len(b.trees)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(c.sum(1), b.predict(X[:15]), rtol=1e-12, atol=1e-12)


def test_resumed_and_early_stopped_models():
    X, y, qid = _data(0)
    first = train(BASE, make_dataset(X, y, qid=qid))
    b = train({**BASE, "n_estimators": 8}, make_dataset(X, y, qid=qid), init_model=first)
    assert b.n_iterations == 8
    c = b.predict(X[:15], pred_contrib=True)
    np.testing.assert_allclose(c, _brute(b, X[:15], 8), rtol=1e-10, atol=1e-12)
    Xv, yv, qv = _data(1)
    params = {**BASE, "n_estimators": 40, "early_stopping_rounds": 3, "learning_rate": 0.5}
    es = train(
        params, make_dataset(X, y, qid=qid), valid_sets=[("v", make_dataset(Xv, yv, qid=qv))]
    )
    assert es.best_iteration < es.n_iterations
    c = es.predict(X, pred_contrib=True)  # the best iteration, as predict
    np.testing.assert_allclose(c.sum(1), es.predict(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(c, es.predict(X, pred_contrib=True, iteration=es.best_iteration))


def test_features_no_used_tree_splits_on_get_exactly_zero():
    X, y, qid = _data(2)
    X[:, 4] = 1.0  # constant: never split on
    b = train(BASE, make_dataset(X, y, qid=qid))
    c = b.predict(X, pred_contrib=True, iteration=1)
    used = set(b.trees[0]["feature_idx"][b.trees[0]["is_leaf"] == 0].tolist())
    assert 4 not in used
    for j in set(range(5)) - used:
        assert (c[:, j] == 0).all()
        assert not np.signbit(c[:, j]).any()


@pytest.mark.parametrize(
    "layout",
    ["fortran", "big-endian", "read-only", "strided", "float16", "list", "csc-nan", "coo"],
)
def test_input_layouts_give_the_contributions_of_the_plain_array(layout):
    X, y, qid = _data(3)
    b = train(BASE, make_dataset(X, y, qid=qid))
    Xq = X.astype(np.float16).astype(np.float64) if layout == "float16" else X
    want = b.predict(Xq, pred_contrib=True)
    given = {
        "fortran": lambda: np.asfortranarray(X),
        "big-endian": lambda: X.astype(">f8"),
        "read-only": lambda: np.require(X, requirements="C").copy(),
        "strided": lambda: np.repeat(X, 2, axis=1)[:, ::2],
        "float16": lambda: X.astype(np.float16),
        "list": lambda: X.tolist(),
        "csc-nan": lambda: sp.csc_matrix(X),  # the NaN entries are stored: missing
        "coo": lambda: sp.coo_matrix(X),
    }[layout]()
    if layout == "read-only":
        given.setflags(write=False)
    got = b.predict(given, pred_contrib=True)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got.sum(1), b.predict(given), rtol=1e-12, atol=1e-12)


def test_one_row_zero_rows_and_an_empty_sparse_row():
    X, y, qid = _data(4)
    b = train(BASE, make_dataset(X, y, qid=qid))
    one = b.predict(X[7:8], pred_contrib=True)
    np.testing.assert_array_equal(one, b.predict(X, pred_contrib=True)[7:8])
    assert b.predict(sp.csr_matrix((0, 5)), pred_contrib=True).shape == (0, 6)
    zeros = b.predict(sp.csr_matrix((3, 5)), pred_contrib=True)
    np.testing.assert_array_equal(zeros, b.predict(np.zeros((3, 5)), pred_contrib=True))


@pytest.mark.parametrize("sparse", [False, True])
def test_inf_is_refused_as_predict_refuses_it(sparse):
    X, y, qid = _data(5)
    b = train(BASE, make_dataset(X, y, qid=qid))
    Xi = np.nan_to_num(X) if sparse else X.copy()
    Xi[3, 2] = -np.inf
    Xi = sp.csr_matrix(Xi) if sparse else Xi
    with pytest.raises(ValueError, match="row 3: feature 2 is -inf") as plain:
        b.predict(Xi)
    with pytest.raises(ValueError, match="row 3: feature 2 is -inf") as contrib:
        b.predict(Xi, pred_contrib=True)
    assert str(plain.value) == str(contrib.value)


def test_frames_and_arrow_tables_are_taken_by_name():
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    X, y, qid = _data(6)
    cols = [f"f{i}" for i in range(5)]
    df = pd.DataFrame(X, columns=cols)
    r = Ranker(**BASE).fit(df, y, qid=qid)
    want = r.predict(df, pred_contrib=True)
    back = df[cols[::-1]].assign(qid=qid)
    np.testing.assert_array_equal(r.predict(back, pred_contrib=True), want)
    table = pa.Table.from_pandas(df[cols[::-1]])
    np.testing.assert_array_equal(r.booster_.predict(table, pred_contrib=True), want)


def test_model_files_of_older_versions():
    rows = json.loads((COMPAT / "X_test.json").read_text())
    rows = rows["X"] if isinstance(rows, dict) else rows
    X = np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)
    seen = 0
    for path in sorted(COMPAT.glob("*.json")):
        if path.name.endswith(".expected.json") or path.name == "X_test.json":
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b = load_model(path)
        Xm = X[:, : b.n_features]
        if Xm.shape[1] < b.n_features:
            Xm = np.hstack([Xm, np.zeros((X.shape[0], b.n_features - Xm.shape[1]))])
        c = b.predict(Xm, pred_contrib=True).reshape(X.shape[0], b.n_outputs, -1)
        np.testing.assert_allclose(c.sum(2), b.predict_raw(Xm).T, rtol=1e-12, atol=1e-12)
        seen += 1
    assert seen >= 8


def test_cli_contrib_of_an_empty_file_is_one_line(tmp_path, capsys):
    from ltrboost.cli import main

    X, y, qid = _data(7)
    b = train(BASE, make_dataset(X, y, qid=qid))
    model = tmp_path / "m.json"
    b.save_model(model)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    out = tmp_path / "c.tsv"
    assert main(["predict", str(model), str(empty), "-o", str(out), "--contrib"]) not in (0, None)
    err = capsys.readouterr().err
    assert err.startswith("ltrboost: error: ")
    assert err.count("\n") == 1
    assert "no data lines" in err
    assert not out.exists()


# ====================================================================== independent oracles


@pytest.mark.parametrize(
    "extra",
    [{}, {"subsample": 0.6}, {"max_depth": 1}, {"max_depth": 10, "max_leaf_nodes": 40}],
)
def test_xgboost_pred_contribs_on_the_export(tmp_path, extra):
    """XGBoost's TreeSHAP (its ``cover``, which the export writes as the documents)
    on the exported model: equal to its float32 precision."""
    xgb = pytest.importorskip("xgboost")
    X, y, qid = _data(8, n=400, n_features=6)
    b = train(
        {**BASE, "n_estimators": 8, "min_samples_leaf": 2, **extra}, make_dataset(X, y, qid=qid)
    )
    path = tmp_path / "m.json"
    b.export(str(path), "xgboost")
    bx = xgb.Booster()
    bx.load_model(str(path))
    names = [f"f{i}" for i in range(X.shape[1])]
    theirs = bx.predict(xgb.DMatrix(X, missing=np.nan, feature_names=names), pred_contribs=True)
    ours = b.predict(X, pred_contrib=True)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=2e-6)


@pytest.mark.parametrize("extra", [{"max_depth": 1}, {"max_depth": 10, "max_leaf_nodes": 40}])
def test_lightgbm_pred_contrib_on_the_export(tmp_path, extra):
    lgb = pytest.importorskip("lightgbm")
    X, y, qid = _data(9, n=400, n_features=6)
    b = train(
        {**BASE, "n_estimators": 8, "min_samples_leaf": 1, **extra}, make_dataset(X, y, qid=qid)
    )
    path = tmp_path / "m.txt"
    b.export(str(path), "lightgbm")
    theirs = lgb.Booster(model_file=str(path)).predict(X, pred_contrib=True)
    np.testing.assert_allclose(b.predict(X, pred_contrib=True), theirs, rtol=1e-9, atol=1e-12)

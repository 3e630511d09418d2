"""Exports evaluated by their real consumers, differentially, on adversarial rows.

Many small random models (every objective, GBRank's averaging and McRank's grades,
NaN in training, ``missing`` zero, initial scores, early stopping with ``iteration=``,
one-leaf trees, features never used, thresholds that float32 holds and ones it does
not, huge and tiny magnitudes) are exported to every format and scored by

* LightGBM, XGBoost and onnxruntime themselves, and
* small evaluators written here from the documented rules (docs/deploy.md,
  shared/research/deploy-formats.md) of the consumers that cannot run here: the
  OpenSearch / ES LTR plugin's ``NaiveAdditiveDecisionTree`` (``model/xgboost+json``),
  Solr's ``MultipleAdditiveTreesModel``, RankLib's ``Ensemble`` and Vespa's
  ``xgboost()`` (double comparisons).

Rows put each split's feature exactly AT its threshold, one float64 step and one
float32 step below and above it, at its float32 roundings, and at NaN, +-0.0,
+-FLT_MAX, float32 and float64 subnormals, LightGBM's "zero" range and float64 values
beyond float32's range.  Every consumer must reach ltrboost's leaf in every tree (leaf
values are compared tree by tree, not only the sums), with the documented exceptions:
float32 consumers round a float64 input to float32 first (so they are compared with
ltrboost on the rounded rows), LightGBM reads ``|x| <= 1e-35f`` as 0, Solr misses the
thresholds its warning reports, RankLib reads NaN as 0, and infinite inputs are not
part of the contract (ltrboost refuses them).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from ltrboost import Booster, make_dataset, train
from ltrboost.dataset import LTRInputError
from ltrboost.export import ExportError, export_bytes

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

F32 = np.float32
FLT_MAX = float(np.finfo(F32).max)
LGB_ZERO = float(F32(1e-35))  # LightGBM's kZeroThreshold: 1e-35f, kept in a double

SPECIALS = [
    np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, FLT_MAX, -FLT_MAX, 1e300, -1e300, 3.5e38,
    1e-45, -1e-45, 1e-40, 1e-36, -1e-36, 1e-320, 5e-324, -5e-324,
    float(np.nextafter(F32(-1.0), F32(0))), float(np.nextafter(F32(-32.0), F32(0))),
]  # fmt: skip


# --- random adversarial data and models ---------------------------------------------


def adversarial_X(rng, n: int, nan: bool, dtype) -> np.ndarray:
    """Columns: normal; small counts (thresholds 0.5, 1.5 held by float32); pairs of
    adjacent float32 values (thresholds between them, not float32); float64 values
    (thresholds no float32 holds); huge magnitudes; tiny magnitudes and -0.0; values
    just above negative powers of two (Solr); a constant (never used)."""
    X = np.empty((n, 8), dtype=np.float64)
    X[:, 0] = rng.normal(size=n)
    X[:, 1] = rng.integers(0, 4, size=n)
    v = F32(rng.normal())
    adj = [v, np.nextafter(v, F32(np.inf)), np.nextafter(v, F32(-np.inf)), -v]
    X[:, 2] = np.asarray(adj, dtype=np.float64)[rng.integers(0, 4, size=n)]
    X[:, 3] = rng.normal(size=n) * 1e-3 + 1 / 3
    huge = [-FLT_MAX, -3e38, -1e30, 0.0, 1e30, 3e38, FLT_MAX]
    X[:, 4] = np.asarray(huge)[rng.integers(0, len(huge), size=n)]
    tiny = [0.0, -0.0, 1e-45, -1e-45, 1e-40, 2e-38, 1e-36, -1e-36, 1e-30]
    X[:, 5] = np.asarray(tiny)[rng.integers(0, len(tiny), size=n)]
    negp = [-1.0, -0.5, -32.0]
    X[:, 6] = np.asarray(negp)[rng.integers(0, 3, size=n)] + rng.integers(0, 3, size=n) * 6e-8
    X[:, 7] = 2.0
    if dtype == np.float64:  # values beyond float32's range and float64 subnormals
        X[rng.random(n) < 0.1, 4] = 1e300
        X[rng.random(n) < 0.1, 4] = -1e300
        X[rng.random(n) < 0.1, 5] = 1e-320
    if nan:
        X[rng.random((n, 8)) < 0.1] = np.nan
        X[rng.random(n) < 0.3, 3] = np.nan
    return X.astype(dtype)


def labels(rng, X) -> np.ndarray:
    Z = np.nan_to_num(np.asarray(X, dtype=np.float64))
    s = Z[:, 0] + (Z[:, 1] > 1) + (Z[:, 4] > 0) - np.isnan(np.asarray(X)[:, 3])
    s += (Z[:, 5] > 0) + (Z[:, 6] > -0.9) + rng.normal(size=len(s)) * 0.7
    return np.clip(np.round(s), 0, 3).astype(np.float64)


CASES = [
    # objective, nan, dtype, extra params, booster.missing
    ("lambdamart", True, np.float64, {"early_stopping_rounds": 2}, None),
    ("lambdamart", False, np.float32, {}, "zero"),
    ("mart", True, np.float32, {}, None),
    ("mart", False, np.float64, {"min_samples_leaf": 10_000}, None),  # one-leaf trees
    ("gbrank", True, np.float64, {}, None),
    ("gbrank", False, np.float32, {"early_stopping_rounds": 1}, None),
    ("qbrank", True, np.float32, {}, None),
    ("logistic_rank", True, np.float64, {}, "zero"),
    ("ranknet", False, np.float64, {}, None),
    ("rankboost", True, np.float32, {}, None),
    ("mcrank", True, np.float64, {}, None),
    ("mcrank", False, np.float32, {"early_stopping_rounds": 1}, None),
]


def case_id(case) -> str:
    obj, nan, dtype, extra, missing = case
    bits = [obj, "nan" if nan else "dense", np.dtype(dtype).name]
    bits += [f"{k}={v}" for k, v in extra.items()] + ([f"missing={missing}"] if missing else [])
    return "-".join(bits)


def train_case(case, seed: int):
    obj, nan, dtype, extra, missing = case
    rng = np.random.default_rng(seed)
    n_q, docs = 16, 12
    X = adversarial_X(rng, n_q * docs, nan, dtype)
    qid = np.repeat(np.arange(n_q), docs)
    params = {
        "objective": obj,
        "n_estimators": 6,
        "max_leaf_nodes": 6,
        "min_samples_leaf": 4,
        "learning_rate": 0.3,
        "random_state": seed,
    }
    params.update(extra)
    valid = ()
    if "early_stopping_rounds" in extra:
        Xv = adversarial_X(rng, 8 * docs, nan, dtype)
        valid = [("v", make_dataset(Xv, labels(rng, Xv), qid=np.repeat(np.arange(8), docs)))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one-leaf trees: min_samples_leaf's warning
        b = train(params, make_dataset(X, labels(rng, X), qid=qid), valid)
    if missing is not None:  # as a model file of `ltrboost train --missing zero` says
        b.missing = missing
        b.trained_with_nan = nan
    return b, np.asarray(X, dtype=np.float64)


def adversarial_rows(b: Booster, X: np.ndarray, rng) -> np.ndarray:
    """float64 rows: for every split, copies of training rows with the split's feature
    at the threshold t, t's float64 neighbours, the largest float32 m <= t and m's
    float32 neighbours, float32(t) (nearest), and every special value; plus rows of
    specials only."""
    vals_by_feature: dict[int, set[float]] = {f: set() for f in range(b.n_features)}
    for nodes in b.trees:
        for nd in nodes[nodes["is_leaf"] == 0]:
            t = float(nd["num_threshold"])
            out = vals_by_feature[int(nd["feature_idx"])]
            out.update([t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf)])
            with np.errstate(over="ignore"):
                near = F32(t)
                m = near if float(near) <= t else np.nextafter(near, F32(-np.inf))
                out.update(
                    float(v)
                    for v in (near, m, np.nextafter(m, F32(-np.inf)), np.nextafter(m, F32(np.inf)))
                )
    rows = [X]
    for f, vals in vals_by_feature.items():
        vals = sorted(vals | set(SPECIALS), key=repr)  # NaN sorts; -0.0 != 0.0 kept
        base = X[rng.integers(0, X.shape[0], size=len(vals))].copy()
        base[:, f] = vals
        rows.append(base)
    rows.append(rng.choice(np.asarray(SPECIALS), size=(40, b.n_features)))
    return np.concatenate(rows)


# --- ltrboost's routing and the independent evaluators ------------------------------


def our_leaf_values(b: Booster, X: np.ndarray, n_trees: int, strict: bool = False) -> np.ndarray:
    """[row, tree]: the (divided) leaf value ltrboost's rule gives (x <= t in float64,
    NaN where the split learned), vectorised, without ltrboost's predict kernel.
    ``strict``: ``x < t`` instead, undivided (Vespa's reading of a LightGBM model)."""
    div = (n_trees // b.n_outputs + 1) if b.update_rule == "averaged" and not strict else 1
    out = np.empty((X.shape[0], n_trees))
    for j, nodes in enumerate(b.trees[:n_trees]):
        k = np.zeros(X.shape[0], dtype=np.int64)
        while True:
            inner = nodes["is_leaf"][k] == 0
            if not inner.any():
                break
            r = np.flatnonzero(inner)
            nd = nodes[k[r]]
            x = X[r, nd["feature_idx"]]
            below = x < nd["num_threshold"] if strict else x <= nd["num_threshold"]
            go = np.where(np.isnan(x), nd["missing_go_to_left"] != 0, below)
            k[r] = np.where(go, nd["left"], nd["right"])
        out[:, j] = nodes["value"][k] / div
    return out


def _walk(trees, X, step) -> np.ndarray:
    """[row, tree] leaf values of nested-node trees; ``step(node, x) -> child``."""
    out = np.empty((X.shape[0], len(trees)))
    for j, root in enumerate(trees):
        for i in range(X.shape[0]):
            n = root
            while True:
                nxt = step(n, X[i])
                if nxt is None:
                    break
                n = nxt
            out[i, j] = n["__leaf__"] if "__leaf__" in n else np.nan
    return out


def opensearch_dump_leaves(dump: list, names: list[str], X32) -> np.ndarray:
    """NaiveAdditiveDecisionTree (model/xgboost+json): float features; NaN goes to
    ``missing`` (``no`` without it); else ``x < split_condition`` (a float) to ``yes``;
    children found by nodeid; the trees summed with weight 1, no base score."""
    col = {n: i for i, n in enumerate(names)}

    def prep(n):
        if "leaf" in n:
            n["__leaf__"] = float(F32(n["leaf"]))
        else:
            n["__kids__"] = {c["nodeid"]: prep(c) for c in n["children"]}
        return n

    def step(n, row):
        if "leaf" in n:
            return None
        x = row[col[n["split"]]]
        if np.isnan(x):
            want = n.get("missing", n["no"])
        else:
            want = n["yes"] if x < F32(float(n["split_condition"])) else n["no"]
        return n["__kids__"][want]

    return _walk([prep(t) for t in dump], X32, step)


def vespa_dump_leaves(dump: list, names: list[str], X64) -> np.ndarray:
    """Vespa ``xgboost()``: ``if (x < v, yes, no)`` in double with ``v`` the JSON
    number parsed as a double, ``!(x >= v)`` where ``missing == yes``."""
    col = {n: i for i, n in enumerate(names)}

    def prep(n):
        if "leaf" in n:
            n["__leaf__"] = float(F32(n["leaf"]))
        else:
            n["__kids__"] = {c["nodeid"]: prep(c) for c in n["children"]}
        return n

    def step(n, row):
        if "leaf" in n:
            return None
        x, v = float(row[col[n["split"]]]), float(n["split_condition"])
        yes = (not x >= v) if n.get("missing") == n["yes"] else x < v
        return n["__kids__"][n["yes"] if yes else n["no"]]

    return _walk([prep(t) for t in dump], X64, step)


def vespa_lightgbm_leaves(dump: dict, X64) -> np.ndarray:
    """Vespa ``lightgbm()`` (LightGBMParser) on LightGBM's ``dump_model()``: each split
    becomes ``if (!(x >= t), left, right)`` with default_left, else ``if (x < t, ..)``,
    in double; ``average_output`` and ``missing_type`` are not read; the objective
    (``custom`` where the dump has none, as docs/deploy.md's conversion sets it) is one
    Vespa uses raw."""
    objective = dump.get("objective", "custom").split()[0]
    assert objective in ("lambdarank", "rank_xendcg", "regression", "custom"), objective

    def step(n, row):
        if "leaf_value" in n:
            n["__leaf__"] = float(n["leaf_value"])
            return None
        assert n["decision_type"] == "<="
        x, t = float(row[n["split_feature"]]), float(n["threshold"])
        left = (not x >= t) if n["default_left"] else x < t
        return n["left_child"] if left else n["right_child"]

    return _walk([t["tree_structure"] for t in dump["tree_info"]], X64, step)


def solr_leaves(body: dict, X32) -> np.ndarray:
    """MultipleAdditiveTreesModel: threshold = Float.parseFloat + 1e-6f (float add);
    left when x <= it; NaN by ``missing`` (isNullSameAsZero false); weight * value."""
    assert body["params"]["isNullSameAsZero"] is False
    col = {f["name"]: i for i, f in enumerate(body["features"])}

    def prep(n):
        if "feature" not in n:
            n["__leaf__"] = float(F32(float(n["value"])))
        else:
            n["__thr__"] = F32(F32(float(n["threshold"])) + F32(1e-6))
            prep(n["left"])
            prep(n["right"])
        return n

    def step(n, row):
        if "feature" not in n:
            return None
        x = row[col[n["feature"]]]
        go = (n["missing"] == "left") if np.isnan(x) else bool(x <= n["__thr__"])
        return n["left"] if go else n["right"]

    trees = body["params"]["trees"]
    assert all(float(t["weight"]) == 1.0 for t in trees)
    return _walk([prep(t["root"]) for t in trees], X32, step)


def ranklib_leaves(text: str, n_features: int, X32) -> np.ndarray:
    """RankLib Ensemble/Split: float features, left when x <= float threshold, 1-based
    feature ids, weight * output; no missing values (NaN given as 0)."""
    import xml.etree.ElementTree as ET

    body = "\n".join(ln for ln in text.splitlines() if not ln.startswith("##"))
    X32 = np.nan_to_num(X32, nan=0.0)

    def prep(s):
        out = s.find("output")
        if out is not None:
            return {"__leaf__": float(out.text)}
        fid = int(s.find("feature").text)
        assert 1 <= fid <= n_features
        left, right = s.findall("split")
        return {
            "f": fid - 1,
            "t": F32(float(s.find("threshold").text)),
            "l": prep(left),
            "r": prep(right),
        }

    trees = []
    for tree in ET.fromstring(body):
        assert float(tree.get("weight")) == 1.0
        trees.append(prep(tree.find("split")))

    def step(n, row):
        if "__leaf__" in n:
            return None
        return n["l"] if row[n["f"]] <= n["t"] else n["r"]

    return _walk(trees, X32, step)


# --- the differential test ----------------------------------------------------------


def f32_tol(leaves: np.ndarray) -> float:
    """Bound on the float32 rounding of a sum of these leaf values."""
    return 4 * 2.0**-23 * (np.abs(leaves).sum(axis=1).max() + 1.0) * leaves.shape[1]


def bias_values(b: Booster, n_iter: int) -> np.ndarray:
    """The exported one-leaf bias trees' values (the initial scores, divided)."""
    div = (n_iter + 1) if b.update_rule == "averaged" else 1
    init = np.asarray(b.init_score, dtype=np.float64) / div
    return np.array([v for v in init if v != 0.0 or n_iter == 0])


def with_bias(leaves: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return np.hstack([np.tile(bias, (leaves.shape[0], 1)), leaves])


def float32_rows(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows as a float32 consumer reads them, and which are finite there."""
    with np.errstate(over="ignore"):
        P32 = P.astype(F32)
    return P32, ~np.isinf(P32).any(axis=1)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_consumers_reach_ltrboost_leaves_on_adversarial_rows(case, seed, tmp_path):
    b, X = train_case(case, seed)
    rng = np.random.default_rng(100 + seed)
    P = adversarial_rows(b, X, rng)
    has_inf = np.isinf(P).any(axis=1)
    with pytest.raises(LTRInputError, match="infinite"):
        b.predict(P[has_inf][:1])
    P = P[~has_inf]
    iterations = [None]
    if b.n_iterations > 1:
        iterations.append(int(rng.integers(0, b.n_iterations)))
    for it in iterations:
        check_every_consumer(b, P, it, tmp_path)


def check_every_consumer(b: Booster, P: np.ndarray, it, tmp_path) -> None:
    n_iter = b._resolve_iterations(it)
    n_trees = n_iter * b.n_outputs
    names = [f"f{i}" for i in range(b.n_features)]
    ours = b.predict(P, iteration=it)
    # the reference routing agrees with ltrboost's predict
    bias = bias_values(b, n_iter)
    L64 = with_bias(our_leaf_values(b, P, n_trees), bias)
    if b.n_outputs == 1:
        np.testing.assert_allclose(L64.sum(axis=1), ours, rtol=1e-9, atol=1e-12)
    P32, fin = float32_rows(P)
    Q = P32[fin].astype(np.float64)  # what float32 consumers compare ltrboost with
    L32 = with_bias(our_leaf_values(b, Q, n_trees), bias)
    ours32 = b.predict(Q, iteration=it)
    leaf32 = L32.astype(F32).astype(np.float64)

    # ONNX (every objective): the score, and the leaf of every tree
    from ltrboost.export._trees import collect
    from ltrboost.export.onnx import build_graph

    sess = ort.InferenceSession(export_bytes(b, "onnx", iteration=it))
    (got,) = sess.run(None, {"features": P32[fin]})
    np.testing.assert_allclose(got, ours32, rtol=0, atol=f32_tol(L32) + 1e-6)
    em = collect(b, iteration=it)
    leaf_sess = ort.InferenceSession(build_graph(em, leaf_ids=True).SerializeToString())
    (leaf_ids,) = leaf_sess.run(None, {"features": P32[fin]})
    for j, tree in enumerate(em.trees):
        vals = tree.value[leaf_ids[:, j].astype(np.int64)]
        np.testing.assert_array_equal(vals, L32[:, j], err_msg=f"onnx tree {j}")

    if b.n_outputs > 1:
        for fmt in ("lightgbm", "xgboost", "xgboost-dump", "solr", "ranklib"):
            with pytest.raises(ExportError, match="onnx"):
                export_bytes(b, fmt, iteration=it)
        return

    # LightGBM: float64 throughout, identical scores; |x| <= 1e-35f reads as 0
    path = tmp_path / "m.txt"
    b.export(path, format="lightgbm", iteration=it)
    got = lgb.Booster(model_file=str(path)).predict(P)
    zeroed = np.where(np.abs(P) <= LGB_ZERO, 0.0, P)
    np.testing.assert_array_equal(got, b.predict(zeroed, iteration=it))

    # Vespa's lightgbm() on dump_model(): double, x < t (docs/deploy.md: a value exactly
    # at a threshold goes right there), trees summed without average_output (GBRank's
    # score T + 1 times ltrboost's).  dump_model() writes thresholds beyond +-1e300
    # (and a missing-vs-present split's DBL_MAX) as +-1e300: rows with such huge
    # values are left out.
    dump = lgb.Booster(model_file=str(path)).dump_model()
    raw_bias = np.asarray(b.init_score, dtype=np.float64) if b.update_rule == "averaged" else bias
    sane = ~(np.abs(P) >= 1e300).any(axis=1)
    got = vespa_lightgbm_leaves(dump, P[sane])
    want = with_bias(our_leaf_values(b, P[sane], n_trees, strict=True), raw_bias)
    np.testing.assert_array_equal(got, want, err_msg="vespa lightgbm()")

    # XGBoost: a float64 matrix is read as float32; same leaves, float32 sums
    path = tmp_path / "m.json"
    b.export(path, format="xgboost", iteration=it)
    bx = xgb.Booster(model_file=str(path))
    got = bx.predict(xgb.DMatrix(P[fin], missing=np.nan), validate_features=False)
    np.testing.assert_allclose(got, ours32, rtol=0, atol=f32_tol(L32))
    # per tree: XGBoost's leaf values by pred_leaf against ltrboost's leaves
    leaf_idx = bx.predict(xgb.DMatrix(P32[fin]), pred_leaf=True, validate_features=False)
    model = json.loads(path.read_text())
    xtrees = model["learner"]["gradient_booster"]["model"]["trees"]
    leaf_idx = leaf_idx.reshape(Q.shape[0], len(xtrees)).astype(np.int64)
    for j, t in enumerate(xtrees):
        vals = np.asarray(t["base_weights"], dtype=F32).astype(np.float64)[leaf_idx[:, j]]
        np.testing.assert_array_equal(vals, leaf32[:, j], err_msg=f"xgboost tree {j}")

    # the dump: OpenSearch / ES LTR (float32), and Vespa (double) on float32 inputs
    dump_text = export_bytes(b, "xgboost-dump", iteration=it).decode()
    got = opensearch_dump_leaves(json.loads(dump_text), names, P32[fin])
    np.testing.assert_array_equal(got, leaf32, err_msg="opensearch model/xgboost+json")
    got = vespa_dump_leaves(json.loads(dump_text), names, Q)
    np.testing.assert_array_equal(got, leaf32, err_msg="vespa xgboost()")
    # the _createmodel body's definition is the same model
    from ltrboost.export import createmodel_body

    body = json.loads(createmodel_body(b, name="m", iteration=it))
    definition = json.loads(body["model"]["model"]["definition"])
    assert definition == json.loads(dump_text)

    # Solr: every row outside the thresholds its warning reports
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        solr = json.loads(export_bytes(b, "solr", iteration=it))
    from ltrboost.export import Float32RangeWarning
    from ltrboost.export.solr import SolrThresholdWarning

    keep = np.ones(Q.shape[0], dtype=bool)
    for x in w:
        if isinstance(x.message, Float32RangeWarning):
            continue  # thresholds beyond float32's range: the float32 rows route alike
        assert isinstance(x.message, SolrThresholdWarning), x.message
        for f, lo, hi in x.message.gaps:
            v = P32[fin][:, names.index(f)]
            keep &= ~((v > lo) & (v <= hi))
    got = solr_leaves(solr, P32[fin][keep])
    np.testing.assert_array_equal(got, leaf32[keep], err_msg="solr")

    # RankLib: NaN reads as 0; exported without the flag only where that is documented
    zero_ok = b.missing == "zero" and not b.trained_with_nan
    Z = np.where(np.isnan(Q), 0.0, Q)
    Lz = with_bias(our_leaf_values(b, Z, n_trees), bias)
    from ltrboost.export._trees import collect as _collect
    from ltrboost.export.ranklib import nan_routes_like_zero

    nan_like_zero = not any(nan_routes_like_zero(t) for t in _collect(b, iteration=it).trees)
    if zero_ok or nan_like_zero:  # no flag needed: missing means 0, or NaN goes there
        text = export_bytes(b, "ranklib", iteration=it).decode()
        if not zero_ok:
            np.testing.assert_array_equal(L32, Lz, err_msg="nan routed unlike 0")
    else:
        with pytest.raises(ExportError, match="assume_no_missing"):
            export_bytes(b, "ranklib", iteration=it)
        text = export_bytes(b, "ranklib", iteration=it, assume_no_missing=True).decode()
    got = ranklib_leaves(text, b.n_features, P32[fin])
    np.testing.assert_array_equal(got, Lz, err_msg="ranklib")


def _tree(threshold: float, missing_left: int, feature: int, value: float):
    """Root split on ``feature`` at ``threshold``, its left child on feature 1 at 0.5."""
    from ltrboost._config import NODE_DTYPE

    nodes = np.zeros(5, dtype=NODE_DTYPE)
    nodes[0] = (0.0, feature, threshold, 0, missing_left, 0, 1, 2, 1.0, 10, 1.0, 0)
    nodes[1] = (0.0, 1, 0.5, 0, 1 - missing_left, 0, 3, 4, 1.0, 5, 1.0, 1)
    nodes[2] = (-0.75 * value, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 5, 1.0, 1)
    nodes[3] = (0.125 * value, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 3, 1.0, 2)
    nodes[4] = (0.5 * value, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 2, 1.0, 2)
    return nodes


HAND_THRESHOLDS = [
    np.inf, 1e300, 1e39, FLT_MAX, float(np.nextafter(F32(FLT_MAX), F32(0))), 16777217.0,
    1 / 3, 0.1, 0.5, 5e-36, -5e-36, 1.2e-38, 1e-45, 1.4e-45, 5e-324, 0.0, -0.0,
    -5e-324, -1e-45, -1e-13, -1e-7, -1.0, float(np.nextafter(F32(-1.0), F32(0))),
    -0.99999997, -32.0, -31.999999, -FLT_MAX, -1e39, -1e300,
]  # fmt: skip


@pytest.mark.parametrize("update_rule", ["additive", "averaged"])
def test_hand_built_thresholds_at_the_edges_of_float32(update_rule, tmp_path):
    """Thresholds no training run here produced: float32's and float64's limits and
    subnormals, LightGBM's zero range, just above negative powers of two, each with
    both NaN directions, in one additive and one averaged (GBRank) model."""
    trees, outputs = [], []
    for i, t in enumerate(HAND_THRESHOLDS):
        for miss in (0, 1):
            trees.append(_tree(t, miss, (i + miss) % 3 * 2, 1.0 + i / 10))
            outputs.append(0)
    b = Booster(
        objective="gbrank" if update_rule == "averaged" else "lambdamart",
        objective_params={},
        init_score=np.array([0.375]),
        trees=trees,
        tree_outputs=outputs,
        n_features=6,
        update_rule=update_rule,
    )
    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 6))
    P = adversarial_rows(b, X, rng)
    P = P[~np.isinf(P).any(axis=1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Solr's threshold warning: checked inside
        for it in (None, 7):
            check_every_consumer(b, P, it, tmp_path)


def test_gbrank_lightgbm_file_counts_its_bias_tree_as_a_round(tmp_path):
    """docs/deploy.md: GBRank's LightGBM file always starts with the initial-score tree
    (0 included: ``average_output`` divides by the trees), so ``num_iteration=k + 1``
    is ltrboost's ``iteration=k``; its XGBoost file has that tree only for a non-zero
    initial score, and ``iteration_range=(0, k)`` there divides by ``T + 1``, not
    ``k + 1`` (the same ranking, another scale)."""
    b, X = train_case(("gbrank", True, np.float32, {}, None), 0)
    assert b.init_score[0] == 0.0
    assert b.n_iterations == 6
    X = np.where(np.abs(X) <= LGB_ZERO, 0.0, X)
    b.export(tmp_path / "m.txt", format="lightgbm")
    lb = lgb.Booster(model_file=str(tmp_path / "m.txt"))
    b.export(tmp_path / "m.json", format="xgboost")
    xb = xgb.Booster(model_file=str(tmp_path / "m.json"))
    assert lb.num_trees() == 7
    assert xb.num_boosted_rounds() == 6
    for k in (1, 3, 6):
        ours = b.predict(X, iteration=k)
        np.testing.assert_array_equal(lb.predict(X, num_iteration=k + 1), ours)
        got = xb.predict(xgb.DMatrix(X), iteration_range=(0, k), validate_features=False)
        np.testing.assert_allclose(got, ours * (k + 1) / 7, rtol=0, atol=1e-5)


def test_vespa_lightgbm_route_clamps_thresholds_at_1e300(tmp_path):
    """docs/deploy.md: LightGBM's ``dump_model()`` (what Vespa's ``lightgbm()`` reads)
    writes a threshold beyond +-1e300, and the ``DBL_MAX`` of a missing-vs-present split,
    as +-1e300: a value of 1e300 or more routes differently there; below, only values
    exactly at a threshold do."""
    trees = [_tree(np.inf, 0, 0, 1.0), _tree(5e300, 1, 2, 2.0), _tree(-5e300, 1, 3, 3.0)]
    b = Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.0]),
        trees=trees,
        tree_outputs=[0, 0, 0],
        n_features=4,
    )
    b.export(tmp_path / "m.txt", format="lightgbm")
    lb = lgb.Booster(model_file=str(tmp_path / "m.txt"))
    dump = lb.dump_model()
    roots = [t["tree_structure"]["threshold"] for t in dump["tree_info"]]
    assert roots == [1e300, 1e300, -1e300]
    X = np.zeros((4, 4))
    X[1, 0] = 2e300  # left in ltrboost (x <= inf) and LightGBM, right in Vespa
    X[2, 2] = 2e300  # left (2e300 <= 5e300), right in Vespa
    X[3, 3] = -2e300  # right (-2e300 > -5e300), left in Vespa
    np.testing.assert_array_equal(lb.predict(X), b.predict(X))
    vespa = vespa_lightgbm_leaves(dump, X).sum(axis=1)
    ours = b.predict(X)
    assert vespa[0] == ours[0]
    assert np.all(vespa[1:] != ours[1:])


def test_xgboost_refuses_float64_values_beyond_float32():
    """docs/deploy.md: a float64 feature value beyond float32's range is infinite for
    the float32 consumers; XGBoost refuses such a matrix."""
    with pytest.raises(xgb.core.XGBoostError, match="too large"):
        xgb.DMatrix(np.array([[1e300, 0.0]]))

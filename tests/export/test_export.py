"""Exports checked by the real consumers (LightGBM, XGBoost, onnxruntime) and by small
evaluators of Solr's and RankLib's documented semantics (tests/export/_consumers.py).

Every model is probed with rows at, just below and just above each split threshold and
with NaN, so a consumer that routes one float32 value differently fails.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import _consumers as C

from ltrboost import Booster, make_dataset, train
from ltrboost._config import NODE_DTYPE
from ltrboost.export import FORMATS, ExportError, export_bytes

OBJECTIVES = [
    "lambdamart",
    "mart",
    "logistic_rank",
    "ranknet",
    "rankboost",
    "gbrank",
    "qbrank",
    "mcrank",
]
SINGLE = [o for o in OBJECTIVES if o != "mcrank"]


def make_data(n_queries=20, docs=15, n_features=6, nan=True, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, n_features)).astype(np.float32)
    X[:, 1] = np.round(X[:, 1] * 2)  # few distinct values
    X[:, -1] = 3.0  # a constant feature
    if nan:
        X[rng.random((n, n_features)) < 0.15] = np.nan
        X[rng.random(n) < 0.4, 2] = np.nan  # a feature often missing
    score = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) - np.isnan(X[:, 2])
    y = np.clip(np.round(score + rng.normal(size=n) * 0.5), 0, 3).astype(np.float64)
    qid = np.repeat(np.arange(n_queries), docs)
    return X, y, qid


@functools.cache
def model(objective="lambdamart", nan=True, n_estimators=4, **params):
    X, y, qid = make_data(nan=nan)
    p = {
        "objective": objective,
        "n_estimators": n_estimators,
        "max_leaf_nodes": 8,
        "min_samples_leaf": 5,
        "random_state": 0,
    }
    p.update(params)
    return train(p, make_dataset(X, y, qid=qid)), X, qid


def probes(b, X, qid):
    P = C.probe_rows(b, X)
    # probe rows get their own query ids (rankings are compared on the real queries)
    return P, np.r_[qid, np.full(P.shape[0] - X.shape[0], -1)]


def f32_tol(b, p) -> float:
    """Bound on float32 rounding of a sum of the model's leaf values."""
    mags = sum(float(np.max(np.abs(t["value"]))) for t in b.trees)
    return 4e-7 * (np.max(np.abs(p)) + mags + float(np.max(np.abs(b.init_score)))) * 4


# --- consumers ------------------------------------------------------------------------


def lgb_scores(b, X, tmp_path, **kw):
    lgb = pytest.importorskip("lightgbm")
    path = tmp_path / "m.txt"
    b.export(path, format="lightgbm", **kw)
    return lgb.Booster(model_file=str(path)).predict(X)


def xgb_booster(b, tmp_path, **kw):
    xgb = pytest.importorskip("xgboost")
    path = tmp_path / "m.json"
    b.export(path, format="xgboost", **kw)
    return xgb, xgb.Booster(model_file=str(path))


def onnx_session(data: bytes):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"])


def check_lightgbm(b, X, qid, tmp_path):
    P, pq = probes(b, X, qid)
    # LightGBM reads a value with |x| <= 1e-35f (kZeroThreshold, a float32 literal) as 0
    # (docs/deploy.md)
    tiny = ((np.abs(P) <= float(np.float32(1e-35))) & (P != 0)).any(axis=1)
    P, pq = P[~tiny], pq[~tiny]
    ours = b.predict(P)
    theirs = lgb_scores(b, P, tmp_path)
    np.testing.assert_allclose(theirs, ours, rtol=1e-12, atol=1e-300)
    C.assert_same_rankings(ours[pq >= 0], theirs[pq >= 0], pq[pq >= 0], tol=0)


def check_xgboost(b, X, qid, tmp_path):
    from ltrboost.export._trees import collect
    from ltrboost.export.xgboost import xgb_tree

    P, pq = probes(b, X, qid)
    ours = b.predict(P)
    xgb, bx = xgb_booster(b, tmp_path)
    dm = xgb.DMatrix(P, missing=np.nan)
    theirs = bx.predict(dm, validate_features=False)
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=f32_tol(b, ours))
    C.assert_same_rankings(ours[pq >= 0], theirs[pq >= 0], pq[pq >= 0], tol=f32_tol(b, ours))
    # same leaf in every tree: XGBoost's leaf ids vs ours mapped to its numbering
    leaves = bx.predict(dm, pred_leaf=True, validate_features=False).reshape(P.shape[0], -1)
    em = collect(b)
    ours_leaf = C.our_leaves(b, P)
    n_bias = sum(t.is_bias for t in em.trees)
    for j, tree in enumerate(em.trees[n_bias:]):
        pos = np.empty(tree.n_nodes, dtype=np.int64)
        pos[xgb_tree(tree).node] = np.arange(tree.n_nodes)
        np.testing.assert_array_equal(leaves[:, n_bias + j], pos[ours_leaf[j]])
    # the dump equals XGBoost's own dump of the exported model
    dump = json.loads(export_bytes(b, "xgboost-dump"))
    theirs_dump = [json.loads(s) for s in bx.get_dump(dump_format="json")]
    assert_dump_equal(dump, theirs_dump)


def assert_dump_equal(a, b):
    if isinstance(a, dict):
        assert isinstance(b, dict), (a, b)
        assert set(a) == set(b), (a, b)
        for k in a:
            assert_dump_equal(a[k], b[k])
    elif isinstance(a, list):
        assert isinstance(b, list)
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_dump_equal(x, y)
    elif isinstance(a, float) or isinstance(b, float):
        assert np.float32(a) == np.float32(b), (a, b)  # XGBoost prints 9 digits
    else:
        assert a == b, (a, b)


def check_onnx(b, X, qid):
    from ltrboost.export._trees import collect
    from ltrboost.export.onnx import build_graph

    P, pq = probes(b, X, qid)
    ours = b.predict(P)
    sess = onnx_session(export_bytes(b, "onnx"))
    (theirs,) = sess.run(None, {"features": P})
    assert theirs.shape == (P.shape[0],)
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=f32_tol(b, ours))
    C.assert_same_rankings(ours[pq >= 0], theirs[pq >= 0], pq[pq >= 0], tol=f32_tol(b, ours))
    em = collect(b)
    (leaves,) = onnx_session(build_graph(em, leaf_ids=True).SerializeToString()).run(
        None, {"features": P}
    )
    n_bias = sum(t.is_bias for t in em.trees)
    for j, leaf in enumerate(C.our_leaves(b, P)):
        np.testing.assert_array_equal(leaves[:, n_bias + j], leaf)


def check_solr(b, X, qid):
    P, pq = probes(b, X, qid)
    ours = b.predict(P)
    import warnings

    from ltrboost.export.solr import SolrThresholdWarning

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        body = json.loads(export_bytes(b, "solr"))
    gaps = [g for x in w if isinstance(x.message, SolrThresholdWarning) for g in x.message.gaps]
    if gaps:
        # thresholds that Solr's +1e-6f cannot hit exactly (near 0, just above negative
        # powers of two): leave out the rows with a value in a reported gap (a few
        # float32 steps above the threshold)
        index = {f["name"]: i for i, f in enumerate(body["features"])}
        in_gap = np.zeros(P.shape[0], dtype=bool)
        for f, lo, hi in gaps:
            assert 0 < hi - lo <= 4 * np.spacing(np.float32(abs(lo) + 1e-6))
            in_gap |= (P[:, index[f]] > lo) & (P[:, index[f]] <= hi)
        P, pq, ours = P[~in_gap], pq[~in_gap], ours[~in_gap]
    C.solr_check_schema(body)
    theirs = C.solr_score(body, P)
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=f32_tol(b, ours))
    C.assert_same_rankings(ours[pq >= 0], theirs[pq >= 0], pq[pq >= 0], tol=f32_tol(b, ours))


def check_ranklib(b, X, qid):
    X = np.nan_to_num(X)  # RankLib has no NaN: an absent feature is 0
    P, pq = probes(b, X, qid)
    P = np.nan_to_num(P)
    ours = b.predict(P)
    text = export_bytes(b, "ranklib", assume_no_missing=True).decode()
    C.ranklib_check_schema(text, b.n_features)
    theirs = C.ranklib_score(text, P)
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=f32_tol(b, ours))
    C.assert_same_rankings(ours[pq >= 0], theirs[pq >= 0], pq[pq >= 0], tol=f32_tol(b, ours))


def check_all(b, X, qid, tmp_path):
    if b.n_outputs == 1:
        check_lightgbm(b, X, qid, tmp_path)
        check_xgboost(b, X, qid, tmp_path)
        check_solr(b, X, qid)
        check_ranklib(b, X, qid)
    check_onnx(b, X, qid)


# --- every objective, with and without NaN --------------------------------------------


@pytest.mark.parametrize("nan", [True, False], ids=["nan", "dense"])
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_every_objective(objective, nan, tmp_path):
    b, X, qid = model(objective, nan)
    check_all(b, X, qid, tmp_path)


def test_mcrank_refused_elsewhere_with_one_line():
    b, _, _ = model("mcrank", True)
    for fmt in FORMATS:
        if fmt == "onnx":
            continue
        with pytest.raises(ExportError, match="formats that can: onnx") as e:
            export_bytes(b, fmt)
        assert "\n" not in str(e.value)
        assert fmt in str(e.value)


# --- shapes of models ---------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {"max_bins": 255, "min_samples_leaf": 1, "min_samples_bin": 1},
        {"max_leaf_nodes": 64, "min_samples_leaf": 1, "growth": "depth_first"},
        {"min_samples_leaf": 1000},  # every tree is one leaf
        {"n_estimators": 3, "learning_rate": 0.7, "subsample": 0.5},
    ],
    ids=["max_bins255", "deep", "one_leaf", "bagged"],
)
def test_model_shapes(params, tmp_path):
    params = dict(params)
    n = params.pop("n_estimators", 4)
    b, X, qid = model("lambdamart", True, n, **params)
    if "min_samples_leaf" in params and params["min_samples_leaf"] == 1000:
        assert all(t.shape[0] == 1 for t in b.trees)
    if "growth" in params:
        assert max(int(t["depth"].max()) for t in b.trees) >= 6
    check_all(b, X, qid, tmp_path)


@pytest.mark.parametrize("objective", ["lambdamart", "gbrank", "mcrank"])
def test_zero_trees(objective, tmp_path):
    b, X, qid = model(objective, True, 2)
    b0 = Booster(
        objective=b.objective,
        objective_params=b.objective_params,
        init_score=b.init_score + 0.25,
        trees=[],
        tree_outputs=[],
        n_features=b.n_features,
        update_rule=b.update_rule,
        n_outputs=b.n_outputs,
    )
    check_all(b0, X, qid, tmp_path)
    # iteration=0 of a trained model: the initial score only
    if b.n_outputs == 1:
        got = lgb_scores(b, X, tmp_path, iteration=0)
        np.testing.assert_allclose(got, b.predict(X, iteration=0), rtol=1e-12)


def _hand_tree(threshold: float, missing_left: int, feature: int = 0):
    nodes = np.zeros(5, dtype=NODE_DTYPE)
    nodes[0] = (0.0, feature, threshold, 0, missing_left, 0, 1, 2, 1.0, 10, 1.0, 0)
    nodes[1] = (0.0, 1, 0.5, 0, 1 - missing_left, 0, 3, 4, 1.0, 5, 1.0, 1)
    nodes[2] = (-0.75, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 5, 1.0, 1)  # leaves as
    nodes[3] = (0.125, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 3, 1.0, 2)  # the grower
    nodes[4] = (0.5, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 2, 1.0, 2)  # writes them
    return nodes


@pytest.mark.parametrize("missing_left", [0, 1])
@pytest.mark.parametrize(
    "threshold",
    [np.inf, 3.4028234663852886e38, 1e39, 0.0, -0.0, 1e-30, 0.1, -2.5, 16777217.0],
)
def test_extreme_thresholds(threshold, missing_left, tmp_path):
    """+inf (a missing-vs-present split, seen on real data), the float32 limits,
    zero, tiny and non-float32 thresholds, each with both NaN directions."""
    b = Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.0]),
        trees=[
            _hand_tree(threshold, missing_left),
            _hand_tree(0.5, 1 - missing_left, 1),
        ],
        tree_outputs=[0, 0],
        n_features=2,
    )
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2)).astype(np.float32) * 3
    big = np.float32(3.4028235e38)
    X[:6, 0] = [big, -big, np.float32(1e-30), 0.0, np.nan, np.float32(16777216.0)]
    qid = np.repeat(np.arange(4), 10)
    check_lightgbm(b, X, qid, tmp_path)
    check_xgboost(b, X, qid, tmp_path)
    check_onnx(b, X, qid)
    check_solr(b, X, qid)
    check_ranklib(b, X, qid)


def test_ranklib_refuses_nan_routing():
    b, _, _ = model("lambdamart", True)
    with pytest.raises(ExportError, match="assume_no_missing") as e:
        export_bytes(b, "ranklib")
    assert "\n" not in str(e.value)


def test_createmodel_body(tmp_path):
    from ltrboost.export import createmodel_body

    b, _, _ = model("lambdamart", True)
    names = [f"feat_{i}" for i in range(b.n_features)]
    body = json.loads(createmodel_body(b, names, name="m1"))
    assert body["model"]["name"] == "m1"
    assert body["model"]["model"]["type"] == "model/xgboost+json"
    trees = json.loads(body["model"]["model"]["definition"])
    assert trees == json.loads(export_bytes(b, "xgboost-dump", names))
    used = {n["split"] for t in trees for n in _walk(t) if "split" in n}
    assert used <= set(names)
    for t in trees:
        for n in _walk(t):
            if "children" in n:
                assert [c["nodeid"] for c in n["children"]] == [n["yes"], n["no"]]
                assert n["missing"] in (n["yes"], n["no"])


def _walk(node):
    yield node
    for c in node.get("children", []):
        yield from _walk(c)


def test_ranker_export_and_feature_names(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    from ltrboost import Ranker

    X, y, qid = make_data(nan=True)
    r = Ranker(n_estimators=3, max_leaf_nodes=4).fit(X, y, qid=qid)
    names = tmp_path / "names.txt"
    names.write_text("".join(f"q_{i}\n" for i in range(X.shape[1])))
    r.export(tmp_path / "m.txt", format="lightgbm", feature_names=names)
    lb = lgb.Booster(model_file=str(tmp_path / "m.txt"))
    assert lb.feature_name() == [f"q_{i}" for i in range(X.shape[1])]
    np.testing.assert_allclose(lb.predict(X), r.predict(X), rtol=1e-12)


@pytest.mark.parametrize(
    ("names", "match"),
    [
        (["a", "b"], "2 feature names given but the model has 6"),
        (
            ["a", "b", "c", "d", "e", "a"],
            r"feature_names\[5\]='a' appears more than once \(also feature_names\[0\]\)",
        ),
        (["a", "b", "c", "d", "e", "f\x01g"], r"'\\x01', which XGBoost's JSON reader"),
    ],
)
def test_bad_feature_names(names, match, tmp_path):
    b, _, _ = model("lambdamart", True)
    with pytest.raises(ExportError, match=match):
        b.export(tmp_path / "m.json", format="xgboost", feature_names=names)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("fmt", "name", "allowed"),
    [
        ("lightgbm", 'title"bm25', ["xgboost", "onnx", "solr"]),
        ("lightgbm", "a:b", ["xgboost", "xgboost-dump"]),
        ("xgboost", "bm25[title]", ["onnx", "solr"]),
        ("xgboost-dump", "ctr<7d", ["lightgbm"]),
    ],
)
def test_feature_names_the_consumer_refuses(fmt, name, allowed, tmp_path):
    """LightGBM refuses JSON punctuation in a feature name (its dump_model() then
    fails), XGBoost '[', ']' and '<': the export says so instead of writing a file
    its consumer cannot use; other formats take the name."""
    b, _, _ = model("lambdamart", True)
    names = ["a", "b", "c", "d", "e", name]
    with pytest.raises(ExportError, match=rf"format {fmt!r}: feature_names\[5\]="):
        b.export(tmp_path / "m.out", format=fmt, feature_names=names)
    assert not list(tmp_path.iterdir())
    for other in allowed:
        b.export(tmp_path / f"m.{other}", format=other, feature_names=names)


def test_unknown_format_and_unwritable(tmp_path):
    b, _, _ = model("lambdamart", True)
    with pytest.raises(ExportError, match="unknown export format 'pmml'; one of: lightgbm"):
        b.export(tmp_path / "m", format="pmml")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        b.export(tmp_path / "no" / "m.txt", format="lightgbm")
    assert not list(tmp_path.iterdir())


def test_import_ltrboost_does_not_import_onnx():
    import subprocess

    code = "import sys, ltrboost; ltrboost.Booster; print('onnx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


def test_threshold_maps_select_the_same_float32_values():
    """For random float64 thresholds (many just off a float32), the float32 values on
    both sides route by the exported comparisons exactly as by ``x <= t``."""
    from ltrboost.export._trees import f32_floor
    from ltrboost.export.solr import solr_effective, solr_threshold

    rng = np.random.default_rng(0)
    f = rng.normal(size=3000).astype(np.float32) * 10.0 ** rng.integers(-5, 6, 3000)
    t = f.astype(np.float64) + rng.choice([-1, 0, 1], 3000) * np.abs(f) * 1e-9
    t = np.r_[t, 0.0, -0.0, 1e-300, -1e-300, 1.5, 3.4e38, 3.5e38]
    m = f32_floor(t)
    with np.errstate(over="ignore"):
        up = np.nextafter(m, np.float32(np.inf))
        down = np.nextafter(m, np.float32(-np.inf))
    for x, expect in ((m, True), (down, True), (up, False)):
        ok = np.isfinite(x)
        assert np.all((x[ok].astype(np.float64) <= t[ok]) == expect)
    # XGBoost / dump: x < nextafter(m) <=> x <= m (no float32 between m and up)
    assert np.all(m < up)
    # Solr: float32(s + 1e-6f) is the smallest reachable threshold >= m; exact when
    # it lies below the next float32
    for mi in m[np.isfinite(m)][:400]:
        s, exact = solr_threshold(mi)
        e = solr_effective(s)
        assert e >= mi
        assert solr_effective(np.nextafter(s, np.float32(-np.inf))) < mi
        assert exact == bool(e < np.nextafter(mi, np.float32(np.inf)))
        near_power = mi < 0 and np.floor(np.log2(-mi)) != np.floor(np.log2(1e-6 - mi))
        if (abs(mi) >= 1e-5 or mi == 0) and not near_power:
            assert exact


def test_solr_thresholds_just_above_negative_powers_of_two(tmp_path):
    """Just above -2**k the written threshold lies below the power, where float32 steps
    are twice as wide, so Solr's +1e-6f lands on every other float32 only: the export
    warns (naming the gap, one float32 step) instead of claiming it only happens near
    0, and Solr routes every value outside the gap as ltrboost does."""
    import warnings

    from ltrboost.export.solr import SolrThresholdWarning, solr_effective, solr_threshold

    up = np.float32(np.inf)
    for k in range(-19, 2):  # below 2**-19 (~1e-6) the gaps near 0 are wider
        m = np.float32(-(2.0**k))
        missed = 0
        for _ in range(8):  # m = -2**k and the float32 values just above it
            s, exact = solr_threshold(m)
            if not exact:  # Solr's threshold is the next float32: a gap of one step
                missed += 1
                assert solr_effective(s) == np.nextafter(m, up)
            m = np.nextafter(m, up)
        assert missed >= 3  # about every other one
    b = Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.0]),
        trees=[_hand_tree(-1.0, 0), _hand_tree(0.5, 1, 1)],
        tree_outputs=[0, 0],
        n_features=2,
    )
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        body = json.loads(export_bytes(b, "solr"))
    (warning,) = [x.message for x in w if isinstance(x.message, SolrThresholdWarning)]
    assert "near 0 and just above negative powers of two" in str(warning)
    (gap,) = warning.gaps
    above = float(np.nextafter(np.float32(-1.0), np.float32(0)))
    assert gap == ("f0", -1.0, above)
    X = np.array([[-1.0, 0.0], [-1.0000001, 1.0], [-0.5, 0.0], [above, 0.7]])
    theirs = C.solr_score(body, X)
    np.testing.assert_allclose(theirs[:3], b.predict(X[:3]), rtol=1e-6)
    assert theirs[3] != pytest.approx(b.predict(X[3:])[0])  # the value in the gap

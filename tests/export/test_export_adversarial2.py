"""Exports against their consumers, second adversarial pass: readers that parse the
numbers of a file differently from the reference library (Vespa's double
expressions)."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import _consumers as C
from test_export import _hand_tree, f32_tol, model

from ltrboost import Booster
from ltrboost.export import export_bytes


def _names(b) -> list[str]:
    return [f"f{i}" for i in range(b.n_features)]


@pytest.mark.parametrize("float_split", [False, True], ids=["vespa-double", "vespa-float"])
def test_vespa_reads_the_dump_split_conditions_as_the_float32_thresholds(float_split):
    """Vespa's ``xgboost()`` compares ``x < v`` in double with ``v`` the JSON number of
    ``split_condition`` (Vespa before its float rounding parses it as a double).  The
    dump wrote the shortest decimal of the float32 condition (0.50000006 for
    0.500000059604...), which is not that float32 value: the float32 input just above a
    threshold of 0.5 went left there and right in ltrboost (and XGBoost)."""
    b = Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.0]),
        trees=[_hand_tree(0.5, 1), _hand_tree(0.1, 0, 1)],
        tree_outputs=[0, 0],
        n_features=2,
    )
    up = np.nextafter(np.float32(0.5), np.float32(1))
    X = np.array([[up, 0.5], [0.5, up], [np.nan, 0.1], [0.25, np.nan]], dtype=np.float32)
    dump = json.loads(export_bytes(b, "xgboost-dump"))
    got = C.vespa_xgboost_score(dump, _names(b), X, float_split)
    np.testing.assert_allclose(got, b.predict(X), rtol=0, atol=1e-6)


@pytest.mark.parametrize("objective", ["lambdamart", "gbrank"])
def test_vespa_xgboost_route_on_probes(objective):
    """Every float32 probe (at, below and above each threshold, NaN) of a trained model
    reaches ltrboost's leaves in Vespa's double evaluation of the dump."""
    b, X, _ = model(objective, True)
    P = C.probe_rows(b, X)
    ours = b.predict(P)
    dump = json.loads(export_bytes(b, "xgboost-dump"))
    for float_split in (False, True):
        got = C.vespa_xgboost_score(dump, _names(b), P, float_split)
        np.testing.assert_allclose(got, ours, rtol=0, atol=f32_tol(b, ours))


@pytest.mark.parametrize("objective", ["lambdamart", "gbrank", "qbrank"])
def test_opensearch_xgboost_json_raw_reads_leaves_from_base_weights(objective):
    """OpenSearch's ``model/xgboost+json+raw`` takes a leaf's value from
    ``base_weights`` (XGBoost keeps the pre-shrinkage weight there) and ignores
    ``base_score``: the export must put the leaf value itself in both places."""
    b, X, _ = model(objective, True)
    P = C.probe_rows(b, X)
    ours = b.predict(P)
    got = C.opensearch_raw_score(json.loads(export_bytes(b, "xgboost")), P)
    np.testing.assert_allclose(got, ours, rtol=0, atol=f32_tol(b, ours))


def test_dataframe_column_names_with_spaces_say_how_to_export():
    """A model fitted on a DataFrame keeps its column names ('page rank'); the export
    refused them naming only the name, not that it was the model's own nor how to give
    the engine's names instead."""
    pd = pytest.importorskip("pandas")
    from ltrboost import Ranker
    from ltrboost.export import ExportError

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 2)), columns=["bm25", "page rank"])
    r = Ranker(n_estimators=2).fit(X, rng.integers(0, 3, 60), qid=np.repeat(np.arange(6), 10))
    with pytest.raises(ExportError) as e:
        export_bytes(r.booster_, "lightgbm")
    msg = str(e.value)
    assert "the model's feature_names[1]='page rank'" in msg
    assert "feature_names=" in msg
    assert "\n" not in msg
    text = export_bytes(r.booster_, "lightgbm", ["bm25", "page_rank"]).decode()
    assert "feature_names=bm25 page_rank" in text


def _two_feature_model_file(tmp_path):
    """A one-tree, two-feature model saved as ``tmp_path / "model.json"``."""
    b = Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.0]),
        trees=[_hand_tree(0.5, 1)],
        tree_outputs=[0],
        n_features=2,
    )
    model_path = tmp_path / "model.json"
    b.save_model(model_path)
    return model_path


def test_feature_names_file_errors_name_the_file(tmp_path, capsys):
    """'2 feature names given but the model has 5 features' (or a duplicate name) did
    not say that the names came from the --feature-names file, nor which file."""
    from ltrboost.cli import main

    model_path = _two_feature_model_file(tmp_path)
    for text, needle in [
        ("bm25\n", "1 feature names given"),
        ("a\na\n", "feature_names[1]='a' (line 2) appears more"),
    ]:
        names = tmp_path / "names.txt"
        names.write_text(text)
        argv = ["export", str(model_path), "-f", "solr", "-o", "-", "--feature-names", str(names)]
        rc = main(argv)
        out, err = capsys.readouterr()
        assert (rc, out) == (2, "")
        assert err.startswith(f"ltrboost: error: {names}: ")
        assert needle in err
        assert err.count("\n") == 1


@pytest.fixture(scope="module")
def deep_model():
    """A trained tree 599 splits deep: each split isolates one document (indicator
    features, ``max_leaf_nodes=600``)."""
    sp = pytest.importorskip("scipy.sparse")
    from ltrboost import make_dataset, train

    n, f = 1200, 600
    X = sp.csr_matrix((np.ones(f, np.float32), (np.arange(f), np.arange(f))), shape=(n, f))
    y = np.zeros(n)
    y[:f] = np.linspace(30, 1, f)
    params = {"objective": "mart", "n_estimators": 1, "max_leaf_nodes": 600,
              "min_samples_leaf": 1, "min_samples_bin": 1, "learning_rate": 1.0}  # fmt: skip
    b = train(params, make_dataset(X, y, qid=np.repeat(np.arange(12), 100)))
    assert int(b.trees[0]["depth"].max()) >= 590
    return b, X.toarray()


@contextlib.contextmanager
def _deep_recursion():
    """json.loads and == of data nested deeper than Python's default recursion limit."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def test_trees_deeper_than_the_recursion_limit_export_to_every_format(deep_model, tmp_path):
    """The dump, Solr and RankLib nest a tree's nodes; building and writing them
    recursed per level: a trained tree 599 deep ended ``ltrboost export -f
    xgboost-dump`` with a RecursionError traceback (Solr and RankLib at ~1000)."""
    b, X = deep_model
    rows = np.r_[X[::7], X[595:605]].astype(np.float32)
    ours = b.predict(rows)
    names = _names(b)
    from ltrboost.export import createmodel_body

    dump_text, body_text = export_bytes(b, "xgboost-dump"), createmodel_body(b)
    solr_text = export_bytes(b, "solr")
    with _deep_recursion():  # only for reading the files back here
        dump = json.loads(dump_text)
        body = json.loads(body_text)
        assert json.loads(body["model"]["model"]["definition"]) == dump
        solr = json.loads(solr_text)
    np.testing.assert_allclose(C.vespa_xgboost_score(dump, names, rows, True), ours, atol=1e-5)
    np.testing.assert_allclose(C.solr_score(solr, rows), ours, atol=1e-5)
    text = export_bytes(b, "ranklib", assume_no_missing=True).decode()
    np.testing.assert_allclose(C.ranklib_score(text, rows), ours, atol=1e-5)
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    sess = ort.InferenceSession(export_bytes(b, "onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(sess.run(None, {"features": rows})[0], ours, atol=1e-5)


def _chain(depth: int):
    """A tree whose split k (on feature 0 at k + 0.5) sends x <= k + 0.5 to leaf k."""
    from ltrboost._config import NODE_DTYPE

    nodes = np.zeros(2 * depth + 1, dtype=NODE_DTYPE)
    for k in range(depth):
        i = 2 * k
        nodes[i] = (0.0, 0, k + 0.5, 0, k % 2, 0, i + 1, i + 2, 1.0, 10, 1.0, k)
        nodes[i + 1] = (0.01 * k, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 5, 1.0, k + 1)
    nodes[-1] = (-1.0, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 5, 1.0, depth)
    return nodes


def test_a_chain_of_1500_splits_exports_to_solr_and_ranklib():
    """Solr's and RankLib's writers recursed per level too (RecursionError at ~1000)."""
    b = Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.25]),
        trees=[_chain(1500)],
        tree_outputs=[0],
        n_features=1,
    )
    X = np.array([[0.0], [1.0], [700.0], [1499.0], [1500.0], [2000.0]], dtype=np.float32)
    ours = b.predict(X)
    solr_text = export_bytes(b, "solr")
    with _deep_recursion():
        solr = json.loads(solr_text)
    np.testing.assert_allclose(C.solr_score(solr, X), ours, atol=1e-6)
    text = export_bytes(b, "ranklib", assume_no_missing=True).decode()
    np.testing.assert_allclose(C.ranklib_score(text, X), ours, atol=1e-6)


@pytest.mark.parametrize("objective", ["lambdamart", "qbrank", "gbrank"])
def test_consumers_explain_the_exported_model(objective, tmp_path):
    """LightGBM's ``pred_contrib`` and XGBoost's ``pred_contribs`` (TreeSHAP, also what
    ``shap.TreeExplainer`` reads) weight each branch by the node's training documents
    (``leaf_count`` / ``internal_count``, XGBoost's ``sum_hessian`` cover): the export
    wrote 0 everywhere and both returned NaN for every feature.  The contributions must
    be finite and add up to the consumer's score; LightGBM's gain importance must not be
    all zero."""
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    b, X, _ = model(objective, True)
    rows = X[:40]
    path = tmp_path / "m.txt"
    b.export(path, format="lightgbm")
    bl = lgb.Booster(model_file=str(path))
    contrib = bl.predict(rows, pred_contrib=True)
    assert np.isfinite(contrib).all()
    raw = bl.predict(rows, raw_score=True)  # gbrank: average_output is not in contrib
    np.testing.assert_allclose(contrib.sum(axis=1), raw, rtol=1e-9, atol=1e-9)
    # the expected value (last column) is the sum of the roots' internal_value
    roots = [t["tree_structure"] for t in bl.dump_model()["tree_info"]]
    expected = sum(r.get("internal_value", r.get("leaf_value")) for r in roots)
    np.testing.assert_allclose(contrib[:, -1], expected, rtol=1e-9, atol=1e-12)
    gain = bl.feature_importance("gain")
    assert gain.sum() > 0
    np.testing.assert_array_equal(gain > 0, bl.feature_importance("split") > 0)
    path = tmp_path / "m.json"
    b.export(path, format="xgboost")
    bx = xgb.Booster(model_file=str(path))
    dm = xgb.DMatrix(rows, missing=np.nan)
    contrib = bx.predict(dm, pred_contribs=True, validate_features=False)
    assert np.isfinite(contrib).all()
    np.testing.assert_allclose(
        contrib.sum(axis=1), bx.predict(dm, validate_features=False), rtol=0, atol=1e-5
    )


@pytest.mark.parametrize("case", ["yetirank", "init_model", "weights", "early_stopped"])
def test_models_the_objective_tests_leave_out(case, tmp_path):
    """Exports of models test_export's objective list does not train: YetiRank, a
    continued model, sample weights, and an early-stopped model (exported, like
    ``predict``, at its best iteration), each scored by every consumer on probes."""
    from test_export import check_all, check_lightgbm, make_data

    from ltrboost import make_dataset, train

    X, y, qid = make_data(nan=True)
    p = {"objective": "lambdamart", "n_estimators": 4, "max_leaf_nodes": 8,
         "min_samples_leaf": 5, "random_state": 0}  # fmt: skip
    ds = make_dataset(X, y, qid=qid)
    if case == "yetirank":
        b = train({**p, "objective": "yetirank"}, ds)
    elif case == "init_model":
        g = {**p, "objective": "gbrank"}  # averaged update: T + 1 spans both runs
        b = train(g, ds, init_model=train(g, ds))
    elif case == "weights":
        w = np.random.default_rng(1).random(len(y)) + 0.5
        b = train(p, make_dataset(X, y, qid=qid, sample_weight=w))
    else:
        vX, vy, vq = make_data(nan=True, seed=5)
        p.update(n_estimators=40, early_stopping_rounds=2, learning_rate=0.9)
        b = train(p, ds, [("v", make_dataset(vX, vy, qid=vq))])
        assert 0 < b.best_iteration < len(b.trees)
        # the leaf-by-leaf checks walk every tree: compare scores at the best iteration
        check_lightgbm(b, X, qid, tmp_path)
        P = C.probe_rows(b, X)
        ours = b.predict(P)
        xgb = pytest.importorskip("xgboost")
        path = tmp_path / "m.json"
        b.export(path, format="xgboost")
        got = xgb.Booster(model_file=str(path)).predict(
            xgb.DMatrix(P, missing=np.nan), validate_features=False
        )
        np.testing.assert_allclose(got, ours, rtol=0, atol=f32_tol(b, ours))
        return
    check_all(b, X, qid, tmp_path)


class _FullStdout:
    """A stdout redirected to a full disk."""

    class buffer:  # sys.stdout.buffer
        @staticmethod
        def write(data):
            import errno

            raise OSError(errno.ENOSPC, "No space left on device")

        @staticmethod
        def flush():
            pass

    @staticmethod
    def flush():
        pass

    @staticmethod
    def write(text):
        return _FullStdout.buffer.write(text)


@pytest.mark.parametrize("to_stdout", ["model", "createmodel"])
def test_cli_stdout_failure_leaves_no_file(tmp_path, capsys, monkeypatch, to_stdout):
    """``-o FILE --createmodel -`` (or ``-o - --createmodel FILE``) wrote the file, then
    failed printing the other output ('[Errno 28] No space left on device', naming
    nothing): an error left a file behind, against "an error leaves nothing behind"."""
    from ltrboost.cli import main

    model_path = _two_feature_model_file(tmp_path)
    out = tmp_path / "out.json"
    argv = ["export", str(model_path), "-f", "xgboost-dump"]
    if to_stdout == "model":
        argv += ["-o", "-", "--createmodel", str(out)]
    else:
        argv += ["-o", str(out), "--createmodel", "-"]
    monkeypatch.setattr(sys, "stdout", _FullStdout)
    rc = main(argv)
    monkeypatch.undo()
    _, err = capsys.readouterr()
    assert rc == 2
    assert err == "ltrboost: error: stdout: No space left on device\n"
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]
    # and with a working stdout both outputs arrive
    assert main(argv) == 0
    printed, _ = capsys.readouterr()
    assert out.exists()
    assert json.loads(printed)


def test_feature_names_that_are_no_list_are_an_export_error():
    import numpy as np

    from ltrboost import train
    from ltrboost.dataset import make_dataset
    from ltrboost.export import ExportError, export_bytes

    rng = np.random.default_rng(0)
    ds = make_dataset(rng.random((40, 3)), rng.integers(0, 3, 40), qid=np.repeat(np.arange(4), 10))
    booster = train({"objective": "lambdamart", "n_estimators": 2, "min_samples_leaf": 2}, ds)
    with pytest.raises(ExportError, match="feature_names must be a list of names"):
        export_bytes(booster, "solr", feature_names=3)

"""Exports of adversarial trees, eleventh pass: very deep chains.

ltrboost grows leaf-wise and ``max_leaf_nodes`` has no upper bound, so a tree can be a
chain hundreds of levels deep.  The XGBoost dump nests every level twice (a node
object inside its parent's ``children`` array): a tree of depth 500 is a JSON document
1002 levels deep, beyond the 1000 that Jackson reads by default
(``StreamReadConstraints.DEFAULT_MAX_DEPTH``; OpenSearch's ``opensearch.xcontent.depth.max``
defaults to it), so the OpenSearch / Elasticsearch LTR plugin and Vespa's ``xgboost()``
refuse the file.  The export warned of nothing.  ``export_model(createmodel=)`` and
``ltrboost export --createmodel`` also gave every warning of the dump twice (the body's
definition is the dump, built again).  Chains of depth 70 and 254 (both
directions, NaN both ways, additive and averaged) score as ltrboost in every consumer.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from ltrboost import Booster
from ltrboost._config import NODE_DTYPE
from ltrboost.export import createmodel_body, export_bytes, export_model

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
JACKSON_MAX_DEPTH = 1000  # StreamReadConstraints.DEFAULT_MAX_DEPTH


def _chain(depth: int, left_continues: bool, n_features: int = 3) -> np.ndarray:
    """A chain ``depth`` splits deep: each split has one leaf child and one that goes
    on (left or right); NaN directions alternate."""
    nodes = np.zeros(2 * depth + 1, dtype=NODE_DTYPE)
    k = 0
    sign = 1.0 if left_continues else -1.0
    for d in range(depth):
        leaf, nxt = k + 1, k + 2
        left, right = (nxt, leaf) if left_continues else (leaf, nxt)
        t = sign * (d - depth / 2) * 0.01
        nodes[k] = (0.0, d % n_features, t, 0, d % 2, 0, left, right, 1.0, 10, 1.0, d)
        nodes[leaf] = (0.01 * ((d * 7) % 13 - 6), -1, 0.0, 0, 0, 1, -1, -1, 0.0, 1, 1.0, d + 1)
        k = nxt
    nodes[k] = (0.5, -1, 0.0, 0, 0, 1, -1, -1, 0.0, 1, 1.0, depth)
    return nodes


def _model(*depths: int, update_rule: str = "additive") -> Booster:
    trees = [_chain(d, i % 2 == 1) for i, d in enumerate(depths)]
    return Booster(
        objective="gbrank" if update_rule == "averaged" else "lambdamart",
        objective_params={},
        init_score=np.array([0.25]),
        trees=trees,
        tree_outputs=[0] * len(trees),
        n_features=3,
        update_rule=update_rule,
    )


def _nesting(text: str) -> int:
    """The deepest nesting of objects and arrays in a JSON text (counted outside
    strings), as Jackson counts it against its limit."""
    deepest = level = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            level += 1
            deepest = max(deepest, level)
        elif ch in "]}":
            level -= 1
    return deepest


@pytest.mark.parametrize("update_rule", ["additive", "averaged"])
@pytest.mark.parametrize("depth", [70, 254])
def test_deep_chains_score_as_ltrboost_in_every_consumer(depth, update_rule, tmp_path):
    pytest.importorskip("lightgbm")
    pytest.importorskip("xgboost")
    pytest.importorskip("onnxruntime")
    from test_advexport6_adversarial4 import adversarial_rows, check_every_consumer

    b = _model(depth, depth // 2 + 1, update_rule=update_rule)
    rng = np.random.default_rng(depth)
    P = adversarial_rows(b, rng.normal(size=(40, 3)) * depth * 0.01, rng)
    P = P[~np.isinf(P).any(axis=1)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Solr's threshold warning: checked inside
        check_every_consumer(b, P, None, tmp_path)


def test_a_dump_jackson_reads_by_default_exports_without_a_warning():
    b = _model(499, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = export_bytes(b, "xgboost-dump").decode()
        body = json.loads(createmodel_body(b, name="m"))
    assert _nesting(text) == JACKSON_MAX_DEPTH
    assert _nesting(body["model"]["model"]["definition"]) == JACKSON_MAX_DEPTH


def test_a_dump_deeper_than_jackson_reads_warns_naming_the_tree(tmp_path):
    from ltrboost.export.xgboost import DumpDepthWarning

    b = _model(3, 500, 2)
    with pytest.warns(DumpDepthWarning) as rec:
        text = export_bytes(b, "xgboost-dump").decode()
    assert _nesting(text) == 1002 > JACKSON_MAX_DEPTH
    (w,) = [r.message for r in rec if isinstance(r.message, DumpDepthWarning)]
    msg = str(w)
    assert "\n" not in msg
    # the tree as the dump numbers it (0: the initial score's one-leaf tree), its depth
    for needle in ("tree 2", "500 levels", "1002", "opensearch.xcontent.depth.max", "max_depth"):
        assert needle in msg, msg
    assert (w.tree, w.depth, w.nesting) == (2, 500, 1002)
    # the createmodel body's definition is the same dump: warned once for both files
    with pytest.warns(DumpDepthWarning) as rec:
        export_model(b, tmp_path / "m.json", "xgboost-dump", createmodel=tmp_path / "c.json")
    assert sum(isinstance(r.message, DumpDepthWarning) for r in rec) == 1
    body = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert _nesting(body["model"]["model"]["definition"]) == 1002


@pytest.mark.parametrize("body_to", ["file", "stdout"])
def test_cli_prints_the_depth_warning_once(body_to, tmp_path, capsys):
    from ltrboost.cli import main

    model = tmp_path / "deep.json"
    _model(600).save_model(model)
    body = "-" if body_to == "stdout" else str(tmp_path / "c.json")
    out = tmp_path / "d.json"
    argv = ["export", str(model), "--format", "xgboost-dump", "--output", str(out)]
    rc = main([*argv, "--createmodel", body])
    err = capsys.readouterr().err
    assert rc == 0
    lines = [ln for ln in err.splitlines() if "levels" in ln]
    assert len(lines) == 1, err
    assert lines[0].startswith("ltrboost: warning: xgboost-dump:"), lines[0]
    assert out.exists()


def test_other_formats_do_not_warn_of_depth():
    b = _model(600)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for fmt in ("lightgbm", "xgboost", "onnx"):
            export_bytes(b, fmt)


def test_docs_state_the_dump_depth_limit():
    flat = " ".join(DEPLOY.split())
    assert "DumpDepthWarning" in flat
    assert "opensearch.xcontent.depth.max" in flat
    assert "499" in flat


def test_createmodel_repeats_no_warning_of_the_dump(tmp_path):
    """export_model(createmodel=) built the dump twice (the file and the body's
    definition) and gave each of its warnings twice (a threshold beyond float32 here)."""
    from ltrboost.export import Float32RangeWarning

    b = _model(2)
    b.trees[0]["num_threshold"][0] = 1e300
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        export_model(b, tmp_path / "m.json", "xgboost-dump", createmodel=tmp_path / "c.json")
    assert [type(r.message) for r in rec] == [Float32RangeWarning]

"""ONNX graph with an ``ai.onnx.ml`` ``TreeEnsembleRegressor`` (the ``onnx`` extra).

Input ``features``: float32 ``[N, n_features]``; output ``score``: float32 ``[N]``.
Nodes use ``BRANCH_LEQ`` (``x <= value``) with ``value`` the largest float32 ``<= t``,
which selects the same float32 inputs as ltrboost's float64 ``x <= t`` (a ``+inf``
threshold stays ``+inf``: every present value goes left), and
``nodes_missing_value_tracks_true`` carries the NaN direction (the "true" branch is the
left child).  onnxruntime evaluates in float32, so scores differ from ltrboost's by
rounding only; every row reaches the same leaves.

The initial scores are one-leaf trees (as in the other formats).  McRank (one tree per
grade) becomes a ``C``-target ensemble (each tree adds to its grade's target), then
``Softmax`` over the grades and a ``MatMul`` with ``[0, 1, .., C-1]``: the expected
grade that ``Booster.predict`` returns.

The input is positional (column ``i`` is feature ``i``); the names are metadata only:
``feature_names_json``, a JSON array of every name as written, and ``feature_names``,
the names joined by spaces, written only when no name is empty or holds whitespace (it
would split into other names).  ``objective`` is ltrboost's objective.
"""

from __future__ import annotations

import json

import numpy as np

from ltrboost.export._trees import ExportModel, f32_floor

OPSET = 17
ML_OPSET = 3


def _require_onnx():
    try:
        import onnx
    except ImportError:
        from ltrboost.export._trees import ExportError

        raise ExportError(
            "format 'onnx' needs the onnx package: pip install 'ltrboost[onnx]'"
        ) from None
    import onnx

    return onnx


def _ensemble_attrs(model: ExportModel, leaf_ids: bool = False) -> dict:
    """TreeEnsembleRegressor attributes; ``leaf_ids``: one target per tree whose value
    is the (ltrboost) node index of the leaf reached -- a test/diagnostic graph."""
    tid, nid, fid, val, mode, tru, fal, miss = ([] for _ in range(8))
    t_tid, t_nid, t_ids, t_w = ([] for _ in range(4))
    trees = model.trees
    for t_index, tree in enumerate(trees):
        m = f32_floor(tree.threshold)
        for k in range(tree.n_nodes):
            tid.append(t_index)
            nid.append(k)
            miss.append(int(bool(tree.missing_left[k]) and not tree.is_leaf[k]))
            if tree.is_leaf[k]:
                fid.append(0)
                val.append(0.0)
                mode.append("LEAF")
                tru.append(0)
                fal.append(0)
                t_tid.append(t_index)
                t_nid.append(k)
                t_ids.append(t_index if leaf_ids else tree.output)
                t_w.append(float(k) if leaf_ids else float(tree.value[k]))
            else:
                fid.append(int(tree.feature[k]))
                val.append(float(m[k]))
                mode.append("BRANCH_LEQ")
                tru.append(int(tree.left[k]))
                fal.append(int(tree.right[k]))
    n_targets = len(trees) if leaf_ids else model.n_outputs
    attrs = {
        "n_targets": max(n_targets, 1),
        "aggregate_function": "SUM",
        "post_transform": "NONE",
        "nodes_treeids": tid,
        "nodes_nodeids": nid,
        "nodes_featureids": fid,
        "nodes_values": val,
        "nodes_modes": mode,
        "nodes_truenodeids": tru,
        "nodes_falsenodeids": fal,
        "nodes_missing_value_tracks_true": miss,
        "nodes_hitrates": [1.0] * len(tid),
        "target_treeids": t_tid,
        "target_nodeids": t_nid,
        "target_ids": t_ids,
        "target_weights": t_w,
    }
    return {k: v for k, v in attrs.items() if v is not None}


def build_graph(model: ExportModel, leaf_ids: bool = False):
    onnx = _require_onnx()
    from onnx import TensorProto, helper

    model.check_float32_values("onnx")
    model.warn_float32_thresholds("onnx")
    model.check_float32_sums("onnx")

    nodes = []
    inits = []
    attrs = _ensemble_attrs(model, leaf_ids=leaf_ids)
    if not attrs["nodes_treeids"]:  # no trees at all: a constant single-leaf tree
        attrs.update(
            nodes_treeids=[0], nodes_nodeids=[0], nodes_featureids=[0],
            nodes_values=[0.0], nodes_modes=["LEAF"], nodes_truenodeids=[0],
            nodes_falsenodeids=[0], nodes_missing_value_tracks_true=[0],
            nodes_hitrates=[1.0], target_treeids=[0], target_nodeids=[0],
            target_ids=[0], target_weights=[0.0],
        )  # fmt: skip
    raw_name = "raw" if (model.n_outputs > 1 or not leaf_ids) else "leaves"
    nodes.append(
        helper.make_node(
            "TreeEnsembleRegressor",
            ["features"],
            [raw_name if not leaf_ids else "leaves"],
            domain="ai.onnx.ml",
            name="ltrboost_trees",
            **attrs,
        )
    )
    if leaf_ids:
        out = helper.make_tensor_value_info("leaves", TensorProto.FLOAT, [None, attrs["n_targets"]])
    else:
        if model.n_outputs > 1:
            nodes.append(helper.make_node("Softmax", ["raw"], ["proba"], axis=1))
            grades = np.arange(model.n_outputs, dtype=np.float32).reshape(-1, 1)
            inits.append(helper.make_tensor("grades", TensorProto.FLOAT, grades.shape,
                                            grades.ravel().tolist()))  # fmt: skip
            nodes.append(helper.make_node("MatMul", ["proba", "grades"], ["expected"]))
            flat_in = "expected"
        else:
            flat_in = "raw"
        inits.append(helper.make_tensor("flat", TensorProto.INT64, [1], [-1]))
        nodes.append(helper.make_node("Reshape", [flat_in, "flat"], ["score"]))
        out = helper.make_tensor_value_info("score", TensorProto.FLOAT, [None])
    graph = helper.make_graph(
        nodes,
        "ltrboost",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [None, model.n_features])],
        [out],
        initializer=inits,
    )
    m = helper.make_model(
        graph,
        opset_imports=[
            helper.make_opsetid("", OPSET),
            helper.make_opsetid("ai.onnx.ml", ML_OPSET),
        ],
        producer_name="ltrboost",
    )
    m.ir_version = 8
    names = model.feature_names
    # feature_names_json: every name as written (a JSON array); feature_names, space-
    # joined as ever, only where that splits back into the names (none empty, none
    # holding whitespace): "BM25 title" would read as two names there
    if all(n and not any(c.isspace() for c in n) for n in names):
        meta = m.metadata_props.add()
        meta.key = "feature_names"
        meta.value = " ".join(names)
    meta = m.metadata_props.add()
    meta.key = "feature_names_json"
    meta.value = json.dumps(names, ensure_ascii=False)
    meta = m.metadata_props.add()
    meta.key = "objective"
    meta.value = model.objective
    onnx.checker.check_model(m)
    return m


def to_onnx_bytes(model: ExportModel) -> bytes:
    return build_graph(model).SerializeToString()

"""XGBoost JSON model (``save_model`` schema) and its tree dump (OpenSearch/ES, Vespa).

XGBoost (``GetNextNode`` in ``src/predictor/predict_fn.h``) converts features to float32
and goes left ("yes") when ``x < split_condition`` (float32), and takes ``default_left``
for NaN.  ltrboost's ``x <= t`` (float64) selects, among float32 ``x``, exactly ``x <=
m`` with ``m`` the largest float32 ``<= t``, i.e. ``x < nextafter(m, +inf)``: that is
the exported ``split_condition``.  When ``m`` is the largest finite float32 (or ``t =
+inf``, a missing-vs-present split) no finite float32 condition sends every finite value
left; the node is written with its children swapped and the condition ``-FLT_MAX`` (``x
< -FLT_MAX`` is false for every finite ``x``), and the NaN side swapped too.

Leaf values and sums are float32 in XGBoost: scores differ from ltrboost's float64 ones
by rounding only (every row reaches the same leaves).  ``base_score`` is 0: the initial
score is a one-leaf tree, which the dump (which has no base score) needs anyway.

``objective.name`` is ``rank:pairwise`` for every model: XGBoost refuses a name it does
not know and OpenSearch's ``model/xgboost+json+raw`` parser accepts only a few, and this
one adds nothing to the raw score.  The objective ltrboost trained with (``lambdamart``,
``custom:<function name>`` for a Python callable, ...) is the learner attribute
``ltrboost_objective`` (``xgboost.Booster.attr("ltrboost_objective")``).

The tree dump is what ``Booster.get_dump(dump_format="json")`` prints for the exported
model; the OpenSearch / Elasticsearch LTR plugin reads it as ``model/xgboost+json``
(``NaiveAdditiveDecisionTree``: NaN follows ``missing``, otherwise ``x <
split_condition`` goes to ``yes``; trees summed with weight 1, no base score) and
Vespa's ``xgboost(...)`` rank feature reads it too, comparing in double: its split
conditions are therefore written as the float32 conditions' exact values (17 digits),
which every reader, float32 or double, parses to the same number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ltrboost.export._trees import (
    FLT_MAX,
    XGBOOST_FORBIDDEN,
    ExportModel,
    ExportTree,
    f32_floor,
    f32_json,
    json_text,
)


@dataclass
class XGBTree:
    """A tree in XGBoost's layout: node i's arrays, children by index, -1 for leaves."""

    left: list[int]
    right: list[int]
    parent: list[int]
    feature: list[int]
    cond: list[float]  # split condition (float32 value) or leaf value
    cover: list[float]  # training documents (XGBoost's TreeSHAP weights branches by it)
    gain: list[float]  # at most FLT_MAX
    default_left: list[int]
    is_leaf: list[bool]
    depth: list[int]
    node: list[int]  # the ltrboost node index of each XGBoost node


def xgb_tree(tree: ExportTree) -> XGBTree:
    m_all = f32_floor(tree.threshold)
    # swapped: nodes written with children exchanged (see the module docstring)
    swapped = (~tree.is_leaf) & (m_all >= np.float32(FLT_MAX))
    # breadth-first numbering of the written tree (XGBoost's own order: a left child
    # always comes before its sibling, which its predictor relies on)
    order = [0]
    i = 0
    while i < len(order):
        k = order[i]
        if not tree.is_leaf[k]:
            a, b = int(tree.left[k]), int(tree.right[k])
            order += [b, a] if swapped[k] else [a, b]
        i += 1
    idx = {k: i for i, k in enumerate(order)}
    n = len(order)
    out = XGBTree(
        [-1] * n, [-1] * n, [2147483647] * n, [0] * n, [0.0] * n,
        tree.count[order].astype(np.float64).tolist(),
        np.minimum(tree.gain, FLT_MAX)[order].tolist(),
        [0] * n, [True] * n, [0] * n, order,
    )  # fmt: skip
    for i, k in enumerate(order):
        if tree.is_leaf[k]:
            out.cond[i] = float(np.float32(tree.value[k]))
            continue
        out.is_leaf[i] = False
        lo, hi = idx[int(tree.left[k])], idx[int(tree.right[k])]
        miss_left = bool(tree.missing_left[k])
        if swapped[k]:  # every finite float32 goes to ltrboost's left child
            lo, hi, miss_left = hi, lo, not miss_left
            c = -np.float32(FLT_MAX)
        else:
            c = np.nextafter(m_all[k], np.float32(np.inf))
        out.left[i], out.right[i] = lo, hi
        out.parent[lo] = out.parent[hi] = i
        out.depth[lo] = out.depth[hi] = out.depth[i] + 1
        out.feature[i] = int(tree.feature[k])
        out.cond[i] = float(c)
        out.default_left[i] = int(miss_left)
    return out


def to_xgboost_dict(model: ExportModel) -> dict:
    model.check_single_output("xgboost")
    model.check_name_characters("xgboost", XGBOOST_FORBIDDEN)
    model.check_float32_values("xgboost")
    model.warn_float32_thresholds("xgboost")
    model.check_float32_sums("xgboost")
    trees = []
    for t_id, tree in enumerate(model.trees):
        t = xgb_tree(tree)
        n = len(t.left)
        trees.append(
            {
                "base_weights": [
                    f32_json(v) if lf else 0.0 for v, lf in zip(t.cond, t.is_leaf, strict=True)
                ],
                "categories": [],
                "categories_nodes": [],
                "categories_segments": [],
                "categories_sizes": [],
                "default_left": t.default_left,
                "id": t_id,
                "left_children": t.left,
                "loss_changes": t.gain,
                "parents": t.parent,
                "right_children": t.right,
                "split_conditions": [f32_json(v) for v in t.cond],
                "split_indices": t.feature,
                "split_type": [0] * n,
                # the documents, not ltrboost's hessian sums: a pairwise objective's
                # can be 0, and TreeSHAP divides by the cover
                "sum_hessian": t.cover,
                "tree_param": {
                    "num_deleted": "0",
                    "num_feature": str(model.n_features),
                    "num_nodes": str(n),
                    "size_leaf_vector": "1",
                },
            }
        )
    n_trees = len(trees)
    return {
        "learner": {
            # objective.name below must be one XGBoost and OpenSearch's raw parser know
            # (it only selects the identity output); the attribute says what the model
            # was trained with (Booster.attr("ltrboost_objective")), custom ones included
            "attributes": {"ltrboost_objective": model.objective},
            "feature_names": list(model.feature_names),
            "feature_types": ["float"] * model.n_features,
            "gradient_booster": {
                "model": {
                    "gbtree_model_param": {
                        "num_parallel_tree": "1",
                        "num_trees": str(n_trees),
                    },
                    "iteration_indptr": list(range(n_trees + 1)),
                    "tree_info": [0] * n_trees,
                    "trees": trees,
                },
                "name": "gbtree",
            },
            "learner_model_param": {
                "base_score": "0E0",
                "boost_from_average": "0",
                "num_class": "0",
                "num_feature": str(model.n_features),
                "num_target": "1",
            },
            "objective": {
                "name": "rank:pairwise",
                "lambdarank_param": {
                    "lambdarank_num_pair_per_sample": "1",
                    "lambdarank_pair_method": "mean",
                    "lambdarank_unbiased": "0",
                    "lambdarank_bias_norm": "1",
                    "ndcg_exp_gain": "1",
                },
            },
        },
        "version": [2, 1, 0],
    }


def to_xgboost(model: ExportModel) -> str:
    # UTF-8, not \uXXXX escapes: XGBoost's JSON reader keeps an escape as its six
    # characters, so feature_names would no longer match a non-ASCII name
    return json.dumps(to_xgboost_dict(model), separators=(",", ":"), ensure_ascii=False) + "\n"


def dump_trees(model: ExportModel) -> list[dict]:
    """The trees as ``get_dump(dump_format="json")`` objects, names as ``split``."""
    model.check_single_output("xgboost-dump")
    model.check_name_characters("xgboost-dump", XGBOOST_FORBIDDEN)
    model.check_float32_values("xgboost-dump")
    model.warn_float32_thresholds("xgboost-dump")
    model.check_float32_sums("xgboost-dump")
    names = model.feature_names
    return [_dump_tree(xgb_tree(tree), names) for tree in model.trees]


def _dump_tree(t: XGBTree, names: list[str]) -> dict:
    """The root's object, children nested (built without recursion: trees can be
    deeper than Python's recursion limit)."""
    nodes: list[dict] = []
    for i in range(len(t.left)):
        if t.is_leaf[i]:
            nodes.append({"nodeid": i, "leaf": f32_json(t.cond[i])})
            continue
        yes, no = t.left[i], t.right[i]
        nodes.append(
            {
                "nodeid": i,
                "depth": t.depth[i],
                "split": names[t.feature[i]],
                # the float32 condition's exact value (17 digits), not its shortest
                # decimal: Vespa's xgboost() compares x < v in double with v parsed as a
                # double, and 0.50000006 (for 0.500000059604...) would send that float32
                # value to "yes"
                "split_condition": float(np.float32(t.cond[i])),
                "yes": yes,
                "no": no,
                "missing": yes if t.default_left[i] else no,
                "children": [],
            }
        )
    for i, node in enumerate(nodes):
        if not t.is_leaf[i]:
            node["children"] += [nodes[t.left[i]], nodes[t.right[i]]]
    return nodes[0]


def to_xgboost_dump(model: ExportModel) -> str:
    return json_text(dump_trees(model), indent=1) + "\n"


def createmodel_body(model: ExportModel, name: str) -> dict:
    """Body of ``POST _ltr/_featureset/<set>/_createmodel`` (OpenSearch / ES LTR)."""
    definition = json_text(dump_trees(model))
    return {
        "model": {
            "name": name,
            "model": {"type": "model/xgboost+json", "definition": definition},
        }
    }

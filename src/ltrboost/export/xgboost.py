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

``objective.name`` is XGBoost's name of the loss the model was trained with where XGBoost
has one whose prediction is the raw score and OpenSearch's ``model/xgboost+json+raw``
parser knows it (it accepts ``rank:ndcg``, ``rank:map``, ``rank:pairwise``,
``reg:linear`` and ``binary:logitraw`` as raw scores, refuses any other name; XGBoost
refuses names it does not know), else ``rank:pairwise`` (no XGBoost name; the loss is
in ``ltrboost_objective``):

==================================================  ===================
ltrboost objective                                  ``objective.name``
==================================================  ===================
``lambdamart``, ``lambda_metric="ndcg"``            ``rank:ndcg``
(unbiased too)
``lambdamart``, ``lambda_metric="map"``             ``rank:map``
``ranknet``                                         ``rank:pairwise``
``mart`` (least squares on the grades)              ``reg:linear``
``lambdamart`` with ``"err"``, ``xendcg``,          ``rank:pairwise``
``logistic_rank``, ``rankboost``, ``gbrank``,       (no XGBoost name)
``qbrank``, ``yetirank``, a Python callable
``mcrank``                                          refused
==================================================  ===================

``reg:linear`` is XGBoost's old name of ``reg:squarederror``: XGBoost loads it with a
deprecation warning (and calls it ``reg:squarederror`` from then on), OpenSearch and
Elasticsearch LTR know only the old one.  XGBoost's ``binary:logitraw`` is not
``logistic_rank``'s loss (LR-1 is ``log(1 + exp(-2 t s))``, per-grade scaled; XGBoost's
``log(1 + exp(-t s))``), and names with an output transform (``binary:logistic``,
``reg:logistic``: a sigmoid) are never written, so XGBoost and OpenSearch predict
ltrboost's scores.  ``rank:ndcg``, ``rank:map`` and RankNet's ``rank:pairwise`` carry,
in ``lambdarank_param``, what XGBoost can represent of ltrboost's pair parameters:
``pair_method="topk"`` is ``lambdarank_pair_method="topk"`` with
``lambdarank_num_pair_per_sample`` the ``truncation_level``; ``"all"`` (or no
truncation) is ``"topk"`` with k = 4294967294, XGBoost's largest (its 2**32 - 1 means
"not set", i.e. k = 32); ``"sampled"`` is ``"mean"`` with ``pairs_per_sample``.
``ndcg_exp_gain`` is ``gain == "exp"``; ``lambdarank_normalization`` and
``lambdarank_score_normalization`` are ``lambda_normalization`` (RankNet's: ``"0"``).
``sigma``, ``relevance_threshold``, an NDCG truncation other than the pairs' and
explicit preference pairs have no XGBoost parameter.  ``lambdarank_unbiased`` stays
``"0"`` for Unbiased LambdaMART: XGBoost refuses ``"1"`` without its own bias arrays
(``ti+``, ``tj-``), and the debiasing is training only (prediction never uses
positions).  Models with no XGBoost name keep XGBoost's default ``lambdarank_param``.
The objective ltrboost trained with (``lambdamart``, ``custom:<function name>`` for a
Python callable, ...) is the learner attribute ``ltrboost_objective``
(``xgboost.Booster.attr("ltrboost_objective")``).

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
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltrboost.export._trees import (
    FLT_MAX,
    ExportModel,
    ExportTree,
    f32_floor,
    f32_json,
    json_text,
)

# no XGBoost name for the loss: the name written (raw score in XGBoost and OpenSearch)
NO_XGBOOST_NAME = "rank:pairwise"
# XGBoost's largest top-k: every document in it (2**32 - 1 is its "not set": k = 32)
ALL_PAIRS_K = 2**32 - 2
# XGBoost's lambdarank_param for a model with no XGBoost name (the defaults it writes)
DEFAULT_LAMBDARANK_PARAM = {
    "lambdarank_num_pair_per_sample": "1",
    "lambdarank_pair_method": "mean",
    "lambdarank_unbiased": "0",
    "lambdarank_bias_norm": "1",
    "ndcg_exp_gain": "1",
}


def xgboost_objective_name(objective: str, params: Mapping[str, Any]) -> str:
    """XGBoost's ``objective.name`` for the ltrboost ``objective`` (module docstring)."""
    if objective == "lambdamart":
        metric = params.get("lambda_metric", "ndcg")
        return {"ndcg": "rank:ndcg", "map": "rank:map"}.get(metric, NO_XGBOOST_NAME)
    if objective == "mart":
        return "reg:linear"
    return "rank:pairwise" if objective == "ranknet" else NO_XGBOOST_NAME


def _flag(value: bool) -> str:
    return "1" if value else "0"


def xgboost_objective(objective: str, params: Mapping[str, Any]) -> dict:
    """The learner's ``objective`` object: name and the parameters XGBoost can hold."""
    name = xgboost_objective_name(objective, params)
    if name == "reg:linear":
        return {"name": name, "reg_loss_param": {"scale_pos_weight": "1"}}
    if name not in ("rank:ndcg", "rank:map") and objective != "ranknet":
        return {"name": name, "lambdarank_param": dict(DEFAULT_LAMBDARANK_PARAM)}
    method = params.get("pair_method", "topk" if objective == "lambdamart" else "all")
    if method == "sampled":
        pairs = ("mean", int(params.get("pairs_per_sample", 1)))
    else:
        k = params.get("truncation_level", 30) if method == "topk" else None
        # None (or 0, as the parameter spells it): no truncation, every pair
        pairs = ("topk", min(int(k), ALL_PAIRS_K) if k else ALL_PAIRS_K)
    normalize = objective == "lambdamart" and bool(params.get("lambda_normalization", True))
    return {
        "name": name,
        "lambdarank_param": {
            "lambdarank_num_pair_per_sample": str(pairs[1]),
            "lambdarank_pair_method": pairs[0],
            # XGBoost refuses "1" without its bias arrays; debiasing is training only
            "lambdarank_unbiased": "0",
            "lambdarank_bias_norm": "1",
            "ndcg_exp_gain": _flag(params.get("gain", "exp") == "exp"),
            "lambdarank_normalization": _flag(normalize),
            "lambdarank_score_normalization": _flag(normalize),
        },
    }


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
    model.check_feature_names("xgboost")
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
            # objective.name below is XGBoost's name of the loss where it has one that
            # OpenSearch's raw parser knows too (module docstring); the attribute says
            # what the model was trained with (Booster.attr("ltrboost_objective")),
            # custom ones included
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
            "objective": xgboost_objective(model.objective, model.objective_params),
        },
        "version": [2, 1, 0],
    }


def to_xgboost(model: ExportModel) -> str:
    # UTF-8, not \uXXXX escapes: XGBoost's JSON reader keeps an escape as its six
    # characters, so feature_names would no longer match a non-ASCII name
    return json.dumps(to_xgboost_dict(model), separators=(",", ":"), ensure_ascii=False) + "\n"


# Jackson's default ``StreamReadConstraints`` nesting limit, which the OpenSearch /
# Elasticsearch LTR plugin (OpenSearch's ``opensearch.xcontent.depth.max`` defaults to
# it) and Vespa's ``xgboost()`` importer read the dump with.
JSON_MAX_NESTING = 1000


class DumpDepthWarning(UserWarning):
    """A tree of the dump nests deeper than :data:`JSON_MAX_NESTING` levels of JSON: the
    dump nests each tree level twice (a node object in its parent's ``children``
    array), so a tree deeper than 499 levels is a document that Jackson-based readers
    refuse by default.  ``tree`` is its index in the dump (the initial score's one-leaf
    tree, when written, is 0), ``depth`` its depth, ``nesting`` the JSON nesting."""

    def __init__(self, message: str, tree: int, depth: int, nesting: int):
        super().__init__(message)
        self.tree = tree
        self.depth = depth
        self.nesting = nesting


def dump_trees(model: ExportModel) -> list[dict]:
    """The trees as ``get_dump(dump_format="json")`` objects, names as ``split``."""
    model.check_single_output("xgboost-dump")
    model.check_feature_names("xgboost-dump")
    model.check_float32_values("xgboost-dump")
    model.warn_float32_thresholds("xgboost-dump")
    model.check_float32_sums("xgboost-dump")
    names = model.feature_names
    xtrees = [xgb_tree(tree) for tree in model.trees]
    _warn_dump_depth(xtrees)
    return [_dump_tree(t, names) for t in xtrees]


def _warn_dump_depth(xtrees: list[XGBTree]) -> None:
    """Warn (:class:`DumpDepthWarning`) of the deepest tree when the dump, ``[`` then
    each tree's root object and two levels per tree level, nests beyond
    :data:`JSON_MAX_NESTING`."""
    depths = [max(t.depth) for t in xtrees]
    if not depths or 2 + 2 * max(depths) <= JSON_MAX_NESTING:
        return
    k = int(np.argmax(depths))
    depth = depths[k]
    nesting = 2 + 2 * depth
    deep = sum(2 + 2 * d > JSON_MAX_NESTING for d in depths)
    warnings.warn(
        DumpDepthWarning(
            f"xgboost-dump: tree {k} is {depth} levels deep ({deep} tree(s) deeper than "
            f"{(JSON_MAX_NESTING - 2) // 2}), so the dump nests {nesting} levels of JSON, "
            f"beyond the {JSON_MAX_NESTING} that the OpenSearch / Elasticsearch LTR plugin "
            "and Vespa's xgboost() read by default (Jackson's limit): they refuse the "
            "model unless the limit is raised (OpenSearch: -Dopensearch.xcontent.depth.max); "
            "train with max_depth <= 499 or use format 'onnx'",
            k,
            depth,
            nesting,
        ),
        stacklevel=3,
    )


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

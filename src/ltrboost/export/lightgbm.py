"""LightGBM text model (``lightgbm.Booster(model_file=...)``).

LightGBM (``Tree::NumericalDecision`` in ``include/LightGBM/tree.h``) sends a row left
when ``x <= threshold`` with ``x`` converted to double, and NaN to the default side when
the node's missing type is NaN (``decision_type`` = 8, plus 2 for default-left): the
same rule as ltrboost, so thresholds are written as they are (17 significant digits
round-trip exactly).  A ``+inf`` threshold (a missing-vs-present split) becomes
``DBL_MAX``.  One exception: LightGBM's predictor reads an input with ``|x| <=
kZeroThreshold`` as 0, and that constant is ``1e-35f`` (1.0000000180025095e-35, the
float32 nearest 1e-35, kept in a double), so such tiny values route like 0 there.

Scores are the sum of the trees in file order starting from 0, so a one-leaf tree
holding the initial score keeps ltrboost's float64 additions in the same order: the
result is identical, not merely close.  GBRank's averaged update ``(F_0 + sum) / (T +
1)`` uses LightGBM's ``average_output`` (``GBDT::Predict`` divides by the number of
iterations): the bias tree makes that ``T + 1``.

The objective (``objective=`` and ``[objective: ...]``; ``Booster.params["objective"]``
and ``dump_model()["objective"]`` once loaded) is LightGBM's name of the loss the model
was trained with where LightGBM has one whose prediction is the raw score, else
``custom``:

=================================================  ===============
ltrboost objective                                 LightGBM name
=================================================  ===============
``lambdamart`` (any ``lambda_metric``, unbiased)   ``lambdarank``
``xendcg``                                         ``rank_xendcg``
``mart`` (least squares on the grades)             ``regression``
``logistic_rank``, ``ranknet``, ``rankboost``,     ``custom``
``gbrank``, ``qbrank``, ``yetirank``, a Python
callable (``custom:<name>``)
``mcrank``                                         refused
=================================================  ===============

``custom`` is LightGBM's own name for a loss it does not know: ``Booster.params`` says
``custom``, prediction is the raw score, and, as for LightGBM's own custom-objective
models, ``dump_model()`` has no ``objective`` (treelite and lleaves read all four names as the
identity; Vespa's importer needs the key, docs/deploy.md fills it in).  LightGBM has no
pairwise RankNet/RankBoost/GBRank loss and no YetiRank.  Names whose output LightGBM
transforms are never written, so that LightGBM predicts ltrboost's scores: ``binary``
(LogisticRank's loss family) would apply a sigmoid, ``multiclass`` a softmax (McRank's
expected grade is no LightGBM output: refused, ONNX carries it), ``regression sqrt``,
``cross_entropy``, ``poisson``, ``gamma`` and ``tweedie`` their transforms too.
Unbiased LambdaMART (Hu et al.) is LambdaMART's loss, debiased during training only:
``lambdarank``, the name LightGBM also writes for its own position-debiased models.
"""

from __future__ import annotations

import numpy as np

from ltrboost.export._trees import (
    DBL_MAX,
    FLT_MAX,
    ExportModel,
    ExportTree,
    f64_str,
)

# ltrboost objectives LightGBM knows under a name of its own whose output is the raw
# score (the others: custom; see the module docstring)
LIGHTGBM_OBJECTIVE_NAMES = {
    "lambdamart": "lambdarank",
    "xendcg": "rank_xendcg",
    "mart": "regression",
}


def lightgbm_objective(objective: str) -> str:
    """LightGBM's name for the ltrboost ``objective`` (``custom`` where it has none)."""
    return LIGHTGBM_OBJECTIVE_NAMES.get(objective, "custom")


def _tree_block(index: int, tree: ExportTree) -> str:
    if tree.is_leaf[0]:
        return (
            f"Tree={index}\nnum_leaves=1\nnum_cat=0\nsplit_feature=\nsplit_gain=\n"
            f"threshold=\ndecision_type=\nleft_child=\nright_child=\n"
            f"leaf_value={f64_str(tree.value[0])}\nleaf_weight=0\n"
            f"leaf_count={int(tree.count[0])}\n"
            f"internal_value=\ninternal_weight=\ninternal_count=\n"
            f"is_linear=0\nshrinkage=1\n\n\n"
        )
    bfs = tree.bfs_order()
    inner = [k for k in bfs if not tree.is_leaf[k]]
    leaves = [k for k in bfs if tree.is_leaf[k]]
    inner_id = {k: i for i, k in enumerate(inner)}
    leaf_id = {k: i for i, k in enumerate(leaves)}

    def child(c: int) -> str:
        return str(inner_id[c]) if not tree.is_leaf[c] else str(~leaf_id[c])

    n_in = len(inner)
    # a node's value: the mean of its leaves weighted by their documents, what
    # LightGBM's TreeSHAP takes as the expected value below it (SHAP readers of
    # dump_model() take it from internal_value)
    mean, count = tree.value.tolist(), tree.count.tolist()
    left, right = tree.left.tolist(), tree.right.tolist()
    for k in reversed(inner):
        a, b = left[k], right[k]
        n = count[a] + count[b]
        mean[k] = (count[a] * mean[a] + count[b] * mean[b]) / n if n else 0.0
    mean = np.nan_to_num(np.asarray(mean), nan=0.0, posinf=DBL_MAX, neginf=-DBL_MAX)
    gain = np.minimum(tree.gain, FLT_MAX)
    lines = [
        f"Tree={index}",
        f"num_leaves={len(leaves)}",
        "num_cat=0",
        "split_feature=" + " ".join(str(int(tree.feature[k])) for k in inner),
        "split_gain=" + " ".join(map(repr, gain[inner].tolist())),
        "threshold=" + " ".join(f64_str(tree.threshold[k]) for k in inner),
        "decision_type=" + " ".join("10" if tree.missing_left[k] else "8" for k in inner),
        "left_child=" + " ".join(child(int(tree.left[k])) for k in inner),
        "right_child=" + " ".join(child(int(tree.right[k])) for k in inner),
        "leaf_value=" + " ".join(f64_str(tree.value[k]) for k in leaves),
        "leaf_weight=" + " ".join("0" for _ in leaves),
        # TreeSHAP (pred_contrib) weights each branch by these counts
        "leaf_count=" + " ".join(map(str, tree.count[leaves].tolist())),
        "internal_value=" + " ".join(map(repr, mean[inner].tolist())),
        "internal_weight=" + " ".join("0" for _ in range(n_in)),
        "internal_count=" + " ".join(map(str, tree.count[inner].tolist())),
        "is_linear=0",
        "shrinkage=1",
    ]
    return "\n".join(lines) + "\n\n\n"


def to_lightgbm(model: ExportModel) -> str:
    model.check_single_output("lightgbm")
    model.check_feature_names("lightgbm")
    # averaged: every tree undivided, a bias tree always, LightGBM divides by T + 1;
    # additive: the divisor is 1 and a bias tree only where the initial score is not 0.
    trees = model.raw_trees if model.averaged else model.trees
    if not trees:
        raise AssertionError("collect() always yields a tree when there are none")
    objective = lightgbm_objective(model.objective)
    header = [
        "tree",
        "version=v4",
        "num_class=1",
        "num_tree_per_iteration=1",
        "label_index=0",
        f"max_feature_idx={model.n_features - 1}",
        f"objective={objective}",
    ]
    if model.averaged:
        header.append("average_output")
    header += [
        "feature_names=" + " ".join(model.feature_names),
        "feature_infos=" + " ".join("none" for _ in range(model.n_features)),
        "",
    ]
    body = [_tree_block(i, t) for i, t in enumerate(trees)]
    params = (
        f"end of trees\n\nparameters:\n[boosting: gbdt]\n[objective: {objective}]\n"
        "end of parameters\n\npandas_categorical:null\n"
    )
    return "\n".join(header) + "\n" + "".join(body) + params

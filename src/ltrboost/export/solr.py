"""Solr LTR ``MultipleAdditiveTreesModel`` JSON (the model store's upload body).

Solr (``org.apache.solr.ltr.model.MultipleAdditiveTreesModel``) evaluates in float32:
``setThreshold`` stores ``Float.parseFloat(threshold) + NODE_SPLIT_SLACK`` (``1e-6f``),
``scoreNode`` goes left when ``x <= that``, a tree scores ``weight * leaf value`` and the
model sums the trees.  For every split the exported threshold ``s`` is a float32 chosen
so that ``float32(s + 1e-6f)`` is ``m``, the largest float32 ``<= t`` (then Solr's test
selects exactly the float32 inputs that ltrboost's ``x <= t`` does).  Where no such
``s`` exists (``|m|`` around 1e-7 and below, except 0) the export is refused, naming
the feature and threshold.

Missing values: every split carries ``"missing": "left" | "right"`` and the model sets
``"isNullSameAsZero": false`` (Solr >= 9.2, SOLR-16596) so an absent feature is NaN and
follows ltrboost's learned direction.  Older Solr ignores both and reads it as 0.

Weights are 1 (shrinkage, line-search steps, GBRank's averaging and the initial score
are folded into the leaf values).
"""

from __future__ import annotations

import json

import numpy as np

from ltrboost.export._trees import ExportError, ExportModel, ExportTree, f32_floor, f32_str

SOLR_CLASS = "org.apache.solr.ltr.model.MultipleAdditiveTreesModel"
NODE_SPLIT_SLACK = np.float32(1e-6)


def solr_effective(s: np.float32) -> np.float32:
    """Solr's stored threshold for the written float32 ``s`` (float32 addition)."""
    return np.float32(np.float32(s) + NODE_SPLIT_SLACK)


def solr_threshold(m: np.float32) -> np.float32 | None:
    """A float32 ``s`` with ``float32(s + 1e-6f) == m``, or None when there is none."""
    m = np.float32(m)
    if np.isinf(m):
        return m
    s = np.float32(np.float64(m) - np.float64(NODE_SPLIT_SLACK))
    for _ in range(64):
        e = solr_effective(s)
        if e == m:
            return s
        s = np.nextafter(s, np.float32(-np.inf) if e > m else np.float32(np.inf))
    # rounding may have overshot by one step back and forth: try a small window
    base = np.float32(np.float64(m) - np.float64(NODE_SPLIT_SLACK))
    cand = base
    for _ in range(8):
        cand = np.nextafter(cand, np.float32(-np.inf))
        if solr_effective(cand) == m:
            return cand
    return None


def _node(tree: ExportTree, k: int, names: list[str], m: np.ndarray) -> dict:
    if tree.is_leaf[k]:
        return {"value": f32_str(tree.value[k])}
    s = solr_threshold(m[k])
    if s is None:
        raise ExportError(
            f"solr: the split threshold {float(tree.threshold[k])!r} of feature "
            f"{names[tree.feature[k]]!r} cannot be written exactly (Solr adds 1e-6 "
            "to every threshold in float32); rescale that feature or use another format"
        )
    return {
        "feature": names[int(tree.feature[k])],
        "threshold": f32_str(s),
        "missing": "left" if tree.missing_left[k] else "right",
        "left": _node(tree, int(tree.left[k]), names, m),
        "right": _node(tree, int(tree.right[k]), names, m),
    }


def to_solr_dict(model: ExportModel, name: str, store: str | None = None) -> dict:
    model.check_single_output("solr")
    names = model.feature_names
    trees = []
    for tree in model.trees:
        m = f32_floor(tree.threshold)
        trees.append({"weight": "1", "root": _node(tree, 0, names, m)})
    body = {
        "class": SOLR_CLASS,
        "name": name,
        "features": [{"name": n} for n in names],
        "params": {"isNullSameAsZero": False, "trees": trees},
    }
    if store:
        body["store"] = store
    return body


def to_solr(model: ExportModel, name: str, store: str | None = None) -> str:
    return json.dumps(to_solr_dict(model, name, store), indent=1) + "\n"

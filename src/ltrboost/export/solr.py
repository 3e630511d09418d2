"""Solr LTR ``MultipleAdditiveTreesModel`` JSON (the model store's upload body).

Solr (``org.apache.solr.ltr.model.MultipleAdditiveTreesModel``) evaluates in float32:
``setThreshold`` stores ``Float.parseFloat(threshold) + NODE_SPLIT_SLACK`` (``1e-6f``),
``scoreNode`` goes left when ``x <= that``, a tree scores ``weight * leaf value`` and
the model sums the trees.  For every split the exported threshold ``s`` is a float32
chosen so that ``float32(s + 1e-6f)`` is ``m``, the largest float32 ``<= t`` (then
Solr's test selects exactly the float32 inputs that ltrboost's ``x <= t`` does).  Where
the float32 grid of the written ``s`` is coarser than the one of ``m``, no such ``s`` may
exist: near 0 (``|m|`` below about 1e-6), for about every other float32 within 1e-6 above
a negative power of two (``s`` then lies below it, where float32 steps are twice as wide:
-1, -0.5, -32, ...) and at a few other points.  The smallest reachable threshold above
``m`` is then used and a :class:`SolrThresholdWarning` names the widest gap (values in
it, one or a few float32 steps above the threshold, go left instead of right), except
where that gap would hold 0 (``m`` in about (-1.1e-13, 0)): 0 is the commonest feature
value (and an absent feature's in Solr), so the largest reachable threshold below ``m``
is used instead and the values in (that threshold, ``m``] go right instead of left.

Missing values: every split carries ``"missing": "left" | "right"`` and the model sets
``"isNullSameAsZero": false`` (Solr >= 9.2, SOLR-16596) so an absent feature whose store
entry has ``"defaultValue": "NaN"`` is NaN and follows ltrboost's learned direction.
Without that default it reads as 0.  Solr before 9.2 has no setter for either key and
refuses the upload.

Weights are 1 (shrinkage, line-search steps, GBRank's averaging and the initial score
are folded into the leaf values).
"""

from __future__ import annotations

import warnings

import numpy as np

from ltrboost.export._trees import (
    ExportModel,
    ExportTree,
    f32_floor,
    f32_str,
    json_text,
)


class SolrThresholdWarning(UserWarning):
    """Some thresholds route a sliver of float32 values differently in Solr; ``gaps``
    lists them as (feature name, lo, hi): the values in (lo, hi] go to the other child.
    Usually (m, Solr's threshold], which go left instead of right; where that range
    would hold 0, (Solr's threshold, m], which go right instead of left."""

    def __init__(self, message: str, gaps: list[tuple[str, float, float]]):
        super().__init__(message)
        self.gaps = gaps


SOLR_CLASS = "org.apache.solr.ltr.model.MultipleAdditiveTreesModel"
NODE_SPLIT_SLACK = np.float32(1e-6)


def solr_effective(s: np.float32) -> np.float32:
    """Solr's stored threshold for the written float32 ``s`` (float32 addition)."""
    return np.float32(np.float32(s) + NODE_SPLIT_SLACK)


def solr_threshold(m: np.float32) -> tuple[np.float32, bool]:
    """The float32 ``s`` whose Solr threshold ``float32(s + 1e-6f)`` is the smallest one
    ``>= m``, and whether it routes exactly (is below the next float32 after ``m``)."""
    m = np.float32(m)
    if np.isinf(m):
        return m, True
    down, up = np.float32(-np.inf), np.float32(np.inf)
    with np.errstate(over="ignore"):  # steps past float32's largest value give +-inf
        s = np.float32(np.float64(m) - np.float64(NODE_SPLIT_SLACK))
        for _ in range(10_000):  # solr_effective is monotone in s: walk to the boundary
            if solr_effective(s) < m:
                s = np.nextafter(s, up)
            elif solr_effective(np.nextafter(s, down)) >= m:
                s = np.nextafter(s, down)
            else:
                break
        return s, bool(solr_effective(s) < np.nextafter(m, up))


def _root(tree: ExportTree, names: list[str], m: np.ndarray, inexact: list) -> dict:
    """The root's object, children nested (built without recursion: trees can be
    deeper than Python's recursion limit); thresholds Solr cannot hit go to
    ``inexact`` in depth-first order."""
    nodes: dict[int, dict] = {}
    for k in tree.preorder():
        if tree.is_leaf[k]:
            nodes[k] = {"value": f32_str(tree.value[k])}
            continue
        s, exact = solr_threshold(m[k])
        if not exact:
            gap = (float(m[k]), float(solr_effective(s)))  # (m, threshold] go left
            if m[k] < 0 <= solr_effective(s):
                # that gap holds 0: every document without the feature would go left;
                # take the largest threshold below m, (threshold, m] go right instead
                while solr_effective(s) >= m[k]:
                    s = np.nextafter(s, np.float32(-np.inf))
                gap = (float(solr_effective(s)), float(m[k]))
            inexact.append((names[int(tree.feature[k])], *gap))
        nodes[k] = {
            "feature": names[int(tree.feature[k])],
            "threshold": f32_str(s),
            "missing": "left" if tree.missing_left[k] else "right",
        }
    for k, node in nodes.items():
        if not tree.is_leaf[k]:
            node["left"] = nodes[int(tree.left[k])]
            node["right"] = nodes[int(tree.right[k])]
    return nodes[0]


def to_solr_dict(model: ExportModel, name: str, store: str | None = None) -> dict:
    model.check_single_output("solr")
    model.check_float32_values("solr")
    model.warn_float32_thresholds("solr")
    model.check_float32_sums("solr")
    names = model.feature_names
    trees = []
    inexact: list[tuple[str, float, float]] = []
    for tree in model.trees:
        m = f32_floor(tree.threshold)
        trees.append({"weight": "1", "root": _root(tree, names, m, inexact)})
    if inexact:
        f, lo, hi = max(inexact, key=lambda t: t[2] - t[1])
        warnings.warn(
            SolrThresholdWarning(
                f"solr: {len(inexact)} split threshold(s) cannot be written exactly "
                f"(Solr adds 1e-6f to each in float32, which misses some thresholds "
                f"near 0 and just above negative powers of two); values in a gap next "
                f"to them go to the other child (left instead of right, or right instead "
                f"of left where the gap would hold 0), the widest: {f} in "
                f"({lo!r}, {hi!r}]",
                inexact,
            ),
            stacklevel=2,
        )
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
    return json_text(to_solr_dict(model, name, store), indent=1) + "\n"

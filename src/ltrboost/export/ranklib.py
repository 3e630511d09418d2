"""RankLib ensemble text (``## LambdaMART`` or ``## MART`` header, ``<ensemble>`` XML body).

RankLib (``ciir.umass.edu.learning.tree.Ensemble`` / ``Split``, the codelibs fork the
OpenSearch / Elasticsearch LTR plugin loads as ``model/ranklib``) keeps features and
thresholds as float32, goes left when ``x <= threshold`` and scores
``sum_i weight_i * output(tree_i)``; features are 1-based positions in the feature set.
Thresholds are ``m``, the largest float32 ``<= t`` (selecting the same float32 inputs as
ltrboost's ``x <= t``; ``Infinity`` for a missing-vs-present split, ``t = +inf``, so
that a value beyond float32's range, which RankLib reads as ``Infinity``, goes left
there as in ltrboost); weights are 1 and leaf outputs carry everything else.

The first line names the RankLib class that loads the file (``RankerFactory``):
``## MART`` for a ``mart`` model (RankLib's ``MART extends LambdaMART``: the same
ensemble format, loaded and scored the same way; MART is the least-squares booster
that ltrboost's ``mart`` is), ``## LambdaMART`` for every other objective: the RankLib
classes named after them, where there are any (``## RankBoost``, ``## RankNet``, ...),
read other model formats.  The objective ltrboost trained with is the next line, a
``##`` comment.

RankLib has no missing values: an absent feature is 0.  A model is exported only when
that changes no route, i.e. every split sends NaN the way it sends 0; otherwise the
export is refused unless ``assume_no_missing=True`` (CLI ``--assume-no-missing``) says
the engine never lacks a feature (or missing means 0 in your training data too, e.g.
``ltrboost train --missing zero``).
"""

from __future__ import annotations

from ltrboost.export._trees import (
    ExportError,
    ExportModel,
    ExportTree,
    f32_floor,
    f32_str,
)


def nan_routes_like_zero(tree: ExportTree) -> list[int]:
    """Split nodes where NaN does not go where 0 goes (0 <= t is left)."""
    bad = []
    for k in range(tree.n_nodes):
        if not tree.is_leaf[k]:
            zero_left = 0.0 <= tree.threshold[k]
            if bool(tree.missing_left[k]) != zero_left:
                bad.append(k)
    return bad


def _splits(tree: ExportTree, m, indent: str, out: list[str]) -> None:
    """The tree's ``<split>`` elements, depth-first (with a stack: trees can be deeper
    than Python's recursion limit)."""
    stack: list[tuple[int, str | None, str, bool]] = [(0, None, indent, False)]
    while stack:
        k, pos, ind, close = stack.pop()
        if close:
            out.append(f"{ind}</split>")
            continue
        tag = f'<split pos="{pos}">' if pos else "<split>"
        if tree.is_leaf[k]:
            out.append(f"{ind}{tag}\n{ind}\t<output> {float(tree.value[k])!r} </output>")
            out.append(f"{ind}</split>")
            continue
        out.append(f"{ind}{tag}")
        out.append(f"{ind}\t<feature> {int(tree.feature[k]) + 1} </feature>")
        # +inf (a missing-vs-present split) stays "Infinity" (Float.parseFloat reads
        # it): every present value goes left, one beyond float32's range (Infinity in
        # RankLib: a LETOR 1e300) too, as in ltrboost; FLT_MAX sent that one right
        thr = f32_str(m[k])
        out.append(f"{ind}\t<threshold> {thr} </threshold>")
        stack += [
            (k, None, ind, True),
            (int(tree.right[k]), "right", ind + "\t", False),
            (int(tree.left[k]), "left", ind + "\t", False),
        ]


def to_ranklib(model: ExportModel, assume_no_missing: bool = False) -> str:
    model.check_single_output("ranklib")
    model.check_float32_values("ranklib")
    model.warn_float32_thresholds("ranklib")
    if not assume_no_missing:
        n_bad = sum(len(nan_routes_like_zero(t)) for t in model.trees)
        if n_bad:
            problem = (
                f"ranklib has no missing values (an absent feature reads as 0) but "
                f"{n_bad} split(s) of this model send NaN where 0 does not go; if "
                "features are never missing in the engine (or missing means 0"
            )
            raise ExportError(
                f"{problem}), pass assume_no_missing=True, else use format "
                "'xgboost-dump' (model/xgboost+json), which keeps the NaN direction",
                cli=f"{problem}, as with 'ltrboost train --missing zero'), give "
                "--assume-no-missing, else use --format xgboost-dump (model/xgboost+json), "
                "which keeps the NaN direction",
            )
    lines = [
        # the class RankLib loads the ensemble with (module docstring)
        "## MART" if model.objective == "mart" else "## LambdaMART",
        # one line: a custom objective's name is the user's (a newline in it would
        # put text outside the '##' comments, into RankLib's XML)
        f"## exported by ltrboost: objective = {' '.join(model.objective.split())}",
        f"## No. of trees = {len(model.trees)}",
        "## Learning rate = 1 (folded into the leaf outputs)",
        "## feature id i = the i-th feature of the feature set (1-based)",
        "<ensemble>",
    ]
    for i, tree in enumerate(model.trees):
        lines.append(f'\t<tree id="{i + 1}" weight="1">')
        _splits(tree, f32_floor(tree.threshold), "\t\t", lines)
        lines.append("\t</tree>")
    lines.append("</ensemble>")
    return "\n".join(lines) + "\n"

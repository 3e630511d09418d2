"""What every exporter needs from a :class:`~ltrboost.booster.Booster`, format-neutral.

ltrboost routes a row at an internal node to the left child when ``x <= t`` (``t`` is
the float64 ``num_threshold``) and a NaN where ``missing_go_to_left`` says (see
:mod:`ltrboost.tree`).  The score of output ``k`` is ``init_score[k] + sum of the leaf
values of its trees`` (the leaves already hold the learning rate and QBRank's
line-search step), divided by ``T + 1`` for GBRank's averaged update (``T`` rounds).

:func:`collect` turns that into an :class:`ExportModel`: per output, an ordered list of
:class:`ExportTree` whose leaf values have the divisor folded in, preceded by a one-leaf
*bias tree* holding ``init_score[k] / divisor`` when that is not zero (or when there are
no trees): several consumers have no base score, and a tree in front keeps the order of
the float64 additions equal to ltrboost's own.

Threshold helpers map ``x <= t`` (float64) to each consumer's comparison so that every
finite float32 feature value and NaN reach the same leaf.  (ltrboost refuses infinite
inputs, so the route of +-inf is not part of the contract.)  ``t`` can be ``+inf``: a
split that only separates missing from present values.
"""

from __future__ import annotations

import json
import math
import unicodedata
import warnings
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltrboost.model import averaged_divisor

FLT_MAX = float(np.finfo(np.float32).max)
DBL_MAX = float(np.finfo(np.float64).max)

# Formats that can evaluate mcrank's softmax + expected grade (the others refuse it).
MULTI_OUTPUT_FORMATS = ("onnx",)


class ExportError(ValueError):
    """A model that a format cannot represent exactly, or bad export arguments.

    The message names options as Python spells them (``assume_no_missing=True``);
    ``cli``, where the remedy is an option, is the same message as ``ltrboost export``
    spells them (``--assume-no-missing``): its ``cli_message`` (the message itself
    when not given).
    """

    def __init__(
        self,
        message: str,
        *,
        cli: str | None = None,
        feature: int | None = None,
        feature_words: str | None = None,
    ) -> None:
        super().__init__(message)
        self.cli_message = message if cli is None else cli
        # the feature name the message names: its 0-based index and the words naming it
        # (``feature_names[k]='name'``, as fit and save name one), so that the line of a
        # names file can be added after them
        self.feature = feature
        self.feature_words = feature_words


def name_words(k: int, name: str) -> str:
    """Feature name ``k`` as fit and save name it: ``feature_names[k]='name'`` (0-based
    index and the name; a LETOR model's ``fK`` is ``feature_names[K-1]``)."""
    return f"feature_names[{k}]={name!r}"


class Float32RangeWarning(UserWarning):
    """Split thresholds beyond float32's range (about +-3.4e38, finite): the float32
    consumers read every feature value beyond it as +-inf, so rows holding such values
    may reach other leaves there than in ltrboost (values within float32's range route
    as in ltrboost).  ``thresholds`` lists them as (feature name, threshold)."""

    def __init__(self, message: str, thresholds: list[tuple[str, float]]):
        super().__init__(message)
        self.thresholds = thresholds


@dataclass
class ExportTree:
    """One tree in ltrboost's node layout (root 0, local child indices)."""

    feature: NDArray[np.int32]
    threshold: NDArray[np.float64]  # x <= threshold goes left (float64)
    missing_left: NDArray[np.bool_]
    is_leaf: NDArray[np.bool_]
    left: NDArray[np.int32]
    right: NDArray[np.int32]
    value: NDArray[np.float64]  # leaf values, divisor folded in
    depth: NDArray[np.int32]
    # training documents per node and split gains: LightGBM's and XGBoost's TreeSHAP
    # weight branches by the counts (0 everywhere made every contribution NaN)
    count: NDArray[np.int64]
    gain: NDArray[np.float64]
    output: int = 0
    is_bias: bool = False

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    def preorder(self) -> list[int]:
        """Node indices depth-first, a node before its children, left before right
        (with a stack: trees can be deeper than Python's recursion limit)."""
        is_leaf, left, right = self.is_leaf.tolist(), self.left.tolist(), self.right.tolist()
        order: list[int] = []
        stack = [0]
        while stack:
            k = stack.pop()
            order.append(k)
            if not is_leaf[k]:
                stack += [right[k], left[k]]
        return order

    def bfs_order(self) -> list[int]:
        """Node indices in breadth-first order from the root (XGBoost's numbering)."""
        order = [0]
        i = 0
        while i < len(order):
            k = order[i]
            if not self.is_leaf[k]:
                order.append(int(self.left[k]))
                order.append(int(self.right[k]))
            i += 1
        return order


@dataclass
class ExportModel:
    objective: str
    n_features: int
    n_outputs: int
    feature_names: list[str]
    trees: list[ExportTree]  # every output's trees, in ltrboost's order
    init_score: NDArray[np.float64]
    divisor: float  # 1, or T + 1 for GBRank's averaged update
    n_iterations: int
    averaged: bool = False
    raw_trees: list[ExportTree] = field(default_factory=list)  # undivided (LightGBM)
    # the objective's parameters as the model file has them (XGBoost's lambdarank_param)
    objective_params: dict[str, Any] = field(default_factory=dict)
    # "the model's " when the names are the model's own (a DataFrame's columns), which
    # were never chosen for an engine: messages say so
    names_whose: str = ""

    def check_single_output(self, fmt: str) -> None:
        if self.n_outputs != 1:
            raise ExportError(
                f"format {fmt!r} cannot represent objective {self.objective!r} "
                f"({self.n_outputs} trees per round combined by softmax into an "
                f"expected grade); formats that can: {', '.join(MULTI_OUTPUT_FORMATS)}"
            )

    def check_float32_values(self, fmt: str) -> None:
        """Refuse leaf values (initial scores included) that float32 cannot hold: the
        consumer would read them as +-inf (and XGBoost's JSON would not parse)."""
        for tree in self.trees:
            leaves = tree.value[tree.is_leaf]
            with np.errstate(over="ignore"):
                big = np.isinf(leaves.astype(np.float32))
            if big.any():
                what = "initial score" if tree.is_bias else "leaf value"
                raise ExportError(
                    f"format {fmt!r} keeps values as float32, which cannot hold the "
                    f"{what} {float(leaves[big][0])!r} (beyond +-{FLT_MAX:.7g}); use "
                    "format 'lightgbm' (float64)"
                )

    def warn_float32_thresholds(self, fmt: str) -> None:
        """Warn (:class:`Float32RangeWarning`) of finite split thresholds beyond
        float32's range, which data holding values near the double's maximum (Istella's
        features) gives: the consumer cannot tell such values apart.  ``+inf`` (a
        missing-vs-present split) is exported exactly and is not one of them."""
        found: list[tuple[str, float]] = []
        for tree in self.trees:
            t = tree.threshold[~tree.is_leaf]
            f = tree.feature[~tree.is_leaf]
            with np.errstate(over="ignore"):  # beyond: infinite once in float32
                beyond = np.isfinite(t) & np.isinf(t.astype(np.float32))
            found += [
                (self.feature_names[int(k)], float(v))
                for k, v in zip(f[beyond], t[beyond], strict=True)
            ]
        if found:
            name, value = found[0]
            warnings.warn(
                Float32RangeWarning(
                    f"{fmt}: {len(found)} split threshold(s) lie beyond float32's range "
                    f"(+-{FLT_MAX:.7g}), the first {value!r} on feature {name!r}: the "
                    "consumer reads every value beyond it as +-inf, so rows holding such "
                    "values may reach other leaves than in ltrboost (format 'lightgbm' "
                    "compares doubles)",
                    found,
                ),
                stacklevel=3,
            )

    def check_float32_sums(self, fmt: str) -> None:
        """Refuse a model whose float32 sum of leaf values can overflow: each leaf fits,
        but a row reaching the largest leaf of every tree would score +-inf in the
        consumer (XGBoost, the LTR plugin, Solr, onnxruntime add in float32), tied with
        every other such row.  The bound (per output) is the sum of each tree's largest
        leaf magnitude, widened by the float32 rounding of that many additions."""
        bound = np.zeros(self.n_outputs, dtype=np.float64)
        n = np.zeros(self.n_outputs, dtype=np.int64)
        for tree in self.trees:
            leaves = np.abs(tree.value[tree.is_leaf].astype(np.float32)).astype(np.float64)
            bound[tree.output] += float(leaves.max())
            n[tree.output] += 1
        over = bound * (1.0 + n * 2.0**-24) > FLT_MAX
        if over.any():
            o = int(np.flatnonzero(over)[0])
            which = f" of output {o}" if self.n_outputs > 1 else ""
            raise ExportError(
                f"format {fmt!r} adds leaf values in float32, and a score{which} can reach "
                f"+-{bound[o]:.7g} (each tree's largest leaf value by magnitude, summed), "
                f"beyond +-{FLT_MAX:.7g}: the consumer would score such rows +-inf; use "
                "format 'lightgbm' (float64)"
            )

    def check_feature_names(self, fmt: str) -> None:
        """Refuse the first feature name that ``fmt``'s consumer cannot read back as
        written (:data:`NAME_RULES`), naming it, the character and what to do."""
        rules = NAME_RULES.get(fmt, ())
        for i, name in enumerate(self.feature_names):
            problem = _name_problem(rules, name)
            if problem is None:
                continue
            words = f"{self.names_whose}{name_words(i, name)}"
            remedy = "pass other names (feature_names=)"
            cli_remedy = "give other names (--feature-names FILE)"
            if problem.startswith("contains ' ' (a space)") and fmt == "lightgbm":
                remedy, cli_remedy = self._lightgbm_spelling(i, name)
            text = f"{words} {problem}; "
            raise ExportError(
                f"format {fmt!r}: {text}{remedy}",
                cli=f"--format {fmt}: {text}{cli_remedy}",
                feature=i,
                feature_words=name_words(i, name),
            )

    def _lightgbm_spelling(self, i: int, name: str) -> tuple[str, str]:
        """The remedy for a name with a space in a LightGBM file: LightGBM's own
        spelling of such a DataFrame column (``Dataset`` turns each space into ``_``,
        LightGBM PR #426), unless another feature already has that spelling."""
        spelled = name.replace(" ", "_")
        rename = " or rename the column" if self.names_whose else ""
        if spelled in self.feature_names:
            j = self.feature_names.index(spelled)
            said = f"LightGBM would write it {spelled!r}, which is also feature_names[{j}]: "
            return (
                f"{said}pass other names (feature_names=){rename}",
                f"{said}give other names (--feature-names FILE)",
            )
        said = f"LightGBM itself writes each space of a column name as '_' ({spelled!r}): "
        return (
            f"{said}pass names spelled so (feature_names=){rename}",
            f"{said}give names spelled so (--feature-names FILE)",
        )


# What each format's consumer cannot read back as written in a feature name: per format,
# (characters, why), tested in order; "" stands for an empty name.  The JSON formats
# escape everything else (json.dumps), RankLib and the ONNX input are positional.
#
# LightGBM's text model has one ``feature_names=`` line, split on ' ' (LightGBM's own
# Dataset turns a space into '_'), ending at a line break; its model loader refuses
# "special JSON characters" (Common::CheckAllowedJSON); its dump_model() JSON (what Vespa
# reads) writes names unescaped, so a backslash starts an escape there (a\b came back
# with a backspace) and a control character makes the JSON invalid (Python's json and
# Vespa refuse it).  A tab, U+00A0, U+2028 and the like split nothing there and are kept.
# XGBoost's DMatrix refuses '[', ']' and '<' (they delimit the split conditions of its
# text dumps); its JSON reader decodes \t \n \r \" \\ \/ but keeps a \uXXXX escape as
# its six characters and refuses \b and \f, which json.dumps writes for the other
# characters below U+0020.
LIGHTGBM_FORBIDDEN = '",:[]{}\\'
XGBOOST_FORBIDDEN = "[]<"
_JSON_CONTROL = "".join(map(chr, range(0x20)))
NAME_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "lightgbm": (
        ("", "which LightGBM's text model cannot hold (one line lists the names, split by spaces)"),
        (
            LIGHTGBM_FORBIDDEN,
            "which LightGBM does not accept in a feature name "
            f"(none of {' '.join(LIGHTGBM_FORBIDDEN)})",
        ),
        ("\n\r", "which would end the line of LightGBM's text model that lists the names"),
        (
            _JSON_CONTROL,
            "which LightGBM's dump_model() JSON (what Vespa reads) would hold unescaped, "
            "and no JSON reader reads that",
        ),
        (
            " ",
            "which LightGBM's text model cannot hold (one line lists the names, split by spaces)",
        ),
    ),
    "xgboost": (
        (
            XGBOOST_FORBIDDEN,
            "which XGBoost does not accept in a feature name "
            f"(none of {' '.join(XGBOOST_FORBIDDEN)})",
        ),
        (
            "".join(c for c in _JSON_CONTROL if c not in "\t\n\r"),
            "which XGBoost's JSON reader does not read back (it keeps a \\u escape as "
            "written and refuses \\b and \\f)",
        ),
    ),
    "xgboost-dump": (
        (
            XGBOOST_FORBIDDEN,
            "which XGBoost does not accept in a feature name "
            f"(none of {' '.join(XGBOOST_FORBIDDEN)})",
        ),
    ),
}


def _char_words(c: str) -> str:
    return "' ' (a space)" if c == " " else repr(c)


def _name_problem(rules: tuple[tuple[str, str], ...], name: str) -> str | None:
    """What the first rule ``name`` breaks says of it (None: the name is fine)."""
    for chars, why in rules:
        if chars == "":
            if not name:
                return f"is empty, {why}"
            continue
        bad = sorted({c for c in name if c in chars})
        if bad:
            return f"contains {' '.join(_char_words(c) for c in bad)}, {why}"
    return None


def _tree_from_nodes(nodes, divisor: float, output: int) -> ExportTree:
    is_leaf = nodes["is_leaf"].astype(bool)
    value = np.where(is_leaf, nodes["value"], 0.0).astype(np.float64)
    if divisor != 1.0:
        value = value / divisor
    return ExportTree(
        feature=nodes["feature_idx"].astype(np.int32),
        threshold=nodes["num_threshold"].astype(np.float64),
        missing_left=nodes["missing_go_to_left"].astype(bool),
        is_leaf=is_leaf,
        left=nodes["left"].astype(np.int32),
        right=nodes["right"].astype(np.int32),
        value=value,
        depth=nodes["depth"].astype(np.int32),
        count=nodes["count"].astype(np.int64),
        gain=np.where(is_leaf, 0.0, nodes["gain"]).astype(np.float64),
        output=int(output),
    )


def bias_tree(value: float, output: int) -> ExportTree:
    return ExportTree(
        feature=np.zeros(1, np.int32),
        threshold=np.zeros(1, np.float64),
        missing_left=np.zeros(1, bool),
        is_leaf=np.ones(1, bool),
        left=np.zeros(1, np.int32),
        right=np.zeros(1, np.int32),
        value=np.array([value], np.float64),
        depth=np.zeros(1, np.int32),
        count=np.zeros(1, np.int64),
        gain=np.zeros(1, np.float64),
        output=int(output),
        is_bias=True,
    )


def collect(booster, feature_names=None, iteration: int | None = None) -> ExportModel:
    """The booster's first ``iteration`` rounds (default as in ``predict``), folded."""
    n_iter = booster._resolve_iterations(iteration)
    n_out = int(booster.n_outputs)
    k = n_iter * n_out
    averaged = booster.update_rule == "averaged"
    divisor = float(averaged_divisor(n_iter)) if averaged else 1.0
    init = np.asarray(booster.init_score, dtype=np.float64).reshape(n_out)
    names = resolve_feature_names(booster, feature_names)
    trees: list[ExportTree] = []
    raw: list[ExportTree] = []
    for o in range(n_out):
        if init[o] != 0.0 or n_iter == 0:
            trees.append(bias_tree(init[o] / divisor, o))
    for o in range(n_out):
        raw.append(bias_tree(init[o], o))
    for nodes, o in zip(booster.trees[:k], booster.tree_outputs[:k], strict=True):
        trees.append(_tree_from_nodes(nodes, divisor, o))
        raw.append(_tree_from_nodes(nodes, 1.0, o))
    return ExportModel(
        objective=booster.objective,
        n_features=int(booster.n_features),
        n_outputs=n_out,
        feature_names=names,
        trees=trees,
        init_score=init,
        divisor=divisor,
        n_iterations=n_iter,
        averaged=averaged,
        raw_trees=raw,
        objective_params=dict(getattr(booster, "objective_params", None) or {}),
        names_whose=_names_whose(booster, feature_names),
    )


def _names_whose(booster, feature_names) -> str:
    """``"the model's "`` when the export uses the model's own names: they (a
    DataFrame's columns) were never chosen for an engine, so messages say where they
    come from and how to give others."""
    return "" if feature_names is not None or not booster.feature_names else "the model's "


def resolve_feature_names(booster, feature_names) -> list[str]:
    """Explicit names > the booster's (a DataFrame's columns, or the LETOR ids
    ``f1, f2, ...`` that ``ltrboost train`` stores for a LETOR file) > ``f0, f1, ...``
    (0-based columns).

    Checks what no format takes (a wrong count, a lone surrogate, a name twice); what
    one format's consumer cannot read back is :meth:`ExportModel.check_feature_names`.
    """
    n = int(booster.n_features)
    whose = _names_whose(booster, feature_names)
    if feature_names is None:
        feature_names = booster.feature_names or [f"f{i}" for i in range(n)]
    names = [str(s) for s in feature_names]
    if len(names) != n:
        raise ExportError(f"{len(names)} feature names given but the model has {n} features")
    seen: dict[str, int] = {}
    for i, s in enumerate(names):
        if any(unicodedata.category(c) == "Cs" for c in s):  # "\ud800": UTF-8 cannot write it
            problem = (
                f"{whose}{name_words(i, s)} holds a lone surrogate, which is no Unicode "
                "text (exports are UTF-8); "
            )
            raise ExportError(
                f"{problem}pass the engine's names (feature_names=)",
                cli=f"{problem}give the engine's names (--feature-names FILE)",
                feature=i,
                feature_words=name_words(i, s),
            )
        if s in seen:
            raise ExportError(
                f"{whose}{name_words(i, s)} appears more than once (also feature_names[{seen[s]}])",
                feature=i,
                feature_words=name_words(i, s),
            )
        seen[s] = i
    return names


def read_feature_names(path: str) -> list[str]:
    """One name per line; blank lines and ``#`` comments ignored."""
    return [name for _, name in _numbered_names(path)]


def feature_name_line(path: str, k: int) -> int | None:
    """The 1-based line of ``path`` holding its feature name ``k`` (0-based, as
    :func:`read_feature_names` counts them); None when it cannot be told."""
    try:
        lines = [line for line, _ in _numbered_names(path)]
    except (OSError, UnicodeDecodeError):
        return None
    return lines[k] if 0 <= k < len(lines) else None


def _numbered_names(path: str) -> list[tuple[int, str]]:
    """``(1-based line, name)`` of every name of a feature names file."""
    with open(path, encoding="utf-8-sig") as fh:  # -sig: a BOM is no part of a name
        lines = [(n, ln.strip()) for n, ln in enumerate(fh, 1)]
    return [(n, ln) for n, ln in lines if ln and not ln.startswith("#")]


# --- thresholds ---------------------------------------------------------------------


def f32_floor(t: NDArray[np.float64] | float) -> NDArray[np.float32]:
    """The largest float32 ``m <= t`` (float32 ``x <= t`` iff ``x <= m``)."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore"):  # beyond float32's range: +-inf, or the step to it
        m = t.astype(np.float32)
        too_big = m.astype(np.float64) > t
        m = np.where(too_big, np.nextafter(m, np.float32(-np.inf)), m)
    return m.astype(np.float32)


def f32_str(v) -> str:
    """Shortest decimal that parses back to the float32 ``v`` (Float.parseFloat)."""
    v = np.float32(v)
    if np.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return str(v)  # NumPy prints the shortest round-trip float32 decimal


def f32_json(v) -> float:
    """A Python float whose JSON text is the shortest float32 decimal of ``v``."""
    return float(f32_str(v))


def f64_str(v: float) -> str:
    """Round-trip decimal of a float64 (``repr``); +-inf clamped to +-DBL_MAX."""
    v = float(v)
    if np.isinf(v):
        v = DBL_MAX if v > 0 else -DBL_MAX
    return repr(v)


# --- nested JSON ----------------------------------------------------------------------


def json_text(obj, indent: int | None = None) -> str:
    """``json.dumps(obj, indent=indent)`` (``separators=(",", ":")`` when ``indent`` is
    None) of nested dicts and lists of any depth.

    The formats that nest a tree's nodes (the XGBoost dump, Solr) are as deep as the
    tree; ``json.dumps`` recurses once per level (twice for the dump's ``children``
    lists) and stopped with a RecursionError at ~500 levels, which a model with
    ``max_leaf_nodes`` in the hundreds reaches.  This writer keeps a stack instead.
    """
    if indent is None:
        try:  # the C encoder, when the nesting allows it
            return json.dumps(obj, separators=(",", ":"))
        except RecursionError:
            pass
    key_sep = ": " if indent is not None else ":"
    out: list[str] = []

    def pad(level: int) -> str:
        return "" if indent is None else "\n" + " " * (indent * level)

    stack: list[tuple[bool, object, int]] = [(False, obj, 0)]  # (is text, item, level)
    while stack:
        is_text, v, level = stack.pop()
        if is_text:
            out.append(v)  # type: ignore[arg-type]
            continue
        if isinstance(v, dict | list) and v:
            tasks: list[tuple[bool, object, int]] = []
            items = v.items() if isinstance(v, dict) else enumerate(v)
            for i, (k, item) in enumerate(items):
                head = ("," if i else "") + pad(level + 1)
                if isinstance(v, dict):
                    head += _json_scalar(k) + key_sep
                tasks += [(True, head, 0), (False, item, level + 1)]
            tasks.append((True, pad(level) + ("}" if isinstance(v, dict) else "]"), 0))
            out.append("{" if isinstance(v, dict) else "[")
            stack += reversed(tasks)
        else:
            out.append(_json_scalar(v))
    return "".join(out)


def _json_scalar(v) -> str:
    """``json.dumps(v)`` of a str, int or finite float, without its per-call cost."""
    if isinstance(v, str):
        return encode_basestring_ascii(v)
    if isinstance(v, float) and math.isfinite(v):
        return float.__repr__(v)
    if isinstance(v, int) and not isinstance(v, bool):
        return int.__repr__(v)
    return json.dumps(v)

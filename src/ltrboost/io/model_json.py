"""Model files: versioned JSON, written atomically, validated on load.  Never pickle.

Layout (``format_version`` 1)::

    {
      "format": "ltrboost-model",
      "format_version": 1,
      "library_version": "0.1.0",
      "objective": "lambdamart",
      "objective_params": {...},
      "n_features": 46, "n_outputs": 1, "feature_names": [...] | null,
      "init_score": [0.0],
      "update_rule": "additive" | "averaged",
      "best_iteration": 57 | null,
      "params": {...training parameters...},
      "evals_result": {"valid": {"ndcg@10": [...]}},  (null: NaN, older files)
      "trees": [ {"output": 0, "value": [...], "feature": [...], "threshold": [...],
                  "missing_left": [...], "left": [...], "right": [...],
                  "bin_threshold": [...], "gain": [...], "count": [...],
                  "sum_hessians": [...], "depth": [...] }, ... ]
    }

Floats are written with Python's shortest round-trip repr, so a loaded model predicts
bit-identically.  Leaves have ``feature = -1`` and ``left = right = -1``.  Non-finite
numbers are refused on write and on load (a NaN leaf would silently poison scores).
Loading refuses duplicate JSON keys, checks every field against the schema
(:mod:`ltrboost.io.model_schema`) and every structural invariant (children inside the
tree, every node reachable exactly once, no cycles, features inside ``n_features``) and
raises :class:`ModelFormatError` naming the file and the problem (a file that is no
model is named for what it is: empty, truncated, compressed, UTF-16, binary, a data
file, another library's model); it never executes anything.  ``missing`` ("zero" |
"nan" | null) is the convention for features absent from sparse LETOR lines the
model was trained with; ``position_bias`` (only in models trained with
``unbiased=True``, after ``evals_result``) holds
``{"t_plus": [...], "t_minus": [...]}``, the estimated click / non-click position
biases after the last round trained, index ``k - 1`` for position ``k``, which
prediction never uses (and, when early stopping trained rounds past
``best_iteration``, ``"best_iteration": {"t_plus": [...], "t_minus": [...]}``, the
estimates after that round); ``training_inputs`` (only in models trained by the CLI
with ``--pairs`` or ``--position``, and in checkpoints) holds
``{"pairs" | "position" | "train": {"file": name, "sha256": hex}}``, the content
fingerprints ``train --resume`` compares (a checkpoint's alone records ``train``); run-time
settings (``n_threads``) are not written.  :class:`TreeJSONCache` lets checkpoints
reuse finished trees' text.

This module reads and writes plain dicts and imports no model class: a model is given
as its *fields* (a mapping with the keyword arguments of ``ltrboost.model.Booster``:
``objective``, ``trees`` as ``NODE_DTYPE`` arrays, ...), and the model layer
(:mod:`ltrboost.model`) converts a ``Booster`` to and from them.

* :func:`tree_to_dict` / :func:`tree_from_dict`: one tree <-> its JSON object, each
  usable on its own (e.g. by a checkpoint writer);
* :func:`model_to_dict` / :func:`model_fields_from_dict`: fields <-> the JSON document
  (validated on the way in);
* :func:`write_model` / :func:`read_model_fields` / :func:`model_fields_from_json`:
  fields <-> the file or its text.

The names used before that split (``save_model``, ``booster_to_dict`` taking a
``Booster``; ``load_model``, ``model_from_json``, ``booster_from_dict`` returning one)
still work from here: the writers accept any object with ``model_fields()``, the
readers forward to :mod:`ltrboost.model`.
"""

from __future__ import annotations

import codecs
import json
import math
import numbers
import os
import re
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from ltrboost._checks import lone_surrogate, without_surrogates
from ltrboost._config import NODE_DTYPE
from ltrboost._version import __version__
from ltrboost.io._atomic import UNKNOWN_STATE, atomic_write
from ltrboost.io.model_schema import (  # ModelFormatError is public here too
    FOREIGN_HINT,
    TREE_KEYS,
    ModelFormatError,
    is_int,
    is_number,
    legacy_ignored_params,
    validate_model_dict,
)

# Run-time settings: they never change the model, so they are kept out of the file
# (files are byte-identical for any n_threads).
RUNTIME_PARAMS = ("n_threads",)

from ltrboost.io.model_schema import FORMAT_NAME, FORMAT_VERSION  # noqa: E402

_TREE_FIELDS = {
    # json key: (NODE_DTYPE field, python type)
    "value": ("value", float),
    "feature": ("feature_idx", int),
    "threshold": ("num_threshold", float),
    "bin_threshold": ("bin_threshold", int),
    "missing_left": ("missing_go_to_left", int),
    "left": ("left", int),
    "right": ("right", int),
    "gain": ("gain", float),
    "count": ("count", int),
    "sum_hessians": ("sum_hessians", float),
    "depth": ("depth", int),
}


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, numbers.Integral) and not isinstance(x, bool | int):
        return int(x)
    if isinstance(x, numbers.Real) and not isinstance(x, bool | int | float):
        return float(x)  # e.g. a fractions.Fraction parameter, trained on as its float
    return x


def _evals_to_json(evals: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``evals_result`` with a non-finite metric value (a custom metric's NaN) as null:
    JSON has no NaN, and the model must still be saved."""
    return {
        str(name): {
            str(metric): [v if math.isfinite(v) else None for v in map(float, values)]
            for metric, values in per_metric.items()
        }
        for name, per_metric in evals.items()
    }


def _evals_from_json(evals: Mapping[str, Mapping[str, list]]) -> dict[str, Any]:
    """``evals_result`` as read: null (a non-finite value when saved) is NaN."""
    return {
        name: {
            metric: [math.nan if v is None else v for v in values]
            for metric, values in per_metric.items()
        }
        for name, per_metric in evals.items()
    }


def tree_to_dict(nodes: np.ndarray, output: int = 0) -> dict[str, Any]:
    """One tree (``NODE_DTYPE`` array) as its JSON object; refuses non-finite leaves."""
    t: dict[str, Any] = {"output": int(output)}
    for key, (fld, typ) in _TREE_FIELDS.items():
        col = nodes[fld]
        if key == "threshold":
            # leaves carry no threshold; +inf thresholds (last bin) become null
            vals = [
                None if (leaf or v == math.inf) else float(v)
                for v, leaf in zip(col.tolist(), nodes["is_leaf"].tolist(), strict=True)
            ]
            for v in vals:  # null reads back as +inf: never write it for NaN or -inf
                if v is not None and not math.isfinite(v):
                    raise ValueError(f"model has a split threshold {v}; refusing to save it")
            t[key] = vals
        else:
            t[key] = [typ(v) for v in col.tolist()]
    for v in t["value"]:
        if not math.isfinite(v):
            raise ValueError("model has a non-finite leaf value; refusing to save it")
    return t


def _as_fields(model: Any) -> Mapping[str, Any]:
    """A model's fields: a mapping as it is, else ``model.model_fields()``."""
    return model if isinstance(model, Mapping) else model.model_fields()


def _header_dict(f: Mapping[str, Any]) -> dict[str, Any]:
    """Every field of the JSON document but ``trees`` (which comes last)."""
    params = {k: v for k, v in _jsonable(f["params"]).items() if k not in RUNTIME_PARAMS}
    names = f["feature_names"]  # strings: a file with other names would not load
    for k, name in enumerate(names or ()):
        bad = lone_surrogate(str(name))
        if bad is not None:  # json.dumps would write it escaped: no text, no export
            raise ValueError(
                f"feature_names[{k}]={str(name)!r} holds a lone surrogate ({bad}), which "
                "is no Unicode text (a model file is UTF-8 JSON); refusing to save it: "
                "rename the feature"
            )
    out = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "objective": f["objective"],
        "objective_params": _jsonable(f["objective_params"]),
        "n_features": int(f["n_features"]),
        "n_outputs": int(f["n_outputs"]),
        "feature_names": None if names is None else [str(s) for s in names],
        "init_score": [float(v) for v in f["init_score"]],
        "update_rule": f["update_rule"],
        # the data convention for absent sparse features ("zero" | "nan" | None)
        "missing": f.get("missing"),
        # NaN in data read with missing="zero" (written only then: other files do not change)
        **({"trained_with_nan": True} if f.get("trained_with_nan") else {}),
        "best_iteration": f["best_iteration"],
        "params": params,
        "evals_result": _evals_to_json(f["evals_result"]),
    }
    bias = f.get("position_bias")
    if bias is not None:  # unbiased LambdaMART only: other files do not change
        out["position_bias"] = _bias_to_json(bias)
        best = f.get("best_position_bias")
        if best is not None:  # early stopping trained past the best round
            out["position_bias"]["best_iteration"] = _bias_to_json(best)
    inputs = f.get("training_inputs")
    if inputs:  # the CLI's --pairs / --position (and a checkpoint's TRAIN) only
        out["training_inputs"] = {
            k: {"file": str(v["file"]), "sha256": str(v["sha256"])}
            for k, v in sorted(inputs.items())
        }
    return out


def _bias_to_json(bias: Mapping[str, Any]) -> dict[str, list[float]]:
    d_bias = {k: [float(v) for v in bias[k]] for k in ("t_plus", "t_minus")}
    for v in d_bias["t_plus"] + d_bias["t_minus"]:
        if not math.isfinite(v):
            raise ValueError("model has a non-finite position bias; refusing to save it")
    return d_bias


def model_to_dict(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON document of a model given its fields (or an object with
    ``model_fields()``)."""
    f = _as_fields(fields)
    d = _header_dict(f)
    d["trees"] = [
        tree_to_dict(nodes, out) for nodes, out in zip(f["trees"], f["tree_outputs"], strict=True)
    ]
    return d


def _dumps(obj: Any) -> str:
    return json.dumps(obj, allow_nan=False, separators=(",", ":"))


class TreeJSONCache:
    """Serialized trees kept between checkpoints, so a checkpoint costs the text of the
    new trees plus a copy of the cached text, not a re-serialization of the model.

    Trees are matched by identity (a finished tree's node array is never modified): the
    same array, or a view of the same memory (a callback's ``env.snapshot()`` holds
    read-only views of the trees); a model whose trees are not the cached ones (e.g.
    another model) is re-serialized.
    """

    def __init__(self) -> None:
        self._nodes: list[Any] = []
        self._text: list[str] = []

    def texts(self, fields: Mapping[str, Any]) -> list[str]:
        trees, outputs = fields["trees"], fields["tree_outputs"]
        k = 0
        n = min(len(trees), len(self._nodes))
        while k < n and _same_nodes(trees[k], self._nodes[k]):
            k += 1
        del self._nodes[k:], self._text[k:]
        for nodes, out in zip(trees[k:], outputs[k:], strict=True):
            self._nodes.append(nodes)
            self._text.append(_dumps(tree_to_dict(nodes, out)))
        return self._text


def _same_nodes(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are one node array: the same object, or views of the same
    memory (the same owner, address, shape and type)."""
    if a is b:
        return True
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False

    def owner(x: np.ndarray) -> np.ndarray:
        while isinstance(x.base, np.ndarray):
            x = x.base
        return x

    return (
        owner(a) is owner(b)
        and a.ctypes.data == b.ctypes.data
        and a.shape == b.shape
        and a.strides == b.strides
        and a.dtype == b.dtype
    )


def model_json_chunks(model: Any, tree_cache: TreeJSONCache | None = None) -> list[str]:
    """The model file's text in chunks (trees last); joined it equals the compact
    ``json.dumps(model_to_dict(model))``."""
    f = _as_fields(model)
    head = _dumps(_header_dict(f))
    if tree_cache is None:
        tree_texts = [
            _dumps(tree_to_dict(nodes, out))
            for nodes, out in zip(f["trees"], f["tree_outputs"], strict=True)
        ]
    else:
        tree_texts = tree_cache.texts(f)
    chunks = [head[:-1], ',"trees":[']
    for k, t in enumerate(tree_texts):
        if k:
            chunks.append(",")
        chunks.append(t)
    chunks.append("]}")
    return chunks


booster_to_dict = model_to_dict  # the name used before the model layer moved out


def write_model(
    model,
    path: str | os.PathLike,
    *,
    tree_cache: TreeJSONCache | None = None,
    unchanged_since: Any = UNKNOWN_STATE,
    new_mode: int | None = None,
) -> None:
    """Write a model (its fields, or an object with ``model_fields()``) as JSON,
    atomically (symlinks, devices, ``unchanged_since`` and ``new_mode``: see
    :func:`ltrboost.io._atomic.atomic_write`)."""
    chunks = model_json_chunks(model, tree_cache)  # fails before touching the file
    atomic_write(path, chunks, unchanged_since=unchanged_since, new_mode=new_mode)


save_model = write_model  # the name used before the model layer moved out


class ModelMemoryError(MemoryError):
    """A model file too large to read (its bytes, its text and the parsed JSON) in the
    memory this process may use: the bare ``MemoryError`` of ``bytes``, ``decode`` or
    ``json.loads`` named neither the file nor its size.  The message, one line, names
    both; ``cli_message`` is the same (the CLI prints it).  Attributes: ``path`` and
    ``nbytes`` (the file's size; 0 when it could not be told)."""

    def __init__(self, path: str, nbytes: int) -> None:
        # in binary units, as the other memory errors (nothing imported: memory is short)
        amount, unit = float(nbytes), "bytes"
        for u in ("KiB", "MiB", "GiB", "TiB"):
            if amount < 1024:
                break
            amount, unit = amount / 1024, u
        text = f"{amount:.1f} {unit}, " if unit != "bytes" else ""
        size = f" ({text}{nbytes} bytes)" if nbytes else ""
        message = (
            f"{path}: out of memory reading the model file{size}: reading takes a few "
            "times its size while its JSON is parsed; let this process use more memory"
        )
        super().__init__(message)
        self.cli_message = message
        self.path = path
        self.nbytes = nbytes


def read_model_fields(path: str | os.PathLike) -> dict[str, Any]:
    """Read a model file; the validated fields (see :func:`model_fields_from_dict`).

    A file that is not UTF-8 JSON text is named for what it is where its start tells:
    empty, compressed, UTF-16 / UTF-32, binary, another library's model, a data file.
    One too large to read in memory is a :class:`ModelMemoryError` naming it."""
    path = os.fspath(path)
    try:
        return _read_model_fields(path)
    except MemoryError as e:
        if isinstance(e, ModelMemoryError):
            raise
    # raised outside the handler: the MemoryError's frames (the partial text) are freed
    try:
        nbytes = os.stat(path).st_size
    except OSError:
        nbytes = 0
    raise ModelMemoryError(path, nbytes)


def _read_model_fields(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD_BYTES)
            _check_start(head, path)  # before reading the rest: a data file is large
            rest = f.read()
    except OSError as e:
        raise ModelFormatError(f"cannot read: {e.strerror}", path) from None
    data = head + rest if rest else head
    del rest
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:  # the offset counts from the file's start
        raise ModelFormatError(_not_utf8(e), path) from None
    del data
    return model_fields_from_json(text, path=path)


# The start of a file that :func:`read_model_fields` checks before it reads the rest.
_HEAD_BYTES = 1 << 16
_BYTE_ORDER_MARKS = (  # UTF-32's first: its little-endian mark begins with UTF-16's
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)
_WIDE_ENCODINGS = (
    ("utf-32-le", "UTF-32"),
    ("utf-32-be", "UTF-32"),
    ("utf-16-le", "UTF-16"),
    ("utf-16-be", "UTF-16"),
)


def _not_utf8(e: UnicodeDecodeError) -> str:
    return (
        f"not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}; is this "
        "an ltrboost JSON model, or was it saved in another encoding?)"
    )


def _wide_encoding(head: bytes) -> str | None:
    """ "UTF-16" or "UTF-32" when ``head`` (a file's start) is JSON text in one: a byte
    order mark, or a ``{`` or ``[`` among NUL bytes (an editor's or PowerShell's ``>``
    "Unicode")."""
    for bom, name in _BYTE_ORDER_MARKS:
        if head.startswith(bom):
            return name
    if b"\x00" not in head[:4]:
        return None
    for codec, name in _WIDE_ENCODINGS:
        start = head[:64].decode(codec, errors="replace").lstrip(" \t\r\n")
        if start[:1] in ("{", "[") and "\x00" not in start:
            return name
    return None


def _check_start(head: bytes, path: str) -> None:
    """Refuse a file whose first bytes ``head`` already show that it is no ltrboost
    model, naming what it is; a start that may be a model passes."""

    def fail(msg: str):
        raise ModelFormatError(msg, path)

    if not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):  # (no import for a model)
        from ltrboost.io.letor import _compression

        kind = _compression(head)
        if kind is not None:
            fail(f"the file is {kind}-compressed: decompress it first (a model file is JSON text)")
    wide = _wide_encoding(head)
    if wide is not None:
        fail(f"the file is {wide} text: save it as UTF-8 (a model file is UTF-8 JSON)")
    nul = head.find(b"\x00")
    if nul >= 0:  # never in JSON text (XGBoost's UBJSON model starts with '{', too)
        fail(f"not a JSON model: the file is binary (a NUL byte at offset {nul})")
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError as e:  # binary, or text saved in another encoding
        fail(_not_utf8(e))
    start = text.lstrip("\ufeff \t\r\n")[:200]
    if not start:
        if len(head) < _HEAD_BYTES:  # the whole file
            fail("not valid JSON: the file is empty" + (" (only white space)" if head else ""))
        return
    if start[0] != "{":
        foreign = _foreign_text(start)
        fail(
            f"not an ltrboost model (a JSON object, '{{...}}'); the file starts with "
            f"{start[:40].splitlines()[0]!r} "
            + (f"({foreign}? {FOREIGN_HINT})" if foreign else "(a data file given as the model?)")
        )


def _foreign_text(start: str) -> str | None:
    """What another library's model file that starts with ``start`` is, or None."""
    if start.startswith("tree") and "version=" in start:
        return "a LightGBM model"
    if start.startswith(("## ", "<ensemble>")):
        return "a RankLib model"
    if start.startswith("[") and '"nodeid"' in start:
        return "an XGBoost model's JSON dump"
    return None


def _reject_constant(name: str):
    raise ValueError(f"non-finite number {name}")


def _finite_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):  # 1e400 overflows to inf
        raise ValueError(f"number {text[:40]} is out of the float range")
    return v


def _float_range_int(text: str) -> int:
    v = int(text)
    if not -sys.float_info.max <= v <= sys.float_info.max:  # 1 and 400 zeros
        raise ValueError(f"number {text[:40]}... is out of the float range")
    return v


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise _DuplicateKey(k)
        d[k] = v
    return d


_WHITE_SPACE = re.compile(r"[ \t\r\n]*")
# What is left of a number cut short (``-``, ``1.``, ``2e-``) once JSON read its digits.
_NUMBER_CUT = re.compile(r"-|[.eE][-+.eE0-9]*")
# ... and of a \\uXXXX escape (a non-ASCII name as the writer escapes it, a pair for 😀).
_ESCAPE_CUT = re.compile(r"u[0-9a-fA-F]{0,4}(\\(u[0-9a-fA-F]{0,3})?)?")


def _ends_early(text: str, e: json.JSONDecodeError) -> bool:
    """Whether the JSON error ``e`` is the text's end: the parser wanted more (a cut
    inside a string, a number, a literal or between values), not a wrong character."""
    if e.msg.startswith("Unterminated string"):
        return True
    if e.msg == "Extra data":  # a whole document, then more
        return False
    rest = text[e.pos :].rstrip(" \t\r\n")
    if e.msg.startswith("Invalid \\uXXXX escape"):
        return _ESCAPE_CUT.fullmatch(rest) is not None
    return (
        not rest
        or _NUMBER_CUT.fullmatch(rest) is not None
        or any(w.startswith(rest) for w in ("null", "true", "false"))
    )


def model_fields_from_json(text: str, path: str | None = None) -> dict[str, Any]:
    """Parse and validate model text; the model's fields (see
    :func:`model_fields_from_dict`)."""
    if text.startswith("\ufeff"):  # a BOM, as an editor may add (data files take one)
        text = text[1:]
    if _WHITE_SPACE.fullmatch(text):  # (no copy of a large text, as strip() makes)
        raise ModelFormatError("not valid JSON: the file is empty", path)
    try:
        d = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_float_range_int,
            object_pairs_hook=_no_duplicate_keys,
        )
    except _DuplicateKey as e:
        raise ModelFormatError(f"duplicate key {e.args[0]!r} in one JSON object", path) from None
    except json.JSONDecodeError as e:
        if _ends_early(text, e):
            raise ModelFormatError(
                f"not valid JSON: the file ends before the JSON does ({e}); truncated? "
                "(a copy or a write that did not finish)",
                path,
            ) from None
        raise ModelFormatError(f"not valid JSON ({e})", path) from None
    except ValueError as e:
        raise ModelFormatError(f"not valid JSON ({e})", path) from None
    except RecursionError:
        raise ModelFormatError("JSON nested too deeply", path) from None
    return model_fields_from_dict(d, path=path)


def model_fields_from_dict(d: Any, path: str | None = None) -> dict[str, Any]:
    """Validate a model document; return the model's fields as plain values.

    Every field is checked first by :func:`ltrboost.io.model_schema.validate_model_dict`.
    The keys are the keyword arguments of ``ltrboost.model.Booster``; trees are
    ``NODE_DTYPE`` arrays.  Raises :class:`ModelFormatError` on any invalid input.
    """

    def fail(msg: str):
        raise ModelFormatError(msg, path)

    # a file of an older version may hold a value, now refused, of a parameter its
    # objective ignores: read as unset (as then), not a reason to refuse the model
    legacy = {}
    if isinstance(d, dict):
        legacy = legacy_ignored_params(d.get("params"), d.get("objective"))
    if legacy:
        import warnings

        for name, value in legacy.items():
            warnings.warn(
                f"{path or 'model'}: params.{name}={value!r} is ignored: objective "
                f"{d['objective']!r} does not use it, and ltrboost now refuses that value "
                "(older versions recorded it unchecked); it is read as unset",
                UserWarning,
                stacklevel=2,
            )
        d = {**d, "params": {**d["params"], **dict.fromkeys(legacy)}}
    d = _names_as_text(d, path)
    validate_model_dict(d, path)
    n_features = d["n_features"]
    n_outputs = d["n_outputs"]
    init = d["init_score"]
    trees = []
    outputs = []
    for t_idx, t in enumerate(d["trees"]):
        nodes, out = tree_from_dict(
            t, n_features=n_features, n_outputs=n_outputs, index=t_idx, path=path
        )
        if out != t_idx % n_outputs:  # predict(iteration=k) takes the first k * n_outputs
            fail(
                f"tree {t_idx}: output {out}, expected {t_idx % n_outputs} (a round is one "
                f"tree per output, in order 0..{n_outputs - 1})"
            )
        trees.append(nodes)
        outputs.append(out)
    # Leaf values that can add up to +-inf would give non-finite scores at predict time.
    bound = np.abs(np.asarray(init, dtype=np.float64))
    with np.errstate(over="ignore"):
        for nodes, out in zip(trees, outputs, strict=True):
            bound[out] += float(np.max(np.abs(nodes["value"])))
    if not np.all(np.isfinite(bound)):
        fail("leaf values can add up to a non-finite score")
    # feature importance sums the gains: an infinite total printed `inspect --json` as
    # Infinity / NaN (not JSON)
    with np.errstate(over="ignore"):
        gains = sum(float(np.sum(np.abs(nodes["gain"]))) for nodes in trees)
    if not math.isfinite(gains):
        fail("split gains add up to a non-finite total")
    return {
        "objective": d["objective"],
        "objective_params": d.get("objective_params") or {},
        "init_score": np.asarray(init, dtype=np.float64),
        "trees": trees,
        "tree_outputs": outputs,
        "n_features": n_features,
        "update_rule": d["update_rule"],
        "best_iteration": d.get("best_iteration"),
        "params": {k: v for k, v in (d.get("params") or {}).items() if k not in RUNTIME_PARAMS},
        "feature_names": d.get("feature_names"),
        "evals_result": _evals_from_json(d.get("evals_result") or {}),
        "n_outputs": n_outputs,
        "missing": d.get("missing"),
        "trained_with_nan": bool(d.get("trained_with_nan", False)),
        "position_bias": d.get("position_bias"),
        "best_position_bias": (d.get("position_bias") or {}).get("best_iteration"),
        "training_inputs": d.get("training_inputs"),
    }


def _names_as_text(d: Any, path: str | None) -> Any:
    """``d`` with each feature name holding a lone surrogate written as its escape
    (``"\\ud800"`` read as the six characters ``\\ud800``), with a warning naming the
    field: ltrboost wrote such names (JSON-escaped) before refusing them, and their
    models predict; the name is no text, so it could not be exported or printed."""
    names = d.get("feature_names") if isinstance(d, dict) else None
    if not isinstance(names, list):
        return d
    fixed = list(names)
    for k, name in enumerate(names):
        if not isinstance(name, str) or lone_surrogate(name) is None:
            continue
        fixed[k] = without_surrogates(name)
        import warnings

        warnings.warn(
            f"{path or 'model'}: feature_names[{k}]={name!r} holds a lone surrogate "
            f"({lone_surrogate(name)}), which is no Unicode text (older versions saved "
            f"it); read as {fixed[k]!r}, the escape as text (a DataFrame given to "
            "predict takes either name)",
            UserWarning,
            stacklevel=3,
        )
    return d if fixed == names else {**d, "feature_names": fixed}


def _finite_number(v: Any) -> bool:
    return is_number(v)


def tree_from_dict(
    t: Any,
    *,
    n_features: int,
    n_outputs: int = 1,
    index: int = 0,
    path: str | None = None,
) -> tuple[np.ndarray, int]:
    """One tree's JSON object -> ``(NODE_DTYPE array, output)``, fully validated.

    Raises :class:`ModelFormatError` naming ``path`` and tree ``index`` on any problem.
    """

    def fail(msg: str):
        raise ModelFormatError(msg, path)

    where = f"tree {index}"
    if not isinstance(t, dict):
        fail(f"{where} is not an object")
    unknown = sorted(set(t) - TREE_KEYS)
    if unknown:
        fail(f"{where}: unknown field(s) {unknown}")
    out = t.get("output")
    if not is_int(out):
        fail(f"{where}: output {out!r} is not an integer (the score column, 0..{n_outputs - 1})")
    if not 0 <= out < n_outputs:
        fail(f"{where}: output {out!r} is out of range")
    n = None
    for key in _TREE_FIELDS:
        col = t.get(key)
        if not isinstance(col, list):
            fail(f"{where}: field {key!r} is missing or not a list")
        if n is None:
            n = len(col)
        elif len(col) != n:
            fail(f"{where}: field {key!r} has {len(col)} entries, expected {n}")
    if not n:
        fail(f"{where} has no nodes")
    feat = t["feature"]
    left = t["left"]
    right = t["right"]
    nodes = _columns_checked(t, n, n_features)
    if nodes is None:  # a problem: find and name its node, node by node
        nodes = np.zeros(n, dtype=NODE_DTYPE)
        for k in range(n):
            is_leaf = left[k] == -1 and right[k] == -1
            for key, (fld, typ) in _TREE_FIELDS.items():
                v = t[key][k]
                if key == "threshold":
                    if v is None:
                        v = math.inf
                    elif not _finite_number(v):
                        fail(f"{where} node {k}: threshold {v!r} is not a finite number")
                elif typ is int:
                    if not isinstance(v, int) or isinstance(v, bool):
                        fail(f"{where} node {k}: {key} {v!r} is not an integer")
                elif not _finite_number(v):
                    fail(f"{where} node {k}: {key} {v!r} is not a finite number")
                if key == "bin_threshold" and not 0 <= v <= 255:
                    fail(f"{where} node {k}: bin_threshold {v} is out of range")
                if key == "missing_left" and v not in (0, 1):
                    fail(f"{where} node {k}: missing_left must be 0 or 1")
                if typ is int and key not in ("bin_threshold", "missing_left"):
                    lo, hi = (-(2**62), 2**62) if key == "count" else (-(2**31), 2**31 - 1)
                    if not lo <= v <= hi:
                        fail(f"{where} node {k}: {key} {v} is out of range")
                nodes[k][fld] = v
            nodes[k]["is_leaf"] = 1 if is_leaf else 0
            if is_leaf:
                if feat[k] != -1:
                    fail(f"{where} node {k}: a leaf must have feature -1")
            else:
                if not 0 <= feat[k] < n_features:
                    fail(f"{where} node {k}: feature {feat[k]} is outside 0..{n_features - 1}")
                for child in (left[k], right[k]):
                    if child == 0:
                        fail(f"{where} node {k}: child 0 is the root (a cycle)")
                    if not 0 < child < n:
                        fail(f"{where} node {k}: child {child} points outside the tree")
    # every node reachable exactly once from the root: a tree, no cycles, no sharing;
    # and each node's stored depth its depth in that tree (inspect's max depth, plot_tree
    # and trees_to_dataframe read it)
    seen = [False] * n
    leaf = nodes["is_leaf"].tolist()
    depth = nodes["depth"].tolist()
    stack = [(0, 0)]
    while stack:
        k, d = stack.pop()
        if seen[k]:
            fail(f"{where}: node {k} is reachable twice (not a tree)")
        seen[k] = True
        if depth[k] != d:
            fail(f"{where} node {k}: depth {depth[k]} is not its depth in the tree ({d})")
        if not leaf[k]:
            stack.append((left[k], d + 1))
            stack.append((right[k], d + 1))
    if not all(seen):
        fail(f"{where}: node {seen.index(False)} is unreachable")
    return nodes, out


def _columns_checked(t: dict, n: int, n_features: int) -> np.ndarray | None:
    """The tree's node array when every column passes :func:`tree_from_dict`'s checks,
    done a column at a time; None when anything fails (the node-by-node loop then
    finds and names the first problem).  The checks are the loop's: integers are
    ``int`` (never ``bool``) in range, numbers finite (``null`` threshold = +inf),
    ``bin_threshold`` 0..255, ``missing_left`` 0/1, a leaf's feature -1, a split's
    feature inside ``n_features`` and its children inside the tree (issue 17 of the
    adversarial pass: a 20,000-tree model took 23 s to load node by node)."""
    nodes = np.zeros(n, dtype=NODE_DTYPE)
    try:
        for key, (fld, typ) in _TREE_FIELDS.items():
            col = t[key]
            if key == "threshold":
                if not all(v is None or type(v) is float or type(v) is int for v in col):
                    return None
                arr = np.array([math.inf if v is None else v for v in col], dtype=np.float64)
                if not (np.isfinite(arr) | (arr == math.inf)).all():
                    return None
                if math.inf in col:  # a number that is inf (not null): refused
                    return None
            elif typ is int:
                if not all(type(v) is int for v in col):
                    return None
                arr = np.array(col, dtype=np.int64)
                if key == "bin_threshold":
                    lo, hi = 0, 255
                elif key == "missing_left":
                    lo, hi = 0, 1
                elif key == "count":
                    lo, hi = -(2**62), 2**62
                else:
                    lo, hi = -(2**31), 2**31 - 1
                if arr.min() < lo or arr.max() > hi:
                    return None
            else:
                if not all(type(v) is float or type(v) is int for v in col):
                    return None
                arr = np.array(col, dtype=np.float64)
                if not np.isfinite(arr).all():
                    return None
            nodes[fld] = arr
    except (OverflowError, ValueError, TypeError):
        return None
    feat, left, right = nodes["feature_idx"], nodes["left"], nodes["right"]
    is_leaf = (left == -1) & (right == -1)
    inner = ~is_leaf
    if (feat[is_leaf] != -1).any():
        return None
    if ((feat[inner] < 0) | (feat[inner] >= n_features)).any():
        return None
    for child in (left[inner], right[inner]):
        if ((child <= 0) | (child >= n)).any():
            return None
    nodes["is_leaf"] = is_leaf
    return nodes


# --- readers used before the model layer moved out: they return a Booster ---


_MODEL_ALIASES = ("load_model", "model_from_json", "booster_from_dict")


def __getattr__(name: str):
    # This module imports no model class; the old names resolve when first asked for.
    if name in _MODEL_ALIASES:
        import ltrboost.model

        return getattr(ltrboost.model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

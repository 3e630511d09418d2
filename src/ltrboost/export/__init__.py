"""Export a trained model to the formats that search engines and serving stacks read.

``export_model(booster, path, format=..., feature_names=...)`` (also ``Booster.export``
/ ``Ranker.export`` and ``ltrboost export``) writes one of :data:`FORMATS`; see
``docs/deploy.md`` for how each consumer loads it.  Every exporter reads the trees
through :func:`ltrboost.export._trees.collect` and chooses its thresholds so that the
consumer routes every finite float32 feature value and NaN exactly as ltrboost does
(each module's docstring states the consumer's rule).

The ``onnx`` package is imported only when exporting ONNX (``pip install
'ltrboost[onnx]'``).
"""

from __future__ import annotations

import json
import os
import unicodedata
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ltrboost.export._trees import (
    ExportError,
    Float32RangeWarning,
    collect,
    feature_name_line,
    read_feature_names,
)

FORMATS = ("lightgbm", "xgboost", "xgboost-dump", "solr", "ranklib", "onnx")

__all__ = [
    "FORMATS",
    "ExportError",
    "Float32RangeWarning",
    "createmodel_body",
    "export_bytes",
    "export_model",
]


def _names(feature_names) -> list[str] | None:
    if feature_names is None:
        return None
    if isinstance(feature_names, str | os.PathLike):
        try:
            return read_feature_names(os.fspath(feature_names))
        except OSError as e:
            raise ExportError(f"cannot read feature names {feature_names}: {e.strerror}") from None
        except UnicodeDecodeError:
            raise ExportError(_not_utf8(os.fspath(feature_names))) from None
    try:
        return [str(s) for s in feature_names]
    except TypeError:  # a number, an object that is no list of names
        raise ExportError(
            f"feature_names must be a list of names or a file of them, not "
            f"{type(feature_names).__name__} {feature_names!r}"
        ) from None


def _not_utf8(path: str) -> str:
    """``FILE:LINE: not UTF-8 text (byte 0x..)`` of the feature names file ``path``,
    which did not decode, as the other inputs' readers say it (it said "cannot read
    feature names FILE: ... at offset N", N counted in the decoder's chunk, not the
    file), and a compressed file named as one."""
    from ltrboost.io.letor import compressed_problem

    try:
        raw = Path(path).read_bytes().removeprefix(b"\xef\xbb\xbf")
        raw.decode("utf-8")
    except OSError as e:  # gone since: say so
        return f"cannot read feature names {path}: {e.strerror}"
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        problem = f"not UTF-8 text (byte 0x{raw[err.start]:02x})"
        return f"{path}:{line}: {compressed_problem(raw, problem) or problem}"
    return f"cannot read feature names {path}: not UTF-8 text"  # changed since: no line


def _as_booster(booster):
    """The model to export: a Booster (anything with its interface), or a fitted
    Ranker's ``booster_`` (``Ranker.export`` exports that; the functions here ended in
    an AttributeError about ``_resolve_iterations``)."""
    if hasattr(booster, "_resolve_iterations"):
        return booster
    check_fitted = getattr(booster, "_check_fitted", None)
    if callable(check_fitted):  # a Ranker (or DaskRanker): NotFittedError when unfitted
        check_fitted()
        return booster.booster_
    raise ExportError(
        f"export takes a Booster (ltrboost.load_model(path) reads one from a model file) "
        f"or a fitted Ranker, not {type(booster).__name__} {booster!r:.60}"
    )


def _collect(booster, feature_names, iteration: int | None):
    """:func:`collect` with the names resolved; a bad names file is named in the error."""
    names = _names(feature_names)
    try:
        return collect(booster, names, iteration=iteration)
    except ExportError as e:
        raise _in_names_file(e, feature_names) from None


def _in_names_file(e: ExportError, feature_names: Any) -> ExportError:
    """``e`` naming the feature names file it is about (``FILE: problem``, and the line
    of the name it names); ``e`` itself when the names came from no file, or when it
    names the file already."""
    if not isinstance(feature_names, str | os.PathLike) or getattr(e, "names_file", False):
        return e
    where = os.fspath(feature_names)
    message, cli = str(e), e.cli_message
    line = None if e.feature is None else feature_name_line(where, e.feature)
    if line is not None and e.feature_words:
        words = e.feature_words
        message = message.replace(words, f"{words} (line {line})", 1)
        cli = cli.replace(words, f"{words} (line {line})", 1)
    located = ExportError(
        f"{where}: {message}",
        cli=f"{where}: {cli}",
        feature=e.feature,
        feature_words=e.feature_words,
    )
    located.names_file = True  # type: ignore[attr-defined]
    return located


def _check_model_name(name: str) -> str:
    """``name`` as a Solr model or ``_createmodel`` name: one the engine's query can
    refer to (Solr's ``{!ltr model=NAME}``, OpenSearch's ``sltr`` ``"model"``), so not
    empty or blank and without control characters (a newline, a tab, NUL)."""
    if not isinstance(name, str):
        raise ExportError(f"the model name must be a str, not {type(name).__name__} {name!r:.60}")
    if not name.strip() or any(unicodedata.category(c) == "Cc" for c in name):
        problem = (
            f"the model name {name!r} is empty or blank or holds a control character, "
            "which the engine's query (Solr's {!ltr model=...}, OpenSearch's sltr) "
            "cannot name; "
        )
        raise ExportError(
            f"{problem}pass another name (name=)", cli=f"{problem}give another --name"
        )
    return name


def _check_format(format: str) -> str:
    if format not in FORMATS:
        raise ExportError(f"unknown export format {format!r}; one of: {', '.join(FORMATS)}")
    return format


def export_bytes(
    booster,
    format: str,
    feature_names: Sequence[str] | str | os.PathLike | None = None,
    *,
    iteration: int | None = None,
    name: str = "ltrboost",
    assume_no_missing: bool = False,
) -> bytes:
    """The exported model as bytes (UTF-8 text for every format but ``onnx``).

    ``booster``: a :class:`~ltrboost.model.Booster` or a fitted ``Ranker`` (its
    ``booster_``; the same in :func:`createmodel_body` and :func:`export_model`).
    ``feature_names``: the engine's name of ltrboost feature ``i`` (a list, or a file
    with one name per line); default the model's names, else ``f0, f1, ...``.
    ``iteration``: rounds to export (default as ``predict``: the best iteration, else
    all).  ``name``: the model name written into ``solr`` files (not blank, no control
    character: Solr's ``{!ltr model=...}`` names the model by it).  ``assume_no_missing``:
    ``ranklib`` only, see :mod:`ltrboost.export.ranklib`; implied for a model whose file
    records that missing features mean 0 (``ltrboost train --missing zero``, the CLI's
    default) and whose training data held no NaN (no ``nan`` or ``--missing-token``
    values; the file then says ``trained_with_nan``): its NaN directions are never used,
    as in RankLib.
    """
    booster = _as_booster(booster)
    _check_format(format)
    if format == "solr":
        _check_model_name(name)
    model = _collect(booster, feature_names, iteration)
    try:
        return _convert(booster, model, format, name, assume_no_missing)
    except ExportError as e:  # a name the format refuses: named in its file
        raise _in_names_file(e, feature_names) from None


def _convert(booster, model, format: str, name: str, assume_no_missing: bool) -> bytes:
    """``model`` (collected from ``booster``) in ``format``, as :func:`export_bytes`."""
    if format == "lightgbm":
        from ltrboost.export.lightgbm import to_lightgbm

        return to_lightgbm(model).encode()
    if format == "xgboost":
        from ltrboost.export.xgboost import to_xgboost

        return to_xgboost(model).encode()
    if format == "xgboost-dump":
        from ltrboost.export.xgboost import to_xgboost_dump

        return to_xgboost_dump(model).encode()
    if format == "solr":
        from ltrboost.export.solr import to_solr

        return to_solr(model, name).encode()
    if format == "ranklib":
        from ltrboost.export.ranklib import to_ranklib

        # missing means 0 and no NaN was trained on: the NaN directions are never used
        zero = getattr(booster, "missing", None) == "zero" and not getattr(
            booster, "trained_with_nan", False
        )
        return to_ranklib(model, assume_no_missing=assume_no_missing or zero).encode()
    from ltrboost.export.onnx import to_onnx_bytes

    return to_onnx_bytes(model)


def createmodel_body(
    booster,
    feature_names: Sequence[str] | str | os.PathLike | None = None,
    *,
    name: str = "ltrboost",
    iteration: int | None = None,
) -> str:
    """OpenSearch / Elasticsearch LTR ``_createmodel`` body (``model/xgboost+json``);
    ``name`` (not blank, no control character) is what ``sltr`` queries name."""
    from ltrboost.export.xgboost import createmodel_body as body

    booster = _as_booster(booster)
    _check_model_name(name)
    model = _collect(booster, feature_names, iteration)
    try:
        return json.dumps(body(model, name), indent=1) + "\n"
    except ExportError as e:  # a name the format refuses: named in its file
        raise _in_names_file(e, feature_names) from None


def export_model(
    booster,
    path: str | os.PathLike,
    format: str,
    feature_names: Sequence[str] | str | os.PathLike | None = None,
    *,
    iteration: int | None = None,
    name: str | None = None,
    assume_no_missing: bool = False,
    createmodel: str | os.PathLike | None = None,
    before_commit: Callable[[], None] | None = None,
) -> None:
    """Write ``booster`` to ``path`` in ``format`` (atomically: all or nothing).

    ``createmodel`` (``xgboost-dump`` only): also write the OpenSearch / ES LTR
    ``_createmodel`` request body there.  ``name`` defaults to the file's stem.
    ``before_commit``: called once the files are complete, before they replace their
    targets; when it raises, nothing is written (``ltrboost export`` prints the
    ``_createmodel`` body there).  Other arguments as :func:`export_bytes`.
    """
    from ltrboost.io._atomic import atomic_write_files

    booster = _as_booster(booster)
    _check_format(format)
    if createmodel is not None and format != "xgboost-dump":
        raise ExportError("createmodel= is only for format 'xgboost-dump'")
    if name is not None and format != "solr" and createmodel is None:
        raise ExportError(
            f"name= is the model name of 'solr' files and of the createmodel= body; "
            f"format {format!r} writes no name"
        )
    if assume_no_missing and format != "ranklib":
        raise ExportError(
            "assume_no_missing= is only for format 'ranklib' (the other formats carry "
            "each split's missing-value direction)"
        )
    if format == "xgboost" and Path(os.fspath(path)).suffix.lower() == ".ubj":
        raise ExportError(
            f"{os.fspath(path)}: format 'xgboost' writes JSON, which XGBoost does not read "
            "from a .ubj file (it expects UBJSON there); give a .json file name"
        )
    if createmodel is not None and _same_file(path, createmodel):
        raise ExportError(
            f"{os.fspath(createmodel)}: the createmodel body would replace the exported "
            "model (the same file); give another path"
        )
    name = name or Path(os.fspath(path)).stem or "ltrboost"
    if format == "solr" or createmodel is not None:  # before anything is written
        _check_model_name(name)
    if feature_names is not None and not isinstance(feature_names, str | os.PathLike):
        # read once: an iterator (a generator of names) was empty for the createmodel body
        feature_names = _names(feature_names)
    data = export_bytes(
        booster,
        format,
        feature_names,
        iteration=iteration,
        name=name,
        assume_no_missing=assume_no_missing,
    )
    if createmodel is None:
        atomic_write_files([(path, data)], before_commit=before_commit)
        return
    with warnings.catch_warnings():
        # the body's definition is the dump just written, whose warnings were given
        warnings.simplefilter("ignore")
        extra = createmodel_body(booster, feature_names, name=name, iteration=iteration)
    # both or neither: an unwritable createmodel path must not leave the model written
    atomic_write_files([(path, data), (createmodel, extra.encode())], before_commit=before_commit)


def _same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two output paths name one file (links and other spellings included)."""
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:  # one of them does not exist (yet)
        pass
    return os.path.realpath(a) == os.path.realpath(b)

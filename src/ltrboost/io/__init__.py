"""Reading and writing ranking data: svmlight/LETOR text, LightGBM ``.query`` files.

The names below are imported on first use (PEP 562), so that importing a light module
of this package (``ltrboost.io.model_json``, ``ltrboost.io._atomic``) does not load the
Numba-compiled svmlight parser.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ltrboost.io.letor import LetorData, dump_svmlight, load_svmlight, parse_docids
    from ltrboost.io.queryfile import read_query_file, write_query_file

_LAZY = {
    "LetorData": "ltrboost.io.letor",
    "dump_svmlight": "ltrboost.io.letor",
    "load_svmlight": "ltrboost.io.letor",
    "parse_docids": "ltrboost.io.letor",
    "read_query_file": "ltrboost.io.queryfile",
    "write_query_file": "ltrboost.io.queryfile",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ltrboost.io' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "LetorData",
    "dump_svmlight",
    "load_svmlight",
    "parse_docids",
    "read_query_file",
    "write_query_file",
]

"""Preference-pair files (``--pairs``): ``qid preferred_docid other_docid [weight]``.

One pair per line; blank lines and lines starting with ``#`` are skipped.  Document ids are
those of the LETOR comments (``#docid = GX000-00-0000000 ...``) of the data file the pairs
belong to; ``qid`` must be the query both documents belong to.  The weight defaults to 1
and must be finite and positive.

Errors (:class:`~ltrboost.dataset.LTRInputError`, naming the pairs file and line): too few
or too many fields, a weight that is not a positive number, an unknown query, an unknown
document id for that query, a document preferred to itself, and *contradicting* pairs
(``a > b`` on one line and ``b > a`` on another; the message names both lines), a docid
that two rows of its query carry (the pair could mean either).  A pair
given twice is allowed (its weights add up in the loss).  :func:`write_pairs_file` writes
the format (``ltrboost.clicks`` uses it for preferences mined from click logs).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ltrboost.dataset import LTRInputError, PreferencePairs
from ltrboost.io.letor import _NUMBER_RE

_INTEGER = re.compile(r"[+-]?[0-9]+")

# Pair weights scale float32 gradients: a larger weight overflows them.
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def read_pairs_file(
    path: str | os.PathLike,
    qid: NDArray[np.integer],
    docids: Sequence[str | None],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """Read pairs and map them to row numbers of the data file.

    Parameters
    ----------
    path : the pairs file.
    qid : ndarray of shape (n_samples,), the query id of each data row.
    docids : the document id of each data row (None where the row has none).

    Returns
    -------
    preferred, other : ndarray of int64, row numbers in the data file's order.
    weight : ndarray of float64.
    """
    path = os.fspath(path)
    index: dict[tuple[str, str], int] = {}
    repeated: dict[tuple[str, str], int] = {}  # a docid's second row in its query
    for row, (q, d) in enumerate(zip(np.asarray(qid).tolist(), docids, strict=True)):
        if d is not None:
            if index.setdefault((str(q), d), row) != row:
                repeated.setdefault((str(q), d), row)
    known_q = {str(q) for q in np.unique(qid).tolist()}
    # the LETOR reader reads qid:007 and qid:+7 as 7: a pairs file may write them so too
    integer_qids = np.asarray(qid).dtype.kind in "iu"
    preferred: list[int] = []
    other: list[int] = []
    weight: list[float] = []
    seen: dict[tuple[int, int], int] = {}
    for lineno, raw in enumerate(text_lines(path, "pairs file"), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) not in (3, 4):
            raise LTRInputError(
                f"expected 'qid preferred_docid other_docid [weight]', got {len(parts)} fields",
                path=path,
                line=lineno,
            )
        q, a, b = parts[:3]
        if integer_qids:
            q = query_id_text(q)
        w = 1.0
        if len(parts) == 4:
            # the LETOR reader's number syntax: float() also takes "1_0" and non-ASCII digits
            w = float(parts[3]) if _NUMBER_RE.fullmatch(parts[3]) else math.nan
            if not math.isfinite(w) or w <= 0:
                raise LTRInputError(
                    f"weight {parts[3]!r} is not a positive number",
                    path=path,
                    line=lineno,
                )
            if w > _FLOAT32_MAX:
                raise LTRInputError(
                    f"weight {parts[3]!r} is above {_FLOAT32_MAX:.4g}, float32's largest "
                    "value (gradients are float32)",
                    path=path,
                    line=lineno,
                )
        if q not in known_q:
            raise LTRInputError(f"unknown query {q!r}", path=path, line=lineno)
        rows = []
        for d in (a, b):
            r = index.get((q, d))
            if r is None:
                raise LTRInputError(
                    f"document {d!r} is not a document of query {q!r} in the data "
                    "(docids come from '#docid = ...' comments)",
                    path=path,
                    line=lineno,
                )
            if (q, d) in repeated:
                raise LTRInputError(
                    f"document {d!r} is not unique in query {q!r} (data rows {r + 1} and "
                    f"{repeated[(q, d)] + 1}, counting from 1, carry it): the pair cannot "
                    "tell them apart; give the documents distinct docids",
                    path=path,
                    line=lineno,
                )
            rows.append(r)
        if rows[0] == rows[1]:
            raise LTRInputError(
                f"document {a!r} cannot be preferred to itself", path=path, line=lineno
            )
        key = (rows[0], rows[1])
        if (rows[1], rows[0]) in seen:
            raise LTRInputError(
                f"pair contradicts line {seen[(rows[1], rows[0])]}: {b!r} was preferred "
                f"to {a!r} there",
                path=path,
                line=lineno,
            )
        seen.setdefault(key, lineno)
        preferred.append(rows[0])
        other.append(rows[1])
        weight.append(w)
    return (
        np.asarray(preferred, dtype=np.int64),
        np.asarray(other, dtype=np.int64),
        np.asarray(weight, dtype=np.float64),
    )


def query_id_text(text: str) -> str:
    """A query id written in a text file (pairs, click logs) as the data's: the LETOR
    reader reads ``qid:`` as an integer, so ``007`` and ``+7`` name query ``7``; other
    text is kept as written.  ``str(int(text))`` without ``int()``, which refuses more
    than 4300 digits."""
    if not _INTEGER.fullmatch(text):
        return text
    digits = text.lstrip("+-").lstrip("0") or "0"
    return "-" + digits if text[0] == "-" and digits != "0" else digits


def text_lines(path: str, what: str) -> list[str]:
    """The lines of the UTF-8 text file ``path`` (a BOM skipped, lines as :func:`_lines`
    splits them); :class:`LTRInputError` naming the file, and the line of the first byte
    that is not UTF-8.  ``what`` names the file in a read error ("pairs file")."""
    try:
        with open(path, "rb") as f:
            data = f.read().removeprefix(b"\xef\xbb\xbf")  # a UTF-8 BOM
    except OSError as e:
        raise LTRInputError(f"cannot read {what}: {e.strerror}", path=path) from None
    try:
        return _lines(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise LTRInputError(
            f"not UTF-8 text (byte 0x{data[err.start]:02x})",
            path=path,
            line=len(_lines(data[: err.start].decode("utf-8"))),
        ) from None


def _lines(text: str) -> list[str]:
    """Lines ending at LF, CRLF or CR (text-mode newlines), not at every character
    ``str.splitlines()`` takes for one (form feed, NEL, U+2028, ...): line numbers are
    those an editor shows."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def write_pairs_file(
    path: str | os.PathLike,
    qid: Sequence,
    preferred: Sequence[str],
    other: Sequence[str],
    weight: Sequence[float] | None = None,
) -> None:
    """Write pairs as ``qid preferred_docid other_docid weight`` lines, atomically.

    The weights are written in their shortest round-trip form, so :func:`read_pairs_file`
    reads back exactly what was written.  Ids must be non-empty and free of whitespace.
    """
    from ltrboost.io._atomic import atomic_write

    n = len(preferred)
    if len(qid) != n or len(other) != n or (weight is not None and len(weight) != n):
        raise ValueError("qid, preferred, other and weight must have the same length")
    ws = [1.0] * n if weight is None else [float(w) for w in weight]

    def chunks():
        yield "# qid preferred_docid other_docid weight\n"
        for q, a, b, w in zip(qid, preferred, other, ws, strict=True):
            for tok in (str(q), str(a), str(b)):
                if not tok or len(tok.split()) != 1 or tok.startswith("#"):
                    raise ValueError(f"id {tok!r} is empty or contains whitespace")
            if not math.isfinite(w) or w <= 0 or w > _FLOAT32_MAX:
                raise ValueError(f"weight {w!r} is not a positive number up to {_FLOAT32_MAX:.4g}")
            yield f"{q} {a} {b} {w!r}\n"

    atomic_write(path, chunks())


def pairs_for_dataset(
    preferred: NDArray[np.int64],
    other: NDArray[np.int64],
    weight: NDArray[np.float64] | None,
    order: NDArray[np.int64] | None,
) -> PreferencePairs:
    """Map data-file rows to dataset rows (datasets group queries: ``X = X_file[order]``)."""
    if order is not None:
        inv = np.empty_like(order)
        inv[order] = np.arange(order.shape[0])
        preferred = inv[preferred]
        other = inv[other]
    return PreferencePairs(
        preferred=preferred.astype(np.int32),
        other=other.astype(np.int32),
        weight=None if weight is None else np.asarray(weight, dtype=np.float64),
    )

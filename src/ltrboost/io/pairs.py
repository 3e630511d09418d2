"""Preference-pair files (``--pairs``): ``qid preferred_docid other_docid [weight]``.

One pair per line; blank lines and lines starting with ``#`` are skipped, and so is a
first data line whose first field is literally ``qid`` (a header, as in click logs).
Document ids are those of the LETOR comments (``#docid = GX000-00-0000000 ...``) of
the data file the pairs belong to; ``qid`` must be the query both documents belong to.
The weight defaults to 1 and must be a finite number >= 0, as a Python pair's (``pairs=``
of ``Ranker.fit``): a pair of weight 0 counts for nothing, as a document of sample weight
0 does.

Errors (:class:`~ltrboost.dataset.LTRInputError`, naming the pairs file and line): too few
or too many fields, a weight that is not a number >= 0 (or one float32 gradients cannot
hold: above its largest value, or positive below its smallest), an unknown query, an unknown
document id for that query, a document preferred to itself, and *contradicting* pairs
(``a > b`` on one line and ``b > a`` on another; the message names both lines), a docid
that two rows of its query carry (the pair could mean either).  A pair
given twice is allowed (its weights add up in the loss).  :func:`write_pairs_file` writes
the format (``ltrboost.clicks`` uses it for preferences mined from click logs).
"""

from __future__ import annotations

import array
import math
import os
import re
from collections.abc import Iterator, Sequence

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
    # query -> docid -> row: a dict per query (one query string each, no key tuples)
    index: dict[str, dict[str, int]] = {}
    repeated: dict[tuple[str, str], int] = {}  # a docid's second row in its query
    names: dict = {}  # each query id's text, made once
    for row, (q, d) in enumerate(zip(np.asarray(qid).tolist(), docids, strict=True)):
        if d is not None:
            qs = names.get(q)
            if qs is None:
                qs = names[q] = str(q)
            rows_q = index.get(qs)
            if rows_q is None:
                rows_q = index[qs] = {}
            if rows_q.setdefault(d, row) != row:
                repeated.setdefault((qs, d), row)
    del names
    known_q = {str(q) for q in np.unique(qid).tolist()}
    # the LETOR reader reads qid:007 and qid:+7 as 7: a pairs file may write them so too
    integer_qids = np.asarray(qid).dtype.kind in "iu"
    # Python arrays, not lists (8 bytes an entry, not ~36): a pairs file may hold
    # millions of lines
    preferred = array.array("q")
    other = array.array("q")
    weight = array.array("d")
    linenos = array.array("q")
    n_rows = max(len(docids), 1)

    def check_contradictions() -> None:
        """Refuse the first line whose reverse pair came on an earlier line."""
        hit = _first_contradiction(preferred, other, n_rows)
        if hit is not None:
            i, j = hit
            raise LTRInputError(
                f"pair contradicts line {linenos[j]}: {docids[other[i]]!r} was preferred "
                f"to {docids[preferred[i]]!r} there",
                path=path,
                line=linenos[i],
            )

    def fail(msg: str, lineno: int) -> LTRInputError:
        check_contradictions()  # an earlier line's error first, as the file is read
        return LTRInputError(msg, path=path, line=lineno)

    header_done = False
    for lineno, raw in enumerate(text_lines(path, "pairs file"), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if not header_done:  # a first data line "qid ..." is a header, as in click logs
            header_done = True
            if parts[0] == "qid" and "qid" not in known_q:
                continue
        if len(parts) not in (3, 4):
            comment = next((k for k, p in enumerate(parts) if p.startswith("#")), None)
            hint = (
                f" (field {comment + 1} starts a comment: comments go on their own line)"
                if comment is not None and comment >= 3
                else ""
            )
            raise fail(
                f"expected 'qid preferred_docid other_docid [weight]', got {len(parts)} "
                f"fields{hint}",
                lineno,
            )
        q, a, b = parts[:3]
        if integer_qids:
            q = query_id_text(q)
        w = 1.0
        if len(parts) == 4:
            # the LETOR reader's number syntax: float() also takes "1_0" and non-ASCII digits
            w = float(parts[3]) if _NUMBER_RE.fullmatch(parts[3]) else math.nan
            if not math.isfinite(w) or w < 0:
                raise fail(f"weight {parts[3]!r} is not a number >= 0", lineno)
            if w > _FLOAT32_MAX:
                raise fail(
                    f"weight {parts[3]!r} is above {_FLOAT32_MAX:.4g}, float32's largest "
                    "value (gradients are float32)",
                    lineno,
                )
            if w > 0 and np.float32(w) == 0:  # as check_preference_pairs, naming the line
                raise fail(
                    f"weight {parts[3]!r} is positive but would become 0 in float32 "
                    "gradients (the smallest positive float32 is 1.4e-45): scale the "
                    "weights up",
                    lineno,
                )
        if q not in known_q:
            raise fail(f"unknown query {q!r}{_qid_prefix_hint(q, known_q, integer_qids)}", lineno)
        rows = []
        rows_q = index.get(q, {})
        for d in (a, b):
            r = rows_q.get(d)
            if r is None:
                raise fail(_unknown_document(d, q, index), lineno)
            if (q, d) in repeated:
                raise fail(
                    f"document {d!r} is not unique in query {q!r} (data rows {r + 1} and "
                    f"{repeated[(q, d)] + 1}, counting from 1, carry it): the pair cannot "
                    "tell them apart; give the documents distinct docids",
                    lineno,
                )
            rows.append(r)
        if rows[0] == rows[1]:
            raise fail(f"document {a!r} cannot be preferred to itself", lineno)
        preferred.append(rows[0])
        other.append(rows[1])
        weight.append(w)
        linenos.append(lineno)
    check_contradictions()
    return (  # views of the arrays (no copy at the peak)
        np.frombuffer(preferred, dtype=np.int64),
        np.frombuffer(other, dtype=np.int64),
        np.frombuffer(weight, dtype=np.float64),
    )


def _qid_prefix_hint(q: str, known_q: set[str], integer_qids: bool) -> str:
    """For a query written as in the data file (``qid:7``): how to write it instead."""
    if not q.startswith("qid:"):
        return ""
    bare = q[len("qid:") :]
    if integer_qids:
        bare = query_id_text(bare)
    if bare not in known_q:
        return ""
    return f" (write the query id without 'qid:', as {bare!r})"


def _unknown_document(d: str, q: str, index: dict[str, dict[str, int]]) -> str:
    """Why docid ``d`` names no document of query ``q``: the data has no docids, the
    query has none, ``d`` is a document of other queries, or the data spells it in
    another Unicode normalization form (only computed for the error)."""
    import unicodedata

    if not index:
        return (
            f"document {d!r}: the data has no document ids ('#docid = ...' comments "
            "after its lines), which pairs name documents by"
        )
    rows_q = index.get(q)
    if not rows_q:
        return (
            f"document {d!r}: no document of query {q!r} has a docid in the data "
            "(docids come from '#docid = ...' comments)"
        )
    nfc = unicodedata.normalize("NFC", d)
    twin = next((k for k in rows_q if unicodedata.normalize("NFC", k) == nfc), None)
    if twin is not None:
        return (
            f"document {d!a} is not a document of query {q!r}: the data has "
            f"{twin!a}, the same text in another Unicode normalization form; "
            "docids must match exactly"
        )
    elsewhere = [other for other, docs in index.items() if d in docs]
    if elsewhere:
        shown = ", ".join(repr(o) for o in elsewhere[:3])
        more = f" and {len(elsewhere) - 3} more" if len(elsewhere) > 3 else ""
        return (
            f"document {d!r} is not a document of query {q!r} in the data (it is one "
            f"of query {shown}{more}; a pair compares two documents of one query)"
        )
    return (
        f"document {d!r} is not a document of query {q!r} in the data "
        "(docids come from '#docid = ...' comments)"
    )


def _first_contradiction(preferred, other, n_rows: int) -> tuple[int, int] | None:
    """``(i, j)``: the first pair ``i`` (in file order) whose reverse is an earlier pair,
    and the first such pair ``j < i``; None when no pair contradicts another."""
    if len(preferred) < 2:
        return None
    p = np.frombuffer(preferred, dtype=np.int64)
    o = np.frombuffer(other, dtype=np.int64)
    key = p * n_rows + o
    keys, first = np.unique(key, return_index=True)  # each pair's first occurrence
    rev = o * n_rows + p
    at = np.minimum(np.searchsorted(keys, rev), keys.shape[0] - 1)
    j = np.where(keys[at] == rev, first[at], -1)
    i = np.arange(p.shape[0])
    bad = np.flatnonzero((j >= 0) & (j < i))
    if bad.size == 0:
        return None
    return int(bad[0]), int(j[bad[0]])


def query_id_text(text: str) -> str:
    """A query id written in a text file (pairs, click logs) as the data's: the LETOR
    reader reads ``qid:`` as an integer, so ``007`` and ``+7`` name query ``7``; other
    text is kept as written.  ``str(int(text))`` without ``int()``, which refuses more
    than 4300 digits."""
    if not _INTEGER.fullmatch(text):
        return text
    digits = text.lstrip("+-").lstrip("0") or "0"
    return "-" + digits if text[0] == "-" and digits != "0" else digits


# Bytes read at a time by text_lines: a file is decoded and split a block at a time,
# never held whole (a pairs file or click log can be larger than the data file).
TEXT_BLOCK_BYTES = 1 << 20


def text_lines(path: str, what: str, block_bytes: int | None = None) -> Iterator[str]:
    """The lines of the UTF-8 text file ``path``, read and decoded a block at a time (a
    BOM skipped; lines as :func:`_lines` splits them: LF, CRLF or CR end a line);
    :class:`LTRInputError` naming the file, and the line of the first byte that is not
    UTF-8.  ``what`` names the file in a read error ("pairs file").  After the last
    line ending, the rest of the file is one more line (``""`` when it is empty)."""
    try:
        f = open(path, "rb")  # closed by _text_lines (its finally)
    except OSError as e:
        raise LTRInputError(f"cannot read {what}: {e.strerror}", path=path) from None
    return _text_lines(f, path, what, block_bytes or TEXT_BLOCK_BYTES)


def _text_lines(f, path: str, what: str, block_bytes: int) -> Iterator[str]:
    lineno = 0  # lines yielded so far
    rest = b""
    first = True
    head = b""  # the file's first bytes: a compressed file is named as one
    try:
        while True:
            try:
                block = f.read(max(block_bytes, 3))  # a BOM whole in the first
            except OSError as e:
                raise LTRInputError(f"cannot read {what}: {e.strerror}", path=path) from None
            more = bool(block)  # not at the end of the file yet
            if first:
                head = block[:16]
                block = block.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 BOM
                first = False
            data = rest + block
            # complete lines end at the last LF; a CR at the very end may be the first
            # half of a CRLF, so it waits for the next block
            cut = data.rfind(b"\n") + 1 if more else len(data)
            if more and cut == 0 and len(data) > 4 * block_bytes:
                cut = data.rfind(b"\r", 0, len(data) - 1) + 1  # CR-only line endings
            part, rest = data[:cut], data[cut:]
            if part or not more:  # at the end, the rest is the last line, even ""
                try:
                    text = part.decode("utf-8")
                except UnicodeDecodeError as err:
                    from ltrboost.io.letor import compressed_problem

                    bad = lineno + len(_lines(part[: err.start].decode("utf-8")))
                    problem = f"not UTF-8 text (byte 0x{part[err.start]:02x})"
                    if lineno == 0:  # in the first lines: a compressed file?
                        problem = compressed_problem(head, problem) or problem
                    raise LTRInputError(problem, path=path, line=bad) from None
                lines = _lines(text)
                if more:
                    lines.pop()  # the "" after the part's last line ending
                lineno += len(lines)
                yield from lines
            if not more:
                return
    finally:
        f.close()


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
            if not math.isfinite(w) or w < 0 or w > _FLOAT32_MAX:
                raise ValueError(f"weight {w!r} is not a number from 0 to {_FLOAT32_MAX:.4g}")
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

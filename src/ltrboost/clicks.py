"""Click logs: read them, simulate them from graded data, mine preference pairs from them.

Click-log format
----------------
A UTF-8 text file, one *shown result* per line, whitespace-separated (tabs or spaces)
columns in this fixed order::

    qid  docid  position  clicked  [impression]

* ``qid``: the query id, compared as text with the data file's ``qid:`` values; an
  integer is read as the data reader reads ``qid:`` (``007`` is query ``7``).
* ``docid``: the document id, as in the data file's LETOR comments (``#docid = ...``),
  the ids the ``--pairs`` file uses (:mod:`ltrboost.io.pairs`).
* ``position``: where the document was shown, an integer >= 1 (1 = top).
* ``clicked``: ``0`` or ``1``.
* ``impression`` (optional, all lines or none): an id (any text without whitespace) of
  one showing of a result list.  Lines with the same impression id belong to one
  showing, need not be adjacent, and must share the query.  Without this column an
  impression is a run of consecutive lines: a new one starts at every line whose
  ``qid`` differs from the previous line's or whose position is 1.

Blank lines and lines starting with ``#`` are skipped; a first data line whose first
field is literally ``qid`` is a header and is skipped too.  Errors raise
:class:`~ltrboost.dataset.LTRInputError` naming ``FILE:LINE``: a wrong number of fields
(or the impression column on some lines only), a position that is not an integer >= 1,
a click that is not 0/1, a position or a document shown twice in one impression, an
impression id reused for another query, a file without entries, and -- when the
data's ``qid``/``docids`` are given -- a query or a document that the data file does
not have, or a document whose docid two rows of its query carry.  Repeats within an
impression are checked once the whole file is read (the earliest repeating line is named).

Simulation (:func:`simulate`)
-----------------------------
Each session draws one query uniformly among the queries with documents, shows its
documents ranked by ``scores`` (descending; default: a fixed noisy ranker,
``labels + N(0, ranking_noise²)`` drawn once per document) cut to the top ``top_k``, and
clicks with the *attractiveness* of a document of grade ``y``::

    r(y) = noise + (1 - noise) * (2**y - 1) / 2**y_max       (y_max = labels.max())

or, with ``eps_plus`` given, the field's standard click noise (Joachims, Swaminathan &
Schnabel, WSDM 2017; Ai, Bi, Luo, Guo & Croft, SIGIR 2018): grade 0 is clicked with
probability ``noise`` (their epsilon-minus, e.g. 0.1), the top grade with ``eps_plus``
(epsilon-plus, e.g. 1), interpolated by the exponential gain::

    r(y) = noise + (eps_plus - noise) * (2**y - 1) / (2**y_max - 1)

* ``model="position_based"``: each shown document at rank ``k`` is clicked
  independently with probability ``(1/k)**eta * r(y)``.
* ``model="cascade"``: the user scans from rank 1; the document at rank ``k`` is clicked
  with probability ``r(y)``; after a click the user stops (satisfied) with probability
  ``satisfaction``, otherwise goes on; without a click the user goes on.  So rank ``k``
  is examined with probability ``prod_{j<k} (1 - r(y_j) * satisfaction)``.

A *randomised display* (``shuffle_fraction``): each impression shows its ``top_k``
documents in a uniformly random order with probability ``shuffle_fraction`` (the same
documents as the ranked display, only their order randomised: the top-n
randomisation, "RandTop-n", of Wang, Golbandi, Bendersky, Metzler & Najork, WSDM 2018,
applied to a fraction of the traffic).  On those impressions position is independent of
relevance, the setting where Unbiased LambdaMART's position-bias estimates are
consistent.

A *weak production ranker* as the shown ranking (:func:`weak_logger_scores`), the
logging policy of Joachims et al. 2017 and Ai et al. 2018 (a ranker trained on 1% of
the labelled queries): a LambdaMART trained on a random ``fraction`` of the training
queries' grades, drawn again until every grade of the data occurs in the sample.

Training rows for Unbiased LambdaMART (:func:`click_rows`)
----------------------------------------------------------
One query group per impression, the clicks as labels and the shown positions as
``position`` (``Ranker(unbiased=True)``; CLI ``ltrboost clicks dataset`` writes them
as a LETOR file plus a ``.position`` file for ``ltrboost train --unbiased true``).

Inverse-propensity relevance labels (:func:`relevance_labels`)
---------------------------------------------------------------
One label per shown (query, document): its clicks aggregated over the impressions that
showed it, each click divided by the examination probability (propensity) ``theta_k``
of the position ``k`` it was shown at::

    label_d = (1 / n_d) * sum over the n_d impressions showing d of  clicked / theta_k

the inverse-propensity-scoring estimate of Joachims, Swaminathan & Schnabel (WSDM 2017)
and Wang, Bendersky, Metzler & Najork (SIGIR 2016).  Under position-based clicks
(``P(click) = theta_k r_d``) every term has expectation ``r_d``, the document's click
probability when examined, so the label is an unbiased estimate of it whatever
positions the document was shown at; without propensities the label is the
click-through rate (``theta = 1``), whose expectation ``r_d * mean(theta_k)`` mixes
relevance with where the document was shown.  The labels are real numbers (> 1 is
possible); :meth:`RelevanceLabels.grades` rounds them onto an integer grid for
LambdaMART, which needs integer grades (with ``gain="linear"`` its lambdas do not depend
on the grid's scale).  Under cascade clicks the examination of a position depends on the
documents above it, and no per-position propensity makes the label unbiased.

Preference mining (:func:`mine_preferences`)
--------------------------------------------
Per impression (Joachims, KDD 2002; Joachims, Granka, Pan, Hembrooke & Gay, SIGIR 2005,
cited by seed 004):

* ``skip-above`` ("click > skip above"): a clicked document is preferred to every
  *unclicked* document shown above it.
* ``skip-next`` ("click > no-click next"): a clicked document is preferred to the
  document shown at the next position, if that one was shown and not clicked.

Pairs are counted over all impressions.  The ``--pairs`` file rejects contradicting
pairs, so the counts are netted: ``count = n(a > b) - n(b > a)``; a pair is kept (as
``a > b``) when ``count >= min_count`` (default 1), and its weight is ``count``.
"""

from __future__ import annotations

import array
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ltrboost.dataset import LTRInputError
from ltrboost.io.pairs import query_id_text, text_lines
from ltrboost.io.queryfile import MAX_COUNT as MAX_POSITION

__all__ = [
    "ClickLog",
    "ClickRows",
    "MinedPairs",
    "RelevanceLabels",
    "click_rows",
    "mine_preferences",
    "read_click_log",
    "relevance_labels",
    "sample_logger_queries",
    "simulate",
    "weak_logger_scores",
    "write_click_log",
    "write_pairs",
]

MODELS = ("cascade", "position_based")
STRATEGIES = ("skip-above", "skip-next")


@dataclass
class ClickLog:
    """A click log: one entry per shown result.

    Attributes
    ----------
    qid : ndarray of str (object), the query of each entry.
    docid : ndarray of str (object), the document shown.
    position : ndarray of int64, 1-based position shown.
    clicked : ndarray of int8, 0 or 1.
    impression : ndarray of int64, 0-based index of the impression (showing) of each entry.
    line : ndarray of int64 or None, the 1-based line each entry came from (when read).
    """

    qid: NDArray[np.object_]
    docid: NDArray[np.object_]
    position: NDArray[np.int64]
    clicked: NDArray[np.int8]
    impression: NDArray[np.int64]
    line: NDArray[np.int64] | None = None

    def __len__(self) -> int:
        return int(self.position.shape[0])

    @property
    def n_impressions(self) -> int:
        return int(self.impression.max()) + 1 if len(self) else 0


@dataclass
class MinedPairs:
    """Preferences mined from a click log: ``preferred[i]`` over ``other[i]`` in ``qid[i]``.

    ``count`` is the net number of impressions supporting the pair (see the module
    docstring); ``weight`` is what :func:`write_pairs` writes (``count`` as float).
    """

    qid: NDArray[np.object_]
    preferred: NDArray[np.object_]
    other: NDArray[np.object_]
    count: NDArray[np.int64]
    weight: NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.count.shape[0])


def _data_rows(
    qid: ArrayLike, docids: Sequence[str | None]
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], tuple[int, int]]]:
    """The data row of each (qid, docid) a log may name (qids as text, as a log writes
    them), and the two first rows of each docid that two rows of one query carry."""
    qs = [query_id_text(str(q)) for q in np.asarray(qid).tolist()]
    if len(qs) != len(docids):
        raise ValueError("qid and docids must have one entry per data row")
    rows: dict[tuple[str, str], int] = {}
    repeated: dict[tuple[str, str], tuple[int, int]] = {}
    for row, key in enumerate(zip(qs, docids, strict=True)):
        if key[1] is not None and rows.setdefault(key, row) != row:
            repeated.setdefault(key, (rows[key], row))
    return rows, repeated


def _not_unique(q: str, d: str, rows: tuple[int, int]) -> str:
    return (
        f"document {d!r} is not unique in query {q!r} (data rows {rows[0] + 1} and "
        f"{rows[1] + 1}, counting from 1, carry it): the log cannot tell them apart; "
        "give the documents distinct docids"
    )


def _shown_twice(
    impression: NDArray[np.int64],
    position: NDArray[np.int64],
    doc_code: NDArray[np.int64],
    rank: NDArray[np.int64],
) -> tuple[int, int, str] | None:
    """The earliest (by ``rank``) entry whose position or document an earlier entry of
    its impression already has: ``(entry, earlier entry, "position" | "document")``.
    Checked on the arrays (dicts of every (impression, position) cost ~10x the log's
    size)."""
    found: list[tuple[int, int, int, str]] = []
    for what, key in (("position", position), ("document", doc_code)):
        if rank.size < 2:
            break
        o = np.lexsort((rank, key, impression))
        dup = (impression[o][1:] == impression[o][:-1]) & (key[o][1:] == key[o][:-1])
        if dup.any():
            k = np.flatnonzero(dup)
            k = k[np.argmin(rank[o][1:][k])]
            found.append((int(rank[o[k + 1]]), int(o[k + 1]), int(o[k]), what))
    if not found:
        return None
    _, r, first, what = min(found)
    return r, first, what


def read_click_log(
    path: str | os.PathLike,
    qid: ArrayLike | None = None,
    docids: Sequence[str | None] | None = None,
) -> ClickLog:
    """Read a click log (format in the module docstring).

    Parameters
    ----------
    path : the click-log file.
    qid, docids : optional, the data file's query id and document id of each row (e.g.
        ``load_svmlight(..., return_comments=True).qid`` and ``parse_docids(...comments)``);
        when given, every (qid, docid) of the log must be a row of the data.
    """
    path = os.fspath(path)
    known: dict[tuple[str, str], int] | None = None
    known_q: set[str] | None = None
    if qid is not None or docids is not None:
        if qid is None or docids is None:
            raise ValueError("give both qid and docids, or neither")
        known, repeated = _data_rows(qid, docids)
        known_q = {query_id_text(str(q)) for q in np.asarray(qid).tolist()}
    # LF, CRLF or CR end a line, not the other characters str.splitlines() breaks at
    # (form feed, U+2028, ...), so that errors name the line an editor shows
    lines_read = text_lines(path, "click log")

    qids: list[str] = []
    docs: list[str] = []
    # Python arrays, not lists of ints (8 bytes an entry, not 8 + 28): logs are long
    positions = array.array("q")
    clicks = array.array("b")
    imps = array.array("q")
    lines = array.array("q")
    n_fields: int | None = None
    imp_index: dict[str, int] = {}
    imp_qid: dict[int, tuple[str, int]] = {}
    strings: dict[str, str] = {}
    doc_code: dict[str, int] = {}
    doc_codes = array.array("q")
    prev_q: str | None = None
    current = -1
    header_done = False
    for lineno, raw in enumerate(lines_read, start=1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        parts = s.split()
        if not header_done:
            header_done = True
            if parts[0] == "qid":
                continue

        def err(msg: str, lineno: int = lineno) -> LTRInputError:
            return LTRInputError(msg, path=path, line=lineno)

        if len(parts) not in (4, 5):
            raise err(
                f"expected 'qid docid position clicked [impression]', got {len(parts)} fields"
            )
        if n_fields is None:
            n_fields = len(parts)
        elif len(parts) != n_fields:
            raise err(
                f"{len(parts)} fields but the first entry has {n_fields}: the impression "
                "column must be on all lines or none"
            )
        q, d, p_txt, c_txt = parts[:4]
        q = query_id_text(q)
        digits = p_txt[1:] if p_txt[:1] in "+-" else p_txt
        if not (digits.isascii() and digits.isdigit()):  # int() takes "2_0" and "٣"
            raise err(f"position {p_txt[:40]!r} is not an integer")
        pos = int(p_txt)
        if pos < 1:
            raise err(f"position {pos} is < 1 (positions are 1-based)")
        if pos > MAX_POSITION:
            raise err(f"position {p_txt[:40]!r} is above {MAX_POSITION}")
        if c_txt not in ("0", "1"):
            raise err(f"clicked must be 0 or 1, got {c_txt!r}")
        if known_q is not None and q not in known_q:
            raise err(f"unknown query {q!r}: not in the data file")
        if known is not None and (q, d) not in known:
            raise err(
                f"document {d!r} is not a document of query {q!r} in the data file "
                "(docids come from '#docid = ...' comments)"
            )
        if known is not None and (q, d) in repeated:
            raise err(_not_unique(q, d, repeated[(q, d)]))
        if n_fields == 5:
            key = parts[4]
            imp = imp_index.setdefault(key, len(imp_index))
            if imp in imp_qid and imp_qid[imp][0] != q:
                first_q, first_line = imp_qid[imp]
                raise err(
                    f"impression {key!r} is for query {first_q!r} (line {first_line}), not {q!r}"
                )
            imp_qid.setdefault(imp, (q, lineno))
        else:
            if q != prev_q or pos == 1:
                current += 1
            imp = current
        prev_q = q
        q = strings.setdefault(q, q)  # one str object per distinct id: less memory
        d = strings.setdefault(d, d)
        doc_codes.append(doc_code.setdefault(d, len(doc_code)))
        qids.append(q)
        docs.append(d)
        positions.append(pos)
        clicks.append(int(c_txt))
        imps.append(imp)
        lines.append(lineno)
    if not lines:  # as the data readers: an empty input is a mistake, not zero results
        raise LTRInputError(
            "no entries (the file is empty or holds only a header, blank and comment lines)",
            path=path,
            line=1,
        )
    position = np.frombuffer(positions, dtype=np.int64)
    impression = np.frombuffer(imps, dtype=np.int64)
    line = np.frombuffer(lines, dtype=np.int64)
    docs_arr = _objects(docs)
    # shown twice in one impression: the error names the earliest repeating line
    repeat = _shown_twice(impression, position, np.frombuffer(doc_codes, np.int64), line)
    if repeat is not None:
        r, first, what = repeat
        shown = position[r] if what == "position" else repr(docs_arr[r])
        msg = f"{what} {shown} shown twice in one impression (also on line {line[first]})"
        raise LTRInputError(msg, path=path, line=int(line[r]))
    return ClickLog(
        qid=_objects(qids),
        docid=docs_arr,
        position=position,
        clicked=np.frombuffer(clicks, dtype=np.int8),
        impression=impression,
        line=line,
    )


def write_click_log(path: str | os.PathLike, log: ClickLog) -> None:
    """Write ``log`` in the click-log format (with header and impression column), atomically.

    A log :func:`read_click_log` would not read back is refused (``ValueError`` naming
    the 0-based entry) before anything is written: no entries, an id the format cannot
    carry, a position not an integer >= 1, a click not 0/1, a position or document
    shown twice in one impression, an impression of two queries.
    """
    from ltrboost.io._atomic import atomic_write

    # ids the format cannot carry: a field ends at whitespace, and a line whose first
    # field starts with '#' is a comment (refused before anything is written)
    codes: dict[str, list[int]] = {"qid": [], "docid": []}
    for kind, ids in (("qid", log.qid), ("docid", log.docid)):
        seen: dict[str, int] = {}
        for k, v in enumerate(np.asarray(ids, dtype=object).tolist()):
            text = str(v)
            if not text or len(text.split()) != 1 or (kind == "qid" and text[0] == "#"):
                raise ValueError(
                    f"entry {k}: {kind} {text[:40]!r} cannot be written to a click log "
                    "(ids must be non-empty, without whitespace, and a qid must not start "
                    "with '#')"
                )
            key = query_id_text(text) if kind == "qid" else text  # as the reader compares
            codes[kind].append(seen.setdefault(key, len(seen)))
    # and positions, clicks and impressions it would not read back (True, 1.0, 2, ...)
    columns = _writable_columns(
        log, np.asarray(codes["qid"], np.int64), np.asarray(codes["docid"], np.int64)
    )

    def chunks():
        yield "qid\tdocid\tposition\tclicked\timpression\n"
        for q, d, p, c, i in zip(
            log.qid.tolist(),
            log.docid.tolist(),
            *(c.tolist() for c in columns),
            strict=True,
        ):
            yield f"{q}\t{d}\t{p}\t{c}\t{i}\n"

    atomic_write(path, chunks())


def _writable_columns(
    log: ClickLog, qid_code: NDArray[np.int64], doc_code: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """``log``'s position, clicked and impression as integers, after refusing (naming
    the 0-based entry) what :func:`read_click_log` would not read back."""
    n = qid_code.size
    fields = {"docid": log.docid, "position": log.position, "clicked": log.clicked}
    fields["impression"] = log.impression
    for name, values in fields.items():
        if np.shape(values) != (n,):
            raise ValueError(f"log.{name} has shape {np.shape(values)}, log.qid ({n},)")
    if n == 0:
        raise ValueError(
            "the log has no entries: a click log file without entries is not read back "
            "(read_click_log refuses it)"
        )
    pos = np.asarray(log.position)
    clicked = np.asarray(log.clicked)
    imp = np.asarray(log.impression)
    for name, values, ok in (
        ("position", pos, lambda v: (v >= 1) & (v <= MAX_POSITION) & (v == np.floor(v))),
        ("clicked", clicked, lambda v: (v == 0) | (v == 1)),
        ("impression", imp, lambda v: v == np.floor(v)),
    ):
        if values.dtype.kind not in "biuf":
            raise ValueError(f"log.{name} must be numeric, got dtype {values.dtype}")
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~ok(values))
        if bad.size:
            k = int(bad[0])
            need = {
                "position": f"an integer in [1, {MAX_POSITION}]",
                "clicked": "0 or 1",
                "impression": "an integer",
            }[name]
            raise ValueError(f"entry {k}: {name} {values[k].item()!r} must be {need}")
    imp = imp.astype(np.int64)
    o = np.lexsort((np.arange(n), imp))
    other = np.flatnonzero((imp[o][1:] == imp[o][:-1]) & (qid_code[o][1:] != qid_code[o][:-1]))
    if other.size:
        j = other[np.argmin(o[other + 1])]
        k = int(o[j + 1])
        raise ValueError(
            f"entry {k}: impression {int(imp[k])} is also for query {log.qid[o[j]]!r} "
            f"(entry {int(o[j])}), not {log.qid[k]!r} (an impression shows one query)"
        )
    repeat = _shown_twice(imp, pos.astype(np.int64), doc_code, np.arange(n, dtype=np.int64))
    if repeat is not None:
        k, first, what = repeat
        shown = int(pos[k]) if what == "position" else repr(log.docid[k])
        raise ValueError(
            f"entry {k}: {what} {shown} shown twice in impression {int(imp[k])} (also "
            f"entry {first})"
        )
    return pos.astype(np.int64), clicked.astype(np.int64), imp


def simulate(
    labels: ArrayLike,
    query_offsets: ArrayLike,
    model: str = "cascade",
    n_sessions: int = 1000,
    random_state: int | np.random.Generator | None = None,
    *,
    scores: ArrayLike | None = None,
    qids: Sequence | None = None,
    docids: Sequence[str | None] | None = None,
    top_k: int = 10,
    eta: float = 1.0,
    satisfaction: float = 0.5,
    noise: float = 0.0,
    ranking_noise: float = 1.0,
    eps_plus: float | None = None,
    shuffle_fraction: float = 0.0,
) -> ClickLog:
    """Simulate a click log from graded data (formulas in the module docstring).

    Parameters
    ----------
    labels : ndarray of shape (n_samples,), non-negative grades, rows grouped by query.
    query_offsets : ndarray of shape (n_queries + 1,), query ``q`` is rows
        ``query_offsets[q]:query_offsets[q+1]``.
    model : "cascade" or "position_based".
    n_sessions : number of impressions to simulate.
    random_state : seed or Generator; the same seed gives the same log.
    scores : ranking shown (higher first); default a fixed noisy ranker.
    qids : query id of each query (default ``0 .. n_queries-1``).
    docids : document id of each row (default the row number within its query).
    top_k : results shown per impression.
    eta : position-based model's examination exponent, P(examine k) = (1/k)**eta.
    satisfaction : cascade model's probability of stopping after a click.
    noise : click probability floor added to every grade's attractiveness (with
        ``eps_plus``: the click probability of grade 0).
    ranking_noise : standard deviation of the default ranker's noise.
    eps_plus : if given, the click probability of the top grade, and the grades between
        are interpolated by ``(2**y - 1) / (2**y_max - 1)`` (module docstring).
    shuffle_fraction : probability that an impression shows its ``top_k`` documents in
        a uniformly random order instead of the ranked one (a randomised display;
        module docstring).  0 (the default) draws no extra random numbers, so logs of
        earlier versions are reproduced exactly.

    Returns
    -------
    ClickLog, entries in impression order then position order.
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    y = np.asarray(labels, dtype=np.float64)
    off = np.asarray(query_offsets, dtype=np.int64)
    if y.ndim != 1 or off.ndim != 1 or off.shape[0] < 2 or off[0] != 0 or off[-1] != y.size:
        raise ValueError("labels must be 1-D and query_offsets run from 0 to len(labels)")
    if np.any(np.diff(off) < 0):
        raise ValueError("query_offsets must be non-decreasing")
    if not np.all(np.isfinite(y)) or np.any(y < 0):
        raise ValueError("labels must be finite and >= 0")
    for name, v in (("top_k", top_k), ("n_sessions", n_sessions)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise ValueError(f"{name}={v!r} must be an integer")
    if top_k < 1:
        raise ValueError(f"top_k={top_k} must be >= 1")
    if n_sessions < 0:
        raise ValueError(f"n_sessions={n_sessions} must be >= 0")
    if n_sessions > 2**62:  # NumPy's sizes are int64: an OverflowError traceback before
        raise ValueError(f"n_sessions={n_sessions} is too large (at most 2**62)")
    if not (math.isfinite(ranking_noise) and ranking_noise >= 0):
        raise ValueError(f"ranking_noise={ranking_noise} must be finite and >= 0")
    # each named with its value (one message for all three did not say which)
    for name, v in (("satisfaction", satisfaction), ("noise", noise)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name}={v!r} must be in [0, 1]")
    if not eta >= 0:
        raise ValueError(f"eta={eta!r} must be >= 0")
    if eps_plus is not None and not (noise <= eps_plus <= 1.0):
        raise ValueError(f"eps_plus={eps_plus!r} must be in [noise={noise!r}, 1]")
    if not 0.0 <= shuffle_fraction <= 1.0:
        raise ValueError(f"shuffle_fraction={shuffle_fraction!r} must be in [0, 1]")
    rng = np.random.default_rng(random_state)
    n_q = off.shape[0] - 1
    if scores is None:
        s = y + rng.normal(0.0, ranking_noise, size=y.size)
    else:
        s = np.asarray(scores, dtype=np.float64)
        if s.shape != y.shape:
            raise ValueError("scores must have the shape of labels")
        bad = np.flatnonzero(~np.isfinite(s))
        if bad.size:  # NaN would be shown last, whatever the ranker meant
            raise ValueError(f"scores must be finite: row {int(bad[0])} is {s[bad[0]]}")
    ymax = float(y.max()) if y.size else 0.0
    # (2^y - 1) / 2^ymax written as 2^(y - ymax) - 2^-ymax: the same numbers (exactly,
    # for grades up to 53) without overflowing at grades of 1024 and more
    gain = np.exp2(y - ymax) - np.exp2(-ymax)
    if eps_plus is None:
        attract = noise + (1.0 - noise) * gain
    else:  # (2^y - 1) / (2^ymax - 1)
        top = 1.0 - np.exp2(-ymax)
        attract = noise + (eps_plus - noise) * (gain / top if top > 0 else 0.0)
    qid_text = [str(q) for q in (range(n_q) if qids is None else qids)]
    if len(qid_text) != n_q:
        raise ValueError("qids must have one entry per query")
    seen_q: dict[str, int] = {}
    for q, text in enumerate(qid_text):  # one query's documents would pass for another's
        first_q = seen_q.setdefault(query_id_text(text), q)
        if first_q != q:
            raise ValueError(
                f"qids[{q}]={text!r} names the same query as qids[{first_q}]="
                f"{qid_text[first_q]!r} (a click log reads integer ids as numbers): "
                "give every query its own id"
            )
    if docids is not None and len(docids) != y.size:
        raise ValueError("docids must have one entry per row")
    if docids is not None:  # a log names a query's documents by id: two rows, one id
        for q in range(n_q):  # cannot be told apart (its reader refuses the repeat)
            first: dict[str, int] = {}
            for i in range(int(off[q]), int(off[q + 1])):
                d = docids[i]
                if d is not None and first.setdefault(d, i) != i:
                    raise ValueError(
                        f"row {i}: docid {d!r} is also row {first[d]}'s, in the same query "
                        "(a click log names a query's documents by docid)"
                    )
    # Each query's shown list, computed once.
    shown: list[NDArray[np.int64]] = []
    for q in range(n_q):
        a, b = int(off[q]), int(off[q + 1])
        order = np.argsort(-s[a:b], kind="stable")[:top_k] + a
        shown.append(order)
    nonempty = np.flatnonzero(np.diff(off) > 0)
    if nonempty.size == 0 and n_sessions:
        raise ValueError("no query has documents")
    picks = rng.choice(nonempty, size=n_sessions) if n_sessions else np.zeros(0, np.int64)
    out_q: list[str] = []
    out_d: list[str] = []
    out_p: list[NDArray[np.int64]] = []
    out_c: list[NDArray[np.int8]] = []
    out_i: list[NDArray[np.int64]] = []
    for sess, q in enumerate(picks.tolist()):
        rows = shown[q]
        k = rows.size
        if shuffle_fraction > 0.0 and rng.random() < shuffle_fraction:
            rows = rows[rng.permutation(k)]
        u = rng.random(k)
        r = attract[rows]
        if model == "position_based":
            exam = (1.0 / np.arange(1, k + 1)) ** eta
            c = u < exam * r
        else:
            c = np.zeros(k, dtype=bool)
            stop_u = rng.random(k)
            for j in range(k):
                if u[j] < r[j]:
                    c[j] = True
                    if stop_u[j] < satisfaction:
                        break
        out_q.extend([qid_text[q]] * k)
        if docids is None:
            out_d.extend(str(int(i) - int(off[q])) for i in rows)
        else:
            for i in rows.tolist():
                d = docids[i]
                if d is None:
                    raise ValueError(f"row {i} has no document id")
                out_d.append(d)
        out_p.append(np.arange(1, k + 1, dtype=np.int64))
        out_c.append(c.astype(np.int8))
        out_i.append(np.full(k, sess, dtype=np.int64))
    cat = np.concatenate
    return ClickLog(
        qid=_objects(out_q),
        docid=_objects(out_d),
        position=cat(out_p) if out_p else np.zeros(0, np.int64),
        clicked=cat(out_c) if out_c else np.zeros(0, np.int8),
        impression=cat(out_i) if out_i else np.zeros(0, np.int64),
    )


def sample_logger_queries(
    labels: ArrayLike,
    query_offsets: ArrayLike,
    fraction: float,
    random_state: int | np.random.Generator | None = None,
    *,
    max_draws: int = 1000,
) -> NDArray[np.int64]:
    """The queries a weak logging ranker learns from: ``ceil(fraction * n)`` of the ``n``
    queries with documents, uniformly without replacement, drawn again (up to
    ``max_draws`` times) until every grade that occurs in ``labels`` occurs in the
    sample.  Returns the sorted query indices."""
    y = np.asarray(labels, dtype=np.float64)
    off = np.asarray(query_offsets, dtype=np.int64)
    if not 0.0 < fraction <= 1.0:
        raise ValueError("fraction must be in (0, 1]")
    nonempty = np.flatnonzero(np.diff(off) > 0)
    if nonempty.size == 0:
        raise ValueError("no query has documents")
    n = min(nonempty.size, max(1, int(np.ceil(fraction * nonempty.size))))
    grades = np.unique(y)
    qidx = np.repeat(np.arange(off.size - 1), np.diff(off))
    rng = np.random.default_rng(random_state)
    for _ in range(max_draws):
        pick = np.sort(rng.choice(nonempty, size=n, replace=False))
        if np.isin(grades, y[np.isin(qidx, pick)]).all():
            return pick.astype(np.int64)
    raise ValueError(
        f"no sample of {n} queries held every grade {grades.tolist()} in {max_draws} draws"
    )


def weak_logger_scores(
    X: ArrayLike,
    labels: ArrayLike,
    query_offsets: ArrayLike,
    fraction: float = 0.05,
    random_state: int | None = 0,
    **ranker_params,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Scores of a weak production ranker for :func:`simulate`'s ``scores``: LambdaMART
    (``ltrboost.sklearn.Ranker(**ranker_params)``) trained on the grades of the queries
    :func:`sample_logger_queries` picks (``fraction``, ``random_state``), applied to
    every row of ``X``.  Returns ``(scores, queries)``."""
    from ltrboost.sklearn import Ranker

    y = np.asarray(labels, dtype=np.float64)
    off = np.asarray(query_offsets, dtype=np.int64)
    pick = sample_logger_queries(y, off, fraction, random_state)
    rows = np.concatenate([np.arange(off[q], off[q + 1]) for q in pick.tolist()])
    X = np.asarray(X)
    model = Ranker(**ranker_params).fit(X[rows], y[rows], group=np.diff(off)[pick])
    return np.asarray(model.predict(X), dtype=np.float64), pick


def mine_preferences(
    log: ClickLog, strategy: str = "skip-above", *, min_count: int = 1
) -> MinedPairs:
    """Mine preference pairs from ``log`` (definitions in the module docstring).

    Returns the netted pairs sorted by (qid, preferred, other) as text.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    # an integer: 1.5 kept the pairs of count 2, True those of 1, "2" was a TypeError
    if isinstance(min_count, bool) or not isinstance(min_count, int | np.integer) or min_count < 1:
        raise ValueError(
            f"min_count={min_count!r} must be an integer >= 1 (--min-count on the CLI)"
        )
    counts: dict[tuple[str, str, str], int] = {}
    order = np.lexsort((log.position, log.impression))
    imp = log.impression[order]
    bounds = np.flatnonzero(np.diff(imp)) + 1
    for idx in np.split(order, bounds) if order.size else []:
        pos = log.position[idx].tolist()
        clk = log.clicked[idx].tolist()
        doc = log.docid[idx].tolist()
        q = log.qid[idx[0]]
        # the unclicked results above the current one, kept as they are met: scanning
        # every result above each click was quadratic in the impression's length
        # (100,000 results all clicked: minutes, to find no pair)
        skipped: list[int] = []
        for j in range(len(idx)):
            if not clk[j]:
                skipped.append(j)
                continue
            if strategy == "skip-above":
                others = skipped
            else:
                others = [j + 1] if j + 1 < len(idx) and pos[j + 1] == pos[j] + 1 else []
                others = [i for i in others if not clk[i]]
            for i in others:
                key = (q, doc[j], doc[i])
                counts[key] = counts.get(key, 0) + 1
    kept: list[tuple[str, str, str, int]] = []
    for (q, a, b), n in counts.items():
        net = n - counts.get((q, b, a), 0)
        if net >= min_count:
            kept.append((q, a, b, net))
    kept.sort(key=lambda t: t[:3])
    return MinedPairs(
        qid=_objects([t[0] for t in kept]),
        preferred=_objects([t[1] for t in kept]),
        other=_objects([t[2] for t in kept]),
        count=np.asarray([t[3] for t in kept], dtype=np.int64),
        weight=np.asarray([t[3] for t in kept], dtype=np.float64),
    )


@dataclass
class ClickRows:
    """A click log as training rows for Unbiased LambdaMART (:func:`click_rows`).

    Attributes
    ----------
    row : ndarray of int64, the data row (features) of each shown result.
    clicked : ndarray of float64, the label: 1.0 clicked, 0.0 not.
    impression : ndarray of int64, the query group of the row: one group per showing.
    position : ndarray of int64, the 1-based position the result was shown at.
    """

    row: NDArray[np.int64]
    clicked: NDArray[np.float64]
    impression: NDArray[np.int64]
    position: NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.row.shape[0])


def click_rows(log: ClickLog, qid: ArrayLike, docids: Sequence[str | None]) -> ClickRows:
    """Turn a click log into training rows: one per shown result, grouped by impression.

    Each impression (one showing of a result list) becomes one query group whose labels
    are the clicks and whose positions are the positions shown -- the training data of
    ``Ranker(unbiased=True).fit(X[r.row], r.clicked, qid=r.impression,
    position=r.position)``.  ``qid`` / ``docids`` are the data's query and document id
    of each row (as for :func:`read_click_log`); a result whose (qid, docid) is not a
    row of the data is an error naming the log line (or entry).  Rows come in
    impression order, then position order.
    """
    where, repeated = _data_rows(qid, docids)
    order = np.lexsort((log.position, log.impression))
    rows = np.empty(order.size, dtype=np.int64)
    for k, e in enumerate(order.tolist()):
        key = (query_id_text(str(log.qid[e])), str(log.docid[e]))
        r = where.get(key)
        if r is None or key in repeated:
            at = f"line {int(log.line[e])}" if log.line is not None else f"entry {e}"
            raise LTRInputError(
                f"{at}: document {log.docid[e]!r} of query {log.qid[e]!r} is not in the data"
                if r is None
                else f"{at}: {_not_unique(*key, repeated[key])}"
            )
        rows[k] = r
    return ClickRows(
        row=rows,
        clicked=log.clicked[order].astype(np.float64),
        impression=log.impression[order].astype(np.int64),
        position=log.position[order].astype(np.int64),
    )


@dataclass
class RelevanceLabels:
    """Per-(query, document) labels aggregated from a click log (:func:`relevance_labels`).

    Attributes
    ----------
    qid : ndarray of str (object), the query of each labelled document.
    docid : ndarray of str (object), the document.
    label : ndarray of float64, its inverse-propensity label (click-through rate without
        propensities).
    shown : ndarray of int64, the number of impressions that showed it.
    clicks : ndarray of int64, the number of those in which it was clicked.
    row : ndarray of int64 or None, its data row, when the data's ``qid`` and ``docids``
        were given (then entries come in row order, so a query's documents are adjacent
        if the data's are).
    """

    qid: NDArray[np.object_]
    docid: NDArray[np.object_]
    label: NDArray[np.float64]
    shown: NDArray[np.int64]
    clicks: NDArray[np.int64]
    row: NDArray[np.int64] | None = None

    def __len__(self) -> int:
        return int(self.label.shape[0])

    def grades(self, scale: float = 1000.0) -> NDArray[np.float64]:
        """``rint(scale * label)``: integer grades for LambdaMART, to be trained with
        ``gain="linear"`` (whose lambdas are invariant to ``scale``: the grid only rounds
        the labels to ``1 / scale``)."""
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be finite and > 0, got {scale}")
        return np.rint(scale * self.label)


def relevance_labels(
    log: ClickLog,
    propensities: ArrayLike | None = None,
    *,
    qid: ArrayLike | None = None,
    docids: Sequence[str | None] | None = None,
) -> RelevanceLabels:
    """Inverse-propensity relevance labels of the shown documents (module docstring).

    Parameters
    ----------
    log : a click log (:func:`read_click_log`, :func:`simulate`).
    propensities : array-like of shape (n_positions,), ``propensities[k - 1]`` is the
        examination probability of position ``k`` (e.g. ``(1 / k) ** eta``, or the
        ``t_plus`` of an unbiased model's ``position_bias_``); every value finite and > 0,
        and the log's positions must be integers from 1 to ``n_positions`` (a log counted
        from 0 is refused, naming the line or entry).  ``None``: all 1, so the label is the
        click-through rate (positions unused).
    qid, docids : optional, the data's query id and document id of each row (as for
        :func:`click_rows`); when given, ``row`` holds each document's data row, entries
        come in row order and a document that is not a row of the data is an error
        naming the log line (or entry).

    Returns
    -------
    RelevanceLabels, one entry per distinct shown (qid, docid); without ``qid`` /
    ``docids`` in order of (qid, docid) as text.  For LambdaMART, e.g.
    ``Ranker(gain="linear").fit(X[r.row], r.grades(), qid=data_qid[r.row])``.
    """
    if propensities is None:
        pos = np.asarray(log.position, dtype=np.int64)
        weight = np.ones(pos.size, dtype=np.float64)
    else:
        pos = _one_based_positions(log)
        theta = np.asarray(propensities, dtype=np.float64)
        if theta.ndim != 1 or theta.size == 0:
            raise ValueError("propensities must be a non-empty 1-D array, one per position")
        bad = ~(np.isfinite(theta) & (theta > 0))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"the propensity of position {k + 1} is {theta[k]}: propensities must be "
                "finite and > 0 (a position never examined cannot be corrected for)"
            )
        deep = np.flatnonzero(pos > theta.size)
        if deep.size:
            e = int(deep[0])
            at = f"line {int(log.line[e])}" if log.line is not None else f"entry {e}"
            raise ValueError(
                f"{at}: position {int(pos[e])} has no propensity (propensities cover "
                f"positions 1 to {theta.size})"
            )
        weight = 1.0 / theta[pos - 1]
    index: dict[tuple[str, str], int] = {}
    code = np.empty(pos.size, dtype=np.int64)
    for e, key in enumerate(zip(log.qid.tolist(), log.docid.tolist(), strict=True)):
        code[e] = index.setdefault((str(key[0]), str(key[1])), len(index))
    keys = list(index)
    n = len(keys)
    shown = np.bincount(code, minlength=n).astype(np.int64)
    clicks = np.bincount(code, weights=log.clicked, minlength=n).astype(np.int64)
    label = np.bincount(code, weights=log.clicked * weight, minlength=n) / np.maximum(shown, 1)
    row = None
    if qid is not None or docids is not None:
        if qid is None or docids is None:
            raise ValueError("give both qid and docids, or neither")
        where, repeated = _data_rows(qid, docids)
        row = np.empty(n, dtype=np.int64)
        for j, key in enumerate(keys):
            data_key = (query_id_text(key[0]), key[1])
            r = where.get(data_key)
            if r is None or data_key in repeated:
                e = int(np.flatnonzero(code == j)[0])
                at = f"line {int(log.line[e])}" if log.line is not None else f"entry {e}"
                raise LTRInputError(
                    f"{at}: document {key[1]!r} of query {key[0]!r} is not in the data"
                    if r is None
                    else f"{at}: {_not_unique(*data_key, repeated[data_key])}"
                )
            row[j] = r
        order = np.argsort(row, kind="stable")
    else:
        order = np.asarray(sorted(range(n), key=keys.__getitem__), dtype=np.int64)
    return RelevanceLabels(
        qid=_objects([keys[j][0] for j in order.tolist()]),
        docid=_objects([keys[j][1] for j in order.tolist()]),
        label=label[order],
        shown=shown[order],
        clicks=clicks[order],
        row=None if row is None else row[order],
    )


def _one_based_positions(log: ClickLog) -> NDArray[np.int64]:
    """``log.position`` as int64, after refusing (naming the log line, or the 0-based
    entry) a position that is not an integer >= 1: counted from 0, it indexed the
    deepest propensity (``theta[-1]``), and 2.5 was truncated to 2, without a word."""
    raw = np.asarray(log.position)
    if raw.dtype.kind not in "biuf":
        raise ValueError(f"log.position must be numeric, got dtype {raw.dtype}")
    with np.errstate(invalid="ignore"):
        ok = (raw >= 1) & (raw <= MAX_POSITION) & (raw == np.floor(raw))
    bad = np.flatnonzero(~ok)
    if bad.size:
        e = int(bad[0])
        at = f"line {int(log.line[e])}" if log.line is not None else f"entry {e}"
        raise ValueError(
            f"{at}: position {raw[e].item()!r} is not an integer >= 1 (positions are "
            "1-based: propensities[k - 1] is position k's)"
        )
    return raw.astype(np.int64)


def write_pairs(path: str | os.PathLike, pairs: MinedPairs) -> None:
    """Write ``pairs`` as a ``--pairs`` file (:mod:`ltrboost.io.pairs`), atomically."""
    from ltrboost.io.pairs import write_pairs_file

    write_pairs_file(path, pairs.qid, pairs.preferred, pairs.other, pairs.weight)


def _objects(items: list[str]) -> NDArray[np.object_]:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out

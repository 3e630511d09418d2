"""Which document pairs a pairwise objective uses: ``"all"``, ``"topk"``, ``"sampled"``.

Pairs and their weights |delta Z| are separate concerns (XGBoost's split): this module
only says *which* pairs of a query take part; :mod:`ltrboost.objectives.pair_engine`
weighs them. Pairs are enumerated in *rank space*: ``rank_hi < rank_lo`` are positions
in the query's ranking (documents sorted by the current score, highest first; ties keep
input order, the rule of :mod:`ltrboost.metrics._dcg`, whose ``rank_order_one_query``
is used).  Only pairs whose labels differ are ever produced; which of the two is the
better document is decided by the caller.

Methods
-------
``"all"``
    Every pair of documents with different labels (RankNet, seed 001's ``I^q``).
``"topk"``
    Pairs ``(rank_hi, rank_lo)`` with ``rank_hi < truncation_level`` and
    ``rank_lo > rank_hi``, labels differing: at least one document is in the current
    top-``truncation_level`` (LightGBM's ``lambdarank_truncation_level`` loop).  With
    ``truncation_level=None`` (or a level ``>= n - 1``) this is ``"all"``.
``"sampled"``
    For each document, ``pairs_per_sample`` partners drawn uniformly (with replacement)
    among the documents of the query with a different label (XGBoost's ``mean`` method).
    A query with a single label value gives no pair.  A pair drawn from both of its ends
    is used twice.

Randomness is counter-based: draw number ``c`` of query ``q`` is a hash of
``(seed_q, c)`` with ``seed_q = random_state + iteration * n_queries + q`` and
``c = t * n + position`` for the ``t``-th partner of the document at ``position`` of the
label-sorted list.  No generator state is shared between queries, so results do not
depend on the thread count or on the order in which pairs are visited.  The hash chains
Wellons' 32-bit ``lowbias32`` mixer; every product stays below 2**64, so the arithmetic
never wraps and reads the same jitted or under ``NUMBA_DISABLE_JIT=1`` (NumPy scalars
warn on uint64 overflow).  The integer in ``[0, m)`` is ``hash % m``; its relative bias,
at most ``m / 2**32``, is negligible for query sizes (1e-5 for 40 000 documents).

The objectives' per-query kernels call :func:`enumerate_pairs_one_query` into a
per-query buffer (sized by :func:`max_pairs_one_query`), or, for ``all``/``topk`` in
the pairwise engine, :func:`enumerate_pairs_chunk` (the same pairs in the same order
through a buffer of at most ``PAIR_CHUNK``, so memory stays linear in the query
length), and then walk the buffer: the pairs they use are by construction the pairs
tested here.  Helpers called once per
pair take scalars only: a Numba call that is not inlined pays reference counting for
every array argument, which costs more than the pair itself.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ltrboost._config import count_setting, env_count
from ltrboost._numba import inline_kernel, kernel
from ltrboost.metrics._dcg import rank_order_one_query
from ltrboost.params import ParameterError

PAIR_ALL = 0
PAIR_TOPK = 1
PAIR_SAMPLED = 2
PAIR_METHODS = {"all": PAIR_ALL, "topk": PAIR_TOPK, "sampled": PAIR_SAMPLED}

# lowbias32 constants (C. Wellons, "Prospecting for hash functions", 2018) and stream
# keys.  uint64 so Numba keeps the arithmetic unsigned (int64 op uint64 gives float64);
# values stay below 2**32 between steps, so products stay below 2**64.
_M32 = np.uint64(0xFFFFFFFF)
_MUL1 = np.uint64(0x7FEB352D)
_MUL2 = np.uint64(0x846CA68B)
_KEY_SEED = np.uint64(0x9E3779B9)
_KEY_COUNTER = np.uint64(0x632BE5AB)


# Label pairs the pairwise engine holds at once per query ("all"/"topk" are streamed
# through a buffer of this many; 2 int64 per pair: 16 MiB per thread).  Read at each
# call, so tests may lower it.
PAIR_CHUNK = 1 << 20

# The OLE criterion needs every pair of a round in memory at once (6 bytes each in the
# grower's PairCSR; 22 while an objective's PairTerms, 16 bytes a pair, is converted;
# LambdaMART with NDCG writes the PairCSR directly): more than this is refused with a
# message naming the largest query.  ``$LTRBOOST_MAX_OLE_PAIRS`` overrides it.
MAX_OLE_PAIRS = 50_000_000

# GBRank and QBRank enumerate a query's label pairs into one buffer of n (n - 1) / 2
# pairs (16 bytes each, per query in flight): a longer query is refused, naming it.
MAX_QUERY_PAIRS = 50_000_000


# A count parameter that sizes pair buffers (``pairs_per_sample``, YetiRank's
# ``permutations``) or bounds ranks (``truncation_level``) reaches the kernels as at most
# this (int64 arithmetic there): more than any query's documents, so a larger truncation
# level means the same (every pair), and a larger pair count is refused by
# :func:`check_query_pair_count` whenever a query has a pair at all.
MAX_PAIR_PARAMETER = 2**31 - 1


def kernel_count(value: int) -> int:
    """``value`` (a validated count parameter) as the kernels take it."""
    return min(int(value), MAX_PAIR_PARAMETER)


_QUERY_PAIRS_ENV = "LTRBOOST_MAX_QUERY_PAIRS"

# within using_query_pair_setting: ``(text,)``, a Dask driver's $LTRBOOST_MAX_QUERY_PAIRS
# (None: unset there), read instead of this process's environment
_DRIVER_QUERY_PAIRS: contextvars.ContextVar[tuple[str | None] | None] = contextvars.ContextVar(
    "ltrboost_driver_query_pairs", default=None
)


def query_pair_limit() -> int:
    """Pairs one query may hold at once: ``$LTRBOOST_MAX_QUERY_PAIRS``, else
    ``MAX_QUERY_PAIRS``; within :func:`using_query_pair_setting` (a Dask worker) the
    driver's variable, not this process's."""
    given = _DRIVER_QUERY_PAIRS.get()
    if given is not None:
        return count_setting(_QUERY_PAIRS_ENV, given[0], MAX_QUERY_PAIRS)
    return env_count(_QUERY_PAIRS_ENV, MAX_QUERY_PAIRS)


def query_pair_setting() -> str | None:
    """This process's ``$LTRBOOST_MAX_QUERY_PAIRS`` as text (None: unset), for
    :func:`using_query_pair_setting` on the Dask workers.  The text, not the limit: an
    invalid value is refused where the limit is read, as locally (only by an objective
    that holds a query's pairs)."""
    return os.environ.get(_QUERY_PAIRS_ENV)


@contextlib.contextmanager
def using_query_pair_setting(text: str | None) -> Iterator[None]:
    """Within: :func:`query_pair_limit` reads ``text`` (a Dask driver's
    :func:`query_pair_setting`) instead of this process's environment, so that every
    worker refuses a query as the driver's process would."""
    token = _DRIVER_QUERY_PAIRS.set((text,))
    try:
        yield
    finally:
        _DRIVER_QUERY_PAIRS.reset(token)


def _longest_query(data, two_labels: bool = False) -> tuple[Any, int] | None:
    """The longest query's ``(name, documents)``; with ``two_labels``, of the queries
    with two different labels only (the others hold no label pairs), when ``data`` has
    labels."""
    sizes = np.diff(data.query_offsets)
    if two_labels and data.y is not None and sizes.size:
        y = np.asarray(data.y, dtype=np.float64)
        some = np.flatnonzero(sizes > 0)
        starts = np.asarray(data.query_offsets[:-1])[some]
        low = np.minimum.reduceat(y, starts) if y.size else y
        high = np.maximum.reduceat(y, starts) if y.size else y
        sizes = sizes.copy()
        sizes[some[low == high]] = 0  # NaN: kept (refused by the label checks)
    if sizes.size == 0 or not sizes.any():
        return None
    q = int(np.argmax(sizes))
    return (data.query_ids[q] if data.query_ids is not None else q), int(sizes[q])


def check_query_pair_count(
    data, pairs_of: Any, setting: str, remedy: str, two_labels: bool = True
) -> None:
    """Raise ValueError when the longest query's pair buffer, ``pairs_of(n)`` pairs for
    ``n`` documents (Python integers: no overflow), exceeds :func:`query_pair_limit`;
    the message names ``setting`` (e.g. ``"pair_method='sampled' with
    pairs_per_sample=4"``) and ``remedy``.  ``two_labels``: only queries with two
    different labels hold the buffer (label pairs)."""
    longest = _longest_query(data, two_labels)
    if longest is None:
        return
    name, n = longest
    pairs = int(pairs_of(n))
    limit = query_pair_limit()
    if pairs > limit:
        raise ParameterError(
            f"query {name} has {n} documents: {setting} holds {pairs} pairs of it at "
            f"once ({pairs * 16 / 2**30:.3g} GiB), over the limit of {limit} "
            f"($LTRBOOST_MAX_QUERY_PAIRS); {remedy}"
        )


def check_query_pair_buffer(data, objective: str) -> None:
    """Raise ValueError when the longest query's pair buffer exceeds the limit
    (``$LTRBOOST_MAX_QUERY_PAIRS``, else ``MAX_QUERY_PAIRS``); a query of one label
    holds none."""
    longest = _longest_query(data, two_labels=True)
    if longest is None:
        return
    name, n = longest
    pairs = n * (n - 1) // 2
    limit = query_pair_limit()
    if pairs > limit:
        raise ParameterError(
            f"query {name} has {n} documents: {objective} holds its {pairs} document "
            f"pairs at once ({pairs * 16 / 2**30:.1f} GiB), over the limit of {limit} "
            "($LTRBOOST_MAX_QUERY_PAIRS); split or truncate the query, or use "
            "ranknet/rankboost/lambdamart, which stream pairs (and offer "
            "pair_method='topk' with a truncation_level, or 'sampled')"
        )


def max_ole_pairs() -> int:
    """The OLE pair limit: ``$LTRBOOST_MAX_OLE_PAIRS`` when set, else MAX_OLE_PAIRS."""
    return env_count("LTRBOOST_MAX_OLE_PAIRS", MAX_OLE_PAIRS)


def pair_method_code(
    pair_method: str, truncation_level: int | None, pairs_per_sample: int
) -> tuple[int, int]:
    """Validate the pair parameters; return ``(method_code, truncation)``.

    ``truncation`` is ``-1`` for "no truncation" (``truncation_level=None``).
    """
    try:
        code = PAIR_METHODS[pair_method]
    except (KeyError, TypeError):
        raise ValueError(
            f"pair_method={pair_method!r} is not one of {sorted(PAIR_METHODS)}"
        ) from None
    if truncation_level is None:
        trunc = -1
    else:
        if isinstance(truncation_level, bool) or not isinstance(truncation_level, int | np.integer):
            raise ValueError(
                f"truncation_level={truncation_level!r} must be a positive integer or None"
            )
        if truncation_level < 1:
            raise ValueError(
                f"truncation_level={truncation_level} should be at least 1 "
                "(or None for no truncation)"
            )
        trunc = kernel_count(truncation_level)  # above every query's length: all pairs
    if (
        isinstance(pairs_per_sample, bool)
        or not isinstance(pairs_per_sample, int | np.integer)
        or pairs_per_sample < 1
    ):
        raise ValueError(f"pairs_per_sample={pairs_per_sample!r} should be a positive integer")
    return code, trunc


# Per-query seeds are int64 in the kernels: the base is taken modulo 2**62 so that the
# base plus a query number never overflows (a seed below 2**62 is its own base).
SEED_MODULUS = 2**62


def query_seed_base(random_state: int, iteration: int, n_queries: int) -> int:
    """``(random_state + iteration * n_queries) mod 2**62``; query ``q`` adds ``q``."""
    return (int(random_state) + int(iteration) * int(n_queries)) % SEED_MODULUS


# --- kernels ---


@kernel
def query_rank_order(scores_q):
    """Ranking of one query: indices by score, highest first, ties in input order.

    scores_q: IN float64 (n,).  Returns int32 (n,).  Delegates to the one implementation
    of the ranking rule, :func:`ltrboost.metrics._dcg.rank_order_one_query`, so that
    the objectives' ranks are the metrics' ranks (int32 like the metrics' buffers: one
    compiled sort, not two).
    """
    n = scores_q.shape[0]
    order = np.empty(n, dtype=np.int32)
    scratch = np.empty(n, dtype=np.int32)
    rank_order_one_query(scores_q, order, scratch)
    return order


@kernel
def _hash32(x):
    """lowbias32 of a uint64 holding a value below 2**32; returns such a value."""
    x = x ^ (x >> np.uint64(16))
    x = (x * _MUL1) & _M32
    x = x ^ (x >> np.uint64(15))
    x = (x * _MUL2) & _M32
    return x ^ (x >> np.uint64(16))


@kernel
def _hash64_to_32(v, key):
    """Hash of a non-negative 64-bit integer (as uint64) under ``key``, below 2**32."""
    return _hash32((v & _M32) ^ _hash32((v >> np.uint64(32)) ^ key))


@kernel
def _random_index(seed, counter, m):
    """Integer in ``[0, m)``: draw ``counter`` of the stream ``seed`` (both >= 0)."""
    stream = _hash64_to_32(np.uint64(seed), _KEY_SEED)
    z = _hash32(stream ^ _hash64_to_32(np.uint64(counter), _KEY_COUNTER))
    return np.int64(z % np.uint64(m))


@kernel
def random_uniform(seed, counter):
    """Uniform on the open interval (0, 1): draw ``counter`` of the stream ``seed``
    (the hash of :func:`_random_index`, 32 bits, centred in its cell)."""
    stream = _hash64_to_32(np.uint64(seed), _KEY_SEED)
    z = _hash32(stream ^ _hash64_to_32(np.uint64(counter), _KEY_COUNTER))
    return (np.float64(z) + 0.5) * 2.3283064365386963e-10  # 2**-32


@inline_kernel
def n_outer_ranks(n, method, truncation):
    """How many ``rank_hi`` positions the ``all``/``topk`` double loop visits.

    The loop is ``for rank_hi in range(n_outer_ranks(...)): for rank_lo in
    range(rank_hi + 1, n)`` (LightGBM's ``i < cnt - 1 && i < truncation``).
    """
    if n < 2:
        return 0
    if method == PAIR_TOPK and truncation > 0 and truncation < n - 1:
        return truncation
    return n - 1


@inline_kernel
def has_two_labels(labels_q):
    """True when the query holds at least two different label values."""
    n = labels_q.shape[0]
    for i in range(1, n):
        if labels_q[i] != labels_q[0]:
            return True
    return False


@kernel
def _label_buckets(labels_ranked, label_order_out, bucket_lo_out, bucket_hi_out):
    """Group rank positions by label, for sampling partners with a different label.

    labels_ranked: IN float64 (n,), labels in rank order. label_order_out: OUT int64
    (n,), rank positions sorted by label (descending, stable). bucket_lo_out,
    bucket_hi_out: OUT int64 (n,): position ``p`` of the label-sorted list belongs to
    the bucket ``[bucket_lo_out[p], bucket_hi_out[p])`` of equal labels.

        label-sorted:  [ 3 3 | 2 | 1 1 1 | 0 ]
        p = 3          lo = 3, hi = 6: partners are drawn from positions {0,1,2,6}
    """
    n = labels_ranked.shape[0]
    scratch = np.empty(n, dtype=np.int64)
    rank_order_one_query(labels_ranked, label_order_out, scratch)  # stable, descending
    order = label_order_out
    start = 0
    for p in range(1, n + 1):
        if p == n or labels_ranked[order[p]] != labels_ranked[order[start]]:
            for t in range(start, p):
                bucket_lo_out[t] = start
                bucket_hi_out[t] = p
            start = p


@kernel
def _sampled_partner(bucket_lo, bucket_hi, n, seed, counter):
    """Label-sorted position of a partner of a document in bucket ``[lo, hi)``.

    Uniform over the ``n - (bucket_hi - bucket_lo)`` documents outside the bucket; the
    caller guarantees that there is at least one (``has_two_labels``).  Scalars only,
    so that calling it in a pair loop costs no array reference counting.
    """
    r = _random_index(seed, counter, n - (bucket_hi - bucket_lo))
    if r >= bucket_lo:
        r += bucket_hi - bucket_lo  # skip over the bucket
    return r


@kernel
def max_pairs_one_query(n, method, truncation, pairs_per_sample):
    """Upper bound of the pair count (exact when all labels differ); sizes buffers."""
    if n < 2:
        return 0
    if method == PAIR_SAMPLED:
        return pairs_per_sample * n
    k = n_outer_ranks(n, method, truncation)
    # sum over rank_hi < k of (n - 1 - rank_hi)
    return k * (n - 1) - k * (k - 1) // 2


@kernel
def count_pairs_one_query(labels_ranked, method, truncation, pairs_per_sample):
    """Number of pairs :func:`enumerate_pairs_one_query` produces for this query."""
    n = labels_ranked.shape[0]
    if n < 2 or not has_two_labels(labels_ranked):
        return 0
    if method == PAIR_SAMPLED:
        return pairs_per_sample * n
    count = 0
    for a in range(n_outer_ranks(n, method, truncation)):
        for b in range(a + 1, n):
            if labels_ranked[a] != labels_ranked[b]:
                count += 1
    return count


@kernel
def enumerate_pairs_one_query(
    labels_ranked, method, truncation, pairs_per_sample, seed, rank_hi_out, rank_lo_out
):
    """Write the query's pairs as ranks ``rank_hi < rank_lo``; return their count.

    labels_ranked: IN float64 (n,), labels in rank order.
    rank_hi_out, rank_lo_out: OUT int64, at least ``count_pairs_one_query`` long
    (``max_pairs_one_query`` is a cheaper bound).  This is the order in which the
    objectives visit the pairs: ``all``/``topk`` row by row (LightGBM's double loop);
    ``sampled`` partner round ``t`` by round, documents in label-sorted order.
    ``seed``: None from callers that never sample; the sampler's branch is then pruned
    when this kernel compiles (~2 s of a first GBRank run).
    """
    n = labels_ranked.shape[0]
    if n < 2 or not has_two_labels(labels_ranked):
        return 0
    k = 0
    if method == PAIR_SAMPLED:
        if seed is None:  # not a sampling caller
            return 0
        label_order = np.empty(n, dtype=np.int64)
        bucket_lo = np.empty(n, dtype=np.int64)
        bucket_hi = np.empty(n, dtype=np.int64)
        _label_buckets(labels_ranked, label_order, bucket_lo, bucket_hi)
        for t in range(pairs_per_sample):
            for p in range(n):
                a = label_order[p]
                r = _sampled_partner(bucket_lo[p], bucket_hi[p], n, seed, t * n + p)
                b = label_order[r]
                rank_hi_out[k] = min(a, b)
                rank_lo_out[k] = max(a, b)
                k += 1
        return k
    for a in range(n_outer_ranks(n, method, truncation)):
        for b in range(a + 1, n):
            if labels_ranked[a] != labels_ranked[b]:
                rank_hi_out[k] = a
                rank_lo_out[k] = b
                k += 1
    return k


@kernel
def enumerate_pairs_chunk(labels_ranked, method, truncation, cursor, hi_out, lo_out):
    """The next pairs of ``"all"``/``"topk"``, at most ``len(hi_out)``; their count.

    The double loop of :func:`enumerate_pairs_one_query` resumed at ``cursor`` (IN/OUT
    int64 (2,): ``rank_hi, rank_lo`` of the next candidate; start at ``(0, 1)``).
    Calls until one returns less than the buffer length give exactly the pairs of
    :func:`enumerate_pairs_one_query`, in its order, with memory bounded by the buffer
    instead of quadratic in the query length.
    """
    n = labels_ranked.shape[0]
    cap = hi_out.shape[0]
    n_outer = n_outer_ranks(n, method, truncation)
    a = cursor[0]
    b = cursor[1]
    k = 0
    while a < n_outer:
        while b < n:
            if labels_ranked[a] != labels_ranked[b]:
                if k == cap:
                    cursor[0] = a
                    cursor[1] = b
                    return k
                hi_out[k] = a
                lo_out[k] = b
                k += 1
            b += 1
        a += 1
        b = a + 1
    cursor[0] = a
    cursor[1] = b
    return k


# --- references ---


def _hash32_reference(x: int) -> int:
    m32 = 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x7FEB352D) & m32
    x ^= x >> 15
    x = (x * 0x846CA68B) & m32
    return x ^ (x >> 16)


def _hash64_to_32_reference(v: int, key: int) -> int:
    """Python-int twin of :func:`_hash64_to_32`."""
    return _hash32_reference((v & 0xFFFFFFFF) ^ _hash32_reference((v >> 32) ^ key))


def _random_index_reference(seed: int, counter: int, m: int) -> int:
    """Python-int twin of :func:`_random_index`."""
    stream = _hash64_to_32_reference(seed, 0x9E3779B9)
    return _hash32_reference(stream ^ _hash64_to_32_reference(counter, 0x632BE5AB)) % m


def random_uniform_reference(seed: int, counter: int) -> float:
    """Python-int twin of :func:`random_uniform`."""
    h64 = _hash64_to_32_reference
    z = _hash32_reference(h64(seed, 0x9E3779B9) ^ h64(counter, 0x632BE5AB))
    return (z + 0.5) * 2.0**-32


def enumerate_pairs_one_query_reference(
    labels_ranked: NDArray[np.float64],
    pair_method: str,
    truncation_level: int | None,
    pairs_per_sample: int,
    seed: int,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Plain NumPy twin of :func:`enumerate_pairs_one_query` (same pair order)."""
    y = np.asarray(labels_ranked, dtype=np.float64)
    n = y.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    if n < 2 or np.unique(y).size < 2:
        return empty, empty
    if pair_method in ("all", "topk"):
        a, b = np.triu_indices(n, k=1)  # row-major: (0,1), (0,2), ..., (1,2), ...
        keep = y[a] != y[b]
        if pair_method == "topk" and truncation_level is not None:
            keep &= a < truncation_level
        return a[keep].astype(np.int64), b[keep].astype(np.int64)
    # sampled: label-sorted positions, partners outside the own label's bucket
    order = np.argsort(-y, kind="stable")
    his, los = [], []
    for t in range(pairs_per_sample):
        for p in range(n):
            others = order[y[order] != y[order[p]]]  # label-sorted, bucket removed
            r = _random_index_reference(seed, t * n + p, others.size)
            a, b = int(order[p]), int(others[r])
            his.append(min(a, b))
            los.append(max(a, b))
    return np.asarray(his, dtype=np.int64), np.asarray(los, dtype=np.int64)


# Names before the module was renamed from ``_pairs`` (kept for old imports).
_rank_order = query_rank_order
_n_outer_ranks = n_outer_ranks
_has_two_labels = has_two_labels
_max_pairs_one_query = max_pairs_one_query
_count_pairs_one_query = count_pairs_one_query
_enumerate_pairs_one_query = enumerate_pairs_one_query
_enumerate_pairs_one_query_reference = enumerate_pairs_one_query_reference
_enumerate_pairs_chunk = enumerate_pairs_chunk

"""Synthetic LETOR-like ranking data for tests, docs and benchmarks.

:func:`make_ranking` draws queries of documents whose features look like a
learning-to-rank feature file -- continuous scores (BM25-like Gaussians, uniform
ratios), sparse heavy-tailed counts with many zeros, and query-level features repeated
over a query's documents -- and grades them ``0..max_label`` from a hidden, nonlinear
relevance signal.  The default grade distribution is MSLR-WEB10K's (about 52% / 32% /
13% / 2% / 1% for grades 0-4).  :func:`make_ranking_mslr_like` is a preset at MSLR
scale (136 features, about 120 documents per query) that produces millions of documents
in seconds.

How the data are made (every draw derives from one seeded ``numpy.random.Generator``):

1. Query sizes: ``docs_per_query`` documents each, or a uniform integer in a range.
2. Latent document factors ``z`` with unit variance (standard normal for Gaussian
   columns, logistic for counts), correlated through a shared per-document "quality"
   factor, and per-query latent factors.  Each feature is a monotone map of one latent
   factor: Gaussian columns ``mu + sigma (z + beta * shift_q)`` (half carry a per-query
   shift, as BM25 scales vary with the query, so only *relative* values within a query
   are comparable), counts ``floor(exp(clip(a + b z, 0, 15)) - 1)`` (integers, mostly
   zero, log-logistic tail), uniform columns, and query-level columns constant within a
   query.
3. Relevance ``f``: a random mix over the informative factors of linear terms, threshold
   steps, pairwise interactions and a query-dependent weight (a query factor times a
   document factor), standardised to unit variance.
4. Grade: ``f + o_q + noise * eps`` is cut at the global quantiles of the requested
   label distribution, where ``o_q`` is a per-query offset (partly explained by the
   query-level features).  Grade mixes therefore differ between queries -- a few have
   no relevant document, as in real collections -- while the overall mix matches.
5. Missing values: each feature value is replaced by NaN with probability
   ``missing_rate``, independently (after grading, so the signal is unaffected).

Rows are generated in blocks, each from its own stream seeded by the main generator, on
several threads; the output depends only on the arguments and the seed.
"""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from ltrboost.dataset import make_dataset

# MSLR-WEB10K's grade frequencies (grades 0..4), rounded; the default skew.
MSLR_LABEL_DISTRIBUTION = (0.52, 0.32, 0.13, 0.02, 0.01)

FEATURE_KINDS = ("gaussian", "uniform", "count", "query")

# Rows generated per block: bounds the temporaries (a block of 136 float32 features is
# 35 MB) while keeping NumPy's vectorised draws long enough to be fast.
_BLOCK_ROWS = 1 << 16

# Scale of the per-query label offset o_q relative to the unit-variance signal.
_QUERY_OFFSET_SCALE = 0.8

# Largest count of feature values (or documents in a query) the generators accept: the
# sizes are int64, and no memory holds 2**62 values.
_MAX_VALUES = 2**62

# Largest grade the generators accept: the grade frequencies are built per grade, and
# max_label=2**40 never returned (the default skew's tail is 0 past grade ~1080 anyway).
_MAX_LABEL = 2**16 - 1

# Threads filling blocks (0: one per usable CPU, under the cgroup CPU quota, at most 8).  The
# output does not depend on it (each block has its own seeded stream); tests set it to prove that.
_MAX_THREADS = 0


def make_ranking(
    n_queries: int = 100,
    docs_per_query: int | tuple[int, int] = 20,
    n_features: int = 20,
    *,
    n_informative: int | None = None,
    label_distribution: ArrayLike | str | None = None,
    max_label: int = 4,
    noise: float = 0.5,
    missing_rate: float = 0.0,
    feature_kinds: str | Sequence[str] = "mixed",
    random_state: int | np.random.Generator | None = None,
    return_dataset: bool = False,
    dtype: DTypeLike = np.float64,
    return_signal: bool = False,
    first_qid: int = 0,
) -> Any:
    """Generate a seeded synthetic learning-to-rank dataset.

    Parameters
    ----------
    n_queries : int, default=100
        Number of queries (>= 1).
    docs_per_query : int or (int, int), default=20
        Documents per query: a fixed count, or an inclusive ``(min, max)`` range (a
        pair or a 1-d NumPy array of two) from which each query's size is drawn
        uniformly.  Sizes must be >= 1.
    n_features : int, default=20
        Number of feature columns (>= 1).
    n_informative : int or None, default=None
        Number of document-level features the relevance depends on (query-level features
        always shape the per-query offset).  None: half the document-level features,
        rounded up.  Capped at the number of document-level features.
    label_distribution : array-like, "mslr", "uniform" or None, default=None
        Overall frequency of grades ``0..max_label`` (length ``max_label + 1``,
        non-negative, normalised here).  None or ``"mslr"``: MSLR-WEB10K's skew
        ``(0.52, 0.32, 0.13, 0.02, 0.01)``, with the top grades merged when
        ``max_label < 4`` and a halving tail appended when ``max_label > 4``.
    max_label : int, default=4
        Largest grade (1 to 65535).  Must equal ``len(label_distribution) - 1`` when a
        sequence is given.
    noise : float, default=0.5
        Standard deviation of the Gaussian noise added to the unit-variance relevance
        before grading (0 gives grades that are a deterministic function of the signal
        and the query offset).
    missing_rate : float in [0, 1), default=0.0
        Probability that each feature value is replaced by NaN (missing completely at
        random; the grades are drawn from the complete values).
    feature_kinds : "mixed", "continuous" or sequence of str, default="mixed"
        ``"mixed"``: about 10% query-level columns (at most 8, none when
        ``n_features < 5``), 30% counts, 20% uniform, the rest Gaussian, in shuffled
        column order.  ``"continuous"``: Gaussian and uniform columns only.  A sequence
        gives the kind of each column, from ``"gaussian"``, ``"uniform"``, ``"count"``,
        ``"query"``.
    random_state : int, numpy.random.Generator or None, default=None
        Seed or generator; the same integer seed always gives the same data (in any
        process, with any number of threads).  A Generator is advanced by the call (not
        by a refused one: every argument is checked before the first draw).  None:
        fresh, unseeded entropy, so each call gives other data (unlike ``Ranker``,
        whose ``random_state=None`` is seed 0).
    return_dataset : bool, default=False
        Return a :class:`~ltrboost.dataset.RankingDataset` (via
        :func:`~ltrboost.dataset.make_dataset`) instead of arrays.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Dtype of ``X``.
    return_signal : bool, default=False
        Also return the noiseless relevance ``f + o_q`` (float64, one per document), the
        quantity the grades are cut from; used by tests to check that labels follow it.
    first_qid : int, default=0
        The first query's id (an integer >= 0): the queries are numbered
        ``first_qid, first_qid + 1, ...``.  Only the ids change (the same seed gives the
        same documents and grades).  Give a second generated set, e.g. a validation
        set, ids of its own (``first_qid=n_queries`` of the first): two sets both
        numbered from 0 share ids, which ``ltrboost.train`` and ``Ranker.fit`` take
        for the same queries (:class:`~ltrboost.io.letor.SharedQueriesWarning`).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype=``dtype``
    y : ndarray of shape (n_samples,), dtype=float64
        Grades in ``0..max_label``.
    qid : ndarray of shape (n_samples,), dtype=int64
        Query id per document, ``first_qid..first_qid+n_queries-1`` (``0..n_queries-1``
        by default); each query's documents are contiguous.

    or ``dataset`` (a RankingDataset) when ``return_dataset=True``; with
    ``return_signal=True`` the signal is appended: ``(X, y, qid, signal)`` or
    ``(dataset, signal)``.
    """
    rng = _rng(random_state)
    n_queries = _check_int("n_queries", n_queries, 1)
    n_features = _check_int("n_features", n_features, 1)
    max_label = _check_int("max_label", max_label, 1)
    if max_label > _MAX_LABEL:  # the default skew's tail was built one grade at a time
        raise ValueError(
            f"max_label={max_label} is larger than {_MAX_LABEL}, the most grades a "
            "generated dataset may have"
        )
    probs = _label_probabilities(label_distribution, max_label)
    size = _docs_per_query(docs_per_query)
    drawn = isinstance(size, tuple)
    lo, hi = size if isinstance(size, tuple) else (size, size)
    # every argument is checked before the first draw: a refused call leaves a caller's
    # Generator as it was (the same call, corrected, then gives the data it would have)
    _check_recipe(dtype, noise, missing_rate, n_informative)
    _check_feature_kinds(feature_kinds, n_features)
    first_qid = _check_first_qid(first_qid, n_queries)
    # the sizes are summed in int64: a wrapped-around sum made np.repeat write past its
    # buffer (a segfault); no memory holds 2**62 values anyway
    if n_queries * hi * n_features > _MAX_VALUES:
        raise ValueError(
            f"n_queries={n_queries} x docs_per_query={docs_per_query!r} x "
            f"n_features={n_features} can reach {n_queries * hi * n_features} feature "
            "values, more than 2**62"
        )
    if drawn:  # a (k, k) pair draws too: the same data as before
        sizes = rng.integers(lo, hi, endpoint=True, size=n_queries).astype(np.int64)
    else:
        sizes = np.full(n_queries, lo, dtype=np.int64)
    kinds = _feature_kinds(feature_kinds, n_features, rng)
    X, y, qid, signal = _generate(
        sizes,
        kinds,
        n_informative=n_informative,
        probs=probs,
        noise=noise,
        missing_rate=missing_rate,
        rng=rng,
        dtype=dtype,
    )
    qid += first_qid
    out: tuple[Any, ...]
    if return_dataset:
        out = (make_dataset(X, y, qid=qid),)
    else:
        out = (X, y, qid)
    if return_signal:
        out = (*out, signal)
    return out[0] if len(out) == 1 else out


def make_ranking_mslr_like(
    n_samples: int,
    docs_per_query: int | tuple[int, int] = 120,
    random_state: int | np.random.Generator | None = None,
    *,
    first_qid: int = 0,
) -> tuple[NDArray[np.float32], NDArray[np.float64], NDArray[np.int64]]:
    """An MSLR-WEB10K-shaped dataset: 136 float32 features, ~120 documents per query.

    Feature mix like MSLR's: 60 sparse counts (term frequencies, stream lengths), 56
    Gaussian scores (BM25/LMIR-like, half with per-query shifts), 15 uniform ratios and
    5 query-level columns (IDF-like); 40 informative document features; MSLR's grade
    skew; noise 0.5; no missing values.  About 1.1 GB for 2 million documents (X
    float32) and a few seconds to generate them.

    Parameters
    ----------
    n_samples : int
        Exact number of documents (>= 1); the last query is truncated to fit.
    docs_per_query : int or (int, int), default=120
        Mean query size: sizes are uniform integers in ``[k, 2 m - k]``, ``k = max(1,
        m // 6)`` (20..220 for 120; 1..1 for 1), or in the inclusive ``(min, max)``
        range given.
    random_state : int, numpy.random.Generator or None, default=None
        Seed or generator, as in :func:`make_ranking` (None: unseeded).
    first_qid : int, default=0
        The first query's id, as in :func:`make_ranking` (ids of their own for a second
        generated set).

    Returns
    -------
    X : ndarray of shape (n_samples, 136), dtype=float32
    y : ndarray of shape (n_samples,), dtype=float64
    qid : ndarray of shape (n_samples,), dtype=int64, contiguous queries from ``first_qid``
    """
    rng = _rng(random_state)
    n_samples = _check_int("n_samples", n_samples, 1)
    # at most n_samples queries: checked before the first draw
    first_qid = _check_first_qid(first_qid, n_samples)
    size = _docs_per_query(docs_per_query)
    if isinstance(size, tuple):
        lo, hi = size
    else:
        mean = size
        lo = max(1, mean // 6)
        hi = 2 * mean - lo
    if hi > _MAX_VALUES:  # NumPy draws int64 sizes ('high is out of bounds' before)
        raise ValueError(
            f"docs_per_query={docs_per_query!r} is too large: queries of up to {hi} "
            "documents, more than 2**62"
        )
    n_draw = n_samples // max(1, (lo + hi) // 2) + 16
    # a size above n_samples is cut to it (the one query then holds every document, as
    # it would anyway), so that the running sums below cannot overflow int64 (their
    # wrap-around made np.repeat write past its buffer: a segfault)
    sizes = rng.integers(lo, hi, endpoint=True, size=n_draw).astype(np.int64)
    np.minimum(sizes, n_samples, out=sizes)
    while sizes.sum() < n_samples:  # unlucky draw: add queries until it covers
        more = rng.integers(lo, hi, endpoint=True, size=n_draw).astype(np.int64)
        np.minimum(more, n_samples, out=more)
        sizes = np.concatenate([sizes, more])
    ends = np.cumsum(sizes)
    n_queries = int(np.searchsorted(ends, n_samples)) + 1
    sizes = sizes[:n_queries]
    sizes[-1] -= int(ends[n_queries - 1]) - n_samples
    # grouped like MSLR's columns (count blocks, ratios, IDF, scores); contiguous kinds
    # also let the generator write whole slices
    kinds = ["count"] * 60 + ["uniform"] * 15 + ["query"] * 5 + ["gaussian"] * 56
    X, y, qid, _ = _generate(
        sizes,
        kinds,
        n_informative=40,
        probs=np.asarray(MSLR_LABEL_DISTRIBUTION),
        noise=0.5,
        missing_rate=0.0,
        rng=rng,
        dtype=np.float32,
    )
    qid += first_qid
    return X, y, qid


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def _rng(random_state: Any) -> np.random.Generator:
    """``np.random.default_rng(random_state)``, its refusal naming the parameter."""
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError) as e:  # 'expected non-negative integer' named nothing
        raise ValueError(
            f"random_state={random_state!r} must be None, an integer >= 0 or a "
            f"numpy.random.Generator ({e})"
        ) from None


def _docs_per_query(value: Any) -> int | tuple[int, int]:
    """``docs_per_query`` checked: a count >= 1, or an inclusive ``(min, max)`` pair
    (a sequence or a 1-d NumPy array of two integers, ``1 <= min <= max``)."""
    if isinstance(value, np.ndarray):  # 'must be an integer >= 1' for a NumPy pair
        if value.ndim > 1:
            raise ValueError(
                f"docs_per_query of shape {value.shape} must be an int or a (min, max) pair"
            )
        value = value.item() if value.ndim == 0 else tuple(value.tolist())
    if isinstance(value, Sequence) and not isinstance(value, str):
        if len(value) != 2:
            raise ValueError(f"docs_per_query={value!r} must be an int or a (min, max) pair")
        lo = _check_int("docs_per_query[0]", value[0], 1)
        return lo, _check_int("docs_per_query[1]", value[1], lo)
    return _check_int("docs_per_query", value, 1)


def _check_recipe(
    dtype: DTypeLike, noise: Any, missing_rate: Any, n_informative: Any
) -> tuple[np.dtype[Any], float, float]:
    """``dtype``, ``noise`` and ``missing_rate`` checked (and normalised), and
    ``n_informative`` (None or an integer >= 1)."""
    try:
        dtype = np.dtype(dtype)
    except TypeError as e:  # "data type 'banana' not understood" named nothing
        raise ValueError(f"dtype={dtype!r} must be float32 or float64 ({e})") from None
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype={dtype} must be float32 or float64")
    noise = _check_real("noise", noise)
    missing_rate = _check_real("missing_rate", missing_rate)
    if not (math.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise={noise} must be finite and >= 0")
    if not 0.0 <= missing_rate < 1.0:
        raise ValueError(f"missing_rate={missing_rate} must be in [0, 1)")
    if n_informative is not None:
        _check_int("n_informative", n_informative, 1)
    return dtype, noise, missing_rate


def _check_real(name: str, value: Any) -> float:
    """A finite real number (not a bool, a string or None), as a float."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}={value!r} must be a real number")
    try:
        return float(value)
    except OverflowError:  # an int beyond float64 (10**400)
        raise ValueError(f"{name}={value!r:.40} must be finite (a float64)") from None


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")
    if value < low:
        raise ValueError(f"{name}={value} should not be smaller than {low}")
    return int(value)


def _check_first_qid(first_qid: Any, n_queries: int) -> int:
    """``first_qid`` checked: an integer >= 0 whose last query's id (``first_qid +
    n_queries - 1``) fits in int64."""
    if isinstance(first_qid, bool | np.bool_) or not isinstance(first_qid, int | np.integer):
        raise ValueError(f"first_qid={first_qid!r} must be an integer >= 0")
    first_qid = int(first_qid)
    if first_qid < 0:
        raise ValueError(f"first_qid={first_qid} must be an integer >= 0")
    if first_qid > np.iinfo(np.int64).max - (n_queries - 1):
        raise ValueError(
            f"first_qid={first_qid} is too large: ids up to first_qid + {n_queries - 1} "
            "would not fit in int64"
        )
    return first_qid


def _label_probabilities(
    label_distribution: ArrayLike | str | None, max_label: int
) -> NDArray[np.float64]:
    """Grade frequencies of length max_label + 1, normalised."""
    if label_distribution is None or (
        isinstance(label_distribution, str) and label_distribution == "mslr"
    ):
        p = list(MSLR_LABEL_DISTRIBUTION)
        if max_label < 4:  # merge the top grades into max_label
            p = [*p[:max_label], sum(p[max_label:])]
        while len(p) < max_label + 1:  # halve the tail for extra grades
            p[-1] /= 2.0
            p.append(p[-1])
        return np.asarray(p, dtype=np.float64) / sum(p)
    if isinstance(label_distribution, str):
        if label_distribution == "uniform":
            return np.full(max_label + 1, 1.0 / (max_label + 1))
        raise ValueError(
            f"label_distribution={label_distribution!r} is not 'mslr', 'uniform' or a "
            "sequence of grade frequencies"
        )
    try:
        p = np.asarray(label_distribution, dtype=np.float64)
    except (TypeError, ValueError) as e:  # 'could not convert string to float' alone
        raise ValueError(
            f"label_distribution={label_distribution!r} is not 'mslr', 'uniform' or a "
            f"sequence of grade frequencies ({e})"
        ) from None
    if p.ndim != 1:  # was told it 'has 2 entries but max_label=1 needs 2'
        raise ValueError(
            f"label_distribution of shape {p.shape} must be one-dimensional: one "
            "frequency per grade"
        )
    if p.shape[0] != max_label + 1:
        # 'pass max_label=-1 to match' for an empty one: max_label must be >= 1
        hint = f"pass max_label={p.size - 1} to match" if p.size >= 2 else "at least 2"
        raise ValueError(
            f"label_distribution has {p.size} entries but max_label={max_label} needs "
            f"{max_label + 1} (one per grade); {hint}"
        )
    with np.errstate(over="ignore"):
        total = p.sum()
    if not np.all(np.isfinite(p)) or np.any(p < 0) or total <= 0:
        raise ValueError(
            f"label_distribution={p.tolist()} must be non-negative with a positive sum"
        )
    if not np.isfinite(total):  # (1e308, 1e308, ...): p / inf gave all zeros, which
        p = p / p.max()  # made every grade max_label
    return p / p.sum()


def _check_feature_kinds(feature_kinds: str | Sequence[str], n_features: int) -> list[str] | None:
    """The kind of each column for a sequence; None for a (checked) preset's name."""
    if isinstance(feature_kinds, str):
        if feature_kinds not in ("mixed", "continuous"):
            raise ValueError(
                f"feature_kinds={feature_kinds!r} is not 'mixed', 'continuous' or a "
                f"sequence of kinds from {FEATURE_KINDS}"
            )
        return None
    if not isinstance(feature_kinds, Sequence | np.ndarray):  # 'not iterable' before
        raise ValueError(
            f"feature_kinds={feature_kinds!r} is not 'mixed', 'continuous' or a "
            f"sequence of kinds from {FEATURE_KINDS}"
        )
    kinds = list(feature_kinds)
    if len(kinds) != n_features:
        raise ValueError(f"feature_kinds has {len(kinds)} entries but n_features={n_features}")
    for j, kind in enumerate(kinds):
        if kind not in FEATURE_KINDS:
            raise ValueError(f"feature_kinds[{j}]={kind!r} is not one of {FEATURE_KINDS}")
    if all(kind == "query" for kind in kinds):
        raise ValueError("feature_kinds needs at least one document-level feature")
    return kinds


def _feature_kinds(
    feature_kinds: str | Sequence[str], n_features: int, rng: np.random.Generator
) -> list[str]:
    kinds = _check_feature_kinds(feature_kinds, n_features)
    if kinds is not None:
        return kinds
    # a preset: its counts of each kind, in an order drawn from rng
    if feature_kinds == "continuous":
        n_uniform, n_count, n_query = round(0.3 * n_features), 0, 0
    else:
        n_query = min(8, n_features // 10 if n_features >= 10 else int(n_features >= 5))
        n_count = round(0.3 * n_features)
        n_uniform = round(0.2 * n_features)
    n_gauss = n_features - n_query - n_count - n_uniform
    kinds = (
        ["gaussian"] * n_gauss + ["uniform"] * n_uniform + ["count"] * n_count + ["query"] * n_query
    )
    return [kinds[j] for j in rng.permutation(n_features)]


def _generate(
    sizes: NDArray[np.int64],
    kinds: Sequence[str],
    *,
    n_informative: int | None,
    probs: NDArray[np.float64],
    noise: float,
    missing_rate: float,
    rng: np.random.Generator,
    dtype: DTypeLike,
) -> tuple[NDArray[np.floating], NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """The generator proper (see the module docstring for the recipe).

    Rows are produced in blocks of ``_BLOCK_ROWS`` into buffers allocated once, and each
    feature kind is written straight into ``X`` (a slice when its columns are
    contiguous, as in the MSLR preset), so the only large allocation is ``X`` itself.
    """
    dtype, noise, missing_rate = _check_recipe(dtype, noise, missing_rate, n_informative)

    n_features = len(kinds)
    n_queries = sizes.shape[0]
    n_samples = int(sizes.sum())
    kinds_arr = np.asarray(kinds)
    gauss_cols = np.flatnonzero(kinds_arr == "gaussian")
    count_cols = np.flatnonzero(kinds_arr == "count")
    unif_cols = np.flatnonzero(kinds_arr == "uniform")
    query_cols = np.flatnonzero(kinds_arr == "query")
    n_g, n_c, n_u, n_qf = (
        gauss_cols.size,
        count_cols.size,
        unif_cols.size,
        query_cols.size,
    )
    n_doc = n_g + n_c + n_u
    if n_doc == 0:
        raise ValueError("at least one document-level feature is needed")
    if n_informative is None:
        n_informative = math.ceil(n_doc / 2)
    n_inf = min(_check_int("n_informative", n_informative, 1), n_doc)

    # -- feature parameters (per column) ----------------------------------------------
    # Gaussian and count columns share a per-document factor (correlation rho); a count
    # column's latent is a unit-variance logistic variable (cheaper to draw than a
    # normal, and its log-logistic tail is as heavy as real term counts).
    g_rho = rng.uniform(0.0, 0.6, size=n_g).astype(np.float32)
    c_rho = rng.uniform(0.0, 0.6, size=n_c).astype(np.float32)
    g_mu = rng.normal(0.0, 3.0, size=n_g).astype(np.float32)
    g_sigma = rng.uniform(0.5, 5.0, size=n_g).astype(np.float32)
    g_beta = np.where(rng.random(n_g) < 0.5, 0.0, 0.5).astype(np.float32)
    c_loc = rng.uniform(-0.5, 1.0, size=n_c).astype(np.float32)
    c_scale = rng.uniform(0.8, 2.0, size=n_c).astype(np.float32)
    u_lo = rng.uniform(-1.0, 1.0, size=n_u).astype(np.float32)
    u_width = rng.uniform(0.5, 10.0, size=n_u).astype(np.float32)

    # -- query level -------------------------------------------------------------------
    qidx = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
    z_query = rng.standard_normal((n_queries, max(n_qf, 1)))
    q_shift = rng.standard_normal(n_queries).astype(np.float32)
    q_values = np.empty((n_queries, n_qf), dtype=dtype)
    for j in range(n_qf):
        if j % 2 == 0:  # integer, e.g. query length 1..
            q_values[:, j] = 1.0 + np.floor(np.exp(0.7 + 0.5 * z_query[:, j]))
        else:  # continuous, e.g. log-frequency or IDF
            q_values[:, j] = rng.uniform(-2, 2) + rng.uniform(0.5, 3.0) * z_query[:, j]
    if n_qf > 0:
        v = rng.normal(size=n_qf)
        explained = z_query[:, :n_qf] @ (v / np.linalg.norm(v))
        noise_q = rng.standard_normal(n_queries)
        offset = _QUERY_OFFSET_SCALE * (0.7 * explained + 0.7 * noise_q)
        q_mod = 0.5 * z_query[:, 0]  # query-dependent weight of the first factor
    else:
        offset = _QUERY_OFFSET_SCALE * rng.standard_normal(n_queries)
        q_mod = np.zeros(n_queries)

    # -- relevance function over the informative factors -------------------------------
    # Factors are indexed over the document-level latents [gaussian | count | uniform].
    inf_idx = np.sort(rng.choice(n_doc, size=n_inf, replace=False))
    inf_g = inf_idx[inf_idx < n_g]
    inf_c = inf_idx[(inf_idx >= n_g) & (inf_idx < n_g + n_c)] - n_g
    inf_u = inf_idx[inf_idx >= n_g + n_c] - n_g - n_c
    a_lin = rng.uniform(0.5, 1.5, size=n_inf) * rng.choice([-1.0, 1.0], size=n_inf)
    a_lin[0] = abs(a_lin[0]) + 0.5  # at least one clearly positive direction
    n_step = math.ceil(n_inf / 3)
    step_feat = rng.choice(n_inf, size=n_step, replace=False)
    step_at = rng.uniform(-0.5, 1.0, size=n_step)
    step_h = rng.uniform(0.5, 1.5, size=n_step)
    n_pair = math.ceil(n_inf / 4) if n_inf >= 2 else 0
    pair_i = rng.integers(0, n_inf, size=n_pair)
    pair_j = (pair_i + rng.integers(1, max(n_inf, 2), size=n_pair)) % n_inf
    pair_b = rng.uniform(0.3, 0.8, size=n_pair) * rng.choice([-1.0, 1.0], size=n_pair)

    X = np.empty((n_samples, n_features), dtype=dtype)
    f = np.empty(n_samples, dtype=np.float64)
    logistic_scale = np.float32(math.sqrt(3.0) / math.pi)  # unit variance
    tiny = np.float32(2.0**-25)  # keeps uniforms strictly inside (0, 1)
    sqrt12 = math.sqrt(12.0)
    g_keep = np.sqrt(1.0 - g_rho * g_rho).astype(np.float32)
    c_keep = (logistic_scale * np.sqrt(1.0 - c_rho * c_rho)).astype(np.float32)
    n_inf_g, n_inf_gc = inf_g.size, inf_g.size + inf_c.size

    # Each block draws from its own stream, seeded from the main generator, so blocks
    # can run on several threads (NumPy releases the GIL in fills and ufuncs) and the
    # data do not depend on the thread count.  Buffers are allocated once per thread:
    # fresh pages cost a page fault each, which is most of the time on some kernels.
    starts = list(range(0, n_samples, _BLOCK_ROWS))
    block_seeds = rng.integers(0, 2**63 - 1, size=len(starts))
    rows = min(_BLOCK_ROWS, n_samples)
    local = threading.local()

    def fill_block(block: int) -> None:
        bufs = getattr(local, "bufs", None)
        if bufs is None:
            bufs = local.bufs = (
                np.empty((rows, 1), dtype=np.float32),
                np.empty((rows, n_g), dtype=np.float32),
                np.empty((rows, n_c), dtype=np.float32),
                np.empty((rows, n_c), dtype=np.float32),
                np.empty((rows, n_u), dtype=np.float32),
                np.empty((rows, n_inf), dtype=np.float64),
            )
        common_buf, G_buf, C_buf, T_buf, U_buf, F_buf = bufs
        brng = np.random.default_rng(block_seeds[block])
        a = starts[block]
        b = min(a + _BLOCK_ROWS, n_samples)
        bs = b - a
        q = qidx[a:b]
        Xb = X[a:b]
        F = F_buf[:bs]
        common = common_buf[:bs]
        brng.standard_normal(out=common, dtype=np.float32)
        if n_g:
            G = G_buf[:bs]
            brng.standard_normal(out=G, dtype=np.float32)
            G *= g_keep
            G += g_rho * common
            F[:, :n_inf_g] = G[:, inf_g]
            G += g_beta * q_shift[q][:, None]  # per-query shift of the observed value
            G *= g_sigma
            G += g_mu
            _put(Xb, gauss_cols, G)
        if n_c:
            C, T = C_buf[:bs], T_buf[:bs]
            brng.random(out=C, dtype=np.float32)
            np.maximum(C, tiny, out=C)  # log(0) guard; 1 - C >= 2^-24 already
            np.subtract(1.0, C, out=T)
            np.divide(C, T, out=C)
            np.log(C, out=C)  # standard logistic
            C *= c_keep
            C += c_rho * common
            F[:, n_inf_g:n_inf_gc] = C[:, inf_c]
            C *= c_scale
            C += c_loc
            np.clip(C, 0.0, 15.0, out=C)  # 15 keeps exp finite (tail up to ~3e6)
            np.exp(C, out=C)  # exp - 1 rather than expm1: SIMD, and exact enough
            C -= 1.0  # to floor
            np.floor(C, out=C)
            _put(Xb, count_cols, C)
        if n_u:
            U = U_buf[:bs]
            brng.random(out=U, dtype=np.float32)
            F[:, n_inf_gc:] = (U[:, inf_u] - 0.5) * sqrt12
            U *= u_width
            U += u_lo
            _put(Xb, unif_cols, U)
        if n_qf:
            Xb[:, query_cols] = q_values[q]
        fb = F @ a_lin
        fb += (F[:, step_feat] > step_at).astype(np.float64) @ step_h
        if n_pair:
            fb += (F[:, pair_i] * F[:, pair_j]) @ pair_b
        fb += q_mod[q] * F[:, 0]
        f[a:b] = fb
        if missing_rate > 0.0:
            Xb[brng.random((bs, n_features), dtype=np.float32) < missing_rate] = np.nan

    from ltrboost._warmup import _available_cpus

    n_workers = min(len(starts), _MAX_THREADS or _available_cpus(), 8)
    if n_workers <= 1:
        for block in range(len(starts)):
            fill_block(block)
    else:
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            list(pool.map(fill_block, range(len(starts))))

    sd = float(f.std())
    f -= f.mean()
    if sd > 0:
        f /= sd
    signal = f + offset[qidx]
    latent = signal + noise * rng.standard_normal(n_samples)
    cumulative = np.cumsum(probs)[:-1]
    cuts = np.quantile(latent, np.minimum(cumulative, 1.0))
    # a top grade of probability 0 would otherwise be given to the maximum itself
    cuts[cumulative >= 1.0 - 1e-12] = np.inf
    y = np.searchsorted(cuts, latent, side="right").astype(np.float64)
    return X, y, qidx, signal


def _put(Xb: NDArray[np.floating], cols: NDArray[np.intp], values: NDArray[Any]) -> None:
    """``Xb[:, cols] = values``, as a slice copy when the columns are contiguous."""
    c0, c1 = int(cols[0]), int(cols[-1]) + 1
    if c1 - c0 == cols.size:
        Xb[:, c0:c1] = values
    else:
        Xb[:, cols] = values

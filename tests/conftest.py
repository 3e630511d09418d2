"""Shared fixtures: seeds, a NumPy generator, synthetic ranking data, shared data dir,
test-only objectives (registered only while a module that asks for them runs) and the
helpers several test files use (handed out as fixtures, so no test imports conftest).

``global_random_seed`` runs a test once per seed in ``LTRBOOST_SEED`` (sklearn's
``global_random_seed`` idea): unset -> 0, 1 and 42; ``"all"`` -> 0..99; ``"7"``,
``"1,2,3"`` or ``"0-9"`` -> those seeds.
"""

from __future__ import annotations

import itertools
import os

# Idle OpenMP worker threads sleep instead of spinning (GNU libgomp spins for a while after
# every parallel region by default). The tests launch thousands of tiny parallel kernels;
# on a busy machine the spinning threads cost more CPU than the tests themselves (e.g. the
# QBRank finite-difference tests: 7.6 s CPU spinning vs 2.3 s passive). Results are the
# same either way; set OMP_WAIT_POLICY yourself to override. Must precede the first
# parallel kernel launch (libgomp reads it when Numba loads it).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# The CLI's first-run background compilation (ltrboost._warmup) would start a second
# process from every in-process CLI test that compiles; tests/test_warmup.py turns it on.
os.environ.setdefault("LTRBOOST_BACKGROUND_COMPILE", "0")
import signal

# A test run started in the background by a non-interactive shell (`pytest ... &`) has
# SIGINT ignored, and every child process inherits SIG_IGN: the tests that interrupt a
# CLI run with SIGINT would see it finish instead.  Take Python's own handler back here,
# as a foreground run has it (an exec resets a handled signal to its default).
if hasattr(signal, "SIGINT") and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
# Likewise SIGHUP under `nohup pytest ...`: ignored, and inherited so by the CLI
# processes that the SIGHUP tests end with it.
if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ltrboost.datasets import make_ranking
from ltrboost.objectives.base import Objective, PairTerms
from ltrboost.objectives.registry import register, unregister


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``@pytest.mark.seed_per_case(SEEDS, name=values, ...)``: parametrize ``seed`` and the
    named arguments with every combination of the values once, each combination under one
    seed taken in turn, instead of every combination under every seed.

    For kernel-vs-reference grids whose seeds only redraw the same kind of data: all seeds
    and all combinations still run, in a third (for three seeds) of the cases. Arguments
    that select a different data structure belong in the combinations, not in the seed.
    """
    mark = metafunc.definition.get_closest_marker("seed_per_case")
    if mark is None:
        return
    (seeds,) = mark.args
    seeds = list(seeds)
    names = list(mark.kwargs)
    cases = []
    for i, combo in enumerate(itertools.product(*mark.kwargs.values())):
        # i + i // n, not i: the seed must not follow the innermost axis when its length
        # is a multiple of the number of seeds
        cases.append((seeds[(i + i // len(seeds)) % len(seeds)], *combo))
    metafunc.parametrize(["seed", *names], cases)


def _seeds_from_env() -> list[int]:
    spec = os.environ.get("LTRBOOST_SEED", "").strip()
    if not spec:
        return [0, 1, 42]
    if spec == "all":
        return list(range(100))
    if "-" in spec:
        lo, hi = (int(part) for part in spec.split("-", 1))
        return list(range(lo, hi + 1))
    return [int(part) for part in spec.split(",")]


@pytest.fixture(params=_seeds_from_env(), ids=lambda seed: f"seed{seed}")
def global_random_seed(request: pytest.FixtureRequest) -> int:
    """A seed; tests using it run once per seed (see the module docstring)."""
    return request.param


@pytest.fixture
def rng(global_random_seed: int) -> np.random.Generator:
    """A fresh ``numpy.random.Generator`` seeded with ``global_random_seed``."""
    return np.random.default_rng(global_random_seed)


@pytest.fixture
def make_ranking_data() -> Callable[..., Any]:
    """Factory over :func:`ltrboost.datasets.make_ranking` with small test defaults.

    ``make_ranking_data(n_queries=10, docs_per_query=8, n_features=5, random_state=0,
    **kwargs)``; pass ``return_dataset=True`` for a RankingDataset.
    """

    def _make(
        n_queries: int = 10,
        docs_per_query: int | tuple[int, int] = 8,
        n_features: int = 5,
        *,
        random_state: int | np.random.Generator | None = 0,
        **kwargs: Any,
    ) -> Any:
        return make_ranking(
            n_queries,
            docs_per_query,
            n_features,
            random_state=random_state,
            **kwargs,
        )

    return _make


@pytest.fixture
def shared_data_dir() -> Path:
    """``<repo>/../shared/data``; skips the test when it is absent."""
    path = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip("../shared/data not available")
    return path


# ====================================================================== test objectives


class _TestLeastSquares(Objective):
    """L = sum (s - y)^2; g = 2 (s - y), h = 2 (the MART objective, test-only)."""

    name = "_test_ls"
    hessian_is_constant = True

    def gradient_hessian(self, scores, data, gradients_out, hessians_out, iteration=0):
        gradients_out[:] = 2.0 * (scores - data.y)
        hessians_out[:] = 2.0

    def loss(self, scores, data):
        return float(np.sum((scores - data.y) ** 2))


def all_label_pairs(data: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (i, j) in a query with y_i > y_j: global doc indices and per-query offsets."""
    di, dj, offs = [], [], [0]
    y = data.y
    for q in range(data.n_queries):
        lo, hi = data.query_offsets[q], data.query_offsets[q + 1]
        yi = y[lo:hi]
        i, j = np.nonzero(yi[:, None] > yi[None, :])
        di.append(i + lo)
        dj.append(j + lo)
        offs.append(offs[-1] + i.shape[0])
    return (
        np.concatenate(di).astype(np.int32),
        np.concatenate(dj).astype(np.int32),
        np.array(offs, dtype=np.int64),
    )


class _TestRankNet(Objective):
    """RankNet over all label pairs, sigma = 1, written plainly (test-only):
    C = log(1 + exp(-(s_i - s_j))), rho = p (1 - p), p = 1 / (1 + exp(s_i - s_j))."""

    name = "_test_ranknet"
    is_pairwise = True

    def _terms(self, scores, data):
        di, dj, offs = all_label_pairs(data)
        p = 1.0 / (1.0 + np.exp(scores[di] - scores[dj]))
        return di, dj, offs, p, p * (1.0 - p)

    def gradient_hessian(self, scores, data, gradients_out, hessians_out, iteration=0):
        di, dj, _, p, rho = self._terms(scores, data)
        g = np.zeros(data.n_samples)
        h = np.full(data.n_samples, 0.1)  # keeps one-document leaves finite
        np.add.at(g, di, -p)
        np.add.at(g, dj, p)
        np.add.at(h, di, rho)
        np.add.at(h, dj, rho)
        gradients_out[:] = g
        hessians_out[:] = h

    def pair_terms(self, scores, data, iteration=0):
        di, dj, offs, _, rho = self._terms(scores, data)
        return PairTerms(offs, di, dj, rho)


TEST_OBJECTIVES = (_TestLeastSquares, _TestRankNet)


@pytest.fixture(scope="module")
def test_objectives_registered() -> Iterator[None]:
    """Register ``_test_ls`` and ``_test_ranknet`` for the requesting module only.

    Registering at import would make them visible to every module collected later
    (tests parametrized over ``available_objectives()`` would depend on collection
    order); module scope lets module-scoped fixtures train with them.
    """
    for cls in TEST_OBJECTIVES:
        register(cls)
    try:
        yield
    finally:
        for cls in TEST_OBJECTIVES:
            unregister(cls.name)


@pytest.fixture(name="all_label_pairs")
def _all_label_pairs_fixture() -> Callable[[Any], tuple[np.ndarray, ...]]:
    """:func:`all_label_pairs` (every labelled pair per query)."""
    return all_label_pairs


# ====================================================================== shared helpers


def _force_kernel_path(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    import ltrboost.histogram
    import ltrboost.splitting
    import ltrboost.tree

    big = 2**62 if path == "serial" else 0
    monkeypatch.setattr(ltrboost.histogram, "PARALLEL_MIN_WORK", big)
    monkeypatch.setattr(ltrboost.histogram, "SERIAL_SUBTRACT_WORK", big)
    monkeypatch.setattr(ltrboost.splitting, "SERIAL_SPLIT_WORK", big)
    monkeypatch.setattr(ltrboost.splitting, "SERIAL_PARTITION_ROWS", big)
    monkeypatch.setattr(ltrboost.tree, "SERIAL_PREDICT_ROWS", big)


@pytest.fixture
def force_kernel_path() -> Callable[[pytest.MonkeyPatch, str], None]:
    """``force_kernel_path(monkeypatch, "serial" | "parallel")`` makes the engine use its
    serial kernel bodies or its parallel drivers whatever the problem size (normally
    chosen by size thresholds); pass a ``monkeypatch.context()`` to scope it."""
    return _force_kernel_path


def _random_ranking(
    seed: int,
    n_queries: int = 60,
    score_levels: int | None = None,
    n_grades: int = 5,
    relevant_fraction: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = rng.choice([1, 1, 2, 3, 5, 8, 16, 17, 33, 40, 100], size=n_queries)
    query_offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    n = int(query_offsets[-1])
    if relevant_fraction is None:
        y = rng.integers(0, n_grades, n).astype(np.float64)
    else:
        y = (rng.random(n) < relevant_fraction) * rng.integers(1, n_grades, n).astype(np.float64)
    y[query_offsets[0] : query_offsets[1]] = 2.0  # all labels equal
    y[query_offsets[1] : query_offsets[2]] = 0.0  # nothing relevant
    if score_levels is None:
        scores = rng.normal(size=n)
    else:
        scores = rng.integers(0, score_levels, n).astype(np.float64)
    return scores, y, query_offsets


@pytest.fixture
def random_ranking() -> Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``random_ranking(seed, n_queries=60, score_levels=None, n_grades=5,
    relevant_fraction=None) -> (scores, y, query_offsets)`` for the metric tests.

    Queries of 1..100 documents; the first has all labels equal (2), the second none
    relevant (0). Labels are uniform in ``0..n_grades-1``, or with ``relevant_fraction``
    mostly 0 (each document relevant with that probability, grade ``1..n_grades-1``), so
    the first relevant document is often deep. ``score_levels`` draws integer scores
    from that many values (many ties); ``None`` draws normal scores.
    """
    return _random_ranking


def _write_letor_folds(
    root: Path,
    n_folds: int,
    docs_per_query: int,
    n_features: int,
    single_grade: dict[str, tuple[int, ...]] | None = None,
) -> Path:
    from ltrboost.io.letor import dump_svmlight

    for k in range(1, n_folds + 1):
        d = root / f"Fold{k}"
        d.mkdir(parents=True)
        for name, seed in (("train.txt", k), ("vali.txt", 10 + k), ("test.txt", 20 + k)):
            X, y, q = make_ranking(
                n_queries=12,
                docs_per_query=docs_per_query,
                n_features=n_features,
                max_label=2,
                random_state=seed,
            )
            for i, qq in enumerate((single_grade or {}).get(name, ())):
                y[q == qq] = i % 2  # grade 0 or 1 for every document of the query
            dump_svmlight(d / name, X, y, q)
    return root


@pytest.fixture
def write_letor_folds() -> Callable[..., Path]:
    """``write_letor_folds(root, n_folds, docs_per_query, n_features, single_grade=None)``
    writes ``root/FoldK/{train,vali,test}.txt`` (12 queries each, grades 0-2, seeded by
    fold and file) and returns ``root``; ``single_grade`` maps a file name to query ids
    whose documents all get one grade (0 or 1 in turn)."""
    return _write_letor_folds


@pytest.fixture(scope="module")
def frames():
    """Training and validation DataFrames (columns a..e) with labels and query ids, for
    the scikit-learn tests that take columns by name; the validation queries are others
    (ids 30..49), as a validation set's should be (SharedQueriesWarning)."""
    import pandas as pd

    from ltrboost.datasets import make_ranking

    cols = ["a", "b", "c", "d", "e"]
    X, y, qid = make_ranking(n_queries=30, docs_per_query=10, n_features=5, random_state=0)[:3]
    Xv, yv, qv = make_ranking(
        n_queries=20, docs_per_query=10, n_features=5, random_state=1, first_qid=30
    )[:3]  # queries of its own (ids 30..49): not the training set's 0..29
    return pd.DataFrame(X, columns=cols), y, qid, pd.DataFrame(Xv, columns=cols), yv, qv


@pytest.fixture(scope="module")
def client():
    """A Dask client on an in-process cluster of 2 single-thread workers, one per test
    module (the Dask tests skip where ``distributed`` is not installed)."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()

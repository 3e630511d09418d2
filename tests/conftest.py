"""Shared fixtures: seeds, a NumPy generator, synthetic ranking data, shared data dir.

``global_random_seed`` runs a test once per seed in ``LTRBOOST_SEED`` (sklearn's
``global_random_seed`` idea): unset -> 0, 1 and 42; ``"all"`` -> 0..99; ``"7"``,
``"1,2,3"`` or ``"0-9"`` -> those seeds.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ltrboost.datasets import make_ranking


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

"""Kernels shared by several metrics against their NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost.metrics._dcg import _inverse_max_dcg_reference, inverse_max_dcg
from ltrboost.metrics.registry import (
    _mean,
    _weighted_mean,
    _weighted_mean_reference,
)


@pytest.mark.parametrize("k", [0, 1, 3, 40])
def test_inverse_max_dcg_matches_reference(k):
    rng = np.random.default_rng(k)
    sizes = [0, 1, 5, 17, 40, 3]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    gains = np.exp2(rng.integers(0, 5, offsets[-1]).astype(np.float64)) - 1.0
    gains[offsets[2] : offsets[3]] = 0.0  # no positive gain -> 0
    got = inverse_max_dcg(gains, offsets, k)
    np.testing.assert_allclose(got, _inverse_max_dcg_reference(gains, offsets, k))
    assert got[2] == 0.0


def test_means_match_reference():
    rng = np.random.default_rng(0)
    v = rng.random(37)
    w = rng.random(37)
    assert _mean(v) == pytest.approx(_weighted_mean_reference(v), rel=1e-13)
    assert _weighted_mean(v, w) == pytest.approx(_weighted_mean_reference(v, w), rel=1e-13)

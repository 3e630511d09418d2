"""``random_strength`` (rsadv): adversarial pass 9.

A huge ``random_strength`` (1e308, finite, accepted) made the noise's scale overflow:
``split_noise_sigma`` turned an infinite scale into 0 (no noise at all, the opposite
of what was asked), and a finite scale near float64's largest made ``sigma * z`` an
infinity, so that every candidate drawn above about one standard deviation tied at
``+inf`` and the first feature won.  The scale is now held at ``2**1020`` (``|z| < 8``
keeps every noisy score finite): the split is then the noise's alone, as for any
other scale that dwarfs the scores.
"""

from __future__ import annotations

import math

import numpy as np

import ltrboost
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.splitting import (
    SplitNoise,
    SplitParams,
    alloc_split_buffers,
    find_node_split,
    split_noise_sigma,
)

FAST = {"n_estimators": 8, "max_leaf_nodes": 6, "min_samples_leaf": 3, "n_threads": 1}


def _features(booster) -> list[list[int]]:
    return [t["feature_idx"].tolist() for t in booster.trees]


def test_a_huge_random_strength_is_noise_not_none():
    # scale sqrt(4 / 1) = 2: 1e308 * 2 overflowed to inf, returned as 0 (no noise)
    s = split_noise_sigma(1e308, 4.0, 1.0, 100, 0, 0.1)
    assert math.isfinite(s)
    assert s > 0
    assert s >= split_noise_sigma(1e300, 4.0, 1.0, 100, 0, 0.1)
    # a finite scale near float64's largest: every noisy score stays finite
    assert s * 8.0 < np.finfo(np.float64).max
    big = split_noise_sigma(1e308, 1.69, 1.0, 100, 0, 0.1)  # 1.3e308 before
    assert big * 8.0 < np.finfo(np.float64).max
    # an overflowing product whose true value is small is that value, not the cap
    mid = split_noise_sigma(1e308, 4.0, 1.0, 100, 100, 0.1)  # multiplier ~0.0045
    assert 1e305 < mid < 1e307
    # an ordinary scale is untouched (the same float as before)
    assert split_noise_sigma(2.0, 50.0, 20.0, 100, 3, 0.1) == 2.0 * math.sqrt(50.0 / 20.0) * (
        1.0 / (1.0 + math.exp(3 * 0.1 - math.log(100)))
    )


def test_the_kernel_keeps_noisy_scores_finite_under_the_largest_scale():
    # the search by keys sqrt(Q) + sigma * z: at sigma = 1.3e308 every z above ~1.4
    # gave +inf, and the first such feature won; now the largest z wins, as under
    # any scale that dwarfs sqrt(Q) (1e300 here)
    rng = np.random.default_rng(3)
    n_features, n_bins, n = 6, 10, 300
    hist = np.zeros((n_features, n_bins + 1, 3))
    g = rng.normal(size=n)
    h = rng.uniform(0.5, 1.0, size=n)
    for f in range(n_features):
        b = rng.integers(0, n_bins, size=n)
        np.add.at(hist[f, :, 0], b, g)
        np.add.at(hist[f, :, 1], b, h)
        np.add.at(hist[f, :, 2], b, 1.0)
    nb = np.full(n_features, n_bins, dtype=np.int32)
    feats = np.arange(n_features, dtype=np.int32)
    params = SplitParams(1, 1e-3, 0.0, 0.0, 0)
    args = (hist, feats, nb, n_bins, float(g.sum()), float(h.sum()), n, params)
    for node in range(40):
        huge = find_node_split(
            *args, buffers=alloc_split_buffers(n_features), noise=SplitNoise(11, 1.3e308, node)
        )
        large = find_node_split(
            *args, buffers=alloc_split_buffers(n_features), noise=SplitNoise(11, 1e300, node)
        )
        assert huge == large, node


def test_random_strength_1e308_trains_as_a_large_one():
    # 1e10 and 1e300 already gave the same trees (the noise alone); 1e308 did not
    X, y, qid = make_ranking(n_queries=40, n_features=8, random_state=0)[:3]
    ds = make_dataset(X, y, qid=qid)
    large = ltrboost.train({**FAST, "random_strength": 1e10}, ds)
    huge = ltrboost.train({**FAST, "random_strength": 1e308}, ds)
    assert _features(huge) == _features(large)
    assert huge.to_dict()["params"]["random_strength"] == 1e308
    assert np.all(np.isfinite(huge.predict(X)))

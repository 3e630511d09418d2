"""``random_strength``'s noise streams (rs64): no two candidates of a run share a draw.

The noise of candidate (tree, node, feature, missing side, bin) is draw ``counter`` of the
tree's stream (``splitting.noise_normal``), counter ``node * 2 * n_bins * n_features +
(feature * 2 + side) * n_bins + bin`` (``_search_features_noisy``, ``_noisy_split_body``).
Two defects repeated draws in realistic-but-large models:

* the counter was hashed as 32 bits (draws use words ``2c`` and ``2c + 1``): from counter
  ``2**31`` on ((node + 1) * n_features > 2**22 at 255 bins: 700 features and 4095
  leaves, 10_000 features and 255) each draw reused the two uniforms of a lower counter,
  swapped or, in some blocks of ``2**31`` counters, in order (the very same draw);
* each tree's stream was a 32-bit hash of its seed: two trees of one run share one
  (every draw the same) with probability ~ trees^2 / 2**33 (5% at 20,000 trees;
  random_state=58 already at rounds 4105 and 7375).

Every draw that was not a repeat is kept bit for bit (pinned below): counters below
``2**31`` draw as before, and a tree keeps its seed unless an earlier tree of the run
drew from its stream.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

import ltrboost
from ltrboost.booster import Training, _checked_setup, as_params
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.objectives.pair_selection import _hash32_reference
from ltrboost.splitting import noise_normal, split_noise_seed

N_BINS = 256  # max_bins=255 value bins + the missing bin: hist.shape[1]


def _counter(node: int, feature: int, side: int, b: int, n_features: int) -> int:
    """The kernel's draw counter of a candidate (``_search_features_noisy``'s stride,
    ``_noisy_split_body``'s offset)."""
    stride = 2 * N_BINS * n_features
    return node * stride + (feature * 2 + side) * N_BINS + b


def _old_uniforms(seed: int, counter: int) -> tuple[float, float]:
    """The two uniforms of a draw below counter 2**31 (every version's): the words
    ``2c`` and ``2c + 1`` of the stream, lowbias32 over 32-bit keys."""

    def h64(v: int, key: int) -> int:
        return _hash32_reference((v & 0xFFFFFFFF) ^ _hash32_reference((v >> 32) ^ key))

    stream = h64(seed, 0x85EBCA6B)
    z1 = _hash32_reference(stream ^ h64(2 * counter, 0xC2B2AE35))
    z2 = _hash32_reference(stream ^ h64(2 * counter + 1, 0xC2B2AE35))
    return (z1 + 0.5) * 2.0**-32, (z2 + 0.5) * 2.0**-32


def _box_muller(u1: float, u2: float) -> float:
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


SEEDS = (0, 12345, 2**61 + 7, split_noise_seed(58, 4105, 0))


# --- counters past 2**31 ---


@pytest.mark.parametrize("seed", SEEDS)
def test_a_counter_past_2_33_does_not_repeat_a_lower_candidates_draw(seed):
    # 10,000 features, 1023 leaves (node ids up to 2044): node 1700's candidate
    # (feature 1234, side 0, bin 3) drew exactly what node 413's (6233, 1, 66) drew
    high = _counter(1700, 1234, 0, 3, 10_000)
    low = _counter(413, 6233, 1, 66, 10_000)
    assert (high, low) == (8_704_631_811, 2_117_751_618)
    assert noise_normal(seed, high) != noise_normal(seed, low)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_counter_past_2_31_does_not_reuse_a_lower_candidates_uniforms(seed):
    # 700 features (Yahoo! LTR), 4095 leaves: node 6000's candidate (534, 0, 3) drew
    # the uniforms of node 4073's (6, 1, 43) swapped, Box-Muller's other branch
    high = _counter(6000, 534, 0, 3, 700)
    low = _counter(4073, 6, 1, 43, 700)
    u1, u2 = _old_uniforms(seed, low)
    assert noise_normal(seed, low) == pytest.approx(_box_muller(u1, u2), rel=1e-12)
    assert noise_normal(seed, high) != pytest.approx(_box_muller(u2, u1), rel=1e-6)


def test_high_counters_draw_a_standard_normal_without_repeats():
    rng = np.random.default_rng(0)
    high = rng.integers(2**31, 2**40, size=20_000)
    z = np.array([noise_normal(99, int(c)) for c in high])
    assert abs(z.mean()) < 0.03
    assert abs(z.std() - 1.0) < 0.03
    low = np.array([noise_normal(99, int(c)) for c in high % 2**31])
    assert len(np.intersect1d(z, low)) == 0
    assert len(np.unique(z)) == len(np.unique(high))


# --- trees sharing a stream ---


def _training(random_state: int, objective: str = "lambdamart") -> Training:
    X, y, qid = make_ranking(n_queries=6, n_features=3, random_state=0)[:3]
    ds = make_dataset(X, y, qid=qid)
    params = as_params(
        {"random_strength": 1.0, "random_state": random_state, "objective": objective}
    )
    return Training(params, _checked_setup(params, ds, [], None), ds, [], 1)


def _draws(seed: int) -> list[float]:
    return [noise_normal(seed, c) for c in range(0, 5000, 7)]


def test_two_rounds_of_one_run_do_not_share_a_noise_stream():
    run = _training(58)
    first = run.noise_of(4105, 0, 1.0, 1.0)[0]
    later = run.noise_of(7375, 0, 1.0, 1.0)[0]
    assert first == split_noise_seed(58, 4105, 0)  # the first of the two keeps its draws
    assert _draws(first) != _draws(later)
    for it in (0, 1, 4104, 4106, 7374):  # the others keep theirs too
        assert run.noise_of(it, 0, 1.0, 1.0)[0] == split_noise_seed(58, it, 0)


def test_a_resumed_run_draws_the_moved_stream_as_the_uninterrupted_one():
    whole = _training(58)
    for it in range(7376):
        seed = whole.noise_of(it, 0, 1.0, 1.0)[0]
    resumed = _training(58)  # init_model of 7375 rounds: its first round is 7375
    assert resumed.noise_of(7375, 0, 1.0, 1.0)[0] == seed
    assert seed != split_noise_seed(58, 7375, 0)


def test_every_tree_of_a_long_multi_output_run_has_its_own_stream():
    from ltrboost.splitting import SplitNoiseSeeds

    # random_state=2, 3 outputs: trees (886, 0) and (3171, 2) had one stream
    seeds = SplitNoiseSeeds(2, 3)  # trees in order: round * 3 + output
    first = SplitNoiseSeeds.stream(split_noise_seed(2, 886, 0))
    assert SplitNoiseSeeds.stream(split_noise_seed(2, 3171, 2)) == first
    streams = set()
    moved = []
    for it in range(7000):
        for k in range(3):
            s = seeds(it, k)
            streams.add(SplitNoiseSeeds.stream(s))
            if s != split_noise_seed(2, it, k):
                moved.append((it, k))
    assert len(streams) == 21_000
    assert moved == [(3171, 2)]  # the later of the two; every other tree keeps its seed
    assert seeds(3171, 2) == SplitNoiseSeeds(2, 3)(3171, 2)  # asked first: the same


# --- what was not a repeat is kept bit for bit ---


@pytest.mark.parametrize(
    ("seed", "counter", "draw"),
    [
        (0, 0, "0x1.c23baa8c625e5p-3"),
        (12345, 17, "-0x1.17941236f8c39p-3"),
        (2**61 + 7, 2_117_751_618, "-0x1.37e0ab3a7665cp-1"),
        (58, 2**31 - 1, "-0x1.7fbb5535586bap+0"),
        (2**62 - 1, 123_456_789, "-0x1.8385e7f639c77p-1"),
    ],
)
def test_draws_below_2_31_are_the_earlier_versions(seed, counter, draw):
    assert noise_normal(seed, counter) == float.fromhex(draw)


FAST = {"n_estimators": 8, "max_leaf_nodes": 6, "min_samples_leaf": 3, "n_threads": 1}


# sha256 of the trees' bytes, as every version since random_strength wrote them
DIGESTS = {
    "yetirank": "001173e2e681028d6c22ec06f4678df4ef02e7ff965c123edf9f46fdc345efc9",
    "mcrank": "b28d20208e4d01bcb6eb6e1a0ff1fb8549a605f70f7397d5d964bd33ff4d5337",
    "ole": "bed16c85295681e07d09a9c0864169b4e580dff39a44591f96607ff725b70971",
}


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("yetirank", {"objective": "yetirank"}),
        ("mcrank", {"objective": "mcrank"}),  # 5 outputs: 40 trees
        ("ole", {"objective": "lambdamart", "split_criterion": "ole"}),
    ],
)
def test_noisy_models_of_earlier_versions_retrain_identically(name, extra):
    X, y, qid = make_ranking(n_queries=40, n_features=8, random_state=0)[:3]
    p = {**FAST, "random_strength": 1.0, "random_state": 7, **extra}
    b = ltrboost.train(p, make_dataset(X, y, qid=qid))
    assert hashlib.sha256(b"".join(t.tobytes() for t in b.trees)).hexdigest() == DIGESTS[name]

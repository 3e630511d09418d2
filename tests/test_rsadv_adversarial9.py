"""``random_strength`` (rsadv): adversarial pass 9.

A huge ``random_strength`` (1e308, finite, accepted) made the noise's scale overflow:
``split_noise_sigma`` turned an infinite scale into 0 (no noise at all, the opposite
of what was asked), and a finite scale near float64's largest made ``sigma * z`` an
infinity, so that every candidate drawn above about one standard deviation tied at
``+inf`` and the first feature won.  The scale is now held at ``2**1020`` (``|z| < 8``
keeps every noisy score finite): the split is then the noise's alone, as for any
other scale that dwarfs the scores.

The rest pin what the pass found holding: a noisy split keeps every limit
(``min_samples_leaf``, ``min_sum_hessian_in_leaf``, ``min_gain_to_split`` on the
noiseless gain) and the tree's drawn features (``colsample_bytree``, ``ole_top_features``);
``Ranker(init_model=)`` and ``train --resume`` continue the uninterrupted run's noise;
the CLI refuses an infinite value in one line; Dask splits as local with weights,
missing values, OLE and sampling.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

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


# --- held already (pinned): limits, sampled features, resumes, Dask, the CLI ---


def test_every_noisy_split_keeps_every_limit_and_the_drawn_features(monkeypatch):
    from ltrboost import grower, splitting

    drawn = {}
    grow = grower.TreeGrower.grow

    def spy_grow(self, g, h, sample_indices=None, feature_indices=None, pairs=None, **kw):
        drawn["feats"] = None if feature_indices is None else set(feature_indices.tolist())
        return grow(self, g, h, sample_indices, feature_indices, pairs, **kw)

    find = splitting.Splitter.find_split
    seen = []

    def spy_find(self, hist, feats, *args, noise=None, **kwargs):
        s = find(self, hist, feats, *args, noise=noise, **kwargs)
        if s is not None and noise is not None:
            seen.append((self.params, s, drawn["feats"]))
        return s

    monkeypatch.setattr(grower.TreeGrower, "grow", spy_grow)
    monkeypatch.setattr(splitting.Splitter, "find_split", spy_find)
    X, y, qid = make_ranking(n_queries=40, n_features=10, random_state=1)[:3]
    X = X.copy()
    X[np.random.default_rng(0).random(X.shape) < 0.2] = np.nan
    w = np.random.default_rng(1).uniform(0.1, 3.0, size=len(y))
    for extra in (
        {"colsample_bytree": 0.4, "min_gain_to_split": 0.5},
        {"split_criterion": "ole", "ole_top_features": 2, "colsample_bytree": 0.6},
        {"objective": "mcrank", "min_sum_hessian_in_leaf": 2.0, "max_depth": 2},
    ):
        p = {**FAST, "min_samples_leaf": 7, "random_strength": 100.0, **extra}
        ltrboost.train(p, make_dataset(X, y, qid=qid, sample_weight=w))
    assert len(seen) > 50
    for params, s, feats in seen:
        assert feats is None or s.feature_idx in feats
        assert min(s.count_left, s.count_right) >= params.min_samples_leaf
        assert min(s.sum_hessian_left, s.sum_hessian_right) >= params.min_sum_hessian_in_leaf
        assert s.gain > params.min_gain_to_split
        assert math.isfinite(s.value_left)
        assert math.isfinite(s.value_right)


def test_ranker_init_model_continues_the_uninterrupted_noise():
    X, y, qid = make_ranking(n_queries=30, n_features=6, random_state=2)[:3]
    kw = {"max_leaf_nodes": 6, "min_samples_leaf": 3, "random_strength": 1.0}
    full = ltrboost.Ranker(n_estimators=6, **kw).fit(X, y, qid=qid)
    half = ltrboost.Ranker(n_estimators=3, **kw).fit(X, y, qid=qid)
    rest = ltrboost.Ranker(n_estimators=3, **kw).fit(X, y, qid=qid, init_model=half)
    assert _features(rest.booster_) == _features(full.booster_)
    np.testing.assert_array_equal(rest.predict(X), full.predict(X))


def _letor(path, X, y, qid):
    with open(path, "w") as f:
        for row, label, q in zip(X, y, qid, strict=True):
            feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(row) if not np.isnan(v))
            f.write(f"{int(label)} qid:{int(q)} {feats}\n")


def test_cli_resume_continues_the_uninterrupted_noise(tmp_path, capsys):
    import json

    from ltrboost.cli import main

    X, y, qid = make_ranking(n_queries=30, n_features=6, random_state=0)[:3]
    X = X.copy()
    X[np.random.default_rng(1).random(X.shape) < 0.1] = np.nan
    data = tmp_path / "train.txt"
    _letor(data, X, y, qid)
    flags = ["--random-strength", "1.5", "--max-leaf-nodes", "6", "--min-samples-leaf", "3"]
    flags += ["--missing", "nan", "-q"]
    full, half, rest = (tmp_path / f"{n}.json" for n in ("full", "half", "rest"))
    assert main(["train", str(data), "-o", str(full), "--n-estimators", "6", *flags]) == 0
    assert main(["train", str(data), "-o", str(half), "--n-estimators", "3", *flags]) == 0
    resume = ["--resume", str(half)]
    assert main(["train", str(data), "-o", str(rest), "--n-estimators", "6", *resume, *flags]) == 0
    capsys.readouterr()
    assert json.loads(rest.read_text())["trees"] == json.loads(full.read_text())["trees"]


def test_cli_refuses_an_infinite_flag_in_one_line_and_takes_minus_zero(tmp_path, capsys):
    from ltrboost.cli import main

    X, y, qid = make_ranking(n_queries=20, n_features=5, random_state=0)[:3]
    data = tmp_path / "train.txt"
    _letor(data, X, y, qid)
    out = tmp_path / "m.json"
    for bad in ("inf", "1e400", "-inf"):
        try:  # 1e400 is refused by the parser (SystemExit), quoting what was typed
            rc = main(["train", str(data), "-o", str(out), "-q", f"--random-strength={bad}"])
        except SystemExit as e:
            rc = e.code
        lines = capsys.readouterr().err.strip().split("\n")
        assert rc == 2
        assert len(lines) == 1
        assert lines[0].startswith(
            ("ltrboost: error: --random-strength", "ltrboost: error: argument --random-strength")
        )
        assert bad in lines[0] or bad != "1e400"
        assert not out.exists()
    args = ["train", str(data), "-o", str(out), "-q", "--n-estimators", "2"]
    assert main([*args, "--random-strength=-0"]) == 0
    assert "random_strength" not in ltrboost.load_model(out).params  # -0.0 is the default


def test_dask_equals_local_with_weights_missing_values_ole_and_sampling(client):
    da = pytest.importorskip("dask.array")
    from ltrboost import dask as ldask

    X, y, qid = make_ranking(n_queries=30, n_features=8, random_state=4)[:3]
    X = X.copy()
    X[np.random.default_rng(1).random(X.shape) < 0.1] = np.nan
    w = np.random.default_rng(2).uniform(0.2, 2.0, len(y))
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    cut = int(starts[len(starts) // 2])

    def arr(a):
        return da.from_array(a, chunks=((cut, len(y) - cut), *((s,) for s in a.shape[1:])))

    p = {
        **FAST,
        "n_estimators": 5,
        "random_strength": 1.0,
        "split_criterion": "ole",
        "subsample": 0.7,
        "colsample_bytree": 0.6,
    }
    local = ltrboost.train(p, make_dataset(X, y, qid=qid, sample_weight=w))
    dist = ldask.train(client, p, ldask.DaskData(arr(X), arr(y), arr(qid), sample_weight=arr(w)))
    # the same splits; values up to float summation order (dask.py's docstring)
    assert _features(dist) == _features(local)
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)

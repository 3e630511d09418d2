"""``random_strength`` (rstrength): CatBoost's noise on the split scores, default off.

Default 0 keeps every model as it was (same trees, same file bytes, no noisy search);
> 0 changes the splits, reproducibly (runs, thread counts, parallel search, Dask) from
``random_state``; the noise's scale is CatBoost's ``CalcScoreStDev`` transcribed
(:func:`ltrboost.splitting.split_noise_sigma`); negative and NaN values are refused.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

import ltrboost
from ltrboost import splitting
from ltrboost.cli import main
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.params import BoosterParams
from ltrboost.splitting import (
    SplitNoise,
    SplitParams,
    alloc_split_buffers,
    find_node_split,
    split_noise_seed,
    split_noise_sigma,
)

FAST = {"n_estimators": 8, "max_leaf_nodes": 6, "min_samples_leaf": 3, "n_threads": 1}


def _data(seed=0, n_queries=40):
    X, y, qid = make_ranking(n_queries=n_queries, n_features=8, random_state=seed)[:3]
    return X, y, qid


def _fit(X, y, qid, **params):
    return ltrboost.train({**FAST, **params}, make_dataset(X, y, qid=qid))


def _doc(booster) -> str:
    return json.dumps(booster.to_dict(), sort_keys=True)


def _features(booster) -> list[list[int]]:
    return [t["feature_idx"].tolist() for t in booster.trees]


# --- default 0: today's models ---


def test_default_is_off_written_nowhere_and_never_searches_noisily(monkeypatch):
    X, y, qid = _data()

    def refuse(*args, **kwargs):
        raise AssertionError("the noisy split search ran with random_strength=0")

    monkeypatch.setattr(splitting, "_search_features_noisy", refuse)
    default = _fit(X, y, qid)
    zero = _fit(X, y, qid, random_strength=0.0)
    zero_int = _fit(X, y, qid, random_strength=0)
    assert BoosterParams().random_strength == 0.0
    assert "random_strength" not in default.to_dict()["params"]  # same bytes as before
    assert _doc(default) == _doc(zero) == _doc(zero_int)


def test_a_file_without_it_reads_as_zero_and_a_set_one_round_trips(tmp_path):
    X, y, qid = _data()
    noisy = _fit(X, y, qid, random_strength=1.0)
    assert noisy.to_dict()["params"]["random_strength"] == 1.0
    path = tmp_path / "m.json"
    noisy.save_model(path)
    back = ltrboost.load_model(path)
    assert back.params["random_strength"] == 1.0
    np.testing.assert_array_equal(back.predict(X), noisy.predict(X))
    plain = _fit(X, y, qid)
    plain.save_model(path)
    assert "random_strength" not in ltrboost.load_model(path).params


# --- > 0: other splits, reproducibly ---


def test_noise_changes_splits_but_not_the_reported_gains_rule():
    X, y, qid = _data()
    plain = _fit(X, y, qid)
    noisy = _fit(X, y, qid, random_strength=2.0)
    assert _features(plain) != _features(noisy)
    # gains reported (importances) are noiseless Newton gains: positive, finite
    for t in noisy.trees:
        inner = t["feature_idx"] >= 0
        assert np.all(np.isfinite(t["gain"][inner]))
        assert np.all(t["gain"][inner] > 0)


def test_same_model_across_runs_threads_and_the_parallel_search(monkeypatch):
    X, y, qid = _data(1, n_queries=60)
    one = _doc(_fit(X, y, qid, random_strength=1.0, n_threads=1))
    assert _doc(_fit(X, y, qid, random_strength=1.0, n_threads=1)) == one
    assert _doc(_fit(X, y, qid, random_strength=1.0, n_threads=2)) == one
    monkeypatch.setattr(splitting, "SERIAL_SPLIT_WORK", 0)  # every node searched in blocks
    assert _doc(_fit(X, y, qid, random_strength=1.0, n_threads=2)) == one


def test_the_seed_chooses_the_noise():
    X, y, qid = _data()
    a = _fit(X, y, qid, random_strength=2.0, random_state=0)
    b = _fit(X, y, qid, random_strength=2.0, random_state=1)
    assert _features(a) != _features(b)
    assert split_noise_seed(0, 1, 0) != split_noise_seed(1, 0, 0)  # not a shifted stream
    assert split_noise_seed(0, 0, 1) != split_noise_seed(0, 1, 0)


def test_resumed_training_draws_what_the_uninterrupted_run_drew():
    X, y, qid = _data()
    ds = make_dataset(X, y, qid=qid)
    full = ltrboost.train({**FAST, "random_strength": 1.0}, ds)
    half = ltrboost.train({**FAST, "random_strength": 1.0, "n_estimators": 4}, ds)
    rest = ltrboost.train({**FAST, "random_strength": 1.0}, ds, init_model=half)
    assert _features(rest) == _features(full)
    np.testing.assert_array_equal(rest.predict(X), full.predict(X))


@pytest.mark.parametrize("criterion", ["se", "ole"])
def test_other_criteria_and_objectives_train_reproducibly(criterion):
    X, y, qid = _data(2)
    p = {"objective": "yetirank", "split_criterion": criterion, "random_strength": 1.0}
    a = _fit(X, y, qid, **p)
    assert _doc(a) == _doc(_fit(X, y, qid, **{**p, "n_threads": 2}))
    assert _features(a) != _features(_fit(X, y, qid, **{**p, "random_strength": 0.0}))


def test_mcrank_outputs_get_their_own_noise():
    X, y, qid = _data(3)
    a = _fit(X, y, qid, objective="mcrank", random_strength=1.0)
    assert _doc(a) == _doc(_fit(X, y, qid, objective="mcrank", random_strength=1.0))


# --- the kernel: the noiseless search's numbers, the chosen split's gain ---


def _hist(rng, n_features=5, n_bins=12, n=200):
    """A node histogram (n_features, n_bins + missing, 3) of ``n`` documents."""
    hist = np.zeros((n_features, n_bins + 1, 3))
    g = rng.normal(size=n)
    h = rng.uniform(0.1, 1.0, size=n)
    for f in range(n_features):
        b = rng.integers(0, n_bins + 1, size=n)  # bin n_bins: missing
        np.add.at(hist[f, :, 0], b, g)
        np.add.at(hist[f, :, 1], b, h)
        np.add.at(hist[f, :, 2], b, 1.0)
    return hist, float(g.sum()), float(h.sum()), n


@pytest.mark.parametrize("code", [0, 1])
def test_vanishing_noise_chooses_the_noiseless_split(code):
    rng = np.random.default_rng(7)
    for _ in range(20):
        hist, G, H, n = _hist(rng)
        nb = np.full(hist.shape[0], hist.shape[1] - 1, dtype=np.int32)
        feats = np.arange(hist.shape[0], dtype=np.int32)
        params = SplitParams(3, 1e-3, 0.5, 0.0, code)
        args = (hist, feats, nb, hist.shape[1] - 1, G, H, n, params)
        plain = find_node_split(*args)
        tiny = find_node_split(
            *args, buffers=alloc_split_buffers(5), noise=SplitNoise(3, 1e-300, 4)
        )
        assert tiny == plain


def test_a_noisy_split_reports_its_own_noiseless_gain():
    rng = np.random.default_rng(8)
    for node in range(30):
        hist, G, H, n = _hist(rng)
        nb = np.full(hist.shape[0], hist.shape[1] - 1, dtype=np.int32)
        miss = hist.shape[1] - 1
        feats = np.arange(hist.shape[0], dtype=np.int32)
        params = SplitParams(3, 1e-3, 0.0, 0.0, 0)
        s = find_node_split(hist, feats, nb, miss, G, H, n, params, noise=SplitNoise(5, 3.0, node))
        if s is None:
            continue
        left = hist[s.feature_idx, : s.bin_idx + 1].sum(axis=0)
        if s.missing_go_to_left:
            left = left + hist[s.feature_idx, miss]
        gl, hl = left[0], left[1]
        want = gl**2 / hl + (G - gl) ** 2 / (H - hl) - G**2 / H
        assert s.gain == pytest.approx(want, rel=1e-9)
        assert s.sum_gradient_left == pytest.approx(gl, rel=1e-9, abs=1e-12)


def test_only_candidates_above_min_gain_to_split_compete():
    rng = np.random.default_rng(9)
    hist, G, H, n = _hist(rng)
    nb = np.full(hist.shape[0], hist.shape[1] - 1, dtype=np.int32)
    feats = np.arange(hist.shape[0], dtype=np.int32)
    best = find_node_split(
        hist, feats, nb, hist.shape[1] - 1, G, H, n, SplitParams(3, 1e-3, 0.0, 0.0, 0)
    )
    high = SplitParams(3, 1e-3, 0.0, best.gain * 0.999, 0)
    for node in range(20):  # huge noise: still only the splits above the limit, or none
        s = find_node_split(
            hist, feats, nb, hist.shape[1] - 1, G, H, n, high, noise=SplitNoise(1, 1e6, node)
        )
        assert s is not None
        assert s.gain > high.min_gain_to_split
    none = SplitParams(3, 1e-3, 0.0, best.gain * 2, 0)
    assert (
        find_node_split(
            hist, feats, nb, hist.shape[1] - 1, G, H, n, none, noise=SplitNoise(1, 1e6, 0)
        )
        is None
    )


def test_draws_are_standard_normal():
    z = np.array([splitting.noise_normal(12345, c) for c in range(20000)])
    assert abs(z.mean()) < 0.03
    assert abs(z.std() - 1.0) < 0.03
    assert splitting.noise_normal(12345, 17) == splitting.noise_normal(12345, 17)


# --- the scale: CatBoost's CalcScoreStDev ---


def test_sigma_is_catboosts_with_unit_hessians_and_shrinks_with_model_size():
    g = np.random.default_rng(0).normal(size=1000)
    n = g.shape[0]
    rms = math.sqrt(float(np.sum(g * g)) / n)
    s0 = split_noise_sigma(1.0, float(np.sum(g * g)), float(n), n, 0, 0.1)
    assert s0 == pytest.approx(rms * n / (n + 1.0), rel=1e-12)  # exp(0) = 1
    assert split_noise_sigma(2.0, float(np.sum(g * g)), float(n), n, 0, 0.1) == pytest.approx(
        2 * s0
    )
    sig = [
        split_noise_sigma(1.0, float(np.sum(g * g)), float(n), n, t, 0.1) for t in range(0, 200, 10)
    ]
    assert all(a > b for a, b in itertools.pairwise(sig))
    # t * eta = ln N: CatBoost's multiplier is exactly one half
    t_half = math.log(n) / 0.1
    assert split_noise_sigma(1.0, float(np.sum(g * g)), float(n), n, t_half, 0.1) == pytest.approx(
        rms / 2, rel=1e-12
    )
    assert split_noise_sigma(1.0, 1.0, 1.0, n, 10**9, 0.1) == 0.0  # no overflow
    assert split_noise_sigma(0.0, 1.0, 1.0, n, 0, 0.1) == 0.0
    assert split_noise_sigma(1.0, 1.0, 0.0, n, 0, 0.1) == 0.0  # no curvature: no noise


def test_sigma_follows_a_scaled_loss_as_sqrt_of_the_score_does():
    # g, h -> a g, a h scales sqrt(Q) by sqrt(a): the noise must scale alike
    s1 = split_noise_sigma(1.0, 50.0, 20.0, 100, 3, 0.1)
    s4 = split_noise_sigma(1.0, 50.0 * 16, 20.0 * 4, 100, 3, 0.1)
    assert s4 == pytest.approx(2.0 * s1, rel=1e-12)


# --- refused values ---


@pytest.mark.parametrize("bad", [-1.0, -1e-9, float("nan"), float("inf")])
def test_negative_and_non_finite_are_refused(bad):
    with pytest.raises(ValueError, match="random_strength"):
        BoosterParams(random_strength=bad).validate()
    X, y, qid = _data()
    with pytest.raises(ValueError, match="random_strength"):
        ltrboost.Ranker(random_strength=bad, n_estimators=2).fit(X, y, qid=qid)


@pytest.mark.parametrize("bad", ["-1", "nan"])
def test_cli_refuses_in_one_line_naming_the_flag(tmp_path, capsys, bad):
    X, y, qid = _data()
    path = tmp_path / "train.txt"
    with open(path, "w") as f:
        for row, label, q in zip(X, y, qid, strict=True):
            feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(row))
            f.write(f"{int(label)} qid:{int(q)} {feats}\n")
    out = tmp_path / "m.json"
    rc = main(["train", str(path), "-o", str(out), "-q", f"--random-strength={bad}"])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().split("\n")
    assert len(lines) == 1, lines
    assert lines[0].startswith("ltrboost: error:")
    assert "--random-strength" in lines[0]
    assert not out.exists()


def test_cli_flag_trains_and_records_it(tmp_path, capsys):
    X, y, qid = _data()
    path = tmp_path / "train.txt"
    with open(path, "w") as f:
        for row, label, q in zip(X, y, qid, strict=True):
            feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(row))
            f.write(f"{int(label)} qid:{int(q)} {feats}\n")
    out = tmp_path / "m.json"
    rc = main(
        ["train", str(path), "-o", str(out), "-q", "--n-estimators", "3", "--random-strength", "1"]
    )
    assert rc == 0, capsys.readouterr().err
    assert ltrboost.load_model(out).params["random_strength"] == 1.0


def test_ranker_takes_it_and_clones():
    from sklearn.base import clone

    r = ltrboost.Ranker(random_strength=0.5)
    assert r.get_params()["random_strength"] == 0.5
    assert clone(r).random_strength == 0.5


# --- Dask: the noise is drawn on the driver, the scale summed over the shards ---


def test_dask_equals_local(client):
    da = pytest.importorskip("dask.array")
    from ltrboost import dask as ldask

    X, y, qid = _data(4, n_queries=30)
    p = {**FAST, "random_strength": 1.0}
    local = ltrboost.train(p, make_dataset(X, y, qid=qid))
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    cut = int(starts[len(starts) // 2])
    chunks = ((cut, len(y) - cut),)

    def arr(a):
        return da.from_array(a, chunks=chunks + tuple((s,) for s in a.shape[1:]))

    dist = ldask.train(client, p, ldask.DaskData(arr(X), arr(y), arr(qid)))
    assert _features(dist) == _features(local)
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)
    assert _features(local) != _features(ltrboost.train(FAST, make_dataset(X, y, qid=qid)))

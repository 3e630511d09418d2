"""Tests for the synthetic LETOR-like generator (ltrboost.datasets)."""

from __future__ import annotations

import numpy as np
import pytest

import ltrboost.datasets as datasets
from ltrboost.dataset import RankingDataset
from ltrboost.datasets import (
    MSLR_LABEL_DISTRIBUTION,
    make_ranking,
    make_ranking_mslr_like,
)


def _runs(qid: np.ndarray) -> np.ndarray:
    """Query ids in the order their runs appear."""
    return qid[np.concatenate(([True], qid[1:] != qid[:-1]))]


def _mean_query_spearman(score: np.ndarray, y: np.ndarray, qid: np.ndarray) -> float:
    stats = pytest.importorskip("scipy.stats")
    values = []
    for q in np.unique(qid):
        m = qid == q
        if np.ptp(y[m]) == 0 or np.ptp(score[m]) == 0:  # no order to agree with
            continue
        values.append(stats.spearmanr(score[m], y[m])[0])
    return float(np.mean(values)) if values else 0.0


def test_shapes_dtypes_and_contiguous_queries(global_random_seed):
    X, y, qid = make_ranking(
        n_queries=30,
        docs_per_query=(1, 40),
        n_features=12,
        random_state=global_random_seed,
    )
    n = X.shape[0]
    assert X.shape == (n, 12)
    assert X.dtype == np.float64
    assert y.shape == (n,)
    assert y.dtype == np.float64
    assert qid.shape == (n,)
    assert qid.dtype == np.int64
    runs = _runs(qid)
    np.testing.assert_array_equal(runs, np.arange(30))  # one run per query, in order
    sizes = np.bincount(qid)
    assert sizes.min() >= 1
    assert sizes.max() <= 40
    assert len(np.unique(sizes)) > 1  # sizes are drawn, not fixed
    assert set(np.unique(y)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    assert np.all(np.isfinite(X))


def test_fixed_query_size_and_float32():
    X, _y, qid = make_ranking(7, 13, 5, random_state=0, dtype=np.float32)
    assert X.dtype == np.float32
    assert X.shape == (91, 5)
    np.testing.assert_array_equal(np.bincount(qid), np.full(7, 13))


def test_seeded_reproducibility():
    a = make_ranking(20, (5, 30), 10, missing_rate=0.1, random_state=3)
    b = make_ranking(20, (5, 30), 10, missing_rate=0.1, random_state=3)
    c = make_ranking(20, (5, 30), 10, missing_rate=0.1, random_state=4)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)  # NaNs compare equal here
    assert a[0].shape != c[0].shape or not np.array_equal(a[0], c[0], equal_nan=True)
    gen = make_ranking(5, 5, 3, random_state=np.random.default_rng(9))
    again = make_ranking(5, 5, 3, random_state=np.random.default_rng(9))
    np.testing.assert_array_equal(gen[0], again[0])


def test_output_does_not_depend_on_threads_or_blocks(monkeypatch):
    # many blocks of 64 rows, filled by 1 or 3 threads: identical data
    monkeypatch.setattr(datasets, "_BLOCK_ROWS", 64)
    monkeypatch.setattr(datasets, "_MAX_THREADS", 1)
    one = make_ranking(40, 25, 9, missing_rate=0.05, random_state=5)
    monkeypatch.setattr(datasets, "_MAX_THREADS", 3)
    three = make_ranking(40, 25, 9, missing_rate=0.05, random_state=5)
    for u, v in zip(one, three, strict=True):
        np.testing.assert_array_equal(u, v)


def test_default_label_skew_is_mslr_like(global_random_seed):
    _, y, _ = make_ranking(200, (20, 80), 10, random_state=global_random_seed)
    freq = np.bincount(y.astype(np.int64), minlength=5) / y.size
    np.testing.assert_allclose(freq, MSLR_LABEL_DISTRIBUTION, atol=0.01)


def test_label_skew_varies_between_queries():
    # a global cut with per-query offsets: some queries have no relevant document
    _, y, qid = make_ranking(600, 20, 10, random_state=0)
    relevant = np.bincount(qid, weights=(y > 0).astype(float)) / np.bincount(qid)
    assert relevant.std() > 0.1
    assert np.any(relevant == 0.0)


@pytest.mark.parametrize(
    ("label_distribution", "max_label", "expected"),
    [
        ([0.25, 0.25, 0.5], 2, [0.25, 0.25, 0.5]),
        ("uniform", 3, [0.25] * 4),
        (None, 1, [0.52, 0.48]),  # MSLR with the top grades merged
        (None, 2, [0.52, 0.32, 0.16]),
        ([0.5, 0.0, 0.5, 0.0], 3, [0.5, 0.0, 0.5, 0.0]),  # empty grades stay empty
    ],
)
def test_requested_label_distribution(label_distribution, max_label, expected):
    _, y, _ = make_ranking(
        100,
        50,
        8,
        label_distribution=label_distribution,
        max_label=max_label,
        random_state=1,
    )
    freq = np.bincount(y.astype(np.int64), minlength=max_label + 1) / y.size
    assert freq.shape[0] == max_label + 1
    np.testing.assert_allclose(freq, expected, atol=0.01)


def test_more_grades_than_mslr():
    _, y, _ = make_ranking(100, 50, 8, max_label=6, random_state=0)
    freq = np.bincount(y.astype(np.int64), minlength=7) / y.size
    assert y.max() == 6
    assert np.all(np.diff(freq) <= 0.001)  # still skewed towards 0


@pytest.mark.parametrize("rate", [0.0, 0.05, 0.3])
def test_missing_rate(rate):
    X, _, _ = make_ranking(100, 30, 20, missing_rate=rate, random_state=2)
    frac = np.isnan(X).mean()
    assert frac == pytest.approx(rate, abs=0.01)
    if rate:
        assert np.isnan(X).any(axis=0).all()  # every column may be missing


def test_missing_values_do_not_change_labels():
    _, y0, _ = make_ranking(50, 20, 10, random_state=8)
    _, y1, _ = make_ranking(50, 20, 10, missing_rate=0.2, random_state=8)
    np.testing.assert_array_equal(y0, y1)


def test_feature_kinds():
    kinds = ["query", "count", "gaussian", "uniform", "count", "query"]
    X, _, qid = make_ranking(60, (10, 30), 6, feature_kinds=kinds, random_state=0)
    for j in (0, 5):  # query-level: constant within a query, varying across queries
        per_query = [np.unique(X[qid == q, j]).size for q in range(60)]
        assert max(per_query) == 1
        assert np.unique(X[:, j]).size > 5
    for j in (1, 4):  # counts: non-negative integers, many zeros, a long tail
        col = X[:, j]
        assert np.all(col >= 0)
        assert np.all(col == np.floor(col))
        assert 0.2 < np.mean(col == 0) < 0.95
        assert col.max() > 10 * max(col.mean(), 1.0)
    assert np.unique(X[:, 2]).size == X.shape[0]  # continuous
    u = X[:, 3]
    assert np.ptp(u) > 0
    assert np.unique(u).size > 0.9 * u.size
    assert abs(np.mean(u) - (u.min() + u.max()) / 2) < 0.05 * np.ptp(u)  # flat


def test_mixed_kinds_have_each_kind():
    X, _, qid = make_ranking(50, 20, 20, random_state=0)
    query_level = [j for j in range(20) if all(np.ptp(X[qid == q, j]) == 0 for q in range(50))]
    integer = [j for j in range(20) if np.all(X[:, j] == np.floor(X[:, j]))]
    assert len(query_level) == 2
    assert len(integer) >= 6 + 1  # 30% counts (+ integer query-level columns)
    Xc, _, _ = make_ranking(50, 20, 10, feature_kinds="continuous", random_state=0)
    assert not any(np.all(Xc[:, j] == np.floor(Xc[:, j])) for j in range(10))


def test_return_dataset_matches_arrays():
    X, y, qid = make_ranking(12, (3, 9), 4, random_state=6)
    ds = make_ranking(12, (3, 9), 4, random_state=6, return_dataset=True)
    assert isinstance(ds, RankingDataset)
    assert ds.n_queries == 12
    assert ds.order is None
    np.testing.assert_array_equal(ds.X, X)
    np.testing.assert_array_equal(ds.y, y)
    np.testing.assert_array_equal(np.diff(ds.query_offsets), np.bincount(qid))
    ds2, signal = make_ranking(
        12, (3, 9), 4, random_state=6, return_dataset=True, return_signal=True
    )
    assert signal.shape == (ds2.n_samples,)


def test_signal_orders_documents(global_random_seed):
    _X, y, qid, signal = make_ranking(
        100, 30, 20, random_state=global_random_seed, return_signal=True
    )
    rho = _mean_query_spearman(signal, y, qid)
    assert rho > 0.3
    # more noise, weaker agreement; no noise, near-perfect (up to label ties)
    *_, y_noisy, qid_n, s_noisy = make_ranking(
        100, 30, 20, noise=3.0, random_state=global_random_seed, return_signal=True
    )
    _, y_clean, _, s_clean = make_ranking(
        100, 30, 20, noise=0.0, random_state=global_random_seed, return_signal=True
    )
    assert _mean_query_spearman(s_noisy, y_noisy, qid_n) < rho
    assert _mean_query_spearman(s_clean, y_clean, qid) > 0.8


def test_signal_is_learnable_from_features():
    """A plain regressor trained on some queries ranks held-out queries well."""
    ensemble = pytest.importorskip("sklearn.ensemble")
    X, y, qid = make_ranking(300, 30, 20, missing_rate=0.05, random_state=0)
    train = qid < 200
    model = ensemble.HistGradientBoostingRegressor(max_iter=100, random_state=0)
    model.fit(X[train], y[train])
    pred = model.predict(X[~train])
    rho = _mean_query_spearman(pred, y[~train], qid[~train])
    assert rho > 0.3
    # and the signal is not linear: a single feature orders far worse
    best_single = max(
        abs(_mean_query_spearman(np.nan_to_num(X[~train, j]), y[~train], qid[~train]))
        for j in range(20)
    )
    assert best_single < rho


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_queries": 0}, "n_queries=0"),
        ({"docs_per_query": 0}, "docs_per_query=0"),
        ({"docs_per_query": (5, 2)}, r"docs_per_query\[1\]=2"),
        ({"docs_per_query": (1, 2, 3)}, "pair"),
        ({"label_distribution": [0.5, 0.5]}, "max_label=1 to match"),
        ({"label_distribution": [1, -1, 1, 1, 1]}, "non-negative"),
        ({"label_distribution": "zipf"}, "zipf"),
        ({"missing_rate": 1.0}, "missing_rate"),
        ({"noise": -1.0}, "noise"),
        ({"feature_kinds": "weird"}, "feature_kinds"),
        ({"feature_kinds": ["gaussian"] * 3}, "3 entries"),
        ({"n_features": 2, "feature_kinds": ["query", "query"]}, "document-level"),
        ({"n_features": 2, "feature_kinds": ["gaussian", "tf"]}, r"feature_kinds\[1\]"),
        ({"dtype": np.int32}, "dtype"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_ranking(**{"n_features": 5, "random_state": 0, **kwargs})


def test_mslr_like_small():
    X, y, qid = make_ranking_mslr_like(20_000, random_state=0)
    assert X.shape == (20_000, 136)
    assert X.dtype == np.float32
    assert y.dtype == np.float64
    assert qid.dtype == np.int64
    np.testing.assert_array_equal(_runs(qid), np.arange(qid.max() + 1))
    sizes = np.bincount(qid)
    assert sizes[:-1].min() >= 20
    assert sizes.max() <= 220
    assert 90 < sizes.mean() < 150
    freq = np.bincount(y.astype(np.int64), minlength=5) / y.size
    np.testing.assert_allclose(freq, MSLR_LABEL_DISTRIBUTION, atol=0.01)
    assert not np.isnan(X).any()
    X2, y2, _ = make_ranking_mslr_like(20_000, random_state=0)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    _, _, q3 = make_ranking_mslr_like(1000, docs_per_query=(5, 10), random_state=0)
    assert np.bincount(q3)[:-1].min() >= 5
    assert np.bincount(q3).max() <= 10


@pytest.mark.slow
def test_mslr_like_two_million_documents_memory():
    import tracemalloc

    tracemalloc.start()
    X, y, _qid = make_ranking_mslr_like(2_000_000, random_state=0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert X.shape == (2_000_000, 136)
    assert X.dtype == np.float32
    assert peak < 3e9
    freq = np.bincount(y.astype(np.int64), minlength=5) / y.size
    np.testing.assert_allclose(freq, MSLR_LABEL_DISTRIBUTION, atol=0.005)

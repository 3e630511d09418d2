"""Adversarial pass 5 over binning (advbin5): ``max_bins`` / ``min_samples_bin`` at
their limits, columns of exactly ``max_bins`` / ``max_bins + 1`` values, one-ulp and
signed-zero values, huge integers, sparse explicit zeros, the seeded bin subsample
(local and Dask), and where validation / prediction values the training data never
held go (README, *Binning*).  Each test marked "failed before" failed on the old code;
the others pin the rules README now writes down."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ltrboost import Ranker, make_dataset, train
from ltrboost.binning import BinMapper, _map_to_bins_reference
from ltrboost.datasets import make_ranking

TINY = np.finfo(np.float64).smallest_subnormal
FMAX = np.finfo(np.float64).max
FAST = dict(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=3, n_threads=1)


def _data(seed=0, n_features=3):
    return make_ranking(
        n_queries=20, docs_per_query=(5, 12), n_features=n_features, random_state=seed
    )[:3]


# --- BinMapper's own parameters (failed before) -------------------------------------


@pytest.mark.parametrize("max_bins", [2.7, 3.0, "8", True, np.float64(16.0), None])
def test_binmapper_refuses_non_integer_max_bins(max_bins):
    # 2.7 was truncated to 2 bins and "8" taken as 8, silently
    with pytest.raises(ValueError, match=r"max_bins=.* must be an integer"):
        BinMapper(max_bins=max_bins)


@pytest.mark.parametrize("min_samples_bin", [2.5, "3", True, None])
def test_binmapper_refuses_non_integer_min_samples_bin(min_samples_bin):
    # 2.5 was truncated, True taken as 1, None a TypeError from int()
    with pytest.raises(ValueError, match=r"min_samples_bin=.* must be an integer"):
        BinMapper(min_samples_bin=min_samples_bin)


@pytest.mark.parametrize("subsample", [0, -1, 2.5, True, "1000"])
def test_binmapper_refuses_bad_subsample(subsample):
    # 0 fitted every column on no rows (one bin each, silently); -1, 2.5 and True
    # failed inside NumPy's draw naming no parameter
    with pytest.raises(ValueError, match=r"subsample=.* must be an integer >= 1 or None"):
        BinMapper(subsample=subsample)


def test_binmapper_integer_parameters_of_numpy_types_are_fine():
    X = np.arange(40.0).reshape(20, 2)
    b = BinMapper(np.int64(4), subsample=np.int32(10), min_samples_bin=np.uint8(1)).fit(X)
    assert b.max_bins == 4
    assert b.missing_bin_ == 4
    assert all(len(t) <= 3 for t in b.bin_thresholds_)


# --- max_bins at its limits, columns of max_bins and max_bins + 1 values ------------


@pytest.mark.parametrize("max_bins", [0, 1, 256, 65535, 2**70, -1])
def test_max_bins_outside_2_255_is_an_error_naming_it(max_bins):
    X, y, qid = _data()
    with pytest.raises(ValueError, match=rf"max_bins={max_bins} must be in \[2, 255\]"):
        Ranker(max_bins=max_bins, **FAST).fit(X, y, qid=qid)


@pytest.mark.parametrize("max_bins", [2, 3, 255])
def test_exactly_max_bins_values_one_bin_each_one_more_value_still_max_bins(max_bins):
    rng = np.random.default_rng(max_bins)
    n = 4 * (max_bins + 1)
    exact = np.repeat(np.arange(max_bins, dtype=np.float64), 4)
    exact = np.r_[exact, rng.choice(exact, n - exact.shape[0])]
    more = np.repeat(np.arange(max_bins + 1, dtype=np.float64), 4)
    b = BinMapper(max_bins, min_samples_bin=1).fit(np.c_[exact, more])
    t_exact, t_more = b.bin_thresholds_
    np.testing.assert_array_equal(t_exact, np.arange(max_bins - 1) + 0.5)  # midpoints
    assert t_more.shape[0] == max_bins - 1  # every bin used, none beyond max_bins
    Xb = b.transform(np.c_[exact, more])
    assert Xb.max() == max_bins - 1
    assert np.unique(Xb[:, 0]).shape[0] == max_bins


def test_max_bins_2_trains_and_predicts_as_the_binned_scores():
    X, y, qid = _data()
    X[::7, 1] = np.nan
    r = Ranker(max_bins=2, eval_metric="ndcg@5", **FAST)
    r.fit(X, y, qid=qid, eval_set=[(X, y, qid)], eval_names=["train"])
    # the last validation value was computed on binned rows, score() on raw ones
    assert r.evals_result_["train"]["ndcg@5"][-1] == pytest.approx(
        r.score(X, y, qid=qid), abs=1e-12
    )


# --- values the binner must keep apart / together -----------------------------------


def test_values_one_ulp_apart_stay_apart_and_signed_zeros_are_one_value():
    one_up = np.nextafter(1.0, 2.0)
    col_ulp = np.array([1.0, one_up, np.nextafter(one_up, 2.0)] * 4)
    col_zero = np.array([-0.0, 0.0, TINY, -TINY] * 3)
    col_ext = np.array([-FMAX, FMAX, 2.0**53, 2.0**53 + 2] * 3)
    X = np.c_[col_ulp, col_zero, col_ext]
    b = BinMapper(255, min_samples_bin=1).fit(X)
    ulp, zero, ext = b.bin_thresholds_
    assert ulp.shape[0] == 2
    assert zero.shape[0] == 2
    assert ext.shape[0] == 3
    Xb = b.transform(X)
    np.testing.assert_array_equal(Xb, _map_to_bins_reference(X, b.bin_thresholds_, 255))
    assert np.unique(Xb[:, 0]).shape[0] == 3  # one ulp apart: three bins
    assert Xb[0, 1] == Xb[1, 1]  # -0.0 and 0.0: one bin
    assert np.unique(Xb[:, 2]).shape[0] == 4  # +-max and 2^53 vs 2^53 + 2
    for f, t in enumerate(b.bin_thresholds_):  # bin <= k  <=>  x <= t[k]
        for k, thr in enumerate(t):
            np.testing.assert_array_equal(Xb[:, f] <= k, X[:, f] <= thr)


def test_integers_beyond_2_53_bin_as_their_float64_values():
    # 2**53 and 2**53 + 1 are one float64: they share a bin (README), nothing fails
    X, y, qid = _data()
    Xi = np.rint(X * 1000).astype(np.int64)
    Xi[:, 0] = np.where(np.arange(Xi.shape[0]) % 2, 2**53, 2**53 + 1)
    Xi[0, 1], Xi[1, 1] = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    b = BinMapper(255, min_samples_bin=1).fit(Xi.astype(np.float64))
    assert b.bin_thresholds_[0].shape[0] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = Ranker(**FAST).fit(Xi, y, qid=qid)
    np.testing.assert_array_equal(r.predict(Xi), r.predict(Xi.astype(np.float64)))


def test_sparse_explicit_zeros_negative_zeros_and_absent_entries_bin_alike():
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(5)
    dense = np.where(rng.random((60, 3)) < 0.5, 0.0, rng.normal(size=(60, 3)))
    dense[:4, 0] = [TINY, -TINY, 2 * TINY, -2 * TINY]
    absent = sp.csc_matrix(dense)
    rows, cols = np.indices(dense.shape).reshape(2, -1)
    data = dense.ravel().copy()
    zeros = np.flatnonzero(data == 0)
    data[zeros[::2]] = -0.0
    stored = sp.csc_matrix((data, (rows, cols)), shape=dense.shape)  # every zero stored
    assert stored.nnz == dense.size
    bd = BinMapper(8, min_samples_bin=2).fit(dense)
    for X in (absent, stored):
        bs = BinMapper(8, min_samples_bin=2).fit(X)
        for ts, td in zip(bs.bin_thresholds_, bd.bin_thresholds_, strict=True):
            np.testing.assert_array_equal(ts, td)
        np.testing.assert_array_equal(bs.transform(X), bd.transform(dense))


# --- columns of one value, all NaN, one value but one row ---------------------------


@pytest.mark.parametrize("min_samples_bin", [1, 3])
def test_all_nan_and_one_value_but_one_row_columns_train(min_samples_bin):
    X, y, qid = _data()
    n = X.shape[0]
    X = np.c_[X, np.full(n, np.nan), np.r_[np.full(n - 1, 5.0), 7.0]]
    X = np.c_[X, np.r_[np.full(n - 1, np.nan), 3.0]]
    b = BinMapper(255, min_samples_bin=min_samples_bin).fit(X)
    assert b.bin_thresholds_[3].shape[0] == 0  # all NaN: the missing bin alone
    assert b.bin_thresholds_[4].shape[0] == (1 if min_samples_bin == 1 else 0)
    assert b.bin_thresholds_[5].shape[0] == 0
    assert b.has_missing_[5]
    r = Ranker(min_samples_bin=min_samples_bin, eval_metric="ndcg@5", **FAST)
    r.fit(X, y, qid=qid, eval_set=[(X, y, qid)], eval_names=["t"])
    assert r.evals_result_["t"]["ndcg@5"][-1] == pytest.approx(r.score(X, y, qid=qid), abs=1e-12)


# --- the bin subsample: seeded, the same rows locally and on Dask -------------------


def _small_subsample(monkeypatch, n):
    """Fit bin edges on ``n`` rows (instead of 200,000) everywhere training does."""
    import ltrboost.dask as ldask

    defaults = BinMapper.__init__.__defaults__
    monkeypatch.setattr(BinMapper.__init__, "__defaults__", (defaults[0], n, *defaults[2:]))
    monkeypatch.setattr(ldask, "DEFAULT_SUBSAMPLE", n)


def test_bin_subsample_is_seeded_by_random_state(monkeypatch):
    _small_subsample(monkeypatch, 50)
    X, y, qid = _data(n_features=4)
    fits = [Ranker(random_state=s, **FAST).fit(X, y, qid=qid) for s in (3, 3, 4)]
    a, b, c = (f.booster_.to_dict()["trees"] for f in fits)
    assert a == b  # same seed: the same rows, the same edges, the same trees
    assert a != c  # another seed draws other rows (edges from 50 rows differ)


def test_dask_bin_edges_equal_local_when_subsampled(client, monkeypatch):
    da = pytest.importorskip("dask.array")
    from ltrboost import dask as ldask

    _small_subsample(monkeypatch, 60)
    X, y, qid = _data(n_features=4)
    X[::5, 0] = np.nan
    X[:, 1] = np.where(np.arange(X.shape[0]) % 3, -0.0, 0.0)
    X[1::3, 1] = TINY
    p = dict(objective="lambdamart", max_leaf_nodes=6, min_samples_leaf=3, n_estimators=3)
    p.update(max_bins=16, random_state=11)
    local = train(p, make_dataset(X, y, qid=qid))
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    cut = int(starts[len(starts) // 2])
    chunks = (cut, X.shape[0] - cut)
    data = ldask.DaskData(
        da.from_array(X, chunks=(chunks, X.shape[1])),
        da.from_array(y, chunks=(chunks,)),
        da.from_array(qid, chunks=(chunks,)),
    )
    dist = ldask.train(client, p, data)
    for a, b in zip(local.trees, dist.trees, strict=True):
        np.testing.assert_array_equal(a["feature_idx"], b["feature_idx"])
        np.testing.assert_array_equal(a["num_threshold"], b["num_threshold"])
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)


# --- values training never saw: outside the range, at a threshold, NaN --------------


def test_unseen_nan_follows_the_child_with_more_training_documents():
    # no NaN at training: a NaN at prediction (or in a validation set) goes to the
    # child that held more training documents, left on a tie (README, Binning)
    X, y, qid = _data(seed=2, n_features=4)
    r = Ranker(eval_metric="ndcg@10", **{**FAST, "max_leaf_nodes": 8, "min_samples_leaf": 2})
    Xv = X.copy()
    Xv[::2] = np.nan  # every feature of every other row
    # the training rows, NaN-ed, under ids of their own (not a leak of training queries)
    r.fit(X, y, qid=qid, eval_set=[(Xv, y, qid + qid.max() + 1)], eval_names=["v"])
    n_splits = 0
    for nodes in r.booster_.trees:
        for k in np.flatnonzero(nodes["is_leaf"] == 0):
            nl, nr = nodes["count"][nodes["left"][k]], nodes["count"][nodes["right"][k]]
            assert bool(nodes["missing_go_to_left"][k]) == (nl >= nr)
            n_splits += 1
    assert n_splits > 3
    # the binned validation rows scored as the raw ones
    assert r.evals_result_["v"]["ndcg@10"][-1] == pytest.approx(r.score(Xv, y, qid=qid), abs=1e-12)


def test_values_outside_the_training_range_go_to_the_outer_bins():
    X, y, qid = _data(seed=4)
    r = Ranker(**{**FAST, "min_samples_leaf": 2}).fit(X, y, qid=qid)
    lo, hi = X.min(axis=0), X.max(axis=0)
    low = np.tile(lo - 1e6, (3, 1))
    high = np.tile(hi + 1e6, (3, 1))
    # far outside = at the training extremes: below every threshold / above every one
    np.testing.assert_array_equal(r.predict(low), r.predict(np.tile(lo, (3, 1))))
    np.testing.assert_array_equal(r.predict(high), r.predict(np.tile(hi, (3, 1))))
    # a value equal to a split's threshold goes left (x <= t)
    nodes = r.booster_.trees[0]
    k = int(np.flatnonzero(nodes["is_leaf"] == 0)[0])
    f, t = int(nodes["feature_idx"][k]), float(nodes["num_threshold"][k])
    row = X[:1].copy()
    row[0, f] = t
    b = BinMapper(255, min_samples_bin=3).fit(X)
    assert b.transform(row)[0, f] == nodes["bin_threshold"][k]  # the split's own bin


def test_model_file_thresholds_are_raw_values_bin_edges_not_stored(tmp_path):
    # prediction reads each split's raw threshold; the bin edges are not in the file
    # and are never recomputed (a model predicts any data, its own bins unknown)
    X, y, qid = _data(seed=6)
    X[::4, 2] = np.nan
    r = Ranker(**FAST).fit(X, y, qid=qid)
    d = r.booster_.to_dict()
    assert "thresholds" not in d
    assert "bin_thresholds" not in d
    from ltrboost import load_model

    path = tmp_path / "m.json"
    r.save_model(path)
    m = load_model(path)
    for nodes in m.trees:
        nodes["bin_threshold"] = 0  # informational only: prediction ignores it
    np.testing.assert_array_equal(m.predict(X), r.predict(X))

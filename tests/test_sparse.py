"""SciPy sparse input is binned without densifying and gives exactly the dense results.

Every check compares the sparse path with the dense path on ``X.toarray()`` (bins,
thresholds, used columns, model files byte for byte, predictions bit for bit), on
matrices with explicit zeros, explicit NaN, all-zero, all-NaN and fully stored columns,
negative values, and columns with more distinct values than bins (quantile thresholds).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

sp = pytest.importorskip("scipy.sparse")

from ltrboost import Ranker, make_dataset, train  # noqa: E402
from ltrboost.binning import BinMapper, UsedFeatures  # noqa: E402
from ltrboost.booster import BoosterParams, Training, make_objective  # noqa: E402


def _sparse_matrix(n: int, d: int, seed: int, dtype=np.float64) -> sp.csr_matrix:
    """A CSR matrix exercising every special case of the sparse path."""
    rng = np.random.default_rng(seed)
    dense = np.zeros((n, d))
    mask = rng.random((n, d)) < 0.15
    dense[mask] = rng.normal(size=mask.sum()).round(1)  # few distinct values
    dense[:, 0] = rng.normal(size=n)  # fully stored, many distinct (quantile path)
    dense[: n // 2, 1] = rng.integers(1, 4, size=n // 2)  # half stored, few values
    dense[:, 2] = 0.0  # all zero (absent)
    dense[rng.random(n) < 0.3, 3] = np.nan  # zeros and NaN only
    dense[:, 4] = np.nan  # all NaN
    dense[:, 5] = -rng.exponential(size=n)  # all negative, fully stored
    dense[rng.random(n) < 0.1, 6] = np.nan  # NaN mixed with values
    dense[:, 7] = 2.5  # constant, stored
    dense[:, 8] = 0.0  # stored below in every row, 40% of them explicit zeros
    col8 = np.where(rng.random(n) < 0.4, 0.0, rng.normal(size=n))
    X = sp.csr_matrix(dense.astype(dtype))
    # explicit zeros: stored entries of value 0 (must count as zeros)
    coo = X.tocoo()
    zr = rng.integers(0, n, size=n // 3)
    zc = rng.integers(9, d, size=n // 3)
    keep = dense[zr, zc] == 0
    X = sp.csr_matrix(
        (
            np.r_[coo.data, np.zeros(keep.sum(), dtype), col8.astype(dtype)],
            (
                np.r_[coo.row, zr[keep], np.arange(n)],
                np.r_[coo.col, zc[keep], np.full(n, 8)],
            ),
        ),
        shape=(n, d),
    )
    X.sum_duplicates()
    assert (X.data == 0).sum() > 0
    assert np.isnan(X.data).any()
    return X


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("max_bins", "min_samples_bin"), [(255, 1), (255, 3), (8, 1), (5, 3)])
def test_binning_equals_dense(fmt, dtype, max_bins, min_samples_bin):
    X = _sparse_matrix(600, 30, seed=1, dtype=dtype).asformat(fmt)
    dense = X.toarray()
    used_d, used_s = UsedFeatures(dense), UsedFeatures(X)
    np.testing.assert_array_equal(used_s.ids, used_d.ids)
    assert 2 not in used_s.ids
    assert 4 not in used_s.ids
    assert 7 not in used_s.ids
    assert 3 in used_s.ids  # zeros and NaN: splittable
    bd = BinMapper(max_bins, min_samples_bin=min_samples_bin).fit(used_d.take(dense))
    bs = BinMapper(max_bins, min_samples_bin=min_samples_bin).fit(used_s.take(X))
    assert len(bs.bin_thresholds_) == len(bd.bin_thresholds_)
    for ts, td in zip(bs.bin_thresholds_, bd.bin_thresholds_, strict=True):
        np.testing.assert_array_equal(ts, td)
    np.testing.assert_array_equal(bs.has_missing_, bd.has_missing_)
    Bs = bs.transform(used_s.take(X))
    Bd = bd.transform(used_d.take(dense))
    assert Bs.dtype == np.uint8
    assert Bs.flags.f_contiguous
    np.testing.assert_array_equal(Bs, Bd)
    # and the bins follow the documented rule on the dense values (independent check)
    for k, thr in enumerate(bd.bin_thresholds_):
        col = used_d.take(dense)[:, k].astype(np.float64)
        ref = np.searchsorted(thr, col, side="left")
        ref[np.isnan(col)] = max_bins
        np.testing.assert_array_equal(Bs[:, k], ref)


def test_binning_quantiles_with_many_zeros_and_subsample():
    # > max_bins distinct values plus a large block of implicit zeros: the quantile
    # path must see the zeros at their sorted position; subsampled rows likewise.
    rng = np.random.default_rng(3)
    n = 3000
    dense = np.zeros((n, 3))
    dense[rng.random(n) < 0.4, 0] = rng.normal(size=1)
    m = rng.random(n) < 0.4
    dense[m, 0] = rng.normal(size=m.sum())
    m = rng.random(n) < 0.7
    dense[m, 1] = rng.exponential(size=m.sum())
    dense[:, 2] = rng.normal(size=n)
    X = sp.csc_matrix(dense)
    for sub in (None, 500):
        bd = BinMapper(16, subsample=sub, random_state=7).fit(dense)
        bs = BinMapper(16, subsample=sub, random_state=7).fit(X)
        for ts, td in zip(bs.bin_thresholds_, bd.bin_thresholds_, strict=True):
            np.testing.assert_array_equal(ts, td)
        np.testing.assert_array_equal(bs.transform(X), bd.transform(dense))


def test_dataset_keeps_sparse_and_refuses_inf():
    X = _sparse_matrix(50, 12, seed=2)
    y = np.arange(50) % 3
    qid = np.repeat(np.arange(10), 5)[::-1].copy()  # not contiguous after reversal
    qid[::2] = qid[::2] + 100
    ds = make_dataset(X, y, qid=qid)
    assert sp.issparse(ds.X)
    dd = make_dataset(X.toarray(), y, qid=qid)
    np.testing.assert_array_equal(ds.X.toarray(), dd.X)
    Xi = X.copy()
    Xi.data[5] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        make_dataset(Xi, y, qid=qid)
    ds_int = make_dataset(sp.csr_matrix(np.eye(50, 12, dtype=np.int64)), y, qid=qid)
    assert ds_int.X.dtype == np.float64


def _ranking_data(seed: int, n_q: int = 30, docs: int = 20, d: int = 40):
    X = _sparse_matrix(n_q * docs, d, seed=seed)
    rng = np.random.default_rng(seed)
    Xd = X.toarray()
    signal = np.nan_to_num(Xd[:, 0] + Xd[:, 1] - Xd[:, 6] + 0.5 * Xd[:, 10])
    y = np.clip(np.round(signal + rng.normal(scale=0.5, size=len(signal))), 0, 3)
    return X, y, np.full(n_q, docs)


@pytest.mark.parametrize("objective", ["lambdamart", "mart", "ranknet", "gbrank", "mcrank"])
def test_model_from_sparse_equals_dense(objective):
    X, y, group = _ranking_data(5)
    Xv, yv, gv = _ranking_data(6, n_q=10)
    params = dict(
        objective=objective,
        n_estimators=6,
        max_leaf_nodes=7,
        min_samples_leaf=5,
        subsample=0.8,
        colsample_bytree=0.7,
        random_state=3,
        early_stopping_rounds=20,
    )
    models = []
    for to in (lambda m: m.toarray(), lambda m: m):
        tr = make_dataset(to(X), y, group=group)
        va = make_dataset(to(Xv), yv, group=gv)
        models.append(train(params, tr, [("valid", va)]))
    dense_model, sparse_model = models
    assert json.dumps(sparse_model.to_dict()) == json.dumps(dense_model.to_dict())
    assert sparse_model.evals_result == dense_model.evals_result
    np.testing.assert_array_equal(sparse_model.predict(Xv), dense_model.predict(Xv.toarray()))


def test_sparse_training_never_densifies(monkeypatch):
    X, y, group = _ranking_data(8)
    ds = make_dataset(X, y, group=group)

    def refuse(*a, **k):
        raise AssertionError("the training matrix was densified")

    monkeypatch.setattr(type(ds.X), "toarray", refuse)
    monkeypatch.setattr(type(ds.X), "todense", refuse)
    params = BoosterParams(n_estimators=2)
    tr = Training(params, make_objective(params), ds, [], None)
    assert tr.X_binned.shape == (X.shape[0], tr.used.n_used)
    assert tr.used.n_used < X.shape[1]


def test_sklearn_sparse_predict_in_chunks_and_resume(monkeypatch):
    import ltrboost.tree as tree_mod

    X, y, group = _ranking_data(9)
    dense = Ranker(n_estimators=4, min_samples_leaf=5, random_state=1).fit(
        X.toarray(), y, group=group
    )
    sparse = Ranker(n_estimators=4, min_samples_leaf=5, random_state=1).fit(
        X.tocsc(), y, group=group
    )
    assert json.dumps(sparse.booster_.to_dict()) == json.dumps(dense.booster_.to_dict())
    full = dense.predict(X.toarray())
    monkeypatch.setattr(tree_mod, "SPARSE_PREDICT_CHUNK_BYTES", 8 * X.shape[1] * 7)
    np.testing.assert_array_equal(sparse.predict(X), full)
    np.testing.assert_array_equal(
        sparse.predict(X.tocoo().astype(np.float32)), dense.predict(X.toarray().astype(np.float32))
    )
    # resuming replays the scores of the sparse training matrix through predict_raw
    more_s = Ranker(n_estimators=2, min_samples_leaf=5, random_state=1).fit(
        X, y, group=group, init_model=sparse
    )
    more_d = Ranker(n_estimators=2, min_samples_leaf=5, random_state=1).fit(
        X.toarray(), y, group=group, init_model=dense
    )
    assert json.dumps(more_s.booster_.to_dict()) == json.dumps(more_d.booster_.to_dict())

"""Adversarial pass over predict(X, pred_contrib=True) / pred_leaf=True: DaskRanker's
predict takes them (lazily, a partition at a time), an output too large to allocate is
named as pred_contrib's, and a Ranker inside a scikit-learn Pipeline passes them on."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from ltrboost import Ranker
from ltrboost._config import NODE_DTYPE
from ltrboost.model import Booster


def _data(seed=0, n=300, n_features=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.clip(np.round(np.nan_to_num(X[:, 0]) + rng.normal(size=n) * 0.5 + 1.5), 0, 3)
    qid = np.repeat(np.arange(n // 10), 10)
    return X, y, qid


def _ranker(objective="lambdamart", names=True):
    X, y, qid = _data()
    cols = list("abcd")
    Xf = pd.DataFrame(X, columns=cols) if names else X
    r = Ranker(objective=objective, n_estimators=4, max_leaf_nodes=6, min_samples_leaf=3)
    r.fit(Xf, y, qid=qid)
    return r, pd.DataFrame(X, columns=cols), y, qid


def _dask_ranker(r):
    """A DaskRanker holding a locally fitted Ranker's model (predict needs no client)."""
    pytest.importorskip("dask.dataframe")
    from ltrboost.dask import DaskRanker

    d = DaskRanker(**r.get_params())
    d.__dict__.update({k: v for k, v in r.__dict__.items() if k.endswith("_")})
    return d


# ====================================================================== DaskRanker.predict


@pytest.mark.parametrize("objective", ["lambdamart", "mcrank"])
def test_dask_ranker_predict_contrib_and_leaf_of_a_frame(objective):
    import dask.dataframe as dd

    r, df, y, qid = _ranker(objective)
    d = _dask_ranker(r)
    # the labels and the qid are columns too (ignored), the features in another order
    full = df[list("dcba")].assign(qid=qid, label=y)
    ddf = dd.from_pandas(full, npartitions=3)
    for kw, dtype in (({"pred_contrib": True}, np.float64), ({"pred_leaf": True}, np.int32)):
        for it in (None, 2):
            lazy = d.predict(ddf, iteration=it, **kw)
            assert isinstance(lazy, dd.DataFrame)
            got = lazy.compute()
            want = r.predict(df, iteration=it, **kw)
            assert got.shape == want.shape
            assert list(got.columns) == list(range(want.shape[1]))
            assert (got.dtypes == dtype).all()
            np.testing.assert_array_equal(got.index.to_numpy(), full.index.to_numpy())
            np.testing.assert_array_equal(got.to_numpy(), want)
    # the ordinary scores are still a Series
    assert isinstance(d.predict(ddf), dd.Series)


def test_dask_ranker_predict_contrib_and_leaf_of_an_array():
    import dask.array as da

    r, df, _, _ = _ranker(names=False)
    d = _dask_ranker(r)
    X = df.to_numpy()
    dX = da.from_array(X, chunks=(70, 2))  # split along the features too
    c = d.predict(dX, pred_contrib=True)
    assert c.shape == (X.shape[0], X.shape[1] + 1)
    np.testing.assert_array_equal(c.compute(), r.predict(X, pred_contrib=True))
    leaf = d.predict(dX, pred_leaf=True, iteration=3)
    assert leaf.dtype == np.int32
    assert leaf.shape == (X.shape[0], 3)
    np.testing.assert_array_equal(leaf.compute(), r.predict(X, pred_leaf=True, iteration=3))
    with pytest.raises(ValueError, match="ask for one of them"):
        d.predict(dX, pred_contrib=True, pred_leaf=True)


def test_dask_ranker_predict_contrib_names_a_bad_row_by_partition():
    import dask.dataframe as dd

    from ltrboost.dataset import LTRInputError

    r, df, _, _ = _ranker()
    d = _dask_ranker(r)
    bad = df.copy()
    bad.iloc[250, 1] = np.inf
    lazy = d.predict(dd.from_pandas(bad, npartitions=3), pred_contrib=True)
    with pytest.raises(LTRInputError, match=r"partition 2: .*infinite"):
        lazy.compute()


# ====================================================================== too large to allocate


def test_pred_contrib_too_large_to_allocate_names_the_size():
    """Rows x (features + 1) float64 beyond any address space: the error says it is
    pred_contrib's output, its rows, columns and size, not numpy's 3-D internal shape."""
    nodes = np.zeros(3, dtype=NODE_DTYPE)
    nodes["is_leaf"] = [0, 1, 1]
    nodes["left"], nodes["right"] = [1, -1, -1], [2, -1, -1]
    nodes["feature_idx"] = [5, -1, -1]
    nodes["value"] = [0.0, -1.0, 1.0]
    nodes["count"] = [10, 4, 6]
    nodes["depth"] = [0, 1, 1]
    F = 2_000_000
    b = Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.zeros(1),
        trees=[nodes],
        tree_outputs=[0],
        n_features=F,
    )
    X = sp.csr_matrix((10_000_000, F))  # 1.6e14 bytes of output: 145 TiB
    with pytest.raises(MemoryError) as info:
        b.predict(X, pred_contrib=True)
    msg = str(info.value)
    assert msg.startswith("pred_contrib=True: 10000000 rows x 2000001 columns")
    assert "TiB" in msg
    assert "predict fewer rows at a time" in msg


# ====================================================================== scikit-learn Pipeline


def test_pipeline_passes_pred_contrib_to_the_ranker():
    """As documented: Pipeline.predict(X, pred_contrib=True) reaches Ranker.predict; the
    contributions are those of the transformed features (the last step's input)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, qid = _data()
    p = make_pipeline(
        StandardScaler(), Ranker(n_estimators=3, max_leaf_nodes=6, min_samples_leaf=3)
    )
    p.fit(X, y, ranker__qid=qid)
    c = p.predict(X, pred_contrib=True)
    np.testing.assert_array_equal(c, p[-1].predict(p[:-1].transform(X), pred_contrib=True))
    np.testing.assert_allclose(c.sum(1), p.predict(X), rtol=1e-9, atol=1e-12)
    assert p.predict(X, pred_leaf=True).shape == (X.shape[0], 3)

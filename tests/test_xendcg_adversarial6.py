"""objective="xendcg": XE-NDCG (Bruch 2020), LightGBM's ``rank_xendcg``.

The kernel against its NumPy reference and against a transcription of LightGBM's
``RankXENDCG::GetGradientsForOneQuery`` given the same gammas; the exact gradient (the
first term) against finite differences of the loss, the other two terms against the
Neumann series of the softmax hessian they approximate; seeds per query and round
(thread count, Dask shards); labels, weights, OLE refused, save/load, LightGBM export,
the CLI; and, with lightgbm installed, a loose quality check against ``rank_xendcg``.
"""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pytest

import ltrboost
from ltrboost.booster import check_training_data
from ltrboost.dataset import LTRInputError, make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.metrics import get_metric
from ltrboost.objectives.registry import available_objectives, get_objective
from ltrboost.objectives.xendcg import (
    XENDCG,
    xendcg_loss_one_query,
    xendcg_one_query,
    xendcg_reference,
)
from ltrboost.params import ParameterError

FAST = dict(objective="xendcg", n_estimators=8, max_leaf_nodes=7, min_samples_leaf=5)


def _data(n_queries=40, seed=1, docs=(1, 25)):
    X, y, qid = make_ranking(
        n_queries=n_queries, docs_per_query=docs, n_features=6, random_state=seed
    )[:3]
    return X, y, qid


def _grad(obj, s, ds, iteration=0):
    g = np.zeros(ds.n_samples, np.float32)
    h = np.zeros(ds.n_samples, np.float32)
    obj.gradient_hessian(s, ds, g, h, iteration=iteration)
    return g, h


def _one(s, y, gamma, n_terms=3):
    s = np.asarray(s, float)
    g = np.empty(s.size)
    h = np.empty(s.size)
    xendcg_one_query(s, np.exp2(np.asarray(y, float)), np.asarray(gamma, float), n_terms, g, h)
    return g, h


def lightgbm_transcription(s, y, gamma):
    """LightGBM's RankXENDCG for one query, as its source computes it (float32 lambdas
    accumulated term by term, ``1 - rho`` by subtraction, kEpsilon)."""
    s = np.asarray(s, float)
    n = s.size
    if n <= 1:
        return np.zeros(n, np.float32), np.zeros(n, np.float32)
    e = np.exp(s - s.max())
    rho = e / e.sum()
    params = np.exp2(np.floor(np.asarray(y, float))) - gamma
    inv = 1.0 / max(1e-15, params.sum())
    lam = np.zeros(n, np.float32)
    sum_l1 = 0.0
    for i in range(n):
        term = -params[i] * inv + rho[i]
        lam[i] = np.float32(term)
        params[i] = term / (1.0 - rho[i])
        sum_l1 += params[i]
    sum_l2 = 0.0
    for i in range(n):
        term = rho[i] * (sum_l1 - params[i])
        lam[i] += np.float32(term)
        params[i] = term / (1.0 - rho[i])
        sum_l2 += params[i]
    hess = np.zeros(n, np.float32)
    for i in range(n):
        lam[i] += np.float32(rho[i] * (sum_l2 - params[i]))
        hess[i] = np.float32(rho[i] * (1.0 - rho[i]))
    return lam, hess


# --- the maths ----------------------------------------------------------------------


def test_registered_and_listed():
    assert "xendcg" in available_objectives()
    assert isinstance(get_objective("xendcg"), XENDCG)


@pytest.mark.parametrize("weighted", [False, True])
def test_kernel_equals_numpy_reference(weighted):
    X, y, qid = _data()
    w = np.random.default_rng(3).uniform(0.0, 2.0, y.size) if weighted else None
    ds = make_dataset(X, y, qid=qid, sample_weight=w)
    s = np.random.default_rng(0).normal(scale=2.0, size=ds.n_samples)
    s[:4] = 1.5  # ties
    obj = XENDCG(random_state=11)
    for it in (0, 7):
        g, h = _grad(obj, s, ds, it)
        gr, hr = xendcg_reference(s, y, ds.query_offsets, weights=w, random_state=11, iteration=it)
        np.testing.assert_allclose(g, gr, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(h, hr, rtol=1e-5, atol=1e-7)
    # the gammas are the reference's draws: per query and round, uniform on (0, 1)
    gam = obj.gammas(ds, 7)
    assert ((gam > 0) & (gam < 1)).all()
    g0, _ = xendcg_reference(s, y, ds.query_offsets, weights=w, gammas=gam)
    np.testing.assert_allclose(g0, xendcg_reference(s, y, ds.query_offsets, weights=w,
                                                    random_state=11, iteration=7)[0])  # fmt: skip


def test_equals_lightgbm_transcription_given_the_same_gammas():
    rng = np.random.default_rng(5)
    for n in (2, 3, 7, 40):
        for _ in range(5):
            s = rng.normal(scale=3.0, size=n)
            y = rng.integers(0, 5, n).astype(float)
            gamma = rng.uniform(size=n)
            g, h = _one(s, y, gamma)
            lg, lh = lightgbm_transcription(s, y, gamma)
            scale = np.abs(lg).max()
            np.testing.assert_allclose(g, lg, rtol=1e-5, atol=1e-6 * scale)
            np.testing.assert_allclose(h, lh, rtol=1e-5, atol=1e-7)


def test_first_term_is_the_exact_gradient_and_h_the_exact_diagonal():
    rng = np.random.default_rng(2)
    n = 9
    s = rng.normal(size=n)
    y = rng.integers(0, 4, n).astype(float)
    gamma = rng.uniform(size=n)
    pow2 = np.exp2(y)
    g1, h = _one(s, y, gamma, n_terms=1)
    eps = 1e-6
    fd = np.empty(n)
    hd = np.empty(n)
    for k in range(n):
        d = np.zeros(n)
        d[k] = eps
        fd[k] = (
            xendcg_loss_one_query(s + d, pow2, gamma) - xendcg_loss_one_query(s - d, pow2, gamma)
        ) / (2 * eps)
        hd[k] = (_one(s + d, y, gamma, 1)[0][k] - _one(s - d, y, gamma, 1)[0][k]) / (2 * eps)
    np.testing.assert_allclose(g1, fd, atol=1e-8)
    np.testing.assert_allclose(h, hd, atol=1e-7)
    # LightGBM's two other terms are not the gradient: they are the next terms of the
    # Neumann series of the hessian H = D - O (D = diag(h), O_ij = rho_i rho_j)
    rho = np.exp(s - s.max())
    rho /= rho.sum()
    D = np.diag(rho * (1 - rho))
    O = np.outer(rho, rho) - np.diag(rho**2)
    np.testing.assert_allclose(np.diag(rho) - np.outer(rho, rho), D - O, atol=1e-15)
    M = O @ np.linalg.inv(D)
    g3, _ = _one(s, y, gamma, n_terms=3)
    np.testing.assert_allclose(g3, g1 + M @ g1 + M @ M @ g1, rtol=1e-10, atol=1e-12)
    assert np.abs(g3 - fd).max() > 1e-3


def test_query_rules_follow_lightgbm():
    """One document: zero gradient and hessian.  All grades 0: gradients towards the
    random target (LightGBM computes them; phi = 1 - gamma > 0)."""
    g, h = _one([0.3], [2.0], [0.5])
    assert g[0] == 0.0
    assert h[0] == 0.0
    g, h = _one([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.1, 0.5, 0.9])
    assert np.abs(g).max() > 0.01
    lg, _ = lightgbm_transcription(np.zeros(3), np.zeros(3), np.array([0.1, 0.5, 0.9]))
    np.testing.assert_allclose(g, lg, rtol=1e-5)
    # the document with the smallest gamma (largest target share) is pushed up most
    assert np.argmin(g) == 0


def test_a_dominant_document_gives_finite_gradients():
    """A query whose top score leads by hundreds: LightGBM's 1 - rho is 0 there (NaN
    gradients); here the leave-one-out sums keep every term finite."""
    s = np.array([800.0, 0.0, -1.0, 1.0])
    y = np.array([0.0, 2.0, 1.0, 0.0])
    gamma = np.array([0.2, 0.4, 0.6, 0.8])
    with np.errstate(all="ignore"):
        lg, _ = lightgbm_transcription(s, y, gamma)
    assert not np.isfinite(lg).all()
    g, h = _one(s, y, gamma)
    assert np.isfinite(g).all()
    assert np.isfinite(h).all()
    # a lead of 30: ours is the dense Neumann series; LightGBM's loses the dominant
    # document's second term to cancellation
    s = np.array([30.0, 0.0, -1.0, 1.0])
    g, _ = _one(s, y, gamma)
    gr, _ = xendcg_reference(s, y, np.array([0, 4]), gammas=gamma)
    np.testing.assert_allclose(g, gr, rtol=1e-9, atol=1e-12)


def test_weights_multiply_gradients_and_hessians():
    X, y, qid = _data()
    w = np.random.default_rng(1).uniform(0.5, 3.0, y.size)
    s = np.random.default_rng(0).normal(size=y.size)
    obj = XENDCG()
    g0, h0 = _grad(obj, s, make_dataset(X, y, qid=qid))
    g1, h1 = _grad(obj, s, make_dataset(X, y, qid=qid, sample_weight=w))
    np.testing.assert_allclose(g1, g0 * w, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(h1, h0 * w, rtol=1e-6, atol=1e-9)


# --- labels and parameters ----------------------------------------------------------


def test_labels_are_grades_up_to_31():
    X, y, qid = _data(n_queries=5, docs=(4, 4))
    y = y.copy()
    y[6] = 31
    ltrboost.train(dict(FAST, n_estimators=1), make_dataset(X, y, qid=qid))
    y[6] = 32
    with pytest.raises(LTRInputError, match=r"label 32 is too large for objective 'xendcg'") as e:
        ltrboost.train(dict(FAST, n_estimators=1), make_dataset(X, y, qid=qid))
    assert e.value.row == 6
    y[6] = 1.5
    with pytest.raises(ValueError, match="grades"):
        ltrboost.train(dict(FAST, n_estimators=1), make_dataset(X, y, qid=qid))


def test_random_state_is_checked():
    with pytest.raises(ValueError, match="random_state=-1"):
        XENDCG(random_state=-1)


def test_ole_is_refused_newton_and_se_train():
    X, y, qid = _data()
    ds = make_dataset(X, y, qid=qid)
    with pytest.raises(ParameterError, match=r"split_criterion='ole' is not available for "
                       r"objective 'xendcg'.*'newton'"):  # fmt: skip
        ltrboost.train(dict(FAST, split_criterion="ole"), ds)
    with pytest.raises(ParameterError, match="split_criterion='ole'"):
        check_training_data(dict(FAST, split_criterion="ole"), ds)
    for crit in ("newton", "se"):
        m = ltrboost.train(dict(FAST, split_criterion=crit), ds)
        assert sum(int((t["is_leaf"] == 0).sum()) for t in m.trees) > 0


# --- seeds: reproducible, thread- and shard-independent -------------------------------


def test_same_seed_same_model_any_thread_count(tmp_path):
    X, y, qid = _data(n_queries=80, docs=(5, 30))
    ds = make_dataset(X, y, qid=qid)
    files = []
    for k, (seed, threads) in enumerate([(4, 1), (4, 2), (4, 2), (5, 1)]):
        m = ltrboost.train(dict(FAST, random_state=seed, n_threads=threads), ds)
        path = tmp_path / f"m{k}.json"
        m.save_model(path)
        files.append(path.read_bytes().replace(b'"n_threads": 2', b'"n_threads": 1'))
    assert files[0] == files[1] == files[2]
    assert files[3] != files[0]  # the gammas depend on the seed


def test_rounds_draw_new_gammas():
    X, y, qid = _data()
    ds = make_dataset(X, y, qid=qid)
    obj = XENDCG(random_state=1)
    assert not np.array_equal(obj.gammas(ds, 0), obj.gammas(ds, 1))
    np.testing.assert_array_equal(obj.gammas(ds, 3), XENDCG(random_state=1).gammas(ds, 3))


# --- save/load, export, CLI ---------------------------------------------------------


def test_save_load_and_lightgbm_export(tmp_path):
    X, y, qid = _data()
    m = ltrboost.train(dict(FAST, random_state=2), make_dataset(X, y, qid=qid))
    path = tmp_path / "m.json"
    m.save_model(path)
    back = ltrboost.load_model(path)
    assert back.objective == "xendcg"
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    out = tmp_path / "m.txt"
    m.export(out, format="lightgbm")
    text = out.read_text()
    assert "objective=rank_xendcg\n" in text
    assert "[objective: rank_xendcg]" in text
    lgb = pytest.importorskip("lightgbm")
    b = lgb.Booster(model_file=str(out))
    np.testing.assert_array_equal(b.predict(X), m.predict(X))


def test_cli_train(tmp_path, capsys):
    from ltrboost.cli import main

    assert main(["generate", str(tmp_path / "d"), "--n-queries", "30"]) == 0
    model = tmp_path / "m.json"
    argv = ["train", str(tmp_path / "d" / "train.txt"), "--objective", "xendcg",
            "--n-estimators", "3", "--output", str(model), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    assert json.loads(model.read_text())["objective"] == "xendcg"
    capsys.readouterr()
    assert main([*argv, "--split-criterion", "ole"]) != 0
    err = capsys.readouterr().err
    assert "--split-criterion='ole' is not available for objective 'xendcg'" in err
    assert err.count("\n") == 1


def test_dask_equals_local(client):
    da = pytest.importorskip("dask.array")
    from ltrboost import dask as ldask

    X, y, qid = _data(n_queries=30, docs=(5, 15))
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    cut = int(starts[len(starts) // 2])
    c = (cut, len(qid) - cut)
    dd = ldask.DaskData(
        da.from_array(X, chunks=(c, X.shape[1])),
        da.from_array(y, chunks=(c,)),
        da.from_array(qid, chunks=(c,)),
    )
    p = dict(FAST, n_estimators=4, n_threads=1, random_state=3)
    local = ltrboost.train(p, make_dataset(X, y, qid=qid))
    dist = ldask.train(client, p, dd)
    for a, b in zip(local.trees, dist.trees, strict=True):
        np.testing.assert_array_equal(a["feature_idx"], b["feature_idx"])
        np.testing.assert_array_equal(a["bin_threshold"], b["bin_threshold"])
    np.testing.assert_allclose(dist.predict(X), local.predict(X), rtol=1e-9, atol=1e-12)


# --- quality against LightGBM -------------------------------------------------------


def test_quality_close_to_lightgbm_rank_xendcg():
    """Same data and tree settings, one thread: test NDCG@10 within 0.03 of LightGBM's
    rank_xendcg (different gammas and binning, so not equal; not a timing)."""
    lgb = pytest.importorskip("lightgbm")
    X, y, qid = make_ranking(n_queries=300, docs_per_query=(10, 30), n_features=10,
                             random_state=0)[:3]  # fmt: skip
    cut = np.searchsorted(qid, np.unique(qid)[200])
    tr, te = slice(0, cut), slice(cut, None)
    ds = make_dataset(X[tr], y[tr], qid=qid[tr])
    m = ltrboost.train(
        dict(objective="xendcg", n_estimators=60, learning_rate=0.1, max_leaf_nodes=15,
             min_samples_leaf=20, n_threads=1, random_state=0),
        ds,
    )  # fmt: skip
    sizes = np.diff(ds.query_offsets)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = lgb.train(
            dict(objective="rank_xendcg", num_leaves=15, min_data_in_leaf=20,
                 learning_rate=0.1, num_threads=1, verbose=-1, objective_seed=0,
                 deterministic=True),
            lgb.Dataset(X[tr], y[tr], group=sizes),
            num_boost_round=60,
        )  # fmt: skip
    te_ds = make_dataset(X[te], y[te], qid=qid[te])
    ndcg = get_metric("ndcg@10")
    ours = ndcg(m.predict(X[te]), y[te], te_ds.query_offsets)
    theirs = ndcg(b.predict(X[te]), y[te], te_ds.query_offsets)
    untrained = ndcg(np.zeros(y[te].size), y[te], te_ds.query_offsets)
    assert ours > untrained + 0.05
    assert abs(ours - theirs) < 0.03, (ours, theirs)


def test_loss_is_the_cross_entropy_at_the_rounds_gammas():
    X, y, qid = _data()
    w = np.random.default_rng(4).uniform(0.5, 2.0, y.size)
    ds = make_dataset(X, y, qid=qid, sample_weight=w)
    s = np.random.default_rng(0).normal(size=y.size)
    obj = XENDCG(random_state=9)
    gam = obj.gammas(ds, 2)
    qo = ds.query_offsets
    w = np.asarray(ds.weights, dtype=np.float64)  # as the dataset holds them
    want = sum(
        w[a:b].mean() * xendcg_loss_one_query(s[a:b], np.exp2(y[a:b]), gam[a:b])
        for a, b in itertools.pairwise(qo)
    )
    assert obj.loss(s, ds, iteration=2) == pytest.approx(want, rel=1e-12)
    assert obj.loss(s, ds, iteration=2) != obj.loss(s, ds, iteration=3)

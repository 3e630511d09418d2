"""Unbiased LambdaMART's inputs and outputs (a fourth adversarial pass): positions set
on a dataset, position files, the ``.position`` sidecar, resuming, and the bias
estimates against a hand computation of the documented estimator."""

from __future__ import annotations

import numpy as np
import pytest

import ltrboost
from ltrboost.cli import main
from ltrboost.dataset import LTRInputError, make_dataset
from ltrboost.io.letor import dump_svmlight
from ltrboost.params import BoosterParams
from ltrboost.sklearn import Ranker

FAST = ["-q", "--n-estimators", "2"]


def _clicks(n_queries=40, n_docs=5, seed=3):
    """Binary clicks with each query's display positions 1..n_docs shuffled."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * n_docs, 3))
    y = (rng.random(n_queries * n_docs) < 0.3).astype(int)
    qid = np.repeat(np.arange(n_queries), n_docs)
    pos = np.concatenate([rng.permutation(n_docs) + 1 for _ in range(n_queries)])
    return X, y, qid, pos


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("advunbiased4")
    X, y, qid, pos = _clicks()
    train = folder / "clicks.txt"
    dump_svmlight(str(train), X, y, qid=qid)
    (folder / "clicks.txt.position").write_text("".join(f"{p}\n" for p in pos))
    return {"train": str(train), "folder": folder}


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    _out, err = capsys.readouterr()
    return rc, err


# --- positions set on a dataset ----------------------------------------------------------


@pytest.mark.parametrize(
    ("position", "problem"),
    [
        (np.arange(1, 196), "position has shape (195,) but X has 200 rows"),
        (np.zeros(200, dtype=np.int64), "position[0]=0 is < 1"),
        (np.full(200, 2.5), "position[0]=2.5 is not an integer"),
    ],
)
def test_positions_set_on_the_dataset_are_checked(position, problem):
    """``RankingDataset.position`` assigned after ``make_dataset`` (as the CLI does, and
    as the objective's docstring names it) reached the kernel unchecked: too few
    positions crashed the interpreter (a segmentation fault, reading past the array),
    a 0 failed in ``np.bincount`` with "'list' argument must have no negative
    elements"."""
    X, y, qid, _ = _clicks()
    ds = make_dataset(X, y, qid=qid)
    ds.position = position
    params = BoosterParams(n_estimators=1, unbiased=True, max_positions=4)
    with pytest.raises(LTRInputError) as e:
        ltrboost.train(params, ds)
    assert problem in str(e.value)


def test_positions_set_on_the_dataset_as_a_list_train_as_the_array():
    X, y, qid, pos = _clicks()
    params = BoosterParams(n_estimators=2, unbiased=True, max_positions=4)
    ref = ltrboost.train(params, make_dataset(X, y, qid=qid, position=pos))
    ds = make_dataset(X, y, qid=qid)
    ds.position = pos.tolist()
    got = ltrboost.train(params, ds)
    assert got.position_bias == ref.position_bias
    np.testing.assert_array_equal(got.predict(X), ref.predict(X))


# --- the estimates against a hand computation ----------------------------------------------


def _hand_estimate(scores, y, qid, pos, t_plus, t_minus, k, p, sigma=1.0, top=None, w=None):
    """README's estimator written out: every pair (clicked i, unclicked j) of a query
    with i or j in the ``top`` ranks costs |dZ_ij| log(1 + exp(sigma (s_i - s_j))) (NDCG@top
    swap on the ranking by score, ties by row) times (w_i + w_j) / 2; l+ by the click's
    position divided by t-[pos j], l- by the non-click's divided by t+[pos i];
    t = (l_k / l_1) ** (1 / (1 + p))."""
    w = np.ones(y.size) if w is None else w
    lp, lm = np.zeros(k), np.zeros(k)
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        s, lab, at, wq = scores[rows], y[rows], np.minimum(pos[rows], k) - 1, w[rows]
        n_top = rows.size if top is None else top
        rank = np.empty(rows.size, dtype=int)
        rank[np.argsort(-s, kind="stable")] = np.arange(rows.size)
        disc = 1.0 / np.log2(rank + 2.0)
        ideal = np.sort(2.0**lab - 1)[::-1][:n_top]
        idcg = np.sum(ideal / np.log2(np.arange(ideal.size) + 2.0))
        for i in range(rows.size):
            for j in range(rows.size):
                if lab[i] > lab[j] and min(rank[i], rank[j]) < n_top:
                    dz = abs((2.0 ** lab[i] - 2.0 ** lab[j]) * (disc[i] - disc[j])) / idcg
                    cost = dz * np.log1p(np.exp(sigma * (s[i] - s[j]))) * (wq[i] + wq[j]) / 2
                    lp[at[i]] += cost / t_minus[at[j]]
                    lm[at[j]] += cost / t_plus[at[i]]
    return (lp / lp[0]) ** (1 / (1 + p)), (lm / lm[0]) ** (1 / (1 + p))


@pytest.mark.parametrize("setting", ["default", "sigma_top_weights"])
def test_position_bias_is_the_documented_estimator_by_hand(setting):
    """After round 1 the estimates are those of the base scores' pairs (all tied);
    after round 2 those of round 1's scores (``predict``: the trees only) divided by
    round 1's estimates; position 1 is 1 in both."""
    X, y, qid, pos = _clicks(n_docs=6, seed=5)
    k, p, fit, hand = 4, 0.5, {}, {}
    if setting != "default":
        # weights are held as float32: the hand computation takes them so
        w = np.random.default_rng(5).uniform(0.5, 2, y.size).astype(np.float32).astype(float)
        p, fit, hand = 1.0, {"sigma": 2.0, "truncation_level": 2}, {"sigma": 2.0, "top": 2}
        fit_args, hand["w"] = {"sample_weight": w}, w
    else:
        fit_args = {}
    kw = dict(unbiased=True, max_positions=k, position_bias_norm=p, **fit)
    one = Ranker(n_estimators=1, **kw).fit(X, y, qid=qid, position=pos, **fit_args)
    ones = np.ones(k)
    tp, tm = _hand_estimate(np.zeros(y.size), y, qid, pos, ones, ones, k, p, **hand)
    np.testing.assert_allclose(one.position_bias_["t_plus"], tp, rtol=1e-12)
    np.testing.assert_allclose(one.position_bias_["t_minus"], tm, rtol=1e-12)
    two = Ranker(n_estimators=2, **kw).fit(X, y, qid=qid, position=pos, **fit_args)
    tp2, tm2 = _hand_estimate(one.predict(X), y, qid, pos, tp, tm, k, p, **hand)
    np.testing.assert_allclose(two.position_bias_["t_plus"], tp2, rtol=1e-12)
    np.testing.assert_allclose(two.position_bias_["t_minus"], tm2, rtol=1e-12)
    assert two.position_bias_["t_plus"][0] == two.position_bias_["t_minus"][0] == 1.0
    assert not np.allclose(tp2, 1.0)  # the example estimates something


# --- resuming ----------------------------------------------------------------------------


def test_cli_resume_warns_of_a_bias_norm_the_model_left_at_its_default(files, capsys, tmp_path):
    """A model trained with the default ``--position-bias-norm`` does not write it (nor
    ``--max-positions``, ``--unbiased``, ``--ole-top-features`` at theirs); resuming
    with another norm continued the estimates with it without the warning every other
    changed flag gives (the file then recorded the new one)."""
    first = tmp_path / "u.json"
    flags = ["--unbiased", "true", "--max-positions", "4"]
    rc, err = run(["train", files["train"], "-o", first, *FAST, *flags], capsys)
    assert rc == 0, err
    argv = ["train", files["train"], "-o", tmp_path / "m.json", "-q", "--n-estimators", "3"]
    rc, err = run([*argv, *flags, "--position-bias-norm", "1", "--resume", first], capsys)
    assert rc == 0, err
    assert "--position-bias-norm 1.0 (model: 0.5) differ from the model's" in err  # its default
    rc, err = run([*argv, *flags, "--resume", first], capsys)  # the same flags: no word
    assert rc == 0, err
    assert "differ" not in err


# --- the .position sidecar -----------------------------------------------------------------


def test_cli_train_without_unbiased_says_the_position_sidecar_is_not_read(files, capsys, tmp_path):
    """``ltrboost train CLICKS`` (``clicks dataset``'s output, ``--unbiased`` forgotten)
    trained plain LambdaMART on the raw clicks beside ``CLICKS.position`` without a
    word, while Python's positions without ``unbiased`` warn and a LightGBM
    ``.weight`` / ``.init`` sidecar that is not read is named (LightGBM reads a
    ``.position`` file too)."""
    rc, err = run(["train", files["train"], "-o", tmp_path / "m.json", *FAST], capsys)
    assert rc == 0, err
    assert f"warning: {files['train']}.position is not read" in err
    assert "--unbiased true" in err
    assert err.count(".position") == 1
    rc, err = run(
        ["train", files["train"], "-o", tmp_path / "u.json", *FAST, "--unbiased", "true"],
        capsys,
    )
    assert rc == 0, err
    assert "warning" not in err


def test_same_seed_same_model_file_on_any_thread_count(tmp_path):
    """The per-query loss sums are written per row and summed by position in one
    order, so the estimates (and the trees) do not depend on the threads."""
    X, y, qid, pos = _clicks(n_queries=120, n_docs=8, seed=1)
    kw = dict(n_estimators=4, unbiased=True, max_positions=6, subsample=0.8, random_state=7)
    texts = []
    for threads in (1, 2, 3):
        m = Ranker(n_threads=threads, **kw).fit(X, y, qid=qid, position=pos)
        path = tmp_path / f"m{threads}.json"
        m.booster_.save_model(str(path))
        texts.append(path.read_bytes())
    assert texts[0] == texts[1] == texts[2]

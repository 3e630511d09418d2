"""Relevance labels and gains as LightGBM / XGBoost / ranx users bring them: a fourth
adversarial pass over default metrics, ported parameter names and metric names.
Each problem found is one test here."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from ltrboost import Ranker, load_model, train
from ltrboost.dataset import make_dataset
from ltrboost.metrics import get_metric
from test_cli import assert_one_line_error as one_line_error
from test_cli import run


def _data(seed=0, n_queries=6, size=10, top=3, scale=1):
    rng = np.random.default_rng(seed)
    n = n_queries * size
    X = rng.normal(size=(n, 3))
    qid = np.repeat(np.arange(n_queries), size)
    y = rng.integers(0, top + 1, n).astype(np.float64) * scale
    return X, y, qid


# --- the default metric follows lambda_metric ------------------------------------


@pytest.mark.parametrize(("lambda_metric", "metric"), [("map", "map"), ("err", "err@10")])
def test_score_defaults_to_the_metric_training_evaluated(lambda_metric, metric):
    """``Ranker(lambda_metric="map").fit(..., eval_set=...)`` validated and early-stopped
    on MAP (the objective's default metric), but ``score`` (and so GridSearchCV without
    ``scoring=``) reported NDCG@10: another number than the one training optimised and
    logged."""
    X, y, qid = _data()
    model = Ranker(n_estimators=3, lambda_metric=lambda_metric).fit(
        X, y, qid=qid, eval_set=[(X, y, qid)]
    )
    assert list(model.evals_result_["valid_0"]) == [metric]
    offsets = np.arange(0, y.shape[0] + 1, 10)
    expected = get_metric(metric)(model.predict(X), y, offsets)
    assert model.score(X, y, qid=qid) == pytest.approx(expected, abs=1e-12)
    assert model.score(X, y, qid=qid) == model.evals_result_["valid_0"][metric][-1]


def test_score_of_map_lambdamart_takes_labels_above_31():
    """LambdaMART on MAP never uses a gain, so grades above 31 train; ``score`` then
    refused them ("label 36 is too large for the exponential gain") because it measured
    NDCG@10 with the default exponential gain."""
    X, y, qid = _data(scale=12)  # grades 0, 12, 24, 36
    model = Ranker(n_estimators=3, lambda_metric="map").fit(X, y, qid=qid)
    offsets = np.arange(0, y.shape[0] + 1, 10)
    expected = get_metric("map")(model.predict(X), y, offsets)
    assert model.score(X, y, qid=qid) == pytest.approx(expected, abs=1e-12)


def test_score_of_a_loaded_map_model_uses_map(tmp_path):
    """The default follows the model's objective, so a model saved and loaded again
    scores the same way as the one that was trained."""
    X, y, qid = _data()
    model = Ranker(n_estimators=3, lambda_metric="map").fit(X, y, qid=qid)
    path = tmp_path / "m.json"
    model.save_model(path)
    loaded = Ranker.from_booster(load_model(path))
    assert loaded.score(X, y, qid=qid) == model.score(X, y, qid=qid)


def _letor(path: Path, scale: int = 1) -> Path:
    rng = np.random.default_rng(1)
    lines = [
        f"{int(rng.integers(0, 4)) * scale} qid:{q + 1} "
        + " ".join(f"{j + 1}:{rng.normal():.3f}" for j in range(3))
        for q in range(8)
        for _ in range(6)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cv_defaults_to_the_objectives_metric(tmp_path, capsys):
    """``ltrboost cv --lambda-metric map`` reported NDCG@10 per fold while ``train``
    with the same flags evaluates (and names in its summary line) MAP."""
    data = _letor(tmp_path / "d.txt")
    flags = ["--n-estimators", "2", "--folds", "2", "--json", "--lambda-metric", "map"]
    rc, out, err = run(["cv", data, *flags], capsys)
    assert rc == 0, err
    assert list(json.loads(out)["summary"]) == ["map"]


def test_cv_of_map_lambdamart_takes_labels_above_31(tmp_path, capsys):
    """The same mismatch refused grades above 31 in ``cv --lambda-metric map`` (NDCG's
    exponential gain), though nothing cv measures by default then uses a gain."""
    data = _letor(tmp_path / "d.txt", scale=12)
    flags = ["--n-estimators", "2", "--folds", "2", "--json", "--lambda-metric", "map"]
    rc, out, err = run(["cv", data, *flags], capsys)
    assert rc == 0, err
    assert list(json.loads(out)["summary"]) == ["map"]


def test_cv_default_metric_is_still_ndcg10_for_other_objectives(tmp_path, capsys):
    data = _letor(tmp_path / "d.txt")
    rc, out, err = run(["cv", data, "--n-estimators", "2", "--folds", "2", "--json"], capsys)
    assert rc == 0, err
    assert list(json.loads(out)["summary"]) == ["ndcg@10"]


# --- LightGBM's / XGBoost's gain parameters ------------------------------------------


def test_label_gain_hint_says_what_gain_offers():
    """``label_gain=[...]`` (LightGBM's per-grade gains) was answered "label_gain is gain
    here", but ``gain`` takes only "exp" or "linear": passing the list there was
    refused next.  The hint now says which lists those are and how to get any other."""
    X, y, qid = _data()
    ds = make_dataset(X, y, qid=qid)
    with pytest.raises(ValueError, match="label_gain is gain here") as e:
        train({"label_gain": [0, 1, 3, 7], "n_estimators": 1}, ds)
    msg = str(e.value)
    assert "gain='exp'" in msg
    assert "gain='linear'" in msg
    assert "no list of per-grade gains" in msg


def test_ndcg_exp_gain_hint_maps_its_values():
    X, y, qid = _data()
    ds = make_dataset(X, y, qid=qid)
    with pytest.raises(ValueError, match="ndcg_exp_gain=False is gain='linear'"):
        train({"ndcg_exp_gain": False, "n_estimators": 1}, ds)


@pytest.mark.parametrize("name", ["eval_at", "ndcg_eval_at", "ndcg_at", "map_eval_at"])
def test_eval_at_hint(name):
    """LightGBM's ``eval_at=[5]`` (and its aliases) had no hint: the cut-off is part
    of the metric name here."""
    X, y, qid = _data()
    ds = make_dataset(X, y, qid=qid)
    with pytest.raises(ValueError, match="eval_metric='ndcg@5'"):
        train({name: [5], "n_estimators": 1}, ds)


def test_label_gain_workaround_in_the_readme_holds():
    """The README's replacement for a custom ``label_gain``: relabel each grade by its
    gain and train with ``gain='linear'``; NDCG is then LightGBM's NDCG under that
    ``label_gain``."""
    label_gain = np.array([0.0, 0.0, 1.0, 5.0])  # grade 1 worth nothing, grade 3 a lot
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 40).astype(np.float64)
    s = rng.normal(size=40)
    offsets = np.arange(0, 41, 10)
    relabelled = label_gain[y.astype(int)]
    got = get_metric("ndcg@5", gain="linear")(s, relabelled, offsets)

    def ndcg(scores, grades):
        order = np.argsort(-scores, kind="stable")[:5]
        disc = 1 / np.log2(np.arange(2, 7))
        dcg = float(np.sum(label_gain[grades[order].astype(int)] * disc[: order.size]))
        ideal = np.sort(label_gain[grades.astype(int)])[::-1][:5]
        idcg = float(np.sum(ideal * disc[: ideal.size]))
        return dcg / idcg if idcg > 0 else 1.0

    want = np.mean([ndcg(s[a:b], y[a:b]) for a, b in itertools.pairwise(offsets)])
    assert got == pytest.approx(want, abs=1e-12)
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert "label_gain[y]" in readme


# --- other libraries' metric names ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("ndcg@10-", "empty_query_score=0"),
        ("map@5-", "empty_query_score=0"),
        ("ndcg-", "empty_query_score=0"),
        ("pre@5", "'p@5'"),
        ("precision@5", "'p@5'"),
        ("ndcg_burges@10", "'ndcg@10' with gain='exp'"),
        ("ndcg_burges", "'ndcg' with gain='exp'"),
    ],
)
def test_other_libraries_metric_names_get_a_hint(name, hint):
    """XGBoost's ``ndcg@10-`` / ``pre@5`` and ranx's ``precision@5`` / ``ndcg_burges@10``
    were answered with the generic list of forms only."""
    with pytest.raises(ValueError, match="unknown metric") as e:
        get_metric(name)
    assert hint in str(e.value)


def test_metric_name_hint_reaches_the_cli(tmp_path, capsys):
    data = _letor(tmp_path / "d.txt")
    rc, _, err = run(["cv", data, "--n-estimators", "1", "--metric", "pre@3"], capsys)
    one_line_error(rc, err, "pre@3", "'p@3'")


def test_label_gain_workaround_gives_lightgbms_lambdas():
    """The same workaround for training: LambdaMART's NDCG lambdas on ``label_gain[y]``
    with ``gain='linear'`` are LightGBM's lambdarank ones under ``label_gain``."""
    pytest.importorskip("lightgbm")
    from ltrboost.dataset import RankingDataset
    from ltrboost.objectives.lambdamart import LambdaMART
    from objectives.test_lambdamart import _assert_leaf_sums, _leaf_sums_lightgbm, grad_hess

    label_gain = [0, 0, 1, 5, 6]  # non-decreasing, grade 1 worth nothing
    rng = np.random.default_rng(0)
    group = [6, 5, 7, 1, 4]
    n = sum(group)
    y = rng.integers(0, 5, n).astype(np.float64)
    s = rng.normal(size=n)
    leaves, sums = _leaf_sums_lightgbm(y, group, s, label_gain=label_gain)
    off = np.concatenate([[0], np.cumsum(group)]).astype(np.int64)
    relabelled = np.asarray(label_gain, dtype=np.float64)[y.astype(int)]
    data = RankingDataset(X=np.zeros((n, 1)), y=relabelled, query_offsets=off)
    g, h = grad_hess(LambdaMART(gain="linear"), s, data)
    _assert_leaf_sums(leaves, sums, g, h, rtol=2e-3)  # LightGBM tabulates the sigmoid

"""ltrboost.plot: the drawn content matches the model (bars, lines, tree text)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
pd = pytest.importorskip("pandas")

import matplotlib.pyplot as plt  # noqa: E402

from ltrboost import Ranker  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402
from ltrboost.inspection import feature_importance  # noqa: E402
from ltrboost.plot import plot_importance, plot_metric, plot_tree  # noqa: E402

NAMES = [f"feat_{k}" for k in range(6)]


@pytest.fixture(scope="module")
def ranker():
    X, y, qid = make_ranking(n_queries=40, docs_per_query=10, n_features=6, random_state=3)
    df = pd.DataFrame(X, columns=NAMES)
    Xv, yv, qv = make_ranking(
        n_queries=15, docs_per_query=10, n_features=6, first_qid=40, random_state=4
    )
    dv = pd.DataFrame(Xv, columns=NAMES)
    return Ranker(n_estimators=6, max_leaf_nodes=5, random_state=0).fit(
        df, y, qid=qid, eval_set=[(dv, yv, qv), (df, y, qid)], eval_names=["valid", "train"]
    )


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _bars(ax):
    return [p for p in ax.patches if isinstance(p, matplotlib.patches.Rectangle)]


@pytest.mark.parametrize("importance_type", ["gain", "split"])
def test_importance_bars_equal_importances(ranker, importance_type):
    imp = feature_importance(ranker.booster_, importance_type)
    ax = plot_importance(ranker, importance_type=importance_type, max_num_features=None)
    widths = np.array([b.get_width() for b in _bars(ax)])
    labels = [t.get_text() for t in ax.get_yticklabels()]
    used = np.flatnonzero(imp > 0)
    assert len(widths) == len(used)
    # bottom-up: the largest bar is drawn last (on top)
    np.testing.assert_allclose(widths, np.sort(imp[used]))
    for name, w in zip(labels, widths, strict=True):
        assert imp[NAMES.index(name)] == pytest.approx(w)


def test_importance_max_num_features_keeps_the_largest(ranker):
    imp = feature_importance(ranker.booster_, "gain")
    ax = plot_importance(ranker.booster_, max_num_features=2)
    widths = sorted(b.get_width() for b in _bars(ax))
    np.testing.assert_allclose(widths, np.sort(imp)[-2:])
    with pytest.raises(ValueError, match="max_num_features"):
        plot_importance(ranker, max_num_features=0)


def test_importance_draws_on_given_axes(ranker):
    _, ax = plt.subplots()
    assert plot_importance(ranker, ax=ax) is ax


def test_metric_lines_equal_evals_result(ranker):
    res = ranker.evals_result_
    ax = plot_metric(ranker)
    metric = next(iter(res["valid"]))
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    for name in ("valid", "train"):
        np.testing.assert_allclose(lines[name].get_ydata(), res[name][metric])
        np.testing.assert_array_equal(lines[name].get_xdata(), np.arange(1, 7))
    assert ax.get_ylabel() == metric


def test_metric_from_dict_and_choice_of_metric():
    res = {"v": {"a": [0.1, 0.2, 0.3], "b": [3.0, 2.0, 1.0]}}
    ax = plot_metric(res, metric="b")
    (line,) = ax.get_lines()
    np.testing.assert_allclose(line.get_ydata(), [3.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="'c' was not recorded"):
        plot_metric(res, metric="c")
    with pytest.raises(ValueError, match="no validation set named"):
        plot_metric(res, dataset_names=["w"])
    with pytest.raises(ValueError, match="no evaluation results"):
        plot_metric({})


def test_metric_marks_best_iteration():
    X, y, qid = make_ranking(n_queries=30, docs_per_query=8, n_features=4, random_state=0)
    Xv, yv, qv = make_ranking(
        n_queries=10, docs_per_query=8, n_features=4, first_qid=30, random_state=9
    )
    model = Ranker(n_estimators=60, learning_rate=0.5, early_stopping_rounds=2).fit(
        X, y, qid=qid, eval_set=[(Xv, yv, qv)]
    )
    ax = plot_metric(model)
    best = [ln for ln in ax.get_lines() if ln.get_label().startswith("best iteration")]
    assert len(best) == 1
    assert best[0].get_xdata()[0] == model.best_iteration_


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_tree_text_names_root_split_and_leaves(ranker):
    booster = ranker.booster_
    nodes = booster.trees[1]
    ax = plot_tree(ranker, tree_index=1)
    texts = _texts(ax)
    root = nodes[0]
    root_text = f"{NAMES[int(root['feature_idx'])]} <= {float(root['num_threshold']):.4g}"
    assert root_text in texts
    leaves = nodes[nodes["is_leaf"] == 1]
    leaf_texts = sorted(t for t in texts if t.startswith("leaf: "))
    assert leaf_texts == sorted(f"leaf: {float(v):.4g}" for v in leaves["value"])
    splits = [t for t in texts if " <= " in t]
    assert len(splits) == int((nodes["is_leaf"] == 0).sum())
    # every split has a yes and a no edge label
    assert sum(t.startswith("yes") for t in texts) == len(splits)
    assert sum(t.startswith("no") for t in texts) == len(splits)


def test_tree_root_is_above_the_middle_of_its_children(ranker):
    nodes = ranker.booster_.trees[0]
    ax = plot_tree(ranker.booster_, show_info=("gain", "count"))
    boxes = [t for t in ax.texts if t.get_text().startswith(("leaf", "feat_"))]
    root = next(t for t in boxes if t.get_position()[1] == 0)
    root_lines = root.get_text().split("\n")
    assert root_lines[1] == f"gain: {float(nodes[0]['gain']):.4g}"
    assert root_lines[2] == f"count: {int(nodes[0]['count'])}"
    children = [t.get_position()[0] for t in boxes if t.get_position()[1] == -1]
    assert len(children) == 2
    assert root.get_position()[0] == pytest.approx(np.mean(children))


def test_tree_without_names_and_bad_index():
    X, y, qid = make_ranking(n_queries=20, docs_per_query=6, n_features=3, random_state=1)
    model = Ranker(n_estimators=2, max_leaf_nodes=3).fit(X, y, qid=qid)
    root = model.booster_.trees[-1][0]
    ax = plot_tree(model, tree_index=-1)
    assert f"f{int(root['feature_idx'])} <= {float(root['num_threshold']):.4g}" in _texts(ax)
    with pytest.raises(IndexError, match="tree_index"):
        plot_tree(model, tree_index=2)


def test_model_path_and_unfitted_ranker(ranker, tmp_path):
    path = tmp_path / "m.json"
    ranker.save_model(str(path))
    ax = plot_importance(str(path))
    assert len(_bars(ax)) > 0
    with pytest.raises(ValueError, match="not fitted"):
        plot_importance(Ranker())
    with pytest.raises(TypeError, match="fitted Ranker"):
        plot_tree(object())


def test_missing_matplotlib_names_the_extra(ranker, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"ltrboost\[plot\]"):
        plot_importance(ranker)

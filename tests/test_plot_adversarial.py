"""``ltrboost.plot`` on odd models and names an adversarial pass found mishandled:
names drawn as written, zero-importance models, empty records, negative tree
indices, deep trees."""

from __future__ import annotations

import io
import json
import warnings

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
pd = pytest.importorskip("pandas")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.cbook import is_math_text  # noqa: E402

from ltrboost import Ranker  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402
from ltrboost.plot import plot_importance, plot_metric, plot_tree  # noqa: E402

ODD = [r"$\foo$", "price_$_usd_$", "é" * 120, "_hidden"]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def odd_ranker():
    X, y, qid = make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=1)
    df = pd.DataFrame(X, columns=ODD)
    return Ranker(n_estimators=4, max_leaf_nodes=6, min_samples_leaf=1, random_state=0).fit(
        df, y, qid=qid, eval_set=[(df, y, qid)], eval_names=["_valid"]
    )


def _draw(ax) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ax.figure.savefig(io.BytesIO(), format="png")


def test_feature_names_with_dollars_are_drawn_as_written(odd_ranker):
    r"""A name such as ``$\foo$`` was parsed as mathtext: drawing raised
    "ParseFatalException: Unknown symbol: \foo" (and ``price_$_usd_$`` came out as
    subscripted math)."""
    ax = plot_importance(odd_ranker, ignore_zero=False, max_num_features=None)
    _draw(ax)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == len(ODD)
    assert not any(is_math_text(t) for t in labels)
    used = {int(f) for t in odd_ranker.booster_.trees for f in t[t["is_leaf"] == 0]["feature_idx"]}
    for k in range(len(odd_ranker.booster_.trees)):
        ax = plot_tree(odd_ranker, k)
        _draw(ax)
        assert not any(is_math_text(t.get_text()) for t in ax.texts)
    assert used  # the trees did split on the odd names


def test_metric_legend_keeps_a_set_named_with_an_underscore(odd_ranker):
    """A validation set named '_valid' was left out of the legend (matplotlib hides
    labels starting with '_') with a 'No artists with labels' warning."""
    ax = plot_metric(odd_ranker)
    _draw(ax)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["_valid"]
    ax = plot_metric({"$a$": {"m$": [0.1, 0.2]}})
    _draw(ax)
    assert not is_math_text(ax.get_ylabel())
    # a second model on the same axes: both in the legend, as before
    ax = plot_metric({"a": {"m": [0.1, 0.2]}})
    plot_metric({"_b": {"m": [0.3, 0.1]}}, ax=ax)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "_b"]


def test_zero_importances_with_ignore_zero_false_draws_without_warning():
    """All-zero importances (one-leaf trees, or a model of 0 trees) with
    ignore_zero=False set xlim (0, 0): 'Attempting to set identical low and high
    xlims' warning."""
    X, y, qid = make_ranking(n_queries=6, docs_per_query=5, n_features=3, random_state=0)
    model = Ranker(n_estimators=2, min_samples_leaf=1000).fit(X, y, qid=qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ax = plot_importance(model, ignore_zero=False)
    _draw(ax)
    assert [b.get_width() for b in ax.patches] == [0.0, 0.0, 0.0]


def test_metric_with_nothing_to_draw_is_a_value_error(tmp_path):
    """A set without metrics raised StopIteration; dataset_names=[] an IndexError."""
    with pytest.raises(ValueError, match="no metric recorded on 'v'"):
        plot_metric({"v": {}})
    with pytest.raises(ValueError, match="dataset_names"):
        plot_metric({"v": {"m": [1.0]}}, dataset_names=[])


def test_tree_title_names_the_tree_drawn_for_a_negative_index():
    X, y, qid = make_ranking(n_queries=10, docs_per_query=6, n_features=3, random_state=1)
    model = Ranker(n_estimators=3, max_leaf_nodes=3).fit(X, y, qid=qid)
    assert plot_tree(model, -1).get_title().startswith("tree 2 ")


def test_tree_deeper_than_the_recursion_limit(tmp_path):
    """plot_tree placed nodes recursively: a chain of 1500 splits (a model file from
    depth-first growth, or written by another tool) raised RecursionError."""
    X, y, qid = make_ranking(n_queries=6, docs_per_query=5, n_features=2, random_state=0)
    model = Ranker(n_estimators=1, max_leaf_nodes=3).fit(X, y, qid=qid)
    path = tmp_path / "m.json"
    model.save_model(str(path))
    doc = json.loads(path.read_text())
    depth = 1500
    n = 2 * depth + 1  # node 2j splits into leaf 2j+1 and node 2j+2; the last is a leaf
    split = [k % 2 == 0 and k < n - 1 for k in range(n)]
    doc["trees"][0] = {
        "output": 0,
        "value": [0.01 * k for k in range(n)],
        "feature": [0 if s else -1 for s in split],
        "threshold": [float(k) if s else None for k, s in enumerate(split)],
        "bin_threshold": [0] * n,
        "missing_left": [1 if s else 0 for s in split],
        "left": [k + 1 if s else -1 for k, s in enumerate(split)],
        "right": [k + 2 if s else -1 for k, s in enumerate(split)],
        "gain": [1.0 if s else 0.0 for s in split],
        "count": [n - k for k in range(n)],
        "sum_hessians": [float(n - k) for k in range(n)],
        "depth": [(k + 1) // 2 for k in range(n)],
    }
    path.write_text(json.dumps(doc))
    ax = plot_tree(str(path), figsize=(4, 3))
    assert sum(t.get_text().startswith("leaf") for t in ax.texts) == depth + 1

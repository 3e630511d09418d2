"""Model inspection, fifth adversarial pass: ``trees_to_dataframe`` column types that
depended on the trees' shape, ``plot_tree``'s default figure that grew without bound
with the leaves, and feature names too long (or not printable) for a plot."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.datasets import make_ranking

pd = pytest.importorskip("pandas")
matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from ltrboost.plot import plot_importance, plot_tree  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=20, docs_per_query=10, n_features=4, random_state=0)


def _fit(data, **kw):
    X, y, qid = data
    params = {"objective": "mart", "n_estimators": 2, "random_state": 0, **kw}
    with pytest.warns(UserWarning) if kw.get("min_samples_leaf", 0) > 100 else _nothing():
        return Ranker(**params).fit(X, y, qid=qid).booster_


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ------------------------------------------------------------------ trees_to_dataframe
def test_dataframe_dtypes_do_not_depend_on_the_trees(data):
    """A model with splits gave ``feature`` pandas' ``str`` dtype (leaves NaN), a model
    of one-leaf trees an ``object`` column of None, and a model without trees ``object``
    for every column (``tree`` and ``gain`` too): code written against one model's frame
    broke on another's."""
    split = _fit(data, max_leaf_nodes=4, min_samples_leaf=2)
    leaves = _fit(data, min_samples_leaf=150)  # warns: every tree is one leaf
    assert all(t.shape[0] == 1 for t in leaves.trees)
    empty = _fit(data, max_leaf_nodes=4)
    empty.trees, empty.tree_outputs = [], []
    frames = [b.trees_to_dataframe() for b in (split, leaves, empty)]
    dtypes = [f.dtypes.to_dict() for f in frames]
    assert dtypes[1] == dtypes[0]
    assert dtypes[2] == dtypes[0]
    df = frames[0]
    assert df["tree"].dtype == np.int64 and df["gain"].dtype == np.float64
    assert df["is_leaf"].dtype == bool
    # the leaves' feature is missing alike in every frame
    for f in frames[:2]:
        assert f.loc[f["is_leaf"], "feature"].isna().all()
    assert df.loc[~df["is_leaf"], "feature"].notna().all()
    assert len(frames[2]) == 0


# ------------------------------------------------------------------------ plot_tree
def test_plot_tree_default_figure_is_bounded(data):
    """The default figure was 1.6 inches a leaf and 1.4 a level, without bound: a
    700-leaf tree made a 1120 x 49 inch figure, a 112000 x 4900 pixel PNG (2.2 GB of
    raster, ~1 minute to save, refused by PIL as a decompression bomb)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = rng.integers(0, 5, 600).astype(float)
    qid = np.repeat(np.arange(30), 20)
    model = Ranker(
        objective="mart", n_estimators=1, max_leaf_nodes=200, min_samples_leaf=1, random_state=0
    ).fit(X, y, qid=qid)
    assert int(model.booster_.trees[0]["is_leaf"].sum()) == 200
    width, height = plot_tree(model).figure.get_size_inches()
    assert width <= 100 and height <= 30
    # a given figsize is kept as it is
    w, h = plot_tree(model, figsize=(150, 40)).figure.get_size_inches()
    assert (w, h) == (150, 40)


# ---------------------------------------------------------------------- long names
LONG = ["a" * 190 + "_first", "a" * 190 + "_second", "new\nline", "ok"]


@pytest.fixture(scope="module")
def long_names(data):
    X, y, qid = data
    model = Ranker(objective="mart", n_estimators=6, max_leaf_nodes=6, random_state=0)
    model.fit(pd.DataFrame(X, columns=LONG), y, qid=qid)
    assert (model.booster_.feature_importance("split")[:3] > 0).all()  # "ok" is unused
    return model


def test_plot_importance_shortens_long_names_keeping_them_apart(long_names):
    """A 196-character name was drawn whole: the tick label ran off the figure (its
    start cut away), and two names alike but for their end could not be told apart."""
    ax = plot_importance(long_names)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == 3
    assert max(len(s) for s in labels) <= 40
    assert len(set(labels)) == 3
    assert any(s.endswith("_first") for s in labels)
    assert any(s.endswith("_second") for s in labels)
    # a short name is drawn as it is
    ax = plot_importance(long_names, ignore_zero=False)
    assert "ok" in [t.get_text() for t in ax.get_yticklabels()]


def test_plot_importance_quotes_a_name_that_would_not_show(long_names):
    """A name with a newline was drawn over two lines, as two names (the text outputs
    quote it, as Python's repr)."""
    ax = plot_importance(long_names)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "'new\\nline'" in labels
    assert not any("\n" in s for s in labels)


def test_plot_tree_shortens_long_names(long_names):
    """A split box with a 196-character name spread over the boxes of its
    neighbours."""
    ax = plot_tree(long_names, 0)
    texts = [t.get_text() for t in ax.texts if "<=" in t.get_text()]
    assert texts
    for text in texts:
        assert len(text.split(" <= ")[0]) <= 40, text
        assert "\n" not in text.split(" <= ")[0]

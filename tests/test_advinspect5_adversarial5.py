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
    if kw.get("min_samples_leaf", 0) > 100:
        with pytest.warns(UserWarning, match="one leaf"):
            return Ranker(**params).fit(X, y, qid=qid).booster_
    return Ranker(**params).fit(X, y, qid=qid).booster_


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
    assert df["tree"].dtype == np.int64
    assert df["gain"].dtype == np.float64
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
    assert width <= 100
    assert height <= 30
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


def test_max_name_length_none_draws_whole_names_and_bad_values_are_named(long_names):
    ax = plot_importance(long_names, max_name_length=None)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert LONG[0] in labels
    assert LONG[1] in labels
    for bad in (2, 4.5, True, "40"):
        with pytest.raises(ValueError, match="max_name_length="):
            plot_importance(long_names, max_name_length=bad)
        with pytest.raises(ValueError, match="max_name_length="):
            plot_tree(long_names, max_name_length=bad)


# ------------------------------------------------------------------ hand computations
@pytest.mark.parametrize(("criterion", "factor"), [("newton", 1.0), ("se", 2.0)])
def test_gain_is_the_criterion_gain_by_hand(data, criterion, factor):
    """README: a split's gain is G_l^2/(H_l+lam) + G_r^2/(H_r+lam) - G^2/(H+lam) under
    ``newton``, with counts for H under ``se`` (for MART, h = 2: twice newton's)."""
    X, y, qid = data
    booster = (
        Ranker(objective="mart", n_estimators=1, max_leaf_nodes=2, split_criterion=criterion)
        .fit(X, y, qid=qid)
        .booster_
    )
    root = booster.trees[0][0]
    f, threshold = int(root["feature_idx"]), float(root["num_threshold"])
    g = 2.0 * (booster.init_score[0] - y)
    left = X[:, f] <= threshold

    def score(mask):
        return g[mask].sum() ** 2 / (2.0 * mask.sum())

    newton = score(left) + score(~left) - score(np.ones_like(left))
    imp = booster.feature_importance("gain")
    assert imp[f] == pytest.approx(factor * newton, rel=1e-6)
    assert imp.sum() == imp[f]


def test_constant_columns_keep_their_place_in_the_importances(data):
    """Training leaves constant columns out of the search; the importances (and the
    names) are indexed as the model's input columns."""
    X, y, qid = data
    n = len(y)
    wide = np.column_stack([np.ones(n), X[:, :2], np.full(n, 3.0), X[:, 2:]])
    kw = {"objective": "mart", "n_estimators": 4, "max_leaf_nodes": 4, "random_state": 0}
    a = Ranker(**kw).fit(X, y, qid=qid).booster_
    b = Ranker(**kw).fit(wide, y, qid=qid).booster_
    for kind in ("split", "gain"):
        expected = np.insert(np.insert(a.feature_importance(kind), 2, 0.0), 0, 0.0)
        np.testing.assert_allclose(b.feature_importance(kind), expected)
    df = b.trees_to_dataframe()
    assert not df["feature_idx"].isin([0, 3]).any()


# ------------------------------------------------------------------- inspect --json
def test_inspect_json_keys_are_the_documented_ones(data, tmp_path, capsys):
    """README lists the keys of ``inspect --json``; they are pinned here."""
    from test_cli import run

    path = tmp_path / "m.json"
    X, y, qid = data
    Ranker(n_estimators=2, max_leaf_nodes=3).fit(X, y, qid=qid).save_model(str(path))
    rc, out, err = run(["inspect", str(path), "--json", "--dump"], capsys)
    assert rc == 0, err
    import json

    info = json.loads(out)
    assert set(info) == {
        "objective",
        "objective_params",
        "n_iterations",
        "n_trees",
        "n_outputs",
        "best_iteration",
        "n_features",
        "n_features_used",
        "importance_iterations",
        "leaves_per_tree",
        "max_depth",
        "learning_rate",
        "importance_type",
        "top_features",
        "dump",
    }
    assert set(info["leaves_per_tree"]) == {"min", "mean", "max"}
    assert info["top_features"]
    for entry in info["top_features"]:
        assert set(entry) == {"feature", "feature_idx", "split", "gain", "gain_share"}

"""Adversarial pass 3 over the scikit-learn layer, inspection and plots: each test failed
before its fix."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.datasets import make_ranking
from ltrboost.inspection import model_summary

FAST = dict(n_estimators=3, min_samples_leaf=3, max_leaf_nodes=4)


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=0)


@pytest.fixture(scope="module")
def fitted(data):
    X, y, qid = data
    return Ranker(**FAST).fit(X, y, qid=qid)


@pytest.mark.parametrize(
    ("n_estimators", "needle"),
    [
        (2.5, "n_estimators=2.5 must be an integer"),  # was 2 rounds added
        (True, "n_estimators=True must be an integer"),  # was 1
        ("3", "n_estimators='3' must be an integer"),  # was 3
        (0, "n_estimators=0 must be >= 1"),  # was no round, silently
        (-1, "n_estimators=-1 must be >= 1"),  # spoke of "n_estimators=2 ... in total"
        (None, "n_estimators=None is not allowed"),  # was a TypeError from int()
    ],
)
def test_warm_start_checks_n_estimators_as_given(data, fitted, n_estimators, needle):
    X, y, qid = data
    with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
        Ranker(**{**FAST, "n_estimators": n_estimators}).fit(X, y, qid=qid, init_model=fitted)


def test_warm_start_still_adds_n_estimators_rounds(data, fitted):
    X, y, qid = data
    more = Ranker(**{**FAST, "n_estimators": np.int64(2)}).fit(X, y, qid=qid, init_model=fitted)
    assert more.booster_.n_iterations == fitted.booster_.n_iterations + 2


def test_an_eval_name_0_is_kept(data):
    """``eval_names=[0, 1]`` recorded the sets as 'valid_0' and '1': 0 is falsy."""
    X, y, qid = data
    model = Ranker(**FAST).fit(
        X, y, qid=qid, eval_set=[(X, y, qid), (X[:40], y[:40], qid[:40] + 100)], eval_names=[0, 1]
    )
    assert list(model.evals_result_) == ["0", "1"]
    with pytest.raises(ValueError, match="distinct"):  # 0 and '0' are one name
        Ranker(**FAST).fit(X, y, qid=qid, eval_set=[(X, y, qid), (X, y, qid)], eval_names=[0, "0"])


def test_eval_names_none_still_default(data):
    # "" took the default too until pass 11, silently: it is refused now
    # (tests/test_smallfix_adversarial11.py)
    X, y, qid = data
    model = Ranker(**FAST).fit(
        X, y, qid=qid, eval_set=[(X, y, qid), (X, y, qid)], eval_names=[None, None]
    )
    assert list(model.evals_result_) == ["valid_0", "valid_1"]


def test_model_summary_refuses_an_unknown_importance_type(fitted):
    """Any name but 'gain' ranked by split count and reported the unknown name."""
    with pytest.raises(ValueError, match="importance_type='cover'"):
        model_summary(fitted.booster_, importance_type="cover")
    assert model_summary(fitted.booster_, importance_type="split")["importance_type"] == "split"


def test_inspection_docstring_states_the_default_iteration():
    import ltrboost.inspection as inspection

    assert "default: all\ntrees" not in inspection.__doc__
    assert "best_iteration" in inspection.__doc__


def test_importances_of_a_constant_model_are_zero_as_documented(data):
    """README and the docstring said 'normalised to sum to 1'; a model whose trees never
    split has no importance to normalise (LightGBM's are 0 too): now said."""
    import warnings

    import ltrboost.sklearn

    X, y, qid = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the constant-model warning
        model = Ranker(**FAST).fit(X, np.zeros_like(y), qid=qid)
    assert model.feature_importances_.tolist() == [0.0] * X.shape[1]
    assert "all 0" in ltrboost.sklearn.Ranker.__doc__


class TestPlots:
    @pytest.fixture(autouse=True)
    def _agg(self):
        mpl = pytest.importorskip("matplotlib")
        mpl.use("Agg")
        import matplotlib.pyplot as plt

        yield
        plt.close("all")

    @pytest.mark.parametrize("value", [-1, 2.5, True])
    def test_plot_tree_names_a_bad_precision(self, fitted, value):
        """Was "Format specifier missing precision" / "Invalid format specifier"."""
        from ltrboost.plot import plot_tree

        with pytest.raises(ValueError, match="precision="):
            plot_tree(fitted, precision=value)

    @pytest.mark.parametrize("value", [-1, 2.5, True])
    def test_plot_importance_names_a_bad_precision(self, fitted, value):
        from ltrboost.plot import plot_importance

        with pytest.raises(ValueError, match="precision="):
            plot_importance(fitted, precision=value)

    def test_plot_precision_0_and_none_still_draw(self, fitted):
        from ltrboost.plot import plot_importance, plot_tree

        plot_tree(fitted, precision=0).figure.canvas.draw()
        plot_importance(fitted, precision=0).figure.canvas.draw()
        plot_importance(fitted, precision=None).figure.canvas.draw()

    def test_plot_tree_show_info_as_one_string_is_named(self, fitted):
        """``show_info="gain"`` was read letter by letter: "not 'g'"."""
        from ltrboost.plot import plot_tree

        with pytest.raises(ValueError, match=r"show_info='gain' must be a tuple.*\('gain',\)"):
            plot_tree(fitted, show_info="gain")
        plot_tree(fitted, show_info=("gain", "count"))

    def test_plot_tree_takes_a_font_size_name(self, fitted):
        """``fontsize="small"`` was a TypeError at ``fontsize - 1``."""
        from ltrboost.plot import plot_tree

        ax = plot_tree(fitted, fontsize="small")
        ax.figure.canvas.draw()
        sizes = {t.get_fontsize() for t in ax.texts}
        assert len(sizes) == 2
        assert max(sizes) - min(sizes) == 1

    @pytest.mark.parametrize("value", [0, -3, "huge", True, float("nan"), [1]])
    def test_plot_tree_names_a_bad_font_size(self, fitted, value):
        from ltrboost.plot import plot_tree

        with pytest.raises(ValueError, match="fontsize="):
            plot_tree(fitted, fontsize=value)


def test_a_frame_given_to_a_model_fitted_on_an_array_warns(data):
    """scikit-learn warns when a model fitted without feature names gets a DataFrame:
    its columns are taken by position, so reordered columns would score silently wrong."""
    pd = pytest.importorskip("pandas")
    X, y, qid = data
    r = Ranker(**FAST).fit(X, y, qid=qid)
    frame = pd.DataFrame(X, columns=[f"f{k}" for k in range(X.shape[1])])
    with pytest.warns(UserWarning, match="X has feature names, but Ranker was fitted without"):
        scores = r.predict(frame)
    np.testing.assert_array_equal(scores, r.predict(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r.predict(X)  # an array: no warning
        Ranker(**FAST).fit(frame, y, qid=qid).predict(frame)  # names both times

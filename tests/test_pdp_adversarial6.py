"""Partial dependence of the ranking score, and scikit-learn's checks' wording.

``sklearn.inspection.partial_dependence`` (and ``PartialDependenceDisplay``) refused a
fitted ``Ranker``: "'estimator' must be a fitted regressor or classifier".  Tagging the
ranker a regressor would make scikit-learn treat its scores as regression predictions
elsewhere (``StackingRegressor`` and ``VotingRegressor`` accept it and score it by R²;
``check_estimator`` feeds it real-valued, negative targets), so ltrboost has its own
helpers, :func:`ltrboost.inspection.partial_dependence` and
:func:`ltrboost.plot.plot_partial_dependence`, which run scikit-learn's brute method
over a regressor view of the model.  Checked here against a hand-computed brute-force
partial dependence.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from ltrboost import Ranker
from ltrboost.datasets import make_ranking

pd = pytest.importorskip("pandas")

FAST = dict(n_estimators=6, min_samples_leaf=3, max_leaf_nodes=6, random_state=0)


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=12, docs_per_query=8, n_features=4, random_state=0)


@pytest.fixture(scope="module")
def ranker(data):
    X, y, qid = data
    return Ranker(**FAST).fit(X, y, qid=qid)


@pytest.fixture(scope="module")
def named(data):
    X, y, qid = data
    df = pd.DataFrame(X, columns=["bm25", "pagerank", "age", "clicks"])
    return Ranker(**FAST).fit(df.assign(qid=qid), y), df, qid


def brute_force(predict, X, feature, grid):
    """Partial dependence by hand: set ``feature`` to each grid value for every row,
    predict, average (and keep every row's curve)."""
    individual = np.empty((X.shape[0], len(grid)))
    for k, v in enumerate(grid):
        Xv = np.array(X, dtype=np.float64, copy=True)
        Xv[:, feature] = v
        individual[:, k] = predict(Xv)
    return individual.mean(axis=0), individual


def test_ranker_average_curve_is_the_brute_force_one(data, ranker):
    from ltrboost.inspection import partial_dependence

    X = data[0]
    res = partial_dependence(ranker, X, [1], grid_resolution=7)
    grid = res["grid_values"][0]
    assert grid.shape == (7,)
    average, _ = brute_force(ranker.predict, X, 1, grid)
    assert res["average"].shape == (1, 7)
    np.testing.assert_allclose(res["average"][0], average, rtol=0, atol=1e-12)
    # not flat: the model splits on the feature, so the curve says something
    assert np.ptp(average) > 0


@pytest.mark.parametrize("kind", ["individual", "both"])
def test_ice_lines_are_each_rows_curve(data, ranker, kind):
    from ltrboost.inspection import partial_dependence

    X = data[0]
    res = partial_dependence(ranker, X, [0], kind=kind, grid_resolution=5)
    grid = res["grid_values"][0]
    average, individual = brute_force(ranker.predict, X, 0, grid)
    assert res["individual"].shape == (1, X.shape[0], 5)
    np.testing.assert_allclose(res["individual"][0], individual, rtol=0, atol=1e-12)
    if kind == "both":
        np.testing.assert_allclose(res["average"][0], average, rtol=0, atol=1e-12)
    else:
        assert "average" not in res


def test_booster_and_model_file_give_the_ranker_curve(data, ranker, tmp_path):
    from ltrboost.inspection import partial_dependence

    X = data[0]
    path = tmp_path / "m.json"
    ranker.save_model(path)
    want = partial_dependence(ranker, X, [2], grid_resolution=6)["average"]
    for model in (ranker.booster_, path, str(path)):
        got = partial_dependence(model, X, [2], grid_resolution=6)["average"]
        np.testing.assert_array_equal(got, want)


def test_two_way_partial_dependence(data, ranker):
    from ltrboost.inspection import partial_dependence

    X = data[0]
    res = partial_dependence(ranker, X, [0, 1], grid_resolution=4)
    g0, g1 = res["grid_values"]
    assert res["average"].shape == (1, len(g0), len(g1))
    for a, v0 in enumerate(g0):
        for b, v1 in enumerate(g1):
            Xv = X.copy()
            Xv[:, 0], Xv[:, 1] = v0, v1
            assert res["average"][0, a, b] == pytest.approx(ranker.predict(Xv).mean(), abs=1e-12)


def test_iteration_uses_the_first_rounds(data, ranker):
    from ltrboost.inspection import partial_dependence

    X = data[0]
    res = partial_dependence(ranker, X, [1], grid_resolution=5, iteration=2)
    average, _ = brute_force(lambda Z: ranker.predict(Z, iteration=2), X, 1, res["grid_values"][0])
    np.testing.assert_allclose(res["average"][0], average, rtol=0, atol=1e-12)
    full = partial_dependence(ranker, X, [1], grid_resolution=5)["average"][0]
    assert not np.allclose(full, res["average"][0])


def test_dataframe_by_name_with_qid_column_and_other_order(named):
    """Features by name; the ``qid`` column (not a feature) is left out; the columns
    may come in another order than at fit, as ``predict`` takes them by name."""
    from ltrboost.inspection import partial_dependence

    model, df, qid = named
    frame = df[["clicks", "age", "pagerank", "bm25"]].assign(qid=qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no feature-name warning per grid point
        res = partial_dependence(model, frame, ["pagerank"], grid_resolution=5)
    grid = res["grid_values"][0]
    average, _ = brute_force(model.booster_.predict, df.to_numpy(), 1, grid)
    np.testing.assert_allclose(res["average"][0], average, rtol=0, atol=1e-12)
    # by the model's names on a plain array too (its columns in the model's order)
    res2 = partial_dependence(model, df.to_numpy(), ["pagerank"], grid_resolution=5)
    np.testing.assert_allclose(res2["average"][0], average, rtol=0, atol=1e-12)


def test_integer_columns_are_taken_as_numbers(data):
    """scikit-learn refuses integer columns (the grid would be rounded into them); a
    ranker's features often are counts: they are converted to float."""
    from ltrboost.inspection import partial_dependence

    X, y, qid = data
    Xi = np.round(X * 10).astype(np.int64)
    model = Ranker(**FAST).fit(Xi, y, qid=qid)
    res = partial_dependence(model, Xi, [0], grid_resolution=5)
    average, _ = brute_force(model.predict, Xi, 0, res["grid_values"][0])
    np.testing.assert_allclose(res["average"][0], average, rtol=0, atol=1e-12)
    frame = pd.DataFrame(Xi, columns=list("abcd"))
    named = Ranker(**FAST).fit(frame, y, qid=qid)
    res = partial_dependence(named, frame, ["a"], grid_resolution=5)
    np.testing.assert_allclose(res["average"][0], average, rtol=0, atol=1e-12)
    assert frame["a"].dtype == np.int64  # the caller's frame is left as it was


def test_errors_name_the_problem(data, ranker, named):
    from ltrboost.inspection import partial_dependence

    X = data[0]
    with pytest.raises(NotFittedError):
        partial_dependence(Ranker(), X, [0])
    with pytest.raises(TypeError, match="fitted Ranker, a Booster or a model file path"):
        partial_dependence(object(), X, [0])
    with pytest.raises(ValueError, match=r"X has 3 features.*trained with 4"):
        partial_dependence(ranker, X[:, :3], [0])
    model, df, qid = named
    with pytest.raises(ValueError, match=r"'qid'.*query ids"):
        partial_dependence(model, df.assign(qid=qid), ["qid"])
    with pytest.raises(ValueError, match=r"missing columns \['age'\]"):
        partial_dependence(model, df.drop(columns="age"), ["bm25"])


def test_sklearn_still_refuses_the_ranker_itself(data, ranker):
    """What the README says: the estimator is no regressor (see the module docstring)."""
    from sklearn.base import is_regressor
    from sklearn.inspection import partial_dependence

    assert not is_regressor(ranker)
    with pytest.raises(ValueError, match="regressor or classifier"):
        partial_dependence(ranker, data[0], [0])


# ----------------------------------------------------------------------------- plot
def test_plot_partial_dependence_draws_the_curve(data, ranker):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ltrboost.inspection import partial_dependence
    from ltrboost.plot import plot_partial_dependence

    X = data[0]
    try:
        fig, ax = plt.subplots()
        display = plot_partial_dependence(ranker, X, [1], kind="both", ax=ax, grid_resolution=6)
        want = partial_dependence(ranker, X, [1], kind="both", grid_resolution=6)
        lines = display.axes_[0, 0].get_lines()
        assert len(lines) == X.shape[0] + 1  # an ICE line per row, and the average
        (average_line,) = [line for line in lines if line.get_label() == "average"]
        np.testing.assert_allclose(average_line.get_ydata(), want["average"][0])
        assert display.figure_ is fig
        # a new figure when ax is omitted, not the current axes
        current = plt.figure().gca()
        display = plot_partial_dependence(ranker.booster_, X, [0, 2], grid_resolution=4)
        assert display.figure_ is not current.figure
        assert len(current.lines) == 0
        assert display.axes_.shape == (1, 2)
    finally:
        plt.close("all")


def test_sparse_x_and_unnamed_model_names(data, ranker):
    """A sparse X gave a one-value grid (scikit-learn's grid is for dense columns);
    an unnamed model's features are ``f<k>`` here as in its other outputs."""
    sparse = pytest.importorskip("scipy.sparse")
    from ltrboost.inspection import partial_dependence

    X = data[0]
    want = partial_dependence(ranker, X, [1], grid_resolution=5)
    got = partial_dependence(ranker, sparse.csr_matrix(X), ["f1"], grid_resolution=5)
    np.testing.assert_array_equal(got["grid_values"][0], want["grid_values"][0])
    np.testing.assert_allclose(got["average"], want["average"], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="'zz' is not a feature of the model"):
        partial_dependence(ranker, X, ["zz"])


# ------------------------------------------------- scikit-learn's checks, wording only
def _one_query_ranker():
    """A Ranker whose ``fit`` puts all rows in one query when given none: scikit-learn's
    checks call ``fit(X, y)``, which a ranker refuses for want of queries."""

    class OneQueryRanker(Ranker):
        def fit(self, X, y, **kw):
            if kw.get("qid") is None and kw.get("group") is None:
                kw["qid"] = np.zeros(np.shape(X)[0])
            return super().fit(X, y, **kw)

    return OneQueryRanker(n_estimators=3, min_samples_leaf=2)


@pytest.mark.parametrize(
    "check",
    ["check_complex_data", "check_fit2d_predict1d", "check_n_features_in_after_fitting"],
)
def test_estimator_checks_that_failed_on_wording(check):
    """Each failed on the words of a clear error alone: "Complex data not supported",
    "Reshape your data" (with how), "X has 1 features, but Ranker is expecting 4
    features as input" (``score`` said first that it had no queries)."""
    from sklearn.utils import estimator_checks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one-leaf trees on the checks' tiny data
        getattr(estimator_checks, check)("OneQueryRanker", _one_query_ranker())


def test_wording_keeps_the_old_words(ranker, data):
    from ltrboost import LTRInputError

    X, y, qid = data
    with pytest.raises(LTRInputError, match=r"X is complex \(complex128\)"):
        Ranker(**FAST).fit(X + 1j, y, qid=qid)
    with pytest.raises(LTRInputError, match=r"got shape \(4,\)\. Reshape.*reshape\(1, -1\)"):
        ranker.predict(X[0])
    with pytest.raises(ValueError, match="trained with 4"):
        ranker.score(X[:, :3], y, qid=qid)

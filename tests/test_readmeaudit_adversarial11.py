"""README promises tried with hostile but realistic inputs (readmeaudit, pass 11).

* Partial dependence on data with missing values.  README: NaN in ``X`` is a missing
  value, and ``ltrboost.inspection.partial_dependence`` / ``plot_partial_dependence``
  set each grid value in every row and average the scores.  scikit-learn builds the
  grid from the column's percentiles, NaN included: one NaN in a feature of more
  distinct values than ``grid_resolution`` made every grid value NaN, so the curve was
  one flat number at NaN positions and the plot empty, silently (LETOR 3.0's NULL
  features, ``--missing nan`` data).  The grid now comes from the values the feature
  takes; a feature that is missing in every row is refused naming it.
* A custom ``eval_metric`` that returns a Python int beyond float64 (``10**400``)
  raised a bare ``OverflowError: int too large to convert to float`` that named
  nothing; README: anything but a finite real number is refused naming the metric.
"""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.datasets import make_ranking

pd = pytest.importorskip("pandas")
pytest.importorskip("sklearn")

FAST = dict(n_estimators=6, min_samples_leaf=3, max_leaf_nodes=6, random_state=0)


@pytest.fixture(scope="module")
def with_missing():
    """12 queries x 8 documents, feature 0 missing in every 5th row (of >100 values)."""
    X, y, qid = make_ranking(n_queries=12, docs_per_query=8, n_features=4, random_state=0)
    X = X.copy()
    X[::5, 0] = np.nan
    return X, y, qid, Ranker(**FAST).fit(X, y, qid=qid)


def brute_force(model, X, feature, grid):
    """The mean score of ``X`` with ``feature`` set to each value of ``grid``."""
    out = []
    for v in grid:
        Xv = np.array(X, dtype=np.float64, copy=True)
        Xv[:, feature] = v
        out.append(model.predict(Xv).mean())
    return np.array(out)


def test_partial_dependence_grid_leaves_missing_values_out(with_missing):
    from ltrboost.inspection import partial_dependence

    X, _, _, model = with_missing
    res = partial_dependence(model, X, [0], grid_resolution=10)
    grid = res["grid_values"][0]
    assert grid.shape == (10,)
    assert np.isfinite(grid).all()  # was: ten NaN
    # scikit-learn's grid of the rows where the feature has a value
    present = partial_dependence(model, X[~np.isnan(X[:, 0])], [0], grid_resolution=10)
    np.testing.assert_array_equal(grid, present["grid_values"][0])
    np.testing.assert_allclose(res["average"][0], brute_force(model, X, 0, grid))
    assert np.ptp(res["average"][0]) > 0  # a curve, not one number


def test_partial_dependence_low_cardinality_feature_with_missing(with_missing):
    """Fewer distinct values than the grid: the grid is those values, NaN not among them."""
    from ltrboost.inspection import partial_dependence

    X, y, qid, _ = with_missing
    X = X.copy()
    X[:, 1] = np.where(np.arange(len(X)) % 3 == 0, np.nan, np.arange(len(X)) % 2)
    model = Ranker(**FAST).fit(X, y, qid=qid)
    res = partial_dependence(model, X, [1])
    np.testing.assert_array_equal(res["grid_values"][0], [0.0, 1.0])


def test_partial_dependence_by_name_on_a_frame_with_missing(with_missing):
    from ltrboost.inspection import partial_dependence

    X, y, qid, _ = with_missing
    df = pd.DataFrame(X, columns=["bm25", "pagerank", "age", "clicks"])
    df["bm25"] = df["bm25"].astype("Float64")  # a nullable column: <NA> for the NaN
    model = Ranker(**FAST).fit(df, y, qid=qid)
    res = partial_dependence(model, df.assign(qid=qid), ["bm25", "age"], grid_resolution=5)
    assert np.isfinite(res["grid_values"][0]).all()
    assert np.isfinite(res["average"]).all()
    assert res["average"].shape == (1, 5, 5)


def test_partial_dependence_custom_values_still_win(with_missing):
    from ltrboost.inspection import partial_dependence

    X, _, _, model = with_missing
    res = partial_dependence(model, X, [0], custom_values={0: [0.0, 1.0]})
    np.testing.assert_array_equal(res["grid_values"][0], [0.0, 1.0])


def test_partial_dependence_of_a_feature_missing_everywhere_is_refused(with_missing):
    from ltrboost.inspection import partial_dependence

    X, _, _, model = with_missing
    X = X.copy()
    X[:, 2] = np.nan
    with pytest.raises(ValueError, match=r"f2.*missing \(NaN\) in every row"):
        partial_dependence(model, X, ["f2"])


def test_plot_partial_dependence_draws_a_curve_with_missing(with_missing):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ltrboost.plot import plot_partial_dependence

    X, _, _, model = with_missing
    display = plot_partial_dependence(model, X, [0, (0, 1)], grid_resolution=8)
    xs = display.lines_[0, 0].get_xdata()
    assert len(xs) == 8
    assert np.isfinite(xs).all()  # was: eight NaN, nothing drawn
    assert np.isfinite(display.pd_results[1]["average"]).all()
    plt.close("all")


def test_custom_metric_returning_an_int_beyond_float_is_named():
    X, y, qid = make_ranking(n_queries=10, docs_per_query=6, n_features=3, random_state=0)

    def huge(scores, labels, query_offsets):
        return 10**400

    # (its 401 digits are no longer printed: tests/test_smallfix_adversarial11.py)
    with pytest.raises(ValueError, match=r"eval_metric 'huge' returned an int beyond.*finite"):
        Ranker(n_estimators=2, eval_metric=[huge]).fit(X, y, qid=qid, eval_set=[(X, y, qid)])


def test_shared_query_warning_compares_uint64_and_int64_ids_exactly():
    """64-bit hashed query ids (uint64, above 2**63) against int64 ids: NumPy compared
    them as float64, so distinct ids 2**64 - 30 ... collapsed, matched -30 ... and the
    warning said a set of 10 queries shared 19 ids with the training set."""
    import warnings

    from ltrboost import SharedQueriesWarning

    X, y, qid = make_ranking(n_queries=20, docs_per_query=6, n_features=3, random_state=0)
    Xv, yv, qv = make_ranking(
        n_queries=10, docs_per_query=6, n_features=3, random_state=1, first_qid=100
    )
    hashed = qid.astype(np.uint64) + np.uint64(2**64 - 30)  # 2**64 - 30 .. 2**64 - 11
    other = (qv - 130).astype(np.int64)  # -30 .. -21: other numbers
    with warnings.catch_warnings():
        warnings.simplefilter("error", SharedQueriesWarning)
        Ranker(n_estimators=2).fit(X, y, qid=hashed, eval_set=[(Xv, yv, other)])
    shared = np.where(qv == 100, 3, qv).astype(np.int64)  # qid 3 is a training query
    with pytest.warns(
        SharedQueriesWarning, match=r"shares 1 query ids .*of its 10; e\.g\. qid 3\)"
    ):
        Ranker(n_estimators=2).fit(X, y, qid=qid.astype(np.uint64), eval_set=[(Xv, yv, shared)])

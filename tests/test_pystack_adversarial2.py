"""The Python data stack under odd usage (a second adversarial pass, stop 33): custom
metrics, the scikit-learn attributes of an unfitted Ranker, ``eval_set`` given without
its list, and the plots' integer arguments."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import Ranker, make_dataset, train

pd = pytest.importorskip("pandas")

FAST = dict(n_estimators=4, max_leaf_nodes=4, min_samples_leaf=3, random_state=0)


def test_a_custom_metric_cannot_change_the_scores_or_labels_it_is_given(frames):
    """A metric that normalised its scores in place changed the validation scores that
    training keeps adding trees to (every later round's metrics and early stopping
    moved, silently), and one that clipped its labels changed the caller's data."""
    df, y, qid, dv, yv, qv = frames

    def center(scores, labels, query_offsets):
        scores -= scores.mean()
        return 0.0

    with pytest.raises(ValueError, match="eval_metric 'center' wrote into its arguments"):
        Ranker(**FAST, eval_metric=["ndcg@10", center]).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])

    def clip(scores, labels, query_offsets):
        np.minimum(labels, 1, out=labels)
        return 0.0

    valid = make_dataset(dv, yv, qid=qv)
    before = valid.y.copy()
    with pytest.raises(ValueError, match="read-only"):
        train(dict(FAST, eval_metric=[clip]), make_dataset(df, y, qid=qid), [("v", valid)])
    np.testing.assert_array_equal(valid.y, before)

    def reads(scores, labels, query_offsets):  # reading them is what a metric does
        return float(np.corrcoef(scores, labels)[0, 1]) if scores.std() > 0 else 0.0

    r = Ranker(**FAST, eval_metric=["ndcg@10", reads]).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    plain = Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    assert r.evals_result_["valid_0"]["ndcg@10"] == plain.evals_result_["valid_0"]["ndcg@10"]
    assert r.score(dv, yv, qid=qv, metric=reads) == r.evals_result_["valid_0"]["reads"][-1]


@pytest.mark.parametrize("attribute", ["best_iteration_", "evals_result_", "position_bias_"])
def test_an_unfitted_rankers_fitted_attributes_say_it_is_not_fitted(attribute):
    """``Ranker().evals_result_`` raised "'Ranker' object has no attribute 'booster_'"
    (an attribute the user never named) instead of the NotFittedError that
    ``feature_importances_`` and ``predict`` raise; ``hasattr`` stays False."""
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="not fitted yet"):
        getattr(Ranker(), attribute)
    assert not hasattr(Ranker(), attribute)


@pytest.mark.parametrize(
    ("given", "needle"),
    [
        ("tuple", r"eval_set\[0\] is a DataFrame, not a tuple \(X, y, qid\)"),
        ("frame", "eval_set must be a list of \\(X, y, qid\\) tuples, not a DataFrame"),
        ("names", "eval_names='valid' must be a list of names"),
    ],
)
def test_an_eval_set_not_wrapped_in_a_list_is_named(frames, given, needle):
    """``eval_set=(X_valid, y_valid, qid_valid)`` (the list forgotten) said "eval_set[0]:
    X must be 2-D, got shape ()" (the first "set" was X, read as its column names); a
    DataFrame alone raised pandas' "truth value of a DataFrame is ambiguous"; a string
    of names was taken letter by letter."""
    df, y, qid, dv, yv, qv = frames
    kwargs = {
        "tuple": dict(eval_set=(dv, yv, qv)),
        "frame": dict(eval_set=dv),
        "names": dict(eval_set=[(dv, yv, qv)], eval_names="valid"),
    }[given]
    with pytest.raises(ValueError, match=needle):
        Ranker(**FAST).fit(df, y, qid=qid, **kwargs)
    # a tuple of sets, or any iterable of them, is still a list of sets
    r = Ranker(**FAST).fit(df, y, qid=qid, eval_set=((dv, yv, qv),), eval_names=("v",))
    assert list(r.evals_result_) == ["v"]


def test_dask_ranker_fit_keeps_the_rankers_promises(frames, caplog):
    """``DaskRanker`` takes the Ranker's parameters (README) but its ``fit`` ignored
    ``verbose`` (nothing logged), crashed with an IndexError on too few ``eval_names``,
    kept a stale ``feature_names_in_`` after a refit on an array, and its ``score``
    (and ``to_local().score``) ignored fit's ``eval_metric``; ``sklearn.base.clone``
    failed deep-copying the client."""
    import logging

    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    from ltrboost.dask import DaskRanker

    df, y, qid, dv, yv, qv = frames
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    try:
        X = dd.from_pandas(df.assign(qid=qid), npartitions=1)
        y_d = dd.from_pandas(pd.Series(y), npartitions=1)
        V = dd.from_pandas(dv.assign(qid=qv), npartitions=1)
        yv_d = dd.from_pandas(pd.Series(yv), npartitions=1)
        caplog.set_level(logging.INFO, logger="ltrboost")
        r = DaskRanker(client=client, verbose=2, **FAST).fit(
            X, y_d, qid="qid", eval_set=[(V, yv_d)], eval_metric="map"
        )
        assert any("valid_0's map" in rec.getMessage() for rec in caplog.records)
        assert list(r.feature_names_in_) == list(df.columns)
        assert r.score(dv, yv, qid=qv) == r.score(dv, yv, qid=qv, metric="map")
        assert r.to_local().score(dv, yv, qid=qv) == r.score(dv, yv, qid=qv)
        with pytest.raises(ValueError, match="eval_names has 1 names but eval_set has 2"):
            r.fit(X, y_d, qid="qid", eval_set=[(V, yv_d), (V, yv_d)], eval_names=["a"])
        Xa = da.from_array(df.to_numpy(), chunks=(len(df), 5))
        r.fit(Xa, da.from_array(y, chunks=len(y)), qid=da.from_array(qid, chunks=len(y)))
        assert not hasattr(r, "feature_names_in_")
        # a model file given as a pathlib.Path (an AttributeError before)
        import pathlib
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "m.json"
            r.save_model(str(path))
            more = DaskRanker(client=client, **FAST).fit(X, y_d, qid="qid", init_model=path)
            assert more.booster_.n_iterations == 2 * FAST["n_estimators"]
        # clone (GridSearchCV, cross_val_score) deep-copied the Client: a TypeError
        from sklearn.base import clone

        copy = clone(r)
        assert copy.client is client
        assert not hasattr(copy, "booster_")
        assert copy.get_params()["verbose"] == 2
    finally:
        client.close()
        cluster.close()


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        ("tree_float", r"tree_index=1\.9 must be an integer"),
        ("tree_bool", "tree_index=True must be an integer"),
        ("tree_str", "tree_index='1' must be an integer"),
        ("top_float", r"max_num_features=2\.5 must be an integer"),
        ("flat_dict", r"evals_result\['v'\] is a list"),
        ("names_str", "dataset_names='valid_0' must be a list"),
        ("ax_array", "ax must be one matplotlib Axes, not ndarray"),
    ],
)
def test_plot_arguments_of_the_wrong_kind_are_named(frames, call, needle):
    """``plot_tree(tree_index=1.9)`` (or True, or "1") drew tree 1 and
    ``max_num_features=2.5`` drew 2 bars, silently, where ``predict(iteration=)``
    refuses such values; a flat ``{set: [values]}`` dict raised "list indices must be
    integers" from inside ``plot_metric``, and the array of ``plt.subplots(1, 2)`` as
    ``ax`` "'numpy.ndarray' object has no attribute ..."."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ltrboost.plot import plot_importance, plot_metric, plot_tree

    df, y, qid, dv, yv, qv = frames
    r = Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    run = {
        "tree_float": lambda: plot_tree(r, tree_index=1.9),
        "tree_bool": lambda: plot_tree(r, tree_index=True),
        "tree_str": lambda: plot_tree(r, tree_index="1"),
        "top_float": lambda: plot_importance(r, max_num_features=2.5),
        "flat_dict": lambda: plot_metric({"v": [0.1, 0.2]}),
        "names_str": lambda: plot_metric(r, dataset_names="valid_0"),
        "ax_array": lambda: plot_tree(r, ax=plt.subplots(1, 2)[1]),
    }[call]
    try:
        with pytest.raises(TypeError if call == "ax_array" else ValueError, match=needle):
            run()
        assert plot_tree(r, tree_index=np.int64(-1)).get_title() == "tree 3 (output 0)"
        assert len(plot_importance(r, max_num_features=np.int64(2)).patches) == 2
    finally:
        plt.close("all")


def test_a_custom_objective_on_dask_sees_each_workers_queries(frames):
    """docs/custom.md said the function gets the whole training set; on Dask it runs on
    every worker with that worker's shard (whole queries), which the docs now say: a
    per-query loss gives the local model."""
    distributed = pytest.importorskip("distributed")
    dd = pytest.importorskip("dask.dataframe")
    from ltrboost.dask import DaskRanker

    df, y, qid, *_ = frames

    def squared_error(scores, labels, query_offsets):
        return 2.0 * (scores - labels), np.full_like(scores, 2.0)

    def on_a_shard(scores, labels, query_offsets):  # each worker: its 15 queries
        assert len(scores) == 150
        assert query_offsets.shape == (16,)
        return squared_error(scores, labels, query_offsets)

    frame = df.assign(qid=qid, y=y)
    X = dd.from_pandas(frame, npartitions=2, sort=False)
    assert [len(p) for p in X.partitions] == [150, 150]  # 10 documents a query: whole
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    try:
        features = X[[*df.columns, "qid"]]
        d = DaskRanker(client=client, objective=on_a_shard, **FAST)
        d.fit(features, X["y"], qid="qid")
    finally:
        client.close()
        cluster.close()
    local = Ranker(objective=squared_error, **FAST).fit(df, y, qid=qid)
    np.testing.assert_allclose(d.to_local().predict(df), local.predict(df), rtol=1e-9)


def test_a_callback_returning_something_else_than_a_bool_is_named(frames):
    """A callback that returned a truthy value by accident (the dict it stored, a
    path it wrote) stopped training after round 1, silently: a 4-round model of 1
    round.  None and bools (NumPy's too) keep their meaning."""
    df, y, qid, dv, yv, qv = frames
    history = {}

    def keep(env):
        return history.setdefault(env.iteration, env.evaluation)

    with pytest.raises(TypeError, match=r"callbacks\[1\] \(keep\) returned dict; a callback"):
        Ranker(**FAST).fit(
            df, y, qid=qid, eval_set=[(dv, yv, qv)], callbacks=[lambda env: None, keep]
        )
    stop_at_2 = Ranker(**FAST).fit(
        df, y, qid=qid, callbacks=[lambda env: np.bool_(env.iteration == 1)]
    )
    assert stop_at_2.booster_.n_iterations == 2
    goes_on = Ranker(**FAST).fit(df, y, qid=qid, callbacks=[lambda env: False])
    assert goes_on.booster_.n_iterations == FAST["n_estimators"]


def test_dask_ranker_predict_takes_columns_as_ranker_predict(frames):
    """``DaskRanker.predict`` read a frame's columns with ``np.asarray(df[names])``: a
    missing column was a KeyError at compute time, a category read as its values,
    ``Float64`` with ``<NA>`` a float() TypeError; NumPy or pandas input was an
    AttributeError ('numblocks') and ``score`` on dask data an AttributeError from
    inside.  Columns that are no feature (qid, labels) stay unused, as before."""
    distributed = pytest.importorskip("distributed")
    dd = pytest.importorskip("dask.dataframe")
    da = pytest.importorskip("dask.array")
    from ltrboost.dask import DaskRanker
    from ltrboost.dataset import LTRInputError

    df, y, qid, dv, yv, qv = frames
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    try:
        X = dd.from_pandas(df.assign(qid=qid), npartitions=2, sort=False)
        r = DaskRanker(client=client, **FAST).fit(
            X, dd.from_pandas(pd.Series(y), npartitions=2, sort=False), qid="qid"
        )
        local = r.to_local().predict(dv)

        def lazy(frame):
            return r.predict(dd.from_pandas(frame, npartitions=2, sort=False))

        np.testing.assert_array_equal(lazy(dv[dv.columns[::-1]]).compute(), local)
        with pytest.raises(LTRInputError, match=r"missing columns \['e'\]"):
            lazy(dv.drop(columns="e"))
        np.testing.assert_array_equal(lazy(dv.assign(z=1.0)).compute(), local)  # unused
        with pytest.raises(LTRInputError, match="column 'a' has dtype category"):
            lazy(dv.assign(a=pd.Categorical(np.arange(len(dv)) % 3)))
        nullable = dv.assign(a=pd.array([1.5, None] * (len(dv) // 2), dtype="Float64"))
        np.testing.assert_array_equal(lazy(nullable).compute(), r.to_local().predict(nullable))
        with pytest.raises(TypeError, match=r"use to_local\(\)\.predict\(X\)"):
            r.predict(dv)
        with pytest.raises(LTRInputError, match="X must be 2-D"):
            r.predict(da.from_array(dv.to_numpy()[:, 0], chunks=50))
        with pytest.raises(TypeError, match="X must be a dask DataFrame or a dask array, not"):
            r.fit(dv.assign(qid=qv), yv)  # pandas: it said "give qid= (a dask array ...)"
        # dask collections are computed, then scored as in memory
        dy = dd.from_pandas(pd.Series(y), npartitions=2, sort=False)
        assert r.score(X, dy) == r.to_local().score(X.compute(), y)
        assert r.score(dv, yv, qid=qv) == r.to_local().score(dv, yv, qid=qv)
    finally:
        client.close()
        cluster.close()


class _PolarsLike:
    """What ltrboost reads of a polars DataFrame: ``columns`` and ``to_arrow()`` (polars
    itself is no dependency; the real one is tested below when installed)."""

    __module__ = "polars.dataframe.frame"

    def __init__(self, frame):
        self._frame = frame
        self.columns = list(frame.columns)
        self.dtypes = ["Float64"] * len(self.columns)  # polars dtypes: no NumPy .kind

    def to_arrow(self):
        pa = pytest.importorskip("pyarrow")
        return pa.Table.from_pandas(self._frame, preserve_index=False)

    def to_numpy(self, *args, **kwargs):  # polars' takes no dtype=/na_value=
        raise TypeError("to_numpy() got an unexpected keyword argument 'dtype'")


def test_a_polars_frame_is_taken_by_column_name(frames):
    """A polars DataFrame was refused as "column 'a' has dtype Float64; features must
    be numeric" (its dtypes are no NumPy dtypes), a reordered one raised "'DataFrame'
    object has no attribute 'iloc'" and one with a qid column "drop() got an
    unexpected keyword argument 'columns'"; it is read through Arrow, as a pyarrow
    Table is."""
    pytest.importorskip("pyarrow")
    from ltrboost.metrics import make_scorer

    df, y, qid, dv, yv, qv = frames
    r = Ranker(**FAST).fit(_PolarsLike(df), y, qid=qid)
    assert list(r.feature_names_in_) == list(df.columns)
    expected = Ranker(**FAST).fit(df, y, qid=qid).predict(dv)
    np.testing.assert_array_equal(r.predict(_PolarsLike(dv[dv.columns[::-1]])), expected)
    with_qid = _PolarsLike(dv.assign(qid=qv))
    assert r.score(with_qid, yv) == r.score(dv, yv, qid=qv)
    assert make_scorer("ndcg@10")(r, with_qid, yv) == r.score(dv, yv, qid=qv)
    r2 = Ranker(**FAST).fit(_PolarsLike(df.assign(qid=qid)), y, eval_set=[(with_qid, yv)])
    np.testing.assert_array_equal(r2.predict(dv), expected)


def test_a_real_polars_frame_and_lazy_frame():
    pl = pytest.importorskip("polars")
    from ltrboost.dataset import LTRInputError
    from ltrboost.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=20, docs_per_query=10, n_features=3, random_state=0)
    frame = pl.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2]})
    r = Ranker(**FAST).fit(frame.with_columns(qid=pl.Series(qid)), y)
    np.testing.assert_array_equal(r.predict(frame.select(["c", "b", "a"])), r.predict(X))
    with pytest.raises(LTRInputError, match=r"polars LazyFrame: collect\(\) it"):
        r.predict(frame.lazy())


def test_fit_and_score_without_queries_name_every_way_to_give_them(frames):
    """Behind a Pipeline step that returns an array (a scaler), the qid column is gone
    and fit said only "give exactly one of qid= ... or group=", naming neither the
    column nor metadata routing."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from ltrboost.dataset import LTRInputError

    df, y, qid, *_ = frames
    pipe = make_pipeline(StandardScaler(), Ranker(**FAST))
    with pytest.raises(LTRInputError, match=r"fit needs the query of every row.*'qid' column"):
        pipe.fit(df.assign(qid=qid), y)
    r = Ranker(**FAST).fit(df, y, qid=qid)
    with pytest.raises(LTRInputError, match=r"set_score_request\(qid=True\)"):
        r.score(df, y)


@pytest.mark.parametrize(
    ("group", "needle"),
    [
        (pd.array([150, None, 150], dtype="Int64"), r"group\[1\]=nan"),
        ([100.0, 100.5, 99.5], r"group\[1\]=100\.5 is not a whole number"),
    ],
)
def test_a_group_size_that_is_no_whole_number_is_named(frames, group, needle):
    """``group=`` as an ``Int64`` array with ``<NA>`` (or a size of 100.5) said only
    "group must hold whole numbers", naming no entry."""
    from ltrboost.dataset import LTRInputError

    df, y, *_ = frames
    with pytest.raises(LTRInputError, match=needle):
        Ranker(**FAST).fit(df, y, group=group)


def test_a_custom_objective_without_curvature_is_named(frames):
    """``hess`` of zeros (a loss whose second derivative was forgotten) trained a model
    whose every leaf is ``-G / (0 + 0) -> 0`` and that never splits: constant scores,
    silently.  With ``l2_regularization > 0`` and ``min_sum_hessian_in_leaf=0`` the
    leaves are gradient steps ``-G / l2``, which learn, so that stays allowed."""
    df, y, qid, *_ = frames

    def first_order(scores, labels, query_offsets):
        return 2.0 * (scores - labels), np.zeros_like(scores)

    with pytest.raises(ValueError, match=r"\(round 1\): hess is 0 for every document"):
        Ranker(**FAST, objective=first_order).fit(df, y, qid=qid)
    steps = Ranker(
        **FAST, objective=first_order, l2_regularization=100.0, min_sum_hessian_in_leaf=0.0
    ).fit(df, y, qid=qid)
    assert np.unique(steps.predict(df)).size > 1

    def nothing_left(scores, labels, query_offsets):  # no gradient either: nothing to do
        return np.zeros_like(scores), np.zeros_like(scores)

    assert not Ranker(**FAST, objective=nothing_left).fit(df, y, qid=qid).predict(df).any()


def test_plot_metric_takes_the_metric_as_eval_metric_was_given(frames):
    """``eval_metric="NDCG@05"`` is recorded as ``"ndcg@5"``; ``plot_metric(model,
    metric="NDCG@05")`` said it "was not recorded"."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ltrboost.plot import plot_metric

    df, y, qid, dv, yv, qv = frames
    r = Ranker(**FAST, eval_metric="NDCG@05,map").fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    try:
        ax = plot_metric(r, metric="NDCG@05")
        assert ax.get_ylabel() == "ndcg@5"
        np.testing.assert_array_equal(
            ax.get_lines()[0].get_ydata(), r.evals_result_["valid_0"]["ndcg@5"]
        )
        with pytest.raises(ValueError, match="metric 'err' was not recorded"):
            plot_metric(r, metric="err")
    finally:
        plt.close("all")


def test_train_names_params_of_another_type(frames):
    """``ltrboost.train(None, data)`` raised "'NoneType' object has no attribute
    'validate'"."""
    df, y, qid, *_ = frames
    with pytest.raises(TypeError, match="params must be a dict of training parameters"):
        train(None, make_dataset(df, y, qid=qid))


def test_init_model_history_goes_on_under_the_same_set_name(frames):
    """What README now says of ``init_model`` and ``evals_result``: a set of the same
    name continues the model's history (and early stopping counts from its best round);
    another name starts a fresh one."""
    df, y, qid, dv, yv, qv = frames
    first = Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    same = Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)], init_model=first)
    other = Ranker(**FAST).fit(
        df, y, qid=qid, eval_set=[(dv, yv, qv)], eval_names=["new"], init_model=first
    )
    history = first.evals_result_["valid_0"]["ndcg@10"]
    assert same.evals_result_["valid_0"]["ndcg@10"][: len(history)] == history
    assert len(same.evals_result_["valid_0"]["ndcg@10"]) == 2 * FAST["n_estimators"]
    # another name: the model's rounds are evaluated on the set (the same data here)
    assert other.evals_result_["new"]["ndcg@10"][: len(history)] == history
    assert len(other.evals_result_["new"]["ndcg@10"]) == 2 * FAST["n_estimators"]


def test_init_model_on_other_validation_data_is_not_cut_back_by_the_old_history(frames):
    """Continuing with early stopping on another validation set under the same name
    took the history recorded on the first set as this set's: its best round, one of
    the old model's, then made the continued model predict with fewer trees than the
    model it continued.  The old rounds are now evaluated on the new set, and early
    stopping looks at the new rounds only (as LightGBM and XGBoost)."""
    from ltrboost.metrics import get_metric

    df, y, qid, dv, yv, qv = frames
    kw = dict(FAST, n_estimators=8, early_stopping_rounds=2)
    first = Ranker(**kw).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    done = first.booster_.n_iterations
    # the training data as the other validation set
    more = Ranker(**kw).fit(df, y, qid=qid, eval_set=[(df, y, qid)], init_model=first)
    assert more.best_iteration_ > done
    history = more.evals_result_["valid_0"]["ndcg@10"]
    assert len(history) == more.booster_.n_iterations
    offsets = make_dataset(df, y, qid=qid).query_offsets  # qid sorted: rows in order
    for it in range(1, done + 1):
        scores = first.booster_.predict(df.to_numpy(), iteration=it)
        assert history[it - 1] == get_metric("ndcg@10")(scores, y, offsets)


def test_score_refuses_sample_weight_it_cannot_apply_to_a_callable_metric(frames):
    """``score(..., sample_weight=w)`` with a callable metric (given, or fit's first
    ``eval_metric``) returned the unweighted value, silently."""
    df, y, qid, dv, yv, qv = frames

    def mean_label_of_top(scores, labels, query_offsets):
        return float(labels[np.argmax(scores)])

    r = Ranker(**FAST, eval_metric=[mean_label_of_top]).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    w = np.linspace(0.1, 1.0, len(yv))
    with pytest.raises(ValueError, match="sample_weight cannot weight the metric"):
        r.score(dv, yv, qid=qv, sample_weight=w)
    with pytest.raises(ValueError, match="'mean_label_of_top'"):
        Ranker(**FAST).fit(df, y, qid=qid).score(
            dv, yv, qid=qv, sample_weight=w, metric=mean_label_of_top
        )
    assert r.score(dv, yv, qid=qv, sample_weight=w, metric="ndcg@10") != r.score(
        dv, yv, qid=qv, metric="ndcg@10"
    )


def test_a_custom_objective_writing_into_its_arguments_is_named(frames):
    """A custom objective computing in place (``scores -= labels``) failed with NumPy's
    bare "assignment destination is read-only", naming neither the objective nor the
    round (a custom metric doing so is named the same way)."""
    df, y, qid, *_ = frames

    def in_place(scores, labels, query_offsets):
        scores -= labels
        return 2.0 * scores, np.full_like(scores, 2.0)

    with pytest.raises(ValueError, match=r"objective 'custom:in_place' \(round 1\) wrote into"):
        Ranker(**FAST, objective=in_place).fit(df, y, qid=qid)

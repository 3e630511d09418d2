"""Python-API promises a second adversarial pass found broken: column names survive
every route into a model, bad input is named where it entered, and a custom objective's
errors read like the engine's."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import Ranker, make_dataset, train
from ltrboost.dataset import LTRInputError
from ltrboost.datasets import make_ranking

pd = pytest.importorskip("pandas")

FAST = dict(n_estimators=3, max_leaf_nodes=6, min_samples_leaf=3, random_state=0)
COLS = ["a", "b", "c", "d", "e"]


def test_continuing_a_named_model_on_an_array_keeps_the_names(frames):
    df, y, qid, dv, *_ = frames
    init = Ranker(**FAST).fit(df, y, qid=qid)
    more = Ranker(**FAST).fit(df.to_numpy(), y, qid=qid, init_model=init)
    assert more.booster_.feature_names == COLS
    assert list(more.feature_names_in_) == COLS
    # a reordered frame is still taken by name, not silently by position
    np.testing.assert_array_equal(more.predict(dv[COLS[::-1]]), more.predict(dv))
    low = train(
        dict(FAST, n_estimators=5),
        make_dataset(df.to_numpy(), y, qid=qid),
        init_model=init.booster_,
    )
    assert low.feature_names == COLS


@pytest.mark.parametrize(
    "columns", [["a", "a", "c", "d", "e"], [0, "0", 1, 2, 3]], ids=["same", "same-as-str"]
)
def test_duplicate_column_names_are_refused_at_fit(frames, columns):
    df, y, qid, *_ = frames
    dup = pd.DataFrame(df.to_numpy(), columns=columns)
    with pytest.raises(LTRInputError, match=r"duplicate feature names \['(a|0)'\]"):
        Ranker(**FAST).fit(dup, y, qid=qid)


def test_a_pyarrow_table_is_taken_by_column_name(frames):
    pa = pytest.importorskip("pyarrow")
    from ltrboost.metrics import make_scorer

    df, y, qid, dv, yv, qv = frames
    by_frame = Ranker(**FAST).fit(df, y, qid=qid)
    table = pa.Table.from_pandas(df, preserve_index=False)
    by_table = Ranker(**FAST).fit(table, y, qid=qid)
    assert list(by_table.feature_names_in_) == COLS
    np.testing.assert_array_equal(by_table.predict(dv), by_frame.predict(dv))
    # predict takes a reordered table's columns by name (they were taken by position)
    reordered = pa.Table.from_pandas(dv[COLS[::-1]], preserve_index=False)
    np.testing.assert_array_equal(by_frame.predict(reordered), by_frame.predict(dv))
    with pytest.raises(LTRInputError, match=r"unknown columns \['z'\]"):
        by_frame.predict(reordered.rename_columns(["z", "d", "c", "b", "a"]))
    # a qid column, nulls as missing values, a string column named
    with_qid = pa.Table.from_pandas(dv.assign(qid=qv), preserve_index=False)
    assert by_frame.score(with_qid, yv) == by_frame.score(dv, yv, qid=qv)
    assert make_scorer("ndcg@10")(by_frame, with_qid, yv) == by_frame.score(dv, yv, qid=qv)
    fit = Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(with_qid, yv)])
    assert fit.evals_result_["valid_0"]["ndcg@10"][-1] == by_frame.score(dv, yv, qid=qv)
    holes = table.set_column(0, "a", pa.array([None] * len(df), type=pa.float64()))
    np.testing.assert_array_equal(by_frame.predict(holes), by_frame.predict(df.assign(a=np.nan)))
    text = table.set_column(1, "b", pa.array(["x"] * len(df)))
    with pytest.raises(LTRInputError, match="column 'b' has dtype string"):
        Ranker(**FAST).fit(text, y, qid=qid)


def test_bad_rows_of_an_eval_set_name_the_set(frames):
    df, y, qid, dv, yv, qv = frames
    bad_y = np.where(np.arange(len(yv)) == 3, np.nan, yv)
    with pytest.raises(LTRInputError, match=r"^eval_set\[1\]: row 3: label y\[3\]=nan") as e:
        Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv, yv, qv), (dv, bad_y, qv)])
    assert e.value.row == 3
    bad_x = dv.to_numpy().copy()
    bad_x[7, 2] = np.inf
    with pytest.raises(LTRInputError, match=r"^eval_set\[0\]: row 7: .* is inf"):
        Ranker(**FAST).fit(df.to_numpy(), y, qid=qid, eval_set=[(bad_x, yv, qv)])
    with pytest.raises(LTRInputError, match=r"^eval_set\[0\]: qid has shape \(3,\)"):
        Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv, yv, qv[:3])])
    with pytest.raises(ValueError, match=r"^eval_set\[0\]: each eval_set entry must be"):
        Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv, yv)])


def test_an_infinite_value_of_a_dataframe_names_its_column(frames):
    df, y, qid, *_ = frames
    bad = df.copy()
    bad.iloc[4, 3] = -np.inf
    with pytest.raises(LTRInputError, match=r"^row 4: feature 3 \(column 'd'\) is -inf") as e:
        Ranker(**FAST).fit(bad, y, qid=qid)
    assert e.value.row == 4
    fitted = Ranker(**FAST).fit(df, y, qid=qid)
    # the model's numbering of the features, whatever the frame's column order
    with pytest.raises(LTRInputError, match=r"feature 3 \(column 'd'\) is -inf"):
        fitted.predict(bad[COLS[::-1]])


def test_from_booster_sets_the_feature_names_as_fit_does(frames):
    df, y, qid, *_ = frames
    fitted = Ranker(**FAST).fit(df, y, qid=qid)
    again = Ranker.from_booster(fitted.booster_)
    assert list(again.feature_names_in_) == COLS
    assert not hasattr(
        Ranker.from_booster(Ranker(**FAST).fit(df.to_numpy(), y, qid=qid).booster_),
        "feature_names_in_",
    )


def test_sample_weight_of_the_wrong_shape_is_named(frames):
    df, y, qid, *_ = frames
    n = len(y)
    with pytest.raises(LTRInputError, match=r"sample_weight must be 1-D .*got shape \(300, 2\)"):
        Ranker(**FAST).fit(df, y, qid=qid, sample_weight=np.ones((n, 2)))
    w = np.ones(n)
    w[5] = np.nan
    with pytest.raises(LTRInputError, match=r"^row 5: sample_weight\[5\]=nan") as e:
        Ranker(**FAST).fit(df, y, qid=qid, sample_weight=w)
    assert e.value.row == 5
    column = Ranker(**FAST).fit(df, y, qid=qid, sample_weight=np.ones((n, 1)))
    flat = Ranker(**FAST).fit(df, y, qid=qid, sample_weight=np.ones(n))
    np.testing.assert_array_equal(column.predict(df), flat.predict(df))


def test_a_value_that_is_not_a_number_is_named_by_row(frames):
    df, y, qid, *_ = frames
    X = df.to_numpy()
    labels = y.astype(object)
    labels[7] = "high"
    with pytest.raises(LTRInputError, match=r"^row 7: y\[7\]='high' is not a number"):
        Ranker(**FAST).fit(X, labels, qid=qid)
    text = X.astype(object)
    text[4, 2] = "n/a"
    with pytest.raises(LTRInputError, match=r"^row 4: feature 2 is 'n/a': not a number"):
        Ranker(**FAST).fit(text, y, qid=qid)
    weights = np.ones(len(y), dtype=object)
    weights[3] = "x"
    with pytest.raises(LTRInputError, match=r"^row 3: sample_weight\[3\]='x' is not a number"):
        Ranker(**FAST).fit(X, y, qid=qid, sample_weight=weights)
    with pytest.raises(LTRInputError, match=r"^row 1: X has 1 values in this row but 2 in row 0"):
        Ranker(**FAST).fit([[1.0, 2.0], [3.0], [4.0, 5.0]], [0, 1, 0], qid=[0, 0, 0])


def test_a_custom_metric_must_return_a_number(frames):
    df, y, qid, dv, yv, qv = frames

    def nothing(scores, labels, offsets):
        return None

    with pytest.raises(
        ValueError,
        match="eval_metric 'nothing' returned None; a metric must return a finite real number",
    ):
        Ranker(**FAST, eval_metric=nothing).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])


def test_a_nan_metric_is_refused_when_it_drives_early_stopping(frames):
    df, y, qid, dv, yv, qv = frames
    calls = []

    def rising(scores, labels, offsets):  # NaN once, then better every round
        calls.append(1)
        return np.nan if len(calls) == 1 else float(len(calls))

    # the NaN round was kept as the best, so training stopped at round 4 and the
    # model predicted with its first tree only; a metric must return a finite number
    with pytest.raises(ValueError, match=r"eval_metric 'rising' returned nan"):
        Ranker(**dict(FAST, n_estimators=10), eval_metric=rising, early_stopping_rounds=3).fit(
            df, y, qid=qid, eval_set=[(dv, yv, qv)]
        )


@pytest.mark.parametrize(
    "qid",
    [
        np.array(["2020-01-01", "NaT", "2020-01-02", "NaT"], dtype="datetime64[D]"),
        np.array([1.0, np.nan, 1.0, 2.0], dtype=object),
        np.array([1, pd.NA, 1, 2], dtype=object),
        np.array(["a", pd.NaT, "a", "b"], dtype=object),
    ],
    ids=["datetime-NaT", "object-NaN", "object-NA", "object-NaT"],
)
def test_a_missing_query_id_of_any_kind_is_named(qid):
    # NaT rows were grouped as one query "NaT"; an object NaN split query 1.0 in two
    with pytest.raises(LTRInputError, match=r"^row 1: qid is .*every row needs a query id"):
        make_dataset(np.zeros((4, 2)), [0, 1, 0, 1], qid=qid)


def test_object_query_ids_still_group_as_numbers_or_strings():
    for qid in (
        np.array([1.0, 2, 1, np.int64(2)], dtype=object),
        np.array(list("baba"), dtype=object),
    ):
        ds = make_dataset(np.zeros((4, 2)), [0, 1, 0, 1], qid=qid)
        np.testing.assert_array_equal(ds.query_offsets, [0, 2, 4])
        np.testing.assert_array_equal(ds.order, [0, 2, 1, 3])


def test_train_names_the_expected_types(frames):
    df, y, qid, *_ = frames
    ds = make_dataset(df, y, qid=qid)
    with pytest.raises(TypeError, match="train_set must be a RankingDataset"):
        train({"n_estimators": 2}, df.to_numpy())
    with pytest.raises(TypeError, match=r"valid_sets\[0\] must be a pair \(name, RankingDataset\)"):
        train({"n_estimators": 2}, ds, [ds])
    with pytest.raises(TypeError, match="init_model must be a Booster"):
        train({"n_estimators": 2}, ds, init_model="model.json")


def test_predict_refuses_a_fractional_iteration(frames):
    df, y, qid, *_ = frames
    booster = Ranker(**FAST).fit(df, y, qid=qid).booster_
    with pytest.raises(ValueError, match=r"iteration=1.5 must be an integer"):
        booster.predict(df, iteration=1.5)  # was truncated to 1 silently
    with pytest.raises(ValueError, match=r"iteration=1.5 must be an integer"):
        booster.feature_importance("split", iteration=1.5)
    np.testing.assert_array_equal(
        booster.predict(df, iteration=np.int64(2)), booster.predict(df, iteration=2)
    )


def test_an_eval_metric_of_another_type_is_named(frames):
    df, y, qid, *_ = frames
    with pytest.raises(ValueError, match="eval_metric=5 must be a metric name"):
        Ranker(**FAST, eval_metric=5).fit(df, y, qid=qid)  # was "'int' object is not iterable"
    r = Ranker(**FAST, eval_metric=("map", "ndcg@3")).fit(df, y, qid=qid)
    assert r.score(df, y, qid=qid) == r.score(df, y, qid=qid, metric="map")


def test_fit_refuses_an_unknown_importance_type(frames):
    df, y, qid, *_ = frames
    # it was accepted, and the error came only when feature_importances_ was read
    with pytest.raises(ValueError, match="importance_type='cover' is not one of"):
        Ranker(**FAST, importance_type="cover").fit(df, y, qid=qid)


def test_score_names_a_callable_metric_that_returns_no_number(frames):
    df, y, qid, *_ = frames
    r = Ranker(**FAST).fit(df, y, qid=qid)

    def nothing(scores, labels, offsets):
        return None

    with pytest.raises(
        ValueError,
        match="eval_metric 'nothing' returned None; a metric must return a finite real number",
    ):
        r.score(df, y, qid=qid, metric=nothing)


def test_a_loaded_model_trained_with_a_callable_metric_scores_and_refits(frames, tmp_path):
    from ltrboost import load_model

    df, y, qid, dv, yv, qv = frames

    def half(scores, labels, offsets):
        return 0.5

    r = Ranker(**FAST, eval_metric=[half, "map"]).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    r.save_model(str(tmp_path / "m.json"))
    again = Ranker.from_booster(load_model(str(tmp_path / "m.json")))
    # the file keeps the callable's name, 'half', which score and fit refused as unknown
    assert again.eval_metric == ["map"]
    assert again.score(dv, yv, qid=qv) == r.score(dv, yv, qid=qv, metric="map")
    again.fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    assert list(again.evals_result_["valid_0"]) == ["map"]
    only = Ranker(**FAST, eval_metric=half).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    assert Ranker.from_booster(only.booster_).eval_metric is None


def test_make_dataset_checks_the_feature_names_it_is_given(frames, tmp_path):
    from ltrboost import load_model

    df, y, qid, *_ = frames
    X = df.to_numpy()
    # a wrong count or non-string names trained, and the saved model did not load
    with pytest.raises(LTRInputError, match="feature_names has 1 names but X has 5 features"):
        make_dataset(X, y, qid=qid, feature_names=["a"])
    ds = make_dataset(X, y, qid=qid, feature_names=[0, 1, 2, 3, 4])
    assert ds.feature_names == ["0", "1", "2", "3", "4"]
    train(dict(FAST), ds).save_model(str(tmp_path / "m.json"))
    assert load_model(str(tmp_path / "m.json")).feature_names == ["0", "1", "2", "3", "4"]


def test_the_kernels_get_c_ordered_writeable_arrays(frames):
    """The kernels are compiled (warmed up, cached) for C-ordered writeable arrays; a
    pandas Series (read-only under copy-on-write), a DataFrame (whose to_numpy() is
    Fortran-ordered) or a strided or read-only float32 X compiled a variant of each
    kernel on its first fit or predict."""
    df, y, qid, *_ = frames
    labels = pd.Series(y)
    assert not np.asarray(labels).flags.writeable  # pandas' copy-on-write
    X32 = np.asfortranarray(df.to_numpy(dtype=np.float32))
    ro = df.to_numpy(dtype=np.float32)
    ro.flags.writeable = False
    for X in (df, X32, ro, df.to_numpy()[:, ::-1]):
        ds = make_dataset(X, labels, qid=qid)
        assert ds.X.flags.c_contiguous
        assert ds.X.flags.writeable
        assert ds.y.flags.c_contiguous
        assert ds.y.flags.writeable
    assert make_dataset(X32, y, qid=qid).X.dtype == np.float32
    assert ro.flags.writeable is False  # the caller's array is left as it was
    a = Ranker(**FAST).fit(df, labels, qid=qid)
    b = Ranker(**FAST).fit(np.ascontiguousarray(df.to_numpy()), y, qid=qid)
    assert [t.tobytes() for t in a.booster_.trees] == [t.tobytes() for t in b.booster_.trees]


def test_a_label_the_validation_metrics_refuse_names_the_set(frames):
    df, y, qid, dv, yv, qv = frames
    big = yv.copy()
    big[5] = 40  # mart trains on it; NDCG's exponential gain refuses it
    with pytest.raises(LTRInputError, match=r"^validation set 'vali': row 5: label 40") as e:
        Ranker(**FAST, objective="mart").fit(
            df, y, qid=qid, eval_set=[(dv, big, qv)], eval_names=["vali"]
        )
    assert e.value.row == 5


def test_predict_and_score_run_on_the_estimators_n_threads(frames, monkeypatch):
    import ltrboost.model

    df, y, qid, *_ = frames
    r = Ranker(**FAST, n_threads=1).fit(df, y, qid=qid)
    mc = Ranker(**FAST, objective="mcrank", n_threads=1).fit(df, y, qid=qid)
    seen = []
    real = ltrboost.model.threads

    def spy(n):
        seen.append(n)
        return real(n)

    monkeypatch.setattr(ltrboost.model, "threads", spy)
    r.predict(df)
    r.score(df, y, qid=qid)
    mc.predict_proba(df)
    assert seen == [1, 1, 1]  # they ran on every core (None)


def test_group_sizes_given_as_text_are_read_or_named():
    X = np.zeros((6, 2))
    ds = make_dataset(X, [0, 1, 0, 1, 2, 0], group=np.array([3, 3], dtype=object))
    np.testing.assert_array_equal(ds.query_offsets, [0, 3, 6])
    # text was a TypeError from np.isfinite: now named (sizes are numbers, not text)
    with pytest.raises(LTRInputError, match=r"^group\[0\]='3' is not a number"):
        make_dataset(X, [0, 1, 0, 1, 2, 0], group=["3", "3"])
    with pytest.raises(LTRInputError, match=r"^group\[1\]='x' is not a number"):
        make_dataset(X, [0, 1, 0, 1, 2, 0], group=np.array([3, "x"], dtype=object))


def test_resuming_never_takes_a_nan_round_as_the_best(frames):
    df, y, qid, dv, yv, qv = frames
    calls = []

    def rising(scores, labels, offsets):  # better every round
        calls.append(1)
        return float(len(calls))

    init = Ranker(**FAST, eval_metric=rising).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    # a history with a NaN first round (a model file of an older version, or edited)
    init.booster_.evals_result["valid_0"]["rising"][0] = np.nan
    more = Ranker(**FAST, eval_metric=rising, early_stopping_rounds=2).fit(
        df, y, qid=qid, eval_set=[(dv, yv, qv)], init_model=init
    )
    # the NaN first round was taken as the best, so the run stopped after 2 more rounds
    # and predicted with the first tree only
    assert more.best_iteration_ == 6
    assert more.booster_.n_iterations == 6


def test_a_validation_name_is_the_same_string_in_memory_and_in_the_file(frames, tmp_path):
    from ltrboost import load_model

    df, y, qid, dv, yv, qv = frames
    r = Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)], eval_names=[1])
    r.save_model(str(tmp_path / "m.json"))
    # evals_result_ was keyed 1 in memory and "1" once loaded
    assert list(r.evals_result_) == list(load_model(str(tmp_path / "m.json")).evals_result)
    assert list(r.evals_result_) == ["1"]


def test_an_eval_frame_is_taken_by_the_init_models_names_when_x_is_an_array(frames):
    df, y, qid, dv, yv, qv = frames
    init = Ranker(**FAST).fit(df, y, qid=qid)
    a = Ranker(**FAST).fit(df.to_numpy(), y, qid=qid, init_model=init, eval_set=[(dv, yv, qv)])
    b = Ranker(**FAST).fit(
        df.to_numpy(), y, qid=qid, init_model=init, eval_set=[(dv[COLS[::-1]], yv, qv)]
    )
    assert a.evals_result_ == b.evals_result_  # b's frame was taken by position


def test_callbacks_are_checked_before_the_first_round(frames):
    df, y, qid, *_ = frames
    rounds = []

    def count(env):
        rounds.append(env.iteration)

    with pytest.raises(TypeError, match=r"callbacks\[1\] is int, not a callable"):
        Ranker(**FAST).fit(df, y, qid=qid, callbacks=[count, 1])
    assert rounds == []  # it failed after training round 1
    Ranker(**FAST).fit(df, y, qid=qid, callbacks=count)  # one callable alone
    assert rounds == [0, 1, 2]
    with pytest.raises(TypeError, match="callbacks must be a list of callables"):
        train(dict(FAST), make_dataset(df, y, qid=qid), callbacks=5)


def test_pair_errors_name_rows_as_the_caller_numbered_them():
    X = np.random.default_rng(0).normal(size=(6, 2))
    y = [0, 1, 0, 1, 2, 0]
    qid = [1, 2, 1, 2, 1, 2]  # grouped: rows 0, 2, 4 then 1, 3, 5

    def fit(pairs):
        Ranker(n_estimators=1, objective="ranknet").fit(X, y, qid=qid, pairs=pairs)

    # they named the grouped rows: "rows 0 and 3", "row 0 preferred to row 1"
    with pytest.raises(LTRInputError, match="pair 0: rows 0 and 1 belong to different"):
        fit([[0, 1]])
    with pytest.raises(ValueError, match=r"pair 0 \(row 0 preferred to row 2\) contradicts"):
        fit([[0, 2], [2, 0]])
    with pytest.raises(LTRInputError, match=r"pairs must be numbers of shape"):
        fit([[0, 2], [4, 2, 1.0]])  # was NumPy's own ValueError


def test_label_errors_name_the_callers_row_when_qids_are_unsorted():
    from ltrboost.metrics import make_scorer

    X = np.random.default_rng(0).normal(size=(6, 2))
    qid = [1, 2, 1, 2, 1, 2]  # grouped: rows 0, 2, 4 then 1, 3, 5
    big = [0, 40, 0, 1, 2, 0]  # the bad label is the caller's row 1 (grouped row 3)
    # objectives and metrics see the grouped rows, and named row 3
    with pytest.raises(LTRInputError, match=r"^row 1: label 40 is too large") as e:
        Ranker(n_estimators=1, min_samples_leaf=1).fit(X, big, qid=qid)
    assert e.value.row == 1
    with pytest.raises(LTRInputError, match=r"^row 1: label y\[1\]=1.5 is not a non-negative"):
        Ranker(n_estimators=1, min_samples_leaf=1).fit(X, [0, 1.5, 0, 1, 2, 0], qid=qid)
    r = Ranker(n_estimators=1, min_samples_leaf=1, objective="mart").fit(X, big, qid=qid)
    with pytest.raises(LTRInputError, match=r"^row 1: label 40"):
        r.score(X, big, qid=qid)
    with pytest.raises(LTRInputError, match=r"^row 1: label 40"):
        make_scorer("ndcg@3")(r, pd.DataFrame(X).assign(qid=qid), big)
    with pytest.raises(LTRInputError, match=r"^validation set 'valid_0': row 1: label 40"):
        Ranker(n_estimators=1, min_samples_leaf=1, objective="mart").fit(
            X, big, qid=qid, eval_set=[(X, big, qid)]
        )


def test_a_qid_column_given_again_as_qid_is_no_feature():
    """With qid= given, a DataFrame's 'qid' column became a feature: the query ids
    leaked into the trees. The same ids twice: the column is dropped; other values:
    kept as a feature, with a warning."""
    import warnings

    import pandas as pd

    from ltrboost import Ranker

    X, y, qid = make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=0)
    df = pd.DataFrame(X, columns=[f"f{k}" for k in range(4)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both = Ranker(n_estimators=3).fit(df.assign(qid=qid), y, qid=qid)
    plain = Ranker(n_estimators=3).fit(df, y, qid=qid)
    assert list(both.feature_names_in_) == [f"f{k}" for k in range(4)]
    assert both.booster_.to_dict() == plain.booster_.to_dict()
    np.testing.assert_array_equal(both.predict(df.assign(qid=qid)), plain.predict(df))
    with pytest.warns(UserWarning, match="column named 'qid' that differs"):
        kept = Ranker(n_estimators=3).fit(df.assign(qid=np.arange(len(y))), y, qid=qid)
    assert "qid" in list(kept.feature_names_in_)

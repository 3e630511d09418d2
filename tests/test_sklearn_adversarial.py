"""Python-API promises an adversarial pass found broken (stop 29): DataFrame columns are
taken by name everywhere ``predict`` takes them so, and the scikit-learn conventions
that estimator checks rely on."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.dataset import LTRInputError

pd = pytest.importorskip("pandas")

FAST = dict(n_estimators=5, max_leaf_nodes=6, min_samples_leaf=3, random_state=0)
COLS = ["a", "b", "c", "d", "e"]


def test_score_takes_columns_by_name(frames):
    df, y, qid, dv, yv, qv = frames
    r = Ranker(**FAST).fit(df, y, qid=qid)
    assert r.score(dv[COLS[::-1]], yv, qid=qv) == r.score(dv, yv, qid=qv)
    with pytest.raises(LTRInputError, match=r"score's X: .*missing columns \['a'\]"):
        r.score(dv.rename(columns={"a": "nope"}), yv, qid=qv)


def test_eval_set_takes_columns_by_name(frames):
    df, y, qid, dv, yv, qv = frames
    a = Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    b = Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv[COLS[::-1]], yv, qv)])
    assert a.evals_result_ == b.evals_result_
    with pytest.raises(LTRInputError, match=r"eval_set\[0\]: .*unknown columns \['z'\]"):
        Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv.rename(columns={"e": "z"}), yv, qv)])
    # a qid column in the validation frame, in any position
    with_qid = dv[COLS[::-1]].assign(qid=qv)
    c = Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(with_qid, yv)])
    assert c.evals_result_["valid_0"] == a.evals_result_["valid_0"]


def test_warm_start_takes_columns_by_the_init_models_names(frames):
    df, y, qid, *_ = frames
    init = Ranker(n_estimators=3, random_state=0).fit(df, y, qid=qid)
    a = Ranker(n_estimators=2, random_state=0).fit(df, y, qid=qid, init_model=init)
    b = Ranker(n_estimators=2, random_state=0).fit(df[COLS[::-1]], y, qid=qid, init_model=init)
    np.testing.assert_array_equal(a.predict(df), b.predict(df))
    assert list(b.feature_names_in_) == COLS
    with pytest.raises(LTRInputError, match="init_model"):
        Ranker(n_estimators=2).fit(df.rename(columns={"a": "q"}), y, qid=qid, init_model=init)


def test_refit_on_an_array_forgets_the_feature_names(frames):
    df, y, qid, *_ = frames
    r = Ranker(**FAST).fit(df, y, qid=qid)
    assert list(r.feature_names_in_) == COLS
    r.fit(df.to_numpy(), y, qid=qid)
    assert not hasattr(r, "feature_names_in_")


def test_two_custom_metrics_with_one_name_are_refused(frames):
    df, y, qid, dv, yv, qv = frames

    def make(v):
        def score(s, labels, offsets):
            return v

        return score

    with pytest.raises(ValueError, match="two metrics are named 'score'"):
        Ranker(**FAST, eval_metric=[make(0.5), make(0.6)]).fit(
            df, y, qid=qid, eval_set=[(dv, yv, qv)]
        )


def test_importances_follow_the_best_iteration(frames):
    df, y, qid, dv, yv, qv = frames
    r = Ranker(
        n_estimators=40,
        learning_rate=0.8,
        early_stopping_rounds=3,
        random_state=0,
        max_leaf_nodes=8,
    ).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)])
    b = r.booster_
    assert b.best_iteration < b.n_iterations  # trees past the best are kept
    np.testing.assert_array_equal(
        b.feature_importance("split"), b.feature_importance("split", iteration=b.best_iteration)
    )
    assert (
        b.feature_importance("split").sum()
        < b.feature_importance("split", iteration=b.n_iterations).sum()
    )


def test_predict_proba_exists_only_for_mcrank_and_sparse_is_tagged(frames):
    df, y, qid, *_ = frames
    r = Ranker(**FAST).fit(df, y, qid=qid)
    assert not hasattr(r, "predict_proba")
    with pytest.raises(AttributeError, match="only available for objective='mcrank'"):
        r.predict_proba(df)
    mc = Ranker(objective="mcrank", **FAST)
    assert hasattr(mc, "predict_proba")
    assert mc.fit(df, y, qid=qid).predict_proba(df).shape[0] == len(df)
    assert Ranker().__sklearn_tags__().input_tags.sparse


def test_score_uses_the_metric_given_to_fit(frames):
    df, y, qid, dv, yv, qv = frames
    r = Ranker(**FAST).fit(df, y, qid=qid, eval_set=[(dv, yv, qv)], eval_metric="map")
    assert r.score(dv, yv, qid=qv) == r.score(dv, yv, qid=qv, metric="map")
    assert r.score(dv, yv, qid=qv) != r.score(dv, yv, qid=qv, metric="ndcg@10")


def test_plot_metric_counts_the_init_models_rounds(frames):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from ltrboost.plot import plot_metric

    df, y, qid, dv, yv, qv = frames
    init = Ranker(n_estimators=3, random_state=0).fit(df, y, qid=qid)
    r = Ranker(n_estimators=4, random_state=0).fit(
        df, y, qid=qid, eval_set=[(dv, yv, qv)], init_model=init
    )
    ax = plot_metric(r)
    x = ax.get_lines()[0].get_xdata()
    # the init model's 3 rounds are evaluated on the new set too (they used to be
    # missing, and the plot counted the 4 new rounds from round 4)
    np.testing.assert_array_equal(x, [1, 2, 3, 4, 5, 6, 7])


def test_all_zero_sample_weights_are_refused(frames):
    df, y, qid, *_ = frames
    with pytest.raises(LTRInputError, match="zero for every row"):
        Ranker(**FAST).fit(df, y, qid=qid, sample_weight=np.zeros(len(y)))


@pytest.mark.parametrize(
    ("qid", "needle"),
    [
        (["a", "b", None], "row 2: qid is None"),
        (["a", 1, "b"], "row 1: qid 1 \\(number\\) is not of the first rows' kind \\(str\\)"),
    ],
)
def test_object_qids_of_mixed_kinds_are_named(qid, needle):
    X = np.zeros((3, 2))
    with pytest.raises(LTRInputError, match=needle):
        Ranker(**FAST).fit(X, [0, 1, 0], qid=np.array(qid, dtype=object))


def test_model_file_with_a_bom_loads_and_a_float_version_is_named(frames, tmp_path):
    from ltrboost import load_model
    from ltrboost.io.model_json import ModelFormatError

    df, y, qid, *_ = frames
    r = Ranker(**FAST).fit(df, y, qid=qid)
    path = tmp_path / "m.json"
    r.save_model(str(path))
    text = path.read_text(encoding="utf-8")
    bom = tmp_path / "bom.json"
    bom.write_text("\ufeff" + text, encoding="utf-8")
    np.testing.assert_array_equal(load_model(str(bom)).predict(df), r.predict(df))
    bad = tmp_path / "v.json"
    bad.write_text(text.replace('"format_version":1', '"format_version":1.0'), encoding="utf-8")
    with pytest.raises(ModelFormatError, match="must be a positive integer"):
        load_model(str(bad))


def test_an_eval_set_of_another_width_is_named(frames):
    df, y, qid, dv, yv, qv = frames
    with pytest.raises(ValueError, match="eval_set\\[1\\] has 4 features but X has 5"):
        Ranker(**FAST).fit(
            df.to_numpy(), y, qid=qid,
            eval_set=[(dv.to_numpy(), yv, qv), (dv.to_numpy()[:, :4], yv, qv)],
        )  # fmt: skip


def test_fractional_pair_row_indices_are_named_as_such():
    X = np.arange(8, dtype=float).reshape(4, 2)
    y = np.array([1.0, 0.0, 1.0, 0.0])
    qid = np.array([1, 1, 2, 2])
    with pytest.raises(LTRInputError, match=r"pair 1: row indices must be whole numbers"):
        Ranker(objective="ranknet", n_estimators=1).fit(X, y, qid=qid, pairs=[[0, 1], [2.5, 3]])

"""Label thresholds and per-grade parameters (``positive_threshold``,
``relevance_threshold``, ``label_scale``) against the grades the data holds: a fifth
adversarial pass.  Each problem found is one test here."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from ltrboost import Ranker, load_model, train
from ltrboost.dataset import make_dataset
from ltrboost.io.letor import dump_svmlight
from ltrboost.params import ParameterError, ParameterWarning
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

RNG = np.random.default_rng(5)
X = RNG.normal(size=(60, 3))
QID = np.repeat(np.arange(6), 10)
GRADES = np.tile(np.arange(5.0), 12)  # 0..4 in every query


def _fit(y, weights=None, valid=False, **params):
    params = dict(n_estimators=2, min_samples_leaf=2, **params)
    ds = make_dataset(X, y, qid=QID, sample_weight=weights)
    return train(params, ds, valid_sets=[("valid_0", ds)] if valid else ())


# --- positive_threshold: one class, nothing to learn --------------------------------


@pytest.mark.parametrize(
    ("threshold", "side"), [(10, "negative"), (4.5, "negative"), (0, "positive"), (-1, "positive")]
)
def test_positive_threshold_outside_the_grades_is_refused(threshold, side):
    """``positive_threshold`` above every grade (or at/below the lowest) makes every
    document one class: logistic_rank learns nothing, yet it trained every round and
    then only warned that the trees were one leaf, without the grades it saw."""
    with pytest.raises(ParameterError) as e:
        _fit(GRADES, objective="logistic_rank", positive_threshold=threshold)
    msg = str(e.value)
    assert f"positive_threshold={threshold:g} makes every training document {side}" in msg
    assert "grades 0, 1, 2, 3, 4" in msg
    assert "above 0 and at most 4" in msg


def test_positive_threshold_resolved_on_one_sided_grades_is_refused():
    """Grades 1 and 2 (a 1-based binary scale): the default threshold resolves to 1
    and every document is positive; say so and what to pass."""
    y = np.tile([1.0, 2.0], 30)
    with pytest.raises(ParameterError, match=r"positive_threshold=None resolves to 1 ") as e:
        _fit(y, objective="logistic_rank")
    assert "grades 1, 2" in str(e.value)
    assert "positive" in str(e.value)


def test_positive_threshold_counts_documents_of_positive_weight_only():
    """Grade 4 only on zero-weight documents: with threshold 4 no document that carries
    weight is positive."""
    w = np.where(GRADES == 4, 0.0, 1.0)
    with pytest.raises(ParameterError, match="every training document of positive weight"):
        _fit(GRADES, w, objective="logistic_rank", positive_threshold=4)


def test_one_grade_everywhere_keeps_the_constant_model_warning():
    """Every label equal: the data, not the threshold, holds one class; as for every
    objective, a warning after training."""
    with pytest.warns(UserWarning, match="every training label is 3"):
        _fit(np.full(60, 3.0), objective="logistic_rank", positive_threshold=10)


def test_positive_threshold_inside_the_grades_trains_without_a_word():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _fit(GRADES, objective="logistic_rank", positive_threshold=4)
        _fit(GRADES, objective="logistic_rank")


# --- relevance_threshold of LambdaMART-MAP: nothing to learn ------------------------


@pytest.mark.parametrize(("threshold", "side"), [(5, "no"), (0, "every")])
def test_lambdamart_map_relevance_threshold_outside_the_grades_is_refused(threshold, side):
    with pytest.raises(ParameterError) as e:
        _fit(GRADES, lambda_metric="map", relevance_threshold=threshold)
    msg = str(e.value)
    assert f"relevance_threshold={threshold} counts {side} training document relevant" in msg
    assert "grades 0, 1, 2, 3, 4" in msg
    assert "above 0 and at most 4" in msg


# --- relevance_threshold of the validation metrics ----------------------------------


@pytest.mark.parametrize(
    ("metric", "params", "y", "needle"),
    [
        ("map", {"relevance_threshold": 10}, GRADES, "relevance_threshold=10 counts no"),
        ("mrr", {"relevance_threshold": 0}, GRADES, "relevance_threshold=0 counts every"),
        ("p@3", {}, GRADES / 5, "relevance_threshold=1 counts no"),  # labels in [0, 0.8]
    ],
)
def test_validation_metric_whose_threshold_splits_nothing_warns(metric, params, y, needle):
    """MAP / MRR / P@k of a validation set whose documents are all relevant (or none
    is) under ``relevance_threshold`` are the same whatever the scores: early stopping
    stopped after its patience and the log showed a flat line, without a word (the
    default threshold 1 does that to labels scaled to [0, 1))."""
    with pytest.warns(ParameterWarning, match=needle) as caught:
        _fit(y, valid=True, objective="mart", eval_metric=metric, **params)
    msg = next(str(w.message) for w in caught if needle in str(w.message))
    assert metric in msg
    assert "the same whatever the scores" in msg


def test_validation_metric_threshold_names_the_set_and_grades():
    y = GRADES
    ds = make_dataset(X, y, qid=QID)
    with pytest.warns(ParameterWarning) as caught:
        train(
            dict(objective="mart", n_estimators=2, eval_metric="map,ndcg@5", relevance_threshold=9),
            ds,
            valid_sets=[("holdout", ds)],
        )
    (msg,) = [str(w.message) for w in caught if "relevance_threshold=9" in str(w.message)]
    assert "validation set 'holdout'" in msg
    assert "grades 0, 1, 2, 3, 4" in msg
    assert "ndcg" not in msg


def test_validation_metric_threshold_inside_the_grades_is_quiet():
    ds = make_dataset(X, GRADES, qid=QID)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train(
            dict(objective="mart", n_estimators=2, eval_metric="map,mrr,p@3"),
            ds,
            valid_sets=[("v", ds)],
        )


# --- label_scale ----------------------------------------------------------------------


def test_label_scale_keys_that_are_no_grade_warn():
    """``label_scale={7: 2}`` on grades 0..4 was ignored silently (every grade got 1):
    a typo or another scale than the data's trained an unscaled model."""
    with pytest.warns(ParameterWarning, match=r"label_scale names grade 7 ") as caught:
        _fit(GRADES, objective="logistic_rank", label_scale={7: 2, 4: 3})
    msg = str(caught[0].message)
    assert "grades 0, 1, 2, 3, 4" in msg
    assert "scale 1" in msg


def test_label_scale_sequence_longer_than_the_grades_warns():
    with pytest.warns(ParameterWarning, match=r"label_scale names grades 5, 6 "):
        _fit(GRADES, objective="logistic_rank", label_scale=[1, 1, 1, 2, 3, 4, 5])


def test_label_scale_string_keys_match_the_grades():
    """JSON's keys are strings: ``{"4": 3}`` and ``{"4.0": 3}`` scale grade 4, as
    ``{4: 3}`` does (no warning, the same model)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        models = [
            _fit(GRADES, objective="logistic_rank", label_scale=spec)
            for spec in ({4: 3.0, 3: 2.0}, {"4": 3, "3": 2}, {"4.0": 3, "3.0": 2})
        ]
    want = models[0].predict(X)
    for m in models[1:]:
        np.testing.assert_array_equal(m.predict(X), want)


# --- CLI ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def letor(tmp_path_factory):
    folder = tmp_path_factory.mktemp("advlabel5")
    path = folder / "train.txt"
    dump_svmlight(str(path), X, GRADES, qid=QID + 1)
    return folder, path


def test_cli_positive_threshold_error_names_the_flag(letor, capsys):
    folder, path = letor
    out = folder / "m.json"
    argv = ["train", path, "-q", "--n-estimators", "2", "--objective", "logistic_rank"]
    rc, _, err = run([*argv, "--positive-threshold", "9", "--output", out], capsys)
    one_line_error(rc, err, "--positive-threshold=9 makes every", "grades 0, 1, 2, 3, 4")
    assert not out.exists()


def test_cli_relevance_threshold_error_names_the_flag(letor, capsys):
    folder, path = letor
    argv = ["train", path, "-q", "--n-estimators", "2", "--lambda-metric", "map"]
    rc, _, err = run([*argv, "--relevance-threshold", "5", "--output", folder / "m.json"], capsys)
    one_line_error(rc, err, "--relevance-threshold=5 counts no training document relevant")


def test_cli_eval_threshold_outside_the_grades_warns_naming_the_flag(letor, capsys):
    folder, path = letor
    model = folder / "ok.json"
    rc, _, err = run(["train", path, "-q", "--n-estimators", "2", "--output", model], capsys)
    assert rc == 0, err
    argv = ["eval", model, path, "--metric", "map", "--relevance-threshold", "7"]
    rc, _, err = run(argv, capsys)
    assert rc == 0, err
    assert "warning: --relevance-threshold=7 counts no document" in err
    assert "grades 0, 1, 2, 3, 4" in err


def test_cli_label_scale_json_keys_train_the_python_model(letor, capsys):
    folder, path = letor
    out = folder / "scaled.json"
    argv = ["train", path, "-q", "--n-estimators", "2", "--objective", "logistic_rank"]
    scale = ["--min-samples-leaf", "2", "--label-scale", '{"4": 3, "3": 2}']
    rc, _, err = run([*argv, *scale, "--output", out], capsys)
    assert rc == 0, err
    assert "warning" not in err
    python = _fit(GRADES, objective="logistic_rank", label_scale={4: 3, 3: 2})
    np.testing.assert_allclose(load_model(out).predict(X), python.predict(X), rtol=1e-12)
    assert json.loads(out.read_text())["objective_params"]["label_scale"] == {"4.0": 3, "3.0": 2}


def test_cli_label_scale_unknown_key_warns_naming_the_flag(letor, capsys):
    folder, path = letor
    argv = ["train", path, "-q", "--n-estimators", "2", "--objective", "logistic_rank"]
    rc, _, err = run([*argv, "--label-scale", '{"9": 3}', "--output", folder / "u.json"], capsys)
    assert rc == 0, err
    assert "warning: --label-scale names grade 9 " in err


def test_ranker_positive_threshold_error_before_training():
    with pytest.raises(ParameterError, match="positive_threshold=7"):
        Ranker(objective="logistic_rank", positive_threshold=7, n_estimators=2).fit(
            X, GRADES, qid=QID
        )

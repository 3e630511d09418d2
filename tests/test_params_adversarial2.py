"""Training parameters against their documented semantics (second adversarial pass).

* A pair parameter the chosen ``pair_method`` never reads (``pairs_per_sample`` without
  ``"sampled"``; ``truncation_level`` without ``"topk"``, except LambdaMART's NDCG, whose
  ideal DCG is cut at it) warns naming it, as a parameter the objective ignores does.
* A model trained with ``fractions.Fraction`` parameters (real numbers) saves.
* The doc (``--help``, ``BoosterParams``) of an objective parameter says what None, its
  default, means: each built-in objective's own default.
* ``label_scale`` refuses booleans and a grade given twice; ``min_samples_bin`` beyond
  int64 bins; objective parameters take Fractions as the engine's do.
* Warnings for silent constant models: ``min_samples_leaf`` above half the documents, a
  ``colsample_bytree`` draw averaging under one varying column.
* Errors: LightGBM/XGBoost names translated, ``max_depth=-1`` pointed to None, resuming
  below the model's rounds, an objective class or instance.
"""

from __future__ import annotations

import inspect
import warnings
from fractions import Fraction

import numpy as np
import pytest

from ltrboost import load_model, train
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.objectives.lambdamart import LambdaMART
from ltrboost.objectives.registry import available_objectives, objective_class
from ltrboost.params import PARAMS

X, Y, QID = make_ranking(n_queries=6, docs_per_query=(4, 10), n_features=4, random_state=1)[:3]
BASE = dict(n_estimators=1, min_samples_leaf=2, max_leaf_nodes=4)


def _train(**params):
    return train(dict(BASE, **params), make_dataset(X, Y, qid=QID))


@pytest.mark.parametrize(
    ("params", "ignored"),
    [
        (dict(objective="lambdamart", pairs_per_sample=3), "pairs_per_sample=3"),
        (dict(objective="ranknet", pair_method="topk", pairs_per_sample=2), "pairs_per_sample=2"),
        (dict(objective="ranknet", truncation_level=5), "truncation_level=5"),
        (dict(objective="rankboost", pair_method="sampled", truncation_level=5), "truncation_"),
        (dict(lambda_metric="err", pair_method="all", truncation_level=5), "truncation_level"),
    ],
)
def test_a_pair_parameter_the_pair_method_ignores_warns(params, ignored) -> None:
    with pytest.warns(UserWarning, match=rf"pair_method=.*does not use {ignored}"):
        _train(**params)


@pytest.mark.parametrize(
    "params",
    [
        dict(objective="lambdamart", pair_method="sampled", pairs_per_sample=3),
        dict(objective="lambdamart", truncation_level=5),  # topk (the default)
        dict(objective="lambdamart", pair_method="all", truncation_level=5),  # IDCG@5
        dict(objective="ranknet", pair_method="topk", truncation_level=5),
        dict(objective="ranknet", truncation_level=0),  # 0: every pair, which "all" is
    ],
)
def test_a_pair_parameter_the_pair_method_reads_does_not_warn(params) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _train(**params)


def _shown(value) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


@pytest.mark.parametrize(
    "param", [p for p in PARAMS if p.group == "objective"], ids=lambda p: p.name
)
def test_the_help_of_an_objective_parameter_says_what_none_means(param) -> None:
    """``--help`` printed ``(default: None)`` for ``--truncation-level`` (None there is
    the objective's 30, not "no truncation" as in the objective's own docstring),
    ``--sigma``, ``--pair-method``...: each built-in default is now spelled out."""
    assert "None: " in param.doc, param
    for name in available_objectives():
        accepted = inspect.signature(objective_class(name).__init__).parameters
        if param.name in accepted and accepted[param.name].default is not None:
            assert _shown(accepted[param.name].default) in param.doc.split("None: ", 1)[1], name


@pytest.mark.parametrize(
    ("label_scale", "needle"),
    [
        ([1.0, True, 2.0], "boolean"),  # True was the scale 1.0
        ({True: 2.0}, "boolean"),  # the grade 1, written {"True": 2.0} into params
        ({1: 2.0, "1": 3.0}, "grade 1 twice"),  # one of the two was dropped silently
        ({"2": 2.0, 2.0: 3.0}, "grade 2 twice"),
    ],
)
def test_a_label_scale_with_booleans_or_a_repeated_grade_is_refused(label_scale, needle) -> None:
    with pytest.raises(ValueError, match=rf"label_scale.*{needle}"):
        _train(objective="logistic_rank", label_scale=label_scale)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_min_samples_bin_beyond_int64_bins_as_any_count_above_the_rows(sparse) -> None:
    """``min_samples_bin=2**70`` was a Numba typing error ("Int value is too large")."""
    import scipy.sparse as sp

    Xd = sp.csr_matrix(X) if sparse else X
    data = make_dataset(Xd, Y, qid=QID)
    big = train(dict(BASE, max_bins=4, min_samples_bin=2**70), data)
    rows = train(dict(BASE, max_bins=4, min_samples_bin=len(Y) + 1), data)
    assert big.predict(X).tolist() == rows.predict(X).tolist()


@pytest.mark.parametrize(
    "params",
    [
        dict(learning_rate=Fraction(1, 10), subsample=Fraction(1, 2)),
        dict(l2_regularization=Fraction(1, 2), min_gain_to_split=Fraction(1, 100)),
        dict(objective="logistic_rank", positive_threshold=Fraction(2), label_scale=[1, 2]),
        dict(objective="logistic_rank", label_scale=[Fraction(1), Fraction(5, 2)]),
    ],
)
def test_a_model_trained_with_fractions_saves_and_loads(params, tmp_path) -> None:
    """``fractions.Fraction`` is a real number, accepted as one, but saving the model was
    ``TypeError: Object of type Fraction is not JSON serializable``."""
    booster = _train(**params)
    path = tmp_path / "m.json"
    booster.save_model(path)
    assert load_model(path).predict(X).tolist() == booster.predict(X).tolist()


@pytest.mark.parametrize(
    "params",
    [
        dict(sigma=Fraction(3, 2)),
        dict(objective="ranknet", sigma=Fraction(1, 2)),
        dict(objective="gbrank", tau=Fraction(1, 5)),
        dict(objective="qbrank", preference_weight=Fraction(1, 3), tau=Fraction(1, 2)),
        dict(objective="yetirank", decay=Fraction(1, 2)),
    ],
)
def test_objective_parameters_take_fractions_as_the_engine_does(params, tmp_path) -> None:
    """The engine's checks took any real number (``learning_rate=Fraction(1, 10)``); the
    objectives' refused a Fraction as "should be a positive finite number"."""
    floats = {k: float(v) if isinstance(v, Fraction) else v for k, v in params.items()}
    booster = _train(**params)
    assert booster.predict(X).tolist() == _train(**floats).predict(X).tolist()
    booster.save_model(tmp_path / "m.json")


def test_a_min_samples_leaf_no_node_can_meet_warns_of_a_constant_model() -> None:
    """``min_samples_leaf`` above half the documents left every tree one leaf, silently
    (LightGBM warns that no leaf meets the split requirements)."""
    n = len(Y)
    with pytest.warns(UserWarning, match=rf"min_samples_leaf={n // 2 + 1}.*{n} documents"):
        booster = _train(min_samples_leaf=n // 2 + 1)
    assert all(t["is_leaf"].all() for t in booster.trees)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _train(min_samples_leaf=n // 2)  # the root can split


def test_a_colsample_that_leaves_most_trees_no_varying_feature_warns() -> None:
    """``colsample_bytree`` draws among all columns, constant ones included: 5 of 100
    columns of which 3 vary left 38 of 40 trees one leaf, silently (LightGBM's
    ``feature_fraction`` draws among the varying columns)."""
    wide = np.zeros((len(Y), 100))
    wide[:, :3] = X[:, :3]
    data = make_dataset(wide, Y, qid=QID)
    with pytest.warns(UserWarning, match=r"colsample_bytree=0.05 draws 5 of all 100 .* 3 "):
        train(dict(BASE, colsample_bytree=0.05), data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train(dict(BASE, colsample_bytree=0.5), data)  # 1.5 varying columns a tree
        train(dict(BASE, colsample_bytree=0.05), make_dataset(X, Y, qid=QID))  # all vary


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("num_leaves", "num_leaves is max_leaf_nodes"),  # LightGBM
        ("eta", "eta is learning_rate"),  # XGBoost
        ("min_child_weight", "min_child_weight is min_sum_hessian_in_leaf"),
        ("lambdarank_truncation_level", "is truncation_level"),
        ("reg_alpha", "no L1 regularisation"),
    ],
)
def test_an_other_librarys_parameter_name_is_translated(name, hint) -> None:
    """Ported code passing LightGBM's or XGBoost's names got the list of every valid
    name only; the README's table maps them, and so does the error now."""
    with pytest.raises(ValueError, match=rf"unknown parameter\(s\) \['{name}'\].*{hint}"):
        _train(**{name: 1})


def test_resuming_with_fewer_rounds_in_total_than_the_model_has_is_refused(tmp_path) -> None:
    """``n_estimators`` counts the rounds in total when resuming (``train(init_model=)``,
    ``--resume``): below the model's rounds it returned the model unchanged, with
    ``n_estimators=3`` recorded beside its 5 rounds."""
    five = _train(n_estimators=5)
    with pytest.raises(ValueError, match=r"n_estimators=3 .* 5 rounds"):
        train(dict(BASE, n_estimators=3), make_dataset(X, Y, qid=QID), init_model=five)
    again = train(dict(BASE, n_estimators=5), make_dataset(X, Y, qid=QID), init_model=five)
    assert again.predict(X).tolist() == five.predict(X).tolist()  # the same total: as is


def test_lightgbms_no_limit_depth_is_named_as_none() -> None:
    """``max_depth=-1`` is LightGBM's default (no limit); ported code gets told None is."""
    with pytest.raises(ValueError, match=r"max_depth=-1 must be >= 1 or None.*no limit"):
        _train(max_depth=-1)


@pytest.mark.parametrize("objective", [LambdaMART, LambdaMART(), dict])
def test_an_objective_class_or_instance_is_named_with_its_registry_name(objective) -> None:
    """A class is callable, so it was called as a custom loss ``fn(scores, labels,
    query_offsets)``: ``LambdaMART`` failed with ``lambda_metric=array([0., 0., ...`` (the
    scores as its first parameter); an instance was refused without the hint."""
    name = "'lambdamart'" if objective is not dict else "registered objective name"
    with pytest.raises(ValueError, match=rf"^objective=.*(class|instance).*{name}") as e:
        _train(objective=objective)
    assert "array(" not in str(e.value)


@pytest.mark.parametrize("objective", ["mart", "lambdamart", "mcrank"])
def test_a_negative_random_state_is_refused_naming_it(objective):
    """NumPy's ``default_rng`` refused it after the data was binned: "expected
    non-negative integer", naming no parameter (found by the experiment pass)."""
    X, y, qid = make_ranking(n_queries=5, docs_per_query=(4, 6), n_features=3, random_state=0)
    with pytest.raises(ValueError, match=r"random_state=-1 must be >= 0"):
        train(
            dict(objective=objective, random_state=-1, n_estimators=1),
            make_dataset(X, y, qid=qid),
        )


@pytest.mark.parametrize("name", ["learning_rate", "position_bias_norm", "subsample", "tau"])
def test_an_integer_beyond_float64_is_refused_naming_the_parameter(name):
    """``10**400`` raised OverflowError from ``math.isfinite`` (found by the clicks pass)."""
    X, y, qid = make_ranking(n_queries=5, docs_per_query=(4, 6), n_features=3, random_state=0)
    with pytest.raises(ValueError, match=rf"^{name}=10000.*\(401 characters\) must"):
        train({name: 10**400, "n_estimators": 1}, make_dataset(X, y, qid=qid))

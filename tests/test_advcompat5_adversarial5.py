"""Adversarial pass 5 over backward compatibility: model files, checkpoints and their
predictions as older ltrboost versions wrote them (``tests/data/compat/``, each file
written by the commit its name starts with; the README there lists them).

Every old file must load, predict exactly what its own code predicted, inspect, export
and continue training (or refuse, saying why).  Each test marked "failed before" failed
on the code before this pass."""

from __future__ import annotations

import importlib.util
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from ltrboost import Ranker, make_dataset, train
from ltrboost.io.model_schema import ModelFormatError
from ltrboost.model import load_model
from test_cli import run

DATA = Path(__file__).parent / "data" / "compat"
FIXTURES = sorted(p.name[: -len(".expected.json")] for p in DATA.glob("*.expected.json"))
# files holding an objective-ignored parameter that older code accepted unchecked
LEGACY_PARAM = {
    "2b5b036_rankboost_gain_exp2": ("gain", "exp2"),
    "e522b61_mart_truncation_level_neg": ("truncation_level", -3),
}


def _x_test() -> np.ndarray:
    rows = json.loads((DATA / "X_test.json").read_text())
    return np.array([[np.nan if v is None else v for v in r] for r in rows], dtype=np.float64)


def _expected(stem: str) -> dict:
    return json.loads((DATA / f"{stem}.expected.json").read_text())


def _load(stem: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_model(DATA / f"{stem}.json")


def _training_data(position: bool = False):
    """The training set of ``make_fixtures.py`` (same generator, same draws)."""
    rng = np.random.default_rng(2024)
    nq, nd, nf = 24, 8, 4
    n = nq * nd
    X = rng.normal(size=(n, nf))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n) + 1.0), 0, 2)
    X[rng.random(size=n) < 0.15, 2] = np.nan
    qid = np.repeat(np.arange(nq), nd)
    names = ["title_bm25", "pagerank", "click_rate", "length"]
    kw = {"position": np.tile(np.arange(1, nd + 1), nq)} if position else {}
    return make_dataset(X, y, qid=qid, feature_names=names, **kw)


def _my_obj(scores, labels, query_offsets):  # the custom objective of 6323b3f_custom
    return scores - labels, np.ones_like(scores)


_my_obj.__name__ = "my_obj"


# --- every old file: load and predict exactly as its own code did (failed before for the
# two LEGACY_PARAM files: 'params: gain='exp2' is not one of ...', refused on load) ------


@pytest.mark.parametrize("stem", FIXTURES)
def test_old_model_predicts_what_its_code_predicted(stem):
    exp = _expected(stem)
    b = _load(stem)
    X = _x_test()
    assert b.n_iterations == exp["n_iterations"]
    assert b.best_iteration == exp["best_iteration"]
    np.testing.assert_array_equal(b.predict(X), np.asarray(exp["predict"]))
    np.testing.assert_array_equal(b.predict_raw(X), np.asarray(exp["predict_raw"]))
    np.testing.assert_array_equal(
        b.predict_raw(X, iteration=1), np.asarray(exp["predict_raw_iteration_1"])
    )
    if "position_bias" in exp:
        for k, v in exp["position_bias"].items():
            np.testing.assert_array_equal(b.position_bias[k], v)


@pytest.mark.parametrize("stem", FIXTURES)
def test_old_model_inspects_and_exports(stem, tmp_path, capsys):
    path = DATA / f"{stem}.json"
    rc, out, err = run(["inspect", path, "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)["objective"] == _load(stem).objective
    b = _load(stem)
    fmt = "onnx" if b.n_outputs > 1 else "lightgbm"
    if fmt == "onnx" and importlib.util.find_spec("onnx") is None:
        pytest.skip("onnx is not installed")
    rc, _, err = run(["export", path, "-f", fmt, "-o", tmp_path / "m.out"], capsys)
    assert rc == 0, err
    assert (tmp_path / "m.out").stat().st_size > 0


@pytest.mark.parametrize("stem", FIXTURES)
def test_old_model_continues_training(stem):
    """``init_model=`` an old file: its rounds are kept as they are, one more is added."""
    b = _load(stem)
    params = {
        "objective": _my_obj if b.objective == "custom:my_obj" else b.objective,
        "n_estimators": b.n_iterations + 1,
        "max_leaf_nodes": 3,
        "min_samples_leaf": 8,
        "n_threads": 1,
    }
    unbiased = b.position_bias is not None
    if unbiased:
        params.update(unbiased=True, max_positions=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b2 = train(params, _training_data(position=unbiased), init_model=b)
    assert b2.n_iterations == b.n_iterations + 1
    X = _x_test()
    np.testing.assert_array_equal(
        b2.predict_raw(X, iteration=b.n_iterations), b.predict_raw(X, iteration=b.n_iterations)
    )


def test_old_custom_objective_model_refuses_to_resume_without_its_function():
    b = _load("6323b3f_custom")
    with pytest.raises(ValueError, match=r"custom:my_obj.*pass that callable again"):
        train({"objective": "lambdamart", "n_estimators": 5}, _training_data(), init_model=b)


# --- a parameter the objective ignores, with a value older code accepted unchecked ----


@pytest.mark.parametrize("stem", sorted(LEGACY_PARAM))
def test_ignored_legacy_parameter_is_dropped_with_a_warning_naming_the_file(stem):
    """Failed before: ``ModelFormatError: ...: params: gain='exp2' is not one of ('exp',
    'linear')`` (or ``truncation_level=-3 must be >= 0``) for a model its own version
    trained, saved and predicted with; the objective never used the value."""
    name, value = LEGACY_PARAM[stem]
    with pytest.warns(UserWarning, match="older versions recorded it unchecked") as record:
        b = load_model(DATA / f"{stem}.json")
    msgs = [str(w.message) for w in record]
    assert len(msgs) == 1, msgs
    assert f"{stem}.json" in msgs[0]
    assert f"params.{name}={value!r}" in msgs[0]
    assert f"objective {b.objective!r} does not use it" in msgs[0]
    assert b.params[name] is None  # treated as unset, as the code of the time did
    # the estimator built from it scores (evaluation takes gain from params)
    ds = _training_data()
    r = Ranker.from_booster(b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # X without column names
        assert np.isfinite(r.score(ds.X, ds.y, qid=np.repeat(np.arange(24), 8)))


def test_ignored_parameter_with_a_valid_value_is_kept(tmp_path):
    d = json.loads((DATA / "2b5b036_rankboost_gain_exp2.json").read_text())
    d["params"]["gain"] = "linear"
    (tmp_path / "m.json").write_text(json.dumps(d))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = load_model(tmp_path / "m.json")
    assert b.params["gain"] == "linear"


def test_a_bad_value_of_a_parameter_the_objective_uses_is_still_refused(tmp_path):
    """Only ignored parameters are dropped: rankboost takes ``pair_method``;
    lambdamart ``gain``."""
    d = json.loads((DATA / "2b5b036_rankboost_gain_exp2.json").read_text())
    d["params"].update(gain=None, pair_method="zzz")
    (tmp_path / "m.json").write_text(json.dumps(d))
    with pytest.raises(ModelFormatError, match=r"m\.json: params: pair_method='zzz'"):
        load_model(tmp_path / "m.json")
    d = json.loads((DATA / "2b5b036_lambdamart_es.json").read_text())
    d["params"]["gain"] = "exp2"
    (tmp_path / "m.json").write_text(json.dumps(d))
    with pytest.raises(ModelFormatError, match=r"m\.json: params: gain='exp2'"):
        load_model(tmp_path / "m.json")


def test_legacy_parameter_is_not_written_back(tmp_path):
    """Saving the loaded model writes a file that loads without the warning."""
    b = _load("e522b61_mart_truncation_level_neg")
    b.save_model(tmp_path / "m.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = load_model(tmp_path / "m.json")
    assert again.params["truncation_level"] is None


def test_cli_loads_a_legacy_parameter_file_with_one_warning_line(capsys):
    rc, _, err = run(["inspect", DATA / "2b5b036_rankboost_gain_exp2.json"], capsys)
    assert rc == 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("ltrboost: warning:"), err
    assert "params.gain='exp2'" in lines[0]


# --- the CLI files of 51f2171: a --missing nan model and its checkpoint ----------------


def test_old_cli_model_scores_as_its_cli_did(tmp_path, capsys):
    out = tmp_path / "scores"
    rc, _, err = run(
        ["predict", DATA / "51f2171_cli_nan.json", DATA / "51f2171_test.txt", "-o", out], capsys
    )
    assert rc == 0, err
    assert out.read_text() == (DATA / "51f2171_cli_nan.scores").read_text()


def test_old_checkpoint_resumes_to_a_finished_model(tmp_path, capsys):
    for name in ("51f2171_train.txt", "51f2171_cli_nan.json.checkpoint"):
        shutil.copy(DATA / name, tmp_path / name)
    ck = tmp_path / "51f2171_cli_nan.json.checkpoint"
    out = tmp_path / "51f2171_cli_nan.json"
    argv = ["train", tmp_path / "51f2171_train.txt", "--resume", ck, "-o", out]
    argv += ["--n-estimators", "3", "--max-leaf-nodes", "3", "--min-samples-leaf", "5", "-q"]
    rc, _, err = run([*argv, "--checkpoint-every", "2", "--n-threads", "1"], capsys)
    assert rc == 0, err
    b = load_model(out)
    assert b.n_iterations == 3
    assert b.missing == "nan"  # the checkpoint's --missing
    assert not ck.exists()  # the output holds everything the checkpoint had
    first = load_model(DATA / "51f2171_cli_nan.json.checkpoint")
    X = np.array([[0.5, np.nan, -1.0], [np.nan, 0.2, np.nan]])
    np.testing.assert_array_equal(b.predict_raw(X, iteration=2), first.predict_raw(X))


# --- unbiased LambdaMART with early stopping, written before position_bias.best_iteration


def test_old_unbiased_file_says_its_position_bias_is_the_last_rounds():
    """92e752b kept only the last round's estimates; ``position_bias_`` is documented
    as the best iteration's.  Failed before: it returned the last round's silently."""
    b = _load("92e752b_unbiased_es")
    assert b.best_iteration < b.n_iterations
    assert b.best_position_bias is None
    r = Ranker.from_booster(b)
    with pytest.warns(UserWarning, match=r"after round 2 .* not after best_iteration_ 1"):
        bias = r.position_bias_
    np.testing.assert_array_equal(bias["t_plus"], b.position_bias["t_plus"])

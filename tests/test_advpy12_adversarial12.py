"""The Python API with this stop's and the last stop's parameters (``quantized_gradients``,
``random_strength``, ``ole_top_features``), a twelfth adversarial pass, from a user's
side: bad values through ``Ranker``, ``ltrboost.train`` and ``BoosterParams`` (one-line
ValueErrors naming the parameter and the value; a fitted Ranker whose refit is refused
keeps its model), model-file round trips (the parameters written only when set), and
the names of README's parameter table that a ported LightGBM/XGBoost dict uses.

Found: README's table gives LightGBM's ``use_quantized_grad`` + ``num_grad_quant_bins``
(+ ``quant_train_renew_leaf``) for ``quantized_gradients``, ``bagging_by_query`` for
``subsample`` and XGBoost's ``lambdarank_num_pair_per_sample`` for
``truncation_level``, but ``train()`` refused a dict with them as unknown with no hint,
where every other ported name of the table says what it is here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from ltrboost import BoosterParams, Ranker, load_model, train
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.params import PARAM_NAMES

X, Y, QID = make_ranking(n_queries=8, docs_per_query=(6, 10), n_features=4, random_state=3)[:3]
SMALL = dict(n_estimators=2, min_samples_leaf=2, max_leaf_nodes=4)
NEW = ("quantized_gradients", "random_strength", "ole_top_features")
README = Path(__file__).resolve().parents[1] / "README.md"


# ------------------------------- 1. README's table: every ported name is known or hinted
def _table_other_names() -> dict[str, str]:
    """LightGBM's and XGBoost's names of README's parameter table -> ltrboost's name."""
    text = README.read_text(encoding="utf-8")
    start = text.index("| ltrboost | meaning | LightGBM | XGBoost |")
    out: dict[str, str] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        ours = re.findall(r"`([a-z_0-9]+)`", cells[0])[0]
        for cell in cells[-2:]:
            # parentheses give values (`exp`, `True`) except "(+ `name`)", a name
            cell = re.sub(r"\((?!\+)[^)]*\)", "", cell)
            for name in re.findall(r"`([a-z_0-9]+)`", cell):
                out.setdefault(name, ours)
    return out


def test_readme_table_names_all_known_or_hinted():
    """A ported dict with a LightGBM/XGBoost name of README's table (``num_grad_quant_bins``)
    is refused naming the ltrboost parameter it is, as ``num_leaves`` is."""
    table = _table_other_names()
    assert {"num_grad_quant_bins", "use_quantized_grad", "num_leaves"} <= set(table)
    for name, ours in table.items():
        if name in PARAM_NAMES:
            continue
        with pytest.raises(ValueError, match="unknown parameter") as e:
            BoosterParams.from_dict({name: 4})
        msg = str(e.value)
        assert "\n" not in msg
        assert f"{name} is" in msg or f"{name}:" in msg, (name, msg[:200])
        assert ours in msg.split("; valid:")[0], (name, ours, msg[:300])


def test_quantized_grad_port_says_how():
    """LightGBM's two switches are one parameter here: the hint says
    ``use_quantized_grad=True`` with ``num_grad_quant_bins=k`` is ``quantized_gradients=k``."""
    for name in ("use_quantized_grad", "num_grad_quant_bins"):
        with pytest.raises(ValueError, match=r"quantized_gradients=k"):
            train({name: 4, **SMALL}, make_dataset(X, Y, qid=QID))
    with pytest.raises(ValueError, match=r"quant_train_renew_leaf.*always"):
        BoosterParams.from_dict({"quant_train_renew_leaf": True})


# ------------------------------------- 2. bad values: one line, naming parameter and value
BAD = [
    ("quantized_gradients", 1, "1"),
    ("quantized_gradients", 256, "256"),
    ("quantized_gradients", -1, "-1"),
    ("quantized_gradients", 2.5, "2.5"),
    ("quantized_gradients", True, "True"),
    ("quantized_gradients", "4", "'4'"),
    ("quantized_gradients", np.int64(1), "1"),
    ("quantized_gradients", np.float64(4.0), "4.0"),
    ("quantized_gradients", None, "None"),
    ("random_strength", -1.0, "-1.0"),
    ("random_strength", float("nan"), "nan"),
    ("random_strength", float("inf"), "inf"),
    ("random_strength", 10**400, "..."),
    ("random_strength", True, "True"),
    ("random_strength", None, "None"),
    ("ole_top_features", 0, "0"),
    ("ole_top_features", -1, "-1"),
    ("ole_top_features", 1.5, "1.5"),
    ("ole_top_features", True, "True"),
    ("ole_top_features", False, "False"),
    ("ole_top_features", np.int64(0), "0"),
]


@pytest.mark.parametrize(("name", "value", "shown"), BAD, ids=lambda v: repr(v)[:20])
def test_bad_value_is_one_line_naming_it(name, value, shown):
    extra = {"split_criterion": "ole"} if name == "ole_top_features" else {}
    fitted = Ranker(**SMALL).fit(X, Y, qid=QID)
    before = fitted.predict(X)
    for run in (
        lambda: fitted.set_params(**{name: value}, **extra).fit(X, Y, qid=QID),
        lambda: train({**SMALL, **extra, name: value}, make_dataset(X, Y, qid=QID)),
    ):
        with pytest.raises(ValueError, match=f"^{name}=") as e:
            run()
        msg = str(e.value)
        assert "\n" not in msg, msg
        assert shown in msg, msg
    # the refused refit left the fitted model as it was
    assert np.array_equal(fitted.predict(X), before)


# ------------------------------------------------------------ 3. model-file round trips
SET = [
    dict(quantized_gradients=np.int64(4), random_strength=np.float32(0.5), subsample=0.6),
    dict(split_criterion="ole", ole_top_features=np.int64(2), random_strength=1.0),
    dict(quantized_gradients=255, colsample_bytree=0.5, split_criterion="se"),
]


@pytest.mark.parametrize("params", SET, ids=range(len(SET)))
def test_non_default_values_round_trip(tmp_path, params):
    """Saved with non-default values: the file records them, the loaded model predicts
    identically, retraining from its parameters gives the same trees, and a clone of
    the Ranker (or a default Ranker given them by set_params) trains the same model."""
    r = Ranker(**SMALL, **params).fit(X, Y, qid=QID)
    path = tmp_path / "m.json"
    r.save_model(path)
    recorded = json.loads(path.read_text())["params"]
    for name in NEW:
        if name in params:
            assert recorded[name] == params[name]
        else:
            assert name not in recorded
    loaded = load_model(path)
    assert np.array_equal(loaded.predict(X), r.predict(X))
    again = train(loaded.params, make_dataset(X, Y, qid=QID))
    assert np.array_equal(again.predict(X), r.predict(X))
    assert np.array_equal(clone(r).fit(X, Y, qid=QID).predict(X), r.predict(X))
    refit = Ranker(**SMALL).fit(X, Y, qid=QID).set_params(**params).fit(X, Y, qid=QID)
    assert np.array_equal(refit.predict(X), r.predict(X))
    # continuing from half the rounds gives the uninterrupted model
    half = Ranker(**{**SMALL, "n_estimators": 1}, **params).fit(X, Y, qid=QID)
    cont = Ranker(**{**SMALL, "n_estimators": 1}, **params).fit(X, Y, qid=QID, init_model=half)
    assert np.array_equal(cont.predict(X), r.predict(X))


def test_defaults_write_no_new_keys(tmp_path):
    """At their defaults (``-0.0`` is 0) the three parameters are not in the file."""
    for extra in ({}, {"random_strength": -0.0}, {"quantized_gradients": np.int64(0)}):
        path = tmp_path / "d.json"
        Ranker(**SMALL, **extra).fit(X, Y, qid=QID).save_model(path)
        recorded = json.loads(path.read_text())["params"]
        assert not set(NEW) & set(recorded), extra


def test_dataframe_columns_reordered_or_renamed():
    """predict/score take a frame's columns by name (any order) and refuse renamed ones,
    with the new parameters set."""
    pd = pytest.importorskip("pandas")
    cols = [f"f{k}" for k in range(X.shape[1])]
    df = pd.DataFrame(X, columns=cols)
    r = Ranker(**SMALL, quantized_gradients=3, random_strength=1.0).fit(df, Y, qid=QID)
    rev = df[cols[::-1]]
    assert np.array_equal(r.predict(rev), r.predict(df))
    assert r.score(rev, Y, qid=QID) == r.score(df, Y, qid=QID)
    for bad in (df.rename(columns={"f0": "g0"}), df.assign(f9=1.0)):
        with pytest.raises(ValueError, match="feature names seen at fit time"):
            r.score(bad, Y, qid=QID)

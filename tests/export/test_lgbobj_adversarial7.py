"""The objective that exported files name (seventh adversarial pass).

LightGBM's text model named every built-in objective but ``xendcg`` ``lambdarank``:
a MART (least-squares) model, RankNet, RankBoost, GBRank, QBRank, YetiRank and
LogisticRank loaded into LightGBM as LambdaMART models (``Booster.params``,
``dump_model()``, every reader of the file's ``objective=`` line: treelite, lleaves,
Vespa).  Now each is LightGBM's name of the same loss where it has one whose output is
the raw score (``lambdarank``, ``rank_xendcg``, ``regression``), else ``custom``, the
name LightGBM gives a loss it does not know (raw score too).  Names whose output
LightGBM transforms (``binary``: a sigmoid, ``multiclass``: a softmax, ``cross_entropy``,
``poisson``, ...) are never written: LightGBM's predictions stay ltrboost's, to the bit.
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from ltrboost import make_dataset, train
from ltrboost.export import ExportError, export_bytes
from ltrboost.export import lightgbm as lgb_export
from ltrboost.objectives.registry import available_objectives

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DEPLOY = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")

# ltrboost objective (and parameters) -> the name LightGBM's file must carry
EXPECTED = {
    "lambdamart": "lambdarank",
    "lambdamart_map": "lambdarank",  # LambdaMART with Delta-MAP lambdas: still LambdaMART
    "unbiased": "lambdarank",  # Unbiased LambdaMART (Hu et al.): LambdaMART's loss, debiased
    "xendcg": "rank_xendcg",
    "mart": "regression",  # L2 on the grades, identity output
    "logistic_rank": "custom",  # LightGBM's `binary` would add a sigmoid
    "ranknet": "custom",
    "rankboost": "custom",
    "gbrank": "custom",
    "qbrank": "custom",
    "yetirank": "custom",
}
# names LightGBM applies an output transform to (ObjectiveFunction::ConvertOutput)
TRANSFORMING = ("binary", "multiclass", "multiclassova", "cross_entropy", "xentropy",
                "cross_entropy_lambda", "xentlambda", "poisson", "gamma", "tweedie")  # fmt: skip


def _data(n_queries=16, docs=10, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, 4))
    X[rng.random(n) < 0.1, 2] = np.nan
    y = np.clip(np.round(X[:, 0] + rng.normal(size=n) * 0.5), 0, 3)
    qid = np.repeat(np.arange(n_queries), docs)
    return X, y, qid


@functools.cache
def _model(key: str):
    X, y, qid = _data()
    params = {"n_estimators": 3, "max_leaf_nodes": 4, "min_samples_leaf": 3}
    kw = {}
    if key == "lambdamart_map":
        params.update(objective="lambdamart", lambda_metric="map")
    elif key == "unbiased":
        params.update(objective="lambdamart", unbiased=True)
        y = (y >= 2).astype(float)  # clicks
        kw["position"] = np.tile(np.arange(1, 11), len(np.unique(qid)))
    else:
        params["objective"] = key
    b = train(params, make_dataset(X, y, qid=qid, **kw))
    return b, X


def _header(text: str) -> dict[str, str]:
    head = text.split("\n\n", 1)[0]
    return dict(ln.split("=", 1) if "=" in ln else (ln, "") for ln in head.splitlines())


def _written(text: str) -> tuple[str, str]:
    params = re.findall(r"^\[objective: (.*)\]$", text, flags=re.M)
    assert len(params) == 1, params
    return _header(text)["objective"], params[0]


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_lightgbm_file_names_the_objective(key):
    b, _ = _model(key)
    if key == "unbiased":
        assert b.objective_params.get("unbiased") is True
    text = export_bytes(b, "lightgbm").decode()
    assert _written(text) == (EXPECTED[key], EXPECTED[key])


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_lightgbm_reads_the_name_and_predicts_the_raw_score(key, tmp_path):
    lgb = pytest.importorskip("lightgbm")
    b, X = _model(key)
    path = tmp_path / "m.txt"
    path.write_bytes(export_bytes(b, "lightgbm"))
    lb = lgb.Booster(model_file=str(path))
    assert lb.params["objective"] == EXPECTED[key]
    # no output transform: predict is the raw score (divided by the trees for GBRank's
    # average_output, which raw_score=True leaves undivided), and ltrboost's, to the bit
    raw = lb.predict(X, raw_score=True)
    if b.update_rule == "averaged":
        raw = raw / lb.num_trees()
    np.testing.assert_array_equal(lb.predict(X), raw)
    np.testing.assert_array_equal(lb.predict(X), b.predict(X))
    dump = lb.dump_model()
    if EXPECTED[key] == "custom":  # as for LightGBM's own custom-objective models
        assert "objective" not in dump
    else:
        assert dump["objective"].split()[0] == EXPECTED[key]


def test_every_builtin_objective_is_covered():
    """A new objective must be given a LightGBM name here (or be refused)."""
    covered = {k for k in EXPECTED if k not in ("lambdamart_map", "unbiased")} | {"mcrank"}
    assert set(available_objectives()) <= covered | {
        o for o in available_objectives() if o.startswith("_")
    }


def test_no_name_with_an_output_transform_is_ever_written():
    for ours, theirs in lgb_export.LIGHTGBM_OBJECTIVE_NAMES.items():
        assert theirs.split()[0] not in TRANSFORMING, (ours, theirs)
        assert theirs in ("lambdarank", "rank_xendcg", "regression"), (ours, theirs)
    assert lgb_export.lightgbm_objective("ranknet") == "custom"
    assert lgb_export.lightgbm_objective("custom:my_loss") == "custom"
    assert lgb_export.lightgbm_objective("logistic_rank") == "custom"


def test_mcrank_still_refused_rather_than_multiclass():
    """LightGBM's ``multiclass`` would predict class probabilities, not McRank's
    expected grade: the LightGBM export is refused (ONNX carries it)."""
    X, y, qid = _data()
    b = train({"objective": "mcrank", "n_estimators": 2}, make_dataset(X, y, qid=qid))
    with pytest.raises(ExportError, match="onnx"):
        export_bytes(b, "lightgbm")


def test_mapping_documented():
    doc = " ".join(lgb_export.__doc__.split())
    for ours in ("mart", "ranknet", "rankboost", "gbrank", "qbrank", "yetirank",
                 "logistic_rank", "xendcg", "lambdamart"):  # fmt: skip
        assert f"``{ours}``" in doc, ours
    assert "``regression``" in doc
    assert "``custom``" in doc
    flat = " ".join(README.split())
    assert "`mart` model is `objective=regression`" in flat
    assert "every other one `lambdarank`" not in flat
    flat = " ".join(DEPLOY.split())
    assert "`regression` for a `mart` model" in flat

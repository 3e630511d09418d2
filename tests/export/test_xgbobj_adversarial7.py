"""The objective that the XGBoost JSON and RankLib files name (seventh adversarial pass).

The XGBoost JSON export wrote ``objective.name = "rank:pairwise"`` for every model: a
LambdaMART (NDCG or MAP) model loaded into XGBoost as RankNet, a MART (least-squares)
model as a pairwise ranker, with XGBoost's default pair parameters, whatever ltrboost
trained with.  Now each objective is XGBoost's name of the same loss where XGBoost has
one whose output is the raw score *and* OpenSearch / Elasticsearch LTR's
``model/xgboost+json+raw`` parser (``XGBoostRawJsonParser``) knows it: ``rank:ndcg``,
``rank:map`` (with the pair parameters XGBoost can represent), ``rank:pairwise`` for
RankNet, ``reg:linear`` for MART (OpenSearch refuses ``reg:squarederror``); every other
objective keeps ``rank:pairwise`` (no XGBoost name; its loss is in the learner attribute
``ltrboost_objective``).  No name with an output transform (``binary:logistic``,
``reg:logistic``) is written: XGBoost's predictions stay its float32 sum of the leaves.

RankLib's first line picks the loader's class: a ``mart`` model is ``## MART`` (RankLib's
``MART extends LambdaMART``: the same ensemble format, loaded and scored the same way),
every other model ``## LambdaMART`` (RankLib's RankBoost / RankNet / ... headers select
other model formats).
"""

from __future__ import annotations

import copy
import functools
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import _consumers as C

from ltrboost import make_dataset, train
from ltrboost.export import export_bytes
from ltrboost.export import xgboost as xgb_export
from ltrboost.objectives.registry import available_objectives

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DEPLOY = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")

# ltrboost objective (and parameters) -> XGBoost's objective.name
EXPECTED = {
    "lambdamart": "rank:ndcg",
    "lambdamart_map": "rank:map",
    "lambdamart_err": "rank:pairwise",  # XGBoost has no ERR objective: no name
    "unbiased": "rank:ndcg",  # Unbiased LambdaMART: LambdaMART's loss, debiased
    "mart": "reg:linear",  # least squares; OpenSearch knows reg:linear, not squarederror
    "ranknet": "rank:pairwise",  # XGBoost's rank:pairwise is RankNet's loss
    "xendcg": "rank:pairwise",
    "logistic_rank": "rank:pairwise",  # binary:logitraw's loss is log(1 + e^(-t s)), not (LR-1)
    "rankboost": "rank:pairwise",
    "gbrank": "rank:pairwise",
    "qbrank": "rank:pairwise",
    "yetirank": "rank:pairwise",
    "custom": "rank:pairwise",
}
# the name XGBoost's own config says once loaded (reg:linear is its old alias)
LOADED = {"reg:linear": "reg:squarederror"}
# XGBoostRawJsonParser.XGBoostObjective.setName: raw (NOOP) names; the sigmoid ones
OPENSEARCH_RAW = ("binary:logitraw", "rank:ndcg", "rank:map", "rank:pairwise", "reg:linear")
TRANSFORMING = ("binary:logistic", "reg:logistic", "binary:hinge", "multi:softmax",
                "multi:softprob", "count:poisson", "reg:gamma", "reg:tweedie")  # fmt: skip
ALL_PAIRS = "4294967294"  # XGBoost's largest k (2**32 - 1 is "not set": k = 32)


def squared_error(scores, labels, query_offsets):
    return 2.0 * (scores - labels), np.full_like(scores, 2.0)


def _data(n_queries=16, docs=10, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = rng.normal(size=(n, 4))
    X[rng.random(n) < 0.1, 2] = np.nan
    y = np.clip(np.round(X[:, 0] + rng.normal(size=n) * 0.5), 0, 3)
    qid = np.repeat(np.arange(n_queries), docs)
    return X, y, qid


@functools.cache
def _model(key: str, extra: tuple = ()):
    X, y, qid = _data()
    params = {"n_estimators": 3, "max_leaf_nodes": 4, "min_samples_leaf": 3}
    kw = {}
    if key.startswith("lambdamart_"):
        params.update(objective="lambdamart", lambda_metric=key.split("_", 1)[1])
    elif key == "unbiased":
        params.update(objective="lambdamart", unbiased=True)
        y = (y >= 2).astype(float)  # clicks
        kw["position"] = np.tile(np.arange(1, 11), len(np.unique(qid)))
    elif key == "custom":
        params["objective"] = squared_error
    else:
        params["objective"] = key
    params.update(dict(extra))
    b = train(params, make_dataset(X, y, qid=qid, **kw))
    return b, X


def _objective(b) -> dict:
    return json.loads(export_bytes(b, "xgboost"))["learner"]["objective"]


def _load(xgb, b, tmp_path, text: bytes | None = None):
    path = tmp_path / "m.json"
    path.write_bytes(export_bytes(b, "xgboost") if text is None else text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        xb = xgb.Booster(model_file=str(path))
    return xb, [str(w.message) for w in caught]


# --- XGBoost JSON -------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_xgboost_file_names_the_objective(key):
    b, _ = _model(key)
    obj = _objective(b)
    assert obj["name"] == EXPECTED[key]
    assert obj["name"] in OPENSEARCH_RAW
    assert obj["name"] not in TRANSFORMING
    learner = json.loads(export_bytes(b, "xgboost"))["learner"]
    assert learner["attributes"]["ltrboost_objective"] == b.objective


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_xgboost_reads_the_name_and_predicts_the_raw_score(key, tmp_path):
    xgb = pytest.importorskip("xgboost")
    b, X = _model(key)
    xb, caught = _load(xgb, b, tmp_path)
    name = EXPECTED[key]
    assert json.loads(xb.save_config())["learner"]["objective"]["name"] == LOADED.get(name, name)
    assert xb.attr("ltrboost_objective") == b.objective
    if name == "reg:linear":  # XGBoost's only complaint: its old alias (kept for OpenSearch)
        assert len(caught) == 1, caught
        assert "reg:linear is now deprecated" in caught[0], caught
    else:
        assert caught == []
    dm = xgb.DMatrix(X, missing=np.nan)
    got = xb.predict(dm, validate_features=False)
    # identity output: predict is the margin, bit for bit, which is the float32 sum of
    # the leaves (as OpenSearch sums them), and ltrboost's score to float32 rounding
    np.testing.assert_array_equal(got, xb.predict(dm, output_margin=True, validate_features=False))
    model = json.loads(export_bytes(b, "xgboost"))
    np.testing.assert_array_equal(got, C.opensearch_raw_score(model, X))
    np.testing.assert_allclose(got, b.predict(X), rtol=0, atol=1e-5)


def _lambdarank(b) -> dict:
    return _objective(b)["lambdarank_param"]


@pytest.mark.parametrize(
    ("key", "extra", "method", "k"),
    [
        ("lambdamart", (), "topk", "30"),
        ("lambdamart", (("truncation_level", 5),), "topk", "5"),
        ("lambdamart", (("truncation_level", 0),), "topk", ALL_PAIRS),  # 0: every pair
        ("lambdamart", (("pair_method", "all"),), "topk", ALL_PAIRS),
        ("lambdamart", (("pair_method", "sampled"), ("pairs_per_sample", 3)), "mean", "3"),
        ("lambdamart_map", (("truncation_level", 7),), "topk", "7"),
        ("ranknet", (), "topk", ALL_PAIRS),  # RankNet's default: every pair
        ("ranknet", (("pair_method", "topk"), ("truncation_level", 4)), "topk", "4"),
    ],
)
def test_pair_selection_is_written_as_xgboost_reads_it(key, extra, method, k, tmp_path):
    """ltrboost's ``topk`` is XGBoost's (pairs with a document in the current top k),
    ``all`` is ``topk`` with every document in the top k (XGBoost's largest k: its
    2**32 - 1 means "not set", i.e. k = 32), ``sampled`` is ``mean``."""
    b, _ = _model(key, extra)
    lp = _lambdarank(b)
    assert (lp["lambdarank_pair_method"], lp["lambdarank_num_pair_per_sample"]) == (method, k)
    xgb = pytest.importorskip("xgboost")
    xb, _ = _load(xgb, b, tmp_path)
    loaded = json.loads(xb.save_config())["learner"]["objective"]["lambdarank_param"]
    for name, value in lp.items():
        assert loaded[name] == value, name


@pytest.mark.parametrize(
    ("key", "extra", "want"),
    [
        ("lambdamart", (), {"ndcg_exp_gain": "1", "lambdarank_normalization": "1"}),
        ("lambdamart", (("gain", "linear"),), {"ndcg_exp_gain": "0"}),
        (
            "lambdamart",
            (("lambda_normalization", False),),
            {"lambdarank_normalization": "0", "lambdarank_score_normalization": "0"},
        ),
        ("lambdamart", (), {"lambdarank_score_normalization": "1"}),
        # RankNet has no normalisation (tests/objectives/test_pairwise.py's agreement)
        ("ranknet", (), {"lambdarank_normalization": "0", "lambdarank_score_normalization": "0"}),
    ],
)
def test_gain_and_normalisation_are_written(key, extra, want):
    lp = _lambdarank(_model(key, extra)[0])
    for name, value in want.items():
        assert lp[name] == value, name


def test_unbiased_stays_lambdarank_unbiased_0_because_xgboost_refuses_1(tmp_path):
    """XGBoost's unbiased LambdaMART reads its bias arrays (``ti+``, ``tj-``) on load and
    refuses ``lambdarank_unbiased: "1"`` without them; the debiasing is training only,
    so the file says ``"0"`` (docs/deploy.md)."""
    xgb = pytest.importorskip("xgboost")
    b, _ = _model("unbiased")
    assert b.objective_params.get("unbiased") is True
    model = json.loads(export_bytes(b, "xgboost"))
    assert model["learner"]["objective"]["lambdarank_param"]["lambdarank_unbiased"] == "0"
    bad = copy.deepcopy(model)
    bad["learner"]["objective"]["lambdarank_param"]["lambdarank_unbiased"] = "1"
    with pytest.raises(xgb.core.XGBoostError):
        _load(xgb, b, tmp_path, json.dumps(bad).encode())


def test_mart_objective_block_is_xgboosts_regression_one():
    obj = _objective(_model("mart")[0])
    assert obj == {"name": "reg:linear", "reg_loss_param": {"scale_pos_weight": "1"}}


def test_every_builtin_objective_is_covered():
    """A new objective must be given an XGBoost name here (or be refused)."""
    covered = {k for k in EXPECTED if k not in ("lambdamart_map", "lambdamart_err",
                                                "unbiased", "custom")} | {"mcrank"}  # fmt: skip
    assert {o for o in available_objectives() if not o.startswith("_")} <= covered


def test_the_mapping_never_names_a_transform():
    name = xgb_export.xgboost_objective_name
    assert name("lambdamart", {"lambda_metric": "ndcg"}) == "rank:ndcg"
    assert name("lambdamart", {}) == "rank:ndcg"  # the default metric
    assert name("lambdamart", {"lambda_metric": "map"}) == "rank:map"
    assert name("lambdamart", {"lambda_metric": "err"}) == "rank:pairwise"
    assert name("mart", {}) == "reg:linear"
    assert name("custom:my_loss", {}) == "rank:pairwise"
    for o in available_objectives():
        for metric in ("ndcg", "map", "err"):
            assert name(o, {"lambda_metric": metric}) in OPENSEARCH_RAW


# --- RankLib --------------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_ranklib_header_names_mart_and_scores_the_same(key):
    b, X = _model(key)
    text = export_bytes(b, "ranklib", assume_no_missing=True).decode()
    lines = text.splitlines()
    assert lines[0] == ("## MART" if key == "mart" else "## LambdaMART")
    assert f"## exported by ltrboost: objective = {b.objective}" in lines
    # MART extends LambdaMART in RankLib: same loader, same Ensemble.eval
    other = text.replace(lines[0], "## LambdaMART", 1)
    np.testing.assert_array_equal(C.ranklib_score(text, X), C.ranklib_score(other, X))
    Xz = np.nan_to_num(X)
    np.testing.assert_allclose(C.ranklib_score(text, Xz), b.predict(Xz), rtol=0, atol=1e-5)


# --- documentation ----------------------------------------------------------------------


def test_mapping_documented():
    doc = " ".join(xgb_export.__doc__.split())
    for ours in ("lambdamart", "mart", "ranknet", "rankboost", "gbrank", "qbrank",
                 "yetirank", "logistic_rank", "xendcg"):  # fmt: skip
        assert f"``{ours}``" in doc, ours
    for theirs in ("rank:ndcg", "rank:map", "rank:pairwise", "reg:linear", "ltrboost_objective"):
        assert f"``{theirs}``" in doc, theirs
    assert "no XGBoost name" in doc
    assert "``lambdarank_unbiased``" in doc
    flat = " ".join(README.split())
    assert "says `rank:pairwise` for every model" not in flat
    assert "`mart` model is `reg:linear`" in flat
    assert "`## MART`" in flat
    flat = " ".join(DEPLOY.split())
    assert "`rank:pairwise` for every model" not in flat
    assert "`rank:ndcg` for a `lambdamart` model" in flat
    assert "`reg:linear` for a `mart` model" in flat
    assert "no XGBoost name" in flat
    assert "`## MART`" in flat
    ranklib_doc = " ".join(sys.modules["ltrboost.export.ranklib"].__doc__.split())
    assert "``## MART``" in ranklib_doc

"""Names and warnings of a training (advname12, adversarial pass 12).

* A callable objective was named by ``custom_name``'s own rule (``__name__`` if truthy,
  else the type's name), a callable metric by ``callable_name`` (``__name__``, refused
  unless a non-empty string).  They disagreed on ``__name__ = ""`` (the objective
  ``"custom:function"``), ``"   "`` (``"custom:   "``), ``5`` (``"custom:5"``) and
  ``b"x"`` (``"custom:b'x'"``), all of which a metric refuses.  One rule now: the
  objective is ``"custom:" + callable_name(fn)``, refused where the metric is.
* ``eval_names=["   "]`` (or ``train(valid_sets=[("\\t", ds)])``) was accepted: the log
  read ``[1]    's ndcg@10``.  A blank name is refused naming the parameter and
  position, as an empty one was; so is a name holding a control character (a newline
  split each log line in two), and likewise a callable's name.
* The objectives' own warnings (LambdaMART's position-bias bound and clipped file
  estimates, logistic_rank's threshold and ``label_scale`` warnings, OLE's pair-count
  warning) counted a fixed ``stacklevel``: they named a line inside ltrboost.  They
  name the caller's line now, through ``ltrboost.train`` and ``Ranker.fit``.
* One sample weight of 1e30 among weights of 1: float64's 16 digits cannot hold the
  others' part of the gradient sums, so every split gain was rounding and training
  found no split, warning only that "no split meets min_samples_leaf".  Weights more
  than 1e15 apart now warn up front naming both rows.
"""

from __future__ import annotations

import functools
import json
import warnings

import numpy as np
import pytest

import ltrboost
from ltrboost import Ranker, load_model
from ltrboost._evaluation import callable_name
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking
from ltrboost.objectives.custom import CUSTOM_PREFIX, custom_name
from ltrboost.params import ParameterWarning

FAST = dict(n_estimators=2, min_samples_leaf=3, max_leaf_nodes=4, random_state=0)


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=8, docs_per_query=6, n_features=3, random_state=0)


# ------------------------------------------------- 1. one naming rule for a callable
def _grad(scores, labels, query_offsets, scale=1.0):
    return scale * (scores - labels), np.ones_like(scores)


def _named(name):
    def fn(scores, labels, query_offsets):
        return scores - labels, np.ones_like(scores)

    fn.__name__ = name
    return fn


class _Obj:
    def __call__(self, scores, labels, query_offsets):
        return scores - labels, np.ones_like(scores)

    def method(self, scores, labels, query_offsets):
        return scores - labels, np.ones_like(scores)


class _NameAttr(_Obj):
    def __init__(self, name):
        self.__name__ = name


def _partial_named():
    p = functools.partial(_grad, scale=2.0)
    p.__name__ = "grad_x2"
    return p


AGREED = {
    "def": lambda: _grad,
    "lambda": lambda: lambda s, y, q: (s - y, np.ones_like(s)),
    "partial": lambda: functools.partial(_grad, scale=2.0),
    "partial-named": _partial_named,
    "instance": _Obj,
    "bound-method": lambda: _Obj().method,
    "name-none": lambda: _NameAttr(None),
    "comma": lambda: _named("a,b"),
    "padded": lambda: _named(" f "),
    "colon": lambda: _named("custom:x"),
    "unicode": lambda: _named("grad_é"),
}


@pytest.mark.parametrize("make", AGREED.values(), ids=AGREED.keys())
def test_an_objective_is_named_as_the_same_callable_metric(make):
    fn = make()
    assert custom_name(fn) == CUSTOM_PREFIX + callable_name(fn)


@pytest.mark.parametrize("make", AGREED.values(), ids=AGREED.keys())
def test_the_model_file_names_objective_and_metric_alike(data, make, tmp_path):
    """Trained with ``fn`` as objective and a metric of the same naming: the file's
    objective is ``"custom:" +`` the metric's key in ``evals_result``."""
    X, y, qid = data
    fn = make()
    metric_name = callable_name(fn)

    def metric(scores, labels, query_offsets):
        return float(np.mean(scores))

    metric.__name__ = metric_name
    model = Ranker(**FAST, objective=fn, eval_metric=metric).fit(
        X, y, qid=qid, eval_set=[(X, y, qid)]
    )
    model.save_model(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert loaded.objective == CUSTOM_PREFIX + metric_name
    assert list(loaded.evals_result["valid_0"]) == [metric_name]


REFUSED = {
    "empty": (lambda: _named(""), "''"),
    "spaces": (lambda: _NameAttr("   "), "'   '"),
    "int": (lambda: _NameAttr(5), "5"),
    "bytes": (lambda: _NameAttr(b"x"), "b'x'"),
    "newline": (lambda: _named("a\nb"), r"'a\\nb'"),
    "nul": (lambda: _named("a\x00b"), r"'a\\x00b'"),
}


@pytest.mark.parametrize(("make", "shown"), REFUSED.values(), ids=REFUSED.keys())
def test_an_objective_whose_name_a_metric_refuses_is_refused(data, make, shown):
    """Before: ``"custom:function"``, ``"custom:   "``, ``"custom:5"``, ``"custom:b'x'"``
    (a metric refused each), and the control characters made the file's name unreadable
    in every log and error line."""
    X, y, qid = data
    fn = make()
    for param in ("eval_metric", "objective"):
        kw = {param: fn}
        with pytest.raises(ValueError, match=rf"^{param}: the callable .*__name__={shown}") as e:
            Ranker(**FAST, **kw).fit(X, y, qid=qid, eval_set=[(X, y, qid)])
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=rf"^objective: the callable .*__name__={shown}"):
        ltrboost.train(dict(FAST, objective=fn), make_dataset(X, y, qid=qid))


def test_built_in_objective_files_are_unchanged(data, tmp_path):
    X, y, qid = data
    model = Ranker(**FAST).fit(X, y, qid=qid)
    assert model.booster_.to_dict()["objective"] == "lambdamart"


# -------------------------------------------------------- 2. blank validation names
@pytest.mark.parametrize(
    ("names", "k", "what"),
    [
        (["   "], 0, r"is blank \('   '\)"),
        (["a", "\t"], 1, r"is blank \('\\t'\)"),
        (["a", "\u3000"], 1, "is blank"),
        ([""], 0, "is empty"),
        (["a\nb"], 0, r"holds a control character \('\\n'\)"),
        (["ok", "x\x1b[31m"], 1, r"holds a control character \('\\x1b'\)"),
    ],
)
def test_a_blank_eval_name_is_refused_naming_its_position(data, names, k, what):
    X, y, qid = data
    with pytest.raises(ValueError, match=rf"^eval_names\[{k}\].* {what}") as e:
        Ranker(**FAST).fit(X, y, qid=qid, eval_set=[(X, y, qid)] * len(names), eval_names=names)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("name", "what"),
    [("  ", "is blank"), ("\n", "is blank"), ("v\r", "holds a control character")],
)
def test_train_refuses_a_blank_validation_name(data, name, what):
    X, y, qid = data
    ds = make_dataset(X, y, qid=qid)
    with pytest.raises(ValueError, match=rf"^valid_sets\[1\].* {what}") as e:
        ltrboost.train(dict(n_estimators=1), ds, valid_sets=[("v", ds), (name, ds)])
    assert "\n" not in str(e.value)


def test_padded_and_numeric_eval_names_still_work(data):
    """Names are not stripped anywhere: ' a' and 'a' are two names, as before."""
    X, y, qid = data
    model = Ranker(**FAST).fit(X, y, qid=qid, eval_set=[(X, y, qid)] * 3, eval_names=[" a", "a", 0])
    assert list(model.evals_result_) == [" a", "a", "0"]


# ----------------------------------------- 3. objectives' warnings name the user's line
def _only_ours(caught, match):
    hits = [w for w in caught if match in str(w.message)]
    assert hits, [str(w.message) for w in caught]
    return hits


def _assert_here(caught, match):
    for w in _only_ours(caught, match):
        assert w.filename == __file__, (w.filename, w.lineno, str(w.message)[:80])


def _grades():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = rng.integers(0, 5, size=120).astype(float)
    return X, y, np.repeat(np.arange(12), 10)


ROUTES = ["train", "fit"]


def _fit(route, params, X, y, qid, **kw):
    """Train through ``ltrboost.train`` or ``Ranker.fit``; the warnings come from the
    line of the call below (this file)."""
    if route == "train":
        init = kw.pop("init_model", None)
        if isinstance(init, Ranker):
            init = init.booster_
        ds = make_dataset(X, y, qid=qid, position=kw.pop("position", None))
        return ltrboost.train(params, ds, init_model=init)
    return Ranker(**params).fit(X, y, qid=qid, **kw)


@pytest.mark.parametrize("route", ROUTES)
def test_label_scale_warning_names_the_callers_line(route):
    X, y, qid = _grades()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _fit(route, dict(FAST, objective="logistic_rank", label_scale={7: 2}), X, y, qid)
    _assert_here(caught, "label_scale names grade 7")


@pytest.mark.parametrize("route", ROUTES)
def test_logistic_threshold_warning_names_the_callers_line(route):
    X, y, qid = _grades()
    p = dict(FAST, objective="logistic_rank")
    first = Ranker(**p).fit(X, y, qid=qid)  # grades 0..4: threshold 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _fit(route, p, X, np.minimum(y, 2), qid, init_model=first)  # 0..2: threshold 1
    _assert_here(caught, "positive_threshold resolves to 1")


def _cycle_log(n=10, deep=(3, 4, 5, 6), seed=7):
    """test_ubias_adversarial7's log on which eqs. 30, 31 have no finite solution."""
    rng = np.random.default_rng(seed)
    X, y, qid, pos = [], [], [], []
    kinds = [((1, 2), (1, 0)), ((1, 2), (0, 1))] + [((2, k), (1, 0)) for k in deep]
    for kind, (shown, clicked) in enumerate(kinds):
        for k in range(n):
            X.append(rng.normal(size=(2, 3)))
            y += clicked
            pos += shown
            qid += [kind * 100_000 + k] * 2
    return np.vstack(X), np.array(y, float), np.array(qid), np.array(pos)


@pytest.mark.parametrize("route", ROUTES)
def test_position_bias_bound_warning_names_the_callers_line(route):
    X, y, qid, pos = _cycle_log()
    p = dict(unbiased=True, n_estimators=20, max_positions=6, position_bias_norm=0.0, n_threads=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _fit(route, p, X, y, qid, position=pos)
    _assert_here(caught, "the bound of the estimates")


@pytest.mark.parametrize("route", ROUTES)
def test_clipped_file_bias_warning_names_the_callers_line(route):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    pos = np.tile(np.arange(1, 5), 100)
    y = (rng.random(pos.size) < 0.5 / pos).astype(float)
    qid = np.repeat(np.arange(100), 4)
    p = dict(unbiased=True, n_estimators=2, max_positions=4, n_threads=1)
    first = ltrboost.train(p, make_dataset(X, y, qid=qid, position=pos))
    d = json.loads(json.dumps(first.to_dict()))
    d["position_bias"] = {"t_plus": [1, 1e-25, 1, 1], "t_minus": [1, 1, 1, 1]}
    extreme = ltrboost.model.booster_from_dict(d)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _fit(route, p, X, y, qid, position=pos, init_model=extreme)
    _assert_here(caught, "in the model continued from")


@pytest.mark.parametrize("route", ROUTES)
def test_ole_later_rounds_warning_names_the_callers_line(route, monkeypatch):
    """Round 1 holds 36 pairs, a later round may hold more than 200."""
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", "200")
    rng = np.random.default_rng(0)
    y = np.tile(np.r_[np.zeros(3), np.ones(3), np.zeros(24)], 4)
    qid = np.repeat(np.arange(4), 30)
    X = np.c_[y + rng.normal(0, 0.1, y.size), rng.normal(size=y.size)]
    p = dict(
        split_criterion="ole",
        pair_method="topk",
        truncation_level=3,
        n_estimators=1,
        min_samples_leaf=2,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _fit(route, p, X, y, qid)
    _assert_here(caught, "holds every pair of a round in memory")


# --------------------------------------------------- 4. weights too far apart to add
@pytest.mark.parametrize("route", ROUTES)
def test_weights_beyond_float64s_digits_warn_naming_the_rows(route):
    """One weight of 1e30 among 1s: every tree was one leaf ("no split meets
    min_samples_leaf=..."), with nothing said of the weights."""
    X, y, qid = _grades()
    w = np.ones(y.size)
    w[7] = 1e30
    w[3] = 0.0  # zero weights are not the smallest positive one
    p = dict(FAST, objective="lambdamart")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if route == "train":
            ltrboost.train(p, make_dataset(X, y, qid=qid, sample_weight=w))
        else:
            Ranker(**p).fit(X, y, qid=qid, sample_weight=w)
    hits = _only_ours(caught, "sample_weight[7]=1e+30")
    assert len(hits) == 1
    msg = str(hits[0].message)
    assert "sample_weight[0]=1" in msg
    assert "1e+15" in msg
    assert "\n" not in msg
    assert issubclass(hits[0].category, ParameterWarning)
    assert hits[0].filename == __file__


@pytest.mark.parametrize("top", [1.0, 1e6, 1e15])
def test_ordinary_weights_do_not_warn(top):
    X, y, qid = _grades()
    w = np.ones(y.size)
    w[7] = top
    w[3] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Ranker(**FAST).fit(X, y, qid=qid, sample_weight=w)

"""The objectives package's seams: shared helpers, old import paths, serial drivers,
and the one label / pair check of :mod:`ltrboost.dataset`."""

from __future__ import annotations

import ast
import importlib
import pathlib

import numpy as np
import pytest

import ltrboost.objectives.base as base
from ltrboost.dataset import (
    LTRInputError,
    PreferencePairs,
    RankingDataset,
    check_labels,
    check_preference_pairs,
)
from ltrboost.objectives.registry import get_objective

OBJECTIVES_DIR = pathlib.Path(base.__file__).parent
# modules that only re-export old names
COMPAT_MODULES = {"pointwise.py", "pairwise.py", "_pairs.py"}


def test_no_objective_imports_another_modules_private_name():
    for path in sorted(OBJECTIVES_DIR.glob("*.py")):
        if path.name in COMPAT_MODULES:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "ltrboost.objectives."
            ):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"{path.name} imports {private} from {node.module}"


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("ltrboost.objectives._pairs", ["PAIR_ALL", "_enumerate_pairs_one_query"]),
        (
            "ltrboost.objectives.lambdamart",
            ["EXP_CLIP", "_lambdamart_reference", "_delta_err", "_err_prefix",
             "_delta_ap", "_ap_prefix", "_delta_ndcg", "_err_reference",
             "_ap_reference", "_doc_weights", "_no_explicit_pairs",
             "_sigmoid_from_exp", "_sigmoid_pair", "_PairwiseObjective", "_Constants"],
        ),
        ("ltrboost.objectives.pairwise", ["RankNet", "RankBoost", "_explicit_pairs"]),
        (
            "ltrboost.objectives.pointwise",
            ["MART", "LogisticRank", "McRank", "_single_output_views",
             "_single_output_scores", "_mart_gradient_hessian", "_label_scales"],
        ),
        (
            "ltrboost.objectives.gbrank",
            ["_preference_pairs_reference", "_check_tau", "_label_pair_buffers"],
        ),
    ],
)  # fmt: skip
def test_old_import_paths_still_work(module, names):
    mod = importlib.import_module(module)
    for name in names:
        assert hasattr(mod, name), f"{module}.{name}"


def _data(n_queries=6, size=9, seed=0, pairs=False):
    rng = np.random.default_rng(seed)
    n = n_queries * size
    offsets = np.arange(0, n + 1, size, dtype=np.int64)
    y = rng.integers(0, 4, n).astype(np.float64)
    pp = None
    if pairs:
        pref = np.array([0, size + 2, 3], dtype=np.int32)
        other = np.array([1, size + 5, 7], dtype=np.int32)
        pp = PreferencePairs(pref, other, np.array([1.0, 2.0, 0.5]))
    data = RankingDataset(X=np.zeros((n, 1)), y=y, query_offsets=offsets, pairs=pp)
    return data, rng.normal(size=n)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("qbrank", {}),
        ("gbrank", {}),
        ("ranknet", {}),
        ("rankboost", {}),
        ("lambdamart", {}),
        ("lambdamart", {"lambda_metric": "err"}),
        ("lambdamart", {"pair_method": "sampled"}),
    ],
)
def test_one_and_two_thread_drivers_agree_bit_for_bit(monkeypatch, name, params):
    """The query-block drivers (``_numba.over_queries``) give the same bits whether one
    thread runs every query (small data) or two threads split them."""
    import ltrboost._numba as nb

    data, s = _data(pairs=name in ("qbrank", "gbrank", "ranknet", "rankboost"))
    out = {}
    for min_docs in (10**9, 1):  # one block; a block per thread
        monkeypatch.setattr(nb, "MIN_DOCS_PER_THREAD", min_docs)
        obj = get_objective(name, **params)
        g = np.zeros(data.n_samples, np.float32)
        h = np.zeros(data.n_samples, np.float32)
        with nb.threads(2):
            obj.gradient_hessian(s, data, g, h)
            terms = obj.pair_terms(s, data)
            out[min_docs] = (g, h, obj.loss(s, data), terms)
    (g0, h0, l0, t0), (g1, h1, l1, t1) = out.values()
    np.testing.assert_array_equal(g0, g1)
    np.testing.assert_array_equal(h0, h1)
    assert l0 == l1
    if t0 is not None:
        for a, b in zip(t0, t1, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("ranknet", {}),
        ("rankboost", {"pair_method": "topk", "truncation_level": 3}),
        ("lambdamart", {"lambda_metric": "err", "truncation_level": None}),
        ("lambdamart", {"lambda_metric": "map", "pair_method": "all"}),
    ],
)
def test_streamed_label_pairs_are_bit_identical(monkeypatch, name, params):
    """``all``/``topk`` label pairs through a buffer of 1, 3 or 2^20 pairs: the same
    gradients, pair terms and loss, bit for bit (one running sum per query)."""
    from ltrboost.objectives import pair_selection

    data, s = _data(pairs=name != "lambdamart")
    w = np.random.default_rng(1).uniform(0.5, 2, data.n_samples).astype(np.float32)
    data.weights = w
    out = []
    for chunk in (1 << 20, 3, 1):
        monkeypatch.setattr(pair_selection, "PAIR_CHUNK", chunk)
        obj = get_objective(name, **params)
        g = np.zeros(data.n_samples, np.float32)
        h = np.zeros(data.n_samples, np.float32)
        obj.gradient_hessian(s, data, g, h)
        out.append((g, h, obj.loss(s, data), obj.pair_terms(s, data)))
    for g, h, loss, terms in out[1:]:
        np.testing.assert_array_equal(g, out[0][0])
        np.testing.assert_array_equal(h, out[0][1])
        assert loss == out[0][2]
        for a, b in zip(terms, out[0][3], strict=True):
            np.testing.assert_array_equal(a, b)


def test_check_labels_names_the_row():
    with pytest.raises(LTRInputError, match=r"row 2: label y\[2\]=nan") as e:
        check_labels(np.array([0.0, 1.0, np.nan]), 3)
    assert e.value.row == 2
    assert e.value.line is None
    with pytest.raises(LTRInputError, match="is negative") as e:
        check_labels(np.array([0.0, -1.0]), None, nonnegative=True)
    assert e.value.row == 1
    with pytest.raises(LTRInputError, match="non-negative integer grade; ctx") as e:
        check_labels(np.array([0.0, 1.0, 2.5]), 3, integer=True, context="ctx")
    assert e.value.row == 2
    np.testing.assert_array_equal(check_labels([[1, 2, 3]], 3), np.array([1.0, 2.0, 3.0]))
    with pytest.raises(LTRInputError, match="1-D"):
        check_labels(np.zeros((2, 2)), None)


def test_objectives_and_metrics_refuse_the_same_label_the_same_way():
    from ltrboost.metrics import get_metric

    y = np.array([1.0, np.inf, 0.0])
    data = RankingDataset(X=np.zeros((3, 1)), y=y, query_offsets=np.array([0, 3]))
    messages = []
    for name in ("mart", "mcrank", "lambdamart", "qbrank"):
        with pytest.raises(LTRInputError) as e:
            get_objective(name).prepare(data)
        messages.append(e.value)
    with pytest.raises(LTRInputError) as e:
        get_metric("ndcg")(np.zeros(3), y, np.array([0, 3]))
    messages.append(e.value)
    assert all(m.row == 1 and "label y[1]=inf is not finite" in str(m) for m in messages)


def test_ltr_input_error_line_is_one_based_and_row_zero_based():
    assert str(LTRInputError("bad", path="f.txt", line=3)) == "f.txt:3: bad"
    assert str(LTRInputError("bad", line=3)) == "line 3: bad"
    err = LTRInputError("bad", row=0)
    assert str(err) == "row 0: bad"
    assert err.row == 0
    assert err.line is None


def test_check_preference_pairs():
    offsets = np.array([0, 3, 6], dtype=np.int64)
    _, _, w, q = check_preference_pairs([0, 4], [2, 3], None, offsets)
    np.testing.assert_array_equal(q, [0, 1])
    np.testing.assert_array_equal(w, [1.0, 1.0])
    with pytest.raises(LTRInputError, match="different queries") as e:
        check_preference_pairs([0, 1], [2, 3], None, offsets)
    assert e.value.pair == 1
    assert e.value.row is None
    with pytest.raises(LTRInputError, match="preferred to itself"):
        check_preference_pairs([0], [0], None, offsets)
    with pytest.raises(LTRInputError, match="out of range"):
        check_preference_pairs([0], [6], None, offsets)
    with pytest.raises(LTRInputError, match=r"weight\[0\]"):
        check_preference_pairs([0], [1], [-1.0], offsets)


def test_label_range_errors_name_the_row():
    """Labels the exponential gain or ERR's lambdas cannot take name their row."""
    from ltrboost.objectives.lambdamart import LambdaMART

    y = np.array([0.0, 2.0, 40.0, 1.0])
    data = RankingDataset(X=np.zeros((4, 1)), y=y, query_offsets=np.array([0, 4]))
    for obj in (LambdaMART(), LambdaMART(lambda_metric="err")):
        with pytest.raises(LTRInputError) as e:
            obj.prepare(data)
        assert e.value.row == 2
        assert e.value.line is None

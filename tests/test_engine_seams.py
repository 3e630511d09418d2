"""The seams of the engine (issue 10): histogram builder, splitter, model <-> JSON
dicts, the one parameter list.

The central check: a histogram builder over two shards of the rows (whole queries each,
as a Dask worker would hold them) reduces to the same statistics as one shard, so the
grower grows the identical tree.  Gradients, hessians and pair weights are multiples of
a power of two, so every float64 sum is exact whatever the order and the trees must be
equal bit for bit.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import numpy as np
import pytest

from ltrboost.binning import BinMapper
from ltrboost.criteria import ole_hessian
from ltrboost.grower import GrowerParams, TreeGrower
from ltrboost.histogram import (
    HistogramBuilder,
    LocalHistograms,
    _build_histogram_reference,
    reduce_histograms,
)
from ltrboost.io import model_json
from ltrboost.params import (
    DEFAULTS,
    OBJECTIVE_PARAM_NAMES,
    PARAM_NAMES,
    PARAMS,
    TREE_PARAM_NAMES,
    BoosterParams,
)
from ltrboost.splitting import SplitParams, Splitter

SRC = Path(__file__).resolve().parents[1] / "src" / "ltrboost"


def _problem(seed, n_queries=24, q_size=(5, 25), n_features=5, max_bins=16):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(q_size[0], q_size[1], size=n_queries)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    n = int(offsets[-1])
    X = rng.normal(size=(n, n_features))
    X[:, 1] = np.round(X[:, 1])  # a few distinct values
    X[rng.random(size=X.shape) < 0.1] = np.nan  # missing values
    binner = BinMapper(max_bins=max_bins, random_state=0).fit(X)
    X_binned = binner.transform(X)
    # dyadic values: float64 sums are exact in any order
    g = (rng.integers(-64, 65, size=n) / 64.0).astype(np.float32)
    h = (rng.integers(1, 9, size=n) / 8.0).astype(np.float32)
    return rng, offsets, binner, X_binned, g, h


def _pairs(rng, offsets, per_query=6):
    di, dj = [], []
    for q in range(offsets.shape[0] - 1):
        lo, hi = offsets[q], offsets[q + 1]
        for _ in range(per_query):
            i, j = rng.choice(np.arange(lo, hi), size=2, replace=False)
            di.append(i)
            dj.append(j)
    rho = rng.integers(1, 5, size=len(di)) / 32.0
    return (
        np.asarray(di, dtype=np.int32),
        np.asarray(dj, dtype=np.int32),
        np.asarray(rho, dtype=np.float64),
    )


def _grower(binner, X_binned, histograms=None, **kw):
    return TreeGrower(
        None if histograms is not None else X_binned,
        binner.n_bins_non_missing_,
        binner.missing_bin_,
        binner.thresholds_matrix(),
        GrowerParams(**kw),
        n_threads=2,
        histograms=histograms,
    )


def _sharded(X_binned, binner, cut):
    """Two shards: rows [0, cut) and [cut, n), each with its own binned block."""
    shards = [
        LocalHistograms(np.asfortranarray(X_binned[:cut]), binner.missing_bin_, 2, 0),
        LocalHistograms(np.asfortranarray(X_binned[cut:]), binner.missing_bin_, 2, row_start=cut),
    ]
    return HistogramBuilder(shards)


CASES = [
    dict(kw=dict(max_leaf_nodes=12, min_samples_leaf=5), grow={}),
    dict(
        kw=dict(max_leaf_nodes=9, min_samples_leaf=3, growth="depth_first"),
        grow=dict(bag=True, features=True),
    ),
    dict(
        kw=dict(max_leaf_nodes=10, min_samples_leaf=4, split_criterion="se"),
        grow=dict(bag=True),
    ),
    dict(
        kw=dict(max_leaf_nodes=10, min_samples_leaf=4, split_criterion="ole"),
        grow=dict(pairs=True),
    ),
    dict(
        kw=dict(
            max_leaf_nodes=8,
            min_samples_leaf=3,
            split_criterion="ole",
            growth="breadth_first",
            l2_regularization=0.5,
        ),
        grow=dict(pairs=True, bag=True),
    ),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_two_shards_grow_the_identical_tree(seed, case):
    spec = CASES[case]
    rng, offsets, binner, X_binned, g, h = _problem(seed)
    n = X_binned.shape[0]
    grow_kw = {}
    if spec["grow"].get("bag"):
        qs = np.sort(rng.choice(offsets.shape[0] - 1, size=16, replace=False))
        rows = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in qs])
        grow_kw["sample_indices"] = rows.astype(np.int32)
    if spec["grow"].get("features"):
        grow_kw["feature_indices"] = np.array([0, 2, 4], dtype=np.int32)
    if spec["grow"].get("pairs"):
        di, dj, rho = _pairs(rng, offsets)
        if "sample_indices" in grow_kw:
            in_bag = np.zeros(n, dtype=bool)
            in_bag[grow_kw["sample_indices"]] = True
            keep = in_bag[di] & in_bag[dj]
            di, dj, rho = di[keep], dj[keep], rho[keep]
        grow_kw["pairs"] = (di, dj, rho)
    # an uneven cut at a query boundary: the first shard alone is too small to split
    # under min_samples_leaf, so local counts would stop it; the global ones do not
    cut = int(offsets[2])
    one_grower = _grower(binner, X_binned, **spec["kw"])
    one = one_grower.grow(g, h, **grow_kw)
    two_grower = _grower(binner, None, histograms=_sharded(X_binned, binner, cut), **spec["kw"])
    two = two_grower.grow(g, h, **grow_kw)
    assert one.nodes.shape[0] >= 5
    np.testing.assert_array_equal(one.nodes, two.nodes)
    assert two.partition is None  # no single partition when sharded
    # the scores update (every shard adds the tree to its own rows) agrees too
    base = rng.normal(size=n)
    values = one.nodes["value"] * 0.1
    a, b = base.copy(), base.copy()
    one_grower.add_to_scores(one, values, a)
    two_grower.add_to_scores(two, values, b)
    np.testing.assert_array_equal(a, b)


def test_root_statistics_come_from_the_reduction():
    """The builder reports the root's sums and count summed over shards, and its
    histogram equals the NumPy reference of all rows."""
    _, offsets, binner, X_binned, g, h = _problem(3)
    n = X_binned.shape[0]
    builder = _sharded(X_binned, binner, int(offsets[5]))
    feats = np.arange(X_binned.shape[1], dtype=np.int32)
    rows = builder.start_tree(g, h, None, feats, None)
    stats = builder.root(rows, feats)
    assert stats.count == n
    assert stats.sum_gradients == float(np.sum(g, dtype=np.float64))
    assert stats.sum_hessians == float(np.sum(h, dtype=np.float64))
    ref = _build_histogram_reference(X_binned, np.arange(n), g, h, binner.missing_bin_ + 1)
    np.testing.assert_array_equal(stats.hist, ref)


def test_reduce_histograms_one_part_is_returned_and_subset_sums():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 7, 3))
    assert reduce_histograms([a]) is a  # the sum of one histogram is itself
    b = rng.normal(size=(4, 7, 3))
    feats = np.array([1, 3], dtype=np.int32)
    out = np.full_like(a, np.nan)
    reduce_histograms([a, b], out, feats)
    np.testing.assert_array_equal(out[feats], a[feats] + b[feats])
    assert np.isnan(out[[0, 2]]).all()  # features not selected are not touched


def test_splitter_leaf_value_is_the_ole_corrected_newton_step():
    params = SplitParams(1, 0.0, 0.5, 0.0, 2)
    sp = Splitter(np.array([4], dtype=np.int32), 4, params)
    assert ole_hessian(3.0, 0.25) == 2.5
    assert sp.leaf_value(-1.5, 3.0, 0.25) == pytest.approx(1.5 / (3.0 - 0.5 + 0.5))
    assert sp.leaf_value(-1.5, 3.0) == pytest.approx(1.5 / 3.5)
    assert sp.leaf_value(1.0, -0.5) == 0.0  # no curvature: no step


# ---------------------------------------------------------------- parameters


def test_one_parameter_list_drives_every_spelling():
    from ltrboost.booster import OBJECTIVE_PARAM_NAMES as booster_obj_names

    assert [f.name for f in dataclasses.fields(BoosterParams)] == list(PARAM_NAMES)
    assert dataclasses.asdict(BoosterParams()) == DEFAULTS
    assert GrowerParams._fields == TREE_PARAM_NAMES
    assert GrowerParams()._asdict() == {k: DEFAULTS[k] for k in TREE_PARAM_NAMES}
    assert booster_obj_names == OBJECTIVE_PARAM_NAMES
    assert set(OBJECTIVE_PARAM_NAMES) <= set(PARAM_NAMES)
    groups = {p.group for p in PARAMS}
    assert groups == {"engine", "tree", "early_stopping", "objective"}
    assert BoosterParams(max_leaf_nodes=7.0).tree_kwargs()["max_leaf_nodes"] == 7


def test_ranker_init_matches_the_parameter_list():
    """scikit-learn needs an explicit keyword-only __init__; it must be the list."""
    from ltrboost.sklearn import ESTIMATOR_PARAM_NAMES, Ranker

    sig = inspect.signature(Ranker.__init__)
    params = [p for p in sig.parameters.values() if p.name != "self"]
    assert [p.name for p in params] == list(PARAM_NAMES) + list(ESTIMATOR_PARAM_NAMES)
    assert all(p.kind is p.KEYWORD_ONLY for p in params)
    defaults = {p.name: p.default for p in params}
    assert {k: defaults[k] for k in PARAM_NAMES} == DEFAULTS


# ---------------------------------------------------------------- model layer


def _module_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_model_json_imports_no_model_class():
    imports = _module_level_imports(SRC / "io" / "model_json.py")
    assert "ltrboost.model" not in imports
    assert "ltrboost.booster" not in imports
    assert "ltrboost.booster" not in _module_level_imports(SRC / "model.py")


def test_tree_dict_round_trip_on_its_own():
    _, _, binner, X_binned, g, h = _problem(4)
    grown = _grower(binner, X_binned, max_leaf_nodes=6, min_samples_leaf=5).grow(g, h)
    d = model_json.tree_to_dict(grown.nodes, output=0)
    nodes, out = model_json.tree_from_dict(d, n_features=X_binned.shape[1])
    assert out == 0
    expected = grown.nodes.copy()
    expected["num_threshold"][expected["is_leaf"] == 1] = np.inf  # leaves: no threshold
    np.testing.assert_array_equal(nodes, expected)
    d["left"][0] = 99
    with pytest.raises(model_json.ModelFormatError, match="tree 3"):
        model_json.tree_from_dict(d, n_features=X_binned.shape[1], index=3)


def test_booster_dict_round_trip_and_old_names(tmp_path):
    import ltrboost
    from ltrboost.booster import Booster as OldBooster
    from ltrboost.io.model_json import booster_from_dict, load_model, save_model
    from ltrboost.model import Booster
    from ltrboost.objectives.base import Objective

    assert OldBooster is Booster
    assert ltrboost.Booster is Booster
    assert Objective().line_search(None, None, None) is None
    X = np.random.default_rng(0).normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(float)
    ds = ltrboost.make_dataset(X, y, group=[10] * 6)
    b = ltrboost.train(dict(objective="mart", n_estimators=3, min_samples_leaf=3), ds)
    again = Booster.from_dict(b.to_dict())
    np.testing.assert_array_equal(again.predict(X), b.predict(X))
    # the JSON layer works on plain fields, without the model class
    fields = model_json.model_fields_from_dict(model_json.model_to_dict(b.model_fields()))
    assert model_json.model_to_dict(fields) == b.to_dict()
    assert sorted(fields) == sorted(b.model_fields())
    path = tmp_path / "m.json"
    save_model(b, path)
    np.testing.assert_array_equal(load_model(path).predict(X), b.predict(X))
    assert isinstance(booster_from_dict(b.to_dict()), Booster)


def test_sklearn_uses_public_names_only():
    """The estimator is an adapter over public functions: no ``_private`` name of
    another ltrboost module is imported or called through ``booster_``."""
    source = (SRC / "sklearn.py").read_text()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ltrboost"):
            assert not [a.name for a in node.names if a.name.startswith("_")]
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            inner = node.value
            assert not (isinstance(inner, ast.Attribute) and inner.attr == "booster_"), node.attr

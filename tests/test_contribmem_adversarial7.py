"""predict(X, pred_contrib=True) and memory: an output (or TreeSHAP's per-thread path
buffers) over what the process may use is refused up front, naming the shape, the bytes
and what to do, instead of being allocated lazily and swapped or killed later; row blocks
that fit (and the CLI's ``predict --contrib``, which streams blocks) are not refused; the
path buffer grows with depth x distinct features on a path, not depth^2.

The limit is simulated by patching the memory-limit helpers (the cgroup limit, or
``memory_budget`` itself): nothing here allocates more than a few MB."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

import ltrboost._config as _config
import ltrboost._warmup as _warmup
from _tree_specs import nodes_from_spec as _nodes
from ltrboost import explain
from ltrboost._numba import _resolve_n_threads, num_threads
from ltrboost.explain import _tree_shap_reference
from ltrboost.model import Booster


def _chain(depth, feature_of):
    """A chain ``depth`` splits deep: inner node 2d splits on ``feature_of(d)``, its
    left child a leaf, the chain goes on to the right."""
    spec = []
    for d in range(depth):
        f = feature_of(d)
        spec.append(
            (f, ((d * 37) % 11) / 11 - 0.5, d % 2, 2 * d + 1, 2 * d + 2, 10 * (depth - d) + 5)
        )
        spec.append(((d % 5) / 4 - 0.5, 5))
    spec.append((-1.0, 5))
    return _nodes(spec)


def _booster(trees, n_features, outputs=None, n_outputs=1, objective="lambdamart"):
    return Booster(
        objective=objective,
        objective_params={},
        init_score=np.full(n_outputs, 0.25),
        trees=trees,
        tree_outputs=outputs or [0] * len(trees),
        n_features=n_features,
        n_outputs=n_outputs,
    )


SMALL_TREE = _nodes(
    [
        (0, 0.0, 1, 1, 2, 10),
        (1, 0.5, 0, 3, 4, 6),
        (3.0, 4),
        (-1.0, 3),
        (0.5, 3),
    ]
)


def _limit_cgroup(monkeypatch, nbytes):
    """This process's cgroup memory limit read as ``nbytes`` (the guards take half)."""
    monkeypatch.setattr(_warmup, "_cgroup_memory_limit", lambda *a, **k: nbytes)
    monkeypatch.setattr(_config, "_address_space_left", lambda: None)


def _limit_budget(monkeypatch, nbytes):
    monkeypatch.setattr(_config, "memory_budget", lambda: (nbytes, "the cgroup memory limit"))


def _exact_path_length(nodes):
    """The path buffer TreeSHAP's kernel touches on ``nodes``: one past the largest
    ``off + ud`` of a node, walking the tree as the kernel lays it out (a node's path
    at its parent's offset + its own length; its length one more than the distinct
    features split on above it)."""
    need = 0
    todo = [(0, 0, frozenset())]  # node, parent's offset, features above
    while todo:
        k, poff, feats = todo.pop()
        ud = len(feats)
        off = poff + ud + 1
        need = max(need, off + ud + 1)
        if not nodes[k]["is_leaf"]:
            below = feats | {int(nodes[k]["feature_idx"])}
            todo += [(int(nodes[k]["left"]), off, below), (int(nodes[k]["right"]), off, below)]
    return need


# ====================================================================== output size guard


def test_output_over_the_cgroup_limit_is_refused_up_front(monkeypatch):
    """20,000 rows x 51 columns (8.2 MB) under a 4 MiB cgroup limit: refused before
    anything is allocated, naming the shape, the bytes, the limit and the way out."""
    F = 50
    b = _booster([SMALL_TREE], F)
    X = np.zeros((20_000, F))
    _limit_cgroup(monkeypatch, 4 << 20)
    called = []
    monkeypatch.setattr(explain, "_output_array", lambda *a: called.append(a))
    with pytest.raises(MemoryError) as info:
        b.predict(X, pred_contrib=True)
    msg = str(info.value)
    assert msg.startswith("pred_contrib=True: 20000 rows x 51 columns of float64")
    assert "8160000 bytes" in msg
    assert "half of the cgroup memory limit" in msg
    assert "predict fewer rows at a time" in msg
    assert "\n" not in msg
    assert called == []  # nothing allocated


def test_mcrank_output_counts_every_output(monkeypatch):
    """McRank's K * (F + 1) columns: 3 outputs x 11 columns x 5,000 rows (1.3 MB) is
    over half of 2 MiB though one output's block (0.44 MB) is not."""
    F, K = 10, 3
    b = _booster([SMALL_TREE] * K, F, outputs=[0, 1, 2], n_outputs=K, objective="mcrank")
    X = np.zeros((5_000, F))
    _limit_budget(monkeypatch, 2 << 20)
    with pytest.raises(MemoryError, match=r"^pred_contrib=True: 5000 rows x 33 columns"):
        b.predict(X, pred_contrib=True)


def test_row_blocks_that_fit_are_not_refused(monkeypatch):
    """The way out the message names works: the same rows a block at a time, under the
    same limit, give byte for byte the contributions of the whole X."""
    F = 50
    b = _booster([SMALL_TREE, _chain(12, lambda d: d % 7)], F)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, F))
    want = b.predict(X, pred_contrib=True)
    _limit_cgroup(monkeypatch, 4 << 20)
    with pytest.raises(MemoryError, match=r"rows at a time \(at most \d+ rows") as info:
        b.predict(X, pred_contrib=True)
    most = int(re.search(r"at most (\d+) rows", str(info.value)).group(1))
    assert 1000 < most < 20_000
    got = np.concatenate(
        [b.predict(X[i : i + most], pred_contrib=True) for i in range(0, X.shape[0], most)]
    )
    assert got.tobytes() == want.tobytes()


def test_dask_ranker_partitions_are_guarded_each(monkeypatch):
    """DaskRanker.predict runs Booster.predict per partition: partitions that fit are
    computed under a limit the whole frame would be refused by."""
    pytest.importorskip("dask.array")
    import dask.array as da

    from ltrboost import Ranker
    from ltrboost.dask import DaskRanker

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 6))
    y = (X[:, 0] > 0).astype(float) + (X[:, 1] > 0)
    r = Ranker(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=3)
    r.fit(X, y, qid=np.repeat(np.arange(30), 10))
    d = DaskRanker(**r.get_params())
    d.__dict__.update({k: v for k, v in r.__dict__.items() if k.endswith("_")})
    big = np.tile(X, (40, 1))  # 12,000 rows x 7 columns: 672,000 bytes
    want = r.predict(big, pred_contrib=True)
    _limit_budget(monkeypatch, 1 << 20)
    with pytest.raises(MemoryError, match="12000 rows x 7 columns"):
        r.predict(big, pred_contrib=True)
    lazy = d.predict(da.from_array(big, chunks=(2_000, 6)), pred_contrib=True)
    got = lazy.compute(scheduler="synchronous")
    assert got.tobytes() == want.tobytes()


def test_cli_predict_contrib_streams_blocks_under_the_limit(tmp_path, monkeypatch, capsys):
    """``ltrboost predict --contrib`` scores a block of rows at a time: under a limit
    the whole file's contributions exceed (Booster.predict of all rows is refused),
    each block fits and the output is the one written without the limit."""
    import ltrboost.cli as cli
    import ltrboost.cli.predict as cli_predict
    from ltrboost.io.letor import load_svmlight
    from ltrboost.model import load_model

    rng = np.random.default_rng(5)
    lines = []
    for i in range(3_000):
        feats = " ".join(f"{j + 1}:{rng.normal():.4f}" for j in range(6) if rng.random() < 0.8)
        lines.append(f"{rng.integers(0, 3)} qid:{i // 10} {feats}")
    data = tmp_path / "train.txt"
    data.write_text("\n".join(lines) + "\n")
    model = tmp_path / "m.json"
    argv = ["train", str(data), "-o", str(model), "--n-estimators", "3", "--quiet"]
    assert cli.main(argv) in (0, None)
    free, limited = tmp_path / "free.tsv", tmp_path / "limited.tsv"
    assert cli.main(["predict", str(model), str(data), "-o", str(free), "--contrib"]) in (0, None)

    b = load_model(model)
    # read before the limit: its 3000 x 6 X and labels (216,000 bytes) are over it too
    X = load_svmlight(str(data), n_features=b.n_features).X
    monkeypatch.setattr(cli_predict, "_PREDICT_BLOCK_BYTES", 256 * 6 * 8)  # 256 rows a block
    _limit_cgroup(monkeypatch, 100_000)  # contributions: 168,000 bytes; a block 14,336
    with pytest.raises(MemoryError, match="3000 rows x 7 columns"):
        b.predict(X, pred_contrib=True)
    argv = ["predict", str(model), str(data), "-o", str(limited), "--contrib"]
    assert cli.main(argv) in (0, None), capsys.readouterr().err
    assert limited.read_bytes() == free.read_bytes()


# ====================================================================== path buffers


def test_path_buffer_grows_with_the_features_on_a_path_not_depth_squared():
    """A chain 1,500 deep on 3 features: each path holds at most 4 elements, so the
    buffer is ~1,500 x 5, not the ~1.1 million of the depth^2 layout; it is exactly
    what the kernel touches when every feature on a path is new."""
    few = _booster([_chain(1_500, lambda d: d % 3)], 3)
    n = explain._path_buffer_length(few._packed_for(few.n_iterations))
    assert n == _exact_path_length(few.trees[0])
    assert n < 1_500 * 6
    for depth, U in ((40, 40), (40, 7), (9, 30)):
        b = _booster([_chain(depth, lambda d, U=U: d % U)], max(U, 1))
        assert explain._path_buffer_length(b._packed_for(1)) == _exact_path_length(b.trees[0])


@pytest.mark.parametrize("seed", [0, 1])
def test_path_buffer_covers_trained_trees(seed):
    from ltrboost import Ranker

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 5))
    y = np.clip(np.round(X[:, 0] + X[:, 1] * X[:, 2] + 1.5), 0, 3)
    r = Ranker(n_estimators=4, max_leaf_nodes=24, min_samples_leaf=2)
    r.fit(X, y, qid=np.repeat(np.arange(40), 10))
    b = r.booster_
    n = explain._path_buffer_length(b._packed_for(b.n_iterations))
    assert n >= max(_exact_path_length(t) for t in b.trees)


def test_deep_chain_on_few_features_runs_under_a_limit_depth_squared_would_exceed(
    monkeypatch,
):
    """1,500 deep on 3 features: the depth^2 layout took 36 MB a thread, over half of
    a 16 MiB limit; the bounded one takes ~0.3 MB.  Contributions equal the recursive
    reference's."""
    nodes = _chain(1_500, lambda d: d % 3)
    b = _booster([nodes], 3)
    X = np.random.default_rng(2).uniform(-1, 1, size=(4, 3))
    X[1, 2] = np.nan
    _limit_budget(monkeypatch, 16 << 20)
    got = b.predict(X, pred_contrib=True)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        ref = _tree_shap_reference([nodes], [0], X, 1, b.init_score)[:, 0]
    finally:
        sys.setrecursionlimit(limit)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.sum(1), b.predict(X), rtol=1e-9, atol=1e-12)


def test_a_path_buffer_over_the_limit_is_refused_naming_the_tree(monkeypatch):
    """A chain 600 deep splitting a new feature at every level: one thread's path
    buffer (~5.8 MB) alone is over half of 8 MiB; refused whatever the rows, naming the
    tree, its depth, its features and the bytes."""
    F = 600
    deep = _chain(600, lambda d: d)
    b = _booster([SMALL_TREE, deep], F)
    _limit_budget(monkeypatch, 8 << 20)
    with pytest.raises(MemoryError) as info:
        b.predict(np.zeros((1, F)), pred_contrib=True)
    msg = str(info.value)
    assert msg.startswith("pred_contrib=True: tree 1 is 600 splits deep")
    assert "600 distinct features" in msg
    assert "half of the cgroup memory limit" in msg
    assert "\n" not in msg
    # no rows: nothing to explain, no buffer; the (0, F + 1) result as before
    assert b.predict(np.zeros((0, F)), pred_contrib=True).shape == (0, F + 1)


def test_threads_are_capped_to_the_buffers_that_fit(monkeypatch):
    """Path buffers for 2 threads are over the limit, for 1 they are not: the rows run
    on 1 thread (the same contributions as on 2), not refused, not over the limit."""
    if _resolve_n_threads(2) < 2:
        pytest.skip("one CPU: nothing to cap")
    deep = _chain(300, lambda d: d)  # ~1.5 MB of path buffer a thread
    F = 300
    b = _booster([deep], F)
    X = np.random.default_rng(3).uniform(-1, 1, size=(64, F))
    want = b.predict(X, pred_contrib=True, n_threads=2)
    per_thread = explain._thread_bytes(explain._path_buffer_length(b._packed_for(1)), 300)
    out_bytes = X.shape[0] * (F + 1) * 8
    _limit_budget(monkeypatch, 2 * (out_bytes + per_thread + per_thread // 2))
    seen = []
    real = explain.over_rows

    def spy(*args, **kw):
        seen.append(num_threads())
        return real(*args, **kw)

    monkeypatch.setattr(explain, "over_rows", spy)
    got = b.predict(X, pred_contrib=True, n_threads=2)
    assert seen
    assert set(seen) == {1}
    assert got.tobytes() == want.tobytes()

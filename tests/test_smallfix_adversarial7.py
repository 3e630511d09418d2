"""Small defects found by other helpers (stop 38), each with its failing test first.

1. ``predict(X, pred_leaf=True)``: its (rows x trees) int32 output had no up-front
   memory guard (``pred_contrib`` got one: tests/test_contribmem_adversarial7.py); it
   is now refused, naming the shape, the bytes and the most rows that fit, before
   anything is allocated.
2. ``ltrboost predict --contrib`` refused by that guard printed "ltrboost: error: out of
   memory: pred_contrib=True: ...; the data or the settings need more memory ...": the
   line now names the flag (``--contrib``), says "out of memory" once, and gives the
   way out the CLI has (not Python's "predict fewer rows at a time").
3. Dask: ``$LTRBOOST_MAX_QUERY_PAIRS`` was read on each worker; the driver's is used.
4. ``ltrboost train --resume``: a parameter the model recorded explicitly (``--learning-rate
   0.1``) that this run leaves to its default, of the same value, was warned about as
   "--learning-rate None (model: 0.1) differ".

Memory limits are simulated by patching the memory-limit helpers, as the contribmem
tests do: nothing here allocates more than a few MB.
"""

from __future__ import annotations

import re
import threading
import tracemalloc
import warnings

import numpy as np
import pytest

import ltrboost
import ltrboost._config as _config
import ltrboost._warmup as _warmup
from test_contribmem_adversarial7 import SMALL_TREE, _booster, _chain


def _limit_cgroup(monkeypatch, nbytes):
    """This process's cgroup memory limit read as ``nbytes`` (the guards take half)."""
    monkeypatch.setattr(_warmup, "_cgroup_memory_limit", lambda *a, **k: nbytes)
    monkeypatch.setattr(_config, "_address_space_left", lambda: None)


def _limit_budget(monkeypatch, nbytes):
    monkeypatch.setattr(_config, "memory_budget", lambda: (nbytes, "the cgroup memory limit"))


# ====================================================================== 1. pred_leaf


def test_pred_leaf_output_over_the_limit_is_refused_up_front(monkeypatch):
    """50,000 rows x 200 trees of int32 (40 MB) under a 16 MiB cgroup limit: refused
    before the output is allocated, naming the shape, the bytes, the limit and the most
    rows that fit, as pred_contrib's guard does."""
    b = _booster([SMALL_TREE] * 200, 4)
    X = np.zeros((50_000, 4))
    _limit_cgroup(monkeypatch, 16 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(MemoryError) as info:
            b.predict(X, pred_leaf=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    msg = str(info.value)
    assert msg.startswith("pred_leaf=True: 50000 rows x 200 columns of int32 leaf indices")
    assert "40000000 bytes" in msg
    assert "over half of the cgroup memory limit (8.0 MiB, 8388608 bytes)" in msg
    assert "predict fewer rows at a time (at most 10485 rows)" in msg
    assert "\n" not in msg
    assert peak < 4 << 20  # the 40 MB output was never allocated


def test_pred_leaf_row_blocks_that_fit_are_not_refused(monkeypatch):
    """The way out the message names: the same rows a block at a time give, byte for
    byte, the leaves of the whole X; an X that fits is not refused."""
    b = _booster([SMALL_TREE, _chain(12, lambda d: d % 4)] * 50, 4)
    X = np.random.default_rng(0).normal(size=(20_000, 4))
    want = b.predict(X, pred_leaf=True)
    _limit_budget(monkeypatch, 4 << 20)  # 8 MB of leaves over half of 4 MiB
    with pytest.raises(MemoryError, match=r"at most (\d+) rows") as info:
        b.predict(X, pred_leaf=True)
    most = int(re.search(r"at most (\d+) rows", str(info.value)).group(1))
    assert most == (2 << 20) // (100 * 4)
    got = np.concatenate(
        [b.predict(X[i : i + most], pred_leaf=True) for i in range(0, X.shape[0], most)]
    )
    assert got.tobytes() == want.tobytes()


def test_pred_leaf_guard_counts_every_output_and_the_ranker_refuses_too(monkeypatch):
    """McRank's K trees a round are K columns each; Ranker.predict(pred_leaf=True)
    goes through the same guard (a Ranker trained here)."""
    K = 3
    b = _booster(
        [SMALL_TREE] * (K * 30), 4, outputs=[0, 1, 2] * 30, n_outputs=K, objective="mcrank"
    )
    _limit_budget(monkeypatch, 1 << 20)
    with pytest.raises(MemoryError, match=r"^pred_leaf=True: 5000 rows x 90 columns"):
        b.predict(np.zeros((5_000, 4)), pred_leaf=True)
    monkeypatch.undo()

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] > 0).astype(float)
    r = ltrboost.Ranker(n_estimators=20, max_leaf_nodes=4, min_samples_leaf=3)
    r.fit(X, y, qid=np.repeat(np.arange(30), 10))
    _limit_budget(monkeypatch, 1 << 20)
    with pytest.raises(MemoryError, match=r"^pred_leaf=True: 20000 rows x 20 columns"):
        r.predict(np.zeros((20_000, 4)), pred_leaf=True)


def test_pred_leaf_no_rows_or_no_trees_is_not_refused(monkeypatch):
    _limit_budget(monkeypatch, 2)
    b = _booster([SMALL_TREE], 4)
    assert b.predict(np.zeros((0, 4)), pred_leaf=True).shape == (0, 1)
    empty = _booster([], 4)
    assert empty.predict(np.zeros((1_000, 4)), pred_leaf=True).shape == (1_000, 0)


def test_dask_ranker_pred_leaf_partitions_are_guarded_each(monkeypatch):
    """DaskRanker.predict runs Booster.predict per partition: partitions that fit are
    computed under a limit the whole array is refused by."""
    pytest.importorskip("dask.array")
    import dask.array as da

    from ltrboost.dask import DaskRanker

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 6))
    y = (X[:, 0] > 0).astype(float) + (X[:, 1] > 0)
    r = ltrboost.Ranker(n_estimators=20, max_leaf_nodes=4, min_samples_leaf=3)
    r.fit(X, y, qid=np.repeat(np.arange(30), 10))
    d = DaskRanker(**r.get_params())
    d.__dict__.update({k: v for k, v in r.__dict__.items() if k.endswith("_")})
    big = np.tile(X, (40, 1))  # 12,000 rows x 20 trees: 960,000 bytes
    want = r.predict(big, pred_leaf=True)
    _limit_budget(monkeypatch, 1 << 20)
    with pytest.raises(MemoryError, match="12000 rows x 20 columns"):
        r.predict(big, pred_leaf=True)
    lazy = d.predict(da.from_array(big, chunks=(2_000, 6)), pred_leaf=True)
    got = np.asarray(lazy.compute(scheduler="synchronous"))
    assert got.tobytes() == want.tobytes()


# ====================================================================== 2. CLI lines


def _letor(path, X, qid):
    lines = []
    for row, q in zip(X, qid, strict=True):
        feats = " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(row) if v != 0)
        lines.append(f"0 qid:{q} {feats}")
    path.write_text("\n".join(lines) + "\n")


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("ltrboost: error:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_cli_contrib_refused_for_a_deep_tree_names_the_flag_once(tmp_path, monkeypatch, capsys):
    """A tree 600 splits deep on 600 features: TreeSHAP's path buffer alone is over
    half of 8 MiB, whatever the rows.  The line names --contrib, says so once, and
    the output file is not written."""
    import ltrboost.cli as cli

    F = 600
    b = _booster([SMALL_TREE, _chain(600, lambda d: d)], F)
    model, data, out = tmp_path / "m.json", tmp_path / "d.txt", tmp_path / "c.tsv"
    b.save_model(model)
    _letor(data, np.random.default_rng(0).uniform(-1, 1, size=(5, F)), [1] * 5)
    _limit_budget(monkeypatch, 8 << 20)
    rc = cli.main(["predict", str(model), str(data), "-o", str(out), "--contrib"])
    assert rc == cli.EXIT_BAD_INPUT
    line = _error_line(capsys)
    assert line.startswith("ltrboost: error: --contrib: tree 1 is 600 splits deep with 600 ")
    assert "pred_contrib" not in line
    assert line.count("memory") == line.count("memory limit") + line.count("more memory")
    assert "out of memory" not in line  # the guard says what is over what
    assert "half of the cgroup memory limit" in line
    assert "max_depth" not in line
    assert "--max-depth" in line
    assert not out.exists()


def test_cli_contrib_block_over_the_limit_names_the_flag_and_the_way_out(
    tmp_path, monkeypatch, capsys
):
    """A block of rows whose contributions alone are over the limit: the line names
    --contrib and the block (the CLI's blocks are its own, not the user's to shrink),
    not Python's "predict fewer rows at a time"."""
    import ltrboost.cli as cli
    import ltrboost.cli.predict as cli_predict

    b = _booster([SMALL_TREE], 6)
    model, data, out = tmp_path / "m.json", tmp_path / "d.txt", tmp_path / "c.tsv"
    b.save_model(model)
    _letor(data, np.random.default_rng(0).normal(size=(1_000, 6)), np.arange(1_000) // 10)
    monkeypatch.setattr(cli_predict, "_PREDICT_BLOCK_BYTES", 256 * 6 * 8)  # 256 rows a block
    _limit_budget(monkeypatch, 20_000)  # half: 10,000 bytes; a block's 256 x 7 x 8 = 14,336
    rc = cli.main(["predict", str(model), str(data), "-o", str(out), "--contrib"])
    assert rc == cli.EXIT_BAD_INPUT
    line = _error_line(capsys)
    assert line.startswith("ltrboost: error: --contrib: 256 rows x 7 columns of float64")
    assert "14336 bytes" in line
    assert "pred_contrib" not in line
    assert "out of memory" not in line
    assert "predict fewer rows" not in line
    assert "let this process use more memory" in line
    assert not out.exists()


def test_cli_bare_memory_error_keeps_its_out_of_memory_line(tmp_path, monkeypatch, capsys):
    """NumPy's own MemoryError (no guard's words) still reads "out of memory: ..." with
    the README pointer, once."""
    import ltrboost.cli as cli
    import ltrboost.cli.predict as cli_predict

    b = _booster([SMALL_TREE], 6)
    model, data, out = tmp_path / "m.json", tmp_path / "d.txt", tmp_path / "s.txt"
    b.save_model(model)
    _letor(data, np.ones((10, 6)), [1] * 10)

    def failing(*a, **k):
        raise MemoryError("Unable to allocate 2.00 GiB for an array with shape (2, 2)")

    monkeypatch.setattr(cli_predict, "_score_lines", failing)
    rc = cli.main(["predict", str(model), str(data), "-o", str(out)])
    assert rc == cli.EXIT_BAD_INPUT
    line = _error_line(capsys)
    assert line.startswith("ltrboost: error: out of memory: Unable to allocate 2.00 GiB")
    assert line.count("out of memory") == 1
    assert not out.exists()


# ====================================================================== 3. Dask pair limit


def _worker_env(monkeypatch, value):
    """``$LTRBOOST_MAX_QUERY_PAIRS`` as the Dask workers (the in-process cluster's
    threads, not this one) read it: ``value`` (None: unset)."""
    from ltrboost.objectives import pair_selection

    real = pair_selection.env_count
    driver = threading.current_thread()

    def env_count(name, default):
        if name == "LTRBOOST_MAX_QUERY_PAIRS" and threading.current_thread() is not driver:
            return default if value is None else int(value)
        return real(name, default)

    monkeypatch.setattr(pair_selection, "env_count", env_count)


# the objectives that hold a query's pairs at once and train on Dask (gbrank and
# qbrank do not: their initial score needs all the data)
QUERY_PAIR_SETTINGS = {
    "lambdamart sampled": dict(objective="lambdamart", pair_method="sampled", pairs_per_sample=3),
    "yetirank": dict(objective="yetirank"),
    "ranknet sampled": dict(objective="ranknet", pair_method="sampled", pairs_per_sample=2),
}


def _outcome(fn):
    try:
        return fn()
    except ValueError as e:
        return str(e)


@pytest.mark.parametrize("setting", list(QUERY_PAIR_SETTINGS))
def test_dask_query_pair_limit_is_the_drivers(client, monkeypatch, setting):
    """The driver's limit under the longest query's pairs, the workers' unset: Dask
    refuses as local training does (it trained); the driver's unset, the workers' under
    it: Dask trains the local model (it refused)."""
    from ltrboost import dask as ldask
    from test_daskfix_adversarial7 import FAST, _dask, _data, _same_model

    X, y, qid = _data(seed=3)
    params = dict(FAST, **QUERY_PAIR_SETTINGS[setting])
    local = ltrboost.train(params, ltrboost.make_dataset(X, y, qid=qid))

    monkeypatch.setenv("LTRBOOST_MAX_QUERY_PAIRS", "3")
    _worker_env(monkeypatch, None)
    refused = _outcome(lambda: ltrboost.train(params, ltrboost.make_dataset(X, y, qid=qid)))
    assert isinstance(refused, str)
    assert "over the limit of 3" in refused
    dist = _outcome(lambda: ldask.train(client, params, _dask(X, y, qid)))
    assert dist == refused

    monkeypatch.delenv("LTRBOOST_MAX_QUERY_PAIRS")
    _worker_env(monkeypatch, 3)
    dist = _outcome(lambda: ldask.train(client, params, _dask(X, y, qid)))
    assert not isinstance(dist, str), dist
    _same_model(local, dist, X)


# ====================================================================== 4. train --resume


def _train_file(tmp_path):
    rng = np.random.default_rng(0)
    lines = []
    for i in range(300):
        feats = " ".join(f"{j + 1}:{rng.normal():.4f}" for j in range(5))
        lines.append(f"{rng.integers(0, 3)} qid:{i // 10} {feats}")
    path = tmp_path / "train.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _resume_warnings(tmp_path, capsys, first: list[str], then: list[str]) -> list[str]:
    import ltrboost.cli as cli

    data = _train_file(tmp_path)
    m1, m2 = tmp_path / "m1.json", tmp_path / "m2.json"
    base = ["train", str(data), "--quiet", "--min-samples-leaf", "5"]
    assert cli.main([*base, "-o", str(m1), "--n-estimators", "2", *first]) == 0
    capsys.readouterr()
    argv = [*base, "--resume", str(m1), "-o", str(m2), "--n-estimators", "3", *then]
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert cli.main(argv) == 0
    err = capsys.readouterr().err
    return [ln for ln in err.splitlines() if "differ from the model's" in ln]


@pytest.mark.parametrize(
    "first",
    [
        ["--learning-rate", "0.1"],
        ["--sigma", "1"],
        ["--objective", "gbrank", "--learning-rate", "1.0", "--tau", "0.1"],
        ["--truncation-level", "30", "--gain", "exp"],
    ],
    ids=["learning-rate", "sigma", "gbrank", "lambdamart-params"],
)
def test_resume_with_the_default_equal_to_the_recorded_value_does_not_warn(tmp_path, capsys, first):
    then = first[:2] if first[0] == "--objective" else []
    assert _resume_warnings(tmp_path, capsys, first, then) == []


def test_resume_with_a_default_that_differs_still_warns_with_the_effective_value(tmp_path, capsys):
    """The model trained with --learning-rate 0.2, this run leaves it to the default
    (0.1): warned, naming the value the new rounds use, not None."""
    (line,) = _resume_warnings(tmp_path, capsys, ["--learning-rate", "0.2"], [])
    assert "--learning-rate 0.1 (model: 0.2)" in line
    assert "None" not in line


def test_resume_with_a_flag_that_differs_still_warns(tmp_path, capsys):
    (line,) = _resume_warnings(tmp_path, capsys, [], ["--sigma", "2"])
    assert "--sigma 2.0 (model: 1.0)" in line

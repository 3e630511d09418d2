"""Start-up: lazy imports, the lazily built CLI parser, the compile notice, and the
kernel cache of a read-only install (issue 12, goals 1, 2 and 5).

No timing assertions: what is checked is *which* modules an import loads, that the
lazy parser is the eager one, and (in subprocesses) that a second process compiles
nothing.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import ltrboost
from ltrboost import _numba
from ltrboost._compile_notice import TEXT, TEXT_UNCACHED, CompileNotice
from ltrboost.cli import build_parser

SRC = Path(ltrboost.__file__).resolve().parents[1]
HEAVY = ("numba", "sklearn", "scipy", "pandas", "tqdm", "llvmlite")


def _python(code: str, env: dict | None = None) -> str:
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# ---------------------------------------------------------------- lazy imports
def test_import_loads_no_engine_and_names_resolve_on_use() -> None:
    out = _python(
        "import sys, json, ltrboost\n"
        f"before = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "import ltrboost.booster, ltrboost.sklearn\n"
        "same = [ltrboost.train is ltrboost.booster.train,\n"
        "        ltrboost.Ranker is ltrboost.sklearn.Ranker,\n"
        "        ltrboost.load_model.__module__ == 'ltrboost.model']\n"
        "every = all(hasattr(ltrboost, n) for n in ltrboost.__all__)\n"
        "print(json.dumps({'before': before, 'same': same, 'all': every}))"
    )
    res = json.loads(out)
    assert res["before"] == []
    assert res["same"] == [True, True, True]
    assert res["all"]


def test_unknown_attribute_still_raises() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        ltrboost.no_such_name
    assert "Ranker" in dir(ltrboost)


def test_help_loads_no_engine() -> None:
    out = _python(
        "import sys, contextlib, io\n"
        "from ltrboost.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as f:\n"
        "    try:\n"
        "        main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "assert 'train' in f.getvalue()\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    assert out.strip() == "[]"


def test_lazy_parser_is_the_eager_parser() -> None:
    def train_parser(lazy: bool):
        parser = build_parser(lazy=lazy)
        sub = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
        return parser, sub.choices["train"]

    eager, eager_train = train_parser(False)
    lazy, lazy_train = train_parser(True)
    assert lazy_train.format_help() == eager_train.format_help()
    argv = ["train", "t.txt", "--max-leaf-nodes", "7", "--learning-rate", "0.3"]
    a, b = eager.parse_args(argv), build_parser(lazy=True).parse_args(argv)
    assert vars(a) == vars(b)
    assert b.max_leaf_nodes == 7
    assert b.learning_rate == 0.3
    assert eager.format_help() == lazy.format_help()


# -------------------------------------------------------------- compile notice
class _FakeBar:
    def __init__(self) -> None:
        self.desc: list[str] = []
        self.lines: list[str] = []

    def set_description_str(self, s: str, refresh: bool = True) -> None:
        self.desc.append(s)

    def write(self, s: str, file=None) -> None:
        self.lines.append(s)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_notice_on_a_terminal_shows_and_summarises() -> None:
    stream = _Tty()
    with CompileNotice(stream) as notice:
        notice.compile_started("k1")
        notice.compile_finished("k1", 0.25)
        notice.compile_started("k2")
        notice.compile_finished("k2", 0.5)
    text = stream.getvalue()
    assert f"\r{TEXT} 0 s" in text
    assert "compiled 2 kernels in" in text.splitlines()[-1]
    assert notice.total_kernels == 2
    assert notice.total_seconds == 0.75


def test_notice_is_silent_without_terminal_or_bar() -> None:
    stream = io.StringIO()
    with CompileNotice(stream) as notice:
        notice.compile_started("k")
        notice.compile_finished("k", 1.0)
    assert stream.getvalue() == ""


def test_notice_uses_the_bar_and_hands_its_seconds_to_the_bar_clock() -> None:
    bar = _FakeBar()
    with CompileNotice(io.StringIO()) as notice:
        notice.compile_started("before the bar")
        notice.compile_finished("before the bar", 2.0)
        notice.attach_bar(bar)
        assert notice.take_compile_seconds() == 0.0  # not the bar's time
        notice.compile_started("k")
        notice.compile_finished("k", 1.5)
        assert notice.take_compile_seconds() == 1.5
        assert notice.take_compile_seconds() == 0.0
    assert any(d.startswith(TEXT) for d in bar.desc)
    assert bar.desc[-1] == ""
    assert len(bar.lines) == 1
    assert "compiled 2 kernels" in bar.lines[0]


def test_detaching_the_bar_reports_a_burst_that_just_ended() -> None:
    # a training that ends right after its last compilation (before IDLE_S): the
    # summary goes to the bar it leaves, not nowhere (no terminal)
    bar = _FakeBar()
    with CompileNotice(io.StringIO()) as notice:
        notice.attach_bar(bar)
        notice.compile_started("k")
        notice.compile_finished("k", 0.1)
        notice.attach_bar(None)
        assert len(bar.lines) == 1
        assert "compiled 1 kernel in" in bar.lines[0]  # singular
    assert len(bar.lines) == 1  # reported once


def test_first_compilation_is_logged_at_info(monkeypatch, caplog) -> None:
    monitor = _numba._monitor
    monkeypatch.setattr(monitor, "n_compiled", 0)
    monkeypatch.setattr(monitor, "seconds", 0.0)
    fake = SimpleNamespace(py_func=SimpleNamespace(__module__="ltrboost.x"))
    fake.py_func.__qualname__ = "kernel_x"
    other = SimpleNamespace(py_func=SimpleNamespace(__module__="someone_else"))
    event = SimpleNamespace(data={"dispatcher": fake})
    with caplog.at_level(logging.INFO, logger="ltrboost"):
        monitor.on_start(SimpleNamespace(data={"dispatcher": other}))
        monitor.on_end(SimpleNamespace(data={"dispatcher": other}))
        assert monitor.n_compiled == 0  # not ours
        monitor.on_start(event)
        monitor.on_end(event)
    assert monitor.n_compiled == 1
    assert "compiling kernels, first run only" in caplog.text
    assert _numba.compile_stats()["kernels"] == 1


# ------------------------------------------------------------ read-only install
def _read_only_runner(root: Path):
    """A function running a command with ``root`` read-only, or None if impossible.

    Non-root: ``chmod a-w``.  Root ignores permissions: a read-only bind mount in a
    private mount namespace (``unshare -m``), when the system allows it.
    """
    if os.geteuid() != 0:
        for d, _, files in os.walk(root):
            for f in files:
                os.chmod(os.path.join(d, f), 0o444)
            os.chmod(d, 0o555)

        def run(cmd, **kw):
            return subprocess.run(cmd, **kw)

        return run
    if shutil.which("unshare") is None:
        return None
    wrap = ["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"']

    def run(cmd, **kw):
        return subprocess.run([*wrap, str(root), *cmd], **kw)

    probe = run(["touch", str(root / "probe")], capture_output=True)
    if probe.returncode == 0 or (root / "probe").exists():
        return None
    if b"Read-only" not in probe.stderr:
        return None
    return run


def _count_files(folder: Path) -> int:
    return sum(len(f) for _, _, f in os.walk(folder)) if folder.exists() else 0


def test_read_only_install_caches_kernels_in_the_user_folder(tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(
        SRC / "ltrboost",
        site / "ltrboost",
        ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"),
    )
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(
        PYTHONPATH=str(site),
        XDG_CACHE_HOME=str(tmp_path / "xdg"),
        NUMBA_NUM_THREADS="1",
    )
    py = [sys.executable, "-m", "ltrboost"]
    subprocess.run(
        [*py, "generate", str(data), "--n-queries", "12", "--docs-per-query", "8",
         "--n-features", "4"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    try:
        run = _read_only_runner(site)
        if run is None:
            pytest.skip("cannot make a read-only folder here (root without unshare)")
        train = [
            *py, "train", str(data / "train.txt"), "--objective", "mart",
            "--n-estimators", "2", "--max-leaf-nodes", "3", "--min-samples-leaf", "2",
            "-q", "--output",
        ]  # fmt: skip
        code = (
            "import json, sys, runpy\n"
            "from ltrboost import _numba\n"
            "sys.argv = ['ltrboost', *sys.argv[1:]]\n"
            "try:\n"
            "    runpy.run_module('ltrboost', run_name='__main__')\n"
            "except SystemExit as e:\n"
            "    assert not e.code, e.code\n"
            "print(json.dumps([_numba.compile_stats()['kernels'],\n"
            "                  _numba.cache_location()]))\n"
        )
        user_cache = tmp_path / "xdg" / "ltrboost" / "numba"
        results = []
        for i in range(2):
            cmd = [sys.executable, "-c", code, *train[3:], str(tmp_path / f"m{i}.json")]
            proc = run(cmd, env=env, capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            results[-1].append(_count_files(user_cache))
        (n1, where1, files1), (n2, where2, files2) = results
        assert where1 == where2 == str(user_cache)
        assert n1 > 0
        assert files1 > 0
        assert n2 == 0
        assert files2 == files1
        assert not any(f.endswith((".nbi", ".nbc")) for _, _, fs in os.walk(site) for f in fs)
        assert (tmp_path / "m0.json").read_bytes() == (tmp_path / "m1.json").read_bytes()
    finally:
        for d, _, _ in os.walk(site):
            os.chmod(d, os.stat(d).st_mode | stat.S_IWUSR)


# ------------------------------------------------- thread driver over queries
def test_query_blocks_cover_all_queries_in_order() -> None:
    offsets = np.array([0, 1, 50, 51, 52, 200, 201, 400], dtype=np.int64)
    for n in range(1, 10):
        blocks = _numba.query_blocks(offsets, n)
        assert blocks[0][0] == 0
        assert blocks[-1][1] == offsets.shape[0] - 1
        assert all(b0[1] == b1[0] for b0, b1 in itertools.pairwise(blocks))
        assert all(q1 > q0 for q0, q1 in blocks)
        assert len(blocks) <= n


def test_threaded_query_kernels_match_references(monkeypatch) -> None:
    """Split into blocks on two threads (even for tiny data), the metric and
    LambdaMART kernels give the NumPy references' / the serial run's results."""
    from ltrboost.metrics import evaluate
    from ltrboost.metrics.ndcg import _ndcg_reference

    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 30, size=40)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    y = rng.integers(0, 5, size=offsets[-1]).astype(np.float64)
    s = rng.normal(size=offsets[-1])
    serial = evaluate(s, y, offsets, metrics=["ndcg@5", "err@5", "map", "mrr"])
    booster_serial = _fit(y, offsets)
    monkeypatch.setattr(_numba, "MIN_DOCS_PER_THREAD", 1)
    with _numba.threads(2):
        threaded = evaluate(s, y, offsets, metrics=["ndcg@5", "err@5", "map", "mrr"])
    assert threaded == serial
    np.testing.assert_allclose(
        threaded["ndcg@5"], np.mean(_ndcg_reference(s, y, offsets, k=5)), rtol=1e-12
    )
    assert _fit(y, offsets) == booster_serial


def _fit(y, offsets) -> str:
    """JSON of a small LambdaMART model (gradients run through over_queries)."""
    import tempfile

    rng = np.random.default_rng(4)
    X = rng.normal(size=(y.shape[0], 3))
    qid = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
    ds = ltrboost.make_dataset(X, y, qid=qid)
    params = dict(n_estimators=3, max_leaf_nodes=4, min_samples_leaf=3, n_threads=2)
    booster = ltrboost.train(params, ds, [("v", ds)])
    with tempfile.TemporaryDirectory() as d:
        booster.save_model(os.path.join(d, "m.json"))
        return Path(d, "m.json").read_text()


def test_threaded_row_kernels_match_serial_and_reference(monkeypatch) -> None:
    """Binning and raw-feature prediction split into row blocks on two threads give
    the serial results, which match the NumPy references."""
    from ltrboost import binning, tree

    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    mapper = binning.BinMapper(max_bins=16).fit(X)
    ref = binning._map_to_bins_reference(X, mapper.bin_thresholds_, mapper.missing_bin_)
    serial = mapper.transform(X)
    y = rng.integers(0, 3, size=X.shape[0]).astype(np.float64)
    qid = np.repeat(np.arange(300), 10)
    booster = ltrboost.train(
        dict(n_estimators=4, max_leaf_nodes=5, n_threads=1),
        ltrboost.make_dataset(X, y, qid=qid),
    )
    pred_serial = booster.predict(X, n_threads=1)
    monkeypatch.setattr(binning, "_MAP_ROWS_PER_THREAD", 1)
    monkeypatch.setattr(tree, "PREDICT_VISITS_PER_THREAD", 1)
    monkeypatch.setattr(tree, "PREDICT_MIN_ROWS_PER_THREAD", 1)
    with _numba.threads(2):
        threaded = mapper.transform(X)
    np.testing.assert_array_equal(serial, ref)
    np.testing.assert_array_equal(threaded, serial)
    np.testing.assert_array_equal(booster.predict(X, n_threads=2), pred_serial)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_thread_driver_works_in_a_forked_child(monkeypatch) -> None:
    """The shared pool is re-created after a fork (its threads stay in the parent)."""
    import multiprocessing

    from ltrboost.metrics import evaluate

    rng = np.random.default_rng(6)
    offsets = np.arange(0, 401, 10, dtype=np.int64)
    y = rng.integers(0, 3, size=400).astype(np.float64)
    s = rng.normal(size=400)
    monkeypatch.setattr(_numba, "MIN_DOCS_PER_THREAD", 1)
    with _numba.threads(2):
        expected = evaluate(s, y, offsets, metrics=["ndcg@5"])  # creates the pool
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply_async(_evaluate_threaded, (s, y, offsets)).get(timeout=120)
    assert got == expected


def _evaluate_threaded(s, y, offsets):
    from ltrboost.metrics import evaluate

    _numba.MIN_DOCS_PER_THREAD = 1
    with _numba.threads(2):
        return evaluate(s, y, offsets, metrics=["ndcg@5"])


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, "PASSIVE"),
        ({"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE"),  # the user's choice stands
        ({"GOMP_SPINCOUNT": "1000"}, None),  # so does a spin count
    ],
)
def test_openmp_threads_sleep_by_default(given, expected):
    """Idle OpenMP threads sleep unless the user chose otherwise (spinning threads make
    every small parallel region wait on a busy machine; see ``_numba.py``)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
    }
    env.update(given)
    out = _python("import os, ltrboost._numba; print(os.environ.get('OMP_WAIT_POLICY'))", env=env)
    assert out.strip() == str(expected)


# ------------------------------------------- what README's configuration compiles
_README_KERNELS = """
import json, sys, contextlib, io
import numba
from ltrboost.cli import main

data = sys.argv[1]
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["train", data + "/train.txt", "--valid", data + "/vali.txt",
                 "--objective", "lambdamart", "--n-estimators", "6", "--max-leaf-nodes",
                 "7", "--min-samples-leaf", "3", "--early-stopping-rounds", "3",
                 "--metric", "ndcg@10", "--output", sys.argv[2], "--quiet"]) == 0
    assert main(["eval", sys.argv[2], data + "/test.txt"]) == 0
kernels = {}
for name, mod in list(sys.modules.items()):
    if not name.startswith("ltrboost"):
        continue
    for attr, obj in vars(mod).items():
        if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.signatures:
            key = obj.py_func.__module__ + "." + obj.py_func.__qualname__
            kernels[key] = [len(obj.signatures), bool(obj.targetoptions.get("parallel"))]
print(json.dumps(kernels))
"""


def test_readme_configuration_compiles_each_kernel_once_and_only_what_it_needs(
    tmp_path: Path,
) -> None:
    """README's command (LETOR files, LambdaMART, validation NDCG@10, eval): every
    kernel it uses has one specialisation, none is a parfor, rare paths (unsorted
    indices, NA tokens, malformed features, OLE splits, the LETOR parser's full kernel
    for errors and rare numbers) and helpers inlined into their callers are not
    compiled, and the count stays where issue 12 left it: 24 functions (56 before, 32
    before the LETOR reader's small kernel, 26 before the used-column test and dense
    blocks went to NumPy).  An empty cache folder, so that every
    function is compiled (a kernel loaded from the cache brings its callees' code
    without compiling them)."""
    data = tmp_path / "data"
    env = dict(os.environ, NUMBA_NUM_THREADS="2", NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    subprocess.run(
        [sys.executable, "-m", "ltrboost", "generate", str(data), "--n-queries", "30",
         "--docs-per-query", "12", "--n-features", "6"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", _README_KERNELS, str(data), str(tmp_path / "m.json")],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    kernels = json.loads(proc.stdout.strip().splitlines()[-1])
    assert kernels, "no kernel found"
    assert {k: v for k, v in kernels.items() if v[0] != 1} == {}
    assert [k for k, v in kernels.items() if v[1]] == []
    short = {k.rsplit(".", 1)[1] for k in kernels}
    for name in (
        "_first_repeat", "_is_na_token", "_feature_error", "_two_leaf_gain",
        "ole_hessian", "_leaf_value", "query_rank_order", "rank_order_one_query",
        "_insertion_sort_desc", "_accumulate2", "_mean", "_parse_letor", "_parse_number",
        "_parse_int64", "_token_end",
    ):  # fmt: skip
        assert name not in short, name
    assert len(kernels) <= 24, sorted(kernels)


_PAIRWISE_KERNELS = """
import json, numba, sys
import ltrboost
from ltrboost.datasets import make_ranking

X, y, q = make_ranking(n_queries=12, docs_per_query=(3, 9), n_features=4, random_state=0)[:3]
for objective in ("ranknet", "rankboost", "yetirank", "gbrank"):
    ltrboost.train(dict(objective=objective, n_estimators=2, max_leaf_nodes=3,
                        min_samples_leaf=2), ltrboost.make_dataset(X, y, qid=q))
compiled = []
for name, mod in list(sys.modules.items()):
    if name.startswith("ltrboost"):
        for obj in vars(mod).values():
            if isinstance(obj, numba.core.registry.CPUDispatcher) and obj.signatures:
                compiled.append(obj.py_func.__qualname__)
print(json.dumps(sorted(set(compiled))))
"""


def test_pairwise_objectives_compile_no_sampler_and_no_metric_deltas(tmp_path: Path) -> None:
    """RankNet, RankBoost and YetiRank (|dZ| = 1, no sampled pairs) leave the pair
    engine's sampler and the ERR / MAP code uncompiled: the driver gets None for the
    seed and the metric, and Numba prunes those branches (a first ranknet fit compiled
    the engine's gradient kernel in ~10 s, ~6 s since).  GBRank's "all" pairs compile
    the pair enumerator without its sampler (seed None)."""
    env = dict(os.environ, NUMBA_NUM_THREADS="2", NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    compiled = set(json.loads(_python(_PAIRWISE_KERNELS, env).strip().splitlines()[-1]))
    assert "_gradients_queries" in compiled  # the engine did run
    assert "yetirank_pairs_one_query" in compiled
    assert "enumerate_pairs_one_query" in compiled  # GBRank's, without the sampler:
    for name in ("_label_buckets", "_sampled_partner", "delta_err", "delta_ap",
                 "err_prefix", "ap_prefix", "delta_ndcg"):  # fmt: skip
        assert name not in compiled, name


def test_threaded_engine_drivers_give_the_serial_model(monkeypatch) -> None:
    """Histograms, split search, partition, binned prediction, leaf updates and the
    pointwise gradients run on Python threads over blocks (no parfor): forced onto two
    threads even for tiny nodes, the model is the serial one byte for byte."""
    from ltrboost import histogram, splitting, tree

    rng = np.random.default_rng(8)
    X = rng.normal(size=(2000, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = rng.integers(0, 4, size=2000).astype(np.float64)
    qid = np.repeat(np.arange(100), 20)
    params = dict(n_estimators=4, max_leaf_nodes=8, min_samples_leaf=5)

    def fit(n_threads, **extra):
        import tempfile

        ds = ltrboost.make_dataset(X, y, qid=qid)
        booster = ltrboost.train(dict(params, n_threads=n_threads, **extra), ds)
        with tempfile.TemporaryDirectory() as d:
            booster.save_model(os.path.join(d, "m.json"))
            model = Path(d, "m.json").read_text()
        return model, booster.predict(X, n_threads=n_threads).tobytes()

    pointwise = ("mart", "mcrank", "logistic_rank")
    serial = fit(1)
    serial_ole = fit(1, split_criterion="ole")
    serial_pointwise = [fit(1, objective=o) for o in pointwise]
    monkeypatch.setattr(histogram, "PARALLEL_MIN_WORK", 1)
    monkeypatch.setattr(histogram, "SERIAL_SUBTRACT_WORK", 1)
    monkeypatch.setattr(histogram, "ROW_MAJOR_MAX_DENSITY", 4)
    monkeypatch.setattr(splitting, "SERIAL_SPLIT_WORK", 1)
    monkeypatch.setattr(splitting, "SERIAL_PARTITION_ROWS", 1)
    monkeypatch.setattr(tree, "SERIAL_PREDICT_ROWS", 1)
    monkeypatch.setattr(_numba, "MIN_DOCS_PER_THREAD", 1)
    for module in ("mart", "mcrank", "logistic_rank"):
        mod = __import__(f"ltrboost.objectives.{module}", fromlist=["x"])
        monkeypatch.setattr(mod, "POINTWISE_ROWS_PER_THREAD", 1)
    assert fit(2) == serial
    assert fit(2, split_criterion="ole") == serial_ole
    assert [fit(2, objective=o) for o in pointwise] == serial_pointwise


def test_notice_does_not_say_first_run_only_when_nothing_is_cached(monkeypatch) -> None:
    # a process with no writable cache folder compiles on every run: the live text must
    # not promise "first run only"
    import ltrboost._numba as nb

    monkeypatch.setattr(nb, "_UNCACHED_REASON", "the folder is read-only")
    stream = _Tty()
    with CompileNotice(stream) as notice:
        notice.compile_started("k")
        notice.compile_finished("k", 0.1)
    text = stream.getvalue()
    assert f"\r{TEXT_UNCACHED} 0 s" in text
    assert "first run only" not in text
    assert "compiled 1 kernel in" in text
    assert "not cached" in text

"""Adversarial tests of thread-count handling (``n_threads``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from ltrboost import _numba, _warmup


@pytest.fixture
def machine(monkeypatch):
    """Pretend an 8-core machine on which the process may use ``cpus`` only."""

    def set_up(cpus, numba_threads):
        monkeypatch.setattr(os, "cpu_count", lambda: 8)
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(cpus), raising=False)
        monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", numba_threads)
        # the default also follows OMP_NUM_THREADS and a cgroup CPU quota: not the host's
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        monkeypatch.setattr(_warmup, "_cgroup_cpu_quota", lambda: None)

    return set_up


@pytest.mark.parametrize("n_threads", [None, 0, -1, -2])
def test_all_cores_means_the_cpus_this_process_may_use(machine, n_threads):
    # `taskset -c 0`, a container's cpuset, or os.sched_setaffinity after numba was
    # imported: os.cpu_count() counts the machine's cores, not the usable ones.
    machine({0}, numba_threads=4)
    assert _numba._resolve_n_threads(n_threads) == 1


def test_more_than_the_cores_is_capped_at_the_cores(machine):
    # README: "more than the cores = capped at them", also when NUMBA_NUM_THREADS is
    # set higher than the cores (a global environment setting).
    machine({0, 1}, numba_threads=8)
    assert _numba._resolve_n_threads(64) == 2
    assert _numba._resolve_n_threads(2) == 2
    assert _numba._resolve_n_threads(1) == 1


def test_numba_num_threads_still_caps(machine):
    # joblib's workers (GridSearchCV(n_jobs=k)) set NUMBA_NUM_THREADS to cores // k.
    machine(range(8), numba_threads=2)
    assert _numba._resolve_n_threads(None) == 2
    assert _numba._resolve_n_threads(5) == 2


def test_threads_sets_the_count_the_drivers_use_and_restores_it():
    before = _numba.num_threads()
    with _numba.threads(1) as n:
        assert n == 1
        assert _numba.num_threads() == 1
    assert _numba.num_threads() == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork")
def test_training_leaves_numbas_threads_alone_so_a_forked_child_can_use_them(tmp_path):
    # ltrboost runs no Numba parallel region; setting Numba's thread count started
    # Numba's OpenMP pool in the user's process, and a child forked afterwards (the
    # default start method on Linux) was killed ("fork() called from a process
    # already using GNU OpenMP") as soon as it ran any numba parallel function.
    # (numba.get_num_threads() itself starts that pool: the script does not call it.)
    script = textwrap.dedent(
        """
        import multiprocessing as mp, numba, numpy as np
        from ltrboost.sklearn import Ranker

        @numba.njit(parallel=True)
        def user(n):
            out = np.zeros(n)
            for i in numba.prange(n):
                out[i] = 1.0
            return out.sum()

        rng = np.random.default_rng(0)
        X = rng.normal(size=(120, 3)); y = rng.integers(0, 3, 120)
        Ranker(n_estimators=2, n_threads=1).fit(X, y, group=[30] * 4)

        def child(q):
            q.put(user(10))

        ctx = mp.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,))
        p.start()
        p.join(120)
        print("exit", p.exitcode, q.get(timeout=5) if p.exitcode == 0 else None)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "exit 0 10.0" in out.stdout, out.stdout + out.stderr[-2000:]


def test_model_bytes_do_not_depend_on_the_thread_count(monkeypatch, tmp_path):
    from ltrboost.sklearn import Ranker

    monkeypatch.setattr(_numba, "MIN_DOCS_PER_THREAD", 1)  # really split the queries
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 4))
    y = rng.integers(0, 4, 600)
    models = {}
    for n in (1, 2, -1):
        path = tmp_path / f"m{n}.json"
        Ranker(n_estimators=4, max_leaf_nodes=7, n_threads=n).fit(
            X, y, group=[20] * 30
        ).booster_.save_model(path)
        models[n] = path.read_bytes()
    assert models[1] == models[2] == models[-1]


def test_data_generator_threads_follow_the_usable_cpus(machine, monkeypatch):
    # make_ranking_mslr_like's block-filling threads counted os.cpu_count() too.
    from ltrboost import datasets

    machine({0}, numba_threads=1)

    def no_pool(*args, **kwargs):
        raise AssertionError("a thread pool on a 1-CPU process")

    monkeypatch.setattr(datasets, "ThreadPoolExecutor", no_pool)
    monkeypatch.setattr(datasets, "_BLOCK_ROWS", 50)
    X, y, qid = datasets.make_ranking_mslr_like(300, docs_per_query=30, random_state=0)
    assert X.shape[0] == y.shape[0] == qid.shape[0] == 300

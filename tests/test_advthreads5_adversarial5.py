"""Adversarial tests of the default thread count: the limits users and containers set.

``n_threads`` None / 0 / negative (``--n-threads -1``, the default) used the CPUs of the
process's affinity only: ``OMP_NUM_THREADS`` and a cgroup CPU quota (``docker
--cpus=2`` on a 64-core host) were not read, so such a process ran 64 threads on two
CPUs' worth of time.  The cgroup files are fakes under ``tmp_path``
(``_warmup.CGROUP_ROOT`` / ``_warmup.PROC_SELF_CGROUP``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numba
import pytest

import ltrboost
from ltrboost import _numba, _warmup

SRC = Path(ltrboost.__file__).resolve().parents[1]


@pytest.fixture
def host(monkeypatch, tmp_path):
    """A 64-CPU host (affinity and Numba's pool), no OMP_NUM_THREADS, and a fake cgroup
    tree: ``host(cgroup="0::/", files={"cpu.max": "200000 100000"})``."""

    def set_up(cpus=64, numba_threads=64, cgroup="0::/\n", files=None):
        root = tmp_path / "cgroup"
        root.mkdir(exist_ok=True)
        for name, text in (files or {}).items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        proc = tmp_path / "proc_self_cgroup"
        proc.write_text(cgroup)
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
        monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", numba_threads)
        monkeypatch.setattr(_warmup, "CGROUP_ROOT", str(root))
        monkeypatch.setattr(_warmup, "PROC_SELF_CGROUP", str(proc))
        return root

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    return set_up


# ------------------------------------------------------------------ cgroup CPU quota


@pytest.mark.parametrize("n_threads", [None, 0, -1])
def test_cgroup_v2_quota_limits_the_default(host, n_threads):
    # docker run --cpus=2 on a 64-core host (cgroup v2, the container's own namespace)
    host(files={"cpu.max": "200000 100000\n"})
    assert _numba._resolve_n_threads(n_threads) == 2


@pytest.mark.parametrize(
    ("quota", "expected"),
    [("150000 100000", 2), ("50000 100000", 1), ("1000 100000", 1), ("max 100000", 64)],
)
def test_a_fraction_of_a_cpu_rounds_up(host, quota, expected):
    host(files={"cpu.max": quota})
    assert _numba._resolve_n_threads(None) == expected


def test_an_explicit_count_is_not_limited_by_the_quota(host):
    host(files={"cpu.max": "200000 100000"})
    assert _numba._resolve_n_threads(8) == 8
    assert _numba._resolve_n_threads(100) == 64  # the affinity still caps, as before


def test_cgroup_v2_quota_of_an_ancestor_applies(host):
    # systemd-run -p CPUQuota=300% ... (no cgroup namespace: the full tree is visible)
    host(
        cgroup="0::/user.slice/job.scope\n",
        files={
            "user.slice/cpu.max": "300000 100000",
            "user.slice/job.scope/cpu.max": "max 100000",
        },
    )
    assert _numba._resolve_n_threads(None) == 3


def test_cgroup_v1_quota(host):
    # Docker on cgroup v1 without a cgroup namespace: /proc/self/cgroup names the host's
    # path, /sys/fs/cgroup/cpu is the container's own cgroup
    host(
        cgroup="4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n",
        files={"cpu/cpu.cfs_quota_us": "400000\n", "cpu/cpu.cfs_period_us": "100000\n"},
    )
    assert _numba._resolve_n_threads(None) == 4


def test_cgroup_v1_no_quota(host):
    host(
        cgroup="1:cpu,cpuacct:/\n",
        files={"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"},
    )
    assert _numba._resolve_n_threads(None) == 64


@pytest.mark.parametrize("text", ["", "garbage", "0 100000", "200000 0", "-5 100000", "1 2 3"])
def test_unreadable_quota_is_ignored(host, text):
    host(files={"cpu.max": text})
    assert _numba._resolve_n_threads(None) == 64


def test_no_cgroup_files_at_all(host, tmp_path, monkeypatch):
    host()
    monkeypatch.setattr(_warmup, "PROC_SELF_CGROUP", str(tmp_path / "missing"))
    assert _numba._resolve_n_threads(None) == 64


def test_the_quota_is_capped_by_the_affinity_and_numba(host):
    host(cpus=4, numba_threads=64, files={"cpu.max": "800000 100000"})
    assert _numba._resolve_n_threads(None) == 4
    host(cpus=64, numba_threads=3, files={"cpu.max": "800000 100000"})
    assert _numba._resolve_n_threads(None) == 3


def test_no_compile_helper_under_a_one_cpu_quota(host):
    # the background compile helper is a second busy process: not on one CPU's worth
    host(cpus=8, files={"cpu.max": "100000 100000"})
    assert _warmup._available_cpus() == 1
    assert not _warmup._core_to_spare()


def test_data_generator_threads_follow_the_quota(host, monkeypatch):
    from ltrboost import datasets

    host(cpus=8, files={"cpu.max": "100000 100000"})

    def no_pool(*args, **kwargs):
        raise AssertionError("a thread pool under a 1-CPU quota")

    monkeypatch.setattr(datasets, "ThreadPoolExecutor", no_pool)
    monkeypatch.setattr(datasets, "_BLOCK_ROWS", 50)
    X, y, qid = datasets.make_ranking_mslr_like(300, docs_per_query=30, random_state=0)
    assert X.shape[0] == y.shape[0] == qid.shape[0] == 300


# ------------------------------------------------------------------ OMP_NUM_THREADS


@pytest.mark.parametrize(("value", "expected"), [("3", 3), ("4,2", 4), (" 5 ", 5), ("1", 1)])
def test_omp_num_threads_sets_the_default(host, monkeypatch, value, expected):
    host()
    monkeypatch.setenv("OMP_NUM_THREADS", value)
    assert _numba._resolve_n_threads(None) == expected
    assert _numba._resolve_n_threads(-1) == expected
    with _numba.threads(None) as n:
        assert n == expected


def test_an_explicit_count_wins_over_omp_num_threads(host, monkeypatch):
    host()
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert _numba._resolve_n_threads(6) == 6


def test_omp_num_threads_wins_over_the_quota(host, monkeypatch):
    # the user's own count, as an explicit n_threads is
    host(files={"cpu.max": "200000 100000"})
    monkeypatch.setenv("OMP_NUM_THREADS", "6")
    assert _numba._resolve_n_threads(None) == 6


def test_omp_num_threads_is_capped_like_an_explicit_count(host, monkeypatch):
    host(cpus=8, numba_threads=8)
    monkeypatch.setenv("OMP_NUM_THREADS", "32")
    assert _numba._resolve_n_threads(None) == 8
    host(cpus=8, numba_threads=2)
    assert _numba._resolve_n_threads(None) == 2


@pytest.mark.parametrize("value", ["abc", "0", "-2", "2.5", ","])
def test_a_bad_omp_num_threads_is_ignored_with_a_warning(host, monkeypatch, value):
    host(files={"cpu.max": "300000 100000"})
    monkeypatch.setenv("OMP_NUM_THREADS", value)
    monkeypatch.setattr(_warmup, "_warned_env", set())
    with pytest.warns(RuntimeWarning, match=r"OMP_NUM_THREADS=.* is not a positive integer"):
        assert _numba._resolve_n_threads(None) == 3
    with warnings.catch_warnings():  # said once
        warnings.simplefilter("error")
        assert _numba._resolve_n_threads(None) == 3


def test_an_empty_omp_num_threads_is_unset(host, monkeypatch):
    host(files={"cpu.max": "300000 100000"})
    monkeypatch.setenv("OMP_NUM_THREADS", "")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _numba._resolve_n_threads(None) == 3


def test_omp_num_threads_in_a_fresh_process():
    # what a user's shell sets, end to end (the Numba pool is not involved)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(SRC))
    env.pop("NUMBA_NUM_THREADS", None)
    code = "from ltrboost import _numba; print(_numba.num_threads())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "1"

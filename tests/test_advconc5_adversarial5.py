"""Adversarial pass 5 on concurrency and process models (engineer advconc5): trainings
and predictions in several Python threads of one process, forks, interrupts."""

from __future__ import annotations

import os
import signal
import threading
import warnings

import numpy as np
import pytest

from ltrboost import _numba, load_model, make_dataset, train

TIMEOUT = 120  # seconds any thread of these tests may take (a hang fails, never blocks)


def _data(n: int = 600, n_features: int = 6, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    y = rng.integers(0, 4, n)
    return make_dataset(X, y, group=[30] * (n // 30))


def _join(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread hung"


# ------------------------------------------------------------ warnings and load_model
def test_load_model_in_two_threads_leaves_the_warning_filters_alone(tmp_path, monkeypatch):
    # load_model checked the model's parameters under warnings.catch_warnings() +
    # simplefilter("ignore"): the filters are process-wide, so two loads in two
    # threads whose checks overlapped (A in, B in, A out, B out) restored B's copy
    # taken inside A's: "ignore everything" stayed, and every warning of the process
    # (the user's, ltrboost's PairsIgnoredWarning, ...) was silenced for good; and
    # while one thread loaded, every other thread's warnings were dropped.
    model = tmp_path / "m.json"
    train({"n_estimators": 2}, _data()).save_model(model)
    import ltrboost.metrics

    real = ltrboost.metrics.get_metric
    inside = {"A": threading.Event(), "B": threading.Event()}
    go = {"A": threading.Event(), "B": threading.Event()}

    def slow_get_metric(*args, **kwargs):
        name = threading.current_thread().name
        if name in inside:  # the check of a load: hold it there
            inside[name].set()
            assert go[name].wait(TIMEOUT)
        return real(*args, **kwargs)

    monkeypatch.setattr(ltrboost.metrics, "get_metric", slow_get_metric)
    before = list(warnings.filters)
    loaded = []
    a = threading.Thread(target=lambda: loaded.append(load_model(model)), name="A")
    b = threading.Thread(target=lambda: loaded.append(load_model(model)), name="B")
    a.start()
    assert inside["A"].wait(TIMEOUT)
    b.start()
    assert inside["B"].wait(TIMEOUT)
    assert warnings.filters == before  # nobody's warnings are dropped meanwhile
    go["A"].set()
    _join([a])
    go["B"].set()
    _join([b])
    assert len(loaded) == 2
    assert warnings.filters == before


@pytest.mark.parametrize(
    "objective",
    ["gbrank", "lambdamart", "logistic_rank", "mart", "mcrank", "qbrank", "rankboost",
     "ranknet", "yetirank"],
)  # fmt: skip
def test_checking_a_models_parameters_warns_nothing(objective):
    # what the catch_warnings above hid: nothing, so a load stays silent without it
    from ltrboost.io.model_schema import _check_params_build
    from ltrboost.params import BoosterParams

    def fail(msg):
        raise AssertionError(msg)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _check_params_build(BoosterParams(objective=objective), objective, fail)


# ---------------------------------------------------------------------- fork
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_a_thread_pool_while_another_thread_held_its_lock():
    # The drivers' thread pool is made under a lock; a fork copies only the forking
    # thread, so a child forked while another thread (a training in the background,
    # which takes the lock at every parallel step) held it found it held for ever:
    # its first multi-threaded step (training, predict) hung.
    _numba._executor(2)  # the parent's pool exists
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with _numba._pool_lock:
            held.set()
            release.wait(TIMEOUT)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(TIMEOUT)
        pid = os.fork()
        if pid == 0:  # the child: a pool of its own, or SIGALRM ends it
            code = 1
            try:
                signal.alarm(10)
                code = 0 if _numba._executor(2).submit(int, "7").result() == 7 else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        _join([holder])
    assert os.waitstatus_to_exitcode(status) == 0, "the forked child hung on the lock"


# --------------------------------------------------------- interrupts, exceptions
@pytest.mark.parametrize("blocks_per_thread", [1, 4])
def test_an_interrupted_driver_leaves_no_block_running(monkeypatch, blocks_per_thread):
    # Ctrl-C (KeyboardInterrupt) lands in the calling thread, in its own block or while
    # it waits for the others: the driver raised at once and left the pool's threads
    # working on (and writing into the arrays of) a call that had already ended, and
    # the blocks still queued started afterwards.  Now the blocks not started are
    # dropped and the running ones finish before the interrupt goes on.
    monkeypatch.setattr(_numba, "num_threads", lambda: 2)
    worker_in = threading.Event()
    ran, finished = [], []

    def block(r0: int, r1: int) -> None:
        ran.append(r0)
        if threading.current_thread() is threading.main_thread():
            assert worker_in.wait(TIMEOUT)
            raise KeyboardInterrupt
        worker_in.set()
        threading.Event().wait(0.3)  # slower than the caller's block
        finished.append(r0)

    n_rows = 2 * blocks_per_thread
    with pytest.raises(KeyboardInterrupt):
        _numba.over_rows(block, n_rows, min_rows_per_thread=1, blocks_per_thread=blocks_per_thread)
    done = (list(ran), list(finished))
    threading.Event().wait(0.5)  # nothing runs any more
    assert (ran, finished) == done
    assert len(finished) == len(ran) - 1  # every block begun but the caller's finished
    assert len(ran) < n_rows or blocks_per_thread == 1  # the rest never started


def test_an_interrupted_query_driver_leaves_no_block_running(monkeypatch):
    monkeypatch.setattr(_numba, "num_threads", lambda: 2)
    worker_in = threading.Event()
    finished = []

    def block(q0: int, q1: int) -> None:
        if threading.current_thread() is threading.main_thread():
            assert worker_in.wait(TIMEOUT)
            raise KeyboardInterrupt
        worker_in.set()
        threading.Event().wait(0.3)
        finished.append(q0)

    with pytest.raises(KeyboardInterrupt):
        _numba.over_queries(block, np.array([0, 10, 20]), min_docs_per_thread=1)
    assert finished == [1]


# ------------------------------------------------- guarantees that held (kept as tests)
def _model_bytes(booster, path) -> bytes:
    booster.save_model(path)
    return path.read_bytes()


def test_trainings_in_threads_at_once_give_the_bytes_of_each_alone(monkeypatch, tmp_path):
    # different objectives and n_threads share the drivers' pool; a third raises from
    # its callback meanwhile: the others' models are unchanged, the error is its own
    monkeypatch.setattr(_numba, "MIN_DOCS_PER_THREAD", 1)  # really split the queries
    ds = _data()
    setups = {"a": ("lambdamart", 2), "b": ("yetirank", 1), "c": ("mart", 2)}

    def fit(key, callbacks=()):
        objective, n = setups[key]
        params = {"objective": objective, "n_estimators": 4, "n_threads": n}
        return _model_bytes(train(params, ds, callbacks=callbacks), tmp_path / f"{key}.json")

    alone = {k: fit(k) for k in setups}
    together, errors = {}, []

    def boom(env):
        if env.iteration == 1:
            raise RuntimeError("callback failed")

    def run(key):
        try:
            together[key] = fit(key, [boom] if key == "c" else ())
        except RuntimeError as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in setups]
    for t in threads:
        t.start()
    _join(threads)
    assert together == {"a": alone["a"], "b": alone["b"]}
    assert len(errors) == 1
    assert "after round 2" in " ".join(errors[0].__notes__)


def test_predict_in_many_threads_at_once_on_one_booster():
    # README: a Booster may predict from several threads at once (its packed trees are
    # built once; each call's n_threads is its own)
    from concurrent.futures import ThreadPoolExecutor

    booster = train({"n_estimators": 6, "n_threads": 2}, _data())
    X = np.random.default_rng(1).normal(size=(25_000, 6))  # above the serial size
    expected = {it: booster.predict(X, iteration=it, n_threads=1) for it in (None, 3)}
    booster._packed.clear()

    def job(k):
        it = (None, 3)[k % 2]
        return it, booster.predict(X, iteration=it, n_threads=1 + k % 3)

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(job, range(18), timeout=TIMEOUT))
    assert all(np.array_equal(p, expected[it]) for it, p in results)


def _fit_in_child(n_threads: int) -> list[float]:
    ds = _data()
    booster = train({"n_estimators": 3, "n_threads": n_threads}, ds)
    return booster.predict(ds.X, n_threads=n_threads).tolist()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_process_pool_after_a_training_in_the_parent(method):
    # fork: the children run the drivers' pool of their own (the parent's threads do
    # not exist there), and nothing started GNU OpenMP in the parent (it kills
    # forked children); spawn: a fresh interpreter loads the kernels from the cache
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    if method not in mp.get_all_start_methods():
        pytest.skip(f"no {method} here")
    expected = _fit_in_child(2)
    with ProcessPoolExecutor(2, mp_context=mp.get_context(method)) as pool:
        results = list(pool.map(_fit_in_child, [1, 2], timeout=240))
    assert results == [expected, expected]

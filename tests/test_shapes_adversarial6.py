"""Adversarial pass: pathological data shapes, end to end (Python and CLI).

What was tried (small but telling sizes, each run under ~30 s and ~3 GiB), and what it did:

* One query of 50 000 documents (5 grades), every objective, 2 rounds.  Pointwise ones
  (mart, logistic_rank, mcrank) train in < 4 s.  ``gbrank`` / ``qbrank`` refuse at once
  naming the query and ``$LTRBOOST_MAX_QUERY_PAIRS`` (18.6 GiB of pairs).  ranknet,
  rankboost and lambdamart with ``pair_method="all"`` stream their 1.25e9 pairs in bounded
  memory (< 300 MB RSS; ranknet ~17 s a round); with ``split_criterion="ole"`` they refuse
  naming ``$LTRBOOST_MAX_OLE_PAIRS``, ``pair_method`` and ``split_criterion='newton'`` --
  but only after the first round's gradients and pair count (15-23 s at 50k, O(n^2)
  passes).  Fixed here: ``all``'s pairs are the label pairs of two grades, so the same
  refusal now comes at the start of training (0.1 s).
  yetirank (``permutations * (n - 1)`` pairs) trains with OLE.
* 200 000 one-document queries: every objective trains; the pairwise ones warn that no
  query holds two labels (one constant score).
* 2 rows (one query, or two queries), 1 feature, all features constant, all labels equal
  (0 or 2), labels only 0 and max: all train; degenerate cases warn why the model is
  constant.
* 20 000 features x 50 rows, dense and SciPy CSR (1% dense): train and predict.
* LETOR files through the CLI ``train`` / ``predict`` / ``eval``: negative qids work;
  qids beyond int64, float qids (``qid:1.5``) and 10 000-character string qids are
  refused as ``FILE:LINE`` errors (the qid shown truncated); CRLF line ends and a last line
  without newline read as usual; a file of only comments is "no data lines"; a
  10M-character comment is skipped.  A 12M-character line of 900 000 features refuses
  up front with the histogram guard naming ``--max-bins``.
* Fixed here: the histogram guard (and ``pair_precision``'s pair-buffer guard) took half
  the machine's *physical* memory as the budget, so under an address-space limit
  (``ulimit -v``) or a container's cgroup memory limit a wide file went past the guard:
  a ``MemoryError`` traceback in Python (the CLI's catch-all "out of memory" names no
  setting), or the kernel's OOM killer in a container.  The budget is now the least of
  physical memory, the cgroup memory limit and the address space left under
  ``RLIMIT_AS``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ltrboost
from ltrboost import _config, _warmup, binning

SRC = str(Path(ltrboost.__file__).resolve().parents[1])
AS_LIMIT = 3 << 29  # 1.5 GiB of address space (importing NumPy + Numba takes ~0.7)


def _run_limited(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    prelude = textwrap.dedent(
        f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, ({AS_LIMIT}, {AS_LIMIT}))
        """
    )
    env = dict(os.environ, PYTHONPATH=SRC, NUMBA_NUM_THREADS="2")
    env.pop("LTRBOOST_MAX_HISTOGRAM_BYTES", None)
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_wide_data_under_address_space_limit_is_refused_naming_max_bins(tmp_path) -> None:
    """5 rows x 150 000 varying features: 2.6 GiB of histograms.  Under a 1.5 GiB
    ``RLIMIT_AS`` this was a MemoryError traceback from NumPy; now the guard refuses it
    up front, naming max_bins."""
    proc = _run_limited(
        """
        import numpy as np
        from ltrboost import train
        from ltrboost.dataset import make_dataset
        from ltrboost.params import ParameterError
        rng = np.random.default_rng(0)
        X = rng.normal(size=(5, 150_000))
        try:
            train(dict(n_estimators=1, min_samples_leaf=1),
                  make_dataset(X, np.array([0., 1, 2, 0, 1]), qid=np.zeros(5, int)))
        except ParameterError as e:
            print("REFUSED", e)
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "REFUSED" in proc.stdout, proc.stdout
    assert "max_bins" in proc.stdout
    assert "address space" in proc.stdout


def test_wide_file_under_address_space_limit_cli_names_flag(tmp_path) -> None:
    path = tmp_path / "wide.txt"
    rng = np.random.default_rng(1)
    feats = " ".join(f"{k}:{v:.3f}" for k, v in enumerate(rng.normal(size=150_000), 1))
    path.write_text(f"2 qid:1 {feats}\n0 qid:1 1:0.5\n1 qid:1 2:0.25\n")
    out = tmp_path / "m.json"
    proc = _run_limited(
        f"""
        import sys
        from ltrboost.cli import main
        sys.exit(main(["train", {str(path)!r}, "-o", {str(out)!r},
                       "--n-estimators", "1", "--min-samples-leaf", "1"]))
        """,
        tmp_path,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "--max-bins" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not out.exists()


@pytest.fixture
def cgroup(monkeypatch, tmp_path):
    """A fake cgroup tree: ``cgroup(proc="0::/job\\n", files={"job/memory.max": "..."})``."""

    def set_up(proc: str, files: dict[str, str]) -> None:
        root = tmp_path / "cgroup"
        root.mkdir(exist_ok=True)
        for name, text in files.items():
            p = root / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        proc_file = tmp_path / "proc_self_cgroup"
        proc_file.write_text(proc)
        monkeypatch.setattr(_warmup, "CGROUP_ROOT", str(root))
        monkeypatch.setattr(_warmup, "PROC_SELF_CGROUP", str(proc_file))

    monkeypatch.delenv("LTRBOOST_MAX_HISTOGRAM_BYTES", raising=False)
    return set_up


@pytest.mark.parametrize(
    ("proc", "files"),
    [
        ("0::/job\n", {"job/memory.max": f"{64 << 20}\n", "memory.max": "max\n"}),
        ("0::/job/step\n", {"job/memory.max": f"{64 << 20}\n", "job/step/memory.max": "max\n"}),
        ("4:memory:/job\n", {"memory/job/memory.limit_in_bytes": f"{64 << 20}\n"}),
        # Docker on v1: the host's path in /proc/self/cgroup, the container's own
        # cgroup mounted at the root
        ("4:memory:/docker/abc\n", {"memory/memory.limit_in_bytes": f"{64 << 20}\n"}),
    ],
)
def test_cgroup_memory_limit_bounds_the_guards(cgroup, proc, files) -> None:
    cgroup(proc, files)
    assert _warmup._cgroup_memory_limit() == 64 << 20
    assert _config.usable_memory() <= 64 << 20
    assert binning.histogram_memory_limit() <= 32 << 20

    # pair_precision: 3000 documents of two labels, 2.25e6 pairs, 36 MB of pair buffers
    from ltrboost.metrics.precision import PairPrecisionEvaluator

    y = np.r_[np.zeros(1500), np.ones(1500)]
    with pytest.raises(ValueError, match=r"pair_precision needs .*memory"):
        PairPrecisionEvaluator(y, np.array([0, 3000]))


def test_no_cgroup_limit_means_physical_memory(cgroup) -> None:
    cgroup("0::/job\n", {"job/memory.max": "max\n"})
    assert _warmup._cgroup_memory_limit() is None
    cgroup("4:memory:/job\n", {"memory/job/memory.limit_in_bytes": "9223372036854771712\n"})
    assert _warmup._cgroup_memory_limit() is None
    phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert _config.usable_memory() <= phys


def test_explicit_histogram_limit_still_wins(cgroup, monkeypatch) -> None:
    cgroup("0::/\n", {"memory.max": f"{64 << 20}\n"})
    monkeypatch.setenv("LTRBOOST_MAX_HISTOGRAM_BYTES", str(1 << 40))
    assert binning.histogram_memory_limit() == 1 << 40


# --- OLE with pair_method="all": refuse before the O(n^2) pair count -------------------


@pytest.mark.parametrize(
    ("objective", "extra"),
    [
        ("ranknet", {}),
        ("rankboost", {}),
        ("lambdamart", {}),  # NDCG: the grower's layout written directly
        ("lambdamart", {"lambda_metric": "err"}),  # the general engine
        # the general engine counts every pair, bag or not (the bag applies after)
        ("ranknet", {"subsample": 0.5}),
    ],
)
def test_ole_all_pairs_refused_before_counting(monkeypatch, objective, extra) -> None:
    """One query of 50 000 documents with ``pair_method="all"`` and OLE spent 15-23 s
    counting its 1e9 pairs (an O(n^2) pass) before the refusal.  With ``all`` the pairs
    are exactly the label pairs of two grades, known from the labels: the same refusal
    now comes first (here: the count kernels must not run)."""
    from ltrboost import train
    from ltrboost.dataset import make_dataset
    from ltrboost.objectives import lambdamart, pair_engine
    from ltrboost.params import ParameterError

    def counted(*args, **kwargs):
        raise AssertionError("the pairs were counted before the refusal")

    over_queries = lambdamart.over_queries

    def over_queries_no_count(fn, *args):
        if fn is lambdamart._ndcg_pair_doc_counts_queries:
            counted()
        return over_queries(fn, *args)

    monkeypatch.setattr(pair_engine, "_pair_counts_all_queries", counted)
    monkeypatch.setattr(lambdamart, "over_queries", over_queries_no_count)
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", "1000")
    rng = np.random.default_rng(0)
    n = 300
    X = rng.normal(size=(n, 3))
    y = rng.integers(0, 3, n).astype(float)
    qid = np.repeat([4, 9], [60, 240])
    params = dict(
        objective=objective, pair_method="all", split_criterion="ole", n_estimators=1, **extra
    )
    with pytest.raises(ParameterError, match=r"LTRBOOST_MAX_OLE_PAIRS.*query 9 alone"):
        train(params, make_dataset(X, y, qid=qid))


def test_ole_all_pairs_under_the_limit_still_train(monkeypatch) -> None:
    """The early refusal uses the exact count: a limit of exactly the label pairs trains
    (and one pair less is refused)."""
    from ltrboost import train
    from ltrboost.dataset import make_dataset
    from ltrboost.params import ParameterError

    y = np.array([0, 1, 2, 0, 1, 2, 1, 1.0])
    exact = int(sum(a != b for i, a in enumerate(y) for b in y[i + 1 :]))
    X = np.arange(8.0)[:, None]
    data = make_dataset(X, y, qid=np.zeros(8, int))
    params = dict(objective="ranknet", pair_method="all", split_criterion="ole", n_estimators=2)
    params.update(min_samples_leaf=1)
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", str(exact))
    train(params, data)
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", str(exact - 1))
    with pytest.raises(ParameterError, match=f"{exact} pairs"):
        train(params, data)


def test_ole_all_pairs_refused_before_the_first_gradients(monkeypatch) -> None:
    """RankNet's gradients stream every pair too (~17 s a round for 50 000 documents):
    the refusal comes at the start of training, before them."""
    from ltrboost import train
    from ltrboost.dataset import make_dataset
    from ltrboost.objectives import pair_engine
    from ltrboost.params import ParameterError

    def gradients(*args, **kwargs):
        raise AssertionError("gradients computed before the refusal")

    monkeypatch.setattr(pair_engine.PairwiseObjective, "gradient_hessian", gradients)
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", "1000")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = rng.integers(0, 3, 200).astype(float)
    params = dict(objective="ranknet", pair_method="all", split_criterion="ole")
    with pytest.raises(ParameterError, match="LTRBOOST_MAX_OLE_PAIRS"):
        train(params, make_dataset(X, y, qid=np.zeros(200, int)))

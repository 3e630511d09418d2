"""An outside review of today's memory guards and notices (stop 38, task advnewC).

1. The reader's projection warning ("reading it may need about ...") pointed at a line
   of ``ltrboost/io/letor.py`` (``stacklevel=2`` from the parser is load_svmlight's own
   call), not at the user's call, so ``-W error::UserWarning:mymodule`` filters and the
   shown location missed the code that read the file.
2. ``convert``'s out-of-memory refusal of a Parquet part that is one query (the whole
   data set one query, or the last one) advised a smaller ``rows_per_file``: no value
   splits a query, the same failure again.
3. ``predict(X_sparse, pred_leaf=True)`` densified every column of each block of rows
   (a model of 2**28 features: 2 GiB a row), unlike ``predict``, while its guard counts
   only the (n, n_trees) output: refused by ``ulimit -v`` with NumPy's bare "Unable to
   allocate", or slow over a wide feature space; and ``predict`` cut the columns with
   SciPy's ``X[:, used]``, which allocates 4 bytes for every column (1 GiB there).

Memory limits are simulated (the budget patched) or set on a child process
(``RLIMIT_AS``); nothing here allocates more than a few MB.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import ltrboost._config as _config
import ltrboost.binning  # noqa: F401  (imported before any patch: it binds memory_budget by name)
import ltrboost.io.letor as letor
from ltrboost.io.letor import load_svmlight

N_FEAT = 20


def _limit_budget(monkeypatch, nbytes):
    monkeypatch.setattr(_config, "memory_budget", lambda: (nbytes, "the cgroup memory limit"))


def _write(path, n_rows=600, n_feat=N_FEAT, queries=None):
    rng = np.random.default_rng(0)
    X = rng.random((n_rows, n_feat))
    lines = [
        f"{i % 3} qid:{i // 10 if queries is None else queries} "
        + " ".join(f"{j + 1}:{X[i, j]:.6f}" for j in range(n_feat))
        for i in range(n_rows)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _projection_warnings(caught):
    return [w for w in caught if "may need about" in str(w.message)]


# ====================================================================== 1. stacklevel


def test_projection_warning_points_at_the_callers_line(tmp_path, monkeypatch):
    """A file the first block projects over the limit (then refused midway): one
    warning, located at this file's call of load_svmlight (not inside letor.py)."""
    data = _write(tmp_path / "d.txt")
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 4096)
    need = 600 * (8 * N_FEAT + 24)
    _limit_budget(monkeypatch, need // 2 + need // 4)  # projected over, then refused
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(MemoryError):
            load_svmlight(data)
    warned = _projection_warnings(caught)
    assert len(warned) == 1
    assert warned[0].filename == __file__


def test_projection_warning_of_convert_points_at_the_callers_line(tmp_path, monkeypatch):
    """letor_to_parquet reads through load_svmlight: the warning is located at the
    user's call of letor_to_parquet, not at parquet.py's call of the reader."""
    pytest.importorskip("pyarrow")
    from ltrboost.io.parquet import letor_to_parquet

    data = _write(tmp_path / "d.txt")
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 4096)
    need = 600 * (8 * N_FEAT + 24)
    _limit_budget(monkeypatch, need // 2 + need // 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(MemoryError):
            letor_to_parquet(data, tmp_path / "out.parquet")
    warned = _projection_warnings(caught)
    assert len(warned) == 1
    assert warned[0].filename == __file__
    assert not (tmp_path / "out.parquet").exists()


def test_projection_warning_filtered_by_the_callers_module_becomes_an_error(tmp_path, monkeypatch):
    """``-W error::UserWarning:<caller's module>`` (a filter on the module of the
    warning's location) turns it into an error raised from the reader, before any
    refusal: the file is not read on."""
    data = _write(tmp_path / "d.txt")
    monkeypatch.setattr(letor, "_BLOCK_BYTES", 4096)
    need = 600 * (8 * N_FEAT + 24)
    _limit_budget(monkeypatch, need // 2 + need // 4)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=UserWarning, module=__name__)
        with pytest.raises(UserWarning, match="may need about"):
            load_svmlight(data)


# ====================================================================== 2. convert


def _failing_write_table(monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet")

    def write_table(*a, **k):
        raise MemoryError("Unable to allocate 1.00 GiB for an array with shape (9,)")

    monkeypatch.setattr(pq, "write_table", write_table)


def test_convert_one_query_under_rows_per_file_does_not_advise_a_smaller_one(
    tmp_path, monkeypatch, capsys
):
    """The data set is one query of 600 rows, rows_per_file 1000 (the part is that
    query): a smaller rows_per_file writes the same part, so the refusal says the
    part is one query and names no smaller rows_per_file (Python) / --rows-per-file
    (CLI) as the way out."""
    import ltrboost.cli as cli
    from ltrboost.io.parquet import letor_to_parquet

    data = _write(tmp_path / "d.txt", queries=7)
    out = tmp_path / "out.parquet"
    _failing_write_table(monkeypatch)
    with pytest.raises(MemoryError) as info:
        letor_to_parquet(data, out, rows_per_file=1000)
    msg = str(info.value)
    assert "\n" not in msg
    assert "one query of 600 rows" in msg
    assert "smaller rows_per_file" not in msg
    assert not out.exists()

    rc = cli.main(["convert", str(data), str(out), "--rows-per-file", "1000"])
    assert rc == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln]
    assert len(lines) == 1
    assert lines[0].startswith(f"ltrboost: error: {out}: out of memory writing part.00000")
    assert "one query of 600 rows" in lines[0]
    assert "smaller --rows-per-file" not in lines[0]
    assert not out.exists()


def test_convert_one_query_over_rows_per_file_still_says_so(tmp_path, monkeypatch):
    """The case that already held: one query larger than rows_per_file."""
    from ltrboost.io.parquet import letor_to_parquet

    data = _write(tmp_path / "d.txt", queries=7)
    _failing_write_table(monkeypatch)
    with pytest.raises(MemoryError) as info:
        letor_to_parquet(data, tmp_path / "out.parquet", rows_per_file=100)
    assert "one query of 600 rows" in str(info.value)
    assert "smaller rows_per_file" not in str(info.value)


def test_convert_several_queries_still_advise_a_smaller_rows_per_file(tmp_path, monkeypatch):
    from ltrboost.io.parquet import letor_to_parquet

    data = _write(tmp_path / "d.txt")  # 60 queries of 10
    _failing_write_table(monkeypatch)
    with pytest.raises(MemoryError) as info:
        letor_to_parquet(data, tmp_path / "out.parquet", rows_per_file=1000)
    assert "a smaller rows_per_file= (now 1000)" in str(info.value)


# ====================================================================== 3. sparse pred_leaf


_WIDE_CHILD = textwrap.dedent(
    """
    import resource, sys
    import numpy as np, scipy.sparse as sp
    sys.path.insert(0, {tests!r})
    from test_advnewC_adversarial7 import wide_booster

    F = {F}
    b = wide_booster(F)
    X = sp.csr_matrix(
        (np.array([0.5, -1.0, 2.0, 3.0]), (np.array([0, 1, 1, 2]), np.array([3, 3, F - 1, 7]))),
        shape=(3, F),
    )
    small = wide_booster(10, last=9)
    Xs = sp.csr_matrix(
        (np.array([0.5, -1.0, 2.0, 3.0]), (np.array([0, 1, 1, 2]), np.array([3, 3, 9, 7]))),
        shape=(3, 10),
    )
    want = small.predict(Xs, pred_leaf=True)  # compiles the kernels before the limit
    small.predict(Xs)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    extra = 1 << 30  # 1 GiB more address space: a dense row of F float64 is 2 GiB
    resource.setrlimit(resource.RLIMIT_AS, (used + extra, resource.RLIM_INFINITY))
    got = b.predict(X, pred_leaf=True)
    assert got.tolist() == want.tolist(), (got, want)
    assert b.predict(X).tolist() == small.predict(Xs).tolist()
    print("OK", got.tolist())
    """
)


def wide_booster(F, last=None):
    """Two trees over features 3, 7 and ``last`` (default F - 1) of an F-wide model."""
    from ltrboost._config import NODE_DTYPE
    from ltrboost.model import Booster

    last = F - 1 if last is None else last

    def tree(spec):
        nodes = np.zeros(len(spec), dtype=NODE_DTYPE)
        for k, s in enumerate(spec):
            if len(s) == 1:
                nodes[k]["value"], nodes[k]["is_leaf"] = s[0], 1
                nodes[k]["feature_idx"] = -1
                nodes[k]["left"] = nodes[k]["right"] = -1
            else:
                f, t, lft, rgt = s
                nodes[k]["feature_idx"], nodes[k]["num_threshold"] = f, t
                nodes[k]["left"], nodes[k]["right"] = lft, rgt
            nodes[k]["count"] = 5
        return nodes

    t1 = tree([(3, 0.0, 1, 2), (1.0,), (last, 1.0, 3, 4), (-1.0,), (0.5,)])
    t2 = tree([(7, 1.0, 1, 2), (0.25,), (-0.25,)])
    return Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.zeros(1),
        trees=[t1, t2],
        tree_outputs=[0, 0],
        n_features=F,
        n_outputs=1,
    )


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc/self/statm")
def test_sparse_pred_leaf_densifies_only_the_columns_the_trees_split_on(tmp_path):
    """A 2**28-feature model, a sparse X of 3 rows, 1 GiB of address space left: the
    leaves (and scores) are found as for the same trees on a narrow X, not NumPy's
    'Unable to allocate 2.00 GiB' for a dense row of every feature (or 1 GiB for
    SciPy's column index)."""
    tests = os.path.dirname(os.path.abspath(__file__))
    child = _WIDE_CHILD.format(tests=tests, F=1 << 28)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(tests, "..", "src")]))
    proc = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("OK")

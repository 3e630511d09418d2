"""Memory is bounded by the data, not by what a file claims (issue 18).

* Columns that never occur (or are constant) cost nothing: training bins and builds
  histograms of the used columns only and maps the trees back to the original ids.
  The model is the same as with every column kept (checked by disabling the drop).
* A file whose one feature has index 200000 trains under an address-space limit, from
  Python and from the CLI (subprocesses with ``RLIMIT_AS``).
* What is still too large is refused up front, naming the cause.
* Pairwise objectives stream label pairs in bounded chunks; the OLE criterion, which
  needs every pair at once, refuses a pair count over its limit naming the query.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import ltrboost.binning as binning
from ltrboost import train
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking

SRC = str(Path(__file__).resolve().parents[1] / "src")
# A 93-byte-class LETOR file whose one high feature has index 200000 (feature 1 is
# constant, so that trees must use the high one): before the fix
# training held ~1.2 GB per histogram (200000 x 256 x 3 doubles) and peaked at 2 GB.
HIGH_INDEX_FILE = (
    "2 qid:1 1:0.5 200000:2\n"
    "0 qid:1 1:0.5\n"
    "1 qid:1 1:0.5 200000:1\n"
    "0 qid:2 1:0.5\n"
    "1 qid:2 1:0.5 200000:1\n"
)
AS_LIMIT = 3 << 29  # 1.5 GiB of address space (importing NumPy + Numba takes ~0.7)


def _run_limited(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    prelude = textwrap.dedent(
        f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, ({AS_LIMIT}, {AS_LIMIT}))
        """
    )
    env = dict(os.environ, PYTHONPATH=SRC, NUMBA_NUM_THREADS="2")
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture
def high_index_file(tmp_path: Path) -> Path:
    path = tmp_path / "high.txt"
    path.write_text(HIGH_INDEX_FILE)
    return path


def test_high_index_file_trains_under_memory_limit_python(
    high_index_file: Path, tmp_path: Path
) -> None:
    proc = _run_limited(
        f"""
        from ltrboost import train
        from ltrboost.dataset import make_dataset
        from ltrboost.io.letor import load_svmlight
        d = load_svmlight({str(high_index_file)!r})
        b = train(dict(n_estimators=3, min_samples_leaf=1, min_samples_bin=1),
                  make_dataset(d.X, d.y, qid=d.qid))
        feats = sorted({{int(f) for t in b.trees for f in t["feature_idx"] if f >= 0}})
        print("OK", b.n_features, feats)
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "OK 200000" in proc.stdout
    assert "199999" in proc.stdout  # the high column is used, under its own id


def test_high_index_file_trains_under_memory_limit_cli(
    high_index_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "m.json"
    proc = _run_limited(
        f"""
        import sys
        from ltrboost.cli import main
        sys.exit(main(["train", {str(high_index_file)!r}, "-o", {str(out)!r},
                       "--n-estimators", "3", "--min-samples-leaf", "1"]))
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out.exists()


def _wide(X: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """X with constant, all-zero and all-NaN columns inserted; returns (X_wide, ids)
    where ``ids[k]`` is the wide column of X's column k."""
    n, d = X.shape
    width = 3 * d + 4
    ids = np.sort(rng.choice(width, size=d, replace=False))
    Xw = np.zeros((n, width))
    filler = rng.integers(0, 3, size=width)
    for c in range(width):
        Xw[:, c] = (0.0, 7.5, np.nan)[filler[c]]
    Xw[:, ids] = X
    return Xw, ids


@pytest.mark.parametrize(
    "extra",
    [
        dict(),
        dict(colsample_bytree=0.3, subsample=0.7),
        dict(objective="ranknet", split_criterion="ole"),
        dict(objective="mcrank", growth="depth_first", max_depth=3),
    ],
)
def test_unused_columns_change_nothing(extra, monkeypatch) -> None:
    """Dropping never-splitting columns gives the model trained with every column."""
    X, y, qid = make_ranking(n_queries=12, docs_per_query=(4, 12), n_features=5, random_state=3)[:3]
    X[::3, 1] = np.nan  # a used column with missing values
    Xw, _ = _wide(X, np.random.default_rng(0))
    params = dict(n_estimators=4, min_samples_leaf=2, max_leaf_nodes=6, **extra)
    dropped = train(params, make_dataset(Xw, y, qid=qid))
    assert binning.UsedFeatures(Xw).n_used == 5

    def keep_all(X, out):
        out[:] = True

    monkeypatch.setattr(binning, "_columns_vary", keep_all)
    kept = train(params, make_dataset(Xw, y, qid=qid))
    assert len(dropped.trees) == len(kept.trees)
    for a, b in zip(dropped.trees, kept.trees, strict=True):
        assert a.tobytes() == b.tobytes()
    assert dropped.predict(Xw).tobytes() == kept.predict(Xw).tobytes()


def _columns_vary_reference(X) -> list[bool]:
    """Plain Python: a column varies when some value differs from the first (NaN is one
    value)."""
    out = []
    for f in range(X.shape[1]):
        a = X[0, f]
        out.append(any((b == b) if a != a else (b != a) for b in X[1:, f]))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_columns_vary_matches_a_plain_loop(seed, monkeypatch) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    X = rng.choice([0.0, -0.0, 1.5, np.nan], size=(n, 9))
    X[:, 0] = 2.0  # constant
    X[:, 1] = np.nan  # absent
    X[:, 2] = [0.0, -0.0] * (n // 2) + [0.0] * (n % 2)  # one value, two signs
    X[:, 3] = np.nan
    X[-1, 3] = 7.0  # varies on the last row only
    X[:, 4] = 1.0
    X[0, 4] = np.nan  # NaN first, then one value
    if seed % 2:  # small blocks: the later-block path, one column at a time
        monkeypatch.setattr(binning, "_VARY_BLOCK_VALUES", 1 + seed)
    for A in (X, X.astype(np.float32), np.asfortranarray(X), X[:, ::-1]):
        out = np.zeros(A.shape[1], dtype=bool)
        binning._columns_vary(A, out)
        assert out.tolist() == _columns_vary_reference(A)


def test_compact_and_original_ids_round_trip() -> None:
    X = np.zeros((4, 6))
    X[:, 2] = [1, 2, 3, 4]
    X[:, 5] = [np.nan, 1, np.nan, np.nan]  # one value and NaN: can split
    X[:, 4] = np.nan
    used = binning.UsedFeatures(X)
    assert used.ids.tolist() == [2, 5]
    assert used.take(X).tolist() == X[:, [2, 5]].tolist() or np.array_equal(
        used.take(X), X[:, [2, 5]], equal_nan=True
    )
    assert used.to_compact(np.array([0, 2, 4, 5], dtype=np.int32)).tolist() == [0, 1]
    assert used.to_compact(np.array([0, 1], dtype=np.int32)).tolist() == []


def test_all_constant_data_trains_a_constant_model_with_a_warning() -> None:
    X = np.ones((12, 3))
    y = np.tile([0.0, 1.0, 2.0], 4)
    ds = make_dataset(X, y, group=[6, 6])
    with pytest.warns(UserWarning, match="constant"):
        b = train(dict(n_estimators=3, min_samples_leaf=1), ds)
    pred = b.predict(X)
    assert np.all(pred == pred[0])
    assert all(int(t["is_leaf"][0]) == 1 for t in b.trees)


def test_no_feature_columns_at_all() -> None:
    X = np.zeros((6, 0))
    ds = make_dataset(X, [0.0, 1, 2, 0, 1, 2], group=[3, 3])
    with pytest.warns(UserWarning, match="constant"):
        b = train(dict(n_estimators=2, min_samples_leaf=1), ds)
    assert b.predict(X).shape == (6,)


def test_feature_draw_of_only_unused_columns(monkeypatch) -> None:
    X, y, qid = make_ranking(n_queries=6, docs_per_query=6, n_features=2, random_state=1)[:3]
    Xw = np.zeros((X.shape[0], 40))
    Xw[:, [0, 39]] = X
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the one expected warning: 2 of 40 columns vary, a draw of 2 averages 0.1
        warnings.filterwarnings("ignore", "colsample_bytree=0.05 draws 2 of all 40", UserWarning)
        b = train(
            dict(n_estimators=6, min_samples_leaf=1, colsample_bytree=0.05),
            make_dataset(Xw, y, qid=qid),
        )
    assert np.all(np.isfinite(b.predict(Xw)))


def test_histogram_memory_over_the_limit_is_refused(monkeypatch) -> None:
    X, y, qid = make_ranking(n_queries=4, docs_per_query=5, n_features=10, random_state=0)[:3]
    monkeypatch.setenv("LTRBOOST_MAX_HISTOGRAM_BYTES", str(10 * 256 * 24 * 4))
    ds = make_dataset(X, y, qid=qid)
    p = dict(n_estimators=1, min_samples_leaf=1)
    train(dict(p, max_leaf_nodes=3), ds)  # 3 + 1 histograms fit
    with pytest.raises(ValueError, match=r"histograms \(10 used features x 256 bins"):
        train(dict(p, max_leaf_nodes=4), ds)
    # the bound also follows the data: 20 rows hold at most 3 splittable leaves of
    # 2 * 3 rows, and a depth of 1 at most 2 leaves
    train(dict(p, max_leaf_nodes=31, min_samples_leaf=3), ds)
    train(dict(p, max_leaf_nodes=31, max_depth=1), ds)
    with pytest.raises(ValueError, match="5 nodes in flight"):
        train(dict(p, max_leaf_nodes=31, max_depth=2), ds)


# --- pairs ---------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "trunc"), [("all", -1), ("topk", 3), ("topk", 50)])
@pytest.mark.parametrize("cap", [1, 2, 5, 1000])
def test_pair_chunks_concatenate_to_all_pairs(method, trunc, cap) -> None:
    from ltrboost.objectives import _pairs

    rng = np.random.default_rng(cap)
    labels = rng.integers(0, 3, 17).astype(np.float64)
    code = _pairs.PAIR_METHODS[method]
    full = np.empty(17 * 16, dtype=np.int64), np.empty(17 * 16, dtype=np.int64)
    n_full = _pairs._enumerate_pairs_one_query(labels, code, trunc, 1, 0, *full)
    cursor = np.array([0, 1], dtype=np.int64)
    buf = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
    got_hi: list[int] = []
    got_lo: list[int] = []
    while True:
        k = _pairs._enumerate_pairs_chunk(labels, code, trunc, cursor, *buf)
        got_hi += buf[0][:k].tolist()
        got_lo += buf[1][:k].tolist()
        if k < cap:
            break
    assert got_hi == full[0][:n_full].tolist()
    assert got_lo == full[1][:n_full].tolist()


@pytest.mark.parametrize(
    "params",
    [
        dict(objective="ranknet"),
        dict(objective="rankboost"),
        dict(objective="ranknet", split_criterion="ole"),
        dict(objective="lambdamart", lambda_metric="err", truncation_level=0),
        dict(objective="lambdamart", lambda_metric="map", pair_method="topk"),
    ],
)
def test_streamed_pairs_give_the_same_model(params, monkeypatch) -> None:
    """Pairs through a buffer of 3 (many chunks per query) or of 1: bit-identical."""
    from ltrboost.objectives import _pairs

    X, y, qid = make_ranking(n_queries=8, docs_per_query=(3, 40), n_features=4, random_state=5)[:3]
    w = np.random.default_rng(0).uniform(0.5, 2, X.shape[0])
    preds = []
    for chunk in (1 << 20, 3, 1):
        monkeypatch.setattr(_pairs, "PAIR_CHUNK", chunk)
        ds = make_dataset(X, y, qid=qid, sample_weight=w)
        b = train(dict(params, n_estimators=3, min_samples_leaf=2), ds)
        preds.append(b.predict(X).tobytes())
    assert preds[0] == preds[1] == preds[2]


def test_ole_pairs_over_the_limit_are_refused_naming_the_query(monkeypatch) -> None:
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", "100")
    y = np.r_[np.tile([0.0, 1.0], 4), np.tile([0.0, 1.0, 2.0], 10)]
    qid = np.r_[np.full(8, 7), np.full(30, 42)]
    X = np.random.default_rng(0).normal(size=(38, 3))
    ds = make_dataset(X, y, qid=qid)
    params = dict(objective="ranknet", split_criterion="ole", n_estimators=2)
    with pytest.raises(ValueError, match=r"query 42 alone has 300 pairs \(30 doc"):
        train(params, ds)
    with pytest.raises(ValueError, match="pair_method='topk'"):
        train(dict(params, objective="rankboost"), ds)
    # the advice works: top-3 truncation keeps the pair count under the limit
    train(dict(params, pair_method="topk", truncation_level=2), ds)
    # and the other criteria never hold the pairs
    train(dict(params, split_criterion="newton"), ds)


@pytest.mark.parametrize("objective", ["gbrank", "qbrank"])
def test_gbrank_qbrank_long_query_is_refused_naming_it(objective, monkeypatch) -> None:
    """GBRank/QBRank hold a query's n (n - 1) / 2 label pairs at once: over the limit
    (here 100 pairs: a query of 15 documents has 105) they refuse, naming the query."""
    monkeypatch.setenv("LTRBOOST_MAX_QUERY_PAIRS", "100")
    rng = np.random.default_rng(0)
    qid = np.r_[np.full(14, 3), np.full(15, 9)]
    y = rng.integers(0, 3, qid.shape[0]).astype(np.float64)
    X = rng.normal(size=(qid.shape[0], 2))
    params = dict(objective=objective, n_estimators=1, min_samples_leaf=1)
    with pytest.raises(ValueError, match=r"query 9 has 15 documents.*105 document pa"):
        train(params, make_dataset(X, y, qid=qid))
    keep = qid == 3  # 14 documents: 91 pairs fit
    train(params, make_dataset(X[keep], y[keep], qid=qid[keep]))


def test_cli_out_of_memory_is_one_error_line(tmp_path: Path) -> None:
    """Evaluating 1000 rows with a 200000-feature model needs a 1.6 GB dense X: under
    the address-space limit the CLI refuses it up front in one line naming the file,
    status 2, no traceback.
    (``predict`` was the example; it now reads and scores a block of rows at a time,
    and predicts these rows in the limit: tests/test_predstream_adversarial6.py.)"""
    from ltrboost.cli import main

    train_file = tmp_path / "high.txt"
    train_file.write_text(HIGH_INDEX_FILE)
    model = tmp_path / "m.json"
    args = ["train", str(train_file), "-q", "-o", str(model), "--min-samples-leaf", "1"]
    assert main([*args, "--n-estimators", "2"]) == 0
    data = tmp_path / "many.txt"
    data.write_text("0 qid:1 1:0.5\n" * 999 + "1 qid:1 1:0.5 200000:2\n")
    proc = _run_limited(
        f"""
        import sys
        from ltrboost.cli import main
        sys.exit(main(["eval", {str(model)!r}, {str(data)!r}]))
        """,
        tmp_path,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    # refused up front, naming the file, the shape and the limit (it was NumPy's
    # "out of memory: Unable to allocate ...", which named no file: readoom, stop 38)
    assert proc.stderr.startswith(f"ltrboost: error: {data}: reading it needs about 1.5 GiB")
    assert "1000 rows x 200000 features of float64" in proc.stderr
    assert "over the address space left under RLIMIT_AS (ulimit -v)" in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr


def test_resume_with_unused_columns_equals_uninterrupted() -> None:
    """Feature draws are over the original columns, so resuming (which replays them)
    gives the uninterrupted model when columns are dropped."""
    X, y, qid = make_ranking(n_queries=10, docs_per_query=(4, 10), n_features=4, random_state=2)[:3]
    Xw, _ = _wide(X, np.random.default_rng(1))
    ds = make_dataset(Xw, y, qid=qid)
    p = dict(n_estimators=4, min_samples_leaf=2, colsample_bytree=0.5, subsample=0.8)
    full = train(p, ds)
    half = train(dict(p, n_estimators=2), ds)
    resumed = train(p, make_dataset(Xw, y, qid=qid), init_model=half)
    assert [t.tobytes() for t in resumed.trees] == [t.tobytes() for t in full.trees]


def test_ole_topk_warns_in_round_one_when_a_later_round_can_go_over(monkeypatch) -> None:
    """``topk`` pairs follow the scores: round 1 (all scores 0, the first document on
    top) holds 1 pair of the query below, a ranking with its relevant document first
    holds 9.  With a limit of 5 such a round stops training with an error, so round 1
    warns, naming the bound (the error came after hours on real data, unannounced)."""
    from ltrboost.objectives.registry import get_objective
    from ltrboost.params import ParameterWarning

    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", "5")
    X = np.arange(10, dtype=np.float64)[:, None]
    y = np.r_[np.zeros(9), 1.0]
    ds = make_dataset(X, y, qid=np.zeros(10, dtype=np.int64))
    params = dict(
        objective="lambdamart", split_criterion="ole", pair_method="topk",
        truncation_level=1, min_samples_leaf=1,
    )  # fmt: skip
    with pytest.warns(ParameterWarning, match=r"round 1 holds 1 pairs.*up to 9 \(~"):
        train(dict(params, n_estimators=2), ds)
    obj = get_objective("lambdamart", pair_method="topk", truncation_level=1)
    obj.prepare(ds)
    with pytest.raises(ValueError, match=r"9 pairs .* in round 2"):
        obj.ole_pairs(X[:, 0], ds, iteration=1)
    # no warning where no round can hold more pairs than the limit
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", "9")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ParameterWarning)
        train(dict(params, n_estimators=2), ds)
        train(dict(params, pair_method="all", truncation_level=None, n_estimators=2), ds)
        train(dict(params, objective="ranknet", pair_method="all", truncation_level=None), ds)


def test_ole_pair_bound_is_above_every_rounds_count() -> None:
    """:func:`ole_pair_bound` against the pairs the engine holds in rounds with other
    scores, for each pair method, YetiRank and explicit pairs."""
    from ltrboost.objectives.pair_engine import ole_pair_bound
    from ltrboost.objectives.registry import get_objective

    rng = np.random.default_rng(3)
    qid = np.repeat(np.arange(6), rng.integers(1, 12, 6))
    y = rng.integers(0, 4, qid.shape[0]).astype(np.float64)
    y[qid == 2] = 1.0  # a query with one grade has no pairs
    ds = make_dataset(rng.normal(size=(qid.shape[0], 2)), y, qid=qid)
    for name, kw in [
        ("lambdamart", dict(pair_method="topk", truncation_level=2)),
        ("lambdamart", dict(pair_method="all")),
        ("ranknet", dict(pair_method="topk", truncation_level=3)),
        ("ranknet", dict(pair_method="sampled", pairs_per_sample=2)),
        ("yetirank", dict(permutations=3)),
    ]:
        obj = get_objective(name, **kw)
        obj.prepare(ds)
        bound = ole_pair_bound(ds, obj)
        counts = [
            len(obj.ole_pairs(rng.normal(size=qid.shape[0]) * s, ds, iteration=t).rho)
            for t, s in enumerate([0.0, 1.0, 10.0, 100.0] * 3)
        ]
        assert max(counts) <= bound, (name, kw, counts, bound)

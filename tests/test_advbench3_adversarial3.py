"""Adversarial pass over the benchmark scripts in bench/ (their options, outputs, reports)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the bench package lives at the repository root


def test_bench_quality_unknown_dataset_or_library_is_a_usage_error(capsys):
    """`--datasets mq2008x` used to raise IndexError (an empty list of folds) and `--libs
    foo` a worker's ValueError after the other libraries had trained."""
    from bench import bench_quality

    for argv in (["--datasets", "mq2008x"], ["--libs", "lightgbm,foo"], ["--repeats", "0"]):
        with pytest.raises(SystemExit) as e:
            bench_quality.main(argv)
        assert e.value.code == 2
        assert "--datasets takes mq2008,lightgbm_example" in capsys.readouterr().err


def test_bench_objectives_error_row_has_every_column(tmp_path, monkeypatch):
    """A failed ltrboost run's row had one cell fewer than the header (8 of 9), which
    shifted the row in the Markdown table; a bare --output file name crashed in
    os.makedirs('') after the whole run."""
    from bench import bench_objectives as bo

    monkeypatch.setattr(bo, "SHARED_DATA", tmp_path)
    monkeypatch.setattr(bo, "OBJECTIVES", [("lambdamart", [])])
    monkeypatch.setattr(bo, "PEERS", ["LightGBM lambdarank"])
    monkeypatch.setattr(bo, "datasets", lambda names, tmp: [("d", "test", "a", None, "b")])
    monkeypatch.setattr(bo, "run_ltrboost", lambda *a: {"error": "exit 2"})
    ok = {m: 0.5 for m in bo.METRICS} | {"trees": 3, "seconds": 0.1}
    monkeypatch.setattr(bo, "run_peer", lambda *a: ok)
    monkeypatch.chdir(tmp_path)
    assert bo.main(["--datasets", "trec_news", "--output", "objectives.md"]) == 0
    table = [ln for ln in (tmp_path / "objectives.md").read_text().splitlines() if ln[:1] == "|"]
    assert len({ln.count("|") for ln in table}) == 1, table
    assert "exit 2" in table[2]


def test_bench_objectives_unknown_dataset_is_a_usage_error(capsys):
    from bench import bench_objectives as bo

    with pytest.raises(SystemExit) as e:
        bo.main(["--datasets", "mq2008,mq2009"])
    assert e.value.code == 2
    assert "mq2009" in capsys.readouterr().err


def _parity_records(trees: int, cells=((20, 0.1, 20),), fold="test", n_queries=4, shift=0.0):
    rng = np.random.default_rng(trees)
    return [
        {
            "fold": fold,
            "cell": list(c),
            "trees": trees,
            "fit_s": 0.1,
            "es_trees": 2,
            "per_query": {"early stop": (rng.random(n_queries) + shift).tolist()},
        }
        for c in cells
    ]


def test_bench_parity_report_with_one_library_only_does_not_crash():
    """`--libs ltrboost` on a fresh raw file: report() raised NameError (``res``) after the
    whole run, so the tables were never written."""
    from bench.bench_parity import report

    text = report({"mslr_tiny": {"ltrboost": _parity_records(3)}}, "cmd")
    assert "| data | leaves/lr/min leaf |" in text


def test_bench_parity_refuses_to_pair_runs_of_other_tree_counts():
    """Results accumulate per library in --raw: pairing an ltrboost run of --trees 100 with
    a LightGBM run of --trees 300 compared early stopping capped at different rounds."""
    from bench.bench_parity import report

    raw = {"d": {"ltrboost": _parity_records(100), "lightgbm": _parity_records(300)}}
    with pytest.raises(SystemExit, match="different --trees"):
        report(raw, "cmd")
    raw = {"d": {"ltrboost": _parity_records(300), "lightgbm": _parity_records(300)}}
    assert "| d | early stop |" in report(raw, "cmd")


def test_bench_parity_cell_table_rows_match_its_header():
    """Datasets stored from runs of other --trees have other modes: the per-cell table's
    header held the last dataset's modes only, so the other rows had too few or too many
    cells."""
    from bench.bench_parity import report

    a = _parity_records(3)
    b = _parity_records(3)
    c = _parity_records(100)
    d = _parity_records(100)
    for r in c + d:
        r["per_query"]["100 trees"] = r["per_query"]["early stop"]
    raw = {"x": {"ltrboost": a, "lightgbm": b}, "y": {"ltrboost": c, "lightgbm": d}}
    text = report(raw, "cmd")
    cell_table = text[text.index("per grid cell") :].splitlines()[2:]
    assert len({ln.count("|") for ln in cell_table if ln}) == 1, cell_table


def test_bench_parity_report_only_without_raw_file_is_an_error(tmp_path, capsys):
    """--report-only with no raw file wrote empty tables over --output."""
    from bench import bench_parity

    out = tmp_path / "parity.md"
    out.write_text("earlier tables\n")
    argv = ["--report-only", "--raw", str(tmp_path / "none.json"), "--output", str(out)]
    with pytest.raises(SystemExit) as e:
        bench_parity.main(argv)
    assert e.value.code == 2
    assert out.read_text() == "earlier tables\n"


def test_bench_protocol_output_folder_is_created(tmp_path):
    """--output in a folder that does not exist crashed after the whole run."""
    from bench import bench_protocol

    raw = tmp_path / "raw.json"
    folds = {"per_query": [[0.5, 0.7]] * 5, "trees": [3] * 5, "fit_s": [0.1] * 5}
    raw.write_text(json.dumps({"LightGBM lambdarank": folds}))
    out = tmp_path / "new" / "protocol.md"
    assert bench_protocol.main(["--report-only", "--raw", str(raw), "--output", str(out)]) == 0
    assert "LightGBM lambdarank" in out.read_text()


def test_bench_histogram_kernel_does_not_time_the_compilation(monkeypatch, capsys):
    """With --repeats 1 the only timed call was each kernel's first: compilation (or the
    cache load) was reported as ns per update (918 ns against 9.5 at 5,000 rows)."""
    from bench import bench_histogram_kernel as bh

    clock = [0.0]
    calls = {"scalar": 0, "vector": 0}

    def fake(key):
        def run(*args):
            calls[key] += 1
            clock[0] += 100.0 if calls[key] == 1 else 1.0  # the first call compiles

        return run

    monkeypatch.setattr(bh, "_scalar_body", fake("scalar"))
    monkeypatch.setattr(bh, "_histogram_body", fake("vector"))
    monkeypatch.setattr(bh.time, "thread_time", lambda: clock[0])
    assert bh.main(["--docs", "300", "--repeats", "1"]) == 0
    root = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| 100%"))
    assert root.split("|")[2].strip() == "1000.0", root  # scalar ms: 1 s, not 100 s


def test_bench_sparse_data_with_fewer_rows_than_a_query():
    """make_data(rows < 50) built zero queries and raised IndexError."""
    from bench.bench_sparse import make_data

    X, _, group = make_data(40, 30, 100)
    assert X.shape == (40, 30)
    assert group.tolist() == [40]


def test_bench_sparse_rejects_impossible_options():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    for args in (["--nnz", "1000", "--rows", "10", "--cols", "10"], ["--libs", "xgboost"]):
        done = subprocess.run(
            [sys.executable, "-m", "bench.bench_sparse", *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=120,
        )
        assert done.returncode == 2, done.stderr[-500:]


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        ("bench_interleaved", ["--trees", "1"]),
        ("bench_criteria", ["--synthetic-trees", "1"]),
    ],
)
def test_per_tree_timings_need_two_trees(module, argv, capsys):
    """A tree is timed as (end of the last round - end of the first) / (rounds - 1): one
    tree divided by zero (bench_interleaved) or reported inf ms/tree (bench_criteria)."""
    import importlib

    mod = importlib.import_module(f"bench.{module}")
    with pytest.raises(SystemExit) as e:
        mod.main(argv)
    assert e.value.code == 2
    assert "at least 2" in capsys.readouterr().err


def test_bench_clicks_runs_as_the_documented_file_command():
    """Its docstring says `PYTHONPATH=src python bench/bench_clicks.py ...`: that failed
    with ModuleNotFoundError: No module named 'bench'."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run(
        [sys.executable, "bench/bench_clicks.py", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert "--merge" in done.stdout

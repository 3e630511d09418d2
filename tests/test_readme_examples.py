"""The README's runnable examples run (each marked ``<!-- NAME: run by ... -->``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _example(name: str) -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(rf"<!-- {name}:[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert match, f"README has no example marked {name!r}"
    return match.group(1)


def test_cross_validation_example_runs(capsys) -> None:
    pytest.importorskip("pandas")
    exec(compile(_example("cv-example"), "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3
    assert out[0].startswith("NDCG@10 ")
    assert out[2].startswith("NDCG@10 ")


def test_python_api_and_plot_examples_run(tmp_path, monkeypatch) -> None:
    """README's *Python API* example on the LETOR files of README's first command,
    `ltrboost generate data` (its `data/train.txt` and `data/vali.txt`), then the
    *Plots* example on its `model`."""
    from ltrboost.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["generate", "data", "--n-queries", "40", "--docs-per-query", "10"]) in (0, None)
    namespace: dict = {}
    exec(compile(_example("api-example"), "README.md", "exec"), namespace)
    assert (tmp_path / "model.json").exists()
    assert (namespace["same"].predict(namespace["valid"].X) == namespace["scores"]).all()
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    exec(compile(_example("plot-example"), "README.md", "exec"), namespace)
    assert (tmp_path / "model.png").stat().st_size > 0

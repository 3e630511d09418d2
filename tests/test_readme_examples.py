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

"""docs/workflow.py runs end to end on MQ2008 Fold1 (--quick) and writes its PNGs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.real_data

pytest.importorskip("matplotlib")
pytest.importorskip("pandas")

SCRIPT = Path(__file__).resolve().parent.parent / "docs" / "workflow.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("ltrboost_docs_workflow", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_workflow_writes_plots(shared_data_dir: Path, tmp_path: Path, capsys) -> None:
    workflow = _load_script()
    out = tmp_path / "out"
    rc = workflow.main([str(shared_data_dir / "MQ2008"), "--quick", "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "best: {" in text
    assert "threshold" in text  # the trees_to_dataframe head
    for name in ("importance.png", "learning_curves.png", "tree0.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) > 10_000  # a drawn figure, not an empty canvas


def test_workflow_reports_a_missing_fold(tmp_path: Path, capsys) -> None:
    workflow = _load_script()
    assert workflow.main([str(tmp_path), "--quick", "--out", str(tmp_path / "o")]) == 2
    assert "no such fold folder" in capsys.readouterr().err

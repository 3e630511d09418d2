"""``--missing-token``: LETOR 3.0 "Feature-null" files (``5:NULL``) on the command line.

A ``NULL`` read with ``--missing-token NULL`` must behave exactly as the same file with
``nan`` written instead (the reader's own spelling of a missing value), in every command
that reads data; without the flag it is a one-line ``FILE:LINE`` error suggesting it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from ltrboost.cli import main

TRAIN_FLAGS = ["-q", "--min-samples-leaf", "5", "--max-leaf-nodes", "8", "--n-estimators", "5"]


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _nullify(src: Path, dst_null: Path, dst_nan: Path, seed: int) -> None:
    """Write ``src`` with ~20% of its values as NULL, and the same with nan."""
    rng = np.random.default_rng(seed)
    null_lines, nan_lines = [], []
    for line in src.read_text().splitlines():
        body, hash_, comment = line.partition("#")
        tokens = body.split()
        for k in range(2, len(tokens)):
            if rng.random() < 0.2:
                tokens[k] = tokens[k].split(":")[0] + ":\0"
        text = " ".join(tokens) + (" #" + comment if hash_ else "")
        null_lines.append(text.replace("\0", "NULL"))
        nan_lines.append(text.replace("\0", "nan"))
    dst_null.write_text("\n".join(null_lines) + "\n")
    dst_nan.write_text("\n".join(nan_lines) + "\n")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("null")
    data = folder / "gen"
    rc = main(
        [
            "generate",
            str(data),
            "--n-queries",
            "20",
            "--docs-per-query",
            "10",
            "--n-features",
            "6",
            "--random-state",
            "1",
        ]
    )
    assert rc == 0
    out = {}
    for seed, name in enumerate(("train", "vali", "test")):
        out[name + "_null"] = folder / f"{name}_null.txt"
        out[name + "_nan"] = folder / f"{name}_nan.txt"
        _nullify(data / f"{name}.txt", out[name + "_null"], out[name + "_nan"], seed)
    assert "NULL" in out["train_null"].read_text()
    return out


def test_train_predict_eval_with_missing_token_equal_nan(files, tmp_path, capsys):
    m_null, m_nan = tmp_path / "null.json", tmp_path / "nan.json"
    rc, _, err = run(
        [
            "train",
            files["train_null"],
            "--valid",
            files["vali_null"],
            "-o",
            m_null,
            "--missing-token",
            "NULL",
            *TRAIN_FLAGS,
        ],
        capsys,
    )
    assert rc == 0, err
    rc, _, err = run(
        ["train", files["train_nan"], "--valid", files["vali_nan"], "-o", m_nan, *TRAIN_FLAGS],
        capsys,
    )
    assert rc == 0, err
    a, b = json.loads(m_null.read_text()), json.loads(m_nan.read_text())
    assert a["trees"] == b["trees"]
    assert a.get("evals_result") == b.get("evals_result")

    rc, out_null, err = run(
        ["predict", m_null, files["test_null"], "--missing-token", "NULL"], capsys
    )
    assert rc == 0, err
    rc, out_nan, _ = run(["predict", m_null, files["test_nan"]], capsys)
    assert rc == 0
    assert out_null == out_nan
    assert len(out_null.split()) == len(files["test_nan"].read_text().splitlines())

    rc, ev_null, err = run(
        ["eval", m_null, files["test_null"], "--json", "--missing-token", "NULL"], capsys
    )
    assert rc == 0, err
    rc, ev_nan, _ = run(["eval", m_null, files["test_nan"], "--json"], capsys)
    assert list(json.loads(ev_null).values()) == list(json.loads(ev_nan).values())


def test_without_the_flag_null_is_a_one_line_error(files, tmp_path, capsys):
    text = files["train_null"].read_text().splitlines()
    line = next(k for k, t in enumerate(text, 1) if "NULL" in t)
    model = tmp_path / "m.json"
    for argv in (
        ["train", files["train_null"], "-o", model, *TRAIN_FLAGS],
        ["cv", files["train_null"], "--folds", "2", "--n-estimators", "2"],
    ):
        rc, _, err = run(argv, capsys)
        assert rc == 2
        lines = err.strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"ltrboost: error: {files['train_null']}:{line}: ")
        assert "'NULL' is not a number" in lines[0]
        assert "--missing-token NULL" in lines[0]
    assert not model.exists()


def test_eval_and_predict_without_the_flag_fail_with_it_succeed(files, tmp_path, capsys):
    model = tmp_path / "m.json"
    assert run(["train", files["train_nan"], "-o", model, *TRAIN_FLAGS], capsys)[0] == 0
    for cmd in (["predict"], ["eval"]):
        rc, _, err = run([*cmd, model, files["test_null"]], capsys)
        assert rc == 2
        assert re.search(r":\d+: feature value 'NULL' is not a number", err)
        rc, _, err = run([*cmd, model, files["test_null"], "--missing-token", "NULL"], capsys)
        assert rc == 0, err


def test_cv_with_missing_token_equals_nan_file(files, capsys):
    common = ["--folds", "2", "--n-estimators", "3", "--json", "--min-samples-leaf", "5"]
    rc, out_null, err = run(["cv", files["train_null"], "--missing-token", "NULL", *common], capsys)
    assert rc == 0, err
    rc, out_nan, err = run(["cv", files["train_nan"], *common], capsys)
    assert rc == 0, err
    assert json.loads(out_null) == json.loads(out_nan)


def test_missing_token_must_not_be_a_number(files, tmp_path, capsys):
    rc, _, err = run(
        [
            "train",
            files["train_nan"],
            "-o",
            tmp_path / "m.json",
            "--missing-token",
            "0",
            *TRAIN_FLAGS,
        ],
        capsys,
    )
    assert rc == 2
    assert "is a number" in err
    assert "Traceback" not in err

"""Claims of README.md and docs/*.md that a documentation audit found untrue or stale,
checked against the code so that they stay true (the pattern of test_docs_claims.py)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from ltrboost.cli import main
from ltrboost.io import dump_svmlight

ROOT = Path(__file__).resolve().parent.parent


def _readme() -> str:
    return " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())


def _help(capsys, command: str) -> str:
    assert main([command, "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())


def _data(path: Path, n_queries: int = 8, docs: int = 6, n_features: int = 3) -> Path:
    rng = np.random.default_rng(0)
    n = n_queries * docs
    X = rng.normal(size=(n, n_features))
    y = rng.integers(0, 3, size=n).astype(float)
    qid = np.repeat(np.arange(1, n_queries + 1), docs)
    dump_svmlight(str(path), X, y, qid)
    return path


def test_eval_n_threads_help_gives_the_documented_default(capsys):
    """README: the default thread count is OMP_NUM_THREADS, else the cores under the
    CPU quota, for `predict` and `eval` alike; `eval --help` said "all cores"."""
    for command in ("predict", "eval"):
        said = re.search(r"--n-threads N_THREADS (.*?\))", _help(capsys, command)).group(1)
        assert "OMP_NUM_THREADS" in said, (command, said)
        assert "CPU quota" in said, (command, said)


def test_non_finite_remedy_quoted_by_readme_is_the_cli_s(tmp_path, capsys):
    """README quoted the CLI's advice as `lower --learning-rate/--sigma`, which no
    message says; it is `lower --learning-rate (or another parameter listed)`."""
    train = _data(tmp_path / "train.txt")
    out = tmp_path / "m.json"
    rc = main(["train", str(train), "-q", "-o", str(out), "--learning-rate", "1e308"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--learning-rate=1e+308" in err
    quoted = "lower --learning-rate (or another parameter listed)"
    assert quoted in err
    assert f"`{quoted}`" in _readme()
    assert "lower --learning-rate/--sigma" not in _readme()
    assert not out.exists()


def test_predict_to_stdout_writes_nothing_before_an_error_in_the_first_text_block(tmp_path, capsys):
    """README said the scores of the rows before a bad line are written to standard
    output before the error; the reader parses 8 MiB of text at a time, so a bad line in
    the first 8 MiB stops predict before any score is written (README now says so)."""
    train = _data(tmp_path / "train.txt")
    model = tmp_path / "m.json"
    assert main(["train", str(train), "-q", "-o", str(model), "--n-estimators", "2"]) == 0
    lines = train.read_text().splitlines()
    lines[30] = "x qid:1 1:2"
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    rc = main(["predict", str(model), str(bad)])
    captured = capsys.readouterr()
    assert rc == 2
    assert captured.out == ""
    assert "bad.txt:31:" in captured.err
    text = _readme()
    assert "8 MiB" in text[text.index("It streams: the rows are read, scored") :][:1500]


def test_readme_export_exceptions_include_splits_beyond_float32_range():
    """docs/deploy.md: splits beyond float32's range cannot tell such values apart in
    the float32 formats (Float32RangeWarning); README's list of the exceptions to
    "the same leaves" left that one out."""
    from ltrboost.export import Float32RangeWarning

    assert issubclass(Float32RangeWarning, UserWarning)
    text = _readme()
    export = text[text.index("## Export") : text.index("## Performance")]
    assert "Float32RangeWarning" in export


def test_readme_names_the_experiment_report_files():
    """README named `ole_minus_se_*.png` and `.csv`; the files are
    `ole_minus_se_SYSTEM.png`, `ole_minus_se.csv`, and `paired.json` beside `paired.md`."""
    import ltrboost.experiment as experiment

    documented = set(re.findall(r"``([\w<>.]+\.(?:csv|md|json|png))``", experiment.__doc__))
    assert {"ole_minus_se.csv", "paired.json", "ole_minus_se_<system>.png"} <= documented
    text = _readme()
    for name in documented:
        shown = name.replace("<system>", "SYSTEM")
        assert f"`{shown}`" in text, shown


def test_project_layout_lists_every_document_in_docs():
    """README's *Project layout* listed three of docs/'s documents."""
    text = _readme()
    layout = text[text.index("## Project layout") :]
    for path in sorted((ROOT / "docs").iterdir()):
        if path.suffix in (".md", ".py") or path.is_dir():
            assert path.name in layout, path.name


def test_train_wide_index_error_names_the_n_features_flag(tmp_path, capsys):
    """A typo'd huge feature index: train's error told a CLI user to call Python's
    `load_svmlight(path, n_features=N)`; train has `--n-features N` for that."""
    train = tmp_path / "wide.txt"
    train.write_text("1 qid:1 1:1 2000000000:1\n0 qid:1 1:0\n")
    out = tmp_path / "m.json"
    rc = main(["train", str(train), "-q", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "wide.txt:1:" in err
    assert "is the index a typo?" in err
    assert "--n-features 2000000000" in err
    assert "load_svmlight" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    "flags",
    [
        ["--learning-rate", "0.1"],
        ["--truncation-level", "30"],
        ["--sigma", "1"],
        ["--gain", "exp"],
        ["--pair-method", "topk"],
    ],
)
def test_resume_with_the_default_given_explicitly_does_not_warn(tmp_path, capsys, flags):
    """README: a resumed run "whose parameters differ from the model's" warns. Giving a
    flag the value the model was trained with by default (`--learning-rate 0.1`) warned
    `--learning-rate 0.1 (model: None) differ from the model's`."""
    train = _data(tmp_path / "train.txt")
    first = tmp_path / "m.json"
    base = ["-q", "--min-samples-leaf", "2"]
    assert main(["train", str(train), "-o", str(first), "--n-estimators", "2", *base]) == 0
    out = tmp_path / "m2.json"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        argv = ["train", str(train), "-o", str(out), "--n-estimators", "3"]
        rc = main([*argv, "--resume", str(first), *base, *flags])
    assert rc == 0
    messages = [str(w.message) for w in caught] + [capsys.readouterr().err]
    assert not any("differ from the model's" in m for m in messages), messages


def test_resume_with_another_value_still_warns_naming_the_model_s(tmp_path, capsys):
    """The warning stays for a value that differs, and names what the model used (its
    default, not `None`)."""
    train = _data(tmp_path / "train.txt")
    first = tmp_path / "m.json"
    base = ["-q", "--min-samples-leaf", "2"]
    assert main(["train", str(train), "-o", str(first), "--n-estimators", "2", *base]) == 0
    out = tmp_path / "m2.json"
    argv = ["train", str(train), "-o", str(out), "--n-estimators", "3", "--resume", str(first)]
    assert main(argv + base + ["--learning-rate", "0.3"]) == 0
    err = capsys.readouterr().err
    assert "--learning-rate 0.3 (model: 0.1) differ from the model's" in err

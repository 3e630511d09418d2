"""Promises of README.md and docs/*.md checked claim by claim (third documentation pass):
each test is one the code broke."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.cli import main
from ltrboost.datasets import make_ranking
from ltrboost.io import dump_svmlight


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    X, y, qid = make_ranking(n_queries=12, docs_per_query=10, n_features=4, random_state=0)[:3]
    path = folder / "model.json"
    Ranker(n_estimators=3, min_samples_leaf=5).fit(X, y, qid=qid).save_model(str(path))
    return path


# --- ltrboost warmup ------------------------------------------------------------------


def test_warmup_has_a_qbrank_profile(capsys):
    """README: `train:OBJECTIVE` profiles; qbrank's was refused with 'qbrank trains only
    with a --pairs file', which is false (it trains on label pairs, as README's
    'Choosing a ranker' table does on data without preferences)."""
    from ltrboost import _warmup

    assert "train:qbrank" in _warmup.profile_names()
    assert _warmup.load_manifest()["train:qbrank"]
    assert _warmup.command_profile("train", "qbrank") == "train:qbrank"
    assert main(["warmup", "train:qbrank"]) in (0, None)
    assert "train:qbrank:" in capsys.readouterr().err


# --- ltrboost export: options a format does not use --------------------------------------


@pytest.mark.parametrize(
    ("fmt", "flags", "named"),
    [
        ("lightgbm", ["--name", "my_ranker"], "--name"),
        ("ranklib", ["--name", "my_ranker"], "--name"),
        ("onnx", ["--name", "my_ranker"], "--name"),
        ("xgboost-dump", ["--name", "my_ranker"], "--name"),  # without --createmodel
        ("lightgbm", ["--assume-no-missing"], "--assume-no-missing"),
        ("solr", ["--assume-no-missing"], "--assume-no-missing"),
    ],
)
def test_export_refuses_an_option_the_format_ignores(
    model_path, tmp_path, capsys, fmt, flags, named
):
    """docs/deploy.md: --name is the model name of Solr files and of the _createmodel
    body, --assume-no-missing is ranklib's; elsewhere both were ignored silently (as
    --createmodel is not: it is refused outside xgboost-dump)."""
    out = tmp_path / "out"
    args = ["export", str(model_path), "--format", fmt, "--output", str(out), *flags]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("ltrboost: error: ")
    assert named in err
    assert err.count("\n") == 1
    assert not out.exists()
    assert main([*args[:5], "-", *flags]) == 2  # on stdout too
    assert named in capsys.readouterr().err


@pytest.mark.parametrize(
    ("fmt", "flags"),
    [
        ("solr", ["--name", "my_ranker"]),
        ("xgboost-dump", ["--name", "my_ranker", "--createmodel", "CM"]),
        ("ranklib", ["--assume-no-missing"]),
    ],
)
def test_export_takes_the_options_where_they_count(model_path, tmp_path, fmt, flags):
    flags = [str(tmp_path / "cm.json") if f == "CM" else f for f in flags]
    out = tmp_path / "out"
    assert main(["export", str(model_path), "--format", fmt, "--output", str(out), *flags]) == 0
    assert out.stat().st_size > 0


def test_export_model_refuses_an_option_the_format_ignores(model_path, tmp_path):
    from ltrboost import load_model
    from ltrboost.export import ExportError

    booster = load_model(str(model_path))
    with pytest.raises(ExportError, match="name="):
        booster.export(str(tmp_path / "m.txt"), format="lightgbm", name="my_ranker")
    with pytest.raises(ExportError, match="assume_no_missing="):
        booster.export(str(tmp_path / "m.json"), format="xgboost", assume_no_missing=True)
    assert not list(tmp_path.iterdir())
    booster.export(str(tmp_path / "m.json"), format="solr", name="my_ranker")
    booster.export(str(tmp_path / "r.txt"), format="ranklib", assume_no_missing=True)


# --- CLI messages that name the Python API instead of the flag ---------------------------


def test_missing_token_that_is_a_number_names_the_flag(model_path, tmp_path, capsys):
    """README: 'numbers cannot be tokens'; the CLI's error named `na_values`, a Python
    keyword, instead of --missing-token."""
    data = tmp_path / "d.txt"
    data.write_text("1 qid:1 1:0.5\n0 qid:1 1:1\n")
    assert main(["predict", str(model_path), str(data), "--missing-token", "0"]) == 2
    err = capsys.readouterr().err
    assert "--missing-token" in err
    assert "'0' is a number" in err
    assert "na_values" not in err


def test_train_resume_of_a_custom_objective_model_says_only_python_continues_it(tmp_path, capsys):
    """docs/custom.md: `ltrboost train --resume` refuses a custom objective's model; its
    error told the CLI user to 'pass that callable again: objective=fn', after reading
    the whole training file."""
    X, y, qid = make_ranking(n_queries=12, docs_per_query=10, n_features=4, random_state=0)[:3]

    def squared_error(scores, labels, query_offsets):
        return 2.0 * (scores - labels), np.full_like(scores, 2.0)

    model = tmp_path / "custom.json"
    Ranker(objective=squared_error, n_estimators=2, min_samples_leaf=5).fit(
        X, y, qid=qid
    ).save_model(str(model))
    data = tmp_path / "train.txt"
    dump_svmlight(str(data), X, y, qid)
    data_late = tmp_path / "late.txt"  # an error in the data would be found first
    data_late.write_text(data.read_text() + "x qid:1 1:0\n")
    args = ["train", str(data_late), "--resume", str(model), "-o", str(tmp_path / "o.json")]
    assert main([*args, "--n-estimators", "4", "-q"]) == 2
    err = capsys.readouterr().err
    assert "custom:squared_error" in err
    assert "Python" in err
    assert "init_model=" in err
    assert "late.txt" not in err

"""``--iteration`` out of a model's range names the flag, the model file and its rounds
(the model's own check said "iteration=9 must be between 0 and 3", naming neither;
found by the model-files pass)."""

from __future__ import annotations

import pytest

from ltrboost.cli import main
from test_cli import assert_one_line_error, run


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("it")
    assert main(["generate", str(d / "data"), "--n-queries", "10"]) == 0
    model = d / "m.json"
    argv = ["train", str(d / "data" / "train.txt"), "-o", str(model), "--n-estimators", "3"]
    assert main([*argv, "--quiet"]) == 0
    return d, model


@pytest.mark.parametrize("command", ["predict", "eval", "export"])
@pytest.mark.parametrize("iteration", [9, -1])
def test_iteration_out_of_range_names_flag_and_model(files, capsys, command, iteration):
    d, model = files
    test = d / "data" / "test.txt"
    argv = {
        "predict": ["predict", model, test],
        "eval": ["eval", model, test],
        "export": ["export", model, "--format", "xgboost", "-o", d / "x.json"],
    }[command]
    rc, _, err = run([*argv, "--iteration", iteration], capsys)
    assert_one_line_error(rc, err, f"--iteration {iteration}", str(model), "has 3 rounds")
    assert not (d / "x.json").exists()


def test_iteration_in_range_still_works(files, capsys):
    d, model = files
    rc, out, _ = run(["predict", model, d / "data" / "test.txt", "--iteration", 2], capsys)
    assert rc == 0
    assert out.strip()

"""``ltrboost.inspection`` / ``ltrboost inspect`` on models an adversarial pass found
misreported."""

from __future__ import annotations

import json

import pytest

from ltrboost import Ranker
from ltrboost.datasets import make_ranking
from ltrboost.inspection import model_summary
from ltrboost.model import load_model
from test_cli import run


@pytest.mark.parametrize(
    ("objective", "learning_rate", "expected"),
    [("lambdamart", None, 0.1), ("gbrank", None, 1.0), ("mcrank", 0.05, 0.05)],
)
def test_summary_reports_the_learning_rate_used(objective, learning_rate, expected, tmp_path):
    """A model trained with the default learning rate (the common case: recorded as
    None) was summarised with "learning_rate": null."""
    X, y, qid = make_ranking(n_queries=8, docs_per_query=6, n_features=3, random_state=0)
    kw = {} if learning_rate is None else {"learning_rate": learning_rate}
    model = Ranker(objective=objective, n_estimators=2, max_leaf_nodes=3, **kw).fit(X, y, qid=qid)
    assert model_summary(model.booster_)["learning_rate"] == expected
    path = tmp_path / "m.json"
    model.save_model(str(path))
    assert model_summary(load_model(str(path)))["learning_rate"] == expected


def test_cli_inspect_json_learning_rate(tmp_path, capsys):
    X, y, qid = make_ranking(n_queries=8, docs_per_query=6, n_features=3, random_state=0)
    path = tmp_path / "m.json"
    Ranker(n_estimators=2, max_leaf_nodes=3).fit(X, y, qid=qid).save_model(str(path))
    rc, out, err = run(["inspect", path, "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)["learning_rate"] == 0.1


def test_inspect_into_a_closed_pipe_is_quiet(tmp_path):
    """``ltrboost inspect M --dump | head -1`` printed "ltrboost: error: [Errno 32]
    Broken pipe" and exited 2 once head had left."""
    import subprocess
    import sys

    X, y, qid = make_ranking(n_queries=20, docs_per_query=10, n_features=4, random_state=0)
    path = tmp_path / "m.json"
    model = Ranker(n_estimators=200, max_leaf_nodes=8, min_samples_leaf=2)
    model.fit(X, y, qid=qid).save_model(str(path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ltrboost", "inspect", str(path), "--dump"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.readline().startswith(b"model")
    proc.stdout.close()  # the reader leaves; the dump (> 64 KiB) is still being written
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141
    assert err == ""


def test_cli_inspect_refuses_a_negative_top(tmp_path, capsys):
    """--top -1 listed no feature, silently."""
    from ltrboost.cli import main

    rc = main(["inspect", str(tmp_path / "absent.json"), "--top", "-1"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip() == "ltrboost: error: --top -1 must be >= 0"

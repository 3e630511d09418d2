"""Small defects left from earlier passes (smallfix2).

* ``ltrboost train --resume`` warned of ``--positive-threshold`` and ``--label-scale``,
  logistic_rank's data-dependent defaults, by the flag's value before the data is read:
  ``--positive-threshold None (model: 2.0)`` when the default resolves to the model's 2
  on these labels, and ``--label-scale None (model: {...})`` when the model's mapping
  gives every grade the default's scale (or a list and a mapping giving the same
  scales).  Now both are compared as the value the run trains with, once the data is
  read, and a warning names only a real difference.
* Dask warns of a validation set whose MAP / MRR / P@k cannot move under
  ``relevance_threshold`` as local training does (regression test: it had no test).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from test_cli import run


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """LETOR files, 6 queries x 10 documents: ``a.txt`` on grades 0..4 (logistic_rank's
    threshold resolves to 2), ``b.txt`` the same rows on grades 0..2 (it resolves to 1)."""
    folder = tmp_path_factory.mktemp("smallfix2")
    rng = np.random.default_rng(0)
    lines = []
    for q in range(6):
        for d in range(10):
            feats = " ".join(f"{k + 1}:{v:.3f}" for k, v in enumerate(rng.random(3)))
            lines.append(f"{d % 5} qid:{q + 1} {feats}")
    (folder / "a.txt").write_text("\n".join(lines) + "\n")
    low = [("2" + line[1:]) if line[0] in "34" else line for line in lines]
    (folder / "b.txt").write_text("\n".join(low) + "\n")
    return folder


LR = ["--objective", "logistic_rank", "--min-samples-leaf", "3", "-q"]


def _resume(graded, tmp_path, capsys, first: list, then: list, data: str = "a.txt"):
    """Train 2 rounds on a.txt with ``first``, resume to 3 on ``data`` with ``then``;
    the resumed run's stderr lines."""
    m1, m2 = tmp_path / "m1.json", tmp_path / "m2.json"
    rc, _, err = run(
        ["train", graded / "a.txt", *LR, "--n-estimators", "2", "-o", m1, *first], capsys
    )
    assert rc == 0, err
    rc, _, err = run(
        ["train", graded / data, *LR, "--n-estimators", "3", "-o", m2, "--resume", m1, *then],
        capsys,
    )
    assert rc == 0, err
    return [line for line in err.splitlines() if not line.startswith("wrote ")]


@pytest.mark.parametrize(
    ("first", "then"),
    [
        (["--positive-threshold", "2"], []),  # the default resolves to 2 on 0..4
        ([], ["--positive-threshold", "2"]),
        (["--label-scale", '{"2": 1, "3": 2, "4": 3}'], []),  # the default's scales
        ([], ["--label-scale", '{"2": 1, "3": 2, "4": 3}']),
        (["--label-scale", "[1, 1, 1, 2, 3]"], ["--label-scale", '{"3": 2, "4": 3}']),
    ],
    ids=["threshold-model", "threshold-run", "scale-model", "scale-run", "scale-spelling"],
)
def test_resume_with_the_same_effective_values_is_silent(graded, tmp_path, capsys, first, then):
    """Failed before: '--positive-threshold None (model: 2.0) differ from the model's'
    (and likewise for --label-scale) where the run trains with the model's values."""
    assert _resume(graded, tmp_path, capsys, first, then) == []


def test_resume_with_a_default_threshold_resolving_elsewhere_warns_once(graded, tmp_path, capsys):
    """The model's --positive-threshold 3 against the default, which resolves to 2 on
    these labels: one warning, naming both values (it also warned 'None (model: 3.0)')."""
    lines = _resume(graded, tmp_path, capsys, ["--positive-threshold", "3"], [])
    assert len(lines) == 1, lines
    assert "resolves to 2" in lines[0]
    assert "--positive-threshold=3" in lines[0]
    assert "None" not in lines[0]


def test_resume_with_other_scales_names_the_grades(graded, tmp_path, capsys):
    """A real difference still warns, once the data is read, in --resume's wording,
    naming the grades whose scale differs and both scales."""
    lines = _resume(graded, tmp_path, capsys, ["--label-scale", '{"4": 3}'], [])
    assert len(lines) == 1, lines
    line = lines[0]
    m1 = tmp_path / "m1.json"
    assert line.startswith(f"ltrboost: warning: --resume {m1}: --label-scale default (model: ")
    assert "differ from the model's on the labels of" in line
    assert "grade 3: 2 (model: 1)" in line
    assert "grade 4" not in line  # 3 both ways
    assert "grade 2" not in line
    assert "repeat the original flags" in line


def test_resume_scales_compare_on_this_runs_grades(graded, tmp_path, capsys):
    """On b.txt (grades 0..2) the default threshold resolves to 1 (the model's: 2),
    which the objective's own warning names; the scales are compared on these grades:
    the model's {"3": 2, "4": 3} gives grade 2 scale 1, the default at threshold 1
    gives it 2 - 1 + 1 = 2 (grades 0 and 1 get 1 both ways, and are not named)."""
    lines = _resume(
        graded, tmp_path, capsys, ["--label-scale", '{"3": 2, "4": 3}'], [], data="b.txt"
    )
    assert len(lines) == 2, lines
    assert any("resolves to 1" in line for line in lines), lines
    scale = [line for line in lines if "--label-scale" in line and "--resume" in line]
    assert len(scale) == 1, lines
    assert "grade 2: 2 (model: 1)" in scale[0]
    assert "grade 1" not in scale[0]
    assert "grade 0" not in scale[0]


def test_other_parameters_still_warn_before_the_data(graded, tmp_path, capsys):
    """The other parameters' warning is unchanged (the value this run uses)."""
    lines = _resume(graded, tmp_path, capsys, ["--learning-rate", "0.2"], [])
    assert len(lines) == 1, lines
    assert "--learning-rate 0.1 (model: 0.2)" in lines[0]
    assert "threshold" not in lines[0]
    assert "scale" not in lines[0]


# ---------------------------------------------------------------------------- Dask

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

import ltrboost  # noqa: E402
from ltrboost import dask as ldask  # noqa: E402
from ltrboost.dataset import make_dataset  # noqa: E402
from ltrboost.datasets import make_ranking  # noqa: E402
from test_daskfix_adversarial7 import FAST, _dask  # noqa: E402


def _flat_warnings(fn) -> list[tuple[type, str]]:
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in rec if "whatever the scores" in str(w.message)]


@pytest.mark.parametrize("threshold", [0, 10])
def test_dask_warns_of_a_validation_metric_that_cannot_move_as_locally(client, threshold):
    """relevance_threshold 0 (every document relevant) or 10 (none) on grades 0..4: the
    MAP that drives early stopping is the same whatever the scores; the driver warns
    with the local message, once, and not for a threshold inside the grades."""
    X, y, qid = make_ranking(n_queries=20, docs_per_query=(5, 15), n_features=5, random_state=3)
    Xv, yv, qv = make_ranking(n_queries=20, docs_per_query=(5, 15), n_features=5, random_state=4)
    params = dict(FAST, early_stopping_rounds=2, eval_metric="map", relevance_threshold=threshold)
    local = _flat_warnings(
        lambda: ltrboost.train(
            params, make_dataset(X, y, qid=qid), [("v", make_dataset(Xv, yv, qid=qv))]
        )
    )
    assert len(local) == 1
    assert "validation set 'v'" in local[0][1]
    dist = _flat_warnings(
        lambda: ldask.train(client, params, _dask(X, y, qid), [("v", _dask(Xv, yv, qv))])
    )
    assert dist == local
    params["relevance_threshold"] = 2
    assert not _flat_warnings(
        lambda: ldask.train(client, params, _dask(X, y, qid), [("v", _dask(Xv, yv, qv))])
    )

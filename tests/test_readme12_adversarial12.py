"""README's promises of stop 42, tested as written: where the code did otherwise.

README ("Outputs never replace inputs"): ``experiment`` names a setting that differs
from a finished cell's "by its flag (``--max-trees 1000 (this run: 500)``; ``--protocol
qbrank`` then computes the fold again, with a warning naming the difference)".  The
qbrank warning named the library's field instead (``max_leaf_nodes 5 (this run: 6)``
for ``--leaves``, ``n_estimators`` for ``--max-trees``), which no flag of the command is.
"""

from __future__ import annotations

import warnings

import pytest

from ltrboost.experiment_qbrank import Settings, run_qbrank_experiment
from test_cli import run

QB = ["--protocol", "qbrank", "--min-samples-leaf", "2", "--quiet"]


@pytest.fixture
def qb_folds(tmp_path, write_letor_folds):
    single = {"train.txt": (0, 3, 7), "test.txt": (1,)}
    return write_letor_folds(tmp_path / "qb", 1, 8, 5, single)


@pytest.mark.parametrize(
    ("first", "second", "named"),
    [
        (["--leaves", "5"], ["--leaves", "6"], "--leaves 5 (this run: 6)"),
        (["--learning-rates", "0.1"], ["--learning-rates", "0.2"], "--learning-rates 0.1"),
        (["--max-trees", "2"], ["--max-trees", "3"], "--max-trees 2 (this run: 3)"),
        (["--min-samples-leaf", "2"], ["--min-samples-leaf", "3"], "--min-samples-leaf 2"),
        ([], ["--ties"], "--ties False (this run: True)"),
    ],
)
def test_qbrank_resume_names_the_flag_that_differs(
    qb_folds, tmp_path, capsys, first, second, named
):
    out = tmp_path / "q"
    base = [*QB, "--max-trees", "2"]
    rc, _, err = run(["experiment", qb_folds, "-o", out, *base, *first], capsys)
    assert rc == 0, err
    rc, _, err = run(["experiment", qb_folds, "-o", out, *base, *second], capsys)
    assert rc == 0, err
    assert f"this finished fold was made with {named}" in err, err
    assert "computing it again" in err


def test_qbrank_python_api_still_names_the_settings_fields(qb_folds, tmp_path):
    """The library's own callers know ``Settings``' fields, not the CLI's flags."""
    out = tmp_path / "q"
    kw = dict(n_threads=1, progress=False)
    run_qbrank_experiment(
        str(qb_folds), str(out), settings=Settings(n_estimators=2, min_samples_leaf=2), **kw
    )
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        settings = Settings(n_estimators=3, min_samples_leaf=2)
        run_qbrank_experiment(str(qb_folds), str(out), settings=settings, **kw)
    texts = [str(w.message) for w in rec]
    assert any("made with n_estimators 2 (this run: 3)" in t for t in texts), texts

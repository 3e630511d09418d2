"""The training loop's observable behaviour: callbacks, early stopping, the progress bar
(with and without tqdm), and the history a resumed run shows."""

from __future__ import annotations

import io
import json
import sys
import warnings

import numpy as np
import pytest

from ltrboost import Ranker, make_dataset
from ltrboost.booster import train
from ltrboost.cli import main as cli_main
from ltrboost.datasets import make_ranking

SMALL = dict(n_estimators=12, max_leaf_nodes=7, min_samples_leaf=5, n_threads=1)


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=30, docs_per_query=(4, 10), n_features=5, random_state=0)
    Xv, yv, qv = make_ranking(n_queries=10, docs_per_query=(4, 10), n_features=5, random_state=1)
    return X, y, qid, Xv, yv, qv + 1000  # queries of their own: none shared


def _write_letor(path, X, y, qid) -> None:
    with open(path, "w") as f:
        for xi, yi, qi in zip(X, y, qid, strict=True):
            feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(xi))
            f.write(f"{int(yi)} qid:{qi} {feats}\n")


@pytest.fixture
def letor(tmp_path, data):
    X, y, qid, Xv, yv, qv = data
    _write_letor(tmp_path / "train.txt", X, y, qid)
    _write_letor(tmp_path / "vali.txt", Xv, yv, qv)
    return tmp_path


def _train_args(d, *extra):
    return [
        "train",
        str(d / "train.txt"),
        "--valid",
        str(d / "vali.txt"),
        "--n-estimators",
        "12",
        "--max-leaf-nodes",
        "7",
        "--min-samples-leaf",
        "5",
        "--n-threads",
        "1",
        *extra,
    ]


# ---------------------------------------------------------------- tqdm not installed


def test_cli_train_without_tqdm_trains_and_warns_instead_of_a_traceback(letor, monkeypatch, capsys):
    # tqdm is a dependency, but an environment without it (a vendored copy, a broken
    # install) crashed `ltrboost train` with a ModuleNotFoundError traceback after
    # reading every data file, and wrote no model.
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    out = letor / "m.json"
    rc = cli_main(_train_args(letor, "--output", str(out)))
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "Traceback" not in err
    assert "ltrboost: warning: no progress bar: tqdm is not installed" in err
    assert "--quiet" in err
    assert out.exists()
    assert f"wrote {out}" in err


def test_experiment_without_tqdm_runs_without_a_bar(monkeypatch):
    from ltrboost._progress import progress_bar

    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.warns(UserWarning, match="tqdm is not installed"):
        assert progress_bar(total=3, unit="cell") is None


# ---------------------------------------------------------------- progress bar on resume


def test_cli_bar_of_a_resumed_run_counts_the_resumed_rounds_as_done(letor, capsys):
    # The bar started at 0 and jumped to the resumed rounds at the first new one (so
    # its rate and ETA counted them as trained now); a model that had already stopped
    # early gets no round, and its bar stayed at 0/N instead of ending at 100%.
    first = letor / "m.json"
    rc = cli_main(_train_args(letor, "--early-stopping-rounds", "2", "--output", str(first)))
    err = capsys.readouterr().err
    assert rc == 0, err
    done = json.loads(first.read_text())
    n_done = len(done["trees"])
    assert n_done < 12  # it stopped early
    again = letor / "m2.json"
    rc = cli_main(
        _train_args(
            letor,
            "--early-stopping-rounds",
            "2",
            "--n-estimators",
            "30",
            "--resume",
            str(first),
            "--output",
            str(again),
        )
    )
    err = capsys.readouterr().err
    assert rc == 0, err
    last_bar = [s for s in err.replace("\r", "\n").splitlines() if "tree" in s][-1]
    assert f"{n_done}/{n_done}" in last_bar, last_bar
    assert "100%" in last_bar


def test_progress_bar_starts_at_the_resumed_rounds():
    from ltrboost.booster import CallbackEnv
    from ltrboost.cli._common import _progress_bar
    from ltrboost.params import BoosterParams

    sink = io.StringIO()
    cb = _progress_bar(BoosterParams(n_estimators=10), file=sink, mininterval=0, initial=4)
    assert cb.bar.n == 4
    cb(CallbackEnv(4, 10, {}, 0, None, 0.0))
    assert cb.bar.n == 5
    cb.close()


# ---------------------------------------------------------------- early stopping


@pytest.mark.parametrize("labels", ["all zero", "one document per query"])
def test_early_stopping_on_a_set_whose_metric_cannot_change_warns(data, labels):
    # Every query of the set with one label (all 0, a set without judgements) or a
    # single document: NDCG is 1.0 whatever the scores, so "no improvement" stopped
    # training after early_stopping_rounds + 1 rounds and the model predicted with its
    # first tree alone, silently.
    X, y, qid, Xv, yv, qv = data
    if labels == "all zero":
        es = (Xv, np.zeros_like(yv), qv)
    else:
        es = (Xv, yv, np.arange(yv.shape[0]))
    with pytest.warns(UserWarning, match=r"validation set 'valid_0'.*early stopping"):
        Ranker(**SMALL).fit(X, y, qid=qid, eval_set=[es], early_stopping_rounds=3)


def test_no_warning_for_an_informative_set_or_without_early_stopping(data):
    X, y, qid, Xv, yv, qv = data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Ranker(**SMALL).fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)], early_stopping_rounds=3)
        # not the set that drives early stopping: only evaluated
        Ranker(**SMALL).fit(
            X,
            y,
            qid=qid,
            eval_set=[(Xv, yv, qv), (Xv, np.zeros_like(yv), qv)],
            early_stopping_rounds=3,
        )
        Ranker(**SMALL).fit(X, y, qid=qid, eval_set=[(Xv, np.zeros_like(yv), qv)])


def test_a_custom_first_metric_is_not_second_guessed(data):
    # a callable may score the scores alone: its values can change on any labels
    X, y, qid, Xv, yv, qv = data

    def spread(scores, labels, offsets):
        return float(np.std(scores))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Ranker(**SMALL).fit(
            X,
            y,
            qid=qid,
            eval_set=[(Xv, np.zeros_like(yv), qv)],
            eval_metric=[spread],
            early_stopping_rounds=3,
        )


# ---------------------------------------------------------------- callback raising


def test_a_raising_callback_is_named_with_its_round(data):
    X, y, qid, Xv, yv, qv = data
    ds, vs = make_dataset(X, y, qid=qid), make_dataset(Xv, yv, qid=qv)

    def fragile(env):
        if env.iteration == 3:
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full") as info:
        train(SMALL, ds, [("v", vs)], callbacks=[lambda env: None, fragile])
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "callbacks[1] (fragile) after round 4" in notes


# ---------------------------------------------------------------- the best-round log line


def _best_line(caplog) -> str:
    lines = [r.getMessage() for r in caplog.records if "best round" in r.getMessage()]
    assert len(lines) == 1, lines
    return lines[0]


def test_a_stop_asked_by_a_callback_is_not_logged_as_early_stopping(data, caplog):
    # early_stopping_rounds=5 never ran out: a callback ended training at round 3,
    # and the log said "early stopping after 3 rounds".
    import logging

    caplog.set_level(logging.INFO, logger="ltrboost")
    X, y, qid, Xv, yv, qv = data
    Ranker(verbose=2, **SMALL).fit(
        X,
        y,
        qid=qid,
        eval_set=[(Xv, yv, qv)],
        early_stopping_rounds=5,
        callbacks=[lambda env: env.iteration == 2],
    )
    assert _best_line(caplog).startswith("stopped by a callback after 3 rounds; best round [")


def test_early_stopping_is_still_logged_as_such(data, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="ltrboost")
    X, y, qid, Xv, yv, qv = data
    model = Ranker(verbose=1, n_estimators=60, max_leaf_nodes=7, min_samples_leaf=5)
    model.fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)], early_stopping_rounds=2)
    n = model.booster_.n_iterations
    assert n < 60
    assert _best_line(caplog).startswith(
        f"early stopping after {n} rounds; best round [{model.best_iteration_}]"
    )

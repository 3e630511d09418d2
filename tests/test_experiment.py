"""``ltrboost experiment``: the grid runs, the report is complete, and it resumes."""

import csv
import json
import os

import numpy as np
import pytest

from ltrboost.cli import main
from ltrboost.experiment import find_folds, run_experiment


@pytest.fixture
def folds(tmp_path, write_letor_folds):
    """``folds(n_folds=2)``: tiny LETOR folds under ``tmp_path/data``."""
    return lambda n_folds=2: write_letor_folds(tmp_path / "data", n_folds, 10, 6)


def test_find_folds_requires_the_three_files(folds, tmp_path):
    root = folds(1)
    assert [f[0] for f in find_folds(str(root))] == ["Fold1"]
    os.remove(root / "Fold1" / "vali.txt")
    with pytest.raises(ValueError, match=r"Fold\*"):
        find_folds(str(root))


def test_experiment_report_and_resume(folds, tmp_path):
    root = folds()
    out = tmp_path / "report"
    kw = dict(
        leaves=(4,),
        learning_rates=(0.1,),
        max_trees=4,
        min_samples_leaf=2,
        n_threads=1,
        progress=False,
    )
    summary = run_experiment(str(root), str(out), **kw)
    assert summary["n_cells"] == 2 * 4  # systems x metrics
    cells = sorted(os.listdir(out / "cells"))
    assert len(cells) == 2 * 2 * 2  # systems x criteria x folds
    for name in ("table.md", "iterations.csv", "final_loss.csv"):
        assert (out / name).stat().st_size > 0
    with open(out / "iterations.csv") as f:
        rows = list(csv.DictReader(f))
    # every metric at every iteration, for vali and test, of every cell
    assert len(rows) == len(cells) * 2 * 4
    table = (out / "table.md").read_text()
    assert "lambdamart" in table
    assert "mcrank" in table
    assert " / " in table
    # resume: finished cells are not recomputed
    before = {c: (out / "cells" / c).stat().st_mtime_ns for c in cells}
    run_experiment(str(root), str(out), **kw)
    assert {c: (out / "cells" / c).stat().st_mtime_ns for c in cells} == before
    rec = json.loads((out / "cells" / cells[0]).read_text())
    assert np.isfinite(rec["final_train_loss"])
    assert 1 <= rec["best_iteration"] <= 4


def test_experiment_cli(folds, tmp_path, capsys):
    root = folds(1)
    rc = main(
        [
            "experiment",
            str(root),
            "-o",
            str(tmp_path / "r"),
            "--max-trees",
            "3",
            "--leaves",
            "4",
            "--learning-rates",
            "0.1",
            "--systems",
            "lambdamart",
            "--min-samples-leaf",
            "2",
            "--quiet",
        ]
    )
    assert rc == 0
    assert "lambdamart" in capsys.readouterr().out


def _cell_json(out, key):
    return json.loads((out / "cells" / f"{key}.json").read_text())


def test_ranknet_system_uses_the_pairwise_ole(folds, tmp_path):
    root = folds(1)
    out = tmp_path / "r"
    summary = run_experiment(
        str(root),
        str(out),
        systems=("ranknet",),
        leaves=(4,),
        learning_rates=(0.1,),
        max_trees=5,
        min_samples_leaf=2,
        n_threads=1,
        progress=False,
    )
    assert summary["n_cells"] == 4  # one (leaves, rate) x 4 metrics
    se = _cell_json(out, "ranknet_se_L4_lr0.1_Fold1")
    ole = _cell_json(out, "ranknet_ole_L4_lr0.1_Fold1")
    assert se["settings"]["max_trees"] == 5
    # the pairwise correction changes the trees, so the curves differ (on McRank OLE
    # is Newton; on RankNet it must be the eq. 13 criterion, not Newton either)
    assert se["curves"]["vali"]["ndcg@10"] != ole["curves"]["vali"]["ndcg@10"]
    from ltrboost.booster import train
    from ltrboost.dataset import make_dataset
    from ltrboost.io.letor import load_svmlight

    d = load_svmlight(root / "Fold1" / "train.txt")
    v = load_svmlight(root / "Fold1" / "vali.txt", n_features=d.X.shape[1])
    tr, va = make_dataset(d.X, d.y, qid=d.qid), make_dataset(v.X, v.y, qid=v.qid)
    newton = train(
        dict(
            objective="ranknet",
            n_estimators=5,
            learning_rate=0.1,
            max_leaf_nodes=4,
            min_samples_leaf=2,
            split_criterion="newton",
            growth="breadth_first",
            eval_metric=["ndcg@10"],
            n_threads=1,
        ),
        tr,
        [("vali", va)],
    )
    assert newton.evals_result["vali"]["ndcg@10"] != ole["curves"]["vali"]["ndcg@10"]
    assert "ranknet" in (out / "paired.md").read_text()
    assert (out / "ole_minus_se.csv").stat().st_size > 0


def test_patience_stops_early_at_the_full_runs_best(folds, tmp_path):
    root = folds(1)
    kw = dict(
        systems=("lambdamart",),
        criteria=("se",),
        leaves=(4,),
        learning_rates=(0.12,),
        max_trees=40,
        min_samples_leaf=2,
        n_threads=1,
        progress=False,
    )
    run_experiment(str(root), str(tmp_path / "full"), **kw)
    run_experiment(str(root), str(tmp_path / "stop"), patience=3, **kw)
    key = "lambdamart_se_L4_lr0.12_Fold1"
    full = _cell_json(tmp_path / "full", key)
    stop = _cell_json(tmp_path / "stop", key)
    vali = full["curves"]["vali"]["ndcg@10"]
    # where patience 3 must stop: 3 rounds after the running best (first maximum)
    best, expected_stop = 0, len(vali)
    for t in range(1, len(vali)):
        if vali[t] > vali[best]:
            best = t
        elif t - best >= 3:
            expected_stop = t + 1
            break
    assert expected_stop < 40  # the case is one where patience must cut the run
    assert stop["n_trees"] == expected_stop
    assert full["n_trees"] == 40
    assert stop["curves"]["vali"]["ndcg@10"] == vali[:expected_stop]
    assert stop["best_iteration"] == best + 1
    if int(np.argmax(vali)) == best:  # no later improvement: the same reported cell
        assert stop["best_iteration"] == full["best_iteration"]
        assert stop["test_at_best"] == full["test_at_best"]
    with pytest.raises(ValueError, match="patience"):
        run_experiment(str(root), str(tmp_path / "bad"), patience=0, **kw)


def test_t_interval_matches_scipy_and_a_hand_computation():
    stats = pytest.importorskip("scipy.stats")
    from ltrboost.experiment import t_interval

    # hand: d = 1, 2, 3, 4: mean 2.5, s = 1.290994, s/sqrt(4) = 0.645497,
    # t_{3, 0.975} = 3.182446 -> 2.5 +- 2.054260
    mean, lo, hi, p = t_interval([1.0, 2.0, 3.0, 4.0])
    assert mean == pytest.approx(2.5)
    assert (lo, hi) == pytest.approx((0.445740, 4.554260), abs=2e-6)
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=11), rng.normal(0.3, 1.0, size=11)
    res = stats.ttest_rel(b, a)
    ci = res.confidence_interval(0.95)
    mean, lo, hi, p = t_interval(b - a)
    assert (lo, hi) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert p == pytest.approx(res.pvalue, rel=1e-12)
    assert np.isnan(t_interval([1.0])[1])
    assert t_interval([0.5, 0.5, 0.5])[1:3] == (0.5, 0.5)


def test_paired_test_pairs_cells_and_averages_folds_first():
    from ltrboost.experiment import METRICS, Cell, paired_test

    results = {}
    # OLE - SE of ndcg@10: fold A cells +0.01, +0.03; fold B +0.02, -0.02; fold C 0, +0.02
    diffs = {"A": (0.01, 0.03), "B": (0.02, -0.02), "C": (0.0, 0.02)}
    for fold, ds in diffs.items():
        for lr, dd in zip((0.1, 0.12), ds, strict=True):
            for crit, v in (("se", 0.5), ("ole", 0.5 + dd)):
                results[Cell("lambdamart", crit, 10, lr, fold)] = {
                    "test_at_best": {m: v for m in METRICS}
                }
    results[Cell("lambdamart", "ole", 20, 0.1, "A")] = {  # no SE twin: not a unit
        "test_at_best": {m: 0.9 for m in METRICS}
    }
    r = paired_test(results)["lambdamart"]["ndcg@10"]
    assert r["cells"]["n"] == 6
    assert r["cells"]["mean"] == pytest.approx(0.06 / 6)
    assert (r["cells"]["better"], r["cells"]["worse"], r["cells"]["tied"]) == (4, 1, 1)
    assert r["folds"]["n"] == 3
    fold_means = [0.02, 0.0, 0.01]
    assert r["folds"]["mean"] == pytest.approx(np.mean(fold_means))
    s = np.std(fold_means, ddof=1) / np.sqrt(3)
    half = 4.302653 * s  # t_{2, 0.975}
    assert r["folds"]["ci95"] == pytest.approx([0.01 - half, 0.01 + half], abs=1e-6)
    assert (r["folds"]["better"], r["folds"]["worse"]) == (2, 0)


def test_write_synthetic_folds_makes_long_query_folds(tmp_path):
    from ltrboost.experiment import write_synthetic_folds
    from ltrboost.io.letor import load_svmlight

    dirs = write_synthetic_folds(
        str(tmp_path / "syn"), n_seeds=2, n_train=900, n_vali=300, n_test=300,
        docs_per_query=(100, 130),
    )  # fmt: skip
    folds = find_folds(str(tmp_path / "syn"))
    assert [f[0] for f in folds] == ["Seed1", "Seed2"]
    assert [os.path.dirname(f[1]) for f in folds] == dirs
    firsts = []
    for _name, *paths in folds:
        parts = [load_svmlight(p, n_features=136) for p in paths]
        for d, at_least in zip(parts, (900, 300, 300), strict=True):
            assert d.X.shape[0] >= at_least
            assert d.X.shape[1] == 136
            _, sizes = np.unique(d.qid, return_counts=True)
            assert sizes.min() >= 100
            assert sizes.max() <= 130
            assert set(np.unique(d.y)) <= {0, 1, 2, 3, 4}
        qids = [set(np.unique(d.qid).tolist()) for d in parts]
        assert not (qids[0] & qids[1])
        assert not (qids[1] & qids[2])
        firsts.append(parts[0].X[0])
    assert not np.array_equal(firsts[0], firsts[1])  # seeds differ


def test_experiment_cli_patience_and_system_grid(folds, tmp_path, capsys):
    root = folds(1)
    out = tmp_path / "r"
    rc = main(
        [
            "experiment", str(root), "-o", str(out), "--max-trees", "6",
            "--leaves", "4,6", "--learning-rates", "0.1", "--systems", "lambdamart,ranknet",
            "--system-grid", "ranknet=4:0.12", "--ranknet-pair-method", "topk",
            "--patience", "2", "--min-samples-leaf", "2", "--n-threads", "1", "--quiet",
        ]
    )  # fmt: skip
    assert rc == 0
    cells = sorted(os.listdir(out / "cells"))
    assert [c for c in cells if c.startswith("ranknet")] == [
        "ranknet_ole_L4_lr0.12_Fold1.json",
        "ranknet_se_L4_lr0.12_Fold1.json",
    ]
    assert len([c for c in cells if c.startswith("lambdamart")]) == 4
    rec = json.loads((out / "cells" / "ranknet_ole_L4_lr0.12_Fold1.json").read_text())
    assert rec["settings"]["patience"] == 2
    assert rec["settings"]["pair_method"] == "topk"
    capsys.readouterr()
    bad = ["experiment", str(root), "-o", str(out), "--system-grid", "ranknet:4"]
    assert main(bad) != 0
    assert "SYSTEM=LEAVES:RATES" in capsys.readouterr().err

"""The experiment protocol of Xia, Zhai & Wang (seed 000), as one resumable command.

Systems {``mcrank``, ``lambdamart``} x split criteria {``se``, ``ole``} x leaves {10, 20} x
learning rates {0.06, 0.10, 0.12}, up to 1000 (LambdaMART) / 2500 (McRank) trees or a user
cap, on every ``FoldK/{train,vali,test}.txt`` below a folder.  Each cell (system, criterion,
leaves, learning rate, fold) trains once with the validation and test files evaluated after
every tree (NDCG@1/3/10 and ERR); the reported number is the test metric at the iteration
with the best validation NDCG@10.

The report folder holds:

* ``cells/*.json`` -- one finished cell each (the run resumes by skipping them);
* ``iterations.csv`` -- every metric at every iteration for every cell;
* ``table.md`` -- the paper's Table 2/3 layout: SE / OLE per cell (mean over folds),
  improvements of OLE over SE above 0.1 point (0.001) marked with ``*``;
* ``ole_minus_se_<system>.png`` -- OLE - SE of test NDCG@10 per iteration (Figure 2),
  when matplotlib is installed;
* ``final_loss.csv`` -- the objective's training loss at the final iteration.
"""

from __future__ import annotations

import csv
import glob
import itertools
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ltrboost.io._atomic import atomic_write_text

METRICS = ("ndcg@1", "ndcg@3", "ndcg@10", "err")
DEFAULT_TREES = {"lambdamart": 1000, "mcrank": 2500}


@dataclass(frozen=True)
class Cell:
    system: str
    criterion: str
    leaves: int
    learning_rate: float
    fold: str

    @property
    def key(self) -> str:
        return f"{self.system}_{self.criterion}_L{self.leaves}_lr{self.learning_rate:g}_{self.fold}"


def find_folds(folder: str) -> list[tuple[str, str, str, str]]:
    """(fold name, train, vali, test) for each ``Fold*`` (or the folder itself)."""
    folds = []
    candidates = sorted(glob.glob(os.path.join(folder, "Fold*"))) or [folder]
    for d in candidates:
        paths = [os.path.join(d, f) for f in ("train.txt", "vali.txt", "test.txt")]
        if all(os.path.isfile(p) for p in paths):
            folds.append((os.path.basename(os.path.normpath(d)), *paths))
    if not folds:
        raise ValueError(
            f"{folder}: no Fold*/train.txt, vali.txt, test.txt found (nor in the folder)"
        )
    return folds


def run_experiment(
    folder: str,
    output: str,
    *,
    systems: Sequence[str] = ("mcrank", "lambdamart"),
    criteria: Sequence[str] = ("se", "ole"),
    leaves: Sequence[int] = (10, 20),
    learning_rates: Sequence[float] = (0.06, 0.10, 0.12),
    max_trees: int | None = None,
    growth: str = "breadth_first",
    min_samples_leaf: int = 20,
    n_threads: int | None = None,
    progress: bool = True,
) -> dict:
    """Run (or resume) the grid and write the report; returns the summary table data."""
    from ltrboost.booster import train
    from ltrboost.dataset import make_dataset
    from ltrboost.io.letor import load_svmlight
    from ltrboost.params import BoosterParams

    folds = find_folds(folder)
    cells_dir = os.path.join(output, "cells")
    os.makedirs(cells_dir, exist_ok=True)
    cells = [
        Cell(s, c, int(nl), float(lr), f[0])
        for s, c, nl, lr, f in itertools.product(systems, criteria, leaves, learning_rates, folds)
    ]
    todo = [c for c in cells if not os.path.exists(os.path.join(cells_dir, c.key + ".json"))]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=len(cells),
            initial=len(cells) - len(todo),
            unit="cell",
            file=sys.stderr,
        )
    data_cache: dict[str, tuple] = {}
    fold_paths = {f[0]: f[1:] for f in folds}
    for cell in todo:
        if cell.fold not in data_cache:
            tr_p, va_p, te_p = fold_paths[cell.fold]
            tr = load_svmlight(tr_p)
            nf = tr.X.shape[1]
            va = load_svmlight(va_p, n_features=nf)
            te = load_svmlight(te_p, n_features=nf)
            data_cache.clear()
            data_cache[cell.fold] = tuple(make_dataset(d.X, d.y, qid=d.qid) for d in (tr, va, te))
        tr_ds, va_ds, te_ds = data_cache[cell.fold]
        n_trees = max_trees or DEFAULT_TREES.get(cell.system, 1000)
        params = BoosterParams(
            objective=cell.system,
            n_estimators=n_trees,
            learning_rate=cell.learning_rate,
            max_leaf_nodes=cell.leaves,
            split_criterion=cell.criterion,
            growth=growth,
            n_threads=n_threads,
            eval_metric=["ndcg@10", *(m for m in METRICS if m != "ndcg@10")],
            min_samples_leaf=min_samples_leaf,
        )
        t0 = time.perf_counter()
        booster = train(params, tr_ds, [("vali", va_ds), ("test", te_ds)])
        seconds = time.perf_counter() - t0
        vali_ndcg = booster.evals_result["vali"]["ndcg@10"]
        best = int(np.argmax(vali_ndcg))
        obj = booster._objective_instance()
        raw = booster.predict_raw(tr_ds.X, iteration=booster.n_iterations)
        try:
            final_loss = float(obj.loss(raw[0] if raw.shape[0] == 1 else raw, tr_ds))
        except NotImplementedError:
            final_loss = float("nan")
        result = {
            "cell": cell.__dict__,
            "seconds": seconds,
            "best_iteration": best + 1,
            "test_at_best": {m: booster.evals_result["test"][m][best] for m in METRICS},
            "curves": {
                split: {m: booster.evals_result[split][m] for m in METRICS}
                for split in ("vali", "test")
            },
            "final_train_loss": final_loss,
        }
        atomic_write_text(os.path.join(cells_dir, cell.key + ".json"), json.dumps(result))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return write_report(output, cells)


def write_report(output: str, cells: list[Cell]) -> dict:
    results = {}
    for c in cells:
        with open(os.path.join(output, "cells", c.key + ".json")) as f:
            results[c] = json.load(f)
    # iterations.csv
    rows = []
    for c, r in results.items():
        for split, curves in r["curves"].items():
            n = len(curves[METRICS[0]])
            for it in range(n):
                rows.append(
                    [
                        c.system,
                        c.criterion,
                        c.leaves,
                        c.learning_rate,
                        c.fold,
                        split,
                        it + 1,
                        *(f"{curves[m][it]:.6f}" for m in METRICS),
                    ]
                )
    with open(os.path.join(output, "iterations.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "system",
                "criterion",
                "leaves",
                "learning_rate",
                "fold",
                "split",
                "iteration",
                *METRICS,
            ]
        )
        w.writerows(rows)
    with open(os.path.join(output, "final_loss.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "system",
                "criterion",
                "leaves",
                "learning_rate",
                "fold",
                "final_train_loss",
                "seconds",
                "best_iteration",
            ]
        )
        for c, r in results.items():
            w.writerow(
                [
                    c.system,
                    c.criterion,
                    c.leaves,
                    c.learning_rate,
                    c.fold,
                    r["final_train_loss"],
                    f"{r['seconds']:.2f}",
                    r["best_iteration"],
                ]
            )
    # table.md: mean over folds of the test metric at the best validation iteration
    summary: dict = {}
    for c, r in results.items():
        k = (c.system, c.leaves, c.learning_rate, c.criterion)
        summary.setdefault(k, []).append(r["test_at_best"])
    lines = [
        "Test metrics at the best validation NDCG@10 iteration, mean over folds, "
        "as SE / OLE; `*` marks OLE better than SE by more than 0.1 point.",
        "",
    ]
    header = "| system | leaves | learning rate | " + " | ".join(METRICS) + " |"
    lines += [header, "|" + "---|" * (3 + len(METRICS))]
    table = {}
    systems = sorted({c.system for c in results})
    for system in systems:
        for nl in sorted({c.leaves for c in results}):
            for lr in sorted({c.learning_rate for c in results}):
                se = summary.get((system, nl, lr, "se"))
                ole = summary.get((system, nl, lr, "ole"))
                if not se or not ole:
                    continue
                cells_txt = []
                for m in METRICS:
                    a = float(np.mean([x[m] for x in se]))
                    b = float(np.mean([x[m] for x in ole]))
                    table[(system, nl, lr, m)] = (a, b)
                    mark = "*" if b - a > 0.001 else ""
                    cells_txt.append(f"{100 * a:.2f} / {100 * b:.2f}{mark}")
                lines.append(f"| {system} | {nl} | {lr:g} | " + " | ".join(cells_txt) + " |")
    wins = sum(1 for (a, b) in table.values() if b - a > 0.001)
    losses = sum(1 for (a, b) in table.values() if a - b > 0.001)
    lines += [
        "",
        f"OLE better by > 0.1 point in {wins} of {len(table)} cells, "
        f"worse by > 0.1 point in {losses}.",
    ]
    atomic_write_text(os.path.join(output, "table.md"), "\n".join(lines) + "\n")
    _plot(output, results)
    return {"table": table, "wins": wins, "losses": losses, "n_cells": len(table)}


def _plot(output: str, results: dict) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    for system in sorted({c.system for c in results}):
        fig, ax = plt.subplots(figsize=(7, 4))
        configs = sorted({(c.leaves, c.learning_rate) for c in results if c.system == system})
        for nl, lr in configs:
            diffs = []
            for c, r in results.items():
                if (c.system, c.leaves, c.learning_rate, c.criterion) != (
                    system,
                    nl,
                    lr,
                    "ole",
                ):
                    continue
                twin = Cell(system, "se", nl, lr, c.fold)
                if twin not in results:
                    continue
                a = np.asarray(results[twin]["curves"]["test"]["ndcg@10"])
                b = np.asarray(r["curves"]["test"]["ndcg@10"])
                n = min(a.size, b.size)
                diffs.append(b[:n] - a[:n])
            if diffs:
                n = min(d.size for d in diffs)
                mean = np.mean([d[:n] for d in diffs], axis=0)
                ax.plot(np.arange(1, n + 1), 100 * mean, label=f"{nl} leaves, lr {lr:g}")
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_xlabel("iteration (trees)")
        ax.set_ylabel("OLE - SE, test NDCG@10 (points)")
        ax.set_title(f"{system}: OLE minus SE per iteration (mean over folds)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(output, f"ole_minus_se_{system}.png"), dpi=110)
        plt.close(fig)

# %% [markdown]
# # ltrboost with pandas and scikit-learn: the whole workflow on MQ2008
#
# A notebook-style script (each `# %%` starts a cell; VS Code and Jupytext open it as a
# notebook).  It runs as a plain script too:
#
#     python docs/workflow.py [DATA_DIR] [--fold Fold1] [--out workflow_out] [--quick]
#
# `DATA_DIR` is the MQ2008 folder of the LETOR 4.0 data (`Fold1..5/{train,vali,test}.txt`);
# default `../shared/data/MQ2008`.  Steps:
#
# 1. load a fold into pandas DataFrames with a `qid` column;
# 2. `GridSearchCV` with `GroupKFold` over two parameters, scored by
#    `ltrboost.metrics.make_scorer("ndcg@10")` (the query ids ride in the `qid` column:
#    no metadata routing needed);
# 3. refit the best parameters with a validation set and a custom metric callable;
# 4. save the feature-importance and learning-curve plots as PNG;
# 5. look at the trees as a table (`trees_to_dataframe`) and draw one.
#
# `--quick` shrinks the grid and the number of trees (the test suite runs it that way).

# %%
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # write files; no window
import matplotlib.pyplot as plt
import numba
import numpy as np
import pandas as pd
from sklearn.model_selection import GridSearchCV, GroupKFold

import ltrboost
from ltrboost import Ranker
from ltrboost.metrics import make_scorer
from ltrboost.plot import plot_importance, plot_metric, plot_tree


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="ltrboost workflow on MQ2008: grid search by query, custom metric, plots"
    )
    p.add_argument("data_dir", nargs="?", default="../shared/data/MQ2008")
    p.add_argument("--fold", default="Fold1")
    p.add_argument("--out", default="workflow_out", help="folder for the PNG files")
    p.add_argument("--quick", action="store_true", help="small grid, few trees")
    return p.parse_args(argv)


# %% [markdown]
# ## 1. Load a fold into pandas
#
# LETOR files are svmlight text (`label qid:Q 1:v 2:v ...`); `ltrboost.load_svmlight`
# parses them, and the features go into a DataFrame whose `qid` column carries the
# query of each row.  The MQ2008 features have names in the LETOR 4.0 documentation;
# here they are `f1..f46` (the 1-based indices of the file).


# %%
def load_fold(path: Path) -> tuple[pd.DataFrame, pd.Series]:
    data = ltrboost.load_svmlight(path, n_features=46)
    X = pd.DataFrame(data.X, columns=[f"f{k + 1}" for k in range(data.X.shape[1])])
    X["qid"] = data.qid
    return X, pd.Series(data.y, name="relevance")


# %% [markdown]
# ## 2. Grid search with query folds
#
# `GroupKFold(groups=qid)` keeps each query inside one fold; the scorer reads the
# queries from the `qid` column; the Ranker does not use that column as a feature.


# %%
def grid_search(X: pd.DataFrame, y: pd.Series, quick: bool) -> GridSearchCV:
    grid = {"max_leaf_nodes": [7, 31], "learning_rate": [0.05, 0.1]}
    if quick:
        grid = {"max_leaf_nodes": [7, 15], "learning_rate": [0.1]}
    search = GridSearchCV(
        Ranker(n_estimators=15 if quick else 100, min_samples_leaf=20, random_state=0),
        grid,
        cv=GroupKFold(n_splits=3),
        scoring=make_scorer("ndcg@10"),
        n_jobs=1,
    )
    search.fit(X, y, groups=X["qid"])
    return search


# %% [markdown]
# ## 3. A custom metric, refit with a validation set
#
# An `eval_metric` callable is `f(scores, labels, query_offsets) -> float`, higher is
# better; query `q` owns rows `query_offsets[q]:query_offsets[q + 1]`.  Written with
# `numba.njit` the loop over queries runs without Python overhead per query.  This one
# is the mean reciprocal rank of the first document with label >= 1; a query with no
# relevant document counts 0, so it equals `get_metric("mrr", empty_query_score=0.0)`
# (trec_eval's convention; ltrboost's `"mrr"` gives such a query 1.0 by default).


# %%
@numba.njit  # no cache=True: a script run under other module names (tests) would poison it
def reciprocal_rank(scores, labels, query_offsets):
    total = 0.0
    n_queries = len(query_offsets) - 1
    for q in range(n_queries):
        s, e = query_offsets[q], query_offsets[q + 1]
        order = np.argsort(-scores[s:e], kind="mergesort")
        for rank in range(e - s):
            if labels[s + order[rank]] >= 1:
                total += 1.0 / (rank + 1)
                break
    return total / max(n_queries, 1)


def refit(params: dict, X, y, Xv, yv, quick: bool) -> Ranker:
    model = Ranker(
        n_estimators=40 if quick else 300,
        min_samples_leaf=20,
        random_state=0,
        early_stopping_rounds=10 if quick else 30,
        eval_metric=["ndcg@10", reciprocal_rank],
        **params,
    )
    # (Xv, yv) with a qid column: no separate query ids needed
    return model.fit(X, y, eval_set=[(Xv, yv)], eval_names=["vali"])


# %% [markdown]
# ## 4. Plots: importances and learning curves, as PNG files


# %%
def save_plots(model: Ranker, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    fig, ax = plt.subplots(figsize=(7, 6))
    plot_importance(model, importance_type="gain", max_num_features=15, ax=ax)
    paths.append(out / "importance.png")
    fig.tight_layout()
    fig.savefig(paths[-1], dpi=100)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    plot_metric(model, metric="ndcg@10", ax=axes[0], title="NDCG@10 on vali")
    plot_metric(model, metric="reciprocal_rank", ax=axes[1], title="custom metric (MRR) on vali")
    paths.append(out / "learning_curves.png")
    fig.tight_layout()
    fig.savefig(paths[-1], dpi=100)

    ax = plot_tree(model, tree_index=0)
    paths.append(out / "tree0.png")
    ax.figure.tight_layout()
    ax.figure.savefig(paths[-1], dpi=100)
    plt.close("all")
    return paths


# %% [markdown]
# ## 5. Run it all; the trees as a table


# %%
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fold = Path(args.data_dir) / args.fold
    if not fold.is_dir():
        print(f"no such fold folder: {fold}", file=sys.stderr)
        return 2
    X, y = load_fold(fold / "train.txt")
    Xv, yv = load_fold(fold / "vali.txt")
    Xt, yt = load_fold(fold / "test.txt")
    print(f"train {len(X)} rows, {X['qid'].nunique()} queries; vali {Xv['qid'].nunique()} queries")

    search = grid_search(X, y, args.quick)
    cv = pd.DataFrame(search.cv_results_)[["params", "mean_test_score", "std_test_score"]]
    print(cv.to_string(index=False))
    print("best:", search.best_params_, f"NDCG@10 {search.best_score_:.4f}")

    model = refit(search.best_params_, X, y, Xv, yv, args.quick)
    res = model.evals_result_["vali"]
    print(
        f"{len(res['ndcg@10'])} rounds; best iteration {model.best_iteration_}; "
        f"last vali NDCG@10 {res['ndcg@10'][-1]:.4f}, MRR {res['reciprocal_rank'][-1]:.4f}"
    )
    print(f"test NDCG@10 {make_scorer('ndcg@10')(model, Xt, yt):.4f}")

    for path in save_plots(model, Path(args.out)):
        print("wrote", path)

    trees = model.booster_.trees_to_dataframe()
    print(trees[["tree", "node", "depth", "feature", "threshold", "value", "gain", "count"]].head())
    return 0


if __name__ == "__main__":
    sys.exit(main())

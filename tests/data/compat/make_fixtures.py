"""Write the small model fixtures of this folder with an OLD ltrboost checkout, with the
predictions that code made (see README.md):

    PYTHONPATH=<old checkout>/src python make_fixtures.py <commit> <out folder> <names>
"""

import json
import os
import sys
import warnings

import numpy as np

from ltrboost import make_dataset, train

warnings.simplefilter("ignore")


def my_obj(scores, labels, query_offsets):
    return scores - labels, np.ones_like(scores)


def main(commit: str, out: str, which: list[str]) -> None:
    rng = np.random.default_rng(2024)
    nq, nd, nf = 24, 8, 4
    n = nq * nd
    X = rng.normal(size=(n, nf))
    y = np.clip(np.round(X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=n) + 1.0), 0, 2)
    X[rng.random(size=n) < 0.15, 2] = np.nan
    qid = np.repeat(np.arange(nq), nd)
    pos = np.tile(np.arange(1, nd + 1), nq)
    names = ["title_bm25", "pagerank", "click_rate", "length"]
    Xv = rng.normal(size=(64, nf))
    yv = np.clip(np.round(Xv[:, 0] + 1.0), 0, 2)
    qv = np.repeat(np.arange(8), 8)
    with open(os.path.join(os.path.dirname(__file__), "X_test.json")) as f:
        rows = json.load(f)
    Xt = np.array([[np.nan if v is None else v for v in r] for r in rows], dtype=np.float64)
    base = dict(
        n_estimators=4,
        learning_rate=0.3,
        max_leaf_nodes=4,
        min_samples_leaf=8,
        random_state=5,
        n_threads=1,
    )
    es = dict(n_estimators=30, early_stopping_rounds=2)
    specs = {
        "lambdamart_es": dict(base, objective="lambdamart", **es, eval_metric=["ndcg@5", "map"]),
        "mcrank": dict(base, objective="mcrank", n_estimators=3, max_leaf_nodes=3),
        "rankboost_gain_exp2": dict(
            base, objective="rankboost", gain="exp2", n_estimators=2, max_leaf_nodes=3
        ),
        "gbrank": dict(base, objective="gbrank", n_estimators=3),
        "custom": dict(base, objective=my_obj, n_estimators=3),
        "unbiased_es": dict(base, objective="lambdamart", unbiased=True, max_positions=8, **es),
        "yetirank": dict(base, objective="yetirank", n_estimators=3),
        "mart_truncation_level_neg": dict(
            base, objective="mart", truncation_level=-3, n_estimators=2, max_leaf_nodes=3
        ),
    }
    specs["unbiased_es"]["early_stopping_rounds"] = 1
    for name in which:
        p = specs[name]
        kw = {"position": pos} if p.get("unbiased") else {}
        ds = make_dataset(X, y, qid=qid, feature_names=names, **kw)
        valid = []
        if "early_stopping_rounds" in p:
            valid = [("valid", make_dataset(Xv, yv, qid=qv, feature_names=names))]
        b = train(p, ds, valid)
        stem = f"{commit}_{name}"
        b.save_model(f"{out}/{stem}.json")
        exp = {
            "commit": commit,
            "n_iterations": b.n_iterations,
            "best_iteration": getattr(b, "best_iteration", None),
            "predict": b.predict(Xt).tolist(),
            "predict_raw": b.predict_raw(Xt).tolist(),
            "predict_raw_iteration_1": b.predict_raw(Xt, iteration=1).tolist(),
        }
        if getattr(b, "position_bias", None) is not None:
            exp["position_bias"] = {k: list(map(float, v)) for k, v in b.position_bias.items()}
        with open(f"{out}/{stem}.expected.json", "w") as f:
            json.dump(exp, f)
        print(stem, os.path.getsize(f"{out}/{stem}.json"), b.n_iterations)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3].split(","))

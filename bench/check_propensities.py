"""Do Unbiased LambdaMART's position-bias estimates converge to the truth? (issue 17 item 4)

Synthetic position-based clicks where the answer is known: queries of 10 documents with
five normal features, relevant when ``x0 + 0.5 x1 > 0.8`` (about 24% of them), each
query shown once, clicked with probability ``(1/k)**eta`` if relevant and never
otherwise, so the true biases are ``t+_k = (1/k)**eta`` and ``t-_k = 1``.  Two display
orders: ``random`` (a random permutation: position independent of relevance, the case
the estimator is built for) and ``ranked`` (by ``x0 + 0.5 x1 + N(0, 1)``: the shown order
follows relevance, as a production ranker's does).  For each log size, ltrboost
(``unbiased=True``) and XGBoost (``lambdarank_unbiased``, biases read from its saved
config) are trained for ``--trees`` rounds with the regularisation exponent ``p`` = 0
(no shrinkage: the estimates themselves) and 0.5 (ltrboost's default; the estimates then
target ``t**(1/1.5)``), one thread each.  Writes ``propensities.md`` and
``propensities.json`` into ``--out``.

    PYTHONPATH=src:. python bench/check_propensities.py --queries 2000,8000,32000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from bench._common import REPO

N_DOCS = 10


def pbm_log(n_queries: int, eta: float, order: str, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * N_DOCS, 5))
    latent = X[:, 0] + 0.5 * X[:, 1]
    rel = latent > 0.8
    if order == "random":
        pos = np.concatenate([rng.permutation(N_DOCS) + 1 for _ in range(n_queries)])
    else:
        s = (latent + rng.normal(size=latent.size)).reshape(n_queries, N_DOCS)
        pos = (np.argsort(np.argsort(-s, axis=1), axis=1) + 1).ravel()
    clicks = (rng.random(rel.size) < (1.0 / pos) ** eta * rel).astype(np.float64)
    qid = np.repeat(np.arange(n_queries), N_DOCS)
    return X, clicks, qid, pos


def ours(X, clicks, qid, pos, p: float, trees: int):
    from ltrboost.sklearn import Ranker

    m = Ranker(
        n_estimators=trees, unbiased=True, position_bias_norm=p, max_positions=N_DOCS,
        n_threads=1,
    ).fit(X, clicks, qid=qid, position=pos)  # fmt: skip
    return m.position_bias_["t_plus"], m.position_bias_["t_minus"]


def xgboost(X, clicks, qid, pos, p: float, trees: int):
    import xgboost as xgb

    o = np.lexsort((pos, qid))  # XGBoost reads the position from the row order
    m = xgb.XGBRanker(
        objective="rank:ndcg", lambdarank_unbiased=True, lambdarank_bias_norm=p,
        n_estimators=trees, tree_method="hist", n_jobs=1, random_state=0,
    )  # fmt: skip
    m.fit(X[o], clicks[o], qid=qid[o])
    cfg = json.loads(m.get_booster().save_config())["learner"]["objective"]
    return [float(v) for v in cfg["ti+"][:N_DOCS]], [float(v) for v in cfg["tj-"][:N_DOCS]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", default="2000,8000,32000", help="impressions per log")
    ap.add_argument("--eta", type=float, default=1.0)
    ap.add_argument("--orders", default="random,ranked")
    ap.add_argument("--norms", default="0,0.5")
    ap.add_argument("--trees", type=int, default=50)
    ap.add_argument("--libraries", default="ltrboost,xgboost")
    ap.add_argument("--out", default=str(REPO / "docs" / "experiments" / "clicks"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if (out / "propensities.json").exists():
        print(f"{out}: replacing propensities.json and .md of an earlier run", file=sys.stderr)
    truth = (1.0 / np.arange(1, N_DOCS + 1)) ** args.eta
    rows = []
    for order in args.orders.split(","):
        for n in [int(v) for v in args.queries.split(",")]:
            data = pbm_log(n, args.eta, order, seed=n)
            for p in [float(v) for v in args.norms.split(",")]:
                for lib in args.libraries.split(","):
                    fn = {"ltrboost": ours, "xgboost": xgboost}[lib]
                    t0 = time.perf_counter()
                    tp, tm = fn(*data, p, args.trees)
                    rows.append(
                        dict(order=order, impressions=n, p=p, library=lib,
                             t_plus=list(map(float, tp)), t_minus=list(map(float, tm)),
                             seconds=time.perf_counter() - t0)
                    )  # fmt: skip
                    print(order, n, p, lib, np.round(tp, 3), np.round(tm, 2), flush=True)
    (out / "propensities.json").write_text(
        json.dumps({"settings": vars(args), "truth": truth.tolist(), "runs": rows}, indent=1)
    )
    show = [1, 2, 4, 9]  # positions 2, 3, 5, 10
    lines = [
        "| display order | impressions | p | library | t⁺ at 2, 3, 5, 10 | target | "
        "max t⁺ error | t⁻ range |",
        "|---|---:|---:|---|---|---|---:|---|",
    ]
    for r in rows:
        target = truth ** (1.0 / (1.0 + r["p"]))
        tp, tm = np.asarray(r["t_plus"]), np.asarray(r["t_minus"])
        err = np.max(np.abs(tp[1:] / target[1:] - 1.0))
        lines.append(
            f"| {r['order']} | {r['impressions']} | {r['p']:g} | {r['library']} | "
            + ", ".join(f"{tp[k]:.3f}" for k in show)
            + " | "
            + ", ".join(f"{target[k]:.3f}" for k in show)
            + f" | {100 * err:.0f}% | {tm[1:].min():.2f} to {tm[1:].max():.2f} |"
        )
    (out / "propensities.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'propensities.json'} and propensities.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

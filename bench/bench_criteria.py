"""Cost of the split criteria: training time of ``se``, ``newton`` and ``ole`` side by side.

Usage::

    python -m bench.bench_criteria [--trees 50] [--synthetic 500000] [--synthetic-trees 10]
                                   [--ole-top-features K] [--repeats 1] [--threads 2]
                                   [--systems lambdamart mcrank]
                                   [--output bench/results/criteria.md]

Seed 000 reports that its exact OLE criterion costs about 1.3x the SE criterion for
pairwise losses.  This script measures ours: ``lambdamart`` (pairwise: OLE builds pair
histograms by max/min bin for every node it considers) and ``mcrank`` (pointwise: OLE
is Newton, Theorem 1, and must cost the same) with each criterion, on MQ2008 Fold1 from
``../shared/data`` (when present) and on ``make_ranking_mslr_like`` data of
``--synthetic`` documents.  Same settings for every criterion: 31 leaves best-first,
learning rate 0.1, at least 20 documents per leaf, 255 bins, LambdaMART pairs truncated
at 30, 2 threads (``--threads``), a fixed number of trees (no early stopping).  Every run is a fresh
subprocess after a warm-up run, so compilation is not timed.  Reported: the time per
tree (``ms/tree``: end of the last round - end of the first, over the rounds between,
from a per-round callback; what issue 16 compares) and its ratios to ``se`` and of
``ole`` to ``newton``; the seconds of the whole ``train`` call (``fit s``: binning the
data included, 2-3 s of it at 500k documents, which dilutes the ratios of a few trees)
and their ``ole``/``newton`` ratio; the peak resident memory of the ``newton`` and
``ole`` processes (data generation and loading included), and (issue 16 item 4) the
largest round's OLE pairs as the grower holds them (``ole pair MB``: the PairCSR and
its two counts a row) beside the binned data (``binned MB``: a byte a document and
feature) and the pairs per document.
``--ole-top-features K [K ...]`` adds the approximate OLE (``ole_top_features=K``) as
one more criterion per K.  ``--repeats R`` trains R times in the
worker and keeps the fastest (on a shared machine the slow runs are other jobs' time).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench._common import (
    REPO,
    SHARED_DATA,
    machine_description,
    markdown_table,
    peak_rss_mb,
    run_worker,
)

CRITERIA = ("se", "newton", "ole")
SYSTEMS = ("lambdamart", "mcrank")


def _data(spec: dict):
    from ltrboost.dataset import make_dataset

    if spec["data"] == "mq2008":
        from ltrboost.io.letor import load_svmlight

        d = load_svmlight(str(SHARED_DATA / "MQ2008" / "Fold1" / "train.txt"))
        return make_dataset(d.X, d.y, qid=d.qid)
    from ltrboost.datasets import make_ranking_mslr_like

    X, y, q = make_ranking_mslr_like(int(spec["data"]), random_state=0)
    return make_dataset(X, y, qid=q)


def worker(spec: dict) -> dict:
    from ltrboost.booster import BoosterParams, train

    ds = _data(spec)
    params = dict(
        objective=spec["system"],
        split_criterion="ole" if spec["criterion"].startswith("ole") else spec["criterion"],
        learning_rate=0.1,
        max_leaf_nodes=31,
        min_samples_leaf=20,
        max_bins=255,
        n_threads=spec.get("threads", 2),
    )
    if spec["system"] == "lambdamart":
        params["truncation_level"] = 30
    if spec["criterion"].startswith("ole k="):
        params["ole_top_features"] = int(spec["criterion"][6:])
    train(BoosterParams(n_estimators=2, **params), ds)  # compile / load the cache
    best = best_tree = float("inf")
    for _ in range(spec.get("repeats", 1)):
        ends: list[float] = []
        t0 = time.perf_counter()
        train(
            BoosterParams(n_estimators=spec["trees"], **params),
            ds,
            callbacks=[lambda env, ends=ends: ends.append(time.perf_counter())],
        )
        best = min(best, time.perf_counter() - t0)
        if len(ends) > 1:  # a tree: end of the last round - end of the first, per round
            best_tree = min(best_tree, (ends[-1] - ends[0]) / (len(ends) - 1))
    out = {"seconds": best, "tree_seconds": best_tree, "peak_mb": peak_rss_mb()}
    if spec["criterion"] == "ole":
        out.update(_pair_bytes(params, spec["trees"], ds))
    return out


def _pair_bytes(params: dict, trees: int, ds) -> dict:
    """Issue 16 item 4: the largest round's OLE pairs as the grower holds them
    (:class:`~ltrboost.pair_csr.PairCSR` plus its two counts a row), against the binned
    data (one byte a document and feature), from one more training (not timed)."""
    import ltrboost.booster as booster_mod
    from ltrboost.booster import BoosterParams, train

    seen = {"pairs": 0, "bytes": 0}
    original = booster_mod.Training.ole_pairs

    def spy(self, scores, in_bag, iteration):
        pairs = original(self, scores, in_bag, iteration)
        if pairs is not None and pairs.n_pairs > seen["pairs"]:
            seen["pairs"] = pairs.n_pairs
            # + the grower's live and crossing counts (int32 each, a row)
            seen["bytes"] = pairs.nbytes + 8 * ds.n_samples
        return pairs

    booster_mod.Training.ole_pairs = spy
    try:
        train(BoosterParams(n_estimators=trees, **params), ds)
    finally:
        booster_mod.Training.ole_pairs = original
    return {
        "pair_mb": seen["bytes"] / 2**20,
        "binned_mb": ds.n_samples * ds.X.shape[1] / 2**20,
        "pairs_per_doc": seen["pairs"] / ds.n_samples,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--trees", type=int, default=50, help="trees on MQ2008 Fold1")
    ap.add_argument("--synthetic", type=int, default=500_000, help="documents (0: skip)")
    ap.add_argument("--synthetic-trees", type=int, default=10)
    ap.add_argument("--ole-top-features", type=int, nargs="+", default=None)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    ap.add_argument("--output", default=str(REPO / "bench" / "results" / "criteria.md"))
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    if min(args.trees, args.synthetic_trees) < 2 or args.repeats < 1 or args.synthetic < 0:
        # ms/tree is (end of the last round - end of the first) / (rounds - 1)
        ap.error("--trees and --synthetic-trees must be at least 2, --repeats at least 1")
    datasets = []
    if SHARED_DATA.exists():
        datasets.append(("mq2008", "MQ2008 Fold1", args.trees))
    if args.synthetic > 0:
        datasets.append(
            (str(args.synthetic), f"synthetic {args.synthetic:,}", args.synthetic_trees)
        )
    criteria = list(CRITERIA)
    for k in args.ole_top_features or ():
        criteria.append(f"ole k={k}")
    rows = []
    for key, label, trees in datasets:
        for system in args.systems:
            res = {}
            for criterion in criteria:
                spec = {"data": key, "system": system, "criterion": criterion,
                        "repeats": args.repeats, "threads": args.threads}  # fmt: skip
                res[criterion] = run_worker(
                    "bench_criteria", {**spec, "trees": trees}, timeout=7200
                )
                print(f"{label} {system} {criterion}: {res[criterion]['seconds']:.2f} s",
                      file=sys.stderr, flush=True)  # fmt: skip
            secs = {c: r["seconds"] for c, r in res.items()}
            tree = {c: r["tree_seconds"] for c, r in res.items()}
            rows.append(
                [label, system, str(trees)]
                + [f"{tree[c] * 1e3:.1f}" for c in criteria]
                + [f"{tree[c] / tree['se']:.2f}" for c in ("newton", "ole")]
                + [f"{tree[c] / tree['newton']:.2f}" for c in criteria[2:]]
                + [f"{secs[c]:.2f}" for c in criteria]
                + [f"{secs[c] / secs['newton']:.2f}" for c in criteria[2:]]
                + [f"{res[c]['peak_mb']:.0f}" for c in ("newton", "ole")]
                + [
                    f"{res['ole'].get('pair_mb', 0.0):.2f}",
                    f"{res['ole'].get('binned_mb', 0.0):.2f}",
                    f"{res['ole'].get('pairs_per_doc', 0.0):.1f}",
                ]
            )
    header = ["data", "objective", "trees", *(f"{c} ms/tree" for c in criteria)]
    header += ["newton/se", "ole/se", *(f"{c}/newton" for c in criteria[2:])]
    header += [*(f"{c} fit s" for c in criteria), *(f"{c}/newton fit" for c in criteria[2:])]
    header += ["newton peak MB", "ole peak MB", "ole pair MB", "binned MB", "pairs/doc"]
    text = "\n".join(
        [
            f"Machine: {machine_description()}",
            "",
            f"Command: `python -m bench.bench_criteria --trees {args.trees} "
            f"--synthetic {args.synthetic} --synthetic-trees {args.synthetic_trees}"
            + (
                f" --ole-top-features {' '.join(map(str, args.ole_top_features))}"
                if args.ole_top_features
                else ""
            )
            + f" --repeats {args.repeats} --threads {args.threads}"
            + f" --systems {' '.join(args.systems)}`",
            "",
            markdown_table(header, rows),
        ]
    )
    print(text)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Byte-identity guard for refactors: train 31 fixed configurations (every objective under
newton/se/ole, plus LambdaMART variants: err, map, sampled pairs, all-pairs OLE breadth-first,
depth-first with bagging, linear gain with normalisation, early stopping) on seeded synthetic
data and write the sha256 of each model file and of its predictions to OUTDIR/hashes.txt.

    PYTHONPATH=src python bench/ref_models.py /tmp/before   # on the old tree
    PYTHONPATH=src python bench/ref_models.py /tmp/after    # on the new tree
    diff /tmp/before/hashes.txt /tmp/after/hashes.txt

Prediction hashes must not change in a pure refactor; model-file hashes change only when the
file format (or what is stored in it) changes on purpose.  Hashes depend on the NumPy/Numba
versions, so compare runs from one environment.
"""

import hashlib
import os
import sys
import tempfile

import numpy as np

import ltrboost
from ltrboost.dataset import make_dataset
from ltrboost.datasets import make_ranking

USAGE = "usage: PYTHONPATH=src python bench/ref_models.py OUTDIR  (writes OUTDIR/hashes.txt)"
if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
    print(USAGE)
    print(__doc__)
    raise SystemExit(0)
if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
    # an option is not a folder name: `--help` used to become ./--help/hashes.txt
    print(USAGE, file=sys.stderr)
    print("ref_models.py: error: give exactly one OUTDIR", file=sys.stderr)
    raise SystemExit(2)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
X, y, qid = make_ranking(n_queries=60, docs_per_query=(5, 25), n_features=10, random_state=7)[:3]
Xv, yv, qv = make_ranking(
    n_queries=20, docs_per_query=(5, 25), n_features=10, random_state=8, first_qid=60
)[:3]  # ids of its own: not the training queries 0..59
train = make_dataset(X, y, qid=qid)
valid = make_dataset(Xv, yv, qid=qv)
base = dict(n_estimators=6, max_leaf_nodes=7, min_samples_leaf=5, random_state=3, n_threads=2)
configs = {}
for obj in [
    "mart",
    "logistic_rank",
    "mcrank",
    "ranknet",
    "rankboost",
    "lambdamart",
    "gbrank",
    "qbrank",
]:
    for crit in ["newton", "se", "ole"]:
        configs[f"{obj}-{crit}"] = dict(base, objective=obj, split_criterion=crit)
configs["lm-err"] = dict(base, objective="lambdamart", lambda_metric="err")
configs["lm-map"] = dict(base, objective="lambdamart", lambda_metric="map")
configs["lm-sampled"] = dict(
    base, objective="lambdamart", pair_method="sampled", pairs_per_sample=3
)
configs["lm-all-ole-breadth"] = dict(
    base, objective="lambdamart", truncation_level=0, split_criterion="ole", growth="breadth_first"
)
configs["lm-depth-sub"] = dict(
    base,
    objective="lambdamart",
    growth="depth_first",
    max_depth=3,
    subsample=0.7,
    colsample_bytree=0.6,
)
configs["lm-linear-norm"] = dict(
    base, objective="lambdamart", gain="linear", lambda_normalization=True
)
configs["lm-es"] = dict(
    base, objective="lambdamart", n_estimators=30, early_stopping_rounds=3, eval_metric="ndcg@5"
)
lines = []
for name, p in configs.items():
    try:
        b = ltrboost.train(p, train, [("valid", valid)])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.json")
            b.save_model(path)
            mh = hashlib.sha256(open(path, "rb").read()).hexdigest()[:16]
        pr = np.ascontiguousarray(b.predict(Xv), dtype=np.float64)
        ph = hashlib.sha256(pr.tobytes()).hexdigest()[:16]
        lines.append(f"{name} model={mh} pred={ph}")
    except Exception as e:
        lines.append(f"{name} ERROR {type(e).__name__}: {e}")
open(os.path.join(out, "hashes.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))

"""Learning from simulated clicks on MQ2008 (issue 17 item 4): does debiasing help?

For each fold, click model and log size, a click log is simulated from the fold's
training grades with :func:`ltrboost.clicks.simulate`, and these rankers are trained on
it; each is scored by NDCG@10 against the *true grades* of the fold's test queries.  Two
simulations (``--logger``):

* ``noisy`` (the first run): the shown ranking is a fixed noisy ranker, grade + N(0, 1),
  top 10; attractiveness 0.05 + 0.95 (2^y - 1) / 4; position-based clicks with
  examination (1/k)^eta, or cascade clicks (stop after a click with probability 0.5);
* ``weak`` (the field's standard one, Joachims et al. WSDM 2017, Ai et al. SIGIR 2018):
  the shown ranking is a weak production ranker, LambdaMART trained on the grades of a
  random ``--logger-fraction`` (5%) of the fold's training queries, every grade present
  (:func:`ltrboost.clicks.weak_logger_scores`), its top 10 shown deterministically;
  clicks with epsilon- = 0.1 for grade 0 and epsilon+ = 1 for the top grade (exponential
  gain between), position-based with examination (1/k)^eta for each ``--etas``, or
  cascade; the logger's own test NDCG@10 is the ``logger`` column.

The rankers:

* ``raw clicks``: LambdaMART on the log (one query group per impression, clicks as
  labels), positions ignored;
* ``debiased``: the same with ``unbiased=True`` (Unbiased LambdaMART, positions given);
* ``qbrank``: QBRank on skip-above preferences mined from the log
  (:func:`ltrboost.clicks.mine_preferences`) plus each shown document's click-through
  rate as its label (the log's only pointwise signal), ``use_label_pairs=False``;
* ``lightgbm pos``: LightGBM lambdarank with the position column
  (``Dataset(position=)``, ``lambdarank_position_bias_regularization=0``, its default);
  ``lightgbm raw`` the same without positions;
* ``xgboost unbiased``: XGBoost ``rank:ndcg`` with ``lambdarank_unbiased=True`` (rows of
  an impression in position order, as it requires; its defaults otherwise, e.g.
  ``lambdarank_bias_norm``, ``reg_lambda=1``); ``xgboost raw`` the same without it;
* ``oracle ipw`` (position-based clicks only): the ``debiased`` run with the *true*
  propensities ``t+ = (1/k)^eta``, ``t- = 1`` imposed from round 1 on instead of the
  estimates (a bench-only patch): what perfect knowledge of the bias would give;
* ``ceiling shown``: LambdaMART on the true grades of the documents the log showed
  (each once, grouped by query): what perfect clicks on the same documents would give;
* ``ceiling``: LambdaMART on the true training grades (no clicks).

The gap between ``raw clicks`` and ``ceiling`` has two parts: documents never shown
(outside the top 10) carry no click at all -- ``ceiling shown`` minus ``ceiling`` -- and
only the rest can be closed by anything done with the clicks.

``--data synthetic`` runs the same protocol on long synthetic queries instead of MQ2008
(:func:`synthetic_split`: ``make_ranking_mslr_like``, ``--synthetic-queries`` training
and test queries of ``--synthetic-docs`` documents, ``--folds`` as generator seeds) and
scores every ranker twice: ``ndcg@10`` on all documents of a test query and
``shown@10`` re-ranking each test query's top 10 by the logger.  ``--top-k`` sets the
results shown per impression; ``--shuffle-fractions`` adds runs whose impressions show
their top k in random order with that probability (``simulate(shuffle_fraction=)``).
``table.md`` then also has paired differences and the share of the gap closed per fold
/ seed, with 95% t intervals.

Same trees for everyone: ``--trees`` rounds (no early stopping: a click-trained model has
no graded validation set), learning rate 0.1, 31 leaves, 20 documents per leaf, 2
threads.  Writes ``results.json``, ``table.md`` and ``ndcg_vs_log_size.png`` into
``--out`` (replacing those of an earlier run there, the committed ones under
``docs/experiments/clicks`` by default: it says so when it starts).

    PYTHONPATH=src python bench/bench_clicks.py --folds 1,2,3 --sizes 1000,4000,16000
    PYTHONPATH=src python bench/bench_clicks.py --logger weak --etas 1,2 \
        --sizes 16000,64000 --threads 1 --out docs/experiments/clicks/weak_logger
    PYTHONPATH=src:. python bench/bench_clicks.py --data synthetic \
        --synthetic-queries 300,300 --synthetic-docs 100,120 --logger weak --etas 1,2 \
        --sizes 3000,12000 --threads 1 --out docs/experiments/clicks/synthetic_long
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a file, as documented: `from bench` needs the root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import REPO, SHARED_DATA, machine_description

METHODS = [
    "logger",
    "raw clicks",
    "debiased",
    "qbrank",
    "lightgbm raw",
    "lightgbm pos",
    "xgboost raw",
    "xgboost unbiased",
    "oracle ipw",
    "ctr labels",
    "ipw labels oracle",
    "ipw labels est",
    "ceiling shown",
    "ceiling",
]
# (debiased, raw) pairs whose share of the gap to the ceiling the table reports
GAPS = {
    "ltrboost": ("debiased", "raw clicks", "ceiling"),
    "lightgbm": ("lightgbm pos", "lightgbm raw", "ceiling"),
    "xgboost": ("xgboost unbiased", "xgboost raw", "ceiling"),
    "ltrboost, to ceiling shown": ("debiased", "raw clicks", "ceiling shown"),
    "oracle ipw, to ceiling shown": ("oracle ipw", "raw clicks", "ceiling shown"),
    "ctr labels": ("ctr labels", "raw clicks", "ceiling"),
    "ipw labels oracle": ("ipw labels oracle", "raw clicks", "ceiling"),
    "ipw labels est": ("ipw labels est", "raw clicks", "ceiling"),
    "ctr labels, to ceiling shown": ("ctr labels", "raw clicks", "ceiling shown"),
    "ipw labels oracle, to ceiling shown": ("ipw labels oracle", "raw clicks", "ceiling shown"),
    "ipw labels est, to ceiling shown": ("ipw labels est", "raw clicks", "ceiling shown"),
}
CLICK_MODELS = {
    "position_based": dict(model="position_based", eta=1.0, noise=0.05),
    "cascade": dict(model="cascade", satisfaction=0.5, noise=0.05),
}
# --logger weak: epsilon- = 0.1, epsilon+ = 1 (Joachims et al. 2017; Ai et al. 2018)
WEAK_CLICKS = dict(noise=0.1, eps_plus=1.0)
TOP_K = 10  # results shown per impression (--top-k)
RERANK_K = 10  # shown@10 re-ranks each test query's top 10 by the logger
LABEL_COLORS = {"ctr labels": "black", "ipw labels oracle": "magenta", "ipw labels est": "sienna"}
# ctr / ipw labels: rint(LABEL_SCALE * label) as LambdaMART's integer grades; with the
# linear gain the lambdas are invariant to the scale, so this only rounds to 1e-3
LABEL_SCALE = 1000


def click_models(
    logger: str, names: list[str], etas: list[float], shuffles: tuple[float, ...] = (0.0,)
) -> dict[str, dict]:
    """The simulate() settings of each click model of a run, by table label (a shuffled
    display's label ends in ``shuffle=F``)."""
    out = {}
    for f in shuffles:
        tag = f" shuffle={f:g}" if f > 0 else ""
        for name in names:
            base = dict(CLICK_MODELS[name])
            if logger == "weak":
                base.update(WEAK_CLICKS)
            if f > 0:
                base["shuffle_fraction"] = f
            if name == "position_based" and (logger == "weak" or etas != [1.0]):
                for eta in etas:
                    out[f"position_based eta={eta:g}{tag}"] = dict(base, eta=eta)
            else:
                out[name + tag] = base
    return out


def _load(fold: int, split: str):
    from ltrboost.dataset import make_dataset
    from ltrboost.io.letor import load_svmlight

    raw = load_svmlight(SHARED_DATA / "MQ2008" / f"Fold{fold}" / f"{split}.txt", n_features=46)
    return make_dataset(raw.X, raw.y, qid=raw.qid)


def synthetic_split(seed: int, n_train: int, n_test: int, docs: tuple[int, int]):
    """Train and test sets of long queries from one seeded draw of the MSLR-like generator.

    :func:`ltrboost.datasets.make_ranking_mslr_like` (136 features, MSLR's grade skew,
    grades 0-4) with query sizes uniform in ``docs``; its first ``n_train`` queries are
    the training set and the next ``n_test`` the test set (one relevance function), as
    :func:`ltrboost.experiment.write_synthetic_folds` cuts its seeds, without the files.
    """
    from ltrboost.dataset import make_dataset
    from ltrboost.datasets import make_ranking_mslr_like

    lo, hi = docs
    n_q = n_train + n_test
    X, y, qid = make_ranking_mslr_like(n_q * hi + 4 * hi, (lo, hi), random_state=seed)
    starts = np.r_[0, np.flatnonzero(np.diff(qid)) + 1]
    ends = np.r_[starts[1:], qid.size]
    keep = (ends - starts) >= lo  # the generator's truncated last query
    starts, ends = starts[keep][:n_q], ends[keep][:n_q]
    if starts.size < n_q:
        raise ValueError(f"seed {seed}: only {starts.size} queries of >= {lo} documents")
    out = []
    for a, b in ((0, n_train), (n_train, n_q)):
        rows = np.concatenate(
            [np.arange(s0, e0) for s0, e0 in zip(starts[a:b], ends[a:b], strict=True)]
        )
        out.append(make_dataset(X[rows], y[rows], qid=qid[rows]))
    return out[0], out[1]


def _ndcg10(scores, ds) -> float:
    from ltrboost.metrics import evaluate

    return float(
        evaluate(np.asarray(scores, float), ds.y, ds.query_offsets, metrics=["ndcg@10"])["ndcg@10"]
    )


THREADS = 2
# --data synthetic: (rows, dataset) of each test query's top 10 by the weak logger, where
# every ranker is scored a second time ("shown@10": re-ranking the documents a logger
# like the training log's would show, the setting position debiasing is about)
RERANK: tuple | None = None


def _metrics(scores) -> dict:
    """``ndcg@10`` on the test set, and ``shown@10`` on its logger top 10 (if RERANK)."""
    out = {"ndcg@10": _ndcg10(scores, TEST)}
    if RERANK is not None:
        rows, ds = RERANK
        out["shown@10"] = _ndcg10(np.asarray(scores)[rows], ds)
    return out


TEST = None


def _common(trees: int) -> dict:
    return dict(
        n_estimators=trees, learning_rate=0.1, max_leaf_nodes=31, min_samples_leaf=20,
        n_threads=THREADS,
    )  # fmt: skip


def run_one(train, test, cm: dict, n_sessions: int, seed: int, trees: int, methods, scores=None):
    from ltrboost.clicks import click_rows, mine_preferences, simulate
    from ltrboost.sklearn import Ranker

    off = train.query_offsets
    n_q = train.n_queries
    qidx = np.repeat(np.arange(n_q), np.diff(off))
    docids = [str(i - off[q]) for i, q in enumerate(qidx.tolist())]
    log = simulate(
        train.y, off, n_sessions=n_sessions, random_state=seed, top_k=TOP_K, scores=scores,
        **cm,
    )  # fmt: skip
    rows = click_rows(log, qidx, docids)
    X = train.X[rows.row]
    out: dict[str, dict] = {
        "_log": {"shown": len(rows), "clicks": int(rows.clicked.sum()), "train_queries": n_q},
    }
    p = _common(trees)

    def timed(name, fn):
        if name not in methods:
            return
        t0 = time.perf_counter()
        scores = fn()
        out[name] = {**_metrics(scores), "fit_s": time.perf_counter() - t0}

    timed(
        "raw clicks",
        lambda: Ranker(**p).fit(X, rows.clicked, qid=rows.impression).predict(test.X),
    )

    def debiased():
        m = Ranker(**p, unbiased=True, max_positions=TOP_K).fit(
            X, rows.clicked, qid=rows.impression, position=rows.position
        )
        out["_t_plus"] = m.position_bias_["t_plus"].tolist()
        out["_t_minus"] = m.position_bias_["t_minus"].tolist()
        return m.predict(test.X)

    timed("debiased", debiased)

    def qbrank():
        mined = mine_preferences(log, "skip-above")
        shown = np.bincount(rows.row, minlength=train.n_samples)
        clicked = np.bincount(rows.row, weights=rows.clicked, minlength=train.n_samples)
        keep = np.flatnonzero(shown > 0)  # documents never shown carry no signal
        ctr = clicked[keep] / shown[keep]
        new_index = np.full(train.n_samples, -1)
        new_index[keep] = np.arange(keep.size)
        q = np.asarray(mined.qid.tolist(), dtype=np.int64)
        a = off[q] + np.asarray(mined.preferred.tolist(), dtype=np.int64)
        b = off[q] + np.asarray(mined.other.tolist(), dtype=np.int64)
        pairs = np.column_stack([new_index[a], new_index[b], mined.weight])
        m = Ranker(**p, objective="qbrank", use_label_pairs=False)
        m.fit(train.X[keep], ctr, qid=qidx[keep], pairs=pairs)
        return m.predict(test.X)

    timed("qbrank", qbrank)

    def lightgbm(with_position=True):
        import lightgbm as lgb

        sizes = np.bincount(rows.impression)
        sizes = sizes[sizes > 0]
        position = rows.position - 1 if with_position else None
        ds = lgb.Dataset(X, rows.clicked, group=sizes, position=position)
        params = dict(
            objective="lambdarank", learning_rate=0.1, num_leaves=31, min_data_in_leaf=20,
            num_threads=THREADS, verbose=-1, lambdarank_position_bias_regularization=0.0,
            seed=0, deterministic=True,
        )  # fmt: skip
        return lgb.train(params, ds, num_boost_round=trees).predict(test.X)

    timed("lightgbm raw", lambda: lightgbm(False))
    timed("lightgbm pos", lightgbm)

    def xgboost(unbiased=True):
        import xgboost as xgb

        m = xgb.XGBRanker(
            objective="rank:ndcg", lambdarank_unbiased=unbiased, n_estimators=trees,
            learning_rate=0.1, tree_method="hist", grow_policy="lossguide", max_leaves=31,
            max_depth=0, min_child_weight=1e-3, n_jobs=THREADS, random_state=0,
        )  # fmt: skip
        m.fit(X, rows.clicked, qid=rows.impression)
        return m.predict(test.X)

    def oracle():
        import ltrboost.objectives.unbiased as unbiased_module

        eta = cm["eta"]
        truth = unbiased_module.PositionBias((1.0 / np.arange(1, TOP_K + 1)) ** eta, np.ones(TOP_K))
        saved = unbiased_module.update_position_bias
        unbiased_module.update_position_bias = lambda *a: truth
        try:
            m = Ranker(**p, unbiased=True, max_positions=TOP_K).fit(
                X, rows.clicked, qid=rows.impression, position=rows.position
            )
        finally:
            unbiased_module.update_position_bias = saved
        return m.predict(test.X)

    if cm["model"] == "position_based":
        timed("oracle ipw", oracle)

    def labels(name, theta=None):
        """LambdaMART (linear gain) on one group per query: its shown documents, each
        labelled by its clicks aggregated over the impressions that showed it -- the
        click-through rate, or with ``theta`` (per-position propensities) the
        inverse-propensity estimate mean(click / theta(position)) of its click
        probability when examined (Joachims et al. 2017)."""
        w = np.ones(len(rows)) if theta is None else 1.0 / np.asarray(theta)[rows.position - 1]
        keep, inv = np.unique(rows.row, return_inverse=True)
        shown = np.bincount(inv, minlength=keep.size)
        label = np.bincount(inv, weights=rows.clicked * w, minlength=keep.size) / shown
        y = np.rint(LABEL_SCALE * label)  # LambdaMART needs integer grades
        # how well the labels themselves order the shown training documents (true grades)
        qk = qidx[keep]
        qoff = np.r_[0, np.flatnonzero(np.diff(qk)) + 1, qk.size]
        from ltrboost.metrics import evaluate

        quality = evaluate(label, train.y[keep], qoff, metrics=["ndcg@10"])["ndcg@10"]
        if scores is not None:  # the shown order's own quality, for comparison
            shown_order = evaluate(scores[keep], train.y[keep], qoff, metrics=["ndcg@10"])
            logger_quality = float(shown_order["ndcg@10"])
            out.setdefault("_labels", {})["logger"] = {"train_ndcg@10": logger_quality}
        out.setdefault("_labels", {})[name] = {
            "mean": float(label.mean()), "max": float(label.max()),
            "train_ndcg@10": float(quality),
        }  # fmt: skip
        m = Ranker(**p, gain="linear").fit(train.X[keep], y, qid=qidx[keep])
        return m.predict(test.X)

    timed("ctr labels", lambda: labels("ctr labels"))
    if cm["model"] == "position_based":
        true_theta = (1.0 / np.arange(1, TOP_K + 1)) ** cm["eta"]
        timed("ipw labels oracle", lambda: labels("ipw labels oracle", true_theta))

    def ipw_est():
        if "_t_plus" not in out:  # the debiased run's estimates
            m = Ranker(**p, unbiased=True, max_positions=TOP_K).fit(
                X, rows.clicked, qid=rows.impression, position=rows.position
            )
            out["_t_plus"] = m.position_bias_["t_plus"].tolist()
            out["_t_minus"] = m.position_bias_["t_minus"].tolist()
        return labels("ipw labels est", out["_t_plus"])

    timed("ipw labels est", ipw_est)

    def ceiling_shown():
        keep = np.unique(rows.row)
        m = Ranker(**p).fit(train.X[keep], train.y[keep], qid=qidx[keep])
        return m.predict(test.X)

    timed("ceiling shown", ceiling_shown)
    timed("xgboost raw", lambda: xgboost(False))
    timed("xgboost unbiased", xgboost)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folds", default="1,2,3")
    ap.add_argument("--sizes", default="1000,4000,16000", help="impressions per log")
    ap.add_argument("--click-models", default="position_based,cascade")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument(
        "--logger", choices=("noisy", "weak"), default="noisy",
        help="shown ranking and click noise: the first run's (noisy) or the field's (weak)",
    )  # fmt: skip
    ap.add_argument("--logger-fraction", type=float, default=0.05, help="weak logger's queries")
    ap.add_argument("--etas", default="1", help="position-based examination exponents")
    ap.add_argument("--threads", type=int, default=2, help="threads of every library")
    ap.add_argument(
        "--data", choices=("mq2008", "synthetic"), default="mq2008",
        help="MQ2008's folds, or long synthetic queries (--folds are then generator seeds)",
    )  # fmt: skip
    ap.add_argument(
        "--synthetic-queries", default="800,400", help="synthetic training,test queries"
    )
    ap.add_argument(
        "--synthetic-docs", default="100,120", help="synthetic documents per query, min,max"
    )
    ap.add_argument(
        "--top-k", type=int, default=10,
        help="results shown per impression (debiased max_positions and oracle propensities too)",
    )  # fmt: skip
    ap.add_argument(
        "--shuffle-fractions", default="0",
        help="fractions of impressions whose top 10 is shown in random order (one run each)",
    )  # fmt: skip
    ap.add_argument("--out", default=str(REPO / "docs" / "experiments" / "clicks"))
    ap.add_argument(
        "--merge",
        action="store_true",
        help="add these methods' results to the runs already in OUT/results.json",
    )
    args = ap.parse_args(argv)
    folds = [int(f) for f in args.folds.split(",")]
    sizes = [int(s) for s in args.sizes.split(",")]
    global THREADS, TEST, RERANK, TOP_K
    TOP_K = args.top_k
    THREADS = args.threads
    etas = [float(e) for e in args.etas.split(",")]
    shuffles = tuple(float(f) for f in args.shuffle_fractions.split(","))
    cm_settings = click_models(args.logger, args.click_models.split(","), etas, shuffles)
    cms = list(cm_settings)
    methods = args.methods.split(",")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict = {"settings": vars(args), "machine": machine_description(), "runs": []}
    previous = {}
    if not args.merge and (out_dir / "results.json").exists():
        print(
            f"{out_dir}: replacing the results.json, table.md and ndcg_vs_log_size.png "
            "of an earlier run (--merge adds to them instead)",
            file=sys.stderr,
            flush=True,
        )
    if args.merge and (out_dir / "results.json").exists():
        results = json.loads((out_dir / "results.json").read_text())
        results.setdefault("merged_settings", []).append(vars(args))
        previous = {(r["fold"], r["click_model"], r["sessions"]): r for r in results["runs"]}
    t_start = time.perf_counter()
    for fold in folds:
        if args.data == "synthetic":
            n_tr, n_te = (int(v) for v in args.synthetic_queries.split(","))
            lo, hi = (int(v) for v in args.synthetic_docs.split(","))
            train, test = synthetic_split(fold, n_tr, n_te, (lo, hi))
        else:
            train, test = _load(fold, "train"), _load(fold, "test")
        TEST, RERANK = test, None
        scores = logger = None
        if args.logger == "weak":
            from ltrboost.clicks import weak_logger_scores

            scores, picked = weak_logger_scores(
                train.X, train.y, train.query_offsets, args.logger_fraction,
                random_state=fold, **_common(args.trees),
            )  # fmt: skip
            from ltrboost.sklearn import Ranker

            sub = np.isin(
                np.repeat(np.arange(train.n_queries), np.diff(train.query_offsets)), picked
            )
            m = Ranker(**_common(args.trees)).fit(
                train.X[sub], train.y[sub], group=np.diff(train.query_offsets)[picked]
            )
            logger_test = m.predict(test.X)
            logger = _metrics(logger_test)["ndcg@10"]
            if args.data == "synthetic":
                from ltrboost.dataset import make_dataset

                toff = test.query_offsets
                top = [
                    np.argsort(-logger_test[toff[q] : toff[q + 1]], kind="stable")[:RERANK_K]
                    for q in range(test.n_queries)
                ]
                rows = np.concatenate([toff[q] + t for q, t in enumerate(top)])
                tq = np.repeat(np.arange(test.n_queries), np.diff(toff))
                RERANK = (rows, make_dataset(test.X[rows], test.y[rows], qid=tq[rows]))
                logger = _metrics(logger_test)
            print(f"fold {fold} weak logger: {picked.size} queries, {logger}", flush=True)
        ceiling = None
        if "ceiling" in methods:
            from ltrboost.sklearn import Ranker

            m = Ranker(**_common(args.trees)).fit(
                train.X, train.y, group=np.diff(train.query_offsets)
            )
            ceiling = _metrics(m.predict(test.X))
            print(f"fold {fold} ceiling {ceiling}", flush=True)
        for cm in cms:
            for k, n in enumerate(sizes):
                seed = 1000 * fold + 10 * k + cms.index(cm)
                if cm_settings[cm].get("shuffle_fraction", 0.0) > 0:  # seeds apart
                    seed += 100 * (1 + shuffles.index(cm_settings[cm]["shuffle_fraction"]))
                r = run_one(train, test, cm_settings[cm], n, seed, args.trees, methods, scores)
                if ceiling is not None:
                    r["ceiling"] = ceiling if isinstance(ceiling, dict) else {"ndcg@10": ceiling}
                if logger is not None:
                    r["logger"] = logger if isinstance(logger, dict) else {"ndcg@10": logger}
                    r["_log"]["logger_queries"] = int(picked.size)
                r.update(fold=fold, click_model=cm, sessions=n)
                old = previous.get((fold, cm, n))
                if old is not None:
                    old.update(r)  # incl. the re-run debiased model's _t_plus / _t_minus
                    r = old
                else:
                    results["runs"].append(r)
                line = " ".join(f"{m}={r[m]['ndcg@10']:.4f}" for m in METHODS if m in r)
                print(f"fold {fold} {cm} {n}: {line}", flush=True)
                (out_dir / "results.json").write_text(json.dumps(results, indent=1))
    results["wall_s"] = results.get("wall_s", 0.0) + time.perf_counter() - t_start
    (out_dir / "results.json").write_text(json.dumps(results, indent=1))
    write_report(results, out_dir)
    print(f"wrote {out_dir / 'results.json'}, table.md, ndcg_vs_log_size.png", file=sys.stderr)
    return 0


def _table(results: dict, key: str = "ndcg@10") -> tuple[str, dict]:
    runs = results["runs"]
    cms = list(dict.fromkeys(r["click_model"] for r in runs))
    sizes = sorted({r["sessions"] for r in runs})
    lines = [
        "| click model | impressions | per query | clicks | "
        + " | ".join(METHODS)
        + " | "
        + " | ".join(f"{lib} gap closed" for lib in GAPS)
        + " |",
        "|---|---:|---:|---:|" + "---:|" * (len(METHODS) + len(GAPS)),
    ]
    means: dict = {}
    for cm in cms:
        for n in sizes:
            sel = [r for r in runs if r["click_model"] == cm and r["sessions"] == n]
            if not sel:
                continue
            row = {}
            for m in METHODS:
                vals = [r[m][key] for r in sel if m in r and key in r[m]]
                row[m] = float(np.mean(vals)) if vals else None
            means[(cm, n)] = row
            clicks = np.mean([r["_log"]["clicks"] for r in sel])
            gaps = []
            for deb, raw, ceil in GAPS.values():
                gap = None
                if None not in (row[raw], row[deb], row[ceil]):
                    width = row[ceil] - row[raw]
                    gap = (row[deb] - row[raw]) / width if width > 0 else None
                gaps.append("—" if gap is None else f"{100 * gap:.0f}%")
            cells = ["—" if row[m] is None else f"{row[m]:.4f}" for m in METHODS]
            nq = [r["_log"].get("train_queries") for r in sel]
            per_q = "—" if None in nq else f"{n / np.mean(nq):.0f}"
            lines.append(
                f"| {cm} | {n} | {per_q} | {clicks:.0f} | " + " | ".join(cells + gaps) + " |"
            )
    return "\n".join(lines), means


# (numerator, denominator) columns of the paired table: x - raw of the same library
PAIRED = [
    ("ceiling - raw", "ceiling", "raw clicks"),
    ("ceiling shown - raw", "ceiling shown", "raw clicks"),
    ("debiased - raw", "debiased", "raw clicks"),
    ("oracle ipw - raw", "oracle ipw", "raw clicks"),
    ("ctr labels - raw", "ctr labels", "raw clicks"),
    ("ipw labels oracle - raw", "ipw labels oracle", "raw clicks"),
    ("ipw labels est - raw", "ipw labels est", "raw clicks"),
    ("ipw labels oracle - ctr labels", "ipw labels oracle", "ctr labels"),
    ("xgboost unbiased - raw", "xgboost unbiased", "xgboost raw"),
    ("lightgbm pos - raw", "lightgbm pos", "lightgbm raw"),
]
# share of the ceiling - raw gap, per fold / seed
SHARES = [
    ("debiased", "debiased", "raw clicks", "ceiling"),
    ("oracle ipw", "oracle ipw", "raw clicks", "ceiling"),
    ("ctr labels", "ctr labels", "raw clicks", "ceiling"),
    ("ipw labels oracle", "ipw labels oracle", "raw clicks", "ceiling"),
    ("ipw labels est", "ipw labels est", "raw clicks", "ceiling"),
    ("debiased, to ceiling shown", "debiased", "raw clicks", "ceiling shown"),
    ("oracle ipw, to ceiling shown", "oracle ipw", "raw clicks", "ceiling shown"),
    ("ipw labels oracle, to ceiling shown", "ipw labels oracle", "raw clicks", "ceiling shown"),
    ("ipw labels est, to ceiling shown", "ipw labels est", "raw clicks", "ceiling shown"),
    ("xgboost unbiased", "xgboost unbiased", "xgboost raw", "ceiling"),
    ("lightgbm pos", "lightgbm pos", "lightgbm raw", "ceiling"),
]


def _ci(vals: list[float], fmt: str = "{:+.4f}") -> str:
    """Mean and 95% t interval half-width over folds / seeds."""
    from scipy import stats

    v = np.asarray(vals, float)
    if v.size < 2:
        return fmt.format(v.mean()) if v.size else "—"
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    return f"{fmt.format(v.mean())} ± {fmt.format(half).lstrip('+')}"


def paired_table(results: dict, key: str = "ndcg@10") -> str:
    """Per cell: paired differences against each library's raw run, and the share of the
    raw → ceiling gap each closes, as mean ± 95% t half-width over folds / seeds (the
    share of every fold / seed, then averaged; the pooled share (mean difference / mean
    gap) in brackets)."""
    runs = results["runs"]
    cms = list(dict.fromkeys(r["click_model"] for r in runs))
    sizes = sorted({r["sessions"] for r in runs})
    head = [p[0] for p in PAIRED] + [f"{s[0]}: gap closed" for s in SHARES]
    lines = [
        "| click model | impressions | " + " | ".join(head) + " | folds debiased > raw |",
        "|---|---:|" + "---:|" * (len(head) + 1),
    ]
    for cm in cms:
        for n in sizes:
            sel = [r for r in runs if r["click_model"] == cm and r["sessions"] == n]
            if not sel:
                continue
            cells = []
            for _, a, b in PAIRED:
                d = [r[a][key] - r[b][key] for r in sel if a in r and b in r]
                cells.append(_ci(d))
            for _, a, b, c in SHARES:
                ok = [r for r in sel if a in r and b in r and c in r]
                num = [r[a][key] - r[b][key] for r in ok]
                den = [r[c][key] - r[b][key] for r in ok]
                if not ok or np.mean(den) <= 0:
                    cells.append("—")
                    continue
                if min(den) <= 0:  # a fold / seed without a gap: the pooled share only
                    cells.append(f"({100 * np.mean(num) / np.mean(den):.0f}%)")
                    continue
                share = [100 * x / y for x, y in zip(num, den, strict=True)]
                pooled = 100 * np.mean(num) / np.mean(den)
                cells.append(_ci(share, "{:.0f}%") + f" ({pooled:.0f}%)")
            wins = sum(
                r["debiased"][key] > r["raw clicks"][key]
                for r in sel
                if "debiased" in r and "raw clicks" in r
            )
            lines.append(f"| {cm} | {n} | " + " | ".join(cells) + f" | {wins} of {len(sel)} |")
    return "\n".join(lines)


def write_report(results: dict, out_dir: Path) -> None:
    runs = results["runs"]
    folds = sorted({r["fold"] for r in runs})
    scored = [v for r in runs for k, v in r.items() if k[0] != "_" and isinstance(v, dict)]
    keys = ["ndcg@10"] + (["shown@10"] if any("shown@10" in v for v in scored) else [])
    text, all_means = [], {}
    for key in keys:
        table, all_means[key] = _table(results, key)
        text.append(f"### {key}\n\n{table}\n\n{paired_table(results, key)}\n")
    (out_dir / "table.md").write_text("\n".join(text))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        cms = list(dict.fromkeys(r["click_model"] for r in runs))
        fig, axes = plt.subplots(
            len(keys), len(cms), figsize=(5.5 * len(cms), 4 * len(keys)), squeeze=False
        )
        data = results["settings"].get("data", "mq2008")
        name, unit = ("synthetic", "seeds") if data == "synthetic" else ("MQ2008", "folds")
        for row, key in zip(axes, keys, strict=True):
            means = all_means[key]
            for ax, cm in zip(row, cms, strict=True):
                sizes = sorted(n for c, n in means if c == cm)
                for m in METHODS:
                    if m == "qbrank":  # far below the rest (see the table): would flatten them
                        continue
                    ys = [means[(cm, n)][m] for n in sizes]
                    if all(v is not None for v in ys):
                        style = "--" if m == "ceiling" else (":x" if "raw" in m else "-o")
                        # the same colour in every panel, and as before the label rows
                        plotted = [x for x in METHODS if x != "qbrank" and "labels" not in x]
                        color = LABEL_COLORS.get(m) or f"C{plotted.index(m) % 10}"
                        ax.plot(sizes, ys, style, label=m, color=color)
                ax.set_xscale("log")
                ax.set_xlabel("impressions in the click log")
                what = "test NDCG@10" if key == "ndcg@10" else "NDCG@10 of the logger's top 10"
                ax.set_ylabel(f"{what} (true grades)")
                folds_text = ",".join(map(str, folds))
                ax.set_title(f"{name}, {cm} clicks ({unit} {folds_text})", fontsize=9)
                ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=8)  # the first panel has every method (oracle ipw too)
        fig.tight_layout()
        fig.savefig(out_dir / "ndcg_vs_log_size.png", dpi=110)
    except ImportError:
        pass


if __name__ == "__main__":
    raise SystemExit(main())

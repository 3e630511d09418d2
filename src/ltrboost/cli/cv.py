"""``ltrboost cv``: cross-validation over query folds (:func:`query_folds`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import warnings

from ltrboost.cli._common import (
    _check_inputs,
    _error_as_flags,
    _load,
    _progress_bar,
    _refuse_pairs_alone,
    _training_params,
    _validate_as_flags,
    one_grade_queries,
    one_grade_warning,
)
from ltrboost.cli._parser import _CV_REFUSED_FILES, _CV_REFUSED_OUTPUTS


def cmd_cv(args: argparse.Namespace) -> int:
    """Train on all query folds but one, score the held-out fold; mean and std."""
    import numpy as np

    from ltrboost._evaluation import check_training_setup, threshold_separates_nothing
    from ltrboost.booster import check_training_data, make_objective, metric_options, train
    from ltrboost.dataset import make_dataset, rows_located
    from ltrboost.metrics import evaluate, parse_metric_list
    from ltrboost.params import ParameterWarning

    params = _training_params(args)
    if hasattr(args, "cv_valid"):
        raise ValueError(f"--valid is not available in cv: {_CV_REFUSED_OUTPUTS['--valid']}")
    for flag, why in _CV_REFUSED_FILES.items():
        if hasattr(args, "cv_" + flag[2:].replace("-", "_")):
            raise ValueError(f"{flag} is not available in cv: {why}")
    if hasattr(args, "cv_output"):
        raise ValueError(f"--output is not available in cv: {_CV_REFUSED_OUTPUTS['--output']}")
    _validate_as_flags(params)
    if params.early_stopping_rounds is not None:
        raise ValueError(
            "--early-stopping-rounds is not available in cv (there is no "
            "validation set inside a fold); set --n-estimators instead"
        )
    if params.unbiased:  # the error of the objective suggested a --position cv lacks
        raise ValueError(
            "--unbiased true is not available in cv (it takes no --position file); "
            "cross-validate the click model with ltrboost.Ranker and GroupKFold instead"
        )
    if args.folds < 2:  # the flag alone: before the data is read
        raise ValueError(f"--folds={args.folds} must be at least 2")
    objective = make_objective(params)
    _refuse_pairs_alone(
        params,
        objective,
        ", and cv takes no --pairs file; drop --use-label-pairs, or cross-validate with "
        "ltrboost.Ranker and GroupKFold",
    )
    # without --metric: what train validates on, the objective's metric (map under
    # --lambda-metric map, err@10 under err, else ndcg@10)
    # (a --metric "" was refused by the flag checks above, as train refuses it)
    default = params.eval_metric is None
    metrics = parse_metric_list(objective.default_metric if default else params.eval_metric)
    params.eval_metric = None
    # a parameter's warning (one the objective ignores) is the same in every fold: once,
    # now; a fold's own (its training set has every label 0) names the fold below
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_training_setup(params, objective, [])
    said = {str(w.message) for w in caught}
    for w in caught:
        warnings.warn(w.message, stacklevel=1)
    _check_inputs(args)
    data, ds = _load(args.data, missing=args.missing, na_values=args.missing_token)
    folds = query_folds(data.qid, args.folds, params.random_state, source=args.data)
    options = metric_options(params)
    with rows_located(ds):  # a label the metrics refuse: now, not after a fold's training
        evaluate(np.zeros(ds.n_samples), ds.y, ds.query_offsets, metrics, **options)
    # MAP / MRR / P@k that no ranking changes (eval warns of its files): once for the
    # file, before any training; else for a fold whose test queries alone are flattened
    flat = threshold_separates_nothing(metrics, options, ds.y, args.data)
    if flat is not None:
        warnings.warn(flat, ParameterWarning, stacklevel=1)

    def fold_part(rows):
        part = make_dataset(data.X[rows], data.y[rows], qid=data.qid[rows])
        part.source = ds.source  # label errors name FILE:LINE
        lines = data.lines[rows]
        part.row_lines = lines if part.order is None else lines[part.order]
        return part

    # every fold's training data checked as its training would check it, before the
    # first fold trains: a fold whose training queries lack the grade a threshold
    # needs failed after the folds before it had trained and printed their results
    for k in range(args.folds):
        with _fold_errors(k, args.folds):
            check_training_data(params, fold_part(folds != k))
    per_fold = []
    for k in range(args.folds):
        # an error of one fold's data (its training queries lack the grade a threshold
        # needs) says which fold, as its warnings and its result line do
        with _fold_errors(k, args.folds):
            test = folds == k
            tr, te = fold_part(~test), fold_part(test)
            # a fold of one-grade test queries scores 1.0 whatever the model: said
            said_flat = one_grade_warning(
                one_grade_queries(te.y, te.query_offsets),
                te.n_queries,
                f"fold {k + 1}/{args.folds}",
                "test query",
            )
            if said_flat is not None:
                warnings.warn(said_flat, UserWarning, stacklevel=1)
            if flat is None:
                where = f"the fold's test queries of {args.data}"
                fold_flat = threshold_separates_nothing(metrics, options, te.y, where)
                if fold_flat is not None:
                    msg = f"fold {k + 1}/{args.folds}: {fold_flat}"
                    warnings.warn(msg, ParameterWarning, stacklevel=1)
            bar = None
            if not args.quiet:  # as train's, the fold in its text (the notice takes the left)
                bar = _progress_bar(params, getattr(args, "compile_notice", None))
                if bar is not None:
                    bar.bar.set_postfix_str(f"fold {k + 1}/{args.folds}", refresh=False)
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    booster = train(params, tr, callbacks=[] if bar is None else [bar])
            finally:
                if bar is not None:
                    bar.close()
            for text in dict.fromkeys(str(w.message) for w in caught if str(w.message) not in said):
                category = next(w.category for w in caught if str(w.message) == text)
                warnings.warn(f"fold {k + 1}/{args.folds}: {text}", category, stacklevel=1)
            with rows_located(te):
                res = evaluate(booster.predict(te.X), te.y, te.query_offsets, metrics, **options)
            res["n_queries"] = te.n_queries
            per_fold.append(res)
            if not args.json:
                cells = "  ".join(f"{m}={res[m]:.4f}" for m in metrics)
                n_q = f"{te.n_queries} {'query' if te.n_queries == 1 else 'queries'}"
                print(f"fold {k + 1}/{args.folds}: {cells}  ({n_q})")
    summary = {
        m: {
            "mean": float(np.mean([r[m] for r in per_fold])),
            "std": float(np.std([r[m] for r in per_fold])),
        }
        for m in metrics
    }
    if args.json:
        print(json.dumps({"folds": per_fold, "summary": summary}, indent=2))
        return 0
    for m, v in summary.items():
        print(f"{m}: {v['mean']:.4f} +- {v['std']:.4f} over {args.folds} query folds")
    return 0


@contextlib.contextmanager
def _fold_errors(k: int, n_folds: int):
    """An error inside cv's fold ``k`` (0-based) as ``fold 2/5: ...``, the parameters
    it names spelled as their flags: the fold whose training queries lack grade 3 said
    only "--relevance-threshold=3 counts no training document relevant"."""
    try:
        yield
    except ValueError as e:
        raise ValueError(f"fold {k + 1}/{n_folds}: {_error_as_flags(e)}") from None


def query_folds(qid, n_folds: int, random_state: int, source: str = "the data"):
    """Fold number (0 .. n_folds - 1) of every row; whole queries stay together.

    Queries are shuffled with ``random_state`` and dealt round-robin, so fold sizes
    differ by at most one query.  ``source`` names the data in errors.
    """
    import numpy as np

    if qid is None:
        raise ValueError("cv needs query ids (qid: on the lines or a .query file)")
    uniq, inverse = np.unique(qid, return_inverse=True)
    n_queries = uniq.shape[0]
    if n_folds < 2:
        raise ValueError(f"--folds={n_folds} must be at least 2")
    if n_queries < 2:
        raise ValueError(
            f"{source} holds 1 query; cv needs at least 2 (each fold holds whole queries)"
        )
    if n_folds > n_queries:
        raise ValueError(
            f"--folds={n_folds} is more than the {n_queries} queries of {source}: each fold "
            f"holds whole queries (give --folds {n_queries} or fewer)"
        )
    perm = np.random.default_rng(random_state).permutation(n_queries)
    fold_of_query = np.empty(n_queries, dtype=np.int64)
    fold_of_query[perm] = np.arange(n_queries) % n_folds
    return fold_of_query[inverse.ravel()]

"""``ltrboost train``: the flag checks made before any data is read, ``--resume`` (the
checks of the resumed model, the warnings when this run differs from its training),
``--checkpoint-every`` (:class:`_Checkpoint`) and ``--unbiased``'s position file."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any

from ltrboost.cli._common import (
    _check_inputs,
    _labels_teach,
    _load,
    _param_flag,
    _params_as_flags,
    _progress_bar,
    _refuse_pairs_alone,
    _training_params,
    _validate_as_flags,
    _width_guard_as_flag,
    checkpoint_path,
    resolve_missing,
)
from ltrboost.params import BoosterParams


def cmd_train(args: argparse.Namespace) -> int:
    from ltrboost.booster import check_training_data, make_objective, train
    from ltrboost.callbacks import recorded_value
    from ltrboost.dataset import LTRInputError
    from ltrboost.io._atomic import check_output, file_state
    from ltrboost.io.letor import imposed_width, width_error_as
    from ltrboost.model import load_model

    params = _training_params(args)
    _validate_as_flags(params)
    if args.n_features is not None and args.n_features < 1:
        raise ValueError(f"--n-features={args.n_features} must be >= 1")
    # An output that cannot be written fails now, not after the last round.
    check_output(args.output)
    if args.checkpoint_every is not None:
        _check_checkpointable(args.output)
        check_output(checkpoint_path(args.output))
    objective = make_objective(params)
    if args.pairs is not None and not objective.uses_preference_pairs:
        raise ValueError(
            f"--pairs: objective {params.objective!r} ignores explicit preference "
            "pairs (they are used by ranknet, rankboost, gbrank and qbrank)"
        )
    pairs_ignored = objective.explicit_pairs_ignored()
    if args.pairs is not None and pairs_ignored is not None:  # the model is the same
        raise ValueError(f"--pairs: {_params_as_flags(pairs_ignored)}")
    _check_train_flags(args, params)
    _warn_checkpoint_replaced(args)
    # What is at the output now: at the end, warn if another run replaced it meanwhile.
    output_state = file_state(args.output)
    # A resumed model fixes the feature count: a sparse file may not mention the
    # last features at all.
    _check_inputs(args, only=("resume",))  # named as the flag, before it is read
    init_model = load_model(args.resume) if args.resume else None
    if init_model is not None and init_model.objective.startswith("custom:"):
        fn = init_model.objective[len("custom:") :]
        raise ValueError(
            f"--resume {args.resume}: the model was trained with objective "
            f"{init_model.objective!r}, a Python function; only Python can continue it: "
            f"Ranker(objective={fn}).fit(..., init_model={args.resume!r})"
        )
    if init_model is not None and args.n_features not in (None, init_model.n_features):
        raise ValueError(
            f"--n-features {args.n_features}: the resumed model {args.resume} has "
            f"{init_model.n_features} features, the width its data is read at (leave "
            "--n-features out)"
        )
    if init_model is not None:
        _check_resumable(params, init_model, args.resume)
        _warn_resume_differs(params, init_model, args.resume)
    # after the flags and the resumed model (a small file, whose refusal comes first as
    # the flags' do), before the data
    _check_inputs(args)
    missing = resolve_missing(args.missing, init_model, args.resume)
    # The model names its features by their LETOR ids (f1 .. fN), as convert's Parquet
    # columns: the same names from the text file and from its Parquet, in inspect and
    # in the exports.  A resumed model with names of its own (a DataFrame's) keeps
    # them: the text's columns continue it by position, as they always did.
    letor_names = init_model is None or init_model.feature_names is None
    if init_model is not None:
        width = imposed_width(
            args.train,
            init_model.n_features,
            "the model",
            args.resume,
            missing=missing,
            na_values=args.missing_token,
        )
    else:
        width = imposed_width(
            args.train,
            args.n_features,
            f"--n-features {args.n_features}",
            args.train,
            missing=missing,
            na_values=args.missing_token,
        )
    try:
        raw_train, train_set = _load(
            args.train,
            missing=missing,
            return_comments=args.pairs is not None,
            n_features=width,
            na_values=args.missing_token,
            letor_names=letor_names,
        )
    except LTRInputError as e:  # "larger than n_features=3" named no flag of train's
        reworded = None
        if args.n_features is not None and init_model is None:
            reworded = width_error_as(e, width, f"is above --n-features {args.n_features}")
        if reworded is None:
            reworded = _width_guard_as_flag(e)
        if reworded is None:
            raise
        raise reworded from None
    if args.pairs is not None:
        from ltrboost.io.letor import parse_docids
        from ltrboost.io.pairs import pairs_for_dataset, read_pairs_file

        pref, oth, w = read_pairs_file(args.pairs, raw_train.qid, parse_docids(raw_train.comments))
        train_set.pairs = pairs_for_dataset(pref, oth, w, train_set.order)
        # without pairs the objective learns from the labels (its label pairs, or
        # qbrank's labelled part); otherwise it refuses the data, and that error says it
        if not (w > 0).any() and _labels_teach(params, objective):
            what = (
                "the file holds no pair (only blank and comment lines)"
                if pref.size == 0
                else "every pair has weight 0 (a pair of weight 0 counts for nothing)"
            )
            warnings.warn(
                f"--pairs {args.pairs}: {what}; the model is trained on the labels alone",
                UserWarning,
                stacklevel=1,
            )
    _attach_positions(args, params, train_set)
    if init_model is not None:  # the parameters whose value the labels decide
        _warn_resume_scales_differ(params, init_model, args.resume, train_set, args.train)
    inputs = _training_inputs(args, params, init_model)
    n_features = train_set.X.shape[1]
    # NaN read under the "zero" convention (nan or NA tokens): the trees learn NaN
    # directions, which the model file records for the exporters (RankLib has no NaN)
    import numpy as np

    with_nan = bool(np.isnan(raw_train.X).any()) or bool(
        getattr(init_model, "trained_with_nan", False)
    )
    valid_sets = []
    for vpath, name in zip(args.valid, _valid_names(args.valid), strict=True):
        width = imposed_width(
            vpath,
            n_features,
            "the training data",
            args.train,
            missing=missing,
            na_values=args.missing_token,
        )
        try:
            _, vs = _load(
                vpath,
                missing=missing,
                n_features=width,
                na_values=args.missing_token,
                letor_names=letor_names,
            )
        except LTRInputError as e:  # "larger than n_features=3" named no flag of train's
            instead = f"is above the {width} features of the training data ({args.train})"
            reworded = width_error_as(e, width, instead)
            if reworded is None:
                raise
            if init_model is None:  # the way to read the training data that wide
                index = e.problem.split()[2]
                reworded = LTRInputError(
                    f"{reworded.problem}; give --n-features {index} (or more) to read the "
                    "training data that wide",
                    path=reworded.path,
                    line=reworded.line,
                )
            raise reworded from None
        valid_sets.append((name, vs))
    if valid_sets and train_set.X.shape[1] < max(v.X.shape[1] for _, v in valid_sets):
        raise ValueError("validation data has more features than the training data")
    # what training refuses of this data (labels, thresholds, positions, pairs, the
    # histograms' memory) before the progress bar is drawn: it came after it
    check_training_data(params, train_set, valid_sets, init_model=init_model)
    callbacks = []
    checkpoint = None
    if args.checkpoint_every is not None:
        checkpoint = _Checkpoint(checkpoint_path(args.output), args.checkpoint_every)
        checkpoint.new_mode = _mode_of(args.output)
        checkpoint.missing = missing
        checkpoint.trained_with_nan = with_nan
        checkpoint.training_inputs = inputs
        callbacks.append(checkpoint)
    bar = None
    if not args.quiet:
        bar = _progress_bar(
            params,
            getattr(args, "compile_notice", None),
            initial=0 if init_model is None else init_model.n_iterations,
        )
        if bar is not None:  # None: tqdm could not be imported (warned)
            callbacks.append(bar)
    try:
        booster = train(params, train_set, valid_sets, callbacks=callbacks, init_model=init_model)
    finally:
        if bar is not None:
            bar.close()
    from ltrboost.io.model_json import save_model

    booster.missing = missing
    booster.trained_with_nan = with_nan
    # the training file is a checkpoint's only: continuing a finished model on new data
    # is fine-tuning, and every other model file stays as it was
    booster.training_inputs = {k: v for k, v in inputs.items() if k != "train"} or None
    save_model(
        booster,
        args.output,
        tree_cache=None if checkpoint is None else checkpoint.cache,
        unchanged_since=output_state,
    )
    resumed_from_checkpoint = args.resume is not None and os.path.abspath(
        args.resume
    ) == os.path.abspath(checkpoint_path(args.output))
    if checkpoint is not None or resumed_from_checkpoint:
        # the output now holds everything the checkpoint had
        _remove_checkpoint(checkpoint_path(args.output), args.output)
    best = booster.best_iteration
    summary = f"wrote {args.output}: {booster.n_iterations} rounds"
    if best is not None:
        summary += f", best iteration {best}"
        if best == 0:  # a valid model value: no round is best, predict uses no tree
            summary += " (predict uses the initial score alone)"
    if valid_sets and booster.evals_result:
        first = next(iter(booster.evals_result.values()))
        at = booster.n_iterations if best is None else best  # 0 is a round, not None
        for m, vals in first.items():
            v = recorded_value(vals, at, booster.n_iterations)
            if v is not None:
                summary += f", {m}={v:.4f}"
    print(summary, file=sys.stderr)
    return 0


def _check_train_flags(args: argparse.Namespace, params: BoosterParams) -> None:
    """The errors a flag alone makes, before any data is read: they came after the
    training and validation files were parsed (minutes for a large file)."""
    # the metrics (--metric, --gain) were checked with the parameters (_validate_as_flags)
    if params.early_stopping_rounds is not None and not args.valid:
        raise ValueError(
            f"--early-stopping-rounds={params.early_stopping_rounds} needs a "
            "validation file (--valid FILE)"
        )
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        raise ValueError(f"--checkpoint-every={args.checkpoint_every} must be >= 1")
    _valid_names(args.valid)  # the same file given twice
    _position_path(args, params)  # --position without --unbiased, or none with it
    if args.pairs is None and isinstance(params.objective, str):
        from ltrboost.booster import make_objective

        _refuse_pairs_alone(
            params, make_objective(params), "; give them (--pairs FILE) or drop --use-label-pairs"
        )


def _valid_names(paths: list[str]) -> list[str]:
    """Distinct names for validation files: "valid" for one file, else the basename,
    or the path as given where two basenames coincide (d1/vali.txt, d2/vali.txt)."""
    if len(paths) == 1:
        return ["valid"]
    base = [os.path.basename(p) for p in paths]
    names = [b if base.count(b) == 1 else p for b, p in zip(base, paths, strict=True)]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"the same validation file is given twice: {dup}")
    return names


# Boolean parameters whose None (the default) means a value that the objective's
# recorded parameters do not spell out: training always has labels, so None is the
# label pairs as well; unbiased None is plain LambdaMART.
_NONE_MEANS = {"unbiased": False, "use_label_pairs": True}

# Parameters a resumed run may change without changing what the model's trees mean.
_RESUME_FREE = ("n_estimators", "n_threads", "early_stopping_rounds", "eval_metric")

# Parameters only ``--unbiased true`` uses (without it, giving one is an error): a run
# resuming an unbiased model without ``--unbiased`` does not use them in its new rounds.
_UNBIASED_ONLY = ("position_bias_norm", "max_positions")


def _check_resumable(params: BoosterParams, model: Any, path: str) -> None:
    """What the training run would refuse once the data is read and binned: another
    objective, or fewer rounds in total than the model already has."""
    from ltrboost.booster import make_objective

    made = make_objective(params)
    objective = made.name
    if model.objective != objective:
        raise ValueError(
            f"--resume {path}: the model was trained with objective {model.objective!r}, "
            f"not {objective!r}; give --objective {model.objective}"
        )
    done = model.n_iterations
    if done > int(params.n_estimators):
        raise ValueError(
            f"--n-estimators {params.n_estimators} is below the {done} rounds of --resume "
            f"{path}: resuming, --n-estimators counts the rounds in total (at least {done})"
        )
    if getattr(made, "unbiased", False) and done > 0:
        _check_resumable_bias(params, model, path)


def _check_resumable_bias(params: BoosterParams, model: Any, path: str) -> None:
    """The position biases ``--unbiased true`` continues from: the training refused a
    model without them, or with another ``--max-positions``, only once the data was read
    (after a warning that the flags differ, and naming Python's ``unbiased=True``)."""
    from ltrboost.objectives.unbiased import DEFAULT_MAX_POSITIONS

    bias = getattr(model, "position_bias", None)
    if bias is None:
        raise ValueError(
            f"--resume {path}: the model was trained without --unbiased true: it holds no "
            "position bias estimates for --unbiased true to continue from (drop "
            "--unbiased, or train a new model)"
        )
    held = len(bias["t_plus"])
    k = DEFAULT_MAX_POSITIONS if params.max_positions is None else int(params.max_positions)
    if held != k:
        raise ValueError(
            f"--resume {path}: the model's position biases cover --max-positions {held}, "
            f"this run's {k}; give --max-positions {held} to continue it"
        )


def _warn_resume_differs(params: BoosterParams, model: Any, path: str) -> None:
    """Warn when this run's parameters (its flags, else the defaults) differ from those
    the resumed model was trained with: its rounds would continue with others (the
    uninterrupted model needs the same flags), and the file records this run's."""
    from dataclasses import asdict

    from ltrboost._evaluation import WRITTEN_ONLY_WHEN_SET
    from ltrboost.params import DEFAULTS

    recorded = getattr(model, "params", None) or {}
    if recorded:  # left out of the file at their default: compared as that
        recorded = {**{k: DEFAULTS[k] for k in WRITTEN_ONLY_WHEN_SET}, **recorded}
    now = asdict(params)
    if now.get("objective") != recorded.get("objective", now.get("objective")):
        return  # refused by the resume itself, in one error line
    # a parameter the model left to its default (None) is compared as the value it
    # trained with: a flag giving that value (--learning-rate 0.1) changes nothing
    used = dict(getattr(model, "objective_params", None) or {})
    if recorded.get("learning_rate", 0) is None:
        from ltrboost.inspection import _learning_rate

        used["learning_rate"] = _learning_rate(model)
    recorded = {
        k: used[k] if v is None and now.get(k) is not None and used.get(k) is not None else v
        for k, v in recorded.items()
    }
    # and one this run leaves to its default (None) as the value it will train with: a
    # model trained with --learning-rate 0.1 resumed without the flag changes nothing
    # (it warned "--learning-rate None (model: 0.1)")
    effective = _effective_defaults(params)
    now = {
        k: effective[k] if v is None and recorded.get(k) is not None and k in effective else v
        for k, v in now.items()
    }
    # a boolean whose None the objective does not resolve into its recorded parameters
    # means one value on both sides: --unbiased false warned "False (model: None)", and
    # a run leaving it out named None, not the value its new rounds use
    for k, meant in _NONE_MEANS.items():
        if k in recorded and recorded[k] is None:
            recorded[k] = meant
        if now.get(k, meant) is None:
            now[k] = meant
    later = _resolved_on_data(params)
    # unused by new rounds without --unbiased true: it warned "--max-positions None
    # (model: 10)" beside "--unbiased False (model: True)", which is the one difference
    unused = () if now.get("unbiased") else _UNBIASED_ONLY
    # ole_top_features approximates OLE's pair criterion: ignored by Newton, SE and an
    # objective without pairs (gbrank), so compared only when the model's rounds and
    # the new ones both use it (it warned "--ole-top-features None (model: 3)" of a
    # Newton model given the flag)
    if not (_uses_ole_pairs(params, now) and _uses_ole_pairs(params, recorded)):
        unused = (*unused, "ole_top_features")
    diff = [
        f"{_param_flag(k)} {now[k]!r} (model: {recorded[k]!r})"
        for k in sorted(recorded)
        if k in now
        and k not in _RESUME_FREE
        and k not in later
        and k not in unused
        and now[k] != recorded[k]
        and not callable(now[k])
    ]
    if diff:
        shown = ", ".join(diff[:4]) + (f" and {len(diff) - 4} more" if len(diff) > 4 else "")
        warnings.warn(
            f"--resume {path}: {shown} differ from the model's; the new rounds use this "
            "run's values and the model file records them (repeat the original flags to "
            "continue the same training)",
            UserWarning,
            stacklevel=2,
        )


def _uses_ole_pairs(params: BoosterParams, values: dict) -> bool:
    """Whether training with ``values``' ``split_criterion`` (the objective of
    ``params``: a resumed model's is the same) uses OLE's pairs, and so
    ``ole_top_features`` (``check_training_setup`` warns it is ignored otherwise)."""
    from ltrboost.booster import make_objective

    return values.get("split_criterion") == "ole" and bool(make_objective(params).is_pairwise)


def _resolved_on_data(params: BoosterParams) -> tuple[str, ...]:
    """The parameters whose value this run trains with is known only once the data is
    read, compared then instead of by their flags (which said "--positive-threshold None
    (model: 2.0)" of a default resolving to the model's 2): logistic_rank's
    ``label_scale`` (:func:`_warn_resume_scales_differ`), and its
    ``positive_threshold`` when left to its default (the objective warns when the
    threshold it resolves on the labels is not the model's)."""
    from ltrboost.booster import make_objective
    from ltrboost.objectives.logistic_rank import LogisticRank

    if not isinstance(make_objective(params), LogisticRank):
        return ()
    if params.positive_threshold is None:
        return ("label_scale", "positive_threshold")
    return ("label_scale",)


def _warn_resume_scales_differ(
    params: BoosterParams, model: Any, path: str, train_set, train_path: str
) -> None:
    """Warn, once the training data is read, when the scale logistic_rank's
    ``label_scale`` gives a grade of these labels (of positive weight) differs from the
    scale the model trained with: each side's mapping or list, or the default
    ``y - positive_threshold + 1`` at its own threshold (this run's resolved on these
    labels).  A list and a mapping giving the same scales, or a mapping giving the
    default's, are no difference; nor a grade these labels do not hold.  Both left to
    the default is no difference of ``label_scale`` (a threshold resolving elsewhere
    is warned of by the objective)."""
    import numpy as np

    from ltrboost.objectives.logistic_rank import (
        LogisticRank,
        default_positive_threshold,
        grade_scales,
    )

    if model.objective != LogisticRank.name:
        return
    used = dict(getattr(model, "objective_params", None) or {})
    # as its flag gave it ({"4": 3}; the objective's record is {"4.0": 3.0})
    was = (getattr(model, "params", None) or {}).get("label_scale", used.get("label_scale"))
    given = params.label_scale
    if was is None and given is None:
        return
    y = np.asarray(train_set.y, dtype=np.float64)
    if train_set.weights is not None:
        y = y[np.asarray(train_set.weights) > 0]
    if not np.isfinite(y).all():
        return  # refused by the training, naming the label
    grades = np.unique(y)
    t_now = params.positive_threshold
    t_now = default_positive_threshold(y) if t_now is None else float(t_now)
    t_was = used.get("positive_threshold")
    t_was = t_now if t_was is None else float(t_was)
    try:
        now, before = grade_scales(grades, t_now, given), grade_scales(grades, t_was, was)
    except ValueError:
        return  # refused by the training, naming the entry
    differ = [
        f"grade {g:g}: {a:g} (model: {b:g})"
        for g, a, b in zip(grades, now, before, strict=True)
        if a != b
    ]
    if differ:
        shown = "default" if given is None else repr(given)
        warnings.warn(
            f"--resume {path}: {_param_flag('label_scale')} {shown} (model: "
            f"{'default' if was is None else repr(was)}) differ from the model's on the "
            f"labels of {train_path} ({', '.join(differ)}); the new rounds use this "
            "run's values and the model file records them (repeat the original flags "
            "to continue the same training)",
            UserWarning,
            stacklevel=2,
        )


def _effective_defaults(params: BoosterParams) -> dict[str, Any]:
    """The values this run's parameters left to their default (None) train with: the
    objective's learning rate and its resolved parameters (``sigma``, ``gain``, ...),
    as the model file's ``objective_params`` records them; a parameter whose None is a
    value of its own (``max_depth``: unlimited) is not among them."""
    from ltrboost.booster import make_objective

    made = make_objective(params)  # _check_resumable made it already: no error here
    effective = {
        k: v
        for k, v in dict(getattr(made, "params", None) or {}).items()
        if getattr(params, k, None) is None and v is not None
    }
    if params.learning_rate is None:
        effective["learning_rate"] = made.default_learning_rate
    return effective


# The training files a model file does not hold, by their key in its
# ``training_inputs``, and the flag that names each.
_INPUT_FLAGS = {"pairs": "--pairs", "position": "--position", "train": "TRAIN"}


def _file_fingerprint(path: str) -> dict[str, str] | None:
    """``{"file": path, "sha256": hex digest of its bytes}`` of the regular file at
    ``path`` (a link followed); None for anything else: a pipe (``/dev/stdin``) was read
    once by the training, and a second read would block or find nothing."""
    import hashlib
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return {"file": os.fspath(path), "sha256": digest.hexdigest()}


def _training_inputs(
    args: argparse.Namespace, params: BoosterParams, init_model: Any
) -> dict[str, dict[str, str]]:
    """The content fingerprints of this run's ``--pairs`` and ``--position`` files, and
    of TRAIN where a checkpoint records it (``--checkpoint-every``, or ``--resume`` of a
    checkpoint that did); a resumed run first compares them with the model's record and
    warns of each file that differs (:func:`_warn_resume_inputs_differ`).

    A file whose content the resumed model records keeps the model's entry, its name
    as first given included: the same training continued from another folder, or
    through a copy, writes the file the uninterrupted run would have written."""
    recorded = dict(getattr(init_model, "training_inputs", None) or {})
    paths = {"pairs": args.pairs, "position": _position_path(args, params)}
    if args.checkpoint_every is not None or "train" in recorded:
        paths["train"] = args.train
    given = {k for k, p in paths.items() if p is not None}
    inputs = {}
    for k in sorted(given):
        now = _file_fingerprint(paths[k])
        if now is not None:
            rec = recorded.get(k)
            inputs[k] = rec if rec is not None and rec["sha256"] == now["sha256"] else now
    if init_model is not None:
        _warn_resume_inputs_differ(recorded, inputs, given, args.resume)
    return inputs


def _warn_resume_inputs_differ(recorded: dict, inputs: dict, given: set[str], path: str) -> None:
    """Warn, naming the flag and both files, when a resumed run trains on another
    ``--pairs`` or ``--position`` file than the model recorded (or on none, or on pairs
    the model had none of), or continues a checkpoint on another training file: its new
    rounds would learn from other data than the model's, which the file did not say.
    A file that could not be fingerprinted (a pipe) is not compared."""
    for key, flag in _INPUT_FLAGS.items():
        rec, now = recorded.get(key), inputs.get(key)
        if key not in given:
            if key == "pairs" and rec is not None:
                msg = (
                    f"the model was trained with --pairs {rec['file']}; this run gives no "
                    "--pairs, so the new rounds learn from the labels alone (give --pairs "
                    f"{rec['file']} to continue the same training)"
                )
            else:  # TRAIN is always given; --position is needed by --unbiased alone
                continue
        elif now is None or (rec is None and key != "pairs"):
            continue  # a pipe; an unbiased model of a version that recorded nothing
        elif rec is None:
            msg = (
                f"--pairs {now['file']}: the model records no --pairs file (it was trained "
                "without one, or by an ltrboost that did not record it); the new rounds "
                "learn from preferences its rounds did not"
            )
        elif rec["sha256"] == now["sha256"]:
            continue
        elif key == "train":
            msg = (
                f"TRAIN {now['file']} is not the training file of the run that wrote this "
                f"checkpoint ({rec['file']}: other content); continuing it does not give "
                "that run's model"
            )
        else:
            msg = (
                f"{flag} {now['file']} is not the file the model was trained with "
                f"({flag} {rec['file']}: other content); the new rounds learn from this "
                f"run's file and the model file records it (give {flag} {rec['file']} to "
                "continue the same training)"
            )
        warnings.warn(f"--resume {path}: {msg}", UserWarning, stacklevel=3)


def _warn_checkpoint_replaced(args: argparse.Namespace) -> None:
    """Warn, before anything is read, when ``--checkpoint-every`` will replace an
    ``OUTPUT.checkpoint`` that is there and that ``--resume`` does not continue: a
    finished run removes its checkpoint, so one that is there is a run that did not
    finish (killed after hours of rounds), and the same command run again without
    ``--resume`` replaced it at its first checkpoint and removed it at its end, unsaid."""
    if args.checkpoint_every is None:
        return  # left as it is
    ck = checkpoint_path(args.output)
    if not os.path.isfile(ck):
        return
    if args.resume is not None:
        try:
            if os.path.samefile(args.resume, ck):
                return  # continuing it
        except OSError:
            pass  # --resume's own check names the problem
    warnings.warn(
        f"{ck} exists (left by a run that did not finish?); this run's checkpoints "
        f"replace it: to continue that run instead, give --resume {ck}",
        UserWarning,
        stacklevel=2,
    )


def _check_checkpointable(output: str) -> None:
    """``OUTPUT.checkpoint`` only makes sense beside a regular file (or a new one)."""
    import stat

    try:
        st = os.stat(output)
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(
            f"--checkpoint-every: --output {output} is not a regular file; checkpoints "
            "are written beside the output as OUTPUT.checkpoint, so give a file name"
        )


def _remove_checkpoint(ck: str, output: str) -> None:
    """Remove the checkpoint once the output holds it.  A link is followed, as when the
    checkpoints were written: the file they went to is removed and the link kept (it
    was removed and the last checkpoint, a full copy of the model, left behind); a
    link to the output itself (``--resume`` through it) is removed, never the output."""
    target = os.path.realpath(ck)
    if os.path.islink(ck) and target != os.path.realpath(output):
        ck = target
    try:
        os.unlink(ck)
    except FileNotFoundError:
        pass


def _mode_of(path: str) -> int | None:
    """The permission bits of the regular file at ``path`` (links followed), or None."""
    import stat

    try:
        st = os.stat(path)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


class _Checkpoint:
    """Write the model every N rounds (atomically) to its own file, so a killed run
    loses little and never replaces a previous complete model at the output.

    Finished trees are serialized once (:class:`TreeJSONCache`): a checkpoint costs the
    new trees plus a copy of the cached text, not a re-serialization of every tree.
    """

    def __init__(self, path: str, every: int) -> None:
        from ltrboost.io.model_json import TreeJSONCache

        if every < 1:
            raise ValueError(f"--checkpoint-every={every} must be >= 1")
        self.path = path
        self.every = every
        self.cache = TreeJSONCache()
        self.missing: str | None = None
        self.trained_with_nan = False
        # the fingerprints of the training files, TRAIN's included (see _training_inputs)
        self.training_inputs: dict[str, dict[str, str]] | None = None
        # a new checkpoint's mode: the output's, when it exists (a private model got a
        # world-readable copy beside it); None: the umask's, as the output will get
        self.new_mode: int | None = None

    def __call__(self, env) -> None:
        from ltrboost.io.model_json import save_model

        if (env.iteration + 1) % self.every == 0 and env.snapshot is not None:
            booster = env.snapshot()
            booster.missing = self.missing
            booster.trained_with_nan = self.trained_with_nan
            booster.training_inputs = self.training_inputs
            save_model(booster, self.path, tree_cache=self.cache, new_mode=self.new_mode)


def _position_path(args: argparse.Namespace, params: BoosterParams) -> str | None:
    """The positions file of --unbiased: ``--position FILE``, else ``TRAIN.position``
    when it exists; None without --unbiased.  Flag errors (checked before the data)."""
    path = args.position
    sidecar = args.train + ".position"
    if path is None and params.unbiased and os.path.lexists(sidecar):
        _check_position_sidecar(sidecar)
        path = sidecar
    if path is None:
        if params.unbiased:
            raise ValueError(
                "--unbiased true needs the position of every training line: --position FILE "
                f"(or {args.train}.position)"
            )
        return None
    if not params.unbiased:
        raise ValueError("--position is used by --unbiased only")
    return path


def _check_position_sidecar(sidecar: str) -> None:
    """Refuse a ``TRAIN.position`` that is not a regular file, before the data is read
    (as the ``.query`` sidecar): a folder was found only once the training file had
    been read, a link to a missing file was "needs --position FILE (or TRAIN.position)",
    and a FIFO blocked the run forever.  A pipe is given by name: ``--position``."""
    from ltrboost.dataset import LTRInputError
    from ltrboost.io.letor import sidecar_problem

    if os.path.isfile(sidecar):
        return
    why = sidecar_problem(sidecar)
    if why == "it is not a regular file":
        why += " (give a pipe as --position FILE)"
    raise LTRInputError(f"cannot read position file: {why}", path=sidecar)


def _attach_positions(args: argparse.Namespace, params: BoosterParams, train_set) -> None:
    """``--position FILE`` (or ``TRAIN.position`` beside the data under --unbiased)
    into ``train_set.position``, in the grouped row order."""
    path = _position_path(args, params)
    sidecar = args.train + ".position"
    if path is None and os.path.isfile(sidecar):
        # as a LightGBM .weight / .init sidecar that is not read: LightGBM reads this
        # one too, and `clicks dataset` writes it for --unbiased (forgotten, the model
        # was plain LambdaMART on the raw clicks, without a word)
        warnings.warn(
            f"{sidecar} is not read: display positions are used by --unbiased true "
            "(Unbiased LambdaMART) only; the model is the same as without them",
            stacklevel=2,
        )
    if path is None:
        return
    from ltrboost.io.queryfile import read_position_file

    pos = read_position_file(path, train_set.n_samples)
    train_set.position = pos if train_set.order is None else pos[train_set.order]

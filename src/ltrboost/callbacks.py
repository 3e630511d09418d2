"""Training callbacks for :func:`ltrboost.train` and ``Ranker.fit(callbacks=...)``.

A callback is any callable taking a :class:`ltrboost.booster.CallbackEnv` after each
round and returning None or a bool (True stops training; any other value is a
TypeError naming the callback, as a truthy one stopped training silently).
:func:`log_evaluation` logs the validation metrics through :mod:`logging` (logger
``"ltrboost"``), like LightGBM's callback of the same name; ``Ranker(verbose=N)``
installs it for you.

Logging is silent unless asked for.  When it is asked for and the program has configured
no logging at all, a handler writing the training lines to stderr is added to the
``"ltrboost"`` logger so that they are seen (it stands aside once the program configures
logging); when the ``"ltrboost"`` logger has no level of its own it is set to INFO.
A program that configures logging keeps control: set a level on
``logging.getLogger("ltrboost")`` (e.g. WARNING to silence it) and it is respected.
"""

from __future__ import annotations

import logging
import numbers
import sys
from collections.abc import Callable

import numpy as np

logger = logging.getLogger("ltrboost")

__all__ = ["format_evaluation", "log_evaluation"]


def format_evaluation(iteration: int, evaluation: dict[str, dict[str, float]]) -> str:
    """One log line: ``[ROUND]`` (1-based) then ``SET's METRIC: VALUE`` per value,
    tab-separated (LightGBM's layout)."""
    parts = [f"[{iteration + 1}]"]
    for name, res in evaluation.items():
        parts.extend(f"{name}'s {metric}: {value:.6g}" for metric, value in res.items())
    return "\t".join(parts)


# Marks the records of the training log (``extra=``): the lines asked for.
_TRAINING_LINE = {"ltrboost_training_line": True}


class _StderrFallback(logging.Handler):
    """The training log lines on the current ``sys.stderr`` while the program has
    configured no logging.  Once it has (a handler on the root logger), the records
    reach its handlers and this one writes nothing: a permanent StreamHandler printed
    every line a second time on stderr after a ``logging.basicConfig(...)``, and the
    library's other INFO records (the compile notice) in later silent fits."""

    def emit(self, record: logging.LogRecord) -> None:
        if not getattr(record, "ltrboost_training_line", False):
            return
        if logger.propagate and logging.getLogger().handlers:
            return
        stream = sys.stderr
        if stream is None:
            return
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


def _make_visible() -> None:
    """Let INFO records of the ``"ltrboost"`` logger be seen (see the module doc)."""
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    if not logger.hasHandlers():
        handler = _StderrFallback()
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)


def check_period(period, name: str = "period", *, negative_is_silent: bool = False) -> int:
    """``period`` as a non-negative int (0: silent); True (``np.True_`` too) counts as 1.
    ``negative_is_silent``: a negative integer is 0 (``Ranker(verbose=-1)``, LightGBM's
    way to silence a model), else it is refused."""
    if isinstance(period, bool | np.bool_):
        return int(period)
    if isinstance(period, numbers.Integral) and period < 0 and negative_is_silent:
        return 0
    if not isinstance(period, numbers.Integral) or period < 0:
        kind = "an integer" if negative_is_silent else "a non-negative integer"
        raise ValueError(f"{name}={period!r} must be {kind} (or a bool)")
    return int(period)


def log_evaluation(period: int = 1) -> Callable:
    """A callback logging the validation metrics every ``period`` rounds and at round
    ``n_estimators`` (a round that early stopping ends on is logged only when it falls on
    the period, as LightGBM's ``log_evaluation``).

    Each line is ``[ROUND]\\tSET's METRIC: VALUE...`` at level INFO on the ``"ltrboost"``
    logger; without validation sets it is ``[ROUND]`` and the time spent.  ``period=0``
    logs nothing.

    Examples
    --------
    >>> from ltrboost.callbacks import log_evaluation
    >>> # ltrboost.train(params, data, [("valid", vdata)], callbacks=[log_evaluation(10)])
    """
    period = check_period(period)
    if period:
        _make_visible()

    def callback(env) -> None:
        if not period:
            return
        last = env.iteration + 1 == env.n_estimators
        if (env.iteration + 1) % period and not last:
            return
        if env.evaluation:
            logger.info(format_evaluation(env.iteration, env.evaluation), extra=_TRAINING_LINE)
        else:
            logger.info("[%d]\t%.2f s", env.iteration + 1, env.elapsed, extra=_TRAINING_LINE)

    callback.period = period  # type: ignore[attr-defined]
    return callback


def recorded_value(values, iteration: int, n_iterations: int):
    """The value recorded at 1-based round ``iteration`` of a model of ``n_iterations``
    rounds, or None when that round was not recorded.

    A record covers the model's last ``len(values)`` rounds: a warm start from a model
    without a record of this validation set records only the rounds it added.
    """
    i = iteration - (n_iterations - len(values)) - 1
    return values[i] if 0 <= i < len(values) else None


def log_best(booster, n_rounds_asked: int) -> None:
    """After training: log the early stop and the best round (when there was one).

    A run that ended before ``n_rounds_asked`` without ``early_stopping_rounds``
    rounds past its best one was stopped by a callback (it said "early stopping")."""
    best = booster.best_iteration
    if best is None or not booster.evals_result:
        return
    name, per_metric = next(iter(booster.evals_result.items()))
    if not per_metric:
        return
    metric, values = next(iter(per_metric.items()))
    value = recorded_value(values, best, booster.n_iterations)
    if value is None:
        return
    stopped = "finished"
    if booster.n_iterations < n_rounds_asked:
        rounds = (booster.params or {}).get("early_stopping_rounds")
        ran_out = rounds is not None and booster.n_iterations - best >= int(rounds)
        stopped = "early stopping" if ran_out else "stopped by a callback"
    logger.info(
        "%s after %d rounds; best round [%d]\t%s's %s: %.6g",
        stopped,
        booster.n_iterations,
        best,
        name,
        metric,
        value,
        extra=_TRAINING_LINE,
    )

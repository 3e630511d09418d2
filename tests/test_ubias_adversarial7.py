"""Unbiased LambdaMART's position biases at their edges (a seventh adversarial pass):
estimates that grow without bound over the rounds, a bias ratio that reaches 0 or
infinity, and resuming from a model file whose stored biases are extreme."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import ltrboost
from ltrboost.dataset import make_dataset
from ltrboost.objectives import unbiased as U
from ltrboost.params import ParameterWarning


def _cycle_log(n=10, deep=(3, 4, 5, 6), seed=7):
    """Two-result impressions, ``n`` of each kind: positions (1, 2) with the click at
    1, the same with the click at 2, and (2, k) for each ``k`` of ``deep`` with the
    click at 2 (say position 1 was an ad, dropped from the log).  Eqs. 30, 31 without
    regularisation have no finite solution here: with ``m = len(deep)``, ``t+_2 = (1 +
    m) t-_2`` and ``t-_2 = t+_2`` (``t-_k = 1`` for the deep ``k``), so both grow by
    ``1 + m`` every two rounds."""
    rng = np.random.default_rng(seed)
    X, y, qid, pos = [], [], [], []
    kinds = [((1, 2), (1, 0)), ((1, 2), (0, 1))] + [((2, k), (1, 0)) for k in deep]
    for kind, (shown, clicked) in enumerate(kinds):
        for k in range(n):
            X.append(rng.normal(size=(2, 3)))
            y += clicked
            pos += shown
            qid += [kind * 100_000 + k] * 2
    return np.vstack(X), np.array(y, float), np.array(qid), np.array(pos)


def _bias_per_round(params, X, y, qid, pos, **kw):
    rounds = []

    def record(env):
        b = env.snapshot().position_bias
        rounds.append(np.concatenate([b["t_plus"], b["t_minus"]]))

    booster = ltrboost.train(
        params, make_dataset(X, y, qid=qid, position=pos), callbacks=[record], **kw
    )
    return booster, np.array(rounds)


def test_unregularised_estimates_that_diverge_stop_at_the_bound_and_warn(tmp_path):
    """position_bias_norm=0 on a log without a finite solution: t+_2 and t-_2 grew 10x
    every two rounds (1e10 after 20 rounds, then on to inf and 0 at ~600 rounds: a
    model file that cannot be written, gradients divided by 0), each pair through
    position 2 weighted ever less, without a word.  Now they stop at the documented
    bound and a warning names the position, the round and position_bias_norm."""
    X, y, qid, pos = _cycle_log()
    params = dict(
        unbiased=True, n_estimators=20, max_positions=6, position_bias_norm=0.0, n_threads=1
    )
    with pytest.warns(ParameterWarning, match=r"position 2 .*position_bias_norm") as rec:
        booster, rounds = _bias_per_round(params, X, y, qid, pos)
    assert len([w for w in rec if "bound" in str(w.message)]) == 1  # once, not every round
    assert rounds.max() <= U.BIAS_BOUND
    assert rounds.min() >= 1.0 / U.BIAS_BOUND
    assert rounds.max() == U.BIAS_BOUND  # it did diverge
    path = tmp_path / "m.json"
    booster.save_model(path)
    assert ltrboost.load_model(path).position_bias == booster.position_bias


def test_regularised_estimates_on_the_same_log_converge_without_a_warning():
    """The same log with the default p = 0.5: the iteration contracts (the estimates
    settle near t+_2 = 2.3, t-_2 = 1.75); nothing reaches the bound, nothing warns."""
    X, y, qid, pos = _cycle_log()
    params = dict(unbiased=True, n_estimators=20, max_positions=6, n_threads=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, rounds = _bias_per_round(params, X, y, qid, pos)
    assert rounds.max() < 100
    np.testing.assert_allclose(rounds[-1], rounds[-2], rtol=0.05)


def test_bias_update_keeps_each_estimate_inside_the_bound():
    """A loss ratio of 1e16 (position 1's sum just above the "no loss" 1e-16) gave
    t = 1e16; one of 1e-25 gave 1e-25 (and a pair through two such positions divided
    its gradient by 1e-50: float32 inf)."""
    b = U.PositionBias(np.ones(3), np.ones(3))
    nb = U.update_position_bias(
        b, np.array([1e-16, 1.0, 2e-16]), np.array([1e10, 1e-15, 2e10]), 0.0
    )
    np.testing.assert_array_equal(nb.t_plus, [1.0, U.BIAS_BOUND, 2.0])
    np.testing.assert_array_equal(nb.t_minus, [1.0, 1.0 / U.BIAS_BOUND, 2.0])
    # inside the bound, bit for bit the formula
    lp, lm = np.array([3.0, 1.7, 0.2]), np.array([0.9, 2.2, 1.1])
    inside = U.update_position_bias(b, lp, lm, 0.5)
    np.testing.assert_array_equal(inside.t_plus, (lp / lp[0]) ** (1 / 1.5))
    np.testing.assert_array_equal(inside.t_minus, (lm / lm[0]) ** (1 / 1.5))


def _pbm(n_queries=100, n_docs=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_queries * n_docs, 3))
    pos = np.tile(np.arange(1, n_docs + 1), n_queries)
    y = (rng.random(pos.size) < 0.5 / pos).astype(float)
    return X, y, np.repeat(np.arange(n_queries), n_docs), pos


def test_resume_from_a_file_with_extreme_biases_trains():
    """A model file may hold any positive finite biases (the schema's rule; written by
    a version without the bound): resuming from t = 1e-25 divided each pair's gradient
    by 1e-50, float32 inf, and training stopped with NonFiniteTrainingError blaming
    learning_rate.  The resumed run now starts from the biases clipped to the bound."""
    X, y, qid, pos = _pbm()
    p = dict(
        unbiased=True, n_estimators=2, max_positions=4, lambda_normalization=False, n_threads=1
    )
    first = ltrboost.train(p, make_dataset(X, y, qid=qid, position=pos))
    d = json.loads(json.dumps(first.to_dict()))
    d["position_bias"] = {"t_plus": [1, 1e-25, 1e-25, 1e-25], "t_minus": [1, 1e-25, 1, 1e30]}
    extreme = ltrboost.model.booster_from_dict(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        resumed = ltrboost.train(
            dict(p, n_estimators=4), make_dataset(X, y, qid=qid, position=pos), init_model=extreme
        )
    assert np.isfinite(resumed.predict(X)).all()
    for t in resumed.position_bias.values():
        assert 1.0 / U.BIAS_BOUND <= min(t)
        assert max(t) <= U.BIAS_BOUND

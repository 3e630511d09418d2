"""Dask training checks each round's OLE pairs against the limit as local training does.

* The round-by-round limit (``topk``, ``sampled``, bagged and YetiRank pairs, and any
  round after the first): each Dask shard checked its own total against
  ``$LTRBOOST_MAX_OLE_PAIRS``, so a round whose shards were each under the limit trained
  past it, and a shard over it refused with its own total and a shard-local query
  number.  Now each shard sends its round's count (and its query with the most pairs)
  to the driver, which checks the whole round's total with the local message.
* Round 1's warning that a later round may go over the limit was raised on the
  workers (with a shard's own numbers), out of the Dask user's sight: now it is raised
  once, on the driver, with the local text.

The fixtures are those of ``test_daskfix_adversarial7``: the module's in-process
``client`` (2 workers, 1 thread each), the data cut into two partitions at a query
boundary (one shard each).
"""

from __future__ import annotations

import pickle
import threading
import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

import ltrboost  # noqa: E402
from ltrboost import dask as ldask  # noqa: E402
from ltrboost.objectives import pair_engine  # noqa: E402
from ltrboost.params import ParameterError, ParameterWarning  # noqa: E402
from test_daskfix_adversarial7 import FAST, _cut, _dask, _ole_data, _same_model  # noqa: E402

SETTINGS = {
    "ranknet topk": dict(objective="ranknet", pair_method="topk", truncation_level=3),
    "lambdamart topk": dict(objective="lambdamart", pair_method="topk", truncation_level=3),
    "lambdamart bagged": dict(objective="lambdamart", pair_method="all", subsample=0.5),
    "ranknet sampled": dict(objective="ranknet", pair_method="sampled", pairs_per_sample=2),
    "yetirank": dict(objective="yetirank"),
}


def _params(setting: str) -> dict:
    return dict(FAST, split_criterion="ole", n_estimators=6, **SETTINGS[setting])


def _local_counts(params, X, y, qid, monkeypatch) -> list[np.ndarray]:
    """Each round's OLE pairs per query of local training (no limit)."""
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", str(2**40))
    rounds = []
    check = pair_engine._check_ole_pair_count

    def recorded(counts, data, objective, iteration=0):
        rounds.append(np.array(counts))
        return check(counts, data, objective, iteration)

    monkeypatch.setattr(pair_engine, "_check_ole_pair_count", recorded)
    ltrboost.train(params, ltrboost.make_dataset(X, y, qid=qid))
    monkeypatch.undo()
    assert len(rounds) == params["n_estimators"]
    return rounds


def _outcome(fn):
    """``fn()``'s result or ParameterError text, and its OLE warnings as
    ``(text, thread that raised it)``."""
    warned = []

    def record(message, category, *args, **kwargs):
        if issubclass(category, ParameterWarning) and "split_criterion='ole'" in str(message):
            warned.append((str(message), threading.current_thread()))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = record
        try:
            result = fn()
        except ParameterError as e:
            result = str(e)
    return result, warned


def _limit(case: str, rounds: list[np.ndarray], n_first: int) -> int:
    """The limit for ``case``; ``n_first`` the first shard's number of queries."""
    first = rounds[0]
    total = int(first.sum())
    shards = int(first[:n_first].sum()), int(first[n_first:].sum())
    if case == "round 1, the whole set only":
        limit = max(shards)  # every shard under it
    elif case == "round 1, a shard too":
        limit = shards[0] - 1
    else:  # round 1 under it, a later round over it
        limit = total
        assert max(int(r.sum()) for r in rounds[1:]) > limit
    assert total > limit or case == "a later round"
    return limit


CASES = [
    (setting, case)
    for setting in SETTINGS
    for case in ("round 1, the whole set only", "round 1, a shard too", "a later round")
    if not (setting == "ranknet sampled" and case == "a later round")  # the same every round
]


@pytest.mark.parametrize(("setting", "case"), CASES)
def test_a_round_over_the_limit_is_refused_as_locally(client, monkeypatch, setting, case):
    X, y, qid = _ole_data()
    params = _params(setting)
    rounds = _local_counts(params, X, y, qid, monkeypatch)
    n_first = len(np.unique(qid[: _cut(qid)]))
    limit = _limit(case, rounds, n_first)
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", str(limit))
    local, local_warned = _outcome(
        lambda: ltrboost.train(params, ltrboost.make_dataset(X, y, qid=qid))
    )
    assert isinstance(local, str), "local training should refuse"
    assert "over the limit of" in local
    if case == "a later round":
        assert " in round " in local
    dist, dist_warned = _outcome(lambda: ldask.train(client, params, _dask(X, y, qid)))
    assert dist == local
    assert dist_warned == local_warned


@pytest.mark.parametrize("setting", ["ranknet topk", "lambdamart bagged", "yetirank"])
def test_every_round_under_the_limit_trains_and_warns_as_locally(client, monkeypatch, setting):
    """The limit at the largest round's total: no refusal; round 1's warning that a
    later round may go over it comes once, on the driver, with the local text."""
    X, y, qid = _ole_data()
    params = _params(setting)
    rounds = _local_counts(params, X, y, qid, monkeypatch)
    monkeypatch.setenv("LTRBOOST_MAX_OLE_PAIRS", str(max(int(r.sum()) for r in rounds)))
    local, local_warned = _outcome(
        lambda: ltrboost.train(params, ltrboost.make_dataset(X, y, qid=qid))
    )
    assert len(local_warned) == 1
    assert "a later round may hold up to" in local_warned[0][0]
    assert local_warned[0][1] is threading.main_thread()
    sent = []
    gradients = ldask._Shard.gradients

    def answered(self, *args):
        answer = gradients(self, *args)
        sent.append(answer[2])
        return answer

    monkeypatch.setattr(ldask._Shard, "gradients", answered)
    dist, dist_warned = _outcome(lambda: ldask.train(client, params, _dask(X, y, qid)))
    assert dist_warned == local_warned  # the same text, in the client's thread
    # a shard sends a few numbers a round, not its per-query counts or query ids
    assert len(sent) == 2 * params["n_estimators"]
    assert all(len(pickle.dumps(c)) < 400 for c in sent)
    _same_model(local, dist, X)

"""Click logs and Unbiased LambdaMART, fifth adversarial pass: inverse-propensity labels
of a log with positions that are not 1-based, the ``TRAIN.position`` sidecar that is
not a file, and resuming a model without position biases under ``--unbiased true``."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ltrboost.clicks import ClickLog, relevance_labels


def _log(position, clicked) -> ClickLog:
    n = len(position)
    qid = np.empty(n, dtype=object)
    qid[:] = ["1"] * n
    doc = np.empty(n, dtype=object)
    doc[:] = [f"d{k}" for k in range(n)]
    return ClickLog(
        qid, doc, np.asarray(position), np.asarray(clicked, np.int8), np.zeros(n, np.int64)
    )


@pytest.mark.parametrize(
    ("position", "needle"),
    [
        ([0, 1, 2], "entry 0: position 0 is not an integer >= 1"),
        ([1, -2, 2], "entry 1: position -2 is not an integer >= 1"),
        ([1.0, 2.5, 3.0], "entry 1: position 2.5 is not an integer >= 1"),
    ],
)
def test_relevance_labels_refuses_positions_that_are_not_one_based(position, needle):
    """A log counted from 0 (a ClickLog built in Python: the reader refuses 0) divided
    the top result's click by propensities[-1], the deepest position's: label 4 for a
    click at the top, silently; 2.5 was truncated to position 2."""
    log = _log(position, [1, 1, 0])
    with pytest.raises(ValueError, match=re.escape(needle)):
        relevance_labels(log, [1.0, 0.5, 0.25])
    # without propensities the position is not used: the click-through rate
    assert relevance_labels(log).label.tolist() == [1.0, 1.0, 0.0]

"""Python-API promises a second adversarial pass found broken: column names survive
every route into a model, bad input is named where it entered, and a custom objective's
errors read like the engine's."""

from __future__ import annotations

import numpy as np
import pytest

from ltrboost import Ranker, make_dataset, train
from ltrboost.dataset import LTRInputError
from ltrboost.datasets import make_ranking

pd = pytest.importorskip("pandas")

FAST = dict(n_estimators=3, max_leaf_nodes=6, min_samples_leaf=3, random_state=0)
COLS = ["a", "b", "c", "d", "e"]


@pytest.fixture(scope="module")
def frames():
    X, y, qid = make_ranking(n_queries=30, docs_per_query=10, n_features=5, random_state=0)[:3]
    Xv, yv, qv = make_ranking(n_queries=20, docs_per_query=10, n_features=5, random_state=1)[:3]
    return pd.DataFrame(X, columns=COLS), y, qid, pd.DataFrame(Xv, columns=COLS), yv, qv


def test_continuing_a_named_model_on_an_array_keeps_the_names(frames):
    df, y, qid, dv, *_ = frames
    init = Ranker(**FAST).fit(df, y, qid=qid)
    more = Ranker(**FAST).fit(df.to_numpy(), y, qid=qid, init_model=init)
    assert more.booster_.feature_names == COLS
    assert list(more.feature_names_in_) == COLS
    # a reordered frame is still taken by name, not silently by position
    np.testing.assert_array_equal(more.predict(dv[COLS[::-1]]), more.predict(dv))
    low = train(
        dict(FAST, n_estimators=5),
        make_dataset(df.to_numpy(), y, qid=qid),
        init_model=init.booster_,
    )
    assert low.feature_names == COLS


@pytest.mark.parametrize(
    "columns", [["a", "a", "c", "d", "e"], [0, "0", 1, 2, 3]], ids=["same", "same-as-str"]
)
def test_duplicate_column_names_are_refused_at_fit(frames, columns):
    df, y, qid, *_ = frames
    dup = pd.DataFrame(df.to_numpy(), columns=columns)
    with pytest.raises(LTRInputError, match=r"duplicate feature names \['(a|0)'\]"):
        Ranker(**FAST).fit(dup, y, qid=qid)

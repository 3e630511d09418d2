"""Adversarial pass 7 over ``Ranker`` with scikit-learn's tools: permutation importance
over a ``qid`` column, a ``qid`` column transformed by a ColumnTransformer, and
``random_state=None`` as scikit-learn's ``check_random_state`` takes it.  Each test
failed before its fix."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.base import clone

from ltrboost import Ranker
from ltrboost.datasets import make_ranking

FAST = dict(n_estimators=4, min_samples_leaf=3, max_leaf_nodes=6)
RAND = dict(FAST, subsample=0.5, colsample_bytree=0.5)
COLS = ["f0", "f1", "f2", "f3"]


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=0)


@pytest.fixture(scope="module")
def frame(data):
    pd = pytest.importorskip("pandas")
    X, _, qid = data
    return pd.DataFrame(X, columns=COLS).assign(qid=qid)


# ------------------------------------------------------------ 3. random_state=None
@pytest.fixture
def global_rng():
    """NumPy's global generator, put back as it was after the test (the legacy
    np.random.* calls are the point here: None means that generator)."""
    state = np.random.get_state()  # noqa: NPY002
    yield
    np.random.set_state(state)  # noqa: NPY002


def test_random_state_none_draws_from_numpys_global_generator(data, tmp_path, global_rng):
    """scikit-learn's check_random_state(None): NumPy's global generator.  None was
    the fixed seed 0, so fits with None were all the same model whatever
    np.random.seed said.  Now a seed is drawn from the global generator at each fit
    and the model records it: the file says how to train the same model again."""
    X, y, qid = data
    est = Ranker(random_state=None, **RAND)
    np.random.seed(1)  # noqa: NPY002
    first = est.fit(X, y, qid=qid).booster_.params["random_state"]
    np.random.seed(1)  # noqa: NPY002
    again = clone(est).fit(X, y, qid=qid).booster_.params["random_state"]
    np.random.seed(2)  # noqa: NPY002
    other = clone(est).fit(X, y, qid=qid).booster_.params["random_state"]
    assert first == again
    assert first != other
    assert isinstance(first, int)
    assert 0 <= first < 2**31
    assert est.get_params()["random_state"] is None
    np.random.seed(1)  # noqa: NPY002
    est.fit(X, y, qid=qid)
    est.save_model(tmp_path / "m.json")
    recorded = json.loads((tmp_path / "m.json").read_text())["params"]["random_state"]
    assert recorded == first
    same = Ranker(random_state=recorded, **RAND).fit(X, y, qid=qid)
    np.testing.assert_array_equal(same.predict(X), est.predict(X))


def test_random_state_none_refits_differ(data, global_rng):
    """Successive fits of one estimator with None are draws: they differ (as
    scikit-learn's estimators), where the default integer seed keeps them equal."""
    X, y, qid = data
    est = Ranker(random_state=None, **RAND)
    seeds = {est.fit(X, y, qid=qid).booster_.params["random_state"] for _ in range(3)}
    assert len(seeds) == 3
    fixed = Ranker(**RAND)
    assert {fixed.fit(X, y, qid=qid).booster_.params["random_state"] for _ in range(2)} == {0}

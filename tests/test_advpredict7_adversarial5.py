"""Prediction under adversarial inputs (a fifth pass): a document's score must not depend
on the other rows predicted with it, ..."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

from ltrboost import Ranker, load_model
from ltrboost.cli import main
from ltrboost.dataset import LTRInputError
from ltrboost.datasets import make_ranking
from ltrboost.io.letor import load_svmlight

FAST = dict(n_estimators=4, max_leaf_nodes=6, min_samples_leaf=3, random_state=0)


@pytest.fixture(scope="module")
def mcrank_models():
    """McRank models with 6 and 11 grades (MSLR-WEB and Yahoo! LTR have 5: 0..4)."""
    X, _, qid = make_ranking(n_queries=30, docs_per_query=20, n_features=4, random_state=0)
    rng = np.random.default_rng(0)
    models = {}
    for top in (5, 10):
        y = rng.integers(0, top + 1, len(qid)).astype(np.float64)
        models[top] = Ranker(objective="mcrank", **FAST).fit(X, y, qid=qid)
    return models


@pytest.mark.parametrize("top", [5, 10])
def test_mcrank_score_does_not_depend_on_the_batch(mcrank_models, top):
    """A document's McRank score (and its probabilities) came out a few ulps apart when
    predicted alone, in a query, or in a whole file: the expected grade was a BLAS
    matrix-vector product and the softmax sum a NumPy reduction, both of which sum in
    an order that depends on the number of rows.  So ``ltrboost predict`` of a file and
    ``Ranker.predict`` query by query disagreed, as did a DaskRanker's partitions and
    its ``to_local()``, which the README promises predict exactly the same."""
    r = mcrank_models[top]
    rng = np.random.default_rng(1)
    B = rng.normal(size=(20_000, 4)) * 2
    full = r.predict(B)
    proba = r.predict_proba(B)
    n = 300
    alone = np.concatenate([r.predict(B[i : i + 1]) for i in range(n)])
    in_sevens = np.concatenate([r.predict(B[i : i + 7]) for i in range(0, n, 7)])[:n]
    half = np.concatenate([r.predict(B[:9_999]), r.predict(B[9_999:])])
    assert alone.tobytes() == full[:n].tobytes()
    assert in_sevens.tobytes() == full[:n].tobytes()
    assert half.tobytes() == full.tobytes()
    proba_alone = np.vstack([r.predict_proba(B[i : i + 1]) for i in range(n)])
    assert proba_alone.tobytes() == np.ascontiguousarray(proba[:n]).tobytes()
    # the documented relation still holds, to rounding
    np.testing.assert_allclose(proba @ np.arange(top + 1), full, rtol=1e-12)


def _traced_peak(fn) -> int:
    """The peak of Python-traced memory (NumPy's buffers included) while ``fn`` runs.
    Garbage is collected first, so that no finalizer of an earlier test's objects runs
    (and allocates) inside ``fn``."""
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_cli_predict_output_costs_no_more_memory_than_reading_the_data(tmp_path):
    """``ltrboost predict`` built the text of every score at once (a Python float and a
    string per score, ~110 bytes a row, held together): on a narrow file that was half
    again the memory of reading the data.  The scores are now written in blocks."""
    X, y, qid = make_ranking(n_queries=30, docs_per_query=10, n_features=4, random_state=0)
    model = tmp_path / "m.json"
    Ranker(**FAST).fit(X, y, qid=qid).save_model(str(model))
    data = tmp_path / "d.txt"
    data.write_text("0\n" * 200_000)  # the shortest data line there is
    out = tmp_path / "scores.txt"
    argv = ["predict", str(model), str(data), "-q", "-o", str(out)]
    assert main(argv) == 0  # compiled, imported
    reading = _traced_peak(lambda: load_svmlight(str(data), n_features=4))
    predicting = _traced_peak(lambda: main(argv))
    assert predicting < reading + (2 << 20), (predicting, reading)
    lines = out.read_text().splitlines()
    assert len(lines) == 200_000
    assert len(set(lines)) == 1
    assert float(lines[0]) == load_model(str(model)).predict(np.zeros((1, 4)))[0]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_predict_does_not_copy_a_ready_matrix(dtype):
    """``Booster.predict`` copied every X (``astype(float64)``, "a copy, as always"),
    so predicting a 10 GiB float64 matrix needed 20 GiB; LightGBM and XGBoost read a
    C-ordered float matrix in place.  X is left as it was."""
    X, y, qid = make_ranking(n_queries=30, docs_per_query=10, n_features=50, random_state=0)
    booster = Ranker(**FAST).fit(X, y, qid=qid).booster_
    rng = np.random.default_rng(2)
    B = rng.normal(size=(20_000, 50)).astype(dtype)
    B[::7, 3] = np.nan
    before = B.copy()
    expected = booster.predict(B.astype(np.float64).tolist())  # a list: converted
    # The kernel for B's own type (float32: the list above ran the float64 one) is
    # compiled, or loaded from Numba's cache, by its first call: done inside the traced
    # call, that took 2.9 MB on a cold cache (a stale one after a source change), over
    # the bound.  A few rows of B's dtype and layout call the same kernel outside it.
    booster.predict(B[:8])
    # tracemalloc counts every thread's allocations: another thread's (one left running
    # by an earlier test) could add to one call's peak.  A copy of X is made by every
    # call, so the smallest of three peaks still holds it.
    peak = min(_traced_peak(lambda: booster.predict(B)) for _ in range(3))
    assert peak < B.nbytes // 4, (peak, B.nbytes)
    assert booster.predict(B).tobytes() == expected.tobytes()
    np.testing.assert_array_equal(B, before)


def test_a_column_named_differently_only_in_case_is_pointed_at():
    """Feature names are matched exactly (a model may have both ``a`` and ``A``), so
    ``Feature1`` for ``feature1`` is refused; the error listed it as one missing and
    one unknown column without saying they differ only in case (or in spaces around
    the name, as a CSV header's ``" bm25"``)."""
    pd = pytest.importorskip("pandas")
    X, y, qid = make_ranking(n_queries=30, docs_per_query=10, n_features=3, random_state=0)
    cols = ["bm25", "BM25", "PageRank"]
    r = Ranker(**FAST).fit(pd.DataFrame(X, columns=cols), y, qid=qid)
    with pytest.raises(LTRInputError) as e:
        r.predict(pd.DataFrame(X, columns=["bm25", "BM25", "pagerank"]))
    assert "missing columns ['PageRank']; unknown columns ['pagerank']" in str(e.value)
    assert "'pagerank' for 'PageRank'" in str(e.value)
    assert "only in case" in str(e.value)
    with pytest.raises(LTRInputError, match=r"' bm25' for 'bm25'"):
        r.booster_.predict(pd.DataFrame(X, columns=[" bm25", "BM25", "PageRank"]))
    # both spellings being features, each is taken as it is named
    swapped = pd.DataFrame(X[:, [1, 0, 2]], columns=["BM25", "bm25", "PageRank"])
    assert r.predict(swapped).tobytes() == r.predict(pd.DataFrame(X, columns=cols)).tobytes()

"""Preference data, adversarially: ``--pairs`` files (docids missing, in another query,
in another Unicode form, a header line, inline comments), the objectives' refusals
when explicit pairs give nothing to learn, ``preference_weight=0`` with pairs,
``pairs=[]``, and GBRank / QBRank against the seeds' definitions on a hand-made
two-query example."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from ltrboost import PairsIgnoredWarning, Ranker
from ltrboost.dataset import LTRInputError
from ltrboost.io.pairs import read_pairs_file
from test_cli import assert_one_line_error, run

ONE_ROUND = ["--n-estimators", "1", "-q", "--min-samples-leaf", "1"]

DATA = """\
2 qid:1 1:0.9 2:0.1 # docid = A1
1 qid:1 1:0.5 2:0.4 # docid = A2
0 qid:1 1:0.1 2:0.9 # docid = A3
0 qid:1 1:0.2 2:0.8 # docid = \u00e91
1 qid:2 1:0.7 2:0.3 # docid = B1
0 qid:2 1:0.3 2:0.6 # docid = B2
2 qid:2 1:0.8 2:0.2 # docid = A1
1 qid:3 1:0.6 2:0.3
0 qid:3 1:0.4 2:0.5
"""


@pytest.fixture
def data(tmp_path) -> Path:
    path = tmp_path / "train.txt"
    path.write_text(DATA, encoding="utf-8")
    return path


def _pairs(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pairs.txt"
    path.write_bytes(text.encode("utf-8"))
    return path


def _train(data: Path, pairs: Path, out: Path, capsys, *flags: str) -> tuple[int, str]:
    rc, _, err = run(["train", data, "--pairs", pairs, "-o", out, *flags, *ONE_ROUND], capsys)
    return rc, err


def _read(text: str, tmp_path: Path):
    qid = np.array([1, 1, 1, 1, 2, 2, 2, 3, 3])
    docids = ["A1", "A2", "A3", "\u00e91", "B1", "B2", "A1", None, None]
    return read_pairs_file(_pairs(tmp_path, text), qid, docids)


# --- 1. an unknown document says why ---------------------------------------------------
def test_document_of_another_query_is_named_with_its_query(tmp_path):
    with pytest.raises(LTRInputError) as e:
        _read("1 A1 B1\n", tmp_path)
    assert e.value.line == 1
    assert "'B1' is not a document of query '1'" in e.value.problem
    assert "query '2'" in e.value.problem
    assert "one query" in e.value.problem


def test_query_without_docids_says_so(tmp_path):
    with pytest.raises(LTRInputError) as e:
        _read("3 X Y\n", tmp_path)
    assert "no document of query '3' has a docid" in e.value.problem


def test_data_without_any_docid_says_so(tmp_path):
    qid = np.array([1, 1, 2])
    with pytest.raises(LTRInputError) as e:
        read_pairs_file(_pairs(tmp_path, "\n1 a b\n"), qid, [None, None, None])
    assert e.value.line == 2
    assert "the data has no document ids" in e.value.problem


def test_docid_in_another_unicode_form_is_pointed_out(tmp_path):
    decomposed = "e\u0301" + "1"  # NFD of the data's NFC 'é1'
    with pytest.raises(LTRInputError) as e:
        _read(f"1 {decomposed} A3\n", tmp_path)
    problem = e.value.problem
    assert "Unicode normalization" in problem
    assert ascii("\u00e91") in problem  # the two spellings told apart


def test_inline_comment_is_named(tmp_path):
    with pytest.raises(LTRInputError) as e:
        _read("1 A1 A2 # editorial\n", tmp_path)
    assert e.value.line == 1
    assert "comments go on their own line" in e.value.problem


# --- 2. a header line, as click logs allow ---------------------------------------------
def test_header_line_is_skipped(tmp_path):
    pref, oth, w = _read("\ufeffqid preferred other weight\n1 A1 A2 2\n", tmp_path)
    assert (pref.tolist(), oth.tolist(), w.tolist()) == ([0], [1], [2.0])


def test_header_only_on_the_first_data_line(tmp_path):
    with pytest.raises(LTRInputError) as e:
        _read("1 A1 A2\nqid preferred other\n", tmp_path)
    assert e.value.line == 2
    assert "unknown query 'qid'" in e.value.problem


def test_cli_reads_a_header_line(data, tmp_path, capsys):
    pairs = _pairs(tmp_path, "qid preferred_docid other_docid weight\n1 A3 A2 1\n")
    rc, err = _train(data, pairs, tmp_path / "m.json", capsys, "--objective", "gbrank")
    assert rc == 0, err


# --- 3. nothing to learn: the message says why -----------------------------------------
def test_no_label_pairs_and_no_pairs_names_the_parameter():
    X = np.arange(6.0).reshape(-1, 1)
    y = np.array([2.0, 1, 0, 1, 0, 0])
    with pytest.raises(ValueError, match="use_label_pairs=False learns from explicit") as e:
        Ranker(objective="gbrank", use_label_pairs=False, n_estimators=1).fit(
            X, y, qid=[1, 1, 1, 2, 2, 2]
        )
    msg = str(e.value)
    assert "has neither" not in msg  # it has labels
    assert "there is no explicit preference pair" in msg


def test_qbrank_pairs_only_without_pairs_names_both_parameters():
    X = np.arange(6.0).reshape(-1, 1)
    y = np.array([2.0, 1, 0, 1, 0, 0])
    with pytest.raises(ValueError, match="preference_weight=1 gives the labels no weight"):
        Ranker(
            objective="qbrank", use_label_pairs=False, preference_weight=1.0, n_estimators=1
        ).fit(X, y, qid=[1, 1, 1, 2, 2, 2])


def test_cli_empty_pairs_file_warns_for_qbrank_without_label_pairs(data, tmp_path, capsys):
    """qbrank learns from its labelled part when there is no pair: the empty pairs
    file warned for the other settings, not for this one."""
    pairs = _pairs(tmp_path, "# nothing\n")
    flags = ("--objective", "qbrank", "--use-label-pairs", "false")
    rc, err = _train(data, pairs, tmp_path / "m.json", capsys, *flags)
    assert rc == 0, err
    assert "holds no pair" in err


def test_cli_empty_pairs_file_gbrank_without_label_pairs_is_one_error(data, tmp_path, capsys):
    pairs = _pairs(tmp_path, "# nothing\n")
    flags = ("--objective", "gbrank", "--use-label-pairs", "false")
    rc, err = _train(data, pairs, tmp_path / "m.json", capsys, *flags)
    assert_one_line_error(rc, err, "--use-label-pairs")


# --- 4. preference_weight=0: the pairs change nothing -----------------------------------
def test_qbrank_zero_preference_weight_warns_that_pairs_are_ignored():
    X = np.arange(6.0).reshape(-1, 1)
    y = np.array([2.0, 1, 0, 1, 0, 0])
    with pytest.warns(PairsIgnoredWarning, match="preference_weight=0"):
        Ranker(objective="qbrank", preference_weight=0.0, n_estimators=1, min_samples_leaf=1).fit(
            X, y, qid=[1, 1, 1, 2, 2, 2], pairs=[[2, 1]]
        )


def test_qbrank_positive_preference_weight_does_not_warn():
    X = np.arange(6.0).reshape(-1, 1)
    y = np.array([2.0, 1, 0, 1, 0, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", PairsIgnoredWarning)
        Ranker(objective="qbrank", preference_weight=0.5, n_estimators=1, min_samples_leaf=1).fit(
            X, y, qid=[1, 1, 1, 2, 2, 2], pairs=[[2, 1]]
        )


def test_cli_pairs_with_zero_preference_weight_is_an_error(data, tmp_path, capsys):
    pairs = _pairs(tmp_path, "1 A3 A2\n")
    out = tmp_path / "m.json"
    rc, err = _train(data, pairs, out, capsys, "--objective", "qbrank", "--preference-weight", "0")
    assert_one_line_error(rc, err, "--pairs", "--preference-weight=0")
    assert not out.exists()


# --- 5. pairs=[]: no pairs, as an empty pairs file ---------------------------------------
@pytest.mark.parametrize("empty", [[], (), np.zeros(0)])
def test_empty_pairs_list_is_no_pairs(empty):
    X = np.arange(6.0).reshape(-1, 1)
    y = np.array([2.0, 1, 0, 1, 0, 0])
    qid = [1, 1, 1, 2, 2, 2]
    kw = dict(objective="gbrank", n_estimators=2, min_samples_leaf=1)
    a = Ranker(**kw).fit(X, y, qid=qid, pairs=empty).predict(X)
    b = Ranker(**kw).fit(X, y, qid=qid).predict(X)
    np.testing.assert_array_equal(a, b)


# --- 6. GBRank and QBRank against the seeds' definitions (regression lock) --------------
# q1: a(2) b(1) c(0); q2: d(1) e(0) f(0).  Explicit b > c (weight 2, also a label pair)
# and f > e (weight 0.5, a label tie).  One feature gives every document its own leaf,
# so each tree is the exact fit the seeds' algorithms ask for.
Y = np.array([2.0, 1, 0, 1, 0, 0])
QID = np.array([1, 1, 1, 2, 2, 2])
X1 = np.arange(6, dtype=float).reshape(-1, 1) * 10
XP = np.array([[1, 2, 2.0], [5, 4, 0.5]])
EXACT = dict(min_samples_leaf=1, min_samples_bin=1, min_sum_hessian_in_leaf=1e-9)


def _hand_pairs(grade_tau: bool, tau: float | None):
    out = []
    for lo, hi in ((0, 3), (3, 6)):
        for i in range(lo, hi):
            for j in range(lo, hi):
                if Y[i] > Y[j]:
                    out.append((i, j, 1.0, Y[i] - Y[j] if grade_tau else tau))
    for i, j, w in XP:  # explicit pairs: tau 1 under grade_difference (seed 004)
        out.append((int(i), int(j), w, 1.0 if grade_tau else tau))
    return out


def test_gbrank_follows_seed_002_on_two_queries():
    """Seed 002 steps 2-4: S^- = {h(x) < h(y) + tau}, targets h(y)+tau / h(x)-tau
    (a document's targets pair-weighted averaged, seed 004's remark), then
    h_k = (k h_{k-1} + eta g_k) / (k + 1)."""
    tau, eta = 0.1, 0.5
    pairs = _hand_pairs(False, tau)
    h = np.zeros(6)
    for k in range(1, 4):
        num, den = np.zeros(6), np.zeros(6)
        for x, o, w, t in pairs:
            if h[x] < h[o] + t:
                num[x] += w * (h[o] + t)
                den[x] += w
                num[o] += w * (h[x] - t)
                den[o] += w
        assert (den > 0).all()  # every document targeted: its leaf is its target
        h = (k * h + eta * num / den) / (k + 1)
        model = Ranker(objective="gbrank", tau=tau, learning_rate=eta, n_estimators=k, **EXACT)
        got = model.fit(X1, Y, qid=QID, pairs=XP).predict(X1)
        np.testing.assert_allclose(got, h, atol=1e-6)


def test_qbrank_follows_seed_004_on_two_queries():
    """Seed 004 Algorithm 2: targets from the quadratic risk's negative gradient with
    weights w per pair entry and 1 - w per label, step by line search, shrinkage eta."""
    from scipy.optimize import minimize_scalar

    w, eta = 0.5, 0.3
    pairs = _hand_pairs(True, None)

    def risk(s):
        pref = sum(om * max(0.0, s[o] - s[x] + t) ** 2 for x, o, om, t in pairs)
        return w / 2 * pref + (1 - w) / 2 * float(((Y - s) ** 2).sum())

    h = np.full(6, Y.mean())
    for k in range(1, 4):
        g, hess = -(1 - w) * (Y - h), np.full(6, 1 - w)
        for x, o, om, t in pairs:
            m = max(0.0, h[o] - h[x] + t)
            g[x] -= w * om * m
            g[o] += w * om * m
            hess[x] += w * om
            hess[o] += w * om
        delta = -g / hess
        step = minimize_scalar(
            lambda a, d=delta, s=h: risk(s + a * d),
            bounds=(0, 50),
            method="bounded",
            options={"xatol": 1e-12},
        ).x
        h = h + eta * step * delta
        model = Ranker(
            objective="qbrank", preference_weight=w, learning_rate=eta, n_estimators=k, **EXACT
        )
        got = model.fit(X1, Y, qid=QID, pairs=XP).predict(X1)
        np.testing.assert_allclose(got, h, atol=1e-6)

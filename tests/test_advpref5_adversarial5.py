"""Preference data, adversarially (round 5): errors for explicit pairs that name the
user's queries and rows as the user gave them (query ids, not internal query numbers;
``qid:`` written in a ``--pairs`` file; rows of a cross-validation fold), and the
finite-difference check of RankNet / RankBoost with weighted explicit pairs on
weighted queries."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.dataset import LTRInputError, PreferencePairs, RankingDataset
from ltrboost.io.pairs import read_pairs_file
from ltrboost.objectives.pairwise import RankBoost, RankNet

sys.path.insert(0, str(Path(__file__).parent / "objectives"))
from test_pairwise import check_finite_differences


def _data(qid):
    rng = np.random.default_rng(0)
    n = len(qid)
    return rng.normal(size=(n, 3)), rng.integers(0, 3, n).astype(float), np.asarray(qid)


@pytest.mark.parametrize("objective", ["ranknet", "gbrank"])
def test_a_pair_across_queries_names_the_users_query_ids(objective):
    # "belong to different queries (0 and 1)": the internal query numbers, not the ids
    # the user gave (105 and 7)
    X, y, qid = _data(np.repeat([105, 7], 4))
    shown = r"rows 0 and 5 belong to different queries \(105 and 7\)"
    with pytest.raises(LTRInputError, match=shown):
        Ranker(objective=objective, n_estimators=1).fit(X, y, qid=qid, pairs=[[0, 5]])


def test_a_pair_across_queries_in_unsorted_rows_names_the_users_rows_and_ids():
    X, y, qid = _data([3, 9, 3, 9, 3, 9])
    shown = r"rows 2 and 1 belong to different queries \(3 and 9\)"
    with pytest.raises(LTRInputError, match=shown):
        Ranker(objective="ranknet", n_estimators=1).fit(X, y, qid=qid, pairs=[[0, 4], [2, 1]])


def test_a_pair_across_groups_names_the_groups_by_their_position():
    # group= gives no ids: the groups are numbered 0, 1, ... in row order, and said so
    X, y, _ = _data(np.repeat([0, 1], 4))
    shown = r"different queries \(groups 0 and 1, counting from 0\)"
    with pytest.raises(LTRInputError, match=shown):
        Ranker(objective="ranknet", n_estimators=1).fit(X, y, group=[4, 4], pairs=[[0, 5]])


def test_a_pair_row_outside_the_data_says_pairs_name_rows_of_this_x():
    # cross_val_score(..., params={"pairs": P}) hands every fold the pairs unchanged: a
    # row of the whole data is outside the fold's rows; say what pairs number
    X, y, qid = _data(np.repeat([0, 1], 4))
    with pytest.raises(LTRInputError, match=r"positions of the rows of the X given to fit"):
        Ranker(objective="ranknet", n_estimators=1).fit(X, y, qid=qid, pairs=[[8, 9]])


def test_a_pairs_file_qid_written_with_its_prefix_is_pointed_out(tmp_path):
    path = tmp_path / "pairs.txt"
    path.write_text("qid:1 A B\n", encoding="utf-8")
    hint = r"unknown query 'qid:1' \(write the query id without 'qid:', as '1'\)"
    with pytest.raises(LTRInputError, match=hint) as e:
        read_pairs_file(path, np.array([1, 1]), ["A", "B"])
    assert e.value.line == 1


def test_a_pairs_file_qid_prefix_with_an_unknown_id_is_not_suggested(tmp_path):
    path = tmp_path / "pairs.txt"
    path.write_text("qid:5 A B\n", encoding="utf-8")
    with pytest.raises(LTRInputError, match=r"unknown query 'qid:5'$"):
        read_pairs_file(path, np.array([1, 1]), ["A", "B"])


# --- finite differences: weighted explicit pairs on weighted queries ------------------


@pytest.mark.parametrize("cls", [RankNet, RankBoost])
@pytest.mark.parametrize("use_label_pairs", [None, False])
@pytest.mark.parametrize("pair_method", ["all", "topk", "sampled"])
def test_weighted_explicit_pairs_with_query_weights_numerically(cls, use_label_pairs, pair_method):
    # the explicit-pair tests used no document weights, the weighted ones no explicit pairs
    rng = np.random.default_rng(3)
    sizes = (3, 5, 6, 4)
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(off[-1])
    pairs = PreferencePairs(
        preferred=np.array([0, 3, 4, 9, 15], dtype=np.int32),
        other=np.array([2, 7, 3, 12, 16], dtype=np.int32),
        weight=np.array([2.0, 0.5, 1.0, 3.0, 0.0]),  # a pair of weight 0 counts for nothing
    )
    data = RankingDataset(
        X=np.zeros((n, 1)),
        y=rng.integers(0, 3, n).astype(np.float64),
        query_offsets=off,
        weights=np.repeat(rng.uniform(0.5, 2.0, len(sizes)), sizes).astype(np.float32),
        pairs=pairs,
    )
    kw = {"truncation_level": 2} if pair_method == "topk" else {}
    obj = cls(use_label_pairs=use_label_pairs, pair_method=pair_method, **kw)
    check_finite_differences(obj, rng.normal(size=n), data)


def test_cli_pairs_file_names_queries_of_a_query_file_by_their_number(tmp_path, capsys):
    # README: with a LightGBM FILE.query the queries are numbered 0, 1, ... in that file
    from test_cli import run

    data = tmp_path / "train.txt"
    rows = [(2, 0.9, "A1"), (0, 0.1, "A2"), (1, 0.5, "A3"), (1, 0.7, "B1"), (0, 0.2, "B2")]
    data.write_text("".join(f"{y} 1:{x} 2:{1 - x} # docid = {d}\n" for y, x, d in rows))
    Path(f"{data}.query").write_text("3\n2\n")
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("0 A2 A3\n1 B2 B1 2\n")
    out = tmp_path / "m.json"
    args = ["train", data, "--pairs", pairs, "-o", out, "--objective", "ranknet"]
    rc, _, err = run([*args, "--n-estimators", "1", "-q", "--min-samples-leaf", "1"], capsys)
    assert rc == 0, err
    pairs.write_text("1 A2 A3\n")
    rc, _, err = run([*args, "--n-estimators", "1", "-q", "--min-samples-leaf", "1"], capsys)
    assert rc != 0
    assert "it is one of query '0'" in err

"""Small defects of messages and checks (adversarial pass 6, "smallend"): the warning of
a constant model names the cause that holds for the objective, ``random_state`` is
refused where the per-query streams would wrap it, column-name hints catch typos (not
only case), cv names its refused ``--output``, and the unread ``.weight`` sidecar
warning says where the queries came from.  Each problem found is one test here."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import ltrboost
from ltrboost.booster import train
from ltrboost.dataset import LTRInputError, PreferencePairs, make_dataset
from ltrboost.params import BoosterParams
from test_cli import assert_one_line_error as one_line_error
from test_cli import run

FAST = dict(n_estimators=2, max_leaf_nodes=4, min_samples_leaf=5, n_threads=1)


def _one_grade_per_query(n_queries=12, size=10):
    """Each query's documents share one label; the labels differ between queries."""
    rng = np.random.default_rng(0)
    qid = np.repeat(np.arange(n_queries), size)
    X = rng.normal(size=(qid.shape[0], 3))
    return X, (qid % 3).astype(np.float64), qid


def _constant_warnings(params, ds) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(params, ds)
    return [str(w.message) for w in caught if "every tree is one leaf" in str(w.message)]


# --------------------------------------------------- 1. the cause of a constant model
@pytest.mark.parametrize("objective", ["mart", "mcrank", "logistic_rank", "xendcg", "qbrank"])
def test_constant_model_of_a_loss_learning_across_queries_blames_the_split_limits(objective):
    """These losses learn from labels that differ between queries (xendcg from its
    random target, qbrank from its labelled part): a huge min_gain_to_split made every
    tree one leaf, and the warning blamed "no query holds two documents of different
    labels" instead."""
    X, y, qid = _one_grade_per_query()
    ds = make_dataset(X, y, qid=qid)
    (msg,) = _constant_warnings(dict(FAST, objective=objective, min_gain_to_split=1e12), ds)
    assert "min_gain_to_split=1000000000000.0" in msg
    assert not msg.split(": ", 1)[1].startswith("no query holds")


@pytest.mark.parametrize(
    "params",
    [
        dict(objective="lambdamart"),
        dict(objective="ranknet"),
        dict(objective="gbrank"),
        dict(objective="yetirank"),
        dict(objective="qbrank", preference_weight=1.0),  # the pairs only
    ],
)
def test_constant_model_of_a_pairwise_loss_still_blames_the_grades(params):
    X, y, qid = _one_grade_per_query()
    (msg,) = _constant_warnings(dict(FAST, **params), make_dataset(X, y, qid=qid))
    assert "no query holds two documents of different labels" in msg
    assert "min_gain_to_split" not in msg


def test_constant_model_with_explicit_pairs_blames_the_split_limits():
    """ranknet learns from explicit pairs where no query holds two labels: with them a
    constant model comes from the split limits, not from a lack of pairs."""
    X, y, qid = _one_grade_per_query()
    ds = make_dataset(X, y, qid=qid)
    ds.pairs = PreferencePairs(
        preferred=np.array([0, 10, 20], dtype=np.int32),
        other=np.array([1, 11, 21], dtype=np.int32),
        weight=np.ones(3),
    )
    params = dict(FAST, objective="ranknet", min_gain_to_split=1e12)
    (msg,) = _constant_warnings(params, ds)
    assert "min_gain_to_split" in msg
    assert "no query holds" not in msg


def test_constant_model_of_a_custom_loss_names_both_causes():
    """A custom loss may be pointwise or pairwise: both possible causes are named."""
    X, y, qid = _one_grade_per_query()

    def flat(scores, labels, offsets):
        return np.zeros_like(scores), np.ones_like(scores)

    (msg,) = _constant_warnings(dict(FAST, objective=flat), make_dataset(X, y, qid=qid))
    assert "no query holds two documents of different labels" in msg
    assert "min_gain_to_split" in msg


# ------------------------------------------------------------- 2. random_state range
@pytest.mark.parametrize("seed", [2**62, 2**64, 2**62 + 5])
def test_random_state_beyond_the_streams_is_refused(seed):
    """Per-query streams take the seed modulo 2**62: random_state=2**64 silently gave
    seed 0's yetirank/xendcg/sampled-pairs model."""
    with pytest.raises(ValueError, match=r"random_state=\d+ must be .*2\*\*62 - 1"):
        BoosterParams(random_state=seed).validate()
    X, y, qid = _one_grade_per_query()
    with pytest.raises(ValueError, match="random_state"):
        ltrboost.Ranker(random_state=seed, **FAST).fit(X, y, qid=qid)


@pytest.mark.parametrize("name", ["lambdamart", "yetirank", "ranknet", "rankboost", "xendcg"])
def test_objective_random_state_beyond_the_streams_is_refused(name):
    from ltrboost.objectives.registry import objective_class

    cls = objective_class(name)
    with pytest.raises(ValueError, match=r"random_state=\d+ must be at most 2\*\*62 - 1"):
        cls(random_state=2**64)
    cls(random_state=2**62 - 1)


def test_random_state_at_the_top_of_the_range_is_taken():
    BoosterParams(random_state=2**62 - 1).validate()
    BoosterParams(random_state=np.uint64(2**62 - 1)).validate()
    with pytest.raises(ValueError, match="random_state"):
        BoosterParams(random_state=np.uint64(2**63)).validate()


def test_random_state_generators_draw_seeds_in_range():
    from ltrboost.sklearn import _seed

    for rs in (np.random.RandomState(1), np.random.default_rng(1), None):
        s = _seed(rs)
        BoosterParams(random_state=s).validate()
        assert 0 <= s < 2**62


def test_cli_random_state_beyond_the_streams_names_the_flag(tmp_path, capsys):
    train_file = tmp_path / "t.txt"
    train_file.write_text("".join(f"{i % 2} qid:{i // 4} 1:{i}\n" for i in range(16)))
    for cmd in (["train", train_file, "-o", tmp_path / "m.json"], ["cv", train_file]):
        rc, _, err = run([*cmd, "-q", "--random-state", str(2**64)], capsys)
        line = one_line_error(rc, err, f"--random-state={2**64}")
        assert "2**62 - 1" in line
        assert not (tmp_path / "m.json").exists()


# ------------------------------------------------------------- 3. column-name hints
def test_fit_names_a_qid_column_misspelled():
    """Ranker.fit pointed at 'QID' (case) but not at 'qdi' (a typo)."""
    pd = pytest.importorskip("pandas")
    X, y, qid = _one_grade_per_query()
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(qdi=qid)
    with pytest.raises(LTRInputError) as e:
        ltrboost.Ranker(**FAST).fit(df, y)
    assert "'qdi'" in str(e.value)
    # nothing close: the message as it was
    with pytest.raises(LTRInputError) as e:
        ltrboost.Ranker(**FAST).fit(df.drop(columns="qdi"), y)
    assert str(e.value).startswith("fit needs the query of every row: give qid=")


def test_predict_columns_name_a_misspelled_one():
    pd = pytest.importorskip("pandas")
    X, y, qid = _one_grade_per_query()
    df = pd.DataFrame(X, columns=["label_a", "b", "c"])
    model = ltrboost.Ranker(**FAST).fit(df, y, qid=qid)
    with pytest.raises(LTRInputError) as e:
        model.predict(df.rename(columns={"label_a": "lable_a"}))
    assert "'lable_a' for 'label_a'" in str(e.value)
    with pytest.raises(LTRInputError) as e:
        model.predict(df.rename(columns={"label_a": "zzz"}))
    assert " for " not in str(e.value)  # nothing close: no hint


def test_close_names_helper():
    from ltrboost.dataset import close_names

    assert close_names("Label", ["label", "qid"]) == (["label"], True)
    assert close_names("lable", ["label", "qid", "f0"]) == (["label"], False)
    assert close_names("qdi", ["qid", "f0"]) == (["qid"], False)
    assert close_names("grade", ["label", "qid", "f0", "f1"]) == ([], False)
    assert close_names("x", [1, 2]) == ([], False)  # non-string columns are skipped


from ltrboost import dask as ldask  # noqa: E402


def _frame():
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, qid = _one_grade_per_query()
    df = pd.DataFrame(X, columns=["f0", "f1", "f2"]).assign(qid=qid, label=y)
    return dd.from_pandas(df, npartitions=2, sort=False)


def test_dask_names_a_misspelled_label_column(client):
    ddf = _frame()
    with pytest.raises(LTRInputError) as e:
        ldask.train(client, FAST, ldask.DaskData(ddf, "lable"))
    assert str(e.value).startswith("y='lable' is not a column of X")
    assert "y='label'" in str(e.value)
    with pytest.raises(LTRInputError, match=r"^y='grade' is not a column of X$"):
        ldask.train(client, FAST, ldask.DaskData(ddf, "grade"))


def test_dask_names_a_misspelled_qid_column_as_local(client):
    ddf = _frame().rename(columns={"qid": "qdi"})
    with pytest.raises(LTRInputError) as e:
        ldask.train(client, FAST, ldask.DaskData(ddf, "label"))
    assert "'qdi'" in str(e.value)


# ------------------------------------------------------------- 4. cv --out
def test_cv_out_names_the_refused_output_not_quiet(tmp_path, capsys):
    """``cv --out X`` suggested --quiet (cv's --output is hidden: it is refused)."""
    data = tmp_path / "t.txt"
    data.write_text("".join(f"{i % 2} qid:{i // 4} 1:{i}\n" for i in range(16)))
    for typo in ("--out", "--outptu"):
        rc, _, err = run(["cv", data, typo, tmp_path / "x"], capsys)
        line = one_line_error(rc, err, "unrecognized")
        assert "--quiet" not in line
        assert "--output is not available in cv: it writes no model" in line
    # train's --output is visible: a prefix is still offered as before
    rc, _, err = run(["train", data, "--outp", tmp_path / "x"], capsys)
    one_line_error(rc, err, "did you mean --output?")


# ------------------------------------------------------------- 5. the .weight sidecar
def _weight_warning(path: Path, capsys) -> str:
    rc, _, err = run(["train", path, "-o", path.parent / "m.json", "-q", "--n-estimators", "1",
                      "--min-samples-leaf", "2"], capsys)  # fmt: skip
    assert rc == 0, err
    (line,) = [w for w in err.splitlines() if ".weight is not read" in w]
    return line


def test_weight_sidecar_beside_qid_file_names_the_qid_fields(tmp_path, capsys):
    """It said "only query sizes from FILE.query" where no .query file was read."""
    data = tmp_path / "t.txt"
    data.write_text("".join(f"{i % 2} qid:{i // 4} 1:{i}\n" for i in range(16)))
    (tmp_path / "t.txt.weight").write_text("1\n" * 16)
    line = _weight_warning(data, capsys)
    assert ".query" not in line
    assert "qid:" in line


def test_weight_sidecar_beside_query_file_keeps_its_wording(tmp_path, capsys):
    data = tmp_path / "t.txt"
    data.write_text("".join(f"{i % 2} 1:{i}\n" for i in range(16)))
    (tmp_path / "t.txt.query").write_text("4\n" * 4)
    (tmp_path / "t.txt.weight").write_text("1\n" * 16)
    line = _weight_warning(data, capsys)
    assert f"only query sizes from {data}.query" in line

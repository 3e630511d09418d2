"""Model inspection (``ltrboost.inspection``, ``ltrboost inspect``, ``plot_importance``)
on models a fourth adversarial pass found misreported: names that break the one-node-a-line
dump, early-stopped models whose dump and importances count different rounds, and the
CLI's missing ``--iteration``."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.datasets import make_ranking
from ltrboost.inspection import dump_text, feature_importance, model_summary
from ltrboost.model import load_model
from test_cli import assert_one_line_error, run

pd = pytest.importorskip("pandas")

# what a dump line is: a tree header, a split or a leaf
_NODE = re.compile(
    r"^(tree \d+ \(output \d+\)"
    r"|( {2})*\d+:\[.*<=\S+\] yes=\d+ no=\d+ missing=(yes|no) gain=\S+ count=\d+"
    r"|( {2})*\d+:leaf=\S+ count=\d+)$"
)


@pytest.fixture(scope="module")
def odd_names(tmp_path_factory):
    """A model whose four features are named with a newline, a tab, nothing and a
    leading blank, every one used in a split."""
    X, y, qid = make_ranking(n_queries=30, docs_per_query=10, n_features=4, random_state=0)
    names = ["new\nline", "a\tb", "", " lead"]
    model = Ranker(n_estimators=20, max_leaf_nodes=6, min_samples_leaf=2, random_state=0)
    model.fit(pd.DataFrame(X, columns=names), y, qid=qid)
    assert (model.booster_.feature_importance("split") > 0).all()
    path = tmp_path_factory.mktemp("odd") / "m.json"
    model.save_model(str(path))
    return model.booster_, path


def test_dump_is_one_node_a_line_whatever_the_names(odd_names):
    """A feature named with a newline split its nodes' dump lines in two (the summary
    table already showed such names quoted)."""
    booster, _ = odd_names
    lines = dump_text(booster).splitlines()
    n_nodes = sum(t.shape[0] for t in booster.trees)
    assert len(lines) == n_nodes + len(booster.trees)
    for line in lines:
        assert _NODE.match(line), line
    text = "\n".join(lines)
    assert "['new\\nline'<=" in text
    assert "['a\\tb'<=" in text
    assert "[''<=" in text  # an empty name read "[<=0.5]"
    assert "[' lead'<=" in text  # a blank at the edge was invisible


def test_cli_table_and_dump_quote_names_that_would_not_show(odd_names, capsys):
    _, path = odd_names
    rc, out, err = run(["inspect", path, "--dump"], capsys)
    assert rc == 0, err
    table = out[out.index("top 4 features") : out.index("\ntree 0")].splitlines()[2:]
    first_cells = sorted(row.split("  ")[0] for row in table)
    assert first_cells == ["' lead'", "''", "'a\\tb'", "'new\\nline'"]
    dump = out[out.index("tree 0 (") :].splitlines()
    for line in dump:
        assert _NODE.match(line), line


def test_json_keeps_the_names_as_they_are(odd_names, capsys):
    _, path = odd_names
    rc, out, err = run(["inspect", path, "--json"], capsys)
    assert rc == 0, err
    names = {f["feature"] for f in json.loads(out)["top_features"]}
    assert names == {"new\nline", "a\tb", "", " lead"}


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """An early-stopped McRank model (5 outputs): rounds past the best one kept."""
    X, y, qid = make_ranking(n_queries=30, docs_per_query=10, n_features=5, random_state=0)
    Xv, yv, qv = make_ranking(
        n_queries=10, docs_per_query=10, n_features=5, first_qid=30, random_state=1
    )
    model = Ranker(objective="mcrank", n_estimators=30, max_leaf_nodes=4, min_samples_leaf=3)
    model.fit(
        X,
        y,
        qid=qid,
        eval_set=[(Xv, yv, qv)],
        early_stopping_rounds=3,
        eval_metric="ndcg@5",
    )
    booster = model.booster_
    assert booster.best_iteration < booster.n_iterations
    path = tmp_path_factory.mktemp("stopped") / "m.json"
    model.save_model(str(path))
    return booster, path


def _split_counts(dump: str, n_features: int) -> np.ndarray:
    """Splits per feature, counted from dump text."""
    counts = np.zeros(n_features)
    for m in re.finditer(r"\[f(\d+)<=", dump):
        counts[int(m.group(1))] += 1
    return counts


def test_cli_iteration_scopes_importances_and_dump(stopped, capsys):
    """``inspect`` had no --iteration (predict, eval and export have one): the
    importances of every round trained, or of any other count, were out of a CLI
    user's reach."""
    booster, path = stopped
    n = booster.n_iterations
    rc, out, err = run(["inspect", path, "--json", "--dump", "--iteration", n], capsys)
    assert rc == 0, err
    info = json.loads(out)
    assert info["importance_iterations"] == n
    split = feature_importance(booster, "split", iteration=n)
    by_idx = {f["feature_idx"]: f["split"] for f in info["top_features"]}
    assert by_idx == {k: int(v) for k, v in enumerate(split) if v > 0}
    # the hand count from the dump agrees with the table
    assert np.array_equal(_split_counts(info["dump"], booster.n_features), split)
    assert info["dump"].count("\ntree ") + 1 == n * booster.n_outputs

    rc, out, err = run(["inspect", path, "--iteration", 1], capsys)
    assert rc == 0, err
    assert "(first 1 rounds)" not in out
    assert "(first round)" in out


def test_cli_iteration_out_of_range_names_the_flag(stopped, capsys):
    booster, path = stopped
    n = booster.n_iterations
    rc, _, err = run(["inspect", path, "--iteration", n + 1], capsys)
    assert_one_line_error(rc, err, f"--iteration {n + 1}", str(path), f"0..{n}")


def test_cli_dump_marks_the_rounds_past_the_best(stopped, capsys):
    """``inspect --dump`` of an early-stopped model printed every tree after a table of
    the first best_iteration rounds, with nothing to say where those rounds end: a hand
    count over the dump disagreed with the table."""
    booster, path = stopped
    best, n_out = booster.best_iteration, booster.n_outputs
    rc, out, err = run(["inspect", path, "--dump"], capsys)
    assert rc == 0, err
    dump = out[out.index("tree 0 (") :]
    kept, _, rest = dump.partition(f"tree {best * n_out} (")
    assert rest, "the trees past the best are still dumped"
    marker = kept.rstrip("\n").splitlines()[-1]
    assert marker.startswith("# ")
    assert f"after the best iteration {best}" in marker
    kept = "\n".join(kept.splitlines()[:-1])
    split = feature_importance(booster, "split")
    assert np.array_equal(_split_counts(kept, booster.n_features), split)
    # the JSON dump stays the plain dump_text
    rc, out, err = run(["inspect", path, "--dump", "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)["dump"] == dump_text(booster)


def test_model_summary_iteration(stopped):
    booster, _ = stopped
    n = booster.n_iterations
    info = model_summary(booster, top=100, importance_type="split", iteration=n)
    assert info["importance_iterations"] == n
    split = feature_importance(booster, "split", iteration=n)
    assert [f["split"] for f in info["top_features"]] == sorted(split[split > 0], reverse=True)
    assert model_summary(booster)["importance_iterations"] == booster.best_iteration
    with pytest.raises(ValueError, match=r"iteration=2\.5"):
        model_summary(booster, iteration=2.5)


@pytest.mark.parametrize("top", [2.5, True, "3", -1])
def test_model_summary_refuses_a_top_that_is_no_count(stopped, top):
    """``top=2.5`` listed 2 features and ``top=-1`` none, silently (the CLI refuses
    ``--top -1``)."""
    booster, _ = stopped
    with pytest.raises(ValueError, match="top="):
        model_summary(booster, top=top)


def test_cli_one_output_in_the_singular(stopped, tmp_path, capsys):
    """ "trees 5 (5 rounds x 1 outputs)"."""
    X, y, qid = make_ranking(n_queries=8, docs_per_query=6, n_features=3, random_state=0)
    path = tmp_path / "m.json"
    Ranker(n_estimators=1, max_leaf_nodes=3).fit(X, y, qid=qid).save_model(str(path))
    rc, out, err = run(["inspect", path], capsys)
    assert rc == 0, err
    assert "trees       1 (1 round x 1 output)," in out
    _, stopped_path = stopped
    rc, out, err = run(["inspect", stopped_path], capsys)
    assert rc == 0, err
    assert re.search(r"trees       \d+ \(\d+ rounds x 5 outputs\),", out)


def test_plot_importance_iteration(stopped):
    """plot_importance drew the best iteration's importances with no way to draw
    another count (``feature_importance`` takes ``iteration``)."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ltrboost.plot import plot_importance

    booster, path = stopped
    n = booster.n_iterations
    try:
        for it in (None, 1, n):
            ax = plot_importance(path, importance_type="split", iteration=it)
            imp = feature_importance(booster, "split", iteration=it)
            widths = sorted(p.get_width() for p in ax.patches)
            assert widths == sorted(imp[imp > 0])
        with pytest.raises(ValueError, match=f"iteration={n + 1}"):
            plot_importance(booster, iteration=n + 1)
    finally:
        plt.close("all")


def test_importances_match_a_hand_count_for_every_objective(tmp_path):
    """Gain and split totals equal a count over the saved model's JSON trees, up to the
    best iteration, for objectives with several outputs, averaged updates and
    line searches."""
    X, y, qid = make_ranking(n_queries=20, docs_per_query=8, n_features=4, random_state=2)
    Xv, yv, qv = make_ranking(
        n_queries=8, docs_per_query=8, n_features=4, first_qid=20, random_state=3
    )
    for kw in (
        {"objective": "mcrank"},
        {"objective": "gbrank"},
        {"objective": "qbrank"},
        {"objective": "rankboost"},
        {"objective": "yetirank", "split_criterion": "ole"},
    ):
        model = Ranker(n_estimators=12, max_leaf_nodes=4, min_samples_leaf=2, **kw)
        model.fit(X, y, qid=qid, eval_set=[(Xv, yv, qv)], early_stopping_rounds=2)
        path = tmp_path / f"{kw['objective']}.json"
        model.save_model(str(path))
        doc = json.loads(path.read_text())
        booster = load_model(str(path))
        best = booster.best_iteration or booster.n_iterations
        gain, split = np.zeros(4), np.zeros(4)
        for tree in doc["trees"][: best * booster.n_outputs]:
            for k, feature in enumerate(tree["feature"]):
                if tree["left"][k] != -1:  # a split (a leaf's feature is -1)
                    split[feature] += 1
                    gain[feature] += tree["gain"][k]
        assert np.array_equal(booster.feature_importance("split"), split), kw
        assert np.allclose(booster.feature_importance("gain"), gain, rtol=1e-12), kw


@pytest.mark.parametrize("precision", [-1, 2.5, True, "6"])
def test_dump_text_refuses_a_precision_that_is_no_digit_count(stopped, precision):
    """``precision=-1`` failed with "Format specifier missing precision" and 2.5 with
    "Invalid format specifier '.2.5g'", naming no argument."""
    booster, _ = stopped
    with pytest.raises(ValueError, match="precision="):
        dump_text(booster, precision=precision)
    assert dump_text(booster, precision=3) != dump_text(booster)

"""Small defects of inspection, metrics and export messages, adversarially.

1. ``dump_text`` (``ltrboost inspect --dump``, and its ``--json``) indented each node
   by its depth: a 20,001-node chain (a 1 MB model) printed about 100 MB.  The
   indentation stops at :data:`ltrboost.inspection.MAX_DUMP_INDENT` levels, deeper
   lines say their ``depth=``; ``plot_tree`` refuses a tree of more than
   ``max_nodes`` nodes (84 s for the chain) instead of drawing for minutes.
2. A metric error naming a query named its position ("query 0") where the data file
   said ``qid:7``: now the caller's id, else "the 1st query".
3. Scores written as text are refused like features; labels written as text are
   accepted, as ``fit``, ``Ranker.score`` and ``make_scorer`` accept them.
4. The exporters counted feature names from 1 ("feature name 2"); fit and save say
   ``feature_names[1]='name'``: now the exporters do too.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from ltrboost import Ranker
from ltrboost.datasets import make_ranking
from ltrboost.export import ExportError, export_bytes
from ltrboost.inspection import MAX_DUMP_INDENT, dump_text
from ltrboost.metrics import evaluate, get_metric, rank_order
from ltrboost.metrics import precision as precision_module
from ltrboost.model import load_model
from test_cli import assert_one_line_error, run


# --- 1. deep trees in the dump and the plot ---------------------------------------------
def _chain_model(tmp_path, depth: int):
    """A model file whose only tree is a chain of ``depth`` splits (node 2j splits into
    leaf 2j+1 and node 2j+2; the last node is a leaf): 2 * depth + 1 nodes."""
    X, y, qid = make_ranking(n_queries=6, docs_per_query=5, n_features=2, random_state=0)
    model = Ranker(n_estimators=1, max_leaf_nodes=3).fit(X, y, qid=qid)
    path = tmp_path / "chain.json"
    model.save_model(str(path))
    doc = json.loads(path.read_text())
    n = 2 * depth + 1
    split = [k % 2 == 0 and k < n - 1 for k in range(n)]
    doc["trees"] = [
        {
            "output": 0,
            "value": [0.01 * k for k in range(n)],
            "feature": [0 if s else -1 for s in split],
            "threshold": [float(k) if s else None for k, s in enumerate(split)],
            "bin_threshold": [0] * n,
            "missing_left": [1 if s else 0 for s in split],
            "left": [k + 1 if s else -1 for k, s in enumerate(split)],
            "right": [k + 2 if s else -1 for k, s in enumerate(split)],
            "gain": [1.0 if s else 0.0 for s in split],
            "count": [n - k for k in range(n)],
            "sum_hessians": [float(n - k) for k in range(n)],
            "depth": [(k + 1) // 2 for k in range(n)],
        }
    ]
    path.write_text(json.dumps(doc))
    return path


def test_dump_of_a_deep_chain_is_linear_in_its_nodes(tmp_path):
    depth = 2000
    booster = load_model(_chain_model(tmp_path, depth))
    text = dump_text(booster)
    lines = text.splitlines()
    assert len(lines) == 1 + 2 * depth + 1  # the tree's header and every node
    widest = max(len(line) for line in lines)
    assert widest < 2 * MAX_DUMP_INDENT + 120, widest  # the indentation stops
    assert len(text) < 150 * len(lines)  # about 8 MB before
    # nodes within the cap read as before, deeper ones say their depth
    assert lines[1].startswith("0:[f0<=0] yes=1 no=2")
    assert "depth=" not in lines[1]
    shallow = lines[1 + 2 * MAX_DUMP_INDENT]  # node 2 * cap: depth = cap, still indented
    assert shallow.startswith("  " * MAX_DUMP_INDENT + f"{2 * MAX_DUMP_INDENT}:[")
    assert "depth=" not in shallow
    deep = lines[1 + 2 * depth]  # the last leaf, at depth `depth`
    assert deep == "  " * MAX_DUMP_INDENT + f"{2 * depth}:leaf=40 count=1 depth={depth}"


def test_inspect_dump_and_json_of_a_deep_chain_are_bounded(tmp_path, capsys):
    path = _chain_model(tmp_path, 2000)
    rc, out, err = run(["inspect", path, "--dump"], capsys)
    assert rc == 0, err
    lines = out.splitlines()
    dump = lines[lines.index("tree 0 (output 0)") :]
    assert len(dump) == 1 + 2 * 2000 + 1
    assert max(len(line) for line in dump) < 2 * MAX_DUMP_INDENT + 120
    assert dump[-1].endswith("depth=2000")
    rc, out, err = run(["inspect", path, "--dump", "--json"], capsys)
    assert rc == 0, err
    info = json.loads(out)
    assert info["max_depth"] == 2000
    assert max(len(line) for line in info["dump"].splitlines()) < 2 * MAX_DUMP_INDENT + 120
    assert len(out) < 150 * (2 * 2000 + 2) + 5000


def test_plot_tree_refuses_a_tree_over_max_nodes(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ltrboost.plot import plot_tree

    path = _chain_model(tmp_path, 10)  # 21 nodes
    before = plt.get_fignums()  # other tests of the same worker may leave figures open
    try:
        with pytest.raises(ValueError, match=r"tree 0 has 21 nodes, more than max_nodes=20"):
            plot_tree(str(path), max_nodes=20)
        assert plt.get_fignums() == before  # refused before a figure was made
        plot_tree(str(path), max_nodes=21)
        plot_tree(str(path), max_nodes=None)
        for bad in (0, -1, 2.5, True, "10"):
            with pytest.raises(ValueError, match=r"max_nodes="):
                plot_tree(str(path), max_nodes=bad)
    finally:
        plt.close("all")


def test_plot_tree_default_refuses_the_20001_node_chain(tmp_path):
    pytest.importorskip("matplotlib")
    from ltrboost.plot import plot_tree

    path = _chain_model(tmp_path, 10_000)
    with pytest.raises(ValueError, match=r"tree 0 has 20001 nodes.*max_nodes=None"):
        plot_tree(str(path))


# --- 2. queries named by their ids ------------------------------------------------------
LETOR = "".join(
    f"{k % 2} qid:{q} 1:{0.1 * k:.1f} 2:{1 - 0.1 * k:.1f}\n"
    for q, n in ((3, 4), (7, 20))
    for k in range(n)
)


def _small_pair_limit(monkeypatch):
    # query 7's 100 pairs of different labels (1600 bytes) are over it, query 3's 4 not
    monkeypatch.setattr(precision_module, "_pair_memory_limit", lambda: 16 * 90)


def test_pair_precision_memory_error_names_the_files_qid(tmp_path, capsys, monkeypatch):
    data = tmp_path / "d.txt"
    data.write_text(LETOR)
    model = tmp_path / "m.json"
    rc, _, err = run(["train", data, "-o", model, "--n-estimators", "1", "-q"], capsys)
    assert rc == 0, err
    _small_pair_limit(monkeypatch)
    rc, _, err = run(["eval", model, data, "--metric", "pair_precision"], capsys)
    line = assert_one_line_error(rc, err, "query 7 alone has 100 pairs of 20 documents")
    assert "query 1 " not in line


def test_pair_precision_memory_error_names_the_qid_in_python(monkeypatch):
    X, y, qid = make_ranking(n_queries=4, docs_per_query=6, random_state=0)
    model = Ranker(n_estimators=1).fit(X, y, qid=qid)
    y = np.r_[np.zeros(4), np.tile([0.0, 1.0], 10)]
    qid = np.r_[np.full(4, 3), np.full(20, 7)]
    _small_pair_limit(monkeypatch)
    with pytest.raises(ValueError, match=r"query 7 alone has 100 pairs"):
        model.score(X[:24], y, qid=qid, metric="pair_precision")
    names = np.r_[np.full(4, "a"), np.full(20, "b")]
    with pytest.raises(ValueError, match=r"query b alone has 100 pairs"):
        model.score(X[:24], y, qid=names, metric="pair_precision")


def test_pair_precision_memory_error_without_ids_says_which_query(monkeypatch):
    _small_pair_limit(monkeypatch)
    y = np.r_[np.zeros(4), np.tile([0.0, 1.0], 10)]
    with pytest.raises(ValueError, match=r"the 2nd query \(rows 4 to 23\) alone has 100 pairs"):
        get_metric("pair_precision").bind(y, [0, 4, 24])
    with pytest.raises(ValueError, match=r"the 1st query \(rows 0 to 19\) alone"):
        get_metric("pair_precision").bind(y[4:], [0, 20])


@pytest.mark.parametrize(
    ("q", "words"),
    [(0, "1st"), (1, "2nd"), (2, "3rd"), (3, "4th"), (10, "11th"), (11, "12th"),
     (12, "13th"), (20, "21st"), (21, "22nd"), (110, "111th"), (122, "123rd")],
)  # fmt: skip
def test_query_ordinals(q, words):
    from ltrboost.metrics.base import query_words

    assert query_words(q) == f"the {words} query"


# --- 3. text labels and scores --------------------------------------------------------
def _ranking():
    y = np.array([0.0, 2.0, 1.0, 1.0, 0.0, 3.0])
    scores = np.array([0.5, 0.1, 0.3, 2.0, 1.0, 0.0])
    return y, scores, [0, 3, 6]


@pytest.mark.parametrize(
    "as_text",
    [
        pytest.param(lambda a: a.astype(str), id="str"),
        pytest.param(lambda a: a.astype(bytes), id="bytes"),
        pytest.param(lambda a: a.astype(str).astype(object), id="object-str"),
        pytest.param(lambda a: [str(v) for v in a], id="list"),
    ],
)
def test_scores_written_as_text_are_refused_like_features(as_text):
    y, scores, qo = _ranking()
    metric = get_metric("ndcg@10")
    for call in (
        lambda s: metric(s, y, qo),
        lambda s: metric.per_query(s, y, qo),
        lambda s: metric.bind(y, qo)(s),
        lambda s: evaluate(s, y, qo, "ndcg,pair_precision"),
        lambda s: get_metric("pair_precision").bind(y, qo)(s),
        lambda s: rank_order(s, qo),
    ):
        with pytest.raises(ValueError, match=r"^scores\[0\]=b?'0\.5' is not a number \(scores"):
            call(as_text(scores))


def test_scores_of_numbers_in_an_object_array_are_accepted():
    y, scores, qo = _ranking()
    metric = get_metric("ndcg@10")
    assert metric(scores.astype(object), y, qo) == metric(scores, y, qo)


@pytest.mark.parametrize(
    "as_text",
    [
        pytest.param(lambda a: a.astype(str), id="str"),
        pytest.param(lambda a: a.astype(bytes), id="bytes"),
        pytest.param(lambda a: [str(v) for v in a], id="list"),
    ],
)
def test_labels_written_as_text_are_read_as_fit_and_score_read_them(as_text):
    y, scores, qo = _ranking()
    for name in ("ndcg@10", "err", "map", "pair_precision"):
        metric = get_metric(name)
        assert metric(scores, as_text(y), qo) == metric(scores, y, qo)
    # and Ranker.score / make_scorer, which share the label check, agree
    X, yy, qid = make_ranking(n_queries=5, docs_per_query=6, random_state=0)
    model = Ranker(n_estimators=2).fit(X, yy, qid=qid)
    assert model.score(X, as_text(yy), qid=qid) == model.score(X, yy, qid=qid)


def test_a_label_that_is_no_number_is_refused_naming_it():
    y, scores, qo = _ranking()
    text = y.astype(str)
    text[4] = "high"
    with pytest.raises(ValueError, match=r"y\[4\]='high' is not a number"):
        get_metric("ndcg")(scores, text, qo)


# --- 4. export messages name feature_names[k] -------------------------------------------
def _booster():
    X, y, qid = make_ranking(n_queries=6, docs_per_query=6, n_features=3, random_state=0)
    return Ranker(n_estimators=1, max_leaf_nodes=3).fit(X, y, qid=qid).booster_


@pytest.mark.parametrize(
    ("fmt", "names", "words"),
    [
        ("lightgbm", ["a", "b:c", "d"], r"feature_names\[1\]='b:c' contains ':'"),
        ("xgboost", ["a", "b", "c<d"], r"feature_names\[2\]='c<d' contains '<'"),
        # a space: LightGBM's line of names is split by spaces (expnames: the JSON
        # formats keep it)
        ("lightgbm", ["a", "b c", "d"], r"feature_names\[1\]='b c' contains ' ' \(a space\)"),
        ("solr", ["\ud800", "b", "c"], r"feature_names\[0\]='\\ud800' holds a lone surrogate"),
        (
            "solr",
            ["a", "b", "a"],
            r"feature_names\[2\]='a' appears more than once \(also feature_names\[0\]\)",
        ),
    ],
)
def test_export_messages_name_features_as_fit_does(fmt, names, words):
    with pytest.raises(ExportError, match=words):
        export_bytes(_booster(), fmt, names)


def test_export_message_names_the_models_feature_0_based(tmp_path, capsys):
    booster = _booster()
    booster.feature_names = ["bm25", "page rank", "pr"]
    with pytest.raises(ExportError, match=r"the model's feature_names\[1\]='page rank' contains"):
        export_bytes(booster, "lightgbm")
    path = tmp_path / "m.json"
    booster.save_model(path)
    rc, _, err = run(["export", path, "-f", "lightgbm", "-o", tmp_path / "m.txt"], capsys)
    assert_one_line_error(rc, err, "the model's feature_names[1]='page rank'", "--feature-names")
    names = tmp_path / "names.txt"
    names.write_text("# engine names\nbm25\n\nbm 25x\npr\n")
    rc, _, err = run(
        ["export", path, "-f", "lightgbm", "-o", tmp_path / "m.txt", "--feature-names", names],
        capsys,
    )
    assert_one_line_error(
        rc, err, f"{names}: --format lightgbm: feature_names[1]='bm 25x' (line 4)"
    )


def test_a_name_the_format_refuses_is_named_in_its_names_file(tmp_path, capsys):
    """The format's own name checks (after the names were read) named neither the file
    nor the line; now both, as the checks made while reading the names do."""
    booster = _booster()
    names = tmp_path / "names.txt"
    names.write_text("a\n# the second\nb:c\nd\n")
    with pytest.raises(ExportError, match=rf"^{names}: format 'lightgbm': feature_names\[1\]"):
        export_bytes(booster, "lightgbm", names)
    with pytest.raises(ExportError, match=r"feature_names\[1\]='b:c' \(line 3\) contains"):
        export_bytes(booster, "lightgbm", names)
    path = tmp_path / "m.json"
    booster.save_model(path)
    rc, _, err = run(
        ["export", path, "-f", "lightgbm", "-o", tmp_path / "m.txt", "--feature-names", names],
        capsys,
    )
    assert_one_line_error(
        rc, err, f"{names}: --format lightgbm: feature_names[1]='b:c' (line 3) contains"
    )
    assert not (tmp_path / "m.txt").exists()

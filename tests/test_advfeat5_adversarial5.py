"""Feature names of models trained from LETOR/svmlight text (advfeat5).

A model trained by ``ltrboost train`` on a LETOR file names its features by their LETOR
ids (``f1 .. fN``), as ``ltrboost convert``'s Parquet columns do, so that the model of
the text file and the model of its converted Parquet agree, and so do ``inspect`` and
every export (RankLib's 1-based ids included).  Predictions do not change; model files
of earlier versions (``feature_names: null``) load, score and resume as before.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ltrboost import load_model, load_svmlight, make_dataset, train
from ltrboost.cli import main

FLAGS = ["--n-estimators", "4", "--max-leaf-nodes", "4", "--min-samples-leaf", "3", "--quiet"]
PARAMS = {"n_estimators": 4, "max_leaf_nodes": 4, "min_samples_leaf": 3}


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def letor_file(path, n_queries=30, n_docs=8, seed=0):
    """Five features; LETOR feature 3 (column 2) decides the label, so the first
    split of every tree is on it."""
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(n_queries):
        for _ in range(n_docs):
            x = rng.normal(size=5)
            label = int(x[2] > 0.0) + int(x[2] > 1.0)
            feats = " ".join(f"{j + 1}:{float(x[j])!r}" for j in range(5))
            lines.append(f"{label} qid:{q} {feats}\n")
    path.write_text("".join(lines))
    return path


@pytest.fixture
def cli_model(tmp_path, capsys):
    data = letor_file(tmp_path / "train.txt")
    model = tmp_path / "model.json"
    rc, _, err = run(["train", data, "-o", model, *FLAGS], capsys)
    assert rc == 0, err
    return data, model


def _unnamed_copy(model, path):
    """The model file as an earlier version wrote it: ``feature_names: null``."""
    doc = json.loads(model.read_text())
    doc["feature_names"] = None
    path.write_text(json.dumps(doc))
    return path


def test_letor_data_names_its_columns_by_letor_id(tmp_path):
    d = load_svmlight(letor_file(tmp_path / "t.txt"))
    assert d.feature_names == ["f1", "f2", "f3", "f4", "f5"]
    X, y, qid, comments, lines = d  # still a 5-tuple: unpacking unchanged
    assert X.shape == (240, 5)
    assert y.shape == qid.shape == lines.shape == (240,)
    assert comments is None


def test_cli_model_of_text_and_of_converted_parquet_name_features_alike(cli_model, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    data, model = cli_model
    folder = data.parent / "train.parquet"
    rc, _, err = run(["convert", data, folder, "-q"], capsys)
    assert rc == 0, err
    df = pd.read_parquet(folder)
    features = [c for c in df.columns if c not in ("qid", "label")]
    parquet_model = train(PARAMS, make_dataset(df[features], df["label"], qid=df["qid"]))
    text_model = load_model(str(model))
    assert text_model.feature_names == parquet_model.feature_names == features
    # predictions are those of the same training on the unnamed arrays
    d = load_svmlight(data)
    unnamed = train(PARAMS, make_dataset(d.X, d.y, qid=d.qid))
    assert unnamed.feature_names is None
    np.testing.assert_array_equal(text_model.predict(d.X), unnamed.predict(d.X))
    np.testing.assert_array_equal(text_model.predict(df[features]), unnamed.predict(d.X))


def test_inspect_and_dump_name_the_letor_feature(cli_model, capsys):
    _, model = cli_model
    rc, out, err = run(["inspect", model, "--json", "--dump"], capsys)
    assert rc == 0, err
    info = json.loads(out)
    first_split = re.search(r"\[(f\d+)<=", info["dump"]).group(1)
    assert first_split == "f3"  # LETOR feature 3 decides the labels
    assert "f0" not in info["dump"]


def _walk(node):
    yield node
    for c in node.get("children", []):
        yield from _walk(c)


def test_exports_name_each_split_by_its_ranklib_id(cli_model, tmp_path, capsys):
    """RankLib's 1-based id of a split's feature and the name the other formats give it
    are the same LETOR feature: name ``fK`` is RankLib id ``K``."""
    import xml.etree.ElementTree as ET

    _, model = cli_model
    out = {}
    for fmt in ("ranklib", "xgboost-dump", "solr"):
        rc, text, err = run(["export", model, "-f", fmt, "-o", "-"], capsys)
        assert rc == 0, err
        out[fmt] = text
    root = ET.fromstring(out["ranklib"][out["ranklib"].index("<ensemble>") :])
    ranklib_roots = [int(t.find("split/feature").text) for t in root.iter("tree")]
    dump = json.loads(out["xgboost-dump"])
    dump_roots = [t["split"] for t in dump if "split" in t]
    assert dump_roots == [f"f{k}" for k in ranklib_roots]
    assert set(dump_roots) == {"f3"}
    solr = json.loads(out["solr"])
    assert [f["name"] for f in solr["features"]] == ["f1", "f2", "f3", "f4", "f5"]
    assert [t["root"]["feature"] for t in solr["params"]["trees"]] == dump_roots


def test_old_unnamed_model_file_scores_and_resumes_as_before(cli_model, tmp_path, capsys):
    data, model = cli_model
    old = _unnamed_copy(model, tmp_path / "old.json")
    assert load_model(str(old)).feature_names is None
    preds = {}
    for name, path in (("new", model), ("old", old)):
        rc, out, err = run(["predict", path, data, "-o", "-"], capsys)
        assert rc == 0, err
        preds[name] = out
    assert preds["new"] == preds["old"]
    more = ["--n-estimators", "7", "--max-leaf-nodes", "4", "--min-samples-leaf", "3", "-q"]
    for name, path in (("new", model), ("old", old)):
        rc, _, err = run(["train", data, "-o", tmp_path / f"{name}7.json", "--resume", path, *more],
                         capsys)  # fmt: skip
        assert rc == 0, err
    new7, old7 = load_model(str(tmp_path / "new7.json")), load_model(str(tmp_path / "old7.json"))
    assert new7.feature_names == old7.feature_names == ["f1", "f2", "f3", "f4", "f5"]
    d = load_svmlight(data)
    np.testing.assert_array_equal(new7.predict(d.X), old7.predict(d.X))


def test_resuming_a_model_named_by_a_dataframe_from_text_keeps_its_names(tmp_path, capsys):
    """LETOR text continues a model with other names by position, as before: the
    continued model keeps the model's names."""
    pd = pytest.importorskip("pandas")
    data = letor_file(tmp_path / "train.txt")
    d = load_svmlight(data)
    cols = ["bm25", "tfidf", "pagerank", "len", "age"]
    b = train(PARAMS, make_dataset(pd.DataFrame(d.X, columns=cols), d.y, qid=d.qid))
    b.missing = "zero"
    b.save_model(str(tmp_path / "named.json"))
    more = ["--n-estimators", "6", "--max-leaf-nodes", "4", "--min-samples-leaf", "3", "-q"]
    rc, _, err = run(
        ["train", data, "-o", tmp_path / "m6.json", "--resume", tmp_path / "named.json", *more],
        capsys,
    )
    assert rc == 0, err
    assert load_model(str(tmp_path / "m6.json")).feature_names == cols


def test_validation_file_and_early_stopping_keep_working(tmp_path, capsys):
    data = letor_file(tmp_path / "train.txt")
    # a sparse validation file that never mentions feature 5: read at the training width
    vali = tmp_path / "vali.txt"
    vali.write_text(
        "".join(f"{int(i % 3 == 0)} qid:{i // 4} 1:0.5 3:{(i % 3 == 0) * 1.0}\n" for i in range(40))
    )
    model = tmp_path / "m.json"
    rc, _, err = run(
        ["train", data, "--valid", vali, "--early-stopping-rounds", "2", "-o", model, *FLAGS],
        capsys,
    )
    assert rc == 0, err
    assert load_model(str(model)).feature_names == ["f1", "f2", "f3", "f4", "f5"]
    rc, out, err = run(["eval", model, vali, "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)


def test_checkpoint_resume_keeps_the_letor_names(tmp_path, capsys):
    data = letor_file(tmp_path / "train.txt")
    model = tmp_path / "m.json"
    flags = ["--max-leaf-nodes", "4", "--min-samples-leaf", "3", "-q"]
    rc, _, err = run(
        ["train", data, "-o", model, "--n-estimators", "4", "--checkpoint-every", "2", *flags],
        capsys,
    )
    assert rc == 0, err
    ck = tmp_path / "ck.json"
    b = load_model(str(model))
    assert b.feature_names == ["f1", "f2", "f3", "f4", "f5"]
    b.save_model(str(ck))
    rc, _, err = run(
        ["train", data, "-o", tmp_path / "m6.json", "--resume", ck, "--n-estimators", "6", *flags],
        capsys,
    )
    assert rc == 0, err
    assert load_model(str(tmp_path / "m6.json")).feature_names == b.feature_names

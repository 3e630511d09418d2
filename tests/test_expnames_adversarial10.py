"""Feature names in exported models, tenth adversarial pass.

A model fitted on a DataFrame keeps its columns as feature names ("BM25 title",
"tf-idf(body)", "längd", ...).  Every format refused a name with a space (or any
whitespace, a control character, or an empty name), although most formats can hold
one.  The rule now follows each consumer's grammar (docs/deploy.md, *The feature-name
contract*):

* ``xgboost``: a JSON string; XGBoost's JSON reader decodes ``\\t \\n \\r \\" \\\\`` but
  keeps a ``\\u`` escape as its six characters and refuses ``\\b`` / ``\\f``, so the other
  characters below U+0020 are refused, and ``[ ] <`` as before (XGBoost's DMatrix
  refuses them).
* ``xgboost-dump`` (and the ``_createmodel`` body), ``solr``: JSON strings, escaped, any
  name (the dump still refuses ``[ ] <``).
* ``onnx``: names are metadata only; ``feature_names_json`` holds them as a JSON array
  (``feature_names``, space-joined as before, only when no name is empty or holds
  whitespace: a reader splitting it on spaces would read other names).
* ``ranklib``: positional, names are not written: any name.
* ``lightgbm``: ``feature_names=`` is one space-separated line, and ``dump_model()``
  (what Vespa reads) writes names unescaped into JSON: a space, a line break, another
  control character, an empty name and JSON punctuation are refused, naming the
  character; for a space the message gives LightGBM's own spelling of such a DataFrame
  column (each space becomes ``_``, which is what ``lightgbm.Dataset`` does).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "export"))
import _consumers as C

from ltrboost import Ranker
from ltrboost.cli import main
from ltrboost.export import ExportError, createmodel_body, export_bytes, export_model

pd = pytest.importorskip("pandas")

# names that pandas users have as columns; all distinct, two differ only in case
WILD = [
    "BM25 title",
    "tf-idf(body)",
    "url len",
    "längd",
    'say "hi"',
    "back\\slash",
    "a,b",
    "k=v",
    "c:d",
    "new\nline",
    "tab\there",
    "",
    "BM25",
    "bm25",
    "x" * 5000,
    " lead",
    "trail ",
    "nb\u00a0sp",
    "日本 語",
]
# what LightGBM's text model and its dump_model() JSON hold as written
LIGHTGBM_OK = [
    "tf-idf(body)",
    "längd",
    "k=v",
    "it's",
    "BM25",
    "bm25",
    "x" * 5000,
    "nb\u00a0sp",
    "ideo\u3000space",
    "line\u2028sep",
    "del\x7f",
    "#hash",
]


def _frame(names, n_queries=12, docs=10, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * docs
    X = pd.DataFrame(rng.normal(size=(n, len(names))), columns=names)
    y = (X.iloc[:, 0] > 0).astype(int) + (X.iloc[:, -1] > 0.5).astype(int)
    return X, y.to_numpy(), np.repeat(np.arange(n_queries), docs)


def _fit(names, **kw):
    X, y, qid = _frame(names)
    params = dict(n_estimators=4, max_leaf_nodes=5, min_samples_leaf=3, random_state=0)
    params.update(kw)
    return Ranker(**params).fit(X, y, qid=qid), X


def _f32_tol(ours) -> float:
    return 1e-5 * max(1.0, float(np.max(np.abs(ours))))


def _cli(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _one_line_error(rc, err, *needles):
    assert rc == 2, err
    assert "Traceback" not in err
    lines = err.strip().split("\n")
    assert len(lines) == 1, lines
    assert lines[0].startswith("ltrboost: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


# --- formats that can carry every name ---------------------------------------------------


def test_xgboost_json_carries_dataframe_names_and_predicts_on_the_frame(tmp_path):
    """XGBoost loads the names as written and validates them against the DataFrame."""
    xgb = pytest.importorskip("xgboost")
    r, X = _fit(WILD)
    path = tmp_path / "m.json"
    r.export(path, format="xgboost")
    xb = xgb.Booster(model_file=str(path))
    assert xb.feature_names == WILD
    ours = r.predict(X)
    got = xb.predict(xgb.DMatrix(X))  # validate_features: the frame's columns
    np.testing.assert_allclose(got, ours, rtol=0, atol=_f32_tol(ours))


def test_xgboost_dump_and_createmodel_carry_every_name(tmp_path):
    r, X = _fit([*WILD, "ctl\x01"])
    names = list(X.columns)
    dump = json.loads(export_bytes(r, "xgboost-dump"))
    ours = r.predict(X)
    for float_split in (False, True):  # Vespa's two parsers; OpenSearch's rule too
        got = C.vespa_xgboost_score(dump, names, X.to_numpy(), float_split)
        np.testing.assert_allclose(got, ours, rtol=0, atol=_f32_tol(ours))
    splits = []
    stack = list(dump)
    while stack:
        node = stack.pop()
        if "split" in node:
            splits.append(node["split"])
            stack += node["children"]
    assert set(splits) <= set(names)
    body = json.loads(createmodel_body(r, name="ranker"))
    assert json.loads(body["model"]["model"]["definition"]) == dump
    out, create = tmp_path / "m.dump.json", tmp_path / "create.json"
    export_model(r, out, "xgboost-dump", createmodel=create)
    assert json.loads(out.read_text(encoding="utf-8")) == dump


def test_solr_carries_every_name():
    r, X = _fit([*WILD, "ctl\x01", "nul\x00"])
    body = json.loads(export_bytes(r, "solr", name="ranker"))
    C.solr_check_schema(body)
    assert [f["name"] for f in body["features"]] == list(X.columns)
    ours = r.predict(X)
    got = C.solr_score(body, X.to_numpy())
    np.testing.assert_allclose(got, ours, rtol=0, atol=_f32_tol(ours))


def test_onnx_carries_every_name_as_a_json_array():
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import onnx

    r, X = _fit(WILD)
    data = export_bytes(r, "onnx")
    meta = {p.key: p.value for p in onnx.load_from_string(data).metadata_props}
    assert json.loads(meta["feature_names_json"]) == WILD
    # space-joined, "BM25 title" would read as two names: not written
    assert "feature_names" not in meta
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    got = sess.run(["score"], {"features": X.to_numpy(np.float32)})[0]
    ours = r.predict(X)
    np.testing.assert_allclose(got, ours, rtol=0, atol=_f32_tol(ours))


def test_onnx_plain_names_keep_the_space_joined_key():
    pytest.importorskip("onnx")
    import onnx

    r, _ = _fit(["bm25", "pagerank", "längd"])
    meta = {p.key: p.value for p in onnx.load_from_string(export_bytes(r, "onnx")).metadata_props}
    assert meta["feature_names"] == "bm25 pagerank längd"
    assert json.loads(meta["feature_names_json"]) == ["bm25", "pagerank", "längd"]


def test_ranklib_is_positional_and_takes_any_name():
    r, X = _fit(WILD)
    text = export_bytes(r, "ranklib", assume_no_missing=True).decode()
    assert "BM25 title" not in text
    ours = r.predict(X)
    got = C.ranklib_score(text, X.to_numpy())
    np.testing.assert_allclose(got, ours, rtol=0, atol=_f32_tol(ours))


def test_cli_exports_a_model_whose_names_have_spaces(tmp_path, capsys):
    r, _ = _fit(["BM25 title", "url len", "längd"])
    model = tmp_path / "model.json"
    r.booster_.save_model(model)
    for fmt, out in (("xgboost", "m.json"), ("solr", "m.solr.json"), ("onnx", "m.onnx")):
        if fmt == "onnx":
            pytest.importorskip("onnx")
        rc, _, err = _cli(["export", model, "-f", fmt, "-o", tmp_path / out], capsys)
        assert rc == 0, err
        assert (tmp_path / out).exists()
    body = json.loads((tmp_path / "m.solr.json").read_text(encoding="utf-8"))
    assert [f["name"] for f in body["features"]] == ["BM25 title", "url len", "längd"]


# --- XGBoost: what its JSON reader cannot read back --------------------------------------


@pytest.mark.parametrize(("name", "char"), [("a\x01b", r"'\x01'"), ("a\x08b", r"'\x08'")])
def test_xgboost_refuses_control_characters_its_reader_misreads(name, char):
    r, _ = _fit(["bm25", name])
    with pytest.raises(ExportError) as e:
        export_bytes(r, "xgboost")
    msg = str(e.value)
    assert "\n" not in msg
    assert "format 'xgboost'" in msg
    assert f"the model's feature_names[1]={name!r}" in msg
    assert char in msg
    assert "feature_names=" in msg


def test_xgboost_reads_back_the_control_characters_it_decodes(tmp_path):
    xgb = pytest.importorskip("xgboost")
    names = ["tab\there", "cr\rhere", "new\nline", "del\x7f"]
    r, X = _fit(names)
    path = tmp_path / "m.json"
    r.export(path, format="xgboost")
    xb = xgb.Booster(model_file=str(path))
    assert xb.feature_names == names
    ours = r.predict(X)
    np.testing.assert_allclose(xb.predict(xgb.DMatrix(X)), ours, rtol=0, atol=_f32_tol(ours))


# --- LightGBM: a space-separated line -----------------------------------------------------


def test_lightgbm_carries_what_its_grammar_allows(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    r, X = _fit(LIGHTGBM_OK)
    path = tmp_path / "m.txt"
    r.export(path, format="lightgbm")
    lb = lgb.Booster(model_file=str(path))
    assert lb.feature_name() == LIGHTGBM_OK
    assert lb.dump_model()["feature_names"] == LIGHTGBM_OK  # what Vespa reads
    np.testing.assert_array_equal(lb.predict(X), r.predict(X))


def test_lightgbm_refuses_a_space_and_gives_lightgbms_own_spelling(tmp_path, capsys):
    """LightGBM's own Dataset turns each space of a column name into '_' (with a
    warning); the refusal names that spelling, and the model exported with it
    predicts in LightGBM on the DataFrame with the original columns."""
    lgb = pytest.importorskip("lightgbm")
    names = ["bm25", "BM25 title", "url len"]
    r, X = _fit(names)
    with pytest.raises(ExportError) as e:
        r.export(tmp_path / "m.txt", format="lightgbm")
    msg = str(e.value)
    assert "\n" not in msg
    assert "format 'lightgbm'" in msg
    assert "the model's feature_names[1]='BM25 title'" in msg
    assert "' ' (a space)" in msg
    assert "'BM25_title'" in msg
    assert "feature_names=" in msg
    assert not (tmp_path / "m.txt").exists()
    # the CLI: the same, spelled with its flag, and nothing written
    model = tmp_path / "model.json"
    r.booster_.save_model(model)
    out = tmp_path / "m.txt"
    rc, _, err = _cli(["export", model, "-f", "lightgbm", "-o", out], capsys)
    line = _one_line_error(rc, err, "' ' (a space)", "'BM25_title'", "--feature-names FILE")
    assert "(feature_names=)" not in line
    assert not out.exists()
    # LightGBM's spelling works, and predicts on the original frame
    spelled = tmp_path / "names.txt"
    spelled.write_text("bm25\nBM25_title\nurl_len\n", encoding="utf-8")
    rc, _, err = _cli(
        ["export", model, "-f", "lightgbm", "-o", out, "--feature-names", spelled], capsys
    )
    assert rc == 0, err
    lb = lgb.Booster(model_file=str(out))
    assert lb.feature_name() == ["bm25", "BM25_title", "url_len"]
    np.testing.assert_array_equal(lb.predict(X), r.predict(X))


def test_lightgbm_space_whose_underscore_spelling_is_taken_says_rename():
    """'a b' would be 'a_b' in LightGBM, which another column already is (LightGBM
    itself fails: 'Feature (a_b) appears more than one time')."""
    r, _ = _fit(["a_b", "a b"])
    with pytest.raises(ExportError) as e:
        export_bytes(r, "lightgbm")
    msg = str(e.value)
    assert "feature_names[1]='a b'" in msg
    assert "'a_b'" in msg
    assert "feature_names[0]" in msg
    assert "\n" not in msg


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("new\nline", r"'\n'"),
        ("cr\rhere", r"'\r'"),
        ("tab\there", r"'\t'"),
        ("ctl\x01", r"'\x01'"),
        ("", "is empty"),
    ],
)
def test_lightgbm_refuses_line_breaks_controls_and_empty_names(name, needle, tmp_path):
    r, _ = _fit(["bm25", name])
    target = tmp_path / "m.txt"
    target.write_text("kept\n")
    with pytest.raises(ExportError) as e:
        export_model(r, target, "lightgbm")
    msg = str(e.value)
    assert "\n" not in msg
    assert "format 'lightgbm'" in msg
    assert f"feature_names[1]={name!r}" in msg
    assert needle in msg
    # atomic: the file that was there is kept, nothing else written
    assert target.read_text() == "kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.txt"]


def test_a_refused_name_in_a_names_file_gives_its_line(tmp_path, capsys):
    r, _ = _fit(["a", "b", "c"])
    model = tmp_path / "model.json"
    r.booster_.save_model(model)
    names = tmp_path / "names.txt"
    names.write_text("# engine names\nbm25\n\nurl len\npr\n", encoding="utf-8")
    out = tmp_path / "m.txt"
    rc, _, err = _cli(
        ["export", model, "-f", "lightgbm", "-o", out, "--feature-names", names], capsys
    )
    _one_line_error(rc, err, f"{names}: ", "feature_names[1]='url len' (line 4)", "'url_len'")
    assert not out.exists()
    # the same file is fine for the formats that hold spaces
    rc, _, err = _cli(
        ["export", model, "-f", "xgboost", "-o", tmp_path / "m.json", "--feature-names", names],
        capsys,
    )
    assert rc == 0, err

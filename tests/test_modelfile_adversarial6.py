"""Adversarial pass 6 on reading model files: damaged, hand-edited or foreign files as a
user meets them (empty, truncated, compressed, UTF-16, another library's model).  Each
must load and predict, or fail with one ``ModelFormatError: FILE: problem`` that says
what the file is; the CLI prints it as one line and exits 2.  Every test here failed
before its fix."""

from __future__ import annotations

import bz2
import copy
import gzip
import io
import json
import zipfile

import numpy as np
import pytest

from ltrboost import Ranker, load_model
from ltrboost.datasets import make_ranking
from ltrboost.io.model_json import ModelFormatError
from ltrboost.model import model_from_json
from test_cli import assert_one_line_error, run


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=10, docs_per_query=10, n_features=5, random_state=0)


@pytest.fixture(scope="module")
def model_text(data):
    X, y, qid = data
    m = Ranker(n_estimators=3, max_leaf_nodes=5, min_samples_leaf=3).fit(X, y, qid=qid)
    return json.dumps(m.booster_.to_dict(), separators=(",", ":"))


@pytest.fixture(scope="module")
def data_file(tmp_path_factory, data):
    X, y, qid = data
    path = tmp_path_factory.mktemp("data") / "data.txt"
    with open(path, "w") as f:
        for i in range(len(y)):
            feats = " ".join(f"{j + 1}:{X[i, j]:.6g}" for j in range(X.shape[1]))
            f.write(f"{int(y[i])} qid:{qid[i]} {feats}\n")
    return path


def _fails(path, *needles: str) -> str:
    with pytest.raises(ModelFormatError) as exc:
        load_model(path)
    msg = str(exc.value)
    assert msg.startswith(f"{path}: "), msg
    problem = msg[len(f"{path}: ") :]  # the test's folder name may hold a needle
    for needle in needles:
        assert needle in problem, f"{needle!r} not in {msg!r}"
    return problem


# --------------------------------------------------------------- empty and truncated


@pytest.mark.parametrize("content", [b"", b" \r\n\t\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n \n"])
def test_an_empty_model_file_is_named_empty(tmp_path, content):
    """An empty file (``touch``, a write that never happened, ``> model.json``) was
    "not valid JSON (Expecting value: line 1 column 1 (char 0))"."""
    path = tmp_path / "m.json"
    path.write_bytes(content)
    _fails(path, "not valid JSON", "empty")


def test_empty_model_text_is_named_empty():
    with pytest.raises(ModelFormatError, match=r"^m\.json: not valid JSON: .*empty"):
        model_from_json("  \n", path="m.json")


@pytest.mark.parametrize("cut", [1, 100, 0.5, -1])
def test_a_truncated_model_file_says_it_ends_early(tmp_path, model_text, cut):
    """A copy cut short read as "not valid JSON (Expecting ',' delimiter: line 1 column
    1841 (char 1840))": nothing said that the file simply ends there."""
    k = int(len(model_text) * cut) if isinstance(cut, float) else cut
    path = tmp_path / "m.json"
    path.write_text(model_text[:k])
    _fails(path, "not valid JSON", "ends before the JSON does", "truncated")


def test_a_model_cut_inside_a_string_says_it_ends_early(tmp_path, model_text):
    k = model_text.index('"objective"') + 5  # inside the key
    path = tmp_path / "m.json"
    path.write_text(model_text[:k])
    _fails(path, "ends before the JSON does")


def test_a_syntax_error_inside_the_file_is_not_called_truncated(tmp_path, model_text):
    path = tmp_path / "m.json"
    path.write_text(model_text.replace('"n_outputs":1', '"n_outputs":1,,', 1))
    msg = _fails(path, "not valid JSON")
    assert "truncated" not in msg


# ------------------------------------------------------------ compressed and encodings


def _zip(raw: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("model.json", raw)
    return out.getvalue()


@pytest.mark.parametrize(
    ("kind", "pack"),
    [("gzip", gzip.compress), ("bzip2", bz2.compress), ("zip", _zip)],
)
def test_a_compressed_model_is_named_as_such(tmp_path, model_text, kind, pack):
    """``model.json.gz`` read as "not UTF-8 text (byte 0x8b at offset 1; ... another
    encoding?)" and a zip (whose first bytes are ASCII) as "byte 0xbf at offset 16"."""
    path = tmp_path / "m.json.x"
    path.write_bytes(pack(model_text.encode()))
    _fails(path, f"{kind}-compressed", "decompress it first")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_utf16_model_is_named_as_such(tmp_path, model_text, encoding):
    """A model saved by an editor (or PowerShell's ``>``) as UTF-16: with a byte order
    mark "not UTF-8 text (byte 0xff at offset 0 ...)", without one "not valid JSON
    (Expecting property name enclosed in double quotes: line 1 column 2)"."""
    path = tmp_path / "m.json"
    path.write_bytes(model_text.encode(encoding))
    name = encoding.upper()[:6]
    _fails(path, f"{name} text", "save it as UTF-8")


def test_a_binary_file_with_nul_bytes_after_a_brace_is_named_binary(tmp_path):
    """XGBoost's UBJSON model starts with ``{`` and holds NUL bytes: "not valid JSON
    (Expecting property name ...)"."""
    path = tmp_path / "m.ubj"
    path.write_bytes(b"{L\x00\x00\x00\x00\x00\x00\x00\x07learner{" + b"\x00" * 40)
    _fails(path, "NUL byte at offset 2", "binary")


def test_not_utf8_far_into_the_file_names_its_byte_offset(tmp_path, model_text):
    """The offset of a byte that is not UTF-8 was counted from the start of the text
    decoder's chunk, not of the file: beyond the first 64 KiB it pointed elsewhere."""
    d = json.loads(model_text)
    d["evals_result"] = {"v": {"ndcg@10": [0.5] * 3}}
    d["feature_names"] = ["x" * 70_000, "b", "c", "d", "\u00e9"]
    text = json.dumps(d, ensure_ascii=False)
    path = tmp_path / "m.json"
    path.write_bytes(text.encode("latin-1"))
    offset = text.index("\u00e9")
    assert offset > 70_000
    _fails(path, f"not UTF-8 text (byte 0xe9 at offset {offset};")


# ---------------------------------------------------------- other libraries' models


def _lightgbm_json() -> dict:
    return {
        "name": "tree",
        "version": "v4",
        "num_class": 1,
        "num_tree_per_iteration": 1,
        "max_feature_idx": 4,
        "objective": "lambdarank",
        "feature_names": ["a", "b", "c", "d", "e"],
        "tree_info": [{"tree_index": 0, "num_leaves": 1, "tree_structure": {"leaf_value": 0}}],
    }


def _xgboost_json() -> dict:
    return {
        "learner": {"gradient_booster": {"name": "gbtree"}, "objective": {"name": "rank:ndcg"}},
        "version": [2, 0, 3],
    }


@pytest.mark.parametrize(
    ("content", "name"),
    [
        (json.dumps(_lightgbm_json()), "a LightGBM model"),
        (json.dumps(_xgboost_json()), "an XGBoost model"),
        ("tree\nversion=v4\nnum_class=1\n", "a LightGBM model"),
        ('[{"nodeid": 0, "depth": 0, "split": "f0", "split_condition": 0.5}]', "an XGBoost model"),
        ("## LambdaMART\n## No. of trees = 3\n<ensemble>\n", "a RankLib model"),
    ],
    ids=["lightgbm-json", "xgboost-json", "lightgbm-text", "xgboost-dump", "ranklib"],
)
def test_another_librarys_model_is_named_as_such(tmp_path, content, name):
    """Another library's model (or ltrboost's own export, given back to ``predict``) was
    "missing 'format'", or for a text model "a data file given as the model?"."""
    path = tmp_path / "m.txt"
    path.write_text(content)
    msg = _fails(path, "not an ltrboost model", name)
    assert "data file" not in msg


def test_a_solr_ltr_model_is_named_as_such(tmp_path, model_text):
    booster = model_from_json(model_text)
    path = tmp_path / "solr.json"
    booster.export(str(path), "solr")
    _fails(path, "not an ltrboost model", "a Solr LTR model")


def test_cli_names_a_foreign_model_in_one_line(tmp_path, data_file, capsys):
    path = tmp_path / "lgb.json"
    path.write_text(json.dumps(_lightgbm_json()))
    for argv in (
        ["predict", path, data_file],
        ["eval", path, data_file],
        ["inspect", path],
        ["export", path, "-f", "lightgbm", "-o", tmp_path / "out.txt"],
    ):
        rc, _, err = run(argv, capsys)
        line = assert_one_line_error(rc, err, f"{path}: ")
        assert "a LightGBM model" in line.split(f"{path}: ", 1)[1]
    assert not (tmp_path / "out.txt").exists()


def test_cli_names_an_empty_or_compressed_model(tmp_path, data_file, model_text, capsys):
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    packed = tmp_path / "m.json.gz"
    packed.write_bytes(gzip.compress(model_text.encode()))
    for path, needle in ((empty, "empty"), (packed, "gzip-compressed")):
        for argv in (["predict", path, data_file], ["inspect", path]):
            rc, _, err = run(argv, capsys)
            line = assert_one_line_error(rc, err, f"{path}: ")
            assert needle in line.split(f"{path}: ", 1)[1]


# ------------------------------------------------------------------ tree structure


def test_a_child_pointing_back_at_the_root_is_named_a_cycle(tmp_path, model_text):
    """``left: 0`` (a node whose child is the root) said "child 0 points outside the
    tree", which 0 does not."""
    d = json.loads(model_text)
    t = copy.deepcopy(d["trees"][0])
    inner = [k for k, f in enumerate(t["feature"]) if f >= 0]
    t["left"][inner[-1]] = 0
    d["trees"][0] = t
    path = tmp_path / "m.json"
    path.write_text(json.dumps(d))
    _fails(path, f"tree 0 node {inner[-1]}: child 0 is the root", "cycle")


def test_foreign_hints_leave_valid_models_alone(tmp_path, model_text, data):
    """The checks above run on the file's start and on failures only."""
    X, _, _ = data
    path = tmp_path / "m.json"
    path.write_text("\ufeff\n" + model_text, encoding="utf-8")
    expected = model_from_json(model_text).predict(X)
    np.testing.assert_array_equal(load_model(path).predict(X), expected)


def test_a_model_cut_anywhere_says_it_ends_early(model_text):
    """A cut inside a number (``1.``, ``-``, ``2e``) was "Expecting ',' delimiter" or
    "Expecting value" at the file's last character, not called truncated."""
    for k in range(1, len(model_text)):
        with pytest.raises(ModelFormatError) as exc:
            model_from_json(model_text[:k], path="m.json")
        assert "ends before the JSON does" in str(exc.value), (k, model_text[k - 20 : k])


def test_text_after_the_model_is_not_called_truncated(model_text):
    for tail in ("-", "1.", "}", "n"):
        with pytest.raises(ModelFormatError, match="Extra data") as exc:
            model_from_json(model_text + tail, path="m.json")
        assert "truncated" not in str(exc.value)


def test_a_model_cut_inside_an_escaped_name_says_it_ends_early(model_text):
    """Names outside ASCII are written as \\uXXXX escapes (a pair for one beyond the
    BMP); a cut inside one read as "Invalid \\uXXXX escape"."""
    d = json.loads(model_text)
    d["feature_names"] = ["prix_\u00e9t\u00e9", "\U0001f600", "c", "d", "e"]
    text = json.dumps(d)
    i = text.index('"feature_names"')
    for k in range(i, text.index("]", i)):
        with pytest.raises(ModelFormatError, match="ends before the JSON does"):
            model_from_json(text[:k], path="m.json")


@pytest.mark.parametrize("value", [0.0, "0", True, None])
def test_a_tree_output_that_is_no_integer_is_named_so(tmp_path, model_text, value):
    """``"output": 0.0`` (or "0", true, absent) said "output 0.0 is out of range"."""
    d = json.loads(model_text)
    d["trees"][1]["output"] = value
    path = tmp_path / "m.json"
    path.write_text(json.dumps(d))
    _fails(path, f"tree 1: output {value!r} is not an integer")

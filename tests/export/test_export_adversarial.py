"""Exports of unusual models and arguments (an adversarial pass over export): names the
consumers would read differently, values float32 cannot hold, second outputs."""

from __future__ import annotations

import json
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import _consumers as C
from test_export import _hand_tree

from ltrboost import Booster
from ltrboost.cli import main
from ltrboost.export import FORMATS, ExportError, export_bytes


def hand_model(threshold=0.5, values_scale=1.0, init=0.0, names=None) -> Booster:
    tree = _hand_tree(threshold, 1)
    tree["value"] *= values_scale
    return Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([init]),
        trees=[tree, _hand_tree(0.5, 0, 1)],
        tree_outputs=[0, 0],
        n_features=2,
        feature_names=names,
    )


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


# --- feature names -------------------------------------------------------------------


def test_xgboost_reads_non_ascii_feature_names_as_written(tmp_path):
    """XGBoost's JSON reader keeps a ``\\u00e9`` escape as the six characters: a name
    like 'prix_é' came back as 'prix_\\u00e9', so a DMatrix (or an OpenSearch feature
    set, ``model/xgboost+json+raw``) with the real name no longer matched."""
    xgb = pytest.importorskip("xgboost")
    names = ["prix_é", "日本_bm25"]
    b = hand_model(names=names)
    path = tmp_path / "m.json"
    b.export(path, format="xgboost")
    bx = xgb.Booster(model_file=str(path))
    assert bx.feature_names == names
    X = np.array([[0.0, 1.0], [2.0, 0.25], [np.nan, 0.75]])
    got = bx.predict(xgb.DMatrix(X, feature_names=names, missing=np.nan))
    np.testing.assert_allclose(got, b.predict(X), rtol=1e-6)


def test_lightgbm_dump_model_keeps_the_feature_names(tmp_path):
    """Vespa reads LightGBM's ``dump_model()`` JSON, which writes names unescaped: a
    backslash began an escape there ('a\\b' came back as 'a\\x08'), so the export
    refuses it; other punctuation, non-ASCII and Vespa feature syntax survive."""
    lgb = pytest.importorskip("lightgbm")
    with pytest.raises(ExportError, match=r"feature_names\[0\]='tf\\\\bm25'"):
        export_bytes(hand_model(), "lightgbm", ["tf\\bm25", "x"])
    names = ["attribute(popularity)", "prix_é/été'"]
    path = tmp_path / "m.txt"
    hand_model().export(path, format="lightgbm", feature_names=names)
    assert lgb.Booster(model_file=str(path)).dump_model()["feature_names"] == names


@pytest.mark.parametrize("fmt", FORMATS)
def test_control_characters_in_feature_names(fmt):
    """A control character (here \\x01) is written as a ``\\u0001`` escape that XGBoost
    reads literally, and LightGBM's dump_model() JSON would hold it raw: both refuse
    it.  The other formats keep it (Solr's and OpenSearch's JSON readers decode the
    escape; RankLib and ONNX are positional)."""
    b = hand_model()
    if fmt in ("lightgbm", "xgboost"):
        with pytest.raises(ExportError, match=r"feature_names\[1\]='a\\x01b' contains '\\x01'"):
            export_bytes(b, fmt, ["x", "a\x01b"])
    else:
        if fmt == "onnx":
            pytest.importorskip("onnx")
        kw = {"assume_no_missing": True} if fmt == "ranklib" else {}
        export_bytes(b, fmt, ["x", "a\x01b"], **kw)


def test_feature_names_file_with_a_bom(tmp_path):
    """A names file saved with a UTF-8 BOM (Windows editors) gave the first feature the
    name '\\ufeffbm25': no engine feature has that name."""
    names = tmp_path / "names.txt"
    names.write_bytes("bm25\r\npagerank\r\n".encode("utf-8-sig"))
    body = json.loads(export_bytes(hand_model(), "solr", names))
    assert [f["name"] for f in body["features"]] == ["bm25", "pagerank"]


def test_feature_names_file_not_utf8_names_the_file(tmp_path, capsys):
    model = tmp_path / "model.json"
    hand_model().save_model(model)
    names = tmp_path / "names.txt"
    names.write_bytes(b"bm25\nprix_\xe9\n")  # Latin-1
    rc, _, err = run(
        ["export", model, "-f", "lightgbm", "-o", tmp_path / "m.txt", "--feature-names", names],
        capsys,
    )
    assert rc == 2
    assert err.count("\n") == 1
    assert str(names) in err
    assert "UTF-8" in err
    assert not (tmp_path / "m.txt").exists()


# --- values float32 cannot hold --------------------------------------------------------


@pytest.mark.parametrize("fmt", ["xgboost", "xgboost-dump", "solr", "ranklib", "onnx"])
@pytest.mark.parametrize("where", ["leaf", "init"])
def test_values_beyond_float32_are_refused_by_float32_formats(fmt, where):
    """A leaf value (or initial score) beyond float32's range became Infinity: XGBoost's
    files were not JSON any more, ONNX / Solr / RankLib scored +-inf."""
    b = hand_model(values_scale=1e39) if where == "leaf" else hand_model(init=-5e38)
    with pytest.raises(ExportError, match="float32") as e:
        export_bytes(b, fmt, assume_no_missing=True)
    assert "\n" not in str(e.value)
    # LightGBM keeps float64 values: exported as they are
    lightgbm_text = export_bytes(b, "lightgbm").decode()
    assert not re.search(r"\binf\b|infinity", lightgbm_text.lower())


def test_thresholds_at_minus_float32_max_export_without_warnings():
    """A threshold at (or just below) -FLT_MAX gave NumPy 'overflow encountered in
    nextafter' warnings, printed by ``ltrboost export`` as 'ltrboost: warning:' lines."""
    from ltrboost.export import Float32RangeWarning

    for t in (-3.4028234663852886e38, -3.40282347e38, -1e39):
        b = hand_model(threshold=t)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            # -1e39 is beyond float32's range: that one warning is the point (the
            # float32 consumers read -5e38 as -inf, left of it; ltrboost sends it right)
            warnings.simplefilter("ignore", Float32RangeWarning)
            for fmt in FORMATS:
                export_bytes(b, fmt, assume_no_missing=True)


# --- outputs ---------------------------------------------------------------------------


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "model.json"
    hand_model().save_model(path)
    return path


@pytest.mark.parametrize("createmodel", ["DIR", "NODIR/c.json", "OUT"])
def test_cli_createmodel_error_leaves_no_model_written(model_file, tmp_path, capsys, createmodel):
    """``--createmodel`` naming a directory or a missing folder failed after the model
    had been written (an error left a file behind); naming the output itself replaced
    the exported dump with the request body, silently."""
    out_dir = tmp_path / "out"
    (out_dir / "DIR").mkdir(parents=True)
    out = out_dir / "dump.json"
    rc, stdout, err = run(
        ["export", model_file, "-f", "xgboost-dump", "-o", out,
         "--createmodel", out_dir / createmodel.replace("OUT", "dump.json")],
        capsys,
    )  # fmt: skip
    assert rc == 2
    assert stdout == ""
    assert err.count("\n") == 1
    assert err.startswith("ltrboost: error: ")
    assert sorted(p.name for p in out_dir.iterdir()) == ["DIR"]
    out.write_text("previous")
    rc, _, err = run(
        ["export", model_file, "-f", "xgboost-dump", "-o", out, "--createmodel", out], capsys
    )
    assert rc == 2
    assert "same file" in err
    assert out.read_text() == "previous"


def test_export_model_writes_both_files_or_neither(tmp_path, monkeypatch):
    """A full disk while writing the second file leaves the first untouched."""
    import errno

    import ltrboost.io._atomic as atomic
    from ltrboost.export import export_model

    b = hand_model()
    dump, body = tmp_path / "dump.json", tmp_path / "create.json"
    dump.write_text("previous")
    real_fsync = atomic.os.fsync
    calls = []

    def fsync(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    with pytest.raises(OSError, match="No space left") as e:
        export_model(b, dump, "xgboost-dump", createmodel=body)
    monkeypatch.undo()
    assert e.value.filename == str(body)
    assert dump.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dump.json"]
    export_model(b, dump, "xgboost-dump", createmodel=body)
    definition = json.loads(body.read_text())["model"]["model"]["definition"]
    assert json.loads(definition) == json.loads(dump.read_text())


def test_cli_output_dash_is_stdout(model_file, tmp_path, capsys, monkeypatch):
    """``-o -`` wrote a file named '-' (predict's ``-o -`` is stdout)."""
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(["export", model_file, "-f", "solr", "-o", "-"], capsys)
    assert (rc, err) == (0, "")
    assert json.loads(out) == json.loads(export_bytes(hand_model(), "solr", name="ltrboost"))
    assert not (tmp_path / "-").exists()
    rc, out, err = run(
        ["export", model_file, "-f", "xgboost-dump", "-o", "-", "--createmodel", "-"], capsys
    )
    assert rc == 2
    assert out == ""
    assert "only one of them" in err


def test_xgboost_json_is_not_written_to_a_ubj_file(tmp_path):
    """XGBoost reads a .ubj file as UBJSON: the JSON written there did not load
    ('Expecting: "L"'); the export says so instead."""
    xgb = pytest.importorskip("xgboost")
    b = hand_model()
    with pytest.raises(ExportError, match=r"m\.ubj: .*\.json file name"):
        b.export(tmp_path / "m.ubj", format="xgboost")
    assert not list(tmp_path.iterdir())
    b.export(tmp_path / "m.json", format="xgboost")
    assert xgb.Booster(model_file=str(tmp_path / "m.json")).num_boosted_rounds() == 2


def test_ranklib_header_stays_comment_lines_for_any_objective_name():
    """A custom objective's name is the function's ``__name__`` (or whatever a model
    file says): a newline in it put a line outside the '##' comments, which RankLib
    parses as part of the XML."""
    b = hand_model()
    b.objective = "custom:two\nlines <ensemble>"
    text = export_bytes(b, "ranklib", assume_no_missing=True).decode()
    header = [ln for ln in text.splitlines() if not ln.lstrip().startswith("<")]
    assert all(ln.startswith("## ") for ln in header), header
    C.ranklib_check_schema(text, 2)

"""``ltrboost export`` and exports of models trained on real data (../shared/data)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import _consumers as C
from test_export import check_all, make_data

from ltrboost import load_model, load_svmlight, make_dataset, train
from ltrboost.cli import main


def run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    X, y, qid = make_data(nan=True)
    b = train(
        {"n_estimators": 3, "max_leaf_nodes": 6, "min_samples_leaf": 5},
        make_dataset(X, y, qid=qid),
    )
    path = tmp_path_factory.mktemp("m") / "model.json"
    b.save_model(str(path))
    return path, X


def test_cli_export_lightgbm_and_xgboost_dump(model_file, tmp_path, capsys):
    lgb = pytest.importorskip("lightgbm")
    path, X = model_file
    names = tmp_path / "names.txt"
    names.write_text("# engine features\n" + "".join(f"doc_f{i}\n" for i in range(6)))
    rc, out, err = run(
        ["export", path, "--format", "lightgbm", "-o", tmp_path / "m.txt",
         "--feature-names", names], capsys
    )  # fmt: skip
    assert (rc, out, err) == (0, "", "")
    ours = load_model(str(path)).predict(X)
    np.testing.assert_allclose(
        lgb.Booster(model_file=str(tmp_path / "m.txt")).predict(X), ours, rtol=1e-12
    )
    rc, out, err = run(
        ["export", path, "--format", "xgboost-dump", "-o", tmp_path / "dump.json",
         "--feature-names", names, "--createmodel", "-", "--name", "my_model"], capsys
    )  # fmt: skip
    assert rc == 0, err
    body = json.loads(out)
    assert body["model"]["name"] == "my_model"
    dump = json.loads((tmp_path / "dump.json").read_text())
    assert json.loads(body["model"]["model"]["definition"]) == dump
    assert {n["split"] for t in dump for n in _walk(t) if "split" in n} <= {
        f"doc_f{i}" for i in range(6)
    }
    rc, _, err = run(
        ["export", path, "-f", "xgboost-dump", "-o", tmp_path / "d2.json",
         "--createmodel", tmp_path / "create.json"], capsys
    )  # fmt: skip
    assert rc == 0, err
    assert json.loads((tmp_path / "create.json").read_text())["model"]["name"] == "d2"


def _walk(node):
    yield node
    for c in node.get("children", []):
        yield from _walk(c)


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--format", "pmml"], "unknown export format 'pmml'"),
        (
            ["--format", "lightgbm", "--feature-names", "NAMES3"],
            "3 feature names given",
        ),
        (["--format", "lightgbm", "--feature-names", "NAMESDUP"], "more than once"),
        (["--format", "lightgbm", "--feature-names", "NOFILE"], "cannot read feature"),
        (["--format", "ranklib"], "assume-no-missing"),
        (["--format", "solr", "--createmodel", "-"], "only for --format xgboost-dump"),
    ],
)
def test_cli_one_line_errors_and_nothing_written(model_file, tmp_path, capsys, extra, needle):
    path, _ = model_file
    (tmp_path / "n3").write_text("a\nb\nc\n")
    (tmp_path / "ndup").write_text("a\nb\nc\nd\ne\na\n")
    subs = {
        "NAMES3": tmp_path / "n3",
        "NAMESDUP": tmp_path / "ndup",
        "NOFILE": tmp_path / "absent",
    }
    extra = [subs.get(a, a) for a in extra]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    rc, out, err = run(["export", path, "-o", out_dir / "m.txt", *extra], capsys)
    assert rc == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("ltrboost: error: ")
    assert needle in err
    assert not list(out_dir.iterdir())


def test_cli_unwritable_output(model_file, tmp_path, capsys):
    path, _ = model_file
    rc, _, err = run(["export", path, "-f", "xgboost", "-o", tmp_path / "nodir" / "m.json"], capsys)
    assert rc == 2
    assert err.count("\n") == 1
    assert "does not exist" in err


# --- real data ------------------------------------------------------------------------


def _real(shared_data_dir, rel, n_features=None, missing="zero", limit_queries=60):
    path = shared_data_dir / rel
    if not path.exists():
        pytest.skip(f"{rel} not available")
    d = load_svmlight(path, n_features=n_features, missing=missing)
    ds = make_dataset(d.X, d.y, qid=d.qid)
    hi = ds.query_offsets[min(limit_queries, ds.n_queries)]
    return np.asarray(d.X[:hi], dtype=np.float32), d.y[:hi], d.qid[:hi]


@pytest.mark.real_data
@pytest.mark.parametrize(
    ("rel", "missing", "objective"),
    [
        ("trec_news/trec_news_2018.train", "nan", "lambdamart"),
        ("trec_news/trec_news_2018.train", "nan", "gbrank"),
        ("MQ2008/Fold1/train.txt", "zero", "lambdamart"),
        ("mslr_tiny/search_tiny_train.txt", "zero", "qbrank"),
    ],
)
def test_real_data_exports(shared_data_dir, tmp_path, rel, missing, objective):
    X, y, qid = _real(shared_data_dir, rel, missing=missing)
    b = train(
        {"objective": objective, "n_estimators": 3, "max_leaf_nodes": 8,
         "min_samples_leaf": 5},
        make_dataset(X, y, qid=qid),
    )  # fmt: skip
    if missing == "nan":  # trec_news: absent features give missing-vs-present splits
        assert np.isnan(X).any()
    check_all(b, X, qid, tmp_path)


@pytest.mark.real_data
def test_real_data_inf_threshold(shared_data_dir, tmp_path):
    """GBRank on trec_news grows splits at +inf (only NaN goes right): the case that
    once broke an export."""
    X, y, qid = _real(
        shared_data_dir, "trec_news/trec_news_2018.train", missing="nan",
        limit_queries=1000,
    )  # fmt: skip
    b = train(
        {"objective": "gbrank", "n_estimators": 30, "max_leaf_nodes": 8,
         "min_samples_leaf": 5},
        make_dataset(X, y, qid=qid),
    )  # fmt: skip
    thresholds = np.concatenate([t["num_threshold"][t["is_leaf"] == 0] for t in b.trees])
    if not np.isinf(thresholds).any():
        pytest.skip("no +inf split grown on this data")
    check_all(b, X, qid, tmp_path)
    assert C  # the evaluators are exercised through check_all


def test_cli_solr_near_zero_threshold_warns_in_one_line(tmp_path, capsys):
    from test_export import _hand_tree

    from ltrboost import Booster

    b = Booster(
        objective="lambdamart",
        objective_params={},
        init_score=np.array([0.0]),
        trees=[_hand_tree(7.39e-8, 1)],
        tree_outputs=[0],
        n_features=2,
    )
    b.save_model(str(tmp_path / "m.json"))
    rc, out, err = run(
        ["export", tmp_path / "m.json", "-f", "solr", "-o", tmp_path / "s.json"], capsys
    )
    assert rc == 0
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("ltrboost: warning: solr: 1 split")
    assert json.loads((tmp_path / "s.json").read_text())["name"] == "s"


def test_cli_ranklib_export_of_a_missing_zero_model_needs_no_flag(model_file, tmp_path, capsys):
    """A model whose file records --missing zero (and no trained_with_nan) never saw a
    missing value: its NaN directions are never used, so RankLib (absent = 0) needs no
    --assume-no-missing."""
    path, _ = model_file
    b = load_model(str(path))
    b.missing = "zero"
    zero = tmp_path / "zero.json"
    b.save_model(str(zero))
    rc, out, err = run(["export", zero, "-f", "ranklib", "-o", tmp_path / "m.xml"], capsys)
    assert (rc, out, err) == (0, "", "")
    assert (tmp_path / "m.xml").read_text().startswith("## LambdaMART")
    flagged = tmp_path / "flagged.xml"
    rc, _, _ = run(["export", path, "-f", "ranklib", "-o", flagged, "--assume-no-missing"], capsys)
    assert rc == 0
    assert flagged.read_text() == (tmp_path / "m.xml").read_text()


def _letor_with_nan(path, nan: bool) -> None:
    """A LETOR file whose feature 1 ranks the documents and is ``nan`` on every third
    document of each query (or absent, which reads as 0, when ``nan`` is False)."""
    rng = np.random.default_rng(7)
    lines = []
    for q in range(40):
        for d in range(12):
            x1 = rng.normal()
            label = int(x1 > 0.3) + int(x1 > 1.0)
            f1 = "" if d % 3 else f" 1:{x1!r}"
            if d % 3 == 0 and nan:
                f1, label = " 1:nan", 2
            elif d % 3 == 0:
                f1, label = "", 2
            lines.append(f"{label} qid:{q}{f1} 2:{rng.normal()!r}\n")
    path.write_text("".join(lines))


def test_cli_ranklib_export_keeps_nan_directions_learned_under_missing_zero(tmp_path, capsys):
    """`nan` values in a --missing zero training file give the trees learned NaN
    directions, which RankLib (no missing values) cannot follow: the model file records
    them, and the RankLib export asks for --assume-no-missing instead of implying it."""
    for nan in (True, False):
        data, model = tmp_path / f"t{nan}.txt", tmp_path / f"m{nan}.json"
        _letor_with_nan(data, nan)
        flags = ["--n-estimators", "3", "--max-leaf-nodes", "4", "--min-samples-leaf", "5"]
        rc, _, err = run(["train", data, "-o", model, "--quiet", *flags], capsys)
        assert rc == 0, err
        doc = json.loads(model.read_text())
        assert doc["missing"] == "zero"
        assert doc.get("trained_with_nan", False) is nan
        assert load_model(str(model)).trained_with_nan is nan
        rc, _, err = run(["export", model, "-f", "ranklib", "-o", tmp_path / "m.xml"], capsys)
        if nan:
            assert rc == 2
            assert "assume-no-missing" in err
            assert not (tmp_path / "m.xml").exists()
            rc, _, err = run(
                ["export", model, "-f", "ranklib", "-o", tmp_path / "m.xml", "--assume-no-missing"],
                capsys,
            )
        assert rc == 0, err
        (tmp_path / "m.xml").unlink()


def test_trained_with_nan_round_trips_and_must_be_a_bool(model_file, tmp_path):
    path, _ = model_file
    b = load_model(str(path))
    assert b.trained_with_nan is False
    assert "trained_with_nan" not in json.loads(path.read_text())
    b.trained_with_nan = True
    out = tmp_path / "nan.json"
    b.save_model(str(out))
    assert load_model(str(out)).trained_with_nan is True
    doc = json.loads(out.read_text())
    doc["trained_with_nan"] = 1
    out.write_text(json.dumps(doc))
    from ltrboost.io.model_json import ModelFormatError

    with pytest.raises(ModelFormatError, match="trained_with_nan must be true or false"):
        load_model(str(out))

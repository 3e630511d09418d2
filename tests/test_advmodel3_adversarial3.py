"""Adversarial pass 3 on model files, loading and prediction: every bug found here has a
test that failed before its fix."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from ltrboost import Ranker, load_model
from ltrboost.datasets import make_ranking
from ltrboost.io.model_json import ModelFormatError
from ltrboost.model import Booster, model_from_json

HUGE = 10**400  # a JSON integer beyond the float range


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=20, docs_per_query=10, n_features=5, random_state=0)


@pytest.fixture(scope="module")
def model_doc(data):
    X, y, qid = data
    m = Ranker(n_estimators=3, max_leaf_nodes=5, min_samples_leaf=3).fit(X, y, qid=qid)
    return m.booster_.to_dict()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.__setitem__("init_score", [HUGE]),
        lambda d: d.__setitem__("evals_result", {"v": {"ndcg@10": [HUGE]}}),
        lambda d: d["params"].__setitem__("learning_rate", HUGE),
        lambda d: d["params"].__setitem__("random_state", HUGE),
        lambda d: d["params"].__setitem__("label_scale", {"1": HUGE}),
        lambda d: d["trees"][0]["value"].__setitem__(1, HUGE),
        lambda d: d["trees"][0]["threshold"].__setitem__(0, HUGE),
        lambda d: d["trees"][0]["gain"].__setitem__(0, -HUGE),
    ],
    ids=[
        "init_score",
        "evals_result",
        "learning_rate",
        "random_state",
        "label_scale",
        "leaf value",
        "threshold",
        "gain",
    ],
)
def test_integer_beyond_float_range_is_a_format_error(model_doc, mutate):
    # `1` and 400 zeros is a JSON integer: math.isfinite raised OverflowError (a
    # traceback from `ltrboost predict`) instead of the promised "no number may
    # overflow to infinity" ModelFormatError naming the file
    d = copy.deepcopy(model_doc)
    mutate(d)
    with pytest.raises(ModelFormatError, match=r"m\.json: .*(float range|finite|unsupported)"):
        model_from_json(json.dumps(d), path="m.json")
    with pytest.raises(ModelFormatError, match=r"m\.json: "):
        Booster.from_dict(d, path="m.json")


def test_cli_predict_names_huge_integer_in_model(tmp_path, model_doc, data, capsys):
    from ltrboost.cli import main

    d = copy.deepcopy(model_doc)
    d["init_score"] = [HUGE]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(d))
    X, _, _ = data
    rows = tmp_path / "d.txt"
    rows.write_text("".join(f"0 qid:1 1:{X[i, 0]}\n" for i in range(3)))
    assert main(["predict", str(path), str(rows)]) != 0
    assert "m.json: not valid JSON (number 1000" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", ["/", "/.", "/.."])
def test_save_model_to_path_ending_in_slash_is_refused(tmp_path, model_doc, suffix):
    # realpath dropped the trailing '/': save_model("model.json/") replaced model.json,
    # save_model("out/") wrote a file named "out"; open() refuses both
    b = Booster.from_dict(model_doc)
    victim = tmp_path / "model.json"
    victim.write_text("precious")
    with pytest.raises(IsADirectoryError, match="give a file name"):
        b.save_model(str(victim) + suffix)
    assert victim.read_text() == "precious"
    with pytest.raises(IsADirectoryError, match="give a file name"):
        b.save_model(str(tmp_path / "out") + "/")
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]


def test_save_model_takes_a_bytes_path_as_load_model_does(tmp_path, model_doc, data):
    # load_model(b"m.json") worked; save_model(b"m.json") failed inside a regex with
    # "cannot use a string pattern on a bytes-like object"
    b = Booster.from_dict(model_doc)
    path = tmp_path / "m.json"
    b.save_model(bytes(path))
    again = load_model(bytes(path))
    X, _, _ = data
    np.testing.assert_array_equal(again.predict(X), b.predict(X))


def test_multi_output_trees_out_of_round_order_are_refused(data):
    # McRank writes one tree per grade per round (outputs 0..K, 0..K, ...) and
    # predict(iteration=k) takes the first k * n_outputs trees; a file with the outputs
    # in another order loaded, and every iteration-limited prediction was silently wrong
    X, y, qid = data
    m = Ranker(objective="mcrank", n_estimators=2, max_leaf_nodes=3, min_samples_leaf=3)
    d = m.fit(X, y, qid=qid).booster_.to_dict()
    n_out = d["n_outputs"]
    assert [t["output"] for t in d["trees"]] == list(range(n_out)) * 2
    d["trees"] = d["trees"][::2] + d["trees"][1::2]  # all of output 0's trees first
    with pytest.raises(ModelFormatError, match=r"m\.json: tree 1: output .*expected 1"):
        model_from_json(json.dumps(d), path="m.json")


def test_mcrank_file_with_one_output_is_refused(data):
    # McRank has K + 1 >= 2 outputs; a file with n_outputs 1 (and no max_label) loaded,
    # then predict failed with "raw_scores has shape (1, n)", naming no file
    X, y, qid = data
    m = Ranker(objective="mcrank", n_estimators=2, max_leaf_nodes=3, min_samples_leaf=3)
    d = m.fit(X, y, qid=qid).booster_.to_dict()
    del d["objective_params"]["max_label"]
    d.update(n_outputs=1, init_score=[0.0], trees=d["trees"][:1])
    with pytest.raises(ModelFormatError, match=r"m\.json: objective 'mcrank' has one output per"):
        model_from_json(json.dumps(d), path="m.json")


def test_gains_adding_up_to_infinity_are_refused(model_doc):
    # each gain finite, their total (feature importance) not: `ltrboost inspect --json`
    # printed "gain": Infinity, "gain_share": NaN, which is not JSON
    d = copy.deepcopy(model_doc)
    d["trees"][0]["gain"][0] = 1e308
    d["trees"][1]["gain"][0] = 1e308
    with pytest.raises(ModelFormatError, match=r"m\.json: split gains add up to a non-finite"):
        model_from_json(json.dumps(d), path="m.json")


def test_predicting_every_iteration_packs_the_trees_once(model_doc, data, monkeypatch):
    # predict(iteration=k) packed the first k rounds anew for every k and kept each:
    # predicting iterations 1..2000 of a 2,000-tree model in turn (a metric curve)
    # took 3.5 GB and a minute; now every tree is packed once and cut by its offsets
    import ltrboost.model as model_module

    d = copy.deepcopy(model_doc)
    d["trees"] = [copy.deepcopy(d["trees"][k % 3]) for k in range(60)]
    b = model_from_json(json.dumps(d))
    X, _, _ = data
    packed_trees = []
    real_pack = model_module.pack_trees

    def counting_pack(trees, outputs):
        packed_trees.append(len(trees))
        return real_pack(trees, outputs)

    monkeypatch.setattr(model_module, "pack_trees", counting_pack)
    staged = [b.predict(X, iteration=k) for k in range(61)]
    assert sum(packed_trees) <= 60
    for k in (0, 1, 17, 60):  # the same scores as a model holding only those rounds
        alone = copy.deepcopy(d)
        alone["trees"] = alone["trees"][:k]
        np.testing.assert_array_equal(staged[k], model_from_json(json.dumps(alone)).predict(X))


def test_sparse_prediction_densifies_only_the_columns_the_trees_read(model_doc, monkeypatch):
    # a sparse X was densified at its full width, 64 MB at a time: with 2,000,000
    # columns a block held 4 rows and 20,000 rows took 47 s; now only the columns a
    # split reads are densified (the same scores)
    import scipy.sparse as sp

    import ltrboost.tree as tree_module

    width = 200_000
    d = copy.deepcopy(model_doc)
    d["n_features"] = width
    for t in d["trees"]:
        t["feature"] = [f if f < 0 else f * 40_000 + 7 for f in t["feature"]]
    b = model_from_json(json.dumps(d))
    rng = np.random.default_rng(0)
    n, k = 40, 400
    rows, cols = rng.integers(0, n, k), rng.integers(0, width, k)
    cols[::2] = rng.choice([7, 40_007, 80_007, 120_007, 160_007], k // 2)
    X = sp.csr_matrix((rng.random(k) * 10, (rows, cols)), shape=(n, width))
    widths = []
    real = tree_module._predict_raw

    def spy(*args):
        widths.append(args[-2].shape[1])
        return real(*args)

    monkeypatch.setattr(tree_module, "_predict_raw", spy)
    scores = b.predict(X)
    assert widths
    assert max(widths) <= 5
    monkeypatch.setattr(tree_module, "_predict_raw", real)
    np.testing.assert_array_equal(scores, b.predict(X.toarray()))


def test_params_objective_contradicting_the_model_is_refused(model_doc):
    # params.objective 'ranknet' (or 'bogus') under objective 'lambdamart' loaded, and
    # Ranker.from_booster gave a Ranker(objective='ranknet') holding lambdamart trees
    d = copy.deepcopy(model_doc)
    d["params"]["objective"] = "ranknet"
    with pytest.raises(ModelFormatError, match=r"m\.json: params: objective 'ranknet' is not"):
        model_from_json(json.dumps(d), path="m.json")

"""Adversarial pass 12 over the OLE split criterion (seed 000) from a user's side:
``split_criterion="ole"`` and the approximate ``ole_top_features=k``, end to end
(objectives, Python API, scikit-learn, the CLI, Dask, resume).  Tests marked "failed
before" failed on the old code; the others pin down behaviour the pass checked and
found right, where no test held it yet."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import ltrboost
from ltrboost.params import ParameterWarning
from test_cli import run


def _letor(path: Path, seed: int = 0, n_queries: int = 20, per: int = 8) -> Path:
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(1, n_queries + 1):
        for _ in range(per):
            x = " ".join(f"{i + 1}:{v:.3f}" for i, v in enumerate(rng.random(4)))
            lines.append(f"{rng.integers(0, 3)} qid:{q} {x} 5:1")  # feature 5 constant
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def letor(tmp_path_factory) -> Path:
    return _letor(tmp_path_factory.mktemp("advole12") / "train.txt")


FLAGS = ["-q", "--min-samples-leaf", "3", "--max-leaf-nodes", "4"]


def _train(letor, out, *flags, n, capsys):
    argv = ["train", letor, *FLAGS, "-o", out, "--n-estimators", str(n), *flags]
    return run(argv, capsys)


# ------------------------------------------------- resume: a k that no round uses


@pytest.mark.parametrize(
    ("first", "again"),
    [
        # a Newton model given --ole-top-features (ignored, with a warning), resumed
        # without it: its rounds and the new ones are the same Newton rounds
        (["--ole-top-features", "3"], []),
        # an OLE model of k=2 resumed with Newton: only --split-criterion differs
        (["--split-criterion", "ole", "--ole-top-features", "2"], ["--split-criterion", "newton"]),
        # gbrank is not pairwise: OLE is its Newton criterion and k is ignored
        (
            ["--objective", "gbrank", "--split-criterion", "ole", "--ole-top-features", "3"],
            ["--objective", "gbrank", "--split-criterion", "ole"],
        ),
    ],
)
def test_resume_does_not_name_an_ole_top_features_no_round_uses(
    letor, tmp_path, capsys, first, again
):
    """README: a flag "the new rounds do not use" is no difference on ``--resume``.
    ``--ole-top-features`` only approximates OLE's pair criterion: with Newton (or an
    objective without pairs, gbrank) it is ignored, yet a resumed run warned
    ``--ole-top-features None (model: 3) differ from the model's``.  Failed before."""
    first_model = tmp_path / "m1.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        rc, _, _ = _train(letor, first_model, *first, n=2, capsys=capsys)
    assert rc == 0
    rc, _, err = _train(
        letor, tmp_path / "m2.json", *again, "--resume", first_model, n=4, capsys=capsys
    )
    assert rc == 0, err
    assert "--ole-top-features" not in err, err


def test_resume_still_names_another_k_of_an_ole_model(letor, tmp_path, capsys):
    """Both runs OLE on a pairwise objective: another k (or exact OLE) continues with
    other trees and is named; the same k is no difference."""
    first = tmp_path / "m1.json"
    ole = ["--split-criterion", "ole"]
    assert _train(letor, first, *ole, "--ole-top-features", "2", n=2, capsys=capsys)[0] == 0
    rc, _, err = _train(letor, tmp_path / "m2.json", *ole, "--resume", first, n=4, capsys=capsys)
    assert rc == 0
    assert "--ole-top-features None (model: 2)" in err
    rc, _, err = _train(
        letor, tmp_path / "m3.json", *ole, "--ole-top-features", "2", "--resume", first,
        n=4, capsys=capsys,
    )  # fmt: skip
    assert rc == 0
    assert "differ" not in err
    # and the continued model is the uninterrupted one, byte for byte
    rc, _, _ = _train(
        letor, tmp_path / "full.json", *ole, "--ole-top-features", "2", n=4, capsys=capsys
    )
    assert rc == 0
    assert (tmp_path / "m3.json").read_bytes() == (tmp_path / "full.json").read_bytes()


# ------------------------------------------- histogram memory of the top-k mode


def _wide(n_queries=30, per=10, n_features=20, n_constant=0, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * per
    X = rng.normal(size=(n, n_features))
    X[:, :n_constant] = 1.0
    y = rng.integers(0, 3, n).astype(float)
    return ltrboost.make_dataset(X, y, qid=np.repeat(np.arange(n_queries), per))


def _need(params: dict, ds) -> int:
    """The bytes of histograms the memory check says ``params`` need on ``ds``."""
    from ltrboost.params import ParameterError

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LTRBOOST_MAX_HISTOGRAM_BYTES", "1")
        with pytest.raises(ParameterError, match="of histograms") as e:
            ltrboost.train(params, ds)
    return int(str(e.value).split(" bytes)")[0].split("(")[-1])


OLE = dict(objective="lambdamart", n_estimators=2, max_leaf_nodes=8, min_samples_leaf=3,
           split_criterion="ole")  # fmt: skip


def test_top_k_below_the_features_keeps_no_pair_histogram_per_leaf(monkeypatch):
    """README: OLE keeps a pair histogram per splittable leaf (for the subtraction
    trick) and 4 more.  ``ole_top_features=k`` below a tree's features never subtracts
    (the grower builds a node's k features afresh), so it holds no histogram per leaf,
    yet the check counted them: a top-k run that fits was refused, its need
    overstated by ``leaves`` histograms.  Failed before."""
    ds = _wide()
    per_hist = 20 * 256 * 3 * 8
    leaves = 8
    exact = _need(OLE, ds)
    assert exact == per_hist * (leaves + 1 + leaves + 4)
    top = _need(dict(OLE, ole_top_features=3), ds)
    assert top == per_hist * (leaves + 1 + 4)
    # between the two: exact OLE is refused, top-k trains
    monkeypatch.setenv("LTRBOOST_MAX_HISTOGRAM_BYTES", str(top))
    ltrboost.train(dict(OLE, ole_top_features=3), ds)
    from ltrboost.params import ParameterError

    with pytest.raises(ParameterError, match="gradient and OLE pair histograms"):
        ltrboost.train(OLE, ds)


@pytest.mark.parametrize(
    ("k", "colsample", "n_constant", "keeps"),
    [
        (20, 1.0, 0, True),  # k at least the features: exact OLE, subtraction on
        (19, 1.0, 0, False),
        (17, 1.0, 3, True),  # 17 columns vary: k=17 is exact OLE
        (16, 1.0, 3, False),
        # 10 of 20 columns a tree, 3 of them possibly constant: a tree may hold 7
        (7, 0.5, 3, True),
        (6, 0.5, 3, False),
        (9, 0.5, 0, False),
        (10, 0.5, 0, True),
    ],
)
def test_top_k_memory_counts_the_kept_histograms_whenever_a_tree_can_subtract(
    k, colsample, n_constant, keeps
):
    """The per-leaf pair histograms are counted whenever some tree's features (after
    ``colsample_bytree``, constant columns left out) can be at most k, where the grower
    subtracts: the check stays an upper bound."""
    ds = _wide(n_constant=n_constant)
    used = 20 - n_constant
    per_hist = used * 256 * 3 * 8
    leaves = 8
    need = _need(dict(OLE, ole_top_features=k, colsample_bytree=colsample), ds)
    assert need == per_hist * (leaves + 1 + (leaves + 4 if keeps else 4))


def test_top_k_trees_that_subtract_are_counted_as_exact_oles():
    """The grower's own rule, checked on the trees: a tree subtracts (keeps pair
    histograms) exactly when k is at least its features."""
    from ltrboost.grower import TreeGrower

    seen = []
    grow = TreeGrower.grow

    def record(self, *args, **kwargs):
        out = grow(self, *args, **kwargs)
        seen.append((len(self._features), self._subtract_pairs))
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(TreeGrower, "grow", record)
        ltrboost.train(
            dict(OLE, ole_top_features=7, colsample_bytree=0.5, n_estimators=12),
            _wide(n_constant=3),
        )
    assert seen
    assert all(sub == (7 >= n) for n, sub in seen)

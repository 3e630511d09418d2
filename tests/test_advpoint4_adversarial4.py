"""Adversarial checks of the pointwise objectives from the user's side (advpoint4)."""

import numpy as np
import pytest

from ltrboost.cli import main
from ltrboost.objectives.logistic_rank import LogisticRank


@pytest.mark.parametrize("text", ["{1: 2}", "[1, 2,]", "{'1': 2}"])
def test_label_scale_text_that_is_not_json_says_so(text):
    # the CLI hands a value that json.loads refuses over as a string; the error named
    # only the accepted types, not that the text was malformed JSON
    with pytest.raises(ValueError, match="not valid JSON"):
        LogisticRank(label_scale=text)


def test_cli_label_scale_not_json_names_flag_and_json(tmp_path, capsys):
    rng = np.random.default_rng(0)
    data = tmp_path / "t.txt"
    lines = []
    for i in range(40):
        x = rng.normal(size=2)
        lines.append(f"{i % 3} qid:{i // 10} 1:{x[0]:.3f} 2:{x[1]:.3f}")
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "m.json"
    rc = main(["train", str(data), "-o", str(out), "--objective", "logistic_rank",
               "--n-estimators", "1", "--label-scale", "{1: 2}"])  # fmt: skip
    assert rc == 2
    err = capsys.readouterr().err
    assert "--label-scale" in err
    assert "JSON" in err
    assert not out.exists()


def test_predict_proba_columns_are_grades_zero_to_k_as_documented():
    # the docstring now promises: column k = grade k, absent grades included, rows sum
    # to 1, expected grade == predict (also under iteration=)
    from ltrboost import Ranker

    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 3))
    qid = np.repeat(np.arange(12), 10)
    y = np.where(X[:, 0] > 0, 3.0, 0.0)  # grades 1 and 2 never occur
    r = Ranker(objective="mcrank", n_estimators=3, random_state=0).fit(X, y, qid=qid)
    for it in (None, 0, 2):
        P = r.predict_proba(X[:7], iteration=it)
        assert P.shape == (7, 4)
        np.testing.assert_allclose(P.sum(axis=1), 1.0)
        np.testing.assert_allclose(P @ np.arange(4), r.predict(X[:7], iteration=it))
    assert (P[:, 1:3] < 1e-3).all()
    assert "Column ``k`` is grade ``k``" in type(r).predict_proba.__doc__

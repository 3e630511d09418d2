"""The public Python API as ``help()`` shows it: every name of ``ltrboost.__all__`` has
its real signature, and every parameter of a public function or method is described
in its docstring (a third adversarial pass)."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ltrboost

SRC = Path(ltrboost.__file__).resolve().parents[1]


def _public_callables():
    """(qualified name, function) for the functions of ``ltrboost.__all__`` and the
    public methods of its classes."""
    for name in ltrboost.__all__:
        obj = getattr(ltrboost, name)
        if inspect.isclass(obj):
            for attr, value in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if isinstance(value, staticmethod | classmethod):
                    value = value.__func__
                if inspect.isfunction(value):
                    yield f"{name}.{attr}", value
        elif callable(obj):
            yield name, obj


@pytest.mark.parametrize("name", ["load_svmlight", "dump_svmlight"])
def test_reader_and_writer_show_their_real_signature(name):
    from ltrboost.io import letor

    # they were wrappers f(*args, **kwargs) with a one-line docstring: help() and
    # IDEs showed none of n_features, missing, na_values, return_comments, zero_based
    assert getattr(ltrboost, name) is getattr(letor, name)
    sig = inspect.signature(getattr(ltrboost, name))
    assert "args" not in sig.parameters
    assert "Parameters" in inspect.getdoc(getattr(ltrboost, name))


def test_import_stays_cheap_with_the_reader_resolved_on_use():
    code = (
        "import sys, json, ltrboost\n"
        "heavy = ('numba', 'sklearn', 'scipy', 'pandas', 'llvmlite')\n"
        "before = sorted(m for m in heavy if m in sys.modules)\n"
        "doc = 'na_values' in ltrboost.load_svmlight.__doc__\n"
        "print(json.dumps({'before': before, 'doc': doc}))"
    )
    env = dict(os.environ, PYTHONPATH=str(SRC))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == {"before": [], "doc": True}


def test_every_public_function_and_method_describes_its_parameters():
    missing = []
    for qual, fn in _public_callables():
        doc = inspect.getdoc(fn) or ""
        if not doc:
            missing.append(f"{qual}: no docstring")
            continue
        for p in inspect.signature(fn).parameters.values():
            if p.name in ("self", "cls") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if not re.search(rf"(?<![\w.]){re.escape(p.name)}(?![\w(])", doc):
                missing.append(f"{qual}({p.name})")
    assert not missing, missing


def test_ranker_parameters_are_each_described():
    from ltrboost.params import BoosterParams

    params_doc = inspect.getdoc(BoosterParams)
    ranker_doc = inspect.getdoc(ltrboost.Ranker)
    undocumented = [
        n
        for n in inspect.signature(ltrboost.Ranker).parameters
        if f"``{n}``" not in params_doc and f"``{n}``" not in ranker_doc
    ]
    assert not undocumented


def test_booster_constructor_takes_the_model_fields():
    # the Booster docstring says its keyword arguments are the model file's fields
    from ltrboost.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=6, docs_per_query=6, n_features=3, random_state=0)
    data = ltrboost.make_dataset(X, y, qid=qid)
    b = ltrboost.train({"n_estimators": 1, "min_samples_leaf": 2}, data)
    assert list(inspect.signature(ltrboost.Booster).parameters) == list(b.model_fields())
    assert "model_fields" in inspect.getdoc(ltrboost.Booster)


def test_load_svmlight_returns_what_its_docstring_names():
    from ltrboost.io.letor import LetorData

    doc = inspect.getdoc(ltrboost.load_svmlight)
    returns = doc[doc.index("Returns") : doc.index("Raises")]
    # "(X, y, qid, comments)" left out ``lines``, which README's example names
    assert f"({', '.join(LetorData._fields)})" in returns


def test_package_docstring_names_every_public_name():
    doc = ltrboost.__doc__
    absent = [n for n in ltrboost.__all__ if n != "__version__" and f"`{n}`" not in doc]
    assert not absent


def test_pairs_ignored_warning_names_the_objectives_that_ignore_pairs():
    from ltrboost.objectives.base import PairsIgnoredWarning

    # yetirank ignores explicit pairs too (it warns), but was not listed
    assert "yetirank" in PairsIgnoredWarning.__doc__ or "every objective but" in (
        PairsIgnoredWarning.__doc__
    )


@pytest.mark.parametrize("given", ["model.json", None, 3])
def test_from_booster_refuses_what_is_not_a_booster(given):
    # a path failed as "'str' object has no attribute 'params'"
    with pytest.raises(TypeError, match=r"from_booster takes a Booster .*load_model"):
        ltrboost.Ranker.from_booster(given)


def test_every_public_property_has_a_docstring():
    undocumented = [
        f"{name}.{attr}"
        for name in ltrboost.__all__
        if inspect.isclass(obj := getattr(ltrboost, name))
        for attr, value in vars(obj).items()
        if not attr.startswith("_") and isinstance(value, property) and not value.__doc__
    ]
    assert not undocumented


def test_ranker_docstring_lists_its_fitted_attributes():
    doc = inspect.getdoc(ltrboost.Ranker)
    public = ["booster_", "n_features_in_", "feature_names_in_"] + [
        a for a, v in vars(ltrboost.Ranker).items() if a.endswith("_") and isinstance(v, property)
    ]
    assert [a for a in public if f"{a} :" not in doc] == []

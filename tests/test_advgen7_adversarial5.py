"""Adversarial pass over the synthetic generators (ltrboost.datasets) and
``ltrboost generate``: label-range bounds, failed calls that leave a caller's
Generator untouched, array-valued query-size ranges."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ltrboost.datasets import make_ranking, make_ranking_mslr_like

_LIMIT_MEMORY = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
"""


@pytest.mark.parametrize("distribution", ["None", "'mslr'", "'uniform'"])
def test_a_huge_max_label_is_refused_at_once(distribution):
    """max_label=2**40 built the default grade distribution one halving at a time in a
    Python list (hours, then all the memory: the call never returned), and 'uniform'
    asked NumPy for 8 TiB ('Unable to allocate', naming no parameter)."""
    code = (
        _LIMIT_MEMORY + "from ltrboost.datasets import make_ranking\n"
        "try:\n"
        f"    make_ranking(3, 4, 5, max_label=2**40, label_distribution={distribution})\n"
        "except ValueError as e:\n"
        "    print('ValueError:', e)\n"
        "except MemoryError as e:\n"
        "    print('MemoryError:', e)\n"
    )
    try:
        res = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail("make_ranking(max_label=2**40) did not return within 60 s")
    assert res.stdout.startswith("ValueError: max_label=1099511627776"), res.stdout + res.stderr
    assert "65535" in res.stdout


def test_the_largest_max_label_still_works():
    y = make_ranking(4, 5, 3, max_label=65535, label_distribution="uniform", random_state=0)[1]
    assert y.max() <= 65535
    assert y.min() >= 0
    with pytest.raises(ValueError, match="max_label=65536"):
        make_ranking(4, 5, 3, max_label=65536)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"noise": -1.0}, "noise=-1.0"),
        ({"missing_rate": 1.0}, "missing_rate=1.0"),
        ({"dtype": np.int32}, "dtype=int32"),
        ({"n_informative": 0}, "n_informative=0"),
        ({"n_informative": 2.5}, "n_informative=2.5"),
        ({"feature_kinds": ["gaussian", "banana", "count"]}, r"feature_kinds\[1\]"),
        ({"feature_kinds": ["gaussian"]}, "feature_kinds has 1 entries"),
        ({"feature_kinds": ["query"] * 3}, "document-level"),
    ],
)
def test_a_refused_call_leaves_the_callers_generator_untouched(kwargs, match):
    """These arguments were checked only after the query sizes and the column order had
    been drawn from random_state: a refused call had advanced the caller's Generator,
    so the corrected call gave other data than the same call made first."""
    gen = np.random.default_rng(7)
    before = gen.bit_generator.state
    with pytest.raises(ValueError, match=match):
        make_ranking(5, (2, 9), 3, random_state=gen, **kwargs)
    assert gen.bit_generator.state == before


def test_checking_first_does_not_change_the_data():
    """The same draws in the same order: the data of a Generator and of its seed agree,
    and a call after a refused one gives what a first call gives."""
    gen = np.random.default_rng(11)
    with pytest.raises(ValueError, match="noise"):
        make_ranking(6, (2, 9), 7, noise=-1.0, random_state=gen)
    a = make_ranking(6, (2, 9), 7, random_state=gen)
    b = make_ranking(6, (2, 9), 7, random_state=11)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("fn", ["make_ranking", "make_ranking_mslr_like"])
def test_docs_per_query_as_a_numpy_pair_or_scalar(fn):
    """A (min, max) range given as a NumPy array was refused with 'must be an integer
    >= 1', though a list or tuple pair is taken; a 0-d array as 'must be an integer'."""
    call = make_ranking if fn == "make_ranking" else make_ranking_mslr_like
    first = 5 if fn == "make_ranking" else 50
    a = call(first, np.array([2, 6]), random_state=3)
    b = call(first, (2, 6), random_state=3)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    a = call(first, np.array(4), random_state=3)
    b = call(first, 4, random_state=3)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    with pytest.raises(ValueError, match=r"must be an int or a \(min, max\) pair"):
        call(first, np.array([[2, 6]]), random_state=3)

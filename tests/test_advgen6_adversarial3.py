"""Adversarial pass over the synthetic generators (ltrboost.datasets) and
``ltrboost generate``."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ltrboost.cli import main
from ltrboost.datasets import make_ranking, make_ranking_mslr_like


def _in_subprocess(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (a segfault must not take pytest down)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        ("make_ranking(4, 2**62, 5, random_state=0)", "docs_per_query"),
        ("make_ranking(3, 2**62, 5, random_state=0)", "docs_per_query"),
        ("make_ranking(2, (2**62, 2**62), 5, random_state=0)", "docs_per_query"),
        ("make_ranking_mslr_like(10, docs_per_query=2**62, random_state=0)", "docs_per_query"),
        ("make_ranking_mslr_like(10, docs_per_query=2**63, random_state=0)", "docs_per_query"),
    ],
)
def test_huge_query_sizes_are_refused_not_a_segfault(call, match):
    """Query sizes whose sum overflows int64 wrapped around: np.repeat then wrote past
    its buffer (a segfault, status 139) or NumPy said 'negative dimensions are not
    allowed' / 'high is out of bounds for int64', naming no argument."""
    code = (
        "from ltrboost.datasets import make_ranking, make_ranking_mslr_like\n"
        "try:\n"
        f"    {call}\n"
        "except ValueError as e:\n"
        "    print('ValueError:', e)\n"
    )
    proc = _in_subprocess(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("ValueError:"), proc.stdout
    assert match in proc.stdout


def test_mslr_like_huge_range_of_sizes_is_cut_to_the_documents():
    """(2**61, 2**62): every query is larger than the documents asked for, so the one
    query holds them all; the sizes' running sum overflowed int64 (a segfault)."""
    proc = _in_subprocess(
        "from ltrboost.datasets import make_ranking_mslr_like\n"
        "X, y, qid = make_ranking_mslr_like(50, docs_per_query=(2**61, 2**62), random_state=0)\n"
        "print(X.shape, qid.max())\n"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["(50,", "136)", "0"]


def test_mslr_like_clipping_leaves_ordinary_draws_unchanged():
    """Sizes above n_samples are cut before the running sum; the data are the same."""
    X, _y, qid = make_ranking_mslr_like(150, random_state=3)  # sizes 20..220 > 150
    assert X.shape == (150, 136)
    # the first drawn size decides: reproduce it from the same generator
    rng = np.random.default_rng(3)
    first = int(rng.integers(20, 220, endpoint=True))
    assert np.bincount(qid)[0] == min(first, 150)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"noise": "1"}, "noise='1'"),
        ({"noise": None}, "noise=None"),
        ({"noise": 1 + 2j}, "noise="),
        ({"noise": True}, "noise=True"),
        ({"noise": 10**400}, "noise="),
        ({"missing_rate": "0.1"}, "missing_rate='0.1'"),
        ({"missing_rate": None}, "missing_rate=None"),
        ({"missing_rate": np.True_}, "missing_rate="),
        ({"random_state": -1}, "random_state=-1"),
        ({"random_state": 1.5}, "random_state=1.5"),
        ({"random_state": "a"}, "random_state='a'"),
        ({"label_distribution": b"mslr"}, "label_distribution="),
        ({"label_distribution": ["a", "b", "c", "d", "e"]}, "label_distribution="),
        ({"label_distribution": [[0.5, 0.5]], "max_label": 1}, "one-dimensional"),
        ({"label_distribution": []}, r"needs 5 \(one per grade\); at least 2$"),
        ({"feature_kinds": None}, "feature_kinds=None"),
        ({"feature_kinds": 5}, "feature_kinds=5"),
        ({"dtype": "banana"}, "dtype='banana'"),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs, match):
    """These raised NumPy's or Python's own TypeError/ValueError ('must be real number,
    not str', "'<=' not supported between 'float' and 'NoneType'", 'expected
    non-negative integer', 'could not convert string to float') naming no parameter;
    noise=True was taken as 1.0; a 2-D label_distribution of 2 entries was told it
    'has 2 entries but max_label=1 needs 2'."""
    with pytest.raises(ValueError, match=match):
        make_ranking(**{"n_queries": 3, "n_features": 5, "random_state": 0, **kwargs})


def test_a_label_distribution_of_huge_weights_is_normalised():
    """(1e308, 1e308, 1, 1, 1) summed to inf: p / inf was all zeros, every quantile cut
    the minimum, and every document got grade 4 (silently) instead of half 0, half 1."""
    _, y, _ = make_ranking(50, 10, 5, label_distribution=[1e308, 1e308, 1, 1, 1], random_state=0)
    freq = np.bincount(y.astype(np.int64), minlength=5) / y.size
    np.testing.assert_allclose(freq, [0.5, 0.5, 0, 0, 0], atol=0.01)


def test_mslr_like_names_a_bad_random_state():
    with pytest.raises(ValueError, match="random_state=-3"):
        make_ranking_mslr_like(10, random_state=-3)


def test_good_numbers_still_accepted():
    a = make_ranking(3, 4, 5, noise=np.float32(0.5), missing_rate=0, random_state=np.int64(7))
    b = make_ranking(3, 4, 5, noise=0.5, missing_rate=0.0, random_state=7)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    make_ranking(3, 4, 5, random_state=np.random.default_rng(0))
    make_ranking(3, 4, 5, random_state=None)
    make_ranking(3, 4, 5, random_state=2**70)


def test_generate_into_a_file_says_it_is_not_a_folder(tmp_path, capsys):
    """`ltrboost generate FILE` printed 'FILE: File exists' (os.makedirs' errno text),
    which does not say what is wrong with it."""
    target = tmp_path / "afile"
    target.write_text("keep\n")
    assert main(["generate", str(target), "--n-queries", "3", "--docs-per-query", "2"]) == 2
    err = capsys.readouterr().err
    assert "is not a folder" in err, err
    assert len(err.strip().splitlines()) == 1
    assert target.read_text() == "keep\n"


def test_generate_into_a_dangling_link_or_an_empty_name(tmp_path, capsys):
    """A dangling symlink gave 'LINK: File exists', an empty name
    "[Errno 2] No such file or directory: ''"."""
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "missing")
    assert main(["generate", str(link), "--n-queries", "3", "--docs-per-query", "2"]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert main(["generate", "", "--n-queries", "3", "--docs-per-query", "2"]) == 2
    assert "folder name is empty" in capsys.readouterr().err


def test_generate_help_says_how_many_queries_vali_and_test_get(tmp_path, capsys):
    """--help said only 'queries in train'; vali.txt and test.txt silently got a third
    as many each."""
    assert main(["generate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "vali.txt and test.txt get a third as many" in text
    folder = tmp_path / "g"
    assert main(["generate", str(folder), "--n-queries", "7", "--docs-per-query", "2"]) == 0
    lines = {n: (folder / n).read_text().count("\n") for n in ("train.txt", "vali.txt", "test.txt")}
    assert lines == {"train.txt": 14, "vali.txt": 4, "test.txt": 4}

"""The first-run helper for the opt-in modes (issue 12 goal 1): ``quantized_gradients``
and ``random_strength`` compile kernels of their own (quantize.py's histogram, gather and
row-sum kernels; the noisy split search), which no manifest profile listed, so a first
``ltrboost train --quantized-gradients 4`` compiled ~2-5 s of them in the foreground
while the helper compiled exact-gradient kernels the run never used.

Each mode is a profile suffix (``train:OBJECTIVE[+ole][+quantized][+noise]``), chosen by
the CLI only when the mode is on; the plain profiles are unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ltrboost
from ltrboost import _warmup
from ltrboost.objectives.registry import available_objectives

SRC = Path(ltrboost.__file__).resolve().parents[1]

QUANTIZED = {
    "_quantize_body",
    "quantized_histogram_body",
    "quantized_histogram_rows_body",
    "packed_sums",
    "exact_row_sums",
    "_gather_packed",
}
EXACT = {"_histogram_body", "_histogram_rows_body", "_gather_body"}
NOISE = {"_noisy_split_body"}


def _own(profile: str) -> list[list[str]]:
    """The profile's entries without the next command's (``later``)."""
    entries = _warmup.load_manifest()[profile]
    return entries[: len(entries) - _warmup.later_count(profile)]


def _names(profile: str) -> set[str]:
    return {e[1] for e in _own(profile)}


@pytest.mark.parametrize(
    ("argv", "profile"),
    [
        (["--quantized-gradients", "4"], "train:lambdamart+quantized"),
        (["--random-strength", "1"], "train:lambdamart+noise"),
        (["--quantized-gradients", "4", "--random-strength", "0.5"],
         "train:lambdamart+quantized+noise"),
        (["--objective", "ranknet", "--random-strength", "1", "--split-criterion", "ole"],
         "train:ranknet+ole+noise"),
        (["--objective", "mart", "--quantized-gradients", "16"], "train:mart+quantized"),
        # off: the plain profile, as before
        (["--quantized-gradients", "0", "--random-strength", "0"], "train:lambdamart"),
    ],
)  # fmt: skip
def test_cli_picks_the_mode_profile(argv, profile) -> None:
    from ltrboost.cli import _background_compile, build_parser

    for command in ("train", "cv"):
        args = build_parser(lazy=False).parse_args([command, "x.txt", *argv])
        assert _background_compile(args).profile == profile, command
        assert profile in _warmup.load_manifest()


def test_command_profile_adds_a_mode_only_when_it_is_on() -> None:
    cp = _warmup.command_profile
    assert cp("train", "ranknet", None, 4, None) == "train:ranknet+quantized"
    assert cp("train", "ranknet", "newton", 0, 0.0) == "train:ranknet"
    assert cp("train", None, None, None, 2.0) == "train:lambdamart+noise"
    assert cp("train", "yetirank", "ole", None, 1.0) == "train:yetirank+ole+noise"
    # pairwise OLE refuses quantised gradients: no such profile (the run stops early)
    assert cp("train", "lambdamart", "ole", 4, None) == "train:lambdamart+ole"
    # a pointwise objective's OLE is its Newton split, quantised as such
    assert cp("train", "mart", "ole", 4, 1.0) == "train:mart+quantized+noise"
    assert cp("eval", None, None, 4, 1.0) == "eval"


def test_mode_profiles_list_the_mode_kernels_for_every_objective() -> None:
    profiles = _warmup.load_manifest()
    for objective in available_objectives():
        base = f"train:{objective}"
        plain = _names(base)
        assert not plain & (QUANTIZED | NOISE), base  # only when the mode is on
        q, n, qn = (_names(base + s) for s in ("+quantized", "+noise", "+quantized+noise"))
        assert q >= QUANTIZED, objective
        assert not q & (EXACT | NOISE), objective
        assert n >= NOISE, objective
        assert not n & (QUANTIZED | {"_best_split_body"}), objective
        assert qn == (q - {"_best_split_body"}) | NOISE, objective
        # the objective's own kernels stay, and so does the next command's tail
        assert plain - EXACT - {"_best_split_body"} <= qn, objective
        for suffix in ("+quantized", "+noise", "+quantized+noise"):
            k = _warmup.later_count(base)
            assert _warmup.later_count(base + suffix) == k
            # (the recorded lambdamart ones in the order of today's eval)
            assert sorted(profiles[base + suffix][-k:]) == sorted(profiles[base][-k:])
    for objective in _warmup.OLE_PROFILE_OBJECTIVES:
        base = f"train:{objective}+ole"
        noisy = _own(base + "+noise")
        assert NOISE <= {e[1] for e in noisy}
        assert "_best_split_body" not in _names(base + "+noise")
        # the OLE split search's argument types (its pair histogram), not the Newton one's
        reference = [e for e in _own("train:lambdamart+ole+noise") if e[1] in NOISE]
        assert [e for e in noisy if e[1] in NOISE] == reference
        assert base + "+quantized" not in profiles


def test_mode_kernels_come_before_the_kernels_they_precede_in_a_run() -> None:
    """The helper compiles a profile last first and meets the command in the middle:
    a mode's kernels sit where a run compiles them (after the objective's gradients,
    before the tree's leaf values), not at an end."""
    for objective in ("ranknet", "mart", "lambdamart"):
        names = [e[1] for e in _own(f"train:{objective}+quantized+noise")]
        leaf = names.index("_add_leaf_values_serial")
        for kernel in QUANTIZED | NOISE:
            assert 5 < names.index(kernel) < leaf, (objective, kernel, names)
        assert names.index("_quantize_body") < names.index("quantized_histogram_body")


def test_warmup_accepts_mode_profiles_and_names_the_suffixes_for_an_unknown_one(capsys) -> None:
    from ltrboost.cli import main

    assert main(["warmup", "train:lambdamart+quantised"]) != 0
    err = capsys.readouterr().err
    assert "unknown profile 'train:lambdamart+quantised'" in err
    assert "+quantized (--quantized-gradients" in err
    assert "+noise (--random-strength)" in err
    assert len(err.splitlines()) == 1


_COMMANDS = """
import json, sys
from ltrboost._numba import compile_stats
from ltrboost.cli import main
assert main(json.loads(sys.argv[1])) == 0
print(compile_stats()["kernels"])
"""


def test_warmed_mode_profile_leaves_a_quantised_noisy_train_nothing_to_compile(
    tmp_path: Path,
) -> None:
    """``ltrboost warmup train:ranknet+quantized+noise`` (a derived profile: the modes
    were recorded on lambdamart) into an empty cache: a quantised, noisy ranknet train
    then compiles nothing, i.e. the profile is what that command compiles."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    env[_warmup.ENV_SWITCH] = "0"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)

    def run(args: list[str]) -> subprocess.CompletedProcess:
        proc = subprocess.run(args, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return proc

    data = tmp_path / "data"
    run([sys.executable, "-m", "ltrboost", "generate", str(data), "--n-queries", "30",
         "--docs-per-query", "12", "--n-features", "6"])  # fmt: skip
    proc = run([sys.executable, "-m", "ltrboost", "warmup", "train:ranknet+quantized+noise"])
    assert "train:ranknet+quantized+noise: " in proc.stderr
    train = [
        "train", str(data / "train.txt"), "--valid", str(data / "vali.txt"), "--objective",
        "ranknet", "--quantized-gradients", "4", "--random-strength", "1", "--n-estimators",
        "5", "--max-leaf-nodes", "31", "--metric", "ndcg@10", "--output",
        str(tmp_path / "m.json"), "--quiet",
    ]  # fmt: skip
    proc = run([sys.executable, "-c", _COMMANDS, json.dumps(train)])
    assert int(proc.stdout.strip().splitlines()[-1]) == 0


# ---------------------------------------------------------------- the quantised gather
def test_quantised_gather_counts_rows_from_zero_without_index_wraparound() -> None:
    """``_gather_packed`` looped ``range(lo, hi)``: from a variable start Numba keeps its
    negative-index wrap-around (a compare and a select per access of the row index) in
    the loop; on slices counted from 0 LLVM drops it (as in the histogram kernels)."""
    import re

    import numba

    from ltrboost import histogram
    from ltrboost._warmup import signature

    (types_text,) = {
        t for _, name, t in _own("train:lambdamart+quantized") if name == "_gather_packed"
    }
    sig = signature(types_text)
    # an uncached copy (kernel's options): a kernel loaded from the cache has no IR to
    # inspect (Numba warns and returns a stub: this test failed once a quantised run had
    # cached the kernel)
    copy = numba.njit(nogil=True, cache=False)(histogram._gather_packed.py_func)
    copy.compile(sig)
    ir = copy.inspect_llvm(sig)
    start = re.search(r"define [^\n]*_gather_packed", ir).start()
    body = ir[start : ir.index("\n}\n", start)]
    assert not re.findall(r"icmp slt i64 %[.\w]+, 0\b", body)


@pytest.mark.parametrize("n", [1000, 300_001])  # serial; threads over blocks of rows
def test_quantised_gather_fills_the_first_n_rows(n) -> None:
    import numpy as np

    from ltrboost.histogram import gather_packed

    rng = np.random.default_rng(n)
    packed = rng.integers(0, 1 << 62, size=n + 17, dtype=np.int64)
    rows = rng.permutation(n + 17)[:n].astype(np.int32)
    out = np.full(n + 5, -1, dtype=np.int64)
    gather_packed(rows, packed, out)
    np.testing.assert_array_equal(out[:n], packed[rows])
    assert (out[n:] == -1).all()

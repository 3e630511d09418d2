"""Two items left by the quantised-gather pass (stop 42).

1. ``python -m ltrboost._warmup --record PROFILE``: the names were split as
   ``train:OBJECTIVE[+...]``, so ``--record eval`` (or ``predict``, or a bare ``train``)
   raised IndexError; and the profiles were mapped to objectives, so ``--record
   train:xendcg`` wrote a manifest of xendcg's profiles and eval/predict alone: every
   other profile was lost (stop 38 recorded xendcg by hand, "other profiles untouched").
2. The exact gather ``_gather_body`` looped ``range(lo, hi)``: from a variable start
   Numba keeps its negative-index wrap-around on every load (the quantised twin
   ``_gather_packed`` was fixed the same way in 0bf0a97).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ltrboost import _warmup


# ---------------------------------------------------------------- --record PROFILE
def _fake_recording(monkeypatch, recorded: list[str]) -> None:
    """``record``'s real work (a data set, a model, a process per profile) replaced by
    rows named after the profile."""
    monkeypatch.setattr(_warmup, "_record_setup", lambda tmp: None)

    def one(profile: str, tmp: str) -> tuple[list[list[str]], int]:
        recorded.append(profile)
        later = 1 if profile.startswith("train:") else 0
        rows = [["ltrboost.fake", f"new_{profile}", "()"]]
        return rows + [["ltrboost.fake", "next_eval", "()"]] * later, later

    monkeypatch.setattr(_warmup, "_record_profile", one)


@pytest.mark.parametrize(
    "profiles",
    [["eval"], ["predict"], ["eval", "train:ranknet+ole"], ["train:lambdamart+quantized"]],
)
def test_record_names_profiles_of_every_kind(monkeypatch, profiles) -> None:
    """``--record eval`` raised IndexError (``"eval".split(":", 1)[1]``)."""
    asked = []
    monkeypatch.setattr(_warmup, "record", lambda p=None, path=None: asked.append(p))
    assert _warmup.main(["--record", *profiles]) == 0
    assert asked == [profiles]


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("train", "unknown profile"),
        ("evaluate", "unknown profile"),
        ("train:nonsense", "unknown profile"),
        ("train:mcrank+ole", "unknown profile"),  # pointwise: its OLE is the plain profile
        ("train:ranknet+quantized", "derived"),  # from lambdamart's when read
        ("train:lambdamart+quantized+noise", "derived"),
    ],
)
def test_record_refuses_a_profile_it_cannot_record_in_one_line(
    monkeypatch, capsys, name, why
) -> None:
    """Not an IndexError, nor (``evaluate``: not ``train:``) a ``predict`` recording
    stored under the wrong name."""
    monkeypatch.setattr(_warmup, "record", lambda *a, **k: pytest.fail("recorded"))
    with pytest.raises(SystemExit) as exc:
        _warmup.main(["--record", "eval", name])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("python -m ltrboost._warmup: error: ")
    assert repr(name) in err
    assert why in err


def test_compiling_an_unknown_profile_is_one_line(capsys) -> None:
    """``python -m ltrboost._warmup nosuch`` was a KeyError traceback."""
    with pytest.raises(SystemExit) as exc:
        _warmup.main(["eval", "nosuch"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("python -m ltrboost._warmup: error: unknown profile 'nosuch'")


def test_record_of_some_profiles_keeps_the_others(monkeypatch, tmp_path) -> None:
    """Only the named profiles are re-recorded, each in its place; every other profile
    and its ``later`` count stay as they were (``--record train:xendcg`` wrote a manifest
    of train:xendcg, eval and predict alone)."""
    path = tmp_path / "kernels.json"
    with open(_warmup.MANIFEST, encoding="utf-8") as f:
        before = json.load(f)
    path.write_text(json.dumps(before))
    recorded: list[str] = []
    _fake_recording(monkeypatch, recorded)
    _warmup.record(["train:xendcg", "eval"], path=str(path))
    assert recorded == ["train:xendcg", "eval"]
    after = json.loads(path.read_text())
    assert list(after["profiles"]) == list(before["profiles"])  # same order
    for name, entries in before["profiles"].items():
        if name not in ("train:xendcg", "eval"):
            assert after["profiles"][name] == entries, name
    assert after["profiles"]["eval"] == [["ltrboost.fake", "new_eval", "()"]]
    assert after["profiles"]["train:xendcg"][0][1] == "new_train:xendcg"
    assert after["later"] == {**before["later"], "train:xendcg": 1}
    assert after["about"] == before["about"]


def test_record_of_a_new_profile_adds_it_and_a_full_record_writes_all(
    monkeypatch, tmp_path
) -> None:
    path = tmp_path / "kernels.json"
    path.write_text(json.dumps({"profiles": {"eval": [["m", "f", "()"]]}, "later": {}}))
    recorded: list[str] = []
    _fake_recording(monkeypatch, recorded)
    _warmup.record(["train:mart"], path=str(path))
    after = json.loads(path.read_text())
    assert list(after["profiles"]) == ["eval", "train:mart"]
    assert after["later"] == {"train:mart": 1}

    recorded.clear()
    _warmup.record(path=str(path))  # everything, in recording order
    assert recorded == _warmup.recordable_profiles()
    assert list(json.loads(path.read_text())["profiles"]) == recorded
    assert {"eval", "predict", *_warmup.MODE_PROFILES} <= set(recorded)


def test_recordable_profiles_are_the_manifests_recorded_ones() -> None:
    with open(_warmup.MANIFEST, encoding="utf-8") as f:
        stored = json.load(f)["profiles"]
    assert sorted(_warmup.recordable_profiles()) == sorted(stored)


# ---------------------------------------------------------------- the exact gather
def _gather_types(profile: str = "train:lambdamart") -> str:
    (types_text,) = {t for _, name, t in _warmup.load_manifest()[profile] if name == "_gather_body"}
    return types_text


def test_exact_gather_counts_rows_from_zero_without_index_wraparound() -> None:
    """``_gather_body`` looped ``range(lo, hi)``: from a variable start Numba keeps its
    negative-index wrap-around (a compare and a select per access of the row index) on
    its five row accesses; on slices counted from 0 LLVM drops it."""
    import numba

    from ltrboost import histogram

    # an uncached copy (kernel's options): a kernel loaded from the cache has no IR to
    # inspect (Numba warns and returns a stub)
    copy = numba.njit(nogil=True, cache=False)(histogram._gather_body.py_func)
    sig = _warmup.signature(_gather_types())
    copy.compile(sig)
    ir = copy.inspect_llvm(sig)
    start = re.search(r"define [^\n]*_gather_body", ir).start()
    body = ir[start : ir.index("\n}\n", start)]
    assert not re.findall(r"icmp slt i64 %[.\w]+, 0\b", body)


def test_every_profile_records_one_exact_gather_signature() -> None:
    """The manifest names the kernel with the types the training run passes now."""
    texts = {
        t
        for entries in _warmup.load_manifest().values()
        for _, name, t in entries
        if name == "_gather_body"
    }
    assert texts == {_gather_types()}


@pytest.mark.parametrize("n", [0, 1, 1000, 300_001])  # serial; threads over blocks of rows
def test_exact_gather_fills_the_first_n_rows(n) -> None:
    from ltrboost.histogram import _gather

    rng = np.random.default_rng(n + 1)
    g = rng.standard_normal(n + 17).astype(np.float32)
    h = rng.random(n + 17).astype(np.float32)
    rows = rng.permutation(n + 17)[:n].astype(np.int32)
    og = np.full(n + 5, -1, dtype=np.float32)
    oh = np.full(n + 5, -2, dtype=np.float32)
    _gather(rows, g, h, og, oh)
    np.testing.assert_array_equal(og[:n], g[rows])
    np.testing.assert_array_equal(oh[:n], h[rows])
    assert (og[n:] == -1).all()
    assert (oh[n:] == -2).all()

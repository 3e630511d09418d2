"""Promises of README.md and docs/*.md checked claim by claim (third documentation pass):
each test is one the code broke."""

from __future__ import annotations

from ltrboost.cli import main

# --- ltrboost warmup ------------------------------------------------------------------


def test_warmup_has_a_qbrank_profile(capsys):
    """README: `train:OBJECTIVE` profiles; qbrank's was refused with 'qbrank trains only
    with a --pairs file', which is false (it trains on label pairs, as README's
    'Choosing a ranker' table does on data without preferences)."""
    from ltrboost import _warmup

    assert "train:qbrank" in _warmup.profile_names()
    assert _warmup.load_manifest()["train:qbrank"]
    assert _warmup.command_profile("train", "qbrank") == "train:qbrank"
    assert main(["warmup", "train:qbrank"]) in (0, None)
    assert "train:qbrank:" in capsys.readouterr().err

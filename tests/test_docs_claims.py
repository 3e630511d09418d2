"""Claims of README.md and docs/*.md that a documentation pass found untrue, checked
against the code so that they stay true."""

from __future__ import annotations

import re

import pytest

from ltrboost.cli import main


def _help(capsys, command: str) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return capsys.readouterr().out


def test_generate_help_gives_every_default(capsys):
    """`ltrboost generate --help` gives every default (README's synopsis quotes them);
    --random-state showed none."""
    text = " ".join(_help(capsys, "generate").split())
    for flag in ("--n-queries", "--docs-per-query", "--n-features", "--random-state"):
        assert re.search(re.escape(flag) + r" [A-Z_]+ [^-]*\(default \d+\)", text), flag


def test_errors_and_warnings_named_by_readme_are_public():
    """README tells users to expect NonFiniteTrainingError, PairsIgnoredWarning and
    PositionIgnoredWarning; they could be imported only from private or internal modules
    (ltrboost._checks, ltrboost.objectives.base, ltrboost.booster)."""
    import ltrboost

    assert issubclass(ltrboost.NonFiniteTrainingError, ValueError)
    assert issubclass(ltrboost.PairsIgnoredWarning, UserWarning)
    assert issubclass(ltrboost.PositionIgnoredWarning, UserWarning)
    for name in ("NonFiniteTrainingError", "PairsIgnoredWarning", "PositionIgnoredWarning"):
        assert name in ltrboost.__all__
        assert name in dir(ltrboost)

"""The progress bars of ``ltrboost train`` and the experiments, tqdm's when it imports.

tqdm is a dependency, but an environment can lack it (a vendored copy, a broken
install): a bar is only a display, so training goes on without one, after a warning
saying how to get it back, instead of ending in a ``ModuleNotFoundError`` traceback
once every data file had been read (and no model written).
"""

from __future__ import annotations

import warnings
from typing import Any


def progress_bar(off_switch: str = "--quiet", **kwargs: Any) -> Any:
    """``tqdm.auto.tqdm(**kwargs)``, or None (with a UserWarning) when tqdm cannot be
    imported; ``off_switch`` names the option that turns the bar off, for the
    warning."""
    try:
        from tqdm.auto import tqdm
    except ImportError as e:
        warnings.warn(
            f"no progress bar: tqdm is not installed ({e}); `pip install tqdm` to get it "
            f"back, or {off_switch} to ask for none",
            UserWarning,
            stacklevel=3,
        )
        return None
    return tqdm(**kwargs)

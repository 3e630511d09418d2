"""Where a warning of the library points: the user's line.

:func:`warnings.warn`'s ``stacklevel`` counts frames up from the function that warns;
a fixed count holds for one route only, and the same warning is reached by several
(``ltrboost.train``, ``Ranker.fit`` and ``DaskRanker.fit`` one frame deeper,
scikit-learn's cross-validation, the experiment protocols, the CLI).  A warning
located inside ltrboost tells the user nothing about which call it is about, and a
module filter (``-W error::ParameterWarning:mymodule``) misses it.  Python 3.12's
``warnings.warn(skip_file_prefixes=...)`` does this; we support 3.11.
"""

from __future__ import annotations

import os
import sys
from types import FrameType

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _inside(frame: FrameType) -> bool:
    """Whether ``frame`` runs ltrboost's code: its module is ``ltrboost`` or one below
    it (read off the module name, which a ``chdir`` after a relative import of the
    package does not change), or its file is in the package (``python -m ltrboost``'s
    ``__main__``)."""
    name = frame.f_globals.get("__name__", "")
    if isinstance(name, str) and (name == "ltrboost" or name.startswith("ltrboost.")):
        return True
    return os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR)


def external_stacklevel() -> int:
    """The ``stacklevel`` at which a warning given by the function calling this one
    (``warnings.warn(..., stacklevel=external_stacklevel())``) names the first frame
    outside the ltrboost package: the user's call of ``train``, ``Ranker.fit``, ... (or
    scikit-learn's, for a model it fits), whatever ltrboost frames lie between.  The
    outermost frame when every frame is ltrboost's (the CLI, whose warnings name no
    line)."""
    frame = sys._getframe(2)  # the caller of the function that warns: stacklevel 2
    level = 2
    while frame.f_back is not None and _inside(frame):
        frame = frame.f_back
        level += 1
    return level

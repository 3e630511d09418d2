"""Old name of :mod:`ltrboost.objectives.pair_selection` (kept so old imports work).

The module object is the same one, so private kernels imported from here are the
jitted functions of ``pair_selection`` (one compilation, one cache).
"""

import sys

from ltrboost.objectives import pair_selection as _pair_selection

sys.modules[__name__] = _pair_selection

"""RankNet ("RankMART") and RankBoost: pair losses over label pairs and explicit pairs.

The classes live in :mod:`.ranknet` and :mod:`.rankboost`; this module keeps the old
import path.  Both run on the pairwise engine of :mod:`ltrboost.objectives.pair_engine`
with |delta Z| = 1 and no normalisation (RankNet is LambdaMART without the |delta Z|
weight, seed 001), so pair enumeration, weights, ``PairTerms`` and the loss are shared.

Pairs of a query
----------------
* **Label pairs** (i, j) with y_i > y_j, chosen by ``pair_method`` (``"all"`` by
  default).
* **Explicit preference pairs** from ``data.pairs`` (e.g. click preferences): document
  ``preferred[k]`` should rank above ``other[k]``, with weight ``weight[k]`` (default
  1). They are always all used (``pair_method`` does not apply) and their weight
  multiplies the pair's loss.  Label and explicit pairs add up: a pair present in both
  counts twice.

``use_label_pairs=None`` (default) uses label pairs whenever the dataset has labels, so
explicit pairs *add to* the judged labels (DESIGN.md: preferences "alongside labelled
documents", single-label queries still contributing through the explicit part).  Set
``use_label_pairs=False`` to train on the explicit pairs alone while keeping labels for
evaluation.  A dataset with neither labels nor pairs is refused.
"""

from ltrboost.objectives.pair_engine import (
    LabelOrPairObjective as _LabelOrPairObjective,
)
from ltrboost.objectives.preferences import explicit_pairs as _explicit_pairs
from ltrboost.objectives.preferences import refuse_contradicting_pairs
from ltrboost.objectives.rankboost import RankBoost
from ltrboost.objectives.ranknet import RankNet

__all__ = [
    "RankBoost",
    "RankNet",
    "_LabelOrPairObjective",
    "_explicit_pairs",
    "refuse_contradicting_pairs",
]

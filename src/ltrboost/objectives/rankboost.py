"""RankBoost's exponential pair loss (seed 000, example 3) on the pairwise engine.

Runs on :mod:`ltrboost.objectives.pair_engine` with |delta Z| = 1 and no
normalisation, over label pairs and/or explicit preference pairs
(:mod:`ltrboost.objectives.preferences`).
"""

from __future__ import annotations

from ltrboost.objectives.pair_engine import LOSS_EXP, LabelOrPairObjective
from ltrboost.objectives.registry import register


@register
class RankBoost(LabelOrPairObjective):
    r"""RankBoost's exponential pair loss (seed 000, example 3; DESIGN ``rankboost``).

    Loss, summed over queries and pairs (i, j) with i preferred to j (weights as in
    :class:`RankNet`)::

        L = sum w_ij exp(s_j - s_i)

    so, with ``e_ij = exp(s_j - s_i)``::

        dL/ds_i = -w_ij e_ij,  dL/ds_j = +w_ij e_ij,  d2L/ds_i2 = d2L/ds_j2 = w_ij e_ij

    (seed 000's toy example: L'(o=0|d1) = -s1 - s2, L''(o=0|d1) = s1 + s2, ...).
    ``gradients`` are dL/ds; descent is ``-gradients``.  Leaves take the Newton step.

    Overflow guard (a "Huberised" exponential): past ``C = EXP_CLIP = 50`` the pair loss
    ``exp(x)``, ``x = s_j - s_i``, continues as its second-order Taylor polynomial at
    ``C``, with the derivatives of that polynomial::

        l(x)   = exp(x)                          for x <= C
               = e^C (1 + u + u^2 / 2),  u = x - C   for x > C
        l'(x)  = e^C (1 + u),   l''(x) = e^C     for x > C

    so the loss is convex and twice continuously differentiable, ``gradients`` and
    ``hessians`` are its exact first and second derivatives on both sides of the clip
    (:func:`ltrboost.objectives.pair_engine.exp_pair_loss`), and nothing inside the clip
    changes.  A pair misordered by more than 50 pulls with a force growing linearly,
    not exponentially: gradients stay finite in float32 while a document's
    ``sum (1 + u)`` over such pairs is below ~6e16.  (Before, the exponent itself was
    clipped: the loss was the constant ``e^C`` past the clip while the gradient stayed
    ``e^C``, not the loss's derivative.)

    Parameters
    ----------
    pair_method : {"all", "topk", "sampled"}, default="all"
    truncation_level : int or None, default=30
    pairs_per_sample : int, default=1
    use_label_pairs : bool or None, default=None
    random_state : int, default=0
        As for :class:`RankNet`.
    """

    name = "rankboost"

    def __init__(
        self,
        pair_method: str = "all",
        truncation_level: int | None = 30,
        pairs_per_sample: int = 1,
        use_label_pairs: bool | None = None,
        random_state: int = 0,
    ) -> None:
        super().__init__(
            pair_method=pair_method,
            truncation_level=truncation_level,
            pairs_per_sample=pairs_per_sample,
            use_label_pairs=use_label_pairs,
            random_state=random_state,
        )
        self._loss_code = LOSS_EXP
        self._init_common(
            pair_method,
            truncation_level,
            pairs_per_sample,
            use_label_pairs,
            random_state,
        )

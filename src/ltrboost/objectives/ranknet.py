"""RankNet ("RankMART", seed 001): the logistic pair loss on the pairwise engine.

RankNet is LambdaMART without the |delta Z| weight: it runs on
:mod:`ltrboost.objectives.pair_engine` with |delta Z| = 1 and no normalisation, over
label pairs and/or explicit preference pairs (:mod:`ltrboost.objectives.preferences`).
"""

from __future__ import annotations

from ltrboost.objectives.pair_engine import LOSS_LOGISTIC, LabelOrPairObjective
from ltrboost.objectives.registry import register


@register
class RankNet(LabelOrPairObjective):
    r"""RankNet / "RankMART" (seed 001, "RankMART Model Training"; DESIGN ``ranknet``).

    Loss, summed over queries and pairs (i, j) with i preferred to j (y_i > y_j, or an
    explicit pair of weight w_ij, else w_ij = 1)::

        C = sum w_ij log(1 + exp(-sigma (s_i - s_j)))

    With ``rho_ij = 1 / (1 + exp(sigma (s_i - s_j)))``::

        dC/ds_i = -sigma w_ij rho_ij,  dC/ds_j = +sigma w_ij rho_ij
        d2C/ds_i2 = d2C/ds_j2 = sigma^2 w_ij rho_ij (1 - rho_ij)

    ``gradients`` are dC/ds (descent is ``-gradients``); seed 001's lambda_i is
    ``gradients[i]`` (its ``lambda_ij = dC/df(x_i) = -sigma w_ij rho_ij``; seed 003's
    ``lambda_ij = P^_ij - P_ij`` likewise).  Leaves take the Newton step
    -sum(g)/sum(h) (seed 001, "Newton's method": ``-eta sum lambda / sum omega``).
    This is LambdaMART with |dZ| = 1 and no normalisation.

    Parameters
    ----------
    sigma : float, default=1.0
        Sigmoid scale (seed 001's alpha).
    pair_method : {"all", "topk", "sampled"}, default="all"
    truncation_level : int or None, default=30
        Top-k of ``"topk"``.
    pairs_per_sample : int, default=1
        Partners per document for ``"sampled"``.
    use_label_pairs : bool or None, default=None
        Use label pairs; None: whenever the dataset has labels (see module docstring).
    random_state : int, default=0
        Seed of ``"sampled"`` (query q, iteration t: ``random_state + t * n_queries +
        q``).
    """

    name = "ranknet"

    def __init__(
        self,
        sigma: float = 1.0,
        pair_method: str = "all",
        truncation_level: int | None = 30,
        pairs_per_sample: int = 1,
        use_label_pairs: bool | None = None,
        random_state: int = 0,
    ) -> None:
        super().__init__(
            sigma=sigma,
            pair_method=pair_method,
            truncation_level=truncation_level,
            pairs_per_sample=pairs_per_sample,
            use_label_pairs=use_label_pairs,
            random_state=random_state,
        )
        self._sigma = self._check_sigma(sigma)
        self._loss_code = LOSS_LOGISTIC
        self._init_common(
            pair_method,
            truncation_level,
            pairs_per_sample,
            use_label_pairs,
            random_state,
        )

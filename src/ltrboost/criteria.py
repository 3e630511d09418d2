"""Split gains and leaf values for the criteria of Xia, Zhai & Wang (seed 000).

Write ``G``, ``H``, ``n`` for the sums of gradients, hessians and the document count on one
side of a split, and ``lam`` for ``l2_regularization``.

* ``"newton"`` -- RWSE, eq. 9 of seed 000 (identical to the second-order gain of
  LightGBM/XGBoost): ``gain = G_l^2/(H_l+lam) + G_r^2/(H_r+lam) - G^2/(H+lam)``, i.e.
  ``-RWSE(v)`` (with ``w r = -g``, ``w = h``).  For derivative-additive (pointwise)
  losses this *is* OLE (Theorem 1).  It is twice the decrease of the second-order loss
  model: eq. 12 has a factor ``1/2`` that eq. 13 drops.
* ``"se"`` -- least squares on the pseudo-response ``r = -g`` (eq. 3): the same formula
  with the counts in place of the hessians, ``G_l^2/(n_l+lam) + G_r^2/(n_r+lam) -
  G^2/(n+lam)`` (with ``lam = 0`` exactly the decrease of eq. 3's error).
  For MART (constant hessian 2) and ``l2_regularization = 0`` it ranks splits exactly as
  ``newton`` (Theorem 2; its gain is twice Newton's).  With ``l2_regularization > 0``
  the two shrink differently (``G^2/(n+lam)`` against ``G^2/(2n+lam)``) and may choose
  different splits; with sample weights MART's hessian is ``2 w``, not constant, and the
  two differ too.
* ``"ole"`` -- eq. 13 with the exact one-leaf hessian of a pairwise loss: from each side's
  ``H`` the pairs whose two documents both fall on that side are removed,
  ``H_side = sum_{d in side} h_d - 2 sum_{(i,j) in side} rho_ij``; ``G`` is unchanged.
  The grower passes those corrected sums in; the gain formula is the Newton one.
  :func:`ole_hessian` is that correction, the one place it is written.

Leaf values are always the Newton step ``-G / (H + lam)`` of the objective's own
gradients and hessians (eq. 11; with the OLE-corrected ``H`` under ``"ole"``).
"""

from __future__ import annotations

from ltrboost._numba import kernel

CRITERIA = ("newton", "se", "ole")
CRITERION_CODES = {"newton": 0, "se": 1, "ole": 2}


# --- kernels ---


@kernel
def _side_score(g, h, l2):
    """G^2 / (H + lam); 0 when the denominator is not positive (empty or flat side)."""
    d = h + l2
    if d <= 0.0:
        return 0.0
    return g * g / d


@kernel
def _split_gain(g_left, h_left, g_right, h_right, g_parent, h_parent, l2):
    """Eq. 9 / eq. 13 of seed 000: ``G_l^2/(H_l+lam) + G_r^2/(H_r+lam) - G^2/(H+lam)``,
    twice the decrease of the second-order loss approximation (eq. 12 without its 1/2;
    the parent's term is the constant eq. 13 leaves out)."""
    return (
        _side_score(g_left, h_left, l2)
        + _side_score(g_right, h_right, l2)
        - _side_score(g_parent, h_parent, l2)
    )


# The documents' hessians and the pairs' ``rho`` reach the criterion rounded to float32
# (the objectives' outputs, :mod:`ltrboost.pair_csr`), each on its own: for a side made
# of whole queries, whose one-leaf hessian is exactly 0 (every pair inside it), ``H - 2
# sum rho`` comes out as a residual of that rounding (~1e-10 to 1e-8 of ``H``), and a
# Newton step divided by it gave leaf values of 0.8 to 1400 from noise (the gradient
# sum, exactly 0 too, is noise as well).  A one-leaf hessian within this share of ``H``
# is taken as 0: no curvature, as for an empty side.
OLE_HESSIAN_RTOL = 1e-6


@kernel
def ole_hessian(h, pair_rho_sum):
    """Eq. 13 of seed 000: the exact one-leaf hessian ``H - 2 * sum rho`` of a side.

    ``h`` is the side's sum of per-document hessians and ``pair_rho_sum`` the total
    ``rho`` of the pairs whose two documents both fall on that side (their loss does not
    move when the side is shifted, so they must leave its second derivative).  0 when
    the result is within ``OLE_HESSIAN_RTOL * |h|`` of 0: float32 rounding, not
    curvature (see above).
    """
    d = h - 2.0 * pair_rho_sum
    if abs(d) <= OLE_HESSIAN_RTOL * abs(h):
        return 0.0
    return d


@kernel
def _leaf_value(g, h, l2):
    """Newton step -G / (H + lam) (seed 000, eq. 11); 0 for a leaf without curvature."""
    d = h + l2
    if d <= 0.0:
        return 0.0
    return -g / d

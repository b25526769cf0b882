"""The hybrid paper's DNN: a plain MLP trained by supervised regression from a pose to joint values.

The hybrid learning + optimisation IK paper (ABB IRB120) trains a feed-forward network on
(pose, joints) pairs with a joint-space regression loss, in the full joint space and with q6
held fixed, and shows that plain regression fails on the multi-valued pose → joints map (it
averages IK branches) while fixing q6 or refining with nonlinear least squares repairs it.

Here (``hik_sim.learning.losses.RegressionLoss``, selected by the trainer for this kind): every step
samples configurations q uniform in the limits (the fixed joints at their values), computes their
poses by FK, and minimises the mean squared error [rad²] between the network's free joints and
the sampled ones. There is no FK in the loss, so nothing tells the network which of a pose's IK
solutions to give: exactly the weakness the paper measures.

Architecture — our reading, not the paper's exact layer sizes: 4 hidden layers of equal width
with GELU, and the tanh head mapped onto the joint limits that every network here has (so answers
stay inside the limits). The default width matches the parameter count of the default HarmoAtt-IK
for the same joints (within 1 %), so the comparison is at the same budget as the other networks.
It is laid out as :class:`~hik_sim.learning.models.mlp.MLPIK` (a subclass), so the fast inference path and
the tooling serve it unchanged.
"""

from __future__ import annotations

import torch

from hik_sim.learning.models.mlp import MLPIK

__all__ = ["RegressionIK"]


class RegressionIK(MLPIK):
    """Pose (B, 7) → joint values (B, m), for supervised regression.

    Args:
        lower: (m,) lower limits of the output joints.
        upper: (m,) upper limits.
        hidden: width of each hidden layer; default: the width that matches the default
            HarmoAtt-IK's parameter count for m joints (:func:`~hik_sim.learning.models.matched_mlp_hidden`).
        layers: number of hidden layers (4).
        in_features: input width (7).
        hypotheses: answers per pose (beyond the paper, for the composite objective only; the
            regression objective refuses more than one).

    Raises:
        HikError: ``hidden`` or ``layers`` below 1.
    """

    def __init__(self, lower: torch.Tensor, upper: torch.Tensor, hidden: int | None = None, layers: int = 4,
                 in_features: int = 7, hypotheses: int = 1) -> None:
        if hidden is None:
            from hik_sim.learning.models import matched_mlp_hidden

            hidden = matched_mlp_hidden(lower.numel(), layers, **({"hypotheses": hypotheses} if hypotheses != 1 else {}))
        super().__init__(lower, upper, hidden=hidden, layers=layers, in_features=in_features, hypotheses=hypotheses)

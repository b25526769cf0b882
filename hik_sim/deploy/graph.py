"""The torch module an IK network's ONNX graph is traced from, and float64 stand-ins for what onnxruntime lacks.

:func:`graph_module` wraps an :class:`~hik_sim.learning.network.IKNetwork` (in eval mode) into a module whose forward pass
is :meth:`IKNetwork.solve_all <hik_sim.learning.network.IKNetwork.solve_all>` without data-dependent Python branches, so
that tracing records all of it (:mod:`hik_sim.export` says what the graph computes).

onnxruntime's CPU kernels have no float64 ``Erf`` (every exact GELU) nor ``Atan`` (the ONNX form of ``atan2``: the
first joint's azimuth, the rotation error). For a float64 graph, :func:`float64_gelus` replaces the model's exact GELUs by
:class:`Float64Gelu`, erf as Chebyshev series fitted to SciPy's erf (the GELU within 1e-14 of torch's), and :func:`atan2_symbolic` writes
``atan2`` as the float32 ``Atan`` refined by one Newton step in float64 (error ~1e-14 relative). Both graphs give
``atan2(0, 0) = 0``, as torch does (ONNX's own form of it answers NaN there: a target on the first joint's axis).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.symmetry import range_turn
from hik_sim.learning.losses import geodesic_angle
from hik_sim.learning.network import CHOICE_TOLERANCE, MAX_TARGET_DISTANCE, IKNetwork

__all__ = ["graph_module", "Float64Gelu", "float64_gelus", "atan2_symbolic"]

_ERF_DEGREE = 20  # degree 18 already meets SciPy's erf to its own rounding on both intervals
_SMALL = 2.5  # |y| <= 2.5: erf(y) = y · S(y²); beyond: erf(|y|) = 1 − erfcx(|y|) · exp(−y²), erfcx fitted on [2.5, 6]
_LARGE = 6.0  # erfc(6) = 2e-17: beyond it erf is ±1 in float64


def _clenshaw(t: torch.Tensor, coefficients: np.ndarray) -> torch.Tensor:
    """Σ c_k T_k(t), the Chebyshev series at ``t`` (any shape, in [−1, 1]), by Clenshaw's recurrence."""
    b1 = torch.zeros_like(t)
    b2 = torch.zeros_like(t)
    for c in coefficients[:0:-1]:
        b1, b2 = 2 * t * b1 - b2 + float(c), b1
    return t * b1 - b2 + float(coefficients[0])


class Float64Gelu(nn.Module):
    """The exact GELU ``x · (1 + erf(x / √2)) / 2`` with erf from Chebyshev series and ``exp`` (operators that have
    float64 kernels in onnxruntime), within 1e-14 of torch's float64 GELU."""

    def __init__(self) -> None:
        super().__init__()
        from numpy.polynomial import chebyshev
        from scipy.special import erf, erfcx

        self.small = chebyshev.Chebyshev.interpolate(lambda u: erf(np.sqrt(u)) / np.sqrt(u), _ERF_DEGREE, domain=[0, _SMALL ** 2]).coef
        self.large = chebyshev.Chebyshev.interpolate(erfcx, _ERF_DEGREE, domain=[_SMALL, _LARGE]).coef

    def erf(self, y: torch.Tensor) -> torch.Tensor:
        """Erf of any tensor, elementwise."""
        a = y.abs()
        square = torch.clamp(y * y, max=_SMALL ** 2)
        small = y * _clenshaw(square * (2 / _SMALL ** 2) - 1, self.small)
        far = torch.clamp(a, min=_SMALL, max=_LARGE)
        middle, half = (_LARGE + _SMALL) / 2, (_LARGE - _SMALL) / 2
        large = torch.sign(y) * (1 - _clenshaw((far - middle) / half, self.large) * torch.exp(-far * far))
        return torch.where(a <= _SMALL, small, large)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """GELU of any tensor, elementwise."""
        return 0.5 * x * (1 + self.erf(x * math.sqrt(0.5)))


def float64_gelus(model: nn.Module) -> int:
    """Replace every exact ``nn.GELU`` inside ``model`` by :class:`Float64Gelu`, in place; returns how many."""
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.GELU) and child.approximate == "none":
                setattr(parent, name, Float64Gelu())
                replaced += 1
    return replaced


def atan2_symbolic(g: Any, y: Any, x: Any) -> Any:  # noqa: ANN401 - torch.onnx's graph context and values are untyped
    """ONNX ``atan2(y, x)`` (torch.onnx's symbolic for ``aten::atan2``): ``Atan`` of y / x in float32 with the quadrant
    fixed, then in a float64 graph one Newton step on ``x·sin θ − y·cos θ = 0``; 0 where x = y = 0."""
    from torch.onnx import symbolic_opset9

    double = y.type().scalarType() == "Double"
    float_type, double_type = 1, 11  # ONNX TensorProto.FLOAT, DOUBLE
    y32, x32 = (g.op("Cast", v, to_i=float_type) for v in (y, x)) if double else (y, x)
    theta = symbolic_opset9.atan2(g, y32, x32)
    zero = g.op("Constant", value_t=torch.tensor(0.0, dtype=torch.float64 if double else torch.float32))
    if double:
        theta = g.op("Cast", theta, to_i=double_type)
        sin, cos = g.op("Sin", theta), g.op("Cos", theta)
        residual = g.op("Sub", g.op("Mul", x, sin), g.op("Mul", y, cos))
        slope = g.op("Add", g.op("Mul", x, cos), g.op("Mul", y, sin))  # = hypot(x, y) near the root
        flat = g.op("Equal", slope, zero)
        step = g.op("Div", residual, g.op("Where", flat, g.op("Constant", value_t=torch.tensor(1.0, dtype=torch.float64)), slope))
        theta = g.op("Where", flat, theta, g.op("Sub", theta, step))
    origin = g.op("And", g.op("Equal", x, zero), g.op("Equal", y, zero))
    return g.op("Where", origin, zero, theta)


def graph_module(network: IKNetwork, chain: Chain, turned: str) -> nn.Module:
    """The module (eval mode) that the ONNX graph is traced from: ``(pos (B, 3), quat (B, 4)) → (answers (B, H, n),
    scores (B, H), heads (B, H) int64, valid (B,) bool)``, in the network's dtype (:mod:`hik_sim.export`)."""
    return _Graph(network, chain, turned).eval()


class _Graph(nn.Module):
    lower: torch.Tensor  # (n,) registered buffers
    upper: torch.Tensor

    def __init__(self, network: IKNetwork, chain: Chain, turned: str) -> None:
        super().__init__()
        self.network, self.chain, self.turned = network, chain, turned
        dtype = next(network.parameters()).dtype
        self.register_buffer("lower", torch.tensor(network.lower, dtype=dtype))
        self.register_buffer("upper", torch.tensor(network.upper, dtype=dtype))
        free, fixed = network.selection.free_index, network.selection.fixed
        self.columns: list[tuple[bool, float]] = [(False, float(free.index(i))) if name not in fixed else (True, float(fixed[name]))
                                                  for i, name in enumerate(network.selection.joint_names)]

    def expand(self, free: torch.Tensor) -> torch.Tensor:
        """Free-joint answers (B, H, m) → full configurations (B, H, n), fixed joints filled in."""
        if not any(is_fixed for is_fixed, _ in self.columns):
            return free
        parts = [torch.full_like(free[..., :1], value) if is_fixed else free[..., int(value):int(value) + 1] for is_fixed, value in self.columns]
        return torch.cat(parts, dim=-1)

    def scores(self, answers: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """(B, H) position error / 5 mm + rotation error / 2° of each answer (B, H, n) against its pose (B, 3), (B, 4),
        as :meth:`IKNetwork.rank <hik_sim.learning.network.IKNetwork.rank>` computes it."""
        batch, hypotheses, n = answers.shape
        reached = self.chain.fk(answers.reshape(-1, n))
        pos_error = torch.linalg.vector_norm(reached.pos.view(batch, hypotheses, 3) - pos[:, None], dim=-1)
        rot_error = geodesic_angle(reached.quat.view(batch, hypotheses, 4), quat[:, None].expand(batch, hypotheses, 4))
        return pos_error / CHOICE_TOLERANCE[0] + rot_error / CHOICE_TOLERANCE[1]

    def free_answers(self, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """The model's answers (B, H, m) for poses with unit quaternions, a canonical network's turn added back."""
        net = self.network
        if net.symmetry is None:
            out = net.model(net.normalizer(pos, quat))
            return out.q[:, None] if out.candidates is None else out.candidates
        azimuth = net.symmetry.azimuth(pos)
        # the network's own code for a turned pose: normalisation, turn input, model, turn added back and clamped
        if not net.behind_turn or self.turned == "azimuth":
            out = net._canonical_answers(pos, quat, azimuth)  # noqa: SLF001
            return out.q[:, None] if out.candidates is None else out.candidates
        turn = range_turn(azimuth, net.lower[0], net.upper[0])
        out = net._canonical_answers(pos, quat, turn)  # noqa: SLF001
        first = out.q[:, None] if out.candidates is None else out.candidates
        if self.turned == "range":
            return first
        # IKNetwork._also_facing for every pose at once: where the pose lies beyond the first joint's range, each head
        # keeps the answer turned by the azimuth if its FK reaches the pose better (unclamped answers, as there)
        facing = net._canonical_answers(pos, quat, azimuth)  # noqa: SLF001
        second = facing.q[:, None] if facing.candidates is None else facing.candidates
        better = self.scores(self.expand(second), pos, quat) < self.scores(self.expand(first), pos, quat)
        return torch.where(((turn != azimuth)[:, None] & better)[..., None], second, first)

    def forward(self, pos: torch.Tensor, quat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Raw poses (B, 3) [m], (B, 4) wxyz → ranked answers (B, H, n), scores (B, H), heads (B, H), valid (B,)."""
        norm = torch.linalg.vector_norm(quat, dim=1, keepdim=True)
        unit = quat / norm
        full = self.expand(self.free_answers(pos, unit))
        answers = torch.maximum(torch.minimum(full, self.upper), self.lower)
        scores = self.scores(answers, pos, unit)
        order = torch.argsort(scores, dim=1)
        ranked = torch.gather(answers, 1, order[:, :, None].expand_as(answers))
        valid = (torch.isfinite(pos).all(dim=1) & torch.isfinite(quat).all(dim=1) & (norm[:, 0] > 1e-9)
                 & (pos.abs().amax(dim=1) <= MAX_TARGET_DISTANCE) & torch.isfinite(ranked).all(dim=2).all(dim=1))
        return ranked, torch.gather(scores, 1, order), order, valid

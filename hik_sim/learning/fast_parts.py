"""The pieces shared by :class:`~hik_sim.learning.fast_network.FastIKNetwork`'s backends: reading a torch
model's weights into float64 arrays with the constants of GELU folded into the layers around it, the
:class:`_Parts` a backend hands back, the :class:`_TurnBias` of a ``turn_input`` model's first layer, and the
errors of a bad pose. NumPy only: torch is imported by whoever hands over a network.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence

import numpy as np
from scipy.special import erf

from hik_sim.errors import HikError, ModelError

if TYPE_CHECKING:
    from hik_sim.learning.network import IKNetwork

MAX_TARGET_DISTANCE = 1e4
"""[m]: :data:`hik_sim.learning.network.MAX_TARGET_DISTANCE` (importing it would import torch)."""

Ranked = Callable[[np.ndarray, np.ndarray], tuple[int, np.ndarray, np.ndarray, int]]
"""``ranked(pos, quat) -> (status, answers (H, n), scores (H,), best)``: a checked-shape pose to its
clamped full answers in head order, their scores and the best one's index, in one compiled call."""

_SQRT1_2 = math.sqrt(0.5)


def _array(tensor: Any, dtype: type = np.float64) -> np.ndarray:
    """A detached float64 copy of a tensor (folding happens in float64, the result is cast once)."""
    return tensor.detach().cpu().double().numpy().astype(dtype, copy=True)


def _gelu_kind(module: Any) -> str:
    """``erf`` or ``tanh``: which GELU a ``torch.nn.GELU`` computes."""
    approximate = getattr(module, "approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ModelError(f"no fast path for GELU(approximate={approximate!r}); supported: 'none', 'tanh'")
    return "erf" if approximate == "none" else "tanh"


def _check_gelus(modules: Sequence[Any]) -> str:
    """The one GELU kind used by all of ``modules`` (the fast path folds one formula's constants)."""
    kinds = {_gelu_kind(m) for m in modules}
    if len(kinds) != 1:
        raise ModelError("no fast path for a network that mixes exact and tanh GELUs")
    return kinds.pop()


def _gelu_erf(y: np.ndarray) -> np.ndarray:
    """``y·(1 + erf(y))``: the exact GELU of ``x = √2·y`` times √2 (the constants live in the layers around it)."""
    out = erf(y)
    out += 1.0
    out *= y
    return out


def _gelu_tanh(y: np.ndarray) -> np.ndarray:
    """``y·(1 + tanh(√(2/π)·(y + 0.044715·y³)))``: the tanh GELU of ``y`` times 2."""
    out = y * y
    out *= 0.044715
    out += 1.0
    out *= y
    out *= math.sqrt(2.0 / math.pi)
    np.tanh(out, out=out)
    out += 1.0
    out *= y
    return out


def _gelu_ops(kind: str) -> tuple[float, float, Callable[[np.ndarray], np.ndarray]]:
    """GELU with its constants folded into the layers around it: (pre, post, function).

    For the exact GELU, ``gelu(x) = 0.5·x·(1 + erf(x/√2))``: the layer before is scaled by
    ``pre`` = 1/√2 (so it yields ``y = x/√2``), the function computes ``y·(1 + erf(y))`` and the
    layer after is scaled by ``post`` = 1/√2 (= 0.5·√2). For the tanh form, no pre-scaling and
    ``post`` = 0.5.
    """
    if kind == "erf":
        return _SQRT1_2, _SQRT1_2, _gelu_erf
    return 1.0, 0.5, _gelu_tanh


class _Parts(NamedTuple):
    """A backend's pieces: the bare forward pass x (7,) → (H, m); (numba) one call from a checked-shape
    pose to clamped answers, ``fused(pos, quat) -> (status, (H, m))`` (status: 0, 1 NaN/inf, 2 zero
    quaternion, 3 answer not finite, 4 position too far); and (numba) ``ranked(G, template,
    free_index, tolerance)``, which makes the :data:`Ranked` call that chooses among the answers too
    (G: the flat chain geometry; template (n,): the fixed joints' values; free_index (m,); tolerance:
    the score's position [m] and rotation [rad] units). For a ``turn_input`` network, ``set_turn(cos, sin)``
    hands the turn's (cos, sin) to the first layer before a call, so the forward passes read the usual 7 inputs:
    (numpy) into its float64 bias (:class:`_TurnBias`), (numba) into the input buffer's last two values, which the
    kernels' first layer reads apart (:func:`hik_sim.learning._fast_numba.add_turn`)."""

    forward: Callable[[np.ndarray], np.ndarray]
    fused: Callable[[np.ndarray, np.ndarray], tuple[int, np.ndarray]] | None = None
    ranked: Callable[[np.ndarray, np.ndarray, np.ndarray, tuple[float, float]], Ranked] | None = None
    set_turn: Callable[[float, float], None] | None = None


class _TurnBias(NamedTuple):
    """A ``turn_input`` model's first layer for the fast forward passes: its input is (position (3), cos, sin,
    quaternion (4)) but they read 7 inputs, so the columns of cos and sin leave the weight (:meth:`split`). The NumPy
    pass adds them to its float64 bias, ``b' = b + W_cos·cos α + W_sin·sin α``, before each call (:meth:`setter`);
    the numba kernels read the columns apart (:func:`hik_sim.learning._fast_numba.add_turn`)."""

    bias: np.ndarray  # (h,) float64
    columns: np.ndarray  # (h, 2) float64: the weight's columns of cos and sin

    @classmethod
    def split(cls, weight: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, "_TurnBias"]:
        """A first layer's weight (h, k) and bias (h,) → the weight without its columns 3 and 4, and the turn."""
        columns = np.asarray(weight[:, 3:5], dtype=np.float64).copy()
        return np.delete(weight, (3, 4), axis=1), cls(np.asarray(bias, dtype=np.float64).copy(), columns)

    def setter(self, target: np.ndarray) -> Callable[[float, float], None]:
        """``set_turn(cos α, sin α)`` writing into ``target`` (h,), a forward pass's bias (a view; exact up to its dtype)."""
        def set_turn(cos: float, sin: float) -> None:
            target[:] = self.bias + self.columns[:, 0] * cos + self.columns[:, 1] * sin

        return set_turn


def _linear(layer: Any, pre: float = 1.0, post_of_input: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(W, b) float64 of a torch Linear; the output scaled by ``pre``, the input's folded GELU by ``post_of_input``."""
    weight = _array(layer.weight) * post_of_input * pre
    bias = _array(layer.bias) * pre if layer.bias is not None else np.zeros(weight.shape[0])
    return weight, bias


def _f64(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Contiguous float64 copies (the NumPy backend computes in float64)."""
    return tuple(np.ascontiguousarray(a, dtype=np.float64) for a in arrays)


def _layer_norm(norm: Any) -> tuple[np.ndarray, np.ndarray, float]:
    """A LayerNorm's flat affine (weight, bias) and eps."""
    if not norm.elementwise_affine:
        size = int(np.prod(norm.normalized_shape))
        return np.ones(size), np.zeros(size), float(norm.eps)
    bias = _array(norm.bias).reshape(-1) if norm.bias is not None else np.zeros(norm.weight.numel())
    return _array(norm.weight).reshape(-1), bias, float(norm.eps)


def _bad_pose(status: int, pos: np.ndarray, quat: np.ndarray) -> HikError:
    """The error of a kernel's status (1 NaN/inf, 2 zero quaternion, 3 answer not finite, 4 position too far) for a pose."""
    if status == 1:
        return HikError(f"a target pose must be finite; got position {pos.tolist()} and quaternion {quat.tolist()}")
    if status == 2:
        return HikError("a target quaternion must be non-zero (norm >= 1e-9); give a unit quaternion (w, x, y, z)")
    if status == 3:
        return HikError("the network answered NaN or inf for this target; its weights are not finite or the target overflows it")
    return HikError(f"a target position must lie within {MAX_TARGET_DISTANCE:g} m of the chain's base along each axis, "
                    f"got {pos.tolist()} (a unit or frame mistake?)")


def _limits(network: "IKNetwork", robot: Any) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The robot's joint limits (n,), (n,) in float64: from ``robot`` (the kinematics' robot), the network's chain or
    its card.

    ``network.lower`` is the last resort: it holds the limits as the float32 tensors they were
    built from (1.22173 is 1.2217299938…).
    """
    for spec in (robot, getattr(network.chain, "robot", None), getattr(network, "card", None)):
        if spec is not None and tuple(spec.joint_names) == tuple(network.selection.joint_names):
            return tuple(spec.lower), tuple(spec.upper)
    return network.lower, network.upper

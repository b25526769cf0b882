"""Batched rotation math in torch: quaternions (w, x, y, z) and rotation matrices.

All functions take and return ``(..., 4)`` quaternions or ``(..., 3, 3)`` matrices and work in any
float dtype on any device. Quaternions are unit, scalar first, as in MuJoCo.

The conversions that only some callers need are pytorch-kinematics' (:mod:`pytorch_kinematics.transforms`, a
dependency, also scalar first), imported on their first call. Four functions that nearly every process calls (Chain
FK, a network's input, the training loss, the solvers' errors) stay written out here, because importing
pytorch-kinematics costs 2-4 s (its IK solver, matplotlib and MuJoCo come with it; ``python
benchmarks/rotations_bench.py``, benchmarks/results/rotations/): :func:`canonical_quaternion` and
:func:`quaternion_multiply` are its ``standardize_quaternion`` and ``quaternion_raw_multiply`` operation for
operation (tests/test_rotations.py holds them equal); :func:`matrix_to_quaternion` is its method but faster and with
a finite gradient everywhere; :func:`position_error` and the sign-invariant :func:`rotation_error` it lacks.
"""

from __future__ import annotations

import functools
from types import ModuleType

import torch

__all__ = [
    "canonical_quaternion",
    "matrix_to_quaternion",
    "quaternion_invert",
    "quaternion_multiply",
    "quaternion_to_matrix",
    "axis_angle_to_quaternion",
    "quaternion_to_axis_angle",
    "position_error",
    "rotation_error",
]


@functools.cache
def _transforms() -> ModuleType:
    """:mod:`pytorch_kinematics.transforms`, imported once, on first use."""
    import pytorch_kinematics.transforms as transforms

    return transforms


def canonical_quaternion(q: torch.Tensor) -> torch.Tensor:
    """The same rotation with a non-negative scalar part: ``q`` or ``-q`` (pytorch-kinematics' ``standardize_quaternion``).

    Args:
        q: quaternions (..., 4), wxyz.

    Returns:
        (..., 4) with ``w >= 0``.
    """
    return torch.where(q[..., :1] < 0, -q, q)


def quaternion_multiply(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product ``a ⊗ b`` (apply ``b`` first, then ``a``), sign as it comes (pytorch-kinematics'
    ``quaternion_raw_multiply``).

    Args:
        a: (..., 4) wxyz.
        b: (..., 4) wxyz, broadcastable with ``a``.

    Returns:
        (..., 4) wxyz.
    """
    aw, ax, ay, az = a.unbind(-1)
    bw, bx, by, bz = b.unbind(-1)
    return torch.stack(
        (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ),
        dim=-1,
    )


def quaternion_invert(q: torch.Tensor) -> torch.Tensor:
    """The inverse rotation of unit quaternions: the conjugate (w, −x, −y, −z).

    Args:
        q: (..., 4) wxyz, unit norm.

    Returns:
        (..., 4) wxyz.
    """
    return _transforms().quaternion_invert(q)


def quaternion_to_matrix(q: torch.Tensor) -> torch.Tensor:
    """Rotation matrices of quaternions (of any non-zero length: pytorch-kinematics divides by the squared norm).

    That division makes it about 1.8× slower than the unit-quaternion formula (benchmarks/results/rotations/), on
    paths where it does not count (one-branch sampling, the pose table's checks).

    Args:
        q: (..., 4) wxyz.

    Returns:
        (..., 3, 3).
    """
    return _transforms().quaternion_to_matrix(q)


def axis_angle_to_quaternion(axis_angle: torch.Tensor) -> torch.Tensor:
    """Unit quaternions of rotation vectors (axis × angle [rad]).

    Args:
        axis_angle: (..., 3).

    Returns:
        (..., 4) wxyz.
    """
    return _transforms().axis_angle_to_quaternion(axis_angle)


def quaternion_to_axis_angle(q: torch.Tensor) -> torch.Tensor:
    """Rotation vectors (axis × angle [rad]) of unit quaternions, angle in [0, π] for ``w >= 0``.

    Args:
        q: (..., 4) wxyz.

    Returns:
        (..., 3).
    """
    return _transforms().quaternion_to_axis_angle(q)


def matrix_to_quaternion(m: torch.Tensor) -> torch.Tensor:
    """Unit quaternions (w ≥ 0) of rotation matrices, accurate and differentiable everywhere.

    Four candidate quaternions are computed, each dividing by one of ``4·w², 4·x², 4·y², 4·z²``;
    the one with the largest divisor (at least 1/4 of the total) is kept, so there is no
    division by a small number and the gradient stays finite.

    The same method as pytorch-kinematics' ``matrix_to_quaternion`` followed by ``standardize_quaternion``, kept
    here: that one takes the square root of all four divisors before choosing one, so its gradient is NaN where a
    divisor is exactly 0 (the identity rotation's three others); the two take the same time in Chain FK with its
    backward pass (``python benchmarks/rotations_bench.py``, benchmarks/results/rotations/).

    Args:
        m: (..., 3, 3) rotation matrices.

    Returns:
        (..., 4) wxyz with ``w >= 0``.
    """
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    squares = torch.stack(
        (1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22), dim=-1
    )  # 4·(w², x², y², z²)
    candidates = torch.stack(
        (
            torch.stack((squares[..., 0], m21 - m12, m02 - m20, m10 - m01), dim=-1),
            torch.stack((m21 - m12, squares[..., 1], m10 + m01, m02 + m20), dim=-1),
            torch.stack((m02 - m20, m10 + m01, squares[..., 2], m12 + m21), dim=-1),
            torch.stack((m10 - m01, m20 + m02, m21 + m12, squares[..., 3]), dim=-1),
        ),
        dim=-2,
    )  # row i = 4·q·(component i)
    best = squares.argmax(dim=-1, keepdim=True)
    scale = squares.gather(-1, best).clamp_min(0.25).sqrt() * 2  # 4·|component i|
    chosen = candidates.gather(-2, best.unsqueeze(-1).expand(best.shape[:-1] + (1, 4))).squeeze(-2)
    return canonical_quaternion(chosen / scale)


def position_error(pos: torch.Tensor, target_pos: torch.Tensor) -> torch.Tensor:
    """Euclidean distance between positions.

    Args:
        pos: (..., 3) [m].
        target_pos: (..., 3) [m].

    Returns:
        (...) [m].
    """
    return torch.linalg.vector_norm(pos - target_pos, dim=-1)


def rotation_error(quat: torch.Tensor, target_quat: torch.Tensor) -> torch.Tensor:
    """Geodesic angle between orientations, ``2·acos(|⟨q, q'⟩|)``; sign-invariant.

    Computed as ``2·atan2(‖vec(q*⊗q')‖, |w(q*⊗q')|)``, which equals the formula above for unit
    quaternions and stays accurate (and differentiable) near zero error, where ``acos`` is not.
    pytorch-kinematics' ``quaternion_angular_distance`` computes ``sqrt(1 − c²)`` from ``c = |⟨q, q'⟩|``, which
    loses half the digits near zero (1e-8 rad comes out 0 in float64) and answers 0 for the whole batch when every
    pair is within about 1.1° (its ``quaternion_close``).

    Args:
        quat: (..., 4) wxyz.
        target_quat: (..., 4) wxyz.

    Returns:
        (...) in [0, π] [rad].
    """
    conj = quat * quat.new_tensor([1.0, -1.0, -1.0, -1.0])  # quaternion_invert, without importing pytorch-kinematics
    rel = quaternion_multiply(conj, target_quat)
    return 2 * torch.atan2(torch.linalg.vector_norm(rel[..., 1:], dim=-1), rel[..., 0].abs())

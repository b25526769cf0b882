"""Batched rotation math in torch: quaternions (w, x, y, z) and rotation matrices.

All functions take and return ``(..., 4)`` quaternions or ``(..., 3, 3)`` matrices and work in any
float dtype on any device. Quaternions are unit, scalar first, as in MuJoCo.
"""

from __future__ import annotations

import torch

__all__ = [
    "canonical_quaternion",
    "matrix_to_quaternion",
    "quaternion_multiply",
    "quaternion_to_matrix",
    "position_error",
    "rotation_error",
]


def canonical_quaternion(q: torch.Tensor) -> torch.Tensor:
    """The same rotation with a non-negative scalar part: ``q`` or ``-q``.

    Args:
        q: quaternions (..., 4), wxyz.

    Returns:
        (..., 4) with ``w >= 0``.
    """
    return torch.where(q[..., :1] < 0, -q, q)


def quaternion_multiply(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product ``a ⊗ b`` (apply ``b`` first, then ``a``).

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


def quaternion_to_matrix(q: torch.Tensor) -> torch.Tensor:
    """Rotation matrices of unit quaternions.

    Args:
        q: (..., 4) wxyz, unit norm.

    Returns:
        (..., 3, 3).
    """
    w, x, y, z = q.unbind(-1)
    return torch.stack(
        (
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ),
        dim=-1,
    ).reshape(q.shape[:-1] + (3, 3))


def matrix_to_quaternion(m: torch.Tensor) -> torch.Tensor:
    """Unit quaternions (w ≥ 0) of rotation matrices, accurate and differentiable everywhere.

    Four candidate quaternions are computed, each dividing by one of ``4·w², 4·x², 4·y², 4·z²``;
    the one with the largest divisor (at least 1/4 of the total) is kept, so there is no
    division by a small number and the gradient stays finite.

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

    Args:
        quat: (..., 4) wxyz.
        target_quat: (..., 4) wxyz.

    Returns:
        (...) in [0, π] [rad].
    """
    conj = quat * quat.new_tensor([1.0, -1.0, -1.0, -1.0])
    rel = quaternion_multiply(conj, target_quat)
    return 2 * torch.atan2(torch.linalg.vector_norm(rel[..., 1:], dim=-1), rel[..., 0].abs())

"""hik_sim.kinematics.rotations: agreement with pytorch-kinematics' transforms, and the error measures on known rotations."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
import pytorch_kinematics.transforms as pk
import torch

from hik_sim.kinematics.rotations import (
    axis_angle_to_quaternion,
    canonical_quaternion,
    matrix_to_quaternion,
    position_error,
    quaternion_invert,
    quaternion_multiply,
    quaternion_to_axis_angle,
    quaternion_to_matrix,
    rotation_error,
)

EPS64 = torch.finfo(torch.float64).eps


def _random_quaternions(count: int, seed: int) -> torch.Tensor:
    """Unit quaternions (count, 4) of either sign, float64."""
    return torch.nn.functional.normalize(torch.randn(count, 4, generator=torch.Generator().manual_seed(seed), dtype=torch.float64), dim=-1)


def _turn(axis: tuple[float, float, float], angle: float | torch.Tensor) -> torch.Tensor:
    """Quaternion(s) of a turn by ``angle`` [rad] about a unit ``axis``, float64."""
    angle = torch.as_tensor(angle, dtype=torch.float64)
    half = angle[..., None] / 2
    return torch.cat((torch.cos(half), torch.sin(half) * torch.tensor(axis, dtype=torch.float64)), dim=-1)


def test_canonical_quaternion_and_product_are_pytorch_kinematics_own() -> None:
    a, b = _random_quaternions(1000, 1), _random_quaternions(1000, 2)
    assert torch.equal(canonical_quaternion(a), pk.standardize_quaternion(a))
    assert torch.equal(quaternion_multiply(a, b), pk.quaternion_raw_multiply(a, b))
    assert torch.equal(quaternion_multiply(a[:1], b), pk.quaternion_raw_multiply(a[:1], b))  # broadcasting


def test_matrix_to_quaternion_agrees_with_pytorch_kinematics_and_inverts_quaternion_to_matrix() -> None:
    q = canonical_quaternion(_random_quaternions(2000, 3))
    q = torch.cat((q, torch.eye(4, dtype=torch.float64)))  # the identity and the three half turns
    m = quaternion_to_matrix(q)
    ours = matrix_to_quaternion(m)
    theirs = pk.standardize_quaternion(pk.matrix_to_quaternion(m))
    assert (ours[:, 0] >= 0).all()
    # a half turn (w = 0) has two canonical signs: compare up to sign
    assert float(torch.minimum((ours - theirs).abs().amax(-1), (ours + theirs).abs().amax(-1)).max()) < 50 * EPS64
    assert float(torch.minimum((ours - q).abs().amax(-1), (ours + q).abs().amax(-1)).max()) < 50 * EPS64


def test_matrix_to_quaternion_gradient_is_finite_at_the_identity_where_pytorch_kinematics_is_not() -> None:
    identity = torch.eye(3, dtype=torch.float64)[None].requires_grad_(True)
    matrix_to_quaternion(identity).sum().backward()
    assert identity.grad is not None and bool(torch.isfinite(identity.grad).all())
    theirs = torch.eye(3, dtype=torch.float64)[None].requires_grad_(True)
    pk.matrix_to_quaternion(theirs).sum().backward()
    assert theirs.grad is not None and not bool(torch.isfinite(theirs.grad).all())  # why hik_sim keeps its own


def test_quaternion_to_matrix_rotates_vectors_like_the_quaternion_product() -> None:
    q = _random_quaternions(500, 4)
    v = torch.randn(500, 3, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    pure = torch.cat((torch.zeros(500, 1, dtype=torch.float64), v), dim=-1)
    rotated = quaternion_multiply(quaternion_multiply(q, pure), quaternion_invert(q))[:, 1:]
    assert float((quaternion_to_matrix(q) @ v[..., None])[..., 0].sub(rotated).abs().max()) < 50 * EPS64
    assert torch.allclose(quaternion_to_matrix(3.0 * q), quaternion_to_matrix(q), atol=50 * EPS64)  # any length
    product = quaternion_multiply(q, quaternion_invert(q))
    assert torch.allclose(product, torch.tensor([1.0, 0, 0, 0], dtype=torch.float64).expand_as(product), atol=10 * EPS64)


def test_axis_angle_round_trip_on_known_turns() -> None:
    angles = torch.tensor([0.0, 1e-6, 0.3, 2.0, math.pi - 1e-6], dtype=torch.float64)
    axis = (0.0, 0.6, 0.8)
    q = axis_angle_to_quaternion(angles[:, None] * torch.tensor(axis, dtype=torch.float64))
    assert torch.allclose(q, _turn(axis, angles), atol=10 * EPS64)
    back = quaternion_to_axis_angle(q)
    assert torch.allclose(back, angles[:, None] * torch.tensor(axis, dtype=torch.float64), atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rotation_error_is_the_turns_angle_on_known_rotations(dtype: torch.dtype) -> None:
    angles = torch.tensor([0.0, 1e-3, 0.5, 2.0, math.pi - 1e-3, math.pi], dtype=torch.float64)
    start = _random_quaternions(len(angles), 6)
    for axis in ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.48, 0.6, 0.64)):
        turned = quaternion_multiply(start, _turn(axis, angles))
        for target in (turned, -turned):  # sign-invariant
            error = rotation_error(start.to(dtype), target.to(dtype)).double()
            tolerance = 1e-12 if dtype == torch.float64 else 1e-3  # float32: half turns' sqrt(eps) ~ 3e-4 rad
            assert torch.allclose(error, angles, atol=tolerance, rtol=0)


def test_rotation_error_stays_accurate_near_zero_where_pytorch_kinematics_gives_zero() -> None:
    start = _random_quaternions(1, 7)
    for angle in (1e-8, 1e-10):
        target = quaternion_multiply(start, _turn((0.0, 0.6, 0.8), angle))
        assert float(rotation_error(start, target)) == pytest.approx(angle, rel=1e-6)
        assert float(pk.quaternion_angular_distance(start, target)) == 0.0
    # pytorch-kinematics answers 0 for the whole batch when every pair is within ~1.1°
    batch = _random_quaternions(3, 8)
    target = quaternion_multiply(batch, _turn((1.0, 0.0, 0.0), torch.tensor([0.001, 0.01, 0.019], dtype=torch.float64)))
    assert (pk.quaternion_angular_distance(batch, target) == 0).all()
    assert torch.allclose(rotation_error(batch, target), torch.tensor([0.001, 0.01, 0.019], dtype=torch.float64), rtol=1e-9)


def test_position_error_is_the_euclidean_distance() -> None:
    pos = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]], dtype=torch.float64)
    target = torch.tensor([[3.0, 4.0, 0.0], [1.0, 2.0, 3.0]], dtype=torch.float64)
    assert position_error(pos, target).tolist() == [5.0, 0.0]


def test_importing_the_chain_does_not_import_pytorch_kinematics() -> None:
    code = ("import sys, torch, hik_sim.kinematics.chain as c; from hik_sim.kinematics.rotations import rotation_error; "
            "ch = c.Chain(__import__('hik_sim.robots', fromlist=['get_robot']).get_robot('irb120')); "
            "p = ch.fk(ch.sample(4, torch.Generator())); rotation_error(p.quat, p.quat); print('pytorch_kinematics' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"  # FK and the errors run without it (importing it costs ~2 s)

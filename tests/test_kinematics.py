"""Batched kinematics (Chain), the single-target path, and rotation math, checked with numbers.

The references are pytorch-kinematics, MuJoCo (through the single-target model here; the full
scenes are checked in test_scene.py) and central finite differences.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain, reference_fk
from hik_sim.robots import RobotSpec
from hik_sim.kinematics.rotations import (
    canonical_quaternion,
    matrix_to_quaternion,
    position_error,
    quaternion_multiply,
    quaternion_to_matrix,
    rotation_error,
)
from hik_sim.solvers.single_target import SingleTargetKinematics


def _random_quaternions(n: int, seed: int = 0) -> torch.Tensor:
    q = torch.randn(n, 4, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return q / q.norm(dim=-1, keepdim=True)


def test_fk_matches_pytorch_kinematics(robot: RobotSpec) -> None:
    chain = Chain(robot)
    q = chain.sample(1000, torch.Generator().manual_seed(1), torch.float64)
    pose = chain.fk(q)
    ref = reference_fk(robot, q)
    # pytorch-kinematics keeps its link offsets in float32, hence 1e-6 m rather than 1e-12.
    assert position_error(pose.pos, ref.pos).max() < 1e-6
    assert rotation_error(pose.quat, ref.quat).max() < 1e-5
    assert torch.allclose(pose.quat.norm(dim=-1), torch.ones(1000, dtype=torch.float64), atol=1e-12)
    assert (pose.quat[:, 0] >= 0).all()


def test_jacobian_matches_finite_differences(robot: RobotSpec) -> None:
    chain = Chain(robot)
    q = chain.sample(20, torch.Generator().manual_seed(2), torch.float64)
    pose, jac = chain.fk_and_jacobian(q)
    assert jac.shape == (20, 6, chain.dof)
    eps = 1e-6
    for i in range(chain.dof):
        step = torch.zeros_like(q)
        step[:, i] = eps
        plus, minus = chain.fk_matrix(q + step), chain.fk_matrix(q - step)
        linear = (plus[0] - minus[0]) / (2 * eps)
        # angular velocity from the rotation change: skew(w) = dR/dq · Rᵀ
        d_rot = (plus[1] - minus[1]) / (2 * eps) @ chain.fk_matrix(q)[1].transpose(1, 2)
        angular = torch.stack((d_rot[:, 2, 1], d_rot[:, 0, 2], d_rot[:, 1, 0]), dim=-1)
        assert torch.allclose(jac[:, :3, i], linear, atol=1e-7), f"linear column {i}"
        assert torch.allclose(jac[:, 3:, i], angular, atol=1e-7), f"angular column {i}"
    assert torch.allclose(chain.jacobian(q), jac)
    assert torch.allclose(chain.fk(q).pos, pose.pos)


def test_fk_gradient_matches_the_jacobian(robot: RobotSpec) -> None:
    chain = Chain(robot)
    q = chain.sample(8, torch.Generator().manual_seed(3), torch.float64).requires_grad_(True)
    pos = chain.fk(q).pos
    (grad,) = torch.autograd.grad(pos[:, 2].sum(), q)
    assert torch.allclose(grad, chain.jacobian(q.detach())[:, 2, :], atol=1e-10)


def test_single_target_path_matches_the_batched_chain(robot: RobotSpec) -> None:
    chain = Chain(robot)
    fast = SingleTargetKinematics(robot, chain.geometry)
    q = chain.sample(50, torch.Generator().manual_seed(4), torch.float64)
    pose, jac = chain.fk_and_jacobian(q)
    for i in range(50):
        single, single_jac = fast.fk_and_jacobian(q[i].numpy())
        assert np.abs(single.pos - pose.pos[i].numpy()).max() < 1e-12
        assert np.abs(single.quat - pose.quat[i].numpy()).max() < 1e-12
        assert np.abs(single_jac - jac[i].numpy()).max() < 1e-12
        assert np.array_equal(fast.fk(q[i].numpy()).pos, single.pos)


def test_float32_agrees_with_float64(robot: RobotSpec) -> None:
    chain = Chain(robot)
    q = chain.sample(500, torch.Generator().manual_seed(5), torch.float64)
    p64, p32 = chain.fk(q), chain.fk(q.float())
    assert p32.pos.dtype == torch.float32
    assert position_error(p32.pos.double(), p64.pos).max() < 1e-5
    assert rotation_error(p32.quat.double(), p64.quat).max() < 1e-4


def test_sampling_is_uniform_within_limits_and_seeded() -> None:
    from conftest import robot_by_id

    chain = Chain(robot_by_id("irb120"))
    lower, upper = chain.limits(torch.float64)
    q = chain.sample(20000, torch.Generator().manual_seed(6), torch.float64)
    assert q.shape == (20000, 6) and q.dtype == torch.float64
    assert (q >= lower).all() and (q <= upper).all()
    fraction = (q - lower) / (upper - lower)
    assert torch.allclose(fraction.mean(0), torch.full((6,), 0.5, dtype=torch.float64), atol=0.01)
    assert torch.allclose(fraction.var(0), torch.full((6,), 1 / 12, dtype=torch.float64), atol=0.005)
    again = chain.sample(20000, torch.Generator().manual_seed(6), torch.float64)
    assert torch.equal(q, again)
    assert not torch.equal(q, chain.sample(20000, torch.Generator().manual_seed(7), torch.float64))
    assert torch.equal(chain.clamp(q * 10).clamp(lower, upper), chain.clamp(q * 10))


def test_irb120_zero_pose_is_the_published_one() -> None:
    from conftest import robot_by_id

    chain = Chain(robot_by_id("irb120"))
    pose = chain.fk(torch.zeros(1, 6, dtype=torch.float64))
    # tool0 at x = 0.302 + 0.072, z = 0.29 + 0.27 + 0.07; tool z axis along base x (rpy 0, π/2, 0)
    assert torch.allclose(pose.pos, torch.tensor([[0.374, 0.0, 0.63]], dtype=torch.float64), atol=1e-12)
    expected = torch.tensor([[math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0]], dtype=torch.float64)
    assert rotation_error(pose.quat, expected).item() < 1e-12


@pytest.mark.parametrize("bad", [torch.zeros(3), torch.zeros(2, 5), torch.zeros(2, 6, dtype=torch.int64), np.zeros((2, 6))])
def test_bad_joint_input_is_a_hik_error(bad: object) -> None:
    from conftest import robot_by_id

    chain = Chain(robot_by_id("irb120"))
    with pytest.raises(HikError, match=r"\(B, 6\)|float|torch.Tensor"):
        chain.fk(bad)  # type: ignore[arg-type]
    fast = SingleTargetKinematics(robot_by_id("irb120"))
    with pytest.raises(HikError, match=r"shape \(6,\)"):
        fast.fk(np.zeros(5))


def test_matrix_quaternion_round_trip_including_half_turns() -> None:
    quats = _random_quaternions(2000)
    # rotations by π about assorted axes: w = 0, the hard case for conversions
    axes = torch.randn(200, 3, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    half_turns = torch.cat((torch.zeros(200, 1, dtype=torch.float64), axes / axes.norm(dim=-1, keepdim=True)), dim=-1)
    quats = torch.cat((quats, half_turns, torch.eye(4, dtype=torch.float64)))
    back = matrix_to_quaternion(quaternion_to_matrix(quats))
    assert rotation_error(back, quats).max() < 1e-7
    assert torch.allclose(back, canonical_quaternion(quats), atol=1e-7) or rotation_error(back, quats).max() < 1e-7
    assert (back[:, 0] >= 0).all()


def test_rotation_error_is_the_geodesic_angle_and_sign_invariant() -> None:
    a = _random_quaternions(500, seed=9)
    angle = torch.rand(500, generator=torch.Generator().manual_seed(10), dtype=torch.float64) * math.pi
    axis = torch.nn.functional.normalize(torch.randn(500, 3, generator=torch.Generator().manual_seed(11), dtype=torch.float64), dim=-1)
    delta = torch.cat((torch.cos(angle / 2)[:, None], torch.sin(angle / 2)[:, None] * axis), dim=-1)
    b = quaternion_multiply(a, delta)
    assert torch.allclose(rotation_error(a, b), angle, atol=1e-9)
    assert torch.allclose(rotation_error(a, -b), angle, atol=1e-9)
    assert torch.allclose(rotation_error(a, b), 2 * torch.acos((a * b).sum(-1).abs().clamp(max=1)), atol=1e-6)


def test_error_gradients_are_finite_at_zero_error() -> None:
    q = _random_quaternions(4).requires_grad_(True)
    p = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    (rotation_error(q, q.detach()).sum() + position_error(p, p.detach() + 1e-3).sum()).backward()
    assert torch.isfinite(q.grad).all() and torch.isfinite(p.grad).all()
    m = quaternion_to_matrix(_random_quaternions(4)).requires_grad_(True)
    matrix_to_quaternion(m).sum().backward()
    assert torch.isfinite(m.grad).all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu() -> None:
    from conftest import robot_by_id

    chain = Chain(robot_by_id("panda"))
    q = chain.sample(4096, torch.Generator().manual_seed(12), torch.float64)
    cpu = chain.fk_and_jacobian(q)
    gpu = chain.fk_and_jacobian(q.cuda())
    assert gpu[0].pos.device.type == "cuda"
    assert torch.allclose(gpu[0].pos.cpu(), cpu[0].pos, atol=1e-10)
    assert torch.allclose(gpu[1].cpu(), cpu[1], atol=1e-10)
    sampled = chain.sample(16, torch.Generator(device="cuda").manual_seed(0), torch.float32)
    assert sampled.device.type == "cuda"


def test_non_finite_joint_values_are_a_hik_error_not_a_nan_pose() -> None:
    from conftest import robot_by_id

    robot = robot_by_id("irb120")
    q = torch.zeros(3, 6, dtype=torch.float64)
    q[1, 2] = float("nan")
    with pytest.raises(HikError, match="finite.*1 of 3 rows"):
        Chain(robot).fk(q)
    with pytest.raises(HikError, match="finite"):
        Chain(robot).jacobian(q.clone().fill_(float("inf")))
    with pytest.raises(HikError, match="finite"):
        SingleTargetKinematics(robot).fk_and_jacobian(np.array([0, 0, np.inf, 0, 0, 0]))

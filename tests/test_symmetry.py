"""The first joint's symmetry (hik_sim.kinematics.symmetry): FK(q + α·e₁) = M(α) · FK(q) on every robot."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import ALL_ROBOTS, robot_by_id

from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import position_error, rotation_error
from hik_sim.kinematics.symmetry import FirstJointSymmetry, wrap_first_joint
from hik_sim.robots import robot_from_urdf


def _check_moves_like_the_first_joint(chain: Chain, alphas: tuple[float, ...]) -> None:
    symmetry = FirstJointSymmetry(chain)
    q = chain.sample(50, torch.Generator().manual_seed(3), torch.float64)
    before = chain.fk(q)
    for alpha in alphas:
        shifted = q.clone()
        shifted[:, 0] += alpha  # outside the limits is fine: FK is defined everywhere
        after = chain.fk(shifted)
        pos, quat = symmetry.move(before.pos, before.quat, alpha)
        assert float(position_error(pos, after.pos).max()) < 1e-12
        assert float(rotation_error(quat, after.quat).max()) < 1e-7  # acos-free geodesic angle of float64 quaternions
        for i in range(3):  # the NumPy single-pose path agrees
            one_pos, one_quat = symmetry.move_one(before.pos[i].numpy(), before.quat[i].numpy(), alpha)
            assert np.allclose(one_pos, pos[i].numpy(), atol=1e-12) and np.allclose(one_quat, quat[i].numpy(), atol=1e-12)
        # moving back undoes it
        back_pos, back_quat = symmetry.move(pos, quat, -alpha)
        assert torch.allclose(back_pos, before.pos, atol=1e-12)
        assert float(rotation_error(back_quat, before.quat).max()) < 1e-7


@pytest.mark.parametrize("robot_id", ALL_ROBOTS)
def test_moving_the_pose_is_moving_the_first_joint(robot_id: str) -> None:
    chain = Chain(robot_by_id(robot_id))
    symmetry = FirstJointSymmetry(chain)
    assert symmetry.revolute and abs(np.linalg.norm(symmetry.axis) - 1) < 1e-12
    _check_moves_like_the_first_joint(chain, (0.3, -1.1, math.pi))
    third = min(symmetry.span, 2 * math.pi) / 3
    assert symmetry.default_turns == pytest.approx((third, -third))


@pytest.mark.parametrize("robot_id", ALL_ROBOTS)
def test_a_faced_configuration_points_the_same_arm_shape_at_the_target(robot_id: str) -> None:
    """face(): only the first joint moves, it stays inside its limits, and where the turn it needs lies
    inside them the end-effector's azimuth about the axis becomes the target's (FK, float64)."""
    chain = Chain(robot_by_id(robot_id))
    symmetry = FirstJointSymmetry(chain)
    lower, upper = chain.robot.lower[0], chain.robot.upper[0]
    q = chain.sample(200, torch.Generator().manual_seed(8), torch.float64)
    target = chain.fk(chain.sample(200, torch.Generator().manual_seed(9), torch.float64)).pos
    faced = symmetry.face(q, chain.fk(q).pos, target, lower, upper)
    assert torch.equal(faced[:, 1:], q[:, 1:])
    assert bool(((faced[:, 0] >= lower) & (faced[:, 0] <= upper)).all())
    inside = (faced[:, 0] > lower + 1e-9) & (faced[:, 0] < upper - 1e-9)
    assert int(inside.sum()) >= 50  # every robot leaves some of these turns inside its range
    gap = torch.remainder(symmetry.azimuth(chain.fk(faced).pos) - symmetry.azimuth(target) + math.pi, 2 * math.pi) - math.pi
    assert float(gap[inside].abs().max()) < 1e-9


def test_wrapping_a_first_joint_keeps_it_in_range_and_clamps_the_gap_to_the_nearer_limit() -> None:
    first = torch.tensor([0.5, 0.5 + 2 * math.pi, -0.5 - 4 * math.pi, 2.0, 2.7, 3.9], dtype=torch.float64)
    wrapped = wrap_first_joint(first, -1.0, 2.5, clamp=False)  # [−1, −1 + 2π)
    assert torch.allclose(wrapped, torch.tensor([0.5, 0.5, -0.5, 2.0, 2.7, 3.9], dtype=torch.float64))
    clamped = wrap_first_joint(first, -1.0, 2.5)  # 2.7 is nearer 2.5; 3.9 is 1.383 from −1 round the circle, 1.4 from 2.5
    assert clamped.tolist() == pytest.approx([0.5, 0.5, -0.5, 2.0, 2.5, -1.0])


def test_the_g1s_turns_are_a_third_of_its_shoulder_pitch_range() -> None:
    symmetry = FirstJointSymmetry(Chain(robot_by_id("g1")))
    assert symmetry.span == pytest.approx(2.6704 + 3.0892)  # the URDF's limits
    assert symmetry.default_turns == pytest.approx((1.9199, -1.9199), abs=1e-4)


PRISMATIC_ARM = """<robot name="slider">
  <link name="base"/><link name="carriage"/><link name="upper"/><link name="tool"/>
  <joint name="slide" type="prismatic"><parent link="base"/><child link="carriage"/>
    <origin xyz="0.1 -0.2 0.3" rpy="0.2 0.4 -0.3"/><axis xyz="1 1 0"/><limit lower="-0.2" upper="0.4" effort="1" velocity="1"/></joint>
  <joint name="shoulder" type="revolute"><parent link="carriage"/><child link="upper"/>
    <origin xyz="0 0 0.2"/><axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="wrist" type="revolute"><parent link="upper"/><child link="tool"/>
    <origin xyz="0.3 0 0" rpy="0 0 0.5"/><axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
</robot>
"""


def test_a_prismatic_first_joint_shifts_the_pose_along_its_axis(tmp_path: Path) -> None:
    urdf = tmp_path / "slider.urdf"
    urdf.write_text(PRISMATIC_ARM)
    chain = Chain(robot_from_urdf(urdf, "base", "tool"))
    symmetry = FirstJointSymmetry(chain)
    assert not symmetry.revolute
    _check_moves_like_the_first_joint(chain, (0.05, -0.3))
    assert symmetry.default_turns == pytest.approx((0.2, -0.2))  # a third of its 0.6 m


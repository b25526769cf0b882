"""Flip symmetries (hik_sim.kinematics.flips) found on every registered robot, checked against MuJoCo, and
what they buy the hybrid solver's restarts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.flips import JointFlips
from hik_sim.kinematics.tolerances import EXACT
from hik_sim.learning.data import make_eval_set
from hik_sim.robots import get_robot, robot_names
from hik_sim.solvers.single_target import SingleTargetKinematics

# Roll-pitch-roll triples, by their first joint's index: the IRB120's joint_4-joint_6 (its wrist), the Panda's
# panda_joint1-3 (its shoulder), JVRC-1's L_ELBOW_Y-L_WRIST_R-L_WRIST_Y. Romeo's LElbowRoll-LElbowYaw-LWristRoll
# is one too, but LElbowYaw spans [-pi/2, 0]: its negation never fits, so no flip is inside the limits.
EXPECTED = {"irb120": (3,), "panda": (0,), "romeo": (), "jvrc1": (7,), "g1": (), "talos": (), "icub": ()}


def test_every_registered_robot_has_its_expected_flips() -> None:
    assert set(EXPECTED) == set(robot_names())
    for robot in robot_names():
        assert JointFlips(Chain(get_robot(robot))).triples == EXPECTED[robot], robot


@pytest.mark.parametrize("robot", [r for r, triples in EXPECTED.items() if triples])
def test_a_flip_inside_the_limits_reaches_the_same_pose_in_mujoco(robot: str) -> None:
    chain = Chain(get_robot(robot))
    flips = JointFlips(chain)
    mujoco_fk = SingleTargetKinematics(chain.robot, chain.geometry)
    lower, upper = chain.limits(torch.float64)
    q = chain.sample(200, torch.Generator().manual_seed(5), dtype=torch.float64)
    for first in flips.triples:
        flipped = flips.flip(q, first)
        assert bool(((flipped >= lower) & (flipped <= upper)).all())  # inside the limits, always
        moved = flipped[:, first:first + 3] - q[:, first:first + 3]
        exact = ((moved[:, 0] - math.pi).abs() < 1e-12) | ((moved[:, 0] + math.pi).abs() < 1e-12)
        exact &= ((moved[:, 2] - math.pi).abs() < 1e-12) | ((moved[:, 2] + math.pi).abs() < 1e-12)
        exact &= (flipped[:, first + 1] + q[:, first + 1]).abs() < 1e-12
        assert int(exact.sum()) >= 20, "too few samples whose flip fits the limits to check anything"
        assert bool(torch.equal(flipped[:, :first], q[:, :first])) and bool(torch.equal(flipped[:, first + 3:], q[:, first + 3:]))
        for b in torch.nonzero(exact).flatten().tolist():
            one, other = mujoco_fk.fk(q[b].numpy()), mujoco_fk.fk(flipped[b].numpy())
            assert np.linalg.norm(one.pos - other.pos) < 1e-9
            assert abs(abs(float(np.dot(one.quat, other.quat))) - 1.0) < 1e-12


def test_flips_of_held_joints_are_left_out_and_unknown_triples_refused() -> None:
    chain = Chain(get_robot("irb120"))
    assert JointFlips(chain, free=[0, 1, 2, 3, 4]).triples == ()  # joint 6 held (the q6-fixed scenario)
    with pytest.raises(ValueError, match="flips start at \\[3\\]"):
        JointFlips(chain).flip(torch.zeros(1, 6, dtype=torch.float64), 2)


def test_flip_restarts_save_the_hybrid_evaluations_on_the_irb120_and_lose_no_target() -> None:
    """On 600 IRB120 targets (seed 777, the hybrid table's) the targets whose network answers all end pinned
    short of exact are the expensive ones; the wrist flip of such a run reaches exact for most of them (the
    registry's hybrid: the seed network, then its fallback network)."""
    from hik_sim.policies import hybrid_seed_name, load_hybrid_fallback, load_pretrained
    from hik_sim.solvers.ik import HybridIK, LMRefiner

    chain = Chain(get_robot("irb120"))
    targets = make_eval_set(chain, 777, 600).batch
    network = load_pretrained("irb120", hybrid_seed_name("irb120"))
    fallback = load_hybrid_fallback("irb120")
    assert fallback is not None
    plain, flipped = (HybridIK(network, LMRefiner(chain), flip_restarts=flip, fallback=fallback).solve(targets.pos, targets.quat)
                      for flip in (False, True))
    assert float(EXACT.met(flipped.pos_err, flipped.rot_err).float().mean()) >= float(EXACT.met(plain.pos_err, plain.rot_err).float().mean())
    assert bool(flipped.success.all())
    assert float(flipped.function_evals.double().mean()) < 0.85 * float(plain.function_evals.double().mean())


def test_flip_restarts_save_the_single_target_solver_evaluations_and_never_flip_the_tracking_run() -> None:
    from hik_sim.policies import load_pretrained, single_target_seed_name
    from hik_sim.solvers.ik import SingleTargetIK

    chain = Chain(get_robot("irb120"))
    targets = make_eval_set(chain, 778, 400).batch
    network = load_pretrained("irb120", single_target_seed_name("irb120"))
    plain, flipped = (SingleTargetIK(chain, network, flip_restarts=flip).solve(targets.pos, targets.quat) for flip in (False, True))
    assert bool(flipped.success.all()) and bool(plain.success.all())
    assert float(flipped.function_evals.double().mean()) < 0.9 * float(plain.function_evals.double().mean())
    # An unreachable target: every run ends short. From the home pose (no q_init) the run is followed by its wrist
    # flip; from the current joints (tracking) it is not, since the arm would swap wrist branches.
    solver = SingleTargetIK(chain, None, restarts=0)
    calls: list[np.ndarray] = []
    refine = solver.lm.refine
    solver.lm.refine = lambda pos, quat, q: calls.append(np.array(q)) or refine(pos, quat, q)  # type: ignore[method-assign]
    far, upright = np.array([5.0, 0.0, 0.5]), np.array([1.0, 0.0, 0.0, 0.0])
    solver.solve_one(far, upright)
    assert len(calls) == 2
    reached = refine(far, upright, calls[0]).q
    assert np.allclose(calls[1], JointFlips(chain).flip(torch.from_numpy(reached[None]), 3)[0].numpy())
    calls.clear()
    q_now = np.array(chain.robot.home, dtype=float)
    solver.solve_one(far, upright, q_init=q_now)
    assert len(calls) == 1 and np.array_equal(calls[0], q_now)

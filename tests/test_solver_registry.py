"""One solver interface: the IKSolver protocol, the immutable IKResult, and the one registry
from a name to a solver that the controller, the evaluator, the experiments and the benchmarks use."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from conftest import ALL_ROBOTS, robot_by_id, user_robot

from hik_sim.errors import HikError, SolverError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.symmetry import FirstJointSymmetry
from hik_sim.learning.data import make_eval_set
from hik_sim.policies import closed_loop_extra_names, closed_loop_network_name, hybrid_seed_name, load_pretrained, pretrained_path, single_target_seed_name
from hik_sim.robots import get_robot
from hik_sim.solvers.base import IKResult, IKSolver, SingleTargetSolver, _merge
from hik_sim.solvers.dm_control import DmControlIK
from hik_sim.solvers.hybrid import HybridIK
from hik_sim.solvers.lm import LMRefiner
from hik_sim.solvers.neural import CLOSED_LOOP_BRANCHES, CLOSED_LOOP_CORRECTIONS, CLOSED_LOOP_NEAREST_FIRST, NeuralIK
from hik_sim.solvers.registry import (
    NETWORK_FREE_NAMES,
    SEEDED_NAMES,
    SOLVER_NAMES,
    NetworkNotShippedError,
    UnknownSolverError,
    make_solver,
    shipped_networks,
    solver_names,
)
from hik_sim.solvers.restarts import MultistartIK
from hik_sim.solvers.single_target_ik import SingleTargetIK

# dm_control builds the robot's whole scene: every robot's is built by the slow test below
FAST_DM_CONTROL = ("irb120", "user_arm")


def _check_builds(robot_id: str, names: tuple[str, ...]) -> None:
    robot = robot_by_id(robot_id)
    for name in names:
        for batched in ((False, True) if name == "hybrid" else (False,)):
            solver = make_solver(name, robot, batched=batched)
            assert isinstance(solver, IKSolver), (name, batched)
            assert solver.chain.robot.name == robot.name and solver.chain.dof == len(robot.joint_names)
            assert isinstance(solver, SingleTargetSolver) == (isinstance(solver, SingleTargetIK)), name


@pytest.mark.parametrize("robot_id", ALL_ROBOTS)
def test_every_name_builds_for_every_robot_that_ships_what_it_needs(robot_id: str) -> None:
    robot = robot_by_id(robot_id)
    names = solver_names(robot)
    shipped = shipped_networks(robot)
    if shipped:  # every network-free name, the seeded ones and every shipped network
        assert set(NETWORK_FREE_NAMES) | set(SEEDED_NAMES) | set(shipped) == set(names)
        assert {"harmoatt", "mlp"} <= set(names)
    else:
        assert names == NETWORK_FREE_NAMES
    _check_builds(robot_id, tuple(n for n in names if n != "dm_control" or robot_id in FAST_DM_CONTROL))


@pytest.mark.slow
@pytest.mark.parametrize("robot_id", [r for r in ALL_ROBOTS if r not in FAST_DM_CONTROL])
def test_dm_control_builds_for_every_robot(robot_id: str) -> None:
    _check_builds(robot_id, ("dm_control",))


def _direct(name: str, chain: Chain, batched: bool):  # noqa: ANN202
    """The solver ``name`` stands for, built by hand from the solver classes."""
    robot = chain.robot
    if name == "closed_loop":
        extra = [load_pretrained(robot.name, other) for other in closed_loop_extra_names(robot.name)]
        return NeuralIK(load_pretrained(robot.name, closed_loop_network_name(robot.name)), chain, corrections=CLOSED_LOOP_CORRECTIONS,
                        branches=CLOSED_LOOP_BRANCHES, nearest_first=CLOSED_LOOP_NEAREST_FIRST, extra_networks=extra,
                        first_joint_turns=FirstJointSymmetry(chain).default_turns)
    if name == "hybrid":
        if batched:
            return HybridIK(load_pretrained(robot.name, hybrid_seed_name(robot.name)), LMRefiner(chain))
        return SingleTargetIK(chain, load_pretrained(robot.name, single_target_seed_name(robot.name)))
    if name == "multistart":
        return MultistartIK(LMRefiner(chain), starts=10)
    if name == "lm":
        return SingleTargetIK(chain)
    if name == "dm_control":
        from hik_sim.sim import build_scene

        return DmControlIK(build_scene(robot))
    return NeuralIK(load_pretrained(robot.name, name), chain)


def _same(a: IKResult, b: IKResult) -> None:
    assert torch.allclose(a.q, b.q, atol=1e-9, rtol=0)
    assert torch.equal(a.success, b.success)
    assert torch.equal(a.fk_evals, b.fk_evals) and torch.equal(a.iterations, b.iterations)


@pytest.mark.parametrize("robot_id", ["irb120", "g1"])
def test_a_solved_target_agrees_with_the_solver_built_directly(robot_id: str) -> None:
    robot = get_robot(robot_id)
    chain = Chain(robot)
    targets = make_eval_set(chain, 31, 4).batch
    q_init = targets.q + 0.05
    for name in solver_names(robot):
        if name == "dm_control" and robot_id != "irb120":
            continue
        for batched in ((False, True) if name == "hybrid" else (False,)):
            ours, theirs = make_solver(name, robot, batched=batched), _direct(name, chain, batched)
            assert type(ours) is type(theirs), name
            _same(ours.solve(targets.pos, targets.quat), theirs.solve(targets.pos, targets.quat))
            _same(ours.solve(targets.pos, targets.quat, q_init), theirs.solve(targets.pos, targets.quat, q_init))
            if isinstance(ours, SingleTargetSolver):
                one = ours.solve_one(targets.pos[0].numpy(), targets.quat[0].numpy(), q_init[0].numpy())
                _same(one, theirs.solve_one(targets.pos[0].numpy(), targets.quat[0].numpy(), q_init[0].numpy()))


def test_a_checkpoint_path_and_a_given_network() -> None:
    robot = get_robot("irb120")
    chain = Chain(robot)
    targets = make_eval_set(chain, 32, 5).batch
    path = pretrained_path("irb120", "mlp")
    from_path = make_solver(str(path), robot)
    assert isinstance(from_path, NeuralIK) and from_path.network.card is not None
    _same(from_path.solve(targets.pos, targets.quat), make_solver("mlp", robot).solve(targets.pos, targets.quat))
    seeded = make_solver("hybrid", robot, network=path, batched=True)  # a checkpoint in place of the shipped seed network
    assert isinstance(seeded, HybridIK) and seeded.network.hypotheses == 1
    network = load_pretrained("irb120", "harmoatt")
    assert make_solver("closed_loop", robot, network=network).network is network
    with pytest.raises(SolverError, match=r"solver 'lm' takes no network= \(only closed_loop, hybrid do\)"):
        make_solver("lm", robot, network=network)


def test_the_result_cannot_be_changed() -> None:
    robot = get_robot("irb120")
    targets = make_eval_set(Chain(robot), 33, 3).batch
    result = make_solver("multistart", robot).solve(targets.pos, targets.quat)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.wall_time = 0.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.q = result.q * 0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.fk_evals += 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        result.extra["limit_violations"] = 3  # type: ignore[index]
    later = dataclasses.replace(result, wall_time=1.5)
    assert later.wall_time == 1.5 and result.wall_time != 1.5 and isinstance(later.q, torch.Tensor)


def test_a_retry_builds_a_new_result_and_leaves_the_first_as_it_was() -> None:
    def result(value: float, success: bool, count: int) -> IKResult:
        ones = torch.ones(3, dtype=torch.int64)
        return IKResult(torch.full((3, 2), value, dtype=torch.float64), torch.full((3,), value, dtype=torch.float64),
                        torch.full((3,), value, dtype=torch.float64), torch.full((3,), success), count * ones, count * ones, count * ones)

    first = result(1.0, False, 2)
    retry = IKResult(*(getattr(result(0.5, True, 5), name)[:2] for name in ("q", "pos_err", "rot_err", "success", "iterations",
                                                                              "fk_evals", "jac_evals")))
    merged = _merge(first, retry, torch.tensor([0, 2]))
    assert merged is not first
    assert torch.equal(first.q, torch.ones(3, 2, dtype=torch.float64)) and torch.equal(first.fk_evals, torch.tensor([2, 2, 2]))
    assert merged.q[:, 0].tolist() == [0.5, 1.0, 0.5] and merged.success.tolist() == [True, False, True]
    assert merged.fk_evals.tolist() == [7, 2, 7] and merged.iterations.tolist() == [7, 2, 7]


def test_unknown_names_list_the_valid_ones() -> None:
    irb120 = get_robot("irb120")
    with pytest.raises(UnknownSolverError) as error:
        make_solver("transformer", irb120)
    assert isinstance(error.value, HikError)
    message = str(error.value)
    assert "unknown solver 'transformer'" in message and all(name in message for name in SOLVER_NAMES)
    assert "harmoatt_4answers" in message and "checkpoint path" in message
    with pytest.raises(UnknownSolverError, match="unknown solver 'harmoatt_q6fixed'"):  # shipped for the IRB120 only
        make_solver("harmoatt_q6fixed", "romeo")
    with pytest.raises(NetworkNotShippedError, match="solver 'hybrid' needs a network, and none is shipped for robot 'user_arm'; "
                                                     "give network=.*multistart, lm, dm_control"):
        make_solver("hybrid", user_robot())
    with pytest.raises(SolverError, match="robot must be a registered robot's name or a RobotSpec, got None"):
        make_solver("lm", None)  # type: ignore[arg-type]


def test_the_controller_and_the_evaluator_accept_the_same_names() -> None:
    from hik_sim.evaluation.evaluate import build_policy
    from hik_sim.policies.controller import CONTROLLER_KINDS, IKController

    assert CONTROLLER_KINDS == SOLVER_NAMES
    robot = get_robot("irb120")
    checkpoint = str(pretrained_path("irb120", "mlp"))
    for name in (*solver_names(robot), checkpoint):
        controller = IKController.pretrained(robot, name)
        policy = build_policy(name, robot)
        assert type(controller.solver) is type(make_solver(name, robot)) is type(policy.controller.solver), name
        assert type(policy.solver) is type(make_solver(name, robot, batched=True)), name
    unshipped = [(robot, n) for n in ("cycleik", "regression") if n not in shipped_networks(robot)]
    for other, name in ((robot, "transformer"), (robot, "harmoatt_8answers"), (user_robot(), "hybrid"), (user_robot(), "harmoatt"),
                        (get_robot("romeo"), "harmoatt_q6fixed"), *unshipped):
        with pytest.raises(HikError):
            IKController.pretrained(other, name)
        with pytest.raises(HikError):
            build_policy(name, other)
    user = user_robot()
    for name in NETWORK_FREE_NAMES:
        assert type(IKController.pretrained(user, name).solver) is type(build_policy(name, user).controller.solver)


class _Duck:
    """A solver from outside hik_sim: a chain and solve(), nothing else."""

    def __init__(self, chain: Chain, single: bool = False) -> None:
        self.chain, self.inner, self.calls = chain, SingleTargetIK(chain), []
        if single:
            self.solve_one = self._solve_one

    def solve(self, target_pos, target_quat, q_init=None) -> IKResult:  # noqa: ANN001
        self.calls.append("solve")
        return self.inner.solve(target_pos, target_quat, q_init)

    def _solve_one(self, target_pos, target_quat, q_init=None) -> IKResult:  # noqa: ANN001
        self.calls.append("solve_one")
        return self.inner.solve_one(target_pos, target_quat, q_init)


def test_the_controller_calls_through_the_protocol() -> None:
    from hik_sim.policies.controller import IKController

    chain = Chain(get_robot("irb120"))
    with pytest.raises(SolverError, match="object is not an IK solver"):
        IKController(object())  # type: ignore[arg-type]
    q = np.asarray(chain.robot.home, dtype=np.float64)
    pose = chain.fk(torch.from_numpy(q[None]))
    observation = {"joint_pos": q, "ee_pos": pose.pos[0].numpy(), "ee_quat": pose.quat[0].numpy(),
                   "goal_pos": pose.pos[0].numpy() + [0.0, 0.02, 0.0], "goal_quat": pose.quat[0].numpy()}
    for single, call in ((False, "solve"), (True, "solve_one")):
        duck = _Duck(chain, single)
        assert isinstance(duck, IKSolver) and isinstance(duck, SingleTargetSolver) == single
        command = IKController(duck)(observation)
        assert duck.calls == [call] and command.shape == (chain.dof,)

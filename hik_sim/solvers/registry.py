"""One registry from a name to an IK solver, used by the controller, the evaluator, the experiments and the benchmarks.

A name is one of :data:`SOLVER_NAMES`, any other network shipped for the robot (e.g.
``harmoatt_4answers``), or a checkpoint path (``.safetensors``):

- ``harmoatt``, ``mlp``, ``cycleik``, ``regression`` and every other shipped network name: that
  network alone, open loop (:class:`~hik_sim.solvers.neural.NeuralIK`); a checkpoint path likewise.
- ``closed_loop``: the robot's closed-loop network (:func:`~hik_sim.learning.pretrained.closed_loop_network_name`, with the
  answers of :func:`~hik_sim.learning.pretrained.closed_loop_extra_names` beside its own) closed on its own error by
  :data:`~hik_sim.solvers.neural.CLOSED_LOOP_CORRECTIONS` goal-shift corrections, the answer nearest the last target first;
  a target all of them miss is asked again turned about the first joint (``first_joint_turns``).
- ``hybrid``: the seed network → LM, with restarts: batched, :class:`~hik_sim.solvers.hybrid.HybridIK` on
  :func:`~hik_sim.learning.pretrained.hybrid_seed_name`'s network (asking :func:`~hik_sim.learning.pretrained.hybrid_fallback_name`'s,
  where the robot has one, for the targets none of the seed's answers is good for); one target a call (the controller's path),
  :class:`~hik_sim.solvers.single_target_ik.SingleTargetIK` on :func:`~hik_sim.learning.pretrained.single_target_seed_name`'s (the same
  HarmoAtt-IK network); ``network="mlp_seed"`` seeds either from the small MLP instead.
- ``multistart``: :class:`~hik_sim.solvers.restarts.MultistartIK`, 10 starts (the current joints first while tracking).
- ``lm``: :class:`~hik_sim.solvers.single_target_ik.SingleTargetIK` without a network (the current joints, then up
  to 49 random restarts).
- ``dm_control``: :class:`~hik_sim.solvers.dm_control.DmControlIK` on the robot's scene.

``closed_loop`` and ``hybrid`` take ``network=`` in place of the shipped seed (a robot no network
is shipped for needs it); ``multistart``, ``lm`` and ``dm_control`` need no network.

    from hik_sim.solvers.registry import make_solver

    solver = make_solver("hybrid", "irb120", batched=True)   # HybridIK
    result = solver.solve(pos, quat)                          # IKResult
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Union

from hik_sim.errors import SolverError
from hik_sim.learning.pretrained import (closed_loop_extra_names, closed_loop_network_name, hybrid_seed_name, load_hybrid_fallback,
                                         load_pretrained, pretrained_names, single_target_seed_name)
from hik_sim.robots import RobotSpec

if TYPE_CHECKING:
    from hik_sim.learning.network import IKNetwork
    from hik_sim.solvers.base import IKSolver

__all__ = ["SOLVER_NAMES", "NETWORK_NAMES", "SEEDED_NAMES", "NETWORK_FREE_NAMES", "BASELINE_NAMES", "UnknownSolverError", "NetworkNotShippedError",
           "make_solver", "solver_names", "shipped_networks", "is_checkpoint", "needs_network"]

NETWORK_NAMES: tuple[str, ...] = ("harmoatt", "mlp", "cycleik", "regression")
"""The model families: each name is that network of the robot, alone. The papers' networks, found from a
checkout (:data:`hik_sim.learning.pretrained.BENCHMARK_NETWORKS`): ``harmoatt`` and ``mlp``, the one-answer pair of
the equal-time comparison, for every registered robot, ``cycleik`` and ``regression`` where trained. The
package's own HarmoAtt-IK is ``harmoatt_4answers``, a shipped network's name."""
SEEDED_NAMES: tuple[str, ...] = ("closed_loop", "hybrid")
"""The names built on the robot's seed network (or on ``network=``)."""
NETWORK_FREE_NAMES: tuple[str, ...] = ("multistart", "lm", "dm_control")
"""The names that need no network (any robot, a URDF robot too)."""
BASELINE_NAMES: tuple[str, ...] = ("cycleik", "regression")
"""The seed papers' baseline networks, shipped for some robots only (docs/paper_models.md)."""
SOLVER_NAMES: tuple[str, ...] = ("harmoatt", "mlp", "closed_loop", "hybrid", *NETWORK_FREE_NAMES, *BASELINE_NAMES)
"""Every fixed name :func:`make_solver` takes (besides other shipped networks and checkpoint paths): the
equal-time pair (from a checkout), the ones every robot with shipped networks runs, then the papers' baselines."""

NetworkArg = Union["IKNetwork", str, Path, None]


class UnknownSolverError(SolverError):
    """A name that is not a solver's for this robot (the message lists the valid ones)."""

    def __init__(self, name: str, robot: RobotSpec) -> None:
        self.name, self.robot, self.shipped = name, robot, shipped_networks(robot)
        others = [n for n in self.shipped if n not in SOLVER_NAMES]
        super().__init__(f"unknown solver {name!r}; solvers are: {', '.join(SOLVER_NAMES)}"
                         + (f", the networks shipped for {robot.name} ({', '.join(others)})" if others else "")
                         + ", or a checkpoint path (.safetensors)")


class NetworkNotShippedError(SolverError):
    """A name that needs a network no one ships for the robot (give ``network=``, a checkpoint, or a network-free name)."""

    def __init__(self, name: str, robot: RobotSpec) -> None:
        self.name, self.robot, self.seeded = name, robot, name in SEEDED_NAMES
        self.shipped = shipped_networks(robot)
        where = (f"no {name} network is shipped for robot {robot.name!r} (shipped: {', '.join(self.shipped)})" if self.shipped
                 else f"none is shipped for robot {robot.name!r}")
        super().__init__(f"solver {name!r} needs a network, and {where}; "
                         + ("give network= (a checkpoint trained for it)" if self.seeded else "give a checkpoint path trained for it")
                         + f", or a solver without a network: {', '.join(NETWORK_FREE_NAMES)}")


def shipped_networks(robot: RobotSpec) -> tuple[str, ...]:
    """The networks shipped for ``robot`` (model names such as ``harmoatt``, ``harmoatt_4answers``), sorted."""
    return tuple(n.split("/", 1)[1] for n in pretrained_names() if n.startswith(f"{robot.name}/"))


def is_checkpoint(name: str | Path) -> bool:
    """Whether ``name`` is a checkpoint path rather than a solver's name (it ends in ``.safetensors`` or ``.pt``)."""
    return Path(name).suffix in (".safetensors", ".pt")


def needs_network(name: str) -> bool:
    """Whether the solver ``name`` stands for runs a network (every name but :data:`NETWORK_FREE_NAMES`)."""
    return name not in NETWORK_FREE_NAMES


def solver_names(robot: RobotSpec, network: NetworkArg = None) -> tuple[str, ...]:
    """The names :func:`make_solver` builds for ``robot``: :data:`SOLVER_NAMES` whose network is
    shipped for it (the seeded ones too where ``network`` is given), then its other shipped networks."""
    shipped = shipped_networks(robot)
    seed = bool(shipped) or network is not None
    fits = [n for n in SOLVER_NAMES if n in NETWORK_FREE_NAMES or n in shipped or (n in SEEDED_NAMES and seed)]
    return (*fits, *(n for n in shipped if n not in SOLVER_NAMES))


def _robot(robot: str | RobotSpec) -> RobotSpec:
    from hik_sim.robots import get_robot

    if isinstance(robot, RobotSpec):
        return robot
    if isinstance(robot, str):
        return get_robot(robot)
    raise SolverError(f"robot must be a registered robot's name or a RobotSpec, got {robot!r}")  # None was an AttributeError in Chain


def _load(network: IKNetwork | str | Path, robot: RobotSpec, device: str) -> IKNetwork:
    """``network`` itself, the robot's shipped network of that name (e.g. ``mlp_seed``), or the checkpoint at that path,
    checked against the robot."""
    if isinstance(network, str) and not is_checkpoint(network) and network in shipped_networks(robot):
        return load_pretrained(robot.name, network, device)
    if isinstance(network, (str, Path)):
        from hik_sim.learning.checkpoint import load_checkpoint

        loaded, card = load_checkpoint(network, robot=robot, map_location=device)
        loaded.card = card  # the solvers check it against the chain's URDF
        return loaded
    return network


def make_solver(name: str, robot: str | RobotSpec, *, device: str = "cpu", network: NetworkArg = None,
                batched: bool = False) -> IKSolver:
    """The solver ``name`` stands for on ``robot`` (see the module's list).

    Args:
        name: one of :data:`SOLVER_NAMES`, another network shipped for the robot, or a checkpoint path (``.pt``).
        robot: a registered robot's name, or any :class:`~hik_sim.robots.RobotSpec`.
        device: where networks run.
        network: for ``closed_loop`` and ``hybrid``: the network (an
            :class:`~hik_sim.learning.network.IKNetwork`, the name of another network shipped for the robot such as
            ``mlp_seed``, or a checkpoint path) in place of the robot's shipped
            seed network; the other names take none.
        batched: for ``hybrid``: :class:`~hik_sim.solvers.hybrid.HybridIK` (many targets a call) rather than
            :class:`~hik_sim.solvers.single_target_ik.SingleTargetIK` (one target a call, the controller's path). Every
            other name gives the same solver either way.

    Returns:
        An :class:`~hik_sim.solvers.base.IKSolver`.

    Raises:
        UnknownSolverError: not a solver's name for this robot (a :class:`~hik_sim.errors.SolverError`).
        NetworkNotShippedError: the name needs a network no one ships for the robot.
        SolverError: ``network`` given to a name that takes none, or a bad ``robot``.
        HikError: a checkpoint that cannot be read or does not fit the robot.
    """
    from hik_sim.kinematics.chain import Chain
    from hik_sim.kinematics.symmetry import FirstJointSymmetry
    from hik_sim.solvers.dm_control import DmControlIK
    from hik_sim.solvers.hybrid import HybridIK
    from hik_sim.solvers.lm import LMRefiner
    from hik_sim.solvers.neural import (CLOSED_LOOP_BRANCHES, CLOSED_LOOP_CORRECTIONS, CLOSED_LOOP_FIRST_JOINT_TURNS,
                                        CLOSED_LOOP_NEAREST_FIRST, NeuralIK)
    from hik_sim.solvers.restarts import MultistartIK
    from hik_sim.solvers.single_target_ik import SingleTargetIK

    spec = _robot(robot)
    if not isinstance(name, (str, Path)):
        raise SolverError(f"a solver name is a string, got {name!r}")
    checkpoint = is_checkpoint(name)
    shipped = shipped_networks(spec)
    if not checkpoint and name not in SOLVER_NAMES and name not in shipped:
        raise UnknownSolverError(str(name), spec)
    if network is not None and name not in SEEDED_NAMES:
        raise SolverError(f"solver {name!r} takes no network= (only {', '.join(SEEDED_NAMES)} do)")
    chain = Chain(spec)
    if checkpoint:
        return NeuralIK(_load(Path(name), spec, device), chain)
    if name in SEEDED_NAMES:
        if network is None and not shipped:
            raise NetworkNotShippedError(name, spec)
        if name == "closed_loop":
            default = closed_loop_network_name(spec.name)
        else:  # HarmoAtt-IK: the batched hybrid's seed, and the single-target path's
            default = hybrid_seed_name(spec.name) if batched else single_target_seed_name(spec.name)
        seed = _load(network, spec, device) if network is not None else load_pretrained(spec.name, default, device)
        if name == "closed_loop":  # a given network alone; else the shipped one with the robot's other closed-loop networks
            extra = () if network is not None else tuple(load_pretrained(spec.name, other, device)
                                                         for other in closed_loop_extra_names(spec.name))
            # a network with canonical_turn answers a turned pose with its own answer turned: asking again is no help
            turned_helps = not all(getattr(n, "canonical_turn", False) for n in (seed, *extra))
            turns = FirstJointSymmetry(chain).default_turns if CLOSED_LOOP_FIRST_JOINT_TURNS and turned_helps else ()
            return NeuralIK(seed, chain, corrections=CLOSED_LOOP_CORRECTIONS, branches=CLOSED_LOOP_BRANCHES,
                            nearest_first=CLOSED_LOOP_NEAREST_FIRST, extra_networks=extra, first_joint_turns=turns)
        if not batched:
            return SingleTargetIK(chain, seed)
        # the shipped seed's fallback network where the robot has one (a given network goes alone)
        return HybridIK(seed, LMRefiner(chain), fallback=load_hybrid_fallback(spec.name, device) if network is None else None)
    if name == "multistart":
        return MultistartIK(LMRefiner(chain), starts=10)
    if name == "lm":
        return SingleTargetIK(chain)
    if name == "dm_control":
        from hik_sim.sim import build_scene

        return DmControlIK(build_scene(spec))
    if name not in shipped:  # harmoatt, mlp, cycleik or regression where it is not shipped
        raise NetworkNotShippedError(name, spec)
    return NeuralIK(load_pretrained(spec.name, name, device), chain)

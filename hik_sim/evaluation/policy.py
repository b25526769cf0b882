"""A policy for the evaluator: its batch solver, its controller, its label, and their first calls timed apart.

:func:`build_policy` turns a name into a :class:`PolicySpec`; :func:`ik_accuracy` measures its
open-loop accuracy and :func:`warm_up_controller` makes its controller's first call, both untimed in
the figures the tables report: the first call of a solver compiles its numba kernels (or loads them
from numba's on-disk cache) and builds its caches, which is not the latency of a solve.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hik_sim.errors import HikError
from hik_sim.evaluation.config import NETWORK_FREE_POLICIES
from hik_sim.robots import RobotSpec
from hik_sim.solvers.registry import SOLVER_NAMES

if TYPE_CHECKING:
    from hik_sim.policies.controller import IKController
    from hik_sim.solvers.base import IKSolver

__all__ = ["PolicySpec", "WARM_UP_TARGETS", "build_policy", "checkpoint_label", "ik_accuracy", "warm_up_controller"]

WARM_UP_TARGETS = 8
"""Targets solved, untimed, before :func:`ik_accuracy` times a policy's solve."""


@dataclass
class PolicySpec:
    """A policy, built for one robot: its batch solver (open loop) and its controller (closed loop).

    Attributes:
        name: the label in tables (a checkpoint: its model and file, ``harmoatt_4answers (p.pt)``).
        solver: the batched solver.
        controller: the closed-loop controller.
        card: the network's model card (JSON), empty for a policy without a network.
        can_fail: whether the solver can fail: it searches (LM, multistart, hybrid, dm_control) and says
            when it stopped outside its tolerance. A network alone answers every query; its misses are
            in the error columns, not counted as solver failures.
        slug: the name in file names (letters, digits, ``_ . -``).
        first_call_s: the first (untimed) batched solve [s]: compilation, loading, caches.
        controller_first_call_s: the controller's first (untimed) call [s].
    """

    name: str
    solver: IKSolver
    controller: IKController
    card: dict[str, Any] = field(default_factory=dict)
    can_fail: bool = True
    slug: str = ""
    first_call_s: float | None = None
    controller_first_call_s: float | None = None

    def __post_init__(self) -> None:
        if not self.slug:
            self.slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.name).strip("_.") or "policy"


def checkpoint_label(path: str | Path, card: dict[str, Any] | None) -> str:
    """A checkpoint's label: its model (with its answers where more than one) and its file name,
    ``harmoatt_4answers (p.pt)``; the file name alone where the card names no model."""
    name = Path(path).name
    model = (card or {}).get("model")
    if not model:
        return name
    answers = (card or {}).get("hypotheses") or (card or {}).get("model_options", {}).get("hypotheses") or 1
    return f"{model}{f'_{answers}answers' if int(answers) > 1 else ''} ({name})"


def build_policy(name: str, robot: RobotSpec, device: str = "cpu", seed_network: str | None = None) -> PolicySpec:
    """The solver and controller a policy name stands for, both from
    :func:`hik_sim.solvers.registry.make_solver`: one of :data:`~hik_sim.solvers.registry.SOLVER_NAMES`
    (:data:`~hik_sim.evaluation.config.POLICY_NAMES` for every robot with shipped networks), any other network shipped for
    ``robot`` (e.g. ``harmoatt_4answers`` on the IRB120), or a checkpoint path. The solver is the
    batched one (``hybrid``: :class:`~hik_sim.solvers.hybrid.HybridIK`), the controller runs the one-target
    one (``hybrid``: :class:`~hik_sim.solvers.single_target_ik.SingleTargetIK` on the same network).

    Args:
        name: the policy.
        robot: the robot, registered or loaded from a URDF.
        device: where networks run.
        seed_network: a checkpoint (.safetensors) that seeds ``hybrid`` and ``closed_loop`` where no network is shipped for ``robot``.

    Raises:
        HikError: unknown policy, or a policy that needs a network no one ships for the robot (then
            give a checkpoint path, or ``seed_network`` for ``hybrid``).
    """
    from hik_sim.policies import IKController
    from hik_sim.sim import SceneOptions
    from hik_sim.solvers.neural import NeuralIK
    from hik_sim.solvers.registry import SEEDED_NAMES, NetworkNotShippedError, UnknownSolverError, is_checkpoint, make_solver, shipped_networks

    seeded = name in SEEDED_NAMES
    seed = seed_network if seeded and not shipped_networks(robot) else None  # a robot with shipped networks uses its own seed
    try:
        solver = make_solver(name, robot, device=device, batched=True, network=seed)
        network = getattr(solver, "network", None)
        # the controller's solver, one target a call: the hybrid's SingleTargetIK on the same network; else the same solver
        single = make_solver(name, robot, device=device, network=network) if name == "hybrid" else solver
    except UnknownSolverError as exc:
        others = [n for n in exc.shipped if n not in SOLVER_NAMES]
        raise HikError(f"unknown policy {name!r}; policies are: {', '.join(SOLVER_NAMES)}"
                       + (f", the networks shipped for {robot.name} ({', '.join(others)})" if others else "")
                       + ", or a checkpoint path (.safetensors)") from None
    except NetworkNotShippedError as exc:
        if exc.shipped:
            raise HikError(f"policy {name!r} needs the {name} network, and none is shipped for robot {robot.name!r} "
                           f"(shipped: {', '.join(exc.shipped)}): give a checkpoint trained for it (the path as a policy)") from None
        raise HikError(f"policy {name!r} needs a network, and none is shipped for robot {robot.name!r}: "
                       + ("give the seed network trained for it (--checkpoint PATH.safetensors)" if seeded
                          else "give a checkpoint trained for it (--checkpoint PATH.safetensors, or the path as a policy)")
                       + f", or a policy without a network: {', '.join(NETWORK_FREE_POLICIES)}, dm_control") from None
    card_object = getattr(network, "card", None)
    card = card_object.to_json() if card_object is not None else {}
    label = checkpoint_label(name, card) if is_checkpoint(name) else name
    return PolicySpec(label, solver, IKController(single, lead_time=SceneOptions().servo_lag), card,
                      can_fail=not isinstance(solver, NeuralIK))


def ik_accuracy(policy: PolicySpec, robot: RobotSpec, targets: int, seed: int) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """Open-loop accuracy: metrics and the per-target errors (position [m], rotation [rad]).

    ``ms_per_target`` times the solve of all targets after an untimed solve of the first
    :data:`WARM_UP_TARGETS`: a fresh install compiles (numba) or loads the solvers' kernels on their first
    call. That first call's wall time is ``first_call_s`` (also set on ``policy``).
    """
    from hik_sim.learning.data import make_eval_set
    from hik_sim.kinematics.chain import Chain
    from hik_sim.evaluation.metrics import accuracy_metrics

    batch = make_eval_set(Chain(robot), seed, targets).batch
    started = time.perf_counter()
    policy.solver.solve(batch.pos[:WARM_UP_TARGETS], batch.quat[:WARM_UP_TARGETS])  # compiles and loads, untimed
    policy.first_call_s = time.perf_counter() - started
    result = policy.solver.solve(batch.pos, batch.quat)
    metrics = accuracy_metrics(result.pos_err, result.rot_err) | {"ms_per_target": 1000 * result.wall_time / targets,
                                                                  "first_call_s": policy.first_call_s}
    return metrics, result.pos_err.numpy(), result.rot_err.numpy()


def warm_up_controller(policy: PolicySpec, env: Any, seed: int) -> float:
    """One untimed control step of ``policy``'s controller on ``env``'s reset at ``seed`` (then reset
    again), so episodes time solves, not the one-target solver's compilation and caches.

    Returns:
        The first call's wall time [s] (also ``policy.controller_first_call_s``).
    """
    controller = policy.controller
    obs, _ = env.reset(seed=seed)
    controller.reset()
    failures = controller.failures
    started = time.perf_counter()
    controller(obs)
    policy.controller_first_call_s = time.perf_counter() - started
    controller.failures = failures
    controller.reset()
    return policy.controller_first_call_s

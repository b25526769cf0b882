"""`LiveSim`: a robot's MuJoCo scene driven live by an IK controller toward a goal the user moves.

What both viewer backends share, with no GUI in it: the scene of :func:`hik_sim.sim.build_scene`,
an :class:`~hik_sim.policies.IKController` built by :func:`hik_sim.evaluation.evaluate.build_policy` (so a
policy name means here what it means to the evaluator), and one :meth:`LiveSim.step` per control
period that does what the hik_sim environments do with an action: the controller's joint targets go
to the chain's position servos and the physics advances ``frame_skip`` steps. Each step returns a
:class:`Readout`: the end-effector's error against the goal, the controller's IK latency and, for
a policy whose network is a HarmoAtt-IK, that network's fusion weights and temperatures for the
current goal.

The fusion weights are read from the network's own output (:class:`~hik_sim.learning.models.common.IKOutput`
carries ``fusion_weights`` (B, K, 3) and ``temperature`` (B, K)): one extra forward pass of the
torch network on the goal, only when the goal changes, so the controller's answer is untouched
(the hybrid policy runs the network through its compiled copy, which does not report them).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from hik_sim.errors import CheckpointError, HikError
from hik_sim.robots import RobotSpec

__all__ = ["LiveSim", "Readout", "policy_choices", "default_policy"]

BRANCH_NAMES: tuple[str, ...] = ("channel", "spatial", "cross")
"""The fusion weights' order (:data:`hik_sim.learning.models.harmoatt.BRANCHES`)."""


@dataclass(frozen=True)
class Readout:
    """What one control step of :class:`LiveSim` measured.

    Attributes:
        policy: the policy's name.
        pos_err: end-effector position error against the goal after the step [m].
        rot_err: geodesic rotation error [rad].
        ik_latency: wall time of the controller's call (the IK solve) this step [s].
        ik_success: whether the solver met its tolerance for this goal.
        fusion_weights: (K, 3) HarmoAtt-IK fusion weights per block (channel, spatial, cross), each
            row summing to 1, for the current goal; ``None`` for a policy without such a network.
        temperature: (K,) the softmax temperature each block chose; ``None`` likewise.
        sim_time: simulated time since the last reset [s].
        steps: control steps since the last reset.
    """

    policy: str
    pos_err: float
    rot_err: float
    ik_latency: float
    ik_success: bool
    fusion_weights: np.ndarray | None
    temperature: np.ndarray | None
    sim_time: float
    steps: int

    @property
    def pos_err_mm(self) -> float:
        """Position error [mm]."""
        return 1000.0 * self.pos_err

    @property
    def rot_err_deg(self) -> float:
        """Rotation error [°]."""
        return math.degrees(self.rot_err)

    @property
    def ik_latency_ms(self) -> float:
        """IK latency [ms]."""
        return 1000.0 * self.ik_latency


def _shipped(robot: RobotSpec) -> list[str]:
    from hik_sim.policies import pretrained_names

    return [n.split("/", 1)[1] for n in pretrained_names() if n.startswith(f"{robot.name}/")]


def policy_choices(robot: RobotSpec, checkpoint: str | None = None) -> tuple[str, ...]:
    """The policies the viewer offers for a robot, in the evaluator's naming.

    Every :data:`~hik_sim.evaluation.evaluate.POLICY_NAMES` entry that can run on the robot, then any other
    network shipped for it (e.g. ``harmoatt_4answers`` on the IRB120), and ``checkpoint`` itself
    where one is given; for a robot with no shipped network, the network-free policies, and
    ``hybrid`` and ``closed_loop`` seeded by ``checkpoint`` where one is given.
    """
    from hik_sim.evaluation.evaluate import POLICY_NAMES

    shipped = _shipped(robot)
    extra = (checkpoint,) if checkpoint else ()
    if shipped:
        return (*POLICY_NAMES, *sorted(set(shipped) - set(POLICY_NAMES)), *extra)
    free = ("lm", "multistart", "dm_control")
    return ("hybrid", "closed_loop", *extra, *free) if checkpoint else free


def default_policy(robot: RobotSpec, checkpoint: str | None = None) -> str:
    """``hybrid`` where a network is shipped for the robot (or a checkpoint is given), else ``lm``."""
    return "hybrid" if _shipped(robot) or checkpoint else "lm"


def _quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def _conj(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def _mat_quat(rot: np.ndarray) -> np.ndarray:
    import mujoco

    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(rot, dtype=np.float64).reshape(-1))
    return quat


def _pose(pos: Any, quat: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        pos = np.asarray(pos, dtype=np.float64).reshape(3)
        quat = np.asarray(quat, dtype=np.float64).reshape(4)
    except (TypeError, ValueError):
        raise HikError(f"a goal is a position (3,) [m] and a quaternion (4,) wxyz, got {pos!r} and {quat!r}") from None
    if not (np.isfinite(pos).all() and np.isfinite(quat).all()):
        raise HikError(f"a goal must be finite, got position {pos} and quaternion {quat}")
    norm = float(np.linalg.norm(quat))
    if norm < 1e-9:
        raise HikError("a goal quaternion must be non-zero (w, x, y, z)")
    return pos, quat / norm


class LiveSim:
    """A robot's scene, stepped live by a policy toward a goal pose.

    Args:
        robot: the robot (registered or from a URDF).
        policy: a policy name (:func:`policy_choices`); default :func:`default_policy`.
        frame_skip: physics steps per control step, as in the environments (control period =
            ``frame_skip`` × the scene's timestep, 20 ms by default).
        device: where networks run.
        checkpoint: a checkpoint (.safetensors) that seeds ``hybrid``/``closed_loop`` on a robot with no
            shipped network.
        scene: an already built :class:`~hik_sim.sim.Scene` of ``robot`` (default: built here).

    Raises:
        HikError: an unknown policy, or one that needs a network no one ships for the robot.
    """

    def __init__(self, robot: RobotSpec, policy: str | None = None, frame_skip: int = 10, device: str = "cpu",
                 checkpoint: str | None = None, scene: Any = None) -> None:
        import mujoco

        from hik_sim.sim import build_scene

        if isinstance(frame_skip, bool) or not isinstance(frame_skip, (int, np.integer)) or frame_skip < 1:
            raise HikError(f"frame_skip must be a whole number of physics steps >= 1, got {frame_skip!r}")
        self.robot, self.device, self.checkpoint, self.frame_skip = robot, device, checkpoint, int(frame_skip)
        self.scene = scene if scene is not None else build_scene(robot)
        self.model = self.scene.model
        self.data = self.scene.make_data()
        self.dt = self.frame_skip * float(self.model.opt.timestep)
        base_pos, base_rot = self.scene.base_pose(self.data)  # the base is fixed in the scene
        self._base_pos, self._base_rot, self._base_quat = base_pos, base_rot, _mat_quat(base_rot)
        self.lower, self.upper = np.asarray(robot.lower, dtype=np.float64), np.asarray(robot.upper, dtype=np.float64)
        self.goal_pos: np.ndarray
        self.goal_quat: np.ndarray
        self.goal_pos, self.goal_quat = self.scene.ee_pose(self.data)  # start at home: the goal is reached
        self.policy_name = ""
        self.policy: Any = None
        self._fusion_network: Any = None
        self._fusion_key: tuple[float, ...] | None = None
        self._fusion: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
        self.steps = 0
        self.set_policy(policy or default_policy(robot, checkpoint))
        self.scene.set_target(self.data, self.goal_pos, self.goal_quat)
        mujoco.mj_forward(self.model, self.data)
        self.last: Readout = self._readout(0.0, True)

    # -- policy ---------------------------------------------------------------------------------
    def set_policy(self, name: str) -> None:
        """Switch to another policy (built as :func:`hik_sim.evaluation.evaluate.build_policy` builds it).

        Raises:
            HikError: unknown policy, or one that needs a network not shipped for the robot.
            CheckpointError: a checkpoint path (``.pt``) the operating system cannot read (too long a
                name, no permission, ...); the running policy is kept.
        """
        from hik_sim.evaluation.evaluate import build_policy

        if not isinstance(name, str) or not name:
            raise HikError(f"a policy is a name such as {', '.join(policy_choices(self.robot, self.checkpoint))}; got {name!r}")
        try:
            spec = build_policy(name, self.robot, device=self.device, seed_network=self.checkpoint)
        except OSError as exc:  # a path the OS refuses (ENAMETOOLONG, EACCES, ...): bad input, not a crash
            shown = repr(name) if len(name) <= 80 else f"{name[:40]!r}... ({len(name)} characters, ending {name[-12:]!r})"
            raise CheckpointError(f"policy {shown} cannot be read as a checkpoint ({exc.strerror or type(exc).__name__}); "
                                  f"policies are {', '.join(policy_choices(self.robot, self.checkpoint))} "
                                  "or the path of a readable checkpoint (.safetensors)") from None
        spec.controller.reset()
        network = getattr(spec.solver, "network", None) or getattr(getattr(spec.controller, "solver", None), "network", None)
        self.policy, self.policy_name = spec, name
        self._fusion_network = network if getattr(network, "kind", None) == "harmoatt" else None
        self._fusion_key, self._fusion = None, (None, None)

    @property
    def network_kind(self) -> str | None:
        """``harmoatt`` or ``mlp`` for a policy built on a network, else ``None``."""
        network = getattr(self.policy.solver, "network", None)
        return getattr(network, "kind", None)

    # -- goal -----------------------------------------------------------------------------------
    def set_goal(self, pos: Any, quat: Any) -> None:
        """Set the goal in the chain's base frame (position [m], quaternion wxyz of any non-zero length).

        Raises:
            HikError: not finite, wrong shapes, or a zero quaternion.
        """
        self.goal_pos, self.goal_quat = _pose(pos, quat)

    def set_goal_world(self, pos: Any, quat: Any) -> None:
        """Set the goal in the world frame (where the viewers' gizmos live)."""
        pos, quat = _pose(pos, quat)
        self.goal_pos = self._base_rot.T @ (pos - self._base_pos)
        self.goal_quat = _quat_mul(_conj(self._base_quat), quat)

    def goal_world(self) -> tuple[np.ndarray, np.ndarray]:
        """The goal in the world frame: position (3,) [m], quaternion (4,) wxyz."""
        return self._base_pos + self._base_rot @ self.goal_pos, _quat_mul(self._base_quat, self.goal_quat)

    def ee_world(self) -> tuple[np.ndarray, np.ndarray]:
        """The end-effector site's world pose: position (3,) [m], quaternion (4,) wxyz."""
        site = self.scene.ee_site
        return self.data.site_xpos[site].copy(), _mat_quat(self.data.site_xmat[site].reshape(3, 3))

    # -- simulation -----------------------------------------------------------------------------
    def observation(self) -> dict[str, np.ndarray]:
        """The observation a hik_sim environment would give now (base frame)."""
        pos, quat = self.scene.ee_pose(self.data)
        return {"joint_pos": self.data.qpos[self.scene.chain_qpos].copy(), "joint_vel": self.data.qvel[self.scene.chain_dof].copy(),
                "ee_pos": pos, "ee_quat": quat, "goal_pos": self.goal_pos.copy(), "goal_quat": self.goal_quat.copy()}

    def reset(self) -> None:
        """Back to the ``home`` keyframe (the goal stays where it is)."""
        import mujoco

        mujoco.mj_resetDataKeyframe(self.model, self.data, self.scene.home_key)
        self.scene.set_target(self.data, self.goal_pos, self.goal_quat)
        mujoco.mj_forward(self.model, self.data)
        self.policy.controller.reset()
        self.steps = 0

    def step(self) -> Readout:
        """One control period: solve IK for the goal, command the joints, advance the physics.

        Returns:
            The :class:`Readout` after the step.
        """
        import mujoco

        observation = self.observation()
        start = time.perf_counter()
        command = self.policy.controller(observation)
        latency = time.perf_counter() - start
        result = self.policy.controller.last_result.get(0)
        success = bool(result.success[0]) if result is not None else False
        command = np.clip(np.asarray(command, dtype=np.float64), self.lower, self.upper)
        self.data.ctrl[self.scene.chain_actuators] = command
        self.scene.set_target(self.data, self.goal_pos, self.goal_quat)
        mujoco.mj_step(self.model, self.data, nstep=self.frame_skip)
        mujoco.mj_forward(self.model, self.data)  # poses of the state reached, for display and errors
        self.steps += 1
        self.last = self._readout(latency, success)
        return self.last

    def _readout(self, latency: float, success: bool) -> Readout:
        pos, quat = self.scene.ee_pose(self.data)
        pos_err = float(np.linalg.norm(pos - self.goal_pos))
        rot_err = 2.0 * math.acos(min(1.0, abs(float(np.dot(quat, self.goal_quat)))))
        weights, temperature = self.fusion_readout()
        return Readout(self.policy_name, pos_err, rot_err, latency, success, weights, temperature, self.data.time, self.steps)

    def fusion_readout(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """HarmoAtt-IK fusion weights (K, 3) and temperatures (K,) for the current goal, or ``(None, None)``.

        Read from the network's own output (``IKOutput.fusion_weights``, ``.temperature``), computed
        again only when the goal has changed.
        """
        network = self._fusion_network
        if network is None:
            return None, None
        key = tuple(np.round(np.concatenate((self.goal_pos, self.goal_quat)), 9))
        if key != self._fusion_key:
            import torch

            param = next(network.parameters())
            pos = torch.as_tensor(self.goal_pos[None], dtype=param.dtype, device=param.device)
            quat = torch.as_tensor(self.goal_quat[None], dtype=param.dtype, device=param.device)
            with torch.inference_mode():
                out = network(pos, quat, choose=False)  # choose=False: no FK ranking of several answers
            if out.fusion_weights is None or out.temperature is None:
                self._fusion = (None, None)
            else:
                self._fusion = (out.fusion_weights[0].double().cpu().numpy(), out.temperature[0].double().cpu().numpy())
            self._fusion_key = key
        return self._fusion

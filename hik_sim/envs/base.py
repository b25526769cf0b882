"""What the Reach and Track environments share: a robot's MuJoCo scene, driven by joint targets.

:class:`RobotGoalEnv` builds the scene (:func:`hik_sim.sim.build_scene`, cached per robot), takes
actions of one of :data:`~hik_sim.envs.actions.ACTION_TYPES` (joint position targets for the IK
chain by default; normalised ones; or end-effector increments turned into joint targets by IK),
steps the physics ``frame_skip`` times per action (the servos' targets move towards the joint
targets at no more than ``max_joint_speed``, as a robot's own joint controller would; see
:data:`MAX_JOINT_SPEED`), and observes the chain's joints, the end-effector pose and a goal pose,
all in the chain's base frame, inside finite bounds (:data:`OBSERVED_JOINT_MARGIN`,
:data:`OBSERVED_JOINT_SPEED`, :data:`WORKSPACE_MARGIN`). Subclasses choose the goal. No torch is
imported unless ``action_type="ee_delta"`` builds an IK controller.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium import spaces

from hik_sim.envs.actions import EndEffectorDelta, check_action_type, make_ik_controller
from hik_sim.errors import EnvError, SceneError
from hik_sim.kinematics.tolerances import SUCCESS, rotation_angle
from hik_sim.robots import RobotSpec, get_robot, robot_from_urdf
from hik_sim.sim import Scene, build_scene, ensure_headless_gl
from hik_sim.solvers.single_target import SingleTargetKinematics

__all__ = ["MAX_JOINT_SPEED", "OBSERVED_JOINT_MARGIN", "OBSERVED_JOINT_SPEED", "WORKSPACE_MARGIN", "RobotGoalEnv", "resolve_robot",
           "cached_scene"]

MAX_JOINT_SPEED = 4.0
"""[rad/s] (or m/s for a prismatic joint): how fast the servos' targets may move towards an action,
by default. The scenes' servos are ideal (no effort limit), so a target that jumps across the range
accelerates heavy links so hard that the coupling throws light joints past their limits (0.1 rad
and more on TALOS's wrist before this limit); MuJoCo's joint limits are soft and give way that
far at such speeds. A robot's own joint controller does not pass a jump on either: it moves the
setpoint at a rated speed. 4 rad/s is the order of an arm joint's rated speed (the IRB120's URDF
gives 4.4–7.3 rad/s, the Panda's 2.2–2.6, Romeo's 1.1–4); ``max_joint_speed=None`` passes every
action to the servos at once."""
OBSERVED_JOINT_MARGIN = 0.5
"""[rad] (or m): the observed joint positions' bounds are the joint limits widened by this much on
each side (MuJoCo's limits are soft: a joint ends a few mrad outside, more without a speed limit);
an observation is clipped into them."""
OBSERVED_JOINT_SPEED = 50.0
"""[rad/s] (or m/s): bound of the observed joint velocities, which are clipped into ±this (the
speed-limited servos move at a few rad/s)."""
WORKSPACE_MARGIN = 1.5
"""Observed positions (end-effector, goal) are bounded per axis by ±this × the chain's largest
reach (:attr:`RobotGoalEnv.max_reach`; unreachable goals lie at 1.2 × it) and clipped into it."""
HUMAN_RENDER_MESSAGE = (
    "render_mode='human' is not built into the environment class: make it with gymnasium.make(ENV_ID, render_mode='human'), "
    "which shows the rgb_array frames in a pygame window (Gymnasium's HumanRendering wrapper; pip install pygame); "
    "MuJoCo's passive viewer, which a built-in human mode would open, crashes (exit 139) or hangs when the process exits "
    "under Xvfb. Or use render_mode='rgb_array' (frames, gymnasium.wrappers.RecordVideo), or the interactive viewer, "
    "python -m hik_sim.viewer")


def resolve_robot(robot: str | RobotSpec | None, urdf: str | None, base: str | None, ee: str | None) -> RobotSpec:
    """The robot an environment's keyword arguments name: ``robot=`` or ``urdf=, base=, ee=``.

    Raises:
        HikError: neither or both given, or an incomplete URDF triple.
    """
    if isinstance(robot, RobotSpec):
        return robot
    if urdf is not None:
        if robot is not None:
            raise EnvError("give either robot=NAME or urdf=PATH, base=LINK, ee=LINK, not both")
        if base is None or ee is None:
            raise EnvError("urdf= needs base=LINK and ee=LINK: the chain's base and end-effector links")
        return robot_from_urdf(urdf, base, ee)
    if robot is None:
        raise EnvError("give robot=NAME (a registered robot) or urdf=PATH, base=LINK, ee=LINK")
    return get_robot(robot)


@functools.lru_cache(maxsize=16)
def cached_scene(robot: RobotSpec) -> Scene:
    """The robot's scene, built once per process (environments only read the model)."""
    return build_scene(robot)


@functools.lru_cache(maxsize=16)
def _max_reach(robot: RobotSpec, samples: int = 4000) -> float:
    """Largest distance of the end-effector from the base origin over random configurations [m]."""
    kinematics = SingleTargetKinematics(robot)
    rng = np.random.default_rng(0)
    lower, upper = np.asarray(robot.lower), np.asarray(robot.upper)
    return max(float(np.linalg.norm(kinematics.fk(rng.uniform(lower, upper)).pos)) for _ in range(samples))


class RobotGoalEnv(gym.Env):
    """A robot in its MuJoCo scene, commanded by chain joint targets, with a goal pose.

    Args:
        robot: registered robot name (or a :class:`RobotSpec`).
        urdf: instead of ``robot``: a URDF path, with ``base`` and ``ee``.
        base: the chain's base link (with ``urdf``).
        ee: the chain's end-effector link (with ``urdf``).
        frame_skip: physics steps per action (the control period is ``frame_skip × timestep``).
        position_tolerance: success threshold on the position error [m].
        rotation_tolerance: success threshold on the rotation error [rad].
        rotation_weight: weight of the rotation error in the reward [m/rad].
        render_mode: ``rgb_array``, ``human`` or ``None``.
        width: rendered width [px].
        height: rendered height [px].
        camera: ``workspace`` or ``overview``.
        max_joint_speed: the servos' targets move from the last one towards the action at no more
            than this speed [rad/s], every physics step (:data:`MAX_JOINT_SPEED`); ``None``: they
            take the action at once.
        action_type: one of :data:`~hik_sim.envs.actions.ACTION_TYPES`: ``joint`` (joint targets
            [rad], bounded by the limits), ``joint_normalized`` (the same in [-1, 1]) or ``ee_delta``
            (an end-effector increment in [-1, 1]^6: at most 2 cm per axis and 0.1 rad per
            rotation-vector component, base frame, turned into joint targets by ``ik``).
        ik: with ``ee_delta``: the IK (:func:`~hik_sim.envs.actions.make_ik_controller`; ``None``:
            the robot's shipped ``hybrid``, or ``lm`` for a robot without a network).
        record_ik_time: with ``ee_delta``: ``info["ik_time"]`` is the IK's wall-clock time [s]; False
            reports 0.0, so that two identical steps give equal ``info`` (gymnasium's ``check_env``
            asks that).

    Raises:
        HikError: a bad robot, render mode, camera, tolerance, speed, action type or IK; ``render_mode="human"``
            given to the class itself (``gymnasium.make(..., render_mode="human")`` shows the ``rgb_array``
            frames in a pygame window; MuJoCo's passive viewer does not close reliably).
        SceneError: with ``render_mode="rgb_array"``, a size outside the scene's offscreen buffer
            (1280 × 960 px by default), found here rather than at the first render.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(self, robot: str | RobotSpec | None = None, urdf: str | None = None, base: str | None = None,
                 ee: str | None = None, frame_skip: int = 10, position_tolerance: float = SUCCESS.position,
                 rotation_tolerance: float = SUCCESS.rotation, rotation_weight: float = 0.1,
                 render_mode: str | None = None, width: int = 480, height: int = 360, camera: str = "workspace",
                 max_joint_speed: float | None = MAX_JOINT_SPEED, action_type: str = "joint", ik: Any = None,
                 record_ik_time: bool = True, **unknown: Any) -> None:
        if unknown:  # else gymnasium.make answers a TypeError from deep inside the constructor
            raise EnvError(f"unknown keyword arguments {sorted(unknown)} for {type(self).__name__}; keywords are: "
                           f"{', '.join(self._keywords())}")
        if isinstance(frame_skip, bool) or not isinstance(frame_skip, (int, np.integer)):
            raise EnvError(f"frame_skip must be a whole number of physics steps >= 1, got {frame_skip!r}")
        if render_mode == "human":
            raise EnvError(HUMAN_RENDER_MESSAGE)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise EnvError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        if frame_skip < 1 or not (position_tolerance > 0 and rotation_tolerance > 0 and rotation_weight >= 0):
            raise EnvError("frame_skip must be >= 1, tolerances positive and rotation_weight >= 0")
        a_speed = isinstance(max_joint_speed, (int, float, np.floating)) and not isinstance(max_joint_speed, bool)
        if max_joint_speed is not None and not (a_speed and math.isfinite(max_joint_speed) and max_joint_speed > 0):
            raise EnvError(f"max_joint_speed must be a positive finite speed [rad/s] or None (no limit), got {max_joint_speed!r}")
        self.max_joint_speed = None if max_joint_speed is None else float(max_joint_speed)
        self.action_type, self.record_ik_time = check_action_type(action_type), bool(record_ik_time)
        if ik is not None and action_type != "ee_delta":
            raise EnvError(f"ik= is used by action_type='ee_delta' only, got action_type={action_type!r}")
        self.robot = resolve_robot(robot, urdf, base, ee)
        self.scene = cached_scene(self.robot)
        cameras = [self.scene.model.camera(i).name for i in range(self.scene.model.ncam)]
        if camera not in cameras:
            raise EnvError(f"unknown camera {camera!r}; cameras are: {', '.join(cameras)}")
        self.model = self.scene.model
        max_w, max_h = int(self.model.vis.global_.offwidth), int(self.model.vis.global_.offheight)
        if render_mode == "rgb_array" and not (0 < width <= max_w and 0 < height <= max_h):
            raise SceneError(f"render size {width}x{height} px is outside the scene's offscreen buffer: width must be 1..{max_w} "
                             f"and height 1..{max_h} px (SceneOptions.offscreen_size sets the buffer)")
        self.data = mujoco.MjData(self.model)
        self.kinematics = SingleTargetKinematics(self.robot)
        self.frame_skip = frame_skip
        self.dt = frame_skip * self.model.opt.timestep
        self.metadata = {**self.metadata, "render_fps": int(round(1 / self.dt))}
        self.position_tolerance, self.rotation_tolerance, self.rotation_weight = position_tolerance, rotation_tolerance, rotation_weight
        self.render_mode, self.width, self.height, self.camera = render_mode, width, height, camera
        self.lower, self.upper = np.asarray(self.robot.lower, dtype=np.float64), np.asarray(self.robot.upper, dtype=np.float64)
        n = self.robot.dof
        if action_type == "joint":
            self.action_space = spaces.Box(self.lower, self.upper, dtype=np.float64)
        else:
            self.action_space = spaces.Box(-1.0, 1.0, shape=(6 if action_type == "ee_delta" else n,), dtype=np.float64)
        self._ee_delta = EndEffectorDelta(make_ik_controller(self.robot, ik), self.fk) if action_type == "ee_delta" else None
        self.joint_target = np.asarray(self.robot.home, dtype=np.float64).copy()
        box = lambda bound, size=3: spaces.Box(-bound, bound, shape=(size,), dtype=np.float64)  # noqa: E731
        self._bounds = {"joint_pos": spaces.Box(self.lower - OBSERVED_JOINT_MARGIN, self.upper + OBSERVED_JOINT_MARGIN, dtype=np.float64),
                        "joint_vel": box(OBSERVED_JOINT_SPEED, n), "ee_pos": box(self.position_bound), "ee_quat": box(1.0, 4),
                        "goal_pos": box(self.position_bound), "goal_quat": box(1.0, 4), **self._extra_observation_spaces()}
        self.observation_space = spaces.Dict(dict(self._bounds))
        self.goal_pos, self.goal_quat = np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
        self._renderer: mujoco.Renderer | None = None

    @classmethod
    def _keywords(cls) -> list[str]:
        """The keyword arguments this environment takes (its own and every base class's)."""
        import inspect

        names: list[str] = []
        for klass in cls.__mro__:
            if "__init__" in vars(klass) and issubclass(klass, RobotGoalEnv):
                for name, parameter in inspect.signature(klass.__init__).parameters.items():
                    if name != "self" and parameter.kind is not inspect.Parameter.VAR_KEYWORD and name not in names:
                        names.append(name)
        return names

    def _extra_observation_spaces(self) -> dict[str, spaces.Box]:
        return {}

    def _extra_observations(self) -> dict[str, np.ndarray]:
        return {}

    @property
    def max_reach(self) -> float:
        """Largest end-effector distance from the base origin [m] (from random configurations)."""
        return _max_reach(self.robot)

    @property
    def position_bound(self) -> float:
        """Bound of every observed position's coordinates [m]: :data:`WORKSPACE_MARGIN` × :attr:`max_reach`."""
        return WORKSPACE_MARGIN * self.max_reach

    def fk(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """End-effector position (3,) [m] and quaternion (4,) of a chain configuration, base frame."""
        pose = self.kinematics.fk(q)
        return pose.pos, pose.quat

    def _reset_robot(self, q: np.ndarray) -> None:
        mujoco.mj_resetDataKeyframe(self.model, self.data, self.scene.home_key)
        self.data.qpos[self.scene.chain_qpos] = q
        self.data.ctrl[self.scene.chain_actuators] = q
        self.joint_target = np.asarray(q, dtype=np.float64).copy()
        if self._ee_delta is not None:
            self._ee_delta.reset()
        mujoco.mj_forward(self.model, self.data)

    def _show_goal(self) -> None:
        self.scene.set_target(self.data, self.goal_pos, self.goal_quat)

    def _observation(self) -> dict[str, np.ndarray]:
        """The observation, every entry clipped into its bounds (see the module's constants)."""
        pos, quat = self.scene.ee_pose(self.data)
        raw = {
            "joint_pos": self.data.qpos[self.scene.chain_qpos], "joint_vel": self.data.qvel[self.scene.chain_dof],
            "ee_pos": pos, "ee_quat": quat, "goal_pos": self.goal_pos, "goal_quat": self.goal_quat,
            **self._extra_observations(),
        }
        return {key: np.clip(value, self._bounds[key].low, self._bounds[key].high) for key, value in raw.items()}

    def _info(self, observation: dict[str, np.ndarray]) -> dict[str, Any]:
        """Errors, success and reward terms of an observation (its end-effector pose against the goal)."""
        pos_err = float(np.linalg.norm(observation["ee_pos"] - self.goal_pos))
        rot_err = rotation_angle(observation["ee_quat"], self.goal_quat)
        success = pos_err < self.position_tolerance and rot_err < self.rotation_tolerance
        return {"pos_err": pos_err, "rot_err": rot_err, "success": success, "is_success": success,
                "reward_pos": -pos_err, "reward_rot": -self.rotation_weight * rot_err}

    def _act(self, action: np.ndarray) -> dict[str, Any]:
        """Validate an action of this environment's ``action_type``, turn it into joint targets and step the physics.

        Out-of-range values are clipped into the action space (documented).

        Returns:
            The IK's info: ``ik_time`` [s] and ``ik_failed`` (0.0 and False without IK).
        """
        count = 6 if self.action_type == "ee_delta" else self.robot.dof
        what = {"joint": "joint targets [rad]", "joint_normalized": "normalised joint targets in [-1, 1]",
                "ee_delta": "end-effector increments in [-1, 1]"}[self.action_type]
        raw = np.asarray(action)
        if raw.dtype.kind not in "fiu":  # strings, objects, booleans, complex numbers: not joint targets
            raise EnvError(f"action must be {count} real {what} for {self.robot.name!r}, got "
                           f"{type(action).__name__} of dtype {raw.dtype}")
        action = raw.astype(np.float64)
        if action.shape != self.action_space.shape:
            raise EnvError(f"action must be {count} {what} for {self.robot.name!r}, got shape {action.shape}")
        if not np.isfinite(action).all():
            raise EnvError(f"action must be finite, got {action}")
        info: dict[str, Any] = {"ik_time": 0.0, "ik_failed": False}
        if self.action_type == "joint_normalized":
            action = self.lower + (np.clip(action, -1.0, 1.0) + 1.0) / 2.0 * (self.upper - self.lower)
        elif self._ee_delta is not None:
            action, ik_info = self._ee_delta(np.clip(action, -1.0, 1.0), self.joint_target)
            info.update(ik_time=ik_info["ik_time"] if self.record_ik_time else 0.0, ik_failed=ik_info["ik_failed"])
        self.joint_target = self._apply(action)
        return info

    def _apply(self, action: np.ndarray) -> np.ndarray:
        """Step the physics towards joint targets (n,), clipped into the joint limits first; returns the clipped targets."""
        action = np.clip(action, self.lower, self.upper)
        actuators = self.scene.chain_actuators
        if self.max_joint_speed is None:
            self.data.ctrl[actuators] = action
            mujoco.mj_step(self.model, self.data, nstep=self.frame_skip)
            return action
        start = self.data.ctrl[actuators].copy()
        step = self.max_joint_speed * self.model.opt.timestep  # largest change of a target in one physics step
        for k in range(1, self.frame_skip + 1):
            reached = np.abs(action - start) <= k * step
            self.data.ctrl[actuators] = np.where(reached, action, start + np.sign(action - start) * k * step)
            if reached.all():  # hold the action for the remaining physics steps
                mujoco.mj_step(self.model, self.data, nstep=self.frame_skip - k + 1)
                break
            mujoco.mj_step(self.model, self.data)
        return action

    def render(self) -> np.ndarray | None:
        """An RGB frame (``rgb_array``) of shape (height, width, 3), uint8."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='rgb_array' to gym.make")
            return None
        self._show_goal()
        mujoco.mj_forward(self.model, self.data)
        if self._renderer is None:
            ensure_headless_gl()
            self._renderer = mujoco.Renderer(self.model, height=self.height, width=self.width)
        self._renderer.update_scene(self.data, camera=self.camera)
        return self._renderer.render().copy()

    def close(self) -> None:
        """Release the renderer (closing twice is allowed)."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

"""Track: follow a moving goal along a circle, a figure-eight, a line or smooth random waypoints."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from hik_sim.envs.base import RobotGoalEnv
from hik_sim.envs.trajectories import TRAJECTORIES, Trajectory
from hik_sim.errors import EnvError
from hik_sim.robots import RobotSpec
from hik_sim.solvers.single_target import SingleTargetLM

__all__ = ["TrackEnv"]


class TrackEnv(RobotGoalEnv):
    """Track a moving goal pose with a robot's IK chain, in the robot's MuJoCo scene.

    ## Description
    For chains of at least 6 joints. The goal moves along a planar trajectory (``circle``, ``figure_eight``, ``line`` or
    ``waypoints``) at a mean ``speed`` [m/s] with extent ``size`` [m], in the plane spanned by the
    base frame's y and z axes, keeping the orientation the end-effector has at the start. Each
    episode draws a centre configuration uniformly from the middle half of every joint's range; the
    trajectory starts at that configuration's end-effector pose. It always lies in the reachable
    workspace: before the episode starts, inverse kinematics is solved by continuation at 48 points
    along one period (to 0.1 mm and 0.1°); if a point fails, the size is shrunk (×0.7, at most 4
    times) and then another centre is drawn (at most 20 centres, then
    :class:`~hik_sim.errors.HikError`). ``info["size"]`` tells the size used.

    ## Action Space
    As in Reach: ``action_type="joint"`` (default), position targets [rad, or m] bounded by the
    joint limits; ``joint_normalized``, the same in [-1, 1]; ``ee_delta``, an end-effector
    increment in [-1, 1]^6 (2 cm, 0.1 rad a step at most) turned into joint targets by IK (``ik=``).
    Values outside the space are clipped into it; NaN/inf, a wrong shape or anything but real
    numbers raise :class:`~hik_sim.errors.HikError`.

    ## Observation Space
    ``Dict`` of float64 arrays in the chain's base frame: ``joint_pos`` (n,), ``joint_vel`` (n,),
    ``ee_pos`` (3,) [m], ``ee_quat`` (4,) wxyz, ``goal_pos`` (3,) [m], ``goal_quat`` (4,) wxyz and
    ``goal_vel`` (3,) [m/s], the goal's velocity. Bounded as in Reach; ``goal_vel`` within ±2 ×
    ``speed`` per axis (a trajectory's fastest point moves at π/2 × its mean speed).

    ## Rewards
    ``−(position error [m] + rotation_weight · rotation error [rad])`` (``rotation_weight`` 0.1 m/rad
    by default); ``info`` holds each term (``reward_pos``, ``reward_rot``), ``pos_err`` [m],
    ``rot_err`` [rad], ``success`` and ``is_success`` (both: within tolerance now), ``size`` [m],
    ``time`` [s], and the IK's ``ik_time`` [s] and ``ik_failed`` (0.0 and False without ``ee_delta``).

    ## Starting State
    The robot rests at a configuration that reaches the trajectory's first point (found by IK from
    the centre configuration), velocity zero; joints outside the chain at the ``home`` keyframe.

    ## Episode End
    No termination; truncated by the registration's time limit (500 steps = 10 s at 50 Hz).

    ## Arguments
    ``gymnasium.make("hik_sim/Track-irb120-v0", trajectory="figure_eight", speed=0.1, size=0.1)``,
    or ``gymnasium.make("hik_sim/Track-v0", robot=...)`` / ``(urdf=..., base=..., ee=...)``.
    ``trajectory``: ``circle`` (default), ``figure_eight``, ``line`` or ``waypoints``; ``speed``
    (0.1 m/s) and ``size`` (0.1 m). Further keywords as in Reach, with the same defaults:
    ``frame_skip``, ``position_tolerance``, ``rotation_tolerance``, ``rotation_weight``,
    ``render_mode``, ``width``, ``height``, ``camera``, ``max_joint_speed``, ``action_type``, ``ik``
    (not ``hold_steps``, ``unreachable_probability``, ``start_noise`` or ``goal_spread``). A chain of fewer than 6 joints raises
    :class:`~hik_sim.errors.HikError`.

    ## Version History
    - v0: first release. Since 2026-11-30 the servos' targets move at ``max_joint_speed`` (4 rad/s), as in Reach.
      Since 2026-12-03: ``action_type`` and ``ik``, finite observation bounds; ``render_mode="human"`` raises.
    """

    def __init__(self, robot: str | RobotSpec | None = None, urdf: str | None = None, base: str | None = None,
                 ee: str | None = None, trajectory: str = "circle", speed: float = 0.1, size: float = 0.1,
                 **kwargs: Any) -> None:
        super().__init__(robot, urdf, base, ee, **kwargs)
        if self.robot.dof < 6:
            raise EnvError(f"Track keeps the goal's orientation along a path, which needs a chain of at least 6 joints; "
                           f"{self.robot.name!r} has {self.robot.dof} (use Reach, whose goals are reachable by construction)")
        if trajectory not in TRAJECTORIES:
            raise EnvError(f"unknown trajectory {trajectory!r}; trajectories are: {', '.join(TRAJECTORIES)}")
        Trajectory(trajectory if trajectory != "waypoints" else "circle", speed, size)  # validates speed and size
        self.trajectory_kind, self.speed, self.size = trajectory, float(speed), float(size)
        self._bounds["goal_vel"] = spaces.Box(-2 * self.speed, 2 * self.speed, shape=(3,), dtype=np.float64)
        self.observation_space = spaces.Dict(dict(self._bounds))
        self.lm = SingleTargetLM(self.robot, max_iterations=50, stop_position=2e-5, stop_rotation=2e-5)
        self.trajectory: Trajectory | None = None
        self.center_pos, self.goal_vel, self.time = np.zeros(3), np.zeros(3), 0.0

    def _extra_observations(self) -> dict[str, np.ndarray]:
        return {"goal_vel": self.goal_vel.copy()}

    def _make_trajectory(self, size: float) -> Trajectory:
        u, v = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])
        if self.trajectory_kind == "waypoints":
            return Trajectory.random_waypoints(self.speed, size, self.np_random, u=u, v=v)
        return Trajectory(self.trajectory_kind, self.speed, size, u=u, v=v)

    def _reachable(self, trajectory: Trajectory, q: np.ndarray, quat: np.ndarray, points: int = 48) -> np.ndarray | None:
        """IK by continuation along one period; the start configuration, or None if a point fails."""
        period = 17 * trajectory.size / self.speed  # at least one period of every kind (a waypoint loop is < 10 sizes long)
        start = None
        for t in np.linspace(0.0, period, points):
            offset, _ = trajectory.at(float(t))
            answer = self.lm.refine(self.center_pos + offset, quat, q)
            if answer.pos_err > 1e-4 or answer.rot_err > np.radians(0.1):
                return None
            q = answer.q
            start = q if start is None else start
        return start

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Draw a centre, fit a reachable trajectory through it, and start on it."""
        super().reset(seed=seed)
        middle, half = (self.lower + self.upper) / 2, (self.upper - self.lower) / 4
        for _ in range(20):
            center_q = self.np_random.uniform(middle - half, middle + half)
            self.center_pos, quat = self.fk(center_q)
            size = self.size
            for _ in range(5):
                trajectory = self._make_trajectory(size)
                start_q = self._reachable(trajectory, center_q, quat)
                if start_q is not None:
                    break
                size *= 0.7
            if start_q is not None:
                break
        else:
            raise EnvError(f"no reachable {self.trajectory_kind} of size {self.size} m found for {self.robot.name!r}; try a smaller size")
        self.trajectory, self.goal_quat, self.time = trajectory, quat, 0.0
        self._set_goal(trajectory)
        self._reset_robot(start_q)
        self._show_goal()
        observation = self._observation()
        return observation, self._info(observation) | {"size": trajectory.size, "time": 0.0, "ik_time": 0.0, "ik_failed": False}

    def _set_goal(self, trajectory: Trajectory) -> None:
        offset, self.goal_vel = trajectory.at(self.time)
        self.goal_pos = self.center_pos + offset

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Apply an action (of ``action_type``) for one control period; the goal moves on.

        Raises:
            EnvError: called before :meth:`reset` (there is no trajectory yet).
        """
        trajectory = self.trajectory
        if trajectory is None:
            raise EnvError("the goal has no trajectory yet: call reset() before step()")
        ik = self._act(action)
        self.time += self.dt
        self._set_goal(trajectory)
        observation = self._observation()
        info = self._info(observation) | {"size": trajectory.size, "time": self.time} | ik
        return observation, float(info["reward_pos"] + info["reward_rot"]), False, False, info

"""The one episode loop: a policy drives an environment until the episode ends, step by step recorded.

The evaluator (:mod:`hik_sim.evaluation.evaluate`), the environment benchmark
(``benchmarks/env_bench.py``), the tests and ``examples/reach.py`` all run episodes through
:func:`rollout`, and summarise them with :func:`hik_sim.evaluation.metrics.reach_metrics` and
:func:`~hik_sim.evaluation.metrics.track_metrics`, so that a number means the same wherever it is printed.

Example::

    import gymnasium as gym
    import hik_sim.envs  # noqa: F401  (registers the environments)
    from hik_sim.evaluation.rollout import rollout
    from hik_sim.policies import IKController

    env = gym.make("hik_sim/Reach-irb120-v0")
    episode = rollout(env, IKController.pretrained("irb120", "hybrid"), seed=0)
    episode.success, episode.time_to_reach, 1000 * episode.pos_err[-1]   # bool, [s] or None, [mm]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hik_sim.errors import EnvError, HikError

if TYPE_CHECKING:
    import gymnasium as gym

    from hik_sim.policies.controller import IKController
    from hik_sim.sim.video import Recording

__all__ = ["LIMIT_SLACK", "STILL", "Episode", "rollout"]

LIMIT_SLACK = 1e-4
"""[rad]: MuJoCo's joint limits are stiff but soft; a joint this little outside its limits is not a violation."""
STILL = 1e-3
"""[rad]: an episode in which no joint got this far from its reset position never moved the arm (servo
settling and contact jitter stay well below it)."""


@dataclass(frozen=True)
class Episode:
    """One episode of a policy in an environment, recorded at every control step.

    Index 0 of ``time``, ``pos_err`` and ``rot_err`` is the state after ``reset``; index ``i`` the
    state after the ``i``-th action.

    Attributes:
        time: (T + 1,) time since the reset [s].
        pos_err: (T + 1,) end-effector position error to the goal [m].
        rot_err: (T + 1,) end-effector rotation error to the goal, geodesic angle [rad].
        ik_time: (T,) the solver's wall time at each control step [s].
        ik_repeated: (T,) True where the controller answered a query repeated exactly from its last
            result instead of solving (:class:`~hik_sim.policies.controller.IKController`, network
            policies), so ``ik_time`` there is a lookup's; empty for a policy that does not say.
        joint_limit_violations: control steps that ended with a chain joint more than
            :data:`LIMIT_SLACK` outside its limits.
        limit_excess: the farthest a chain joint was outside its limits at the end of a control
            step [rad, or m for a prismatic joint]; 0 when none was.
        solver_failures: control steps at which the policy's solver missed its tolerance.
        success: the environment's ``is_success`` at the end (Reach: 5 mm & 2° held for 5 steps, the
            episode's end; Track: within 5 mm & 2° at the last step).
        terminated: the episode ended by the environment's own condition (Reach: the goal held).
        truncated: the episode ended by the time limit (or ``max_steps``).
        reset_info: the ``info`` of the reset (Track: the trajectory's ``size`` [m]).
        recording: the frames recorded for a video (:class:`~hik_sim.sim.video.Recording`), or None.
        joint_travel: the farthest any chain joint got from where the reset left it [rad, or m for a
            prismatic joint]: below :data:`STILL` the policy never moved the arm.
    """

    time: np.ndarray
    pos_err: np.ndarray
    rot_err: np.ndarray
    ik_time: np.ndarray
    joint_limit_violations: int
    solver_failures: int
    success: bool
    terminated: bool
    truncated: bool
    reset_info: dict[str, Any] = field(default_factory=dict, repr=False)
    recording: Recording | None = field(default=None, repr=False)
    limit_excess: float = 0.0
    ik_repeated: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    joint_travel: float = float("nan")

    @property
    def steps(self) -> int:
        """Control steps taken."""
        return len(self.ik_time)

    @property
    def moved(self) -> bool:
        """Whether the policy moved the arm (a joint got :data:`STILL` or farther from its reset position);
        True where the episode does not say (made without ``joint_travel``)."""
        return not self.joint_travel < STILL

    @property
    def time_to_reach(self) -> float | None:
        """When the episode ended by succeeding [s] (Reach: the end of the hold); None for one that did not (or Track's)."""
        return float(self.time[-1]) if self.success and self.terminated else None


def rollout(env: gym.Env, policy: IKController, seed: int | None = None, max_steps: int | None = None,
            recording: Recording | None = None, frame_every: int = 1) -> Episode:
    """Run one episode: reset ``env`` (and ``policy``), then act until it ends.

    Args:
        env: a hik_sim environment (``hik_sim/Reach-…``, ``hik_sim/Track-…``), wrapped or not.
        policy: the controller: ``policy(observation) -> action``, ``policy.reset()``, its solver's
            last answer in ``policy.last_result[0]`` and its count of ``policy.failures``
            (:class:`~hik_sim.policies.IKController`).
        seed: the reset's seed (the goal, the trajectory).
        max_steps: stop after this many control steps; None: when the environment ends the episode
            (both environments have a time limit).
        recording: frames for a video: the state after the reset and every ``frame_every``-th step
            (and the last) are captured into it.
        frame_every: see ``recording``.

    Returns:
        The :class:`Episode`.

    Raises:
        HikError: ``max_steps`` or ``frame_every`` below 1.
    """
    if (max_steps is not None and max_steps < 1) or frame_every < 1:
        raise HikError(f"max_steps must be None or at least 1 and frame_every at least 1, got {max_steps} and {frame_every}")
    from hik_sim.envs.base import RobotGoalEnv

    base = env.unwrapped
    if not isinstance(base, RobotGoalEnv):
        raise EnvError(f"rollout runs hik_sim environments (hik_sim/Reach-…, hik_sim/Track-…), got {type(base).__name__}")
    obs, info = env.reset(seed=seed)
    reset_info = dict(info)
    policy.reset()
    if recording is not None:
        recording.capture(env, 0.0, info)
    failures_before = policy.failures
    q_reset = np.array(obs["joint_pos"], dtype=float)
    travel = 0.0
    times, pos_err, rot_err, ik_time, repeated = [0.0], [info["pos_err"]], [info["rot_err"]], [], []
    violations, excess, terminated, truncated, step = 0, 0.0, False, False, 0
    while not (terminated or truncated) and (max_steps is None or step < max_steps):
        action = policy(obs)
        ik_time.append(policy.last_result[0].wall_time)
        repeated.append(bool(getattr(policy, "last_repeated", {}).get(0, False)))
        obs, _, terminated, truncated, info = env.step(action)
        step += 1
        q = obs["joint_pos"]
        outside = float(np.max(np.maximum(base.lower - q, q - base.upper)))
        violations += int(outside > LIMIT_SLACK)
        excess = max(excess, outside)
        travel = max(travel, float(np.max(np.abs(q - q_reset))))
        times.append(step * base.dt)
        pos_err.append(info["pos_err"])
        rot_err.append(info["rot_err"])
        if recording is not None and (step % frame_every == 0 or terminated or truncated):
            recording.capture(env, times[-1], info)
    truncated = bool(truncated) or (not terminated and max_steps is not None and step >= max_steps)
    return Episode(time=np.asarray(times), pos_err=np.asarray(pos_err, dtype=float), rot_err=np.asarray(rot_err, dtype=float),
                   ik_time=np.asarray(ik_time, dtype=float), joint_limit_violations=violations,
                   solver_failures=policy.failures - failures_before, success=bool(info.get("is_success", False)),
                   terminated=bool(terminated), truncated=truncated, limit_excess=excess,
                   reset_info=reset_info, recording=recording, ik_repeated=np.asarray(repeated, dtype=bool),
                   joint_travel=travel)

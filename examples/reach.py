"""Reach goals on the IRB120 with the shipped hybrid IK controller, and record a video.

    python examples/reach.py            # writes videos/reach-episode-0.mp4 (MUJOCO_GL=egl without a display)
"""

import gymnasium as gym

import hik_sim.envs  # noqa: F401  (registers hik_sim/Reach-<robot>-v0 and friends)
from hik_sim.evaluation.rollout import rollout
from hik_sim.policies import IKController

env = gym.wrappers.RecordVideo(gym.make("hik_sim/Reach-irb120-v0", render_mode="rgb_array"), "videos", name_prefix="reach")
controller = IKController.pretrained("irb120", "hybrid")
episode = rollout(env, controller, seed=0)  # reset, then act until the goal is held or the time is up
env.close()
print(f"success: {episode.success} after {episode.time[-1]:.2f} s, position error {1000 * episode.pos_err[-1]:.3f} mm, "
      f"rotation error {episode.rot_err[-1]:.2e} rad, IK {1000 * episode.ik_time.mean():.2f} ms per step")

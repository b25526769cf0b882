"""Reach goals on the IRB120 with the shipped hybrid IK controller, and record a video.

    python examples/reach.py            # writes videos/reach-episode-0.mp4 (MUJOCO_GL=egl without a display)
"""

import gymnasium as gym

import hik_sim.envs  # noqa: F401  (registers hik_sim/Reach-<robot>-v0 and friends)
from hik_sim.policies import IKController

env = gym.wrappers.RecordVideo(gym.make("hik_sim/Reach-irb120-v0", render_mode="rgb_array"), "videos", name_prefix="reach")
controller = IKController.pretrained("irb120", "hybrid")
obs, info = env.reset(seed=0)
for _ in range(250):
    obs, reward, terminated, truncated, info = env.step(controller(obs))
    if terminated or truncated:
        break
env.close()
print(f"success: {info['is_success']}, position error {1000 * info['pos_err']:.3f} mm, rotation error {info['rot_err']:.2e} rad")

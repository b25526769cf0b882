"""Checks of a built scene: the chain's FK against MuJoCo, and home held without warnings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hik_sim.errors import HikError

if TYPE_CHECKING:
    from hik_sim.sim.model import Scene

__all__ = ["SceneCheck", "check_scene"]


@dataclass(frozen=True)
class SceneCheck:
    """What :func:`check_scene` measured.

    Attributes:
        fk_pos_err_max: largest position gap between :class:`~hik_sim.kinematics.chain.Chain` FK and
            MuJoCo's ``ee`` site over the samples [m].
        fk_rot_err_max: largest rotation gap over the samples [rad].
        hold_err_max: largest joint drift from home after ``hold_seconds`` of simulation [rad or m].
        warnings: MuJoCo warnings raised while stepping, as "name: count".
        samples: random configurations compared.
        hold_seconds: simulated time at home [s].
    """

    fk_pos_err_max: float
    fk_rot_err_max: float
    hold_err_max: float
    warnings: tuple[str, ...]
    samples: int
    hold_seconds: float

    @property
    def ok(self) -> bool:
        """Within the toolkit's tolerances: 1e-6 m, 1e-5 rad, 1 mrad hold, no warnings."""
        return self.fk_pos_err_max < 1e-6 and self.fk_rot_err_max < 1e-5 and self.hold_err_max < 1e-3 and not self.warnings


def _warnings(data) -> tuple[str, ...]:  # noqa: ANN001
    import mujoco

    return tuple(
        f"{mujoco.mjtWarning(i).name}: {data.warning[i].number}" for i in range(len(data.warning)) if data.warning[i].number
    )


def check_scene(scene: Scene, samples: int = 1000, hold_seconds: float = 2.0, seed: int = 0) -> SceneCheck:
    """Compare the chain's FK with MuJoCo and check that the scene holds home.

    Args:
        scene: the scene.
        samples: random in-limit chain configurations to compare (at least 1).
        hold_seconds: how long to simulate at home [s].
        seed: seed of the configurations.

    Returns:
        The measurements.

    Raises:
        HikError: fewer than 1 sample, or a negative hold time.
    """
    import mujoco
    import torch

    from hik_sim.kinematics.chain import Chain
    from hik_sim.kinematics.rotations import rotation_error

    if samples < 1 or not hold_seconds >= 0:
        raise HikError(f"the scene check needs at least 1 sample and a hold time >= 0 s, got {samples} samples and {hold_seconds} s")
    chain = Chain(scene.robot)
    q = chain.sample(samples, torch.Generator().manual_seed(seed), torch.float64)
    expected = chain.fk(q)
    data = scene.make_data()
    got_pos, got_quat = np.empty((samples, 3)), np.empty((samples, 4))
    for i, qi in enumerate(q.numpy()):
        data.qpos[scene.chain_qpos] = qi
        mujoco.mj_kinematics(scene.model, data)
        got_pos[i], got_quat[i] = scene.ee_pose(data)
    pos_err = float((expected.pos - torch.from_numpy(got_pos)).norm(dim=-1).max())
    rot_err = float(rotation_error(expected.quat, torch.from_numpy(got_quat)).max())
    data = scene.make_data()
    start = data.qpos.copy()
    for _ in range(int(round(hold_seconds / scene.model.opt.timestep))):
        mujoco.mj_step(scene.model, data)
    hold = float(np.abs(data.qpos - start).max()) if scene.model.nq else 0.0
    return SceneCheck(pos_err, rot_err, hold, _warnings(data), samples, hold_seconds)

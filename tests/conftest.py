"""Shared fixtures: headless rendering, the registered robots, and the test arm URDF."""

from __future__ import annotations

from collections.abc import Iterable
import os
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")  # before anything imports mujoco
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")

import pytest

from hik_sim.robots import RobotSpec, get_robot, robot_from_urdf, robot_names

USER_URDF = Path(__file__).parent / "data" / "user_arm" / "urdf" / "user_arm.urdf"


def user_robot() -> RobotSpec:
    """The test arm loaded as a user would load any URDF."""
    return robot_from_urdf(USER_URDF, "base", "tool")


ALL_ROBOTS = (*robot_names(), "user_arm")


def robot_by_id(name: str) -> RobotSpec:
    """A registered robot, or the user test arm for ``user_arm``."""
    return user_robot() if name == "user_arm" else get_robot(name)


@pytest.fixture(params=ALL_ROBOTS)
def robot(request: pytest.FixtureRequest) -> RobotSpec:
    """Every registered robot and the user test arm."""
    return robot_by_id(request.param)


def reach_successes(env, controller, seeds: Iterable[int]) -> int:  # noqa: ANN001
    """Reach episodes run with a controller (:func:`hik_sim.evaluation.rollout.rollout`); how many ended with the goal held."""
    from hik_sim.evaluation.rollout import rollout

    return sum(rollout(env, controller, seed=seed).success for seed in seeds)


def float32_card_tolerance(network: object, chain: object, eval_set: object) -> dict[str, float]:
    """How far a float32 network's mean errors on ``eval_set`` may lie from its card on another CPU [mm, deg].

    A card's figures were measured in float32 on one CPU; another CPU's float32 kernels sum in another order, so
    (1) every answer moves by about its float32 rounding, measured here as the distance between the float32
    answers and a float64 copy's; and (2) a several-answer network's choice among its answers (ranked in
    float32) can flip where two answers' scores are closer than their float32 rounding, and then the target's
    error becomes the other answer's. The bound adds, per target, twice (1)'s change of the error and, for each
    near-tie, the largest change of the error a flip could make; the tolerance is its mean over the set.

    Returns:
        ``{"pos_mean_mm": ..., "rot_mean_deg": ...}``: absolute tolerances.
    """
    import copy
    import math

    import torch

    from hik_sim.kinematics.rotations import position_error, rotation_error

    pos, quat = eval_set.batch.pos, eval_set.batch.quat  # type: ignore[attr-defined]
    ours = network.candidates(pos, quat)  # type: ignore[attr-defined]
    exact = copy.deepcopy(network).double().candidates(pos.double(), quat.double())  # type: ignore[attr-defined]
    batch, heads, n = ours.shape

    def errors(q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        reached = chain.fk(q.double().reshape(batch * heads, n))  # type: ignore[attr-defined]
        p = position_error(reached.pos, pos.double().repeat_interleave(heads, 0)).view(batch, heads) * 1e3
        r = rotation_error(reached.quat, quat.double().repeat_interleave(heads, 0)).view(batch, heads) * 180 / math.pi
        return p, r  # as evaluate_network measures them, in float64

    pos_ours, rot_ours = errors(ours)
    pos_exact, rot_exact = errors(exact)
    jitter_pos, jitter_rot = 2 * (pos_ours - pos_exact).abs(), 2 * (rot_ours - rot_exact).abs()
    flip_pos = torch.zeros(batch, dtype=torch.float64)
    flip_rot = torch.zeros(batch, dtype=torch.float64)
    if heads > 1:
        score_ours = network._scores(ours, pos.to(ours), quat.to(ours)).double()  # type: ignore[attr-defined]
        score_exact = network._scores(exact, pos.double(), quat.double())  # type: ignore[attr-defined]
        rounding = (score_ours - score_exact).abs()
        chosen = score_ours.argmin(dim=1)
        rows = torch.arange(batch)
        gap = (score_exact - score_exact[rows, chosen][:, None]).abs()
        near = gap <= 4 * (rounding + rounding[rows, chosen][:, None]) + 1e-6
        flip_pos = ((pos_exact - pos_exact[rows, chosen][:, None]).abs() * near).amax(dim=1)
        flip_rot = ((rot_exact - rot_exact[rows, chosen][:, None]).abs() * near).amax(dim=1)
        jitter_pos, jitter_rot = jitter_pos[rows, chosen], jitter_rot[rows, chosen]
    else:
        jitter_pos, jitter_rot = jitter_pos[:, 0], jitter_rot[:, 0]
    return {"pos_mean_mm": float((flip_pos + jitter_pos).mean()) + 1e-9,
            "rot_mean_deg": float((flip_rot + jitter_rot).mean()) + 1e-9}


def inductor_failure() -> str | None:
    """Why ``torch.compile`` cannot build the compiled training tests' kernels here, or None where it can.

    Under ``ATEN_CPU_CAPABILITY=default`` (torch's generic kernels, as on a CPU without AVX2) inductor's C++ build of
    the loss's kernels fails in torch 2.13 (``'at::vec' has not been declared``); those tests are skipped there with
    this reason and run everywhere else.
    """
    if os.environ.get("ATEN_CPU_CAPABILITY", "").lower() == "default":
        return "inductor's C++ build fails under ATEN_CPU_CAPABILITY=default in torch 2.13 ('at::vec' has not been declared)"
    return None


@pytest.fixture
def needs_inductor() -> None:
    """Skips a test of compiled training where ``torch.compile`` cannot build (:func:`inductor_failure`)."""
    reason = inductor_failure()
    if reason is not None:
        pytest.skip(reason)

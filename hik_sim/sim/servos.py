"""Step 16: position servos on the chain's joints and firm holds on every other joint.

Each servo is an ideal position actuator (no effort limit) tuned on the largest joint-space
inertia its joint sees over the sampled configurations (:mod:`~hik_sim.sim.measure`):
``kp = I_max·ω²``, ``kv = 2·I_max·ω`` with ω = 2π·``SceneOptions.natural_frequency``, so every
joint responds at least at that natural frequency and is critically damped at its largest
inertia, overdamped below it, never underdamped. Smooth commands are tracked without crossing a
limit; a step across the whole range can still push a light wrist joint past its limit for a
moment through the coupling with heavy links, so controllers should send rate-limited targets.
"""

from __future__ import annotations

import math

from hik_sim.sim.draft import Draft

__all__ = ["add_position_servos", "servo_gains"]


def servo_gains(inertia: float, natural_frequency: float) -> tuple[float, float]:
    """(kp, kv) of a servo critically damped at ``inertia`` [kg·m²] with ``natural_frequency`` [Hz]."""
    omega = 2 * math.pi * natural_frequency
    inertia = max(inertia, 1e-8)
    return inertia * omega**2, 2 * inertia * omega


def add_position_servos(draft: Draft) -> None:
    """Position servos drive the chain's joints (``ctrlrange`` = joint limits); ``hold:<joint>`` servos hold every other joint.

    Gains ``kp = I_max·ω²`` and ``kv = 2·I_max·ω`` at 20 Hz by default, from the largest
    joint-space inertia each joint sees: never underdamped. A held joint's ``ctrlrange`` is its
    range in MuJoCo's model (±π when unlimited).
    """
    import mujoco

    robot, measured = draft.robot, draft.measured
    assert measured is not None, "the servos are tuned on the measurements of step 15"
    for name in (*robot.joint_names, *draft.held):
        if name in robot.joint_names:
            lo, hi = robot.lower[robot.joint_names.index(name)], robot.upper[robot.joint_names.index(name)]
        else:
            lo, hi = measured.held_ranges[name] or (-math.pi, math.pi)
        kp, kv = servo_gains(measured.inertia[name], draft.options.natural_frequency)
        actuator = draft.spec.add_actuator(name=name if name in robot.joint_names else f"hold:{name}", target=name,
                                           trntype=mujoco.mjtTrn.mjTRN_JOINT)
        actuator.set_to_position(kp=kp, kv=kv)
        actuator.ctrllimited = True
        actuator.ctrlrange = [float(lo), float(hi)]

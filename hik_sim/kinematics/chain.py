"""Batched forward kinematics and Jacobians of a robot's IK chain, in plain torch.

The chain from a :class:`~hik_sim.robots.RobotSpec`'s base link to its end-effector link is
reduced once to :class:`ChainGeometry`: per movable joint a constant transform from the previous
joint's moving frame (the URDF origins of all fixed joints in between, folded together), the joint
axis and type, and the constant tool transform after the last joint. :class:`Chain` evaluates it
for a batch of configurations with a handful of tensor operations per joint (no per-sample Python
loop): this is the fast path for training and batched solvers, differentiable through autograd.

Poses are expressed in the base link's frame: position (B, 3) [m] and unit quaternion (B, 4)
wxyz with w ≥ 0. The Jacobian (B, 6, n) maps joint velocities to the end-effector's linear
velocity (rows 0–2) [m/s] and angular velocity (rows 3–5) [rad/s], both in the base frame.

pytorch-kinematics is the reference (:func:`reference_fk`); the tests hold this module to it, to
MuJoCo, and to finite differences.
"""

from __future__ import annotations

import contextlib
import io
from typing import NamedTuple

import numpy as np
import torch

from hik_sim.errors import HikError
from hik_sim.kinematics.geometry import ChainGeometry, rpy_matrix, skew
from hik_sim.robots import RobotSpec
from hik_sim.kinematics.rotations import matrix_to_quaternion, position_error, rotation_error

__all__ = ["ChainGeometry", "Chain", "Pose", "rpy_matrix", "reference_fk", "position_error", "rotation_error"]


class Pose(NamedTuple):
    """A batch of end-effector poses in the chain's base frame.

    Attributes:
        pos: (B, 3) [m].
        quat: (B, 4) unit wxyz, w ≥ 0.
    """

    pos: torch.Tensor
    quat: torch.Tensor


class _Tensors(NamedTuple):
    rot0: torch.Tensor  # (n, 3, 3) R_fixed
    rot1: torch.Tensor  # (n, 3, 3) R_fixed @ K      (K = skew(axis); 0 for prismatic joints)
    rot2: torch.Tensor  # (n, 3, 3) R_fixed @ K @ K
    trans: torch.Tensor  # (n, 3)
    axes: torch.Tensor  # (n, 3) axis in the joint's frame
    axes_rot: torch.Tensor  # (n, 3) R_fixed @ axis: the axis in the previous moving frame
    tool_rot: torch.Tensor  # (3, 3)
    tool_trans: torch.Tensor  # (3,)
    lower: torch.Tensor  # (n,)
    upper: torch.Tensor  # (n,)


class Chain:
    """Batched FK, Jacobian, limits and sampling for one robot's IK chain.

    Args:
        robot: the robot; its URDF is read once here.

    Raises:
        HikError: ``robot`` is not a :class:`~hik_sim.robots.RobotSpec`.

    Every method accepts float32 or float64 tensors on any device and answers in the same dtype
    and device; constants are cached per (dtype, device).
    """

    def __init__(self, robot: RobotSpec) -> None:
        if not isinstance(robot, RobotSpec):  # a robot's name was a raw AttributeError
            raise HikError(f"Chain takes a RobotSpec (hik_sim.robots.get_robot(name) or robot_from_urdf(...)), got {robot!r}")
        self.robot = robot
        self.geometry = ChainGeometry.from_robot(robot)
        g = self.geometry
        skews = np.stack([skew(a) if r else np.zeros((3, 3)) for a, r in zip(g.axes, g.revolute)])
        self._np: tuple[np.ndarray, ...] = (  # float64 numpy masters of the cached tensors, in _Tensors' field order
            g.rotations, g.rotations @ skews, g.rotations @ skews @ skews, g.translations, g.axes,
            np.einsum("nij,nj->ni", g.rotations, g.axes), g.tool_rotation, g.tool_translation,
            np.asarray(robot.lower), np.asarray(robot.upper),
        )
        self._cache: dict[tuple[torch.dtype, torch.device], _Tensors] = {}
        self._revolute = [bool(r) for r in g.revolute]

    @property
    def dof(self) -> int:
        """Number of joints n."""
        return self.geometry.dof

    @property
    def joint_names(self) -> tuple[str, ...]:
        """Joint names in chain order."""
        return self.geometry.joint_names

    def _tensors(self, dtype: torch.dtype, device: torch.device) -> _Tensors:
        key = (dtype, device)
        if key not in self._cache:
            self._cache[key] = _Tensors(*(torch.as_tensor(a, dtype=dtype, device=device) for a in self._np))
        return self._cache[key]

    def _check(self, q: torch.Tensor) -> torch.Tensor:
        if not isinstance(q, torch.Tensor):
            raise HikError(f"joint angles must be a torch.Tensor of shape (B, {self.dof}), got {type(q).__name__}")
        if q.ndim != 2 or q.shape[1] != self.dof:
            raise HikError(f"joint angles must have shape (B, {self.dof}) for {self.robot.name!r}, got {tuple(q.shape)}")
        if not q.is_floating_point():
            raise HikError(f"joint angles must be float32 or float64, got {q.dtype}")
        if not torch.compiler.is_compiling() and not bool(torch.isfinite(q).all()):  # compiled: no data-dependent branch
            raise HikError(f"joint values must be finite; got NaN or inf in {int((~torch.isfinite(q)).any(-1).sum())} of {q.shape[0]} rows")
        return q

    def limits(self, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
        """Lower and upper joint limits, each (n,) [rad or m]."""
        t = self._tensors(dtype, torch.device(device))
        return t.lower, t.upper

    @property
    def turns(self) -> np.ndarray:
        """(n,) bool: the revolute joints whose range holds more than one turn (2π), where an answer and
        its copies whole turns away are the same pose (the IRB120's joint 6 spans ±400°)."""
        lower, upper = self.limits(torch.float64)
        return np.asarray(self._revolute, dtype=bool) & (upper - lower > 2 * np.pi).numpy()

    def clamp(self, q: torch.Tensor) -> torch.Tensor:
        """``q`` clamped into the joint limits; (B, n) → (B, n)."""
        lower, upper = self.limits(q.dtype, q.device)
        return torch.maximum(torch.minimum(q, upper), lower)

    def sample(
        self,
        batch: int,
        generator: torch.Generator,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """Configurations drawn uniformly inside the joint limits.

        Args:
            batch: number of configurations B.
            generator: the source of randomness (its device is used unless ``device`` is given).
            dtype: float32 or float64.
            device: where the result lives.

        Returns:
            (B, n).

        Raises:
            HikError: ``batch`` is not a whole number >= 0.
        """
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 0:
            raise HikError(f"batch must be a whole number >= 0, got {batch!r}")
        device = torch.device(device) if device is not None else generator.device
        lower, upper = self.limits(dtype, device)
        u = torch.rand((batch, self.dof), generator=generator, dtype=dtype, device=generator.device).to(device)
        return lower + (upper - lower) * u

    def _forward(self, q: torch.Tensor, want_frames: bool) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """End-effector position and rotation; with ``want_frames`` also each joint's world axis and origin."""
        q = self._check(q)
        t = self._tensors(q.dtype, q.device)
        # Every joint's local rotation at once: R_fixed @ Rodrigues(axis, q)
        #   = R_fixed + sin q · R_fixed K + (1 − cos q) · R_fixed K²   (K = 0 for prismatic joints)
        angle = q * self._revolute_mask(q)
        sin, one_minus_cos = torch.sin(angle)[..., None, None], (1 - torch.cos(angle))[..., None, None]
        local = t.rot0 + sin * t.rot1 + one_minus_cos * t.rot2  # (B, n, 3, 3)
        pos = t.trans[0].expand(q.shape[0], 3)
        rot = local[:, 0]
        axes, origins = [], []
        for i, is_revolute in enumerate(self._revolute):
            if i > 0:
                pos = pos + rot @ t.trans[i]  # origin of joint i in the base frame
                if want_frames:
                    axes.append(rot @ t.axes_rot[i])
                rot = rot @ local[:, i]
            elif want_frames:
                axes.append(t.axes_rot[0].expand(q.shape[0], 3))
            if want_frames:
                origins.append(pos)
            if not is_revolute:
                pos = pos + (rot @ t.axes[i]) * q[:, i, None]
        pos = pos + rot @ t.tool_trans
        return pos, rot @ t.tool_rot, axes, origins

    def _revolute_mask(self, q: torch.Tensor) -> torch.Tensor:
        if all(self._revolute):
            return q.new_ones(())
        return torch.as_tensor(self._revolute, dtype=q.dtype, device=q.device)

    def fk(self, q: torch.Tensor) -> Pose:
        """End-effector pose.

        Args:
            q: (B, n) joint values [rad or m].

        Returns:
            :class:`Pose` with pos (B, 3) [m] and quat (B, 4) wxyz, w ≥ 0, in the base frame.

        Raises:
            HikError: ``q`` is not a float tensor of shape (B, n).
        """
        pos, rot, _, _ = self._forward(q, want_frames=False)
        return Pose(pos, matrix_to_quaternion(rot))

    def fk_matrix(self, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """End-effector position (B, 3) [m] and rotation matrix (B, 3, 3), base frame."""
        pos, rot, _, _ = self._forward(q, want_frames=False)
        return pos, rot

    def fk_and_jacobian(self, q: torch.Tensor) -> tuple[Pose, torch.Tensor]:
        """End-effector pose and geometric Jacobian in one pass.

        Args:
            q: (B, n) joint values [rad or m].

        Returns:
            The :class:`Pose` and the Jacobian (B, 6, n): rows 0–2 linear velocity [m/s per
            joint unit], rows 3–5 angular velocity [rad/s per joint unit], base frame.
        """
        pos, rot, axes, origins = self._forward(q, want_frames=True)
        columns = []
        for axis, origin, is_revolute in zip(axes, origins, self._revolute):
            if is_revolute:
                columns.append(torch.cat((torch.linalg.cross(axis, pos - origin), axis), dim=-1))
            else:
                columns.append(torch.cat((axis, torch.zeros_like(axis)), dim=-1))
        return Pose(pos, matrix_to_quaternion(rot)), torch.stack(columns, dim=-1)

    def jacobian(self, q: torch.Tensor) -> torch.Tensor:
        """Geometric Jacobian (B, 6, n) in the base frame; see :meth:`fk_and_jacobian`."""
        return self.fk_and_jacobian(q)[1]


def reference_fk(robot: RobotSpec, q: torch.Tensor) -> Pose:
    """End-effector pose by pytorch-kinematics, the reference implementation.

    Args:
        robot: the robot.
        q: (B, n) joint values in chain order.

    Returns:
        :class:`Pose` in the base frame, w ≥ 0.
    """
    chain = reference_chain(robot, q.dtype, q.device)
    matrix = chain.forward_kinematics(q).get_matrix()
    return Pose(matrix[:, :3, 3], matrix_to_quaternion(matrix[:, :3, :3]))


def reference_chain(robot: RobotSpec, dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu"):  # noqa: ANN201
    """pytorch-kinematics ``SerialChain`` of the robot's IK chain (its URDF parser's chatter suppressed)."""
    import xml.etree.ElementTree as ET

    import pytorch_kinematics as pk

    root = ET.parse(robot.urdf).getroot()
    for joint in root.iter("joint"):
        if joint.get("type") in ("floating", "planar"):  # outside any chain; pytorch-kinematics rejects them
            joint.set("type", "fixed")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        chain = pk.build_serial_chain_from_urdf(ET.tostring(root), robot.ee_link, robot.base_link)
    names = tuple(chain.get_joint_parameter_names())
    if names != robot.joint_names:
        raise HikError(f"pytorch-kinematics reads the chain of {robot.name!r} as {names}, expected {robot.joint_names}")
    return chain.to(dtype=dtype, device=device)

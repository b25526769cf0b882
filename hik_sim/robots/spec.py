"""`RobotSpec`: everything hik_sim needs to know about one robot, and how to make one from a URDF."""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from hik_sim.errors import ChainError, HikError
from hik_sim.robots.urdf import UrdfModel, load_urdf, resolve_mesh_uri

__all__ = ["RobotSpec", "robot_from_urdf"]


@dataclass(frozen=True)
class RobotSpec:
    """A robot and the IK chain hik_sim drives on it.

    Build one with :func:`robot_from_urdf` or take a registered one from
    :func:`hik_sim.robots.get_robot`; the constructor checks that the fields agree.

    Attributes:
        name: short identifier (``irb120``).
        urdf: the URDF file.
        base_link: link the IK chain starts from; poses are expressed in its frame.
        ee_link: link (tool frame) the IK chain ends at.
        joint_names: the chain's movable joints, base → tip; the one joint order used everywhere.
        lower: lower joint limits [rad, or m for prismatic joints], in ``joint_names`` order.
        upper: upper joint limits, same units and order.
        home: home configuration of the chain, same units and order; inside the limits.
        held_joints: every movable joint outside the chain and the value it is held at.
        description: what the robot is, why it is here and what its chain is.
        licence: licence of the robot model.
        source: where the URDF comes from (package and path, or "user file").
        package_dirs: ``package://`` name → folder, for resolving meshes.
        front: the direction the robot faces, in its URDF root frame (cameras look at that side).
    """

    name: str
    urdf: Path
    base_link: str
    ee_link: str
    joint_names: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    home: tuple[float, ...]
    held_joints: Mapping[str, float] = field(default_factory=dict)
    description: str = ""
    licence: str = "unknown"
    source: str = "user file"
    package_dirs: Mapping[str, Path] = field(default_factory=dict)
    front: tuple[float, float, float] = (1.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        n = len(self.joint_names)
        if n == 0:
            raise HikError(f"robot {self.name!r}: the chain has no joints")
        for label, values in (("lower", self.lower), ("upper", self.upper), ("home", self.home)):
            if len(values) != n:
                raise HikError(f"robot {self.name!r}: {label} has {len(values)} values, the chain has {n} joints")
            if not all(math.isfinite(v) for v in values):
                raise HikError(f"robot {self.name!r}: {label} must be finite, got {values}")
        for joint, lo, hi, h in zip(self.joint_names, self.lower, self.upper, self.home):
            if not lo < hi:
                raise HikError(f"robot {self.name!r}: joint {joint!r} has an empty range [{lo}, {hi}]; lower must be below upper")
            if not lo <= h <= hi:
                raise HikError(f"robot {self.name!r}: home {h} of joint {joint!r} is outside its limits [{lo}, {hi}]")
        overlap = set(self.held_joints) & set(self.joint_names)
        if overlap:
            raise HikError(f"robot {self.name!r}: joints {sorted(overlap)} are both in the chain and held")
        object.__setattr__(self, "urdf", Path(self.urdf))
        object.__setattr__(self, "held_joints", dict(self.held_joints))
        object.__setattr__(self, "package_dirs", {k: Path(v) for k, v in self.package_dirs.items()})

    @property
    def dof(self) -> int:
        """Number of joints in the IK chain."""
        return len(self.joint_names)

    def __hash__(self) -> int:
        return hash((self.name, str(self.urdf), self.base_link, self.ee_link, self.joint_names, self.lower, self.upper))

    def urdf_model(self) -> UrdfModel:
        """The parsed, validated URDF."""
        return load_urdf(self.urdf)

    def urdf_sha256(self) -> str:
        """SHA-256 of the URDF file's bytes (recorded in checkpoints and data-set cards)."""
        return hashlib.sha256(self.urdf.read_bytes()).hexdigest()

    def summary(self) -> dict[str, object]:
        """A JSON-ready description (name, DOF, chain, limits, source, licence)."""
        return {
            "name": self.name,
            "dof": self.dof,
            "base_link": self.base_link,
            "ee_link": self.ee_link,
            "joints": list(self.joint_names),
            "lower": list(self.lower),
            "upper": list(self.upper),
            "home": list(self.home),
            "held_joints": len(self.held_joints),
            "source": self.source,
            "licence": self.licence,
            "urdf": str(self.urdf),
            "description": self.description,
        }


def _limits(model: UrdfModel, joint_name: str) -> tuple[float, float]:
    joint = model.joint(joint_name)
    if joint.type == "continuous":
        return (-math.pi, math.pi)  # one turn: every orientation of the joint, no wrap-around ambiguity
    assert joint.lower is not None and joint.upper is not None  # load_urdf guarantees limits
    return (joint.lower, joint.upper)


def _clip(value: float, lo: float, hi: float) -> float:
    return min(max(value, lo), hi)


def robot_from_urdf(
    path: str | os.PathLike[str],
    base_link: str,
    ee_link: str,
    *,
    name: str | None = None,
    home: Mapping[str, float] | None = None,
    description: str = "",
    licence: str = "unknown",
    source: str = "user file",
    package_dirs: Mapping[str, str | os.PathLike[str]] | None = None,
    check_meshes: bool = True,
    front: tuple[float, float, float] = (1.0, 0.0, 0.0),
) -> RobotSpec:
    """Make a :class:`RobotSpec` for any URDF.

    The chain is every movable joint from ``base_link`` down to ``ee_link``. Joints get their URDF
    limits (continuous joints: ``[-π, π]``). Home is 0 clipped into the limits unless ``home`` says
    otherwise; every joint outside the chain is held at its home value.

    Args:
        path: the URDF file.
        base_link: the chain's base link; it must be an ancestor of ``ee_link``.
        ee_link: the end-effector (tool) link.
        name: the robot's name; defaults to the URDF's robot name.
        home: joint name → home value [rad or m] for any joints, chain or not.
        description: free text shown by ``python -m hik_sim.robots``.
        licence: licence of the model.
        source: where the URDF comes from.
        package_dirs: ``package://`` name → folder, tried before the automatic search.
        check_meshes: check that every mesh the URDF names can be found.
        front: the direction the robot faces in its root frame (x forward, as in ROS REP 103).

    Returns:
        The spec.

    Raises:
        UrdfError: the file is missing or malformed.
        ChainError: the links do not form a chain.
        MeshError: a mesh cannot be found (when ``check_meshes``).
        HikError: ``home`` is not a mapping, names an unknown joint, or gives a value that is not
            a finite number or is outside the joint's limits.
    """
    model = load_urdf(path)
    dirs = {k: Path(v) for k, v in (package_dirs or {}).items()}
    chain = [j for j in model.chain(base_link, ee_link) if j.movable]
    joint_names = tuple(j.name for j in chain)
    if home is not None and not isinstance(home, Mapping):
        raise HikError(f"home must map joint names to values [rad or m], got a {type(home).__name__}")
    home = dict(home or {})
    for joint, value in home.items():
        try:
            home[joint] = float(value)
        except (TypeError, ValueError):
            raise HikError(f"home value of joint {joint!r} must be a number [rad or m], got {value!r}") from None
        if not math.isfinite(home[joint]):
            raise HikError(f"home value of joint {joint!r} must be finite, got {value!r}")
    movable = {j.name for j in model.joints if j.movable and j.mimic is None}
    unknown = sorted(set(home) - movable)
    if unknown:
        raise HikError(f"home names unknown joints {unknown}; movable joints are: {', '.join(sorted(movable))}")
    lower, upper, home_values = [], [], []
    for joint in joint_names:
        lo, hi = _limits(model, joint)
        if not lo < hi:
            raise ChainError(f"chain joint {joint!r} has an empty range [{lo}, {hi}]; chain joints need lower < upper")
        value = home.get(joint, _clip(0.0, lo, hi))
        lower.append(lo)
        upper.append(hi)
        home_values.append(value)
    held = {}
    for other in model.joints:
        if other.movable and other.mimic is None and other.name not in joint_names:
            lo, hi = _limits(model, other.name)
            held[other.name] = home.get(other.name, _clip(0.0, lo, hi))
            if not lo <= held[other.name] <= hi:
                raise HikError(f"home {held[other.name]} of joint {other.name!r} is outside its limits [{lo}, {hi}]")
    if check_meshes:
        for uri in dict.fromkeys(model.mesh_uris):
            resolve_mesh_uri(uri, model.path, dirs)
    return RobotSpec(
        name=name or model.name,
        urdf=model.path.resolve(),
        base_link=base_link,
        ee_link=ee_link,
        joint_names=joint_names,
        lower=tuple(lower),
        upper=tuple(upper),
        home=tuple(home_values),
        held_joints=held,
        description=description,
        licence=licence,
        source=source,
        package_dirs=dirs,
        front=front,
    )

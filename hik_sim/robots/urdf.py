"""Reading and validating URDF files: the one place where URDF XML is parsed.

A :class:`UrdfModel` is the robot's kinematic tree (links, joints with their fixed origins, axes
and limits) plus the mesh references it makes. Everything that could make a later stage fail deep
inside a library (MuJoCo, pytorch-kinematics) is checked here and reported as a
:class:`~hik_sim.errors.UrdfError`, :class:`~hik_sim.errors.ChainError` or
:class:`~hik_sim.errors.MeshError` whose message names what is wrong and what is valid.

Mesh URIs are resolved the way ROS does, without ROS: ``package://PKG/rest`` looks for a folder
named ``PKG`` among the URDF's ancestor folders (and their children), then in ``ROS_PACKAGE_PATH``;
``file://`` and plain paths are taken relative to the URDF's folder.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import io
import math
import os
import threading
import xml.etree.ElementTree as ET
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hik_sim.errors import ChainError, MeshError, UrdfError

__all__ = ["UrdfJoint", "UrdfModel", "load_urdf", "load_urdf_tree", "resolve_mesh_uri", "MOVABLE_JOINT_TYPES"]

JointType = Literal["revolute", "continuous", "prismatic", "fixed", "floating", "planar"]
JOINT_TYPES: tuple[str, ...] = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
MOVABLE_JOINT_TYPES: tuple[str, ...] = ("revolute", "continuous", "prismatic")


@dataclass(frozen=True)
class UrdfJoint:
    """One URDF joint.

    Attributes:
        name: joint name.
        type: URDF joint type.
        parent: parent link name.
        child: child link name.
        xyz: origin translation parent→joint frame [m].
        rpy: origin rotation as fixed-axis roll, pitch, yaw [rad].
        axis: unit axis in the joint frame (``(1, 0, 0)`` when the URDF gives none).
        lower: lower limit [rad or m]; ``None`` when the URDF gives none.
        upper: upper limit [rad or m]; ``None`` when the URDF gives none.
        mimic: name of the joint this one mimics, or ``None``.
    """

    name: str
    type: JointType
    parent: str
    child: str
    xyz: tuple[float, float, float]
    rpy: tuple[float, float, float]
    axis: tuple[float, float, float]
    lower: float | None
    upper: float | None
    mimic: str | None = None

    @property
    def movable(self) -> bool:
        """Whether the joint has one degree of freedom (revolute, continuous, prismatic)."""
        return self.type in MOVABLE_JOINT_TYPES


@dataclass(frozen=True)
class UrdfModel:
    """A parsed, validated URDF: a tree of links connected by joints.

    Attributes:
        path: the URDF file.
        name: the robot's name.
        links: link names in file order.
        joints: joints in file order.
        root: the one link that is no joint's child.
        mesh_uris: every mesh filename the URDF names, as written.
    """

    path: Path
    name: str
    links: tuple[str, ...]
    joints: tuple[UrdfJoint, ...]
    root: str
    mesh_uris: tuple[str, ...]

    def joint(self, name: str) -> UrdfJoint:
        """The joint called ``name``.

        Raises:
            UrdfError: no joint has that name.
        """
        for joint in self.joints:
            if joint.name == name:
                return joint
        raise UrdfError(f"{self.path}: no joint named {name!r}; joints are: {', '.join(j.name for j in self.joints)}")

    def path_to_root(self, link: str) -> tuple[UrdfJoint, ...]:
        """Joints from the root down to ``link``, root first."""
        by_child = {j.child: j for j in self.joints}
        out: list[UrdfJoint] = []
        while link in by_child:
            joint = by_child[link]
            out.append(joint)
            link = joint.parent
        return tuple(reversed(out))

    def chain(self, base_link: str, ee_link: str) -> tuple[UrdfJoint, ...]:
        """Joints (fixed ones included) from ``base_link`` down to ``ee_link``, base first.

        Raises:
            ChainError: a link is unknown, base and end-effector are the same link, the base is
                not an ancestor of the end-effector, the chain has no movable joint, or holds a
                joint type that IK cannot drive.
        """
        for role, link in (("base link", base_link), ("end-effector link", ee_link)):
            if link not in self.links:
                raise ChainError(
                    f"{role} {link!r} is not a link of {self.path.name}; links are: {', '.join(self.links)}"
                )
        if base_link == ee_link:
            raise ChainError(
                f"base link and end-effector link are both {base_link!r}; the end-effector must be a link below the base"
            )
        to_ee = self.path_to_root(ee_link)
        ancestors = [self.root] + [j.child for j in to_ee]
        if base_link not in ancestors:
            raise ChainError(
                f"base link {base_link!r} is not an ancestor of end-effector link {ee_link!r} in "
                f"{self.path.name}; valid bases for that end-effector are: "
                + (", ".join(ancestors[:-1]) or f"none ({ee_link!r} is the root link)")
            )
        start = ancestors.index(base_link)
        joints = to_ee[start:]
        if len(joints) > MAX_CHAIN_JOINTS:
            raise ChainError(f"the chain from {base_link!r} to {ee_link!r} holds {len(joints)} joints; an IK chain may hold at "
                             f"most {MAX_CHAIN_JOINTS} (fixed ones included)")
        for joint in joints:
            if joint.type in ("floating", "planar"):
                raise ChainError(
                    f"joint {joint.name!r} between {base_link!r} and {ee_link!r} is {joint.type}; a chain "
                    f"may hold only {', '.join(MOVABLE_JOINT_TYPES)} and fixed joints"
                )
            if joint.mimic is not None and joint.movable:
                raise ChainError(
                    f"joint {joint.name!r} between {base_link!r} and {ee_link!r} mimics {joint.mimic!r}; "
                    "mimic joints inside the IK chain are not supported"
                )
        if not any(j.movable for j in joints):
            raise ChainError(
                f"no movable joint between {base_link!r} and {ee_link!r} in {self.path.name}: "
                "the chain must hold at least one revolute, continuous or prismatic joint"
            )
        return joints


MAX_ORIGIN_M = 100.0
"""The largest origin offset [m] (any axis) a URDF may give a joint or a link's parts: a robot is smaller, and a far
larger one (an origin of 1e308) makes forward kinematics overflow to inf."""
MAX_LIMIT = 1000.0
"""The largest joint limit magnitude [rad, or m for a prismatic joint]: beyond it uniform sampling of the range, and
any distance in it, loses all precision."""
MAX_CHAIN_JOINTS = 128
"""The most joints (fixed ones included) an IK chain may hold: beyond it FK, the networks' training data and MuJoCo's
tree depth grow without use (the shipped arms hold 6 to 10 movable joints)."""


def _bounded(values: tuple[float, ...], bound: float, what: str, path: Path) -> tuple[float, ...]:
    if any(abs(v) > bound for v in values):
        raise UrdfError(f"{path}: {what} {values} is out of range: each value must lie within ±{bound:g}")
    return values


def _floats(text: str | None, count: int, what: str, path: Path, default: tuple[float, ...]) -> tuple[float, ...]:
    if text is None:
        return default
    parts = text.split()
    expected = "a finite number" if count == 1 else f"{count} finite numbers"
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise UrdfError(f"{path}: {what} must be {expected}, got {text!r}") from None
    if len(values) != count or not all(math.isfinite(v) for v in values):
        raise UrdfError(f"{path}: {what} must be {expected}, got {text!r}")
    return values


def _number(element: ET.Element | None, attr: str, what: str, path: Path) -> float | None:
    if element is None or element.get(attr) is None:
        return None
    return _floats(element.get(attr), 1, what, path, (0.0,))[0]


# Geometry MuJoCo's URDF reader understands, and the positive sizes each one needs.
_SHAPES: dict[str, tuple[tuple[str, int], ...]] = {
    "box": (("size", 3),),
    "cylinder": (("radius", 1), ("length", 1)),
    "capsule": (("radius", 1), ("length", 1)),
    "sphere": (("radius", 1),),
    "mesh": (),
}


def _check_link(element: ET.Element, path: Path) -> None:
    """Check a link's inertial, visual and collision origins and geometry (MuJoCo reads them)."""
    name = element.get("name")
    for tag in ("inertial", "visual", "collision"):
        for part in element.findall(tag):
            origin = part.find("origin")
            if origin is not None:
                for attr in ("xyz", "rpy"):
                    values = _floats(origin.get(attr), 3, f"link {name!r} {tag} origin {attr}", path, ())
                    _bounded(values, MAX_ORIGIN_M if attr == "xyz" else MAX_LIMIT, f"link {name!r} {tag} origin {attr}", path)
            if tag == "inertial":
                _number(part.find("mass"), "value", f"link {name!r} mass", path)
                for attr in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
                    _number(part.find("inertia"), attr, f"link {name!r} inertia {attr}", path)
                continue
            geometry = part.find("geometry")
            shape = next(iter(geometry), None) if geometry is not None else None
            if shape is None or shape.tag not in _SHAPES:
                if geometry is None:
                    found = "no <geometry>"
                else:
                    found = f"a <{shape.tag}>" if shape is not None else "an empty <geometry>"
                raise UrdfError(
                    f"{path}: link {name!r} has a <{tag}> with {found}; its <geometry> must hold one of: "
                    f"{', '.join(f'<{s}>' for s in _SHAPES)}"
                )
            for attr, count in _SHAPES[shape.tag]:
                what = f"link {name!r} {tag} {shape.tag} {attr}"
                if shape.get(attr) is None:
                    needs = " and ".join(a for a, _ in _SHAPES[shape.tag])
                    raise UrdfError(f"{path}: {what} is missing; <{shape.tag}> needs {needs}")
                if not all(v > 0 for v in _floats(shape.get(attr), count, what, path, ())):
                    raise UrdfError(f"{path}: {what} must be positive, got {shape.get(attr)!r}")
            if shape.tag == "mesh" and shape.get("scale") is not None:
                scale = _floats(shape.get("scale"), 3, f"link {name!r} {tag} mesh scale", path, ())
                if 0.0 in scale:
                    raise UrdfError(
                        f"{path}: link {name!r} {tag} mesh scale must be 3 non-zero numbers, got {shape.get('scale')!r}"
                    )


def _parse_joint(element: ET.Element, path: Path) -> UrdfJoint:
    name = element.get("name")
    if not name:
        raise UrdfError(f"{path}: a <joint> has no name attribute")
    jtype = element.get("type")
    if jtype not in JOINT_TYPES:
        raise UrdfError(f"{path}: joint {name!r} has type {jtype!r}; valid types are: {', '.join(JOINT_TYPES)}")
    ends = {}
    for tag in ("parent", "child"):
        sub = element.find(tag)
        if sub is None or not sub.get("link"):
            raise UrdfError(f"{path}: joint {name!r} has no <{tag} link=...>; every joint names a parent and a child")
        ends[tag] = sub.get("link")
    origin = element.find("origin")
    xyz = _bounded(_floats(origin.get("xyz") if origin is not None else None, 3, f"joint {name!r} origin xyz", path, (0.0,) * 3),
                   MAX_ORIGIN_M, f"joint {name!r} origin xyz [m]", path)
    rpy = _bounded(_floats(origin.get("rpy") if origin is not None else None, 3, f"joint {name!r} origin rpy", path, (0.0,) * 3),
                   MAX_LIMIT, f"joint {name!r} origin rpy [rad]", path)
    axis_el = element.find("axis")
    axis = _floats(axis_el.get("xyz") if axis_el is not None else None, 3, f"joint {name!r} axis", path, (1.0, 0.0, 0.0))
    norm = math.sqrt(sum(a * a for a in axis))
    if jtype in MOVABLE_JOINT_TYPES and norm < 1e-9:
        raise UrdfError(f"{path}: joint {name!r} has a zero axis {axis}; the axis must be a non-zero vector")
    if norm >= 1e-9:
        axis = tuple(a / norm for a in axis)
    limit = element.find("limit")
    lower = _number(limit, "lower", f"joint {name!r} lower limit", path)
    upper = _number(limit, "upper", f"joint {name!r} upper limit", path)
    numbers = {"limit": ("effort", "velocity"), "dynamics": ("damping", "friction"), "mimic": ("multiplier", "offset")}
    for tag, attrs in numbers.items():
        for attr in attrs:
            _number(element.find(tag), attr, f"joint {name!r} {tag} {attr}", path)
    if jtype in ("revolute", "prismatic"):
        if limit is None:
            raise UrdfError(
                f"{path}: {jtype} joint {name!r} has no <limit>; revolute and prismatic joints need "
                "<limit lower=... upper=...> (use type='continuous' for an unlimited revolute joint)"
            )
        lower = 0.0 if lower is None else lower  # URDF defaults
        upper = 0.0 if upper is None else upper
        _bounded((lower, upper), MAX_LIMIT, f"joint {name!r} limits (lower, upper)", path)
        if lower > upper:
            raise UrdfError(
                f"{path}: joint {name!r} has lower limit {lower} above upper limit {upper} "
                "(a missing lower or upper limit is 0)"
            )
    mimic_el = element.find("mimic")
    mimic = mimic_el.get("joint") if mimic_el is not None else None
    if mimic_el is not None and not mimic:
        raise UrdfError(f"{path}: joint {name!r} has a <mimic> without joint=...; it must name the joint it follows")
    return UrdfJoint(name, jtype, ends["parent"], ends["child"], xyz, rpy, axis, lower, upper, mimic)  # type: ignore[arg-type]


# Parsed URDFs by (resolved path, SHA-256 of the bytes): making an environment reads one URDF from
# the robot, the scene and the kinematics, and parses it once. The content hash keeps an edited
# file from being served stale; entries are immutable (UrdfModel) or copied out (the XML tree).
_PARSED: OrderedDict[tuple[str, str], tuple[UrdfModel, ET.Element]] = OrderedDict()
_PARSED_MAX = 32
_PARSED_LOCK = threading.Lock()


def load_urdf(path: str | os.PathLike[str]) -> UrdfModel:
    """Read and validate a URDF file (parsed once per file content; later calls reuse the parse).

    Args:
        path: the ``.urdf`` file.

    Returns:
        The validated model.

    Raises:
        UrdfError: the file is missing, unreadable, not XML, not a ``<robot>``, an unexpanded
            xacro file, holds a malformed number or geometry, or its tree is broken (duplicate
            names, unknown links, a link with two parents, a cycle, links not connected to the
            root, no links).
    """
    return _parsed(_existing_file(path))[0]


def load_urdf_tree(path: str | os.PathLike[str]) -> tuple[UrdfModel, ET.Element]:
    """:func:`load_urdf` and the file's XML tree, a private copy the caller may rewrite.

    The scene rewrites the URDF for MuJoCo from this tree instead of parsing the file again.

    Raises:
        UrdfError, ChainError, MeshError: as :func:`load_urdf`.
    """
    model, root = _parsed(_existing_file(path))
    return model, copy.deepcopy(root)


def _existing_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path to an existing file, or the UrdfError that says why it is not one."""
    if not isinstance(path, (str, os.PathLike)) or not str(os.fspath(path)).strip():  # Path(None) is a TypeError, Path("") the cwd
        raise UrdfError(f"the URDF path must be a file path (str or pathlib.Path) to a .urdf file, got {path!r}")
    path = Path(path).expanduser()
    try:
        is_dir = path.is_dir()
    except OSError as exc:  # ENAMETOOLONG and kin: a path the OS cannot even look up
        raise UrdfError(f"URDF path {str(path)[:80]}… cannot be used ({exc.strerror}); each name in a path may be at most "
                        f"{_name_max(Path.cwd())} bytes here") from None
    if is_dir:
        raise UrdfError(f"{path} is a folder, not a URDF file (give the path to the .urdf file)")
    if not path.is_file():
        raise UrdfError(f"URDF file not found: {path} (give the path to an existing .urdf file)")
    return path


def _parsed(path: Path) -> tuple[UrdfModel, ET.Element]:
    """The validated model and XML root of an existing file, parsed once per (resolved path, content)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UrdfError(f"cannot read URDF file {path}: {exc.strerror or exc}") from None
    key = (str(path.resolve()), hashlib.sha256(data).hexdigest())
    with _PARSED_LOCK:
        hit = _PARSED.get(key)
        if hit is not None:
            _PARSED.move_to_end(key)
    if hit is None:
        root = _parse_xml(data, path)
        hit = (_validate(root, path), root)
        with _PARSED_LOCK:
            _PARSED[key] = hit
            while len(_PARSED) > _PARSED_MAX:
                _PARSED.popitem(last=False)
    model, root = hit
    return (model if model.path == path else dataclasses.replace(model, path=path)), root


def _parse_xml(data: bytes, path: Path) -> ET.Element:
    """The one place a URDF's XML is parsed (the tests count calls to it)."""
    try:
        return ET.parse(io.BytesIO(data)).getroot()
    except (ET.ParseError, LookupError, ValueError) as exc:  # LookupError, ValueError: a bad encoding declaration
        raise UrdfError(f"{path} is not valid XML ({exc}); a URDF is an XML file whose root element is <robot>") from None


def _validate(root: ET.Element, path: Path) -> UrdfModel:
    """The checks of :func:`load_urdf` on a parsed XML root."""
    if root.tag != "robot":
        raise UrdfError(f"{path}: the root element is <{root.tag}>, a URDF's root element must be <robot>")
    if any(str(element.tag).startswith("{") and "xacro" in str(element.tag) for element in root.iter()):
        raise UrdfError(
            f"{path} is a xacro file (it holds xacro: elements); expand it to a URDF first: xacro {path.name} > robot.urdf"
        )
    links: list[str] = []
    for element in root.findall("link"):
        name = element.get("name")
        if not name:
            raise UrdfError(f"{path}: a <link> has no name attribute")
        if name in links:
            raise UrdfError(f"{path}: link name {name!r} is used twice; link names must be unique")
        _check_link(element, path)
        links.append(name)
    if not links:
        raise UrdfError(f"{path}: the robot has no <link>; a URDF needs at least one link")
    for color in root.findall(".//material/color"):
        _floats(color.get("rgba"), 4, "material color rgba", path, ())
    joints = tuple(_parse_joint(j, path) for j in root.findall("joint"))
    known = set(links)
    seen_joints: set[str] = set()
    parent_of: dict[str, str] = {}
    for joint in joints:
        if joint.name in seen_joints:
            raise UrdfError(f"{path}: joint name {joint.name!r} is used twice; joint names must be unique")
        seen_joints.add(joint.name)
        for role, link in (("parent", joint.parent), ("child", joint.child)):
            if link not in known:
                raise UrdfError(
                    f"{path}: joint {joint.name!r} names {role} link {link!r}, which does not exist; "
                    f"links are: {', '.join(links)}"
                )
        if joint.child in parent_of:
            raise UrdfError(
                f"{path}: link {joint.child!r} is the child of two joints ({parent_of[joint.child]!r} and "
                f"{joint.name!r}); a URDF must be a tree"
            )
        parent_of[joint.child] = joint.name
    roots = [link for link in links if link not in parent_of]
    if len(roots) != 1:
        if not roots:
            raise UrdfError(f"{path}: every link is some joint's child, so the joints form a cycle; a URDF must be a tree")
        raise UrdfError(
            f"{path}: links {', '.join(roots[1:])} are not connected to the root link {roots[0]!r}; "
            "every link but the root must be the child of a joint"
        )
    # Every link must reach the root (catches cycles that leave the root alone).
    parent_link = {j.child: j.parent for j in joints}
    for link in links:
        seen = {link}
        while link in parent_link:
            link = parent_link[link]
            if link in seen:
                raise UrdfError(f"{path}: the joints around link {link!r} form a cycle; a URDF must be a tree")
            seen.add(link)
    for joint in joints:
        if joint.mimic is not None and joint.mimic not in seen_joints:
            raise UrdfError(f"{path}: joint {joint.name!r} mimics {joint.mimic!r}, which is not a joint of this URDF")
    meshes = tuple(m.get("filename", "") for m in root.iter("mesh"))
    return UrdfModel(path, root.get("name", path.stem), tuple(links), joints, roots[0], meshes)


def _package_candidates(package: str, urdf_dir: Path) -> list[Path]:
    out = []
    for ancestor in [urdf_dir, *urdf_dir.parents]:
        if ancestor.name == package:
            out.append(ancestor)
        out.append(ancestor / package)
    for entry in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
        if entry:
            out.extend([Path(entry) / package, Path(entry)] if Path(entry).name == package else [Path(entry) / package])
    return out


def _is_file(candidate: Path, uri: str, urdf_path: Path) -> bool:
    """Whether ``candidate`` is a file; a path the OS refuses to look up (a name too long, …) is a MeshError."""
    try:
        return candidate.is_file()
    except OSError as exc:  # ENAMETOOLONG and kin: the name itself is unusable, not merely missing
        raise MeshError(f"{urdf_path}: mesh {uri!r} names a path the operating system cannot use ({exc.strerror}); "
                        f"each name in a path may be at most {_name_max(urdf_path.parent)} bytes here") from None


def _name_max(folder: Path) -> int:
    """The longest file name [bytes] the file system of ``folder`` allows (255 where it cannot say)."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def resolve_mesh_uri(uri: str, urdf_path: Path, package_dirs: dict[str, Path] | None = None) -> Path:
    """The file a URDF mesh filename refers to.

    Args:
        uri: ``package://PKG/rel/path``, ``file:///abs/path``, or a path relative to the URDF.
        urdf_path: the URDF that names the mesh.
        package_dirs: explicit package name → folder mapping, tried first.

    Returns:
        An existing file.

    Raises:
        MeshError: the URI is empty, names a path the OS cannot use (too long), or no candidate file exists.
    """
    if not uri:
        raise MeshError(f"{urdf_path}: a <mesh> has no filename attribute")
    urdf_dir = urdf_path.parent
    if uri.startswith("package://"):
        rest = uri[len("package://"):].lstrip("/")
        package, _, rel = rest.partition("/")
        bases = ([package_dirs[package]] if package_dirs and package in package_dirs else []) + _package_candidates(package, urdf_dir)
        tried = []
        for base in bases:
            candidate = base / rel
            if _is_file(candidate, uri, urdf_path):
                return candidate
            tried.append(str(candidate))
        raise MeshError(
            f"{urdf_path}: mesh {uri!r} not found; looked for package {package!r} at: {', '.join(tried[:6])}"
            " (install the package that provides it, or set ROS_PACKAGE_PATH)"
        )
    candidate = Path(uri[len("file://"):] if uri.startswith("file://") else uri).expanduser()
    if not candidate.is_absolute():
        candidate = urdf_dir / candidate
    if not _is_file(candidate, uri, urdf_path):
        raise MeshError(f"{urdf_path}: mesh {uri!r} not found (looked at {candidate})")
    return candidate

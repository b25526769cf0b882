"""A corpus of malformed URDF inputs: each must fail with a clear :class:`~hik_sim.errors.HikError`.

Every case is data: an id, the URDF's text or bytes (``None``: no file is written), the chain's
base and end-effector links, the exact exception class expected, and a piece of text its message
must contain (the thing that is wrong, or the valid choices). Some cases also write extra files
(meshes, folders) next to the URDF or pass ``home=``. The URDF is written into ``tmp_path`` and
given to :func:`~hik_sim.robots.robot_from_urdf`; scene cases (a mesh that exists but cannot be
read) build the robot first and expect :func:`~hik_sim.sim.build_scene` to fail.

Each test runs under a hard time limit (a malformed file must never hang a parser), and the
exception must be raised by hik_sim itself, never escape from inside a library. Valid controls
run the same functions on good input, so the corpus is not vacuous.
"""

from __future__ import annotations

import faulthandler
import math
import signal
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import hik_sim
from hik_sim.errors import ChainError, HikError, MeshError, UrdfError
from hik_sim.robots import robot_from_urdf
from hik_sim.sim import build_scene

TIME_LIMIT_S = 20

# ---------------------------------------------------------------------------------------------
# Building blocks: a valid two-joint arm, base → j1 → l1 → j2 → tool, and pieces to break it.

INERTIAL = '<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>'
LIMIT = '<limit lower="-1" upper="1" effort="10" velocity="1"/>'
BOX = '<box size="0.1 0.1 0.1"/>'


def link(name: str, body: str = INERTIAL) -> str:
    """A ``<link>`` element."""
    return f'<link name="{name}">{body}</link>'


def joint(name: str, parent: str, child: str, type: str = "revolute", body: str | None = None) -> str:  # noqa: A002
    """A ``<joint>`` element; ``body`` replaces its default origin, axis and limit."""
    if body is None:
        body = f'<origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>{LIMIT}'
    return f'<joint name="{name}" type="{type}"><parent link="{parent}"/><child link="{child}"/>{body}</joint>'


def robot_xml(*elements: str) -> str:
    """A ``<robot>`` holding ``elements``."""
    return '<?xml version="1.0"?>\n<robot name="arm">\n  ' + "\n  ".join(elements) + "\n</robot>\n"


def visual(geometry: str, extra: str = "") -> str:
    """A link body: inertia plus one ``<visual>`` with ``geometry`` inside ``<geometry>``."""
    return f"{INERTIAL}<visual>{extra}<geometry>{geometry}</geometry></visual>"


def mesh(filename: str) -> str:
    """A link body whose visual is the mesh ``filename``."""
    return visual(f'<mesh filename="{filename}"/>')


LINKS = (link("base", ""), link("l1"), link("tool"))
J1 = joint("j1", "base", "l1", body=f'<origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>{LIMIT}')
J2 = joint("j2", "l1", "tool", body=f'<origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>{LIMIT}')
ARM = robot_xml(*LINKS, J1, J2)


def arm_with_j2(body: str, type: str = "revolute") -> str:  # noqa: A002
    """The arm with joint ``j2`` given another type and body (origin, axis, limit, ...)."""
    return robot_xml(*LINKS, J1, joint("j2", "l1", "tool", type, body))


def arm_with_l1(body: str) -> str:
    """The arm with link ``l1`` given another body (inertial, visual, collision)."""
    return robot_xml(link("base", ""), link("l1", body), link("tool"), J1, J2)


def arm_with_finger(extra: str) -> str:
    """The arm plus a finger joint ``jf`` after the tool, with ``extra`` (a ``<mimic>``) inside it."""
    return robot_xml(*LINKS, link("finger"), J1, J2, joint("jf", "tool", "finger", body=f"{LIMIT}{extra}"))


# Meshes, written in the test's folder.
TETRA_OBJ = "v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nv 0 0 0.1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"
TRIANGLE_OBJ = "v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nf 1 2 3\n"


def ascii_stl(*faces: tuple[str, str, str]) -> str:
    """An ASCII STL file of triangles given as three "x y z" vertices each."""
    facets = "".join("facet normal 0 0 0\nouter loop\n" + "".join(f"vertex {v}\n" for v in face) + "endloop\nendfacet\n"
                     for face in faces)
    return f"solid t\n{facets}endsolid t\n"


TRIANGLE_ASCII_STL = ascii_stl(("0 0 0", "0.1 0 0", "0 0.1 0"))
TETRA_ASCII_STL = ascii_stl(("0 0 0", "0 0.1 0", "0.1 0 0"), ("0 0 0", "0.1 0 0", "0 0 0.1"),
                            ("0 0 0", "0 0 0.1", "0 0.1 0"), ("0.1 0 0", "0 0.1 0", "0 0 0.1"))
EMPTY_BINARY_STL = b"\0" * 80 + (0).to_bytes(4, "little")  # a valid header that promises 0 triangles
GARBAGE = bytes(range(256)) * 8
BROKEN_DAE = '<?xml version="1.0"?><COLLADA version="1.4.1"><library_geometries>'  # cut off
EMPTY_DAE = '<?xml version="1.0"?><COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1"></COLLADA>'

BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE robot [\n  <!ENTITY a0 "ha">\n'
    + "".join(f'  <!ENTITY a{i} "{f"&a{i - 1};" * 10}">\n' for i in range(1, 10))
    + ']>\n<robot name="&a9;"><link name="base"/></robot>\n'
)
XACRO = (
    '<?xml version="1.0"?>\n<robot name="arm" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
    '  <xacro:property name="len" value="0.3"/>\n  <link name="base"/>\n  <link name="tool"/>\n'
    '  <joint name="j1" type="revolute"><parent link="base"/><child link="tool"/><origin xyz="0 0 ${len}"/>'
    f"{LIMIT}</joint>\n</robot>\n"
)


# ---------------------------------------------------------------------------------------------
# The corpus.


class Case(NamedTuple):
    """One malformed input and the error it must produce.

    Attributes:
        id: readable test id.
        urdf: the URDF's text or bytes, or ``None`` to write no URDF file.
        base: the chain's base link.
        ee: the chain's end-effector link.
        error: the exact exception class expected.
        message: text the message must contain.
        files: other files to write, relative path → text or bytes.
        home: ``home=`` for :func:`robot_from_urdf`.
        scene: the error comes from :func:`build_scene`; :func:`robot_from_urdf` must succeed.
    """

    id: str
    urdf: str | bytes | None
    base: str
    ee: str
    error: type[HikError]
    message: str
    files: dict[str, str | bytes] = {}
    home: Any = None
    scene: bool = False


def long_chain(joints: int) -> str:
    """An arm of ``joints`` revolute joints in a row, base → l1 → … → tool."""
    names = ["base", *(f"l{i}" for i in range(1, joints)), "tool"]
    return robot_xml(*(link(n) for n in names), *(joint(f"j{i + 1}", names[i], names[i + 1]) for i in range(joints)))


CASES = [
    # Sizes that overflow forward kinematics or exhaust memory.
    Case("joint-origin-of-1e308", arm_with_j2(f'<origin xyz="0 0 1e308"/><axis xyz="0 1 0"/>{LIMIT}'),
         "base", "tool", UrdfError, "must lie within ±100"),
    Case("link-origin-of-1e300", arm_with_l1(f'{INERTIAL}<visual><origin xyz="1e300 0 0"/><geometry>{BOX}</geometry></visual>'),
         "base", "tool", UrdfError, "must lie within ±100"),
    Case("joint-limit-of-1e308", arm_with_j2('<origin xyz="0 0 0.1"/><axis xyz="0 1 0"/><limit lower="-1e308" upper="1" effort="1" velocity="1"/>'),
         "base", "tool", UrdfError, "must lie within ±1000"),
    Case("a-3000-joint-chain", long_chain(3000),
         "base", "tool", ChainError, "at most 128"),
    # The file itself.
    Case("missing-file", None,
         "base", "tool", UrdfError, "URDF file not found"),
    Case("path-is-a-folder", None,
         "base", "tool", UrdfError, "is a folder", files={"robot.urdf/readme.txt": "x"}),
    Case("empty-file", b"",
         "base", "tool", UrdfError, "is not valid XML"),
    Case("whitespace-only", "  \n\t\n",
         "base", "tool", UrdfError, "is not valid XML"),
    Case("not-xml", "robot: {links: [base, tool]}\n",
         "base", "tool", UrdfError, "root element is <robot>"),
    Case("binary-garbage", GARBAGE,
         "base", "tool", UrdfError, "is not valid XML"),
    Case("truncated-xml", ARM[: len(ARM) // 2],
         "base", "tool", UrdfError, "is not valid XML"),
    Case("unknown-encoding", '<?xml version="1.0" encoding="klingon"?><robot/>',
         "base", "tool", UrdfError, "unknown encoding"),
    Case("multibyte-encoding", '<?xml version="1.0" encoding="shift_jis"?><robot/>',
         "base", "tool", UrdfError, "is not valid XML"),
    Case("billion-laughs-entities", BILLION_LAUGHS,
         "base", "tool", UrdfError, "is not valid XML"),
    Case("root-not-robot", '<mujoco model="arm"><worldbody/></mujoco>',
         "base", "tool", UrdfError, "the root element is <mujoco>, a URDF's root element must be <robot>"),
    Case("namespaced-root", '<robot xmlns="http://example.com/urdf" name="arm"><link name="base"/></robot>',
         "base", "tool", UrdfError, "must be <robot>"),
    Case("unexpanded-xacro", XACRO,
         "base", "tool", UrdfError, "expand it to a URDF first"),
    # The tree of links and joints.
    Case("no-links", '<robot name="arm"/>',
         "base", "tool", UrdfError, "the robot has no <link>"),
    Case("link-without-name", robot_xml(*LINKS, "<link/>", J1, J2),
         "base", "tool", UrdfError, "a <link> has no name"),
    Case("duplicate-link-names", robot_xml(*LINKS, link("l1"), J1, J2),
         "base", "tool", UrdfError, "link name 'l1' is used twice"),
    Case("joint-without-name", robot_xml(*LINKS, J1, J2.replace(' name="j2"', "")),
         "base", "tool", UrdfError, "a <joint> has no name"),
    Case("duplicate-joint-names", robot_xml(*LINKS, link("l2"), J1, J2, joint("j2", "tool", "l2")),
         "base", "tool", UrdfError, "joint name 'j2' is used twice"),
    Case("invalid-joint-type", arm_with_j2(LIMIT, type="hinge"),
         "base", "tool", UrdfError, "type 'hinge'; valid types are: revolute, continuous, prismatic, fixed, floating, planar"),
    Case("joint-without-type", robot_xml(*LINKS, J1, J2.replace(' type="revolute"', "")),
         "base", "tool", UrdfError, "type None; valid types are"),
    Case("joint-without-parent", robot_xml(*LINKS, J1, J2.replace('<parent link="l1"/>', "")),
         "base", "tool", UrdfError, "joint 'j2' has no <parent link=...>"),
    Case("joint-without-child", robot_xml(*LINKS, J1, J2.replace('<child link="tool"/>', "")),
         "base", "tool", UrdfError, "joint 'j2' has no <child link=...>"),
    Case("unknown-child-link", robot_xml(*LINKS, J1, J2.replace('child link="tool"', 'child link="hand"')),
         "base", "tool", UrdfError, "child link 'hand', which does not exist; links are: base, l1, tool"),
    Case("unknown-parent-link", robot_xml(*LINKS, J1, J2.replace('parent link="l1"', 'parent link="arm"')),
         "base", "tool", UrdfError, "parent link 'arm', which does not exist; links are: base, l1, tool"),
    Case("link-not-connected-two-roots", robot_xml(*LINKS, link("loose"), J1, J2),
         "base", "tool", UrdfError, "links loose are not connected to the root link 'base'"),
    Case("link-with-two-parents", robot_xml(*LINKS, J1, J2, joint("j3", "base", "tool")),
         "base", "tool", UrdfError, "link 'tool' is the child of two joints ('j2' and 'j3')"),
    Case("cycle-through-every-link", robot_xml(*LINKS, J1, J2, joint("j3", "tool", "base")),
         "base", "tool", UrdfError, "form a cycle"),
    Case("cycle-beside-the-root", robot_xml(*LINKS, link("a"), link("b"), J1, J2, joint("ja", "b", "a"), joint("jb", "a", "b")),
         "base", "tool", UrdfError, "form a cycle"),
    Case("joint-is-its-own-parent", robot_xml(*LINKS, link("a"), J1, J2, joint("ja", "a", "a")),
         "base", "tool", UrdfError, "form a cycle"),
    # Joint numbers.
    Case("revolute-without-limit", arm_with_j2('<axis xyz="0 1 0"/>'),
         "base", "tool", UrdfError, "revolute joint 'j2' has no <limit>"),
    Case("prismatic-without-limit", arm_with_j2('<axis xyz="0 0 1"/>', type="prismatic"),
         "base", "tool", UrdfError, "prismatic joint 'j2' has no <limit>"),
    Case("lower-above-upper", arm_with_j2('<limit lower="1" upper="-1"/>'),
         "base", "tool", UrdfError, "lower limit 1.0 above upper limit -1.0"),
    Case("only-a-negative-upper-limit", arm_with_j2('<limit upper="-0.5"/>'),
         "base", "tool", UrdfError, "a missing lower or upper limit is 0"),
    Case("non-numeric-limit", arm_with_j2('<limit lower="-pi" upper="pi"/>'),
         "base", "tool", UrdfError, "joint 'j2' lower limit must be a finite number, got '-pi'"),
    Case("infinite-limit", arm_with_j2('<limit lower="-inf" upper="1"/>'),
         "base", "tool", UrdfError, "lower limit must be a finite number"),
    Case("non-numeric-origin-xyz", arm_with_j2(f'<origin xyz="0 0 l1"/>{LIMIT}'),
         "base", "tool", UrdfError, "joint 'j2' origin xyz must be 3 finite numbers, got '0 0 l1'"),
    Case("comma-separated-origin-xyz", arm_with_j2(f'<origin xyz="0,0,0.3"/>{LIMIT}'),
         "base", "tool", UrdfError, "origin xyz must be 3 finite numbers"),
    Case("nan-in-origin-xyz", arm_with_j2(f'<origin xyz="0 nan 0.3"/>{LIMIT}'),
         "base", "tool", UrdfError, "origin xyz must be 3 finite numbers, got '0 nan 0.3'"),
    Case("inf-in-origin-rpy", arm_with_j2(f'<origin rpy="0 inf 0"/>{LIMIT}'),
         "base", "tool", UrdfError, "origin rpy must be 3 finite numbers"),
    Case("two-values-in-origin-rpy", arm_with_j2(f'<origin rpy="0 1.57"/>{LIMIT}'),
         "base", "tool", UrdfError, "joint 'j2' origin rpy must be 3 finite numbers, got '0 1.57'"),
    Case("four-values-in-origin-xyz", arm_with_j2(f'<origin xyz="0 0 0.3 1"/>{LIMIT}'),
         "base", "tool", UrdfError, "origin xyz must be 3 finite numbers"),
    Case("zero-joint-axis", arm_with_j2(f'<axis xyz="0 0 0"/>{LIMIT}'),
         "base", "tool", UrdfError, "joint 'j2' has a zero axis"),
    Case("nan-joint-axis", arm_with_j2(f'<axis xyz="nan 0 1"/>{LIMIT}'),
         "base", "tool", UrdfError, "joint 'j2' axis must be 3 finite numbers"),
    Case("non-numeric-effort", arm_with_j2('<limit lower="-1" upper="1" effort="strong" velocity="1"/>'),
         "base", "tool", UrdfError, "joint 'j2' limit effort must be a finite number, got 'strong'"),
    Case("non-numeric-damping", arm_with_j2(f'{LIMIT}<dynamics damping="some"/>'),
         "base", "tool", UrdfError, "joint 'j2' dynamics damping must be a finite number"),
    Case("mimic-without-joint", arm_with_finger("<mimic/>"),
         "base", "tool", UrdfError, "joint 'jf' has a <mimic> without joint=..."),
    Case("mimic-of-unknown-joint", arm_with_finger('<mimic joint="j9"/>'),
         "base", "tool", UrdfError, "joint 'jf' mimics 'j9', which is not a joint"),
    Case("non-numeric-mimic-multiplier", arm_with_finger('<mimic joint="j2" multiplier="-x"/>'),
         "base", "tool", UrdfError, "joint 'jf' mimic multiplier must be a finite number"),
    # Link contents that MuJoCo reads.
    Case("two-values-in-visual-origin", arm_with_l1(visual(BOX, '<origin xyz="0 0.1"/>')),
         "base", "tool", UrdfError, "link 'l1' visual origin xyz must be 3 finite numbers"),
    Case("non-numeric-inertial-origin", arm_with_l1('<inertial><origin xyz="a b c"/><mass value="1"/></inertial>'),
         "base", "tool", UrdfError, "link 'l1' inertial origin xyz must be 3 finite numbers"),
    Case("non-numeric-mass", arm_with_l1('<inertial><mass value="heavy"/></inertial>'),
         "base", "tool", UrdfError, "link 'l1' mass must be a finite number, got 'heavy'"),
    Case("nan-inertia", arm_with_l1('<inertial><mass value="1"/><inertia ixx="nan" iyy="1" izz="1"/></inertial>'),
         "base", "tool", UrdfError, "link 'l1' inertia ixx must be a finite number"),
    Case("visual-without-geometry", arm_with_l1(f"{INERTIAL}<visual/>"),
         "base", "tool", UrdfError, "link 'l1' has a <visual> with no <geometry>"),
    Case("empty-geometry", arm_with_l1(visual("")),
         "base", "tool", UrdfError, "an empty <geometry>; its <geometry> must hold one of: <box>, <cylinder>, <capsule>, "
         "<sphere>, <mesh>"),
    Case("unknown-geometry-shape", arm_with_l1(visual('<cone radius="0.1" length="0.2"/>')),
         "base", "tool", UrdfError, "a <cone>; its <geometry> must hold one of: <box>"),
    Case("box-with-two-sizes", arm_with_l1(visual('<box size="0.1 0.1"/>')),
         "base", "tool", UrdfError, "link 'l1' visual box size must be 3 finite numbers"),
    Case("negative-box-size", arm_with_l1(visual('<box size="-0.1 0.1 0.1"/>')),
         "base", "tool", UrdfError, "box size must be positive"),
    Case("zero-sphere-radius", arm_with_l1(visual('<sphere radius="0"/>')),
         "base", "tool", UrdfError, "sphere radius must be positive"),
    Case("cylinder-without-length", arm_with_l1(visual('<cylinder radius="0.05"/>')),
         "base", "tool", UrdfError, "cylinder length is missing; <cylinder> needs radius and length"),
    Case("bad-mesh-scale", arm_with_l1(visual('<mesh filename="m.obj" scale="0.001"/>')),
         "base", "tool", UrdfError, "mesh scale must be 3 finite numbers", files={"m.obj": TETRA_OBJ}),
    Case("zero-mesh-scale", arm_with_l1(visual('<mesh filename="m.obj" scale="0 1 1"/>')),
         "base", "tool", UrdfError, "mesh scale must be 3 non-zero numbers", files={"m.obj": TETRA_OBJ}),
    Case("non-numeric-material-color", arm_with_l1(visual(BOX, '<material name="m"><color rgba="red"/></material>')),
         "base", "tool", UrdfError, "material color rgba must be 4 finite numbers, got 'red'"),
    # The chain from base to end-effector.
    Case("one-link-no-joints", robot_xml(link("base")),
         "base", "base", ChainError, "base link and end-effector link are both 'base'"),
    Case("only-fixed-joints", robot_xml(*LINKS, joint("j1", "base", "l1", "fixed", ""), joint("j2", "l1", "tool", "fixed", "")),
         "base", "tool", ChainError, "no movable joint between 'base' and 'tool'"),
    Case("unknown-base-link", ARM,
         "world", "tool", ChainError, "base link 'world' is not a link of robot.urdf; links are: base, l1, tool"),
    Case("unknown-ee-link", ARM,
         "base", "gripper", ChainError, "end-effector link 'gripper' is not a link of robot.urdf; links are: base, l1, tool"),
    Case("ee-equals-base", ARM,
         "l1", "l1", ChainError, "base link and end-effector link are both 'l1'"),
    Case("base-not-an-ancestor", robot_xml(*LINKS, link("other"), J1, J2, joint("j3", "base", "other")),
         "other", "tool", ChainError, "base link 'other' is not an ancestor of end-effector link 'tool' in robot.urdf; "
         "valid bases for that end-effector are: base, l1"),
    Case("ee-is-the-root", ARM,
         "tool", "base", ChainError, "valid bases for that end-effector are: none ('base' is the root link)"),
    Case("floating-joint-in-chain", arm_with_j2("", type="floating"),
         "base", "tool", ChainError, "joint 'j2' between 'base' and 'tool' is floating; a chain may hold only revolute, "
         "continuous, prismatic and fixed joints"),
    Case("planar-joint-in-chain", arm_with_j2("", type="planar"),
         "base", "tool", ChainError, "is planar"),
    Case("mimic-joint-in-chain", arm_with_j2(f'{LIMIT}<mimic joint="j1"/>'),
         "base", "tool", ChainError, "joint 'j2' between 'base' and 'tool' mimics 'j1'; mimic joints inside the IK chain "
         "are not supported"),
    Case("empty-joint-range-in-chain", arm_with_j2('<limit lower="0.5" upper="0.5"/>'),
         "base", "tool", ChainError, "chain joint 'j2' has an empty range [0.5, 0.5]"),
    # home= through robot_from_urdf.
    Case("home-names-unknown-joint", ARM,
         "base", "tool", HikError, "home names unknown joints ['elbow']; movable joints are: j1, j2", home={"elbow": 0.0}),
    Case("home-names-fixed-joint", robot_xml(*LINKS, J1, joint("j2", "l1", "tool", "fixed", "")),
         "base", "tool", HikError, "home names unknown joints ['j2']; movable joints are: j1", home={"j2": 0.0}),
    Case("home-outside-chain-limits", ARM,
         "base", "tool", HikError, "home 2.0 of joint 'j2' is outside its limits [-1.0, 1.0]", home={"j2": 2.0}),
    Case("home-outside-held-joint-limits", ARM,
         "base", "l1", HikError, "home -3.0 of joint 'j2' is outside its limits [-1.0, 1.0]", home={"j2": -3.0}),
    Case("home-not-a-number", ARM,
         "base", "tool", HikError, "home value of joint 'j1' must be a number [rad or m], got 'up'", home={"j1": "up"}),
    Case("home-nan", ARM,
         "base", "tool", HikError, "home value of joint 'j1' must be finite, got nan", home={"j1": math.nan}),
    Case("home-not-a-mapping", ARM,
         "base", "tool", HikError, "home must map joint names to values", home=[0.0, 0.0]),
    # Meshes that cannot be found (robot_from_urdf checks them).
    Case("missing-mesh-file", arm_with_l1(mesh("meshes/l1.stl")),
         "base", "tool", MeshError, "mesh 'meshes/l1.stl' not found (looked at"),
    Case("missing-file-uri-mesh", arm_with_l1(mesh("file:///no/such/dir/l1.obj")),
         "base", "tool", MeshError, "mesh 'file:///no/such/dir/l1.obj' not found"),
    Case("unknown-package-mesh", arm_with_l1(mesh("package://no_such_hik_pkg/meshes/l1.stl")),
         "base", "tool", MeshError, "looked for package 'no_such_hik_pkg' at:"),
    Case("mesh-without-filename", arm_with_l1(visual("<mesh/>")),
         "base", "tool", MeshError, "a <mesh> has no filename attribute"),
    Case("mesh-path-is-a-folder", arm_with_l1(mesh("meshes")),
         "base", "tool", MeshError, "mesh 'meshes' not found", files={"meshes/readme.txt": "x"}),
    Case("mesh-name-too-long", arm_with_l1(mesh("l" * 300 + ".stl")),
         "base", "tool", MeshError, "names a path the operating system cannot use (File name too long); each name in a path "
         "may be at most"),
    Case("package-mesh-name-too-long", arm_with_l1(mesh("package://hik_test_pkg/" + "l" * 300 + ".stl")),
         "base", "tool", MeshError, "names a path the operating system cannot use", files={"hik_test_pkg/x.txt": "x"}),
    # Meshes that exist but cannot be read (build_scene converts them).
    Case("garbage-stl", arm_with_l1(mesh("l1.stl")),
         "base", "tool", MeshError, "l1.stl holds no triangles", files={"l1.stl": GARBAGE}, scene=True),
    Case("empty-binary-stl", arm_with_l1(mesh("l1.stl")),
         "base", "tool", MeshError, "l1.stl holds no triangles", files={"l1.stl": EMPTY_BINARY_STL}, scene=True),
    Case("single-triangle-ascii-stl", arm_with_l1(mesh("l1.stl")),
         "base", "tool", MeshError, "l1.stl holds 3 vertices; MuJoCo needs at least 4", files={"l1.stl": TRIANGLE_ASCII_STL},
         scene=True),
    Case("garbage-obj", arm_with_l1(mesh("l1.obj")),
         "base", "tool", MeshError, "l1.obj holds 0 vertices; MuJoCo needs at least 4 (is it an OBJ file?)",
         files={"l1.obj": GARBAGE}, scene=True),
    Case("single-triangle-obj", arm_with_l1(mesh("l1.obj")),
         "base", "tool", MeshError, "l1.obj holds 3 vertices; MuJoCo needs at least 4", files={"l1.obj": TRIANGLE_OBJ},
         scene=True),
    Case("unreadable-dae", arm_with_l1(mesh("l1.dae")),
         "base", "tool", MeshError, "cannot read mesh", files={"l1.dae": BROKEN_DAE}, scene=True),
    Case("dae-without-geometry", arm_with_l1(mesh("l1.dae")),
         "base", "tool", MeshError, "cannot read mesh", files={"l1.dae": EMPTY_DAE}, scene=True),
    Case("image-named-as-mesh", arm_with_l1(mesh("l1.png")),
         "base", "tool", MeshError, "not supported", files={"l1.png": b"\x89PNG\r\n\x1a\n" + bytes(64)}, scene=True),
    Case("garbage-msh", arm_with_l1(mesh("l1.msh")),
         "base", "tool", HikError, "MSH file", files={"l1.msh": b"not a mesh"}, scene=True),
]


# ---------------------------------------------------------------------------------------------
# Fixtures and the functions that build bad input.


@pytest.fixture(autouse=True)
def hard_time_limit():
    """Fail a test that runs longer than TIME_LIMIT_S; abort the run if it hangs inside C code."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        pytest.fail(f"took longer than {TIME_LIMIT_S} s: malformed input must fail fast, never hang", pytrace=False)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(TIME_LIMIT_S)
    faulthandler.dump_traceback_later(TIME_LIMIT_S + 10, exit=True)  # the alarm cannot interrupt C code
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Converted meshes go to tmp_path; no ROS packages leak in from the environment."""
    monkeypatch.setenv("HIK_SIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)


def write_case(folder: Path, urdf: str | bytes | None, files: dict[str, str | bytes]) -> Path:
    """Write ``files`` and the URDF (unless ``None``) into ``folder``; the URDF's path."""
    for rel, content in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    path = folder / "robot.urdf"
    if urdf is not None:
        path.write_bytes(urdf.encode() if isinstance(urdf, str) else urdf)
    return path


def raised_inside_hik_sim(excinfo: pytest.ExceptionInfo[BaseException]) -> bool:
    """Whether the exception was raised by hik_sim's own code, not from inside a library."""
    package = Path(hik_sim.__file__).resolve().parent
    return package in Path(str(excinfo.traceback[-1].path)).resolve().parents


# ---------------------------------------------------------------------------------------------
# Tests.


def test_corpus_is_large_and_ids_are_unique() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) >= 24
    assert len(set(ids)) == len(ids), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_malformed_input_raises_clear_hik_error(case: Case, tmp_path: Path) -> None:
    path = write_case(tmp_path, case.urdf, case.files)
    with pytest.raises(HikError) as excinfo:
        if case.scene:
            built = robot_from_urdf(path, case.base, case.ee, home=case.home)  # the URDF itself is fine
            build_scene(built)
        else:
            robot_from_urdf(path, case.base, case.ee, home=case.home)
    error = excinfo.value
    assert type(error) is case.error, f"expected {case.error.__name__}, got {type(error).__name__}: {error}"
    assert case.message in str(error), f"message lacks {case.message!r}: {error}"
    assert raised_inside_hik_sim(excinfo), f"raised from {excinfo.traceback[-1].path}, not by hik_sim"


# Valid controls: the same functions succeed on good input.


def test_valid_arm_loads_and_its_scene_compiles(tmp_path: Path) -> None:
    spec = robot_from_urdf(write_case(tmp_path, ARM, {}), "base", "tool", home={"j2": 0.5})
    assert spec.joint_names == ("j1", "j2")
    assert (spec.lower, spec.upper, spec.home) == ((-1.0, -1.0), (1.0, 1.0), (0.0, 0.5))
    scene = build_scene(spec)
    assert scene.model.nu == 2
    assert [scene.model.actuator(i).name for i in range(scene.model.nu)] == ["j1", "j2"]


def test_valid_arm_with_meshes_builds(tmp_path: Path) -> None:
    """OBJ (read as is), ASCII STL (converted) and a package:// URI resolve and compile."""
    urdf = robot_xml(link("base", mesh("package://hik_test_pkg/meshes/base.obj")), link("l1", mesh("l1.stl")),
                 link("tool", visual('<sphere radius="0.02"/>')), J1, J2)
    files = {"hik_test_pkg/meshes/base.obj": TETRA_OBJ, "l1.stl": TETRA_ASCII_STL}
    scene = build_scene(robot_from_urdf(write_case(tmp_path, urdf, files), "base", "tool"))
    assert scene.model.nmesh == 2
    assert len(list((tmp_path / "cache" / "meshes").glob("l1-*.stl"))) == 1  # converted into tmp_path's cache


def test_a_long_but_legal_mesh_name_builds(tmp_path: Path) -> None:
    """A 250-character mesh name: the cache's name for it (stem + key) must stay within the OS's limit."""
    name = "l" * 246 + ".stl"
    urdf = robot_xml(link("base"), link("l1", mesh(name)), link("tool", visual('<sphere radius="0.02"/>')), J1, J2)
    scene = build_scene(robot_from_urdf(write_case(tmp_path, urdf, {name: TETRA_ASCII_STL}), "base", "tool"))
    assert scene.model.nmesh == 1


def test_valid_chain_below_the_root_holds_the_other_joint(tmp_path: Path) -> None:
    spec = robot_from_urdf(write_case(tmp_path, ARM, {}), "base", "l1", home={"j2": -0.25})
    assert spec.joint_names == ("j1",)
    assert spec.held_joints == {"j2": -0.25}


# Defects once found in the scene's build (hik_sim/sim/, the scene package), kept as regression tests.


def test_link_named_like_a_scene_body(tmp_path: Path) -> None:
    urdf = robot_xml(link("base", ""), link("l1"), link("target"), J1, J2.replace('"tool"', '"target"'))
    with pytest.raises(HikError, match="already has a body named 'target'.*rename it"):
        build_scene(robot_from_urdf(write_case(tmp_path, urdf, {}), "base", "target"))


def test_chain_whose_end_effector_does_not_move_gets_finite_cameras(tmp_path: Path) -> None:
    scene = build_scene(robot_from_urdf(write_case(tmp_path, ARM, {}), "l1", "tool"))  # tool sits on j2's axis
    assert all(math.isfinite(v) for v in scene.model.cam_quat.ravel())


def test_a_long_but_legal_chain_loads(tmp_path: Path) -> None:
    path = tmp_path / "snake.urdf"
    path.write_text(long_chain(40))
    assert len(robot_from_urdf(path, "base", "tool").joint_names) == 40

"""How a scene is built: the derivation steps, the same model as before the split, one URDF parse, two compiles."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import mujoco
import numpy as np
import pytest
from conftest import ALL_ROBOTS, USER_URDF, robot_by_id

import hik_sim.robots.urdf
from hik_sim.robots import robot_from_urdf
from hik_sim.sim import DERIVATION, build_scene, describe, mujoco_urdf
from hik_sim.sim import main as scene_main

# Fingerprints of the compiled scenes that the single module hik_sim/scene.py (three compiles) built
# before it was split into the scene package (now hik_sim/sim/). A failure means the scene changed: if the
# change is meant, print fingerprint(build_scene(robot).model) for each robot and update the table.
FINGERPRINTS = {
    "irb120": "a6ef238d41b57ab6",
    "panda": "3e855dcc5f3f0422",
    "talos": "d822256e0fd82b32",
    "romeo": "c42ed4c9d0c1106b",
    "icub": "b7a32eee0c190db7",
    "g1": "d5d4a531643b6f3b",
    "jvrc1": "0bfcad71f5829f1c",
    "user_arm": "5c6118dc86bdfa16",
}

FIELDS = ("qpos0", "jnt_range", "body_pos", "body_mass", "geom_size", "actuator_gainprm", "actuator_biasprm",
          "actuator_ctrlrange", "dof_armature", "cam_pos", "cam_quat", "key_qpos", "key_ctrl", "key_mpos", "key_mquat")


def fingerprint(model: mujoco.MjModel) -> str:
    """Sizes, element names and the main arrays of a compiled scene, hashed (values to 9 significant digits)."""
    digest = hashlib.sha256()
    sizes = (model.nq, model.nv, model.nu, model.nbody, model.njnt, model.ngeom, model.nmesh, model.ncam, model.nlight, model.nkey)
    digest.update(repr(sizes).encode())
    for kind, count in (("body", model.nbody), ("joint", model.njnt), ("geom", model.ngeom), ("actuator", model.nu),
                        ("camera", model.ncam), ("site", model.nsite)):
        digest.update(",".join(getattr(model, kind)(i).name for i in range(count)).encode())
    for name in FIELDS:
        values = np.asarray(getattr(model, name), dtype=float).ravel() + 0.0  # + 0.0: no -0
        digest.update(name.encode() + " ".join(f"{v:.9e}" for v in values).encode())
    return digest.hexdigest()[:16]


@pytest.mark.parametrize("name", ALL_ROBOTS)
def test_the_scene_is_the_model_built_before_the_split(name: str) -> None:
    assert fingerprint(build_scene(robot_by_id(name)).model) == FINGERPRINTS[name]


def test_the_derivation_is_a_numbered_list_of_documented_steps(capsys) -> None:  # noqa: ANN001
    names = [step.__name__ for step in DERIVATION]
    assert len(set(names)) == len(names) == len(describe().splitlines())
    for step in DERIVATION:
        assert step.__doc__ and step.__doc__.strip().splitlines()[0].endswith("."), step.__name__
    assert scene_main(["--derivation"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(" 1. ") and out[-1].startswith(f"{len(DERIVATION)}. ")
    assert "``" not in "\n".join(out)  # plain text, no reST markup


def _fresh_user_urdf(tmp_path: Path) -> Path:
    """The user arm copied to a new folder: a URDF no earlier test has parsed."""
    shutil.copytree(USER_URDF.parent.parent, tmp_path / "user_arm")
    return tmp_path / "user_arm" / "urdf" / USER_URDF.name


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every URDF XML parse from here on, as the list of parsed paths."""
    seen: list[Path] = []
    parse = hik_sim.robots.urdf._parse_xml

    def counting(data: bytes, path: Path):  # noqa: ANN202
        seen.append(path)
        return parse(data, path)

    monkeypatch.setattr(hik_sim.robots.urdf, "_parse_xml", counting)
    return seen


def test_making_an_environment_parses_its_urdf_once(tmp_path: Path, parses: list[Path]) -> None:
    import gymnasium as gym

    import hik_sim  # noqa: F401  registers the environments

    urdf = _fresh_user_urdf(tmp_path)
    env = gym.make("hik_sim/Reach-v0", urdf=str(urdf), base="base", ee="tool")
    env.reset(seed=0)
    env.close()
    assert parses == [urdf]


def test_an_edited_urdf_is_parsed_again(tmp_path: Path, parses: list[Path]) -> None:
    urdf = _fresh_user_urdf(tmp_path)
    assert robot_from_urdf(urdf, "base", "tool").name == "user_arm"
    assert robot_from_urdf(urdf, "base", "tool").name == "user_arm"
    assert len(parses) == 1
    urdf.write_text(urdf.read_text().replace('name="user_arm"', 'name="edited_arm"', 1))
    assert robot_from_urdf(urdf, "base", "tool").name == "edited_arm"
    assert len(parses) == 2


def test_the_urdf_tree_a_scene_rewrites_is_its_own_copy(tmp_path: Path) -> None:
    robot = robot_from_urdf(_fresh_user_urdf(tmp_path), "base", "tool")
    first = mujoco_urdf(robot)
    assert "<mujoco>" in first and mujoco_urdf(robot) == first  # the cached tree was not rewritten in place
    _, tree = hik_sim.robots.urdf.load_urdf_tree(robot.urdf)
    assert tree.find("mujoco") is None


def test_a_scene_is_compiled_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiles = []
    compile_spec = mujoco.MjSpec.compile

    def counting(spec, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        compiles.append(spec.modelname)
        return compile_spec(spec, *args, **kwargs)

    monkeypatch.setattr(mujoco.MjSpec, "compile", counting)
    scene = build_scene(robot_from_urdf(_fresh_user_urdf(tmp_path), "base", "tool"), workspace_samples=16)
    assert compiles == ["user_arm", "user_arm"]
    # the keyframe, filled in after the last compile, is in both the model and the spec
    reopened = mujoco.MjModel.from_xml_string(scene.spec.to_xml())
    assert np.array_equal(reopened.key_qpos, scene.model.key_qpos) and np.array_equal(reopened.key_ctrl, scene.model.key_ctrl)
    assert np.allclose(scene.model.key_mpos[0], scene.make_data().site_xpos[scene.ee_site])


def test_design_md_lists_the_derivation_in_order() -> None:
    import re

    text = (Path(__file__).parent.parent / "docs" / "design.md").read_text()
    section = text[text.index("## Scenes"):text.index("## Learning")]
    listed = re.findall(r"^\d+\. .*?\(`(\w+)\.(\w+)`\)\.?$", section.replace("\n   ", " "), flags=re.M)
    assert listed == [(step.__module__.rsplit(".", 1)[-1], step.__name__) for step in DERIVATION]

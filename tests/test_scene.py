"""MuJoCo scenes: every robot compiles, matches the chain's FK, holds home, servos and renders."""

from __future__ import annotations

import functools
import json

import mujoco
import numpy as np
import pytest
import torch
from conftest import ALL_ROBOTS, USER_URDF, robot_by_id

from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.robots.meshes import mujoco_mesh
from hik_sim.sim import Scene, SceneOptions, build_scene, check_scene, render_frame, repair_inertia
from hik_sim.sim import main as scene_main


@functools.lru_cache(maxsize=None)
def scene_of(name: str) -> Scene:
    return build_scene(robot_by_id(name))


@pytest.fixture(params=ALL_ROBOTS)
def scene(request: pytest.FixtureRequest) -> Scene:
    return scene_of(request.param)


def test_fk_matches_mujoco_and_home_holds(scene: Scene) -> None:
    check = check_scene(scene, samples=1000, hold_seconds=2.0)
    assert check.fk_pos_err_max < 1e-6
    assert check.fk_rot_err_max < 1e-5
    assert check.hold_err_max < 1e-3
    assert check.warnings == ()
    assert check.ok


def test_scene_structure(scene: Scene) -> None:
    model, robot = scene.model, scene.robot
    assert model.nkey == 1 and model.key("home").id == scene.home_key
    assert {model.camera(i).name for i in range(model.ncam)} == {"workspace", "overview"}
    assert model.site("ee").bodyid == model.body(robot.ee_link).id
    assert model.body_mocapid[model.body("target").id] == scene.target_mocap >= 0
    assert not np.any(model.jnt_type == mujoco.mjtJoint.mjJNT_FREE)  # base fixed in place
    for i, name in enumerate(robot.joint_names):
        act = model.actuator(name)
        assert act.id == scene.chain_actuators[i]
        assert model.actuator_trnid[act.id, 0] == model.joint(name).id
        assert np.allclose(model.actuator_ctrlrange[act.id], (robot.lower[i], robot.upper[i]))
    held = {model.joint(model.actuator_trnid[a, 0]).name for a in scene.hold_actuators}
    assert held == {n for n in robot.held_joints if n in {model.joint(j).name for j in range(model.njnt)}}
    assert model.nu == robot.dof + len(scene.hold_actuators)
    robot_geoms = model.geom_bodyid > 0
    assert not np.any(model.geom_contype[robot_geoms]) and not np.any(model.geom_conaffinity[robot_geoms])


def test_home_keyframe_puts_the_target_on_the_end_effector(scene: Scene) -> None:
    data = scene.make_data()
    assert np.allclose(data.qpos[scene.chain_qpos], scene.robot.home)
    assert np.allclose(data.mocap_pos[scene.target_mocap], data.site_xpos[scene.ee_site], atol=1e-9)
    pos, quat = scene.ee_pose(data)
    home = Chain(scene.robot).fk(torch.tensor([scene.robot.home], dtype=torch.float64))
    assert np.allclose(pos, home.pos[0].numpy(), atol=1e-9)
    # set_target in the base frame lands where the chain's FK says
    scene.set_target(data, pos + [0.01, 0, 0], quat)
    mujoco.mj_forward(scene.model, data)
    base_pos, base_rot = scene.base_pose(data)
    assert np.allclose(base_rot.T @ (data.mocap_pos[scene.target_mocap] - base_pos), pos + [0.01, 0, 0], atol=1e-9)


def test_robot_stands_on_the_floor(scene: Scene) -> None:
    data = scene.make_data()
    zmin = min(
        data.geom_xpos[g][2] + data.geom_xmat[g].reshape(3, 3)[2] @ scene.model.geom_aabb[g, :3]
        - np.abs(data.geom_xmat[g].reshape(3, 3)[2]) @ scene.model.geom_aabb[g, 3:]
        for g in range(scene.model.ngeom) if scene.model.geom_bodyid[g] > 0
    )
    assert abs(zmin) < 1e-6


def test_servos_follow_smooth_commands_within_limits(scene: Scene) -> None:
    """Minimum-jerk moves from home to random configurations: tracked, settled, never past a limit."""
    chain = Chain(scene.robot)
    goals = chain.sample(3, torch.Generator().manual_seed(0), torch.float64).numpy()
    lower, upper = np.asarray(scene.robot.lower), np.asarray(scene.robot.upper)
    data = scene.make_data()
    steps = int(1.0 / scene.model.opt.timestep)
    worst_excess = 0.0
    for goal in goals:
        start = data.qpos[scene.chain_qpos].copy()
        for k in range(steps + steps // 2):
            s = min(1.0, (k + 1) / steps)
            data.ctrl[scene.chain_actuators] = start + (goal - start) * (10 * s**3 - 15 * s**4 + 6 * s**5)
            mujoco.mj_step(scene.model, data)
            q = data.qpos[scene.chain_qpos]
            worst_excess = max(worst_excess, float(np.max(lower - q)), float(np.max(q - upper)))
        assert np.abs(data.qpos[scene.chain_qpos] - goal).max() < 1e-4
    assert np.all(np.isfinite(data.qpos))
    assert not any(data.warning[i].number for i in range(len(data.warning)))
    assert worst_excess < 1e-4


@pytest.mark.slow
def test_renders_a_frame_that_shows_the_robot(scene: Scene) -> None:
    data = scene.make_data()
    frame = render_frame(scene, data, 160, 120)
    assert frame.shape == (120, 160, 3) and frame.dtype == np.uint8
    assert frame.std() > 10
    hidden = scene.model.geom_rgba.copy()
    try:
        scene.model.geom_rgba[scene.model.geom_bodyid > 0, 3] = 0.0
        empty = render_frame(scene, data, 160, 120)
    finally:
        scene.model.geom_rgba[:] = hidden
    changed = np.abs(frame.astype(int) - empty.astype(int)).sum(-1) > 30
    assert changed.mean() > 0.01  # the robot covers part of the picture


def test_render_rejects_bad_size_and_camera() -> None:
    scene = scene_of("irb120")
    with pytest.raises(HikError, match="render size"):
        render_frame(scene, scene.make_data(), 5000, 10)
    with pytest.raises(HikError, match="cameras are: .*workspace"):
        render_frame(scene, scene.make_data(), 64, 48, camera="nope")


def test_scene_command_writes_mjcf_that_mujoco_reopens_and_a_picture(tmp_path, capsys) -> None:  # noqa: ANN001
    xml, png = tmp_path / "irb120.xml", tmp_path / "irb120.png"
    assert scene_main(["--robot", "irb120", "--xml", str(xml), "--png", str(png), "--size", "320x240", "--samples", "200"]) == 0
    out = capsys.readouterr().out
    assert "result       OK" in out
    reopened = mujoco.MjModel.from_xml_path(str(xml))
    assert (reopened.nq, reopened.nu, reopened.nkey) == (scene_of("irb120").model.nq, 6, 1)
    import imageio.v3 as iio

    assert iio.imread(png).shape == (240, 320, 3)


def test_scene_command_takes_a_user_urdf(tmp_path, capsys) -> None:  # noqa: ANN001
    xml = tmp_path / "user.xml"
    argv = ["--urdf", str(USER_URDF), "--base", "base", "--ee", "tool", "--xml", str(xml), "--samples", "100"]
    assert scene_main(argv) == 0
    assert mujoco.MjModel.from_xml_path(str(xml)).nu == 5
    with pytest.raises(SystemExit):
        scene_main(["--robot", "irb120", "--size", "big"])
    with pytest.raises(SystemExit):
        scene_main(["--urdf", str(USER_URDF), "--base", "tool", "--ee", "base"])
    assert "not an ancestor" in capsys.readouterr().err


def test_options_are_validated() -> None:
    with pytest.raises(HikError, match="timestep"):
        SceneOptions(timestep=0.0)
    with pytest.raises(HikError, match="natural_frequency"):
        SceneOptions(natural_frequency=1000.0)
    fine = build_scene(robot_by_id("irb120"), SceneOptions(timestep=0.001, natural_frequency=20.0))
    assert fine.model.opt.timestep == 0.001


def test_repair_inertia() -> None:
    good = np.diag([0.02, 0.03, 0.04])
    assert repair_inertia(1.0, good) == (1.0, pytest.approx(good), False)
    mass, fixed, changed = repair_inertia(-1.0, np.diag([0.01, 0.01, 0.5]))  # negative mass, A + B < C
    assert changed and mass > 0
    moments = np.linalg.eigvalsh(fixed)
    assert moments.min() > 0 and moments[2] <= moments[0] + moments[1] + 1e-12
    _, fixed, changed = repair_inertia(1.0, np.array([[0.01, 0.02, 0], [0.02, 0.01, 0], [0, 0, 0.01]]))  # indefinite
    assert changed and np.linalg.eigvalsh(fixed).min() > 0


def test_meshes_are_converted_once_into_the_cache(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("HIK_SIM_CACHE", str(tmp_path))
    dae = USER_URDF.parent.parent / "meshes" / "forearm.dae"
    first = mujoco_mesh(dae)
    assert first.path.parent == tmp_path / "meshes" and first.path.suffix == ".stl"
    assert first.rgba is not None and first.rgba[2] > first.rgba[0]  # the mesh is blue
    mtime = first.path.stat().st_mtime_ns
    again = mujoco_mesh(dae)
    assert again == first and again.path.stat().st_mtime_ns == mtime
    ascii_stl = tmp_path / "ascii.stl"
    corners = ((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1))
    facets = "".join(
        "facet normal 0 0 0\nouter loop\n" + "".join(f"vertex {x} {y} {z}\n" for x, y, z in tri) + "endloop\nendfacet\n"
        for tri in ((corners[0], corners[2], corners[1]), (corners[0], corners[1], corners[3]),
                    (corners[0], corners[3], corners[2]), (corners[1], corners[2], corners[3]))
    )
    ascii_stl.write_text(f"solid tetra\n{facets}endsolid tetra\n")  # a tetrahedron in ASCII STL
    converted = mujoco_mesh(ascii_stl)
    assert converted.path != ascii_stl and converted.path.stat().st_size == 84 + 4 * 50
    obj = mujoco_mesh(USER_URDF.parent.parent / "meshes" / "upper.obj")
    assert obj.path.suffix == ".obj" and obj.rgba is None
    assert json.loads(first.path.with_suffix(".json").read_text())["rgba"] == list(first.rgba)

"""The interactive viewer: the goal moved through viser's own API is reached; the panel's readouts are right.

No browser here: :class:`hik_sim.viewer.ViserViewer` owns the server, the simulation and the
controller, and ``step()`` is one control step (``scripts/viewer_screenshot.py`` checks the page
itself in headless Chromium).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from hik_sim.errors import HikError
from hik_sim.robots import get_robot

viser = pytest.importorskip("viser")

from hik_sim.viewer import LiveSim, ViserViewer, policy_choices  # noqa: E402
from hik_sim.viewer.__main__ import main  # noqa: E402
from hik_sim.viewer.mujoco_backend import run_mujoco_viewer  # noqa: E402
from hik_sim.viewer.viser_backend import fusion_markdown, geom_mesh  # noqa: E402


@pytest.fixture(scope="module")
def irb120():  # noqa: ANN201
    return get_robot("irb120")


@pytest.fixture(scope="module")
def scene(irb120):  # noqa: ANN001, ANN201
    from hik_sim.sim import build_scene

    return build_scene(irb120)


def _reachable_world_goal(sim: LiveSim, offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The end-effector's world pose at home + ``offset`` joints (a goal the arm can reach)."""
    data = mujoco.MjData(sim.model)
    mujoco.mj_resetDataKeyframe(sim.model, data, sim.scene.home_key)
    q = np.clip(data.qpos[sim.scene.chain_qpos] + offset, sim.lower, sim.upper)
    data.qpos[sim.scene.chain_qpos] = q
    mujoco.mj_forward(sim.model, data)
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, data.site_xmat[sim.scene.ee_site])
    return data.site_xpos[sim.scene.ee_site].copy(), quat


@pytest.mark.parametrize("policy", ["lm", "hybrid"])
def test_goal_moved_through_viser_is_reached(irb120, scene, policy: str) -> None:  # noqa: ANN001
    sim = LiveSim(irb120, policy=policy, scene=scene)
    with ViserViewer(sim, host="127.0.0.1", port=0) as viewer:
        assert viewer.url == f"http://127.0.0.1:{viewer.port}" and viewer.port > 0
        start_pos, _ = sim.ee_world()
        goal_pos, goal_quat = _reachable_world_goal(sim, np.array([0.5, 0.3, -0.25, 0.6, -0.5, 0.8]))
        assert np.linalg.norm(goal_pos - start_pos) > 0.1  # a real move, not a nudge
        viewer.goal.position = goal_pos  # viser's own handle, as a drag in the browser sets it
        viewer.goal.wxyz = goal_quat
        readouts = [viewer.step() for _ in range(100)]
        final = readouts[-1]
        assert readouts[0].pos_err > 0.05  # it started far away ...
        assert final.pos_err < 0.005 and final.rot_err < math.radians(2.0)  # ... and got there: < 5 mm, < 2°
        assert final.ik_success and final.policy == policy and final.steps == 100
        assert 0.0 < final.ik_latency < 0.5
        assert math.isclose(final.sim_time, 100 * sim.dt)
        # the goal is the gizmo's pose, in the base frame, and the scene's mocap target shows it
        ee_pos, _ = sim.ee_world()
        assert np.linalg.norm(ee_pos - goal_pos) < 0.005
        np.testing.assert_allclose(sim.data.mocap_pos[sim.scene.target_mocap], goal_pos, atol=1e-9)
        # the page shows MjData's poses: each body frame and the end-effector marker follow the simulation
        assert viewer._body_frames
        for body, frame in viewer._body_frames.items():
            # (viser itself skips a pose within np.allclose's default tolerance of the last one sent)
            np.testing.assert_allclose(frame.position, sim.data.xpos[body], rtol=2e-5, atol=2e-6)
            np.testing.assert_allclose(frame.wxyz, sim.data.xquat[body], rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(viewer.ee_marker.position, ee_pos, rtol=2e-5, atol=2e-6)
        assert "position error" in viewer.errors_text.content and "mm" in viewer.errors_text.content


def test_a_urdf_robot_without_a_network_offers_the_network_free_policies_and_reaches() -> None:
    from conftest import user_robot

    robot = user_robot()
    assert policy_choices(robot) == ("lm", "multistart", "dm_control")
    assert policy_choices(robot, "arm.pt") == ("hybrid", "closed_loop", "arm.pt", "lm", "multistart", "dm_control")
    sim = LiveSim(robot)  # default: lm
    assert sim.policy_name == "lm"
    with ViserViewer(sim, host="127.0.0.1", port=0) as viewer:
        goal_pos, goal_quat = _reachable_world_goal(sim, np.resize([0.4, -0.3, 0.3, 0.5, -0.4, 0.3], robot.dof))
        viewer.goal.position, viewer.goal.wxyz = goal_pos, goal_quat
        for _ in range(100):
            readout = viewer.step()
        assert readout.pos_err < 0.005 and readout.rot_err < math.radians(2.0)


def test_harmoatt_fusion_readout_is_a_distribution_that_follows_the_goal(irb120, scene) -> None:  # noqa: ANN001
    sim = LiveSim(irb120, policy="mlp", scene=scene)
    with ViserViewer(sim, host="127.0.0.1", port=0) as viewer:
        readout = viewer.step()
        assert readout.fusion_weights is None and readout.temperature is None
        assert viewer.fusion_text.content == "*mlp* runs on a network of kind mlp (no attention fusion): no fusion weights."
        viewer.policy_dropdown.value = "harmoatt"  # the dropdown, through viser's API
        first = viewer.step()
        assert first.policy == "harmoatt" and sim.network_kind == "harmoatt"
        weights, tau = first.fusion_weights, first.temperature
        blocks = weights.shape[0]
        assert weights.shape == (blocks, 3) and tau.shape == (blocks,) and blocks >= 1
        assert np.all(weights >= 0) and np.all(weights <= 1)
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)
        assert np.all((tau >= 0.25 - 1e-6) & (tau <= 4.0 + 1e-6))  # the model's (tau_min, tau_max)
        table = viewer.fusion_text.content
        assert "channel" in table and "spatial" in table and "cross" in table and "τ" in table
        assert table.count("\n") == blocks + 1
        # the same numbers the network returns for the goal (its IKOutput), untouched by the viewer
        import torch

        network = sim.policy.solver.network
        with torch.inference_mode():
            out = network(torch.as_tensor(sim.goal_pos[None]).float(), torch.as_tensor(sim.goal_quat[None]).float())
        np.testing.assert_allclose(weights, out.fusion_weights[0].numpy(), atol=1e-6)
        # a new goal gives new weights
        goal_pos, goal_quat = _reachable_world_goal(sim, np.array([-0.8, 0.4, 0.3, -1.0, 0.7, -0.5]))
        viewer.goal.position, viewer.goal.wxyz = goal_pos, goal_quat
        moved = viewer.step()
        assert not np.allclose(moved.fusion_weights, weights, atol=1e-4) or not np.allclose(moved.temperature, tau, atol=1e-4)
        np.testing.assert_allclose(moved.fusion_weights.sum(axis=1), 1.0, atol=1e-5)


def test_bad_policy_from_the_page_keeps_the_running_one(irb120, scene) -> None:  # noqa: ANN001
    sim = LiveSim(irb120, policy="lm", scene=scene)
    with ViserViewer(sim, host="127.0.0.1", port=0) as viewer:
        viewer.request_policy("no_such_policy")
        readout = viewer.step()
        assert readout.policy == "lm" and viewer.policy_dropdown.value == "lm"
        assert "unknown policy" in viewer.policy_error and "policy not changed" in viewer.errors_text.content
    assert "hybrid" in policy_choices(irb120) and "harmoatt_4answers" in policy_choices(irb120)
    with pytest.raises(HikError, match="finite"):
        sim.set_goal_world([np.nan, 0, 0], [1, 0, 0, 0])
    with pytest.raises(HikError, match="non-zero"):
        sim.set_goal([0.3, 0, 0.3], [0, 0, 0, 0])


def test_busy_port_falls_back_to_a_free_one(irb120, scene) -> None:  # noqa: ANN001
    sim = LiveSim(irb120, policy="lm", scene=scene)
    with ViserViewer(sim, host="127.0.0.1", port=0) as first:
        with ViserViewer(sim, host="127.0.0.1", port=first.port) as second:
            assert second.port != first.port


def test_geom_meshes_fit_mujocos_bounding_spheres() -> None:
    """Meshes (panda) and primitives (irb120) come out in the geom frame: inside MuJoCo's own geom_rbound."""
    from hik_sim.envs.base import cached_scene

    for name in ("panda", "irb120"):
        model = cached_scene(get_robot(name)).model
        shown = 0
        for geom in range(model.ngeom):
            shape = geom_mesh(model, geom)
            if shape is None:
                assert model.geom_type[geom] == mujoco.mjtGeom.mjGEOM_PLANE
                continue
            vertices, faces = shape
            assert faces.ndim == 2 and faces.shape[1] == 3 and faces.max() < len(vertices)
            assert np.linalg.norm(vertices, axis=1).max() <= model.geom_rbound[geom] * (1 + 1e-4) + 1e-9
            shown += 1
        assert shown >= 5


def test_mujoco_backend_without_a_display_says_so(irb120, scene, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    sim = LiveSim(irb120, policy="lm", scene=scene)
    with pytest.raises(HikError, match="needs a display") as error:
        run_mujoco_viewer(sim)
    assert "--backend viser" in str(error.value)
    with pytest.raises(SystemExit) as exit_info:  # the command says it before building anything
        main(["--backend", "mujoco"])
    assert exit_info.value.code == 2
    assert "--backend viser" in capsys.readouterr().err


def test_fusion_markdown_without_weights() -> None:
    from hik_sim.viewer.session import Readout

    readout = Readout("lm", 0.0, 0.0, 0.0, True, None, None, 0.0, 0)
    assert fusion_markdown(readout, None) == "*lm* runs on no network: no fusion weights."

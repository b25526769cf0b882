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
from hik_sim.viewer.viser_backend import REFUSED_POLICY, fusion_markdown, geom_mesh  # noqa: E402


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
        assert viewer.policy_error == REFUSED_POLICY and "policy not changed" in viewer.errors_text.content
        assert "no_such_policy" not in viewer.errors_text.content  # the page's value is never echoed
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


# -- what the page may do: a websocket client on loopback speaking viser's protocol ---------------

CAMERA_MESSAGE = {"type": "ViewerCameraMessage", "wxyz": [1.0, 0.0, 0.0, 0.0], "position": [1.0, 1.0, 1.0], "fov": 1.0,
                  "near": 0.01, "far": 100.0, "image_height": 100, "image_width": 100, "look_at": [0.0, 0.0, 0.0],
                  "up_direction": [0.0, 0.0, 1.0]}
"""The first message a page sends: viser counts a client as connected (and runs its GUI callbacks) from it on."""


def _page(viewer: ViserViewer, origin: str | None = "self"):  # noqa: ANN202 - a websockets ClientConnection
    """A websocket to the viewer as its page opens one (``origin="self"``: the page's own address), camera sent."""
    from websockets.sync.client import connect

    origin = f"http://127.0.0.1:{viewer.port}" if origin == "self" else origin
    ws = connect(f"ws://127.0.0.1:{viewer.port}", subprotocols=[f"viser-v{viser.__version__}"], origin=origin,
                 max_size=None, max_queue=None, open_timeout=20)
    ws.send(_encode(CAMERA_MESSAGE))
    return ws


def _encode(message: dict) -> bytes:
    import msgspec

    return msgspec.msgpack.encode(message)


def _choose(ws, viewer: ViserViewer, value: object) -> None:  # noqa: ANN001
    """What the page sends when the dropdown changes: a GuiUpdateMessage for its value."""
    ws.send(_encode({"type": "GuiUpdateMessage", "uuid": viewer.policy_dropdown._impl.uuid, "updates": {"value": value}}))


def _wait(condition, seconds: float = 20.0) -> bool:  # noqa: ANN001
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def _refusal(viewer: ViserViewer) -> str:
    return viewer.errors_text.content.split("**policy not changed:**", 1)[1]


def test_a_policy_the_dropdown_does_not_offer_is_refused_through_the_websocket(irb120, scene, tmp_path) -> None:  # noqa: ANN001
    """Paths sent as the dropdown's value (an existing file, a missing one, /etc/passwd, a 300-character .pt) are never
    loaded: the running policy stays, the dropdown is put back, the page says the same thing for each, and the server serves on."""
    import urllib.request

    real = tmp_path / "real.pt"
    real.write_bytes(b"not a checkpoint")
    foreign = ["/etc/passwd", "a" * 300 + ".pt", str(real), str(tmp_path / "missing.pt")]
    sim = LiveSim(irb120, policy="lm", scene=scene)
    built: list[str] = []
    set_policy = sim.set_policy
    sim.set_policy = lambda name: (built.append(name), set_policy(name))[1]  # type: ignore[method-assign]
    with ViserViewer(sim, host="127.0.0.1", port=0) as viewer:
        asked: list[object] = []
        request = viewer.request_policy
        viewer.request_policy = lambda name: (asked.append(name), request(name))[1]  # type: ignore[method-assign]
        ws = _page(viewer)
        try:
            refusals = []
            for value in foreign:
                _choose(ws, viewer, value)
                assert _wait(lambda value=value: value in asked)  # the dropdown's callback ran with it
                readout = viewer.step()
                assert readout.policy == "lm" and sim.policy_name == "lm" and viewer.policy_dropdown.value == "lm"
                assert viewer.policy_error == REFUSED_POLICY
                refusals.append(_refusal(viewer))
            assert built == []  # nothing from the page reached the policy builder
            assert len(set(refusals)) == 1  # an existing file and a missing one read the same
            for word in ("passwd", "real.pt", "missing", "aaaaaaaaaa", "exist", "found", "too long"):
                assert word not in viewer.errors_text.content
            # the server still serves: the page, and an offered policy switched to through the same websocket
            with urllib.request.urlopen(f"http://127.0.0.1:{viewer.port}/", timeout=20) as response:
                assert response.status == 200
            _choose(ws, viewer, "multistart")
            assert _wait(lambda: "multistart" in asked)
            assert viewer.step().policy == "multistart" and built == ["multistart"]
            assert viewer.policy_error is None and "policy not changed" not in viewer.errors_text.content
        finally:
            ws.close()


def test_the_page_cannot_change_the_offered_list_or_send_a_nan_goal(irb120, scene) -> None:  # noqa: ANN001
    sim = LiveSim(irb120, policy="lm", scene=scene)
    with ViserViewer(sim, host="127.0.0.1", port=0) as viewer:
        offered = viewer.policy_names
        goal_before, _ = sim.goal_world()
        ws = _page(viewer)
        try:
            ws.send(_encode({"type": "GuiUpdateMessage", "uuid": viewer.policy_dropdown._impl.uuid,
                             "updates": {"options": ["lm", "/etc/passwd"]}}))
            ws.send(_encode({"type": "TransformControlsUpdateMessage", "name": "/goal", "wxyz": [1.0, 0.0, 0.0, 0.0],
                             "position": [math.nan, 0.0, 0.0]}))
            assert _wait(lambda: viewer.errors.total >= 1 and np.isnan(viewer.goal.position[0]))
        finally:
            ws.close()
        readout = viewer.step()  # the NaN goal is refused, the gizmo put back on the last goal
        assert viewer.policy_dropdown.options == offered and readout.policy == "lm"
        assert np.isfinite(readout.pos_err) and np.all(np.isfinite(viewer.goal.position))
        np.testing.assert_allclose(viewer.goal.position, goal_before, atol=1e-9)
        assert "goal refused" in viewer.errors_text.content and "finite" in viewer.errors_text.content
        assert viewer.step().steps == 2  # and it goes on


def test_a_page_of_another_site_is_closed_before_it_drives_anything(irb120, scene) -> None:  # noqa: ANN001
    from websockets.exceptions import ConnectionClosed

    sim = LiveSim(irb120, policy="lm", scene=scene)
    with ViserViewer(sim, host="127.0.0.1", port=0) as viewer:
        with pytest.raises(ConnectionClosed) as closed:
            ws = _page(viewer, origin="http://evil.example")
            try:
                _choose(ws, viewer, "multistart")  # sent at once, before the server closes: must be dropped too
                for _ in range(10_000):  # bounded: the close comes within a second
                    ws.recv(timeout=20)
            finally:
                ws.close()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
        assert viewer.policy_dropdown.value == "lm" and viewer.step().policy == "lm"
        ws = _page(viewer, origin=None)  # a client that is no browser sends no Origin: let in
        try:
            _choose(ws, viewer, "multistart")
            assert _wait(lambda: viewer.policy_dropdown.value == "multistart")
        finally:
            ws.close()
        assert viewer.step().policy == "multistart"


def test_handshake_origin_rules() -> None:
    from hik_sim.viewer.access import allowed_handshake, is_loopback, remote_warning

    assert allowed_handshake("http://127.0.0.1:8080", "127.0.0.1:8080", loopback=True)
    assert allowed_handshake("http://localhost:9000", "localhost:9000", loopback=True)  # an ssh -L 9000:localhost:8080
    assert allowed_handshake("http://[::1]:8080", "[::1]:8080", loopback=True)
    assert allowed_handshake(None, "127.0.0.1:8080", loopback=True)  # no browser
    assert not allowed_handshake("http://evil.example", "127.0.0.1:8080", loopback=True)  # another site's page
    assert not allowed_handshake("http://127.0.0.1:9999", "127.0.0.1:8080", loopback=True)  # another port, another origin
    assert not allowed_handshake("http://evil.example:8080", "evil.example:8080", loopback=True)  # DNS rebinding
    assert allowed_handshake("http://robot-box:8080", "robot-box:8080", loopback=False)  # --host 0.0.0.0, its own page
    assert not allowed_handshake("null", "robot-box:8080", loopback=False)
    assert not allowed_handshake("http://robot-box:8080", None, loopback=False)
    assert is_loopback("127.0.0.1") and is_loopback("127.1.2.3") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("")
    assert remote_warning("127.0.0.1", 8080) is None
    warning = remote_warning("0.0.0.0", 8080)
    assert warning is not None and warning.startswith("warning:") and "anyone who can reach port 8080" in warning


def _listening_addresses(port: int) -> list[str]:
    """The local addresses of the sockets listening on TCP ``port`` (Linux: /proc/net/tcp and tcp6)."""
    import ipaddress
    from pathlib import Path

    found = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        path = Path("/proc/net") / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, local_port = fields[1].split(":")
            if int(local_port, 16) != port or fields[3] != "0A":  # 0A: LISTEN
                continue
            raw = b"".join(bytes.fromhex(address[i:i + 8])[::-1] for i in range(0, width, 8))
            found.append(str(ipaddress.ip_address(raw)))
    return found


def test_the_viewer_listens_on_loopback_only_by_default(irb120, scene, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import ipaddress
    from pathlib import Path

    if not Path("/proc/net/tcp").exists():
        pytest.skip("reads the listening sockets from /proc/net (Linux)")
    sim = LiveSim(irb120, policy="lm", scene=scene)
    with ViserViewer(sim, port=0) as viewer:  # no host given
        assert viewer.host == "127.0.0.1" and viewer.urls() == [f"http://127.0.0.1:{viewer.port}"]
        addresses = _listening_addresses(viewer.port)
        assert addresses and all(ipaddress.ip_address(a).is_loopback for a in addresses), addresses
    # the command: serves on loopback, prints no address for other machines and no warning
    seen: list[list[str]] = []
    monkeypatch.setattr(ViserViewer, "run", lambda self, *a, **k: seen.append(_listening_addresses(self.port)))
    assert main(["--policy", "lm", "--port", "0"]) == 0
    out, err = capsys.readouterr()
    assert len(seen) == 1 and seen[0] and all(ipaddress.ip_address(a).is_loopback for a in seen[0]), seen
    assert "open http://127.0.0.1:" in out and "another machine:" not in out and "ssh -L" in out
    assert "warning" not in err


def test_the_command_warns_when_told_to_serve_beyond_loopback(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A stand-in viewer: the test binds nothing beyond loopback."""
    hosts: list[str] = []

    class StandIn:
        def __init__(self, sim: LiveSim, host: str, port: int) -> None:
            hosts.append(host)
            self.port = 8080

        def urls(self) -> list[str]:
            return ["http://localhost:8080", "http://robot-box:8080"]

        def run(self) -> None:
            pass

        def close(self) -> None:
            pass

    monkeypatch.setattr("hik_sim.viewer.viser_backend.ViserViewer", StandIn)
    assert main(["--policy", "lm", "--host", "0.0.0.0"]) == 0
    out, err = capsys.readouterr()
    assert hosts == ["0.0.0.0"]
    assert "from another machine: http://robot-box:8080" in out
    assert err.startswith("warning: serving on every interface") and "anyone who can reach port 8080" in err


# -- errors: shown on the page and logged, never fatal -----------------------------------------------

def test_an_exception_in_a_step_is_shown_and_the_loop_goes_on(irb120, scene, caplog: pytest.LogCaptureFixture) -> None:  # noqa: ANN001
    sim = LiveSim(irb120, policy="lm", scene=scene)
    calls = 0
    step = sim.step

    def failing_step():  # noqa: ANN202
        nonlocal calls
        calls += 1
        if calls in (3, 4, 5):
            raise RuntimeError("solver blew up in /home/operator/secret")
        return step()

    sim.step = failing_step  # type: ignore[method-assign]
    with ViserViewer(sim, host="127.0.0.1", port=0) as viewer, caplog.at_level("ERROR", logger="hik_sim.viewer"):
        viewer.run(realtime=False, max_steps=10)
        assert calls == 10 and sim.steps == 7  # three failed, the loop went on to the end
        assert viewer.errors.total == 3
        text = viewer.errors_text.content
        assert "**error:** the control step failed: RuntimeError" in text and "(3 times)" in text
        assert "secret" not in text  # an unexpected exception's text stays in the terminal
        records = [r for r in caplog.records if "the control step failed" in r.getMessage()]
        assert len(records) == 1 and records[0].exc_info is not None  # the traceback once, not at 50 Hz
        assert "secret" in records[0].getMessage()
        # a callback that raises (here the dropdown's) is reported, not raised into viser's thread
        viewer.request_policy = lambda name: 1 / 0  # type: ignore[method-assign, assignment, misc]
        viewer.policy_dropdown.value = "multistart"  # runs the callbacks, as a change from the page does
        assert viewer.errors.total == 4
        viewer.step()
        assert "the policy dropdown failed: ZeroDivisionError" in viewer.errors_text.content
        # an offered policy that cannot be built: its reason shown, the running one kept
        sim.set_policy = lambda name: (_ for _ in ()).throw(HikError("needs a network"))  # type: ignore[method-assign]
        del viewer.request_policy
        viewer.request_policy("dm_control")
        assert viewer.step().policy == "lm" and viewer.policy_dropdown.value == "lm"
        assert viewer.policy_error == "needs a network" and "needs a network" in viewer.errors_text.content


def test_error_board_counts_and_forgets() -> None:
    from hik_sim.viewer.error_board import SHOWN_FOR, ErrorBoard

    now = [100.0]
    board = ErrorBoard(clock=lambda: now[0])
    assert board.page_text() is None
    board.report("goal refused", HikError("a goal must be finite"))
    board.report("goal refused", HikError("a goal must be finite"))
    assert board.page_text() == "goal refused: a goal must be finite (2 times)" and board.total == 2
    board.report("the control step failed", PermissionError(13, "Permission denied", "/srv/private.pt"))
    assert board.page_text() == "the control step failed: PermissionError (details in the viewer's terminal)"
    board.report("policy not changed", HikError("said elsewhere on the page"), show=False)
    assert board.page_text() == "the control step failed: PermissionError (details in the viewer's terminal)"
    now[0] += SHOWN_FOR + 0.1
    assert board.page_text() is None and board.total == 4


def test_a_checkpoint_name_the_os_refuses_is_a_hik_error(irb120, scene) -> None:  # noqa: ANN001
    from hik_sim.errors import CheckpointError

    sim = LiveSim(irb120, policy="lm", scene=scene)
    with pytest.raises(CheckpointError, match="cannot be read as a checkpoint") as error:
        sim.set_policy("a" * 300 + ".pt")
    assert isinstance(error.value, HikError) and "(303 characters, ending 'aaaaaaaaa.pt')" in str(error.value) and len(str(error.value)) < 600
    assert sim.policy_name == "lm" and sim.step().policy == "lm"

"""`ViserViewer`: the robot's MuJoCo scene in a browser (viser), a goal gizmo, and a live panel.

The page is served by `viser <https://viser.studio>`_, whose client ships inside its wheel: it works
offline and on a remote machine without a display (open the printed URL, or forward the port).
The scene is the one :func:`hik_sim.sim.build_scene` makes: every visible geom of the robot
(meshes and primitives, MuJoCo's own colours) is sent once, under a frame per body whose pose
follows ``MjData`` after every control step. The goal is a transform gizmo; the panel shows the
policy (a dropdown), the position and rotation error, the IK latency and, for a policy built on a
HarmoAtt-IK network, the fusion weights of each block and its temperature for the current goal.

All the state lives in :class:`ViserViewer`, and :meth:`ViserViewer.step` is one control step, so a
test drives it without a browser: move ``viewer.goal`` (viser's own handle) and call ``step()``.

Whoever reaches the page can drive the viewer, so it trusts nothing the page sends: it serves on
loopback unless told otherwise and closes websockets opened by other sites' pages
(:mod:`hik_sim.viewer.access`); a policy from the page must be one the dropdown offers (a path is
never loaded from the page: checkpoints come from the command line); a goal that is not a finite
pose is refused; and an error in a step or a callback is logged and shown on the page
(:mod:`hik_sim.viewer.error_board`), and the viewer goes on.
"""

from __future__ import annotations

import logging
import math
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from hik_sim.errors import HikError
from hik_sim.viewer.access import DEFAULT_HOST, install_origin_check, is_loopback
from hik_sim.viewer.error_board import ErrorBoard
from hik_sim.viewer.session import BRANCH_NAMES, LiveSim, Readout, policy_choices

__all__ = ["REFUSED_POLICY", "ViserViewer", "geom_mesh", "import_viser"]

log = logging.getLogger("hik_sim.viewer")

VISIBLE_GROUPS = (0, 1, 2)
"""The geom groups MuJoCo's viewer shows by default."""

REFUSED_POLICY = "the page asked for a policy the dropdown does not offer; choose one from the list"
"""What the page says when it sends a policy outside the dropdown's list (it never repeats the value)."""


def import_viser() -> Any:
    """The ``viser`` module.

    Raises:
        HikError: viser is not installed (the message says how to install it).
    """
    try:
        import viser
    except ImportError:
        raise HikError("the web viewer needs viser: pip install 'hik_sim[viewer]' (or pip install viser); "
                       "or use --backend mujoco where a display exists") from None
    return viser


def geom_mesh(model: Any, geom: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Vertices (V, 3) [m] and triangles (F, 3) of a MuJoCo geom in its own frame, or ``None`` (a plane, an unsupported type).

    Meshes come from the compiled model (MuJoCo has already moved them into the geom frame);
    primitives are built with trimesh from ``geom_size``.
    """
    import mujoco
    import trimesh

    kind = int(model.geom_type[geom])
    size = np.asarray(model.geom_size[geom], dtype=np.float64)
    types = mujoco.mjtGeom
    if kind == types.mjGEOM_MESH:
        mesh_id = int(model.geom_dataid[geom])
        vstart, vcount = int(model.mesh_vertadr[mesh_id]), int(model.mesh_vertnum[mesh_id])
        fstart, fcount = int(model.mesh_faceadr[mesh_id]), int(model.mesh_facenum[mesh_id])
        return (np.asarray(model.mesh_vert[vstart:vstart + vcount], dtype=np.float64),
                np.asarray(model.mesh_face[fstart:fstart + fcount], dtype=np.int64))
    if kind == types.mjGEOM_BOX:
        shape = trimesh.creation.box(extents=2 * size)
    elif kind == types.mjGEOM_SPHERE:
        shape = trimesh.creation.icosphere(subdivisions=2, radius=size[0])
    elif kind == types.mjGEOM_ELLIPSOID:
        shape = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
        shape.apply_scale(size)
    elif kind == types.mjGEOM_CYLINDER:
        shape = trimesh.creation.cylinder(radius=size[0], height=2 * size[1], sections=32)
    elif kind == types.mjGEOM_CAPSULE:
        shape = trimesh.creation.capsule(height=2 * size[1], radius=size[0], count=[16, 16])
    else:  # planes (the floor: a grid instead), height fields, SDFs
        return None
    return np.asarray(shape.vertices, dtype=np.float64), np.asarray(shape.faces, dtype=np.int64)


def _rgba(model: Any, geom: int) -> np.ndarray:
    material = int(model.geom_matid[geom])
    return np.asarray(model.mat_rgba[material] if material >= 0 else model.geom_rgba[geom], dtype=np.float64)


def _free_port(host: str, port: int) -> int:
    """``port`` if it can be bound on ``host``, else a free one chosen by the OS (port 0 too)."""
    bind_host = "" if host in ("0.0.0.0", "") else host
    family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
    if port:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((bind_host, port))
                return port
            except OSError:
                pass
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((bind_host, 0))
        return int(sock.getsockname()[1])


class ViserViewer:
    """The viser server, the live simulation and the controller, stepped by :meth:`step`.

    Args:
        sim: the :class:`~hik_sim.viewer.session.LiveSim` to show and drive.
        host: interface to serve on: loopback by default (this machine only); ``0.0.0.0``: every
            interface, and then anyone who can reach the port can drive the viewer.
        port: TCP port; when it is taken, a free one is used (see :attr:`port`); 0: any free port.
        gizmo_scale: size of the goal gizmo [m] (default: a third of the workspace radius).

    Raises:
        HikError: viser is not installed, or ``host`` cannot be served on.
    """

    def __init__(self, sim: LiveSim, host: str = DEFAULT_HOST, port: int = 8080, gizmo_scale: float | None = None) -> None:
        viser = import_viser()
        self.sim = sim
        self.host = host
        try:
            free = _free_port(host, port)
        except OSError as exc:
            raise HikError(f"host {host!r} cannot be served on ({exc.strerror or exc}); give an address of this machine, "
                           f"e.g. {DEFAULT_HOST} (the default) or 0.0.0.0 (every interface)") from None
        self.server = viser.ViserServer(host=host, port=free, label="hik_sim viewer", verbose=False)
        self._lock = threading.Lock()
        self._pending_policy: str | None = None
        self._pending_refused = False
        self._pending_reset = False
        self._pending_snap = False
        self.policy_error: str | None = None
        self.policy_names: tuple[str, ...] = ()
        """The policies the dropdown offers: the only ones the page may ask for."""
        self.errors = ErrorBoard()
        """Errors caught in steps and callbacks (logged, and shown on the page)."""
        self._shown: dict[str, Any] = {}
        self._latencies: list[float] = []
        try:
            install_origin_check(self.server, loopback=is_loopback(host),
                                 on_error=lambda exc: self.errors.report("a message from the page was refused", exc))
            self.server.gui.configure_theme(show_share_button=False)  # sharing goes through viser's public relay: off, offline
            self._build_scene(gizmo_scale)
            self._build_panel()
        except BaseException:
            self.server.stop()
            raise
        self._sync_bodies(force=True)
        self._show(sim.last)

    # -- public ---------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port the page is served on."""
        return int(self.server.get_port())

    @property
    def url(self) -> str:
        """The page's address on this machine."""
        host = "localhost" if self.host in ("0.0.0.0", "", "::") else self.host
        return f"http://{host}:{self.port}"

    def urls(self) -> list[str]:
        """Addresses to print: this machine's, and the host name's where the server listens on every interface."""
        urls = [self.url]
        if self.host in ("0.0.0.0", "", "::"):
            urls.append(f"http://{socket.gethostname()}:{self.port}")
        return urls

    def show(self, robot: bool = True, goal: bool = True) -> None:
        """Show or hide the robot (with the end-effector marker) and the goal gizmo on the page."""
        for frame in self._body_frames.values():
            frame.visible = robot
        self.ee_marker.visible = robot
        self.goal.visible = goal

    def request_policy(self, name: object) -> None:
        """Switch policy before the next step, as the page's dropdown asks (thread-safe).

        ``name`` must be one of :attr:`policy_names`, compared as a string, never read as a path;
        anything else is refused at the next step: the running policy is kept, the dropdown is put
        back and the page says so (:data:`REFUSED_POLICY`).
        """
        with self._lock:
            if isinstance(name, str) and name in self.policy_names:
                self._pending_policy, self._pending_refused = name, False
            else:
                self._pending_policy, self._pending_refused = None, True

    def step(self) -> Readout:
        """One control step: take the gizmo's pose as the goal, step the simulation, update the page.

        A policy the page asked for is switched to first; a refused or failing one, and a gizmo
        pose that is not a goal, are shown on the page and the step goes on without them.

        Returns:
            The step's :class:`~hik_sim.viewer.session.Readout`.

        Raises:
            Exception: whatever the simulation or the page update raised (:meth:`run` shows it and goes on).
        """
        with self._lock:
            policy, self._pending_policy = self._pending_policy, None
            refused, self._pending_refused = self._pending_refused, False
            reset, self._pending_reset = self._pending_reset, False
            snap, self._pending_snap = self._pending_snap, False
        # the page can set the dropdown's value (and options) without the callback: check them every step
        if refused or self.policy_dropdown.value not in self.policy_names or tuple(self.policy_dropdown.options) != self.policy_names:
            self.policy_error = REFUSED_POLICY
            self.errors.report("policy not changed", HikError(REFUSED_POLICY), show=False)
            self._reset_dropdown()
        elif policy is not None and policy != self.sim.policy_name:
            try:
                self.sim.set_policy(policy)
                self.policy_error = None
            except HikError as exc:  # keep the running policy, say why on the page
                self.policy_error = str(exc)
                self.errors.report("policy not changed", exc, show=False)
                self._reset_dropdown()
        if reset:
            self.sim.reset()
        if snap:
            pos, quat = self.sim.ee_world()
            self.goal.position, self.goal.wxyz = pos, quat
        try:
            self.sim.set_goal_world(np.array(self.goal.position, dtype=np.float64), np.array(self.goal.wxyz, dtype=np.float64))
        except (HikError, TypeError, ValueError) as exc:  # e.g. a NaN pose sent by a client: back to the last goal
            self.errors.report("goal refused", exc if isinstance(exc, HikError) else HikError("the gizmo's pose is not a pose"))
            self.goal.position, self.goal.wxyz = self.sim.goal_world()
        readout = self.sim.step()
        with self.server.atomic():
            self._sync_bodies()
        self._show(readout)
        return readout

    def run(self, stop: threading.Event | None = None, realtime: bool = True, max_steps: int | None = None) -> None:
        """Step until ``stop`` is set, Ctrl+C or ``max_steps`` steps, paced to real time.

        An exception in a step is logged and shown on the page, and the loop goes on (Ctrl+C and
        other non-``Exception`` errors still end it).
        """
        stop = stop or threading.Event()
        next_time = time.perf_counter()
        steps = 0
        while not stop.is_set() and (max_steps is None or steps < max_steps):
            steps += 1
            try:
                self.step()
            except Exception as exc:
                self.errors.report("the control step failed", exc)
                self._refresh()
            if realtime:
                next_time += self.sim.dt
                delay = next_time - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                else:
                    next_time = time.perf_counter()  # slower than real time: do not try to catch up

    def _reset_dropdown(self) -> None:
        """Put the dropdown back on the running policy and the offered list (fires its callback: a no-op request)."""
        if tuple(self.policy_dropdown.options) != self.policy_names:
            self.policy_dropdown.options = self.policy_names
        self.policy_dropdown.value = self.sim.policy_name

    def _refresh(self) -> None:
        """Show the last readout and the errors again, after a failed step (never raises: the loop goes on)."""
        try:
            self._show(self.sim.last, record=False)
        except Exception as exc:  # the page itself failing: the terminal has it
            log.error("the page could not be updated: %s: %s", type(exc).__name__, exc, exc_info=exc)

    def _guarded(self, context: str, callback: Callable[[Any], None]) -> Callable[[Any], None]:
        """``callback`` for a GUI event, with any exception it raises reported instead of raised."""
        def guarded(event: Any) -> None:
            try:
                callback(event)
            except Exception as exc:
                self.errors.report(context, exc)
        return guarded

    def close(self) -> None:
        """Stop the server."""
        self.server.stop()

    def __enter__(self) -> "ViserViewer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- scene ----------------------------------------------------------------------------------
    def _build_scene(self, gizmo_scale: float | None) -> None:
        import mujoco

        model, data, scene = self.sim.model, self.sim.data, self.sim.scene
        api = self.server.scene
        api.set_up_direction("+z")
        radius = float(scene.workspace_radius)
        size = max(1.0, 6 * radius)  # the floor around the workspace (MuJoCo's plane reaches further)
        api.add_grid("/floor", width=size, height=size, cell_size=0.1, section_size=0.5, plane="xy",
                     cell_color=(170, 175, 185), section_color=(110, 115, 125), position=(0.0, 0.0, 0.0))
        groups = [g for g in VISIBLE_GROUPS if np.any(model.geom_group == g)]
        if 1 in groups and 0 in groups:  # URDF visuals are group 1; group 0 then holds collision copies
            groups.remove(0)
        self._body_frames: dict[int, Any] = {}
        for geom in range(model.ngeom):
            if int(model.geom_group[geom]) not in groups:
                continue
            shape = geom_mesh(model, geom)
            if shape is None:
                continue
            body = int(model.geom_bodyid[geom])
            if body not in self._body_frames:
                name = model.body(body).name or f"body{body}"
                self._body_frames[body] = api.add_frame(f"/mujoco/{body}_{name}", show_axes=False,
                                                        position=data.xpos[body], wxyz=data.xquat[body])
            rgba = _rgba(model, geom)
            parent = self._body_frames[body].name
            api.add_mesh_simple(f"{parent}/geom{geom}", vertices=shape[0], faces=shape[1],
                                color=tuple(int(round(255 * c)) for c in rgba[:3]),
                                opacity=None if rgba[3] >= 0.999 else float(rgba[3]), flat_shading=False,
                                position=model.geom_pos[geom], wxyz=model.geom_quat[geom])
        ee_pos, _ = self.sim.ee_world()
        self.ee_marker = api.add_icosphere("/ee", radius=max(0.006, 0.03 * radius), color=(240, 110, 30), position=ee_pos)
        goal_pos, goal_quat = self.sim.goal_world()
        self.goal = api.add_transform_controls("/goal", scale=gizmo_scale or max(0.08, radius / 3), line_width=3.0,
                                               position=goal_pos, wxyz=goal_quat, depth_test=False)
        camera = model.camera("workspace").id
        self.server.initial_camera.fov = math.radians(float(model.cam_fovy[camera]))  # the framing of the scene's workspace camera
        self.server.initial_camera.position = data.cam_xpos[camera]
        self.server.initial_camera.look_at = scene.workspace_center
        self.server.initial_camera.up = (0.0, 0.0, 1.0)

    def _sync_bodies(self, force: bool = False) -> None:
        data = self.sim.data
        for body, frame in self._body_frames.items():
            pos, quat = data.xpos[body], data.xquat[body]
            if force or not (np.allclose(frame.position, pos, rtol=0, atol=1e-6) and np.allclose(frame.wxyz, quat, rtol=0, atol=1e-6)):
                frame.position, frame.wxyz = pos.copy(), quat.copy()
        ee_pos, _ = self.sim.ee_world()
        if force or not np.allclose(self.ee_marker.position, ee_pos, rtol=0, atol=1e-6):
            self.ee_marker.position = ee_pos

    # -- panel ----------------------------------------------------------------------------------
    def _build_panel(self) -> None:
        gui = self.server.gui
        sim = self.sim
        gui.add_markdown(f"**{sim.robot.name}**: drag the gizmo to move the goal; the policy drives the arm in MuJoCo.")
        choices = policy_choices(sim.robot, sim.checkpoint)
        if sim.policy_name not in choices:  # a checkpoint path given as --policy (by the operator)
            choices = (sim.policy_name, *choices)
        self.policy_names = tuple(choices)
        self.policy_dropdown = gui.add_dropdown("Policy", self.policy_names, initial_value=sim.policy_name,
                                                hint="the IK controller, named as in python -m hik_sim.evaluate")
        self.policy_dropdown.on_update(self._guarded("the policy dropdown failed", lambda _: self.request_policy(self.policy_dropdown.value)))

        self.errors_text = gui.add_markdown("")
        with gui.add_folder("HarmoAtt-IK fusion weights"):
            self.fusion_text = gui.add_markdown("")
        snap = gui.add_button("Goal to end-effector")
        reset = gui.add_button("Reset robot to home")

        snap.on_click(self._guarded("the goal-to-end-effector button failed", lambda _: self._request(snap=True)))
        reset.on_click(self._guarded("the reset button failed", lambda _: self._request(reset=True)))

    def _request(self, snap: bool = False, reset: bool = False) -> None:
        with self._lock:
            self._pending_snap = self._pending_snap or snap
            self._pending_reset = self._pending_reset or reset

    def _set(self, key: str, handle: Any, value: Any) -> None:
        if self._shown.get(key) != value:
            self._shown[key] = value
            if key.startswith("md:"):
                handle.content = value
            else:
                handle.value = value

    def _show(self, readout: Readout, record: bool = True) -> None:
        if record or not self._latencies:
            self._latencies.append(readout.ik_latency_ms)
            del self._latencies[:-25]
        median = float(np.median(self._latencies))  # robust to the odd slow step (a restart, a busy machine)
        text = ("| | |\n|---|---|\n"
                f"| position error | {readout.pos_err_mm:.2f} mm |\n"
                f"| rotation error | {readout.rot_err_deg:.2f}° |\n"
                f"| IK latency | {readout.ik_latency_ms:.2f} ms (median of 25: {median:.2f} ms) |\n"
                f"| solver | {'within tolerance' if readout.ik_success else 'outside tolerance'} |\n"
                f"| sim time | {readout.sim_time:.1f} s |")
        if self.policy_error:
            text += f"\n\n**policy not changed:** {self.policy_error}"
        error = self.errors.page_text()
        if error:
            text += f"\n\n**error:** {error}"
        self._set("md:errors", self.errors_text, text)
        self._set("md:fusion", self.fusion_text, fusion_markdown(readout, self.sim.network_kind))


def fusion_markdown(readout: Readout, network_kind: str | None) -> str:
    """The fusion panel's text: a table of weights per block and branch, and each block's temperature."""
    if readout.fusion_weights is None or readout.temperature is None:  # both or neither
        kind = f"a network of kind {network_kind} (no attention fusion)" if network_kind else "no network"
        return f"*{readout.policy}* runs on {kind}: no fusion weights."
    lines = ["| block | " + " | ".join(BRANCH_NAMES) + " | τ |", "|---|" + "---|" * (len(BRANCH_NAMES) + 1)]
    for k, (weights, tau) in enumerate(zip(readout.fusion_weights, readout.temperature)):
        lines.append(f"| {k + 1} | " + " | ".join(f"{w:.2f}" for w in weights) + f" | {tau:.2f} |")
    return "\n".join(lines)

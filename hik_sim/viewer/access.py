"""Who may reach the web viewer: the interface it serves on and the browser pages allowed to drive it.

The viewer has no login: whoever can open its websocket can move the goal, switch among the offered
policies and reset the robot. So it serves on the loopback interface (:data:`DEFAULT_HOST`) unless
the operator names another with ``--host``, and it closes websocket connections that a browser
opens from a page of another site: a browser sends the page's ``Origin`` with every websocket
handshake, and the viewer's own page has the same host and port as the request's ``Host``. On
loopback the ``Host`` must also be a loopback name, which stops a foreign site whose name resolves
to 127.0.0.1 (DNS rebinding). A client that sends no ``Origin`` (not a browser) is let in: it could
send any ``Origin`` it liked.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from hik_sim.errors import HikError

__all__ = ["DEFAULT_HOST", "allowed_handshake", "install_origin_check", "is_loopback", "remote_warning"]

DEFAULT_HOST = "127.0.0.1"
"""The interface the web viewer serves on unless told otherwise: this machine only."""

LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")

log = logging.getLogger("hik_sim.viewer")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name, without a port) is this machine's loopback: 127.0.0.0/8, ::1, localhost."""
    host = host.strip().strip("[]").lower().rstrip(".")
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _split_host(netloc: str) -> str:
    """The host part of ``host[:port]`` or ``[v6]:port``."""
    return urlsplit(f"//{netloc}").hostname or ""


def allowed_handshake(origin: str | None, host_header: str | None, loopback: bool) -> bool:
    """Whether a websocket handshake may drive the viewer.

    Args:
        origin: the ``Origin`` header (a browser sends the page's ``scheme://host[:port]``); ``None`` if absent.
        host_header: the ``Host`` header (``host[:port]`` the client connected to).
        loopback: whether the server serves on loopback only.

    Returns:
        ``True`` for a client that sends no ``Origin``, or a page whose origin is the server itself
        (same host and port as ``Host``, and on loopback a loopback name); ``False`` otherwise.
    """
    if origin is None:
        return True
    if not host_header:
        return False
    if loopback and not is_loopback(_split_host(host_header)):
        return False
    parts = urlsplit(origin.strip())
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host_header.strip().lower()


def install_origin_check(server: Any, loopback: bool, on_error: Callable[[Exception], None] | None = None) -> None:
    """Make ``server`` (a ``viser.ViserServer``) ignore and close every websocket that :func:`allowed_handshake` refuses.

    Args:
        server: the viser server, before any client connects.
        loopback: whether it serves on loopback only (:func:`is_loopback` of its host).
        on_error: called with any exception viser's handlers raise on a message from a page (e.g.
            an update of a property the element does not have), instead of an unretrieved-task traceback.

    viser exposes no hook on the handshake, so this uses its websocket server's internals (viser
    1.1): a connect callback put first reads the handshake's headers from ``_live_connections``,
    and the two message dispatchers (the server's and the connection's ``_handle_incoming_message``)
    drop whatever a refused connection sent before it was closed.

    Raises:
        HikError: the viser installed lacks those internals (the viewer must not serve unchecked).
    """
    websock: Any = getattr(server, "_websock_server", None)
    if not (isinstance(getattr(websock, "_live_connections", None), dict) and isinstance(getattr(websock, "_client_connect_cb", None), list)
            and callable(getattr(websock, "_handle_incoming_message", None))):
        raise HikError("this viser version does not expose its websocket connections; the viewer's Origin check "
                           "needs viser 1.1 (pip install 'viser>=1.1,<2')")
    refused: set[int] = set()  # client ids are never reused; kept, so a message still queued is dropped too
    dispatch = websock._handle_incoming_message  # noqa: SLF001 - viser has no public hook (see above)

    async def _drop(*_: Any) -> None:
        return None

    async def gated(client_id: int, message: Any) -> None:
        if client_id in refused:
            return
        try:
            await dispatch(client_id, message)
        except Exception as exc:
            if on_error is None:
                raise
            on_error(exc)

    async def check(client: Any) -> None:
        connection = websock._live_connections.get(client.client_id)  # noqa: SLF001
        headers = getattr(getattr(connection, "request", None), "headers", None)
        origin, host = (headers.get("Origin"), headers.get("Host")) if headers is not None else ("unknown", None)
        if allowed_handshake(origin, host, loopback):
            return
        refused.add(client.client_id)
        client._handle_incoming_message = _drop  # noqa: SLF001
        log.warning("refused a websocket connection from a page of another site (Origin %r, Host %r)", origin, host)
        if connection is not None:
            await connection.close(1008, "this viewer accepts connections from its own page only")

    websock._handle_incoming_message = gated  # noqa: SLF001
    websock._client_connect_cb.insert(0, check)  # noqa: SLF001 - first: before viser registers the client's handlers


def remote_warning(host: str, port: int) -> str | None:
    """The warning to print when the viewer serves on ``host`` beyond loopback, else ``None``."""
    if is_loopback(host):
        return None
    where = "every interface of this machine" if host in ("0.0.0.0", "", "::") else host
    return (f"warning: serving on {where}: anyone who can reach port {port} of this machine can open the page "
            "and drive the viewer (move the goal, switch policies, reset the robot); there is no login. "
            f"Serve on {DEFAULT_HOST} (the default) and use ssh -L {port}:localhost:{port} to reach it from another machine.")

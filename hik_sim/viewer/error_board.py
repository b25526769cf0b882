"""`ErrorBoard`: errors the viewer caught, logged to the terminal and summed up for the page.

The web viewer never stops on an error in its control loop or in a callback of the page: it
records it here and goes on. The terminal gets the traceback the first time an error is seen and a
count every :data:`RELOG_EVERY` repeats after (a :class:`~hik_sim.errors.HikError`: its message alone) (a failing step repeats 50 times a second); the page
gets one line for the latest error, for :data:`SHOWN_FOR` seconds after it last happened. The page
shows the message of a :class:`~hik_sim.errors.HikError` (written for users), and only the type of any
other exception: its text can hold paths and internals, and whoever reaches the page may not be the
operator.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from hik_sim.errors import HikError

__all__ = ["ErrorBoard", "RELOG_EVERY", "SHOWN_FOR"]

RELOG_EVERY = 500
"""Repeats of one error between two lines in the terminal (10 s of a failing 50 Hz loop)."""

SHOWN_FOR = 10.0
"""Seconds the page keeps showing an error after it last happened [s]."""

log = logging.getLogger("hik_sim.viewer")


class ErrorBoard:
    """Thread-safe record of the errors caught in the viewer.

    Args:
        clock: the wall clock, in seconds (a test passes its own).
    """

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, str], int] = {}
        self._latest: tuple[str, int, float] | None = None  # page text, repeats, clock time
        self.total = 0
        """Errors caught so far."""

    def report(self, context: str, exc: BaseException, show: bool = True) -> None:
        """Record ``exc``, caught while doing ``context`` (e.g. ``"the control step failed"``), and log it.

        ``show=False``: counted and logged, not put on the page (which says it in a place of its own).
        """
        key = (context, type(exc).__name__, str(exc))
        shown = f"{context}: {exc}" if isinstance(exc, HikError) else f"{context}: {type(exc).__name__} (details in the viewer's terminal)"
        with self._lock:
            count = self._counts.get(key, 0) + 1
            self._counts[key] = count
            if show:
                self._latest = (shown, count, self._clock())
            self.total += 1
        if count == 1:
            log.error("%s: %s: %s (the viewer goes on)", context, type(exc).__name__, exc,
                      exc_info=None if isinstance(exc, HikError) else exc)  # a HikError's message says it all
        elif count % RELOG_EVERY == 0:
            log.error("%s: %s: %s (%d times so far)", context, type(exc).__name__, exc, count)

    def page_text(self) -> str | None:
        """The page's line for the latest error while it is recent, else ``None``."""
        with self._lock:
            latest = self._latest
            if latest is None:
                return None
            if self._clock() - latest[2] > SHOWN_FOR:
                self._latest = None
                return None
        text, count, _ = latest
        return text + (f" ({count} times)" if count > 1 else "")

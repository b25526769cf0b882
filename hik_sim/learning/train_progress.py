"""What a training run shows while it runs, and when it validates by the clock.

:class:`TrainingProgress` is the progress bar: its fraction is whichever of the step budget and the time budget
(``--minutes``) is nearer its end, and its ETA is the time to that end (the remaining steps at this run's rate, or
the remaining minutes), so a ``--minutes`` run fills its bar in its minutes instead of stopping at 24/2000 steps.
:class:`ValidationClock` says when a validation is due by time as well as by steps, so a short timed run still
draws its validation curve.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["TrainingProgress", "ValidationClock", "budget_fraction", "eta_seconds", "clock"]


def budget_fraction(step: int, steps: int, elapsed_s: float, budget_s: float) -> float:
    """How much of the run is done, in [0, 1]: the larger of the steps' and the time's share of their budgets."""
    return min(1.0, max(step / steps, elapsed_s / budget_s if math.isfinite(budget_s) else 0.0))


def eta_seconds(step: int, steps: int, elapsed_s: float, budget_s: float, steps_this_run: int, seconds_this_run: float) -> float:
    """Seconds to the end of the run: to the last step at this run's rate, or to the end of the time budget,
    whichever comes first (``inf`` before a step-budget run has a rate)."""
    by_time = max(0.0, budget_s - elapsed_s)
    rate = steps_this_run / seconds_this_run if seconds_this_run > 0 and steps_this_run > 0 else 0.0
    by_steps = (steps - step) / rate if rate > 0 else math.inf
    return min(by_time, by_steps)


def clock(seconds: float) -> str:
    """``seconds`` as ``m:ss`` or ``h:mm:ss`` (``?`` when unknown)."""
    if not math.isfinite(seconds):
        return "?"
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class TrainingProgress:
    """A tqdm bar over the run's budget (per mille), with step, elapsed time, ETA, rate and the last validation.

    Args:
        steps: the step budget.
        budget_s: the time budget [s] (``inf``: none).
        first_step: the step a resumed run starts at (0 otherwise).
        elapsed_before: training time before this run [s].
        show: draw the bar (``False``: every method does nothing visible).
        desc: the bar's label.
    """

    TOTAL = 1000

    def __init__(self, steps: int, budget_s: float, first_step: int, elapsed_before: float, show: bool, desc: str) -> None:
        from tqdm.auto import tqdm

        self.steps, self.budget_s, self.first_step, self.elapsed_before = steps, budget_s, first_step, elapsed_before
        self.validation = ""
        self._bar: Any = tqdm(total=self.TOTAL, disable=not show, desc=desc, dynamic_ncols=True, bar_format=self._format(""))
        self._shown = 0

    @staticmethod
    def _format(text: str) -> str:  # the status is literal text in the format (tqdm puts ", " before a postfix)
        return "{desc}: {percentage:3.0f}%|{bar}| " + text.replace("{", "{{").replace("}", "}}")

    def text(self, step: int, elapsed_s: float) -> str:
        """The bar's text after ``step`` at ``elapsed_s`` of training (this run's and before) [s]."""
        seconds_this_run = elapsed_s - self.elapsed_before
        steps_this_run = step - self.first_step
        eta = eta_seconds(step, self.steps, elapsed_s, self.budget_s, steps_this_run, seconds_this_run)
        budget = f"/{clock(self.budget_s)}" if math.isfinite(self.budget_s) else ""
        rate = f"{steps_this_run / seconds_this_run:.1f} step/s" if seconds_this_run > 0 and steps_this_run else "- step/s"
        parts = [f"step {step:,}/{self.steps:,}", f"{clock(elapsed_s)}{budget}", f"ETA {clock(eta)}", rate]
        return ", ".join(parts + ([self.validation] if self.validation else []))

    def update(self, step: int, elapsed_s: float) -> None:
        """Move the bar to ``step`` at ``elapsed_s`` [s] (redrawn at tqdm's own pace)."""
        done = int(self.TOTAL * budget_fraction(step, self.steps, elapsed_s, self.budget_s))
        self._bar.bar_format = self._format(self.text(step, elapsed_s))
        self._bar.update(max(0, done - self._shown))
        self._shown = max(self._shown, done)

    def validated(self, metrics: dict[str, float], lr: float) -> None:
        """Show a validation's errors with the bar from now on."""
        self.validation = (f"val {metrics['pos_mean_mm']:.1f} mm {metrics['rot_mean_deg']:.1f}° "
                           f"ok {100 * metrics['success_5mm_2deg']:.1f}%, lr {lr:.1e}")

    def close(self, step: int, elapsed_s: float, finished: bool) -> None:
        """Draw the last state (full when the run ``finished`` its budget) and close the bar."""
        self._bar.bar_format = self._format(self.text(step, elapsed_s))
        if finished:
            self._bar.update(self.TOTAL - self._shown)
            self._shown = self.TOTAL
        self._bar.refresh()
        self._bar.close()


class ValidationClock:
    """When a validation is due by time (:attr:`hik_sim.learning.train_options.TrainConfig.eval_seconds`).

    Args:
        every_s: seconds between validations, or ``None`` for automatic: a tenth of ``budget_s``, but at
            least three times the last validation's own time; none when ``budget_s`` is infinite.
        budget_s: the run's time budget [s].
        now: the training clock now [s].
    """

    def __init__(self, every_s: float | None, budget_s: float, now: float) -> None:
        self.every_s, self.budget_s = every_s, budget_s
        self.last_at, self.last_cost = now, 0.0

    def interval(self) -> float:
        """Seconds from one validation to the next by time (``inf``: by steps only)."""
        if self.every_s is not None:
            return self.every_s
        if not math.isfinite(self.budget_s):
            return math.inf
        return max(self.budget_s / 10, 3 * self.last_cost)

    def due(self, now: float) -> bool:
        """Whether a validation is due by time at ``now`` [s]."""
        return now - self.last_at >= self.interval()

    def done(self, started: float, finished: float, until: float | None = None) -> None:
        """Record a validation that ran from ``started`` to ``finished`` [s, the training clock]; the next is
        counted from ``until`` (the end of what followed it: writing the curve), by default ``finished``."""
        self.last_at, self.last_cost = finished if until is None else until, finished - started

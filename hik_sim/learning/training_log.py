"""The trainer's validation curve, written as it goes: CSV and PNG beside the checkpoint, TensorBoard on request.

For a checkpoint ``runs/train/irb120/harmoatt.pt`` the curve is ``harmoatt.curve.csv`` (one row per
validation: step, elapsed [s], loss, β, fusion entropy, position and rotation error statistics
[mm, °], success rates) and ``harmoatt.curve.png`` (validation error against steps and against
wall-clock minutes), both rewritten whole and atomically after every validation (the PNG at most
every ``plot_every_s`` seconds, and always at the end), so a run can be watched while it trains
and a resumed run's curve holds its whole history. With a TensorBoard directory every validation is
also a scalar event (``tensorboard --logdir DIR``); that needs the ``tensorboard`` package.
"""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path
from typing import Any

from hik_sim.atomic import write_atomically
from hik_sim.errors import OutputError

__all__ = ["TrainingLog", "curve_paths"]

CURVE_COLUMNS: tuple[str, ...] = ("step", "elapsed_s", "loss", "beta", "entropy", "pos_mean_mm", "pos_median_mm", "pos_p95_mm",
                                  "rot_mean_deg", "rot_median_deg", "rot_p95_deg", "success_5mm_2deg", "success_10mm_20deg")
"""The CSV's columns, in order (metrics a validation did not report are left empty)."""


def curve_paths(checkpoint: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The CSV and PNG paths of a checkpoint's curve: ``<stem>.curve.csv``, ``<stem>.curve.png`` beside it."""
    path = Path(checkpoint)
    return path.with_suffix(".curve.csv"), path.with_suffix(".curve.png")


class TrainingLog:
    """Writes a training run's validation history as CSV, PNG and (optionally) TensorBoard scalars.

    Args:
        checkpoint: the run's checkpoint path (the curve goes beside it), or ``None`` for none.
        tensorboard: a TensorBoard log directory, or ``None``.
        title: the plot's title (e.g. ``"irb120 harmoatt"``).
        plot_every_s: least time between two PNG redraws [s] (the last validation always draws).

    Raises:
        OutputError: ``tensorboard`` is given but the ``tensorboard`` package is not installed, or the folder
            cannot be made (a file, or under one).
    """

    def __init__(self, checkpoint: str | os.PathLike[str] | None, tensorboard: str | os.PathLike[str] | None = None, title: str = "",
                 plot_every_s: float = 30.0) -> None:
        self.csv_path: Path | None = None
        self.png_path: Path | None = None
        if checkpoint is not None:
            self.csv_path, self.png_path = curve_paths(checkpoint)
        self.title, self.plot_every_s = title, plot_every_s
        self._plotted_at = -float("inf")
        self._written = 0  # history rows already sent to TensorBoard
        self._writer: Any = None
        if tensorboard is not None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise OutputError("--tensorboard needs the tensorboard package: pip install tensorboard "
                                  "(the CSV and PNG curves beside the checkpoint need nothing)") from None
            try:
                Path(tensorboard).mkdir(parents=True, exist_ok=True)
                self._writer = SummaryWriter(log_dir=str(tensorboard))
            except OSError as exc:
                raise OutputError(f"cannot write tensorboard {tensorboard}: {exc.strerror or exc}; give a folder that can "
                                  "be made and written") from None

    def update(self, history: list[dict[str, float]], final: bool = False) -> None:
        """Write the curve of ``history`` (one dict per validation, oldest first); ``final``: the run's last.

        Raises:
            OutputError: a file cannot be written (a full disk), naming it.
        """
        if not history:
            return
        if self.csv_path is not None and self.png_path is not None:  # both or neither
            csv_path, png_path = self.csv_path, self.png_path
            try:
                write_atomically(csv_path, lambda path: self._write_csv(path, history))
                if final or time.monotonic() - self._plotted_at >= self.plot_every_s:
                    write_atomically(png_path, lambda path: self._plot(path, history))
                    self._plotted_at = time.monotonic()
            except OSError as exc:
                raise OutputError(f"cannot write the validation curve {csv_path.parent}/{csv_path.stem}.*: "
                                  f"{exc.strerror or exc}") from None
        if self._writer is not None:
            for row in history[self._written:]:
                for key in CURVE_COLUMNS[2:]:
                    if key in row:
                        self._writer.add_scalar(f"validation/{key}" if key not in ("loss", "beta", "entropy") else f"train/{key}",
                                                float(row[key]), int(row["step"]))
            self._written = len(history)
            self._writer.flush()

    def close(self) -> None:
        """Close the TensorBoard writer (the files are complete after every :meth:`update`)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    @staticmethod
    def _write_csv(path: Path, history: list[dict[str, float]]) -> None:
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(CURVE_COLUMNS)
            for row in history:
                writer.writerow(["" if key not in row else (int(row[key]) if key == "step" else f"{float(row[key]):.6g}")
                                 for key in CURVE_COLUMNS])

    def _plot(self, path: Path, history: list[dict[str, float]]) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        steps = [row["step"] for row in history]
        minutes = [row["elapsed_s"] / 60 for row in history]
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
        for ax, x, label in ((axes[0], steps, "step"), (axes[1], minutes, "wall-clock time [min]")):
            ax.plot(x, [row["pos_mean_mm"] for row in history], label="position mean [mm]")
            ax.plot(x, [row["rot_mean_deg"] for row in history], label="rotation mean [°]")
            ax.set_yscale("log")
            ax.set_xlabel(label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
        axes[2].plot(steps, [100 * row["success_5mm_2deg"] for row in history], label="5 mm & 2°")
        axes[2].plot(steps, [100 * row["success_10mm_20deg"] for row in history], label="10 mm & 20°")
        axes[2].set_xlabel("step")
        axes[2].set_ylabel("validation success [%]")
        axes[2].set_ylim(0, 100)
        axes[2].grid(True, alpha=0.3)
        axes[2].legend()
        fig.suptitle(f"{self.title} validation, step {int(steps[-1]):,}".strip())
        fig.tight_layout()
        fig.savefig(path, format="png", dpi=90)
        plt.close(fig)

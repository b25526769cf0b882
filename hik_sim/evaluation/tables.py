"""The evaluator's tables (Markdown, CSV) and plots, from its report (``report.json``'s content)."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["first_calls_text", "summary_markdown", "write_csv", "write_plots"]


def _seconds(value: float | None) -> str:
    """A time for a table [s]; "—" where there is none (no episode reached its goal)."""
    return "—" if value is None else f"{value:.2f}"


def _failures(row: dict[str, Any]) -> str:
    """Solver failures, "—" for a policy whose solver cannot fail (a network alone)."""
    value = row.get("solver_failures")
    return "—" if value is None else str(value)


def _rotation(row: dict[str, Any]) -> str:
    """Track's rotation RMS [°], said to be an arm's that never moved where none of the episodes moved it:
    the goal keeps the start's orientation, so a still arm's 0° is no achievement."""
    text = f"{row['rot_rms_deg']:.3f}"
    if row.get("episodes_never_moved", 0) == row["episodes"]:
        return f"{text} (arm never moved)"
    if row.get("episodes_never_moved", 0):
        return f"{text} ({row['episodes_never_moved']} of {row['episodes']} episodes never moved)"
    return text


def first_calls_text(report: dict[str, Any]) -> str:
    """The line that gives each policy's first calls (compilation, caches), kept out of the latencies."""
    parts = []
    for name, entry in report["policies"].items():
        first = entry.get("first_call_s") or {}
        if first:
            batched, single = first.get("batched"), first.get("controller")
            parts.append(f"{name} {batched or 0.0:.3f} / {single or 0.0:.3f} s")
    if not parts:
        return ""
    return ("First calls (compilation, caches; untimed, not in the latencies above), batched / controller: "
            + ", ".join(parts) + ".")


def summary_markdown(report: dict[str, Any], pictures: bool = True) -> str:
    """The run's tables, as Markdown (``pictures``: with the plots' and videos' image lines)."""
    from hik_sim.evaluation.metrics import limit_violations_text

    lines = [f"# Evaluation of {report['robot']['name']} ({report['robot']['dof']} DOF)", "",
             "## IK accuracy (open loop)", "",
             "| policy | pos mean / median / p95 [mm] | rot mean / median / p95 [°] | success 5 mm & 2° | 10 mm & 20° | ms / target |",
             "|---|---|---|---:|---:|---:|"]
    for name, e in report["policies"].items():
        m = e["ik"]
        lines.append(f"| {name} | {m['pos_mean_mm']:.3f} / {m['pos_median_mm']:.3f} / {m['pos_p95_mm']:.3f} "
                     f"| {m['rot_mean_deg']:.3f} / {m['rot_median_deg']:.3f} / {m['rot_p95_deg']:.3f} "
                     f"| {100 * m['success_5mm_2deg']:.1f} % | {100 * m['success_10mm_20deg']:.1f} % | {m['ms_per_target']:.3f} |")
    if any("reach" in e for e in report["policies"].values()):
        lines += ["", "## Reach", "", "| policy | episodes | success (5 mm & 2° held) | 10 mm & 20° | time to reach [s] "
                  "| IK latency median / p95 [ms] | per solve median / p95 [ms] | limit violations (steps; largest [mrad]) | solver failures |",
                  "|---|---:|---:|---:|---:|---|---|---:|---:|"]
        for name, e in report["policies"].items():
            if "reach" in e:
                m = e["reach"]
                lines.append(f"| {name} | {m['episodes']} | {100 * m['success_5mm_2deg']:.0f} % | {100 * m['success_10mm_20deg']:.0f} % "
                             f"| {_seconds(m['time_to_reach_s'])} | {m['ik_latency_median_ms']:.2f} / {m['ik_latency_p95_ms']:.2f} "
                             f"| {m['ik_solve_median_ms']:.2f} / {m['ik_solve_p95_ms']:.2f} | {limit_violations_text(m)} | {_failures(m)} |")
    if any("track" in e for e in report["policies"].values()):
        lines += ["", f"## Track ({report['config']['trajectory']}, {report['config']['speed']} m/s; errors after the first second)", "",
                  "| policy | episodes | position RMS / p95 / max [mm] | rotation RMS [°] | IK latency median [ms] "
                  "| limit violations (steps; largest [mrad]) | solver failures |",
                  "|---|---:|---|---:|---:|---:|---:|"]
        for name, e in report["policies"].items():
            if "track" in e:
                m = e["track"]
                lines.append(f"| {name} | {m['episodes']} | {m['pos_rms_mm']:.3f} / {m['pos_p95_mm']:.3f} / {m['pos_max_mm']:.3f} "
                             f"| {_rotation(m)} | {m['ik_latency_median_ms']:.2f} | {limit_violations_text(m)} | {_failures(m)} |")
    first = first_calls_text(report)
    if first:
        lines += ["", first]
    shown = [f for f in report["files"] if f.endswith((".png", ".gif"))] if pictures else []
    if shown:
        lines += ["", "## Plots and videos", ""] + [f"![{f}]({f})" for f in shown]
    lines += ["", f"Run time {report['seconds']:.0f} s on {report['platform']}, {report['date']}."]
    return "\n".join(lines) + "\n"


def write_csv(report: dict[str, Any], path: Path) -> None:
    """``metrics.csv``: one row per policy, part and metric."""
    rows = []
    for policy, entry in report["policies"].items():
        for part in ("ik", "reach", "track"):
            if part in entry:
                rows += [{"policy": policy, "part": part, "metric": k, "value": "" if v is None else v} for k, v in entry[part].items()]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["policy", "part", "metric", "value"])
        writer.writeheader()
        writer.writerows(rows)


def write_plots(curves: dict[str, dict[str, Any]], out: Path) -> list[str]:
    """``ik_errors.png`` (the errors' distributions) and ``<env>_error.png`` (each policy's first episode); returns the files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    def log_axis(axis: Any) -> None:
        """Plain decimal labels on a log axis (``0.01``, ``1``, ``100``): mathtext's ``10^x`` labels take seconds to lay out."""
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_minor_formatter(NullFormatter())

    files = []
    if curves["ik"]:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for name, (pos, rot) in curves["ik"].items():
            for ax, values, scale in ((axes[0], pos, 1000), (axes[1], rot, 180 / math.pi)):
                v = np.sort(np.maximum(values * scale, 1e-6))
                ax.plot(v, np.arange(1, len(v) + 1) / len(v), label=name)
        for ax, label, tol in ((axes[0], "position error [mm]", 5.0), (axes[1], "rotation error [°]", 2.0)):
            ax.set_xscale("log")
            log_axis(ax.xaxis)
            ax.axvline(tol, color="grey", linestyle="--", linewidth=1)
            ax.set_xlabel(label)
            ax.set_ylabel("fraction of targets")
            ax.grid(alpha=0.3)
        axes[0].legend()
        fig.suptitle("IK accuracy: cumulative distribution of errors (dashed: 5 mm, 2°)")
        fig.tight_layout()
        fig.savefig(out / "ik_errors.png", dpi=110)
        plt.close(fig)
        files.append("ik_errors.png")
    for env in ("reach", "track"):
        if not curves[env]:
            continue
        fig, ax = plt.subplots(figsize=(8, 3.5))
        for name, episode in curves[env].items():
            ax.plot(episode.time, np.maximum(1000 * episode.pos_err, 1e-4), label=name)
        ax.set_yscale("log")
        log_axis(ax.yaxis)
        ax.set_xlabel("time [s]")
        ax.set_ylabel("position error [mm]")
        ax.axhline(5.0, color="grey", linestyle="--", linewidth=1)
        ax.grid(alpha=0.3)
        ax.legend()
        ax.set_title(f"{env.capitalize()}: position error over the first episode")
        fig.tight_layout()
        fig.savefig(out / f"{env}_error.png", dpi=110)
        plt.close(fig)
        files.append(f"{env}_error.png")
    return files

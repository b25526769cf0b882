"""The attention study's statistics and what README and docs say of it, from its record alone.

``benchmarks/attention_ablation.py`` trains and measures the runs, one row each in
``benchmarks/results/attention_ablation/attention_ablation.json``; this script turns the rows into
``attention_ablation.md`` (mean ± 95 % t-interval over seeds per robot × model, paired differences of each control
against ``harmoatt`` on the same robot and seed, fusion use) and the record's derived fields, and gives the lines the
docs quote (:func:`headline`, :func:`paper_rows`; a test checks that the docs hold them verbatim).

Usage::

    python benchmarks/attention_summary.py          # rewrite attention_ablation.md from the record
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "attention_ablation"
ROBOTS = ("talos", "romeo", "icub", "g1", "jvrc1", "irb120", "panda")
ARMS = ("harmoatt", "harmoatt_no_attention", "harmoatt_max_entropy", "harmoatt_dense", "harmoatt_dense_no_attention",
        "cycleik", "cycleik_our_recipe", "mlp")
TEST_SEED = 2024
T_95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
"""Two-sided 95 % quantiles of Student's t by degrees of freedom (1.96 beyond)."""


def interval(values: list[float]) -> tuple[float, float]:
    """Mean and half-width of the 95 % t-interval (0 half-width for one value)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, float("nan")
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, T_95.get(n - 1, 1.96) * sd / math.sqrt(n)


def paired_differences(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per control arm: the differences control − ``harmoatt`` on the same robot and seed, pooled over robots, as
    (mean, 95 % t-interval half-width) of position error [mm], rotation error [°] and success [points], and n pairs.
    Positive errors: the control misses by more (the attention network is better)."""
    base = {(r["robot"], r["seed"]): r for r in rows if r["model"] == "harmoatt"}
    out: dict[str, dict[str, Any]] = {}
    for arm in ARMS[1:]:
        pairs = [(r, base[(r["robot"], r["seed"])]) for r in rows if r["model"] == arm and (r["robot"], r["seed"]) in base]
        if pairs:
            out[arm] = {"n": len(pairs), "robots": sorted({a["robot"] for a, _ in pairs}),
                        "pos_mean_mm": interval([a["pos_mean_mm"] - b["pos_mean_mm"] for a, b in pairs]),
                        "rot_mean_deg": interval([a["rot_mean_deg"] - b["rot_mean_deg"] for a, b in pairs]),
                        "success_points": interval([100 * (a["success_5mm_2deg"] - b["success_5mm_2deg"]) for a, b in pairs])}
    return out


def fusion_use(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per arm with attention (the no-attention controls have none), over its trained networks' blocks: how many blocks,
    in how many one branch holds ≥ 95 % of the weight for at least 95 % of the test targets (a fixed choice, not a
    fusion), in how many the same branch leads for at least 95 % of the targets, and the blocks' mean entropy [nats]
    (ln 3 = 1.10 for equal weights)."""
    out: dict[str, dict[str, float]] = {}
    for arm in ARMS:
        blocks = [b for r in rows if r["model"] == arm and r.get("fusion") for b in r["fusion"]]
        if blocks and not arm.endswith("no_attention"):
            out[arm] = {"blocks": len(blocks), "one_branch_blocks": sum(b["one_branch_95"] >= 0.95 for b in blocks),
                        "same_leader_blocks": sum(max(b["dominates"].values()) >= 0.95 for b in blocks),
                        "entropy_mean_nats": sum(b["entropy_mean_nats"] for b in blocks) / len(blocks)}
    return out


def _pm(figure: tuple[float, float], digits: int) -> str:
    mean, half = figure
    return f"{mean:+.{digits}f}" + ("" if math.isnan(half) else f" ± {half:.{digits}f}")


def headline(rows: list[dict[str, Any]]) -> list[str]:
    """The study's result as the README and docs state it, one line per comparison (control − ``harmoatt``, paired by
    robot and seed, mean ± 95 % t-interval): the attention removed, CycleIK as published and with our recipe, the MLP,
    the ``dense`` trunk, the maximising-entropy loss; then how often the fusion picks one branch. A test checks that the docs hold these lines verbatim."""
    differences = paired_differences(rows)
    names = {"harmoatt_no_attention": "without the attention (same network)", "cycleik": "CycleIK as published",
             "cycleik_our_recipe": "CycleIK with our recipe", "mlp": "the parameter-matched MLP",
             "harmoatt_dense": "the `dense` trunk", "harmoatt_max_entropy": "maximising entropy (λ < 0)"}
    lines = []
    for arm, words in names.items():
        if arm in differences:
            d = differences[arm]
            lines.append(f"- {words} − HarmoAtt-IK: {_pm(d['pos_mean_mm'], 2)} mm position error, "
                         f"{_pm(d['success_points'], 1)} points of success (n = {d['n']}, {len(d['robots'])} robots)")
    use = fusion_use(rows)
    arms = {"harmoatt": "HarmoAtt-IK", "harmoatt_max_entropy": "maximising entropy", "harmoatt_dense": "the `dense` trunk"}
    shown = [(words, use[arm]) for arm, words in arms.items() if arm in use]
    if shown:
        lines.append("- fusion blocks where one branch takes ≥ 95 % of the weight for ≥ 95 % of the targets (a fixed "
                     "choice, not a fusion): " + ", ".join(f"{w} {u['one_branch_blocks']} of {u['blocks']}" for w, u in shown)
                     + "; where the same branch leads for ≥ 95 % of the targets: "
                     + ", ".join(f"{u['same_leader_blocks']} of {u['blocks']}" for _, u in shown)
                     + "; mean entropy " + ", ".join(f"{u['entropy_mean_nats']:.2f}" for _, u in shown) + " of 1.10 nats")
    return lines


def summary(rows: list[dict[str, Any]], minutes: float) -> str:
    """Markdown: per robot × model mean ± 95 % CI over seeds; paired differences against ``harmoatt``; fusion use."""
    robots = [r for r in ROBOTS if any(row["robot"] == r for row in rows)]
    means = []
    for robot in robots:
        for arm in ARMS:
            mine = [r for r in rows if r["robot"] == robot and r["model"] == arm]
            if not mine:
                continue
            cells = []
            for key, scale in (("pos_mean_mm", 1), ("rot_mean_deg", 1), ("success_5mm_2deg", 100)):
                m, h = interval([scale * r[key] for r in mine])
                cells.append(f"{m:.2f} ± {h:.2f}" if not math.isnan(h) else f"{m:.2f}")
            means.append([robot, arm, len(mine), f"{mine[0]['params']:,}", f"{round(sum(r['steps'] for r in mine) / len(mine)):,}", *cells])
    pairs = []
    for arm, figures in paired_differences(rows).items():
        pairs.append([arm, figures["n"], *(f"{m:+.2f} ± {h:.2f}" if not math.isnan(h) else f"{m:+.2f}" for m, h in
                                           (figures["pos_mean_mm"], figures["rot_mean_deg"], figures["success_points"]))])
    fusion = []
    for robot in robots:
        for arm in ARMS:
            mine = [r for r in rows if r["robot"] == robot and r["model"] == arm and r.get("fusion")]
            if not mine or arm.endswith("no_attention"):
                continue
            for k in range(len(mine[0]["fusion"])):
                blocks = [r["fusion"][k] for r in mine]
                dom = " / ".join(f"{100 * sum(b['dominates'][x] for b in blocks) / len(blocks):.0f}" for x in ("channel", "spatial", "cross"))
                one = 100 * sum(b["one_branch_95"] for b in blocks) / len(blocks)
                ent = sum(b["entropy_mean_nats"] for b in blocks) / len(blocks)
                tmin = min(b["temperature"]["min"] for b in blocks)
                tmax = max(b["temperature"]["max"] for b in blocks)
                fusion.append([robot, arm, k + 1, dom, f"{one:.0f} %", f"{ent:.2f}", f"{tmin:.2f}–{tmax:.2f}"])
    return "\n".join([
        f"# Attention ablation: {minutes:g} calibrated minutes a run, test targets seed {TEST_SEED}", "",
        "Mean ± 95 % t-interval over seeds (n = seeds). Command: `python benchmarks/attention_summary.py`.", "",
        harness.markdown_table(["robot", "model", "n", "params", "steps", "pos mean [mm]", "rot mean [°]", "success 5 mm & 2° [%]"],
                               means, "llrrrlll"),
        "", "## Paired differences (control − harmoatt, same robot and seed), pooled over robots", "",
        "Positive: the control's error is larger (the attention network is better). n = robot × seed pairs.", "",
        harness.markdown_table(["control", "n", "Δ pos mean [mm]", "Δ rot mean [°]", "Δ success [points]"], pairs, "lrlll"),
        "", "## Fusion weights over the test targets (mean over seeds)", "",
        "Share of targets each branch dominates (channel / spatial / cross), share where one branch holds ≥ 95 %, "
        "mean entropy (of ln 3 = 1.10 nats), temperature range.", "",
        harness.markdown_table(["robot", "model", "block", "dominates c / s / x", "one branch ≥ 95 %", "entropy [nats]", "τ min–max"],
                               fusion, "llrlrrl"),
        "", "## As the HarmoAtt-IK paper reports it", "",
        "Largest reduction over the robots of (control − harmoatt) / control in mean position and rotation error, largest "
        "success gain, each paired by seed (mean ± 95 % t-interval over seeds; positive: HarmoAtt-IK is better).", "",
        "| comparison | position error reduction | rotation error reduction | success gain |",
        "|---|---:|---:|---:|", *paper_rows(rows),
    ]) + "\n"


PAPER_CONTROLS = {"cycleik": "CycleIK as published", "cycleik_our_recipe": "CycleIK with our recipe",
                  "harmoatt_no_attention": "the same network without the attention"}
"""The controls of the paper-style table: the paper's baseline, the baseline at our recipe, the attention removed."""


def reductions(rows: list[dict[str, Any]], control: str) -> dict[str, dict[str, tuple[float, float]]]:
    """Per robot, HarmoAtt-IK against ``control`` as the HarmoAtt-IK paper reports it, paired by seed: position and
    rotation error reduction (control − harmoatt) / control [%] and success gain [points], mean ± 95 % t-interval
    over seeds. Positive: HarmoAtt-IK is better."""
    base = {(r["robot"], r["seed"]): r for r in rows if r["model"] == "harmoatt"}
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for robot in ROBOTS:
        pairs = [(r, base[(robot, r["seed"])]) for r in rows
                 if r["robot"] == robot and r["model"] == control and (robot, r["seed"]) in base]
        if pairs:
            out[robot] = {"pos": interval([100 * (c["pos_mean_mm"] - h["pos_mean_mm"]) / c["pos_mean_mm"] for c, h in pairs]),
                          "rot": interval([100 * (c["rot_mean_deg"] - h["rot_mean_deg"]) / c["rot_mean_deg"] for c, h in pairs]),
                          "success": interval([100 * (h["success_5mm_2deg"] - c["success_5mm_2deg"]) for c, h in pairs]),
                          "n": (len(pairs), 0.0)}
    return out


def paper_rows(rows: list[dict[str, Any]]) -> list[str]:
    """The paper-style headline table's rows from the study: for each of :data:`PAPER_CONTROLS`, the largest position
    and rotation error reduction and success gain over the robots (the abstract's "up to"), each with its robot, its
    seeds' interval and n, as Markdown table rows."""
    lines = []
    for control, words in PAPER_CONTROLS.items():
        per_robot = reductions(rows, control)
        if not per_robot:
            continue
        cells = []
        for key, unit in (("pos", " %"), ("rot", " %"), ("success", " pts")):
            robot = max(per_robot, key=lambda r: per_robot[r][key][0])
            cells.append(f"{_pm(per_robot[robot][key], 1)}{unit} ({robot}, n = {per_robot[robot]['n'][0]})")
        lines.append(f"| ours, the study: HarmoAtt-IK vs {words} | " + " | ".join(cells) + " |")
    return lines



def write(record_path: Path, markdown_path: Path) -> str:
    """Sort the record's rows, store its paired differences and fusion use, write its Markdown summary; the summary."""
    record = json.loads(record_path.read_text())
    rows = sorted(record["rows"], key=lambda r: (ROBOTS.index(r["robot"]), ARMS.index(r["model"]), r["seed"]))
    record.update(rows=rows, paired_differences=paired_differences(rows), fusion_use=fusion_use(rows))
    temporary = record_path.with_suffix(".json.partial")
    temporary.write_text(json.dumps(record, indent=1))
    temporary.replace(record_path)
    text = summary(rows, record["minutes"])
    markdown_path.write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0], out=str(RESULTS.relative_to(ROOT)))
    args = parser.parse_args(argv)
    folder = Path(args.out)
    print(write(folder / "attention_ablation.json", folder / "attention_ablation.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Does the attention help? HarmoAtt-IK against its controls at equal wall-clock time, several seeds.

Arms (``ARMS``), each trained at the shipped recipe (four answers, the canonical turn with the turn as input and the
limit clamp in training, batch 256, AdamW 3e-3 with warm-up and cosine decay, the composite loss with entropy weight
0.01) unless its row says otherwise, and matched in parameters to the shipped four-answer network (~148 k):

- ``harmoatt``: the paper's description, CycleIK's generator with attention-fusion blocks (``trunk=cycleik``);
- ``harmoatt_no_attention``: the same network, every fusion block's attention replaced by the identity;
- ``harmoatt_max_entropy``: ``harmoatt`` with the entropy term's sign reversed (λ = −0.01: the loss rewards fusion
  weights that mix the branches; the other reading of the paper's "Shannon-entropy term");
- ``harmoatt_dense`` / ``harmoatt_dense_no_attention``: the shipped feature-map trunk with and without attention;
- ``cycleik``: CycleIK's generator as published (its loss, Adam at its rate 2.4e-4, one answer; no turn options:
  CycleIK has none) at the same size;
- ``cycleik_our_recipe``: the same generator with the recipe above (no turn input: the generator reads 7 values);
- ``mlp``: the parameter-matched MLP with the recipe above.

Equal wall-clock time without a quiet machine: each arm's step rate on one thread is measured once per robot in CPU
time (``--calibrate``: the CPU seconds of a 400-step run less a 1-step run's, in this process, which another
process's load barely moves; two ``--calibrate`` processes may share the record) and kept in ``calibration.json``; every run then trains ``minutes × 60 × rate`` steps: the same time for every
arm on a dedicated core, whatever else the machine does meanwhile, and the same steps when a run is resumed in a
later process. Each run is one thread; ``--jobs`` run side by side. The final weights are measured (not the
best validation checkpoint).

Every finished run is one row of ``attention_ablation.json`` (written after each run): robot, model, seed, params,
minutes, steps, and on the fixed test targets (seed 2024, ``--targets``) pos_mean_mm, rot_mean_deg,
success_5mm_2deg, plus, for networks with fusion blocks, each block's fusion statistics over the test targets
(mean weight per branch, the share of targets each branch dominates, the share where one branch holds ≥ 95 % of
the weight, the temperature's range). ``benchmarks/attention_summary.py`` turns the rows into ``attention_ablation.md``
(mean ± 95 % t-interval over seeds per robot × model, the paired differences of each control against ``harmoatt``)
and the lines the docs quote; this script calls it after its runs.

Usage::

    python benchmarks/attention_ablation.py --calibrate                     # step rates, once per machine kind
    python benchmarks/attention_ablation.py --jobs 2 --stop-after 90        # train what is missing, stop launching after 90 min
    python benchmarks/attention_summary.py                                  # tables from the record only
    python benchmarks/attention_ablation.py --quick                         # seconds: a smoke test (own folder)
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from attention_summary import ARMS, ROBOTS, TEST_SEED, write  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "attention_ablation"
RUNS = ROOT / "runs" / "attention_ablation"
MINUTES = 3.0
SEEDS = (0, 1, 2)
TURN = ("canonical_turn=true", "clamp_in_training=true", "turn_input=true")
RECIPE = ("--batch", "256", "--lr", "3e-3", "--entropy-weight", "0.01")
DENSE = ("trunk=dense", "channels=16", "positions=8", "feed_forward=256", "embed_hidden=64")


def shipped_parameters(joints: int) -> int:
    """Parameters of the shipped recipe's four-answer HarmoAtt-IK (dense trunk, turn input) for ``joints`` free joints."""
    from hik_sim.learning.models import build_model, parameter_count

    options: dict[str, Any] = {k: _value(v) for k, v in (o.split("=") for o in DENSE)}
    lower, upper = -torch.ones(joints), torch.ones(joints)
    return parameter_count(build_model("harmoatt", lower, upper, hypotheses=4, position_inputs=5, **options))


def _value(text: str) -> Any:
    return int(text) if text.isdigit() else text


def arm_arguments(arm: str, joints: int) -> list[str]:
    """The trainer arguments of one arm for a robot with ``joints`` free joints (sizes matched to the shipped recipe)."""
    from hik_sim.learning.models import mlp_hidden_for
    from hik_sim.learning.models.cycleik import cycleik_width_for
    from hik_sim.learning.models.harmoatt_cycleik import paper_width_for

    target = shipped_parameters(joints)
    paper = ["trunk=cycleik", f"width={paper_width_for(joints, 4, 5, parameters=target)}", "hypotheses=4", *TURN]
    options: dict[str, tuple[str, list[str], tuple[str, ...]]] = {
        "harmoatt": ("harmoatt", paper, RECIPE),
        "harmoatt_no_attention": ("harmoatt", [*paper, "attention=false"], RECIPE),
        "harmoatt_max_entropy": ("harmoatt", paper, ("--batch", "256", "--lr", "3e-3", "--entropy-weight", "-0.01")),
        "harmoatt_dense": ("harmoatt", [*DENSE, "hypotheses=4", *TURN], RECIPE),
        "harmoatt_dense_no_attention": ("harmoatt", [*DENSE, "hypotheses=4", *TURN, "attention=false"], RECIPE),
        "cycleik": ("cycleik", [f"width={cycleik_width_for(target, joints)}"], ("--batch", "256")),
        "cycleik_our_recipe": ("cycleik", [f"width={cycleik_width_for(target, joints * 4)}", "hypotheses=4",
                                           "canonical_turn=true", "clamp_in_training=true"],
                               (*RECIPE, "--objective", "composite")),
        "mlp": ("mlp", [f"hidden={mlp_hidden_for(target, joints * 4, in_features=9)}", "hypotheses=4", *TURN], RECIPE),
    }
    kind, model_options, flags = options[arm]
    return ["--model", kind, *[a for o in model_options for a in ("--model-option", o)], *flags]




def _joints(robot: str) -> int:
    from hik_sim.robots import get_robot

    return len(get_robot(robot).joint_names)


def _train(robot: str, arm: str, seed: int, out: Path, steps: int, eval_every: int, eval_size: int) -> tuple[float, float]:
    """Train one run in a subprocess (one thread), resuming ``out`` if a periodic checkpoint exists.

    Returns:
        (wall seconds, CPU seconds) of the process.
    """
    command = [sys.executable, "-m", "hik_sim.train", "--robot", robot, *arm_arguments(arm, _joints(robot)), "--seed", str(seed),
               "--device", "cpu", "--eval-every", str(eval_every), "--eval-size", str(eval_size), "--checkpoint-minutes", "1",
               "--no-progress", "--steps", str(steps), "--out", str(out)]
    if out.is_file():
        command += ["--resume", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            log.seek(0)
            raise RuntimeError(f"training {robot}/{arm}/seed {seed} failed ({process.returncode}):\n{log.read().decode()[-3000:]}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def calibrate(robots: list[str], arms: list[str], steps: int, folder: Path, record: Path) -> None:
    """Steps a CPU-second of every arm on every robot, one thread, into ``record`` as each is measured (pairs already
    there are kept; several processes may share the record): the trainer run in this process for ``steps`` steps less
    a run of one step (the normaliser and the final validation cancel), both after a warm-up run of one step, in CPU
    time, which another process's load barely moves."""
    import fcntl

    from hik_sim.learning.train_cli import main as train_main

    torch.set_num_threads(1)
    for robot in robots:
        for arm in arms:
            if arm in _load(record).get("steps_per_second", {}).get(robot, {}):
                continue
            cpu = []
            for n in (1, 1, steps):  # the first run warms this arm's first-call costs up and is not counted
                out = folder / "calibration" / robot / f"{arm}_{n}.safetensors"
                out.parent.mkdir(parents=True, exist_ok=True)
                out.unlink(missing_ok=True)
                argv = ["--robot", robot, *arm_arguments(arm, _joints(robot)), "--seed", "0", "--device", "cpu",
                        "--eval-every", str(10**9), "--eval-size", "100", "--no-progress", "--steps", str(n), "--out", str(out)]
                start = time.process_time()
                with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
                    code = train_main(argv)
                if code != 0:  # stopped early (a signal): the time is not that of the steps asked for
                    raise SystemExit(f"calibration of {robot}/{arm} stopped ({code}); nothing recorded for it")
                cpu.append(time.process_time() - start)
            value = (steps - 1) / max(cpu[2] - cpu[1], 1e-3)
            print(f"  {robot:7s} {arm:28s} {value:7.1f} steps per CPU-second", flush=True)
            record.parent.mkdir(parents=True, exist_ok=True)
            with open(folder / "calibration.lock", "w") as lock:  # beside the runs, not in the record folder
                fcntl.flock(lock, fcntl.LOCK_EX)
                done = _load(record).get("steps_per_second", {})
                done.setdefault(robot, {})[arm] = value
                _save(record, {"command": "python benchmarks/attention_ablation.py --calibrate", "threads": 1,
                               "unit": "optimiser steps per CPU-second of one thread", "calibration_steps": steps,
                               "steps_per_second": done})


@torch.no_grad()
def measure(path: Path, robot: str, targets: int) -> dict[str, Any]:
    """A trained run's test figures and fusion statistics on the test targets (seed 2024)."""
    from hik_sim.evaluation.metrics import evaluate_network
    from hik_sim.kinematics.chain import Chain
    from hik_sim.learning.checkpoint import load_checkpoint
    from hik_sim.learning.data import make_eval_set
    from hik_sim.learning.models import attention_share
    from hik_sim.robots import get_robot

    network, _ = load_checkpoint(path)
    network.eval()
    chain = Chain(get_robot(robot))
    test = make_eval_set(chain, TEST_SEED, targets, network.selection)
    metrics = evaluate_network(network, chain, test)
    row: dict[str, Any] = {"params": sum(p.numel() for p in network.model.parameters()),
                           **{k: metrics[k] for k in ("pos_mean_mm", "pos_median_mm", "rot_mean_deg", "success_5mm_2deg")}}
    share = attention_share(network.model)
    row["attention_parameter_share"] = share["attention_parameter_share"]
    out = network(test.batch.pos.float(), test.batch.quat.float(), choose=False)
    if out.fusion_weights is not None and share["attention_branch_parameters"]:
        row["fusion"] = fusion_statistics(out.fusion_weights, out.temperature)
    return row


def fusion_statistics(weights: torch.Tensor, temperature: torch.Tensor | None) -> list[dict[str, Any]]:
    """Per block: mean weight per branch, the share of inputs each branch dominates (largest weight), the share of inputs
    where one branch holds at least 95 % of the weight, the mean entropy [nats] and the temperature's range.

    Args:
        weights: (B, K, 3) fusion weights (channel, spatial, cross).
        temperature: (B, K) the temperatures.
    """
    from hik_sim.learning.models.harmoatt import BRANCHES

    blocks = []
    for k in range(weights.shape[1]):
        w = weights[:, k].double()
        top = w.argmax(dim=1)
        entropy = -(w.clamp_min(1e-12) * w.clamp_min(1e-12).log()).sum(dim=1)
        block: dict[str, Any] = {
            "mean_weight": {b: float(w[:, i].mean()) for i, b in enumerate(BRANCHES)},
            "dominates": {b: float((top == i).double().mean()) for i, b in enumerate(BRANCHES)},
            "one_branch_95": float((w.amax(dim=1) >= 0.95).double().mean()),
            "entropy_mean_nats": float(entropy.mean()),
        }
        if temperature is not None:
            tau = temperature[:, k].double()
            block["temperature"] = {"min": float(tau.min()), "mean": float(tau.mean()), "max": float(tau.max())}
        blocks.append(block)
    return blocks


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {"rows": []}


def _save(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".json.partial")
    temporary.write_text(json.dumps(record, indent=1))
    temporary.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0], out=str(RESULTS.relative_to(ROOT)))
    parser.set_defaults(out=None)  # None: the record folder, or the quick run's own folder under runs/
    harness.add_robots(parser, ROBOTS[:5])
    parser.add_argument("--models", nargs="+", default=list(ARMS), choices=ARMS, metavar="ARM", help=f"arms: {', '.join(ARMS)} (default every arm)")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS), help=f"training seeds (default {' '.join(map(str, SEEDS))})")
    parser.add_argument("--minutes", type=float, default=MINUTES, help=f"calibrated minutes a run (default {MINUTES:g})")
    parser.add_argument("--targets", type=harness.at_least(1), default=10_000, help=f"test targets (seed {TEST_SEED}; default 10000)")
    parser.add_argument("--jobs", type=harness.at_least(1), default=1, help="runs side by side, one thread each (default 1)")
    parser.add_argument("--stop-after", type=float, default=None, metavar="MIN", help="launch no run after this many minutes")
    parser.add_argument("--calibrate", action="store_true", help="measure every arm's step rate (calibration.json) and stop")
    parser.add_argument("--calibration-steps", type=harness.at_least(2), default=400, help="steps of each calibration run (default 400)")
    harness.add_quick(parser, f"a smoke test: tiny budget, its runs and record in {(RUNS / 'quick').relative_to(ROOT)} "
                              "(with --out: the record there, the runs in its runs/)")
    args = parser.parse_args(argv)
    if unknown := sorted(set(args.robots) - set(ROBOTS)):
        parser.error(f"--robots: the study covers {', '.join(ROBOTS)}, not {', '.join(unknown)}")
    folder = args.out or (RUNS / "quick" if args.quick else RESULTS)
    runs = (Path(args.out) / "runs" if args.out else RUNS / "quick") if args.quick else RUNS
    record_path = folder / "attention_ablation.json"
    calibration_path = folder / "calibration.json"
    if args.calibrate:
        calibrate(args.robots, args.models, args.calibration_steps, runs, calibration_path)
        return 0
    record = _load(record_path)
    record.update({"minutes": args.minutes, "test_seed": TEST_SEED, "test_targets": args.targets,
                   "command": "python benchmarks/attention_ablation.py --jobs 2"})
    if not args.quick and not calibration_path.is_file():
        print(f"no {calibration_path}: run with --calibrate first", file=sys.stderr)
        return 2

    def rates() -> dict[str, dict[str, float]]:
        if args.quick:
            return {r: dict.fromkeys(args.models, 100.0) for r in args.robots}
        return dict(_load(calibration_path)["steps_per_second"])

    done = {(r["robot"], r["model"], r["seed"]) for r in record["rows"]}
    todo = [(robot, arm, seed) for seed in args.seeds for robot in args.robots for arm in args.models
            if (robot, arm, seed) not in done]
    start = time.monotonic()
    lock = threading.Lock()

    def next_job() -> tuple[tuple[str, str, int], float] | None:
        """The first job left whose arm is calibrated (waiting while a calibration still runs), or None."""
        while True:
            if args.stop_after is not None and time.monotonic() - start > 60 * args.stop_after:
                return None
            known = rates()
            with lock:
                if not todo:
                    return None
                for job in todo:
                    if job[1] in known.get(job[0], {}):
                        todo.remove(job)
                        return job, known[job[0]][job[1]]
            time.sleep(30)

    def worker() -> None:
        while (picked := next_job()) is not None:
            (robot, arm, seed), rate = picked
            steps = max(1, round(args.minutes * 60 * rate)) if not args.quick else 20
            out = runs / robot / f"{arm}_seed{seed}.safetensors"
            out.parent.mkdir(parents=True, exist_ok=True)
            try:
                wall, cpu = _train(robot, arm, seed, out, steps, max(steps // 4, 1), 500 if args.quick else 2000)
            except RuntimeError as exc:  # one failed run is reported and left for the next call; the others go on
                print(exc, file=sys.stderr, flush=True)
                continue
            row = {"robot": robot, "model": arm, "seed": seed, "minutes": steps / rate / 60, "steps": steps,
                   "wall_minutes_last_process": wall / 60, "cpu_minutes_last_process": cpu / 60,
                   **measure(out, robot, 500 if args.quick else args.targets)}
            with lock:
                record["rows"].append(row)
                _save(record_path, record)
            print(f"{robot:7s} {arm:28s} seed {seed}: {row['pos_mean_mm']:.2f} mm {row['rot_mean_deg']:.2f}° "
                  f"{100 * row['success_5mm_2deg']:.1f} %  ({wall / 60:.1f} min)", flush=True)

    workers = [threading.Thread(target=worker) for _ in range(args.jobs)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    _save(record_path, record)
    print(write(record_path, folder / "attention_ablation.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

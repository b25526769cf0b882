"""Rewrite the pickled (``.pt``) checkpoints as safetensors, check each answers bit-identically, then delete the ``.pt``.

Every ``<robot>/<name>.pt`` under the package's ``hik_sim/policies/pretrained`` becomes
``<robot>/<name>.safetensors`` (its card ``<name>.json`` kept as written): in place for the networks
the controllers and the evaluator use, in ``benchmarks/checkpoints/<robot>/`` for the seed papers'
baselines and controls (:data:`hik_sim.policies.BENCHMARK_NETWORKS`), the card moved with it. Before
a ``.pt`` is deleted, both files are loaded and must hold equal weights and give bit-identical answers
(every hypothesis, ``solve_all``) on a batch of reachable poses (FK of random configurations). The
index entries move with their networks; a record of every file is written to ``--record``.

    python scripts/convert_checkpoints.py --record benchmarks/results/checkpoint_conversion
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import warnings
from pathlib import Path

import torch

from hik_sim.kinematics.chain import Chain
from hik_sim.learning.checkpoint import convert_checkpoint, load_checkpoint
from hik_sim.learning.data import make_eval_set
from hik_sim.policies import BENCHMARK_NETWORKS, PRETRAINED_DIR
from hik_sim.robots import get_robot

REPO = Path(__file__).resolve().parents[1]


def identical(old: Path, new: Path, robot_name: str, poses: int, seed: int) -> dict[str, object]:
    """Load both files; compare weights and answers on ``poses`` reachable poses of the network's own joints."""
    robot = get_robot(robot_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        before, card_before = load_checkpoint(old, robot)
    after, card_after = load_checkpoint(new, robot)
    weights = before.state_dict(), after.state_dict()
    same_weights = weights[0].keys() == weights[1].keys() and all(
        weights[0][k].dtype == weights[1][k].dtype and torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    targets = make_eval_set(Chain(robot), seed, poses, before.selection).batch
    answers = before.solve_all(targets.pos, targets.quat), after.solve_all(targets.pos, targets.quat)
    return {"cards_equal": card_before == card_after, "weights_equal": bool(same_weights), "poses": poses,
            "answers_bit_identical": bool(torch.equal(answers[0], answers[1])),
            "max_abs_difference_rad": float((answers[0] - answers[1]).abs().max())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pretrained", type=Path, default=PRETRAINED_DIR, help="the package's networks (default: hik_sim's)")
    parser.add_argument("--benchmarks", type=Path, default=REPO / "benchmarks" / "checkpoints", help="where the baselines go")
    parser.add_argument("--poses", type=int, default=512, help="poses each network answers, before and after (default 512)")
    parser.add_argument("--seed", type=int, default=4321)
    parser.add_argument("--record", type=Path, default=None, help="folder for conversion.json and conversion.md")
    args = parser.parse_args(argv)
    index_path, moved_index_path = args.pretrained / "index.json", args.benchmarks / "index.json"
    index = json.loads(index_path.read_text(encoding="utf-8")) if index_path.is_file() else {}
    moved_index = json.loads(moved_index_path.read_text(encoding="utf-8")) if moved_index_path.is_file() else {}
    rows, failed = [], []
    for old in sorted(args.pretrained.glob("*/*.pt")):
        robot_name, name = old.parent.name, old.stem
        moves = name in BENCHMARK_NETWORKS.get(robot_name, ())
        folder = args.benchmarks / robot_name if moves else old.parent
        folder.mkdir(parents=True, exist_ok=True)
        new = folder / f"{name}.safetensors"
        if moves:
            shutil.copy2(old.with_suffix(".json"), new.with_suffix(".json"))
        convert_checkpoint(old, new)
        check = identical(old, new, robot_name, args.poses, args.seed)
        row = {"network": f"{robot_name}/{name}", "to": str(new.relative_to(REPO) if new.is_relative_to(REPO) else new), "pt_bytes": old.stat().st_size,
               "safetensors_bytes": new.stat().st_size, **check}
        rows.append(row)
        if not (check["weights_equal"] and check["answers_bit_identical"] and check["cards_equal"]):
            failed.append(row["network"])
            print(f"NOT identical, kept {old}: {row}", file=sys.stderr)
            continue
        old.unlink()
        if moves:
            old.with_suffix(".json").unlink()
        key = f"{robot_name}/{name}"
        entry = {**index.pop(key, moved_index.pop(key, {})), "path": f"{robot_name}/{name}.safetensors"}
        (moved_index if moves else index)[key] = entry
        print(f"{key:32s} -> {row['to']}  ({row['pt_bytes']:,} -> {row['safetensors_bytes']:,} bytes), identical")
    index_path.write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    if moved_index:
        moved_index_path.write_text(json.dumps(moved_index, indent=2) + "\n", encoding="utf-8")
    if args.record is not None and rows:
        args.record.mkdir(parents=True, exist_ok=True)
        command = "python scripts/convert_checkpoints.py" + (f" --record {args.record}" if args.record else "")
        record = {"command": command, "torch": torch.__version__, "poses": args.poses, "seed": args.seed, "networks": rows}
        (args.record / "conversion.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        lines = [f"# Checkpoints converted to safetensors\n\n`{command}` (torch {torch.__version__}): each network loaded from its "
                 f"`.pt` and its `.safetensors`, weights compared and both asked for every answer on {args.poses} reachable poses.\n",
                 "| network | now in | .pt bytes | .safetensors bytes | weights equal | answers bit-identical |",
                 "|---|---|---:|---:|---|---|"]
        lines += [f"| {r['network']} | {Path(str(r['to'])).parent} | {r['pt_bytes']:,} | {r['safetensors_bytes']:,} | "
                  f"{r['weights_equal']} | {r['answers_bit_identical']} |" for r in rows]
        (args.record / "conversion.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

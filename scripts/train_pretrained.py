"""Train the checkpoints hik_sim ships: every registered robot × {harmoatt, mlp, cycleik,
harmoatt_4answers (the closed-loop network, on the IRB120 also the hybrid's seed: HarmoAtt-IK with 4 answers),
mlp_seed (a small MLP sized for seeding the single-target LM: ``SEED_MLP``)}, plus
for the IRB120 a HarmoAtt-IK with q6 fixed and the hybrid paper's regression DNN in the full joint
space and with q6 fixed (regression, regression_q6fixed).

Each set is trained under the same budget (steps, batch, seed); the MLP's, CycleIK's and the
regression DNN's sizes are chosen so that their parameter counts match HarmoAtt-IK's for that robot
(within 1 %), as the comparison requires. Each trains with its own objective (``TrainConfig.objective``):
CycleIK with its own loss, Adam and its published learning rate (``--cycleik-lr`` overrides it), the
regression DNN by supervised regression at ``--lr``. With ``--minutes`` the HarmoAtt-IK network
trains for at most that long and the MLP, CycleIK and regression networks then get exactly the steps
it reached.
Checkpoints are written without optimiser state to ``hik_sim/policies/pretrained/<robot>/<name>.safetensors``
with their cards beside them (``.json``), and an index of all of them to
``hik_sim/policies/pretrained/index.json``.

Usage::

    python scripts/train_pretrained.py                       # all, the shipped budget
    python scripts/train_pretrained.py --robots irb120 --steps 20000 --device cuda
    python scripts/train_pretrained.py --robots irb120 --only harmoatt mlp --steps 60000 --minutes 55 --lr 3e-3 --compile
    python scripts/train_pretrained.py --robots irb120 --only harmoatt_4answers --steps 10000000 --minutes 60 --batch 256 --lr 3e-3
    python -m hik_sim.train --robot g1 --model harmoatt --model-option trunk=dense --model-option channels=16 \
        --model-option positions=8 --model-option feed_forward=256 --model-option embed_hidden=64 --model-option hypotheses=4 \
        --model-option canonical_turn=true --batch 256 --lr 3e-3 --minutes 60 --steps 10000000 --eval-every 2000 \
        --keep-best --out runs/closed_loop/g1/harmoatt_4answers.pt     # the shipped recipe (CLOSED_LOOP_RECIPE), then:
    python scripts/train_pretrained.py --robots g1 --only harmoatt_4answers --ship runs/closed_loop/g1/harmoatt_4answers.best.pt
    python scripts/train_pretrained.py --only cycleik --steps 60000 --minutes 55
    python scripts/train_pretrained.py --robots irb120 --only regression regression_q6fixed --steps 60000 --minutes 55

``--parallel N`` trains N checkpoints at a time, each in its own process: on one GPU
(``--device cuda``) every robot's networks side by side, each under the same ``--minutes``
budget (then the MLP gets that budget too, not its partner's steps: equal wall-clock time, the
comparison a user with one machine makes). On a CPU the processes share its cores
(``--threads`` each). A summary of every run (steps, time, validation metrics) is printed and
written to ``--summary`` (Markdown and JSON).

GPU recipe (one prepared command, ≤ 10 minutes)::

    python scripts/train_pretrained.py --device cuda --parallel 16 --minutes 8 --lr 3e-3 \
        --out runs/gpu/pretrained --summary runs/gpu/summary

then compare ``runs/gpu/summary.md`` with the shipped cards and ship the better ones with ``--ship``.

``--ship`` takes a checkpoint trained by ``python -m hik_sim.train`` (e.g. a run continued with
``--init-from`` the shipped file) and ships it in place of one checkpoint: weights and card, without
optimiser state, and its index entry (steps and training time over the whole lineage).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from hik_sim.evaluation.metrics import evaluate_network
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.checkpoint import Card, load_checkpoint, save_checkpoint
from hik_sim.learning.data import make_eval_set
from hik_sim.learning.losses import LossConfig
from hik_sim.learning.models import MATCHED_REFERENCE, matched_mlp_hidden, size_options
from hik_sim.learning.network import IKNetwork
from hik_sim.policies import PRETRAINED_DIR
from hik_sim.robots import get_robot, robot_names
from hik_sim.learning.train import TrainConfig, train, train_to_checkpoint

FIXED_Q6 = {"irb120": (("joint_6", 0.0),)}
SEED_NETWORKS = dict.fromkeys(("irb120", "panda", "talos", "romeo", "icub", "g1", "jvrc1"), 4)
"""robot → answers of its closed-loop network, ``harmoatt_<H>answers`` (hik_sim.policies.closed_loop_network_name)."""
REGRESSION_ROBOTS = ("irb120",)  # the hybrid paper's robot: its regression DNN, full and with q6 fixed
PAIRED = ("mlp", "cycleik", "regression")  # models that train the steps the robot's HarmoAtt-IK reached (in turn)
SEED_MLP = (("hidden", 128), ("layers", 3))
"""``mlp_seed``: an MLP of ~35 k parameters, a few µs a pose, the seed of the single-target LM
(``hik_sim.policies.single_target_seed_name``); not parameter-matched and not paired: it trains its
own ``--minutes``."""
CLOSED_LOOP_RECIPE = (("trunk", "dense"), ("channels", 16), ("positions", 8), ("feed_forward", 256),
                      ("embed_hidden", 64), ("canonical_turn", True))
"""``harmoatt_<H>answers``: a HarmoAtt-IK (``dense`` trunk) of ~148 k weights (~26 µs a pose) that takes the first joint's turn
out of its input (``canonical_turn``, docs/networks.md); not parameter-matched and not paired: it trains its
own ``--minutes``. The shipped ones: ``python -m hik_sim.train`` with these options, ``--batch 256 --lr 3e-3
--keep-best`` and one budget for every robot (docs/networks.md, "The recipe of harmoatt_4answers"), then ``--ship``.
Where the paper's trunk won at that budget (``benchmarks/paper_trunk.py``), the shipped network is this recipe with
``trunk=cycleik`` from ``scripts/train_paper_trunk.py``, shipped the same way."""
CLOSED_LOOP_EXTRAS: dict[str, tuple[tuple[str, Any], ...]] = {
    "talos": (("clamp_in_training", True), ("turn_input", True)),
    "romeo": (("clamp_in_training", True), ("turn_input", True)),
    "jvrc1": (("clamp_in_training", True), ("turn_input", True)),
    "panda": (("clamp_in_training", True), ("turn_input", True), ("behind_turn", True)),
    "g1": (("clamp_in_training", True), ("turn_input", True)),
    "irb120": (("clamp_in_training", True), ("turn_input", True), ("behind_turn", True)),
    "icub": (("clamp_in_training", True), ("turn_input", True)),
}
"""The options a robot's shipped ``harmoatt_<H>answers`` adds to ``CLOSED_LOOP_RECIPE`` (the
first joint's answer clamped in training where most of its circle is out of range, and the turn given back
to the model on JVRC-1, the Panda, TALOS, Romeo, the G1 and the IRB120; the Panda's and the IRB120's targets
beyond joint 1's range turned to the back half-plane, docs/networks.md). The IRB120's
``harmoatt_4answers_map`` (its hybrid's fallback, ``hik_sim.policies.hybrid_fallback_name``) is not one of
these jobs: a 638 k map-trunk network of 181 minutes, kept as shipped."""
CLOSED_LOOP_LOSS: dict[str, tuple[tuple[str, Any], ...]] = {"icub": (("limit_pull", 10.0),)}
"""The loss options (``LossConfig`` fields) a robot's shipped ``harmoatt_<H>answers`` trained with beside the
defaults: the iCub's pulls the answers its clamp pins at the torso pitch's limits back to them
(``--limit-pull 10``; without it its 60-minute runs grew a tail of such answers, docs/networks.md)."""


def jobs(robots: list[str], hypotheses: int = 1) -> list[tuple[str, str, str, tuple[tuple[str, float], ...], int]]:
    """(robot, model, file stem, fixed joints, hypotheses) for every checkpoint to train."""
    out = []
    for robot in robots:
        out += [(robot, "harmoatt", "harmoatt", (), hypotheses), (robot, "mlp", "mlp", (), hypotheses),
                (robot, "cycleik", "cycleik", (), 1), (robot, "mlp", "mlp_seed", (), 1)]
        if robot in FIXED_Q6:
            out.append((robot, "harmoatt", "harmoatt_q6fixed", FIXED_Q6[robot], 1))
        if robot in SEED_NETWORKS:
            out.append((robot, "harmoatt", f"harmoatt_{SEED_NETWORKS[robot]}answers", (), SEED_NETWORKS[robot]))
        if robot in REGRESSION_ROBOTS:
            out.append((robot, "regression", "regression", (), 1))
            out.append((robot, "regression", "regression_q6fixed", FIXED_Q6[robot], 1))
    return out


def _closed_loop_stem(stem: str | None, hypotheses: int) -> bool:
    """Whether ``stem`` is the robot's closed-loop network, ``harmoatt_<H>answers`` (its own recipe and loss)."""
    return stem == f"harmoatt_{hypotheses}answers"


def model_options(model: str, robot_name: str, fixed: tuple[tuple[str, float], ...],
                  hypotheses: int, stem: str | None = None) -> tuple[tuple[str, Any], ...]:
    """The network's options: its hypotheses, for HarmoAtt-IK the ``dense`` trunk at its default size
    (:data:`~hik_sim.learning.models.MATCHED_REFERENCE`), and for the MLP, CycleIK and the regression DNN the size that
    matches that network's parameter count; ``SEED_MLP`` for the ``mlp_seed`` stem, ``CLOSED_LOOP_RECIPE`` (and the
    robot's ``CLOSED_LOOP_EXTRAS``) for ``harmoatt_<H>answers``."""
    if stem == "mlp_seed":
        return SEED_MLP
    options = (("hypotheses", hypotheses),) if hypotheses > 1 else ()
    if _closed_loop_stem(stem, hypotheses):
        return CLOSED_LOOP_RECIPE + CLOSED_LOOP_EXTRAS.get(robot_name, ()) + options
    outputs = get_robot(robot_name).dof - len(fixed)
    if model == "harmoatt":
        options = tuple(MATCHED_REFERENCE.items()) + options
    elif model == "mlp":
        options = (("hidden", matched_mlp_hidden(outputs, hypotheses=hypotheses, **MATCHED_REFERENCE)),) + options
    elif model in ("cycleik", "regression"):
        options = tuple(size_options(model, outputs).items())
    return options


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="*", default=list(robot_names()), help="robots (default: all registered)")
    parser.add_argument("--steps", type=int, default=4000, help="steps per checkpoint (default 4000)")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (default 1e-3); not CycleIK's")
    parser.add_argument("--cycleik-lr", type=float, default=None,
                        help="CycleIK's peak learning rate (default: its published config's, 2.4e-4 for the Panda profile)")
    parser.add_argument("--minutes", type=float, default=None,
                        help="cap on each run [min]; an MLP whose HarmoAtt-IK partner trained in this call "
                             "trains the steps that partner reached instead")
    parser.add_argument("--compile", action="store_true", help="torch.compile the training step (see TrainConfig.compile)")
    parser.add_argument("--only", nargs="*", default=None, metavar="STEM",
                        help="train only these checkpoints (harmoatt, mlp, cycleik, mlp_seed, harmoatt_q6fixed, "
                             "harmoatt_4answers, regression, regression_q6fixed)")
    parser.add_argument("--hypotheses", type=int, default=1,
                        help="answers per pose of the harmoatt/mlp pair, chosen by FK (default 1; see "
                             "hik_sim.learning.models.common.LimitHead)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", type=Path, default=PRETRAINED_DIR)
    parser.add_argument("--parallel", type=int, default=1, metavar="N",
                        help="train N checkpoints at a time in separate processes (default 1); with --minutes every "
                             "network, MLPs included, trains for that long")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads per process (default: the CPU's cores divided among the processes)")
    parser.add_argument("--summary", type=Path, default=Path("runs") / "train_pretrained" / "summary",
                        help="write the runs' summary to SUMMARY.md and SUMMARY.json (default runs/train_pretrained/summary)")
    parser.add_argument("--ship", type=Path, default=None, metavar="CHECKPOINT",
                        help="ship this trained checkpoint as the one robot and --only stem given, instead of training")
    args = parser.parse_args(argv)
    if args.parallel < 1 or (args.threads is not None and args.threads < 1):
        parser.error("--parallel and --threads must be at least 1")
    index_path = args.out / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    if args.ship is not None:
        if len(args.robots) != 1 or args.only is None or len(args.only) != 1:
            parser.error("--ship needs exactly one robot (--robots NAME) and one checkpoint (--only STEM)")
        network, card = load_checkpoint(args.ship, get_robot(args.robots[0]))
        expected = {stem: (model, dict(fixed), hypotheses)
                    for _, model, stem, fixed, hypotheses in jobs(args.robots, args.hypotheses)}
        found = (card.model, card.fixed_joints, network.hypotheses)
        if expected.get(args.only[0]) != found:
            parser.error(f"{args.ship} is a {card.model} network with fixed joints {card.fixed_joints} and "
                         f"{network.hypotheses} answer(s); {args.robots[0]}/{args.only[0]} must be (model, fixed joints, "
                         f"answers) = {expected.get(args.only[0], 'not a shipped name: ' + ', '.join(expected))}")
        _ship(network, _revalidated(network, card, args.robots[0]), args.robots[0], args.only[0], args.out, index, index_path)
        return 0
    todo = [job for job in jobs(args.robots, args.hypotheses) if args.only is None or job[2] in args.only]
    cards = _train_parallel(todo, args, index, index_path) if args.parallel > 1 else _train_in_turn(todo, args, index, index_path)
    _write_summary(cards, args)
    return 0


def _config(args: argparse.Namespace, robot_name: str, model: str, fixed: tuple[tuple[str, float], ...], hypotheses: int,
            steps: int, minutes: float | None, stem: str | None = None) -> TrainConfig:
    lr = args.cycleik_lr if model == "cycleik" else args.lr
    loss = LossConfig(**dict(CLOSED_LOOP_LOSS.get(robot_name, ()))) if _closed_loop_stem(stem, hypotheses) else LossConfig()
    return TrainConfig(model=model, steps=steps, minutes=minutes, batch=args.batch, lr=lr, seed=args.seed, device=args.device,
                       fixed_joints=fixed, model_options=model_options(model, robot_name, fixed, hypotheses, stem),
                       loss=loss, eval_size=10_000, eval_every=max(500, steps // 30), compile=args.compile)


def _train_in_turn(todo: list, args: argparse.Namespace, index: dict, index_path: Path) -> list[tuple[str, str, Card]]:
    """One checkpoint after another; an MLP, CycleIK or regression network trains the steps its robot's
    HarmoAtt-IK network reached in this call (equal steps)."""
    reached: dict[str, int] = {}  # robot → steps its HarmoAtt-IK network trained
    cards = []
    for robot_name, model, stem, fixed, hypotheses in todo:
        steps, minutes = args.steps, args.minutes
        if model in PAIRED and stem != "mlp_seed" and robot_name in reached:
            steps, minutes = reached[robot_name], None
        result = train(get_robot(robot_name), _config(args, robot_name, model, fixed, hypotheses, steps, minutes, stem), out=None)
        if stem == "harmoatt":
            reached[robot_name] = result.card.steps
        _ship(result.network.cpu(), result.card, robot_name, stem, args.out, index, index_path)
        cards.append((robot_name, stem, result.card))
    return cards


def _train_parallel(todo: list, args: argparse.Namespace, index: dict, index_path: Path) -> list[tuple[str, str, Card]]:
    """``--parallel`` checkpoints at a time, each in its own (spawned) process; every one under the same budget."""
    threads = args.threads or max(1, (os.cpu_count() or 1) // args.parallel)
    cards = []
    with tempfile.TemporaryDirectory() as scratch, \
            ProcessPoolExecutor(args.parallel, mp_context=get_context("spawn")) as pool:
        futures = {}
        for robot_name, model, stem, fixed, hypotheses in todo:
            config = _config(args, robot_name, model, fixed, hypotheses, args.steps, args.minutes, stem)
            path = str(Path(scratch) / f"{robot_name}-{stem}.safetensors")
            futures[pool.submit(train_to_checkpoint, robot_name, config.to_json(), path, threads)] = (robot_name, stem)
        for future, (robot_name, stem) in futures.items():
            network, card = load_checkpoint(future.result(), get_robot(robot_name))
            _ship(network, card, robot_name, stem, args.out, index, index_path)
            cards.append((robot_name, stem, card))
    return cards


def _write_summary(cards: list[tuple[str, str, Card]], args: argparse.Namespace) -> None:
    """The runs as a table (stdout and SUMMARY.md) and as JSON (SUMMARY.json)."""
    lines = ["| robot | network | model | params | steps | minutes | device | pos mean [mm] | rot mean [°] | success 5 mm & 2° |",
             "|---|---|---|---:|---:|---:|---|---:|---:|---:|"]
    rows = []
    for robot_name, stem, card in cards:
        m = card.metrics
        rows.append({"robot": robot_name, "network": stem, "card": card.to_json()})
        lines.append(f"| {robot_name} | {stem} | {card.model} | {card.parameters:,} | {card.steps:,} | {card.training_seconds / 60:.1f} "
                     f"| {card.device} | {m['pos_mean_mm']:.2f} | {m['rot_mean_deg']:.2f} | {100 * m['success_5mm_2deg']:.1f} % |")
    table = "\n".join(lines) + "\n"
    print(table)
    args.summary.parent.mkdir(parents=True, exist_ok=True)
    args.summary.with_suffix(".md").write_text(table)
    args.summary.with_suffix(".json").write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "runs": rows},
                                                            indent=1) + "\n")


def _revalidated(network: IKNetwork, card: Card, robot_name: str) -> Card:
    """``card`` with its validation figures measured again on its own validation set, by the network as the
    code now answers (a checkpoint trained before a change to how a network answers once trained, such as
    a ``behind_turn`` network asking poses beyond the range both ways, keeps its card true)."""
    chain = Chain(get_robot(robot_name))
    metrics = evaluate_network(network.eval(), chain, make_eval_set(chain, card.eval_set["seed"], card.eval_set["size"]))
    return dataclasses.replace(card, metrics={**card.metrics, **metrics})


def _ship(network: IKNetwork, card: Card, robot_name: str, stem: str, out: Path, index: dict, index_path: Path) -> None:
    """Write ``network`` and ``card`` as ``out/<robot>/<stem>.safetensors`` (no optimiser state) and its index entry."""
    path = save_checkpoint(out / robot_name / f"{stem}.safetensors", network, card)
    m = card.metrics
    index[f"{robot_name}/{stem}"] = {"path": str(path.relative_to(out)), "steps": card.total_steps,
                                     "training_seconds": round(card.total_training_seconds, 2), "metrics": m,
                                     **({"init": card.init} if card.init else {})}
    index_path.write_text(json.dumps(index, indent=2) + "\n")
    print(f"{robot_name:7s} {stem:17s} {m['pos_mean_mm']:8.2f} mm {m['rot_mean_deg']:7.2f} deg "
          f"{100 * m['success_5mm_2deg']:5.1f}% {card.total_training_seconds:7.1f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())

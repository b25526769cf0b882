"""The networks hik_sim ships and the seed papers' baselines: where each checkpoint lives, by robot and model name.

The package's own networks stand in ``hik_sim/policies/pretrained/<robot>/`` (:data:`PRETRAINED_DIR`, package data);
the baselines and controls in the repository's ``benchmarks/checkpoints/<robot>/`` (:data:`BENCHMARK_NETWORKS`).
Each robot's choice of network for the hybrid's seed and fallback, the single-target LM and the closed-loop policy
is named here, below the solvers that load them; :mod:`hik_sim.policies` hands every public name on.
"""

from __future__ import annotations

import os
from pathlib import Path

from hik_sim.errors import CheckpointError

__all__ = ["PRETRAINED_DIR", "BENCHMARK_NETWORKS", "BENCHMARK_CHECKPOINTS_ENV", "benchmark_checkpoints_dir",
           "pretrained_path", "pretrained_names", "load_pretrained", "hybrid_seed_name", "hybrid_fallback_name", "load_hybrid_fallback",
           "single_target_seed_name", "closed_loop_network_name", "closed_loop_extra_names"]

PRETRAINED_DIR = Path(__file__).parent.parent / "policies" / "pretrained"
"""The networks that ship with the package: ``<robot>/<name>.safetensors`` and ``<robot>/<name>.json``."""

BENCHMARK_NETWORKS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("panda", "talos", "romeo", "icub", "g1", "jvrc1"), ("harmoatt", "mlp", "cycleik")),
    "irb120": ("harmoatt", "mlp", "cycleik", "regression", "regression_q6fixed", "regression_one_branch", "harmoatt_q6fixed"),
}
"""The seed papers' baselines and controls, by robot: in the repository's ``benchmarks/checkpoints/<robot>/``, not in the wheel."""

BENCHMARK_CHECKPOINTS_ENV = "HIK_SIM_BENCHMARK_CHECKPOINTS"
"""Environment variable naming a ``benchmarks/checkpoints`` folder (a checkout's) for an installed package."""

_SUFFIXES = (".safetensors", ".pt")  # .pt: a pickled checkpoint dropped in by hand, loaded with a DeprecationWarning


def benchmark_checkpoints_dir() -> Path | None:
    """The folder of the papers' baselines and controls: ``$HIK_SIM_BENCHMARK_CHECKPOINTS``, else the checkout's
    ``benchmarks/checkpoints`` when the package runs from a checkout; None when neither is a folder."""
    named = os.environ.get(BENCHMARK_CHECKPOINTS_ENV)
    folder = Path(named) if named else Path(__file__).resolve().parents[2] / "benchmarks" / "checkpoints"
    return folder if folder.is_dir() else None


def _folders() -> list[Path]:
    benchmarks = benchmark_checkpoints_dir()
    return [PRETRAINED_DIR] + ([benchmarks] if benchmarks is not None else [])


def _find(robot: str, model: str) -> Path | None:
    """The checkpoint file of ``robot``/``model`` in the package or the benchmarks' folder; None if neither has it."""
    for folder in _folders():
        for suffix in _SUFFIXES:
            if (path := folder / robot / f"{model}{suffix}").is_file():
                return path
    return None


def pretrained_names() -> list[str]:
    """Every network that :func:`load_pretrained` finds here, as ``robot/name`` (e.g. ``irb120/harmoatt``): the
    package's and, from a checkout, the papers' baselines and controls (e.g. ``irb120/harmoatt_q6fixed``)."""
    return sorted({f"{p.parent.name}/{p.stem}" for folder in _folders() for suffix in _SUFFIXES for p in folder.glob(f"*/*{suffix}")})


HYBRID_SEEDS: dict[str, str] = dict.fromkeys(("irb120", "panda", "talos", "romeo", "icub", "g1", "jvrc1"), "harmoatt_4answers")
"""Robots whose hybrid solver is seeded by another shipped network than ``harmoatt``."""


def hybrid_seed_name(robot: str) -> str:
    """The shipped network that seeds the hybrid solver (network → LM) on ``robot``.

    The seed that costs the hybrid fewer evaluations for the same success, by measurement:
    ``harmoatt_4answers`` on every robot, the 148 k four-answer networks, whose first good answer sits on the right
    IK branch more often and whose other answers serve as the first restarts. On the hybrid table's 5,000 targets a
    robot (``python benchmarks/ik_bench.py --all``, benchmarks/results/ik_all.md), evaluations a target against the
    one-answer ``harmoatt``'s: IRB120 7.8 / 13.8, Panda 10.9 / 19.7, TALOS 6.3 / 12.2, Romeo 6.2 / 8.5, iCub 5.2 /
    6.1, G1 11.4 / 15.5, JVRC-1 6.1 / 9.4, in 0.009–0.017 against 0.018–0.031 ms a target, for a network under a
    quarter the size. Every target solved with either seed. A robot without a shipped
    ``harmoatt_4answers`` (a user's URDF) uses ``harmoatt``.
    """
    return HYBRID_SEEDS.get(robot, "harmoatt")


HYBRID_FALLBACKS: dict[str, str] = {"irb120": "harmoatt_4answers_map"}
"""Robots whose batched hybrid asks a second shipped network for the targets its seed has no good answer for."""


def hybrid_fallback_name(robot: str) -> str | None:
    """The shipped network the batched hybrid asks where none of :func:`hybrid_seed_name`'s answers is good
    (5 mm & 2°), before its random restarts (``HybridIK(fallback=...)``); None where it asks none.

    The IRB120's ``harmoatt_4answers_map``, the 638 k four-answer map network of 181 minutes: the 148 k ``behind_turn``
    network that seeds its hybrid is the better
    network alone (test set 1.84 mm / 0.87°, 90.9 % against 2.90 mm / 1.48°, 80.2 %) but a costlier seed alone (26.9 evaluations a
    target against 15.6: its misses are wrong branches, the map network's near ones); asked first, with the
    map network for its misses, 13.4 evaluations a target, 100.00 % solved (5,000 targets, seed 777,
    ``benchmarks/hybrid_cost.py``; 10,000 seed-99 targets with 49 restarts: 12.8 against
    the map network alone's 15.3, 100.000 % against 99.990 %). Where the seed is good the map network
    costs nothing.
    """
    return HYBRID_FALLBACKS.get(robot)


def load_hybrid_fallback(robot: str, map_location: str = "cpu"):  # noqa: ANN201 - IKNetwork or None
    """:func:`hybrid_fallback_name`'s shipped network, loaded (:func:`load_pretrained`); None where the robot has none."""
    name = hybrid_fallback_name(robot)
    return None if name is None else load_pretrained(robot, name, map_location)


def single_target_seed_name(robot: str) -> str:
    """The shipped network that seeds the single-target LM (``SingleTargetIK``, the controllers' path) on ``robot``.

    The robot's HarmoAtt-IK seed, :func:`hybrid_seed_name`'s network, the same as the batched hybrid's: the default
    controller is HarmoAtt-IK + LM. One target at a time the seed's forward pass is paid by that one target; the
    148 k-weight four-answer networks answer a pose in tens of µs on one thread (compiled), and the cold single-target
    solve stays under half of TRAC-IK's median on every robot (``benchmarks/ik_bench.py --all``, docs/results.md).
    The small ``mlp_seed`` MLP (~35 k weights, shipped beside it) makes the cold solve about 30 µs faster in the median
    (0.041–0.047 against 0.074–0.079 ms, benchmarks/results/single_target_peers) and stays available by name:
    ``make_solver("hybrid", robot, network="mlp_seed")``.
    """
    return hybrid_seed_name(robot)


def closed_loop_network_name(robot: str) -> str:
    """The shipped network of the ``closed_loop`` policy (the network alone, closed on its own error) on ``robot``.

    ``harmoatt_4answers`` wherever one is shipped (every registered robot): on the test set
    the more accurate network on each of those robots (``tests/test_pretrained.py`` checks it), and
    without a least-squares solver the network's accuracy is all there is; else the hybrid's seed.
    """
    return "harmoatt_4answers" if _find(robot, "harmoatt_4answers") is not None else hybrid_seed_name(robot)


def closed_loop_extra_names(robot: str) -> tuple[str, ...]:
    """The further shipped networks whose answers join the closed-loop network's in the ``closed_loop`` policy.

    The robot's :func:`hybrid_fallback_name` network, where it has one (the IRB120's map network: its 148 k
    closed-loop network's misses are wrong branches that the corrections do not leave, the map network's near
    ones that they close), then its ``mlp_seed``: where all four answers of the four-answer network miss, the
    small MLP's often does not. Chosen on validation episodes (``python benchmarks/closed_loop_networks.py``,
    Reach and Track seeds from 1000; the test episodes are others): with ``mlp_seed`` the Panda holds 93 % of
    Reach goals against 83 % and tracks the figure-eight at 6.7 mm RMS against 96.8 mm (its largest error 104
    against 877 mm: branch jumps), the JVRC-1's largest Track error is 5.8 mm against 40.0, TALOS and Romeo hold
    every Reach goal against 98 and 99 %; it costs Romeo and the G1 about 0.3 mm of Track RMS (1.78 against
    1.50, 2.43 against 2.11 mm). The one-answer ``harmoatt`` (a checkout's) in its place does not remove the
    Panda's jumps.
    """
    main = closed_loop_network_name(robot)
    names = (hybrid_fallback_name(robot), "mlp_seed" if _find(robot, "mlp_seed") is not None else None)
    return tuple(name for name in names if name is not None and name != main)


def pretrained_path(robot: str, model: str) -> Path:
    """The checkpoint file of ``robot`` and ``model``: shipped, or one of the papers' baselines and controls from a checkout.

    Raises:
        CheckpointError: no such checkpoint (the message lists the shipped ones); for one of :data:`BENCHMARK_NETWORKS`
            absent here (an installed package), where it lives and how to get it.
    """
    path = _find(robot, model)
    if path is not None:
        return path
    if model in BENCHMARK_NETWORKS.get(robot, ()):
        raise CheckpointError(f"{robot}/{model} is one of the seed papers' baselines and controls, which live in the repository's "
                       f"benchmarks/checkpoints/{robot}/ and not in the installed package; run from a checkout of the repository "
                       f"(git clone, then pip install -e .) or set {BENCHMARK_CHECKPOINTS_ENV} to that checkout's benchmarks/checkpoints folder")
    raise CheckpointError(f"no shipped checkpoint {robot}/{model}; shipped: {', '.join(pretrained_names()) or 'none'}")


def load_pretrained(robot: str, model: str | None = None, map_location: str = "cpu"):  # noqa: ANN201 - IKNetwork
    """The shipped IK network of a registered robot, checked against that robot's URDF.

    Args:
        robot: registered robot name.
        model: a shipped name such as ``harmoatt_4answers`` or ``mlp_seed`` (or, from a checkout, one of
            :data:`BENCHMARK_NETWORKS` such as ``harmoatt`` or ``cycleik``); None: the robot's HarmoAtt-IK,
            :func:`hybrid_seed_name`.
        map_location: where the weights go.

    Returns:
        The :class:`~hik_sim.learning.network.IKNetwork` (eval mode); its card is ``network.card``.

    Raises:
        HikError: unknown robot, no such checkpoint (see :func:`pretrained_path`), or a checkpoint that does not fit the robot.
    """
    from hik_sim.learning.checkpoint import load_checkpoint
    from hik_sim.robots import get_robot

    spec = get_robot(robot)
    network, card = load_checkpoint(pretrained_path(robot, hybrid_seed_name(robot) if model is None else model), robot=spec, map_location=map_location)
    network.card = card
    return network

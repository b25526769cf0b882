"""Policies: the IK networks hik_sim ships (by robot and model name) and the IK controller for the environments.

The networks the controllers and the evaluator's default policies use ship with the package
(:data:`PRETRAINED_DIR`): each robot's four-answer HarmoAtt-IK (``harmoatt_4answers``), its small
``mlp_seed`` and the IRB120's map network. The seed papers' baselines and controls (the one-answer
HarmoAtt-IK and MLP pair of the equal-time comparison, CycleIK, regression networks, the IRB120's
fixed-joint-6 networks) live in the repository's ``benchmarks/checkpoints/<robot>/``
(:data:`BENCHMARK_NETWORKS`), found from a checkout or the folder named by ``HIK_SIM_BENCHMARK_CHECKPOINTS``.
A checkpoint is ``<name>.safetensors`` with its card ``<name>.json`` (:mod:`hik_sim.learning.checkpoint`).
"""

from __future__ import annotations

from hik_sim.learning.pretrained import (
    BENCHMARK_CHECKPOINTS_ENV,
    BENCHMARK_NETWORKS,
    PRETRAINED_DIR,
    benchmark_checkpoints_dir,
    closed_loop_extra_names,
    closed_loop_network_name,
    hybrid_fallback_name,
    hybrid_seed_name,
    load_hybrid_fallback,
    load_pretrained,
    pretrained_names,
    pretrained_path,
    single_target_seed_name,
)

__all__ = ["PRETRAINED_DIR", "BENCHMARK_NETWORKS", "BENCHMARK_CHECKPOINTS_ENV", "IKController", "benchmark_checkpoints_dir",
           "pretrained_path", "pretrained_names", "load_pretrained", "hybrid_seed_name", "hybrid_fallback_name", "load_hybrid_fallback",
           "single_target_seed_name", "closed_loop_network_name", "closed_loop_extra_names"]


def __getattr__(name: str):  # noqa: ANN202 - IKController imports torch, so only on first use
    if name == "IKController":
        from hik_sim.policies.controller import IKController

        return IKController
    raise AttributeError(f"module 'hik_sim.policies' has no attribute {name!r}")

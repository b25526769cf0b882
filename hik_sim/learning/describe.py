"""What a network is made of: its size and how much of it is attention (``python -m hik_sim.train --describe``).

For a model kind and options as the trainer takes them, builds the network the trainer would build for a robot's
free joints and reports its parameters, its forward multiply-adds for one pose, and the share of both held by the
attention-fusion blocks (the three branches and the weight-generation network,
:func:`~hik_sim.learning.models.harmoatt_cycleik.attention_share`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["describe_network", "describe_text"]


def describe_network(kind: str, joints: int, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Size and attention share of a ``kind`` network with ``joints`` outputs built from ``options``.

    The network wrapper's options are parsed as :class:`~hik_sim.learning.network.IKNetwork` parses them
    (:class:`~hik_sim.learning.network_options.NetworkOptions`): ``turn_input`` widens the input, the others do not
    change the model.

    Returns:
        ``{"model", "joints", "options", "parameters", "attention_branch_parameters", "weight_generation_parameters",
        "attention_parameter_share", "forward_macs", "attention_macs", "attention_mac_share"}``; ``options`` as given,
        with a ``harmoatt`` network's ``trunk`` first (the default, ``cycleik``, where they name none).

    Raises:
        HikError: an unknown kind or option.
    """
    import torch

    from hik_sim.learning.models import attention_share, build_model, harmoatt_trunk, size_options
    from hik_sim.learning.network_options import NetworkOptions

    _, model_options = NetworkOptions.parse(options, kind)  # the wrapper's options out, the input width turn_input implies in
    shown = dict(options or {})
    if kind == "harmoatt":  # say which trunk, also where it is the default
        shown = {"trunk": harmoatt_trunk(model_options), **shown}
    model_options = size_options(kind, joints, model_options)
    model = build_model(kind, -torch.ones(joints), torch.ones(joints), **model_options)
    return {"model": kind, "joints": joints, "options": shown, **attention_share(model)}


def describe_text(row: dict[str, Any]) -> str:
    """One paragraph for a terminal: the size, and the attention's share of parameters and of multiply-adds."""
    options = ", ".join(f"{k}={v}" for k, v in row["options"].items()) or "defaults"
    return (f"{row['model']} ({options}) for {row['joints']} joints: {row['parameters']:,} parameters, "
            f"{row['forward_macs']:,} multiply-adds a pose\n"
            f"  attention branches {row['attention_branch_parameters']:,} + weight generation "
            f"{row['weight_generation_parameters']:,} parameters: {100 * row['attention_parameter_share']:.1f} % of the "
            f"parameters, {100 * row['attention_mac_share']:.1f} % of the multiply-adds")

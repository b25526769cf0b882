"""`NetworkOptions`: the options of an :class:`~hik_sim.learning.network.IKNetwork` itself, as opposed to its model's.

A card's (or a constructor's) ``model_options`` mixes two kinds of keys: the model's constructor arguments
(``channels``, ``hidden``, ``trunk``, …) and the network's own options, which change how poses reach the model and
how its answers come back. :meth:`NetworkOptions.parse` reads the network's options once, checks them and hands
back the rest for the model; the torch network (:class:`~hik_sim.learning.network.IKNetwork`), the fast network
(:class:`~hik_sim.learning.fast_network.FastIKNetwork`) and the solvers read ``network.options``.

The network's options (bools, default false; ``--model-option NAME=true`` on the trainer's command line):

- ``canonical_turn``: the target is turned about the first joint's axis into one half-plane and the turn is
  added back to the answer's first joint (needs a revolute first joint);
- ``clamp_in_training``: training sees the first joint clamped into its range, as the trained network answers;
- ``turn_input``: the model also reads (cos, sin) of the turn (HarmoAtt-IK and the MLP);
- ``behind_turn``: a pose beyond the first joint's range is turned into the back half-plane instead.

The last three are options of ``canonical_turn`` networks. Every shipped ``canonical_turn`` network has
``clamp_in_training`` and ``turn_input`` too: ``turn="canonical"`` names that recipe in one key (the three
options set to true; giving one of them false beside it is an error).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from hik_sim.errors import ModelError

__all__ = ["NetworkOptions", "CANONICAL_TURN", "CLAMP_IN_TRAINING", "TURN_INPUT", "BEHIND_TURN", "TURN", "TURN_RECIPES",
           "NETWORK_OPTION_NAMES", "TURN_INPUT_MODELS"]

CANONICAL_TURN = "canonical_turn"
"""The option (bool) that takes the first joint's turn out of the model's input."""
CLAMP_IN_TRAINING = "clamp_in_training"
"""The option (bool) of a ``canonical_turn`` network that trains on its clamped first joint."""
TURN_INPUT = "turn_input"
"""The option (bool) of a ``canonical_turn`` network that gives its model the turn as (cos, sin)."""
BEHIND_TURN = "behind_turn"
"""The option (bool) of a ``canonical_turn`` network that turns poses beyond its first joint's range to the back
half-plane."""
TURN = "turn"
"""The recipe option (str): ``canonical`` sets ``canonical_turn``, ``clamp_in_training`` and ``turn_input``."""
TURN_RECIPES: dict[str, tuple[str, ...]] = {"canonical": (CANONICAL_TURN, CLAMP_IN_TRAINING, TURN_INPUT)}
"""Each ``turn`` recipe and the bool options it sets."""
_BOOLS = (CANONICAL_TURN, CLAMP_IN_TRAINING, TURN_INPUT, BEHIND_TURN)
NETWORK_OPTION_NAMES: tuple[str, ...] = (*_BOOLS, TURN)
"""The keys of ``model_options`` that belong to the network, not to its model."""
TURN_INPUT_MODELS: tuple[str, ...] = ("harmoatt", "mlp")
"""The models that can read the turn (``turn_input``)."""


@dataclass(frozen=True)
class NetworkOptions:
    """The network's own options, checked (see the module's docstring for each).

    Attributes:
        canonical_turn: the first joint's turn is taken out of the input and added back to the answers.
        clamp_in_training: training sees the clamped first joint (a ``canonical_turn`` option).
        turn_input: the model reads (cos, sin) of the turn (a ``canonical_turn`` option; HarmoAtt-IK, MLP).
        behind_turn: poses beyond the first joint's range are turned to the back half-plane (a ``canonical_turn`` option).
    """

    canonical_turn: bool = False
    clamp_in_training: bool = False
    turn_input: bool = False
    behind_turn: bool = False

    def __post_init__(self) -> None:
        for name in _BOOLS:
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ModelError(f"{name} must be true or false, got {value!r}")
        for name in (CLAMP_IN_TRAINING, TURN_INPUT, BEHIND_TURN):
            if getattr(self, name) and not self.canonical_turn:
                raise ModelError(f"{name} is an option of {CANONICAL_TURN} networks: give {CANONICAL_TURN}=true too")

    @classmethod
    def parse(cls, model_options: Mapping[str, Any] | None, kind: str) -> tuple[NetworkOptions, dict[str, Any]]:
        """Split ``model_options`` into the network's options and its model's constructor arguments.

        Args:
            model_options: a card's or a constructor's options (``None``: none).
            kind: the model (``harmoatt``, ``mlp``, …): ``turn_input`` is for :data:`TURN_INPUT_MODELS` only and
                widens their input (5 position inputs for HarmoAtt-IK, 9 inputs for the MLP).

        Returns:
            The options, and the model's arguments (the other keys, plus the input width ``turn_input`` implies).

        Raises:
            HikError: an option that is not a bool; ``turn`` not one of :data:`TURN_RECIPES` or beside one of its
                options given false; ``clamp_in_training``, ``turn_input`` or ``behind_turn`` without ``canonical_turn``;
                ``turn_input`` for another model.
        """
        given = dict(model_options or {})
        model = {k: v for k, v in given.items() if k not in NETWORK_OPTION_NAMES}
        values = {name: given.get(name, False) for name in _BOOLS}
        if TURN in given:
            recipe = given[TURN]
            if recipe not in TURN_RECIPES:
                raise ModelError(f"{TURN} must be one of {', '.join(TURN_RECIPES)}, got {recipe!r}")
            for name in TURN_RECIPES[recipe]:
                if given.get(name, True) is not True:
                    raise ModelError(f"{TURN}={recipe} sets {name}=true; got {name}={given[name]!r} beside it")
                values[name] = True
        options = cls(**values)
        if options.turn_input:
            if kind not in TURN_INPUT_MODELS:
                raise ModelError(f"{TURN_INPUT} is for the models {', '.join(TURN_INPUT_MODELS)}, not {kind!r}")
            if kind == "harmoatt":
                model["position_inputs"] = 5  # the canonical position and (cos, sin) embedded together
            else:
                model["in_features"] = 9
        return options, model

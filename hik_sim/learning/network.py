"""`IKNetwork`: a trained IK model with everything needed to use it on its robot.

It wraps the model (:mod:`hik_sim.learning.models`) with the input normalisation measured on the robot's
workspace and the joint selection (fixed joints), so that it maps a target pose straight to a full
chain configuration, inside the joint limits by construction. A model with several hypotheses
proposes H answers; the network answers with the one whose forward kinematics lands closest to the
target (position error / 5 mm + rotation error / 2°, the success tolerances), so it needs the
robot's :class:`~hik_sim.kinematics.chain.Chain`.

With the option ``canonical_turn`` (``--model-option canonical_turn=true``) the network is
equivariant to the first joint's turn by construction (the network's options are parsed once into
:class:`~hik_sim.learning.network_options.NetworkOptions`, ``network.options``): a target is turned about the first joint's
axis until its position lies in one half-plane (:class:`~hik_sim.kinematics.symmetry.FirstJointSymmetry`),
the model answers for that canonical pose, and the turn is added back to the answer's first joint
(wrapped into the joint's range; the part of the circle outside a joint's range is clamped to the
nearer limit once the network is not training, and in training too with ``clamp_in_training``).
The model sees one input dimension fewer and never sees the first joint's limits; its first output
spans the limits widened by π either way.

Trained unclamped, an answer beyond the first joint's range reaches its target in training (forward
kinematics does not care where the joint's range ends) and is clamped to a miss once trained: the
network never learns that the branch is out of reach for that turn. With ``clamp_in_training``
(``--model-option clamp_in_training=true``) training sees the clamped answer, what the network will
answer: its miss is a loss, and with several answers another one learns the branch that the range
allows (the clamped value passes no gradient to the first joint). An answer once clamped so never
moves its first joint again for that pose: on the iCub the share of answers pinned at a limit grew
from 5 % to 13 % over the second half of an hour's run.

Even so a canonical network cannot tell which branch the range allows: two poses that differ only by
their turn have one canonical pose, and where one turn puts the first joint's answer beyond its
range and the other does not, the model must answer both alike. With ``turn_input``
(``--model-option turn_input=true``, a ``canonical_turn`` network, HarmoAtt-IK or the MLP) the turn
is given back to the model as (cos, sin) of the azimuth beside the canonical position: its input is
(canonical position (3), cos, sin, canonical quaternion (4)), 9 wide, and HarmoAtt-IK embeds the
first five as the position. The answer's first joint is still the canonical one plus the turn.
``--model-option turn=canonical`` names the three together (``canonical_turn``, ``clamp_in_training``,
``turn_input``), the recipe of every shipped canonical network.

An arm whose first joint leaves part of the circle out (the IRB120's and the Panda's: 30° and 28°)
reaches most targets there bent back over its base, the first joint turned by π from facing it: a
branch that canonical networks, facing every target, answered with the first joint pinned at a limit
(44 % of the IRB120's targets there, 26.6 mm off on average). With ``behind_turn``
(``--model-option behind_turn=true``) such a pose is turned by its azimuth − π instead
(:func:`~hik_sim.kinematics.symmetry.range_turn`), to the back half-plane: the model sees it as a pose
behind the base, and the turn added back keeps the first joint inside its range. Some of those targets
are reached by the arm facing them after all (the tool reaching across the limit), so once trained
such a network asks a pose beyond the range both ways, turned to the back half-plane and turned by
its azimuth, and each answer (head) keeps the one that reaches the pose better (one more forward
pass for those poses only).
"""

from __future__ import annotations

import math
import reprlib
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from hik_sim.learning.data import JointSelection, PoseNormalizer
from hik_sim.errors import ModelError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.symmetry import FirstJointSymmetry, range_turn, wrap_first_joint
from hik_sim.learning.losses import geodesic_angle
from hik_sim.learning.models import IKOutput, LimitHead, build_model
from hik_sim.learning.network_options import BEHIND_TURN, CANONICAL_TURN, CLAMP_IN_TRAINING, TURN_INPUT, NetworkOptions
from hik_sim.kinematics.tolerances import SUCCESS

if TYPE_CHECKING:
    from hik_sim.learning.card import Card

__all__ = ["IKNetwork", "CHOICE_TOLERANCE", "MAX_TARGET_DISTANCE", "CANONICAL_TURN", "CLAMP_IN_TRAINING", "TURN_INPUT",
           "BEHIND_TURN", "TURNED", "as_targets"]

TURNED: tuple[str, ...] = ("better", "range", "azimuth")
"""How a ``behind_turn`` network answers a pose beyond its first joint's range (:meth:`IKNetwork.forward`)."""

CHOICE_TOLERANCE: tuple[float, float] = (SUCCESS.position, SUCCESS.rotation)
"""Units [m], [rad] in which position and rotation errors are added to choose among hypotheses."""

MAX_TARGET_DISTANCE = 1e4
"""[m]: the farthest a target position may lie from the chain's base along any axis. Farther is a
unit or frame mistake, and in float32 a network's activations overflow (1e30 m answered NaN)."""


def _as_real_tensor(value: Any, name: str) -> torch.Tensor:
    """``value`` (tensor, array or nested list of real numbers) as a float64 CPU tensor; else a HikError."""
    if isinstance(value, torch.Tensor):
        tensor = value.detach()
    else:
        try:
            tensor = torch.as_tensor(np.asarray(value))  # through numpy: a list of Python floats stays float64
        except (TypeError, ValueError, RuntimeError):
            raise ModelError(f"{name} must be an array of real numbers, got {type(value).__name__} {reprlib.repr(value)}") from None
    if tensor.dtype == torch.bool or tensor.is_complex():
        raise ModelError(f"{name} must be real numbers (a float or integer array), got dtype {tensor.dtype}")
    return tensor.to(device="cpu", dtype=torch.float64)


def as_targets(target_pos: Any, target_quat: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Validated float64 CPU copies of target poses, quaternions normalised.

    Args:
        target_pos: (B, 3) positions [m] in the chain's base frame (tensor, array or nested list).
        target_quat: (B, 4) quaternions wxyz, any non-zero length.

    Returns:
        Positions (B, 3) and unit quaternions (B, 4), float64.

    Raises:
        HikError: not real numbers, wrong shapes, NaN/inf, a zero quaternion, or a position more
            than :data:`MAX_TARGET_DISTANCE` from the base along an axis.
    """
    pos, quat = _as_real_tensor(target_pos, "target positions"), _as_real_tensor(target_quat, "target quaternions")
    if pos.ndim != 2 or pos.shape[1] != 3 or quat.shape != (pos.shape[0], 4):
        raise ModelError(f"targets must be positions (B, 3) and quaternions (B, 4), got {tuple(pos.shape)} and {tuple(quat.shape)}")
    if pos.shape[0] == 0:
        return pos, quat
    norm = quat.norm(dim=1, keepdim=True)
    if float(pos.abs().amax()) <= MAX_TARGET_DISTANCE and bool(((norm > 1e-9) & (norm < math.inf)).all()):
        return pos, quat / norm  # the common case in two checks (NaN fails both); the rest says what is wrong
    if not (bool(torch.isfinite(pos).all()) and bool(torch.isfinite(quat).all())):
        raise ModelError("targets must be finite: got NaN or inf")
    far = pos.abs().amax(dim=1) > MAX_TARGET_DISTANCE
    if bool(far.any()):
        rows = torch.nonzero(far).flatten()
        raise ModelError(f"target positions must lie within {MAX_TARGET_DISTANCE:g} m of the chain's base along each axis; rows "
                       f"{rows.tolist()[:10]} reach {float(pos[rows].abs().max()):.3g} m (a unit or frame mistake?)")
    scale = quat.abs().amax(dim=1, keepdim=True)  # normalise in two steps: |q|² of a 1e300 quaternion overflows to inf
    unit = quat / scale.clamp_min(1e-300)
    length = unit.norm(dim=1, keepdim=True)
    zero = (scale * length)[:, 0] < 1e-9
    if bool(zero.any()):
        raise ModelError(f"target quaternions must be non-zero (rows {torch.nonzero(zero).flatten().tolist()[:10]} are zero); "
                       "give unit quaternions (w, x, y, z)")
    return pos, unit / length


class IKNetwork(nn.Module):
    """Target pose → full chain configuration.

    Args:
        kind: ``harmoatt`` or ``mlp``.
        lower: (n,) lower limits of all chain joints.
        upper: (n,) upper limits.
        normalizer: the input normalisation.
        selection: which joints are fixed (the model outputs the free ones).
        model_options: the model's constructor arguments and the network's own options, read once into
            :attr:`options` (:meth:`NetworkOptions.parse <hik_sim.learning.network_options.NetworkOptions.parse>`).
        chain: the robot's chain; needed (to choose among answers) when ``hypotheses`` > 1, and for
            ``canonical_turn``.

    Attributes:
        options: the network's own options (:class:`~hik_sim.learning.network_options.NetworkOptions`).

    Raises:
        HikError: a model with several hypotheses and no chain; a bad network option (see
            :meth:`NetworkOptions.parse <hik_sim.learning.network_options.NetworkOptions.parse>`); ``canonical_turn``
            without a chain, or for a chain whose first joint is prismatic or fixed.
    """

    card: Card  # set by the loaders (load_pretrained, make_solver) on a network read from a checkpoint; absent otherwise

    def __init__(self, kind: str, lower: torch.Tensor, upper: torch.Tensor, normalizer: PoseNormalizer,
                 selection: JointSelection, model_options: dict[str, Any] | None = None, chain: Chain | None = None) -> None:
        super().__init__()
        self.kind = kind
        self.selection = selection
        self.model_options = dict(model_options or {})
        self.lower, self.upper = tuple(float(v) for v in lower), tuple(float(v) for v in upper)  # (n,) for robot checks
        index = selection.free_index
        self.options, options = NetworkOptions.parse(self.model_options, kind)
        canonical = self.options.canonical_turn
        self.symmetry: FirstJointSymmetry | None = None
        model_lower, model_upper = lower[index].clone(), upper[index].clone()
        if canonical:
            if chain is None:
                raise ModelError(f"a network with {CANONICAL_TURN} needs the robot's chain (its first joint's axis)")
            self.symmetry = FirstJointSymmetry(chain)
            if not self.symmetry.revolute or len(index) == 0 or index[0] != 0:
                raise ModelError(f"{CANONICAL_TURN} needs a revolute first joint that the network answers for; "
                                 f"{chain.joint_names[0]!r} is {'fixed' if index[0:1] != [0] else 'prismatic'}")
            model_lower[0] -= math.pi  # the canonical first joint q₁ − azimuth: anywhere in the limits ± π
            model_upper[0] += math.pi
        self.model = build_model(kind, model_lower, model_upper, **options)
        self.normalizer = normalizer
        head = self.model.head
        assert isinstance(head, LimitHead)  # every model of build_model answers through one
        self.hypotheses: int = head.hypotheses  # answers per pose, as the model was built
        if self.hypotheses > 1 and chain is None:
            raise ModelError(f"a network with {self.hypotheses} hypotheses needs the robot's chain to choose among them")
        self.chain = chain

    @property
    def canonical_turn(self) -> bool:
        """``options.canonical_turn``."""
        return self.options.canonical_turn

    @property
    def clamp_in_training(self) -> bool:
        """``options.clamp_in_training``."""
        return self.options.clamp_in_training

    @property
    def turn_input(self) -> bool:
        """``options.turn_input``."""
        return self.options.turn_input

    @property
    def behind_turn(self) -> bool:
        """``options.behind_turn``."""
        return self.options.behind_turn

    def forward(self, pos: torch.Tensor, quat: torch.Tensor, choose: bool = True, turned: str = "better") -> IKOutput:
        """Poses (B, 3) [m], (B, 4) wxyz in the base frame → :class:`IKOutput` with full q (B, n).

        With several hypotheses, ``candidates`` holds all of them as full configurations (B, H, n)
        and ``q`` the one chosen by forward kinematics; ``choose=False`` skips that choice (``q``
        is then the first candidate), for training, whose loss computes the FK of every candidate.
        ``turned`` (a ``behind_turn`` network out of training; :data:`TURNED`): ``better`` asks a pose beyond the first
        joint's range both ways and keeps each head's better answer by FK (:meth:`_also_facing`, :meth:`facing_fk`);
        ``range`` only turned into the back half-plane, ``azimuth`` only turned by its azimuth (no FK of its own).
        """
        if turned not in TURNED:
            raise ModelError(f"turned must be one of {', '.join(TURNED)}, got {turned!r}")
        if pos.ndim != 2 or pos.shape[1] != 3 or quat.shape != (pos.shape[0], 4):
            raise ModelError(f"target poses must be (B, 3) positions and (B, 4) quaternions, got {tuple(pos.shape)} and {tuple(quat.shape)}")
        # Values are checked in eager calls; a compiled one (the trainer's step, poses from FK) skips these
        # data-dependent branches, which would cut its graph into pieces.
        values_checked = not torch.compiler.is_compiling()
        if values_checked and not (bool(torch.isfinite(pos).all()) and bool(torch.isfinite(quat).all())):
            raise ModelError("target poses must be finite; got NaN or inf")
        if values_checked and bool((zero := quat.norm(dim=-1) < 1e-9).any()):
            raise ModelError(f"target quaternions must be non-zero (rows {torch.nonzero(zero).flatten().tolist()[:10]} are zero); "
                           "give unit quaternions (w, x, y, z)")
        if self.symmetry is None:
            out = self.model(self.normalizer(pos, quat))
        else:
            azimuth = self.symmetry.azimuth(pos)
            if not self.options.behind_turn or (turned == "azimuth" and not self.training):
                out = self._canonical_answers(pos, quat, azimuth)
            else:
                turn = range_turn(azimuth, self.lower[0], self.upper[0])
                out = self._canonical_answers(pos, quat, turn)
                if not self.training and turned == "better":
                    out = self._also_facing(out, pos, quat, azimuth, turn != azimuth)
        if out.candidates is None:
            return out._replace(q=self.selection.expand(out.q))
        batch, hypotheses, free = out.candidates.shape
        candidates = self.selection.expand(out.candidates.reshape(batch * hypotheses, free)).view(batch, hypotheses, -1)
        if not choose:
            return out._replace(q=candidates[:, 0], candidates=candidates)
        return out._replace(q=self.choose(candidates, pos, quat), candidates=candidates)

    def _canonical_answers(self, pos: torch.Tensor, quat: torch.Tensor, turn: torch.Tensor) -> IKOutput:
        """The model's answers (free joints) for poses (B, 3), (B, 4) turned by −turn (B,) [rad] about the first
        joint's axis, the turn added back to their first joint."""
        assert self.symmetry is not None
        x = self.normalizer(*self.symmetry.move_each(pos, quat, -turn))
        if self.options.turn_input:  # (canonical position, cos, sin, canonical quaternion)
            column = turn.to(x)[:, None]
            x = torch.cat((x[:, :3], torch.cos(column), torch.sin(column), x[:, 3:]), dim=1)
        return self._turn_back(self.model(x), turn)

    def _also_facing(self, out: IKOutput, pos: torch.Tensor, quat: torch.Tensor, azimuth: torch.Tensor,
                     beyond: torch.Tensor) -> IKOutput:
        """A ``behind_turn`` network's answers ``out`` once trained, where a pose lies beyond the first joint's range,
        against those for the pose turned by its azimuth (the facing arm, as a plain canonical network asks): each
        head keeps the one that reaches the pose better. Both are needed: of the IRB120's test targets beyond
        the range, the 64 % whose configurations were bent back are answered well only turned to the back
        half-plane (4.4 against 40.9 mm mean), the 36 % whose arm faced them (the tool reaching across the
        limit) only turned by the azimuth (2.1 against 49.5 mm); both ways, 2.7 mm and 82.6 % (docs/networks.md)."""
        if not bool(beyond.any()):  # beyond (B,): the poses whose turn was not their azimuth
            return out
        facing = self._canonical_answers(pos[beyond], quat[beyond], azimuth[beyond])
        first = out.q[:, None] if out.candidates is None else out.candidates  # (B, H, m)
        second = facing.q[:, None] if facing.candidates is None else facing.candidates
        mine = first[beyond]

        def scores(free: torch.Tensor) -> torch.Tensor:  # (b, H, m) → (b, H)
            full = self.selection.expand(free.reshape(-1, free.shape[-1])).view(*free.shape[:2], -1)
            return self._scores(full, pos[beyond], quat[beyond])

        merged = first.clone()
        merged[beyond] = torch.where((scores(second) < scores(mine))[..., None], second, mine)
        if out.candidates is None:
            return out._replace(q=merged[:, 0])
        return out._replace(q=merged[:, 0], candidates=merged)

    def _turn_back(self, out: IKOutput, azimuth: torch.Tensor) -> IKOutput:
        """The canonical pose's answers with the turn (B,) [rad] added back to the first joint, wrapped into
        ``[lower, lower + 2π)``; out of training (or with ``clamp_in_training``) a value beyond the upper
        limit goes to the nearer limit (the arithmetic of :func:`hik_sim.learning._canonical_turn.turn_back`)."""
        lower, upper = self.lower[0], self.upper[0]
        clamp_in_training = self.options.clamp_in_training

        def turned_first(q: torch.Tensor, clamp: bool) -> torch.Tensor:  # (B, ..., m) → (B, ...)
            turn = azimuth.view(-1, *([1] * (q.ndim - 2))).to(q)
            return wrap_first_joint(q[..., 0] + turn, lower, upper, clamp=clamp)

        def back(q: torch.Tensor) -> torch.Tensor:  # (B, ..., m)
            # beyond the upper limit: the nearer limit round the circle, out of training or with clamp_in_training
            first = turned_first(q, clamp=not self.training or clamp_in_training)
            return torch.cat((first[..., None], q[..., 1:]), dim=-1)

        turned = out._replace(q=back(out.q), candidates=None if out.candidates is None else back(out.candidates))
        if not (self.training and clamp_in_training):
            return turned
        # how far each answer's first joint lay outside the range: the distance to the nearer limit round the
        # circle, its gradient pointing there (the loss's limit_pull)
        wrapped = turned_first(out.q if out.candidates is None else out.candidates, clamp=False)
        return turned._replace(outside=torch.minimum(wrapped - upper, lower + 2 * math.pi - wrapped).clamp(min=0))

    def choose(self, candidates: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """The candidate (B, H, n) → (B, n) whose FK reaches the target (B, 3), (B, 4) best."""
        best = self.rank(candidates, pos, quat)[:, 0]
        return candidates[torch.arange(candidates.shape[0], device=candidates.device), best]

    def beyond_range(self, pos: torch.Tensor) -> torch.Tensor:
        """(B,) bool: the targets at ``pos`` (B, 3) [m] that a ``behind_turn`` network turns into the back half-plane (their
        azimuth lies beyond the first joint's range); all False for any other network."""
        if self.symmetry is None or not self.options.behind_turn or pos.shape[0] == 0:
            return torch.zeros(pos.shape[0], dtype=torch.bool)
        azimuth = self.symmetry.azimuth(torch.as_tensor(pos).to(next(self.parameters())))  # as forward computes it
        return (range_turn(azimuth, self.lower[0], self.upper[0]) != azimuth).cpu()

    def facing_fk(self, pos: torch.Tensor) -> torch.Tensor:
        """(B,) int64: the FK evaluations an answer out of training (:meth:`candidates`, :meth:`solve_all`) spends on its
        own for targets at ``pos`` (B, 3) [m]: a ``behind_turn`` network asks a pose beyond its first joint's range twice
        (turned to the back half-plane and turned by its azimuth) and keeps, head by head, the answer whose FK reaches the
        pose better (:meth:`_also_facing`): 2·H FK for such a pose; 0 for every other pose and network. Solvers that count
        every FK add it (0.43 evaluations a target on the IRB120's hybrid)."""
        return self.beyond_range(pos).long() * (2 * self.hypotheses)

    def rank(self, candidates: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """Indices (B, H) that order each pose's candidates (B, H, n) from the best to the worst.

        Best: least position error / 5 mm + rotation error / 2° of the candidate's FK against the
        target (B, 3), (B, 4), computed in the candidates' dtype.
        """
        return self._scores(candidates, pos, quat).argsort(dim=1)

    def _scores(self, candidates: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """(B, H) position error / 5 mm + rotation error / 2° of each candidate (B, H, n) against its target
        (B, 3), (B, 4), in the candidates' dtype, without gradients."""
        assert self.chain is not None
        batch, hypotheses, n = candidates.shape
        with torch.no_grad():
            reached = self.chain.fk(candidates.detach().reshape(batch * hypotheses, n))
            pos_error = torch.linalg.vector_norm(reached.pos.view(batch, hypotheses, 3) - pos[:, None].to(reached.pos), dim=-1)
            rot_error = geodesic_angle(reached.quat.view(batch, hypotheses, 4),
                                       quat[:, None].to(reached.quat).expand(batch, hypotheses, 4))
            return pos_error / CHOICE_TOLERANCE[0] + rot_error / CHOICE_TOLERANCE[1]

    def solve(self, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """Joint values (B, n) for target poses (the chosen answer), without gradients, in the network's dtype and device.

        Raises:
            HikError: see :meth:`solve_all`. An empty batch (B = 0) answers (0, n).
        """
        return self.solve_all(pos, quat)[:, 0]

    @torch.inference_mode()
    def candidates(self, pos: torch.Tensor, quat: torch.Tensor, turned: str = "better") -> torch.Tensor:
        """Every answer (B, H, n) for target poses in the model's own order: answer h comes from output head h.

        Unranked (:meth:`solve_all` ranks them), inside the joint limits, no gradients, in the network's
        dtype and device. Following one head h across nearby targets follows one solution branch: what
        the closed-loop corrections of :class:`~hik_sim.solvers.neural.NeuralIK` rely on. Targets as for
        :meth:`solve_all`; an empty batch (B = 0) answers an empty (0, H, n) tensor. ``turned``: a
        ``behind_turn`` network's answers for the poses beyond its first joint's range (:meth:`forward`): with
        ``range`` and ``azimuth`` it spends no FK of its own, and a caller can check both sets itself.

        Raises:
            HikError: see :meth:`solve_all`.
        """
        param = next(self.parameters())
        pos, quat = as_targets(pos, quat)  # lists and arrays too; NaN, zero quaternions, absurd distances refused
        if pos.shape[0] == 0:
            return param.new_empty((0, self.hypotheses, len(self.selection.joint_names)))
        was_training = self.training
        if was_training:  # switching walks every module (~0.5 ms): only when needed
            self.eval()
        try:
            out = self(pos.to(param), quat.to(param), choose=False, turned=turned)
            answers = out.q[:, None] if out.candidates is None else out.candidates
        finally:
            if was_training:
                self.train()
        # Inside the limits in the answer's own dtype: the model's squashing maps to the limits only up to rounding
        # (a float32 answer at joint 3's lower limit came out 1.2e-7 rad below it).
        lower, upper = (answers.new_tensor(v) for v in (self.lower, self.upper))
        answers = torch.maximum(torch.minimum(answers, upper), lower)
        bad = ~torch.isfinite(answers).all(dim=2).all(dim=1)
        if bool(bad.any()):  # never hand back NaN joints, whatever the weights do
            raise ModelError(f"the network answered NaN or inf for targets {torch.nonzero(bad).flatten().tolist()[:10]}; "
                           "its weights are not finite or these targets overflow it")
        return answers

    @torch.inference_mode()
    def solve_all(self, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """Every answer (B, H, n) for target poses, the chosen one first, then by how well they reach the target.

        H = 1 for a network with a single answer; no gradients, in the network's dtype and device.
        Targets may be tensors, arrays or nested lists (validated by :func:`as_targets`), quaternions
        of any non-zero length. An empty batch (B = 0) answers an empty (0, H, n) tensor.

        Raises:
            HikError: not real numbers, wrong shapes, NaN/inf, a zero quaternion, a position beyond
                :data:`MAX_TARGET_DISTANCE`, or an answer that is not finite.
        """
        answers = self.candidates(pos, quat)
        if self.hypotheses == 1 or answers.shape[0] == 0:
            return answers
        pos, quat = as_targets(pos, quat)
        order = self.rank(answers, pos.to(answers), quat.to(answers))
        return answers.gather(1, order[:, :, None].expand_as(answers))

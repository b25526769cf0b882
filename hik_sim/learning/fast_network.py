"""`FastIKNetwork`: one pose at a time through a trained network, without torch.

At batch 1 a network's cost is per operation, not per FLOP: torch spends a few µs on each small
op, and HarmoAtt-IK has hundreds of them (1.35 ms per pose on one thread; the MLP 0.23 ms): more
than the whole LM solve the network is meant to seed. :class:`FastIKNetwork` extracts the weights
of an :class:`~hik_sim.learning.network.IKNetwork` once and computes the same function for one pose with
one of two backends. It covers the MLP (and the regression DNN), CycleIK's generator and HarmoAtt-IK's three
trunks: ``dense`` and ``map``, and the paper's ``cycleik`` (CycleIK's generator with fusion blocks inserted,
:mod:`hik_sim.learning.fast_cycleik_trunk`), with or without attention, any number of answers and the
``canonical_turn`` options (``turn_input``: the turn's (cos, sin) handed to the first layer in float64).

- ``numba`` (the extra ``hik_sim[fast]``): the whole forward pass is one compiled call
  (:mod:`hik_sim.learning._fast_numba`, :mod:`~hik_sim.learning._harmoatt_numba` and
  :mod:`~hik_sim.learning._harmoatt_cycleik_numba`, packed by :mod:`hik_sim.learning.fast_numba_pack`), input checks,
  normalisation and clamping included. The weights
  stay the torch model's float32 values, every activation and sum is float64 (a float32 weight
  times a float64 activation is exact), so the big matrices cost float32's memory traffic and the
  answer is the float64 forward pass. erf and the gates' exp are branch-free polynomials (within
  6e-15 and 5e-16 of libm) that vectorise: libm's cost ~10 ns a call, and a network makes
  thousands.
- ``numpy`` (always there; the fallback): a fused float64 NumPy program (:mod:`hik_sim.learning.fast_numpy`,
  its weights folded by :mod:`hik_sim.learning.fast_parts`). Everything linear
  between two nonlinearities is folded into one matrix (the two embeddings into one
  block-diagonal pair of layers; in a fusion block, the pooled means and the first layers of the
  gates and of the weight network into one matrix on the normalised map and its two max-pools; a
  LayerNorm's affine part into the layer that reads it alone; GELU's constants into the layers
  around it). The exact GELU uses ``scipy.special.erf``, as ``torch.nn.GELU()`` computes it.

Both compute in float64, on purpose. The float32 torch model is not reproducible to 1e-5 by any
other float32 program, not even by itself: on the shipped IRB120 networks its batch-1 and
batch-300 answers differ by up to 1e-5…1e-4 rad, and its float32 and float64 forward passes by up
to 5e-4 rad (near the jumps between IK branches a network is steep, and rounding errors of 1e-7
grow to 1e-4). The float64 forward pass of the shipped weights is the one well-defined reference;
both backends agree with it (``copy.deepcopy(network).double()``) to about 1e-12 rad, and with the
float32 model to that model's own rounding.

Several answers (``hypotheses`` > 1) are ranked like :meth:`IKNetwork.rank
<hik_sim.learning.network.IKNetwork.rank>` (position error / 5 mm + rotation error / 2° of each answer's
forward kinematics), with float64 forward kinematics of the same chain geometry instead of
pytorch-kinematics in the network's dtype (:mod:`hik_sim.learning.fast_ranking`): the caller's kinematics, or
the chain geometry's own, compiled in the same call as the network (``numba``) or in NumPy. That
choice is part of :meth:`FastIKNetwork.solve`'s and :meth:`~FastIKNetwork.solve_all`'s cost (one FK
per answer, as the solvers count it); :meth:`FastIKNetwork.forward` and
:meth:`~FastIKNetwork.candidates` are the network alone.

A :class:`FastIKNetwork` keeps scratch buffers: use one instance per thread.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal, Sequence

import numpy as np

from hik_sim.errors import ModelError
from hik_sim.kinematics.flat_chain import flat_geometry
from hik_sim.learning._canonical_turn import CanonicalTurn
from hik_sim.learning.fast_numpy import normalised_input
from hik_sim.learning.fast_parts import MAX_TARGET_DISTANCE, Ranked, _array, _bad_pose, _limits, _Parts
from hik_sim.learning.fast_ranking import CHOICE_TOLERANCE, Scorer, ranked_answers

if TYPE_CHECKING:  # torch is imported by whoever hands us a network
    from hik_sim.learning.network import IKNetwork
    from hik_sim.kinematics.mujoco_chain import SingleTargetKinematics

__all__ = ["FastIKNetwork", "BACKENDS", "Backend", "numba_available", "MAX_TARGET_DISTANCE"]

Backend = Literal["auto", "numba", "numpy"]
BACKENDS: tuple[str, ...] = ("auto", "numba", "numpy")


def numba_available() -> bool:
    """Whether the compiled backend can be used (numba is installed: ``pip install hik_sim[fast]``)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True




class FastIKNetwork:
    """A trained network's answers for one pose, without torch: the same function as the network.

    Build it with :meth:`from_network`. It covers the MLP, CycleIK's generator and HarmoAtt-IK (its three
    trunks, with or without attention), any number of answers, fixed joints, the network's input
    normalisation and its turn options; it does not train and holds no torch tensors.

    Attributes:
        backend: ``numba`` or ``numpy``, the one in use.
        joint_names: the chain's joints, base → tip; answers are in this order.
        hypotheses: H, answers per pose.
        dof: n, the number of chain joints.
        kinematics: the caller's forward kinematics that rank several answers (``None`` when none were given:
            then the chain geometry's own rank them, :class:`~hik_sim.learning.fast_ranking.Scorer`).
        options: the network's :class:`~hik_sim.learning.network_options.NetworkOptions`.
    """

    def __init__(self, parts: _Parts, backend: str, joint_names: Sequence[str], free_index: Sequence[int],
                 fixed_values: np.ndarray, limits: tuple[np.ndarray, np.ndarray], pos_min: np.ndarray, pos_max: np.ndarray,
                 hypotheses: int, kinematics: "SingleTargetKinematics | None", geometry: np.ndarray | None) -> None:
        self._forward, self._fused, self._set_turn = parts.forward, parts.fused, parts.set_turn
        self.backend = backend
        self.joint_names = tuple(joint_names)
        self.dof = len(self.joint_names)
        self.hypotheses = hypotheses
        self.kinematics = kinematics
        if hypotheses > 1 and kinematics is None and geometry is None:
            raise ModelError(f"a network with {hypotheses} hypotheses needs forward kinematics to rank its answers")
        self._scorer = None if kinematics is None and geometry is None else Scorer(kinematics, geometry, backend == "numba")
        self._free_index = np.asarray(free_index, dtype=np.intp)
        self._all_free = len(self._free_index) == self.dof
        self._template = np.asarray(fixed_values, dtype=np.float64)  # (n,): fixed values, free joints 0
        self._lower, self._upper = limits  # (m,) each, of the free joints
        self._pos_min = np.asarray(pos_min, dtype=np.float64)
        self._pos_span = np.asarray(pos_max, dtype=np.float64) - self._pos_min
        self._x = np.empty(7)
        self.options: Any = None  # the network's NetworkOptions, set by from_network
        self._ranked: Ranked | None = None  # answers, their choice and the network in one compiled call (numba, H > 1)
        self._turn: CanonicalTurn | None = None  # set by from_network for a canonical_turn network
        if parts.ranked is not None and geometry is not None and hypotheses > 1:
            self._ranked = parts.ranked(geometry, self._template, self._free_index, CHOICE_TOLERANCE)

    @classmethod
    def from_network(cls, network: "IKNetwork", kinematics: "SingleTargetKinematics | None" = None,
                     backend: Backend = "auto") -> "FastIKNetwork":
        """Extract a network's weights once into a fast forward pass.

        Args:
            network: a trained :class:`~hik_sim.learning.network.IKNetwork` (MLP, CycleIK, the regression DNN or
                HarmoAtt-IK with any trunk).
            kinematics: forward kinematics of the network's robot (``fk(q)`` → pos, quat, and ``robot``), to rank
                several answers; when not given, the FK of ``network.chain``'s geometry rank them (compiled on
                ``numba``, NumPy on ``numpy``). Only used when ``hypotheses`` > 1 or for ``behind_turn``.
            backend: ``numba`` (compiled; needs the ``fast`` extra), ``numpy``, or ``auto``: numba
                when it is installed, else numpy. The first numba network of a process compiles the
                kernels (seconds; cached on disk for later processes).

        Returns:
            The fast network; it shares nothing with ``network`` (later changes to ``network``'s
            weights are not seen).

        Raises:
            HikError: a model this module does not know (the message names the supported ones), an
                unknown backend, ``numba`` without numba installed, kinematics of other joints, or a
                network with several answers and neither ``kinematics`` nor a chain.
        """
        from hik_sim.learning.fast_cycleik_trunk import _harmoatt_cycleik_forward, _numba_harmoatt_cycleik
        from hik_sim.learning.fast_numba_pack import _numba_harmoatt, _numba_mlp
        from hik_sim.learning.fast_numpy import _harmoatt_forward, _mlp_forward
        from hik_sim.learning.models import CycleIKGenerator, HarmoAttCycleIK, HarmoAttIK, MLPIK

        if backend not in BACKENDS:
            raise ModelError(f"unknown backend {backend!r}; backends are: {', '.join(BACKENDS)}")
        if backend == "numba" and not numba_available():
            raise ModelError("the numba backend needs numba: pip install 'hik_sim[fast]' (or use backend='numpy')")
        options = network.options
        turn_input = options.turn_input  # the model reads (cos, sin) of the turn: fast_parts._TurnBias
        if backend == "auto":
            backend = "numba" if numba_available() else "numpy"
        selection = network.selection
        if kinematics is not None and tuple(kinematics.robot.joint_names) != tuple(selection.joint_names):
            raise ModelError(f"the kinematics are {kinematics.robot.name!r}'s joints {list(kinematics.robot.joint_names)}, "
                           f"the network's are {list(selection.joint_names)}")
        hypotheses = int(network.hypotheses)
        behind = options.behind_turn  # asks a pose beyond the range both ways: scores answers
        geometry = None
        if hypotheses > 1 or behind:
            chain = network.chain
            if kinematics is None and chain is None:
                raise ModelError(f"a network with {hypotheses} hypotheses needs its robot's chain or kinematics to rank its answers")
            if kinematics is None:
                assert chain is not None  # checked above
                geometry = flat_geometry(chain.geometry)
        lower, upper = _limits(network, getattr(kinematics, "robot", None))
        free = selection.free_index
        limits = (np.asarray(lower, dtype=np.float64)[free], np.asarray(upper, dtype=np.float64)[free])
        turn = None
        if network.symmetry is not None:  # the model answers for the canonical pose: its first joint spans the limits ± π
            turn = CanonicalTurn(network.symmetry, float(limits[0][0]), float(limits[1][0]), compiled=backend == "numba",
                                  behind=behind)
            limits[0][0] -= math.pi
            limits[1][0] += math.pi
        normalizer = network.normalizer
        pos_min, pos_max = _array(normalizer.pos_min), _array(normalizer.pos_max)
        model = network.model
        if isinstance(model, (MLPIK, CycleIKGenerator)):  # RegressionIK is an MLPIK; CycleIK's trunk is laid out alike
            parts = (_numba_mlp(model, pos_min, pos_max, limits, turn_input) if backend == "numba"
                     else _mlp_forward(model, turn_input))
        elif isinstance(model, HarmoAttIK):
            parts = (_numba_harmoatt(model, pos_min, pos_max, limits, turn_input) if backend == "numba"
                     else _harmoatt_forward(model, turn_input))
        elif isinstance(model, HarmoAttCycleIK):  # HarmoAtt-IK's paper trunk (trunk=cycleik)
            parts = (_numba_harmoatt_cycleik(model, pos_min, pos_max, limits, turn_input) if backend == "numba"
                     else _harmoatt_cycleik_forward(model, turn_input))
        else:
            raise ModelError(f"no fast path for {type(model).__name__}; supported models: MLPIK, RegressionIK, CycleIKGenerator, "
                             "HarmoAttIK, HarmoAttCycleIK")
        template = np.zeros(len(selection.joint_names))
        for i, name in enumerate(selection.joint_names):
            if name in selection.fixed:
                template[i] = float(selection.fixed[name])
        fast = cls(parts, backend, selection.joint_names, free, template, limits, pos_min, pos_max, hypotheses,
                   kinematics if hypotheses > 1 or behind else None, geometry)
        fast._turn, fast.options = turn, options
        return fast

    @staticmethod
    def _arrays(pos: Any, quat: Any) -> tuple[np.ndarray, np.ndarray]:
        """Contiguous float64 (3,), (4,) arrays of a pose; HikError for other shapes."""
        pos = np.ascontiguousarray(pos, dtype=np.float64)
        quat = np.ascontiguousarray(quat, dtype=np.float64)
        if pos.shape != (3,) or quat.shape != (4,):
            raise ModelError(f"a target pose must be a (3,) position and a (4,) quaternion, got shapes {pos.shape} and {quat.shape}")
        return pos, quat

    def forward(self, x: np.ndarray) -> np.ndarray:
        """The bare model on one normalised input.

        Args:
            x: (7,) normalised position (3, in [-1, 1] over the workspace box) and quaternion
                (4, wxyz, w ≥ 0), as :class:`~hik_sim.learning.data.PoseNormalizer` makes it.

        Returns:
            (H, m) float64 free-joint values [rad or m] of the H answers, unranked, as the model
            computes them (not clamped).

        Raises:
            HikError: ``x`` is not a finite (7,) vector.
        """
        x = np.array(x, dtype=np.float64)
        width = 7 if self._set_turn is None else 9
        if x.shape != (width,) or not np.isfinite(x).all():
            raise ModelError(f"a normalised input must be a finite ({width},) vector, got shape {x.shape}")
        if self._set_turn is not None:  # a turn_input model: (cos, sin) handed to the first layer apart, the rest is read as 7
            self._set_turn(x[3], x[4])
            return self._forward(np.concatenate((x[:3], x[5:])))
        return self._forward(x)

    def _free(self, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
        """(H, m) clamped free-joint answers of a pose whose shapes are checked."""
        if self._turn is not None:
            status, canonical_pos, canonical_quat, azimuth = self._turn.canonical(pos, quat)
            if status:
                raise _bad_pose(status, pos, quat)
            if self._set_turn is not None:  # a turn_input model: the turn's (cos, sin) handed to its first layer
                self._set_turn(math.cos(azimuth), math.sin(azimuth))
            free = self._answers(canonical_pos, canonical_quat, (pos, quat))
            self._turn.back(free, azimuth)
            if self._turn.behind:  # a pose beyond the range: asked turned by its azimuth too, each head keeps the better
                status, canonical_pos, canonical_quat, other = self._turn.canonical(pos, quat, behind=False)
                if other != azimuth:
                    if self._set_turn is not None:
                        self._set_turn(math.cos(other), math.sin(other))
                    second = self._answers(canonical_pos, canonical_quat, (pos, quat))
                    self._turn.back(second, other)
                    better = self.scores(self._expand(second), pos, quat) < self.scores(self._expand(free), pos, quat)
                    free[better] = second[better]
            return free
        return self._answers(pos, quat)

    def facing_fk(self, pos: Any, quat: Any) -> int:
        """The FK evaluations :meth:`candidates` spends on its own for one pose (3,) [m], (4,) wxyz: 2·H for a
        ``behind_turn`` network's pose beyond the first joint's range (both answer sets scored, head by head), else 0
        (:meth:`IKNetwork.facing_fk <hik_sim.learning.network.IKNetwork.facing_fk>`)."""
        if self._turn is None or not self._turn.behind:
            return 0
        pos, quat = self._arrays(pos, quat)
        status, _, _, turn = self._turn.canonical(pos, quat)
        if status:
            return 0  # a bad pose: candidates refuses it before any FK
        return 2 * self.hypotheses if self._turn.canonical(pos, quat, behind=False)[3] != turn else 0

    def _answers(self, pos: np.ndarray, quat: np.ndarray, given: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """(H, m) free-joint answers of the model for a pose, clamped to the model's limits; an error names
        the ``given`` pose (the one asked about, before any turn) or else this one."""
        if self._fused is not None:
            status, free = self._fused(pos, quat)
            if status:
                raise _bad_pose(status, *(given or (pos, quat)))
            return free
        status = normalised_input(self._x, pos, quat, self._pos_min, self._pos_span)
        if status:
            raise _bad_pose(status, pos, quat)
        free = self._forward(self._x)
        if not np.isfinite(free).all():
            raise _bad_pose(3, *(given or (pos, quat)))
        # the limit head's centre and half-range are float32: its ±1 lands up to ~1e-7 outside the float64 limits
        np.maximum(free, self._lower, out=free)
        np.minimum(free, self._upper, out=free)
        return free

    def _expand(self, free: np.ndarray) -> np.ndarray:
        if self._all_free:
            return free
        full = np.tile(self._template, (free.shape[0], 1))
        full[:, self._free_index] = free
        return full

    def candidates(self, pos: Any, quat: Any) -> np.ndarray:
        """Every answer for one pose, as the model orders them (unranked).

        Args:
            pos: (3,) target position [m] in the base frame.
            quat: (4,) target orientation, wxyz (need not be unit; q and −q are the same target).

        Returns:
            (H, n) float64 full configurations [rad or m], fixed joints filled in, inside the joint
            limits (the network's own answers can be ~1e-7 outside: its limit head is float32).

        Raises:
            HikError: wrong shapes, NaN/inf or a zero quaternion.
        """
        pos, quat = self._arrays(pos, quat)
        return self._expand(self._free(pos, quat))

    def scores(self, answers: np.ndarray, pos: Any, quat: Any) -> np.ndarray:
        """How badly each answer reaches the target: position error / 5 mm + rotation error / 2°.

        Args:
            answers: (H, n) configurations.
            pos: (3,) target position [m].
            quat: (4,) target quaternion, wxyz (any non-zero norm).

        Returns:
            (H,) scores, lower is better (the :data:`~hik_sim.learning.network.CHOICE_TOLERANCE` units), from
            float64 forward kinematics (the given kinematics, else the chain geometry's: compiled on ``numba``,
            NumPy on ``numpy``).

        Raises:
            HikError: no forward kinematics (a single-answer network built without them).
        """
        pos, quat = self._arrays(pos, quat)
        if self._scorer is None:
            raise ModelError("scoring answers needs forward kinematics; build the fast network with kinematics=")
        return self._scorer(answers, pos, quat)

    def solve_all(self, pos: Any, quat: Any) -> np.ndarray:
        """Every answer for one pose, the best first, ranked like :meth:`IKNetwork.solve_all
        <hik_sim.learning.network.IKNetwork.solve_all>`.

        Args:
            pos: (3,) target position [m] in the base frame.
            quat: (4,) target orientation, wxyz (need not be unit).

        Returns:
            (H, n) float64 configurations [rad or m] inside the joint limits; H = 1 for a network
            with one answer (then no forward kinematics is run).

        Raises:
            HikError: wrong shapes, NaN/inf or a zero quaternion.
        """
        if self._ranked is not None:
            answers, scores, _ = ranked_answers(self._ranked, self._turn, self._set_turn, self.scores, *self._arrays(pos, quat))
            return answers[np.argsort(scores, kind="stable")]
        answers = self.candidates(pos, quat)
        if self.hypotheses == 1:
            return answers
        return answers[np.argsort(self.scores(answers, pos, quat), kind="stable")]

    def solve(self, pos: Any, quat: Any) -> np.ndarray:
        """The network's answer for one pose (with several answers, the one that reaches the target best).

        Args:
            pos: (3,) target position [m] in the base frame.
            quat: (4,) target orientation, wxyz (need not be unit).

        Returns:
            (n,) float64 joint values [rad or m], chain order, inside the joint limits.

        Raises:
            HikError: wrong shapes, NaN/inf or a zero quaternion.
        """
        if self._ranked is not None:
            answers, _, best = ranked_answers(self._ranked, self._turn, self._set_turn, self.scores, *self._arrays(pos, quat))
            return answers[best]
        answers = self.candidates(pos, quat)
        if self.hypotheses == 1:
            return answers[0]
        return answers[int(np.argmin(self.scores(answers, pos, quat)))]

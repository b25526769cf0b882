"""`FastIKNetwork`: one pose at a time through a trained network, without torch.

At batch 1 a network's cost is per operation, not per FLOP: torch spends a few µs on each small
op, and HarmoAtt-IK has hundreds of them (1.35 ms per pose on one thread; the MLP 0.23 ms): more
than the whole LM solve the network is meant to seed. :class:`FastIKNetwork` extracts the weights
of an :class:`~hik_sim.learning.network.IKNetwork` once and computes the same function for one pose with
one of two backends:

- ``numba`` (the extra ``hik_sim[fast]``): the whole forward pass is one compiled call
  (:mod:`hik_sim.learning._fast_numba`), input checks, normalisation and clamping included. The weights
  stay the torch model's float32 values, every activation and sum is float64 (a float32 weight
  times a float64 activation is exact), so the big matrices cost float32's memory traffic and the
  answer is the float64 forward pass. erf and the gates' exp are branch-free polynomials (within
  6e-15 and 5e-16 of libm) that vectorise: libm's cost ~10 ns a call, and a network makes
  thousands.
- ``numpy`` (always there; the fallback): a fused float64 NumPy program. Everything linear
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
pytorch-kinematics in the network's dtype: compiled (``numba``, about 1 µs for 4 answers, in the
same compiled call as the network when no kinematics were given: :func:`~hik_sim.learning._fast_numba.rank`;
as separate calls the choice cost ~6 µs more, mostly Python) or MuJoCo's C functions
(:class:`~hik_sim.solvers.single_target.SingleTargetKinematics`, a few µs per answer). Answers
whose scores differ by less than the network's dtype's rounding may be ordered differently. That
choice is part of :meth:`FastIKNetwork.solve`'s and :meth:`~FastIKNetwork.solve_all`'s cost (one FK
per answer, as the solvers count it); :meth:`FastIKNetwork.forward` and
:meth:`~FastIKNetwork.candidates` are the network alone.

A :class:`FastIKNetwork` keeps scratch buffers: use one instance per thread.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Literal, NamedTuple, Sequence

import numpy as np
from scipy.special import erf, expit

from hik_sim.errors import HikError, ModelError
from hik_sim.kinematics.tolerances import rotation_angle

MAX_TARGET_DISTANCE = 1e4
"""[m]: :data:`hik_sim.learning.network.MAX_TARGET_DISTANCE` (importing it would import torch)."""

if TYPE_CHECKING:  # torch is imported by whoever hands us a network
    from hik_sim.learning.network import IKNetwork
    from hik_sim.solvers.single_target import SingleTargetKinematics

__all__ = ["FastIKNetwork", "BACKENDS", "Backend", "numba_available"]

Backend = Literal["auto", "numba", "numpy"]
BACKENDS: tuple[str, ...] = ("auto", "numba", "numpy")


def numba_available() -> bool:
    """Whether the compiled backend can be used (numba is installed: ``pip install hik_sim[fast]``)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


_SQRT1_2 = math.sqrt(0.5)


def _array(tensor: Any, dtype: type = np.float64) -> np.ndarray:
    """A detached float64 copy of a tensor (folding happens in float64, the result is cast once)."""
    return tensor.detach().cpu().double().numpy().astype(dtype, copy=True)


def _gelu_kind(module: Any) -> str:
    """``erf`` or ``tanh``: which GELU a ``torch.nn.GELU`` computes."""
    approximate = getattr(module, "approximate", "none")
    if approximate not in ("none", "tanh"):
        raise ModelError(f"no fast path for GELU(approximate={approximate!r}); supported: 'none', 'tanh'")
    return "erf" if approximate == "none" else "tanh"


def _check_gelus(modules: Sequence[Any]) -> str:
    """The one GELU kind used by all of ``modules`` (the fast path folds one formula's constants)."""
    kinds = {_gelu_kind(m) for m in modules}
    if len(kinds) != 1:
        raise ModelError("no fast path for a network that mixes exact and tanh GELUs")
    return kinds.pop()


def _gelu_erf(y: np.ndarray) -> np.ndarray:
    """``y·(1 + erf(y))``: the exact GELU of ``x = √2·y`` times √2 (the constants live in the layers around it)."""
    out = erf(y)
    out += 1.0
    out *= y
    return out


def _gelu_tanh(y: np.ndarray) -> np.ndarray:
    """``y·(1 + tanh(√(2/π)·(y + 0.044715·y³)))``: the tanh GELU of ``y`` times 2."""
    out = y * y
    out *= 0.044715
    out += 1.0
    out *= y
    out *= math.sqrt(2.0 / math.pi)
    np.tanh(out, out=out)
    out += 1.0
    out *= y
    return out


def _gelu_ops(kind: str) -> tuple[float, float, Callable[[np.ndarray], np.ndarray]]:
    """GELU with its constants folded into the layers around it: (pre, post, function).

    For the exact GELU, ``gelu(x) = 0.5·x·(1 + erf(x/√2))``: the layer before is scaled by
    ``pre`` = 1/√2 (so it yields ``y = x/√2``), the function computes ``y·(1 + erf(y))`` and the
    layer after is scaled by ``post`` = 1/√2 (= 0.5·√2). For the tanh form, no pre-scaling and
    ``post`` = 0.5.
    """
    if kind == "erf":
        return _SQRT1_2, _SQRT1_2, _gelu_erf
    return 1.0, 0.5, _gelu_tanh


class FastIKNetwork:
    """A trained network's answers for one pose, without torch: the same function as the network.

    Build it with :meth:`from_network`. It covers the MLP and HarmoAtt-IK (both trunks, with or
    without attention), any number of answers, fixed joints and the network's input
    normalisation; it does not train and holds no torch tensors.

    Attributes:
        backend: ``numba`` or ``numpy``, the one in use.
        joint_names: the chain's joints, base → tip; answers are in this order.
        hypotheses: H, answers per pose.
        dof: n, the number of chain joints.
        kinematics: the MuJoCo forward kinematics that ranks several answers on the ``numpy``
            backend (``None`` when H = 1, or on ``numba``, which ranks with its own compiled FK of
            the same chain geometry unless kinematics were given).
    """

    def __init__(self, parts: "_Parts", backend: str, joint_names: Sequence[str], free_index: Sequence[int],
                 fixed_values: np.ndarray, limits: tuple[np.ndarray, np.ndarray], pos_min: np.ndarray, pos_max: np.ndarray,
                 hypotheses: int, kinematics: "SingleTargetKinematics | None", geometry: np.ndarray | None) -> None:
        self._forward, self._fused, self._set_turn = parts.forward, parts.fused, parts.set_turn
        self.backend = backend
        self.joint_names = tuple(joint_names)
        self.dof = len(self.joint_names)
        self.hypotheses = hypotheses
        self.kinematics = kinematics
        self._geometry = geometry  # flat chain geometry for the compiled scores, or None
        if hypotheses > 1 and kinematics is None and geometry is None:
            raise ModelError(f"a network with {hypotheses} hypotheses needs forward kinematics to rank its answers")
        self._free_index = np.asarray(free_index, dtype=np.intp)
        self._all_free = len(self._free_index) == self.dof
        self._template = np.asarray(fixed_values, dtype=np.float64)  # (n,): fixed values, free joints 0
        self._lower, self._upper = limits  # (m,) each, of the free joints
        self._pos_min = np.asarray(pos_min, dtype=np.float64)
        self._pos_span = np.asarray(pos_max, dtype=np.float64) - self._pos_min
        self._x = np.empty(7)
        self._ranked: Ranked | None = None  # answers, their choice and the network in one compiled call (numba, H > 1)
        self._turn: _CanonicalTurn | None = None  # set by from_network for a canonical_turn network
        if parts.ranked is not None and geometry is not None and hypotheses > 1:
            from hik_sim.learning.network import CHOICE_TOLERANCE  # torch is loaded: the caller handed us a network

            self._ranked = parts.ranked(geometry, self._template, self._free_index, CHOICE_TOLERANCE)

    @classmethod
    def from_network(cls, network: "IKNetwork", kinematics: "SingleTargetKinematics | None" = None,
                     backend: Backend = "auto") -> "FastIKNetwork":
        """Extract a network's weights once into a fast forward pass.

        Args:
            network: a trained :class:`~hik_sim.learning.network.IKNetwork` (MLP or HarmoAtt-IK).
            kinematics: MuJoCo forward kinematics of the network's robot, to rank several answers;
                when not given, built from ``network.chain`` (``numpy``), or replaced by a compiled
                FK of ``network.chain``'s geometry (``numba``). Only used when ``hypotheses`` > 1.
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
        from hik_sim.learning.models import CycleIKGenerator, HarmoAttIK, MLPIK

        if backend not in BACKENDS:
            raise ModelError(f"unknown backend {backend!r}; backends are: {', '.join(BACKENDS)}")
        if backend == "numba" and not numba_available():
            raise ModelError("the numba backend needs numba: pip install 'hik_sim[fast]' (or use backend='numpy')")
        turn_input = bool(getattr(network, "turn_input", False))  # the model reads (cos, sin) of the turn: _TurnBias
        if backend == "auto":
            backend = "numba" if numba_available() else "numpy"
        selection = network.selection
        if kinematics is not None and tuple(kinematics.robot.joint_names) != tuple(selection.joint_names):
            raise ModelError(f"the kinematics are {kinematics.robot.name!r}'s joints {list(kinematics.robot.joint_names)}, "
                           f"the network's are {list(selection.joint_names)}")
        hypotheses = int(network.hypotheses)
        behind = bool(getattr(network, "behind_turn", False))  # asks a pose beyond the range both ways: scores answers
        geometry = None
        if hypotheses > 1 or behind:
            chain = network.chain
            if kinematics is None and chain is None:
                raise ModelError(f"a network with {hypotheses} hypotheses needs its robot's chain or kinematics to rank its answers")
            if backend == "numba" and kinematics is None:
                assert chain is not None  # checked above
                geometry = _flat_geometry(chain.geometry)
            elif kinematics is None:
                from hik_sim.solvers.single_target import SingleTargetKinematics

                assert chain is not None  # checked above
                kinematics = SingleTargetKinematics(chain.robot, chain.geometry)
        lower, upper = _limits(network, kinematics)
        free = selection.free_index
        limits = (np.asarray(lower, dtype=np.float64)[free], np.asarray(upper, dtype=np.float64)[free])
        turn = None
        if network.symmetry is not None:  # the model answers for the canonical pose: its first joint spans the limits ± π
            turn = _CanonicalTurn(network.symmetry, float(limits[0][0]), float(limits[1][0]), compiled=backend == "numba",
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
        else:
            raise ModelError(f"no fast path for {type(model).__name__}; supported models: MLPIK, RegressionIK, CycleIKGenerator, HarmoAttIK")
        template = np.zeros(len(selection.joint_names))
        for i, name in enumerate(selection.joint_names):
            if name in selection.fixed:
                template[i] = float(selection.fixed[name])
        fast = cls(parts, backend, selection.joint_names, free, template, limits, pos_min, pos_max, hypotheses,
                   kinematics if hypotheses > 1 or behind else None, geometry)
        fast._turn = turn
        return fast

    @staticmethod
    def _arrays(pos: Any, quat: Any) -> tuple[np.ndarray, np.ndarray]:
        """Contiguous float64 (3,), (4,) arrays of a pose; HikError for other shapes."""
        pos = np.ascontiguousarray(pos, dtype=np.float64)
        quat = np.ascontiguousarray(quat, dtype=np.float64)
        if pos.shape != (3,) or quat.shape != (4,):
            raise ModelError(f"a target pose must be a (3,) position and a (4,) quaternion, got shapes {pos.shape} and {quat.shape}")
        return pos, quat

    @staticmethod
    def _bad_pose(status: int, pos: np.ndarray, quat: np.ndarray) -> HikError:
        if status == 1:
            return HikError(f"a target pose must be finite; got position {pos.tolist()} and quaternion {quat.tolist()}")
        if status == 2:
            return HikError("a target quaternion must be non-zero (norm >= 1e-9); give a unit quaternion (w, x, y, z)")
        if status == 3:
            return HikError("the network answered NaN or inf for this target; its weights are not finite or the target overflows it")
        return HikError(f"a target position must lie within {MAX_TARGET_DISTANCE:g} m of the chain's base along each axis, "
                        f"got {pos.tolist()} (a unit or frame mistake?)")

    def _input(self, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
        """The network input (7,) of one shape-checked pose, as :meth:`IKNetwork.solve_all
        <hik_sim.learning.network.IKNetwork.solve_all>` makes it: the quaternion normalised (in two steps: |q|²
        of a 1e300-long one overflows), then :class:`~hik_sim.learning.data.PoseNormalizer`."""
        if not (np.isfinite(pos).all() and np.isfinite(quat).all()):
            raise self._bad_pose(1, pos, quat)
        if float(np.abs(pos).max()) > MAX_TARGET_DISTANCE:
            raise self._bad_pose(4, pos, quat)
        scale = float(np.abs(quat).max())
        unit = quat / scale if scale > 0 else quat
        length = math.sqrt(float(unit @ unit))
        if scale * length < 1e-9:
            raise self._bad_pose(2, pos, quat)
        x = self._x  # 2·(p − min)/(max − min) − 1, and w ≥ 0
        x[:3] = pos
        x[:3] -= self._pos_min
        x[:3] *= 2.0
        x[:3] /= self._pos_span
        x[:3] -= 1.0
        x[3:] = unit
        x[3:] /= length
        if quat[0] < 0:
            x[3:] *= -1.0
        return x

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
        if self._set_turn is not None:  # a turn_input model: (cos, sin) become the first layer's bias, the rest is read as 7
            self._set_turn(x[3], x[4])
            return self._forward(np.concatenate((x[:3], x[5:])))
        return self._forward(x)

    def _free(self, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
        """(H, m) clamped free-joint answers of a pose whose shapes are checked."""
        if self._turn is not None:
            status, canonical_pos, canonical_quat, azimuth = self._turn.canonical(pos, quat)
            if status:
                raise self._bad_pose(status, pos, quat)
            if self._set_turn is not None:  # a turn_input model: the turn enters the first layer as its bias
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
                raise self._bad_pose(status, *(given or (pos, quat)))
            return free
        free = self._forward(self._input(pos, quat))
        if not np.isfinite(free).all():
            raise self._bad_pose(3, *(given or (pos, quat)))
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
            float64 forward kinematics (compiled on ``numba``, MuJoCo's otherwise).

        Raises:
            HikError: no forward kinematics (a single-answer network built without them).
        """
        from hik_sim.learning.network import CHOICE_TOLERANCE

        pos, quat = self._arrays(pos, quat)
        answers = np.ascontiguousarray(answers, dtype=np.float64)
        out = np.empty(len(answers))
        if self._geometry is not None:
            from hik_sim.learning import _fast_numba

            _fast_numba.scores(self._geometry, answers, pos, quat, CHOICE_TOLERANCE[0], CHOICE_TOLERANCE[1], out)
            return out
        if self.kinematics is None:
            raise ModelError("scoring answers needs forward kinematics; build the fast network with kinematics=")
        unit = quat / math.sqrt(quat @ quat)
        for k, q in enumerate(answers):
            reached = self.kinematics.fk(q)
            delta = reached.pos - pos
            out[k] = math.sqrt(delta @ delta) / CHOICE_TOLERANCE[0] + rotation_angle(reached.quat, unit) / CHOICE_TOLERANCE[1]
        return out

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
            answers, scores, _ = self._ranked_answers(*self._arrays(pos, quat))
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
            answers, _, best = self._ranked_answers(*self._arrays(pos, quat))
            return answers[best]
        answers = self.candidates(pos, quat)
        if self.hypotheses == 1:
            return answers[0]
        return answers[int(np.argmin(self.scores(answers, pos, quat)))]

    def _ranked_answers(self, pos: np.ndarray, quat: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """The compiled path's (H, n) answers in head order, their (H,) scores and the best one's index
        for a pose whose shapes are checked: the network and the choice in one call.

        A ``canonical_turn`` network's answers are ranked for the canonical pose (the turn moves an
        answer's forward kinematics and its target alike, so the errors are the same), and again
        for the pose itself when the turn back moved one of them to a limit.
        """
        assert self._ranked is not None  # the callers check
        if self._turn is None:
            status, answers, scores, best = self._ranked(pos, quat)
            if status:
                raise self._bad_pose(status, pos, quat)
            return answers, scores, best
        status, canonical_pos, canonical_quat, azimuth = self._turn.canonical(pos, quat)
        if status:
            raise self._bad_pose(status, pos, quat)
        if self._set_turn is not None:
            self._set_turn(math.cos(azimuth), math.sin(azimuth))
        status, answers, scores, best = self._ranked(canonical_pos, canonical_quat)
        if status:
            raise self._bad_pose(status, pos, quat)
        if self._turn.back(answers, azimuth):
            scores = self.scores(answers, pos, quat)
            best = int(np.argmin(scores))
        if self._turn.behind:  # a pose beyond the range: asked turned by its azimuth too, each head keeps the better
            status, canonical_pos, canonical_quat, other = self._turn.canonical(pos, quat, behind=False)
            if other != azimuth:
                if self._set_turn is not None:
                    self._set_turn(math.cos(other), math.sin(other))
                status, second, second_scores, _ = self._ranked(canonical_pos, canonical_quat)
                if self._turn.back(second, other):
                    second_scores = self.scores(second, pos, quat)
                better = second_scores < scores
                answers[better], scores[better] = second[better], second_scores[better]
                best = int(np.argmin(scores))
        return answers, scores, best


class _CanonicalTurn:
    """The first joint's turn taken out of a ``canonical_turn`` network's input and added back to its answers,
    in float64 as :class:`~hik_sim.learning.network.IKNetwork` does it in torch: compiled
    (:func:`~hik_sim.learning._fast_numba.canonical_pose`, :func:`~hik_sim.learning._fast_numba.turn_back`)
    on the ``numba`` backend, in Python on ``numpy``.

    Args:
        symmetry: the chain's :class:`~hik_sim.kinematics.symmetry.FirstJointSymmetry` (revolute).
        lower: the first joint's lower limit [rad].
        upper: its upper limit [rad].
        compiled: use the numba kernels.
        behind: a ``behind_turn`` network's turn (:func:`~hik_sim.kinematics.symmetry.range_turn`), not the azimuth.
    """

    def __init__(self, symmetry: Any, lower: float, upper: float, compiled: bool, behind: bool = False) -> None:
        origin, axis, u = (np.asarray(v, dtype=np.float64) for v in (symmetry.origin, symmetry.axis, symmetry.reference))
        self.frame = np.concatenate((origin, axis, u, np.cross(axis, u)))  # (12,): _canonical_turn's frame
        self.lower, self.upper, self.behind = lower, upper, behind
        if compiled:
            from hik_sim.learning import _fast_numba as kernels
        else:
            from hik_sim.learning import _canonical_turn as kernels  # type: ignore[no-redef]
        self._canonical_pose, self._turn_back = kernels.canonical_pose, kernels.turn_back
        self._pos, self._quat = np.empty(3), np.empty(4)

    def canonical(self, pos: np.ndarray, quat: np.ndarray, behind: bool | None = None) -> tuple[int, np.ndarray, np.ndarray, float]:
        """A pose (3,) [m], (4,) wxyz → (status, the pose turned by −turn about the axis, the turn [rad]: its azimuth
        or, with ``behind`` (default: the network's), the range_turn of it);
        status as :func:`~hik_sim.learning._canonical_turn.canonical_pose`'s 0, 1 (NaN/inf) or 4 (too far).
        The returned arrays are reused by the next call."""
        status, azimuth = self._canonical_pose(self.frame, pos, quat, self._pos, self._quat, MAX_TARGET_DISTANCE,
                                               self.lower, self.upper, self.behind if behind is None else behind)
        return status, self._pos, self._quat, azimuth

    def back(self, answers: np.ndarray, azimuth: float) -> bool:
        """Column 0 of answers (H, k) (the canonical first joint) in place → the pose's own: + azimuth, wrapped
        into ``[lower, lower + 2π)``, beyond ``upper`` moved to the nearer limit round the circle. Returns
        whether any answer was moved to a limit."""
        return bool(self._turn_back(answers, azimuth, self.lower, self.upper))


Ranked = Callable[[np.ndarray, np.ndarray], tuple[int, np.ndarray, np.ndarray, int]]
"""``ranked(pos, quat) -> (status, answers (H, n), scores (H,), best)``: a checked-shape pose to its
clamped full answers in head order, their scores and the best one's index, in one compiled call."""


class _Parts(NamedTuple):
    """A backend's pieces: the bare forward pass x (7,) → (H, m); (numba) one call from a checked-shape
    pose to clamped answers, ``fused(pos, quat) -> (status, (H, m))`` (status: 0, 1 NaN/inf, 2 zero
    quaternion, 3 answer not finite, 4 position too far); and (numba) ``ranked(G, template,
    free_index, tolerance)``, which makes the :data:`Ranked` call that chooses among the answers too
    (G: the flat chain geometry; template (n,): the fixed joints' values; free_index (m,); tolerance:
    the score's position [m] and rotation [rad] units). For a ``turn_input`` network, ``set_turn(cos, sin)``
    writes the turn's (cos, sin) into the first layer's bias before a call (:class:`_TurnBias`), so the
    forward passes read the usual 7 inputs."""

    forward: Callable[[np.ndarray], np.ndarray]
    fused: Callable[[np.ndarray, np.ndarray], tuple[int, np.ndarray]] | None = None
    ranked: Callable[[np.ndarray, np.ndarray, np.ndarray, tuple[float, float]], Ranked] | None = None
    set_turn: Callable[[float, float], None] | None = None


def _ranked_maker(kernel: Callable[..., tuple[int, int]], weights: tuple[np.ndarray, ...], x: np.ndarray, work: np.ndarray,
                  outputs: int, hypotheses: int) -> Callable[[np.ndarray, np.ndarray, np.ndarray, tuple[float, float]], Ranked]:
    """A backend's ``ranked`` (see :class:`_Parts`) around a compiled ``*_solve_ranked`` kernel, whose
    arguments begin with the model's ``weights`` (its P, I[, S] and N arrays)."""

    def ranked(G: np.ndarray, template: np.ndarray, free_index: np.ndarray, tolerance: tuple[float, float]) -> Ranked:
        n = template.shape[0]

        def answer(pos: np.ndarray, quat: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, int]:
            out, answers, scores = np.empty(outputs), np.empty((hypotheses, n)), np.empty(hypotheses)
            status, best = kernel(*weights, G, template, free_index, pos, quat, x, out, work, MAX_TARGET_DISTANCE,
                                  tolerance[0], tolerance[1], answers, scores)
            return status, answers, scores, best

        return answer

    return ranked


def _flat_geometry(geometry: Any) -> np.ndarray:
    """A :class:`~hik_sim.kinematics.geometry.ChainGeometry` as the flat float64 array :func:`hik_sim.learning._fast_numba.scores` reads."""
    from hik_sim.learning._fast_numba import GEOMETRY_STRIDE

    n = len(geometry.joint_names)
    flat = np.zeros(GEOMETRY_STRIDE * n + 12)
    for i in range(n):
        g = GEOMETRY_STRIDE * i
        flat[g:g + 9] = np.asarray(geometry.rotations[i], dtype=np.float64).reshape(9)
        flat[g + 9:g + 12] = geometry.translations[i]
        flat[g + 12:g + 15] = geometry.axes[i]
        flat[g + 15] = 1.0 if bool(geometry.revolute[i]) else 0.0
    flat[GEOMETRY_STRIDE * n:GEOMETRY_STRIDE * n + 9] = np.asarray(geometry.tool_rotation, dtype=np.float64).reshape(9)
    flat[GEOMETRY_STRIDE * n + 9:] = geometry.tool_translation
    return flat


def _limits(network: "IKNetwork", kinematics: "SingleTargetKinematics | None") -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The robot's joint limits (n,), (n,) in float64: from the kinematics' robot, the network's chain or its card.

    ``network.lower`` is the last resort: it holds the limits as the float32 tensors they were
    built from (1.22173 is 1.2217299938…).
    """
    for robot in (getattr(kinematics, "robot", None), getattr(network.chain, "robot", None), getattr(network, "card", None)):
        if robot is not None and tuple(robot.joint_names) == tuple(network.selection.joint_names):
            return tuple(robot.lower), tuple(robot.upper)
    return network.lower, network.upper


def _linear(layer: Any, pre: float = 1.0, post_of_input: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(W, b) float64 of a torch Linear; the output scaled by ``pre``, the input's folded GELU by ``post_of_input``."""
    weight = _array(layer.weight) * post_of_input * pre
    bias = _array(layer.bias) * pre if layer.bias is not None else np.zeros(weight.shape[0])
    return weight, bias


def _f64(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Contiguous float64 copies (the NumPy backend computes in float64)."""
    return tuple(np.ascontiguousarray(a, dtype=np.float64) for a in arrays)


def _head(head: Any, post_of_input: float) -> Callable[[np.ndarray], np.ndarray]:
    """A :class:`~hik_sim.learning.models.common.LimitHead`: features (F,) → (H, m) joint values."""
    weight, bias = _f64(*_linear(head.linear, post_of_input=post_of_input))
    center, half = _f64(_array(head.center), _array(head.half_range))
    hypotheses = int(head.hypotheses)

    def apply(features: np.ndarray) -> np.ndarray:
        raw = weight @ features
        raw += bias
        np.tanh(raw, out=raw)
        out = raw.reshape(hypotheses, -1)
        out *= half
        out += center
        return out

    return apply


def _mlp_forward(model: Any, turn_input: bool = False) -> _Parts:
    """The MLP's forward pass: Linear–GELU pairs, then the limit head; ``turn_input``: its first layer reads the
    turn (:class:`_TurnBias`)."""
    from torch import nn

    modules = list(model.trunk)
    linears = [m for m in modules if isinstance(m, nn.Linear)]
    gelus = [m for m in modules if isinstance(m, nn.GELU)]
    if len(linears) != len(gelus) or len(linears) + len(gelus) != len(modules):
        raise ModelError("no fast path for this MLP: its trunk must be Linear–GELU pairs")
    if not gelus:  # a trunk without layers: the head alone
        if turn_input:
            raise ModelError("no fast path for a turn_input MLP without layers")
        return _Parts(_head(model.head, 1.0))
    pre, post, gelu = _gelu_ops(_check_gelus(gelus))
    layers = []
    scale_in = 1.0
    for linear in linears:
        layers.append(_f64(*_linear(linear, pre=pre, post_of_input=scale_in)))
        scale_in = post
    head = _head(model.head, scale_in)
    (w0, b0), rest = layers[0], layers[1:]
    turn = None
    if turn_input:
        w0, turn = _TurnBias.split(w0, b0)
        w0 = np.ascontiguousarray(w0)

    def forward(x: np.ndarray) -> np.ndarray:
        h = w0 @ x
        h += b0
        h = gelu(h)
        for w, b in rest:
            h = w @ h
            h += b
            h = gelu(h)
        return head(h)

    return _Parts(forward, set_turn=None if turn is None else turn.setter(b0))


def _layer_norm(norm: Any) -> tuple[np.ndarray, np.ndarray, float]:
    """A LayerNorm's flat affine (weight, bias) and eps."""
    if not norm.elementwise_affine:
        size = int(np.prod(norm.normalized_shape))
        return np.ones(size), np.zeros(size), float(norm.eps)
    bias = _array(norm.bias).reshape(-1) if norm.bias is not None else np.zeros(norm.weight.numel())
    return _array(norm.weight).reshape(-1), bias, float(norm.eps)


def _harmoatt_forward(model: Any, turn_input: bool = False) -> _Parts:
    """HarmoAtt-IK's forward pass (``map`` or ``dense`` trunk, with or without attention); ``turn_input``: its
    position embedding reads the turn (:class:`_TurnBias`)."""
    from torch import nn

    channels, positions = int(model.channels), int(model.positions)
    width = channels * positions
    gelus = [m for m in model.modules() if isinstance(m, nn.GELU)]
    pre, post, gelu = _gelu_ops(_check_gelus(gelus))

    # embeddings: two Linear–GELU–Linear stacks on x[:3] and x[3:] → one block-diagonal pair
    pos_embed, ori_embed = list(model.pos_embed), list(model.ori_embed)
    (pw1, pb1), (ow1, ob1) = _linear(pos_embed[0], pre), _linear(ori_embed[0], pre)
    (pw2, pb2), (ow2, ob2) = _linear(pos_embed[2], post_of_input=post), _linear(ori_embed[2], post_of_input=post)
    turn = None
    if turn_input:  # 5 position inputs: (cos, sin) go to the bias
        pw1, turn = _TurnBias.split(pw1, pb1)
    hidden_p, hidden_o = pw1.shape[0], ow1.shape[0]
    embed1 = np.zeros((hidden_p + hidden_o, 7))
    embed1[:hidden_p, :3], embed1[hidden_p:, 3:] = pw1, ow1
    embed_b1 = np.concatenate((pb1, ob1))
    embed2 = np.zeros((width, hidden_p + hidden_o))
    split = pw2.shape[0]
    embed2[:split, :hidden_p], embed2[split:, hidden_p:] = pw2, ow2
    embed_b2 = np.concatenate((pb2, ob2)) + _array(model.position_code).reshape(-1)
    embed1, embed_b1, embed2, embed_b2 = _f64(embed1, embed_b1, embed2, embed_b2)

    blocks = [_fusion_block(block, channels, positions, pre, post, gelu) for block in model.blocks]
    trunk_head = _trunk_head(model, width, pre, post, gelu)

    def forward(x: np.ndarray) -> np.ndarray:
        h = embed1 @ x
        h += embed_b1
        h = embed2 @ gelu(h)
        h += embed_b2
        for block in blocks:
            h = block(h)
        return trunk_head(h)

    return _Parts(forward, set_turn=None if turn is None else turn.setter(embed_b1[:hidden_p]))


def _normalise(x: np.ndarray, inv_size: float, eps: float) -> np.ndarray:
    """(x − mean) / √(var + eps) over all of a flat map (LayerNorm without its affine part)."""
    d = x - np.add.reduce(x) * inv_size
    d *= 1.0 / math.sqrt(float(d @ d) * inv_size + eps)
    return d


def _fusion_block(block: Any, channels: int, positions: int, pre: float, post: float,
                  gelu: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """One :class:`~hik_sim.learning.models.harmoatt.FusionBlock` on a flat map (L·C,) → (L·C,)."""
    from torch import nn

    C, L = channels, positions
    LC = L * C
    inv_size = 1.0 / LC
    if isinstance(block.norm, nn.LayerNorm):
        norm_w, norm_b, norm_eps = _layer_norm(block.norm)
        norm_w32, norm_b32 = _f64(norm_w, norm_b)

        def block_norm(x: np.ndarray) -> np.ndarray:
            normed = _normalise(x, inv_size, norm_eps)
            normed *= norm_w32
            normed += norm_b32
            return normed
    elif isinstance(block.norm, nn.Identity):  # the dense trunk: no norm (the map is read, never written)
        def block_norm(x: np.ndarray) -> np.ndarray:
            return x
    else:
        raise ModelError(f"no fast path for a fusion block normalised by {type(block.norm).__name__}; supported: LayerNorm, Identity")
    attention = bool(getattr(block, "attention", True))
    feed_forward = _feed_forward(block.feed_forward, C, L, pre, post, gelu)

    if not attention:  # x + norm(x), then the feed-forward layer; the fusion weights do not matter
        def forward_plain(x: np.ndarray) -> np.ndarray:
            return feed_forward(x + block_norm(x))

        return forward_plain

    tau_min, tau_span = float(block.tau_min), float(block.tau_max) - float(block.tau_min)
    cg1, cg2 = block.channel_gate[0], block.channel_gate[2]
    wn1, wn2 = block.weight_net[0], block.weight_net[2]
    if not (isinstance(cg1, nn.Linear) and isinstance(wn1, nn.Linear)):
        raise ModelError("no fast path for this HarmoAtt-IK block: unexpected gate layers")
    r = cg1.out_features
    mean_over_l = np.tile(np.eye(C), (1, L)) / L  # (C, LC): mean over positions of a flat (L, C) map
    mean_over_c = np.kron(np.eye(L), np.ones((1, C))) / C  # (L, LC): mean over channels

    # one matrix on [normed (LC), max over L (C), max over C (L)] → z = [weight-net hidden (C),
    # channel-gate hidden (r), spatial logits (L)]; the cross logits value·x + context_w·(Wp x Wcᵀ) + b
    # apart (folding their context too, a Kronecker product of (LC)² values, costs more memory
    # traffic than the two small products it saves)
    wn1_w, wn1_b = _linear(wn1, pre)
    cg1_w, cg1_b = _linear(cg1, pre)
    sp_w, sp_b = _linear(block.spatial_gate)
    value_w, context_w, cross_b = _f64(*(_array(t) for t in block.cross_cell))  # (L, C) each
    channel_mix_t, position_mix = _f64(_array(block.cross_channel_mix.weight).T, _array(block.cross_position_mix.weight))
    big = np.zeros((C + r + L, LC + C + L))
    big[:C, :LC] = wn1_w[:, :C] @ mean_over_l
    big[:C, LC:LC + C] = wn1_w[:, C:]
    big[C:C + r, :LC] = cg1_w @ mean_over_l
    big[C + r:, :LC] = sp_w[:, :L] @ mean_over_c
    big[C + r:, LC + C:] = sp_w[:, L:]
    big_b = np.concatenate((wn1_b, cg1_b, sp_b))
    # second layers of the weight network (4 logits) and the channel gate (C), on their GELUs
    wn2_w, wn2_b = _linear(wn2, post_of_input=post)
    cg2_w, cg2_b = _linear(cg2, post_of_input=post)
    second = np.zeros((4 + C, C + r))
    second[:4, :C], second[4:, C:] = wn2_w, cg2_w
    second_b = np.concatenate((wn2_b, cg2_b))
    big, big_b, second, second_b = _f64(big, big_b, second, second_b)
    stacked = np.empty(LC + C + L)
    maximum = np.maximum

    def forward(x: np.ndarray) -> np.ndarray:
        normed = block_norm(x)
        grid = normed.reshape(L, C)
        stacked[:LC] = normed
        maximum.reduce(grid, axis=0, out=stacked[LC:LC + C])
        maximum.reduce(grid, axis=1, out=stacked[LC + C:])
        z = big @ stacked
        z += big_b
        out = second @ gelu(z[:C + r])
        out += second_b
        logits = out[:4].tolist()
        tau = tau_min + tau_span / (1.0 + math.exp(-logits[3]))
        a, b, c = logits[0] / tau, logits[1] / tau, logits[2] / tau
        top = max(a, b, c)
        a, b, c = math.exp(a - top), math.exp(b - top), math.exp(c - top)
        total = a + b + c
        context = position_mix @ (grid @ channel_mix_t)
        context *= context_w
        gate = grid * value_w
        gate += context
        gate += cross_b
        expit(gate, out=gate)
        gate *= c / total
        gate += expit(out[4:]) * (a / total)
        spatial = expit(z[C + r:])
        spatial *= b / total
        gate += spatial[:, None]
        gate *= grid
        flat = gate.reshape(-1)
        flat += x
        return feed_forward(flat)

    return forward


def _feed_forward(module: Any, channels: int, positions: int, pre: float, post: float,
                  gelu: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """A fusion block's feed-forward layer with its residual: flat map (L·C,) → x + ff(x)."""
    from torch import nn

    C, L = channels, positions
    inv_size = 1.0 / (L * C)
    if hasattr(module, "mix"):  # dense: (LayerNorm,) L·C → F → L·C
        layers = list(module.mix)
        if len(layers) != 3 or not isinstance(layers[0], nn.Linear) or not isinstance(layers[2], nn.Linear):
            raise ModelError("no fast path for this dense feed-forward layer: expected Linear–GELU–Linear")
        norm = getattr(module, "norm", None)  # hik_sim 0.2's first dense trunk had one
        w1, b1 = _linear(layers[0], pre)
        eps = None
        if isinstance(norm, nn.LayerNorm):
            norm_w, norm_b, eps = _layer_norm(norm)
            b1 = b1 + w1 @ norm_b  # the LayerNorm's affine folded into the first layer
            w1 = w1 * norm_w[None, :]
        elif norm is not None and not isinstance(norm, nn.Identity):
            raise ModelError(f"no fast path for a dense feed-forward layer normalised by {type(norm).__name__}")
        w2, b2 = _linear(layers[2], post_of_input=post)
        w1, b1, w2, b2 = _f64(w1, b1, w2, b2)

        def dense(x: np.ndarray) -> np.ndarray:
            h = w1 @ (x if eps is None else _normalise(x, inv_size, eps))
            h += b1
            out = w2 @ gelu(h)
            out += b2
            out += x
            return out

        return dense
    layers = list(module)
    if (len(layers) != 4 or not isinstance(layers[0], nn.LayerNorm) or not isinstance(layers[1], nn.Linear)
            or not isinstance(layers[3], nn.Linear)):
        raise ModelError("no fast path for this feed-forward layer: expected LayerNorm–Linear–GELU–Linear (map trunk) "
                       "or a dense layer (norm, mix)")
    norm_w, norm_b, eps = _layer_norm(layers[0])
    w1, b1 = _linear(layers[1], pre)
    w2, b2 = _linear(layers[3], post_of_input=post)
    norm_w, norm_b, w1t, b1, w2t, b2 = _f64(norm_w, norm_b, w1.T, b1, w2.T, b2)

    def position_wise(x: np.ndarray) -> np.ndarray:
        normed = _normalise(x, inv_size, eps)
        normed *= norm_w
        normed += norm_b
        h = normed.reshape(L, C) @ w1t
        h += b1
        out = gelu(h) @ w2t
        out += b2
        out = out.reshape(-1)
        out += x
        return out

    return position_wise


def _trunk_head(model: Any, width: int, pre: float, post: float,
                gelu: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """The trunk head and the limit head: flat map (L·C,) → (H, m).

    ``map`` trunk: Linear–GELU–Linear–GELU; ``dense`` trunk: GELU (LayerNorm–GELU in its first version).
    """
    from torch import nn

    layers = list(model.trunk_head) if isinstance(model.trunk_head, nn.Sequential) else [model.trunk_head]
    kinds = [type(m) for m in layers]
    if kinds == [nn.GELU]:
        scale = np.float64(pre)
        head = _head(model.head, post)

        def bare(x: np.ndarray) -> np.ndarray:
            return head(gelu(x * scale))

        return bare
    if kinds == [nn.LayerNorm, nn.GELU]:
        norm_w, norm_b, eps = _layer_norm(layers[0])
        norm_w, norm_b = _f64(norm_w * pre, norm_b * pre)
        inv_size = 1.0 / width
        head = _head(model.head, post)

        def dense(x: np.ndarray) -> np.ndarray:
            normed = _normalise(x, inv_size, eps)
            normed *= norm_w
            normed += norm_b
            return head(gelu(normed))

        return dense
    if kinds == [nn.Linear, nn.GELU, nn.Linear, nn.GELU]:
        w1, b1 = _f64(*_linear(layers[0], pre))
        w2, b2 = _f64(*_linear(layers[2], pre, post_of_input=post))
        head = _head(model.head, post)

        def mlp(x: np.ndarray) -> np.ndarray:
            h = w1 @ x
            h += b1
            h = w2 @ gelu(h)
            h += b2
            return head(gelu(h))

        return mlp
    raise ModelError(f"no fast path for the trunk head {[k.__name__ for k in kinds]}; supported: "
                   "Linear–GELU–Linear–GELU (map trunk), GELU or LayerNorm–GELU (dense trunk)")


class _Pack:
    """The numba backend's weights: one flat array (float32 when every tensor is, else float64), offsets into it."""

    def __init__(self, tensors: Sequence[Any]) -> None:
        import torch

        self.dtype = np.float32 if all(t.dtype == torch.float32 for t in tensors) else np.float64
        self.parts: list[np.ndarray] = []
        self.size = 0

    def add(self, tensor: Any) -> int:
        """Append a tensor's values (row-major); its offset. ``None`` → -1 (no bias)."""
        if tensor is None:
            return -1
        values = tensor.detach().cpu().numpy().astype(self.dtype).reshape(-1)
        offset = self.size
        self.parts.append(values)
        self.size += values.size
        return offset

    def array(self) -> np.ndarray:
        """The flat weights."""
        return np.ascontiguousarray(np.concatenate(self.parts), dtype=self.dtype)


def _norm_limits(pos_min: np.ndarray, pos_max: np.ndarray, limits: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The kernels' N: workspace minimum and span [m], the free joints' lower and upper limits."""
    return np.concatenate((pos_min, pos_max - pos_min, limits[0], limits[1])).astype(np.float64)


_NO_NORM = -2
"""A LayerNorm slot of the numba layout that holds no LayerNorm: the map passes unchanged."""


class _TurnBias(NamedTuple):
    """A ``turn_input`` model's first layer for the fast forward passes: its input is (position (3), cos, sin,
    quaternion (4)) but they read 7 inputs, so the columns of cos and sin leave the weight and enter the bias,
    ``b' = b + W_cos·cos α + W_sin·sin α``, written into the forward pass's own bias before each call."""

    bias: np.ndarray  # (h,) float64
    columns: np.ndarray  # (h, 2) float64: the weight's columns of cos and sin

    @classmethod
    def split(cls, weight: np.ndarray, bias: np.ndarray) -> tuple[np.ndarray, "_TurnBias"]:
        """A first layer's weight (h, k) and bias (h,) → the weight without its columns 3 and 4, and the turn."""
        columns = np.asarray(weight[:, 3:5], dtype=np.float64).copy()
        return np.delete(weight, (3, 4), axis=1), cls(np.asarray(bias, dtype=np.float64).copy(), columns)

    def setter(self, target: np.ndarray) -> Callable[[float, float], None]:
        """``set_turn(cos α, sin α)`` writing into ``target`` (h,), a forward pass's bias (a view; exact up to its dtype)."""
        def set_turn(cos: float, sin: float) -> None:
            target[:] = self.bias + self.columns[:, 0] * cos + self.columns[:, 1] * sin

        return set_turn


def _first_layer(pack: _Pack, layer: Any, turn_input: bool) -> tuple[int, int, _TurnBias | None]:
    """Pack the first layer: its weight's and bias's offsets, and for a ``turn_input`` model its :class:`_TurnBias`
    (the weight packed without the columns of cos and sin)."""
    import torch

    if not turn_input:
        return pack.add(layer.weight), pack.add(layer.bias), None
    weight, turn = _TurnBias.split(layer.weight.detach().cpu().numpy(), layer.bias.detach().cpu().numpy())
    return pack.add(torch.from_numpy(weight)), pack.add(layer.bias), turn


def _numba_mlp(model: Any, pos_min: np.ndarray, pos_max: np.ndarray, limits: tuple[np.ndarray, np.ndarray],
               turn_input: bool = False) -> _Parts:
    """The MLP as one compiled call (:func:`hik_sim.learning._fast_numba.mlp_forward`); ``turn_input``: its first
    layer reads the turn (:class:`_TurnBias`)."""
    from torch import nn

    from hik_sim.learning import _fast_numba

    modules = list(model.trunk)
    linears = [m for m in modules if isinstance(m, nn.Linear)]
    gelus = [m for m in modules if isinstance(m, nn.GELU)]
    if len(linears) != len(gelus) or len(linears) + len(gelus) != len(modules) or any(
            not isinstance(a, nn.Linear) or not isinstance(b, nn.GELU) for a, b in zip(modules[::2], modules[1::2])):
        raise ModelError("no fast path for this MLP: its trunk must be Linear–GELU pairs")
    tanh_form = bool(gelus) and _check_gelus(gelus) == "tanh"
    head = model.head
    pack = _Pack(list(model.parameters()) + [head.center, head.half_range])
    joints = head.center.numel()
    outputs = head.linear.out_features
    if turn_input and not linears:
        raise ModelError("no fast path for a turn_input MLP without layers")
    # a turn_input model's first layer reads 9; the kernels 7, its turn going to the bias (_TurnBias)
    in_features = (7 if turn_input else linears[0].in_features) if linears else head.linear.in_features
    widths = [in_features] + [layer.out_features for layer in linears]
    slots = [int(tanh_form), len(linears), in_features, outputs, joints, pack.add(head.linear.weight), pack.add(head.linear.bias),
             pack.add(head.center), pack.add(head.half_range), max(widths)]
    turn, first_bias = None, -1
    for k, layer in enumerate(linears):
        if k == 0:
            weight_slot, first_bias, turn = _first_layer(pack, layer, turn_input)
            slots += [weight_slot, first_bias, layer.out_features, in_features]
        else:
            slots += [pack.add(layer.weight), pack.add(layer.bias), layer.out_features, layer.in_features]
    P, I = pack.array(), np.asarray(slots, dtype=np.int64)
    work = np.zeros((2, max(widths)))
    hypotheses = outputs // joints
    kernel, fused_kernel = _fast_numba.mlp_forward, _fast_numba.mlp_solve
    N, x = _norm_limits(pos_min, pos_max, limits), np.empty(7)

    def forward(x: np.ndarray) -> np.ndarray:
        out = np.empty(outputs)
        kernel(P, I, x, out, work)
        return out.reshape(hypotheses, joints)

    def fused(pos: np.ndarray, quat: np.ndarray) -> tuple[int, np.ndarray]:
        out = np.empty(outputs)
        return fused_kernel(P, I, N, pos, quat, x, out, work, MAX_TARGET_DISTANCE), out.reshape(hypotheses, joints)

    return _Parts(forward, fused, _ranked_maker(_fast_numba.mlp_solve_ranked, (P, I, N), x, work, outputs, hypotheses),
                  None if turn is None else turn.setter(P[first_bias:first_bias + turn.bias.size]))


def _numba_harmoatt(model: Any, pos_min: np.ndarray, pos_max: np.ndarray, limits: tuple[np.ndarray, np.ndarray],
                    turn_input: bool = False) -> _Parts:
    """HarmoAtt-IK as one compiled call (:func:`hik_sim.learning._fast_numba.harmoatt_forward`); ``turn_input``: its
    position embedding reads the turn (:class:`_TurnBias`)."""
    from torch import nn

    from hik_sim.learning import _fast_numba

    C, L = int(model.channels), int(model.positions)
    LC = C * L
    gelus = [m for m in model.modules() if isinstance(m, nn.GELU)]
    tanh_form = _check_gelus(gelus) == "tanh"
    head = model.head
    pack = _Pack(list(model.parameters()) + [head.center, head.half_range])
    pos_embed, ori_embed = list(model.pos_embed), list(model.ori_embed)
    trunk: list[Any] = list(model.trunk_head) if isinstance(model.trunk_head, nn.Sequential) else [model.trunk_head]
    kinds = [type(m) for m in trunk]
    if kinds == [nn.GELU]:  # the dense trunk: no LayerNorm before the head
        dense_head, head_hidden = True, 0
        trunk_slots = [_NO_NORM, -1, -1, -1]
        trunk_eps = 0.0
    elif kinds == [nn.LayerNorm, nn.GELU]:
        dense_head, head_hidden = True, 0
        trunk_slots = [pack.add(trunk[0].weight), pack.add(trunk[0].bias), -1, -1]
        trunk_eps = float(trunk[0].eps)
    elif kinds == [nn.Linear, nn.GELU, nn.Linear, nn.GELU]:
        dense_head, head_hidden = False, trunk[0].out_features
        trunk_slots = [pack.add(trunk[0].weight), pack.add(trunk[0].bias), pack.add(trunk[2].weight), pack.add(trunk[2].bias)]
        trunk_eps = 0.0
    else:
        raise ModelError(f"no fast path for the trunk head {[k.__name__ for k in kinds]}; supported: "
                       "Linear–GELU–Linear–GELU (map trunk), GELU or LayerNorm–GELU (dense trunk)")
    blocks = list(model.blocks)
    first_ff = blocks[0].feed_forward
    dense_ff = hasattr(first_ff, "mix")
    if dense_ff != dense_head:
        raise ModelError("no fast path for a HarmoAtt-IK network that mixes the dense and map trunks")
    ff_hidden = list(first_ff.mix)[0].out_features if dense_ff else list(first_ff)[1].out_features
    r = blocks[0].channel_gate[0].out_features
    if pos_embed[0].in_features != (5 if turn_input else 3):
        raise ModelError(f"no fast path for a position embedding of {pos_embed[0].in_features} inputs "
                         f"({'5 with' if turn_input else '3 without'} turn_input)")
    embed_weight, embed_bias, turn = _first_layer(pack, pos_embed[0], turn_input)
    slots = [int(tanh_form), len(blocks), C, L, int(model.pos_positions), pos_embed[0].out_features, ori_embed[0].out_features,
             int(dense_ff), head_hidden, head.linear.out_features, head.center.numel(),
             embed_weight, embed_bias, pack.add(pos_embed[2].weight), pack.add(pos_embed[2].bias),
             pack.add(ori_embed[0].weight), pack.add(ori_embed[0].bias), pack.add(ori_embed[2].weight), pack.add(ori_embed[2].bias),
             pack.add(model.position_code), *trunk_slots, pack.add(head.linear.weight), pack.add(head.linear.bias),
             pack.add(head.center), pack.add(head.half_range), r, ff_hidden]
    constants = [trunk_eps]

    def affine(norm: Any) -> list[int]:
        if norm is None or isinstance(norm, nn.Identity):
            return [_NO_NORM, -1]
        if not isinstance(norm, nn.LayerNorm):
            raise ModelError(f"no fast path for a norm {type(norm).__name__}; supported: LayerNorm, Identity")
        if not norm.elementwise_affine:
            return [-1, -1]
        if norm.bias is None:
            raise ModelError("no fast path for a LayerNorm with a weight and no bias")
        return [pack.add(norm.weight), pack.add(norm.bias)]

    for block in blocks:
        ff = block.feed_forward
        if dense_ff:
            if not (hasattr(ff, "mix") and len(ff.mix) == 3 and isinstance(ff.mix[0], nn.Linear)
                    and isinstance(ff.mix[2], nn.Linear) and ff.mix[0].out_features == ff_hidden):
                raise ModelError("no fast path for this dense feed-forward layer: expected Linear–GELU–Linear of one width")
            ff_norm, ff1, ff2 = getattr(ff, "norm", None), ff.mix[0], ff.mix[2]
        else:
            layers = list(ff)
            if (len(layers) != 4 or not isinstance(layers[0], nn.LayerNorm) or not isinstance(layers[1], nn.Linear)
                    or not isinstance(layers[3], nn.Linear) or layers[1].out_features != ff_hidden):
                raise ModelError("no fast path for this feed-forward layer: expected LayerNorm–Linear–GELU–Linear (map trunk)")
            ff_norm, ff1, ff2 = layers[0], layers[1], layers[3]
        if block.channel_gate[0].out_features != r:
            raise ModelError("no fast path for HarmoAtt-IK blocks of different channel-gate widths")
        slots += [int(bool(getattr(block, "attention", True))), *affine(block.norm),
                  pack.add(block.channel_gate[0].weight), pack.add(block.channel_gate[0].bias),
                  pack.add(block.channel_gate[2].weight), pack.add(block.channel_gate[2].bias),
                  pack.add(block.spatial_gate.weight), pack.add(block.spatial_gate.bias),
                  pack.add(block.cross_channel_mix.weight), pack.add(block.cross_position_mix.weight),
                  pack.add(block.cross_cell), pack.add(block.weight_net[0].weight), pack.add(block.weight_net[0].bias),
                  pack.add(block.weight_net[2].weight), pack.add(block.weight_net[2].bias), *affine(ff_norm),
                  pack.add(ff1.weight), pack.add(ff1.bias), pack.add(ff2.weight), pack.add(ff2.bias)]
        constants += [float(getattr(block.norm, "eps", 0.0)), float(getattr(ff_norm, "eps", 0.0)), float(block.tau_min),
                      float(block.tau_max)]
    P, I, S = pack.array(), np.asarray(slots, dtype=np.int64), np.asarray(constants, dtype=np.float64)
    outputs, joints = head.linear.out_features, head.center.numel()
    width = max(LC, ff_hidden, head_hidden, pos_embed[0].out_features, ori_embed[0].out_features, 2 * C, 2 * L, 4)
    work = np.zeros((9, width))
    kernel, fused_kernel = _fast_numba.harmoatt_forward, _fast_numba.harmoatt_solve
    N, x = _norm_limits(pos_min, pos_max, limits), np.empty(7)

    def forward(x: np.ndarray) -> np.ndarray:
        out = np.empty(outputs)
        kernel(P, I, S, x, out, work)
        return out.reshape(outputs // joints, joints)

    def fused(pos: np.ndarray, quat: np.ndarray) -> tuple[int, np.ndarray]:
        out = np.empty(outputs)
        return fused_kernel(P, I, S, N, pos, quat, x, out, work, MAX_TARGET_DISTANCE), out.reshape(outputs // joints, joints)

    return _Parts(forward, fused, _ranked_maker(_fast_numba.harmoatt_solve_ranked, (P, I, S, N), x, work, outputs,
                                                outputs // joints),
                  None if turn is None else turn.setter(P[embed_bias:embed_bias + turn.bias.size]))

"""FastIKNetwork on HarmoAtt-IK's paper trunk (``trunk=cycleik``): the same function as the torch network, on both backends.

The reference is the torch network in float64 (``copy.deepcopy(network).double()``), as in ``test_fast_network.py``.
The bare model agrees to 1e-10 (everything float64, the turn of a ``turn_input`` network too; the numba backend's
float32 weights times float64 activations are exact). The answers of the whole network agree as closely except
where the limit head saturates: there the torch network clamps to its float32 limits and the fast one to the
robot's float64 limits, up to 1e-7 apart.
"""

from __future__ import annotations

import copy
from typing import Callable

import numpy as np
import pytest
import torch
from torch import nn

from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.data import JointSelection, PoseNormalizer, make_eval_set
from hik_sim.learning.fast_network import FastIKNetwork, numba_available
from hik_sim.learning.models import HarmoAttCycleIK
from hik_sim.learning.network import IKNetwork
from hik_sim.robots import get_robot

BACKENDS = ["numpy"] + (["numba"] if numba_available() else [])
EXACT = 1e-10  # [rad or m]: float64 against float64
LIMITS = 1e-6  # [rad or m]: where an answer sits at a limit (float32 against float64 limits)
TINY = {"trunk": "cycleik", "width": 0.01, "positions": 3}  # hidden widths 14, 9, 30, 12, 27, 24, 9; blocks of C = 3, 4, 8
TARGETS = 60


@pytest.fixture(scope="module")
def chains() -> dict[str, Chain]:
    return {name: Chain(get_robot(name)) for name in ("irb120", "panda")}


def _paper(chain: Chain, options: dict, fixed: dict | None = None, seed: int = 0) -> IKNetwork:
    """A freshly built float32 paper-trunk network, every parameter (biases, gates, cross cells) perturbed."""
    selection = JointSelection.for_chain(chain, fixed or {})
    lower, upper = chain.limits(torch.float32)
    with torch.random.fork_rng():  # the initial weights too, whichever tests ran before
        torch.manual_seed(seed)
        network = IKNetwork("harmoatt", lower, upper, PoseNormalizer.measure(chain, selection, samples=1000), selection,
                            {**TINY, **options}, chain)
    assert isinstance(network.model, HarmoAttCycleIK)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in network.parameters():
            parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator))
    return network.eval()


def _inside(chain: Chain, canonical: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    """Which answers (..., n) lie away from the joint limits, where float32 and float64 limits do not matter; for a
    ``canonical_turn`` network none of its first joint (its model's limits are the range ± π, turned back anywhere)."""
    lower, upper = np.asarray(chain.robot.lower), np.asarray(chain.robot.upper)

    def inside(q: np.ndarray) -> np.ndarray:
        away = (q > lower + LIMITS) & (q < upper - LIMITS)
        if canonical:
            away[..., 0] = False
        return away

    return inside


def _agree(network: IKNetwork, chain: Chain, backend: str, seed: int = 3) -> FastIKNetwork:
    """The fast network's model, answers, ranking and choice against the float64 torch network's; it is returned."""
    targets = make_eval_set(chain, seed, TARGETS, network.selection).batch
    reference = copy.deepcopy(network).double().eval()
    fast = FastIKNetwork.from_network(network, backend=backend)
    assert fast.backend == backend and fast.hypotheses == network.hypotheses
    assert (fast._ranked is not None) == (backend == "numba" and network.hypotheses > 1)  # noqa: SLF001  numba: the choice in the network's call
    pos, quat = targets.pos.numpy(), targets.quat.numpy()

    x = network.normalizer(targets.pos, targets.quat).double()  # the bare model: no clamp, no turn, no choice
    with torch.no_grad():
        out = reference.model(x)
    bare = (out.q[:, None] if out.candidates is None else out.candidates).numpy()
    assert np.abs(np.stack([fast.forward(v) for v in x.numpy()]) - bare).max() < EXACT

    lower, upper = np.asarray(chain.robot.lower), np.asarray(chain.robot.upper)
    inside = _inside(chain)
    candidates = reference.candidates(targets.pos, targets.quat).numpy()
    ranked = reference.solve_all(targets.pos, targets.quat).numpy()
    mine = np.stack([fast.candidates(p, q) for p, q in zip(pos, quat)])
    assert mine.shape == candidates.shape == (TARGETS, network.hypotheses, chain.dof) and mine.dtype == np.float64
    gap = np.abs(mine - candidates)
    assert gap.max() < LIMITS and gap[inside(candidates)].max() < EXACT
    assert ((mine >= lower) & (mine <= upper)).all()
    mine_ranked = np.stack([fast.solve_all(p, q) for p, q in zip(pos, quat)])
    best = np.stack([fast.solve(p, q) for p, q in zip(pos, quat)])
    assert np.abs(mine_ranked - ranked).max() < LIMITS and np.abs(best - ranked[:, 0]).max() < LIMITS  # IKNetwork's choice
    assert np.abs(best - ranked[:, 0])[inside(ranked[:, 0])].max() < EXACT

    float32 = network.candidates(targets.pos, targets.quat).double().numpy()  # the float32 model: to its own rounding
    assert np.abs(mine - float32).max() <= np.abs(candidates - float32).max() + LIMITS
    return fast


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("hypotheses", [1, 4])
@pytest.mark.parametrize("attention", [True, False])
@pytest.mark.parametrize("robot", ["irb120", "panda"])
def test_the_paper_trunk_agrees_with_the_float64_network(chains: dict[str, Chain], robot: str, attention: bool,
                                                         hypotheses: int, backend: str) -> None:
    network = _paper(chains[robot], {"attention": attention, "hypotheses": hypotheses})
    _agree(network, chains[robot], backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("variant", ["canonical", "turn_input", "behind_turn"])
@pytest.mark.parametrize("robot", ["irb120", "panda"])
def test_the_turn_options_agree_with_the_float64_network(chains: dict[str, Chain], robot: str, variant: str,
                                                         backend: str) -> None:
    """``canonical_turn`` (the turn out of the input and back onto the first joint), ``turn_input`` (the turn's
    (cos, sin) read by the first layer) and ``behind_turn`` (poses beyond the first joint's range asked both ways)."""
    chain = chains[robot]
    options = {"hypotheses": 4, "canonical_turn": True, "turn_input": variant != "canonical", "behind_turn": variant == "behind_turn"}
    network = _paper(chain, options, seed=1)
    assert network.model.stages[0][0].in_features == (9 if network.turn_input else 7)
    targets = make_eval_set(chain, 5, TARGETS).batch
    reference = copy.deepcopy(network).double()
    fast = FastIKNetwork.from_network(network, backend=backend)
    pos, quat = targets.pos.numpy(), targets.quat.numpy()
    want = reference.solve_all(targets.pos, targets.quat).numpy()
    got = np.stack([fast.solve_all(p, q) for p, q in zip(pos, quat)])
    gap = np.abs(got - want)
    assert gap.max() < LIMITS and gap[_inside(chain, canonical=True)(want)].max() < EXACT
    one = np.stack([fast.candidates(p, q) for p, q in zip(pos, quat)])
    candidates = reference.candidates(targets.pos, targets.quat).numpy()
    gap = np.abs(one - candidates)
    assert gap.max() < LIMITS and gap[_inside(chain, canonical=True)(candidates)].max() < EXACT
    x = torch.tensor([[0.1, -0.2, 0.3, 0.3, 0.9, 0.5, 0.5, 0.5, 0.5] if network.turn_input else [0.1, -0.2, 0.3, 0.5, 0.5, 0.5, 0.5]],
                     dtype=torch.float64)
    with torch.no_grad():
        bare = reference.model(x).candidates[0].numpy()
    assert np.abs(fast.forward(x[0].numpy()) - bare).max() < EXACT


@pytest.mark.parametrize("backend", BACKENDS)
def test_fixed_joints_other_layouts_and_tanh_gelus(chains: dict[str, Chain], backend: str) -> None:
    """Fixed joints filled in; blocks after the first and the last layer, on a map of 4 positions; the tanh GELU."""
    chain = chains["irb120"]
    network = _paper(chain, {"hypotheses": 3}, fixed={"joint_6": 0.3, "joint_4": -0.2}, seed=2)
    fast = _agree(network, chain, backend)
    answers = fast.candidates(np.array([0.3, 0.1, 0.4]), np.array([0.0, 1.0, 0.0, 0.0]))
    assert (answers[:, 5] == 0.3).all() and (answers[:, 3] == -0.2).all()
    network = _paper(chain, {"positions": 4, "attention_after": [1, 7], "hypotheses": 2}, seed=3)
    assert network.model.layers[0] % 4 == 0 and network.model.layers[6] % 4 == 0 and len(network.model.blocks) == 2
    _agree(network, chain, backend)
    for module in network.modules():
        if isinstance(module, nn.GELU):
            module.approximate = "tanh"
    _agree(network, chain, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_what_the_fast_paths_do_not_cover_is_a_hik_error(chains: dict[str, Chain], backend: str) -> None:
    network = _paper(chains["irb120"], {})
    network.model.blocks[0].channel_gate[1].approximate = "tanh"  # one GELU of another kind than the rest
    with pytest.raises(HikError, match="mixes exact and tanh GELUs"):
        FastIKNetwork.from_network(network, backend=backend)
    with pytest.raises(HikError, match="finite"):
        FastIKNetwork.from_network(_paper(chains["irb120"], {}), backend=backend).solve(np.array([np.nan, 0.0, 0.0]),
                                                                                        np.array([1.0, 0.0, 0.0, 0.0]))


def test_the_single_target_hybrid_seeds_its_lm_with_the_paper_trunk(chains: dict[str, Chain]) -> None:
    """SingleTargetIK (the single-target hybrid) runs a paper-trunk seed through FastIKNetwork: with no LM iteration
    and no restart its answer is the network's choice."""
    from hik_sim.solvers.single_target_ik import SingleTargetIK, SingleTargetPlan

    chain = chains["panda"]
    network = _paper(chain, {"hypotheses": 4, "canonical_turn": True, "turn_input": True}, seed=5)
    solver = SingleTargetIK(chain, network, plan=SingleTargetPlan(max_iterations=0, restarts=0, flip_restarts=False))
    assert isinstance(solver.fast_network, FastIKNetwork) and solver.fast_network.backend == BACKENDS[-1]
    targets = make_eval_set(chain, 6, 10).batch
    chosen = copy.deepcopy(network).double().solve(targets.pos, targets.quat).numpy()
    seeds = np.stack([solver.solve_one(p, q).q[0].numpy() for p, q in zip(targets.pos, targets.quat)])
    assert np.abs(seeds - chosen).max() < LIMITS

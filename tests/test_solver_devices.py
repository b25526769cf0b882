"""Solvers on a network whose outputs live off the CPU (``--device cuda``).

A CUDA tensor refuses ``.numpy()``: code must copy it with ``.cpu()`` first. ``SingleTargetIK``
once called ``.numpy()`` on the network's output and crashed the hybrid controller on CUDA. These
tests run everywhere: :class:`AcceleratorTensor` is a CPU tensor that refuses ``.numpy()`` as a
CUDA tensor does, and a network whose parameters and buffers are such tensors answers with them.
Where CUDA is present the same solvers also run on it.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
import torch

from hik_sim.kinematics.chain import Chain
from hik_sim.learning.network import IKNetwork
from hik_sim.policies import load_pretrained
from hik_sim.robots import get_robot
from hik_sim.solvers.hybrid import HybridIK, HybridPlan
from hik_sim.solvers.lm import LMRefiner
from hik_sim.solvers.neural import NeuralIK
from hik_sim.solvers.single_target_ik import SingleTargetIK


class AcceleratorTensor(torch.Tensor):
    """A CPU tensor that behaves as an accelerator's does for NumPy: ``.numpy()`` (and ``np.asarray``)
    raise until ``.cpu()`` (or ``.to("cpu")``) has made a plain CPU tensor of it."""

    def numpy(self, *, force: bool = False) -> np.ndarray:  # noqa: ARG002  (as torch's; np.asarray calls it too)
        raise TypeError("can't convert an accelerator tensor to numpy: use Tensor.cpu() to copy it to host memory first")

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", "")
        result = super().__torch_function__(func, types, args, kwargs or {})
        to_cpu = name == "cpu" or (name == "to" and any(str(a) == "cpu" for a in (*args[1:], *(kwargs or {}).values())))
        if to_cpu and isinstance(result, AcceleratorTensor):
            with torch._C.DisableTorchFunctionSubclass():
                return result.as_subclass(torch.Tensor)
        return result


def on_accelerator(network: IKNetwork) -> IKNetwork:
    """A copy of ``network`` whose parameters and buffers are :class:`AcceleratorTensor`s."""
    moved = copy.deepcopy(network)
    for module in moved.modules():
        for key, value in module._parameters.items():
            if value is not None:
                module._parameters[key] = torch.nn.Parameter(value.detach().as_subclass(AcceleratorTensor), requires_grad=False)
        for key, value in module._buffers.items():
            if value is not None:
                module._buffers[key] = value.as_subclass(AcceleratorTensor)
    return moved


@pytest.fixture(scope="module")
def setup() -> tuple[Chain, IKNetwork, Any]:
    chain = Chain(get_robot("irb120"))
    network = load_pretrained("irb120", "harmoatt_4answers")
    goal = chain.fk(chain.sample(6, torch.Generator().manual_seed(5), dtype=torch.float64))
    return chain, network, goal


def test_the_stand_in_refuses_numpy_as_cuda_does(setup: tuple[Chain, IKNetwork, Any]) -> None:
    chain, network, goal = setup
    answer = on_accelerator(network).solve(goal.pos.float(), goal.quat.float())
    assert isinstance(answer, AcceleratorTensor)  # the network's output is "on the device"
    for to_numpy in (lambda t: t.numpy(), lambda t: t.detach().double().numpy(), np.asarray):
        with pytest.raises(TypeError, match=r"Tensor.cpu\(\)"):
            to_numpy(answer)
    assert type(answer.cpu()) is torch.Tensor and type(answer.to("cpu")) is torch.Tensor
    np.testing.assert_array_equal(answer.cpu().numpy(), network.solve(goal.pos.float(), goal.quat.float()).numpy())


def test_solvers_copy_the_network_output_to_the_cpu(setup: tuple[Chain, IKNetwork, Any]) -> None:
    chain, network, goal = setup
    device = on_accelerator(network)
    for make in (lambda net: SingleTargetIK(chain, net), lambda net: NeuralIK(net, chain),
                 lambda net: HybridIK(net, LMRefiner(chain), plan=HybridPlan(restarts=2))):
        expected, got = make(network).solve(goal.pos, goal.quat), make(device).solve(goal.pos, goal.quat)
        assert torch.equal(got.q, expected.q) and torch.equal(got.success, expected.success)
    single, plain = SingleTargetIK(chain, device), SingleTargetIK(chain, network)
    for i in range(goal.pos.shape[0]):  # the control-rate path, as the hybrid controller calls it
        assert torch.equal(single.solve_one(goal.pos[i], goal.quat[i]).q, plain.solve_one(goal.pos[i], goal.quat[i]).q)
    assert single.solve_one(goal.pos[0].numpy(), goal.quat[0].numpy()).success.all()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (the CPU stand-in above runs everywhere)")
def test_solvers_on_a_cuda_network(setup: tuple[Chain, IKNetwork, Any]) -> None:
    chain, network, goal = setup
    cuda = copy.deepcopy(network).to("cuda")
    for solver in (SingleTargetIK(chain, cuda), NeuralIK(cuda, chain), HybridIK(cuda, LMRefiner(chain), plan=HybridPlan(restarts=2))):
        result = solver.solve(goal.pos, goal.quat)
        assert result.q.device.type == "cpu" and result.q.shape == (6, chain.dof)
    assert SingleTargetIK(chain, cuda).solve_one(goal.pos[0], goal.quat[0]).success.all()

"""The single-target LM's two backends: the compiled loop (numba) takes the MuJoCo path's steps."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import robot_by_id

from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.data import make_eval_set
from hik_sim.robots import robot_names
from hik_sim.solvers.single_target import SingleTargetKinematics, SingleTargetLM

pytest.importorskip("numba")


@pytest.mark.parametrize("robot", robot_names())
def test_compiled_fk_and_jacobian_match_mujoco(robot: str) -> None:
    from hik_sim.kinematics.flat_chain import flat_geometry as _flat_geometry
    from hik_sim.solvers._lm_numba import fk_jacobian

    spec = robot_by_id(robot)
    chain = Chain(spec)
    mujoco_fk = SingleTargetKinematics(spec, chain.geometry)
    geometry = _flat_geometry(chain.geometry)
    rng = np.random.default_rng(1)
    pos, quat, jac = np.empty(3), np.empty(4), np.empty((6, chain.dof))
    for _ in range(20):
        q = rng.uniform(spec.lower, spec.upper)
        fk_jacobian(geometry, q, pos, quat, jac)
        pose, expected = mujoco_fk.fk_and_jacobian(q)
        assert np.allclose(pos, pose.pos, atol=1e-12) and np.allclose(quat, pose.quat, atol=1e-12)
        assert np.allclose(jac, expected, atol=1e-10)
        assert quat[0] >= 0 and abs(np.linalg.norm(quat) - 1) < 1e-12


@pytest.mark.parametrize("robot", ["irb120", "panda", "talos"])
def test_compiled_lm_takes_the_same_steps_as_the_mujoco_path(robot: str) -> None:
    spec = robot_by_id(robot)
    chain = Chain(spec)
    targets = make_eval_set(chain, 21, 60).batch
    compiled = SingleTargetLM(spec, chain.geometry, backend="numba")
    reference = SingleTargetLM(spec, chain.geometry, backend="mujoco")
    assert (compiled.backend, reference.backend) == ("numba", "mujoco")
    rng = np.random.default_rng(2)
    converged = 0
    for i in range(60):
        start = np.clip(targets.q[i].numpy() + rng.normal(0, 0.3, chain.dof), spec.lower, spec.upper)
        a = compiled.refine(targets.pos[i].numpy(), targets.quat[i].numpy(), start)
        b = reference.refine(targets.pos[i].numpy(), targets.quat[i].numpy(), start)
        assert (a.iterations, a.evals, a.jac_evals) == (b.iterations, b.evals, b.jac_evals)
        assert np.allclose(a.q, b.q, atol=1e-4) and abs(a.pos_err - b.pos_err) < 1e-6
        assert np.all(a.q >= spec.lower) and np.all(a.q <= spec.upper)
        converged += a.pos_err < 1e-6 and a.rot_err < 1e-6
    assert converged >= 45  # from 0.3 rad away most targets converge exactly
    reached = chain.fk(torch.from_numpy(a.q)[None])
    assert float(np.linalg.norm(reached.pos[0].numpy() - targets.pos[59].numpy())) == pytest.approx(a.pos_err, abs=1e-9)


def test_an_unknown_backend_is_refused() -> None:
    with pytest.raises(HikError, match="backends are: auto, numba, mujoco"):
        SingleTargetLM(robot_by_id("irb120"), backend="cuda")


@pytest.mark.parametrize("robot", ["irb120", "g1"])
def test_batched_lm_backends_agree_and_hold_fixed_joints(robot: str) -> None:
    from hik_sim.learning.data import JointSelection
    from hik_sim.solvers.lm import LMRefiner

    chain = Chain(robot_by_id(robot))
    targets = make_eval_set(chain, 22, 200).batch
    start = chain.clamp(targets.q + 0.3 * torch.randn(200, chain.dof, generator=torch.Generator().manual_seed(3), dtype=torch.float64))
    fixed = {chain.joint_names[-1]: 0.3}
    selection = JointSelection.for_chain(chain, fixed)
    for sel in (None, selection):
        compiled = LMRefiner(chain, selection=sel, backend="numba").solve(targets.pos, targets.quat, start)
        reference = LMRefiner(chain, selection=sel, backend="torch").solve(targets.pos, targets.quat, start)
        assert torch.equal(compiled.iterations, reference.iterations) and torch.equal(compiled.fk_evals, reference.fk_evals)
        assert torch.equal(compiled.jac_evals, reference.jac_evals)
        assert torch.equal(compiled.success, reference.success)
        assert torch.allclose(compiled.q, reference.q, atol=1e-6)
        if sel is not None:  # (the targets were made with that joint free: most are out of reach now)
            assert bool((compiled.q[:, -1] == 0.3).all())
        else:
            assert compiled.success.float().mean() > 0.5
        lower, upper = chain.limits(torch.float64)
        assert bool(((compiled.q >= lower) & (compiled.q <= upper)).all())


def test_a_close_start_begins_at_the_close_damping_on_every_backend() -> None:
    """A start within 5 mm & 2° begins at CLOSE_DAMPING: fewer iterations on the IRB120 (its arm nearly stretched is
    ill-conditioned), the same steps on every backend; a start farther away runs exactly as with the rule off."""
    from hik_sim.kinematics.rotations import position_error, rotation_error
    from hik_sim.kinematics.tolerances import SUCCESS
    from hik_sim.solvers.lm import LMRefiner
    from hik_sim.solvers.lm_rules import CLOSE_DAMPING, LMRules

    spec = robot_by_id("irb120")
    chain = Chain(spec)
    targets = make_eval_set(chain, 23, 300).batch
    generator = torch.Generator().manual_seed(4)
    near = chain.clamp(targets.q + 0.004 * torch.randn(300, chain.dof, generator=generator, dtype=torch.float64))
    far = chain.clamp(targets.q + 0.5 * torch.randn(300, chain.dof, generator=generator, dtype=torch.float64))
    close = {}
    for name, starts in (("near", near), ("far", far)):
        reached = chain.fk(starts)
        close[name] = SUCCESS.met(position_error(reached.pos, targets.pos), rotation_error(reached.quat, targets.quat))
    assert float(close["near"].float().mean()) > 0.9 and float(close["far"].float().mean()) < 0.1
    runs = {}
    for backend in ("numba", "torch"):
        for close_damping in (CLOSE_DAMPING, None):
            for name, starts in (("near", near), ("far", far)):
                runs[backend, close_damping, name] = LMRefiner(chain, backend=backend, rules=LMRules(close_damping=close_damping)).solve(
                    targets.pos, targets.quat, starts)
    for close_damping in (CLOSE_DAMPING, None):
        for name in ("near", "far"):
            a, b = runs["numba", close_damping, name], runs["torch", close_damping, name]
            assert torch.equal(a.iterations, b.iterations) and torch.equal(a.jac_evals, b.jac_evals)
            assert torch.allclose(a.q, b.q, atol=1e-6)
    on, off = runs["numba", CLOSE_DAMPING, "near"], runs["numba", None, "near"]
    assert bool(on.success[close["near"]].all()) and bool(off.success[close["near"]].all())
    assert float(on.pos_err[close["near"]].max()) < 1e-6 and float(on.rot_err[close["near"]].max()) < 1e-6  # as exact
    assert int(on.iterations.sum()) < 0.9 * int(off.iterations.sum())
    same = ~close["far"]  # a far start's run does not change
    on, off = runs["numba", CLOSE_DAMPING, "far"], runs["numba", None, "far"]
    assert torch.equal(on.iterations[same], off.iterations[same]) and torch.equal(on.q[same], off.q[same])
    single = {backend: SingleTargetLM(spec, chain.geometry, backend=backend) for backend in ("numba", "mujoco")}
    for i in range(0, 300, 10):
        a, b = (lm.refine(targets.pos[i].numpy(), targets.quat[i].numpy(), near[i].numpy()) for lm in single.values())
        batched = runs["numba", CLOSE_DAMPING, "near"]
        assert (a.iterations, a.evals, a.jac_evals) == (b.iterations, b.evals, b.jac_evals)
        assert a.iterations == int(batched.iterations[i]) and np.allclose(a.q, batched.q[i].numpy(), atol=1e-9)
    with pytest.raises(HikError, match="close_damping must be positive"):
        LMRefiner(chain, rules=LMRules(close_damping=0.0))
    with pytest.raises(HikError, match="close_damping must be positive"):
        SingleTargetLM(spec, close_damping=-1.0)

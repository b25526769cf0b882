"""The hybrid paper's regression DNN on one IK branch: the branch sampler, the well-posed regression, the suite's row.

The one-branch region (``hik_sim.learning.models.regression.BRANCH_REGIONS``) draws only configurations in
its stated ranges and in front of joint 1; the training stream and evaluation sets draw from it with
``sampling="one_branch"``; the DNN trained on it (``benchmarks/checkpoints/irb120/regression_one_branch``,
skipped where the checkout lacks it) answers in-branch poses within centimetres where the DNN trained on the
whole joint box is off by decimetres; and the paper suite's table has its row after the paper's own rows.
"""

from __future__ import annotations

import math

import pytest
import torch

from hik_sim.errors import HikError
from hik_sim.evaluation.experiments import (ONE_BRANCH_HYBRID, ONE_BRANCH_NETWORK, PAPER_HYBRID, one_branch_table,
                                            paper_markdown, reductions)
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.data import FKStream, make_eval_set
from hik_sim.learning.models.regression import IRB120_ELBOW_STRETCHED, branch_region
from hik_sim.policies import load_pretrained, pretrained_names
from hik_sim.robots import get_robot
from hik_sim.solvers.neural import NeuralIK

SHIPPED = f"irb120/{ONE_BRANCH_NETWORK}" in pretrained_names()
needs_network = pytest.mark.skipif(not SHIPPED, reason=f"this checkout has no benchmarks/checkpoints/irb120/{ONE_BRANCH_NETWORK}")


@pytest.fixture(scope="module")
def irb120() -> Chain:
    return Chain(get_robot("irb120"))


def test_the_sampler_draws_only_in_the_stated_ranges_and_in_front(irb120: Chain) -> None:
    region = branch_region("irb120")
    q = region.sample(irb120, 3000, torch.Generator().manual_seed(0), torch.float64)
    assert q.shape == (3000, 6)
    lower, upper = irb120.limits(torch.float64)
    assert bool(((q >= lower) & (q <= upper)).all())
    assert float(q[:, 2].min()) >= IRB120_ELBOW_STRETCHED and math.isclose(math.degrees(IRB120_ELBOW_STRETCHED), -76.95, abs_tol=0.01)
    assert float(q[:, 4].min()) >= 0.0 and float(q[:, 5].abs().max()) <= math.pi
    assert float(region.reach(irb120, q).min()) > 0.0  # the wrist centre in front of the joint-1 axis
    # and it is not narrower than stated: each bound is approached (3,000 draws leave gaps of a few degrees at most)
    assert float(q[:, 2].min()) < IRB120_ELBOW_STRETCHED + 0.05 and float(q[:, 4].min()) < 0.05
    assert float(q[:, 5].max()) > math.pi - 0.05 and float(q[:, 5].min()) < -math.pi + 0.05
    assert float(q[:, 0].max()) > math.radians(160) and float(q[:, 0].min()) < math.radians(-160)  # joint 1 keeps its range


def test_the_region_is_the_stated_share_of_the_joint_box_and_excludes_the_other_branches(irb120: Chain) -> None:
    region = branch_region("irb120")
    box = irb120.sample(40_000, torch.Generator().manual_seed(1), torch.float64)
    share = float(region.contains(irb120, box).double().mean())
    assert abs(share - 0.123) < 0.01  # the docstring's 12.3 %
    q = region.sample(irb120, 500, torch.Generator().manual_seed(2), torch.float64)
    inside = q[region.contains(irb120, q)]
    assert len(inside) == 500
    # the same poses by the wrist's flip, or joint 6 a turn away, are outside the region: one answer a pose there
    flipped = inside.clone()
    flipped[:, 3] -= torch.sign(flipped[:, 3]) * math.pi
    flipped[:, 4] = -flipped[:, 4]
    flipped[:, 5] -= torch.sign(flipped[:, 5]) * math.pi
    assert torch.allclose(irb120.fk(flipped).pos, irb120.fk(inside).pos, atol=1e-9)
    turned = inside.clone()
    turned[:, 5] += 2 * math.pi * torch.where(turned[:, 5] < 0, 1.0, -1.0).to(turned)
    assert not bool(region.contains(irb120, flipped).any()) and not bool(region.contains(irb120, turned).any())


def test_the_training_stream_and_evaluation_sets_draw_from_the_branch(irb120: Chain) -> None:
    region = branch_region("irb120")
    stream = FKStream(irb120, 256, torch.Generator().manual_seed(3), sampling="one_branch")
    batch = next(stream)
    assert bool(region.contains(irb120, batch.q.double(), slack=1e-6).all())
    assert torch.allclose(irb120.fk(batch.q).pos, batch.pos)
    branch, full = make_eval_set(irb120, 7, 200, one_branch=True), make_eval_set(irb120, 7, 200)
    assert bool(region.contains(irb120, branch.batch.q).all()) and branch.sha256 != full.sha256
    assert float(region.contains(irb120, full.batch.q).double().mean()) < 0.3
    with pytest.raises(HikError, match="no one-branch region .* 'panda'.*irb120"):
        FKStream(Chain(get_robot("panda")), 8, torch.Generator(), sampling="one_branch")


@needs_network
def test_the_one_branch_regression_is_well_posed_where_the_full_space_one_averages(irb120: Chain) -> None:
    test = make_eval_set(irb120, 11, 300, one_branch=True).batch
    one_branch = NeuralIK(load_pretrained("irb120", ONE_BRANCH_NETWORK), irb120).solve(test.pos, test.quat)
    averaged = NeuralIK(load_pretrained("irb120", "regression"), irb120).solve(test.pos, test.quat)
    pos_mm = 1000 * one_branch.pos_err
    # the shipped one: 23.6 mm mean on 10,000 in-branch targets; the whole-box DNN averages branches, 10x further off
    assert float(pos_mm.median()) < 35.0 and float(pos_mm.mean()) < 45.0
    assert float(pos_mm.mean()) < 0.25 * float(1000 * averaged.pos_err.mean())
    assert bool(torch.isfinite(one_branch.q).all())


@pytest.mark.slow  # ~15 s: the compiled LM's first load
@needs_network
def test_the_paper_hybrid_row_on_a_few_targets(irb120: Chain) -> None:
    record = one_branch_table(irb120.robot, 200, seed=5)
    assert record is not None and record["network"] == ONE_BRANCH_NETWORK and record["steps"] > 0
    rows = {(row["targets"], row["solver"].split(" (")[0]): row for row in record["rows"]}
    hybrid = rows[("branch", ONE_BRANCH_HYBRID)]
    assert hybrid["success_5mm_2deg"] >= 0.97 and hybrid["function_evals"] < 20  # 99.99 % and 8.2 on 10,000
    assert rows[("full", ONE_BRANCH_HYBRID)]["success_5mm_2deg"] <= hybrid["success_5mm_2deg"] + 0.05


def _row(solver: str, definition: str) -> dict[str, float | str]:
    return {"solver": solver, "definition": definition, "pos_mean_mm": 1.0, "rot_mean_deg": 0.5, "success_5mm_2deg": 0.95,
            "function_evals": 12.0, "ms_per_target": 0.02}


def test_the_suite_table_has_the_one_branch_rows_after_the_paper_rows() -> None:
    rows = [_row("regression DNN (paper; full joint space)", "paper"), _row(PAPER_HYBRID, "paper"), _row("hybrid: network + LM", "ours")]
    one_branch = {"network": ONE_BRANCH_NETWORK, "steps": 4321, "training_seconds": 1200.0, "seed": 777,
                  "rows": [_row(f"{ONE_BRANCH_HYBRID} (targets from the branch)", "paper, one-branch data")]}
    irb120 = {"rows": rows, "one_branch": one_branch}
    metrics = {"harmoatt": {"pos_mean_mm": 1.0, "rot_mean_deg": 1.0, "success_5mm_2deg": 0.5, "success_10mm_20deg": 0.9},
               "cycleik": {"pos_mean_mm": 2.0, "rot_mean_deg": 2.0, "success_5mm_2deg": 0.4, "success_10mm_20deg": 0.9}}
    humanoid = {"robot": "g1", "dof": 7, "budget": {"kind": "minutes", "value": 12.0}, "parameters": {"harmoatt": 1, "cycleik": 1},
                "metrics": metrics, "reductions_vs": {"cycleik": reductions(metrics["harmoatt"], metrics["cycleik"])}}
    text = paper_markdown([humanoid], irb120, 10)
    lines = text.splitlines()
    at = {name: next(i for i, line in enumerate(lines) if f"| {name} |" in line)
          for name in (PAPER_HYBRID, f"{ONE_BRANCH_HYBRID} (targets from the branch)", "hybrid: network + LM")}
    assert at[PAPER_HYBRID] < at[f"{ONE_BRANCH_HYBRID} (targets from the branch)"] < at["hybrid: network + LM"]
    assert "| paper, one-branch data |" in text and "4,321 steps, 20.0 min" in text

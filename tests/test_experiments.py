"""The papers' experiments: fairness of a comparison (equal steps or equal minutes), the headline
in the abstract's form, reductions as the papers define them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hik_sim.learning.checkpoint import Card
from hik_sim.errors import HikError
from hik_sim.evaluation.experiments import check_fair, harmoatt_headline, reductions, training_budget
from hik_sim.policies import load_pretrained


def _card(**changes: object) -> Card:
    card = load_pretrained("g1", "harmoatt").card
    return replace(card, **changes)


def test_a_run_stopped_by_its_minutes_has_a_time_budget_and_a_step_run_a_step_budget() -> None:
    timed = _card(config={**_card().config, "minutes": 12.0, "steps": 1_000_000}, steps=7_000)
    assert training_budget(timed) == ("minutes", 12.0)
    stepped = _card(config={**_card().config, "minutes": None, "steps": 4000}, steps=4000)
    assert training_budget(stepped) == ("steps", 4000.0)
    # minutes were set but the steps ran out first: the steps bounded it
    assert training_budget(_card(config={**_card().config, "minutes": 12.0, "steps": 4000}, steps=4000)) == ("steps", 4000.0)


def test_equal_minutes_is_a_fair_pair_and_unequal_budgets_are_refused() -> None:
    config = {**_card().config, "minutes": 12.0, "steps": 1_000_000}
    harmoatt = _card(config=config, steps=6_000)
    mlp = _card(config=config, steps=9_000, model="mlp", parameters=harmoatt.parameters + 1000)
    fair = check_fair("g1", {"harmoatt": harmoatt, "mlp": mlp})
    assert fair["budget"] == {"kind": "minutes", "value": 12.0} and fair["steps"] == {"harmoatt": 6000, "mlp": 9000}
    with pytest.raises(HikError, match=r"mlp budget"):
        check_fair("g1", {"harmoatt": harmoatt, "mlp": replace(mlp, config={**config, "minutes": 6.0})})
    with pytest.raises(HikError, match=r"cycleik parameters"):
        check_fair("g1", {"harmoatt": harmoatt, "cycleik": replace(mlp, parameters=2 * harmoatt.parameters)})
    # a reference stopped by its minutes, and a partner given exactly the steps it reached: equal steps
    partner = replace(mlp, config={**config, "minutes": None, "steps": 6_000}, steps=6_000)
    assert check_fair("g1", {"harmoatt": harmoatt, "mlp": partner})["budget"] == {"kind": "steps", "value": 6000.0}
    with pytest.raises(HikError, match=r"mlp batch"):
        check_fair("g1", {"harmoatt": harmoatt, "mlp": replace(mlp, config={**config, "batch": 256})})


def test_headline_takes_the_largest_reduction_over_robots_against_the_named_baseline() -> None:
    ours = {"pos_mean_mm": 2.0, "rot_mean_deg": 1.0, "success_5mm_2deg": 0.80, "success_10mm_20deg": 0.9}
    weak = {"pos_mean_mm": 8.0, "rot_mean_deg": 1.5, "success_5mm_2deg": 0.70, "success_10mm_20deg": 0.9}
    close = {"pos_mean_mm": 2.5, "rot_mean_deg": 4.0, "success_5mm_2deg": 0.79, "success_10mm_20deg": 0.9}
    rows = [{"robot": "a", "reductions_vs": {"cycleik": reductions(ours, weak)}},
            {"robot": "b", "reductions_vs": {"cycleik": reductions(ours, close), "mlp": reductions(ours, weak)}}]
    headline = harmoatt_headline(rows)
    assert headline["max_pos_reduction_pct"] == pytest.approx(75.0) and headline["max_pos_reduction_pct_robot"] == "a"
    assert headline["max_rot_reduction_pct"] == pytest.approx(75.0) and headline["max_rot_reduction_pct_robot"] == "b"
    assert headline["max_success_gain_pts"] == pytest.approx(10.0) and headline["max_success_gain_pts_robot"] == "a"
    assert harmoatt_headline(rows, "mlp")["max_pos_reduction_pct_robot"] == "b"
    with pytest.raises(HikError, match="no row compares"):
        harmoatt_headline(rows, "regression")


def test_success_is_defined_once_and_the_single_pose_rotation_error_is_the_batched_one() -> None:
    import math

    import numpy as np
    import torch

    from hik_sim.evaluation.metrics import SUCCESS_THRESHOLDS
    from hik_sim.learning.network import CHOICE_TOLERANCE
    from hik_sim.kinematics.rotations import rotation_error
    from hik_sim.kinematics.tolerances import REPORT_TOLERANCES, Tolerance
    from hik_sim.kinematics.tolerances import LOOSE, SUCCESS, rotation_angle

    assert Tolerance() == SUCCESS == REPORT_TOLERANCES["5mm_2deg"] and (SUCCESS.position, SUCCESS.rotation) == CHOICE_TOLERANCE
    assert {name: (p, r) for name, p, r in SUCCESS_THRESHOLDS} == {
        "success_5mm_2deg": (0.005, math.radians(2)), "success_10mm_20deg": (LOOSE.position, LOOSE.rotation)}
    rng = np.random.default_rng(0)
    a = rng.normal(size=(200, 4))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b = rng.normal(size=(200, 4))
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    batched = rotation_error(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert np.allclose([rotation_angle(x, y) for x, y in zip(a, b)], batched, atol=1e-12)
    assert rotation_angle(a[0], -a[0]) < 1e-15 and rotation_angle(a[0], b[0]) == rotation_angle(-a[0], b[0])  # sign-invariant
    # near zero it keeps its digits, where 2·acos(|<q, q'>|) reads a 1e-8 rad rotation as 0 or ~2e-8
    tiny = np.array([math.cos(0.5e-8), math.sin(0.5e-8), 0.0, 0.0])
    assert rotation_angle(np.array([1.0, 0, 0, 0]), tiny) == pytest.approx(1e-8, rel=1e-6)

"""The public API: the names a user reaches for import from hik_sim.solvers, hik_sim.kinematics and hik_sim.policies,
lazily (importing the packages imports neither torch nor MuJoCo), each solver module holds one concept under 600 lines,
and the solvers' plans keep their constructors short."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from hik_sim.errors import SolverError

SOLVERS = Path(__file__).resolve().parents[1] / "hik_sim" / "solvers"


def _fresh(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (nothing imported before it)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("package", ["hik_sim", "hik_sim.solvers", "hik_sim.kinematics", "hik_sim.policies"])
def test_importing_a_package_imports_neither_torch_nor_mujoco(package: str) -> None:
    done = _fresh(f"import {package}, sys; print('torch' in sys.modules, 'mujoco' in sys.modules, len({package}.__all__))")
    assert done.returncode == 0, done.stderr
    torch_loaded, mujoco_loaded, exported = done.stdout.split()
    assert (torch_loaded, mujoco_loaded) == ("False", "False")
    assert int(exported) > 0


def test_torch_free_names_stay_torch_free() -> None:
    """Tolerances and the LM's rules come without torch; a solver class brings it in only when asked for."""
    done = _fresh("import sys\n"
                  "from hik_sim.kinematics import Tolerance, SUCCESS\n"
                  "from hik_sim.solvers import LMRules\n"
                  "before = 'torch' in sys.modules\n"
                  "from hik_sim.solvers import HybridIK\n"
                  "print(before, 'torch' in sys.modules, SUCCESS.position, LMRules().damping)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "0.005", "0.001"]


@pytest.mark.parametrize("package", ["hik_sim", "hik_sim.solvers", "hik_sim.kinematics", "hik_sim.policies"])
def test_every_exported_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018


def test_the_documented_imports_name_the_defining_objects() -> None:
    from hik_sim.kinematics import Chain
    from hik_sim.policies import IKController, load_pretrained
    from hik_sim.solvers import HybridIK, IKResult, LMRefiner, MultistartIK, NeuralIK, SingleTargetIK, make_solver

    homes = [importlib.import_module(f"hik_sim.{m}") for m in ("kinematics.chain", "policies.controller", "solvers.hybrid", "solvers.registry")]
    assert (Chain, IKController, HybridIK, make_solver) == (homes[0].Chain, homes[1].IKController, homes[2].HybridIK,
                                                            homes[3].make_solver)
    assert [c.__module__ for c in (IKResult, LMRefiner, MultistartIK, NeuralIK, SingleTargetIK)] == [
        "hik_sim.solvers.base", "hik_sim.solvers.lm", "hik_sim.solvers.restarts", "hik_sim.solvers.neural",
        "hik_sim.solvers.single_target_ik"]
    assert callable(load_pretrained)


def test_the_old_solver_module_only_re_exports() -> None:
    """``hik_sim.solvers.ik`` defines nothing: every name in it is the object of the module that defines it."""
    ik = importlib.import_module("hik_sim.solvers.ik")
    for name in ik.__all__:
        value = getattr(ik, name)
        home = getattr(value, "__module__", None)
        assert home is None or home != "hik_sim.solvers.ik", name
    assert not [n for n, v in vars(ik).items() if inspect.isclass(v) and v.__module__ == "hik_sim.solvers.ik"]


def test_no_solver_module_is_over_600_lines() -> None:
    sizes = {path.name: len(path.read_text().splitlines()) for path in SOLVERS.glob("*.py")}
    assert {"base.py", "neural.py", "lm.py", "lm_rules.py", "restarts.py", "hybrid.py", "single_target_ik.py",
            "dm_control.py"} <= set(sizes)
    assert max(sizes.values()) <= 600, sizes


def test_constructors_take_few_parameters_and_plans_are_frozen() -> None:
    from hik_sim.solvers import HybridIK, HybridPlan, LMRefiner, LMRules, SingleTargetIK, SingleTargetPlan

    for cls in (HybridIK, SingleTargetIK, LMRefiner):
        parameters = list(inspect.signature(cls.__init__).parameters)[1:]
        assert len(parameters) <= 6, (cls.__name__, parameters)
    for plan in (HybridPlan(), SingleTargetPlan(), LMRules()):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(plan, dataclasses.fields(plan)[0].name, 0)


def test_plan_defaults_are_the_shipped_values() -> None:
    from hik_sim.kinematics.tolerances import EXACT
    from hik_sim.solvers import HybridPlan, LMRules, SingleTargetPlan
    from hik_sim.solvers.lm_rules import CLOSE_DAMPING, STALL_ITERATIONS, STALL_PROGRESS

    assert HybridPlan() == HybridPlan(restarts=49, finish=EXACT, flip_restarts=False, rank_all_answers=False,
                                      face_restarts=False, distinct_seeds=0.5, fallback_after=True, table_seeds=4,
                                      table_size=HybridPlan().table_size, table_after=1)
    assert SingleTargetPlan() == SingleTargetPlan(max_iterations=30, rotation_weight=0.2, restarts=49, flip_restarts=False,
                                                  table_seeds=4, table_size=SingleTargetPlan().table_size)
    assert LMRules() == LMRules(damping=1e-3, close_damping=CLOSE_DAMPING, stall_iterations=STALL_ITERATIONS,
                                stall_progress=STALL_PROGRESS, stop_position=1e-6, stop_rotation=1e-6, rotation_weight=0.2)
    assert (CLOSE_DAMPING, STALL_ITERATIONS, STALL_PROGRESS) == (1e-5, 8, 0.01)


@pytest.mark.parametrize("plan, arguments, message", [
    ("HybridPlan", {"restarts": -1}, "restarts must be >= 0"),
    ("HybridPlan", {"table_after": 0}, "table_after an int >= 1"),
    ("HybridPlan", {"distinct_seeds": -0.1}, "distinct_seeds must be >= 0"),
    ("SingleTargetPlan", {"table_seeds": -1}, "table_seeds must be"),
    ("SingleTargetPlan", {"rotation_weight": 0.0}, "rotation_weight positive"),
    ("LMRules", {"damping": 0.0}, "damping must be positive"),
    ("LMRules", {"stall_progress": 1.0}, "stall_progress in"),
    ("LMRules", {"close_damping": -1.0}, "close_damping must be positive"),
])
def test_bad_plans_raise_naming_the_field(plan: str, arguments: dict[str, float], message: str) -> None:
    with pytest.raises(SolverError, match=message):
        getattr(importlib.import_module("hik_sim.solvers"), plan)(**arguments)


def test_a_plan_of_the_wrong_kind_is_refused() -> None:
    from hik_sim.kinematics import Chain
    from hik_sim.robots import get_robot
    from hik_sim.solvers import HybridPlan, LMRefiner, SingleTargetIK

    chain = Chain(get_robot("irb120"))
    with pytest.raises(SolverError, match="plan must be a SingleTargetPlan"):
        SingleTargetIK(chain, plan=HybridPlan())  # type: ignore[arg-type]
    with pytest.raises(SolverError, match="rules must be an LMRules"):
        LMRefiner(chain, rules=HybridPlan())  # type: ignore[arg-type]


def test_both_lms_read_one_set_of_rules() -> None:
    """The batched LM and the one-target LM start from the same damping, stop and stall rules (lm_rules')."""
    from hik_sim.kinematics import Chain
    from hik_sim.robots import get_robot
    from hik_sim.solvers import LMRefiner, LMRules
    from hik_sim.solvers.single_target import SingleTargetLM

    chain = Chain(get_robot("irb120"))
    batched, single, rules = LMRefiner(chain), SingleTargetLM(chain.robot, chain.geometry), LMRules()
    for lm in (batched, single):
        assert (lm.damping, lm.close_damping, lm.stall_iterations, lm.stall_progress, lm.rotation_weight) == (
            rules.damping, rules.close_damping, rules.stall_iterations, rules.stall_progress, rules.rotation_weight)
    assert (batched.stop.position, batched.stop.rotation) == (single.stop_position, single.stop_rotation)

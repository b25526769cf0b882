"""Checkpoint files: safetensors without pickle, pickled .pt files still read with a warning, where each network lives."""

from __future__ import annotations

import ast
import importlib
import json
import math
import pickle
import shutil
import warnings
from pathlib import Path

import pytest
import torch
from conftest import robot_by_id

from hik_sim.errors import CheckpointError, HikError
from hik_sim.learning.checkpoint import (FORMAT, Card, convert_checkpoint, is_pickled_checkpoint, load_checkpoint, read_checkpoint,
                                         save_checkpoint)
from hik_sim.learning.data import make_eval_set
from hik_sim.kinematics.chain import Chain
from hik_sim.policies import (BENCHMARK_CHECKPOINTS_ENV, BENCHMARK_NETWORKS, PRETRAINED_DIR, benchmark_checkpoints_dir,
                              closed_loop_extra_names, closed_loop_network_name, hybrid_fallback_name, hybrid_seed_name,
                              load_pretrained, pretrained_names, pretrained_path, single_target_seed_name)
from hik_sim.robots import robot_names

REPO = Path(__file__).resolve().parents[1]


def _forbid_pickle(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a checkpoint load unpickled something")

    for module, name in ((pickle, "Unpickler"), (pickle, "load"), (pickle, "loads"), (torch, "load")):
        monkeypatch.setattr(module, name, refuse)


def _every_network() -> list[tuple[str, str, Path]]:
    names = pretrained_names()
    assert len(names) >= 29  # 4 a robot, 7 robots, the IRB120's map network; from a checkout the baselines too
    return [(*name.split("/"), pretrained_path(*name.split("/"))) for name in names]  # type: ignore[misc]


def test_every_checkpoint_reads_from_safetensors_without_unpickling_and_holds_the_card_beside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    networks = _every_network()
    assert not [path for _, _, path in networks if is_pickled_checkpoint(path)]
    _forbid_pickle(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no DeprecationWarning: nothing takes the pickle path
        for robot, model, path in networks:
            payload = read_checkpoint(path)
            card = Card.from_json(payload["card"])
            beside = Card.from_json(json.loads(path.with_suffix(".json").read_text(encoding="utf-8")))
            assert card == beside and card.robot == robot and payload["state_dict"], (robot, model)
            assert sum(v.numel() for v in payload["state_dict"].values() if v.is_floating_point()) >= card.parameters
        for robot, model in (("irb120", "harmoatt_4answers"), ("g1", "mlp_seed"), ("panda", "harmoatt")):  # one of each kind, built
            assert load_pretrained(robot, model).card.model == model.split("_")[0]


@pytest.mark.slow
def test_every_network_builds_from_safetensors_without_unpickling_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    networks = _every_network()
    _forbid_pickle(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for robot, model, _ in networks:
            network = load_pretrained(robot, model)
            assert network.card.robot == robot and sum(p.numel() for p in network.parameters()) == network.card.parameters, (robot, model)


def test_a_pickled_checkpoint_still_loads_with_a_deprecation_warning_and_converts(tmp_path: Path) -> None:
    robot = robot_by_id("irb120")
    shipped = load_pretrained("irb120", "harmoatt_4answers")
    old = tmp_path / "old.pt"
    torch.save({"format": FORMAT, "card": shipped.card.to_json(), "state_dict": shipped.state_dict()}, old)  # as hik_sim 0.1 wrote
    assert is_pickled_checkpoint(old)
    with pytest.warns(DeprecationWarning, match=r"old.pt is a pickled \(torch.save\) checkpoint.*convert_checkpoint") as caught:
        network, card = load_checkpoint(old, robot)
    assert [w.filename for w in caught if w.category is DeprecationWarning] == [__file__]  # shown at the caller's line
    targets = make_eval_set(Chain(robot), 5, 64).batch
    expected = shipped.solve_all(targets.pos, targets.quat)
    assert card == shipped.card and torch.equal(network.solve_all(targets.pos, targets.quat), expected)
    new = convert_checkpoint(old)
    assert new == tmp_path / "old.safetensors" and not is_pickled_checkpoint(new) and new.with_suffix(".json").is_file()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again, _ = load_checkpoint(new, robot)
    assert torch.equal(again.solve_all(targets.pos, targets.quat), expected)


def test_training_state_round_trips_through_safetensors_and_resumes_the_same_step(tmp_path: Path) -> None:
    network = load_pretrained("irb120", "mlp_seed")
    network.train()
    optimizer = torch.optim.Adam(network.parameters(), lr=1e-3, betas=(0.9, 0.99))
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    targets = make_eval_set(Chain(robot_by_id("irb120")), 6, 32).batch

    def step() -> None:
        optimizer.zero_grad()
        network(targets.pos.float(), targets.quat.float()).q.square().mean().backward()
        optimizer.step()
        scheduler.step()

    step()
    generator = torch.Generator().manual_seed(3)
    state = {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "generator": generator.get_state(),
             "step": 1, "elapsed": 0.25, "history": [{"loss": math.inf, "beta": math.nan}], "stream": {"hard": None},
             "pair": (1, "two"), "by_index": {0: torch.ones(2), 7: "seven"}}
    path = save_checkpoint(tmp_path / "run.safetensors", network, network.card, state)
    read = read_checkpoint(path)["resume"]
    assert read["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.99) and set(read["optimizer"]["state"]) == set(range(len(list(network.parameters()))))
    assert read["pair"] == (1, "two") and read["by_index"][7] == "seven" and torch.equal(read["by_index"][0], torch.ones(2))
    assert math.isinf(read["history"][0]["loss"]) and math.isnan(read["history"][0]["beta"]) and read["stream"] == {"hard": None}
    assert torch.equal(read["generator"], generator.get_state()) and read["generator"].dtype == torch.uint8
    resumed, _ = load_checkpoint(path, robot_by_id("irb120"))
    resumed.train()
    optimizer2 = torch.optim.Adam(resumed.parameters(), lr=1e-3)
    scheduler2 = torch.optim.lr_scheduler.StepLR(optimizer2, step_size=2, gamma=0.5)
    optimizer2.load_state_dict(read["optimizer"])
    scheduler2.load_state_dict(read["scheduler"])
    step()  # the original run's second step, and the resumed run's
    optimizer2.zero_grad()
    resumed(targets.pos.float(), targets.quat.float()).q.square().mean().backward()
    optimizer2.step()
    scheduler2.step()
    assert all(torch.equal(a, b) for a, b in zip(network.parameters(), resumed.parameters()))
    assert scheduler2.get_last_lr() == scheduler.get_last_lr() == [5e-4]


def test_a_resume_state_that_is_not_tensors_and_json_is_refused_naming_where(tmp_path: Path) -> None:
    network = load_pretrained("irb120", "mlp_seed")
    with pytest.raises(CheckpointError, match=r"cannot store the resume state\['extra'\] in a checkpoint: a object"):
        save_checkpoint(tmp_path / "run.safetensors", network, network.card, {"extra": object()})
    assert not (tmp_path / "run.safetensors").exists()


def test_a_truncated_safetensors_file_is_not_readable(tmp_path: Path) -> None:
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(pretrained_path("irb120", "mlp_seed").read_bytes()[:5000])
    assert not is_pickled_checkpoint(cut)  # its header is whole: read as safetensors, and refused as such
    with pytest.raises(CheckpointError, match=r"cut.safetensors is not a readable hik_sim checkpoint"):
        load_checkpoint(cut)


def test_the_package_holds_every_network_the_controllers_and_evaluator_use_and_no_baseline() -> None:
    from hik_sim.evaluation.evaluate import EvalConfig
    from hik_sim.solvers.registry import SOLVER_NAMES, needs_network

    default_networks = [p for p in EvalConfig().policies if needs_network(p) and p not in ("closed_loop", "hybrid")]
    assert default_networks == ["harmoatt_4answers"] and not set(default_networks) & set(SOLVER_NAMES)
    for robot in robot_names():
        fallback = hybrid_fallback_name(robot)
        used = {hybrid_seed_name(robot), single_target_seed_name(robot), closed_loop_network_name(robot), *closed_loop_extra_names(robot),
                *default_networks, *([fallback] if fallback else []), "mlp_seed"}
        packaged = {p.stem for p in (PRETRAINED_DIR / robot).glob("*.safetensors")}
        assert used <= packaged, (robot, used - packaged)
        assert not packaged & set(BENCHMARK_NETWORKS.get(robot, ())), robot
        assert all((PRETRAINED_DIR / robot / f"{name}.json").is_file() for name in packaged)
    assert not list(PRETRAINED_DIR.glob("*/*.pt"))
    index = json.loads((PRETRAINED_DIR / "index.json").read_text(encoding="utf-8"))
    assert sorted(index) == sorted(f"{p.parent.name}/{p.stem}" for p in PRETRAINED_DIR.glob("*/*.safetensors"))
    assert all((PRETRAINED_DIR / entry["path"]).is_file() for entry in index.values())


@pytest.mark.skipif(not (REPO / "benchmarks" / "checkpoints").is_dir(), reason="the papers' baselines are in a checkout only")
def test_the_papers_baselines_load_from_a_checkout_and_say_where_they_live_when_absent(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    assert benchmark_checkpoints_dir() == REPO / "benchmarks" / "checkpoints"
    for robot, names in BENCHMARK_NETWORKS.items():
        for name in names:
            assert pretrained_path(robot, name).parent == REPO / "benchmarks" / "checkpoints" / robot
    assert load_pretrained("irb120", "harmoatt_q6fixed").card.fixed_joints == {"joint_6": 0.0}
    monkeypatch.setenv(BENCHMARK_CHECKPOINTS_ENV, str(tmp_path / "absent"))  # as in an installed wheel: no folder
    assert benchmark_checkpoints_dir() is None and "irb120/cycleik" not in pretrained_names() and "irb120/harmoatt" not in pretrained_names()
    assert "irb120/harmoatt_4answers" in pretrained_names()
    from hik_sim.robots import get_robot
    from hik_sim.solvers.registry import make_solver, solver_names

    assert load_pretrained("irb120").card.model == "harmoatt"  # the default: the robot's shipped HarmoAtt-IK
    assert "harmoatt" not in solver_names(get_robot("talos")) and len(make_solver("closed_loop", "talos").networks) == 2
    with pytest.raises(CheckpointError, match=r"irb120/cycleik is one of the seed papers' baselines and controls, which live in the "
                                              r"repository's benchmarks/checkpoints/irb120/ .*HIK_SIM_BENCHMARK_CHECKPOINTS"):
        load_pretrained("irb120", "cycleik")
    with pytest.raises(HikError, match=r"no shipped checkpoint irb120/transformer; shipped: .*irb120/harmoatt"):
        load_pretrained("irb120", "transformer")
    (tmp_path / "mine" / "g1").mkdir(parents=True)  # the folder named by the variable: a copy of the checkout's
    for suffix in (".safetensors", ".json"):
        shutil.copy(REPO / "benchmarks" / "checkpoints" / "g1" / f"cycleik{suffix}", tmp_path / "mine" / "g1")
    monkeypatch.setenv(BENCHMARK_CHECKPOINTS_ENV, str(tmp_path / "mine"))
    assert load_pretrained("g1", "cycleik").card.model == "cycleik"


def _console_scripts() -> dict[str, str]:
    tree = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup")
    entry_points = ast.literal_eval(next(k.value for k in call.keywords if k.arg == "entry_points"))
    return dict(tuple(part.strip() for part in line.split("=")) for line in entry_points["console_scripts"])


@pytest.mark.parametrize(("command", "module"), [("hik-sim-train", "hik_sim.train"), ("hik-sim-evaluate", "hik_sim.evaluate"),
                                                 ("hik-sim-viewer", "hik_sim.viewer")])
def test_console_scripts_run_the_same_main_as_python_m(command: str, module: str, capsys: pytest.CaptureFixture[str]) -> None:
    scripts = _console_scripts()
    module_name, attribute = scripts[command].split(":")
    main = getattr(importlib.import_module(module_name), attribute)
    source = ast.parse((REPO / Path(*module.split("."), "__main__.py")).read_text(encoding="utf-8"))
    if module == "hik_sim.viewer":  # its __main__ defines main itself
        assert module_name == "hik_sim.viewer.__main__"
    else:  # its __main__ imports main from the module that defines it
        origin = next(n.module for n in ast.walk(source) if isinstance(n, ast.ImportFrom) and any(a.name == "main" for a in n.names))
        assert main is importlib.import_module(str(origin)).main
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0 and "usage:" in capsys.readouterr().out

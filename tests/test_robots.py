"""The robot registry, RobotSpec and the robots CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from conftest import USER_URDF, user_robot

from hik_sim.errors import HikError, UnknownRobotError
from hik_sim.robots import DEFAULT_ROBOT, HUMANOIDS, RobotSpec, get_robot, robot_from_urdf, robot_names
from hik_sim.robots.__main__ import main as robots_main


def test_registry_has_the_default_arm_panda_and_five_humanoids() -> None:
    names = robot_names()
    assert names[0] == DEFAULT_ROBOT == "irb120"
    assert {"irb120", "panda", *HUMANOIDS} == set(names)
    assert len(HUMANOIDS) == 5


def test_humanoids_are_kinematically_diverse() -> None:
    dofs = {name: get_robot(name).dof for name in HUMANOIDS}
    assert len(set(dofs.values())) >= 3, dofs  # different chain lengths
    torso_words = ("torso", "waist", "trunk")
    with_torso = [n for n in HUMANOIDS if any(w in j.lower() for j in get_robot(n).joint_names for w in torso_words)]
    assert 0 < len(with_torso) < len(HUMANOIDS)  # some with, some without torso/waist joints


@pytest.mark.parametrize("name", robot_names())
def test_registered_robot_is_complete(name: str) -> None:
    robot = get_robot(name)
    assert robot.name == name
    assert robot.urdf.is_file()
    assert robot.dof == len(robot.joint_names) == len(robot.lower) == len(robot.upper) == len(robot.home)
    assert all(lo < hi for lo, hi in zip(robot.lower, robot.upper))
    assert all(lo <= h <= hi for lo, h, hi in zip(robot.lower, robot.home, robot.upper))
    assert robot.description and robot.licence and robot.source
    assert len(robot.urdf_sha256()) == 64
    assert get_robot(name) is robot  # built once


def test_irb120_matches_its_published_kinematics() -> None:
    robot = get_robot("irb120")
    assert robot.joint_names == tuple(f"joint_{i}" for i in range(1, 7))
    assert robot.lower == pytest.approx((-2.87979, -1.91986, -1.91986, -2.79253, -2.094395, -6.98132))
    assert robot.upper == pytest.approx((2.87979, 1.91986, 1.22173, 2.79253, 2.094395, 6.98132))
    joints = {j.name: j for j in robot.urdf_model().joints}
    assert joints["joint_2"].xyz == (0, 0, 0.29) and joints["joint_3"].xyz == (0, 0, 0.27)
    assert joints["joint_5"].xyz == (0.302, 0, 0) and joints["joint_6"].xyz == (0.072, 0, 0)
    assert joints["joint_6-tool0"].rpy == pytest.approx((0, math.pi / 2, 0))


def test_unknown_robot_lists_the_valid_names() -> None:
    with pytest.raises(UnknownRobotError) as info:
        get_robot("irb121")
    assert "irb121" in str(info.value)
    for name in robot_names():
        assert name in str(info.value)
    assert isinstance(info.value, HikError)


def test_user_urdf_chain_skips_fixed_joints_and_holds_the_rest() -> None:
    robot = user_robot()
    assert robot.joint_names == ("yaw", "pitch", "extend", "roll")
    assert robot.lower[3] == pytest.approx(-math.pi) and robot.upper[3] == pytest.approx(math.pi)  # continuous
    assert robot.home == (0.0, 0.0, 0.0, 0.0)
    assert dict(robot.held_joints) == {"finger": 0.0}
    assert robot.source == "user file"


def test_home_override_and_its_errors() -> None:
    robot = robot_from_urdf(USER_URDF, "base", "tool", home={"pitch": 0.5, "finger": 0.4})
    assert robot.home[1] == 0.5 and robot.held_joints["finger"] == 0.4
    with pytest.raises(HikError, match="unknown joints.*nope"):
        robot_from_urdf(USER_URDF, "base", "tool", home={"nope": 0.1})
    with pytest.raises(HikError, match="outside its limits"):
        robot_from_urdf(USER_URDF, "base", "tool", home={"pitch": 3.0})


def test_spec_rejects_inconsistent_fields() -> None:
    with pytest.raises(HikError, match="home"):
        RobotSpec("x", USER_URDF, "base", "tool", ("a",), (-1.0,), (1.0,), (2.0,))
    with pytest.raises(HikError, match="values"):
        RobotSpec("x", USER_URDF, "base", "tool", ("a", "b"), (-1.0,), (1.0,), (0.0,))


def test_cli_json_lists_every_robot(capsys: pytest.CaptureFixture[str]) -> None:
    assert robots_main(["--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == list(robot_names())
    for row in rows:
        assert {"name", "dof", "base_link", "ee_link", "joints", "source", "licence"} <= set(row)
        assert row["dof"] == len(row["joints"])


def test_cli_table_and_user_urdf(capsys: pytest.CaptureFixture[str]) -> None:
    assert robots_main([]) == 0
    table = capsys.readouterr().out
    for name in robot_names():
        assert name in table
    assert robots_main(["--urdf", str(USER_URDF), "--base", "base", "--ee", "tool", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["joints"] == ["yaw", "pitch", "extend", "roll"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--robot", "nope"], "registered robots are"),
        (["--urdf", str(USER_URDF)], "--base LINK and --ee LINK"),
        (["--urdf", str(USER_URDF), "--base", "base", "--ee", "nope"], "is not a link"),
        (["--robot", "irb120", "--urdf", str(USER_URDF), "--base", "base", "--ee", "tool"], "not both"),
        (["--base", "base"], "go with --urdf"),
    ],
)
def test_cli_bad_robot_arguments_exit_with_a_message(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        robots_main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_module_runs_as_a_command() -> None:
    out = subprocess.run([sys.executable, "-m", "hik_sim.robots", "--json"], capture_output=True, text=True, check=True)
    assert {r["name"] for r in json.loads(out.stdout)} == set(robot_names())


def test_importing_the_package_imports_neither_torch_nor_mujoco() -> None:
    code = "import sys, hik_sim, hik_sim.robots; print('torch' in sys.modules, 'mujoco' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]

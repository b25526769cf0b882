"""Reliability: concurrent writers, run folders, user robots, and bad input that must be a HikError."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_malformed_urdf import TETRA_ASCII_STL

from hik_sim import meshes


def test_two_processes_converting_one_mesh_do_not_clash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trimesh

    monkeypatch.setenv("HIK_SIM_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "part.stl"
    source.write_text(TETRA_ASCII_STL)  # ASCII STL: converted, not linked
    export = trimesh.Trimesh.export

    def export_while_another_process_converts(self, path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        written = export(self, path, *args, **kwargs)  # this process's file is written, not yet renamed ...
        monkeypatch.setattr(trimesh.Trimesh, "export", export)
        meshes.mujoco_mesh(source)  # ... when another process converts the same mesh from start to end
        return written

    monkeypatch.setattr(trimesh.Trimesh, "export", export_while_another_process_converts)
    converted = meshes.mujoco_mesh(source)
    assert meshes._is_binary_stl(converted.path)  # whole, as written by one of the two
    assert sorted(p.suffix for p in converted.path.parent.iterdir()) == [".json", ".stl"]  # no temporary left behind

"""Making a URDF's meshes readable by MuJoCo, cached outside the repository.

MuJoCo reads binary STL and OBJ, but not COLLADA (DAE) and not always ASCII STL, and it names mesh
assets by file stem (so ``a/link.stl`` and ``b/link.stl`` collide). :func:`mujoco_mesh` turns any
mesh file into a uniquely named binary STL in the cache (COLLADA through trimesh + pycollada,
keeping the mesh's own colour for the geom) and links files MuJoCo reads as they are.

The cache is ``$HIK_SIM_CACHE`` or ``$XDG_CACHE_HOME/hik_sim`` (default ``~/.cache/hik_sim``); a
variable set but empty counts as unset, and so does a relative ``XDG_CACHE_HOME`` (the XDG rule), so
neither puts a cache in the current folder. Files are written with the umask's permissions
(:func:`hik_sim.atomic.write_atomically`), so users who share a cache read each other's entries. A
cache that cannot be written (a full disk, a folder of another user) is a :class:`~hik_sim.errors.MeshError`
naming the folder; entries are keyed by the source file's path, size and modification time, so they refresh when the
source changes. Conversion happens once per file. Cache writes are safe under concurrency: each
file is written under a unique temporary name in the cache folder and renamed into place
atomically, so processes building the same robot at once never see, or clash over, a half-written
entry. Cache names keep at most :data:`_STEM_CHARS` characters of the source's stem (the key keeps
them unique), so a long but legal mesh name never becomes one too long for the file system.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from hik_sim.atomic import write_atomically
from hik_sim.errors import MeshError

__all__ = ["MujocoMesh", "cache_dir", "cache_root", "mujoco_mesh"]

_NATIVE = (".stl", ".obj", ".msh")
_MIN_VERTICES = 4  # MuJoCo refuses meshes with fewer vertices
_STEM_CHARS = 64  # of a source's stem kept in its cache name


@dataclass(frozen=True)
class MujocoMesh:
    """A mesh file MuJoCo can read.

    Attributes:
        path: the file (in the cache).
        rgba: the colour the source file gives the mesh, or ``None`` when it gives none.
    """

    path: Path
    rgba: tuple[float, float, float, float] | None


def cache_root() -> Path:
    """The cache's root folder: ``$HIK_SIM_CACHE``, else ``$XDG_CACHE_HOME/hik_sim``, else ``~/.cache/hik_sim``
    (an empty variable counts as unset; so does a relative ``XDG_CACHE_HOME``)."""
    own = os.environ.get("HIK_SIM_CACHE", "").strip()
    if own:
        return Path(own).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / "hik_sim"


def cache_dir() -> Path:
    """The folder converted meshes live in (created on first use).

    Raises:
        MeshError: the folder cannot be made.
    """
    path = cache_root() / "meshes"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MeshError(_cache_problem(path, exc)) from None
    return path


def _cache_problem(path: Path, exc: OSError) -> str:
    return (f"cannot write the mesh cache {path}: {exc.strerror or exc}; free space there or set HIK_SIM_CACHE to a "
            "writable folder")


def _is_binary_stl(path: Path) -> bool:
    size = path.stat().st_size
    if size < 84:
        return False
    with path.open("rb") as f:
        f.seek(80)
        (count,) = struct.unpack("<I", f.read(4))
    return count > 0 and size == 84 + 50 * count  # MuJoCo refuses an empty binary STL


def _obj_vertex_count(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.startswith((b"v ", b"v\t")))


def _convert(source: Path, target: Path) -> tuple[float, float, float, float] | None:
    try:
        import trimesh
    except ImportError:
        raise MeshError(f"converting {source.name} needs trimesh and pycollada: pip install trimesh pycollada") from None
    try:
        loaded = trimesh.load(str(source), force="mesh", process=False)
    except Exception as exc:  # trimesh raises many kinds; all mean "cannot read this mesh"
        raise MeshError(f"cannot read mesh {source}: {exc}") from None
    if not isinstance(loaded, trimesh.Trimesh) or len(loaded.faces) == 0:
        raise MeshError(f"mesh {source} holds no triangles")
    if len(loaded.vertices) < _MIN_VERTICES:
        raise MeshError(f"mesh {source} holds {len(loaded.vertices)} vertices; MuJoCo needs at least {_MIN_VERTICES}")
    rgba: tuple[float, float, float, float] | None = None
    try:
        # only textured meshes give a colour (their texture's mean); the others keep the URDF's colour
        if isinstance(loaded.visual, trimesh.visual.TextureVisuals):
            colors = loaded.visual.to_color().vertex_colors
            if len(colors):
                r, g, b, a = (round(float(c), 3) for c in colors.reshape(-1, 4).mean(axis=0) / 255.0)
                rgba = (r, g, b, a)
    except Exception:  # a mesh without usable colour information keeps the URDF's colour
        rgba = None
    write_atomically(target, lambda path: loaded.export(str(path), file_type="stl"))
    return rgba


def mujoco_mesh(source: Path) -> MujocoMesh:
    """A MuJoCo-readable, uniquely named version of ``source`` (converted once, then cached).

    Args:
        source: an existing mesh file (STL, OBJ, MSH, DAE, or anything trimesh reads).

    Returns:
        The cached file and the colour the source gives, if any.

    Raises:
        MeshError: the file cannot be read or converted, or holds fewer than the 4 vertices
            MuJoCo needs, or the cache cannot be written.
    """
    source = source.resolve()
    try:
        stat = source.stat()
    except OSError as exc:
        raise MeshError(f"cannot read mesh {source}: {exc.strerror or exc}") from None
    folder = cache_dir()
    try:
        return _cached(source, stat, folder)
    except OSError as exc:
        raise MeshError(_cache_problem(folder, exc)) from None


def _cached(source: Path, stat: os.stat_result, folder: Path) -> MujocoMesh:
    key = hashlib.sha1(f"{source}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    suffix = source.suffix.lower()
    if suffix in _NATIVE and (suffix != ".stl" or _is_binary_stl(source)):
        target = folder / f"{source.stem[:_STEM_CHARS]}-{key}{suffix}"
        if not target.exists():
            if suffix == ".obj" and (count := _obj_vertex_count(source)) < _MIN_VERTICES:
                raise MeshError(
                    f"mesh {source} holds {count} vertices; MuJoCo needs at least {_MIN_VERTICES} (is it an OBJ file?)"
                )
            try:
                target.symlink_to(source)
            except FileExistsError:  # another process linked it first: the same file, by its key
                pass
            except OSError:  # no symlinks here: copy instead
                write_atomically(target, lambda path: path.write_bytes(source.read_bytes()))
        return MujocoMesh(target, None)
    target = folder / f"{source.stem[:_STEM_CHARS]}-{key}.stl"
    meta = target.with_suffix(".json")
    if target.exists() and meta.exists():
        rgba = json.loads(meta.read_text())["rgba"]
        return MujocoMesh(target, tuple(rgba) if rgba else None)
    rgba = _convert(source, target)
    write_atomically(meta, lambda path: path.write_text(json.dumps({"source": str(source), "rgba": rgba})))
    return MujocoMesh(target, rgba)

"""The safetensors file of a checkpoint: weights as named tensors, the card and the training state in its metadata.

A safetensors file holds named tensors and string metadata only, so reading one runs no code. The
weights keep their module names; the card is JSON; the nested training state (optimiser, scheduler,
loss, generators) is stored by :func:`flatten` as a JSON tree in which each tensor is replaced by
``{"__tensor__": name}``, the tensors stored beside the weights under :data:`RESUME_PREFIX`.
Dicts whose keys are not all strings (an optimiser's ``state`` is keyed by parameter index), tuples
(Adam's ``betas``) and non-finite floats keep their types, so ``unflatten(*flatten(x))`` equals ``x``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import torch

from hik_sim.atomic import write_atomically
from hik_sim.errors import CheckpointError

__all__ = ["RESUME_PREFIX", "write", "read", "is_pickled", "to_device", "flatten", "unflatten"]

RESUME_PREFIX = "resume/"
"""Names of the training state's tensors (the weights keep their module names)."""

def write(path: Path, fmt: str, weights: dict[str, torch.Tensor], card: dict[str, Any], resume_state: dict[str, Any] | None) -> None:
    """Write safetensors file ``path`` (atomically): ``weights`` under their names; ``fmt``, the card and the resume state
    (JSON, its tensors stored beside the weights under :data:`RESUME_PREFIX`) in the metadata.

    Raises:
        CheckpointError: a weight's name starts with :data:`RESUME_PREFIX`, or the resume state holds something that is
            neither a tensor nor JSON data.
    """
    from safetensors.torch import save_file

    tensors = {name: value.detach().cpu().contiguous().clone() for name, value in weights.items()}  # clone: no shared memory
    clashing = [name for name in tensors if name.startswith(RESUME_PREFIX)]
    if clashing:
        raise CheckpointError(f"cannot save {path}: weight names {clashing[:3]} start with {RESUME_PREFIX!r}, which names the resume state")
    metadata = {"format": fmt, "card": json.dumps(card)}
    if resume_state is not None:
        tree, resume_tensors = flatten(resume_state, RESUME_PREFIX)
        metadata["resume"] = json.dumps(tree)
        tensors.update(resume_tensors)
    write_atomically(path, lambda tmp: save_file(tensors, str(tmp), metadata=metadata))


def is_pickled(path: str | os.PathLike[str]) -> bool:
    """Whether the file at ``path`` is not safetensors (a ``torch.save`` pickle, or anything else) by its first bytes.

    A safetensors file starts with its JSON header's length (8 bytes, little-endian) and the header's ``{``.
    """
    with open(path, "rb") as handle:
        head = handle.read(9)
    return not (len(head) == 9 and head[8:9] == b"{" and 0 < int.from_bytes(head[:8], "little") < os.path.getsize(path))


def read(path: Path) -> dict[str, Any]:
    """The payload of safetensors file ``path``: ``format``, ``card`` (a dict), ``state_dict`` and, where saved, ``resume``.

    Raises:
        Exception: whatever safetensors or json raise for a file that is not whole (the caller says "not readable").
    """
    from safetensors.torch import load

    data = path.read_bytes()
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + length])
    metadata = header.get("__metadata__") or {}
    tensors = load(data)  # parses the header again and copies the tensors out; no pickle
    payload: dict[str, Any] = {"format": metadata.get("format"), "card": json.loads(metadata.get("card", "null")),
                               "state_dict": {k: v for k, v in tensors.items() if not k.startswith(RESUME_PREFIX)}}
    if "resume" in metadata:
        payload["resume"] = unflatten(json.loads(metadata["resume"]), {k: v for k, v in tensors.items() if k.startswith(RESUME_PREFIX)})
    return payload


def to_device(tree: Any, map_location: str | torch.device) -> Any:
    """``tree`` with its tensors moved to ``map_location``."""
    if isinstance(tree, torch.Tensor):
        return tree.to(map_location)
    if isinstance(tree, dict):
        return {k: to_device(v, map_location) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_device(v, map_location) for v in tree)
    return tree


_TENSOR, _TUPLE, _ITEMS, _FLOAT = "__tensor__", "__tuple__", "__items__", "__float__"


def flatten(tree: Any, prefix: str) -> tuple[Any, dict[str, torch.Tensor]]:
    """A JSON-ready copy of ``tree`` and its tensors, named ``prefix`` + a running number.

    Raises:
        CheckpointError: ``tree`` holds something that is neither a tensor nor JSON data (the message names where).
    """
    tensors: dict[str, torch.Tensor] = {}

    def encode(node: Any, where: str) -> Any:
        if isinstance(node, torch.Tensor):
            name = f"{prefix}{len(tensors)}"
            tensors[name] = node.detach().cpu().contiguous().clone()  # clone: safetensors refuses tensors that share memory
            return {_TENSOR: name}
        if node is None or isinstance(node, (bool, int, str)):
            return node
        if isinstance(node, float):
            return node if math.isfinite(node) else {_FLOAT: repr(node)}  # JSON has no inf or nan
        if isinstance(node, tuple):
            return {_TUPLE: [encode(v, f"{where}[{i}]") for i, v in enumerate(node)]}
        if isinstance(node, list):
            return [encode(v, f"{where}[{i}]") for i, v in enumerate(node)]
        if isinstance(node, dict):
            if all(isinstance(k, str) and not k.startswith("__") for k in node):
                return {k: encode(v, f"{where}[{k!r}]") for k, v in node.items()}
            return {_ITEMS: [[encode(k, f"{where} key"), encode(v, f"{where}[{k!r}]")] for k, v in node.items()]}
        raise CheckpointError(f"cannot store {where} in a checkpoint: a {type(node).__name__} is neither a tensor nor JSON data")

    return encode(tree, "the resume state"), tensors


def unflatten(tree: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """The tree that :func:`flatten` made ``tree`` and ``tensors`` from.

    Raises:
        CheckpointError: ``tree`` names a tensor that ``tensors`` lacks.
    """

    def decode(node: Any) -> Any:
        if isinstance(node, list):
            return [decode(v) for v in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, value),) = node.items()
            if key == _TENSOR:
                if value not in tensors:
                    raise CheckpointError(f"the resume state names tensor {value!r}, which the file does not hold")
                return tensors[value]
            if key == _FLOAT:
                return float(value)
            if key == _TUPLE:
                return tuple(decode(v) for v in value)
            if key == _ITEMS:
                return {decode(k): decode(v) for k, v in value}
        return {k: decode(v) for k, v in node.items()}

    return decode(tree)


"""Nested training state (optimiser, scheduler, loss, generators) as flat tensors plus JSON, for safetensors.

A safetensors file holds named tensors and string metadata only. :func:`flatten` turns a tree of
dicts, lists, tuples, numbers, strings, None and tensors into a JSON-ready tree, in which each tensor
is replaced by ``{"__tensor__": name}``, and the named tensors; :func:`unflatten` rebuilds the tree.
Dicts whose keys are not all strings (an optimiser's ``state`` is keyed by parameter index) and
tuples (Adam's ``betas``) keep their types, so ``unflatten(*flatten(x))`` equals ``x``.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from hik_sim.errors import CheckpointError

__all__ = ["flatten", "unflatten"]

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


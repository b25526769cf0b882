"""hik_sim.kinematics.rotations against pytorch-kinematics' transforms: import cost and the hot paths' timings.

What is measured, on one thread:

1. ``import``: seconds to import ``hik_sim.kinematics.chain`` in a fresh interpreter, and what importing
   ``pytorch_kinematics.transforms`` adds after it (best of ``--imports`` runs each).
2. ``matrix_to_quaternion``: hik_sim's against pytorch-kinematics' followed by ``standardize_quaternion``, forward,
   and forward + backward (the training loss's path through Chain FK), float32 at batch 4,096 and float64 at batch 1.
3. ``quaternion_multiply`` (hik_sim's, written out) against ``quaternion_raw_multiply``; ``quaternion_to_matrix``
   (the hand-written formula hik_sim had, here as ``written``, against pytorch-kinematics', which hik_sim now calls).
4. ``Chain.fk`` (float32, batch 4,096, forward + backward) with each ``matrix_to_quaternion``.

Median of ``--repeats`` timed calls after 20 untimed ones (the first call's work excluded). Output: a Markdown table
and ``<out>/rotations_bench.json`` + ``.md``.

Usage::

    python benchmarks/rotations_bench.py --out benchmarks/results/rotations
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

try:  # run as a script from a checkout without installing the package
    import hik_sim  # noqa: F401
except ModuleNotFoundError:  # pragma: no cover - depends on how the script is started
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytorch_kinematics.transforms as pk

from hik_sim.kinematics import rotations
from hik_sim.kinematics.chain import Chain
from hik_sim.robots import get_robot


def written_quaternion_to_matrix(q: torch.Tensor) -> torch.Tensor:
    """The unit-quaternion formula hik_sim's rotations module carried before it called pytorch-kinematics'."""
    w, x, y, z = q.unbind(-1)
    return torch.stack((1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)), dim=-1).reshape(q.shape[:-1] + (3, 3))


def pk_matrix_to_quaternion(m: torch.Tensor) -> torch.Tensor:
    return pk.standardize_quaternion(pk.matrix_to_quaternion(m))


def median_s(fn: Callable[[], object], repeats: int) -> float:
    for _ in range(20):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))


def import_s(code: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        best = min(best, float(out.stdout.strip()))
    return best


def backward(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> Callable[[], object]:
    def run() -> object:
        leaf = x.detach().requires_grad_(True)
        fn(leaf).sum().backward()
        return leaf.grad

    return run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rotations_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--imports", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/rotations"))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)
    quat32 = rotations.canonical_quaternion(torch.nn.functional.normalize(torch.randn(4096, 4, generator=generator), dim=-1))
    matrix32 = rotations.quaternion_to_matrix(quat32)
    matrix64 = matrix32[:1].double()
    other = quat32.roll(1, 0)
    chain = Chain(get_robot("irb120"))
    q = chain.sample(4096, generator)
    rows: list[dict[str, object]] = []

    def pair(name: str, ours: Callable[[], object], theirs: Callable[[], object], labels: tuple[str, str] = ("hik_sim", "pytorch-kinematics")) -> None:
        a, b = median_s(ours, args.repeats), median_s(theirs, args.repeats)
        rows.append({"case": name, labels[0]: a, labels[1]: b, "ratio": b / a, "labels": list(labels)})

    chain_code = "import time; t = time.perf_counter(); import hik_sim.kinematics.chain; print(time.perf_counter() - t)"
    pk_code = ("import time; import hik_sim.kinematics.chain; t = time.perf_counter(); import pytorch_kinematics.transforms; "
               "print(time.perf_counter() - t)")
    imports = {"hik_sim.kinematics.chain_s": import_s(chain_code, args.imports), "pytorch_kinematics.transforms_after_s": import_s(pk_code, args.imports)}
    pair("matrix_to_quaternion f32 B=4096", lambda: rotations.matrix_to_quaternion(matrix32), lambda: pk_matrix_to_quaternion(matrix32))
    pair("matrix_to_quaternion f32 B=4096 fwd+bwd", backward(rotations.matrix_to_quaternion, matrix32), backward(pk_matrix_to_quaternion, matrix32))
    pair("matrix_to_quaternion f64 B=1", lambda: rotations.matrix_to_quaternion(matrix64), lambda: pk_matrix_to_quaternion(matrix64))
    pair("quaternion_multiply f32 B=4096", lambda: rotations.quaternion_multiply(quat32, other), lambda: pk.quaternion_raw_multiply(quat32, other))
    pair("quaternion_to_matrix f32 B=4096", lambda: written_quaternion_to_matrix(quat32), lambda: pk.quaternion_to_matrix(quat32), ("written", "pytorch-kinematics"))
    original = rotations.matrix_to_quaternion

    def fk_with(convert: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[], object]:
        def run() -> object:
            import hik_sim.kinematics.chain as chain_module

            chain_module.matrix_to_quaternion = convert  # type: ignore[assignment]
            try:
                return backward(lambda x: chain.fk(x).quat, q)()
            finally:
                chain_module.matrix_to_quaternion = original

        return run

    pair("Chain.fk IRB120 f32 B=4096 fwd+bwd", fk_with(original), fk_with(pk_matrix_to_quaternion))
    record = {"benchmark": "rotations", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "torch": torch.__version__,
              "threads": 1, "repeats": args.repeats, "import": imports, "rows": rows}
    lines = [f"import hik_sim.kinematics.chain: {imports['hik_sim.kinematics.chain_s']:.2f} s; importing pytorch_kinematics.transforms "
             f"after it adds {imports['pytorch_kinematics.transforms_after_s']:.2f} s (best of {args.imports})", "",
             "| case | first | median [µs] | second | median [µs] | second / first |", "|---|---|---:|---|---:|---:|"]
    for row in rows:
        first, second = row["labels"]  # type: ignore[misc]
        lines.append(f"| {row['case']} | {first} | {row[first] * 1e6:.1f} | {second} | {row[second] * 1e6:.1f} | {row['ratio']:.2f} |")  # type: ignore[index]
    table = "\n".join(lines)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "rotations_bench.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    (args.out / "rotations_bench.md").write_text(f"`python benchmarks/rotations_bench.py --out {args.out}`, {record['date']}, one thread, "
                                                 f"median of {args.repeats} calls after 20 untimed\n\n{table}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

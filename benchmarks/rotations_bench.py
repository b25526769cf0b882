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

import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
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
    return harness.Timing.from_samples(samples).median_s


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


def measure(repeats: int, import_runs: int) -> tuple[dict[str, float], list[dict[str, object]]]:
    """The import times [s] and the timed cases' rows (median seconds a call, each side)."""
    generator = torch.Generator().manual_seed(0)
    quat32 = rotations.canonical_quaternion(torch.nn.functional.normalize(torch.randn(4096, 4, generator=generator), dim=-1))
    matrix32 = rotations.quaternion_to_matrix(quat32)
    matrix64 = matrix32[:1].double()
    other = quat32.roll(1, 0)
    chain = Chain(get_robot("irb120"))
    q = chain.sample(4096, generator)
    rows: list[dict[str, object]] = []

    def pair(name: str, ours: Callable[[], object], theirs: Callable[[], object], labels: tuple[str, str] = ("hik_sim", "pytorch-kinematics")) -> None:
        a, b = median_s(ours, repeats), median_s(theirs, repeats)
        rows.append({"case": name, labels[0]: a, labels[1]: b, "ratio": b / a, "labels": list(labels)})

    chain_code = "import time; t = time.perf_counter(); import hik_sim.kinematics.chain; print(time.perf_counter() - t)"
    pk_code = ("import time; import hik_sim.kinematics.chain; t = time.perf_counter(); import pytorch_kinematics.transforms; "
               "print(time.perf_counter() - t)")
    imports = {"hik_sim.kinematics.chain_s": import_s(chain_code, import_runs),
               "pytorch_kinematics.transforms_after_s": import_s(pk_code, import_runs)}
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
    return imports, rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0], out=f"{harness.RESULTS}/rotations")
    parser.add_argument("--repeats", type=harness.at_least(1), default=300, help="timed calls per case (default 300)")
    parser.add_argument("--imports", type=harness.at_least(1), default=3, help="fresh interpreters per import time, the best kept (default 3)")
    args = parser.parse_args(argv)
    with harness.torch_threads(1):
        info = harness.provenance(__file__, argv)
        imports, rows = measure(args.repeats, args.imports)
    record = {"benchmark": "rotations", "repeats": args.repeats, "import": imports, "rows": rows}
    header = ["case", "first", "median [µs]", "second", "median [µs]", "second / first"]
    cells = [[row["case"], row["labels"][0], f"{row[row['labels'][0]] * 1e6:.1f}", row["labels"][1], f"{row[row['labels'][1]] * 1e6:.1f}",
              f"{row['ratio']:.2f}"] for row in rows]
    table = (f"import hik_sim.kinematics.chain: {imports['hik_sim.kinematics.chain_s']:.2f} s; importing pytorch_kinematics.transforms "
             f"after it adds {imports['pytorch_kinematics.transforms_after_s']:.2f} s (best of {args.imports})\n\n"
             + harness.markdown_table(header, cells, "llrlrr"))
    print(table)
    harness.write_record(args.out, "rotations_bench", record, f"One thread, median of {args.repeats} calls after 20 untimed.\n\n{table}", info)
    return 0


if __name__ == "__main__":
    sys.exit(main())

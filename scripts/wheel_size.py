"""Build the wheel and sdist of the committed tree (``git archive HEAD``) in a temporary folder, check them with twine,
and record their sizes and what the wheel's bytes are (per network name, compressed); nothing is left in the repository.

    python scripts/wheel_size.py --out benchmarks/results/wheel_size

Needs ``pip install build twine`` (the build runs without isolation, on the installed setuptools).
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="folder for wheel_size.json and wheel_size.md")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as scratch:
        source, dist = Path(scratch) / "src", Path(scratch) / "dist"
        source.mkdir()
        archive = subprocess.run(["git", "archive", "HEAD"], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
        subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)], check=True,
                       stdout=subprocess.DEVNULL)
        wheel, sdist = next(dist.glob("*.whl")), next(dist.glob("*.tar.gz"))
        twine = subprocess.run([sys.executable, "-m", "twine", "check", str(wheel), str(sdist)], capture_output=True, text=True)
        groups: collections.Counter[str] = collections.Counter()
        networks = []
        with zipfile.ZipFile(wheel) as archive_file:
            for info in archive_file.infolist():
                name = info.filename
                if "/pretrained/" in name and name.endswith((".safetensors", ".json")) and not name.endswith("index.json"):
                    groups[Path(name).stem] += info.compress_size
                    if name.endswith(".safetensors"):
                        networks.append(f"{Path(name).parent.name}/{Path(name).stem}")
                else:
                    groups["code, URDFs, metadata"] += info.compress_size
        with tarfile.open(sdist) as tar:
            sdist_pretrained = sum(1 for m in tar.getmembers() if m.name.endswith(".safetensors"))
        record = {"command": "python scripts/wheel_size.py" + (f" --out {args.out}" if args.out else ""), "commit": commit,
                  "wheel": wheel.name, "wheel_bytes": wheel.stat().st_size, "sdist_bytes": sdist.stat().st_size,
                  "sdist_networks": sdist_pretrained, "twine_check_passed": twine.returncode == 0,
                  "twine_output": twine.stdout.strip().splitlines(), "networks": sorted(networks),
                  "compressed_bytes_by_name": dict(groups.most_common())}
    print(f"{record['wheel']}: {record['wheel_bytes'] / 1e6:.1f} MB ({len(networks)} networks), sdist "
          f"{record['sdist_bytes'] / 1e6:.1f} MB, twine check {'passed' if record['twine_check_passed'] else 'FAILED'}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "wheel_size.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        lines = [f"# Wheel size\n\n`{record['command']}` on commit {commit[:12]}: `{record['wheel']}` is "
                 f"{record['wheel_bytes']:,} bytes ({record['wheel_bytes'] / 1e6:.1f} MB), the sdist {record['sdist_bytes']:,} bytes; "
                 f"twine check {'passed' if record['twine_check_passed'] else 'failed'}. {len(networks)} networks.\n",
                 "| what (all robots) | compressed bytes in the wheel |", "|---|---:|"]
        lines += [f"| {name} | {size:,} |" for name, size in groups.most_common()]
        (args.out / "wheel_size.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0 if record["twine_check_passed"] else 1


if __name__ == "__main__":
    sys.exit(main())

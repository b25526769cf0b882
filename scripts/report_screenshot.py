"""Render a run folder's ``report.html`` in a headless Chromium and check the picture is not blank.

    python scripts/report_screenshot.py runs/eval/irb120-20261130-120000          # -> docs/images/report.png
    python scripts/report_screenshot.py RUN --out shot.png --size 1400x2400

The page is opened as a ``file://`` URL, as a user opening it from a file manager would (no
server): if the screenshot shows the tables, the embedded plots and the video posters, the page
is self-contained. A picture whose pixels are nearly all one colour is a failure (exit 1).

Where no Chromium is installed (``apt-get install chromium`` on Debian), the script says so and
exits 0: the check is a separate step from the test suite, and the README keeps its last screenshot.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    """The first Chromium-family browser on PATH, or None."""
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


def blank_fraction(picture: np.ndarray) -> float:
    """Fraction of pixels equal (within 8 levels per channel) to the most common colour."""
    rgb = picture[..., :3].reshape(-1, 3).astype(np.int16)
    quantised = rgb // 8
    keys = quantised[:, 0] * 1024 + quantised[:, 1] * 32 + quantised[:, 2]
    counts = np.bincount(keys)
    return float(counts.max() / len(keys))


def screenshot(browser: str, page: Path, out: Path, width: int, height: int, timeout: float = 120.0) -> None:
    """Run ``browser --headless --screenshot`` on a page.

    Raises:
        RuntimeError: the browser failed or wrote no picture.
    """
    with tempfile.TemporaryDirectory() as profile:  # a fresh profile: no first-run state, nothing kept
        command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
                   f"--user-data-dir={profile}", f"--window-size={width},{height}", "--virtual-time-budget=8000",
                   "--allow-file-access-from-files", f"--screenshot={out.resolve()}", page.resolve().as_uri()]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0 or not out.is_file():
        raise RuntimeError(f"{Path(browser).name} exited {done.returncode} without a screenshot:\n{done.stderr[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="an evaluation run folder (holding report.html), or the page itself")
    parser.add_argument("--out", type=Path, default=Path("docs/images/report.png"), help="the screenshot (default docs/images/report.png)")
    parser.add_argument("--size", default="1400x2200", help="browser window WIDTHxHEIGHT [px] (default 1400x2200)")
    parser.add_argument("--max-blank", type=float, default=0.97,
                        help="fail when more than this fraction of pixels is one colour (default 0.97)")
    args = parser.parse_args(argv)
    page = args.run if args.run.suffix == ".html" else args.run / "report.html"
    if not page.is_file():
        parser.exit(2, f"error: no report.html at {page}; run python -m hik_sim.evaluate first\n")
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        parser.exit(2, f"error: --size takes WIDTHxHEIGHT such as 1400x2200, got {args.size!r}\n")
    browser = find_browser()
    if browser is None:
        print(f"no Chromium found (looked for {', '.join(BROWSERS)}); install it with `apt-get install chromium` to check "
              f"{page} in a browser. Skipped.")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        screenshot(browser, page, args.out, width, height)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    import imageio.v3 as iio

    picture = iio.imread(args.out)
    blank = blank_fraction(picture)
    print(f"{args.out}: {picture.shape[1]}x{picture.shape[0]} px, {100 * blank:.1f} % of pixels in the most common colour "
          f"(browser {browser})")
    if blank > args.max_blank:
        print(f"error: the screenshot is blank ({100 * blank:.1f} % one colour > {100 * args.max_blank:.0f} %)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

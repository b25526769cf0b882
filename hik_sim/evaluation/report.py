"""``report.html``: a run folder's tables, plots and videos on one page that opens without a server.

The page is one file beside the run's other files: plots are embedded (base64 PNG), videos are
``<video controls>`` elements whose ``src`` is the video's file name in the same folder, and the
raw files (``report.json``, ``metrics.csv``, …) are linked by relative names; so the folder can be
copied or zipped and the page opened with a double click. Tables come from the run's Markdown
(the subset the evaluator writes: headings, pipe tables, paragraphs, ``*emphasis*``, ``**strong**``,
`` `code` ``), converted here without a Markdown library.

Example::

    from hik_sim.evaluation.report import write_report_html
    write_report_html(folder, summary_markdown(report), plots=["ik_errors.png"], videos=["lm_reach.mp4"])
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass
from pathlib import Path

from hik_sim.errors import OutputError

__all__ = ["VideoEntry", "markdown_to_html", "write_report_html"]

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1400px; padding: 0 1rem;
       color: #1d1f23; background: #fafafa; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .6rem 0; font-size: .9rem; background: #fff; }
th, td { border: 1px solid #d4d4d8; padding: .3rem .6rem; } th { background: #eef0f4; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: .8rem 0; } figcaption { font-size: .85rem; color: #555; margin-top: .2rem; }
img, video { max-width: 100%; border: 1px solid #ddd; background: #000; }
img.plot { background: #fff; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 1rem; }
nav a { margin-right: 1rem; } footer { margin-top: 2rem; font-size: .8rem; color: #666; }
"""


@dataclass(frozen=True)
class VideoEntry:
    """A video on the page.

    Attributes:
        file: the video's file name in the run folder.
        caption: text under it.
        poster: an image file in the run folder shown before playing (``None``: none).
    """

    file: str
    caption: str
    poster: str | None = None


def _inline(text: str) -> str:
    """Escape a line of Markdown text and turn `code`, **strong** and *emphasis* into HTML."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"(?<![\w*])\*([^*]+)\*(?![\w*])", r"<em>\1</em>", out)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table(lines: list[str]) -> str:
    header, rule, rows = _cells(lines[0]), _cells(lines[1]), [_cells(line) for line in lines[2:]]
    right = [cell.endswith(":") for cell in rule] + [False] * len(header)
    head = "".join(f"<th>{_inline(cell)}</th>" for cell in header)
    numeric = ' class="num"'
    body = "".join("<tr>" + "".join(f"<td{numeric if right[i] else ''}>{_inline(cell)}</td>" for i, cell in enumerate(row))
                   + "</tr>\n" for row in rows)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}</tbody>\n</table>"


def markdown_to_html(text: str) -> str:
    """The Markdown subset the evaluator writes, as HTML: ``#``/``##``/``###`` headings, pipe
    tables (a ``---:`` column is right-aligned), paragraphs and inline code/strong/emphasis.
    Anything else is kept as escaped text."""
    blocks: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        heading = re.match(r"^(#{1,3})\s+(.*)$", line)
        if heading:
            level = len(heading.group(1))
            blocks.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            i += 1
            continue
        if line.lstrip().startswith("|") and i + 1 < len(lines) and re.match(r"^\s*\|?[\s:|-]+\|?\s*$", lines[i + 1]):
            end = i + 2
            while end < len(lines) and lines[end].lstrip().startswith("|"):
                end += 1
            blocks.append(_table(lines[i:end]))
            i = end
            continue
        end = i
        while end < len(lines) and lines[end].strip() and not lines[end].lstrip().startswith(("#", "|")):
            end += 1
        end = max(end, i + 1)
        blocks.append("<p>" + " ".join(_inline(part.strip()) for part in lines[i:end]) + "</p>")
        i = end
    return "\n".join(blocks)


def _embedded(path: Path) -> str:
    mime = {".png": "image/png", ".gif": "image/gif", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".svg": "image/svg+xml"}
    kind = mime.get(path.suffix.lower(), "application/octet-stream")
    return f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _video(entry: VideoEntry, folder: Path) -> str:
    poster = f' poster="{html.escape(entry.poster)}"' if entry.poster and (folder / entry.poster).is_file() else ""
    return (f'<figure><video controls loop muted playsinline preload="metadata"{poster} src="{html.escape(entry.file)}">'
            f'<a href="{html.escape(entry.file)}">{html.escape(entry.file)}</a></video>'
            f'<figcaption>{html.escape(entry.caption)} (<a href="{html.escape(entry.file)}">{html.escape(entry.file)}</a>)'
            "</figcaption></figure>")


def write_report_html(folder: Path, markdown: str, plots: list[str] = (), videos: list[VideoEntry] = (),  # type: ignore[assignment]
                      featured: list[VideoEntry] = (), downloads: list[str] = (), name: str = "report.html") -> Path:  # type: ignore[assignment]
    """Write a run folder's page.

    Args:
        folder: the run folder; every file named below must be in it.
        markdown: the run's tables and text (its first ``#`` heading is the page title).
        plots: PNG files, embedded in the page.
        videos: videos shown in a grid.
        featured: videos shown full width above the plots (the side-by-side comparisons).
        downloads: other files of the run, linked.
        name: the page's file name.

    Returns:
        The page's path.

    Raises:
        OutputError: a named file is not in the folder (a page must not link what is not there).
    """
    folder = Path(folder)
    named = list(plots) + [v.file for v in [*featured, *videos]] + list(downloads)
    missing = [f for f in named if not (folder / f).is_file()]
    if missing:
        raise OutputError(f"report.html would name files that are not in {folder}: {', '.join(missing)}")
    title = next((m.group(1) for m in re.finditer(r"^#\s+(.*)$", markdown, re.MULTILINE)), "hik_sim run")
    sections = ['<nav><a href="#tables">Tables</a>'
                + ('<a href="#side-by-side">Side by side</a>' if featured else "")
                + ('<a href="#plots">Plots</a>' if plots else "") + ('<a href="#videos">Videos</a>' if videos else "")
                + ('<a href="#files">Files</a>' if downloads else "") + "</nav>",
                f'<section id="tables">\n{markdown_to_html(markdown)}\n</section>']
    if featured:
        sections.append('<section id="side-by-side"><h2>All policies on the same episode</h2>\n'
                        + "\n".join(_video(v, folder) for v in featured) + "</section>")
    if plots:
        sections.append('<section id="plots"><h2>Plots</h2>\n' + "\n".join(
            f'<figure><img class="plot" alt="{html.escape(p)}" src="{_embedded(folder / p)}"><figcaption>{html.escape(p)}</figcaption></figure>'
            for p in plots) + "</section>")
    if videos:
        sections.append('<section id="videos"><h2>Rollout videos</h2>\n<div class="grid">\n'
                        + "\n".join(_video(v, folder) for v in videos) + "\n</div></section>")
    if downloads:
        sections.append('<section id="files"><h2>Files</h2>\n<ul>\n'
                        + "\n".join(f'<li><a href="{html.escape(f)}">{html.escape(f)}</a></li>' for f in downloads) + "\n</ul></section>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(sections)
            + "\n<footer>Written by hik_sim. Videos play from the files beside this page; keep them together.</footer>\n</body>\n</html>\n")
    path = folder / name
    path.write_text(page, encoding="utf-8")
    return path

"""The run report as a standalone HTML page: the Markdown the report is written in (headings,
lists, tables, fenced code, `code` and **bold**) turned into HTML, with no dependency and
nothing loaded from elsewhere, so the page opens anywhere the run directory is copied."""

from __future__ import annotations

import html
import re

_STYLE = """body{font:15px/1.45 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left}
th{background:#f6f8fa}pre{background:#f6f8fa;padding:.75rem;overflow:auto;font-size:13px}
code{font-family:ui-monospace,monospace}svg{margin:.5rem 0}"""


def page(markdown: str, title: str, figure: str = "") -> str:
    """A complete HTML document for `markdown`; `figure` (SVG markup) goes after its first section."""
    body = _blocks(markdown.splitlines())
    if figure:
        cut = body.find("<h2>")
        body = body + figure if cut < 0 else body[:cut] + figure + body[cut:]
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body>\n{body}</body></html>\n")


def _blocks(lines: list[str]) -> str:
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
            out.append("<pre><code>" + html.escape("\n".join(lines[i + 1:end])) + "</code></pre>")
            i = end + 1
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
            i += 1
        elif line.startswith("|"):
            end = next((j for j in range(i, len(lines)) if not lines[j].startswith("|")), len(lines))
            out.append(_table(lines[i:end]))
            i = end
        elif line.lstrip().startswith("- "):
            end = next((j for j in range(i, len(lines)) if not lines[j].lstrip().startswith("- ")), len(lines))
            out.append(_list(lines[i:end]))
            i = end
        elif line.strip():
            end = next((j for j in range(i, len(lines)) if not lines[j].strip() or lines[j][0] in "#|`-"), len(lines))
            out.append("<p>" + _inline(" ".join(lines[i:end])) + "</p>")
            i = max(end, i + 1)
        else:
            i += 1
    return "\n".join(out) + "\n"


def _table(rows: list[str]) -> str:
    cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in rows]
    head, body = cells[0], [r for r in cells[1:] if not all(set(c) <= set("-: ") for c in r)]
    out = ["<table><thead><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr></thead><tbody>"]
    out += ["<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>" for row in body]
    return "\n".join(out) + "</tbody></table>"


def _list(items: list[str]) -> str:
    """Items of a list, those indented further nested under the one before them."""
    out, depth = [], -1
    for item in items:
        level = (len(item) - len(item.lstrip())) // 2
        while depth < level:
            out.append("<ul>")
            depth += 1
        while depth > level:
            out.append("</ul>")
            depth -= 1
        out.append(f"<li>{_inline(item.lstrip()[2:])}</li>")
    out += ["</ul>"] * (depth + 1)
    return "".join(out)


def _inline(text: str) -> str:
    parts = re.split(r"(`[^`]*`)", text)
    done = []
    for part in parts:
        if len(part) > 1 and part.startswith("`") and part.endswith("`"):
            done.append(f"<code>{html.escape(part[1:-1])}</code>")
        else:
            done.append(re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(part)))
    return "".join(done)

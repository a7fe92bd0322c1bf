"""A self-contained HTML report: one directory, no network (images are files next to it).

Hand-written HTML with ``html.escape`` rather than a template engine: the page is a handful of
sections and this avoids a dependency.  CSS is inline; there is no JavaScript and no CDN.
"""

from __future__ import annotations

import base64
import html
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perflab.errors import printable
from perflab.reports.terminal import verdicts_heading
from perflab.reports.warnings import Warning_
from perflab.table import Table

if TYPE_CHECKING:
    from perflab.reports.analysis import Analysis
    from perflab.reports.plots import PlotFile  # matplotlib: only where plots are drawn

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;
max-width:1600px;padding:0 1em;color:#222;background:#fff}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.85em}
div.scroll{overflow-x:auto;max-width:100%}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:right;vertical-align:top;
white-space:nowrap}table.wrap td{white-space:normal;text-align:left}
th{background:#f3f3f3}td.l,th.l{text-align:left}
.faster{color:#0a7d2c;font-weight:600}.slower{color:#b3261e;font-weight:600}
.equivalent{color:#0b6e99}.inconclusive{color:#9a6700}.larger,.smaller,.different{font-weight:600}
.regression{color:#b3261e}.improvement{color:#0a7d2c}.different{color:#8e24aa}
td.v,th.v{position:sticky;right:0;background:#fff;box-shadow:-1px 0 0 #ddd}th.v{background:#f3f3f3}
@media (max-width:800px){body{margin:1em auto;padding:0 .5em}th,td{white-space:normal}
td.v,th.v{min-width:6em}}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.85em;color:#555}
pre{background:#f7f7f7;border:1px solid #e3e3e3;padding:.8em;overflow:auto;font-size:.85em}
ul.w li{margin:.2em 0}.muted{color:#666;font-size:.9em}
.reg{color:#b3261e;font-weight:600}.imp{color:#0a7d2c}.ign{color:#888}code{font-size:.9em}
"""


def page(title: str, body: Sequence[str]) -> str:
    """The one page shell of every HTML perflab writes (a suite's report, the history
    dashboard, the fleet's per-machine page): a self-contained page with perflab's CSS, no
    script and nothing fetched from the network.  Control characters in any of it (user text:
    names, matrix values, commands, workload output) are shown as \\xNN, so the file cannot
    clear or retitle a terminal it is printed on."""
    return printable("\n".join(["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                                "<meta name='viewport' content='width=device-width,"
                                "initial-scale=1'>"
                                f"<title>{html.escape(title)}</title><style>{CSS}</style></head>"
                                "<body>", *body, "</body></html>\n"]), lines=True)


def _table(rows: Sequence[dict[str, Any]], *, wrap: bool = False) -> str:
    """Rows as an HTML table: the first column and the configuration's are text (left)."""
    left = [k for i, k in enumerate(rows[0]) if i == 0 or k == "configuration"] if rows else []
    return Table.from_dicts(rows, left=left).to_html(wrap=wrap)


@dataclass(frozen=True)
class ReportPage:
    """What a result's HTML page shows: its title, the tables (name, rows), the plots (files
    under ``out_dir`` already), the warnings, the suite file's text, and the exports written
    beside it, in the directory ``out_dir``."""
    title: str
    tables: Sequence[tuple[str, list[dict[str, str]]]]
    plots: Sequence[PlotFile]
    warnings: Sequence[Warning_]
    suite_text: str
    out_dir: Path
    exports: Sequence[Path] = ()


def render_html(a: Analysis, content: ReportPage, *, single_file: Path | None = None) -> Path:
    """Write ``out_dir/index.html`` for the analysed result (the verdicts' band and families
    from its plan).

    With ``single_file``, write that one file instead: the plots inlined as base64 PNG data
    URIs and no links to files beside it, so it opens offline and can be attached to an issue
    or sent as it is."""
    rs = a.rs
    title, tables, plots, warnings = content.title, content.tables, content.plots, content.warnings
    suite_text, out_dir, exports = content.suite_text, content.out_dir, content.exports
    out_dir.mkdir(parents=True, exist_ok=True)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(rs.created_at or time.time()))
    esc = html.escape
    parts = [
        f"<h1>{esc(title)}</h1>",
        f"<p class='muted'>perflab result {rs.id} &middot; {esc(when)} &middot; status "
        f"{esc(rs.status)} &middot; {len(rs.cells())} cells, {len(rs.configurations)} "
        f"configuration series &middot; {esc(verdicts_heading(a))}; CI levels adjusted "
        "with p</p>",
        "<nav><a href='#tables'>Tables</a> &middot; <a href='#plots'>Plots</a> &middot; "
        "<a href='#warnings'>Warnings</a> &middot; <a href='#environment'>Environment</a> "
        "&middot; <a href='#suite'>Suite</a></nav>",
    ]
    if exports and single_file is not None:
        parts.append("<p class='muted'>Written beside the full report: "
                     + ", ".join(esc(p.name) for p in exports) + "</p>")
    elif exports:
        links = " &middot; ".join(
            f"<a href='{esc(os.path.relpath(p, out_dir))}'>{esc(p.name)}</a>" for p in exports)
        parts.append(f"<p class='muted'>Exports: {links}</p>")
    parts.append("<h2 id='warnings'>Warnings</h2>")
    if warnings:
        # Grouped by kind; long groups (a noisy machine flags most series) start folded.
        groups: dict[str, list[Warning_]] = {}
        for w in warnings:
            groups.setdefault(w.kind, []).append(w)
        for kind, ws in groups.items():
            items = "".join(f"<li><b>{esc(w.kind)}</b>: {esc(w.text)}</li>" for w in ws)
            parts.append(f"<details{' open' if len(ws) <= 12 else ''}><summary>{esc(kind)} "
                         f"({len(ws)})</summary><ul class='w'>{items}</ul></details>")
    else:
        parts.append("<p>None: no noisy cells, no inconclusive verdicts, no failed runs.</p>")
    parts.append("<h2 id='tables'>Tables</h2>")
    for name, rows in tables:
        parts.append(f"<h3>{esc(name)}</h3>{_table(rows)}")
    parts.append("<h2 id='plots'>Plots</h2>")
    for p in plots:
        if single_file is not None:
            data = base64.b64encode(Path(p.png).read_bytes()).decode("ascii")
            parts.append(
                f"<figure><img src='data:image/png;base64,{data}' alt='{esc(p.title)}'>"
                f"<figcaption>{esc(p.title)} &mdash; {esc(p.caption)}</figcaption></figure>")
            continue
        png = os.path.relpath(p.png, out_dir)
        svg = os.path.relpath(p.svg, out_dir)
        parts.append(
            f"<figure><img src='{esc(png)}' alt='{esc(p.title)}'>"
            f"<figcaption>{esc(p.title)} &mdash; {esc(p.caption)} "
            f"(<a href='{esc(svg)}'>SVG</a>)</figcaption></figure>")
    if not plots:
        parts.append("<p class='muted'>(nothing to plot)</p>")
    parts.append("<h2 id='environment'>Environment</h2>")
    fp_rows = [{"key": k, "value": _clip(v)} for k, v in sorted(rs.fingerprint.to_json().items())]
    parts.append(_table(fp_rows, wrap=True))
    if rs.notes:
        parts.append("<p>Collector notes:</p><ul>" + "".join(
            f"<li>{esc(n)}</li>" for n in rs.notes) + "</ul>")
    parts.append("<h2 id='suite'>Suite</h2>")
    parts.append(f"<pre>{esc(suite_text or '(not a suite run)')}</pre>")
    path = single_file if single_file is not None else out_dir / "index.html"
    path.write_text(page(title, parts), encoding="utf-8")
    return path


def _clip(v: Any) -> str:
    s = str(v)
    return s if len(s) <= 300 else s[:297] + "..."

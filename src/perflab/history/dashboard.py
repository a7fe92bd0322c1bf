"""A static HTML dashboard: an index of every series and one page per series (like asv's site).

Plain HTML + PNG files with relative links: open index.html from disk, no server, no network.
"""

from __future__ import annotations

import html
import time
from pathlib import Path

from perflab.format import fmt_value
from perflab.history.detect import ChangePoint
from perflab.history.git import short
from perflab.history.plot import plot_series
from perflab.history.series import Series
from perflab.reports.html import page
from perflab.validate import output_dir


def _page(title: str, body: str) -> str:
    return page(title, [body])



def _cp_rows(cps: list[ChangePoint], link: bool, units: dict[object, str]) -> str:
    rows = []
    for cp in cps:
        cls = "ign" if cp.ignored else ("reg" if cp.regression else "imp")
        u = units.get(cp.key, "")
        what = f"ignored ({cp.ignored})" if cp.ignored else (
            "regression" if cp.regression else "improvement")
        series = (f"<td><a href='{cp.key.slug()}.html'>{html.escape(cp.key.label())}</a></td>"
                  if link else "")
        rows.append(
            f"<tr class='{cls}'>{series}<td><code>{short(cp.commit_before)}.."
            f"{short(cp.commit_after)}</code></td><td>{cp.change_pct:+.2f}%</td>"
            f"<td>{fmt_value(cp.mean_before, u)} &plusmn; {fmt_value(cp.std_before, u)}</td>"
            f"<td>{fmt_value(cp.mean_after, u)} &plusmn; {fmt_value(cp.std_after, u)}</td>"
            f"<td>{cp.p_value:.2g}</td><td>{html.escape(what)}</td></tr>")
    head = ("<tr>" + ("<th>series</th>" if link else "") + "<th>commits</th><th>change</th>"
            "<th>before (mean &plusmn; sd)</th><th>after</th><th>p</th><th></th></tr>")
    return f"<table>{head}{''.join(rows)}</table>" if rows else "<p>No change points.</p>"


def write_dashboard(items: list[tuple[Series, list[ChangePoint]]], out: Path,
                    store_location: str = "") -> Path:
    output_dir(out, "--out")
    units: dict[object, str] = {s.key: s.unit for s, _ in items}
    index_rows = []
    all_cps: list[ChangePoint] = []
    for s, cps in items:
        slug = s.key.slug()
        plot_series([(s, cps)], out / f"{slug}.png")
        pts = "".join(
            f"<tr><td><code>{short(p.commit)}{'*' if p.dirty else ''}</code></td>"
            f"<td>{time.strftime('%Y-%m-%d %H:%M', time.gmtime(p.created_at))}</td>"
            f"<td>{p.result_id}</td><td>{p.kind}</td><td>{p.n}</td>"
            f"<td>{fmt_value(p.median, s.unit)}</td>"
            f"<td>[{fmt_value(p.ci_low, s.unit)}, {fmt_value(p.ci_high, s.unit)}]</td></tr>"
            for p in s.points)
        notes = "".join(f"<p><i>{html.escape(n)}</i></p>" for n in s.notes)
        body = (f"<p><a href='index.html'>&larr; all series</a></p>"
                f"<h1>{html.escape(s.key.benchmark)}</h1>"
                f"<p>params: <code>{html.escape(s.key.params_text() or '-')}</code> &middot; "
                f"configuration: {html.escape(s.key.config)} &middot; "
                f"{html.escape(s.key.machine_text)}"
                f" &middot; metric: {html.escape(s.key.metric)} ({html.escape(s.unit)})</p>"
                f"<img src='{slug}.png' alt='plot'>{notes}<h2>Change points</h2>"
                f"{_cp_rows(cps, link=False, units=units)}<h2>Points (commit order)</h2>"
                "<table><tr>"
                "<th>commit</th><th>measured (UTC)</th><th>result</th><th>kind</th><th>runs</th>"
                f"<th>median</th><th>95% CI</th></tr>{pts}</table>")
        (out / f"{slug}.html").write_text(_page(s.key.label(), body))
        live = [c for c in cps if not c.ignored]
        last = s.points[-1]
        index_rows.append(
            f"<tr><td><a href='{slug}.html'>{html.escape(s.key.benchmark)}</a></td>"
            f"<td><code>{html.escape(s.key.params_text())}</code></td>"
            f"<td>{html.escape(s.key.config)}</td><td>{html.escape(s.key.machine_text)}</td>"
            f"<td>{html.escape(s.key.metric)}</td><td>{len(s.points)}</td>"
            f"<td>{fmt_value(last.median, s.unit)}</td>"
            f"<td class='{'reg' if any(c.regression for c in live) else ''}'>{len(live)}</td></tr>")
        all_cps.extend(cps)
    body = (f"<h1>perflab dashboard</h1><p>{len(items)} series from "
            f"<code>{html.escape(store_location)}</code>, generated "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.</p>"
            f"<h2>Change points</h2>{_cp_rows(all_cps, link=True, units=units)}"
            "<h2>Series</h2><table><tr>"
            "<th>benchmark</th><th>params</th><th>configuration</th><th>machine</th>"
            "<th>metric</th><th>points</th><th>latest median</th><th>change points</th></tr>"
            f"{''.join(index_rows)}</table>")
    index = out / "index.html"
    index.write_text(_page("perflab dashboard", body))
    return index

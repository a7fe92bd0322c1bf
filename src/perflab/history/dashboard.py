"""A static HTML dashboard: an index of every series and one page per series (like asv's site).

Plain HTML + PNG files with relative links: open index.html from disk, no server, no network.
"""

from __future__ import annotations

import html
import time
from pathlib import Path

from perflab.format import fmt_change_pct, fmt_sig, fmt_value
from perflab.history.detect import ChangePoint
from perflab.history.git import short
from perflab.history.plot import plot_series
from perflab.history.series import Series
from perflab.reports.html import page
from perflab.table import Cell, Column, Table
from perflab.validate import output_dir


def _page(title: str, body: str) -> str:
    return page(title, [body])



def _cp_table(cps: list[ChangePoint], link: bool, units: dict[object, str]) -> str:
    """The change points as an HTML table (a regression red, an improvement green, an
    ignored one grey), each linked to its series' page with ``link``."""
    cols = [Column("series", "left")] if link else []
    t = Table("", cols + [Column("commits", "left", role="code"), Column("change"),
                          Column("before (mean ± sd)"), Column("after"), Column("p"),
                          Column("", "left")])
    for cp in cps:
        cls = "ign" if cp.ignored else ("reg" if cp.regression else "imp")
        u = units.get(cp.key, "")
        what = f"ignored ({cp.ignored})" if cp.ignored else (
            "regression" if cp.regression else "improvement")
        series = [Cell(cp.key.label(), cls=cls, href=f"{cp.key.slug()}.html")] if link else []
        t.add_row(*series, *(Cell(text, cls=cls) for text in (
            f"{short(cp.commit_before)}..{short(cp.commit_after)}", fmt_change_pct(cp.change_pct),
            f"{fmt_value(cp.mean_before, u)} ± {fmt_value(cp.std_before, u)}",
            f"{fmt_value(cp.mean_after, u)} ± {fmt_value(cp.std_after, u)}",
            fmt_sig(cp.p_value, 2), what)))
    return t.to_html() if cps else "<p>No change points.</p>"


def _points_table(s: Series) -> str:
    """A series' points in commit order."""
    t = Table("", [Column("commit", "left", role="code"), Column("measured (UTC)"),
                   Column("result"), Column("kind", "left"), Column("runs"), Column("median"),
                   Column("95% CI")])
    for p in s.points:
        t.add_row(short(p.commit) + ("*" if p.dirty else ""),
                  time.strftime("%Y-%m-%d %H:%M", time.gmtime(p.created_at)),
                  str(p.result_id), p.label, str(p.n), fmt_value(p.median, s.unit),
                  f"[{fmt_value(p.ci_low, s.unit)}, {fmt_value(p.ci_high, s.unit)}]")
    return t.to_html()


def _series_table(items: list[tuple[Series, list[ChangePoint]]]) -> str:
    """One row per series, linked to its page; its live change points red when one regressed."""
    t = Table("", [Column("benchmark", "left"), Column("params", "left", role="code"),
                   Column("configuration", "left"), Column("machine", "left"),
                   Column("metric", "left"), Column("points"), Column("latest median"),
                   Column("change points")])
    for s, cps in items:
        live = [c for c in cps if not c.ignored]
        t.add_row(Cell(s.key.benchmark, href=f"{s.key.slug()}.html"), s.key.params_text(),
                  s.key.config, s.key.machine_text, s.key.metric, str(len(s.points)),
                  fmt_value(s.points[-1].median, s.unit),
                  Cell(str(len(live)), cls="reg" if any(c.regression for c in live) else ""))
    return t.to_html()


def write_dashboard(items: list[tuple[Series, list[ChangePoint]]], out: Path,
                    store_location: str = "") -> Path:
    output_dir(out, "--out")
    units: dict[object, str] = {s.key: s.unit for s, _ in items}
    all_cps: list[ChangePoint] = []
    for s, cps in items:
        slug = s.key.slug()
        plot_series([(s, cps)], out / f"{slug}.png")
        notes = "".join(f"<p><i>{html.escape(n)}</i></p>" for n in s.notes)
        body = (f"<p><a href='index.html'>&larr; all series</a></p>"
                f"<h1>{html.escape(s.key.benchmark)}</h1>"
                f"<p>params: <code>{html.escape(s.key.params_text() or '-')}</code> &middot; "
                f"configuration: {html.escape(s.key.config)} &middot; "
                f"{html.escape(s.key.machine_text)}"
                f" &middot; metric: {html.escape(s.key.metric)} ({html.escape(s.unit)})</p>"
                f"<img src='{slug}.png' alt='plot'>{notes}<h2>Change points</h2>"
                f"{_cp_table(cps, link=False, units=units)}<h2>Points (commit order)</h2>"
                f"{_points_table(s)}")
        (out / f"{slug}.html").write_text(_page(s.key.label(), body))
        all_cps.extend(cps)
    body = (f"<h1>perflab dashboard</h1><p>{len(items)} series from "
            f"<code>{html.escape(store_location)}</code>, generated "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.</p>"
            f"<h2>Change points</h2>{_cp_table(all_cps, link=True, units=units)}"
            f"<h2>Series</h2>{_series_table(items)}")
    index = out / "index.html"
    index.write_text(_page("perflab dashboard", body))
    return index

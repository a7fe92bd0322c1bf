"""The same study on several machines, laid side by side (dotnet/performance's ResultsComparer).

One block per benchmark (cell, candidate against baseline, metric), one row per machine: the
baseline's median, the candidate's, the change with its 95% CI and the verdict.  Each machine is
judged on its own samples with stats.compare_result (its own test and CI, its own correction
across its cells); samples of different machines are never pooled.  A configuration a machine
did not measure is a row saying "missing".

The summary line per block counts the verdicts (slower on k of n machines) and gives the
geometric mean of the machines' ratios with their spread (geometric standard deviation and the
range).  It is a description of the machines, not a test: the verdicts are the per-machine ones.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from perflab.errors import PerflabError
from perflab.fingerprint import machine_label
from perflab.format import fmt_change, fmt_pct, fmt_signed, fmt_value
from perflab.model import ResultSet
from perflab.reports.terminal import verdict_style
from perflab.stats import Comparison, compare_result
from perflab.validate import output_dir


@dataclass
class Row:
    machine: str
    result_id: int | None
    comparison: Comparison | None  # None: the machine did not measure this
    unit: str = ""


@dataclass
class Block:
    cell: str
    baseline: str
    candidate: str
    metric: str
    rows: list[Row] = field(default_factory=list)

    @property
    def title(self) -> str:
        where = "" if self.cell == "{}" else f" [{self.cell}]"
        return f"{self.candidate} vs {self.baseline}{where} ({self.metric})"

    def present(self) -> list[Comparison]:
        return [r.comparison for r in self.rows if r.comparison is not None]

    def summary(self) -> str:
        comps = self.present()
        n, total = len(comps), len(self.rows)
        if not comps:
            return f"measured on none of the {total} machines"
        order = ["slower", "faster", "larger", "smaller", "different", "equivalent",
                 "inconclusive"]
        counts = {v: sum(c.verdict == v for c in comps)
                  for v in order + sorted({c.verdict for c in comps} - set(order))}
        parts = [f"slower on {counts['slower']} of {n} machines"]
        parts += [f"{v} on {k}" for v, k in counts.items() if v != "slower" and k]
        ratios = [c.ratio for c in comps if c.ratio > 0 and math.isfinite(c.ratio)]
        if ratios:
            logs = [math.log(r) for r in ratios]
            mean = sum(logs) / len(logs)
            gm = math.exp(mean)
            text = f"geometric mean of the ratios {gm:.3f}x ({fmt_pct(gm)})"
            if len(logs) > 1:
                gsd = math.exp(math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1)))
                text += (f", spread: geometric SD {gsd:.3f}x, machines from "
                         f"{fmt_pct(min(ratios))} to {fmt_pct(max(ratios))}")
            parts.append(text)
        if total > n:
            parts.append(f"missing on {total - n}")
        return "; ".join(parts)


@dataclass
class PerMachine:
    machines: list[str]
    result_ids: dict[str, list[int]]
    blocks: list[Block]
    threshold: float
    correction: str
    notes: list[str]


def _merge_same_machine(results: list[ResultSet]) -> ResultSet:
    """Several results of one machine become one (as compare --from-db does on one machine)."""
    if len(results) == 1:
        return results[0]
    first = results[0]
    rs = ResultSet(kind="compare", fingerprint=first.fingerprint, settings=first.settings.copy(),
                   status="complete", id=first.id)
    names = [c.name for r in results for c in r.configurations]
    for src in results:
        for cfg in src.configurations:
            if names.count(cfg.name) > 1:
                cfg.name = f"#{src.id} {cfg.name}"
            rs.configurations.append(cfg)
        for m, info in src.metrics.items():
            rs.metrics.setdefault(m, info)
    rs.settings.interleaved = False
    return rs


def _machine_key(rs: ResultSet) -> tuple[str, object]:
    return (machine_label(rs.fingerprint, rs.fingerprint.get("machine_id")),
            rs.fingerprint.get("machine_id"))


def build(results: list[ResultSet], *, metric: str | None = None,
          threshold: float | None = None, correction: str | None = None,
          baseline: str | None = None, bands: dict[str, str] | None = None) -> PerMachine:
    """``threshold``/``correction``: None takes each result's stored plan (stats' defaults)."""
    if not results:
        raise PerflabError("no results to compare", "give result ids or --submission")
    groups: dict[tuple[str, object], list[ResultSet]] = {}
    for rs in results:
        groups.setdefault(_machine_key(rs), []).append(rs)
    labels = [k[0] for k in groups]
    # Two machines sharing a name (a host without --name measured twice, or renamed): keep both.
    dup = {lb for lb in labels if labels.count(lb) > 1}
    per: dict[str, ResultSet] = {}
    ids: dict[str, list[int]] = {}
    for (label, mid), rss in groups.items():
        name = f"{label} (machine {mid})" if label in dup else label
        per[name] = _merge_same_machine(rss)
        ids[name] = [int(r.id) for r in rss if r.id is not None]
    metric = metric or next(iter(per.values())).settings.primary_metric or "wall_time"
    notes = []
    primaries = {m: r.settings.primary_metric for m, r in per.items()}
    if len(set(primaries.values()) - {None}) > 1:
        notes.append("the machines chose different primary metrics ("
                     + ", ".join(f"{m}: {p}" for m, p in primaries.items())
                     + f"); every machine is shown on {metric}")
    blocks: dict[tuple[str, str, str], Block] = {}
    comps_of: dict[str, dict[tuple[str, str, str], Comparison]] = {}
    for name, rs in per.items():
        _set_baseline(rs, baseline)
        if metric not in rs.metrics:
            comps_of[name] = {}
            notes.append(f"{name} has no {metric} figures")
            continue
        comps = compare_result(rs, [metric], threshold=threshold, correction=correction,
                               bands=bands)
        comps_of[name] = {(c.cell, c.baseline, c.candidate): c for c in comps}
        for key in comps_of[name]:
            blocks.setdefault(key, Block(cell=key[0], baseline=key[1], candidate=key[2],
                                         metric=metric))
    for key, block in blocks.items():
        for name, rs in per.items():
            c = comps_of[name].get(key)
            unit = rs.metrics[metric].unit if metric in rs.metrics else ""
            block.rows.append(Row(name, ids[name][0] if ids[name] else None, c, unit))
    every = [c for d in comps_of.values() for c in d.values()]
    return PerMachine(machines=list(per), result_ids=ids, blocks=list(blocks.values()),
                      threshold=every[0].threshold if every else (threshold or 0.01),
                      correction=every[0].correction if every else (correction or "holm"),
                      notes=notes)


def _set_baseline(rs: ResultSet, baseline: str | None) -> None:
    if baseline is None:
        return
    names = {c.name for c in rs.configurations}
    if baseline not in names:
        raise PerflabError(f"--baseline {baseline!r} is not a configuration of result {rs.id}",
                           f"choose one of: {', '.join(sorted(names))}")
    for c in rs.configurations:
        c.is_baseline = c.name == baseline


HEAD = ["base", "diff", "ratio [95% CI]", "change", "verdict"]


def _cells(c: Comparison | None, unit: str) -> list[str]:
    """base, diff, ratio with its CI, % change (with the absolute one), verdict."""
    if c is None:
        return ["missing", "", "", "", ""]
    base = c.base_center if not math.isnan(c.base_center) else c.base_median
    if math.isnan(c.ratio):
        ratio = "-"
    elif math.isnan(c.ci_low):
        ratio = f"{c.ratio:.3f}x"
    else:
        ratio = f"{c.ratio:.3f}x [{c.ci_low:.3f}, {c.ci_high:.3f}]"
    return [fmt_value(base, unit), fmt_signed(c.diff, unit), ratio, fmt_change(c, unit),
            c.label]


def print_terminal(pm: PerMachine, console: Console) -> None:
    console.print(f"[bold]{len(pm.machines)} machines[/]: "
                  + ", ".join(f"{escape(m)} (result {', '.join(map(str, pm.result_ids[m]))})"
                              for m in pm.machines), highlight=False, soft_wrap=True)
    for b in pm.blocks:
        t = Table(title=escape(b.title), title_justify="left", header_style="bold")
        t.add_column("machine", no_wrap=True)
        t.add_column(f"base ({escape(b.baseline)})", justify="right")
        for h in HEAD[1:-1]:
            t.add_column(h, justify="right")
        t.add_column("verdict")
        for r in b.rows:
            cells = [escape(x) for x in _cells(r.comparison, r.unit)]
            if r.comparison is not None:
                style = verdict_style(r.comparison)
                cells[-1] = f"[{style}]{cells[-1]}[/]" if style else cells[-1]
            else:
                cells[0] = "[yellow]missing[/]"
            t.add_row(escape(r.machine), *cells)
        console.print(t)
        console.print(f"  {escape(b.summary())}", highlight=False, soft_wrap=True)
    console.print(f"[dim]each machine judged on its own samples ({pm.correction} correction "
                  f"within a machine, equivalence band ±{pm.threshold:.1%}); never pooled[/]",
                  highlight=False)
    for n in pm.notes:
        console.print(f"[yellow]note:[/] {escape(n)}", highlight=False, soft_wrap=True)


def render_html(pm: PerMachine, out: Path, title: str = "perflab: per-machine comparison") -> Path:
    """The same tables as one self-contained page (no script, no network)."""
    from perflab.reports.html import page as html_page

    parts = [f"<h1>{html.escape(title)}</h1>",
             "<p>" + html.escape(", ".join(
                 f"{m} (result {', '.join(map(str, pm.result_ids[m]))})" for m in pm.machines))
             + "</p>"]
    for b in pm.blocks:
        heads = [f"base ({b.baseline})", *HEAD[1:-1]]
        parts.append(f"<h2>{html.escape(b.title)}</h2><table><thead><tr><th class='l'>machine"
                     "</th>" + "".join(f"<th>{html.escape(h)}</th>" for h in heads)
                     + "<th class='l'>verdict</th></tr></thead><tbody>")
        for r in b.rows:
            cells = _cells(r.comparison, r.unit)
            cls = r.comparison.verdict if r.comparison is not None else "inconclusive"
            parts.append(f"<tr><td class='l'>{html.escape(r.machine)}</td>"
                         + "".join(f"<td>{html.escape(x)}</td>" for x in cells[:-1])
                         + f"<td class='l {cls}'>{html.escape(cells[-1])}</td></tr>")
        parts.append(f"</tbody></table><p class='summary'>{html.escape(b.summary())}</p>")
    parts.append(f"<p class='muted'>Each machine judged on its own samples ({pm.correction} "
                 f"correction within a machine, equivalence band ±{pm.threshold:.1%}); samples "
                 "of different machines are never pooled.</p>")
    parts += [f"<p class='muted'>note: {html.escape(n)}</p>" for n in pm.notes]
    output_dir(out, "--out")
    path = out / "machines.html"
    path.write_text(html_page(title, parts))
    return path


def machines_differ(results: list[ResultSet]) -> bool:
    """True when the results come from several machines and each machine has something to
    compare (two configurations or more); then they are shown side by side, not pooled."""
    groups: dict[tuple[str, object], int] = {}
    for r in results:
        groups[_machine_key(r)] = groups.get(_machine_key(r), 0) + len(r.configurations)
    return len(groups) > 1 and all(n >= 2 for n in groups.values())


def show(results: list[ResultSet], console: Console, *, out: Path, metric: str | None,
         threshold: float | None = None, correction: str | None = None,
         baseline: str | None = None, bands: dict[str, str] | None = None) -> PerMachine:
    """Terminal tables, then the HTML page in ``out`` (the verb's default: the store's
    reports_dir()/machines-IDS)."""
    pm = build(results, metric=metric, threshold=threshold, correction=correction,
               baseline=baseline, bands=bands)
    print_terminal(pm, console)
    page = render_html(pm, out)
    console.print(f"report: {page}", highlight=False, soft_wrap=True)
    return pm

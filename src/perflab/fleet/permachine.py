"""The same study on several machines, laid side by side (dotnet/performance's ResultsComparer).

One block per benchmark (cell, candidate against baseline), one row per machine in name order:
what the machine is (name, OS and version, architecture, CPU model, from its stored
fingerprint), then per metric (several side by side) the baseline's centre and the
candidate's, both absolute, the ratio with its 95% CI and the verdict.  Each machine is judged
on its own samples with stats.compare_result (its own test and CI, its own correction across
its cells, each metric its own family); samples of different machines are never pooled.  A
configuration a machine did not measure is a row saying "missing".  The same table in the
terminal, as HTML and as GitHub Markdown (reports.matrix.to_markdown, every cell escaped).

The summary line per block (and metric) counts the verdicts (slower, or larger, on k of n
machines) and gives the geometric mean of the machines' ratios with their spread (geometric
standard deviation and the range).  It is a description of the machines, not a test: the
verdicts are the per-machine ones.
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
from perflab.format import fmt_pct, fmt_value, md_text
from perflab.model import Fingerprint, MetricInfo, ResultSet
from perflab.reports.terminal import fit, verdict_style
from perflab.stats import Comparison, compare_result, verdict_word
from perflab.validate import output_dir


@dataclass
class Machine:
    """Who a row is: the machine's name and what its stored fingerprint says it is."""
    name: str
    os: str
    arch: str
    cpu: str

    @classmethod
    def of(cls, name: str, fp: Fingerprint) -> Machine:
        os_name = str(fp.os or "?")
        kernel = fp.kernel
        # "Debian GNU/Linux 12 (bookworm)" has its version; "Darwin" needs the kernel's.
        if kernel and not any(ch.isdigit() for ch in os_name):
            os_name = f"{os_name} {kernel}"
        return cls(name=name, os=os_name, arch=str(fp.arch or "?"),
                   cpu=str(fp.cpu_model or "?"))


IDENTITY = ["machine", "OS", "arch", "CPU"]


@dataclass
class Row:
    machine: str
    result_id: int | None
    # metric -> its comparison; a metric the machine did not measure here is absent
    comparisons: dict[str, Comparison] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    first: str = ""  # the block's first metric (the one a CI gate reads)

    @property
    def comparison(self) -> Comparison | None:
        """The first metric's comparison; None: the machine did not measure this."""
        return self.comparisons.get(self.first)


@dataclass
class Block:
    cell: str
    baseline: str
    candidate: str
    metrics: list[str]
    rows: list[Row] = field(default_factory=list)
    infos: dict[str, MetricInfo] = field(default_factory=dict)
    # machine -> (baseline's commit, candidate's) where both builds are commits
    commits: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def commit_range(self) -> str:
        """``base..candidate`` (short hashes) when the builds are commits; per machine when
        the machines measured different ones; "" when they are not commits."""
        from perflab.history.git import short

        pairs = {(a, b) for a, b in self.commits.values()}
        if not pairs:
            return ""
        if len(pairs) == 1:
            (a, b), = pairs
            text = f"{short(a)}..{short(b)}"
        else:
            text = "; ".join(f"{m} {short(a)}..{short(b)}" for m, (a, b) in self.commits.items())
        unknown = [r.machine for r in self.rows if r.comparisons and r.machine not in self.commits]
        return text + (f"; not recorded on {', '.join(unknown)}" if unknown else "")

    @property
    def metric(self) -> str:
        return self.metrics[0]

    @property
    def title(self) -> str:
        where = "" if self.cell == "{}" else f" [{self.cell}]"
        return f"{self.candidate} vs {self.baseline}{where} ({', '.join(self.metrics)})"

    def present(self, metric: str | None = None) -> list[Comparison]:
        m = metric or self.metric
        return [r.comparisons[m] for r in self.rows if m in r.comparisons]

    def summaries(self) -> list[str]:
        """The commit range (when the builds are commits), then one summary line per metric
        (named when there are several)."""
        head = [f"commits {self.baseline}..{self.candidate}: {self.commit_range}"] \
            if self.commits else []
        if len(self.metrics) == 1:
            return head + [self.summary()]
        return head + [f"{m}: {self.summary(m)}" for m in self.metrics]

    def worse_word(self, metric: str) -> str:
        """The verdict that reads "worse" for the metric: slower (times), larger (memory)."""
        info = self.infos.get(metric)
        return verdict_word(info, info is None or info.direction != "higher")

    def summary(self, metric: str | None = None) -> str:
        comps = self.present(metric)
        n, total = len(comps), len(self.rows)
        if not comps:
            return f"measured on none of the {total} machines"
        order = ["slower", "faster", "larger", "smaller", "different", "equivalent",
                 "inconclusive"]
        counts = {v: sum(c.verdict == v for c in comps)
                  for v in order + sorted({c.verdict for c in comps} - set(order))}
        worse = self.worse_word(metric or self.metric)
        parts = [f"{worse} on {counts.get(worse, 0)} of {n} machines"]
        parts += [f"{v} on {k}" for v, k in counts.items() if v != worse and k]
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
    machines: list[str]  # sorted by name: a stable row order
    result_ids: dict[str, list[int]]
    blocks: list[Block]
    threshold: float
    correction: str
    notes: list[str]
    identity: dict[str, Machine] = field(default_factory=dict)
    metrics: list[str] = field(default_factory=list)


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
    return rs.fingerprint.label(rs.fingerprint.machine_id), rs.fingerprint.machine_id


def build(results: list[ResultSet], *, metric: str | None = None,
          metrics: list[str] | None = None,
          threshold: float | None = None, correction: str | None = None,
          baseline: str | None = None, bands: dict[str, str] | None = None) -> PerMachine:
    """``metrics``: shown side by side, the first one deciding a CI gate (``metric`` is one
    metric).  ``threshold``/``correction``: None takes each result's stored plan (stats'
    defaults).  Each metric is its own family within a machine (stats.compare_result)."""
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
    for (label, mid), rss in sorted(groups.items(), key=lambda kv: (kv[0][0].casefold(),
                                                                     kv[0][0], str(kv[0][1]))):
        name = f"{label} (machine {mid})" if label in dup else label
        per[name] = _merge_same_machine(rss)
        ids[name] = [int(r.id) for r in rss if r.id is not None]
    wanted = list(dict.fromkeys(metrics or ([metric] if metric else [])))
    if not wanted:
        wanted = [next(iter(per.values())).settings.primary_metric or "wall_time"]
    notes = []
    primaries = {m: r.settings.primary_metric for m, r in per.items()}
    if len(set(primaries.values()) - {None}) > 1:
        notes.append("the machines chose different primary metrics ("
                     + ", ".join(f"{m}: {p}" for m, p in primaries.items())
                     + f"); every machine is shown on {', '.join(wanted)}")
    known = {m for rs in per.values() for m in rs.metrics}
    unknown = [m for m in wanted if m not in known]
    if unknown:
        raise PerflabError(f"no machine measured {', '.join(unknown)}",
                           f"choose --metric among: {', '.join(sorted(known))}")
    keys: list[tuple[str, str, str]] = []
    comps_of: dict[str, dict[tuple[str, str, str, str], Comparison]] = {}
    for name, rs in per.items():
        _set_baseline(rs, baseline)
        notes += [f"{name} has no {m} figures" for m in wanted if m not in rs.metrics]
        have = [m for m in wanted if m in rs.metrics]
        comps = compare_result(rs, have, threshold=threshold, correction=correction,
                               bands=bands) if have else []
        comps_of[name] = {(c.cell, c.baseline, c.candidate, c.metric): c for c in comps}
        keys += [(c.cell, c.baseline, c.candidate) for c in comps]
    infos: dict[str, MetricInfo] = {}
    for rs in per.values():
        for m in wanted:
            if m in rs.metrics:
                infos.setdefault(m, rs.metrics[m])
    blocks = [Block(cell=k[0], baseline=k[1], candidate=k[2], metrics=wanted, infos=infos)
              for k in dict.fromkeys(keys)]
    for block in blocks:
        for name, rs in per.items():
            found = {m: comps_of[name][(block.cell, block.baseline, block.candidate, m)]
                     for m in wanted
                     if (block.cell, block.baseline, block.candidate, m) in comps_of[name]}
            units = {m: rs.metrics[m].unit for m in wanted if m in rs.metrics}
            block.rows.append(Row(name, ids[name][0] if ids[name] else None, found, units,
                                  first=wanted[0]))
            by = {c.name: c for c in rs.configurations_in(block.cell)}
            a, b = by.get(block.baseline), by.get(block.candidate)
            if found and a is not None and b is not None and a.commit and b.commit:
                block.commits[name] = (a.commit, b.commit)
    every = [c for d in comps_of.values() for c in d.values()]
    return PerMachine(machines=list(per), result_ids=ids, blocks=blocks,
                      threshold=every[0].threshold if every else (threshold or 0.01),
                      correction=every[0].correction if every else (correction or "holm"),
                      notes=notes,
                      identity={n: Machine.of(n, rs.fingerprint) for n, rs in per.items()},
                      metrics=wanted)


def _set_baseline(rs: ResultSet, baseline: str | None) -> None:
    if baseline is None:
        return
    names = {c.name for c in rs.configurations}
    if baseline not in names:
        raise PerflabError(f"--baseline {baseline!r} is not a configuration of result {rs.id}",
                           f"choose one of: {', '.join(sorted(names))}")
    for c in rs.configurations:
        c.is_baseline = c.name == baseline


def headers(b: Block) -> list[str]:
    """The identity columns, then per metric: base, diff (both absolute), ratio [CI], verdict
    (named after the metric when there are several)."""
    out = list(IDENTITY)
    for m in b.metrics:
        pre = f"{m} " if len(b.metrics) > 1 else ""
        out += [f"{pre}base ({b.baseline})", f"{pre}diff ({b.candidate})",
                f"{pre}ratio [95% CI]", f"{pre}verdict"]
    return out


def _metric_cells(c: Comparison | None, unit: str) -> list[str]:
    """base and diff (the candidate) in the metric's unit, the ratio with its CI, the verdict."""
    if c is None:
        return ["missing", "", "", ""]
    base = c.base_center if not math.isnan(c.base_center) else c.base_median
    diff = base + c.diff if not math.isnan(c.diff) else c.cand_median
    if math.isnan(c.ratio):
        ratio = "-"
    elif math.isnan(c.ci_low):
        ratio = f"{c.ratio:.3f}x"
    else:
        ratio = f"{c.ratio:.3f}x [{c.ci_low:.3f}, {c.ci_high:.3f}]"
    return [fmt_value(base, unit), fmt_value(diff, unit), ratio, c.label]


def row_cells(pm: PerMachine, b: Block, r: Row) -> list[str]:
    """One row as plain text, in the order of ``headers``."""
    who = pm.identity.get(r.machine) or Machine(r.machine, "?", "?", "?")
    out = [who.name, who.os, who.arch, who.cpu]
    for m in b.metrics:
        out += _metric_cells(r.comparisons.get(m), r.units.get(m, ""))
    return out


def _machines_line(pm: PerMachine) -> str:
    return ", ".join(f"{m} (result {', '.join(map(str, pm.result_ids[m]))})"
                     if pm.result_ids.get(m) else m for m in pm.machines)


def _footer(pm: PerMachine) -> str:
    return (f"Each machine judged on its own samples ({pm.correction} correction within a "
            f"machine, each metric its own family, equivalence band ±{pm.threshold:.1%}); "
            "samples of different machines are never pooled.")


def print_terminal(pm: PerMachine, console: Console) -> None:
    console.print(f"[bold]{len(pm.machines)} machines[/]: {escape(_machines_line(pm))}",
                  highlight=False, soft_wrap=True)
    for b in pm.blocks:
        t = Table(title=escape(b.title), title_justify="left", header_style="bold")
        for i, h in enumerate(headers(b)):
            left = i < len(IDENTITY) or h.endswith("verdict")
            t.add_column(escape(h), no_wrap=i == 0, justify="left" if left else "right")
        for r in b.rows:
            cells = [escape(x) for x in row_cells(pm, b, r)]
            for k, m in enumerate(b.metrics):
                at = len(IDENTITY) + 4 * k
                c = r.comparisons.get(m)
                if c is None:
                    cells[at] = "[yellow]missing[/]"
                elif style := verdict_style(c):
                    cells[at + 3] = f"[{style}]{cells[at + 3]}[/]"
            t.add_row(*cells)
        console.print(fit(t, console))
        for line in b.summaries():
            console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)
    console.print(f"[dim]{escape(_footer(pm))}[/]", highlight=False, soft_wrap=True)
    for n in pm.notes:
        console.print(f"[yellow]note:[/] {escape(n)}", highlight=False, soft_wrap=True)


def render_markdown(pm: PerMachine) -> str:
    """GitHub Markdown to paste into an issue: one table per block, one row per machine
    (its OS, architecture and CPU beside its name), every metric side by side."""
    from perflab.reports.matrix import to_markdown

    parts = [f"**{len(pm.machines)} machines**: {md_text(_machines_line(pm))}", ""]
    for b in pm.blocks:
        heads = headers(b)
        rows = [dict(zip(heads, row_cells(pm, b, r), strict=True)) for r in b.rows]
        parts.append(to_markdown(rows, b.title, left=(*IDENTITY, *(
            h for h in heads if h.endswith("verdict")))))
        parts += [f"- {md_text(line)}" for line in b.summaries()] + [""]
    parts.append(md_text(_footer(pm)))
    parts += [f"- note: {md_text(n)}" for n in pm.notes]
    return "\n".join(parts) + "\n"


def _td(tag: str, text: str, cls: str) -> str:
    attr = f" class='{cls}'" if cls else ""
    return f"<{tag}{attr}>{html.escape(text)}</{tag}>"


def render_html(pm: PerMachine, out: Path, title: str = "perflab: per-machine comparison") -> Path:
    """The same tables as one self-contained page (no script, no network)."""
    from perflab.reports.html import page as html_page

    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>{html.escape(_machines_line(pm))}</p>"]
    for b in pm.blocks:
        heads = headers(b)
        left = {i for i, h in enumerate(heads) if i < len(IDENTITY) or h.endswith("verdict")}
        parts.append(f"<h2>{html.escape(b.title)}</h2><table><thead><tr>"
                     + "".join(_td("th", h, "l" if i in left else "")
                               for i, h in enumerate(heads))
                     + "</tr></thead><tbody>")
        for r in b.rows:
            tds = []
            for i, x in enumerate(row_cells(pm, b, r)):
                cls = "l" if i in left else ""
                if i in left and i >= len(IDENTITY):  # a verdict: coloured by its class
                    c = r.comparisons.get(b.metrics[(i - len(IDENTITY)) // 4])
                    cls += f" {c.verdict if c is not None else 'inconclusive'}"
                tds.append(_td("td", x, cls))
            parts.append("<tr>" + "".join(tds) + "</tr>")
        parts.append("</tbody></table>" + "".join(
            f"<p class='summary'>{html.escape(line)}</p>" for line in b.summaries()))
    parts.append(f"<p class='muted'>{html.escape(_footer(pm))}</p>")
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


def show(results: list[ResultSet], console: Console, *, out: Path,
         metric: str | None = None, metrics: list[str] | None = None,
         threshold: float | None = None, correction: str | None = None,
         baseline: str | None = None, bands: dict[str, str] | None = None) -> PerMachine:
    """Terminal tables, then the HTML page in ``out`` (the verb's default: the store's
    reports_dir()/machines-IDS)."""
    pm = build(results, metric=metric, metrics=metrics, threshold=threshold,
               correction=correction, baseline=baseline, bands=bands)
    print_terminal(pm, console)
    page = render_html(pm, out)
    console.print(f"report: {page}", highlight=False, soft_wrap=True)
    return pm

"""The same study on several machines, laid side by side (dotnet/performance's ResultsComparer).

One block per benchmark (cell, candidate against baseline), one row per machine in name order:
what the machine is (name, OS and version, architecture, CPU model, from its stored
fingerprint), then per metric (several side by side) the baseline's centre and the
candidate's, both absolute, the ratio with its 95% CI and the verdict.  Each machine is judged
on its own samples with stats.compare_result (its own test and CI, its own correction across
its cells, each metric its own family); samples of different machines are never pooled.  A
configuration a machine did not measure is a row saying "missing".  The same table in the
terminal, as HTML and as GitHub Markdown (one perflab.table.Table each, every cell escaped).

The summary line per block (and metric) counts the verdicts (slower, or larger, on k of n
machines) and gives the geometric mean of the machines' ratios with their spread (geometric
standard deviation and the range).  It is a description of the machines, not a test: the
verdicts are the per-machine ones.

A build x configuration grid (a suite whose configurations are named BUILD/CONFIGURATION, e.g.
main/wx-off, main/wx-on, pr/wx-off, pr/wx-on) is one table per cell instead of one per
candidate: a row per machine, per metric the baseline's value, then per other (build,
configuration) its value, its ratio [CI] against the baseline and the verdict.
"""

from __future__ import annotations

import html
import math
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from perflab.errors import PerflabError
from perflab.format import fmt_fixed, fmt_pct, fmt_ratio, fmt_value, md_text
from perflab.judging import Plan
from perflab.metrics import MetricInfo, verdict_word
from perflab.model import MACHINE_IDENTITY_KEYS, Configuration, Fingerprint, ResultSet
from perflab.reports.analysis import Analysis
from perflab.reports.benchmarks import ALLOC_METRIC, alloc_text, modality_text
from perflab.reports.terminal import bands_text, metrics_to_show, verdict_style
from perflab.stats import Comparison, modality
from perflab.table import Column, Table
from perflab.validate import output_dir

if TYPE_CHECKING:
    from perflab.storage import Store


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
GRID_SEP = "/"  # BUILD/CONFIGURATION: configurations that form a build x configuration grid


@dataclass
class Row:
    machine: str
    result_id: int | None
    # metric -> its comparison; a metric the machine did not measure here is absent
    comparisons: dict[str, Comparison] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    first: str = ""  # the block's first metric (the one a CI gate reads)
    alloc: Comparison | None = None  # bytes per op, base and diff (the Alloc Delta column)
    modality: str | None = None  # "bimodal (diff)"; "" one mode; None too few runs to tell

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
    def has_alloc(self) -> bool:
        """The Alloc Delta column: some machine's source has bytes per op."""
        return ALLOC_METRIC not in self.metrics and any(r.alloc for r in self.rows)

    @property
    def has_modality(self) -> bool:
        """The Modality column (of the rows' first metric): some machine has the runs to
        tell."""
        return (bool(self.rows) and self.metric == self.rows[0].first
                and any(r.modality is not None for r in self.rows))

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
    def where(self) -> str:
        """`` [depth=10 threads=2]``: the cell's parameters; "" for a cell of none."""
        from perflab.reports.matrix import cell_label

        if self.cell == "{}":
            return ""
        try:
            return f" [{cell_label(self.cell)}]"
        except (ValueError, AttributeError):  # a cell key that is not a parameters object
            return f" [{self.cell}]"

    @property
    def title(self) -> str:
        return f"{self.candidate} vs {self.baseline}{self.where} ({', '.join(self.metrics)})"

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
            text = f"geometric mean of the ratios {fmt_fixed(gm, 3)}x ({fmt_pct(gm)})"
            if len(logs) > 1:
                gsd = math.exp(math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1)))
                text += (f", spread: geometric SD {fmt_fixed(gsd, 3)}x, machines from "
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
    results: dict[str, ResultSet] = field(default_factory=dict, repr=False)  # by machine
    # by machine: its result judged once, by its own plan (stored, or the command line's)
    analyses: dict[str, Analysis] = field(default_factory=dict, repr=False)
    # the store as the reproduce commands' --db (history.reproduce.db_arg; None: one that
    # cannot be printed, the lines then ask for PERFLAB_DB) and as it is shown
    db: str | None = None
    db_shown: str = ""
    files: dict[str, list[str]] = field(default_factory=dict)  # imported: each machine's files

    def name_store(self, store: object) -> None:
        """The store the results were read from, as the reproduce lines' --db."""
        from perflab.history.reproduce import db_arg

        self.db, self.db_shown = db_arg(store), str(getattr(store, "location", "") or "")

    def grids(self) -> list[list[Block]]:
        """The blocks in tables: the blocks of one cell and baseline form one build x
        configuration grid when every configuration in them is named BUILD/CONFIGURATION
        and there are several candidates; any other block is a table of its own."""
        out: dict[tuple[str, str], list[Block]] = {}
        for b in self.blocks:
            out.setdefault((b.cell, b.baseline), []).append(b)
        tables: list[list[Block]] = []
        for group in out.values():
            names = [group[0].baseline, *(b.candidate for b in group)]
            if len(group) > 1 and all(GRID_SEP in n.strip(GRID_SEP) for n in names):
                tables.append(group)
            else:
                tables += [[b] for b in group]
        return tables


def _merge_same_machine(results: list[ResultSet]) -> ResultSet:
    """Several results of one machine become one (as compare --from-db does on one machine)."""
    if len(results) == 1:
        return results[0]
    if all(r.kind == "import" and len(r.configurations) > 1 for r in results):
        return _pair_benchmarks(results)
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


def _pair_benchmarks(results: list[ResultSet]) -> ResultSet:
    """Imported files of many benchmarks from one machine (ResultsComparer's base and diff
    directories): each benchmark is a cell, in the order given the first result its "base",
    the second its "diff" (a third "diff2"...), so every machine's blocks line up by
    benchmark."""
    first = results[0]
    rs = ResultSet(kind="import", fingerprint=first.fingerprint, settings=first.settings.copy(),
                   status="complete", id=first.id)
    for i, src in enumerate(results):
        side = "base" if i == 0 else "diff" if i == 1 else f"diff{i}"
        for cfg in src.configurations:
            cfg.cell, cfg.name, cfg.is_baseline = cfg.name, side, i == 0
            rs.configurations.append(cfg)
        for m, info in src.metrics.items():
            rs.metrics.setdefault(m, info)
        rs.notes.extend(src.notes)
    rs.settings.interleaved = False
    return rs


def _machine_key(rs: ResultSet) -> tuple[str, object]:
    """The machine's name and identity: its store row; for a result not stored (files
    compared in memory) what its fingerprint says it is, named by its CPU where the file
    names no host."""
    fp = rs.fingerprint
    if fp.machine_id is not None:
        return fp.label(fp.machine_id), fp.machine_id
    ident = tuple(str(getattr(fp, k)) for k in MACHINE_IDENTITY_KEYS)
    return str(fp.machine_name or fp.hostname or fp.cpu_model or "?"), ident


def of_stored(store: Store, ids: list[int], submission: str | None = None,
              metrics: list[str] | None = None) -> PerMachine:
    """The per-machine comparison of the stored results ``ids`` and of those ``submission``
    produced (each once, in that order), named by the store they were read from (its
    reproduce lines' --db)."""
    from perflab.fleet.queue import submission_results

    if submission:
        ids = ids + [i for i in submission_results(store, submission) if i not in ids]
    pm = build([store.load(i) for i in ids], metrics=metrics)
    pm.name_store(store)
    return pm


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
    files: dict[str, list[str]] = {}
    for (label, mid), rss in sorted(groups.items(), key=lambda kv: (kv[0][0].casefold(),
                                                                     kv[0][0], str(kv[0][1]))):
        name = (label if label not in dup else f"{label} (machine {mid})"
                if not isinstance(mid, tuple) else f"{label} ({len(per) + 1})")
        per[name] = _merge_same_machine(rss)
        ids[name] = [int(r.id) for r in rss if r.id is not None]
        if all(r.kind == "import" and r.settings.file for r in rss):
            files[name] = [str(r.settings.file) for r in rss]
    wanted = list(dict.fromkeys(metrics or ([metric] if metric else [])))
    if not wanted:
        wanted = metrics_to_show(next(iter(per.values())))[:1] or ["wall_time"]
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
    analyses: dict[str, Analysis] = {}
    for name, rs in per.items():
        _set_baseline(rs, baseline)
        notes += [f"{name} has no {m} figures" for m in wanted if m not in rs.metrics]
        have = [m for m in wanted if m in rs.metrics]
        plan = Plan.of(rs, threshold=threshold, correction=correction, bands=bands)
        analyses[name] = Analysis.judge(rs, _with_alloc(rs, have), plan)
        comps = analyses[name].comparisons
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
            key = (block.cell, block.baseline, block.candidate)
            found = {m: comps_of[name][(*key, m)] for m in wanted if (*key, m) in comps_of[name]}
            units = {m: rs.metrics[m].unit for m in wanted if m in rs.metrics}
            by = {c.name: c for c in rs.configurations_in(block.cell)}
            a, b = by.get(block.baseline), by.get(block.candidate)
            block.rows.append(Row(name, ids[name][0] if ids[name] else None, found, units,
                                  first=wanted[0], alloc=comps_of[name].get((*key, ALLOC_METRIC)),
                                  modality=_modality(a, b, wanted[0])))
            if found and a is not None and b is not None and a.commit and b.commit:
                block.commits[name] = (a.commit, b.commit)
    every = [c for d in comps_of.values() for c in d.values()]
    first = next(iter(analyses.values())).plan  # nothing compared: the first machine's plan
    return PerMachine(machines=list(per), result_ids=ids, blocks=blocks,
                      threshold=every[0].threshold if every else first.threshold,
                      correction=every[0].correction if every else first.correction,
                      notes=notes,
                      identity={n: Machine.of(n, rs.fingerprint) for n, rs in per.items()},
                      metrics=wanted, results=per, analyses=analyses, files=files)


def _with_alloc(rs: ResultSet, metrics: list[str]) -> list[str]:
    """The metrics to judge: bytes per op beside (its own family) for the Alloc Delta column,
    where the source has it."""
    return metrics + ([ALLOC_METRIC] if ALLOC_METRIC in rs.metrics
                      and ALLOC_METRIC not in metrics else [])


def _modality(a: Configuration | None, b: Configuration | None, metric: str) -> str | None:
    """The Modality column of a row: "bimodal (diff)", "" for one mode each, None when neither
    side has the runs to tell (stats.MVALUE_MIN_RUNS)."""
    sides = [c for c in (a, b) if c is not None]
    if all(modality(c.samples(metric)) is None for c in sides):
        return None
    return modality_text([a, b] if a is not None and b is not None else sides, metric)


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
    return out + _extra_headers(b)


def _extra_headers(b: Block) -> list[str]:
    """ResultsComparer's last two columns, where a machine has them."""
    return (["alloc delta"] if b.has_alloc else []) + (
        [f"modality ({b.metric})"] if b.has_modality else [])


def _extra_cells(b: Block, r: Row) -> list[Cell]:
    out: list[Cell] = [(alloc_text(r.alloc), "", "")] if b.has_alloc else []
    if b.has_modality:
        out.append((r.modality or "", "yellow" if r.modality else "", ""))
    return out


def _values(c: Comparison) -> tuple[float, float]:
    """The baseline's centre and the candidate's, whose ratio is the change
    (Comparison.base_center, cand_center)."""
    return c.base_center, c.cand_center


def _ratio(c: Comparison) -> str:
    return fmt_ratio(c, "x")


# One cell as every output shows it: its text, its rich style, its HTML class.
Cell = tuple[str, str, str]
MISSING: Cell = ("missing", "yellow", "")


def _verdict(c: Comparison) -> Cell:
    return (c.label, verdict_style(c), c.verdict)


def _metric_cells(c: Comparison | None, unit: str) -> list[Cell]:
    """base and diff (the candidate) in the metric's unit, the ratio with its CI, the verdict."""
    if c is None:
        return [MISSING, ("", "", ""), ("", "", ""), ("", "", "")]
    base, diff = _values(c)
    return [(fmt_value(base, unit), "", ""), (fmt_value(diff, unit), "", ""),
            (_ratio(c), "", ""), _verdict(c)]


def _identity(pm: PerMachine, machine: str) -> list[Cell]:
    who = pm.identity.get(machine) or Machine(machine, "?", "?", "?")
    return [(x, "", "") for x in (who.name, who.os, who.arch, who.cpu)]


def _block_row(pm: PerMachine, b: Block, r: Row) -> list[Cell]:
    out = _identity(pm, r.machine)
    for m in b.metrics:
        out += _metric_cells(r.comparisons.get(m), r.units.get(m, ""))
    return out + _extra_cells(b, r)


@dataclass
class View:
    """One table as the terminal, Markdown and HTML show it: a block's, or a grid's."""
    title: str
    headers: list[str]
    rows: list[list[Cell]]
    summaries: list[str]

    def left(self, i: int) -> bool:
        """Text columns (identity, verdicts, modality) align left, figures right."""
        return (i < len(IDENTITY) or self.headers[i].endswith("verdict")
                or self.headers[i].startswith("modality"))

    def table(self) -> Table:
        """The one table model of this view: the terminal, Markdown and HTML draw it."""
        t = Table(self.title, [Column(h, "left" if self.left(i) else "right", wrap=i > 0)
                               for i, h in enumerate(self.headers)], notes=self.summaries)
        for row in self.rows:
            t.add_row(*row)
        return t


def _grid_title(blocks: list[Block]) -> str:
    b0 = blocks[0]
    names = [b0.baseline, *(b.candidate for b in blocks)]
    builds = list(dict.fromkeys(n.split(GRID_SEP, 1)[0] for n in names))
    configs = list(dict.fromkeys(n.split(GRID_SEP, 1)[1] for n in names))
    return (f"builds {', '.join(builds)} x configurations {', '.join(configs)}{b0.where} "
            f"({', '.join(b0.metrics)}); ratios against {b0.baseline}")


def _grid_view(pm: PerMachine, blocks: list[Block]) -> View:
    """A row per machine; per metric the baseline's value, then per candidate its value, its
    ratio [CI] against the baseline and its verdict."""
    b0 = blocks[0]
    heads = list(IDENTITY)
    for m in b0.metrics:
        pre = f"{m} " if len(b0.metrics) > 1 else ""
        heads.append(f"{pre}{b0.baseline}")
        for b in blocks:
            heads += [f"{pre}{b.candidate}", f"{pre}{b.candidate} ratio [95% CI]",
                      f"{pre}{b.candidate} verdict"]
    rows = []
    for i, machine in enumerate(b0.rows):
        cells = _identity(pm, machine.machine)
        for m in b0.metrics:
            comps = [b.rows[i].comparisons.get(m) for b in blocks]
            unit = next((b.rows[i].units[m] for b in blocks if m in b.rows[i].units), "")
            first = next((c for c in comps if c is not None), None)
            cells.append(MISSING if first is None else (fmt_value(_values(first)[0], unit),
                                                         "", ""))
            for c in comps:
                cells += [MISSING, ("", "", ""), ("", "", "")] if c is None else [
                    (fmt_value(_values(c)[1], unit), "", ""), (_ratio(c), "", ""),
                    _verdict(c)]
        rows.append(cells)
    summaries = list(dict.fromkeys(
        line.replace(f"commits {b.baseline}..{b.candidate}: ",
                     f"commits {_build(b.baseline)}..{_build(b.candidate)}: ")
        for b in blocks for line in b.summaries()[:1] if line.startswith("commits ")
        and _build(b.baseline) != _build(b.candidate)))
    summaries += [f"{b.candidate}: {line}" if len(b0.metrics) == 1 else
                  f"{b.candidate} {line}" for b in blocks
                  for line in b.summaries() if not line.startswith("commits ")]
    return View(_grid_title(blocks), heads, rows, summaries)


def _build(config: str) -> str:
    return config.split(GRID_SEP, 1)[0]


def views(pm: PerMachine, per_metric: bool = False) -> list[View]:
    """Every table of the report, in order: a grid where the blocks form one, else a block.
    ``per_metric``: a table per metric of each (Markdown: several metrics side by side make a
    table too wide to read on GitHub), one after another."""
    out = []
    for blocks in pm.grids():
        metrics = blocks[0].metrics
        for group in ([[replace(b, metrics=[m]) for b in blocks] for m in metrics]
                      if per_metric and len(metrics) > 1 else [blocks]):
            if len(group) > 1:
                out.append(_grid_view(pm, group))
            else:
                b = group[0]
                out.append(View(b.title, headers(b), [_block_row(pm, b, r) for r in b.rows],
                                b.summaries()))
    return out


def _machines_line(pm: PerMachine) -> str:
    return ", ".join(f"{m} (result {', '.join(map(str, pm.result_ids[m]))})"
                     if pm.result_ids.get(m) else m for m in pm.machines)


def _footer(pm: PerMachine) -> str:
    return (f"Each machine judged on its own samples ({pm.correction} correction within a "
            f"machine, each metric its own family, equivalence bands "
            f"{bands_text([c for a in pm.analyses.values() for c in a.comparisons])}); "
            "samples of different machines are never pooled.")


def reproduce(pm: PerMachine) -> list[str]:
    """Lines that work when pasted into sh, for every machine: its stored result judged again
    (perflab report ID, in the store pm.db names), then per comparison a fresh one to run on
    that machine, with the machine's settings (metric, plan, the suite's [measure]): where the
    builds are commits, a worktree of each built with the suite's build step, each side's own
    command run in its own worktree (history.reproduce.fresh_compare); else the two stored
    commands compared.  Machines that would run the same lines share them."""
    from perflab.history.reproduce import db_flag

    at = db_flag(pm.db, pm.db_shown)
    out = ["# every machine's result judged again"]
    out += [f"perflab report {' '.join(map(str, pm.result_ids[m]))}{at}  # {_plain(m)}"
            for m in pm.machines if pm.result_ids.get(m) and m not in pm.files]
    out += [f"perflab compare --import {' '.join(map(shlex.quote, pm.files[m]))}  # "
            f"{_plain(m)}" for m in pm.machines if m in pm.files]
    fresh: dict[tuple[str, ...], list[str]] = {}
    trees: dict[str, list[str]] = {}
    for b in pm.blocks:
        for r in b.rows:
            lines = _fresh_lines(pm, b, r, trees)
            if lines:
                fresh.setdefault(tuple(lines), []).append(r.machine)
    for lines, machines in fresh.items():
        out += [f"{lines[0]}; on {', '.join(map(_plain, machines))}", *lines[1:]]
    if trees:
        from perflab.history.reproduce import cleanup_line

        out += [cleanup_line(repo, v) for repo, v in trees.items()]
    return out


def _fresh_lines(pm: PerMachine, b: Block, r: Row, trees: dict[str, list[str]]) -> list[str]:
    """One machine's fresh comparison of a block's two configurations ([] when it has none);
    the worktrees it makes are added to ``trees`` (by repository)."""
    from perflab.history.reproduce import (
        Side,
        build_command,
        command_text,
        compare_flags,
        fresh_compare,
        tree_var,
    )

    rs = pm.results.get(r.machine)
    by = {c.name: c for c in rs.configurations_in(b.cell)} if rs is not None else {}
    base, cand = by.get(b.baseline), by.get(b.candidate)
    if rs is None or base is None or cand is None or not r.comparisons or rs.kind == "import":
        # files measured apart by a harness: compared again from the files, not run
        return []
    analysis = pm.analyses.get(r.machine)
    flags = compare_flags(rs.settings, b.metric, analysis.plan if analysis else None)
    head = f"{b.candidate} vs {b.baseline}{b.where}"
    if r.machine not in b.commits:
        texts = [command_text(c.command, c.shell, c.env) for c in (base, cand)]
        shell = " --shell" if base.shell or cand.shell else ""  # both, as stored
        return [f"# {head}: the two commands compared afresh",
                f"perflab compare {flags} -n {shlex.quote(b.baseline)} "
                f"-n {shlex.quote(b.candidate)}{shell} " + " ".join(map(shlex.quote, texts))]
    (ca, cb), repo = b.commits[r.machine], rs.repo
    sides = [Side(commit, c.command, c.shell, c.env, repo)
             for commit, c in ((ca, base), (cb, cand))]
    repo_s = shlex.quote(repo) if repo else "REPO"
    lines = fresh_compare(repo_s, (ca, sides[0].text()), (cb, sides[1].text()), flags,
                          build_command(rs.settings, b.candidate, repo),
                          names=(b.baseline, b.candidate))
    trees.setdefault(repo_s, []).extend([tree_var(ca), tree_var(cb)])
    return [f"# {head}: {lines[0][2:]}", *lines[1:]]


def _plain(name: str) -> str:
    """A machine's name fit for a shell comment: on one line."""
    return " ".join(name.split())


def print_terminal(pm: PerMachine, console: Console) -> None:
    console.print(f"[bold]{len(pm.machines)} machines[/]: {escape(_machines_line(pm))}",
                  highlight=False, soft_wrap=True)
    for v in views(pm):
        v.table().print(console)
    console.print(f"[dim]{escape(_footer(pm))}[/]", highlight=False, soft_wrap=True)
    for n in pm.notes:
        console.print(f"[yellow]note:[/] {escape(n)}", highlight=False, soft_wrap=True)
    console.print("[bold]reproduce[/]:", highlight=False)
    for line in reproduce(pm):
        console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)


def render_markdown(pm: PerMachine) -> str:
    """GitHub Markdown to paste into an issue: one table per block (or grid) and metric, one
    row per machine (its OS, architecture and CPU beside its name)."""
    from perflab.history.filing import fence

    parts = [f"**{len(pm.machines)} machines**: {md_text(_machines_line(pm))}", ""]
    parts += [v.table().to_markdown() for v in views(pm, per_metric=True)]
    parts.append(md_text(_footer(pm)))
    parts += [f"- note: {md_text(n)}" for n in pm.notes]
    parts += ["", "**Reproduce** (paste into sh):", "", fence(reproduce(pm))]
    return "\n".join(parts) + "\n"


def render_html(pm: PerMachine, out: Path, title: str = "perflab: per-machine comparison") -> Path:
    """The same tables as one self-contained page (no script, no network)."""
    from perflab.reports.html import page as html_page

    parts = [f"<h1>{html.escape(title)}</h1>",
             f"<p>{html.escape(_machines_line(pm))}</p>"]
    # a verdict cell is coloured by its class (the page's stylesheet)
    parts += [f"<h2>{html.escape(v.title)}</h2>{v.table().to_html()}" for v in views(pm)]
    parts.append(f"<p class='muted'>{html.escape(_footer(pm))}</p>")
    parts += [f"<p class='muted'>note: {html.escape(n)}</p>" for n in pm.notes]
    parts.append("<p><b>Reproduce</b> (paste into sh):</p><pre>"
                 + html.escape("\n".join(reproduce(pm))) + "</pre>")
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


def show(pm: PerMachine, console: Console, out: Path) -> None:
    """Terminal tables, then the HTML page in ``out`` (the verb's default: the store's
    reports_dir()/machines-IDS)."""
    print_terminal(pm, console)
    page = render_html(pm, out)
    console.print(f"report: {page}", highlight=False, soft_wrap=True)

"""What makes a result's numbers less trustworthy, said once: the one noise rule, and the
warnings of a single result (stat, compare, exports) and of a suite's report (grouped by kind
in the HTML page)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from perflab import notes as said
from perflab.format import fmt_count, fmt_fixed, fmt_ratio, fmt_share
from perflab.judging import MIN_RUNS, parse_estimator
from perflab.metrics import in_family
from perflab.model import ResultSet
from perflab.reports.analysis import Analysis
from perflab.reports.matrix import cell_label
from perflab.reports.modes import modal_samples
from perflab.stats import (
    RUNS_CAP,
    Summary,
    busy_load,
    differing_results,
    kernel_blind_note,
    runs_text,
)

NOISY_CV = 0.05  # a configuration whose runs vary by more than 5% (CV) is flagged as noisy
# Across a suite's series, noise is judged against the run's own: a series is unusually noisy
# when its CV exceeds both NOISY_CV and the median CV of its peers (same metric, same run) by
# UNUSUAL_MADS robust spreads (1.4826 x the MAD of the CVs, a standard deviation for normal
# data).  A workload whose every series varies by 10% is what this workload does on this
# machine (said once, as the run's typical CV); the series that stands out is what to look at.
UNUSUAL_MADS = 3.0
# Below PEERS series a median and MAD say little about what is typical: the limit is NOISY_CV.
PEERS = 8


def is_noisy(s: Summary) -> bool:
    """The noise rule: more than one run, and a coefficient of variation above NOISY_CV."""
    return s.n > 1 and not math.isnan(s.cv) and s.cv > NOISY_CV


def result_warnings(a: Analysis) -> list[str]:
    """What makes these numbers less trustworthy (hyperfine-style warnings, and more), the
    busy-machine warning included: each one (the JSON and Markdown exports list them all)."""
    return [w.text for w in result_warning_list(a)]


def result_warning_list(a: Analysis) -> list[Warning_]:
    """result_warnings typed: each with its kind, the configuration it is about and its
    figure, so result_warning_lines can count them by kind."""
    rs = a.rs
    W = WarningKind
    out: list[Warning_] = []
    primary = rs.settings.primary_metric or "wall_time"
    info = rs.metrics.get(primary)
    several = len(rs.cells()) > 1
    limit = noise_limit([s.cv for s in a.summaries(primary).values() if s.n > 1])
    for cfg in rs.configurations:
        who = f"{cfg.name} [{cell_label(cfg.cell, rs)}]" if several else cfg.name
        failed = [r for r in cfg.runs if r.status != "ok"]
        if failed:
            out.append(Warning_(W.FAILED, f"{cfg.name}: {len(failed)} run(s) failed and were "
                                f"left out ({failed[0].error})", subject=who,
                                detail=str(len(failed))))
        xs = cfg.samples(primary)
        if len(xs) >= 4 and info and not info.deterministic:
            s = a.summary(cfg, primary)
            if s.outliers:
                out.append(Warning_(W.OUTLIERS, f"{cfg.name}: {s.outliers} statistical "
                                    f"outlier(s) in {primary} (outside 1.5 IQR); {_robust(a)}, "
                                    "but a quiet machine is better", subject=who,
                                    detail=str(s.outliers)))
            if is_noisy(s) and s.cv > limit:
                out.append(Warning_(W.NOISY, f"{cfg.name}: {primary} varies a lot (CV "
                                    f"{fmt_share(s.cv)}); consider --pin, more runs, or a "
                                    "quieter machine", subject=who, detail=fmt_share(s.cv)))
        warm = [r for r in cfg.runs if r.warmup and primary in r.values]
        if warm and len(xs) >= 3 and warm[0].values[primary] > 1.5 * float(np.median(xs)):
            out.append(Warning_(W.WARMUP, f"{cfg.name}: the warm-up run was much slower than "
                                "the rest (caches, JIT): warm-up matters here", subject=who))
        invol = cfg.samples("involuntary_switches")
        if invol and float(np.median(invol)) > 50:
            med = fmt_fixed(np.median(invol))
            out.append(Warning_(W.SWITCHES, f"{cfg.name}: {med} involuntary context switches "
                                "per run (median): other work competed for the CPU",
                                subject=who, detail=med))
    out += [Warning_(W.DIFFERENT, w) for w in differing_results(rs)]
    few = _too_few_runs(rs)
    out += [Warning_(W.FEW_RUNS, few)] if few else []
    out += [Warning_(W.MACHINE, w) for w in busy_machine(a.rs)]
    out += [Warning_(W.CPUS, w) for w in threads_over_cpus(a.rs)]
    out += [Warning_(W.KERNEL, w) for w in kernel_heavy(a.rs)]
    modal = modal_warnings(a, [m for m in rs.metrics if in_family(m, primary)])
    if modal:
        out.append(Warning_(W.BIMODAL, bimodal_line(a, modal)))
    return out


def _too_few_runs(rs: ResultSet) -> str | None:
    """Where something is compared: the configurations with fewer runs than a verdict needs."""
    if len(rs.configurations) <= len(rs.cells()):
        return None
    # Each short configuration by name with its own count: "0 run(s) per configuration"
    # read as if the baseline's 4 runs were lost too.
    few = [(c.name, len(c.measured_runs())) for c in rs.configurations
           if len(c.measured_runs()) < MIN_RUNS]
    if not few:
        return None
    shown = _some([f"{name} {n}" for name, n in few])
    primary = rs.metrics.get(rs.settings.primary_metric or "")
    if primary is not None and primary.deterministic:
        # An exact count decides; only the timed metrics beside it lack runs.
        return (f"too few timed runs for a statistical verdict on the metrics beside "
                f"{primary.name} ({shown}): they need at least {MIN_RUNS} per configuration "
                f"and read inconclusive (too few runs); {primary.name} is compared exactly")
    return (f"too few runs for a verdict ({shown}): a statistical verdict needs at least "
            f"{MIN_RUNS} per configuration, so those comparisons are inconclusive (too few runs)")


def _some(items: list[str], at_most: int = 6, width: int | None = None) -> str:
    """The first few of a list (at most ``at_most``, and within ``width`` characters: a
    command's text can be a line long), and how many more."""
    n = min(at_most, len(items))
    while width is not None and n > 1 and len(", ".join(items[:n])) > width:
        n -= 1
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


def result_warning_lines(a: Analysis, warns: list[Warning_]) -> list[str]:
    """The terminal's warnings of a result (stat, compare, results show): one line per kind,
    in the order each kind first occurs.  A kind that fired once reads as itself; one that
    fired for several configurations is counted (of how many), its configurations named with
    their figures, and said with what to do."""
    rs = a.rs
    primary = rs.settings.primary_metric or "wall_time"
    by: dict[WarningKind, list[Warning_]] = {}
    for w in warns:
        by.setdefault(w.kind, []).append(w)
    out = [ws[0].text if len(ws) == 1 else _counted(a, kind, ws, primary)
           for kind, ws in by.items()]
    noisy = by.get(WarningKind.NOISY, [])
    med, series, runs = typical_cv(a, primary)
    if not noisy and len(rs.configurations) >= PEERS and med > NOISY_CV:
        # every configuration varies alike: what the workload does here, said once
        out.append(f"noisy: 0 of {series} configurations of {primary} vary more than this "
                   f"run's limit (CV > {fmt_share(_limit(a, primary))}; the median CV is "
                   f"{fmt_share(med)} with {runs} runs); more runs narrow the CIs")
    return out


def _limit(a: Analysis, metric: str) -> float:
    return noise_limit([s.cv for s in a.summaries(metric).values() if s.n > 1])


def _counted(a: Analysis, kind: WarningKind, ws: list[Warning_], primary: str) -> str:
    """One line for several warnings of one kind: its count, whom it names, what to do."""
    W = WarningKind
    total = len(a.rs.configurations)
    named = _some([f"{w.subject} {w.detail}".strip() for w in ws], width=100)
    of = f"{len(ws)} of {total} configurations"
    if kind is W.FAILED:
        return (f"failed: {of} had runs that failed and were left out ({named}; first: "
                f"{ws[0].text}); fix the workload and measure again")
    if kind is W.OUTLIERS:
        return (f"outliers: {of} have statistical outliers in {primary} (outside 1.5 IQR: "
                f"{named}); {_robust(a)}, but a quiet machine is better")
    if kind is W.NOISY:
        med, _, runs = typical_cv(a, primary)
        limit = _limit(a, primary)
        above = (f"more than this run's limit (CV of {primary} > {fmt_share(limit)}"
                 if limit > NOISY_CV else f"by more than {fmt_share(limit)} (CV of {primary}")
        return (f"noisy: {of} vary {above}: {named}; the median CV is {fmt_share(med)} with "
                f"{runs} runs); consider --pin, more runs, or a quieter machine")
    if kind is W.WARMUP:
        return (f"warm-up: {of} ran their warm-up much slower than the rest ({named}: caches, "
                "JIT); keep at least one warm-up run (--warmup)")
    if kind is W.SWITCHES:
        return (f"switches: {of} had over 50 involuntary context switches per run (median: "
                f"{named}): other work competed for the CPU; use --pin or a quieter machine")
    if kind is W.DIFFERENT:
        return (f"different results: {len(ws)} pairs of configurations computed different "
                f"results (first: {ws[0].text}); check the workloads agree")
    if kind is W.KERNEL:
        return (f"kernel: {len(ws)} configurations whose valgrind counts miss most of their "
                f"CPU time (first: {ws[0].text}); judge them on task_clock or cpu_time")
    return f"{kind.value}: {len(ws)} warnings (first: {ws[0].text}); each in the JSON export"


def kernel_heavy(rs: ResultSet) -> list[str]:
    """Per configuration with a valgrind count: the kernel's share of its CPU time, where the
    kernel does most of the work (stats.kernel_blind_note)."""
    out = []
    counted = [m for m, info in rs.metrics.items() if "callgrind" in info.source]
    for name in dict.fromkeys(c.name for c in rs.configurations):
        cfgs = [c for c in rs.configurations if c.name == name]
        if not any(c.samples(m) for c in cfgs for m in counted):
            continue
        note = next(filter(None, (kernel_blind_note(rs, m, cfgs) for m in counted)), None)
        if note is not None:
            out.append(f"{name}: {note}")
    return out


def threads_over_cpus(rs: ResultSet) -> list[str]:
    """Cells that ask for more threads than the machine that measured them has CPUs."""
    cpus = rs.fingerprint.cpu_count
    over = [c for c in rs.configurations if cpus and c.threads and c.threads > cpus]
    if not cpus or not over:
        return []
    return [said.more_threads_than_cpus(max(c.threads or 0 for c in over), cpus,
                                        len({c.cell for c in over}), len(rs.cells()))]


def busy_machine(rs: ResultSet) -> list[str]:
    """The machine's load during the runs, when it was more than half busy: in the terminal's
    warnings and in every report's (the HTML page had it only as load_at_start)."""
    cpus = rs.fingerprint.cpu_count or 1
    load = busy_load(rs)
    if load is not None:
        return [f"the machine was busy: load average up to {fmt_fixed(load, 2)} on {cpus} "
                "CPUs during the runs"]
    return []


def _robust(a: Analysis) -> str:
    """Whether the estimator the verdicts use (the analysis' plan) shrugs off outliers."""
    est = parse_estimator(a.plan.estimator)
    if est.kind == "mean":
        return "the mean the verdicts use is not robust to them (--estimator trim is)"
    return f"the {est.label} the verdicts use is robust to a few"


class WarningKind(StrEnum):
    MACHINE = "machine"
    CPUS = "cpus"
    KERNEL = "kernel"
    SKIPPED = "skipped"
    NOTE = "note"
    NOISY = "noisy"
    OUTLIERS = "outliers"
    WARMUP = "warm-up"
    SWITCHES = "switches"
    FEW_RUNS = "too few runs"
    INCONCLUSIVE = "inconclusive"
    DIFFERENT = "different results"
    FAILED = "failed"
    BIMODAL = "bimodal"


@dataclass
class Warning_:
    kind: WarningKind
    text: str
    runs_needed: int | None = None  # inconclusive: runs per configuration that would decide
    subject: str = ""  # a result's warning: the configuration it is about
    detail: str = ""  # and its figure ("2" outliers, "CV 6.9%"), for the line that counts them


def modal_warnings(a: Analysis, metrics: list[str]) -> list[Warning_]:
    """A BIMODAL warning per configuration whose runs of these metrics have two or more modes
    (reports.modes: the mark in the tables)."""
    return [Warning_(WarningKind.BIMODAL, m.text() if cell == "{}" else
                     f"{cell_label(cell, a.rs)} / {m.text()}")
            for cell in a.rs.cells()
            for m in modal_samples(a, a.rs.configurations_in(cell), metrics)]


def bimodal_line(a: Analysis, ws: list[Warning_]) -> str:
    """The BIMODAL warnings in one line: how many, the first, what to do."""
    where = f"perflab results show {a.rs.id} --export-json - lists each run's samples"
    many = f"{len(ws)} samples have" if len(ws) > 1 else "1 sample has"
    return (f"bimodal: {many} two or more modes ({ws[0].text}); look at the runs ({where}) "
            "or pin CPUs (--pin)")


def noise_limit(cvs: list[float]) -> float:
    """The CV above which a series is unusually noisy for this run (UNUSUAL_MADS)."""
    xs = np.array([c for c in cvs if not math.isnan(c)])
    if len(xs) < PEERS:
        return NOISY_CV
    med = float(np.median(xs))
    mad = float(np.median(np.abs(xs - med))) * 1.4826
    return max(NOISY_CV, med + UNUSUAL_MADS * mad)


def typical_cv(a: Analysis, metric: str) -> tuple[float, int, int]:
    """The run's median CV of ``metric`` over its series, their count and the median runs."""
    ss = [s for s in a.summaries(metric).values() if s.n > 1 and not math.isnan(s.cv)]
    if not ss:
        return math.nan, 0, 0
    return (float(np.median([s.cv for s in ss])), len(ss),
            int(np.median([s.n for s in ss])))


def suite_warnings(a: Analysis, metric: str) -> list[Warning_]:
    rs = a.rs
    W = WarningKind
    out: list[Warning_] = [Warning_(W.MACHINE, w) for w in busy_machine(a.rs)]
    out += [Warning_(W.CPUS, w) for w in threads_over_cpus(a.rs)]
    out += [Warning_(W.KERNEL, w) for w in kernel_heavy(a.rs)]
    for msg in rs.settings.suite.skipped or []:
        out.append(Warning_(W.SKIPPED, msg))
    for n in dict.fromkeys(rs.notes):
        out.append(Warning_(W.NOTE, n))
    summaries = a.summaries(metric)
    limit = noise_limit([s.cv for s in summaries.values() if s.n > 1])
    for (cell, name), s in summaries.items():
        if is_noisy(s) and s.cv > limit:
            out.append(Warning_(W.NOISY, f"{cell_label(cell, rs)} / {name}: runs vary by "
                                f"{fmt_share(s.cv)} (CV of {metric}, n={s.n}, {s.outliers} "
                                f"outliers; this run's limit {fmt_share(limit)})"))
    for c in a.comparisons:
        if c.metric == metric and c.verdict == "inconclusive":
            need = (f"; {runs_text(c.runs_needed)} per configuration would decide it (80%)"
                    if c.runs_needed else f" ({c.note})" if c.note else "")
            out.append(Warning_(W.INCONCLUSIVE, f"{cell_label(c.cell, rs)} / {c.candidate} vs "
                                f"{c.baseline}: ratio {fmt_ratio(c)}{need}", c.runs_needed))
    for cell in rs.cells():
        for msg in differing_results(rs, cell):
            out.append(Warning_(W.DIFFERENT, f"{cell_label(cell, rs)}: {msg}"))
    for cfg in rs.configurations:
        bad = [r for r in cfg.runs if r.status != "ok"]
        if bad:
            out.append(Warning_(W.FAILED, f"{cell_label(cfg.cell, rs)} / {cfg.name}: {len(bad)} "
                                f"run(s) {bad[0].status}: {bad[0].error[:120]}"))
    return out + modal_warnings(a, [metric])


def runs_to_decide(needed: Sequence[int]) -> str:
    """What the inconclusive comparisons need (stats.runs_needed, sorted): "about 16 runs per
    configuration would decide half of them and 21,390 all of them"; those at the estimate's
    cap are counted, never read as a run count ("half of them, 3 not within 100,000")."""
    half, last = needed[len(needed) // 2], needed[-1]
    beyond = sum(n >= RUNS_CAP for n in needed)
    if half >= RUNS_CAP:
        return f"{beyond} of them would need {runs_text(half)} per configuration"
    head = f"about {fmt_count(half)} runs per configuration would decide "
    if beyond:
        return head + f"half of them, {beyond} not within {fmt_count(RUNS_CAP)}"
    if half == last:
        return head + "all of them"
    return head + f"half of them and {fmt_count(last)} all of them"


def warning_lines(a: Analysis, metric: str, warns: list[Warning_], where: str) -> list[str]:
    """The terminal's warnings: one line per kind, each with its count and what to do (every
    warning itself is in the report at ``where``)."""
    W = WarningKind
    by: dict[WarningKind, list[Warning_]] = {}
    for w in warns:
        by.setdefault(w.kind, []).append(w)
    out: list[str] = []
    for w in by.get(W.MACHINE, []):
        out.append(f"machine: 1 warning: {w.text}; confirm on a quieter machine what a "
                   "verdict hangs on")
    for w in by.get(W.CPUS, []):
        out.append(f"cpus: 1 warning: {w.text}")
    if by.get(W.KERNEL):
        ws = by[W.KERNEL]
        out.append(f"kernel: {len(ws)} configuration(s) whose valgrind counts miss most of "
                   f"their CPU time (first: {ws[0].text}); judge them on task_clock or "
                   "cpu_time")
    if by.get(W.SKIPPED):
        ws = by[W.SKIPPED]
        out.append(f"skipped: {len(ws)} (first: {ws[0].text}); install what is missing and "
                   f"run again to measure them (each in {where})")
    if by.get(W.FAILED):
        ws = by[W.FAILED]
        out.append(f"failed: {len(ws)} series with failed runs (first: {ws[0].text}); fix "
                   "the workload and run the suite again with --resume")
    if by.get(W.DIFFERENT):
        out.append(f"different results: {len(by[W.DIFFERENT])} cells whose configurations "
                   f"printed different results; check the workloads agree (each in {where})")
    med, series, runs = typical_cv(a, metric)
    noisy = by.get(W.NOISY, [])
    if series and (noisy or med > NOISY_CV):
        limit = noise_limit([s.cv for s in a.summaries(metric).values() if s.n > 1])
        act = (f"rerun those cells with --pin or on a quieter machine (each in {where})"
               if noisy else "more runs narrow the CIs")
        out.append(f"noisy: {len(noisy)} of {series} series of {metric} vary more than this "
                   f"run's limit (CV > {fmt_share(limit)}; the median CV is {fmt_share(med)} "
                   f"with {runs} runs); {act}")
    inc = by.get(W.INCONCLUSIVE, [])
    if inc:
        total = sum(c.metric == metric for c in a.comparisons)
        needed = sorted(w.runs_needed for w in inc if w.runs_needed)
        decide = (f"{runs_to_decide(needed)}: raise runs in [measure]" if needed else
                  f"see why in {where}")
        out.append(f"inconclusive: {len(inc)} of {total} comparisons of {metric} stayed "
                   f"inconclusive; {decide}")
    if by.get(W.BIMODAL):
        out.append(bimodal_line(a, by[W.BIMODAL]))
    if by.get(W.NOTE):
        ws = by[W.NOTE]
        out.append(f"notes: {len(ws)} said once by the collectors (first: {ws[0].text}); read "
                   f"them all in {where}")
    return out

"""What makes a result's numbers less trustworthy, said once: the one noise rule, and the
warnings of a single result (stat, compare, exports) and of a suite's report (grouped by kind
in the HTML page)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perflab.format import fmt_fixed, fmt_ratio, fmt_share
from perflab.judging import MIN_RUNS, parse_estimator
from perflab.model import ResultSet
from perflab.reports.analysis import Analysis
from perflab.reports.matrix import cell_label
from perflab.stats import Summary, differing_results

NOISY_CV = 0.05  # a configuration whose runs vary by more than 5% (CV) is flagged as noisy


def is_noisy(s: Summary) -> bool:
    """The noise rule: more than one run, and a coefficient of variation above NOISY_CV."""
    return s.n > 1 and not math.isnan(s.cv) and s.cv > NOISY_CV


def result_warnings(a: Analysis) -> list[str]:
    """What makes these numbers less trustworthy (hyperfine-style warnings, and more), the
    busy-machine warning included."""
    rs = a.rs
    out: list[str] = []
    primary = rs.settings.primary_metric or "wall_time"
    for cfg in rs.configurations:
        failed = [r for r in cfg.runs if r.status != "ok"]
        if failed:
            out.append(f"{cfg.name}: {len(failed)} run(s) failed and were left out "
                       f"({failed[0].error})")
        xs = cfg.samples(primary)
        info = rs.metrics.get(primary)
        if len(xs) >= 4 and info and not info.deterministic:
            s = a.summary(cfg, primary)
            if s.outliers:
                out.append(f"{cfg.name}: {s.outliers} statistical outlier(s) in {primary} "
                           f"(outside 1.5 IQR); {_robust(a)}, but a quiet machine is better")
            if is_noisy(s):
                out.append(f"{cfg.name}: {primary} varies a lot (CV {fmt_share(s.cv)}); consider "
                           "--pin, more runs, or a quieter machine")
        warm = [r for r in cfg.runs if r.warmup and primary in r.values]
        if warm and len(xs) >= 3 and warm[0].values[primary] > 1.5 * float(np.median(xs)):
            out.append(f"{cfg.name}: the warm-up run was much slower than the rest (caches, "
                       "JIT): warm-up matters here")
        invol = cfg.samples("involuntary_switches")
        if invol and float(np.median(invol)) > 50:
            out.append(f"{cfg.name}: {fmt_fixed(np.median(invol))} involuntary context switches "
                       "per run (median): other work competed for the CPU")
    out += differing_results(rs)
    if len(rs.configurations) > len(rs.cells()):  # something is compared
        # Each short configuration by name with its own count: "0 run(s) per configuration"
        # read as if the baseline's 4 runs were lost too.
        few = [(c.name, len(c.measured_runs())) for c in rs.configurations
               if len(c.measured_runs()) < MIN_RUNS]
        if few:
            shown = ", ".join(f"{name} {n}" for name, n in few[:6]) + (
                f" and {len(few) - 6} more" if len(few) > 6 else "")
            primary = rs.metrics.get(rs.settings.primary_metric or "")
            if primary is not None and primary.deterministic:
                # An exact count decides; only the timed metrics beside it lack runs.
                out.append(f"too few timed runs for a statistical verdict on the metrics "
                           f"beside {primary.name} ({shown}): they need at least {MIN_RUNS} "
                           f"per configuration and read inconclusive (too few runs); "
                           f"{primary.name} is compared exactly")
            else:
                out.append(f"too few runs for a verdict ({shown}): a statistical verdict needs "
                           f"at least {MIN_RUNS} per configuration, so those comparisons are "
                           "inconclusive (too few runs)")
    out += busy_machine(a.rs)
    return out


def busy_machine(rs: ResultSet) -> list[str]:
    """The machine's load during the runs, when it was more than half busy: in the terminal's
    warnings and in every report's (the HTML page had it only as load_at_start)."""
    cpus = rs.fingerprint.cpu_count or 1
    loads = [r.load1 for c in rs.configurations for r in c.runs if r.load1 is not None]
    if loads and max(loads) > max(1.0, 0.5 * cpus):
        return [f"the machine was busy: load average up to {fmt_fixed(max(loads), 2)} on {cpus} "
                "CPUs during the runs"]
    return []


def _robust(a: Analysis) -> str:
    """Whether the estimator the verdicts use (the analysis' plan) shrugs off outliers."""
    est = parse_estimator(a.plan.estimator)
    if est.kind == "mean":
        return "the mean the verdicts use is not robust to them (--estimator trim is)"
    return f"the {est.label} the verdicts use is robust to a few"


@dataclass
class Warning_:
    kind: str  # noisy | inconclusive | different results | failed | skipped | note
    text: str


def suite_warnings(a: Analysis, metric: str) -> list[Warning_]:
    rs = a.rs
    out: list[Warning_] = [Warning_("machine", w) for w in busy_machine(a.rs)]
    for msg in rs.settings.suite.skipped or []:
        out.append(Warning_("skipped", msg))
    for n in dict.fromkeys(rs.notes):
        out.append(Warning_("note", n))
    for (cell, name), s in a.summaries(metric).items():
        if is_noisy(s):
            out.append(Warning_("noisy", f"{cell_label(cell, rs)} / {name}: runs vary by "
                                f"{fmt_share(s.cv)} (CV of {metric}, n={s.n}, {s.outliers} "
                                "outliers)"))
    for c in a.comparisons:
        if c.metric == metric and c.verdict == "inconclusive":
            need = (f"; at least {c.runs_needed} runs per configuration would decide it (80%)"
                    if c.runs_needed else f" ({c.note})" if c.note else "")
            out.append(Warning_("inconclusive", f"{cell_label(c.cell, rs)} / {c.candidate} vs "
                                f"{c.baseline}: ratio {fmt_ratio(c)}{need}"))
    for cell in rs.cells():
        for msg in differing_results(rs, cell):
            out.append(Warning_("different results", f"{cell_label(cell, rs)}: {msg}"))
    for cfg in rs.configurations:
        bad = [r for r in cfg.runs if r.status != "ok"]
        if bad:
            out.append(Warning_("failed", f"{cell_label(cfg.cell, rs)} / {cfg.name}: {len(bad)} "
                                f"run(s) {bad[0].status}: {bad[0].error[:120]}"))
    return out

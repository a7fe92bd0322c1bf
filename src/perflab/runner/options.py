"""How a measurement runs and stops: MeasureOptions and what follows from them (the minimum
runs, the budget, the plan it stores)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from perflab.judging import (
    Plan,
    parse_estimator,
)
from perflab.stats import (
    planned_looks,
)

DEFAULT_BUDGET_PER_CONFIG = 10.0  # seconds of adaptive measuring per configuration
STAT_PRECISION = 0.01  # `stat` (nothing to compare) stops at this CI half-width by default
# Timed rounds beside callgrind's counts (--metric instructions without a PMU): enough to see
# the kernel's share of CPU time, which a user-space count cannot (stats.kernel_share).
KERNEL_PROBE_ROUNDS = 3


@dataclass
class MeasureOptions:
    warmup: int = 1
    runs: int | None = None  # fixed: exactly N rounds, one look
    min_runs: int | None = None  # None: what the estimator needs (6 for the default trim)
    max_runs: int = 1000
    # Seconds in all; None: DEFAULT_BUDGET_PER_CONFIG x configurations (adaptive only).
    budget: float | None = None
    # Also stop when every configuration's CI half-width is within +-precision of its centre
    # (None: only when the comparisons are decided; `stat` uses STAT_PRECISION).
    precision: float | None = None
    primary_metric: str = "wall_time"
    # Let the warm-up runs choose between primary_metric (a wall-clock metric) and its CPU-time
    # counterpart (choose_primary); set by the verbs when no --metric was given.
    auto_primary: bool = False
    # How verdicts are judged (threshold, correction, estimator, bands), built once by the
    # caller (session, a suite, a bisect) and stored with the looks of this measurement's
    # schedule as rs.settings.comparison (measured_plan).
    plan: Plan = field(default_factory=Plan)
    # Comparisons in the primary metric's family across the whole result (a suite's matrix);
    # None: those measured in this call.  The stop rule decides at alpha / looks / this.
    family_size: int | None = None
    pin: list[int] | None = None
    timeout: float | None = None
    ignore_failure: bool = False
    counters: str = "auto"  # auto | none
    instructions: str | None = None  # None | "valgrind"
    valgrind_runs: int = 2  # deterministic: the second run checks the first
    region: bool = True
    region_symbol: str | None = None  # callgrind --toggle-collect pattern for the region
    client_region: bool = False  # the binary toggles callgrind itself (perflab_region.h)
    seed: int | None = None
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, *, metric: str | None, default_primary: str = "wall_time",
           auto_primary: bool | None = None, plan: Plan | None = None,
           **given: Any) -> MeasureOptions:
        """The one way options are made (stat and compare: session.build_options; a suite:
        suites.execute.measure_options; a bisect: Bisector._options): the primary metric
        (``metric``, else ``default_primary``, which the warm-up runs may swap for its CPU-time
        counterpart: ``auto_primary``, by default when no metric was named), how verdicts are
        judged (``plan``, passed through; None: the defaults), the rest as given."""
        return cls(primary_metric=metric or default_primary,
                   auto_primary=metric is None if auto_primary is None else auto_primary,
                   plan=plan if plan is not None else Plan(), **given)



def measured_plan(opts: MeasureOptions) -> Plan:
    """The plan a measurement with ``opts`` stores: the caller's (a copy: the measurement sets
    the level it stopped at), with the looks of its schedule (alpha is split over them), or 1
    for a fixed number of runs."""
    looks = 1 if opts.runs is not None or counts_only(opts) else planned_looks(
        effective_min_runs(opts), opts.max_runs)
    return replace(opts.plan, looks=looks, bands=dict(opts.plan.bands))


def counts_only(opts: MeasureOptions) -> bool:
    """The primary metric is callgrind's count: its runs are exact, the timed ones few
    (KERNEL_PROBE_ROUNDS) and never a look."""
    return opts.instructions == "valgrind" and opts.primary_metric in (
        "instructions", "instructions_per_op")


def effective_min_runs(opts: MeasureOptions) -> int:
    need = parse_estimator(opts.plan.estimator).min_runs()
    return max(need, opts.min_runs or need)


def effective_budget(opts: MeasureOptions, n_configs: int) -> float | None:
    if opts.runs is not None:
        return None
    return opts.budget if opts.budget is not None else DEFAULT_BUDGET_PER_CONFIG * n_configs


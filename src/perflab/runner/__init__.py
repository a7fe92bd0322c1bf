"""The runner: plans runs, interleaves configurations, warms up, stops adaptively, saves each run.

One module per concept, their names handed on here for the stages above:
- options: MeasureOptions (how a measurement runs and stops) and what follows from them;
- policy: which metric decides (choose_primary, reconcile_primary);
- declared: the metrics a measurement can produce (perflab.metrics' registry, and what a
  workload declares);
- loop: the measurement itself (measure, Measurement): rounds, batches, looks, storing;
- watchers: what watches a measurement (Watchers: progress, console, hooks on runs).
"""

from perflab.runner.declared import family_members, known_metrics, metric_info
from perflab.runner.loop import BATCH_SECONDS, Measurement, RunFailed, measure
from perflab.runner.options import (
    DEFAULT_BUDGET_PER_CONFIG,
    KERNEL_PROBE_ROUNDS,
    STAT_PRECISION,
    MeasureOptions,
    counts_only,
    effective_budget,
    effective_min_runs,
    measured_plan,
)
from perflab.runner.policy import (
    CPU_COUNTERPART,
    PRIMARY_MIN_RUNS,
    choose_primary,
    reconcile_primary,
    settle_primary,
)
from perflab.runner.watchers import Watchers

__all__ = [
    "BATCH_SECONDS", "CPU_COUNTERPART", "DEFAULT_BUDGET_PER_CONFIG", "KERNEL_PROBE_ROUNDS",
    "PRIMARY_MIN_RUNS", "STAT_PRECISION", "MeasureOptions", "Measurement", "RunFailed", "Watchers",
    "choose_primary", "counts_only", "effective_budget", "effective_min_runs", "family_members",
    "known_metrics", "measure", "measured_plan", "metric_info", "reconcile_primary",
    "settle_primary",
]

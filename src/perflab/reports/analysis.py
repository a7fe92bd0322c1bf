"""One Analysis per result: what every view of it shows, computed once.

The use-case layer (session, cli/measure, reports/report) judges a result once, with the plan it
is judged by, and hands the Analysis to every view: terminal tables, exports (JSON, CSV,
Markdown, hyperfine, pyperf), a suite's tables, plots and HTML.  A view reads the summaries,
comparisons, plan and warnings here; it neither summarizes samples itself nor keeps defaults
of its own for the threshold or correction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from perflab import stats
from perflab.judging import Estimator, Plan
from perflab.model import Configuration, ResultSet
from perflab.stats import Comparison, Summary


@dataclass(frozen=True)
class Analysis:
    """A result, the plan it is judged by, its comparisons, and (computed on first use, once)
    the summary of every (configuration, metric); what the views read (reports.matrix,
    reports.warnings)."""

    rs: ResultSet
    plan: Plan
    comparisons: tuple[Comparison, ...] = ()
    # (position of the configuration in rs, metric, estimator) -> Summary: filled on first
    # use, so a view that shows one metric does not pay for all of them.
    _memo: dict[tuple[int, str, str], Summary] = field(default_factory=dict, init=False,
                                                        repr=False, compare=False)
    # (position of the configuration, metric) -> its modality (stats.modality), on first use
    _modes: dict[tuple[int, str], stats.Modality | None] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def of(cls, rs: ResultSet, comparisons: Sequence[Comparison] = (),
           plan: Plan | None = None) -> Analysis:
        """The analysis of ``rs`` as judged by ``plan`` (the one stored with it when None)."""
        return cls(rs, plan if plan is not None else Plan.of(rs), tuple(comparisons))

    @classmethod
    def judge(cls, rs: ResultSet, metrics: Sequence[str], plan: Plan | None = None) -> Analysis:
        """``rs`` judged once on ``metrics`` (each its own family, stats.compare_result) by
        ``plan``, the one stored with it when None: what stat, compare, results show, a
        suite's report and the fleet's per-machine view each build once and render."""
        plan = plan if plan is not None else Plan.of(rs)
        return cls.of(rs, stats.compare_result(rs, list(metrics), plan=plan), plan)

    @cached_property
    def _position(self) -> dict[int, int]:
        # By identity: Configuration is a mutable dataclass (unhashable), and two may share a
        # name in a cell (a resumed suite's superseded ones, before suites' view drops them).
        return {id(c): i for i, c in enumerate(self.rs.configurations)}

    def summary(self, cfg: Configuration, metric: str,
                estimator: Estimator | None = None) -> Summary:
        """``cfg``'s summary of ``metric`` (its measured runs; deterministic metrics exact);
        the median's unless ``estimator`` asks for another centre (stat --estimator)."""
        key = (self._position[id(cfg)], metric, "" if estimator is None else str(estimator))
        got = self._memo.get(key)
        if got is None:
            info = self.rs.metrics.get(metric)
            got = stats.summarize(cfg.samples(metric), bool(info and info.deterministic),
                                  estimator)
            self._memo[key] = got
        return got

    def modality(self, cfg: Configuration, metric: str) -> stats.Modality | None:
        """The modes of ``cfg``'s runs of ``metric`` (stats.modality: None below
        stats.MVALUE_MIN_RUNS runs)."""
        key = (self._position[id(cfg)], metric)
        if key not in self._modes:
            self._modes[key] = stats.modality(cfg.samples(metric))
        return self._modes[key]

    def summaries(self, metric: str) -> dict[tuple[str, str], Summary]:
        """(cell, configuration name) -> summary of ``metric``, for the configurations that
        have samples of it (a later configuration of the same name and cell wins)."""
        return {(c.cell, c.name): self.summary(c, metric) for c in self.rs.configurations
                if c.samples(metric)}

    def comparisons_of(self, metric: str) -> list[Comparison]:
        return [c for c in self.comparisons if c.metric == metric]

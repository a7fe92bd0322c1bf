"""Samples whose runs have two or more modes (stats.modality: BenchmarkDotNet's mvalue, flagged
above stats.MVALUE_BIMODAL), marked where perflab's own tables show their centre: a compact
mark beside the value in stat and compare tables (terminal, Markdown, the report's HTML), a
note under the table saying where the modes are, and one warning (reports.warnings).

Only noisy times are marked: an exact count has no noise, a tick-counted CPU time
(MetricInfo.resolution) and an event count take few distinct values, which read as modes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perflab.format import fmt_alike, fmt_fixed, fmt_value
from perflab.metrics import MetricInfo, metric_kind
from perflab.model import Configuration
from perflab.stats import Modality

if TYPE_CHECKING:
    from perflab.reports.analysis import Analysis

MARK = "‡"  # beside a value whose runs have two or more modes; a note under the table says more
MAX_NOTES = 4  # notes under one table; the rest are counted


def marked(info: MetricInfo | None) -> bool:
    """Whether a metric's modes are looked for: a noisy, fine-grained time."""
    return (info is not None and not info.deterministic and not info.resolution
            and metric_kind(info.unit) == "time")


@dataclass(frozen=True)
class Modal:
    """One configuration's runs of one metric, flagged as having two or more modes."""

    config: str
    metric: str
    unit: str
    median: float
    modality: Modality

    def text(self) -> str:
        """"new / wall_time: the median 1.31 µs hides two modes, at 1.20 µs and 1.45 µs"."""
        modes = " and ".join(fmt_alike(self.modality.modes, self.unit))
        many = ("two modes, at" if self.modality.label == "bimodal" else
                "several modes, the two highest at")
        return (f"{self.config} / {self.metric}: the median {fmt_value(self.median, self.unit)} "
                f"hides {many} {modes}")

    def note(self) -> str:
        mv = fmt_fixed(self.modality.mvalue, 1)
        return f"{MARK} {self.modality.label} (mvalue {mv}): {self.text()}"


def modal(a: Analysis, cfg: Configuration, metric: str) -> Modal | None:
    """``cfg``'s runs of ``metric`` when they are flagged (and the metric is marked())."""
    if not marked(a.rs.metrics.get(metric)):
        return None
    mod = a.modality(cfg, metric)
    if mod is None or not mod.flagged or len(mod.modes) < 2:
        return None
    return Modal(cfg.name, metric, a.rs.metrics[metric].unit, a.summary(cfg, metric).median, mod)


def mark(a: Analysis, cfg: Configuration, metric: str) -> str:
    """" ‡" to put after ``cfg``'s value of ``metric`` when its runs have two or more modes."""
    return f" {MARK}" if modal(a, cfg, metric) is not None else ""


def modal_samples(a: Analysis, configs: Iterable[Configuration],
                  metrics: Sequence[str]) -> list[Modal]:
    """The flagged (configuration, metric) samples among these, metric by metric."""
    cfgs = list(configs)
    return [m for metric in metrics for c in cfgs
            if (m := modal(a, c, metric)) is not None]


def notes(found: Sequence[Modal]) -> list[str]:
    """The notes under a table for its marked values (MAX_NOTES, then a count)."""
    out = [m.note() for m in found[:MAX_NOTES]]
    if len(found) > MAX_NOTES:
        out.append(f"{MARK} and {len(found) - MAX_NOTES} more with two or more modes")
    return out

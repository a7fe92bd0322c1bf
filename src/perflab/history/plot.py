"""Series over commits as plots: each series and its change points handed to reports/plots.py,
which draws them (medians with their 95% CIs, change points marked)."""

from __future__ import annotations

from pathlib import Path

from perflab.format import fmt_change_pct
from perflab.history.detect import ChangePoint
from perflab.history.git import short
from perflab.history.series import Series


def plot_series(items: list[tuple[Series, list[ChangePoint]]], out: Path,
                title: str | None = None) -> Path:
    """One panel per series, stacked; x = points in commit order labelled by short commit; a
    change point is marked red (regression), green (improvement) or grey (ignored)."""
    from perflab.reports.plots import TimelinePanel, plot_timeline

    panels = [TimelinePanel(
        title=s.key.label(),
        ylabel=f"{s.key.metric} ({s.unit})" if s.unit else s.key.metric,
        labels=[short(p.commit)[:7] + ("*" if p.dirty else "") for p in s.points],
        median=[p.median for p in s.points], ci_low=[p.ci_low for p in s.points],
        ci_high=[p.ci_high for p in s.points],
        marks=[(cp.index - 0.5, fmt_change_pct(cp.change_pct, 1),
                "tab:gray" if cp.ignored else "tab:red" if cp.regression else "tab:green")
               for cp in cps]) for s, cps in items]
    return plot_timeline(panels, out, title)

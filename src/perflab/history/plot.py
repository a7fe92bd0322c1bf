"""Plots of series over commits: medians with their 95% CIs, change points marked."""

from __future__ import annotations

from pathlib import Path

from perflab.history.detect import ChangePoint
from perflab.history.git import short
from perflab.history.series import Series


def plot_series(items: list[tuple[Series, list[ChangePoint]]], out: Path,
                title: str | None = None) -> Path:
    """One panel per series, stacked; x = points in commit order labelled by short commit."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no server
    import matplotlib.pyplot as plt

    n = max(len(items), 1)
    fig, axes = plt.subplots(n, 1, figsize=(9, 2.8 * n + 0.6), squeeze=False)
    for ax, (s, cps) in zip(axes[:, 0], items, strict=False):
        xs = list(range(len(s.points)))
        med = [p.median for p in s.points]
        lo = [max(p.median - p.ci_low, 0.0) for p in s.points]
        hi = [max(p.ci_high - p.median, 0.0) for p in s.points]
        ax.errorbar(xs, med, yerr=[lo, hi], fmt="o-", ms=4, lw=1, capsize=3,
                    color="tab:blue", ecolor="tab:gray", label="median, 95% CI")
        for cp in cps:
            color = "tab:gray" if cp.ignored else ("tab:red" if cp.regression else "tab:green")
            ax.axvline(cp.index - 0.5, color=color, ls="--", lw=1.2)
            ax.annotate(f"{cp.change_pct:+.1f}%", (cp.index - 0.5, 1.0),
                        xycoords=("data", "axes fraction"), ha="center", va="bottom",
                        color=color, fontsize=8)
        labels = [short(p.commit)[:7] + ("*" if p.dirty else "") for p in s.points]
        step = max(1, len(xs) // 20)  # keep the labels legible on long series
        ax.set_xticks(xs[::step], labels[::step], rotation=45, ha="right", fontsize=7)
        ax.set_ylabel(f"{s.key.metric} ({s.unit})" if s.unit else s.key.metric)
        ax.set_title(s.key.label(), fontsize=9, pad=14)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out

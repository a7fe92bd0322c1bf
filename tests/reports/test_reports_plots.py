"""Plots from a stored run with known samples: the files, scales, labels, bands and ratios."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from test_reports_matrix import make_result  # the shared known-samples result

from perflab.model import canonical_params
from perflab.reports import plots
from perflab.reports.analysis import Analysis
from perflab.stats import compare_result
from perflab.storage import Store

pytestmark = pytest.mark.unit


def _stored(tmp_path: Path):  # noqa: ANN202
    store = Store(tmp_path / "p.sqlite")
    return store.load(store.save(make_result()))


def test_all_plots_files_and_content(tmp_path: Path) -> None:
    rs = _stored(tmp_path)
    comps = compare_result(rs, ["ns_per_op"], threshold=0.05)
    out = tmp_path / "img"
    files = plots.all_plots(Analysis.of(rs, comps), ["ns_per_op"], out,
                            rs.settings.suite.report or {})
    names = {f.name for f in files}
    assert names == {"ns_per_op-vs-depth", "ns_per_op-ratio-to-baseline",
                     "ns_per_op-scaling-threads", "ns_per_op-hardware-vs-software"}
    for f in files:
        img = matplotlib.image.imread(f.png)
        assert img.shape[0] > 200 and img.shape[1] > 200
        assert len(np.unique(img.reshape(-1, img.shape[-1]), axis=0)) > 2  # not blank
        assert f.svg.read_text().lstrip().startswith(("<?xml", "<svg"))
        assert "run " in f.caption and "testhost" in f.caption and "Test CPU" in f.caption

    main = next(f for f in files if f.name == "ns_per_op-vs-depth")
    assert main.figure is not None
    axes = [a for a in main.figure.axes if a.get_visible()]
    assert len(axes) == 4  # threads x kind panels
    ax = axes[0]
    # depth 0..100 spans decades and includes 0: symlog; 1000..44000 ns spans decades: log.
    assert ax.get_xscale() == "symlog" and ax.get_yscale() == "log"
    assert ax.get_xlabel() == "depth" and ax.get_ylabel() == "ns_per_op (ns)"
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == [
        "base", "noisy", "same", "slow"]
    assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 4  # a CI band each
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "slow")
    base = next(ln for ln in ax.get_lines() if ln.get_label() == "base")
    ratio = np.asarray(line.get_ydata()) / np.asarray(base.get_ydata())
    assert np.allclose(ratio, 2.0, rtol=0.02)

    # The ratio plot draws the verdicts' Holm-adjusted intervals: its title says their levels.
    ratio_plot = next(f for f in files if f.name == "ns_per_op-ratio-to-baseline")
    levels = sorted({c.ci_level for c in comps if c.metric == "ns_per_op"})
    assert levels[-1] > 0.95 and "95% CI)" not in ratio_plot.title
    assert ratio_plot.title.endswith(f"{levels[-1]:.1%} CIs, family-adjusted)"), ratio_plot.title

    scaling = next(f for f in files if f.name == "ns_per_op-scaling-threads")
    assert scaling.figure is not None
    sax = [a for a in scaling.figure.axes if a.get_visible()][0]
    # Known data: threads=2 costs 1.5x threads=1 for every configuration.
    ys = np.concatenate([np.asarray(c.lines[0].get_ydata()) for c in sax.containers
                         if c.get_label() in ("base", "slow", "same")])
    assert np.allclose(ys, 1.5, rtol=0.02)
    kinds = next(f for f in files if f.name == "ns_per_op-hardware-vs-software")
    assert kinds.figure is not None
    kax = [a for a in kinds.figure.axes if a.get_visible()][0]
    ys = np.concatenate([np.asarray(c.lines[0].get_ydata()) for c in kax.containers
                         if c.get_label() == "slow"])
    assert np.allclose(ys, 3.0, rtol=0.02)


def test_scales_follow_the_data() -> None:
    fig = Figure()
    ax = fig.subplots()
    plots._set_scales(ax, [1, 2, 4, 8, 16], [100.0, 105.0], "auto", "auto")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "linear"
    ax2 = fig.subplots()
    plots._set_scales(ax2, [1, 2, 3], [1.0, 2.0], "auto", True)
    assert ax2.get_xscale() == "linear" and ax2.get_yscale() == "log"


def test_bars_without_numeric_parameter(tmp_path: Path) -> None:
    rs = make_result()
    for c in rs.configurations:
        c.params = {"kind": c.params["kind"], "variant": f"d{c.params['depth']}"
                    f"t{c.params['threads']}"}
        c.cell = canonical_params(c.params)
    files = plots.all_plots(Analysis.of(rs), ["ns_per_op"], tmp_path, {})
    assert [f.name for f in files] == ["ns_per_op-bars"]
    assert files[0].png.stat().st_size > 1000


def test_single_cell_bars_name_each_configuration(tmp_path: Path) -> None:
    rs = make_result()
    one = canonical_params({"depth": 10, "kind": "software", "threads": 1})
    rs.configurations = [c for c in rs.configurations if c.cell == one]
    files = plots.all_plots(Analysis.of(rs), ["ns_per_op"], tmp_path, {})
    assert [f.name for f in files] == ["ns_per_op-bars"]
    fig = files[0].figure
    assert fig is not None
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["base", "slow", "same", "noisy"]
    widths = [p.get_width() for p in ax.patches]
    assert abs(widths[1] / widths[0] - 2.0) < 0.02  # slow = 2 x base


def test_every_configuration_of_a_large_study_has_its_own_style() -> None:
    # The eh-study has 11 configurations: the 11th must not repeat the 1st's colour (it did).
    from perflab.reports.plots import colour, marker
    assert len({colour(i) for i in range(15)}) == 15
    assert len({(colour(i), marker(i)) for i in range(40)}) == 40


def test_history_plots_draw_through_reports(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """history's series plot is an adapter: one TimelinePanel per series for
    reports.plots.plot_timeline, each change point marked between its two points, red for a
    regression, green for an improvement, grey when ignored; a dirty tree's commit starred."""
    from perflab.history import plot as history_plot
    from perflab.history.detect import ChangePoint
    from perflab.history.series import Point, Series, SeriesKey

    key = SeriesKey("syn/b", '{"depth": 1}', "A", None, "wall_time")
    pts = [Point(result_id=i, created_at=float(i), kind="stat", commit=f"{i:02d}" + "ab" * 19,
                 dirty=i == 3, samples=[1.0], median=1.0 + (i >= 2), ci_low=0.9, ci_high=2.1)
           for i in range(4)]
    s = Series(key=key, unit="ms", points=pts)

    def cp(index: int, regression: bool, ignored: str | None = None) -> ChangePoint:
        return ChangePoint(key, index, None, None, 0, 0, 100.0 if regression else -50.0,
                           1.0, 0.0, 2.0, 0.0, 0.001, regression, ignored)

    seen: list[list[plots.TimelinePanel]] = []
    real = plots.plot_timeline
    monkeypatch.setattr(plots, "plot_timeline",
                        lambda panels, out, title=None: seen.append(list(panels)) or real(
                            panels, out, title))
    out = history_plot.plot_series([(s, [cp(2, True), cp(3, False), cp(1, True, "known")])],
                                   tmp_path / "h.png", "title")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (panel,) = seen[0]
    assert panel.ylabel == "wall_time (ms)" and panel.median == [1.0, 1.0, 2.0, 2.0]
    assert panel.labels[3].endswith("*") and not panel.labels[2].endswith("*")
    assert panel.marks == [(1.5, "+100.0%", "tab:red"), (2.5, "-50.0%", "tab:green"),
                           (0.5, "+100.0%", "tab:gray")]
    def height(name: str, panels: list[plots.TimelinePanel]) -> int:
        return int(matplotlib.image.imread(str(real(panels, tmp_path / name))).shape[0])

    assert height("two.png", [panel, panel]) > 1.6 * height("one.png", [panel])  # stacked


def test_integer_axes_tick_at_their_values_and_log_axes_read_plainly() -> None:
    """Thread axes ticked at 1.2, 1.4 and a log axis in ms labelled 2x10^0 ... 2x10^1 (issue
    25): integer parameters are ticked at their own values, log axes in plain numbers."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from perflab.reports.plots import _set_scales

    fig = Figure()
    ax = fig.subplots()
    ax.plot([1, 2], [2.0, 19.0])
    _set_scales(ax, [1, 2], [2.0, 19.0], "auto", True)
    FigureCanvasAgg(fig).draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2"]
    labels = [t.get_text() for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True)]
    assert "10" in labels and not any("10^" in t or "times" in t or "×" in t for t in labels)


def test_every_title_lies_within_its_figure(tmp_path: Path) -> None:
    """The figure's title and every panel's title, as drawn, inside the figure (the scaling and
    ratio plots' titles were cut at both sides), and a panel's inside its panel's share."""
    rs = _stored(tmp_path)
    comps = compare_result(rs, ["ns_per_op"], threshold=0.05)
    files = plots.all_plots(Analysis.of(rs, comps), ["ns_per_op"], tmp_path / "img",
                            rs.settings.suite.report or {})
    assert {"ns_per_op-scaling-threads", "ns_per_op-ratio-to-baseline"} <= {f.name for f in files}
    # One panel (a figure 5.2 inches wide) with an eh study's titles
    pts = [(d, 1.5, 1.4, 1.6) for d in (0, 10, 100)]
    words = plots.RatioWords("cpu_ns_per_op: threads=8 over threads=1 per configuration "
                             "(paired per round, 99.2-99.8% CIs, family-adjusted)",
                             "cpu_ns_per_op at threads=8 / threads=1 (x)", "one-panel")
    one = plots._ratio_plot(
        rs, {"workload=exceptions-unwinding-through-frames, kind=hardware": {"base": pts}},
        "depth", words, tmp_path / "img", "auto")
    assert one is not None
    for f in [*files, one]:
        fig = f.figure
        assert fig is not None
        fig.draw_without_rendering()
        renderer = fig._get_renderer()
        box = fig.bbox
        titles = [fig._suptitle] + [a.title for a in fig.axes if a.get_visible()]
        assert titles[0] is not None and titles[0].get_text()
        for t in titles:
            e = t.get_window_extent(renderer)
            assert box.x0 <= e.x0 and e.x1 <= box.x1 and e.y1 <= box.y1, (f.name, t.get_text())
        cols = round(box.width / min(a.get_window_extent(renderer).width
                                     for a in fig.axes if a.get_visible()) - 0.5) or 1
        for a in fig.axes:
            if a.get_visible():
                assert a.title.get_window_extent(renderer).width <= box.width / cols, f.name

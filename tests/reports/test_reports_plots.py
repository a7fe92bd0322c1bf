"""Plots from a stored run with known samples: the files, scales, labels, bands and ratios."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from test_reports_matrix import make_result  # the shared known-samples result

from perflab.model import canonical_params
from perflab.reports import plots
from perflab.stats import compare_result
from perflab.storage import Store


def _stored(tmp_path: Path):  # noqa: ANN202
    store = Store(tmp_path / "p.sqlite")
    return store.load(store.save(make_result()))


def test_all_plots_files_and_content(tmp_path: Path) -> None:
    rs = _stored(tmp_path)
    comps = compare_result(rs, ["ns_per_op"], threshold=0.05)
    out = tmp_path / "img"
    files = plots.all_plots(rs, comps, ["ns_per_op"], out, rs.settings.suite["report"])
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
    files = plots.all_plots(rs, [], ["ns_per_op"], tmp_path, {})
    assert [f.name for f in files] == ["ns_per_op-bars"]
    assert files[0].png.stat().st_size > 1000


def test_single_cell_bars_name_each_configuration(tmp_path: Path) -> None:
    rs = make_result()
    one = canonical_params({"depth": 10, "kind": "software", "threads": 1})
    rs.configurations = [c for c in rs.configurations if c.cell == one]
    files = plots.all_plots(rs, [], ["ns_per_op"], tmp_path, {})
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

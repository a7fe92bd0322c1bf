"""The HTML report of a stored run: self-contained (no network), with the tables, plots,
environment, suite and warnings; and, where chromium exists, it renders with every image loaded
and a non-blank screenshot."""

from __future__ import annotations

import csv
import html
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from test_reports_matrix import SUITE_TEXT, make_result  # the shared known-samples result

from perflab.reports.report import Report, build_report
from perflab.storage import Store

pytestmark = pytest.mark.unit

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium"
                                        if Path("/usr/bin/chromium").exists() else None)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    tmp = tmp_path_factory.mktemp("html")
    store = Store(tmp / "h.sqlite")
    rs = store.load(store.save(make_result()))
    return build_report(rs, tmp / "report")


def test_report_directory_contents(report: Report) -> None:
    out = report.out_dir
    assert report.html == out / "index.html"
    for name in ("tables.md", "results.csv", "comparisons.csv"):
        assert (out / name).stat().st_size > 100, name
    md = (out / "tables.md").read_text()
    assert "| cell | configuration | base | diff | delta | ratio" in md and "slower" in md
    assert "wall_time" in md  # every suite metric is tabled
    assert len(list((out / "img").glob("*.png"))) == 4
    assert len(list((out / "img").glob("*.svg"))) == 4


def test_html_is_self_contained_and_complete(report: Report) -> None:
    assert report.html is not None
    page = report.html.read_text()
    # No network: every src/href is relative (or an in-page anchor).
    refs = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", page)
    assert refs
    for ref in refs:
        assert not re.match(r"^[a-z]+://|^//", ref), ref
        if not ref.startswith("#"):
            assert (report.out_dir / ref).exists(), ref
    imgs = re.findall(r"<img src='([^']+)'", page)
    assert len(imgs) == 4
    # Tables with verdicts, the environment, the suite text and the warnings.
    assert "<table>" in page and "class='slower regression v'" in page
    assert "class='equivalent v'" in page
    assert "Test CPU" in page and "testhost" in page and "cpu_model" in page
    assert "# the suite text itself" in page and html.escape(SUITE_TEXT.splitlines()[1]) in page
    assert "inconclusive" in page and "would decide it" in page
    assert "skipped configuration &#x27;ghost&#x27;" in page
    assert "noisy</b>" in page
    assert "holm" in page


def chromium_flags(tmp_path: Path) -> list[str]:
    """Headless chromium, offline, its profile in ``tmp_path``, 5 s of virtual time."""
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]


def dump_dom_at_640(page: Path, flags: list[str]) -> subprocess.CompletedProcess[str]:
    """``page`` loaded in a window 640 px wide: the DOM its scripts left."""
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, *flags, "--window-size=640,900", "--dump-dom",
                           page.as_uri()], capture_output=True, text=True, timeout=90)


@pytest.mark.system
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_html_renders_in_headless_chromium(report: Report, tmp_path: Path) -> None:
    assert report.html is not None and CHROMIUM is not None
    # A copy of the page with a script that marks the DOM once every image has loaded.
    probe = report.out_dir / "probe.html"
    probe.write_text(report.html.read_text().replace("</body>", """<script>
function check() {
  const imgs = Array.from(document.images);
  const ok = imgs.length > 0 && imgs.every(i => i.complete && i.naturalWidth > 0);
  document.body.setAttribute('data-images', ok ? 'loaded-' + imgs.length : 'pending');
  // Wide tables scroll inside their box; the page itself never overflows (issue 25).
  const wide = document.documentElement.scrollWidth;
  document.body.setAttribute('data-fits', wide <= window.innerWidth + 1 ? 'yes' : 'no-' + wide);
}
window.addEventListener('load', check); check();
</script></body>"""))
    flags = chromium_flags(tmp_path)
    dom = dump_dom_at_640(probe, flags)
    assert "data-images=\"loaded-4\"" in dom.stdout, dom.stdout[-500:] + dom.stderr[-500:]
    assert "data-fits=\"yes\"" in dom.stdout, dom.stdout[-300:]
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, *flags, f"--screenshot={shot}", "--window-size=1200,1600",
                    report.html.as_uri()], capture_output=True, timeout=90)
    assert shot.exists(), "chromium wrote no screenshot"
    img = matplotlib.image.imread(shot)
    colours = np.unique(img.reshape(-1, img.shape[-1]), axis=0)
    assert len(colours) > 10  # text, tables and plots, not a blank page


@pytest.mark.system
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_verdicts_are_in_view_at_640_px(report: Report, tmp_path: Path) -> None:
    """At 640 px every verdict cell lies inside the window, beside its row, while the wide
    comparison tables scroll sideways in their boxes."""
    assert report.html is not None and CHROMIUM is not None
    probe = report.out_dir / "probe640.html"
    probe.write_text(report.html.read_text().replace("</body>", """<script>
window.addEventListener('load', () => {
  const cells = Array.from(document.querySelectorAll('td.v'));
  const out = cells.filter(c => { const r = c.getBoundingClientRect();
    return r.width <= 0 || r.left < 0 || r.right > window.innerWidth + 1; });
  const wide = Array.from(document.querySelectorAll('div.scroll'))
    .filter(d => d.scrollWidth > d.clientWidth + 1).length;
  document.body.setAttribute('data-verdicts', cells.length + '-out-' + out.length
    + '-of-' + window.innerWidth + '-wide-' + wide);
});
</script></body>"""))
    flags = chromium_flags(tmp_path)
    dom = dump_dom_at_640(probe, flags)
    m = re.search(r'data-verdicts="(\d+)-out-(\d+)-of-(\d+)-wide-(\d+)"', dom.stdout)
    assert m, dom.stdout[-500:] + dom.stderr[-500:]
    cells, out, width, wide = map(int, m.groups())
    assert width <= 640 and cells > 0 and out == 0, m.group(0)
    assert wide > 0, m.group(0)  # the check covers tables wider than the window


@pytest.mark.system
def test_single_file_report_carries_its_images(tmp_path: Path) -> None:
    """--single-file: one HTML file, plots inlined as data URIs, no reference to any file."""
    store = Store(tmp_path / "s.sqlite")
    rs = store.load(store.save(make_result()))
    rep = build_report(rs, tmp_path / "report", single_file=True)
    assert rep.single_file is not None and rep.single_file.name == f"perflab-run-{rs.id}.html"
    alone = tmp_path / "elsewhere" / "attached.html"  # as if downloaded from an issue
    alone.parent.mkdir()
    alone.write_bytes(rep.single_file.read_bytes())
    page = alone.read_text()
    refs = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", page)
    assert refs and all(r.startswith(("#", "data:image/png;base64,")) for r in refs), refs
    assert len(re.findall(r"<img src='data:image/png;base64,", page)) == 4
    if CHROMIUM is None:
        pytest.skip("chromium not installed")
    probe = alone.with_name("probe.html")
    probe.write_text(page.replace("</body>", """<script>
const imgs = Array.from(document.images);
window.addEventListener('load', () => document.body.setAttribute('data-images',
  imgs.every(i => i.complete && i.naturalWidth > 0) ? 'loaded-' + imgs.length : 'broken'));
</script></body>"""))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", f"--user-data-dir={tmp_path / 'profile'}",
             "--virtual-time-budget=5000"]
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", probe.as_uri()], capture_output=True,
                         text=True, timeout=90)
    assert "data-images=\"loaded-4\"" in dom.stdout, dom.stdout[-500:] + dom.stderr[-500:]


def test_markdown_has_the_regression_and_the_abc_tables(report: Report) -> None:
    md = report.markdown
    assert "| cell | configuration | base | diff | delta | ratio" in md
    # Ingo's table: metrics as rows, configurations as columns, a delta per configuration
    assert "| metric | base (base) | slow | Δ slow | same | Δ same |" in md
    assert "\n| ns_per_op | " in md and "\n| wall_time | " in md
    assert (report.out_dir / "tables.md").read_text() == md


def test_comparisons_csv_has_numbers_beside_the_text(report: Report) -> None:
    with (report.out_dir / "comparisons.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    with (report.out_dir / "results.csv").open(newline="") as f:
        medians = {(r["metric"], r["configuration"], r["median"]) for r in csv.DictReader(f)}
    assert rows
    for r in rows:
        assert r["diff"] and r["base"]  # the formatted columns stay, as printed
        ratio, low, high = (float(r[k]) for k in ("ratio_value", "ratio_ci_low",
                                                   "ratio_ci_high"))
        assert low <= ratio <= high
        assert float(r["diff_ci_low"]) <= float(r["diff_median"]) <= float(r["diff_ci_high"])
        assert float(r["change_pct"]) == pytest.approx((ratio - 1) * 100)
        # The values shown beside the change are what it is made of.
        assert float(r["diff_value"]) == pytest.approx(float(r["base_value"]) * ratio)
        assert r["unit"] and r["decision"] in r["verdict"]
        # The same numbers results.csv holds for the configuration and its baseline.
        assert (r["metric"], r["configuration"], r["diff_median"]) in medians
        assert (r["metric"], r["baseline"], r["base_median"]) in medians

"""Running suites: one measure() per cell, every run saved, --resume after an interruption
measures no cell twice and loses none; --dry-run measures nothing."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import perflab.runner
from cli_helpers import two_config_suite
from perflab.cli.suites import register
from perflab.errors import PerflabError
from perflab.reports.matrix import suite_view
from perflab.runner import Watchers
from perflab.storage import Store
from perflab.suites.execute import history_per_run, run_plan
from perflab.suites.plan import make_plan
from perflab.suites.spec import load_suite

pytestmark = pytest.mark.measure

SUITE = two_config_suite("tiny", 3, [1, 2, 3], ["true", "{n}"], ["PY", "-c", "pass", "{n}"])


REAL_MEASURE = perflab.runner.measure


@pytest.fixture()
def suite_file(tmp_path: Path) -> Path:
    p = tmp_path / "tiny.toml"
    p.write_text(SUITE.replace("PY", sys.executable))
    return p


def interrupt_after(monkeypatch: pytest.MonkeyPatch, n_runs: int) -> list[int]:
    """Make the n-th run overall raise KeyboardInterrupt, as Ctrl-C would."""
    real = perflab.runner.measure
    count = [0]

    def on_run(cfg: Any, run: Any) -> None:
        count[0] += 1
        if count[0] == n_runs:
            raise KeyboardInterrupt

    def fake(rs: Any, configs: Any, opts: Any, store: Any = None,
             watchers: Watchers | None = None, **kw: Any) -> Any:
        return real(rs, configs, opts, store, replace(watchers or Watchers(), on_run=on_run), **kw)

    monkeypatch.setattr(perflab.runner, "measure", fake)
    return count


def test_resume_after_interruption(suite_file: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "r.sqlite")
    plan = make_plan(load_suite(suite_file))
    assert len(plan.cells) == 3
    # 2 configurations x 3 runs = 6 runs a cell: stop in the middle of the second cell.
    interrupt_after(monkeypatch, 6 + 2)
    first = run_plan(plan, store, progress=False)
    assert first.interrupted
    rid = first.rs.id
    assert rid is not None
    stored = store.load(rid)
    assert stored.status == "interrupted"
    info = stored.settings.suite
    assert len(info.done) == 1
    # The partial cell's 2 runs are kept in the store, marked superseded.
    partial = [c for c in stored.configurations if c.id in info.superseded]
    assert sum(len(c.runs) for c in partial) == 2
    done_ids = {c.id for c in stored.configurations if c.cell == info.done[0]}

    monkeypatch.setattr(perflab.runner, "measure", REAL_MEASURE)
    second = run_plan(make_plan(load_suite(suite_file)), store, resume=rid, progress=False)
    assert not second.interrupted
    assert second.measured == 2 and second.skipped_done == 1
    final = store.load(rid)
    assert final.status == "complete"
    assert sorted(final.settings.suite.done) == sorted(c.key for c in plan.cells)
    view = suite_view(final)
    # Every cell exactly once, each configuration with its 3 runs; the finished cell untouched.
    assert len(view.cells()) == 3
    for cell in view.cells():
        cfgs = view.configurations_in(cell)
        assert sorted(c.name for c in cfgs) == ["a", "b"]
        assert all(len(c.samples("wall_time")) == 3 for c in cfgs)
    assert done_ids <= {c.id for c in view.configurations}
    # Nothing recorded was lost: the superseded partial runs are still in the store.
    assert len(final.configurations) == len(view.configurations) + len(partial)
    # The next dry run estimates from this history: one wall time per exact command.
    hist = history_per_run(store, plan)
    # by command line and by (configuration, cell) of the same suite: 6 of each
    assert len(hist) == 12 and all(0 < v < 5 for v in hist.values())
    assert plan.estimate_seconds(hist) < plan.estimate_seconds({})  # default: 1 s a run


def test_resume_refuses_a_different_suite(suite_file: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "r.sqlite")
    interrupt_after(monkeypatch, 2)
    rid = run_plan(make_plan(load_suite(suite_file)), store, progress=False).rs.id
    suite_file.write_text(suite_file.read_text().replace("n = [1, 2, 3]", "n = [1, 2, 4]"))
    with pytest.raises(PerflabError, match="different suite"):
        run_plan(make_plan(load_suite(suite_file)), store, resume=rid, progress=False)


def test_failed_cell_does_not_stop_the_study(tmp_path: Path) -> None:
    p = tmp_path / "f.toml"
    p.write_text(SUITE.replace("PY", sys.executable).replace(
        'command = ["true", "{n}"]', 'command = ["sh", "-c", "test {n} != 2"]'))
    store = Store(tmp_path / "r.sqlite")
    out = run_plan(make_plan(load_suite(p)), store, progress=False)
    final = store.load(out.rs.id)
    assert final.status == "failed"
    info = final.settings.suite
    assert len(info.done) == 2 and len(info.failed) == 1
    assert '"n":2' in info.failed[0]["cell"]
    assert len(suite_view(final).cells()) == 2


def test_cli_dry_run_and_run_report(suite_file: Path, tmp_path: Path) -> None:
    app = typer.Typer()
    register(app)
    app.command("noop")(lambda: None)  # a second command keeps typer in multi-command mode
    runner = CliRunner()
    db = tmp_path / "cli.sqlite"
    res = runner.invoke(app, ["run", str(suite_file), "--db", str(db), "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "3 cells" in res.output and "estimated time" in res.output
    assert not db.exists()  # a dry run measures and stores nothing
    out = tmp_path / "rep"
    res = runner.invoke(app, ["run", str(suite_file), "--db", str(db), "--out", str(out),
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    assert f"report: {out / 'index.html'}" in res.output
    assert (out / "index.html").exists() and (out / "results.csv").exists()
    rid = Store(db).result_ids()[-1]
    res = runner.invoke(app, ["report", str(rid), "--db", str(db), "--out",
                              str(tmp_path / "rep2"), "--no-plots"])
    assert res.exit_code == 0, res.output
    assert "wall_time" in res.output


def test_result_json_html_and_markdown_state_the_suites_own_threshold_and_correction(
        tmp_path: Path) -> None:
    # reports/report.py hands the suite's plan to result_to_json: result.json states the
    # suite's own threshold and correction, not holm and 1%.
    app = typer.Typer()
    register(app)
    app.command("noop")(lambda: None)
    p = tmp_path / "t.toml"
    p.write_text(SUITE.replace("PY", sys.executable).replace(
        'baseline = "a"', 'baseline = "a"\nthreshold = 0.05\ncorrection = "bh"'))
    out = tmp_path / "rep"
    res = CliRunner().invoke(app, ["run", str(p), "--db", str(tmp_path / "r.sqlite"),
                                   "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "result.json").read_text())
    assert (doc["threshold"], doc["correction"]) == (0.05, "bh")
    # The page and the Markdown say the same (issue 24: 0.05 in result.json, HTML, Markdown).
    page = (out / "index.html").read_text()
    primary = "one family for the primary across the run (bh)"
    assert "verdicts against the bands time ±5%" in page and primary in page
    md = (out / "tables.md").read_text()
    assert "verdicts against the bands time ±5%" in md and primary in md


def test_a_mistake_every_cell_would_repeat_stops_the_study(tmp_path: Path) -> None:
    p = tmp_path / "m.toml"
    p.write_text(SUITE.replace("PY", sys.executable)
                 .replace('metrics = ["wall_time"]', 'primary = "no_such_metric"')
                 .replace("runs = 3", "min_runs = 2\nmax_runs = 3"))
    store = Store(tmp_path / "r.sqlite")
    with pytest.raises(PerflabError, match="no_such_metric"):
        run_plan(make_plan(load_suite(p)), store, progress=False)
    rid = store.result_ids()[-1]
    final = store.load(rid)
    assert final.status == "failed"
    assert final.settings.suite.done == []
    # Only the first cell was attempted; its runs are kept but out of the analysis.
    assert len({c.cell for c in final.configurations}) == 1
    assert suite_view(final).configurations == []

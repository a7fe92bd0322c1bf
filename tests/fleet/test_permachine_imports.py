"""ResultsComparer's per-machine table from imported harness files: BenchmarkDotNet's full JSON
from five machines (base and diff each), one row per machine with its OS, architecture and
CPU, base, diff, ratio [CI], verdict, alloc delta and modality; in the terminal, Markdown and
HTML, from stored imports (perflab report IDS) and from files compared in memory
(perflab compare --import)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from perflab.cli import app
from perflab.fleet.permachine import Block, PerMachine, build, render_html, render_markdown
from perflab.imports import import_file
from perflab.storage import Store

pytestmark = pytest.mark.unit

BDN = Path(__file__).parents[1] / "fixtures" / "imports" / "benchmarkdotnet"
MACHINES = sorted(p.name for p in BDN.iterdir() if p.is_dir())
SORT = "Perflab.Fixture.StringOps.Sort(Size: 1000)"
CONCAT = "Perflab.Fixture.StringOps.Concat(Size: 256)"


def _files(side: str) -> list[Path]:
    return [f for m in MACHINES for f in sorted((BDN / m / side).glob("*-report-full.json"))]


def _table() -> PerMachine:
    return build([import_file(f, None) for f in _files("base") + _files("diff")])


def _block(pm: PerMachine, bench: str) -> Block:
    return next(b for b in pm.blocks if b.cell == bench)


def test_five_machines_give_one_row_each_with_alloc_delta_and_modality() -> None:
    pm = _table()
    assert len(MACHINES) == 5 and len(pm.machines) == 5
    sort = _block(pm, SORT)
    assert (sort.baseline, sort.candidate) == ("base", "diff")
    assert sort.has_alloc and sort.has_modality and len(sort.rows) == 5
    by_cpu = {pm.identity[r.machine].cpu: r for r in sort.rows}
    # debian-arm64's Sort has two modes 35% apart in both files; the other machines' one
    flagged = {cpu for cpu, r in by_cpu.items() if "bimodal" in (r.modality or "")}
    assert flagged == {"Ampere Altra"}
    assert by_cpu["Ampere Altra"].modality == "bimodal (base), bimodal (diff)"
    # Concat(Size: 256): 5% slower and fewer bytes per op in the diff files, on every machine
    concat = _block(pm, CONCAT)
    assert all(r.comparison is not None and r.comparison.ratio > 1.02 for r in concat.rows)
    assert all(r.alloc is not None and r.alloc.cand_center < r.alloc.base_center
               for r in concat.rows)
    assert {pm.identity[m].arch for m in pm.machines} == {"x86_64", "aarch64"}


def test_markdown_and_html_carry_the_columns(tmp_path: Path) -> None:
    pm = _table()
    md = render_markdown(pm)
    head = next(line for line in md.splitlines()
                if line.startswith("| machine") and "alloc delta" in line)
    assert all(h in head for h in ("OS", "arch", "CPU", "base (base)", "diff (diff)",
                                   "ratio [95% CI]", "verdict", "modality (ns_per_op)"))
    sort_rows = md.split(f"[{SORT}]")[1].split("###")[0]
    assert sort_rows.count("bimodal") == 2 and "Ampere Altra" in sort_rows
    assert "perflab compare --import" in md  # each machine's files compared again
    page = render_html(pm, tmp_path / "out").read_text()
    assert "alloc delta</th>" in page and "bimodal (diff)" in page


def test_report_of_stored_imports_pairs_base_and_diff_per_machine(tmp_path: Path) -> None:
    db = str(tmp_path / "r.sqlite")
    store = Store(db)
    # as perflab import stores them: the base files, then the diff files
    ids = [str(store.save(import_file(f, None))) for f in _files("base") + _files("diff")]
    res = CliRunner().invoke(app, ["report", *ids, "--db", db, "--markdown",
                                   "--out", str(tmp_path / "rep")], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("**5 machines**")
    sort_rows = res.stdout.split(f"[{SORT}]")[1].split("###")[0]
    assert sort_rows.split("```")[0].count("bimodal") == 2
    assert "alloc delta" in sort_rows


def test_compare_import_of_several_machines_shows_them_side_by_side(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["compare", "--db", str(tmp_path / "c.sqlite"), "--import",
                                   *map(str, _files("base") + _files("diff"))],
                             env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    assert res.output.startswith("5 machines") and "alloc delta" in res.output
    assert "modality (ns_per_op)" in res.output

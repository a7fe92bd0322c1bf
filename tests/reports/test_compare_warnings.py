"""A compare of many configurations says its warnings one line per kind, each with its count
(of how many configurations), whom it names and what to do; the noise rule flags the
configuration that is noisier than its peers, not every one of a workload that varies by 6%."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perflab.cli import app
from perflab.metrics import BUILTIN_METRICS
from perflab.model import Configuration, ResultSet, Run
from perflab.reports.analysis import Analysis
from perflab.reports.warnings import WarningKind, result_warnings
from perflab.storage import Store

pytestmark = pytest.mark.unit

# one spread pattern (CV about 6%), each configuration's a little wider than the one before
PATTERN = (-1.0, -0.6, -0.2, 0.2, 0.6, 1.0, -0.8, 0.8, 0.0, 0.4)


def _compare(noisy: str | None, outliers: tuple[str, ...]) -> ResultSet:
    """Twelve configurations run in the same rounds; ``noisy`` varies five times as much as the
    others; each of ``outliers`` has one run 60% above the rest."""
    rs = ResultSet(kind="compare", status="complete",
                   settings={"interleaved": True, "primary_metric": "task_clock"},
                   metrics={"task_clock": BUILTIN_METRICS["task_clock"]})
    names = [f"c{k}" for k in range(12)]
    for k, name in enumerate(names):
        amp = (0.5 if name == noisy else 0.1) * (1 + k / 50)
        values = [1e-3 * (1 + k / 100) * (1 + amp * d) for d in PATTERN]
        if name in outliers:
            values[8] *= 1.6
        cfg = Configuration(name=name, command=[name], is_baseline=k == 0)
        cfg.runs = [Run(seq=i * 12 + k, values={"task_clock": v}) for i, v in enumerate(values)]
        rs.configurations.append(cfg)
    return rs


def _shown(tmp_path: Path, rs: ResultSet) -> tuple[list[str], list[str]]:
    """`results show` of the stored result at 120 columns: its lines, and its warnings (a long
    one wraps onto the next screen line)."""
    db = tmp_path / "r.sqlite"
    rid = Store(db).save(rs)
    r = CliRunner().invoke(app, ["results", "show", str(rid), "--db", str(db)],
                           env={"COLUMNS": "120"})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    text = r.output
    starts = [m.start() for m in re.finditer(r"^warning: ", text, re.M)]
    warns = [text[a:b].replace("\n", " ").removeprefix("warning: ").strip()
             for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    return lines, warns


def _counted_with_action(w: str) -> None:
    kinds = "|".join(k.value for k in WarningKind)
    assert re.match(rf"({kinds}): \d+ of 12 configurations ", w), f"no count: {w}"
    head, _, action = w.rpartition("; ")
    assert head and len(action.split()) >= 3, f"no action: {w}"


def test_many_configurations_warn_once_per_kind(tmp_path: Path) -> None:
    rs = _compare(noisy="c7", outliers=("c2", "c3", "c9"))
    lines, warns = _shown(tmp_path, rs)
    assert all(len(ln) <= 120 for ln in lines)
    # each configuration's warning is kept for the exports; the terminal counts them by kind
    each = result_warnings(Analysis.of(rs))
    assert sum("statistical outlier" in w for w in each) == 3
    kinds = [w.split(":", 1)[0] for w in warns if w.startswith(("noisy:", "outliers:"))]
    assert sorted(kinds) == ["noisy", "outliers"], warns
    (out,) = [w for w in warns if w.startswith("outliers:")]
    _counted_with_action(out)
    assert out.startswith("outliers: 3 of 12 configurations") and "c2 1, c3 1, c9 1" in out
    (noisy,) = [w for w in warns if w.startswith("noisy:")]
    _counted_with_action(noisy)
    assert "this run's limit" in noisy and re.search(r"\bc7 \d", noisy), noisy
    assert not re.search(r"\bc1 \d", noisy), noisy  # a quiet one is not named


def test_a_workload_that_always_varies_is_said_once_not_flagged(tmp_path: Path) -> None:
    rs = _compare(noisy=None, outliers=())
    each = result_warnings(Analysis.of(rs))
    assert not [w for w in each if "varies a lot" in w], each  # every CV is above 5%
    _, warns = _shown(tmp_path, rs)
    (noisy,) = [w for w in warns if w.startswith("noisy:")]
    assert noisy.startswith("noisy: 0 of 12 configurations") and "the median CV is" in noisy
    assert noisy.endswith("more runs narrow the CIs"), noisy

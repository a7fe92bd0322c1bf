"""The per-machine comparison (ResultsComparer-style) on known samples: each machine judged on
its own, missing configurations shown as missing, the summary line, the HTML view (rendered by
chromium where it exists), and compare --from-db / report over results of several machines."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from perflab.cli import app
from perflab.fleet.permachine import build, machines_differ, render_html
from perflab.metrics import BUILTIN_METRICS
from perflab.model import Configuration, ResultSet, Run
from perflab.storage import Store

pytestmark = pytest.mark.unit

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium"
                                        if Path("/usr/bin/chromium").exists() else None)


def machine_result(name: str, ratios: dict[str, float], seed: int, noise: float = 0.002,
                   n: int = 12) -> ResultSet:
    """A compare result of machine NAME: baseline A (1 s) and each candidate at its ratio."""
    rng = np.random.default_rng(seed)
    rs = ResultSet(kind="compare", fingerprint={"hostname": "host-" + name, "cpu_model": name,
                                                "cpu_count": 4, "machine_name": name},
                   metrics={"wall_time": BUILTIN_METRICS["wall_time"]}, status="complete",
                   settings={"primary_metric": "wall_time", "interleaved": False})
    for cname, ratio in {"A": 1.0, **ratios}.items():
        cfg = Configuration(name=cname, command=["x", cname], benchmark="x", cell="{}",
                            is_baseline=cname == "A")
        cfg.runs = [Run(seq=i, values={"wall_time": float(ratio * (1 + noise * z))})
                    for i, z in enumerate(rng.standard_normal(n))]
        rs.configurations.append(cfg)
    return rs


@pytest.fixture
def three(tmp_path: Path) -> tuple[Store, list[int]]:
    store = Store(tmp_path / "m.sqlite")
    ids = [store.save(machine_result("fast", {"B": 1.20, "C": 1.0}, 1)),
           store.save(machine_result("slow", {"B": 1.10, "C": 1.0}, 2)),
           store.save(machine_result("arm", {"B": 0.90}, 3))]  # arm never ran C
    return store, ids


def test_one_row_per_machine_judged_on_its_own(three: tuple[Store, list[int]]) -> None:
    store, ids = three
    results = [store.load(i) for i in ids]
    assert machines_differ(results)
    pm = build(results)
    assert pm.machines == ["arm", "fast", "slow"]  # sorted by name: a stable row order
    b = next(x for x in pm.blocks if x.candidate == "B")
    verdicts = {r.machine: r.comparison.verdict for r in b.rows if r.comparison}
    assert verdicts == {"fast": "slower", "slow": "slower", "arm": "faster"}
    ratios = {r.machine: r.comparison.ratio for r in b.rows if r.comparison}
    assert ratios["fast"] == pytest.approx(1.20, rel=0.02)
    assert ratios["arm"] == pytest.approx(0.90, rel=0.02)
    # each machine's own samples: its n is its own 12 runs, never 36
    assert all(r.comparison.n_baseline == 12 for r in b.rows if r.comparison)
    gm = math.exp(sum(math.log(r) for r in ratios.values()) / 3)
    s = b.summary()
    assert s.startswith("slower on 2 of 3 machines; faster on 1")
    assert f"geometric mean of the ratios {gm:.3f}x" in s
    assert f"machines from {(min(ratios.values()) - 1) * 100:+.2f}%" in s
    c = next(x for x in pm.blocks if x.candidate == "C")
    missing = [r.machine for r in c.rows if r.comparison is None]
    assert missing == ["arm"] and "missing on 1" in c.summary()
    assert "equivalent on 2" in c.summary() and c.summary().startswith("slower on 0 of 2")


@pytest.mark.system
def test_html_view_has_the_same_rows(three: tuple[Store, list[int]], tmp_path: Path) -> None:
    store, ids = three
    pm = build([store.load(i) for i in ids])
    page = render_html(pm, tmp_path / "out")
    text = page.read_text()
    assert text.count("<h2>") == 2 and "missing" in text
    assert "slower on 2 of 3 machines" in text and "class='l slower'" in text
    assert "://" not in text  # self-contained
    if CHROMIUM is None:
        pytest.skip("chromium not installed")
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                          f"--user-data-dir={tmp_path / 'p'}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=90)
    assert dom.stdout.count("<tr>") == 2 + 6, dom.stderr[-400:]  # 2 heads + 3 + 3 rows
    assert "slower on 2 of 3 machines" in dom.stdout


def test_compare_from_db_across_machines_is_side_by_side(three: tuple[Store, list[int]],
                                                          tmp_path: Path) -> None:
    store, ids = three
    args = ["--db", store.location]
    for i in ids:
        args += ["--from-db", str(i)]
    res = CliRunner().invoke(app, ["compare", *args], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "3 machines" in res.output and "slower on 2 of 3 machines" in res.output
    assert "never pooled" in res.output
    # the CI gate holds per machine: B is slower on fast and slow, so it fails, naming them
    gate = CliRunner().invoke(app, ["compare", *args, "--fail-on-regression"],
                              env={"COLUMNS": "200"})
    assert gate.exit_code == 1, gate.output
    assert "regression" in gate.output and "fast" in gate.output and "slow" in gate.output
    # C is the same everywhere: the gate passes when only it is judged against A
    store2 = Store(tmp_path / "eq.sqlite")
    same = [store2.save(machine_result(m, {"C": 1.0}, k)) for k, m in enumerate(["x", "y"])]
    ok = CliRunner().invoke(app, ["compare", "--db", store2.location, "--from-db", str(same[0]),
                                  "--from-db", str(same[1]), "--fail-on-regression"],
                            env={"COLUMNS": "200"})
    assert ok.exit_code == 0, ok.output
    # exports are of one result: refused in one line before anything is written
    exp = CliRunner().invoke(app, ["compare", *args, "--export-json",
                                   str(tmp_path / "x.json")], env={"COLUMNS": "200"})
    assert exp.exit_code != 0 and "several machines" in str(exp.exception)
    assert not (tmp_path / "x.json").exists()
    rep = CliRunner().invoke(app, ["report", *map(str, ids), "--db", store.location, "--out",
                                   str(tmp_path / "rep")], env={"COLUMNS": "200"})
    assert rep.exit_code == 0, rep.output
    assert (tmp_path / "rep" / "machines.html").exists()
    assert "missing" in rep.output


def test_a_relative_program_is_refused_at_submit(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 20: `fleet submit --all -- compare './spin-base' './spin-cand'` was accepted, then
    # every job failed 47 s later with "command not found" in the worker's fresh directory.
    from perflab.errors import PerflabError
    from perflab.fleet.queue import validate_verb

    monkeypatch.chdir(tmp_path)
    (tmp_path / "spin-base").write_text("")
    with pytest.raises(PerflabError) as e:
        validate_verb(["compare", "-n", "main", "-n", "pr", "./spin-base", "./spin-cand"])
    assert "names ./spin-base, a path relative to this directory" in e.value.problem
    assert f"absolute path ({tmp_path / 'spin-base'})" in e.value.fix
    with pytest.raises(PerflabError, match=r"names \./spin-cand") as e:
        validate_verb(["stat", "./spin-cand --n 5"])
    assert "does not exist here either" in e.value.fix
    # Not a program's path: an option's value, a word inside a shell script.
    assert validate_verb(["compare", "/bin/true", "true --flag=./x"]) == {}
    assert validate_verb(["stat", "--", "sh", "-c", "cd /tmp && ./prog"]) == {}

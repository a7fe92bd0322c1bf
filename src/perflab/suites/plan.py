"""From a validated suite to a plan: the matrix cells, and per cell the commands to measure.

Workload configurations are resolved through the workload registry (``perflab.workloads``).
A configuration whose workload is not available on this machine (not registered, or a tool it
requires is missing) is *skipped with one line* when ``[suite] unavailable = "skip"`` (the
default) and refused when it is ``"error"``; a value a workload rejects (``kind = "hardware"``
for a runtime that has no hardware kind) skips that (configuration, cell) pair the same way.
Bad suite text, by contrast, is always an error: a suite never runs half-valid.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
import subprocess
from dataclasses import dataclass, field
from typing import Any

from perflab.errors import PerflabError
from perflab.format import fmt_count
from perflab.model import canonical_params
from perflab.suites.spec import ConfigSpec, Suite, expand_matrix, substitute


@dataclass
class PlannedConfig:
    name: str
    argv: list[str]
    env: dict[str, str]
    shell: bool
    benchmark: str
    is_baseline: bool
    # What made argv, so a calibrated iteration count can make it again (suites/calibrate.py).
    spec: ConfigSpec | None = field(default=None, repr=False, compare=False)
    workload: Any = field(default=None, repr=False, compare=False)
    params: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def calibratable(self) -> bool:
        """A workload configuration whose workload takes an iteration count."""
        params = getattr(self.workload, "params", None) or {}
        return self.workload is not None and "iterations" in params

    def argv_with(self, iterations: int) -> list[str]:
        assert self.spec is not None
        argv, _, _ = _command_for(self.spec, {**self.params, "iterations": iterations},
                                  self.workload)
        return argv

    def start_iterations(self) -> int:
        v = {**(self.spec.params if self.spec else {}), **self.params}.get("iterations")
        return int(v) if isinstance(v, int | float) and v > 0 else 1000


@dataclass
class Cell:
    params: dict[str, Any]
    configs: list[PlannedConfig]

    @property
    def key(self) -> str:
        return canonical_params(self.params)


@dataclass
class SuitePlan:
    suite: Suite
    cells: list[Cell]
    skipped: list[str] = field(default_factory=list)  # one line per skipped configuration

    @property
    def n_configs(self) -> int:
        return sum(len(c.configs) for c in self.cells)

    def fingerprint(self) -> str:
        """Identity of the plan (cells and commands), to refuse resuming a different suite."""
        blob = [(c.key, [(p.name, p.argv) for p in c.configs]) for c in self.cells]
        return hashlib.sha256(json.dumps(blob).encode()).hexdigest()[:16]

    @property
    def compared_axes(self) -> list[str]:
        """The matrix parameters the report divides cells by: [report] kinds' parameter and the
        scaling parameter (threads, unless it is the x axis).  Cells that differ only in these
        are measured in the same rounds (groups), so those ratios are paired, not cells
        measured minutes apart (where load drift reads as a 0.70-0.75x thread scaling)."""
        rep = self.suite.report
        names = {a.name for a in self.suite.axes}
        out = [rep["kinds"]["param"]] if rep.get("kinds") else []
        scaling = rep.get("scaling", "threads")
        if scaling != rep.get("x") and scaling not in out:
            out.append(scaling)
        return [a for a in out if a in names]

    def groups(self, cells: list[Cell]) -> list[list[Cell]]:
        """``cells`` in measurement groups: those equal but for the compared axes together,
        in plan order."""
        axes = self.compared_axes
        out: dict[str, list[Cell]] = {}
        for c in cells:
            out.setdefault(canonical_params({k: v for k, v in c.params.items()
                                             if k not in axes}), []).append(c)
        return list(out.values())

    def runs_per_config(self) -> int:
        m = self.suite.measure
        if "runs" in m:
            return int(m["runs"])
        return int(m.get("min_runs", 5))

    @property
    def calibrate(self) -> float | None:
        """Target timed-region seconds per run ([measure] calibrate), or None."""
        v = self.suite.measure.get("calibrate")
        return float(v) if v else None

    def run_seconds(self, cell: Cell, p: PlannedConfig,
                    per_run: dict[str, float] | None = None, speed: Speed | None = None) -> float:
        """Expected wall time of one run of ``p`` in ``cell``.

        Earlier runs of the same configuration and cell (or the same command) in the store
        win.  Otherwise: with calibration, the target region plus the runtime's start-up
        (measured now when ``speed`` has it, else RUNTIME_START_S at the current slowdown);
        without, one whole run measured now when ``speed`` has it, else expected_run_s at the
        current slowdown."""
        hist = per_run or {}
        for key in (history_key(p.name, cell.key), shlex.join(p.argv)):
            if key in hist:
                return hist[key]
        if self.calibrated(p):
            return self.calibrate + self.start_seconds(p, speed)
        speed = speed or Speed()
        if p.name in speed.run_s:
            return speed.run_s[p.name]
        return float(self.suite.measure.get("expected_run_s", 1.0)) * speed.slowdown

    def calibrated(self, p: PlannedConfig) -> bool:
        """Whether ``p``'s iteration count is calibrated per cell (suites/calibrate.py)."""
        return bool(self.calibrate) and p.calibratable()

    @staticmethod
    def start_seconds(p: PlannedConfig, speed: Speed | None = None) -> float:
        """Seconds one run of ``p`` spends outside its timed region (start-up, warm-up)."""
        speed = speed or Speed()
        if p.name in speed.start_s:
            return speed.start_s[p.name]
        return runtime_start_s(p.benchmark) * speed.slowdown

    def cell_seconds(self, cell: Cell, per_run: dict[str, float] | None = None,
                     speed: Speed | None = None) -> float:
        """Seconds one cell should take: per configuration, the calibration probes and the
        warm-up and measured runs times the time per run plus perflab's own cost per run;
        capped by the cell's budget."""
        m = self.suite.measure
        speed = speed or Speed()
        n = self.runs_per_config() + int(m.get("warmup", 1))
        hist = per_run or {}
        t = PERFLAB_PER_CELL_S * speed.slowdown
        for p in cell.configs:
            t += n * (self.run_seconds(cell, p, per_run, speed)
                      + PERFLAB_PER_RUN_S * speed.slowdown)
            if self.calibrated(p) and (
                    p.is_baseline or m.get("calibrate_on") != "baseline"):
                # The probes took this long last time; else one probe at the suite's count
                # and one near the target.
                t += hist.get(probe_key(p.name, cell.key),
                              2 * self.start_seconds(p, speed) + self.calibrate)
        if "budget" in m:
            t = min(t, float(m["budget"]))
        return t

    def estimate_seconds(self, per_run: dict[str, float] | None = None,
                         speed: Speed | None = None) -> float:
        """Seconds the plan's measurement should take: perflab's start, the start-up launches
        of suites/estimate.py, and every cell (cell_seconds); the report is report_seconds."""
        speed = speed or Speed()
        return (PERFLAB_START_S * speed.slowdown + speed.probe_s
                + sum(self.cell_seconds(c, per_run, speed) for c in self.cells))

    def report_plots(self) -> int:
        """How many plots the run's report draws (reports/plots.all_plots, from the plan): per
        plotted metric, values and ratios against the x axis, the scaling and the kinds
        panels where the matrix has those axes; one bar chart without an x axis."""
        rep = self.suite.report
        axes = {a.name: len(a.values) for a in self.suite.axes}
        metrics = len([m for m in rep.get("metrics", [])
                       if not self.suite.metrics or m in self.suite.metrics]) or 1
        x = rep.get("x") or next((a for a, n in axes.items() if n > 1), None)
        if x is None or axes.get(x, 0) < 2:
            return metrics
        scaling = rep.get("scaling", "threads")
        kinds = (rep.get("kinds") or {}).get("param")
        per = 2 + (scaling != x and axes.get(scaling, 0) > 1) + (axes.get(kinds, 0) > 1)
        return metrics * per

    def report_seconds(self, speed: Speed | None = None) -> float:
        """Seconds writing the report should take: its start, a table row per configuration
        series and metric, and each plot (PNG and SVG), at the machine's current slowdown."""
        speed = speed or Speed()
        rows = self.n_configs * max(1, len(self.suite.metrics))
        return speed.slowdown * (REPORT_START_S + rows * REPORT_ROW_S
                                 + self.report_plots() * (PLOT_S + PLOT_SERIES_S * self.n_configs))


@dataclass
class Speed:
    """How fast the machine is now, for estimates (measured by suites/estimate.measure_speed).

    ``slowdown`` is wall seconds per CPU second a single thread gets now: 1 on a quiet machine,
    about 1.5 beside two busy neighbours on 2 CPUs; perflab's own costs and the start-ups not
    measured are scaled by it, and so is a suite's expected_run_s.  ``start_s``: per
    configuration name, the seconds one launch spent outside the timed region, measured now.
    ``run_s``: per configuration name, the seconds one whole run took, measured now (a dry
    run's estimate of a workload that is not calibrated: its start-up, JIT and measured work
    at this load)."""

    slowdown: float = 1.0
    start_s: dict[str, float] = field(default_factory=dict)
    run_s: dict[str, float] = field(default_factory=dict)
    probe_s: float = 0.0  # what measuring start_s took (a run measures them too)


# Per-run cost outside the command: perflab's launcher, counters, region fifos and a database
# row (benchmarks/run_all.py measures 3-4 ms a run on `true`, more on a busy machine).
PERFLAB_PER_RUN_S = 0.01
# perflab's own start (imports, suite checks, workload build checks, machine fingerprint) and
# per cell (a measure() call: counter probe, result updates), measured on the project's machine.
PERFLAB_START_S = 2.0
PERFLAB_PER_CELL_S = 0.1
# Writing the report on the project's quiet 2-vCPU machine (benchmarks/estimate.py): its start
# (imports, statistics), a table row, and a plot: a fixed part and a part per configuration
# series drawn in it.
REPORT_START_S = 1.5
REPORT_ROW_S = 0.01
PLOT_S = 0.25
PLOT_SERIES_S = 0.01

# Start-up and in-process warm-up of a workload run outside its timed region, by runtime
# (median of wall_time - region time over two `make demo` runs on the project's quiet 2-vCPU
# machine at load about 1; at load 7-20 they are 1.5-3.5x these): used for estimates when a
# start-up could not be measured at the start of the run (suites/estimate.py) and a suite has
# no history.
RUNTIME_START_S = {"java": 0.13, "node": 0.15, "python": 0.08, "csharp": 0.07, "go": 0.005}
NATIVE_START_S = 0.005


def runtime_start_s(benchmark: str) -> float:
    """Start-up seconds of a workload named family/runtime (eh/java -> java)."""
    runtime = benchmark.rsplit("/", 1)[-1]
    return RUNTIME_START_S.get(runtime, NATIVE_START_S)


def probe_key(config: str, cell_key: str) -> str:
    """Key of a configuration's calibration probes in a cell (seconds they took)."""
    return f"probe\x00{config}\x00{cell_key}"


def history_key(config: str, cell_key: str) -> str:
    """Key of a configuration in a cell, for estimates from earlier runs of a suite."""
    return f"{config}\x00{cell_key}"


# -- the workload registry, through the documented entry point ----------------------------------
class WorkloadUnavailable(Exception):
    """Why a configuration's workload cannot run here, and (``fix``) what makes it run."""

    def __init__(self, problem: str, fix: str = "") -> None:
        super().__init__(problem)
        self.fix = fix


def resolve_workload(name: str) -> Any:
    """The registry's workload object, or WorkloadUnavailable with a one-line reason."""
    from perflab import workloads as reg

    try:
        wl = reg.get(name)
    except PerflabError as e:  # its fix says where workloads come from, and close names
        raise WorkloadUnavailable(f"workload {name} is not registered: {e.problem}",
                                  e.fix) from e
    # A manifest declares the tools it needs; the registry knows whether they are here.
    avail = getattr(wl, "available", None)
    if callable(avail):
        got = avail()
        if not bool(got):
            why = getattr(got, "reason", "")
            raise WorkloadUnavailable(f"workload {name} is not available here"
                                      + (f": {why}" if why else ""))
    return wl


def manifest_values(wl: Any, param: str) -> list[Any] | None:
    """The sweep values a workload manifest lists for ``param`` (``values = [...]``)."""
    params = getattr(wl, "params", None)
    if params is None:
        manifest = getattr(wl, "manifest", None)
        params = getattr(manifest, "params", None) if manifest is not None else None
    if not params:
        return None
    spec = params.get(param) if isinstance(params, dict) else None
    if spec is None:
        return None
    vals = spec.get("values") if isinstance(spec, dict) else getattr(spec, "values", None)
    return list(vals) if vals else None


# -- the matrix --------------------------------------------------------------------------------
def _fill_manifest_axes(suite: Suite, workloads: dict[str, Any]) -> None:
    for axis in suite.axes:
        if not axis.from_manifest or axis.values:
            continue
        for wl in workloads.values():
            vals = manifest_values(wl, axis.name)
            if vals:
                axis.values = vals
                break
        if not axis.values:
            raise suite.error(f"matrix parameter '{axis.name}' asks for the manifest values, but "
                              "no workload of the suite lists values for it",
                              f"list the values: {axis.name} = [...]", "matrix", axis.name)


def _type_fits(ptype: str, v: Any) -> bool:
    """Whether a suite value has the type a workload parameter declares (TOML is typed, so a
    string where an integer is expected is a mistake in the file, not a value to skip)."""
    if ptype == "bool":
        return isinstance(v, bool)
    if isinstance(v, bool):
        return False
    if ptype == "int":
        return isinstance(v, int) or (isinstance(v, float) and v.is_integer())
    if ptype == "float":
        return isinstance(v, int | float)
    return isinstance(v, str)


def _check_types(suite: Suite, cfg: ConfigSpec, wl: Any) -> None:
    params = getattr(wl, "params", None) or {}
    for axis in suite.axes:
        p = params.get(axis.name)
        if p is None:
            continue
        bad = [v for v in axis.values if not _type_fits(p.type, v)]
        if bad:
            raise suite.error(
                f"matrix parameter '{axis.name}' has {bad[0]!r}, but {cfg.workload} (configuration "
                f"'{cfg.name}') takes {p.type} values", f"write {p.allowed()}", "matrix", axis.name)
    for k, v in cfg.params.items():
        p = params.get(k)
        if p is not None and not _type_fits(p.type, v):
            where = ("configurations", cfg.name, "params", k)
            if where not in suite.lines.paths and ("benchmark", "params", k) in suite.lines.paths:
                where = ("benchmark", "params", k)
            raise suite.error(
                f"parameter '{k}' = {v!r} of configuration '{cfg.name}' is not {p.type} as "
                f"{cfg.workload} expects", f"write {p.allowed()}", *where)


def _command_for(cfg: ConfigSpec, params: dict[str, Any],
                 wl: Any) -> tuple[list[str], str, dict[str, str]]:
    values = {**cfg.params, **params, "config": cfg.name}
    if cfg.binary:
        values["binary"] = cfg.binary
    if wl is not None:
        # workloads.resolve's step, on the workload the plan looked up once (resolve_workload)
        built = wl.is_built()
        argv = list(wl.resolve({**cfg.params, **params}, require_built=False).argv)
        if not built:
            # Not built yet (dry run): the values are checked; show the command's shape.
            argv = [f"<{cfg.workload}, not built>"] + argv[len(wl.manifest.run):]
        if cfg.binary:
            argv[0] = cfg.binary
        benchmark = str(cfg.workload)
    else:
        assert cfg.command is not None
        argv = substitute(cfg.command, values)
        benchmark = " ".join(cfg.command)
    argv = cfg.prefix + argv + substitute(cfg.flags, values)
    env = {k: substitute([v], values)[0] for k, v in cfg.env.items()}
    return argv, benchmark, env


# The most (cell, configuration) pairs a plan holds: counted from the axes before anything is
# expanded, so a typo'd matrix (10 axes of 10 values) is refused at once instead of filling
# the memory (a 10M-cell dry run reached 19.6 GB in 11 minutes).
MAX_PLAN_SERIES = 100_000


def _check_size(suite: Suite, n_configs: int) -> None:
    axes = [a for a in suite.axes if a.values]
    cells = math.prod(len(a.values) for a in axes)
    if cells * max(1, n_configs) <= MAX_PLAN_SERIES:
        return
    shape = " x ".join(f"{a.name} {len(a.values)}" for a in axes)
    raise suite.error(
        f"the matrix has {fmt_count(cells)} cells ({shape}) x {n_configs} configuration(s), more "
        f"than the {fmt_count(MAX_PLAN_SERIES)} configuration series perflab plans in one suite",
        "use fewer values (a larger step or factor), or split the study into several suites",
        "matrix")


def make_plan(suite: Suite, *, build: bool = False) -> SuitePlan:
    """Resolve configurations and expand the matrix; raises PerflabError on what cannot run.

    With ``build``, every configuration's build step and every workload's build run first (an
    unbuildable configuration is an error, before anything is measured)."""
    skipped: list[str] = []
    workloads: dict[str, Any] = {}
    usable: list[ConfigSpec] = []
    for cfg in suite.configurations:
        if cfg.workload is None:
            usable.append(cfg)
            continue
        try:
            workloads[cfg.name] = resolve_workload(cfg.workload)
            usable.append(cfg)
        except WorkloadUnavailable as e:
            if suite.unavailable == "error" or cfg.name == suite.baseline:
                fix = e.fix or (
                    "build or register it (perflab workloads list), or drop the configuration"
                    if cfg.name != suite.baseline else
                    "make an available configuration the baseline, or make this one available")
                raise suite.error(f"configuration '{cfg.name}': {e}", fix,
                                  "configurations", cfg.name, "workload") from None
            skipped.append(f"skipped configuration '{cfg.name}': {e}"
                           + (f" ({e.fix})" if e.fix else ""))
    _fill_manifest_axes(suite, workloads)
    _check_size(suite, len(usable))
    for name, wl in workloads.items():
        _check_types(suite, suite.config(name), wl)
    if build:
        build_configs(suite, [c for c in usable if c.build])
        for cfg in usable:
            if cfg.name in workloads:
                build_workload(suite, cfg, workloads[cfg.name])

    cells: dict[str, Cell] = {}
    rejected: dict[str, list[str]] = {}
    for cfg in usable:
        wl = workloads.get(cfg.name)
        for params in expand_matrix(suite, cfg.name):
            try:
                argv, bench, env = _command_for(cfg, params, wl)
            except PerflabError as e:
                if suite.unavailable == "error":
                    raise suite.error(f"configuration '{cfg.name}' rejects {params}: {e.line()}",
                                      "exclude that cell for this configuration: exclude = "
                                      f'[{{ configuration = "{cfg.name}", ... }}]',
                                      "configurations", cfg.name) from None
                rejected.setdefault(cfg.name, []).append(
                    f"{canonical_params(params)} ({e.problem})")
                continue
            key = canonical_params(params)
            cell = cells.setdefault(key, Cell(params=params, configs=[]))
            cell.configs.append(PlannedConfig(
                name=cfg.name, argv=argv, env=env, shell=cfg.shell, benchmark=bench,
                is_baseline=(cfg.name == suite.baseline), spec=cfg, workload=wl,
                params=dict(params)))
    for name, cells_ in rejected.items():
        skipped.append(f"skipped {len(cells_)} cell(s) of configuration '{name}' its workload "
                       f"rejects: {cells_[0]}" + (" ..." if len(cells_) > 1 else ""))
    if not cells:
        raise suite.error("the plan is empty: no configuration can run any cell",
                          "check the matrix, the exclusions and that the workloads are built",
                          "matrix")
    if not any(
            any(p.is_baseline for p in c.configs) for c in cells.values()):
        raise suite.error(f"the baseline '{suite.baseline}' runs in no cell",
                          "choose a baseline that runs in the matrix", "suite", "baseline")
    return SuitePlan(suite=suite, cells=list(cells.values()), skipped=skipped)


def build_configs(suite: Suite, configs: list[ConfigSpec]) -> None:
    """Run each configuration's own build step in the suite's directory; fail before measuring."""
    for cfg in configs:
        argv = cfg.build or []
        try:
            proc = subprocess.run(argv, cwd=suite.path.parent, capture_output=True, text=True,
                                  timeout=600, env={**os.environ, **cfg.env},
                                  stdin=subprocess.DEVNULL)
        except (FileNotFoundError, PermissionError):
            raise suite.error(f"configuration '{cfg.name}' cannot be built: {argv[0]} not found",
                              "install it or fix the build command",
                              "configurations", cfg.name, "build") from None
        except subprocess.TimeoutExpired:
            raise suite.error(f"the build of configuration '{cfg.name}' took over 600 s",
                              "build it beforehand and drop the build step",
                              "configurations", cfg.name, "build") from None
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()
            last = tail[-1] if tail else ""
            raise suite.error(f"configuration '{cfg.name}' cannot be built: "
                              f"'{' '.join(argv)}' exited {proc.returncode}"
                              + (f" ({last})" if last else ""),
                              "fix the build command or the sources it builds",
                              "configurations", cfg.name, "build")


def build_workload(suite: Suite, cfg: ConfigSpec, wl: Any) -> None:
    """Build a configuration's workload if its outputs are missing (incremental)."""
    if wl.is_built():
        return
    try:
        wl.build()
    except PerflabError as e:
        raise suite.error(f"configuration '{cfg.name}' cannot be built: {e.problem}",
                          e.fix or "fix the workload's build", "configurations", cfg.name,
                          "workload") from None

"""Noise-aware bisect: ``git bisect`` driven by A/B comparisons against the good commit.

Each step builds the commit git proposes and measures it interleaved with the good commit's
build (built once and copied to a temporary directory), round by round, and asks the core's
step rule (stats.bisect_step) at each round's look: "bad" when a one-sided bound puts the
commit beyond the band's edge toward worse, "good" when the other bound, at the same level,
puts it short of that edge; the levels spend alpha over the rounds (stats.bisect_levels).
Still undecided after --max-rounds: ``git bisect skip`` rather than a guess.  A build or run
that fails is a skip.  Every step's runs are stored (one result set of kind "bisect"; one
configuration per commit).
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console

from perflab import notes as said
from perflab.console import stderr_console, warning
from perflab.errors import PerflabError
from perflab.format import fmt_change_pct, fmt_plain, fmt_points, fmt_share
from perflab.history import git
from perflab.judging import DEFAULT_THRESHOLD as STATS_DEFAULT_THRESHOLD
from perflab.judging import Estimator, parse_estimator
from perflab.metrics import MetricInfo
from perflab.model import Configuration, ResultSet, Settings
from perflab.stats import (
    BISECT_ALPHA,
    BISECT_CHECK_ALPHA,
    BISECT_ROUNDS,
    Comparison,
    bisect_band,
    bisect_levels,
    bisect_step,
    round_pairs,
)
from perflab.workloads import Resolved, resolve

console = stderr_console()
DEFAULT_THRESHOLD = STATS_DEFAULT_THRESHOLD  # the one default band


@dataclass
class BisectSpec:
    repo: Path
    good: str
    bad: str
    build: str
    command: list[str] = field(default_factory=list)  # the -- COMMAND form
    workload: str | None = None  # or a workload of the repository (workloads/<name>/)
    params: dict[str, str] = field(default_factory=dict)
    metric: str | None = None  # default: the workload's primary or wall_time; CPU time if CPU-bound
    artifacts: list[str] = field(default_factory=list)  # what to keep of the good build
    runs: int = 10
    max_rounds: int = BISECT_ROUNDS  # the run budget of a step: rounds of --runs each
    # None: derived from the good->bad change the check measured (stats.bisect_band: the
    # geometric midpoint of the measured step, at least 1%), so a step is judged by which end
    # it resembles; a 1% band (or the check CI's lower end) skipped most unchanged commits.
    threshold: float | None = None
    timeout: float | None = None
    build_timeout: float = 900.0
    check: bool = True  # first confirm that bad is slower than good
    seed: int | None = None


@dataclass
class Step:
    commit: str
    decision: str  # good | bad | skip
    reason: str
    change_pct: float = math.nan
    ci: tuple[float, float] = (math.nan, math.nan)
    # The values the change is made of (Comparison.base_center, cand_center).
    base_value: float = math.nan
    cand_value: float = math.nan
    runs: int = 0


@dataclass
class StepRule:
    """How every step of a bisect is judged (pure; the Bisector and the seeded simulations of
    perflab.history.simulate both judge through it): the band, the one-sided level of each
    round's look, and the estimator."""

    threshold: float
    levels: list[float]
    estimator: Estimator

    @classmethod
    def for_spec(cls, spec: BisectSpec) -> StepRule:
        # Runs per round can be few (--runs 3): the median needs no trimming headroom.
        est = parse_estimator("trim" if spec.runs * spec.max_rounds >= 8 else "median")
        return cls(spec.threshold if spec.threshold is not None else DEFAULT_THRESHOLD,
                   bisect_levels(spec.max_rounds,
                                 BISECT_CHECK_ALPHA if spec.check else BISECT_ALPHA), est)

    def decide(self, rnd: int, base: list[float], cand: list[float],
               info: MetricInfo) -> tuple[str, Comparison]:
        """The look after round ``rnd`` (0-based): "bad", "good" or "inconclusive"."""
        return bisect_step(base, cand, threshold=self.threshold, level=self.levels[rnd],
                           info=info, paired=True, estimator=self.estimator)

    def after_check(self, change_pct: float | None, info: MetricInfo) -> StepRule:
        """The rule for the steps after the check measured good -> bad: the steps' levels
        (the check's are stricter), and without --threshold (``change_pct`` given) the band
        midway (geometrically) to the measured step, in the metric's worse direction."""
        levels = bisect_levels(len(self.levels), BISECT_ALPHA)
        if change_pct is None:
            return replace(self, levels=levels)
        ratio = 1.0 + change_pct / 100.0
        if info.direction == "higher" and ratio > 0:
            ratio = 1.0 / ratio
        return replace(self, threshold=bisect_band(ratio), levels=levels)


@dataclass
class BisectOutcome:
    first_bad: str | None
    candidates: list[str]  # when skips leave several possible first bad commits
    steps: list[Step]
    result_id: int | None
    metric: str
    unit: str = ""
    size: Step | None = None  # the comparison of the first bad commit against good


def _run_build(spec: BisectSpec, cwd: Path) -> tuple[bool, str]:
    try:
        proc = subprocess.run(spec.build, shell=True, cwd=cwd, capture_output=True, text=True,
                              timeout=spec.build_timeout)
    except subprocess.TimeoutExpired:
        return False, f"build timed out after {fmt_plain(spec.build_timeout)} s"
    if proc.returncode != 0:
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        return False, f"build failed (exit {proc.returncode}): {tail[-1] if tail else ''}"
    return True, ""


def _bisect_git(top: Path, *args: str) -> str:
    proc = git.bisect(top, *args)
    out = proc.stdout + proc.stderr
    if proc.returncode not in (0, 2) and "first bad commit" not in out \
            and "only 'skip'ped commits" not in out:
        raise PerflabError(f"git bisect {' '.join(args)} failed: {out.strip().splitlines()[-1:]}",
                           "run 'git bisect reset' in the repository and try again")
    return out


class _Target:
    """What to run at a commit: argv for the tree at ``root`` (the repo or the good copy)."""

    def __init__(self, spec: BisectSpec, top: Path) -> None:
        self.spec, self.top = spec, top
        self.wdir: Path | None = None
        self.primary = "wall_time"
        self.region_symbol: str | None = None
        if spec.workload:
            self.wdir = top / "workloads" / spec.workload
            if not (self.wdir / "workload.toml").is_file():
                raise PerflabError(f"no workload '{spec.workload}' in {top}/workloads",
                                   "give the <family>/<runtime> name 'perflab workloads list' "
                                   "shows, or use -- COMMAND")
            r = self._resolve(top)  # the manifest at the good commit, checked once
            self.primary, self.region_symbol = r.primary or "wall_time", r.region_symbol
        elif not spec.command:
            raise PerflabError("nothing to measure at each step",
                               "give --workload NAME or a command after --")

    @property
    def benchmark(self) -> str:
        return self.spec.workload or " ".join(self.spec.command)

    def _resolve(self, root: Path) -> Resolved:
        # The checkout's own workloads/ (its manifest at this commit); built by --build, not
        # by `perflab workloads build`, so no build stamp is asked for.
        assert self.spec.workload is not None
        return resolve(self.spec.workload, self.spec.params, root / "workloads",
                       require_built=False)

    def argv(self, root: Path) -> list[str]:
        """The command with the repository's relative paths resolved in ``root``.

        Why: the good build lives in a copy, and the core runs commands without a cwd, so a
        path such as ./prog must point into the tree being measured.
        """
        if self.wdir is not None:
            return self._resolve(root).argv
        out = []
        for a in self.spec.command:
            p = Path(a)
            if not p.is_absolute() and a not in (".", "..") and (self.top / p).exists():
                out.append(str(root / p))
            else:
                out.append(a)
        return out


def _copy_good(spec: BisectSpec, top: Path, target: _Target, dest: Path) -> None:
    if target.wdir is not None:  # the manifest, so the copy resolves as the checkout does
        manifest = target.wdir.relative_to(top) / "workload.toml"
        (dest / manifest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(top / manifest, dest / manifest)
    if spec.artifacts:
        for rel in spec.artifacts:
            src = top / rel
            if not src.exists():
                raise PerflabError(f"--artifact {rel} does not exist after building the good "
                                   "commit", "name a file the build produces, relative to "
                                   "the repository")
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dest / rel, symlinks=True)
            else:
                shutil.copy2(src, dest / rel)
        return
    src = target.wdir if target.wdir is not None else top
    rel = src.relative_to(top)
    shutil.copytree(src, dest / rel, symlinks=True, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".git"))


def run_bisect(spec: BisectSpec, store: Any, out: Console | None = None) -> BisectOutcome:
    """Find the first commit of good..bad that is slower (see the module's docstring)."""
    return Bisector(spec, store, out).run()


class Bisector:
    """One bisect, step by step: check the tree, build and measure a commit against the good
    build, judge it, let git narrow the range, report.  Every step's runs go to one result set."""

    def __init__(self, spec: BisectSpec, store: Any, out: Console | None = None) -> None:
        self.spec, self.store = spec, store
        self.say = (out or console).print
        self.top, self.good, self.bad = self._check_tree()
        from perflab.fingerprint import machine_fingerprint

        self.metric = spec.metric
        self.rs = ResultSet(
            kind="bisect", fingerprint=machine_fingerprint(), repo=str(self.top),
            commit=self.bad, dirty=False, created_at=time.time(),
            label=f"bisect {git.short(self.good)}..{git.short(self.bad)}",
            settings=Settings(extra={
                "good": self.good, "bad": self.bad, "build": spec.build, "runs": spec.runs,
                "max_rounds": spec.max_rounds}))
        self.steps: list[Step] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="perflab-bisect-good-"))
        self.started = False
        self.step_no = 0
        self.said_choice = False
        self.rule = StepRule.for_spec(spec)
        # set by _prepare, once the good commit is checked out and built
        self.target: _Target
        self.opts: Any = None
        self.base_argv: list[str] = []

    def run(self) -> BisectOutcome:
        try:
            self._prepare()
            if self.spec.check:
                self._check_range()
            self.rs.settings.comparison = replace(self.rs.settings.plan(),
                                                  threshold=self.rule.threshold)
            first, cands = self._narrow()
            return self._report(first, cands, self._size(first))
        except KeyboardInterrupt:
            self.rs.status = "interrupted"
            self.rs.notes.add(said.interrupted())  # said once (NoteKind.INTERRUPTED)
            raise
        finally:
            self._close()

    def _check_tree(self) -> tuple[Path, str, str]:
        """The work tree's top, good and bad commits; one clear error when bisect cannot run."""
        spec = self.spec
        top = git.toplevel(spec.repo)
        if top is None:
            raise PerflabError(f"{spec.repo} is not a git work tree",
                               "run bisect inside the repository or pass --repo")
        if spec.runs < 1 or spec.max_rounds < 1:
            raise PerflabError("--runs and --max-rounds must be at least 1", "use e.g. --runs 10")
        good = git.resolve(top, spec.good)
        bad = git.resolve(top, spec.bad)
        if good == bad or not git.is_ancestor(top, good, bad):
            raise PerflabError(f"--good {spec.good} is not an ancestor of --bad {spec.bad}",
                               "give an older good commit and a newer bad one on the same "
                               "history")
        if git.has_changes(top):
            raise PerflabError(f"{top} has uncommitted changes, and bisect checks out other "
                               "commits", "commit or stash them first")
        if git.bisect(top, "log").returncode == 0:
            raise PerflabError(f"a git bisect is already in progress in {top}",
                               "finish it or run 'git bisect reset' first")
        return top, good, bad

    def _prepare(self) -> None:
        """Start git's bisect, build the good commit once and copy it aside, set the options."""
        from perflab.judging import Plan

        spec, top, good = self.spec, self.top, self.good
        git.bisect(top, "start", check=True)
        self.started = True
        git.checkout(top, good)
        self.target = _Target(spec, top)
        auto_primary = self.metric is None
        self.metric = self.metric or self.target.primary
        self.rs.settings.metric = self.metric
        self.say(f"building the good commit {git.short(good)} once ...")
        ok, why = _run_build(spec, top)
        if not ok:
            raise PerflabError(f"the good commit {git.short(good)}: {why}",
                               "fix --build, or choose a good commit that builds")
        _copy_good(spec, top, self.target, self.tmp)
        self.opts = self._options(auto_primary)
        self.base_argv = self.target.argv(self.tmp)
        self.rs.settings.comparison = Plan(threshold=self.rule.threshold,
                                           estimator=str(self.rule.estimator),
                                           looks=spec.max_rounds)

    def _options(self, auto_primary: bool) -> Any:
        from perflab.judging import MIN_RUNS
        from perflab.runner import MeasureOptions

        spec, metric = self.spec, self.metric
        valgrind = metric in ("instructions", "instructions_per_op")
        if not valgrind and spec.runs * spec.max_rounds < MIN_RUNS:
            self.say(warning(f"--runs {spec.runs} x --max-rounds {spec.max_rounds} is below "
                             f"the {MIN_RUNS} runs a verdict needs: every step will be "
                             "inconclusive (too few runs); raise --runs"), highlight=False)
        return MeasureOptions.of(
            metric=metric, auto_primary=auto_primary and not valgrind,
            warmup=0 if valgrind else 1, runs=spec.runs, timeout=spec.timeout,
            counters="none" if valgrind else "auto",
            instructions="valgrind" if valgrind else None,
            valgrind_runs=max(1, min(spec.runs, 2)),  # exact counts: 1 run suffices
            region_symbol=self.target.region_symbol if valgrind else None,
            seed=spec.seed)

    def judge(self, commit: str) -> Step:
        """Build ``commit`` (checked out) and compare it with the good build, round by round,
        until the step rule decides or --max-rounds is spent (then a skip)."""
        self.step_no += 1
        if commit != self.good:
            ok, why = _run_build(self.spec, self.top)
            if not ok:
                return Step(commit, "skip", why)
        base_s: list[float] = []
        cand_s: list[float] = []
        cmp = None
        for rnd in range(self.spec.max_rounds):
            failed = self._measure_round(commit, rnd, base_s, cand_s)
            if failed is not None:
                return failed
            st, cmp = self._decide(commit, rnd, base_s, cand_s)
            if st.decision:
                return st
            self.say(f"  {git.short(commit)}: inconclusive after {len(cand_s)} runs "
                     f"({fmt_change_pct(cmp.change_pct)}), measuring again")
        assert cmp is not None
        few = f", {cmp.note}" if cmp.note else ""  # "too few runs" below MIN_RUNS
        return Step(commit, "skip", f"inconclusive after {len(cand_s)} runs{few}",
                    cmp.change_pct, (cmp.ci_low, cmp.ci_high), cmp.base_center,
                    cmp.cand_center, len(cand_s))

    def _measure_round(self, commit: str, rnd: int, base_s: list[float],
                       cand_s: list[float]) -> Step | None:
        """One round of good and ``commit`` interleaved; its paired samples are appended to
        ``base_s`` and ``cand_s``.  A skip when the commit's command fails."""
        from perflab.runner import RunFailed, measure

        good, target, rs = self.good, self.target, self.rs
        cell = {**self.spec.params, "bisect_step": self.step_no, "round": rnd}
        base = Configuration(name=f"good {git.short(good)}", command=self.base_argv,
                             benchmark=target.benchmark, params=cell, is_baseline=True,
                             commit=good)
        cand = Configuration(name=git.short(commit), command=target.argv(self.top),
                             benchmark=target.benchmark, params=cell, commit=commit)
        try:
            measure(rs, [base, cand], self.opts, store=self.store)
            if rs.status == "interrupted":
                # measure() keeps the runs and returns on Ctrl-C; a bisect must stop
                # there, not judge a step on what it had.
                raise KeyboardInterrupt
        except RunFailed as e:
            if any(r.status != "ok" for r in base.runs):
                raise PerflabError(f"the good build failed to run: {e.problem}",
                                   "check the command at the good commit") from e
            return Step(commit, "skip", f"the command failed: {e.problem}")
        self.metric = self.opts.primary_metric  # the warm-up's choice (runner.choose_primary)
        rs.settings.metric = self.metric
        choice = rs.settings.primary_choice
        if choice and not self.said_choice:
            self.say(f"primary metric: {choice.reason}")
            self.said_choice = True
        if self.metric not in rs.metrics:
            raise PerflabError(f"the runs produced no metric '{self.metric}'",
                               f"choose one of {', '.join(sorted(rs.metrics)) or '-'}")
        a, b = round_pairs(base, cand, self.metric)  # this round's runs, paired by round
        base_s += a
        cand_s += b
        return None

    def _decide(self, commit: str, rnd: int, base_s: list[float],
                cand_s: list[float]) -> tuple[Step, Any]:
        """The step so far: decision "bad", "good", or "" (measure again), and the comparison."""
        from perflab.metrics import verdict_word

        info = self.rs.metrics[self.metric]
        # The core's step rule at this round's level (StepRule, stats.bisect_step).  Exact
        # counts within the band are good (they move by a few instructions with the binary's
        # path: argv and auxv on the stack).
        decision, cmp = self.rule.decide(rnd, base_s, cand_s, info)
        st = Step(commit, "", "", cmp.change_pct, (cmp.ci_low, cmp.ci_high),
                  cmp.base_center, cmp.cand_center, len(cand_s))
        if decision == "bad":
            st.decision, st.reason = "bad", cmp.verdict
        elif decision == "good":
            st.decision = "good"
            st.reason = cmp.verdict if cmp.verdict != "inconclusive" else (
                "not " + verdict_word(info, info.direction != "higher"))
        return st, cmp

    def _show(self, st: Step) -> None:
        size = "" if math.isnan(st.change_pct) else f" {fmt_change_pct(st.change_pct)}"
        if not math.isnan(st.ci[0]) and st.ci[0] != st.ci[1]:
            size += f" [{fmt_points(st.ci[0] - 1, 2)}, {fmt_points(st.ci[1] - 1, 2)}]"
        self.say(f"  {git.short(st.commit)} {git.subject(self.top, st.commit)[:50]!r}: "
                 f"[bold]{st.decision}[/] ({st.reason}{size})")

    def _step(self, commit: str) -> Step:
        st = self.judge(commit)
        self.steps.append(st)
        self._show(st)
        return st

    def _check_range(self) -> None:
        """Confirm that bad is slower than good; without --threshold, the band is then set
        midway to the step measured (stats.bisect_band)."""
        spec = self.spec
        git.checkout(self.top, self.bad)
        self.say(f"checking that {git.short(self.bad)} is slower than {git.short(self.good)} ...")
        st = self._step(self.bad)
        if st.decision != "bad":
            pct = "" if math.isnan(st.change_pct) else f", {fmt_change_pct(st.change_pct)}"
            raise PerflabError(
                f"--bad {spec.bad} is not measurably slower than --good {spec.good} "
                f"({st.reason}{pct})",
                "check the range and the metric, or raise --runs / --max-rounds")
        self.rule = self.rule.after_check(st.change_pct if spec.threshold is None else None,
                                          self.rs.metrics[self.metric or ""])
        if spec.threshold is None:
            self.say(f"judging steps against a ±{fmt_share(self.rule.threshold)} band, midway to "
                     f"the measured step ({fmt_change_pct(st.change_pct, 1)})")

    def _narrow(self) -> tuple[str | None, list[str]]:
        """Let git propose commits until it names the first bad one (or only skips are left):
        (the first bad commit or None, the candidates)."""
        _bisect_git(self.top, "bad", self.bad)
        text = _bisect_git(self.top, "good", self.good)
        while True:
            done = re.search(r"^([0-9a-f]{40}) is the first bad commit", text, re.M)
            if done:
                return done.group(1), [done.group(1)]
            if "only 'skip'ped commits left" in text:
                return None, re.findall(r"^([0-9a-f]{40})\b", text, re.M)
            commit = git.head(self.top)
            st = self._step(commit)
            text = _bisect_git(self.top, st.decision, commit)

    def _size(self, first: str | None) -> Step | None:
        """The comparison of the first bad commit against good: measured now when git named it
        without a step measuring it (a neighbour of good, or the bad end)."""
        steps = self.steps
        size = next((s for s in steps if s.commit == first and s.decision == "bad"), None)
        if first is None or size is not None:
            return size
        if first == self.bad and steps and steps[0].commit == self.bad:
            return steps[0]
        git.checkout(self.top, first)
        size = self.judge(first)
        steps.append(size)
        return size

    def _report(self, first: str | None, cands: list[str], size: Step | None) -> BisectOutcome:
        rs, steps = self.rs, self.steps
        rs.status = "complete"
        rs.notes.add(said.bisect("first bad commit: " + (first or "one of " + ", ".join(cands))))
        judged = [s for s in steps if s is not steps[0] or not self.spec.check]
        skipped = sum(s.decision == "skip" for s in judged)
        if judged:
            rs.notes.add(said.bisect(f"{skipped} of {len(judged)} step(s) skipped (inconclusive or "
                                     "failed)"))
            self.say(f"{skipped} of {len(judged)} step(s) skipped", highlight=False)
        rs.settings.extra["first_bad"] = first
        rs.settings.extra["steps"] = [
            {"commit": s.commit, "decision": s.decision, "reason": s.reason,
             "change_pct": None if math.isnan(s.change_pct) else s.change_pct} for s in steps]
        metric = self.metric or ""
        unit = rs.metrics[metric].unit if metric in rs.metrics else ""
        return BisectOutcome(first, cands, steps, rs.id, metric, unit, size)

    def _close(self) -> None:
        """Store the result's final state, end git's bisect, remove the good build's copy."""
        rs = self.rs
        if rs.id is not None:
            if rs.status == "running":
                rs.status = "failed"
            self.store.update_result(rs)
        if self.started:
            git.bisect(self.top, "reset")
        shutil.rmtree(self.tmp, ignore_errors=True)

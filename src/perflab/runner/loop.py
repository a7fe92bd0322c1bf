"""The runner: plans runs, interleaves configurations, warms up, stops adaptively, saves each run.

Configurations are run in rounds; each round is a fresh random permutation of all of them
(A B / B A / ...), so a drifting machine (thermal, a neighbour's build) hits every configuration
alike, and the i-th runs of two configurations come from the same round and can be paired.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from perflab import notes as said
from perflab.collectors.perf_events import (
    HARDWARE_EVENTS,
    SOFTWARE_EVENTS,
)
from perflab.collectors.process import (
    Interrupted,
    RunOutcome,
    RunRequest,
    resolve_executable,
)
from perflab.collectors.workload_json import runtime_label
from perflab.console import stderr_console
from perflab.errors import PerflabError, printable
from perflab.format import fmt_fixed, fmt_plain, fmt_seconds, fmt_share
from perflab.judging import (
    DEFAULT_ESTIMATOR,
    Plan,
    parse_estimator,
)
from perflab.metrics import (
    CALLGRIND_EXACT,
    MetricInfo,
)
from perflab.model import Configuration, ResultSet, Run, StopInfo
from perflab.notes import Notes
from perflab.runner.declared import family_members, metric_info
from perflab.runner.executors import Callgrind, Executor, ForkServer
from perflab.runner.options import (
    KERNEL_PROBE_ROUNDS,
    STAT_PRECISION,
    MeasureOptions,
    counts_only,
    effective_budget,
    effective_min_runs,
    measured_plan,
)
from perflab.runner.policy import PRIMARY_MIN_RUNS, settle_primary
from perflab.runner.watchers import Watchers
from perflab.stats import (
    StopLook,
    look_level,
    look_schedule,
    round_pairs,
    stop_check,
    summarize,
)
from perflab.storefaults import Outage, StoreUnreachable, ride_out

if TYPE_CHECKING:
    from perflab.quickwrite import ResultWriter

# The fork server hands a batch's runs over in chunks of about this many seconds, each stored
# while it makes the next (without a budget a batch runs up to the stop rule's next look):
# long enough that perflab's Python is out of the way between runs, short enough for the
# progress display and for what a SIGKILL of perflab can lose (the runs not yet stored).
BATCH_SECONDS = 0.25


class RunFailed(PerflabError):
    pass



def _counter_plan(opts: MeasureOptions, executor: Executor,
                  notes: Notes) -> list[str]:
    if opts.counters == "none":
        return []
    probe = executor.probe(list(SOFTWARE_EVENTS) + list(HARDWARE_EVENTS))
    names = [n for n, why in probe.items() if why is None]
    sw_why = next((probe[n] for n in SOFTWARE_EVENTS if probe[n]), None)
    hw_why = next((probe[n] for n in HARDWARE_EVENTS if probe[n]), None)
    if sw_why:  # each said once, however many cells measured (Notes.add)
        notes.add(said.counters_unavailable("software", sw_why))
    if hw_why and not any(n in names for n in HARDWARE_EVENTS):
        alt = ("instructions are counted by valgrind (--metric instructions)"
               if opts.instructions == "valgrind"
               else "use --metric instructions to count them with valgrind")
        notes.add(said.counters_unavailable("hardware", hw_why, alt))
    return names



def _make_progress(console: Console) -> Progress:
    return Progress(
        SpinnerColumn(), TextColumn("[progress.description]{task.description}"), BarColumn(),
        MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[status]}"),
        console=console, transient=True, disable=not console.is_terminal)



def measure(rs: ResultSet, configs: list[Configuration], opts: MeasureOptions,
            store: ResultWriter | None = None, watchers: Watchers | None = None, *,
            executor: Executor | None = None) -> ResultSet:
    """Measure ``configs`` into ``rs`` (see docs/core-api.md).  Ctrl-C returns an interrupted rs.

    ``watchers`` are what watches it: a progress display, a console, hooks on each run recorded
    and each round stored (runner.watchers).  ``executor`` makes the timed runs
    (runner.executors; the fork server by default)."""
    if not configs:
        raise PerflabError("nothing to measure", "give at least one command")
    return Measurement(rs, configs, opts, store, watchers or Watchers(),
                       executor or ForkServer()).run()


def _pairs(configs: list[Configuration]) -> list[tuple[Configuration, Configuration]]:
    """(baseline, other) for each configuration of a cell beside its baseline (the one marked
    so, else the cell's first)."""
    cells: dict[str, list[Configuration]] = {}
    for cfg in configs:
        cells.setdefault(cfg.cell, []).append(cfg)
    pairs = [(cell_cfgs[0] if not any(c.is_baseline for c in cell_cfgs)
              else next(c for c in cell_cfgs if c.is_baseline), c)
             for cell_cfgs in cells.values() for c in cell_cfgs]
    return [(b, c) for b, c in pairs if b is not c]


class Measurement:
    """One call of measure(): warm-up, timed rounds in batches, looks of the stop rule, each
    run recorded and its rounds stored, and the end (stopped, interrupted or failed).

    Configurations are run in rounds, each a random order of all of them; the rounds go to one
    fork server (collectors/process.py) in batches of about BATCH_SECONDS, and each batch's
    rounds are stored in one transaction: a run costs one fork+exec, not a launcher Popen and
    a commit.  Durable per batch: a batch's rounds are stored before the next batch starts,
    and whatever is pending is stored on Ctrl-C, on a failed run and on any other early end."""

    # Set by run(), for the measurement's length: the progress display.
    progress: Progress
    task: TaskID

    def __init__(self, rs: ResultSet, configs: list[Configuration], opts: MeasureOptions,
                 store: ResultWriter | None, watchers: Watchers,
                 executor: Executor | None = None) -> None:
        self.rs, self.configs, self.opts, self.store = rs, configs, opts, store
        self.watchers = watchers
        self.console = watchers.console or stderr_console()
        self.on_run, self.on_stored = watchers.on_run, watchers.on_stored
        self.rng = random.Random(opts.seed)
        self.executor = executor or ForkServer()  # the timed runs
        self.valgrind_mode = opts.instructions == "valgrind"
        # callgrind's runs (refused here, before anything runs, where valgrind is missing)
        self.callgrind = (Callgrind(opts.region_symbol, opts.client_region)
                          if self.valgrind_mode else None)
        counters = _counter_plan(opts, self.executor, rs.notes)
        # Counted by callgrind: a few timed rounds still run, for what a user-space count
        # cannot see (the kernel's share of CPU time: stats.kernel_share); never a PMU's
        # instructions beside callgrind's in one metric.
        self.count_only = counts_only(opts)
        if self.valgrind_mode:
            counters = [c for c in counters if c not in HARDWARE_EVENTS]
        self.counters = counters
        self.plan = measured_plan(opts)
        self.min_runs = effective_min_runs(opts)
        self.max_runs = max(opts.max_runs, self.min_runs)
        self.looks_at = set(look_schedule(self.min_runs, self.max_runs))
        self.budget = effective_budget(opts, len(configs))
        self.pairs = _pairs(configs)
        self.family = opts.family_size or len(self.pairs)
        self.fixed = KERNEL_PROBE_ROUNDS if self.count_only else opts.runs
        # Adaptive measuring of one comparison spends alpha over its looks (stats.look_level);
        # a suite's cells, judged as one family at one level, split it evenly (Plan.looks).
        self.spend = self.fixed is None and opts.family_size is None
        self.at_look = False  # measuring stopped at a look that decided it
        self.precision = (opts.precision if opts.precision is not None or self.pairs
                          else STAT_PRECISION)
        self.estimator = parse_estimator(opts.plan.estimator)
        self.round_times: list[float] = []
        self.per_round: float | None = None  # the rounds' median time so far (upper median)
        # A warm-up round's time, for the size of the batches until a timed round has one.
        self.warm_round: float | None = None
        self.requests: dict[tuple[int, bool], RunRequest] = {}
        self.pending: list[tuple[int, Run]] = []  # the round being recorded
        self.ended: list[list[tuple[int, Run]]] = []  # rounds recorded, not yet stored
        # what the stored header says of the metrics: their names and the primary one
        self.header_says: tuple[frozenset[str], str | None] = (frozenset(), None)
        self.outage = store.outage if store is not None else Outage()
        self.seq = 0
        self.started = 0.0
        self._tries = 0  # attempts at storing the rounds of one flush

    # -- before the first run ---------------------------------------------------------------
    def _settings(self) -> None:
        st = self.rs.settings  # what the caller set stays (a suite's, a bisect's)
        st.interleaved = len(self.configs) > 1 if st.interleaved is None else st.interleaved
        st.primary_metric = st.primary_metric or self.opts.primary_metric
        st.counters = st.counters or self.counters
        st.comparison = st.comparison if st.comparison is not None else self.plan

    def _begin(self) -> None:
        """Refuse a missing program before anything is stored, then store the result and its
        configurations."""
        rs, store = self.rs, self.store
        for cfg in self.configs:
            if not cfg.shell and cfg.command:
                resolve_executable(cfg.command[0], {**os.environ, **self.opts.env, **cfg.env})
        if store is not None and rs.id is None:
            store.begin_result(rs)
        for cfg in self.configs:
            if not any(c is cfg for c in rs.configurations):
                rs.configurations.append(cfg)
            if store is not None and cfg.id is None:
                assert rs.id is not None
                store.add_configuration(rs.id, cfg)
        self.seq = max((r.seq for c in rs.configurations for r in c.runs), default=-1) + 1

    def run(self) -> ResultSet:
        """Measure until the stop rule (or a fixed count, the budget) ends it."""
        self._settings()
        self._begin()
        self.started = time.monotonic()
        progress = self.watchers.progress
        own_progress = progress is None
        self.progress = progress or _make_progress(self.console)
        fixed, opts = self.fixed, self.opts
        total = len(self.configs) * ((fixed or 0) + opts.warmup) if fixed else None
        self.task = self.progress.add_task("measuring", total=total, status="")
        self.outage.speak(lambda line: self.console.print(
            f"note: {line}", markup=False, highlight=False, soft_wrap=True))
        try:
            with self.progress if own_progress else contextlib.nullcontext():
                self.warm_up()
                self.stop(*self.timed_rounds())
        except KeyboardInterrupt:
            return self._interrupted()
        except RunFailed:
            raise  # already recorded as failed
        except BaseException as e:
            self._failed(e)
            raise
        finally:
            self.executor.close()
            self.progress.remove_task(self.task)
        self.rs.status = "complete"
        if self.store is not None and self.rs.id is not None:
            self.store.update_result(self.rs)  # a lost server is waited for (Store.write)
        return self.rs

    # -- the phases -------------------------------------------------------------------------
    def _shuffled(self, n: int) -> list[list[Configuration]]:
        return [self.rng.sample(self.configs, len(self.configs)) for _ in range(n)]

    def warm_up(self) -> None:
        opts = self.opts
        if self.budget is None:
            # A fixed count: the warm-up rounds go to the server in one request with the timed
            # ones (timed_rounds), as hyperfine runs its warm-up, with no pause between them.
            # A pause idles the launcher's CPU: beside two CPU-bound neighbours on 2 CPUs the
            # scheduler then spread them one to a CPU, and the commands started after it
            # waited for a neighbour's time slice (half of the 300-run sets of `true`, against
            # 1 in 12 without the pause; perf sched timehist).  The server
            # starts each command on its own CPU, which mends that after any pause
            # (perflab-launch.c, launcher_cpus); the pause is spared all the same.  No batch
            # needs sizing here: no budget is checked.
            return
        done = 0
        while done < opts.warmup:
            n = self.batch_rounds(opts.warmup - done)
            t_batch = time.monotonic()
            self.run_rounds(self._shuffled(n), True, False)
            self.warm_round = (time.monotonic() - t_batch) / n
            done += n
        self._warmed()

    def _warmed(self) -> None:
        """After the warm-up rounds: settle the primary metric on them if they are enough, and
        check the metric before timed rounds are spent on it."""
        opts = self.opts
        if opts.auto_primary and opts.warmup >= PRIMARY_MIN_RUNS:
            settle_primary(self.rs, self.configs, opts, self.store)
        if opts.warmup and all(r.status == "ok" for c in self.configs for r in c.runs):
            # Before a batch of timed rounds (sized by the warm-up's time) is spent on it, or
            # at the first chunk of the batch the warm-up began (the server stopped); not
            # after a failed run (--ignore-failure), which may lack a workload's metrics.
            self._check_metric()

    def timed_rounds(self) -> tuple[int, str]:
        """Timed rounds, a batch at a time, until a stop: (rounds, why they stopped)."""
        rounds = 0
        while True:
            ahead = max(1, self._ahead(rounds))
            # a fixed count's warm-up rounds lead its first request (warm_up)
            warm = self.opts.warmup if self.budget is None and rounds == 0 else 0
            # Up to the stop rule's next look in one request: the server hands the runs over
            # in chunks of about BATCH_SECONDS (run_rounds), each stored while it goes on.  A
            # budget is checked between batches, so it keeps batches of BATCH_SECONDS; so does
            # the first batch before any round was timed (a warm-up of 0).
            timed = self.per_round is not None or self.warm_round is not None or warm > 0
            n = ahead if self.budget is None and timed else self.batch_rounds(ahead)
            t_batch = time.monotonic()
            self.run_rounds(self._shuffled(warm + n), False, False, warm=warm)
            rounds += n
            self.round_times.extend([(time.monotonic() - t_batch) / (warm + n)] * n)
            self.per_round = sorted(self.round_times)[len(self.round_times) // 2]
            self._after_batch()
            reason = self.stop_reason(rounds)
            if reason:
                return rounds, reason

    def _ahead(self, rounds: int) -> int:
        """Rounds up to the next point where the stop rule looks (or a fixed count ends, or
        the budget may)."""
        if self.fixed is not None:
            return self.fixed - rounds
        ahead = min([self.max_runs - rounds, *(k - rounds for k in self.looks_at
                                               if k > rounds)])
        if self.budget is not None and self.per_round is not None:
            room = self.budget - (time.monotonic() - self.started)
            ahead = min(ahead, int(room / self.per_round) - 1) if self.per_round > 0 else ahead
        return ahead

    def _after_batch(self) -> None:
        opts, rs = self.opts, self.rs
        if opts.auto_primary and min(len(c.runs) for c in self.configs) >= \
                PRIMARY_MIN_RUNS:  # fewer warm-up runs: the first rounds too
            settle_primary(rs, self.configs, opts, self.store)
        self._check_metric()

    def _check_metric(self) -> None:
        """The primary metric must be one the runs produced."""
        opts, rs = self.opts, self.rs
        if not family_members(rs, opts.primary_metric) and not self.count_only:
            raise PerflabError(
                f"unknown metric {opts.primary_metric!r}: the runs produced "
                f"{', '.join(sorted(rs.metrics))}",
                "choose one of those with --metric")

    def batch_rounds(self, most: int) -> int:
        """Rounds in the next batch: up to ``most``, as many as fill about BATCH_SECONDS at the
        rounds' median time so far, or at the last warm-up round's before that (one until a
        round has been timed).  Each batch costs a wake-up of perflab and a transaction: on a
        busy machine a wake-up waits for a CPU, so a 300-run `stat` of `true` ran 6 batches
        where 3 do (3 warm-up rounds: 1 + 2, then the timed rounds in 2)."""
        per = self.per_round if self.per_round is not None else self.warm_round
        if per is None:
            return 1
        return max(1, min(most, int(BATCH_SECONDS / per) if per > 0 else most))

    # -- stopping ---------------------------------------------------------------------------
    def stop_reason(self, rounds: int) -> str:
        """Why measuring stops after ``rounds`` timed rounds ("" to go on)."""
        fixed, budget = self.fixed, self.budget
        if fixed is not None:
            if rounds < fixed:
                return ""
            return (f"{fixed} timed rounds beside callgrind's counts" if self.count_only
                    else f"--runs {fixed}")
        if rounds >= self.max_runs:
            return f"--max-runs {self.max_runs} reached"
        if budget is not None and self.per_round is not None:
            if time.monotonic() - self.started + self.per_round > budget:
                if rounds < self.min_runs:
                    self.rs.notes.add(said.budget(fmt_plain(budget), rounds))
                return f"the {fmt_plain(budget)} s budget was spent"
        if rounds in self.looks_at:
            self.at_look = True
            look = self.stop_look(rounds)
            if look.stop:
                return look.reason
            if self.precise_enough():
                return f"every CI was within ±{fmt_share(self.precision)}"
            self.at_look = False
        return ""

    def look_plan(self, rounds: int, final: bool) -> Plan:
        """The plan with the level of the look at ``rounds`` runs (stats.look_level)."""
        if not self.spend:
            return self.plan
        return replace(self.plan, level=look_level(self.min_runs, self.max_runs, rounds, final,
                                                   self.plan.alpha))

    def budget_runs(self, rounds: int) -> int:
        """Runs per configuration measuring can reach: --max-runs, or fewer where the time
        budget ends first at the rounds' median time so far."""
        if self.budget is None or not self.per_round:
            return self.max_runs
        room = self.budget - (time.monotonic() - self.started)
        return max(rounds, min(self.max_runs, rounds + int(room / self.per_round)))

    def stop_look(self, rounds: int) -> StopLook:
        """The stop rule (stats.stop_check): every primary comparison decided at the level its
        verdict will use, or the undecided ones futile within the budget."""
        if not self.pairs:
            return StopLook(0, 0, 1)
        # The pairs the final verdict will judge (stats.compare_result): by round.  A harness
        # run's primary family holds every benchmark's metric of it (Sum-8 ns_per_op, ...):
        # one family, widened for the lag-1 correlation pooled over it and adjusted over it.
        paired = bool(self.rs.settings.interleaved)
        members = family_members(self.rs, self.opts.primary_metric)
        plan = self.look_plan(rounds, final=False)
        end = self.budget_runs(rounds)
        return stop_check([(*(round_pairs(b, c, m) if paired else (b.samples(m), c.samples(m))),
                            self.rs.metrics.get(m) or MetricInfo(m, "", ""))
                           for m in members for b, c in self.pairs],
                          paired=paired, plan=plan,
                          family_size=self.family * max(1, len(members)), budget_runs=end,
                          final_level=self.look_plan(end, final=True).level)

    def precise_enough(self) -> bool:
        if self.precision is None:
            return False
        est = self.estimator
        # The centre `stat` shows: the median unless an estimator was chosen.
        shown = None if est.kind == "median" or (
            not self.pairs and est == DEFAULT_ESTIMATOR) else est
        for cfg in self.configs:
            s = summarize(cfg.samples(self.opts.primary_metric), estimator=shown)
            if s.n < self.min_runs or s.rel_halfwidth > self.precision:
                return False
        return True

    def stop(self, rounds: int, reason: str) -> None:
        """Settle the primary metric, store why measuring stopped, then callgrind's runs."""
        rs, configs = self.rs, self.configs
        if self.opts.auto_primary:  # fewer runs than PRIMARY_MIN_RUNS in all
            settle_primary(rs, configs, self.opts, self.store)
        rs.settings.stop = StopInfo(rounds, reason, round(time.monotonic() - self.started, 3))
        if self.spend and rs.settings.comparison is self.plan:
            # The verdicts are judged at the level of the look measuring stopped at.
            self.plan.level = self.look_plan(rounds, final=not self.at_look).level
        if self.valgrind_mode:
            self.run_rounds(self._shuffled(max(1, self.opts.valgrind_runs)), False, True)
            _check_determinism(rs, configs)

    def _interrupted(self) -> ResultSet:
        rs, store = self.rs, self.store
        rs.status = "interrupted"
        rs.notes.add(said.interrupted())
        self.flush(wait=False)  # the user is leaving: a lost database is not waited for
        if store is not None and rs.id is not None:
            store.update_result(rs, wait=False)
        return rs

    def _failed(self, e: BaseException) -> None:
        """Any other early end (an unknown metric, a command that vanished, a full disk): the
        result must not stay 'running'.  Best effort: the store itself may be the fault."""
        rs, store = self.rs, self.store
        rs.status = "failed"
        why = e.line() if isinstance(e, PerflabError) else f"{type(e).__name__}: {e}"
        rs.notes.add(said.stopped_by(why))
        if store is not None and rs.id is not None and not isinstance(e, StoreUnreachable):
            with contextlib.suppress(PerflabError):
                self.flush(wait=False)
                store.update_result(rs, wait=False)

    # -- running ----------------------------------------------------------------------------
    def request(self, cfg: Configuration, callgrind: bool) -> RunRequest:
        """The configuration's request, made once a measurement: the server is given the same
        environment every run, built once from os.environ."""
        key = (id(cfg), callgrind)
        if key not in self.requests:
            opts = self.opts
            argv = ["/bin/sh", "-c", " ".join(cfg.command)] if cfg.shell else list(cfg.command)
            env = {**os.environ, **opts.env, **cfg.env}
            self.requests[key] = RunRequest(
                argv=argv, env=env, pin=opts.pin, timeout=opts.timeout,
                counters=[] if callgrind else self.counters, backend=self.executor.backend,
                region=opts.region and not callgrind, harness=cfg.harness)
        return self.requests[key]

    def _status(self, label: str, name: str) -> None:
        # The name is user text: the live line is drawn from markup, not through the console's
        # render_str, so its control characters and brackets are escaped here.
        self.progress.update(self.task, status=escape(printable(
            label + name + self.eta(len(self.round_times)))))

    def run_rounds(self, rounds: list[list[Configuration]], warmup: bool,
                   callgrind: bool, warm: int = 0) -> None:
        """Run these rounds (each a random order of the configurations) and store them as they
        come.  All of them go to the executor as one batch: the fork server makes the runs back
        to back with no Python between them and hands them over in chunks of about
        BATCH_SECONDS, each stored (one transaction) while it makes the next ones; the other
        executors hand each run over as it ends.  The first ``warm`` rounds are warm-up rounds
        (``_warmed`` follows the last of them)."""
        label = "callgrind " if callgrind else "warm-up " if warmup else ""
        executor = self.callgrind if callgrind else self.executor
        assert executor is not None
        self._status("warm-up " if warm else label, rounds[0][0].name)
        reqs = [self.request(cfg, callgrind) for order in rounds for cfg in order]
        # The runs in order, each with whether it is a warm-up run, whether it ends its round
        # and whether it ends the warm-up.
        slots = [(cfg, warmup or k < warm, i == len(order) - 1,
                  k == warm - 1 and i == len(order) - 1)
                 for k, order in enumerate(rounds) for i, cfg in enumerate(order)]
        taken = 0  # slots whose outcome was recorded

        def keep(outcomes: list[RunOutcome]) -> None:
            nonlocal taken
            load1 = os.getloadavg()[0]  # once a chunk: a fraction of a second apart
            for outcome in outcomes:
                cfg, warm_run, ends_round, ends_warm_up = slots[taken]
                taken += 1
                self.record(cfg, outcome, warm_run, load1)
                if ends_round:
                    self._end_round()
                if ends_warm_up:
                    self._warmed()  # raising here stops the server: the batch goes no further
                    self._status(label, rounds[warm][0].name)
            if taken < len(slots):  # the run being made now (a chunk of many: one of them)
                self._status("warm-up " if slots[taken][1] else label, slots[taken][0].name)
            self.flush(whole_rounds=True)  # a round split between chunks: with the next

        try:
            executor.run_batch(reqs, stop_on_failure=not self.opts.ignore_failure,
                               on_chunk=keep, chunk_s=BATCH_SECONDS)
        except Interrupted as e:
            keep(e.outcomes)
            self.flush()
            raise KeyboardInterrupt from None
        self.flush()

    def eta(self, rounds: int) -> str:
        if self.fixed is not None or self.per_round is None:
            return ""
        left = (self.max_runs - rounds) * self.per_round
        if self.budget is not None:
            left = min(left, self.budget - (time.monotonic() - self.started))
        return f" · ≤ {fmt_seconds(max(0.0, left))} left" if left > 0 else ""

    # -- recording and storing --------------------------------------------------------------
    def record(self, cfg: Configuration, outcome: RunOutcome, warmup: bool,
               load1: float | None = None) -> Run:
        """Keep one run (its metrics already derived by collectors/process._outcome): in its
        configuration, queued for the round's transaction; a failed run ends the measurement
        unless --ignore-failure."""
        run = Run(seq=self.seq, values=outcome.values, status=outcome.status,
                  exit_code=outcome.exit_code, warmup=warmup,
                  started_at=outcome.started_at or time.time(),
                  load1=os.getloadavg()[0] if load1 is None else load1, error=outcome.error)
        self.seq += 1
        cfg.runs.append(run)
        self._describe(cfg, run, outcome)
        if self.store is not None and cfg.id is not None:
            self.pending.append((cfg.id, run))
        if self.on_run:
            self.on_run(cfg, run)
        self.progress.advance(self.task)
        if run.status != "ok" and not self.opts.ignore_failure:
            self.rs.status = "failed"
            self.flush()
            if self.store is not None:
                self.store.update_result(self.rs)
            fix = outcome.fix or ("raise --timeout" if run.status == "timeout" else
                                  "fix the command, or pass --ignore-failure to keep measuring")
            raise RunFailed(f"{cfg.name}: {run.error}", fix)
        return run

    def _describe(self, cfg: Configuration, run: Run, outcome: RunOutcome) -> None:
        """What a run tells about the result: its runtime, its metrics' MetricInfo, and the
        notes (multiplexed counters, processes left running, counters that failed)."""
        rs, opts = self.rs, self.opts
        if run.status == "ok" and cfg.name not in (rs.fingerprint.runtimes or {}):
            label = runtime_label(outcome.stdout)
            if label:
                # The environment names the runtime each configuration ran on (a workload
                # choosing among runtimes, e.g. C# on Mono or CoreCLR, says which it was).
                rs.fingerprint.runtimes = {**(rs.fingerprint.runtimes or {}), cfg.name: label}
        for name in outcome.values:
            if name not in rs.metrics:
                info = outcome.infos.get(name) or metric_info(name, cfg.benchmark or cfg.name,
                                                               outcome.region_used)
                if self.valgrind_mode and name in ("instructions", "instructions_per_op"):
                    info = MetricInfo(name, "count", CALLGRIND_EXACT + (
                        ", timed region only" if opts.region_symbol or opts.client_region
                        else ", whole program"), deterministic=True)
                rs.metrics[name] = info
        for name, frac in outcome.running_fraction.items():
            if frac < 0.999:
                rs.notes.add(said.multiplexed(name, fmt_share(frac, 0)))
        if outcome.killed:  # the first command that left processes is named (NoteKind ONCE)
            rs.notes.add(said.leftover(cfg.name, [k.describe() for k in outcome.killed]))
        if outcome.counter_error:
            rs.notes.add(said.counter_error(outcome.counter_error))

    def _end_round(self) -> None:
        if self.pending:
            self.ended.append(list(self.pending))
        self.pending.clear()

    def flush(self, wait: bool = True, whole_rounds: bool = False) -> None:
        """Store the rounds recorded so far (and a part-recorded one) in one transaction: the
        rounds of one chunk of a launcher batch (about BATCH_SECONDS of runs), acknowledged
        (on_stored) together once it is committed.  A commit per round was 60% of perflab's
        Python time per run of `true` (78 of 128 us, 300 runs).
        A lost database server is waited for (storefaults.ride_out; ``wait=False``: one try): the
        rounds stay in memory, measured, until they are stored, so a server restart costs no
        run.  They leave ``ended`` once their transaction is committed.  ``whole_rounds``:
        a part-recorded round waits for the rest of its runs."""
        if not whole_rounds:
            self._end_round()
        if self.store is None:
            self.ended.clear()
            return
        if len(self.ended) > 1:
            self.ended[:] = [[item for rnd in self.ended for item in rnd]]
        self._tries = 0
        if self.ended:
            ride_out(self._store_ended, self.outage, None if wait else 0.0)
        says = (frozenset(self.rs.metrics), self.rs.settings.primary_metric)
        if self.rs.id is not None and self.rs.status == "running" and says != self.header_says:
            # The stored runs name metrics the stored header does not (the first runs), or the
            # primary metric was chosen: write it now, so that a perflab killed from here on
            # leaves a result that says what its runs measured, as a finished one does.
            self.store.update_result(self.rs, wait=wait)
            self.header_says = says

    def _store_ended(self) -> None:
        assert self.store is not None
        self._tries += 1
        self.store.add_rounds(list(self.ended), committed=self._acked, again=self._tries > 1)

    def _acked(self, runs: list[Run]) -> None:
        self.ended.pop(0)
        if self.on_stored:
            self.on_stored(runs)




def _check_determinism(rs: ResultSet, configs: list[Configuration]) -> None:
    for cfg in configs:
        counts = set(cfg.samples("instructions"))
        if len(counts) > 1:
            lo, hi = min(counts), max(counts)
            rs.notes.add(said.nondeterministic(cfg.name, fmt_fixed(lo), fmt_fixed(hi),
                                               fmt_share((hi - lo) / lo, 3)))
            for m in ("instructions", "instructions_per_op"):
                if m in rs.metrics:
                    i = rs.metrics[m]
                    rs.metrics[m] = MetricInfo(m, i.unit, i.source, deterministic=False)




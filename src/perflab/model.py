"""The data every stage shares: runs, configurations and result sets (what a metric is:
perflab.metrics, the metric registry).

A *result set* is one invocation (a ``stat``, a ``compare``, a suite run, a bisect, an import).
It holds *configurations* (a command measured under one name, in one cell of a parameter
matrix), each with its *runs*; a run holds one value per metric.  Storage, statistics and
reports all speak these types, so no stage reaches into another's internals.
"""

from __future__ import annotations

import copy
import json
import math
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Self

from perflab.judging import Plan
from perflab.metrics import MetricInfo, named_metric
from perflab.notes import Notes


def canonical_params(params: dict[str, Any]) -> str:
    """A stable text key for a parameter set (sorted JSON), used to identify cells and series."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


@dataclass
class Run:
    """One execution of a configuration's command."""

    seq: int  # position in the interleaved schedule of its result set
    values: dict[str, float] = field(default_factory=dict)
    status: str = "ok"  # ok | failed | timeout | signal
    exit_code: int | None = 0
    warmup: bool = False
    started_at: float = 0.0  # unix time
    load1: float | None = None  # 1-minute load average when the run started
    error: str = ""
    id: int | None = None


class RunColumns(Sequence[Run]):
    """Many runs kept as columns of numbers, not as Run objects: about 50 bytes a run with one
    metric where a Run with its values dict takes about 400, so an import of millions of runs
    fits in memory.  It reads as a sequence of Run (each made when it is read: a store writes
    them a batch at a time) and is appended to as a list of Run is; a Run's status and error
    are kept as indices into the few distinct ones."""

    _NONE = -(2**63)  # an exit code that is None

    def __init__(self) -> None:
        self.metrics: dict[str, array[float]] = {}  # name -> values, NaN where a run has none
        self.seq, self.exit_code = array("q"), array("q")
        self.started_at, self.load1 = array("d"), array("d")  # load1 NaN: None
        self.warmup, self.kind = array("b"), array("l")  # kind: index into self.kinds
        self.kinds: list[tuple[str, str]] = []  # (status, error)
        self._kind_index: dict[tuple[str, str], int] = {}

    @classmethod
    def of_samples(cls, columns: dict[str, array[float]], seq: int) -> RunColumns:
        """Successful measured runs, run k holding each column's k-th value (NaN: none; a
        shorter column has none past its end), numbered from ``seq``."""
        out = cls()
        n = max((len(c) for c in columns.values()), default=0)
        for name, col in columns.items():
            out.metrics[name] = col + array("d", [math.nan]) * (n - len(col))
        out.seq = array("q", range(seq, seq + n))
        out.exit_code = array("q", [0]) * n
        out.started_at = array("d", [0.0]) * n
        out.load1 = array("d", [math.nan]) * n
        out.warmup = array("b", [0]) * n
        out.kind = array("l", [out._kind(("ok", ""))]) * n
        return out

    def _kind(self, kind: tuple[str, str]) -> int:
        if kind not in self._kind_index:
            self._kind_index[kind] = len(self.kinds)
            self.kinds.append(kind)
        return self._kind_index[kind]

    def append(self, run: Run) -> None:
        n = len(self.seq)
        for name in run.values.keys() - self.metrics.keys():
            self.metrics[name] = array("d", [math.nan]) * n
        for name, col in self.metrics.items():
            col.append(run.values.get(name, math.nan))
        self.seq.append(run.seq)
        self.exit_code.append(self._NONE if run.exit_code is None else run.exit_code)
        self.started_at.append(run.started_at)
        self.load1.append(math.nan if run.load1 is None else run.load1)
        self.warmup.append(run.warmup)
        self.kind.append(self._kind((run.status, run.error)))

    def __len__(self) -> int:
        return len(self.seq)

    def measured_count(self) -> int:
        """The runs that are neither warm-up nor failed."""
        ok = {i for i, (status, _) in enumerate(self.kinds) if status == "ok"}
        return sum(1 for w, k in zip(self.warmup, self.kind, strict=True) if not w and k in ok)

    def _run(self, i: int) -> Run:
        load1, code = self.load1[i], self.exit_code[i]
        status, error = self.kinds[self.kind[i]]
        values = {name: v for name, col in self.metrics.items() if not math.isnan(v := col[i])}
        return Run(seq=self.seq[i], values=values, status=status,
                   exit_code=None if code == self._NONE else code,
                   warmup=bool(self.warmup[i]), started_at=self.started_at[i],
                   load1=None if math.isnan(load1) else load1, error=error)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._run(k) for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("run index out of range")
        return self._run(i)

    def __iter__(self) -> Iterator[Run]:
        return (self._run(i) for i in range(len(self)))


@dataclass
class Configuration:
    """A command measured under one name, in one cell of a parameter matrix."""

    name: str
    command: list[str]
    benchmark: str = ""  # workload name (eh/cpp) or the command text
    params: dict[str, Any] = field(default_factory=dict)
    is_baseline: bool = False
    commit: str | None = None  # overrides the result set's commit (bisect measures several)
    shell: bool = False
    env: dict[str, str] = field(default_factory=dict)
    runs: list[Run] | RunColumns = field(default_factory=list)  # RunColumns: large imports
    id: int | None = None
    # The cell of the matrix this configuration belongs to: configurations in one cell are
    # compared with each other.  Defaults to its parameters; `compare` puts all its commands in
    # one cell even when their parameters differ (depth=0 vs depth=10 as A and B).
    cell: str = ""
    # A benchmark harness whose output the runner reads (collectors/harness.py: "gobench",
    # "gbench"); empty: the workload JSON line.  The measurement's, not stored.
    harness: str = ""

    def __post_init__(self) -> None:
        if not self.cell:
            self.cell = canonical_params(self.params)

    @property
    def benchmark_key(self) -> str:
        """What the store keys this benchmark by (history series, its primary metric): the
        workload's name, or the command's text."""
        return self.benchmark or " ".join(self.command)

    @property
    def threads(self) -> int | None:
        """The thread count its parameters ask for (``threads``); None without one."""
        v = self.params.get("threads")
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def measured_runs(self) -> list[Run]:
        return [r for r in self.runs if not r.warmup and r.status == "ok"]

    def measured_count(self) -> int:
        """len(measured_runs()), without making a Run of each of a RunColumns."""
        if isinstance(self.runs, RunColumns):
            return self.runs.measured_count()
        return len(self.measured_runs())

    def samples(self, metric: str) -> list[float]:
        return [r.values[metric] for r in self.measured_runs() if metric in r.values]


def _read_stored(cls: type, data: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any],
                                                               tuple[str, ...]]:
    """A stored JSON object split for a typed record (Fingerprint, Settings): the keys that are
    its fields, the others (its ``extra``), and every key in its stored order."""
    data = dict(data or {})
    order = tuple(data)
    known = {f.name for f in fields(cls)} - {"extra", "stored_keys"}
    given = {k: data.pop(k) for k in order if k in known}
    return given, data, order


def _write_stored(record: Any, encode: Callable[[Any], Any], extra_first: bool) -> dict[str, Any]:
    """The JSON object a typed record (Fingerprint, Settings) stores: the object it was read
    from, key for key in its stored order (a key stored as null stays null, a key this version
    does not know comes back from ``extra``), then what was set since: unset fields (None, {})
    left out.  Hand-written: dataclasses and json have no notion of "the keys as stored", and
    nothing stored may be lost or reordered (the golden outputs of tests/core/
    test_stored_results.py)."""
    names = [f.name for f in fields(record) if f.name not in ("extra", "stored_keys")]
    out: dict[str, Any] = {}
    for k in record.stored_keys:
        if k in names:
            out[k] = encode(getattr(record, k))
        elif k in record.extra:
            out[k] = record.extra[k]
    new = {k: encode(getattr(record, k)) for k in names
           if k not in out and getattr(record, k) is not None}
    new = {k: v for k, v in new.items() if v != {}}
    extra = {k: v for k, v in record.extra.items() if k not in out}
    return {**out, **extra, **new} if extra_first else {**out, **new, **extra}


class StoredRecord:
    """What Fingerprint and SuiteRecord share: ``from_json`` reads a stored object (its fields,
    the rest in ``extra``, its key order kept), ``to_json`` writes it back as read."""

    extra: dict[str, Any]
    stored_keys: tuple[str, ...]

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Self:
        given, extra, order = _read_stored(cls, data)
        return cls(**given, extra=extra, stored_keys=order)

    def to_json(self) -> dict[str, Any]:
        return _write_stored(self, lambda v: v, extra_first=False)


# What identifies a machine: one machine gets one row in the store (Fingerprint.identity_hash) and
# results whose machines differ in one of these are compared only with --force.  The rest of a
# fingerprint (load, versions) belongs to a result set.
MACHINE_IDENTITY_KEYS = (
    "hostname", "cpu_model", "cpu_count", "kernel", "arch", "governor", "smt", "thp",
    "pmu", "perf_event_paranoid", "machine_name",
)


@dataclass
class Fingerprint(StoredRecord):
    """The machine a result was measured on and its state at the start (fingerprint.
    machine_fingerprint), stored with the result (``ResultSet.fingerprint``, the results
    table's ``fingerprint`` JSON) and exported as its ``environment``.

    Every key any perflab version wrote is a field; a key a version did not write reads None.
    ``to_json`` writes back the object read by ``from_json`` (same keys, same order, keys this
    version does not know kept in ``extra``), so a stored result loses nothing."""

    hostname: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None
    kernel: str | None = None
    arch: str | None = None
    os: str | None = None
    governor: str | None = None
    smt: str | None = None  # on | off | unknown
    thp: str | None = None  # transparent huge pages: always | madvise | never
    perf_event_paranoid: str | None = None
    load_at_start: list[float] | None = None  # 1, 5 and 15-minute load averages
    python: str | None = None
    perflab_version: str | None = None
    machine_name: str | None = None  # a fleet worker's --name (jobcontext.JobContext)
    machine_tags: list[str] | None = None
    fleet_job: int | None = None  # the fleet job measuring this result
    fleet_submission: str | None = None
    pmu: bool | None = None  # a hardware PMU counts here
    pmu_events: list[str] | None = None
    pmu_reason: str | None = None  # why not, when not
    runtimes: dict[str, str] | None = None  # configuration -> the runtime it ran on (runner)
    machine_id: int | None = None  # the store's machine row (set when a result is loaded)
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know
    stored_keys: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def identity(self) -> dict[str, Any]:
        """The stable part (MACHINE_IDENTITY_KEYS).  ``machine_name`` (a fleet worker's --name)
        is part of it only when set, so machines measured before the fleet existed keep their
        rows."""
        stable = {k: getattr(self, k) for k in MACHINE_IDENTITY_KEYS}
        if stable.get("machine_name") is None:
            stable.pop("machine_name", None)
        return stable

    def identity_hash(self) -> str:
        """The key of the machine's row in the store: a hash of the stable identity (not load
        or time), so one machine gets one row."""
        import hashlib

        stable = json.dumps(self.identity(), sort_keys=True).encode()
        return hashlib.sha256(stable).hexdigest()[:16]

    def label(self, machine_id: object = None) -> str:
        """The machine's name for people: its fleet name (a worker's --name), else its host
        name, else its row id in the store."""
        return str(self.machine_name or self.hostname or f"machine {machine_id}")

    def differences(self, other: Fingerprint) -> dict[str, tuple[Any, Any]]:
        """Identity keys on which two fingerprints disagree (load and versions are not
        identity)."""
        return {k: (getattr(self, k), getattr(other, k)) for k in MACHINE_IDENTITY_KEYS
                if getattr(self, k) != getattr(other, k)}


@dataclass
class PrimaryChoice:
    """The metric that decides a comparison, and why: chosen once per benchmark and machine
    (runner.choose_primary), stored with every result (Settings.primary_choice) and reused by
    the same benchmark's later results on that machine, so that a series keeps one metric."""

    metric: str
    reason: str  # the whole line printed once with the result
    cpu_bound: bool | None = None  # None: not a time metric, nothing to choose
    default: str | None = None  # the wall-clock metric it was chosen against (wall_time...)
    why: str | None = None  # the evidence, for a later result that reuses this choice
    runs: int = 0  # the runs the evidence came from
    # The evidence would change a stored choice (hysteresis: a stored choice is kept unless
    # new runs read the other way by a wide margin).
    decisive: bool = False
    from_result: int | None = None  # reused: the result whose runs made the choice

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrimaryChoice:
        """From a stored object; results of earlier versions kept metric, reason, cpu_bound."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class StopInfo:
    """Why a measurement stopped: after how many rounds, the rule that ended it, and how long
    it measured (runner.measure; printed as "6 runs per configuration in 158 ms: stopped
    because every primary comparison was decided")."""

    rounds: int
    reason: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StopInfo:
        return cls(int(data.get("rounds", 0)), str(data.get("reason", "")),
                   float(data.get("seconds", 0.0)))


@dataclass
class Owner:
    """The process writing a running result (Settings.owner; storage reads a running result
    whose owner is gone as interrupted): its pid, host, boot id and start in clock ticks."""

    pid: int | None = None
    host: str | None = None
    boot_id: str | None = None
    start: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Owner:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class SuiteRecord(StoredRecord):
    """A suite run's plan and progress (``Settings.suite``): written by suites.execute (its
    progress part is suites.execute.SuiteProgress), read by the suite's report, resume and
    estimates.  Every key an earlier version stored is a field (None: not stored); written back
    as read, like Fingerprint."""

    name: str | None = None
    path: str | None = None
    text: str | None = None  # the suite file as it was
    plan: str | None = None  # SuitePlan.fingerprint(): a resume must match it
    baseline: str | None = None
    # How earlier versions judged a suite (Settings.plan folds these in when no comparison)
    threshold: float | None = None
    correction: str | None = None
    estimator: str | None = None
    metrics: list[str] | None = None  # the metrics to report
    primary: str | None = None
    report: dict[str, Any] | None = None  # the suite's [report] table
    skipped: list[str] | None = None  # why cells were left out
    cells: list[str] | None = None
    calibrate: float | None = None  # calibration's target seconds per run
    # Progress (SuiteProgress): cells done, configurations superseded, ...
    done: list[str] | None = None
    superseded: list[int] | None = None
    failed: list[dict[str, str]] | None = None
    groups: list[list[str]] | None = None
    calibrated: dict[str, dict[str, int]] | None = None
    calibration_s: dict[str, dict[str, float]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know
    stored_keys: tuple[str, ...] = field(default=(), repr=False, compare=False)


@dataclass
class Settings:
    """How a result set was made and is to be judged: stored with it (the ``settings`` JSON
    column) and read by the runner, the statistics, the reports, suites and history.

    The keys every stage reads are typed fields; what only one kind of result writes (a
    bisect's steps, an import's file name) stays in ``extra``.  ``to_dict`` writes one flat
    JSON object, leaving out what is unset, and ``from_dict`` reads the stored rows of every
    perflab version.
    """

    primary_metric: str | None = None  # the metric verdicts are decided on
    primary_choice: PrimaryChoice | None = None  # why primary_metric (runner.choose_primary)
    interleaved: bool | None = None  # configurations measured in alternation (paired runs)
    counters: str | None = None  # how counters were collected (perf, rusage, none)
    comparison: Plan | None = None  # how verdicts are judged (judging.Plan: threshold, ...)
    stop: StopInfo | None = None  # why the measurement stopped
    # A suite run's plan and progress (suites.execute); empty for other results
    suite: SuiteRecord = field(default_factory=SuiteRecord)
    file: str | None = None  # the file an import read
    import_format: str | None = None  # the FORMAT of the perflab.imports reader (imports)
    threshold: float | None = None  # a bisect's band (and results of older versions)
    metric: str | None = None  # a bisect's metric
    owner: Owner | None = None  # the process writing a running result (storage)
    # What only one kind of result keeps (a bisect's steps), and keys of earlier schema
    # versions kept as read (``options``: the MeasureOptions of a stat or compare, read by
    # nothing).
    extra: dict[str, Any] = field(default_factory=dict)
    stored_keys: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The flat JSON object the store keeps: the object read, then what was set since
        (unset fields left out)."""
        return _write_stored(self, _to_json, extra_first=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Settings:
        """Settings from a stored (or hand-made) object: known keys to fields, others extra."""
        given, extra, order = _read_stored(cls, data)
        if given.get("suite") is None:
            given.pop("suite", None)
        else:
            given["suite"] = SuiteRecord.from_json(given["suite"])
        if isinstance(given.get("primary_choice"), dict):
            given["primary_choice"] = PrimaryChoice.from_dict(given["primary_choice"])
        if isinstance(given.get("owner"), dict):
            given["owner"] = Owner.from_dict(given["owner"])
        if isinstance(given.get("stop"), dict):
            given["stop"] = StopInfo.from_dict(given["stop"])
        if isinstance(given.get("comparison"), dict):
            given["comparison"] = _stored_plan(given["comparison"], given.get("suite"),
                                               given.get("threshold"))
        return cls(**given, extra=extra, stored_keys=order)

    def plan(self) -> Plan:
        """How the result is judged (judging.Plan.of reads only this): ``comparison``; for a
        result stored without one, what earlier versions kept elsewhere (_stored_plan)."""
        if self.comparison is not None:
            return self.comparison
        return _stored_plan({}, self.suite, self.threshold) or Plan(kind_bands=False,
                                                                     pool_exploratory=False)

    def copy(self) -> Settings:
        return copy.deepcopy(self)


def _to_json(v: Any) -> Any:  # Settings.to_dict: a typed field's stored form
    if isinstance(v, SuiteRecord):
        return v.to_json()
    return v.to_dict() if hasattr(v, "to_dict") else v


def _stored_plan(comparison: dict[str, Any], suite: SuiteRecord | None,
                 threshold: Any) -> Plan | None:  # Settings.from_dict, Settings.plan
    """How a result is judged, in one place however old the result: earlier versions kept a
    suite's threshold, correction and estimator in its ``suite`` entry and a bisect's band in
    ``threshold``; results before per-kind bands were judged with +-threshold for every metric
    (``kind_bands`` False).  Read here, once, from the stored object."""
    comp = dict(comparison)
    suite = suite or SuiteRecord()
    judged = {"threshold": suite.threshold, "correction": suite.correction,
              "estimator": suite.estimator}
    legacy = {k: v for k, v in judged.items() if v is not None and k not in comp}
    if "threshold" not in comp and "threshold" not in legacy and isinstance(
            threshold, int | float):
        legacy["threshold"] = threshold
    if not comp and not legacy:
        return None
    comp = {**legacy, **comp}
    comp.setdefault("kind_bands", False)
    comp.setdefault("pool_exploratory", False)
    return Plan.from_dict(comp)


@dataclass
class ResultSet:
    """One invocation of perflab: its configurations, runs, metrics and environment."""

    kind: str  # stat | compare | suite | bisect | import
    configurations: list[Configuration] = field(default_factory=list)
    metrics: dict[str, MetricInfo] = field(default_factory=dict)
    fingerprint: Fingerprint = field(default_factory=Fingerprint)
    settings: Settings = field(default_factory=Settings)
    commit: str | None = None
    dirty: bool | None = None
    repo: str | None = None
    label: str = ""
    status: str = "running"  # running | complete | interrupted | failed
    created_at: float = 0.0
    notes: Notes = field(default_factory=Notes)  # what was said once (no PMU, ...): perflab.notes
    id: int | None = None

    @property
    def source(self) -> str:
        """Which tool measured the runs: "perflab", or the imported file's tool (hyperfine,
        pyperf, perf-stat).  Tools time different things (perflab's launcher and region,
        hyperfine's fork/exec/wait, pyperf's loop, perf's whole process), so values of two
        sources are never compared without saying so."""
        return self.settings.import_format or "perflab"

    def __post_init__(self) -> None:
        if not isinstance(self.notes, Notes):  # stored notes: their text (kind TEXT)
            self.notes = Notes(self.notes)
        if isinstance(self.settings, dict):  # a hand-made result: ResultSet(settings={...})
            self.settings = Settings.from_dict(self.settings)
        if isinstance(self.fingerprint, dict):  # ResultSet(fingerprint={...})
            self.fingerprint = Fingerprint.from_json(self.fingerprint)

    def name_metrics_of_runs(self) -> None:
        """Add to ``metrics`` each metric a run holds that they do not name, with what its name
        tells (named_metric): a result whose perflab was killed has runs and a header written
        before its first run, which names none."""
        for cfg in self.configurations:
            for run in cfg.runs:
                for name in run.values:
                    if name not in self.metrics:
                        self.metrics[name] = named_metric(name, cfg.benchmark or cfg.name,
                                                          "region_time" in run.values)

    def cells(self) -> list[str]:
        seen: dict[str, None] = {}
        for c in self.configurations:
            seen.setdefault(c.cell, None)
        return list(seen)

    def configurations_in(self, cell: str) -> list[Configuration]:
        return [c for c in self.configurations if c.cell == cell]

    def baseline_in(self, cell: str) -> Configuration | None:
        configs = self.configurations_in(cell)
        for c in configs:
            if c.is_baseline:
                return c
        return configs[0] if configs else None

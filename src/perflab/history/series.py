"""Stored results as series over commits: one point per (result set, configuration).

A series is keyed by benchmark, cell (canonical parameters), configuration name, machine and
metric.  Its points are in commit order: the store's time order, or git's topological order
when a repository is given.  Bisect result sets are left out: they measure commits out of
order and would read as spurious changes.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.format import fmt_params, status_phrase
from perflab.history import git
from perflab.history import store as hstore
from perflab.history.store import EXCLUDED_KINDS, glob_like
from perflab.metrics import metric_direction, named_metric
from perflab.storage import Store

__all__ = ["EXCLUDED_KINDS", "glob_like"]  # kept importable from here (tests, other verbs)


@dataclass(frozen=True)
class SeriesKey:
    benchmark: str
    cell: str
    config: str
    machine_id: int | None
    metric: str
    # Which tool measured it (ResultSet.source): an imported hyperfine series and perflab's
    # own series of one benchmark are two series, never one that alternates between tools.
    source: str = "perflab"
    # The machine's name for people (Store.machine_names: the worker's --name or the host
    # name), shown wherever the series is; not part of its identity (machine_id is).
    machine: str = field(default="", compare=False)

    @property
    def machine_text(self) -> str:
        return self.machine or f"machine {self.machine_id}"

    def label(self) -> str:
        parts = [self.benchmark, self.params_text(),
                 f"[{self.config}]" if self.config != self.benchmark else "",
                 self.machine_text, self.metric,
                 f"(imported from {self.source})" if self.source != "perflab" else ""]
        return " ".join(x for x in parts if x)

    def params_text(self) -> str:
        return fmt_params(json.loads(self.cell) if self.cell else {})

    def slug(self) -> str:
        """A file-name-safe identifier, stable for the same key."""
        key = [self.benchmark, self.cell, self.config, self.machine_id, self.metric]
        text = json.dumps(key + ([self.source] if self.source != "perflab" else []))
        h = hashlib.sha1(text.encode()).hexdigest()[:8]
        base = "".join(ch if ch.isalnum() else "-" for ch in f"{self.benchmark}-{self.metric}")
        return f"{base.strip('-')[:60]}-{h}"


@dataclass
class Series:
    """One benchmark x params x configuration x machine x metric: its points in commit order."""

    key: SeriesKey
    unit: str = ""
    deterministic: bool = False
    higher_is_better: bool = False
    direction: str = "lower"  # lower | higher | none (a checksum: never a regression)
    points: list[Point] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.higher_is_better and self.direction == "lower":
            self.direction = "higher"

    def medians(self) -> list[float]:
        return [p.median for p in self.points]


@dataclass
class Point:
    result_id: int
    created_at: float
    kind: str
    commit: str | None
    dirty: bool | None
    samples: list[float]
    median: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    mean: float = math.nan
    stdev: float = math.nan
    status: str = "complete"  # its result's: "interrupted" when its perflab stopped early

    @property
    def label(self) -> str:
        """Its result's kind, and how it ended when that was not complete ("stat,
        interrupted: partial")."""
        phrase = status_phrase(self.status)
        return f"{self.kind}, {phrase}" if phrase else self.kind

    @property
    def n(self) -> int:
        return len(self.samples)


def _summarize_point(p: Point, deterministic: bool) -> None:
    """Median with its 95% CI from the core's statistics (one place to change if it moves).

    Not through reports.analysis.Analysis: a point is one configuration's samples
    at one commit, read from the store's rows across many results, not a ResultSet with a
    plan and comparisons; each point is summarized once, here, when the series is read."""
    from perflab.stats import summarize

    s = summarize(p.samples, deterministic=deterministic)
    p.median, p.ci_low, p.ci_high = s.median, s.ci_low, s.ci_high
    p.mean, p.stdev = s.mean, s.stdev


def parse_params(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise PerflabError(f"--param '{item}' is not k=v", "write it as --param depth=10")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _params_match(cell_params: dict[str, Any], want: dict[str, str]) -> bool:
    # Compare as text so --param depth=10 matches a stored int 10.
    return all(k in cell_params and str(cell_params[k]) == v for k, v in want.items())


_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([hdw])\s*$")
_AGE_UNITS = {"h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}


def parse_since(text: str | None, now: float | None = None) -> float | None:
    """``--since``: an age (``12h``, ``30d``, ``2w``) or a date (ISO 8601, ``YYYY-MM-DD``, UTC
    unless it names a zone) as epoch seconds; None without one.  A time after ``now`` is
    refused: it would select nothing and read as "no change"."""
    if text is None:
        return None
    from datetime import UTC, datetime

    now = time.time() if now is None else now
    m = _AGE.match(text)
    if m:
        return now - float(m.group(1)) * _AGE_UNITS[m.group(2)]
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise PerflabError(f"--since '{text}' is neither an age nor a date",
                           "write it as 30d, 12h, 2w or 2026-11-01") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    at = when.timestamp()
    if at > now:
        raise PerflabError(f"--since {text} is in the future, so no result is that recent",
                           "give a past date or an age such as 30d")
    return at


@dataclass(frozen=True)
class SeriesFilter:
    """Which stored series: of ``benchmark`` (a glob), of these parameters, of ``metric``, of
    the configuration ``config``, measured on ``machine`` (its name or id), in the results
    created from ``since`` (epoch seconds) on.  None: any."""
    benchmark: str | None = None
    params: dict[str, str] | None = None
    metric: str | None = None
    config: str | None = None
    machine: int | str | None = None
    since: float | None = None


def load_series(store: Store, which: SeriesFilter | None = None,
                repo: Path | None = None) -> list[Series]:
    """Every stored series ``which`` selects, in commit order (of ``repo``'s history when
    given).  The benchmark, config, machine and time filters are applied by the database, so
    a large store is not read whole."""
    w = which or SeriesFilter()
    benchmark, metric, since = w.benchmark, w.metric, w.since
    names = store.machine_names()
    mid = machine_id(names, w.machine)
    rows = hstore.run_rows(store, benchmark, w.config, mid, since)
    source_of = hstore.import_sources(store, mid, since)
    out = _series_of(rows, source_of, names, benchmark, w.params or {}, metric)
    if repo is not None:
        _in_commit_order(out, repo)
    for s in out:
        for p in s.points:
            _summarize_point(p, s.deterministic)
    out = [s for s in out if s.points]
    # machines by name (then id, for two of one name): the same order in every output
    out.sort(key=lambda s: (s.key.benchmark, s.key.cell, s.key.config,
                            s.key.machine_text.casefold(), s.key.machine_id or 0, s.key.metric))
    return out


def machine_id(names: dict[int, str], machine: int | str | None) -> int | None:
    """``--machine``: a name (Store.machine_names) or a number, as the machine's id."""
    if machine is None or isinstance(machine, int):
        return machine
    ids = [mid for mid, name in names.items() if name == machine]
    if len(ids) == 1:
        return ids[0]
    if machine.strip().isdigit():
        return int(machine)
    if ids:
        raise PerflabError(f"{len(ids)} machines are named {machine!r} (ids "
                           f"{', '.join(map(str, sorted(ids)))})",
                           "pass --machine with one of those ids")
    known = sorted(set(names.values()), key=str.casefold)
    raise PerflabError(f"no machine named {machine!r} in the store",
                       f"known machines: {', '.join(known[:12]) or 'none yet'}")


def _series_of(rows: list[dict[str, Any]], source_of: dict[int, str], names: dict[int, str],
               benchmark: str | None, want: dict[str, str], metric: str | None) -> list[Series]:
    """The run rows (store.run_rows) as series, one point per (result, configuration), in the
    rows' time order; the glob and the parameters matched here (SQL's LIKE is wider)."""
    by_key: dict[SeriesKey, Series] = {}
    points: dict[tuple[SeriesKey, int], Point] = {}
    for r in rows:
        if benchmark and not fnmatch.fnmatchcase(r["benchmark"], benchmark):
            continue
        if want and not _params_match(r["params"] or {}, want):
            continue
        minfo = r["metrics"] or {}
        for m, v in (r["values"] or {}).items():
            if metric and m != metric:
                continue
            if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
                continue
            key = SeriesKey(r["benchmark"], r["cell"], r["name"], r["machine_id"], m,
                            source_of.get(r["rid"], "perflab"),
                            names.get(r["machine_id"], "") if r["machine_id"] else "")
            s = by_key.get(key)
            if s is None:
                # a header never written (its perflab killed): what the name tells
                s = by_key[key] = _new_series(key, minfo.get(m) or named_metric(
                    m, r["benchmark"], "region_time" in r["values"]).to_dict())
            pk = (key, r["cid"])
            p = points.get(pk)
            if p is None:
                p = points[pk] = Point(r["rid"], r["created_at"], r["kind"],
                                       r["ccommit"] or r["rcommit"], r["dirty"], [],
                                       status=r["status"])
                s.points.append(p)
            p.samples.append(float(v))
    return list(by_key.values())


def _new_series(key: SeriesKey, info: dict[str, Any]) -> Series:
    hib = bool(info.get("higher_is_better", False))
    # Results stored before metrics had a direction: derive it from the name.
    direction = info.get("direction") or ("higher" if hib else metric_direction(key.metric))
    return Series(key, unit=info.get("unit", ""),
                  deterministic=bool(info.get("deterministic", False)),
                  higher_is_better=direction == "higher", direction=direction)


def _in_commit_order(found: list[Series], repo: Path) -> None:
    """Each series' points in the repository's topological order; points whose commit the
    repository does not have are left out, with a note."""
    top = git.toplevel(repo)
    if top is None:
        raise PerflabError(f"{repo} is not a git work tree",
                           "pass --repo with the repository the results were measured from")
    order = git.topo_index(top)
    for s in found:
        known = [p for p in s.points if _lookup(order, p.commit) is not None]
        if len(known) < len(s.points):
            s.notes.append(f"{len(s.points) - len(known)} point(s) left out: their commit "
                           f"is not in {top}")
        # Stable sort: several results of one commit keep their time order.
        known.sort(key=lambda p: _lookup(order, p.commit) or 0)
        s.points = known


def _lookup(order: dict[str, int], commit: str | None) -> int | None:
    if not commit:
        return None
    if commit in order:
        return order[commit]
    # Stored ids may be abbreviated (imports, --commit): match a unique prefix.
    hits = [i for c, i in order.items() if c.startswith(commit)]
    return hits[0] if len(hits) == 1 else None


def known_benchmarks(store: Store) -> list[str]:
    return hstore.benchmarks(store)


def default_metric(store: Any, found: list[Series]) -> str:
    """The metric a history shows by default: the primary metric the latest result used."""
    metrics = {s.key.metric for s in found}
    latest = max(found, key=lambda s: s.points[-1].created_at)
    try:
        primary = store.load(latest.points[-1].result_id).settings.primary_metric
    except PerflabError:
        primary = None
    for m in (primary, "wall_time", "ns_per_op", "instructions"):
        if m in metrics:
            return str(m)
    return sorted(metrics)[0]


def history_series(store: Store, which: SeriesFilter, repo: Path | None = None, *,
                   since_text: str | None = None,
                   param_text: list[str] | None = None) -> list[Series]:
    """The series ``perflab history`` shows: those ``which`` selects, of its metric (None: the
    default_metric).  None found raises one PerflabError saying which filter emptied it (the
    --since window, as ``since_text`` reads, or the benchmark with ``param_text``), and
    listing the stored benchmarks; a metric none has raises one listing theirs."""
    from dataclasses import replace

    found = load_series(store, replace(which, metric=None), repo)
    if not found:
        # Only the error path reads the window's outside, to say which filter emptied it.
        if which.since is not None and load_series(store, replace(which, metric=None,
                                                                  since=None)):
            raise PerflabError(f"no results for benchmark '{which.benchmark}' since "
                               f"{since_text}",
                               "give an earlier --since, or leave it out for the whole history")
        names = known_benchmarks(store)
        hint = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "") if names else "none yet"
        raise PerflabError(f"no stored results for benchmark '{which.benchmark}'"
                           + (f" with {param_text}" if param_text else ""),
                           f"stored benchmarks: {hint}")
    if which.metric:
        series = [s for s in found if s.key.metric == which.metric]
        if not series:
            have = sorted({s.key.metric for s in found})
            raise PerflabError(f"benchmark '{which.benchmark}' has no metric '{which.metric}'",
                               f"choose one of {', '.join(have)}")
        return series
    return [s for s in found if s.key.metric == default_metric(store, found)]


def deciding_series(store: Any, series: list[Series]) -> list[Series]:
    """The series detect looks at by default: the metric that decided each result when it was
    measured (runner.choose_primary: CPU time for CPU-bound work) and the wall-clock metric
    it was chosen over, which keeps its own row."""
    from perflab.runner import CPU_COUNTERPART

    wall_of = {cpu: wall for wall, cpu in CPU_COUNTERPART.items()}
    wall_of["cpu_time"] = "wall_time"
    primary: dict[int, str | None] = {}
    keep = []
    for s in series:
        rid = s.points[-1].result_id
        if rid not in primary:
            try:
                primary[rid] = store.load(rid).settings.primary_metric
            except PerflabError:
                primary[rid] = None
        p = primary[rid] or "wall_time"
        if s.key.metric in (p, wall_of.get(p, p)):
            keep.append(s)
    return keep

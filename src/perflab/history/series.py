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

import sqlalchemy as sa

from perflab.errors import PerflabError
from perflab.history import git
from perflab.model import Settings, metric_direction
from perflab.storage import Store, configurations, results, runs

EXCLUDED_KINDS = ("bisect",)


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

    def label(self) -> str:
        params = json.loads(self.cell) if self.cell else {}
        p = " ".join(f"{k}={v}" for k, v in params.items())
        parts = [self.benchmark, p, f"[{self.config}]" if self.config != self.benchmark else "",
                 f"machine {self.machine_id}", self.metric,
                 f"(imported from {self.source})" if self.source != "perflab" else ""]
        return " ".join(x for x in parts if x)

    def params_text(self) -> str:
        params = json.loads(self.cell) if self.cell else {}
        return " ".join(f"{k}={v}" for k, v in params.items())

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

    @property
    def n(self) -> int:
        return len(self.samples)


def _summarize_point(p: Point, deterministic: bool) -> None:
    """Median with its 95% CI from the core's statistics (one place to change if it moves)."""
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
    """``--since``: an age (``12h``, ``30d``, ``2w``) or a date (``2026-11-01``, ISO 8601, UTC
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


def glob_like(glob: str) -> str:
    """A SQL LIKE pattern (escape character ``\\``) selecting at least what the fnmatch glob
    matches: ``*`` and ``?`` translate; a ``[...]`` class does not, so the pattern stops there
    with ``%``.  LIKE is also case-insensitive on SQLite, so callers match the glob again."""
    out = []
    for ch in glob:
        if ch == "[":
            return "".join(out) + "%"
        out.append("%" if ch == "*" else "_" if ch == "?"
                   else "\\" + ch if ch in "\\%_" else ch)
    return "".join(out)


def load_series(
    store: Store,
    benchmark: str | None = None,
    params: dict[str, str] | None = None,
    metric: str | None = None,
    config: str | None = None,
    machine: int | None = None,
    repo: Path | None = None,
    since: float | None = None,
) -> list[Series]:
    """Every stored series matching the filters (``benchmark`` may be a glob), in commit order.
    ``since`` (epoch seconds) keeps the results created from then on.  The benchmark, config,
    machine and time filters are applied by the database, so a large store is not read whole."""

    def go(conn: sa.Connection) -> list[dict[str, Any]]:
        q = (sa.select(results.c.id.label("rid"), results.c.kind, results.c.created_at,
                       results.c.commit.label("rcommit"), results.c.dirty, results.c.machine_id,
                       results.c.metrics, configurations.c.id.label("cid"),
                       configurations.c.name, configurations.c.benchmark,
                       configurations.c.params, configurations.c.cell,
                       configurations.c.commit.label("ccommit"), runs.c["values"])
             .select_from(results.join(configurations).join(runs))
             .where(runs.c.warmup.is_(False), runs.c.status == "ok",
                    results.c.kind.notin_(EXCLUDED_KINDS),
                    # a fleet job's attempt lost with its worker: measured again in full
                    results.c.status != "abandoned")
             .order_by(results.c.created_at, results.c.id, configurations.c.id, runs.c.seq))
        if benchmark and not any(ch in benchmark for ch in "*?["):
            q = q.where(configurations.c.benchmark == benchmark)
        elif benchmark:
            q = q.where(configurations.c.benchmark.like(glob_like(benchmark), escape="\\"))
        if since is not None:
            q = q.where(results.c.created_at >= since)
        if config:
            q = q.where(configurations.c.name == config)
        if machine is not None:
            q = q.where(results.c.machine_id == machine)
        return [dict(r) for r in conn.execute(q).mappings()]

    def sources(conn: sa.Connection) -> dict[int, str]:
        q = sa.select(results.c.id, results.c.settings).where(results.c.kind == "import")
        if since is not None:
            q = q.where(results.c.created_at >= since)
        if machine is not None:
            q = q.where(results.c.machine_id == machine)
        return {r.id: str(Settings.from_dict(r.settings).import_format or "import")
                for r in conn.execute(q)}

    rows = store.read(go)
    source_of = store.read(sources)
    want = params or {}
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
                            source_of.get(r["rid"], "perflab"))
            s = by_key.get(key)
            if s is None:
                info = minfo.get(m, {})
                hib = bool(info.get("higher_is_better", False))
                # Results stored before metrics had a direction: derive it from the name.
                direction = info.get("direction") or ("higher" if hib else metric_direction(m))
                s = by_key[key] = Series(key, unit=info.get("unit", ""),
                                         deterministic=bool(info.get("deterministic", False)),
                                         higher_is_better=direction == "higher",
                                         direction=direction)
            pk = (key, r["cid"])
            p = points.get(pk)
            if p is None:
                p = points[pk] = Point(r["rid"], r["created_at"], r["kind"],
                                       r["ccommit"] or r["rcommit"], r["dirty"], [])
                s.points.append(p)
            p.samples.append(float(v))
    out = list(by_key.values())
    if repo is not None:
        top = git.toplevel(repo)
        if top is None:
            raise PerflabError(f"{repo} is not a git work tree",
                               "pass --repo with the repository the results were measured from")
        order = git.topo_index(top)
        for s in out:
            known = [p for p in s.points if _lookup(order, p.commit) is not None]
            if len(known) < len(s.points):
                s.notes.append(f"{len(s.points) - len(known)} point(s) left out: their commit "
                               f"is not in {top}")
            # Stable sort: several results of one commit keep their time order.
            known.sort(key=lambda p: _lookup(order, p.commit) or 0)
            s.points = known
    for s in out:
        for p in s.points:
            _summarize_point(p, s.deterministic)
    out = [s for s in out if s.points]
    out.sort(key=lambda s: (s.key.benchmark, s.key.cell, s.key.config,
                            s.key.machine_id or 0, s.key.metric))
    return out


def _lookup(order: dict[str, int], commit: str | None) -> int | None:
    if not commit:
        return None
    if commit in order:
        return order[commit]
    # Stored ids may be abbreviated (imports, --commit): match a unique prefix.
    hits = [i for c, i in order.items() if c.startswith(commit)]
    return hits[0] if len(hits) == 1 else None


def known_benchmarks(store: Store) -> list[str]:
    def go(conn: sa.Connection) -> list[str]:
        q = sa.select(configurations.c.benchmark).distinct().order_by(configurations.c.benchmark)
        return [str(x) for x in conn.execute(q).scalars()]

    return store.read(go)


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

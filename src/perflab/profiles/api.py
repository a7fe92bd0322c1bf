"""Reading stored profiles: top symbols, diffs of two profiles, flame graphs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.errors import PerflabError
from perflab.fingerprint import PROFILE_IDENTITY_KEYS as IDENTITY_KEYS
from perflab.profiles.analysis import DiffRow, SymbolStat, diff_symbols
from perflab.profiles.store import ProfileRecord, load_profile, profiles_dir
from perflab.storage import Store

if TYPE_CHECKING:
    from perflab.model import ResultSet


def top_symbols(profile_id: int, store: Store | None = None, *, limit: int | None = 20,
                sort: str = "self") -> list[SymbolStat]:
    """The profile's symbols by self share (``sort="total"``: by share with children)."""
    store = store or Store()
    rec = load_profile(store, profile_id)
    stats = [SymbolStat.from_dict(d) for d in rec.summary.get("symbols", [])]
    if sort == "total":
        stats.sort(key=lambda s: (-s.total_share, -s.self_share, s.symbol))
    elif sort != "self":
        raise PerflabError(f"unknown sort '{sort}'", "use self or total")
    return stats[:limit] if limit else stats


@dataclass
class ProfileDiff:
    a: ProfileRecord
    b: ProfileRecord
    rows: list[DiffRow]  # by absolute change of self share, largest first
    warnings: list[str] = field(default_factory=list)
    svg: Path | None = None  # the differential flame graph (B's shape, red = larger in B)

    @property
    def a_ops(self) -> float | None:
        return profile_ops(self.a)

    @property
    def b_ops(self) -> float | None:
        return profile_ops(self.b)

    def per_op(self, row: DiffRow) -> tuple[float, float, float] | None:
        """The row's self samples per operation in A, in B, and the change (B - A), as
        PerfView's diffs show them: share x the profile's samples / the run's ops.  Shares alone
        hide a symbol whose cost per operation stayed put while everything else got faster.
        None when a profile does not know its operations (a plain command)."""
        a_ops, b_ops = self.a_ops, self.b_ops
        if not a_ops or not b_ops:
            return None
        a = row.a_share * float(self.a.summary.get("samples", 0)) / a_ops
        b = row.b_share * float(self.b.summary.get("samples", 0)) / b_ops
        return a, b, b - a


    @property
    def cpu_time(self) -> bool:
        """Both profiles sampled cpu-clock: a sample's weight is CPU nanoseconds."""
        return all(r.sampler.split(":")[0] == "cpu-clock" for r in (self.a, self.b))

    def ns_per_op(self, row: DiffRow) -> tuple[float, float, float] | None:
        """The same as per_op in CPU nanoseconds per operation (cpu-clock profiles only: share x
        the profile's total weight, which is CPU ns, / ops)."""
        a_ops, b_ops = self.a_ops, self.b_ops
        if not a_ops or not b_ops or not self.cpu_time:
            return None
        a = row.a_share * float(self.a.summary.get("weight", 0)) / a_ops
        b = row.b_share * float(self.b.summary.get("weight", 0)) / b_ops
        return a, b, b - a


def profile_ops(rec: ProfileRecord) -> float | None:
    """The operations the profiled run did (its workload JSON's ``ops``), if it said."""
    wl = rec.summary.get("workload") or {}
    ops = wl.get("ops") if isinstance(wl, dict) else None
    if isinstance(ops, int | float) and not isinstance(ops, bool) and ops > 0:
        return float(ops)
    return None


def machine_differences(a: ProfileRecord, b: ProfileRecord) -> dict[str, tuple[object, object]]:
    return {k: (a.machine.get(k), b.machine.get(k)) for k in IDENTITY_KEYS
            if a.machine.get(k) is not None and b.machine.get(k) is not None
            and a.machine.get(k) != b.machine.get(k)}


def diff_profiles(a_id: int, b_id: int, store: Store | None = None, *,
                  flame_graph: bool = True) -> ProfileDiff:
    """Per symbol: self share in A, in B, and the delta, sorted by absolute delta; plus a
    differential flame graph.  Warns when the profiles come from different machines, events or
    call-graph modes."""
    store = store or Store()
    a, b = load_profile(store, a_id), load_profile(store, b_id)
    sa_ = [SymbolStat.from_dict(d) for d in a.summary.get("symbols", [])]
    sb_ = [SymbolStat.from_dict(d) for d in b.summary.get("symbols", [])]
    out = ProfileDiff(a=a, b=b, rows=diff_symbols(sa_, sb_))
    diffs = machine_differences(a, b)
    if diffs:
        what = ", ".join(f"{k} {va!s} vs {vb!s}" for k, (va, vb) in diffs.items())
        out.warnings.append(f"the profiles come from different machines ({what}): shares may "
                            "differ for reasons other than the code")
    if a.sampler.split(":")[0] != b.sampler.split(":")[0]:
        out.warnings.append(f"different sampling events ({a.sampler} vs {b.sampler}): shares "
                            "of cycles and of CPU time are not the same thing")
    if a.call_graph != b.call_graph:
        out.warnings.append(f"different call-graph modes ({a.call_graph} vs {b.call_graph}): "
                            "total shares are not comparable")
    if flame_graph:
        if a.folded_path.is_file() and b.folded_path.is_file():
            from perflab.profiles.flamegraph import diff_flame_graph

            target = profiles_dir(store) / f"diff-{a.id}-{b.id}.svg"
            try:
                out.svg = diff_flame_graph(
                    a.folded_path, b.folded_path, target,
                    title=f"profile {b.id} ({b.name}) vs {a.id} ({a.name})",
                    subtitle="red: larger share in B, blue: smaller")
            except PerflabError as e:
                out.warnings.append(f"no differential flame graph: {e.line()}")
        else:
            out.warnings.append("no differential flame graph: a profile's folded stacks are "
                                f"missing ({a.folded_path} or {b.folded_path})")
    return out


def profile_configurations(rs: ResultSet, store: Store,
                           recorded: Callable[[int, str], None] = lambda pid, name: None,
                           ) -> list[ProfileDiff]:
    """A perf profile of each configuration of ``rs`` (stored with the result), and the diff
    of each other configuration's against the first's; ``recorded(profile id, name)`` is
    called as each profile is stored."""
    from perflab.profiles.record import record_profile

    ids = []
    for cfg in rs.configurations:
        argv = ["/bin/sh", "-c", " ".join(cfg.command)] if cfg.shell else cfg.command
        pid = record_profile(argv, env=cfg.env or None, name=cfg.name, store=store,
                             result_id=rs.id, configuration_id=cfg.id)
        recorded(pid, cfg.name)
        ids.append(pid)
    return [diff_profiles(ids[0], other, store) for other in ids[1:]]

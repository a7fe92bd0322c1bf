"""Reading stored profiles: top symbols, diffs of two profiles, flame graphs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from perflab.errors import PerflabError
from perflab.profiles.analysis import DiffRow, SymbolStat, diff_symbols
from perflab.profiles.record import IDENTITY_KEYS, ProfileRecord, load_profile, profiles_dir
from perflab.storage import Store


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

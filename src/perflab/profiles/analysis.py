"""From samples to what explains a difference: symbol shares, folded stacks, profile diffs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from perflab.profiles.perfscript import Frame, Sample


@dataclass
class SymbolStat:
    """A symbol's share of the samples, as `perf report --no-children` (self) and with
    children (total: the samples whose stack contains it anywhere)."""

    symbol: str
    module: str
    self_weight: float
    total_weight: float
    self_share: float  # 0..1 of all samples' weight
    total_share: float
    resolved: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"symbol": self.symbol, "module": self.module, "self": self.self_weight,
                "total": self.total_weight, "self_share": self.self_share,
                "total_share": self.total_share, "resolved": self.resolved}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SymbolStat:
        return cls(symbol=d["symbol"], module=d["module"], self_weight=d["self"],
                   total_weight=d["total"], self_share=d["self_share"],
                   total_share=d["total_share"], resolved=bool(d.get("resolved", True)))


@dataclass
class Aggregate:
    samples: int = 0
    weight: float = 0.0
    events: Counter[str] = field(default_factory=Counter)
    symbols: list[SymbolStat] = field(default_factory=list)  # by self share, then total share
    folded: Counter[str] = field(default_factory=Counter)  # "root;...;leaf" -> weight
    unresolved_by_module: dict[str, float] = field(default_factory=dict)  # leaf weight share


def _fold_name(fr: Frame) -> str:
    # A frame without a symbol is named after its module ("[libgcc_s.so.1]", "[unknown]") as
    # inferno-collapse-perf does: per-address names would split a flame graph into slivers
    # (frame-pointer walks through code without frame pointers yield junk return addresses).
    # The top-symbols table keeps the addresses.
    name = fr.symbol if fr.resolved else f"[{fr.module_name.strip('[]')}]"
    # ";" separates frames in the folded format and a trailing " N" is the count.
    return name.replace(";", ":").replace("\n", " ")


def aggregate(samples: Iterable[Sample]) -> Aggregate:
    agg = Aggregate()
    self_w: Counter[tuple[str, str]] = Counter()
    total_w: Counter[tuple[str, str]] = Counter()
    resolved: dict[tuple[str, str], bool] = {}
    unresolved_leaf: Counter[str] = Counter()
    for s in samples:
        agg.samples += 1
        agg.weight += s.period
        agg.events[s.event] += 1
        frames = s.frames or [Frame(symbol="[no stack]", module="[unknown]", address=0,
                                    resolved=False)]
        leaf = frames[0]
        key = (leaf.symbol, leaf.module)
        self_w[key] += s.period
        if not leaf.resolved:
            unresolved_leaf[leaf.module] += s.period
        seen: set[tuple[str, str]] = set()
        for fr in frames:
            k = (fr.symbol, fr.module)
            resolved[k] = fr.resolved
            if k not in seen:  # recursion counts once per sample
                seen.add(k)
                total_w[k] += s.period
        agg.folded[";".join(_fold_name(fr) for fr in reversed(frames))] += s.period
    w = agg.weight or 1.0
    agg.symbols = sorted(
        (SymbolStat(symbol=k[0], module=k[1], self_weight=self_w.get(k, 0),
                    total_weight=tw, self_share=self_w.get(k, 0) / w, total_share=tw / w,
                    resolved=resolved.get(k, True))
         for k, tw in total_w.items()),
        key=lambda st: (-st.self_weight, -st.total_weight, st.symbol))
    agg.unresolved_by_module = {m: v / w for m, v in unresolved_leaf.most_common()}
    return agg


def folded_text(folded: Counter[str]) -> str:
    """The folded-stacks format (Brendan Gregg's stackcollapse output) that inferno reads."""
    return "".join(f"{stack} {int(round(n))}\n" for stack, n in sorted(folded.items()) if n > 0)


def parse_folded(text: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        if stack and n.strip().lstrip("-").isdigit():
            out[stack] += int(n)
    return out


@dataclass
class DiffRow:
    symbol: str
    module: str
    a_share: float  # self share in A (0..1)
    b_share: float
    a_total: float  # total (with children) share in A
    b_total: float

    @property
    def delta(self) -> float:
        return self.b_share - self.a_share

    @property
    def total_delta(self) -> float:
        return self.b_total - self.a_total


def diff_symbols(a: list[SymbolStat], b: list[SymbolStat]) -> list[DiffRow]:
    """Per symbol its self share in A and in B, sorted by the absolute change of self share
    (then of total share, so callers whose children moved come next).

    Symbols match by name alone: two builds of one program usually live at different paths
    (and may be named differently), and a name in two modules of one profile is rare enough
    to add up."""
    rows: dict[str, DiffRow] = {}
    for st in a:
        row = rows.setdefault(st.symbol, DiffRow(st.symbol, st.module, 0.0, 0.0, 0.0, 0.0))
        row.a_share += st.self_share
        row.a_total += st.total_share
    for st in b:
        row = rows.setdefault(st.symbol, DiffRow(st.symbol, st.module, 0.0, 0.0, 0.0, 0.0))
        row.b_share += st.self_share
        row.b_total += st.total_share
    return sorted(rows.values(),
                  key=lambda r: (-abs(r.delta), -abs(r.total_delta), r.symbol))

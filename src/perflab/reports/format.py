"""Human-readable numbers with units (shared by every report)."""

from __future__ import annotations

import math


def fmt_value(value: float, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit == "s":
        return fmt_seconds(value)
    if unit == "ms":
        return fmt_seconds(value / 1e3)
    if unit == "ns":
        return fmt_seconds(value / 1e9)
    if unit == "KiB":
        return f"{value / 1024:.1f} MiB" if value >= 10240 else f"{value:.0f} KiB"
    if unit == "1/s":
        return fmt_count(value) + "/s"
    return fmt_count(value)


def fmt_seconds(s: float) -> str:
    a = abs(s)
    if a >= 1:
        return f"{s:.3f} s"
    if a >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    if a >= 1e-6:
        return f"{s * 1e6:.3f} µs"
    return f"{s * 1e9:.1f} ns"


def fmt_count(v: float) -> str:
    if abs(v) >= 1e4 or float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:,.3g}" if abs(v) < 1 else f"{v:,.2f}"


def fmt_pct(ratio: float) -> str:
    if ratio is None or math.isnan(ratio) or math.isinf(ratio):
        return "-"
    return f"{(ratio - 1) * 100:+.2f}%"


def fmt_change(ratio: float, lo: float, hi: float, exact: bool = False) -> str:
    if exact:
        return f"{fmt_pct(ratio)} (exact)"
    if math.isnan(lo):
        return fmt_pct(ratio)
    return f"{fmt_pct(ratio)} [{(lo - 1) * 100:+.1f}, {(hi - 1) * 100:+.1f}]"

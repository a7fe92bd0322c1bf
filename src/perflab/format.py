"""Human-readable numbers with units (shared by every report), and user text made safe for
Markdown."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Protocol

from perflab.errors import printable
from perflab.metrics import seconds_per


class Change(Protocol):
    """What fmt_change and fmt_ratio read of a comparison (stats.Comparison)."""

    ratio: float
    ci_low: float
    ci_high: float
    diff: float
    diff_low: float
    diff_high: float
    base_center: float
    scale: str
    deterministic: bool


# What would make a Markdown renderer read text as something else: a backslash (an escape of
# its own), a pipe (a table's cell ends), and the two characters that begin raw HTML, which
# GitHub renders: '<' before a tag's first character, and '&' of an entity reference.
_MD_SPECIAL = re.compile(r"[\\|]|<(?=[A-Za-z/!?])|&(?=#?[A-Za-z0-9]+;)")


def md_text(text: object) -> str:
    """User-controlled text (names, labels, commands, notes) and perflab's own figures
    ("<1e-16", ">+9,900") for a Markdown table or line, as plain text: a backslash before each
    character Markdown would read as syntax (a backslash, a pipe, the start of an HTML tag or
    entity: what renders a name "<script>" as those characters), a newline cannot end the row,
    and control characters are shown as \\xNN."""
    s = printable(_MD_SPECIAL.sub(lambda m: "\\" + m.group(), str(text)), lines=True)
    return " ".join(s.splitlines())


# Query parameters whose values are credentials: access_token, api_key, X-Amz-Signature,
# sslpassword, auth, client_secret...
_SECRET_PARAM = re.compile(r"token|key|secret|pass|pwd|sig|auth|cred|session", re.IGNORECASE)
_AUTHORITY = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<authority>[^/?#]*)")


def redact_url(url: str, keep_user: bool = False) -> str:
    """A URL fit for printing (a database URL, a webhook): the userinfo (user and password,
    either of which may be a token) shown as ***, and the values of query parameters whose
    names look like credentials (token, key, secret, password, sig, auth...) as ***.  The one
    rule for every URL perflab prints.  ``keep_user``: a URL to paste into a command (a fix
    line's --db), whose user name is needed and not a secret: the user kept, the password
    left out (the server asks for it, or takes it from PGPASSWORD / ~/.pgpass)."""
    m = _AUTHORITY.match(url)
    if m and "@" in m["authority"]:  # the last '@' ends the userinfo (a password may hold '@')
        userinfo, _, host = m["authority"].rpartition("@")
        user = userinfo.partition(":")[0] if keep_user else "***"
        url = m["scheme"] + (user + "@" if user else "") + host + url[m.end():]
    base, q, rest = url.partition("?")
    if not q:
        return url
    query, hash_, fragment = rest.partition("#")
    params = [re.sub(r"^([^=]*)=.*", lambda p: f"{p[1]}=***" if _SECRET_PARAM.search(p[1])
                     else p[0], part, flags=re.DOTALL) for part in re.split(r"([&;])", query)]
    return base + q + "".join(params) + hash_ + fragment


# The one number formatter of perflab: compare, stat, report, history, the HTML pages and the
# exports all print a value through fmt_value, so 32,012 ns reads "32.01 µs" everywhere.  A
# unit's size in seconds is the metric registry's (metrics.seconds_per).


def status_phrase(status: str) -> str:
    """What a result's status adds to its title: nothing for a complete result, "interrupted:
    partial" for one stopped before its end (Ctrl-C, SIGKILL, a full disk: the runs stored
    before are all there), else the status ("failed")."""
    return "" if status == "complete" else (
        "interrupted: partial" if status == "interrupted" else status)


def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def fmt_params(params: Mapping[str, object]) -> str:
    """A cell's parameters as people type them: "depth=10 threads=2" ("" for none)."""
    return " ".join(f"{k}={v}" for k, v in params.items())


def env_differences(envs: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """Each environment's variables that are not the same in all of ``envs`` (set in some and
    not in others, or set to other values), in the order given: what tells apart configurations
    that run one command under different runtime knobs (DOTNET_TieredCompilation=0)."""
    keys = dict.fromkeys(k for e in envs for k in e)
    differ = [k for k in keys if len({e.get(k) for e in envs}) > 1]
    return [{k: e[k] for k in differ if k in e} for e in envs]


def fmt_env(env: Mapping[str, str]) -> str:
    """Environment variables as a shell sets them before a command: "A=1 B='x y'" ("" for
    none)."""
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())


def fmt_number(v: float) -> str:
    """Whole numbers exactly, thousands grouped ("14,122,994"); from 1,000 up no decimals;
    below, four significant figures ("32.01")."""
    if _missing(v):
        return "-"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if float(v).is_integer() or abs(v) >= 1e3:
        return f"{v:,.0f}"
    return f"{v:.4g}"


def time_scale(seconds: float) -> tuple[float, str]:
    """The unit a duration reads best in: (seconds per unit, unit).  Below 10 µs it stays in
    ns, the unit per-operation costs are thought in ("1,430 ns per throw")."""
    a = abs(seconds)
    for per, unit in ((1.0, "s"), (1e-3, "ms"), (1e-5, "µs")):
        if a >= per:
            return (1e-6 if unit == "µs" else per), unit
    return 1e-9, "ns"


def fmt_value(value: float | None, unit: str) -> str:
    """A value in the unit people think in: times rescaled (s, ms, µs, ns), KiB up to 10 MiB
    then MiB, rates with "/s", counts bare, any other unit appended."""
    if value is None or _missing(value):
        return "-"
    if (f := seconds_per(unit)) is not None:
        secs = value * f
        per, u = time_scale(secs)
        return f"{fmt_number(secs / per)} {u}"
    if unit == "KiB":
        return f"{fmt_number(value / 1024)} MiB" if abs(value) >= 10240 else \
            f"{fmt_number(value)} KiB"
    if unit == "1/s":
        return fmt_number(value) + "/s"
    if unit in ("", "count"):
        return fmt_number(value)
    return f"{fmt_number(value)} {unit}"


def fmt_alike(values: Sequence[float], unit: str) -> list[str]:
    """Values read side by side (a sample's modes) in one scale, the largest's: "980 ns" and
    "1.05 µs" read as "0.98 µs" and "1.05 µs"; other units as fmt_value."""
    f = seconds_per(unit)
    if f is None or not values:
        return [fmt_value(v, unit) for v in values]
    per, u = time_scale(max(abs(v) for v in values) * f)
    return [f"{fmt_number(v * f / per)} {u}" for v in values]


def fmt_interval(median: float, low: float, high: float, unit: str, *,
                 exact: bool = False) -> str:
    """``median [low, high] unit`` in the median's unit; a deterministic value (an exact
    count) is one number: ``14,122,994 (exact)``, never an interval of three equal numbers."""
    if _missing(median):
        return "-"
    if exact and (_missing(low) or low == high == median):
        return f"{fmt_value(median, unit)} (exact)"
    if (f := seconds_per(unit)) is not None:
        per, u = time_scale(median * f)

        def num(x: float) -> str:
            return fmt_number(x * f / per)
    elif unit == "KiB" and abs(median) >= 10240:
        u = "MiB"

        def num(x: float) -> str:
            return fmt_number(x / 1024)
    else:
        u = "" if unit in ("count",) else unit

        def num(x: float) -> str:
            return fmt_number(x)
    if _missing(low) or _missing(high):
        return f"{num(median)} {u} (no CI)".replace("  ", " ")
    return f"{num(median)} [{num(low)}, {num(high)}] {u}".strip()


def fmt_seconds(s: float) -> str:
    return fmt_value(s, "s")


def fmt_duration(s: float) -> str:
    """A wall-clock duration of minutes to hours, as estimates and ETAs print it: "45s",
    "6m22s", "122h05m" ("?" when unknown)."""
    if not math.isfinite(s):
        return "?"
    s = int(round(s))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def fmt_count(v: float) -> str:
    return fmt_number(v)


def fmt_band(rel: float, absolute: float, unit: str) -> str:
    """An equivalence band as a person reads it: ±1%, ±64 KiB, or ±1% or ±0.5 (the wider)."""
    parts = ([f"±{rel * 100:.3g}%"] if rel else []) + (
        [f"±{fmt_value(absolute, unit)}"] if absolute else [])
    return " or ".join(parts) or "±0"


def fmt_pct(ratio: float) -> str:
    if ratio is None or math.isnan(ratio) or math.isinf(ratio):
        return "-"
    return f"{(ratio - 1) * 100:+.2f}%"


def fmt_signed(value: float, unit: str, like: float | None = None) -> str:
    """A change in the metric's own unit: +1.234 ms, -12 KiB, +3 (counts).  With ``like`` (the
    value it changes, e.g. the baseline's centre) a time is printed in that value's unit, so a
    change sits beside its value in one unit family ("-6.39 µs" next to "1.31 ms", never
    "-6,390 ns"); a count's change keeps at most two decimals ("+0.02", not "+0.02443")."""
    if value is None or math.isnan(value):
        return "-"
    sign = "+" if value > 0 else "-" if value < 0 else "±"
    a = abs(value)
    f = seconds_per(unit)
    if f is not None and like is not None and not _missing(like) and like != 0:
        per, u = time_scale(like * f)
        return f"{sign}{fmt_number(a * f / per)} {u}"
    if unit in ("", "count") and not float(a).is_integer() and a < 1e3:
        return sign + fmt_number(round(a, 2))
    return sign + fmt_value(a, unit)


def fmt_cv(center: float, cv: float, stdev: float, unit: str) -> str:
    """The spread printed after a centre: " ±1.2%" (the CV).  Around a centre of 0 a CV says
    nothing ("0 ±556.4%"): the spread is then the standard deviation in the value's unit
    (" ±sd 3 ns"); nothing when it is unknown."""
    if _missing(cv) or _missing(center):
        return ""
    if center == 0:
        return "" if _missing(stdev) else f" ±sd {fmt_value(stdev, unit)}"
    return f" ±{cv:.1%}"


def fmt_change(c: Change, unit: str, absolute: bool = True) -> str:
    """A comparison's change: the % with the absolute change in the metric's unit (unless
    ``absolute`` is False: a table that shows both values beside it), and the CI (in %; at the
    comparison's adjusted level).  A baseline of 0 has no %: the absolute change and its CI are
    shown instead ('+1 from 0'); an exact count keeps its absolute change."""
    if c.scale == "exact" or c.deterministic:
        if math.isnan(c.ratio):
            return f"{fmt_signed(c.diff, unit)} from 0 (exact)"
        return f"{fmt_pct(c.ratio)} ({fmt_signed(c.diff, unit, like=c.base_center)}, exact)"
    if math.isnan(c.ratio):
        if math.isnan(c.diff):
            return "-"
        if c.diff == 0 and c.diff_low == 0 and c.diff_high == 0:
            return "±0 (both 0)"
        txt = f"{fmt_signed(c.diff, unit)} from {fmt_value(c.base_center, unit)}"
        if not math.isnan(c.diff_low):
            txt += f" [{fmt_signed(c.diff_low, unit)}, {fmt_signed(c.diff_high, unit)}]"
        return txt
    txt = fmt_pct(c.ratio)
    if absolute and not math.isnan(c.diff):
        txt += f" ({fmt_signed(c.diff, unit, like=c.base_center)})"
    if math.isnan(c.ci_low):
        return txt
    return f"{txt} [{fmt_ci_end(c.ci_low)}, {fmt_ci_end(c.ci_high)}]"


# A ratio's CI end beyond 100x is shown as such: a few runs with a wide spread, judged at a
# family's strict level, reach ends like "+11839965189732404003225447956480.0".
CI_END_SHOWN = 100.0


def fmt_ci_end(ratio: float) -> str:
    """One end of a ratio's CI as a % change: "+12.3", or ">+9,900" past CI_END_SHOWN."""
    if ratio > CI_END_SHOWN:
        return f">+{(CI_END_SHOWN - 1) * 100:,.0f}"
    return f"{(ratio - 1) * 100:+.1f}"


# Plain figures in running text and table cells.  Each says what kind of figure it prints, so
# the same kind reads the same everywhere (tests/core/test_inline_formats.py: no numeric format
# spec outside this module).

def fmt_share(fraction: float, digits: int = 1) -> str:
    """A fraction as a percentage: 0.0123 -> "1.2%" (a band, a CV, a share of samples)."""
    return f"{fraction:.{digits}%}"


def fmt_change_pct(pct: float, digits: int = 2) -> str:
    """A change already in percent, signed: 3.456 -> "+3.46%"."""
    return f"{pct:+.{digits}f}%"


def fmt_points(delta: float, digits: int = 1) -> str:
    """A signed change in percentage points of a fraction: 0.034 -> "+3.4"."""
    return f"{delta * 100:+.{digits}f}"


def fmt_sig(x: float, digits: int = 3) -> str:
    """``digits`` significant figures, shortest form: p-values, factors, raw figures."""
    return f"{x:.{digits}g}"


def fmt_fixed(x: float, digits: int = 0) -> str:
    """A figure rounded to ``digits`` decimals: a ratio (0.982), a load (3.41), a whole
    number of seconds in a message ("after 12 s")."""
    return f"{x:.{digits}f}"


def fmt_p(p: float) -> str:
    """Three significant figures, but never rounded up onto the 0.05 line it is judged by; a p
    below double precision's resolution (or 0: runs that all differ by the same amount) reads
    "<1e-16", never "0"."""
    if p < 1e-16:
        return "<1e-16"
    for digits in range(3, 17):  # 0.0499999 needs 6 digits to stay below 0.05
        s = fmt_sig(p, digits)
        if not p < 0.05 <= float(s):
            return s
    return repr(p)


def fmt_plain(x: float) -> str:
    """A number as a person would type it (an option's value, a limit, a setting): 0.05,
    1e-06, 30; the shortest form of six significant figures."""
    return f"{x:g}"


def fmt_per_op(v: float, signed: bool = False) -> str:
    """A per-operation figure: three significant figures, thousands grouped ("+1,234")."""
    s = f"{v:+,.3g}" if abs(v) < 1000 else f"{v:+,.0f}"
    return s if signed else s.lstrip("+")


def fmt_ratio(c: Change, suffix: str = "") -> str:
    """A comparison's ratio with its CI, three decimals: "1.034 [1.012, 1.057]" (``suffix``
    after the ratio: "1.034x [...]"); the ratio alone without a CI, "-" without a ratio."""
    ratio, low, high = c.ratio, c.ci_low, c.ci_high
    if _missing(ratio):
        return "-"
    if _missing(low):
        return f"{ratio:.3f}{suffix}"
    return f"{ratio:.3f}{suffix} [{low:.3f}, {high:.3f}]"

"""Regressions ready to file: ``perflab detect --report DIR [--webhook URL]``.

One Markdown file per regression that is not ignored (the same change seen on several machines
is one report listing them), with the history plot as a PNG beside it, and the same content as
JSON POSTed to a webhook (chat or issue bots), one request per regression.

Everything that comes from users or the store (benchmark names, configurations, commands,
machine names, commit subjects) is escaped for Markdown (perflab.format.md_text) or put in a
code fence longer than any backtick run inside it.
"""

from __future__ import annotations

import base64
import http.client
import json
import math
import re
import shlex
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.format import fmt_change_pct, fmt_pct, fmt_sig, fmt_value, md_text, redact_url
from perflab.history import git
from perflab.history import store as hstore
from perflab.history.detect import ChangePoint
from perflab.history.git import short
from perflab.history.reproduce import (
    Side,
    bisect_lines,
    bisect_var,
    build_command,
    cleanup_line,
    compare_flags,
    db_arg,
    db_flag,
    fresh_compare,
    suite_measure,
    tree_var,
)
from perflab.history.series import Point, Series
from perflab.model import Settings
from perflab.table import Column, Table
from perflab.validate import output_dir


@dataclass
class Regression:
    benchmark: str
    cell: str
    params: str
    config: str
    metric: str
    unit: str
    commit_before: str | None
    commit_after: str | None
    command: list[str]
    shell: bool
    workload: bool
    items: list[tuple[Series, ChangePoint, str]] = field(default_factory=list)  # + machine
    # the machines that measured the same range and show no change there (detect's
    # across_machines), so the report names every machine that measured it
    unchanged: list[tuple[Series, ChangePoint, str]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # the configuration's own variables
    build: str | None = None  # the shell command that built what was measured, if stored
    repo: str | None = None  # the repository the results were measured in, if stored
    settings: Settings = field(default_factory=Settings)  # the after result's
    # the two sides as stored (the first machine's before and after results); None: the
    # after command on both sides
    sides: tuple[Side, Side] | None = None

    @property
    def machines(self) -> list[str]:
        return [m for _, _, m in self.items]

    @property
    def title(self) -> str:
        where = f" ({self.params})" if self.params else ""
        changes = [cp.change_pct for _, cp, _ in self.items]
        lo, hi = min(changes), max(changes)
        pct = (fmt_change_pct(lo, 1) if abs(hi - lo) < 0.05 else
               f"{fmt_change_pct(lo, 1)} to {fmt_change_pct(hi, 1)}")
        kind = "Regression (drift)" if all(cp.kind == "drift" for _, cp, _ in self.items) \
            else "Regression"
        measured = len(self.items) + len(self.unchanged)
        on = f"{len(self.items)} of {measured}" if self.unchanged else str(len(self.items))
        return (f"{kind}: {self.benchmark}{where} [{self.config}] {self.metric} {pct} "
                f"between {short(self.commit_before)} and {short(self.commit_after)} on "
                f"{on} machine{'s' if measured != 1 else ''}")

    def slug(self) -> str:
        return self.items[0][0].key.slug() + f"-{short(self.commit_after)[:10]}"


def group(store: Any, found: list[tuple[Series, ChangePoint]]) -> list[Regression]:
    """Regressions (not ignored) grouped by what changed and where: one per benchmark, cell,
    configuration, metric and commit range, listing every machine it appears on."""
    from perflab.workloads.registry import names as workload_names

    names = store.machine_names()
    try:
        workloads = set(workload_names())
    except Exception:  # noqa: BLE001 - without a registry, commands are shown as commands
        workloads = set()
    out: dict[tuple[Any, ...], Regression] = {}
    for s, cp in found:
        if not cp.regression or cp.ignored or cp.kind == "unchanged":
            continue
        k = s.key
        key = (k.benchmark, k.cell, k.config, k.metric, cp.commit_before, cp.commit_after)
        if key not in out:
            before = _side(store, cp.result_before, k.config, cp.commit_before)
            after = _side(store, cp.result_after, k.config, cp.commit_after)
            settings, repo = hstore.result_origin(store, cp.result_after)
            out[key] = Regression(
                benchmark=k.benchmark, cell=k.cell, params=k.params_text(), config=k.config,
                metric=k.metric, unit=s.unit, commit_before=cp.commit_before,
                commit_after=cp.commit_after, command=after.argv, shell=after.shell,
                env=after.env, workload=k.benchmark in workloads,
                build=build_command(settings, k.config, repo), repo=repo, settings=settings,
                sides=(before, after))
        machine = k.machine or names.get(k.machine_id or -1, k.machine_text)
        out[key].items.append((s, cp, machine))
    for s, cp in found:
        k = s.key
        key = (k.benchmark, k.cell, k.config, k.metric, cp.commit_before, cp.commit_after)
        if cp.kind == "unchanged" and key in out:
            machine = k.machine or names.get(k.machine_id or -1, k.machine_text)
            out[key].unchanged.append((s, cp, machine))
    return list(out.values())


def _side(store: Any, result_id: int, config: str, commit: str | None) -> Side:
    """One side of a change point as stored: its command and the work tree it ran in."""
    command, shell, env = hstore.configuration_command(store, result_id, config)
    _, repo = hstore.result_origin(store, result_id)
    return Side(commit or "", command, shell, env, repo)


def git_log(repo: Path | None, before: str | None, after: str | None) -> list[str]:
    if repo is None or not before or not after:
        return []
    return git.log_oneline(repo, before, after)


def _point(s: Series, cp: ChangePoint, after: bool) -> Point:
    return s.points[cp.index if after else cp.index - 1]


def _ci(p: Point, unit: str) -> str:
    if math.isnan(p.ci_low):
        return fmt_value(p.median, unit)
    return (f"{fmt_value(p.median, unit)} [{fmt_value(p.ci_low, unit)}, "
            f"{fmt_value(p.ci_high, unit)}]")


def _bisect_command(r: Regression, text: str) -> str:
    """What bisect measures: the workload, or the command (argv; a shell command's text
    through sh -c), its paths relative to the repository."""
    if r.workload:
        params = " ".join(f"-p {shlex.quote(p)}" for p in r.params.split())
        return f"--workload {shlex.quote(r.benchmark)} {params}".rstrip()
    if r.shell:
        return f"-- sh -c {shlex.quote(text)}"
    return f"-- {text}"


def commands(r: Regression, repo: Path | None, db: str | None = None,
             shown_db: str = "") -> list[str]:
    """To reproduce, lines that work when pasted into sh: every machine's stored pair compared
    again (in the store ``db`` names: reproduce.db_flag); a fresh compare of the two commits (a
    worktree of each, built with the build command the results were made with, each side's
    own command run in its own worktree, in one interleaved run with the results' settings);
    a bisect between them with the same build, in a worktree of its own."""
    at = db_flag(db, shown_db)
    metric = f" -m {shlex.quote(r.metric)}"
    out = ["# the stored results compared again, machine by machine"]
    out += [f"perflab compare --from-db {cp.result_before} --from-db {cp.result_after}{metric}"
            f"{at}  # {' '.join(m.split())}" for _, cp, m in r.items]
    before, after = r.commit_before or "BEFORE", r.commit_after or "AFTER"
    where = repo or (Path(r.repo) if r.repo else None)
    repo_s = shlex.quote(str(where)) if where else "REPO"
    flags = compare_flags(r.settings, r.metric)
    sides = r.sides or (Side(before, r.command, r.shell, r.env, r.repo),
                        Side(after, r.command, r.shell, r.env, r.repo))
    texts = (sides[0].text(), sides[1].text())
    trees = []
    if r.workload:
        params = " ".join(f"-p {shlex.quote(p)}" for p in r.params.split())
        out.append(f"# at each of {short(before)} and {short(after)} (git -C {repo_s} "
                   f"checkout ...): perflab workloads build && perflab compare "
                   f"-W {shlex.quote(r.benchmark)} {params} {flags}")
        build = shlex.quote(r.build) if r.build else "'YOUR BUILD COMMAND'"
    else:
        out += fresh_compare(repo_s, (before, texts[0]), (after, texts[1]), flags, r.build)
        trees = [tree_var(before), tree_var(after)]
        build = '"$BUILD"'
    timeout = suite_measure(r.settings).get("timeout")
    more = f" --timeout {shlex.quote(str(timeout))}" if isinstance(timeout, int | float) else ""
    if texts[0] != texts[1] and not r.workload:
        out += ["# no bisect: the two commits ran different commands (each made relative to "
                "its work tree), and bisect runs one command at every commit"]
    else:
        out += bisect_lines(repo_s, before, after, build,
                            f"{metric.strip()}{more} {_bisect_command(r, texts[1])}")
        trees.append(bisect_var(after))
    out.append(cleanup_line(repo_s, trees))
    return out


def fence(lines: list[str]) -> str:
    longest = max((len(m) for ln in lines for m in re.findall(r"`+", ln)), default=0)
    f = "`" * max(3, longest + 1)
    return f"{f}sh\n" + "\n".join(lines) + f"\n{f}"


def to_dict(r: Regression, repo: Path | None, plot: str | None,
            db: str | None = None, shown_db: str = "") -> dict[str, Any]:
    per = []
    for s, cp, m in r.items:
        b, a = _point(s, cp, False), _point(s, cp, True)
        per.append({
            "machine": m, "machine_id": s.key.machine_id, "change_pct": cp.change_pct,
            "p_value": cp.p_value, "result_before": cp.result_before,
            "result_after": cp.result_after,
            "before": {"median": b.median, "ci_low": b.ci_low, "ci_high": b.ci_high,
                       "runs": b.n, "segment_mean": cp.mean_before},
            "after": {"median": a.median, "ci_low": a.ci_low, "ci_high": a.ci_high,
                      "runs": a.n, "segment_mean": cp.mean_after},
        })
    unchanged = [{"machine": m, "machine_id": s.key.machine_id, "change_pct": cp.change_pct,
                  "p_value": cp.p_value, "result_before": cp.result_before,
                  "result_after": cp.result_after} for s, cp, m in r.unchanged]
    return {"title": r.title, "benchmark": r.benchmark, "params": r.params, "cell": r.cell,
            "configuration": r.config, "metric": r.metric, "unit": r.unit,
            "machines": r.machines, "machines_unchanged": unchanged,
            "commit_before": r.commit_before,
            "commit_after": r.commit_after, "git_log": git_log(repo, r.commit_before,
                                                               r.commit_after),
            "per_machine": per, "plot": plot, "commands": commands(r, repo, db, shown_db)}


def regression_markdown(d: dict[str, Any], unit: str) -> str:
    lines = [f"# {md_text(d['title'])}", ""]
    lines += [f"- **Benchmark:** {md_text(d['benchmark'])}",
              f"- **Cell:** {md_text(d['params'] or '(no parameters)')}",
              f"- **Configuration:** {md_text(d['configuration'])}",
              f"- **Metric:** {md_text(d['metric'])}",
              f"- **Machines:** {md_text(', '.join(d['machines']))}"
              + "".join(f"; measured the range, no change found: {md_text(m['machine'])} "
                        f"({fmt_change_pct(m['change_pct'], 1)}, one-sided p "
                        f"{fmt_sig(m['p_value'], 2)})" for m in d["machines_unchanged"]),
              f"- **Commit range:** `{md_text(short(d['commit_before']))}.."
              f"{md_text(short(d['commit_after']))}` (the change lies after the first, up to "
              "and including the second)", ""]
    if d["git_log"]:
        lines += ["## Commits in the range", "", fence(d["git_log"]), ""]
    t = Table("", [Column("machine", "left"), Column("before: median [95% CI]"),
                   Column("after: median [95% CI]"), Column("change"), Column("p")])
    for m in d["per_machine"]:
        b, a = m["before"], m["after"]
        bp = Point(0, 0.0, "", None, None, [], b["median"], b["ci_low"], b["ci_high"])
        ap = Point(0, 0.0, "", None, None, [], a["median"], a["ci_low"], a["ci_high"])
        t.add_row(m["machine"], f"{_ci(bp, unit)} ({b['runs']} runs)",
                  f"{_ci(ap, unit)} ({a['runs']} runs)", fmt_pct(1 + m["change_pct"] / 100),
                  fmt_sig(m["p_value"], 2))
    lines += ["## Before and after", "", t.to_markdown().rstrip("\n")]
    lines += ["", "Change: the mean of the point medians after the change against the mean "
              "before it (the change-point test); medians and CIs are of the two points next "
              "to the change.", ""]
    if d["plot"]:
        lines += ["## History", "", f"![history of {md_text(d['benchmark'])}]({d['plot']})", ""]
    lines += ["## Reproduce", "", fence(d["commands"]), ""]
    return "\n".join(lines)


def write_reports(store: Any, found: list[tuple[Series, ChangePoint]], out_dir: Path,
                  repo: Path | None) -> list[tuple[Path, dict[str, Any]]]:
    from perflab.history.plot import plot_series

    output_dir(out_dir, "--report")
    written = []
    for r in group(store, found):
        slug = r.slug()
        png = plot_series([(s, [cp]) for s, cp, _ in r.items], out_dir / f"{slug}.png",
                          title=f"{r.benchmark} {r.params}".strip())
        d = to_dict(r, repo, png.name, db_arg(store), str(getattr(store, "location", "")))
        md = out_dir / f"{slug}.md"
        md.write_text(regression_markdown(d, r.unit))
        d["markdown"] = md.read_text()
        written.append((md, d))
    return written


def check_webhook(url: str) -> None:
    """A --webhook must be an http(s) URL with a host and a numeric port, if any (checked
    before detect does any work)."""
    shown = redact_url(url)
    if not re.match(r"^https?://[^/\s]+", url):
        raise PerflabError(f"--webhook {shown!r} is not an http(s) URL",
                           "give the full URL, e.g. https://chat.example.org/hooks/perflab")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as e:
        raise PerflabError(f"--webhook {shown} is not a valid URL ({e})",
                           "write it as https://HOST[:PORT]/PATH") from None
    if not parts.hostname:
        raise PerflabError(f"--webhook {shown} names no host",
                           "write it as https://HOST[:PORT]/PATH")


def _webhook_request(url: str, doc: dict[str, Any]) -> urllib.request.Request:
    """The POST of ``doc`` to ``url``; a user and password in the URL are sent as HTTP basic
    authentication (as curl does), not left in the host name."""
    parts = urllib.parse.urlsplit(url)
    headers = {"Content-Type": "application/json", "User-Agent": "perflab-detect"}
    if "@" in parts.netloc:
        userinfo, _, hostport = parts.netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        token = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
        headers["Authorization"] = "Basic " + base64.b64encode(token.encode()).decode()
        url = urllib.parse.urlunsplit(parts._replace(netloc=hostport))
    return urllib.request.Request(url, data=json.dumps(doc).encode(), method="POST",
                                  headers=headers)


def _unreachable(e: BaseException, url: str) -> str:
    """What failed when the webhook could not be reached, in words (no secret of the URL)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "?"
    where = f"{host}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    reason = getattr(e, "reason", e)
    if isinstance(reason, socket.gaierror):
        return f"could not resolve host {host}: {reason.strerror}"
    if isinstance(reason, ConnectionRefusedError):
        return f"connection refused by {where}"
    if isinstance(reason, TimeoutError | socket.timeout):
        return f"no answer from {where} in time"
    if isinstance(reason, ssl.SSLError):
        return f"TLS failed with {where}: {reason.reason or reason}"
    if isinstance(reason, OSError) and reason.strerror:
        return f"{reason.strerror} ({where})"
    return f"{type(reason).__name__} ({where})"


def post(url: str, doc: dict[str, Any], timeout: float = 10.0) -> None:
    """POST one regression as JSON; a refusal or an unreachable URL is one line that names
    what failed, with the URL's credentials masked (format.redact_url)."""
    check_webhook(url)
    shown = redact_url(url)
    try:
        with urllib.request.urlopen(_webhook_request(url, doc),  # noqa: S310 - http(s) only
                                    timeout=timeout) as resp:
            resp.read()
    except urllib.error.HTTPError as e:
        raise PerflabError(f"the webhook {shown} answered {e.code} {e.reason}",
                           "check the URL and its token; the reports are written in --report "
                           "DIR") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
        raise PerflabError(f"cannot reach the webhook {shown} ({_unreachable(e, url)})",
                           "check the URL; the reports are written in --report DIR") from None

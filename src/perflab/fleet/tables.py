"""The fleet's terminal tables (``perflab fleet status``): its machines, the latest
submissions with their jobs counted by state, and jobs one row each."""

from __future__ import annotations

import shlex
import time
from typing import TYPE_CHECKING

from perflab.format import fmt_fixed
from perflab.table import Column, Table

if TYPE_CHECKING:
    from perflab.fleet.queue import JobRow, Machine, SubmissionRow


def age(t: float | None, now: float) -> str:
    """How long before ``now`` ``t`` was: seconds or minutes ago, else the date; "never"."""
    if t is None:
        return "never"
    d = max(0.0, now - t)
    if d < 120:
        return f"{fmt_fixed(d)} s ago"
    if d < 7200:
        return f"{fmt_fixed(d / 60)} min ago"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def states_text(counts: dict[str, int]) -> str:
    """Jobs counted by state, the ones that need a look first: "1 failed, 3 done"."""
    order = ("failed", "running", "queued", "done", "cancelled")
    keys = [k for k in order if counts.get(k)] + sorted(set(counts) - set(order))
    return ", ".join(f"{counts[k]} {k}" for k in keys)


def machines_table(machines: list[Machine], now: float, heartbeat: float) -> Table:
    """One row per machine: its state (idle, busy with its job, lost after missed
    ``heartbeat``s), last heartbeat, tags and fingerprint."""
    mt = Table.of("machines", [Column(h, "left") for h in (
        "machine", "state", "last heartbeat", "tags", "host", "cpu", "kernel")])
    for m in machines:
        fp = m.fingerprint
        cpu = f"{fp.cpu_model or '?'} x{fp.cpu_count or '?'}"
        state = m.liveness(now, heartbeat)
        if state == "busy" and m.current_job:
            state = f"busy (job {m.current_job})"
        mt.add_row(m.name, state, age(m.last_heartbeat, now), ", ".join(m.tags),
                   m.hostname or "?", cpu, str(fp.kernel or "?"))
    return mt


def submissions_table(subs: list[SubmissionRow], now: float) -> Table:
    """One row per submission: when, its command, its jobs and their states."""
    st = Table.of("submissions", [Column(h, "left", fold=True) for h in (
        "submission", "submitted", "command", "jobs", "states")])
    for s in subs:
        st.add_row(s.submission, age(s.submitted_at, now), shlex.join(s.argv), str(s.jobs),
                   states_text(s.states))
    return st


def job_table(title: str, rows: list[JobRow]) -> Table:
    """One row per job: its machine, state, tries, command, and its results or error."""
    jt = Table.of(title, [Column(h, "left", fold=True) for h in (
        "job", "submission", "machine", "state", "tries", "command", "results / error")])
    for j in rows:
        detail = (", ".join(map(str, j.result_ids)) if j.state == "done" else (j.error or ""))
        jt.add_row(str(j.job_id), j.submission, j.machine, j.state, str(j.attempts),
                   shlex.join(j.argv), detail)
    return jt

"""What a fleet worker tells the verb it runs: the machine, its tags, the job and submission.

The worker (perflab.fleet.worker) runs a job as ``python -m perflab --fleet-job FILE VERB ...``,
FILE a JSON object written by ``JobContext.write``.  That option is read at one place, the
command line's entry point (perflab.cli.main), which makes the context the ``current()`` one
for the verb's run; the core asks ``current()`` where it needs it: the fingerprint (the
machine's name and tags are part of its identity in the store; the job and submission tag the
result) and the store (a job's connections are named ``perflab-job:NAME`` and held only while
used).  The value is frozen and lives in a ContextVar: never shared with another thread.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError

# The entry point's option: ``perflab --fleet-job FILE VERB ...`` (the worker's, not a user's).
OPTION = "--fleet-job"


@dataclass(frozen=True)
class JobContext:
    machine: str  # the worker's --name
    tags: tuple[str, ...] = ()
    job: int | None = None  # the queue's job id
    submission: str | None = None

    def fingerprint_fields(self) -> dict[str, Any]:
        """The fingerprint's fields this context sets (model.Fingerprint's names)."""
        out: dict[str, Any] = {"machine_name": self.machine, "machine_tags": list(self.tags)}
        if self.job is not None:
            out["fleet_job"] = self.job
            out["fleet_submission"] = self.submission
        return out

    @property
    def client(self) -> str | None:
        """The application_name of a job's database connections (None: not a job)."""
        return None if self.job is None else "perflab-job:" + self.machine

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self)))
        return path

    @classmethod
    def read(cls, path: str | Path) -> JobContext:
        try:
            raw = json.loads(Path(path).read_text())
            ctx = cls(machine=str(raw["machine"]), tags=tuple(map(str, raw.get("tags") or ())),
                      job=None if raw.get("job") is None else int(raw["job"]),
                      submission=raw.get("submission"))
        except (OSError, ValueError, TypeError, KeyError) as e:
            raise PerflabError(f"{OPTION} {path} is not a fleet job's context ({e})",
                               f"{OPTION} is for perflab's fleet worker; leave it out") from None
        return ctx


_CURRENT: ContextVar[JobContext | None] = ContextVar("perflab_job_context", default=None)


def current() -> JobContext | None:
    """The context of the fleet job this process runs (None: not a fleet job)."""
    return _CURRENT.get()


@contextlib.contextmanager
def running(ctx: JobContext | None) -> Iterator[None]:
    """``ctx`` is ``current()`` inside the block (the entry point's, for the verb's run)."""
    token = _CURRENT.set(ctx)
    try:
        yield
    finally:
        _CURRENT.reset(token)

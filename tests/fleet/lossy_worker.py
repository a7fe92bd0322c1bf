"""``python lossy_worker.py worker ARGS...``: ``perflab worker`` whose queue loses the first
write of a job's outcome, as a pool of one connection under load does: procrastinate's
``finish_job`` fails once with psycopg_pool's PoolTimeout (no connection within the pool's
timeout).  A fault injected at the library's edge, the rest is the real worker (run by
tests/fleet/test_fleet.py)."""

from __future__ import annotations

import runpy
import sys
from typing import Any

import psycopg_pool
from procrastinate import manager

_finish = manager.JobManager.finish_job
_lost: list[int] = []


async def finish_job(self: Any, job: Any, *args: Any, **kwargs: Any) -> None:
    if not _lost:
        _lost.append(job.id)
        print(f"lossy_worker: the outcome of job {job.id} is lost", file=sys.stderr)
        raise psycopg_pool.PoolTimeout("couldn't get a connection after 5.00 sec")
    await _finish(self, job, *args, **kwargs)


manager.JobManager.finish_job = finish_job  # type: ignore[method-assign]
sys.argv = ["perflab", *sys.argv[1:]]
runpy.run_module("perflab", run_name="__main__", alter_sys=True)

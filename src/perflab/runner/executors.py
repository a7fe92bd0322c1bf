"""How a measurement's runs are made: the Executor seam (as hyperfine's ``Executor``: raw, shell,
mock).

An executor runs one request (a configuration's command, environment, pin, timeout, counters)
once and returns its outcome (collectors.process.RunOutcome); ``run_batch`` runs many in order,
handing their outcomes over in chunks.  The measurement loop (runner.loop) only ever calls
``run_batch``: the fork server makes a whole batch in one exchange, the others one run at a time.

- ForkServer: perflab's launcher (data/perflab-launch.c) as a fork server, the server opening
  the kernel's perf counters itself; what measure() uses unless told otherwise.
- OneByOne: one run at a time on the launcher, perflab opening the counters through a
  CounterBackend (the kernel's, or a fake PMU in tests).
- Callgrind: each run under valgrind's callgrind, for instruction counts (no counters).
- FakeExecutor: no process at all; each outcome comes from a function (tests of the loop).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable

from perflab.collectors.perf_events import CounterBackend, KernelBackend
from perflab.collectors.process import LaunchServer, RunOutcome, RunRequest, execute
from perflab.collectors.valgrind import execute_callgrind, require_valgrind

OnChunk = Callable[[list[RunOutcome]], None]


class Executor(ABC):
    """Runs a request once and returns its outcome; never raises for the command's own
    failures (the outcome says them).  ``backend`` is what opens a run's perf counters, put in
    each request the measurement makes (None: its runs count no events)."""

    backend: CounterBackend | None = None

    def probe(self, names: Iterable[str]) -> dict[str, str | None]:
        """For each counter: None where its runs can count it, else why not."""
        if self.backend is None:
            return {n: "this executor counts no events" for n in names}
        return self.backend.probe(names)

    @abstractmethod
    def run(self, req: RunRequest) -> RunOutcome:
        """Run ``req`` once."""

    def run_batch(self, reqs: list[RunRequest], *, stop_on_failure: bool,
                  on_chunk: OnChunk, chunk_s: float) -> None:
        """Run each request once, in order, ``on_chunk`` hearing of the outcomes as they come
        (here one run at a time); with ``stop_on_failure`` the runs after a failed one are not
        made."""
        for req in reqs:
            outcome = self.run(req)
            on_chunk([outcome])
            if stop_on_failure and outcome.status != "ok":
                return

    def close(self) -> None:
        """Let go of what the runs held (a server process); the next run starts anew.  Nothing
        to let go of here: each run ends its own processes."""
        return None


class ForkServer(Executor):
    """perflab's launcher kept alive as a fork server (collectors.process.LaunchServer): a
    batch is one exchange, the server opening the kernel's perf counters and answering the
    timed region itself, so no Python sits between runs."""

    def __init__(self) -> None:
        self.backend = KernelBackend()
        self.server = LaunchServer()

    def run(self, req: RunRequest) -> RunOutcome:
        return execute(req, self.server)

    def run_batch(self, reqs: list[RunRequest], *, stop_on_failure: bool,
                  on_chunk: OnChunk, chunk_s: float) -> None:
        self.server.run_batch(reqs, stop_on_failure=stop_on_failure, on_chunk=on_chunk,
                              chunk_s=chunk_s)

    def close(self) -> None:
        self.server.close()


class OneByOne(Executor):
    """One run at a time on the launcher, perflab opening the counters on the held command
    through ``backend`` (the kernel's perf_event_open by default; a fake PMU in tests)."""

    def __init__(self, backend: CounterBackend | None = None) -> None:
        self.backend = backend or KernelBackend()
        self.server = LaunchServer()

    def run(self, req: RunRequest) -> RunOutcome:
        return self.server.run(req)

    def close(self) -> None:
        self.server.close()


class Callgrind(Executor):
    """Each run under callgrind: the outcome's values hold ``instructions`` (the timed region
    only with ``region_symbol`` or ``client_region``), never a time."""

    def __init__(self, region_symbol: str | None = None, client_region: bool = False) -> None:
        require_valgrind()  # refused before anything runs
        self.region_symbol, self.client_region = region_symbol, client_region

    def run(self, req: RunRequest) -> RunOutcome:
        return execute_callgrind(req, self.region_symbol, self.client_region)


class FakeExecutor(Executor):
    """No process: each run's outcome is ``outcome(request)``; ``counters`` are the events it
    says it can count.  The requests it was given are kept in ``requests``, in order."""

    def __init__(self, outcome: Callable[[RunRequest], RunOutcome],
                 counters: Iterable[str] = ()) -> None:
        self.outcome, self.counters = outcome, set(counters)
        self.requests: list[RunRequest] = []

    def probe(self, names: Iterable[str]) -> dict[str, str | None]:
        return {n: None if n in self.counters else "not counted by the fake executor"
                for n in names}

    def run(self, req: RunRequest) -> RunOutcome:
        self.requests.append(req)
        return self.outcome(req)

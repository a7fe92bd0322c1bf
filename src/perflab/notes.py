"""What a result says once beside its numbers (no PMU, a counter multiplexed, measuring stopped
early, the primary metric chosen): typed notes, each kind's wording in this one module.

A note is a ``str`` that also carries its kind (``Note.kind``): the store keeps notes as their
text, so a result stored by any perflab reads back unchanged (its notes are plain text, kind
``TEXT``), and every view prints a note as the text it is.  Decisions ask the kind
(``Notes.has``), never the words.  As hyperfine's ``src/output/warnings.rs`` keeps each
warning an enum variant rendered by one ``Display``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any, SupportsIndex


class NoteKind(StrEnum):
    TEXT = "text"  # read back from the store (kept as text), or free text of an import
    PRIMARY = "primary metric"  # which metric decides, and why
    NO_COUNTERS = "counters unavailable"  # software or hardware counters cannot be opened
    COUNTER_ERROR = "counter error"  # counters failed to open for a run
    MULTIPLEXED = "multiplexed"  # a counter counted part of the time and scaled
    LEFTOVER = "leftover processes"  # a command left processes running outside its group
    BUDGET = "budget"  # the time budget allowed fewer runs than a verdict needs
    INTERRUPTED = "interrupted"  # the user stopped it, or its perflab ended unfinished
    FAILED = "failed"  # an error stopped it
    NONDETERMINISTIC = "nondeterministic"  # exact counts that differ between runs
    RESUMED = "resumed"  # a suite resumed: partial cells measured again
    IMPORTED = "imported"  # what an imported file holds and lacks
    MIXED = "measured differently"  # one metric measured two ways in the compared results
    FROM_STORE = "from the store"  # results of different sessions compared
    BISECT = "bisect"  # what a bisect found
    THREADS = "more threads than CPUs"  # a cell asks for more threads than the machine has CPUs
    CPU_SHARE = "CPU share"  # wall time over threads on too few (or busy) CPUs
    KERNEL = "kernel share"  # an instruction count blind to the kernel's share of the CPU time
    SERIAL_POOLED = "pooled serial correlation"  # intervals widened for a family's lag-1


# Kinds said at most once per result: the first one stays (a second counter error, a second
# leftover process group, a second interruption says nothing new).
ONCE = frozenset({NoteKind.COUNTER_ERROR, NoteKind.LEFTOVER, NoteKind.INTERRUPTED})


class Note(str):
    """A note's text, with its kind."""

    kind: NoteKind

    def __new__(cls, kind: NoteKind, text: str) -> Note:
        obj = super().__new__(cls, text)
        obj.kind = kind
        return obj

    def __getnewargs__(self) -> tuple[Any, ...]:  # type: ignore[override]
        return (self.kind, str(self))


def kind_of(note: str) -> NoteKind:
    """A note's kind; a stored note (plain text) is ``TEXT``."""
    return note.kind if isinstance(note, Note) else NoteKind.TEXT


class Notes(list[str]):
    """A result's notes: each said once (by its text, and by its kind for the ONCE kinds).
    Added through ``add``; a list of their texts for the store and every export."""

    def __init__(self, items: Iterable[str] = ()) -> None:
        super().__init__()
        for n in items:
            self.add(n)

    def add(self, note: str) -> bool:
        """Add ``note`` unless it was said; True when added."""
        kind = kind_of(note)
        if note in self or (kind in ONCE and self.has(kind)):
            return False
        super().append(note)
        return True

    def append(self, note: str) -> None:
        self.add(note)

    def extend(self, notes: Iterable[str]) -> None:
        for n in notes:
            self.add(n)

    def __iadd__(self, notes: Iterable[str]) -> Notes:  # type: ignore[override,misc]
        self.extend(notes)
        return self

    def insert(self, index: SupportsIndex, note: str) -> None:
        if note not in self:
            super().insert(index, note)

    def has(self, kind: NoteKind) -> bool:
        return any(kind_of(n) == kind for n in self)

    def of(self, kind: NoteKind) -> list[str]:
        return [n for n in self if kind_of(n) == kind]


# -- each kind's wording -------------------------------------------------------------------

def primary(reason: str) -> Note:
    return Note(NoteKind.PRIMARY, f"primary metric: {reason}")


def counters_unavailable(which: str, why: str, then: str = "") -> Note:
    return Note(NoteKind.NO_COUNTERS, f"{which} counters unavailable: {why}"
                + (f"; {then}" if then else ""))


def counter_error(error: str) -> Note:
    return Note(NoteKind.COUNTER_ERROR, f"counters could not be opened: {error}")


def multiplexed(counter: str, share: str) -> Note:
    return Note(NoteKind.MULTIPLEXED, f"{counter} was multiplexed (counted {share} of the time) "
                "and scaled, as perf stat does")


def leftover(configuration: str, killed: Sequence[str]) -> Note:
    """What a run left running when it ended (each process as collectors.process.Stray
    describes it: pid, name, where it ran), which the launcher then killed."""
    shown = "; ".join(killed[:5])
    more = len(killed) - 5
    return Note(NoteKind.LEFTOVER,
                f"{configuration} left processes running when its run ended ({shown}"
                f"{f'; and {more} more' if more > 0 else ''}): perflab killed them, as it "
                "kills whatever a run leaves")


def budget(seconds: str, rounds: int) -> Note:
    return Note(NoteKind.BUDGET, f"the {seconds} s budget allowed only {rounds} runs per "
                "configuration")


def interrupted() -> Note:
    return Note(NoteKind.INTERRUPTED, "interrupted by the user: the runs finished so far are "
                "kept")


def ended_unfinished(pid: int | None) -> Note:
    return Note(NoteKind.INTERRUPTED, f"the perflab process that measured it (pid {pid}) ended "
                "without finishing (killed, or the machine restarted): interrupted; the runs it "
                "finished are kept")


def stopped_by(why: str) -> Note:
    return Note(NoteKind.FAILED, f"stopped by an error: {why}")


def nondeterministic(configuration: str, low: str, high: str, spread: str) -> Note:
    return Note(NoteKind.NONDETERMINISTIC,
                f"instruction counts of {configuration} differ between runs ({low}..{high}, "
                f"{spread}): threads or timing-dependent work; compared statistically, not "
                "exactly")


def resumed(runs: int, cell: str) -> Note:
    return Note(NoteKind.RESUMED,
                f"resumed: the {runs} runs of unfinished cell {cell} from the interrupted "
                "session are superseded (kept in the store, left out of the analysis); the cell "
                "is measured again from the start")


def measured_differently(metric: str, a: str, b: str) -> Note:
    return Note(NoteKind.MIXED, f"{metric} was measured differently in these results ({a} vs "
                f"{b}): its change includes the difference between the two measurements")


def measured_apart(origin: str) -> Note:
    """Results compared from the store or from files (``origin`` says which): not paired."""
    return Note(NoteKind.FROM_STORE, f"{origin}; measured at different times, so drift "
                "between them is not controlled")


def imported(text: str) -> Note:
    """What an imported file holds or lacks (its importer's own words about its format)."""
    return Note(NoteKind.IMPORTED, text)


def bisect(text: str) -> Note:
    return Note(NoteKind.BISECT, text)


def more_threads_than_cpus(threads: int, cpus: int, cells: int, total: int) -> Note:
    """A study that asks for more threads than the machine has CPUs (``cells`` of ``total``)."""
    return Note(NoteKind.THREADS,
                f"more threads than CPUs: up to {threads} threads on a machine with {cpus} "
                f"CPUs ({cells} of {total} cells ask for more than {cpus}): threads beyond "
                f"{cpus} take turns on a CPU instead of running at once, so contention between "
                f"them cannot show there; measure those cells on a machine with at least "
                f"{threads} CPUs")


def cpu_share(metric: str, param: str, threads: int, cpus: int, busy: bool) -> Note:
    """What a wall-clock ratio over a threads axis measures where the threads cannot each
    have a CPU of their own (more threads than CPUs, or CPUs others were using)."""
    where = (f"{threads} threads on {cpus} CPUs" if threads > cpus else
             f"{threads} threads on {cpus} busy CPUs")
    return Note(NoteKind.CPU_SHARE,
                f"{metric} over {param} is wall time: at {where} it measures the share of a "
                f"CPU each thread got{' beside other work' if busy else ''}, not what the code "
                "costs; its up or down is no regression or improvement (a CPU-time metric, "
                "cpu_ns_per_op or task_clock, says what the code costs)")


CPU_SHARE_LABEL = "CPU share, not cost"  # a verdict's reason beside such a ratio


def kernel_share(share: str) -> Note:
    """Beside an instruction count (valgrind) of a workload whose CPU time is mostly the
    kernel's (``share``: "73%")."""
    return Note(NoteKind.KERNEL, f"valgrind does not count the kernel: {share} of this "
                "workload's CPU time is in the kernel")


def serial_pooled(families: dict[str, tuple[int, str]]) -> Note:
    """Comparisons of fewer runs than estimate their own lag-1 correlation, widened for the
    one pooled over their family's series: family -> (series, the upper bound widened for)."""
    what = "; ".join(f"{fam} {rho}" for fam, (_, rho) in families.items())
    counts = {n for n, _ in families.values()}
    over = (f"{counts.pop()} series" if len(counts) == 1 else "each metric's series")
    return Note(NoteKind.SERIAL_POOLED, f"lag-1 correlation pooled over {over} (an upper "
                f"bound; too few runs for each series' own): {what}")

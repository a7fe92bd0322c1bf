"""Pruning the store: which old result sets and finished fleet jobs may go, and removing them.

A series (benchmark, cell, configuration, machine) keeps its newest points however old, as
detect compares the next result with them (Store.prune_plan); the fleet's queued and running
jobs stay (fleet.store.finished_jobs_before).  ``plan_prune`` says what would go, ``prune``
removes exactly that: the verb (perflab.cli.history) prints the plan and asks for --yes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perflab.errors import PerflabError
from perflab.format import fmt_plain

if TYPE_CHECKING:
    from perflab.storage import Store


@dataclass(frozen=True)
class Retention:
    """What a prune keeps: result sets and finished jobs younger than ``older_than_days``, and
    each series' newest ``keep`` points however old.  Checked when made (one line each), so a
    bad option is refused before the store is opened."""

    older_than_days: float
    keep: int = 50

    def __post_init__(self) -> None:
        from perflab.history.detect import Thresholds

        if not self.older_than_days > 0:
            raise PerflabError(f"--older-than {fmt_plain(self.older_than_days)} is not a "
                               "positive number of days",
                               "give a positive number of days, e.g. --older-than 90")
        need = Thresholds().min_points
        if self.keep < need:
            raise PerflabError(f"--keep {self.keep} would remove a series' only baseline: "
                               f"detect needs {need} points of a series to judge its next "
                               "result", f"keep at least {need} (the default keeps 50)")


@dataclass(frozen=True)
class PrunePlan:
    """What a prune removes: ``result_ids`` (created before ``before``, epoch seconds) with
    their ``runs`` measured runs, and the fleet ``jobs`` finished before then; ``kept`` older
    result sets stay as the newest ``keep`` points of their series."""

    before: float
    keep: int
    result_ids: list[int]
    runs: int
    kept: int
    jobs: list[int]

    @property
    def empty(self) -> bool:
        return not self.result_ids and not self.jobs


def plan_prune(store: Store, rule: Retention) -> PrunePlan:
    """What a prune by ``rule`` would remove now (nothing is removed: ``prune`` does)."""
    from perflab.fleet import store as fleet_store

    before = time.time() - rule.older_than_days * 86400
    ids, n_runs, kept = store.prune_plan(before, rule.keep)
    jobs = fleet_store.finished_jobs_before(store, before)  # queued and running ones stay
    return PrunePlan(before=before, keep=rule.keep, result_ids=ids, runs=n_runs, kept=kept,
                     jobs=jobs)


def prune(store: Store, plan: PrunePlan) -> None:
    """Remove the result sets and fleet jobs of ``plan`` (plan_prune)."""
    from perflab.fleet import store as fleet_store

    store.delete_results(plan.result_ids)
    fleet_store.delete_jobs(store, plan.jobs)

"""The stored results as a terminal table (``perflab results list``)."""

from __future__ import annotations

import time
from typing import Any

from perflab.table import Column, Table


def results_table(listed: list[dict[str, Any]]) -> Table:
    """One row per stored result (Store.list_results): kind, when, status, its
    configurations, runs, commit and label."""
    t = Table.of("", [Column(h, "left") for h in (
        "id", "kind", "when", "status", "configurations", "runs", "commit", "label")])
    for r in listed:
        t.add_row(str(r["id"]), r["kind"], time.strftime("%Y-%m-%d %H:%M",
                                                         time.localtime(r["created_at"])),
                  r["status"], ", ".join(r["names"])[:60], str(r["runs"]),
                  (r["commit"] or "")[:10], r["label"] or "")
    return t

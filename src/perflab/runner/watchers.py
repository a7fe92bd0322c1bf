"""What watches a measurement: the progress display it draws on, the console its notes go to,
and the callers' hooks on each run recorded and each round stored."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.progress import Progress

from perflab.model import Configuration, Run


@dataclass(frozen=True)
class Watchers:
    """``progress``: a caller's Progress to add measure()'s task to (None: measure() draws its
    own); ``console``: where notes and the progress go (None: stderr); ``on_run`` hears of each
    run as it is recorded (a batch's runs before they are stored); ``on_stored`` of each round's
    runs once its transaction is committed (their ids set)."""

    progress: Progress | None = None
    console: Console | None = None
    on_run: Callable[[Configuration, Run], None] | None = None
    on_stored: Callable[[list[Run]], None] | None = None

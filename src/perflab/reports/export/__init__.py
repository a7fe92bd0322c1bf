"""Exports of a result set, one module per format, as hyperfine's export/ has: each module here
defines ``render(rs, comparisons, plan) -> str``, and EXPORTERS names each format's command-line
option and help.  Adding a format is one module plus one entry below: the verbs' --export-*
options are made from this table (cli/options.export_options), so nothing else changes.

The table is light (no numpy, no SQLAlchemy): a format's module is imported when it is written.
"""

from __future__ import annotations

import importlib
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.reports.analysis import Analysis


STDOUT = "-"  # an export path that means standard output


@dataclass(frozen=True)
class Exporter:
    option: str  # the command-line option that asks for it
    help: str  # that option's help
    module: str  # perflab.reports.export.<module>, whose render(analysis) writes it

    def render(self, analysis: Analysis) -> str:
        mod = importlib.import_module(f"{__name__}.{self.module}")
        text: str = mod.render(analysis)
        return text


EXPORTERS: dict[str, Exporter] = {
    "json": Exporter("--export-json", "Write the JSON schema (docs/export-schema.md).",
                     "json_schema"),
    "csv": Exporter("--export-csv", "Write summaries as CSV.", "csv_summary"),
    "markdown": Exporter("--export-markdown", "Write a Markdown table.", "markdown"),
    "hyperfine": Exporter("--export-hyperfine",
                          "Write hyperfine's --export-json layout (wall times per run).",
                          "hyperfine"),
    "pyperf": Exporter("--export-pyperf",
                       "Write pyperf's JSON (for `python -m pyperf compare_to`).", "pyperf"),
}


def export_all(analysis: Analysis, paths: dict[str, Path | None]) -> list[Path]:
    """Write every export asked for (format -> path; "-" is standard output); returns the
    files written.  Raises OSError with ``filename`` set to the path that could not be
    written."""
    written = []
    for fmt, path in paths.items():
        if path is None:
            continue
        text = EXPORTERS[fmt].render(analysis)
        if str(path) == STDOUT:  # hyperfine's and jq's "-": the export alone on stdout
            sys.stdout.write(text)
            sys.stdout.flush()
            continue
        try:
            path.write_text(text)
        except OSError as e:
            e.filename = str(path)
            raise
        written.append(path)
    return written


# -- what the formats share ------------------------------------------------------------------------
def clean(x: Any) -> Any:
    """NaN/inf are not JSON: they become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [clean(v) for v in x]
    return x


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2) + "\n"

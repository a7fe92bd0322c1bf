"""perflab.history: results across commits, change points, noise-aware bisect, imports.

series.py reads the stored series, detect.py finds change points, bisect.py drives git bisect
with A/B verdicts, dashboard.py and plot.py draw, filing.py writes regression reports, prune.py
says which old results may go and removes them; their verbs (history, detect, bisect,
dashboard, import, prune) are in
perflab.cli.history.  ``git_state`` (perflab.history.git) gives the commit a measurement is
recorded against.
"""

from __future__ import annotations

from perflab.history.git import git_state

__all__ = ["git_state"]

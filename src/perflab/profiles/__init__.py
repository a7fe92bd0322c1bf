"""Profiles that explain a difference: perf record sampling limited to the timed region,
top-symbols tables, folded stacks and flame graphs, profile diffs, and counter stories.

The Python API other stages call (see docs/profiles.md)::

    record_profile(command, *, env=None, name="", store=None, result_id=None,
                   configuration_id=None, call_graph="fp", region=True, duration=None) -> int
    top_symbols(profile_id, store=None, *, limit=20, sort="self") -> list[SymbolStat]
    diff_profiles(a_id, b_id, store=None) -> ProfileDiff
    counter_story(rs, comparisons) -> list[str]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perflab.profiles.analysis import DiffRow, SymbolStat
    from perflab.profiles.api import ProfileDiff, diff_profiles, top_symbols
    from perflab.profiles.record import record_profile
    from perflab.profiles.store import ProfileRecord, load_profile
    from perflab.profiles.stories import counter_story

__all__ = ["DiffRow", "ProfileDiff", "ProfileRecord", "SymbolStat", "counter_story",
           "diff_profiles", "load_profile", "record_profile", "top_symbols"]

# Imported on first use, so `perflab --help` does not pay for this stage.
_LAZY = {
    "DiffRow": "analysis", "SymbolStat": "analysis",
    "ProfileDiff": "api", "diff_profiles": "api", "top_symbols": "api",
    "ProfileRecord": "store", "load_profile": "store", "record_profile": "record",
    "counter_story": "stories",
}


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(f"perflab.profiles.{mod}"), name)


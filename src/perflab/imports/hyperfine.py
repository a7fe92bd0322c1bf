"""hyperfine ``--export-json``: {"results": [{"command", "times": [s...], "exit_codes", ...}]};
every element of ``times`` is one run's wall time in seconds -> metric wall_time."""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

from perflab import notes as said
from perflab.format import fmt_plain, fmt_sig
from perflab.imports.common import END, bad, is_num, json_events, mtime, not_a_number
from perflab.metrics import BUILTIN_METRICS
from perflab.model import Configuration, ResultSet, Run, RunColumns, Settings

FORMAT = "hyperfine"


def sniff(head: str) -> bool:
    return head.lstrip().startswith("{") and '"results"' in head and '"command"' in head


def read(path: Path, benchmark: str | None) -> ResultSet:
    """Read one result at a time (json_events): its times and exit codes streamed into
    columns, so a file of millions of runs is read in memory of about 50 bytes a run."""
    rs = ResultSet(kind="import", created_at=mtime(path), label=f"hyperfine {path.name}",
                   settings=Settings(file=str(path), import_format="hyperfine"))
    rs.metrics["wall_time"] = BUILTIN_METRICS["wall_time"]
    seq = 0
    res: dict[str, Any] = {}
    times, codes = array("d"), array("q")
    codes_given = False  # an exit_codes list was there
    for where, v, _ in json_events(path, "hyperfine", _STREAMED):
        if where == "results[]/times[]":
            if not is_num(v):
                raise bad(path, "hyperfine", f"result {len(rs.configurations) + 1}'s time "
                          f"{len(times) + 1} is {not_a_number(v)}, not a number of seconds")
            if v < 0:
                raise bad(path, "hyperfine", f"result {len(rs.configurations) + 1} has a "
                          f"negative time ({fmt_plain(v)} s)")
            times.append(v)
        elif where == "results[]/exit_codes[]":
            # An exit code that is not an integer (null, "a") is an unknown one, not a failure.
            codes.append(v if isinstance(v, int) and not isinstance(v, bool) else _UNKNOWN)
        elif where == "results[]/exit_codes":
            codes_given = codes_given or v is END
        elif where.startswith("results[]/") and where.count("/") == 1:
            res[where[len("results[]/"):]] = v
        elif where == "results[]":
            if v is not END:
                res = {}  # an element that is no object: it has no times
            seq = _result(rs, path, benchmark, res, times, codes if codes_given else None, seq)
            res, times, codes, codes_given = {}, array("d"), array("q"), False
        elif where == "results" and v is not END:
            raise bad(path, "hyperfine", "no 'results' list")
    if not rs.configurations:
        raise bad(path, "hyperfine", "no 'results' list")
    rs.notes.add(said.imported("imported from hyperfine: per-run wall time only; no machine "
                               "fingerprint"))
    return rs


_STREAMED = ("results[]/times[]", "results[]/exit_codes[]")
_UNKNOWN = -(2**63)  # an exit code that is not an integer


def _result(rs: ResultSet, path: Path, benchmark: str | None, res: dict[str, Any],
            times: array[float], codes: array[int] | None, seq: int) -> int:
    """One element of results as a configuration of ``rs``; the next run's seq."""
    i = len(rs.configurations)
    if not times:
        raise bad(path, "hyperfine", f"result {i + 1} has no per-run 'times' "
                  "(hyperfine older than 1.8, or not --export-json)")
    named = res.get("command")
    command = (str(named) if isinstance(named, str | int | float) and str(named).strip()
               else f"command {i + 1}")
    codes = codes if codes is not None else array("q")
    if codes and len(codes) != len(times):
        # hyperfine writes one exit code per time; a file cut or edited by hand may not.
        rs.notes.add(said.imported(
            f"'{command}' has {len(times)} times but {len(codes)} exit codes: "
            + (f"the last {len(times) - len(codes)} runs are kept with an unknown exit code"
               if len(codes) < len(times) else
               f"the {len(codes) - len(times)} exit codes without a time are ignored")))
    params = res.get("parameters") or {}
    cfg = Configuration(name=command, command=[command], shell=True,
                        benchmark=benchmark or command,
                        params=dict(params) if isinstance(params, dict) else {},
                        is_baseline=(i == 0))
    runs = cfg.runs = RunColumns()
    for k, t in enumerate(times):
        code = codes[k] if k < len(codes) and codes[k] != _UNKNOWN else None
        ok = code in (0, None)
        runs.append(Run(seq=seq, values={"wall_time": t}, status="ok" if ok else "failed",
                        exit_code=code))
        seq += 1
    rs.configurations.append(cfg)
    if is_num(res.get("user")) and is_num(res.get("system")):
        rs.notes.add(said.imported(f"hyperfine mean CPU time of '{command}': user "
                        f"{fmt_sig(res['user'], 6)} s, system {fmt_sig(res['system'], 6)} s "
                        "(per-run values not exported)"))
    return seq

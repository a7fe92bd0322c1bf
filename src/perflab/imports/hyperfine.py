"""hyperfine ``--export-json``: {"results": [{"command", "times": [s...], "exit_codes", ...}]};
every element of ``times`` is one run's wall time in seconds -> metric wall_time."""

from __future__ import annotations

from pathlib import Path

from perflab import notes as said
from perflab.format import fmt_plain, fmt_sig
from perflab.imports.common import (
    bad,
    first_negative,
    is_num,
    mtime,
    not_a_number,
    read_json,
)
from perflab.metrics import BUILTIN_METRICS
from perflab.model import Configuration, ResultSet, Run, Settings

FORMAT = "hyperfine"


def sniff(head: str) -> bool:
    return head.lstrip().startswith("{") and '"results"' in head and '"command"' in head


def read(path: Path, benchmark: str | None) -> ResultSet:
    data = read_json(path, "hyperfine")
    if not isinstance(data, dict) or not isinstance(data.get("results"), list) \
            or not data["results"]:
        raise bad(path, "hyperfine", "no 'results' list")
    rs = ResultSet(kind="import", created_at=mtime(path), label=f"hyperfine {path.name}",
                   settings=Settings(file=str(path), import_format="hyperfine"))
    rs.metrics["wall_time"] = BUILTIN_METRICS["wall_time"]
    seq = 0
    for i, res in enumerate(data["results"]):
        times = res.get("times") if isinstance(res, dict) else None
        if not isinstance(times, list) or not times:
            raise bad(path, "hyperfine", f"result {i + 1} has no per-run 'times' "
                      "(hyperfine older than 1.8, or not --export-json)")
        wrong = next(((n, t) for n, t in enumerate(times, 1) if not is_num(t)), None)
        if wrong is not None:
            raise bad(path, "hyperfine", f"result {i + 1}'s time {wrong[0]} is "
                      f"{not_a_number(wrong[1])}, not a number of seconds")
        if (neg := first_negative(times)) is not None:
            raise bad(path, "hyperfine",
                      f"result {i + 1} has a negative time ({fmt_plain(neg)} s)")
        named = res.get("command")
        command = (str(named) if isinstance(named, str | int | float) and str(named).strip()
                   else f"command {i + 1}")
        codes = res.get("exit_codes")
        if not isinstance(codes, list):
            codes = []
        # An exit code that is not an integer (null, "a") is an unknown one, not a failure.
        codes = [c if isinstance(c, int) and not isinstance(c, bool) else None for c in codes]
        if codes and len(codes) != len(times):
            # hyperfine writes one exit code per time; a file cut or edited by hand may not.
            rs.notes.add(said.imported(
                f"'{command}' has {len(times)} times but {len(codes)} exit codes: "
                + (f"the last {len(times) - len(codes)} runs are kept with an unknown exit code"
                   if len(codes) < len(times) else
                   f"the {len(codes) - len(times)} exit codes without a time are ignored")))
        codes = codes + [None] * (len(times) - len(codes))
        params = res.get("parameters") or {}
        cfg = Configuration(name=command, command=[command], shell=True,
                            benchmark=benchmark or command,
                            params=dict(params) if isinstance(params, dict) else {},
                            is_baseline=(i == 0))
        for t, code in zip(times, codes, strict=False):
            ok = code in (0, None)
            cfg.runs.append(Run(seq=seq, values={"wall_time": float(t)},
                                status="ok" if ok else "failed", exit_code=code))
            seq += 1
        rs.configurations.append(cfg)
        if is_num(res.get("user")) and is_num(res.get("system")):
            rs.notes.add(said.imported(
                f"hyperfine mean CPU time of '{command}': user {fmt_sig(res['user'], 6)} s, "
                f"system {fmt_sig(res['system'], 6)} s (per-run values not exported)"))
    rs.notes.add(said.imported(
        "imported from hyperfine: per-run wall time only; no machine fingerprint"))
    return rs

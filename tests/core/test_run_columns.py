"""model.RunColumns: runs kept as columns read back as the Run objects appended, whatever
their metrics, statuses, exit codes, warm-ups and load."""

from __future__ import annotations

import math
from array import array

import pytest

from perflab.model import Configuration, Run, RunColumns

pytestmark = pytest.mark.unit


def test_runs_read_back_as_appended() -> None:
    runs = [Run(seq=0, values={"wall_time": 0.5}),
            Run(seq=1, values={"wall_time": 0.25, "ops": 3.0}, status="failed", exit_code=None,
                error="exited with status 3", load1=1.5, started_at=12.5),
            Run(seq=5, values={}, warmup=True, exit_code=-9),
            Run(seq=6, values={"ops": 1e300}, status="failed", exit_code=2,
                error="exited with status 3")]
    cols = RunColumns()
    for r in runs:
        cols.append(r)
    assert len(cols) == 4 and list(cols) == runs
    assert cols[1:3] == runs[1:3] and cols[-1] == runs[-1] and cols[::2] == runs[::2]
    with pytest.raises(IndexError):
        cols[4]
    assert len(cols.kinds) == 2  # (ok, "") and (failed, "exited with status 3"), shared
    cfg = Configuration(name="a", command=["a"], runs=cols)
    assert cfg.measured_count() == len(cfg.measured_runs()) == 1


def test_columns_of_samples_of_unequal_length() -> None:
    cols = RunColumns.of_samples({"a": array("d", [1.0, math.nan, 3.0]),
                                  "b": array("d", [4.0])}, seq=10)
    assert [r.values for r in cols] == [{"a": 1.0, "b": 4.0}, {}, {"a": 3.0}]
    assert [r.seq for r in cols] == [10, 11, 12]
    assert all(r.status == "ok" and r.exit_code == 0 and not r.warmup for r in cols)
    assert cols.measured_count() == 3

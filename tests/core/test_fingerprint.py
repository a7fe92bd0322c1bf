"""fingerprint.py and model.Fingerprint directly: what identifies a machine, what two
fingerprints disagree on, and fingerprints stored by earlier versions read and written back."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab import jobcontext
from perflab.errors import PerflabError
from perflab.fingerprint import MACHINE_IDENTITY_KEYS, _bracketed, machine_fingerprint
from perflab.jobcontext import JobContext
from perflab.model import Fingerprint, ResultSet

pytestmark = pytest.mark.unit


def test_sysfs_choice_in_brackets() -> None:
    assert _bracketed("always [madvise] never") == "madvise"
    assert _bracketed("plain") == "plain"
    assert _bracketed(None) is None


def test_identity_leaves_out_load_and_versions() -> None:
    fp = machine_fingerprint(probe_pmu=False)
    ident = fp.identity()
    assert "load_at_start" not in ident and "perflab_version" not in ident
    assert ident["cpu_count"] == fp.cpu_count and ident["hostname"] == fp.hostname


def test_machine_name_only_in_a_fleet_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's name and tags come from the job's context, never from the environment."""
    monkeypatch.setenv("PERFLAB_MACHINE_NAME", "from-env")
    assert "machine_name" not in machine_fingerprint(probe_pmu=False).identity()
    box = JobContext(machine="box1", tags=("x86", "quiet"))
    fp = machine_fingerprint(probe_pmu=False, job=box)
    assert fp.identity()["machine_name"] == "box1" and fp.machine_tags == ["x86", "quiet"]
    assert fp.fleet_job is None
    with jobcontext.running(JobContext(machine="box2", job=42, submission="s-1")):
        fp = machine_fingerprint(probe_pmu=False)
    assert (fp.machine_name, fp.fleet_job, fp.fleet_submission) == ("box2", 42, "s-1")
    assert jobcontext.current() is None


def test_a_job_context_file_round_trips_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    ctx = JobContext(machine="m", tags=("a",), job=7, submission="s")
    assert JobContext.read(ctx.write(tmp_path / "job.json")) == ctx
    assert ctx.client == "perflab-job:m" and JobContext(machine="m").client is None
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(PerflabError, match="is not a fleet job's context"):
        JobContext.read(tmp_path / "bad.json")


def test_differences_name_identity_keys_only() -> None:
    a = {k: "same" for k in MACHINE_IDENTITY_KEYS} | {"load_at_start": [1, 1, 1]}
    b = dict(a, kernel="6.2", load_at_start=[9, 9, 9])
    fa, fb = Fingerprint.from_json(a), Fingerprint.from_json(b)
    assert fa.differences(fb) == {"kernel": ("same", "6.2")}
    assert fa.differences(Fingerprint.from_json(dict(a))) == {}


# What perflab 0.1.0 stored (tests/fixtures/core/schema4), with a key stored as null, and keys
# this version does not know (a later version's, an import's).
STORED = {"hostname": "vm", "cpu_model": "AMD EPYC", "cpu_count": 2, "kernel": "6.18",
          "arch": "x86_64", "governor": "none", "smt": "off", "thp": None,
          "load_at_start": [0.07, 0.28, 0.96], "future_key": {"x": 1}, "python": "3.11.7",
          "pmu": False, "pmu_events": [], "pmu_reason": "no PMU", "runtimes": {"a": "Mono 6"}}


def test_a_stored_fingerprint_is_written_back_as_it_was() -> None:
    fp = Fingerprint.from_json(STORED)
    assert fp.hostname == "vm" and fp.cpu_count == 2 and fp.pmu is False
    assert fp.runtimes == {"a": "Mono 6"} and fp.thp is None
    assert fp.os is None and fp.machine_name is None  # keys it did not store read None
    assert fp.extra == {"future_key": {"x": 1}}
    back = fp.to_json()
    assert back == STORED and list(back) == list(STORED)  # same keys, nulls, order
    assert Fingerprint.from_json(None).to_json() == {} and Fingerprint().to_json() == {}


def test_what_is_set_later_is_written_after_what_was_stored() -> None:
    fp = Fingerprint.from_json(STORED)
    fp.machine_id = 7  # storage.load sets it
    fp.thp = "madvise"
    back = fp.to_json()
    assert list(back) == [*STORED, "machine_id"] and back["machine_id"] == 7
    assert back["thp"] == "madvise"


def test_a_result_set_given_a_dict_gets_a_fingerprint() -> None:
    rs = ResultSet(kind="stat", fingerprint={"hostname": "h", "cpu_count": 4})
    assert isinstance(rs.fingerprint, Fingerprint) and rs.fingerprint.cpu_count == 4
    assert ResultSet(kind="stat").fingerprint == Fingerprint()


def test_a_machine_is_named_by_fleet_name_then_host_then_row() -> None:
    assert Fingerprint(machine_name="m1", hostname="h").label(3) == "m1"
    assert Fingerprint(hostname="h").label(3) == "h"
    assert Fingerprint().label(3) == "machine 3"


def test_this_machine_writes_every_key_it_probed() -> None:
    fp = machine_fingerprint(probe_pmu=False)
    assert fp.extra == {} and fp.to_json()["kernel"] == fp.kernel
    assert {"hostname", "cpu_model", "load_at_start", "perflab_version"} <= set(fp.to_json())

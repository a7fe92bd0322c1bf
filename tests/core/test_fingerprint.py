"""fingerprint.py directly: what identifies a machine, and what two fingerprints disagree on."""

from __future__ import annotations

import pytest

from perflab.fingerprint import (
    MACHINE_IDENTITY_KEYS,
    _bracketed,
    differences,
    fleet_identity,
    machine_fingerprint,
    machine_identity,
)

pytestmark = pytest.mark.unit


def test_sysfs_choice_in_brackets() -> None:
    assert _bracketed("always [madvise] never") == "madvise"
    assert _bracketed("plain") == "plain"
    assert _bracketed(None) is None


def test_identity_leaves_out_load_and_versions() -> None:
    fp = machine_fingerprint(probe_pmu=False)
    ident = machine_identity(fp)
    assert "load_at_start" not in ident and "perflab_version" not in ident
    assert ident["cpu_count"] == fp["cpu_count"] and ident["hostname"] == fp["hostname"]


def test_machine_name_only_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERFLAB_MACHINE_NAME", raising=False)
    assert "machine_name" not in machine_identity(machine_fingerprint(probe_pmu=False))
    monkeypatch.setenv("PERFLAB_MACHINE_NAME", "box1")
    monkeypatch.setenv("PERFLAB_MACHINE_TAGS", "x86,,quiet")
    assert machine_identity(machine_fingerprint(probe_pmu=False))["machine_name"] == "box1"
    assert fleet_identity()["machine_tags"] == ["x86", "quiet"]


def test_fleet_job(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PERFLAB_MACHINE_NAME", raising=False)
    monkeypatch.setenv("PERFLAB_FLEET_JOB", "42")
    monkeypatch.setenv("PERFLAB_FLEET_SUBMISSION", "s-1")
    assert fleet_identity() == {"fleet_job": 42, "fleet_submission": "s-1"}


def test_differences_name_identity_keys_only() -> None:
    a = {k: "same" for k in MACHINE_IDENTITY_KEYS} | {"load_at_start": [1, 1, 1]}
    b = dict(a, kernel="6.2", load_at_start=[9, 9, 9])
    assert differences(a, b) == {"kernel": ("same", "6.2")}
    assert differences(a, dict(a)) == {}

"""The profile store: the profiles table (storage.py defines it) and the folder of each
profile's data (perf.data, folded stacks, flame graph).  Recording is profiles/record.py."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
import sqlalchemy as sa

from perflab.errors import PerflabError
from perflab.model import Fingerprint
from perflab.schema import machines
from perflab.schema import profiles as profiles_table
from perflab.storage import Store


def profiles_dir(store: Store) -> Path:
    """Profile data lives next to the SQLite file; for a server store, in the user data dir."""
    if "://" in store.location:
        return Path(platformdirs.user_data_dir("perflab")) / "profiles"
    return Path(store.location).resolve().parent / "profiles"


@dataclass
class ProfileRecord:
    id: int
    name: str
    command: list[str]
    sampler: str
    call_graph: str
    data_path: Path
    summary: dict[str, Any]
    created_at: float
    result_id: int | None
    configuration_id: int | None
    machine: dict[str, Any]

    @property
    def folded_path(self) -> Path:
        return self.data_path / "stacks.folded"

    @property
    def svg_path(self) -> Path:
        return self.data_path / "flame.svg"

    @property
    def perf_data(self) -> Path:
        return self.data_path / "perf.data"


def load_profile(store: Store, profile_id: int) -> ProfileRecord:
    def go(conn: sa.Connection) -> ProfileRecord:
        row = conn.execute(sa.select(profiles_table).where(
            profiles_table.c.id == profile_id)).mappings().first()
        if row is None:
            raise PerflabError(f"no profile with id {profile_id} in {store.location}",
                               "list the stored profiles with 'perflab profile list'")
        mach: dict[str, Any] = {}
        if row["machine_id"] is not None:
            m = conn.execute(sa.select(machines.c.fingerprint).where(
                machines.c.id == row["machine_id"])).scalar()
            mach = dict(m or {})
        summary = dict(row["summary"] or {})
        mach = {**mach, **summary.get("machine", {})}
        return ProfileRecord(
            id=row["id"], name=row["name"] or "", command=list(row["command"] or []),
            sampler=row["sampler"] or "", call_graph=row["call_graph"] or "",
            data_path=Path(row["data_path"] or ""), summary=summary,
            created_at=row["created_at"], result_id=row["result_id"],
            configuration_id=row["configuration_id"], machine=mach)

    result: ProfileRecord = store.read(go)
    return result


def list_profiles(store: Store, limit: int = 50) -> list[dict[str, Any]]:
    def go(conn: sa.Connection) -> list[dict[str, Any]]:
        q = (sa.select(profiles_table.c.id, profiles_table.c.name, profiles_table.c.created_at,
                       profiles_table.c.sampler, profiles_table.c.call_graph,
                       profiles_table.c.command, profiles_table.c.result_id,
                       profiles_table.c.summary)
             .order_by(profiles_table.c.id.desc()).limit(limit))
        out = []
        for row in conn.execute(q).mappings():
            d = dict(row)
            s = d.pop("summary") or {}
            d["samples"] = s.get("samples", 0)
            d["top"] = (s.get("symbols") or [{}])[0].get("symbol", "")
            out.append(d)
        return out

    result: list[dict[str, Any]] = store.read(go)
    return result


def insert_profile(store: Store, values: dict[str, Any], fp: Fingerprint) -> int:
    def go(conn: sa.Connection) -> int:
        mid = store.machine_id(conn, fp)
        res = conn.execute(profiles_table.insert().values(machine_id=mid, **values))
        return int(res.inserted_primary_key[0])

    pid: int = store.write(go)
    return pid


def new_data_dir(store: Store) -> Path:
    base = profiles_dir(store)
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=base))

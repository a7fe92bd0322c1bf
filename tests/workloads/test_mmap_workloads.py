"""The mmap workloads (workloads/mmap/{c,rust,go}): churn parity, lat_mmap, lat_pagefault.

Each test builds the workload from its workload.toml (incremental, so cheap after `make
workloads`), runs it with small fixed iterations and checks what the JSON proves.  A language is
skipped only when its toolchain is missing.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from workload_helpers import region_server

pytestmark = pytest.mark.system

ROOT = Path(__file__).resolve().parents[2]
MMAP = ROOT / "workloads" / "mmap"
LANGS = ("c", "rust", "go")
_built: dict[str, list[str]] = {}


def binary(lang: str) -> list[str]:
    """Build workloads/mmap/<lang> from its manifest (skip if its toolchain is absent)."""
    if lang in _built:
        return _built[lang]
    d = MMAP / lang
    m = tomllib.loads((d / "workload.toml").read_text())
    missing = [exe for exe in m.get("requires", []) if shutil.which(exe) is None]
    if missing:
        pytest.skip(f"mmap/{lang}: {', '.join(missing)} not installed")
    env = dict(os.environ, GOTOOLCHAIN="local")
    proc = subprocess.run(m["build"], cwd=d, capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert proc.returncode == 0, f"build of mmap/{lang} failed:\n{proc.stdout}{proc.stderr}"
    for out in m["outputs"]:
        assert (d / out).exists(), f"mmap/{lang} did not produce {out}"
    _built[lang] = [a.replace("{dir}", str(d)) for a in m["run"]]
    return _built[lang]


def run(lang: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = subprocess.run(binary(lang) + list(args), capture_output=True, text=True,
                          timeout=120, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for key in ("ops", "threads", "per_thread_ns", "ns_per_op", "ops_per_s", "checksum",
                "params"):
        assert key in out, f"{key} missing from {out}"
    assert len(out["per_thread_ns"]) == out["threads"]
    assert "timed region begins" in proc.stderr
    return out


# --------------------------------------------------------------------------------------- churn

def churn_model(n: int, seed: int, slots: int = 1024) -> tuple[int, dict[str, int]]:
    """The CHURN SPEC of workloads/mmap/c/src/mmap.c in Python, with memory simulated as a dict
    of written bytes: an independent check of the checksum the three languages print."""
    m64 = (1 << 64) - 1
    s_rng = seed
    h = 0xCBF29CE484222325
    pages = [0] * slots
    prot = [0] * slots
    mem: list[dict[int, int]] = [{} for _ in range(slots)]
    counts = {"mmap": 0, "munmap": 0, "mremap": 0, "touch": 0}
    prots = (0, 1, 3, 3)

    def nxt() -> int:
        nonlocal s_rng
        x = s_rng
        x ^= (x << 13) & m64
        x ^= x >> 7
        x ^= (x << 17) & m64
        s_rng = x
        return x

    for _ in range(n):
        r = nxt()
        s = r % slots
        if pages[s] == 0:
            pages[s], prot[s], mem[s] = 1 + ((r >> 20) & 15), prots[(r >> 24) & 3], {}
            kind = 1
            counts["mmap"] += 1
        elif (r >> 28) & 1:
            pages[s], mem[s] = 0, {}
            kind = 2
            counts["munmap"] += 1
        else:
            pages[s] = 1 + ((r >> 20) & 15)
            limit = pages[s] * 4096  # shrinking drops bytes; growing adds zeros
            mem[s] = {k: v for k, v in mem[s].items() if k < limit}
            kind = 3
            counts["mremap"] += 1
        p = prot[s] if pages[s] else 0
        h = ((h ^ (kind << 40 | s << 16 | pages[s] << 8 | p)) * 0x100000001B3) & m64
        if pages[s] and prot[s] == 3 and ((r >> 32) & 7) == 0:
            r2 = nxt()
            pg, off = r2 % pages[s], (r2 >> 8) & 4095
            addr = pg * 4096 + off
            old = mem[s].get(addr, 0)
            mem[s][addr] = (r2 >> 24) & 255
            h = ((h ^ (1 << 48 | pg << 20 | off << 8 | old)) * 0x100000001B3) & m64
            counts["touch"] += 1
    return h & ((1 << 53) - 1), counts


SEED = 88172645463325252


@pytest.mark.parametrize("lang", LANGS)
def test_churn_matches_the_spec_model(lang: str) -> None:
    if os.sysconf("SC_PAGESIZE") != 4096:
        pytest.skip("the Python model assumes 4 KiB pages")
    n = 20000
    out = run(lang, f"--iterations={n}")
    want, counts = churn_model(n, SEED)
    assert out["checksum"] == want
    assert out["counts"] == counts
    assert counts["touch"] > 0 and counts["mremap"] > 0  # the mix really is mixed
    assert out["ops"] == n and out["params"]["seed"] == SEED
    assert out["thp"] in ("always", "madvise", "never", "unknown")


def test_churn_same_checksum_in_every_language_and_run() -> None:
    args = ("--iterations=15000", "--threads=2", "--seed=12345", "--slots=256")
    results = {lang: run(lang, *args) for lang in LANGS
               if all(shutil.which(e) for e in
                      tomllib.loads((MMAP / lang / "workload.toml").read_text())["requires"])}
    if "c" not in results or len(results) < 2:
        pytest.skip("needs the C workload and at least one other language's toolchain")
    again = run("c", *args)
    assert again["checksum"] == results["c"]["checksum"]
    for lang, out in results.items():
        assert out["checksum"] == results["c"]["checksum"], lang
        assert out["counts"] == results["c"]["counts"], lang
        assert out["ops"] == 30000 and out["threads"] == 2
    # Another seed is another sequence (the checksum is not a constant).
    other = run("c", "--iterations=15000", "--threads=2", "--seed=12346", "--slots=256")
    assert other["checksum"] != results["c"]["checksum"]


# ------------------------------------------------------------------------------------ lat_mmap

@pytest.mark.parametrize("random", [False, True])
def test_lat_mmap_checksum_is_pages_written(tmp_path: Path, random: bool) -> None:
    sizes = {"64k": 64 << 10, "1m": 1 << 20, "3m": 3 << 20}
    out = run("c", "--bench=lat_mmap", "--iterations=20", f"--sizes={','.join(sizes)}",
              f"--random={'true' if random else 'false'}", f"--dir={tmp_path}")
    assert list(os.listdir(tmp_path)) == []  # the temp file and its directory are gone
    assert [b["size"] for b in out["by_size"]] == list(sizes.values())
    expected = 0
    for b in out["by_size"]:
        span = b["size"] if random else b["size"] // 10
        assert b["writes_per_map"] == max(1, math.ceil(span / 16384))
        assert b["iterations"] == 20 and b["us_per_op"] > 0
        expected += b["iterations"] * b["writes_per_map"]
    assert out["checksum"] == expected
    assert out["ops"] == 60


# ------------------------------------------------------------------------------- lat_pagefault

def test_lat_pagefault_counts_faults_and_pages(tmp_path: Path) -> None:
    out = run("c", "--bench=lat_pagefault", "--iterations=5", "--size=2m", f"--dir={tmp_path}")
    pages = (2 << 20) // os.sysconf("SC_PAGESIZE")
    assert out["pages"] == pages
    assert out["checksum"] == out["ops"] == 5 * pages
    assert out["faults"] > 0
    assert out["pages_per_fault"] >= 1  # fault-around maps several pages a fault, never less
    assert out["byte_sum_ok"] is True  # every page was really read
    assert out["ns_per_fault"] > 0 and out["map_msync_ns"] > 0
    assert list(os.listdir(tmp_path)) == []


# ----------------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("lang,args", [
    ("c", ["--bogus=1"]),
    ("c", ["--threads=0"]),
    ("c", ["--bench=lat_nothing"]),
    ("c", ["--bench=lat_pagefault", "--size=512k"]),
    ("c", ["--bench=lat_mmap", "--threads=2"]),
    ("c", ["--bench=lat_mmap", "--dir=/nonexistent/perflab"]),
    ("c", ["--random=maybe"]),
    ("c", ["--iterations=-1"]),
    ("c", ["--threads=65"]),  # 65 x 1024 slots: over vm.max_map_count
    ("rust", ["--threads=65"]),
    ("go", ["--threads=65"]),
    ("rust", ["--bench=lat_mmap"]),
    ("rust", ["--iterations=x"]),
    ("rust", ["--color=red"]),
    ("go", ["--bench=lat_pagefault"]),
    ("go", ["--slots=0"]),
    ("go", ["--color=red"]),
])
def test_bad_params_exit_2_with_one_line(lang: str, args: list[str]) -> None:
    proc = subprocess.run(binary(lang) + args, capture_output=True, text=True, timeout=30,
                          check=False)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mmap")


@pytest.mark.parametrize("lang,args", [
    ("c", ["--iterations=2000", "--threads=2"]),
    ("c", ["--bench=lat_mmap", "--iterations=5", "--sizes=64k"]),
    ("c", ["--bench=lat_pagefault", "--iterations=2", "--size=1m"]),
    ("rust", ["--iterations=2000", "--threads=2"]),
    ("go", ["--iterations=2000", "--threads=2"]),
])
def test_the_timed_region_is_announced(lang: str, args: list[str]) -> None:
    binary(lang)  # build (or skip) before the fifos exist
    outs: list[dict[str, Any]] = []
    with region_server() as (env, got):
        outs.append(run(lang, *args, env=env))
    assert got == ["enable", "disable"]
    assert outs and outs[0]["checksum"] > 0


@pytest.mark.parametrize("lang", ["c", "rust"])
def test_callgrind_counts_only_the_timed_region(lang: str, tmp_path: Path) -> None:
    """The manifest's region_symbol frames the timed loop: valgrind's count of it is exact
    (same N, same count) and grows with N, start-up and warm-up excluded."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind not installed")
    m = tomllib.loads((MMAP / lang / "workload.toml").read_text())
    exe = binary(lang)

    def ir(n: int, k: int) -> int:
        out = tmp_path / f"cg.{n}.{k}"
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                            "--collect-atstart=no", f"--toggle-collect={m['region_symbol']}",
                            *exe, f"--iterations={n}"], capture_output=True, text=True,
                           timeout=120, check=False)
        assert p.returncode == 0, p.stderr
        found = re.search(r"Collected : (\d+)", p.stderr)
        assert found, p.stderr
        return int(found.group(1))

    a, b, c = ir(2000, 1), ir(2000, 2), ir(4000, 1)
    assert a == b > 0
    assert 1.8 < c / a < 2.2  # per-op work only: no fixed start-up cost inside the count

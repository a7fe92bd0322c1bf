"""README is the user's front door: short, and its tour runs when pasted.

The tour test runs the README's tour block (and then the bring-your-own-benchmarks examples)
as one bash script (``set -e``, from the
repository's folder, as a user pastes it after ``make demo``): every command must exit 0.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def section_blocks(text: str, heading: str) -> list[str]:
    """The ```sh blocks of the section under ``heading`` (up to the next '## ')."""
    part = text[text.index(heading) + len(heading):]
    part = part[:part.index("\n## ")] if "\n## " in part else part
    return [b.split("```")[0] for b in part.split("```sh")[1:]]


def tour_block(text: str) -> str:
    """The first ```sh block after the '## A tour' heading."""
    return section_blocks(text, "## A tour")[0]


@pytest.mark.unit
def test_readme_is_a_front_door() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    for must in ("make demo", "make test", "## A tour", "docs/benchmarks.md"):
        assert must in text


@pytest.mark.unit
def test_tour_block_is_found() -> None:
    block = tour_block(README.read_text())
    commands = [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]
    assert commands[0].startswith("export ")
    assert all(c.startswith(("export ", "perflab ")) for c in commands)


@pytest.mark.system
def test_tour_runs_when_pasted(tmp_path: Path) -> None:
    if not (ROOT / ".venv" / "bin" / "perflab").exists():
        pytest.skip("no .venv: the tour runs after make setup")
    text = README.read_text()
    # The tour, then the bring-your-own-benchmarks examples in the tour's shell.
    script = "set -e\n" + "".join([tour_block(text),
                                    *section_blocks(text, "## Bring your own benchmarks")])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFLAB_")}
    env["TMPDIR"] = str(tmp_path)
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"the tour failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    out = done.stdout + done.stderr
    assert "stored as profile 2" in out
    assert "note: 'true' is given 2 times" in out  # the A/A check
    assert "over 30 benchmarks" in out and "ns_per_op of 3 benchmarks (guarded)" in " ".join(
        out.split())

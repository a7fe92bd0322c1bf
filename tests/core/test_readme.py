"""README is the user's front door: short, and its tour runs when pasted.

The tour test runs the README's tour block as one bash script (``set -e``, from the
repository's folder, as a user pastes it after ``make demo``): every command must exit 0.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def tour_block(text: str) -> str:
    """The first ```sh block after the '## A tour' heading."""
    tour = text[text.index("## A tour"):]
    body = tour[tour.index("```sh") + len("```sh"):]
    return body[:body.index("```")]


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
    script = "set -e\n" + tour_block(README.read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFLAB_")}
    env["TMPDIR"] = str(tmp_path)
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"the tour failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "stored as profile 2" in done.stdout + done.stderr

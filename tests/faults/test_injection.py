"""Injection: shell metacharacters wherever a command, a name or a value enters perflab are
never executed (commands run as argv unless --shell is asked), and HTML/JS in labels, names,
commands, params and commit messages is escaped in every HTML page (checked in a real headless
chromium: the payload must not run) and in every Markdown file."""

from __future__ import annotations

import html
import shutil
import subprocess
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from cli_helpers import two_config_suite
from faults.helpers import Perflab
from git_helpers import commit, new_repo

pytestmark = pytest.mark.system

CHROMIUM = shutil.which("chromium")
XSS_IMG = "<img src=x onerror=\"document.title='PWNED'\">"
XSS_SCRIPT = "<script>document.title='PWNED'</script>"


def shell_payloads(marker: Path) -> list[str]:
    return [f"; touch {marker}", f"$(touch {marker})", f"`touch {marker}`",
            f"| touch {marker}", f"&& touch {marker}", f"\n touch {marker}"]


def test_stat_arguments_are_never_run_by_a_shell(perflab: Perflab, tmp_path: Path) -> None:
    marker = tmp_path / "RAN"
    perflab("stat", "-r", "2", "-w", "0", "--no-counters", "--", "/bin/echo",
            *shell_payloads(marker)).succeeds()
    assert not marker.exists()
    assert perflab.counts().runs == 2


def test_compare_commands_are_split_not_shelled(perflab: Perflab, tmp_path: Path) -> None:
    marker = tmp_path / "RAN"
    a = f"/bin/echo a $(touch {marker}) ; touch {marker}"
    b = f"/bin/echo b `touch {marker}` && touch {marker}"
    perflab("compare", "-r", "2", "-w", "0", "--no-counters", a, b).succeeds()
    assert not marker.exists()
    assert perflab.counts().runs == 4


def test_names_labels_and_env_values_are_data(perflab: Perflab, tmp_path: Path) -> None:
    marker = tmp_path / "RAN"
    out = perflab("compare", "-r", "2", "-w", "0", "--no-counters",
                  "--name", f"$(touch {marker})", "--name", f"; touch {marker}",
                  "--label", f"`touch {marker}`", "--env", f"X=$(touch {marker})",
                  "/bin/true", "/bin/echo")
    out.succeeds()
    assert not marker.exists()
    assert perflab.counts().runs == 4


def test_suite_commands_params_and_names_are_never_shelled(perflab: Perflab,
                                                           tmp_path: Path) -> None:
    marker = tmp_path / "RAN"
    suite = tmp_path / "s.toml"
    suite.write_text(f"""\
[suite]
name = "inject"
baseline = "a"

[measure]
runs = 2
warmup = 0
counters = "none"

[matrix]
v = ["$(touch {marker})", "; touch {marker}"]

[configurations.a]
command = ["/bin/echo", "{{v}}", "`touch {marker}`"]

[configurations.b]
command = ["/bin/echo", "b", "{{v}}"]
""")
    perflab("run", str(suite), "--no-report", "--no-progress").succeeds()
    assert not marker.exists()
    assert perflab.counts().runs == 8


def test_shell_is_used_only_when_asked(perflab: Perflab, tmp_path: Path) -> None:
    """--shell is the documented opt-in: then, and only then, shell syntax works."""
    marker = tmp_path / "RAN"
    perflab("stat", "-r", "2", "-w", "0", "--no-counters", "--shell", "--",
            f"touch {marker}").succeeds()
    assert marker.exists()


def test_imported_commands_are_not_run(perflab: Perflab, tmp_path: Path) -> None:
    marker = tmp_path / "RAN"
    f = tmp_path / "h.json"
    import json

    f.write_text(json.dumps({"results": [{"command": f"touch {marker}", "times": [0.1, 0.2],
                                          "exit_codes": [0, 0]}]}))
    perflab("import", "-f", "hyperfine", str(f)).succeeds()
    perflab("results", "show", "1").succeeds()
    assert not marker.exists()


# -- HTML and Markdown ---------------------------------------------------------------------------

def payload_absent(text: str, where: str) -> None:
    for raw in (XSS_IMG, XSS_SCRIPT, "<img src=x", "<script>document"):
        assert raw not in text, f"raw HTML from user input in {where}"


def md_payload_shown(text: str, where: str) -> None:
    """Markdown rendered as GitHub does (CommonMark with tables, raw HTML allowed): the
    payloads are no element, and read as the characters that were typed."""
    rendered = MarkdownIt("commonmark").enable("table").render(text)
    payload_absent(rendered, f"{where}, rendered")
    assert html.escape("<script>", quote=False) in rendered, where
    assert "&amp;lt;" not in rendered, f"an HTML entity shown as text in {where}"


def chromium_title(page: Path, tmp_path: Path) -> str:
    assert CHROMIUM is not None
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'chromium-profile'}", "--virtual-time-budget=3000"]
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=90).stdout
    assert "<html" in dom, "chromium rendered nothing"
    start = dom.find("<title>")
    return dom[start + 7: dom.find("</title>", start)] if start >= 0 else ""


def test_suite_report_escapes_names_params_labels_and_commands(perflab: Perflab,
                                                               tmp_path: Path) -> None:
    suite = tmp_path / "x.toml"
    suite.write_text(f"""\
[suite]
name = "{XSS_SCRIPT.replace('"', '')}"
baseline = "a"

[measure]
runs = 6
warmup = 0
counters = "none"

[matrix]
v = ["{XSS_IMG.replace('"', '')}", "{XSS_SCRIPT.replace('"', '')}"]

[configurations.a]
command = ["/bin/echo", "{{v}}", "{XSS_SCRIPT.replace('"', '')}"]

[configurations.b]
command = ["/bin/echo", "b{{v}}"]
""")
    out_dir = tmp_path / "report"
    perflab("run", str(suite), "--no-progress", "--out", str(out_dir), timeout=300).succeeds()
    page = (out_dir / "index.html").read_text()
    payload_absent(page.replace(html.escape(suite.read_text()), ""), "index.html")
    assert html.escape("<script>", quote=False) in page  # shown, as text
    md_payload_shown((out_dir / "tables.md").read_text(), "tables.md")
    if CHROMIUM:
        assert chromium_title(out_dir / "index.html", tmp_path) != "PWNED"


def test_terminal_escapes_in_suite_values_reach_no_terminal_page_or_file(
        perflab: Perflab, tmp_path: Path) -> None:
    """A suite's matrix values with an OSC title sequence and a clear-screen: shown escaped
    (as \\x1b) on the progress line, in index.html, tables.md and a Markdown export, never
    as the raw bytes that retitle or clear a terminal when the file is `cat`ed."""
    suite = tmp_path / "esc.toml"
    # JSON's "\u001b" is TOML's too: the matrix values hold the raw ESC and BEL characters.
    suite.write_text(two_config_suite("esc", 6, ["\x1b]0;pwned\x07", "\x1b[2J"],
                                      ["/bin/echo", "{n}"], ["/bin/echo", "b{n}"]))
    out_dir = tmp_path / "report"
    ran = perflab("run", str(suite), "--out", str(out_dir), timeout=300)  # with its progress
    ran.succeeds()
    md = tmp_path / "c.md"
    perflab("compare", "-r", "6", "-w", "0", "--no-counters", "-n", "\x1b]0;pwned\x07",
            "-n", "b\x1b[2J", "--export-markdown", str(md), "/bin/true", "/bin/true").succeeds()
    for where, text in (("stdout", ran.stdout), ("stderr", ran.stderr),
                        ("index.html", (out_dir / "index.html").read_text()),
                        ("tables.md", (out_dir / "tables.md").read_text()),
                        ("--export-markdown", md.read_text())):
        assert "\x1b" not in text and "\x07" not in text, where
    assert "\\x1b]0;pwned" in (out_dir / "tables.md").read_text()  # shown, escaped
    assert "\\x1b[2J" in md.read_text()


def test_compare_markdown_export_escapes_names_and_notes(perflab: Perflab,
                                                        tmp_path: Path) -> None:
    md = tmp_path / "cmp.md"
    perflab("compare", "-r", "6", "-w", "0", "--no-counters", "--name", XSS_IMG,
            "--name", XSS_SCRIPT, "--export-markdown", str(md), "/bin/true",
            "/bin/echo").succeeds()
    md_payload_shown(md.read_text(), "--export-markdown")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_dashboard_escapes_benchmarks_labels_and_commit_messages(perflab: Perflab,
                                                                 tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo", user=XSS_IMG)
    for i in range(2):
        commit(repo, f"{XSS_SCRIPT} {i}", {"f": str(i)})
        perflab("stat", "-r", "6", "-w", "0", "--no-counters", "--repo", str(repo),
                "--label", XSS_IMG, "--", "/bin/echo", XSS_IMG).succeeds()
    out = tmp_path / "dash"
    perflab("dashboard", "--out", str(out), "--repo", str(repo)).succeeds()
    pages = list(out.glob("*.html"))
    assert len(pages) >= 2
    for p in pages:
        payload_absent(p.read_text(), p.name)
    if CHROMIUM:
        for p in pages:
            assert chromium_title(p, tmp_path) != "PWNED", p.name


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_detect_report_markdown_escapes_names_and_commit_messages(perflab: Perflab,
                                                                  tmp_path: Path) -> None:
    import json
    import os
    import random

    repo = new_repo(tmp_path / "repo")
    rng = random.Random(3)
    files = []
    for i in range(12):
        sha = commit(repo, f"{XSS_SCRIPT} step {i}", {"f": str(i)})
        base = 1e-3 if i < 6 else 2e-3
        f = tmp_path / f"h{i}.json"
        f.write_text(json.dumps({"results": [{"command": XSS_IMG, "times": [
            base * (1 + rng.gauss(0, 0.01)) for _ in range(10)], "exit_codes": [0] * 10}]}))
        os.utime(f, (1_700_000_000 + i * 60, 1_700_000_000 + i * 60))
        files.append((f, sha))
    for f, sha in files:
        perflab("import", "-f", "hyperfine", "-b", XSS_SCRIPT, "--commit", sha, "--repo",
                str(repo), str(f)).succeeds()
    out = tmp_path / "reports"
    perflab("detect", "--repo", str(repo), "--report", str(out))
    pages = list(out.glob("*.md"))
    assert pages, "no regression report was written"
    import re

    for p in pages:
        text = p.read_text()
        # Inside fenced code blocks text is shown literally (GitHub renders no HTML there):
        # commands and commit subjects are quoted that way; everything else must be escaped.
        prose = re.sub(r"^```[^\n]*\n.*?^```$", "", text, flags=re.S | re.M)
        assert "```" not in prose, "an unbalanced code fence"
        md_payload_shown(prose, p.name)

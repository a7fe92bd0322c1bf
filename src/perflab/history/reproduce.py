"""Lines that reproduce a stored comparison when pasted into sh (the regression page's and the
per-machine report's "Reproduce" blocks).

- Each side runs its own commit's build: a worktree of each commit (in a directory ``mktemp -d``
  makes, never a fixed name another user could make first), built there with the build command
  the results stored, and each side's stored command run in its own worktree, the paths that
  pointed into the work tree it was measured in made relative to it (a fleet's commands are
  absolute: ``/srv/trees/COMMIT/prog`` becomes ``./prog``).
- Every line that reads the store names it (``--db``, a server's URL with its password left
  out); where even that would print a credential, the line asks for PERFLAB_DB and stops
  without it, so it never reads another store.  What is measured afresh is stored in the
  reader's own store.
- The settings the results were judged and measured with are carried: the metric, the plan
  (threshold, bands, correction, estimator) and a suite's [measure] run count, budget, ...
"""

from __future__ import annotations

import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.format import fmt_plain, redact_url
from perflab.history.git import short
from perflab.judging import Plan
from perflab.model import Settings


@dataclass
class Side:
    """One side of a stored comparison: the commit measured, its command as stored, and the
    work tree it was measured in (None: not recorded)."""
    commit: str
    argv: list[str]
    shell: bool
    env: dict[str, str]
    repo: str | None = None

    def text(self) -> str:
        """The command as typed at the top of the commit's own worktree."""
        return command_text(relative(self.argv, self.repo), self.shell, self.env)


def relative(argv: list[str], repo: str | None) -> list[str]:
    """``argv`` with the paths inside ``repo`` made relative to it (``REPO/bin/p`` -> ``./bin/p``),
    so the command runs what its own worktree built."""
    if not repo or repo == "/":
        return list(argv)
    top = repo.rstrip("/")
    return ["." if a == top else a.replace(top + "/", "./") for a in argv]


def command_text(argv: list[str], shell: bool, env: dict[str, str] | None = None) -> str:
    """A stored command as it is typed: a shell command's text, or the argv quoted; with the
    configuration's own environment variables set (W^X on is often one)."""
    if not shell:
        return shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), *argv] if env
                          else argv)
    text = " ".join(argv)
    if env:
        text = "export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + "; " + text
    return text


def build_command(settings: Settings, config: str, repo: str | None) -> str | None:
    """The shell command that built what a result measured, run at the top of a checkout: a
    bisect's ``--build``, or the suite configuration's ``build`` step (which runs in the suite
    file's directory); None when the result stored none (stat, compare, imports)."""
    if settings.extra.get("build"):  # a bisect's --build (kept in its free-form extra)
        return str(settings.extra["build"])
    step = ((_suite_table(settings).get("configurations") or {}).get(config) or {}).get("build")
    if not step:
        return None
    cmd = shlex.join(map(str, step)) if isinstance(step, list) else str(step)
    where = Path(settings.suite.path or "").parent
    if repo and where.is_absolute() and where.is_relative_to(repo) and where != Path(repo):
        cmd = f"cd {shlex.quote(str(where.relative_to(repo)))} && {cmd}"
    return cmd


def _suite_table(settings: Settings) -> dict[str, Any]:
    """The suite file the result was measured with, as TOML ({} for none, or one unreadable)."""
    if not settings.suite.text:
        return {}
    try:
        return tomllib.loads(settings.suite.text)
    except tomllib.TOMLDecodeError:
        return {}


def suite_measure(settings: Settings) -> dict[str, Any]:
    """The [measure] table of the suite the result was measured with ({} for none)."""
    m = _suite_table(settings).get("measure")
    return m if isinstance(m, dict) else {}


# A suite's [measure] keys that compare takes as options of the same meaning (a suite's budget
# is per cell; a fresh compare is one cell).
MEASURE_FLAGS = {"warmup": "--warmup", "runs": "--runs", "min_runs": "--min-runs",
                 "max_runs": "--max-runs", "budget": "--budget", "precision": "--precision",
                 "timeout": "--timeout"}


def _word(v: Any) -> str:
    return fmt_plain(v) if isinstance(v, float) else str(v)


def compare_flags(settings: Settings, metric: str, plan: Plan | None = None) -> str:
    """compare's options for the settings a result was made and judged with: the metric, the
    plan (``plan``, else the stored one: threshold, bands, correction, estimator) and the
    suite's [measure] run count, budget, warm-up, precision and timeout."""
    p = plan or settings.plan()
    out = ["-m", metric, "--threshold", _word(float(p.threshold))]
    for name, band in sorted(p.bands.items()):
        out += ["--threshold", f"{name}={band}"]
    out += ["--correction", p.correction, "--estimator", p.estimator]
    measure = suite_measure(settings)
    for key, flag in MEASURE_FLAGS.items():
        if isinstance(measure.get(key), int | float) and not isinstance(measure[key], bool):
            out += [flag, _word(measure[key])]
    if measure.get("ignore_failure") is True:
        out.append("--ignore-failure")
    return shlex.join(out)


def db_arg(store: Any) -> str | None:
    """The store as a pasted command's --db: its file, or a server's URL with its password left
    out (the reader's ~/.pgpass or PGPASSWORD gives it); None when the URL's query holds
    credentials too (then the line asks for the reader's PERFLAB_DB: db_flag)."""
    from perflab.storage import url_without_password

    loc = str(getattr(store, "location", "") or "")
    if "://" not in loc:
        return loc or None
    plain = url_without_password(store.url)
    return None if redact_url(plain).partition("?")[2] != plain.partition("?")[2] else plain


def db_flag(db: str | None, shown: str = "") -> str:
    """`` --db STORE`` for a line that reads the store; for a store that cannot be printed, a
    --db that takes PERFLAB_DB and stops the shell with one line when it is unset (never
    another store's result of the same id)."""
    if db:
        return f" --db {shlex.quote(db)}"
    where = f" ({shown})".translate({ord(c): None for c in '"$`}\\'}) if shown else ""
    return f' --db "${{PERFLAB_DB:?set PERFLAB_DB to the store these results are in{where}}}"'


# What the pasted lines build with when the results stored no build command: the shell
# stops there with this one line unless BUILD is set (so nothing runs unbuilt).
NO_BUILD = ('BUILD="${BUILD:?perflab stored no build command for these results: set BUILD, '
            'e.g. BUILD=make}"')


def tree_var(rev: str) -> str:
    """The shell variable holding the worktree of ``rev``."""
    return f"tree_{short(rev)}".replace("-", "_")


def bisect_var(bad: str) -> str:
    """The shell variable holding the worktree a bisect ending at ``bad`` runs in."""
    return f"tree_bisect_{short(bad)}".replace("-", "_")


def worktree_lines(repo_s: str, rev: str, var: str) -> list[str]:
    """A line making a worktree of ``rev`` in a new private directory (mktemp -d), its path in
    ``var``; one the shell made before (``var`` set: pasted again, or a second comparison of
    the commit) is used again."""
    return [f'[ -n "${{{var}:-}}" ] || {{ {var}=$(mktemp -d) && '
            f'git -C {repo_s} worktree add --detach "${var}" {rev}; }}']


def _in_tree(var: str, text: str) -> str:
    """``cd TREE && TEXT`` in double quotes: the pasting shell puts in the worktree's path;
    the command's own text is escaped for them (\\, $, ` and ")."""
    return (f'"cd \\"${var}\\" && ' + text.translate({ord(c): "\\" + c for c in '\\$`"'})
            + '"')


def fresh_compare(repo_s: str, before: tuple[str, str], after: tuple[str, str], flags: str,
                  build: str | None, names: tuple[str, str] | None = None) -> list[str]:
    """Lines for sh: a worktree of each commit, each built with ``build`` (the shell stops with
    one line asking for BUILD when there is none), then one interleaved compare of the two
    (commit, command) pairs, each command run at the top of its own commit's worktree, with
    compare's ``flags``, named ``names`` (default: the short commits)."""
    out = ["# a fresh compare of the two commits: a worktree of each, built, then compared "
           "(stored in your own store)",
           f"BUILD={shlex.quote(build)}" if build else NO_BUILD]
    trees = {rev: tree_var(rev) for rev, _ in (before, after)}
    for rev, var in trees.items():
        out += worktree_lines(repo_s, rev, var)
        out.append(f'(cd "${var}" && sh -c "$BUILD")')
    a, b = names or (short(before[0]), short(after[0]))
    runs = " ".join(_in_tree(trees[rev], text) for rev, text in (before, after))
    out.append(f"perflab compare {flags} -n {shlex.quote(a)} -n {shlex.quote(b)} --shell {runs}")
    return out


def bisect_lines(repo_s: str, good: str, bad: str, build: str, what: str) -> list[str]:
    """A bisect between two commits in a worktree of its own (it checks out commits, so never
    in the reader's checkout); ``build`` and ``what`` as bisect's options and command."""
    var = bisect_var(bad)
    return ["# a bisect between them, in a worktree of its own",
            *worktree_lines(repo_s, bad, var),
            f'perflab bisect --repo "${var}" --good {good} --bad {bad} --build {build} '
            f"{what}"]


def cleanup_line(repo_s: str, variables: list[str]) -> str:
    return ("# when done: " + " && ".join(f'git -C {repo_s} worktree remove --force "${v}"'
                                          for v in dict.fromkeys(variables)))

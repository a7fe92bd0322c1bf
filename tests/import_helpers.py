"""What every importer's tests check of a bad file: refused in one line that names the file
and the field, and nothing of an import that held it stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_helpers import invoke
from perflab.errors import PerflabError
from perflab.imports import import_file
from perflab.storage import Store


def refused(path: Path, fmt: str | None, said: str, named: Path | None = None) -> None:
    """import_file refuses ``path`` (read as ``fmt``; None: detected) with a PerflabError of
    one line whose problem names the file (``named``, else ``path``) and says ``said``."""
    with pytest.raises(PerflabError) as e:
        import_file(path, fmt)
    assert "\n" not in e.value.line()
    assert str(named or path) in e.value.problem and said in e.value.problem


def stores_nothing(db: Path, *args: str) -> None:
    """``perflab import ARGS --db DB`` fails with a PerflabError and stores no import."""
    res = invoke("import", *args, "--db", str(db))
    assert res.exit_code != 0 and isinstance(res.exception, PerflabError)
    assert not db.exists() or Store(db).result_ids("import") == []

"""URLs perflab prints: one masking rule (format.redact_url) for the database URL and the webhook
(the userinfo and token-like query values shown as ***), and a database URL whose host:port
cannot be read is one line naming that part, in every verb."""

from __future__ import annotations

import pytest

from faults.helpers import Perflab
from perflab.errors import EXIT_STORE_UNREACHABLE
from perflab.format import redact_url

pytestmark = pytest.mark.system


@pytest.mark.parametrize("url, shown", [
    ("postgresql://bench:S3CRET@db.lab:5432/perflab", "postgresql://***@db.lab:5432/perflab"),
    ("postgresql://u:p@ss@db/x", "postgresql://***@db/x"),  # the last '@' ends the userinfo
    ("https://TOKEN@hooks.example/h", "https://***@hooks.example/h"),
    ("https://h/x?room=7&access_token=T;X-Amz-Signature=S&api_key=K#top",
     "https://h/x?room=7&access_token=***;X-Amz-Signature=***&api_key=***#top"),
    ("postgresql://db/x?sslmode=require&sslpassword=P", "postgresql://db/x?sslmode=require"
     "&sslpassword=***"),
    ("/home/me/results.sqlite", "/home/me/results.sqlite"),
])
def test_the_one_masking_rule(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize("url, pasted", [
    ("postgresql://bench:S3CRET@db.lab:5432/perflab", "postgresql://bench@db.lab:5432/perflab"),
    ("postgresql://bench@db/x?sslpassword=P", "postgresql://bench@db/x?sslpassword=***"),
    ("postgresql://db/x", "postgresql://db/x"),
])
def test_a_url_to_paste_keeps_its_user_and_drops_the_password(url: str, pasted: str) -> None:
    assert redact_url(url, keep_user=True) == pasted


def test_database_url_credentials_are_never_printed(perflab: Perflab) -> None:
    url = "postgresql://dbuser:SECRET1@127.0.0.1:1/perflab?sslpassword=SECRET2&connect_timeout=2"
    for args in (["results", "list", "--db", url], ["stat", "-r", "2", "--", "/bin/true"]):
        out = perflab(*args, env={"PERFLAB_DB": url})
        line = out.fails(EXIT_STORE_UNREACHABLE, "cannot reach the database server of "
                            "postgresql://***@127.0.0.1:1/perflab?sslpassword=***")
        assert "SECRET" not in out.stdout + out.stderr and "dbuser" not in line, line


@pytest.mark.parametrize("verb", [["results", "list"], ["stat", "-r", "2", "--", "/bin/true"],
                                  ["worker"], ["fleet", "status"], ["report", "1"]])
def test_a_port_that_is_not_a_number_is_one_line(perflab: Perflab, verb: list[str]) -> None:
    out = perflab(*verb, env={"PERFLAB_DB": "postgresql://u:SECRET@db.lab:54x32/perflab"})
    line = out.fails(2, "postgresql://***@db.lab:54x32/perflab: the port '54x32' is not a "
                        "number", fix="postgresql://USER@HOST:PORT/DB")
    assert "SECRET" not in line
    out = perflab(*verb, env={"PERFLAB_DB": "postgresql://u@[::1/perflab"})
    out.fails(2, "the host and port '[::1' cannot be read", fix="[::1]")

"""load_series filters in the database (benchmark glob, machine, --since) on both backends."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from perflab.history.series import SeriesFilter, glob_like, load_series
from perflab.model import Configuration, ResultSet, Run
from perflab.schema import configurations, runs
from perflab.storage import Store

pytestmark = pytest.mark.system

NAMES = ["eh/cpp", "eh/rust", "ehXcpp", "gc_a", "gcXa", "gc%b", "Eh/cpp"]


def fill(store: Store) -> None:
    """Each benchmark measured on two hosts at t=1000 and t=2000."""
    for t in (1000.0, 2000.0):
        for host in ("h1", "h2"):
            rs = ResultSet(kind="stat", commit="c" * 40, dirty=False, status="complete",
                           created_at=t, fingerprint={"hostname": host})
            for name in NAMES:
                cfg = Configuration(name="A", command=["x"], benchmark=name)
                cfg.runs = [Run(seq=j, values={"wall_time": 1.0 + j}) for j in range(3)]
                rs.configurations.append(cfg)
            store.save(rs)


def benchmarks(store: Store, glob: str | None, **kw: object) -> list[str]:
    return sorted({s.key.benchmark for s in load_series(store, SeriesFilter(glob, **kw))})  # type: ignore[arg-type]


def test_series_are_filtered_in_sql(store_url: str) -> None:
    store = Store(store_url)
    fill(store)
    statements: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute",
                    lambda _c, _cur, stmt, *_a: statements.append(stmt))
    # a glob is matched as fnmatch does: case-sensitive, '_' and '%' literal, [..] classes
    assert benchmarks(store, "eh/*") == ["eh/cpp", "eh/rust"]
    assert any("LIKE" in s.upper() for s in statements)
    assert benchmarks(store, "eh?cpp") == ["eh/cpp", "ehXcpp"]
    assert benchmarks(store, "gc_a") == ["gc_a"]
    assert benchmarks(store, "gc%*") == ["gc%b"]
    assert benchmarks(store, "[eE]h/c*") == ["Eh/cpp", "eh/cpp"]
    assert benchmarks(store, "*") == sorted(NAMES)
    # machine and time window
    both = load_series(store, SeriesFilter("eh/cpp"))
    assert len(both) == 2 and [len(s.points) for s in both] == [2, 2]
    machine = both[0].key.machine_id
    only = load_series(store, SeriesFilter("eh/*", machine=machine))
    assert len(only) == 2 and {s.key.machine_id for s in only} == {machine}
    recent = load_series(store, SeriesFilter("eh/cpp", since=1500.0))
    assert [p.created_at for s in recent for p in s.points] == [2000.0, 2000.0]
    statements.clear()
    assert load_series(store, SeriesFilter(None, since=2500.0)) == []
    assert any("created_at >=" in s for s in statements)


@pytest.mark.unit
@pytest.mark.parametrize("glob, like", [("eh/*", "eh/%"), ("a?b", "a_b"), ("gc_a", "gc\\_a"),
                                        ("50%", "50\\%"), ("x[ab]*", "x%"), ("a\\b", "a\\\\b")])
def test_glob_to_like(glob: str, like: str) -> None:
    assert glob_like(glob) == like


def _result(store: Store, benchmark: str, created_at: float, kind: str = "stat") -> int:
    rs = ResultSet(kind=kind, commit="c" * 40, dirty=False, status="complete",
                   created_at=created_at, fingerprint={"hostname": "h"})
    cfg = Configuration(name="A", command=["x"], benchmark=benchmark)
    cfg.runs = [Run(seq=j, values={"wall_time": 1.0 + j}) for j in range(3)]
    cfg.runs.append(Run(seq=9, values={"wall_time": 9.0}, warmup=True))
    rs.configurations.append(cfg)
    return store.save(rs)


def test_prune_keeps_each_series_newest_points(store_url: str) -> None:
    day = 86400.0
    now = 1_000 * day
    store = Store(store_url)
    daily = [_result(store, "syn/a", now - (30 - i) * day) for i in range(30)]
    gone = [_result(store, "syn/gone", now - (200 + i) * day) for i in range(3)]
    bisect = _result(store, "syn/a", now - 200 * day, kind="bisect")
    # older than 10 days: syn/a's first 20 go; syn/gone's three are its newest: kept
    ids, n_runs, kept = store.prune_plan(now - 10 * day, keep=5)
    assert ids == sorted(daily[:20] + [bisect]) and n_runs == 21 * 3 and kept == 3
    # a larger keep holds more of syn/a back
    ids, _, kept = store.prune_plan(now - 10 * day, keep=25)
    assert ids == sorted(daily[:5] + [bisect]) and kept == 3 + 15
    store.delete_results(ids)
    by = {s.key.benchmark: s for s in load_series(store)}
    assert [p.result_id for p in by["syn/a"].points] == daily[5:]
    assert [p.result_id for p in by["syn/gone"].points] == sorted(gone, reverse=True)
    assert store.prune_plan(now - 10 * day, keep=25)[0] == []
    orphans = store.read(lambda c: c.execute(
        sa.select(sa.func.count()).select_from(runs.outerjoin(configurations))
        .where(configurations.c.id.is_(None))).scalar())
    total = store.read(lambda c: c.execute(sa.select(sa.func.count()).select_from(runs))
                       .scalar())
    assert orphans == 0 and total == (25 + 3) * 4


@pytest.mark.unit
def test_since_in_the_future_is_one_line_however_it_is_written() -> None:
    from perflab.errors import PerflabError
    from perflab.history.series import parse_since

    now = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    assert parse_since("2w", now) == now - 14 * 86400
    assert parse_since("2027-01-15T08:00:00Z", now) == now  # now itself is not the future
    for text in ("2027-01-16", "2027-01-15T09:00:01+01:00", "2027-01-15T08:00:01Z"):
        with pytest.raises(PerflabError) as e:
            parse_since(text, now)
        assert e.value.problem == f"--since {text} is in the future, so no result is that recent"
        assert e.value.fix == "give a past date or an age such as 30d"
        assert "\n" not in str(e.value)
    with pytest.raises(PerflabError, match="neither an age nor a date"):
        parse_since("-3d", now)

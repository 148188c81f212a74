"""Statement and lock timeouts on every connection of the programs (shared/database/engines.py,
DB_STATEMENT_TIMEOUT_MS and DB_LOCK_TIMEOUT_MS), on PostgreSQL and MariaDB (SQLite has none:
its busy timeout instead). A statement past either is cancelled, its transaction rolled back,
and the caller told DatabaseTimeout: a 503 that says which, never a half-written state. The
stock service's decision hold behind a row lock held by a paused transaction answers 503 once
the lock timeout passes, writes nothing, and the same flag deducts once when tried again."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis as redis_lib
import sqlalchemy as sa

from shared.config.settings import Settings
from shared.database.engines import DatabaseTimeout, DatabaseTimeouts, make_engine, transaction
from stock_service.storage.tables import stock
from tests.conftest import unique
from tests.helpers import Services, running_services

pytestmark = pytest.mark.parametrize("database_url", ["postgresql", "mysql"], indirect=True)
SLEEP = {"postgresql": "SELECT pg_sleep(3)", "mysql": "SELECT SLEEP(3)"}


def test_a_statement_past_its_timeout_is_rolled_back_and_said(database_url: str) -> None:
    engine = make_engine(database_url, timeouts=DatabaseTimeouts(statement_ms=500, lock_ms=500))
    table = sa.Table(unique("t").replace("-", "_"), sa.MetaData(), sa.Column("n", sa.Integer))
    table.create(engine)
    started = time.monotonic()
    with pytest.raises(DatabaseTimeout) as caught, transaction(engine, "probe database") as conn:
        conn.execute(table.insert().values(n=1))
        conn.execute(sa.text(SLEEP[engine.dialect.name]))
    assert time.monotonic() - started < 2.5
    assert caught.value.kind == "statement_timeout"
    assert "statement timeout" in caught.value.answer()
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one() == 0
    table.drop(engine)
    engine.dispose()


def test_a_program_s_engine_runs_under_timeouts_and_the_tooling_s_does_not(
    database_url: str,
) -> None:
    backend = make_url_backend(database_url)
    read = {
        "postgresql": "SELECT current_setting('statement_timeout'), "
        "current_setting('lock_timeout')",
        "mysql": "SELECT @@max_statement_time, @@innodb_lock_wait_timeout",
    }[backend]
    seen = {}
    for name, engine in {
        "program": make_engine(database_url, application="order"),
        "configured": make_engine(database_url, "order", DatabaseTimeouts(1234, 2500)),
        "tooling": make_engine(database_url),
    }.items():
        with engine.connect() as conn:
            seen[name] = tuple(str(v) for v in conn.execute(sa.text(read)).one())
        engine.dispose()
    if backend == "postgresql":
        assert seen["program"] == ("30s", "5s")
        assert seen["configured"] == ("1234ms", "2500ms")
        assert seen["tooling"] == ("0", "0")
    else:
        assert seen["program"] == ("30.0", "5")
        assert seen["configured"] == ("1.234", "3")  # whole seconds, rounded up
        assert float(seen["tooling"][0]) == 0


def make_url_backend(url: str) -> str:
    return sa.make_url(url).get_backend_name()


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    """The services with a lock timeout of 1 s, from their settings (DB_LOCK_TIMEOUT_MS)."""
    with running_services(dataclasses.replace(settings, db_lock_timeout_ms=1000)) as s:
        yield s


def deduct(s: Services, flag: str, goods: str) -> Any:
    redis_lib.Redis.from_url(s.settings.redis_url).set(flag, "orderId", ex=60)
    return s.stock.put(f"/reduceStock/{flag}", json=[{"goodsId": goods, "goodsNum": 1}])


def test_a_hold_behind_a_paused_transaction_s_row_lock_answers_503_and_writes_nothing(
    services: Services,
) -> None:
    s = services
    goods, flag = unique(), unique("o")
    s.seed(goods, 5)
    with s.engine.connect() as holder, holder.begin():  # a paused writer of the goods id's row
        holder.execute(sa.select(stock.c.num).where(stock.c.goods_id == goods).with_for_update())
        started = time.monotonic()
        answer = deduct(s, flag, goods)
        took = time.monotonic() - started
    assert answer.status_code == 503, answer.json
    assert answer.json["dependency"] == "database" and "lock timeout" in answer.json["error"]
    assert took < 5, took
    assert s.level(goods) == 5 and not s.flows(flag=flag)
    decided = s.stock.get(f"/flags/{flag}").json or {"decision": "no answer"}
    assert decided["decision"] is None  # undecided: try again
    again = deduct(s, flag, goods)  # the order service's retry, the same flag
    assert (again.status_code, again.json["outcome"]) == (200, "deducted"), again.json
    assert deduct(s, flag, goods).json["outcome"] == "duplicate"  # once, whatever the repeats
    assert s.level(goods) == 4 and len(s.flows(flag=flag)) == 1
